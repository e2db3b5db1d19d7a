//! One sealed table of a run (index pipeline: built by [`super::Run`] when a
//! delta is merged, probed by every query): the sorted distinct permuted
//! fingerprints, packed to the bits below a directory of bucket offsets,
//! in memory or in an unlinked file read with positioned reads.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{huge_vec, prefetch, Ids, PAD};
use crate::index::persist::{SnapReader, SnapWriter, SnapshotError};

/// Where a table's packed entries are (`PAD` bytes after the last one).
#[derive(Debug)]
pub(crate) enum Data {
    /// In memory.
    Mem(Vec<u8>),
    /// In an unlinked file of the index's spill directory
    /// ([`super::LiveIndex::spill_to`]): a probe reads its bucket's bytes
    /// with one positioned read, from the page cache, which the kernel may
    /// reclaim, not from the heap. Only the directory stays in memory.
    File { file: File, len: usize },
}

impl Default for Data {
    fn default() -> Self {
        Data::Mem(Vec::new())
    }
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::Mem(v) => v.len(),
            Data::File { len, .. } => *len,
        }
    }

    /// Bytes `from..to`.
    fn range(&self, from: usize, to: usize) -> std::io::Result<Cow<'_, [u8]>> {
        match self {
            Data::Mem(v) => Ok(Cow::Borrowed(&v[from..to])),
            Data::File { file, .. } => {
                let mut b = vec![0u8; to - from];
                file.read_exact_at(&mut b, from as u64)?;
                Ok(Cow::Owned(b))
            }
        }
    }

    /// The bytes in an unlinked file in `dir`.
    fn to_file(bytes: &[u8], dir: &Path) -> std::io::Result<Data> {
        let mut out = BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?);
        out.write_all(bytes)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        Ok(Data::File { file, len: bytes.len() })
    }
}

/// The little-endian u64 at byte `at` of `b` (which has 8 bytes there).
#[inline(always)]
fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// A probe's read of a spilled table failed: the probe sees an empty
/// bucket (a page may be decided new that a duplicate would have matched).
/// Logged once per process; nothing stored is lost.
pub(super) fn read_failed(e: &std::io::Error) {
    static LOGGED: AtomicBool = AtomicBool::new(false);
    if !LOGGED.swap(true, Ordering::Relaxed) {
        tracing::error!("index: reading a run spilled to disk failed ({e}); its probes find nothing");
    }
}

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
    pub(super) data: Data,
    pub(super) dir: Vec<u32>,
    pub(super) bits: u32,
    pub(super) width: usize,
    /// Mask of the stored low `64 - bits` bits.
    pub(super) low: u64,
    pub(super) len: usize,
}

/// Fills a [`Table`] from permuted keys pushed in ascending order.
pub(crate) struct TableBuilder {
    /// The table being built; its `data` is filled by `finish`.
    t: Table,
    sink: Sink,
}

/// Where a [`TableBuilder`] writes the packed entries.
enum Sink {
    Mem(Vec<u8>),
    /// An unlinked file, and the first write error.
    File(BufWriter<File>, Option<std::io::Error>),
}

impl TableBuilder {
    /// A builder for exactly `n` keys of a table with prefix length
    /// `prefix`, in memory, or in an unlinked file in `spill`.
    pub(crate) fn new(n: usize, prefix: u32, spill: Option<&Path>) -> std::io::Result<TableBuilder> {
        let bits = match spill {
            None => Self::bits_for(n, prefix),
            Some(_) => Self::bits_for_spilled(n, prefix),
        };
        let width = (64 - bits as usize).div_ceil(8);
        let low = if bits == 0 { u64::MAX } else { (1u64 << (64 - bits)) - 1 };
        let sink = match spill {
            None => {
                let mut data = huge_vec(n * width + PAD);
                data.resize(n * width + PAD, 0u8);
                Sink::Mem(data)
            }
            Some(dir) => Sink::File(BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?), None),
        };
        let mut dir = huge_vec((1usize << bits) + 1);
        dir.resize((1usize << bits) + 1, 0u32);
        Ok(TableBuilder {
            t: Table {
                data: Data::default(),
                dir,
                bits,
                width,
                low,
                len: 0,
            },
            sink,
        })
    }

    /// Directory bits of a table of `n` keys: about 4 to 8 entries per
    /// bucket; never beyond the table's prefix, so a bucket never splits a
    /// prefix range.
    pub(super) fn bits_for(n: usize, prefix: u32) -> u32 {
        let log2 = usize::BITS - 1 - n.max(1).leading_zeros();
        log2.saturating_sub(2).min(28).min(prefix)
    }

    /// Directory bits of a table of `n` keys whose entries are in a file:
    /// about 32 to 64 entries per bucket. A probe of such a table costs a
    /// positioned read whatever the bucket's size (a few hundred bytes from
    /// the page cache), so its directory, the part that stays in memory,
    /// takes an eighth of an in-memory table's: about 0.1 byte per entry.
    pub(super) fn bits_for_spilled(n: usize, prefix: u32) -> u32 {
        let log2 = usize::BITS - 1 - n.max(1).leading_zeros();
        log2.saturating_sub(5).min(28).min(prefix)
    }

    /// Appends the next key (not smaller than the previous one).
    #[inline]
    pub(crate) fn push(&mut self, key: u64) {
        let t = &mut self.t;
        match &mut self.sink {
            Sink::Mem(data) => {
                // One 8-byte store; the bytes past `width` are overwritten by
                // the next entry or land in the padding.
                let at = t.len * t.width;
                data[at..at + 8].copy_from_slice(&key.to_le_bytes());
            }
            Sink::File(out, err) => {
                if let Err(e) = out.write_all(&key.to_le_bytes()[..t.width]) {
                    err.get_or_insert(e);
                }
            }
        }
        let b = t.bucket_of(key);
        t.dir[b + 1] += 1;
        t.len += 1;
    }

    /// The finished table (the first write error of a spilling builder).
    pub(crate) fn finish(mut self) -> std::io::Result<Table> {
        self.t.data = match self.sink {
            Sink::Mem(data) => Data::Mem(data),
            Sink::File(_, Some(e)) => return Err(e),
            Sink::File(mut out, None) => {
                out.write_all(&[0u8; PAD])?;
                let file = out.into_inner().map_err(|e| e.into_error())?;
                Data::File {
                    file,
                    len: self.t.len * self.t.width + PAD,
                }
            }
        };
        let dir = &mut self.t.dir;
        for i in 1..dir.len() {
            dir[i] += dir[i - 1];
        }
        Ok(self.t)
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

    /// The bytes of entries `lo..hi` and the padding after them: `None`
    /// (logged) when reading a spilled table fails.
    #[inline]
    pub(super) fn entries(&self, lo: usize, hi: usize) -> Option<Cow<'_, [u8]>> {
        match self.data.range(lo * self.width, hi * self.width + PAD) {
            Ok(b) => Some(b),
            Err(e) => {
                read_failed(&e);
                None
            }
        }
    }

    /// Position of the permuted key `pk`, if stored.
    #[inline]
    pub(super) fn find(&self, pk: u64) -> Option<usize> {
        let (lo, hi) = self.bucket(pk);
        let b = self.entries(lo, hi)?;
        (0..hi - lo)
            .find(|&j| (read_u64(&b, j * self.width) ^ pk) & self.low == 0)
            .map(|j| lo + j)
    }

    /// This table with its entries in an unlinked file in `dir`.
    pub(super) fn spill(self, dir: &Path) -> std::io::Result<Table> {
        let data = match &self.data {
            Data::Mem(v) => Data::to_file(v, dir)?,
            Data::File { .. } => return Ok(self),
        };
        Ok(Table { data, ..self })
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
        let Data::Mem(old) = &self.data else {
            return None;
        };
        if ids.is_some_and(|(old, _)| old.is_file()) {
            return None;
        }
        if self.len == 0 || TableBuilder::bits_for(n, prefix) != self.bits {
            return None;
        }
        let w = self.width;
        let raw = |j: usize| read_u64(old, j * w);
        let mut data: Vec<u8> = huge_vec(n * w + PAD);
        let mut out_ids = match ids {
            Some((old, new)) => Ids::with_width(n, old.is_wide() || new.iter().any(|&id| Ids::too_wide(id))),
            None => Ids::default(),
        };
        let mut from = 0usize;
        for (j, &k) in add.iter().enumerate() {
            let (lo, hi) = self.bucket(k);
            let mut pos = lo.max(from);
            while pos < hi && (raw(pos) & self.low) < (k & self.low) {
                pos += 1;
            }
            data.extend_from_slice(&old[from * w..pos * w]);
            data.extend_from_slice(&k.to_le_bytes()[..w]);
            if let Some((old, new)) = ids {
                out_ids.extend_from(old, from..pos);
                out_ids.push(new[j]);
            }
            from = pos;
        }
        data.extend_from_slice(&old[from * w..self.len * w]);
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
            data: Data::Mem(data),
            dir,
            bits: self.bits,
            width: w,
            low: self.low,
            len: n,
        };
        Some((table, out_ids))
    }

    /// Calls `f` with every key in ascending order (a spilled table is read
    /// in chunks of 16 384 entries).
    pub(crate) fn for_each_key(&self, mut f: impl FnMut(u64)) -> std::io::Result<()> {
        const CHUNK: usize = 1 << 14;
        let w = self.width;
        let mut b = 0;
        let mut j = 0;
        while j < self.len {
            let end = match self.data {
                Data::Mem(_) => self.len,
                Data::File { .. } => (j + CHUNK).min(self.len),
            };
            let bytes = self.data.range(j * w, end * w + PAD)?;
            for e in j..end {
                while self.dir[b + 1] as usize <= e {
                    b += 1;
                }
                let top = (b as u64).wrapping_shl(64 - self.bits);
                f(top | (read_u64(&bytes, (e - j) * w) & self.low));
            }
            j = end;
        }
        Ok(())
    }

    /// Every key in ascending order (tests).
    #[cfg(test)]
    pub(crate) fn keys(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.len);
        self.for_each_key(|k| v.push(k)).expect("an in-memory table");
        v
    }

    #[inline(always)]
    pub(super) fn prefetch_dir(&self, pq: u64) {
        prefetch(self.dir.as_ptr().wrapping_add(self.bucket_of(pq)));
    }

    #[inline(always)]
    pub(super) fn prefetch_range(&self, (lo, hi): (usize, usize)) {
        let Data::Mem(data) = &self.data else {
            return;
        };
        // Every cache line of the range (a bucket is one to three lines).
        let p = data.as_ptr() as usize;
        let mut line = (p + lo * self.width) & !63;
        let end = p + hi * self.width;
        while line <= end {
            prefetch(line as *const u8);
            line += 64;
        }
    }

    pub(super) fn bytes(&self) -> usize {
        let data = match &self.data {
            Data::Mem(v) => v.capacity(),
            Data::File { .. } => 0,
        };
        data + self.dir.capacity() * 4
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
        let p = match &self.data {
            Data::Mem(v) => v.as_ptr() as usize,
            Data::File { .. } => 0,
        };
        dir_lines + line(p + hi * self.width) - line(p + lo * self.width) + 1
    }

    pub(super) fn write(&self, w: &mut SnapWriter) -> Result<(), SnapshotError> {
        w.u32(self.bits)?;
        w.u32(self.width as u32)?;
        w.u64(self.dir.len() as u64)?;
        w.u64(self.data.len() as u64)?;
        w.u32s(&self.dir)?;
        const CHUNK: usize = 1 << 20;
        let len = self.data.len();
        for at in (0..len).step_by(CHUNK) {
            let bytes = self.data.range(at, (at + CHUNK).min(len)).map_err(|e| w.fail(e))?;
            w.bytes(&bytes)?;
        }
        Ok(())
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
            data: Data::Mem(data),
            dir,
            bits,
            width,
            low,
            len: n,
        })
    }
}
