//! Live metrics of a crawl (beside the loop: `crawl` counts into them, the
//! `--metrics` endpoint and the [`CrawlSummary`](crate::CrawlSummary) read
//! them).
//!
//! [`Metrics`] holds a `prometheus-client` registry and the handles of its
//! counters. The decider counts each record it writes to `pages.jsonl`
//! ([`Metrics::record_page`]: a few atomic adds and one histogram
//! observation), so the counters agree with the log line for line; what the
//! frontier and politeness know (URLs queued, host states) and the bytes on
//! disk are read at scrape time only ([`Probe`], [`Metrics::snapshot`]).
//! Counters start at zero in each run (a resumed crawl counts from its
//! restart, as Prometheus counters do).
//!
//! [`MetricsServer`] serves them while the crawl runs: `GET /metrics` in the
//! Prometheus text format (version 0.0.4), `GET /status` as one JSON object
//! ([`Snapshot`]).
//!
//! This module depends on `model` only; the crawl loop fills in the probe.

mod server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use parking_lot::Mutex;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde::Serialize;

use crate::model::{CrawlDir, Decision};
pub use server::{MetricsServer, ProbeFn};

/// The `status_class` label values of `simcrawl_fetches_total`: the HTTP
/// status class of the response, `none` for a request that got no response
/// (network error, timeout).
pub const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"];

/// Upper bounds of the fetch latency histogram, seconds (5 ms to ~10 s).
fn latency_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.005, 2.0, 12)
}

/// Why the metrics endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address could not be listened on (in use, not local, no permission).
    #[error("metrics address {addr}: cannot listen there: {source} (give a free local IP:PORT, e.g. 127.0.0.1:9898)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// The listener could not be handed to the async runtime.
    #[error("metrics listener: {0}")]
    Listener(std::io::Error),
}

/// Bind `addr` for [`MetricsServer`] (port 0 picks a free port).
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, MetricsError> {
    std::net::TcpListener::bind(addr).map_err(|source| MetricsError::Bind { addr, source })
}

/// What the crawl loop knows at scrape time (read under the frontier's and
/// politeness' locks, once per scrape).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Probe {
    /// URLs queued (not in flight).
    pub queued: u64,
    /// URLs handed out and not yet recorded or re-queued (fetching, being
    /// analysed or waiting for the decider).
    pub in_flight: u64,
    /// Hosts with queued URLs that may be fetched now.
    pub hosts_ready: u64,
    /// Hosts with queued URLs waiting for their politeness delay, a
    /// backoff or a free in-flight slot.
    pub hosts_waiting: u64,
    /// Origins parked by politeness after repeated failures.
    pub hosts_parked: u64,
}

/// Host counts of a [`Snapshot`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Hosts {
    /// See [`Probe::hosts_ready`].
    pub ready: u64,
    /// See [`Probe::hosts_waiting`].
    pub waiting: u64,
    /// See [`Probe::hosts_parked`].
    pub parked: u64,
}

/// Share of the content verdicts (new, exact and near duplicates) that
/// were duplicates, 0 before the first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DuplicateRate {
    /// `exact_duplicate / (new + exact_duplicate + near_duplicate)`.
    pub exact: f64,
    /// `near_duplicate / (new + exact_duplicate + near_duplicate)`.
    pub near: f64,
}

/// The counters and gauges at one moment: the body of `GET /status`, and
/// [`CrawlSummary::metrics`](crate::CrawlSummary::metrics) at the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Seconds since the crawl started (milliseconds precision).
    pub elapsed_seconds: f64,
    /// Records written to `pages.jsonl` in this run, by decision (every
    /// decision listed, in `pages.jsonl` spelling).
    pub pages: BTreeMap<&'static str, u64>,
    /// The sum of `pages`.
    pub pages_total: u64,
    /// Recorded requests by status class ([`STATUS_CLASSES`]).
    pub fetches: BTreeMap<&'static str, u64>,
    /// Requests answered with a retryable failure and tried again later
    /// (not in `fetches`: only the attempt that is recorded is).
    pub fetch_retries: u64,
    /// Body bytes of the recorded fetches (the sum of `bytes` in `pages.jsonl`).
    pub bytes: u64,
    /// Exact and near duplicates among the content verdicts (4 decimals).
    pub duplicate_rate: DuplicateRate,
    /// URLs queued.
    pub queued: u64,
    /// URLs in flight ([`Probe::in_flight`]).
    pub in_flight: u64,
    /// Host states.
    pub hosts: Hosts,
    /// Fingerprints in the near-duplicate index.
    pub index_size: u64,
    /// Bytes of the files under `DIR/store`.
    pub store_bytes: u64,
    /// Bytes of the files under `DIR/warc` (0 without it).
    pub warc_bytes: u64,
}

impl Snapshot {
    /// Records with this decision.
    pub fn pages_of(&self, d: Decision) -> u64 {
        self.pages.get(d.as_str()).copied().unwrap_or(0)
    }
}

type Label = [(&'static str, &'static str); 1];

/// A crawl's metrics (see the module docs). Shared by the crawl's tasks.
pub struct Metrics {
    registry: Registry,
    started: Instant,
    /// The crawl directory (store and WARC sizes), if any.
    dir: Option<PathBuf>,
    /// Per decision, indexed by `Decision as usize` (the order of [`Decision::ALL`]).
    pages: Vec<Counter>,
    /// Per status class, indexed like [`STATUS_CLASSES`].
    fetches: Vec<Counter>,
    latency: Histogram,
    bytes: Counter,
    retries: Counter,
    /// Sitemap files by outcome (`sitemap::Outcome` spelling).
    sitemap_files: Family<Label, Counter>,
    sitemap_urls: Counter,
    index_size: Gauge,
    queued: Gauge,
    in_flight: Gauge,
    hosts_ready: Gauge,
    hosts_waiting: Gauge,
    hosts_parked: Gauge,
    store_bytes: Gauge,
    warc_bytes: Gauge,
    elapsed: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// Held while a scrape sets the scrape-time gauges and encodes them.
    scrape: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The index of a status in [`STATUS_CLASSES`] (0: no response).
fn status_class(status: u16) -> usize {
    match status {
        0 => 5,
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        _ => 4,
    }
}

/// Bytes of the regular files under `dir` (0 when it does not exist; files
/// that vanish during the walk are skipped).
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) if m.is_file() => total += m.len(),
                _ => {}
            }
        }
    }
    total
}

impl Metrics {
    /// Fresh metrics of a crawl writing to `dir` (None: no directory sizes).
    pub fn new(dir: Option<&Path>) -> Self {
        let mut r = Registry::with_prefix("simcrawl");
        let pages = Family::<Label, Counter>::default();
        r.register(
            "pages",
            "Pages recorded in pages.jsonl by this run, by decision",
            pages.clone(),
        );
        let fetches = Family::<Label, Counter>::default();
        r.register(
            "fetches",
            "Recorded HTTP requests by status class (none: no response)",
            fetches.clone(),
        );
        let latency = Histogram::new(latency_buckets());
        r.register(
            "fetch_latency_seconds",
            "Response time of the recorded requests, seconds",
            latency.clone(),
        );
        let counter = |r: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            r.register(name, help, c.clone());
            c
        };
        let gauge = |r: &mut Registry, name: &str, help: &str| {
            let g = Gauge::default();
            r.register(name, help, g.clone());
            g
        };
        let bytes = counter(&mut r, "fetched_bytes", "Body bytes of the recorded fetches");
        let retries = counter(
            &mut r,
            "fetch_retries",
            "Requests answered with a retryable failure and tried again later",
        );
        let sitemap_files = Family::<Label, Counter>::default();
        r.register(
            "sitemap_files",
            "Sitemap files by outcome (read, cut, broken, failed, skipped)",
            sitemap_files.clone(),
        );
        let sitemap_urls = counter(&mut r, "sitemap_urls_queued", "URLs queued from sitemaps");
        let index_size = gauge(&mut r, "index_fingerprints", "Fingerprints in the near-duplicate index");
        let queued = gauge(&mut r, "queued_urls", "URLs queued in the frontier");
        let in_flight = gauge(&mut r, "in_flight", "URLs being fetched, analysed or decided");
        let hosts_ready = gauge(&mut r, "hosts_ready", "Hosts with queued URLs that may be fetched now");
        let hosts_waiting = gauge(
            &mut r,
            "hosts_waiting",
            "Hosts with queued URLs waiting for a politeness delay, a backoff or an in-flight slot",
        );
        let hosts_parked = gauge(
            &mut r,
            "hosts_parked",
            "Origins parked by politeness after repeated failures",
        );
        let store_bytes = gauge(&mut r, "store_bytes", "Bytes of the files under DIR/store");
        let warc_bytes = gauge(&mut r, "warc_bytes", "Bytes of the files under DIR/warc");
        let elapsed = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        r.register("elapsed_seconds", "Seconds since the crawl started", elapsed.clone());
        Metrics {
            pages: Decision::ALL
                .iter()
                .map(|d| pages.get_or_create_owned(&[("decision", d.as_str())]))
                .collect(),
            fetches: STATUS_CLASSES
                .iter()
                .map(|c| fetches.get_or_create_owned(&[("status_class", *c)]))
                .collect(),
            registry: r,
            started: Instant::now(),
            dir: dir.map(Path::to_path_buf),
            latency,
            bytes,
            retries,
            sitemap_files,
            sitemap_urls,
            index_size,
            queued,
            in_flight,
            hosts_ready,
            hosts_waiting,
            hosts_parked,
            store_bytes,
            warc_bytes,
            elapsed,
            scrape: Mutex::new(()),
        }
    }

    /// Count one record written to `pages.jsonl`: its decision, and when a
    /// request was sent (`requested`), its status class (status 0: no
    /// response), its response time and its body bytes.
    pub fn record_page(&self, decision: Decision, status: u16, requested: bool, latency_ms: Option<u64>, bytes: u64) {
        self.pages[decision as usize].inc();
        if requested {
            self.fetches[status_class(status)].inc();
        }
        if let Some(ms) = latency_ms {
            self.latency.observe(ms as f64 / 1000.0);
        }
        if bytes > 0 {
            self.bytes.inc_by(bytes);
        }
    }

    /// Count a request that is tried again later.
    pub fn record_retry(&self) {
        self.retries.inc();
    }

    /// Count one sitemap file (`outcome`: read, cut, broken, failed,
    /// skipped) and the URLs it queued.
    pub fn record_sitemap(&self, outcome: &'static str, queued: u64) {
        self.sitemap_files.get_or_create(&[("outcome", outcome)]).inc();
        if queued > 0 {
            self.sitemap_urls.inc_by(queued);
        }
    }

    /// The near-duplicate index now holds `n` fingerprints.
    pub fn set_index_size(&self, n: usize) {
        self.index_size.set(n as i64);
    }

    /// The counters now, with `probe`'s values and the directory sizes
    /// (walks `DIR/store` and `DIR/warc`: call it off the async threads).
    pub fn snapshot(&self, probe: Probe) -> Snapshot {
        let pages: BTreeMap<&'static str, u64> = Decision::ALL
            .iter()
            .map(|d| (d.as_str(), self.pages[*d as usize].get()))
            .collect();
        let fetches = STATUS_CLASSES
            .iter()
            .zip(&self.fetches)
            .map(|(c, n)| (*c, n.get()))
            .collect();
        let count = |d: Decision| self.pages[d as usize].get();
        let (exact, near) = (count(Decision::ExactDuplicate), count(Decision::NearDuplicate));
        let verdicts = count(Decision::New) + exact + near;
        // Rounded for reading: 4 decimals of a rate, milliseconds of time.
        let round = |x: f64, scale: f64| (x * scale).round() / scale;
        let rate = |n: u64| {
            if verdicts == 0 {
                0.0
            } else {
                round(n as f64 / verdicts as f64, 1e4)
            }
        };
        let dir = self.dir.as_deref();
        Snapshot {
            elapsed_seconds: round(self.started.elapsed().as_secs_f64(), 1e3),
            pages_total: pages.values().sum(),
            pages,
            fetches,
            fetch_retries: self.retries.get(),
            bytes: self.bytes.get(),
            duplicate_rate: DuplicateRate {
                exact: rate(exact),
                near: rate(near),
            },
            queued: probe.queued,
            in_flight: probe.in_flight,
            hosts: Hosts {
                ready: probe.hosts_ready,
                waiting: probe.hosts_waiting,
                parked: probe.hosts_parked,
            },
            index_size: self.index_size.get().max(0) as u64,
            store_bytes: dir.map_or(0, |d| dir_bytes(&CrawlDir::new(d).store())),
            warc_bytes: dir.map_or(0, |d| dir_bytes(&CrawlDir::new(d).warc())),
        }
    }

    /// `GET /status`: [`Metrics::snapshot`] as JSON.
    pub fn status_json(&self, probe: Probe) -> String {
        serde_json::to_string_pretty(&self.snapshot(probe)).unwrap_or_else(|_| "{}".into())
    }

    /// `GET /metrics`: every metric in the Prometheus text format (version
    /// 0.0.4, content type [`Metrics::CONTENT_TYPE`]), the scrape-time
    /// gauges set from `probe` and the directory sizes.
    pub fn encode(&self, probe: Probe) -> String {
        let s = self.snapshot(probe);
        let _one_scrape_at_a_time = self.scrape.lock();
        let set = |g: &Gauge, v: u64| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        set(&self.queued, s.queued);
        set(&self.in_flight, s.in_flight);
        set(&self.hosts_ready, s.hosts.ready);
        set(&self.hosts_waiting, s.hosts.waiting);
        set(&self.hosts_parked, s.hosts.parked);
        set(&self.store_bytes, s.store_bytes);
        set(&self.warc_bytes, s.warc_bytes);
        self.elapsed.set(s.elapsed_seconds);
        let mut out = String::with_capacity(4096);
        // Writing to a String does not fail.
        let _ = prometheus_text::encode(&mut out, &self.registry);
        out
    }

    /// The content type of [`Metrics::encode`]'s text.
    pub const CONTENT_TYPE: &'static str = prometheus_text::CONTENT_TYPE;
}

#[cfg(test)]
mod tests;
