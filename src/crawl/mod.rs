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
use crate::config::{DedupPolicy, Settings, StoreBackend};
use crate::crawllog::{self, CrawlLogWriter, PageRecord};
use crate::dedup::{self, ContentHashes, DedupPolicyEngine, Deduper, ExactIndex};
use crate::error::{Error, Result};
use crate::extract::{self, Extracted};
use crate::features::{FeatureExtractor, TemplateLearner};
use crate::fetch::{FetchResponse, Fetcher, HttpFetcher};
use crate::focus::{self, Focus};
use crate::frontier::{Candidate, Frontier, NextUrl, Offer};
use crate::index::LiveIndex;
use crate::metrics::{self, Metrics, MetricsServer};
use crate::mirror::OnlineMirrors;
use crate::model::{
    BodyRef, CrawlDir, Decision, FetchOutcome, PageId, ParentDup, QueuedUrl, StoredPage, UrlState, Verdict,
};
use crate::politeness::{NotReady, Politeness, RequestOutcome, RetryPolicy, RobotsVerdict};
use crate::report::{self, CrawlStats, ReportPaths};
use crate::simhash;
use crate::sketch::minhash::MinHasher;
use crate::sketch::{ContentSketch, Sketch, SketchIndex};
use crate::store::{DiskStore, RedisMarker, RedisStore, Store};
use crate::warc::{WarcOptions, WarcThread, WarcWriter};

mod analyze;
mod chains;
mod decide;
mod kept;
mod pool;
mod progress;
mod provisional;
mod resume;
mod revisit;
mod shared_crawl;
mod shared_dedup;
mod sitemaps;

/// The crawl's per-page analysis pieces `simcrawl bench pipeline` times.
pub(crate) use analyze::{feature_extractor, page_sketch};
mod tally;
#[cfg(test)]
mod tests;
mod warc_entry;
mod worker;

use analyze::*;
use chains::DupChains;
use decide::*;
use progress::*;
pub(crate) use resume::DedupState;
use resume::*;
use revisit::*;
use shared_crawl::*;
use warc_entry::Capture;
use worker::*;

/// What to crawl and where to write it.
pub struct CrawlOptions {
    /// Output directory (layout in the README): `store/`, `pages.jsonl`, `reports/`.
    pub out: PathBuf,
    /// Seed URLs (ignored on resume: the store has them).
    pub seeds: Vec<String>,
    /// Continue the crawl stored in `out`.
    pub resume: bool,
    /// With `resume`: start a recrawl round that revisits the recorded
    /// pages this selects (see [`crate::recrawl`]). `[recrawl] enabled`
    /// makes every resume a round of the pages due now.
    pub recrawl: Option<crate::recrawl::Round>,
    /// Show a progress bar (on a terminal) instead of periodic log lines.
    pub progress: bool,
    /// Use this fetcher instead of HTTP (tests, replay).
    pub fetcher: Option<Arc<dyn Fetcher>>,
    /// Called with each record as it is written to `pages.jsonl`, on the
    /// decider thread (keep it short: pages wait while it runs).
    pub on_page: Option<PageCallback>,
    /// Serve live metrics on this listener while the crawl runs: `GET
    /// /metrics` (Prometheus text) and `GET /status` (JSON), see
    /// [`crate::metrics`]. [`crate::metrics::bind`] binds one; the server
    /// stops before [`run`] returns.
    pub metrics: Option<std::net::TcpListener>,
    /// Crawl as worker N of a crawl several processes share on a Redis
    /// Cluster (`[store] backend = "redis"`; docs/distributed.md): `out` is
    /// this worker's own directory (conventionally `DIR/worker-N`), the
    /// crawl name is `[store] crawl_name` or the name of `out`'s parent,
    /// and the first worker to start seeds the crawl. The worker fetches
    /// the hosts it holds leases on and ends when no URL is queued
    /// anywhere. Ids must differ between the workers of a crawl.
    pub worker: Option<u16>,
}

/// A per-page callback (see [`CrawlOptions::on_page`]).
pub type PageCallback = Arc<dyn Fn(&PageRecord) + Send + Sync>;

impl CrawlOptions {
    /// A fresh crawl of `seeds` into `out`.
    pub fn new(out: impl Into<PathBuf>, seeds: Vec<String>) -> Self {
        CrawlOptions {
            out: out.into(),
            seeds,
            resume: false,
            recrawl: None,
            progress: false,
            fetcher: None,
            on_page: None,
            metrics: None,
            worker: None,
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
    /// Body bytes read (records of all runs).
    pub bytes: u64,
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
    /// The live metrics' last values (this run's counters; what `GET
    /// /status` answered at the end), whether or not they were served.
    pub metrics: metrics::Snapshot,
    /// The sitemaps of this run (`DIR/sitemaps.jsonl` has one line per file).
    pub sitemaps: crate::sitemap::SitemapTotals,
    /// The most pages that were being fetched or waited for their analysis
    /// at once in this run: at most [`UNANALYZED_PER_CONNECTION`] ×
    /// `crawl.concurrency`, however many hosts have a URL ready (fetching
    /// waits while analysis is behind).
    pub peak_unanalyzed: usize,
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
    templates: Arc<TemplateLearner>,
    /// Min-hash sketcher when near duplicates are verified.
    verifier: Option<MinHasher>,
    /// The topic profile when `[focus] enabled`.
    focus: Option<Focus>,
    /// The crawl-wide request rate cap (`politeness.max_requests_per_sec`).
    rate: Option<crate::politeness::rate::RateCap>,
    /// Body and text hashes already decided, with their simhash: an exact
    /// duplicate's analysis skips features and fingerprint.
    known: dedup::KnownContent,
    /// Threads that parse and fingerprint pages (one per core), so the
    /// per-thread buffers and stem caches of the analysis stay warm and no
    /// page waits on tokio's blocking pool growing or waking threads.
    analysis: pool::Pool,
    /// URLs handed out and not yet recorded or re-queued.
    in_flight: AtomicUsize,
    /// Of those, the pages being fetched or waiting for their analysis
    /// ([`worker::Unanalyzed`]); the dispatcher starts no fetch while it is
    /// at [`Shared::max_unanalyzed`].
    unanalyzed: AtomicUsize,
    /// The most `unanalyzed` has been ([`CrawlSummary::peak_unanalyzed`]).
    peak_unanalyzed: AtomicUsize,
    /// [`UNANALYZED_PER_CONNECTION`] × `crawl.concurrency`: with analysis
    /// behind fetching, at most that many fetched bodies wait for it
    /// (without the bound, one page per host with a URL ready: thousands on
    /// a broad crawl).
    max_unanalyzed: usize,
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
    /// The live counters (always kept: a few atomic adds per page).
    metrics: Arc<Metrics>,
    /// Sitemap reading (`[sitemaps] enabled`).
    sitemaps: Option<sitemaps::Sitemaps>,
    /// A worker of a shared crawl: what its lease loop reports.
    worker: Option<WorkerShared>,
    /// Hosts whose ghosts the decider forgets before its next pages
    /// (with a shared decision log; see `shared_dedup.rs`).
    ghosts: shared_dedup::Ghosts,
}

impl Shared {
    /// What the frontier and politeness know now, for a metrics scrape.
    fn probe(&self) -> metrics::Probe {
        let (ready, waiting) = self.frontier.host_counts(std::time::Instant::now());
        metrics::Probe {
            queued: self.frontier.len() as u64,
            in_flight: self.in_flight.load(Ordering::Relaxed) as u64,
            hosts_ready: ready as u64,
            hosts_waiting: waiting as u64,
            hosts_parked: self.politeness.parked(tokio::time::Instant::now()) as u64,
        }
    }
}

/// Pages fetched or being fetched and not yet analysed, per connection of
/// `crawl.concurrency`, at most. A bound on memory, not a pacing: with it
/// the benchmark's crawl (64 connections, 20 hosts, pages analysed slower
/// than loopback serves them) runs at the same CPU per page within the
/// runs' spread, where a bound of 2 per connection cost it a tenth more
/// (smaller decision groups; docs/benchmarks.md).
pub const UNANALYZED_PER_CONNECTION: usize = 8;

/// What a worker found, for the decider.
struct Fetched {
    q: QueuedUrl,
    /// The page a revisit revisits, as recorded (`q.revisit`).
    previous: Option<Box<StoredPage>>,
    /// The response's `ETag` and `Last-Modified`.
    validators: crate::fetch::Validators,
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
    /// What the WARC writer needs of the response (`output.warc`, and an
    /// HTTP response arrived).
    capture: Option<Box<Capture>>,
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
    /// A revisit answered 304 Not Modified.
    NotModified,
    /// Parsed content.
    Page(Box<Analysis>),
}

/// Early pages of a host, and of each section of it, are kept until their
/// template settles (see [`Decider::refresh_provisional`]): at most this
/// many per host or section...
const PROVISIONAL_PER_HOST: usize = 48;
/// ...and this many in all (in memory each keeps its block hashes, 9
/// bytes per block, and its prepared words go to `kept::KeptFile`).
const PROVISIONAL_MAX: usize = 20_000;

/// A young page as the analysis hands it to the decider.
struct Young {
    prepared: crate::features::PreparedDoc,
    /// The page, kept only for min-hash sketches (`[dedup] verify`).
    doc: Option<Extracted>,
    /// Its block hashes, and which were template blocks.
    blocks: Vec<u64>,
    member: Vec<bool>,
}

/// The CPU work's result for one page.
struct Analysis {
    /// The page's template-learning key ([`crate::features::template_key`]).
    template: String,
    /// The parsed page, while its host is young (its template may change),
    /// with the [`block_hash`](crate::features::block_hash) of each of its
    /// blocks and whether the template it was fingerprinted under held it.
    young: Option<Young>,
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
    /// The body, for the WARC files (`output.warc`).
    body: Option<Vec<u8>>,
}

fn now_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-11-24T22:55:19.123Z`).
fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// Body and text hashes [`dedup::KnownContent`] holds before it starts over
/// (two per page with text): 7/8 of 2^15, what a hash table of 2^15 slots
/// holds, about 1 MB. An exact duplicate of a page older than the cache's
/// window is analysed in full (CPU only: the decision reads the exact-hash
/// index).
const KNOWN_CONTENT_MAX: usize = (1 << 15) / 8 * 7;

/// gzip level of WARC records: the fastest. Compression is most of what
/// WARC output costs the crawl (docs/warc.md, "Cost").
const WARC_GZIP_LEVEL: u32 = 1;

/// The WARC writer of a crawl into `out` (`DIR/warc/`).
fn warc_writer(settings: &Settings, out: &Path) -> std::result::Result<WarcWriter, crate::warc::WarcError> {
    let robots = if settings.politeness.respect_robots {
        "obey"
    } else {
        "ignore"
    };
    WarcWriter::create(
        &CrawlDir::new(out).warc(),
        WarcOptions {
            max_file_bytes: settings.output.warc_max_bytes,
            user_agent: settings.crawl.user_agent_header(),
            info: vec![
                ("robots".into(), robots.into()),
                ("operator".into(), settings.crawl.contact_url.clone()),
            ],
            level: WARC_GZIP_LEVEL,
        },
    )
}

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
    // A worker joining a crawl needs no seeds (the first worker seeds it).
    let seeds = if opts.resume || (opts.worker.is_some() && opts.seeds.is_empty()) {
        Vec::new()
    } else {
        parse_seeds(&canon, &opts.seeds)?
    };
    if opts.recrawl.is_some() && !opts.resume {
        return Err(Error::InvalidInput(
            "a recrawl round revisits a stored crawl: use it with --resume".into(),
        ));
    }
    if opts.resume && !store_dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{}: no crawl to resume (no store/ in it); start one without --resume",
            opts.out.display()
        )));
    }
    if opts.worker.is_some() {
        if settings.store.backend != StoreBackend::Redis {
            return Err(Error::InvalidInput(
                "a worker shares its crawl on a Redis Cluster: set [store] backend = \"redis\"".into(),
            ));
        }
        if opts.resume || opts.recrawl.is_some() {
            return Err(Error::InvalidInput(
                "a worker joins its crawl as it is: start it again without --resume or --recrawl".into(),
            ));
        }
    }
    if !opts.resume && opts.worker.is_none() && store_dir.exists() {
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
    let warc = match settings.output.warc.then(|| warc_writer(&settings, &opts.out)) {
        Some(Err(e)) => {
            if !opts.resume {
                remove_new_crawl(&opts.out, created_out, had_log);
            }
            return Err(e.into());
        }
        Some(Ok(w)) => Some(w),
        None => None,
    };
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
            // The settings of this run, for `report`, `explain` and `--resume`.
            let path = opts.out.join(crate::config::SETTINGS_FILE);
            std::fs::write(&path, settings.effective.to_toml()).map_err(|e| Error::io(&path, e))?;
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
    let seed_urls: Vec<Url> = match store.meta("seeds") {
        Ok(Some(v)) => String::from_utf8_lossy(&v)
            .lines()
            .filter_map(|l| Url::parse(l).ok())
            .collect(),
        _ => Vec::new(),
    };
    // The seeds' sitemaps are read by the process that seeded the crawl.
    let sitemap_seeds = if frontier.seeded_here() { &seed_urls[..] } else { &[] };
    let sitemaps = sitemaps::Sitemaps::new(&settings, &opts.out, sitemap_seeds);
    // A worker of a shared crawl keeps its per-address and rate limits
    // crawl-wide, in the store.
    let shared_limits = opts.worker.and_then(|_| frontier.store().shared_limits());
    let ip_limits = crate::politeness::ip::IpLimits::new(&settings);
    let ip_limits = Arc::new(match (&shared_limits, opts.worker) {
        (Some(l), Some(w)) => ip_limits.shared(&settings, l.clone(), w),
        _ => ip_limits,
    });
    // The learner is the analysis threads' and, for the comparisons of
    // content sketches outside the templates, the sketch index's.
    let templates = Arc::new(std::mem::replace(
        &mut dedup_state.templates,
        TemplateLearner::new(&settings.features),
    ));
    // Each worker of a shared crawl learns its own templates, so there a
    // comparison outside them would depend on which worker decides.
    if settings.dedup.verify_outside_templates && opts.worker.is_none() {
        let sketches = std::mem::take(&mut dedup_state.sketches);
        dedup_state.sketches = sketches.with_templates(Some(templates.clone()));
    }
    let shared = Arc::new(Shared {
        focus,
        politeness: Politeness::new(&settings),
        retry: RetryPolicy::new(&settings.politeness),
        fetcher: fetcher.clone(),
        fx: feature_extractor(&settings),
        templates: templates.clone(),
        verifier: verifier(&settings),
        canon,
        rate: crate::politeness::rate::RateCap::new(&settings, shared_limits.clone()),
        known: dedup::KnownContent::new(KNOWN_CONTENT_MAX),
        analysis: pool::Pool::new(cores, |i| format!("simcrawl-analyze-{i}"))
            .map_err(|e| Error::io("analysis threads", e))?,
        in_flight: AtomicUsize::new(0),
        unanalyzed: AtomicUsize::new(0),
        peak_unanalyzed: AtomicUsize::new(0),
        max_unanalyzed: UNANALYZED_PER_CONNECTION * settings.crawl.concurrency.max(1),
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
        metrics: Arc::new(Metrics::new(Some(&opts.out))),
        sitemaps,
        worker: opts.worker.map(|_| WorkerShared::default()),
        // A worker joining a crawl must not take the pages other workers
        // decided and have not committed yet for ghosts.
        ghosts: if opts.worker.is_some() {
            shared_dedup::Ghosts::default()
        } else {
            shared_dedup::Ghosts::at_start()
        },
    });
    let worker_name = opts.worker.map(worker_name);
    if let Some(name) = &worker_name {
        tokio::spawn(lease_loop(shared.clone(), name.clone()));
    }
    // A recrawl round: the due pages go back into their hosts' queues.
    let round = match opts.recrawl {
        Some(r) => Some(r),
        None if opts.resume && shared.settings.recrawl.enabled => Some(crate::recrawl::Round::Due {
            now_ms: now_ms(SystemTime::now()),
        }),
        None => None,
    };
    if let Some(round) = round {
        let due = crate::recrawl::due_pages(store.as_ref(), &shared.settings.recrawl, round)?;
        let queued = shared.frontier.revisit(&due)?;
        tracing::info!("recrawl: {queued} recorded pages queued for a revisit ({round:?})");
    }
    // Stops when dropped, so also on an early return.
    let server = match opts.metrics {
        Some(listener) => {
            let sh = shared.clone();
            let probe: metrics::ProbeFn = Arc::new(move || sh.probe());
            Some(MetricsServer::start(shared.metrics.clone(), probe, listener)?)
        }
        None => None,
    };

    // The decider thread.
    let warc = warc.map(WarcThread::spawn).transpose()?;
    let decider = Decider::new(
        shared.clone(),
        &log_path,
        &previous,
        dedup_state,
        opts.on_page.clone(),
        warc,
    )?;
    // Resume: the earlier runs' records are dropped here; the decider has
    // counted and observed them.
    let previous = previous.len() as u64;
    let (tx, rx) = mpsc::channel::<Fetched>(shared.settings.crawl.concurrency * 2);
    let decider_thread = std::thread::Builder::new()
        .name("simcrawl-decider".into())
        .spawn(move || decider.run(rx))
        .map_err(|e| Error::io("decider thread", e))?;

    let progress = Progress::new(opts.progress, shared.settings.crawl.max_pages);
    let stop = dispatch(&shared, tx, shutdown, &progress).await;
    if let Some(sm) = &shared.sitemaps {
        sm.stop();
    }
    let decider_result = decider_thread.join();
    progress.finish();

    let mut decided = match decider_result {
        Ok(r) => r?,
        Err(_) => return Err(Error::thread_panicked("decider")),
    };
    shared.metrics.set_index_size(decided.index_len);
    if let Some(w) = &shared.worker {
        w.stop();
    }
    shared.frontier.write_pending()?;
    shared.frontier.store().flush()?;
    if let Some(name) = &worker_name {
        let sh = shared.clone();
        let name = name.clone();
        tokio::task::spawn_blocking(move || leave(&sh, &name))
            .await
            .map_err(|e| Error::Internal(format!("leaving the crawl: {e}")))??;
    }
    // Only after the flush: every page id below the watermark is in the store.
    if let Some(index) = &decided.index {
        save_index(index, &snapshot, store.next_page_id(), crawl_tag);
    }
    write_flush_mark(&store_dir, store.as_ref());

    let stats = decided.stats(store.as_ref())?;
    let stats_path = CrawlDir::new(&opts.out).stats();
    let json = serde_json::to_vec_pretty(&stats).map_err(|e| Error::Internal(format!("crawl stats: {e}")))?;
    std::fs::write(&stats_path, json).map_err(|e| Error::io(&stats_path, e))?;

    let logged = decided.logged.clone();
    // The index and the decider's sets are not needed past this point.
    drop(decided);
    let reports = if shared.settings.output.reports {
        Some(report::write_from_log(&opts.out, &shared.settings)?)
    } else {
        None
    };
    let mut by_decision: Vec<(String, u64)> = logged
        .by_decision
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), *v))
        .collect();
    by_decision.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let metrics = {
        let sh = shared.clone();
        tokio::task::spawn_blocking(move || sh.metrics.snapshot(sh.probe()))
            .await
            .map_err(|e| Error::Internal(format!("metrics snapshot: {e}")))?
    };
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(CrawlSummary {
        pages: logged.records - previous,
        total_pages: logged.records,
        bytes: logged.bytes,
        by_decision,
        queued: shared.frontier.len(),
        stop,
        elapsed: started.elapsed(),
        stats,
        reports,
        metrics,
        sitemaps: shared.sitemaps.as_ref().map(|s| s.totals()).unwrap_or_default(),
        peak_unanalyzed: shared.peak_unanalyzed.load(Ordering::Relaxed),
    })
}
