//! Sitemaps end to end: a crawl seeded at the test web's `sitemaps.test`
//! finds the pages only its sitemaps list (robots.txt `Sitemap:` lines,
//! `/sitemap.xml`, an index, gzip and text sitemaps), keeps the protocol's
//! limits (the gzip bomb is cut at 50 MiB, `max_urls_per_file` and
//! `max_nesting` stop reading, the broken sitemap keeps the URLs before its
//! error), never reads a robots-disallowed sitemap or queues another host's
//! URLs, logs every file in `sitemaps.jsonl`, and `explain` shows the
//! sitemap component.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::{CrawlDir, Decision};
use simcrawl::sitemap::{Cut, Format, Outcome, SitemapRecord, Source};
use simcrawl::testweb::{RunningTestWeb, SitemapTruth, TestWeb, TestWebOptions, SITEMAP_HOST};
use simcrawl::Settings;

/// `many.txt` lists 30 URLs; the crawl reads 20.
const MAX_URLS: usize = 20;

const OVERRIDES: [&str; 2] = [
    "sitemaps.max_urls_per_file=20",
    // Two requests at once: the sitemaps are read while /hub/ answers slowly.
    "politeness.max_in_flight_per_host=2",
];

async fn start_web() -> RunningTestWeb {
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

async fn crawl(server: &RunningTestWeb, dir: &Path, overrides: &[&str]) -> (crawl::CrawlSummary, Vec<PageRecord>) {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let settings = Settings::test_web(&o).unwrap();
    let seeds = vec![server.sitemap_truth().seed];
    let run = crawl::run(settings, CrawlOptions::new(dir, seeds), std::future::pending());
    let summary = tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the crawl ends within 60 s")
        .unwrap();
    let records = read_log(&CrawlDir::new(dir).log()).unwrap();
    (summary, records)
}

fn sitemap_log(dir: &Path) -> Vec<SitemapRecord> {
    let text = std::fs::read_to_string(CrawlDir::new(dir).sitemaps()).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The one record of `url` that is not an "already read" skip.
fn record<'a>(log: &'a [SitemapRecord], url: &str) -> &'a SitemapRecord {
    let found: Vec<&SitemapRecord> = log
        .iter()
        .filter(|r| r.url == url && r.reason.as_deref() != Some("already read in this run"))
        .collect();
    assert_eq!(found.len(), 1, "{url}: {found:?}");
    found[0]
}

fn is_sitemap(url: &str) -> bool {
    [".xml", ".txt", ".xml.gz"].iter().any(|s| url.ends_with(s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_find_unlinked_pages_within_the_limits() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (summary, records) = crawl(&server, dir.path(), &OVERRIDES).await;
    let t: SitemapTruth = server.sitemap_truth();
    assert_eq!(summary.stop, crawl::StopReason::Completed);

    let by_url: HashMap<&str, &PageRecord> = records.iter().map(|r| (r.canonical.as_str(), r)).collect();
    assert_eq!(by_url.len(), records.len(), "each URL recorded once");
    let cut_many: HashSet<&str> = t.many[MAX_URLS..].iter().map(String::as_str).collect();
    // Every page a sitemap leads to was fetched, as new, with the sitemap
    // as its parent and a sitemap component.
    for url in t.sitemap_only.iter().filter(|u| !cut_many.contains(u.as_str())) {
        let r = by_url.get(url.as_str()).unwrap_or_else(|| panic!("{url} not fetched"));
        assert_eq!(r.decision, Decision::New, "{url}");
        assert_eq!(r.depth, 1, "{url}");
        let parent = r.parent.as_deref().unwrap_or("");
        assert!(is_sitemap(parent), "{url}: parent {parent}");
        assert!(r.score.sitemap > 0.0, "{url}: {:?}", r.score);
    }
    // Exactly the pages of the truth (with many.txt read up to the limit).
    let want: HashSet<&str> = t
        .pages
        .iter()
        .map(String::as_str)
        .filter(|u| !cut_many.contains(u))
        .collect();
    let got: HashSet<&str> = by_url.keys().copied().collect();
    assert_eq!(got, want, "pages fetched vs truth");
    for url in t.never.iter().chain(&t.many[MAX_URLS..]) {
        assert!(!by_url.contains_key(url.as_str()), "{url} must not be fetched");
    }
    // No request left the host (the foreign sitemap's URLs are not queued),
    // and nothing below the nesting limit or under /private/ was requested.
    let requests = server.requests();
    for r in &requests {
        assert_eq!(r.host, SITEMAP_HOST, "{r:?}");
        assert!(!r.target.starts_with("/private/"), "{r:?}");
        assert!(
            !["/nest/4.xml", "/nest/5.xml", "/nest/urls-3.xml"].contains(&r.target.as_str()),
            "{r:?}"
        );
    }
    let count = |target: &str| requests.iter().filter(|r| r.target == target).count();
    assert_eq!(count("/index.xml"), 1, "the self-listing index is read once");
    assert_eq!(count("/bomb.xml.gz"), 1);

    // A URL linked and listed carries the sitemap's component (priority 1.0,
    // an old lastmod): the sitemap was read while /hub/ answered.
    let linked = by_url[t.linked_and_listed.as_str()];
    assert!((linked.score.sitemap - 1.0).abs() < 1e-9, "{:?}", linked.score);

    let log = sitemap_log(dir.path());
    let index = record(&log, &t.index);
    assert_eq!(
        (index.source, index.outcome, index.format, index.nesting),
        (Source::Robots, Outcome::Read, Some(Format::Index), 0)
    );
    assert!(log
        .iter()
        .any(|r| r.url == t.index && r.nesting == 1 && r.outcome == Outcome::Skipped));
    let root = record(&log, &t.root);
    assert_eq!(
        (root.source, root.outcome, root.queued),
        (Source::Root, Outcome::Read, 2)
    );
    let urls = record(&log, &t.urls);
    assert_eq!((urls.entries, urls.queued, urls.known), (5, 5, 0));
    let gz = record(&log, &t.gzip);
    assert!(gz.gzip);
    assert_eq!(
        (gz.format, gz.outcome, gz.queued),
        (Some(Format::UrlSet), Outcome::Read, 3)
    );
    let text = record(&log, &t.text);
    assert_eq!((text.format, text.entries, text.skipped), (Some(Format::Text), 4, 2));
    // The broken sitemap: a failure recorded, the URLs before it kept.
    let broken = record(&log, &t.broken);
    assert_eq!((broken.outcome, broken.entries, broken.queued), (Outcome::Broken, 2, 2));
    assert!(
        broken.reason.as_deref().unwrap_or("").contains("XML error"),
        "{broken:?}"
    );
    // The bomb: cut at 50 MiB decompressed, its first URL kept.
    let bomb = record(&log, &t.bomb);
    assert_eq!(
        (bomb.outcome, bomb.cut, bomb.gzip, bomb.bytes, bomb.queued),
        (Outcome::Cut, Some(Cut::MaxBytes), true, 50 << 20, 1)
    );
    let many = record(&log, &t.many_sitemap);
    assert_eq!(
        (many.outcome, many.cut, many.entries, many.queued),
        (Outcome::Cut, Some(Cut::MaxEntries), MAX_URLS as u64, MAX_URLS as u64)
    );
    // Nesting: /nest/3.xml (level 3) is read, its sitemaps are not.
    for (i, url) in t.nest.iter().enumerate().take(3) {
        let r = record(&log, url);
        assert_eq!((r.outcome, r.nesting), (Outcome::Read, i as u32 + 1), "{url}");
    }
    assert!(record(&log, &t.nest[2])
        .reason
        .as_deref()
        .unwrap_or("")
        .contains("max_nesting"));
    assert!(log.iter().all(|r| r.url != t.nest[3] && r.url != t.nest[4]));
    let foreign = record(&log, &t.foreign);
    assert_eq!((foreign.other_host, foreign.queued), (2, 0));
    let missing = record(&log, &t.missing);
    assert_eq!((missing.outcome, missing.status), (Outcome::Failed, 404));
    let private = record(&log, &t.private);
    assert_eq!((private.outcome, private.status), (Outcome::Skipped, 0));
    assert!(
        private.reason.as_deref().unwrap_or("").contains("robots.txt"),
        "{private:?}"
    );
    let moved = record(&log, &t.moved.0);
    assert_eq!((moved.outcome, moved.status), (Outcome::Failed, 301));
    let target = record(&log, &t.moved.1);
    assert_eq!(
        (target.source, target.outcome, target.queued),
        (Source::Redirect, Outcome::Read, 1)
    );
    assert_eq!(target.parent.as_deref(), Some(t.moved.0.as_str()));

    // The summary counts the same.
    let s = &summary.sitemaps;
    assert_eq!(s.cut, 2);
    assert_eq!(s.broken, 1);
    assert_eq!(s.failed, 2, "404 and the redirect");
    assert_eq!(s.read as usize + s.failed as usize + s.skipped as usize, log.len());
    assert_eq!(
        s.queued as usize,
        t.sitemap_only.len() - cut_many.len() + 2,
        "plus linked/0 and linked/1"
    );

    // explain shows the component of a sitemap-only page: priority 0.9 +
    // changefreq daily 0.4.
    let settings = Settings::test_web(&OVERRIDES.map(String::from)).unwrap();
    let only0 = format!("http://{SITEMAP_HOST}:{}/only/0/", server.port());
    let text = simcrawl::report::explain::explain(dir.path(), &only0, &settings).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("sitemap "))
        .unwrap_or_else(|| panic!("no sitemap line in:\n{text}"));
    assert!(line.contains("1.300"), "{line}");
    assert!(text.contains(&format!("parent      {} (depth 1)", t.urls)), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_off_reads_none() {
    let server = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let (summary, records) = crawl(&server, dir.path(), &["sitemaps.enabled=false"]).await;
    let t = server.sitemap_truth();
    // Only what links reach: the seed, the hub and the linked pages.
    let got: HashSet<String> = records.iter().map(|r| r.canonical.clone()).collect();
    let want: HashSet<String> = t.pages[..5].iter().cloned().collect();
    assert_eq!(got, want);
    assert!(records.iter().all(|r| r.score.sitemap == 0.0));
    assert_eq!(summary.sitemaps, Default::default());
    assert!(!CrawlDir::new(dir.path()).sitemaps().exists());
    let requested: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert!(
        requested.iter().all(|p| p == "/robots.txt" || !is_sitemap(p)),
        "{requested:?}"
    );

    // With the root sitemap off, only robots.txt's are read; no index is
    // followed at nesting 0; one file per host: /moved.xml is not fetched
    // (the robots-disallowed sitemap is skipped before the count).
    let dir = tempfile::tempdir().unwrap();
    server.clear_requests();
    crawl(
        &server,
        dir.path(),
        &[
            "sitemaps.root_sitemap=false",
            "sitemaps.max_nesting=0",
            "sitemaps.max_files_per_host=1",
        ],
    )
    .await;
    let log = sitemap_log(dir.path());
    assert!(log.iter().all(|r| r.source != Source::Root), "{log:?}");
    let index = record(&log, &t.index);
    assert_eq!(index.outcome, Outcome::Read);
    assert!(
        index.reason.as_deref().unwrap_or("").contains("max_nesting (0)"),
        "{index:?}"
    );
    assert!(record(&log, &t.private)
        .reason
        .as_deref()
        .unwrap_or("")
        .contains("robots.txt"));
    let moved = record(&log, &t.moved.0);
    assert_eq!((moved.outcome, moved.status), (Outcome::Skipped, 0));
    assert!(
        moved.reason.as_deref().unwrap_or("").contains("max_files_per_host (1)"),
        "{moved:?}"
    );
    let fetched: Vec<String> = server
        .requests()
        .into_iter()
        .map(|r| r.target)
        .filter(|p| p != "/robots.txt" && is_sitemap(p))
        .collect();
    assert_eq!(fetched, ["/index.xml"]);
}

/// The fields of `sitemaps.jsonl` are those docs/reports.md lists (rows
/// "| `field` |" under its heading), both ways.
#[test]
fn sitemap_record_fields_are_documented() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reports.md")).unwrap();
    let mut documented = HashSet::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.contains("sitemaps.jsonl");
        } else if let (true, Some(rest)) = (inside, line.strip_prefix("| `")) {
            documented.insert(rest[..rest.find('`').unwrap()].to_string());
        }
    }
    let r = SitemapRecord::new("http://a.test/sitemap.xml", Source::Root, None, 0);
    let serde_json::Value::Object(fields) = serde_json::to_value(&r).unwrap() else {
        panic!("not an object")
    };
    let produced: HashSet<String> = fields.keys().cloned().collect();
    assert_eq!(produced, documented);
}
