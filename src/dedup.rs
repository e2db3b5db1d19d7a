//! Dedup decisions (pipeline: after the index, before the frontier update):
//! new / exact duplicate / near duplicate, exact content hashes, and the policy
//! that turns a decision into out-link treatment.

use serde::{Deserialize, Serialize};

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
    /// Simhash within k of an earlier page.
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
}

impl Decision {
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
