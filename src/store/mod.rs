//! Storage (pipeline: the sink of every stage, and the source of a resumed
//! crawl): the [`Store`] trait and its implementations: [`DiskStore`]
//! (embedded, in `DIR/store/`: sled 0.34 by default or fjall 3, `[store]
//! engine`; see [`Engine`]), [`MemStore`] (in memory, for tests), both
//! [`KvStore`] over a small ordered key-value [`Backend`], and
//! [`RedisStore`] (a Redis Cluster, `[store] backend = "redis"`; its key
//! layout and consistency are in `redis.rs`). One test suite
//! (`store_suite!`, in `test_suite.rs`) runs against every implementation.
//!
//! # What is stored
//!
//! - the **frontier**: every queued (and in-flight) URL, per host in priority
//!   order, so the frontier's bounded in-memory window can be refilled from disk;
//! - the **seen-set**: canonical URL → [`UrlState`] (queued, in flight, done
//!   with its page id, or an alias of another URL);
//! - **pages**: page id (crawl order) → [`StoredPage`], and where its body
//!   is kept in the WARC files ([`BodyRef`], with `output.warc`; the bodies
//!   themselves are never in the store);
//! - **fingerprints**: the simhash of every page inserted into the
//!   near-duplicate index, and the body and text hashes of exact-duplicate
//!   detection, are fields of the page records ([`Store::iter_fingerprints`]
//!   and [`Store::iter_hashes`] read them from there);
//! - **hosts**: host → [`HostStats`]; and the page counter.
//!
//! # Key layout (format version 7)
//!
//! A sled database with two trees. `meta` holds `format_version` (u32,
//! big-endian; checked at open, a mismatch is [`StoreError::Version`]) and
//! named values such as the seeds. `crawl` holds everything else, each kind
//! under a one-byte prefix, so that all writes for one page (mark done, write
//! the page, remove it from the queue, host stats, counter) are
//! a single atomic `Batch`:
//!
//! | prefix | key after the prefix                          | value |
//! |--------|-----------------------------------------------|-------|
//! | `q`    | host, `0x00`, rank (u64 BE), seq (u64 BE)     | [`QueuedUrl`] |
//! | `s`    | canonical URL                                 | [`UrlState`] |
//! | `p`    | page id (u64 BE)                              | [`StoredPage`] |
//! | `b`    | page id (u64 BE)                              | [`BodyRef`]: WARC file number, offset, length (varints) |
//! | `H`    | host                                          | [`HostStats`] |
//! | `c`    | counter name (`pages`)                        | u64 BE |
//!
//! The rank is the priority mapped to an order-preserving integer and
//! inverted ([`priority_rank`](crate::model::priority_rank)), so a prefix scan of `q host 0x00` yields the
//! host's URLs best first; the discovery sequence number breaks ties (FIFO)
//! and makes keys unique. A queued URL keeps its `q` entry while in flight:
//! it is removed only in the batch that records its page, so a crawl killed at
//! any moment finds every unfinished URL still queued.
//!
//! Values use a compact hand-written binary encoding (`codec.rs` for the
//! primitives, `records.rs` for each record type); a value
//! that does not decode is [`StoreError::Corrupt`] naming the key.
//!
//! # Durability
//!
//! sled writes its log every 500 ms by itself and recovers a consistent prefix
//! of it after a crash: a kill may lose the last few hundred milliseconds of
//! pages, which are then re-queued by resume (never recorded twice, never
//! lost). fjall writes each batch to its journal and hands it to the
//! operating system before the commit returns. [`Store::flush`] forces
//! everything to disk (at shutdown, after seeding).
//!
//! The crawl opens its store **combining** ([`KvStore::combining`]): queue
//! updates wait in memory and go into the batch of the next page commit, so
//! sled seals one log buffer per group of pages instead of one per page and
//! per out-link update. What waits is lost only together with the pages
//! whose commit it waits for, and those are still queued, so the guarantee
//! above is unchanged.

//! # Files
//!
//! - this file: the [`Store`] trait, [`StoreError`] and the format version;
//! - `types.rs`: the records stored ([`QueuedUrl`], [`UrlState`],
//!   [`StoredPage`], [`HostStats`], ...);
//! - `keys.rs`: the key layout above; `records.rs`: the value encodings;
//!   `codec.rs`: their primitives;
//! - `kvstore.rs`: [`KvStore`], the trait over a [`Backend`]; `kv.rs`: the
//!   sled and in-memory backends; `seen.rs`: the seen-set cache;
//! - `redis.rs`: [`RedisStore`]; `redis_keys.rs`: its key layout and Lua
//!   scripts; `redis_conn.rs`: its connections and their retry rule;
//!   `redis_lease.rs`: [`HostLeases`], the hosts handed to the workers of a
//!   crawl; `redis_marker.rs`: [`RedisMarker`], the crawl directory's
//!   pointer to its keys;
//! - `decision_log.rs`: [`DecisionLog`], the log of decisions the workers
//!   of one crawl share ([`Store::decision_log`]), and [`MemLog`];
//! - `limits.rs`: [`SharedLimits`], the politeness limits they share
//!   ([`Store::shared_limits`]);
//! - `content_owners.rs`: [`ContentOwners`], their shared exact-duplicate
//!   maps ([`Store::content_owners`]), and [`MemOwners`];
//! - `tables.rs`: [`TableBuckets`], where their shared near-duplicate
//!   index keeps its tables ([`Store::table_buckets`]), and [`MemBuckets`];
//!   `redis_log.rs`: [`RedisLog`], its Redis implementation;
//! - `test_suite.rs`: the shared test suite; `tests.rs`: backend-specific
//!   tests, `redis_tests.rs` those of the Redis store; `redis_local.rs`: the
//!   local Redis Cluster the tests use.

pub(crate) mod codec;
mod content_owners;
mod decision_log;
mod disk;
mod fjall_kv;
mod keys;
mod kv;
mod kvstore;
mod limits;
mod records;
mod redis;
mod redis_conn;
mod redis_keys;
mod redis_lease;
mod redis_limits;
#[doc(hidden)]
pub mod redis_local;
mod redis_log;
mod redis_marker;
mod redis_owners;
mod redis_tables;
mod seen;
mod tables;
#[cfg(test)]
#[macro_use]
pub(crate) mod test_suite;
#[cfg(test)]
mod redis_tests;
#[cfg(test)]
mod tests;
mod types;

pub use content_owners::{owner_key, ContentOwners, HashKind, MemOwners, OwnerChange, OwnerKey};
pub use decision_log::{Cursor, DecisionLog, Lease, LogEntries, MemLog, LOCK_TTL, LOCK_WAIT_MAX, READ_CHUNK};
pub use disk::{DiskBackend, Engine};
pub use fjall_kv::FjallBackend;
pub use kv::{Backend, Entry, MemBackend, RawIter, SledBackend};
pub use kvstore::{BatchOp, DiskStore, KvStore, MemStore};
pub use limits::SharedLimits;
pub use redis::{calls as redis_calls, RedisStore};
pub use redis_lease::{epoch_ms, Acquired, HostLeases, HostWork};
pub use redis_limits::RedisLimits;
pub use redis_log::RedisLog;
pub use redis_marker::RedisMarker;
pub use redis_owners::RedisOwners;
pub use redis_tables::RedisTables;
pub use tables::{Bucket, BucketEntry, MemBuckets, TableBuckets};
pub use types::{Completion, PageHashes};

use crate::model::{BodyRef, HostStats, PageId, QueueKey, QueuedUrl, StoredPage, UrlState};

use std::path::PathBuf;

/// The key layout version this build writes (2: queued URLs carry the
/// focused crawl's tunnelling counter; 3: no body/text hash → page id maps,
/// whose writes were a random-key B-tree insert twice per page, since the
/// page records hold the hashes; 4: no page id → simhash map either, whose
/// write was one more B-tree insert per new page, since the page records
/// hold the simhash; 5: page records end with the recrawl state
/// ([`crate::model::Revisit`]: validators, interval, fetch and change
/// counts) and queue entries with the page a revisit is of; 6: queue
/// entries end with their sitemap component and that page, as an option,
/// then the focus components; 7: `b` values are references into the WARC
/// files instead of bodies). A version-2 to 6 store is read (its hash and
/// fingerprint maps are ignored: the page records say the same; its records
/// end before the appended fields, which read as one fetch with no
/// validators and components of 0; its bodies are removed) and relabelled 7
/// when opened, so an older build refuses it instead of misreading the
/// appended fields; version 1 is refused.
pub const FORMAT_VERSION: u32 = 7;

/// The oldest key layout version this build reads.
const OLDEST_READABLE: u32 = 2;
/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened.
    #[error("cannot open store {path}: {message}")]
    Open {
        /// The store directory.
        path: PathBuf,
        /// The backend's message.
        message: String,
    },
    /// The database is damaged: the storage engine could not read it.
    #[error("store {path} is damaged ({message}); restore it from a backup or start a new crawl directory")]
    Damaged {
        /// The store directory.
        path: PathBuf,
        /// What the engine reported.
        message: String,
    },
    /// The store holds fewer pages than it held when it was last flushed:
    /// part of it was lost (a truncated or damaged file).
    #[error("store {path} holds {found} pages but held {expected} when last flushed: it is damaged; it was left as it was (restore it from a backup or start a new crawl directory)")]
    Lost {
        /// The store directory.
        path: PathBuf,
        /// Pages recorded at the last flush.
        expected: u64,
        /// Pages found now.
        found: u64,
    },
    /// The store was written by a different key layout version.
    #[error("store format version {got} is not supported (this simcrawl reads version {expected}); start a new crawl directory")]
    Version {
        /// [`FORMAT_VERSION`].
        expected: u32,
        /// The version found (0: a non-empty store without a version).
        got: u32,
    },
    /// A stored value could not be decoded.
    #[error("corrupt store value at key `{key}`: {reason}")]
    Corrupt {
        /// The key, printable (`\xNN` for other bytes).
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// A page was recorded for a URL that already has one.
    #[error("{url}: already recorded as page {page}")]
    AlreadyDone {
        /// The canonical URL.
        url: String,
        /// Its existing page.
        page: PageId,
    },
    /// The backend failed (I/O error, ...).
    #[error("store: {0}")]
    Backend(String),
    /// An append under the decision log's lock was refused: the lock
    /// expired or another worker holds it (nothing was appended).
    #[error("decision log {log}: the lock was lost (it expired or another worker took it); nothing was appended")]
    LockLost {
        /// The log (the crawl name).
        log: String,
    },
}
/// The store of the crawl directory whose store directory is `dir`
/// (`DIR/store/`): the crawl's Redis store when `dir` holds a
/// [`RedisMarker`], else its sled store (tools that read a finished crawl).
pub fn open_crawl_store(dir: &std::path::Path) -> Result<Box<dyn Store>, StoreError> {
    match RedisMarker::read(dir)? {
        Some(m) => Ok(Box::new(RedisStore::open(&m.nodes, &m.name)?)),
        None => Ok(Box::new(DiskStore::open(dir)?)),
    }
}

/// A boxed iterator of store items.
pub type StoreIter<'a, T> = Box<dyn Iterator<Item = Result<T, StoreError>> + 'a>;

/// Persistent crawl state. Implementations are shared between worker threads;
/// every method is a short operation. Multi-part updates (`enqueue`,
/// `reprioritize`, `complete`) are atomic: after a crash either all or none of
/// their writes are visible.
pub trait Store: Send + Sync {
    /// A named metadata value (e.g. `seeds`).
    fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Set a named metadata value.
    fn set_meta(&self, name: &str, value: &[u8]) -> Result<(), StoreError>;
    /// Set a named metadata value unless it is set; false when it was (on
    /// a shared store, of several processes one wins).
    fn set_meta_if_absent(&self, name: &str, value: &[u8]) -> Result<bool, StoreError> {
        if self.meta(name)?.is_some() {
            return Ok(false);
        }
        self.set_meta(name, value)?;
        Ok(true)
    }
    /// The host leases of a store that several worker processes share
    /// (the Redis store); `None` for a store of one process.
    fn leases(&self) -> Option<&dyn HostLeases> {
        None
    }

    /// The seen-set state of a canonical URL.
    fn url_state(&self, canonical: &str) -> Result<Option<UrlState>, StoreError>;
    /// [`Store::url_state`] of each URL, in order (a store on the network
    /// asks for all of them in one round trip per node).
    fn url_states(&self, canonical: &[&str]) -> Result<Vec<Option<UrlState>>, StoreError> {
        canonical.iter().map(|c| self.url_state(c)).collect()
    }
    /// Queue `new` URLs (queue entries, seen states `Queued`) and move
    /// already-queued ones from their old key to their current one (priority
    /// or retry count changed; state `Queued`, also after being in flight),
    /// all in one atomic batch.
    fn update_queue(&self, new: &[QueuedUrl], moved: &[(QueueKey, QueuedUrl)]) -> Result<(), StoreError>;
    /// Queue new URLs ([`Store::update_queue`] with nothing moved).
    fn enqueue(&self, urls: &[QueuedUrl]) -> Result<(), StoreError> {
        self.update_queue(urls, &[])
    }
    /// Move one queued URL from `old` to its current key ([`Store::update_queue`]).
    fn reprioritize(&self, old: QueueKey, url: &QueuedUrl) -> Result<(), StoreError> {
        self.update_queue(&[], &[(old, url.clone())])
    }
    /// Mark a queued URL in flight (its queue entry stays until `complete`).
    fn claim(&self, url: &QueuedUrl) -> Result<(), StoreError>;
    /// One queue entry.
    fn queued(&self, host: &str, key: QueueKey) -> Result<Option<QueuedUrl>, StoreError>;
    /// Up to `limit` queue entries of `host`, best first (in-flight ones included).
    fn scan_queue(&self, host: &str, limit: usize) -> Result<Vec<QueuedUrl>, StoreError>;
    /// Record `page` for the in-flight `url` in one atomic batch: the page
    /// (and body), seen state `Done`, queue entry removed, fingerprint (for a
    /// `New` page with a simhash), first-seen body and text hashes, `host`
    /// stats, page counter. Fails with [`StoreError::AlreadyDone`] if the
    /// URL already has a page.
    fn complete(
        &self,
        url: &QueuedUrl,
        page: &StoredPage,
        body: Option<BodyRef>,
        host: &HostStats,
    ) -> Result<(), StoreError> {
        self.complete_many(&[Completion {
            url,
            key: url.key(),
            page,
            body,
            host,
        }])
    }
    /// [`Store::complete`] for several pages, in order, in ONE atomic batch
    /// (a crawl records a group of decided pages with one commit). A host's
    /// stats are those of its last page in `done`.
    fn complete_many(&self, done: &[Completion<'_>]) -> Result<(), StoreError>;
    /// Record `alias` as another name of `canonical`. Returns false (and
    /// changes nothing) when `alias` is already in the seen-set.
    fn record_alias(&self, alias: &str, canonical: &str) -> Result<bool, StoreError>;

    /// A new page id, greater than every id handed out before (ids lost in a
    /// crash leave gaps).
    fn allocate_page_id(&self) -> PageId;
    /// The id [`Store::allocate_page_id`] would hand out next.
    fn next_page_id(&self) -> PageId;
    /// A page record.
    fn page(&self, id: PageId) -> Result<Option<StoredPage>, StoreError>;
    /// Where a page's body is kept in the WARC files, when it is.
    fn body_ref(&self, id: PageId) -> Result<Option<BodyRef>, StoreError>;
    /// A host's stats.
    fn host_stats(&self, host: &str) -> Result<Option<HostStats>, StoreError>;
    /// Pages recorded so far.
    fn pages_recorded(&self) -> Result<u64, StoreError>;
    /// Write everything to stable storage.
    fn flush(&self) -> Result<(), StoreError>;

    /// Every queue entry (host by host, best first).
    fn iter_queue(&self) -> StoreIter<'_, QueuedUrl>;
    /// The whole seen-set.
    fn iter_seen(&self) -> StoreIter<'_, (String, UrlState)>;
    /// Every page record in id order.
    fn iter_pages(&self) -> StoreIter<'_, StoredPage>;
    /// `(page id, simhash)` of every page inserted into the index (every
    /// `New` page with a simhash), in id order (to rebuild the index at start).
    fn iter_fingerprints(&self) -> StoreIter<'_, (PageId, u64)> {
        self.iter_fingerprints_from(0)
    }
    /// `(page id, simhash)` of the pages with an id of at least `first`, in
    /// id order (what an index snapshot does not hold yet).
    fn iter_fingerprints_from(&self, first: PageId) -> StoreIter<'_, (PageId, u64)>;
    /// The body and text hashes of every page record, in id order: the
    /// first page with a hash owns it (what exact-duplicate detection
    /// rebuilds its maps from at start).
    fn iter_hashes(&self) -> StoreIter<'_, PageHashes> {
        Box::new(self.iter_pages().map(|r| {
            r.map(|p| PageHashes {
                id: p.id,
                body: p.content_hash,
                text: p.text_hash,
            })
        }))
    }
    /// `(host, stats)` of every host.
    fn iter_hosts(&self) -> StoreIter<'_, (String, HostStats)>;

    /// The log of dedup decisions the worker processes of this crawl share
    /// (see [`DecisionLog`]): `None` for a store only one process uses.
    fn decision_log(&self) -> Option<std::sync::Arc<dyn DecisionLog>> {
        None
    }

    /// Where the near-duplicate index of a crawl that worker processes
    /// share keeps its tables (see [`TableBuckets`]): `None` for a store
    /// only one process uses (its index is in memory).
    fn table_buckets(&self) -> Option<std::sync::Arc<dyn TableBuckets>> {
        None
    }

    /// The politeness limits the worker processes of this crawl share
    /// (see [`SharedLimits`]): `None` for a store only one process uses.
    fn shared_limits(&self) -> Option<std::sync::Arc<dyn SharedLimits>> {
        None
    }

    /// The exact-duplicate maps of a crawl that worker processes share
    /// (see [`ContentOwners`]): `None` for a store only one process uses
    /// (its maps are in memory).
    fn content_owners(&self) -> Option<std::sync::Arc<dyn ContentOwners>> {
        None
    }
}
