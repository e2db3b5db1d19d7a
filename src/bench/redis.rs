//! `simcrawl bench crawl --backend redis`: the crawl of `bench crawl` on
//! the disk store and on a Redis Cluster, one after the other in this
//! process, with what the cluster adds per page: its commands, the round
//! trips the crawl makes, the CPU of the Redis nodes and the memory the
//! crawl's keys take there (per kind of key, for the capacity plan in
//! docs/distributed.md).
//!
//! The cluster is `SIMCRAWL_REDIS_NODES` (comma-separated `host:port`) or
//! the one `scripts/redis-cluster.sh start` runs in this source tree; the
//! CPU of the nodes is read from `/proc` when they run on this machine.

use std::collections::BTreeMap;
use std::io::Write;

use super::crawl::{crawl_simcrawl, mib, start_child_web, ChildWeb, CrawlFigures};
use crate::error::{Error, Result};

/// What `bench crawl --backend redis` runs.
#[derive(Debug, Clone)]
pub struct RedisBenchOptions {
    /// Article pages of the test web.
    pub pages: usize,
    /// Fetches per crawl.
    pub max_pages: u64,
    /// `--set` overrides, applied to both crawls.
    pub overrides: Vec<String>,
}

/// One node's counters.
#[derive(Debug, Clone, Default)]
pub(super) struct NodeStats {
    pub(super) master: bool,
    pub(super) commands: u64,
    used_memory: u64,
    /// User + system CPU seconds of the node's process, when readable.
    pub(super) cpu_s: Option<f64>,
}

fn redis_err(e: ::redis::RedisError) -> Error {
    Error::InvalidInput(format!("redis: {e}"))
}

fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
        .map(str::trim)
}

/// CPU seconds of process `pid` (utime + stime of `/proc/PID/stat`).
fn process_cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // SAFETY: sysconf only reads a configuration value.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (tck > 0).then(|| (utime + stime) as f64 / tck as f64)
}

fn node_stats(node: &str) -> Result<NodeStats> {
    let client = ::redis::Client::open(format!("redis://{node}/")).map_err(redis_err)?;
    let mut con = client.get_connection().map_err(redis_err)?;
    let info: String = ::redis::cmd("INFO").arg("all").query(&mut con).map_err(redis_err)?;
    let num = |name: &str| info_field(&info, name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let local = node.starts_with("127.") || node.starts_with("localhost");
    Ok(NodeStats {
        master: info_field(&info, "role") == Some("master"),
        commands: num("total_commands_processed"),
        used_memory: num("used_memory"),
        cpu_s: local
            .then(|| u32::try_from(num("process_id")).ok())
            .flatten()
            .and_then(process_cpu_s),
    })
}

pub(super) fn all_stats(nodes: &[String]) -> Result<Vec<NodeStats>> {
    nodes.iter().map(|n| node_stats(n)).collect()
}

/// Per kind of key: bytes and keys.
pub(super) type KeyKinds = BTreeMap<String, (u64, u64)>;

/// Memory of the crawl's keys on the masters, by kind of key (the part
/// after the hash tag, or the tag's kind), and the keys' count; the keys
/// are deleted afterwards.
pub(super) fn crawl_keys(nodes: &[String], masters: &[bool], name: &str) -> Result<(KeyKinds, u64)> {
    let mut kinds = KeyKinds::new();
    let mut keys_total = 0;
    for (node, _) in nodes.iter().zip(masters).filter(|(_, m)| **m) {
        let client = ::redis::Client::open(format!("redis://{node}/")).map_err(redis_err)?;
        let mut con = client.get_connection().map_err(redis_err)?;
        let keys: Vec<Vec<u8>> = ::redis::cmd("KEYS")
            .arg(format!("{{{name}*"))
            .query(&mut con)
            .map_err(redis_err)?;
        for key in keys {
            let bytes: Option<u64> = ::redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query(&mut con)
                .map_err(redis_err)?;
            let k = String::from_utf8_lossy(&key);
            let kind = match k.rsplit_once('}') {
                Some((tag, "")) => tag
                    .split('|')
                    .nth(1)
                    .map_or("?".to_string(), |t| format!("{{N|{t}|…}}")),
                Some((tag, suffix)) if tag.contains("|h|") => format!("{{N|h|host}}{suffix}"),
                Some((_, suffix)) => format!("{{N}}{suffix}"),
                None => "?".into(),
            };
            let e = kinds.entry(kind).or_default();
            e.0 += bytes.unwrap_or(0);
            e.1 += 1;
            keys_total += 1;
            let _: () = ::redis::cmd("DEL").arg(&key).query(&mut con).map_err(redis_err)?;
        }
    }
    Ok((kinds, keys_total))
}

/// What a Redis bench runs against: the cluster's nodes, the test web of
/// `pages` article pages in a child process, and a new temporary directory
/// for the crawls (`simcrawl-bench-NAME-PID`).
pub(super) fn cluster_and_web(pages: usize, name: &str) -> Result<(Vec<String>, ChildWeb, std::path::PathBuf)> {
    let nodes = crate::store::redis_local::local_cluster().map_err(|why| {
        Error::InvalidInput(format!(
            "no Redis Cluster ({why}); start one with scripts/redis-cluster.sh start, or name its nodes in SIMCRAWL_REDIS_NODES"
        ))
    })?;
    let web = start_child_web(pages)?;
    let dir = std::env::temp_dir().join(format!("simcrawl-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok((nodes, web, dir))
}

/// Runs the disk and the Redis crawl and prints their figures.
pub fn run_redis_bench(opts: &RedisBenchOptions, out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("stdout", e);
    let (nodes, web, dir) = cluster_and_web(opts.pages, "redis")?;
    writeln!(
        out,
        "test web: {} article pages on 127.0.0.1:{} (child process); each crawl stops at {} fetches; Redis Cluster {}",
        opts.pages,
        web.port,
        opts.max_pages,
        nodes.join(",")
    )
    .map_err(io)?;

    let (disk, _) = crawl_simcrawl(web.port, opts.max_pages, &opts.overrides, &dir.join("disk"))?;
    print_figures(out, "disk", &disk, None)?;

    let name = crate::store::redis_local::unique_crawl_name("bench");
    let mut set = opts.overrides.clone();
    set.push("store.backend=\"redis\"".into());
    set.push(format!("store.crawl_name=\"{name}\""));
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    set.push(format!("store.redis_nodes=[{}]", list.join(",")));
    let before = all_stats(&nodes)?;
    let calls0 = crate::store::redis_calls();
    let (redis, _) = crawl_simcrawl(web.port, opts.max_pages, &set, &dir.join("redis"))?;
    let calls = crate::store::redis_calls() - calls0;
    let after = all_stats(&nodes)?;
    let masters: Vec<bool> = after.iter().map(|s| s.master).collect();
    let sum = |f: &dyn Fn(&NodeStats, &NodeStats) -> f64, only_masters: bool| -> f64 {
        before
            .iter()
            .zip(&after)
            .filter(|(_, a)| a.master || !only_masters)
            .map(|(b, a)| f(b, a))
            .sum()
    };
    let commands = sum(&|b, a| a.commands.saturating_sub(b.commands) as f64, true);
    let replica_commands = sum(&|b, a| a.commands.saturating_sub(b.commands) as f64, false) - commands;
    let memory = sum(&|b, a| a.used_memory as f64 - b.used_memory as f64, true);
    let node_cpu = before
        .iter()
        .zip(&after)
        .map(|(b, a)| b.cpu_s.zip(a.cpu_s).map(|(x, y)| y - x))
        .sum::<Option<f64>>();
    print_figures(out, "redis", &redis, node_cpu)?;
    let pages = redis.pages.max(1) as f64;
    writeln!(
        out,
        "cluster:  {:.1} commands per page on the masters ({:.1} more on the replicas), {:.2} calls per page from the crawl (one round trip per node each)",
        commands / pages,
        replica_commands / pages,
        calls as f64 / pages
    )
    .map_err(io)?;
    let (kinds, keys) = crawl_keys(&nodes, &masters, &name)?;
    let key_bytes: u64 = kinds.values().map(|v| v.0).sum();
    writeln!(
        out,
        "memory:   used_memory of the masters +{:.1} MiB ({:.0} bytes per page); the crawl's {} keys take {:.1} MiB ({:.0} bytes per page):",
        memory / (1u64 << 20) as f64,
        memory / pages,
        keys,
        mib(key_bytes),
        key_bytes as f64 / pages
    )
    .map_err(io)?;
    for (kind, (bytes, n)) in &kinds {
        writeln!(
            out,
            "          {kind:<22} {n:>7} keys {:>8.1} MiB {:>7.0} bytes per page",
            mib(*bytes),
            *bytes as f64 / pages
        )
        .map_err(io)?;
    }
    let crawl_cpu = redis.cpu_per_1k();
    let total_cpu = node_cpu.map(|c| crawl_cpu + c * 1000.0 / pages);
    writeln!(
        out,
        "ratio:    redis/disk pages/s = {:.2}x; CPU per page, crawl process {:.2}x{}",
        redis.pages_per_s() / disk.pages_per_s().max(1e-9),
        crawl_cpu / disk.cpu_per_1k().max(1e-9),
        total_cpu.map_or_else(String::new, |t| format!(
            ", crawl and Redis nodes together {:.2}x",
            t / disk.cpu_per_1k().max(1e-9)
        ))
    )
    .map_err(io)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn print_figures(out: &mut dyn Write, what: &str, f: &CrawlFigures, node_cpu: Option<f64>) -> Result<()> {
    writeln!(
        out,
        "{what:<9} {} pages in {:.2} s = {:.0} pages/s, {:.3} CPU-s per 1k pages{}",
        f.pages,
        f.wall_s,
        f.pages_per_s(),
        f.cpu_per_1k(),
        node_cpu.map_or_else(String::new, |c| format!(
            " (+ {:.3} in the Redis nodes)",
            c * 1000.0 / f.pages.max(1) as f64
        ))
    )
    .map_err(|e| Error::io("stdout", e))?;
    Ok(())
}
