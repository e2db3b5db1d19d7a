//! A worker of a crawl that several simcrawl processes share on a Redis
//! Cluster ([`CrawlOptions::worker`], `simcrawl worker`; docs/distributed.md):
//! joining the crawl, and the lease loop that hands it hosts.
//!
//! Every [`LEASE_STEP`] fraction of the lease TTL the loop
//!
//! 1. renews its heartbeat (how many workers are alive);
//! 2. renews the leases of its hosts; a lease lost (it expired while the
//!    worker stalled) is dropped from the frontier; the queue length each
//!    renewal returns counts URLs other workers queued for the host;
//! 3. gives up hosts with nothing in flight when they have nothing queued,
//!    or when it holds more than its share (hosts with queued URLs ÷ live
//!    workers, rounded up) and they are not young (at most 96 pages
//!    recorded: their template is still being learned here), each with the
//!    time it may be fetched next;
//! 4. takes free hosts with queued URLs up to its share;
//! 5. sees whether the crawl is over: no URL queued anywhere in two
//!    surveys in a row with no page recorded between them, and nothing in
//!    flight here. A URL leaves its queue only in the commit that records
//!    its page, after its out-links were queued, so an empty survey means
//!    no worker holds work that could queue more.

use super::*;
use crate::store::{epoch_ms, HostLeases, RedisMarker, RedisStore};
use std::time::Instant;

/// The lease loop runs every TTL ÷ this.
const LEASE_STEP: u32 = 5;
/// ... and at least this often while the worker has nothing to fetch.
const IDLE_TICK: Duration = Duration::from_millis(200);

/// What the dispatcher of a worker reads from its lease loop.
#[derive(Default)]
pub(super) struct WorkerShared {
    /// The crawl is over (see the module docs).
    drained: AtomicBool,
    /// Set when the crawl loop ends: the lease loop stops.
    stop: AtomicBool,
    /// Fetches taken from the crawl's budget (`crawl.max_pages`) and not
    /// made yet; the budget ran out when `spent`.
    budget: AtomicU64,
    spent: AtomicBool,
}

/// Fetches a worker takes from the crawl's budget at a time: a crawl stops
/// at most this many fetches per worker short of `crawl.max_pages`.
const BUDGET_BLOCK: u64 = 32;

impl WorkerShared {
    pub(super) fn drained(&self) -> bool {
        self.drained.load(Ordering::Acquire)
    }

    /// Whether this worker may make one more fetch under `crawl.max_pages`:
    /// from the budget it holds, or from a block it takes from the crawl's
    /// (a counter in the store that every worker draws from).
    pub(super) async fn has_budget(&self, shared: &Arc<Shared>) -> bool {
        if self.budget.load(Ordering::Acquire) > 0 {
            return true;
        }
        if self.spent.load(Ordering::Acquire) {
            return false;
        }
        let max = shared.settings.crawl.max_pages;
        let sh = shared.clone();
        let took = tokio::task::spawn_blocking(move || {
            let leases = leases(&sh)?;
            Ok::<u64, Error>(leases.take_fetches(BUDGET_BLOCK)?)
        })
        .await;
        match took {
            Ok(Ok(total)) => {
                let before = total.saturating_sub(BUDGET_BLOCK);
                let granted = max.saturating_sub(before).min(BUDGET_BLOCK);
                if granted == 0 {
                    self.spent.store(true, Ordering::Release);
                    return false;
                }
                self.budget.fetch_add(granted, Ordering::AcqRel);
                true
            }
            Ok(Err(e)) => {
                tracing::warn!("fetch budget: {e}");
                false
            }
            Err(e) => {
                tracing::warn!("fetch budget: {e}");
                false
            }
        }
    }

    /// One fetch made from the budget.
    pub(super) fn spend_budget(&self) {
        let _ = self
            .budget
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| b.checked_sub(1));
    }

    /// The crawl loop has ended: the lease loop stops at its next tick.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// The worker's name in leases and heartbeats: its id, and a process and
/// clock part, so that a worker started again under the same id does not
/// hold its dead predecessor's leases.
pub(super) fn worker_name(id: u16) -> String {
    format!("w{id}-{}-{}", std::process::id(), epoch_ms())
}

/// The crawl's Redis store for worker `opts.worker`: the name is `[store]
/// crawl_name`, or the name of the directory that holds the worker's own
/// (`DIR` of `DIR/worker-N`). The worker's directory records it
/// ([`RedisMarker`]).
pub(super) fn open_worker_store(settings: &Settings, opts: &CrawlOptions, store_dir: &Path) -> Result<RedisStore> {
    let name = if settings.store.crawl_name.is_empty() {
        let out = std::fs::canonicalize(&opts.out).unwrap_or_else(|_| opts.out.clone());
        crawl_name_of(out.parent().unwrap_or(&out), &opts.out)?
    } else {
        settings.store.crawl_name.clone()
    };
    let store = RedisStore::open(&settings.store.redis_nodes, &name)?;
    RedisMarker {
        name,
        nodes: settings.store.redis_nodes.clone(),
    }
    .write(store_dir)?;
    Ok(store)
}

/// The lease loop (see the module docs) of worker `name`, until
/// [`WorkerShared::stop`]. A store error is logged and the step tried again
/// at the next tick; leases not renewed for a TTL expire and go to others.
pub(super) async fn lease_loop(shared: Arc<Shared>, name: String) {
    let ttl = shared.settings.store.lease;
    let tick = (ttl / LEASE_STEP).max(Duration::from_millis(50));
    let mut last_empty: Option<u64> = None;
    loop {
        let sh = shared.clone();
        let n = name.clone();
        let step = tokio::task::spawn_blocking(move || lease_step(&sh, &n, ttl, &mut last_empty).map(|_| last_empty));
        match step.await {
            Ok(Ok(seen)) => last_empty = seen,
            Ok(Err(e)) => tracing::warn!("worker {name}: host leases: {e}"),
            Err(e) => tracing::warn!("worker {name}: host leases: {e}"),
        }
        let Some(w) = &shared.worker else { return };
        if w.stop.load(Ordering::Acquire) {
            return;
        }
        if w.drained() {
            shared.wake.notify_one();
        }
        // A worker with nothing to fetch looks for work (and for the end
        // of the crawl) more often.
        let idle = shared.frontier.is_empty() && shared.in_flight.load(Ordering::Acquire) == 0;
        tokio::time::sleep(if idle { tick.min(IDLE_TICK) } else { tick }).await;
    }
}

fn leases(shared: &Shared) -> Result<&dyn HostLeases> {
    shared
        .frontier
        .store()
        .leases()
        .ok_or_else(|| Error::Internal("a worker's store has no host leases".into()))
}

/// An [`Instant`] for a time in ms since the Unix epoch.
fn instant_at(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms.saturating_sub(epoch_ms()))
}

/// Ms since the Unix epoch for an [`Instant`].
fn epoch_at(at: Instant) -> u64 {
    epoch_ms() + at.saturating_duration_since(Instant::now()).as_millis() as u64
}

fn lease_step(shared: &Shared, me: &str, ttl: Duration, last_empty: &mut Option<u64>) -> Result<()> {
    let Some(w) = &shared.worker else { return Ok(()) };
    let leases = leases(shared)?;
    let frontier = &shared.frontier;
    let live = leases.heartbeat(me, ttl)?;
    // Renew, and drop what was lost.
    let owned = frontier.owned_hosts();
    let names: Vec<&str> = owned.iter().map(|h| h.name.as_str()).collect();
    let renewed = leases.renew(me, &names, ttl)?;
    let mut kept: Vec<(&str, u64, usize, u64)> = Vec::new();
    for (h, r) in owned.iter().zip(renewed) {
        match r {
            Some(queued) => {
                frontier.refresh(&h.name, queued)?;
                kept.push((&h.name, queued, h.in_flight, h.recorded));
            }
            None => {
                tracing::warn!("worker {me}: lost the lease of {}", h.name);
                frontier.disown(&h.name);
            }
        }
    }
    let survey = leases.survey()?;
    let total: u64 = survey.iter().map(|h| h.queued).sum();
    let with_work = survey.iter().filter(|h| h.queued > 0).count();
    let share = with_work.div_ceil(live.max(1));
    // Give up hosts with nothing in flight: those with nothing queued, and
    // those past the share unless they are young (below).
    let mut mine = kept.iter().filter(|(_, q, ..)| *q > 0).count();
    let mut release: Vec<(&str, u64)> = Vec::new();
    for &(host, queued, in_flight, recorded) in &kept {
        if in_flight > 0 || (queued > 0 && (mine <= share || young_here(recorded))) {
            continue;
        }
        if let Some(next) = frontier.disown_if_quiet(host) {
            release.push((host, epoch_at(next.unwrap_or_else(Instant::now))));
            if queued > 0 {
                mine -= 1;
            }
        }
    }
    leases.release(me, &release)?;
    // Take free hosts up to the share, spread by a hash of host and worker.
    if mine < share {
        let mut free: Vec<&crate::store::HostWork> =
            survey.iter().filter(|h| h.queued > 0 && h.holder.is_none()).collect();
        free.sort_by_key(|h| crate::hash::fnv1a(format!("{me}{}", h.host).as_bytes()));
        free.truncate(share - mine);
        let hosts: Vec<&str> = free.iter().map(|h| h.host.as_str()).collect();
        for (host, got) in hosts.iter().zip(leases.acquire(me, &hosts, ttl)?) {
            if let Some(a) = got {
                // Pages its last holder decided and never recorded (it
                // died) leave the shared decisions before the host's next
                // page is decided.
                shared.ghosts.host(host);
                frontier.adopt(host, a.queued, instant_at(a.next_ms))?;
                tracing::debug!("worker {me}: took {host} ({} queued)", a.queued);
            }
        }
    }
    let recorded = frontier.store().pages_recorded()?;
    let quiet = frontier.in_flight() == 0 && shared.in_flight.load(Ordering::Acquire) == 0;
    if total == 0 && quiet {
        if *last_empty == Some(recorded) {
            w.drained.store(true, Ordering::Release);
        }
        *last_empty = Some(recorded);
    } else {
        *last_empty = None;
        w.drained.store(false, Ordering::Release);
    }
    Ok(())
}

/// Whether a host with `recorded` pages, held by this worker, is young: its
/// template is still being learned here, and the new pages this worker
/// decided under the unsettled template are kept to be fingerprinted again
/// as it settles ([`Decider::refresh_provisional`](super::decide::Decider)).
/// Another worker would learn the template from nothing and fingerprint the
/// host's later pages under a template these were never fingerprinted
/// under, so near duplicates between the two would be missed: a young host
/// is not given up to even out the share (only when its queue is empty, or
/// with its worker's lease).
fn young_here(recorded: u64) -> bool {
    recorded > 0 && recorded <= 2 * super::PROVISIONAL_PER_HOST as u64
}

/// At the end of a worker's run: give every lease up (with each host's
/// next fetch time) and leave the crawl.
pub(super) fn leave(shared: &Shared, me: &str) -> Result<()> {
    let leases = leases(shared)?;
    let mut release = Vec::new();
    for h in shared.frontier.owned_hosts() {
        let next = shared.frontier.disown(&h.name).unwrap_or_else(Instant::now);
        release.push((h.name, epoch_at(next)));
    }
    let refs: Vec<(&str, u64)> = release.iter().map(|(h, t)| (h.as_str(), *t)).collect();
    leases.release(me, &refs)?;
    leases.leave(me)?;
    Ok(())
}
