//! The decider's part of a recrawl (see [`crate::recrawl`]): a revisit is
//! recorded under the id of the page it revisits; a 304 keeps the page's
//! content and verdict; a 200 with the same body or text keeps its verdict;
//! other content is decided again like any page, after the page's previous
//! hashes, fingerprint and sketch stop naming it (so it is never a
//! duplicate of its own previous version). Every revisit adapts the page's
//! interval and counts.

use super::*;
use crate::dedup::Ruling;
use crate::fetch::Validators;
use crate::model::{Change, Revisit};

impl Decider {
    /// A revisit that ended without content (error, redirect, robots.txt,
    /// not HTML...): the page's previous content no longer names it.
    pub(super) fn forget_previous(&mut self, id: PageId, previous: Option<&StoredPage>) -> Result<()> {
        if let Some(p) = previous {
            self.dedup
                .replica_mut()
                .forget(id, p.content_hash.as_ref(), p.text_hash.as_ref())
                .map_err(|e| Error::io(self.dedup.replica().sketch_path(), e))?;
        }
        Ok(())
    }

    /// A 304 Not Modified: `unchanged`, with the recorded page's
    /// fingerprint and hashes (no body was read).
    pub(super) fn not_modified(&mut self, previous: Option<&StoredPage>, rec: &mut PageRecord) -> Result<Change> {
        rec.decision = Decision::Unchanged;
        if let Some(p) = previous {
            rec.simhash = p.simhash.map(simhash::to_hex);
            rec.content_hash = p.content_hash.as_ref().map(dedup::hex);
            rec.text_hash = p.text_hash.as_ref().map(dedup::hex);
            rec.change_distance = p.simhash.map(|_| 0);
        }
        Ok(Change::Unchanged)
    }

    /// A revisit's content against `previous`: sets `change` and the
    /// record's distance, and returns the verdict to keep when the body or
    /// text is the same (the content was decided before); `None` says
    /// "decide it" (its previous content was forgotten by
    /// [`Decider::prejudge`]).
    pub(super) fn revisit_page(
        &mut self,
        previous: &StoredPage,
        a: &Analysis,
        rec: &mut PageRecord,
        change: &mut Option<Change>,
    ) -> Option<Ruling> {
        let (c, kept) = revisit_change(&self.shared.settings, previous, a);
        *change = Some(c);
        rec.change_distance = match (previous.simhash, (!a.noindex).then_some(a.simhash)) {
            (Some(x), Some(y)) => Some(simhash::hamming(x, y)),
            _ => None,
        };
        kept
    }
}

/// What a revisit's content is against `previous`, and the verdict it
/// keeps when its body or text is the same (the content was decided
/// before); `None`: its previous content is forgotten and it is decided
/// again.
pub(super) fn revisit_change(settings: &Settings, previous: &StoredPage, a: &Analysis) -> (Change, Option<Ruling>) {
    let fp = (!a.noindex).then_some(a.simhash);
    let c = crate::recrawl::classify(previous, &a.hashes.body, &a.hashes.text, fp, settings.simhash.k);
    if c == Change::Unchanged && fp.is_some() {
        if let Some(verdict) = previous.decision.verdict() {
            let kept = Ruling {
                verdict,
                dup_of: previous.dup_of,
                distance: previous.distance,
                resemblance: None,
            };
            return (c, Some(kept));
        }
    }
    (c, None)
}

/// The recrawl state after a revisit of `previous` that found `change`
/// (None: no content, e.g. an error): the interval adapts to the change
/// ([`crate::recrawl::next_interval`]; unchanged without content), the
/// counts go up, the validators are the new answer's (a 304
/// (`not_modified`) keeps the old ones it does not repeat).
pub(super) fn revisit_state(
    settings: &Settings,
    previous: Option<&StoredPage>,
    change: Option<Change>,
    not_modified: bool,
    validators: &Validators,
) -> Revisit {
    let before = previous.map(|p| p.revisit.clone()).unwrap_or_default();
    let keep = |new: &Option<String>, old: Option<String>| match new {
        Some(v) => Some(v.clone()),
        None if not_modified => old,
        None => None,
    };
    Revisit {
        etag: keep(&validators.etag, before.etag),
        last_modified: keep(&validators.last_modified, before.last_modified),
        interval_secs: match change {
            Some(c) => crate::recrawl::next_interval(&settings.recrawl, before.interval_secs, c),
            None => before.interval_secs,
        },
        fetches: before.fetches.max(1).saturating_add(1),
        changes: before.changes + u32::from(change == Some(Change::Changed)),
        change,
    }
}

/// The page record to store: `built` from the crawl-log record, with its
/// recrawl state. A first fetch starts one (`fetches` 1, the answer's
/// validators); a 304 keeps the revisited page (`not_modified`: content,
/// verdict, status) with the new fetch time and state.
pub(super) fn stored_page(
    built: StoredPage,
    not_modified: Option<Box<StoredPage>>,
    revisit: Option<Revisit>,
    validators: Validators,
) -> StoredPage {
    let revisit = revisit.unwrap_or(Revisit {
        etag: validators.etag,
        last_modified: validators.last_modified,
        interval_secs: 0,
        fetches: 1,
        changes: 0,
        change: None,
    });
    match not_modified {
        Some(p) => StoredPage {
            fetched_at_ms: built.fetched_at_ms,
            revisit,
            ..*p
        },
        None => StoredPage { revisit, ..built },
    }
}
