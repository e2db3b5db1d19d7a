//! The decider: the one thread that owns the near-duplicate index and the
//! exact-hash maps. It decides each page in arrival order, offers its
//! out-links, writes its crawl-log line and commits pages to the store in
//! groups. With `output.warc` it hands each page's WARC records (and body)
//! to the writer thread ([`crate::warc::WarcThread`]) as soon as the page is
//! decided, and a group's commit waits for the writer's acknowledgements
//! and records where each body is ([`BodyRef`]) in the same store batch.

use super::kept::KeptFile;
use super::provisional::YoungSite;
use super::shared_dedup::Pre;
use super::tally::UrlTally;
use super::warc_entry::warc_entry;
use super::*;
use crate::dedup::SharedReplica;
use crate::host::host_key;

/// Pages decided and not yet committed, at most this many.
pub(super) const GROUP_MAX: usize = 256;
/// How long a group stays open for more pages after its first arrived (a
/// page's store record waits at most this much longer; its fetch slot does
/// not wait, and it is decided, indexed and its out-links offered as soon as
/// the decider takes it). Each commit costs the store a journal write and
/// wake-ups of its threads, whatever its size: 20 ms instead of 2 ms cut
/// the crawler's CPU per page by about 6% in `simcrawl bench crawl`
/// (docs/benchmarks.md). A `kill -9` loses at most this much more decided
/// work, which resume fetches again.
pub(super) const GROUP_WAIT: Duration = Duration::from_millis(20);

/// The next page of a group opened at `opened`: one waiting in the channel,
/// or one arriving before the group is [`GROUP_WAIT`] old. The group is held
/// open a little because each commit is a store batch (a log write and a
/// sync request of its own). The decider thread sleeps until a page arrives
/// or the group's time is up (`timer`: the decider's own runtime, which
/// only keeps that timer), so an idle decider costs no wake-ups, and a busy
/// one finds its pages waiting.
pub(super) fn next_in_group(
    rx: &mut mpsc::Receiver<Fetched>,
    opened: std::time::Instant,
    timer: &tokio::runtime::Runtime,
) -> Option<Fetched> {
    match rx.try_recv() {
        Ok(f) => Some(f),
        Err(mpsc::error::TryRecvError::Disconnected) => None,
        Err(mpsc::error::TryRecvError::Empty) => {
            let left = GROUP_WAIT.checked_sub(opened.elapsed())?;
            timer.block_on(async { tokio::time::timeout(left, rx.recv()).await.ok().flatten() })
        }
    }
}

/// A decided page waiting for its group's commit.
pub(super) struct Done {
    pub(super) q: QueuedUrl,
    pub(super) page: StoredPage,
    /// Where its body is in the WARC files (filled in at the commit).
    pub(super) body: Option<BodyRef>,
}

/// The parts of a [`StoredPage`] its [`PageRecord`] holds only as text.
#[derive(Default)]
pub(super) struct StoredParts {
    content_hash: Option<[u8; 32]>,
    text_hash: Option<[u8; 32]>,
    simhash: Option<u64>,
    dup_of: Option<PageId>,
}

impl StoredParts {
    /// The store's record of page `id`: the log record's fields and these.
    fn page(self, id: PageId, rec: &PageRecord, fetched_at_ms: u64) -> StoredPage {
        StoredPage {
            id,
            canonical: rec.canonical.clone(),
            final_url: rec.final_url.clone(),
            status: rec.status,
            depth: rec.depth,
            decision: rec.decision,
            dup_of: self.dup_of,
            distance: rec.distance,
            simhash: self.simhash,
            content_hash: self.content_hash,
            text_hash: self.text_hash,
            fetched_at_ms,
            bytes: rec.bytes,
            revisit: Default::default(),
        }
    }
}

/// The single owner of the index and the exact-hash maps.
pub(super) struct Decider {
    pub(super) shared: Arc<Shared>,
    /// The embedder's per-page callback.
    on_page: Option<PageCallback>,
    /// The crawl log, flushed before each group's store commit.
    log: CrawlLogWriter<std::io::BufWriter<std::fs::File>>,
    /// Page ids of logged records the store will not hold (see
    /// [`crate::crawllog::VOIDED_FILE`]).
    pub(super) voided: crate::crawllog::VoidedWriter,
    /// Decided pages waiting for the commit (see [`Decider::run`]).
    pub(super) group: Vec<Done>,
    /// The exact and near-duplicate indexes and the content sketches, over
    /// the crawl's shared decision log when the store has one
    /// (`shared_dedup.rs`).
    pub(super) dedup: SharedReplica,
    policy: DedupPolicyEngine,
    mirrors: OnlineMirrors,
    /// Where the mirror detector's pages on disk are (`DIR/index/`).
    spill: PathBuf,
    /// The new pages of young hosts and sections, per site, re-fingerprinted
    /// when their template changes.
    pub(super) provisional: HashMap<String, YoungSite>,
    pub(super) provisional_len: usize,
    /// Their prepared words, on disk, and a buffer to read one back.
    pub(super) kept: KeptFile,
    pub(super) kept_buf: Vec<u8>,
    /// Redirect source → target (canonical), and hops leading to a URL.
    redirects: HashMap<String, String>,
    hops: HashMap<String, u32>,
    /// New URLs not enqueued because their parent was a duplicate (`drop`).
    dropped: UrlTally,
    /// URLs enqueued with a duplicate penalty (`deprioritize`; a URL is
    /// enqueued once, so a count).
    demoted: u64,
    /// URLs demoted because their host is an established mirror.
    mirror_demoted: UrlTally,
    /// Out-links not enqueued by `focus.min_relevance`.
    focus_cut: u64,
    /// Focused crawls: the host and URL-word relevance learned so far.
    evidence: Option<focus::Evidence>,
    /// Scratch space of [`focus::Evidence::url_relevance`].
    url_words: Vec<u64>,
    /// Pages whose fingerprint was reused from an exact original.
    reused: u64,
    /// Young pages fingerprinted again as their template changed, and
    /// those of them that took back the fingerprint they had before
    /// (`refresh_provisional`).
    pub(super) refingerprinted: u64,
    pub(super) taken_back: u64,
    /// The store directory, and when the decider last flushed the store
    /// and wrote its page count there (see [`write_flush_mark`]).
    store_dir: PathBuf,
    flushed_at: std::time::Instant,
    /// Lengths of same-host duplicate chains (`[dedup] max_duplicate_chain`).
    dup_chains: DupChains,
    /// The WARC writer (`output.warc`), fed as pages are decided.
    warc: Option<WarcThread>,
    /// Pages handed to the WARC writer and not acknowledged yet.
    warc_unacked: usize,
    /// Records in the log (all runs) per decision, and their body bytes.
    logged: LogCounts,
}

/// Records of the crawl log counted as they are written (the crawl's
/// summary needs no second read of the log).
#[derive(Debug, Clone, Default)]
pub(super) struct LogCounts {
    pub(super) by_decision: HashMap<Decision, u64>,
    pub(super) records: u64,
    pub(super) bytes: u64,
}

impl LogCounts {
    fn add(&mut self, r: &PageRecord) {
        *self.by_decision.entry(r.decision).or_default() += 1;
        self.records += 1;
        self.bytes += r.bytes;
    }
}

/// What the decider leaves for the crawl summary.
pub(super) struct Decided {
    /// The index in memory, to snapshot (`None`: its tables are in the
    /// store).
    pub(super) index: Option<LiveIndex>,
    /// Fingerprints indexed.
    pub(super) index_len: usize,
    dropped: UrlTally,
    demoted: u64,
    mirror_demoted: UrlTally,
    /// `focus.on_topic` and the links cut by `min_relevance`, when focused.
    focus: Option<(f64, u64)>,
    /// Pages whose fingerprint was reused from an exact original.
    reused: u64,
    /// Young pages fingerprinted again, and those that took back a
    /// fingerprint they had.
    refingerprinted: u64,
    taken_back: u64,
    /// The log's records (all runs).
    pub(super) logged: LogCounts,
}

impl Decided {
    /// What dedup did to the crawl, counted at its end: links of duplicates
    /// dropped and never fetched; links of duplicates enqueued with a penalty;
    /// URLs demoted as mirror copies and never fetched.
    pub(super) fn stats(&mut self, store: &dyn Store) -> Result<CrawlStats> {
        let dir = self.dropped.dir().to_path_buf();
        let io = |e| Error::io(&dir, e);
        let dropped = self.dropped.count(|u| Ok(store.url_state(u)?.is_none()), io)?;
        let mirror_saved = self
            .mirror_demoted
            .count(|u| Ok(!matches!(store.url_state(u)?, Some(UrlState::Done(_)))), io)?;
        Ok(CrawlStats {
            dup_links_dropped: Some(dropped),
            dup_links_demoted: Some(self.demoted),
            mirror_fetches_saved: Some(mirror_saved),
            focus_on_topic: self.focus.map(|f| f.0),
            focus_links_cut: self.focus.map(|f| f.1),
            fingerprints_reused: Some(self.reused),
            refingerprints: Some(self.refingerprinted),
            refingerprints_taken_back: Some(self.taken_back),
        })
    }
}

impl Decider {
    pub(super) fn new(
        shared: Arc<Shared>,
        log_path: &Path,
        previous: &[PageRecord],
        loaded: DedupState,
        on_page: Option<PageCallback>,
        warc: Option<WarcThread>,
    ) -> Result<Self> {
        let s = &shared.settings;
        let spill = loaded.spill.clone();
        let dedup = super::shared_dedup::open_replica(s, shared.frontier.store().as_ref(), loaded)?;
        let mut mirrors = OnlineMirrors::spilling(&s.mirror, &spill, crate::mirror::ONLINE_MEM_PAGES);
        let mut redirects = HashMap::new();
        let mut dup_chains = DupChains::new(&spill);
        let mut logged = LogCounts::default();
        let mut evidence = s.focus.enabled.then(|| {
            focus::Evidence::with_host_memory(s.focus.on_topic, s.focus.on_topic_quantile, s.focus.host_memory)
        });
        for r in previous {
            logged.add(r);
            if let (Some(e), Some(rel)) = (evidence.as_mut(), r.relevance) {
                if let Ok(u) = Url::parse(&r.final_url) {
                    e.observe(&u, &host_key(&u), rel, r.decision.is_duplicate());
                }
            }
            mirrors.observe(r).map_err(|e| Error::io(&spill, e))?;
            if r.decision == Decision::Redirect {
                redirects.insert(r.canonical.clone(), r.final_url.clone());
            }
            dup_chains.record(r).map_err(|e| Error::io(&spill, e))?;
        }
        if let Some(e) = &evidence {
            for (host, r) in e.host_relevances() {
                shared.frontier.set_host_relevance(host, r)?;
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(|e| Error::io(log_path, e))?;
        shared.metrics.set_index_size(dedup.replica().index_len());
        let dropped = UrlTally::new(&spill).map_err(|e| Error::io(&spill, e))?;
        let mirror_demoted = UrlTally::new(&spill).map_err(|e| Error::io(&spill, e))?;
        let kept = KeptFile::new(&spill).map_err(|e| Error::io(&spill, e))?;
        Ok(Decider {
            log: CrawlLogWriter::new(std::io::BufWriter::with_capacity(1 << 20, file)),
            voided: crate::crawllog::VoidedWriter::beside(log_path),
            group: Vec::with_capacity(GROUP_MAX),
            dedup,
            policy: DedupPolicyEngine::new(s),
            mirrors,
            spill,
            redirects,
            provisional: HashMap::new(),
            provisional_len: 0,
            kept,
            kept_buf: Vec::new(),
            hops: HashMap::new(),
            dropped,
            demoted: 0,
            mirror_demoted,
            focus_cut: 0,
            evidence,
            url_words: Vec::new(),
            reused: 0,
            refingerprinted: 0,
            taken_back: 0,
            store_dir: log_path.with_file_name(CrawlDir::STORE_DIR),
            flushed_at: std::time::Instant::now(),
            dup_chains,
            logged,
            on_page,
            warc,
            warc_unacked: 0,
            shared,
        })
    }

    /// Decide pages as they arrive; the pages waiting in the channel or
    /// arriving within [`GROUP_WAIT`] of the first (up to [`GROUP_MAX`]) are
    /// decided one by one and then committed together. With a shared
    /// decision log, the pages that have arrived are decided as one batch
    /// under the log's lock ([`Decider::decide_batch`]), and the lock is
    /// released before the group waits for more.
    pub(super) fn run(mut self, mut rx: mpsc::Receiver<Fetched>) -> Result<Decided> {
        let timer = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| Error::io("decider timer", e))?;
        let mut result = Ok(());
        let batched = self.dedup.is_shared();
        while let Some(first) = rx.blocking_recv() {
            let opened = std::time::Instant::now();
            let mut n = 0;
            let mut next = Some(first);
            while let Some(f) = next.take() {
                let mut batch = vec![f];
                while batched && n + batch.len() < GROUP_MAX {
                    match rx.try_recv() {
                        Ok(f) => batch.push(f),
                        Err(_) => break,
                    }
                }
                n += batch.len();
                if result.is_ok() {
                    result = self.decide_batch(batch);
                }
                if n < GROUP_MAX {
                    next = next_in_group(&mut rx, opened, &timer);
                }
            }
            if result.is_ok() {
                result = self.commit();
                if let Err(e) = &result {
                    tracing::error!("recording a page failed: {e}");
                    self.shared.failed.store(true, Ordering::Relaxed);
                }
            }
            self.group.clear();
            self.shared.in_flight.fetch_sub(n, Ordering::AcqRel);
            self.shared.wake.notify_one();
        }
        // The writer writes what is queued and closes its file, also
        // after a failure (the pages recorded so far stay readable).
        let warc = self.warc.take().map(WarcThread::finish);
        result?;
        if let Some(stats) = warc.transpose()? {
            tracing::info!(
                "WARC: {} records ({} responses, {} revisits) in {} files, {} bytes",
                stats.records,
                stats.responses,
                stats.revisits,
                stats.files,
                stats.bytes
            );
        }
        let (holds, applied) = self.dedup.counts();
        if self.dedup.is_shared() {
            tracing::info!("decision log: {holds} lock holds; {applied} entries read back (replay, other workers' decisions, commit markers)");
        }
        Ok(Decided {
            index_len: self.dedup.replica().index_len(),
            index: self.dedup.into_replica().into_index(),
            mirror_demoted: self.mirror_demoted,
            focus: self.shared.focus.is_some().then_some((
                self.evidence
                    .as_ref()
                    .map_or(self.shared.settings.focus.on_topic, |e| e.threshold()),
                self.focus_cut,
            )),
            dropped: self.dropped,
            demoted: self.demoted,
            reused: self.reused,
            refingerprinted: self.refingerprinted,
            taken_back: self.taken_back,
            logged: self.logged,
        })
    }

    /// The canonical URL of page `id`: decided and not committed yet (by
    /// this worker or, with a shared log, another), or recorded.
    pub(super) fn url_of(&self, id: PageId) -> Result<Option<String>> {
        if let Some(u) = self.dedup.replica().url_of(id) {
            return Ok(Some(u.to_string()));
        }
        if let Some(d) = self.group.iter().find(|d| d.page.id == id) {
            return Ok(Some(d.page.canonical.clone()));
        }
        Ok(self.shared.frontier.store().page(id)?.map(|p| p.canonical))
    }

    /// The pages of the group (decided, not committed yet).
    pub(super) fn group_ids(&self) -> impl Iterator<Item = PageId> + '_ {
        self.group.iter().map(|d| d.page.id)
    }

    /// A page whose dedup part is done (`pre`, [`Decider::prejudge`]): its
    /// record, out-links, WARC records, and its place in the group.
    pub(super) fn handle(&mut self, mut f: Fetched, pre: Pre) -> Result<()> {
        let shared = self.shared.clone();
        let frontier = &shared.frontier;
        let id = pre.id;
        let previous = f.previous.take();
        let q = &f.q;
        let mut rec = PageRecord {
            url: q.canonical.clone(),
            href: (q.url != q.canonical).then(|| q.url.clone()),
            canonical: q.canonical.clone(),
            final_url: f.final_url.clone(),
            status: f.status,
            depth: q.depth,
            parent: q.parent.clone(),
            fetched_at: rfc3339(f.fetched_at),
            bytes: f.bytes,
            content_type: f.content_type.clone(),
            priority: q.priority,
            score: q.components.clone(),
            latency_ms: f.latency_ms,
            delay_ms: f.delay_ms,
            robots: f.robots.map(str::to_string),
            server_ip: f.server_ip.map(|ip| ip.to_string()),
            ip_wait_ms: f.ip_wait_ms,
            page_id: Some(id),
            ..PageRecord::default()
        };
        // What the store keeps beside the record's fields (binary hashes
        // and ids where the record has hex strings and URLs).
        let mut stored = StoredParts::default();
        let mut body = None;
        let mut offers: Vec<Candidate> = Vec::new();
        let is_page = matches!(f.kind, FetchedKind::Page(_));
        let not_modified = matches!(f.kind, FetchedKind::NotModified);
        let mut capture = f.capture;
        let mut change = None;
        match f.kind {
            FetchedKind::Outcome {
                decision,
                error,
                body_hash,
            } => {
                rec.decision = decision;
                rec.error = error;
                rec.content_hash = body_hash.as_ref().map(dedup::hex);
            }
            FetchedKind::Redirect { target, location } => {
                rec.decision = Decision::Redirect;
                rec.error = self.redirect(q, target, location, &mut offers);
            }
            FetchedKind::NotModified => change = Some(self.not_modified(previous.as_deref(), &mut rec)?),
            FetchedKind::Page(a) => {
                let prev = previous.as_deref();
                let judged = (pre.judged, &mut change);
                body = self.page(id, q, *a, prev, &mut rec, &mut stored, &mut offers, judged)?
            }
        }
        let validators = std::mem::take(&mut f.validators);
        let revisit = q
            .revisit
            .map(|_| revisit_state(&shared.settings, previous.as_deref(), change, not_modified, &validators));
        if let Some(r) = &revisit {
            rec.revisit = Some(r.fetches);
            rec.change = r.change;
            rec.interval_secs = Some(r.interval_secs);
        }
        if !offers.is_empty() {
            let results = frontier.offer_many(&offers)?;
            rec.outlinks = results.iter().filter(|o| **o == Offer::Enqueued).count() as u32;
            for (c, o) in offers.iter().zip(&results) {
                if *o == Offer::Enqueued && c.parent_dup != ParentDup::None {
                    self.demoted += 1;
                }
            }
        }
        // The host's next URL is chosen now, with this page's links in,
        // rather than after the group's commit (up to GROUP_WAIT later): with
        // politeness delays off, a host would otherwise wait for each commit.
        frontier.decided(&f.q)?;
        shared.wake.notify_one();
        // Log first (buffered), then commit with the group: see the module
        // docs on crash safety.
        self.log
            .write(&rec)
            .map_err(|e| Error::io(PathBuf::from(CrawlDir::LOG_FILE), e))?;
        self.logged.add(&rec);
        self.mirrors.observe(&rec).map_err(|e| Error::io(&self.spill, e))?;
        // Counted with its log line, before the callback: a scrape from
        // the callback sees this record counted.
        self.shared.metrics.record_page(
            rec.decision,
            rec.status,
            rec.ip_wait_ms.is_some(),
            rec.latency_ms,
            rec.bytes,
        );
        if let Some(on_page) = &self.on_page {
            on_page(&rec);
        }
        let page = stored_page(
            stored.page(id, &rec, now_ms(f.fetched_at)),
            previous.filter(|_| not_modified),
            revisit,
            validators,
        );
        if let Some(w) = self.warc.as_mut() {
            // A parsed page's body came back from the analysis; any other
            // response's body is in its capture.
            let body = if is_page {
                body
            } else {
                capture.as_mut().map(|c| std::mem::take(&mut c.body))
            };
            // A full queue makes the decider wait for the writer.
            w.send(warc_entry(id, &rec, f.fetched_at, f.server_ip, capture, body))?;
            self.warc_unacked += 1;
        }
        self.group.push(Done {
            q: f.q,
            page,
            body: None,
        });
        Ok(())
    }

    /// A parsed page: its content verdict (none for `noindex`), the
    /// duplicate chain it extends, and its out-links offered or dropped by
    /// the dedup policy. Returns the body to store.
    #[allow(clippy::too_many_arguments)]
    fn page(
        &mut self,
        id: PageId,
        q: &QueuedUrl,
        mut a: Analysis,
        previous: Option<&StoredPage>,
        rec: &mut PageRecord,
        stored: &mut StoredParts,
        offers: &mut Vec<Candidate>,
        (judged, change): (Option<dedup::Judgement>, &mut Option<crate::model::Change>),
    ) -> Result<Option<Vec<u8>>> {
        let shared = self.shared.clone();
        let s = &shared.settings;
        self.reused += u64::from(a.reused);
        rec.content_hash = Some(a.hashes.body_hex());
        rec.text_hash = Some(a.hashes.text_hex());
        rec.relevance = a.relevance;
        stored.content_hash = Some(a.hashes.body);
        stored.text_hash = Some(a.hashes.text);
        let body = a.body.take();
        // A noindex page gets no content verdict (it is not
        // fingerprinted) and passes no duplicate status on.
        // A revisit: what changed, and whether the page is decided again
        // (the same body or text keeps its previous verdict).
        let kept = match previous {
            Some(prev) => self.revisit_page(prev, &a, rec, change),
            None => None,
        };
        let ruling = if a.noindex {
            None
        } else if let Some(r) = kept {
            rec.simhash = Some(simhash::to_hex(a.simhash));
            stored.simhash = Some(a.simhash);
            Some(r)
        } else {
            rec.simhash = Some(simhash::to_hex(a.simhash));
            stored.simhash = Some(a.simhash);
            // Decided (and young pages re-fingerprinted) by `prejudge`.
            let judged = judged.ok_or_else(|| Error::Internal(format!("page {id} was not decided")))?;
            let r = judged.ruling;
            // A new page with an earlier page's very fingerprint
            // looks like it (a link in a duplicate chain, see
            // `DupChains`).
            if let Some(of) = judged.looks_like {
                rec.looks_like = self.url_of(of)?;
            }
            if previous.is_none() {
                self.keep_provisional(id, &mut a, r.decision())?;
            }
            Some(r)
        };
        let decision = ruling.map_or(Decision::from(FetchOutcome::Noindex), |r| r.decision());
        rec.decision = decision;
        if let (Some(e), Some(rel)) = (self.evidence.as_mut(), a.relevance) {
            // By the frontier's host key (not the template key `a.host`);
            // the URLs already queued then learn what this page taught.
            if let Ok(u) = Url::parse(&rec.final_url) {
                let host = host_key(&u);
                e.observe(&u, &host, rel, decision.is_duplicate());
                shared.frontier.set_host_relevance(&host, e.host_relevance(&host))?;
                let words = &mut self.url_words;
                let mut rescore = |canonical: &str| Some(e.url_relevance_of(canonical, words));
                shared.frontier.rescore(&host, focus::RESCORE_PER_PAGE, &mut rescore)?;
            }
        }
        if let Some(r) = ruling {
            rec.distance = r.distance;
            rec.resemblance = r.resemblance;
            stored.dup_of = r.dup_of;
            if let Some(of) = r.dup_of {
                rec.dup_of = self.url_of(of)?;
            }
        }
        let chain = self.dup_chains.record(rec).map_err(|e| Error::io(&self.spill, e))?;
        let max_chain = s.dedup.max_duplicate_chain;
        let chain_cut = max_chain > 0 && chain >= max_chain;
        if chain_cut {
            rec.error = Some(format!(
                "out-links not followed: {chain} same-host duplicates or look-alikes in a row ([dedup] max_duplicate_chain)"
            ));
        }
        let follow = match ruling {
            _ if a.nofollow || chain_cut => None,
            Some(r) => self.policy.out_links(&r),
            None => Some(ParentDup::None),
        };
        match follow {
            Some(pd) => {
                let relevance = a.relevance.unwrap_or(0.0);
                let parent = focus::Parent {
                    relevance,
                    component: q.components.relevance,
                    tunnel: q.tunnel,
                    duplicate: decision.is_duplicate(),
                    on_topic: self.evidence.as_ref().is_some_and(|e| e.on_topic(relevance)),
                };
                self.offer_links(q, pd, parent, a.links, offers)?;
            }
            None if decision.is_duplicate() && (s.dedup.policy == DedupPolicy::Drop || chain_cut) => {
                let store = shared.frontier.store();
                for (u, _, _) in a.links {
                    if store.url_state(u.as_str())?.is_none() {
                        self.dropped.insert(u.as_str()).map_err(|e| Error::io(&self.spill, e))?;
                    }
                }
            }
            None => {}
        }
        Ok(body)
    }

    /// A redirect hop: offer its target in the redirecting URL's place,
    /// unless it points at itself, closes a loop or is one hop too many
    /// (then the reason, for the record's `error`).
    fn redirect(
        &mut self,
        q: &QueuedUrl,
        target: Url,
        location: String,
        offers: &mut Vec<Candidate>,
    ) -> Option<String> {
        let max_redirects = self.shared.settings.fetch.max_redirects;
        let mut error = None;
        let hops = self.hops.get(&q.canonical).copied().unwrap_or(0) + 1;
        let target_s = target.as_str().to_string();
        if target_s == q.canonical {
            error = Some("redirect to itself".into());
        } else if let Some(cycle) = self.cycle(&q.canonical, &target_s) {
            error = Some(format!("redirect loop: {cycle}"));
        } else if hops > max_redirects {
            error = Some(format!("more than fetch.max_redirects ({}) redirects", max_redirects));
        } else {
            self.hops.insert(target_s.clone(), hops);
            let mut c = Candidate::new(target, q.depth);
            c.parent = q.parent.clone();
            // The target stands in for the redirecting URL.
            c.relevance = q.components.relevance;
            c.host_relevance = q.components.host_relevance;
            c.url_relevance = q.components.url_relevance;
            c.tunnel = q.tunnel;
            c.discovered = Some(location);
            offers.push(c);
        }
        self.redirects.insert(q.canonical.clone(), target_s);
        error
    }

    /// Offer a page's out-links with the duplicate status `pd` it passes on,
    /// their topic relevance (focused crawls: links under
    /// `focus.min_relevance` are cut) and the mirror penalty of their host.
    fn offer_links(
        &mut self,
        q: &QueuedUrl,
        pd: ParentDup,
        parent: focus::Parent,
        links: Vec<(Url, String, f64)>,
        offers: &mut Vec<Candidate>,
    ) -> Result<()> {
        for (u, written, anchor) in links {
            let mut c = Candidate::link(u, q, pd);
            if let Some(f) = &self.shared.focus {
                match f.out_link(parent, anchor) {
                    Some(ls) => {
                        c.relevance = ls.relevance;
                        c.tunnel = ls.tunnel;
                        if let Some(e) = &self.evidence {
                            c.host_relevance = e.host_relevance(&host_key(&c.url));
                            c.url_relevance = e.url_relevance(&c.url, &mut self.url_words);
                        }
                    }
                    None => {
                        tracing::trace!("focus: {} not enqueued (min_relevance)", c.url);
                        self.focus_cut += 1;
                        continue;
                    }
                }
            }
            if written != c.url.as_str() {
                c.discovered = Some(written);
            }
            c.mirror = self
                .mirrors
                .penalty_for(c.url.as_str())
                .map_err(|e| Error::io(&self.spill, e))?
                .is_some();
            if c.mirror {
                self.mirror_demoted
                    .insert(c.url.as_str())
                    .map_err(|e| Error::io(&self.spill, e))?;
            }
            offers.push(c);
        }
        Ok(())
    }

    /// Append the group's log lines, then record its pages in one store batch.
    pub(super) fn commit(&mut self) -> Result<()> {
        if self.group.is_empty() {
            return Ok(());
        }
        self.log
            .flush()
            .map_err(|e| Error::io(PathBuf::from(CrawlDir::LOG_FILE), e))?;
        // Where the group's bodies are: the writer acknowledges its pages in
        // the order they were sent, which is the group's order.
        if let Some(w) = self.warc.as_mut() {
            let mut at = 0;
            while self.warc_unacked > 0 {
                let (id, body) = w.ack()?;
                self.warc_unacked -= 1;
                while at < self.group.len() && self.group[at].page.id != id {
                    at += 1;
                }
                if let Some(d) = self.group.get_mut(at) {
                    d.body = body;
                }
            }
        }
        self.complete_group()?;
        let ids: Vec<PageId> = self.group_ids().collect();
        if let Err(e) = self.dedup.committed(&ids) {
            // The records are in the store: a worker that looks for ghosts
            // finds them there.
            tracing::warn!(
                "decision log: the commit marker of {} pages was not appended: {e}",
                ids.len()
            );
        }
        self.shared
            .recorded
            .fetch_add(self.group.len() as u64, Ordering::AcqRel);
        self.shared.metrics.set_index_size(self.dedup.replica().index_len());
        self.group.clear();
        if self.flushed_at.elapsed() >= FLUSH_MARK_EVERY {
            let store = self.shared.frontier.store();
            store.flush()?;
            write_flush_mark(&self.store_dir, store.as_ref());
            self.flushed_at = std::time::Instant::now();
        }
        Ok(())
    }

    /// The redirect cycle closed by `from → to`, if any.
    pub(super) fn cycle(&self, from: &str, to: &str) -> Option<String> {
        let mut path = vec![from.to_string(), to.to_string()];
        let mut cur = to;
        for _ in 0..=self.shared.settings.fetch.max_redirects {
            let next = self.redirects.get(cur)?;
            path.push(next.clone());
            if next == from {
                return Some(path.join(" -> "));
            }
            cur = next;
        }
        None
    }
}
