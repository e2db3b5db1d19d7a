//! A map of small fixed-size keys and values whose memory stays bounded
//! however many entries it holds: the newest entries in a [`ChunkMap`], the
//! rest in sorted runs on disk, each with a Bloom filter in memory. The
//! crawl keeps its per-page maps here (the exact-hash owners, the
//! content-sketch band keys), so its memory does not grow with its length.
//!
//! # How it works
//!
//! Writes go to the in-memory map. When it holds `mem_max` entries, they are
//! written in key order to a new *run*: an unlinked temporary file in the
//! spill directory (removed by the system when the map is dropped, or the
//! process ends), of fixed-size entries: the key, a tag byte (1: a value
//! follows; 0: the key was removed) and the value. A run keeps in memory the
//! first key of each 4 KiB block of entries (its *fences*) and a blocked
//! Bloom filter of its keys ([`BlockedBloom`], 10 bits per key).
//!
//! Runs are kept oldest first, and a new run is merged with the one before
//! it for as long as that one is at most twice its size (the older entry of
//! a key gives way to the newer; a merge into the oldest run drops removed
//! keys), so run sizes grow geometrically: about log₂(n / `mem_max`) runs
//! for n entries, and each entry is rewritten about as many times.
//!
//! A lookup asks the in-memory map, then each run from the newest: a run
//! whose filter says "absent" costs one cache line; otherwise the fences
//! name the one block that can hold the key, which is read (one `pread` of
//! at most 4 KiB, usually from the page cache) and binary-searched. A key
//! in no run (most lookups of a crawl's maps: new content) reads nothing but
//! for the filters' false positives, about 1% per run.
//!
//! Memory: `mem_max` entries in the [`ChunkMap`], and per entry on disk
//! 1.25 bytes of filter and a fence per block. A map made with
//! [`SpillMap::in_memory`] never spills: it is a [`ChunkMap`].

use std::fs::File;
use std::hash::Hash;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::blocked_bloom::{BlockedBloom, BloomKey};
use crate::chunkmap::ChunkMap;
use crate::hash::mix64;

/// A key or value of a fixed number of bytes, as a run stores it.
pub trait Fixed: Copy {
    /// Bytes of the encoding (at most [`MAX_KEY`] for a key).
    const SIZE: usize;
    /// Write the encoding into `out` (exactly [`Fixed::SIZE`] bytes).
    fn write_to(&self, out: &mut [u8]);
    /// Read an encoding written by [`Fixed::write_to`].
    fn read_from(bytes: &[u8]) -> Self;
}

impl Fixed for u32 {
    const SIZE: usize = 4;
    fn write_to(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn read_from(bytes: &[u8]) -> Self {
        u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
    }
}

impl Fixed for u64 {
    const SIZE: usize = 8;
    fn write_to(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn read_from(bytes: &[u8]) -> Self {
        u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }
}

/// No value: a map of `()` values is a set of its keys.
impl Fixed for () {
    const SIZE: usize = 0;
    fn write_to(&self, _: &mut [u8]) {}
    fn read_from(_: &[u8]) -> Self {}
}

impl Fixed for (u64, u64) {
    const SIZE: usize = 16;
    fn write_to(&self, out: &mut [u8]) {
        self.0.write_to(&mut out[..8]);
        self.1.write_to(&mut out[8..]);
    }
    fn read_from(bytes: &[u8]) -> Self {
        (u64::read_from(&bytes[..8]), u64::read_from(&bytes[8..]))
    }
}

/// The largest key encoding.
pub const MAX_KEY: usize = 32;

/// Bytes of a run's block: the unit a lookup reads.
const BLOCK_BYTES: usize = 4096;

/// Bytes a merge reads from each run at once.
const MERGE_READ: usize = 64 << 10;

/// The filter key of `k`: its encoding folded into two mixed words.
fn bloom_key<K: Fixed>(k: &K) -> BloomKey {
    let mut bytes = [0u8; MAX_KEY];
    k.write_to(&mut bytes[..K::SIZE]);
    let mut h = 0x9E37_79B9_7F4A_7C15u64;
    for w in bytes[..K::SIZE.next_multiple_of(8)].chunks_exact(8) {
        h = mix64(h ^ u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    (h, mix64(h ^ 0xA076_1D64_78BD_642F))
}

/// Where the parts of an entry are in a run.
#[derive(Debug, Clone, Copy)]
struct Layout {
    key: usize,
    entry: usize,
    per_block: usize,
}

impl Layout {
    fn of<K: Fixed, V: Fixed>() -> Layout {
        assert!(K::SIZE <= MAX_KEY, "spill-map keys are at most {MAX_KEY} bytes");
        let entry = K::SIZE + 1 + V::SIZE;
        assert!(
            entry <= BLOCK_BYTES,
            "spill-map entries are at most {BLOCK_BYTES} bytes"
        );
        Layout {
            key: K::SIZE,
            entry,
            per_block: BLOCK_BYTES / entry,
        }
    }

    fn decode<K: Fixed, V: Fixed>(&self, e: &[u8]) -> (K, Option<V>) {
        let k = K::read_from(&e[..self.key]);
        let v = (e[self.key] == 1).then(|| V::read_from(&e[self.key + 1..self.entry]));
        (k, v)
    }
}

/// One sorted run on disk (see the module docs).
#[derive(Debug)]
struct Run<K> {
    file: File,
    /// Entries.
    len: usize,
    /// The first key of each block.
    fences: Vec<K>,
    bloom: BlockedBloom,
}

impl<K: Fixed + Ord> Run<K> {
    /// The entry of `k` in this run: `Some(None)` when it records a removal.
    fn get<V: Fixed>(&self, k: &K, bk: BloomKey, l: Layout) -> io::Result<Option<Option<V>>> {
        if !self.bloom.may_contain(bk) {
            return Ok(None);
        }
        let block = match self.fences.partition_point(|f| f <= k) {
            0 => return Ok(None),
            b => b - 1,
        };
        let first = block * l.per_block;
        let n = l.per_block.min(self.len - first);
        let mut buf = [0u8; BLOCK_BYTES];
        let bytes = &mut buf[..n * l.entry];
        self.file.read_exact_at(bytes, (first * l.entry) as u64)?;
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let e = &bytes[mid * l.entry..(mid + 1) * l.entry];
            match K::read_from(&e[..l.key]).cmp(k) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(l.decode::<K, V>(e).1)),
            }
        }
        Ok(None)
    }
}

/// Writes a run, entry by entry, in key order.
struct RunWriter<K> {
    out: BufWriter<File>,
    len: usize,
    fences: Vec<K>,
    bloom: BlockedBloom,
    layout: Layout,
    entry: [u8; BLOCK_BYTES],
}

impl<K: Fixed> RunWriter<K> {
    /// A new run in `dir` for at most `capacity` entries.
    fn create(dir: &Path, capacity: usize, layout: Layout) -> io::Result<Self> {
        Ok(RunWriter {
            out: BufWriter::with_capacity(MERGE_READ, tempfile::tempfile_in(dir)?),
            len: 0,
            fences: Vec::new(),
            bloom: BlockedBloom::new(capacity),
            layout,
            entry: [0; BLOCK_BYTES],
        })
    }

    fn push<V: Fixed>(&mut self, k: &K, v: Option<V>) -> io::Result<()> {
        let l = self.layout;
        if self.len.is_multiple_of(l.per_block) {
            self.fences.push(*k);
        }
        self.bloom.insert(bloom_key(k));
        let e = &mut self.entry[..l.entry];
        k.write_to(&mut e[..l.key]);
        match v {
            Some(v) => {
                e[l.key] = 1;
                v.write_to(&mut e[l.key + 1..]);
            }
            None => e[l.key..].fill(0),
        }
        self.out.write_all(e)?;
        self.len += 1;
        Ok(())
    }

    fn finish(self) -> io::Result<Run<K>> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        let mut fences = self.fences;
        fences.shrink_to_fit();
        Ok(Run {
            file,
            len: self.len,
            fences,
            bloom: self.bloom,
        })
    }
}

/// Reads a run's entries in order, [`MERGE_READ`] bytes at a time.
struct RunReader<'a, K> {
    run: &'a Run<K>,
    layout: Layout,
    /// The next entry to read from the file.
    next: usize,
    buf: Vec<u8>,
    /// Position in `buf` of the next entry to hand out.
    at: usize,
}

impl<'a, K: Fixed> RunReader<'a, K> {
    fn new(run: &'a Run<K>, layout: Layout) -> Self {
        RunReader {
            run,
            layout,
            next: 0,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// The next entry's bytes, or `None` at the end of the run.
    fn peek(&mut self) -> io::Result<Option<&[u8]>> {
        let e = self.layout.entry;
        if self.at >= self.buf.len() {
            let n = (MERGE_READ / e).min(self.run.len - self.next);
            if n == 0 {
                return Ok(None);
            }
            self.buf.resize(n * e, 0);
            self.run.file.read_exact_at(&mut self.buf, (self.next * e) as u64)?;
            self.next += n;
            self.at = 0;
        }
        Ok(Some(&self.buf[self.at..self.at + e]))
    }

    fn advance(&mut self) {
        self.at += self.layout.entry;
    }
}

/// A map of fixed-size keys and values, in bounded memory (see the module
/// docs).
#[derive(Debug)]
pub struct SpillMap<K, V> {
    /// The newest entries; `None` records a removal of a key the runs may
    /// hold.
    mem: ChunkMap<K, Option<V>>,
    /// Oldest first.
    runs: Vec<Run<K>>,
    /// Where runs go; `None`: the map never spills.
    dir: Option<PathBuf>,
    /// Entries in memory that make a run.
    mem_max: usize,
}

impl<K, V> Default for SpillMap<K, V> {
    fn default() -> Self {
        SpillMap::in_memory()
    }
}

impl<K, V> SpillMap<K, V> {
    /// A map that keeps every entry in memory.
    pub fn in_memory() -> Self {
        SpillMap {
            mem: ChunkMap::default(),
            runs: Vec::new(),
            dir: None,
            mem_max: usize::MAX,
        }
    }

    /// A map that writes its entries to runs in `dir` (which must exist)
    /// each time `mem_max` (at least 1) are in memory.
    pub fn spilling(dir: &Path, mem_max: usize) -> Self {
        SpillMap {
            mem: ChunkMap::with_recent_max(mem_max.clamp(1, crate::chunkmap::RECENT_MAX)),
            runs: Vec::new(),
            dir: Some(dir.to_path_buf()),
            mem_max: mem_max.max(1),
        }
    }
}

impl<K: Fixed + Ord + Hash, V: Fixed> SpillMap<K, V> {
    /// The value of `k`.
    pub fn get(&self, k: &K) -> io::Result<Option<V>> {
        if let Some(v) = self.mem.get(k) {
            return Ok(v);
        }
        if self.runs.is_empty() {
            return Ok(None);
        }
        let (bk, l) = (bloom_key(k), Layout::of::<K, V>());
        for run in self.runs.iter().rev() {
            if let Some(v) = run.get::<V>(k, bk, l)? {
                return Ok(v);
            }
        }
        Ok(None)
    }

    /// Set the value of `k` (replacing any).
    pub fn insert(&mut self, k: K, v: V) -> io::Result<()> {
        self.mem.insert(k, Some(v));
        self.spill_if_due()
    }

    /// Forget `k`.
    pub fn remove(&mut self, k: &K) -> io::Result<()> {
        if self.runs.is_empty() {
            self.mem.remove(k);
        } else {
            self.mem.insert(*k, None);
        }
        self.spill_if_due()
    }

    /// Write the in-memory entries to a run when they are `mem_max`, then
    /// merge runs (see the module docs). On an error the map is as it was.
    fn spill_if_due(&mut self) -> io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        if self.mem.held() < self.mem_max {
            return Ok(());
        }
        let layout = Layout::of::<K, V>();
        let mut w = RunWriter::create(dir, self.mem.held(), layout)?;
        for chunk in self.mem.sorted_chunks() {
            for (k, v) in chunk.iter() {
                w.push(k, *v)?;
            }
        }
        let run = w.finish()?;
        self.mem.clear();
        self.runs.push(run);
        while let [.., older, newer] = &self.runs[..] {
            if older.len > 2 * newer.len {
                break;
            }
            let into_oldest = self.runs.len() == 2;
            let merged = merge_runs::<K, V>(dir, older, newer, into_oldest, layout)?;
            self.runs.truncate(self.runs.len() - 2);
            self.runs.push(merged);
        }
        Ok(())
    }

    /// Runs on disk.
    #[cfg(test)]
    fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// One run of `older` and `newer`: a key's newer entry wins; with
/// `drop_removed`, removed keys are left out.
fn merge_runs<K: Fixed + Ord, V: Fixed>(
    dir: &Path,
    older: &Run<K>,
    newer: &Run<K>,
    drop_removed: bool,
    l: Layout,
) -> io::Result<Run<K>> {
    let mut w = RunWriter::create(dir, older.len + newer.len, l)?;
    let (mut a, mut b) = (RunReader::new(older, l), RunReader::new(newer, l));
    loop {
        let ea = a.peek()?.map(|e| l.decode::<K, V>(e));
        let eb = b.peek()?.map(|e| l.decode::<K, V>(e));
        let (k, v) = match (ea, eb) {
            (None, None) => break,
            (Some(x), None) => {
                a.advance();
                x
            }
            (None, Some(y)) => {
                b.advance();
                y
            }
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => {
                    a.advance();
                    x
                }
                std::cmp::Ordering::Greater => {
                    b.advance();
                    y
                }
                std::cmp::Ordering::Equal => {
                    a.advance();
                    b.advance();
                    y
                }
            },
        };
        if v.is_some() || !drop_removed {
            w.push(&k, v)?;
        }
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> (u64, u64) {
        (n.wrapping_mul(0x9E37_79B9_7F4A_7C15), n)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Across spills and merges, the map answers as a plain map.
        #[test]
        fn spill_map_matches_a_plain_map(
            ops in proptest::collection::vec((0u8..6, 0u64..400, 0u64..50), 1..1500),
            mem_max in 4usize..120,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut m: SpillMap<(u64, u64), u64> = SpillMap::spilling(dir.path(), mem_max);
            let mut oracle: std::collections::HashMap<(u64, u64), u64> = Default::default();
            for (op, key_n, v) in ops {
                let key = k(key_n);
                match op {
                    0 => {
                        m.remove(&key).unwrap();
                        oracle.remove(&key);
                    }
                    1 => {}
                    _ => {
                        m.insert(key, v).unwrap();
                        oracle.insert(key, v);
                    }
                }
                proptest::prop_assert_eq!(m.get(&key).unwrap(), oracle.get(&key).copied());
            }
            for n in 0..400 {
                proptest::prop_assert_eq!(m.get(&k(n)).unwrap(), oracle.get(&k(n)).copied());
            }
            // Run sizes grow geometrically.
            let total: usize = m.runs.iter().map(|r| r.len).sum();
            proptest::prop_assert!(m.runs() <= 2 + (total.max(1) as f64 / mem_max as f64).log2().max(0.0) as usize * 2);
            // Runs are unlinked files: the directory stays empty.
            proptest::prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn small_keys_and_values_spill_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut m: SpillMap<u32, u32> = SpillMap::spilling(dir.path(), 1000);
        for i in 0..50_000u32 {
            m.insert(i.wrapping_mul(2_654_435_761), i).unwrap();
        }
        assert!(m.runs() >= 1 && m.runs() <= 8, "{} runs", m.runs());
        assert!(m.mem.held() < 1000);
        for i in 0..50_000u32 {
            assert_eq!(m.get(&i.wrapping_mul(2_654_435_761)).unwrap(), Some(i));
        }
        // The multiplier is odd: other multiples are other keys.
        for i in 50_000..51_000u32 {
            assert_eq!(m.get(&i.wrapping_mul(2_654_435_761)).unwrap(), None);
        }
    }

    #[test]
    fn a_set_of_unit_values_spills_removes_and_merges() {
        let dir = tempfile::tempdir().unwrap();
        let mut m: SpillMap<u64, ()> = SpillMap::spilling(dir.path(), 64);
        for i in 0..5_000u64 {
            m.insert(mix64(i), ()).unwrap();
        }
        // Remove every third key, most of them from runs on disk.
        for i in (0..5_000u64).step_by(3) {
            m.remove(&mix64(i)).unwrap();
        }
        assert!(m.runs() >= 1, "{} runs", m.runs());
        for i in 0..5_200u64 {
            let want = (i < 5_000 && i % 3 != 0).then_some(());
            assert_eq!(m.get(&mix64(i)).unwrap(), want, "key {i}");
        }
    }

    #[test]
    fn a_map_in_memory_never_spills() {
        let mut m: SpillMap<u64, u64> = SpillMap::in_memory();
        for i in 0..100_000u64 {
            m.insert(i, i + 1).unwrap();
        }
        assert_eq!(m.runs(), 0);
        m.remove(&7).unwrap();
        assert_eq!((m.get(&7).unwrap(), m.get(&8).unwrap()), (None, Some(9)));
    }

    #[test]
    fn a_failed_spill_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        std::fs::create_dir(&gone).unwrap();
        let mut m: SpillMap<u64, u64> = SpillMap::spilling(&gone, 10);
        for i in 0..9 {
            m.insert(i, i).unwrap();
        }
        std::fs::remove_dir(&gone).unwrap();
        assert!(m.insert(9, 9).is_err(), "the spill directory is gone");
        for i in 0..10 {
            assert_eq!(m.get(&i).unwrap(), Some(i));
        }
        std::fs::create_dir(&gone).unwrap();
        m.insert(10, 10).unwrap();
        assert_eq!(m.runs(), 1);
        for i in 0..11 {
            assert_eq!(m.get(&i).unwrap(), Some(i));
        }
    }
}
