use std::sync::Arc;

use super::*;

fn probe() -> Probe {
    Probe {
        queued: 7,
        in_flight: 3,
        hosts_ready: 2,
        hosts_waiting: 4,
        hosts_parked: 1,
    }
}

/// Three records: a new page (200, 1000 bytes, 20 ms), an exact duplicate
/// (200, 500 bytes, 2 s), a network error (no response) and a disallowed
/// URL (no request).
fn sample() -> Metrics {
    let m = Metrics::new(None);
    m.record_page(Decision::New, 200, true, Some(20), 1000);
    m.record_page(Decision::ExactDuplicate, 200, true, Some(2000), 500);
    m.record_page(Decision::Error, 0, true, None, 0);
    m.record_page(Decision::Disallowed, 0, false, None, 0);
    m.record_retry();
    m.set_index_size(1);
    m
}

#[test]
fn decisions_index_their_counters_in_declaration_order() {
    for (i, d) in Decision::ALL.iter().enumerate() {
        assert_eq!(*d as usize, i, "{d:?}");
    }
    let classes: Vec<&str> = [0, 101, 200, 204, 301, 404, 503, 999]
        .into_iter()
        .map(|s| STATUS_CLASSES[status_class(s)])
        .collect();
    assert_eq!(classes, ["none", "1xx", "2xx", "2xx", "3xx", "4xx", "5xx", "5xx"]);
}

#[test]
fn prometheus_text_has_every_metric_with_help_and_type() {
    let text = sample().encode(probe());
    for line in [
        "# HELP simcrawl_pages_total Pages recorded in pages.jsonl by this run, by decision.",
        "# TYPE simcrawl_pages_total counter",
        "simcrawl_pages_total{decision=\"new\"} 1",
        "simcrawl_pages_total{decision=\"exact_duplicate\"} 1",
        "simcrawl_pages_total{decision=\"near_duplicate\"} 0",
        "simcrawl_pages_total{decision=\"error\"} 1",
        "simcrawl_pages_total{decision=\"disallowed\"} 1",
        "# TYPE simcrawl_fetches_total counter",
        "simcrawl_fetches_total{status_class=\"2xx\"} 2",
        "simcrawl_fetches_total{status_class=\"none\"} 1",
        "simcrawl_fetches_total{status_class=\"4xx\"} 0",
        "# TYPE simcrawl_fetch_latency_seconds histogram",
        "simcrawl_fetch_latency_seconds_count 2",
        "simcrawl_fetch_latency_seconds_sum 2.02",
        "simcrawl_fetch_latency_seconds_bucket{le=\"0.02\"} 1",
        "simcrawl_fetch_latency_seconds_bucket{le=\"+Inf\"} 2",
        "simcrawl_fetched_bytes_total 1500",
        "simcrawl_fetch_retries_total 1",
        "# TYPE simcrawl_index_fingerprints gauge",
        "simcrawl_index_fingerprints 1",
        "simcrawl_queued_urls 7",
        "simcrawl_in_flight 3",
        "simcrawl_hosts_ready 2",
        "simcrawl_hosts_waiting 4",
        "simcrawl_hosts_parked 1",
        "simcrawl_store_bytes 0",
        "simcrawl_warc_bytes 0",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
    }
    // Every sample line belongs to a family with HELP and TYPE.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| text.contains(&format!("# TYPE {f} histogram")))
            .unwrap_or(name);
        assert!(text.contains(&format!("# HELP {family} ")), "{family}: no HELP");
        assert!(l.starts_with("simcrawl_"), "{l}");
    }
    assert!(text.contains("simcrawl_elapsed_seconds "), "{text}");
}

#[test]
fn status_json_has_the_same_counts() {
    let m = sample();
    let v: serde_json::Value = serde_json::from_str(&m.status_json(probe())).unwrap();
    assert_eq!(v["pages"]["new"], 1);
    assert_eq!(v["pages"]["exact_duplicate"], 1);
    assert_eq!(v["pages"]["noindex"], 0, "every decision is listed");
    assert_eq!(v["pages_total"], 4);
    assert_eq!(v["fetches"]["2xx"], 2);
    assert_eq!(v["fetches"]["none"], 1);
    assert_eq!(v["fetch_retries"], 1);
    assert_eq!(v["bytes"], 1500);
    assert_eq!(v["duplicate_rate"]["exact"], 0.5);
    assert_eq!(v["duplicate_rate"]["near"], 0.0);
    assert_eq!(v["queued"], 7);
    assert_eq!(v["in_flight"], 3);
    assert_eq!(v["hosts"], serde_json::json!({"ready": 2, "waiting": 4, "parked": 1}));
    assert_eq!(v["index_size"], 1);
    assert_eq!(v["store_bytes"], 0);
    assert_eq!(v["warc_bytes"], 0);
    assert!(v["elapsed_seconds"].as_f64().unwrap() >= 0.0);
    let s = m.snapshot(Probe::default());
    assert_eq!(s.pages_of(Decision::New), 1);
    assert_eq!(s.duplicate_rate, DuplicateRate { exact: 0.5, near: 0.0 });
}

#[test]
fn directory_sizes_sum_the_files_below_and_a_missing_directory_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir_all(store.join("blobs")).unwrap();
    std::fs::write(store.join("db"), vec![0u8; 1000]).unwrap();
    std::fs::write(store.join("blobs/1"), vec![0u8; 24]).unwrap();
    let m = Metrics::new(Some(dir.path()));
    let s = m.snapshot(Probe::default());
    assert_eq!((s.store_bytes, s.warc_bytes), (1024, 0));
    std::fs::create_dir_all(crate::model::CrawlDir::new(dir.path()).warc()).unwrap();
    std::fs::write(dir.path().join("warc/a.warc.gz"), vec![0u8; 10]).unwrap();
    assert_eq!(m.snapshot(Probe::default()).warc_bytes, 10);
    assert!(m.encode(Probe::default()).contains("simcrawl_store_bytes 1024\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_metrics_and_status_until_stopped() {
    let m = Arc::new(sample());
    let probe: ProbeFn = Arc::new(probe);
    let server = MetricsServer::start(m, probe, bind("127.0.0.1:0".parse().unwrap()).unwrap()).unwrap();
    let base = format!("http://{}", server.addr());
    let client = reqwest::Client::new();
    let r = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], Metrics::CONTENT_TYPE);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("simcrawl_pages_total{decision=\"new\"} 1"));
    let r = client.get(format!("{base}/status")).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["queued"], 7);
    let r = client.get(format!("{base}/other")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let addr = server.addr();
    server.stop().await;
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the port is closed after stop"
    );
}

#[test]
fn a_busy_address_is_a_bind_error_naming_it() {
    let taken = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = taken.local_addr().unwrap();
    let e = bind(addr).unwrap_err();
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
}
