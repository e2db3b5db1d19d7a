//! Live permuted tables (Manku §3.1): the index the crawl engine asks "is
//! there a stored fingerprint within k of this page's simhash?" while it keeps
//! inserting the fingerprints of new pages.
//!
//! # Layout
//!
//! A [`LiveIndex`] is three layers, each holding the same t tables:
//!
//! - the **main run** ([`Run`], immutable, shared by `Arc`): per table the
//!   sorted *permuted, distinct* fingerprints in value-addressed 64-byte
//!   lines ([`Table`]): key k is in line `(k · m) >> 64` of m ≈ n / 8 lines,
//!   so a probe computes its line and reads it (no directory, no dependent
//!   second read). A line holds 10 keys as their low 48 bits (the top 16 are
//!   H or H + 1, kept in the line's 4-byte header with a carry mask) when
//!   m ≥ 2^16, else 7 full keys; the keys of a crowded line beyond its slots
//!   go to a per-table overflow array that its last slot points at, read
//!   only when the query's prefix range reaches past the line's last inline
//!   key. About 8.5 bytes per entry. Table 0 also keeps, per line, the rank
//!   of its first key, and the page id of each fingerprint in sorted order
//!   (8 bytes). A match found in table i > 0 gets its id by one exact probe
//!   of table 0 — matches are rare, so ids cost 8 bytes per fingerprint once,
//!   not once per table.
//! - at most one **frozen delta** being merged into the main run by a
//!   background thread;
//! - the **live delta** ([`Delta`]): fingerprints and ids in insertion order,
//!   and per table a hash of 64-byte bucket lines on the table's prefix bits
//!   (a header word and up to 7 fingerprints inline, spill lines beyond), and
//!   an open-addressing set of its fingerprints for the existence check and
//!   the ids of matches: O(1) insert per table, one cache line per table per
//!   probe, the t lines and the set slot prefetched together so their cache
//!   misses overlap, no allocation except amortized growth.
//!
//! Duplicate fingerprints (many pages with one simhash, e.g. empty pages = 0)
//! are stored once in every table; the other ids go to a side map `extras`,
//! read only when that fingerprint matches. A crowd of equal fingerprints so
//! never lengthens a probe.
//!
//! # Concurrency
//!
//! One `parking_lot::RwLock` guards the layers. `insert` (one writer at a time,
//! the crawl engine's single inserting task) takes the write lock for about a
//! microsecond; `query` takes the read lock for the duration of one query, so
//! many readers run in parallel and every insert is visible to every query that
//! starts after `insert` returns. When the live delta reaches
//! `max(2^16, n / 8)` entries it is frozen (moved, O(1)) and a background
//! thread merges it into a new main run, installed under the write lock.
//!
//! # Exactness
//!
//! A stored fingerprint c is reported by table i only if i is the *first*
//! table whose prefix c shares with the query (`(c ^ q) & mask_j == 0`), so
//! each match is reported once even though several tables see it, and the
//! design's covering property ([`Design::covers`]) guarantees some table sees
//! every c within k. Distances are exact popcounts; nothing beyond k is
//! returned.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rayon::prelude::*;

use super::design::{Design, TableSpec};
use super::persist::{design_hash, Header, SnapReader, SnapWriter, SnapshotError};

/// One answer of a query: a stored fingerprint, one page id it was inserted
/// with, and its Hamming distance from the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// The stored fingerprint.
    pub fp: u64,
    /// The page id it was inserted with (one match per id).
    pub id: u64,
    /// Hamming distance from the query.
    pub distance: u32,
}

/// Keys per line on average when entries are 6 bytes (10 slots per line).
pub(crate) const LOAD: usize = 8;
/// Keys per line on average when entries are 8 bytes (7 slots per line).
const WIDE_LOAD: usize = 5;
/// Inline slots of a line with 6-byte entries.
const NARROW_SLOTS: usize = 10;
/// Inline slots of a line with 8-byte entries.
const WIDE_SLOTS: usize = 7;
/// The low 48 bits: what a 6-byte entry stores.
const LOW48: u64 = (1 << 48) - 1;
/// Header bits: inline count (4 bits), overflow flag, carry mask (10 bits
/// from bit 5), H (16 bits from bit 16).
const H_COUNT: u32 = 0xF;
const H_OVER: u32 = 1 << 4;
const H_CARRY_SHIFT: u32 = 5;
const H_TOP_SHIFT: u32 = 16;

/// One sealed table: the sorted distinct permuted fingerprints of a run in
/// `m` cache lines addressed by value, so a probe reads one line (no
/// directory).
///
/// Key k lives in line `(k · m) >> 64`, which is monotone in k: the lines
/// cut the sorted order into contiguous value ranges of width 2^64 / m, about
/// [`LOAD`] keys each. A 64-byte line holds its first (smallest) keys inline
/// and a `u32` header at bytes 60..64. A line with more keys than slots
/// keeps all but one slot's worth inline; its last slot then holds the index
/// p of its part of the table's overflow array: `over[p]` = c, the count,
/// and `over[p + 1..=p + c]` its remaining keys, ascending, full `u64`s
/// (one dependent read, only when a probe's prefix range reaches past the
/// last inline key).
///
/// When m ≥ 2^16 a line's range is at most 2^48 wide, so its keys have one of
/// two top-16-bit values, H (the first key's) or H + 1: a line keeps 10 keys
/// of 6 bytes (their low 48 bits, at bytes 0, 6, …, 54) and the header keeps
/// H and a 10-bit carry mask (entry e's top 16 bits are H + 1). Smaller
/// tables keep 7 keys of 8 bytes per line. Table 0 also keeps `rank[l]`, the
/// position of line l's first key in the sorted order (for the ids).
#[derive(Debug)]
pub(crate) struct Table {
    /// The lines, `8 · m` words from the 64-byte boundary `off` words in.
    words: Vec<u64>,
    off: usize,
    m: usize,
    /// 6-byte entries (10 slots) rather than 8-byte ones (7 slots).
    narrow: bool,
    /// Per overflowing line, in line order: a count c, then c keys.
    over: Vec<u64>,
    /// Table 0 only (`m + 1`, else empty): position of each line's first key.
    rank: Vec<u32>,
    /// Mask of the table's prefix bits (the top bits of a permuted key).
    pmask: u64,
    len: usize,
}

/// Fills a [`Table`] from permuted keys pushed in ascending order.
pub(crate) struct TableBuilder {
    t: Table,
    /// Line of the previous key (`usize::MAX` before the first).
    cur: usize,
    /// Keys in line `cur` so far, and their top 16 bits' base H.
    cur_n: usize,
    top: u64,
    /// Index in `over` of line `cur`'s count word, and the sixteenths of
    /// the line's range that hold its overflow keys.
    over_at: usize,
    over_mask: u64,
}

impl TableBuilder {
    /// A builder for exactly `n` keys of a table with prefix length `prefix`;
    /// `ranked` keeps the per-line positions (table 0).
    pub(crate) fn new(n: usize, prefix: u32, ranked: bool) -> TableBuilder {
        let (m, narrow) = Table::geometry(n);
        let (words, off) = Table::zeroed_lines(m);
        let mut rank = Vec::new();
        if ranked {
            rank = huge_vec(m + 1);
            rank.resize(m + 1, 0u32);
        }
        TableBuilder {
            t: Table {
                words,
                off,
                m,
                narrow,
                over: Vec::new(),
                rank,
                pmask: prefix_bits(prefix),
                len: 0,
            },
            cur: usize::MAX,
            cur_n: 0,
            top: 0,
            over_at: 0,
            over_mask: 0,
        }
    }

    /// Appends the next key (greater than the previous one).
    #[inline]
    pub(crate) fn push(&mut self, key: u64) {
        let l = self.t.line_of(key);
        if l != self.cur {
            self.cur = l;
            self.cur_n = 0;
            self.top = key >> 48;
        }
        let e = self.cur_n;
        self.cur_n += 1;
        let t = &mut self.t;
        t.len += 1;
        if !t.rank.is_empty() {
            t.rank[l + 1] += 1;
        }
        let slots = t.slots();
        let mut head = Table::head(t.line(l));
        if e < slots {
            t.put_slot(l, e, key);
            if t.narrow {
                if e == 0 {
                    head |= (self.top as u32) << H_TOP_SHIFT;
                } else if key >> 48 != self.top {
                    head |= 1 << (H_CARRY_SHIFT + e as u32);
                }
            }
            head += 1;
        } else {
            if e == slots {
                // The line overflows: its last slot's key moves to the
                // overflow array after a count word, and the slot points there.
                let last = t.key(t.line(l), slots - 1);
                self.over_at = t.over.len();
                self.over_mask = 1 << t.sixteenth(last);
                t.over.push(1);
                t.over.push(last);
                head = ((head - 1) & !(1 << (H_CARRY_SHIFT + slots as u32 - 1))) | H_OVER;
            }
            t.over.push(key);
            t.over[self.over_at] += 1;
            self.over_mask |= 1 << t.sixteenth(key);
            debug_assert!(self.over_at < 1 << 32);
            t.put_slot(l, slots - 1, self.over_at as u64 | self.over_mask << 32);
        }
        t.set_head(l, head);
    }

    /// The finished table.
    pub(crate) fn finish(mut self) -> Table {
        prefix_sums(&mut self.t.rank);
        // Probes read the overflow at random: huge pages for it too.
        let mut over = huge_vec(self.t.over.len());
        over.extend_from_slice(&self.t.over);
        self.t.over = over;
        self.t
    }
}

fn prefix_sums(v: &mut [u32]) {
    for i in 1..v.len() {
        v[i] += v[i - 1];
    }
}

/// The mask of the top `prefix` bits.
fn prefix_bits(prefix: u32) -> u64 {
    if prefix == 0 {
        0
    } else {
        u64::MAX << (64 - prefix.min(64))
    }
}

impl Table {
    /// Lines and entry width of a table of `n` keys: 6-byte entries at
    /// [`LOAD`] keys per line when that gives at least 2^16 lines (so a
    /// line's range is at most 2^48 wide), else 8-byte entries at
    /// [`WIDE_LOAD`].
    fn geometry(n: usize) -> (usize, bool) {
        let m = n.div_ceil(LOAD);
        if m >= 1 << 16 {
            (m, true)
        } else {
            (n.div_ceil(WIDE_LOAD).max(1), false)
        }
    }

    /// `m` zeroed lines and the word offset of the first 64-byte boundary.
    fn zeroed_lines(m: usize) -> (Vec<u64>, usize) {
        let mut v: Vec<u64> = huge_vec(8 * m + 8);
        v.resize(8 * m + 8, 0);
        let p = v.as_ptr() as usize;
        (v, (p.next_multiple_of(64) - p) / 8)
    }

    #[inline(always)]
    fn slots(&self) -> usize {
        if self.narrow {
            NARROW_SLOTS
        } else {
            WIDE_SLOTS
        }
    }

    /// The line of permuted key `k`.
    #[inline(always)]
    fn line_of(&self, k: u64) -> usize {
        ((k as u128 * self.m as u128) >> 64) as usize
    }

    /// Line `l` (l < m) as 8 words.
    #[inline(always)]
    fn line(&self, l: usize) -> &[u64; 8] {
        let at = self.off + 8 * l;
        self.words[at..at + 8].try_into().expect("8 words")
    }

    #[inline(always)]
    fn head(line: &[u64; 8]) -> u32 {
        (line[7] >> 32) as u32
    }

    /// Inline entry `e` of a line as a full key.
    #[inline(always)]
    fn key(&self, line: &[u64; 8], e: usize) -> u64 {
        if self.narrow {
            let h = Self::head(line);
            let carry = (h >> (H_CARRY_SHIFT + e as u32)) & 1;
            let top = ((h >> H_TOP_SHIFT) + carry) as u64;
            (top << 48) | (Self::raw6(line, e) & LOW48)
        } else {
            line[e]
        }
    }

    /// The 8 bytes at byte 6e of a line (e ≤ 9, so inside it).
    #[inline(always)]
    fn raw6(line: &[u64; 8], e: usize) -> u64 {
        debug_assert!(e < NARROW_SLOTS);
        // SAFETY: 6e + 8 ≤ 62 < 64, inside the 64-byte array.
        u64::from_le(unsafe { (line.as_ptr() as *const u8).add(6 * e).cast::<u64>().read_unaligned() })
    }

    /// Writes `v` into slot `e` of line `l` (6 or 8 bytes), header untouched.
    fn put_slot(&mut self, l: usize, e: usize, v: u64) {
        let at = self.off + 8 * l;
        let line: &mut [u64; 8] = (&mut self.words[at..at + 8]).try_into().expect("8 words");
        if self.narrow {
            // The 6 low bytes at byte 6e: the line is little-endian words,
            // as the probe reads them.
            let le = v.to_le_bytes();
            assert!(e < NARROW_SLOTS);
            // SAFETY: 6e + 6 ≤ 60 bytes, inside the 64-byte line.
            unsafe { std::ptr::copy_nonoverlapping(le.as_ptr(), (line.as_mut_ptr() as *mut u8).add(6 * e), 6) };
        } else {
            line[e] = v;
        }
    }

    fn set_head(&mut self, l: usize, h: u32) {
        let w = &mut self.words[self.off + 8 * l + 7];
        *w = (*w & 0xFFFF_FFFF) | (h as u64) << 32;
    }

    /// Line `l`'s overflow keys (empty unless its header's flag is set).
    #[inline(always)]
    fn overflow(&self, l: usize) -> &[u64] {
        let line = self.line(l);
        if Self::head(line) & H_OVER == 0 {
            return &[];
        }
        let p = self.over_at(line);
        let c = self.over[p] as usize;
        &self.over[p + 1..p + 1 + c]
    }

    /// The last slot of an overflowing line: the index of its overflow
    /// part (low 32 bits) and the mask of the sixteenths of the line's range
    /// holding overflow keys (next 16 bits).
    #[inline(always)]
    fn over_slot(&self, line: &[u64; 8]) -> u64 {
        if self.narrow {
            Self::raw6(line, NARROW_SLOTS - 1) & LOW48
        } else {
            line[WIDE_SLOTS - 1]
        }
    }

    /// The overflow index of an overflowing line.
    #[inline(always)]
    fn over_at(&self, line: &[u64; 8]) -> usize {
        (self.over_slot(line) & 0xFFFF_FFFF) as usize
    }

    /// Which sixteenth of its line's value range key `k` is in.
    #[inline(always)]
    fn sixteenth(&self, k: u64) -> u32 {
        (((k as u128 * self.m as u128) >> 60) as u32) & 15
    }

    /// Whether a probe for `pq` must read line `l`'s overflow keys: the line
    /// has some, in a sixteenth of its range that the prefix range of `pq`
    /// overlaps, and the prefix range reaches past the last inline key.
    #[inline(always)]
    fn reads_overflow(&self, line: &[u64; 8], l: usize, pq: u64) -> bool {
        let h = Self::head(line);
        if h & H_OVER == 0 {
            return false;
        }
        let (lo, hi) = (pq & self.pmask, pq | !self.pmask);
        let count = (h & H_COUNT) as usize;
        if count == 0 || hi <= self.key(line, count - 1) {
            return false;
        }
        let s0 = if self.line_of(lo) < l { 0 } else { self.sixteenth(lo) };
        let s1 = if self.line_of(hi) > l { 15 } else { self.sixteenth(hi) };
        let span = (0xFFFFu64 >> (15 - s1)) & (0xFFFFu64 << s0);
        (self.over_slot(line) >> 32) & span != 0
    }

    /// Position of the permuted key `pk`, if stored.
    #[inline]
    fn find(&self, pk: u64) -> Option<usize> {
        let l = self.line_of(pk);
        let line = self.line(l);
        let h = Self::head(line);
        let count = (h & H_COUNT) as usize;
        let rank = self.rank.get(l).map_or(0, |&r| r as usize);
        if let Some(e) = (0..count).find(|&e| self.key(line, e) == pk) {
            return Some(rank + e);
        }
        if h & H_OVER != 0 {
            if let Ok(j) = self.overflow(l).binary_search(&pk) {
                return Some(rank + count + j);
            }
        }
        None
    }

    /// Every key in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.m).flat_map(move |l| {
            let line = self.line(l);
            let count = (Self::head(line) & H_COUNT) as usize;
            (0..count)
                .map(move |e| self.key(line, e))
                .chain(self.overflow(l).iter().copied())
        })
    }

    /// The first and last line holding keys of `pq`'s prefix range.
    #[inline(always)]
    fn lines_of(&self, pq: u64) -> (usize, usize) {
        (self.line_of(pq & self.pmask), self.line_of(pq | !self.pmask))
    }

    /// Prefetches the lines a probe for `pq` reads (at most 4).
    #[inline(always)]
    fn prefetch_lines(&self, pq: u64) {
        let (a, b) = self.lines_of(pq);
        let p = self.words.as_ptr().wrapping_add(self.off);
        for l in a..=b.min(a + 3) {
            prefetch(p.wrapping_add(8 * l));
        }
    }

    /// Calls `hit(key, position in this table, distance)` for every entry
    /// within `k` of `pq` in the lines of `pq`'s prefix range (position
    /// meaningful only with ranks); overflow keys are read only when the
    /// range reaches past the line's last inline key, and only those in the
    /// range. Returns the entries examined.
    #[inline(always)]
    fn scan(&self, pq: u64, k: u32, mut hit: impl FnMut(u64, usize, u32)) -> usize {
        let (a, b) = self.lines_of(pq);
        let mut examined = 0;
        for l in a..=b {
            let line = self.line(l);
            let h = Self::head(line);
            let count = (h & H_COUNT) as usize;
            examined += count;
            let rank = || self.rank.get(l).map_or(0, |&r| r as usize);
            if self.narrow {
                let top = (h >> H_TOP_SHIFT) as u64;
                for e in 0..count.min(NARROW_SLOTS) {
                    let raw = Self::raw6(line, e);
                    if ((raw ^ pq) & LOW48).count_ones() <= k {
                        let carry = ((h >> (H_CARRY_SHIFT + e as u32)) & 1) as u64;
                        let key = ((top + carry) << 48) | (raw & LOW48);
                        let d = (key ^ pq).count_ones();
                        if d <= k {
                            hit(key, rank() + e, d);
                        }
                    }
                }
            } else {
                for (e, &key) in line[..count.min(WIDE_SLOTS)].iter().enumerate() {
                    let d = (key ^ pq).count_ones();
                    if d <= k {
                        hit(key, rank() + e, d);
                    }
                }
            }
            if h & H_OVER != 0 && self.reads_overflow(line, l, pq) {
                examined += self.scan_overflow(l, pq, k, count, &mut hit);
            }
        }
        examined
    }

    /// The overflow part of [`Table::scan`] (rare: a crowded line and a
    /// range past its inline keys).
    #[inline(never)]
    fn scan_overflow(&self, l: usize, pq: u64, k: u32, count: usize, hit: &mut impl FnMut(u64, usize, u32)) -> usize {
        let (lo, hi) = (pq & self.pmask, pq | !self.pmask);
        let ov = self.overflow(l);
        let from = if ov.len() > 16 {
            ov.partition_point(|&c| c < lo)
        } else {
            0
        };
        let rank = self.rank.get(l).map_or(0, |&r| r as usize) + count;
        let mut examined = 0;
        for (j, &key) in ov.iter().enumerate().skip(from) {
            if key > hi {
                break;
            }
            examined += 1;
            let d = (key ^ pq).count_ones();
            if d <= k {
                hit(key, rank + j, d);
            }
        }
        examined
    }

    fn bytes(&self) -> usize {
        self.words.capacity() * 8 + self.over.capacity() * 8 + self.rank.capacity() * 4
    }

    /// Distinct cache lines a probe for `pq` reads: the lines of its prefix
    /// range and, when it reads overflow keys, their lines.
    fn lines_touched(&self, pq: u64) -> usize {
        let (a, b) = self.lines_of(pq);
        let mut n = b - a + 1;
        for l in a..=b {
            if self.reads_overflow(self.line(l), l, pq) {
                let ov = self.overflow(l);
                let p = ov.as_ptr() as usize - 8;
                n += (p + 8 * ov.len()) / 64 - p / 64 + 1;
            }
        }
        n
    }

    /// Fraction of lines with overflow keys and of probes for `pqs` that
    /// read them.
    fn overflow_rates(&self, pqs: impl Iterator<Item = u64>) -> (f64, f64) {
        let lines = (0..self.m).filter(|&l| Self::head(self.line(l)) & H_OVER != 0).count();
        let (mut probes, mut read) = (0usize, 0usize);
        for pq in pqs {
            probes += 1;
            let (a, b) = self.lines_of(pq);
            read += usize::from((a..=b).any(|l| self.reads_overflow(self.line(l), l, pq)));
        }
        (lines as f64 / self.m as f64, read as f64 / probes.max(1) as f64)
    }

    fn write(&self, w: &mut SnapWriter) -> Result<(), SnapshotError> {
        w.u64(self.m as u64)?;
        w.u32(u32::from(self.narrow))?;
        w.u32(u32::from(!self.rank.is_empty()))?;
        w.u64(self.over.len() as u64)?;
        w.u64s(self.words[self.off..self.off + 8 * self.m].iter().copied())?;
        w.u32s(&self.rank)?;
        w.u64s(self.over.iter().copied())
    }

    /// Reads a table of `n` entries, checking its geometry and every line
    /// header so that no probe of a damaged file can index out of bounds.
    fn read(r: &mut SnapReader, n: usize, prefix: u32, ranked: bool) -> Result<Table, SnapshotError> {
        let m = r.u64()?;
        let narrow = r.u32()?;
        let has_rank = r.u32()?;
        let over_len = r.u64()?;
        let (want_m, want_narrow) = Table::geometry(n);
        if m != want_m as u64 || narrow != u32::from(want_narrow) || has_rank != u32::from(ranked) {
            return Err(r.corrupt(format!("table geometry m={m} narrow={narrow} ranked={has_rank}")));
        }
        if over_len > 2 * n as u64 || over_len > u32::MAX as u64 || n > u32::MAX as usize {
            return Err(r.corrupt("table overflow larger than its entry count"));
        }
        let m = want_m;
        r.has(8 * 8 * m as u64 + 4 * (m as u64 + 1) * u64::from(ranked) + 8 * over_len)?;
        let (mut words, off) = Table::zeroed_lines(m);
        let mut at = off;
        r.u64s(8 * m as u64, |x| {
            words[at] = x;
            at += 1;
        })?;
        let mut rank = Vec::new();
        if ranked {
            rank = huge_vec(m + 1);
            r.u32s(&mut rank, m + 1)?;
        }
        let mut over = huge_vec(over_len as usize);
        r.u64s(over_len, |x| over.push(x))?;
        let t = Table {
            words,
            off,
            m,
            narrow: want_narrow,
            over,
            rank,
            pmask: prefix_bits(prefix),
            len: n,
        };
        t.check().map_err(|what| r.corrupt(what))?;
        Ok(t)
    }

    /// Whether the line headers, overflow pointers and counts and the ranks
    /// are consistent with each other and the entry count (what indexing
    /// relies on).
    fn check(&self) -> Result<(), String> {
        let m = self.m;
        if !self.rank.is_empty() && (self.rank[0] != 0 || self.rank[m] as usize != self.len) {
            return Err("table ranks do not span its entries".into());
        }
        let slots = self.slots() as u32;
        let (mut total, mut next) = (0usize, 0usize);
        for l in 0..m {
            let line = self.line(l);
            let h = Self::head(line);
            let count = h & H_COUNT;
            let carry = (h >> H_CARRY_SHIFT) & 0x3FF;
            let mut bad = count > slots || carry >> count != 0 || (!self.narrow && h >> H_CARRY_SHIFT != 0);
            let mut spilled = 0usize;
            if h & H_OVER != 0 {
                // Overflow parts tile `over` in line order.
                let p = self.over_at(line);
                let c = self.over.get(p).map_or(0, |&c| c as usize);
                bad |= count != slots - 1 || p != next || c < 2 || c > self.over.len() - p - 1;
                spilled = c;
                next = p + 1 + c;
            }
            bad = bad
                || (!self.rank.is_empty()
                    && self.rank[l + 1].checked_sub(self.rank[l]).map(u64::from)
                        != Some(u64::from(count) + spilled as u64));
            if bad {
                return Err(format!("table line {l} header {h:#x} or overflow is inconsistent"));
            }
            total += count as usize + spilled;
        }
        if total != self.len || next != self.over.len() {
            return Err("table lines do not hold its entry count".into());
        }
        Ok(())
    }
}

/// A vector with room for `cap` items whose large middle is backed by
/// transparent huge pages where the kernel allows it (`madvise`): a probe
/// touches ~2 random lines per table, and with 4 KiB pages each would also
/// miss the TLB.
pub(crate) fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(cap);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = cap * std::mem::size_of::<T>();
        if bytes >= 2 * HUGE {
            let start = v.as_ptr() as usize;
            let lo = start.next_multiple_of(HUGE);
            let hi = (start + bytes) / HUGE * HUGE;
            if hi > lo {
                // SAFETY: the range lies inside this vector's allocation;
                // MADV_HUGEPAGE only changes how pages are backed, not contents.
                unsafe {
                    libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
                }
            }
        }
    }
    v
}

/// A hint to fetch the cache line at `p` (any address; never faults).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The geometry shared by every layer: table specs, prefix masks, k.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    pub(crate) specs: Vec<TableSpec>,
    masks: Vec<u64>,
    pub(crate) k: u32,
}

impl Geometry {
    pub(crate) fn new(design: &Design, k: u32) -> Geometry {
        let specs = design.specs().to_vec();
        let masks = specs.iter().map(|s| s.prefix_mask()).collect();
        Geometry { specs, masks, k }
    }

    /// The first table whose prefix the two fingerprints with XOR `x` share.
    #[inline]
    fn first_table(&self, x: u64) -> usize {
        self.masks.iter().position(|&m| x & m == 0).unwrap_or(usize::MAX)
    }
}

/// Tables probed together in one prefetch round (bounds stack arrays).
const ROUND: usize = 16;

/// A sealed, immutable set of t tables over the same distinct fingerprints,
/// with the page id of each fingerprint parallel to table 0.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) tables: Vec<Table>,
    pub(crate) ids: Vec<u64>,
}

impl Run {
    /// Builds from distinct `(fp, id)` pairs (any order), tables in parallel.
    pub(crate) fn build(geo: &Geometry, items: &[(u64, u64)]) -> Run {
        let empty = Run::default();
        empty.merged(geo, items).0
    }

    /// A new run holding this run's fingerprints and those of `more` that
    /// are not in it (distinct among themselves), merged table by table. Also
    /// returns the pairs of `more` whose fingerprint this run already holds.
    pub(crate) fn merged(&self, geo: &Geometry, more: &[(u64, u64)]) -> (Run, Vec<(u64, u64)>) {
        type Pairs = Vec<(u64, u64)>;
        let (more, dups): (std::borrow::Cow<'_, [(u64, u64)]>, Pairs) = if self.len() == 0 {
            (more.into(), Vec::new())
        } else {
            // Which of `more` this run holds: sort them by table 0's order and
            // walk table 0 once (sequential reads), instead of a random probe
            // (two cache misses) per item.
            let spec0 = &geo.specs[0];
            let mut keyed: Vec<(u64, u64, u64)> = more.iter().map(|&(fp, id)| (spec0.permute(fp), fp, id)).collect();
            keyed.par_sort_unstable_by_key(|x| x.0);
            let mut old = self.tables[0].iter().peekable();
            let (mut new, mut dups): (Pairs, Pairs) = (Vec::with_capacity(keyed.len()), Vec::new());
            for (pk, fp, id) in keyed {
                while old.next_if(|&k| k < pk).is_some() {}
                if old.peek() == Some(&pk) {
                    dups.push((fp, id));
                } else {
                    new.push((fp, id));
                }
            }
            (new.into(), dups)
        };
        let n = self.len() + more.len();
        let tables: Vec<(Table, Vec<u64>)> = geo
            .specs
            .par_iter()
            .enumerate()
            .map(|(i, spec)| {
                // A linear merge of the old table's ascending keys with the
                // sorted new ones into a fresh table.
                let old = self.tables.get(i);
                let old_keys = old.into_iter().flat_map(|t| t.iter());
                let mut out = TableBuilder::new(n, spec.prefix(), i == 0);
                if i == 0 {
                    let mut add: Vec<(u64, u64)> = more.iter().map(|&(fp, id)| (spec.permute(fp), id)).collect();
                    add.par_sort_unstable();
                    let mut ids = huge_vec(n);
                    let old = old_keys.zip(self.ids.iter().copied());
                    merge_sorted(old, add.into_iter(), |k, id| {
                        out.push(k);
                        ids.push(id);
                    });
                    (out.finish(), ids)
                } else {
                    let mut add: Vec<u64> = more.iter().map(|&(fp, _)| spec.permute(fp)).collect();
                    add.par_sort_unstable();
                    let old = old_keys.map(|k| (k, ()));
                    merge_sorted(old, add.into_iter().map(|k| (k, ())), |k, ()| out.push(k));
                    (out.finish(), Vec::new())
                }
            })
            .collect();
        let mut ids = Vec::new();
        let mut out = Vec::with_capacity(tables.len());
        for (i, (t, v)) in tables.into_iter().enumerate() {
            if i == 0 {
                ids = v;
            }
            out.push(t);
        }
        (Run { tables: out, ids }, dups)
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Position of `fp` in table 0, if stored.
    #[inline]
    pub(crate) fn find(&self, geo: &Geometry, fp: u64) -> Option<usize> {
        self.tables.first()?.find(geo.specs[0].permute(fp))
    }

    /// Calls `emit(fp, id, distance)` once per stored fingerprint within k of `q`.
    /// Returns the number of entries examined.
    #[inline(always)]
    pub(crate) fn probe(&self, geo: &Geometry, q: u64, mut emit: impl FnMut(u64, u64, u32)) -> usize {
        if self.ids.is_empty() {
            return 0;
        }
        let mut examined = 0;
        let mut pqs = [0u64; ROUND];
        // Rounds of up to ROUND tables so the cache misses of different
        // tables overlap: every table's line prefetched, then the scans.
        for start in (0..self.tables.len()).step_by(ROUND) {
            let end = (start + ROUND).min(self.tables.len());
            for i in start..end {
                pqs[i - start] = geo.specs[i].permute(q);
                self.tables[i].prefetch_lines(pqs[i - start]);
            }
            for i in start..end {
                examined += self.scan(geo, i, q, pqs[i - start], &mut emit);
            }
        }
        examined
    }

    /// Scans the line(s) of `pq` (the query `q` permuted by table i) in
    /// table `i` and emits the matches this table owns.
    #[inline(always)]
    fn scan(&self, geo: &Geometry, i: usize, q: u64, pq: u64, emit: &mut impl FnMut(u64, u64, u32)) -> usize {
        self.tables[i].scan(pq, geo.k, |key, j, d| self.owned_match(geo, i, q, key, j, d, emit))
    }

    /// A candidate within k found in table `i` at position `j` (meaningful
    /// in table 0): emitted if table i is the first table whose prefix it
    /// shares with the query (so every match is reported by exactly one
    /// table).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn owned_match(
        &self,
        geo: &Geometry,
        i: usize,
        q: u64,
        permuted: u64,
        j: usize,
        d: u32,
        emit: &mut impl FnMut(u64, u64, u32),
    ) {
        let c = geo.specs[i].unpermute(permuted);
        if geo.first_table(c ^ q) != i {
            return;
        }
        let id = if i == 0 {
            match self.ids.get(j) {
                Some(&id) => id,
                None => return,
            }
        } else {
            match self.find(geo, c) {
                Some(p) => self.ids[p],
                None => return,
            }
        };
        emit(c, id, d);
    }

    /// Probes for a batch of queries, software-pipelined: while query s is
    /// scanned, the lines of query s + DEPTH are prefetched. `emit(query
    /// index, fp, id, distance)`.
    #[inline(always)]
    pub(crate) fn probe_many(&self, geo: &Geometry, qs: &[u64], mut emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        const DEPTH: usize = 3;
        const SLOTS: usize = DEPTH + 1;
        let nt = self.tables.len();
        if self.ids.is_empty() || qs.is_empty() {
            return 0;
        }
        if nt > ROUND {
            return qs
                .iter()
                .enumerate()
                .map(|(qi, &q)| self.probe(geo, q, |c, id, d| emit(qi, c, id, d)))
                .sum();
        }
        let mut pqs = [[0u64; ROUND]; SLOTS];
        let mut examined = 0;
        let n = qs.len();
        for s in 0..n + DEPTH {
            if s < n {
                let slot = &mut pqs[s % SLOTS];
                for ((pq, spec), t) in slot.iter_mut().zip(&geo.specs).zip(&self.tables) {
                    *pq = spec.permute(qs[s]);
                    t.prefetch_lines(*pq);
                }
            }
            if s >= DEPTH {
                let qi = s - DEPTH;
                let m = qi % SLOTS;
                let q = qs[qi];
                for i in 0..nt {
                    examined += self.scan(geo, i, q, pqs[m][i], &mut |c, id, d| emit(qi, c, id, d));
                }
            }
        }
        examined
    }

    /// Batch mode's probe of a large chunk of stored fingerprints `fs`: per
    /// table, the chunk is sorted by line (a counting sort on the line
    /// index) and then swept in line order, so the table's lines are read
    /// front to back, once per chunk, instead of at random once per probe.
    /// `emit(index in fs, query fp, query slot id, distance)`.
    #[inline(always)]
    pub(crate) fn sweep(&self, geo: &Geometry, fs: &[u64], mut emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        if self.ids.is_empty() || fs.is_empty() {
            return 0;
        }
        let mut examined = 0;
        let mut counts: Vec<u32> = Vec::new();
        let mut sorted: Vec<(u64, u32)> = vec![(0, 0); fs.len()];
        for (i, t) in self.tables.iter().enumerate() {
            let spec = &geo.specs[i];
            counts.clear();
            counts.resize(t.m, 0);
            for &f in fs {
                counts[t.line_of(spec.permute(f))] += 1;
            }
            let mut at = 0u32;
            for c in counts.iter_mut() {
                let n = *c;
                *c = at;
                at += n;
            }
            for (j, &f) in fs.iter().enumerate() {
                let p = spec.permute(f);
                let l = t.line_of(p);
                sorted[counts[l] as usize] = (p, j as u32);
                counts[l] += 1;
            }
            for &(p, j) in &sorted {
                let j = j as usize;
                // The fingerprint from its permuted value: ALU work instead of
                // a random read of fs[j].
                let f = spec.unpermute(p);
                examined += self.scan(geo, i, f, p, &mut |c, id, d| emit(j, c, id, d));
            }
        }
        examined
    }

    /// [`Run::sweep`] compiled with the popcnt instruction when the CPU has it.
    pub(crate) fn sweep_fast(&self, geo: &Geometry, fs: &[u64], emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.sweep_popcnt(geo, fs, emit) };
        }
        self.sweep(geo, fs, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn sweep_popcnt(&self, geo: &Geometry, fs: &[u64], emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        self.sweep(geo, fs, emit)
    }

    pub(crate) fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum::<usize>() + self.ids.capacity() * 8
    }

    /// Every `(fp, id)` of the run (first ids only).
    fn items(&self, geo: &Geometry) -> Vec<(u64, u64)> {
        match self.tables.first() {
            Some(t) => t
                .iter()
                .zip(&self.ids)
                .map(|(k, &id)| (geo.specs[0].unpermute(k), id))
                .collect(),
            None => Vec::new(),
        }
    }
}

/// Merges two ascending sequences of `(key, value)` into `push`.
fn merge_sorted<V>(a: impl Iterator<Item = (u64, V)>, b: impl Iterator<Item = (u64, V)>, mut push: impl FnMut(u64, V)) {
    let mut a = a.peekable();
    let mut b = b.peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.0 <= y.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return,
        };
        let (k, v) = if take_a { a.next() } else { b.next() }.expect("peeked");
        push(k, v);
    }
}

/// The mutable layer: fingerprints and ids in insertion order, per table a
/// hash of bucket *lines*, and an open-addressing set of the fingerprints for
/// the existence check of `insert`.
///
/// Table i puts fingerprint c in bucket `h(c & prefix_mask_i)`, so every
/// stored fingerprint sharing table i's prefix with a query is in the query's
/// bucket (no permutation needed). A bucket is one 64-byte line: a header
/// word (entries in the bucket, link to its newest spill line) and up to 7
/// fingerprints inline, so a probe of one table reads one cache line (plus
/// a spill line for the few buckets holding more than 7). The bucket count
/// is sized from the capacity the delta is created for (about 6 entries per
/// bucket when full) and doubles if the delta outgrows it.
#[derive(Debug, Default)]
pub(crate) struct Delta {
    fps: Vec<u64>,
    ids: Vec<u64>,
    /// Per table: the bucket lines (`nb` lines, 8 words each, starting at a
    /// 64-byte boundary `off` words into the vector).
    lines: Vec<Vec<u64>>,
    /// Per table: spill lines (8 words each: link to the previous spill line
    /// of the bucket, then 7 fingerprints), for buckets with more than 7
    /// entries; a bucket's header links its newest spill line.
    spill: Vec<Vec<u64>>,
    /// Word offset of the first 64-byte-aligned line in each `lines` vector.
    off: Vec<usize>,
    /// Buckets per table.
    nb: usize,
    /// Linear probing, load at most 1/2: `tag << 32 | index + 1`, 0 = free.
    set: Vec<u64>,
}

/// Multiplier of the existence set's hash (2^64 / golden ratio).
const SET_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// Fingerprints inline in a delta bucket line (after the header word).
const LINE_FPS: usize = 7;
/// Average entries per delta bucket when the delta is full.
const DELTA_LOAD: usize = 6;

impl Delta {
    /// An empty delta with room for `cap` entries without growing.
    fn new(geo: &Geometry, cap: usize) -> Delta {
        let t = geo.specs.len();
        let nb = cap.div_ceil(DELTA_LOAD).clamp(16, Self::max_buckets(geo));
        let mut d = Delta {
            fps: Vec::with_capacity(cap),
            ids: Vec::with_capacity(cap),
            lines: Vec::with_capacity(t),
            spill: vec![Vec::new(); t],
            off: Vec::with_capacity(t),
            nb,
            set: vec![0u64; (2 * cap).next_power_of_two().max(64)],
        };
        for _ in 0..t {
            let (v, off) = Self::zeroed_lines(nb);
            d.lines.push(v);
            d.off.push(off);
        }
        d
    }

    /// More buckets than distinct prefixes would stay empty: at most
    /// 2^(smallest prefix) buckets.
    fn max_buckets(geo: &Geometry) -> usize {
        let p = geo.specs.iter().map(|s| s.prefix()).min().unwrap_or(0);
        1usize << p.min(30)
    }

    /// `nb` zeroed lines (zeroed pages from the allocator, not a fill) and
    /// the word offset of the first 64-byte boundary.
    fn zeroed_lines(nb: usize) -> (Vec<u64>, usize) {
        let v = vec![0u64; nb * 8 + 8];
        let off = (v.as_ptr() as usize).next_multiple_of(64) - v.as_ptr() as usize;
        (v, off / 8)
    }

    /// Bucket of `fp` in table `i`: a multiplicative hash of its prefix bits,
    /// reduced to `0..nb`.
    #[inline(always)]
    fn bucket(&self, geo: &Geometry, i: usize, fp: u64) -> usize {
        let h = (fp & geo.masks[i]).wrapping_mul(SET_MUL) >> 32;
        ((h * self.nb as u64) >> 32) as usize
    }

    /// Word index of bucket `b`'s line in table `i`'s `lines`.
    #[inline(always)]
    fn line(&self, i: usize, b: usize) -> usize {
        self.off[i] + b * 8
    }

    fn len(&self) -> usize {
        self.fps.len()
    }

    /// Slot of `fp` in the set and its tag.
    #[inline(always)]
    fn slot(&self, fp: u64) -> (usize, u64) {
        let h = fp.wrapping_mul(SET_MUL);
        let mask = self.set.len() - 1;
        ((h >> 32) as usize & mask, h & 0xFFFF_FFFF)
    }

    /// Prefetches what [`Delta::contains`] reads first.
    #[inline(always)]
    fn prefetch_set(&self, fp: u64) {
        if !self.set.is_empty() {
            prefetch(self.set.as_ptr().wrapping_add(self.slot(fp).0));
        }
    }

    /// Position of `fp` in insertion order, if stored (one set slot, usually
    /// one cache line).
    #[inline]
    fn position(&self, fp: u64) -> Option<usize> {
        if self.fps.is_empty() {
            return None;
        }
        let (mut s, tag) = self.slot(fp);
        let mask = self.set.len() - 1;
        loop {
            let e = self.set[s];
            if e == 0 {
                return None;
            }
            let idx = (e as u32 - 1) as usize;
            if e >> 32 == tag && self.fps[idx] == fp {
                return Some(idx);
            }
            s = (s + 1) & mask;
        }
    }

    /// Whether `fp` is stored.
    #[inline]
    fn contains(&self, fp: u64) -> bool {
        self.position(fp).is_some()
    }

    fn set_insert(&mut self, fp: u64, idx: usize) {
        let (mut s, tag) = self.slot(fp);
        let mask = self.set.len() - 1;
        while self.set[s] != 0 {
            s = (s + 1) & mask;
        }
        self.set[s] = tag << 32 | (idx as u64 + 1);
    }

    /// Buckets of `fp` in the first [`ROUND`] tables, their lines prefetched
    /// so that the t random misses of a push or a probe overlap.
    #[inline(always)]
    fn prepare(&self, geo: &Geometry, fp: u64) -> [u32; ROUND] {
        let mut bk = [0u32; ROUND];
        for (i, b) in bk.iter_mut().enumerate().take(self.lines.len()) {
            *b = self.bucket(geo, i, fp) as u32;
            prefetch(self.lines[i].as_ptr().wrapping_add(self.line(i, *b as usize)));
        }
        bk
    }

    /// Appends `fp` (not stored yet); `bk` from [`Delta::prepare`].
    fn push(&mut self, geo: &Geometry, fp: u64, id: u64, bk: &[u32; ROUND]) {
        let idx = self.fps.len();
        self.fps.push(fp);
        self.ids.push(id);
        for i in 0..self.lines.len() {
            let b = match bk.get(i) {
                Some(&b) => b as usize,
                None => self.bucket(geo, i, fp),
            };
            self.add(i, b, fp);
        }
        if 2 * self.fps.len() > self.set.len() {
            self.grow_set();
        } else {
            self.set_insert(fp, idx);
        }
        // A delta kept past its capacity (a merge still running): double the
        // buckets when the load passes twice the planned one.
        if self.fps.len() > 2 * DELTA_LOAD * self.nb && 2 * self.nb <= Self::max_buckets(geo) {
            self.rehash(geo, 2 * self.nb);
        }
    }

    /// Adds `fp` to bucket `b` of table `i`. Spill lines are linked from
    /// the newest back to the oldest and the header links the newest, so an
    /// append touches the header line and at most the newest spill line.
    #[inline(always)]
    fn add(&mut self, i: usize, b: usize, fp: u64) {
        let at = self.line(i, b);
        let lines = &mut self.lines[i];
        let count = (lines[at] & 0xFFFF_FFFF) as usize;
        lines[at] += 1;
        if count < LINE_FPS {
            lines[at + 1 + count] = fp;
            return;
        }
        let spill = &mut self.spill[i];
        let used = (count - LINE_FPS) % LINE_FPS;
        let newest = lines[at] >> 32;
        if used == 0 {
            // All lines full: a new spill line, linked to the previous newest.
            let new = spill.len() / 8;
            spill.extend_from_slice(&[newest, fp, 0, 0, 0, 0, 0, 0]);
            lines[at] = (lines[at] & 0xFFFF_FFFF) | (new as u64 + 1) << 32;
        } else {
            spill[(newest - 1) as usize * 8 + 1 + used] = fp;
        }
    }

    /// Doubles the set and reinserts every entry (the newest included).
    fn grow_set(&mut self) {
        self.set = vec![0u64; (2 * self.set.len()).max(64)];
        for idx in 0..self.fps.len() {
            self.set_insert(self.fps[idx], idx);
        }
    }

    /// Rebuilds every table's buckets with `nb` buckets.
    fn rehash(&mut self, geo: &Geometry, nb: usize) {
        self.nb = nb;
        for i in 0..self.lines.len() {
            let (v, off) = Self::zeroed_lines(nb);
            self.lines[i] = v;
            self.off[i] = off;
            self.spill[i].clear();
            for idx in 0..self.fps.len() {
                let fp = self.fps[idx];
                let b = self.bucket(geo, i, fp);
                self.add(i, b, fp);
            }
        }
    }

    /// Prefetches the bucket lines a probe for `q` reads first (a query
    /// issues this before probing the main run, so the misses overlap).
    #[inline(always)]
    fn prefetch_probe(&self, geo: &Geometry, q: u64) {
        if !self.fps.is_empty() {
            self.prepare(geo, q);
        }
    }

    #[inline(always)]
    fn probe(&self, geo: &Geometry, q: u64, mut emit: impl FnMut(u64, u64, u32)) -> usize {
        if self.fps.is_empty() {
            return 0;
        }
        let mut examined = 0;
        // Every table's line first, so their misses overlap.
        let bk = self.prepare(geo, q);
        for i in 0..self.lines.len() {
            let b = match bk.get(i) {
                Some(&b) => b as usize,
                None => self.bucket(geo, i, q),
            };
            let lines = &self.lines[i];
            let at = self.line(i, b);
            let head = lines[at];
            let count = (head & 0xFFFF_FFFF) as usize;
            examined += count;
            let mut scan = |words: &[u64]| {
                for &c in words {
                    let x = c ^ q;
                    let d = x.count_ones();
                    if d <= geo.k && geo.first_table(x) == i {
                        emit(c, self.id_of(c), d);
                    }
                }
            };
            scan(&lines[at + 1..at + 1 + count.min(LINE_FPS)]);
            if count > LINE_FPS {
                // Spill lines, newest (possibly partly filled) first.
                let left = count - LINE_FPS;
                let mut m = (left - 1) % LINE_FPS + 1;
                let mut link = head >> 32;
                while link != 0 {
                    let s = (link - 1) as usize * 8;
                    scan(&self.spill[i][s + 1..s + 1 + m]);
                    m = LINE_FPS;
                    link = self.spill[i][s];
                }
            }
        }
        examined
    }

    /// The id stored with `fp` (a match; matches are rare, so ids are not
    /// kept in the bucket lines).
    #[cold]
    fn id_of(&self, fp: u64) -> u64 {
        self.position(fp).map_or(0, |p| self.ids[p])
    }

    fn items(&self) -> Vec<(u64, u64)> {
        self.fps.iter().copied().zip(self.ids.iter().copied()).collect()
    }

    fn bytes(&self) -> usize {
        self.fps.capacity() * 16
            + self.set.capacity() * 8
            + self.lines.iter().map(|l| l.capacity() * 8).sum::<usize>()
            + self.spill.iter().map(|s| s.capacity() * 8).sum::<usize>()
    }
}
#[derive(Debug)]
struct State {
    main: Arc<Run>,
    frozen: Option<Arc<Delta>>,
    delta: Delta,
    /// Ids beyond the first of fingerprints inserted more than once.
    extras: HashMap<u64, Vec<u64>>,
    len: usize,
}

#[derive(Debug)]
struct Inner {
    geo: Geometry,
    design: Design,
    state: RwLock<State>,
    merger: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Smallest live delta that is frozen and merged into the main run.
pub const MIN_DELTA: usize = 1 << 16;

/// Live delta size at which it is frozen and merged into a main run of `main`
/// fingerprints.
fn delta_threshold(main: usize) -> usize {
    MIN_DELTA.max(main / 8)
}

/// The live Hamming index: inserts and queries interleaved from many threads
/// (`Send + Sync`; clones share one index). See the module docs for the
/// layout and the locking.
#[derive(Debug, Clone)]
pub struct LiveIndex {
    inner: Arc<Inner>,
}

/// Statistics of one query, for benchmarks and the clustered-set report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStats {
    /// Table entries compared with the query.
    pub examined: usize,
    /// Matches appended.
    pub matches: usize,
}

impl LiveIndex {
    /// An empty index over `design` answering distance `k`.
    ///
    /// The design should cover k ([`Design::covers`]); a design that does not
    /// can miss neighbours.
    pub fn new(design: Design, k: u32) -> LiveIndex {
        let geo = Geometry::new(&design, k);
        let delta = Delta::new(&geo, MIN_DELTA);
        let main = Arc::new(Run::build(&geo, &[]));
        LiveIndex {
            inner: Arc::new(Inner {
                geo,
                design,
                state: RwLock::new(State {
                    main,
                    frozen: None,
                    delta,
                    extras: HashMap::new(),
                    len: 0,
                }),
                merger: Mutex::new(None),
            }),
        }
    }

    /// An empty index with the design chosen by `[index]` settings for `k`.
    pub fn from_settings(settings: &crate::config::IndexSettings, k: u32) -> LiveIndex {
        use crate::config::IndexDesign;
        let paper = |t| Design::paper_k3(t).filter(|_| k == 3);
        let design = match settings.design {
            IndexDesign::Auto => None,
            IndexDesign::T4 => paper(4),
            IndexDesign::T10 => paper(10),
            IndexDesign::T16 => paper(16),
            IndexDesign::T20 => paper(20),
        }
        .unwrap_or_else(|| Design::fastest_for(k, settings.expected_size_log2));
        LiveIndex::new(design, k)
    }

    /// The design in use.
    pub fn design(&self) -> &Design {
        &self.inner.design
    }

    /// The distance threshold k.
    pub fn k(&self) -> u32 {
        self.inner.geo.k
    }

    /// Adds `(fp, id)`; every query that starts after this returns sees it.
    pub fn insert(&self, fp: u64, id: u64) {
        let inner = &self.inner;
        let geo = &inner.geo;
        let mut st = inner.state.write();
        st.len += 1;
        // A fingerprint already in the main run is not looked up there (two
        // cache misses per insert): it goes to the delta, and the merge moves
        // it to `extras`. Until then the main run and the delta each report
        // their own id, which is the same answer.
        // The delta's head words and set slot, and the frozen delta's set
        // slot, are fetched together: their misses overlap.
        let bk = st.delta.prepare(geo, fp);
        st.delta.prefetch_set(fp);
        if let Some(f) = &st.frozen {
            f.prefetch_set(fp);
        }
        let exists = (!st.extras.is_empty() && st.extras.contains_key(&fp))
            || st.frozen.as_ref().is_some_and(|f| f.contains(fp))
            || st.delta.contains(fp);
        if exists {
            st.extras.entry(fp).or_default().push(id);
            return;
        }
        st.delta.push(geo, fp, id, &bk);
        let threshold = delta_threshold(st.main.len());
        if st.delta.len() >= threshold && st.frozen.is_none() {
            let next = delta_threshold(st.main.len() + st.delta.len());
            let full = std::mem::replace(&mut st.delta, Delta::new(geo, next));
            let full = Arc::new(full);
            st.frozen = Some(full.clone());
            let main = st.main.clone();
            drop(st);
            self.spawn_merge(main, full);
        }
    }

    fn spawn_merge(&self, main: Arc<Run>, frozen: Arc<Delta>) {
        let mut slot = self.inner.merger.lock();
        if let Some(h) = slot.take() {
            let _ = h.join();
        }
        let inner = self.inner.clone();
        *slot = Some(std::thread::spawn(move || {
            let (merged, dups) = main.merged(&inner.geo, &frozen.items());
            let merged = Arc::new(merged);
            let mut st = inner.state.write();
            st.main = merged;
            st.frozen = None;
            for (fp, id) in dups {
                st.extras.entry(fp).or_default().push(id);
            }
        }));
    }

    /// Waits for a background merge to finish (benchmarks and tests).
    pub fn wait_merged(&self) {
        if let Some(h) = self.inner.merger.lock().take() {
            let _ = h.join();
        }
    }

    /// Adds many `(fp, id)` at once by rebuilding the main run (start-up from
    /// the store): sorts, deduplicates and builds every table in parallel.
    pub fn bulk_load(&self, items: impl IntoIterator<Item = (u64, u64)>) {
        self.wait_merged();
        let geo = &self.inner.geo;
        let mut st = self.inner.state.write();
        let mut all: Vec<(u64, u64)> = st.main.items(geo);
        if let Some(f) = &st.frozen {
            all.extend(f.items());
        }
        all.extend(st.delta.items());
        let before = all.len();
        all.extend(items);
        let added = all.len() - before;
        all.par_sort_unstable();
        let mut extras = std::mem::take(&mut st.extras);
        // In place: the first id of each fingerprint stays, the others go to extras.
        all.dedup_by(|later, first| {
            let repeat = later.0 == first.0;
            if repeat {
                extras.entry(later.0).or_default().push(later.1);
            }
            repeat
        });
        st.main = Arc::new(Run::default());
        st.main = Arc::new(Run::build(geo, &all));
        drop(all);
        st.frozen = None;
        st.delta = Delta::new(geo, delta_threshold(st.main.len()));
        st.extras = extras;
        st.len += added;
    }

    /// Appends every stored `(fp, id)` within k of `fp` to `out` (each once;
    /// order unspecified). Allocates nothing when `out` has room.
    pub fn query(&self, fp: u64, out: &mut Vec<Match>) {
        self.query_stats(fp, out);
    }

    /// [`LiveIndex::query`] that also says how much work it did.
    pub fn query_stats(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.query_popcnt(fp, out) };
        }
        self.query_body(fp, out)
    }

    /// [`LiveIndex::query_body`] compiled with the popcnt instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn query_popcnt(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        self.query_body(fp, out)
    }

    #[inline(always)]
    fn query_body(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let before = out.len();
        // The delta's bucket lines first: their misses overlap the main run's.
        if let Some(f) = &st.frozen {
            f.prefetch_probe(geo, fp);
        }
        st.delta.prefetch_probe(geo, fp);
        let mut examined = st
            .main
            .probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        if let Some(f) = &st.frozen {
            examined += f.probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        }
        examined += st
            .delta
            .probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        if !st.extras.is_empty() {
            let end = out.len();
            for i in before..end {
                let m = out[i];
                // A fingerprint can match twice (main run and delta) before a merge.
                if out[before..i].iter().any(|o| o.fp == m.fp) {
                    continue;
                }
                if let Some(more) = st.extras.get(&m.fp) {
                    out.extend(more.iter().map(|&id| Match { id, ..m }));
                }
            }
        }
        ProbeStats {
            examined,
            matches: out.len() - before,
        }
    }

    /// Queries a batch at once (prefetching across queries): appends
    /// `(query index, match)` pairs.
    pub fn query_many(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.query_many_popcnt(fps, out) };
        }
        self.query_many_body(fps, out)
    }

    /// [`LiveIndex::query_many_body`] compiled with the popcnt instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn query_many_popcnt(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        self.query_many_body(fps, out)
    }

    #[inline(always)]
    fn query_many_body(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let before = out.len();
        let mut examined = st.main.probe_many(geo, fps, |qi, c, id, d| {
            out.push((qi, Match { fp: c, id, distance: d }))
        });
        if st.frozen.is_some() || st.delta.len() > 0 {
            // Pipelined: query qi + AHEAD's bucket lines are prefetched while
            // query qi is probed.
            const AHEAD: usize = 4;
            for &q in fps.iter().take(AHEAD) {
                if let Some(f) = &st.frozen {
                    f.prefetch_probe(geo, q);
                }
                st.delta.prefetch_probe(geo, q);
            }
            for (qi, &q) in fps.iter().enumerate() {
                if let Some(&ahead) = fps.get(qi + AHEAD) {
                    if let Some(f) = &st.frozen {
                        f.prefetch_probe(geo, ahead);
                    }
                    st.delta.prefetch_probe(geo, ahead);
                }
                if let Some(f) = &st.frozen {
                    examined += f.probe(geo, q, |c, id, d| out.push((qi, Match { fp: c, id, distance: d })));
                }
                examined += st
                    .delta
                    .probe(geo, q, |c, id, d| out.push((qi, Match { fp: c, id, distance: d })));
            }
        }
        if !st.extras.is_empty() {
            let end = out.len();
            for i in before..end {
                let (qi, m) = out[i];
                if out[before..i].iter().any(|&(oq, o)| oq == qi && o.fp == m.fp) {
                    continue;
                }
                if let Some(more) = st.extras.get(&m.fp) {
                    out.extend(more.iter().map(|&id| (qi, Match { id, ..m })));
                }
            }
        }
        examined
    }

    /// The closest stored fingerprint: smallest distance, ties broken by the
    /// smallest id (the earliest crawled page).
    pub fn nearest(&self, fp: u64) -> Option<Match> {
        let mut out = Vec::new();
        self.query(fp, &mut out);
        out.into_iter().min_by_key(|m| (m.distance, m.id))
    }

    /// Number of `(fp, id)` pairs inserted.
    pub fn len(&self) -> usize {
        self.inner.state.read().len
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Average number of distinct cache lines the sealed tables' probes read
    /// per query of `qs` (directory words plus bucket entries; the delta and
    /// the id lookups of matches are not counted). With a memory system that
    /// serves L random lines/s to one thread, L divided by this is the
    /// ceiling on single-thread queries/s (`simcrawl bench index` prints both).
    pub fn lines_per_query(&self, qs: &[u64]) -> f64 {
        let st = self.inner.state.read();
        let geo = &self.inner.geo;
        if st.main.ids.is_empty() || qs.is_empty() {
            return 0.0;
        }
        let total: usize = qs
            .iter()
            .map(|&q| {
                (st.main.tables.iter().zip(&geo.specs))
                    .map(|(t, spec)| t.lines_touched(spec.permute(q)))
                    .sum::<usize>()
            })
            .sum();
        total as f64 / qs.len() as f64
    }

    /// Of the sealed tables' lines, the fraction that keep keys in the
    /// overflow array, and of the probes for `qs` (one per table), the
    /// fraction that read overflow keys (averages over the tables).
    pub fn overflow_rates(&self, qs: &[u64]) -> (f64, f64) {
        let st = self.inner.state.read();
        let geo = &self.inner.geo;
        let t = st.main.tables.len();
        if st.main.ids.is_empty() || t == 0 {
            return (0.0, 0.0);
        }
        let (lines, probes) = (st.main.tables.iter().zip(&geo.specs))
            .map(|(tab, spec)| tab.overflow_rates(qs.iter().map(|&q| spec.permute(q))))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        (lines / t as f64, probes / t as f64)
    }

    /// Number of distinct fingerprints stored.
    pub fn distinct(&self) -> usize {
        let st = self.inner.state.read();
        st.main.len() + st.frozen.as_ref().map_or(0, |f| f.len()) + st.delta.len()
    }

    /// Heap bytes held by the tables, ids, deltas and duplicate ids.
    pub fn memory_bytes(&self) -> usize {
        let st = self.inner.state.read();
        st.main.bytes()
            + st.frozen.as_ref().map_or(0, |f| f.bytes())
            + st.delta.bytes()
            + st.extras.capacity() * 48
            + st.extras.values().map(|v| v.capacity() * 8).sum::<usize>()
    }

    /// Every stored `(fp, id)`, sorted (persistence and tests).
    pub fn items(&self) -> Vec<(u64, u64)> {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let mut all = st.main.items(geo);
        if let Some(f) = &st.frozen {
            all.extend(f.items());
        }
        all.extend(st.delta.items());
        for (&fp, ids) in &st.extras {
            all.extend(ids.iter().map(|&id| (fp, id)));
        }
        all.sort_unstable();
        all
    }

    /// Writes a snapshot of the whole index to `path` (through a temporary
    /// file renamed into place, so a crash leaves the old snapshot or the new
    /// one). `watermark` is stored for the caller: the crawl stores the next
    /// page id, so that on load it adds only the fingerprints the store got
    /// after the snapshot. See [`super::persist`] for the format.
    pub fn save(&self, path: &Path, watermark: u64) -> Result<(), SnapshotError> {
        let geo = &self.inner.geo;
        let tmp = path.with_extension("tmp");
        let st = self.inner.state.read();
        let mut delta = st.frozen.as_ref().map_or_else(Vec::new, |f| f.items());
        delta.extend(st.delta.items());
        let extras: u64 = st.extras.values().map(|v| v.len() as u64).sum();
        let mut w = SnapWriter::create(&tmp)?;
        w.header(&Header {
            k: geo.k,
            design: design_hash(&self.inner.design, geo.k),
            tables: geo.specs.len() as u32,
            distinct: st.main.len() as u64,
            pairs: st.len as u64,
            watermark,
            delta: delta.len() as u64,
            extras,
        })?;
        for t in &st.main.tables {
            t.write(&mut w)?;
        }
        w.u64s(st.main.ids.iter().copied())?;
        w.u64s(delta.iter().flat_map(|&(fp, id)| [fp, id]))?;
        w.u64s(
            st.extras
                .iter()
                .flat_map(|(&fp, ids)| ids.iter().flat_map(move |&id| [fp, id])),
        )?;
        drop(st);
        w.finish()?;
        std::fs::rename(&tmp, path).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a snapshot written by [`LiveIndex::save`] for the same design
    /// and k; returns the index and the saved watermark. The tables are read
    /// as stored, not rebuilt.
    pub fn load(path: &Path, design: Design, k: u32) -> Result<(LiveIndex, u64), SnapshotError> {
        let mut r = SnapReader::open(path)?;
        let h = r.header(&design, k)?;
        let idx = LiveIndex::new(design, k);
        let geo = &idx.inner.geo;
        let n = h.distinct as usize;
        let mut tables = Vec::with_capacity(geo.specs.len());
        for spec in &geo.specs {
            tables.push(Table::read(&mut r, n, spec.prefix(), tables.is_empty())?);
        }
        r.has(h.distinct * 8)?;
        let mut ids = huge_vec(n);
        r.u64s(h.distinct, |id| ids.push(id))?;
        let pairs = |r: &mut SnapReader, count: u64| -> Result<Vec<(u64, u64)>, SnapshotError> {
            r.has(count.saturating_mul(16))?;
            let mut flat = Vec::with_capacity(count as usize * 2);
            r.u64s(count * 2, |x| flat.push(x))?;
            Ok(flat.chunks_exact(2).map(|c| (c[0], c[1])).collect())
        };
        let delta = pairs(&mut r, h.delta)?;
        let extras = pairs(&mut r, h.extras)?;
        r.finish()?;
        {
            let mut st = idx.inner.state.write();
            st.main = Arc::new(Run { tables, ids });
            for (fp, id) in extras {
                st.extras.entry(fp).or_default().push(id);
            }
        }
        for (fp, id) in delta {
            idx.insert(fp, id);
        }
        idx.inner.state.write().len = h.pairs as usize;
        Ok((idx, h.watermark))
    }

    /// Copies of the main run's sorted permuted keys, one vector per table
    /// (compression measurements).
    pub fn sealed_tables(&self) -> Vec<Vec<u64>> {
        (0..self.inner.geo.specs.len()).map(|i| self.sealed_table(i)).collect()
    }

    /// A copy of table `i`'s sorted permuted keys in the main run (empty if
    /// there is no table i).
    pub fn sealed_table(&self, i: usize) -> Vec<u64> {
        self.wait_merged();
        let st = self.inner.state.read();
        st.main.tables.get(i).map_or_else(Vec::new, |t| t.iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(items: &[(u64, u64)], q: u64, k: u32) -> Vec<Match> {
        let mut v: Vec<Match> = items
            .iter()
            .filter(|(fp, _)| (fp ^ q).count_ones() <= k)
            .map(|&(fp, id)| Match {
                fp,
                id,
                distance: (fp ^ q).count_ones(),
            })
            .collect();
        v.sort_unstable();
        v
    }

    fn flip(mut x: u64, bits: &[u8]) -> u64 {
        for &b in bits {
            x ^= 1u64 << (b % 64);
        }
        x
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn index_equals_brute_force(
            k in 0u32..=7,
            which in 0usize..6,
            base in proptest::collection::vec(any::<u64>(), 1..40),
            ops in proptest::collection::vec((any::<bool>(), 0usize..1000, proptest::collection::vec(any::<u8>(), 0..10)), 1..120),
        ) {
            let design = match which {
                0 => Design::paper_k3(4).unwrap(),
                1 => Design::paper_k3(10).unwrap(),
                2 => Design::paper_k3(16).unwrap(),
                3 => Design::paper_k3(20).unwrap(),
                4 => Design::for_k(k, 20),
                _ => Design::with_tables(k, 6),
            };
            // Paper designs cover k = 3 only; use them for k <= 3.
            let k = if which < 4 { k.min(3) } else { k };
            let idx = LiveIndex::new(design, k);
            let mut items: Vec<(u64, u64)> = Vec::new();
            let mut next_id = 0u64;
            for (insert, pick, bits) in ops {
                // Planted neighbours: a base fingerprint with 0..=k+2 flipped bits.
                let b = base[pick % base.len()];
                let nb = bits.len().min(k as usize + 2);
                let fp = flip(b, &bits[..nb]);
                if insert {
                    idx.insert(fp, next_id);
                    items.push((fp, next_id));
                    next_id += 1;
                } else {
                    let mut got = Vec::new();
                    idx.query(fp, &mut got);
                    got.sort_unstable();
                    prop_assert_eq!(got, brute(&items, fp, k));
                }
            }
            // And after a rebuild.
            idx.bulk_load(std::iter::empty());
            for &b in &base {
                let mut got = Vec::new();
                idx.query(b, &mut got);
                got.sort_unstable();
                prop_assert_eq!(got, brute(&items, b, k));
            }
        }
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }

    #[test]
    fn merge_equals_a_rebuild() {
        // A merge (old table's keys streamed with the new ones) must produce
        // the very tables and ids a full rebuild of the union does, including
        // new keys next to old ones in the same line.
        let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
        let mut seed = 11;
        let old: Vec<(u64, u64)> = (0..100_000).map(|i| (lcg(&mut seed), i)).collect();
        let mut more: Vec<(u64, u64)> = (0..5_000).map(|i| (lcg(&mut seed), 1_000_000 + i)).collect();
        more.extend(old.iter().step_by(50).map(|&(fp, id)| (fp ^ 1, 2_000_000 + id)));
        more.extend(
            old.iter()
                .skip(7)
                .step_by(50)
                .map(|&(fp, id)| (fp ^ (1 << 40), 3_000_000 + id)),
        );
        let held: std::collections::HashSet<u64> = old.iter().map(|p| p.0).collect();
        more.retain(|p| !held.contains(&p.0));
        more.sort_unstable();
        more.dedup_by_key(|p| p.0);
        let base = Run::build(&geo, &old);
        let (merged, dups) = base.merged(&geo, &more);
        assert!(dups.is_empty());
        let all: Vec<(u64, u64)> = old.iter().chain(&more).copied().collect();
        let rebuilt = Run::build(&geo, &all);
        for (i, (a, b)) in merged.tables.iter().zip(&rebuilt.tables).enumerate() {
            assert_eq!(a.m, b.m, "table {i}");
            assert_eq!(a.len, b.len);
            assert_eq!(
                a.words[a.off..a.off + 8 * a.m],
                b.words[b.off..b.off + 8 * b.m],
                "table {i} lines"
            );
            assert_eq!((&a.over, &a.rank), (&b.over, &b.rank), "table {i} overflow");
            assert!(
                a.iter().zip(a.iter().skip(1)).all(|(x, y)| x < y),
                "table {i} ascending"
            );
            assert_eq!(a.iter().count(), a.len);
        }
        assert_eq!(merged.ids, rebuilt.ids);
    }

    /// A run built from `items` answers every query exactly (single,
    /// batched and swept), and `find` locates every fingerprint.
    fn run_agrees_with_brute_force(geo: &Geometry, items: &[(u64, u64)], queries: &[u64]) -> Run {
        let run = Run::build(geo, items);
        for (i, t) in run.tables.iter().enumerate() {
            t.check().unwrap_or_else(|e| panic!("table {i}: {e}"));
            let keys: Vec<u64> = t.iter().collect();
            let mut want: Vec<u64> = items.iter().map(|&(fp, _)| geo.specs[i].permute(fp)).collect();
            want.sort_unstable();
            assert_eq!(keys, want, "table {i} iterates its keys in order");
        }
        for &(fp, id) in items.iter().step_by(7) {
            let p = run.find(geo, fp).expect("stored");
            assert_eq!(run.ids[p], id);
        }
        let mut many: Vec<(usize, Match)> = Vec::new();
        run.probe_many(geo, queries, |qi, fp, id, distance| {
            many.push((qi, Match { fp, id, distance }))
        });
        let mut swept: Vec<(usize, Match)> = Vec::new();
        run.sweep(geo, queries, |qi, fp, id, distance| {
            swept.push((qi, Match { fp, id, distance }))
        });
        many.sort_unstable();
        swept.sort_unstable();
        let mut all = Vec::new();
        for (qi, &q) in queries.iter().enumerate() {
            let want = brute(items, q, geo.k);
            let mut got = Vec::new();
            run.probe(geo, q, |fp, id, distance| got.push(Match { fp, id, distance }));
            got.sort_unstable();
            assert_eq!(got, want, "query {q:x}");
            all.extend(want.into_iter().map(|m| (qi, m)));
        }
        all.sort_unstable();
        assert_eq!(many, all, "batched");
        assert_eq!(swept, all, "swept");
        run
    }

    #[test]
    fn crowded_lines_overflow_exactly() {
        // Thousands of fingerprints whose permuted keys in table 0 share the
        // top 20 bits (one 16-bit top, one line), the rest random; every
        // eighth is within 3 bits of an earlier one. Plus a random
        // background so the table has 6-byte entries.
        let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
        let spec = &geo.specs[0];
        let mut seed = 21;
        let mut items: Vec<(u64, u64)> = (0..600_000).map(|i| (lcg(&mut seed), i)).collect();
        let top = lcg(&mut seed) & !((1u64 << 44) - 1);
        let mut crowd = Vec::new();
        for j in 0..4000u64 {
            let pk = if j % 8 == 7 {
                let near: u64 = crowd[lcg(&mut seed) as usize % crowd.len()];
                near ^ (1 << (lcg(&mut seed) % 44)) ^ (1 << (lcg(&mut seed) % 44))
            } else {
                top | (lcg(&mut seed) >> 20)
            };
            crowd.push(pk);
        }
        items.extend(
            crowd
                .iter()
                .enumerate()
                .map(|(j, &pk)| (spec.unpermute(pk), 10_000_000 + j as u64)),
        );
        items.sort_unstable_by_key(|p| p.0);
        items.dedup_by_key(|p| p.0);
        let mut queries: Vec<u64> = crowd.iter().step_by(3).map(|&pk| spec.unpermute(pk) ^ 0b1001).collect();
        queries.extend(items.iter().step_by(997).map(|p| p.0 ^ (1 << 50)));
        let run = run_agrees_with_brute_force(&geo, &items, &queries);
        let t = &run.tables[0];
        assert!(t.narrow);
        let l = t.line_of(top);
        assert!(t.overflow(l).len() > 3000, "the crowd overflows one line");
    }

    #[test]
    fn carry_mask_lines_straddle_a_48_bit_boundary() {
        // Keys packed around multiples of 2^48 in table 0, so lines hold keys
        // with two different top-16-bit values (the carry mask).
        let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
        let spec = &geo.specs[0];
        let mut seed = 5;
        let mut items: Vec<(u64, u64)> = (0..600_000).map(|i| (lcg(&mut seed), i)).collect();
        let mut planted = Vec::new();
        for b in 1..200u64 {
            let edge = (b * 0x147) << 48;
            for j in 0..12u64 {
                // Below and above the edge, a few bits apart.
                planted.push(edge.wrapping_sub(1 + j * 3));
                planted.push(edge + j * 5);
                planted.push(edge ^ (1 << (j % 3)));
            }
        }
        items.extend(
            planted
                .iter()
                .enumerate()
                .map(|(j, &pk)| (spec.unpermute(pk), 20_000_000 + j as u64)),
        );
        items.sort_unstable_by_key(|p| p.0);
        items.dedup_by_key(|p| p.0);
        let queries: Vec<u64> = planted
            .iter()
            .step_by(2)
            .flat_map(|&pk| {
                [
                    spec.unpermute(pk),
                    spec.unpermute(pk ^ 0b110),
                    spec.unpermute(pk.wrapping_add(1)),
                ]
            })
            .collect();
        let run = run_agrees_with_brute_force(&geo, &items, &queries);
        let t = &run.tables[0];
        assert!(t.narrow);
        let carried = (0..t.m)
            .filter(|&l| Table::head(t.line(l)) >> H_CARRY_SHIFT & 0x3FF != 0)
            .count();
        assert!(carried >= 100, "{carried} lines with a carry");
    }

    #[test]
    fn small_tables_use_eight_byte_entries() {
        for (t, k) in [(4usize, 3u32), (10, 3)] {
            let geo = Geometry::new(&Design::paper_k3(t).unwrap(), k);
            let mut seed = 9;
            let mut items: Vec<(u64, u64)> = Vec::new();
            for i in 0..20_000u64 {
                let fp = match items.len() {
                    n if n > 0 && i % 3 == 0 => {
                        items[lcg(&mut seed) as usize % n].0
                            ^ (1 << (lcg(&mut seed) % 64))
                            ^ (1 << (lcg(&mut seed) % 64))
                    }
                    _ => lcg(&mut seed),
                };
                items.push((fp, i));
            }
            items.sort_unstable_by_key(|p| p.0);
            items.dedup_by_key(|p| p.0);
            let queries: Vec<u64> = items.iter().step_by(11).map(|p| p.0 ^ 0b101).collect();
            let run = run_agrees_with_brute_force(&geo, &items, &queries);
            assert!(run.tables.iter().all(|t| !t.narrow));
        }
        // Tiny and empty runs.
        let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
        run_agrees_with_brute_force(&geo, &[(7, 1)], &[7, 6, 0]);
        run_agrees_with_brute_force(&geo, &[(7, 1), (u64::MAX, 2), (0, 3)], &[7, 6, 0, u64::MAX - 1]);
    }

    #[test]
    fn damaged_line_headers_and_overflow_starts_are_refused() {
        let geo = Geometry::new(&Design::paper_k3(4).unwrap(), 3);
        let mut seed = 3;
        let mut items: Vec<(u64, u64)> = (0..3000).map(|i| (lcg(&mut seed), i)).collect();
        // A crowd in one line of table 0 so it has overflow keys.
        let spec = &geo.specs[0];
        let top = lcg(&mut seed) & !((1u64 << 50) - 1);
        items.extend((0..50).map(|j| (spec.unpermute(top | (lcg(&mut seed) >> 30)), 5000 + j)));
        items.sort_unstable_by_key(|p| p.0);
        items.dedup_by_key(|p| p.0);
        let run = Run::build(&geo, &items);
        assert!(!run.tables[0].over.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        let write = |t: &Table| {
            let mut w = SnapWriter::create(&path).unwrap();
            t.write(&mut w).unwrap();
            w.finish().unwrap();
        };
        let read = || -> Result<Table, SnapshotError> {
            let mut r = SnapReader::open(&path)?;
            let t = Table::read(&mut r, items.len(), spec.prefix(), true)?;
            r.finish()?;
            Ok(t)
        };
        write(&run.tables[0]);
        let back = read().expect("an intact table reads back");
        assert!(back.iter().eq(run.tables[0].iter()));
        // Damage the in-memory table, then write it with a valid checksum:
        // the geometry checks, not the CRC, must refuse it.
        type Damage = fn(&mut Table);
        let damages: [(&str, Damage); 6] = [
            ("count beyond the slots", |t| t.words[t.off + 7] |= 0xF << 32),
            ("overflow flag without overflow", |t| {
                let l = (0..t.m).find(|&l| t.overflow(l).is_empty()).unwrap();
                t.words[t.off + 8 * l + 7] |= (H_OVER as u64) << 32;
            }),
            ("overflow pointer past the end", |t| {
                let l = (0..t.m).find(|&l| !t.overflow(l).is_empty()).unwrap();
                let past = t.over.len() as u64 + 5;
                t.put_slot(l, t.slots() - 1, past);
            }),
            ("overflow count past the end", |t| {
                let l = (0..t.m).find(|&l| !t.overflow(l).is_empty()).unwrap();
                let p = t.over_at(t.line(l));
                t.over[p] += 1000;
            }),
            ("rank past the entries", |t| t.rank[1] = u32::MAX),
            ("carry bit in an 8-byte line", |t| {
                t.words[t.off + 8 * 3 + 7] |= 1 << (32 + H_CARRY_SHIFT)
            }),
        ];
        for (what, damage) in damages {
            let mut t = Run::build(&geo, &items).tables.swap_remove(0);
            damage(&mut t);
            write(&t);
            assert!(read().is_err(), "{what} was accepted");
        }
    }

    /// The delta alone, from a tiny set and hash so that both grow many
    /// times: `contains` and `probe` agree with a brute-force scan after
    /// every growth.
    #[test]
    fn delta_grows_its_set_and_hash_without_losing_entries() {
        let design = Design::paper_k3(10).expect("paper design");
        let geo = Geometry::new(&design, 3);
        let mut d = Delta::new(&geo, 1);
        let mut seed = 7u64;
        let mut stored: Vec<(u64, u64)> = Vec::new();
        for id in 0..3000u64 {
            // Every third fingerprint near an earlier one, so probes match.
            let fp = match stored.get(lcg(&mut seed) as usize % (stored.len() + 1)) {
                Some(&(near, _)) if id % 3 == 0 => near ^ (1 << (lcg(&mut seed) % 64)) ^ (1 << (lcg(&mut seed) % 64)),
                _ => lcg(&mut seed),
            };
            if d.contains(fp) {
                assert!(stored.iter().any(|&(f, _)| f == fp));
                continue;
            }
            assert!(!stored.iter().any(|&(f, _)| f == fp));
            let bk = d.prepare(&geo, fp);
            d.push(&geo, fp, id, &bk);
            stored.push((fp, id));
            if id.is_power_of_two() || id % 997 == 0 {
                assert!(stored.iter().all(|&(f, _)| d.contains(f)));
                for &(q, _) in stored.iter().step_by(7) {
                    let mut got: Vec<Match> = Vec::new();
                    d.probe(&geo, q, |fp, id, distance| got.push(Match { fp, id, distance }));
                    got.sort_unstable();
                    assert_eq!(got, brute(&stored, q, 3));
                }
            }
        }
        assert!(d.nb > 16 && d.set.len() >= 2 * stored.len());
    }

    /// Crowded buckets: many fingerprints sharing one table's prefix fill
    /// its bucket line and several spill lines; probes (single and batched,
    /// before and after the delta outgrows its buckets) agree with brute force.
    #[test]
    fn delta_spill_lines_hold_crowded_buckets() {
        for t in [4usize, 10] {
            let design = Design::paper_k3(t).expect("paper design");
            let geo = Geometry::new(&design, 3);
            let mut d = Delta::new(&geo, 64);
            let mut seed = 11u64;
            let mask = geo.masks[0];
            let centre = lcg(&mut seed);
            let mut stored: Vec<(u64, u64)> = Vec::new();
            for id in 0..600u64 {
                // Table 0's prefix fixed, the other bits random; every fifth
                // one within 2 bits of an earlier fingerprint.
                let fp = if id % 5 == 4 {
                    stored[lcg(&mut seed) as usize % stored.len()].0 ^ (1 << (lcg(&mut seed) % 64))
                } else {
                    (centre & mask) | (lcg(&mut seed) & !mask)
                };
                if d.contains(fp) {
                    continue;
                }
                let bk = d.prepare(&geo, fp);
                d.push(&geo, fp, id, &bk);
                stored.push((fp, id));
            }
            assert!(d.spill[0].len() >= 8 * 10, "table 0's bucket spilled into many lines");
            for &(q, _) in &stored {
                let mut got: Vec<Match> = Vec::new();
                d.probe(&geo, q, |fp, id, distance| got.push(Match { fp, id, distance }));
                got.sort_unstable();
                assert_eq!(got, brute(&stored, q, 3));
            }
        }
    }

    /// Interleaved inserts and queries (single and batched) across several
    /// freezes and background merges, with planted near-duplicates, against
    /// brute force: the delta, the frozen delta and the main run together
    /// answer exactly.
    #[test]
    fn live_layers_agree_with_brute_force_across_merges() {
        for t in [4usize, 10] {
            let idx = LiveIndex::new(Design::paper_k3(t).expect("paper design"), 3);
            let mut seed = 5u64;
            let mut items: Vec<(u64, u64)> = Vec::new();
            let total = 3 * MIN_DELTA as u64 + 5000;
            for id in 0..total {
                let fp = match items.len() {
                    0 => lcg(&mut seed),
                    n if id % 4 == 0 => {
                        let base = items[lcg(&mut seed) as usize % n].0;
                        base ^ (1 << (lcg(&mut seed) % 64))
                            ^ (1 << (lcg(&mut seed) % 64))
                            ^ (1 << (lcg(&mut seed) % 64))
                    }
                    _ => lcg(&mut seed),
                };
                idx.insert(fp, id);
                items.push((fp, id));
                if id % 40_000 == 39_999 || id == total - 1 {
                    let qs: Vec<u64> = (0..40)
                        .map(|j| items[(lcg(&mut seed) as usize) % items.len()].0 ^ (j as u64 & 3))
                        .collect();
                    let mut many = Vec::new();
                    idx.query_many(&qs, &mut many);
                    for (qi, &q) in qs.iter().enumerate() {
                        let want = brute(&items, q, 3);
                        let mut got = Vec::new();
                        idx.query(q, &mut got);
                        got.sort_unstable();
                        assert_eq!(got, want, "query {q:x} after {} inserts", id + 1);
                        let mut batched: Vec<Match> = many.iter().filter(|&&(i, _)| i == qi).map(|&(_, m)| m).collect();
                        batched.sort_unstable();
                        assert_eq!(batched, want, "batched query {q:x}");
                    }
                }
            }
            idx.wait_merged();
        }
    }

    #[test]
    fn merges_keep_every_fingerprint() {
        let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
        let mut seed = 7;
        let items: Vec<(u64, u64)> = (0..(MIN_DELTA as u64 * 2 + 100)).map(|i| (lcg(&mut seed), i)).collect();
        for &(fp, id) in &items {
            idx.insert(fp, id);
        }
        idx.wait_merged();
        assert_eq!(idx.len(), items.len());
        for &(fp, id) in items.iter().step_by(997) {
            let mut out = Vec::new();
            idx.query(fp ^ 0b101, &mut out);
            assert!(out.contains(&Match { fp, id, distance: 2 }), "{fp:x}");
        }
    }

    #[test]
    fn repeats_across_merges_are_reported_once_per_id() {
        // Re-inserted fingerprints land in the delta while their first copy is
        // in the main run (insert does not look there); merges move them to
        // `extras`. Before, during and after merges each id is reported once.
        let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
        let mut seed = 3;
        let mut items: Vec<(u64, u64)> = Vec::new();
        let mut probes = Vec::new();
        for id in 0..(MIN_DELTA as u64 * 3) {
            let fp = if id % 997 == 0 && !items.is_empty() {
                let old = items[(lcg(&mut seed) % items.len() as u64) as usize].0;
                probes.push(old);
                old
            } else {
                lcg(&mut seed)
            };
            idx.insert(fp, id);
            items.push((fp, id));
            if id % 20_011 == 0 {
                for &q in probes.iter().rev().take(20) {
                    let mut got = Vec::new();
                    idx.query(q ^ 0b11, &mut got);
                    got.sort_unstable();
                    assert_eq!(got, brute(&items, q ^ 0b11, 3));
                }
            }
        }
        idx.wait_merged();
        for &q in &probes {
            let mut got = Vec::new();
            idx.query(q, &mut got);
            got.sort_unstable();
            assert_eq!(got, brute(&items, q, 3));
        }
        let mut batch = Vec::new();
        idx.query_many(&probes, &mut batch);
        assert_eq!(
            batch.len(),
            probes.iter().map(|&q| brute(&items, q, 3).len()).sum::<usize>()
        );
        assert_eq!(idx.items(), {
            let mut v = items.clone();
            v.sort_unstable();
            v
        });
    }

    #[test]
    fn snapshots_round_trip_and_refuse_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tables.bin");
        let design = Design::paper_k3(10).unwrap();
        let idx = LiveIndex::new(design.clone(), 3);
        let mut seed = 5;
        let mut items: Vec<(u64, u64)> = (0..5000).map(|i| (lcg(&mut seed), i)).collect();
        idx.bulk_load(items.iter().copied());
        // A delta, a repeated fingerprint, and a repeat of a main-run fingerprint.
        for id in 5000..5100 {
            let fp = if id % 10 == 0 {
                items[id as usize % 100].0
            } else {
                lcg(&mut seed)
            };
            idx.insert(fp, id);
            items.push((fp, id));
        }
        idx.save(&path, 77).unwrap();
        let (back, mark) = LiveIndex::load(&path, design.clone(), 3).unwrap();
        assert_eq!(mark, 77);
        assert_eq!(back.len(), idx.len());
        assert_eq!(back.items(), idx.items());
        for &(fp, _) in items.iter().step_by(13) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            idx.query(fp ^ 0b1001, &mut a);
            back.query(fp ^ 0b1001, &mut b);
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
            assert_eq!(b, brute(&items, fp ^ 0b1001, 3));
        }
        // Another design or k is refused.
        let e = LiveIndex::load(&path, Design::paper_k3(4).unwrap(), 3).unwrap_err();
        assert!(matches!(e, SnapshotError::Mismatch { .. }), "{e}");
        assert!(LiveIndex::load(&path, design.clone(), 2).is_err());
        // A flipped byte anywhere, or a truncation, is refused, never a panic.
        let bytes = std::fs::read(&path).unwrap();
        for at in [0, 9, 40, 100, bytes.len() / 2, bytes.len() - 20, bytes.len() - 3] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            std::fs::write(&path, &bad).unwrap();
            assert!(LiveIndex::load(&path, design.clone(), 3).is_err(), "flip at {at}");
        }
        for len in [0, 7, 60, bytes.len() / 3, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..len]).unwrap();
            assert!(LiveIndex::load(&path, design.clone(), 3).is_err(), "truncated to {len}");
        }
        let e = LiveIndex::load(&dir.path().join("none"), design, 3).unwrap_err();
        assert!(e.is_missing());
    }

    #[test]
    fn duplicates_are_stored_once_and_reported_per_id() {
        let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
        for id in 0..1000 {
            idx.insert(0, id);
        }
        idx.insert(0b111, 5000);
        assert_eq!(idx.distinct(), 2);
        let mut out = Vec::new();
        let st = idx.query_stats(0b1, &mut out);
        assert_eq!(out.len(), 1001);
        assert!(st.examined <= 2 * 10, "duplicates lengthened the probe: {st:?}");
        assert_eq!(
            idx.nearest(0b1),
            Some(Match {
                fp: 0,
                id: 0,
                distance: 1
            })
        );
        // A query far from 0 but sharing prefixes examines nothing of the crowd.
        let mut out = Vec::new();
        let st = idx.query_stats(0xF000_0000_0000_000F, &mut out);
        assert!(out.is_empty());
        assert!(st.examined <= 2 * 10, "{st:?}");
    }

    #[test]
    fn clustered_sets_keep_probes_bounded() {
        // 64 clusters of 500 fingerprints, each within 8 bits of its centre
        // (simhash clusters similar pages, Manku §4.2).
        let mut seed = 11;
        let mut items = Vec::new();
        for c in 0..64 {
            let centre = lcg(&mut seed);
            for j in 0..500u64 {
                let r = lcg(&mut seed);
                let bits: Vec<u8> = (0..8).map(|s| ((r >> (s * 8)) & 63) as u8).collect();
                items.push((flip(centre, &bits), c * 1000 + j));
            }
        }
        let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
        idx.bulk_load(items.iter().copied());
        let mut worst = 0;
        for &(fp, _) in items.iter().step_by(37) {
            let mut out = Vec::new();
            let st = idx.query_stats(fp ^ 1, &mut out);
            worst = worst.max(st.examined);
            out.sort_unstable();
            assert_eq!(out, brute(&items, fp ^ 1, 3));
        }
        // A full scan would examine 32 000 entries per table.
        assert!(worst < 32_000, "worst probe {worst}");
    }
}
