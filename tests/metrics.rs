//! Live metrics end to end: a crawl of the test web serves `/metrics` and
//! `/status`; scrapes from the per-page callback (on the decider thread,
//! which counts each record before calling it, so no other page is counted
//! meanwhile) agree exactly with the records seen so far, the summary's
//! final snapshot agrees with `pages.jsonl`, and the port closes when the
//! crawl returns.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::CrawlDir;
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::{Crawler, Decision, Settings, StopReason};

/// `GET path` over a plain socket (blocking; the callback runs on the
/// decider thread, not on the runtime): status code and body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, body.to_string())
}

/// What the records seen so far add up to.
#[derive(Default, Debug, Clone, PartialEq)]
struct Tally {
    pages: BTreeMap<String, u64>,
    fetches: BTreeMap<String, u64>,
    bytes: u64,
    latencies: u64,
}

impl Tally {
    fn add(&mut self, r: &PageRecord) {
        *self.pages.entry(r.decision.as_str().into()).or_default() += 1;
        if r.ip_wait_ms.is_some() {
            let class = match r.status {
                0 => "none".to_string(),
                s => format!("{}xx", s / 100),
            };
            *self.fetches.entry(class).or_default() += 1;
        }
        self.bytes += r.bytes;
        self.latencies += u64::from(r.latency_ms.is_some());
    }

    fn total(&self) -> u64 {
        self.pages.values().sum()
    }
}

/// The non-zero entries of a JSON object of counts.
fn counts(v: &serde_json::Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The value of the sample `line_start` (name and labels) in Prometheus text.
fn sample(text: &str, line_start: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.strip_prefix(line_start).is_some_and(|rest| rest.starts_with(' ')))
        .unwrap_or_else(|| panic!("no {line_start} in:\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Scrape both endpoints and check them against `t` (exactly: nothing is
/// counted while the callback runs).
fn check_scrape(addr: SocketAddr, t: &Tally) {
    let (code, body) = get(addr, "/status");
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["pages_total"], t.total(), "{body}");
    assert_eq!(counts(&v["pages"]), t.pages, "{body}");
    assert_eq!(counts(&v["fetches"]), t.fetches, "{body}");
    assert_eq!(v["bytes"], t.bytes, "{body}");
    for key in ["queued", "in_flight", "index_size", "store_bytes", "warc_bytes"] {
        assert!(v[key].is_u64(), "{key} in {body}");
    }
    assert!(v["hosts"]["ready"].is_u64() && v["hosts"]["parked"].is_u64(), "{body}");
    assert!(
        v["in_flight"].as_u64().unwrap() >= 1,
        "the page being decided is in flight"
    );

    let (code, text) = get(addr, "/metrics");
    assert_eq!(code, 200, "{text}");
    for d in Decision::ALL {
        let want = t.pages.get(d.as_str()).copied().unwrap_or(0);
        let line = format!("simcrawl_pages_total{{decision=\"{}\"}}", d.as_str());
        assert_eq!(sample(&text, &line), want, "{line}");
    }
    for (class, n) in &t.fetches {
        let line = format!("simcrawl_fetches_total{{status_class=\"{class}\"}}");
        assert_eq!(sample(&text, &line), *n, "{line}");
    }
    assert_eq!(sample(&text, "simcrawl_fetched_bytes_total"), t.bytes);
    assert_eq!(sample(&text, "simcrawl_fetch_latency_seconds_count"), t.latencies);
    assert!(
        sample(&text, "simcrawl_store_bytes") > 0,
        "the store exists during the crawl"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_served_during_the_crawl_agree_with_the_crawl_log() {
    const MAX: u64 = 150;
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let listener = simcrawl::metrics::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let tally: Arc<Mutex<(Tally, u64)>> = Arc::default();
    let sink = tally.clone();
    let summary = Crawler::builder()
        .settings(Settings::test_web(&[format!("crawl.max_pages={MAX}")]).unwrap())
        .seeds(server.seeds())
        .out_dir(dir.path())
        .metrics_listener(listener)
        .on_page(move |r| {
            let mut g = sink.lock().unwrap();
            g.0.add(r);
            let n = g.0.total();
            // The first page, every 25th and the last (max_pages).
            if n == 1 || n.is_multiple_of(25) || n == MAX {
                check_scrape(addr, &g.0);
                g.1 += 1;
            }
        })
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    server.shutdown().await;
    assert_eq!(summary.stop, StopReason::MaxPages);
    let (tally, scrapes) = tally.lock().unwrap().clone();
    assert_eq!(scrapes, 7, "scrapes at pages 1, 25, 50, ..., 150");

    // The final counters are the log's counts.
    let log = read_log(&CrawlDir::new(dir.path()).log()).unwrap();
    let mut from_log = Tally::default();
    log.iter().for_each(|r| from_log.add(r));
    assert_eq!(from_log, tally, "the callback saw what the log holds");
    let m = &summary.metrics;
    assert_eq!(m.pages_total, MAX);
    assert_eq!(m.pages_total, log.len() as u64);
    for d in Decision::ALL {
        let n = log.iter().filter(|r| r.decision == d).count() as u64;
        assert_eq!(m.pages_of(d), n, "{d:?}");
        assert_eq!(summary.count(d), n, "{d:?}: the summary's own count");
    }
    let fetches: BTreeMap<String, u64> = m
        .fetches
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    assert_eq!(fetches, from_log.fetches);
    assert_eq!(m.bytes, log.iter().map(|r| r.bytes).sum::<u64>());
    assert!(m.pages_of(Decision::New) > 0 && m.index_size >= m.pages_of(Decision::New));
    assert!(
        m.duplicate_rate.exact + m.duplicate_rate.near > 0.0,
        "the test web has duplicates"
    );
    assert_eq!(m.in_flight, 0);
    assert!(m.store_bytes > 0);
    // WARC output is on by default: its files, every one closed.
    let warc: u64 = simcrawl::warc::WarcWriter::files(&simcrawl::model::CrawlDir::new(dir.path()).warc())
        .unwrap()
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(warc > 0);
    assert_eq!(m.warc_bytes, warc);

    // The server stopped with the crawl.
    assert!(TcpStream::connect(addr).is_err(), "{addr} still served after the crawl");
}
