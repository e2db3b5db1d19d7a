//! The fjall backend of [`KvStore`](super::KvStore): a log-structured merge
//! tree (fjall 3) with the `meta` and `crawl` keyspaces. Writes go to fjall's
//! journal (one atomic entry per batch, handed to the operating system
//! before the commit returns) and to an in-memory table of at most
//! [`MEMTABLE_BYTES`]; full tables are written out as sorted files of
//! LZ4-compressed blocks and merged in the background, which drops
//! overwritten and removed keys. Reads go through a block cache of
//! `[store] cache_mb` for data blocks; every table's index and filter
//! blocks stay in memory (from level 3 on, where fjall partitions them,
//! their top-level index; the partitions go through the cache).

use std::path::{Path, PathBuf};

use fjall::config::{CompressionPolicy, PinningPolicy};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::kv::{guarded, Backend, Entry, GuardedIter, RawIter};
use super::{BatchOp, StoreError};

fn backend(e: fjall::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// How large a keyspace's in-memory table grows before it is written out as
/// a compressed sorted file. fjall drops a journal file once every table
/// holding its writes is on disk and the file is past 64 MB, so the
/// journal stays under about 128 MB whatever the crawl's size.
const MEMTABLE_BYTES: u64 = 8 << 20;

/// fjall 3: the `meta` and `crawl` keyspaces of one database directory.
pub struct FjallBackend {
    dir: PathBuf,
    db: Database,
    meta: Keyspace,
    crawl: Keyspace,
}

impl FjallBackend {
    /// Open or create the database in `dir` with a block cache of
    /// `cache_bytes`. A damaged database is an error ([`StoreError::Damaged`]
    /// when the engine panics on it).
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        guarded(dir, || Self::open_unguarded(dir, cache_bytes))
    }

    fn open_unguarded(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        let open = |e: fjall::Error| StoreError::Open {
            path: dir.to_path_buf(),
            message: e.to_string(),
        };
        // A handle to the same store dropped a moment ago (in this process)
        // may still hold the lock while its background workers end.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let db = loop {
            match Database::builder(dir).cache_size(cache_bytes).open() {
                Ok(db) => break db,
                Err(e) if e.to_string().contains("lock") && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(open(e)),
            }
        };
        let opts = || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(MEMTABLE_BYTES)
                .data_block_compression_policy(CompressionPolicy::all(CompressionType::Lz4))
                // Every table's index and filter blocks stay in memory.
                // fjall's defaults keep filters only in level 0 and index
                // blocks in levels 0 and 1 (counted from the first level
                // that holds data); the others are read through the block
                // cache, and once the store outgrows the cache each point
                // read reads and checksums its table's whole filter again
                // (docs/benchmarks.md, "Memory and disk"). fjall records
                // these options when it creates a keyspace, and opens an
                // existing one with the options it was created with.
                .index_block_pinning_policy(PinningPolicy::all(true))
                .filter_block_pinning_policy(PinningPolicy::all(true))
        };
        let meta = db.keyspace("meta", opts).map_err(open)?;
        let crawl = db.keyspace("crawl", opts).map_err(open)?;
        Ok(FjallBackend {
            dir: dir.to_path_buf(),
            db,
            meta,
            crawl,
        })
    }

    fn pair(g: fjall::Guard) -> Result<Entry, StoreError> {
        let (k, v) = g.into_inner().map_err(backend)?;
        Ok((k.to_vec(), v.to_vec()))
    }
}

impl Backend for FjallBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        guarded(&self.dir, || {
            Ok(self.crawl.get(key).map_err(backend)?.map(|v| v.to_vec()))
        })
    }

    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
        // One write per key, the last (a batch's items share a sequence
        // number, so two writes of one key would be ambiguous).
        let mut last: std::collections::HashMap<&[u8], usize> = std::collections::HashMap::with_capacity(batch.len());
        for (i, (k, _)) in batch.iter().enumerate() {
            last.insert(k.as_slice(), i);
        }
        let mut b = self.db.batch();
        for (i, (k, v)) in batch.iter().enumerate() {
            if last.get(k.as_slice()) != Some(&i) {
                continue;
            }
            match v {
                Some(v) => b.insert(&self.crawl, k.as_slice(), v.as_slice()),
                None => b.remove(&self.crawl, k.as_slice()),
            }
        }
        guarded(&self.dir, || b.commit().map_err(backend))
    }

    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        let inner: RawIter<'_> = if from <= prefix {
            Box::new(self.crawl.prefix(prefix).map(Self::pair))
        } else {
            let prefix = prefix.to_vec();
            Box::new(
                self.crawl
                    .range(from.to_vec()..)
                    .map(Self::pair)
                    .take_while(move |r| r.as_ref().map_or(true, |(k, _)| k.starts_with(&prefix))),
            )
        };
        Box::new(GuardedIter::new(&self.dir, inner))
    }

    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        guarded(&self.dir, || {
            self.crawl.prefix(prefix).next_back().map(Self::pair).transpose()
        })
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        guarded(&self.dir, || self.crawl.is_empty().map_err(backend))
    }

    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        guarded(&self.dir, || {
            Ok(self.meta.get(name).map_err(backend)?.map(|v| v.to_vec()))
        })
    }

    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        guarded(&self.dir, || self.meta.insert(name, value).map_err(backend))
    }

    fn flush(&self) -> Result<(), StoreError> {
        guarded(&self.dir, || self.db.persist(PersistMode::SyncAll).map_err(backend))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fjall::AbstractTree;

    use super::*;

    /// Tables merged out of level 0 keep their filter blocks in memory
    /// (fjall's defaults keep filters in memory only in level 0, and a point
    /// read elsewhere would read the table's whole filter again).
    #[test]
    fn merged_tables_keep_their_filter_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let b = FjallBackend::open(dir.path(), 1 << 20).unwrap();
        for part in 0..5u32 {
            // Every table spans the whole key range, so the tables are
            // merged, not moved down whole.
            let batch = (0..4_000u32)
                .map(|i| (format!("s:http://h.test/{i}/{part}").into_bytes(), Some(vec![1u8; 16])))
                .collect();
            b.apply(batch).unwrap();
            b.crawl.rotate_memtable_and_wait().unwrap();
        }
        let tree = &b.crawl.tree;
        // Merge the first level's tables into the second (the background
        // workers may be doing it already).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while tree.level_table_count(0).unwrap_or(0) > 0 {
            let _ = tree.compact(Arc::new(fjall::compaction::Leveled::default()), u64::MAX);
            assert!(std::time::Instant::now() < deadline, "the first level was not merged");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(tree.table_count() > 0);
        assert!(tree.pinned_filter_size() > 0, "filter blocks not pinned");
        assert!(tree.pinned_block_index_size() > 0, "index blocks not pinned");
        assert_eq!(b.get(b"s:http://h.test/3999/4").unwrap(), Some(vec![1u8; 16]));
        assert_eq!(b.get(b"s:http://h.test/0/5").unwrap(), None);
    }
}
