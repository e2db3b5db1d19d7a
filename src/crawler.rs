//! The embedding API: a [`Crawler`] built from settings, seeds and an output
//! directory, run to its end on the caller's runtime or on one of its own.
//!
//! ```no_run
//! use simcrawl::{Crawler, Settings};
//!
//! let settings = Settings::from_layers(&[], &["crawl.max_pages=50".to_string()])?;
//! let summary = Crawler::builder()
//!     .settings(settings)
//!     .seed("http://127.0.0.1:8080/")
//!     .out_dir("crawl-out")
//!     .on_page(|page| println!("{} {}", page.decision, page.canonical))
//!     .build()?
//!     .run_blocking()?;
//! println!("{} pages", summary.pages);
//! # Ok::<(), simcrawl::Error>(())
//! ```
//!
//! With [`CrawlerBuilder::metrics`] the crawl serves `GET /metrics`
//! (Prometheus text) and `GET /status` (JSON) while it runs (see
//! [`crate::metrics`]); [`CrawlSummary::metrics`] holds their last values.
//!
//! The output directory holds what `simcrawl crawl` writes (see
//! [`CrawlDir`](crate::model::CrawlDir)); a crawl stopped by its shutdown
//! future continues with [`CrawlerBuilder::resume`].

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use crate::crawl::{self, CrawlOptions, CrawlSummary};
use crate::crawllog::PageRecord;
use crate::error::{Error, Result};
use crate::Settings;

type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A crawl ready to run (from [`Crawler::builder`]).
pub struct Crawler {
    settings: Settings,
    opts: CrawlOptions,
    shutdown: Shutdown,
}

/// Builds a [`Crawler`]: settings (default: `config/default.toml`), seeds,
/// output directory (required), and optionally a shutdown future, a
/// per-page callback and resumption of an earlier crawl.
#[must_use]
pub struct CrawlerBuilder {
    settings: Option<Settings>,
    seeds: Vec<String>,
    out: Option<PathBuf>,
    resume: bool,
    recrawl: Option<crate::recrawl::Round>,
    progress: bool,
    on_page: Option<crawl::PageCallback>,
    metrics: Option<Metrics>,
    shutdown: Option<Shutdown>,
}

/// Where [`CrawlerBuilder::metrics`] serves.
enum Metrics {
    Addr(SocketAddr),
    Listener(std::net::TcpListener),
}

impl Crawler {
    /// A builder with nothing set.
    pub fn builder() -> CrawlerBuilder {
        CrawlerBuilder {
            settings: None,
            seeds: Vec::new(),
            out: None,
            resume: false,
            recrawl: None,
            progress: false,
            on_page: None,
            metrics: None,
            shutdown: None,
        }
    }

    /// Crawl until the frontier is empty, `crawl.max_pages` is reached or
    /// the shutdown future resolves, on the caller's tokio runtime (a
    /// multi-threaded one); then flush the store and write the reports.
    pub async fn run(self) -> Result<CrawlSummary> {
        crawl::run(self.settings, self.opts, self.shutdown).await
    }

    /// [`Crawler::run`] on a runtime of its own (`crawl.io_threads`
    /// threads), blocking the calling thread.
    pub fn run_blocking(self) -> Result<CrawlSummary> {
        crawl::run_blocking(self.settings, self.opts, self.shutdown)
    }
}

impl CrawlerBuilder {
    /// The settings (see [`Settings::load`] and [`Settings::from_layers`]).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Add one seed URL.
    pub fn seed(mut self, url: impl Into<String>) -> Self {
        self.seeds.push(url.into());
        self
    }

    /// Add seed URLs.
    pub fn seeds<S: Into<String>>(mut self, urls: impl IntoIterator<Item = S>) -> Self {
        self.seeds.extend(urls.into_iter().map(Into::into));
        self
    }

    /// The output directory (created if missing; it must not hold a crawl
    /// unless [`resume`](Self::resume) is set).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out = Some(dir.into());
        self
    }

    /// Continue the crawl stored in the output directory (seeds are ignored:
    /// the store has them).
    pub fn resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }

    /// Make this resumed crawl a recrawl round: revisit the recorded pages
    /// that `round` selects (see [`crate::recrawl`]) before the crawl goes
    /// on. Needs [`resume`](Self::resume).
    pub fn recrawl(mut self, round: crate::recrawl::Round) -> Self {
        self.recrawl = Some(round);
        self
    }

    /// Show a progress bar on a terminal.
    pub fn progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Call `f` with each page record as it is written to `pages.jsonl`. It
    /// runs on the thread that decides pages: keep it short.
    pub fn on_page(mut self, f: impl Fn(&PageRecord) + Send + Sync + 'static) -> Self {
        self.on_page = Some(Arc::new(f));
        self
    }

    /// Serve the crawl's live metrics on `addr` while it runs: `GET
    /// /metrics` in the Prometheus text format and `GET /status` as JSON
    /// (see [`crate::metrics`]). The address is bound by
    /// [`build`](Self::build): one that cannot be listened on is an
    /// [`Error::InvalidInput`]. The server stops when the crawl returns.
    pub fn metrics(mut self, addr: SocketAddr) -> Self {
        self.metrics = Some(Metrics::Addr(addr));
        self
    }

    /// [`metrics`](Self::metrics) on a listener bound by the caller (to
    /// know the port of `127.0.0.1:0` before the crawl starts).
    pub fn metrics_listener(mut self, listener: std::net::TcpListener) -> Self {
        self.metrics = Some(Metrics::Listener(listener));
        self
    }

    /// Stop the crawl when `signal` resolves (in-flight fetches finish; the
    /// crawl can be resumed). Without it the crawl runs to its end.
    pub fn shutdown(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// The crawler; an error when no output directory was given, a new
    /// crawl has no seed, or the metrics address cannot be listened on.
    pub fn build(self) -> Result<Crawler> {
        let out = self
            .out
            .ok_or_else(|| Error::InvalidInput("the crawler needs an output directory (out_dir)".into()))?;
        if !self.resume && self.seeds.is_empty() {
            return Err(Error::InvalidInput("a new crawl needs at least one seed URL".into()));
        }
        if self.recrawl.is_some() && !self.resume {
            return Err(Error::InvalidInput(
                "a recrawl revisits a stored crawl: it needs resume".into(),
            ));
        }
        let metrics = match self.metrics {
            Some(Metrics::Addr(addr)) => Some(crate::metrics::bind(addr)?),
            Some(Metrics::Listener(l)) => Some(l),
            None => None,
        };
        let opts = CrawlOptions {
            resume: self.resume,
            recrawl: self.recrawl,
            progress: self.progress,
            on_page: self.on_page,
            metrics,
            ..CrawlOptions::new(out, self.seeds)
        };
        Ok(Crawler {
            settings: self.settings.unwrap_or_default(),
            opts,
            shutdown: self.shutdown.unwrap_or_else(|| Box::pin(std::future::pending())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawler_needs_an_output_directory_and_seeds() {
        let e = Crawler::builder().seed("http://a.test/").build().err().unwrap();
        assert!(e.to_string().contains("out_dir"), "{e}");
        let e = Crawler::builder().out_dir("/tmp/x").build().err().unwrap();
        assert!(e.is_usage() && e.to_string().contains("seed"), "{e}");
        assert!(Crawler::builder().out_dir("/tmp/x").resume(true).build().is_ok());
    }

    #[test]
    fn a_metrics_address_in_use_is_bad_input() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let e = Crawler::builder()
            .out_dir("/tmp/x")
            .resume(true)
            .metrics(addr)
            .build()
            .err()
            .unwrap();
        assert!(e.is_usage() && e.to_string().contains(&addr.to_string()), "{e}");
    }
}
