//! Crawls of the built-in test web with `[store] backend = "redis"` on the
//! local Redis Cluster (`scripts/redis-cluster.sh`, started once per test
//! binary): the same pages and duplicate decisions as the sled store, and a
//! stop and resume from the keys in Redis; and a store that outlives a
//! master killed under it (on a cluster of its own, 7100-7105). Skipped with a message when no
//! cluster can be started (a failure with `SIMCRAWL_REQUIRE_REDIS`).

use std::collections::HashMap;

use simcrawl::canon::Canonicalizer;
use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::{CrawlDir, Decision};
use simcrawl::store::{redis_local, RedisMarker};
use simcrawl::Settings;

use crate::crawl::{assert_once, assert_trap_bounded, canonical_set, crawl_web, duplicate_clusters, start_web};

/// The `--set` overrides of a Redis crawl named `name`, or `None` (with a
/// printed message) when no local cluster can be started.
fn redis_overrides(name: &str) -> Option<Vec<String>> {
    let nodes = redis_local::cluster_for_test("the redis backend tests")?;
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    Some(vec![
        "store.backend=\"redis\"".into(),
        format!("store.crawl_name=\"{name}\""),
        format!("store.redis_nodes=[{}]", list.join(",")),
    ])
}

fn counts(records: &[PageRecord]) -> HashMap<Decision, usize> {
    let mut c = HashMap::new();
    for r in records {
        *c.entry(r.decision).or_default() += 1;
    }
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_crawl_matches_sled_crawl() {
    let name = redis_local::unique_crawl_name("e2e");
    let Some(redis) = redis_overrides(&name) else { return };
    let redis: Vec<&str> = redis.iter().map(String::as_str).collect();
    let server = start_web().await;
    let (sled_dir, redis_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sled_summary, sled) = crawl_web(&server, sled_dir.path(), &[]).await;
    let (summary, records) = crawl_web(&server, redis_dir.path(), &redis).await;
    assert_eq!(summary.stop, crawl::StopReason::Completed);
    assert_eq!(sled_summary.stop, crawl::StopReason::Completed);
    assert_once(&records);

    // The same pages (calendar-trap months aside: the trap's cut depends on
    // the fetch order) and the same duplicate clusters.
    let (a, b) = (canonical_set(&records), canonical_set(&sled));
    assert_trap_bounded(&a);
    let differ: Vec<_> = a
        .symmetric_difference(&b)
        .filter(|u| !u.contains("/calendar/"))
        .collect();
    assert!(differ.is_empty(), "redis and sled crawls differ: {differ:?}");
    let (c_redis, c_sled) = (duplicate_clusters(&records), duplicate_clusters(&sled));
    let differ: Vec<_> = c_redis.symmetric_difference(&c_sled).collect();
    assert!(differ.is_empty(), "duplicate clusters differ: {differ:?}");
    let (n_redis, n_sled) = (counts(&records), counts(&sled));
    for d in [
        Decision::ExactDuplicate,
        Decision::Disallowed,
        Decision::Error,
        Decision::Redirect,
    ] {
        assert_eq!(n_redis.get(&d), n_sled.get(&d), "{d:?}");
    }

    // Scored against the test web's truth, as the sled crawl is in crawl.rs.
    let canon = Canonicalizer::new(&Settings::test_web(&[]).unwrap().canon);
    let score = simcrawl::demo::score(&server.truth(), &records, &canon, &server.requests());
    assert!(score.false_decisions.is_empty(), "{:?}", score.false_decisions);
    assert!(score.missed.is_empty(), "{:?}", score.missed);
    assert_eq!(score.exact.precision(), 1.0);
    assert_eq!(score.exact.recall(), 1.0);
    assert_eq!(score.near.precision(), 1.0);
    assert_eq!(score.near.recall(), 1.0);

    // The crawl's state is in Redis, not in a sled store.
    let store_dir = CrawlDir::new(redis_dir.path()).store();
    let marker = RedisMarker::read(&store_dir).unwrap().expect("a marker in DIR/store");
    assert_eq!(marker.name, name);
    assert!(!store_dir.join("db").exists() && !store_dir.join("conf").exists());
    let store = simcrawl::store::open_crawl_store(&store_dir).unwrap();
    assert_eq!(store.pages_recorded().unwrap(), records.len() as u64);
    assert_eq!(store.iter_pages().count(), records.len());
    assert!(store.iter_queue().next().is_none(), "the queue is empty at the end");
    let err = simcrawl::store::DiskStore::open(&store_dir)
        .err()
        .expect("sled refuses it")
        .to_string();
    assert!(err.contains("keeps its store in Redis"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_crawl_stops_and_resumes_from_redis() {
    let name = redis_local::unique_crawl_name("resume");
    let Some(redis) = redis_overrides(&name) else { return };
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let mut first = redis.clone();
    first.push("crawl.max_pages=150".into());
    let s = crawl::run(
        Settings::test_web(&first).unwrap(),
        CrawlOptions::new(dir.path(), server.seeds()),
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!(s.stop, crawl::StopReason::MaxPages);
    let log = dir.path().join(CrawlDir::LOG_FILE);
    let before = read_log(&log).unwrap().len();

    // A new crawl may not take the name of one in Redis.
    let other = tempfile::tempdir().unwrap();
    let err = crawl::run(
        Settings::test_web(&redis).unwrap(),
        CrawlOptions::new(other.path(), server.seeds()),
        std::future::pending(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("already holds a crawl named"), "{err}");
    assert!(!other.path().join(CrawlDir::STORE_DIR).exists());

    // --resume continues from the queue, seen-set and pages in Redis.
    let mut opts = CrawlOptions::new(dir.path(), Vec::new());
    opts.resume = true;
    let s = crawl::run(Settings::test_web(&redis).unwrap(), opts, std::future::pending())
        .await
        .unwrap();
    assert_eq!(s.stop, crawl::StopReason::Completed);
    let records = read_log(&log).unwrap();
    assert_once(&records);
    assert!(records.len() > before + 100, "{before} then {}", records.len());
    assert_trap_bounded(&canonical_set(&records));
    let exact = records
        .iter()
        .filter(|r| r.decision == Decision::ExactDuplicate)
        .count();
    let full_dir = tempfile::tempdir().unwrap();
    let (_, full) = crawl_web(&server, full_dir.path(), &[]).await;
    let full_exact = full.iter().filter(|r| r.decision == Decision::ExactDuplicate).count();
    assert_eq!(exact, full_exact);
    let store = simcrawl::store::open_crawl_store(&CrawlDir::new(dir.path()).store()).unwrap();
    assert_eq!(store.pages_recorded().unwrap(), records.len() as u64);
}

/// A cluster of a test's own, stopped when dropped.
pub(crate) struct OwnCluster {
    script: std::path::PathBuf,
    /// The first of its six ports.
    pub(crate) base: u16,
}

impl OwnCluster {
    /// A cluster on ports `base`..`base`+5 (each test its own).
    pub(crate) fn start(base: u16) -> Option<OwnCluster> {
        // Only where the shared cluster runs (redis-server is installed),
        // and not against a cluster named by SIMCRAWL_REDIS_NODES.
        if std::env::var_os("SIMCRAWL_REDIS_NODES").is_some() {
            eprintln!("SKIP: failover test: it starts a cluster of its own, not the one in SIMCRAWL_REDIS_NODES");
            return None;
        }
        redis_local::local_cluster().ok()?;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/redis-cluster.sh");
        let ok = std::process::Command::new("bash")
            .arg(&script)
            .args(["start", &base.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "redis-cluster.sh start {base}");
        Some(OwnCluster { script, base })
    }

    pub(crate) fn nodes(&self) -> Vec<String> {
        (self.base..self.base + 6).map(|p| format!("127.0.0.1:{p}")).collect()
    }

    fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = std::process::Command::new("redis-cli")
            .arg("-p")
            .arg(port.to_string())
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl OwnCluster {
    /// Kill the master on the first port with SIGKILL, once its replica
    /// has every write it acknowledged, and wait until the replica has
    /// taken over.
    pub(crate) fn fail_over(&self) {
        // Replication is asynchronous (a write the master acknowledged can be
        // lost with it): wait until its replica has everything, then kill the
        // master on the first port.
        assert!(self.cli(self.base, &["role"]).starts_with("master"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let info = self.cli(self.base, &["info", "replication"]);
            let field = |line: &str, key: &str| -> Option<u64> {
                line.split([',', ':'])
                    .find_map(|kv| kv.trim().strip_prefix(key)?.strip_prefix('=')?.parse().ok())
            };
            let master = info
                .lines()
                .find_map(|l| l.trim().strip_prefix("master_repl_offset:")?.parse::<u64>().ok());
            let replica = info
                .lines()
                .filter(|l| l.starts_with("slave"))
                .find_map(|l| field(l, "offset"));
            if master.is_some() && master == replica {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the replica never caught up: {info}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let pid_file = std::env::temp_dir()
            .join(format!("simcrawl-redis-cluster-{}", self.base))
            .join(self.base.to_string())
            .join("redis.pid");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap()
            .success());
        // Its replica takes over (node timeout 2 s).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let info = self.cli(self.base + 1, &["cluster", "info"]);
            let nodes = self.cli(self.base + 1, &["cluster", "nodes"]);
            if nodes.contains("master,fail") && info.contains("cluster_state:ok") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no failover: {info}\n{nodes}");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .args(["stop", &self.base.to_string()])
            .status();
    }
}

#[test]
fn redis_store_survives_a_master_failover() {
    use simcrawl::model::{HostStats, QueuedUrl, StoredPage};
    use simcrawl::store::{RedisStore, Store};
    let Some(cluster) = OwnCluster::start(7100) else {
        // Prints why (or fails with SIMCRAWL_REQUIRE_REDIS).
        let _ = redis_overrides("unused");
        return;
    };
    let store = RedisStore::open(&cluster.nodes(), &redis_local::unique_crawl_name("failover")).unwrap();
    let url = |h: usize, i: u64| {
        let canonical = format!("http://h{h}.test/p{i}");
        QueuedUrl {
            url: canonical.clone(),
            canonical,
            host: format!("h{h}.test"),
            depth: 1,
            parent: None,
            components: Default::default(),
            priority: 1.0,
            seq: i,
            retries: 0,
            inlinks: 0,
            tunnel: 0,
            revisit: None,
        }
    };
    // 40 hosts: spread over the three masters' slots.
    let hosts = 40;
    let record = |store: &RedisStore, h: usize, i: u64| {
        let u = url(h, i);
        let p = StoredPage {
            id: store.allocate_page_id(),
            canonical: u.canonical.clone(),
            final_url: u.canonical.clone(),
            status: 200,
            depth: 1,
            decision: Decision::New,
            simhash: Some(i),
            ..Default::default()
        };
        let mut hs = HostStats::default();
        hs.record(&p);
        store.complete(&u, &p, None, &hs).unwrap();
    };
    for h in 0..hosts {
        store.enqueue(&[url(h, 1), url(h, 2)]).unwrap();
        record(&store, h, 1);
    }
    cluster.fail_over();
    // Nothing is lost, and the crawl goes on with the same store handle
    // (its calls retry while the cluster fails over).
    for h in 0..hosts {
        assert!(
            matches!(
                store.url_state(&url(h, 1).canonical).unwrap(),
                Some(simcrawl::model::UrlState::Done(_))
            ),
            "host {h}: its recorded page is lost"
        );
        record(&store, h, 2);
    }
    assert_eq!(store.pages_recorded().unwrap(), 2 * hosts as u64);
    assert_eq!(store.iter_pages().count(), 2 * hosts);
    assert!(store.iter_queue().next().is_none());
}

/// `bench crawl --backend redis` crawls the test web on both stores and
/// reports what the cluster costs per page; the crawl's keys are removed.
#[test]
fn bench_crawl_on_redis_reports_the_cluster_cost_per_page() {
    let Some(nodes) = redis_local::cluster_for_test("bench crawl --backend redis") else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_simcrawl"))
        .args([
            "bench",
            "crawl",
            "--backend",
            "redis",
            "--pages",
            "300",
            "--max-pages",
            "200",
        ])
        .env("SIMCRAWL_REDIS_NODES", nodes.join(","))
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let per_page = |prefix: &str, what: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{stdout}"));
        let at = line.find(what).unwrap_or_else(|| panic!("{line}"));
        line[..at].split_whitespace().last().unwrap().parse().unwrap()
    };
    assert!(per_page("cluster:", "commands per page") > 1.0, "{stdout}");
    assert!(per_page("cluster:", "calls per page") > 0.5, "{stdout}");
    assert!(stdout.contains("{N|h|host}:p"), "page records are measured: {stdout}");
    assert!(stdout.contains("redis/disk pages/s"), "{stdout}");
}
