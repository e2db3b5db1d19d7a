//! Registrable domains end to end (`[crawl] scope = "same-domain"`, Public
//! Suffix List): a crawl of an in-process server answering for virtual
//! hosts under public suffixes (`*.co.uk`, `*.github.io` mapped to
//! 127.0.0.1 by `[fetch] resolve`), checked on the server's request log.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use parking_lot::Mutex;
use simcrawl::{Crawler, Settings};

/// (host, path) per request.
type Log = Arc<Mutex<Vec<(String, String)>>>;

/// The hosts each front page links to (their `/`), and a page of its own.
fn links_of(host: &str) -> &'static [&'static str] {
    match host {
        "www.bbc.co.uk" => &["news.bbc.co.uk", "bbc.co.uk", "other.co.uk", "a.github.io"],
        "alice.github.io" => &["bob.github.io", "www.alice.github.io"],
        _ => &[],
    }
}

/// Every host serves `/` (linking to `/own` and the hosts of [`links_of`])
/// and `/own`; robots.txt is 404 (allow all), and there is no sitemap.
async fn start() -> (u16, Log) {
    let log: Log = Arc::default();
    let l = log.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, uri: Uri| {
        let l = l.clone();
        async move {
            let authority = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let (host, port) = authority.rsplit_once(':').unwrap_or((&authority, ""));
            let path = uri.path().to_string();
            l.lock().push((host.to_string(), path.clone()));
            if path == "/robots.txt" || path == "/sitemap.xml" {
                return StatusCode::NOT_FOUND.into_response();
            }
            let mut body = format!("<p>Page {path} of {host}, with words of its own: {host} {path}.</p>");
            if path == "/" {
                body.push_str("<a href=\"/own\">own</a> ");
                for other in links_of(host) {
                    body.push_str(&format!("<a href=\"http://{other}:{port}/\">{other}</a> "));
                }
            }
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

/// Crawl `seed` with `scope` and return the hosts whose `/` was requested,
/// sorted.
async fn crawl(port: u16, log: &Log, scope: &str, seed: &str) -> Vec<String> {
    log.lock().clear();
    // config/test.toml (politeness on, fixed delays off) with this crawl's
    // scope, and the server's virtual hosts resolving to it.
    let sets = [
        format!("crawl.scope=\"{scope}\""),
        "crawl.max_pages=50".into(),
        "fetch.resolve=[\"*.co.uk=127.0.0.1\", \"*.github.io=127.0.0.1\"]".into(),
    ];
    let settings = Settings::test_web(&sets).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = Crawler::builder()
        .settings(settings)
        .seed(format!("http://{seed}:{port}/"))
        .out_dir(dir.path())
        .build()
        .unwrap()
        .run();
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the crawl ends within 30 s")
        .unwrap();
    let mut hosts: Vec<String> = log
        .lock()
        .iter()
        .filter(|(_, path)| path == "/")
        .map(|(host, _)| host.clone())
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_domain_scope_follows_the_public_suffix_list() {
    let (port, log) = start().await;

    // www.bbc.co.uk is under bbc.co.uk (co.uk is a public suffix): its
    // sibling and its parent are in scope; other.co.uk and a.github.io are
    // other registrable domains.
    let hosts = crawl(port, &log, "same-domain", "www.bbc.co.uk").await;
    assert_eq!(
        hosts,
        ["bbc.co.uk", "news.bbc.co.uk", "www.bbc.co.uk"],
        "{:?}",
        log.lock()
    );
    assert!(
        !log.lock().iter().any(|(h, _)| h == "other.co.uk" || h == "a.github.io"),
        "not even robots.txt of an out-of-scope host: {:?}",
        log.lock()
    );
    // The same links with scope = "any": the two other domains are
    // reachable, so only the scope kept them out above.
    let hosts = crawl(port, &log, "any", "www.bbc.co.uk").await;
    assert_eq!(
        hosts,
        [
            "a.github.io",
            "bbc.co.uk",
            "news.bbc.co.uk",
            "other.co.uk",
            "www.bbc.co.uk"
        ]
    );

    // github.io is a public suffix (the list's private section): each user
    // site is its own registrable domain, so bob.github.io is out of scope
    // for alice.github.io, and alice's own subdomain is in.
    let hosts = crawl(port, &log, "same-domain", "alice.github.io").await;
    assert_eq!(hosts, ["alice.github.io", "www.alice.github.io"], "{:?}", log.lock());
    assert!(!log.lock().iter().any(|(h, _)| h == "bob.github.io"));

    // By contrast, same-host keeps to the seed's host alone.
    let hosts = crawl(port, &log, "same-host", "www.bbc.co.uk").await;
    assert_eq!(hosts, ["www.bbc.co.uk"]);
}
