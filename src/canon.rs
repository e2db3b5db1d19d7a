//! URL canonicalization (pipeline: applied to every discovered link and
//! redirect hop before the seen-set): RFC 3986 §6 normalization and the crawler
//! profile (sorted query, tracking parameters dropped). Contract: `simcrawl canon`.
//!
//! Two profiles ([`CanonProfile`]):
//!
//! - **`rfc3986`** (RFC 3986 §6.2.2–6.2.3): scheme and host lower-cased, IDN
//!   host to punycode, dot segments removed, default port dropped, empty path
//!   → `/` (all done by the `url` crate's WHATWG parser); percent-encoding
//!   normalized here: escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`)
//!   decoded, every other escape's hex upper-cased, a `%` that starts no valid
//!   escape encoded as `%25`; the fragment dropped. Path and query keep their
//!   case; reserved characters keep their encoding (`%2F` stays `%2F`).
//! - **`crawler`** (the crawl default) = `rfc3986` plus the `[canon]` rules:
//!   query parameters and `;name=value` path parameters whose name is in
//!   `drop_params` removed (case-insensitive, a trailing `*` matches a prefix),
//!   empty `&&` pieces removed, parameters sorted by name (stable), an empty
//!   query (`?`) dropped, and a final `index.html`/`index.htm` segment folded
//!   into its directory.
//!
//! Only `http` and `https` URLs are crawlable: [`Canonicalizer::parse`] and
//! [`Canonicalizer::resolve`] reject every other scheme (`mailto:`,
//! `javascript:`, `data:`, `ftp:`...) with [`CanonError::UnsupportedScheme`],
//! and so does `simcrawl canon`. [`Canonicalizer::canonicalize`] itself takes
//! any parsed URL and is idempotent.
//!
//! ```
//! use simcrawl::canon::Canonicalizer;
//! use simcrawl::config::CanonProfile;
//! let c = Canonicalizer::with_profile(CanonProfile::Crawler);
//! let u = c.parse("HTTP://WWW.News.TEST:80/a/./%7euser/index.html?utm_source=x&b=2&a=1#top").unwrap();
//! assert_eq!(u.as_str(), "http://www.news.test/a/~user/?a=1&b=2");
//! ```

use url::Url;

use crate::config::{CanonProfile, CanonSettings};

/// Longest input (in bytes, after trimming) that is canonicalized; longer
/// inputs are rejected with [`CanonError::TooLong`]. Real links are far
/// shorter; this bounds the work done on hostile pages.
pub const MAX_INPUT_LEN: usize = 16 * 1024;

/// Why an input could not be turned into a crawlable canonical URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// The input is empty (or only whitespace).
    #[error("empty URL")]
    Empty,
    /// The input is longer than [`MAX_INPUT_LEN`].
    #[error("URL is {len} bytes long; at most {max} are accepted")]
    TooLong {
        /// Length of the input in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A relative reference with no base URL to resolve it against.
    #[error("relative URL `{0}` without a base URL")]
    Relative(String),
    /// The input is not a URL.
    #[error("cannot parse `{input}`: {reason}")]
    Unparseable {
        /// The input (shortened to 200 bytes).
        input: String,
        /// The parser's reason.
        reason: url::ParseError,
    },
    /// A scheme other than `http` or `https`.
    #[error("unsupported scheme `{0}`: only http and https URLs are crawled")]
    UnsupportedScheme(String),
}

/// One entry of `drop_params`: an exact (lower-case) name or a prefix.
#[derive(Debug, Clone)]
struct ParamRule {
    name: String,
    prefix: bool,
}

/// A URL canonicalizer, built once from [`CanonSettings`] and shared by every
/// worker (it is immutable and `Sync`).
#[derive(Debug, Clone)]
pub struct Canonicalizer {
    crawler: bool,
    sort_query: bool,
    strip_index_file: bool,
    drop: Vec<ParamRule>,
    /// Tells this canonicalizer's entries in the per-thread link cache
    /// ([`Canonicalizer::resolve_link`]) from another's.
    id: u64,
}

/// Links each thread keeps resolved ([`Canonicalizer::resolve_link`]); the
/// cache starts over when full.
pub const LINK_CACHE: usize = 4096;

/// A cached link: the canonicalizer, and the parts of the base URL and of
/// the href its canonical URL depends on (`link_key`).
#[derive(PartialEq, Eq, Hash)]
struct LinkKey {
    id: u64,
    dir: Box<str>,
    href: Box<str>,
}

/// [`LinkKey`] borrowed, for lookups (hashes as a `LinkKey` does).
#[derive(Hash)]
struct LinkKeyRef<'a> {
    id: u64,
    dir: &'a str,
    href: &'a str,
}

impl hashbrown::Equivalent<LinkKey> for LinkKeyRef<'_> {
    fn equivalent(&self, k: &LinkKey) -> bool {
        self.id == k.id && self.dir == &*k.dir && self.href == &*k.href
    }
}

thread_local! {
    static RESOLVED: std::cell::RefCell<hashbrown::HashMap<LinkKey, Url>> =
        std::cell::RefCell::new(hashbrown::HashMap::new());
}

/// Whether `s` starts with a URL scheme and `:` (RFC 3986 section 3.1).
fn has_scheme(s: &str) -> bool {
    s.split_once(':').is_some_and(|(scheme, _)| {
        scheme.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    })
}

/// The part of a base URL that `href` (at most [`MAX_INPUT_LEN`] bytes)
/// resolves and canonicalizes the same against, and the part of `href`
/// that matters: canonical URLs have no fragment, so only the href's part
/// before its first `#` matters (a fragment never fails to parse); that
/// part resolves against the base's scheme, authority and directory
/// (everything up to the last `/` of its path) unless it is empty or starts
/// with `?` (RFC 3986 section 5.2.2), then against the base up to its
/// query; one that starts with `http://` or `https://` resolves to itself.
/// `None` (not cached) for an href that starts or ends with a space or a
/// control character, which the URL parser strips (`:\u{1}` loses its
/// last character, `:\u{1}#f` keeps it), and for any other href with a
/// scheme.
fn link_key<'a>(base: &'a Url, href: &'a str) -> Option<(&'a str, &'a str)> {
    let kept = |b: &u8| *b > b' ' && *b != 0x7f;
    if !href.as_bytes().first().is_some_and(kept) || !href.as_bytes().last().is_some_and(kept) {
        return None;
    }
    let before = href.split_once('#').map_or(href, |(b, _)| b);
    let has_prefix = |p: &str| before.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p));
    let scope = if before.is_empty() || before.starts_with('?') {
        &base[..url::Position::AfterQuery]
    } else if has_prefix("http://") || has_prefix("https://") {
        ""
    } else if has_scheme(before) {
        // `http:x` against an http base is relative (WHATWG URL, special
        // schemes), other schemes are not crawled: not cached.
        return None;
    } else {
        let upto_path = &base[..url::Position::AfterPath];
        &upto_path[..upto_path.rfind('/').map_or(upto_path.len(), |i| i + 1)]
    };
    Some((scope, before))
}

impl Canonicalizer {
    /// The canonicalizer of a `[canon]` config section.
    pub fn new(settings: &CanonSettings) -> Self {
        let crawler = settings.profile == CanonProfile::Crawler;
        let drop = settings
            .drop_params
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| match p.strip_suffix('*') {
                Some(prefix) => ParamRule {
                    name: prefix.to_ascii_lowercase(),
                    prefix: true,
                },
                None => ParamRule {
                    name: p.to_ascii_lowercase(),
                    prefix: false,
                },
            })
            .collect();
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Canonicalizer {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            crawler,
            sort_query: settings.sort_query,
            strip_index_file: settings.strip_index_file,
            drop,
        }
    }

    /// The canonicalizer of `profile` with the other `[canon]` keys at their
    /// defaults from `config/default.toml`.
    pub fn with_profile(profile: CanonProfile) -> Self {
        let mut settings = crate::config::Settings::default().canon;
        settings.profile = profile;
        Canonicalizer::new(&settings)
    }

    /// The profile this canonicalizer applies.
    pub fn profile(&self) -> CanonProfile {
        if self.crawler {
            CanonProfile::Crawler
        } else {
            CanonProfile::Rfc3986
        }
    }

    /// The canonical form of `url` (any scheme). Idempotent:
    /// `canonicalize(&canonicalize(u)) == canonicalize(u)`.
    pub fn canonicalize(&self, url: &Url) -> Url {
        let mut u = url.clone();
        self.canonicalize_in_place(&mut u);
        u
    }

    /// [`Canonicalizer::canonicalize`] without the copy.
    pub fn canonicalize_in_place(&self, u: &mut Url) {
        u.set_fragment(None);
        if u.cannot_be_a_base() {
            return;
        }
        // Credentials in a link (`http://user:pass@host/`) are never sent,
        // stored or reported: the canonical URL has no userinfo.
        strip_userinfo(u);
        let mut buf = String::new();
        if self.canonical_path(u.path(), &mut buf) {
            u.set_path(&buf);
        }
        let action = match u.query() {
            None => QueryAction::Keep,
            Some(q) => {
                buf.clear();
                if self.crawler {
                    self.crawler_query(q, &mut buf);
                    if buf.is_empty() {
                        QueryAction::Remove
                    } else if buf != q {
                        QueryAction::Set
                    } else {
                        QueryAction::Keep
                    }
                } else if normalize_pct(q, &mut buf) {
                    QueryAction::Set
                } else {
                    QueryAction::Keep
                }
            }
        };
        match action {
            QueryAction::Keep => {}
            QueryAction::Remove => u.set_query(None),
            QueryAction::Set => u.set_query(Some(&buf)),
        }
    }

    /// Parse an absolute `http`/`https` URL (surrounding whitespace trimmed)
    /// and return its canonical form.
    pub fn parse(&self, input: &str) -> Result<Url, CanonError> {
        let input = check_input(input)?;
        let mut u = Url::parse(input).map_err(|e| parse_error(input, e))?;
        check_scheme(&u)?;
        self.canonicalize_in_place(&mut u);
        Ok(u)
    }

    /// Resolve a link's `href` (surrounding whitespace trimmed; relative
    /// references allowed) against `base` (the page URL, or its `<base href>`
    /// resolved with [`effective_base`]) and return the canonical form.
    /// Links to schemes other than `http`/`https` are rejected.
    pub fn resolve(&self, base: &Url, href: &str) -> Result<Url, CanonError> {
        let href = check_input(href)?;
        let mut u = base.join(href).map_err(|e| parse_error(href, e))?;
        check_scheme(&u)?;
        self.canonicalize_in_place(&mut u);
        Ok(u)
    }

    /// [`Canonicalizer::resolve`] through a per-thread cache of
    /// [`LINK_CACHE`] links: a page's navigation repeats on every page of
    /// its directory, and each href is parsed and canonicalized once per
    /// directory and thread (in-page anchors once per page, absolute URLs
    /// once; see `link_key` for what an entry is keyed on). Failures are
    /// not cached.
    pub fn resolve_link(&self, base: &Url, href: &str) -> Result<Url, CanonError> {
        let Some((dir, part)) = link_key(base, href).filter(|_| href.len() <= MAX_INPUT_LEN) else {
            return self.resolve(base, href);
        };
        let key = LinkKeyRef {
            id: self.id,
            dir,
            href: part,
        };
        if let Some(u) = RESOLVED.with(|c| c.borrow().get(&key).cloned()) {
            return Ok(u);
        }
        let u = self.resolve(base, href)?;
        RESOLVED.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= LINK_CACHE {
                c.clear();
            }
            c.insert(
                LinkKey {
                    id: self.id,
                    dir: dir.into(),
                    href: part.into(),
                },
                u.clone(),
            );
        });
        Ok(u)
    }

    /// Write the canonical path of `path` into `out`; false (and `out`
    /// unspecified) when it is already canonical.
    fn canonical_path(&self, path: &str, out: &mut String) -> bool {
        out.clear();
        let mut changed = normalize_pct(path, out);
        if !changed {
            out.push_str(path);
        }
        if self.crawler {
            if !self.drop.is_empty() && out.contains(';') {
                changed |= self.drop_path_params(out);
            }
            if self.strip_index_file {
                for index in ["/index.html", "/index.htm"] {
                    if out.ends_with(index) {
                        out.truncate(out.len() - index.len() + 1);
                        changed = true;
                        break;
                    }
                }
            }
        }
        changed
    }

    /// Remove `;name=value` path parameters whose name is dropped. Returns
    /// whether anything was removed.
    fn drop_path_params(&self, path: &mut String) -> bool {
        let mut kept = String::with_capacity(path.len());
        let mut changed = false;
        for (i, segment) in path.split('/').enumerate() {
            if i > 0 {
                kept.push('/');
            }
            let mut parts = segment.split(';');
            kept.push_str(parts.next().unwrap_or(""));
            for param in parts {
                let name = param.split('=').next().unwrap_or("");
                if param.contains('=') && self.is_dropped(name) {
                    changed = true;
                } else {
                    kept.push(';');
                    kept.push_str(param);
                }
            }
        }
        if changed {
            *path = kept;
        }
        changed
    }

    /// The crawler profile's query: normalized, dropped parameters and empty
    /// pieces removed, sorted by name. Empty output means "no query".
    fn crawler_query(&self, query: &str, out: &mut String) {
        let mut normalized = String::new();
        let q = if normalize_pct(query, &mut normalized) {
            normalized.as_str()
        } else {
            query
        };
        let mut params: Vec<&str> = q
            .split('&')
            .filter(|p| !p.is_empty() && !self.is_dropped(p.split('=').next().unwrap_or("")))
            .collect();
        if self.sort_query {
            // Stable: parameters of the same name keep their order.
            params.sort_by(|a, b| param_name(a).cmp(param_name(b)));
        }
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.push_str(p);
        }
    }

    /// Whether a parameter name is in `drop_params` (ASCII case-insensitive).
    fn is_dropped(&self, name: &str) -> bool {
        self.drop.iter().any(|r| {
            if r.prefix {
                name.len() >= r.name.len() && name.as_bytes()[..r.name.len()].eq_ignore_ascii_case(r.name.as_bytes())
            } else {
                name.eq_ignore_ascii_case(&r.name)
            }
        })
    }
}

/// Remove the userinfo (`user:pass@`) of `u`, if any.
pub fn strip_userinfo(u: &mut Url) {
    if !u.username().is_empty() || u.password().is_some() {
        // Only fails for URLs without a host, which have no userinfo.
        let _ = u.set_username("");
        let _ = u.set_password(None);
    }
}

/// `href` as found on a page, for the crawl log, with any credentials it
/// carries removed (resolved against `base` only when it holds a `@`).
pub fn redacted_href(base: &Url, href: &str) -> String {
    if !href.contains('@') {
        return href.to_string();
    }
    match base.join(href.trim()) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            strip_userinfo(&mut u);
            u.to_string()
        }
        _ => href.to_string(),
    }
}

/// The base URL links of a page resolve against: its `<base href>` resolved
/// against the page URL when there is one and it is a valid http(s) URL,
/// otherwise the page URL (HTML Living Standard, "document base URL").
pub fn effective_base(page: &Url, base_href: Option<&str>) -> Url {
    base_href
        .map(str::trim)
        .filter(|h| !h.is_empty() && h.len() <= MAX_INPUT_LEN)
        .and_then(|h| page.join(h).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .unwrap_or_else(|| page.clone())
}

/// What [`Canonicalizer::canonicalize_in_place`] does to a query.
enum QueryAction {
    Keep,
    Remove,
    Set,
}

/// The name part of a `name=value` query parameter.
fn param_name(param: &str) -> &str {
    param.split('=').next().unwrap_or(param)
}

fn check_input(input: &str) -> Result<&str, CanonError> {
    let input = input.trim_matches(|c: char| c.is_ascii_whitespace() || c.is_ascii_control());
    if input.is_empty() {
        return Err(CanonError::Empty);
    }
    if input.len() > MAX_INPUT_LEN {
        return Err(CanonError::TooLong {
            len: input.len(),
            max: MAX_INPUT_LEN,
        });
    }
    Ok(input)
}

fn check_scheme(u: &Url) -> Result<(), CanonError> {
    match u.scheme() {
        "http" | "https" => Ok(()),
        other => Err(CanonError::UnsupportedScheme(other.to_string())),
    }
}

fn parse_error(input: &str, reason: url::ParseError) -> CanonError {
    if reason == url::ParseError::RelativeUrlWithoutBase {
        return CanonError::Relative(shorten(input));
    }
    CanonError::Unparseable {
        input: shorten(input),
        reason,
    }
}

fn shorten(s: &str) -> String {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// RFC 3986 §2.3: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
pub fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The value of one hexadecimal digit (either case).
pub fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Normalize the percent-encoding of `s` (RFC 3986 §6.2.2.1–2): escapes of
/// unreserved characters decoded, other escapes' hex upper-cased, a `%` that
/// starts no valid escape written as `%25`. Writes the result to `out` and
/// returns true only if it differs from `s`; when false, `out` is untouched.
pub fn normalize_pct(s: &str, out: &mut String) -> bool {
    let bytes = s.as_bytes();
    let Some(first) = memchr::memchr(b'%', bytes) else {
        return false;
    };
    // Find the first escape that changes before touching `out`.
    let mut i = first;
    let mut needs_change = false;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            match (
                bytes.get(i + 1).and_then(|&b| hex_val(b)),
                bytes.get(i + 2).and_then(|&b| hex_val(b)),
            ) {
                (Some(h), Some(l)) => {
                    let v = h * 16 + l;
                    if is_unreserved(v) || bytes[i + 1].is_ascii_lowercase() || bytes[i + 2].is_ascii_lowercase() {
                        needs_change = true;
                        break;
                    }
                    i += 3;
                    continue;
                }
                _ => {
                    needs_change = true;
                    break;
                }
            }
        }
        i += 1;
    }
    if !needs_change {
        return false;
    }
    let start = out.len();
    out.reserve(s.len());
    // Work on bytes: every byte written is ASCII or copied from a valid UTF-8
    // run of `s`, so the result is valid UTF-8.
    let mut buf = std::mem::take(out).into_bytes();
    buf.extend_from_slice(&bytes[..i]);
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            if let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|&b| hex_val(b)),
                bytes.get(i + 2).and_then(|&b| hex_val(b)),
            ) {
                let v = h * 16 + l;
                if is_unreserved(v) {
                    buf.push(v);
                } else {
                    buf.extend_from_slice(&[b'%', HEX_UPPER[h as usize], HEX_UPPER[l as usize]]);
                }
                i += 3;
            } else {
                buf.extend_from_slice(b"%25");
                i += 1;
            }
        } else {
            buf.push(b);
            i += 1;
        }
    }
    // Only ASCII bytes were replaced or inserted, so UTF-8 is preserved.
    *out = String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    debug_assert!(out.len() >= start);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crawler() -> Canonicalizer {
        Canonicalizer::with_profile(CanonProfile::Crawler)
    }

    fn rfc() -> Canonicalizer {
        Canonicalizer::with_profile(CanonProfile::Rfc3986)
    }

    #[test]
    fn pct_normalization() {
        let mut out = String::new();
        assert!(!normalize_pct("/a/b%2F", &mut out));
        assert!(out.is_empty());
        assert!(normalize_pct("/%7e%41%2f%zz%", &mut out));
        assert_eq!(out, "/~A%2F%25zz%25");
        out.clear();
        assert!(normalize_pct("/%e3%83%84", &mut out));
        assert_eq!(out, "/%E3%83%84");
    }

    #[test]
    fn lone_percent_is_idempotent() {
        let c = rfc();
        let once = c.parse("http://a/%%41b").unwrap();
        assert_eq!(once.as_str(), "http://a/%25Ab");
        assert_eq!(c.canonicalize(&once), once);
    }

    #[test]
    fn crawler_profile_rules() {
        let c = crawler();
        assert_eq!(
            c.parse("http://www.news.test:8080/x/index.html;jsessionid=AB12?sid=9&b=1&a=2&utm_medium=x&")
                .unwrap()
                .as_str(),
            "http://www.news.test:8080/x/?a=2&b=1"
        );
        assert_eq!(c.parse("http://a/x?").unwrap().as_str(), "http://a/x");
        assert_eq!(rfc().parse("http://a/x?").unwrap().as_str(), "http://a/x?");
    }

    #[test]
    fn resolve_rejects_other_schemes() {
        let c = crawler();
        let base = Url::parse("http://a/b/c").unwrap();
        assert_eq!(c.resolve(&base, " ../d#x ").unwrap().as_str(), "http://a/d");
        for href in ["mailto:x@y", "javascript:void(0)", "data:text/html,hi", "ftp://a/"] {
            assert!(
                matches!(c.resolve(&base, href), Err(CanonError::UnsupportedScheme(_))),
                "{href}"
            );
        }
        assert_eq!(c.resolve(&base, "  "), Err(CanonError::Empty));
    }

    #[test]
    fn credentials_are_dropped() {
        let c = crawler();
        let base = Url::parse("http://a/b/c").unwrap();
        assert_eq!(c.parse("http://user:pass@a/x").unwrap().as_str(), "http://a/x");
        assert_eq!(c.resolve(&base, "//u@a/y").unwrap().as_str(), "http://a/y");
        assert_eq!(rfc().parse("https://:p@a:8080/").unwrap().as_str(), "https://a:8080/");
        assert_eq!(redacted_href(&base, "http://user:pass@a/x"), "http://a/x");
        assert_eq!(redacted_href(&base, "/x?mail=a@b"), "/x?mail=a@b");
    }

    #[test]
    fn a_cached_link_keeps_a_control_character_only_a_fragment_protects() {
        let c = crawler();
        let base = Url::parse("http://h.test/").unwrap();
        for _ in 0..2 {
            assert_eq!(c.resolve_link(&base, ":\u{1}").unwrap().as_str(), "http://h.test/:");
            assert_eq!(
                c.resolve_link(&base, ":\u{1}#f").unwrap().as_str(),
                "http://h.test/:%01"
            );
            assert_eq!(c.resolve_link(&base, "a \t").unwrap().as_str(), "http://h.test/a");
            assert_eq!(c.resolve_link(&base, "a #f").unwrap().as_str(), "http://h.test/a%20");
        }
    }

    #[test]
    fn base_href() {
        let page = Url::parse("http://a/b/c").unwrap();
        assert_eq!(effective_base(&page, Some("/x/")).as_str(), "http://a/x/");
        assert_eq!(effective_base(&page, Some("javascript:x")).as_str(), "http://a/b/c");
        assert_eq!(effective_base(&page, None).as_str(), "http://a/b/c");
    }

    /// Pieces of bases and hrefs: directories, file names, queries,
    /// fragments, dot segments, hrefs that depend on the whole base (empty,
    /// `?`, `#`, leading spaces and controls), absolute and scheme-relative
    /// ones, index files the crawler profile strips, percent escapes.
    fn piece() -> impl proptest::strategy::Strategy<Value = &'static str> {
        proptest::sample::select(vec![
            "",
            "a",
            "b/",
            "../",
            "./",
            "/",
            "//x.test/",
            "?q=1",
            "?",
            "#f",
            "#",
            " ",
            "\t",
            "\n",
            "\u{1}",
            "index.html",
            "%7e",
            "%2F",
            ";jsessionid=1",
            "http://y.test/",
            "HTTPS://Y.test/",
            "http:",
            "https:/",
            "mailto:a@b",
            "é",
            "\\",
            ":",
            "@",
            "#a#b",
            "x.html#",
        ])
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The cached resolution equals the plain one, for every href,
        /// after other bases of the same directory, file name or query
        /// filled the cache, and with two canonicalizers in one thread.
        #[test]
        fn resolve_link_equals_resolve(
            bases in proptest::collection::vec(proptest::collection::vec(piece(), 0..5), 1..4),
            hrefs in proptest::collection::vec(proptest::collection::vec(piece(), 0..4), 1..8),
        ) {
            let canons = [crawler(), rfc()];
            for base in &bases {
                let Ok(base) = Url::parse(&format!("http://h.test/{}", base.concat())) else { continue };
                for href in &hrefs {
                    let href = href.concat();
                    for c in &canons {
                        let want = c.resolve(&base, &href).map(|u| u.to_string()).map_err(|e| e.to_string());
                        let got = c.resolve_link(&base, &href).map(|u| u.to_string()).map_err(|e| e.to_string());
                        proptest::prop_assert_eq!(&got, &want, "base {} href {:?}", base, href);
                    }
                }
            }
        }
    }
}
