//! Offline near-duplicate detection of a corpus with each detector (beside the
//! pipeline: `simcrawl near` and `simcrawl eval`). Every page is reduced once
//! to a [`PageSketch`] — simhash fingerprint, exact shingle set, min-hash
//! sketch, Bloom filter — and each method then finds its pairs without
//! comparing all pairs: simhash through the batch Hamming join, min-hash
//! through the super-shingle index, Bloom through shared chunks.

use rayon::prelude::*;

use super::bloom::{self, BloomFilter, BloomSketcher};
use super::minhash::{FeatureIndex, MinHashSketch, MinHasher, SuperShingles};
use super::{shingles, UnionFind};
use crate::config::Settings;

/// Chunks found in more pages than this are not used to find Bloom
/// candidates (shared boilerplate would make the join quadratic).
pub const BLOOM_MAX_DF: usize = 1000;

/// Which detector `simcrawl near` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Simhash fingerprints within Hamming distance k (Manku et al.).
    Simhash,
    /// Min-hash super-shingles (Broder), optionally with a resemblance threshold.
    Minhash,
    /// Bloom filters over content-defined chunks (Jain et al.) at a similarity threshold.
    Bloom,
}

/// The detectors' parameters, built once from `[sketch]`.
#[derive(Debug, Clone)]
pub struct Detectors {
    /// Min-hash sketches and super-shingles.
    pub minhash: MinHasher,
    /// CDC chunking and Bloom filters.
    pub bloom: BloomSketcher,
    /// Bloom similarity threshold (`[sketch] bloom_threshold`).
    pub bloom_threshold: f64,
}

/// Everything the detectors need from one page.
#[derive(Debug, Clone)]
pub struct PageSketch {
    /// The simhash fingerprint from the shared feature pipeline.
    pub simhash: u64,
    /// Exact w-shingle set (sorted), the ground truth's input.
    pub shingles: Vec<u64>,
    /// Min-hash sketch of the shingle set.
    pub minhash: MinHashSketch,
    /// Super-shingle features of the sketch.
    pub features: SuperShingles,
    /// Chunk elements of the canonical text (Bloom candidates).
    pub chunks: Vec<u64>,
    /// Bloom filter of the chunks.
    pub bloom: BloomFilter,
}

/// One near-duplicate pair: page indices `a < b` and the method's score
/// (Hamming distance for simhash, resemblance for min-hash, similarity for Bloom).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The first page.
    pub a: u32,
    /// The second page.
    pub b: u32,
    /// The method's score.
    pub score: f64,
}

impl Detectors {
    /// The detectors configured by `[sketch]`.
    pub fn from_settings(s: &Settings) -> Self {
        Detectors {
            minhash: MinHasher::from_settings(&s.sketch),
            bloom: BloomSketcher::from_settings(&s.sketch),
            bloom_threshold: s.sketch.bloom_threshold,
        }
    }

    /// Sketch one page from its canonical tokens and simhash fingerprint.
    /// The Bloom detector sees the tokens joined by single spaces.
    pub fn sketch_page<S: AsRef<str>>(&self, tokens: &[S], simhash: u64) -> PageSketch {
        let set = shingles(tokens, self.minhash.shingle_words());
        let minhash = self.minhash.sketch_shingles(&set);
        let features = self.minhash.super_shingles(&minhash);
        let mut text = String::with_capacity(tokens.iter().map(|t| t.as_ref().len() + 1).sum());
        for (i, t) in tokens.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(t.as_ref());
        }
        let chunks = self.bloom.elements(text.as_bytes());
        let bloom = self.bloom.filter_of(&chunks, text.len());
        PageSketch {
            simhash,
            shingles: set,
            minhash,
            features,
            chunks,
            bloom,
        }
    }
}

/// Every pair (a < b) of fingerprints within Hamming distance `k`, with the
/// distance, sorted: the batch permuted-table join of the index
/// ([`crate::index::batch::run`]) of the fingerprints with themselves.
pub fn simhash_pairs(fingerprints: &[u64], k: u32) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = crate::index::batch::run(fingerprints, fingerprints, k, None)
        .into_iter()
        .filter(|&(q, f, _)| q < f)
        .map(|(q, f, d)| (q as u32, f as u32, d))
        .collect();
    out.sort_unstable();
    out
}

/// Pairs sharing at least one super-shingle, with the shared count (the
/// min-hash candidates), sorted.
pub fn minhash_candidates(features: &[&SuperShingles]) -> Vec<(u32, u32, usize)> {
    let mut idx = FeatureIndex::new();
    for (i, f) in features.iter().enumerate() {
        idx.insert(i as u32, f);
    }
    idx.pairs(1)
}

/// Pairs sharing a chunk whose Bloom similarity is at least `threshold`.
pub fn bloom_pairs(pages: &[PageSketch], threshold: f64) -> Vec<Pair> {
    let elements: Vec<Vec<u64>> = pages.iter().map(|p| p.chunks.clone()).collect();
    bloom::candidate_pairs(&elements, BLOOM_MAX_DF)
        .into_par_iter()
        .filter_map(|(a, b, _)| {
            let s = pages[a as usize].bloom.similarity(&pages[b as usize].bloom);
            (s >= threshold).then_some(Pair { a, b, score: s })
        })
        .collect()
}

/// The near-duplicate pairs of `pages` by `method`: simhash within `k`;
/// min-hash at r shared super-shingles (or, with `threshold`, at an estimated
/// resemblance of at least it among pairs sharing a super-shingle); Bloom at
/// `threshold` (default `[sketch] bloom_threshold`). Sorted by (a, b).
pub fn near_pairs(pages: &[PageSketch], det: &Detectors, method: Method, k: u32, threshold: Option<f64>) -> Vec<Pair> {
    let mut pairs = match method {
        Method::Simhash => {
            let fps: Vec<u64> = pages.iter().map(|p| p.simhash).collect();
            simhash_pairs(&fps, k)
                .into_iter()
                .map(|(a, b, d)| Pair {
                    a,
                    b,
                    score: f64::from(d),
                })
                .collect()
        }
        Method::Minhash => {
            let feats: Vec<&SuperShingles> = pages.iter().map(|p| &p.features).collect();
            minhash_candidates(&feats)
                .into_iter()
                .filter_map(|(a, b, shared)| {
                    let est = pages[a as usize].minhash.resemblance(&pages[b as usize].minhash);
                    let ok = match threshold {
                        Some(t) => est >= t,
                        None => shared >= det.minhash.matches(),
                    };
                    ok.then_some(Pair { a, b, score: est })
                })
                .collect()
        }
        Method::Bloom => bloom_pairs(pages, threshold.unwrap_or(det.bloom_threshold)),
    };
    pairs.sort_unstable_by_key(|p| (p.a, p.b));
    pairs
}

/// Clusters (union-find over pairs) of `n` pages: each sorted, clusters
/// ordered by their first page; singletons left out.
pub fn clusters(n: usize, pairs: &[Pair]) -> Vec<Vec<usize>> {
    let mut uf = UnionFind::new(n);
    for p in pairs {
        uf.union(p.a as usize, p.b as usize);
    }
    uf.clusters()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(det: &Detectors, text: &str) -> PageSketch {
        let toks: Vec<&str> = text.split_whitespace().collect();
        // A stand-in fingerprint: the hash of the first token.
        det.sketch_page(&toks, super::super::hash64(0, toks.first().unwrap_or(&"").as_bytes()))
    }

    fn words(seed: u64, n: usize) -> String {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = super::super::mix64(x.wrapping_add(1));
                format!("w{}", x % 4000)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn each_method_finds_the_near_duplicate_and_nothing_else() {
        let det = Detectors::from_settings(&Settings::default());
        let base = words(1, 1500);
        let near = format!("{base} one more sentence at the very end");
        let texts = [base, words(2, 1500), near, words(3, 1500)];
        let pages: Vec<PageSketch> = texts.iter().map(|t| page(&det, t)).collect();
        for m in [Method::Minhash, Method::Bloom] {
            let p = near_pairs(&pages, &det, m, 3, None);
            assert_eq!(p.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(), vec![(0, 2)], "{m:?}");
            assert!(p[0].score > 0.9);
        }
        let c = clusters(4, &near_pairs(&pages, &det, Method::Bloom, 3, None));
        assert_eq!(c, vec![vec![0, 2]]);
    }

    #[test]
    fn simhash_pairs_match_brute_force() {
        let fps: Vec<u64> = (0..200u64).map(|i| super::super::mix64(i / 3) ^ (i % 3)).collect();
        let got = simhash_pairs(&fps, 3);
        let mut want = Vec::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = (fps[i] ^ fps[j]).count_ones();
                if d <= 3 {
                    want.push((i as u32, j as u32, d));
                }
            }
        }
        assert!(!want.is_empty());
        assert_eq!(got, want);
    }
}
