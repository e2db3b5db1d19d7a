//! A hostile HTTP server on 127.0.0.1 (in-process, every response bounded)
//! and one crawl of all of it with the default configuration (only the
//! fixed delays and caps on waiting are short). Each virtual host is one
//! case: traps (a calendar whose months copy the home page, a session id in
//! the path), credentials in links, two `Location` headers, compression
//! bombs, a slow body, redirect chains and loops, huge headers, deep
//! nesting, a garbled robots.txt, Retry-After abuse, and forty host names on
//! one address. The assertions are per case on the crawl log and on the
//! server's request log: what was recorded, and that nothing else was
//! requested.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::Decision;
use simcrawl::Settings;

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Hit {
    host: String,
    path: String,
    authorization: bool,
}

#[derive(Default)]
struct Hostile {
    hits: Mutex<Vec<Hit>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    counter: AtomicU64,
    retry_hits: Mutex<HashMap<String, u32>>,
    gzip_bomb: Vec<u8>,
    deflate_bomb: Vec<u8>,
}

/// Hosts with a page per case; every one is a seed.
const IP_HOSTS: usize = 40;

fn seeds() -> Vec<String> {
    let mut s: Vec<String> = [
        "http://cal.test/",
        "http://sess.test/",
        "http://cred.test/",
        "http://loc.test/",
        "http://bomb.test/gzip",
        "http://bomb.test/deflate",
        "http://slow.test/",
        "http://redir.test/r/0",
        "http://redir.test/loop/a",
        "http://hdr.test/many",
        "http://hdr.test/huge",
        "http://deep.test/",
        "http://robots.test/",
        "http://retry.test/huge",
        "http://retry.test/negative",
        "http://retry.test/garbage",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    s.extend((0..IP_HOSTS).map(|i| format!("http://h{i}.ip.test/")));
    s
}

fn bomb(deflate: bool) -> Vec<u8> {
    // 48 MiB of zeros: several times the default 10 MiB body cap.
    let zeros = vec![0u8; 1 << 20];
    if deflate {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        for _ in 0..48 {
            z.write_all(&zeros).unwrap();
        }
        z.finish().unwrap()
    } else {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for _ in 0..48 {
            z.write_all(&zeros).unwrap();
        }
        z.finish().unwrap()
    }
}

/// A few hundred words of fixed text: pages built on it are duplicates.
/// A long page text of the host's own (hosts do not share content: a copy
/// across hosts is a near duplicate whatever the title says).
fn home_text(host: &str) -> String {
    let shift = host.bytes().map(usize::from).sum::<usize>();
    let words = [
        "harbour", "lantern", "orchard", "meadow", "granite", "willow", "copper", "thistle", "beacon", "saffron",
        "juniper", "marble", "falcon", "cobalt", "heather", "quarry", "tundra", "walnut", "zephyr", "amber",
    ];
    let mut s = String::new();
    for i in 0..400 {
        s.push_str(words[(i * 7 + i / 20 + (i / 5) * shift) % words.len()]);
        s.push(' ');
        if i % 25 == 24 {
            s.push_str(". ");
        }
    }
    s
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// A name made of letters only (no digit pattern to fold).
fn letters(mut n: u64) -> String {
    let mut s = String::new();
    loop {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            return s;
        }
    }
}

async fn respond(server: &Hostile, host: &str, port: &str, path: &str) -> Response {
    let redirect = |to: &str| (StatusCode::FOUND, [(header::LOCATION, to.to_string())]).into_response();
    if path == "/robots.txt" {
        return match host {
            "robots.test" => {
                // Rules first, then binary garbage and a line of 600 KB.
                let mut body = b"User-agent: *\nDisallow: /private\n\xff\xfe\x00garbage\x01\r\r\n".to_vec();
                body.extend(std::iter::repeat_n(b'x', 600_000));
                body.extend_from_slice(b"\nAllow: /private\n");
                (StatusCode::OK, body).into_response()
            }
            _ => StatusCode::NOT_FOUND.into_response(),
        };
    }
    let home = home_text(host);
    match host {
        "cal.test" => {
            // The home page and every month: the same text, one month link.
            let next = match path {
                "/" => Some((2024, 1)),
                p => p
                    .strip_prefix("/cal/")
                    .and_then(|r| r.trim_end_matches('/').split_once('/'))
                    .and_then(|(y, m)| Some((y.parse::<u32>().ok()?, m.parse::<u32>().ok()?)))
                    .map(|(y, m)| if m == 12 { (y + 1, 1) } else { (y, m + 1) }),
            };
            match next {
                Some((y, m)) => html(format!(
                    "<html><head><title>Calendar</title></head><body><p>{home}</p><p>{path}</p>\
                     <a href=\"/cal/{y}/{m:02}/\">next month</a></body></html>"
                )),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
        "sess.test" => {
            // Every page the same body, linking a fresh session path.
            let n = server.counter.fetch_add(1, Ordering::Relaxed);
            html(format!(
                "<html><head><title>Shop</title></head><body><p>{home}</p>\
                 <a href=\"/s={}/\">continue</a></body></html>",
                letters(n * 7919 + 12345)
            ))
        }
        "cred.test" => match path {
            "/" => html(format!(
                "<html><body><p>credentials</p><a href=\"http://user:pass@cred.test:{port}/secret\">a</a>\
                 <a href=\"//u2:p2@cred.test:{port}/other\">b</a></body></html>"
            )),
            "/secret" | "/other" => html(format!("<html><body><p>{path} page</p></body></html>")),
            _ => StatusCode::NOT_FOUND.into_response(),
        },
        "loc.test" => match path {
            "/" => html("<html><body><a href=\"/two\">two</a></body></html>".to_string()),
            "/two" => {
                let mut r = StatusCode::FOUND.into_response();
                r.headers_mut()
                    .append(header::LOCATION, HeaderValue::from_static("/target-a"));
                r.headers_mut()
                    .append(header::LOCATION, HeaderValue::from_static("/target-b"));
                r
            }
            "/target-a" => html("<html><body><p>target a</p></body></html>".to_string()),
            _ => StatusCode::NOT_FOUND.into_response(),
        },
        "bomb.test" => {
            let (encoding, body) = match path {
                "/gzip" => ("gzip", server.gzip_bomb.clone()),
                "/deflate" => ("deflate", server.deflate_bomb.clone()),
                _ => return StatusCode::NOT_FOUND.into_response(),
            };
            (
                [
                    (header::CONTENT_TYPE, "text/html"),
                    (header::CONTENT_ENCODING, encoding),
                ],
                body,
            )
                .into_response()
        }
        "slow.test" => {
            // Headers at once, then a byte every 300 ms for 6 s.
            let chunks = futures_util::stream::unfold(0u32, |i| async move {
                if i >= 20 {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
                Some((Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"<")), i + 1))
            });
            ([(header::CONTENT_TYPE, "text/html")], Body::from_stream(chunks)).into_response()
        }
        "redir.test" => {
            if let Some(n) = path.strip_prefix("/r/").and_then(|n| n.parse::<u32>().ok()) {
                if n < 40 {
                    return redirect(&format!("/r/{}", n + 1));
                }
                return html("<p>end of the chain</p>".to_string());
            }
            match path {
                "/loop/a" => redirect("/loop/b"),
                "/loop/b" => redirect("/loop/a"),
                _ => StatusCode::NOT_FOUND.into_response(),
            }
        }
        "hdr.test" => {
            let mut r = html("<p>headers</p>".to_string());
            match path {
                "/many" => {
                    for i in 0..2000 {
                        r.headers_mut().append(
                            header::HeaderName::from_bytes(format!("x-h{i}").as_bytes()).unwrap(),
                            HeaderValue::from_static("vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"),
                        );
                    }
                }
                "/huge" => {
                    let v = "v".repeat(1 << 20);
                    r.headers_mut().insert("x-huge", HeaderValue::from_str(&v).unwrap());
                }
                _ => return StatusCode::NOT_FOUND.into_response(),
            }
            r
        }
        "deep.test" => match path {
            "/" => {
                let depth = 100_000;
                let mut s = String::with_capacity(depth * 11 + 100);
                s.push_str("<html><body>");
                for _ in 0..depth {
                    s.push_str("<div><span>");
                }
                s.push_str("deep text");
                html(s)
            }
            _ => StatusCode::NOT_FOUND.into_response(),
        },
        "robots.test" => match path {
            "/" => html("<html><body><a href=\"/private/x\">p</a><a href=\"/public\">q</a></body></html>".to_string()),
            "/public" => html("<p>public</p>".to_string()),
            _ => StatusCode::NOT_FOUND.into_response(),
        },
        "retry.test" => {
            *server.retry_hits.lock().entry(path.to_string()).or_default() += 1;
            let value = match path {
                "/huge" => "999999999999",
                "/negative" => "-30",
                "/garbage" => "soon, maybe",
                _ => return StatusCode::NOT_FOUND.into_response(),
            };
            (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, value)]).into_response()
        }
        h if h.ends_with(".ip.test") => {
            // Slow enough that requests to different names overlap.
            tokio::time::sleep(Duration::from_millis(150)).await;
            html(format!(
                "<html><body><p>{h} has its own words {}</p></body></html>",
                h.len()
            ))
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start() -> (u16, Arc<Hostile>) {
    let server = Arc::new(Hostile {
        gzip_bomb: bomb(false),
        deflate_bomb: bomb(true),
        ..Hostile::default()
    });
    let s = server.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, uri: Uri| {
        let s = s.clone();
        async move {
            let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            s.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let authority = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
            let (host, port) = authority.split_once(':').unwrap_or((authority, "80"));
            let (host, port) = (host.to_string(), port.to_string());
            let path = uri.path().to_string();
            s.hits.lock().push(Hit {
                host: host.clone(),
                path: path.clone(),
                authorization: headers.contains_key(header::AUTHORIZATION),
            });
            let resp = respond(&s, &host, &port, &path).await;
            s.in_flight.fetch_sub(1, Ordering::SeqCst);
            resp
        }
    });
    let port = crate::support::serve(app).await;
    (port, server)
}

/// The default configuration, with the server's names mapped to 127.0.0.1
/// and the fixed waits short (delays off, Retry-After and backoff capped at
/// a second, a 2 s request timeout for the slow body).
fn hostile_settings() -> Settings {
    let sets: Vec<String> = [
        "fetch.resolve=[\"*.test=127.0.0.1\"]",
        "politeness.min_delay_ms=0",
        "politeness.delay_factor=0.0",
        "politeness.retry_after_cap_secs=1",
        "politeness.backoff_base_secs=0",
        "politeness.backoff_cap_secs=1",
        "politeness.park_secs=1",
        "fetch.timeout_ms=2000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Settings::load(None, &sets).unwrap()
}

fn by_canonical(records: &[PageRecord]) -> BTreeMap<String, &PageRecord> {
    records.iter().map(|r| (r.canonical.clone(), r)).collect()
}

fn paths_of<'a>(hits: &'a [Hit], host: &str) -> Vec<&'a str> {
    hits.iter()
        .filter(|h| h.host == host)
        .map(|h| h.path.as_str())
        .collect()
}

/// The seeds on the server's port (links on its pages are relative or
/// carry the port).
fn with_port(seeds: &[String], port: u16) -> Vec<String> {
    seeds
        .iter()
        .map(|s| s.replacen(".test/", &format!(".test:{port}/"), 1))
        .collect()
}

fn dir_text(dir: &Path) -> String {
    let mut all = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.file_name().is_some_and(|n| n == "store" || n == "index") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(t) = std::fs::read_to_string(&p) {
                all.push_str(&t);
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_server_crawl_holds_every_case() {
    let (port, server) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let summary = tokio::time::timeout(
        Duration::from_secs(90),
        crawl::run(
            hostile_settings(),
            CrawlOptions::new(&out, with_port(&seeds(), port)),
            std::future::pending(),
        ),
    )
    .await
    .expect("the crawl ends")
    .unwrap();
    let records = read_log(&out.join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap();
    let rec = by_canonical(&records);
    let all_hits = server.hits.lock().clone();
    // Each seed origin's /sitemap.xml is asked for once (`[sitemaps]
    // root_sitemap`); none of these servers has one (404, or an HTML page
    // on sess.test), so it leads nowhere. The checks below are about pages.
    let sitemap_hosts: Vec<&str> = all_hits
        .iter()
        .filter(|h| h.path == "/sitemap.xml")
        .map(|h| h.host.as_str())
        .collect();
    let distinct: std::collections::HashSet<&str> = sitemap_hosts.iter().copied().collect();
    assert!(
        !sitemap_hosts.is_empty() && distinct.len() == sitemap_hosts.len(),
        "{sitemap_hosts:?}"
    );
    let hits: Vec<Hit> = all_hits.iter().filter(|h| h.path != "/sitemap.xml").cloned().collect();
    let url = |host: &str, path: &str| format!("http://{host}:{port}{path}");
    eprintln!(
        "hostile crawl: {} records, {} requests, {:.1} s",
        records.len(),
        hits.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(summary.pages > 0);

    // 1. Calendar trap from the root: a few month pages, then the chain of
    //    same-host duplicates is cut (max_duplicate_chain = 5; a month the
    //    host template makes "new" starts a chain again), far short of
    //    max_depth (16).
    let months: Vec<&str> = paths_of(&hits, "cal.test")
        .into_iter()
        .filter(|p| p.starts_with("/cal/"))
        .collect();
    assert!(
        !months.is_empty() && months.len() <= 11,
        "calendar months fetched: {months:?}"
    );
    assert!(
        paths_of(&hits, "cal.test")
            .iter()
            .all(|p| *p == "/robots.txt" || *p == "/" || p.starts_with("/cal/")),
        "cal.test: {:?}",
        paths_of(&hits, "cal.test")
    );
    assert_eq!(
        rec[&url("cal.test", "/")].decision,
        Decision::New,
        "{:?}",
        rec[&url("cal.test", "/")]
    );

    // 2. Session id in the path: a chain of exact duplicates ends.
    let sessions: Vec<&str> = paths_of(&hits, "sess.test")
        .into_iter()
        .filter(|p| p.starts_with("/s="))
        .collect();
    assert!(
        !sessions.is_empty() && sessions.len() <= 6,
        "session pages fetched: {sessions:?}"
    );
    assert!(records
        .iter()
        .filter(|r| r.canonical.contains("/s="))
        .all(|r| r.decision == Decision::ExactDuplicate));
    let cut: Vec<&PageRecord> = records
        .iter()
        .filter(|r| r.error.as_deref().is_some_and(|e| e.contains("max_duplicate_chain")))
        .collect();
    assert!(
        cut.iter().any(|r| r.canonical.contains("sess.test")),
        "no chain cut recorded"
    );
    let why = simcrawl::report::explain::explain(&out, &cut[0].canonical, &hostile_settings()).unwrap();
    assert!(why.contains("same-host duplicates or look-alikes in a row"), "{why}");

    // 3. Credentials in links: never sent (robots.txt included), never stored.
    assert!(hits.iter().all(|h| !h.authorization), "a request carried credentials");
    for p in ["/secret", "/other"] {
        assert_eq!(
            rec[&url("cred.test", p)].decision,
            Decision::New,
            "{p}: {:?}",
            rec[&url("cred.test", p)]
        );
    }
    let text = dir_text(&out);
    for secret in ["user:pass", "pass@", "u2:p2", "p2@", "u2@"] {
        assert!(!text.contains(secret), "{secret} in the crawl output");
    }

    // 4. Two Location headers: the first is followed, nothing joined.
    let loc = paths_of(&hits, "loc.test");
    assert!(loc.contains(&"/target-a"), "{loc:?}");
    assert!(
        loc.iter()
            .all(|p| ["/robots.txt", "/", "/two", "/target-a"].contains(p)),
        "{loc:?}"
    );
    assert_eq!(rec[&url("loc.test", "/two")].decision, Decision::Redirect);

    // Compression bombs: cut at the body cap.
    for p in ["/gzip", "/deflate"] {
        assert_eq!(rec[&url("bomb.test", p)].decision, Decision::TooLarge, "{p}");
    }
    // A slow body: the request times out, recorded as an error.
    assert_eq!(rec[&url("slow.test", "/")].decision, Decision::Error);
    // Redirect chains and loops: bounded by max_redirects (10), recorded.
    let chain = paths_of(&hits, "redir.test")
        .into_iter()
        .filter(|p| p.starts_with("/r/"))
        .count();
    assert!((1..=12).contains(&chain), "redirect chain requests: {chain}");
    let looped = paths_of(&hits, "redir.test")
        .into_iter()
        .filter(|p| p.starts_with("/loop/"))
        .count();
    assert!((1..=3).contains(&looped), "redirect loop requests: {looped}");
    assert!(rec.contains_key(&url("redir.test", "/loop/a")));
    // Huge headers: the response is refused (an error record), not a crash.
    for p in ["/many", "/huge"] {
        let r = rec[&url("hdr.test", p)];
        assert!(
            matches!(r.decision, Decision::Error | Decision::New),
            "{p}: {:?}",
            r.decision
        );
    }
    // Deeply nested markup: parsed within bounds.
    assert_eq!(rec[&url("deep.test", "/")].decision, Decision::New);
    // A garbled robots.txt: its rules before the garbage hold.
    let rob = paths_of(&hits, "robots.test");
    assert!(
        rob.contains(&"/public") && !rob.iter().any(|p| p.starts_with("/private")),
        "{rob:?}"
    );
    // Retry-After abuse: capped, and each URL retried max_retries (2) times at most.
    for (path, n) in server.retry_hits.lock().iter() {
        assert!((1..=3).contains(n), "retry.test{path}: {n} requests");
    }
    for p in ["/huge", "/negative", "/garbage"] {
        assert!(rec.contains_key(&url("retry.test", p)), "{p}");
    }

    // 12. Forty names, one address: at most max_in_flight_per_ip (4) at once.
    let max = server.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 4, "{max} requests in flight to one address");
    assert!(max >= 2, "the crawl ran requests in parallel ({max})");
    for i in 0..IP_HOSTS {
        let r = rec[&url(&format!("h{i}.ip.test"), "/")];
        assert_eq!(r.server_ip.as_deref(), Some("127.0.0.1"));
    }
    let why = simcrawl::report::explain::explain(&out, &url("h7.ip.test", "/"), &hostile_settings()).unwrap();
    assert!(
        why.contains("server      127.0.0.1: at most 4 requests in flight to it"),
        "{why}"
    );

    // Nothing else was requested: every request is one of the cases above.
    let known = [
        "cal.test",
        "sess.test",
        "cred.test",
        "loc.test",
        "bomb.test",
        "slow.test",
        "redir.test",
        "hdr.test",
        "deep.test",
        "robots.test",
        "retry.test",
    ];
    for h in &hits {
        assert!(
            known.contains(&h.host.as_str()) || h.host.ends_with(".ip.test"),
            "unexpected request: {h:?}"
        );
    }
    let per_host = |host: &str| paths_of(&hits, host).iter().filter(|p| **p != "/robots.txt").count();
    // (a timed-out or refused response is retried max_retries times)
    assert!(per_host("cred.test") == 3 && per_host("bomb.test") == 2 && per_host("slow.test") <= 3);
    assert!(per_host("deep.test") == 1 && per_host("hdr.test") <= 6);
    // Every request but robots.txt has its record (retries share one).
    let recorded: std::collections::HashSet<(String, String)> = records
        .iter()
        .filter_map(|r| url::Url::parse(&r.canonical).ok())
        .map(|u| (u.host_str().unwrap_or("").to_string(), u.path().to_string()))
        .collect();
    for h in &hits {
        assert!(
            h.path == "/robots.txt" || recorded.contains(&(h.host.clone(), h.path.clone())),
            "requested without a record: {h:?}"
        );
    }
}
