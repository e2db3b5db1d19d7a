//! Focused crawling measured on the built-in test web: the harvest rate (the
//! fraction of fetched pages on the target topic, by the web's ground truth)
//! of a focused crawl against a breadth-first crawl of the same size.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use simcrawl::canon::Canonicalizer;
use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::Settings;

/// Pages fetched by each crawl.
const PAGES: usize = 150;
/// The topic the focused crawl is after.
const TOPIC: &str = "astronomy";

/// The focused crawl's config (shipped as an example), relative to the crate root.
const CONFIG: &str = "config/focused-example.toml";

async fn crawl_web(server: &RunningTestWeb, overrides: &[&str]) -> (tempfile::TempDir, Vec<PageRecord>) {
    let dir = tempfile::tempdir().unwrap();
    let mut o: Vec<String> = vec![format!("crawl.max_pages={PAGES}")];
    // FOCUS_SET="crawl.concurrency=32;focus.examples=[]" varies the setup by hand.
    o.extend(
        std::env::var("FOCUS_SET")
            .ok()
            .into_iter()
            .flat_map(|v| v.split(';').map(String::from).collect::<Vec<_>>()),
    );
    o.extend(overrides.iter().map(|s| s.to_string()));
    let settings = Settings::load(Some(Path::new(CONFIG)), &o).unwrap();
    crawl::run(
        settings,
        CrawlOptions::new(dir.path(), server.seeds()),
        std::future::pending(),
    )
    .await
    .unwrap();
    let records = read_log(&dir.path().join(simcrawl::model::CrawlDir::LOG_FILE)).unwrap();
    (dir, records)
}

/// Ground-truth topic of every page, by canonical URL.
fn topics(server: &RunningTestWeb) -> HashMap<String, String> {
    let canon = Canonicalizer::new(&Settings::test_web(&[]).unwrap().canon);
    server
        .truth()
        .pages
        .into_iter()
        .filter_map(|p| Some((canon.parse(&p.url).ok()?.to_string(), p.topic?)))
        .collect()
}

/// Fraction of the first `n` records whose page is on `TOPIC`.
fn harvest(records: &[PageRecord], topics: &HashMap<String, String>, n: usize) -> f64 {
    let first = &records[..n.min(records.len())];
    let on = first
        .iter()
        .filter(|r| topics.get(&r.canonical).is_some_and(|t| t == TOPIC))
        .count();
    on as f64 / first.len().max(1) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn focused_crawl_harvests_more_on_topic_pages_than_breadth_first() {
    let web = Arc::new(TestWeb::new(TestWebOptions {
        slow_ms: 300,
        ..Default::default()
    }));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let topics = topics(&server);
    // Breadth-first: the same config with focus off.
    let (bfs_dir, bfs) = crawl_web(&server, &["focus.enabled=false"]).await;
    let (dir, focused) = crawl_web(&server, &[]).await;
    assert!(
        bfs.len() >= PAGES - 5 && focused.len() >= PAGES - 5,
        "{} {}",
        bfs.len(),
        focused.len()
    );

    let half = PAGES / 2;
    let (hb, hf) = (harvest(&bfs, &topics, half), harvest(&focused, &topics, half));
    eprintln!(
        "harvest rate, first {half} pages: breadth-first {hb:.3}, focused {hf:.3} ({:.2}x); all {PAGES}: {:.3} vs {:.3}",
        hf / hb.max(1e-9),
        harvest(&bfs, &topics, PAGES),
        harvest(&focused, &topics, PAGES)
    );
    assert!(hf >= 1.5 * hb && hf > 0.0, "focused {hf:.3} vs breadth-first {hb:.3}");

    // The crawl log carries page relevance only with focus on, and pages of
    // the topic score higher than the rest.
    assert!(bfs.iter().all(|r| r.relevance.is_none()));
    let mean = |on: bool| {
        let v: Vec<f64> = focused
            .iter()
            .filter(|r| topics.get(&r.canonical).is_some_and(|t| t == TOPIC) == on)
            .filter_map(|r| r.relevance)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (on, off) = (mean(true), mean(false));
    eprintln!("mean page relevance: on-topic {on:.3}, other pages {off:.3}");
    assert!(on > 2.0 * off, "on-topic {on:.3} vs off-topic {off:.3}");

    // The summary report shows the harvest-rate curve (by the crawl's own
    // relevance judgement), and only for the focused crawl.
    let html = std::fs::read_to_string(dir.path().join("reports/summary.html")).unwrap();
    assert!(html.contains("Focus: harvest rate") && html.contains("<polyline"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("reports/summary.json")).unwrap()).unwrap();
    let h = &json["harvest"];
    assert_eq!(
        h["on_topic"].as_f64(),
        Some(0.15),
        "the crawl's threshold, from crawl_stats.json"
    );
    let own = h["first_half_rate"].as_f64().unwrap();
    eprintln!("summary report: first-half harvest rate by the crawl's own relevance {own:.3}");
    assert!(own > 1.5 * hb, "{own} vs {hb}");
    assert!(h["curve"].as_array().is_some_and(|c| c.len() > 10));
    let plain = std::fs::read_to_string(bfs_dir.path().join("reports/summary.json")).unwrap();
    assert!(!plain.contains("\"harvest\""));
}
