//! The built-in test web against its own ground truth: every page listed in
//! the truth is fetched over HTTP (redirects not followed) and checked for its
//! status and headers; mirrors and aliases are byte-identical; near-duplicate
//! variants differ from their original only in the intended region; robots.txt
//! bodies are as the truth says; the request log records every request.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{stream, StreamExt};
use simcrawl::testweb::{GroundTruth, PageKind, RunningTestWeb, TestWeb, TestWebOptions, VariantKind};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// GET `http://host:port/path` by connecting to `addr` with a Host header.
async fn get(client: &reqwest::Client, addr: SocketAddr, host: &str, path: &str) -> reqwest::Response {
    client
        .get(format!("http://{addr}{path}"))
        .header("Host", format!("{host}:{}", addr.port()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {host}{path}: {e}"))
}

struct Fetched {
    status: u16,
    content_type: Option<String>,
    location: Option<String>,
    retry_after: Option<String>,
    body: bytes::Bytes,
}

async fn fetch(client: &reqwest::Client, addr: SocketAddr, host: &str, path: &str) -> Fetched {
    let r = get(client, addr, host, path).await;
    let header = |name: &str| r.headers().get(name).map(|v| v.to_str().unwrap().to_string());
    let (content_type, location, retry_after) = (header("content-type"), header("location"), header("retry-after"));
    Fetched {
        status: r.status().as_u16(),
        content_type,
        location,
        retry_after,
        body: r.bytes().await.unwrap(),
    }
}

/// The text between `<!--tw:NAME-->` and `<!--/tw:NAME-->`, and the page with it cut out.
fn cut_region<'a>(html: &'a str, name: &str) -> (&'a str, String) {
    let open = format!("<!--tw:{name}-->");
    let close = format!("<!--/tw:{name}-->");
    let a = html.find(&open).unwrap_or_else(|| panic!("no region {name}")) + open.len();
    let b = a + html[a..]
        .find(&close)
        .unwrap_or_else(|| panic!("region {name} not closed"));
    (&html[a..b], format!("{}{}", &html[..a], &html[b..]))
}

/// Words of an HTML fragment (tags dropped, punctuation kept on words).
fn words(fragment: &str) -> Vec<String> {
    let mut out = String::new();
    let mut in_tag = false;
    for c in fragment.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace()
        .map(|w| w.trim_end_matches('.').to_lowercase())
        .collect()
}

fn check_near_duplicate(original: &str, variant: &str, kind: VariantKind, url: &str) {
    let region = match kind {
        VariantKind::Ad | VariantKind::LargeAd => "ad",
        VariantKind::Timestamp => "time",
        VariantKind::Counter => "counter",
        VariantKind::EditedWords | VariantKind::OneWord => "main",
        VariantKind::Untranslated | VariantKind::OtherVersion => {
            // The same main text (up to 3 words edited between versions) in other chrome.
            let (mo, rest_o) = cut_region(original, "main");
            let (mv, rest_v) = cut_region(variant, "main");
            let (wo, wv) = (words(mo), words(mv));
            assert_eq!(wo.len(), wv.len(), "{url}: same main text length");
            let changed = wo.iter().zip(&wv).filter(|(a, b)| a != b).count();
            let max = if kind == VariantKind::Untranslated { 0 } else { 3 };
            assert!(changed <= max, "{url}: {changed} main words differ");
            assert_ne!(rest_o, rest_v, "{url}: the chrome must differ");
            return;
        }
    };
    let (ro, rest_o) = cut_region(original, region);
    let (rv, rest_v) = cut_region(variant, region);
    assert_ne!(ro, rv, "{url}: region {region} must differ");
    assert_eq!(
        rest_o, rest_v,
        "{url}: the page outside region {region} must be identical"
    );
    match kind {
        VariantKind::EditedWords => {
            let (wo, wv) = (words(ro), words(rv));
            assert_eq!(
                wo.len(),
                wv.len(),
                "{url}: edits replace words, they do not add or drop any"
            );
            assert!(wo.len() >= 300, "{url}: main text of {} words", wo.len());
            let changed = wo.iter().zip(&wv).filter(|(a, b)| a != b).count();
            assert!((2..=5).contains(&changed), "{url}: {changed} words edited");
        }
        VariantKind::OneWord => {
            let (wo, wv) = (words(ro), words(rv));
            assert_eq!(wo.len(), wv.len(), "{url}");
            let changed = wo.iter().zip(&wv).filter(|(a, b)| a != b).count();
            assert_eq!(changed, 1, "{url}: one word changed");
        }
        VariantKind::LargeAd => {
            assert!(words(rv).len() > 4 * words(ro).len(), "{url}: large ad not large");
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_truth_page_is_served_as_the_truth_says() {
    let web = Arc::new(TestWeb::new(TestWebOptions {
        seed: 42,
        pages: 300,
        slow_ms: 300,
    }));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.addr;
    assert_ne!(addr.port(), 0);
    let truth: GroundTruth = server.truth();
    assert_eq!(truth.port, addr.port());
    assert_eq!(truth.seeds, server.seeds());
    assert_eq!(truth.seeds, vec![server.url("www.news.test", "/")]);
    let client = client();

    // /busy-once answers 429 first, then 200: fetch it on its own, in order.
    let busy_once = truth.pages.iter().find(|p| p.path == "/busy-once").unwrap();
    let first = fetch(&client, addr, &busy_once.host, &busy_once.path).await;
    assert_eq!(first.status, 429);
    assert_eq!(first.retry_after.as_deref(), Some("1"));
    let again = fetch(&client, addr, &busy_once.host, &busy_once.path).await;
    assert_eq!(Some(again.status), busy_once.status_after_retry);

    let started = Instant::now();
    let pages: Vec<_> = truth.pages.iter().filter(|p| p.path != "/busy-once").collect();
    let fetched: Vec<Fetched> = stream::iter(pages.iter().map(|p| fetch(&client, addr, &p.host, &p.path)))
        .buffered(16)
        .collect()
        .await;
    let mut bodies: HashMap<&str, bytes::Bytes> = HashMap::new();
    for (p, f) in pages.iter().zip(fetched) {
        assert_eq!(f.status, p.status, "{}", p.url);
        assert_eq!(f.content_type, p.content_type, "{}", p.url);
        if let Some(target) = &p.redirect_to {
            let base = url::Url::parse(&p.url).unwrap();
            let loc = f
                .location
                .as_deref()
                .unwrap_or_else(|| panic!("{}: no Location", p.url));
            assert_eq!(base.join(loc).unwrap().as_str(), target, "{}", p.url);
        }
        assert_eq!(f.retry_after, p.retry_after_secs.map(|s| s.to_string()), "{}", p.url);
        if let Some(n) = p.body_bytes {
            assert_eq!(f.body.len() as u64, n, "{}", p.url);
        }
        if let Some(text) = &p.expect_text {
            let (decoded, _, errors) = encoding_rs::WINDOWS_1252.decode(&f.body);
            assert!(!errors && decoded.contains(text.as_str()), "{}", p.url);
        }
        if p.kind == PageKind::Binary {
            assert!(!f.body.starts_with(b"<"), "{}", p.url);
        }
        bodies.insert(p.url.as_str(), f.body);
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300), "the slow page was not slow");

    // Mirrors and aliases: byte-identical to their original.
    let mut identical = 0;
    for group in &truth.exact_duplicate_groups {
        for u in &group[1..] {
            assert_eq!(bodies[u.as_str()], bodies[group[0].as_str()], "{u} vs {}", group[0]);
            identical += 1;
        }
    }
    assert!(identical >= 200, "{identical} copies checked");
    for m in &truth.mirrors {
        let copies = truth
            .pages
            .iter()
            .filter(|p| p.host == m.host_b && p.path.starts_with(&m.prefix_b) && p.exact_dup_of.is_some())
            .count();
        assert_eq!(copies, m.pages, "{} mirror pages", m.host_b);
    }

    // Near-duplicates differ only where intended; every kind occurs.
    let mut kinds = std::collections::HashSet::new();
    for pair in &truth.near_duplicate_pairs {
        let a = std::str::from_utf8(&bodies[pair.a.as_str()]).unwrap();
        let b = std::str::from_utf8(&bodies[pair.b.as_str()]).unwrap();
        check_near_duplicate(a, b, pair.kind, &pair.b);
        kinds.insert(pair.kind);
    }
    assert_eq!(kinds.len(), 8);

    // Negatives: same-topic articles share no sentence-long run; template pages
    // share the template but not the main text.
    // (ref.test pairs share most words on purpose: their truth is checked
    // by the testweb unit tests.)
    for pair in truth
        .distinct_pairs
        .iter()
        .filter(|p| p.kind != simcrawl::testweb::DistinctKind::FewWords)
    {
        let a = std::str::from_utf8(&bodies[pair.a.as_str()]).unwrap();
        let b = std::str::from_utf8(&bodies[pair.b.as_str()]).unwrap();
        let (ma, _) = cut_region(a, "main");
        let (mb, _) = cut_region(b, "main");
        assert_ne!(words(ma), words(mb), "{} vs {}", pair.a, pair.b);
        let wa = words(ma);
        let wb = words(mb);
        let shingles: std::collections::HashSet<&[String]> = wa.windows(5).collect();
        let shared = wb.windows(5).filter(|s| shingles.contains(s)).count();
        assert!(
            shared * 20 < wb.len().max(1),
            "{} and {} share {shared} 5-shingles",
            pair.a,
            pair.b
        );
    }
    let template_pairs: Vec<_> = truth
        .distinct_pairs
        .iter()
        .filter(|p| p.kind == simcrawl::testweb::DistinctKind::SharedTemplate)
        .collect();
    assert!(template_pairs.len() >= 20);
    for pair in template_pairs {
        let a = std::str::from_utf8(&bodies[pair.a.as_str()]).unwrap();
        let b = std::str::from_utf8(&bodies[pair.b.as_str()]).unwrap();
        let (ma, rest_a) = cut_region(a, "main");
        let (mb, rest_b) = cut_region(b, "main");
        let main_words = words(ma).len().max(words(mb).len());
        assert!((30..=81).contains(&main_words), "{}: {main_words} main words", pair.a);
        let (ta, tb) = (words(&rest_a), words(&rest_b));
        let shared = ta.iter().zip(&tb).filter(|(x, y)| x == y).count();
        assert!(
            shared > 5 * main_words,
            "{}: the shared template must outweigh the main text",
            pair.a
        );
    }

    // robots.txt bodies.
    for r in &truth.robots {
        let f = fetch(&client, addr, &r.host, "/robots.txt").await;
        assert_eq!(f.status, r.status, "{}", r.host);
        if let Some(body) = &r.body {
            assert_eq!(f.body.as_ref(), body.as_bytes(), "{}", r.host);
        }
    }

    // The request log: every request, finished, host lower-cased without port.
    let log = server.requests();
    assert_eq!(log.len(), truth.pages.len() + 1 + truth.robots.len());
    assert!(log.iter().all(|e| e.end.is_some_and(|end| end >= e.start)));
    assert!(log
        .iter()
        .any(|e| e.host == "www.news.test" && e.target.contains("utm_source")));
    assert!(log
        .iter()
        .all(|e| !e.host.contains(':') && e.host == e.host.to_lowercase()));
    let slow = log.iter().find(|e| e.target == "/slow").unwrap();
    assert!(slow.end.unwrap() - slow.start >= Duration::from_millis(300));
    server.clear_requests();
    assert!(server.requests().is_empty());
    let f = fetch(&client, addr, "errors.test", "/busy-once").await;
    assert_eq!(f.status, 429, "clear_requests re-arms busy-once");
    assert_eq!(server.requests().len(), 1);
    server.shutdown().await;
    assert!(
        client.get(format!("http://{addr}/")).send().await.is_err(),
        "server still answers after shutdown"
    );
}

#[tokio::test]
async fn unknown_hosts_and_paths_are_404() {
    let web = Arc::new(TestWeb::new(TestWebOptions {
        seed: 1,
        pages: 50,
        slow_ms: 0,
    }));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = client();
    assert_eq!(fetch(&client, server.addr, "elsewhere.example", "/").await.status, 404);
    assert_eq!(fetch(&client, server.addr, "www.news.test", "/nope").await.status, 404);
    assert_eq!(fetch(&client, server.addr, "WWW.NEWS.TEST", "/").await.status, 200);
}

/// A request is logged when it starts; its end is set once the response is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_log_shows_requests_in_flight() {
    let web = Arc::new(TestWeb::new(TestWebOptions {
        seed: 1,
        pages: 50,
        slow_ms: 400,
    }));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.addr;
    let slow = tokio::spawn(async move { fetch(&client(), addr, "Errors.Test", "/slow").await.status });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let during = server.requests();
    assert_eq!(during.len(), 1);
    assert_eq!(
        (during[0].host.as_str(), during[0].target.as_str()),
        ("errors.test", "/slow")
    );
    assert_eq!(during[0].end, None, "the slow request is still in flight");
    assert_eq!(slow.await.unwrap(), 200);
    let after = server.requests();
    let took = after[0].end.expect("finished") - after[0].start;
    assert!(took >= Duration::from_millis(400), "{took:?}");
}

/// `simcrawl testweb --addr 127.0.0.1:0 --truth FILE` prints its address,
/// writes the truth and serves until killed.
#[tokio::test]
async fn cli_serves_and_writes_truth() {
    let dir = tempfile::tempdir().unwrap();
    let truth_path = dir.path().join("truth.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_simcrawl"))
        .args([
            "testweb",
            "--addr",
            "127.0.0.1:0",
            "--pages",
            "40",
            "--seed",
            "3",
            "--truth",
        ])
        .arg(&truth_path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let addr: SocketAddr = first.trim().rsplit(' ').next().unwrap().parse().unwrap();
    let hub = fetch(&client(), addr, "www.news.test", "/").await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(hub.status, 200);
    let truth: GroundTruth = serde_json::from_slice(&std::fs::read(&truth_path).unwrap()).unwrap();
    assert_eq!(truth.port, addr.port());
    assert_eq!(truth.seed, 3);
    assert_eq!(
        truth,
        TestWeb::new(TestWebOptions {
            seed: 3,
            pages: 40,
            ..Default::default()
        })
        .truth(addr.port())
    );
}
