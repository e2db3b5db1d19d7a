//! simcrawl: a polite web crawler with near-duplicate detection built into
//! its frontier.
//!
//! A page's near-duplicate status, found online with a permuted-table simhash
//! index (Manku, Jain and Das Sarma, WWW 2007) and confirmed by content
//! shingles, decides whether its out-links are crawled and how soon.
//!
//! # Embedding
//!
//! - [`Crawler`] (built with [`Crawler::builder`]): settings, seeds, an output
//!   directory, an optional shutdown future and per-page callback; returns a
//!   [`CrawlSummary`], and can serve live [`metrics`] (Prometheus text and a
//!   JSON status) while it runs. Each fetch attempt is a [`PageRecord`] with its
//!   [`Decision`].
//! - [`Settings`]: `config/default.toml` under the caller's layers and
//!   `key=value` overrides ([`Settings::load`], [`Settings::from_layers`]).
//! - [`Fingerprinter`]: a document's 64-bit simhash; [`hamming`] distance.
//! - [`LiveIndex`]: the permuted-table Hamming index (insert, query within k,
//!   save and load).
//! - [`Error`]: every failure of an operation (per-URL failures are data in
//!   the records, not errors).
//! - [`model`]: the record types; [`config`]: the settings' sections;
//!   [`testweb`]: the built-in local test web with its ground truth.
//!
//! `examples/embed_crawler.rs` and `examples/embed_index.rs` show both.
//!
//! # The pipeline's modules
//!
//! In data-flow order: `frontier` (per-host priority queues), `politeness`
//! (robots.txt, delays), `sitemap` (sitemap files), `fetch`, `canon` (canonicalization), `extract`,
//! `features`, `simhash`, `index`, `sketch` (content sketches), `dedup`
//! (decisions and policy), `store` (sled), `crawllog` (`pages.jsonl`),
//! `crawl` (the loop that joins them), `mirror`, `report`; beside them
//! `host`, `hash`, `focus`, `eval`, `fingerprint`, `demo`, `bench`.
//! docs/ARCHITECTURE.md maps each to its files. `dedup`, `host`, `hash` and
//! `error` are private; the other stages are public only because the
//! `simcrawl` binary and the end-to-end tests in `tests/` drive them
//! directly, and are hidden from these docs: they carry no stability promise.
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[doc(hidden)]
pub mod bench;
mod blocked_bloom;
#[doc(hidden)]
pub mod canon;
mod chunkmap;
pub mod config;
#[doc(hidden)]
pub mod crawl;
mod crawler;
#[doc(hidden)]
pub mod crawllog;
mod dedup;
#[doc(hidden)]
pub mod demo;
mod error;
#[doc(hidden)]
pub mod eval;
#[doc(hidden)]
pub mod extract;
#[doc(hidden)]
pub mod features;
#[doc(hidden)]
pub mod fetch;
#[doc(hidden)]
pub mod fingerprint;
#[doc(hidden)]
pub mod focus;
#[doc(hidden)]
pub mod frontier;
mod hash;
mod hashsort;
mod host;
#[doc(hidden)]
pub mod index;
pub mod metrics;
#[doc(hidden)]
pub mod mirror;
pub mod model;
#[doc(hidden)]
pub mod politeness;
#[doc(hidden)]
pub mod recrawl;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod simhash;
#[doc(hidden)]
pub mod sitemap;
#[doc(hidden)]
pub mod sketch;
mod spillmap;
#[doc(hidden)]
pub mod store;
pub mod testweb;
pub mod warc;

pub use config::Settings;
pub use crawl::{CrawlSummary, StopReason};
pub use crawler::{Crawler, CrawlerBuilder};
pub use crawllog::PageRecord;
pub use error::{Error, Result};
pub use fingerprint::Fingerprinter;
pub use index::LiveIndex;
pub use model::Decision;
pub use simhash::hamming;
