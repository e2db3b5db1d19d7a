//! Ending a URL's turn: recording its page (with the host's statistics and
//! the trap charges of self-similar duplicates), re-queueing a retry,
//! aliases, and writing pending in-link updates.

use super::*;

impl Frontier {
    /// The digit pattern of `canonical` when the page it duplicates is on
    /// the same host (one store read, for duplicates only): a calendar whose
    /// months copy the home page charges its pattern, a mirror does not.
    pub(super) fn self_similar_pattern(
        &self,
        canonical: &str,
        dup_of: Option<PageId>,
    ) -> Result<Option<String>, StoreError> {
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
    pub fn complete(&self, url: &QueuedUrl, page: &StoredPage, body: Option<BodyRef>) -> Result<(), FrontierError> {
        self.complete_many(&[(url, page, body)])
    }

    /// [`Frontier::complete`] for a group of in-flight URLs, in order, in ONE
    /// atomic store batch (the crawl loop records the pages decided since
    /// its last commit together). On error nothing is recorded and every
    /// URL of the group stays in flight.
    pub fn complete_many(&self, done: &[(&QueuedUrl, &StoredPage, Option<BodyRef>)]) -> Result<(), FrontierError> {
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
            if page.decision.is_duplicate() && url.revisit.is_none() && self.max_urls_per_pattern > 0 {
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
    pub(super) fn restore_in_flight(
        &self,
        inner: &mut Inner,
        ids: &[u32],
        stored: &[QueueKey],
        done: &[(&QueuedUrl, &StoredPage, Option<BodyRef>)],
    ) {
        for ((&id, &stored), &(url, _, _)) in ids.iter().zip(stored).zip(done) {
            inner.hosts[id as usize].in_flight.push(InFlight {
                key: url.key(),
                stored,
                requesting: false,
                decided: true,
            });
            inner.busy.insert(id);
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
        let cap = inner.window_cap();
        let h = &mut inner.hosts[id as usize];
        h.set_ready_at(h.ready_at.map_or(not_before, |t| t.max(not_before)));
        // A worker that lost the host's lease leaves the URL to the store.
        if h.owned {
            self.place(cap, h, url);
            inner.queued += 1;
        }
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// Drop an in-flight URL that another process recorded first (a worker
    /// of a shared crawl whose lease of the host expired while the URL was
    /// in flight): it leaves the frontier without a record of this process.
    pub fn abandon(&self, url: &QueuedUrl) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let (id, _) = self.take_in_flight(inner, url)?;
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
    /// and the priorities of re-scored URLs ([`Frontier::rescore`]) to the
    /// store, in one batch: at the end of a run, so that the stored
    /// queue (and `simcrawl explain`) shows them. A crash loses only these
    /// counts, never a queued URL.
    pub fn write_pending(&self) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        // Written in batches of `PENDING_BATCH`: one batch for every queued
        // URL touched would hold them all in memory at once (each batch is
        // atomic; the store stays consistent between them).
        const PENDING_BATCH: usize = 4096;
        let mut moved: Vec<(QueueKey, QueuedUrl)> = Vec::with_capacity(PENDING_BATCH);
        let mut any = false;
        for h in &inner.hosts {
            // Moved up by in-links counted in memory, or re-scored
            // ([`Frontier::rescore`]).
            for w in h.window.values().filter(|w| w.extra > 0 || w.q.key() != w.stored) {
                moved.push((w.stored, w.q.unpack(&h.name)));
                if moved.len() >= PENDING_BATCH {
                    self.store.update_queue(&[], &moved)?;
                    moved.clear();
                    any = true;
                }
            }
        }
        if !moved.is_empty() {
            self.store.update_queue(&[], &moved)?;
            any = true;
        }
        self.write_disk_bumps(inner, usize::MAX)?;
        if !any {
            return Ok(());
        }
        for h in &mut inner.hosts {
            h.rekeyed.clear();
            for w in h.window.values_mut() {
                w.stored = w.q.key();
                w.extra = 0;
            }
        }
        Ok(())
    }
}
