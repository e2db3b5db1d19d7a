//! The mutable layer of a [`super::LiveIndex`] (index pipeline: every
//! insert lands here first; frozen and merged into a run when it is full):
//! per table a hash of 64-byte bucket lines, and a set of its fingerprints.

use super::{prefetch, Geometry, ROUND};

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
/// bucket when full) and doubles whenever the delta outgrows it, so a delta
/// created small takes the memory of the entries it holds, not of the size
/// at which it will be frozen.
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
    pub(super) spill: Vec<Vec<u64>>,
    /// Word offset of the first 64-byte-aligned line in each `lines` vector.
    off: Vec<usize>,
    /// Buckets per table.
    pub(super) nb: usize,
    /// Linear probing, load at most 1/2: `tag << 32 | index + 1`, 0 = free.
    pub(super) set: Vec<u64>,
}

/// Multiplier of the existence set's hash (2^64 / golden ratio).
const SET_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// Fingerprints inline in a delta bucket line (after the header word).
const LINE_FPS: usize = 7;
/// Average entries per delta bucket when the delta is full.
const DELTA_LOAD: usize = 6;

impl Delta {
    /// An empty delta with room for `cap` entries without growing.
    #[cfg(test)]
    pub(super) fn new(geo: &Geometry, cap: usize) -> Delta {
        Self::with_lines_for(geo, cap, cap)
    }

    /// An empty delta whose set has room for `cap` entries, and whose bucket
    /// lines (two thirds of a full delta's bytes) and entry vectors are
    /// sized for `lines_for` entries and grow as it fills. The set stays
    /// sized for `cap`: its growth would reinsert every entry at a random
    /// slot, where doubling the lines reads and writes them in order
    /// ([`Delta::double`]).
    pub(super) fn with_lines_for(geo: &Geometry, cap: usize, lines_for: usize) -> Delta {
        let t = geo.specs.len();
        let lines_for = lines_for.min(cap);
        let nb = lines_for.div_ceil(DELTA_LOAD).clamp(16, Self::max_buckets(geo));
        let mut d = Delta {
            fps: Vec::with_capacity(lines_for),
            ids: Vec::with_capacity(lines_for),
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
    pub(super) fn max_buckets(geo: &Geometry) -> usize {
        let p = geo.specs.iter().map(|s| s.prefix()).min().unwrap_or(0);
        1usize << p.min(30)
    }

    /// `nb` zeroed lines (zeroed pages from the allocator, not a fill) and
    /// the word offset of the first 64-byte boundary.
    pub(super) fn zeroed_lines(nb: usize) -> (Vec<u64>, usize) {
        let v = vec![0u64; nb * 8 + 8];
        let off = (v.as_ptr() as usize).next_multiple_of(64) - v.as_ptr() as usize;
        (v, off / 8)
    }

    /// Bucket of `fp` in table `i` ([`bucket_of`] among this delta's buckets).
    #[inline(always)]
    pub(super) fn bucket(&self, geo: &Geometry, i: usize, fp: u64) -> usize {
        bucket_of(geo, i, fp, self.nb)
    }

    /// Word index of bucket `b`'s line in table `i`'s `lines`.
    #[inline(always)]
    pub(super) fn line(&self, i: usize, b: usize) -> usize {
        self.off[i] + b * 8
    }

    pub(super) fn len(&self) -> usize {
        self.fps.len()
    }

    /// Slot of `fp` in the set and its tag.
    #[inline(always)]
    pub(super) fn slot(&self, fp: u64) -> (usize, u64) {
        let h = fp.wrapping_mul(SET_MUL);
        let mask = self.set.len() - 1;
        ((h >> 32) as usize & mask, h & 0xFFFF_FFFF)
    }

    /// Prefetches what [`Delta::contains`] reads first.
    #[inline(always)]
    pub(super) fn prefetch_set(&self, fp: u64) {
        if !self.set.is_empty() {
            prefetch(self.set.as_ptr().wrapping_add(self.slot(fp).0));
        }
    }

    /// Position of `fp` in insertion order, if stored (one set slot, usually
    /// one cache line).
    #[inline]
    pub(super) fn position(&self, fp: u64) -> Option<usize> {
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
    pub(super) fn contains(&self, fp: u64) -> bool {
        self.position(fp).is_some()
    }

    pub(super) fn set_insert(&mut self, fp: u64, idx: usize) {
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
    pub(super) fn prepare(&self, geo: &Geometry, fp: u64) -> [u32; ROUND] {
        let mut bk = [0u32; ROUND];
        for (i, b) in bk.iter_mut().enumerate().take(self.lines.len()) {
            *b = self.bucket(geo, i, fp) as u32;
            prefetch(self.lines[i].as_ptr().wrapping_add(self.line(i, *b as usize)));
        }
        bk
    }

    /// Appends `fp` (not stored yet); `bk` from [`Delta::prepare`].
    pub(super) fn push(&mut self, geo: &Geometry, fp: u64, id: u64, bk: &[u32; ROUND]) {
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
        // Past its buckets' planned load: double them (amortized O(t) per
        // push, as every entry is added again at most about twice overall).
        if self.fps.len() > DELTA_LOAD * self.nb && 2 * self.nb <= Self::max_buckets(geo) {
            self.double(geo);
        }
    }

    /// Adds `fp` to bucket `b` of table `i`.
    #[inline(always)]
    pub(super) fn add(&mut self, i: usize, b: usize, fp: u64) {
        let at = self.line(i, b);
        add_to(&mut self.lines[i], &mut self.spill[i], at, fp);
    }

    /// Doubles the set and reinserts every entry (the newest included).
    pub(super) fn grow_set(&mut self) {
        self.set = vec![0u64; (2 * self.set.len()).max(64)];
        for idx in 0..self.fps.len() {
            self.set_insert(self.fps[idx], idx);
        }
    }

    /// Doubles every table's buckets. A bucket is `(h * nb) >> 32` of a
    /// 32-bit hash h, so old bucket b splits into new buckets 2b and 2b + 1:
    /// the old lines are read and the new ones written in order, one pass
    /// each, instead of one random write per entry.
    pub(super) fn double(&mut self, geo: &Geometry) {
        let nb = 2 * self.nb;
        for i in 0..self.lines.len() {
            let (mut lines, off) = Self::zeroed_lines(nb);
            let mut spill = Vec::new();
            let old = &self.lines[i];
            let old_spill = &self.spill[i];
            for b in 0..self.nb {
                for_each_in_bucket(old, old_spill, self.line(i, b), |words| {
                    for &fp in words {
                        add_to(&mut lines, &mut spill, off + bucket_of(geo, i, fp, nb) * 8, fp);
                    }
                });
            }
            self.lines[i] = lines;
            self.spill[i] = spill;
            self.off[i] = off;
        }
        self.nb = nb;
    }

    /// Prefetches the bucket lines a probe for `q` reads first (a query
    /// issues this before probing the main run, so the misses overlap).
    #[inline(always)]
    pub(super) fn prefetch_probe(&self, geo: &Geometry, q: u64) {
        if !self.fps.is_empty() {
            self.prepare(geo, q);
        }
    }

    #[inline(always)]
    pub(super) fn probe(&self, geo: &Geometry, q: u64, mut emit: impl FnMut(u64, u64, u32)) -> usize {
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
            examined += for_each_in_bucket(&self.lines[i], &self.spill[i], self.line(i, b), |words| {
                for &c in words {
                    let x = c ^ q;
                    let d = x.count_ones();
                    if d <= geo.k && geo.first_table(x) == i {
                        emit(c, self.id_of(c), d);
                    }
                }
            });
        }
        examined
    }

    /// The id stored with `fp` (a match; matches are rare, so ids are not
    /// kept in the bucket lines).
    #[cold]
    pub(super) fn id_of(&self, fp: u64) -> u64 {
        self.position(fp).map_or(0, |p| self.ids[p])
    }

    pub(super) fn items(&self) -> Vec<(u64, u64)> {
        self.fps.iter().copied().zip(self.ids.iter().copied()).collect()
    }

    pub(super) fn bytes(&self) -> usize {
        self.fps.capacity() * 16
            + self.set.capacity() * 8
            + self.lines.iter().map(|l| l.capacity() * 8).sum::<usize>()
            + self.spill.iter().map(|s| s.capacity() * 8).sum::<usize>()
    }
}

/// Bucket of `fp` in table `i` among `nb`: a multiplicative hash of its
/// prefix bits, reduced to `0..nb`.
#[inline(always)]
fn bucket_of(geo: &Geometry, i: usize, fp: u64, nb: usize) -> usize {
    let h = (fp & geo.masks[i]).wrapping_mul(SET_MUL) >> 32;
    ((h * nb as u64) >> 32) as usize
}

/// Calls `f` with the fingerprints of the bucket whose line starts at word
/// `at` of `lines`: its inline ones, then each spill line's, newest (possibly
/// partly filled) first. Returns the bucket's entry count.
#[inline(always)]
fn for_each_in_bucket(lines: &[u64], spill: &[u64], at: usize, mut f: impl FnMut(&[u64])) -> usize {
    let head = lines[at];
    let count = (head & 0xFFFF_FFFF) as usize;
    f(&lines[at + 1..at + 1 + count.min(LINE_FPS)]);
    if count > LINE_FPS {
        let left = count - LINE_FPS;
        let mut m = (left - 1) % LINE_FPS + 1;
        let mut link = head >> 32;
        while link != 0 {
            let s = (link - 1) as usize * 8;
            f(&spill[s + 1..s + 1 + m]);
            m = LINE_FPS;
            link = spill[s];
        }
    }
    count
}

/// Adds `fp` to the bucket whose line starts at word `at` of `lines`. Spill
/// lines are linked from the newest back to the oldest and the header links
/// the newest, so an append touches the header line and at most the newest
/// spill line.
#[inline(always)]
fn add_to(lines: &mut [u64], spill: &mut Vec<u64>, at: usize, fp: u64) {
    let count = (lines[at] & 0xFFFF_FFFF) as usize;
    lines[at] += 1;
    if count < LINE_FPS {
        lines[at + 1 + count] = fp;
        return;
    }
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
