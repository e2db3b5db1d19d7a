//! Batch queries (Manku §3.3, `simcrawl hamming`): tables are built over the
//! (small) query set Q, and the (large) set of existing fingerprints F is
//! scanned in parallel chunks, each fingerprint probing Q's tables. Finds
//! every (q, f) pair within k; the caller prints them.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::design::{Design, TableSpec};

/// Why batch mode refused its input: an unreadable or malformed fingerprint
/// file, or options out of range.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A fingerprint file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A fingerprint file is not UTF-8 text.
    #[error("{path}: not UTF-8 text: {source}")]
    NotText {
        /// The file.
        path: PathBuf,
        /// Where the bytes stop being UTF-8.
        source: std::string::FromUtf8Error,
    },
    /// A line of a fingerprint file is not 16 hex digits.
    #[error("{path}:{line}: expected 16 hex digits, got {got:?}")]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The line's first 40 characters.
        got: String,
    },
    /// The distance threshold is beyond 32.
    #[error("-k {0}: expected 0..=32")]
    BadK(u32),
    /// A design of zero tables was asked for.
    #[error("--tables 0: expected at least 1")]
    NoTables,
}

/// Fingerprints of F per rayon task. Each task partitions its chunk once per
/// table; larger chunks read each cache line of Q's tables for more probes.
const CHUNK: usize = 1 << 20;

/// Target bytes of query keys per partition: a partition's slice of a table
/// (keys and directory) stays in L1/L2 while its fingerprints probe it.
const SLICE_BYTES: usize = 32 << 10;

/// Most partition bits (fan-out of the scatter pass).
const MAX_PART_BITS: u32 = 12;

/// Zero keys after a table's last key, so a fixed three-vector compare may
/// read past the end of any bucket.
const KEY_PAD: usize = 24;

/// One table over the distinct queries: the query values themselves (not
/// permuted), grouped by `bucket`, `bits` bits of the table's prefix, with a
/// directory of `2^bits + 1` offsets and the slot of each value (its index
/// among the distinct queries) alongside.
struct QTable {
    /// The prefix bits the bucket is made of: the `bits` highest of the
    /// table's prefix mask. `bucket(x)` = pext(x, sel).
    sel: u64,
    /// `pext(x, sel)` without BMI2: `Σ ((x >> src) & mask) << dst`.
    moves: Vec<(u32, u64, u32)>,
    bits: u32,
    /// `bucket >> part_shift` is the partition of a probe.
    part_shift: u32,
    dir: Vec<u32>,
    /// The keys, then [`KEY_PAD`] zeros.
    keys: Vec<u64>,
    slots: Vec<u32>,
}

impl QTable {
    /// The table of `spec` over distinct `values` (slot = position).
    fn build(spec: &TableSpec, values: &[u64]) -> QTable {
        let n = values.len();
        let log2 = usize::BITS - 1 - n.max(1).leading_zeros();
        // About 4 to 8 queries per bucket, never beyond the prefix.
        let bits = log2.saturating_sub(2).min(spec.prefix()).min(24);
        let mut sel = 0u64;
        let mut m = spec.prefix_mask();
        for _ in 0..bits {
            let top = 1u64 << (63 - m.leading_zeros());
            sel |= top;
            m &= !top;
        }
        let part_bits = (n * 8).div_ceil(SLICE_BYTES).next_power_of_two().trailing_zeros();
        let part_bits = part_bits.min(bits).min(MAX_PART_BITS);
        let mut t = QTable {
            sel,
            moves: pext_moves(sel),
            bits,
            part_shift: bits - part_bits,
            dir: vec![0u32; (1usize << bits) + 1],
            keys: vec![0u64; n + KEY_PAD],
            slots: vec![0u32; n],
        };
        for &v in values {
            let b = t.bucket::<false>(v);
            t.dir[b + 1] += 1;
        }
        for b in 1..t.dir.len() {
            t.dir[b] += t.dir[b - 1];
        }
        let mut at: Vec<u32> = t.dir[..t.dir.len() - 1].to_vec();
        for (slot, &v) in values.iter().enumerate() {
            let b = t.bucket::<false>(v);
            let p = at[b] as usize;
            t.keys[p] = v;
            t.slots[p] = slot as u32;
            at[b] += 1;
        }
        t
    }

    /// The bucket of `x`. `PEXT`: one BMI2 instruction (only from
    /// [`QTables::probe_chunk_avx512`], which checks the CPU has it).
    #[inline(always)]
    fn bucket<const PEXT: bool>(&self, x: u64) -> usize {
        #[cfg(target_arch = "x86_64")]
        if PEXT {
            // SAFETY: PEXT is only set where the CPU has BMI2.
            return unsafe { std::arch::x86_64::_pext_u64(x, self.sel) } as usize;
        }
        let mut b = 0u64;
        for &(src, mask, dst) in &self.moves {
            b |= ((x >> src) & mask) << dst;
        }
        b as usize
    }
}

/// `pext(x, sel)` as shift-and-mask moves, one per run of contiguous set
/// bits of `sel` (the low run lands lowest).
fn pext_moves(sel: u64) -> Vec<(u32, u64, u32)> {
    let mut moves = Vec::new();
    let (mut rest, mut dst) = (sel, 0u32);
    while rest != 0 {
        let src = rest.trailing_zeros();
        let len = (rest >> src).trailing_ones();
        let mask = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
        moves.push((src, mask, dst));
        dst += len;
        rest &= !(mask << src);
    }
    moves
}

/// Batch mode's tables over the distinct queries, one per table of the design.
struct QTables {
    tables: Vec<QTable>,
    /// Prefix masks (original bits) of the design's tables, in order.
    masks: Vec<u64>,
    k: u32,
}

/// Per-task scratch space for partitioning a chunk.
#[derive(Default)]
struct Scratch {
    counts: Vec<u32>,
    fs: Vec<u64>,
    idx: Vec<u32>,
}

impl QTables {
    fn new(design: &Design, k: u32, values: &[u64]) -> QTables {
        QTables {
            tables: design.specs().par_iter().map(|s| QTable::build(s, values)).collect(),
            masks: design.specs().iter().map(|s| s.prefix_mask()).collect(),
            k,
        }
    }

    /// Calls `emit(index in fs, slot, distance)` for every query within k of
    /// each fingerprint of `fs`, once per pair. Per table, the chunk is
    /// partitioned on the top bits of its bucket (one counting pass, one
    /// scatter), so each partition's probes stay in a small slice of the table.
    #[inline(always)]
    fn probe_chunk<const WIDE: bool>(&self, fs: &[u64], s: &mut Scratch, mut emit: impl FnMut(usize, u32, u32)) {
        for (i, t) in self.tables.iter().enumerate() {
            if t.slots.is_empty() {
                continue;
            }
            if t.part_shift == t.bits {
                for (j, &f) in fs.iter().enumerate() {
                    self.probe::<WIDE>(i, t, f, j as u32, &mut emit);
                }
                continue;
            }
            let parts = 1usize << (t.bits - t.part_shift);
            s.counts.clear();
            s.counts.resize(parts, 0);
            for &f in fs {
                s.counts[t.bucket::<WIDE>(f) >> t.part_shift] += 1;
            }
            let mut at = 0u32;
            for c in s.counts.iter_mut() {
                let n = *c;
                *c = at;
                at += n;
            }
            s.fs.resize(fs.len(), 0);
            s.idx.resize(fs.len(), 0);
            for (j, &f) in fs.iter().enumerate() {
                let p = t.bucket::<WIDE>(f) >> t.part_shift;
                let at = s.counts[p] as usize;
                s.fs[at] = f;
                s.idx[at] = j as u32;
                s.counts[p] += 1;
            }
            for (&f, &j) in s.fs.iter().zip(&s.idx) {
                self.probe::<WIDE>(i, t, f, j, &mut emit);
            }
        }
    }

    /// Compares `f` with every query in its bucket of table `i`; emits those
    /// within k for which table i is the first whose prefix they share with f.
    /// `WIDE`: eight queries per step with AVX-512 (only from
    /// [`QTables::probe_chunk_avx512`]).
    #[inline(always)]
    fn probe<const WIDE: bool>(&self, i: usize, t: &QTable, f: u64, j: u32, emit: &mut impl FnMut(usize, u32, u32)) {
        let b = t.bucket::<WIDE>(f);
        let (lo, hi) = (t.dir[b] as usize, t.dir[b + 1] as usize);
        let keys = &t.keys[lo..hi];
        #[cfg(target_arch = "x86_64")]
        if WIDE {
            let mut emit_hits = |base: usize, mut hits: u64| {
                while hits != 0 {
                    let p = base + hits.trailing_zeros() as usize;
                    hits &= hits - 1;
                    let x = f ^ keys[p];
                    self.owned(i, t, x, lo + p, j, x.count_ones(), emit);
                }
            };
            if keys.len() <= KEY_PAD {
                // Most buckets: three fixed compares, no loop to mispredict.
                // SAFETY: WIDE is only set by probe_chunk_avx512 (the CPU has
                // AVX-512 F and BW); lo + 24 <= keys.len() thanks to KEY_PAD.
                let hits = unsafe { wide::near24(t.keys.as_ptr().add(lo), f, self.k) };
                emit_hits(0, hits & ((1u64 << keys.len()) - 1));
            } else {
                for (c, block) in keys.chunks(64).enumerate() {
                    // SAFETY: as above.
                    emit_hits(c * 64, unsafe { wide::near(block, f, self.k) });
                }
            }
            return;
        }
        for (p, &q) in keys.iter().enumerate() {
            let x = f ^ q;
            let d = x.count_ones();
            if d <= self.k {
                self.owned(i, t, x, lo + p, j, d, emit);
            }
        }
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn owned(&self, i: usize, t: &QTable, x: u64, p: usize, j: u32, d: u32, emit: &mut impl FnMut(usize, u32, u32)) {
        if self.masks.iter().position(|&m| x & m == 0) == Some(i) {
            emit(j as usize, t.slots[p], d);
        }
    }

    /// [`QTables::probe_chunk`] compiled for the CPU: AVX-512 compares of
    /// eight queries at a time when it has AVX-512 F and BW, else with the
    /// popcnt instruction when it has it.
    fn probe_chunk_fast(&self, fs: &[u64], s: &mut Scratch, emit: impl FnMut(usize, u32, u32)) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU has AVX-512 F and BW, BMI2 and popcnt.
                return unsafe { self.probe_chunk_avx512(fs, s, emit) };
            }
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has the popcnt instruction.
                return unsafe { self.probe_chunk_popcnt(fs, s, emit) };
            }
        }
        self.probe_chunk::<false>(fs, s, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn probe_chunk_popcnt(&self, fs: &[u64], s: &mut Scratch, emit: impl FnMut(usize, u32, u32)) {
        self.probe_chunk::<false>(fs, s, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,bmi2,popcnt")]
    fn probe_chunk_avx512(&self, fs: &[u64], s: &mut Scratch, emit: impl FnMut(usize, u32, u32)) {
        self.probe_chunk::<true>(fs, s, emit)
    }
}

/// Eight-at-a-time distance filter (AVX-512 F + BW; the CPUs this crate runs
/// batch mode on lack the VPOPCNTQ extension, so the popcount is the nibble
/// table lookup).
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;

    /// Bit p set iff `(*keys.add(p) ^ f).count_ones() <= k`, p < 24.
    ///
    /// # Safety
    /// `keys..keys + 24` must be readable.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn near24(keys: *const u64, f: u64, k: u32) -> u64 {
        let fv = _mm512_set1_epi64(f as i64);
        let kv = _mm512_set1_epi64(i64::from(k));
        let mut hits = 0u64;
        for v in 0..3 {
            // SAFETY: keys + 8v .. keys + 8v + 8 is readable (the caller's promise).
            let x = unsafe { _mm512_loadu_si512(keys.add(8 * v) as *const _) };
            let d = popcounts(_mm512_xor_si512(x, fv));
            hits |= u64::from(_mm512_cmple_epu64_mask(d, kv)) << (8 * v);
        }
        hits
    }

    /// The popcount of each 64-bit lane (nibble table lookups and a sum of
    /// bytes).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn popcounts(x: __m512i) -> __m512i {
        let nib = _mm512_set1_epi8(0x0f);
        let lut = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4));
        let lo = _mm512_and_si512(x, nib);
        let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(x), nib);
        let bytes = _mm512_add_epi8(_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi));
        _mm512_sad_epu8(bytes, _mm512_setzero_si512())
    }

    /// Bit p set iff `(keys[p] ^ f).count_ones() <= k`, for the first 64
    /// keys (a bucket holds about 4 to 16; the caller splits longer ones).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn near(keys: &[u64], f: u64, k: u32) -> u64 {
        let fv = _mm512_set1_epi64(f as i64);
        let kv = _mm512_set1_epi64(i64::from(k));
        let mut hits = 0u64;
        let mut p = 0;
        while p < keys.len() && p < 64 {
            let n = keys.len() - p;
            let lanes: __mmask8 = if n >= 8 { 0xff } else { (1u8 << n) - 1 };
            // SAFETY: the lanes loaded are keys[p..p + min(n, 8)], in bounds;
            // masked-off lanes are not read.
            let v = unsafe { _mm512_maskz_loadu_epi64(lanes, keys.as_ptr().add(p) as *const i64) };
            let d = popcounts(_mm512_xor_si512(v, fv));
            let m = _mm512_mask_cmple_epu64_mask(lanes, d, kv);
            hits |= u64::from(m) << p;
            p += 8;
        }
        hits
    }
}

/// Every `(q_index, f_index, distance)` with `distance(queries[q], fingerprints[f]) <= k`,
/// 0-based, sorted by q then f. `tables` picks a design with at most that many
/// tables ([`Design::with_tables`]); by default one chosen by |Q| ([`Design::for_k`]).
pub fn run(fingerprints: &[u64], queries: &[u64], k: u32, tables: Option<usize>) -> Vec<(usize, usize, u32)> {
    let design = design_for(queries.len(), k, tables);
    // Distinct queries in the tables; repeated query values resolved afterwards.
    let mut order: Vec<(u64, u64)> = queries.iter().enumerate().map(|(i, &q)| (q, i as u64)).collect();
    order.par_sort_unstable();
    let mut distinct: Vec<u64> = Vec::new();
    // For each distinct value, the range of `order` holding its query indices.
    let mut first_of: Vec<usize> = Vec::new();
    for (i, &(q, _)) in order.iter().enumerate() {
        if distinct.last() != Some(&q) {
            distinct.push(q);
            first_of.push(i);
        }
    }
    first_of.push(order.len());
    let qt = QTables::new(&design, k, &distinct);
    let mut out: Vec<(usize, usize, u32)> = fingerprints
        .par_chunks(CHUNK)
        .enumerate()
        .map_init(Scratch::default, |s, (c, chunk)| {
            let mut found = Vec::new();
            qt.probe_chunk_fast(chunk, s, |fi, slot, d| {
                let slot = slot as usize;
                for &(_, qi) in &order[first_of[slot]..first_of[slot + 1]] {
                    found.push((qi as usize, c * CHUNK + fi, d));
                }
            });
            found
        })
        .flatten_iter()
        .collect();
    out.par_sort_unstable();
    out
}

/// The design batch mode uses for `n` queries.
pub fn design_for(n: usize, k: u32, tables: Option<usize>) -> Design {
    match tables {
        Some(t) => Design::with_tables(k, t),
        None => {
            // One size smaller than X(f, k, d) picks for the crawl: a probe
            // expects up to 16 queries, not 8, and the fewer tables over Q stay
            // in cache while F streams past (4 tables instead of 10 at |Q| = 1M).
            let log2 = usize::BITS - n.max(1).leading_zeros();
            Design::for_k(k, log2.saturating_sub(1).max(10))
        }
    }
}

/// Parses one fingerprint line: exactly 16 hex digits (surrounding
/// whitespace ignored).
pub fn parse_line(line: &str) -> Option<u64> {
    let t = line.trim();
    if t.len() != 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(t, 16).ok()
}

/// Reads a fingerprint file (16 hex digits per line). A bad line is an
/// [`IndexError::BadLine`] naming the file and the 1-based line number.
pub fn read_fingerprints(path: impl AsRef<Path>) -> Result<Vec<u64>, IndexError> {
    let path = path.as_ref();
    let text = std::fs::read(path).map_err(|source| IndexError::Read {
        path: path.into(),
        source,
    })?;
    let text = String::from_utf8(text).map_err(|source| IndexError::NotText {
        path: path.into(),
        source,
    })?;
    let mut out = Vec::with_capacity(text.len() / 17);
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Some(v) => out.push(v),
            None => {
                return Err(IndexError::BadLine {
                    path: path.into(),
                    line: i + 1,
                    got: line.chars().take(40).collect(),
                });
            }
        }
    }
    Ok(out)
}

/// Checks the options of a batch search ([`run`]): k at most 32 and, if
/// given, at least one table.
pub fn check_options(k: u32, tables: Option<usize>) -> Result<(), IndexError> {
    if k > 32 {
        return Err(IndexError::BadK(k));
    }
    if tables == Some(0) {
        return Err(IndexError::NoTables);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(f: &[u64], q: &[u64], k: u32) -> Vec<(usize, usize, u32)> {
        let mut v = Vec::new();
        for (qi, &a) in q.iter().enumerate() {
            for (fi, &b) in f.iter().enumerate() {
                let d = (a ^ b).count_ones();
                if d <= k {
                    v.push((qi, fi, d));
                }
            }
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn batch_equals_brute_force(
            k in 0u32..=5,
            tables in proptest::option::of(1usize..12),
            q in proptest::collection::vec(any::<u64>(), 0..30),
            f in proptest::collection::vec((any::<u64>(), 0usize..30, any::<u64>()), 0..200),
        ) {
            // Half the stored fingerprints are planted neighbours of queries.
            let f: Vec<u64> = f.into_iter().map(|(r, pick, noise)| {
                if q.is_empty() || r % 2 == 0 { r } else {
                    let mut x = q[pick % q.len()];
                    for s in 0..(noise % (k as u64 + 3)) { x ^= 1 << ((noise >> (8 * s + 8)) & 63); }
                    x
                }
            }).collect();
            let mut q2 = q.clone();
            if let Some(&first) = q.first() { q2.push(first); } // a repeated query
            prop_assert_eq!(run(&f, &q2, k, tables), brute(&f, &q2, k));
        }
    }

    /// Every pair of one chunk through the scalar path and, where the CPU
    /// has it, the AVX-512 path: `(f index, slot, distance)`, sorted.
    fn chunk_pairs(qt: &QTables, fs: &[u64], wide: bool) -> Vec<(usize, u32, u32)> {
        let mut v = Vec::new();
        let mut s = Scratch::default();
        if wide {
            qt.probe_chunk_fast(fs, &mut s, |j, slot, d| v.push((j, slot, d)));
        } else {
            qt.probe_chunk::<false>(fs, &mut s, |j, slot, d| v.push((j, slot, d)));
        }
        v.sort_unstable();
        v
    }

    /// Queries crowded into few buckets (longer than the 24-key fast path and
    /// than one 64-key block), partitioned tables (|Q| > 4096), duplicate
    /// queries and fingerprints, several k and designs: both probe paths
    /// equal brute force.
    #[test]
    fn crowded_buckets_and_partitions_equal_brute_force() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (k, tables) in [(3, None), (3, Some(10)), (2, Some(3)), (4, None), (1, Some(2))] {
            // 6000 queries: every 3rd random, the rest share their top 40
            // bits with one of two seeds (so most tables' buckets crowd).
            let seeds = [next(), next()];
            let mut q: Vec<u64> = (0..6000u64)
                .map(|i| {
                    if i % 3 == 0 {
                        next()
                    } else {
                        (seeds[(i % 2) as usize] & !0xFF_FFFF) | (next() & 0xFF_FFFF)
                    }
                })
                .collect();
            q.extend_from_within(..50); // repeated queries
            let mut f: Vec<u64> = (0..3000)
                .map(|i| {
                    let mut v = q[(next() % q.len() as u64) as usize];
                    for _ in 0..(i % (k as usize + 3)) {
                        v ^= 1 << (next() % 64);
                    }
                    if i % 5 == 0 {
                        next()
                    } else {
                        v
                    }
                })
                .collect();
            f.extend_from_within(..40); // repeated fingerprints
            let want = brute(&f, &q, k);
            assert!(want.len() > 1000, "planted neighbours: {}", want.len());
            assert_eq!(run(&f, &q, k, tables), want, "k={k} tables={tables:?}");
            // Both paths on the distinct queries.
            let mut distinct = q.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let qt = QTables::new(&design_for(distinct.len(), k, tables), k, &distinct);
            assert!(
                qt.tables.iter().any(|t| t.part_shift < t.bits),
                "some table is partitioned"
            );
            assert!(
                qt.tables.iter().any(|t| t.dir.windows(2).any(|w| w[1] - w[0] > 64)),
                "some bucket is longer than 64"
            );
            let scalar = chunk_pairs(&qt, &f, false);
            assert_eq!(chunk_pairs(&qt, &f, true), scalar);
            let mut by_value: Vec<(usize, u32, u32)> = Vec::new();
            for (fi, &fv) in f.iter().enumerate() {
                for (slot, &qv) in distinct.iter().enumerate() {
                    let d = (fv ^ qv).count_ones();
                    if d <= k {
                        by_value.push((fi, slot as u32, d));
                    }
                }
            }
            assert_eq!(scalar, by_value);
        }
    }

    #[test]
    fn pext_moves_gather_the_selected_bits() {
        for sel in [
            0u64,
            1,
            0xFFFF_0000_0000_0000,
            0x8000_0000_0000_0001,
            0x0F0F_00FF_F000_0003,
            u64::MAX,
        ] {
            let moves = pext_moves(sel);
            for x in [0u64, u64::MAX, 0x0123_4567_89AB_CDEF, 0xDEAD_BEEF_F00D_CAFE] {
                let mut want = 0u64;
                let mut out = 0;
                for b in 0..64 {
                    if sel >> b & 1 == 1 {
                        want |= (x >> b & 1) << out;
                        out += 1;
                    }
                }
                let got = moves.iter().fold(0u64, |a, &(src, m, dst)| a | ((x >> src) & m) << dst);
                assert_eq!(got, want, "sel={sel:#x} x={x:#x}");
            }
        }
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, "0000000000000000\nffffffffffffffff\n12345\n").unwrap();
        let e = read_fingerprints(&p).unwrap_err().to_string();
        assert!(e.ends_with("f.txt:3: expected 16 hex digits, got \"12345\""), "{e}");
        assert!(matches!(
            read_fingerprints(dir.path().join("missing.txt")),
            Err(IndexError::Read { .. })
        ));
        assert!(parse_line("g000000000000000").is_none());
        assert!(parse_line("+00000000000000f").is_none());
        assert_eq!(parse_line(" 00000000000000Ff "), Some(255));
    }

    #[test]
    fn options_out_of_range_are_refused() {
        assert_eq!(
            check_options(33, None).unwrap_err().to_string(),
            "-k 33: expected 0..=32"
        );
        assert_eq!(
            check_options(3, Some(0)).unwrap_err().to_string(),
            "--tables 0: expected at least 1"
        );
        assert!(check_options(32, Some(1)).is_ok() && check_options(0, None).is_ok());
    }
}
