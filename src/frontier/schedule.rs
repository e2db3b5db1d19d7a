//! Scheduling: each host's in-memory window of its best URLs, refilled
//! from the store, and the ready-time heap that hands out the best URL of a
//! ready host.

use super::*;
use std::time::Duration;

use crate::model::priority_rank;

/// Pages of a host that may be fetched while its earlier pages still wait
/// for their decision (and so for their out-links to be offered). 0: a
/// host's next URL is chosen once its last page is decided, with all that
/// page's links in (docs/focus.md measures 1 and unbounded: a host then runs
/// ahead of what its pages say about its next URL, and focused crawls lose).
pub(super) const AHEAD_OF_DECISIONS: usize = 0;

impl Frontier {
    /// Put a queued URL into the host's window if it belongs to the best
    /// `cap` URLs ([`Inner::window_cap`]), else leave it to the store.
    pub(super) fn place(&self, cap: usize, h: &mut HostState, q: QueuedUrl) {
        let key = q.key();
        let fits = if h.disk_only == 0 {
            h.window.len() < cap || h.window.last_key_value().is_some_and(|(k, _)| key < *k)
        } else {
            h.window.last_key_value().is_some_and(|(k, _)| key < *k)
        };
        if fits {
            h.window.insert(key, Windowed::clean(q));
            self.shrink_window(cap, h);
        } else {
            h.disk_only += 1;
        }
    }

    /// Give a window's worst URLs back to the store until it holds at most
    /// `cap` (their unwritten in-links wait for them there).
    fn shrink_window(&self, cap: usize, h: &mut HostState) {
        while h.window.len() > cap {
            let Some((_, out)) = h.window.pop_last() else { break };
            h.rekeyed.remove(&out.stored);
            if out.extra > 0 {
                let n = h.disk_bumps.entry(out.stored).or_insert(0);
                if *n == 0 {
                    self.disk_bumps.fetch_add(1, Ordering::Relaxed);
                }
                *n += out.extra;
            }
            h.disk_only += 1;
        }
    }

    /// Once the window cap has fallen to half the cap the windows were last
    /// shrunk to (the hosts found have doubled), shrink every window to it:
    /// all windows together then hold at most twice `memory_budget` (or
    /// [`MIN_WINDOW`] URLs per host), at a cost of one pass over the hosts
    /// each time their number doubles.
    pub(super) fn keep_windows_in_budget(&self, inner: &mut Inner) {
        let cap = inner.window_cap();
        if cap.saturating_mul(2) > inner.shrunk_cap {
            return;
        }
        for h in &mut inner.hosts {
            self.shrink_window(cap, h);
        }
        inner.shrunk_cap = cap;
    }

    /// Refill an empty window from the store, best first. Returns how the
    /// host's queued count changed, for the caller to apply to the total: a
    /// worker of a shared crawl counts a host's store entries by a queue
    /// length it read a moment earlier (see `lease.rs`), so the store may
    /// hold fewer entries than counted (another worker fetched them) or
    /// more (another worker queued them since).
    pub(super) fn refill(&self, cap: usize, h: &mut HostState) -> Result<i64, StoreError> {
        if !h.window.is_empty() || h.disk_only == 0 {
            return Ok(0);
        }
        let counted = h.disk_only;
        let limit = cap + h.in_flight.len();
        let got = self.store.scan_queue(&h.name, limit)?;
        let exhausted = got.len() < limit;
        let mut loaded: Vec<(QueueKey, Windowed)> = Vec::with_capacity(got.len().min(cap));
        for mut q in got {
            let k = q.key();
            if !h.in_flight.iter().any(|f| f.stored == k) && loaded.len() < cap {
                let extra = h.disk_bumps.remove(&k).unwrap_or(0);
                if extra > 0 {
                    self.disk_bumps.fetch_sub(1, Ordering::Relaxed);
                    self.add_inlinks(&mut q, extra);
                    h.rekeyed.insert(k, q.key());
                }
                loaded.push((
                    q.key(),
                    Windowed {
                        q: Packed::pack(q),
                        stored: k,
                        extra,
                    },
                ));
            }
        }
        // Built at once from its entries, the window's tree has full nodes;
        // inserted one at a time in key order, each node would keep 6 of
        // its 11 slots, and a window takes most of the frontier's memory.
        h.window = loaded.into_iter().collect();
        h.shrink_disk_bumps();
        let loaded = h.window.len() as u64;
        h.disk_only = if exhausted {
            0
        } else {
            h.disk_only.saturating_sub(loaded)
        };
        Ok(h.queued() as i64 - counted as i64)
    }

    /// Bring a host's heap slot in line with its state.
    pub(super) fn reschedule(&self, inner: &mut Inner, id: u32) -> Result<(), StoreError> {
        let cap = inner.window_cap();
        let h = &mut inner.hosts[id as usize];
        let requesting = h.in_flight.iter().filter(|f| f.requesting).count();
        let undecided = h.in_flight.iter().filter(|f| !f.decided).count();
        let eligible =
            h.queued() > 0 && requesting < h.max_in_flight && undecided < h.max_in_flight + AHEAD_OF_DECISIONS;
        let mut change = 0;
        let want = match (eligible, h.ready_at, h.slot) {
            (false, _, _) | (_, None, _) => Slot::None,
            (true, Some(_), Slot::Ready(_)) => {
                change = self.refill(cap, h)?;
                match self.ready_key(h) {
                    Some(k) => Slot::Ready(k),
                    None => Slot::None,
                }
            }
            (true, Some(at), _) => Slot::Waiting(at),
        };
        inner.queued = inner.queued.saturating_add_signed(change);
        let h = &mut inner.hosts[id as usize];
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
        self.keep_windows_in_budget(inner);
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
            let cap = inner.window_cap();
            let h = &mut inner.hosts[id as usize];
            let change = self.refill(cap, h)?;
            inner.queued = inner.queued.saturating_add_signed(change);
            let h = &mut inner.hosts[id as usize];
            h.gen += 1;
            match self.ready_key(h) {
                Some(k) => {
                    h.slot = Slot::Ready(k);
                    inner.ready.push(Reverse((k, h.gen, id)));
                }
                None => h.slot = Slot::None,
            }
        }
        if self.holds(inner, now) {
            if let Some(since) = inner.hold_since {
                return Ok(NextUrl::Wait(since + self.hold.map_or(Duration::ZERO, |h| h.wait)));
            }
        }
        while let Some(Reverse((_, gen, id))) = inner.ready.pop() {
            let h = &mut inner.hosts[id as usize];
            if h.gen != gen {
                continue;
            }
            let Some((_, w)) = h.window.pop_first() else {
                h.slot = Slot::None;
                continue;
            };
            // The store entry stays queued, under its stored key, while in
            // flight (the in-memory in-flight list keeps it from being
            // handed out or moved). One moved up by in-links counted in
            // memory is not rewritten for the fetch: its completion removes
            // it (a crash loses only the in-memory count, as before).
            let mut q = w.q.unpack(&h.name);
            h.rekeyed.remove(&w.stored);
            // The host's relevance as it is now, not as it was when the URL
            // was queued (the key it is handed out under changes with it).
            self.refresh_host_relevance(&mut q, h.relevance);
            h.in_flight.push(InFlight {
                key: q.key(),
                stored: w.stored,
                requesting: true,
                decided: false,
            });
            h.ready_at = None;
            inner.busy.insert(id);
            inner.hold_since = None;
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

    /// Focused crawls ([`Hold`]): whether the best ready URL trails the best
    /// URL of a busy host — one whose request is under way or whose last
    /// page awaits its decision, not one waiting for a politeness delay —
    /// by more than the margin, and the slot has not waited for it for the
    /// hold time yet (then `hold_since` says since when it waits).
    fn holds(&self, inner: &mut Inner, now: Instant) -> bool {
        let Some(hold) = self.hold else { return false };
        while let Some(&Reverse((_, gen, id))) = inner.ready.peek() {
            if inner.hosts[id as usize].gen == gen {
                break;
            }
            inner.ready.pop();
        }
        let Some(ready) = inner
            .ready
            .peek()
            .and_then(|&Reverse((_, _, id))| current_priority(&inner.hosts[id as usize], &self.weights))
        else {
            return false;
        };
        let soon = inner
            .busy
            .iter()
            .map(|&id| &inner.hosts[id as usize])
            .filter(|h| h.slot == Slot::None && h.ready_at.is_none_or(|t| t <= now))
            .filter_map(|h| current_priority(h, &self.weights))
            .fold(f64::NEG_INFINITY, f64::max);
        if soon - ready <= hold.margin {
            inner.hold_since = None;
            return false;
        }
        let since = *inner.hold_since.get_or_insert(now);
        if now.saturating_duration_since(since) >= hold.wait {
            inner.hold_since = None;
            return false;
        }
        true
    }

    /// A host's position in the ready heap: its best URL's key, with the
    /// URL's `host_relevance` component replaced by the host's current
    /// relevance (focused crawls), so that hosts compete by what they
    /// have yielded so far, not by what they had yielded when their URLs
    /// were found.
    fn ready_key(&self, h: &HostState) -> Option<QueueKey> {
        let (k, w) = h.window.first_key_value()?;
        let delta = self.weights.host_relevance_weight * (h.relevance - w.q.components.host_relevance);
        Some(if delta == 0.0 || !delta.is_finite() {
            *k
        } else {
            QueueKey {
                rank: priority_rank(w.q.priority + delta),
                seq: k.seq,
            }
        })
    }

    /// Set `q`'s host-relevance component to `relevance` and its priority
    /// to match.
    fn refresh_host_relevance(&self, q: &mut QueuedUrl, relevance: f64) {
        let delta = self.weights.host_relevance_weight * (relevance - q.components.host_relevance);
        if delta != 0.0 && delta.is_finite() {
            q.components.host_relevance = relevance;
            q.priority += delta;
        }
    }

    /// Focused crawls: the host's relevance so far (0..1, see
    /// [`crate::model::ScoreComponents::host_relevance`]). Its URLs compete
    /// with other hosts' by it from now on, whenever they were queued.
    pub fn set_host_relevance(&self, host: &str, relevance: f64) -> Result<(), FrontierError> {
        if !relevance.is_finite() {
            return Ok(());
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let id = inner.host_id(host);
        let h = &mut inner.hosts[id as usize];
        if h.relevance == relevance {
            return Ok(());
        }
        h.relevance = relevance;
        if let Slot::Ready(_) = h.slot {
            // Re-enter the ready heap under the new key.
            h.gen += 1;
            h.slot = Slot::None;
            self.reschedule(inner, id)?;
        }
        Ok(())
    }

    /// Focused crawls: re-score the URLs of `host` in memory as the
    /// evidence changes, at a bounded cost. `host` (the host of a page just
    /// judged) and the next host in turn (so that hosts no page was fetched
    /// from lately are re-scored too) each earn `per_page` credits; a host
    /// whose credits reach its window's size has every URL of its window
    /// re-scored: `url_relevance(canonical)` gives the URL's new
    /// `url_relevance` component (None: keep it), its priority follows, and
    /// the host's position among the ready hosts with it. A URL then costs
    /// `per_page` re-scorings per page judged, whatever the window's size.
    /// URLs only in the store keep their component until they are loaded
    /// and re-scored with the window. Returns the URLs re-scored.
    pub fn rescore(
        &self,
        host: &str,
        per_page: usize,
        url_relevance: &mut dyn FnMut(&str) -> Option<f64>,
    ) -> Result<usize, FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let mut ids = Vec::with_capacity(2);
        if let Some(&id) = inner.host_ids.get(host) {
            ids.push(id);
        }
        if !inner.hosts.is_empty() {
            let turn = (inner.rescore_turn % inner.hosts.len() as u64) as u32;
            inner.rescore_turn = inner.rescore_turn.wrapping_add(1);
            if !ids.contains(&turn) {
                ids.push(turn);
            }
        }
        let mut done = 0;
        for id in ids {
            let h = &mut inner.hosts[id as usize];
            h.rescore_credit = h.rescore_credit.saturating_add(per_page);
            if h.window.is_empty() || h.rescore_credit < h.window.len() {
                continue;
            }
            h.rescore_credit = 0;
            done += h.window.len();
            let old = std::mem::take(&mut h.window);
            let mut rescored = Vec::with_capacity(old.len());
            for (_, mut w) in old {
                if let Some(v) = url_relevance(w.q.canonical()).filter(|v| v.is_finite()) {
                    let delta = self.weights.url_relevance_weight * (v - w.q.components.url_relevance);
                    w.q.components.url_relevance = v;
                    if delta.is_finite() {
                        w.q.priority += delta;
                    }
                }
                let k = w.q.key();
                if k == w.stored {
                    h.rekeyed.remove(&w.stored);
                } else {
                    h.rekeyed.insert(w.stored, k);
                }
                rescored.push((k, w));
            }
            // Built at once, the tree has full nodes (see `refill`).
            h.window = rescored.into_iter().collect();
            if let Slot::Ready(_) = h.slot {
                // Re-enter the ready heap under the new best key.
                h.gen += 1;
                h.slot = Slot::None;
                self.reschedule(inner, id)?;
            }
        }
        Ok(done)
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

    /// `url`'s request is over (its page is still to be recorded): it no
    /// longer counts against its host's in-flight limit, and the host may be
    /// contacted again at `at` (as [`Frontier::set_host_ready`]).
    pub fn fetched(&self, url: &QueuedUrl, at: Instant) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let id = inner.host_id(&url.host);
        let h = &mut inner.hosts[id as usize];
        if let Some(f) = h.in_flight.iter_mut().find(|f| f.key == url.key()) {
            f.requesting = false;
        }
        h.set_ready_at(at);
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// `url`'s page is decided and its out-links are offered: its host's
    /// next URL may be chosen now, before the page's record is committed
    /// ([`Frontier::complete`]).
    pub fn decided(&self, url: &QueuedUrl) -> Result<(), FrontierError> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let Some(&id) = inner.host_ids.get(url.host.as_str()) else {
            return Ok(());
        };
        let h = &mut inner.hosts[id as usize];
        if let Some(f) = h.in_flight.iter_mut().find(|f| f.key == url.key()) {
            f.decided = true;
            f.requesting = false;
        }
        self.reschedule(inner, id)?;
        Ok(())
    }

    /// Take `url` off its host's in-flight list: its host id and the key of
    /// its store entry.
    pub(super) fn take_in_flight(&self, inner: &mut Inner, url: &QueuedUrl) -> Result<(u32, QueueKey), FrontierError> {
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
        if h.in_flight.is_empty() {
            inner.busy.remove(&id);
        }
        inner.in_flight -= 1;
        Ok((id, stored))
    }
}

/// The priority of a host's best URL in memory, with its host-relevance
/// component as the host's relevance is now (None: nothing in memory).
fn current_priority(h: &HostState, w: &FrontierSettings) -> Option<f64> {
    let (_, b) = h.window.first_key_value()?;
    let delta = w.host_relevance_weight * (h.relevance - b.q.components.host_relevance);
    Some(if delta.is_finite() {
        b.q.priority + delta
    } else {
        b.q.priority
    })
}
