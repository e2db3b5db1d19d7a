//! Scope and trap rules of the frontier: which discovered URLs may enter the
//! queue at all. Stateless checks live here ([`ScopeRules::check`]); the two
//! counting rules (pages per host, URLs per digit pattern) are applied by the
//! frontier with its counters, using [`digit_pattern`]. A host's `[[hosts]]`
//! rule replaces `max_depth` and adds its `allow` and `deny` patterns for
//! its URLs ([`ScopeRules::with_host_rules`]).

use std::sync::Arc;

use hashbrown::HashSet;
use url::Url;

use crate::config::{CrawlSettings, HostRule, HostRuleCache, HostRules, Scope};
use crate::host::{host_key, host_key_of_serialized, registrable_domain};

/// Why a URL is outside the crawl's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeReason {
    /// Not http or https.
    Scheme,
    /// `scope = "same-host"` and the host is not a seed's.
    OtherHost,
    /// `scope = "same-domain"` and the registrable domain is not a seed's.
    OtherDomain,
    /// `scope = "surt"` and no prefix matches the URL's SURT form.
    Surt,
    /// `allow` is non-empty and no pattern matches.
    NotAllowed,
    /// A `deny` pattern matches.
    Denied,
    /// Deeper than `max_depth`.
    TooDeep,
    /// The host already has `max_pages_per_host` URLs.
    HostFull,
}

/// Why a URL looks like a crawler trap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrapReason {
    /// Longer than `max_url_length` bytes.
    TooLong,
    /// A path segment occurs more than `max_path_repetition` times.
    PathRepetition {
        /// The repeated segment.
        segment: String,
        /// How often it occurs.
        count: usize,
    },
    /// `max_urls_per_pattern` pages of the host with this digit-free
    /// pattern were duplicates already (calendars, endless pagination).
    PatternCap {
        /// The pattern (digit runs replaced by `#`).
        pattern: String,
    },
}

impl std::fmt::Display for ScopeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScopeReason::Scheme => "not http(s)",
            ScopeReason::OtherHost => "host is not a seed host (scope = same-host)",
            ScopeReason::OtherDomain => "domain is not a seed domain (scope = same-domain)",
            ScopeReason::Surt => "no surt_prefixes match (scope = surt)",
            ScopeReason::NotAllowed => "matches no allow pattern",
            ScopeReason::Denied => "matches a deny pattern",
            ScopeReason::TooDeep => "deeper than max_depth",
            ScopeReason::HostFull => "host reached max_pages_per_host",
        })
    }
}

impl std::fmt::Display for TrapReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrapReason::TooLong => f.write_str("longer than max_url_length"),
            TrapReason::PathRepetition { segment, count } => {
                write!(
                    f,
                    "path segment `{segment}` repeated {count} times (max_path_repetition)"
                )
            }
            TrapReason::PatternCap { pattern } => {
                write!(f, "URLs like {pattern} keep serving duplicates (max_urls_per_pattern)")
            }
        }
    }
}

/// A rejected URL: out of scope or a trap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Outside the configured scope.
    OutOfScope(ScopeReason),
    /// A likely crawler trap.
    Trap(TrapReason),
}

/// The SURT form of a URL (Heritrix style): `http://(test,mirror-a,)/docs/x?q`,
/// with `:port` inside the parentheses when not the default. IP hosts are not reversed.
pub fn surt(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    let mut s = String::with_capacity(url.as_str().len() + 4);
    s.push_str(url.scheme());
    s.push_str("://(");
    if url.host().is_some_and(|h| !matches!(h, url::Host::Domain(_))) {
        s.push_str(host);
        s.push(',');
    } else {
        for label in host.rsplit('.') {
            s.push_str(label);
            s.push(',');
        }
    }
    if let Some(p) = url.port() {
        s.push(':');
        s.push_str(&p.to_string());
    }
    s.push(')');
    s.push_str(url.path());
    if let Some(q) = url.query() {
        s.push('?');
        s.push_str(q);
    }
    s
}

/// The most repeated non-empty path segment and its count.
pub fn path_repetition(path: &str) -> Option<(&str, usize)> {
    // Every out-link is checked: the segments of a usual path fit on the
    // stack.
    const ON_STACK: usize = 24;
    let mut stack = [""; ON_STACK];
    let mut heap = Vec::new();
    let mut n = 0;
    for s in path.split('/').filter(|s| !s.is_empty()) {
        if n < ON_STACK {
            stack[n] = s;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(s);
        }
        n += 1;
    }
    let segs: &[&str] = if n <= ON_STACK { &stack[..n] } else { &heap };
    let mut best: Option<(&str, usize)> = None;
    for (i, s) in segs.iter().enumerate() {
        if segs[..i].contains(s) {
            continue;
        }
        let n = segs[i..].iter().filter(|t| *t == s).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((s, n));
        }
    }
    best
}

/// Host, path and query with every run of ASCII digits replaced by `#`, or
/// `None` when the path and query contain no digit (not a pattern worth counting).
pub fn digit_pattern(url: &Url) -> Option<String> {
    let path = url.path();
    let query = url.query().unwrap_or("");
    if !path.bytes().chain(query.bytes()).any(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut out = host_key(url);
    let mut push = |text: &str| {
        let mut prev_digit = false;
        for c in text.chars() {
            if c.is_ascii_digit() {
                if !prev_digit {
                    out.push('#');
                }
                prev_digit = true;
            } else {
                out.push(c);
                prev_digit = false;
            }
        }
    };
    push(path);
    if !query.is_empty() {
        push("?");
        push(query);
    }
    Some(out)
}

/// The stateless scope and trap rules, built once from `[crawl]` and the seeds.
#[derive(Debug, Clone)]
pub struct ScopeRules {
    scope: Scope,
    seed_hosts: HashSet<String>,
    seed_domains: HashSet<String>,
    surt_prefixes: Vec<String>,
    allow: Vec<regex::Regex>,
    deny: Vec<regex::Regex>,
    max_depth: u32,
    max_url_length: usize,
    max_path_repetition: usize,
    /// The `[[hosts]]` rules, each host's resolved once.
    host_rules: Arc<HostRuleCache>,
}

impl ScopeRules {
    /// Rules for a crawl from `seeds` (their hosts and domains define
    /// `same-host` and `same-domain`).
    pub fn new(crawl: &CrawlSettings, seeds: &[Url]) -> Self {
        let seed_hosts: HashSet<String> = seeds.iter().filter_map(|u| u.host_str().map(str::to_string)).collect();
        let seed_domains = seed_hosts.iter().map(|h| registrable_domain(h).to_string()).collect();
        ScopeRules {
            scope: crawl.scope,
            seed_hosts,
            seed_domains,
            surt_prefixes: crawl.surt_prefixes.iter().map(|p| p.to_ascii_lowercase()).collect(),
            allow: crawl.allow.clone(),
            deny: crawl.deny.clone(),
            max_depth: crawl.max_depth,
            max_url_length: crawl.max_url_length,
            max_path_repetition: crawl.max_path_repetition,
            host_rules: Arc::default(),
        }
    }

    /// Apply the `[[hosts]]` rules' scope keys (`max_depth`, `allow`, `deny`).
    pub fn with_host_rules(mut self, rules: &HostRules) -> Self {
        self.host_rules = Arc::new(HostRuleCache::new(rules.clone()));
        self
    }

    /// The `[[hosts]]` rule of a URL's host, if any.
    fn host_rule(&self, url: &Url) -> Option<&HostRule> {
        if self.host_rules.rules().is_empty() {
            return None;
        }
        self.host_rules.rule(host_key_of_serialized(url.as_str())?)
    }

    /// Check a canonical URL found at `depth` against every stateless rule,
    /// cheapest first.
    pub fn check(&self, url: &Url, depth: u32) -> Result<(), Rejection> {
        use Rejection::{OutOfScope, Trap};
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OutOfScope(ScopeReason::Scheme));
        }
        let rule = self.host_rule(url);
        if depth > rule.and_then(|r| r.max_depth).unwrap_or(self.max_depth) {
            return Err(OutOfScope(ScopeReason::TooDeep));
        }
        let s = url.as_str();
        if s.len() > self.max_url_length {
            return Err(Trap(TrapReason::TooLong));
        }
        let host = url.host_str().unwrap_or("");
        match self.scope {
            Scope::Any => {}
            Scope::SameHost if !self.seed_hosts.contains(host) => return Err(OutOfScope(ScopeReason::OtherHost)),
            Scope::SameDomain if !self.seed_domains.contains(registrable_domain(host)) => {
                return Err(OutOfScope(ScopeReason::OtherDomain))
            }
            Scope::Surt => {
                let sv = surt(url);
                if !self.surt_prefixes.iter().any(|p| sv.starts_with(p.as_str())) {
                    return Err(OutOfScope(ScopeReason::Surt));
                }
            }
            _ => {}
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|r| r.is_match(s)) {
            return Err(OutOfScope(ScopeReason::NotAllowed));
        }
        if self.deny.iter().any(|r| r.is_match(s)) {
            return Err(OutOfScope(ScopeReason::Denied));
        }
        if let Some(rule) = rule {
            if !rule.allow.is_empty() && !rule.allow.iter().any(|r| r.is_match(s)) {
                return Err(OutOfScope(ScopeReason::NotAllowed));
            }
            if rule.deny.iter().any(|r| r.is_match(s)) {
                return Err(OutOfScope(ScopeReason::Denied));
            }
        }
        if let Some((seg, n)) = path_repetition(url.path()) {
            if n > self.max_path_repetition {
                return Err(Trap(TrapReason::PathRepetition {
                    segment: seg.to_string(),
                    count: n,
                }));
            }
        }
        Ok(())
    }
}
