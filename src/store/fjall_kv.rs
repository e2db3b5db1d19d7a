//! The fjall backend of [`KvStore`](super::KvStore): a log-structured merge
//! tree (fjall 3) with the `meta` and `crawl` keyspaces. Writes go to fjall's
//! journal (one atomic entry per batch, handed to the operating system
//! before the commit returns) and to an in-memory table of at most
//! [`MEMTABLE_BYTES`]; full tables are written out as sorted files of
//! LZ4-compressed blocks and merged in the background, which drops
//! overwritten and removed keys. Reads go through a block cache of
//! `[store] cache_mb` for data blocks and for the 4 KiB partitions of
//! every table's filter and index; a table keeps only their top-level
//! indexes in memory, so what the store holds in memory does not grow with
//! its tables, nor with the table a merge is writing.

use std::path::{Path, PathBuf};

use fjall::config::{CompressionPolicy, PartitioningPolicy};
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
                // Every table's filter and index are written in 4 KiB
                // partitions: a table keeps the top-level index of each in
                // memory, and a point read loads the one partition it needs
                // through the block cache. fjall's defaults partition them
                // only from level 3 on (counted from the first level that
                // holds data) and write a whole filter and index per table
                // elsewhere: a merge then holds the key hashes (8 bytes a
                // key) and index entries of the whole 64 MiB table it writes
                // in memory, and a table kept in memory whole grows with the
                // store, or, read through the cache, is read whole again on
                // each point read (docs/benchmarks.md, "Memory and disk").
                // fjall records these options when it creates a keyspace,
                // and opens an existing one with the options it was created
                // with.
                .filter_block_partitioning_policy(PartitioningPolicy::all(true))
                .index_block_partitioning_policy(PartitioningPolicy::all(true))
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
        let keep: Vec<bool> = {
            let mut last: hashbrown::HashMap<&[u8], usize> = hashbrown::HashMap::with_capacity(batch.len());
            for (i, (k, _)) in batch.iter().enumerate() {
                last.insert(k.as_slice(), i);
            }
            (0..batch.len())
                .map(|i| last.get(batch[i].0.as_slice()) == Some(&i))
                .collect()
        };
        // Each key and value is dropped once fjall's batch holds its copy,
        // so the two are not both in memory whole.
        let mut b = self.db.batch();
        for ((k, v), keep) in batch.into_iter().zip(keep) {
            if !keep {
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

    /// Tables merged out of level 0 have partitioned filters and indexes:
    /// no whole filter in memory, only the top-level indexes, and point
    /// reads answer through them (a key present, a key absent).
    #[test]
    fn merged_tables_partition_their_filters_and_indexes() {
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
        assert_eq!(tree.pinned_filter_size(), 0, "a whole filter is kept in memory");
        let top = tree.pinned_block_index_size();
        assert!(top > 0, "no top-level index in memory");
        // 20 000 keys of up to 22 bytes: a whole index names each 4 KiB
        // data block (well over 100 of them); the top level names its
        // partitions.
        assert!(top < 4_096, "top-level indexes take {top} bytes");
        // On disk, every table file of the keyspace with a filter has the
        // filter's top-level index (its section `filter_tli` in the file's
        // table of contents): the filter is written in partitions.
        let mut files = vec![b.crawl.path().join("tables")];
        let mut filtered = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let has = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
            if has(b"filter") {
                filtered += 1;
                assert!(has(b"filter_tli"), "{}: a whole filter", p.display());
            }
        }
        assert!(filtered > 0, "no table file with a filter");
        assert_eq!(b.get(b"s:http://h.test/3999/4").unwrap(), Some(vec![1u8; 16]));
        assert_eq!(b.get(b"s:http://h.test/0/5").unwrap(), None);
    }
}
