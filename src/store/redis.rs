//! [`RedisStore`]: the [`Store`] on a Redis Cluster (`[store] backend =
//! "redis"`), through the `redis` crate's synchronous cluster client. The
//! values are the same encodings as the sled store's (`records.rs`); the
//! keys (`redis_keys.rs`) put everything of one host in one cluster slot.
//!
//! # Key layout
//!
//! `N` is the crawl name (`[store] crawl_name`), the namespace of every key.
//! The part in braces is the hash tag: keys with the same tag share a slot.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{N}:meta` | hash | named values: `format_version` (u32 BE), `seeds`, `crawl_id` |
//! | `{N}:ids` | string | the last page id handed out (`INCRBY`, in blocks of 64 per process) |
//! | `{N}:pages` | string | pages recorded (first fetches) |
//! | `{N}:dlog` | stream | the decision log the workers share ([`RedisLog`], `redis_log.rs`) |
//! | `{N}:dlock`, `{N}:dlast` | string | its lock (holder's token, TTL) and the last locked append |
//! | `{N\|ip\|addr}` | sorted set | the holders of server address `addr`'s request slots, scored by expiry (ms; [`RedisLimits`], `redis_limits.rs`) |
//! | `{N}:rate` | string | the crawl-wide request rate's next start time (µs, `[politeness] max_requests_per_sec`) |
//! | `{N\|x\|b\|hh}`, `{N\|x\|t\|hh}` | hash | the exact-duplicate maps: a body (text) hash's first 16 bytes, whose first byte is `hh` → its owner's page id (u64 BE; [`RedisOwners`], `redis_owners.rs`) |
//! | `{N\|t\|i\|prefix}` | string | bucket `prefix` (hex) of the shared near-duplicate index's table `i`: 16-byte entries fingerprint ‖ page id ([`RedisTables`], `redis_tables.rs`) |
//! | `{N\|hs\|k}` | set | host keys, shard `k` = FNV-1a(host) mod 16 (the host registry) |
//! | `{N\|pi\|b}` | hash | page id (u64 BE) → host key, for ids `b`·1024 ..< (`b`+1)·1024 |
//! | `{N\|h\|host}:q` | sorted set | the host's queue: members rank ‖ seq (u64 BE each), score 0, read best first with `ZRANGE … BYLEX` |
//! | `{N\|h\|host}:qv` | hash | member → [`QueuedUrl`] |
//! | `{N\|h\|host}:s` | hash | canonical URL → [`UrlState`], for the URLs whose host key is `host` |
//! | `{N\|h\|host}:st` | string | [`HostStats`] |
//! | `{N\|h\|host}:p` | hash | page id (u64 BE) → [`StoredPage`] |
//! | `{N\|h\|host}:b` | hash | page id (u64 BE) → [`BodyRef`] |
//!
//! A URL's seen state, its queue entry and its page record live in its
//! host's slot, so queueing a URL (entry + state) and recording its page
//! (page, body reference, state `Done`, entry removed, host stats) are each
//! one Lua script on one slot: atomic, whatever else fails.
//!
//! # Atomicity and consistency
//!
//! - [`Store::update_queue`] groups its writes by host and runs one script
//!   per host (one cluster pipeline: one round trip per node). Each host's
//!   part is atomic; an update spanning hosts that fails midway leaves some
//!   hosts updated, each URL either queued whole or not at all.
//! - [`Store::complete_many`] first reads every URL's state and refuses the
//!   whole group when one is recorded as another page. It then writes the
//!   page-index entries (page id → host), then one script per host, then
//!   adds the recorded pages to `{N}:pages`. Each host's script re-checks
//!   its URLs and writes nothing when one is recorded as another page; a
//!   first fetch already recorded as this very page is skipped, so a
//!   commit retried after a failure records nothing twice.
//! - After a crash (of the crawl process, or of a Redis connection) midway
//!   through a commit: every page either has its record, its `Done` state
//!   and no queue entry, or is still queued (resume fetches it again, under
//!   a new id). A page-index entry may point to a host that has no page
//!   under that id: readers skip it. `{N}:pages` may miss the pages of the
//!   last commit. Page ids handed out and never recorded leave gaps.
//! - A call whose connection drops, or that meets a cluster failing over,
//!   is sent again on a new connection for up to 30 s. Every write is
//!   idempotent (a retried script finds its work done) except the
//!   `INCRBY`s: a retried page-id block leaves a gap, and a retried
//!   `{N}:pages` increment whose first attempt was applied counts a commit
//!   twice.
//! - Durability is the cluster's: with the persistence of
//!   `scripts/redis-cluster.sh` (none), a replica keeps the data when its
//!   master dies; a crawl's flush mark (`DIR/store/simcrawl-flushed`)
//!   refuses a resume when Redis holds fewer pages than at the last flush.
//!
//! Each call is one or a few round trips; no seen-set cache is kept in the
//! process (`url_state` asks Redis).

use super::keys::decode;
use super::records::*;
pub use super::redis_conn::calls;
use super::redis_conn::Conn;
use super::redis_keys::*;
use super::redis_limits::RedisLimits;
use super::redis_log::RedisLog;
use super::redis_owners::RedisOwners;
use super::redis_tables::RedisTables;
use super::*;
use ::redis::cluster::{cluster_pipe, ClusterClient, ClusterConnection};
use parking_lot::Mutex;
use std::sync::Arc;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

/// Page ids a process takes from `{N}:ids` at a time.
const ID_BLOCK: u64 = 64;
/// Queue entries and seen-set fields read per round trip by the iterators.
const CHUNK: usize = 1000;

/// The [`Store`] on a Redis Cluster (see the module docs).
pub struct RedisStore {
    /// The client and its idle connections (shared with the decision log).
    pub(super) conn: Arc<Conn>,
    /// The crawl's decision log (`{N}:dlog`, see `redis_log.rs`).
    log: Arc<RedisLog>,
    /// The crawl's shared near-duplicate tables (`{N|t|i|prefix}`, see
    /// `redis_tables.rs`).
    tables: Arc<RedisTables>,
    /// The crawl-wide politeness limits (`{N|ip|addr}`, `{N}:rate`, see
    /// `redis_limits.rs`).
    limits: Arc<RedisLimits>,
    /// The crawl's shared exact-duplicate maps (`{N|x|b|hh}`, `{N|x|t|hh}`,
    /// see `redis_owners.rs`).
    owners: Arc<RedisOwners>,
    pub(super) keys: Keys,
    name: String,
    /// Page ids taken from `{N}:ids` and not handed out yet: `next..end`.
    ids: Mutex<(PageId, PageId)>,
    /// Hosts this process has put into the host registry.
    registered: Mutex<HashSet<String>>,
    /// The namespace held no crawl when this store opened it.
    fresh: bool,
    /// Page id allocation failed: ids handed out since are not unique, so
    /// every later write is refused.
    broken: AtomicBool,
}

impl RedisStore {
    /// Connect to the cluster at `nodes` (`host:port`) and open the crawl
    /// `name` in it: check its `format_version`, or write it when the
    /// namespace is empty ([`RedisStore::fresh`] tells whether it holds a
    /// crawl).
    pub fn open(nodes: &[String], name: &str) -> Result<Self, StoreError> {
        let at = || PathBuf::from(format!("redis://{}/{name}", nodes.first().map_or("", |n| n.as_str())));
        let open_err = |message: String| StoreError::Open { path: at(), message };
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(open_err(format!("invalid crawl name {name:?}")));
        }
        let client = ClusterClient::builder(nodes.iter().map(|n| format!("redis://{n}/")))
            .connection_timeout(std::time::Duration::from_secs(5))
            .response_timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| open_err(e.to_string()))?;
        let con = client.get_connection().map_err(|e| open_err(e.to_string()))?;
        let conn = Arc::new(Conn::new(client, con));
        let mut store = RedisStore {
            log: Arc::new(RedisLog::new(conn.clone(), name)),
            tables: Arc::new(RedisTables::new(conn.clone(), name)),
            limits: Arc::new(RedisLimits::new(conn.clone(), name)),
            owners: Arc::new(RedisOwners::new(conn.clone(), name)),
            conn,
            keys: Keys::new(name),
            name: name.to_string(),
            ids: Mutex::new((0, 0)),
            registered: Mutex::new(HashSet::new()),
            fresh: false,
            broken: AtomicBool::new(false),
        };
        let meta = store.keys.meta();
        match store.meta("format_version")? {
            Some(v) => {
                let got = match <[u8; 4]>::try_from(v.as_slice()) {
                    Ok(b) => u32::from_be_bytes(b),
                    Err(_) => return Err(corrupt_at("meta", meta.as_bytes(), "format_version is not 4 bytes")),
                };
                if got != REDIS_FORMAT_VERSION {
                    return Err(StoreError::Version {
                        expected: REDIS_FORMAT_VERSION,
                        got,
                    });
                }
            }
            None => {
                let ids = store.keys.ids();
                let used: bool = store.with(|c| ::redis::cmd("EXISTS").arg(&ids).query(c))?;
                if used {
                    return Err(StoreError::Version {
                        expected: REDIS_FORMAT_VERSION,
                        got: 0,
                    });
                }
                store.set_meta("format_version", &REDIS_FORMAT_VERSION.to_be_bytes())?;
            }
        }
        // Nothing but the version: no crawl was seeded or recorded here (a
        // crawl that failed to start before its seeds counts as none).
        let (named, ids): (u64, bool) = store.with(|c| {
            cluster_pipe()
                .cmd("HLEN")
                .arg(&meta)
                .cmd("EXISTS")
                .arg(store.keys.ids())
                .query(c)
        })?;
        store.fresh = named <= 1 && !ids;
        Ok(store)
    }

    /// The namespace held no crawl when [`RedisStore::open`] opened it: no
    /// named value but the format version, and no page id handed out.
    pub fn fresh(&self) -> bool {
        self.fresh
    }

    /// The crawl name (the key namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run `f` on a connection, retrying as [`Conn::with`] says.
    pub(super) fn with<T>(
        &self,
        f: impl FnMut(&mut ClusterConnection) -> ::redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        self.conn.with(f)
    }

    fn usable(&self) -> Result<(), StoreError> {
        if self.broken.load(Ordering::Acquire) {
            return Err(StoreError::Backend(
                "redis: a page id could not be allocated; the store refuses writes".into(),
            ));
        }
        Ok(())
    }

    /// Put `hosts` into the host registry (once per process and host).
    fn register<'a>(&self, hosts: impl IntoIterator<Item = &'a str>) -> Result<(), StoreError> {
        let new: Vec<&str> = {
            let known = self.registered.lock();
            let mut new: Vec<&str> = hosts.into_iter().filter(|h| !known.contains(*h)).collect();
            new.sort_unstable();
            new.dedup();
            new
        };
        if new.is_empty() {
            return Ok(());
        }
        let mut p = cluster_pipe();
        for h in &new {
            p.cmd("SADD")
                .arg(self.keys.host_shard(Keys::shard_of(h)))
                .arg(*h)
                .ignore();
        }
        self.with(|c| p.exec(c))?;
        self.registered.lock().extend(new.into_iter().map(str::to_string));
        Ok(())
    }

    /// Every registered host, sorted.
    pub(super) fn hosts(&self) -> Result<Vec<String>, StoreError> {
        let mut p = cluster_pipe();
        for k in 0..HOST_SHARDS {
            p.cmd("SMEMBERS").arg(self.keys.host_shard(k));
        }
        let shards: Vec<Vec<String>> = self.with(|c| p.query(c))?;
        let mut hosts: Vec<String> = shards.into_iter().flatten().collect();
        hosts.sort_unstable();
        Ok(hosts)
    }

    /// Run each group's script, one cluster pipeline for all.
    fn apply(&self, groups: Groups) -> Result<(), StoreError> {
        if groups.is_empty() {
            return Ok(());
        }
        let mut p = cluster_pipe();
        for g in groups.values() {
            p.add_command(g.eval()).ignore();
        }
        self.with(|c| p.exec(c))
    }

    /// The seen states of `urls`, in one pipeline.
    fn url_states_pipelined(&self, urls: &[&str]) -> Result<Vec<Option<UrlState>>, StoreError> {
        let mut p = cluster_pipe();
        for u in urls {
            p.cmd("HGET").arg(self.keys.host(seen_host(u)).seen).arg(*u);
        }
        let raw: Vec<Option<Vec<u8>>> = self.with(|c| p.query(c))?;
        raw.into_iter()
            .zip(urls)
            .map(|(v, u)| v.map(|v| decode(u.as_bytes(), &v, dec_state)).transpose())
            .collect()
    }

    /// Up to `limit` queue entries of `host` after `after` (from the best).
    fn queue_chunk(&self, host: &str, after: Option<&[u8]>, limit: usize) -> Result<Vec<QueuedUrl>, StoreError> {
        let hk = self.keys.host(host);
        let min: Vec<u8> = match after {
            Some(m) => [b"(".as_slice(), m].concat(),
            None => b"-".to_vec(),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let members: Vec<Vec<u8>> = self.with(|c| {
            ::redis::cmd("ZRANGE")
                .arg(&hk.queue)
                .arg(&min)
                .arg("+")
                .arg("BYLEX")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .query(c)
        })?;
        let mut out = Vec::with_capacity(members.len());
        for chunk in members.chunks(CHUNK) {
            let values: Vec<Option<Vec<u8>>> =
                self.with(|c| ::redis::cmd("HMGET").arg(&hk.values).arg(chunk).query(c))?;
            for (m, v) in chunk.iter().zip(values) {
                // Removed between the two reads: no longer queued.
                if let Some(v) = v {
                    out.push(decode(m, &v, dec_queued)?);
                }
            }
        }
        Ok(out)
    }

    /// The host a page id was recorded under.
    fn page_host(&self, id: PageId) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            ::redis::cmd("HGET")
                .arg(self.keys.page_index(id))
                .arg(&id.to_be_bytes())
                .query(c)
        })
    }

    /// A field of a page's host hash (`pages` or `bodies`).
    fn page_field(&self, id: PageId, field: fn(HostKeys) -> String) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(host) = self.page_host(id)? else {
            return Ok(None);
        };
        let key = field(self.keys.host(&host));
        self.with(|c| ::redis::cmd("HGET").arg(&key).arg(&id.to_be_bytes()).query(c))
    }

    /// The page records of ids `from..` in id order, one index bucket per step.
    fn pages_from(&self, from: PageId) -> StoreIter<'_, StoredPage> {
        let last: u64 = match self.with(|c| ::redis::cmd("GET").arg(self.keys.ids()).query::<Option<u64>>(c)) {
            Ok(v) => v.unwrap_or(0),
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let buckets = (from / PAGE_BUCKET)..=(last / PAGE_BUCKET);
        Box::new(buckets.map(move |b| self.bucket_pages(b, from)).flat_map(|r| match r {
            Ok(pages) => pages.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e)],
        }))
    }

    /// The page records of one index bucket with an id of at least `from`.
    fn bucket_pages(&self, bucket: u64, from: PageId) -> Result<Vec<StoredPage>, StoreError> {
        let index_key = self.keys.page_index(bucket * PAGE_BUCKET);
        let index: BTreeMap<Vec<u8>, String> = self.with(|c| ::redis::cmd("HGETALL").arg(&index_key).query(c))?;
        let mut wanted = Vec::with_capacity(index.len());
        for (id, host) in &index {
            let id = decode(index_key.as_bytes(), id, |d| d.u64())?;
            if id >= from {
                wanted.push((id, host));
            }
        }
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = cluster_pipe();
        for (id, host) in &wanted {
            p.cmd("HGET").arg(self.keys.host(host).pages).arg(&id.to_be_bytes());
        }
        let values: Vec<Option<Vec<u8>>> = self.with(|c| p.query(c))?;
        let mut pages = Vec::with_capacity(values.len());
        for ((id, host), v) in wanted.into_iter().zip(values) {
            // An index entry of a commit that did not reach its host: skipped.
            if let Some(v) = v {
                pages.push(decode(format!("{host} page {id}").as_bytes(), &v, dec_page)?);
            }
        }
        Ok(pages)
    }

    /// One host's part of [`Store::complete_many`]: the `EVAL` of [`COMPLETE`].
    pub(super) fn complete_eval(&self, host: &str, items: &[&Completion<'_>]) -> ::redis::Cmd {
        let hk = self.keys.host(host);
        let mut c = ::redis::cmd("EVAL");
        c.arg(COMPLETE)
            .arg(6)
            .arg(&hk.seen)
            .arg(&hk.queue)
            .arg(&hk.values)
            .arg(&hk.stats)
            .arg(&hk.pages)
            .arg(&hk.bodies);
        let last = items.last().map(|c| c.host);
        c.arg(last.map(enc_host).unwrap_or_default());
        for it in items {
            c.arg(&it.url.canonical)
                .arg(enc_state(&UrlState::Done(it.page.id)))
                .arg(if it.url.revisit.is_some() { "1" } else { "0" })
                .arg(&it.page.id.to_be_bytes())
                .arg(enc_page(it.page))
                .arg(it.body.as_ref().map(enc_body_ref).unwrap_or_default())
                .arg(&member(it.key));
        }
        c
    }

    fn take_ids(&self) -> Result<u64, StoreError> {
        let ids = self.keys.ids();
        self.with(|c| ::redis::cmd("INCRBY").arg(&ids).arg(ID_BLOCK).query(c))
    }
}

/// The seen state a queue entry stands for (as the sled store writes it).
fn queued_state(u: &QueuedUrl) -> UrlState {
    match u.revisit {
        Some(id) => UrlState::Done(id),
        None => UrlState::Queued(u.key()),
    }
}

impl Store for RedisStore {
    fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|c| ::redis::cmd("HGET").arg(self.keys.meta()).arg(name).query(c))
    }

    fn set_meta(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.usable()?;
        self.with(|c| ::redis::cmd("HSET").arg(self.keys.meta()).arg(name).arg(value).exec(c))
    }

    fn set_meta_if_absent(&self, name: &str, value: &[u8]) -> Result<bool, StoreError> {
        self.usable()?;
        self.with(|c| {
            ::redis::cmd("HSETNX")
                .arg(self.keys.meta())
                .arg(name)
                .arg(value)
                .query(c)
        })
    }

    fn leases(&self) -> Option<&dyn HostLeases> {
        Some(self)
    }

    fn url_state(&self, canonical: &str) -> Result<Option<UrlState>, StoreError> {
        Ok(self.url_states_pipelined(&[canonical])?.pop().flatten())
    }

    fn url_states(&self, canonical: &[&str]) -> Result<Vec<Option<UrlState>>, StoreError> {
        if canonical.is_empty() {
            return Ok(Vec::new());
        }
        self.url_states_pipelined(canonical)
    }

    fn update_queue(&self, new: &[QueuedUrl], moved: &[(QueueKey, QueuedUrl)]) -> Result<(), StoreError> {
        self.usable()?;
        let mut groups = Groups::new();
        let mut put = |u: &QueuedUrl, old: Option<QueueKey>| {
            let hk = self.keys.host(&u.host);
            let sh = seen_host(&u.canonical);
            if old.is_none() && u.revisit.is_none() && sh == u.host {
                // A new URL: queued only if no other process queued it first.
                let g = groups.entry(u.host.clone()).or_default();
                let op = Op::QueueNew {
                    seen: g.key(&hk.seen),
                    url: u.canonical.clone().into_bytes(),
                    state: enc_state(&queued_state(u)),
                    queue: g.key(&hk.queue),
                    values: g.key(&hk.values),
                    member: member(u.key()).to_vec(),
                    value: enc_queued(u),
                };
                g.ops.push(op);
                return;
            }
            let g = groups.entry(u.host.clone()).or_default();
            if let Some(old) = old.filter(|o| *o != u.key()) {
                let (q, v) = (g.key(&hk.queue), g.key(&hk.values));
                g.ops.push(Op::ZRem(q, member(old).to_vec()));
                g.ops.push(Op::HDel(v, member(old).to_vec()));
            }
            let (q, v) = (g.key(&hk.queue), g.key(&hk.values));
            g.ops.push(Op::ZAdd(q, member(u.key()).to_vec()));
            g.ops.push(Op::HSet(v, member(u.key()).to_vec(), enc_queued(u)));
            let g = groups.entry(sh.to_string()).or_default();
            let s = g.key(&self.keys.host(sh).seen);
            g.ops.push(Op::HSet(
                s,
                u.canonical.clone().into_bytes(),
                enc_state(&queued_state(u)),
            ));
        };
        for u in new {
            put(u, None);
        }
        for (old, u) in moved {
            put(u, Some(*old));
        }
        self.register(groups.keys().map(String::as_str))?;
        self.apply(groups)
    }

    fn claim(&self, url: &QueuedUrl) -> Result<(), StoreError> {
        self.usable()?;
        let seen = self.keys.host(seen_host(&url.canonical)).seen;
        let state = enc_state(&UrlState::InFlight(url.key()));
        self.with(|c| ::redis::cmd("HSET").arg(&seen).arg(&url.canonical).arg(&state).exec(c))
    }

    fn queued(&self, host: &str, key: QueueKey) -> Result<Option<QueuedUrl>, StoreError> {
        let values = self.keys.host(host).values;
        let m = member(key);
        let v: Option<Vec<u8>> = self.with(|c| ::redis::cmd("HGET").arg(&values).arg(&m).query(c))?;
        v.map(|v| decode(&m, &v, dec_queued)).transpose()
    }

    fn scan_queue(&self, host: &str, limit: usize) -> Result<Vec<QueuedUrl>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.queue_chunk(host, None, limit)
    }

    fn complete_many(&self, done: &[Completion<'_>]) -> Result<(), StoreError> {
        if done.is_empty() {
            return Ok(());
        }
        self.usable()?;
        // Every URL first: a group naming a URL recorded as another page is
        // refused whole.
        let urls: Vec<&str> = done.iter().map(|c| c.url.canonical.as_str()).collect();
        let states = self.url_states_pipelined(&urls)?;
        for (c, state) in done.iter().zip(&states) {
            if seen_host(&c.url.canonical) != c.url.host {
                return Err(corrupt_at(
                    "url",
                    c.url.canonical.as_bytes(),
                    format!("queued under host {:?}, not the URL's host", c.url.host),
                ));
            }
            if c.url.revisit.is_some_and(|r| r != c.page.id) {
                return Err(StoreError::AlreadyDone {
                    url: c.url.canonical.clone(),
                    page: c.url.revisit.unwrap_or_default(),
                });
            }
            check_done(c, state.as_ref())?;
        }
        // The page index before the pages it points to.
        self.register(done.iter().map(|c| c.url.host.as_str()))?;
        let mut p = cluster_pipe();
        for c in done {
            p.cmd("HSET")
                .arg(self.keys.page_index(c.page.id))
                .arg(&c.page.id.to_be_bytes())
                .arg(&c.url.host)
                .ignore();
        }
        self.with(|con| p.exec(con))?;
        // One atomic script per host.
        let mut by_host: BTreeMap<&str, Vec<&Completion<'_>>> = BTreeMap::new();
        for c in done {
            by_host.entry(c.url.host.as_str()).or_default().push(c);
        }
        let mut p = cluster_pipe();
        for (host, items) in &by_host {
            p.add_command(self.complete_eval(host, items));
        }
        let results: Vec<::redis::Value> = self.with(|con| p.query(con))?;
        let mut added = 0;
        let mut refused = None;
        for (v, items) in results.into_iter().zip(by_host.values()) {
            match complete_result(v, items) {
                Ok(n) => added += n,
                Err(e) => refused = refused.or(Some(e)),
            }
        }
        if added > 0 {
            self.with(|c| ::redis::cmd("INCRBY").arg(self.keys.pages()).arg(added).exec(c))?;
        }
        refused.map_or(Ok(()), Err)
    }

    fn record_alias(&self, alias: &str, canonical: &str) -> Result<bool, StoreError> {
        self.usable()?;
        if alias == canonical {
            return Ok(false);
        }
        let host = seen_host(alias);
        self.register([host])?;
        let seen = self.keys.host(host).seen;
        let state = enc_state(&UrlState::AliasOf(canonical.to_string()));
        // Set only when absent: one command, so atomic.
        self.with(|c| ::redis::cmd("HSETNX").arg(&seen).arg(alias).arg(&state).query(c))
    }

    fn allocate_page_id(&self) -> PageId {
        let mut ids = self.ids.lock();
        if ids.0 >= ids.1 {
            let mut last = Err(StoreError::Backend(String::new()));
            for wait_ms in [0, 100, 1000, 5000] {
                std::thread::sleep(std::time::Duration::from_millis(wait_ms));
                last = self.take_ids();
                if last.is_ok() {
                    break;
                }
            }
            match last {
                Ok(end) => *ids = (end + 1 - ID_BLOCK, end + 1),
                Err(e) => {
                    tracing::error!("store: allocating page ids failed ({e}); the store refuses writes");
                    self.broken.store(true, Ordering::Release);
                    ids.1 = ids.0 + 1;
                }
            }
        }
        ids.0 += 1;
        ids.0 - 1
    }

    fn next_page_id(&self) -> PageId {
        let ids = self.ids.lock();
        if ids.0 < ids.1 {
            return ids.0;
        }
        let last: Result<Option<u64>, _> = self.with(|c| ::redis::cmd("GET").arg(self.keys.ids()).query(c));
        last.ok().flatten().unwrap_or(0).max(ids.0.saturating_sub(1)) + 1
    }

    fn page(&self, id: PageId) -> Result<Option<StoredPage>, StoreError> {
        self.page_field(id, |k| k.pages)?
            .map(|v| decode(format!("page {id}").as_bytes(), &v, dec_page))
            .transpose()
    }

    fn body_ref(&self, id: PageId) -> Result<Option<BodyRef>, StoreError> {
        self.page_field(id, |k| k.bodies)?
            .map(|v| decode(format!("body {id}").as_bytes(), &v, dec_body_ref))
            .transpose()
    }

    fn host_stats(&self, host: &str) -> Result<Option<HostStats>, StoreError> {
        let key = self.keys.host(host).stats;
        let v: Option<Vec<u8>> = self.with(|c| ::redis::cmd("GET").arg(&key).query(c))?;
        v.map(|v| decode(key.as_bytes(), &v, dec_host)).transpose()
    }

    fn pages_recorded(&self) -> Result<u64, StoreError> {
        let n: Option<u64> = self.with(|c| ::redis::cmd("GET").arg(self.keys.pages()).query(c))?;
        Ok(n.unwrap_or(0))
    }

    fn flush(&self) -> Result<(), StoreError> {
        // Every write is in Redis when its call returns; durability is the
        // cluster's configuration.
        self.usable()
    }

    fn iter_queue(&self) -> StoreIter<'_, QueuedUrl> {
        let hosts = match self.hosts() {
            Ok(h) => h,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(hosts.into_iter().flat_map(move |host| {
            let mut after: Option<Vec<u8>> = None;
            let mut done = false;
            std::iter::from_fn(move || {
                if done {
                    return None;
                }
                let chunk = self.queue_chunk(&host, after.as_deref(), CHUNK);
                match &chunk {
                    Ok(c) if c.len() < CHUNK => done = true,
                    Ok(c) => after = c.last().map(|u| member(u.key()).to_vec()),
                    Err(_) => done = true,
                }
                Some(chunk)
            })
            .flat_map(|r| match r {
                Ok(c) => c.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            })
        }))
    }

    fn iter_seen(&self) -> StoreIter<'_, (String, UrlState)> {
        let hosts = match self.hosts() {
            Ok(h) => h,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(hosts.into_iter().flat_map(move |host| {
            let seen = self.keys.host(&host).seen;
            let mut cursor = Some("0".to_string());
            std::iter::from_fn(move || {
                let at = cursor.take()?;
                let r: Result<(String, Vec<Vec<u8>>), _> = self.with(|c| {
                    ::redis::cmd("HSCAN")
                        .arg(&seen)
                        .arg(&at)
                        .arg("COUNT")
                        .arg(CHUNK)
                        .query(c)
                });
                Some(r.and_then(|(next, flat)| {
                    if next != "0" {
                        cursor = Some(next);
                    }
                    flat.chunks(2)
                        .map(|kv| {
                            let (k, v) = (&kv[0], kv.get(1).map_or(&[][..], |v| v.as_slice()));
                            let url =
                                String::from_utf8(k.clone()).map_err(|_| corrupt_at("seen", k, "URL is not UTF-8"))?;
                            Ok((url, decode(k, v, dec_state)?))
                        })
                        .collect::<Result<Vec<_>, StoreError>>()
                }))
            })
            .flat_map(|r| match r {
                Ok(c) => c.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            })
        }))
    }

    fn iter_pages(&self) -> StoreIter<'_, StoredPage> {
        self.pages_from(0)
    }

    fn decision_log(&self) -> Option<Arc<dyn DecisionLog>> {
        Some(self.log.clone())
    }

    fn table_buckets(&self) -> Option<Arc<dyn super::TableBuckets>> {
        Some(self.tables.clone())
    }

    fn shared_limits(&self) -> Option<Arc<dyn super::SharedLimits>> {
        Some(self.limits.clone())
    }

    fn content_owners(&self) -> Option<Arc<dyn super::ContentOwners>> {
        Some(self.owners.clone())
    }

    fn iter_fingerprints_from(&self, first: PageId) -> StoreIter<'_, (PageId, u64)> {
        Box::new(self.pages_from(first).filter_map(|r| match r {
            Ok(StoredPage {
                id,
                decision: crate::model::Decision::New,
                simhash: Some(fp),
                ..
            }) => Some(Ok((id, fp))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }))
    }

    fn iter_hosts(&self) -> StoreIter<'_, (String, HostStats)> {
        let hosts = match self.hosts() {
            Ok(h) => h,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let chunks: Vec<Vec<String>> = hosts.chunks(CHUNK).map(<[String]>::to_vec).collect();
        Box::new(
            chunks
                .into_iter()
                .map(move |chunk| {
                    let mut p = cluster_pipe();
                    for h in &chunk {
                        p.cmd("GET").arg(self.keys.host(h).stats);
                    }
                    let values: Vec<Option<Vec<u8>>> = self.with(|c| p.query(c))?;
                    let mut out = Vec::new();
                    for (h, v) in chunk.into_iter().zip(values) {
                        if let Some(v) = v {
                            let stats = decode(h.as_bytes(), &v, dec_host)?;
                            out.push((h, stats));
                        }
                    }
                    Ok(out)
                })
                .flat_map(|r: Result<Vec<_>, StoreError>| match r {
                    Ok(c) => c.into_iter().map(Ok).collect::<Vec<_>>(),
                    Err(e) => vec![Err(e)],
                }),
        )
    }
}
