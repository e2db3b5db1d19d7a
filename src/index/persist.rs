//! Index snapshots (pipeline: beside the store; written when a crawl stops
//! cleanly, read when it resumes). The store keeps every `(page id,
//! fingerprint)` and is the source of truth; a snapshot saves rebuilding t
//! sorted tables from it. Loading reads the packed tables straight into
//! memory (no sort), then the caller adds the store's fingerprints newer than
//! the snapshot's watermark.
//!
//! # Format, version 1 (all integers little-endian)
//!
//! ```text
//! header   magic "SCINDEX\0" · version u32 · k u32 · design hash u64 ·
//!          tables u32 · crawl tag u32 · distinct u64 · pairs u64 · watermark u64 ·
//!          delta pairs u64 · extra pairs u64
//! tables   per table: bits u32 · width u32 · dir words u64 · data bytes u64,
//!          then the directory (u32 each) and the packed entries
//! ids      distinct × u64 (page id per entry of table 0)
//! delta    delta pairs × (fp u64, id u64)   (not yet merged)
//! extras   extra pairs × (fp u64, id u64)   (repeated fingerprints)
//! trailer  CRC-32 of everything before · "END\0"
//! ```
//!
//! A file with another magic, version, design or k, a bad checksum or
//! inconsistent table geometry is refused with a [`SnapshotError`]; nothing
//! in a refused file is used.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::design::Design;

/// The first 8 bytes of a snapshot.
pub const MAGIC: &[u8; 8] = b"SCINDEX\0";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
const END: &[u8; 4] = b"END\0";

/// Why a snapshot could not be written or used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The snapshot file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a snapshot of this format version.
    #[error("{path}: not a simcrawl index snapshot of format version {VERSION} ({what})")]
    Format {
        /// The snapshot file.
        path: PathBuf,
        /// What was found instead.
        what: String,
    },
    /// The snapshot was written for another design or distance k.
    #[error("{path}: snapshot is for another index design or k")]
    Mismatch {
        /// The snapshot file.
        path: PathBuf,
    },
    /// The file is damaged (checksum or geometry).
    #[error("{path}: corrupt index snapshot: {what}")]
    Corrupt {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

impl SnapshotError {
    /// Whether the file simply does not exist (a first start).
    pub fn is_missing(&self) -> bool {
        matches!(self, SnapshotError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A stable 64-bit digest of a design (permutations and prefixes) and k, so a
/// snapshot is never read into tables of another geometry. An FNV-1a-style
/// byte fold with its own multiplier: part of the snapshot format, so it
/// stays as it is.
pub fn design_hash(design: &Design, k: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for b in k.to_le_bytes() {
        eat(b);
    }
    for spec in design.specs() {
        for &b in spec.order() {
            eat(b);
        }
        eat(spec.prefix() as u8);
    }
    h
}

/// The fixed-size header of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) k: u32,
    pub(crate) design: u64,
    pub(crate) tables: u32,
    pub(crate) distinct: u64,
    pub(crate) pairs: u64,
    pub(crate) watermark: u64,
    pub(crate) delta: u64,
    pub(crate) extras: u64,
    /// The tag of the crawl the index belongs to (0: none).
    pub(crate) crawl: u32,
}

/// Writes a snapshot through a CRC: `finish` appends the trailer.
pub(crate) struct SnapWriter {
    w: BufWriter<std::fs::File>,
    crc: crc32fast::Hasher,
    path: PathBuf,
}

impl SnapWriter {
    pub(crate) fn create(path: &Path) -> Result<SnapWriter, SnapshotError> {
        let f = std::fs::File::create(path).map_err(|e| io(path, e))?;
        Ok(SnapWriter {
            w: BufWriter::with_capacity(1 << 20, f),
            crc: crc32fast::Hasher::new(),
            path: path.to_path_buf(),
        })
    }

    /// A read error of what is being written (a table spilled to disk).
    pub(crate) fn fail(&self, e: std::io::Error) -> SnapshotError {
        io(&self.path, e)
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), SnapshotError> {
        self.crc.update(b);
        self.w.write_all(b).map_err(|e| io(&self.path, e))
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), SnapshotError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> Result<(), SnapshotError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn u32s(&mut self, v: &[u32]) -> Result<(), SnapshotError> {
        for c in v.chunks(8192) {
            let mut buf = [0u8; 8192 * 4];
            for (o, x) in buf.chunks_exact_mut(4).zip(c) {
                o.copy_from_slice(&x.to_le_bytes());
            }
            self.bytes(&buf[..c.len() * 4])?;
        }
        Ok(())
    }

    pub(crate) fn u64s(&mut self, v: impl Iterator<Item = u64>) -> Result<(), SnapshotError> {
        let mut buf = Vec::with_capacity(8192 * 8);
        for x in v {
            buf.extend_from_slice(&x.to_le_bytes());
            if buf.len() == buf.capacity() {
                self.bytes(&buf)?;
                buf.clear();
            }
        }
        self.bytes(&buf)
    }

    pub(crate) fn header(&mut self, h: &Header) -> Result<(), SnapshotError> {
        self.bytes(MAGIC)?;
        self.u32(VERSION)?;
        self.u32(h.k)?;
        self.u64(h.design)?;
        self.u32(h.tables)?;
        self.u32(h.crawl)?;
        for v in [h.distinct, h.pairs, h.watermark, h.delta, h.extras] {
            self.u64(v)?;
        }
        Ok(())
    }

    /// Appends the trailer and makes the file durable.
    pub(crate) fn finish(mut self) -> Result<(), SnapshotError> {
        let crc = self.crc.clone().finalize();
        self.w.write_all(&crc.to_le_bytes()).map_err(|e| io(&self.path, e))?;
        self.w.write_all(END).map_err(|e| io(&self.path, e))?;
        let f = self.w.into_inner().map_err(|e| io(&self.path, e.into_error()))?;
        f.sync_all().map_err(|e| io(&self.path, e))
    }
}

/// Reads a snapshot through a CRC: `finish` checks the trailer.
pub(crate) struct SnapReader {
    r: BufReader<std::fs::File>,
    crc: crc32fast::Hasher,
    pub(crate) path: PathBuf,
    left: u64,
}

impl SnapReader {
    pub(crate) fn open(path: &Path) -> Result<SnapReader, SnapshotError> {
        let f = std::fs::File::open(path).map_err(|e| io(path, e))?;
        let len = f.metadata().map_err(|e| io(path, e))?.len();
        Ok(SnapReader {
            r: BufReader::with_capacity(1 << 20, f),
            crc: crc32fast::Hasher::new(),
            path: path.to_path_buf(),
            left: len,
        })
    }

    pub(crate) fn corrupt(&self, what: impl Into<String>) -> SnapshotError {
        SnapshotError::Corrupt {
            path: self.path.clone(),
            what: what.into(),
        }
    }

    /// Fills `buf` (which must not outrun the file: checked before any
    /// allocation sized from the header).
    pub(crate) fn bytes(&mut self, buf: &mut [u8]) -> Result<(), SnapshotError> {
        if buf.len() as u64 > self.left {
            return Err(self.corrupt("truncated"));
        }
        self.r.read_exact(buf).map_err(|e| io(&self.path, e))?;
        self.left -= buf.len() as u64;
        self.crc.update(buf);
        Ok(())
    }

    /// Whether `n` more bytes are in the file (before allocating for them).
    pub(crate) fn has(&self, n: u64) -> Result<(), SnapshotError> {
        if n > self.left {
            Err(self.corrupt("truncated"))
        } else {
            Ok(())
        }
    }

    pub(crate) fn u32(&mut self) -> Result<u32, SnapshotError> {
        let mut b = [0u8; 4];
        self.bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, SnapshotError> {
        let mut b = [0u8; 8];
        self.bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub(crate) fn u32s(&mut self, out: &mut Vec<u32>, n: usize) -> Result<(), SnapshotError> {
        self.has(n as u64 * 4)?;
        let mut buf = vec![0u8; 8192 * 4];
        let mut left = n;
        while left > 0 {
            let c = left.min(8192);
            self.bytes(&mut buf[..c * 4])?;
            out.extend(
                buf[..c * 4]
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            left -= c;
        }
        Ok(())
    }

    pub(crate) fn u64s(&mut self, n: u64, mut each: impl FnMut(u64)) -> Result<(), SnapshotError> {
        self.has(n * 8)?;
        let mut buf = vec![0u8; 8192 * 8];
        let mut left = n as usize;
        while left > 0 {
            let c = left.min(8192);
            self.bytes(&mut buf[..c * 8])?;
            for b in buf[..c * 8].chunks_exact(8) {
                each(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
            }
            left -= c;
        }
        Ok(())
    }

    pub(crate) fn header(&mut self, design: &Design, k: u32) -> Result<Header, SnapshotError> {
        let mut magic = [0u8; 8];
        self.bytes(&mut magic).map_err(|_| SnapshotError::Format {
            path: self.path.clone(),
            what: "file too short".into(),
        })?;
        if &magic != MAGIC {
            return Err(SnapshotError::Format {
                path: self.path.clone(),
                what: "bad magic".into(),
            });
        }
        let version = self.u32()?;
        if version != VERSION {
            return Err(SnapshotError::Format {
                path: self.path.clone(),
                what: format!("version {version}"),
            });
        }
        let (k_read, design_read, tables) = (self.u32()?, self.u64()?, self.u32()?);
        let crawl = self.u32()?;
        let h = Header {
            k: k_read,
            design: design_read,
            tables,
            distinct: self.u64()?,
            pairs: self.u64()?,
            watermark: self.u64()?,
            delta: self.u64()?,
            extras: self.u64()?,
            crawl,
        };
        if h.k != k || h.design != design_hash(design, k) || h.tables as usize != design.tables() {
            return Err(SnapshotError::Mismatch {
                path: self.path.clone(),
            });
        }
        if h.distinct > u32::MAX as u64 {
            return Err(self.corrupt("more entries than a table can hold"));
        }
        Ok(h)
    }

    /// Checks the trailer: the CRC of everything read, then the end mark, then
    /// the end of the file.
    pub(crate) fn finish(mut self) -> Result<(), SnapshotError> {
        let want = self.crc.clone().finalize();
        let mut tail = [0u8; 8];
        self.r.read_exact(&mut tail).map_err(|_| self.corrupt("no trailer"))?;
        let got = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
        if &tail[4..] != END || self.left != 8 {
            return Err(self.corrupt("bad trailer"));
        }
        if got != want {
            return Err(self.corrupt(format!("checksum {got:08x}, computed {want:08x}")));
        }
        Ok(())
    }
}

fn io(path: &Path, source: std::io::Error) -> SnapshotError {
    SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}
