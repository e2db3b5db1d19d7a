//! Content sketches (pipeline: computed beside the simhash in analysis,
//! compared in the dedup decision): a bottom-k sample of the word
//! w-shingles of a page's *content* — the blocks its fingerprint weighs (no
//! structural boilerplate, no blocks of the host's learned template), without
//! the title and, on a page that is not mostly links, without link lists —
//! used to confirm a candidate before a page is called a near duplicate.
//!
//! # Why bottom-k
//!
//! A simhash of a short page rests on a few dozen features, and pages of one
//! generated template (one page per function, option or error code) collide
//! within k bits although their texts differ. Resemblance of shingle sets
//! (Broder) tells them apart, and a bottom-k sketch estimates it with one
//! hash per shingle (a min-hash sketch needs one per shingle *and* per
//! permutation):
//!
//! * The sketch of a set S is the [`SKETCH_SIZE`] smallest 32-bit shingle
//!   hashes of S, sorted, and |S|.
//! * The bottom-k of A ∪ B is the bottom-k of (sketch(A) ∪ sketch(B)); the
//!   share of it found in both sketches estimates r(A, B) = |A ∩ B| / |A ∪ B|
//!   without bias, with a standard error of about √(r(1 − r)/k).
//! * A set of at most [`SKETCH_SIZE`] shingles is its own sketch, so for two
//!   short pages the estimate *is* the exact resemblance: the pages where
//!   simhash alone is weakest get an exact check at no extra cost.
//! * r(A, B) ≤ min(|A|, |B|) / max(|A|, |B|) bounds the estimate, so a short
//!   page is never confirmed against a long one that merely contains it.
//!
//! Shingle hashes come from the case-folded word keys the feature pass
//! computes anyway ([`crate::features::Features::words`]), stop words and
//! numbers kept, not stemmed, so the shingles see the text as written, in
//! any language.
//!
//! # Blocks of a template learned later
//!
//! Templates are learned as the crawl goes: a page sketched before its
//! site's template settled keeps shingles of blocks that are template
//! blocks by the time its copy arrives, and two sections of one site (two
//! languages, `alloc/` and `std/` of one API reference) leave out different
//! repeated blocks. So each kept shingle knows the blocks its words are in
//! ([`ContentSketch::from_blocks`]), and a comparison can leave out the
//! shingles of the blocks in either page's template *now*
//! ([`ContentSketch::resemblance_without`]). What is left of a sketch is
//! still the bottom of its page's reduced set up to the sketch's largest
//! hash, so the union of the two below the smaller such bound is a bottom-k
//! sample of the union of the reduced sets. A sketch is taken without the
//! page's template of its time, so its sample of the text outside the
//! template of a later time is not diluted by the chrome it already left
//! out.
//!
//! A template also loses blocks: one repeated on about
//! `template_min_fraction` of a site's pages (a "Parameters" or "Examples"
//! heading, a "Run" link) comes and goes as the crawl goes. Its words are
//! gone from a page sketched while it was template, and a copy sketched
//! after has them. So a sketch also names the blocks its template left out
//! ([`ContentSketch::with_left_out`]), each an empty run where its words
//! were ([`ContentSketch::from_blocks`]): a comparison leaves such a block
//! out of the other page too, and, when the other page has its words, the
//! shingles across its gap on the first; both pages are compared on the
//! same text.

use crate::sketch::mix64;

/// Shingle hashes kept per sketch. Near the confirmation threshold
/// (r ≈ 0.85) the estimate's standard error is about 0.022 at 256 (0.032 at
/// 128), small beside the gap between copies (J ≥ 0.9) and the distinct
/// pages of one template just below them; exact on pages of up to 256
/// shingles (about 260 words of content). A crawl keeps the sketches in
/// its sketch file (`DIR/index/sketches.bin`), not in memory.
pub const SKETCH_SIZE: usize = 256;

/// Words per shingle.
pub const SHINGLE_WORDS: usize = 5;

/// Smallest hashes a page is filed under for candidate search.
pub const BAND_KEYS: usize = 4;

/// What [`ContentSketch::reduced_resemblance`] found.
enum Reduced {
    /// The estimate without the cut blocks.
    Estimate(f64),
    /// Nothing is cut: the sketches compare as taken.
    AsTaken,
    /// Something is cut, and too little is left to compare (or a sketch
    /// is untagged).
    TooFew,
    /// Below the floor asked for, whichever of the above it would be.
    Below,
}

/// One page's side of comparisons without cut blocks, kept while the page
/// is compared with several others under the same cut
/// ([`ContentSketch::resemblance_without_memo`]): which of its shingles the
/// cut leaves, and their hashes. It is filled by the first comparison in
/// which neither page left a block out (the page's side then depends on the
/// cut alone) and read by the next such ones.
#[derive(Debug, Default)]
pub struct SideMemo(Option<Side>);

#[derive(Debug)]
struct Side {
    kept: Vec<bool>,
    mins: Vec<u32>,
}

/// A bottom-k sketch of a page's content shingles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentSketch {
    /// The smallest distinct shingle hashes, ascending (at most [`SKETCH_SIZE`]).
    mins: Vec<u32>,
    /// Distinct shingles in the whole set (saturating at `u32::MAX`).
    shingles: u32,
    /// The text blocks each kept shingle comes from, when known
    /// ([`ContentSketch::from_blocks`]).
    origin: Option<Box<Origin>>,
}

/// Where the kept shingles of a sketch come from: the page's template key
/// and, per shingle, the blocks its words are in, so that a comparison can
/// leave out the shingles of blocks that are template blocks now
/// ([`ContentSketch::resemblance_without`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Origin {
    /// The page's [`crate::features::template_key`].
    key: Box<str>,
    /// The distinct block hashes ([`crate::features::block_hash`]) named below.
    blocks: Vec<u64>,
    /// Per kept shingle, where its block indices end in `of` (ascending).
    ends: Vec<u16>,
    /// Indices into `blocks`, shingle after shingle.
    of: Vec<u16>,
    /// The blocks of the page that its template of the sketch's time left
    /// out ([`crate::features::Features::cut_blocks`]), sorted: a block
    /// that was template then and is not now has no shingles here, so a
    /// comparison leaves it out of the other page too.
    left_out: Vec<u64>,
    /// `blocks` without `left_out`, sorted: the blocks whose words the kept
    /// shingles hold (derived from the fields above when they are set, as
    /// every comparison with a page that left blocks out consults it).
    real: Vec<u64>,
}

/// An estimate from fewer shared-or-not samples than this, after template
/// blocks are left out, is not trusted: the comparison falls back to the
/// sketches as taken.
const MIN_SAMPLE: usize = 16;

/// How many values two ascending, duplicate-free lists share.
fn shared_count(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        n += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    n
}

impl Origin {
    /// The blocks whose words the kept shingles hold (not the gaps of
    /// blocks left out), sorted: what [`Origin::real`] holds.
    fn real_blocks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .blocks
            .iter()
            .copied()
            .filter(|b| self.left_out.binary_search(b).is_err())
            .collect();
        v.sort_unstable();
        v
    }

    /// Per kept shingle: whether none of its blocks is `cut`.
    fn kept(&self, cut: &dyn Fn(u64) -> bool) -> Vec<bool> {
        let gone: Vec<bool> = self.blocks.iter().map(|&b| cut(b)).collect();
        let mut start = 0usize;
        self.ends
            .iter()
            .map(|&end| {
                let end = usize::from(end);
                let keep = self
                    .of
                    .get(start..end)
                    .is_some_and(|ix| ix.iter().all(|&i| !gone.get(usize::from(i)).copied().unwrap_or(true)));
                start = end;
                keep
            })
            .collect()
    }
}

impl ContentSketch {
    /// The sketch of the w-shingles ([`SHINGLE_WORDS`]) of a word-key
    /// sequence: every run of w consecutive words, or, for fewer than w
    /// words, one shingle of all of them; no words, no shingles.
    pub fn from_words(words: &[u64]) -> Self {
        Self::hashed(words).0
    }

    /// The sketch and the shingle hashes in text order (shingle `i` starts
    /// at word `i`).
    fn hashed(words: &[u64]) -> (Self, Vec<u32>) {
        let w = SHINGLE_WORDS;
        if words.is_empty() {
            return (ContentSketch::default(), Vec::new());
        }
        let hash_run = |run: &[u64]| -> u32 {
            let h = run.iter().fold(0x243f_6a88_85a3_08d3u64, |h, &k| {
                mix64(h ^ k).wrapping_add(0x9e37_79b9_7f4a_7c15)
            });
            (mix64(h) >> 32) as u32
        };
        let in_order: Vec<u32> = if words.len() < w {
            vec![hash_run(words)]
        } else {
            words.windows(w).map(hash_run).collect()
        };
        let mut all = Vec::new();
        crate::hashsort::sorted_by_key(&in_order, &mut all, |&h| u64::from(h) << 32);
        all.dedup();
        let shingles = u32::try_from(all.len()).unwrap_or(u32::MAX);
        all.truncate(SKETCH_SIZE);
        all.shrink_to_fit();
        (
            ContentSketch {
                mins: all,
                shingles,
                origin: None,
            },
            in_order,
        )
    }

    /// [`ContentSketch::from_words`] of the words of a page's content
    /// blocks, each kept shingle tagged with the blocks it comes from:
    /// `runs` holds, per run of words from one block, where the run ends
    /// in `words` and the block's hash (ascending ends, the last one
    /// `words.len()`; an empty run is a block left out between its
    /// neighbours, and a shingle across it goes with it too); `key` is the
    /// page's template key. A shingle found at several places is tagged
    /// with its first. Without runs the sketch is untagged (its comparisons
    /// leave nothing out).
    pub fn from_blocks(words: &[u64], runs: &[(u32, u64)], key: &str) -> Self {
        let (mut sketch, in_order) = Self::hashed(words);
        let consistent = runs.last().is_some_and(|r| r.0 as usize == words.len())
            && runs.windows(2).all(|r| r[0].0 <= r[1].0)
            && runs.len() <= usize::from(u16::MAX);
        if sketch.mins.is_empty() || !consistent {
            return sketch;
        }
        let Some(&max) = sketch.mins.last() else {
            return sketch;
        };
        // The first place of each kept shingle.
        let mut first = vec![u32::MAX; sketch.mins.len()];
        for (i, &h) in in_order.iter().enumerate() {
            if h > max {
                continue;
            }
            if let Ok(j) = sketch.mins.binary_search(&h) {
                if first[j] == u32::MAX {
                    first[j] = i as u32;
                }
            }
        }
        let run_of = |word: usize| runs.partition_point(|r| (r.0 as usize) <= word);
        let span = SHINGLE_WORDS.min(words.len());
        let mut origin = Origin {
            key: key.into(),
            ..Origin::default()
        };
        let mut index: hashbrown::HashMap<u64, u16> = hashbrown::HashMap::new();
        for &start in &first {
            let start = start as usize;
            for run in run_of(start)..=run_of(start + span - 1) {
                let Some(&(_, block)) = runs.get(run) else { continue };
                let next = origin.blocks.len();
                let ix = *index.entry(block).or_insert_with(|| {
                    origin.blocks.push(block);
                    next as u16
                });
                if origin.of.last() != Some(&ix) || origin.ends.last().copied().unwrap_or(0) as usize == origin.of.len()
                {
                    origin.of.push(ix);
                }
            }
            origin.ends.push(origin.of.len() as u16);
        }
        origin.real = origin.real_blocks();
        sketch.origin = Some(Box::new(origin));
        sketch
    }

    /// The sketch with the blocks its page's template left out of the
    /// words it was taken from ([`crate::features::Features::cut_blocks`]):
    /// a comparison leaves them out of the other page as well
    /// ([`ContentSketch::resemblance_without`]). Only a tagged sketch keeps
    /// them.
    pub fn with_left_out(mut self, blocks: &[u64]) -> Self {
        if let Some(o) = self.origin.as_deref_mut() {
            let mut b = blocks.to_vec();
            b.sort_unstable();
            b.dedup();
            b.truncate(usize::from(u16::MAX));
            o.left_out = b;
            o.real = o.real_blocks();
        }
        self
    }

    /// The template key of the page, when the sketch is tagged.
    pub fn template_key(&self) -> Option<&str> {
        self.origin.as_deref().map(|o| &*o.key)
    }

    /// Distinct shingles of the page's content.
    pub fn shingles(&self) -> u32 {
        self.shingles
    }

    /// Whether the sketch holds the whole shingle set (so comparisons with
    /// another exact sketch are exact).
    pub fn is_exact(&self) -> bool {
        self.shingles as usize <= self.mins.len()
    }

    /// Estimated resemblance of the two shingle sets (exact when both
    /// sketches are), never above the size bound min/max. Two empty sets
    /// have resemblance 0 here: no content, no evidence of a copy.
    pub fn resemblance(&self, other: &ContentSketch) -> f64 {
        if self.mins.is_empty() || other.mins.is_empty() {
            return 0.0;
        }
        let (a, b) = (&self.mins, &other.mins);
        // Walk the union in order, its first SKETCH_SIZE values: those in
        // both sketches are the shared ones of the union's bottom-k.
        let (mut i, mut j, mut taken, mut shared) = (0, 0, 0usize, 0usize);
        while taken < SKETCH_SIZE && (i < a.len() || j < b.len()) {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x == y => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x < y => i += 1,
                (Some(_), Some(_)) => j += 1,
                (Some(_), None) => i += 1,
                (None, _) => j += 1,
            }
            taken += 1;
        }
        // An inexact sketch holds SKETCH_SIZE values, so the walk never
        // runs past its end; an exact one holds its whole set.
        let estimate = shared as f64 / taken as f64;
        let (small, large) = (
            self.shingles.min(other.shingles) as f64,
            self.shingles.max(other.shingles) as f64,
        );
        estimate.min(small / large)
    }

    /// [`ContentSketch::resemblance`] of the two pages' text outside the
    /// blocks `cut` names (the blocks of either page's template now) and
    /// the blocks either page's template left out when it was sketched
    /// ([`ContentSketch::with_left_out`]): the kept shingles of such blocks
    /// are left out of both sketches, and the shingles across the gap of a
    /// block one page left out go from that page when the other has the
    /// block's words (a gap both pages have is compared as it is). What
    /// is left of each sketch is the bottom of its page's reduced shingle
    /// set up to the sketch's largest hash (all of it for an exact
    /// sketch), so the union of the two below the smaller of those bounds,
    /// its first [`SKETCH_SIZE`], is a bottom-k sample of the union of the
    /// reduced sets, and the share found in both estimates their
    /// resemblance. The size bound min/max applies when both reduced sizes
    /// are known (an exact sketch, or nothing of it cut). When nothing is left
    /// out, when either page keeps no shingle, when either sketch is
    /// untagged, or when fewer than `MIN_SAMPLE` (16) samples remain of an
    /// estimate, the sketches are compared as taken.
    pub fn resemblance_without(&self, other: &ContentSketch, cut: &dyn Fn(u64) -> bool) -> f64 {
        // A floor of 0 passes nothing over: the answer is always there.
        self.or_as_taken(other, self.reduced_resemblance(other, cut, None, 0.0))
            .unwrap_or(0.0)
    }

    /// [`ContentSketch::resemblance_without`], with this page's side of the
    /// comparison kept in `memo` for the next comparison under the same
    /// `cut`, or None when it is below `floor`. The caller passes one memo
    /// per cut: a memo filled under one cut and read under another gives a
    /// wrong answer.
    ///
    /// With this page's side at hand, the other page's shingles need not
    /// be sorted out block by block when the comparison cannot reach
    /// `floor`: leaving shingles out of the other page adds none to those
    /// it shares with this page's side, and an estimate takes every value
    /// of this side below the sketches' common bound, and at least
    /// `MIN_SAMPLE` samples unless both sketches are exact (else the
    /// sketches compare as taken). So a comparison is at most the larger of
    /// the sketches' resemblance as taken and the other sketch's minimums
    /// among those values of this side over their number (at least
    /// `MIN_SAMPLE`); below `floor`, the answer is None without the rest.
    pub fn resemblance_without_memo(
        &self,
        other: &ContentSketch,
        cut: &dyn Fn(u64) -> bool,
        memo: &mut SideMemo,
        floor: f64,
    ) -> Option<f64> {
        self.or_as_taken(other, self.reduced_resemblance(other, cut, Some(memo), floor))
    }

    /// [`ContentSketch::resemblance_without`], or None where it would fall
    /// back to the sketches as taken although something is cut (either
    /// page keeps no shingle, an untagged sketch, fewer than `MIN_SAMPLE`
    /// samples left): the pages cannot be compared without the cut blocks.
    pub fn resemblance_without_only(&self, other: &ContentSketch, cut: &dyn Fn(u64) -> bool) -> Option<f64> {
        self.or_none(other, self.reduced_resemblance(other, cut, None, 0.0))
    }

    /// [`ContentSketch::resemblance_without_only`] with a memo of this
    /// page's side, as [`ContentSketch::resemblance_without_memo`]: None
    /// also when it is below `floor`.
    pub fn resemblance_without_only_memo(
        &self,
        other: &ContentSketch,
        cut: &dyn Fn(u64) -> bool,
        memo: &mut SideMemo,
        floor: f64,
    ) -> Option<f64> {
        self.or_none(other, self.reduced_resemblance(other, cut, Some(memo), floor))
    }

    /// The estimate, else the sketches compared as taken (None: below the floor).
    fn or_as_taken(&self, other: &ContentSketch, r: Reduced) -> Option<f64> {
        match r {
            Reduced::Estimate(r) => Some(r),
            Reduced::AsTaken | Reduced::TooFew => Some(self.resemblance(other)),
            Reduced::Below => None,
        }
    }

    /// The estimate, the sketches as taken when nothing is cut, else None.
    fn or_none(&self, other: &ContentSketch, r: Reduced) -> Option<f64> {
        match r {
            Reduced::Estimate(r) => Some(r),
            Reduced::AsTaken => Some(self.resemblance(other)),
            Reduced::TooFew | Reduced::Below => None,
        }
    }

    fn reduced_resemblance(
        &self,
        other: &ContentSketch,
        cut: &dyn Fn(u64) -> bool,
        memo: Option<&mut SideMemo>,
        floor: f64,
    ) -> Reduced {
        let (Some(oa), Some(ob)) = (self.origin.as_deref(), other.origin.as_deref()) else {
            return Reduced::TooFew;
        };
        // Also the blocks either page's template left out when its sketch
        // was taken, so both pages are compared on the same text: a block
        // one page left out goes from the other's shingles, and the
        // shingles across its gap on the first page go too when the other
        // page has its words (when neither has them, both pages have the
        // same shingles across the gap).
        let (real_a, real_b) = (&oa.real, &ob.real);
        let cut_a = |h: u64| match oa.left_out.binary_search(&h) {
            Ok(_) => real_b.binary_search(&h).is_ok(),
            Err(_) => cut(h) || ob.left_out.binary_search(&h).is_ok(),
        };
        let cut_b = |h: u64| match ob.left_out.binary_search(&h) {
            Ok(_) => real_a.binary_search(&h).is_ok(),
            Err(_) => cut(h) || oa.left_out.binary_search(&h).is_ok(),
        };
        // With no block left out by either page, this page's side is its
        // shingles outside `cut`, whatever the other page.
        let fresh;
        let side = match memo {
            Some(memo) if oa.left_out.is_empty() && ob.left_out.is_empty() => {
                memo.0.get_or_insert_with(|| self.side(oa, cut))
            }
            _ => {
                fresh = self.side(oa, &cut_a);
                &fresh
            }
        };
        let bound = |s: &ContentSketch| -> u64 {
            match s.mins.last() {
                Some(&m) if !s.is_exact() => u64::from(m),
                _ => u64::MAX,
            }
        };
        let tau = bound(self).min(bound(other));
        let below = |v: &[u32]| v.partition_point(|&x| u64::from(x) <= tau);
        if floor > 0.0 {
            // An estimate takes every value of this side below `tau` (up
            // to SKETCH_SIZE, which a side never passes), at least
            // MIN_SAMPLE unless both sketches are exact, and shares only
            // values of the other sketch: at most the shared ones over
            // that; else the sketches compare as taken.
            let mine = &side.mins[..below(&side.mins)];
            let shared = shared_count(mine, &other.mins);
            let least = if self.is_exact() && other.is_exact() {
                1
            } else {
                MIN_SAMPLE
            };
            let most = shared as f64 / mine.len().max(least).max(shared).max(1) as f64;
            if most < floor && self.resemblance(other) < floor {
                return Reduced::Below;
            }
        }
        let other_side = other.side(ob, &cut_b);
        let (ka, kb) = (&side.kept, &other_side.kept);
        let (na, nb) = (side.mins.len(), other_side.mins.len());
        if na == ka.len() && nb == kb.len() {
            return Reduced::AsTaken;
        }
        if na == 0 || nb == 0 {
            return Reduced::TooFew;
        }
        let (a, b) = (&side.mins, &other_side.mins);
        let (a, b) = (&a[..below(a)], &b[..below(b)]);
        let (mut i, mut j, mut taken, mut shared) = (0, 0, 0usize, 0usize);
        while taken < SKETCH_SIZE && (i < a.len() || j < b.len()) {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x == y => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x < y => i += 1,
                (Some(_), Some(_)) => j += 1,
                (Some(_), None) => i += 1,
                (None, _) => j += 1,
            }
            taken += 1;
        }
        let exact = self.is_exact() && other.is_exact();
        if taken == 0 || (taken < MIN_SAMPLE && !exact) {
            return Reduced::TooFew;
        }
        // Reduced sizes where they are known: an exact sketch's kept
        // shingles, an inexact one's whole set when nothing of it is cut.
        // (A share of an inexact sketch would scale its size with a
        // sampling error of several percent: no bound then.)
        let size = |s: &ContentSketch, kept: usize, of: usize| -> Option<f64> {
            if s.is_exact() {
                Some(kept as f64)
            } else {
                (kept == of).then_some(f64::from(s.shingles))
            }
        };
        let estimate = shared as f64 / taken as f64;
        Reduced::Estimate(match (size(self, na, ka.len()), size(other, nb, kb.len())) {
            (Some(sa), Some(sb)) => estimate.min(sa.min(sb) / sa.max(sb)),
            _ => estimate,
        })
    }

    /// Which of the sketch's shingles `cut` leaves (per shingle of `o`,
    /// this sketch's origin), and their hashes.
    fn side(&self, o: &Origin, cut: &dyn Fn(u64) -> bool) -> Side {
        let kept = o.kept(cut);
        let mins = self.mins.iter().zip(&kept).filter(|p| *p.1).map(|p| *p.0).collect();
        Side { kept, mins }
    }

    /// The smallest hashes of the sketch, ascending, that come from no
    /// block `cut` names (all of them for an untagged sketch), at most `n`:
    /// the keys a page may be filed and looked up under.
    pub fn key_candidates(&self, cut: &dyn Fn(u64) -> bool, n: usize) -> Vec<u32> {
        match self.origin.as_deref() {
            Some(o) => self
                .mins
                .iter()
                .zip(o.kept(&|h| o.left_out.binary_search(&h).is_err() && cut(h)))
                .filter(|p| p.1)
                .map(|p| *p.0)
                .take(n)
                .collect(),
            None => self.mins.iter().copied().take(n).collect(),
        }
    }

    /// The keys a page is filed under for candidate search: its
    /// [`BAND_KEYS`] smallest shingle hashes. Two pages of resemblance r
    /// share the smallest with probability r, and some of the first few
    /// almost surely when r is high.
    pub fn band_keys(&self) -> &[u32] {
        &self.mins[..self.mins.len().min(BAND_KEYS)]
    }

    /// The sketch as bytes: shingle count then the hashes, little-endian u32s.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 4 * self.mins.len());
        out.extend_from_slice(&self.shingles.to_le_bytes());
        for m in &self.mins {
            out.extend_from_slice(&m.to_le_bytes());
        }
        out
    }

    /// Whether the kept shingles are tagged with their blocks.
    pub fn is_tagged(&self) -> bool {
        self.origin.is_some()
    }

    /// The sketch with its tags as bytes ([`ContentSketch::to_bytes`] of an
    /// untagged sketch has none): the length of the untagged encoding
    /// (u32), that encoding, the template key (u16 length, UTF-8), the
    /// block hashes (u16 count, u64s), per kept shingle where its block
    /// indices end (u16s), the indices (u16s), and, when there are any,
    /// the blocks the page's template left out (u16 count, u64s);
    /// little-endian.
    pub fn to_tagged_bytes(&self) -> Vec<u8> {
        let core = self.to_bytes();
        let mut out = Vec::with_capacity(core.len() + 64);
        out.extend_from_slice(&(core.len() as u32).to_le_bytes());
        out.extend_from_slice(&core);
        if let Some(o) = self.origin.as_deref() {
            let key = o.key.as_bytes();
            let key = &key[..key.len().min(usize::from(u16::MAX))];
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key);
            out.extend_from_slice(&(o.blocks.len() as u16).to_le_bytes());
            for b in &o.blocks {
                out.extend_from_slice(&b.to_le_bytes());
            }
            for v in o.ends.iter().chain(&o.of) {
                out.extend_from_slice(&v.to_le_bytes());
            }
            if !o.left_out.is_empty() {
                out.extend_from_slice(&(o.left_out.len() as u16).to_le_bytes());
                for b in &o.left_out {
                    out.extend_from_slice(&b.to_le_bytes());
                }
            }
        }
        out
    }

    /// A sketch from [`ContentSketch::to_tagged_bytes`]; None when malformed.
    pub fn from_tagged_bytes(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader(bytes);
        let core_len = r.u32()? as usize;
        let mut sketch = ContentSketch::from_bytes(r.take(core_len)?)?;
        if r.0.is_empty() {
            return Some(sketch);
        }
        let key_len = usize::from(r.u16()?);
        let key = std::str::from_utf8(r.take(key_len)?).ok()?;
        let n_blocks = usize::from(r.u16()?);
        let blocks = (0..n_blocks).map(|_| r.u64()).collect::<Option<Vec<u64>>>()?;
        let ends = (0..sketch.mins.len()).map(|_| r.u16()).collect::<Option<Vec<u16>>>()?;
        if !ends.windows(2).all(|w| w[0] <= w[1]) {
            return None;
        }
        let n_of = usize::from(ends.last().copied().unwrap_or(0));
        let of = (0..n_of).map(|_| r.u16()).collect::<Option<Vec<u16>>>()?;
        let left_out = if r.0.is_empty() {
            Vec::new()
        } else {
            let n = usize::from(r.u16()?);
            (0..n).map(|_| r.u64()).collect::<Option<Vec<u64>>>()?
        };
        if !r.0.is_empty()
            || of.iter().any(|&i| usize::from(i) >= blocks.len())
            || !left_out.windows(2).all(|w| w[0] < w[1])
        {
            return None;
        }
        let mut origin = Origin {
            key: key.into(),
            blocks,
            ends,
            of,
            left_out,
            real: Vec::new(),
        };
        origin.real = origin.real_blocks();
        sketch.origin = Some(Box::new(origin));
        Some(sketch)
    }

    /// A sketch from [`ContentSketch::to_bytes`]; None when malformed.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < 4 || !bytes.len().is_multiple_of(4) || bytes.len() > 4 * (SKETCH_SIZE + 1) {
            return None;
        }
        let mut words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let shingles = words.next()?;
        let mins: Vec<u32> = words.collect();
        if !mins.windows(2).all(|w| w[0] < w[1]) || (mins.len() as u64) > u64::from(shingles) {
            return None;
        }
        Some(ContentSketch {
            mins,
            shingles,
            origin: None,
        })
    }
}

/// Little-endian fields read off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
