//! End-to-end tests of simcrawl, one binary for all (see docs/STYLE.md).
//! Each module tests one part against the built-in test web or real files.

mod canon;
mod cli;
mod crawl;
mod damaged;
mod embed;
mod fingerprint_cli;
mod fingerprint_quality;
mod focus;
mod hamming;
mod host_rules;
mod hostile;
mod metrics;
mod near_eval;
mod parsers;
mod politeness;
mod recrawl;
mod redis_backend;
mod reports;
mod requests;
mod robots;
mod scope_domains;
mod sections;
mod sitemaps;
mod support;
mod testweb;
mod warc;
mod workers;
