//! [`KeptFile`]: the prepared young pages of the decider (see
//! `provisional.rs`) in an unlinked file of the crawl's `index/`
//! directory, so that how many pages are kept, and how large they are,
//! costs disk and not memory. A prepared page (its words' hashes, tens of
//! kilobytes a page) is read back only when its site's template changes
//! which of its blocks are template blocks.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Where one page's bytes are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    at: u64,
    len: u32,
}

/// An append-only file of records, compacted when most of it is dead.
#[derive(Debug)]
pub(super) struct KeptFile {
    file: File,
    end: u64,
    /// Bytes of records freed.
    dead: u64,
    dir: std::path::PathBuf,
}

/// The file is compacted when its dead bytes pass this and half its size.
const COMPACT_DEAD: u64 = 16 << 20;

impl KeptFile {
    /// An empty file, unlinked, in `dir`.
    pub(super) fn new(dir: &Path) -> std::io::Result<KeptFile> {
        Ok(KeptFile {
            file: tempfile::tempfile_in(dir)?,
            end: 0,
            dead: 0,
            dir: dir.to_path_buf(),
        })
    }

    /// Appends `bytes` (at most 4 GiB); returns where they are.
    pub(super) fn put(&mut self, bytes: &[u8]) -> std::io::Result<Slot> {
        let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("kept page larger than 4 GiB"))?;
        self.file.write_all_at(bytes, self.end)?;
        let slot = Slot { at: self.end, len };
        self.end += u64::from(len);
        Ok(slot)
    }

    /// The bytes of `slot`, into `buf` (replacing its contents).
    pub(super) fn get(&self, slot: Slot, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.clear();
        buf.resize(slot.len as usize, 0);
        self.file.read_exact_at(buf, slot.at)
    }

    /// `slot` is no longer read.
    pub(super) fn free(&mut self, slot: Slot) {
        self.dead += u64::from(slot.len);
    }

    /// Whether [`KeptFile::compact`] would reclaim most of the file.
    pub(super) fn wants_compaction(&self) -> bool {
        self.dead > COMPACT_DEAD && 2 * self.dead > self.end
    }

    /// Copies the records of `live` (every slot not freed) to a new file,
    /// in order, and updates them; the old file's space is released.
    pub(super) fn compact<'a>(&mut self, live: impl Iterator<Item = &'a mut Slot>) -> std::io::Result<()> {
        let mut next = KeptFile::new(&self.dir)?;
        let mut buf = Vec::new();
        for slot in live {
            self.get(*slot, &mut buf)?;
            *slot = next.put(&buf)?;
        }
        *self = next;
        Ok(())
    }

    /// Bytes of the records not freed.
    pub(super) fn live_bytes(&self) -> u64 {
        self.end - self.dead
    }

    /// The directory of the file (for error messages).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes in the file, live and dead.
    #[cfg(test)]
    fn size(&self) -> u64 {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_survive_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = KeptFile::new(dir.path()).unwrap();
        let record = |i: usize| vec![(i % 251) as u8; 1 + (i * 7919) % 300_000];
        let mut slots: Vec<(usize, Slot)> = (0..200).map(|i| (i, f.put(&record(i)).unwrap())).collect();
        let mut buf = Vec::new();
        for &(i, s) in &slots {
            f.get(s, &mut buf).unwrap();
            assert_eq!(buf, record(i));
        }
        // Free most of them: the file asks to be compacted.
        let before = f.size();
        slots.retain(|&(i, s)| {
            let keep = i % 5 == 0;
            if !keep {
                f.free(s);
            }
            keep
        });
        assert!(f.wants_compaction());
        f.compact(slots.iter_mut().map(|(_, s)| s)).unwrap();
        assert!(!f.wants_compaction());
        assert!(f.size() < before / 3, "{} of {before}", f.size());
        for &(i, s) in &slots {
            f.get(s, &mut buf).unwrap();
            assert_eq!(buf, record(i));
        }
        // The directory holds no file: it is unlinked.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
