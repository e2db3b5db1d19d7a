//! The shared benchmark workload (beside the index pipeline): random and
//! clustered fingerprint sets with planted neighbours, the brute-force scan
//! every answer is checked against, and the BTreeSet-per-table baseline. Used
//! by `simcrawl bench index`, `peer-bench/` and `benches/index.rs`.

use std::collections::BTreeSet;

use crate::index::Design;
use crate::index::Match;

/// A deterministic splitmix64 stream.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Which fingerprint distribution a workload draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Uniformly random 64-bit fingerprints.
    Random,
    /// Simhash-like skew (Manku §4.2): 1% empty pages (fingerprint 0), the
    /// rest in clusters of 1..200 pages within 0..11 bits of a centre.
    Clustered,
}

/// Stored fingerprints and queries; half the queries are planted neighbours
/// (a stored fingerprint with 0..=k bits flipped), half random.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The distribution.
    pub shape: Shape,
    /// Fingerprints to store; the id of `fps[i]` is `i`.
    pub fps: Vec<u64>,
    /// Queries.
    pub queries: Vec<u64>,
}

impl Workload {
    /// `n` fingerprints and `q` queries of `shape` for threshold `k`, from `seed`.
    pub fn new(shape: Shape, n: usize, q: usize, k: u32, seed: u64) -> Workload {
        let mut rng = Rng::new(seed);
        let mut fps = Vec::with_capacity(n);
        match shape {
            Shape::Random => fps.extend((0..n).map(|_| rng.next_u64())),
            Shape::Clustered => {
                fps.extend(std::iter::repeat_n(0, n / 100));
                while fps.len() < n {
                    let centre = rng.next_u64();
                    let size = 1 + rng.below(200) as usize;
                    for _ in 0..size.min(n - fps.len()) {
                        let mut x = centre;
                        for _ in 0..rng.below(12) {
                            x ^= 1 << rng.below(64);
                        }
                        fps.push(x);
                    }
                }
                // Interleave clusters as a crawl would meet them.
                for i in (1..fps.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    fps.swap(i, j);
                }
            }
        }
        let queries = (0..q)
            .map(|i| {
                if i % 2 == 0 || fps.is_empty() {
                    rng.next_u64()
                } else {
                    let mut x = fps[rng.below(fps.len() as u64) as usize];
                    for _ in 0..rng.below(k as u64 + 1) {
                        x ^= 1 << rng.below(64);
                    }
                    x
                }
            })
            .collect();
        Workload { shape, fps, queries }
    }

    /// `(fp, id)` pairs with id = position.
    pub fn items(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.fps.iter().enumerate().map(|(i, &fp)| (fp, i as u64))
    }
}

/// Brute force: every stored fingerprint within k, by a popcount scan.
pub fn brute_force(fps: &[u64], q: u64, k: u32, out: &mut Vec<Match>) {
    for (i, &fp) in fps.iter().enumerate() {
        let d = (fp ^ q).count_ones();
        if d <= k {
            out.push(Match {
                fp,
                id: i as u64,
                distance: d,
            });
        }
    }
}

/// The baseline: one `BTreeSet<(permuted fp, id)>` per table of the same design.
#[derive(Debug)]
pub struct BTreeTables {
    design: Design,
    k: u32,
    sets: Vec<BTreeSet<(u64, u64)>>,
}

impl BTreeTables {
    /// An empty baseline.
    pub fn new(design: Design, k: u32) -> BTreeTables {
        let sets = vec![BTreeSet::new(); design.tables()];
        BTreeTables { design, k, sets }
    }

    /// Builds each table from sorted input (the BTree's bulk path).
    pub fn bulk(design: Design, k: u32, items: &[(u64, u64)]) -> BTreeTables {
        let sets = design
            .specs()
            .iter()
            .map(|s| {
                let mut v: Vec<(u64, u64)> = items.iter().map(|&(fp, id)| (s.permute(fp), id)).collect();
                v.sort_unstable();
                v.into_iter().collect()
            })
            .collect();
        BTreeTables { design, k, sets }
    }

    /// Inserts one pair into every table.
    pub fn insert(&mut self, fp: u64, id: u64) {
        for (s, set) in self.design.specs().iter().zip(&mut self.sets) {
            set.insert((s.permute(fp), id));
        }
    }

    /// Every `(fp, id)` within k (each once).
    pub fn query(&self, q: u64, out: &mut Vec<Match>) {
        for (i, (s, set)) in self.design.specs().iter().zip(&self.sets).enumerate() {
            let pq = s.permute(q);
            let p = s.prefix();
            let (lo, hi) = if p == 0 {
                (0, u64::MAX)
            } else {
                let shift = 64 - p;
                let base = (pq >> shift) << shift;
                (base, base | ((1u64 << shift) - 1))
            };
            for &(e, id) in set.range((lo, 0)..=(hi, u64::MAX)) {
                let c = s.unpermute(e);
                let x = c ^ q;
                if x.count_ones() <= self.k {
                    let first = self.design.specs().iter().position(|t| x & t.prefix_mask() == 0);
                    if first == Some(i) {
                        out.push(Match {
                            fp: c,
                            id,
                            distance: x.count_ones(),
                        });
                    }
                }
            }
        }
    }
}
