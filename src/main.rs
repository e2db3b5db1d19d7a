//! The `simcrawl` binary: parses the command line (clap) and calls the
//! library. No crawling logic lives here.
//!
//! Exit codes: 0 success, 2 bad usage or bad input (one-line reason on
//! stderr), 1 any other failure.
#![deny(clippy::undocumented_unsafe_blocks)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// mimalloc instead of the system allocator: the crawl allocates per page
/// (parse tree, text blocks, features, store batches) from several threads;
/// `simcrawl bench crawl` measured glibc malloc/free at about a tenth of the
/// crawler's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A polite web crawler with near-duplicate detection built into its frontier.
#[derive(Parser, Debug)]
#[command(name = "simcrawl", version, about, propagate_version = true)]
struct Cli {
    /// Log more (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the built-in test web on 127.0.0.1, crawl it, print a summary and report paths.
    Demo(DemoArgs),
    /// Crawl from seeds with a config file.
    Crawl(CrawlArgs),
    /// Serve the built-in test web until stopped.
    Testweb(TestwebArgs),
    /// Print the canonical form of each URL (or "error: ..."), one per line.
    Canon(CanonArgs),
    /// Answer "allow"/"disallow" per URL for a robots.txt, or print its Crawl-delay.
    Robots(RobotsArgs),
    /// Print "<16 hex digits>\t<path>" per HTML/text file (directories recurse).
    Fingerprint(FingerprintArgs),
    /// Batch Hamming search: every (query, fingerprint) pair within k.
    Hamming(HammingArgs),
    /// Near-duplicate pairs (and clusters) of a directory of HTML/text files.
    Near(NearArgs),
    /// Regenerate a report of a stored crawl.
    Report(ReportArgs),
    /// Explain why a URL was fetched, skipped or demoted in a stored crawl.
    Explain(ExplainArgs),
    /// Precision/recall of each detector against exact shingle resemblance.
    Eval(EvalArgs),
    /// Built-in benchmarks that print ratios against a baseline.
    Bench(BenchArgs),
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Output directory (default: a new directory under the system temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CrawlArgs {
    /// Config file (TOML), laid over config/default.toml.
    #[arg(long)]
    config: PathBuf,
    /// Seed URLs, one per line ('#' comments allowed).
    #[arg(long)]
    seeds: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "crawl-out")]
    out: PathBuf,
    /// Continue a stopped or killed crawl in --out.
    #[arg(long)]
    resume: bool,
    /// Stop after this many fetches (overrides crawl.max_pages).
    #[arg(long)]
    max_pages: Option<u64>,
    /// Override one config key for this run: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Args, Debug)]
struct TestwebArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Write the ground truth as JSON to this file.
    #[arg(long)]
    truth: Option<PathBuf>,
    /// Seed of the deterministic generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Approximate number of article pages.
    #[arg(long, default_value_t = 300)]
    pages: usize,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ProfileArg {
    Rfc3986,
    Crawler,
}

#[derive(Args, Debug)]
struct CanonArgs {
    /// Canonicalization profile.
    #[arg(long, value_enum, default_value = "crawler")]
    profile: ProfileArg,
    /// Resolve relative inputs against this page URL (as links on that page).
    #[arg(long)]
    base: Option<String>,
    /// URLs to canonicalize.
    #[arg(required = true)]
    urls: Vec<String>,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["robots", "status"])))]
struct RobotsArgs {
    /// A robots.txt file.
    #[arg(long)]
    robots: Option<PathBuf>,
    /// The HTTP status a robots.txt fetch returned instead (or "unreachable").
    #[arg(long)]
    status: Option<String>,
    /// The crawler's product token.
    #[arg(long)]
    agent: String,
    /// Print the agent's Crawl-delay in seconds, or "none".
    #[arg(long)]
    crawl_delay: bool,
    /// URLs to check.
    urls: Vec<String>,
}

#[derive(Args, Debug)]
struct FingerprintArgs {
    /// Print the top weighted features of each file instead.
    #[arg(long)]
    features: bool,
    /// How many features to print with --features.
    #[arg(long, default_value_t = 30)]
    top: usize,
    /// Config file (TOML) laid over config/default.toml ([features] is used).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override one config key for this run: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct HammingArgs {
    /// File of existing fingerprints (16 hex digits per line).
    #[arg(long)]
    fingerprints: PathBuf,
    /// File of query fingerprints (16 hex digits per line).
    #[arg(long)]
    queries: PathBuf,
    /// Hamming distance threshold.
    #[arg(short, default_value_t = 3)]
    k: u32,
    /// Number of tables (a design for k; default: chosen by size).
    #[arg(long)]
    tables: Option<usize>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum MethodArg {
    Simhash,
    Minhash,
    Bloom,
}

#[derive(Args, Debug)]
struct NearArgs {
    /// Directory of HTML/text files (recursive).
    #[arg(long)]
    corpus: PathBuf,
    /// Detector.
    #[arg(long, value_enum, default_value = "simhash")]
    method: MethodArg,
    /// Hamming threshold for simhash.
    #[arg(short, default_value_t = 3)]
    k: u32,
    /// Similarity threshold for minhash (resemblance) and bloom (similarity).
    #[arg(long)]
    threshold: Option<f64>,
    /// Print clusters (union-find over pairs) instead of pairs.
    #[arg(long)]
    clusters: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ReportKind {
    Summary,
    Clusters,
    Mirrors,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum FormatArg {
    Json,
    Csv,
    Html,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Which report.
    #[arg(value_enum)]
    kind: ReportKind,
    /// A crawl output directory.
    #[arg(long)]
    crawl: PathBuf,
    /// Output format (written to stdout).
    #[arg(long, value_enum, default_value = "json")]
    format: FormatArg,
}

#[derive(Args, Debug)]
struct ExplainArgs {
    /// A crawl output directory.
    #[arg(long)]
    crawl: PathBuf,
    /// The URL to explain.
    url: String,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["corpus", "crawl"])))]
struct EvalArgs {
    /// Directory of HTML/text files.
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// A crawl output directory (stored bodies).
    #[arg(long)]
    crawl: Option<PathBuf>,
    /// Where to write the CSV table and the SVG plot (default: current directory).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    which: BenchKind,
}

#[derive(Subcommand, Debug)]
enum BenchKind {
    /// The permuted-table index against a brute-force scan.
    Index {
        /// Stored fingerprints.
        #[arg(long, default_value_t = 1_000_000)]
        n: usize,
        /// Queries.
        #[arg(long, default_value_t = 1_000_000)]
        queries: usize,
        /// Tables: 4, 10, 16, 20 are the paper's k = 3 designs, 6 and 8 the
        /// two-halves ones (default: the `index.design = "auto"` choice for n).
        #[arg(long)]
        tables: Option<usize>,
        /// Fingerprint distributions to run.
        #[arg(long, value_enum, default_value = "both")]
        workload: WorkloadArg,
        /// Skip the BTreeSet-per-table baseline (very large n).
        #[arg(long)]
        no_btree: bool,
        /// Queries checked against (and timed with) a brute-force scan.
        #[arg(long, default_value_t = 200)]
        brute_queries: usize,
    },
    /// Batch mode (`simcrawl hamming`, Manku §3.3) in memory: tables over the
    /// queries, a parallel scan of the fingerprints, checked against brute force.
    Hamming {
        /// Stored fingerprints scanned (F).
        #[arg(long, default_value_t = 100_000_000)]
        fingerprints: usize,
        /// Queries the tables are built over (Q).
        #[arg(long, default_value_t = 1_000_000)]
        queries: usize,
        /// Tables (default: chosen by the number of queries).
        #[arg(long)]
        tables: Option<usize>,
    },
    /// The per-page path: parse, text, features, simhash.
    Pipeline {
        /// Article pages of the test web to measure on.
        #[arg(long, default_value_t = 1000)]
        pages: usize,
    },
    /// What `crawl --resume` reads before its first fetch, on a store of
    /// many recorded pages (written to a temporary directory first).
    Resume {
        /// Recorded pages in the store (and a quarter as many queued URLs).
        #[arg(long, default_value_t = 1_000_000)]
        pages: u64,
    },
    /// A full crawl of a local test web with politeness off.
    Crawl {
        /// Article pages of the test web.
        #[arg(long, default_value_t = 20_000)]
        pages: usize,
        /// Fetches per crawler.
        #[arg(long, default_value_t = 20_000)]
        max_pages: u64,
        /// The Scrapy peer script.
        #[arg(long, default_value = "benches/peer_scrapy.sh")]
        peer_script: PathBuf,
        /// Skip the Scrapy peer.
        #[arg(long)]
        no_peer: bool,
        /// Override one key of simcrawl's benchmark settings, as `crawl --set`
        /// does (e.g. `crawl.concurrency=128`); repeatable.
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum WorkloadArg {
    Random,
    Clustered,
    Both,
}

fn fingerprint(args: FingerprintArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let settings = simcrawl::Settings::load(args.config.as_deref(), &args.set)?;
    let top = args.features.then_some(args.top);
    let run = simcrawl::fingerprint::fingerprint_files(&args.paths, &settings.features, top)?;
    for e in &run.failed {
        eprintln!("simcrawl: {e}");
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for f in &run.files {
        writeln!(out, "{:016x}\t{}", f.fingerprint, f.path.display())?;
        for (label, w) in &f.top {
            writeln!(out, "  {w:8.3}\t{label}")?;
        }
    }
    out.flush()?;
    Ok(if run.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::report::{self, Format, ReportKind as Kind};
    let kind = match args.kind {
        ReportKind::Summary => Kind::Summary,
        ReportKind::Clusters => Kind::Clusters,
        ReportKind::Mirrors => Kind::Mirrors,
    };
    let format = match args.format {
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
        FormatArg::Html => Format::Html,
    };
    let text = report::render_crawl(kind, format, &args.crawl, &simcrawl::Settings::default())?;
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, text.as_bytes()).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn testweb(args: TestwebArgs) -> anyhow::Result<ExitCode> {
    let addr: std::net::SocketAddr = args.addr.parse().map_err(|e| {
        simcrawl::Error::InvalidInput(format!(
            "--addr {:?}: {e} (expected IP:PORT, e.g. 127.0.0.1:8080)",
            args.addr
        ))
    })?;
    let opts = simcrawl::testweb::TestWebOptions {
        seed: args.seed,
        pages: args.pages,
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let mut stdout = std::io::stdout();
    runtime.block_on(simcrawl::testweb::run_cli(
        opts,
        addr,
        args.truth.as_deref(),
        &mut stdout,
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn canon(args: CanonArgs) -> anyhow::Result<ExitCode> {
    let profile = match args.profile {
        ProfileArg::Rfc3986 => simcrawl::config::CanonProfile::Rfc3986,
        ProfileArg::Crawler => simcrawl::config::CanonProfile::Crawler,
    };
    let mut out = std::io::stdout().lock();
    let all_ok = simcrawl::canon::run_cli(profile, args.base.as_deref(), &args.urls, &mut out)?;
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn robots(args: RobotsArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let all_ok = simcrawl::politeness::robots::run_cli(
        args.robots.as_deref(),
        args.status.as_deref(),
        &args.agent,
        args.crawl_delay,
        &args.urls,
        &mut out,
    )?;
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn crawl(args: CrawlArgs) -> anyhow::Result<ExitCode> {
    let mut overrides = args.set.clone();
    if let Some(n) = args.max_pages {
        overrides.push(format!("crawl.max_pages={n}"));
    }
    let settings = simcrawl::Settings::load(Some(&args.config), &overrides)?;
    let seeds = match &args.seeds {
        Some(path) => simcrawl::crawl::read_seeds(path)?,
        None if args.resume => Vec::new(),
        None => return Err(simcrawl::Error::InvalidInput("--seeds FILE is required for a new crawl".into()).into()),
    };
    let opts = simcrawl::crawl::CrawlOptions {
        resume: args.resume,
        progress: true,
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
    println!(
        "crawl log: {}",
        args.out.join(simcrawl::model::CrawlDir::LOG_FILE).display()
    );
    if let Some(r) = &summary.reports {
        println!("reports:   {}", r.dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM (what `kill`, systemd and
/// container runtimes send), and names the one that came.
async fn stop_signal() -> &'static str {
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

fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let result = runtime()?.block_on(simcrawl::demo::run(args.out, &[], true))?;
    print!("{result}");
    Ok(ExitCode::SUCCESS)
}

fn explain(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let text = simcrawl::report::explain::explain(&args.crawl, &args.url, &simcrawl::Settings::default())?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn near(a: NearArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::sketch::near::Method;
    let settings = simcrawl::Settings::default();
    let opts = simcrawl::eval::corpus::NearOptions {
        corpus: a.corpus,
        method: match a.method {
            MethodArg::Simhash => Method::Simhash,
            MethodArg::Minhash => Method::Minhash,
            MethodArg::Bloom => Method::Bloom,
        },
        k: a.k,
        threshold: a.threshold,
        clusters: a.clusters,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    simcrawl::eval::corpus::run_near(&opts, &settings, &mut out, &mut std::io::stderr())?;
    std::io::Write::flush(&mut out).context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn eval(a: EvalArgs) -> anyhow::Result<ExitCode> {
    let settings = simcrawl::Settings::default();
    let out_dir = a.out.unwrap_or_else(|| PathBuf::from("."));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (a.corpus, a.crawl) {
        (Some(corpus), _) => {
            simcrawl::eval::corpus::run_eval_corpus(&corpus, &out_dir, &settings, &mut out, &mut std::io::stderr())?;
        }
        (None, Some(crawl)) => {
            simcrawl::eval::corpus::run_eval_crawl(&crawl, &out_dir, &settings, &mut out)?;
        }
        (None, None) => {
            return Err(simcrawl::Error::InvalidInput("eval needs --corpus DIR or --crawl DIR".into()).into())
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `simcrawl hamming`: `q_line\tf_line\tdistance` (1-based) per pair within k,
/// sorted by query then fingerprint.
fn hamming(a: HammingArgs) -> anyhow::Result<ExitCode> {
    use simcrawl::index::batch;
    use std::io::Write;
    // Into the library's error, so bad input keeps exit code 2.
    let index_err = simcrawl::Error::from;
    batch::check_options(a.k, a.tables).map_err(index_err)?;
    let fingerprints = batch::read_fingerprints(&a.fingerprints).map_err(index_err)?;
    let queries = batch::read_fingerprints(&a.queries).map_err(index_err)?;
    let pairs = batch::run(&fingerprints, &queries, a.k, a.tables);
    let stdout_err = |e| simcrawl::Error::io("<stdout>", e);
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for &(qi, fi, d) in &pairs {
        writeln!(w, "{}\t{}\t{}", qi + 1, fi + 1, d).map_err(stdout_err)?;
    }
    w.flush().map_err(stdout_err)?;
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => demo(args),
        Command::Crawl(args) => crawl(args),
        Command::Testweb(args) => testweb(args),
        Command::Canon(args) => canon(args),
        Command::Robots(args) => robots(args),
        Command::Fingerprint(args) => fingerprint(args),
        Command::Hamming(a) => hamming(a),
        Command::Near(a) => near(a),
        Command::Report(args) => report(args),
        Command::Explain(args) => explain(args),
        Command::Eval(a) => eval(a),
        Command::Bench(b) => match b.which {
            BenchKind::Index {
                n,
                queries,
                tables,
                workload,
                no_btree,
                brute_queries,
            } => {
                use simcrawl::bench::index::{Options, Shape};
                let shapes = match workload {
                    WorkloadArg::Random => vec![Shape::Random],
                    WorkloadArg::Clustered => vec![Shape::Clustered],
                    WorkloadArg::Both => vec![Shape::Random, Shape::Clustered],
                };
                let opts = Options {
                    n,
                    queries,
                    tables,
                    shapes,
                    no_btree,
                    brute_queries,
                };
                simcrawl::bench::index::run(&opts, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
            BenchKind::Crawl {
                pages,
                max_pages,
                peer_script,
                no_peer,
                set,
            } => {
                let opts = simcrawl::bench::CrawlBenchOptions {
                    pages,
                    max_pages,
                    peer_script: (!no_peer).then_some(peer_script),
                    overrides: set,
                };
                simcrawl::bench::run_crawl_bench(&opts, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
            BenchKind::Hamming {
                fingerprints,
                queries,
                tables,
            } => {
                simcrawl::bench::index::run_batch(fingerprints, queries, tables, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
            BenchKind::Resume { pages } => {
                simcrawl::bench::run_resume_bench(pages, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
            BenchKind::Pipeline { pages } => {
                simcrawl::bench::run_pipeline_bench(pages, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
        },
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "simcrawl=info",
        1 => "simcrawl=debug",
        _ => "simcrawl=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli).context("simcrawl") {
        Ok(code) => code,
        Err(err) => {
            // One line: the chain of causes, outermost first; a cause whose
            // text its parent's message already ends with is not repeated.
            let mut chain: Vec<String> = Vec::new();
            for cause in err.chain().skip(1).map(|c| c.to_string()) {
                if !chain.last().is_some_and(|prev| prev.ends_with(&cause)) {
                    chain.push(cause);
                }
            }
            eprintln!("simcrawl: error: {}", chain.join(": "));
            let usage = err.chain().any(|c| {
                c.downcast_ref::<simcrawl::Error>()
                    .is_some_and(simcrawl::Error::is_usage)
                    || c.downcast_ref::<simcrawl::config::ConfigError>().is_some()
            });
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}
