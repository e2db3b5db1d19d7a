//! [`TableBuckets`]: where the near-duplicate index of a crawl that several
//! worker processes share keeps its permuted tables (Manku §3.1: table i,
//! grouped by the top bits of π_i(fingerprint)); [`MemBuckets`], an
//! in-process implementation for tests. The Redis implementation is in
//! `redis_tables.rs`; which buckets a fingerprint goes to is
//! `crate::index::shared`'s business.
//!
//! A bucket holds entries of 16 bytes, a fingerprint and a page id (u64
//! big-endian each), in the order they were added. An entry may be present
//! twice (an add retried after a dropped connection): readers ignore the
//! repeats.

use super::StoreError;
use parking_lot::Mutex;
use std::collections::HashMap;

/// One bucket: table `table`'s group of fingerprints whose permuted top
/// bits are `prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bucket {
    /// The table (0-based).
    pub table: u8,
    /// The key bits of the permuted fingerprint (right-aligned).
    pub prefix: u64,
}

/// One entry: a fingerprint and the page it names.
pub type BucketEntry = (u64, u64);

/// The buckets of a crawl's shared near-duplicate tables. Each call is one
/// round trip per node it touches.
pub trait TableBuckets: Send + Sync {
    /// The entries of each bucket, in the order of `buckets`.
    fn fetch(&self, buckets: &[Bucket]) -> Result<Vec<Vec<BucketEntry>>, StoreError>;
    /// Add each entry to its bucket.
    fn add(&self, entries: &[(Bucket, BucketEntry)]) -> Result<(), StoreError>;
}

/// An entry as the bucket stores it.
pub(crate) fn encode_entry((fp, id): BucketEntry) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&fp.to_be_bytes());
    b[8..].copy_from_slice(&id.to_be_bytes());
    b
}

/// A bucket's bytes as entries, repeats left out. A length that is not a
/// multiple of 16 is damage.
pub(crate) fn decode_entries(bytes: &[u8]) -> Result<Vec<BucketEntry>, String> {
    if !bytes.len().is_multiple_of(16) {
        return Err(format!("a bucket of {} bytes (entries are 16)", bytes.len()));
    }
    let mut out: Vec<BucketEntry> = bytes
        .chunks_exact(16)
        .map(|c| {
            let word = |i: usize| u64::from_be_bytes(c[i..i + 8].try_into().expect("8 bytes"));
            (word(0), word(8))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// [`TableBuckets`] in memory (tests; several replicas in one process
/// share one through an `Arc`).
#[derive(Default)]
pub struct MemBuckets {
    buckets: Mutex<HashMap<Bucket, Vec<u8>>>,
    fetches: std::sync::atomic::AtomicU64,
}

impl MemBuckets {
    /// Empty.
    pub fn new() -> Self {
        MemBuckets::default()
    }

    /// Calls to [`TableBuckets::fetch`] so far.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Entries stored, repeats included.
    pub fn entries(&self) -> usize {
        self.buckets.lock().values().map(|b| b.len() / 16).sum()
    }
}

impl TableBuckets for MemBuckets {
    fn fetch(&self, buckets: &[Bucket]) -> Result<Vec<Vec<BucketEntry>>, StoreError> {
        self.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let all = self.buckets.lock();
        buckets
            .iter()
            .map(|b| decode_entries(all.get(b).map_or(&[][..], |v| v)).map_err(StoreError::Backend))
            .collect()
    }

    fn add(&self, entries: &[(Bucket, BucketEntry)]) -> Result<(), StoreError> {
        let mut all = self.buckets.lock();
        for (b, e) in entries {
            all.entry(*b).or_default().extend_from_slice(&encode_entry(*e));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_repeats_are_read_once() {
        let mut bytes = Vec::new();
        for e in [(7, 1), (u64::MAX, 2), (7, 1)] {
            bytes.extend_from_slice(&encode_entry(e));
        }
        assert_eq!(decode_entries(&bytes).unwrap(), vec![(7, 1), (u64::MAX, 2)]);
        assert!(decode_entries(&bytes[..17]).is_err());
        let m = MemBuckets::new();
        let b = Bucket { table: 3, prefix: 9 };
        m.add(&[(b, (1, 2)), (b, (1, 2)), (b, (3, 4))]).unwrap();
        let other = Bucket { table: 4, prefix: 9 };
        assert_eq!(m.fetch(&[b, other]).unwrap(), vec![vec![(1, 2), (3, 4)], vec![]]);
        assert_eq!(m.entries(), 3);
    }
}
