//! `simcrawl worker` and `simcrawl crawl --workers N`: crawls that several
//! processes share on a Redis Cluster (docs/distributed.md).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::args::*;

/// The settings and seeds of a worker or a shared crawl.
fn load(
    config: Option<&Path>,
    set: &[String],
    max_pages: Option<u64>,
    seeds: Option<&Path>,
    urls: &[String],
) -> anyhow::Result<(simcrawl::Settings, Vec<String>)> {
    let mut overrides = set.to_vec();
    if let Some(n) = max_pages {
        overrides.push(format!("crawl.max_pages={n}"));
    }
    let settings = simcrawl::Settings::load(config, &overrides)?;
    let mut all = match seeds {
        Some(path) => simcrawl::crawl::read_seeds(path)?,
        None => Vec::new(),
    };
    all.extend(urls.iter().cloned());
    Ok((settings, all))
}

/// `simcrawl worker`: crawl as worker `--id` until the shared crawl is done.
pub(crate) fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let (settings, seeds) = load(
        args.config.as_deref(),
        &args.set,
        args.max_pages,
        args.seeds.as_deref(),
        &args.urls,
    )?;
    let out = simcrawl::model::CrawlDir::new(&args.out).worker(args.id);
    let opts = simcrawl::crawl::CrawlOptions {
        worker: Some(args.id),
        ..simcrawl::crawl::CrawlOptions::new(&out, seeds)
    };
    let summary = simcrawl::crawl::run_blocking(settings, opts, async {
        let signal = crate::crawl::stop_signal().await;
        eprintln!("simcrawl worker: {signal}: stopping (in-flight fetches finish; the other workers go on)");
        tokio::spawn(async {
            crate::crawl::stop_signal().await;
            std::process::exit(130);
        });
    })?;
    crate::crawl::print_summary(&summary, &out);
    println!(
        "store calls: {} (one round trip per node each)",
        simcrawl::store::redis_calls()
    );
    Ok(ExitCode::SUCCESS)
}

/// `simcrawl crawl --workers N`: N worker processes on this machine, then
/// the reports of the whole crawl in `DIR/reports/`.
pub(crate) fn crawl(args: CrawlArgs) -> anyhow::Result<ExitCode> {
    let n = args.workers.unwrap_or(1);
    if n == 0 {
        anyhow::bail!("--workers needs at least 1 worker");
    }
    let (settings, seeds) = load(
        args.config.as_deref(),
        &args.set,
        args.max_pages,
        args.seeds.as_deref(),
        &args.urls,
    )?;
    if settings.store.backend != simcrawl::config::StoreBackend::Redis {
        return Err(simcrawl::Error::InvalidInput(
            "--workers shares the crawl on a Redis Cluster: set [store] backend = \"redis\"".into(),
        )
        .into());
    }
    if seeds.is_empty() {
        anyhow::bail!("a new crawl needs seed URLs: give them as arguments or with --seeds FILE");
    }
    let dir = simcrawl::model::CrawlDir::new(&args.out);
    if dir.store().exists() || !dir.logs().is_empty() {
        anyhow::bail!("{} already holds a crawl; choose another --out", args.out.display());
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let exe = std::env::current_exe().context("cannot find the simcrawl executable")?;
    let started = std::time::Instant::now();
    let mut children = Vec::new();
    for id in 1..=n {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("worker")
            .arg("--id")
            .arg(id.to_string())
            .arg("--out")
            .arg(&args.out);
        if let Some(c) = &args.config {
            cmd.arg("--config").arg(c);
        }
        for s in &args.set {
            cmd.arg("--set").arg(s);
        }
        if let Some(m) = args.max_pages {
            cmd.arg("--max-pages").arg(m.to_string());
        }
        cmd.args(&seeds);
        children.push((id, cmd.spawn().with_context(|| format!("cannot start worker {id}"))?));
    }
    let mut failed = Vec::new();
    for (id, mut child) in children {
        let status = child.wait().with_context(|| format!("worker {id}"))?;
        if !status.success() {
            failed.push(format!("worker {id}: {status}"));
        }
    }
    // The crawl directory's own settings and store marker, for `report`,
    // `explain` and `eval` on DIR.
    let first = simcrawl::model::CrawlDir::new(dir.worker(1));
    let own_settings = first.root().join(simcrawl::config::SETTINGS_FILE);
    if own_settings.is_file() {
        std::fs::copy(&own_settings, args.out.join(simcrawl::config::SETTINGS_FILE))?;
    }
    if let Some(marker) = simcrawl::store::RedisMarker::read(&first.store())? {
        marker.write(&dir.store())?;
    }
    if !failed.is_empty() {
        anyhow::bail!("{}", failed.join("; "));
    }
    let mut pages = 0usize;
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for r in simcrawl::crawllog::records_of(&dir.logs())? {
        let r = r?;
        pages += 1;
        *by.entry(r.decision.as_str().to_string()).or_default() += 1;
    }
    let parts: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "crawl by {n} workers: {pages} pages ({}), {:.1} s",
        parts.join(", "),
        started.elapsed().as_secs_f64()
    );
    for log in dir.logs() {
        println!("crawl log: {}", log.display());
    }
    if settings.output.reports {
        let r = simcrawl::report::write_from_log(&args.out, &settings)?;
        println!("reports:   {}", r.dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
