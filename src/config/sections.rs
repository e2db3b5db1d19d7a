//! Stage 2 of loading: the validated, typed settings of each section
//! (durations, enums, compiled regexes), as every stage reads them.

use std::path::PathBuf;
use std::time::Duration;

/// Which discovered links stay in the crawl (`[crawl] scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only the seeds' hosts.
    SameHost,
    /// The seeds' registrable domains and their subdomains.
    SameDomain,
    /// URLs whose SURT form starts with one of the configured prefixes.
    Surt,
    /// Everything.
    Any,
}

/// URL canonicalization profile (`[canon] profile`, `simcrawl canon --profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CanonProfile {
    /// RFC 3986 §6 normalization only.
    Rfc3986,
    /// RFC 3986 plus query sorting, tracking-parameter removal and index-file folding.
    Crawler,
}

/// Choice of permuted-table design (`[index] design`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexDesign {
    /// Manku's X(f, k, d) choice for the expected size.
    Auto,
    /// k = 3: 4 tables, p = 16.
    T4,
    /// k = 3: 6 tables, p = 21/22 (two halves, one with at most 1 difference).
    T6,
    /// k = 3: 8 tables, p = 24 (two halves, each split twice in two).
    T8,
    /// k = 3: 10 tables, p = 25/26.
    T10,
    /// k = 3: 16 tables, p = 28.
    T16,
    /// k = 3: 20 tables, p = 31..33.
    T20,
}

/// What happens to exact and near duplicates (`[dedup] policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupPolicy {
    /// Record the decision; do not follow out-links.
    Drop,
    /// Follow out-links with a priority penalty.
    Deprioritize,
    /// Record only.
    Keep,
}

/// How a simhash candidate is confirmed (`[dedup] verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Accept every candidate within k.
    None,
    /// Require an estimated min-hash resemblance above the threshold.
    Minhash,
    /// Require a content-shingle resemblance (bottom-k sketch of the
    /// weighted blocks; exact on short pages) above the threshold.
    Shingles,
}

/// `[crawl]`: what to crawl and how much.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct CrawlSettings {
    pub user_agent: String,
    pub contact_url: String,
    /// 0 = no limit.
    pub max_pages: u64,
    pub max_depth: u32,
    pub concurrency: usize,
    /// Threads of the async runtime that fetches (`crawl.io_threads`); 0 =
    /// one per four cores, at least one. See [`CrawlSettings::io_threads`].
    pub io_threads: usize,
    pub scope: Scope,
    pub surt_prefixes: Vec<String>,
    pub allow: Vec<regex::Regex>,
    pub deny: Vec<regex::Regex>,
    /// 0 = no limit.
    pub max_pages_per_host: u64,
    pub max_url_length: usize,
    pub max_path_repetition: usize,
    /// 0 = no limit.
    pub max_urls_per_pattern: u64,
}

impl CrawlSettings {
    /// The number of async (fetch) threads a crawl runs on `cores` cores:
    /// `crawl.io_threads`, or for 0 one per four cores, at least one. The
    /// async side does ~1/4 of a page's CPU work (HTTP, dispatch); parsing,
    /// features and simhash run on the analysis threads (one per core), so
    /// more async threads only preempt those (measured in
    /// docs/benchmarks.md).
    pub fn io_threads(&self, cores: usize) -> usize {
        if self.io_threads > 0 {
            self.io_threads
        } else {
            (cores / 4).max(1)
        }
    }

    /// The full User-Agent header: `simcrawl/VERSION (+CONTACT_URL)` with the configured token.
    pub fn user_agent_header(&self) -> String {
        format!(
            "{}/{} (+{})",
            self.user_agent,
            env!("CARGO_PKG_VERSION"),
            self.contact_url
        )
    }
}

/// `[politeness]`: robots.txt and per-host limits.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct PolitenessSettings {
    pub respect_robots: bool,
    pub robots_cache_ttl: Duration,
    pub robots_max_bytes: usize,
    pub robots_retry: Duration,
    pub max_in_flight_per_host: usize,
    /// Requests in flight to one server address (resolved IP) at once, over
    /// all host names that resolve to it (0 = no limit).
    pub max_in_flight_per_ip: usize,
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub delay_factor: f64,
    pub max_crawl_delay: Duration,
    pub retry_after_cap: Duration,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub max_retries: u32,
    pub max_consecutive_failures: u32,
    pub park: Duration,
    /// Crawl-wide requests started per second; 0 = no cap.
    pub max_requests_per_sec: u32,
}

/// `[fetch]`: the HTTP client.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct FetchSettings {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub max_body_bytes: u64,
    pub max_redirects: u32,
    /// Lower-cased media types.
    pub parse_content_types: Vec<String>,
    /// Host patterns (`host` or `*.suffix`) mapped to an IP address.
    pub resolve: Vec<(String, std::net::IpAddr)>,
    /// Extra request headers (names lower-cased, checked by `validate`),
    /// `Accept-Language` among them when set.
    pub headers: Vec<(String, String)>,
    /// The proxy URL, if any.
    pub proxy: Option<url::Url>,
    /// Keep and send back cookies.
    pub cookies: bool,
}

/// `[canon]`: URL canonicalization.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct CanonSettings {
    pub profile: CanonProfile,
    pub sort_query: bool,
    /// Lower-cased; a trailing `*` matches a prefix.
    pub drop_params: Vec<String>,
    pub strip_index_file: bool,
}

/// `[features]`: text to weighted features.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct FeatureSettings {
    pub stop_words: bool,
    pub stemming: bool,
    pub default_language: String,
    pub detect_language: bool,
    pub unigram_weight: f64,
    pub bigram_weight: f64,
    pub title_boost: f64,
    pub heading_boost: f64,
    pub boilerplate_weight: f64,
    pub template_learning: bool,
    pub template_min_pages: u32,
    pub template_min_fraction: f64,
    pub template_weight: f64,
    pub max_text_bytes: usize,
}

/// `[simhash]`.
#[derive(Debug, Clone)]
pub struct SimhashSettings {
    /// Near-duplicate threshold: Hamming distance <= k.
    pub k: u32,
}

/// `[index]`.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct IndexSettings {
    pub design: IndexDesign,
    pub expected_size_log2: u32,
}

/// `[dedup]`.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct DedupSettings {
    pub policy: DedupPolicy,
    pub exact_penalty: f64,
    pub near_penalty: f64,
    pub verify: Verify,
    pub verify_threshold: f64,
    /// Under `shingles`: the resemblance a candidate needs when either page
    /// has fewer than `short_page_shingles` content shingles.
    pub short_page_threshold: f64,
    /// Content shingles below which a page is short (0: none is).
    pub short_page_shingles: u32,
    /// Shingle sketches compare the text outside both pages' templates as
    /// they are when compared.
    pub verify_outside_templates: bool,
    /// Out-links of a page are not followed when it ends a chain of this
    /// many same-host duplicates or look-alikes in a row along its link path (0 = no limit).
    pub max_duplicate_chain: u32,
}

/// `[frontier]`: priority weights.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct FrontierSettings {
    pub depth_weight: f64,
    pub parent_dup_weight: f64,
    pub host_dup_rate_weight: f64,
    pub host_novelty_weight: f64,
    pub relevance_weight: f64,
    pub inlink_weight: f64,
    pub host_relevance_weight: f64,
    pub url_relevance_weight: f64,
    /// Weight of the sitemap component (see [`crate::sitemap::score`]).
    pub sitemap_weight: f64,
    /// URLs per host kept in memory at most.
    pub memory_window: usize,
    /// URLs kept in memory across all hosts' windows: each host keeps an
    /// equal share (at least 16, at most `memory_window`).
    pub memory_budget: usize,
    /// Canonical URLs whose seen-set state is cached in memory (0 = no cache).
    pub seen_cache_urls: usize,
}

/// `[focus]`: focused crawling.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct FocusSettings {
    pub enabled: bool,
    pub keywords: Vec<String>,
    /// Resolved against the config file's directory.
    pub examples: Vec<PathBuf>,
    /// A page is on-topic when its relevance is at least this (tunnelling, harvest rate).
    pub on_topic: f64,
    /// ... or at least this quantile of the relevance of the pages seen so
    /// far, when that is lower ([`crate::focus::Evidence::threshold`];
    /// 0 = `on_topic` only).
    pub on_topic_quantile: f64,
    /// A host's relevance is its yield over about this many of its latest
    /// pages ([`crate::focus::Evidence`]); 0 = over all its pages alike.
    pub host_memory: u32,
    pub min_relevance: f64,
    /// Slope of the pivoted length normalization of page relevance
    /// ([`crate::focus`]): 1 = plain cosine.
    pub length_slope: f64,
    /// Page relevance reads a keyword of several words as a phrase: its
    /// word pairs count, not its words one by one ([`crate::focus`]).
    pub phrases: bool,
    /// Page relevance is multiplied by the share of the keywords the page
    /// holds to this power ([`crate::focus`]); 0 = not at all.
    pub coordination: f64,
    pub tunnel_distance: u32,
    pub parent_weight: f64,
    pub anchor_weight: f64,
    /// Priority points by which a ready URL may trail the best URL of a
    /// host that waits only for its response or its page's decision before
    /// the fetch slot waits for that host instead (see [`crate::frontier`]).
    pub hold_margin: f64,
    /// How long a fetch slot waits so at most (0 = never).
    pub hold: std::time::Duration,
}

/// `[mirror]`: online mirror detection.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct MirrorSettings {
    pub online: bool,
    pub min_sample: u32,
    pub min_score: f64,
    pub min_coverage: f64,
    pub penalty: f64,
}

/// `[store]`: the crawl store.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// Where the crawl keeps its state.
    pub backend: StoreBackend,
    /// The engine of a new disk store (an existing one keeps its own).
    pub engine: crate::store::Engine,
    /// Bytes of the disk engine's cache.
    pub cache_bytes: u64,
    /// The crawl's key namespace in Redis (`""`: the crawl directory's name).
    pub crawl_name: String,
    /// Redis Cluster nodes to connect to first (`host:port`).
    pub redis_nodes: Vec<String>,
    /// How long a worker's host lease lasts without renewal.
    pub lease: std::time::Duration,
}

/// `[store] backend`: which [`crate::store::Store`] a crawl opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreBackend {
    /// The embedded store in `DIR/store/` (engine `[store] engine`).
    Disk,
    /// A Redis Cluster (`crate::store::RedisStore`).
    Redis,
}

/// `[recrawl]`: revisits of recorded pages and their adaptive intervals
/// (the rule is in `crate::recrawl`).
#[derive(Debug, Clone)]
pub struct RecrawlSettings {
    /// Every `--resume` is a recrawl round (as `crawl --recrawl`).
    pub enabled: bool,
    /// Send `If-None-Match` / `If-Modified-Since` from the stored validators.
    pub conditional: bool,
    /// The interval of a page fetched once, seconds.
    pub initial_interval_secs: u64,
    /// The interval never goes below this, seconds.
    pub min_interval_secs: u64,
    /// The interval never goes above this, seconds.
    pub max_interval_secs: u64,
    /// An unchanged or near-unchanged revisit multiplies the interval by `1 + inc_rate`.
    pub inc_rate: f64,
    /// A changed revisit multiplies the interval by `1 - dec_rate`.
    pub dec_rate: f64,
}

/// `[sketch]`: min-hash and Bloom-over-CDC parameters.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct SketchSettings {
    pub shingle_words: usize,
    pub supershingles: usize,
    pub supershingle_size: usize,
    pub supershingle_matches: usize,
    pub cdc_window: usize,
    pub cdc_expected_chunk: usize,
    pub cdc_max_chunk: usize,
    pub bloom_bits_per_chunk: usize,
    pub bloom_threshold: f64,
}

/// `[sitemaps]`: sitemaps read from robots.txt `Sitemap:` lines and `/sitemap.xml`.
#[derive(Debug, Clone)]
pub struct SitemapSettings {
    /// Read sitemaps at all.
    pub enabled: bool,
    /// Also fetch `/sitemap.xml` of every seed origin.
    pub root_sitemap: bool,
    /// Sitemap files (index files included) fetched per host.
    pub max_files_per_host: u32,
    /// Entries (URLs, or child sitemaps of an index) read per file.
    pub max_urls_per_file: usize,
    /// Uncompressed bytes read per file.
    pub max_file_bytes: u64,
    /// Levels of index files below a sitemap named by robots.txt or `/sitemap.xml` (0: no index is followed).
    pub max_nesting: u32,
    /// Link depth given to URLs queued from a sitemap.
    pub url_depth: u32,
}

/// `[output]`.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct OutputSettings {
    pub warc: bool,
    /// A WARC file is closed, and the next begun, once it holds this many bytes.
    pub warc_max_bytes: u64,
    pub reports: bool,
}
