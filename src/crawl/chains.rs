//! Duplicate chains (`[dedup] max_duplicate_chain`): how many same-host
//! duplicates or look-alikes in a row end at a page along its link path
//! (session ids in paths, calendars whose pages differ only in numbers).

use std::path::Path;

use url::Url;

use crate::crawllog::PageRecord;
use crate::model::Decision;
use crate::spillmap::SpillMap;

/// Chain lengths kept in memory before they are written to a run.
const MEM: usize = 1 << 14;

/// Per duplicate page, how many same-host duplicates or look-alikes in a row end at it
/// along its link path (a page that is no such duplicate has 0 and is not
/// kept). Keys are 64-bit hashes of canonical URLs, in a [`SpillMap`]: the
/// newest in memory, the others on disk, so memory does not grow with the
/// crawl's duplicates.
pub(super) struct DupChains(SpillMap<u64, u32>);

impl DupChains {
    /// Chains whose older entries go to runs in `dir`.
    pub(super) fn new(dir: &Path) -> Self {
        Self::with_memory(dir, MEM)
    }

    fn with_memory(dir: &Path, mem: usize) -> Self {
        DupChains(SpillMap::spilling(dir, mem))
    }

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
    pub(super) fn record(&mut self, r: &PageRecord) -> std::io::Result<u32> {
        let host = |u: &str| Url::parse(u).ok().and_then(|u| u.host_str().map(str::to_string));
        let same_host = |of: Option<&str>| of.is_some_and(|d| host(d).is_some() && host(d) == host(&r.canonical));
        let link = (r.decision.is_duplicate() && same_host(r.dup_of.as_deref()))
            || (r.decision == Decision::New && same_host(r.looks_like.as_deref()));
        if !link {
            return Ok(0);
        }
        let (canonical, parent) = (r.canonical.as_str(), r.parent.as_deref());
        let before = match parent {
            Some(p) => self.0.get(&Self::key(p))?.unwrap_or(0),
            None => 0,
        };
        let n = before.saturating_add(1);
        self.0.insert(Self::key(canonical), n)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, parent: Option<&str>, dup_of: Option<&str>) -> PageRecord {
        PageRecord {
            canonical: url.into(),
            parent: parent.map(Into::into),
            decision: if dup_of.is_some() {
                Decision::NearDuplicate
            } else {
                Decision::New
            },
            dup_of: dup_of.map(Into::into),
            ..PageRecord::default()
        }
    }

    #[test]
    fn chains_grow_along_link_paths_when_their_lengths_are_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        // Two lengths in memory: the older ones are read back from runs.
        let mut c = DupChains::with_memory(dir.path(), 2);
        let first = "http://a.test/s/0";
        assert_eq!(c.record(&page(first, None, None)).unwrap(), 0);
        let mut parent = first.to_string();
        for i in 1..=20 {
            let url = format!("http://a.test/s/{i}");
            assert_eq!(c.record(&page(&url, Some(&parent), Some(first))).unwrap(), i);
            parent = url;
        }
        // A duplicate of another host's page ends no chain; one linked from
        // the fifth link of the chain extends that one.
        assert_eq!(
            c.record(&page("http://a.test/x", Some(&parent), Some("http://b.test/")))
                .unwrap(),
            0
        );
        let branch = page("http://a.test/y", Some("http://a.test/s/5"), Some(first));
        assert_eq!(c.record(&branch).unwrap(), 6);
    }
}
