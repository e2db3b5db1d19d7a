//! The crawl loop (pipeline: joins every stage). Workers take URLs from the
//! frontier, fetch them politely, parse, fingerprint, decide (new / exact /
//! near duplicate), store the result and push out-links back to the frontier.
//!
//! Three kinds of task, connected by a bounded channel:
//!
//! - **the dispatcher** ([`run`]): asks the [`Frontier`] for the best URL of a
//!   host that is ready, and starts a worker for it, at most
//!   `crawl.concurrency` at a time. It sleeps until the next host is ready or
//!   a worker finishes.
//! - **workers** (one tokio task per URL in flight): robots.txt verdict,
//!   politeness permit, one HTTP request, and then the CPU work (extract,
//!   template learning, features, simhash, content hashes, link resolution) on
//!   the crawl's analysis threads (one per core, `simcrawl-analyze-N`), bounded
//!   to the number of cores so it never starves the async threads.
//!   [`run_blocking`] runs all of this on a runtime of `crawl.io_threads`
//!   async threads (one per four cores by default): with one analysis thread
//!   per core, every further async thread only preempts them.
//! - **the decider** (one OS thread): the only owner of the simhash index and
//!   the exact-hash maps. It decides each page in arrival order, inserts new
//!   fingerprints at once (so the next page sees them), offers its
//!   out-links with their duplicate penalties and writes its crawl-log line.
//!   The pages waiting in the channel, and those arriving within 20 ms of the
//!   first (up to 256), are decided in a row and then recorded in the store
//!   together, in one atomic batch with the queue updates they made (one
//!   commit per group instead of per page and per out-link update; see
//!   [`crate::store::KvStore::combining`]). One writer means no lock on the index
//!   insert path and no race between two copies deciding at the same time.
//!
//! At start the decider's state (exact-duplicate maps and simhash index,
//! `DedupState`) is read on a `simcrawl-load` thread while the frontier
//! reads the seen-set and the queue: on `--resume` these are independent
//! scans of the store of a few seconds per million pages each.
//!
//! Crash safety: a group's log lines are appended before its store batch is
//! committed; on `--resume` log lines whose URL the store does not have as
//! done are dropped, and URLs not recorded (in flight, or decided in an
//! uncommitted group) are still queued in the store. So a `kill -9` at any
//! moment loses no queued URL and records no page twice.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::{mpsc, Notify, Semaphore};
use url::Url;

use crate::canon::{self, Canonicalizer};
use crate::config::{DedupPolicy, Settings};
use crate::crawllog::{self, CrawlLogWriter, PageRecord};
use crate::dedup::{self, ContentHashes, DedupPolicyEngine, ExactIndex, Ruling};
use crate::error::{Error, Result};
use crate::extract::{self, Extracted};
use crate::features::{FeatureExtractor, TemplateLearner};
use crate::fetch::{FetchResponse, Fetcher, HttpFetcher};
use crate::focus::{self, Focus};
use crate::frontier::{Candidate, Frontier, NextUrl, Offer};
use crate::index::{LiveIndex, Match};
use crate::mirror::OnlineMirrors;
use crate::model::{
    CrawlDir, Decision, FetchOutcome, NearMatch, PageId, ParentDup, QueuedUrl, StoredPage, UrlState, Verdict,
};
use crate::politeness::{NotReady, Politeness, RequestOutcome, RetryPolicy, RobotsVerdict};
use crate::report::{self, CrawlStats, ReportPaths};
use crate::simhash;
use crate::sketch::minhash::MinHasher;
use crate::sketch::{ContentSketch, Sketch, SketchIndex};
use crate::store::{SledStore, Store};

/// What to crawl and where to write it.
pub struct CrawlOptions {
    /// Output directory (layout in the README): `store/`, `pages.jsonl`, `reports/`.
    pub out: PathBuf,
    /// Seed URLs (ignored on resume: the store has them).
    pub seeds: Vec<String>,
    /// Continue the crawl stored in `out`.
    pub resume: bool,
    /// Show a progress bar (on a terminal) instead of periodic log lines.
    pub progress: bool,
    /// Use this fetcher instead of HTTP (tests, replay).
    pub fetcher: Option<Arc<dyn Fetcher>>,
}

impl CrawlOptions {
    /// A fresh crawl of `seeds` into `out`.
    pub fn new(out: impl Into<PathBuf>, seeds: Vec<String>) -> Self {
        CrawlOptions {
            out: out.into(),
            seeds,
            resume: false,
            progress: false,
            fetcher: None,
        }
    }
}

/// Why the crawl loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing left to fetch.
    Completed,
    /// `crawl.max_pages` reached.
    MaxPages,
    /// Stopped by the caller (Ctrl-C or SIGTERM in the binary); resumable.
    Interrupted,
}

/// Counts of one crawl run.
#[derive(Debug, Clone)]
pub struct CrawlSummary {
    /// Records written in this run.
    pub pages: u64,
    /// Records in the crawl so far (all runs).
    pub total_pages: u64,
    /// Records per decision (all runs), in `pages.jsonl` spelling.
    pub by_decision: Vec<(String, u64)>,
    /// URLs still queued.
    pub queued: usize,
    /// Why the loop ended.
    pub stop: StopReason,
    /// Wall-clock time of this run.
    pub elapsed: Duration,
    /// Fetches saved by dedup and mirror detection.
    pub stats: CrawlStats,
    /// Reports written (when `[output] reports` is on).
    pub reports: Option<ReportPaths>,
}

impl CrawlSummary {
    /// Records with this decision.
    pub fn count(&self, d: Decision) -> u64 {
        self.by_decision
            .iter()
            .find(|(k, _)| k == d.as_str())
            .map_or(0, |(_, n)| *n)
    }
}

/// The parts of a crawl shared by the dispatcher and the workers.
struct Shared {
    settings: Settings,
    frontier: Frontier,
    politeness: Politeness,
    retry: RetryPolicy,
    fetcher: Arc<dyn Fetcher>,
    canon: Canonicalizer,
    fx: FeatureExtractor,
    templates: TemplateLearner,
    /// Min-hash sketcher when near duplicates are verified.
    verifier: Option<MinHasher>,
    /// The topic profile when `[focus] enabled`.
    focus: Option<Focus>,
    /// The crawl-wide request rate cap (`politeness.max_requests_per_sec`).
    rate: Option<governor::DefaultDirectRateLimiter>,
    /// Body and text hashes already decided, with their simhash: an exact
    /// duplicate's analysis skips features and fingerprint.
    known: dedup::KnownContent,
    /// Threads that parse and fingerprint pages (one per core), so the
    /// per-thread buffers and stem caches of the analysis stay warm and no
    /// page waits on tokio's blocking pool growing or waking threads.
    analysis: rayon::ThreadPool,
    /// URLs handed out and not yet recorded or re-queued.
    in_flight: AtomicUsize,
    /// Records written (all runs).
    recorded: AtomicU64,
    /// Woken when a URL is recorded or re-queued.
    wake: Notify,
    /// Set when the decider failed: stop dispatching.
    failed: AtomicBool,
    /// Requests in flight per server address (`max_in_flight_per_ip`).
    ip_limits: Arc<crate::politeness::ip::IpLimits>,
    /// `fetcher` under `ip_limits`, for robots.txt.
    robots_fetcher: crate::politeness::ip::IpLimitedFetcher,
}

/// What a worker found, for the decider.
struct Fetched {
    q: QueuedUrl,
    fetched_at: SystemTime,
    latency_ms: Option<u64>,
    delay_ms: Option<u64>,
    robots: Option<&'static str>,
    status: u16,
    final_url: String,
    content_type: Option<String>,
    bytes: u64,
    /// The server address of the request, and how long it waited for a
    /// slot of that address (None: no request was sent).
    server_ip: Option<std::net::IpAddr>,
    ip_wait_ms: Option<u64>,
    kind: FetchedKind,
}

enum FetchedKind {
    /// No content to decide on: disallowed, error, too_large, not_html.
    Outcome {
        decision: Decision,
        error: Option<String>,
        body_hash: Option<[u8; 32]>,
    },
    /// A 3xx with a usable target (canonical).
    Redirect { target: Url, location: String },
    /// Parsed content.
    Page(Box<Analysis>),
}

/// Early pages of a host are kept until its template settles (see
/// [`Decider::refresh_provisional`]): at most this many per host...
const PROVISIONAL_PER_HOST: usize = 48;
/// ...and this many in all.
const PROVISIONAL_MAX: usize = 20_000;

/// The CPU work's result for one page.
struct Analysis {
    /// The template-learning key of the page's host.
    host: String,
    /// The parsed page, while its host is young (its template may change),
    /// with the [`block_hash`](crate::features::block_hash) of each of its
    /// blocks and whether the template it was fingerprinted under held it.
    young: Option<(Extracted, Vec<u64>, Vec<bool>)>,
    /// The host template version the fingerprint was computed under.
    template_version: u64,
    hashes: ContentHashes,
    simhash: u64,
    /// `simhash` is an earlier page's with the same body or text
    /// ([`dedup::KnownContent`]): no features were computed.
    reused: bool,
    noindex: bool,
    nofollow: bool,
    /// Canonical out-links, in page order, unique, with how they were written
    /// and their anchor text's topic relevance (0 without focus).
    links: Vec<(Url, String, f64)>,
    relevance: Option<f64>,
    /// Sketch of the page's shingles (`[dedup] verify`), for a page not
    /// known to be an exact duplicate.
    sketch: Option<Sketch>,
    body: Option<Vec<u8>>,
}

fn now_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn rfc3339(t: SystemTime) -> String {
    let ms = now_ms(t);
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Body and text hashes [`dedup::KnownContent`] holds before it starts over
/// (two per page with text; ~50 MB when full).
const KNOWN_CONTENT_MAX: usize = 1 << 20;

/// Read a seeds file: one URL per line, `#` comments and blank lines ignored.
pub fn read_seeds(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// The tokio runtime a crawl runs on: [`crate::config::CrawlSettings::io_threads`]
/// worker threads, named `simcrawl-io`.
pub fn runtime(settings: &Settings) -> Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.crawl.io_threads(cores))
        .thread_name("simcrawl-io")
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))
}

/// Run a crawl to its end on a [`runtime`] of its own, blocking the calling
/// thread: what `simcrawl crawl` and `simcrawl bench crawl` call. The crawl
/// itself (dispatcher included) runs as a task on the runtime's threads, so
/// the calling thread only waits and adds no async thread of its own.
/// `shutdown` is polled on the runtime (it may use `tokio::signal`).
pub fn run_blocking(
    settings: Settings,
    opts: CrawlOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<CrawlSummary> {
    let rt = runtime(&settings)?;
    rt.block_on(async move {
        match tokio::spawn(run(settings, opts, shutdown)).await {
            Ok(r) => r,
            Err(e) => Err(Error::Internal(format!("the crawl task failed: {e}"))),
        }
    })
}

/// Crawl until the frontier is empty, `max_pages` is reached or `shutdown`
/// resolves; then flush the store and write the reports.
pub async fn run(
    settings: Settings,
    opts: CrawlOptions,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<CrawlSummary> {
    let started = std::time::Instant::now();
    let store_dir = opts.out.join(CrawlDir::STORE_DIR);
    let log_path = opts.out.join(CrawlDir::LOG_FILE);
    let snapshot = opts.out.join(CrawlDir::INDEX_SNAPSHOT);
    let canon = Canonicalizer::new(&settings.canon);
    // A start that fails leaves the directory as it was: what can be checked
    // without it is checked before anything is created.
    let seeds = if opts.resume {
        Vec::new()
    } else {
        parse_seeds(&canon, &opts.seeds)?
    };
    if opts.resume && !store_dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{}: no crawl to resume (no store/ in it); start one without --resume",
            opts.out.display()
        )));
    }
    if !opts.resume && store_dir.exists() {
        return Err(Error::InvalidInput(format!(
            "{} already holds a crawl; pass --resume to continue it or choose another --out",
            opts.out.display()
        )));
    }
    let fetcher: Arc<dyn Fetcher> = match opts.fetcher.clone() {
        Some(f) => f,
        None => Arc::new(HttpFetcher::new(&settings)?),
    };
    let focus = if settings.focus.enabled {
        Some(Focus::new(&settings)?)
    } else {
        None
    };
    let created_out = !opts.out.exists();
    let had_log = log_path.exists();
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
    // Resume: the store as it was, put back if it turns out unreadable.
    let backup = if opts.resume {
        Some(StoreBackup::take(&store_dir)?)
    } else {
        None
    };
    let opened = open_crawl(&settings, &opts, &store_dir, &log_path, &snapshot, &seeds);
    let (store, frontier, previous, mut dedup_state, crawl_tag) = match opened {
        Ok(o) => {
            if let Some(b) = backup {
                b.discard();
            }
            o
        }
        Err(e) => {
            match backup {
                Some(b) => b.restore(),
                None => remove_new_crawl(&opts.out, created_out, had_log),
            }
            return Err(e);
        }
    };

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ip_limits = Arc::new(crate::politeness::ip::IpLimits::new(&settings));
    let shared = Arc::new(Shared {
        focus,
        politeness: Politeness::new(&settings),
        retry: RetryPolicy::new(&settings.politeness),
        fetcher: fetcher.clone(),
        fx: feature_extractor(&settings),
        templates: std::mem::replace(&mut dedup_state.templates, TemplateLearner::new(&settings.features)),
        verifier: verifier(&settings),
        canon,
        rate: std::num::NonZeroU32::new(settings.politeness.max_requests_per_sec)
            .map(|n| governor::RateLimiter::direct(governor::Quota::per_second(n))),
        known: dedup::KnownContent::new(KNOWN_CONTENT_MAX),
        analysis: rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("simcrawl-analyze-{i}"))
            .build()
            .map_err(|e| Error::io("analysis threads", std::io::Error::other(e)))?,
        in_flight: AtomicUsize::new(0),
        recorded: AtomicU64::new(previous.len() as u64),
        wake: Notify::new(),
        failed: AtomicBool::new(false),
        robots_fetcher: crate::politeness::ip::IpLimitedFetcher {
            inner: fetcher.clone(),
            limits: ip_limits.clone(),
        },
        ip_limits,
        frontier,
        settings,
    });

    // The decider thread.
    let decider = Decider::new(shared.clone(), &log_path, &previous, dedup_state)?;
    let (tx, rx) = mpsc::channel::<Fetched>(shared.settings.crawl.concurrency * 2);
    let decider_thread = std::thread::Builder::new()
        .name("simcrawl-decider".into())
        .spawn(move || decider.run(rx))
        .map_err(|e| Error::io("decider thread", e))?;

    let progress = Progress::new(opts.progress, shared.settings.crawl.max_pages);
    let stop = dispatch(&shared, tx, shutdown, &progress).await;
    let decider_result = decider_thread.join();
    progress.finish();

    let decided = match decider_result {
        Ok(r) => r?,
        Err(_) => return Err(Error::thread_panicked("decider")),
    };
    shared.frontier.write_pending()?;
    shared.frontier.store().flush()?;
    // Only after the flush: every page id below the watermark is in the store.
    save_index(&decided.index, &snapshot, store.next_page_id(), crawl_tag);
    write_flush_mark(&store_dir, store.as_ref());

    let stats = decided.stats(store.as_ref())?;
    let stats_path = CrawlDir::new(&opts.out).stats();
    let json = serde_json::to_vec_pretty(&stats).map_err(|e| Error::Internal(format!("crawl stats: {e}")))?;
    std::fs::write(&stats_path, json).map_err(|e| Error::io(&stats_path, e))?;

    let records = crawllog::read_log(&log_path)?;
    let reports = if shared.settings.output.reports {
        Some(report::write_all(&opts.out, &records, &shared.settings)?)
    } else {
        None
    };
    let mut by: HashMap<&'static str, u64> = HashMap::new();
    for r in &records {
        *by.entry(r.decision.as_str()).or_default() += 1;
    }
    let mut by_decision: Vec<(String, u64)> = by.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    by_decision.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(CrawlSummary {
        pages: records.len() as u64 - previous.len() as u64,
        total_pages: records.len() as u64,
        by_decision,
        queued: shared.frontier.len(),
        stop,
        elapsed: started.elapsed(),
        stats,
        reports,
    })
}

/// Keep the log lines whose URL the store has as done, once each, and
/// rewrite the log with them (a killed crawl may have logged pages whose
/// store record was lost, or a truncated last line).
fn repair_log(path: &Path, store: &dyn Store) -> Result<Vec<PageRecord>> {
    let records = if path.exists() {
        crawllog::read_log(path)?
    } else {
        Vec::new()
    };
    let mut seen = HashSet::new();
    let mut kept = Vec::with_capacity(records.len());
    for r in records {
        if matches!(store.url_state(&r.canonical)?, Some(UrlState::Done(_))) && seen.insert(r.canonical.clone()) {
            kept.push(r);
        }
    }
    // Every page the store recorded has its line: the lines a damaged or
    // deleted log lost are written again from the store's page records.
    let rebuilt = if (kept.len() as u64) < store.pages_recorded()? {
        let rebuilt = records_from_store(store, &seen)?;
        if !rebuilt.is_empty() {
            tracing::warn!(
                "{}: {} of {} records were missing; rewritten from the store (fields the store does not \
                 keep, such as parent and score, are empty in them)",
                path.display(),
                rebuilt.len(),
                kept.len() + rebuilt.len()
            );
        }
        rebuilt
    } else {
        Vec::new()
    };
    kept.extend(rebuilt);
    let tmp = path.with_extension("jsonl.tmp");
    {
        let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut w = CrawlLogWriter::new(std::io::BufWriter::new(file));
        for r in &kept {
            w.write(r).map_err(|e| Error::io(&tmp, e))?;
        }
        w.flush().map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    Ok(kept)
}

/// The crawl-log records of the store's pages whose canonical URL is not in
/// `have`, in page order, from what the store keeps of each page.
fn records_from_store(store: &dyn Store, have: &HashSet<String>) -> Result<Vec<PageRecord>> {
    let mut urls: HashMap<PageId, String> = HashMap::new();
    let mut missing = Vec::new();
    for page in store.iter_pages() {
        let page = page?;
        urls.insert(page.id, page.canonical.clone());
        if !have.contains(&page.canonical) {
            missing.push(page);
        }
    }
    Ok(missing
        .into_iter()
        .map(|p| PageRecord {
            url: p.canonical.clone(),
            canonical: p.canonical,
            final_url: p.final_url,
            status: p.status,
            depth: p.depth,
            fetched_at: rfc3339(UNIX_EPOCH + Duration::from_millis(p.fetched_at_ms)),
            bytes: p.bytes,
            content_hash: p.content_hash.as_ref().map(dedup::hex),
            text_hash: p.text_hash.as_ref().map(dedup::hex),
            simhash: p.simhash.map(simhash::to_hex),
            decision: p.decision,
            dup_of: p.dup_of.and_then(|id| urls.get(&id).cloned()),
            distance: p.distance,
            ..PageRecord::default()
        })
        .collect())
}

/// The dispatcher: hands ready URLs to workers until done, stopped or failed.
async fn dispatch(
    shared: &Arc<Shared>,
    tx: mpsc::Sender<Fetched>,
    shutdown: impl std::future::Future<Output = ()> + Send,
    progress: &Progress,
) -> StopReason {
    let slots = Arc::new(Semaphore::new(shared.settings.crawl.concurrency));
    let max_pages = shared.settings.crawl.max_pages;
    tokio::pin!(shutdown);
    let mut stop = StopReason::Completed;
    loop {
        progress.tick(shared);
        if shared.failed.load(Ordering::Relaxed) {
            break;
        }
        let inflight = shared.in_flight.load(Ordering::Acquire);
        if max_pages > 0 && shared.recorded.load(Ordering::Acquire) + inflight as u64 >= max_pages {
            stop = StopReason::MaxPages;
            if inflight == 0 {
                break;
            }
            tokio::select! {
                _ = shared.wake.notified() => continue,
                _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
            }
        }
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
        };
        let next = match shared.frontier.next(std::time::Instant::now()) {
            Ok(n) => n,
            Err(e) => {
                tracing::error!("frontier: {e}");
                shared.failed.store(true, Ordering::Relaxed);
                break;
            }
        };
        tracing::trace!("frontier.next: {next:?}");
        let wait_until = match next {
            NextUrl::Ready(q) => {
                shared.in_flight.fetch_add(1, Ordering::AcqRel);
                let (shared, tx) = (shared.clone(), tx.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    work(&shared, q, &tx).await;
                });
                continue;
            }
            NextUrl::Wait(at) => Some(at),
            NextUrl::Busy => None,
            NextUrl::Empty => {
                if shared.in_flight.load(Ordering::Acquire) == 0 {
                    break;
                }
                None
            }
        };
        drop(permit);
        // Sleep until a host is ready or a worker finishes (with a short
        // fallback tick, so a missed wake-up costs at most 50 ms).
        let tick = tokio::time::Instant::now() + Duration::from_millis(50);
        let until = wait_until.map_or(tick, |t| tokio::time::Instant::from_std(t).min(tick));
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep_until(until) => {}
            _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
        }
    }
    // Let in-flight work finish (a second signal is not awaited here: the
    // binary exits on it, and resume re-queues what was in flight).
    let drain_deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while shared.in_flight.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < drain_deadline {
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        progress.tick(shared);
    }
    drop(tx);
    stop
}

/// One URL: robots, permit, fetch, analysis; then to the decider (or back to the frontier).
async fn work(shared: &Arc<Shared>, q: QueuedUrl, tx: &mpsc::Sender<Fetched>) {
    let host = q.host.clone();
    let origin;
    let step = match Url::parse(&q.canonical) {
        Err(e) => {
            origin = None;
            Step::Record(outcome(
                &q,
                Decision::Error,
                0,
                Some(format!("unparseable URL: {e}")),
                None,
            ))
        }
        Ok(url) => {
            origin = Some(Politeness::origin_key(&url));
            fetch_one(shared, &q, &url, tx).await
        }
    };
    // The host may be contacted again when politeness says so (a retry
    // pushes that later, never earlier: `requeue` keeps the later time).
    let ready = origin.map_or_else(std::time::Instant::now, |o| shared.politeness.next_ready(&o).into_std());
    set_host_ready(shared, &host, ready);
    match step {
        Step::Record(f) => {
            if tx.send(f).await.is_err() {
                shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Step::Retry(at) => {
            requeue(shared, &q, at);
            shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            shared.wake.notify_one();
        }
        Step::Analyzing => {}
    }
}

/// Tell the frontier when `host` may be contacted again; a host ready now
/// wakes the dispatcher (it may be waiting for just this host).
fn set_host_ready(shared: &Shared, host: &str, ready: std::time::Instant) {
    if let Err(e) = shared.frontier.set_host_ready(host, ready) {
        tracing::error!("frontier: {e}");
        shared.failed.store(true, Ordering::Relaxed);
    }
    if ready <= std::time::Instant::now() {
        shared.wake.notify_one();
    }
}

fn outcome(
    q: &QueuedUrl,
    decision: Decision,
    status: u16,
    error: Option<String>,
    robots: Option<&'static str>,
) -> Fetched {
    Fetched {
        fetched_at: SystemTime::now(),
        latency_ms: None,
        delay_ms: None,
        robots,
        status,
        final_url: q.canonical.clone(),
        content_type: None,
        bytes: 0,
        server_ip: None,
        ip_wait_ms: None,
        kind: FetchedKind::Outcome {
            decision,
            error,
            body_hash: None,
        },
        q: q.clone(),
    }
}

/// What a worker does with its URL. (Short-lived and moved once: boxing the
/// large variant would cost an allocation per page for nothing.)
#[allow(clippy::large_enum_variant)]
enum Step {
    /// Record this outcome (through the decider).
    Record(Fetched),
    /// Try again, not before this instant (retryable failure).
    Retry(std::time::Instant),
    /// The page went to the analysis threads, which hand the analysed page
    /// to the decider themselves (no hop back through this task).
    Analyzing,
}

/// Robots, permit, request and analysis of one URL.
async fn fetch_one(shared: &Arc<Shared>, q: &QueuedUrl, url: &Url, to_decider: &mpsc::Sender<Fetched>) -> Step {
    use Step::{Record, Retry};
    let s = &shared.settings;
    let mut robots = None;
    if s.politeness.respect_robots {
        match shared.politeness.check(&shared.robots_fetcher, url).await {
            RobotsVerdict::Allow => robots = Some("allow"),
            RobotsVerdict::Disallow => {
                return Record(outcome(
                    q,
                    Decision::Disallowed,
                    0,
                    Some("robots.txt".into()),
                    Some("disallow"),
                ))
            }
            RobotsVerdict::Unavailable { .. } => {
                return Record(outcome(
                    q,
                    Decision::Disallowed,
                    0,
                    Some("robots.txt unavailable (5xx or unreachable); retry in a later run".into()),
                    Some("disallow"),
                ))
            }
        }
    }
    let permit = match shared.politeness.acquire(url).await {
        Ok(p) => p,
        Err(NotReady::Skip(reason)) => {
            return Record(outcome(q, Decision::Disallowed, 0, Some(reason.to_string()), robots))
        }
        Err(NotReady::Wait { until, .. }) => {
            if q.retries < s.politeness.max_retries {
                return Retry(until.into_std());
            }
            return Record(outcome(
                q,
                Decision::Error,
                0,
                Some("host parked after repeated failures".into()),
                robots,
            ));
        }
        Err(NotReady::Busy) => return Retry(std::time::Instant::now()),
    };
    // The host may take its next request when politeness allows (the
    // frontier's in-flight limit still holds); with one request in flight
    // per host this changes nothing, with more it lets them overlap.
    let ready = shared.politeness.next_ready(permit.origin()).into_std();
    set_host_ready(shared, &q.host, ready);
    let delay_ms = Some(permit.delay().as_millis() as u64);
    if let Some(rate) = &shared.rate {
        rate.until_ready().await;
    }
    // One of the server address's slots, held for the request.
    let ip_slot = shared.ip_limits.acquire(url).await;
    let fetched_at = SystemTime::now();
    let result = shared.fetcher.fetch(url).await;
    let outcome_of = RequestOutcome::of(&result);
    permit.finish(&outcome_of);
    let (server_ip, ip_wait_ms) = (ip_slot.ip, ip_slot.waited.as_millis() as u64);
    drop(ip_slot);
    if let Some(wait) = shared.retry.should_retry(&outcome_of, q.retries) {
        return Retry(std::time::Instant::now() + wait);
    }
    let base = |status: u16, latency: Option<u64>, kind: FetchedKind| Fetched {
        q: q.clone(),
        fetched_at,
        latency_ms: latency,
        delay_ms,
        robots,
        status,
        final_url: q.canonical.clone(),
        content_type: None,
        bytes: 0,
        server_ip,
        ip_wait_ms: Some(ip_wait_ms),
        kind,
    };
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            return Record(base(
                0,
                None,
                FetchedKind::Outcome {
                    decision: Decision::Error,
                    error: Some(e.to_string()),
                    body_hash: None,
                },
            ))
        }
    };
    let latency = Some(resp.elapsed.as_millis() as u64);
    let mut f = base(
        resp.status,
        latency,
        FetchedKind::Outcome {
            decision: Decision::Error,
            error: None,
            body_hash: None,
        },
    );
    f.content_type = resp.content_type.clone();
    f.bytes = resp.body.len() as u64;
    if resp.is_redirect() {
        let target = resp
            .location
            .as_deref()
            .map(|loc| (loc.to_string(), shared.canon.resolve(url, loc)));
        f.kind = match target {
            Some((location, Ok(target))) => {
                f.final_url = target.to_string();
                FetchedKind::Redirect { target, location }
            }
            Some((location, Err(e))) => FetchedKind::Outcome {
                decision: Decision::Error,
                error: Some(format!("bad redirect Location {location:?}: {e}")),
                body_hash: None,
            },
            None => FetchedKind::Outcome {
                decision: Decision::Error,
                error: Some(format!("HTTP {} without Location", resp.status)),
                body_hash: None,
            },
        };
        return Record(f);
    }
    if resp.status >= 400 || resp.status < 200 {
        f.kind = FetchedKind::Outcome {
            decision: Decision::Error,
            error: Some(format!("HTTP {}", resp.status)),
            body_hash: None,
        };
        return Record(f);
    }
    if resp.truncated {
        f.kind = FetchedKind::Outcome {
            decision: Decision::TooLarge,
            error: Some(format!(
                "body larger than fetch.max_body_bytes ({} bytes)",
                s.fetch.max_body_bytes
            )),
            body_hash: None,
        };
        return Record(f);
    }
    if !resp.is_parseable(&s.fetch.parse_content_types) {
        f.kind = FetchedKind::Outcome {
            decision: Decision::NotHtml,
            error: None,
            body_hash: Some(*blake3::hash(&resp.body).as_bytes()),
        };
        return Record(f);
    }
    // CPU work off the async threads, on the pool's one thread per core.
    // The job queues in the pool (no permit to wait for: the pages waiting
    // are the fetches in flight, bounded by crawl.concurrency either way,
    // and a permit's release woke this runtime once per page: 13% of the
    // crawl's CPU, docs/benchmarks.md). The analysis thread
    // sends the page on to the decider itself, so a page costs no wake-up of
    // this task after its fetch.
    let (sh, page, tx) = (shared.clone(), url.clone(), to_decider.clone());
    shared.analysis.spawn(move || {
        let a = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyze(&sh, &page, resp)));
        f.kind = match a {
            Ok(a) => FetchedKind::Page(Box::new(a)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                FetchedKind::Outcome {
                    decision: Decision::Error,
                    error: Some(format!("page analysis failed: {what}")),
                    body_hash: None,
                }
            }
        };
        // Not an async thread, so a full channel blocks this analysis
        // thread (back-pressure from the decider) instead of a runtime one.
        if tx.blocking_send(f).is_err() {
            sh.in_flight.fetch_sub(1, Ordering::AcqRel);
            sh.wake.notify_one();
        }
    });
    Step::Analyzing
}

fn requeue(shared: &Shared, q: &QueuedUrl, at: std::time::Instant) {
    tracing::debug!(
        "requeue {} in {:?}",
        q.canonical,
        at.saturating_duration_since(std::time::Instant::now())
    );
    if let Err(e) = shared.frontier.requeue(q.clone(), at) {
        tracing::error!("frontier: {e}");
        shared.failed.store(true, Ordering::Relaxed);
    }
}

/// Parse, learn the host template, fingerprint and resolve links.
fn analyze(shared: &Shared, url: &Url, resp: FetchResponse) -> Analysis {
    let s = &shared.settings;
    let (text, _encoding) = resp.text();
    let max = s.features.max_text_bytes;
    let doc = extract_body(&text, resp.content_type.as_deref() == Some("text/plain"), max);
    let mut meta = doc.meta_robots;
    if let Some(x) = &resp.x_robots_tag {
        meta = meta.merge(extract::parse_x_robots_tag_for(x, &s.crawl.user_agent));
    }
    let host = crate::features::template_key(&crate::host::host_key(url), url.path(), doc.lang.as_deref());
    // Each block hashed once: for template learning, the features and, on a
    // young host, the page's template membership.
    let blocks = crate::features::block_hashes(&doc);
    shared.templates.observe_hashes(&host, &blocks);
    let template_version = shared.templates.version(&host);
    let template = shared.templates.template_shared(&host);
    let hashes = ContentHashes::compute(&resp.body, &doc);
    // An exact duplicate of a decided page (same body or text) needs no
    // fingerprint of its own: it takes its original's. A focused crawl
    // still scores its features.
    let known = if shared.focus.is_none() {
        shared.known.simhash_of(&hashes)
    } else {
        None
    };
    let (fp, relevance, sketch) = match known {
        Some(fp) => (fp, None, None),
        None => {
            let features = shared.fx.features_hashed(&doc, &blocks, template.as_deref());
            let relevance = shared.focus.as_ref().map(|f| f.page_relevance(&features));
            let sketch = page_sketch(&shared.fx, shared.verifier.as_ref(), &doc, &features);
            (simhash::simhash(&features), relevance, sketch)
        }
    };
    let mut link_text = String::new();
    // Links are stemmed in the page's language (no detection per link).
    let language = if shared.focus.is_some() {
        shared.fx.language(&doc)
    } else {
        "en"
    };

    let base = canon::effective_base(&resp.url, doc.base_href.as_deref());
    let mut links = Vec::with_capacity(doc.links.len() + 1);
    let mut seen = LinkSet::with_capacity(doc.links.len());
    for l in &doc.links {
        if l.nofollow {
            continue;
        }
        if let Ok(u) = shared.canon.resolve(&base, &l.href) {
            if seen.first_time(&links, &u) {
                let rel = shared
                    .focus
                    .as_ref()
                    .map_or(0.0, |f| f.link_relevance(f.link_text(l, &mut link_text), language));
                links.push((u, canon::redacted_href(&base, &l.href), rel));
            }
        }
    }
    // rel=canonical names the page's preferred URL: offer it like a link.
    if let Some(c) = doc
        .canonical
        .as_deref()
        .and_then(|c| shared.canon.resolve(&base, c).ok())
    {
        if c.as_str() != url.as_str() && seen.first_time(&links, &c) {
            let found = canon::redacted_href(&base, doc.canonical.as_deref().unwrap_or_default());
            links.push((c, found, 0.0));
        }
    }
    let young = ((shared.templates.pages(&host) as usize) <= PROVISIONAL_PER_HOST).then(|| {
        let member = in_template(&blocks, template.as_deref());
        (doc, blocks, member)
    });
    Analysis {
        young,
        host,
        template_version,
        hashes,
        simhash: fp,
        reused: known.is_some(),
        noindex: meta.noindex,
        nofollow: meta.nofollow,
        links,
        relevance,
        sketch,
        body: s.output.store_bodies.then_some(resp.body),
    }
}

/// The crawl's feature extractor: it keeps content words when candidates
/// are confirmed by content shingles.
fn feature_extractor(settings: &Settings) -> FeatureExtractor {
    FeatureExtractor::new(&settings.features).with_words(settings.dedup.verify == crate::config::Verify::Shingles)
}

/// The min-hash sketcher, when candidates are confirmed by min-hash.
fn verifier(settings: &Settings) -> Option<MinHasher> {
    (settings.dedup.verify == crate::config::Verify::Minhash).then(|| MinHasher::from_settings(&settings.sketch))
}

/// The sketch a page's near-duplicate candidates are confirmed with
/// (`[dedup] verify`): min-hash over its tokens when `verifier` is set, the
/// content shingles of its features when the extractor keeps their words,
/// else none.
fn page_sketch(
    fx: &FeatureExtractor,
    verifier: Option<&MinHasher>,
    doc: &Extracted,
    features: &crate::features::Features,
) -> Option<Sketch> {
    match verifier {
        Some(v) => Some(Sketch::MinHash(v.sketch(&fx.tokens(doc)))),
        None if fx.keeps_words() => Some(Sketch::Content(ContentSketch::from_words(&features.words))),
        None => None,
    }
}

/// The extracted document of a fetched body (HTML, or plain text).
fn extract_body(text: &str, plain: bool, max_text_bytes: usize) -> Extracted {
    if plain {
        extract::extract_plain(text, max_text_bytes)
    } else {
        extract::extract_html(text, max_text_bytes)
    }
}

/// The URLs already in a page's out-link list, as indices into it (no copy
/// of each URL), for [`analyze`]'s de-duplication.
struct LinkSet {
    hasher: std::collections::hash_map::RandomState,
    table: hashbrown::HashTable<usize>,
}

impl LinkSet {
    fn with_capacity(n: usize) -> Self {
        LinkSet {
            hasher: std::collections::hash_map::RandomState::new(),
            table: hashbrown::HashTable::with_capacity(n),
        }
    }

    /// Whether `u` is not among `links` yet; if so it is recorded as the
    /// next entry of `links`, which the caller must push next.
    fn first_time(&mut self, links: &[(Url, String, f64)], u: &Url) -> bool {
        use std::hash::BuildHasher;
        let hasher = &self.hasher;
        let h = hasher.hash_one(u.as_str());
        let entry = self.table.entry(
            h,
            |&i| links.get(i).is_some_and(|l| l.0.as_str() == u.as_str()),
            |&i| links.get(i).map_or(0, |l| hasher.hash_one(l.0.as_str())),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(links.len());
                true
            }
        }
    }
}

/// Pages decided and not yet committed, at most this many.
const GROUP_MAX: usize = 256;
/// How long a group stays open for more pages after its first arrived (a
/// page's store record waits at most this much longer; its fetch slot does
/// not wait, and it is decided, indexed and its out-links offered as soon as
/// the decider takes it). Each commit costs sled a log write, a sync request
/// and wake-ups of its I/O threads, whatever its size: 20 ms instead of 2 ms
/// (and a 2 ms poll instead of 200 µs) cut the crawler's CPU per page by
/// about 6% in `simcrawl bench crawl` (docs/benchmarks.md). A
/// `kill -9` loses at most this much more decided work, which resume
/// fetches again.
const GROUP_WAIT: Duration = Duration::from_millis(20);
/// How often an open group looks for the next page (the decider drains the
/// channel at each look, so a longer poll means fewer wake-ups per page).
const GROUP_POLL: Duration = Duration::from_millis(2);

/// The next page of a group opened at `opened`: one waiting in the channel,
/// or one arriving before the group is [`GROUP_WAIT`] old. The group is held
/// open a little because each commit is a store batch (a log write and a
/// sync request of its own).
fn next_in_group(rx: &mut mpsc::Receiver<Fetched>, opened: std::time::Instant) -> Option<Fetched> {
    loop {
        match rx.try_recv() {
            Ok(f) => return Some(f),
            Err(mpsc::error::TryRecvError::Empty) if opened.elapsed() < GROUP_WAIT => std::thread::sleep(GROUP_POLL),
            Err(_) => return None,
        }
    }
}

/// A decided page waiting for its group's commit.
struct Done {
    q: QueuedUrl,
    page: StoredPage,
    body: Option<Vec<u8>>,
}

/// The single owner of the index and the exact-hash maps.
struct Decider {
    shared: Arc<Shared>,
    /// The crawl log, flushed before each group's store commit.
    log: CrawlLogWriter<std::io::BufWriter<std::fs::File>>,
    /// Decided pages waiting for the commit (see [`Decider::run`]).
    group: Vec<Done>,
    index: LiveIndex,
    exact: ExactIndex,
    policy: DedupPolicyEngine,
    mirrors: OnlineMirrors,
    /// Sketches of new pages (only with `[dedup] verify`).
    sketches: SketchIndex,
    /// Young hosts' new pages, re-fingerprinted when the host template changes.
    provisional: HashMap<String, Vec<Provisional>>,
    provisional_len: usize,
    /// Redirect source → target (canonical), and hops leading to a URL.
    redirects: HashMap<String, String>,
    hops: HashMap<String, u32>,
    /// New URLs not enqueued because their parent was a duplicate (`drop`).
    dropped: HashSet<String>,
    /// URLs enqueued with a duplicate penalty (`deprioritize`).
    demoted: HashSet<String>,
    /// URLs demoted because their host is an established mirror.
    mirror_demoted: HashSet<String>,
    /// Out-links not enqueued by `focus.min_relevance`.
    focus_cut: u64,
    /// Pages whose fingerprint was reused from an exact original.
    reused: u64,
    matches: Vec<Match>,
    /// The earlier page whose fingerprint the page just decided new has.
    look_alike: Option<PageId>,
    /// The store directory, and when the decider last flushed the store
    /// and wrote its page count there (see [`write_flush_mark`]).
    store_dir: PathBuf,
    flushed_at: std::time::Instant,
    /// Lengths of same-host duplicate chains (`[dedup] max_duplicate_chain`).
    dup_chains: DupChains,
}

/// Per duplicate page, how many same-host duplicates or look-alikes in a row end at it
/// along its link path (a page that is no such duplicate has 0 and is not
/// kept). Keys are 64-bit hashes of canonical URLs.
#[derive(Default)]
struct DupChains(HashMap<u64, u32>);

impl DupChains {
    fn key(canonical: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        canonical.hash(&mut h);
        h.finish()
    }

    /// Records a page; returns the length of the chain it ends. A link of
    /// a chain is a duplicate of a page of its own host, or a new page with
    /// the very fingerprint of one (`looks_like`: a calendar month differs
    /// from the next only in its numbers).
    fn record(&mut self, r: &PageRecord) -> u32 {
        let host = |u: &str| Url::parse(u).ok().and_then(|u| u.host_str().map(str::to_string));
        let same_host = |of: Option<&str>| of.is_some_and(|d| host(d).is_some() && host(d) == host(&r.canonical));
        let link = (r.decision.is_duplicate() && same_host(r.dup_of.as_deref()))
            || (r.decision == Decision::New && same_host(r.looks_like.as_deref()));
        if !link {
            return 0;
        }
        let (canonical, parent) = (r.canonical.as_str(), r.parent.as_deref());
        let before = parent.and_then(|p| self.0.get(&Self::key(p)).copied()).unwrap_or(0);
        let n = before.saturating_add(1);
        self.0.insert(Self::key(canonical), n);
        n
    }
}

/// A new page of a young host, kept to be re-fingerprinted.
struct Provisional {
    id: PageId,
    doc: Extracted,
    /// Block hashes of `doc`, and which were template blocks when `fp` was
    /// computed: a page's features depend on its host's template only
    /// through these, so a template change that leaves them alone leaves
    /// `fp` alone.
    blocks: Vec<u64>,
    member: Vec<bool>,
    fp: u64,
    version: u64,
}

/// Which of `blocks` (block hashes) are blocks of `template`.
fn in_template(blocks: &[u64], template: Option<&crate::features::HostTemplate>) -> Vec<bool> {
    blocks
        .iter()
        .map(|h| template.is_some_and(|t| t.blocks.contains(h)))
        .collect()
}

/// What the decider leaves for the crawl summary.
struct Decided {
    index: LiveIndex,
    dropped: HashSet<String>,
    demoted: HashSet<String>,
    mirror_demoted: HashSet<String>,
    /// `focus.on_topic` and the links cut by `min_relevance`, when focused.
    focus: Option<(f64, u64)>,
    /// Pages whose fingerprint was reused from an exact original.
    reused: u64,
}

impl Decided {
    /// What dedup did to the crawl, counted at its end: links of duplicates
    /// dropped and never fetched; links of duplicates enqueued with a penalty;
    /// URLs demoted as mirror copies and never fetched.
    fn stats(&self, store: &dyn Store) -> Result<CrawlStats> {
        let mut dropped = 0;
        for u in &self.dropped {
            if store.url_state(u)?.is_none() {
                dropped += 1;
            }
        }
        let mut mirror_saved = 0;
        for u in &self.mirror_demoted {
            if !matches!(store.url_state(u)?, Some(UrlState::Done(_))) {
                mirror_saved += 1;
            }
        }
        Ok(CrawlStats {
            dup_links_dropped: Some(dropped),
            dup_links_demoted: Some(self.demoted.len() as u64),
            mirror_fetches_saved: Some(mirror_saved),
            focus_on_topic: self.focus.map(|f| f.0),
            focus_links_cut: self.focus.map(|f| f.1),
            fingerprints_reused: Some(self.reused),
        })
    }
}

impl Decider {
    fn new(shared: Arc<Shared>, log_path: &Path, previous: &[PageRecord], loaded: DedupState) -> Result<Self> {
        let s = &shared.settings;
        let DedupState {
            index, exact, sketches, ..
        } = loaded;
        let mut mirrors = OnlineMirrors::new(&s.mirror);
        let mut redirects = HashMap::new();
        let mut dup_chains = DupChains::default();
        for r in previous {
            mirrors.observe(r);
            if r.decision == Decision::Redirect {
                redirects.insert(r.canonical.clone(), r.final_url.clone());
            }
            dup_chains.record(r);
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(|e| Error::io(log_path, e))?;
        Ok(Decider {
            log: CrawlLogWriter::new(std::io::BufWriter::with_capacity(1 << 20, file)),
            group: Vec::with_capacity(GROUP_MAX),
            index,
            exact,
            policy: DedupPolicyEngine::new(s),
            mirrors,
            redirects,
            sketches,
            provisional: HashMap::new(),
            provisional_len: 0,
            hops: HashMap::new(),
            dropped: HashSet::new(),
            demoted: HashSet::new(),
            mirror_demoted: HashSet::new(),
            focus_cut: 0,
            reused: 0,
            matches: Vec::with_capacity(16),
            look_alike: None,
            store_dir: log_path.with_file_name(CrawlDir::STORE_DIR),
            flushed_at: std::time::Instant::now(),
            dup_chains,
            shared,
        })
    }

    /// Decide pages as they arrive; the pages waiting in the channel or
    /// arriving within [`GROUP_WAIT`] of the first (up to [`GROUP_MAX`]) are
    /// decided one by one and then committed together.
    fn run(mut self, mut rx: mpsc::Receiver<Fetched>) -> Result<Decided> {
        let mut result = Ok(());
        while let Some(first) = rx.blocking_recv() {
            let opened = std::time::Instant::now();
            let mut n = 0;
            let mut next = Some(first);
            while let Some(f) = next.take() {
                n += 1;
                if result.is_ok() {
                    result = self.handle(f);
                }
                if n < GROUP_MAX {
                    next = next_in_group(&mut rx, opened);
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
        result?;
        Ok(Decided {
            index: self.index,
            mirror_demoted: self.mirror_demoted,
            focus: self
                .shared
                .focus
                .is_some()
                .then_some((self.shared.settings.focus.on_topic, self.focus_cut)),
            dropped: self.dropped,
            demoted: self.demoted,
            reused: self.reused,
        })
    }

    fn url_of(&self, id: PageId) -> Result<Option<String>> {
        if let Some(d) = self.group.iter().find(|d| d.page.id == id) {
            return Ok(Some(d.page.canonical.clone()));
        }
        Ok(self.shared.frontier.store().page(id)?.map(|p| p.canonical))
    }

    fn handle(&mut self, f: Fetched) -> Result<()> {
        let shared = self.shared.clone();
        let s = &shared.settings;
        let frontier = &shared.frontier;
        let id = frontier.allocate_page_id();
        let q = &f.q;
        let mut rec = PageRecord {
            url: q.url.clone(),
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
            ..PageRecord::default()
        };
        let mut page = StoredPage {
            id,
            canonical: q.canonical.clone(),
            final_url: f.final_url.clone(),
            status: f.status,
            depth: q.depth,
            fetched_at_ms: now_ms(f.fetched_at),
            bytes: f.bytes,
            ..StoredPage::default()
        };
        let mut body = None;
        let mut offers: Vec<Candidate> = Vec::new();
        match f.kind {
            FetchedKind::Outcome {
                decision,
                error,
                body_hash,
            } => {
                rec.decision = decision;
                rec.error = error;
                rec.content_hash = body_hash.as_ref().map(dedup::hex);
                page.decision = decision;
            }
            FetchedKind::Redirect { target, location } => {
                rec.decision = Decision::Redirect;
                page.decision = Decision::Redirect;
                let hops = self.hops.get(&q.canonical).copied().unwrap_or(0) + 1;
                let target_s = target.as_str().to_string();
                if target_s == q.canonical {
                    rec.error = Some("redirect to itself".into());
                } else if let Some(cycle) = self.cycle(&q.canonical, &target_s) {
                    rec.error = Some(format!("redirect loop: {cycle}"));
                } else if hops > s.fetch.max_redirects {
                    rec.error = Some(format!(
                        "more than fetch.max_redirects ({}) redirects",
                        s.fetch.max_redirects
                    ));
                } else {
                    self.hops.insert(target_s.clone(), hops);
                    let mut c = Candidate::new(target, q.depth);
                    c.parent = q.parent.clone();
                    // The target stands in for the redirecting URL.
                    c.relevance = q.components.relevance;
                    c.tunnel = q.tunnel;
                    c.discovered = Some(location);
                    offers.push(c);
                }
                self.redirects.insert(q.canonical.clone(), target_s);
            }
            FetchedKind::Page(a) => {
                let mut a = *a;
                self.reused += u64::from(a.reused);
                rec.content_hash = Some(a.hashes.body_hex());
                rec.text_hash = Some(a.hashes.text_hex());
                rec.relevance = a.relevance;
                page.content_hash = Some(a.hashes.body);
                page.text_hash = Some(a.hashes.text);
                body = a.body.take();
                // A noindex page gets no content verdict (it is not
                // fingerprinted) and passes no duplicate status on.
                let ruling = if a.noindex {
                    None
                } else {
                    rec.simhash = Some(simhash::to_hex(a.simhash));
                    page.simhash = Some(a.simhash);
                    self.refresh_provisional(&a.host);
                    let r = self.decide(id, &a);
                    if let Some(of) = self.look_alike.take() {
                        rec.looks_like = self.url_of(of)?;
                    }
                    self.keep_provisional(id, &mut a, r.decision());
                    Some(r)
                };
                let decision = ruling.map_or(Decision::from(FetchOutcome::Noindex), |r| r.decision());
                rec.decision = decision;
                page.decision = decision;
                if let Some(r) = ruling {
                    rec.distance = r.distance;
                    rec.resemblance = r.resemblance;
                    page.dup_of = r.dup_of;
                    page.distance = r.distance;
                    if let Some(of) = r.dup_of {
                        rec.dup_of = self.url_of(of)?;
                    }
                }
                let chain = self.dup_chains.record(&rec);
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
                        let parent = focus::Parent {
                            relevance: a.relevance.unwrap_or(0.0),
                            component: q.components.relevance,
                            tunnel: q.tunnel,
                            duplicate: decision.is_duplicate(),
                        };
                        for (u, written, anchor) in a.links {
                            let mut c = Candidate::link(u, q, pd);
                            if let Some(f) = &shared.focus {
                                match f.out_link(parent, anchor) {
                                    Some(ls) => {
                                        c.relevance = ls.relevance;
                                        c.tunnel = ls.tunnel;
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
                            c.mirror = self.mirrors.penalty_for(c.url.as_str()).is_some();
                            if c.mirror {
                                self.mirror_demoted.insert(c.url.to_string());
                            }
                            offers.push(c);
                        }
                    }
                    None if decision.is_duplicate() && (s.dedup.policy == DedupPolicy::Drop || chain_cut) => {
                        let store = frontier.store();
                        for (u, _, _) in a.links {
                            if store.url_state(u.as_str())?.is_none() {
                                self.dropped.insert(u.to_string());
                            }
                        }
                    }
                    None => {}
                }
            }
        }
        if !offers.is_empty() {
            let results = frontier.offer_many(&offers)?;
            rec.outlinks = results.iter().filter(|o| **o == Offer::Enqueued).count() as u32;
            for (c, o) in offers.iter().zip(&results) {
                if *o == Offer::Enqueued && c.parent_dup != ParentDup::None {
                    self.demoted.insert(c.url.to_string());
                }
            }
        }
        // Log first (buffered), then commit with the group: see the module
        // docs on crash safety.
        self.log
            .write(&rec)
            .map_err(|e| Error::io(PathBuf::from(CrawlDir::LOG_FILE), e))?;
        self.mirrors.observe(&rec);
        self.group.push(Done { q: f.q, page, body });
        Ok(())
    }

    /// Append the group's log lines, then record its pages in one store batch.
    fn commit(&mut self) -> Result<()> {
        if self.group.is_empty() {
            return Ok(());
        }
        self.log
            .flush()
            .map_err(|e| Error::io(PathBuf::from(CrawlDir::LOG_FILE), e))?;
        let items: Vec<(&QueuedUrl, &StoredPage, Option<&[u8]>)> =
            self.group.iter().map(|d| (&d.q, &d.page, d.body.as_deref())).collect();
        self.shared.frontier.complete_many(&items)?;
        self.shared
            .recorded
            .fetch_add(self.group.len() as u64, Ordering::AcqRel);
        self.group.clear();
        if self.flushed_at.elapsed() >= FLUSH_MARK_EVERY {
            let store = self.shared.frontier.store();
            store.flush()?;
            write_flush_mark(&self.store_dir, store.as_ref());
            self.flushed_at = std::time::Instant::now();
        }
        Ok(())
    }

    /// Exact body hash → exact text hash → nearest simhash within k; inserts
    /// a new page's fingerprint at once.
    fn decide(&mut self, id: PageId, a: &Analysis) -> Ruling {
        if let Some(v) = self
            .exact
            .check_and_insert(Some(&a.hashes.body), Some(&a.hashes.text), id)
        {
            return v;
        }
        // This page now owns its hashes (in `exact`): later copies of it can
        // skip their fingerprint.
        self.shared.known.insert(&a.hashes, a.simhash);
        let k = self.shared.settings.simhash.k;
        self.matches.clear();
        self.index.query(a.simhash, &mut self.matches);
        let near: Vec<NearMatch> = self
            .matches
            .iter()
            .map(|m| NearMatch {
                page: m.id,
                distance: m.distance,
            })
            .collect();
        let v = match &a.sketch {
            // Verification: a candidate (within k, or sharing a band key)
            // must have a shingle resemblance of at least `verify_threshold`.
            Some(sk) => {
                let threshold = self.shared.settings.dedup.verify_threshold;
                match self.sketches.confirm(sk, a.simhash, &near, threshold) {
                    Some((m, r)) => Ruling {
                        verdict: Verdict::NearDuplicate,
                        dup_of: Some(m.page),
                        distance: Some(m.distance),
                        resemblance: Some(r),
                    },
                    None => Ruling::new_content(),
                }
            }
            None => dedup::decide(None, None, &near, k),
        };
        // A new page with an earlier page's very fingerprint looks like it:
        // the same words with letters, only numbers or stop words differ (a
        // link in a duplicate chain, see `DupChains`).
        self.look_alike = match v.verdict {
            Verdict::New => near.iter().filter(|m| m.distance == 0).map(|m| m.page).min(),
            _ => None,
        };
        if v.verdict == Verdict::New {
            self.index.insert(a.simhash, id);
            if let Some(sk) = &a.sketch {
                self.sketches.insert(id, sk.clone(), a.simhash);
            }
        }
        v
    }

    /// A page fingerprinted before its host's template was learned carries the
    /// template's weight; a copy fetched later does not, and would miss it.
    /// So a young host's new pages are kept, and when the host's template
    /// changes they are fingerprinted again and the new fingerprint is
    /// indexed under the same page id (the old one stays: both name the page).
    fn refresh_provisional(&mut self, host: &str) {
        let shared = &self.shared;
        let Some(list) = self.provisional.get_mut(host) else {
            return;
        };
        let version = shared.templates.version(host);
        if list.iter().all(|p| p.version == version) {
            return;
        }
        let template = shared.templates.template_shared(host);
        for p in list.iter_mut().filter(|p| p.version != version) {
            p.version = version;
            let member = in_template(&p.blocks, template.as_deref());
            if member == p.member {
                // None of its blocks changed side: same features, same fp.
                continue;
            }
            p.member = member;
            let features = shared.fx.features_hashed(&p.doc, &p.blocks, template.as_deref());
            let fp = simhash::simhash(&features);
            if let Some(sk) = page_sketch(&shared.fx, shared.verifier.as_ref(), &p.doc, &features) {
                self.sketches.update(p.id, sk, fp);
            }
            if fp != p.fp {
                self.index.insert(fp, p.id);
                p.fp = fp;
            }
        }
        // A host past its youth has a settled template: forget its pages.
        if shared.templates.pages(host) as usize > 2 * PROVISIONAL_PER_HOST {
            self.provisional_len -= list.len();
            self.provisional.remove(host);
        }
    }

    fn keep_provisional(&mut self, id: PageId, a: &mut Analysis, decision: Decision) {
        if decision != Decision::New || self.provisional_len >= PROVISIONAL_MAX {
            return;
        }
        let Some((doc, blocks, member)) = a.young.take() else {
            return;
        };
        let list = self.provisional.entry(a.host.clone()).or_default();
        if list.len() < PROVISIONAL_PER_HOST {
            list.push(Provisional {
                id,
                doc,
                blocks,
                member,
                fp: a.simhash,
                version: a.template_version,
            });
            self.provisional_len += 1;
        }
    }

    /// The redirect cycle closed by `from → to`, if any.
    fn cycle(&self, from: &str, to: &str) -> Option<String> {
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

/// What [`run`] opens before the crawl starts: the store, the frontier, the
/// crawl log's records so far, the decider's state and the crawl's tag.
type Opened = (Arc<dyn Store>, Frontier, Vec<PageRecord>, DedupState, u32);

/// Opens (or creates) the store and reads (or seeds) the crawl. On an error
/// every thread that used the store has ended and the store is closed.
fn open_crawl(
    settings: &Settings,
    opts: &CrawlOptions,
    store_dir: &Path,
    log_path: &Path,
    snapshot: &Path,
    seeds: &[Url],
) -> Result<Opened> {
    // Combining: queue updates go to the store with the next group commit.
    let store: Arc<dyn Store> =
        Arc::new(SledStore::open_cached(store_dir, settings.frontier.seen_cache_urls)?.combining());
    if opts.resume {
        check_flush_mark(store_dir, store.pages_recorded()?)?;
    } else {
        // A snapshot left beside a removed store belongs to another crawl.
        let _ = std::fs::remove_file(snapshot);
    }
    let crawl_tag = crawl_tag(store.as_ref())?;
    // The decider's starting state is read on its own thread while the
    // frontier reads the seen-set and the queue: on resume the two are
    // independent scans of different keys, each seconds per million pages.
    let loader = {
        let (store, settings, snapshot) = (store.clone(), settings.clone(), snapshot.to_path_buf());
        std::thread::Builder::new()
            .name("simcrawl-load".into())
            .spawn(move || DedupState::load(store.as_ref(), &settings, &snapshot, crawl_tag))
            .map_err(|e| Error::io("loader thread", e))?
    };
    let setup = if opts.resume {
        Frontier::resume(store.clone(), settings).map_err(Error::from)
    } else {
        Frontier::new(store.clone(), settings, seeds).map_err(Error::from)
    };
    // Joined before any error returns, so no thread outlives `run` holding
    // the store open.
    let loaded = loader.join();
    let frontier = setup?;
    let dedup_state = loaded.map_err(|_| Error::thread_panicked("loader"))??;
    let previous = if opts.resume {
        // The page records themselves, not only the counter, before the
        // log is repaired from them.
        check_flush_mark(store_dir, dedup_state.pages)?;
        repair_log(log_path, store.as_ref())?
    } else {
        write_flush_mark(store_dir, store.as_ref());
        Vec::new()
    };
    Ok((store, frontier, previous, dedup_state, crawl_tag))
}

/// The seeds, canonicalized (at least one).
fn parse_seeds(canon: &Canonicalizer, seeds: &[String]) -> Result<Vec<Url>> {
    let mut parsed = Vec::new();
    for s in seeds {
        parsed.push(
            canon
                .parse(s)
                .map_err(|e| Error::InvalidInput(format!("seed {s:?}: {e}")))?,
        );
    }
    if parsed.is_empty() {
        return Err(Error::InvalidInput("no seed URLs (give --seeds FILE)".into()));
    }
    Ok(parsed)
}

/// Removes what a new crawl that failed to start created in `out` (the
/// crawl log only when there was none before).
fn remove_new_crawl(out: &Path, created_out: bool, had_log: bool) {
    for name in [CrawlDir::STORE_DIR, "index"] {
        let _ = std::fs::remove_dir_all(out.join(name));
    }
    if !had_log {
        let _ = std::fs::remove_file(out.join(CrawlDir::LOG_FILE));
    }
    if created_out {
        // Only when empty: never anything the user put there.
        let _ = std::fs::remove_dir(out);
    }
}

/// The file in the store directory that holds how many pages the store
/// held when simcrawl last flushed it (a lower bound for any later open).
const FLUSH_MARK: &str = "simcrawl-flushed";

/// Every this often the decider flushes the store and updates the mark.
const FLUSH_MARK_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Records the store's page count after a flush (best effort: a missing
/// mark only weakens the check on the next resume).
fn write_flush_mark(store_dir: &Path, store: &dyn Store) {
    let Ok(pages) = store.pages_recorded() else { return };
    let path = store_dir.join(FLUSH_MARK);
    let tmp = store_dir.join(format!("{FLUSH_MARK}.tmp"));
    if std::fs::write(&tmp, format!("{pages}\n")).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// Refuses a store that holds fewer pages than at its last flush (part of
/// it was lost, e.g. a truncated file the engine recovered a prefix of).
/// `found` is the store's page counter, or the page records a scan read
/// (a damaged file can keep the counter and lose records).
fn check_flush_mark(store_dir: &Path, found: u64) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(store_dir.join(FLUSH_MARK)) else {
        return Ok(());
    };
    let expected: u64 = text.trim().parse().unwrap_or(0);
    if found < expected {
        return Err(crate::store::StoreError::Lost {
            path: store_dir.to_path_buf(),
            expected,
            found,
        }
        .into());
    }
    Ok(())
}

/// The crawl's 32-bit tag (never 0), kept in the store's `crawl_id` meta
/// value (made on first use) and written into index snapshots, so a
/// snapshot of another crawl is never loaded.
fn crawl_tag(store: &dyn Store) -> Result<u32> {
    let id = match store.meta("crawl_id")? {
        Some(v) if v.len() == 8 => u64::from_be_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]),
        _ => {
            let mut h = blake3::Hasher::new();
            h.update(&now_ms(SystemTime::now()).to_le_bytes());
            h.update(&std::process::id().to_le_bytes());
            h.update(&(store as *const dyn Store as *const u8 as usize).to_le_bytes());
            let b = h.finalize();
            let mut id = [0u8; 8];
            id.copy_from_slice(&b.as_bytes()[..8]);
            store.set_meta("crawl_id", &id)?;
            u64::from_be_bytes(id)
        }
    };
    Ok((id as u32).max(1))
}

/// A copy of the store taken before a resume opens it, put back when the
/// store turns out unreadable: the storage engine repairs what it can at
/// open (it cuts a damaged log), and a failed resume must leave the store
/// exactly as it found it.
struct StoreBackup {
    store: PathBuf,
    copy: PathBuf,
}

impl StoreBackup {
    fn take(store: &Path) -> Result<StoreBackup> {
        let copy = store.with_file_name(format!("store.before-resume"));
        if copy.is_dir() {
            // A resume stopped while it checked the store: the copy is the
            // store as it was before that attempt.
            std::fs::remove_dir_all(store).map_err(|e| Error::io(store, e))?;
            std::fs::rename(&copy, store).map_err(|e| Error::io(&copy, e))?;
        }
        copy_dir(store, &copy).map_err(|e| Error::io(&copy, e))?;
        Ok(StoreBackup {
            store: store.to_path_buf(),
            copy,
        })
    }

    fn discard(self) {
        let _ = std::fs::remove_dir_all(&self.copy);
    }

    fn restore(self) {
        let restored = std::fs::remove_dir_all(&self.store).and_then(|()| std::fs::rename(&self.copy, &self.store));
        if let Err(e) = restored {
            tracing::error!(
                "{}: could not put the store back ({e}); its copy is in {}",
                self.store.display(),
                self.copy.display()
            );
        }
    }
}

/// Copies the regular files of `from` into a new directory `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// What the decider starts from: the exact-duplicate maps and the
/// near-duplicate index, as the store's page records leave them.
pub(crate) struct DedupState {
    /// The simhash index: the snapshot of the last clean stop plus the
    /// fingerprints of pages decided after it, or, without a usable
    /// snapshot, every fingerprint in the store (the source of truth).
    pub(crate) index: LiveIndex,
    /// The first page of each body hash and text hash.
    pub(crate) exact: ExactIndex,
    /// The per-host template learner as the recorded pages left it.
    pub(crate) templates: TemplateLearner,
    /// The verification sketches of the recorded new pages.
    pub(crate) sketches: SketchIndex,
    /// Page records the scan read.
    pub(crate) pages: u64,
}

impl DedupState {
    /// Reads both from one scan of the page records (the exact maps need
    /// every page; the index the `New` pages past the snapshot's
    /// watermark).
    pub(crate) fn load(store: &dyn Store, s: &Settings, snapshot: &Path, crawl_tag: u32) -> Result<Self> {
        let started = std::time::Instant::now();
        let fresh = LiveIndex::from_settings(&s.index, s.simhash.k);
        let (index, first, from) = match LiveIndex::load_tagged(snapshot, fresh.design().clone(), s.simhash.k) {
            Ok((idx, mark, tag)) if tag == crawl_tag && mark <= store.next_page_id() => (idx, mark, "the snapshot"),
            Ok((_, _, tag)) if tag != crawl_tag => {
                tracing::warn!(
                    "{}: the snapshot belongs to another crawl; rebuilding the index from the store",
                    snapshot.display()
                );
                (fresh, 0, "no snapshot")
            }
            Ok(_) => {
                tracing::warn!("{}: newer than the store; rebuilding the index", snapshot.display());
                (fresh, 0, "no snapshot")
            }
            Err(e) if e.is_missing() => (fresh, 0, "no snapshot"),
            Err(e) => {
                tracing::warn!("{e}; rebuilding the index from the store");
                (fresh, 0, "no snapshot")
            }
        };
        let mut exact = ExactIndex::new();
        let mut fps = Vec::new();
        let mut analysed = Vec::new();
        let mut pages = 0u64;
        for r in store.iter_pages() {
            let page = r?;
            pages += 1;
            exact.insert(page.content_hash.as_ref(), page.text_hash.as_ref(), page.id);
            if page.simhash.is_some() || page.decision == Decision::Noindex {
                analysed.push((page.id, page.canonical, page.decision, page.simhash.unwrap_or(0)));
            }
            if let (Decision::New, Some(fp), true) = (page.decision, page.simhash, page.id >= first) {
                fps.push((fp, page.id));
            }
        }
        let (kept, added) = (index.len(), fps.len());
        if added > kept / 8 {
            index.bulk_load(fps);
        } else {
            for (fp, id) in fps {
                index.insert(fp, id);
            }
        }
        if !index.is_empty() {
            tracing::info!(
                "index: {} fingerprints ({kept} from {from}, {added} from page records); exact maps and index read in {:.2} s",
                index.len(),
                started.elapsed().as_secs_f64()
            );
        }
        let Replayed {
            templates,
            sketches,
            refreshed,
        } = replay_analysis(store, s, &analysed)?;
        // Young hosts' pages fingerprinted again under their settled
        // template are indexed under both fingerprints, as in the live crawl.
        for (fp, id) in refreshed {
            index.insert(fp, id);
        }
        Ok(DedupState {
            index,
            exact,
            templates,
            sketches,
            pages,
        })
    }
}

/// Pages parsed at once by [`replay_analysis`] (in parallel, then observed
/// in id order).
const REPLAY_CHUNK: usize = 512;

/// The template learner and verification sketches that the analysis of the
/// recorded pages built, rebuilt from their stored bodies: every analysed
/// page (`pages`, in id order: the order the decider recorded them) is
/// parsed again, its blocks are observed by a fresh learner, and each new
/// page's sketch is taken under the template as it stood at that page. A
/// resumed crawl then weighs and confirms like one that was never stopped.
/// Without stored bodies (`output.store_bodies = false`) both start empty,
/// with a warning.
fn replay_analysis(store: &dyn Store, s: &Settings, pages: &[(PageId, String, Decision, u64)]) -> Result<Replayed> {
    use rayon::prelude::*;
    let templates = TemplateLearner::new(&s.features);
    let mut sketches = SketchIndex::new();
    let (fx, verifier) = (feature_extractor(s), verifier(s));
    let sketching = verifier.is_some() || fx.keeps_words();
    let mut refreshed = Vec::new();
    if pages.is_empty() || (!s.features.template_learning && !sketching) {
        return Ok(Replayed {
            templates,
            sketches,
            refreshed,
        });
    }
    let started = std::time::Instant::now();
    let mut missing = 0u64;
    let mut young = Vec::new();
    for chunk in pages.chunks(REPLAY_CHUNK) {
        let bodies = chunk
            .iter()
            .map(|(id, ..)| store.body(*id))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let docs: Vec<Option<(Extracted, Vec<u64>)>> = bodies
            .par_iter()
            .map(|body| {
                let body = body.as_deref()?;
                let (text, _) = crate::fetch::decode_text(body, None);
                let doc = extract_body(&text, !extract::looks_like_html(body), s.features.max_text_bytes);
                let blocks = crate::features::block_hashes(&doc);
                Some((doc, blocks))
            })
            .collect();
        for ((id, canonical, decision, simhash), doc) in chunk.iter().zip(docs) {
            let Some((doc, blocks)) = doc else {
                missing += 1;
                continue;
            };
            let host = crate::host::host_key_of_serialized(canonical).unwrap_or_default();
            let path = crate::host::split_url(canonical).map_or("/", |(_, p)| p);
            let host = crate::features::template_key(host, path, doc.lang.as_deref());
            templates.observe_hashes(&host, &blocks);
            if sketching && *decision == Decision::New {
                let template = templates.template_shared(&host);
                let features = fx.features_hashed(&doc, &blocks, template.as_deref());
                if let Some(sk) = page_sketch(&fx, verifier.as_ref(), &doc, &features) {
                    sketches.insert(*id, sk, *simhash);
                }
            }
            if *decision == Decision::New
                && templates.pages(&host) as usize <= PROVISIONAL_PER_HOST
                && young.len() < PROVISIONAL_MAX
            {
                young.push((*id, host, doc, blocks, *simhash));
            }
        }
    }
    // A young host's first pages were sketched again as its template
    // settled (`Decider::refresh_provisional`): take them under the
    // template the recorded pages leave.
    for (id, host, doc, blocks, stored) in young {
        let template = templates.template_shared(&host);
        let features = fx.features_hashed(&doc, &blocks, template.as_deref());
        let fp = simhash::simhash(&features);
        if fp != stored {
            refreshed.push((fp, id));
        }
        if let Some(sk) = page_sketch(&fx, verifier.as_ref(), &doc, &features) {
            sketches.update(id, sk, fp);
        }
    }
    if missing > 0 {
        tracing::warn!(
            "{missing} of {} recorded pages have no stored body (output.store_bodies = false?): host templates and near-duplicate sketches resume without them",
            pages.len()
        );
    }
    tracing::info!(
        "host templates and sketches of {} recorded pages rebuilt in {:.2} s",
        pages.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(Replayed {
        templates,
        sketches,
        refreshed,
    })
}

/// What [`replay_analysis`] rebuilds.
struct Replayed {
    templates: TemplateLearner,
    sketches: SketchIndex,
    /// `(fingerprint, page)` of young hosts' pages fingerprinted again.
    refreshed: Vec<(u64, PageId)>,
}

/// Writes the index snapshot; a failure only costs a rebuild at the next start.
fn save_index(index: &LiveIndex, path: &Path, watermark: u64, crawl_tag: u32) {
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|()| index.save_tagged(path, watermark, crawl_tag).map_err(|e| e.to_string()));
    if let Err(e) = saved {
        tracing::warn!("index snapshot not written ({e}); the next start rebuilds it from the store");
    }
}

/// Progress: an indicatif bar on a terminal, else a log line every 5 s.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    started: std::time::Instant,
    last_log: parking_lot::Mutex<std::time::Instant>,
}

impl Progress {
    fn new(enabled: bool, max_pages: u64) -> Self {
        use std::io::IsTerminal;
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = if max_pages > 0 {
                indicatif::ProgressBar::new(max_pages)
            } else {
                indicatif::ProgressBar::no_length()
            };
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {pos} pages {per_sec} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress {
            bar,
            started: std::time::Instant::now(),
            last_log: parking_lot::Mutex::new(std::time::Instant::now()),
        }
    }

    fn tick(&self, shared: &Shared) {
        let recorded = shared.recorded.load(Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            if bar.position() != recorded {
                bar.set_position(recorded);
                bar.set_message(format!(
                    "queued {} in flight {}",
                    shared.frontier.len(),
                    shared.in_flight.load(Ordering::Relaxed)
                ));
            }
            return;
        }
        let mut last = self.last_log.lock();
        if last.elapsed() >= Duration::from_secs(5) {
            *last = std::time::Instant::now();
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            tracing::info!(
                "{recorded} pages ({:.0}/s), {} queued, {} in flight",
                recorded as f64 / secs,
                shared.frontier.len(),
                shared.in_flight.load(Ordering::Relaxed)
            );
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The link set keeps the first of each URL, as a set of copied strings
    /// would, through the table's growth.
    #[test]
    fn link_set_keeps_first_occurrences() {
        let urls: Vec<Url> = (0..300)
            .map(|i| Url::parse(&format!("http://h.test/{}", (i * 7) % 113)).expect("url"))
            .collect();
        let mut set = LinkSet::with_capacity(1);
        let mut links: Vec<(Url, String, f64)> = Vec::new();
        let mut plain = HashSet::new();
        for u in &urls {
            let first = set.first_time(&links, u);
            assert_eq!(first, plain.insert(u.as_str().to_string()), "{u}");
            if first {
                links.push((u.clone(), String::new(), 0.0));
            }
        }
        assert_eq!(links.len(), 113);
    }

    /// The decider's starting state from one scan of the page records:
    /// every `New` fingerprint in the index once (snapshot or not), the
    /// exact maps owned by the first page of each hash.
    #[test]
    fn dedup_state_reads_index_and_exact_maps_in_one_scan() {
        use crate::model::HostStats;
        use crate::store::suite::{page, qurl};
        use crate::store::MemStore;
        let settings = Settings::default();
        let store = MemStore::new();
        let urls: Vec<QueuedUrl> = (0..40).map(|i| qurl("a.test", &format!("p{i}"), 0.0, i)).collect();
        store.enqueue(&urls).unwrap();
        let mut fps = Vec::new();
        let record = |range: std::ops::Range<usize>, fps: &mut Vec<(u64, PageId)>| {
            for u in &urls[range] {
                store.claim(u).unwrap();
                // Every third page an exact duplicate (body hash of page 0).
                let dup = u.seq % 3 == 2;
                let mut p = page(&store, u, if dup { Decision::ExactDuplicate } else { Decision::New });
                p.simhash = Some(u.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                if dup {
                    p.content_hash = Some([0; 32]);
                } else {
                    fps.push((p.simhash.unwrap(), p.id));
                }
                store.complete(u, &p, None, &HostStats::default()).unwrap();
            }
        };
        record(0..25, &mut fps);
        let dir = tempfile::tempdir().unwrap();
        let snapshot = dir.path().join("index.snap");
        // No snapshot: everything from the page records.
        let state = DedupState::load(&store, &settings, &snapshot, 1).unwrap();
        let check = |state: &DedupState, fps: &[(u64, PageId)]| {
            assert_eq!(state.index.len(), fps.len());
            let mut out = Vec::new();
            for &(fp, id) in fps {
                out.clear();
                state.index.query(fp, &mut out);
                assert_eq!(out.iter().filter(|m| m.fp == fp && m.id == id).count(), 1, "{fp:x}");
            }
            // Page 0 (seq 0) owns body hash [0; 32]; the text hash [7; 32]
            // is every page's, owned by the first.
            let first = fps[0].1;
            assert_eq!(
                state.exact.lookup(Some(&[0; 32]), Some(&[7; 32])),
                (Some(first), Some(first))
            );
        };
        check(&state, &fps);
        // A snapshot of the first 25 pages, then 15 more pages: the index
        // has each fingerprint once, the later ones from the records.
        save_index(&state.index, &snapshot, store.next_page_id(), 1);
        record(25..40, &mut fps);
        let state = DedupState::load(&store, &settings, &snapshot, 1).unwrap();
        check(&state, &fps);
        // A snapshot of another crawl (another tag, a watermark that fits
        // this store) is not used: the index is rebuilt from the store.
        let foreign = LiveIndex::from_settings(&settings.index, settings.simhash.k);
        foreign.insert(0x0123_4567_89ab_cdef, 1);
        foreign.save_tagged(&snapshot, 1, 99).unwrap();
        let state = DedupState::load(&store, &settings, &snapshot, 1).unwrap();
        check(&state, &fps);
    }

    #[test]
    fn damaged_store_backup_is_put_back_and_an_interrupted_one_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join(CrawlDir::STORE_DIR);
        std::fs::create_dir_all(store.join("blobs")).unwrap();
        std::fs::write(store.join("db"), "as found").unwrap();
        std::fs::write(store.join("blobs/1"), "blob").unwrap();
        let b = StoreBackup::take(&store).unwrap();
        std::fs::write(store.join("db"), "changed by the engine").unwrap();
        b.restore();
        assert_eq!(std::fs::read_to_string(store.join("db")).unwrap(), "as found");
        assert_eq!(std::fs::read_to_string(store.join("blobs/1")).unwrap(), "blob");
        // A resume interrupted after its copy: the next one starts from the copy.
        let _interrupted = StoreBackup::take(&store).unwrap();
        std::fs::write(store.join("db"), "half repaired").unwrap();
        let b = StoreBackup::take(&store).unwrap();
        assert_eq!(std::fs::read_to_string(store.join("db")).unwrap(), "as found");
        b.discard();
        assert!(!dir.path().join(format!("store.before-resume")).exists());
    }

    #[test]
    fn rfc3339_formats_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn seeds_file_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("seeds.txt");
        std::fs::write(&p, "# c\n\nhttp://a.test/\n  http://b.test/x \n").unwrap();
        assert_eq!(read_seeds(&p).unwrap(), vec!["http://a.test/", "http://b.test/x"]);
    }
}
