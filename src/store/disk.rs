//! The store on disk (`DIR/store/`): which engine a store directory uses.
//! A new store is created with the configured [`Engine`] (`[store] engine`);
//! an existing one is always opened with the engine that wrote it, told by
//! its files (sled's `conf`, fjall's `version`), so a crawl resumes with the
//! engine it started with whatever the configuration says now.

use std::path::Path;

use super::fjall_kv::FjallBackend;
use super::kv::{Backend, Entry, RawIter, SledBackend};
use super::{BatchOp, StoreError};

/// The key-value engine of a store on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// sled 0.34: a log-structured B-tree.
    #[default]
    Sled,
    /// fjall 3: a log-structured merge tree with LZ4-compressed files.
    Fjall,
}

impl Engine {
    /// The engine that wrote the store in `dir`, if there is one.
    pub fn of_dir(dir: &Path) -> Option<Engine> {
        if dir.join("conf").is_file() && dir.join("db").is_file() {
            Some(Engine::Sled)
        } else if dir.join("version").is_file() && dir.join("keyspaces").is_dir() {
            Some(Engine::Fjall)
        } else {
            None
        }
    }

    /// Its name in `[store] engine`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Fjall => "fjall",
            Engine::Sled => "sled",
        }
    }
}

/// A store directory's backend, on the engine that wrote it (or, for a new
/// store, the one asked for).
pub enum DiskBackend {
    /// sled 0.34.
    Sled(SledBackend),
    /// fjall 3.
    Fjall(FjallBackend),
}

impl DiskBackend {
    /// Open the store in `dir`, or create it with `engine`; the engine's
    /// cache is bounded to `cache_bytes` (when `None`: fjall's to
    /// [`DEFAULT_CACHE_BYTES`], sled's to its own default).
    pub fn open(dir: &Path, engine: Engine, cache_bytes: Option<u64>) -> Result<Self, StoreError> {
        match Engine::of_dir(dir).unwrap_or(engine) {
            Engine::Sled => Ok(DiskBackend::Sled(SledBackend::open_with_cache(dir, cache_bytes)?)),
            Engine::Fjall => Ok(DiskBackend::Fjall(FjallBackend::open(
                dir,
                cache_bytes.unwrap_or(DEFAULT_CACHE_BYTES),
            )?)),
        }
    }

    /// The engine it runs on.
    pub fn engine(&self) -> Engine {
        match self {
            DiskBackend::Sled(_) => Engine::Sled,
            DiskBackend::Fjall(_) => Engine::Fjall,
        }
    }

    fn inner(&self) -> &dyn Backend {
        match self {
            DiskBackend::Sled(b) => b,
            DiskBackend::Fjall(b) => b,
        }
    }
}

/// fjall's block cache in a store opened by a tool rather than a crawl
/// (`simcrawl report`, `explain`, `eval --crawl`, the benchmarks' store
/// walks): the crawl's default (`[store] cache_mb = 4`). A tool reads a
/// store once, in key order or a few keys at a time, and blocks the cache
/// does not hold come from the operating system's page cache; a larger
/// cache only fills as a walk goes on (with 64 MiB, the store walk that
/// `simcrawl bench crawl` makes after a 300 000-page crawl took the
/// process from 30 to 123 MiB of RSS; with 4 MiB, to 39).
const DEFAULT_CACHE_BYTES: u64 = 4 << 20;

impl Backend for DiskBackend {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner().get(key)
    }

    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
        self.inner().apply(batch)
    }

    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        self.inner().scan_from(prefix, from)
    }

    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        self.inner().last(prefix)
    }

    fn is_empty(&self) -> Result<bool, StoreError> {
        self.inner().is_empty()
    }

    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner().meta_get(name)
    }

    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner().meta_set(name, value)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.inner().flush()
    }
}
