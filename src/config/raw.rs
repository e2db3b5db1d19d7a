//! Stage 1 of loading: raw values, exactly as in TOML. The merged table is
//! deserialized into these structs (serde, `deny_unknown_fields`).

use serde::Deserialize;

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
        headers: std::collections::BTreeMap<String, String>, accept_language: String, proxy: String,
        cookies: bool,
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
    RawIndex { design: String, expected_size_log2: i64 }
);
raw_section!(
    /// `[dedup]` as written.
    RawDedup {
        policy: String, exact_penalty: f64, near_penalty: f64, verify: String, verify_threshold: f64,
        short_page_threshold: f64, short_page_shingles: i64, verify_outside_templates: bool,
        max_duplicate_chain: i64,
    }
);
raw_section!(
    /// `[frontier]` as written.
    RawFrontier {
        depth_weight: f64, parent_dup_weight: f64, host_dup_rate_weight: f64,
        host_novelty_weight: f64, relevance_weight: f64, inlink_weight: f64, sitemap_weight: f64,
        host_relevance_weight: f64, url_relevance_weight: f64, memory_window: i64, memory_budget: i64,
        seen_cache_urls: i64,
    }
);
raw_section!(
    /// `[focus]` as written.
    RawFocus {
        enabled: bool, keywords: Vec<String>, examples: Vec<String>, on_topic: f64, on_topic_quantile: f64,
        host_memory: i64, min_relevance: f64, length_slope: f64, phrases: bool, coordination: f64,
        tunnel_distance: i64, parent_weight: f64, anchor_weight: f64, hold_margin: f64, hold_ms: i64,
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
    RawOutput { warc: bool, warc_max_bytes: i64, reports: bool }
);
raw_section!(
    /// `[sitemaps]` as written.
    RawSitemaps {
        enabled: bool, root_sitemap: bool, max_files_per_host: i64, max_urls_per_file: i64,
        max_file_bytes: i64, max_nesting: i64, url_depth: i64,
    }
);
raw_section!(
    /// `[store]` as written.
    RawStore { backend: String, engine: String, cache_mb: i64, crawl_name: String, redis_nodes: Vec<String>, lease_ms: i64 }
);
raw_section!(
    /// `[recrawl]` as written.
    RawRecrawl {
        enabled: bool, conditional: bool, initial_interval_secs: i64, min_interval_secs: i64,
        max_interval_secs: i64, inc_rate: f64, dec_rate: f64,
    }
);
/// One `[[hosts]]` entry as written (keys and types already checked in
/// layering); an absent key keeps the global setting.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct RawHostRule {
    pub pattern: String,
    pub min_delay_ms: Option<i64>,
    pub max_delay_ms: Option<i64>,
    pub delay_factor: Option<f64>,
    pub max_in_flight: Option<i64>,
    pub max_pages: Option<i64>,
    pub max_depth: Option<i64>,
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    pub accept_language: Option<String>,
    pub proxy: Option<String>,
    pub cookies: Option<bool>,
}

/// The whole configuration as written (after merging with the defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct RawConfig {
    pub crawl: RawCrawl,
    pub politeness: RawPoliteness,
    pub fetch: RawFetch,
    pub canon: RawCanon,
    pub features: RawFeatures,
    pub simhash: RawSimhash,
    pub index: RawIndex,
    pub dedup: RawDedup,
    pub frontier: RawFrontier,
    pub focus: RawFocus,
    pub mirror: RawMirror,
    pub sketch: RawSketch,
    pub output: RawOutput,
    pub sitemaps: RawSitemaps,
    pub store: RawStore,
    pub recrawl: RawRecrawl,
    /// `[[hosts]]`: per-host rules, in file order (none by default).
    #[serde(default)]
    pub hosts: Vec<RawHostRule>,
}
