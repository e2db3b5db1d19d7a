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

/// Words of the hub case's off-topic pages (a software manual).
const MANUAL: &[&str] = &[
    "install",
    "package",
    "configure",
    "option",
    "release",
    "version",
    "upgrade",
    "module",
    "logging",
    "server",
    "client",
    "request",
    "cache",
    "database",
    "backup",
    "restore",
    "user",
    "account",
    "permission",
    "setting",
    "default",
    "command",
    "output",
    "format",
    "error",
    "warning",
    "build",
    "compile",
    "library",
    "function",
];

/// Words of its on-topic pages: the test web's astronomy vocabulary.
fn sky() -> &'static [&'static str] {
    simcrawl::testweb::topic_words("astronomy").expect("the test web has an astronomy topic")
}

/// `n` words drawn from `words` by a fixed generator seeded with `seed`.
fn prose(words: &[&str], seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = words[(x % words.len() as u64) as usize];
            if i % 12 == 11 {
                format!("{w}.")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The hub case: a manual whose astronomy pages are reachable only through
/// an off-topic index page (`/reference/`, "Reference index", a list of
/// module names) among three other off-topic sections; the index's link
/// texts name the topic, its own text does not. `(path, html)` or None.
fn hub_site(path: &str) -> Option<String> {
    let page = |title: &str, body: String, links: Vec<(String, String)>| {
        let links: String = links
            .iter()
            .map(|(href, text)| format!("<li><a href=\"{href}\">{text}</a></li>"))
            .collect();
        format!("<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p><ul>{links}</ul></body></html>")
    };
    let num = |p: &str, prefix: &str| p.strip_prefix(prefix)?.strip_suffix(".html")?.parse::<u64>().ok();
    let sections = ["install", "config", "releases", "howto"];
    Some(match path {
        "/" => page(
            "Project manual",
            prose(MANUAL, 1, 60),
            sections
                .iter()
                .map(|s| (format!("/{s}/"), format!("{s} guide")))
                .chain([("/reference/".to_string(), "Reference index".to_string())])
                .collect(),
        ),
        "/reference/" => page(
            "Reference index",
            "Modules A to Z.".into(),
            (0..30u64)
                .map(|i| {
                    if i % 3 == 0 {
                        (
                            format!("/reference/sky-{i}.html"),
                            format!(
                                "{} {}",
                                sky()[(i as usize) % sky().len()],
                                sky()[(i as usize + 5) % sky().len()]
                            ),
                        )
                    } else {
                        (
                            format!("/reference/mod-{i}.html"),
                            format!(
                                "{} {}",
                                MANUAL[(i as usize) % MANUAL.len()],
                                MANUAL[(i as usize + 7) % MANUAL.len()]
                            ),
                        )
                    }
                })
                .collect(),
        ),
        p if sections.iter().any(|s| p == format!("/{s}/")) => {
            let s = &p[1..p.len() - 1];
            page(
                s,
                prose(MANUAL, s.len() as u64 * 7, 40),
                (0..25u64)
                    .map(|i| (format!("/{s}/{i}.html"), format!("{s} step {i}")))
                    .collect(),
            )
        }
        p => {
            if let Some(i) = num(p, "/reference/sky-") {
                // On-topic: each links to a deeper on-topic page.
                page(
                    &format!("sky {i}"),
                    prose(sky(), 1000 + i, 150),
                    vec![(format!("/reference/sky-{}.html", i + 100), "more".into())],
                )
            } else if let Some(i) = num(p, "/reference/mod-") {
                page(&format!("module {i}"), prose(MANUAL, 2000 + i, 150), vec![])
            } else {
                let s = sections.iter().find(|s| p.starts_with(&format!("/{s}/")))?;
                let i = num(p, &format!("/{s}/"))?;
                page(
                    &format!("{s} {i}"),
                    prose(MANUAL, 3000 + i * 31 + s.len() as u64, 150),
                    vec![],
                )
            }
        }
    })
}

/// Whether a hub-case URL path is on-topic (by construction).
fn hub_on_topic(path: &str) -> bool {
    path.starts_with("/reference/sky-")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn focused_crawl_finds_on_topic_pages_behind_an_off_topic_hub() {
    let port = crate::support::serve_site(hub_site).await;
    const N: usize = 40;
    let run = |focus: bool| async move {
        let o: Vec<String> = vec![
            format!("crawl.max_pages={N}"),
            "crawl.concurrency=1".into(),
            "politeness.min_delay_ms=0".into(),
            "politeness.delay_factor=0.0".into(),
            format!("focus.enabled={focus}"),
            r#"focus.keywords=["astronomy", "telescope", "galaxy", "planet", "comet", "star", "orbit", "nebula"]"#
                .into(),
        ];
        crate::support::crawl_port(port, &o).await
    };
    let (_b, bfs) = run(false).await;
    let (dir, focused) = run(true).await;
    let on = |rs: &[PageRecord]| {
        rs.iter()
            .filter(|r| hub_on_topic(url::Url::parse(&r.url).unwrap().path()))
            .count()
    };
    let (hb, hf) = (on(&bfs), on(&focused));
    eprintln!("hub case, first {N} pages: on-topic breadth-first {hb}, focused {hf}");
    assert_eq!(bfs.len(), N);
    assert_eq!(focused.len(), N);
    assert!(hf >= 2 * hb.max(1) && hf >= 12, "focused {hf} vs breadth-first {hb}");
    // The deeper on-topic pages (two hops behind the hub) are reached
    // because their siblings turned out on-topic: the URL-word and host
    // components say so in the record and in `explain`.
    let deep = focused
        .iter()
        .find(|r| r.url.contains("/reference/sky-1") && r.depth == 3)
        .expect("a deeper on-topic page");
    assert!(deep.score.url_relevance > 0.0, "{:?}", deep.score);
    let settings = Settings::of_crawl(dir.path()).unwrap();
    let text = simcrawl::report::explain::explain(dir.path(), &deep.url, &settings).unwrap();
    assert!(
        text.contains("url_relevance") && text.contains("host_relevance"),
        "{text}"
    );
}
