//! The ordered key-value layer under [`KvStore`](super::KvStore): the
//! [`Backend`] trait, sled 0.34 (two trees, `meta` and `crawl`) and a
//! `BTreeMap` in memory (fjall and the choice between the engines on disk
//! are in `fjall_kv.rs` and `disk.rs`). Only what the key layout needs:
//! point reads, atomic batches, prefix scans in key order.

use std::collections::BTreeMap;
use std::path::Path;

use parking_lot::RwLock;

use super::{BatchOp, StoreError};

/// A raw `(key, value)` pair.
pub type Entry = (Vec<u8>, Vec<u8>);
/// A scan over raw entries in key order.
pub type RawIter<'a> = Box<dyn Iterator<Item = Result<Entry, StoreError>> + 'a>;

/// An ordered key-value backend. Batches are atomic (all or nothing after a crash).
pub trait Backend: Send + Sync {
    /// A value of the `crawl` keyspace.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;
    /// Apply inserts and removes atomically.
    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError>;
    /// Every `(key, value)` whose key starts with `prefix`, in key order.
    fn scan(&self, prefix: &[u8]) -> RawIter<'_> {
        self.scan_from(prefix, prefix)
    }
    /// Every `(key, value)` whose key starts with `prefix` and is not less
    /// than `from`, in key order.
    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_>;
    /// The greatest entry whose key starts with `prefix`.
    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError>;
    /// Whether the `crawl` keyspace is empty.
    fn is_empty(&self) -> Result<bool, StoreError>;
    /// A value of the `meta` keyspace.
    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Set a value of the `meta` keyspace.
    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError>;
    /// Make every write durable.
    fn flush(&self) -> Result<(), StoreError>;
}

fn backend(e: sled::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Runs `f`, turning a panic of the storage engine (sled panics on some
/// damaged files instead of returning an error) into
/// [`StoreError::Damaged`] naming `dir`.
pub(super) fn guarded<T>(dir: &Path, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
    quiet_engine_panics();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(StoreError::Damaged {
            path: dir.to_path_buf(),
            message: panic_message(payload.as_ref()),
        }),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the storage engine panicked".to_string()
    }
}

/// Keeps the default panic hook from printing the storage engine's panics:
/// [`guarded`] reports them as one-line errors. Other panics print as before.
fn quiet_engine_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let engine = info.location().is_some_and(|l| l.file().contains("sled-"));
            if !engine {
                previous(info);
            }
        }));
    });
}

/// A scan whose items are read under [`guarded`]; it ends after an error.
pub(super) struct GuardedIter<'a> {
    dir: &'a Path,
    inner: RawIter<'a>,
    done: bool,
}

impl<'a> GuardedIter<'a> {
    pub(super) fn new(dir: &'a Path, inner: RawIter<'a>) -> Self {
        GuardedIter {
            dir,
            inner,
            done: false,
        }
    }
}

impl Iterator for GuardedIter<'_> {
    type Item = Result<Entry, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let inner = &mut self.inner;
        match guarded(self.dir, || Ok(inner.next())) {
            Ok(Some(Ok(e))) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Ok(Some(Err(e))) | Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// sled 0.34: the `meta` and `crawl` trees of one database directory.
pub struct SledBackend {
    dir: std::path::PathBuf,
    db: sled::Db,
    meta: sled::Tree,
    crawl: sled::Tree,
}

impl SledBackend {
    /// Open or create the database in `dir`. A damaged database is an
    /// error ([`StoreError::Damaged`] when the engine panics on it).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with_cache(dir, None)
    }

    /// [`SledBackend::open`] with sled's page cache bounded to
    /// `cache_bytes` (sled's own default, 1 GiB, when `None`).
    pub fn open_with_cache(dir: &Path, cache_bytes: Option<u64>) -> Result<Self, StoreError> {
        if let Some(m) = super::RedisMarker::read(dir)? {
            return Err(StoreError::Open {
                path: dir.to_path_buf(),
                message: format!(
                    "this crawl keeps its store in Redis (crawl name {:?}, [store] backend = \"redis\"), not in sled",
                    m.name
                ),
            });
        }
        guarded(dir, || Self::open_unguarded(dir, cache_bytes))
    }

    fn open_unguarded(dir: &Path, cache_bytes: Option<u64>) -> Result<Self, StoreError> {
        let open = |e: sled::Error| StoreError::Open {
            path: dir.to_path_buf(),
            message: e.to_string(),
        };
        // A handle to the same store dropped a moment ago (in this process)
        // may still hold the file lock while sled's flusher thread ends:
        // retry a lock failure briefly before reporting it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let db = loop {
            let mut config = sled::Config::new().path(dir);
            if let Some(bytes) = cache_bytes {
                config = config.cache_capacity(bytes);
            }
            match config.open() {
                Ok(db) => break db,
                Err(sled::Error::Io(e))
                    if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(open(e)),
            }
        };
        let meta = db.open_tree("meta").map_err(open)?;
        let crawl = db.open_tree("crawl").map_err(open)?;
        Ok(SledBackend {
            dir: dir.to_path_buf(),
            db,
            meta,
            crawl,
        })
    }
}

/// The key just past every key starting with `prefix` (None: no upper bound).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl Backend for SledBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        guarded(&self.dir, || {
            Ok(self.crawl.get(key).map_err(backend)?.map(|v| v.to_vec()))
        })
    }

    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
        let mut b = sled::Batch::default();
        for (k, v) in batch {
            match v {
                Some(v) => b.insert(k, v),
                None => b.remove(k),
            }
        }
        guarded(&self.dir, || self.crawl.apply_batch(b).map_err(backend))
    }

    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        let inner = match guarded(&self.dir, || Ok(self.scan_unguarded(prefix, from))) {
            Ok(it) => it,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(GuardedIter::new(&self.dir, inner))
    }

    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        guarded(&self.dir, || self.last_unguarded(prefix))
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        guarded(&self.dir, || Ok(self.crawl.is_empty()))
    }

    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        guarded(&self.dir, || {
            Ok(self.meta.get(name).map_err(backend)?.map(|v| v.to_vec()))
        })
    }

    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        guarded(&self.dir, || self.meta.insert(name, value).map_err(backend).map(drop))
    }

    fn flush(&self) -> Result<(), StoreError> {
        guarded(&self.dir, || self.db.flush().map_err(backend).map(drop))
    }
}

impl SledBackend {
    fn scan_unguarded(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        if from <= prefix {
            return Box::new(
                self.crawl
                    .scan_prefix(prefix)
                    .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(backend)),
            );
        }
        let prefix = prefix.to_vec();
        Box::new(
            self.crawl
                .range(from.to_vec()..)
                .take_while(move |r| r.as_ref().map_or(true, |(k, _)| k.starts_with(&prefix)))
                .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(backend)),
        )
    }

    fn last_unguarded(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        let r = match prefix_end(prefix) {
            Some(end) => self.crawl.range(prefix.to_vec()..end).next_back(),
            None => self.crawl.range(prefix.to_vec()..).next_back(),
        };
        r.transpose()
            .map(|o| o.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .map_err(backend)
    }
}

/// Two `BTreeMap`s behind a lock: the same semantics in memory.
#[derive(Default)]
pub struct MemBackend {
    crawl: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    meta: RwLock<BTreeMap<String, Vec<u8>>>,
}

impl Backend for MemBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.crawl.read().get(key).cloned())
    }

    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
        let mut m = self.crawl.write();
        for (k, v) in batch {
            match v {
                Some(v) => m.insert(k, v),
                None => m.remove(&k),
            };
        }
        Ok(())
    }

    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        // Collected under the read lock: tests and small stores only.
        let m = self.crawl.read();
        let items: Vec<_> = m
            .range(prefix.max(from).to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| Ok((k.clone(), v.clone())))
            .collect();
        Box::new(items.into_iter())
    }

    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        let m = self.crawl.read();
        let r = match prefix_end(prefix) {
            Some(end) => m.range(prefix.to_vec()..end).next_back(),
            None => m.range(prefix.to_vec()..).next_back(),
        };
        Ok(r.map(|(k, v)| (k.clone(), v.clone())))
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.crawl.read().is_empty())
    }

    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.meta.read().get(name).cloned())
    }

    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.meta.write().insert(name.to_string(), value.to_vec());
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_carries() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[b'a', 0xff]), Some(b"b".to_vec()));
        assert_eq!(prefix_end(&[0xff]), None);
    }
}
