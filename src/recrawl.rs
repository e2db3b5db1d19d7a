//! Recrawl scheduling (pipeline: beside the frontier; a recrawl round
//! starts here): which recorded pages are due for a revisit, what a revisit
//! found compared with the previous fetch ([`Change`]), and how a page's
//! revisit interval adapts to its changes.
//!
//! # The interval rule
//!
//! As Nutch's `AdaptiveFetchSchedule` (without its "sync delta", which
//! needs a modification time the crawl does not trust): a page fetched once
//! has `initial_interval_secs`; a revisit that finds the page `changed`
//! multiplies the interval by `1 - dec_rate`, one that finds it `unchanged`
//! or `near_unchanged` by `1 + inc_rate`; the result is clamped to
//! `min_interval_secs..=max_interval_secs`. A page is due at its last fetch
//! time plus its interval.
//!
//! # A round
//!
//! `simcrawl crawl --resume DIR --recrawl` (or `[recrawl] enabled`) queues
//! every recorded page that is due ([`Round::Due`]; `--recrawl-all`:
//! [`Round::All`]) before the crawl loop starts, and the loop runs until the
//! queue is empty, as any crawl. A revisit waits in its host's queue like
//! any URL, with the page it revisits ([`QueuedUrl::revisit`]); its seen
//! state stays `Done`, so an out-link to it does not queue it again and no
//! URL is fetched twice in one round. Pages already queued for a revisit (a
//! round that was stopped) are not queued twice.
//!
//! [`QueuedUrl::revisit`]: crate::model::QueuedUrl::revisit

use std::collections::HashSet;

use crate::config::RecrawlSettings;
use crate::model::{Change, PageId, StoredPage};
use crate::store::{Store, StoreError};

/// Which recorded pages a recrawl round queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// Those whose revisit is due at this time (milliseconds since the Unix
    /// epoch; the crawl passes the current time).
    Due {
        /// The round's clock.
        now_ms: u64,
    },
    /// Every revisitable page, due or not (`--recrawl-all`).
    All,
}

/// The interval a page has after its last fetch: the stored one, or the
/// initial one for a page fetched once (stored as 0), within the bounds.
pub fn current_interval(s: &RecrawlSettings, stored_secs: u64) -> u64 {
    let i = if stored_secs == 0 {
        s.initial_interval_secs
    } else {
        stored_secs
    };
    i.clamp(s.min_interval_secs, s.max_interval_secs)
}

/// The interval after a revisit that found `change`, from the interval the
/// page had (`stored_secs`, 0 = initial).
pub fn next_interval(s: &RecrawlSettings, stored_secs: u64, change: Change) -> u64 {
    let i = current_interval(s, stored_secs) as f64;
    let next = match change {
        Change::Changed => i * (1.0 - s.dec_rate),
        Change::Unchanged | Change::NearUnchanged => i * (1.0 + s.inc_rate),
    };
    // `as` saturates; the clamp keeps it in bounds.
    (next.round() as u64).clamp(s.min_interval_secs, s.max_interval_secs)
}

/// When `page` is due for a revisit, milliseconds since the Unix epoch.
pub fn due_ms(s: &RecrawlSettings, page: &StoredPage) -> u64 {
    let interval = current_interval(s, page.revisit.interval_secs);
    page.fetched_at_ms.saturating_add(interval.saturating_mul(1000))
}

/// What a revisit answered with a body found, against the previous fetch:
/// the same body or visible text is `unchanged`; a simhash within `k` of
/// the previous one `near_unchanged`; anything else `changed` (also a page
/// that gained or lost its fingerprint, e.g. by `noindex`).
pub fn classify(previous: &StoredPage, body: &[u8; 32], text: &[u8; 32], simhash: Option<u64>, k: u32) -> Change {
    if previous.content_hash.as_ref() == Some(body) || previous.text_hash.as_ref() == Some(text) {
        return Change::Unchanged;
    }
    match (previous.simhash, simhash) {
        (Some(a), Some(b)) if crate::simhash::hamming(a, b) <= k => Change::NearUnchanged,
        _ => Change::Changed,
    }
}

/// The recorded pages a round queues, in page order: revisitable ones
/// ([`StoredPage::revisitable`]) that are due (or all, by `round`), minus
/// those already queued for a revisit.
pub fn due_pages(store: &dyn Store, s: &RecrawlSettings, round: Round) -> Result<Vec<StoredPage>, StoreError> {
    let mut queued: HashSet<PageId> = HashSet::new();
    for q in store.iter_queue() {
        if let Some(id) = q?.revisit {
            queued.insert(id);
        }
    }
    let mut due = Vec::new();
    for page in store.iter_pages() {
        let page = page?;
        if !page.revisitable() || queued.contains(&page.id) {
            continue;
        }
        let is_due = match round {
            Round::All => true,
            Round::Due { now_ms } => due_ms(s, &page) <= now_ms,
        };
        if is_due {
            due.push(page);
        }
    }
    Ok(due)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Decision;

    fn settings() -> RecrawlSettings {
        RecrawlSettings {
            enabled: false,
            conditional: true,
            initial_interval_secs: 1000,
            min_interval_secs: 100,
            max_interval_secs: 2000,
            inc_rate: 0.2,
            dec_rate: 0.5,
        }
    }

    #[test]
    fn intervals_shrink_on_change_grow_otherwise_and_stay_in_bounds() {
        let s = settings();
        assert_eq!(current_interval(&s, 0), 1000);
        assert_eq!(next_interval(&s, 0, Change::Changed), 500);
        assert_eq!(next_interval(&s, 0, Change::Unchanged), 1200);
        assert_eq!(next_interval(&s, 0, Change::NearUnchanged), 1200);
        assert_eq!(next_interval(&s, 500, Change::Changed), 250);
        // Bounds: repeated change ends at min, repeated stillness at max.
        let (mut down, mut up) = (0, 0);
        for _ in 0..20 {
            down = next_interval(&s, down, Change::Changed);
            up = next_interval(&s, up, Change::Unchanged);
        }
        assert_eq!((down, up), (100, 2000));
        // A stored interval outside bounds set later is brought inside.
        assert_eq!(current_interval(&s, 50), 100);
        assert_eq!(current_interval(&s, 90_000), 2000);
    }

    #[test]
    fn due_time_is_last_fetch_plus_interval() {
        let s = settings();
        let mut p = StoredPage {
            fetched_at_ms: 5_000,
            decision: Decision::New,
            ..StoredPage::default()
        };
        assert_eq!(due_ms(&s, &p), 5_000 + 1_000_000);
        p.revisit.interval_secs = 300;
        assert_eq!(due_ms(&s, &p), 5_000 + 300_000);
    }

    #[test]
    fn classes_by_hash_then_distance() {
        let prev = StoredPage {
            content_hash: Some([1; 32]),
            text_hash: Some([2; 32]),
            simhash: Some(0b1111),
            ..StoredPage::default()
        };
        assert_eq!(classify(&prev, &[1; 32], &[9; 32], Some(0), 3), Change::Unchanged);
        assert_eq!(classify(&prev, &[9; 32], &[2; 32], Some(!0), 3), Change::Unchanged);
        assert_eq!(
            classify(&prev, &[9; 32], &[9; 32], Some(0b0111), 3),
            Change::NearUnchanged
        );
        assert_eq!(
            classify(&prev, &[9; 32], &[9; 32], Some(0b1111 ^ 0xff00), 3),
            Change::Changed
        );
        assert_eq!(classify(&prev, &[9; 32], &[9; 32], None, 3), Change::Changed);
    }

    #[test]
    fn due_pages_skips_pages_not_due_not_revisitable_or_already_queued() {
        use crate::store::{MemStore, Store};
        let store = MemStore::new();
        let s = settings();
        let mut urls = Vec::new();
        for (i, (decision, fetched_at_ms)) in [
            (Decision::New, 0u64),
            (Decision::NearDuplicate, 0),
            (Decision::Error, 0),
            (Decision::New, 10_000_000),
        ]
        .into_iter()
        .enumerate()
        {
            let u = crate::store::test_suite::qurl("a.test", &format!("/{i}"), 1.0, i as u64 + 1);
            store.enqueue(std::slice::from_ref(&u)).unwrap();
            let page = StoredPage {
                id: store.allocate_page_id(),
                canonical: u.canonical.clone(),
                decision,
                fetched_at_ms,
                ..StoredPage::default()
            };
            store.complete(&u, &page, None, &Default::default()).unwrap();
            urls.push((u, page));
        }
        let ids = |r: Round| -> Vec<PageId> { due_pages(&store, &s, r).unwrap().iter().map(|p| p.id).collect() };
        let (a, b, d) = (urls[0].1.id, urls[1].1.id, urls[3].1.id);
        assert_eq!(ids(Round::Due { now_ms: 1_000_000 }), vec![a, b]);
        assert_eq!(ids(Round::Due { now_ms: 999_999 }), Vec::<PageId>::new());
        assert_eq!(ids(Round::All), vec![a, b, d]);
        // Queued for a revisit already: not again.
        let mut again = urls[0].0.clone();
        again.seq = 100;
        again.revisit = Some(a);
        store.enqueue(&[again]).unwrap();
        assert_eq!(ids(Round::All), vec![b, d]);
    }
}
