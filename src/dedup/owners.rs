//! The first owner of each content hash, in 24 bytes per hash: the map
//! behind [`super::ExactIndex`].
//!
//! A hash is keyed by its first 128 bits (BLAKE3 output is uniform, so two
//! different hashes share them with probability about n² / 2¹²⁹ among n
//! hashes, below 10⁻²⁰ for 10⁹ pages; finding such a pair on purpose takes
//! about 2⁶⁴ hashes), as the seen-set keys URLs (`store::seen`). Entries
//! live in a [`ChunkMap`]: sorted chunks of exactly their 24-byte entries,
//! and the newest keys in a small hash map. A hash map of the full 32-byte
//! hashes took 46 to 92 bytes per hash.

use crate::chunkmap::ChunkMap;
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

/// Content hash → the first page that had it (see the module docs).
#[derive(Debug, Default)]
pub struct OwnerMap {
    owners: ChunkMap<Key, PageId>,
}

impl OwnerMap {
    #[cfg(test)]
    fn with_recent_max(recent_max: usize) -> Self {
        OwnerMap {
            owners: ChunkMap::with_recent_max(recent_max),
        }
    }

    /// The owner of `k`.
    pub fn get(&self, k: Key) -> Option<PageId> {
        self.owners.get(&k)
    }

    /// Make `page` the owner of `k` unless `k` has one.
    pub fn insert_first(&mut self, k: Key, page: PageId) {
        if self.get(k).is_none() {
            self.owners.insert(k, page);
        }
    }

    /// Forget `k` if `page` owns it.
    pub fn remove_owned(&mut self, k: Key, page: PageId) {
        if self.get(k) == Some(page) {
            self.owners.remove(&k);
        }
    }

    /// Keys with an owner.
    #[cfg(test)]
    pub fn len(&mut self) -> usize {
        self.owners.len()
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
            proptest::prop_assert_eq!(m.len(), oracle.len());
            for (key, page) in &oracle {
                proptest::prop_assert_eq!(m.get(*key), Some(*page));
            }
        }
    }

    #[test]
    fn merges_keep_every_owner() {
        let mut m = OwnerMap::default();
        let n = 3 * crate::chunkmap::RECENT_MAX as u64 + 17;
        for i in 0..n {
            m.insert_first(k(i), i + 1);
        }
        // A later page keeps none of the hashes the first one owns.
        m.insert_first(k(3), 99);
        assert_eq!(m.get(k(3)), Some(4));
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
