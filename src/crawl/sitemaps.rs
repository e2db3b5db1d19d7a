//! Sitemaps in the crawl loop: the first worker to reach an origin (after
//! its robots.txt) starts one task for the origin's sitemaps — the
//! `Sitemap:` lines of its robots.txt, and `/sitemap.xml` when the origin is
//! a seed's (`[sitemaps] root_sitemap`). The task reads them one after
//! another, and the indexes they lead to, each fetch under the same
//! politeness as a page (robots.txt rules of the sitemap's own host, the
//! host's delay and in-flight limit, the crawl-wide rate, the server
//! address's slots), parses each file off the async threads
//! ([`crate::sitemap::parse`]) and offers its URLs to the frontier with
//! their sitemap component. Sitemap fetches are not records of
//! `pages.jsonl` and do not count toward `max_pages` (like robots.txt);
//! each file is a line of `DIR/sitemaps.jsonl`.
//!
//! The dispatcher does not end the crawl while a sitemap task runs (its
//! URLs may be all there is to crawl); a crawl that stops for another
//! reason (max_pages, shutdown) aborts them. Which sitemaps were read is
//! kept in memory only: a resumed crawl reads them again (their URLs are
//! then known, and only queued ones with a lower component change).

use std::collections::VecDeque;
use std::io::Write as _;

use parking_lot::Mutex;

use super::*;
use crate::config::SitemapSettings;
use crate::host::host_key;
use crate::politeness::RobotsEntry;
use crate::sitemap::{self, Format, Limits, Outcome, SitemapRecord, SitemapTotals, Source};

/// URLs offered to the frontier in one call (one lock and one store batch).
const OFFER_CHUNK: usize = 1024;

/// The crawl's sitemap state (one per run).
pub(super) struct Sitemaps {
    settings: SitemapSettings,
    /// Origins of the seeds: their `/sitemap.xml` is read.
    seed_origins: HashSet<String>,
    /// Origins whose sitemaps were started in this run.
    started: Mutex<HashSet<String>>,
    /// Sitemap URLs read or skipped in this run (each is read once).
    seen: Mutex<HashSet<String>>,
    /// Sitemap files fetched per host.
    per_host: Mutex<HashMap<String, u32>>,
    /// Sitemap tasks running.
    running: AtomicUsize,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// `DIR/sitemaps.jsonl`, opened with the first record.
    path: PathBuf,
    log: Mutex<Option<std::fs::File>>,
    totals: Mutex<SitemapTotals>,
    /// The crawl's day, for `<lastmod>` ages.
    today: i64,
}

/// One sitemap to read.
struct Job {
    url: Url,
    source: Source,
    parent: Option<String>,
    nesting: u32,
    /// Hosts its entries may be on: its own, and the host whose robots.txt
    /// named it (or the chain of indexes above it).
    hosts: Vec<String>,
}

impl Sitemaps {
    /// The sitemap state of a crawl writing to `out` with these seeds, or
    /// None when `[sitemaps] enabled` is off.
    pub(super) fn new(settings: &Settings, out: &Path, seeds: &[Url]) -> Option<Self> {
        let s = &settings.sitemaps;
        s.enabled.then(|| Sitemaps {
            settings: s.clone(),
            seed_origins: seeds.iter().map(Politeness::origin_key).collect(),
            started: Mutex::new(HashSet::new()),
            seen: Mutex::new(HashSet::new()),
            per_host: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            tasks: Mutex::new(Vec::new()),
            path: CrawlDir::new(out).sitemaps(),
            log: Mutex::new(None),
            totals: Mutex::new(SitemapTotals::default()),
            today: sitemap::days_since_epoch(SystemTime::now()),
        })
    }

    /// Sitemap tasks running.
    pub(super) fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// This run's totals so far.
    pub(super) fn totals(&self) -> SitemapTotals {
        self.totals.lock().clone()
    }

    /// Abort the tasks still running (the crawl is over) and flush the log.
    pub(super) fn stop(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
        if let Some(f) = self.log.lock().as_mut() {
            let _ = f.flush();
        }
    }

    fn record(&self, shared: &Shared, r: &SitemapRecord) {
        tracing::debug!(url = %r.url, outcome = ?r.outcome, reason = ?r.reason, queued = r.queued, "sitemap");
        self.totals.lock().add(r);
        shared.metrics.record_sitemap(outcome_name(r.outcome), r.queued);
        let mut log = self.log.lock();
        if log.is_none() {
            match std::fs::OpenOptions::new().create(true).append(true).open(&self.path) {
                Ok(f) => *log = Some(f),
                Err(e) => {
                    tracing::warn!("{}: {e}", self.path.display());
                    return;
                }
            }
        }
        if let (Some(f), Ok(mut line)) = (log.as_mut(), serde_json::to_vec(r)) {
            line.push(b'\n');
            if let Err(e) = f.write_all(&line) {
                tracing::warn!("{}: {e}", self.path.display());
            }
        }
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Read => "read",
        Outcome::Cut => "cut",
        Outcome::Broken => "broken",
        Outcome::Failed => "failed",
        Outcome::Skipped => "skipped",
    }
}

/// Start reading the sitemaps of `url`'s origin, once per run: called by a
/// worker after the origin's robots.txt (`robots`: None when robots.txt is
/// not respected).
pub(super) fn start(shared: &Arc<Shared>, url: &Url, robots: Option<&RobotsEntry>) {
    let Some(sm) = &shared.sitemaps else { return };
    let origin = Politeness::origin_key(url);
    if !sm.started.lock().insert(origin.clone()) {
        return;
    }
    let robots_host = host_key(url);
    let mut jobs = VecDeque::new();
    let robots_url = format!("{origin}/robots.txt");
    for line in robots.map(|r| r.robots.sitemaps()).unwrap_or_default() {
        match shared.canon.parse(line) {
            Ok(u) => {
                let mut hosts = vec![host_key(&u)];
                if hosts[0] != robots_host {
                    hosts.push(robots_host.clone());
                }
                jobs.push_back(Job {
                    url: u,
                    source: Source::Robots,
                    parent: Some(robots_url.clone()),
                    nesting: 0,
                    hosts,
                });
            }
            Err(e) => {
                let r = SitemapRecord::new(line, Source::Robots, Some(robots_url.clone()), 0)
                    .skipped(format!("not a URL: {e}"));
                sm.record(shared, &r);
            }
        }
    }
    if sm.settings.root_sitemap && sm.seed_origins.contains(&origin) {
        if let Ok(u) = Url::parse(&format!("{origin}/sitemap.xml")) {
            if !jobs.iter().any(|j| j.url == u) {
                jobs.push_back(Job {
                    url: u,
                    source: Source::Root,
                    parent: None,
                    nesting: 0,
                    hosts: vec![robots_host],
                });
            }
        }
    }
    if jobs.is_empty() {
        return;
    }
    sm.running.fetch_add(1, Ordering::AcqRel);
    let sh = shared.clone();
    let task = tokio::spawn(async move {
        let mut jobs = jobs;
        while let Some(job) = jobs.pop_front() {
            let r = read(&sh, job, &mut jobs).await;
            if let Some(sm) = &sh.sitemaps {
                sm.record(&sh, &r);
            }
        }
        if let Some(sm) = &sh.sitemaps {
            sm.running.fetch_sub(1, Ordering::AcqRel);
        }
        sh.wake.notify_one();
    });
    sm.tasks.lock().push(task);
}

/// Fetch and read one sitemap; its index entries become `jobs`, its URLs
/// offers.
async fn read(shared: &Arc<Shared>, job: Job, jobs: &mut VecDeque<Job>) -> SitemapRecord {
    let Some(sm) = &shared.sitemaps else {
        return SitemapRecord::new(job.url.as_str(), job.source, job.parent, job.nesting);
    };
    let mut rec = SitemapRecord::new(job.url.as_str(), job.source, job.parent.clone(), job.nesting);
    let url = &job.url;
    if !sm.seen.lock().insert(url.to_string()) {
        return rec.skipped("already read in this run");
    }
    if let Err(reason) = shared.frontier.check_scope(url, 0) {
        return rec.skipped(format!("out of scope: {reason}"));
    }
    if shared.settings.politeness.respect_robots {
        match shared.politeness.check(&shared.robots_fetcher, url).await {
            RobotsVerdict::Allow => {}
            RobotsVerdict::Disallow => return rec.skipped("robots.txt disallows it"),
            RobotsVerdict::Unavailable { .. } => {
                rec.outcome = Outcome::Failed;
                rec.reason = Some("robots.txt unavailable (5xx or unreachable)".into());
                return rec;
            }
        }
    }
    let host = host_key(url);
    {
        let mut per_host = sm.per_host.lock();
        let n = per_host.entry(host.clone()).or_insert(0);
        if *n >= sm.settings.max_files_per_host {
            return rec.skipped(format!(
                "{host} reached sitemaps.max_files_per_host ({})",
                sm.settings.max_files_per_host
            ));
        }
        *n += 1;
    }
    let permit = match shared.politeness.acquire(url).await {
        Ok(p) => p,
        Err(e) => {
            rec.outcome = Outcome::Failed;
            rec.reason = Some(e.to_string());
            return rec;
        }
    };
    if let Some(rate) = &shared.rate {
        rate.wait().await;
    }
    let result = shared.robots_fetcher.fetch(url).await;
    permit.finish(&RequestOutcome::of(&result));
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            rec.outcome = Outcome::Failed;
            rec.reason = Some(e.to_string());
            return rec;
        }
    };
    rec.status = resp.status;
    rec.fetched_at = Some(rfc3339(SystemTime::now()));
    rec.outcome = Outcome::Failed;
    if resp.is_redirect() {
        match resp.location.as_deref().map(|l| shared.canon.resolve(url, l)) {
            Some(Ok(target)) => {
                rec.reason = Some(format!("redirect to {target}"));
                let mut hosts = job.hosts.clone();
                let h = host_key(&target);
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
                jobs.push_back(Job {
                    url: target,
                    source: Source::Redirect,
                    parent: Some(url.to_string()),
                    nesting: job.nesting,
                    hosts,
                });
            }
            Some(Err(e)) => rec.reason = Some(format!("bad redirect Location: {e}")),
            None => rec.reason = Some(format!("HTTP {} without Location", resp.status)),
        }
        return rec;
    }
    if !(200..300).contains(&resp.status) {
        rec.reason = Some(format!("HTTP {}", resp.status));
        return rec;
    }
    let limits = Limits {
        max_entries: sm.settings.max_urls_per_file,
        max_bytes: sm.settings.max_file_bytes,
    };
    let truncated = resp.truncated;
    let body = resp.body;
    let parsed = match tokio::task::spawn_blocking(move || sitemap::parse(&body, &limits)).await {
        Ok(p) => p,
        Err(e) => {
            rec.reason = Some(format!("parse task failed: {e}"));
            return rec;
        }
    };
    rec.format = parsed.format;
    rec.gzip = parsed.gzip;
    rec.bytes = parsed.bytes;
    rec.entries = parsed.entries.len() as u64;
    rec.skipped = parsed.skipped;
    rec.cut = parsed.cut;
    rec.reason = parsed.error.clone();
    if truncated && rec.cut.is_none() {
        // The download stopped at fetch.max_body_bytes: the end is missing.
        rec.cut = Some(sitemap::Cut::MaxBytes);
        rec.reason = Some(format!(
            "body larger than fetch.max_body_bytes ({} bytes)",
            shared.settings.fetch.max_body_bytes
        ));
    }
    rec.outcome = match (parsed.format, &parsed.error, rec.cut) {
        (None, _, _) => Outcome::Failed,
        (_, _, Some(_)) => Outcome::Cut,
        (_, Some(_), None) => Outcome::Broken,
        _ => Outcome::Read,
    };
    if parsed.format == Some(Format::Index) {
        let mut too_deep = 0u64;
        for e in &parsed.entries {
            let child = match shared.canon.parse(&e.loc) {
                Ok(u) => u,
                Err(_) => {
                    rec.skipped += 1;
                    continue;
                }
            };
            if !job.hosts.contains(&host_key(&child)) {
                rec.other_host += 1;
            } else if job.nesting >= sm.settings.max_nesting {
                too_deep += 1;
            } else {
                jobs.push_back(Job {
                    url: child,
                    source: Source::Index,
                    parent: Some(url.to_string()),
                    nesting: job.nesting + 1,
                    hosts: job.hosts.clone(),
                });
            }
        }
        if too_deep > 0 {
            rec.reason = Some(format!(
                "{too_deep} listed sitemaps not read: deeper than sitemaps.max_nesting ({})",
                sm.settings.max_nesting
            ));
        }
        return rec;
    }
    offer(shared, sm, &job, &parsed.entries, &mut rec);
    rec
}

/// Offer a sitemap's URLs to the frontier (each once, with its component).
fn offer(shared: &Arc<Shared>, sm: &Sitemaps, job: &Job, entries: &[sitemap::Entry], rec: &mut SitemapRecord) {
    let mut at: HashMap<String, usize> = HashMap::new();
    let parent = job.url.to_string();
    let mut all: Vec<Candidate> = Vec::new();
    for e in entries {
        let u = match shared.canon.parse(&e.loc) {
            Ok(u) => u,
            Err(_) => {
                rec.skipped += 1;
                continue;
            }
        };
        if !job.hosts.contains(&host_key(&u)) {
            rec.other_host += 1;
            continue;
        }
        let component = sitemap::score(e, sm.today);
        match at.get(u.as_str()) {
            Some(&i) => {
                let c: &mut Candidate = &mut all[i];
                c.sitemap = c.sitemap.map(|v| v.max(component));
                rec.known += 1;
            }
            None => {
                at.insert(u.to_string(), all.len());
                let discovered = (e.loc.trim() != u.as_str()).then(|| e.loc.trim().to_string());
                all.push(Candidate {
                    discovered,
                    parent: Some(parent.clone()),
                    sitemap: Some(component),
                    ..Candidate::new(u, sm.settings.url_depth)
                });
            }
        }
    }
    drop(at);
    for chunk in all.chunks(OFFER_CHUNK) {
        match shared.frontier.offer_many(chunk) {
            Ok(offers) => {
                for o in offers {
                    match o {
                        Offer::Enqueued => rec.queued += 1,
                        Offer::AlreadySeen => rec.known += 1,
                        Offer::OutOfScope(_) | Offer::Trap(_) => rec.out_of_scope += 1,
                    }
                }
            }
            Err(e) => {
                tracing::error!("frontier: {e}");
                shared.failed.store(true, Ordering::Relaxed);
                return;
            }
        }
        shared.wake.notify_one();
    }
}
