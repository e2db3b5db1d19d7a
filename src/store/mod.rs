//! Storage (pipeline: the sink of every stage, and the source of a resumed
//! crawl): the [`Store`] trait, the seam behind which a distributed store
//! (Redis Cluster, DESIGN.md §7) will later sit, and its two implementations:
//! [`SledStore`] (embedded sled 0.34, the default, in `DIR/store/`) and
//! [`MemStore`] (in memory, for tests). Both are [`KvStore`] over a small
//! ordered key-value [`Backend`]; one test suite (`store_suite!`, in the tests) runs
//! against every implementation.
//!
//! # What is stored
//!
//! - the **frontier**: every queued (and in-flight) URL, per host in priority
//!   order, so the frontier's bounded in-memory window can be refilled from disk;
//! - the **seen-set**: canonical URL → [`UrlState`] (queued, in flight, done
//!   with its page id, or an alias of another URL);
//! - **pages**: page id (crawl order) → [`StoredPage`], and optionally the body;
//! - **fingerprints**: the simhash of every page inserted into the
//!   near-duplicate index, and the body and text hashes of exact-duplicate
//!   detection, are fields of the page records ([`Store::iter_fingerprints`]
//!   and [`Store::iter_hashes`] read them from there);
//! - **hosts**: host → [`HostStats`]; and the page counter.
//!
//! # Key layout (format version 4)
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
//! | `b`    | page id (u64 BE)                              | body bytes, as fetched |
//! | `H`    | host                                          | [`HostStats`] |
//! | `c`    | counter name (`pages`)                        | u64 BE |
//!
//! The rank is the priority mapped to an order-preserving integer and
//! inverted ([`priority_rank`]), so a prefix scan of `q host 0x00` yields the
//! host's URLs best first; the discovery sequence number breaks ties (FIFO)
//! and makes keys unique. A queued URL keeps its `q` entry while in flight:
//! it is removed only in the batch that records its page, so a crawl killed at
//! any moment finds every unfinished URL still queued.
//!
//! Values use a compact hand-written binary encoding (`codec.rs`); a value
//! that does not decode is [`StoreError::Corrupt`] naming the key.
//!
//! # Durability
//!
//! sled writes its log every 500 ms by itself and recovers a consistent prefix
//! of it after a crash: a kill may lose the last few hundred milliseconds of
//! pages, which are then re-queued by resume (never recorded twice, never
//! lost). [`Store::flush`] forces everything to disk (at shutdown, after seeding).
//!
//! The crawl opens its store **combining** ([`KvStore::combining`]): queue
//! updates wait in memory and go into the batch of the next page commit, so
//! sled seals one log buffer per group of pages instead of one per page and
//! per out-link update. What waits is lost only together with the pages
//! whose commit it waits for, and those are still queued, so the guarantee
//! above is unchanged.

mod codec;
mod kv;
mod seen;

use std::path::PathBuf;

pub use kv::{Backend, Entry, MemBackend, RawIter, SledBackend};

use crate::crawllog::ScoreComponents;
use crate::dedup::Decision;
use codec::{show_key, Dec, Enc};

/// The key layout version this build writes (2: queued URLs carry the
/// focused crawl's tunnelling counter; 3: no body/text hash → page id maps,
/// whose writes were a random-key B-tree insert twice per page, since the
/// page records hold the hashes; 4: no page id → simhash map either, whose
/// write was one more B-tree insert per new page, since the page records
/// hold the simhash). A version-2 or 3 store is read (its hash and
/// fingerprint maps are ignored: the page records say the same) and
/// relabelled 4 when opened; version 1 is refused.
pub const FORMAT_VERSION: u32 = 4;

/// The oldest key layout version this build reads.
const OLDEST_READABLE: u32 = 2;

/// A page's number: monotonically increasing in the order pages are decided.
pub type PageId = u64;

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
}

/// A queue entry's position: `rank` (inverted priority) then `seq`; smaller is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueKey {
    /// [`priority_rank`] of the priority.
    pub rank: u64,
    /// Discovery sequence number (unique).
    pub seq: u64,
}

/// Map a priority to a `u64` whose ascending order is the priority's
/// descending order (NaN sorts last).
pub fn priority_rank(priority: f64) -> u64 {
    if priority.is_nan() {
        return u64::MAX;
    }
    let b = priority.to_bits();
    let ascending = if b >> 63 == 1 { !b } else { b ^ (1 << 63) };
    !ascending
}

/// One URL waiting in the frontier, with its explainable priority.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedUrl {
    /// The URL as discovered (before canonicalization).
    pub url: String,
    /// Its canonical form: the seen-set key.
    pub canonical: String,
    /// The politeness key: host, with `:port` when the port is not the scheme's default.
    pub host: String,
    /// Link hops from a seed.
    pub depth: u32,
    /// Canonical URL of the page it was found on (None for seeds).
    pub parent: Option<String>,
    /// The priority's parts (see `[frontier]`).
    pub components: ScoreComponents,
    /// Weighted sum of the components: higher is fetched first.
    pub priority: f64,
    /// Discovery sequence number (FIFO among equal priorities).
    pub seq: u64,
    /// Fetch attempts so far that ended in a retryable failure.
    pub retries: u32,
    /// Known in-links (offers of this URL), starting at 1.
    pub inlinks: u32,
    /// Focused crawls: off-topic pages on the path to this URL since the
    /// last on-topic one (see [`crate::focus`]); 0 otherwise.
    pub tunnel: u32,
}

impl QueuedUrl {
    /// Its position in the host's queue.
    pub fn key(&self) -> QueueKey {
        QueueKey {
            rank: priority_rank(self.priority),
            seq: self.seq,
        }
    }
}

/// A canonical URL's state in the seen-set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlState {
    /// Waiting in its host's queue at this key.
    Queued(QueueKey),
    /// Handed to a worker (still in the queue until its page is recorded).
    InFlight(QueueKey),
    /// Fetched (or skipped) and recorded as this page.
    Done(PageId),
    /// Another name of this canonical URL (redirect hop or rel=canonical).
    AliasOf(String),
}

/// The compact record of one fetch attempt kept in the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredPage {
    /// Page id (from [`Store::allocate_page_id`]).
    pub id: PageId,
    /// Canonical URL fetched.
    pub canonical: String,
    /// URL the content came from after redirects.
    pub final_url: String,
    /// HTTP status (0 when no response).
    pub status: u16,
    /// Link hops from a seed.
    pub depth: u32,
    /// What was decided.
    pub decision: Decision,
    /// The page this one duplicates.
    pub dup_of: Option<PageId>,
    /// Hamming distance to `dup_of`.
    pub distance: Option<u32>,
    /// 64-bit simhash (pages with text).
    pub simhash: Option<u64>,
    /// BLAKE3 of the body.
    pub content_hash: Option<[u8; 32]>,
    /// BLAKE3 of the normalized visible text.
    pub text_hash: Option<[u8; 32]>,
    /// Fetch start, milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// Body bytes read.
    pub bytes: u64,
}

/// Per-host counts behind the host duplicate-rate and novelty components.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Pages recorded (every fetch attempt).
    pub fetched: u64,
    /// Of which exact or near duplicates.
    pub duplicates: u64,
    /// Of which errors (network, 4xx/5xx, too large).
    pub errors: u64,
    /// Of which disallowed by robots.txt.
    pub disallowed: u64,
    /// Last fetch start, milliseconds since the Unix epoch.
    pub last_fetch_ms: u64,
}

impl HostStats {
    /// Duplicates / fetched (0 before the first fetch).
    pub fn dup_rate(&self) -> f64 {
        if self.fetched == 0 {
            0.0
        } else {
            self.duplicates as f64 / self.fetched as f64
        }
    }

    /// 1 / (1 + fetched): 1 for an unvisited host, falling as it is crawled.
    pub fn novelty(&self) -> f64 {
        1.0 / (1.0 + self.fetched as f64)
    }

    /// Count one recorded page.
    pub fn record(&mut self, page: &StoredPage) {
        self.fetched += 1;
        match page.decision {
            d if d.is_duplicate() => self.duplicates += 1,
            Decision::Error | Decision::TooLarge => self.errors += 1,
            Decision::Disallowed => self.disallowed += 1,
            _ => {}
        }
        self.last_fetch_ms = self.last_fetch_ms.max(page.fetched_at_ms);
    }
}

/// The exact-duplicate hashes of one recorded page (see [`Store::iter_hashes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHashes {
    /// The page.
    pub id: PageId,
    /// BLAKE3 of its raw body, when it had one.
    pub body: Option<[u8; 32]>,
    /// BLAKE3 of its normalized text, when it had text.
    pub text: Option<[u8; 32]>,
}

/// One page to record with [`Store::complete_many`].
#[derive(Debug, Clone, Copy)]
pub struct Completion<'a> {
    /// The in-flight URL.
    pub url: &'a QueuedUrl,
    /// The key of its queue entry in the store: `url.key()` unless the
    /// frontier moved it up in memory after storing it.
    pub key: QueueKey,
    /// Its page (id from [`Store::allocate_page_id`]).
    pub page: &'a StoredPage,
    /// The body, when bodies are stored.
    pub body: Option<&'a [u8]>,
    /// The URL's host stats with this page counted.
    pub host: &'a HostStats,
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

    /// The seen-set state of a canonical URL.
    fn url_state(&self, canonical: &str) -> Result<Option<UrlState>, StoreError>;
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
        body: Option<&[u8]>,
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
    /// A page body, when bodies are stored.
    fn body(&self, id: PageId) -> Result<Option<Vec<u8>>, StoreError>;
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
}

// ---------------------------------------------------------------------------
// The key layout over an ordered key-value backend.

const Q: u8 = b'q';
const S: u8 = b's';
const P: u8 = b'p';
const B: u8 = b'b';
const HOST: u8 = b'H';
const PAGES_COUNTER: &[u8] = b"cpages";

fn k1(prefix: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + rest.len());
    k.push(prefix);
    k.extend_from_slice(rest);
    k
}

fn id_key(prefix: u8, id: PageId) -> Vec<u8> {
    k1(prefix, &id.to_be_bytes())
}

fn host_prefix(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + host.len());
    k.push(Q);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k
}

fn queue_key(host: &str, key: QueueKey) -> Vec<u8> {
    let mut k = host_prefix(host);
    k.extend_from_slice(&key.rank.to_be_bytes());
    k.extend_from_slice(&key.seq.to_be_bytes());
    k
}

fn corrupt(key: &[u8], reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: show_key(key),
        reason: reason.into(),
    }
}

fn decode<T>(key: &[u8], value: &[u8], f: impl FnOnce(&mut Dec<'_>) -> codec::DecResult<T>) -> Result<T, StoreError> {
    let mut d = Dec::new(value);
    let v = f(&mut d).map_err(|r| corrupt(key, r))?;
    d.finish().map_err(|r| corrupt(key, r))?;
    Ok(v)
}

fn be_u64(key: &[u8], v: &[u8]) -> Result<u64, StoreError> {
    decode(key, v, |d| d.u64())
}

const DECISIONS: [Decision; 9] = [
    Decision::New,
    Decision::ExactDuplicate,
    Decision::NearDuplicate,
    Decision::Disallowed,
    Decision::Error,
    Decision::TooLarge,
    Decision::NotHtml,
    Decision::Redirect,
    Decision::Noindex,
];

fn enc_queued(u: &QueuedUrl) -> Vec<u8> {
    let mut e = Enc::with_capacity(64 + u.url.len() + u.canonical.len());
    e.str(&u.url)
        .str(&u.canonical)
        .str(&u.host)
        .varint(u64::from(u.depth))
        .opt_str(u.parent.as_deref());
    let c = &u.components;
    for v in [
        c.depth,
        c.parent_dup,
        c.host_dup_rate,
        c.host_novelty,
        c.relevance,
        c.inlinks,
        c.mirror,
    ] {
        e.f64(v);
    }
    e.f64(u.priority)
        .u64(u.seq)
        .varint(u64::from(u.retries))
        .varint(u64::from(u.inlinks))
        .varint(u64::from(u.tunnel));
    e.buf
}

fn dec_queued(d: &mut Dec<'_>) -> codec::DecResult<QueuedUrl> {
    Ok(QueuedUrl {
        url: d.str()?,
        canonical: d.str()?,
        host: d.str()?,
        depth: d.u32()?,
        parent: d.opt_str()?,
        components: ScoreComponents {
            depth: d.f64()?,
            parent_dup: d.f64()?,
            host_dup_rate: d.f64()?,
            host_novelty: d.f64()?,
            relevance: d.f64()?,
            inlinks: d.f64()?,
            mirror: d.f64()?,
        },
        priority: d.f64()?,
        seq: d.u64()?,
        retries: d.u32()?,
        inlinks: d.u32()?,
        tunnel: d.u32()?,
    })
}

fn enc_state(s: &UrlState) -> Vec<u8> {
    let mut e = Enc::with_capacity(17);
    match s {
        UrlState::Queued(k) => e.u8(0).u64(k.rank).u64(k.seq),
        UrlState::InFlight(k) => e.u8(1).u64(k.rank).u64(k.seq),
        UrlState::Done(id) => e.u8(2).u64(*id),
        UrlState::AliasOf(u) => e.u8(3).str(u),
    };
    e.buf
}

fn dec_state(d: &mut Dec<'_>) -> codec::DecResult<UrlState> {
    Ok(match d.u8()? {
        0 => UrlState::Queued(QueueKey {
            rank: d.u64()?,
            seq: d.u64()?,
        }),
        1 => UrlState::InFlight(QueueKey {
            rank: d.u64()?,
            seq: d.u64()?,
        }),
        2 => UrlState::Done(d.u64()?),
        3 => UrlState::AliasOf(d.str()?),
        t => return Err(format!("unknown url state tag {t}")),
    })
}

fn enc_page(p: &StoredPage) -> Vec<u8> {
    let mut e = Enc::with_capacity(160 + p.canonical.len() + p.final_url.len());
    let decision = DECISIONS.iter().position(|d| *d == p.decision).unwrap_or(0) as u8;
    e.u64(p.id)
        .str(&p.canonical)
        .str(&p.final_url)
        .u16(p.status)
        .varint(u64::from(p.depth))
        .u8(decision)
        .opt_u64(p.dup_of)
        .opt_u64(p.distance.map(u64::from))
        .opt_u64(p.simhash)
        .opt_hash(p.content_hash.as_ref())
        .opt_hash(p.text_hash.as_ref())
        .u64(p.fetched_at_ms)
        .varint(p.bytes);
    e.buf
}

fn dec_page(d: &mut Dec<'_>) -> codec::DecResult<StoredPage> {
    Ok(StoredPage {
        id: d.u64()?,
        canonical: d.str()?,
        final_url: d.str()?,
        status: d.u16()?,
        depth: d.u32()?,
        decision: {
            let t = d.u8()?;
            *DECISIONS
                .get(usize::from(t))
                .ok_or_else(|| format!("unknown decision tag {t}"))?
        },
        dup_of: d.opt_u64()?,
        distance: d
            .opt_u64()?
            .map(|v| u32::try_from(v).map_err(|_| "distance does not fit 32 bits".to_string()))
            .transpose()?,
        simhash: d.opt_u64()?,
        content_hash: d.opt_hash()?,
        text_hash: d.opt_hash()?,
        fetched_at_ms: d.u64()?,
        bytes: d.varint()?,
    })
}

fn enc_host(h: &HostStats) -> Vec<u8> {
    let mut e = Enc::with_capacity(24);
    e.varint(h.fetched)
        .varint(h.duplicates)
        .varint(h.errors)
        .varint(h.disallowed)
        .u64(h.last_fetch_ms);
    e.buf
}

fn dec_host(d: &mut Dec<'_>) -> codec::DecResult<HostStats> {
    Ok(HostStats {
        fetched: d.varint()?,
        duplicates: d.varint()?,
        errors: d.varint()?,
        disallowed: d.varint()?,
        last_fetch_ms: d.u64()?,
    })
}

/// One write of a batch: `(key, Some(value))` inserts, `(key, None)` removes.
pub type BatchOp = (Vec<u8>, Option<Vec<u8>>);

/// The [`Store`] implementation over an ordered key-value [`Backend`]: the key
/// layout of this module. [`SledStore`] and [`MemStore`] are its instances.
pub struct KvStore<K: Backend> {
    kv: K,
    next_page_id: std::sync::atomic::AtomicU64,
    /// The `pages` counter (kept in memory; written with every page).
    pages: parking_lot::Mutex<u64>,
    /// The seen-set cache (`s` keys), written through under its write lock.
    seen: parking_lot::RwLock<seen::SeenCache>,
    /// Queue and seen-set writes held for the next page commit, when
    /// combining ([`KvStore::combining`]).
    pending: Option<parking_lot::Mutex<Pending>>,
}

/// Writes a combining [`KvStore`] holds until its next commit: in order, and
/// indexed by key so that reads see them.
#[derive(Default)]
struct Pending {
    ops: Vec<BatchOp>,
    /// Key → index in `ops` of its latest write.
    latest: std::collections::HashMap<Vec<u8>, usize>,
}

impl Pending {
    fn push(&mut self, ops: Vec<BatchOp>) {
        for op in ops {
            self.latest.insert(op.0.clone(), self.ops.len());
            self.ops.push(op);
        }
    }

    /// The pending value of `key`: `Some(None)` when it is removed.
    fn get(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.latest.get(key).map(|&i| self.ops[i].1.clone())
    }

    fn take(&mut self) -> Vec<BatchOp> {
        self.latest.clear();
        std::mem::take(&mut self.ops)
    }
}

/// Pending writes a combining store applies without waiting for a commit.
const PENDING_MAX: usize = 4096;

/// URLs a [`MemStore`]'s seen-set cache holds (tests: always complete).
const MEM_SEEN_CACHE: usize = 1 << 20;

/// The embedded sled store (`DIR/store/`).
pub type SledStore = KvStore<SledBackend>;
/// An in-memory store for tests.
pub type MemStore = KvStore<MemBackend>;

impl SledStore {
    /// Open (or create) the store in `dir`, checking its format version
    /// (no seen-set cache: for tools that look up a few URLs).
    pub fn open(dir: &std::path::Path) -> Result<Self, StoreError> {
        KvStore::over(SledBackend::open(dir)?)
    }

    /// [`SledStore::open`] with a seen-set cache of at most `seen_cache`
    /// URLs (`[frontier] seen_cache_urls`), loaded from the store: for the crawl.
    pub fn open_cached(dir: &std::path::Path, seen_cache: usize) -> Result<Self, StoreError> {
        KvStore::over_cached(SledBackend::open(dir)?, seen_cache)
    }
}

impl MemStore {
    /// An empty in-memory store (with a seen-set cache).
    pub fn new() -> Self {
        KvStore::over_cached(MemBackend::default(), MEM_SEEN_CACHE).expect("an empty in-memory store opens")
    }
}

impl Default for MemStore {
    fn default() -> Self {
        MemStore::new()
    }
}

impl<K: Backend> KvStore<K> {
    /// Wrap a backend: check (or, when empty, write) `format_version`, and
    /// find the next page id. No seen-set cache.
    pub fn over(kv: K) -> Result<Self, StoreError> {
        Self::over_cached(kv, 0)
    }

    /// [`KvStore::over`] with a seen-set cache of at most `seen_cache` URLs
    /// (see `seen.rs`), filled from the stored seen-set.
    pub fn over_cached(kv: K, seen_cache: usize) -> Result<Self, StoreError> {
        match kv.meta_get("format_version")? {
            Some(v) => {
                let got = if v.len() == 4 {
                    u32::from_be_bytes([v[0], v[1], v[2], v[3]])
                } else {
                    return Err(corrupt(
                        b"meta:format_version",
                        format!("{} bytes, expected 4", v.len()),
                    ));
                };
                if !(OLDEST_READABLE..=FORMAT_VERSION).contains(&got) {
                    return Err(StoreError::Version {
                        expected: FORMAT_VERSION,
                        got,
                    });
                }
                if got < FORMAT_VERSION {
                    // Everything it holds reads the same; what this build
                    // writes would mislead the build that wrote it.
                    kv.meta_set("format_version", &FORMAT_VERSION.to_be_bytes())?;
                }
            }
            None => {
                if !kv.is_empty()? {
                    return Err(StoreError::Version {
                        expected: FORMAT_VERSION,
                        got: 0,
                    });
                }
                kv.meta_set("format_version", &FORMAT_VERSION.to_be_bytes())?;
            }
        }
        let next = match kv.last(&[P])? {
            Some((k, _)) => {
                let id = k.get(1..9).ok_or_else(|| corrupt(&k, "page key is not 9 bytes"))?;
                be_u64(&k, id)? + 1
            }
            None => 1,
        };
        let pages = match kv.get(PAGES_COUNTER)? {
            None => 0,
            Some(v) => be_u64(PAGES_COUNTER, &v)?,
        };
        let mut cache = seen::SeenCache::new(seen_cache);
        if seen_cache > 0 {
            // Every recorded page is in the seen-set (queued URLs and
            // aliases come on top): a lower bound of its size.
            cache.reserve(usize::try_from(pages).unwrap_or(usize::MAX));
            for r in kv.scan(&[S]) {
                let (k, v) = r?;
                let url = std::str::from_utf8(&k[1..]).map_err(|_| corrupt(&k, "URL key is not UTF-8"))?;
                cache.set(seen::fingerprint(url), &decode(&k, &v, dec_state)?);
            }
        }
        Ok(KvStore {
            kv,
            next_page_id: std::sync::atomic::AtomicU64::new(next),
            pages: parking_lot::Mutex::new(pages),
            seen: parking_lot::RwLock::new(cache),
            pending: None,
        })
    }

    /// This store, combining writes: queue updates ([`Store::update_queue`],
    /// [`Store::claim`], [`Store::record_alias`]) are held in memory and
    /// written in the batch of the next [`Store::complete_many`], so a crawl
    /// pays one backend batch per group of pages instead of one per page and
    /// per out-link update. Reads see the held writes; scans, `set_meta`,
    /// `flush` and dropping the store write them first; more than
    /// [`PENDING_MAX`] are written at once.
    ///
    /// Crash safety: a held write is lost only together with the pages of the
    /// commit it was waiting for. The crawl's writes between two commits come
    /// from pages not yet recorded (their out-links, aliases) or are
    /// in-memory-only by design (in-link counts, retry counts), and an
    /// unrecorded page is still queued in the store, so resume fetches it
    /// again and writes them again. Each update stays atomic: it goes into
    /// one batch whole. A failed batch loses the held writes and fails the
    /// commit; the crawl stops on that, and reopening the store rebuilds
    /// every in-memory view from what was written.
    pub fn combining(mut self) -> Self {
        self.pending = Some(parking_lot::Mutex::new(Pending::default()));
        self
    }

    /// Apply one atomic update `ops`, or hold it when combining; then update
    /// the seen-set cache with `seen_update`, under the cache's write lock.
    fn write(&self, ops: Vec<BatchOp>, seen_update: impl FnOnce(&mut seen::SeenCache)) -> Result<(), StoreError> {
        let mut seen = self.seen.write();
        match &self.pending {
            None => self.kv.apply(ops)?,
            Some(p) => {
                let mut p = p.lock();
                p.push(ops);
                if p.ops.len() > PENDING_MAX {
                    self.kv.apply(p.take())?;
                }
            }
        }
        seen_update(&mut seen);
        Ok(())
    }

    /// Apply the held writes followed by `ops`, in one batch.
    fn commit(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        match &self.pending {
            None => self.kv.apply(ops),
            Some(p) => {
                // Applied under the lock, so a concurrent read finds each
                // write either held or in the backend.
                let mut p = p.lock();
                let mut all = p.take();
                all.extend(ops);
                self.kv.apply(all)
            }
        }
    }

    /// Apply the held writes (before a scan, which reads the backend only).
    fn sync(&self) -> Result<(), StoreError> {
        if let Some(p) = &self.pending {
            let mut p = p.lock();
            if !p.ops.is_empty() {
                self.kv.apply(p.take())?;
            }
        }
        Ok(())
    }

    /// A value of the `crawl` keyspace, held writes first.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(p) = &self.pending {
            if let Some(v) = p.lock().get(key) {
                return Ok(v);
            }
        }
        self.kv.get(key)
    }

    /// The backend (tests use it to damage values; a combining store's held
    /// writes are not in it yet).
    pub fn backend(&self) -> &K {
        &self.kv
    }

    fn scan_decode<'a, T: 'a>(
        &'a self,
        prefix: &[u8],
        f: impl Fn(&[u8], &[u8]) -> Result<T, StoreError> + 'a,
    ) -> StoreIter<'a, T> {
        if let Err(e) = self.sync() {
            return Box::new(std::iter::once(Err(e)));
        }
        Box::new(self.kv.scan(prefix).map(move |r| r.and_then(|(k, v)| f(&k, &v))))
    }
}

impl<K: Backend> Drop for KvStore<K> {
    /// Writes what a combining store still holds (a graceful end calls
    /// [`Store::flush`] first; this covers the paths that do not).
    fn drop(&mut self) {
        if let Err(e) = self.sync() {
            tracing::error!("store: writing held queue updates failed: {e}");
        }
    }
}

impl<K: Backend> Store for KvStore<K> {
    fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.kv.meta_get(name)
    }

    fn set_meta(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.sync()?;
        self.kv.meta_set(name, value)
    }

    fn url_state(&self, canonical: &str) -> Result<Option<UrlState>, StoreError> {
        match self.seen.read().get(seen::fingerprint(canonical)) {
            seen::Lookup::Known(s) => return Ok(Some(s)),
            seen::Lookup::Absent => return Ok(None),
            seen::Lookup::Alias | seen::Lookup::Unknown => {}
        }
        let key = k1(S, canonical.as_bytes());
        match self.get(&key)? {
            None => Ok(None),
            Some(v) => decode(&key, &v, dec_state).map(Some),
        }
    }

    fn update_queue(&self, new: &[QueuedUrl], moved: &[(QueueKey, QueuedUrl)]) -> Result<(), StoreError> {
        let mut batch = Vec::with_capacity(new.len() * 2 + moved.len() * 3);
        for u in new {
            batch.push((queue_key(&u.host, u.key()), Some(enc_queued(u))));
            batch.push((
                k1(S, u.canonical.as_bytes()),
                Some(enc_state(&UrlState::Queued(u.key()))),
            ));
        }
        for (old, u) in moved {
            if *old != u.key() {
                batch.push((queue_key(&u.host, *old), None));
            }
            batch.push((queue_key(&u.host, u.key()), Some(enc_queued(u))));
            batch.push((
                k1(S, u.canonical.as_bytes()),
                Some(enc_state(&UrlState::Queued(u.key()))),
            ));
        }
        self.write(batch, |seen| {
            for u in new.iter().chain(moved.iter().map(|(_, u)| u)) {
                seen.set(seen::fingerprint(&u.canonical), &UrlState::Queued(u.key()));
            }
        })
    }

    fn claim(&self, url: &QueuedUrl) -> Result<(), StoreError> {
        let state = UrlState::InFlight(url.key());
        let ops = vec![(k1(S, url.canonical.as_bytes()), Some(enc_state(&state)))];
        self.write(ops, |seen| seen.set(seen::fingerprint(&url.canonical), &state))
    }

    fn queued(&self, host: &str, key: QueueKey) -> Result<Option<QueuedUrl>, StoreError> {
        let k = queue_key(host, key);
        match self.get(&k)? {
            None => Ok(None),
            Some(v) => decode(&k, &v, dec_queued).map(Some),
        }
    }

    fn scan_queue(&self, host: &str, limit: usize) -> Result<Vec<QueuedUrl>, StoreError> {
        self.scan_decode(&host_prefix(host), |k, v| decode(k, v, dec_queued))
            .take(limit)
            .collect()
    }

    fn complete_many(&self, done: &[Completion<'_>]) -> Result<(), StoreError> {
        if done.is_empty() {
            return Ok(());
        }
        let mut batch: Vec<BatchOp> = Vec::with_capacity(6 * done.len() + 1);
        for &Completion {
            url,
            key,
            page,
            body,
            host,
        } in done
        {
            if let Some(UrlState::Done(id)) = self.url_state(&url.canonical)? {
                return Err(StoreError::AlreadyDone {
                    url: url.canonical.clone(),
                    page: id,
                });
            }
            batch.push((id_key(P, page.id), Some(enc_page(page))));
            if let Some(b) = body {
                batch.push((id_key(B, page.id), Some(b.to_vec())));
            }
            batch.push((
                k1(S, url.canonical.as_bytes()),
                Some(enc_state(&UrlState::Done(page.id))),
            ));
            batch.push((queue_key(&url.host, key), None));
            // A later page of the same host overwrites this value in the batch.
            batch.push((k1(HOST, url.host.as_bytes()), Some(enc_host(host))));
        }
        let mut count = self.pages.lock();
        let n = done.len() as u64;
        batch.push((PAGES_COUNTER.to_vec(), Some((*count + n).to_be_bytes().to_vec())));
        let mut seen = self.seen.write();
        self.commit(batch)?;
        for c in done {
            seen.set(seen::fingerprint(&c.url.canonical), &UrlState::Done(c.page.id));
        }
        *count += n;
        Ok(())
    }

    fn record_alias(&self, alias: &str, canonical: &str) -> Result<bool, StoreError> {
        if alias == canonical || self.url_state(alias)?.is_some() {
            return Ok(false);
        }
        let mut e = Enc::default();
        e.u8(3).str(canonical);
        self.write(vec![(k1(S, alias.as_bytes()), Some(e.buf))], |seen| {
            seen.set(seen::fingerprint(alias), &UrlState::AliasOf(canonical.to_string()));
        })?;
        Ok(true)
    }

    fn allocate_page_id(&self) -> PageId {
        self.next_page_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn next_page_id(&self) -> PageId {
        self.next_page_id.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn page(&self, id: PageId) -> Result<Option<StoredPage>, StoreError> {
        let k = id_key(P, id);
        match self.get(&k)? {
            None => Ok(None),
            Some(v) => decode(&k, &v, dec_page).map(Some),
        }
    }

    fn body(&self, id: PageId) -> Result<Option<Vec<u8>>, StoreError> {
        self.get(&id_key(B, id))
    }

    fn host_stats(&self, host: &str) -> Result<Option<HostStats>, StoreError> {
        let k = k1(HOST, host.as_bytes());
        match self.get(&k)? {
            None => Ok(None),
            Some(v) => decode(&k, &v, dec_host).map(Some),
        }
    }

    fn pages_recorded(&self) -> Result<u64, StoreError> {
        Ok(*self.pages.lock())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.sync()?;
        self.kv.flush()
    }

    fn iter_queue(&self) -> StoreIter<'_, QueuedUrl> {
        self.scan_decode(&[Q], |k, v| decode(k, v, dec_queued))
    }

    fn iter_seen(&self) -> StoreIter<'_, (String, UrlState)> {
        self.scan_decode(&[S], |k, v| {
            let url = std::str::from_utf8(&k[1..]).map_err(|_| corrupt(k, "URL key is not UTF-8"))?;
            Ok((url.to_string(), decode(k, v, dec_state)?))
        })
    }

    fn iter_pages(&self) -> StoreIter<'_, StoredPage> {
        self.scan_decode(&[P], |k, v| decode(k, v, dec_page))
    }

    fn iter_fingerprints_from(&self, first: PageId) -> StoreIter<'_, (PageId, u64)> {
        let from = id_key(P, first);
        if let Err(e) = self.sync() {
            return Box::new(std::iter::once(Err(e)));
        }
        Box::new(
            self.kv
                .scan_from(&[P], &from)
                .filter_map(|r| match r.and_then(|(k, v)| decode(&k, &v, dec_page)) {
                    Ok(StoredPage {
                        id,
                        decision: Decision::New,
                        simhash: Some(fp),
                        ..
                    }) => Some(Ok((id, fp))),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                }),
        )
    }

    fn iter_hosts(&self) -> StoreIter<'_, (String, HostStats)> {
        self.scan_decode(&[HOST], |k, v| {
            let host = std::str::from_utf8(&k[1..]).map_err(|_| corrupt(k, "host key is not UTF-8"))?;
            Ok((host.to_string(), decode(k, v, dec_host)?))
        })
    }
}

/// The shared [`Store`] test suite: `store_suite!(module_name, make_store())`
/// (any expression that dereferences to a store) expands to a test module running every case against the store the
/// expression makes (one fresh store per case). Used for [`MemStore`] and
/// [`SledStore`]; a future implementation adds one line.
#[cfg(test)]
macro_rules! store_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn enqueue_scan_best_first() {
                $crate::store::suite::enqueue_scan_best_first(&*$make);
            }
            #[test]
            fn claim_complete_lifecycle() {
                $crate::store::suite::claim_complete_lifecycle(&*$make);
            }
            #[test]
            fn complete_many_is_one_group() {
                $crate::store::suite::complete_many_is_one_group(&*$make);
            }
            #[test]
            fn reprioritize_moves_entry() {
                $crate::store::suite::reprioritize_moves_entry(&*$make);
            }
            #[test]
            fn aliases_and_meta() {
                $crate::store::suite::aliases_and_meta(&*$make);
            }
            #[test]
            fn page_ids_increase() {
                $crate::store::suite::page_ids_increase(&*$make);
            }
        }
    };
}

#[cfg(test)]
pub(crate) mod suite {
    //! The cases of [`store_suite!`], each a function over `&dyn Store`.
    use super::*;

    pub(crate) fn qurl(host: &str, path: &str, priority: f64, seq: u64) -> QueuedUrl {
        let canonical = format!("http://{host}/{path}");
        QueuedUrl {
            url: canonical.clone(),
            canonical,
            host: host.to_string(),
            depth: 1,
            parent: Some(format!("http://{host}/")),
            components: ScoreComponents {
                depth: -1.0,
                ..Default::default()
            },
            priority,
            seq,
            retries: 0,
            inlinks: 1,
            // Non-zero for some, so round trips check the field.
            tunnel: (seq % 3) as u32,
        }
    }

    pub(crate) fn page(s: &dyn Store, u: &QueuedUrl, decision: Decision) -> StoredPage {
        StoredPage {
            id: s.allocate_page_id(),
            canonical: u.canonical.clone(),
            final_url: u.canonical.clone(),
            status: 200,
            depth: u.depth,
            decision,
            simhash: Some(0xdead_beef),
            content_hash: Some([u.seq as u8; 32]),
            text_hash: Some([7; 32]),
            fetched_at_ms: 1000 + u.seq,
            bytes: 10,
            ..Default::default()
        }
    }

    pub(crate) fn enqueue_scan_best_first(s: &dyn Store) {
        let urls = vec![
            qurl("a.test", "low", -3.0, 1),
            qurl("a.test", "high", 2.5, 2),
            qurl("a.test", "mid", 0.0, 3),
            qurl("a.test", "mid-later", 0.0, 4),
            qurl("a.test", "neg", -0.5, 5),
            qurl("a.test:8080", "other-port", 9.0, 6),
            qurl("b.test", "x", 100.0, 7),
        ];
        s.enqueue(&urls).unwrap();
        let got: Vec<String> = s
            .scan_queue("a.test", 10)
            .unwrap()
            .into_iter()
            .map(|u| u.canonical)
            .collect();
        assert_eq!(
            got,
            ["high", "mid", "mid-later", "neg", "low"].map(|p| format!("http://a.test/{p}"))
        );
        assert_eq!(s.scan_queue("a.test", 2).unwrap().len(), 2);
        assert_eq!(s.scan_queue("a.test:8080", 10).unwrap().len(), 1);
        assert_eq!(s.iter_queue().count(), 7);
        let back = s.queued("a.test", urls[1].key()).unwrap().unwrap();
        assert_eq!(back, urls[1]);
        assert_eq!(
            s.url_state("http://a.test/high").unwrap(),
            Some(UrlState::Queued(urls[1].key()))
        );
        assert_eq!(s.url_state("http://a.test/none").unwrap(), None);
    }

    /// The first pages with body hash `[1; 32]` and text hash `[7; 32]`, as
    /// exact-duplicate detection finds them after a restart.
    fn owners(s: &dyn Store) -> (Option<PageId>, Option<PageId>) {
        crate::dedup::ExactIndex::load(s)
            .unwrap()
            .lookup(Some(&[1; 32]), Some(&[7; 32]))
    }

    pub(crate) fn claim_complete_lifecycle(s: &dyn Store) {
        let u = qurl("a.test", "x", 1.0, 1);
        let v = qurl("a.test", "y", 1.0, 2);
        s.enqueue(&[u.clone(), v.clone()]).unwrap();
        s.claim(&u).unwrap();
        assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::InFlight(u.key())));
        assert_eq!(s.scan_queue("a.test", 10).unwrap().len(), 2, "in-flight stays queued");
        let p = page(s, &u, Decision::New);
        let mut hs = HostStats::default();
        hs.record(&p);
        s.complete(&u, &p, Some(b"<html>"), &hs).unwrap();
        assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(p.id)));
        assert_eq!(s.scan_queue("a.test", 10).unwrap(), vec![v.clone()]);
        assert_eq!(s.page(p.id).unwrap(), Some(p.clone()));
        assert_eq!(s.body(p.id).unwrap().as_deref(), Some(&b"<html>"[..]));
        assert_eq!(s.host_stats("a.test").unwrap(), Some(hs.clone()));
        assert_eq!(s.pages_recorded().unwrap(), 1);
        assert_eq!(owners(s), (Some(p.id), Some(p.id)));
        // Recording the same URL again is refused.
        let again = page(s, &u, Decision::New);
        assert!(matches!(
            s.complete(&u, &again, None, &hs),
            Err(StoreError::AlreadyDone { page, .. }) if page == p.id
        ));
        // A duplicate keeps the first page as the hash owner and adds no fingerprint.
        s.claim(&v).unwrap();
        let mut q = page(s, &v, Decision::ExactDuplicate);
        q.content_hash = Some([1; 32]);
        q.dup_of = Some(p.id);
        hs.record(&q);
        s.complete(&v, &q, None, &hs).unwrap();
        assert_eq!(owners(s), (Some(p.id), Some(p.id)));
        let fps: Vec<_> = s.iter_fingerprints().map(Result::unwrap).collect();
        assert_eq!(fps, vec![(p.id, 0xdead_beef)]);
        let from = |id| s.iter_fingerprints_from(id).map(Result::unwrap).collect::<Vec<_>>();
        assert_eq!(from(p.id), fps);
        assert_eq!(from(p.id + 1), vec![]);
        assert!(s.next_page_id() > q.id);
        let pages: Vec<_> = s.iter_pages().map(|r| r.unwrap().id).collect();
        assert_eq!(pages, vec![p.id, q.id]);
        let hashes: Vec<PageHashes> = s.iter_hashes().map(Result::unwrap).collect();
        assert_eq!(
            hashes,
            vec![
                PageHashes {
                    id: p.id,
                    body: Some([1; 32]),
                    text: Some([7; 32])
                },
                PageHashes {
                    id: q.id,
                    body: Some([1; 32]),
                    text: q.text_hash
                },
            ]
        );
        let hosts: Vec<_> = s.iter_hosts().map(Result::unwrap).collect();
        assert_eq!(hosts, vec![("a.test".to_string(), hs.clone())]);
        assert_eq!(hs.duplicates, 1);
        assert!(s.iter_queue().next().is_none());
        assert_eq!(s.pages_recorded().unwrap(), 2);
    }

    pub(crate) fn complete_many_is_one_group(s: &dyn Store) {
        let (u, v, w) = (
            qurl("a.test", "x", 1.0, 1),
            qurl("a.test", "y", 1.0, 2),
            qurl("b.test", "z", 1.0, 3),
        );
        s.enqueue(&[u.clone(), v.clone(), w.clone()]).unwrap();
        // Two pages with the same body and text in one group: the first owns the hashes.
        let p = page(s, &u, Decision::New);
        let mut q = page(s, &v, Decision::ExactDuplicate);
        q.dup_of = Some(p.id);
        q.content_hash = p.content_hash;
        let r = page(s, &w, Decision::New);
        let (mut ha, mut hb) = (HostStats::default(), HostStats::default());
        ha.record(&p);
        let ha1 = ha.clone();
        ha.record(&q);
        hb.record(&r);
        let group = [
            Completion {
                url: &u,
                key: u.key(),
                page: &p,
                body: None,
                host: &ha1,
            },
            Completion {
                url: &v,
                key: v.key(),
                page: &q,
                body: None,
                host: &ha,
            },
            Completion {
                url: &w,
                key: w.key(),
                page: &r,
                body: None,
                host: &hb,
            },
        ];
        s.complete_many(&group).unwrap();
        assert_eq!(owners(s), (Some(p.id), Some(p.id)));
        assert_eq!(s.host_stats("a.test").unwrap(), Some(ha), "the last page's stats");
        assert_eq!(s.host_stats("b.test").unwrap(), Some(hb));
        assert_eq!(s.pages_recorded().unwrap(), 3);
        assert!(s.iter_queue().next().is_none());
        for (x, id) in [(&u, p.id), (&v, q.id), (&w, r.id)] {
            assert_eq!(s.url_state(&x.canonical).unwrap(), Some(UrlState::Done(id)));
        }
        // A group naming a recorded URL is refused whole.
        let x = qurl("c.test", "x", 1.0, 4);
        s.enqueue(std::slice::from_ref(&x)).unwrap();
        let px = page(s, &x, Decision::New);
        let again = page(s, &u, Decision::New);
        let hs = HostStats::default();
        let bad = [
            Completion {
                url: &x,
                key: x.key(),
                page: &px,
                body: None,
                host: &hs,
            },
            Completion {
                url: &u,
                key: u.key(),
                page: &again,
                body: None,
                host: &hs,
            },
        ];
        assert!(matches!(s.complete_many(&bad), Err(StoreError::AlreadyDone { .. })));
        assert_eq!(s.url_state(&x.canonical).unwrap(), Some(UrlState::Queued(x.key())));
        assert_eq!(s.pages_recorded().unwrap(), 3);
    }

    pub(crate) fn reprioritize_moves_entry(s: &dyn Store) {
        let a = qurl("a.test", "a", 1.0, 1);
        let mut b = qurl("a.test", "b", 0.5, 2);
        s.enqueue(&[a, b.clone()]).unwrap();
        s.claim(&b).unwrap();
        let old = b.key();
        b.priority = 3.0;
        s.reprioritize(old, &b).unwrap();
        let order: Vec<_> = s
            .scan_queue("a.test", 10)
            .unwrap()
            .into_iter()
            .map(|u| u.canonical)
            .collect();
        assert_eq!(order, ["http://a.test/b", "http://a.test/a"]);
        assert_eq!(s.url_state(&b.canonical).unwrap(), Some(UrlState::Queued(b.key())));
        assert_eq!(s.queued("a.test", old).unwrap(), None);
        // New and moved entries in one batch.
        let c = qurl("a.test", "c", 2.0, 3);
        let old = b.key();
        b.priority = -1.0;
        s.update_queue(std::slice::from_ref(&c), &[(old, b.clone())]).unwrap();
        let order: Vec<_> = s
            .scan_queue("a.test", 10)
            .unwrap()
            .into_iter()
            .map(|u| u.canonical)
            .collect();
        assert_eq!(order, ["http://a.test/c", "http://a.test/a", "http://a.test/b"]);
    }

    pub(crate) fn aliases_and_meta(s: &dyn Store) {
        let a = qurl("a.test", "a", 1.0, 1);
        s.enqueue(std::slice::from_ref(&a)).unwrap();
        assert!(s.record_alias("http://a.test/a/", &a.canonical).unwrap());
        assert!(!s.record_alias("http://a.test/a/", &a.canonical).unwrap());
        assert!(!s.record_alias(&a.canonical, "http://elsewhere/").unwrap());
        assert_eq!(
            s.url_state("http://a.test/a/").unwrap(),
            Some(UrlState::AliasOf(a.canonical.clone()))
        );
        assert_eq!(s.iter_seen().count(), 2);
        assert_eq!(s.meta("seeds").unwrap(), None);
        s.set_meta("seeds", b"http://a.test/").unwrap();
        assert_eq!(s.meta("seeds").unwrap().as_deref(), Some(&b"http://a.test/"[..]));
        s.flush().unwrap();
    }

    pub(crate) fn page_ids_increase(s: &dyn Store) {
        let a = s.allocate_page_id();
        let b = s.allocate_page_id();
        assert!(a >= 1 && b > a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sled store in a temporary directory removed on drop.
    struct TempSled(SledStore, #[allow(dead_code)] tempfile::TempDir);
    impl std::ops::Deref for TempSled {
        type Target = SledStore;
        fn deref(&self) -> &SledStore {
            &self.0
        }
    }
    fn temp_sled() -> TempSled {
        let dir = tempfile::tempdir().unwrap();
        TempSled(SledStore::open(&dir.path().join("store")).unwrap(), dir)
    }

    fn temp_sled_cached() -> TempSled {
        let dir = tempfile::tempdir().unwrap();
        TempSled(SledStore::open_cached(&dir.path().join("store"), 1 << 10).unwrap(), dir)
    }

    store_suite!(mem, Box::new(MemStore::new()));
    store_suite!(mem_uncached, Box::new(MemStore::over(MemBackend::default()).unwrap()));
    store_suite!(sled_store, temp_sled());
    store_suite!(sled_cached, temp_sled_cached());
    store_suite!(mem_combining, Box::new(MemStore::new().combining()));
    store_suite!(
        mem_uncached_combining,
        Box::new(MemStore::over(MemBackend::default()).unwrap().combining())
    );
    store_suite!(sled_combining, {
        let t = temp_sled_cached();
        TempSled(t.0.combining(), t.1)
    });

    /// A backend that counts the batches applied to it.
    #[derive(Default)]
    struct Counting(MemBackend, std::sync::atomic::AtomicUsize);
    impl Counting {
        fn batches(&self) -> usize {
            self.1.load(std::sync::atomic::Ordering::Relaxed)
        }
    }
    impl Backend for Counting {
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.get(key)
        }
        fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.apply(batch)
        }
        fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
            self.0.scan_from(prefix, from)
        }
        fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
            self.0.last(prefix)
        }
        fn is_empty(&self) -> Result<bool, StoreError> {
            self.0.is_empty()
        }
        fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.meta_get(name)
        }
        fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
            self.0.meta_set(name, value)
        }
        fn flush(&self) -> Result<(), StoreError> {
            self.0.flush()
        }
    }

    /// A combining store holds queue updates until the next page commit,
    /// answers reads from them meanwhile, and writes them with the commit in
    /// one batch (without a seen-set cache, so `url_state` reads them too).
    #[test]
    fn combining_holds_queue_updates_until_the_commit() {
        let s = KvStore::over(Counting::default()).unwrap().combining();
        let before = s.backend().batches();
        let (a, b, c) = (
            suite::qurl("a.test", "a", 1.0, 1),
            suite::qurl("a.test", "b", 2.0, 2),
            suite::qurl("a.test", "c", 3.0, 3),
        );
        s.enqueue(&[a.clone(), b.clone()]).unwrap();
        let mut c2 = c.clone();
        s.enqueue(std::slice::from_ref(&c)).unwrap();
        c2.priority = -1.0;
        s.reprioritize(c.key(), &c2).unwrap();
        assert!(s.record_alias("http://a.test/alias", &a.canonical).unwrap());
        assert!(!s.record_alias("http://a.test/alias", &a.canonical).unwrap());
        assert_eq!(s.backend().batches(), before, "nothing written before the commit");
        assert_eq!(s.backend().get(&queue_key("a.test", a.key())).unwrap(), None);
        // Reads see the held writes, removals included.
        assert_eq!(s.queued("a.test", b.key()).unwrap(), Some(b.clone()));
        assert_eq!(s.queued("a.test", c.key()).unwrap(), None, "moved away");
        assert_eq!(s.queued("a.test", c2.key()).unwrap(), Some(c2.clone()));
        assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Queued(a.key())));
        assert_eq!(
            s.url_state("http://a.test/alias").unwrap(),
            Some(UrlState::AliasOf(a.canonical.clone()))
        );
        let p = suite::page(&s, &a, Decision::New);
        s.complete(&a, &p, None, &HostStats::default()).unwrap();
        assert_eq!(
            s.backend().batches(),
            before + 1,
            "one batch for the updates and the page"
        );
        assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Done(p.id)));
        let queue: Vec<String> = s
            .scan_queue("a.test", 10)
            .unwrap()
            .into_iter()
            .map(|u| u.canonical)
            .collect();
        assert_eq!(queue, [b.canonical.clone(), c.canonical.clone()]);
        assert_eq!(
            s.backend().batches(),
            before + 1,
            "nothing held, nothing to write before the scan"
        );
        // A scan writes what is held first.
        s.enqueue(&[suite::qurl("a.test", "d", 0.0, 4)]).unwrap();
        assert_eq!(s.scan_queue("a.test", 10).unwrap().len(), 3);
        assert_eq!(s.backend().batches(), before + 2);
    }

    /// Dropping a combining store writes what it holds.
    #[test]
    fn combining_store_writes_held_updates_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let a = suite::qurl("a.test", "a", 1.0, 1);
        {
            let s = SledStore::open_cached(dir.path(), 16).unwrap().combining();
            s.enqueue(std::slice::from_ref(&a)).unwrap();
        }
        let s = SledStore::open(dir.path()).unwrap();
        assert_eq!(s.queued("a.test", a.key()).unwrap(), Some(a.clone()));
        assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Queued(a.key())));
    }

    /// A reopened store's seen-set cache is loaded from the store: it answers
    /// like the backend for every kind of state, and "not seen" for others.
    #[test]
    fn seen_cache_is_loaded_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (suite::qurl("a.test", "a", 1.0, 1), suite::qurl("a.test", "b", 2.0, 2));
        let id;
        {
            let s = SledStore::open_cached(dir.path(), 16).unwrap();
            s.enqueue(&[a.clone(), b.clone()]).unwrap();
            let p = suite::page(&s, &a, Decision::New);
            id = p.id;
            s.complete(&a, &p, None, &HostStats::default()).unwrap();
            assert!(s.record_alias("http://a.test/alias", &b.canonical).unwrap());
            s.flush().unwrap();
        }
        for max in [0, 1, 16] {
            let s = SledStore::open_cached(dir.path(), max).unwrap();
            assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Done(id)), "{max}");
            assert_eq!(
                s.url_state(&b.canonical).unwrap(),
                Some(UrlState::Queued(b.key())),
                "{max}"
            );
            assert_eq!(
                s.url_state("http://a.test/alias").unwrap(),
                Some(UrlState::AliasOf(b.canonical.clone())),
                "{max}"
            );
            assert_eq!(s.url_state("http://a.test/never").unwrap(), None, "{max}");
        }
    }

    #[test]
    fn priority_rank_orders_descending() {
        let ps = [f64::INFINITY, 1e9, 2.5, 0.1, 0.0, -0.0, -0.1, -7.0, f64::NEG_INFINITY];
        for w in ps.windows(2) {
            assert!(priority_rank(w[0]) <= priority_rank(w[1]), "{w:?}");
        }
        assert!(priority_rank(2.0) < priority_rank(1.0));
        assert_eq!(priority_rank(f64::NAN), u64::MAX);
    }

    #[test]
    fn sled_reopen_keeps_state_and_next_id() {
        let dir = tempfile::tempdir().unwrap();
        let u = suite::qurl("a.test", "x", 1.0, 1);
        let id;
        {
            let s = SledStore::open(dir.path()).unwrap();
            s.enqueue(std::slice::from_ref(&u)).unwrap();
            s.claim(&u).unwrap();
            let p = suite::page(&s, &u, Decision::New);
            id = p.id;
            s.complete(&u, &p, None, &HostStats::default()).unwrap();
            s.flush().unwrap();
        }
        let s = SledStore::open(dir.path()).unwrap();
        assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(id)));
        assert!(s.allocate_page_id() > id);
    }

    #[test]
    fn version_2_and_3_stores_are_read_and_relabelled() {
        for version in [2u32, 3] {
            let dir = tempfile::tempdir().unwrap();
            let u = suite::qurl("a.test", "x", 1.0, 1);
            let (id, fp);
            {
                let s = SledStore::open(dir.path()).unwrap();
                s.enqueue(std::slice::from_ref(&u)).unwrap();
                let p = suite::page(&s, &u, Decision::New);
                (id, fp) = (p.id, p.simhash.unwrap());
                s.complete(&u, &p, None, &HostStats::default()).unwrap();
                // What a version-2 build also wrote: a body hash → page map;
                // versions 2 and 3: a page → simhash map (here a stale value,
                // to show it is not what the index is rebuilt from).
                let mut hash_key = vec![b'h'];
                hash_key.extend_from_slice(&[1; 32]);
                let mut fp_key = vec![b'f'];
                fp_key.extend_from_slice(&id.to_be_bytes());
                let mut old = vec![(fp_key, Some(0x0bad_u64.to_be_bytes().to_vec()))];
                if version == 2 {
                    old.push((hash_key, Some(id.to_be_bytes().to_vec())));
                }
                s.backend().apply(old).unwrap();
                s.backend().meta_set("format_version", &version.to_be_bytes()).unwrap();
                s.flush().unwrap();
            }
            let s = SledStore::open(dir.path()).unwrap();
            assert_eq!(
                s.meta("format_version").unwrap().as_deref(),
                Some(&FORMAT_VERSION.to_be_bytes()[..])
            );
            let exact = crate::dedup::ExactIndex::load(&s).unwrap();
            assert_eq!(exact.lookup(Some(&[1; 32]), Some(&[7; 32])), (Some(id), Some(id)));
            assert_eq!(s.iter_pages().count(), 1);
            let fps: Vec<_> = s.iter_fingerprints().map(Result::unwrap).collect();
            assert_eq!(fps, vec![(id, fp)]);
        }
    }

    #[test]
    fn version_mismatch_is_a_clear_error() {
        // 1: a store of the build before queued URLs carried `tunnel`.
        for old in [1u32, 7] {
            let dir = tempfile::tempdir().unwrap();
            {
                let s = SledStore::open(dir.path()).unwrap();
                s.backend().meta_set("format_version", &old.to_be_bytes()).unwrap();
                s.flush().unwrap();
            }
            let e = SledStore::open(dir.path()).err().unwrap();
            assert!(
                matches!(e, StoreError::Version { expected: 4, got } if got == old),
                "{e}"
            );
            assert!(
                e.to_string().contains(&format!("version {old} is not supported")),
                "{e}"
            );
            assert!(e.to_string().contains("start a new crawl directory"), "{e}");
        }
    }

    #[test]
    fn corrupt_value_names_the_key() {
        // Uncached: the damage goes behind the store's back.
        let mut s = MemStore::over(MemBackend::default()).unwrap();
        s.backend()
            .apply(vec![(b"shttp://a.test/x".to_vec(), Some(vec![0, 1, 2]))])
            .unwrap();
        let e = s.url_state("http://a.test/x").unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }));
        assert!(e.to_string().contains("shttp://a.test/x"), "{e}");
        s.backend().apply(vec![(id_key(P, 5), Some(vec![9; 3]))]).unwrap();
        assert!(s.page(5).is_err());
        assert!(s.iter_pages().next().unwrap().is_err());
        assert!(KvStore::over(std::mem::take(&mut s.kv)).is_ok());
    }
}
