//! Per-host rules (`[[hosts]]`): which hosts a rule's pattern matches, the
//! rules in file order (the first match wins), the per-host politeness
//! limits a rule gives, and a cache of each host's rule. The rules are
//! checked in layering ([`check_layer`]: keys and TOML types) and typed in
//! `validate.rs`.
//!
//! A pattern is matched against a [host key](crate::host::host_key)
//! (`host`, or `host:port` for a port that is not the scheme's default):
//!
//! - `docs.example.org` — that host on any port; `docs.example.org:8080` —
//!   only on port 8080 (a default port is not part of a host key, so
//!   `:80` and `:443` are rejected);
//! - `*.example.org` — every subdomain of `example.org` at any depth, not
//!   `example.org` itself (as in `[fetch] resolve`); with `:port`, only on
//!   that port;
//! - `(org,example,` — a SURT host prefix: the host key written as SURT
//!   (`(org,example,docs,)`, `(org,example,docs,:8080)`; IP addresses not
//!   reversed) starts with it. `(org,example,` matches `example.org` and
//!   all its subdomains.
//!
//! Names are compared in the form the `url` crate gives hosts: lower case,
//! IDN labels in punycode (a pattern `Bücher.Example` is stored as
//! `xn--bcher-kva.example`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use toml::Value;

use super::{ConfigError, PolitenessSettings};

/// What one `[[hosts]]` pattern matches (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One host name or address, on any port or on one port.
    Exact {
        /// Lower case, punycode; an IPv6 address in brackets.
        host: String,
        /// Only this (non-default) port.
        port: Option<u16>,
    },
    /// Every subdomain of `suffix` (not `suffix` itself).
    Suffix {
        /// Lower case, punycode, without the leading `*.`.
        suffix: String,
        /// Only this (non-default) port.
        port: Option<u16>,
    },
    /// Host keys whose SURT form starts with this prefix.
    Surt(String),
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let port = |p: &Option<u16>| p.map_or(String::new(), |p| format!(":{p}"));
        match self {
            HostPattern::Exact { host, port: p } => write!(f, "{host}{}", port(p)),
            HostPattern::Suffix { suffix, port: p } => write!(f, "*.{suffix}{}", port(p)),
            HostPattern::Surt(prefix) => f.write_str(prefix),
        }
    }
}

/// A host name or address as the `url` crate writes it, or `None`.
fn normalize_host(s: &str) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    match url::Host::parse(s).ok()? {
        url::Host::Domain(d) => Some(d),
        url::Host::Ipv4(ip) => Some(ip.to_string()),
        url::Host::Ipv6(ip) => Some(format!("[{ip}]")),
    }
}

/// `host` and `port` of `host[:port]` (an IPv6 address in brackets).
fn split_port(s: &str) -> (&str, Option<&str>) {
    if s.starts_with('[') {
        return match s.find(']') {
            Some(end) => {
                let (h, rest) = s.split_at(end + 1);
                (h, rest.strip_prefix(':'))
            }
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    }
}

impl HostPattern {
    /// Parse a pattern as written in `pattern = "…"`. The error says what
    /// is allowed.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        const FORMS: &str =
            "\"host\", \"host:port\", \"*.suffix\", \"*.suffix:port\" or a SURT host prefix like \"(org,example,\"";
        let text = text.trim();
        if let Some(rest) = text.strip_prefix('(') {
            return parse_surt(rest).map(HostPattern::Surt);
        }
        if text.contains("://") || text.contains('/') {
            return Err(format!("{FORMS}: a host, not a URL"));
        }
        let (wild, rest) = match text.strip_prefix("*.") {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (host, port) = split_port(rest);
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(80 | 443) => {
                    return Err(format!(
                        "{FORMS}; a default port (80, 443) is not part of a host key: write the host alone"
                    ))
                }
                Ok(n) if n > 0 => Some(n),
                _ => return Err(format!("{FORMS}; the port must be a number in 1..=65535")),
            },
        };
        if host.contains('*') {
            return Err(format!("{FORMS}; `*` only as the first label"));
        }
        let host = normalize_host(host).ok_or_else(|| format!("{FORMS}; `{host}` is not a host name"))?;
        if wild {
            if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
                return Err(format!("{FORMS}; `*.` takes a domain name, not an address"));
            }
            Ok(HostPattern::Suffix { suffix: host, port })
        } else {
            Ok(HostPattern::Exact { host, port })
        }
    }

    /// Whether the pattern matches a host key (`host` or `host:port`).
    pub fn matches(&self, host_key: &str) -> bool {
        let (host, port) = split_port(host_key);
        let host = host.strip_suffix('.').unwrap_or(host);
        let port_ok = |want: &Option<u16>| want.is_none_or(|w| port.and_then(|p| p.parse().ok()) == Some(w));
        match self {
            HostPattern::Exact { host: h, port: p } => host == h && port_ok(p),
            HostPattern::Suffix { suffix, port: p } => {
                host.len() > suffix.len() + 1
                    && host.ends_with(suffix.as_str())
                    && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
                    && port_ok(p)
            }
            HostPattern::Surt(prefix) => surt_host(host, port).starts_with(prefix.as_str()),
        }
    }
}

/// A SURT host prefix after its `(`: lower-cased, complete non-ASCII labels
/// in punycode.
fn parse_surt(rest: &str) -> Result<String, String> {
    const FORM: &str = "a SURT host prefix like \"(org,example,\" (no scheme, no path)";
    if rest.contains(['/', '(', ' ']) {
        return Err(FORM.into());
    }
    let (body, close) = match rest.split_once(')') {
        Some((b, "")) => (b, true),
        Some(_) => return Err(format!("{FORM}; nothing may follow `)`")),
        None => (rest, false),
    };
    let (labels, port) = match body.split_once(':') {
        Some((l, p)) if close && l.ends_with(',') && p.parse::<u16>().is_ok_and(|n| n > 0) => (l, Some(p)),
        Some(_) => return Err(format!("{FORM}; a port goes last, as in \"(org,example,www,:8080)\"")),
        None => (body, None),
    };
    let mut out = String::from("(");
    let pieces: Vec<&str> = labels.split(',').collect();
    for (i, piece) in pieces.iter().enumerate() {
        let complete = i + 1 < pieces.len();
        if piece.is_ascii() {
            out.push_str(&piece.to_ascii_lowercase());
        } else if complete {
            out.push_str(&normalize_host(piece).ok_or_else(|| format!("{FORM}; bad label `{piece}`"))?);
        } else {
            return Err(format!("{FORM}; write a partial label in punycode"));
        }
        if complete {
            out.push(',');
        }
    }
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    if close {
        out.push(')');
    }
    Ok(out)
}

/// The SURT form of a host key: `(org,example,docs,)`, with `:port` before
/// the `)`; IP addresses are not reversed (as `frontier::scope::surt`).
fn surt_host(host: &str, port: Option<&str>) -> String {
    let mut s = String::with_capacity(host.len() + 8);
    s.push('(');
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        s.push_str(host);
        s.push(',');
    } else {
        for label in host.rsplit('.') {
            s.push_str(label);
            s.push(',');
        }
    }
    if let Some(p) = port {
        s.push(':');
        s.push_str(p);
    }
    s.push(')');
    s
}

/// One `[[hosts]]` rule, checked and typed. Every `None` / empty override
/// leaves the global setting in force.
#[derive(Debug, Clone)]
pub struct HostRule {
    /// Which hosts it applies to.
    pub pattern: HostPattern,
    /// `min_delay_ms`.
    pub min_delay: Option<Duration>,
    /// `max_delay_ms`.
    pub max_delay: Option<Duration>,
    /// `delay_factor`.
    pub delay_factor: Option<f64>,
    /// `max_in_flight`: requests in flight to one such host at once.
    pub max_in_flight: Option<usize>,
    /// `max_pages`: URLs queued per such host (as `crawl.max_pages_per_host`; 0 = no limit).
    pub max_pages: Option<u64>,
    /// `max_depth`: replaces `crawl.max_depth` for these hosts.
    pub max_depth: Option<u32>,
    /// `allow`: a URL of these hosts must also match one of these (when non-empty).
    pub allow: Vec<regex::Regex>,
    /// `deny`: a URL of these hosts matching one of these is dropped (besides `crawl.deny`).
    pub deny: Vec<regex::Regex>,
    /// `headers` and `accept_language`: sent to these hosts (lower-case
    /// names), over the `[fetch]` ones of the same name.
    pub headers: Vec<(String, String)>,
    /// `proxy`: `Some(None)` connects directly, `Some(Some(url))` through that proxy.
    pub proxy: Option<Option<url::Url>>,
    /// `cookies`: a cookie jar for these hosts (or none).
    pub cookies: Option<bool>,
}

impl HostRule {
    /// Whether requests to these hosts need a client of their own (another
    /// proxy, or another cookie setting than `[fetch] cookies`).
    pub fn own_client(&self, global_cookies: bool) -> bool {
        self.proxy.is_some() || self.cookies.is_some_and(|c| c != global_cookies)
    }

    /// The politeness limits for these hosts: `global` with the rule's
    /// overrides. A `min_delay_ms` above the global `max_delay_ms` raises the
    /// maximum to it (validation rejects a rule's own max below its min).
    pub fn politeness(&self, global: &PolitenessSettings) -> PolitenessSettings {
        let mut p = global.clone();
        if let Some(d) = self.min_delay {
            p.min_delay = d;
        }
        p.max_delay = self.max_delay.unwrap_or(global.max_delay).max(p.min_delay);
        if let Some(f) = self.delay_factor {
            p.delay_factor = f;
        }
        if let Some(n) = self.max_in_flight {
            p.max_in_flight_per_host = n;
        }
        p
    }

    /// The overrides as `key=value`, comma-separated (header values are not shown).
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(d) = self.min_delay {
            parts.push(format!("min_delay_ms={}", d.as_millis()));
        }
        if let Some(d) = self.max_delay {
            parts.push(format!("max_delay_ms={}", d.as_millis()));
        }
        if let Some(f) = self.delay_factor {
            parts.push(format!("delay_factor={f}"));
        }
        if let Some(n) = self.max_in_flight {
            parts.push(format!("max_in_flight={n}"));
        }
        if let Some(n) = self.max_pages {
            parts.push(format!("max_pages={n}"));
        }
        if let Some(n) = self.max_depth {
            parts.push(format!("max_depth={n}"));
        }
        let regexes = |rs: &[regex::Regex]| rs.iter().map(|r| format!("{:?}", r.as_str())).collect::<Vec<_>>();
        if !self.allow.is_empty() {
            parts.push(format!("allow=[{}]", regexes(&self.allow).join(", ")));
        }
        if !self.deny.is_empty() {
            parts.push(format!("deny=[{}]", regexes(&self.deny).join(", ")));
        }
        if !self.headers.is_empty() {
            let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
            parts.push(format!("headers: {}", names.join(", ")));
        }
        match &self.proxy {
            Some(Some(u)) => parts.push(format!("proxy={}://{}", u.scheme(), u.host_str().unwrap_or(""))),
            Some(None) => parts.push("proxy=none".into()),
            None => {}
        }
        if let Some(c) = self.cookies {
            parts.push(format!("cookies={c}"));
        }
        parts.join(", ")
    }
}

/// The `[[hosts]]` rules in file order; the first whose pattern matches a
/// host applies to it.
#[derive(Debug, Clone, Default)]
pub struct HostRules {
    rules: Arc<[HostRule]>,
}

impl HostRules {
    /// Rules in order.
    pub fn new(rules: Vec<HostRule>) -> Self {
        HostRules { rules: rules.into() }
    }

    /// No rule is configured.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The rules in order.
    pub fn rules(&self) -> &[HostRule] {
        &self.rules
    }

    /// The rule at `index` (0-based).
    pub fn get(&self, index: usize) -> Option<&HostRule> {
        self.rules.get(index)
    }

    /// The first rule matching `host_key`, with its 0-based index (shown
    /// 1-based as `#N`). A scan over the rules: callers keep the answer per
    /// host ([`HostRuleCache`]).
    pub fn find(&self, host_key: &str) -> Option<(usize, &HostRule)> {
        self.rules.iter().enumerate().find(|(_, r)| r.pattern.matches(host_key))
    }
}

/// Hosts whose rule a [`HostRuleCache`] remembers; past this it answers
/// from the rules each time (still correct, only slower).
const CACHE_HOSTS: usize = 1 << 20;

/// Each host's rule, resolved once per host key. With no rules every
/// lookup is `None` at once.
#[derive(Debug, Default)]
pub struct HostRuleCache {
    rules: HostRules,
    cache: RwLock<HashMap<Box<str>, Option<u32>>>,
}

impl HostRuleCache {
    /// A cache over `rules`.
    pub fn new(rules: HostRules) -> Self {
        HostRuleCache {
            rules,
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// The rules.
    pub fn rules(&self) -> &HostRules {
        &self.rules
    }

    /// The index of the rule for `host_key`, if any.
    pub fn index(&self, host_key: &str) -> Option<usize> {
        if self.rules.is_empty() {
            return None;
        }
        if let Some(&hit) = self.cache.read().get(host_key) {
            return hit.map(|i| i as usize);
        }
        let found = self.rules.find(host_key).map(|(i, _)| i);
        let mut cache = self.cache.write();
        if cache.len() < CACHE_HOSTS {
            cache.insert(host_key.into(), found.map(|i| i as u32));
        }
        found
    }

    /// The rule for `host_key`, if any.
    pub fn rule(&self, host_key: &str) -> Option<&HostRule> {
        self.index(host_key).and_then(|i| self.rules.get(i))
    }
}

/// The keys a `[[hosts]]` entry may have and their TOML types.
const KEYS: &[(&str, &str)] = &[
    ("pattern", "a string"),
    ("min_delay_ms", "an integer"),
    ("max_delay_ms", "an integer"),
    ("delay_factor", "a number"),
    ("max_in_flight", "an integer"),
    ("max_pages", "an integer"),
    ("max_depth", "an integer"),
    ("allow", "an array of strings"),
    ("deny", "an array of strings"),
    ("headers", "a table of strings"),
    ("accept_language", "a string"),
    ("proxy", "a string"),
    ("cookies", "a boolean"),
];

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

/// The `hosts` value of one layer: an array of tables with known keys of
/// the right TOML types and a `pattern` each (an integer is accepted where
/// a number is expected). Errors name the layer and `hosts #N.KEY` (N from 1).
pub(super) fn check_layer(value: Value, origin: &str) -> Result<Value, ConfigError> {
    let type_err = |key: String, expected: &'static str, got: &Value| ConfigError::Type {
        origin: origin.to_string(),
        key,
        expected,
        got: type_name(got),
    };
    let Value::Array(entries) = value else {
        return Err(type_err("hosts".into(), "an array of tables ([[hosts]])", &value));
    };
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("hosts #{}", i + 1);
        let Value::Table(mut t) = entry else {
            return Err(type_err(at, "a table ([[hosts]])", &entry));
        };
        for (key, v) in t.iter_mut() {
            let full = format!("{at}.{key}");
            let Some(&(_, expected)) = KEYS.iter().find(|(k, _)| k == key) else {
                return Err(ConfigError::UnknownKey {
                    origin: origin.to_string(),
                    key: full,
                    allowed: KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
                });
            };
            if let (Value::Integer(n), "a number") = (&*v, expected) {
                *v = Value::Float(*n as f64);
            }
            let ok = match (&*v, expected) {
                (Value::Array(items), "an array of strings") => items.iter().all(Value::is_str),
                (Value::Table(items), "a table of strings") => items.values().all(Value::is_str),
                (v, e) => type_name(v) == e,
            };
            if !ok {
                return Err(type_err(full, expected, v));
            }
        }
        if !t.contains_key("pattern") {
            return Err(ConfigError::Invalid {
                origin: origin.to_string(),
                key: format!("{at}.pattern"),
                value: "(missing)".into(),
                allowed: "every [[hosts]] entry has a pattern".into(),
            });
        }
        out.push(Value::Table(t));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> HostPattern {
        HostPattern::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn exact_hosts_match_any_port_or_the_given_one() {
        let any = p("docs.example.org");
        assert!(any.matches("docs.example.org"));
        assert!(any.matches("docs.example.org:8080"));
        assert!(any.matches("docs.example.org."));
        assert!(!any.matches("www.docs.example.org"));
        assert!(!any.matches("example.org"));
        let port = p("docs.example.org:8080");
        assert!(port.matches("docs.example.org:8080"));
        assert!(!port.matches("docs.example.org"));
        assert!(!port.matches("docs.example.org:8081"));
        let ip = p("127.0.0.1:8080");
        assert!(ip.matches("127.0.0.1:8080") && !ip.matches("127.0.0.1:9"));
        let v6 = p("[::1]");
        assert!(v6.matches("[::1]:8080") && v6.matches("[::1]") && !v6.matches("[::2]"));
        assert_eq!(p("[0:0::1]:81").to_string(), "[::1]:81");
    }

    #[test]
    fn suffix_patterns_match_subdomains_not_the_suffix() {
        let s = p("*.example.org");
        assert!(s.matches("a.example.org"));
        assert!(s.matches("deep.a.example.org:81"));
        assert!(!s.matches("example.org"));
        assert!(!s.matches("badexample.org"));
        assert!(!s.matches("example.org.evil.test"));
        let port = p("*.example.org:81");
        assert!(port.matches("a.example.org:81") && !port.matches("a.example.org"));
    }

    #[test]
    fn surt_prefixes_match_the_reversed_host() {
        let s = p("(org,example,");
        assert!(s.matches("example.org"));
        assert!(s.matches("docs.example.org:8080"));
        assert!(!s.matches("example.organic"));
        assert!(!s.matches("notexample.org"));
        let www = p("(org,example,www");
        assert!(www.matches("www.example.org") && www.matches("www2.example.org"));
        assert!(!www.matches("docs.example.org"));
        let exact = p("(org,example,docs,:8080)");
        assert!(exact.matches("docs.example.org:8080") && !exact.matches("docs.example.org"));
        assert!(p("(127.0.0.1,").matches("127.0.0.1:9"));
    }

    #[test]
    fn patterns_are_normalized_like_urls() {
        assert_eq!(p("Docs.EXAMPLE.org").to_string(), "docs.example.org");
        assert_eq!(p("*.Bücher.example").to_string(), "*.xn--bcher-kva.example");
        assert!(p("BÜCHER.example").matches("xn--bcher-kva.example"));
        assert_eq!(p("(ORG,Example,Bücher,").to_string(), "(org,example,xn--bcher-kva,");
        let u = url::Url::parse("http://www.Bücher.Example:8080/").unwrap();
        assert!(p("*.bücher.example").matches(&crate::host::host_key(&u)));
    }

    #[test]
    fn bad_patterns_are_rejected_with_the_forms() {
        for bad in [
            "",
            "http://example.org/",
            "example.org/docs",
            "ex*mple.org",
            "*.*.example.org",
            "example.org:80",
            "example.org:443",
            "example.org:0",
            "example.org:http",
            "*.127.0.0.1",
            "bad host.org",
            "(org,example,)/docs",
            "(org,example:8080",
            "(org,bücher",
        ] {
            let e = HostPattern::parse(bad).expect_err(bad);
            assert!(e.contains("host") || e.contains("SURT"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_first_matching_rule_wins_and_is_cached() {
        let rule = |pat: &str, ms: u64| HostRule {
            pattern: p(pat),
            min_delay: Some(Duration::from_millis(ms)),
            max_delay: None,
            delay_factor: None,
            max_in_flight: None,
            max_pages: None,
            max_depth: None,
            allow: vec![],
            deny: vec![],
            headers: vec![],
            proxy: None,
            cookies: None,
        };
        let rules = HostRules::new(vec![
            rule("docs.example.org", 1),
            rule("*.example.org", 2),
            rule("(org,", 3),
        ]);
        assert_eq!(rules.find("docs.example.org").map(|(i, _)| i), Some(0));
        assert_eq!(rules.find("www.example.org").map(|(i, _)| i), Some(1));
        assert_eq!(rules.find("example.org").map(|(i, _)| i), Some(2));
        assert_eq!(rules.find("example.com").map(|(i, _)| i), None);
        let cache = HostRuleCache::new(rules);
        for _ in 0..2 {
            assert_eq!(cache.index("www.example.org"), Some(1));
            assert_eq!(cache.index("example.com"), None);
        }
        assert_eq!(cache.cache.read().len(), 2);
        assert_eq!(
            cache.rule("docs.example.org").unwrap().min_delay,
            Some(Duration::from_millis(1))
        );
        assert_eq!(HostRuleCache::default().index("example.org"), None);
    }

    #[test]
    fn a_rule_min_delay_above_the_global_max_raises_the_max() {
        let global = super::super::Settings::default().politeness;
        let mut r = HostRules::default();
        assert!(r.is_empty());
        let rule = HostRule {
            pattern: p("a.test"),
            min_delay: Some(Duration::from_secs(120)),
            max_delay: None,
            delay_factor: Some(0.0),
            max_in_flight: Some(3),
            max_pages: None,
            max_depth: None,
            allow: vec![],
            deny: vec![],
            headers: vec![],
            proxy: None,
            cookies: None,
        };
        r = HostRules::new(vec![rule]);
        let p = r.get(0).unwrap().politeness(&global);
        assert_eq!(p.min_delay, Duration::from_secs(120));
        assert_eq!(p.max_delay, Duration::from_secs(120));
        assert_eq!((p.delay_factor, p.max_in_flight_per_host), (0.0, 3));
        assert_eq!(p.max_crawl_delay, global.max_crawl_delay);
        assert_eq!(
            r.get(0).unwrap().summary(),
            "min_delay_ms=120000, delay_factor=0, max_in_flight=3"
        );
    }
}
