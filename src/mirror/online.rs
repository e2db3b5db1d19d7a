//! The online detector: candidate pairs counted as pages are decided, so
//! the frontier can demote URLs of an established mirror.

use std::path::Path;

use super::*;
use crate::spillmap::{Fixed, SpillMap};

/// Counters of the online detector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnlineStats {
    /// Pages observed.
    pub observed: u64,
    /// Candidate pairs being counted.
    pub candidates: u64,
    /// Pairs established as mirrors (sample and score above thresholds).
    pub established: u64,
    /// Distinct URLs demoted by [`OnlineMirrors::penalty_for`].
    pub demoted: u64,
    /// Demoted URLs that were fetched anyway (observed later).
    pub demoted_fetched: u64,
}

impl OnlineStats {
    /// Fetches saved so far: demoted URLs not (yet) fetched. At the end of a
    /// crawl, the fetches the mirror penalty saved.
    pub fn fetches_saved(&self) -> u64 {
        self.demoted - self.demoted_fetched
    }
}

/// What the detector keeps of a page, as 64-bit hashes ([`key`]): 16
/// bytes (32 with its host's and path's keys) per page, whatever the length
/// of its URL.
#[derive(Debug, Clone, Copy)]
struct OnlinePage {
    /// Its content hash (body, else text; [`NO_CONTENT`] for neither).
    content: u64,
    /// The original this page's content group points at (itself if new):
    /// the hash of its canonical URL.
    root: u64,
}

impl Fixed for OnlinePage {
    const SIZE: usize = 16;
    fn write_to(&self, out: &mut [u8]) {
        self.content.write_to(&mut out[..8]);
        self.root.write_to(&mut out[8..]);
    }
    fn read_from(bytes: &[u8]) -> Self {
        OnlinePage {
            content: u64::read_from(&bytes[..8]),
            root: u64::read_from(&bytes[8..]),
        }
    }
}

/// The 64-bit hash the detector keeps of a path, a URL or a content hash
/// (a collision, about n² / 2⁶⁵ for n pages of a host, could only make two
/// pages count as the same in a mirror's sample).
fn key(s: &str) -> u64 {
    crate::hash::feature_hash(s.as_bytes())
}

/// Pages the crawl's detector holds in memory (about 0.6 MB); the others
/// are on disk ([`OnlineMirrors::spilling`]).
pub const MEM_PAGES: usize = 1 << 14;

/// [`OnlinePage::content`] of a page with no content hash.
const NO_CONTENT: u64 = 0;

/// A content hash's key, never [`NO_CONTENT`].
fn content_key(hash: &str) -> u64 {
    key(hash).max(1)
}

#[derive(Debug)]
struct OnlinePair {
    host_a: String,
    prefix_a: String,
    host_b: String,
    prefix_b: String,
    compared: u64,
    matched: u64,
    /// Matches whose duplicate was on side B (vs. side A).
    dups_on_b: u64,
    dups_on_a: u64,
    established: bool,
}

impl OnlinePair {
    /// The mirror (demoted) side: host, prefix, and the original's host, prefix.
    fn mirror_side(&self) -> (&str, &str, &str, &str) {
        if self.dups_on_a > self.dups_on_b {
            (&self.host_a, &self.prefix_a, &self.host_b, &self.prefix_b)
        } else {
            (&self.host_b, &self.prefix_b, &self.host_a, &self.prefix_a)
        }
    }
}

/// Online mirror detection for the crawl loop: feed every decided page to
/// [`observe`](Self::observe), ask [`penalty_for`](Self::penalty_for) before
/// scoring a URL. Every call is a few map lookups (no scans): in memory,
/// or, for pages the detector keeps on disk, a Bloom filter per run and at
/// most one block read.
#[derive(Debug)]
pub struct OnlineMirrors {
    settings: MirrorSettings,
    /// (host, path) ([`key`]s, query left out) -> page: in memory, or the
    /// newest in memory and the others on disk.
    pages: SpillMap<(u64, u64), OnlinePage>,
    pairs: Vec<OnlinePair>,
    pair_ids: HashMap<(String, String, String, String), usize>,
    /// host -> candidate pairs touching it.
    by_host: HashMap<String, Vec<usize>>,
    /// Demoted URLs not fetched yet ([`key`] of the canonical URL), a set
    /// kept like `pages`.
    demoted: SpillMap<u64, ()>,
    stats: OnlineStats,
}

impl OnlineMirrors {
    /// An empty detector with `[mirror]` thresholds, in memory.
    pub fn new(settings: &MirrorSettings) -> Self {
        Self::with_pages(settings, SpillMap::in_memory(), SpillMap::in_memory())
    }

    /// An empty detector that keeps at most `mem_pages` pages in memory
    /// (the crawl's: [`MEM_PAGES`]) and the others in runs in `dir`
    /// ([`SpillMap`]).
    pub fn spilling(settings: &MirrorSettings, dir: &Path, mem_pages: usize) -> Self {
        Self::with_pages(
            settings,
            SpillMap::spilling(dir, mem_pages),
            SpillMap::spilling(dir, mem_pages),
        )
    }

    fn with_pages(
        settings: &MirrorSettings,
        pages: SpillMap<(u64, u64), OnlinePage>,
        demoted: SpillMap<u64, ()>,
    ) -> Self {
        OnlineMirrors {
            settings: settings.clone(),
            pages,
            pairs: Vec::new(),
            pair_ids: HashMap::new(),
            by_host: HashMap::new(),
            demoted,
            stats: OnlineStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> OnlineStats {
        let mut s = self.stats;
        s.candidates = self.pairs.len() as u64;
        s
    }

    /// The established pairs as (mirror host, mirror prefix, original host, original prefix).
    pub fn established(&self) -> Vec<(String, String, String, String)> {
        self.pairs
            .iter()
            .filter(|p| p.established)
            .map(|p| {
                let (h, pr, oh, op) = p.mirror_side();
                (h.to_string(), pr.to_string(), oh.to_string(), op.to_string())
            })
            .collect()
    }

    /// Record one decided page (call after the dedup decision). Fails only
    /// when the pages on disk cannot be read or written.
    pub fn observe(&mut self, rec: &PageRecord) -> std::io::Result<()> {
        self.stats.observed += 1;
        let k = key(&rec.canonical);
        if self.demoted.get(&k)?.is_some() {
            self.demoted.remove(&k)?;
            self.stats.demoted_fetched += 1;
        }
        if !has_content(rec) {
            return Ok(());
        }
        let Some((host, path)) = split_url(&rec.canonical) else {
            return Ok(());
        };
        let path = strip_query(path);
        let root = match rec.dup_of.as_deref() {
            Some(orig) => self.root_of(orig)?.unwrap_or_else(|| key(orig)),
            None => key(&rec.canonical),
        };
        let content = rec
            .content_hash
            .as_deref()
            .or(rec.text_hash.as_deref())
            .map_or(NO_CONTENT, content_key);
        // A new candidate from this page's duplicate match.
        if let Some((oh, op)) = rec.dup_of.as_deref().and_then(split_url) {
            let op = strip_query(op);
            if oh != host {
                if let Some((pa, pb)) = align_prefixes(op, path) {
                    self.candidate(oh, pa, host, pb);
                }
            }
        }
        let page = OnlinePage { content, root };
        // Count this page against every candidate of its host.
        if let Some(ids) = self.by_host.get(host) {
            for &id in ids {
                let pair = &self.pairs[id];
                let (mine, other_host, other_prefix, on_b) = if pair.host_a == host {
                    (&pair.prefix_a, &pair.host_b, &pair.prefix_b, false)
                } else {
                    (&pair.prefix_b, &pair.host_a, &pair.prefix_a, true)
                };
                let Some(rel) = path.strip_prefix(mine.as_str()) else {
                    continue;
                };
                let Some(other) = self
                    .pages
                    .get(&(key(other_host), key(&format!("{other_prefix}{rel}"))))?
                else {
                    continue;
                };
                let matched = other.root == page.root || (page.content != NO_CONTENT && other.content == page.content);
                let pair = &mut self.pairs[id];
                pair.compared += 1;
                if matched {
                    pair.matched += 1;
                    if on_b {
                        pair.dups_on_b += 1;
                    } else {
                        pair.dups_on_a += 1;
                    }
                }
                let established = pair.compared >= u64::from(self.settings.min_sample)
                    && pair.matched as f64 >= self.settings.min_score * pair.compared as f64;
                if established && !pair.established {
                    self.stats.established += 1;
                    tracing::debug!(
                        "mirror established: {}{} ~ {}{} ({}/{})",
                        pair.host_a,
                        pair.prefix_a,
                        pair.host_b,
                        pair.prefix_b,
                        pair.matched,
                        pair.compared
                    );
                }
                pair.established = established;
            }
        }
        self.pages.insert((key(host), key(path)), page)
    }

    fn root_of(&self, canonical: &str) -> std::io::Result<Option<u64>> {
        let Some((host, path)) = split_url(canonical) else {
            return Ok(None);
        };
        Ok(self.pages.get(&(key(host), key(strip_query(path))))?.map(|p| p.root))
    }

    fn candidate(&mut self, h1: &str, p1: &str, h2: &str, p2: &str) {
        let ((ha, pa), (hb, pb)) = if (h1, p1) <= (h2, p2) {
            ((h1, p1), (h2, p2))
        } else {
            ((h2, p2), (h1, p1))
        };
        let key = (ha.to_string(), pa.to_string(), hb.to_string(), pb.to_string());
        if self.pair_ids.contains_key(&key) {
            return;
        }
        let id = self.pairs.len();
        self.pairs.push(OnlinePair {
            host_a: key.0.clone(),
            prefix_a: key.1.clone(),
            host_b: key.2.clone(),
            prefix_b: key.3.clone(),
            compared: 0,
            matched: 0,
            dups_on_a: 0,
            dups_on_b: 0,
            established: false,
        });
        self.by_host.entry(key.0.clone()).or_default().push(id);
        self.by_host.entry(key.2.clone()).or_default().push(id);
        self.pair_ids.insert(key, id);
    }

    /// The mirror penalty for a URL (canonical form) not fetched yet: when its
    /// host (prefix) is an established mirror and the counterpart page on the
    /// original is already known, `Some((penalty, counterpart URL))`. None when
    /// `[mirror] online` is off. Fails only when the pages on disk cannot be
    /// read.
    pub fn penalty_for(&mut self, canonical: &str) -> std::io::Result<Option<(f64, String)>> {
        if !self.settings.online {
            return Ok(None);
        }
        let (Some((host, path)), Some(scheme_end)) = (split_url(canonical), canonical.find("://")) else {
            return Ok(None);
        };
        let scheme = &canonical[..scheme_end + 3];
        let path = strip_query(path);
        let Some(ids) = self.by_host.get(host) else {
            return Ok(None);
        };
        for &id in ids {
            let pair = &self.pairs[id];
            if !pair.established {
                continue;
            }
            let (mh, mp, oh, op) = pair.mirror_side();
            if mh != host {
                continue;
            }
            let Some(rel) = path.strip_prefix(mp) else {
                continue;
            };
            let other = format!("{op}{rel}");
            if self.pages.get(&(key(oh), key(&other)))?.is_some() {
                let counterpart = format!("{scheme}{oh}{other}");
                let k = key(canonical);
                if self.demoted.get(&k)?.is_none() {
                    self.demoted.insert(k, ())?;
                    self.stats.demoted += 1;
                }
                return Ok(Some((self.settings.penalty, counterpart)));
            }
        }
        Ok(None)
    }
}
