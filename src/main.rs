//! The `simcrawl` binary: parses the command line (clap) and calls the
//! library. No crawling logic lives here.
//!
//! Exit codes: 0 success, 2 bad usage or bad input (one-line reason on
//! stderr), 1 any other failure.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

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
        /// Tables (design for k = 3: 4, 10, 16 or 20).
        #[arg(long, default_value_t = 10)]
        tables: usize,
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
    /// The per-page path: parse, text, features, simhash.
    Pipeline,
    /// A full crawl of a local test web with politeness off.
    Crawl {
        /// Pages of the test web.
        #[arg(long, default_value_t = 20_000)]
        pages: usize,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum WorkloadArg {
    Random,
    Clustered,
    Both,
}

fn not_built(what: &str) -> anyhow::Result<ExitCode> {
    Err(simcrawl::Error::InvalidInput(format!("`simcrawl {what}` is not built yet")).into())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(_) => not_built("demo"),
        Command::Crawl(_) => not_built("crawl"),
        Command::Testweb(_) => not_built("testweb"),
        Command::Canon(_) => not_built("canon"),
        Command::Robots(_) => not_built("robots"),
        Command::Fingerprint(_) => not_built("fingerprint"),
        Command::Hamming(a) => {
            let stdout = std::io::stdout().lock();
            simcrawl::index::batch::run_files(&a.fingerprints, &a.queries, a.k, a.tables, stdout)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Near(_) => not_built("near"),
        Command::Report(_) => not_built("report"),
        Command::Explain(_) => not_built("explain"),
        Command::Eval(_) => not_built("eval"),
        Command::Bench(b) => match b.which {
            BenchKind::Index {
                n,
                queries,
                tables,
                workload,
                no_btree,
                brute_queries,
            } => {
                use simcrawl::index::bench::{Options, Shape};
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
                simcrawl::index::bench::run(&opts, &mut std::io::stdout().lock())?;
                Ok(ExitCode::SUCCESS)
            }
            _ => not_built("bench"),
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
            // One line: the chain of causes, outermost first.
            let chain: Vec<String> = err.chain().skip(1).map(|c| c.to_string()).collect();
            eprintln!("simcrawl: error: {}", chain.join(": "));
            let usage = err.chain().any(|c| {
                c.downcast_ref::<simcrawl::Error>()
                    .is_some_and(simcrawl::Error::is_usage)
            });
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}
