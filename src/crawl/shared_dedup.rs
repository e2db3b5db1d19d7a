//! Shared decisions (part of the decider): when the store has a decision log
//! ([`Store::decision_log`], a crawl on Redis that several worker processes
//! may share), the decider's [`SharedReplica`] is built from the whole log
//! at start, and each batch of pages is decided in two steps:
//!
//! 1. [`Decider::prejudge`] under the log's lock, for every page that has
//!    arrived: catch up with the other workers' entries, forget the ghosts
//!    asked for ([`Ghosts`]), then each page's dedup mutations (a revisit's
//!    [`Op::Forget`](crate::dedup::Op), young pages' re-fingerprinting, the
//!    page's decision), appended to the log before the lock is released;
//! 2. [`Decider::handle`] after it, as without a log: the crawl-log line,
//!    out-links, WARC records, the page into the group.
//!
//! The lock is never held while the decider waits for more pages. After a
//! group's store commit, its `Committed` marker is appended without the
//! lock. Without a log (one process) each page is prejudged and handled in
//! turn, with no lock and nothing recorded.

use super::decide::Decider;
use super::*;
use crate::dedup::{Fate, Judgement, SharedExact, SharedReplica};
use crate::frontier::FrontierError;
use crate::index::SharedIndex;
use crate::store::StoreError;
use parking_lot::Mutex;

/// Hosts whose ghosts (pages another worker decided and never committed)
/// the decider forgets, under the log's lock, before it decides its next
/// pages: each page of such a host in the log without a `Committed` marker
/// and without a record in the store gets an `Op::Forget`, so a fetch of its
/// URL again is not a duplicate of a page no one recorded.
///
/// A worker asks for a host with [`Ghosts::host`] when it takes over the
/// host's lease from a worker that stopped (before it fetches the host's
/// URLs); [`Ghosts::all`] asks for every host (a crawl only this process
/// runs: every uncommitted page at start is a ghost). Pages of this
/// worker's own uncommitted group are never ghosts. Without a decision log
/// requests are ignored.
#[derive(Default)]
pub(super) struct Ghosts {
    asked: Mutex<(bool, Vec<String>)>,
}

impl Ghosts {
    /// Ghosts of every host asked for at start: a crawl one process runs.
    pub(super) fn at_start() -> Self {
        let g = Ghosts::default();
        g.all();
        g
    }

    /// Forget `host`'s ghosts before the next pages are decided (the lease
    /// takeover calls it).
    #[allow(dead_code)]
    pub(super) fn host(&self, host: &str) {
        self.asked.lock().1.push(host.to_string());
    }

    /// Forget every host's ghosts before the next pages are decided.
    pub(super) fn all(&self) {
        self.asked.lock().0 = true;
    }

    /// The requests since the last call: every host, or these hosts.
    fn take(&self) -> Option<Option<Vec<String>>> {
        let mut a = self.asked.lock();
        let (all, hosts) = std::mem::take(&mut *a);
        match (all, hosts.is_empty()) {
            (true, _) => Some(None),
            (false, false) => Some(Some(hosts)),
            (false, true) => None,
        }
    }
}

/// A page's dedup outcome, made under the lock ([`Decider::prejudge`]).
pub(super) struct Pre {
    /// Its page id (a revisit's: the page's).
    pub(super) id: PageId,
    /// What [`Deduper::decide`] said, when the page went through it.
    pub(super) judged: Option<Judgement>,
}

/// The decider's dedup state: over the store's decision log when it has
/// one (replayed whole: the log, not the store, is the state every worker
/// shares), else `loaded` as it is.
pub(super) fn open_replica(s: &Settings, store: &dyn Store, loaded: DedupState) -> Result<SharedReplica> {
    let DedupState {
        index,
        exact,
        sketches,
        live,
        ..
    } = loaded;
    let k = s.simhash.k;
    let verify = crate::sketch::Thresholds::from_settings(&s.dedup);
    let Some(log) = store.decision_log() else {
        let d = Deduper::new(exact, index, sketches, k, verify).with_live(live);
        return Ok(SharedReplica::local(d));
    };
    if !index.is_empty() && log.read_after(&crate::store::Cursor::start(), 1)?.is_empty() {
        // Pages decided without a log (a store written before it had one):
        // the state is the page records', and the log goes on from it.
        tracing::warn!(
            "decision log: empty, but the store holds pages: deciding from the page records (workers joining this crawl would not see them)"
        );
        let d = Deduper::new(exact, index, sketches, k, verify).with_live(live);
        return Ok(SharedReplica::open(d, log)?);
    }
    let started = std::time::Instant::now();
    let spill = sketches.spill_path().map(Path::to_path_buf);
    let templates = sketches.templates();
    // The spill file goes with its index: dropped before it is made again.
    drop(sketches);
    let sketches = match &spill {
        Some(p) => SketchIndex::spilling(p).map_err(|e| Error::io(p, e))?,
        None => SketchIndex::new(),
    }
    .with_templates(templates);
    let d = match (store.table_buckets(), store.content_owners()) {
        // The maps and tables on the cluster: the replay builds neither.
        (Some(buckets), Some(owners)) => {
            let tables = SharedIndex::from_settings(&s.index, k, buckets);
            tracing::info!("near-duplicate tables in the store: {}", tables.design().name());
            let exact = SharedExact::new(owners);
            Deduper::shared(exact, tables, sketches, k, verify)
        }
        _ => {
            let empty = LiveIndex::from_settings(&s.index, k);
            Deduper::new(ExactIndex::new(), empty, sketches, k, verify)
        }
    };
    let mut r = SharedReplica::open(d, log)?;
    // What the replay learned is the whole crawl's content: not a cache.
    r.take_learned();
    tracing::info!(
        "decision log: {} entries replayed in {:.2} s ({} fingerprints, {} pages not committed yet)",
        r.counts().1,
        started.elapsed().as_secs_f64(),
        r.replica().index_len(),
        r.replica().uncommitted_len()
    );
    Ok(r)
}

impl Decider {
    /// Records the group's pages in the store. A worker of a shared crawl
    /// whose lease of a host expired while pages of it were in flight (a
    /// stall longer than `[store] lease_ms`) may find one of them recorded
    /// by the worker that took the host over ([`StoreError::AlreadyDone`]):
    /// that page leaves the group and the frontier without a record, its
    /// decision becomes a ghost of the shared decisions (forgotten before
    /// the next batch), and the rest of the group is recorded.
    pub(super) fn complete_group(&mut self) -> Result<()> {
        loop {
            let items: Vec<(&QueuedUrl, &StoredPage, Option<BodyRef>)> =
                self.group.iter().map(|d| (&d.q, &d.page, d.body)).collect();
            let done_elsewhere = match self.shared.frontier.complete_many(&items) {
                Ok(()) => return Ok(()),
                Err(FrontierError::Store(StoreError::AlreadyDone { url, page }))
                    if self.shared.frontier.is_worker() =>
                {
                    (url, page)
                }
                Err(e) => return Err(e.into()),
            };
            let (url, page) = done_elsewhere;
            let Some(at) = self.group.iter().position(|d| d.q.canonical == url) else {
                return Err(StoreError::AlreadyDone { url, page }.into());
            };
            let d = self.group.remove(at);
            tracing::warn!(
                "{url}: recorded by another worker as page {page} (this worker's lease of {} expired while it was in flight); not recorded here",
                d.q.host
            );
            self.shared.frontier.abandon(&d.q)?;
            self.shared.ghosts.host(&d.q.host);
            // Its line is in this worker's log: the reports leave it out.
            self.void(&[d.page.id])?;
            if self.group.is_empty() {
                return Ok(());
            }
        }
    }
}

impl Decider {
    /// Decide the pages of `batch` (they have arrived, in order): their
    /// dedup mutations under the log's lock, held once for the batch, then
    /// the rest of each page without it. Without a log: page by page.
    pub(super) fn decide_batch(&mut self, batch: Vec<Fetched>) -> Result<()> {
        if !self.dedup.is_shared() {
            for mut f in batch {
                let pre = self.prejudge(&mut f)?;
                self.handle(f, pre)?;
            }
            return Ok(());
        }
        let mut batch = batch;
        self.dedup.begin()?;
        let mut pres = Vec::with_capacity(batch.len());
        let mut result = self.forget_asked_ghosts().and_then(|()| self.prefetch(&batch));
        if result.is_ok() {
            for f in batch.iter_mut() {
                match self.prejudge(f) {
                    Ok(p) => pres.push(p),
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
        // Appended also after a failure: the mutations happened.
        let ended = self.dedup.end();
        result?;
        ended?;
        for (h, fp) in self.dedup.take_learned() {
            self.shared.known.insert(&h, fp, None);
        }
        for (f, pre) in batch.into_iter().zip(pres) {
            self.handle(f, pre)?;
        }
        Ok(())
    }

    /// Under the lock: the candidates of the batch's fingerprints, fetched
    /// from the shared tables in one call (see [`SharedReplica::prefetch`]).
    fn prefetch(&mut self, batch: &[Fetched]) -> Result<()> {
        let fps: Vec<u64> = batch
            .iter()
            .filter_map(|f| match &f.kind {
                FetchedKind::Page(a) => Some(a.simhash),
                _ => None,
            })
            .collect();
        if fps.is_empty() {
            return Ok(());
        }
        // The pages' hashes, and a revisit's previous content's.
        let hashes = batch.iter().flat_map(|f| {
            let page = match &f.kind {
                FetchedKind::Page(a) => Some((Some(&a.hashes.body), Some(&a.hashes.text))),
                _ => None,
            };
            let previous = f
                .previous
                .as_deref()
                .map(|p| (p.content_hash.as_ref(), p.text_hash.as_ref()));
            page.into_iter().chain(previous)
        });
        let store = self.shared.frontier.store().clone();
        self.dedup
            .prefetch(&fps, hashes, |id| -> Result<bool> { Ok(store.page(id)?.is_some()) })
    }

    /// The dedup part of a page: its id, a revisit's previous content
    /// forgotten, young pages re-fingerprinted, the page decided. Shared,
    /// under the log's lock.
    pub(super) fn prejudge(&mut self, f: &mut Fetched) -> Result<Pre> {
        let shared = self.shared.clone();
        // A revisit is recorded under the id of the page it revisits.
        let id = f.q.revisit.unwrap_or_else(|| shared.frontier.allocate_page_id());
        let previous = f.previous.as_deref();
        let mut judged = None;
        match &f.kind {
            FetchedKind::Outcome { .. } | FetchedKind::Redirect { .. } => self.forget_previous(id, previous)?,
            FetchedKind::NotModified => {}
            FetchedKind::Page(a) => {
                let kept = previous.and_then(|p| revisit_change(&shared.settings, p, a).1);
                if let (Some(p), None) = (previous, kept) {
                    self.dedup
                        .replica_mut()
                        .forget(id, p.content_hash.as_ref(), p.text_hash.as_ref())
                        .map_err(|e| Error::io(self.dedup.replica().sketch_path(), e))?;
                }
                if !a.noindex && kept.is_none() {
                    self.refresh_provisional(&a.template)?;
                    let j = self
                        .dedup
                        .replica_mut()
                        .decide(id, &f.q.host, &f.q.canonical, &a.hashes, a.simhash, a.sketch.as_ref())
                        .map_err(|e| Error::io(self.dedup.replica().sketch_path(), e))?;
                    if j.ruling.verdict != Verdict::ExactDuplicate {
                        // This page now owns its hashes: later copies of it
                        // can skip their fingerprint.
                        shared.known.insert(&a.hashes, a.simhash, a.relevance);
                    }
                    judged = Some(j);
                }
            }
        }
        Ok(Pre { id, judged })
    }

    /// The ghosts asked for since the last batch, forgotten (under the
    /// lock, see [`Ghosts`]).
    fn forget_asked_ghosts(&mut self) -> Result<()> {
        match self.shared.ghosts.take() {
            None => Ok(()),
            Some(None) => self.forget_ghosts_held(None).map(|_| ()),
            Some(Some(hosts)) => {
                for h in hosts {
                    self.forget_ghosts_held(Some(&h))?;
                }
                Ok(())
            }
        }
    }

    /// Record that the store holds no page under these ids, whose records
    /// are in a log (see [`crate::crawllog::VOIDED_FILE`]).
    fn void(&mut self, ids: &[PageId]) -> Result<()> {
        self.voided
            .void(ids)
            .map_err(|e| Error::io(self.voided.path().to_path_buf(), e))
    }

    /// Forget the ghosts of `host` (every host: `None`) now, taking the
    /// log's lock for it; returns how many. Nothing without a log. (On the
    /// decider's thread; other threads ask through [`Ghosts`].)
    #[allow(dead_code)]
    pub(super) fn forget_ghosts(&mut self, host: Option<&str>) -> Result<usize> {
        if !self.dedup.is_shared() {
            return Ok(0);
        }
        self.dedup.begin()?;
        let n = self.forget_ghosts_held(host);
        self.dedup.end()?;
        n
    }

    /// [`Decider::forget_ghosts`] with the lock held.
    fn forget_ghosts_held(&mut self, host: Option<&str>) -> Result<usize> {
        let store = self.shared.frontier.store().clone();
        let own: HashSet<PageId> = self.group_ids().collect();
        let ghosts = self.dedup.replica_mut().forget_ghosts(host, |id| -> Result<Fate> {
            Ok(if own.contains(&id) {
                Fate::Pending
            } else if store.page(id)?.is_some() {
                Fate::Recorded
            } else {
                Fate::Ghost
            })
        })?;
        // Their lines, in the stopped worker's log, are left out of the
        // reports (a ghost's URL is fetched again, under a new id).
        self.void(&ghosts)?;
        if !ghosts.is_empty() {
            tracing::info!(
                "decision log: {} pages of {} decided by a worker that stopped before recording them are forgotten",
                ghosts.len(),
                host.unwrap_or("every host")
            );
        }
        Ok(ghosts.len())
    }
}
