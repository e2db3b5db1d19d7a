//! `simcrawl crawl`, `demo` and `testweb`: crawls and the local test web.

use std::process::ExitCode;

use anyhow::Context;

use crate::args::*;

pub(crate) fn crawl(args: CrawlArgs) -> anyhow::Result<ExitCode> {
    // Bound first: a bad address fails before anything is read or created.
    let metrics = match &args.metrics {
        Some(addr) => {
            Some(simcrawl::metrics::bind(parse_addr("--metrics", addr, 9898)?).map_err(simcrawl::Error::from)?)
        }
        None => None,
    };
    let mut overrides = args.set.clone();
    if let Some(n) = args.max_pages {
        overrides.push(format!("crawl.max_pages={n}"));
    }
    let own = args.out.join(simcrawl::config::SETTINGS_FILE);
    let config = match &args.config {
        Some(path) => Some(path.clone()),
        None if args.resume && own.is_file() => Some(own),
        None => None,
    };
    let settings = simcrawl::Settings::load(config.as_deref(), &overrides)?;
    let mut seeds = match &args.seeds {
        Some(path) => simcrawl::crawl::read_seeds(path)?,
        None => Vec::new(),
    };
    seeds.extend(args.urls.iter().cloned());
    if seeds.is_empty() && !args.resume {
        return Err(simcrawl::Error::InvalidInput(
            "a new crawl needs seed URLs: give them as arguments or with --seeds FILE".into(),
        )
        .into());
    }
    let recrawl = if args.recrawl_all {
        Some(simcrawl::recrawl::Round::All)
    } else if args.recrawl {
        Some(simcrawl::recrawl::Round::Due {
            now_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        })
    } else {
        None
    };
    let opts = simcrawl::crawl::CrawlOptions {
        resume: args.resume,
        recrawl,
        progress: true,
        metrics,
        ..simcrawl::crawl::CrawlOptions::new(&args.out, seeds)
    };
    let summary = simcrawl::crawl::run_blocking(settings, opts, async {
        let signal = stop_signal().await;
        eprintln!(
            "simcrawl: {signal}: stopping (in-flight fetches finish; --resume continues; \
             a second signal stops at once)"
        );
        // A second signal ends the process now: the store is crash-safe, so
        // --resume still continues from the last committed page.
        tokio::spawn(async {
            let signal = stop_signal().await;
            eprintln!("simcrawl: {signal} again: stopping now");
            std::process::exit(130);
        });
    })?;
    print_summary(&summary, &args.out);
    Ok(ExitCode::SUCCESS)
}

/// The lines a finished crawl prints (`out`: its directory).
pub(crate) fn print_summary(summary: &simcrawl::crawl::CrawlSummary, out: &std::path::Path) {
    let parts: Vec<String> = summary.by_decision.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "crawl {:?}: {} pages this run, {} in all ({}), {} queued, {:.1} s",
        summary.stop,
        summary.pages,
        summary.total_pages,
        parts.join(", "),
        summary.queued,
        summary.elapsed.as_secs_f64()
    );
    println!("crawl log: {}", out.join(simcrawl::model::CrawlDir::LOG_FILE).display());
    let sm = &summary.sitemaps;
    if sm.read + sm.failed + sm.skipped > 0 {
        println!(
            "sitemaps:  {} read ({} cut at a limit, {} broken), {} failed, {} skipped; {} URLs listed, {} queued ({})",
            sm.read,
            sm.cut,
            sm.broken,
            sm.failed,
            sm.skipped,
            sm.urls,
            sm.queued,
            out.join(simcrawl::model::CrawlDir::SITEMAPS_FILE).display()
        );
    }
    if let Some(r) = &summary.reports {
        println!("reports:   {}", r.dir.display());
    }
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM (what `kill`, systemd and
/// container runtimes send), and names the one that came.
pub(crate) async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "interrupt",
                _ = term.recv() => "SIGTERM",
            };
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    "interrupt"
}

pub(crate) fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let result = runtime()?.block_on(simcrawl::demo::run(args.out, &[], true))?;
    print!("{result}");
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn testweb(args: TestwebArgs) -> anyhow::Result<ExitCode> {
    let addr = parse_addr("--addr", &args.addr, 8080)?;
    let opts = simcrawl::testweb::TestWebOptions {
        seed: args.seed,
        pages: args.pages,
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(serve_test_web(opts, addr, args.truth.as_deref()))?;
    Ok(ExitCode::SUCCESS)
}

/// Serve the test web on `addr`, write its ground truth to `truth` (if
/// given), print the address and the seed URLs, and serve until Ctrl-C.
async fn serve_test_web(
    opts: simcrawl::testweb::TestWebOptions,
    addr: std::net::SocketAddr,
    truth: Option<&std::path::Path>,
) -> Result<(), simcrawl::testweb::TestWebError> {
    use simcrawl::testweb::{write_truth, RunningTestWeb, TestWeb, TestWebError};
    use std::io::Write;
    let web = std::sync::Arc::new(TestWeb::new(opts));
    let mut server = RunningTestWeb::start(web.clone(), addr)
        .await
        .map_err(|source| TestWebError::Bind { addr, source })?;
    let port = server.port();
    if let Some(path) = truth {
        write_truth(&server.truth(), path)?;
    }
    let report = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "simcrawl test web listening on {}", server.addr)?;
        if let Some(path) = truth {
            writeln!(out, "ground truth written to {}", path.display())?;
        }
        writeln!(
            out,
            "hosts (send them as Host header, or resolve *.test to {}):",
            server.addr.ip()
        )?;
        for h in web.hosts() {
            writeln!(out, "  {}", server.url(&h, "/"))?;
        }
        writeln!(out, "seeds:")?;
        for s in server.seeds() {
            writeln!(out, "  {s}")?;
        }
        writeln!(
            out,
            "try: curl --resolve www.news.test:{port}:{} http://www.news.test:{port}/",
            server.addr.ip()
        )?;
        writeln!(out, "press Ctrl-C to stop")?;
        out.flush()
    };
    // A closed stdout (`simcrawl testweb | head -1`) must not stop the server.
    if let Err(e) = report() {
        tracing::debug!("test web: could not print the start-up report: {e}");
    }
    tokio::select! {
        r = server.wait() => r,
        _ = tokio::signal::ctrl_c() => {
            server.shutdown().await;
            Ok(())
        }
    }
}

/// `value` of option `opt` as IP:PORT (a usage error naming it otherwise).
fn parse_addr(opt: &str, value: &str, example_port: u16) -> Result<std::net::SocketAddr, simcrawl::Error> {
    value.parse().map_err(|e| {
        simcrawl::Error::InvalidInput(format!(
            "{opt} {value:?}: {e} (expected IP:PORT, e.g. 127.0.0.1:{example_port})"
        ))
    })
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
