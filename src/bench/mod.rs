//! Built-in benchmarks (`simcrawl bench index|hamming|pipeline|crawl|resume`),
//! beside the pipeline: each prints its figures with ratios against a
//! baseline measured in the same run (the machine is shared and noisy, so
//! absolute numbers move).
//!
//! - [`index`]: `bench index` (the live index against a BTreeSet-per-table
//!   baseline and a brute-force scan), `bench hamming` (batch mode against
//!   brute force) and the workload shared with `peer-bench/` and
//!   `benches/index.rs`.
//! - `crawl`: `bench crawl`, simcrawl against the peer people would pick
//!   (Scrapy) on the built-in test web.
//! - `redis`: `bench crawl --backend redis`, the crawl on a Redis Cluster
//!   against the disk store, with the cluster's commands, round trips, CPU
//!   and memory per page.
//! - `pipeline`: `bench pipeline`, the per-page path against BLAKE3.
//! - `resume`: `bench resume`, what `crawl --resume` reads before its first
//!   fetch.
//! - `heap`: the live heap counted by a wrapper around the global
//!   allocator ([`Counting`], installed by a binary built with `--features
//!   heap-count`), printed by `bench crawl` beside the peak RSS.

mod crawl;
mod frontier;
mod heap;
pub mod index;
mod pipeline;
mod redis;
mod resume;
mod workers;

pub use crawl::{cpu_time, disk_usage, peak_rss, run_crawl_bench, CrawlBenchOptions, CrawlFigures};
pub use frontier::run_frontier_bench;
pub use heap::{live_heap, Counting, LiveHeap};
pub use pipeline::run_pipeline_bench;
pub use redis::{run_redis_bench, RedisBenchOptions};
pub use resume::run_resume_bench;
pub use workers::run_workers_bench;
