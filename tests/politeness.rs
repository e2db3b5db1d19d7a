//! Politeness + HttpFetcher against a local server with virtual hosts
//! (`*.test` mapped to 127.0.0.1 by the fetcher's resolver). The server logs
//! every request's start and end; the assertions are on that log: spacing per
//! host, one request in flight per host, no disallowed URL requested,
//! Retry-After honoured, a host with a 503 robots.txt not crawled, and a
//! redirect loop, an oversized body and a gzip bomb recorded, not fatal.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use simcrawl::fetch::{FetchError, FetchResponse, Fetcher, HttpFetcher, RedirectChain, RedirectError};
use simcrawl::politeness::{NotReady, Politeness, RequestOutcome, RetryPolicy, RobotsVerdict};
use simcrawl::Settings;
use url::Url;

const MAX_BODY: usize = 64 * 1024;

#[derive(Debug, Clone)]
struct Hit {
    host: String,
    path: String,
    user_agent: String,
    start: Instant,
    end: Instant,
}

#[derive(Default)]
struct Server {
    log: Mutex<Vec<Hit>>,
    limited_hits: Mutex<u32>,
    bomb: Vec<u8>,
}

fn gzip_bomb() -> Vec<u8> {
    // 128 MiB of zeros compress to ~128 KiB: 2048 times the body cap.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..128 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap()
}

async fn respond(server: &Server, host: &str, authority: &str, path: &str) -> Response {
    let html = |s: &str| ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], s.to_string()).into_response();
    let redirect = |to: &str| (StatusCode::FOUND, [(header::LOCATION, to.to_string())]).into_response();
    match (host, path) {
        ("a.test", "/robots.txt") => "User-agent: *\nDisallow: /private\n".into_response(),
        ("b.test", "/robots.txt") => "User-agent: simcrawl\nCrawl-delay: 0.3\nDisallow: /no\n".into_response(),
        ("c.test", "/robots.txt") => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        (_, "/robots.txt") => StatusCode::NOT_FOUND.into_response(),
        ("d.test", "/limited") => {
            let first = {
                let mut n = server.limited_hits.lock();
                *n += 1;
                *n == 1
            };
            if first {
                (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "1")]).into_response()
            } else {
                html("<p>finally</p>")
            }
        }
        ("e.test", "/loop/1") => redirect("/loop/2"),
        ("e.test", "/loop/2") => redirect(&format!("http://{authority}/loop/1")),
        ("e.test", "/redir") => redirect(&format!("http://{}/p/7", authority.replace("e.test", "a.test"))),
        ("e.test", "/big") => html(&"x".repeat(MAX_BODY * 3)),
        ("e.test", "/bomb") => (
            [(header::CONTENT_TYPE, "text/html"), (header::CONTENT_ENCODING, "gzip")],
            Body::from(server.bomb.clone()),
        )
            .into_response(),
        (_, p) if p.starts_with("/slow/") => {
            // Slower than the 100 ms delay: only the in-flight limit keeps these apart.
            tokio::time::sleep(Duration::from_millis(250)).await;
            html("<p>slow</p>")
        }
        (_, p) if p.starts_with("/p/") => {
            tokio::time::sleep(Duration::from_millis(10)).await;
            html(&format!("<title>{host}{p}</title>"))
        }
        // Any other page (e.g. /private/x) exists too: robots.txt is what keeps the crawler out.
        _ => html("<p>other</p>"),
    }
}

async fn start_server() -> (u16, Arc<Server>) {
    let server = Arc::new(Server {
        bomb: gzip_bomb(),
        ..Server::default()
    });
    let s = server.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, uri: Uri| {
        let s = s.clone();
        async move {
            let start = Instant::now();
            let host_header = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
            let host = host_header.split(':').next().unwrap_or("").to_string();
            let path = uri.path().to_string();
            let user_agent = headers
                .get(header::USER_AGENT)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_string();
            let resp = respond(&s, &host, host_header, &path).await;
            s.log.lock().push(Hit {
                host,
                path,
                user_agent,
                start,
                end: Instant::now(),
            });
            resp
        }
    });
    let port = crate::support::serve(app).await;
    (port, server)
}

/// What the mini crawl loop below made of one URL.
#[derive(Debug)]
enum Outcome {
    Fetched { chain: Vec<Url>, resp: Box<FetchResponse> },
    Disallowed,
    RobotsUnavailable,
    Skipped(NotReady),
    Redirect(RedirectError),
    Error(FetchError),
}

/// The sequence the crawl engine runs per URL (see docs/ARCHITECTURE.md):
/// robots check → permit → one fetch → finish → retry or follow a redirect.
async fn crawl_one(pol: &Politeness, fetcher: &dyn Fetcher, retry: &RetryPolicy, url: Url) -> Outcome {
    let mut chain = RedirectChain::new(url, 10);
    let mut retries = 0;
    loop {
        let current = chain.current().clone();
        match pol.check(fetcher, &current).await {
            RobotsVerdict::Allow => {}
            RobotsVerdict::Disallow => return Outcome::Disallowed,
            RobotsVerdict::Unavailable { .. } => return Outcome::RobotsUnavailable,
        }
        let permit = match pol.acquire(&current).await {
            Ok(p) => p,
            Err(e) => return Outcome::Skipped(e),
        };
        let result = fetcher.fetch(&current).await;
        let outcome = RequestOutcome::of(&result);
        permit.finish(&outcome);
        if let Some(wait) = retry.should_retry(&outcome, retries) {
            retries += 1;
            tokio::time::sleep(wait).await;
            continue;
        }
        match result {
            Err(e) => return Outcome::Error(e),
            Ok(r) if r.is_redirect() => {
                if let Err(e) = chain.next_hop(r.location.as_deref()) {
                    return Outcome::Redirect(e);
                }
                retries = 0;
            }
            Ok(resp) => {
                return Outcome::Fetched {
                    chain: chain.hops().to_vec(),
                    resp: Box::new(resp),
                }
            }
        }
    }
}

fn settings() -> Settings {
    let mut s = Settings::test_web(&[]).unwrap();
    s.politeness.min_delay = Duration::from_millis(100);
    s.politeness.delay_factor = 0.0;
    s.politeness.retry_after_cap = Duration::from_secs(5);
    s.politeness.backoff_base = Duration::from_secs(1);
    s.fetch.max_body_bytes = MAX_BODY as u64;
    s.fetch.resolve = vec![("*.test".into(), "127.0.0.1".parse().unwrap())];
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn politeness_holds_against_a_local_server() {
    let (port, server) = start_server().await;
    let s = settings();
    let pol = Politeness::new(&s);
    let fetcher: Arc<dyn Fetcher> = Arc::new(HttpFetcher::new(&s).unwrap());
    let retry = RetryPolicy::new(&s.politeness);
    let u = |host: &str, path: &str| format!("http://{host}:{port}{path}");

    let mut urls = Vec::new();
    for i in 0..8 {
        urls.push(u("a.test", &format!("/p/{i}")));
    }
    urls.extend([u("a.test", "/private/1"), u("a.test", "/private/2")]);
    for i in 0..5 {
        urls.push(u("b.test", &format!("/p/{i}")));
    }
    urls.push(u("b.test", "/no/1"));
    for i in 0..3 {
        urls.push(u("c.test", &format!("/p/{i}")));
    }
    urls.extend([u("d.test", "/limited"), u("d.test", "/p/0"), u("d.test", "/p/1")]);
    urls.extend([
        u("e.test", "/loop/1"),
        u("e.test", "/big"),
        u("e.test", "/bomb"),
        u("e.test", "/redir"),
    ]);
    urls.extend((0..3).map(|i| u("f.test", &format!("/slow/{i}"))));
    let queue = Arc::new(Mutex::new(urls.into_iter().collect::<VecDeque<_>>()));
    let results = Arc::new(Mutex::new(HashMap::new()));

    let t0 = Instant::now();
    let workers: Vec<_> = (0..10)
        .map(|_| {
            let (pol, fetcher, retry) = (pol.clone(), fetcher.clone(), retry.clone());
            let (queue, results) = (queue.clone(), results.clone());
            tokio::spawn(async move {
                loop {
                    let Some(next) = queue.lock().pop_front() else { break };
                    let url = Url::parse(&next).unwrap();
                    let outcome = crawl_one(&pol, fetcher.as_ref(), &retry, url).await;
                    results.lock().insert(next, outcome);
                }
            })
        })
        .collect();
    for w in workers {
        tokio::time::timeout(Duration::from_secs(20), w).await.unwrap().unwrap();
    }
    let took = t0.elapsed();
    let log = server.log.lock().clone();
    let results = results.lock();
    let outcome = |host: &str, path: &str| &results[&u(host, path)];

    for (url, o) in results.iter() {
        match o {
            Outcome::Error(e) => panic!("{url}: {e}"),
            Outcome::Skipped(e) => panic!("{url}: {e}"),
            _ => {}
        }
    }
    match outcome("e.test", "/redir") {
        Outcome::Fetched { chain, resp } => {
            let hops: Vec<String> = chain.iter().map(|h| h.to_string()).collect();
            assert_eq!(hops, [u("e.test", "/redir"), u("a.test", "/p/7")]);
            assert_eq!(resp.status, 200);
        }
        other => panic!("redir: {other:?}"),
    }

    // Per host: starts spaced by the delay (Crawl-delay for b.test), never two in flight.
    let mut by_host: HashMap<&str, Vec<&Hit>> = HashMap::new();
    for h in &log {
        by_host.entry(h.host.as_str()).or_default().push(h);
        assert!(h.user_agent.starts_with("simcrawl/0"), "{}", h.user_agent);
    }
    for (host, hits) in by_host.iter_mut() {
        hits.sort_by_key(|h| h.start);
        let delay = if *host == "b.test" { 300 } else { 100 };
        for pair in hits.windows(2) {
            let gap = pair[1].start - pair[0].start;
            assert!(
                gap >= Duration::from_millis(delay),
                "{host}: {} then {} only {gap:?} apart",
                pair[0].path,
                pair[1].path
            );
            assert!(pair[1].start >= pair[0].end, "{host}: two requests in flight");
        }
    }
    assert_eq!(
        by_host["a.test"].len(),
        10,
        "robots.txt + 8 pages + /p/7 again via e.test/redir"
    );
    assert_eq!(by_host["b.test"].len(), 6, "robots.txt + 5 pages");
    assert_eq!(by_host["f.test"].len(), 4, "robots.txt + 3 slow pages");

    // Disallowed URLs never requested; the 503-robots host not crawled.
    assert!(!log
        .iter()
        .any(|h| h.path.starts_with("/private") || h.path.starts_with("/no")));
    assert!(matches!(outcome("a.test", "/private/1"), Outcome::Disallowed));
    assert!(matches!(outcome("b.test", "/no/1"), Outcome::Disallowed));
    let c_paths: Vec<&str> = by_host["c.test"].iter().map(|h| h.path.as_str()).collect();
    assert_eq!(c_paths, ["/robots.txt"]);
    assert!(matches!(outcome("c.test", "/p/0"), Outcome::RobotsUnavailable));

    // 429 with Retry-After: 1 retried only after a second.
    let limited: Vec<&&Hit> = by_host["d.test"].iter().filter(|h| h.path == "/limited").collect();
    assert_eq!(limited.len(), 2);
    assert!(limited[1].start - limited[0].end >= Duration::from_secs(1));
    assert!(matches!(outcome("d.test", "/limited"), Outcome::Fetched { resp, .. } if resp.status == 200));

    // The loop, the oversized body and the gzip bomb are outcomes, not failures.
    match outcome("e.test", "/loop/1") {
        Outcome::Redirect(RedirectError::Loop { url }) => assert!(url.ends_with("/loop/1"), "{url}"),
        other => panic!("loop: {other:?}"),
    }
    match outcome("e.test", "/big") {
        Outcome::Fetched { resp, .. } => assert!(resp.truncated && resp.body.len() <= MAX_BODY),
        other => panic!("big: {other:?}"),
    }
    match outcome("e.test", "/bomb") {
        Outcome::Fetched { resp, .. } => {
            assert!(resp.truncated, "bomb not cut off");
            assert_eq!(resp.body.len(), MAX_BODY);
            assert!(resp.body.iter().all(|&b| b == 0), "decompressed, then cut off");
        }
        other => panic!("bomb: {other:?}"),
    }
    // The b.test pages alone need 5 x 300 ms after robots.txt.
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[tokio::test]
async fn redirects_are_returned_not_followed_and_hosts_resolve_locally() {
    let (port, server) = start_server().await;
    let s = settings();
    let fetcher = HttpFetcher::new(&s).unwrap();
    let url = Url::parse(&format!("http://e.test:{port}/loop/2")).unwrap();
    let resp = fetcher.fetch(&url).await.unwrap();
    assert_eq!(resp.status, 302);
    assert_eq!(
        resp.location.as_deref(),
        Some(format!("http://e.test:{port}/loop/1").as_str())
    );
    assert_eq!(server.log.lock().len(), 1, "the client did not follow the redirect");

    let page = Url::parse(&format!("http://a.test:{port}/p/1")).unwrap();
    let resp = fetcher.fetch(&page).await.unwrap();
    assert_eq!((resp.status, resp.content_type.as_deref()), (200, Some("text/html")));
    assert_eq!(resp.charset.as_deref(), Some("utf-8"));
    assert_eq!(resp.text().0, format!("<title>a.test/p/1</title>"));

    // Nothing listens on port 9 of 127.0.0.1: a connect error, not a panic.
    let closed = Url::parse("http://a.test:9/").unwrap();
    assert!(matches!(fetcher.fetch(&closed).await, Err(FetchError::Connect(_))));
    let ftp = Url::parse("ftp://a.test/").unwrap();
    assert!(matches!(fetcher.fetch(&ftp).await, Err(FetchError::Unsupported(_))));
}
