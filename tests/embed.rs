//! The embedding API end to end: a `Crawler` built in code crawls the test
//! web, its callback sees every record `pages.jsonl` gets, and a shutdown
//! future stops it resumably.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use simcrawl::crawllog::read_log;
use simcrawl::model::CrawlDir;
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::{Crawler, Decision, Settings, StopReason};

async fn test_web() -> RunningTestWeb {
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    RunningTestWeb::start(web, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawler_callback_sees_every_logged_record() {
    let server = test_web().await;
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<(String, Decision)>>> = Arc::default();
    let sink = seen.clone();
    let summary = Crawler::builder()
        .settings(Settings::test_web(&["crawl.max_pages=120".to_string()]).unwrap())
        .seeds(server.seeds())
        .out_dir(dir.path())
        .on_page(move |p| sink.lock().unwrap().push((p.canonical.clone(), p.decision)))
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    server.shutdown().await;
    let log = read_log(&CrawlDir::new(dir.path()).log()).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(summary.pages, 120);
    assert_eq!(summary.stop, StopReason::MaxPages);
    assert_eq!(seen.len(), log.len());
    let logged: Vec<(String, Decision)> = log.into_iter().map(|r| (r.canonical, r.decision)).collect();
    assert_eq!(seen, logged, "the callback sees the records in log order");
    assert!(
        seen.iter().any(|(_, d)| d.is_duplicate()),
        "the test web has duplicates"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawler_stops_on_its_shutdown_future_and_resumes() {
    let server = test_web().await;
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings::test_web(&["crawl.max_pages=150".to_string()]).unwrap();
    let pages = Arc::new(AtomicU64::new(0));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let counter = pages.clone();
    let first = Crawler::builder()
        .settings(settings())
        .seeds(server.seeds())
        .out_dir(dir.path())
        .on_page(move |_| {
            if counter.fetch_add(1, Ordering::Relaxed) + 1 == 20 {
                if let Some(tx) = tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            }
        })
        .shutdown(async {
            let _ = rx.await;
        })
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(first.stop, StopReason::Interrupted);
    assert!(first.pages >= 20 && first.pages < 150, "{}", first.pages);
    let second = Crawler::builder()
        .settings(settings())
        .out_dir(dir.path())
        .resume(true)
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    server.shutdown().await;
    assert_eq!(second.total_pages, 150, "max_pages counts both runs");
    assert_eq!(first.pages + second.pages, 150);
}
