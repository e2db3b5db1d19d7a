//! Recrawl rounds against `changing.test` (pages that change with the test
//! web's epoch, with truth): each round finds exactly the pages that
//! changed, asks conditionally and gets 304s for the unchanged ones, adapts
//! every page's interval within its bounds, revisits only the due pages in
//! a round by due time, and a plain resume afterwards keeps every line.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use simcrawl::crawl::{self, CrawlOptions};
use simcrawl::crawllog::{read_log, PageRecord};
use simcrawl::model::{Change, CrawlDir, Decision};
use simcrawl::recrawl::Round;
use simcrawl::testweb::changing::{self, Schedule};
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::Settings;

/// Intervals: 1000 s at first, halved on change and times 1.5 otherwise,
/// within 300..=2000 (so two rounds reach both bounds).
const OVERRIDES: [&str; 5] = [
    "recrawl.initial_interval_secs=1000",
    "recrawl.min_interval_secs=300",
    "recrawl.max_interval_secs=2000",
    "recrawl.inc_rate=0.5",
    "recrawl.dec_rate=0.5",
];

async fn run(server: &RunningTestWeb, dir: &Path, resume: bool, round: Option<Round>) -> Vec<PageRecord> {
    let overrides: Vec<String> = OVERRIDES.iter().map(|s| s.to_string()).collect();
    let settings = Settings::test_web(&overrides).unwrap();
    let seeds = vec![server.url(changing::HOST, "/")];
    let opts = CrawlOptions {
        resume,
        recrawl: round,
        ..CrawlOptions::new(dir, seeds)
    };
    let summary = tokio::time::timeout(
        Duration::from_secs(60),
        crawl::run(settings, opts, std::future::pending()),
    )
    .await
    .expect("crawl finishes")
    .unwrap();
    assert_eq!(summary.stop, crawl::StopReason::Completed);
    read_log(&dir.join(CrawlDir::LOG_FILE)).unwrap()
}

/// The interval after `changes` (in order) from the initial 1000 s.
fn interval_after(changes: &[Change]) -> u64 {
    changes.iter().fold(1000f64, |i, c| {
        let next = if *c == Change::Changed { i * 0.5 } else { i * 1.5 };
        next.round().clamp(300.0, 2000.0)
    }) as u64
}

/// Checks one round's records (those after `before`) against the truth for
/// `from → to`, and the server's log of that round; returns the change
/// found per URL.
fn check_round(
    server: &RunningTestWeb,
    records: &[PageRecord],
    before: usize,
    pages: &[(String, Schedule)],
    from: u64,
    to: u64,
    history: &mut HashMap<String, Vec<Change>>,
) {
    let round = &records[before..];
    let mut seen: HashMap<&str, &PageRecord> = HashMap::new();
    for r in round {
        assert!(
            seen.insert(r.canonical.as_str(), r).is_none(),
            "{} fetched twice in one round",
            r.canonical
        );
    }
    assert_eq!(round.len(), pages.len(), "one revisit per page: {round:#?}");
    for (url, schedule) in pages {
        let r = seen.get(url.as_str()).unwrap_or_else(|| panic!("{url} not revisited"));
        let want = schedule.change(from, to);
        assert_eq!(r.change, Some(want), "{url} ({schedule:?}) {from} -> {to}");
        let n = history.get(url).map_or(0, Vec::len) as u32;
        assert_eq!(r.revisit, Some(n + 2), "{url}");
        match want {
            Change::Unchanged => {
                assert_eq!((r.decision, r.status, r.bytes), (Decision::Unchanged, 304, 0), "{url}");
                assert!(r.simhash.is_some(), "{url}: a 304 keeps the page's simhash");
            }
            // Decided again, and not as a duplicate of its own previous version.
            _ => assert_eq!((r.decision, r.status), (Decision::New, 200), "{url}"),
        }
        if want == Change::NearUnchanged {
            assert!(
                r.change_distance.is_some_and(|d| d <= 3),
                "{url}: {:?}",
                r.change_distance
            );
        }
        let h = history.entry(url.clone()).or_default();
        h.push(want);
        assert_eq!(r.interval_secs, Some(interval_after(h)), "{url}: {h:?}");
    }
    // Every revisit asked conditionally, with the ETag the server gave;
    // exactly the unchanged pages were answered 304.
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        // (Each run also asks for the seed origin's /sitemap.xml, a 404 here.)
        .filter(|e| e.host == changing::HOST && e.target != "/robots.txt" && e.target != "/sitemap.xml")
        .collect();
    assert_eq!(requests.len(), pages.len(), "{requests:#?}");
    for e in &requests {
        let (_, schedule) = pages
            .iter()
            .find(|(u, _)| u.ends_with(&e.target))
            .unwrap_or_else(|| panic!("unexpected request {}", e.target));
        assert!(e.if_none_match.is_some(), "{}: no If-None-Match", e.target);
        assert!(e.if_modified_since.is_some(), "{}: no If-Modified-Since", e.target);
        let unchanged = schedule.change(from, to) == Change::Unchanged;
        assert_eq!(e.status, if unchanged { 304 } else { 200 }, "{}", e.target);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recrawl_rounds_find_exactly_the_changed_pages_with_conditional_requests() {
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pages: Vec<(String, Schedule)> = changing::pages(server.port())
        .into_iter()
        .map(|p| (p.url, p.schedule))
        .collect();

    // The first crawl: every page new, no conditional header sent.
    let first = run(&server, dir.path(), false, None).await;
    assert_eq!(first.len(), pages.len(), "{first:#?}");
    assert!(first.iter().all(|r| r.decision == Decision::New && r.revisit.is_none()));
    assert!(server
        .requests()
        .iter()
        .all(|e| e.if_none_match.is_none() && e.if_modified_since.is_none()));

    // Round 1 (every page, `--recrawl-all`) after the web moved to epoch 1.
    let mut history = HashMap::new();
    assert_eq!(server.bump_epoch(), 1);
    server.clear_requests();
    let log = run(&server, dir.path(), true, Some(Round::All)).await;
    check_round(&server, &log, first.len(), &pages, 0, 1, &mut history);

    // Round 2 (the pages due by a clock far ahead: all of them), epoch 2.
    assert_eq!(server.bump_epoch(), 2);
    server.clear_requests();
    let far = SystemTime::now() + Duration::from_secs(100_000);
    let now_ms = far.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let before = log.len();
    let log = run(&server, dir.path(), true, Some(Round::Due { now_ms })).await;
    check_round(&server, &log, before, &pages, 1, 2, &mut history);
    // Both bounds reached: a page changed twice is at 300 s, one unchanged
    // twice at 2000 s.
    let interval = |url: &str| log.iter().rev().find(|r| r.canonical == url).unwrap().interval_secs;
    let every = &pages.iter().find(|(_, s)| *s == Schedule::Every).unwrap().0;
    let never = &pages.iter().find(|(_, s)| *s == Schedule::Never).unwrap().0;
    assert_eq!((interval(every), interval(never)), (Some(300), Some(2000)));

    // Round 3 by due time, 1000 s from now: only the pages whose interval
    // shrank below it (every-epoch: 300 s, even-epoch: 750 s) are due.
    assert_eq!(server.bump_epoch(), 3);
    server.clear_requests();
    let soon = SystemTime::now() + Duration::from_secs(1000);
    let now_ms = soon.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let before = log.len();
    let due: Vec<(String, Schedule)> = pages
        .iter()
        .filter(|(_, s)| matches!(s, Schedule::Every | Schedule::Even))
        .cloned()
        .collect();
    assert_eq!(due.len(), 6);
    let log = run(&server, dir.path(), true, Some(Round::Due { now_ms })).await;
    check_round(&server, &log, before, &due, 2, 3, &mut history);

    // The summary counts the revisits by class.
    let summary = simcrawl::report::summary::build(&log, None);
    let v = summary.revisits.expect("revisits counted");
    let count = |c: &str| v.by_change.iter().find(|x| x.change == c).unwrap().count;
    let want = |c: Change| history.values().flatten().filter(|x| **x == c).count() as u64;
    assert_eq!(v.revisits, (pages.len() * 2 + due.len()) as u64);
    assert_eq!(count("changed"), want(Change::Changed));
    assert_eq!(count("near_unchanged"), want(Change::NearUnchanged));
    assert_eq!(count("unchanged"), want(Change::Unchanged));
    assert_eq!(v.not_modified, want(Change::Unchanged));

    // A plain resume afterwards: nothing to fetch, every line kept.
    server.clear_requests();
    let again = run(&server, dir.path(), true, None).await;
    assert_eq!(again, log);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_needs_a_stored_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CrawlOptions {
        recrawl: Some(Round::All),
        ..CrawlOptions::new(dir.path(), vec!["http://changing.test/".into()])
    };
    let err = crawl::run(Settings::test_web(&[]).unwrap(), opts, std::future::pending())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--resume"), "{err}");
}
