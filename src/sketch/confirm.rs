//! Confirming near-duplicate candidates (pipeline: in the dedup decision,
//! after the simhash index lookup): the sketch each new page keeps
//! ([`Sketch`], by `[dedup] verify`) and the [`SketchIndex`] that holds them,
//! which files content sketches under their smallest shingle hashes to find the
//! candidates simhash misses, and picks the confirmed original.

use std::collections::HashMap;

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
/// [`ContentSketch::band_keys`]: super::ContentSketch::band_keys
#[derive(Debug, Default)]
pub struct SketchIndex {
    pages: HashMap<PageId, (Sketch, u64)>,
    buckets: HashMap<u32, Vec<PageId>>,
}

/// Pages kept per band key: the first ones filed (the originals). A key
/// shared by more pages is a phrase of many pages, not evidence of a copy.
const BUCKET_MAX: usize = 32;

impl SketchIndex {
    /// An empty index.
    pub fn new() -> Self {
        SketchIndex::default()
    }

    /// Record a new page's sketch and fingerprint.
    pub fn insert(&mut self, page: PageId, sketch: Sketch, simhash: u64) {
        if let Sketch::Content(c) = &sketch {
            for &key in c.band_keys() {
                let b = self.buckets.entry(key).or_default();
                if b.len() < BUCKET_MAX && !b.contains(&page) {
                    b.push(page);
                }
            }
        }
        self.pages.insert(page, (sketch, simhash));
    }

    /// Replace a recorded page's sketch and fingerprint (its template
    /// changed); its band keys stay filed.
    pub fn update(&mut self, page: PageId, sketch: Sketch, simhash: u64) {
        if self.pages.contains_key(&page) {
            self.insert(page, sketch, simhash);
        }
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
    /// nearest fingerprint, then the earliest page.
    pub fn confirm(
        &self,
        sketch: &Sketch,
        simhash: u64,
        near: &[NearMatch],
        threshold: f64,
    ) -> Option<(NearMatch, f64)> {
        let mut ids: Vec<PageId> = near.iter().map(|m| m.page).collect();
        if let Sketch::Content(c) = sketch {
            for key in c.band_keys() {
                if let Some(b) = self.buckets.get(key) {
                    ids.extend_from_slice(b);
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .filter_map(|page| {
                let (other, fp) = self.pages.get(&page)?;
                let r = sketch.resemblance(other);
                let distance = crate::simhash::hamming(simhash, *fp);
                (r >= threshold).then_some((NearMatch { page, distance }, r))
            })
            .max_by(|(m1, r1), (m2, r2)| {
                r1.total_cmp(r2)
                    .then_with(|| (m2.distance, m2.page).cmp(&(m1.distance, m1.page)))
            })
    }
}
