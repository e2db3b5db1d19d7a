//! The reqwest [`Fetcher`]: rustls, gzip/brotli/deflate, the configured
//! User-Agent, connect and total timeouts, a cap on (decompressed) body bytes,
//! no automatic redirects, an optional host-name → IP map for test webs, and
//! the request settings of `[[hosts]]` rules (headers; a client of its own
//! for a rule's proxy or cookie setting).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use url::Url;

use super::{parse_content_type, parse_retry_after, FetchError, FetchResponse, Fetcher, Validators};
use crate::config::{HostRuleCache, Settings};

/// The production [`Fetcher`]. Cheap to share (`Arc<HttpFetcher>` or
/// `Arc<dyn Fetcher>`): one connection pool for the whole crawl, plus one
/// per `[[hosts]]` rule that sets its own `proxy` or `cookies`.
#[derive(Debug, Clone)]
pub struct HttpFetcher {
    client: reqwest::Client,
    max_body_bytes: u64,
    /// Keep every response header (`output.warc`).
    keep_headers: bool,
    /// The `[[hosts]]` rules (each host's looked up once) and, per rule,
    /// what its requests carry.
    host_rules: Arc<HostRuleCache>,
    per_rule: Arc<[RuleRequest]>,
}

/// What requests to the hosts of one `[[hosts]]` rule carry.
#[derive(Debug)]
struct RuleRequest {
    /// Its own client (proxy or cookie jar), or `None` for the crawl's.
    client: Option<reqwest::Client>,
    /// Its headers, over the `[fetch]` ones of the same name.
    headers: HeaderMap,
}

/// Which proxy a client uses.
enum ProxyChoice<'a> {
    /// `[fetch] proxy`, or the environment's when that is empty.
    Global,
    /// A rule's `proxy`.
    Url(&'a Url),
    /// A rule's `proxy = ""`: connect directly.
    Direct,
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, FetchError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| FetchError::Client(format!("header {name}: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| FetchError::Client(format!("header {name}: {e}")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// A client from `[crawl]` (User-Agent) and `[fetch]` (timeouts, `resolve`,
/// headers) with the given proxy and cookie setting.
fn build_client(settings: &Settings, proxy: ProxyChoice, cookies: bool) -> Result<reqwest::Client, FetchError> {
    let f = &settings.fetch;
    let mut builder = reqwest::Client::builder()
        .user_agent(settings.crawl.user_agent_header())
        .connect_timeout(f.connect_timeout)
        .timeout(f.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .gzip(true)
        .brotli(true)
        .deflate(true);
    if !f.resolve.is_empty() {
        // A mapped test web is local: no proxy from the environment.
        builder = builder
            .dns_resolver(Arc::new(HostResolver::new(f.resolve.clone())))
            .no_proxy();
    }
    let proxy = match proxy {
        ProxyChoice::Global => f.proxy.as_ref(),
        ProxyChoice::Url(u) => Some(u),
        ProxyChoice::Direct => {
            builder = builder.no_proxy();
            None
        }
    };
    if let Some(proxy) = proxy {
        let proxy = reqwest::Proxy::all(proxy.as_str()).map_err(|e| FetchError::Client(error_chain(&e)))?;
        builder = builder.proxy(proxy);
    }
    builder = builder.default_headers(header_map(&f.headers)?).cookie_store(cookies);
    builder.build().map_err(|e| FetchError::Client(error_chain(&e)))
}

impl HttpFetcher {
    /// Build the client from `[crawl]` (User-Agent) and `[fetch]` (timeouts,
    /// caps, `resolve`, headers, proxy, cookies), and one more for each
    /// `[[hosts]]` rule with its own `proxy` or `cookies`. Redirects are never
    /// followed by the client. With `output.warc` on, responses carry all
    /// their headers ([`FetchResponse::headers`]).
    pub fn new(settings: &Settings) -> Result<Self, FetchError> {
        let f = &settings.fetch;
        let client = build_client(settings, ProxyChoice::Global, f.cookies)?;
        let mut per_rule = Vec::with_capacity(settings.hosts.len());
        for rule in settings.hosts.rules() {
            let client = if rule.own_client(f.cookies) {
                let proxy = match &rule.proxy {
                    None => ProxyChoice::Global,
                    Some(Some(u)) => ProxyChoice::Url(u),
                    Some(None) => ProxyChoice::Direct,
                };
                Some(build_client(settings, proxy, rule.cookies.unwrap_or(f.cookies))?)
            } else {
                None
            };
            per_rule.push(RuleRequest {
                client,
                headers: header_map(&rule.headers)?,
            });
        }
        Ok(HttpFetcher {
            client,
            max_body_bytes: f.max_body_bytes,
            keep_headers: settings.output.warc,
            host_rules: Arc::new(HostRuleCache::new(settings.hosts.clone())),
            per_rule: per_rule.into(),
        })
    }

    /// The request for `target`: through its host's rule's client and with
    /// its headers, if a `[[hosts]]` rule matches.
    fn request(&self, target: Url) -> reqwest::RequestBuilder {
        if self.per_rule.is_empty() {
            return self.client.get(target);
        }
        let rule = crate::host::host_key_of_serialized(target.as_str())
            .and_then(|h| self.host_rules.index(h))
            .and_then(|i| self.per_rule.get(i));
        match rule {
            None => self.client.get(target),
            Some(r) => r
                .client
                .as_ref()
                .unwrap_or(&self.client)
                .get(target)
                .headers(r.headers.clone()),
        }
    }

    async fn get(&self, url: &Url, validators: Option<&Validators>) -> Result<FetchResponse, FetchError> {
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(FetchError::Unsupported(url.to_string()));
        }
        let started = tokio::time::Instant::now();
        // Credentials never go out, whatever URL a caller passes.
        let mut target = url.clone();
        crate::canon::strip_userinfo(&mut target);
        let mut request = self.request(target);
        if let Some(v) = validators {
            // A value that is not a valid header value (a hostile ETag) is
            // not sent: the request is then unconditional.
            let header = |v: &Option<String>| {
                v.as_deref()
                    .and_then(|s| reqwest::header::HeaderValue::from_str(s).ok())
            };
            if let Some(etag) = header(&v.etag) {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(date) = header(&v.last_modified) {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, date);
            }
        }
        let mut resp = request.send().await.map_err(map_error)?;
        let status = resp.status().as_u16();
        let headers = resp.headers();
        // Single-valued headers: the first value counts (two `Location`s
        // are never joined into one URL).
        let (content_type, charset) = header_first(headers, CONTENT_TYPE.as_str())
            .map(|v| parse_content_type(&v))
            .unwrap_or((None, None));
        let location = header_first(headers, LOCATION.as_str());
        let retry_after =
            header_first(headers, RETRY_AFTER.as_str()).and_then(|v| parse_retry_after(&v, SystemTime::now()));
        let x_robots_tag = header_str(headers, "x-robots-tag");
        let etag = header_first(headers, reqwest::header::ETAG.as_str());
        let last_modified = header_first(headers, reqwest::header::LAST_MODIFIED.as_str());
        let all_headers = if self.keep_headers {
            headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
                .collect()
        } else {
            Vec::new()
        };

        // With Content-Encoding, reqwest drops Content-Length and hands out
        // decompressed chunks: the cap below then bounds decompressed bytes,
        // so a compression bomb is cut off after `max_body_bytes`.
        let cap = self.max_body_bytes;
        // Sized once from Content-Length (up to 1 MiB: a server may claim
        // more than it sends), not grown chunk by chunk.
        let mut body = Vec::with_capacity(
            resp.content_length()
                .filter(|&len| len <= cap)
                .unwrap_or(0)
                .min(1 << 20) as usize,
        );
        let mut truncated = false;
        if resp.content_length().is_some_and(|len| len > cap) {
            truncated = true;
        } else {
            while let Some(chunk) = resp.chunk().await.map_err(map_error)? {
                let room = (cap as usize).saturating_sub(body.len());
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
        }
        Ok(FetchResponse {
            url: url.clone(),
            status,
            content_type,
            charset,
            location,
            retry_after,
            x_robots_tag,
            headers: all_headers,
            body,
            truncated,
            elapsed: started.elapsed(),
            etag,
            last_modified,
        })
    }
}

impl Fetcher for HttpFetcher {
    fn fetch<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<FetchResponse, FetchError>> {
        Box::pin(self.get(url, None))
    }

    fn fetch_conditional<'a>(
        &'a self,
        url: &'a Url,
        v: &'a Validators,
    ) -> BoxFuture<'a, Result<FetchResponse, FetchError>> {
        Box::pin(self.get(url, Some(v)))
    }
}

/// The first value of header `name`, when it is valid text: for headers
/// that hold one value (`Location`, `Content-Type`, `Retry-After`).
pub fn header_first(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// All values of header `name` that are valid text, joined with ", ".
fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

fn map_error(e: reqwest::Error) -> FetchError {
    if e.is_timeout() {
        FetchError::Timeout
    } else if e.is_connect() {
        FetchError::Connect(error_chain(&e))
    } else if e.is_body() || e.is_decode() {
        FetchError::Body(error_chain(&e))
    } else {
        FetchError::Other(error_chain(&e))
    }
}

/// Resolves host names by the `fetch.resolve` rules ("HOST" exactly, or
/// "*.SUFFIX" for every name ending in ".SUFFIX"), falling back to the
/// system resolver. reqwest's own `resolve()` takes exact names only, hence
/// this type. The port of the URL is kept (the mapped address has port 0).
#[derive(Debug, Clone)]
pub struct HostResolver {
    rules: Vec<(String, IpAddr)>,
}

impl HostResolver {
    /// Rules as in `FetchSettings::resolve` (patterns lower-cased).
    pub fn new(rules: Vec<(String, IpAddr)>) -> Self {
        HostResolver { rules }
    }

    /// The address a rule maps `host` to; the first matching rule wins.
    pub fn lookup(&self, host: &str) -> Option<IpAddr> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.rules.iter().find_map(|(pattern, ip)| {
            let hit = match pattern.strip_prefix("*.") {
                Some(suffix) => {
                    host.len() > suffix.len() + 1 && host.ends_with(suffix) && {
                        host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
                    }
                }
                None => host == *pattern,
            };
            hit.then_some(*ip)
        })
    }
}

impl Resolve for HostResolver {
    fn resolve(&self, name: Name) -> Resolving {
        if let Some(ip) = self.lookup(name.as_str()) {
            let addrs: Addrs = Box::new(std::iter::once(SocketAddr::new(ip, 0)));
            return Box::pin(std::future::ready(Ok(addrs)));
        }
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_rules() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.1".parse().unwrap();
        let r = HostResolver::new(vec![("exact.example".into(), other), ("*.test".into(), local)]);
        assert_eq!(r.lookup("a.test"), Some(local));
        assert_eq!(r.lookup("Mirror-A.Test"), Some(local));
        assert_eq!(r.lookup("deep.sub.test."), Some(local));
        assert_eq!(r.lookup("test"), None);
        assert_eq!(r.lookup("atest"), None);
        assert_eq!(r.lookup("exact.example"), Some(other));
        assert_eq!(r.lookup("sub.exact.example"), None);
    }

    #[test]
    fn hostile_two_location_headers_take_the_first() {
        let mut h = HeaderMap::new();
        h.append(LOCATION, "/target-a".parse().unwrap());
        h.append(LOCATION, "/target-b".parse().unwrap());
        assert_eq!(header_first(&h, LOCATION.as_str()).as_deref(), Some("/target-a"));
        h.append("x-robots-tag", "noindex".parse().unwrap());
        h.append("x-robots-tag", "nofollow".parse().unwrap());
        assert_eq!(header_str(&h, "x-robots-tag").as_deref(), Some("noindex, nofollow"));
        assert_eq!(header_first(&h, "retry-after"), None);
    }

    #[test]
    fn client_builds_from_defaults_and_test_settings() {
        assert!(HttpFetcher::new(&Settings::default()).is_ok());
        assert!(HttpFetcher::new(&Settings::test_web(&[]).unwrap()).is_ok());
    }
}
