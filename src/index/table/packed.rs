//! One sealed table of a run (index pipeline: built by [`super::Run`] when a
//! delta is merged, probed by every query): the sorted distinct permuted
//! fingerprints, packed to the bits below a directory of bucket offsets.

use super::{huge_vec, prefetch, Ids, PAD};
use crate::index::persist::{SnapReader, SnapWriter, SnapshotError};

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
    pub(super) data: Vec<u8>,
    pub(super) dir: Vec<u32>,
    pub(super) bits: u32,
    pub(super) width: usize,
    /// Mask of the stored low `64 - bits` bits.
    pub(super) low: u64,
    pub(super) len: usize,
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
    pub(super) fn bits_for(n: usize, prefix: u32) -> u32 {
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
    pub(super) fn bucket_of(&self, pq: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            (pq >> (64 - self.bits)) as usize
        }
    }

    /// Entries sharing the top `bits` bits with `pq`.
    #[inline(always)]
    pub(super) fn bucket(&self, pq: u64) -> (usize, usize) {
        let b = self.bucket_of(pq);
        // The directory has 2^bits + 1 entries, so b + 1 is in range.
        (self.dir[b] as usize, self.dir[b + 1] as usize)
    }

    /// The stored bytes of entry `j` (and whatever follows), as a u64.
    #[inline(always)]
    pub(super) fn raw(&self, j: usize) -> u64 {
        let at = j * self.width;
        assert!(at + 8 <= self.data.len());
        // SAFETY: bounds checked above; the data has PAD bytes after the last
        // entry, so the check never fails for j < len.
        u64::from_le(unsafe { (self.data.as_ptr().add(at) as *const u64).read_unaligned() })
    }

    /// Position of the permuted key `pk`, if stored.
    #[inline]
    pub(super) fn find(&self, pk: u64) -> Option<usize> {
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
    pub(super) fn merged_runs(&self, add: &[u64], prefix: u32, ids: Option<(&Ids, &[u64])>) -> Option<(Table, Ids)> {
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
    pub(super) fn prefetch_dir(&self, pq: u64) {
        prefetch(self.dir.as_ptr().wrapping_add(self.bucket_of(pq)));
    }

    #[inline(always)]
    pub(super) fn prefetch_range(&self, (lo, hi): (usize, usize)) {
        // Every cache line of the range (a bucket is one to three lines).
        let p = self.data.as_ptr() as usize;
        let mut line = (p + lo * self.width) & !63;
        let end = p + hi * self.width;
        while line <= end {
            prefetch(line as *const u8);
            line += 64;
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.data.capacity() + self.dir.capacity() * 4
    }

    /// Distinct cache lines a probe for `pq` reads: the directory words of
    /// its bucket and every line of the bucket's entries (what
    /// `prefetch_range` fetches).
    pub(super) fn lines_touched(&self, pq: u64) -> usize {
        let b = self.bucket_of(pq);
        let line = |p: usize| p / 64;
        let d = self.dir.as_ptr() as usize;
        let dir_lines = 1 + usize::from(line(d + b * 4) != line(d + b * 4 + 7));
        let (lo, hi) = self.bucket(pq);
        let p = self.data.as_ptr() as usize;
        dir_lines + line(p + hi * self.width) - line(p + lo * self.width) + 1
    }

    pub(super) fn write(&self, w: &mut SnapWriter) -> Result<(), SnapshotError> {
        w.u32(self.bits)?;
        w.u32(self.width as u32)?;
        w.u64(self.dir.len() as u64)?;
        w.u64(self.data.len() as u64)?;
        w.u32s(&self.dir)?;
        w.bytes(&self.data)
    }

    /// Reads a table of `n` entries, checking its geometry so that no probe
    /// of a damaged file can index out of bounds.
    pub(super) fn read(r: &mut SnapReader, n: usize, prefix: u32) -> Result<Table, SnapshotError> {
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
