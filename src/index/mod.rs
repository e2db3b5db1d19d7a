//! The permuted-table Hamming index (pipeline: after simhash, before the dedup
//! decision): Manku, Jain and Das Sarma 2007, §3. Finds every stored 64-bit
//! fingerprint within Hamming distance k of a query while inserts keep arriving.
//!
//! - [`design`]: which permutations and prefix lengths (the paper's designs,
//!   X(f, k, d), an exact covering check).
//! - [`table`]: [`LiveIndex`], the live tables the crawl engine queries.
//! - [`compressed`]: sealed runs as XOR-delta + Huffman blocks (§3.2).
//! - `refs`: `RefIndex`, a sealed index storing each fingerprint once and
//!   references in the tables (≈ 46–50 B/fp for 10 tables, ids included);
//!   measured by `simcrawl bench index`, not used by the crawl, so hidden
//!   from the documented API.
//! - [`batch`]: tables over the queries, parallel scan of the stored file (§3.3).
//! - [`persist`]: snapshots of the tables beside the crawl store.
//! - [`bench`]: the shared workload and `simcrawl bench index`.
//!
//! docs/index.md teaches the structure and gives measured figures.

pub mod batch;
pub mod bench;
pub mod compressed;
pub mod design;
#[cfg(test)]
mod oracle;
pub mod persist;
#[doc(hidden)]
pub mod refs;
pub mod table;

pub use design::{Design, TableSpec};
pub use persist::SnapshotError;
pub use table::{LiveIndex, Match, ProbeStats};
