//! What a fetch attempt came to: a [`Verdict`] on the content of a fetched
//! page, or a [`FetchOutcome`] for an attempt that ended before one, and the
//! flat [`Decision`] the records carry.

use serde::{Deserialize, Serialize};

use super::PageId;

/// What the crawl decided about one fetch attempt. Serialized in
/// `pages.jsonl` as the `decision` string (`new`, `exact_duplicate`, ...);
/// the page duplicated and the distance go in `dup_of` and `distance`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// New content: its fingerprint was inserted into the index.
    #[default]
    New,
    /// Same body bytes or same normalized text as an earlier page.
    ExactDuplicate,
    /// Resembling an earlier page (confirmed by its content sketch, or
    /// simhash within k without one); indexed too, as an original for
    /// later pages.
    NearDuplicate,
    /// robots.txt (or a parked/over-delayed host) forbade the fetch.
    Disallowed,
    /// Network error, timeout, or an HTTP error status (4xx/5xx).
    Error,
    /// The body exceeded the fetch cap.
    TooLarge,
    /// Content type not parsed (not HTML/text).
    NotHtml,
    /// A redirect hop; the target is recorded as `final_url`.
    Redirect,
    /// `noindex` in meta robots or X-Robots-Tag: not fingerprinted.
    Noindex,
    /// A revisit answered 304 Not Modified to its conditional request: the
    /// content recorded before still stands (no body was read).
    Unchanged,
}

impl Decision {
    /// Every decision, in declaration order (the report order, and the
    /// store's tag order: a decision's tag is its index here).
    pub const ALL: [Decision; 10] = [
        Decision::New,
        Decision::ExactDuplicate,
        Decision::NearDuplicate,
        Decision::Disallowed,
        Decision::Error,
        Decision::TooLarge,
        Decision::NotHtml,
        Decision::Redirect,
        Decision::Noindex,
        Decision::Unchanged,
    ];

    /// The `pages.jsonl` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::New => "new",
            Decision::ExactDuplicate => "exact_duplicate",
            Decision::NearDuplicate => "near_duplicate",
            Decision::Disallowed => "disallowed",
            Decision::Error => "error",
            Decision::TooLarge => "too_large",
            Decision::NotHtml => "not_html",
            Decision::Redirect => "redirect",
            Decision::Noindex => "noindex",
            Decision::Unchanged => "unchanged",
        }
    }

    /// Whether the page is an exact or near duplicate of an earlier page.
    pub fn is_duplicate(self) -> bool {
        matches!(self, Decision::ExactDuplicate | Decision::NearDuplicate)
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a revisit found, compared with the page's previous fetch
/// (`pages.jsonl` field `change`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// 304 Not Modified, or the same body or visible text as before.
    Unchanged,
    /// Other text, but a simhash within the dedup k of the previous one
    /// (a date line, a counter).
    NearUnchanged,
    /// A simhash farther than k from the previous one: real change.
    Changed,
}

impl Change {
    /// Every class, in report order.
    pub const ALL: [Change; 3] = [Change::Unchanged, Change::NearUnchanged, Change::Changed];

    /// The `pages.jsonl` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Unchanged => "unchanged",
            Change::NearUnchanged => "near_unchanged",
            Change::Changed => "changed",
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fingerprint found by the near-duplicate index within k of a page's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NearMatch {
    /// The matching (earlier) page.
    pub page: PageId,
    /// Hamming distance between the fingerprints.
    pub distance: u32,
}

/// The duplicate status of the page a link was found on (a priority component).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParentDup {
    /// The parent was new content (or a seed).
    #[default]
    None,
    /// The parent was an exact duplicate.
    Exact,
    /// The parent was a near duplicate at this Hamming distance.
    Near(u32),
}

/// The content verdict on a fetched page: what the dedup stage answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// New content.
    New,
    /// Same body bytes or same normalized text as an earlier page.
    ExactDuplicate,
    /// Content resembling an earlier page's.
    NearDuplicate,
}

impl Verdict {
    /// Whether a page with this verdict is indexed for the pages after it
    /// (its fingerprint and sketch): new content, and near duplicates, so
    /// a later copy of a near copy finds it although it may lie further
    /// from the first original. An exact duplicate adds nothing: its
    /// original stands for it.
    pub fn is_indexed(self) -> bool {
        matches!(self, Verdict::New | Verdict::NearDuplicate)
    }
}

/// A fetch attempt that ends without a content verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchOutcome {
    /// robots.txt (or a parked/over-delayed host) forbade the fetch.
    Disallowed,
    /// Network error, timeout, or an HTTP error status (4xx/5xx).
    Error,
    /// The body exceeded the fetch cap.
    TooLarge,
    /// Content type not parsed (not HTML/text).
    NotHtml,
    /// A redirect hop.
    Redirect,
    /// `noindex` in meta robots or X-Robots-Tag: not fingerprinted.
    Noindex,
    /// A revisit answered 304 Not Modified.
    Unchanged,
}

impl From<Verdict> for Decision {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::New => Decision::New,
            Verdict::ExactDuplicate => Decision::ExactDuplicate,
            Verdict::NearDuplicate => Decision::NearDuplicate,
        }
    }
}

impl From<FetchOutcome> for Decision {
    fn from(o: FetchOutcome) -> Self {
        match o {
            FetchOutcome::Disallowed => Decision::Disallowed,
            FetchOutcome::Error => Decision::Error,
            FetchOutcome::TooLarge => Decision::TooLarge,
            FetchOutcome::NotHtml => Decision::NotHtml,
            FetchOutcome::Redirect => Decision::Redirect,
            FetchOutcome::Noindex => Decision::Noindex,
            FetchOutcome::Unchanged => Decision::Unchanged,
        }
    }
}

impl Decision {
    /// The content verdict, for an attempt that reached the dedup stage.
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            Decision::New => Some(Verdict::New),
            Decision::ExactDuplicate => Some(Verdict::ExactDuplicate),
            Decision::NearDuplicate => Some(Verdict::NearDuplicate),
            _ => None,
        }
    }

    /// Whether the page's fingerprint and sketch are indexed
    /// ([`Verdict::is_indexed`]).
    pub fn is_indexed(self) -> bool {
        self.verdict().is_some_and(Verdict::is_indexed)
    }

    /// The fetch outcome, for an attempt that ended before a verdict.
    pub fn fetch_outcome(self) -> Option<FetchOutcome> {
        match self {
            Decision::Disallowed => Some(FetchOutcome::Disallowed),
            Decision::Error => Some(FetchOutcome::Error),
            Decision::TooLarge => Some(FetchOutcome::TooLarge),
            Decision::NotHtml => Some(FetchOutcome::NotHtml),
            Decision::Redirect => Some(FetchOutcome::Redirect),
            Decision::Noindex => Some(FetchOutcome::Noindex),
            Decision::Unchanged => Some(FetchOutcome::Unchanged),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decision_is_a_verdict_or_a_fetch_outcome_and_converts_back() {
        for d in Decision::ALL {
            match (d.verdict(), d.fetch_outcome()) {
                (Some(v), None) => assert_eq!(Decision::from(v), d),
                (None, Some(o)) => assert_eq!(Decision::from(o), d),
                other => panic!("{d}: {other:?}"),
            }
        }
    }
}
