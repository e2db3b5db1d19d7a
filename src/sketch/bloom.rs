//! Bloom filters over content-defined chunks (Jain, Dahlin and Tewari, "Using
//! Bloom filters to refine web search results", §2). Beside the pipeline:
//! used by `simcrawl near --method bloom` and `simcrawl eval`.
//!
//! The canonical text (the page's canonical tokens joined by single spaces:
//! markup, case and punctuation already gone, as in the paper's §3.1) is cut
//! into content-defined chunks: a Rabin fingerprint of the last `window`
//! bytes (48) rolls over the text and a chunk ends where its low bits equal a
//! marker, so a boundary depends only on nearby content and an edit moves
//! only the boundaries next to it ([`Chunker`]). Each chunk (made unique by
//! its occurrence number, the paper's footnote 5) is an element of a Bloom
//! filter of about 8 bits per expected chunk: 2048 bits for pages up to
//! 64 KB, as in the paper, doubling beyond. Filters are compared by bitwise
//! AND: [`BloomFilter::similarity`] is matched set bits over the set bits of
//! the smaller filter, so a page embedded in a larger one scores near 1
//! (containment, which neither simhash nor resemblance sees);
//! [`BloomFilter::containment`] gives each direction separately.
//!
//! Filter sizes are powers of two and bit positions are `hash mod m`, so a
//! larger filter folds exactly onto a smaller one (OR of its halves) and any
//! two filters can be compared.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{hash64, mix64};
use crate::config::SketchSettings;

/// The irreducible polynomial of degree 63 used by LBFS's Rabin fingerprints
/// (and by the CDC code Jain et al. build on).
const RABIN_POLY: u64 = 0xbfe6_b8a5_bf37_8d83;
/// Chunk-boundary marker (LBFS and the paper use 0x78), masked to the low bits.
const MARKER: u64 = 0x78;
/// Seed of the chunk-element hash.
const CHUNK_SEED: u64 = 0xb100_3c0c_d0c0_0001;

fn degree(p: u64) -> u32 {
    63 - p.leading_zeros()
}

/// (n mod d) over GF(2)[x], n up to 128 bits.
fn poly_mod(mut n: u128, d: u64) -> u64 {
    let k = degree(d);
    for i in (k..128).rev() {
        if (n >> i) & 1 == 1 {
            n ^= u128::from(d) << (i - k);
        }
    }
    n as u64
}

/// (a · b mod d) over GF(2)[x].
fn poly_mulmod(a: u64, b: u64, d: u64) -> u64 {
    let mut prod: u128 = 0;
    for i in 0..64 {
        if (b >> i) & 1 == 1 {
            prod ^= u128::from(a) << i;
        }
    }
    poly_mod(prod, d)
}

/// Content-defined chunking with a rolling Rabin fingerprint (LBFS style).
#[derive(Debug, Clone)]
pub struct Chunker {
    window: usize,
    mask: u64,
    marker: u64,
    max_chunk: usize,
    shift: u32,
    /// Appending a byte: T[top byte] cancels the bits above the degree.
    t: Box<[u64; 256]>,
    /// Removing the byte leaving the window: U[byte] = byte · x^(8(window−1)).
    u: Box<[u64; 256]>,
}

impl Chunker {
    /// A chunker with a `window`-byte Rabin window, `expected_chunk` bytes
    /// per chunk on average (rounded up to a power of two) and chunks cut at
    /// `max_chunk` bytes at most. A chunk is at least `window` bytes unless
    /// the text ends.
    pub fn new(window: usize, expected_chunk: usize, max_chunk: usize) -> Self {
        let window = window.max(1);
        let expected = expected_chunk.max(2).next_power_of_two() as u64;
        let k = degree(RABIN_POLY);
        let shift = k - 8;
        let t1 = poly_mod(1u128 << k, RABIN_POLY);
        let mut t = Box::new([0u64; 256]);
        for (j, slot) in t.iter_mut().enumerate() {
            *slot = poly_mulmod(j as u64, t1, RABIN_POLY) | ((j as u64) << k);
        }
        let mut c = Chunker {
            window,
            mask: expected - 1,
            marker: MARKER & (expected - 1),
            max_chunk: max_chunk.max(window),
            shift,
            t,
            u: Box::new([0u64; 256]),
        };
        let mut size_shift = 1u64;
        for _ in 1..window {
            size_shift = c.append(size_shift, 0);
        }
        for (j, slot) in c.u.iter_mut().enumerate() {
            *slot = poly_mulmod(j as u64, size_shift, RABIN_POLY);
        }
        c
    }

    /// The chunker configured by `[sketch]`.
    pub fn from_settings(s: &SketchSettings) -> Self {
        Chunker::new(s.cdc_window, s.cdc_expected_chunk, s.cdc_max_chunk)
    }

    #[inline]
    fn append(&self, p: u64, byte: u8) -> u64 {
        ((p << 8) | u64::from(byte)) ^ self.t[(p >> self.shift) as usize]
    }

    /// The end offsets of the chunks of `data` (the last is `data.len()`;
    /// none for empty data).
    pub fn boundaries(&self, data: &[u8]) -> Vec<usize> {
        let mut out = Vec::with_capacity(data.len() / (self.mask as usize + 1) + 1);
        let mut fp = 0u64;
        let mut start = 0usize;
        for (i, &b) in data.iter().enumerate() {
            // Slide: remove the byte leaving the window, append the new one.
            let leaving = if i >= self.window {
                self.u[data[i - self.window] as usize]
            } else {
                0
            };
            fp = self.append(fp ^ leaving, b);
            let len = i + 1 - start;
            if (len >= self.window && (fp & self.mask) == self.marker) || len >= self.max_chunk {
                out.push(i + 1);
                start = i + 1;
            }
        }
        if start < data.len() {
            out.push(data.len());
        }
        out
    }

    /// The chunks of `data`.
    pub fn chunks<'a>(&self, data: &'a [u8]) -> Vec<&'a [u8]> {
        let mut start = 0;
        self.boundaries(data)
            .into_iter()
            .map(|end| {
                let c = &data[start..end];
                start = end;
                c
            })
            .collect()
    }

    /// Expected chunk size in bytes.
    pub fn expected_chunk(&self) -> usize {
        self.mask as usize + 1
    }

    /// Maximum chunk size in bytes.
    pub fn max_chunk(&self) -> usize {
        self.max_chunk
    }
}

/// Builds Bloom filters of content-defined chunks with fixed parameters.
#[derive(Debug, Clone)]
pub struct BloomSketcher {
    chunker: Chunker,
    bits_per_chunk: usize,
    base_bits: usize,
    hashes: u32,
}

impl BloomSketcher {
    /// A sketcher cutting with `chunker` and using about `bits_per_chunk`
    /// filter bits per expected chunk. Pages up to `max_chunk` bytes (64 KB)
    /// get `bits_per_chunk · max_chunk / expected_chunk` bits (2048), rounded
    /// up to a power of two; larger pages proportionally more. Each chunk sets
    /// round(bits_per_chunk · ln 2) bits (6 for 8), the optimum at that load.
    pub fn new(chunker: Chunker, bits_per_chunk: usize) -> Self {
        let bits_per_chunk = bits_per_chunk.max(1);
        let chunks = (chunker.max_chunk() / chunker.expected_chunk()).max(1);
        let base_bits = (bits_per_chunk * chunks).next_power_of_two().max(64);
        let hashes = ((bits_per_chunk as f64 * std::f64::consts::LN_2).round() as u32).max(1);
        BloomSketcher {
            chunker,
            bits_per_chunk,
            base_bits,
            hashes,
        }
    }

    /// The sketcher configured by `[sketch]`.
    pub fn from_settings(s: &SketchSettings) -> Self {
        BloomSketcher::new(Chunker::from_settings(s), s.bloom_bits_per_chunk)
    }

    /// The set elements of `text`: one 64-bit hash per chunk, the k-th
    /// occurrence of the same chunk content hashed with k so repeats stay
    /// distinct (multiset → set). In text order.
    pub fn elements(&self, text: &[u8]) -> Vec<u64> {
        let mut seen: HashMap<u64, u64> = HashMap::new();
        self.chunker
            .chunks(text)
            .into_iter()
            .map(|c| {
                let h = hash64(CHUNK_SEED, c);
                let n = seen.entry(h).or_insert(0);
                *n += 1;
                if *n == 1 {
                    h
                } else {
                    mix64(h ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                }
            })
            .collect()
    }

    /// Filter size in bits for a text of `len` bytes: the base size, or about
    /// `bits_per_chunk` per expected chunk for larger texts (a power of two).
    pub fn bits_for(&self, len: usize) -> usize {
        let chunks = len.div_ceil(self.chunker.expected_chunk());
        (chunks * self.bits_per_chunk).next_power_of_two().max(self.base_bits)
    }

    /// The Bloom filter of a page's elements ([`BloomSketcher::elements`]) for
    /// a text of `len` bytes.
    pub fn filter_of(&self, elements: &[u64], len: usize) -> BloomFilter {
        let m = self.bits_for(len);
        let mut bits = vec![0u64; m / 64];
        for &e in elements {
            let h2 = mix64(e) | 1;
            for i in 0..u64::from(self.hashes) {
                let pos = (e.wrapping_add(i.wrapping_mul(h2)) as usize) & (m - 1);
                bits[pos / 64] |= 1 << (pos % 64);
            }
        }
        BloomFilter { bits }
    }

    /// The Bloom filter of a canonical text.
    pub fn filter(&self, text: &[u8]) -> BloomFilter {
        self.filter_of(&self.elements(text), text.len())
    }
}

/// A page's Bloom filter over its chunks (a power-of-two number of bits,
/// 2048 = 256 bytes for pages up to 64 KB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BloomFilter {
    /// The bits, 64 per word.
    pub bits: Vec<u64>,
}

impl BloomFilter {
    /// Size in bits.
    pub fn len_bits(&self) -> usize {
        self.bits.len() * 64
    }

    /// Number of set bits.
    pub fn ones(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    /// This filter folded to `words` 64-bit words (a power of two no larger
    /// than its own): what it would have been, built at that size.
    fn folded(&self, words: usize) -> Vec<u64> {
        let mut out = self.bits[..words].to_vec();
        for chunk in self.bits[words..].chunks(words) {
            for (o, w) in out.iter_mut().zip(chunk) {
                *o |= w;
            }
        }
        out
    }

    /// (set bits of self, set bits of other, set bits of both), both filters
    /// at the smaller size.
    pub fn matched_bits(&self, other: &BloomFilter) -> (u32, u32, u32) {
        let words = self.bits.len().min(other.bits.len());
        fn fold(f: &BloomFilter, words: usize) -> std::borrow::Cow<'_, [u64]> {
            if f.bits.len() == words {
                std::borrow::Cow::Borrowed(&f.bits[..])
            } else {
                std::borrow::Cow::Owned(f.folded(words))
            }
        }
        let (a, b) = (fold(self, words), fold(other, words));
        let mut ones_a = 0;
        let mut ones_b = 0;
        let mut both = 0;
        for (x, y) in a.iter().zip(b.iter()) {
            ones_a += x.count_ones();
            ones_b += y.count_ones();
            both += (x & y).count_ones();
        }
        (ones_a, ones_b, both)
    }

    /// Jain et al.'s similarity: matched set bits / set bits of the smaller
    /// filter (the one with fewer set bits). 1 when one page is contained in
    /// the other; 0 if either is empty.
    pub fn similarity(&self, other: &BloomFilter) -> f64 {
        let (a, b, both) = self.matched_bits(other);
        let smaller = a.min(b);
        if smaller == 0 {
            0.0
        } else {
            f64::from(both) / f64::from(smaller)
        }
    }

    /// Containment of self in other: the fraction of self's set bits also set
    /// in other. Near 1 when this page is included in the other.
    pub fn containment(&self, other: &BloomFilter) -> f64 {
        let (a, _, both) = self.matched_bits(other);
        if a == 0 {
            0.0
        } else {
            f64::from(both) / f64::from(a)
        }
    }
}

/// Every pair (a < b) of pages sharing at least one chunk element, skipping
/// elements found in more than `max_df` pages (shared boilerplate), with the
/// number of shared elements: the candidates whose filters are worth
/// comparing. Pairs of similarity above 0 must share a chunk, up to Bloom
/// false matches.
pub fn candidate_pairs(elements: &[Vec<u64>], max_df: usize) -> Vec<(u32, u32, u32)> {
    let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
    for (d, els) in elements.iter().enumerate() {
        for &e in els {
            postings.entry(e).or_default().push(d as u32);
        }
    }
    let mut counts: HashMap<(u32, u32), u32> = HashMap::new();
    for docs in postings.values_mut() {
        docs.dedup();
        if docs.len() > max_df {
            continue;
        }
        for (i, &a) in docs.iter().enumerate() {
            for &b in &docs[i + 1..] {
                *counts.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
    }
    let mut out: Vec<(u32, u32, u32)> = counts.into_iter().map(|((a, b), c)| (a, b, c)).collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random "text" of words (tests only).
    fn text(seed: u64, words: usize) -> String {
        let mut x = seed;
        let mut s = String::new();
        for _ in 0..words {
            x = mix64(x.wrapping_add(1));
            s.push_str(&format!("w{} ", x % 3000));
        }
        s
    }

    fn default_sketcher() -> BloomSketcher {
        BloomSketcher::new(Chunker::new(48, 256, 65536), 8)
    }

    #[test]
    fn rolling_fingerprint_depends_only_on_the_window() {
        // Two streams that end with the same 48 bytes have the same fingerprint.
        let c = Chunker::new(48, 256, 1 << 20);
        let tail = b"the same forty-eight bytes end both of these streams..";
        let fp = |prefix: &[u8]| {
            let data: Vec<u8> = prefix.iter().chain(tail.iter()).copied().collect();
            let mut fp = 0u64;
            for i in 0..data.len() {
                let leaving = if i >= c.window {
                    c.u[data[i - c.window] as usize]
                } else {
                    0
                };
                fp = c.append(fp ^ leaving, data[i]);
            }
            fp
        };
        assert_eq!(fp(b"one prefix"), fp(b"a rather different and longer prefix"));
        assert_ne!(fp(b""), 0);
    }

    #[test]
    fn chunks_cover_the_input_near_the_expected_size() {
        let c = Chunker::new(48, 256, 65536);
        let t = text(1, 20_000);
        let chunks = c.chunks(t.as_bytes());
        assert_eq!(chunks.concat(), t.as_bytes());
        let mean = t.len() as f64 / chunks.len() as f64;
        // Expected size: minimum 48 plus a geometric wait of mean 256.
        assert!((200.0..=450.0).contains(&mean), "mean chunk {mean}");
        assert!(chunks.iter().all(|c| c.len() <= 65536));
        let capped = Chunker::new(48, 1 << 20, 1000);
        assert!(capped.chunks(t.as_bytes()).iter().all(|c| c.len() <= 1000));
        assert!(c.boundaries(b"").is_empty());
    }

    #[test]
    fn boundaries_are_stable_under_an_insertion_far_away() {
        let c = Chunker::new(48, 256, 65536);
        let t = text(2, 5000);
        let ins = "an inserted sentence of several words that was not there before ";
        let at = 200;
        let edited = format!("{}{}{}", &t[..at], ins, &t[at..]);
        let b1 = c.boundaries(t.as_bytes());
        let b2: Vec<usize> = c.boundaries(edited.as_bytes());
        // Every boundary well after the insertion is the same, shifted by its length.
        let after1: Vec<usize> = b1.iter().copied().filter(|&b| b > at + 2000).collect();
        let after2: Vec<usize> = b2
            .iter()
            .filter(|&&b| b > at + ins.len() + 2000)
            .map(|&b| b - ins.len())
            .collect();
        assert!(after1.len() > 20);
        assert_eq!(after1, after2);
        // And before it, identical.
        let before: Vec<usize> = b1.iter().copied().filter(|&b| b + 48 < at).collect();
        assert_eq!(before, b2.iter().copied().filter(|&b| b + 48 < at).collect::<Vec<_>>());
    }

    #[test]
    fn containment_detects_a_page_embedded_in_a_larger_one() {
        let s = default_sketcher();
        let inner = text(3, 1500);
        let outer = format!("{}{}{}", text(4, 3000), inner, text(5, 3000));
        let unrelated = text(6, 7500);
        let (fi, fo, fu) = (
            s.filter(inner.as_bytes()),
            s.filter(outer.as_bytes()),
            s.filter(unrelated.as_bytes()),
        );
        assert!(fi.containment(&fo) > 0.9, "{}", fi.containment(&fo));
        assert!(fo.containment(&fi) < 0.5, "{}", fo.containment(&fi));
        assert!(fi.similarity(&fo) > 0.9);
        assert!(fi.similarity(&fu) < 0.3, "{}", fi.similarity(&fu));
    }

    #[test]
    fn similarity_tracks_edits() {
        let s = default_sketcher();
        let t = text(7, 3000);
        let f = s.filter(t.as_bytes());
        assert_eq!(f.len_bits(), 2048);
        assert_eq!(f.similarity(&f), 1.0);
        let small_edit = format!("{} inserted words {}", &t[..5000], &t[5000..]);
        assert!(f.similarity(&s.filter(small_edit.as_bytes())) > 0.9);
        assert!(f.similarity(&s.filter(text(8, 3000).as_bytes())) < 0.3);
        assert_eq!(BloomFilter { bits: vec![0; 32] }.similarity(&f), 0.0);
    }

    #[test]
    fn large_pages_get_larger_filters_that_fold() {
        let s = default_sketcher();
        let big = text(9, 40_000); // > 64 KB
        assert!(big.len() > 65536);
        let fb = s.filter(big.as_bytes());
        assert!(fb.len_bits() > 2048 && fb.len_bits().is_power_of_two());
        let part = &big[10_000..30_000];
        assert!(s.filter(part.as_bytes()).containment(&fb) > 0.9);
    }

    #[test]
    fn repeated_chunks_are_distinct_elements() {
        let s = default_sketcher();
        let t = text(10, 500);
        let twice = format!("{t}{t}");
        let e = s.elements(twice.as_bytes());
        let mut u = e.clone();
        u.sort_unstable();
        u.dedup();
        assert_eq!(u.len(), e.len());
    }

    #[test]
    fn candidate_pairs_share_chunks() {
        let s = default_sketcher();
        let a = text(11, 2000);
        let b = format!("{a} tail");
        let c = text(12, 2000);
        let els: Vec<Vec<u64>> = [a, b, c].iter().map(|t| s.elements(t.as_bytes())).collect();
        let pairs: Vec<(u32, u32)> = candidate_pairs(&els, 100).into_iter().map(|(a, b, _)| (a, b)).collect();
        assert_eq!(pairs, vec![(0, 1)]);
    }
}
