//! The frontier (pipeline: after seeds and every page's out-links, before
//! politeness): which URL is fetched next. It owns
//!
//! - **scope and trap rules** ([`scope`]): same-host / same-domain / SURT
//!   prefix, allow and deny regexes, max depth, max pages per host, max URL
//!   length, path-segment repetition, and a cap on URLs per digit pattern
//!   (calendar traps);
//! - the **seen-set** over canonical URLs, kept in the [`Store`]: a URL is
//!   handed out at most once, aliases (redirects, rel=canonical) are recorded;
//! - **per-host queues** ordered by priority. Every queued URL is written to
//!   the store; in memory each host keeps only a window of its best
//!   `memory_window` URLs, refilled from the store in priority order, so
//!   millions of queued URLs cost disk, not memory;
//! - two **heaps of hosts**: hosts waiting for their ready time (set by the
//!   politeness layer through [`Frontier::set_host_ready`]), and hosts ready
//!   now, ordered by the priority of their best URL;
//! - **explainable priorities** ([`score`]): a weighted sum of the
//!   components in [`ScoreComponents`], each kept with the queued URL.
//!
//! # Scheduling
//!
//! [`Frontier::next`] hands out the best URL of the best ready host and
//! marks it in flight. The host is then *not ready* until the crawl loop
//! calls [`Frontier::set_host_ready`] with the time the politeness layer
//! allows its next request (with one request per host in flight, after the
//! response; with N, when the request starts). A host never has more than
//! `[politeness] max_in_flight_per_host` URLs in flight. New hosts are ready at once.
//!
//! # Crash safety
//!
//! A URL stays in its store queue (seen state `Queued`) while in flight and
//! leaves it in the same atomic batch that records its page
//! ([`Frontier::complete`]); which URLs are in flight is known in memory only.
//! [`Frontier::resume`] therefore finds every unfinished URL queued (and
//! turns the `InFlight` states of stores written by older builds back into
//! queued ones), so a crawl killed at any moment loses no queued URL and
//! records no page twice. In-links counted since a URL was stored live in
//! memory: its store entry keeps the key it was written with until its page
//! is recorded, which removes the entry under that key (an in-flight URL
//! remembers it), or until [`Frontier::write_pending`]; a crash loses those
//! counts only. (Rewriting the entry for each fetch cost two or three store
//! writes per page, ~11% of them, for counts the fetch is about to end.)
//!
//! All methods take `&self`; one mutex, held for a few microseconds per call,
//! guards the in-memory state. Use the batched [`Frontier::offer_many`] for a
//! page's out-links: one lock and one store batch per page.

pub mod scope;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use url::Url;

use crate::config::{FrontierSettings, Settings};
use crate::dedup::DedupPolicyEngine;
use crate::host::{host_key, host_key_of_serialized};
pub use crate::model::ParentDup;
pub use crate::model::QueuedUrl;
pub use crate::model::ScoreComponents;
use crate::model::{HostStats, PageId, QueueKey, StoredPage, UrlState};
use crate::store::{Completion, Store, StoreError};
use scope::{digit_pattern, Rejection, ScopeRules};
pub use scope::{ScopeReason, TrapReason};

/// Why the frontier could not be built or updated.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// [`Frontier::new`] on a store that already holds a crawl.
    #[error("the store already holds a crawl; resume it (--resume) or use a new output directory")]
    ExistingCrawl,
    /// [`Frontier::resume`] on a store without a crawl.
    #[error("the store holds no crawl to resume")]
    NothingToResume,
    /// No seed URL was given.
    #[error("no seed URLs")]
    NoSeeds,
    /// A URL that the frontier did not hand out was completed or re-queued.
    #[error("{0}: not in flight")]
    NotInFlight(String),
}

/// A discovered link offered to the frontier.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The canonical URL (the seen-set key).
    pub url: Url,
    /// The URL as written in the page, when it differs from `url`.
    pub discovered: Option<String>,
    /// Link hops from a seed.
    pub depth: u32,
    /// Canonical URL of the page it was found on.
    pub parent: Option<String>,
    /// The parent page's duplicate status (from [`DedupPolicyEngine::out_links`]).
    pub parent_dup: ParentDup,
    /// Topic relevance, 0..1 (focused crawls; 0 otherwise).
    pub relevance: f64,
    /// The URL's host is an established mirror (`[mirror] penalty` applies).
    pub mirror: bool,
    /// Focused crawls: off-topic pages on the path since the last on-topic
    /// one ([`crate::focus::LinkScore::tunnel`]); 0 otherwise.
    pub tunnel: u32,
}

impl Candidate {
    /// A candidate with no parent, no penalty and no relevance (a seed when `depth` is 0).
    pub fn new(url: Url, depth: u32) -> Self {
        Candidate {
            url,
            discovered: None,
            depth,
            parent: None,
            parent_dup: ParentDup::None,
            relevance: 0.0,
            mirror: false,
            tunnel: 0,
        }
    }

    /// An out-link of `parent` with the parent's duplicate status.
    pub fn link(url: Url, parent: &QueuedUrl, parent_dup: ParentDup) -> Self {
        Candidate {
            depth: parent.depth + 1,
            parent: Some(parent.canonical.clone()),
            parent_dup,
            ..Candidate::new(url, 0)
        }
    }
}

/// What became of an offered candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// Queued.
    Enqueued,
    /// Already queued, in flight, done or an alias (a queued URL's in-link
    /// count went up).
    AlreadySeen,
    /// Outside the crawl's scope.
    OutOfScope(ScopeReason),
    /// A likely crawler trap.
    Trap(TrapReason),
}

/// What [`Frontier::next`] has for a worker.
#[derive(Debug, Clone, PartialEq)]
pub enum NextUrl {
    /// Fetch this URL (it is now in flight).
    Ready(QueuedUrl),
    /// No host is ready; the earliest one is ready at this instant.
    Wait(Instant),
    /// URLs are queued, but every host that has some is at its in-flight limit
    /// or waiting for `set_host_ready`.
    Busy,
    /// Nothing is queued (URLs in flight may still add more).
    Empty,
}

/// Weighted sum of the components with the `[frontier]` weights (the
/// mirror penalty is already weighted).
pub fn score(c: &ScoreComponents, w: &FrontierSettings) -> f64 {
    w.depth_weight * c.depth
        + w.parent_dup_weight * c.parent_dup
        + w.host_dup_rate_weight * c.host_dup_rate
        + w.host_novelty_weight * c.host_novelty
        + w.relevance_weight * c.relevance
        + w.inlink_weight * c.inlinks
        + c.mirror
}

/// Each component's name, value, weight and contribution to the priority
/// (for `simcrawl explain`).
pub fn explain(c: &ScoreComponents, w: &FrontierSettings) -> Vec<(&'static str, f64, f64, f64)> {
    [
        ("depth", c.depth, w.depth_weight),
        ("parent_dup", c.parent_dup, w.parent_dup_weight),
        ("host_dup_rate", c.host_dup_rate, w.host_dup_rate_weight),
        ("host_novelty", c.host_novelty, w.host_novelty_weight),
        ("relevance", c.relevance, w.relevance_weight),
        ("inlinks", c.inlinks, w.inlink_weight),
        ("mirror", c.mirror, 1.0),
    ]
    .into_iter()
    .map(|(n, v, wt)| (n, v, wt, v * wt))
    .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    None,
    Waiting(Instant),
    Ready(QueueKey),
}

/// A URL in a host's in-memory window.
struct Windowed {
    q: QueuedUrl,
    /// The key its store entry has: `q.key()` unless in-links found since
    /// it was stored (`extra`) moved it up in memory only.
    stored: QueueKey,
    /// In-links counted in `q` but not yet in its store entry.
    extra: u32,
}

impl Windowed {
    fn clean(q: QueuedUrl) -> Self {
        Windowed {
            stored: q.key(),
            q,
            extra: 0,
        }
    }
}

/// A URL handed out and not yet completed or re-queued.
#[derive(Clone, Copy)]
struct InFlight {
    /// Its key as handed out (`QueuedUrl::key`).
    key: QueueKey,
    /// The key of its store entry: older than `key` when in-links counted
    /// in memory moved it up (the entry is not rewritten for a fetch; the
    /// completion removes it under this key).
    stored: QueueKey,
}

struct HostState {
    name: String,
    /// The host's best queued URLs (a prefix of its store queue, in-flight
    /// ones excluded), by their current key.
    window: BTreeMap<QueueKey, Windowed>,
    /// Stored key → current window key of the window URLs moved up in memory.
    rekeyed: HashMap<QueueKey, QueueKey>,
    /// In-links found for URLs that are only in the store, not yet written
    /// (stored key → extra in-links); applied when the URL is loaded.
    disk_bumps: HashMap<QueueKey, u32>,
    /// Queued URLs only in the store (all worse than the window's).
    disk_only: u64,
    in_flight: Vec<InFlight>,
    /// None: not ready until `set_host_ready`.
    ready_at: Option<Instant>,
    /// Heap entries with another generation are stale.
    gen: u64,
    slot: Slot,
    stats: HostStats,
    /// URLs ever queued (for max_pages_per_host).
    admitted: u64,
}

impl HostState {
    /// A new ready time; a host in the ready heap goes back to waiting, as
    /// the new time may lie in the future.
    fn set_ready_at(&mut self, at: Instant) {
        self.ready_at = Some(at);
        if let Slot::Ready(_) = self.slot {
            self.gen += 1;
            self.slot = Slot::None;
        }
    }

    fn queued(&self) -> u64 {
        self.window.len() as u64 + self.disk_only
    }
}

struct Inner {
    hosts: Vec<HostState>,
    host_ids: HashMap<String, u32>,
    waiting: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    ready: BinaryHeap<Reverse<(QueueKey, u64, u32)>>,
    /// Duplicate pages fetched per digit pattern (calendar-trap detection).
    patterns: HashMap<u64, u32>,
    next_seq: u64,
    queued: u64,
    in_flight: u64,
}

/// Pending in-link counts of URLs only in the store, kept in memory at most
/// this many; past it an in-link is written to the store at once.
const MAX_DISK_BUMPS: usize = 1 << 20;

/// The crawl frontier (see the module docs). Shared by all workers (`&self` methods).
pub struct Frontier {
    store: Arc<dyn Store>,
    rules: ScopeRules,
    weights: FrontierSettings,
    dedup: DedupPolicyEngine,
    mirror_penalty: f64,
    window: usize,
    max_in_flight: usize,
    max_pages_per_host: u64,
    max_urls_per_pattern: u64,
    inner: Mutex<Inner>,
    /// Entries in all hosts' `disk_bumps` (bounded by [`MAX_DISK_BUMPS`];
    /// changed only under the `inner` lock).
    disk_bumps: AtomicUsize,
}

fn pattern_hash(p: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.hash(&mut h);
    h.finish()
}

impl Frontier {
    fn build(store: Arc<dyn Store>, settings: &Settings, seeds: &[Url]) -> Self {
        Frontier {
            store,
            rules: ScopeRules::new(&settings.crawl, seeds),
            weights: settings.frontier.clone(),
            dedup: DedupPolicyEngine::new(settings),
            mirror_penalty: settings.mirror.penalty,
            window: settings.frontier.memory_window.max(1),
            max_in_flight: settings.politeness.max_in_flight_per_host.max(1),
            max_pages_per_host: settings.crawl.max_pages_per_host,
            max_urls_per_pattern: settings.crawl.max_urls_per_pattern,
            inner: Mutex::new(Inner {
                hosts: Vec::new(),
                host_ids: HashMap::new(),
                waiting: BinaryHeap::new(),
                ready: BinaryHeap::new(),
                patterns: HashMap::new(),
                next_seq: 1,
                queued: 0,
                in_flight: 0,
            }),
            disk_bumps: AtomicUsize::new(0),
        }
    }

    /// Start a new crawl in an empty store: record the seeds (they define the
    /// `same-host` / `same-domain` scope), queue them at depth 0 (seeds skip
    /// the scope rules) and flush the store.
    pub fn new(store: Arc<dyn Store>, settings: &Settings, seeds: &[Url]) -> Result<Self, FrontierError> {
        if store.meta("seeds")?.is_some() {
            return Err(FrontierError::ExistingCrawl);
        }
        if seeds.is_empty() {
            return Err(FrontierError::NoSeeds);
        }
        let joined: Vec<&str> = seeds.iter().map(Url::as_str).collect();
        store.set_meta("seeds", joined.join("\n").as_bytes())?;
        let f = Frontier::build(store, settings, seeds);
        let cands: Vec<Candidate> = seeds.iter().map(|u| Candidate::new(u.clone(), 0)).collect();
        f.offer_inner(&cands, false)?;
        f.store.flush()?;
        Ok(f)
    }

    /// Continue the crawl held by `store`: reload the seeds, host stats,
    /// per-host counts and queue sizes, and re-queue every URL that was in
    /// flight when the crawl stopped. Every host with queued URLs is ready at once.
    pub fn resume(store: Arc<dyn Store>, settings: &Settings) -> Result<Self, FrontierError> {
        let seeds = store.meta("seeds")?.ok_or(FrontierError::NothingToResume)?;
        let seeds: Vec<Url> = String::from_utf8_lossy(&seeds)
            .lines()
            .filter_map(|l| Url::parse(l).ok())
            .collect();
        let f = Frontier::build(store, settings, &seeds);
        {
            let mut g = f.inner.lock();
            let inner = &mut *g;
            for r in f.store.iter_hosts() {
                let (host, stats) = r?;
                let id = inner.host_id(&host);
                inner.hosts[id as usize].stats = stats;
            }
            let mut in_flight = Vec::new();
            for r in f.store.iter_seen() {
                let (url, state) = r?;
                let key = match state {
                    UrlState::AliasOf(_) => continue,
                    UrlState::InFlight(k) => Some(k),
                    _ => None,
                };
                // Stored URLs are serialized by `url`: the host is read off
                // the string (no parse per URL).
                let id = match host_key_of_serialized(&url) {
                    Some(h) => inner.host_id(h),
                    None => match Url::parse(&url) {
                        Ok(u) => inner.host_id(&host_key(&u)),
                        Err(_) => continue,
                    },
                };
                inner.hosts[id as usize].admitted += 1;
                if let Some(k) = key {
                    in_flight.push((id, k));
                }
            }
            for r in f.store.iter_pages() {
                let page = r?;
                if page.decision.is_duplicate() {
                    if let Some(p) = f.self_similar_pattern(&page.canonical, page.dup_of)? {
                        *inner.patterns.entry(pattern_hash(&p)).or_insert(0) += 1;
                    }
                }
            }
            for r in f.store.iter_queue() {
                let q = r?;
                let id = inner.host_id(&q.host);
                inner.hosts[id as usize].disk_only += 1;
                inner.queued += 1;
                inner.next_seq = inner.next_seq.max(q.seq + 1);
            }
            for (id, k) in in_flight {
                if let Some(q) = f.store.queued(&inner.hosts[id as usize].name, k)? {
                    f.store.reprioritize(k, &q)?;
                }
            }
            let now = Instant::now();
            for id in 0..inner.hosts.len() as u32 {
                inner.hosts[id as usize].ready_at = Some(now);
                f.reschedule(inner, id)?;
            }
        }
        Ok(f)
    }

    /// Offer one discovered URL.
    pub fn offer(&self, cand: Candidate) -> Result<Offer, FrontierError> {
        Ok(self.offer_many(std::slice::from_ref(&cand))?.remove(0))
    }

    /// Offer a page's out-links at once (one lock, one store batch); one
    /// [`Offer`] per candidate, in order. A URL already queued gets one more
    /// in-link and moves up its host's queue: in memory, at once, when it is
    /// in the host's window (its store entry is not rewritten: see "Crash
    /// safety" above); when it is only in the store, the count waits in memory until
    /// the URL is loaded into the window, and moves it then.
    pub fn offer_many(&self, cands: &[Candidate]) -> Result<Vec<Offer>, FrontierError> {
        self.offer_inner(cands, true)
    }

    fn offer_inner(&self, cands: &[Candidate], check_scope: bool) -> Result<Vec<Offer>, FrontierError> {
        let mut out: Vec<Offer> = Vec::with_capacity(cands.len());
        let mut checked: Vec<bool> = Vec::with_capacity(cands.len());
        for c in cands {
            match if check_scope {
                self.rules.check(&c.url, c.depth)
            } else {
                Ok(())
            } {
                Ok(()) => {
                    out.push(Offer::Enqueued);
                    checked.push(true);
                }
                Err(Rejection::OutOfScope(r)) => {
                    out.push(Offer::OutOfScope(r));
                    checked.push(false);
                }
                Err(Rejection::Trap(r)) => {
                    out.push(Offer::Trap(r));
                    checked.push(false);
                }
            }
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        // Everything this call writes goes into one store batch: new URLs,
        // and queued URLs moved up by an extra in-link.
        let mut new: Vec<QueuedUrl> = Vec::new();
        let mut new_ids: Vec<u32> = Vec::new();
        let mut moved: Vec<(QueueKey, QueuedUrl)> = Vec::new();
        let mut moved_ids: Vec<u32> = Vec::new();
        let mut in_batch: HashMap<&str, (bool, usize)> = HashMap::new();
        for (i, c) in cands.iter().enumerate() {
            if !checked[i] {
                continue;
            }
            let canonical = c.url.as_str();
            if let Some(&(is_new, j)) = in_batch.get(canonical) {
                self.bump_inlinks(if is_new { &mut new[j] } else { &mut moved[j].1 });
                out[i] = Offer::AlreadySeen;
                continue;
            }
            match self.store.url_state(canonical)? {
                None => {}
                Some(UrlState::Queued(key)) => {
                    out[i] = Offer::AlreadySeen;
                    if let Some((id, q)) = self.count_inlink(inner, canonical, &c.url, key)? {
                        in_batch.insert(canonical, (false, moved.len()));
                        moved.push((key, q));
                        moved_ids.push(id);
                    }
                    continue;
                }
                Some(_) => {
                    out[i] = Offer::AlreadySeen;
                    continue;
                }
            }
            let host = host_key(&c.url);
            let id = inner.host_id(&host);
            let h = &inner.hosts[id as usize];
            if check_scope && self.max_pages_per_host > 0 && h.admitted >= self.max_pages_per_host {
                out[i] = Offer::OutOfScope(ScopeReason::HostFull);
                continue;
            }
            let pattern = if check_scope && self.max_urls_per_pattern > 0 {
                digit_pattern(&c.url).map(|p| (pattern_hash(&p), p))
            } else {
                None
            };
            if let Some((ph, p)) = &pattern {
                if u64::from(inner.patterns.get(ph).copied().unwrap_or(0)) >= self.max_urls_per_pattern {
                    out[i] = Offer::Trap(TrapReason::PatternCap { pattern: p.clone() });
                    continue;
                }
            }
            let components = ScoreComponents {
                depth: -f64::from(c.depth),
                parent_dup: -self.dedup.penalty(c.parent_dup),
                host_dup_rate: -h.stats.dup_rate(),
                host_novelty: h.stats.novelty(),
                relevance: if c.relevance.is_finite() { c.relevance } else { 0.0 },
                inlinks: 2f64.ln(),
                mirror: if c.mirror { -self.mirror_penalty } else { 0.0 },
            };
            let q = QueuedUrl {
                url: c.discovered.clone().unwrap_or_else(|| canonical.to_string()),
                canonical: canonical.to_string(),
                host,
                depth: c.depth,
                parent: c.parent.clone(),
                priority: score(&components, &self.weights),
                components,
                seq: inner.next_seq,
                retries: 0,
                inlinks: 1,
                tunnel: c.tunnel,
            };
            inner.next_seq += 1;
            inner.hosts[id as usize].admitted += 1;
            in_batch.insert(canonical, (true, new.len()));
            new.push(q);
            new_ids.push(id);
        }
        if new.is_empty() && moved.is_empty() {
            return Ok(out);
        }
        drop(in_batch);
        if let Err(e) = self.store.update_queue(&new, &moved) {
            // The moved URLs are still in the store under their old keys.
            for id in moved_ids {
                inner.hosts[id as usize].disk_only += 1;
            }
            return Err(e.into());
        }
        for (id, (_, q)) in moved_ids.into_iter().zip(moved) {
            self.place(&mut inner.hosts[id as usize], q);
            self.reschedule(inner, id)?;
        }
        for (id, q) in new_ids.into_iter().zip(new) {
            inner.queued += 1;
            self.place(&mut inner.hosts[id as usize], q);
            self.reschedule(inner, id)?;
        }
        Ok(out)
    }

    fn bump_inlinks(&self, q: &mut QueuedUrl) {
        self.add_inlinks(q, 1);
    }

    fn add_inlinks(&self, q: &mut QueuedUrl, n: u32) {
        q.inlinks = q.inlinks.saturating_add(n);
        q.components.inlinks = (1.0 + f64::from(q.inlinks)).ln();
        q.priority = score(&q.components, &self.weights);
    }

    /// One more in-link for the URL stored under `key`, counted in memory:
    /// in the window it moves up at once (its store entry keeps its key);
    /// only in the store, the count waits until the URL
    /// is loaded (or, past [`MAX_DISK_BUMPS`], the URL is returned to be
    /// rewritten with the caller's batch). An in-flight URL counts nothing.
    fn count_inlink(
        &self,
        inner: &mut Inner,
        canonical: &str,
        url: &Url,
        key: QueueKey,
    ) -> Result<Option<(u32, QueuedUrl)>, FrontierError> {
        let host = host_key(url);
        let id = inner.host_id(&host);
        let h = &mut inner.hosts[id as usize];
        if h.in_flight.iter().any(|f| f.stored == key) {
            return Ok(None);
        }
        let current = h.rekeyed.get(&key).copied().unwrap_or(key);
        if let Some(mut w) = h.window.remove(&current) {
            self.bump_inlinks(&mut w.q);
            w.extra += 1;
            let k = w.q.key();
            h.rekeyed.insert(w.stored, k);
            h.window.insert(k, w);
            self.reschedule(inner, id)?;
            return Ok(None);
        }
        if self.disk_bumps.load(Ordering::Relaxed) < MAX_DISK_BUMPS {
            let n = h.disk_bumps.entry(key).or_insert(0);
            if *n == 0 {
                self.disk_bumps.fetch_add(1, Ordering::Relaxed);
            }
            *n += 1;
            return Ok(None);
        }
        let (id, mut q) = self.take_queued(inner, canonical, url, key)?;
        self.bump_inlinks(&mut q);
        Ok(Some((id, q)))
    }

    /// Take a URL stored under `key` out of the host's on-disk count, with
    /// its pending in-links, to move it.
    fn take_queued(
        &self,
        inner: &mut Inner,
        canonical: &str,
        url: &Url,
        key: QueueKey,
    ) -> Result<(u32, QueuedUrl), FrontierError> {
        let host = host_key(url);
        let id = inner.host_id(&host);
        let h = &mut inner.hosts[id as usize];
        match self.store.queued(&host, key)? {
            Some(mut q) => {
                h.disk_only = h.disk_only.saturating_sub(1);
                if let Some(n) = h.disk_bumps.remove(&key) {
                    self.disk_bumps.fetch_sub(1, Ordering::Relaxed);
                    self.add_inlinks(&mut q, n);
                }
                Ok((id, q))
            }
            None => Err(StoreError::Corrupt {
                key: canonical.to_string(),
                reason: "seen-set says queued but the queue entry is missing".into(),
            }
            .into()),
        }
    }

    /// Put a queued URL into the host's window if it belongs to the best
    /// `window` URLs, else leave it to the store.
    fn place(&self, h: &mut HostState, q: QueuedUrl) {
        self.place_windowed(h, Windowed::clean(q));
    }

    fn place_windowed(&self, h: &mut HostState, w: Windowed) {
        let key = w.q.key();
        let fits = if h.disk_only == 0 {
            h.window.len() < self.window || h.window.last_key_value().is_some_and(|(k, _)| key < *k)
        } else {
            h.window.last_key_value().is_some_and(|(k, _)| key < *k)
        };
        if fits {
            if w.extra > 0 {
                h.rekeyed.insert(w.stored, key);
            }
            h.window.insert(key, w);
            if h.window.len() > self.window {
                if let Some((_, out)) = h.window.pop_last() {
                    // Back to the store only: its unwritten in-links wait there.
                    if out.extra > 0 {
                        h.rekeyed.remove(&out.stored);
                        let n = h.disk_bumps.entry(out.stored).or_insert(0);
                        if *n == 0 {
                            self.disk_bumps.fetch_add(1, Ordering::Relaxed);
                        }
                        *n += out.extra;
                    }
                }
                h.disk_only += 1;
            }
        } else {
            h.disk_only += 1;
        }
    }

    /// Refill an empty window from the store, best first.
    fn refill(&self, h: &mut HostState) -> Result<(), StoreError> {
        if !h.window.is_empty() || h.disk_only == 0 {
            return Ok(());
        }
        let limit = self.window + h.in_flight.len();
        let got = self.store.scan_queue(&h.name, limit)?;
        let exhausted = got.len() < limit;
        for mut q in got {
            let k = q.key();
            if !h.in_flight.iter().any(|f| f.stored == k) && h.window.len() < self.window {
                let extra = h.disk_bumps.remove(&k).unwrap_or(0);
                if extra > 0 {
                    self.disk_bumps.fetch_sub(1, Ordering::Relaxed);
                    self.add_inlinks(&mut q, extra);
                    h.rekeyed.insert(k, q.key());
                }
                h.window.insert(q.key(), Windowed { q, stored: k, extra });
            }
        }
        h.disk_only = if exhausted {
            0
        } else {
            h.disk_only.saturating_sub(h.window.len() as u64)
        };
        Ok(())
    }

    /// Bring a host's heap slot in line with its state.
    fn reschedule(&self, inner: &mut Inner, id: u32) -> Result<(), StoreError> {
        let h = &mut inner.hosts[id as usize];
        let eligible = h.queued() > 0 && h.in_flight.len() < self.max_in_flight;
        let want = match (eligible, h.ready_at, h.slot) {
            (false, _, _) | (_, None, _) => Slot::None,
            (true, Some(_), Slot::Ready(_)) => {
                self.refill(h)?;
                match h.window.first_key_value() {
                    Some((k, _)) => Slot::Ready(*k),
                    None => Slot::None,
                }
            }
            (true, Some(at), _) => Slot::Waiting(at),
        };
        if want != h.slot {
            h.gen += 1;
            h.slot = want;
            match want {
                Slot::None => {}
                Slot::Waiting(at) => inner.waiting.push(Reverse((at, h.gen, id))),
                Slot::Ready(k) => inner.ready.push(Reverse((k, h.gen, id))),
            }
        }
        Ok(())
    }

    /// The best URL of the best host ready at `now`, marked in flight (see
    /// [`NextUrl`]). The host is not ready again until [`Frontier::set_host_ready`].
    pub fn next(&self, now: Instant) -> Result<NextUrl, FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        // Hosts whose time has come move to the ready heap.
        while let Some(&Reverse((at, gen, id))) = inner.waiting.peek() {
            let h = &mut inner.hosts[id as usize];
            if h.gen != gen {
                inner.waiting.pop();
                continue;
            }
            if at > now {
                break;
            }
            inner.waiting.pop();
            self.refill(h)?;
            h.gen += 1;
            match h.window.first_key_value() {
                Some((k, _)) => {
                    h.slot = Slot::Ready(*k);
                    inner.ready.push(Reverse((*k, h.gen, id)));
                }
                None => h.slot = Slot::None,
            }
        }
        while let Some(Reverse((_, gen, id))) = inner.ready.pop() {
            let h = &mut inner.hosts[id as usize];
            if h.gen != gen {
                continue;
            }
            let Some((k, w)) = h.window.pop_first() else {
                h.slot = Slot::None;
                continue;
            };
            // The store entry stays queued, under its stored key, while in
            // flight (the in-memory in-flight list keeps it from being
            // handed out or moved). One moved up by in-links counted in
            // memory is not rewritten for the fetch: its completion removes
            // it (a crash loses only the in-memory count, as before).
            let q = w.q;
            if w.extra > 0 {
                h.rekeyed.remove(&w.stored);
            }
            h.in_flight.push(InFlight {
                key: k,
                stored: w.stored,
            });
            h.ready_at = None;
            inner.queued -= 1;
            inner.in_flight += 1;
            self.reschedule(inner, id)?;
            return Ok(NextUrl::Ready(q));
        }
        while let Some(&Reverse((at, gen, id))) = inner.waiting.peek() {
            if inner.hosts[id as usize].gen == gen {
                return Ok(NextUrl::Wait(at));
            }
            inner.waiting.pop();
        }
        Ok(if inner.queued > 0 {
            NextUrl::Busy
        } else {
            NextUrl::Empty
        })
    }

    /// The politeness layer's verdict: `host` (a [`QueuedUrl::host`]) may be
    /// contacted again at `at`.
    pub fn set_host_ready(&self, host: &str, at: Instant) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let id = inner.host_id(host);
        inner.hosts[id as usize].set_ready_at(at);
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// Take `url` off its host's in-flight list: its host id and the key of
    /// its store entry.
    fn take_in_flight(&self, inner: &mut Inner, url: &QueuedUrl) -> Result<(u32, QueueKey), FrontierError> {
        let id = *inner
            .host_ids
            .get(url.host.as_str())
            .ok_or_else(|| FrontierError::NotInFlight(url.canonical.clone()))?;
        let h = &mut inner.hosts[id as usize];
        let pos = h
            .in_flight
            .iter()
            .position(|f| f.key == url.key())
            .ok_or_else(|| FrontierError::NotInFlight(url.canonical.clone()))?;
        let stored = h.in_flight.swap_remove(pos).stored;
        inner.in_flight -= 1;
        Ok((id, stored))
    }

    /// The digit pattern of `canonical` when the page it duplicates is on
    /// the same host (one store read, for duplicates only): a calendar whose
    /// months copy the home page charges its pattern, a mirror does not.
    fn self_similar_pattern(&self, canonical: &str, dup_of: Option<PageId>) -> Result<Option<String>, StoreError> {
        let Some(p) = Url::parse(canonical).ok().and_then(|u| digit_pattern(&u)) else {
            return Ok(None);
        };
        let Some(orig) = dup_of.map(|id| self.store.page(id)).transpose()?.flatten() else {
            return Ok(None);
        };
        let host = |u: &str| Url::parse(u).ok().map(|u| host_key(&u));
        let same = host(&orig.canonical).is_some_and(|h| Some(h) == host(canonical));
        Ok(same.then_some(p))
    }

    /// Record the page fetched (or skipped) for an in-flight URL: page, body,
    /// seen state, queue removal and host stats in one atomic store batch.
    /// `page.id` comes from [`Frontier::allocate_page_id`].
    pub fn complete(&self, url: &QueuedUrl, page: &StoredPage, body: Option<&[u8]>) -> Result<(), FrontierError> {
        self.complete_many(&[(url, page, body)])
    }

    /// [`Frontier::complete`] for a group of in-flight URLs, in order, in ONE
    /// atomic store batch (the crawl loop records the pages decided since
    /// its last commit together). On error nothing is recorded and every
    /// URL of the group stays in flight.
    pub fn complete_many(&self, done: &[(&QueuedUrl, &StoredPage, Option<&[u8]>)]) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let mut ids: Vec<u32> = Vec::with_capacity(done.len());
        let mut keys: Vec<QueueKey> = Vec::with_capacity(done.len());
        let mut stats: Vec<HostStats> = Vec::with_capacity(done.len());
        for &(url, page, _) in done {
            let (id, stored) = match self.take_in_flight(inner, url) {
                Ok(taken) => taken,
                Err(e) => {
                    self.restore_in_flight(inner, &ids, &keys, done);
                    return Err(e);
                }
            };
            keys.push(stored);
            // The host's stats with this page counted (after its earlier pages in the group).
            let mut st = match ids.iter().rposition(|&i| i == id) {
                Some(j) => stats[j].clone(),
                None => inner.hosts[id as usize].stats.clone(),
            };
            st.record(page);
            ids.push(id);
            stats.push(st);
        }
        let group: Vec<Completion<'_>> = done
            .iter()
            .zip(&stats)
            .zip(&keys)
            .map(|((&(url, page, body), host), &key)| Completion {
                url,
                key,
                page,
                body,
                host,
            })
            .collect();
        if let Err(e) = self.store.complete_many(&group) {
            self.restore_in_flight(inner, &ids, &keys, done);
            return Err(e.into());
        }
        for (&id, st) in ids.iter().zip(stats) {
            inner.hosts[id as usize].stats = st;
        }
        for &(url, page, _) in done {
            // A digit pattern whose pages keep duplicating each other is a trap
            // (calendar); a mirror's pages duplicate another host's and are not.
            if page.decision.is_duplicate() && self.max_urls_per_pattern > 0 {
                if let Some(p) = self.self_similar_pattern(&url.canonical, page.dup_of)? {
                    *inner.patterns.entry(pattern_hash(&p)).or_insert(0) += 1;
                }
            }
        }
        for &id in &ids {
            self.reschedule(inner, id)?;
        }
        Ok(())
    }

    /// Undo `take_in_flight` for the first `ids.len()` URLs of `done`.
    fn restore_in_flight(
        &self,
        inner: &mut Inner,
        ids: &[u32],
        stored: &[QueueKey],
        done: &[(&QueuedUrl, &StoredPage, Option<&[u8]>)],
    ) {
        for ((&id, &stored), &(url, _, _)) in ids.iter().zip(stored).zip(done) {
            inner.hosts[id as usize]
                .in_flight
                .push(InFlight { key: url.key(), stored });
            inner.in_flight += 1;
        }
    }

    /// Put an in-flight URL back (a retryable failure): its retry count goes
    /// up, it keeps its priority, and its host is not ready before `not_before`.
    pub fn requeue(&self, mut url: QueuedUrl, not_before: Instant) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let (id, stored) = self.take_in_flight(inner, &url)?;
        url.retries += 1;
        self.store.reprioritize(stored, &url)?;
        let h = &mut inner.hosts[id as usize];
        h.set_ready_at(h.ready_at.map_or(not_before, |t| t.max(not_before)));
        self.place(h, url);
        inner.queued += 1;
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// Record `alias` (a redirect hop or rel=canonical source) as another
    /// name of `canonical`. False when `alias` was already known (then it is
    /// not to be fetched as a new URL).
    pub fn record_alias(&self, alias: &str, canonical: &str) -> Result<bool, FrontierError> {
        let _g = self.inner.lock();
        Ok(self.store.record_alias(alias, canonical)?)
    }

    /// Write the in-link counts kept only in memory (see [`Frontier::offer_many`])
    /// to the store, in one batch: at the end of a run, so that the stored
    /// queue (and `simcrawl explain`) shows them. A crash loses only these
    /// counts, never a queued URL.
    pub fn write_pending(&self) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let mut moved: Vec<(QueueKey, QueuedUrl)> = Vec::new();
        for h in &inner.hosts {
            for w in h.window.values().filter(|w| w.extra > 0) {
                moved.push((w.stored, w.q.clone()));
            }
            for (&key, &n) in &h.disk_bumps {
                if let Some(mut q) = self.store.queued(&h.name, key)? {
                    self.add_inlinks(&mut q, n);
                    moved.push((key, q));
                }
            }
        }
        if moved.is_empty() {
            return Ok(());
        }
        self.store.update_queue(&[], &moved)?;
        for h in &mut inner.hosts {
            h.rekeyed.clear();
            for w in h.window.values_mut() {
                w.stored = w.q.key();
                w.extra = 0;
            }
            h.disk_bumps.clear();
        }
        self.disk_bumps.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// A new page id for a decided page (increasing in decision order).
    pub fn allocate_page_id(&self) -> PageId {
        self.store.allocate_page_id()
    }

    /// A host's stats so far (zero for an unknown host).
    pub fn host_stats(&self, host: &str) -> HostStats {
        let g = self.inner.lock();
        g.host_ids
            .get(host)
            .map(|&id| g.hosts[id as usize].stats.clone())
            .unwrap_or_default()
    }

    /// URLs queued (not in flight).
    pub fn len(&self) -> usize {
        self.inner.lock().queued as usize
    }

    /// Whether no URL is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// URLs handed out and not yet completed or re-queued.
    pub fn in_flight(&self) -> usize {
        self.inner.lock().in_flight as usize
    }

    /// URLs of each host held in memory (for tests and progress displays).
    pub fn window_sizes(&self) -> Vec<(String, usize)> {
        let g = self.inner.lock();
        g.hosts.iter().map(|h| (h.name.clone(), h.window.len())).collect()
    }

    /// The store behind the frontier.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The `[frontier]` weights (to explain priorities).
    pub fn weights(&self) -> &FrontierSettings {
        &self.weights
    }
}

impl Inner {
    fn host_id(&mut self, host: &str) -> u32 {
        if let Some(&id) = self.host_ids.get(host) {
            return id;
        }
        let id = self.hosts.len() as u32;
        self.hosts.push(HostState {
            name: host.to_string(),
            window: BTreeMap::new(),
            rekeyed: HashMap::new(),
            disk_bumps: HashMap::new(),
            disk_only: 0,
            in_flight: Vec::new(),
            ready_at: Some(Instant::now()),
            gen: 0,
            slot: Slot::None,
            stats: HostStats::default(),
            admitted: 0,
        });
        self.host_ids.insert(host.to_string(), id);
        id
    }
}

#[cfg(test)]
mod tests;
