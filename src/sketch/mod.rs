//! Other near-duplicate detectors from the papers (beside simhash; used for
//! verification, `simcrawl near` and `simcrawl eval`): Broder min-hash
//! super-shingles and Jain et al. Bloom filters over content-defined chunks.
//!
//! Both detectors start from the same *canonical token sequence* the simhash
//! features come from (`features::FeatureExtractor::tokens`), so the three
//! methods see the same text. This module holds what they share: the fixed,
//! portable 64-bit hash, w-word shingling, exact Jaccard resemblance and
//! containment of shingle sets (the ground truth of `simcrawl eval`), and a
//! union-find for clustering accepted pairs.
//!
//! - [`confirm`]: the sketch a new page keeps and the index that confirms a candidate against it.
//! - [`content`]: bottom-k sketches of a page's content shingles, the crawl's check of simhash candidates.
//! - [`minhash`]: shingles → k·s min-hashes → k super-shingle features (Broder §3).
//! - [`bloom`]: Rabin content-defined chunks → Bloom filter; similarity and containment (Jain et al. §2).
//! - [`near`]: a corpus's pages sketched once; pairs and clusters by each method (`simcrawl near`).

pub mod bloom;
mod cache;
pub mod confirm;
pub mod content;
pub mod minhash;
pub mod near;
mod slots;

pub use bloom::{BloomFilter, BloomSketcher, Chunker};
pub use confirm::{Sketch, SketchIndex, Thresholds};
pub use content::ContentSketch;
pub use minhash::{MinHashSketch, MinHasher, SuperShingles};

pub use crate::hash::mix64;
use crate::hash::{fnv1a_continue, FNV1A_OFFSET};

/// The fixed 64-bit hash used for shingles, chunks and super-shingles:
/// FNV-1a over the bytes, seeded, then the SplitMix64 finalizer so every
/// output bit depends on every input bit. Stable across runs, platforms and
/// releases (fingerprints may be stored), unlike `std`'s `DefaultHasher`.
#[inline]
pub fn hash64(seed: u64, bytes: &[u8]) -> u64 {
    mix64(fnv1a_continue(
        FNV1A_OFFSET ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        bytes,
    ))
}

/// The w-shingling of a canonical token sequence as a sorted, deduplicated
/// set of 64-bit shingle fingerprints (Broder §2): every run of `w` consecutive
/// tokens, hashed with its tokens separated by a byte no token contains. A
/// sequence shorter than `w` (but not empty) is one shingle; an empty sequence
/// has none.
pub fn shingles<S: AsRef<str>>(tokens: &[S], w: usize) -> Vec<u64> {
    let w = w.max(1);
    if tokens.is_empty() {
        return Vec::new();
    }
    let hash_run = |run: &[S]| {
        let mut h = FNV1A_OFFSET;
        for t in run {
            // Separator: 0xff never occurs in UTF-8.
            h = fnv1a_continue(fnv1a_continue(h, t.as_ref().as_bytes()), &[0xff]);
        }
        mix64(h)
    };
    let mut out: Vec<u64> = if tokens.len() < w {
        vec![hash_run(tokens)]
    } else {
        tokens.windows(w).map(hash_run).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// |A ∩ B| of two sorted, deduplicated sets.
pub fn intersection_size(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Exact resemblance r(A, B) = |A ∩ B| / |A ∪ B| of two sorted, deduplicated
/// shingle sets (Broder §2). Two empty sets have resemblance 0: an empty page
/// is nobody's near duplicate (exact duplicates are caught by content hash).
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let inter = intersection_size(a, b);
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Exact containment c(A, B) = |A ∩ B| / |A| of sorted, deduplicated sets:
/// how much of A is included in B (Broder 1997). 0 when A is empty.
pub fn containment(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() {
        0.0
    } else {
        intersection_size(a, b) as f64 / a.len() as f64
    }
}

/// Union-find (disjoint sets) with path halving and union by size, for
/// clustering accepted pairs (Broder §2 final phase; Jain et al. §3.2), and
/// for duplicate clusters and mirror sets in the reports.
#[derive(Debug, Clone, Default)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    /// `n` singletons `0..n`.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    /// Add a singleton; returns its index.
    pub fn push(&mut self) -> usize {
        self.parent.push(self.parent.len() as u32);
        self.size.push(1);
        self.parent.len() - 1
    }

    /// The representative of `x`'s set.
    pub fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let p = self.parent[x] as usize;
            self.parent[x] = self.parent[p];
            x = p;
        }
        x
    }

    /// Merge the sets of `a` and `b`; whether they were separate.
    pub fn union(&mut self, a: usize, b: usize) -> bool {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return false;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a as u32;
        self.size[a] += self.size[b];
        true
    }

    /// The sets with more than one member, each sorted, ordered by their
    /// smallest member.
    pub fn clusters(&mut self) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        let mut by_root: std::collections::HashMap<usize, Vec<usize>> = std::collections::HashMap::new();
        for x in 0..n {
            let r = self.find(x);
            by_root.entry(r).or_default().push(x);
        }
        let mut out: Vec<Vec<usize>> = by_root.into_values().filter(|c| c.len() > 1).collect();
        out.sort_unstable_by_key(|c| c[0]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    #[test]
    fn broder_rose_example_has_three_4_shingles() {
        let s = shingles(&toks("a rose is a rose is a rose"), 4);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn short_and_empty_sequences() {
        assert_eq!(shingles(&toks("a b"), 5).len(), 1);
        assert!(shingles::<&str>(&[], 5).is_empty());
        // Token boundaries matter: "ab c" is not "a bc".
        assert_ne!(shingles(&toks("ab c"), 2), shingles(&toks("a bc"), 2));
    }

    #[test]
    fn jaccard_and_containment_match_hand_counts() {
        let a = vec![1, 2, 3, 4];
        let b = vec![3, 4, 5, 6, 7, 8];
        assert_eq!(intersection_size(&a, &b), 2);
        assert!((jaccard(&a, &b) - 2.0 / 8.0).abs() < 1e-12);
        assert!((containment(&a, &b) - 0.5).abs() < 1e-12);
        assert_eq!(jaccard(&[], &[]), 0.0);
        assert_eq!(jaccard(&a, &a), 1.0);
    }

    #[test]
    fn union_find_clusters() {
        let mut uf = UnionFind::new(6);
        assert!(uf.union(0, 3));
        assert!(uf.union(3, 5));
        assert!(!uf.union(5, 0));
        assert!(uf.union(1, 2));
        assert_eq!(uf.clusters(), vec![vec![0, 3, 5], vec![1, 2]]);
    }

    #[test]
    fn hash64_is_stable() {
        // Pinned: stored sketches depend on it.
        assert_eq!(hash64(0, b""), mix64(0xcbf2_9ce4_8422_2325));
        assert_ne!(hash64(0, b"a"), hash64(1, b"a"));
    }
}
