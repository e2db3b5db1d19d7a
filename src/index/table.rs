//! Live permuted tables (Manku §3.1): the index the crawl engine asks "is
//! there a stored fingerprint within k of this page's simhash?" while it keeps
//! inserting the fingerprints of new pages.
//!
//! # Layout
//!
//! A [`LiveIndex`] is three layers, each holding the same t tables:
//!
//! - the **main run** ([`Run`], immutable, shared by `Arc`): per table a sorted
//!   `Vec<u64>` of *permuted, distinct* fingerprints (8 bytes per entry) and a
//!   directory of `u32` offsets on the top `b` permuted bits (b ≈ log2 n − 3,
//!   about 0.5 byte per entry), so a probe is one directory read plus one
//!   short scan of about 8 consecutive entries. Table 0 also keeps, parallel to
//!   its keys, the page id of each fingerprint (8 bytes). A match found in
//!   table i > 0 gets its id by one exact probe of table 0 — matches are rare,
//!   so ids cost 8 bytes per fingerprint once, not once per table.
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

/// Bytes after the last packed entry, so an unaligned 8-byte load of any
/// entry stays inside the allocation.
const PAD: usize = 8;

/// One sealed table: the sorted distinct permuted fingerprints of a run,
/// packed, with a directory on their top `bits` bits.
///
/// Entries in one directory bucket share their top `bits` bits, so only the
/// low `64 - bits` bits are kept, in `width` bytes (little-endian; 6 bytes per
/// entry from 2^18 fingerprints, 5 from 2^26). A probe reads the two
/// directory words of its bucket, then scans the bucket (about 4 to 8
/// entries, one or two cache lines): the XOR of an entry with the permuted
/// query, masked to the stored bits, is the full XOR, since the top bits are
/// equal in the bucket.
#[derive(Debug, Default)]
pub(crate) struct Table {
    data: Vec<u8>,
    dir: Vec<u32>,
    bits: u32,
    width: usize,
    /// Mask of the stored low `64 - bits` bits.
    low: u64,
    len: usize,
}

/// Fills a [`Table`] from permuted keys pushed in ascending order.
pub(crate) struct TableBuilder {
    t: Table,
}

impl TableBuilder {
    /// A builder for exactly `n` keys of a table with prefix length `prefix`.
    pub(crate) fn new(n: usize, prefix: u32) -> TableBuilder {
        let bits = Self::bits_for(n, prefix);
        let width = (64 - bits as usize).div_ceil(8);
        let low = if bits == 0 { u64::MAX } else { (1u64 << (64 - bits)) - 1 };
        let mut data = huge_vec(n * width + PAD);
        data.resize(n * width + PAD, 0u8);
        let mut dir = huge_vec((1usize << bits) + 1);
        dir.resize((1usize << bits) + 1, 0u32);
        TableBuilder {
            t: Table {
                data,
                dir,
                bits,
                width,
                low,
                len: 0,
            },
        }
    }

    /// Directory bits of a table of `n` keys: about 4 to 8 entries per
    /// bucket; never beyond the table's prefix, so a bucket never splits a
    /// prefix range.
    fn bits_for(n: usize, prefix: u32) -> u32 {
        let log2 = usize::BITS - 1 - n.max(1).leading_zeros();
        log2.saturating_sub(2).min(28).min(prefix)
    }

    /// Appends the next key (not smaller than the previous one).
    #[inline]
    pub(crate) fn push(&mut self, key: u64) {
        let t = &mut self.t;
        // One 8-byte store; the bytes past `width` are overwritten by the
        // next entry or land in the padding.
        let at = t.len * t.width;
        t.data[at..at + 8].copy_from_slice(&key.to_le_bytes());
        let b = t.bucket_of(key);
        t.dir[b + 1] += 1;
        t.len += 1;
    }

    /// The finished table.
    pub(crate) fn finish(mut self) -> Table {
        let dir = &mut self.t.dir;
        for i in 1..dir.len() {
            dir[i] += dir[i - 1];
        }
        self.t
    }
}

impl Table {
    #[inline(always)]
    fn bucket_of(&self, pq: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            (pq >> (64 - self.bits)) as usize
        }
    }

    /// Entries sharing the top `bits` bits with `pq`.
    #[inline(always)]
    fn bucket(&self, pq: u64) -> (usize, usize) {
        let b = self.bucket_of(pq);
        // The directory has 2^bits + 1 entries, so b + 1 is in range.
        (self.dir[b] as usize, self.dir[b + 1] as usize)
    }

    /// The stored bytes of entry `j` (and whatever follows), as a u64.
    #[inline(always)]
    fn raw(&self, j: usize) -> u64 {
        let at = j * self.width;
        assert!(at + 8 <= self.data.len());
        // SAFETY: bounds checked above; the data has PAD bytes after the last
        // entry, so the check never fails for j < len.
        u64::from_le(unsafe { (self.data.as_ptr().add(at) as *const u64).read_unaligned() })
    }

    /// Position of the permuted key `pk`, if stored.
    #[inline]
    fn find(&self, pk: u64) -> Option<usize> {
        let (lo, hi) = self.bucket(pk);
        (lo..hi).find(|&j| (self.raw(j) ^ pk) & self.low == 0)
    }

    /// This table plus the sorted keys `add` (none of them stored here),
    /// when the larger table keeps this one's geometry: old entries move in
    /// whole runs between the insertion points (one copy each, not decoded
    /// and re-encoded), only the new keys are encoded, and the directory is
    /// shifted by a running count. `ids` (table 0 only): this table's ids and
    /// those of `add`, merged in the same order. `None` when the directory
    /// bits change (the table crossed a power of two) or this table is empty.
    fn merged_runs(&self, add: &[u64], prefix: u32, ids: Option<(&Ids, &[u64])>) -> Option<(Table, Ids)> {
        let n = self.len + add.len();
        if self.len == 0 || TableBuilder::bits_for(n, prefix) != self.bits {
            return None;
        }
        let w = self.width;
        let mut data: Vec<u8> = huge_vec(n * w + PAD);
        let mut out_ids = match ids {
            Some((old, new)) => Ids::with_width(n, old.is_wide() || new.iter().any(|&id| Ids::too_wide(id))),
            None => Ids::default(),
        };
        let mut from = 0usize;
        for (j, &k) in add.iter().enumerate() {
            let (lo, hi) = self.bucket(k);
            let mut pos = lo.max(from);
            while pos < hi && (self.raw(pos) & self.low) < (k & self.low) {
                pos += 1;
            }
            data.extend_from_slice(&self.data[from * w..pos * w]);
            data.extend_from_slice(&k.to_le_bytes()[..w]);
            if let Some((old, new)) = ids {
                out_ids.extend_from(old, from..pos);
                out_ids.push(new[j]);
            }
            from = pos;
        }
        data.extend_from_slice(&self.data[from * w..self.len * w]);
        data.resize(n * w + PAD, 0);
        if let Some((old, _)) = ids {
            out_ids.extend_from(old, from..self.len);
        }
        let mut dir: Vec<u32> = huge_vec(self.dir.len());
        let mut before = 0usize;
        for (b, &d) in self.dir.iter().enumerate() {
            while before < add.len() && self.bucket_of(add[before]) < b {
                before += 1;
            }
            dir.push(d + before as u32);
        }
        let table = Table {
            data,
            dir,
            bits: self.bits,
            width: w,
            low: self.low,
            len: n,
        };
        Some((table, out_ids))
    }

    /// Every key in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.dir.len() - 1).flat_map(move |b| {
            let top = (b as u64).wrapping_shl(64 - self.bits);
            (self.dir[b] as usize..self.dir[b + 1] as usize).map(move |j| top | (self.raw(j) & self.low))
        })
    }

    #[inline(always)]
    fn prefetch_dir(&self, pq: u64) {
        prefetch(self.dir.as_ptr().wrapping_add(self.bucket_of(pq)));
    }

    #[inline(always)]
    fn prefetch_range(&self, (lo, hi): (usize, usize)) {
        // Every cache line of the range (a bucket is one to three lines).
        let p = self.data.as_ptr() as usize;
        let mut line = (p + lo * self.width) & !63;
        let end = p + hi * self.width;
        while line <= end {
            prefetch(line as *const u8);
            line += 64;
        }
    }

    fn bytes(&self) -> usize {
        self.data.capacity() + self.dir.capacity() * 4
    }

    /// Distinct cache lines a probe for `pq` reads: the directory words of
    /// its bucket and every line of the bucket's entries (what
    /// `prefetch_range` fetches).
    fn lines_touched(&self, pq: u64) -> usize {
        let b = self.bucket_of(pq);
        let line = |p: usize| p / 64;
        let d = self.dir.as_ptr() as usize;
        let dir_lines = 1 + usize::from(line(d + b * 4) != line(d + b * 4 + 7));
        let (lo, hi) = self.bucket(pq);
        let p = self.data.as_ptr() as usize;
        dir_lines + line(p + hi * self.width) - line(p + lo * self.width) + 1
    }

    fn write(&self, w: &mut SnapWriter) -> Result<(), SnapshotError> {
        w.u32(self.bits)?;
        w.u32(self.width as u32)?;
        w.u64(self.dir.len() as u64)?;
        w.u64(self.data.len() as u64)?;
        w.u32s(&self.dir)?;
        w.bytes(&self.data)
    }

    /// Reads a table of `n` entries, checking its geometry so that no probe
    /// of a damaged file can index out of bounds.
    fn read(r: &mut SnapReader, n: usize, prefix: u32) -> Result<Table, SnapshotError> {
        let bits = r.u32()?;
        let width = r.u32()? as usize;
        let dir_len = r.u64()?;
        let data_len = r.u64()?;
        if bits > 28 || bits > prefix || width != (64 - bits as usize).div_ceil(8) {
            return Err(r.corrupt(format!("table geometry bits={bits} width={width}")));
        }
        if dir_len != (1u64 << bits) + 1 || data_len != (n * width + PAD) as u64 {
            return Err(r.corrupt("table sizes do not match its entry count"));
        }
        r.has(dir_len * 4 + data_len)?;
        let mut dir = huge_vec(dir_len as usize);
        r.u32s(&mut dir, dir_len as usize)?;
        if dir[0] != 0 || dir.windows(2).any(|w| w[0] > w[1]) || dir[dir.len() - 1] as usize != n {
            return Err(r.corrupt("table directory is not a sorted partition of its entries"));
        }
        let mut data = huge_vec(data_len as usize);
        data.resize(data_len as usize, 0u8);
        r.bytes(&mut data)?;
        let low = if bits == 0 { u64::MAX } else { (1u64 << (64 - bits)) - 1 };
        Ok(Table {
            data,
            dir,
            bits,
            width,
            low,
            len: n,
        })
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

/// The page ids of a run, parallel to table 0: 4 bytes each while every id
/// fits in 32 bits (a crawl numbers its pages densely from 0), 8 bytes once
/// one does not. [`Ids::push`] widens on the first id that needs it.
#[derive(Debug, Clone)]
pub(crate) enum Ids {
    /// Every id < 2^32.
    Narrow(Vec<u32>),
    /// Any id.
    Wide(Vec<u64>),
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::Narrow(Vec::new())
    }
}

impl PartialEq for Ids {
    fn eq(&self, other: &Ids) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Ids {
    /// Room for `cap` ids (on huge pages when large), narrow.
    fn with_capacity(cap: usize) -> Ids {
        Ids::Narrow(huge_vec(cap))
    }

    /// Room for `cap` ids, wide from the start if `wide`.
    fn with_width(cap: usize, wide: bool) -> Ids {
        if wide {
            Ids::Wide(huge_vec(cap))
        } else {
            Ids::with_capacity(cap)
        }
    }

    /// Whether `id` needs the wide form.
    fn too_wide(id: u64) -> bool {
        id > u64::from(u32::MAX)
    }

    #[inline]
    fn push(&mut self, id: u64) {
        match self {
            Ids::Narrow(v) if !Ids::too_wide(id) => v.push(id as u32),
            Ids::Narrow(v) => {
                let mut w: Vec<u64> = huge_vec(v.capacity().max(v.len() + 1));
                w.extend(v.iter().map(|&x| u64::from(x)));
                w.push(id);
                *self = Ids::Wide(w);
            }
            Ids::Wide(v) => v.push(id),
        }
    }

    /// Appends `src[range]` (`self` must be wide if `src` is).
    fn extend_from(&mut self, src: &Ids, range: std::ops::Range<usize>) {
        match (self, src) {
            (Ids::Narrow(d), Ids::Narrow(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Wide(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Narrow(s)) => d.extend(s[range].iter().map(|&x| u64::from(x))),
            (this @ Ids::Narrow(_), Ids::Wide(s)) => {
                for &id in &s[range] {
                    this.push(id);
                }
            }
        }
    }

    /// Whether `self` is the wide form.
    fn is_wide(&self) -> bool {
        matches!(self, Ids::Wide(_))
    }

    /// Id `j`.
    #[inline(always)]
    pub(crate) fn get(&self, j: usize) -> u64 {
        match self {
            Ids::Narrow(v) => u64::from(v[j]),
            Ids::Wide(v) => v[j],
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.len(),
            Ids::Wide(v) => v.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (narrow, wide) = match self {
            Ids::Narrow(v) => (&v[..], &[][..]),
            Ids::Wide(v) => (&[][..], &v[..]),
        };
        narrow.iter().map(|&x| u64::from(x)).chain(wide.iter().copied())
    }

    /// Bytes held (capacity).
    fn bytes(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.capacity() * 4,
            Ids::Wide(v) => v.capacity() * 8,
        }
    }
}

/// A sealed, immutable set of t tables over the same distinct fingerprints,
/// with the page id of each fingerprint parallel to table 0.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) tables: Vec<Table>,
    pub(crate) ids: Ids,
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
        let tables: Vec<(Table, Ids)> = geo
            .specs
            .par_iter()
            .enumerate()
            .map(|(i, spec)| {
                let old = self.tables.get(i);
                if i == 0 {
                    let mut add: Vec<(u64, u64)> = more.iter().map(|&(fp, id)| (spec.permute(fp), id)).collect();
                    add.par_sort_unstable();
                    if let Some(t) = old {
                        let (keys, add_ids): (Vec<u64>, Vec<u64>) = add.iter().copied().unzip();
                        if let Some(done) = t.merged_runs(&keys, spec.prefix(), Some((&self.ids, &add_ids))) {
                            return done;
                        }
                    }
                    let old_keys = old.into_iter().flat_map(|t| t.iter());
                    let mut out = TableBuilder::new(n, spec.prefix());
                    let mut ids = Ids::with_width(n, self.ids.is_wide());
                    let old = old_keys.zip(self.ids.iter());
                    merge_sorted(old, add.into_iter(), |k, id| {
                        out.push(k);
                        ids.push(id);
                    });
                    (out.finish(), ids)
                } else {
                    let mut add: Vec<u64> = more.iter().map(|&(fp, _)| spec.permute(fp)).collect();
                    add.par_sort_unstable();
                    if let Some((t, _)) = old.and_then(|t| t.merged_runs(&add, spec.prefix(), None)) {
                        return (t, Ids::default());
                    }
                    let old_keys = old.into_iter().flat_map(|t| t.iter());
                    let mut out = TableBuilder::new(n, spec.prefix());
                    let old = old_keys.map(|k| (k, ()));
                    merge_sorted(old, add.into_iter().map(|k| (k, ())), |k, ()| out.push(k));
                    (out.finish(), Ids::default())
                }
            })
            .collect();
        let mut ids = Ids::default();
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
        let mut ranges = [(0usize, 0usize); ROUND];
        // Rounds of up to ROUND tables so the cache misses of different
        // tables overlap: directory prefetch, range prefetch, then the scans.
        for start in (0..self.tables.len()).step_by(ROUND) {
            let end = (start + ROUND).min(self.tables.len());
            for i in start..end {
                pqs[i - start] = geo.specs[i].permute(q);
                self.tables[i].prefetch_dir(pqs[i - start]);
            }
            for i in start..end {
                let r = self.tables[i].bucket(pqs[i - start]);
                self.tables[i].prefetch_range(r);
                ranges[i - start] = r;
            }
            for i in start..end {
                examined += self.scan(geo, i, q, pqs[i - start], ranges[i - start], &mut emit);
            }
        }
        examined
    }

    /// Scans entries `lo..hi` of table `i` (the bucket of `pq`, the query
    /// `q` permuted by table i) and emits the matches this table owns.
    #[inline(always)]
    fn scan(
        &self,
        geo: &Geometry,
        i: usize,
        q: u64,
        pq: u64,
        (lo, hi): (usize, usize),
        emit: &mut impl FnMut(u64, u64, u32),
    ) -> usize {
        let t = &self.tables[i];
        // One bounds check per bucket, then a tight loop: the table's fields
        // in registers, one unaligned load, xor, mask, popcount and compare
        // per entry (this loop is most of a batch sweep's time).
        assert!(lo <= hi && hi * t.width + PAD <= t.data.len());
        let (w, low, k) = (t.width, t.low, geo.k);
        let base = t.data.as_ptr();
        for j in lo..hi {
            // SAFETY: j < hi, and hi·w + PAD ≤ data.len() (checked above), so
            // the 8 bytes at j·w are inside the data.
            let raw = u64::from_le(unsafe { (base.add(j * w) as *const u64).read_unaligned() });
            let x = (raw ^ pq) & low;
            let d = x.count_ones();
            if d <= k {
                self.owned_match(geo, i, q, pq ^ x, j, d, emit);
            }
        }
        hi - lo
    }

    /// A candidate within k found in table `i` at position `j`: emitted if
    /// table i is the first table whose prefix it shares with the query (so
    /// every match is reported by exactly one table).
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
            self.ids.get(j)
        } else {
            match self.find(geo, c) {
                Some(p) => self.ids.get(p),
                None => return,
            }
        };
        emit(c, id, d);
    }

    /// Probes for a batch of queries, software-pipelined: while query s is
    /// scanned, the bucket ranges of query s + DEPTH are prefetched and the
    /// directory words of query s + 2·DEPTH. `emit(query index, fp, id,
    /// distance)`.
    #[inline(always)]
    pub(crate) fn probe_many(&self, geo: &Geometry, qs: &[u64], mut emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        const DEPTH: usize = 2;
        const SLOTS: usize = 2 * DEPTH + 1;
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
        let mut ranges = [[(0usize, 0usize); ROUND]; SLOTS];
        let mut examined = 0;
        let n = qs.len();
        for s in 0..n + 2 * DEPTH {
            if s < n {
                let slot = &mut pqs[s % SLOTS];
                for ((pq, spec), t) in slot.iter_mut().zip(&geo.specs).zip(&self.tables) {
                    *pq = spec.permute(qs[s]);
                    t.prefetch_dir(*pq);
                }
            }
            if s >= DEPTH && s - DEPTH < n {
                let m = (s - DEPTH) % SLOTS;
                for i in 0..nt {
                    let r = self.tables[i].bucket(pqs[m][i]);
                    self.tables[i].prefetch_range(r);
                    ranges[m][i] = r;
                }
            }
            if s >= 2 * DEPTH && s - 2 * DEPTH < n {
                let qi = s - 2 * DEPTH;
                let m = qi % SLOTS;
                let q = qs[qi];
                for i in 0..nt {
                    examined += self.scan(geo, i, q, pqs[m][i], ranges[m][i], &mut |c, id, d| emit(qi, c, id, d));
                }
            }
        }
        examined
    }

    /// Batch mode's probe of a large chunk of stored fingerprints `fs`: per
    /// table, the chunk is bucket-sorted (counting sort on the directory
    /// bits) and then swept in bucket order, so the table's directory and
    /// entries are read front to back, once per chunk, instead of at random
    /// once per probe. `emit(index in fs, query fp, query slot id, distance)`.
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
            counts.resize(t.dir.len(), 0);
            for &f in fs {
                counts[t.bucket_of(spec.permute(f))] += 1;
            }
            let mut at = 0u32;
            for c in counts.iter_mut() {
                let n = *c;
                *c = at;
                at += n;
            }
            for (j, &f) in fs.iter().enumerate() {
                let p = spec.permute(f);
                let b = t.bucket_of(p);
                sorted[counts[b] as usize] = (p, j as u32);
                counts[b] += 1;
            }
            for &(p, j) in &sorted {
                let j = j as usize;
                // The fingerprint from its permuted value: ALU work instead of
                // a random read of fs[j].
                let f = spec.unpermute(p);
                examined += self.scan(geo, i, f, p, t.bucket(p), &mut |c, id, d| emit(j, c, id, d));
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
        self.tables.iter().map(Table::bytes).sum::<usize>() + self.ids.bytes()
    }

    /// Every `(fp, id)` of the run (first ids only).
    fn items(&self, geo: &Geometry) -> Vec<(u64, u64)> {
        match self.tables.first() {
            Some(t) => t
                .iter()
                .zip(self.ids.iter())
                .map(|(k, id)| (geo.specs[0].unpermute(k), id))
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
        // 4, 10, 16 and 20 are the paper's designs; 6 and 8 the two-halves ones.
        let named = |t| (k == 3).then(|| Design::with_tables(3, t));
        let design = match settings.design {
            IndexDesign::Auto => None,
            IndexDesign::T4 => named(4),
            IndexDesign::T6 => named(6),
            IndexDesign::T8 => named(8),
            IndexDesign::T10 => named(10),
            IndexDesign::T16 => named(16),
            IndexDesign::T20 => named(20),
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
        self.save_tagged(path, watermark, 0)
    }

    /// [`LiveIndex::save`] with the tag of the crawl the index belongs to
    /// (read back by [`LiveIndex::load_tagged`]).
    pub fn save_tagged(&self, path: &Path, watermark: u64, crawl: u32) -> Result<(), SnapshotError> {
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
            crawl,
        })?;
        for t in &st.main.tables {
            t.write(&mut w)?;
        }
        w.u64s(st.main.ids.iter())?;
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
        Self::load_tagged(path, design, k).map(|(idx, mark, _)| (idx, mark))
    }

    /// [`LiveIndex::load`] that also returns the crawl tag the snapshot was
    /// saved with (0 when none).
    pub fn load_tagged(path: &Path, design: Design, k: u32) -> Result<(LiveIndex, u64, u32), SnapshotError> {
        let mut r = SnapReader::open(path)?;
        let h = r.header(&design, k)?;
        let idx = LiveIndex::new(design, k);
        let geo = &idx.inner.geo;
        let n = h.distinct as usize;
        let mut tables = Vec::with_capacity(geo.specs.len());
        for spec in &geo.specs {
            tables.push(Table::read(&mut r, n, spec.prefix())?);
        }
        r.has(h.distinct * 8)?;
        let mut ids = Ids::with_capacity(n);
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
        Ok((idx, h.watermark, h.crawl))
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
    use crate::index::oracle::{brute, flip};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn index_equals_brute_force(
            k in 0u32..=7,
            which in 0usize..8,
            base in proptest::collection::vec(any::<u64>(), 1..40),
            ops in proptest::collection::vec((any::<bool>(), 0usize..1000, proptest::collection::vec(any::<u8>(), 0..10)), 1..120),
        ) {
            let design = match which {
                0 => Design::paper_k3(4).unwrap(),
                1 => Design::paper_k3(10).unwrap(),
                2 => Design::paper_k3(16).unwrap(),
                3 => Design::paper_k3(20).unwrap(),
                4 => Design::for_k(k, 20),
                5 => Design::with_tables(k, 6),
                // The two-halves designs for k = 3 (6 tables p = 21, 8 p = 24).
                6 => Design::with_tables(3, 6),
                _ => Design::with_tables(3, 8),
            };
            // The k = 3 designs cover k = 3 only; use them for k <= 3.
            let k = if (4..6).contains(&which) { k } else { k.min(3) };
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
    fn run_by_run_merge_equals_a_rebuild() {
        // Table::merged_runs (copying old entries in runs) must produce the
        // very tables and ids a full rebuild of the union does, including new
        // keys next to old ones in the same bucket; with 32-bit ids, with new
        // ids that need 64 bits, and with an old run already wide.
        let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
        for (old_base, new_base, wide) in [
            (0u64, 1_000_000u64, false),
            (0, 1 << 40, true),
            (1 << 33, 1_000_000, true),
        ] {
            let mut seed = 11;
            let old: Vec<(u64, u64)> = (0..100_000).map(|i| (lcg(&mut seed), old_base + i)).collect();
            let mut more: Vec<(u64, u64)> = (0..5_000).map(|i| (lcg(&mut seed), new_base + i)).collect();
            more.extend(
                old.iter()
                    .step_by(50)
                    .map(|&(fp, id)| (fp ^ 1, new_base + 2_000_000 + id)),
            );
            more.extend(
                old.iter()
                    .skip(7)
                    .step_by(50)
                    .map(|&(fp, id)| (fp ^ (1 << 40), new_base + 3_000_000 + id)),
            );
            let held: std::collections::HashSet<u64> = old.iter().map(|p| p.0).collect();
            more.retain(|p| !held.contains(&p.0));
            more.sort_unstable();
            more.dedup_by_key(|p| p.0);
            let base = Run::build(&geo, &old);
            assert_eq!(base.ids.is_wide(), old_base > 0);
            let (merged, dups) = base.merged(&geo, &more);
            assert!(dups.is_empty());
            let all: Vec<(u64, u64)> = old.iter().chain(&more).copied().collect();
            let rebuilt = Run::build(&geo, &all);
            for (i, (a, b)) in merged.tables.iter().zip(&rebuilt.tables).enumerate() {
                // The same geometry, so this merge took the run-copying path.
                assert_eq!(a.bits, base.tables[i].bits, "table {i}");
                assert_eq!(a.dir, b.dir, "table {i} directory");
                assert_eq!(a.len, b.len);
                assert_eq!(
                    a.data[..a.len * a.width],
                    b.data[..b.len * b.width],
                    "table {i} entries"
                );
            }
            assert_eq!(merged.ids, rebuilt.ids);
            assert_eq!((merged.ids.is_wide(), rebuilt.ids.is_wide()), (wide, wide));
            let mut got = merged.items(&geo);
            got.sort_unstable();
            let mut want = all.clone();
            want.sort_unstable();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn ids_stay_narrow_until_an_id_needs_64_bits() {
        let mut ids = Ids::with_capacity(4);
        for id in [7, u64::from(u32::MAX), 0] {
            ids.push(id);
        }
        assert!(!ids.is_wide());
        assert_eq!(ids.bytes(), 4 * 4);
        ids.push(1 << 32);
        assert!(ids.is_wide());
        assert_eq!(ids.iter().collect::<Vec<_>>(), [7, u64::from(u32::MAX), 0, 1 << 32]);
        assert_eq!((ids.get(1), ids.get(3), ids.len()), (u64::from(u32::MAX), 1 << 32, 4));
        // Copying between the forms keeps the values.
        let mut narrow = Ids::with_capacity(2);
        narrow.push(5);
        let mut wide = Ids::with_width(8, true);
        wide.extend_from(&narrow, 0..1);
        wide.extend_from(&ids, 2..4);
        assert_eq!(wide.iter().collect::<Vec<_>>(), [5, 0, 1 << 32]);
        let mut n2 = Ids::with_capacity(8);
        n2.extend_from(&ids, 0..3);
        assert!(!n2.is_wide(), "values that fit stay narrow");
        n2.extend_from(&ids, 3..4);
        assert!(n2.is_wide());
        assert_eq!(n2, ids);
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
        // The paper's 4 and 10 tables, and the two-halves 6 tables (p = 21).
        for t in [4usize, 10, 6] {
            let idx = LiveIndex::new(Design::with_tables(3, t), 3);
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
        for t in [10, 6] {
            let idx = LiveIndex::new(Design::with_tables(3, t), 3);
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
            assert!(worst < 32_000, "{t} tables: worst probe {worst}");
        }
    }
}
