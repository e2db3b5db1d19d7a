//! Request settings end to end (`[fetch] headers`, `accept_language`,
//! `cookies`, `proxy`): a crawl of an in-process server that records what
//! each request carried.

use std::sync::Arc;

use axum::http::{header, HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use simcrawl::{Crawler, Settings};

/// What the server saw: (path, From, Accept-Language, Cookie) per request.
type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>, Option<String>)>>>;

fn get(h: &HeaderMap, name: header::HeaderName) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// `/` sets a cookie and links to `/next`; `/next` is a plain page. With
/// `proxied`, the server also answers absolute-form requests for any host,
/// as an HTTP proxy does.
async fn start(proxied: bool) -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, uri: Uri| {
        let s = s.clone();
        async move {
            if !proxied && uri.authority().is_some() {
                return (axum::http::StatusCode::BAD_REQUEST, "not a proxy").into_response();
            }
            let path = uri.path().to_string();
            s.lock().push((
                path.clone(),
                get(&headers, header::FROM),
                get(&headers, header::ACCEPT_LANGUAGE),
                get(&headers, header::COOKIE),
            ));
            let html = |body: &str| -> Response {
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    format!("<html><body>{body}</body></html>"),
                )
                    .into_response()
            };
            match path.as_str() {
                "/robots.txt" => (axum::http::StatusCode::NOT_FOUND, "").into_response(),
                "/" => {
                    let mut r = html("<p>The front page of a small site.</p><a href=\"/next\">next</a>");
                    r.headers_mut()
                        .insert(header::SET_COOKIE, "session=abc123; Path=/".parse().unwrap());
                    r
                }
                _ => html("<p>A second page with other words on it.</p>"),
            }
        }
    });
    let port = crate::support::serve(app).await;
    (port, seen)
}

fn settings(extra: &[String]) -> Settings {
    let mut sets: Vec<String> = [
        "politeness.min_delay_ms=0",
        "politeness.delay_factor=0.0",
        "crawl.max_pages=5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    sets.extend(extra.iter().cloned());
    Settings::load(None, &sets).unwrap()
}

async fn crawl(settings: Settings, seed: String) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let summary = Crawler::builder()
        .settings(settings)
        .seed(seed)
        .out_dir(dir.path())
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    summary.pages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_and_cookies_go_out_as_configured() {
    let (port, seen) = start(false).await;
    let with = settings(&[
        "fetch.headers={ From = \"ops@example.org\" }".into(),
        "fetch.accept_language=\"de, en;q=0.5\"".into(),
        "fetch.cookies=true".into(),
    ]);
    assert_eq!(crawl(with, format!("http://127.0.0.1:{port}/")).await, 2);
    let hits = std::mem::take(&mut *seen.lock());
    assert!(
        hits.iter().all(|h| h.1.as_deref() == Some("ops@example.org")),
        "{hits:?}"
    );
    assert!(hits.iter().all(|h| h.2.as_deref() == Some("de, en;q=0.5")), "{hits:?}");
    let next = hits.iter().find(|h| h.0 == "/next").expect("crawled /next");
    assert_eq!(
        next.3.as_deref(),
        Some("session=abc123"),
        "the cookie set by / comes back"
    );

    // Defaults: no extra headers, no cookie jar.
    assert_eq!(crawl(settings(&[]), format!("http://127.0.0.1:{port}/")).await, 2);
    let hits = std::mem::take(&mut *seen.lock());
    assert!(
        hits.iter().all(|h| h.1.is_none() && h.2.is_none() && h.3.is_none()),
        "{hits:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_go_through_the_proxy() {
    let (port, seen) = start(true).await;
    // A host that does not resolve: only the proxy can answer for it.
    let s = settings(&[format!("fetch.proxy=\"http://127.0.0.1:{port}\"")]);
    assert_eq!(crawl(s, "http://site.invalid/".into()).await, 2);
    let paths: Vec<String> = seen.lock().iter().map(|h| h.0.clone()).collect();
    assert!(
        paths.contains(&"/".to_string()) && paths.contains(&"/next".to_string()),
        "{paths:?}"
    );
}
