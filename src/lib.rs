//! simcrawl: a polite web crawler with near-duplicate detection built into
//! its frontier.
//!
//! A page's near-duplicate status, found online with a permuted-table simhash
//! index (Manku, Jain and Das Sarma, WWW 2007), decides whether its out-links
//! are crawled and how soon.
//!
//! # Layout
//!
//! The modules in data-flow order, one per pipeline stage:
//!
//! - [`config`]: TOML → raw values → validated [`config::Settings`].
//! - [`frontier`]: per-host priority queues, ready-time heap, seen-set, scope, scores.
//! - [`politeness`]: robots.txt (RFC 9309), Crawl-delay, per-host rate, backoff.
//! - [`fetch`]: the `Fetcher` trait and its reqwest implementation; limits; redirects.
//! - [`canon`]: URL canonicalization (contract: `simcrawl canon`).
//! - [`extract`]: title, visible text, links, meta robots, canonical, language.
//! - [`features`]: tokens, stop words, stems, phrases, weights, template learning.
//! - [`simhash`]: 64-bit Charikar fingerprints and Hamming distance.
//! - [`index`]: the live permuted-table Hamming index; snapshots; batch mode.
//! - [`dedup`]: decisions (new / exact / near duplicate) and the dedup policy.
//! - [`store`]: the `Store` trait and its sled implementation.
//! - [`crawllog`]: one record per fetch attempt (`pages.jsonl`).
//! - [`crawl`]: the crawl loop that joins the stages.
//! - [`mirror`]: mirror host (prefix) pairs from duplicate matches.
//! - [`report`]: summary, clusters and mirror reports (JSON, CSV, HTML).
//!
//! Beside the pipeline: [`sketch`] (min-hash and Bloom-over-CDC detectors),
//! [`eval`] (precision/recall harness), [`focus`] (topic relevance),
//! [`testweb`] (the built-in local test web with ground truth), [`demo`]
//! (test web + crawl + score against the ground truth), [`bench`](mod@bench)
//! (built-in benchmarks) and [`error`].
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bench;
pub mod canon;
pub mod config;
pub mod crawl;
pub mod crawllog;
pub mod dedup;
pub mod demo;
pub mod error;
pub mod eval;
pub mod extract;
pub mod features;
pub mod fetch;
pub mod focus;
pub mod frontier;
pub mod index;
pub mod mirror;
pub mod model;
pub mod politeness;
pub mod report;
pub mod simhash;
pub mod sketch;
pub mod store;
pub mod testweb;

pub use config::Settings;
pub use error::{Error, Result};
