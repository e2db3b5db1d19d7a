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

use crate::sketch::mix64;

/// Shingle hashes kept per sketch.
pub const SKETCH_SIZE: usize = 128;

/// Words per shingle.
pub const SHINGLE_WORDS: usize = 5;

/// Smallest hashes a page is filed under for candidate search.
pub const BAND_KEYS: usize = 4;

/// A bottom-k sketch of a page's content shingles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentSketch {
    /// The smallest distinct shingle hashes, ascending (at most [`SKETCH_SIZE`]).
    mins: Vec<u32>,
    /// Distinct shingles in the whole set (saturating at `u32::MAX`).
    shingles: u32,
}

impl ContentSketch {
    /// The sketch of the w-shingles ([`SHINGLE_WORDS`]) of a word-key
    /// sequence: every run of w consecutive words, or, for fewer than w
    /// words, one shingle of all of them; no words, no shingles.
    pub fn from_words(words: &[u64]) -> Self {
        let w = SHINGLE_WORDS;
        if words.is_empty() {
            return ContentSketch::default();
        }
        let hash_run = |run: &[u64]| -> u32 {
            let h = run.iter().fold(0x243f_6a88_85a3_08d3u64, |h, &k| {
                mix64(h ^ k).wrapping_add(0x9e37_79b9_7f4a_7c15)
            });
            (mix64(h) >> 32) as u32
        };
        let mut all: Vec<u32> = if words.len() < w {
            vec![hash_run(words)]
        } else {
            words.windows(w).map(hash_run).collect()
        };
        all.sort_unstable();
        all.dedup();
        let shingles = u32::try_from(all.len()).unwrap_or(u32::MAX);
        all.truncate(SKETCH_SIZE);
        all.shrink_to_fit();
        ContentSketch { mins: all, shingles }
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
        Some(ContentSketch { mins, shingles })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn words(n: usize, seed: u64) -> Vec<u64> {
        (0..n as u64).map(|i| mix64(i ^ (seed << 40))).collect()
    }

    fn exact(a: &[u64], b: &[u64]) -> f64 {
        let sh = |w: &[u64]| -> HashSet<Vec<u64>> {
            if w.len() < SHINGLE_WORDS {
                return [w.to_vec()].into_iter().collect();
            }
            w.windows(SHINGLE_WORDS).map(<[u64]>::to_vec).collect()
        };
        let (x, y) = (sh(a), sh(b));
        x.intersection(&y).count() as f64 / x.union(&y).count() as f64
    }

    #[test]
    fn short_pages_compare_exactly() {
        let a = words(60, 1);
        let mut b = a.clone();
        b[30] = 7; // one word changed: 5 shingles of 56 differ
        let (sa, sb) = (ContentSketch::from_words(&a), ContentSketch::from_words(&b));
        assert!(sa.is_exact() && sb.is_exact());
        assert_eq!(sa.resemblance(&sb), exact(&a, &b));
        assert_eq!(sa.resemblance(&sa), 1.0);
    }

    #[test]
    fn long_pages_are_estimated_within_a_few_standard_errors() {
        let a = words(3000, 2);
        for changed in [30usize, 150, 300, 900] {
            let mut b = a.clone();
            for i in 0..changed {
                b[i * (3000 / changed)] ^= 0xdead;
            }
            let r = exact(&a, &b);
            let est = ContentSketch::from_words(&a).resemblance(&ContentSketch::from_words(&b));
            let se = (r * (1.0 - r) / SKETCH_SIZE as f64).sqrt().max(0.01);
            assert!(
                (est - r).abs() < 4.0 * se,
                "changed {changed}: exact {r:.3}, estimate {est:.3}"
            );
        }
    }

    #[test]
    fn a_short_page_inside_a_long_one_is_not_a_copy() {
        let long = words(2000, 3);
        let short = long[..100].to_vec();
        let r = ContentSketch::from_words(&short).resemblance(&ContentSketch::from_words(&long));
        assert!(r <= 96.0 / 1996.0 + 1e-9, "{r}");
    }

    #[test]
    fn empty_content_confirms_nothing() {
        let e = ContentSketch::from_words(&[]);
        assert_eq!(e.resemblance(&e), 0.0);
        assert_eq!(e.resemblance(&ContentSketch::from_words(&[1, 2])), 0.0);
        let one = ContentSketch::from_words(&[1, 2, 3]);
        assert_eq!(one.shingles(), 1);
        assert_eq!(one.resemblance(&one), 1.0);
    }

    #[test]
    fn bytes_round_trip_and_reject_garbage() {
        let s = ContentSketch::from_words(&words(500, 4));
        assert_eq!(ContentSketch::from_bytes(&s.to_bytes()), Some(s));
        assert_eq!(ContentSketch::from_bytes(&[1, 2, 3]), None);
        // Not ascending.
        let mut bad = 2u32.to_le_bytes().to_vec();
        bad.extend_from_slice(&9u32.to_le_bytes());
        bad.extend_from_slice(&3u32.to_le_bytes());
        assert_eq!(ContentSketch::from_bytes(&bad), None);
    }

    proptest::proptest! {
        /// Sketches of short word sequences give the exact resemblance.
        #[test]
        fn exact_below_the_sketch_size(
            a in proptest::collection::vec(0u64..6, 0..60),
            b in proptest::collection::vec(0u64..6, 0..60),
        ) {
            let (sa, sb) = (ContentSketch::from_words(&a), ContentSketch::from_words(&b));
            if !a.is_empty() && !b.is_empty() {
                // 32-bit shingle hashes of at most 120 shingles: no collision expected.
                let r = exact(&a, &b);
                proptest::prop_assert!((sa.resemblance(&sb) - r).abs() < 1e-12, "{} vs {}", sa.resemblance(&sb), r);
            }
        }
    }
}
