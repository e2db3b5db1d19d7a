//! The frontier (pipeline: after seeds and every page's out-links, before
//! politeness): which URL is fetched next. It owns
//!
//! - **scope and trap rules** ([`scope`]): same-host / same-domain / SURT
//!   prefix, allow and deny regexes, max depth, max pages per host, max URL
//!   length, path-segment repetition, and a cap on URLs per digit pattern
//!   (calendar traps); a host's `[[hosts]]` rule sets its own max depth,
//!   max pages, allow and deny;
//! - the **seen-set** over canonical URLs, kept in the [`Store`]: a URL is
//!   handed out at most once, aliases (redirects, rel=canonical) are recorded;
//! - **per-host queues** ordered by priority. Every queued URL is written to
//!   the store; in memory each host keeps only a window of its best URLs
//!   (at most `memory_window`, and an equal share of `memory_budget` among
//!   the hosts known, at least 16), refilled from the store in priority
//!   order, so millions of queued URLs cost disk, not memory;
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
//! `[politeness] max_in_flight_per_host` (or its `[[hosts]]` rule's
//! `max_in_flight`) requests under way: a URL counts from
//! [`Frontier::next`] until its response is in ([`Frontier::fetched`]), and
//! at most `AHEAD_OF_DECISIONS` (0) more of its pages may wait for their
//! decision, so that its next URL is chosen with its last page's links in.
//! A page waits for its decision until the decider reports it decided
//! ([`Frontier::decided`], before its group's commit), or, when a caller
//! does not report decisions, until it is recorded ([`Frontier::complete`]).
//! New hosts are ready at once.
//!
//! A focused crawl (`focus.hold_ms > 0`) also holds fetch slots back: when
//! the best ready URL's priority trails by more than `focus.hold_margin` the
//! best URL of a *busy* host — one whose request is under way or whose last
//! page awaits its decision, not one waiting for a politeness delay —
//! [`Frontier::next`] answers [`NextUrl::Wait`] for up to `hold_ms`, so that
//! the slot goes to that host once it is free. With delays off hosts
//! otherwise take turns (whichever is free when a slot is), and a focused
//! crawl's priorities would decide little. Busy hosts are those with URLs
//! in flight (a set of at most the in-flight count), so the check is cheap.
//!
//! A focused crawl's evidence changes as pages are judged, and the URLs
//! already queued follow it: [`Frontier::rescore`] re-scores a host's
//! in-memory window (its `url_relevance` component) at a bounded cost per
//! page, and an in-link whose `relevance` component is higher than the
//! queued URL's raises it (the URL keeps the best of its in-links').
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

mod complete;
mod lease;
mod offer;
mod schedule;
pub mod scope;
mod window;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hashbrown::{HashMap, HashSet};
use parking_lot::Mutex;
use url::Url;

use crate::config::{FrontierSettings, HostRules, Settings};
use crate::dedup::DedupPolicyEngine;
use crate::host::{host_key, host_key_of_serialized};
pub use crate::model::ParentDup;
pub use crate::model::QueuedUrl;
pub use crate::model::ScoreComponents;
use crate::model::{BodyRef, HostStats, PageId, QueueKey, StoredPage, UrlState};
use crate::store::{Completion, Store, StoreError};
pub use lease::OwnedHost;
use scope::{digit_pattern, Rejection, ScopeRules};
pub use scope::{ScopeReason, TrapReason};
use window::{Packed, Scored};

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
    /// Relevance of the URL's host so far, 0..1 ([`crate::focus::Evidence`]; 0 otherwise).
    pub host_relevance: f64,
    /// Relevance learned for the URL's path words, 0..1 ([`crate::focus::Evidence`]; 0 otherwise).
    pub url_relevance: f64,
    /// The URL's host is an established mirror (`[mirror] penalty` applies).
    pub mirror: bool,
    /// Focused crawls: off-topic pages on the path since the last on-topic
    /// one ([`crate::focus::LinkScore::tunnel`]); 0 otherwise.
    pub tunnel: u32,
    /// Listed in a sitemap, with this sitemap component (see
    /// [`ScoreComponents::sitemap`]): not an in-link; a queued URL's
    /// component is raised to it instead.
    pub sitemap: Option<f64>,
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
            host_relevance: 0.0,
            url_relevance: 0.0,
            mirror: false,
            tunnel: 0,
            sitemap: None,
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
// Returned once per dispatch and taken apart at once: boxing the URL would
// cost an allocation per fetch for nothing.
#[allow(clippy::large_enum_variant)]
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
        + w.host_relevance_weight * c.host_relevance
        + w.url_relevance_weight * c.url_relevance
        + c.mirror
        + w.sitemap_weight * c.sitemap
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
        ("host_relevance", c.host_relevance, w.host_relevance_weight),
        ("url_relevance", c.url_relevance, w.url_relevance_weight),
        ("mirror", c.mirror, 1.0),
        ("sitemap", c.sitemap, w.sitemap_weight),
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
    q: Packed,
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
            q: Packed::pack(q),
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
    /// Its request is under way: it counts against the host's in-flight
    /// limit until [`Frontier::fetched`] (its page may still be analysed
    /// and decided after that).
    requesting: bool,
    /// Its page is decided and its out-links offered
    /// ([`Frontier::decided`]); it waits only for its record to be
    /// committed, and no longer holds its host back.
    decided: bool,
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
    /// Focused crawls: the host's current relevance
    /// ([`Frontier::set_host_relevance`]); 0 otherwise.
    relevance: f64,
    /// Focused crawls: re-scorings earned since the window was last
    /// re-scored ([`Frontier::rescore`]).
    rescore_credit: usize,
    /// URLs in flight at most, and queued ever at most (0 = no limit):
    /// `[politeness] max_in_flight_per_host` and `[crawl]
    /// max_pages_per_host`, or the host's `[[hosts]]` rule's values.
    max_in_flight: usize,
    max_pages: u64,
    /// This process fetches the host: always in a crawl of one process; in
    /// a worker of a shared crawl, while it holds the host's lease
    /// ([`Frontier::adopt`]).
    owned: bool,
}

impl HostState {
    /// Give back the room of in-link counts written or loaded: a map keeps
    /// the capacity of its largest size, and every host's map fills and
    /// drains in turn, so without this the hosts together would hold room
    /// for many times [`MAX_DISK_BUMPS`] counts.
    fn shrink_disk_bumps(&mut self) {
        let len = self.disk_bumps.len();
        if len * 4 < self.disk_bumps.capacity() {
            self.disk_bumps.shrink_to(2 * len);
        }
    }

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

/// The per-host limits of new hosts: the global values and the `[[hosts]]`
/// rules that replace them.
struct HostLimits {
    rules: HostRules,
    max_in_flight: usize,
    max_pages: u64,
    /// `[frontier] memory_window` and `memory_budget`.
    window: usize,
    budget: usize,
}

/// A host's window holds at least this many URLs (or `memory_window`, if
/// smaller), whatever the number of hosts.
const MIN_WINDOW: usize = 16;

impl HostLimits {
    /// The window of each of `hosts` hosts: an equal share of the budget,
    /// at least [`MIN_WINDOW`] and at most `memory_window`.
    fn window_cap(&self, hosts: usize) -> usize {
        (self.budget / hosts.max(1)).max(MIN_WINDOW).min(self.window)
    }
}

/// Focused crawls: how long and for how much better a URL a fetch slot
/// waits (`focus.hold_margin`, `focus.hold_ms`; see [`Frontier::next`]).
#[derive(Debug, Clone, Copy)]
struct Hold {
    margin: f64,
    wait: std::time::Duration,
}

struct Inner {
    limits: HostLimits,
    /// The cap every window was last shrunk to
    /// ([`Frontier::keep_windows_in_budget`]).
    shrunk_cap: usize,
    /// Hosts with URLs in flight (focused crawls: where a better URL may
    /// become ready within milliseconds).
    busy: HashSet<u32>,
    /// Since when fetch slots are held back for a busy host ([`Hold`]).
    hold_since: Option<Instant>,
    hosts: Vec<HostState>,
    host_ids: HashMap<String, u32>,
    waiting: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    ready: BinaryHeap<Reverse<(QueueKey, u64, u32)>>,
    /// Duplicate pages fetched per digit pattern (calendar-trap detection).
    patterns: HashMap<u64, u32>,
    next_seq: u64,
    queued: u64,
    in_flight: u64,
    /// The host whose window [`Frontier::rescore`] credits next in turn.
    rescore_turn: u64,
    /// A worker of a shared crawl: hosts are its own only once adopted.
    worker: Option<u16>,
}

/// Pending in-link counts of URLs only in the store, kept in memory at most
/// this many (about 2 MB); past it they are written to the store a batch
/// at a time ([`Frontier::write_disk_bumps`]).
const MAX_DISK_BUMPS: usize = 1 << 16;

/// The crawl frontier (see the module docs). Shared by all workers (`&self` methods).
pub struct Frontier {
    store: Arc<dyn Store>,
    rules: ScopeRules,
    weights: FrontierSettings,
    dedup: DedupPolicyEngine,
    mirror_penalty: f64,
    max_urls_per_pattern: u64,
    hold: Option<Hold>,
    inner: Mutex<Inner>,
    /// Entries in all hosts' `disk_bumps` (bounded by [`MAX_DISK_BUMPS`];
    /// changed only under the `inner` lock).
    disk_bumps: AtomicUsize,
    /// A worker of a crawl that several processes share (see `lease.rs`).
    worker: Option<u16>,
    /// This process seeded the crawl (always, but for a worker that joined).
    seeded: bool,
}

fn pattern_hash(p: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.hash(&mut h);
    h.finish()
}

impl Frontier {
    fn build(store: Arc<dyn Store>, settings: &Settings, seeds: &[Url], worker: Option<u16>) -> Self {
        Frontier {
            worker,
            seeded: true,
            store,
            rules: ScopeRules::new(&settings.crawl, seeds).with_host_rules(&settings.hosts),
            weights: settings.frontier.clone(),
            dedup: DedupPolicyEngine::new(settings),
            mirror_penalty: settings.mirror.penalty,
            max_urls_per_pattern: settings.crawl.max_urls_per_pattern,
            hold: (settings.focus.enabled && !settings.focus.hold.is_zero()).then_some(Hold {
                margin: settings.focus.hold_margin,
                wait: settings.focus.hold,
            }),
            inner: Mutex::new(Inner {
                busy: HashSet::new(),
                hold_since: None,
                limits: HostLimits {
                    rules: settings.hosts.clone(),
                    max_in_flight: settings.politeness.max_in_flight_per_host.max(1),
                    max_pages: settings.crawl.max_pages_per_host,
                    window: settings.frontier.memory_window.max(1),
                    budget: settings.frontier.memory_budget.max(1),
                },
                shrunk_cap: usize::MAX,
                hosts: Vec::new(),
                host_ids: HashMap::new(),
                waiting: BinaryHeap::new(),
                ready: BinaryHeap::new(),
                patterns: HashMap::new(),
                // A worker's sequence numbers start at the clock (µs), so
                // a worker started again under the same id does not reuse
                // the numbers of its earlier run (see `Inner::take_seq`).
                next_seq: match worker {
                    Some(_) => crate::store::epoch_ms().saturating_mul(1000),
                    None => 1,
                },
                queued: 0,
                in_flight: 0,
                rescore_turn: 0,
                worker,
            }),
            disk_bumps: AtomicUsize::new(0),
        }
    }

    /// Start a new crawl in an empty store: record the seeds (they define the
    /// `same-host` / `same-domain` scope), queue them at depth 0 (seeds skip
    /// the scope rules) and flush the store.
    pub fn new(store: Arc<dyn Store>, settings: &Settings, seeds: &[Url]) -> Result<Self, FrontierError> {
        Frontier::create(store, settings, seeds, None)
    }

    fn create(
        store: Arc<dyn Store>,
        settings: &Settings,
        seeds: &[Url],
        worker: Option<u16>,
    ) -> Result<Self, FrontierError> {
        if seeds.is_empty() {
            return Err(FrontierError::NoSeeds);
        }
        let joined: Vec<&str> = seeds.iter().map(Url::as_str).collect();
        if !store.set_meta_if_absent("seeds", joined.join("\n").as_bytes())? {
            return Err(FrontierError::ExistingCrawl);
        }
        let f = Frontier::build(store, settings, seeds, worker);
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
        let f = Frontier::build(store, settings, &seeds, None);
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

    /// Hosts with queued URLs: `(ready, waiting)`. Ready: a URL of it may be
    /// handed out at `now`; waiting: its ready time lies ahead (politeness
    /// delay, backoff, re-queued retry) or it is at its in-flight limit.
    /// One pass over the hosts under the lock: for metrics scrapes, not per page.
    pub fn host_counts(&self, now: Instant) -> (usize, usize) {
        let g = self.inner.lock();
        let (mut ready, mut waiting) = (0, 0);
        for h in g.hosts.iter().filter(|h| h.queued() > 0) {
            match h.slot {
                Slot::Ready(_) => ready += 1,
                Slot::Waiting(at) if at <= now => ready += 1,
                _ => waiting += 1,
            }
        }
        (ready, waiting)
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

    /// Whether `url` passes the crawl's scope and trap rules at `depth`
    /// (the reason when not): for URLs that are not offered, such as sitemap files.
    pub fn check_scope(&self, url: &Url, depth: u32) -> Result<(), String> {
        self.rules.check(url, depth).map_err(|r| match r {
            Rejection::OutOfScope(r) => r.to_string(),
            Rejection::Trap(r) => r.to_string(),
        })
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
        // The host's `[[hosts]]` rule, looked up once per host.
        let rule = self.limits.rules.find(host).map(|(_, r)| r);
        let max_in_flight = rule
            .and_then(|r| r.max_in_flight)
            .unwrap_or(self.limits.max_in_flight)
            .max(1);
        let max_pages = rule.and_then(|r| r.max_pages).unwrap_or(self.limits.max_pages);
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
            relevance: 0.0,
            rescore_credit: 0,
            max_in_flight,
            max_pages,
            owned: self.worker.is_none(),
        });
        self.host_ids.insert(host.to_string(), id);
        id
    }

    /// URLs a host's window holds at most now: falls as hosts are found,
    /// so that all windows together stay within about `[frontier]
    /// memory_budget` ([`HostLimits::window_cap`]).
    fn window_cap(&self) -> usize {
        self.limits.window_cap(self.hosts.len())
    }

    /// A new queue sequence number. A worker's carry its id in the low 10
    /// bits, so two workers queueing URLs of one host at once never make
    /// the same queue entry key.
    fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        match self.worker {
            Some(w) => (s << 10) | u64::from(w & 0x3ff),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests;
