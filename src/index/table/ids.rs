//! The page ids of a sealed run, parallel to table 0 (index pipeline: filled
//! when a run is built or merged, read when a query matches): 32 bits each
//! while every id fits, 64 bits after the first that does not; in memory,
//! or in an unlinked file beside a spilled run's tables.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::huge_vec;
use super::packed::read_failed;

/// The page ids of a run, parallel to table 0: 4 bytes each while every id
/// fits in 32 bits (a crawl numbers its pages densely from 0), 8 bytes once
/// one does not. [`Ids::push`] widens on the first id that needs it.
#[derive(Debug)]
pub(crate) enum Ids {
    /// Every id < 2^32.
    Narrow(Vec<u32>),
    /// Any id.
    Wide(Vec<u64>),
    /// In an unlinked file of the index's spill directory (a spilled run's,
    /// [`IdsBuilder::spilling`]): `len` little-endian ids of 4 bytes, or 8
    /// when `wide`. A match reads its id with one positioned read; matches
    /// are rare, so a spilled run keeps none of its ids in the heap.
    File { file: File, len: usize, wide: bool },
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::Narrow(Vec::new())
    }
}

impl PartialEq for Ids {
    /// Equal ids in the same order (a file that cannot be read equals nothing).
    fn eq(&self, other: &Ids) -> bool {
        self.len() == other.len() && matches!((self.to_vec(), other.to_vec()), (Ok(a), Ok(b)) if a == b)
    }
}

impl Ids {
    /// Room for `cap` ids (on huge pages when large), narrow.
    pub(super) fn with_capacity(cap: usize) -> Ids {
        Ids::Narrow(huge_vec(cap))
    }

    /// Room for `cap` ids, wide from the start if `wide`.
    pub(super) fn with_width(cap: usize, wide: bool) -> Ids {
        if wide {
            Ids::Wide(huge_vec(cap))
        } else {
            Ids::with_capacity(cap)
        }
    }

    /// Whether `id` needs the wide form.
    pub(super) fn too_wide(id: u64) -> bool {
        id > u64::from(u32::MAX)
    }

    #[inline]
    pub(super) fn push(&mut self, id: u64) {
        match self {
            Ids::Narrow(v) if !Ids::too_wide(id) => v.push(id as u32),
            Ids::Narrow(v) => {
                let mut w: Vec<u64> = huge_vec(v.capacity().max(v.len() + 1));
                w.extend(v.iter().map(|&x| u64::from(x)));
                w.push(id);
                *self = Ids::Wide(w);
            }
            Ids::Wide(v) => v.push(id),
            Ids::File { .. } => unreachable!("a run's ids in a file are written by an IdsBuilder"),
        }
    }

    /// Appends `src[range]` (`self` must be wide if `src` is; both in memory).
    pub(super) fn extend_from(&mut self, src: &Ids, range: std::ops::Range<usize>) {
        match (self, src) {
            (Ids::Narrow(d), Ids::Narrow(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Wide(s)) => d.extend_from_slice(&s[range]),
            (Ids::Wide(d), Ids::Narrow(s)) => d.extend(s[range].iter().map(|&x| u64::from(x))),
            (this @ Ids::Narrow(_), Ids::Wide(s)) => {
                for &id in &s[range] {
                    this.push(id);
                }
            }
            (Ids::File { .. }, _) | (_, Ids::File { .. }) => {
                unreachable!("runs whose ids are in files merge through an IdsBuilder")
            }
        }
    }

    /// Whether `self` is the wide form.
    pub(super) fn is_wide(&self) -> bool {
        matches!(self, Ids::Wide(_) | Ids::File { wide: true, .. })
    }

    /// Whether the ids are in a file.
    pub(super) fn is_file(&self) -> bool {
        matches!(self, Ids::File { .. })
    }

    /// Id `j` (`j < len`); `None` (logged) when reading the file fails.
    #[inline(always)]
    pub(crate) fn get(&self, j: usize) -> Option<u64> {
        match self {
            Ids::Narrow(v) => Some(u64::from(v[j])),
            Ids::Wide(v) => Some(v[j]),
            Ids::File { file, wide, .. } => {
                let w = if *wide { 8 } else { 4 };
                let mut b = [0u8; 8];
                match file.read_exact_at(&mut b[..w], (j * w) as u64) {
                    Ok(()) => Some(u64::from_le_bytes(b)),
                    Err(e) => {
                        read_failed(&e);
                        None
                    }
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.len(),
            Ids::Wide(v) => v.len(),
            Ids::File { len, .. } => *len,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in order, read from the file in chunks of [`CHUNK`].
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor {
            ids: self,
            at: 0,
            buf: Vec::new(),
            from: 0,
        }
    }

    /// Every id, in order (tests and comparisons).
    pub(crate) fn to_vec(&self) -> std::io::Result<Vec<u64>> {
        let mut c = self.cursor();
        (0..self.len()).map(|_| c.next()).collect()
    }

    /// Heap bytes held (capacity; nothing for ids in a file).
    pub(super) fn bytes(&self) -> usize {
        match self {
            Ids::Narrow(v) => v.capacity() * 4,
            Ids::Wide(v) => v.capacity() * 8,
            Ids::File { .. } => 0,
        }
    }
}

/// Ids a [`Cursor`] reads from a file at a time.
const CHUNK: usize = 1 << 14;

/// Reads a run's ids in order ([`Ids::cursor`]).
pub(crate) struct Cursor<'a> {
    ids: &'a Ids,
    at: usize,
    /// Ids `from..from + buf.len()` of a file.
    buf: Vec<u64>,
    from: usize,
}

impl Cursor<'_> {
    /// The next id (past the last: an error).
    pub(crate) fn next(&mut self) -> std::io::Result<u64> {
        let j = self.at;
        if j >= self.ids.len() {
            return Err(std::io::Error::other("index: read past a run's last id"));
        }
        self.at += 1;
        match self.ids {
            Ids::Narrow(v) => Ok(u64::from(v[j])),
            Ids::Wide(v) => Ok(v[j]),
            Ids::File { file, len, wide } => {
                if j >= self.from + self.buf.len() {
                    let w = if *wide { 8 } else { 4 };
                    let n = CHUNK.min(len - j);
                    let mut bytes = vec![0u8; n * w];
                    file.read_exact_at(&mut bytes, (j * w) as u64)?;
                    self.buf.clear();
                    self.buf.extend(bytes.chunks_exact(w).map(|c| {
                        let mut b = [0u8; 8];
                        b[..w].copy_from_slice(c);
                        u64::from_le_bytes(b)
                    }));
                    self.from = j;
                }
                Ok(self.buf[j - self.from])
            }
        }
    }
}

/// Builds a run's ids in order: in memory, or written to an unlinked file.
pub(crate) enum IdsBuilder {
    Mem(Ids),
    File {
        out: BufWriter<File>,
        len: usize,
        wide: bool,
        /// The first write error.
        err: Option<std::io::Error>,
    },
}

impl IdsBuilder {
    /// Room for `cap` ids in memory, wide from the start if `wide`.
    pub(crate) fn in_memory(cap: usize, wide: bool) -> IdsBuilder {
        IdsBuilder::Mem(Ids::with_width(cap, wide))
    }

    /// Ids written to an unlinked file in `dir`, 8 bytes each if `wide`
    /// (which must then be known: a file does not widen).
    pub(crate) fn spilling(dir: &Path, wide: bool) -> std::io::Result<IdsBuilder> {
        Ok(IdsBuilder::File {
            out: BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?),
            len: 0,
            wide,
            err: None,
        })
    }

    #[inline]
    pub(crate) fn push(&mut self, id: u64) {
        match self {
            IdsBuilder::Mem(ids) => ids.push(id),
            IdsBuilder::File { out, len, wide, err } => {
                let r = if *wide {
                    out.write_all(&id.to_le_bytes())
                } else if Ids::too_wide(id) {
                    Err(std::io::Error::other(format!(
                        "index: page id {id} in a run of 32-bit ids"
                    )))
                } else {
                    out.write_all(&(id as u32).to_le_bytes())
                };
                if let Err(e) = r {
                    err.get_or_insert(e);
                }
                *len += 1;
            }
        }
    }

    /// The ids (the first write error of a spilling builder).
    pub(crate) fn finish(self) -> std::io::Result<Ids> {
        match self {
            IdsBuilder::Mem(ids) => Ok(ids),
            IdsBuilder::File { err: Some(e), .. } => Err(e),
            IdsBuilder::File {
                out,
                len,
                wide,
                err: None,
            } => {
                let file = out.into_inner().map_err(|e| e.into_error())?;
                Ok(Ids::File { file, len, wide })
            }
        }
    }
}
