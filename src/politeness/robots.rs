//! robots.txt (RFC 9309): parsing, matching, and what a fetch status means.
//!
//! Sits in the politeness stage, between the frontier and the fetcher: before
//! a URL is fetched, its host's [`Robots`] (or, faster, the crawler's compiled
//! [`AgentRules`]) says whether the crawler's product token may fetch it. The
//! robots cache and fetching live beside this file; this file only knows what
//! a body and a status code mean.
//!
//! Semantics (RFC 9309 §2):
//! - A group is one or more `user-agent` lines followed by rules; a
//!   `user-agent` line after a rule starts a new group. Lines before the first
//!   group, unknown keys and malformed lines are ignored; `sitemap` lines are
//!   global and do not end a group.
//! - The group(s) for the crawler are those whose product token equals the
//!   crawler's, case-insensitively and as a whole token (`foo` does not match
//!   `foobot`; `Foobot/2.1` in a file is read as `foobot`); all such groups
//!   are merged. Without one, the `*` groups apply (merged); without those,
//!   everything is allowed.
//! - The rule whose pattern has the most octets wins; on a tie `allow` wins.
//!   `*` matches any run of characters, a final `$` anchors the end; other
//!   patterns match a prefix of path + query. Matching is linear in the path
//!   (literal pieces found left to right with `memchr::memmem`), so hostile
//!   patterns cannot blow up.
//! - Patterns and URLs are compared in one normal form (§2.2.2): escapes of
//!   unreserved characters and of `*` and `$` decoded; non-ASCII, control
//!   and space octets encoded; other escapes kept, hex upper-cased; in the
//!   query, `:` `/` `?` `@` are data and compared encoded (Figure 4:
//!   `?baz=https://foo.bar` matches `?baz=https%3A%2F%2Ffoo.bar`). A pattern
//!   that does not start with `/` or `*` gets a leading `/`.
//! - `/robots.txt` is always allowed. At most `max_bytes` of the body are
//!   parsed (a line cut by the limit is dropped); a UTF-8 BOM and LF, CR or
//!   CRLF line ends are accepted; invalid UTF-8 is matched octet by octet.
//!
//! Fetch outcomes (§2.3.1) are [`policy_for_fetch`]: 2xx parse, 3xx follow
//! up to [`MAX_REDIRECTS`] hops, 4xx allow all, 5xx / unreachable disallow
//! all and retry later. 429 counts as 5xx: a server that asks to slow down is
//! not an invitation to crawl everything (Google does the same).

use std::borrow::Cow;

use url::Url;

use crate::canon::{hex_val, is_unreserved};

/// RFC 9309 §2.5: crawlers must parse at least 500 KiB. The
/// `[politeness] robots_max_bytes` default.
pub const DEFAULT_MAX_BYTES: usize = 512_000;

/// RFC 9309 §2.3.1.2: redirects followed when fetching robots.txt.
pub const MAX_REDIRECTS: u32 = 5;

/// A robots.txt pattern compiled for matching: literal pieces (in the normal
/// form) separated by `*`, maybe anchored at the end.
#[derive(Debug, Clone)]
struct Pattern {
    /// Literal pieces; `*` sits between consecutive pieces.
    pieces: Vec<Box<[u8]>>,
    /// A final `$`.
    anchored: bool,
    /// Octets of the normalized pattern, wildcards included (specificity).
    len: usize,
}

impl Pattern {
    /// Compile a rule value (comment and whitespace already removed).
    /// `None` for an empty value.
    fn compile(raw: &[u8]) -> Option<Pattern> {
        if raw.is_empty() {
            return None;
        }
        let (body, anchored) = match raw.strip_suffix(b"$") {
            Some(b) => (b, true),
            None => (raw, false),
        };
        let mut pieces = Vec::new();
        let mut cur = Vec::with_capacity(body.len() + 1);
        if !matches!(body.first(), Some(b'/') | Some(b'*')) {
            cur.push(b'/');
        }
        let mut in_query = false;
        let mut i = 0;
        while i < body.len() {
            if body[i] == b'*' {
                pieces.push(std::mem::take(&mut cur).into_boxed_slice());
                i += 1;
            } else {
                i = push_normalized(body, i, &mut in_query, &mut cur);
            }
        }
        pieces.push(cur.into_boxed_slice());
        let len = pieces.iter().map(|p| p.len()).sum::<usize>() + pieces.len() - 1 + usize::from(anchored);
        Some(Pattern { pieces, anchored, len })
    }

    /// Whether the pattern matches `target` (normalized path + query).
    fn matches(&self, target: &[u8]) -> bool {
        let (first, rest) = match self.pieces.split_first() {
            Some(x) => x,
            None => return true,
        };
        if !target.starts_with(first) {
            return false;
        }
        let Some((last, middle)) = rest.split_last() else {
            return !self.anchored || target.len() == first.len();
        };
        let mut pos = first.len();
        for piece in middle {
            match memchr::memmem::find(&target[pos..], piece) {
                Some(at) => pos += at + piece.len(),
                None => return false,
            }
        }
        if self.anchored {
            target.len() >= pos + last.len() && target.ends_with(last)
        } else {
            memchr::memmem::find(&target[pos..], last).is_some()
        }
    }
}

/// Append the normal form of the character at `s[i]` to `out` and return the
/// index of the next character. Shared by patterns and URLs so both sides
/// compare in one form. `?` (raw) switches to the query part.
fn push_normalized(s: &[u8], i: usize, in_query: &mut bool, out: &mut Vec<u8>) -> usize {
    let b = s[i];
    if b == b'%' {
        if let (Some(h), Some(l)) = (
            s.get(i + 1).and_then(|&c| hex_val(c)),
            s.get(i + 2).and_then(|&c| hex_val(c)),
        ) {
            let v = h * 16 + l;
            if is_unreserved(v) || v == b'*' || v == b'$' {
                out.push(v);
            } else {
                push_escape(v, out);
            }
            return i + 3;
        }
        out.extend_from_slice(b"%25");
        return i + 1;
    }
    if b == b'?' && !*in_query {
        *in_query = true;
        out.push(b);
    } else if needs_escape(b, *in_query) {
        push_escape(b, out);
    } else {
        out.push(b);
    }
    i + 1
}

fn needs_escape(b: u8, in_query: bool) -> bool {
    b >= 0x80 || b <= 0x20 || b == 0x7f || (in_query && matches!(b, b':' | b'/' | b'?' | b'@'))
}

fn push_escape(v: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(&[b'%', HEX[usize::from(v >> 4)], HEX[usize::from(v & 15)]]);
}

/// The normal form of a URL's path + query, borrowed when it already is.
fn normalize_target(path_and_query: &str) -> Cow<'_, [u8]> {
    let bytes = path_and_query.as_bytes();
    let query_at = memchr::memchr(b'?', bytes).unwrap_or(bytes.len());
    let clean = !bytes.iter().any(|&b| b == b'%' || needs_escape(b, false))
        && !bytes[query_at..].iter().skip(1).any(|&b| needs_escape(b, true));
    if clean {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut in_query = false;
    let mut i = 0;
    while i < bytes.len() {
        i = push_normalized(bytes, i, &mut in_query, &mut out);
    }
    Cow::Owned(out)
}

/// The path + query of `url` as robots rules see it (a slice of its
/// serialization: no copy).
fn target_of(url: &Url) -> &str {
    &url[url::Position::BeforePath..url::Position::AfterQuery]
}

/// One `allow` or `disallow` line.
#[derive(Debug, Clone)]
struct Rule {
    allow: bool,
    pattern: Pattern,
}

/// A group's `user-agent` line value.
#[derive(Debug, Clone)]
enum AgentToken {
    /// `*`.
    Star,
    /// A product token, lower-cased (may be empty: matches nothing).
    Token(String),
}

/// A group: its agents, rules and Crawl-delay.
#[derive(Debug, Clone, Default)]
struct Group {
    agents: Vec<AgentToken>,
    rules: Vec<Rule>,
    crawl_delay: Option<f64>,
}

/// A parsed robots.txt: every group, for any crawler. Build it once per host
/// and derive the crawler's [`AgentRules`] from it.
#[derive(Debug, Clone, Default)]
pub struct Robots {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
    disallow_all: bool,
}

/// The leading product-token characters (`A-Z a-z _ -`) of `s` (RFC 9309
/// section 2.2.1): what of a user-agent string matches a group.
pub fn product_token(s: &str) -> &str {
    let end = s
        .bytes()
        .position(|b| !(b.is_ascii_alphabetic() || b == b'_' || b == b'-'))
        .unwrap_or(s.len());
    &s[..end]
}

fn trim_ws(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

impl Robots {
    /// Parse a robots.txt body, reading at most `max_bytes` of it. Never
    /// fails: what cannot be understood is ignored.
    pub fn parse(body: &[u8], max_bytes: usize) -> Robots {
        let mut body = body;
        if body.len() > max_bytes {
            body = &body[..max_bytes];
            // Drop the line the limit cut through.
            let cut = body
                .iter()
                .rposition(|&b| b == b'\n' || b == b'\r')
                .map_or(0, |p| p + 1);
            body = &body[..cut];
        }
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let mut robots = Robots::default();
        // Whether the current group has had a rule line (a user-agent line
        // then starts a new group).
        let mut in_rules = true;
        for line in body.split(|&b| b == b'\n' || b == b'\r') {
            let line = match memchr::memchr(b'#', line) {
                Some(p) => &line[..p],
                None => line,
            };
            let Some(colon) = memchr::memchr(b':', line) else {
                continue;
            };
            let key = trim_ws(&line[..colon]);
            let value = trim_ws(&line[colon + 1..]);
            let key = key.to_ascii_lowercase();
            match key.as_slice() {
                b"user-agent" | b"useragent" | b"user agent" => {
                    if in_rules {
                        robots.groups.push(Group::default());
                        in_rules = false;
                    }
                    let value = String::from_utf8_lossy(value);
                    let agent = if value.starts_with('*') {
                        AgentToken::Star
                    } else {
                        AgentToken::Token(product_token(&value).to_ascii_lowercase())
                    };
                    if let Some(g) = robots.groups.last_mut() {
                        g.agents.push(agent);
                    }
                }
                b"allow" | b"disallow" | b"dissallow" | b"disalow" | b"disallaw" => {
                    in_rules = true;
                    let (Some(group), Some(pattern)) = (robots.groups.last_mut(), Pattern::compile(value)) else {
                        continue;
                    };
                    group.rules.push(Rule {
                        allow: key == b"allow",
                        pattern,
                    });
                }
                b"crawl-delay" | b"crawldelay" => {
                    in_rules = true;
                    let delay = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse::<f64>().ok())
                        .filter(|d| d.is_finite() && *d >= 0.0);
                    if let (Some(group), Some(d)) = (robots.groups.last_mut(), delay) {
                        group.crawl_delay.get_or_insert(d);
                    }
                }
                b"sitemap" | b"site-map" if !value.is_empty() => {
                    robots.sitemaps.push(String::from_utf8_lossy(value).into_owned());
                }
                _ => {}
            }
        }
        robots
    }

    /// Everything allowed (robots.txt unavailable: 4xx).
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// Everything disallowed (robots.txt unreachable: 5xx or no answer).
    pub fn disallow_all() -> Robots {
        Robots {
            disallow_all: true,
            ..Robots::default()
        }
    }

    /// Whether this is [`Robots::disallow_all`].
    pub fn is_disallow_all(&self) -> bool {
        self.disallow_all
    }

    /// The groups that apply to `agent_token` (its product-token prefix,
    /// case-insensitive): its own groups, else the `*` groups, else none.
    fn groups_for<'a>(&'a self, agent_token: &'a str) -> impl Iterator<Item = &'a Group> + 'a {
        let token = product_token(agent_token.trim());
        let own = move |g: &Group| {
            !token.is_empty()
                && g.agents
                    .iter()
                    .any(|a| matches!(a, AgentToken::Token(t) if t.eq_ignore_ascii_case(token)))
        };
        let has_own = self.groups.iter().any(own);
        self.groups.iter().filter(move |g| {
            if has_own {
                own(g)
            } else {
                g.agents.iter().any(|a| matches!(a, AgentToken::Star))
            }
        })
    }

    /// Whether `agent_token` may fetch `url` (path + query are matched; pass
    /// the canonical URL). For many URLs with one agent, use
    /// [`Robots::for_agent`] once and [`AgentRules::is_allowed`].
    pub fn is_allowed(&self, agent_token: &str, url: &Url) -> bool {
        if url.path() == "/robots.txt" {
            return true;
        }
        if self.disallow_all {
            return false;
        }
        let target = target_of(url);
        let target = normalize_target(target);
        let mut best: Option<(usize, bool)> = None;
        for group in self.groups_for(agent_token) {
            for rule in &group.rules {
                let better = match best {
                    None => true,
                    Some((len, allow)) => rule.pattern.len > len || (rule.pattern.len == len && rule.allow && !allow),
                };
                if better && rule.pattern.matches(&target) {
                    best = Some((rule.pattern.len, rule.allow));
                }
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }

    /// The Crawl-delay (seconds) of the groups that apply to `agent_token`:
    /// the first valid value among them, or `None`.
    pub fn crawl_delay(&self, agent_token: &str) -> Option<f64> {
        self.groups_for(agent_token).find_map(|g| g.crawl_delay)
    }

    /// The `Sitemap:` URLs, in file order.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// The rules for one crawler, merged and sorted for fast repeated checks.
    pub fn for_agent(&self, agent_token: &str) -> AgentRules {
        let mut rules: Vec<Rule> = self
            .groups_for(agent_token)
            .flat_map(|g| g.rules.iter().cloned())
            .collect();
        // Most octets first; allow before disallow on a tie.
        rules.sort_by(|a, b| b.pattern.len.cmp(&a.pattern.len).then(b.allow.cmp(&a.allow)));
        AgentRules {
            rules,
            crawl_delay: self.crawl_delay(agent_token),
            disallow_all: self.disallow_all,
        }
    }
}

/// One crawler's view of a [`Robots`]: the merged rules of its groups,
/// sorted by precedence so the first match decides.
#[derive(Debug, Clone)]
pub struct AgentRules {
    rules: Vec<Rule>,
    crawl_delay: Option<f64>,
    disallow_all: bool,
}

impl AgentRules {
    /// Whether `url` may be fetched (same answer as [`Robots::is_allowed`]).
    pub fn is_allowed(&self, url: &Url) -> bool {
        if url.path() == "/robots.txt" {
            return true;
        }
        if self.disallow_all {
            return false;
        }
        let target = target_of(url);
        let target = normalize_target(target);
        self.rules
            .iter()
            .find(|r| r.pattern.matches(&target))
            .is_none_or(|r| r.allow)
    }

    /// The Crawl-delay in seconds, if the groups set one.
    pub fn crawl_delay(&self) -> Option<f64> {
        self.crawl_delay
    }

    /// Number of rules that apply.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule applies (everything allowed unless disallow-all).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// What to do with the outcome of a robots.txt fetch (RFC 9309 §2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsPolicyKind {
    /// 2xx: parse the body with [`Robots::parse`].
    Parse,
    /// 3xx with fewer than [`MAX_REDIRECTS`] hops followed: fetch the target.
    FollowRedirect,
    /// 4xx (except 429), or too many redirects: the file is unavailable;
    /// everything is allowed.
    AllowAll,
    /// 5xx, 429, unreachable or an unexpected status: everything is
    /// disallowed until the fetch is retried (`[politeness] robots_retry_secs`).
    DisallowAllRetryLater,
}

impl RobotsPolicyKind {
    /// The [`Robots`] this outcome stands for, when no body decides.
    pub fn robots(self) -> Option<Robots> {
        match self {
            RobotsPolicyKind::AllowAll => Some(Robots::allow_all()),
            RobotsPolicyKind::DisallowAllRetryLater => Some(Robots::disallow_all()),
            RobotsPolicyKind::Parse | RobotsPolicyKind::FollowRedirect => None,
        }
    }
}

/// [`policy_for_fetch`] for the first request (no redirect followed yet).
pub fn policy_for_status(status: Option<u16>) -> RobotsPolicyKind {
    policy_for_fetch(status, 0)
}

/// What a robots.txt fetch outcome means. `status` is `None` when the
/// server was unreachable (DNS, connect, timeout, TLS); `hops` is the number
/// of redirects already followed to get this answer.
pub fn policy_for_fetch(status: Option<u16>, hops: u32) -> RobotsPolicyKind {
    match status {
        Some(200..=299) => RobotsPolicyKind::Parse,
        Some(300..=399) if hops < MAX_REDIRECTS => RobotsPolicyKind::FollowRedirect,
        Some(300..=399) => RobotsPolicyKind::AllowAll,
        Some(429) => RobotsPolicyKind::DisallowAllRetryLater,
        Some(400..=499) => RobotsPolicyKind::AllowAll,
        _ => RobotsPolicyKind::DisallowAllRetryLater,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(body: &str, agent: &str, url: &str) -> bool {
        let robots = Robots::parse(body.as_bytes(), DEFAULT_MAX_BYTES);
        let u = Url::parse(url).unwrap();
        let a = robots.is_allowed(agent, &u);
        assert_eq!(
            a,
            robots.for_agent(agent).is_allowed(&u),
            "Robots and AgentRules disagree"
        );
        a
    }

    #[test]
    fn pattern_matching() {
        let p = |s: &str| Pattern::compile(s.as_bytes()).unwrap();
        assert!(p("/fish").matches(b"/fish.html"));
        assert!(!p("/fish$").matches(b"/fish.html"));
        assert!(p("/*.php$").matches(b"/a/b.php"));
        assert!(!p("/*.php$").matches(b"/a/b.php?x"));
        assert!(p("/a*b*c").matches(b"/axxbyyczz"));
        assert!(!p("/a*c*b$").matches(b"/acb-c"));
        assert!(p("*").matches(b"/"));
        assert_eq!(p("/a*b$").len, 5);
    }

    #[test]
    fn target_slices_path_and_query() {
        let u = Url::parse("http://u:p@h:81/a/b?x=1#f").unwrap();
        assert_eq!(target_of(&u), "/a/b?x=1");
        let u = Url::parse("http://h/a").unwrap();
        assert_eq!(target_of(&u), "/a");
    }

    #[test]
    fn groups_and_precedence() {
        let body = "User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nAllow: /p\nDisallow: /\n";
        assert!(allowed(body, "foobot", "http://h/p/x"));
        assert!(!allowed(body, "foobot", "http://h/q"));
        assert!(!allowed(body, "barbot", "http://h/p"));
        assert!(allowed(body, "barbot", "http://h/robots.txt"));
    }

    #[test]
    fn status_policy() {
        assert_eq!(policy_for_status(Some(200)), RobotsPolicyKind::Parse);
        assert_eq!(policy_for_status(Some(301)), RobotsPolicyKind::FollowRedirect);
        assert_eq!(policy_for_fetch(Some(301), MAX_REDIRECTS), RobotsPolicyKind::AllowAll);
        assert_eq!(policy_for_status(Some(404)), RobotsPolicyKind::AllowAll);
        assert_eq!(policy_for_status(Some(429)), RobotsPolicyKind::DisallowAllRetryLater);
        assert_eq!(policy_for_status(Some(503)), RobotsPolicyKind::DisallowAllRetryLater);
        assert_eq!(policy_for_status(None), RobotsPolicyKind::DisallowAllRetryLater);
        assert_eq!(policy_for_status(Some(100)), RobotsPolicyKind::DisallowAllRetryLater);
    }
}
