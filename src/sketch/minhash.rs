//! Broder's min-hash sketches and super-shingle features (Broder, "Identifying
//! and filtering near-duplicate documents", §2–§3). Beside the pipeline: used
//! by `simcrawl near --method minhash`, by `simcrawl eval`, and by the crawl's
//! optional verification of simhash candidates (`[dedup] verify = "minhash"`).
//!
//! A page's canonical tokens become a set of w-shingle fingerprints
//! ([`super::shingles`]). k·s pseudo-random permutations π_i of the 64-bit
//! space are applied to the set and each minimum is kept: the
//! [`MinHashSketch`]. Since Pr[min π(S_A) = min π(S_B)] = r(A, B) for a
//! min-wise independent family (eq. 1), the fraction of equal minima
//! estimates the resemblance. The sketch is then cut into k groups of s
//! minima and each group (with its group number) is fingerprinted into one
//! *super-shingle* feature ([`SuperShingles`]); two pages sharing at least r
//! features are near duplicates with probability P_{k,s,r}(ρ)
//! ([`acceptance_probability`]), a sharp high-pass filter: for the default
//! 6 × 14 with r = 2, P(0.909) = 1/2. A [`FeatureIndex`] from feature to page
//! finds candidate pairs without comparing all pairs.
//!
//! The permutations are π_i(x) = mix64(a_i·x + b_i) with a_i odd: an affine
//! bijection of Z/2^64 (a "random linear transformation", which Broder et al.
//! show suffices in practice) followed by the SplitMix64 finalizer, also a
//! bijection, to spread the low-order structure. a_i and b_i come from fixed
//! seeds, so sketches are comparable across runs and machines.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{mix64, shingles};
use crate::config::SketchSettings;

/// Seed of the permutation family. Changing it invalidates stored sketches.
const PERMUTATION_SEED: u64 = 0x5eed_b40d_e419_9700;
/// Seed of the super-shingle fingerprint (a different function from the
/// shingle hash, as Broder asks: "a different irreducible polynomial").
const FEATURE_SEED: u64 = 0x0fea_7e5b_0de2_2000;

/// Computes min-hash sketches and super-shingle features with fixed
/// parameters: w words per shingle, k super-shingles of s min-hashes each,
/// accepted at r shared features.
#[derive(Debug, Clone)]
pub struct MinHasher {
    shingle_words: usize,
    groups: usize,
    group_size: usize,
    matches: usize,
    /// (a_i, b_i) of π_i, a_i odd; k·s of them.
    perms: Vec<(u64, u64)>,
}

impl MinHasher {
    /// A hasher for w-word shingles, `groups` (k) super-shingles of
    /// `group_size` (s) min-hashes, near duplicate at `matches` (r) shared
    /// features. Zero values are raised to 1; r is capped at k.
    pub fn new(shingle_words: usize, groups: usize, group_size: usize, matches: usize) -> Self {
        let groups = groups.max(1);
        let group_size = group_size.max(1);
        let perms = (0..(groups * group_size) as u64)
            .map(|i| {
                let a = mix64(PERMUTATION_SEED.wrapping_add(2 * i)) | 1;
                let b = mix64(PERMUTATION_SEED.wrapping_add(2 * i + 1));
                (a, b)
            })
            .collect();
        MinHasher {
            shingle_words: shingle_words.max(1),
            groups,
            group_size,
            matches: matches.clamp(1, groups),
            perms,
        }
    }

    /// The hasher configured by `[sketch]`.
    pub fn from_settings(s: &SketchSettings) -> Self {
        MinHasher::new(
            s.shingle_words,
            s.supershingles,
            s.supershingle_size,
            s.supershingle_matches,
        )
    }

    /// Words per shingle (w).
    pub fn shingle_words(&self) -> usize {
        self.shingle_words
    }

    /// Number of super-shingle features per page (k).
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Min-hashes per super-shingle (s).
    pub fn group_size(&self) -> usize {
        self.group_size
    }

    /// Shared features needed to call a pair near duplicate (r).
    pub fn matches(&self) -> usize {
        self.matches
    }

    /// The sketch of a canonical token sequence: k·s min-hashes of its
    /// w-shingle set. This is what the crawl stores per page when
    /// verification is on.
    pub fn sketch<S: AsRef<str>>(&self, tokens: &[S]) -> MinHashSketch {
        self.sketch_shingles(&shingles(tokens, self.shingle_words))
    }

    /// The sketch of a set of shingle fingerprints (as from [`shingles`]).
    pub fn sketch_shingles(&self, set: &[u64]) -> MinHashSketch {
        let mut mins = vec![u64::MAX; self.perms.len()];
        if set.is_empty() {
            return MinHashSketch { mins: Vec::new() };
        }
        for &x in set {
            for (m, &(a, b)) in mins.iter_mut().zip(&self.perms) {
                let v = mix64(a.wrapping_mul(x).wrapping_add(b));
                if v < *m {
                    *m = v;
                }
            }
        }
        MinHashSketch { mins }
    }

    /// The k super-shingle features of a sketch: group g's s minima,
    /// fingerprinted together with g. An empty sketch (no shingles) has no
    /// features, so empty pages never match.
    pub fn super_shingles(&self, sketch: &MinHashSketch) -> SuperShingles {
        super_shingles_of(&sketch.mins, self.groups, self.group_size)
    }

    /// Whether two pages' features share at least r.
    pub fn is_near_duplicate(&self, a: &SuperShingles, b: &SuperShingles) -> bool {
        a.shared(b) >= self.matches
    }
}

/// Super-shingles of `groups` groups of `size` minima taken from the front
/// of `mins` (so one sketch of k·s minima also serves smaller k·s').
/// Empty when `mins` has fewer than `groups · size` entries.
pub fn super_shingles_of(mins: &[u64], groups: usize, size: usize) -> SuperShingles {
    if mins.len() < groups * size || size == 0 {
        return SuperShingles(Vec::new());
    }
    let feats = (0..groups)
        .map(|g| {
            let mut h = mix64(FEATURE_SEED ^ g as u64);
            for &m in &mins[g * size..(g + 1) * size] {
                h = mix64(h ^ m).wrapping_add(0x9e37_79b9_7f4a_7c15);
            }
            mix64(h)
        })
        .collect();
    SuperShingles(feats)
}

/// A page's min-hash sketch: the minimum of each permutation's image of its
/// shingle set (8·k·s bytes; 672 for 6 × 14). Empty for a page without
/// shingles. Serializable as serde or as [`MinHashSketch::to_bytes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinHashSketch {
    /// One minimum per permutation, in permutation order.
    pub mins: Vec<u64>,
}

impl MinHashSketch {
    /// Estimated resemblance: the fraction of permutations whose minima are
    /// equal (Broder eq. 1). Standard error √(ρ(1−ρ)/(k·s)), 0.055 at most
    /// for 84 permutations. 0 if either page has no shingles or the sketches
    /// come from different parameters.
    pub fn resemblance(&self, other: &MinHashSketch) -> f64 {
        if self.mins.is_empty() || self.mins.len() != other.mins.len() {
            return 0.0;
        }
        let eq = self.mins.iter().zip(&other.mins).filter(|(a, b)| a == b).count();
        eq as f64 / self.mins.len() as f64
    }

    /// Whether the page had no shingles.
    pub fn is_empty(&self) -> bool {
        self.mins.is_empty()
    }

    /// Compact little-endian encoding (8 bytes per minimum) for the store.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.mins.iter().flat_map(|m| m.to_le_bytes()).collect()
    }

    /// Decode [`MinHashSketch::to_bytes`]; `None` if the length is not a
    /// multiple of 8.
    pub fn from_bytes(bytes: &[u8]) -> Option<MinHashSketch> {
        if !bytes.len().is_multiple_of(8) {
            return None;
        }
        let mins = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        Some(MinHashSketch { mins })
    }
}

/// A page's k super-shingle features, in group order (8·k bytes: 48 for k = 6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuperShingles(pub Vec<u64>);

impl SuperShingles {
    /// How many groups have equal features.
    pub fn shared(&self, other: &SuperShingles) -> usize {
        self.0.iter().zip(&other.0).filter(|(a, b)| a == b).count()
    }
}

/// P_{k,s,r}(ρ) = Σ_{i=r..k} C(k,i) ρ^{s·i} (1−ρ^s)^{k−i}: the probability
/// that two pages of resemblance ρ share at least r of k super-shingles of s
/// min-hashes each (Broder §3).
pub fn acceptance_probability(rho: f64, k: usize, s: usize, r: usize) -> f64 {
    let p = rho.clamp(0.0, 1.0).powi(s as i32);
    (r..=k)
        .map(|i| binomial(k, i) * p.powi(i as i32) * (1.0 - p).powi((k - i) as i32))
        .sum()
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Index from super-shingle feature to the pages that have it (Broder §2,
/// phases 2–3): finds every pair sharing features without comparing all
/// pairs. Features carry their group number, so equal values mean the same
/// group matched.
#[derive(Debug, Default)]
pub struct FeatureIndex {
    postings: HashMap<u64, Vec<u32>>,
}

impl FeatureIndex {
    /// An empty index.
    pub fn new() -> Self {
        FeatureIndex::default()
    }

    /// Add page `doc` with its features.
    pub fn insert(&mut self, doc: u32, features: &SuperShingles) {
        for &f in &features.0 {
            self.postings.entry(f).or_default().push(doc);
        }
    }

    /// Pages already indexed that share at least `min_shared` features with
    /// `features`, with the count, sorted by page (the online query).
    pub fn query(&self, features: &SuperShingles, min_shared: usize) -> Vec<(u32, usize)> {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for f in &features.0 {
            for &d in self.postings.get(f).map(Vec::as_slice).unwrap_or(&[]) {
                *counts.entry(d).or_default() += 1;
            }
        }
        let mut out: Vec<(u32, usize)> = counts.into_iter().filter(|&(_, c)| c >= min_shared.max(1)).collect();
        out.sort_unstable();
        out
    }

    /// Every pair (a < b) of indexed pages sharing at least `min_shared`
    /// features, with the count, sorted (the batch join).
    pub fn pairs(&self, min_shared: usize) -> Vec<(u32, u32, usize)> {
        let mut counts: HashMap<(u32, u32), usize> = HashMap::new();
        for docs in self.postings.values() {
            for (i, &a) in docs.iter().enumerate() {
                for &b in &docs[i + 1..] {
                    if a != b {
                        *counts.entry((a.min(b), a.max(b))).or_default() += 1;
                    }
                }
            }
        }
        let mut out: Vec<(u32, u32, usize)> = counts
            .into_iter()
            .filter(|&(_, c)| c >= min_shared.max(1))
            .map(|((a, b), c)| (a, b, c))
            .collect();
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::jaccard;
    use super::*;

    /// Deterministic pseudo-random words (a tiny LCG; tests only).
    fn words(seed: u64, n: usize) -> Vec<String> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = mix64(x.wrapping_add(1));
                format!("w{}", x % 5000)
            })
            .collect()
    }

    /// `base` with every `every`-th word replaced.
    fn edited(base: &[String], every: usize, seed: u64) -> Vec<String> {
        base.iter()
            .enumerate()
            .map(|(i, w)| {
                if i % every == 0 {
                    format!("x{seed}_{i}")
                } else {
                    w.clone()
                }
            })
            .collect()
    }

    #[test]
    fn estimate_is_within_expected_error_of_exact_jaccard() {
        let h = MinHasher::new(5, 6, 14, 2);
        let t = 84.0;
        let base = words(1, 600);
        let mut total_err = 0.0;
        let mut n = 0.0;
        for (i, every) in [7usize, 13, 29, 61, 97, 151, 301, 1000].into_iter().enumerate() {
            let other = edited(&base, every, i as u64);
            let exact = jaccard(&shingles(&base, 5), &shingles(&other, 5));
            let est = h.sketch(&base).resemblance(&h.sketch(&other));
            let sigma = (exact * (1.0 - exact) / t).sqrt();
            assert!(
                (est - exact).abs() <= 4.0 * sigma + 0.03,
                "every {every}: exact {exact:.3} estimate {est:.3}"
            );
            total_err += est - exact;
            n += 1.0;
        }
        // Unbiased: the mean error is far below one standard error.
        assert!((total_err / n).abs() < 0.04, "mean error {}", total_err / n);
    }

    #[test]
    fn identical_and_disjoint_pages() {
        let h = MinHasher::new(5, 6, 14, 2);
        let a = words(3, 300);
        let b = words(4, 300);
        assert_eq!(h.sketch(&a).resemblance(&h.sketch(&a)), 1.0);
        assert!(h.sketch(&a).resemblance(&h.sketch(&b)) < 0.05);
        let (fa, fb) = (h.super_shingles(&h.sketch(&a)), h.super_shingles(&h.sketch(&b)));
        assert_eq!(fa.0.len(), 6);
        assert!(h.is_near_duplicate(&fa, &fa));
        assert!(!h.is_near_duplicate(&fa, &fb));
        // Empty pages have no features and resemble nothing.
        let e = h.sketch::<String>(&[]);
        assert!(e.is_empty() && h.super_shingles(&e).0.is_empty());
        assert_eq!(e.resemblance(&e), 0.0);
    }

    #[test]
    fn p_6_14_2_is_a_sharp_filter_at_0_909() {
        // Broder §4: P_{6,14,2}(x) = 1/2 for x = 0.909...
        assert!((acceptance_probability(0.909, 6, 14, 2) - 0.5).abs() < 0.01);
        // §1: below 77% resemblance acceptance < 0.01; above 99% rejection
        // < 0.00022 (at 97.5% the exact rejection is 0.0106, Broder rounds it to "< 0.01").
        assert!(acceptance_probability(0.77, 6, 14, 2) < 0.01);
        assert!(1.0 - acceptance_probability(0.99, 6, 14, 2) < 0.00022);
        assert!(acceptance_probability(0.975, 6, 14, 2) > 0.985);
        assert!(acceptance_probability(0.5, 6, 14, 2) < 0.6e-7);
        assert!((acceptance_probability(1.0, 6, 14, 2) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn features_accept_close_pages_and_reject_far_ones() {
        let h = MinHasher::new(5, 6, 14, 2);
        let base = words(7, 2000);
        // ~0.5% of words changed -> resemblance ~0.95: accepted.
        let close = edited(&base, 211, 1);
        // ~10% changed -> resemblance ~0.4: rejected.
        let far = edited(&base, 10, 2);
        let f = |t: &[String]| h.super_shingles(&h.sketch(t));
        assert!(h.is_near_duplicate(&f(&base), &f(&close)));
        assert!(!h.is_near_duplicate(&f(&base), &f(&far)));
    }

    #[test]
    fn index_finds_pairs_without_pairwise_comparison() {
        let h = MinHasher::new(5, 6, 14, 2);
        let base = words(11, 1000);
        let pages = [base.clone(), words(12, 1000), edited(&base, 500, 3), words(13, 1000)];
        let mut idx = FeatureIndex::new();
        let feats: Vec<SuperShingles> = pages.iter().map(|p| h.super_shingles(&h.sketch(p))).collect();
        for (i, f) in feats.iter().enumerate() {
            idx.insert(i as u32, f);
        }
        let pairs: Vec<(u32, u32)> = idx.pairs(2).into_iter().map(|(a, b, _)| (a, b)).collect();
        assert_eq!(pairs, vec![(0, 2)]);
        assert_eq!(idx.query(&feats[2], 2).first().map(|p| p.0), Some(0));
    }

    #[test]
    fn sketch_bytes_round_trip() {
        let h = MinHasher::new(5, 6, 14, 2);
        let s = h.sketch(&words(5, 50));
        assert_eq!(s.to_bytes().len(), 84 * 8);
        assert_eq!(MinHashSketch::from_bytes(&s.to_bytes()), Some(s));
        assert_eq!(MinHashSketch::from_bytes(&[1, 2, 3]), None);
    }
}
