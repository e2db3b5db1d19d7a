//! The first owner of each content hash, in 24 bytes per hash: the map
//! behind [`super::ExactIndex`].
//!
//! A hash is keyed by its first 128 bits (BLAKE3 output is uniform, so two
//! different hashes share them with probability about n² / 2¹²⁹ among n
//! hashes, below 10⁻²⁰ for 10⁹ pages; finding such a pair on purpose takes
//! about 2⁶⁴ hashes), as the seen-set keys URLs (`store::seen`). Entries
//! live in one array sorted by key (24 bytes each, no empty slots), and new
//! ones in a small hash map that is merged into the array each time it
//! holds [`RECENT_MAX`] keys. A hash map of the full 32-byte hashes took 46
//! to 92 bytes per hash.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::model::PageId;

/// A content hash's key: its first 128 bits.
pub(super) type Key = (u64, u64);

/// The key of a 32-byte hash.
pub(super) fn key(h: &[u8; 32]) -> Key {
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&h[i..i + 8]);
        u64::from_le_bytes(w)
    };
    (word(0), word(8))
}

/// New keys held apart before a merge into the sorted array (a merge
/// rewrites the array once per this many new keys).
const RECENT_MAX: usize = 16_384;

/// Content hash → the first page that had it (see the module docs).
#[derive(Debug)]
pub struct OwnerMap {
    /// Sorted by key, each key once.
    sorted: Vec<(Key, PageId)>,
    /// Keys set or removed since the last merge: `None` removes a key of
    /// `sorted`.
    recent: HashMap<Key, Option<PageId>, BuildHasherDefault<crate::hash::PreHashed>>,
    /// `recent` is merged when it holds this many keys.
    recent_max: usize,
}

impl Default for OwnerMap {
    fn default() -> Self {
        OwnerMap::with_recent_max(RECENT_MAX)
    }
}

impl OwnerMap {
    fn with_recent_max(recent_max: usize) -> Self {
        OwnerMap {
            sorted: Vec::new(),
            recent: HashMap::default(),
            recent_max,
        }
    }

    /// The owner of `k`.
    pub fn get(&self, k: Key) -> Option<PageId> {
        match self.recent.get(&k) {
            Some(owner) => *owner,
            None => self
                .sorted
                .binary_search_by(|(e, _)| e.cmp(&k))
                .ok()
                .map(|i| self.sorted[i].1),
        }
    }

    /// Make `page` the owner of `k` unless `k` has one.
    pub fn insert_first(&mut self, k: Key, page: PageId) {
        if self.get(k).is_none() {
            self.recent.insert(k, Some(page));
            if self.recent.len() >= self.recent_max {
                self.merge();
            }
        }
    }

    /// Forget `k` if `page` owns it.
    pub fn remove_owned(&mut self, k: Key, page: PageId) {
        if self.get(k) == Some(page) {
            self.recent.insert(k, None);
        }
    }

    /// Keys with an owner.
    #[cfg(test)]
    pub fn len(&mut self) -> usize {
        self.merge();
        self.sorted.len()
    }

    /// Fold `recent` into `sorted`, in place: removed keys leave the array,
    /// changed ones take their new owner, new ones are merged in from the
    /// back.
    fn merge(&mut self) {
        let mut recent: Vec<(Key, Option<PageId>)> = self.recent.drain().collect();
        recent.sort_unstable_by_key(|(k, _)| *k);
        // Keys already in the array: updated or removed where they are.
        let mut removed = false;
        recent.retain(|(k, owner)| match self.sorted.binary_search_by(|(e, _)| e.cmp(k)) {
            Ok(i) => {
                match owner {
                    Some(p) => self.sorted[i].1 = *p,
                    None => {
                        // Marked with an owner no entry can have, dropped below.
                        self.sorted[i].1 = PageId::MAX;
                        removed = true;
                    }
                }
                false
            }
            Err(_) => owner.is_some(),
        });
        if removed {
            self.sorted.retain(|(_, p)| *p != PageId::MAX);
        }
        // The new keys, merged from the back into the grown array.
        let old = self.sorted.len();
        self.sorted.reserve_exact(recent.len());
        self.sorted.resize(old + recent.len(), ((0, 0), 0));
        let (mut i, mut j, mut w) = (old, recent.len(), self.sorted.len());
        while j > 0 {
            w -= 1;
            let (rk, rp) = recent[j - 1];
            if i > 0 && self.sorted[i - 1].0 > rk {
                self.sorted[w] = self.sorted[i - 1];
                i -= 1;
            } else {
                self.sorted[w] = (rk, rp.unwrap_or_default());
                j -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> Key {
        (n.wrapping_mul(0x9E37_79B9_7F4A_7C15), n)
    }

    #[test]
    fn keys_are_the_first_16_bytes() {
        let mut h = [0u8; 32];
        h[0] = 1;
        h[8] = 2;
        h[31] = 9;
        assert_eq!(key(&h), (1, 2));
    }

    proptest::proptest! {
        /// Across merges, the map answers as a plain map of first owners.
        #[test]
        fn owner_map_matches_a_plain_map(ops in proptest::collection::vec((0u8..4, 0u64..300, 0u64..50), 1..2000)) {
            let mut m = OwnerMap::with_recent_max(64);
            let mut oracle: std::collections::HashMap<Key, PageId> = Default::default();
            for (op, key_n, page) in ops {
                let key = k(key_n);
                if op == 0 {
                    m.remove_owned(key, page);
                    if oracle.get(&key) == Some(&page) {
                        oracle.remove(&key);
                    }
                } else {
                    m.insert_first(key, page);
                    oracle.entry(key).or_insert(page);
                }
                proptest::prop_assert_eq!(m.get(key), oracle.get(&key).copied());
            }
            m.merge();
            proptest::prop_assert!(m.recent.is_empty());
            proptest::prop_assert!(m.sorted.windows(2).all(|w| w[0].0 < w[1].0));
            proptest::prop_assert_eq!(m.sorted.len(), oracle.len());
            for (key, page) in &oracle {
                proptest::prop_assert_eq!(m.get(*key), Some(*page));
            }
        }
    }

    #[test]
    fn merges_keep_every_owner() {
        let mut m = OwnerMap::default();
        let n = 3 * RECENT_MAX as u64 + 17;
        for i in 0..n {
            m.insert_first(k(i), i + 1);
        }
        assert!(m.recent.len() < RECENT_MAX && m.sorted.len() >= 3 * RECENT_MAX);
        for i in 0..n {
            assert_eq!(m.get(k(i)), Some(i + 1));
        }
        assert_eq!(m.get(k(n)), None);
        m.remove_owned(k(5), 6);
        m.remove_owned(k(7), 99);
        assert_eq!((m.get(k(5)), m.get(k(7))), (None, Some(8)));
        assert_eq!(m.len(), n as usize - 1);
    }
}
