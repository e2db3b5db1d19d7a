//! Confirming near-duplicate candidates (pipeline: in the dedup decision,
//! after the simhash index lookup): the sketch each new page keeps
//! ([`Sketch`], by `[dedup] verify`) and the [`SketchIndex`] that holds them,
//! which files content sketches under their smallest shingle hashes to find the
//! candidates simhash misses, and picks the confirmed original.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::NearMatch;
use crate::model::PageId;

/// The sketch a near-duplicate candidate is confirmed with
/// (`[dedup] verify`): both pages of a comparison have the same kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Sketch {
    /// Broder min-hash (`verify = "minhash"`).
    MinHash(super::MinHashSketch),
    /// Bottom-k content shingles (`verify = "shingles"`).
    Content(super::ContentSketch),
}

impl Sketch {
    /// Estimated shingle resemblance of the two pages (0 for sketches of
    /// different kinds).
    pub fn resemblance(&self, other: &Sketch) -> f64 {
        match (self, other) {
            (Sketch::MinHash(a), Sketch::MinHash(b)) => a.resemblance(b),
            (Sketch::Content(a), Sketch::Content(b)) => a.resemblance(b),
            _ => 0.0,
        }
    }

    /// The sketch as bytes: a kind tag, then the sketch's own encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self)
    }

    /// A sketch from [`Sketch::to_bytes`]; `None` when malformed.
    pub fn from_bytes(bytes: &[u8]) -> Option<Sketch> {
        decode(bytes)
    }
}

/// Verification sketches of the new pages, with their fingerprints, and a
/// candidate index over the smallest shingle hashes of content sketches.
///
/// Simhash finds candidates within k bits. Pages whose shingles mostly
/// agree can still lie further apart: a short page whose title differs, a
/// copy inside translated navigation. Two content sketches whose sets have
/// resemblance r share their smallest hash with probability r, so every
/// page is also filed under its [`ContentSketch::band_keys`], and the pages
/// sharing one are candidates too. Every candidate, from either source, is
/// confirmed by its resemblance.
///
/// Memory: a sketch is about half a kilobyte, and only the few candidates
/// of a page are ever read again, so a crawl keeps them in a spill file
/// ([`SketchIndex::spilling`]: appended, read back by offset) and holds
/// per page only its fingerprint and where its sketch is, plus its band
/// keys (one small map entry each); [`SketchIndex::new`] keeps the
/// sketches in memory.
///
/// [`ContentSketch::band_keys`]: super::ContentSketch::band_keys
#[derive(Debug, Default)]
pub struct SketchIndex {
    /// Page → its fingerprint and where its sketch is.
    pages: HashMap<PageId, Slot>,
    /// Band key → the first page filed under it (when its id fits 32 bits).
    first: HashMap<u32, u32>,
    /// Band key → the other pages filed under it (at most [`BUCKET_MAX`]
    /// with the first), and pages whose id does not fit 32 bits.
    more: HashMap<u32, Vec<PageId>>,
    sketches: Sketches,
}

/// A recorded page: its fingerprint, and its sketch's place in [`Sketches`].
#[derive(Debug, Clone, Copy)]
struct Slot {
    simhash: u64,
    at: u64,
    len: u32,
}

/// Where the sketches are.
#[derive(Debug)]
enum Sketches {
    /// In memory; a slot's `at` is the index.
    Held(Vec<Sketch>),
    /// In a spill file; a slot's `at` and `len` are its bytes.
    Spilled {
        file: std::fs::File,
        path: PathBuf,
        end: u64,
    },
}

impl Default for Sketches {
    fn default() -> Self {
        Sketches::Held(Vec::new())
    }
}

impl Drop for Sketches {
    /// A spill file holds one run's sketches only: it goes with the index.
    fn drop(&mut self) {
        if let Sketches::Spilled { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Tags of a spilled sketch's kind.
const CONTENT: u8 = 0;
const MINHASH: u8 = 1;

fn encode(sketch: &Sketch) -> Vec<u8> {
    let (tag, bytes) = match sketch {
        Sketch::Content(c) => (CONTENT, c.to_bytes()),
        Sketch::MinHash(m) => (MINHASH, m.to_bytes()),
    };
    let mut out = Vec::with_capacity(1 + bytes.len());
    out.push(tag);
    out.extend_from_slice(&bytes);
    out
}

fn decode(bytes: &[u8]) -> Option<Sketch> {
    let (&tag, rest) = bytes.split_first()?;
    match tag {
        CONTENT => super::ContentSketch::from_bytes(rest).map(Sketch::Content),
        MINHASH => super::MinHashSketch::from_bytes(rest).map(Sketch::MinHash),
        _ => None,
    }
}

/// Pages kept per band key: the first ones filed (the originals). A key
/// shared by more pages is a phrase of many pages, not evidence of a copy.
const BUCKET_MAX: usize = 32;

impl SketchIndex {
    /// An empty index that keeps the sketches in memory.
    pub fn new() -> Self {
        SketchIndex::default()
    }

    /// An empty index that keeps the sketches in the file `path` (created,
    /// or emptied: it holds one crawl run's sketches, rebuilt at each start).
    pub fn spilling(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(SketchIndex {
            sketches: Sketches::Spilled {
                file,
                path: path.to_path_buf(),
                end: 0,
            },
            ..SketchIndex::default()
        })
    }

    /// The spill file, if the sketches are in one.
    pub fn spill_path(&self) -> Option<&Path> {
        match &self.sketches {
            Sketches::Spilled { path, .. } => Some(path),
            _ => None,
        }
    }

    fn io_error(what: String) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, what)
    }

    /// Keep a sketch; its slot.
    fn put(&mut self, sketch: Sketch, simhash: u64) -> std::io::Result<Slot> {
        match &mut self.sketches {
            Sketches::Held(v) => {
                v.push(sketch);
                Ok(Slot {
                    simhash,
                    at: v.len() as u64 - 1,
                    len: 0,
                })
            }
            Sketches::Spilled { file, end, .. } => {
                use std::os::unix::fs::FileExt;
                let bytes = encode(&sketch);
                file.write_all_at(&bytes, *end)?;
                let slot = Slot {
                    simhash,
                    at: *end,
                    len: bytes.len() as u32,
                };
                *end += bytes.len() as u64;
                Ok(slot)
            }
        }
    }

    /// The sketch in `slot`.
    fn get(&self, slot: &Slot) -> std::io::Result<std::borrow::Cow<'_, Sketch>> {
        match &self.sketches {
            Sketches::Held(v) => v
                .get(slot.at as usize)
                .map(std::borrow::Cow::Borrowed)
                .ok_or_else(|| Self::io_error(format!("no sketch at {}", slot.at))),
            Sketches::Spilled { file, path, .. } => {
                use std::os::unix::fs::FileExt;
                let mut bytes = vec![0; slot.len as usize];
                file.read_exact_at(&mut bytes, slot.at)?;
                decode(&bytes)
                    .map(std::borrow::Cow::Owned)
                    .ok_or_else(|| Self::io_error(format!("{}: damaged sketch at offset {}", path.display(), slot.at)))
            }
        }
    }

    /// The pages filed under band key `key`.
    fn bucket(&self, key: u32, out: &mut Vec<PageId>) {
        if let Some(&p) = self.first.get(&key) {
            out.push(PageId::from(p));
        }
        if let Some(more) = self.more.get(&key) {
            out.extend_from_slice(more);
        }
    }

    /// File `page` under band key `key` (a bucket keeps its first
    /// [`BUCKET_MAX`] pages, each once).
    fn file_under(&mut self, key: u32, page: PageId) {
        let first = self.first.get(&key).copied();
        let more = self.more.get(&key).map_or(0, Vec::len);
        if usize::from(first.is_some()) + more >= BUCKET_MAX
            || first.is_some_and(|p| PageId::from(p) == page)
            || self.more.get(&key).is_some_and(|m| m.contains(&page))
        {
            return;
        }
        match (first, u32::try_from(page)) {
            (None, Ok(small)) => {
                self.first.insert(key, small);
            }
            _ => self.more.entry(key).or_default().push(page),
        }
    }

    /// Record a new page's sketch and fingerprint.
    pub fn insert(&mut self, page: PageId, sketch: Sketch, simhash: u64) -> std::io::Result<()> {
        if let Sketch::Content(c) = &sketch {
            for &key in c.band_keys() {
                self.file_under(key, page);
            }
        }
        let slot = self.put(sketch, simhash)?;
        self.pages.insert(page, slot);
        Ok(())
    }

    /// Replace a recorded page's sketch and fingerprint (its template
    /// changed); its band keys stay filed.
    pub fn update(&mut self, page: PageId, sketch: Sketch, simhash: u64) -> std::io::Result<()> {
        if self.pages.contains_key(&page) {
            self.insert(page, sketch, simhash)?;
        }
        Ok(())
    }

    /// Forget a page's sketch (its content changed; its band keys stay
    /// filed and find nothing).
    pub fn remove(&mut self, page: PageId) {
        self.pages.remove(&page);
    }

    /// Pages recorded.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether no page is recorded.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The best confirmed original for a page with this sketch and
    /// fingerprint among `near` (simhash matches) and the pages sharing a
    /// band key: the highest resemblance at or above `threshold`, then the
    /// nearest fingerprint, then the earliest page. Fails only when a
    /// spilled sketch cannot be read back.
    pub fn confirm(
        &self,
        sketch: &Sketch,
        simhash: u64,
        near: &[NearMatch],
        threshold: f64,
    ) -> std::io::Result<Option<(NearMatch, f64)>> {
        let mut ids: Vec<PageId> = near.iter().map(|m| m.page).collect();
        if let Sketch::Content(c) = sketch {
            for &key in c.band_keys() {
                self.bucket(key, &mut ids);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        let mut best: Option<(NearMatch, f64)> = None;
        for page in ids {
            let Some(slot) = self.pages.get(&page) else {
                continue;
            };
            let r = sketch.resemblance(&*self.get(slot)?);
            if r < threshold {
                continue;
            }
            let m = NearMatch {
                page,
                distance: crate::simhash::hamming(simhash, slot.simhash),
            };
            // Higher resemblance, then nearer, then earlier (ids ascend:
            // an equal one found later is never better).
            let better = best.as_ref().is_none_or(|(bm, br)| {
                r.total_cmp(br)
                    .then_with(|| (bm.distance, bm.page).cmp(&(m.distance, m.page)))
                    .is_gt()
            });
            if better {
                best = Some((m, r));
            }
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::ContentSketch;

    /// A content sketch of `n` words from `base` on, with `shared` of them
    /// taken from base 0 (so sketches overlap as much as their words do).
    fn sketch(base: u64, n: u64, shared: u64) -> Sketch {
        let words: Vec<u64> = (0..n).map(|i| if i < shared { i } else { base + i }).collect();
        Sketch::Content(ContentSketch::from_words(&words))
    }

    #[test]
    fn a_spilled_index_confirms_exactly_as_one_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sketches.bin");
        let mut held = SketchIndex::new();
        let mut spilled = SketchIndex::spilling(&path).unwrap();
        // Pages 1..=60: families of near copies (same base words, a few
        // differ), so band keys are shared and buckets fill.
        for id in 1..=60u64 {
            let sk = sketch(1000 * (id % 7 + 1), 300, 200 + (id % 5) * 20);
            held.insert(id, sk.clone(), id * 31).unwrap();
            spilled.insert(id, sk, id * 31).unwrap();
        }
        // A re-fingerprinted page: its sketch and fingerprint replaced.
        let again = sketch(5000, 300, 250);
        held.update(4, again.clone(), 7).unwrap();
        spilled.update(4, again, 7).unwrap();
        assert_eq!(held.len(), spilled.len());
        let mut confirmed = 0;
        for q in 0..40u64 {
            let sk = sketch(1000 * (q % 7 + 1), 300, 180 + (q % 6) * 20);
            let near: Vec<NearMatch> = (1..=3)
                .map(|p| NearMatch {
                    page: q + p,
                    distance: (p % 4) as u32,
                })
                .collect();
            for threshold in [0.3, 0.6, 0.9] {
                let a = held.confirm(&sk, q, &near, threshold).unwrap();
                let b = spilled.confirm(&sk, q, &near, threshold).unwrap();
                assert_eq!(a, b, "query {q} at {threshold}");
                confirmed += usize::from(a.is_some());
            }
        }
        assert!(confirmed > 10, "only {confirmed} confirmations: the test checks little");
        assert!(std::fs::metadata(&path).unwrap().len() > 60 * 4 * 100);
        // The spill file holds one run's sketches: it goes with the index.
        drop(spilled);
        assert!(!path.exists());
    }

    #[test]
    fn a_bucket_keeps_its_first_pages_once() {
        let mut ix = SketchIndex::new();
        let sk = sketch(0, 50, 50);
        // Page ids past 32 bits are filed too.
        let big = u64::from(u32::MAX) + 5;
        for id in (1..=40).chain([big]) {
            ix.insert(id, sk.clone(), 0).unwrap();
        }
        ix.insert(3, sk.clone(), 0).unwrap();
        let Sketch::Content(c) = &sk else { unreachable!() };
        let mut pages = Vec::new();
        ix.bucket(c.band_keys()[0], &mut pages);
        assert_eq!(pages, (1..=BUCKET_MAX as u64).collect::<Vec<_>>());
        let mut only_big = SketchIndex::new();
        only_big.insert(big, sk.clone(), 0).unwrap();
        let mut pages = Vec::new();
        only_big.bucket(c.band_keys()[0], &mut pages);
        assert_eq!(pages, vec![big]);
    }
}
