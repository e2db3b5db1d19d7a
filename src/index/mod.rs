//! The permuted-table Hamming index (pipeline: after simhash, before the dedup
//! decision): Manku, Jain and Das Sarma 2007, §3. Finds every stored 64-bit
//! fingerprint within Hamming distance k of a query while inserts keep arriving.
//!
//! - [`design`]: which permutations and prefix lengths (the paper's designs,
//!   X(f, k, d), an exact covering check).
//! - [`table`]: [`LiveIndex`], the live tables the crawl engine queries.
//! - [`batch`]: tables over the queries, parallel scan of the stored file (§3.3).
//! - [`persist`]: snapshots of the tables beside the crawl store.
//! - [`shared`]: [`SharedIndex`], the tables of a crawl several worker
//!   processes share, kept in the store (Redis Cluster).
//!
//! Errors are the module's own: [`SnapshotError`] (snapshots) and
//! [`IndexError`] (batch mode's input). `simcrawl bench index` and `bench
//! hamming` measure this module from [`crate::bench::index`].
//! docs/index.md teaches the structure and gives measured figures.

pub mod batch;
pub mod design;
#[cfg(test)]
mod oracle;
pub mod persist;
pub mod shared;
pub mod table;

pub use batch::IndexError;
pub use design::{Design, TableSpec};
pub use persist::SnapshotError;
pub use shared::SharedIndex;
pub use table::{LiveIndex, Match, ProbeStats};
