//! Embed the crawler: serve the built-in test web on 127.0.0.1, crawl it
//! with a [`Crawler`], count decisions from the per-page callback, and stop
//! after 200 pages.
//!
//! ```text
//! cargo run --release --example embed_crawler
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};
use simcrawl::{Crawler, Settings};

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The test web answers for its own host names on one local port;
    // `Settings::test_web` maps them to 127.0.0.1 and turns delays down.
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    let server = RunningTestWeb::start(web, "127.0.0.1:0".parse()?).await?;
    let settings = Settings::test_web(&["crawl.max_pages=200".to_string()])?;

    let out = tempfile::tempdir()?;
    let counts: Arc<Mutex<BTreeMap<&'static str, u64>>> = Arc::default();
    let seen = counts.clone();
    let summary = Crawler::builder()
        .settings(settings)
        .seeds(server.seeds())
        .out_dir(out.path())
        .on_page(move |page| *seen.lock().unwrap().entry(page.decision.as_str()).or_default() += 1)
        .shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .build()?
        .run()
        .await?;
    server.shutdown().await;

    println!(
        "{} pages in {:.1?} ({:?})",
        summary.pages, summary.elapsed, summary.stop
    );
    for (decision, n) in counts.lock().unwrap().iter() {
        println!("  {decision:<16} {n}");
    }
    println!("crawl log: {}", out.path().join("pages.jsonl").display());
    Ok(())
}
