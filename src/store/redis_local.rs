//! The local Redis Cluster that tests (and `cargo` users in a checkout) run
//! the [`super::RedisStore`] against: `scripts/redis-cluster.sh start`,
//! once per process, or the nodes in `SIMCRAWL_REDIS_NODES`.

use std::sync::OnceLock;

/// The script's first port.
const BASE_PORT: u16 = 7000;

/// The nodes of a running local cluster: `SIMCRAWL_REDIS_NODES`
/// (comma-separated `host:port`) when set, else the cluster of
/// `scripts/redis-cluster.sh start` in this source tree, started on first
/// use (it installs `redis-server` when missing and it can). `Err` says why
/// there is none.
pub fn local_cluster() -> Result<Vec<String>, String> {
    static NODES: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    NODES.get_or_init(start).clone()
}

/// [`local_cluster`] for a test of `what`: the nodes, or `None` with a
/// printed `SKIP` line when no cluster can be started, and a panic instead
/// when `SIMCRAWL_REQUIRE_REDIS` is set (CI starts the cluster, so there a
/// skip would hide a failure).
pub fn cluster_for_test(what: &str) -> Option<Vec<String>> {
    match local_cluster() {
        Ok(n) => Some(n),
        Err(why) => {
            assert!(
                std::env::var_os("SIMCRAWL_REQUIRE_REDIS").is_none(),
                "no Redis Cluster: {why}"
            );
            eprintln!("SKIP: no Redis Cluster for {what}: {why}");
            None
        }
    }
}

/// A crawl name no other caller of this process or another uses.
pub fn unique_crawl_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn start() -> Result<Vec<String>, String> {
    if let Ok(v) = std::env::var("SIMCRAWL_REDIS_NODES") {
        let nodes: Vec<String> = v
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        return if nodes.is_empty() {
            Err("SIMCRAWL_REDIS_NODES is set but names no node".into())
        } else {
            Ok(nodes)
        };
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/redis-cluster.sh");
    if !script.is_file() {
        return Err(format!("{} is not there", script.display()));
    }
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("start")
        .arg(BASE_PORT.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} start failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok((BASE_PORT..BASE_PORT + 6).map(|p| format!("127.0.0.1:{p}")).collect())
}
