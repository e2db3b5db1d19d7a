//! Crawls of the built-in test web shared by several `simcrawl worker`
//! processes on the local Redis Cluster (docs/distributed.md): the same
//! pages as one process, each fetched once, per-host gaps across workers,
//! the duplicate decisions scored against the truth; and a worker killed
//! with SIGKILL mid-crawl. Skipped with a message when no cluster can be
//! started (a failure with `SIMCRAWL_REQUIRE_REDIS`).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use simcrawl::canon::Canonicalizer;
use simcrawl::crawllog::{records_of, PageRecord};
use simcrawl::model::CrawlDir;
use simcrawl::store::{redis_local, Store};
use simcrawl::testweb::RunningTestWeb;
use simcrawl::Settings;

use crate::crawl::{assert_per_host_gaps, assert_trap_bounded_over, canonical_set, crawl_web, start_web};

/// The delay between two requests to one host in these crawls.
const DELAY_MS: u64 = 40;

/// The `--set` overrides of a shared crawl named `name`, or `None` (with a
/// printed message) when no local cluster can be started.
fn shared_overrides(name: &str) -> Option<Vec<String>> {
    let nodes = redis_local::cluster_for_test("the worker tests")?;
    Some(overrides_on(name, &nodes))
}

/// A worker's `--set` overrides of a shared crawl named `name` on `nodes`.
fn overrides_on(name: &str, nodes: &[String]) -> Vec<String> {
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    vec![
        "store.backend=\"redis\"".into(),
        format!("store.crawl_name=\"{name}\""),
        format!("store.redis_nodes=[{}]", list.join(",")),
        "store.lease_ms=2000".into(),
        format!("politeness.min_delay_ms={DELAY_MS}"),
    ]
}

/// `simcrawl ARGS` with the test web's settings and `sets`, writing `out`,
/// seeded with `seeds`.
fn simcrawl(args: &[&str], sets: &[String], out: &Path, seeds: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_simcrawl"));
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/test.toml");
    cmd.args(args).arg("--config").arg(config);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    cmd.arg("--out").arg(out).args(seeds);
    cmd.env("RUST_LOG", "warn");
    cmd
}

fn logs(dir: &Path) -> Vec<PageRecord> {
    records_of(&CrawlDir::new(dir).logs())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// How often each URL (host and target, robots.txt aside) was requested.
fn fetch_counts(server: &RunningTestWeb) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for r in server.requests().iter().filter(|r| r.target != "/robots.txt") {
        *n.entry(format!("{}{}", r.host, r.target)).or_default() += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_crawl_like_one_process() {
    let name = redis_local::unique_crawl_name("workers");
    let Some(sets) = shared_overrides(&name) else { return };
    let server = start_web().await;
    let (one_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, one) = crawl_web(&server, one_dir.path(), &[]).await;
    let fetched_by_one = fetch_counts(&server);
    server.clear_requests();

    let out = dir.path().join("shared");
    // Crawl-wide limits: every host of the test web is 127.0.0.1.
    let mut sets = sets;
    sets.push(format!("politeness.max_in_flight_per_ip={IP_SLOTS}"));
    sets.push(format!("politeness.max_requests_per_sec={RATE}"));
    let mut cmd = simcrawl(&["crawl", "--workers", "3"], &sets, &out, &server.seeds());
    let status = tokio::task::spawn_blocking(move || cmd.status().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "simcrawl crawl --workers 3: {status}");

    // Each worker wrote its own log; together they are one crawl.
    let dirs = CrawlDir::new(&out).logs();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    let records = logs(&out);
    let mut seen = HashSet::new();
    for r in &records {
        assert!(seen.insert(r.canonical.clone()), "{} recorded twice", r.canonical);
    }
    // No URL fetched more often than by one process (which fetches again
    // only what answered an error to retry).
    for (url, n) in fetch_counts(&server) {
        let once = fetched_by_one.get(&url).copied().unwrap_or(1);
        assert!(n <= once.max(1), "{url} fetched {n} times (one process: {once})");
    }
    let (a, b) = (canonical_set(&records), canonical_set(&one));
    assert_trap_bounded_over(&a, 3);
    let differ: Vec<_> = a
        .symmetric_difference(&b)
        .filter(|u| !u.contains("/calendar/"))
        .collect();
    assert!(differ.is_empty(), "three workers and one process differ: {differ:?}");
    assert_per_host_gaps(&server, DELAY_MS);
    assert_crawl_wide_limits(&server);

    let canon = Canonicalizer::new(&Settings::test_web(&[]).unwrap().canon);
    let score = simcrawl::demo::score(&server.truth(), &records, &canon, &server.requests());
    assert!(score.false_decisions.is_empty(), "{:?}", score.false_decisions);
    assert!(score.missed.is_empty(), "{:?}", score.missed);
    assert_eq!(score.exact.precision(), 1.0);
    assert_eq!(score.exact.recall(), 1.0);
    assert_eq!(score.near.precision(), 1.0);
    assert_eq!(score.near.recall(), 1.0);

    // The reports merge the workers' logs; the store holds each page once.
    assert!(out.join("reports/summary.json").is_file());
    let store = simcrawl::store::open_crawl_store(&CrawlDir::new(&out).store()).unwrap();
    assert_eq!(store.pages_recorded().unwrap(), records.len() as u64);
    assert!(store.iter_queue().next().is_none(), "the queue is empty at the end");
    assert_new_pages_in_shared_tables(store.as_ref(), &records);
}

/// Requests in flight to the test web's one address at once, over every
/// worker, in [`three_workers_crawl_like_one_process`].
const IP_SLOTS: usize = 2;
/// Requests per second, over every worker, in the same test.
const RATE: u64 = 200;

/// At no moment more than [`IP_SLOTS`] requests in flight at the server,
/// and no ten page requests started sooner than the rate allows.
fn assert_crawl_wide_limits(server: &RunningTestWeb) {
    let requests = server.requests();
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for r in &requests {
        edges.push((r.start, 1));
        edges.push((r.end.expect("request finished"), -1));
    }
    // Ends before starts at the same instant.
    edges.sort_unstable();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    assert!(
        most as usize <= IP_SLOTS,
        "{most} requests in flight at once (limit {IP_SLOTS})"
    );
    // robots.txt requests are outside the rate (as in one process).
    let mut starts: Vec<Instant> = requests
        .iter()
        .filter(|r| r.target != "/robots.txt")
        .map(|r| r.start)
        .collect();
    starts.sort_unstable();
    let ten = Duration::from_micros(10 * 1_000_000 / RATE);
    for w in starts.windows(11) {
        let took = w[10].duration_since(w[0]);
        // 5 ms of slack for timer granularity.
        assert!(
            took + Duration::from_millis(5) >= ten,
            "ten requests in {took:?} (rate {RATE}/s)"
        );
    }
}

/// Every new page's fingerprint is in the near-duplicate tables the
/// workers share on the cluster, and its body hash in their exact maps.
fn assert_new_pages_in_shared_tables(store: &dyn Store, records: &[PageRecord]) {
    let settings = Settings::test_web(&[]).unwrap();
    let buckets = store
        .table_buckets()
        .expect("a shared crawl keeps its tables in the store");
    let mut tables = simcrawl::index::SharedIndex::from_settings(&settings.index, settings.simhash.k, buckets);
    let fps: Vec<u64> = records
        .iter()
        .filter(|r| r.decision == simcrawl::model::Decision::New)
        .filter_map(|r| r.simhash.as_deref())
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .collect();
    assert!(fps.len() > 20, "{} new pages", fps.len());
    tables.prefetch(&fps).unwrap();
    for fp in fps {
        let mut found = Vec::new();
        tables.query(fp, &mut found).unwrap();
        assert!(
            found.iter().any(|m| m.distance == 0),
            "{fp:016x} is not in the shared tables"
        );
    }
    let owners = store
        .content_owners()
        .expect("a shared crawl keeps its exact maps in the store");
    let keys: Vec<_> = records
        .iter()
        .filter(|r| r.decision == simcrawl::model::Decision::New)
        .filter_map(|r| r.content_hash.as_deref())
        .map(|h| {
            let bytes: Vec<u8> = (0..32)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            let key = simcrawl::store::owner_key(&bytes.try_into().unwrap());
            (simcrawl::store::HashKind::Body, key)
        })
        .collect();
    assert!(!keys.is_empty());
    let got = owners.owners(&keys).unwrap();
    assert!(
        got.iter().all(Option::is_some),
        "a new page's body hash has no owner in the shared maps"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_loses_nothing() {
    let name = redis_local::unique_crawl_name("kill");
    let Some(sets) = shared_overrides(&name) else { return };
    let server = start_web().await;
    let (one_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, one) = crawl_web(&server, one_dir.path(), &[]).await;
    server.clear_requests();
    let out = dir.path().join("shared");
    let seeds = server.seeds();
    let workers = spawn_workers(&sets, &out, &seeds);
    // Kill worker 2 once it has written 40 records.
    let victim_log = CrawlDir::new(CrawlDir::new(&out).worker(2)).log();
    let started = Instant::now();
    let killed_at = loop {
        let n = std::fs::read_to_string(&victim_log).map_or(0, |t| t.lines().count());
        if n >= 40 {
            break n;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "worker 2 wrote {n} records in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut workers = workers;
    workers[1].kill().unwrap();
    workers[1].wait().unwrap();
    for (i, mut w) in workers.into_iter().enumerate() {
        if i != 1 {
            let status = tokio::task::spawn_blocking(move || w.wait().unwrap()).await.unwrap();
            assert!(status.success(), "worker {}: {status}", i + 1);
        }
    }

    // Nothing lost: every page of a one-process crawl is recorded once in
    // the store (the killed worker's log may also hold pages it had not
    // committed, which another worker fetched again).
    let records = logs(&out);
    let (a, b) = (canonical_set(&records), canonical_set(&one));
    let differ: Vec<_> = a
        .symmetric_difference(&b)
        .filter(|u| !u.contains("/calendar/"))
        .collect();
    assert!(
        differ.is_empty(),
        "killed at {killed_at} records; differs from one process: {differ:?}"
    );
    assert_recorded_once(&out, &b, &format!("killed at {killed_at} records"));
    // The merged logs hold each page once: the killed worker's records of
    // pages it had decided and not committed are voided by the worker that
    // took their hosts over. Only a fetch without content it had not
    // committed (an error, a redirect) can stay in its log beside the
    // fetch again.
    let mut count: HashMap<&str, usize> = HashMap::new();
    for r in &records {
        *count.entry(&r.canonical).or_default() += 1;
    }
    let victim: HashMap<String, simcrawl::model::Decision> = records_of(&[victim_log])
        .unwrap()
        .map(|r| r.unwrap())
        .map(|r| (r.canonical, r.decision))
        .collect();
    for (u, n) in count {
        let outcome = victim.get(u).is_some_and(|d| d.verdict().is_none());
        assert!(n == 1 || (n == 2 && outcome), "{u} logged {n} times");
    }
    let voided = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("voided.txt")).ok())
        .map(|t| t.lines().count())
        .sum::<usize>();
    eprintln!("killed at {killed_at} records; {voided} records voided");
}

/// Three `simcrawl worker` processes (ids 1 to 3) on the crawl in `out`.
fn spawn_workers(sets: &[String], out: &Path, seeds: &[String]) -> Vec<std::process::Child> {
    (1..=3)
        .map(|id| {
            simcrawl(&["worker", "--id", &id.to_string()], sets, out, seeds)
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Waits for every worker; each must end with success.
async fn wait_all(workers: Vec<std::process::Child>) {
    for (i, mut w) in workers.into_iter().enumerate() {
        let status = tokio::task::spawn_blocking(move || w.wait().unwrap()).await.unwrap();
        assert!(status.success(), "worker {}: {status}", i + 1);
    }
}

/// The shared crawl in `out` recorded each page once, every URL of
/// `expected` (calendar-trap months aside), and left nothing queued.
fn assert_recorded_once(out: &Path, expected: &HashSet<String>, what: &str) {
    let marker = simcrawl::store::RedisMarker::read(&CrawlDir::new(CrawlDir::new(out).worker(1)).store())
        .unwrap()
        .unwrap();
    let store = simcrawl::store::RedisStore::open(&marker.nodes, &marker.name).unwrap();
    let mut once = HashSet::new();
    for p in store.iter_pages() {
        let p = p.unwrap();
        assert!(
            once.insert(p.canonical.clone()),
            "{what}: {} recorded twice",
            p.canonical
        );
    }
    let missing: Vec<_> = expected
        .difference(&once)
        .filter(|u| !u.contains("/calendar/"))
        .collect();
    assert!(missing.is_empty(), "{what}: not recorded: {missing:?}");
    assert!(
        store.iter_queue().next().is_none(),
        "{what}: the queue is empty at the end"
    );
}

/// Records in the workers' logs so far.
fn logged(out: &Path) -> usize {
    CrawlDir::new(out)
        .logs()
        .iter()
        .map(|l| std::fs::read_to_string(l).map_or(0, |t| t.lines().count()))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_outlive_a_master_failover() {
    let Some(cluster) = crate::redis_backend::OwnCluster::start(7200) else {
        // Prints why (or fails with SIMCRAWL_REQUIRE_REDIS).
        let _ = shared_overrides("unused");
        return;
    };
    let nodes = cluster.nodes();
    let mut sets = overrides_on(&redis_local::unique_crawl_name("failover"), &nodes);
    // Leases outlast the failover (node timeout 2 s, then the election):
    // no host changes hands while its worker waits for the cluster.
    sets.push("store.lease_ms=10000".into());
    let server = start_web().await;
    let (one_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, one) = crawl_web(&server, one_dir.path(), &[]).await;
    let out = dir.path().join("shared");
    let seeds = server.seeds();
    let workers = spawn_workers(&sets, &out, &seeds);
    let started = Instant::now();
    while logged(&out) < 150 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} records in 60 s",
            logged(&out)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at = logged(&out);
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.fail_over();
        cluster
    })
    .await
    .unwrap();
    wait_all(workers).await;
    let records = logs(&out);
    assert!(records.len() > at, "the crawl went on after the failover");
    let b = canonical_set(&one);
    assert_recorded_once(&out, &b, &format!("failed over at {at} records"));
    drop(cluster);
}

/// `bench crawl --backend redis --workers 1,2` prints a row per number of
/// workers, with the ratios to the disk store.
#[test]
fn bench_crawl_with_workers_prints_a_row_per_count() {
    let Some(_) = redis_local::cluster_for_test("bench crawl --workers") else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_simcrawl"))
        .args([
            "bench",
            "crawl",
            "--backend",
            "redis",
            "--workers",
            "1,2",
            "--pages",
            "300",
            "--max-pages",
            "300",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for row in ["disk, 1", "redis, 1", "redis, 2"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?}:\n{text}"));
        let pages: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!((250..=300).contains(&pages), "{line}");
    }
    assert!(text.contains("calls/page"), "{text}");
}

/// A worker stopped (SIGSTOP) for longer than its leases last loses its
/// hosts to the others; when it goes on, what it still had in flight is
/// either recorded by it or dropped as recorded by another, and the crawl
/// ends with every page recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_worker_loses_its_hosts_and_nothing_is_recorded_twice() {
    let name = redis_local::unique_crawl_name("stall");
    let Some(sets) = shared_overrides(&name) else { return };
    let server = start_web().await;
    let (one_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, one) = crawl_web(&server, one_dir.path(), &[]).await;
    let out = dir.path().join("shared");
    let seeds = server.seeds();
    let workers = spawn_workers(&sets, &out, &seeds);
    let victim_log = CrawlDir::new(CrawlDir::new(&out).worker(2)).log();
    let started = Instant::now();
    while std::fs::read_to_string(&victim_log).map_or(0, |t| t.lines().count()) < 30 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "worker 2 wrote too little in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = workers[1].id().to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(ok.success(), "kill {sig} {pid}");
    };
    signal("-STOP");
    // Longer than the 2 s leases: the others take worker 2's hosts.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    signal("-CONT");
    wait_all(workers).await;
    assert_recorded_once(&out, &canonical_set(&one), "stalled 3.5 s");
    // The stalled worker's lines of pages another worker recorded first
    // are voided: the merged logs hold each page once.
    let mut seen = HashSet::new();
    for r in logs(&out) {
        assert!(seen.insert(r.canonical.clone()), "{} logged twice", r.canonical);
    }
}

/// A worker without seeds joins a crawl; with no crawl under the name yet
/// it says so (exit 2) and leaves no directory behind.
#[test]
fn a_worker_without_seeds_needs_a_crawl_to_join() {
    let name = redis_local::unique_crawl_name("nojoin");
    let Some(sets) = shared_overrides(&name) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shared");
    let done = simcrawl(&["worker", "--id", "1"], &sets, &out, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(err.contains("give the first worker the seed URLs"), "{err}");
    assert!(!CrawlDir::new(&out).worker(1).join("store").exists());
}
