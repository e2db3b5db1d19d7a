//! Fetching (pipeline: after politeness, before canonicalization checks and
//! parsing): the [`Fetcher`] trait, its reqwest implementation
//! ([`HttpFetcher`]), body and decompression caps, charset decoding
//! ([`decode_text`]), and redirects as explicit hops ([`RedirectChain`]).
//!
//! A [`Fetcher`] performs exactly ONE HTTP request: it never follows
//! redirects (the crawl loop does, hop by hop, so that every hop is
//! canonicalized, checked against robots.txt and the seen-set, and recorded).
//! Per-URL outcomes (404, too large, not HTML) are data in [`FetchResponse`];
//! only a request that produced no response at all is a [`FetchError`].

mod decode;
mod http;
mod redirect;
pub mod testing;

use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use url::Url;

pub use decode::decode_text;
pub use http::{HostResolver, HttpFetcher};
pub use redirect::{RedirectChain, RedirectError};

/// One HTTP response, as far as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// The URL requested (redirects are not followed, so also the URL answered).
    pub url: Url,
    /// HTTP status code.
    pub status: u16,
    /// Media type of `Content-Type`, lower-cased, without parameters.
    pub content_type: Option<String>,
    /// The `charset` parameter of `Content-Type`, as sent (unvalidated).
    pub charset: Option<String>,
    /// The raw `Location` header (resolve it with [`RedirectChain`]).
    pub location: Option<String>,
    /// `Retry-After`, parsed (delay-seconds or HTTP-date), uncapped.
    pub retry_after: Option<Duration>,
    /// The `X-Robots-Tag` header(s), joined with ", ".
    pub x_robots_tag: Option<String>,
    /// Every response header as received (name lower-cased, value as
    /// bytes), in order, when the fetcher keeps them (`HttpFetcher` does
    /// when `output.warc` is on, for the WARC response records); else empty.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, decompressed, at most `fetch.max_body_bytes` bytes.
    pub body: Vec<u8>,
    /// The body (or its decompressed form) exceeded `fetch.max_body_bytes`:
    /// reading stopped; record the page as `too_large`.
    pub truncated: bool,
    /// Time from sending the request to the end of the body (or of reading).
    pub elapsed: Duration,
    /// The `ETag` header, as sent (kept for conditional revisits).
    pub etag: Option<String>,
    /// The `Last-Modified` header, as sent (kept for conditional revisits).
    pub last_modified: Option<String>,
}

impl FetchResponse {
    /// A 3xx status (a redirect hop when `location` is present).
    pub fn is_redirect(&self) -> bool {
        (300..400).contains(&self.status)
    }

    /// Whether the content type is one of `parse_types` (lower-cased media
    /// types, `fetch.parse_content_types`). A missing content type is
    /// treated as `text/html`, as browsers do for documents.
    pub fn is_parseable(&self, parse_types: &[String]) -> bool {
        let ct = self.content_type.as_deref().unwrap_or("text/html");
        parse_types.iter().any(|t| t == ct)
    }

    /// The body decoded to UTF-8 (see [`decode_text`]).
    pub fn text(&self) -> (std::borrow::Cow<'_, str>, &'static str) {
        decode_text(&self.body, self.charset.as_deref())
    }
}

/// Why a request produced no response. A per-URL outcome (recorded as
/// `error` in the crawl log), never a reason to stop the crawl.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The connect or total timeout passed.
    #[error("timeout")]
    Timeout,
    /// DNS resolution, TCP connect or TLS failed.
    #[error("connect failed: {0}")]
    Connect(String),
    /// The response headers or body could not be read or decoded.
    #[error("reading the response failed: {0}")]
    Body(String),
    /// The URL cannot be fetched (scheme other than http/https, no host).
    #[error("unsupported URL: {0}")]
    Unsupported(String),
    /// Anything else the HTTP client reported.
    #[error("request failed: {0}")]
    Other(String),
    /// The HTTP client could not be built from the settings.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// The HTTP seam: one request, one response. Implementations: [`HttpFetcher`]
/// (reqwest) and [`testing::StaticFetcher`] (canned responses for tests).
///
/// The method returns a boxed future so that `Arc<dyn Fetcher>` works.
pub trait Fetcher: Send + Sync {
    /// GET `url` once; redirects are returned, not followed.
    fn fetch<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<FetchResponse, FetchError>>;

    /// GET `url` once, conditionally: `If-None-Match` with `v.etag` and
    /// `If-Modified-Since` with `v.last_modified`, each when present (a
    /// revisit; the answer may be 304 Not Modified). A fetcher without
    /// conditional requests does a plain [`Fetcher::fetch`].
    fn fetch_conditional<'a>(
        &'a self,
        url: &'a Url,
        v: &'a Validators,
    ) -> BoxFuture<'a, Result<FetchResponse, FetchError>> {
        let _ = v;
        self.fetch(url)
    }
}

/// The validators of a conditional request: the server's own `ETag` and
/// `Last-Modified` values from the previous fetch of the same URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// Sent as `If-None-Match`.
    pub etag: Option<String>,
    /// Sent as `If-Modified-Since`.
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether there is anything to send.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// Split a `Content-Type` header value into the lower-cased media type and
/// the `charset` parameter (quotes removed). `None` parts when absent or empty.
pub fn parse_content_type(value: &str) -> (Option<String>, Option<String>) {
    let mut parts = value.split(';');
    let media = parts
        .next()
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        (!v.is_empty()).then(|| v.to_string())
    });
    (media, charset)
}

/// Parse `Retry-After`: delay-seconds, or an HTTP-date (a date in the past
/// gives zero). `None` when it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_parts() {
        assert_eq!(
            parse_content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            (Some("text/html".into()), Some("ISO-8859-1".into()))
        );
        assert_eq!(parse_content_type("text/plain"), (Some("text/plain".into()), None));
        assert_eq!(parse_content_type(" ; charset="), (None, None));
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after(" 120 ", now), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }

    #[test]
    fn parseable_types() {
        let types = vec!["text/html".to_string(), "text/plain".to_string()];
        let mut r = testing::response("http://a.test/", 200, "");
        assert!(r.is_parseable(&types));
        r.content_type = Some("image/png".into());
        assert!(!r.is_parseable(&types));
        r.content_type = None;
        assert!(r.is_parseable(&types));
    }
}
