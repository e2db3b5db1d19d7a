//! Configuration: TOML in, validated [`Settings`] out.
//!
//! This sits before every pipeline stage: each stage takes its own section of
//! [`Settings`]. Loading has two stages, as in ripgrep's low/high arguments:
//!
//! 1. **Raw**: `config/default.toml` (embedded at build time, the single source
//!    of defaults) is laid under the user's file and the `--set` overrides, key
//!    by key. A key the defaults do not have, or a value of the wrong TOML type,
//!    is an error naming where it came from. The merged table is deserialized
//!    into `Raw*` structs (serde, `deny_unknown_fields`).
//! 2. **Validated**: [`RawConfig::validate`] checks every range and turns raw
//!    values into typed settings (durations, enums, compiled regexes).
//!
//! ```
//! let s = simcrawl::config::Settings::load(None, &["simhash.k=4".to_string()]).unwrap();
//! assert_eq!(s.simhash.k, 4);
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::{Table, Value};

/// The embedded defaults: `config/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");
/// The embedded test-web settings: `config/test.toml` (politeness delays off).
pub const TEST_TOML: &str = include_str!("../config/test.toml");

/// Why a configuration could not be loaded. Every variant names where the bad
/// value came from (a file path, `--set`, or the embedded defaults) and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{origin}: invalid TOML: {message}")]
    Parse {
        /// Where the text came from.
        origin: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A section or key that simcrawl does not know.
    #[error("{origin}: unknown key `{key}`; allowed here: {allowed}")]
    UnknownKey {
        /// Where the key came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The keys allowed at that level.
        allowed: String,
    },
    /// A value of the wrong TOML type.
    #[error("{origin}: `{key}` must be {expected}, got {got}")]
    Type {
        /// Where the value came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The expected type.
        expected: &'static str,
        /// The type found.
        got: &'static str,
    },
    /// A value outside its allowed range or set.
    #[error("{origin}: `{key}` = {value} is invalid; allowed: {allowed}")]
    Invalid {
        /// Where the value came from.
        origin: String,
        /// `section.key`.
        key: String,
        /// The value, as written.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A `--set` argument that is not `SECTION.KEY=VALUE`.
    #[error("--set {arg}: expected SECTION.KEY=VALUE")]
    BadOverride {
        /// The argument.
        arg: String,
    },
}

// ---------------------------------------------------------------------------
// Stage 1: raw values, exactly as in TOML.

macro_rules! raw_section {
    ($(#[$m:meta])* $name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(missing_docs)]
        pub struct $name { $(pub $field: $ty),* }
    };
}

raw_section!(
    /// `[crawl]` as written.
    RawCrawl {
        user_agent: String, contact_url: String, max_pages: i64, max_depth: i64,
        concurrency: i64, io_threads: i64, scope: String, surt_prefixes: Vec<String>, allow: Vec<String>,
        deny: Vec<String>, max_pages_per_host: i64, max_url_length: i64,
        max_path_repetition: i64, max_urls_per_pattern: i64,
    }
);
raw_section!(
    /// `[politeness]` as written.
    RawPoliteness {
        respect_robots: bool, robots_cache_ttl_secs: i64, robots_max_bytes: i64,
        robots_retry_secs: i64, max_in_flight_per_host: i64, max_in_flight_per_ip: i64, min_delay_ms: i64,
        max_delay_ms: i64, delay_factor: f64, max_crawl_delay_secs: i64,
        retry_after_cap_secs: i64, backoff_base_secs: i64, backoff_cap_secs: i64,
        max_retries: i64, max_consecutive_failures: i64, park_secs: i64, max_requests_per_sec: i64,
    }
);
raw_section!(
    /// `[fetch]` as written.
    RawFetch {
        connect_timeout_ms: i64, timeout_ms: i64, max_body_bytes: i64, max_redirects: i64,
        parse_content_types: Vec<String>, resolve: Vec<String>,
    }
);
raw_section!(
    /// `[canon]` as written.
    RawCanon { profile: String, sort_query: bool, drop_params: Vec<String>, strip_index_file: bool }
);
raw_section!(
    /// `[features]` as written.
    RawFeatures {
        stop_words: bool, stemming: bool, default_language: String, detect_language: bool,
        unigram_weight: f64, bigram_weight: f64, title_boost: f64, heading_boost: f64,
        boilerplate_weight: f64, template_learning: bool, template_min_pages: i64,
        template_min_fraction: f64, template_weight: f64, max_text_bytes: i64,
    }
);
raw_section!(
    /// `[simhash]` as written.
    RawSimhash { bits: i64, k: i64 }
);
raw_section!(
    /// `[index]` as written.
    RawIndex { design: String, expected_size_log2: i64, compression: bool }
);
raw_section!(
    /// `[dedup]` as written.
    RawDedup {
        policy: String, exact_penalty: f64, near_penalty: f64, verify: String, verify_threshold: f64,
        max_duplicate_chain: i64,
    }
);
raw_section!(
    /// `[frontier]` as written.
    RawFrontier {
        depth_weight: f64, parent_dup_weight: f64, host_dup_rate_weight: f64,
        host_novelty_weight: f64, relevance_weight: f64, inlink_weight: f64, memory_window: i64,
        seen_cache_urls: i64,
    }
);
raw_section!(
    /// `[focus]` as written.
    RawFocus {
        enabled: bool, keywords: Vec<String>, examples: Vec<String>, on_topic: f64, min_relevance: f64,
        tunnel_distance: i64, parent_weight: f64, anchor_weight: f64,
    }
);
raw_section!(
    /// `[mirror]` as written.
    RawMirror { online: bool, min_sample: i64, min_score: f64, min_coverage: f64, penalty: f64 }
);
raw_section!(
    /// `[sketch]` as written.
    RawSketch {
        shingle_words: i64, supershingles: i64, supershingle_size: i64,
        supershingle_matches: i64, cdc_window: i64, cdc_expected_chunk: i64, cdc_max_chunk: i64,
        bloom_bits_per_chunk: i64, bloom_threshold: f64,
    }
);
raw_section!(
    /// `[output]` as written.
    RawOutput { jsonl: bool, warc: bool, reports: bool, store_bodies: bool }
);
raw_section!(
    /// The whole configuration as written (after merging with the defaults).
    RawConfig {
        crawl: RawCrawl, politeness: RawPoliteness, fetch: RawFetch, canon: RawCanon,
        features: RawFeatures, simhash: RawSimhash, index: RawIndex, dedup: RawDedup,
        frontier: RawFrontier, focus: RawFocus, mirror: RawMirror, sketch: RawSketch,
        output: RawOutput,
    }
);

// ---------------------------------------------------------------------------
// Stage 2: validated, typed settings.

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
    pub compression: bool,
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
    pub memory_window: usize,
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
    pub min_relevance: f64,
    pub tunnel_distance: u32,
    pub parent_weight: f64,
    pub anchor_weight: f64,
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

/// `[output]`.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct OutputSettings {
    pub jsonl: bool,
    pub warc: bool,
    pub reports: bool,
    pub store_bodies: bool,
}

/// The validated configuration every stage reads.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub struct Settings {
    pub crawl: CrawlSettings,
    pub politeness: PolitenessSettings,
    pub fetch: FetchSettings,
    pub canon: CanonSettings,
    pub features: FeatureSettings,
    pub simhash: SimhashSettings,
    pub index: IndexSettings,
    pub dedup: DedupSettings,
    pub frontier: FrontierSettings,
    pub focus: FocusSettings,
    pub mirror: MirrorSettings,
    pub sketch: SketchSettings,
    pub output: OutputSettings,
}

impl Default for Settings {
    /// The embedded `config/default.toml`.
    fn default() -> Self {
        Settings::from_layers(&[], &[]).expect("embedded config/default.toml is valid")
    }
}

impl Settings {
    /// Load the defaults, then `path` (if any), then `overrides`
    /// (`SECTION.KEY=VALUE` strings, as given to `--set`), and validate.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Settings, ConfigError> {
        match path {
            None => Settings::from_layers(&[], overrides),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                let mut s = Settings::from_layers(&[(p.display().to_string(), &text)], overrides)?;
                let base = p.parent().unwrap_or(Path::new("."));
                for ex in &mut s.focus.examples {
                    if ex.is_relative() {
                        *ex = base.join(&*ex);
                    }
                }
                Ok(s)
            }
        }
    }

    /// The built-in test web's settings (`config/test.toml` over the defaults), plus overrides.
    pub fn test_web(overrides: &[String]) -> Result<Settings, ConfigError> {
        Settings::from_layers(&[("config/test.toml".to_string(), TEST_TOML)], overrides)
    }

    /// Merge TOML texts (each with its origin for error messages) over the
    /// embedded defaults, apply overrides, and validate.
    pub fn from_layers(layers: &[(String, &str)], overrides: &[String]) -> Result<Settings, ConfigError> {
        let mut merged = parse_table("config/default.toml (embedded)", DEFAULT_TOML)?;
        let mut origins: HashMap<String, String> = HashMap::new();
        for (origin, text) in layers {
            let table = parse_table(origin, text)?;
            merge_layer(&mut merged, table, origin, &mut origins)?;
        }
        for arg in overrides {
            let (key, value) = parse_override(arg)?;
            let (section, name) = key
                .split_once('.')
                .ok_or_else(|| ConfigError::BadOverride { arg: arg.clone() })?;
            let mut sect = Table::new();
            sect.insert(name.to_string(), value);
            let mut layer = Table::new();
            layer.insert(section.to_string(), Value::Table(sect));
            merge_layer(&mut merged, layer, "--set", &mut origins)?;
        }
        let raw: RawConfig = Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                origin: "merged configuration".into(),
                message: e.to_string(),
            })?;
        raw.validate(&origins)
    }
}

fn parse_table(origin: &str, text: &str) -> Result<Table, ConfigError> {
    text.parse::<Table>().map_err(|e| ConfigError::Parse {
        origin: origin.to_string(),
        message: e.to_string().trim().to_string(),
    })
}

/// `SECTION.KEY=VALUE`; VALUE is TOML (`3`, `true`, `"x"`, `["a"]`) or else a bare string.
fn parse_override(arg: &str) -> Result<(String, Value), ConfigError> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| ConfigError::BadOverride { arg: arg.to_string() })?;
    let key = key.trim();
    if key.split('.').count() != 2 || key.split('.').any(str::is_empty) {
        return Err(ConfigError::BadOverride { arg: arg.to_string() });
    }
    let value = value.trim();
    let parsed = format!("v = {value}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(value.to_string()));
    Ok((key.to_string(), parsed))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn allowed_keys(t: &Table) -> String {
    let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys.join(", ")
}

/// Lay `layer` over `base`: only known sections and keys, same TOML types
/// (an integer is accepted where a float is expected).
fn merge_layer(
    base: &mut Table,
    layer: Table,
    origin: &str,
    origins: &mut HashMap<String, String>,
) -> Result<(), ConfigError> {
    let sections = allowed_keys(base);
    for (section, value) in layer {
        let Some(Value::Table(base_sect)) = base.get_mut(&section) else {
            return Err(ConfigError::UnknownKey {
                origin: origin.to_string(),
                key: section,
                allowed: sections,
            });
        };
        let Value::Table(sect) = value else {
            return Err(ConfigError::Type {
                origin: origin.to_string(),
                key: section,
                expected: "a table",
                got: type_name(&value),
            });
        };
        for (key, value) in sect {
            let full = format!("{section}.{key}");
            let Some(old) = base_sect.get(&key) else {
                return Err(ConfigError::UnknownKey {
                    origin: origin.to_string(),
                    key: full,
                    allowed: allowed_keys(base_sect),
                });
            };
            let value = match (old, value) {
                (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
                (old, value) if std::mem::discriminant(old) == std::mem::discriminant(&value) => value,
                (old, value) => {
                    return Err(ConfigError::Type {
                        origin: origin.to_string(),
                        key: full,
                        expected: type_name(old),
                        got: type_name(&value),
                    })
                }
            };
            if let Value::Array(items) = &value {
                if let Some(bad) = items.iter().find(|v| !v.is_str()) {
                    return Err(ConfigError::Type {
                        origin: origin.to_string(),
                        key: full,
                        expected: "an array of strings",
                        got: type_name(bad),
                    });
                }
            }
            origins.insert(full, origin.to_string());
            base_sect.insert(key, value);
        }
    }
    Ok(())
}

/// Range checks with errors that name the key, its origin and what is allowed.
struct Check<'a> {
    origins: &'a HashMap<String, String>,
}

impl Check<'_> {
    fn err(&self, key: &str, value: impl std::fmt::Display, allowed: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            origin: self
                .origins
                .get(key)
                .cloned()
                .unwrap_or_else(|| "config/default.toml (embedded)".into()),
            key: key.to_string(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
    fn int(&self, key: &str, v: i64, lo: i64, hi: i64) -> Result<i64, ConfigError> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(self.err(key, v, format!("an integer in {lo}..={hi}")))
        }
    }
    fn uint<T: TryFrom<i64>>(&self, key: &str, v: i64, lo: i64, hi: i64) -> Result<T, ConfigError> {
        let v = self.int(key, v, lo, hi)?;
        T::try_from(v).map_err(|_| self.err(key, v, format!("an integer in {lo}..={hi}")))
    }
    fn float(&self, key: &str, v: f64, lo: f64, hi: f64) -> Result<f64, ConfigError> {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(self.err(key, v, format!("a number in {lo:?}..={hi:?}")))
        }
    }
    fn ms(&self, key: &str, v: i64, lo: i64, hi: i64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.uint(key, v, lo, hi)?))
    }
    fn secs(&self, key: &str, v: i64, lo: i64, hi: i64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_secs(self.uint(key, v, lo, hi)?))
    }
    fn choice<T: Copy>(&self, key: &str, v: &str, options: &[(&str, T)]) -> Result<T, ConfigError> {
        options
            .iter()
            .find(|(name, _)| *name == v)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
                self.err(key, format!("\"{v}\""), names.join(" | "))
            })
    }
    fn regexes(&self, key: &str, pats: &[String]) -> Result<Vec<regex::Regex>, ConfigError> {
        pats.iter()
            .map(|p| {
                regex::Regex::new(p).map_err(|e| {
                    self.err(
                        key,
                        format!("\"{p}\""),
                        format!("a valid regex ({})", e.to_string().lines().last().unwrap_or("")),
                    )
                })
            })
            .collect()
    }
}

impl RawConfig {
    /// Check every value and build typed [`Settings`]. `origins` maps
    /// `section.key` to where its value came from, for error messages.
    pub fn validate(self, origins: &HashMap<String, String>) -> Result<Settings, ConfigError> {
        let c = Check { origins };
        let RawConfig {
            crawl,
            politeness: p,
            fetch,
            canon,
            features: f,
            simhash,
            index,
            dedup,
            frontier: fr,
            focus,
            mirror,
            sketch: sk,
            output,
        } = self;

        let token_ok = !crawl.user_agent.is_empty()
            && crawl
                .user_agent
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_');
        if !token_ok {
            return Err(c.err(
                "crawl.user_agent",
                format!("\"{}\"", crawl.user_agent),
                "a product token of letters, digits, '-' and '_'",
            ));
        }
        match url::Url::parse(&crawl.contact_url) {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
            _ => {
                return Err(c.err(
                    "crawl.contact_url",
                    format!("\"{}\"", crawl.contact_url),
                    "an absolute http(s) URL",
                ))
            }
        }
        let crawl = CrawlSettings {
            user_agent: crawl.user_agent,
            contact_url: crawl.contact_url,
            max_pages: c.uint("crawl.max_pages", crawl.max_pages, 0, i64::MAX)?,
            max_depth: c.uint("crawl.max_depth", crawl.max_depth, 0, 1000)?,
            concurrency: c.uint("crawl.concurrency", crawl.concurrency, 1, 4096)?,
            io_threads: c.uint("crawl.io_threads", crawl.io_threads, 0, 256)?,
            scope: c.choice(
                "crawl.scope",
                &crawl.scope,
                &[
                    ("same-host", Scope::SameHost),
                    ("same-domain", Scope::SameDomain),
                    ("surt", Scope::Surt),
                    ("any", Scope::Any),
                ],
            )?,
            surt_prefixes: crawl.surt_prefixes,
            allow: c.regexes("crawl.allow", &crawl.allow)?,
            deny: c.regexes("crawl.deny", &crawl.deny)?,
            max_pages_per_host: c.uint("crawl.max_pages_per_host", crawl.max_pages_per_host, 0, i64::MAX)?,
            max_url_length: c.uint("crawl.max_url_length", crawl.max_url_length, 16, 65536)?,
            max_path_repetition: c.uint("crawl.max_path_repetition", crawl.max_path_repetition, 1, 100)?,
            max_urls_per_pattern: c.uint("crawl.max_urls_per_pattern", crawl.max_urls_per_pattern, 0, i64::MAX)?,
        };
        if crawl.scope == Scope::Surt && crawl.surt_prefixes.is_empty() {
            return Err(c.err(
                "crawl.surt_prefixes",
                "[]",
                "at least one prefix when crawl.scope = \"surt\"",
            ));
        }

        let min_delay = c.ms("politeness.min_delay_ms", p.min_delay_ms, 0, 3_600_000)?;
        let max_delay = c.ms("politeness.max_delay_ms", p.max_delay_ms, 0, 3_600_000)?;
        if max_delay < min_delay {
            return Err(c.err(
                "politeness.max_delay_ms",
                p.max_delay_ms,
                format!(">= politeness.min_delay_ms ({})", p.min_delay_ms),
            ));
        }
        let politeness = PolitenessSettings {
            respect_robots: p.respect_robots,
            robots_cache_ttl: c.secs("politeness.robots_cache_ttl_secs", p.robots_cache_ttl_secs, 60, 604_800)?,
            robots_max_bytes: c.uint("politeness.robots_max_bytes", p.robots_max_bytes, 512_000, 10_485_760)?,
            robots_retry: c.secs("politeness.robots_retry_secs", p.robots_retry_secs, 1, 86_400)?,
            max_in_flight_per_host: c.uint("politeness.max_in_flight_per_host", p.max_in_flight_per_host, 1, 64)?,
            max_in_flight_per_ip: c.uint("politeness.max_in_flight_per_ip", p.max_in_flight_per_ip, 0, 4096)?,
            min_delay,
            max_delay,
            delay_factor: c.float("politeness.delay_factor", p.delay_factor, 0.0, 100.0)?,
            max_crawl_delay: c.secs("politeness.max_crawl_delay_secs", p.max_crawl_delay_secs, 0, 86_400)?,
            retry_after_cap: c.secs("politeness.retry_after_cap_secs", p.retry_after_cap_secs, 1, 86_400)?,
            backoff_base: c.secs("politeness.backoff_base_secs", p.backoff_base_secs, 0, 3600)?,
            backoff_cap: c.secs("politeness.backoff_cap_secs", p.backoff_cap_secs, 1, 86_400)?,
            max_retries: c.uint("politeness.max_retries", p.max_retries, 0, 10)?,
            max_consecutive_failures: c.uint(
                "politeness.max_consecutive_failures",
                p.max_consecutive_failures,
                1,
                1000,
            )?,
            park: c.secs("politeness.park_secs", p.park_secs, 0, 86_400)?,
            max_requests_per_sec: c.uint("politeness.max_requests_per_sec", p.max_requests_per_sec, 0, 100_000)?,
        };

        let mut resolve = Vec::new();
        for entry in &fetch.resolve {
            let parsed = entry
                .split_once('=')
                .and_then(|(h, ip)| Some((h.trim().to_ascii_lowercase(), ip.trim().parse().ok()?)));
            match parsed {
                Some((h, ip)) if !h.is_empty() => resolve.push((h, ip)),
                _ => {
                    return Err(c.err(
                        "fetch.resolve",
                        format!("\"{entry}\""),
                        "entries \"HOST=IP\" or \"*.SUFFIX=IP\"",
                    ))
                }
            }
        }
        let fetch = FetchSettings {
            connect_timeout: c.ms("fetch.connect_timeout_ms", fetch.connect_timeout_ms, 100, 600_000)?,
            timeout: c.ms("fetch.timeout_ms", fetch.timeout_ms, 100, 3_600_000)?,
            max_body_bytes: c.uint("fetch.max_body_bytes", fetch.max_body_bytes, 1024, 1 << 30)?,
            max_redirects: c.uint("fetch.max_redirects", fetch.max_redirects, 0, 50)?,
            parse_content_types: fetch
                .parse_content_types
                .iter()
                .map(|s| s.trim().to_ascii_lowercase())
                .collect(),
            resolve,
        };

        let canon = CanonSettings {
            profile: c.choice(
                "canon.profile",
                &canon.profile,
                &[("crawler", CanonProfile::Crawler), ("rfc3986", CanonProfile::Rfc3986)],
            )?,
            sort_query: canon.sort_query,
            drop_params: canon.drop_params.iter().map(|s| s.to_ascii_lowercase()).collect(),
            strip_index_file: canon.strip_index_file,
        };

        const LANGS: &[&str] = &[
            "ar", "da", "de", "el", "en", "es", "fi", "fr", "hu", "it", "nl", "no", "pt", "ro", "ru", "sv", "ta", "tr",
        ];
        if !LANGS.contains(&f.default_language.as_str()) {
            return Err(c.err(
                "features.default_language",
                format!("\"{}\"", f.default_language),
                LANGS.join(", "),
            ));
        }
        let features = FeatureSettings {
            stop_words: f.stop_words,
            stemming: f.stemming,
            default_language: f.default_language,
            detect_language: f.detect_language,
            unigram_weight: c.float("features.unigram_weight", f.unigram_weight, 0.0, 100.0)?,
            bigram_weight: c.float("features.bigram_weight", f.bigram_weight, 0.0, 100.0)?,
            title_boost: c.float("features.title_boost", f.title_boost, 0.0, 100.0)?,
            heading_boost: c.float("features.heading_boost", f.heading_boost, 0.0, 100.0)?,
            boilerplate_weight: c.float("features.boilerplate_weight", f.boilerplate_weight, 0.0, 1.0)?,
            template_learning: f.template_learning,
            template_min_pages: c.uint("features.template_min_pages", f.template_min_pages, 2, 1_000_000)?,
            template_min_fraction: c.float("features.template_min_fraction", f.template_min_fraction, 0.0, 1.0)?,
            template_weight: c.float("features.template_weight", f.template_weight, 0.0, 1.0)?,
            max_text_bytes: c.uint("features.max_text_bytes", f.max_text_bytes, 1024, 64 << 20)?,
        };
        if features.unigram_weight == 0.0 && features.bigram_weight == 0.0 {
            return Err(c.err("features.bigram_weight", 0.0, "> 0 when features.unigram_weight is 0"));
        }

        c.int("simhash.bits", simhash.bits, 64, 64)?;
        let simhash = SimhashSettings {
            k: c.uint("simhash.k", simhash.k, 0, 10)?,
        };

        let index = IndexSettings {
            design: c.choice(
                "index.design",
                &index.design,
                &[
                    ("auto", IndexDesign::Auto),
                    ("t4", IndexDesign::T4),
                    ("t6", IndexDesign::T6),
                    ("t8", IndexDesign::T8),
                    ("t10", IndexDesign::T10),
                    ("t16", IndexDesign::T16),
                    ("t20", IndexDesign::T20),
                ],
            )?,
            expected_size_log2: c.uint("index.expected_size_log2", index.expected_size_log2, 10, 40)?,
            compression: index.compression,
        };
        if index.design != IndexDesign::Auto && simhash.k != 3 {
            return Err(c.err(
                "index.design",
                format!("{:?}", index.design).to_lowercase(),
                "\"auto\" unless simhash.k = 3 (the named designs are for k = 3)",
            ));
        }

        let dedup = DedupSettings {
            policy: c.choice(
                "dedup.policy",
                &dedup.policy,
                &[
                    ("drop", DedupPolicy::Drop),
                    ("deprioritize", DedupPolicy::Deprioritize),
                    ("keep", DedupPolicy::Keep),
                ],
            )?,
            exact_penalty: c.float("dedup.exact_penalty", dedup.exact_penalty, 0.0, 1000.0)?,
            near_penalty: c.float("dedup.near_penalty", dedup.near_penalty, 0.0, 1000.0)?,
            verify: c.choice(
                "dedup.verify",
                &dedup.verify,
                &[
                    ("none", Verify::None),
                    ("minhash", Verify::Minhash),
                    ("shingles", Verify::Shingles),
                ],
            )?,
            verify_threshold: c.float("dedup.verify_threshold", dedup.verify_threshold, 0.0, 1.0)?,
            max_duplicate_chain: c.uint("dedup.max_duplicate_chain", dedup.max_duplicate_chain, 0, 1000)?,
        };

        let frontier = FrontierSettings {
            depth_weight: c.float("frontier.depth_weight", fr.depth_weight, 0.0, 1000.0)?,
            parent_dup_weight: c.float("frontier.parent_dup_weight", fr.parent_dup_weight, 0.0, 1000.0)?,
            host_dup_rate_weight: c.float("frontier.host_dup_rate_weight", fr.host_dup_rate_weight, 0.0, 1000.0)?,
            host_novelty_weight: c.float("frontier.host_novelty_weight", fr.host_novelty_weight, 0.0, 1000.0)?,
            relevance_weight: c.float("frontier.relevance_weight", fr.relevance_weight, 0.0, 1000.0)?,
            inlink_weight: c.float("frontier.inlink_weight", fr.inlink_weight, 0.0, 1000.0)?,
            memory_window: c.uint("frontier.memory_window", fr.memory_window, 16, 10_000_000)?,
            seen_cache_urls: c.uint("frontier.seen_cache_urls", fr.seen_cache_urls, 0, 1_000_000_000)?,
        };

        let focus = FocusSettings {
            enabled: focus.enabled,
            on_topic: c.float("focus.on_topic", focus.on_topic, 0.0, 1.0)?,
            min_relevance: c.float("focus.min_relevance", focus.min_relevance, 0.0, 1.0)?,
            tunnel_distance: c.uint("focus.tunnel_distance", focus.tunnel_distance, 0, 100)?,
            parent_weight: c.float("focus.parent_weight", focus.parent_weight, 0.0, 100.0)?,
            anchor_weight: c.float("focus.anchor_weight", focus.anchor_weight, 0.0, 100.0)?,
            examples: focus.examples.iter().map(PathBuf::from).collect(),
            keywords: focus.keywords,
        };
        if focus.enabled && focus.keywords.is_empty() && focus.examples.is_empty() {
            return Err(c.err(
                "focus.keywords",
                "[]",
                "at least one keyword or example when focus.enabled = true",
            ));
        }

        let mirror = MirrorSettings {
            online: mirror.online,
            min_sample: c.uint("mirror.min_sample", mirror.min_sample, 1, 1_000_000)?,
            min_score: c.float("mirror.min_score", mirror.min_score, 0.0, 1.0)?,
            min_coverage: c.float("mirror.min_coverage", mirror.min_coverage, 0.0, 1.0)?,
            penalty: c.float("mirror.penalty", mirror.penalty, 0.0, 1000.0)?,
        };

        let sketch = SketchSettings {
            shingle_words: c.uint("sketch.shingle_words", sk.shingle_words, 1, 32)?,
            supershingles: c.uint("sketch.supershingles", sk.supershingles, 1, 64)?,
            supershingle_size: c.uint("sketch.supershingle_size", sk.supershingle_size, 1, 64)?,
            supershingle_matches: c.uint("sketch.supershingle_matches", sk.supershingle_matches, 1, 64)?,
            cdc_window: c.uint("sketch.cdc_window", sk.cdc_window, 4, 4096)?,
            cdc_expected_chunk: c.uint("sketch.cdc_expected_chunk", sk.cdc_expected_chunk, 16, 1 << 20)?,
            cdc_max_chunk: c.uint("sketch.cdc_max_chunk", sk.cdc_max_chunk, 64, 1 << 24)?,
            bloom_bits_per_chunk: c.uint("sketch.bloom_bits_per_chunk", sk.bloom_bits_per_chunk, 1, 64)?,
            bloom_threshold: c.float("sketch.bloom_threshold", sk.bloom_threshold, 0.0, 1.0)?,
        };
        if sketch.supershingle_matches > sketch.supershingles {
            return Err(c.err(
                "sketch.supershingle_matches",
                sketch.supershingle_matches,
                format!("<= sketch.supershingles ({})", sketch.supershingles),
            ));
        }
        if !sketch.cdc_expected_chunk.is_power_of_two() {
            return Err(c.err("sketch.cdc_expected_chunk", sketch.cdc_expected_chunk, "a power of two"));
        }
        if sketch.cdc_max_chunk < sketch.cdc_expected_chunk {
            return Err(c.err(
                "sketch.cdc_max_chunk",
                sketch.cdc_max_chunk,
                ">= sketch.cdc_expected_chunk",
            ));
        }

        let output = OutputSettings {
            jsonl: output.jsonl,
            warc: output.warc,
            reports: output.reports,
            store_bodies: output.store_bodies,
        };

        Ok(Settings {
            crawl,
            politeness,
            fetch,
            canon,
            features,
            simhash,
            index,
            dedup,
            frontier,
            focus,
            mirror,
            sketch,
            output,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(text: &str) -> Result<Settings, ConfigError> {
        Settings::from_layers(&[("my.toml".into(), text)], &[])
    }

    /// The defaults with `--set` overrides.
    fn set(overrides: &[&str]) -> Result<Settings, ConfigError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Settings::from_layers(&[], &o)
    }

    #[test]
    fn defaults_load() {
        let s = Settings::default();
        assert_eq!(s.simhash.k, 3);
        assert_eq!(s.politeness.min_delay, Duration::from_secs(1));
        assert_eq!(s.dedup.policy, DedupPolicy::Deprioritize);
        assert!(s.politeness.respect_robots);
        assert!(s.crawl.user_agent_header().starts_with("simcrawl/"));
    }

    #[test]
    fn test_toml_loads_and_turns_delays_off() {
        let s = Settings::test_web(&[]).unwrap();
        assert_eq!(s.politeness.min_delay, Duration::ZERO);
    }

    #[test]
    fn unknown_key_names_file_key_and_allowed() {
        let e = layer("[crawl]\nmax_pagez = 3\n").unwrap_err().to_string();
        assert!(
            e.contains("my.toml") && e.contains("crawl.max_pagez") && e.contains("max_pages"),
            "{e}"
        );
        let e = layer("[crawll]\n").unwrap_err().to_string();
        assert!(e.contains("crawll") && e.contains("politeness"), "{e}");
    }

    #[test]
    fn negative_delay_is_rejected() {
        let e = layer("[politeness]\nmin_delay_ms = -5\n").unwrap_err().to_string();
        assert!(
            e.contains("politeness.min_delay_ms") && e.contains("-5") && e.contains("0..=3600000"),
            "{e}"
        );
    }

    #[test]
    fn k_above_range_is_rejected() {
        let e = layer("[simhash]\nk = 65\n").unwrap_err().to_string();
        assert!(e.contains("simhash.k") && e.contains("0..=10"), "{e}");
        let e = set(&["simhash.k=99"]).unwrap_err().to_string();
        assert!(e.contains("--set") && e.contains("simhash.k"), "{e}");
    }

    #[test]
    fn hostile_input_limits_are_validated() {
        let s = Settings::default();
        assert_eq!(s.dedup.max_duplicate_chain, 5);
        assert_eq!(s.politeness.max_in_flight_per_ip, 4);
        assert_eq!(Settings::test_web(&[]).unwrap().politeness.max_in_flight_per_ip, 32);
        let e = set(&["dedup.max_duplicate_chain=1001"]).unwrap_err().to_string();
        assert!(e.contains("dedup.max_duplicate_chain") && e.contains("0..=1000"), "{e}");
        let e = set(&["politeness.max_in_flight_per_ip=-1"]).unwrap_err().to_string();
        assert!(
            e.contains("politeness.max_in_flight_per_ip") && e.contains("0..=4096"),
            "{e}"
        );
        assert_eq!(
            set(&["dedup.max_duplicate_chain=0"]).unwrap().dedup.max_duplicate_chain,
            0
        );
    }

    #[test]
    fn io_threads_default_to_one_per_four_cores() {
        let auto = Settings::from_layers(&[], &[]).unwrap().crawl;
        assert_eq!(auto.io_threads, 0);
        assert_eq!(
            [1, 2, 3, 4, 8, 9, 64].map(|cores| auto.io_threads(cores)),
            [1, 1, 1, 1, 2, 2, 16]
        );
        assert_eq!(set(&["crawl.io_threads=3"]).unwrap().crawl.io_threads(2), 3);
        let e = set(&["crawl.io_threads=257"]).unwrap_err().to_string();
        assert!(e.contains("crawl.io_threads") && e.contains("0..=256"), "{e}");
    }

    #[test]
    fn index_designs_are_named_or_chosen_by_size() {
        use crate::index::LiveIndex;
        let tables = |overrides: &[&str]| {
            let s = set(overrides).unwrap();
            LiveIndex::from_settings(&s.index, s.simhash.k).design().tables()
        };
        // The default expected size (2^24) gets the two-halves 6 tables.
        assert_eq!(tables(&[]), 6);
        assert_eq!(tables(&["index.expected_size_log2=20"]), 4);
        for (name, t) in [("t4", 4), ("t6", 6), ("t8", 8), ("t10", 10), ("t16", 16), ("t20", 20)] {
            assert_eq!(tables(&[&format!("index.design=\"{name}\"")]), t, "{name}");
        }
        let e = set(&["index.design=\"t7\""]).unwrap_err().to_string();
        assert!(e.contains("index.design") && e.contains("t6"), "{e}");
    }

    #[test]
    fn wrong_type_is_rejected() {
        let e = layer("[crawl]\nconcurrency = \"many\"\n").unwrap_err().to_string();
        assert!(
            e.contains("crawl.concurrency") && e.contains("an integer") && e.contains("a string"),
            "{e}"
        );
    }

    #[test]
    fn bad_choice_lists_options() {
        let e = layer("[dedup]\npolicy = \"delete\"\n").unwrap_err().to_string();
        assert!(e.contains("\"drop\" | \"deprioritize\" | \"keep\""), "{e}");
    }

    #[test]
    fn unreadable_file_is_an_error() {
        let e = Settings::load(Some(Path::new("/nonexistent/simcrawl.toml")), &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }));
        assert!(e.to_string().contains("/nonexistent/simcrawl.toml"));
    }

    #[test]
    fn invalid_toml_names_file() {
        let e = layer("[crawl\n").unwrap_err().to_string();
        assert!(e.starts_with("my.toml: invalid TOML"), "{e}");
    }

    #[test]
    fn overrides_accept_bare_strings_and_ints_for_floats() {
        let s = Settings::from_layers(
            &[],
            &["crawl.scope=same-host".into(), "politeness.delay_factor=3".into()],
        )
        .unwrap();
        assert_eq!(s.crawl.scope, Scope::SameHost);
        assert_eq!(s.politeness.delay_factor, 3.0);
        assert!(matches!(
            Settings::from_layers(&[], &["nodot=1".into()]),
            Err(ConfigError::BadOverride { .. })
        ));
    }

    #[test]
    fn max_delay_below_min_is_rejected() {
        let e = layer("[politeness]\nmin_delay_ms = 5000\nmax_delay_ms = 100\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_delay_ms"), "{e}");
    }

    #[test]
    fn every_default_key_is_documented() {
        // Each key line in default.toml is preceded by a comment line (directly
        // or as part of a documented group).
        let mut prev_comment = false;
        for line in DEFAULT_TOML.lines() {
            let t = line.trim();
            if t.starts_with('#') {
                prev_comment = true;
            } else if t.is_empty() || t.starts_with('[') {
                prev_comment = false;
            } else {
                assert!(prev_comment, "undocumented key line: {t}");
            }
        }
    }
}
