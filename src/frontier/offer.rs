//! Offering discovered URLs: scope and trap checks, the seen-set, in-link
//! counts and the priority a new or known URL gets.

use super::*;

impl Frontier {
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
    ///
    /// A candidate listed in a sitemap ([`Candidate::sitemap`]) is not an
    /// in-link: a new URL is queued with its sitemap component, a queued one
    /// has its component raised to it (and its store entry rewritten). A
    /// batch that mixes both kinds is offered as two, sitemap entries first.
    pub fn offer_many(&self, cands: &[Candidate]) -> Result<Vec<Offer>, FrontierError> {
        let listed = cands.iter().filter(|c| c.sitemap.is_some()).count();
        if listed == 0 || listed == cands.len() {
            return self.offer_inner(cands, true);
        }
        let (sitemap, links): (Vec<usize>, Vec<usize>) = (0..cands.len()).partition(|&i| cands[i].sitemap.is_some());
        let mut out: Vec<Option<Offer>> = vec![None; cands.len()];
        for part in [sitemap, links] {
            let batch: Vec<Candidate> = part.iter().map(|&i| cands[i].clone()).collect();
            for (&i, o) in part.iter().zip(self.offer_inner(&batch, true)?) {
                out[i] = Some(o);
            }
        }
        Ok(out.into_iter().map(|o| o.unwrap_or(Offer::AlreadySeen)).collect())
    }

    pub(super) fn offer_inner(&self, cands: &[Candidate], check_scope: bool) -> Result<Vec<Offer>, FrontierError> {
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
        // The seen states of the candidates in scope, asked for at once
        // (one round trip on a networked store); the loop below writes
        // nothing to the store, and repeats within the batch are handled by
        // `in_batch`.
        let asked: Vec<&str> = cands
            .iter()
            .zip(&checked)
            .filter(|(_, ok)| **ok)
            .map(|(c, _)| c.url.as_str())
            .collect();
        let mut states = self.store.url_states(&asked)?.into_iter();
        for (i, c) in cands.iter().enumerate() {
            if !checked[i] {
                continue;
            }
            let state = states.next().flatten();
            let canonical = c.url.as_str();
            if let Some(&(is_new, j)) = in_batch.get(canonical) {
                let q = if is_new { &mut new[j] } else { &mut moved[j].1 };
                match c.sitemap {
                    Some(v) => self.raise_sitemap(q, v),
                    None => {
                        self.bump_inlinks(q);
                        self.raise_relevance(q, c);
                    }
                }
                out[i] = Offer::AlreadySeen;
                continue;
            }
            match state {
                None => {}
                Some(UrlState::Queued(key)) => {
                    out[i] = Offer::AlreadySeen;
                    // Another worker's host: its queue is that worker's to
                    // reorder (an in-link is not counted).
                    if self.worker.is_some() && !inner.owns(&host_key(&c.url)) {
                        continue;
                    }
                    let found = match c.sitemap {
                        Some(v) => self.sitemap_listed(inner, canonical, &c.url, key, v)?,
                        None => self.count_inlink(inner, canonical, c, key)?,
                    };
                    if let Some((id, q)) = found {
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
            if check_scope && h.max_pages > 0 && h.admitted >= h.max_pages {
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
                host_relevance: finite(c.host_relevance),
                url_relevance: finite(c.url_relevance),
                sitemap: c.sitemap.filter(|v| v.is_finite()).unwrap_or(0.0),
            };
            let q = QueuedUrl {
                url: c.discovered.clone().unwrap_or_else(|| canonical.to_string()),
                canonical: canonical.to_string(),
                host,
                depth: c.depth,
                parent: c.parent.clone(),
                priority: score(&components, &self.weights),
                components,
                seq: inner.take_seq(),
                retries: 0,
                inlinks: 1,
                tunnel: c.tunnel,
                revisit: None,
            };
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
            let cap = inner.window_cap();
            self.place(cap, &mut inner.hosts[id as usize], q);
            self.reschedule(inner, id)?;
        }
        for (id, q) in new_ids.into_iter().zip(new) {
            self.place_new(inner, id, q)?;
        }
        Ok(out)
    }

    /// Queue revisits of recorded pages (a recrawl round, see
    /// [`crate::recrawl`]): each page's URL goes back into its host's queue
    /// with [`QueuedUrl::revisit`] naming the page, while its seen state
    /// stays `Done` (an offer of it is still `AlreadySeen`). Scope and trap
    /// rules are not asked again: the URL passed them when it was found.
    /// Its priority is that of a new URL at its depth on its host now.
    /// Returns how many were queued (pages whose URL is not done as that
    /// page are skipped).
    pub fn revisit(&self, pages: &[StoredPage]) -> Result<usize, FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let mut new: Vec<QueuedUrl> = Vec::with_capacity(pages.len());
        let mut ids: Vec<u32> = Vec::with_capacity(pages.len());
        for p in pages {
            if self.store.url_state(&p.canonical)? != Some(UrlState::Done(p.id)) {
                continue;
            }
            let Ok(url) = Url::parse(&p.canonical) else { continue };
            let host = host_key(&url);
            let id = inner.host_id(&host);
            let h = &inner.hosts[id as usize];
            let components = ScoreComponents {
                depth: -f64::from(p.depth),
                host_dup_rate: -h.stats.dup_rate(),
                host_novelty: h.stats.novelty(),
                inlinks: 2f64.ln(),
                ..ScoreComponents::default()
            };
            new.push(QueuedUrl {
                url: p.canonical.clone(),
                canonical: p.canonical.clone(),
                host,
                depth: p.depth,
                parent: None,
                priority: score(&components, &self.weights),
                components,
                seq: inner.take_seq(),
                retries: 0,
                inlinks: 1,
                tunnel: 0,
                revisit: Some(p.id),
            });
            ids.push(id);
        }
        // Queue entries only: their seen state stays `Done` (see the store's
        // `update_queue`).
        self.store.update_queue(&new, &[])?;
        let n = new.len();
        for (id, q) in ids.into_iter().zip(new) {
            self.place_new(inner, id, q)?;
        }
        Ok(n)
    }

    pub(super) fn bump_inlinks(&self, q: &mut impl Scored) {
        self.add_inlinks(q, 1);
    }

    pub(super) fn add_inlinks(&self, q: &mut impl Scored, n: u32) {
        let q = q.parts();
        *q.inlinks = q.inlinks.saturating_add(n);
        q.components.inlinks = (1.0 + f64::from(*q.inlinks)).ln();
        *q.priority = score(q.components, &self.weights);
    }

    /// Focused crawls: raise `q`'s relevance component to the in-link
    /// `c`'s when that is higher, with `c`'s tunnelling counter (the path
    /// the component comes from).
    pub(super) fn raise_relevance(&self, q: &mut impl Scored, c: &Candidate) {
        let q = q.parts();
        if c.relevance.is_finite() && c.relevance > q.components.relevance {
            q.components.relevance = c.relevance;
            *q.tunnel = c.tunnel;
            *q.priority = score(q.components, &self.weights);
        }
    }

    /// Raise `q`'s sitemap component to `v` (a URL listed in several
    /// sitemaps keeps the largest).
    pub(super) fn raise_sitemap(&self, q: &mut QueuedUrl, v: f64) {
        if v.is_finite() && v > q.components.sitemap {
            q.components.sitemap = v;
            q.priority = score(&q.components, &self.weights);
        }
    }

    /// A queued URL (stored under `key`) found in a sitemap with component
    /// `v`: when that raises its component, it is taken out of its window
    /// (with the in-links counted in memory) or out of the store's count,
    /// and returned to be rewritten with the caller's batch and placed
    /// again. An in-flight URL, or one whose component is already as high,
    /// is left alone. The caller must not refill the host's window before
    /// the batch is written (a batch of sitemap candidates never does: see
    /// [`Frontier::offer_many`]).
    pub(super) fn sitemap_listed(
        &self,
        inner: &mut Inner,
        canonical: &str,
        url: &Url,
        key: QueueKey,
        v: f64,
    ) -> Result<Option<(u32, QueuedUrl)>, FrontierError> {
        if !v.is_finite() {
            return Ok(None);
        }
        let host = host_key(url);
        let id = inner.host_id(&host);
        let h = &mut inner.hosts[id as usize];
        if h.in_flight.iter().any(|f| f.stored == key) {
            return Ok(None);
        }
        let current = h.rekeyed.get(&key).copied().unwrap_or(key);
        if let Some(w) = h.window.get(&current) {
            if w.q.components.sitemap >= v {
                return Ok(None);
            }
            if let Some(w) = h.window.remove(&current) {
                h.rekeyed.remove(&w.stored);
                // The caller rewrites the entry stored under `key` (==
                // `w.stored`): `q` holds the in-links counted in memory too.
                let mut q = w.q.unpack(&h.name);
                self.raise_sitemap(&mut q, v);
                return Ok(Some((id, q)));
            }
            return Ok(None);
        }
        match self.store.queued(&host, key)? {
            Some(q) if q.components.sitemap >= v => return Ok(None),
            _ => {}
        }
        let (id, mut q) = self.take_queued(inner, canonical, url, key)?;
        self.raise_sitemap(&mut q, v);
        Ok(Some((id, q)))
    }

    /// One more in-link `c` for the URL stored under `key`, counted in
    /// memory: in the window it moves up at once (its store entry keeps its
    /// key); only in the store, the count waits until the URL is loaded or
    /// the counts are written ([`Frontier::write_disk_bumps`]). An in-flight
    /// URL counts nothing.
    ///
    /// Focused crawls: a URL's relevance component is the best of its
    /// in-links' ([`Frontier::raise_relevance`]): a module index whose
    /// anchor names the topic lifts a page first found through an
    /// off-topic footer link. A URL only in the store that a link lifts is
    /// returned to be rewritten.
    pub(super) fn count_inlink(
        &self,
        inner: &mut Inner,
        canonical: &str,
        c: &Candidate,
        key: QueueKey,
    ) -> Result<Option<(u32, QueuedUrl)>, FrontierError> {
        let url = &c.url;
        let host = host_key(url);
        let id = inner.host_id(&host);
        let h = &mut inner.hosts[id as usize];
        if h.in_flight.iter().any(|f| f.stored == key) {
            return Ok(None);
        }
        let current = h.rekeyed.get(&key).copied().unwrap_or(key);
        if let Some(mut w) = h.window.remove(&current) {
            self.bump_inlinks(&mut w.q);
            self.raise_relevance(&mut w.q, c);
            w.extra += 1;
            let k = w.q.key();
            h.rekeyed.insert(w.stored, k);
            h.window.insert(k, w);
            self.reschedule(inner, id)?;
            return Ok(None);
        }
        if c.relevance > 0.0 && c.relevance.is_finite() {
            let lifts = self
                .store
                .queued(&host, key)?
                .is_some_and(|q| c.relevance > q.components.relevance + RAISE_MARGIN);
            if lifts {
                let (id, mut q) = self.take_queued(inner, canonical, url, key)?;
                self.bump_inlinks(&mut q);
                self.raise_relevance(&mut q, c);
                return Ok(Some((id, q)));
            }
        }
        if self.disk_bumps.load(Ordering::Relaxed) >= MAX_DISK_BUMPS {
            self.write_disk_bumps(inner, DISK_BUMPS_BATCH)?;
        }
        let h = &mut inner.hosts[id as usize];
        let n = h.disk_bumps.entry(key).or_insert(0);
        if *n == 0 {
            self.disk_bumps.fetch_add(1, Ordering::Relaxed);
        }
        *n += 1;
        Ok(None)
    }

    /// Writes up to `limit` of the in-link counts waiting in memory for
    /// URLs only in the store to their queue entries (each moves to the key
    /// of its new priority) and forgets them: a batch at a time when they
    /// reach [`MAX_DISK_BUMPS`] (a steady trickle of writes, not a burst the
    /// store must buffer), all of them at the end of a run.
    pub(super) fn write_disk_bumps(&self, inner: &mut Inner, limit: usize) -> Result<(), FrontierError> {
        let mut moved: Vec<(QueueKey, QueuedUrl)> = Vec::with_capacity(DISK_BUMPS_BATCH.min(limit));
        let mut left = limit;
        for h in &mut inner.hosts {
            if left == 0 {
                break;
            }
            let keys: Vec<QueueKey> = h.disk_bumps.keys().take(left).copied().collect();
            left -= keys.len();
            for key in keys {
                let Some(n) = h.disk_bumps.remove(&key) else { continue };
                self.disk_bumps.fetch_sub(1, Ordering::Relaxed);
                if let Some(mut q) = self.store.queued(&h.name, key)? {
                    self.add_inlinks(&mut q, n);
                    moved.push((key, q));
                    if moved.len() >= DISK_BUMPS_BATCH {
                        self.store.update_queue(&[], &moved)?;
                        moved.clear();
                    }
                }
            }
            h.shrink_disk_bumps();
        }
        if !moved.is_empty() {
            self.store.update_queue(&[], &moved)?;
        }
        Ok(())
    }

    /// Take a URL stored under `key` out of the host's on-disk count, with
    /// its pending in-links, to move it.
    pub(super) fn take_queued(
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
}

/// In-link counts written to the store per batch ([`Frontier::write_disk_bumps`]):
/// each rewrites a queue entry, so a batch of 1 024 holds about 2 MB of
/// entries and store operations while it is written.
const DISK_BUMPS_BATCH: usize = 1024;

/// How much more relevant an in-link must be than a URL only in the store
/// for the URL to be rewritten ([`Frontier::count_inlink`]).
const RAISE_MARGIN: f64 = 0.01;

/// A component value, or 0 when it is not a number.
fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}
