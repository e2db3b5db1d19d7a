//! Stage 2 of loading: every raw value is range-checked and turned into
//! its typed setting, one function per section, in section order (the
//! first error is reported). Errors name the key, where its value came
//! from and what is allowed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::*;

/// Range checks with errors that name the key, its origin and what is allowed.
struct Check<'a> {
    origins: &'a HashMap<String, String>,
}

impl Check<'_> {
    fn err(&self, key: &str, value: impl std::fmt::Display, allowed: impl Into<String>) -> ConfigError {
        // A `[[hosts]]` list comes from one layer, recorded under `hosts`.
        let lookup = if key.starts_with("hosts #") { super::HOSTS } else { key };
        ConfigError::Invalid {
            origin: self
                .origins
                .get(lookup)
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
            sitemaps,
            store,
            hosts,
            recrawl,
        } = self;

        let crawl = crawl_settings(&c, crawl)?;
        let politeness = politeness_settings(&c, p)?;
        let fetch = fetch_settings(&c, fetch)?;
        let canon = canon_settings(&c, canon)?;
        let features = features_settings(&c, f)?;
        let simhash = simhash_settings(&c, simhash)?;
        let index = index_settings(&c, index, simhash.k)?;
        let dedup = dedup_settings(&c, dedup)?;
        let frontier = frontier_settings(&c, fr)?;
        let focus = focus_settings(&c, focus)?;
        let mirror = mirror_settings(&c, mirror)?;
        let sketch = sketch_settings(&c, sk)?;
        let output = output_settings(&c, output)?;
        let sitemaps = sitemap_settings(&c, sitemaps)?;
        let hosts = hosts_settings(&c, hosts)?;
        let store = store_settings(&c, store)?;

        let recrawl = recrawl_settings(&c, recrawl)?;

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
            sitemaps,
            store,
            hosts,
            recrawl,
            effective: super::Effective::default(),
        })
    }
}

/// The `[crawl]` section, checked and typed.
fn crawl_settings(c: &Check, crawl: RawCrawl) -> Result<CrawlSettings, ConfigError> {
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
    Ok(crawl)
}

/// The `[politeness]` section, checked and typed.
fn politeness_settings(c: &Check, p: RawPoliteness) -> Result<PolitenessSettings, ConfigError> {
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
    Ok(politeness)
}

/// The `[fetch]` section, checked and typed.
fn fetch_settings(c: &Check, fetch: RawFetch) -> Result<FetchSettings, ConfigError> {
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
        headers: request_headers(c, &fetch.headers, &fetch.accept_language)?,
        proxy: proxy_url(c, &fetch.proxy)?,
        cookies: fetch.cookies,
    };
    Ok(fetch)
}

/// Headers a crawl may send to every host: not credentials, and not the
/// ones the crawler sets itself.
const FORBIDDEN_HEADERS: &[&str] = &["authorization", "cookie", "proxy-authorization", "host", "user-agent"];

/// Headers a `[[hosts]]` rule may not set: the ones the crawler sets
/// itself, and the proxy's credentials (they go with `proxy`). A rule's
/// headers go to its hosts only, so Authorization and Cookie are allowed.
const FORBIDDEN_HOST_HEADERS: &[&str] = &["proxy-authorization", "host", "user-agent"];

/// `fetch.headers` and `fetch.accept_language`, as (lower-cased name, value).
fn request_headers(
    c: &Check,
    headers: &std::collections::BTreeMap<String, String>,
    accept_language: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    checked_headers(c, "fetch.", FORBIDDEN_HEADERS, headers, accept_language)
}

/// Headers and Accept-Language under `prefix` (`fetch.` or `hosts #N.`),
/// none of them in `forbidden`, as (lower-cased name, value).
fn checked_headers(
    c: &Check,
    prefix: &str,
    forbidden: &[&str],
    headers: &std::collections::BTreeMap<String, String>,
    accept_language: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let key_headers = format!("{prefix}headers");
    let key_lang = format!("{prefix}accept_language");
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let value_ok = |s: &str| s.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    let mut out = Vec::with_capacity(headers.len() + 1);
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if !token(name) {
            return Err(c.err(&key_headers, format!("\"{name}\""), "header names are HTTP tokens"));
        }
        if forbidden.contains(&lower.as_str()) {
            return Err(c.err(
                &key_headers,
                format!("\"{name}\""),
                format!("any header but {}", forbidden.join(", ")),
            ));
        }
        if !value_ok(value) {
            return Err(c.err(
                &key_headers,
                format!("{name} = {value:?}"),
                "header values without control characters",
            ));
        }
        out.push((lower, value.clone()));
    }
    let lang = accept_language.trim();
    if !lang.is_empty() {
        if !value_ok(lang) {
            return Err(c.err(&key_lang, format!("{lang:?}"), "a header value"));
        }
        out.retain(|(n, _)| n != "accept-language");
        out.push(("accept-language".into(), lang.to_string()));
    }
    Ok(out)
}

/// `fetch.proxy`: empty, or an http(s) or SOCKS5 URL.
fn proxy_url(c: &Check, proxy: &str) -> Result<Option<url::Url>, ConfigError> {
    checked_proxy(c, "fetch.proxy", proxy)
}

/// A proxy setting under `key`: empty, or an http(s) or SOCKS5 URL.
fn checked_proxy(c: &Check, key: &str, proxy: &str) -> Result<Option<url::Url>, ConfigError> {
    let proxy = proxy.trim();
    if proxy.is_empty() {
        return Ok(None);
    }
    match url::Url::parse(proxy) {
        Ok(u) if matches!(u.scheme(), "http" | "https" | "socks5" | "socks5h") && u.host_str().is_some() => Ok(Some(u)),
        _ => Err(c.err(
            key,
            format!("\"{proxy}\""),
            "an http://, https://, socks5:// or socks5h:// URL with a host",
        )),
    }
}

/// The `[canon]` section, checked and typed.
fn canon_settings(c: &Check, canon: RawCanon) -> Result<CanonSettings, ConfigError> {
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
    Ok(canon)
}

/// The `[features]` section, checked and typed.
fn features_settings(c: &Check, f: RawFeatures) -> Result<FeatureSettings, ConfigError> {
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
    Ok(features)
}

/// The `[simhash]` section, checked and typed.
fn simhash_settings(c: &Check, simhash: RawSimhash) -> Result<SimhashSettings, ConfigError> {
    c.int("simhash.bits", simhash.bits, 64, 64)?;
    let simhash = SimhashSettings {
        k: c.uint("simhash.k", simhash.k, 0, 10)?,
    };
    Ok(simhash)
}

/// The `[index]` section, checked and typed.
fn index_settings(c: &Check, index: RawIndex, k: u32) -> Result<IndexSettings, ConfigError> {
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
    };
    if index.design != IndexDesign::Auto && k != 3 {
        return Err(c.err(
            "index.design",
            format!("{:?}", index.design).to_lowercase(),
            "\"auto\" unless simhash.k = 3 (the named designs are for k = 3)",
        ));
    }
    Ok(index)
}

/// The `[dedup]` section, checked and typed.
fn dedup_settings(c: &Check, dedup: RawDedup) -> Result<DedupSettings, ConfigError> {
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
        short_page_threshold: c.float("dedup.short_page_threshold", dedup.short_page_threshold, 0.0, 1.0)?,
        short_page_shingles: c.uint("dedup.short_page_shingles", dedup.short_page_shingles, 0, 1_000_000)?,
        verify_outside_templates: dedup.verify_outside_templates,
        max_duplicate_chain: c.uint("dedup.max_duplicate_chain", dedup.max_duplicate_chain, 0, 1000)?,
    };
    Ok(dedup)
}

/// The `[frontier]` section, checked and typed.
fn frontier_settings(c: &Check, fr: RawFrontier) -> Result<FrontierSettings, ConfigError> {
    let frontier = FrontierSettings {
        depth_weight: c.float("frontier.depth_weight", fr.depth_weight, 0.0, 1000.0)?,
        parent_dup_weight: c.float("frontier.parent_dup_weight", fr.parent_dup_weight, 0.0, 1000.0)?,
        host_dup_rate_weight: c.float("frontier.host_dup_rate_weight", fr.host_dup_rate_weight, 0.0, 1000.0)?,
        host_novelty_weight: c.float("frontier.host_novelty_weight", fr.host_novelty_weight, 0.0, 1000.0)?,
        relevance_weight: c.float("frontier.relevance_weight", fr.relevance_weight, 0.0, 1000.0)?,
        inlink_weight: c.float("frontier.inlink_weight", fr.inlink_weight, 0.0, 1000.0)?,
        host_relevance_weight: c.float("frontier.host_relevance_weight", fr.host_relevance_weight, 0.0, 1000.0)?,
        url_relevance_weight: c.float("frontier.url_relevance_weight", fr.url_relevance_weight, 0.0, 1000.0)?,
        sitemap_weight: c.float("frontier.sitemap_weight", fr.sitemap_weight, 0.0, 1000.0)?,
        memory_window: c.uint("frontier.memory_window", fr.memory_window, 16, 10_000_000)?,
        memory_budget: c.uint("frontier.memory_budget", fr.memory_budget, 16, 1_000_000_000)?,
        seen_cache_urls: c.uint("frontier.seen_cache_urls", fr.seen_cache_urls, 0, 1_000_000_000)?,
    };
    Ok(frontier)
}

/// The `[focus]` section, checked and typed.
fn focus_settings(c: &Check, focus: RawFocus) -> Result<FocusSettings, ConfigError> {
    let focus = FocusSettings {
        enabled: focus.enabled,
        on_topic: c.float("focus.on_topic", focus.on_topic, 0.0, 1.0)?,
        on_topic_quantile: c.float("focus.on_topic_quantile", focus.on_topic_quantile, 0.0, 1.0)?,
        host_memory: c.uint("focus.host_memory", focus.host_memory, 0, 1_000_000)?,
        min_relevance: c.float("focus.min_relevance", focus.min_relevance, 0.0, 1.0)?,
        length_slope: c.float("focus.length_slope", focus.length_slope, 0.0, 1.0)?,
        phrases: focus.phrases,
        coordination: c.float("focus.coordination", focus.coordination, 0.0, 4.0)?,
        tunnel_distance: c.uint("focus.tunnel_distance", focus.tunnel_distance, 0, 100)?,
        parent_weight: c.float("focus.parent_weight", focus.parent_weight, 0.0, 100.0)?,
        anchor_weight: c.float("focus.anchor_weight", focus.anchor_weight, 0.0, 100.0)?,
        hold_margin: c.float("focus.hold_margin", focus.hold_margin, 0.0, 1000.0)?,
        hold: c.ms("focus.hold_ms", focus.hold_ms, 0, 60_000)?,
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
    Ok(focus)
}

/// The `[mirror]` section, checked and typed.
fn mirror_settings(c: &Check, mirror: RawMirror) -> Result<MirrorSettings, ConfigError> {
    let mirror = MirrorSettings {
        online: mirror.online,
        min_sample: c.uint("mirror.min_sample", mirror.min_sample, 1, 1_000_000)?,
        min_score: c.float("mirror.min_score", mirror.min_score, 0.0, 1.0)?,
        min_coverage: c.float("mirror.min_coverage", mirror.min_coverage, 0.0, 1.0)?,
        penalty: c.float("mirror.penalty", mirror.penalty, 0.0, 1000.0)?,
    };
    Ok(mirror)
}

/// The `[sketch]` section, checked and typed.
fn sketch_settings(c: &Check, sk: RawSketch) -> Result<SketchSettings, ConfigError> {
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
    Ok(sketch)
}

/// The `[sitemaps]` section, checked and typed.
fn sitemap_settings(c: &Check, s: RawSitemaps) -> Result<SitemapSettings, ConfigError> {
    Ok(SitemapSettings {
        enabled: s.enabled,
        root_sitemap: s.root_sitemap,
        max_files_per_host: c.uint("sitemaps.max_files_per_host", s.max_files_per_host, 1, 100_000)?,
        max_urls_per_file: c.uint("sitemaps.max_urls_per_file", s.max_urls_per_file, 1, 50_000)?,
        max_file_bytes: c.uint("sitemaps.max_file_bytes", s.max_file_bytes, 1024, 52_428_800)?,
        max_nesting: c.uint("sitemaps.max_nesting", s.max_nesting, 0, 10)?,
        url_depth: c.uint("sitemaps.url_depth", s.url_depth, 0, 1000)?,
    })
}

/// The `[output]` section, checked and typed.
fn output_settings(c: &Check, output: RawOutput) -> Result<OutputSettings, ConfigError> {
    Ok(OutputSettings {
        warc: output.warc,
        warc_max_bytes: c.uint("output.warc_max_bytes", output.warc_max_bytes, 1 << 20, 1 << 40)?,
        reports: output.reports,
    })
}

/// The `[store]` section, checked and typed.
fn store_settings(c: &Check, store: RawStore) -> Result<StoreSettings, ConfigError> {
    let backend = c.choice(
        "store.backend",
        &store.backend,
        &[("disk", StoreBackend::Disk), ("redis", StoreBackend::Redis)],
    )?;
    let engine = c.choice(
        "store.engine",
        &store.engine,
        &[
            ("fjall", crate::store::Engine::Fjall),
            ("sled", crate::store::Engine::Sled),
        ],
    )?;
    let name_ok = store.crawl_name.len() <= 100
        && store
            .crawl_name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'));
    if !name_ok {
        return Err(c.err(
            "store.crawl_name",
            format!("{:?}", store.crawl_name),
            "at most 100 characters of A-Z a-z 0-9 - _ . (\"\": the crawl directory's name)",
        ));
    }
    if store.redis_nodes.is_empty() || store.redis_nodes.len() > 64 {
        return Err(c.err(
            "store.redis_nodes",
            format!("{} nodes", store.redis_nodes.len()),
            "1..=64 nodes, each \"host:port\"",
        ));
    }
    for node in &store.redis_nodes {
        let ok = node.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && !host.contains(['/', '@', ' ']) && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !ok {
            return Err(c.err(
                "store.redis_nodes",
                format!("{node:?}"),
                "\"host:port\" (port 1..=65535)",
            ));
        }
    }
    Ok(StoreSettings {
        backend,
        engine,
        cache_bytes: c.uint::<u64>("store.cache_mb", store.cache_mb, 4, 65_536)? << 20,
        crawl_name: store.crawl_name,
        redis_nodes: store.redis_nodes,
        lease: c.ms("store.lease_ms", store.lease_ms, 1_000, 600_000)?,
    })
}

/// The `[[hosts]]` rules, checked and typed, in file order. Errors name
/// the rule as `hosts #N` (N from 1) and the key.
fn hosts_settings(c: &Check, raw: Vec<RawHostRule>) -> Result<HostRules, ConfigError> {
    let mut rules = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let at = format!("hosts #{}.", i + 1);
        let key = |k: &str| format!("{at}{k}");
        let pattern = HostPattern::parse(&r.pattern)
            .map_err(|allowed| c.err(&key("pattern"), format!("{:?}", r.pattern), allowed))?;
        let ms = |k: &str, v: Option<i64>| v.map(|v| c.ms(&key(k), v, 0, 3_600_000)).transpose();
        let min_delay = ms("min_delay_ms", r.min_delay_ms)?;
        let max_delay = ms("max_delay_ms", r.max_delay_ms)?;
        if let (Some(lo), Some(hi)) = (min_delay, max_delay) {
            if hi < lo {
                return Err(c.err(
                    &key("max_delay_ms"),
                    hi.as_millis(),
                    format!(">= its min_delay_ms ({})", lo.as_millis()),
                ));
            }
        }
        let headers = checked_headers(
            c,
            &at,
            FORBIDDEN_HOST_HEADERS,
            &r.headers.unwrap_or_default(),
            r.accept_language.as_deref().unwrap_or(""),
        )?;
        let proxy = match &r.proxy {
            None => None,
            Some(p) => Some(checked_proxy(c, &key("proxy"), p)?),
        };
        let rule = HostRule {
            pattern,
            min_delay,
            max_delay,
            delay_factor: r
                .delay_factor
                .map(|f| c.float(&key("delay_factor"), f, 0.0, 100.0))
                .transpose()?,
            max_in_flight: r
                .max_in_flight
                .map(|n| c.uint(&key("max_in_flight"), n, 1, 64))
                .transpose()?,
            max_pages: r
                .max_pages
                .map(|n| c.uint(&key("max_pages"), n, 0, i64::MAX))
                .transpose()?,
            max_depth: r.max_depth.map(|n| c.uint(&key("max_depth"), n, 0, 1000)).transpose()?,
            allow: c.regexes(&key("allow"), &r.allow.unwrap_or_default())?,
            deny: c.regexes(&key("deny"), &r.deny.unwrap_or_default())?,
            headers,
            proxy,
            cookies: r.cookies,
        };
        rules.push(rule);
    }
    Ok(HostRules::new(rules))
}

/// The `[recrawl]` section, checked and typed: intervals of one second to
/// ten years, `min <= initial <= max`, rates in 0..=1 (Nutch's
/// AdaptiveFetchSchedule warns that rates above about 0.4 make the
/// interval swing with little relation to the page's changes).
fn recrawl_settings(c: &Check, r: RawRecrawl) -> Result<RecrawlSettings, ConfigError> {
    const TEN_YEARS: i64 = 10 * 366 * 86_400;
    let min = c.uint::<u64>("recrawl.min_interval_secs", r.min_interval_secs, 1, TEN_YEARS)?;
    let max = c.uint::<u64>("recrawl.max_interval_secs", r.max_interval_secs, 1, TEN_YEARS)?;
    if max < min {
        return Err(c.err(
            "recrawl.max_interval_secs",
            max,
            format!("at least recrawl.min_interval_secs ({min})"),
        ));
    }
    let initial = c.uint::<u64>(
        "recrawl.initial_interval_secs",
        r.initial_interval_secs,
        min as i64,
        max as i64,
    )?;
    Ok(RecrawlSettings {
        enabled: r.enabled,
        conditional: r.conditional,
        initial_interval_secs: initial,
        min_interval_secs: min,
        max_interval_secs: max,
        inc_rate: c.float("recrawl.inc_rate", r.inc_rate, 0.0, 1.0)?,
        dec_rate: c.float("recrawl.dec_rate", r.dec_rate, 0.0, 0.99)?,
    })
}
