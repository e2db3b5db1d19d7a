//! Duplicate chains (`[dedup] max_duplicate_chain`): how many same-host
//! duplicates or look-alikes in a row end at a page along its link path
//! (session ids in paths, calendars whose pages differ only in numbers).

use std::collections::HashMap;

use url::Url;

use crate::crawllog::PageRecord;
use crate::model::Decision;

/// Per duplicate page, how many same-host duplicates or look-alikes in a row end at it
/// along its link path (a page that is no such duplicate has 0 and is not
/// kept). Keys are 64-bit hashes of canonical URLs.
#[derive(Default)]
pub(super) struct DupChains(HashMap<u64, u32>);

impl DupChains {
    pub(super) fn key(canonical: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        canonical.hash(&mut h);
        h.finish()
    }

    /// Records a page; returns the length of the chain it ends. A link of
    /// a chain is a duplicate of a page of its own host, or a new page with
    /// the very fingerprint of one (`looks_like`: a calendar month differs
    /// from the next only in its numbers).
    pub(super) fn record(&mut self, r: &PageRecord) -> u32 {
        let host = |u: &str| Url::parse(u).ok().and_then(|u| u.host_str().map(str::to_string));
        let same_host = |of: Option<&str>| of.is_some_and(|d| host(d).is_some() && host(d) == host(&r.canonical));
        let link = (r.decision.is_duplicate() && same_host(r.dup_of.as_deref()))
            || (r.decision == Decision::New && same_host(r.looks_like.as_deref()));
        if !link {
            return 0;
        }
        let (canonical, parent) = (r.canonical.as_str(), r.parent.as_deref());
        let before = parent.and_then(|p| self.0.get(&Self::key(p)).copied()).unwrap_or(0);
        let n = before.saturating_add(1);
        self.0.insert(Self::key(canonical), n);
        n
    }
}
