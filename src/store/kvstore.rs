//! [`KvStore`], the [`Store`] implementation over an ordered key-value
//! [`Backend`] (pipeline: every stage's writes and a resumed crawl's reads go
//! through it): format check at open, the seen-set cache, combining of queue
//! writes into the next page commit, and the atomic page commit.

use super::keys::*;
use super::records::*;
use super::*;
use crate::model::Decision;
use codec::Enc;

/// One write of a batch: `(key, Some(value))` inserts, `(key, None)` removes.
pub type BatchOp = (Vec<u8>, Option<Vec<u8>>);

/// The [`Store`] implementation over an ordered key-value [`Backend`]: the key
/// layout of this module. [`DiskStore`] and [`MemStore`] are its instances.
pub struct KvStore<K: Backend> {
    pub(super) kv: K,
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

/// The seen state a queue entry stands for: `Queued`, or, for a revisit,
/// still `Done` with the page it revisits (offers of the URL find it done
/// and the crawl log keeps its lines).
fn queued_state(u: &QueuedUrl) -> UrlState {
    match u.revisit {
        Some(id) => UrlState::Done(id),
        None => UrlState::Queued(u.key()),
    }
}

/// Pending writes a combining store applies without waiting for a commit.
const PENDING_MAX: usize = 4096;

/// URLs a [`MemStore`]'s seen-set cache holds (tests: always complete).
const MEM_SEEN_CACHE: usize = 1 << 20;

/// The store on disk (`DIR/store/`), on fjall or sled ([`Engine`]).
pub type DiskStore = KvStore<DiskBackend>;
/// An in-memory store for tests.
pub type MemStore = KvStore<MemBackend>;

impl DiskStore {
    /// Open the store in `dir` on the engine that wrote it (a new one on the
    /// default engine), checking its format version (no seen-set cache: for
    /// tools that look up a few URLs).
    pub fn open(dir: &std::path::Path) -> Result<Self, StoreError> {
        KvStore::over(DiskBackend::open(dir, Engine::default(), None)?)
    }

    /// [`DiskStore::open`], creating a new store on `engine`.
    pub fn open_with(dir: &std::path::Path, engine: Engine) -> Result<Self, StoreError> {
        KvStore::over(DiskBackend::open(dir, engine, None)?)
    }

    /// [`DiskStore::open`] for a crawl: a new store on `engine` (`[store]
    /// engine`; an existing one keeps its own), a seen-set cache of at most
    /// `seen_cache` URLs (`[frontier] seen_cache_urls`), loaded from the
    /// store, and the engine's cache bounded to `cache_bytes` (`[store]
    /// cache_mb`).
    pub fn open_cached(
        dir: &std::path::Path,
        engine: Engine,
        seen_cache: usize,
        cache_bytes: u64,
    ) -> Result<Self, StoreError> {
        KvStore::over_cached(DiskBackend::open(dir, engine, Some(cache_bytes))?, seen_cache)
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
                if got < 7 {
                    // Its `b` values are bodies, not references into WARC
                    // files: they are dropped (a resumed crawl rebuilds its
                    // templates and sketches without them, with a warning).
                    let mut bodies = Vec::new();
                    for r in kv.scan(&[B]) {
                        bodies.push((r?.0, None));
                        if bodies.len() >= 4096 {
                            kv.apply(std::mem::take(&mut bodies))?;
                        }
                    }
                    kv.apply(bodies)?;
                }
                if got < FORMAT_VERSION {
                    // Everything else it holds reads the same; what this
                    // build writes would mislead the build that wrote it.
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
        let fp = seen::fingerprint(canonical);
        let since = {
            let seen = self.seen.read();
            match seen.get(fp) {
                seen::Lookup::Known(s) => return Ok(Some(s)),
                seen::Lookup::Absent => return Ok(None),
                // An alias's target is read from the store each time.
                seen::Lookup::Alias => None,
                seen::Lookup::Unknown => Some(seen.turnovers()),
            }
        };
        let key = k1(S, canonical.as_bytes());
        let Some(v) = self.get(&key)? else {
            return Ok(None);
        };
        let state = decode(&key, &v, dec_state)?;
        if let Some(since) = since {
            self.seen.write().admit(fp, &state, since);
        }
        Ok(Some(state))
    }

    fn update_queue(&self, new: &[QueuedUrl], moved: &[(QueueKey, QueuedUrl)]) -> Result<(), StoreError> {
        let mut batch = Vec::with_capacity(new.len() * 2 + moved.len() * 3);
        for u in new {
            batch.push((queue_key(&u.host, u.key()), Some(enc_queued(u))));
            batch.push((k1(S, u.canonical.as_bytes()), Some(enc_state(&queued_state(u)))));
        }
        for (old, u) in moved {
            if *old != u.key() {
                batch.push((queue_key(&u.host, *old), None));
            }
            batch.push((queue_key(&u.host, u.key()), Some(enc_queued(u))));
            batch.push((k1(S, u.canonical.as_bytes()), Some(enc_state(&queued_state(u)))));
        }
        self.write(batch, |seen| {
            for u in new.iter().chain(moved.iter().map(|(_, u)| u)) {
                seen.set(seen::fingerprint(&u.canonical), &queued_state(u));
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
                // A revisit rewrites the page it revisits, under its id.
                if url.revisit != Some(id) || page.id != id {
                    return Err(StoreError::AlreadyDone {
                        url: url.canonical.clone(),
                        page: id,
                    });
                }
            } else if url.revisit.is_some() {
                return Err(corrupt(
                    url.canonical.as_bytes(),
                    "a revisit of a URL the seen-set does not have as done",
                ));
            }
            batch.push((id_key(P, page.id), Some(enc_page(page))));
            if let Some(b) = body {
                batch.push((id_key(B, page.id), Some(enc_body_ref(&b))));
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
        // Revisits rewrite their page: only first fetches add one.
        let n = done.iter().filter(|c| c.url.revisit.is_none()).count() as u64;
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

    fn body_ref(&self, id: PageId) -> Result<Option<BodyRef>, StoreError> {
        let k = id_key(B, id);
        match self.get(&k)? {
            None => Ok(None),
            Some(v) => decode(&k, &v, dec_body_ref).map(Some),
        }
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
