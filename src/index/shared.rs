//! [`SharedIndex`]: the permuted-table index of a crawl that several worker
//! processes share, with its tables in the store ([`TableBuckets`]; on
//! Redis Cluster one key per bucket, `{N|t|i|prefix}`, spread over the
//! cluster's slots) instead of memory.
//!
//! The design is [`Design::fewest_tables`]: each table costs one command
//! per query and per insert, so the fewest tables whose buckets expect at
//! most 8 fingerprints at `[index] expected_size_log2`. A fingerprint `f`
//! lives in bucket `(i, top p_i bits of π_i(f))` of every table i, so any
//! stored fingerprint within k of a query shares at least one of the
//! query's t buckets (the design covers k).
//!
//! Queries come in batches ([`SharedIndex::prefetch`]: the t buckets of
//! every fingerprint of a batch in one call, one round trip per node);
//! [`SharedIndex::query`] then answers from what was fetched plus the
//! entries this batch added ([`SharedIndex::insert`]), which
//! [`SharedIndex::flush`] writes at the end of the batch. Used under the
//! decision log's lock (`crate::dedup::replica`), so the buckets hold every
//! fingerprint decided before the batch: nothing is decided from a stale
//! view. Entries of a writer that lost the lock before its decisions
//! reached the log can be left in the buckets; the caller drops their ids
//! ([`SharedIndex::drop_ids`]) before it decides.

use super::design::Design;
use super::table::Match;
use crate::store::{Bucket, BucketEntry, StoreError, TableBuckets};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The tables of a shared near-duplicate index, in the store.
pub struct SharedIndex {
    design: Design,
    k: u32,
    buckets: Arc<dyn TableBuckets>,
    /// The stored entries within k of each fingerprint fetched for the
    /// batch.
    fetched: HashMap<u64, Vec<BucketEntry>>,
    /// Entries added in this batch, not written yet.
    pending: Vec<BucketEntry>,
    /// Fingerprints indexed, as far as this process has seen.
    len: usize,
    /// Fetch calls, and fetches for a fingerprint no prefetch covered.
    fetches: u64,
    misses: u64,
}

impl SharedIndex {
    /// Over `buckets`, with `design` (which should cover `k`).
    pub fn new(design: Design, k: u32, buckets: Arc<dyn TableBuckets>) -> Self {
        SharedIndex {
            design,
            k,
            buckets,
            fetched: HashMap::new(),
            pending: Vec::new(),
            len: 0,
            fetches: 0,
            misses: 0,
        }
    }

    /// Over `buckets`, with the design for `[index] expected_size_log2`.
    pub fn from_settings(settings: &crate::config::IndexSettings, k: u32, buckets: Arc<dyn TableBuckets>) -> Self {
        SharedIndex::new(Design::fewest_tables(k, settings.expected_size_log2), k, buckets)
    }

    /// The design in use.
    pub fn design(&self) -> &Design {
        &self.design
    }

    /// The buckets of `fp`, one per table.
    fn buckets_of(&self, fp: u64) -> impl Iterator<Item = Bucket> + '_ {
        self.design.specs().iter().enumerate().map(move |(i, t)| Bucket {
            table: i as u8,
            prefix: match t.prefix() {
                0 => 0,
                p => t.permute(fp) >> (64 - p),
            },
        })
    }

    /// Fetch the buckets of every fingerprint of `fps` not fetched yet in
    /// this batch (one call), keeping the entries within k of each. Returns
    /// the page ids of those entries.
    pub fn prefetch(&mut self, fps: &[u64]) -> Result<HashSet<u64>, StoreError> {
        let mut want: Vec<u64> = fps.iter().copied().filter(|f| !self.fetched.contains_key(f)).collect();
        want.sort_unstable();
        want.dedup();
        let mut ids = HashSet::new();
        if want.is_empty() {
            return Ok(ids);
        }
        let t = self.design.tables();
        let buckets: Vec<Bucket> = want.iter().flat_map(|&f| self.buckets_of(f)).collect();
        self.fetches += 1;
        let got = self.buckets.fetch(&buckets)?;
        for (fp, chunk) in want.iter().zip(got.chunks(t)) {
            let mut near: Vec<BucketEntry> = chunk
                .iter()
                .flatten()
                .copied()
                .filter(|(f, _)| (f ^ fp).count_ones() <= self.k)
                .collect();
            near.sort_unstable();
            near.dedup();
            ids.extend(near.iter().map(|e| e.1));
            self.fetched.insert(*fp, near);
        }
        Ok(ids)
    }

    /// Forget the fetched entries of these page ids (entries left by a
    /// writer whose decisions never reached the log).
    pub fn drop_ids(&mut self, ids: &HashSet<u64>) {
        if ids.is_empty() {
            return;
        }
        for v in self.fetched.values_mut() {
            v.retain(|e| !ids.contains(&e.1));
        }
    }

    /// Appends every entry within k of `fp` (stored before the batch, or
    /// added in it) to `out`, each once. A fingerprint no prefetch covered
    /// is fetched on its own.
    pub fn query(&mut self, fp: u64, out: &mut Vec<Match>) -> Result<(), StoreError> {
        if !self.fetched.contains_key(&fp) {
            self.misses += 1;
            self.prefetch(&[fp])?;
        }
        let before = out.len();
        let stored = self.fetched.get(&fp).map_or(&[][..], Vec::as_slice);
        for &(f, id) in stored.iter().chain(&self.pending) {
            let distance = (f ^ fp).count_ones();
            if distance <= self.k && !out[before..].iter().any(|m| m.fp == f && m.id == id) {
                out.push(Match { fp: f, id, distance });
            }
        }
        Ok(())
    }

    /// Index `fp` as page `id` (written by [`SharedIndex::flush`]).
    pub fn insert(&mut self, fp: u64, id: u64) {
        self.pending.push((fp, id));
        self.len += 1;
    }

    /// Another process indexed a fingerprint (counted in
    /// [`SharedIndex::len`]; its buckets already have it).
    pub fn note_indexed(&mut self) {
        self.len += 1;
    }

    /// Write the entries added in this batch, and end the batch (what was
    /// fetched is forgotten: other processes add to the buckets once the
    /// caller's lock is released).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.fetched.clear();
        if self.pending.is_empty() {
            return Ok(());
        }
        let entries: Vec<(Bucket, BucketEntry)> = self
            .pending
            .iter()
            .flat_map(|&e| self.buckets_of(e.0).map(move |b| (b, e)))
            .collect();
        self.buckets.add(&entries)?;
        self.pending.clear();
        Ok(())
    }

    /// End the batch without writing (its decisions did not reach the log).
    pub fn discard(&mut self) {
        self.len -= self.pending.len();
        self.pending.clear();
        self.fetched.clear();
    }

    /// Fingerprints indexed, as far as this process has seen.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no fingerprint is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fetch calls so far, and queries no prefetch covered.
    pub fn fetch_counts(&self) -> (u64, u64) {
        (self.fetches, self.misses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::LiveIndex;
    use crate::store::MemBuckets;
    use proptest::prelude::*;

    fn sorted(mut v: Vec<Match>) -> Vec<Match> {
        v.sort_unstable();
        v
    }

    #[test]
    fn fewest_tables_cover_k_with_long_prefixes() {
        let d = Design::fewest_tables(3, 24);
        assert!(d.covers(3), "{}", d.name());
        assert!(d.min_prefix() >= 21, "{}", d.name());
        assert!(d.tables() <= Design::for_k(3, 24).tables(), "{}", d.name());
    }

    proptest! {
        /// The shared index answers what the in-memory index answers, over
        /// batches that query and insert, with near copies planted.
        #[test]
        fn answers_like_the_live_index(
            base in proptest::collection::vec(any::<u64>(), 1..40),
            flips in proptest::collection::vec((0usize..40, 0u32..64, 0u32..64, 0u32..64), 0..60),
            batch in 1usize..8,
        ) {
            let k = 3;
            let mut fps = base.clone();
            for (i, a, b, c) in flips {
                let f = base[i % base.len()];
                fps.push(f ^ (1 << a) ^ (1 << b) ^ (1 << c));
            }
            let buckets = Arc::new(MemBuckets::new());
            let mut shared = SharedIndex::new(Design::fewest_tables(k, 12), k, buckets);
            let live = LiveIndex::new(Design::with_tables(k, 4), k);
            for (n, chunk) in fps.chunks(batch).enumerate() {
                shared.prefetch(chunk).unwrap();
                for (j, &fp) in chunk.iter().enumerate() {
                    let id = (n * batch + j) as u64;
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    shared.query(fp, &mut a).unwrap();
                    live.query(fp, &mut b);
                    prop_assert_eq!(sorted(a), sorted(b));
                    shared.insert(fp, id);
                    live.insert(fp, id);
                }
                shared.flush().unwrap();
            }
            prop_assert_eq!(shared.fetch_counts().1, 0);
        }
    }

    #[test]
    fn dropped_ids_and_discarded_batches_are_not_answered() {
        let buckets = Arc::new(MemBuckets::new());
        let mut a = SharedIndex::new(Design::fewest_tables(3, 12), 3, buckets.clone());
        a.insert(0xff, 1);
        a.flush().unwrap();
        // A batch that never reached the log leaves nothing.
        a.insert(0xfe, 2);
        a.discard();
        assert_eq!(a.len(), 1);
        let mut b = SharedIndex::new(Design::fewest_tables(3, 12), 3, buckets.clone());
        let ids = b.prefetch(&[0xfc]).unwrap();
        assert_eq!(ids, HashSet::from([1]));
        let mut out = Vec::new();
        b.query(0xfc, &mut out).unwrap();
        assert_eq!(
            out,
            vec![Match {
                fp: 0xff,
                id: 1,
                distance: 2
            }]
        );
        b.flush().unwrap();
        b.prefetch(&[0xfd]).unwrap();
        b.drop_ids(&HashSet::from([1]));
        out.clear();
        b.query(0xfd, &mut out).unwrap();
        assert!(out.is_empty());
        // A query no prefetch covered is fetched on its own.
        b.flush().unwrap();
        out.clear();
        b.query(0xfd, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(b.fetch_counts().1, 1);
    }
}
