//! The frontier of one worker of a crawl that several processes share
//! (`simcrawl worker`, docs/distributed.md).
//!
//! Every queued URL is in the shared store; a worker schedules only the
//! hosts whose lease it holds (the crawl loop takes and renews leases, see
//! `crate::store::HostLeases`, and tells the frontier with
//! [`Frontier::adopt`] and [`Frontier::disown`]). For such a worker:
//!
//! - a new URL goes to the store; the store queues it only if no worker did
//!   first. For an adopted host it counts as queued in the store only, and
//!   the host's window is loaded from the store when it runs empty, so the
//!   window holds only entries the store has;
//! - URLs that other workers queue for an adopted host are counted when the
//!   lease is renewed ([`Frontier::refresh`]);
//! - an in-link to a URL of another worker's host is not counted: that
//!   worker may hold the URL in its window or in flight;
//! - queue sequence numbers carry the worker's id, so entry keys of two
//!   workers never collide.

use super::*;

impl Frontier {
    /// A worker's frontier: starts the crawl in `store` with `seeds` if no
    /// process started it yet (true), else joins it (false). It owns no
    /// host until [`Frontier::adopt`].
    pub fn for_worker(
        store: Arc<dyn Store>,
        settings: &Settings,
        seeds: &[Url],
        worker: u16,
    ) -> Result<(Self, bool), FrontierError> {
        if !seeds.is_empty() {
            match Frontier::create(store.clone(), settings, seeds, Some(worker)) {
                Ok(f) => return Ok((f, true)),
                Err(FrontierError::ExistingCrawl) => {}
                Err(e) => return Err(e),
            }
        }
        let seeds = store.meta("seeds")?.ok_or(FrontierError::NothingToResume)?;
        let seeds: Vec<Url> = String::from_utf8_lossy(&seeds)
            .lines()
            .filter_map(|l| Url::parse(l).ok())
            .collect();
        let mut f = Frontier::build(store, settings, &seeds, Some(worker));
        f.seeded = false;
        Ok((f, false))
    }

    /// Whether this process seeded the crawl: a worker that joined a crawl
    /// another worker seeded reads no sitemaps of the seeds.
    pub fn seeded_here(&self) -> bool {
        self.seeded
    }

    /// Whether this is a worker of a shared crawl.
    pub fn is_worker(&self) -> bool {
        self.worker.is_some()
    }

    /// A URL queued in the store: into the window of an owned host (loaded
    /// from the store, for a worker), nothing for another worker's host.
    pub(super) fn place_new(&self, inner: &mut Inner, id: u32, q: QueuedUrl) -> Result<(), StoreError> {
        let cap = inner.window_cap();
        let h = &mut inner.hosts[id as usize];
        if !h.owned {
            return Ok(());
        }
        if self.worker.is_some() {
            h.disk_only += 1;
        } else {
            self.place(cap, h, q);
        }
        inner.queued += 1;
        self.reschedule(inner, id)
    }

    /// Take `host` over (its lease was acquired): `queued` entries are in
    /// its store queue, and it may be fetched from `not_before` on. URLs
    /// another worker had in flight are among them and are fetched again
    /// unless recorded meanwhile.
    pub fn adopt(&self, host: &str, queued: u64, not_before: Instant) -> Result<(), FrontierError> {
        let stats = self.store.host_stats(host)?.unwrap_or_default();
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let id = inner.host_id(host);
        let h = &mut inner.hosts[id as usize];
        if h.owned {
            return Ok(());
        }
        h.owned = true;
        h.stats = stats;
        h.window.clear();
        h.rekeyed.clear();
        h.disk_only = queued.saturating_sub(h.in_flight.len() as u64);
        inner.queued += h.disk_only;
        h.set_ready_at(not_before.max(Instant::now()));
        h.gen += 1;
        h.slot = Slot::None;
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// An owned host's store queue holds `queued` entries (its lease was
    /// renewed): entries other workers queued are counted, so the window
    /// is loaded again when it runs empty.
    pub fn refresh(&self, host: &str, queued: u64) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let Some(&id) = inner.host_ids.get(host) else {
            return Ok(());
        };
        let h = &mut inner.hosts[id as usize];
        if !h.owned {
            return Ok(());
        }
        let known = h.queued() + h.in_flight.len() as u64;
        if queued > known {
            h.disk_only += queued - known;
            inner.queued += queued - known;
            self.reschedule(inner, id)?;
        }
        Ok(())
    }

    /// Stop fetching `host` (its lease was given up or lost): its window
    /// and counts are dropped (the store keeps its queue); its URLs in
    /// flight still complete. Returns when it may be fetched next.
    pub fn disown(&self, host: &str) -> Option<Instant> {
        let mut g = self.inner.lock();
        let &id = g.host_ids.get(host)?;
        self.disown_locked(&mut g, id)
    }

    /// [`Frontier::disown`] when nothing of `host` is in flight (checked
    /// under the same lock): `Some(when it may be fetched next)`.
    pub fn disown_if_quiet(&self, host: &str) -> Option<Option<Instant>> {
        let mut g = self.inner.lock();
        let &id = g.host_ids.get(host)?;
        let h = &g.hosts[id as usize];
        if !h.owned || !h.in_flight.is_empty() {
            return None;
        }
        Some(self.disown_locked(&mut g, id))
    }

    fn disown_locked(&self, inner: &mut Inner, id: u32) -> Option<Instant> {
        let h = &mut inner.hosts[id as usize];
        if !h.owned {
            return None;
        }
        inner.queued = inner.queued.saturating_sub(h.queued());
        h.owned = false;
        h.window.clear();
        h.rekeyed.clear();
        let bumps = h.disk_bumps.len();
        h.disk_bumps.clear();
        self.disk_bumps.fetch_sub(bumps, Ordering::Relaxed);
        h.disk_only = 0;
        h.gen += 1;
        h.slot = Slot::None;
        h.ready_at
    }

    /// The hosts this worker owns.
    pub fn owned_hosts(&self) -> Vec<OwnedHost> {
        let g = self.inner.lock();
        g.hosts
            .iter()
            .filter(|h| h.owned)
            .map(|h| OwnedHost {
                name: h.name.clone(),
                queued: h.queued(),
                in_flight: h.in_flight.len(),
                recorded: h.stats.fetched,
            })
            .collect()
    }
}

/// A host a worker owns ([`Frontier::owned_hosts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedHost {
    /// The host key.
    pub name: String,
    /// URLs queued, in its window or counted in the store.
    pub queued: u64,
    /// URLs handed out and not yet recorded or re-queued.
    pub in_flight: usize,
    /// Pages of the host recorded in the crawl, by any worker.
    pub recorded: u64,
}

impl Inner {
    /// Whether this process fetches `host` (see [`HostState::owned`]).
    pub(super) fn owns(&self, host: &str) -> bool {
        self.host_ids.get(host).is_some_and(|&id| self.hosts[id as usize].owned)
    }
}
