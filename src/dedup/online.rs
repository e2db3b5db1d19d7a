//! The online decision: one owner of the exact-hash index, the
//! near-duplicate index and the content sketches, deciding each page as it
//! arrives so the next page sees it.

use super::shared_exact::SharedExact;
use super::{decide, ContentHashes, ExactIndex, Ruling};
use crate::index::{LiveIndex, Match, SharedIndex};
use crate::model::{NearMatch, PageId, Verdict};
use crate::sketch::{Sketch, SketchIndex, Thresholds};
use crate::store::StoreError;
use std::collections::HashSet;

/// A store error as the I/O error a decision returns.
fn shared_err(what: &str, e: StoreError) -> std::io::Error {
    std::io::Error::other(format!("the {what} in the store: {e}"))
}

/// Where a [`Deduper`]'s exact-duplicate maps are.
enum ExactMaps {
    /// In memory.
    Local(ExactIndex),
    /// In the store, shared by the worker processes of one crawl.
    Shared(SharedExact),
}

impl ExactMaps {
    fn check_and_insert(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> std::io::Result<Option<Ruling>> {
        match self {
            ExactMaps::Local(e) => e.check_and_insert(body, text, page),
            ExactMaps::Shared(e) => e
                .check_and_insert(body, text, page)
                .map_err(|e| shared_err("exact-duplicate maps", e)),
        }
    }

    fn remove_owned(&mut self, body: Option<&[u8; 32]>, text: Option<&[u8; 32]>, page: PageId) -> std::io::Result<()> {
        match self {
            ExactMaps::Local(e) => e.remove_owned(body, text, page),
            ExactMaps::Shared(e) => e
                .remove_owned(body, text, page)
                .map_err(|e| shared_err("exact-duplicate maps", e)),
        }
    }
}

/// Where a [`Deduper`]'s fingerprints are indexed.
pub enum NearIndex {
    /// In memory: a crawl one process decides.
    Local(LiveIndex),
    /// In the store, shared by the worker processes of one crawl: queried
    /// in batches ([`Deduper::prefetch`]), written at the end of each
    /// ([`Deduper::flush`]).
    Shared(SharedIndex),
}

impl From<LiveIndex> for NearIndex {
    fn from(ix: LiveIndex) -> Self {
        NearIndex::Local(ix)
    }
}

impl From<SharedIndex> for NearIndex {
    fn from(ix: SharedIndex) -> Self {
        NearIndex::Shared(ix)
    }
}

impl NearIndex {
    fn query(&mut self, fp: u64, out: &mut Vec<Match>) -> std::io::Result<()> {
        match self {
            NearIndex::Local(ix) => {
                ix.query(fp, out);
                Ok(())
            }
            NearIndex::Shared(ix) => ix.query(fp, out).map_err(|e| shared_err("near-duplicate tables", e)),
        }
    }

    fn insert(&mut self, fp: u64, id: PageId) {
        match self {
            NearIndex::Local(ix) => ix.insert(fp, id),
            NearIndex::Shared(ix) => ix.insert(fp, id),
        }
    }

    /// Another process indexed `fp` as `id`.
    fn indexed_elsewhere(&mut self, fp: u64, id: PageId) {
        match self {
            NearIndex::Local(ix) => ix.insert(fp, id),
            NearIndex::Shared(ix) => ix.note_indexed(),
        }
    }

    fn len(&self) -> usize {
        match self {
            NearIndex::Local(ix) => ix.len(),
            NearIndex::Shared(ix) => ix.len(),
        }
    }
}

/// Decides pages in arrival order: exact body hash, then exact text hash,
/// then the nearest fingerprint within k — confirmed by content-shingle
/// resemblance when the page has a [`Sketch`] (`[dedup] verify`). A new
/// page's fingerprint and sketch are indexed at once.
pub struct Deduper {
    exact: ExactMaps,
    index: NearIndex,
    sketches: SketchIndex,
    k: u32,
    verify: Thresholds,
    matches: Vec<Match>,
    /// Revisited pages (recrawl) and the one fingerprint of each that is
    /// live in the index: the index keeps every fingerprint it was given,
    /// so a match on an older fingerprint of such a page (or on any, when
    /// it is `None`: its content is a duplicate now) is ignored.
    live: std::collections::HashMap<PageId, Option<u64>>,
}

/// One page's ruling, with the earlier page a new page looks like.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgement {
    /// The verdict and its original.
    pub ruling: Ruling,
    /// For a new page: the earliest indexed page with the very same
    /// fingerprint (only numbers or stop words differ).
    pub looks_like: Option<PageId>,
}

impl Deduper {
    /// Over the state a crawl starts from (empty, or rebuilt on resume).
    /// `verify` is the resemblance a sketched page needs to be a near
    /// duplicate of a candidate.
    pub fn new(
        exact: ExactIndex,
        index: impl Into<NearIndex>,
        sketches: SketchIndex,
        k: u32,
        verify: impl Into<Thresholds>,
    ) -> Self {
        Deduper {
            exact: ExactMaps::Local(exact),
            index: index.into(),
            sketches,
            k,
            verify: verify.into(),
            matches: Vec::with_capacity(16),
            live: std::collections::HashMap::new(),
        }
    }

    /// Over the maps and tables a crawl's worker processes share in the
    /// store (the sketches stay in memory).
    pub fn shared(
        exact: SharedExact,
        index: SharedIndex,
        sketches: SketchIndex,
        k: u32,
        verify: impl Into<Thresholds>,
    ) -> Self {
        let mut d = Deduper::new(ExactIndex::new(), index, sketches, k, verify);
        d.exact = ExactMaps::Shared(exact);
        d
    }

    /// The live fingerprint of each page revisited with changed content
    /// before (see [`Deduper::forget`]; rebuilt from the store on resume).
    pub fn with_live(mut self, live: std::collections::HashMap<PageId, Option<u64>>) -> Self {
        self.live = live;
        self
    }

    /// A revisit found new content for page `id`: its previous content
    /// (these hashes, its fingerprint and sketch) no longer names it, so it
    /// is decided again under the same id without matching itself. Its
    /// hashes are released (unless another page owns them) and its
    /// fingerprint is ignored until [`Deduper::decide`] indexes a new one.
    /// Fails only on the shared maps' store.
    pub fn forget(&mut self, id: PageId, body: Option<&[u8; 32]>, text: Option<&[u8; 32]>) -> std::io::Result<()> {
        self.exact.remove_owned(body, text, id)?;
        self.apply_forgotten(id);
        Ok(())
    }

    /// [`Deduper::forget`] done by another worker process (the shared maps
    /// no longer name the page).
    pub fn apply_forgotten(&mut self, id: PageId) {
        self.sketches.remove(id);
        self.live.insert(id, None);
    }

    /// Decide page `id` and index it if new. Its hashes become the owners'
    /// unless an earlier page owns them. Fails only when the sketch index
    /// cannot write or read its spill file.
    pub fn decide(
        &mut self,
        id: PageId,
        hashes: &ContentHashes,
        simhash: u64,
        sketch: Option<&Sketch>,
    ) -> std::io::Result<Judgement> {
        if let Some(ruling) = self
            .exact
            .check_and_insert(Some(&hashes.body), Some(&hashes.text), id)?
        {
            return Ok(Judgement {
                ruling,
                looks_like: None,
            });
        }
        self.matches.clear();
        self.index.query(simhash, &mut self.matches)?;
        if !self.live.is_empty() {
            let live = &self.live;
            self.matches
                .retain(|m| live.get(&m.id).is_none_or(|fp| *fp == Some(m.fp)));
        }
        let near: Vec<NearMatch> = self
            .matches
            .iter()
            .map(|m| NearMatch {
                page: m.id,
                distance: m.distance,
            })
            .collect();
        let ruling = match sketch {
            // A candidate (within k, or sharing a band key) must resemble
            // the page by at least the threshold.
            Some(sk) => match self.sketches.confirm(sk, simhash, &near, self.verify)? {
                Some((m, r)) => Ruling {
                    verdict: Verdict::NearDuplicate,
                    dup_of: Some(m.page),
                    distance: Some(m.distance),
                    resemblance: Some(r),
                },
                None => Ruling::new_content(),
            },
            None => decide(None, None, &near, self.k),
        };
        let looks_like = match ruling.verdict {
            Verdict::New => near.iter().filter(|m| m.distance == 0).map(|m| m.page).min(),
            _ => None,
        };
        if ruling.verdict.is_indexed() {
            if let Some(fp) = self.live.get_mut(&id) {
                *fp = Some(simhash);
            }
            self.index.insert(simhash, id);
            if let Some(sk) = sketch {
                self.sketches.insert(id, sk.clone(), simhash)?;
            }
        }
        Ok(Judgement { ruling, looks_like })
    }

    /// What [`Deduper::decide`] did for page `id`, replayed from its
    /// `verdict` rather than decided again: a decision another worker
    /// process made over the shared maps and tables, which already hold
    /// its hashes and fingerprint. The sketches and the live fingerprints
    /// change as they did in that process. Returns the verdict (a
    /// duplicate's original is not known here).
    pub fn apply_decided(
        &mut self,
        id: PageId,
        simhash: u64,
        sketch: Option<&Sketch>,
        verdict: Verdict,
    ) -> std::io::Result<Judgement> {
        if verdict.is_indexed() {
            if let Some(fp) = self.live.get_mut(&id) {
                *fp = Some(simhash);
            }
            self.index.indexed_elsewhere(simhash, id);
            if let Some(sk) = sketch {
                self.sketches.insert(id, sk.clone(), simhash)?;
            }
        }
        Ok(Judgement {
            ruling: Ruling {
                verdict,
                ..Ruling::new_content()
            },
            looks_like: None,
        })
    }

    /// [`Deduper::reindex`] done by another worker process (the shared
    /// tables already hold the new fingerprint).
    pub fn apply_reindexed(
        &mut self,
        id: PageId,
        old: u64,
        simhash: u64,
        sketch: Option<Sketch>,
    ) -> std::io::Result<()> {
        self.resketch(id, simhash, sketch)?;
        if simhash != old {
            self.index.indexed_elsewhere(simhash, id);
        }
        Ok(())
    }

    /// Whether the exact maps and the fingerprints are in the store,
    /// shared with other worker processes ([`Deduper::shared`]).
    pub fn is_shared(&self) -> bool {
        matches!(self.index, NearIndex::Shared(_))
    }

    /// Fetch from the shared maps and tables the owners of the hashes and
    /// the candidates of the fingerprints a batch will look up (one call
    /// each); returns their page ids (nothing when they are in memory).
    pub fn prefetch<'a>(
        &mut self,
        fps: &[u64],
        hashes: impl IntoIterator<Item = (Option<&'a [u8; 32]>, Option<&'a [u8; 32]>)>,
    ) -> Result<HashSet<PageId>, StoreError> {
        let mut ids = match &mut self.exact {
            ExactMaps::Shared(e) => e.prefetch(hashes)?,
            ExactMaps::Local(_) => HashSet::new(),
        };
        if let NearIndex::Shared(ix) = &mut self.index {
            ids.extend(ix.prefetch(fps)?);
        }
        Ok(ids)
    }

    /// Leave out these fetched owners and candidates (entries no decision
    /// names).
    pub fn drop_candidates(&mut self, ids: &HashSet<PageId>) {
        if let ExactMaps::Shared(e) = &mut self.exact {
            e.drop_owners(ids);
        }
        if let NearIndex::Shared(ix) = &mut self.index {
            ix.drop_ids(ids);
        }
    }

    /// End a batch: write the owners and fingerprints it changed to the
    /// shared maps and tables.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if let ExactMaps::Shared(e) = &mut self.exact {
            e.flush()?;
        }
        match &mut self.index {
            NearIndex::Shared(ix) => ix.flush(),
            NearIndex::Local(_) => Ok(()),
        }
    }

    /// End a batch whose decisions do not reach the log: nothing written.
    pub fn discard(&mut self) {
        if let ExactMaps::Shared(e) = &mut self.exact {
            e.discard();
        }
        if let NearIndex::Shared(ix) = &mut self.index {
            ix.discard();
        }
    }

    /// A new page fingerprinted again (its host's template changed): index
    /// the new fingerprint under the same id (the old one stays: both name
    /// the page), and replace its sketch, or, without a new sketch, record
    /// the new fingerprint beside the one it has.
    pub fn reindex(&mut self, id: PageId, old: u64, simhash: u64, sketch: Option<Sketch>) -> std::io::Result<()> {
        self.resketch(id, simhash, sketch)?;
        if simhash != old {
            self.index.insert(simhash, id);
        }
        Ok(())
    }

    /// A re-fingerprinted page's new sketch and fingerprint, or, without a
    /// new sketch (comparisons leave out each page's template at the time,
    /// so the sketch taken stays: [`Deduper::cuts_templates`]), its new
    /// fingerprint beside the sketch it has.
    fn resketch(&mut self, id: PageId, simhash: u64, sketch: Option<Sketch>) -> std::io::Result<()> {
        match sketch {
            Some(sk) => self.sketches.update(id, sk, simhash),
            None => self.sketches.set_fingerprint(id, simhash),
        }
    }

    /// Whether sketch comparisons leave out the blocks of each page's
    /// template at the time ([`SketchIndex::cuts_templates`]).
    pub fn cuts_templates(&self) -> bool {
        self.sketches.cuts_templates()
    }

    /// The sketch index's spill file (for error messages; `sketches` when
    /// the sketches are in memory).
    pub fn sketch_path(&self) -> std::path::PathBuf {
        self.sketches
            .spill_path()
            .map_or_else(|| "sketches".into(), std::path::Path::to_path_buf)
    }

    /// Fingerprints in the near-duplicate index.
    pub fn index_len(&self) -> usize {
        self.index.len()
    }

    /// The near-duplicate index, to save at the end of a crawl (`None`:
    /// it is in the store).
    pub fn into_index(self) -> Option<LiveIndex> {
        match self.index {
            NearIndex::Local(ix) => Some(ix),
            NearIndex::Shared(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::ContentSketch;

    fn hashes(n: u8) -> ContentHashes {
        ContentHashes {
            body: [n; 32],
            text: [n; 32],
        }
    }

    fn deduper() -> Deduper {
        let s = crate::Settings::default();
        Deduper::new(
            ExactIndex::new(),
            LiveIndex::from_settings(&s.index, s.simhash.k),
            SketchIndex::new(),
            s.simhash.k,
            0.9,
        )
    }

    #[test]
    fn a_forgotten_page_is_decided_again_without_matching_itself() {
        let mut d = deduper();
        assert_eq!(
            d.decide(1, &hashes(1), 0b1111, None).unwrap().ruling.verdict,
            Verdict::New
        );
        // Page 1 revisited with near content: not a duplicate of itself.
        d.forget(1, Some(&[1; 32]), Some(&[1; 32])).unwrap();
        let got = d.decide(1, &hashes(2), 0b0111, None).unwrap().ruling;
        assert_eq!(got.verdict, Verdict::New);
        // Its old fingerprint and hashes no longer match; its new ones do.
        // (1 bit from the old fingerprint, 2 from the new: the new one counts.)
        let near = d.decide(2, &hashes(3), 0b1111 ^ (1 << 40), None).unwrap().ruling;
        assert_eq!((near.verdict, near.dup_of), (Verdict::NearDuplicate, Some(1)));
        assert_eq!(near.distance, Some(2));
        assert_eq!(d.decide(3, &hashes(1), !0, None).unwrap().ruling.verdict, Verdict::New);
        let exact = d.decide(4, &hashes(2), !0, None).unwrap().ruling;
        assert_eq!((exact.verdict, exact.dup_of), (Verdict::ExactDuplicate, Some(1)));
        // Revisited into a copy of another page: it matches that page, and
        // nothing matches it any more.
        d.forget(1, Some(&[2; 32]), Some(&[2; 32])).unwrap();
        let copy = d.decide(1, &hashes(1), !0, None).unwrap().ruling;
        assert_eq!((copy.verdict, copy.dup_of), (Verdict::ExactDuplicate, Some(3)));
        // (Within k of page 1's last fingerprint, 4 bits from page 2's.)
        let far = d
            .decide(5, &hashes(5), 0b0111 ^ (1 << 50) ^ (1 << 41), None)
            .unwrap()
            .ruling;
        assert_eq!(far.verdict, Verdict::New);
    }

    #[test]
    fn exact_then_near_then_new() {
        let mut d = deduper();
        assert_eq!(
            d.decide(1, &hashes(1), 0b1111, None).unwrap().ruling.verdict,
            Verdict::New
        );
        let exact = d.decide(2, &hashes(1), 0xffff_0000, None).unwrap().ruling;
        assert_eq!((exact.verdict, exact.dup_of), (Verdict::ExactDuplicate, Some(1)));
        let near = d.decide(3, &hashes(3), 0b0111, None).unwrap().ruling;
        assert_eq!(
            (near.verdict, near.dup_of, near.distance),
            (Verdict::NearDuplicate, Some(1), Some(1))
        );
        assert_eq!(
            d.decide(4, &hashes(4), !0b1111, None).unwrap().ruling.verdict,
            Verdict::New
        );
    }

    #[test]
    fn sketched_pages_need_resemblance_and_same_fingerprints_look_alike() {
        let mut d = deduper();
        let text = |base: u64| -> Sketch {
            let words: Vec<u64> = (0..60).map(|i| base + i).collect();
            Sketch::Content(ContentSketch::from_words(&words))
        };
        let a = text(1000);
        assert_eq!(
            d.decide(1, &hashes(1), 42, Some(&a)).unwrap().ruling.verdict,
            Verdict::New
        );
        // Same fingerprint, other content: new, and it looks like page 1.
        let b = text(5000);
        let got = d.decide(2, &hashes(2), 42, Some(&b)).unwrap();
        assert_eq!((got.ruling.verdict, got.looks_like), (Verdict::New, Some(1)));
        // The same content under another fingerprint is confirmed.
        let got = d.decide(3, &hashes(3), 42 ^ 0b11, Some(&a)).unwrap().ruling;
        assert_eq!((got.verdict, got.dup_of), (Verdict::NearDuplicate, Some(1)));
        assert_eq!(got.resemblance, Some(1.0));
    }

    /// A near duplicate is indexed too: a later copy of it that has drifted
    /// further from the first original is its near duplicate.
    #[test]
    fn a_copy_of_a_near_copy_is_its_near_duplicate() {
        let s = crate::Settings::default();
        let mut d = Deduper::new(
            ExactIndex::new(),
            LiveIndex::from_settings(&s.index, s.simhash.k),
            SketchIndex::new(),
            s.simhash.k,
            0.85,
        );
        // 100 words (96 shingles: the sketches are exact); each copy
        // changes one more word (5 shingles).
        let page = |changed: &[u64]| -> Sketch {
            let words: Vec<u64> = (0..100u64)
                .map(|i| if changed.contains(&i) { 10_000 + i } else { i })
                .collect();
            Sketch::Content(ContentSketch::from_words(&words))
        };
        let (a, b, c) = (page(&[]), page(&[30]), page(&[30, 70]));
        assert!(a.resemblance(&b) >= 0.85 && b.resemblance(&c) >= 0.85 && a.resemblance(&c) < 0.85);
        assert_eq!(
            d.decide(1, &hashes(1), 7, Some(&a)).unwrap().ruling.verdict,
            Verdict::New
        );
        let got = d.decide(2, &hashes(2), 7, Some(&b)).unwrap().ruling;
        assert_eq!((got.verdict, got.dup_of), (Verdict::NearDuplicate, Some(1)));
        let got = d.decide(3, &hashes(3), 7, Some(&c)).unwrap().ruling;
        assert_eq!((got.verdict, got.dup_of), (Verdict::NearDuplicate, Some(2)));
    }
}
