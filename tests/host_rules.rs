//! Per-host rules (`[[hosts]]`) end to end: a crawl of an in-process server
//! with virtual hosts (`*.test` mapped to 127.0.0.1) that logs every
//! request's host, path, arrival time and the header a rule adds. Checked
//! on that log: one host's larger delay, one host's page cap, one host's
//! header and deny pattern, a rule's proxy; and `explain` naming the rule
//! from the crawl's own `settings.toml`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use parking_lot::Mutex;
use simcrawl::{Crawler, Settings};

#[derive(Debug, Clone)]
struct Hit {
    host: String,
    path: String,
    x_rule: Option<String>,
    at: Instant,
}

type Log = Arc<Mutex<Vec<Hit>>>;

/// Every host serves `/` linking to six pages, `/private/x` and the other
/// hosts' front pages; robots.txt is 404 (allow all).
async fn start() -> (u16, Log) {
    let log: Log = Arc::default();
    let l = log.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, uri: Uri| {
        let l = l.clone();
        async move {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(':')
                .next()
                .unwrap_or("")
                .to_string();
            let path = uri.path().to_string();
            l.lock().push(Hit {
                host: host.clone(),
                path: path.clone(),
                x_rule: headers.get("x-rule").and_then(|v| v.to_str().ok()).map(str::to_string),
                at: Instant::now(),
            });
            if path == "/robots.txt" {
                return StatusCode::NOT_FOUND.into_response();
            }
            let body = if path == "/" {
                let mut links: String = (1..=6).map(|i| format!("<a href=\"/p/{i}\">page {i}</a> ")).collect();
                links.push_str("<a href=\"/private/x\">private</a> ");
                for other in ["slow.test", "fast.test", "www.capped.test"] {
                    links.push_str(&format!("<a href=\"//{other}:{}/\">{other}</a> ", uri_port(&headers)));
                }
                format!("<p>The front page of {host}.</p>{links}")
            } else {
                format!("<p>Page {path} of {host} with words of its own: {path} {host}.</p>")
            };
            (
                [(header::CONTENT_TYPE, "text/html")],
                format!("<html><body>{body}</body></html>"),
            )
                .into_response()
        }
    });
    let port = crate::support::serve(app).await;
    (port, log)
}

/// The port of the Host header (the server's own).
fn uri_port(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(|h| h.rsplit_once(':'))
        .map_or(String::new(), |(_, p)| p.to_string())
}

async fn crawl(settings: Settings, seeds: &[String], dir: &std::path::Path) {
    let mut b = Crawler::builder().settings(settings).out_dir(dir);
    for s in seeds {
        b = b.seed(s.clone());
    }
    let run = b.build().unwrap().run();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the crawl ends within a minute")
        .unwrap();
}

const RULES: &str = r#"
[[hosts]]
pattern = "slow.test"
min_delay_ms = 300
headers = { X-Rule = "slow" }
deny = ["/private/"]

[[hosts]]
pattern = "*.capped.test"
max_pages = 3
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_rules_apply_to_their_hosts_only() {
    let (port, log) = start().await;
    let text = format!("{}\n{RULES}", simcrawl::config::TEST_TOML);
    let settings = Settings::from_layers(&[("rules.toml".into(), &text)], &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let seeds = [format!("http://slow.test:{port}/"), format!("http://fast.test:{port}/")];
    crawl(settings, &seeds, dir.path()).await;
    let hits = log.lock().clone();
    let of = |host: &str| -> Vec<Hit> {
        let mut v: Vec<Hit> = hits.iter().filter(|h| h.host == host).cloned().collect();
        v.sort_by_key(|h| h.at);
        v
    };
    let (slow, fast, capped) = (of("slow.test"), of("fast.test"), of("www.capped.test"));
    // (Not pages: robots.txt, and each seed origin's /sitemap.xml, which
    // these servers do not have.)
    let pages = |v: &[Hit]| {
        v.iter()
            .filter(|h| h.path != "/robots.txt" && h.path != "/sitemap.xml")
            .count()
    };

    // (a) The slow host's requests (robots.txt included) arrive >= 300 ms
    // apart; the fast host's, with no delay, far closer on average.
    assert_eq!(pages(&slow), 7, "/, six pages, no /private/: {slow:?}");
    for pair in slow.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap >= Duration::from_millis(300),
            "slow.test: {} then {} only {gap:?} apart",
            pair[0].path,
            pair[1].path
        );
    }
    assert_eq!(pages(&fast), 8, "/, six pages and /private/: {fast:?}");
    let span = fast.last().unwrap().at - fast[0].at;
    assert!(
        span < Duration::from_millis(300) * (fast.len() as u32 - 1),
        "fast.test is not slowed down: {} requests in {span:?}",
        fast.len()
    );

    // (b) The cap holds for the capped host only.
    assert_eq!(pages(&capped), 3, "max_pages = 3: {capped:?}");

    // (c) The rule's header reaches its host only, robots.txt included.
    assert!(slow.iter().all(|h| h.x_rule.as_deref() == Some("slow")), "{slow:?}");
    assert!(fast.iter().chain(&capped).all(|h| h.x_rule.is_none()));

    // (d) The deny pattern of slow.test leaves the other hosts alone.
    assert!(!slow.iter().any(|h| h.path.starts_with("/private/")));
    assert!(fast.iter().any(|h| h.path == "/private/x"));

    // (e) explain names the rule, reading the crawl's settings.toml.
    let saved = Settings::of_crawl(dir.path()).unwrap();
    assert_eq!(saved.hosts.len(), 2);
    let explain = |url: String| simcrawl::report::explain::explain(dir.path(), &url, &saved).unwrap();
    let text = explain(format!("http://slow.test:{port}/p/1"));
    assert!(
        text.contains("host rule   #1 \"slow.test\" (min_delay_ms=300, deny=[\"/private/\"], headers: x-rule)"),
        "{text}"
    );
    let text = explain(format!("http://www.capped.test:{port}/"));
    assert!(
        text.contains("host rule   #2 \"*.capped.test\" (max_pages=3)"),
        "{text}"
    );
    let text = explain(format!("http://fast.test:{port}/p/2"));
    assert!(
        text.contains("host rule   none of the 2 [[hosts]] rules matches fast.test:"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_proxy_carries_its_hosts_requests() {
    let (port, log) = start().await;
    // No global proxy; `proxied.invalid` does not resolve, so only the
    // rule's proxy (this server, answering absolute-form requests) reaches it.
    let text = format!(
        "[politeness]\nmin_delay_ms = 0\ndelay_factor = 0.0\n[crawl]\nmax_pages = 3\nscope = \"same-host\"\n\
         [[hosts]]\npattern = \"proxied.invalid\"\nproxy = \"http://127.0.0.1:{port}\"\n"
    );
    let settings = Settings::from_layers(&[("proxy.toml".into(), &text)], &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    crawl(settings, &["http://proxied.invalid/".to_string()], dir.path()).await;
    let hits = log.lock().clone();
    let paths: Vec<&str> = hits
        .iter()
        .filter(|h| h.host == "proxied.invalid")
        .map(|h| h.path.as_str())
        .collect();
    assert!(
        paths.contains(&"/robots.txt"),
        "robots.txt through the proxy too: {hits:?}"
    );
    assert!(
        paths.contains(&"/") && paths.iter().any(|p| p.starts_with("/p/")),
        "{hits:?}"
    );
}
