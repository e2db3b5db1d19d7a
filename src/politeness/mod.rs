//! Politeness (pipeline: between the frontier and the fetcher): robots.txt per
//! RFC 9309, Crawl-delay, per-host minimum delay and in-flight limits, adaptive
//! delay, Retry-After and exponential backoff. On by default; never fails open.

pub mod robots;
