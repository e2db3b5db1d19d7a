//! End-to-end crawls of the built-in test web (in-process, ports chosen by
//! the OS): coverage, exactly-once, robots.txt, duplicate decisions against
//! the ground truth, the `drop` policy, politeness timing, and resume after
//! `kill -9`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use simcrawl::canon::Canonicalizer;
use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::Decision;
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::Settings;

pub(crate) async fn start_web() -> RunningTestWeb {
    let web = Arc::new(TestWeb::new(TestWebOptions {
        slow_ms: 300,
        ..Default::default()
    }));
    RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

pub(crate) async fn crawl_web(
    server: &RunningTestWeb,
    dir: &Path,
    overrides: &[&str],
) -> (crawl::CrawlSummary, Vec<PageRecord>) {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let settings = Settings::test_web(&overrides).unwrap();
    let summary = crawl::run(settings, CrawlOptions::new(dir, server.seeds()), std::future::pending())
        .await
        .unwrap();
    let records = read_log(&dir.join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap();
    (summary, records)
}

pub(crate) fn canonical_set(records: &[PageRecord]) -> HashSet<String> {
    records.iter().map(|r| r.canonical.clone()).collect()
}

pub(crate) fn assert_once(records: &[PageRecord]) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in records {
        *counts.entry(&r.canonical).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "URLs recorded more than once: {twice:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_crawl_matches_ground_truth() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (summary, records) = crawl_web(&server, dir.path(), &[]).await;
    let truth = server.truth();
    let settings = Settings::test_web(&[]).unwrap();
    let canon = Canonicalizer::new(&settings.canon);

    assert_eq!(summary.stop, crawl::StopReason::Completed);
    assert_once(&records);
    // Every reachable, allowed page was fetched (by canonical URL).
    let fetched = canonical_set(&records);
    let missing: Vec<String> = truth
        .reachable
        .iter()
        .map(|u| canon.parse(u).unwrap().to_string())
        .filter(|u| !fetched.contains(u))
        .collect();
    assert!(
        missing.is_empty(),
        "{} reachable URLs never fetched: {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );

    let score = simcrawl::demo::score(&truth, &records, &canon, &server.requests());
    assert!(
        score.robots_violations.is_empty(),
        "disallowed URLs requested: {:?}",
        score.robots_violations
    );
    assert!(
        score.false_decisions.is_empty(),
        "false duplicate decisions: {:?}",
        score.false_decisions
    );
    assert!(score.missed.is_empty(), "missed duplicates: {:?}", score.missed);
    assert_eq!(score.exact.precision(), 1.0);
    assert_eq!(score.exact.recall(), 1.0);
    assert_eq!(score.near.precision(), 1.0);
    assert_eq!(score.near.recall(), 1.0);
    assert!(score.exact.expected > 100 && score.near.expected >= 10, "{score:?}");

    // An exact copy of a decided body takes its original's fingerprint
    // instead of computing one (dedup::KnownContent).
    let exact = records
        .iter()
        .filter(|r| r.decision == Decision::ExactDuplicate)
        .count() as u64;
    let reused = summary.stats.fingerprints_reused.expect("counted");
    assert!(
        reused > 0 && reused <= exact,
        "{reused} reused of {exact} exact duplicates"
    );
    // Young sites' pages are fingerprinted again as their templates settle;
    // some turn back to the template blocks they had and take back the
    // fingerprint they had then.
    let again = summary.stats.refingerprints.expect("counted");
    let back = summary.stats.refingerprints_taken_back.expect("counted");
    assert!(
        back > 0 && back < again,
        "{back} of {again} re-fingerprints took back a fingerprint"
    );
    // Each of those carries its original's simhash (a copy analysed before
    // its original was decided computes its own, which may differ when the
    // host's template changed in between).
    let by_url: HashMap<&str, &PageRecord> = records.iter().map(|r| (r.canonical.as_str(), r)).collect();
    let same = records
        .iter()
        .filter(|r| r.decision == Decision::ExactDuplicate)
        .filter(|r| r.simhash == by_url[r.dup_of.as_deref().expect("names its original")].simhash)
        .count() as u64;
    assert!(
        same >= reused,
        "{same} exact duplicates carry their original's simhash; {reused} reused it"
    );

    // Non-content outcomes are recorded, not fatal.
    let by_decision = |d: Decision| records.iter().filter(|r| r.decision == d).count();
    assert!(by_decision(Decision::Redirect) > 0);
    assert!(
        by_decision(Decision::TooLarge) == 1,
        "the 2 MiB body is over the 1 MiB cap"
    );
    assert!(by_decision(Decision::NotHtml) >= 1);
    assert!(by_decision(Decision::Disallowed) >= 1);
    assert!(
        records
            .iter()
            .any(|r| r.error.as_deref().is_some_and(|e| e.contains("redirect loop"))),
        "loop recorded"
    );

    // Reports were written at the end, and the mirror report finds exactly
    // the truth's mirror pairs (full and partial, with their prefixes).
    let reports = summary.reports.expect("reports");
    assert!(reports.files.iter().any(|f| f.ends_with("mirrors.json")));
    let strip_port = |h: &str| h.split(':').next().unwrap_or(h).to_string();
    // Mirror pairs (overlap pairs, such as two versions of one site, are
    // shared content, not mirrors).
    let mut found: Vec<(String, String, String, String)> = simcrawl::mirror::detect(&records, &settings.mirror)
        .pairs
        .iter()
        .filter(|p| p.kind.is_mirror())
        .map(|p| {
            let a = (strip_port(&p.host_a), p.prefix_a.clone());
            let b = (strip_port(&p.host_b), p.prefix_b.clone());
            let (x, y) = if a <= b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1)
        })
        .collect();
    let mut expected: Vec<(String, String, String, String)> = truth
        .mirrors
        .iter()
        .map(|m| {
            let a = (m.host_a.clone(), m.prefix_a.clone());
            let b = (m.host_b.clone(), m.prefix_b.clone());
            let (x, y) = if a <= b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1)
        })
        .collect();
    found.sort();
    expected.sort();
    assert_eq!(found, expected, "mirror pairs vs ground truth");

    // `explain` answers for a near duplicate.
    let near = records
        .iter()
        .find(|r| r.decision == Decision::NearDuplicate)
        .expect("a near duplicate");
    let text = simcrawl::report::explain::explain(dir.path(), &near.canonical, &settings).unwrap();
    assert!(
        text.contains("near_duplicate of") && text.contains("priority"),
        "{text}"
    );
}

/// Stops a crawl at `max_pages`, optionally damages the index snapshot, and
/// resumes it to the end. Returns the log and how many lines preceded the stop.
async fn stop_and_resume(server: &RunningTestWeb, dir: &Path, damage: bool) -> (Vec<PageRecord>, usize) {
    let settings = Settings::test_web(&["crawl.max_pages=150".to_string()]).unwrap();
    let first = crawl::run(settings, CrawlOptions::new(dir, server.seeds()), std::future::pending())
        .await
        .unwrap();
    assert_eq!(first.stop, crawl::StopReason::MaxPages);
    let snapshot = dir.join(simcrawl::model::CrawlDir::INDEX_SNAPSHOT);
    let len = std::fs::metadata(&snapshot)
        .expect("a clean stop writes the index snapshot")
        .len();
    assert!(len > 100, "snapshot of {len} bytes");
    if damage {
        let mut bytes = std::fs::read(&snapshot).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&snapshot, bytes).unwrap();
    }
    let before = read_log(&dir.join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap().len();
    let mut opts = CrawlOptions::new(dir, Vec::new());
    opts.resume = true;
    crawl::run(Settings::test_web(&[]).unwrap(), opts, std::future::pending())
        .await
        .unwrap();
    (
        read_log(&dir.join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap(),
        before,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_from_index_snapshot_keeps_duplicate_decisions() {
    let server = start_web().await;
    let full_dir = tempfile::tempdir().unwrap();
    let (_, full) = crawl_web(&server, full_dir.path(), &[]).await;
    // Exact duplicates do not depend on what the template learner (memory
    // only) knew before the stop; near-duplicate decisions can shift by a few.
    let dups = |r: &[PageRecord]| r.iter().filter(|r| r.decision == Decision::ExactDuplicate).count();
    for damage in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (records, before) = stop_and_resume(&server, dir.path(), damage).await;
        assert_once(&records);
        // The same pages but for which calendar months fall inside the
        // trap's bound (see `resume_after_kill_matches_an_uninterrupted_crawl`).
        let (a, b) = (canonical_set(&records), canonical_set(&full));
        assert_trap_bounded(&a);
        let differ: Vec<_> = a
            .symmetric_difference(&b)
            .filter(|u| !u.contains("/calendar/"))
            .collect();
        assert!(differ.is_empty(), "damaged snapshot: {damage}: {differ:?}");
        assert_eq!(dups(&records), dups(&full), "damaged snapshot: {damage}");
        // Pages decided after the resume found near-duplicates among the
        // pages indexed before the stop (snapshot, or rebuild when damaged).
        let early: HashSet<&str> = records[..before].iter().map(|r| r.canonical.as_str()).collect();
        let across = records[before..]
            .iter()
            .filter(|r| r.decision == Decision::NearDuplicate)
            .filter(|r| r.dup_of.as_deref().is_some_and(|d| early.contains(d)))
            .count();
        assert!(
            across > 0,
            "no near-duplicate of a page indexed before the stop (damaged: {damage})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_policy_does_not_follow_duplicates_links() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (summary, records) = crawl_web(&server, dir.path(), &["dedup.policy=drop"]).await;
    assert_once(&records);
    let decision: HashMap<&str, Decision> = records.iter().map(|r| (r.canonical.as_str(), r.decision)).collect();
    for r in &records {
        if let Some(p) = &r.parent {
            let pd = decision.get(p.as_str()).copied();
            assert!(
                !pd.is_some_and(Decision::is_duplicate),
                "{} was fetched from duplicate page {p}",
                r.canonical
            );
        }
    }
    let dropped = summary.stats.dup_links_dropped.unwrap_or(0);
    assert!(dropped > 0, "drop policy saved no fetch: {:?}", summary.stats);

    let dir2 = tempfile::tempdir().unwrap();
    let (_, all) = crawl_web(&server, dir2.path(), &["dedup.policy=keep"]).await;
    assert!(
        records.len() + dropped as usize <= all.len(),
        "drop: {} + {dropped} saved vs keep: {}",
        records.len(),
        all.len()
    );
}

/// Every host's requests at least its delay apart (its robots.txt
/// Crawl-delay, else `default_ms`), never two in flight at once, from the
/// test web's request log.
pub(crate) fn assert_per_host_gaps(server: &RunningTestWeb, default_ms: u64) {
    let truth = server.truth();
    let requests = server.requests();
    let mut per_host: HashMap<&str, Vec<&simcrawl::testweb::RequestLogEntry>> = HashMap::new();
    for r in &requests {
        per_host.entry(&r.host).or_default().push(r);
    }
    for (host, reqs) in &mut per_host {
        reqs.sort_by_key(|r| r.start);
        let delay = Duration::from_millis(truth.crawl_delays.get(*host).map_or(default_ms, |s| s * 1000));
        for w in reqs.windows(2) {
            let gap = w[1].start.duration_since(w[0].start);
            // 5 ms of slack for timer granularity.
            assert!(
                gap + Duration::from_millis(5) >= delay,
                "{host}: two requests {gap:?} apart (< {delay:?}): {} then {}",
                w[0].target,
                w[1].target
            );
            let prev_end = w[0].end.expect("request finished");
            assert!(
                prev_end <= w[1].start,
                "{host}: two requests in flight at once ({} and {})",
                w[0].target,
                w[1].target
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn politeness_holds_during_a_crawl() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = crawl_web(&server, dir.path(), &["politeness.min_delay_ms=60"]).await;
    assert_once(&records);
    assert_per_host_gaps(&server, 60);
    let requests = server.requests();
    // The 503-robots host: only its robots.txt was requested.
    let r503: Vec<&str> = requests
        .iter()
        .filter(|r| r.host == "robots-503.test")
        .map(|r| r.target.as_str())
        .collect();
    assert!(r503.iter().all(|t| *t == "/robots.txt"), "{r503:?}");
    // The 429 page was retried, and only after its Retry-After (1 s).
    let busy: Vec<_> = requests.iter().filter(|r| r.target.starts_with("/busy")).collect();
    if busy.len() >= 2 {
        assert!(busy[1].start.duration_since(busy[0].start) >= Duration::from_millis(990));
    }
}

/// Pages in [`chain_page`]'s site.
const CHAIN_PAGES: usize = 150;

/// Page `i` of a one-host chain (`/` is page 0, `/p/i` the others): words of
/// its own and a link to page i + 1, the only place that page is linked.
fn chain_page(path: &str) -> Option<String> {
    let i: usize = match path {
        "/" => 0,
        p => p.strip_prefix("/p/")?.parse().ok()?,
    };
    if i >= CHAIN_PAGES {
        return None;
    }
    Some(format!(
        "<html><head><title>page {i}</title></head><body><h1>Page {i}</h1><p>{}</p><a href=\"/p/{}\">next</a></body></html>",
        text_words(i as u64 + 1, 80),
        i + 1
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_is_fetched_again_once_its_page_is_decided() {
    // With the politeness delays off, a host's next request waits for its
    // last page's decision (its out-links offered), not for the commit of
    // the page's group up to GROUP_WAIT (20 ms) later: a chain of 150
    // pages, each linked only from the one before, would take at least 3 s
    // at one page per commit.
    let port = crate::support::serve_site(chain_page).await;
    let sets = [
        "politeness.min_delay_ms=0",
        "politeness.delay_factor=0.0",
        "crawl.max_pages=1000",
        "crawl.max_depth=1000",
    ]
    .map(String::from);
    let (_dir, records) = crate::support::crawl_port(port, &sets).await;
    let pages: Vec<&PageRecord> = records.iter().filter(|r| r.status == 200).collect();
    assert_eq!(pages.len(), CHAIN_PAGES, "the whole chain is fetched");
    let at = |r: &PageRecord| humantime::parse_rfc3339(&r.fetched_at).expect("an RFC 3339 time");
    let span = at(pages[pages.len() - 1])
        .duration_since(at(pages[0]))
        .unwrap_or_default();
    assert!(
        span < Duration::from_millis(1500),
        "{CHAIN_PAGES} pages of one host took {span:?}"
    );
}

fn simcrawl_bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_simcrawl"))
}

fn log_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

/// A `simcrawl crawl` child process over the test web (the kill and signal
/// tests): its seeds file, output directory and command line.
struct CliCrawl {
    _dir: tempfile::TempDir,
    seeds: std::path::PathBuf,
    out: std::path::PathBuf,
    /// `--set` arguments of the first run (a resume keeps the crawl's own).
    sets: Vec<String>,
}

impl CliCrawl {
    fn new(server: &RunningTestWeb) -> CliCrawl {
        let dir = tempfile::tempdir().unwrap();
        let seeds = dir.path().join("seeds.txt");
        std::fs::write(&seeds, server.seeds().join("\n")).unwrap();
        let out = dir.path().join("out");
        CliCrawl {
            _dir: dir,
            seeds,
            out,
            sets: Vec::new(),
        }
    }

    /// A new crawl from the seeds, or `--resume`; output discarded.
    fn command(&self, resume: bool) -> std::process::Command {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/test.toml");
        let mut c = simcrawl_bin();
        c.args(["crawl", "--set", "output.reports=false", "--config"])
            .arg(config)
            .arg("--out")
            .arg(&self.out);
        if resume {
            c.arg("--resume");
        } else {
            c.arg("--seeds").arg(&self.seeds);
            for kv in &self.sets {
                c.args(["--set", kv]);
            }
        }
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    }

    fn log(&self) -> std::path::PathBuf {
        self.out.join(simcrawl::model::CrawlDir::LOG_FILE)
    }

    /// Waits (at most 60 s) until the crawl log holds `n` records.
    async fn wait_for_records(&self, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while log_lines(&self.log()) < n && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Runs `--resume` to the end; true when it exits successfully.
    async fn resume(&self) -> bool {
        let mut c = self.command(true);
        tokio::task::spawn_blocking(move || c.status().unwrap())
            .await
            .unwrap()
            .success()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_matches_an_uninterrupted_crawl() {
    kill_resume_and_compare(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_on_the_fjall_store_matches_an_uninterrupted_crawl() {
    let out = kill_resume_and_compare(&["store.engine=fjall"]).await;
    // The resume opened the store on the engine that wrote it.
    let store = out.path().join("out").join(simcrawl::model::CrawlDir::STORE_DIR);
    assert_eq!(
        simcrawl::store::Engine::of_dir(&store),
        Some(simcrawl::store::Engine::Fjall)
    );
}

/// Kill -9 a crawl started with `sets`, resume it to the end, and compare
/// its pages and duplicate clusters with an uninterrupted crawl; returns
/// the killed crawl's directory.
async fn kill_resume_and_compare(sets: &[&str]) -> tempfile::TempDir {
    let server = start_web().await;
    let mut cli = CliCrawl::new(&server);
    cli.sets = sets.iter().map(|s| s.to_string()).collect();
    // Kill -9 the crawl once it has recorded some pages.
    let mut child = cli.command(false).spawn().unwrap();
    cli.wait_for_records(250).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let log = cli.log();
    let before = log_lines(&log);
    assert!(before >= 250, "the crawl recorded {before} pages before the kill");
    // Resume to the end.
    assert!(cli.resume().await);
    let resumed = read_log(&log).unwrap();
    assert_once(&resumed);

    // The same pages as an uninterrupted crawl.
    let dir2 = tempfile::tempdir().unwrap();
    let (_, full) = crawl_web(&server, dir2.path(), &[]).await;
    // Which pages of the calendar trap fall inside its bound, and how many,
    // depends on the fetch order (the chain a month is first linked from),
    // so for them only the bound is checked; every other page must match.
    let (a, b) = (canonical_set(&resumed), canonical_set(&full));
    assert_trap_bounded(&a);
    assert_trap_bounded(&b);
    let only_resumed: Vec<_> = a.difference(&b).filter(|u| !u.contains("/calendar/")).collect();
    let only_full: Vec<_> = b.difference(&a).filter(|u| !u.contains("/calendar/")).collect();
    assert!(
        only_resumed.is_empty() && only_full.is_empty(),
        "resumed-only {only_resumed:?}, full-only {only_full:?}"
    );
    // And the same duplicate clusters (which copy of a cluster comes first
    // depends on the fetch order, so clusters are compared, not decisions):
    // the host templates and verification sketches of the pages before the
    // kill are rebuilt, so the copies fetched after it are still found.
    let (c_resumed, c_full) = (duplicate_clusters(&resumed), duplicate_clusters(&full));
    let differ: Vec<_> = c_resumed.symmetric_difference(&c_full).collect();
    assert!(differ.is_empty(), "clusters differ after the resume: {differ:?}");
    cli._dir
}

/// The calendar trap of the test web is cut by the duplicate-chain rule:
/// a few dozen of its endless months are fetched, not `max_depth` levels.
pub(crate) fn assert_trap_bounded(urls: &HashSet<String>) {
    assert_trap_bounded_over(urls, 1);
}

/// [`assert_trap_bounded`] for a crawl shared by `processes` workers: the
/// trap caps (`max_urls_per_pattern`, `max_duplicate_chain`) count in each
/// worker's memory, so the bound is one process's times the workers
/// (docs/distributed.md).
pub(crate) fn assert_trap_bounded_over(urls: &HashSet<String>, processes: usize) {
    let trap = urls.iter().filter(|u| u.contains("/calendar/")).count();
    assert!(
        (8..=60 * processes).contains(&trap),
        "{trap} calendar pages fetched by {processes} process(es)"
    );
}

/// The duplicate clusters of a crawl (pages joined by their `dup_of`
/// links), each as its sorted URLs; calendar-trap pages left out.
pub(crate) fn duplicate_clusters(records: &[PageRecord]) -> HashSet<Vec<String>> {
    let mut parent: HashMap<String, String> = HashMap::new();
    fn root(parent: &HashMap<String, String>, mut u: String) -> String {
        while let Some(p) = parent.get(&u) {
            if *p == u {
                break;
            }
            u = p.clone();
        }
        u
    }
    for r in records.iter().filter(|r| !r.canonical.contains("/calendar/")) {
        if let Some(of) = &r.dup_of {
            let (a, b) = (root(&parent, r.canonical.clone()), root(&parent, of.clone()));
            if a != b {
                parent.insert(a, b);
            }
        }
    }
    let mut clusters: HashMap<String, Vec<String>> = HashMap::new();
    for u in parent.keys() {
        clusters.entry(root(&parent, u.clone())).or_default().push(u.clone());
    }
    clusters
        .into_iter()
        .map(|(r, mut members)| {
            members.push(r);
            members.sort();
            members.dedup();
            members
        })
        .collect()
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_gracefully_and_resume_finishes() {
    let server = start_web().await;
    let cli = CliCrawl::new(&server);
    let child = cli.command(false).stderr(std::process::Stdio::piped()).spawn().unwrap();
    cli.wait_for_records(60).await;
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}: {err}", output.status);
    assert!(err.contains("SIGTERM: stopping"), "{err}");
    // The clean-stop path ran: the index snapshot is written.
    assert!(cli.out.join(simcrawl::model::CrawlDir::INDEX_SNAPSHOT).is_file());
    let log = cli.log();
    let stopped = read_log(&log).unwrap();
    assert_once(&stopped);
    let full = server.truth().pages.len();
    assert!(
        stopped.len() < full,
        "SIGTERM after {} of ~{full} records",
        stopped.len()
    );
    // --resume finishes the crawl, recording no page twice.
    assert!(cli.resume().await);
    let resumed = read_log(&log).unwrap();
    assert_once(&resumed);
    assert!(resumed.len() > stopped.len());
}

#[test]
fn crawl_cli_rejects_bad_config_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[politeness]\nmin_delay_ms = -1\n").unwrap();
    let out = simcrawl_bin()
        .arg("crawl")
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("politeness.min_delay_ms"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_wide_rate_cap_holds() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = crawl_web(
        &server,
        dir.path(),
        &[
            "politeness.max_requests_per_sec=25",
            "crawl.max_pages=60",
            "politeness.max_in_flight_per_host=8",
        ],
    )
    .await;
    assert_eq!(records.len(), 60);
    let mut starts: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.target != "/robots.txt")
        .map(|r| r.start)
        .collect();
    starts.sort();
    // A burst of 25, then one request per 40 ms: n requests span at least
    // (n - 26) x 40 ms (some records are `disallowed` without a request).
    let n = starts.len();
    assert!(n > 40, "{n} requests");
    let span = starts.last().unwrap().duration_since(starts[0]);
    let min = Duration::from_millis(40 * (n as u64 - 26)).mul_f64(0.9);
    assert!(
        span >= min,
        "{n} requests in {span:?} at 25/s (expected at least {min:?})"
    );
    // No one-second window holds more than the burst plus one second's worth.
    for (i, s) in starts.iter().enumerate() {
        let in_window = starts[i..]
            .iter()
            .take_while(|t| t.duration_since(*s) < Duration::from_secs(1))
            .count();
        assert!(in_window <= 50, "{in_window} requests within one second");
    }
}

/// Issue 22's regression cases in a crawl: the mirror sets of
/// `reports/mirrors.json` hold only true mirrors (the truth's `mirrors`; never
/// a `not_mirrors` pair such as two versions of one site), and on the case
/// hosts (ref.test, manual.test, v1/v2.docs.test) every near-duplicate
/// decision is right and every truth pair is found; no two distinct ref.test
/// pages are called duplicates although several share a simhash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_cases_decisions_and_mirror_sets() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = crawl_web(&server, dir.path(), &[]).await;
    let truth = server.truth();
    let settings = Settings::test_web(&[]).unwrap();
    let canon = Canonicalizer::new(&settings.canon);

    // Mirror sets: every pair of hosts in one set is a truth mirror pair.
    let strip_port = |h: &str| h.split(':').next().unwrap_or(h).to_string();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("reports/mirrors.json")).unwrap()).unwrap();
    let sets = report["sets"].as_array().expect("sets");
    let mirror = |a: &str, b: &str| {
        truth
            .mirrors
            .iter()
            .any(|m| (m.host_a == a && m.host_b == b) || (m.host_a == b && m.host_b == a))
    };
    for set in sets {
        let hosts: Vec<String> = set["hosts"]
            .as_array()
            .expect("hosts")
            .iter()
            .map(|h| strip_port(h.as_str().expect("host")))
            .collect();
        for n in &truth.not_mirrors {
            assert!(
                !(hosts.contains(&n.host_a) && hosts.contains(&n.host_b)),
                "{} and {} are in one mirror set ({}): {hosts:?}",
                n.host_a,
                n.host_b,
                n.why
            );
        }
        for (i, a) in hosts.iter().enumerate() {
            for b in &hosts[i + 1..] {
                assert!(mirror(a, b), "mirror set {hosts:?} pairs {a} and {b}, not mirrors");
            }
        }
    }
    assert_eq!(sets.len(), truth.mirrors.len(), "{sets:?}");

    // Near-duplicate decisions on the case hosts.
    let case = |u: &str| {
        ["//ref.test:", "//manual.test:", "//v1.docs.test:", "//v2.docs.test:"]
            .iter()
            .any(|h| u.contains(h))
    };
    let score = simcrawl::demo::score(&truth, &records, &canon, &server.requests());
    let wrong: Vec<_> = score.false_decisions.iter().filter(|(u, _)| case(u)).collect();
    let by_url: HashMap<&str, &PageRecord> = records.iter().map(|r| (r.canonical.as_str(), r)).collect();
    let explain = |u: &str| {
        by_url.get(u).map_or_else(
            || "not crawled".to_string(),
            |r| {
                format!(
                    "{:?} of {:?}, distance {:?}, resemblance {:?}",
                    r.decision, r.dup_of, r.distance, r.resemblance
                )
            },
        )
    };
    assert!(
        wrong.is_empty(),
        "false duplicate decisions on the case hosts: {:?}",
        wrong
            .iter()
            .map(|(u, of)| format!("{u} -> {of}: {}", explain(u)))
            .collect::<Vec<_>>()
    );
    let missed: Vec<_> = score.missed.iter().filter(|(u, _)| case(u)).collect();
    assert!(
        missed.is_empty(),
        "missed near duplicates on the case hosts: {:?}",
        missed
            .iter()
            .map(|(u, of)| format!("{u} ~ {of}: {}", explain(u)))
            .collect::<Vec<_>>()
    );
    let case_pairs = truth.near_duplicate_pairs.iter().filter(|p| case(&p.a)).count();
    assert_eq!(
        case_pairs, 23,
        "ref.test copies, untranslated chapters, same pages of two versions"
    );
    // The distinct ref.test pairs: never one duplicate cluster, although
    // several are within k of each other by simhash.
    let fp: HashMap<&str, u64> = records
        .iter()
        .filter_map(|r| {
            Some((
                r.canonical.as_str(),
                u64::from_str_radix(r.simhash.as_deref()?, 16).ok()?,
            ))
        })
        .collect();
    let mut close = 0;
    for p in truth
        .distinct_pairs
        .iter()
        .filter(|p| p.kind == simcrawl::testweb::DistinctKind::FewWords)
    {
        let (a, b) = (
            canon.parse(&p.a).unwrap().to_string(),
            canon.parse(&p.b).unwrap().to_string(),
        );
        let (ra, rb) = (by_url[a.as_str()], by_url[b.as_str()]);
        assert!(
            ra.dup_of.as_deref() != Some(b.as_str()) && rb.dup_of.as_deref() != Some(a.as_str()),
            "{a} and {b} are distinct"
        );
        if (fp[a.as_str()] ^ fp[b.as_str()]).count_ones() <= 3 {
            close += 1;
        }
    }
    assert!(
        close >= 5,
        "only {close} distinct ref.test pairs within k = 3 in the crawl"
    );
}

/// Pages of [`chrome_site_page`]'s site besides its copy.
const CHROME_PAGES: usize = 40;

/// `n` words of a pseudo-random text drawn with `seed`.
fn text_words(seed: u64, n: usize) -> String {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let words: Vec<String> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            format!("w{}", (s >> 40) % 20_000)
        })
        .collect();
    words.join(" ")
}

/// A site whose pages share a long chrome of plain paragraphs (2 000
/// words, not marked up as navigation or a footer) around 120 words of
/// their own: `/` links to `/doc/p0.html` … `/doc/p39.html`, and the last
/// of them to `/doc/copy.html`, page 0's text with one word more.
fn chrome_site_page(path: &str) -> Option<String> {
    let chrome: Vec<String> = (0..20)
        .map(|b| format!("<p>{}</p>", text_words(1_000 + b, 100)))
        .collect();
    let page = |title: &str, own: String, extra: &str| {
        format!(
            "<html><head><title>{title}</title></head><body><div>{}</div><h1>{title}</h1><p>{own}</p><div>{}</div>{extra}</body></html>",
            chrome[..10].join(""),
            chrome[10..].join("")
        )
    };
    if path == "/" {
        let links: Vec<String> = (0..CHROME_PAGES)
            .map(|i| format!("<a href=\"/doc/p{i}.html\">p{i}</a>"))
            .collect();
        return Some(format!("<html><body>{}</body></html>", links.join(" ")));
    }
    let name = path.strip_prefix("/doc/")?.strip_suffix(".html")?;
    if name == "copy" {
        return Some(page("Page 0", text_words(0, 120) + " x", ""));
    }
    let i: usize = name.strip_prefix('p')?.parse().ok()?;
    if i >= CHROME_PAGES {
        return None;
    }
    let extra = if i + 1 == CHROME_PAGES {
        "<a href=\"/doc/copy.html\">copy</a>"
    } else {
        ""
    };
    Some(page(&format!("Page {i}"), text_words(i as u64, 120), extra))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_young_sites_pages_are_not_copies_by_their_shared_chrome() {
    // The first pages of a site are decided before its chrome is learned
    // as its template: two of them share 2 000 words of it and resemble
    // each other by it (J about 0.89) whatever their own text. They are
    // not called copies of each other; the copy fetched last still is.
    let port = crate::support::serve_site(chrome_site_page).await;
    let sets = ["politeness.min_delay_ms=0", "politeness.delay_factor=0.0"].map(String::from);
    let (_dir, records) = crate::support::crawl_port(port, &sets).await;
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    assert_eq!(records.len(), CHROME_PAGES + 2, "every page is fetched");
    let near: Vec<(&str, Option<&str>)> = records
        .iter()
        .filter(|r| r.decision == Decision::NearDuplicate)
        .map(|r| (r.url.as_str(), r.dup_of.as_deref()))
        .collect();
    let (copy, p0) = (url("/doc/copy.html"), url("/doc/p0.html"));
    assert_eq!(
        near,
        [(copy.as_str(), Some(p0.as_str()))],
        "only the copy is a near duplicate"
    );
}
