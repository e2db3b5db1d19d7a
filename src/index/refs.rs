//! A compact sealed index whose tables hold references (pipeline: beside the
//! live index, for a sealed run of fingerprints that must fit in little
//! memory). Each distinct fingerprint is stored **once** (8 bytes, sorted);
//! the t permuted tables of a [`Design`] store, per entry, only a few filter
//! bits of the permuted fingerprint and a reference (its position among the
//! sorted fingerprints), bit-packed in w_i = e_i + ⌈log2 n⌉ bits.
//!
//! # Layout
//!
//! ```text
//! RefIndex
//!   fps:   Vec<u64>       the distinct fingerprints, sorted             8 B / fp
//!   ids:   Packed         id − min id of fps[j], ⌈log2(max − min + 1)⌉ bits each
//!   extras                ids beyond the first of a repeated fingerprint (sorted side arrays)
//!   tables[i]
//!     dir:     [DirLine]  one 64-byte line per 60 buckets of the top d_i bits of π_i(fp):
//!                         60 one-byte counts + the u32 start of the line's first bucket;
//!                         a line holding a bucket of ≥ 255 entries keeps exact starts in `big`
//!     entries: bits       per fp, sorted by π_i(fp): the e_i bits of π_i(fp) after the
//!                         directory bits (within the prefix p_i), then the reference
//! ```
//!
//! A query reads, per table, one directory line and the bucket's entries (one
//! or two lines), keeps the entries whose filter bits equal the query's, and
//! for each such candidate reads `fps[ref]` (one more random line) to test the
//! popcount and the first-table rule (a match is reported only by the first
//! table whose prefix it shares with the query, as in [`super::table`]).
//! Filter bits never go beyond the table's prefix, so a true neighbour is
//! never filtered out: the index is exact for every k the design covers.
//!
//! Why: per-table coding (`compressed.rs`) stores t copies of each
//! fingerprint, each at the entropy of a sorted set (64 − log2 n + 1.44 bits),
//! so 10 tables cost ≥ 57 B/fp at 1M before ids. Here a table costs
//! log2 n + e_i bits per fingerprint (~3.5 bytes) and the 64 bits are paid once.
//! docs/index.md ("References instead of copies") gives the arithmetic and the
//! measurements.

use rayon::prelude::*;

use super::design::{Design, TableSpec};
use super::table::Match;

/// Buckets per directory line (60 count bytes + a u32 start = 64 bytes).
const LINE_BUCKETS: usize = 60;
/// A directory line's start marks an overflow line (exact starts in `big`).
const BIG: u32 = 1 << 31;
/// Widest packed entry: one unaligned 8-byte load at any bit offset (≤ 7)
/// must cover it.
const MAX_ENTRY_BITS: u32 = 57;
/// Filter bits aim for d_i + e_i ≈ log2 n + FILTER_SLACK: about 2^-FILTER_SLACK
/// false candidates per table per query (when the prefix allows that many).
const FILTER_SLACK: u32 = 4;
/// Candidates collected (and their fingerprints prefetched) before they are checked.
const CANDS: usize = 64;
/// Tables whose directory lines are prefetched together.
const ROUND: usize = 16;

/// Unsigned integers of one width packed into words (ids, extra ids).
#[derive(Debug, Clone, Default)]
struct Packed {
    words: Vec<u64>,
    width: u32,
}

impl Packed {
    fn new(len: usize, width: u32) -> Packed {
        let words = vec![0u64; (len * width as usize).div_ceil(64) + 1];
        Packed { words, width }
    }

    fn set(&mut self, i: usize, v: u64) {
        if self.width == 0 {
            return;
        }
        let bit = i * self.width as usize;
        let (w, off) = (bit / 64, (bit % 64) as u32);
        self.words[w] |= v << off;
        if off + self.width > 64 {
            self.words[w + 1] |= v >> (64 - off);
        }
    }

    #[inline]
    fn get(&self, i: usize) -> u64 {
        if self.width == 0 {
            return 0;
        }
        let bit = i * self.width as usize;
        let (w, off) = (bit / 64, (bit % 64) as u32);
        let mut v = self.words[w] >> off;
        if off + self.width > 64 {
            v |= self.words[w + 1] << (64 - off);
        }
        v & mask(self.width)
    }

    fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// The low `bits` bits set (bits ≤ 64).
#[inline(always)]
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Bits `from .. from + n` of `x`, counted from the most significant bit.
#[inline(always)]
fn top_bits(x: u64, from: u32, n: u32) -> u64 {
    if n == 0 {
        0
    } else {
        (x << from) >> (64 - n)
    }
}

/// Bits needed to write every value in `0..=max`.
fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// One directory line: counts of 60 buckets in bytes 0..60, the start of
/// the first bucket (or `BIG | index into big`) in the high half of word 7.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct DirLine([u64; 8]);

impl DirLine {
    fn set_count(&mut self, j: usize, c: u8) {
        self.0[j / 8] |= (c as u64) << (8 * (j % 8));
    }

    fn set_start(&mut self, s: u32) {
        self.0[7] = (self.0[7] & 0xFFFF_FFFF) | ((s as u64) << 32);
    }

    #[inline(always)]
    fn start(&self) -> u32 {
        (self.0[7] >> 32) as u32
    }

    /// (sum of the counts of buckets 0..j, count of bucket j), branch-free:
    /// bytes summed pairwise into 16-bit lanes, the lanes added by a multiply.
    #[inline(always)]
    fn before_and_count(&self, j: usize) -> (usize, usize) {
        const LO: u64 = 0x00FF_00FF_00FF_00FF;
        let mut acc = 0u64;
        for (i, &w) in self.0.iter().enumerate() {
            let bits = (j * 8).saturating_sub(i * 64).min(64) as u32;
            let x = w & mask(bits);
            acc += (x & LO) + ((x >> 8) & LO);
        }
        // Lanes ≤ 8 · 510 and the total ≤ 60 · 254: no carries between lanes.
        let before = (acc.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize;
        let count = ((self.0[j / 8] >> (8 * (j % 8))) & 0xFF) as usize;
        (before, count)
    }
}

/// One permuted table: a directory on the top `dbits` bits of π_i(fp) and
/// bit-packed entries (filter bits, reference).
#[derive(Debug, Clone)]
struct RefTable {
    dbits: u32,
    fbits: u32,
    rbits: u32,
    width: u32,
    dir: Vec<DirLine>,
    /// Exact starts (61 per overflow line) of lines with a bucket of ≥ 255 entries.
    big: Vec<u32>,
    /// Entry j at bits j·width .. (j + 1)·width (little-endian), then 8 bytes of padding.
    entries: Vec<u8>,
}

impl RefTable {
    /// Builds table `spec` over the sorted distinct `fps`.
    fn build(spec: &TableSpec, fps: &[u64], rbits: u32) -> RefTable {
        let n = fps.len();
        let p = spec.prefix();
        let dbits = rbits.saturating_sub(3).min(p).min(30);
        let fbits = (p - dbits)
            .min((rbits + FILTER_SLACK).saturating_sub(dbits))
            .min(MAX_ENTRY_BITS - rbits)
            .min(64 - dbits - rbits);
        let width = fbits + rbits;
        let nb = 1usize << dbits;
        // Counting sort on the bucket, then each bucket sorted by (filter, ref).
        let mut counts = vec![0u32; nb + 1];
        for &fp in fps {
            counts[top_bits(spec.permute(fp), 0, dbits) as usize + 1] += 1;
        }
        for b in 1..=nb {
            counts[b] += counts[b - 1];
        }
        let mut at: Vec<u32> = counts[..nb].to_vec();
        let mut keys = vec![0u64; n];
        for (r, &fp) in fps.iter().enumerate() {
            let pk = spec.permute(fp);
            let b = top_bits(pk, 0, dbits) as usize;
            keys[at[b] as usize] = (top_bits(pk, dbits, fbits) << rbits) | r as u64;
            at[b] += 1;
        }
        drop(at);
        for b in 0..nb {
            keys[counts[b] as usize..counts[b + 1] as usize].sort_unstable();
        }
        let mut entries = vec![0u8; (n * width as usize).div_ceil(8) + 8];
        for (j, &key) in keys.iter().enumerate() {
            let bit = j * width as usize;
            let (byte, off) = (bit / 8, bit % 8);
            let mut word = [0u8; 8];
            word.copy_from_slice(&entries[byte..byte + 8]);
            let v = u64::from_le_bytes(word) | (key << off);
            entries[byte..byte + 8].copy_from_slice(&v.to_le_bytes());
        }
        drop(keys);
        let lines = nb.div_ceil(LINE_BUCKETS);
        let mut dir = vec![DirLine::default(); lines];
        let mut big = Vec::new();
        for (l, line) in dir.iter_mut().enumerate() {
            let first = l * LINE_BUCKETS;
            let last = (first + LINE_BUCKETS).min(nb);
            let overflow = (first..last).any(|b| counts[b + 1] - counts[b] >= 255);
            if overflow {
                line.set_start(BIG | big.len() as u32);
                big.extend_from_slice(&counts[first..=last]);
                // Pad to 61 starts so a line's slots are fixed.
                big.resize(big.len() + (LINE_BUCKETS - (last - first)), counts[last]);
            } else {
                line.set_start(counts[first]);
                for b in first..last {
                    line.set_count(b - first, (counts[b + 1] - counts[b]) as u8);
                }
            }
        }
        RefTable {
            dbits,
            fbits,
            rbits,
            width,
            dir,
            big,
            entries,
        }
    }

    #[inline(always)]
    fn bucket(&self, pq: u64) -> usize {
        top_bits(pq, 0, self.dbits) as usize
    }

    #[inline(always)]
    fn prefetch_dir(&self, pq: u64) {
        super::table::prefetch(self.dir.as_ptr().wrapping_add(self.bucket(pq) / LINE_BUCKETS));
    }

    /// Entries `lo..hi` of the bucket of `pq`.
    #[inline(always)]
    fn range(&self, pq: u64) -> (usize, usize) {
        let b = self.bucket(pq);
        let line = &self.dir[b / LINE_BUCKETS];
        let j = b % LINE_BUCKETS;
        let s = line.start();
        if s & BIG != 0 {
            let at = (s & !BIG) as usize + j;
            return (self.big[at] as usize, self.big[at + 1] as usize);
        }
        let (before, count) = line.before_and_count(j);
        let lo = s as usize + before;
        (lo, lo + count)
    }

    #[inline(always)]
    fn prefetch_entries(&self, (lo, hi): (usize, usize)) {
        if lo == hi {
            return;
        }
        let w = self.width as usize;
        let base = self.entries.as_ptr() as usize;
        let first = (base + lo * w / 8) & !63;
        let last = base + (hi * w).div_ceil(8);
        let mut line = first;
        while line < last {
            super::table::prefetch(line as *const u8);
            line += 64;
        }
    }

    fn bytes(&self) -> usize {
        self.dir.len() * 64 + self.big.len() * 4 + self.entries.len()
    }
}

/// What one query cost (for `bench index`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefStats {
    /// Table entries read (the directory buckets' entries).
    pub examined: usize,
    /// Entries whose filter bits matched: fingerprints fetched from `fps`.
    pub candidates: usize,
    /// Matches appended.
    pub matches: usize,
}

/// Bytes held by each part of a [`RefIndex`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefBytes {
    /// The distinct fingerprints.
    pub fps: usize,
    /// Packed ids and the side arrays of repeated fingerprints' extra ids.
    pub ids: usize,
    /// Per table: directory (lines and overflow starts).
    pub dirs: Vec<usize>,
    /// Per table: packed entries.
    pub entries: Vec<usize>,
}

impl RefBytes {
    /// Everything.
    pub fn total(&self) -> usize {
        self.fps + self.ids + self.dirs.iter().sum::<usize>() + self.entries.iter().sum::<usize>()
    }
}

/// A sealed, exact Hamming index whose tables hold references into one sorted
/// array of distinct fingerprints (see the module docs).
#[derive(Debug, Clone)]
pub struct RefIndex {
    k: u32,
    specs: Vec<TableSpec>,
    masks: Vec<u64>,
    fps: Vec<u64>,
    id_base: u64,
    ids: Packed,
    /// Positions in `fps` with more than one id, ascending.
    extra_pos: Vec<u32>,
    /// `extra_ids[extra_start[i]..extra_start[i + 1]]` belong to `fps[extra_pos[i]]`.
    extra_start: Vec<u32>,
    extra_ids: Packed,
    tables: Vec<RefTable>,
    pairs: usize,
}

impl RefIndex {
    /// Builds the index of `items` (`(fingerprint, id)` pairs, any order; a
    /// fingerprint may come with many ids, an identical pair is kept once) for `design`, answering distances up to `k` (the
    /// design should cover k, [`Design::covers`]). O(n log n) for the sort of
    /// the pairs, then O(n) per table (a counting sort on the directory
    /// bits), tables in parallel.
    ///
    /// # Panics
    /// With 2^31 or more distinct fingerprints (directory starts are 31 bits).
    pub fn build(design: &Design, k: u32, items: &[(u64, u64)]) -> RefIndex {
        let mut pairs = items.to_vec();
        pairs.par_sort_unstable();
        pairs.dedup();
        let (id_min, id_max) = pairs
            .iter()
            .fold((u64::MAX, 0u64), |(lo, hi), &(_, id)| (lo.min(id), hi.max(id)));
        let id_base = if pairs.is_empty() { 0 } else { id_min };
        let id_width = if pairs.is_empty() { 0 } else { bits_for(id_max - id_min) };
        let distinct = pairs.windows(2).filter(|w| w[0].0 != w[1].0).count() + usize::from(!pairs.is_empty());
        assert!(distinct < BIG as usize, "a RefIndex holds fewer than 2^31 fingerprints");
        let mut fps = Vec::with_capacity(distinct);
        let mut ids = Packed::new(distinct, id_width);
        let mut extra_pos = Vec::new();
        let mut extra_start = vec![0u32];
        let mut extra_vals = Vec::new();
        for (i, &(fp, id)) in pairs.iter().enumerate() {
            if i > 0 && pairs[i - 1].0 == fp {
                let pos = (fps.len() - 1) as u32;
                if extra_pos.last() != Some(&pos) {
                    extra_pos.push(pos);
                    extra_start.push(extra_vals.len() as u32);
                }
                extra_vals.push(id - id_base);
                *extra_start.last_mut().unwrap_or(&mut 0) = extra_vals.len() as u32;
            } else {
                ids.set(fps.len(), id - id_base);
                fps.push(fp);
            }
        }
        drop(pairs);
        let mut extra_ids = Packed::new(extra_vals.len(), id_width);
        for (i, &v) in extra_vals.iter().enumerate() {
            extra_ids.set(i, v);
        }
        let rbits = bits_for(distinct.saturating_sub(1) as u64);
        let tables = design
            .specs()
            .par_iter()
            .map(|s| RefTable::build(s, &fps, rbits))
            .collect();
        RefIndex {
            k,
            specs: design.specs().to_vec(),
            masks: design.specs().iter().map(|s| s.prefix_mask()).collect(),
            fps,
            id_base,
            ids,
            extra_pos,
            extra_start,
            extra_ids,
            tables,
            pairs: items.len(),
        }
    }

    /// The distance the index was built for; queries with a larger k are
    /// answered for this one.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Number of `(fingerprint, id)` pairs given to [`RefIndex::build`].
    pub fn len(&self) -> usize {
        self.pairs
    }

    /// Whether the index holds nothing.
    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    /// Number of distinct fingerprints.
    pub fn distinct(&self) -> usize {
        self.fps.len()
    }

    /// Per table: (directory bits d_i, filter bits e_i, entry width w_i).
    pub fn geometry(&self) -> Vec<(u32, u32, u32)> {
        self.tables.iter().map(|t| (t.dbits, t.fbits, t.width)).collect()
    }

    /// Bytes held, by part.
    pub fn byte_parts(&self) -> RefBytes {
        RefBytes {
            fps: self.fps.len() * 8,
            ids: self.ids.bytes() + self.extra_pos.len() * 4 + self.extra_start.len() * 4 + self.extra_ids.bytes(),
            dirs: self.tables.iter().map(|t| t.dir.len() * 64 + t.big.len() * 4).collect(),
            entries: self.tables.iter().map(|t| t.entries.len()).collect(),
        }
    }

    /// Every byte held: fingerprints, ids, extra ids, directories, entries.
    pub fn bytes(&self) -> usize {
        self.tables.iter().map(RefTable::bytes).sum::<usize>() + self.byte_parts().ids + self.fps.len() * 8
    }

    /// Appends every stored `(fingerprint, id)` within distance
    /// min(`k`, [`RefIndex::k`]) of `q` to `out`, each once, and returns
    /// what the query cost.
    pub fn query(&self, q: u64, k: u32, out: &mut Vec<Match>) -> RefStats {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.query_popcnt(q, k, out) };
        }
        self.query_body(q, k, out)
    }

    /// [`RefIndex::query_body`] compiled with the popcnt instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn query_popcnt(&self, q: u64, k: u32, out: &mut Vec<Match>) -> RefStats {
        self.query_body(q, k, out)
    }

    #[inline(always)]
    fn query_body(&self, q: u64, k: u32, out: &mut Vec<Match>) -> RefStats {
        let k = k.min(self.k);
        let mut st = RefStats::default();
        if self.fps.is_empty() {
            return st;
        }
        let mut pqs = [0u64; ROUND];
        let mut ranges = [(0usize, 0usize); ROUND];
        let mut cands = [(0u32, 0u8); CANDS];
        let mut nc = 0usize;
        for start in (0..self.tables.len()).step_by(ROUND) {
            let end = (start + ROUND).min(self.tables.len());
            // All tables' directory lines first, then their buckets, then the
            // scans: the cache misses of the tables overlap.
            for i in start..end {
                pqs[i - start] = self.specs[i].permute(q);
                self.tables[i].prefetch_dir(pqs[i - start]);
            }
            for i in start..end {
                let r = self.tables[i].range(pqs[i - start]);
                self.tables[i].prefetch_entries(r);
                ranges[i - start] = r;
            }
            for i in start..end {
                let t = &self.tables[i];
                let pq = pqs[i - start];
                let (lo, hi) = ranges[i - start];
                st.examined += hi - lo;
                let want = top_bits(pq, t.dbits, t.fbits);
                let (w, rbits, rmask, emask) = (t.width as usize, t.rbits, mask(t.rbits), mask(t.width));
                assert!((hi * w).div_ceil(8) + 8 <= t.entries.len() || lo == hi);
                let base = t.entries.as_ptr();
                for j in lo..hi {
                    let bit = j * w;
                    // SAFETY: bit / 8 + 8 ≤ ⌈hi·w / 8⌉ + 8 ≤ entries.len() (checked above).
                    let raw = u64::from_le(unsafe { (base.add(bit / 8) as *const u64).read_unaligned() });
                    let e = (raw >> (bit % 8)) & emask;
                    if e >> rbits == want {
                        let r = (e & rmask) as usize;
                        super::table::prefetch(self.fps.as_ptr().wrapping_add(r));
                        cands[nc] = (r as u32, i as u8);
                        nc += 1;
                        if nc == CANDS {
                            st.candidates += nc;
                            self.check(q, k, &cands[..nc], out, &mut st);
                            nc = 0;
                        }
                    }
                }
            }
        }
        st.candidates += nc;
        self.check(q, k, &cands[..nc], out, &mut st);
        st
    }

    /// Tests candidates `(position in fps, table)`: within k, and the table
    /// is the first whose prefix the fingerprint shares with `q`.
    #[inline(always)]
    fn check(&self, q: u64, k: u32, cands: &[(u32, u8)], out: &mut Vec<Match>, st: &mut RefStats) {
        for &(r, i) in cands {
            let fp = self.fps[r as usize];
            let x = fp ^ q;
            let d = x.count_ones();
            if d <= k && self.masks.iter().position(|&m| x & m == 0) == Some(i as usize) {
                st.matches += self.emit(r as usize, d, out);
            }
        }
    }

    /// Appends every id of `fps[r]`; returns how many.
    #[inline(never)]
    fn emit(&self, r: usize, distance: u32, out: &mut Vec<Match>) -> usize {
        let fp = self.fps[r];
        out.push(Match {
            fp,
            id: self.id_base + self.ids.get(r),
            distance,
        });
        let Ok(e) = self.extra_pos.binary_search(&(r as u32)) else {
            return 1;
        };
        let (lo, hi) = (self.extra_start[e] as usize, self.extra_start[e + 1] as usize);
        for x in lo..hi {
            out.push(Match {
                fp,
                id: self.id_base + self.extra_ids.get(x),
                distance,
            });
        }
        1 + hi - lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::oracle::flip;
    use proptest::prelude::*;

    /// The brute-force answer as a set (a pair stored twice counts once).
    fn brute(items: &[(u64, u64)], q: u64, k: u32) -> Vec<Match> {
        let mut v = crate::index::oracle::brute(items, q, k);
        v.dedup();
        v
    }

    /// Queries `idx` with every query and compares with brute force as sets.
    fn check_all(idx: &RefIndex, items: &[(u64, u64)], queries: &[u64], k: u32) -> usize {
        let mut found = 0;
        let mut got = Vec::new();
        for &q in queries {
            got.clear();
            let st = idx.query(q, k, &mut got);
            assert_eq!(st.matches, got.len());
            got.sort_unstable();
            let want = brute(items, q, k);
            assert_eq!(got, want, "query {q:#x} k={k}");
            found += want.len();
        }
        found
    }

    fn design(which: usize, k: u32) -> (Design, u32) {
        match which {
            0 => (Design::paper_k3(4).unwrap(), k.min(3)),
            1 => (Design::paper_k3(10).unwrap(), k.min(3)),
            2 => (Design::paper_k3(16).unwrap(), k.min(3)),
            _ => (Design::for_k(k, 12), k),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn ref_index_equals_brute_force(
            k in 0u32..=7,
            which in 0usize..4,
            base in proptest::collection::vec(any::<u64>(), 1..300),
            plants in proptest::collection::vec((0usize..1000, proptest::collection::vec(any::<u8>(), 0..10)), 0..200),
            dups in proptest::collection::vec((0usize..1000, 1usize..5), 0..20),
            id0 in 0u64..1_000_000,
        ) {
            let (design, k) = design(which, k);
            let mut fps = base.clone();
            // Planted neighbours at 0..=9 bits (so k + 2 and beyond for every k).
            for (at, bits) in &plants {
                fps.push(flip(base[at % base.len()], bits));
            }
            let mut items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &fp)| (fp, id0 + 3 * i as u64)).collect();
            // Repeated fingerprints with more ids.
            let mut next = id0 + 3 * items.len() as u64;
            for (at, times) in dups {
                let fp = fps[at % fps.len()];
                for _ in 0..times {
                    items.push((fp, next));
                    next += 1;
                }
            }
            let idx = RefIndex::build(&design, k, &items);
            prop_assert_eq!(idx.len(), items.len());
            let mut queries: Vec<u64> = base.iter().copied().take(50).collect();
            for (at, bits) in plants.iter().take(100) {
                queries.push(flip(base[at % base.len()], &bits[..bits.len().min(k as usize + 2)]));
                queries.push(flip(base[at % base.len()], bits));
            }
            check_all(&idx, &items, &queries, k);
        }
    }

    #[test]
    fn auto_designs_for_every_k_are_exact() {
        let mut seed = 0x5eedu64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed ^ (seed >> 29)
        };
        let base: Vec<u64> = (0..4000).map(|_| next()).collect();
        for k in 0..=7u32 {
            let design = Design::for_k(k, 13);
            let mut items: Vec<(u64, u64)> = base.iter().enumerate().map(|(i, &fp)| (fp, i as u64)).collect();
            let mut queries = Vec::new();
            for i in 0..300 {
                let mut x = base[(next() % base.len() as u64) as usize];
                // Distances 0..=k+2 around stored fingerprints.
                for _ in 0..(i % (k as usize + 3)) {
                    x ^= 1 << (next() % 64);
                }
                if i % 3 == 0 {
                    items.push((x, 10_000 + i as u64));
                }
                queries.push(x);
            }
            let idx = RefIndex::build(&design, k, &items);
            let found = check_all(&idx, &items, &queries, k);
            assert!(found >= 150, "k={k}: planted neighbours must be found ({found})");
        }
    }

    #[test]
    fn clustered_sets_with_crowded_buckets_stay_exact() {
        // Thousands of fingerprints sharing their top 40 bits: every
        // table's bucket holding them is far beyond 255 entries (overflow
        // directory lines), plus 500 copies of fingerprint 0.
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed ^ (seed >> 29)
        };
        let centre = next();
        let mut items = Vec::new();
        for i in 0..6000u64 {
            let fp = if i % 3 == 0 {
                next()
            } else {
                (centre & !0xFF_FFFF) | (next() & 0xFF_FFFF)
            };
            items.push((fp, i));
        }
        for i in 0..500 {
            items.push((0, 100_000 + i));
        }
        items.push((1, 200_000));
        let design = Design::paper_k3(10).unwrap();
        let idx = RefIndex::build(&design, 3, &items);
        assert!(idx.tables.iter().any(|t| !t.big.is_empty()), "overflow lines expected");
        let mut queries: Vec<u64> = items.iter().step_by(37).map(|&(fp, _)| fp ^ (next() & 0x101)).collect();
        queries.extend([0, 1, 3, 7, centre]);
        let found = check_all(&idx, &items, &queries, 3);
        assert!(found > 1000, "{found}");
    }

    #[test]
    fn directory_lines_sum_counts() {
        let mut line = DirLine::default();
        line.set_start(1000);
        let counts: Vec<u8> = (0..LINE_BUCKETS).map(|j| (j * 37 % 255) as u8).collect();
        for (j, &c) in counts.iter().enumerate() {
            line.set_count(j, c);
        }
        for j in 0..LINE_BUCKETS {
            let want: usize = counts[..j].iter().map(|&c| c as usize).sum();
            assert_eq!(line.before_and_count(j), (want, counts[j] as usize), "bucket {j}");
        }
        assert_eq!(line.start(), 1000);
    }

    #[test]
    fn packed_ints_round_trip_at_every_width() {
        for width in [0u32, 1, 7, 20, 33, 57, 63, 64] {
            let vals: Vec<u64> = (0..300u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask(width))
                .collect();
            let mut p = Packed::new(vals.len(), width);
            for (i, &v) in vals.iter().enumerate() {
                p.set(i, v);
            }
            for (i, &v) in vals.iter().enumerate() {
                assert_eq!(p.get(i), v, "width {width} item {i}");
            }
        }
    }

    #[test]
    fn sizes_follow_the_arithmetic() {
        // 2^16 random fingerprints, dense ids: 8 B fp + 2 B id + 10 tables of
        // (e + 16 bits) entries and a ~0.14 B directory.
        let mut seed = 11u64;
        let items: Vec<(u64, u64)> = (0..1u64 << 16)
            .map(|i| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed ^ (seed >> 29), 5_000_000 + i)
            })
            .collect();
        let idx = RefIndex::build(&Design::paper_k3(10).unwrap(), 3, &items);
        let per = idx.bytes() as f64 / items.len() as f64;
        for (d, e, w) in idx.geometry() {
            assert_eq!(d, 13);
            assert_eq!(w, e + 16);
            assert!(e <= 7);
        }
        assert!(per < 41.0, "{per} B/fp");
        assert_eq!(idx.bytes(), idx.byte_parts().total());
    }
}
