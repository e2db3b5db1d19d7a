//! The first owner of each content hash, in 24 bytes per hash in memory,
//! or in bounded memory with the rest on disk: the map behind
//! [`super::ExactIndex`].
//!
//! A hash is keyed by its first 128 bits (BLAKE3 output is uniform, so two
//! different hashes share them with probability about n² / 2¹²⁹ among n
//! hashes, below 10⁻²⁰ for 10⁹ pages; finding such a pair on purpose takes
//! about 2⁶⁴ hashes), as the seen-set keys URLs (`store::seen`). Entries
//! live in a [`SpillMap`]: the newest [`MEM_MAX`] in memory, in sorted
//! chunks of exactly their entries, the others in sorted runs on disk with
//! a Bloom filter each (1.25 bytes per hash in memory), so the lookup of a
//! hash no page has (most pages' lookups) reads nothing from disk.

use std::path::Path;

use crate::model::PageId;
use crate::spillmap::SpillMap;

/// A content hash's key: its first 128 bits.
pub(super) type Key = (u64, u64);

/// Hashes a spilling map holds in memory (about 0.5 MB).
pub const MEM_MAX: usize = 1 << 14;

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
    owners: SpillMap<Key, PageId>,
}

impl OwnerMap {
    /// A map that keeps at most [`MEM_MAX`] hashes in memory and the others
    /// in runs in `dir`.
    pub fn spilling(dir: &Path) -> Self {
        OwnerMap {
            owners: SpillMap::spilling(dir, MEM_MAX),
        }
    }

    #[cfg(test)]
    fn spilling_at(dir: &Path, mem_max: usize) -> Self {
        OwnerMap {
            owners: SpillMap::spilling(dir, mem_max),
        }
    }

    /// The owner of `k`.
    pub fn get(&self, k: Key) -> std::io::Result<Option<PageId>> {
        self.owners.get(&k)
    }

    /// The owner of `k`; `page` becomes it when `k` has none (and `None`
    /// is returned).
    pub fn get_or_insert(&mut self, k: Key, page: PageId) -> std::io::Result<Option<PageId>> {
        let owner = self.get(k)?;
        if owner.is_none() {
            self.owners.insert(k, page)?;
        }
        Ok(owner)
    }

    /// Forget `k` if `page` owns it.
    pub fn remove_owned(&mut self, k: Key, page: PageId) -> std::io::Result<()> {
        if self.get(k)? == Some(page) {
            self.owners.remove(&k)?;
        }
        Ok(())
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
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Across spills, the map answers as a plain map of first owners.
        #[test]
        fn owner_map_matches_a_plain_map(ops in proptest::collection::vec((0u8..4, 0u64..300, 0u64..50), 1..2000)) {
            let dir = tempfile::tempdir().unwrap();
            let mut m = OwnerMap::spilling_at(dir.path(), 64);
            let mut oracle: std::collections::HashMap<Key, PageId> = Default::default();
            for (op, key_n, page) in ops {
                let key = k(key_n);
                if op == 0 {
                    m.remove_owned(key, page).unwrap();
                    if oracle.get(&key) == Some(&page) {
                        oracle.remove(&key);
                    }
                } else {
                    let before = oracle.get(&key).copied();
                    proptest::prop_assert_eq!(m.get_or_insert(key, page).unwrap(), before);
                    oracle.entry(key).or_insert(page);
                }
                proptest::prop_assert_eq!(m.get(key).unwrap(), oracle.get(&key).copied());
            }
            for n in 0..300 {
                proptest::prop_assert_eq!(m.get(k(n)).unwrap(), oracle.get(&k(n)).copied());
            }
        }
    }

    #[test]
    fn owners_spill_and_stay_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = OwnerMap::spilling_at(dir.path(), 1000);
        let n = 20_017;
        for i in 0..n {
            assert_eq!(m.get_or_insert(k(i), i + 1).unwrap(), None);
        }
        // A later page keeps none of the hashes the first one owns.
        assert_eq!(m.get_or_insert(k(3), 99).unwrap(), Some(4));
        for i in 0..n {
            assert_eq!(m.get(k(i)).unwrap(), Some(i + 1));
        }
        assert_eq!(m.get(k(n)).unwrap(), None);
        m.remove_owned(k(5), 6).unwrap();
        m.remove_owned(k(7), 99).unwrap();
        assert_eq!((m.get(k(5)).unwrap(), m.get(k(7)).unwrap()), (None, Some(8)));
    }
}
