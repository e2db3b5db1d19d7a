//! `simcrawl bench crawl --backend redis --workers 1,2,4`: the crawl of
//! `bench crawl` shared by N `simcrawl worker` processes on a Redis
//! Cluster, for each N, against the disk store's crawl in this process in
//! the same run. Per N it prints pages/s, the CPU per 1k pages of the
//! workers and of the Redis nodes, the commands per page on the masters and
//! the ratios to the disk store.
//!
//! The test web of `bench crawl` has one large host (`www.news.test`) and a
//! few small ones: hosts are handed to workers by leases, so a host is
//! crawled by one worker at a time and the scaling is bounded by the hosts
//! with work, besides the machine's cores.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::crawl::{crawl_simcrawl, CrawlFigures};
use super::redis::{all_stats, NodeStats};
use super::RedisBenchOptions;
use crate::error::{Error, Result};

/// CPU seconds of this process's waited-for children so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One shared crawl by `n` workers: its figures (workers' CPU), the nodes'
/// CPU seconds, the masters' commands and the workers' store calls.
fn shared_crawl(
    n: u16,
    port: u16,
    opts: &RedisBenchOptions,
    nodes: &[String],
    dir: &std::path::Path,
) -> Result<(CrawlFigures, Option<f64>, f64, u64)> {
    let config = dir.join("test.toml");
    std::fs::write(&config, crate::config::TEST_TOML).map_err(|e| Error::io(&config, e))?;
    let name = crate::store::redis_local::unique_crawl_name(&format!("bench-w{n}"));
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    let mut set = vec![
        "crawl.concurrency=64".to_string(),
        "politeness.max_in_flight_per_host=64".into(),
        "output.reports=false".into(),
        "output.warc=false".into(),
        "store.backend=\"redis\"".into(),
        format!("store.crawl_name=\"{name}\""),
        format!("store.redis_nodes=[{}]", list.join(",")),
    ];
    set.extend(opts.overrides.iter().cloned());
    let out = dir.join(format!("workers-{n}"));
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    let before = all_stats(nodes)?;
    let (cpu0, t0) = (children_cpu_s(), Instant::now());
    let mut children = Vec::new();
    for id in 1..=n {
        let mut cmd = Command::new(&exe);
        cmd.args([
            "worker",
            "--id",
            &id.to_string(),
            "--max-pages",
            &opts.max_pages.to_string(),
        ])
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .arg(format!("http://www.news.test:{port}/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        for s in &set {
            cmd.arg("--set").arg(s);
        }
        children.push(cmd.spawn().map_err(|e| Error::io("simcrawl worker", e))?);
    }
    // Each worker prints the store calls it made (`store calls: N`).
    let mut calls = 0u64;
    for c in children {
        let done = c.wait_with_output().map_err(|e| Error::io("simcrawl worker", e))?;
        if !done.status.success() {
            return Err(Error::Internal(format!("a bench worker failed: {}", done.status)));
        }
        calls += String::from_utf8_lossy(&done.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix("store calls: ")?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0);
    }
    let (wall, cpu) = (t0.elapsed(), children_cpu_s() - cpu0);
    let after = all_stats(nodes)?;
    let node_cpu = before
        .iter()
        .zip(&after)
        .map(|(b, a)| b.cpu_s.zip(a.cpu_s).map(|(x, y)| y - x))
        .sum::<Option<f64>>();
    let commands: f64 = before
        .iter()
        .zip(&after)
        .filter(|(_, a): &(&NodeStats, &NodeStats)| a.master)
        .map(|(b, a)| a.commands.saturating_sub(b.commands) as f64)
        .sum();
    let dir_logs = crate::model::CrawlDir::new(&out).logs();
    let mut pages = 0u64;
    for r in crate::crawllog::records_of(&dir_logs)? {
        if r?.decision != crate::model::Decision::Disallowed {
            pages += 1;
        }
    }
    let _ = super::redis::crawl_keys(nodes, &after.iter().map(|s| s.master).collect::<Vec<_>>(), &name);
    Ok((
        CrawlFigures {
            pages,
            wall_s: wall.as_secs_f64(),
            cpu_s: cpu,
        },
        node_cpu,
        commands,
        calls,
    ))
}

/// Runs the disk crawl and a shared crawl per worker count, and prints a
/// table of their figures.
pub fn run_workers_bench(opts: &RedisBenchOptions, workers: &[u16], out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("stdout", e);
    let (nodes, web, dir) = super::redis::cluster_and_web(opts.pages, "workers")?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    writeln!(
        out,
        "test web: {} article pages on 127.0.0.1:{} (child process); each crawl stops at {} fetches; Redis Cluster {}; {cores} cores",
        opts.pages,
        web.port,
        opts.max_pages,
        nodes.join(",")
    )
    .map_err(io)?;
    let (disk, _) = crawl_simcrawl(web.port, opts.max_pages, &opts.overrides, &dir.join("disk"))?;
    writeln!(
        out,
        "{:<12} {:>7} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "crawl",
        "pages",
        "wall s",
        "pages/s",
        "CPU/1k",
        "nodes/1k",
        "total/1k",
        "cmds/page",
        "calls/page",
        "pages/s×",
        "CPU×"
    )
    .map_err(io)?;
    let base_cpu = disk.cpu_per_1k().max(1e-9);
    writeln!(
        out,
        "{:<12} {:>7} {:>8.2} {:>8.0} {:>10.3} {:>10} {:>10.3} {:>10} {:>10} {:>9} {:>9}",
        "disk, 1",
        disk.pages,
        disk.wall_s,
        disk.pages_per_s(),
        disk.cpu_per_1k(),
        "",
        disk.cpu_per_1k(),
        "",
        "",
        "1.00",
        "1.00"
    )
    .map_err(io)?;
    for &n in workers {
        let (f, node_cpu, commands, calls) = shared_crawl(n, web.port, opts, &nodes, &dir)?;
        let pages = f.pages.max(1) as f64;
        let nodes_1k = node_cpu.map(|c| c * 1000.0 / pages);
        let total = f.cpu_per_1k() + nodes_1k.unwrap_or(0.0);
        writeln!(
            out,
            "{:<12} {:>7} {:>8.2} {:>8.0} {:>10.3} {:>10} {:>10.3} {:>10.1} {:>10.2} {:>9.2} {:>9.2}",
            format!("redis, {n}"),
            f.pages,
            f.wall_s,
            f.pages_per_s(),
            f.cpu_per_1k(),
            nodes_1k.map_or_else(|| "-".into(), |c| format!("{c:.3}")),
            total,
            commands / pages,
            calls as f64 / pages,
            f.pages_per_s() / disk.pages_per_s().max(1e-9),
            total / base_cpu
        )
        .map_err(io)?;
    }
    writeln!(
        out,
        "(CPU/1k: CPU-s per 1k pages of the crawl processes; nodes/1k: of the Redis nodes; calls: the workers' store calls, one round trip per node each; ×: against the disk store's crawl)"
    )
    .map_err(io)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
