//! Page id → where its sketch is, in 8 bytes per page id (the
//! [`SketchIndex`](super::SketchIndex)'s table of recorded pages).
//!
//! Page ids are handed out in ascending order from 1 (a store's counter, in
//! blocks per worker on a shared store), so the table is an array indexed by
//! id, in chunks of [`CHUNK`] entries allocated as ids reach them: a page
//! id without a sketch (a duplicate, an error) costs its 8 bytes, and
//! nothing grows by doubling or rehashing. Ids past [`DENSE_MAX`] (no store
//! hands them out, but an id is a `u64`) go to a hash map.
//!
//! A spilling table ([`SlotTable::spilling`], a crawl's) keeps only its
//! newest [`MEM_CHUNKS`] chunks in memory, where the crawl records its pages,
//! and moves older ones to an unlinked file: a candidate's location is then
//! one 8-byte positioned read from the page cache, and the heap holds a
//! fixed 128 KiB whatever the crawl's length.
//!
//! A location is a nonzero `u64` whose meaning is the index's own
//! (`SketchIndex` packs a spill file offset and length, or a position).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::model::PageId;

/// Entries per chunk (32 KiB).
const CHUNK: usize = 4096;

/// Ids below this are kept in the chunks; 2³² ids are 2²⁰ chunk pointers
/// at the most.
const DENSE_MAX: PageId = 1 << 32;

/// Chunks a spilling table keeps in memory: the newest 16 384 ids, where a
/// crawl records its pages.
const MEM_CHUNKS: usize = 4;

/// Page id → nonzero location (see the module docs).
#[derive(Debug, Default)]
pub(super) struct SlotTable {
    chunks: Vec<Chunk>,
    far: HashMap<PageId, u64>,
    len: usize,
    spill: Option<Spill>,
}

/// Where a chunk's entries are.
#[derive(Debug, Default)]
enum Chunk {
    /// No id of the chunk has had a location.
    #[default]
    Absent,
    Mem(Box<[u64; CHUNK]>),
    /// In the spill file, at the chunk's own offset.
    Disk,
}

/// The file a spilling table moves its older chunks to.
#[derive(Debug)]
struct Spill {
    /// Unlinked; chunk `c` at byte `c · CHUNK · 8`.
    file: File,
    /// The chunks in memory, oldest first.
    in_mem: VecDeque<usize>,
    /// Ids of chunks on disk removed while the file could not be written
    /// (so a failed write loses nothing: they read as absent).
    removed: HashSet<PageId>,
}

/// A failed read or write of the table's spill file: logged once.
fn io_failed(what: &str, e: &std::io::Error) {
    static LOGGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::error!("sketch index: {what} the page table's spill file failed ({e})");
    }
}

impl SlotTable {
    /// A table that keeps its newest [`MEM_CHUNKS`] chunks in memory and
    /// moves older ones to an unlinked file in `dir`, read and written
    /// eight bytes at a time: 8 bytes per page on disk, not in the heap.
    pub(super) fn spilling(dir: &Path) -> std::io::Result<SlotTable> {
        Ok(SlotTable {
            spill: Some(Spill {
                file: tempfile::tempfile_in(dir)?,
                in_mem: VecDeque::new(),
                removed: HashSet::new(),
            }),
            ..SlotTable::default()
        })
    }

    /// Byte offset of id `page`'s entry in the spill file.
    fn offset(page: PageId) -> u64 {
        page * 8
    }

    /// The location of `page`, if it has one.
    pub(super) fn get(&self, page: PageId) -> Option<u64> {
        if page >= DENSE_MAX {
            return self.far.get(&page).copied();
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        let v = match self.chunks.get(c)? {
            Chunk::Absent => return None,
            Chunk::Mem(chunk) => chunk[i],
            Chunk::Disk => {
                let spill = self.spill.as_ref()?;
                if spill.removed.contains(&page) {
                    return None;
                }
                let mut b = [0u8; 8];
                if let Err(e) = spill.file.read_exact_at(&mut b, Self::offset(page)) {
                    io_failed("reading", &e);
                    return None;
                }
                u64::from_le_bytes(b)
            }
        };
        (v != 0).then_some(v)
    }

    /// `page` is at `at` now (`at` is nonzero). Fails only when the spill
    /// file cannot be written (the table is unchanged then).
    pub(super) fn set(&mut self, page: PageId, at: u64) -> std::io::Result<()> {
        debug_assert!(at != 0, "a location is nonzero");
        if page >= DENSE_MAX {
            if self.far.insert(page, at).is_none() {
                self.len += 1;
            }
            return Ok(());
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, Chunk::default);
        }
        if matches!(self.chunks[c], Chunk::Disk) {
            let was = self.get(page);
            let spill = self.spill.as_mut().expect("a chunk on disk has a spill file");
            spill.file.write_all_at(&at.to_le_bytes(), Self::offset(page))?;
            spill.removed.remove(&page);
            self.len += usize::from(was.is_none());
            return Ok(());
        }
        if matches!(self.chunks[c], Chunk::Absent) {
            self.chunks[c] = Chunk::Mem(Box::new([0; CHUNK]));
            self.evict(c);
        }
        let Chunk::Mem(chunk) = &mut self.chunks[c] else {
            unreachable!("the chunk was just put in memory");
        };
        if chunk[i] == 0 {
            self.len += 1;
        }
        chunk[i] = at;
        Ok(())
    }

    /// Chunk `c` came into memory: past [`MEM_CHUNKS`], the oldest other
    /// chunk in memory goes to the spill file (it stays in memory if the
    /// file cannot be written).
    fn evict(&mut self, c: usize) {
        let Some(spill) = self.spill.as_mut() else {
            return;
        };
        spill.in_mem.push_back(c);
        if spill.in_mem.len() <= MEM_CHUNKS {
            return;
        }
        let old = spill.in_mem.pop_front().expect("more than MEM_CHUNKS chunks");
        let Chunk::Mem(chunk) = &self.chunks[old] else {
            return;
        };
        let mut bytes = Vec::with_capacity(CHUNK * 8);
        for v in chunk.iter() {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        match spill.file.write_all_at(&bytes, Self::offset((old * CHUNK) as PageId)) {
            Ok(()) => self.chunks[old] = Chunk::Disk,
            Err(e) => io_failed("writing", &e),
        }
    }

    /// `page` has no location any more.
    pub(super) fn remove(&mut self, page: PageId) {
        if page >= DENSE_MAX {
            if self.far.remove(&page).is_some() {
                self.len -= 1;
            }
            return;
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        let on_disk = matches!(self.chunks.get(c), Some(Chunk::Disk));
        if on_disk && self.get(page).is_none() {
            return;
        }
        match self.chunks.get_mut(c) {
            Some(Chunk::Mem(chunk)) if chunk[i] != 0 => {
                chunk[i] = 0;
                self.len -= 1;
            }
            Some(Chunk::Disk) => {
                let spill = self.spill.as_mut().expect("a chunk on disk has a spill file");
                if let Err(e) = spill.file.write_all_at(&0u64.to_le_bytes(), Self::offset(page)) {
                    io_failed("writing", &e);
                    spill.removed.insert(page);
                }
                self.len -= 1;
            }
            _ => {}
        }
    }

    /// Pages with a location.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Chunks in memory (tests).
    #[cfg(test)]
    fn chunks_in_memory(&self) -> usize {
        self.chunks.iter().filter(|c| matches!(c, Chunk::Mem(_))).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The table answers as a plain map would, for ids in the chunks
        /// and past them.
        #[test]
        fn the_table_matches_a_plain_map(spilling: bool, ops in proptest::collection::vec(
            (proptest::prop_oneof![0u64..40_000, DENSE_MAX - 5..DENSE_MAX + 5], 0u64..4),
            0..200,
        )) {
            let dir = tempfile::tempdir().unwrap();
            let mut t = if spilling { SlotTable::spilling(dir.path()).unwrap() } else { SlotTable::default() };
            let mut m = HashMap::new();
            for (page, at) in ops {
                if at == 0 {
                    t.remove(page);
                    m.remove(&page);
                } else {
                    t.set(page, at).unwrap();
                    m.insert(page, at);
                }
                proptest::prop_assert_eq!(t.get(page), m.get(&page).copied());
                proptest::prop_assert_eq!(t.len(), m.len());
            }
            for (&page, &at) in &m {
                proptest::prop_assert_eq!(t.get(page), Some(at));
            }
            if spilling {
                proptest::prop_assert!(t.chunks_in_memory() <= MEM_CHUNKS);
            }
        }
    }

    /// A crawl's ids, in ascending order: the table holds its newest chunks
    /// in memory and answers for the older ones from its file, which a
    /// page's later update and removal reach too.
    #[test]
    fn a_spilling_table_keeps_only_its_newest_chunks_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = SlotTable::spilling(dir.path()).unwrap();
        let n = (MEM_CHUNKS as u64 + 6) * CHUNK as u64;
        for page in 1..n {
            t.set(page, page * 3).unwrap();
        }
        assert_eq!(t.chunks_in_memory(), MEM_CHUNKS);
        assert_eq!(t.len(), n as usize - 1);
        assert_eq!(
            (t.get(0), t.get(1), t.get(5000), t.get(n - 1), t.get(n)),
            (None, Some(3), Some(15_000), Some((n - 1) * 3), None)
        );
        t.set(7, 1).unwrap();
        t.remove(9);
        assert_eq!((t.get(7), t.get(9), t.len()), (Some(1), None, n as usize - 2));
        t.set(9, 2).unwrap();
        assert_eq!((t.get(9), t.len()), (Some(2), n as usize - 1));
    }
}
