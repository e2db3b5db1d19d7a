//! The command line, as clap parses it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A polite web crawler with near-duplicate detection built into its frontier.
#[derive(Parser, Debug)]
#[command(name = "simcrawl", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Log more (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Start the built-in test web on 127.0.0.1, crawl it, print a summary and report paths.
    Demo(DemoArgs),
    /// Crawl from seeds with a config file.
    Crawl(CrawlArgs),
    /// Join a crawl shared on a Redis Cluster as one of its workers.
    Worker(WorkerArgs),
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
    /// Print the effective configuration, every key with its documentation.
    Config(ConfigArgs),
}

#[derive(Args, Debug)]
pub(crate) struct ConfigArgs {
    /// Config file (TOML), laid over config/default.toml.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// A crawl directory: print the settings it ran with (DIR/settings.toml).
    #[arg(long, conflicts_with = "config")]
    pub(crate) crawl: Option<PathBuf>,
    /// Override one config key: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub(crate) set: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// Output directory (default: a new directory under the system temp dir).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct CrawlArgs {
    /// Config file (TOML), laid over config/default.toml (default: the
    /// built-in defaults; with --resume, the crawl's own DIR/settings.toml).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Seed URLs, one per line ('#' comments allowed).
    #[arg(long)]
    pub(crate) seeds: Option<PathBuf>,
    /// Seed URLs (besides or instead of --seeds FILE).
    #[arg(value_name = "URL")]
    pub(crate) urls: Vec<String>,
    /// Output directory.
    #[arg(long, default_value = "crawl-out")]
    pub(crate) out: PathBuf,
    /// Continue a stopped or killed crawl in --out.
    #[arg(long)]
    pub(crate) resume: bool,
    /// With --resume: a recrawl round. Revisit every recorded page whose
    /// revisit is due ([recrawl] intervals), with conditional requests.
    #[arg(long, requires = "resume")]
    pub(crate) recrawl: bool,
    /// With --resume: a recrawl round that revisits every recorded page,
    /// due or not.
    #[arg(long, requires = "resume", conflicts_with = "recrawl")]
    pub(crate) recrawl_all: bool,
    /// Stop after this many fetches (overrides crawl.max_pages).
    #[arg(long)]
    pub(crate) max_pages: Option<u64>,
    /// Override one config key for this run: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Serve live metrics on this address while the crawl runs:
    /// GET /metrics (Prometheus text) and GET /status (JSON).
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// Run the crawl as N worker processes that share it on a Redis Cluster
    /// ([store] backend = "redis"), each writing DIR/worker-N/; the
    /// reports in DIR/reports/ merge them.
    #[arg(long, value_name = "N", conflicts_with_all = ["resume", "metrics"])]
    pub(crate) workers: Option<u16>,
}

#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// This worker's id (distinct among the crawl's workers); it writes
    /// DIR/worker-ID/.
    #[arg(long)]
    pub(crate) id: u16,
    /// The crawl's directory DIR; its name is the crawl name in Redis unless
    /// [store] crawl_name is set.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Config file (TOML), laid over config/default.toml.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Seed URLs, one per line: the first worker to start seeds the crawl.
    #[arg(long)]
    pub(crate) seeds: Option<PathBuf>,
    /// Seed URLs (besides or instead of --seeds FILE).
    #[arg(value_name = "URL")]
    pub(crate) urls: Vec<String>,
    /// Stop the crawl after this many pages in all (overrides crawl.max_pages).
    #[arg(long)]
    pub(crate) max_pages: Option<u64>,
    /// Override one config key: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub(crate) set: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct TestwebArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) addr: String,
    /// Write the ground truth as JSON to this file.
    #[arg(long)]
    pub(crate) truth: Option<PathBuf>,
    /// Seed of the deterministic generator.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Approximate number of article pages.
    #[arg(long, default_value_t = 300)]
    pub(crate) pages: usize,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum ProfileArg {
    Rfc3986,
    Crawler,
}

#[derive(Args, Debug)]
pub(crate) struct CanonArgs {
    /// Canonicalization profile.
    #[arg(long, value_enum, default_value = "crawler")]
    pub(crate) profile: ProfileArg,
    /// Resolve relative inputs against this page URL (as links on that page).
    #[arg(long)]
    pub(crate) base: Option<String>,
    /// URLs to canonicalize.
    #[arg(required = true)]
    pub(crate) urls: Vec<String>,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["robots", "status"])))]
pub(crate) struct RobotsArgs {
    /// A robots.txt file.
    #[arg(long)]
    pub(crate) robots: Option<PathBuf>,
    /// The HTTP status a robots.txt fetch returned instead (or "unreachable").
    #[arg(long)]
    pub(crate) status: Option<String>,
    /// The crawler's product token.
    #[arg(long)]
    pub(crate) agent: String,
    /// Print the agent's Crawl-delay in seconds, or "none".
    #[arg(long)]
    pub(crate) crawl_delay: bool,
    /// URLs to check.
    pub(crate) urls: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct FingerprintArgs {
    /// Print the top weighted features of each file instead.
    #[arg(long)]
    pub(crate) features: bool,
    /// How many features to print with --features.
    #[arg(long, default_value_t = 30)]
    pub(crate) top: usize,
    /// Config file (TOML) laid over config/default.toml ([features] is used).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Override one config key for this run: SECTION.KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Files or directories.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct HammingArgs {
    /// File of existing fingerprints (16 hex digits per line).
    #[arg(long)]
    pub(crate) fingerprints: PathBuf,
    /// File of query fingerprints (16 hex digits per line).
    #[arg(long)]
    pub(crate) queries: PathBuf,
    /// Hamming distance threshold.
    #[arg(short, default_value_t = 3)]
    pub(crate) k: u32,
    /// Number of tables (a design for k; default: chosen by size).
    #[arg(long)]
    pub(crate) tables: Option<usize>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum MethodArg {
    Simhash,
    Minhash,
    Bloom,
}

#[derive(Args, Debug)]
pub(crate) struct NearArgs {
    /// Directory of HTML/text files (recursive).
    #[arg(long)]
    pub(crate) corpus: PathBuf,
    /// Detector.
    #[arg(long, value_enum, default_value = "simhash")]
    pub(crate) method: MethodArg,
    /// Hamming threshold for simhash.
    #[arg(short, default_value_t = 3)]
    pub(crate) k: u32,
    /// Similarity threshold for minhash (resemblance) and bloom (similarity).
    #[arg(long)]
    pub(crate) threshold: Option<f64>,
    /// Print clusters (union-find over pairs) instead of pairs.
    #[arg(long)]
    pub(crate) clusters: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum ReportKind {
    Summary,
    Clusters,
    Mirrors,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum FormatArg {
    Json,
    Csv,
    Html,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Which report.
    #[arg(value_enum)]
    pub(crate) kind: ReportKind,
    /// A crawl output directory.
    #[arg(long)]
    pub(crate) crawl: PathBuf,
    /// Output format (written to stdout).
    #[arg(long, value_enum, default_value = "json")]
    pub(crate) format: FormatArg,
}

#[derive(Args, Debug)]
pub(crate) struct ExplainArgs {
    /// A crawl output directory.
    #[arg(long)]
    pub(crate) crawl: PathBuf,
    /// The URL to explain.
    pub(crate) url: String,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["corpus", "crawl"])))]
pub(crate) struct EvalArgs {
    /// Directory of HTML/text files.
    #[arg(long)]
    pub(crate) corpus: Option<PathBuf>,
    /// A crawl output directory (stored bodies).
    #[arg(long)]
    pub(crate) crawl: Option<PathBuf>,
    /// Where to write the CSV table and the SVG plot (default: current directory).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub(crate) which: BenchKind,
}

#[derive(Subcommand, Debug)]
pub(crate) enum BenchKind {
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
    /// The frontier's cost per page over the in-memory and the sled store.
    Frontier {
        /// Pages to crawl through the frontier.
        #[arg(long, default_value_t = 50_000)]
        pages: u64,
    },
    /// The per-page path: parse, text, features, simhash, links.
    Pipeline {
        /// Article pages of the test web to measure on; with --dir, the
        /// most HTML files taken from each directory.
        #[arg(long, default_value_t = 1000)]
        pages: usize,
        /// A directory of HTML files (one site; repeat for more) to
        /// measure on instead of the test web.
        #[arg(long = "dir", value_name = "DIR")]
        dirs: Vec<std::path::PathBuf>,
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
        /// does (e.g. `crawl.concurrency=128`; `output.warc=true` also prints the
        /// WARC bytes against the bytes fetched); repeatable.
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        /// Keep simcrawl's crawl directory here (must not exist) instead of
        /// removing it, e.g. to compare `pages.jsonl` of two builds.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// `redis`: crawl on the disk store, then on a Redis Cluster
        /// (`SIMCRAWL_REDIS_NODES`, or the one `scripts/redis-cluster.sh`
        /// starts), and print the cluster's commands, round trips, CPU and
        /// memory per page with the ratios to the disk store (no peer).
        #[arg(long, value_enum, default_value = "disk")]
        backend: BenchBackend,
        /// With `--backend redis`: crawl with each of these numbers of
        /// `simcrawl worker` processes sharing the crawl (e.g. `1,2,4`) and
        /// print a row per number against the disk store.
        #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
        workers: Vec<u16>,
    },
}

/// The store `bench crawl` measures.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BenchBackend {
    /// The disk store (against the Scrapy peer).
    Disk,
    /// A Redis Cluster, against the disk store.
    Redis,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum WorkloadArg {
    Random,
    Clustered,
    Both,
}
