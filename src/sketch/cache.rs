//! The decoded sketches a [`SketchIndex`](super::SketchIndex) read from its
//! spill file most recently, so that a candidate compared with many pages
//! (a page of a section whose pages are all alike) is read and decoded once
//! while it is in use.
//!
//! Eviction is CLOCK (second chance): each entry has a reference bit set on
//! every hit; a new entry takes the first slot after the hand whose bit is
//! clear, clearing the bits it passes. Replayed on the candidate reads of a
//! crawl of the real-web corpus, 1 024 entries answer 76% of the reads, as
//! many as a least-recently-used list of that size (docs/benchmarks.md,
//! "Real documentation pages").

use std::sync::Arc;

use super::confirm::Sketch;

/// Sketches kept decoded (each about the size of its record in the spill
/// file: at most 1 KB of hashes and its block tags).
pub(super) const SKETCH_CACHE: usize = 1024;

/// A CLOCK cache of decoded sketches and their pages' fingerprints, keyed
/// by their offset in the spill file (sketches are only appended, so an
/// offset names one sketch for the life of the file; only its fingerprint
/// is rewritten in place).
#[derive(Debug)]
pub(super) struct SketchCache {
    /// Offset → place in `ring`.
    at: hashbrown::HashMap<u64, usize>,
    ring: Vec<Entry>,
    hand: usize,
    /// Entries held at most ([`SKETCH_CACHE`]).
    cap: usize,
}

impl Default for SketchCache {
    fn default() -> Self {
        Self::with_capacity(SKETCH_CACHE)
    }
}

#[derive(Debug)]
struct Entry {
    key: u64,
    value: Arc<(Sketch, u64)>,
    used: bool,
}

impl SketchCache {
    /// A cache of at most `cap` (at least 1) sketches.
    pub(super) fn with_capacity(cap: usize) -> Self {
        SketchCache {
            at: hashbrown::HashMap::new(),
            ring: Vec::new(),
            hand: 0,
            cap: cap.max(1),
        }
    }

    /// The sketch at `key`, marked as used.
    pub(super) fn get(&mut self, key: u64) -> Option<Arc<(Sketch, u64)>> {
        let &i = self.at.get(&key)?;
        let e = &mut self.ring[i];
        e.used = true;
        Some(e.value.clone())
    }

    /// Keep `value` under `key` (not already present), evicting one entry
    /// when the cache is full.
    pub(super) fn insert(&mut self, key: u64, value: Arc<(Sketch, u64)>) {
        let entry = Entry {
            key,
            value,
            used: false,
        };
        if self.ring.len() < self.cap {
            self.at.insert(key, self.ring.len());
            self.ring.push(entry);
            return;
        }
        // Every entry passed loses its second chance, so this ends within
        // one turn of the ring.
        while self.ring[self.hand].used {
            self.ring[self.hand].used = false;
            self.hand = (self.hand + 1) % self.ring.len();
        }
        let old = std::mem::replace(&mut self.ring[self.hand], entry);
        self.at.remove(&old.key);
        self.at.insert(key, self.hand);
        self.hand = (self.hand + 1) % self.ring.len();
    }

    /// Give the sketch at `key`, if held, its page's new fingerprint
    /// ([`SketchIndex::set_fingerprint`](super::SketchIndex::set_fingerprint)).
    pub(super) fn set_fingerprint(&mut self, key: u64, simhash: u64) {
        if let Some(&i) = self.at.get(&key) {
            Arc::make_mut(&mut self.ring[i].value).1 = simhash;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::ContentSketch;

    fn value(n: u64) -> Arc<(Sketch, u64)> {
        Arc::new((Sketch::Content(ContentSketch::from_words(&[n])), n))
    }

    #[test]
    fn holds_at_most_its_size_and_keeps_what_is_used() {
        let mut c = SketchCache::default();
        for k in 0..SKETCH_CACHE as u64 {
            c.insert(k, value(k));
        }
        assert_eq!(c.len(), SKETCH_CACHE);
        // Key 0 is used again; the next insert passes it and evicts key 1.
        assert_eq!(c.get(0).map(|v| v.1), Some(0));
        c.insert(5000, value(5000));
        assert_eq!(c.len(), SKETCH_CACHE);
        assert!(c.get(0).is_some(), "a used entry has a second chance");
        assert!(c.get(1).is_none(), "the first unused entry after the hand goes");
        assert_eq!(c.get(5000).map(|v| v.1), Some(5000));
        // Many more keys: the size holds and every key maps to its own value.
        for k in 10_000..20_000u64 {
            c.insert(k, value(k));
            if k % 3 == 0 {
                assert_eq!(c.get(k).map(|v| v.1), Some(k));
            }
        }
        assert_eq!(c.len(), SKETCH_CACHE);
        assert_eq!(c.at.len(), SKETCH_CACHE);
        for (i, e) in c.ring.iter().enumerate() {
            assert_eq!(c.at.get(&e.key), Some(&i));
            assert_eq!(e.value.1, e.key);
        }
    }
}
