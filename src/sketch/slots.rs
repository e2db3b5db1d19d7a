//! Page id → where its sketch is, in 8 bytes per page id (the
//! [`SketchIndex`](super::SketchIndex)'s table of recorded pages).
//!
//! Page ids are handed out in ascending order from 1 (a store's counter, in
//! blocks per worker on a shared store), so the table is an array indexed by
//! id, in chunks of [`CHUNK`] entries allocated as ids reach them: a page
//! id without a sketch (a duplicate, an error) costs its 8 bytes, and
//! nothing grows by doubling or rehashing. Ids past [`DENSE_MAX`] (no store
//! hands them out, but an id is a `u64`) go to a hash map.
//!
//! A location is a nonzero `u64` whose meaning is the index's own
//! (`SketchIndex` packs a spill file offset and length, or a position).

use std::collections::HashMap;

use crate::model::PageId;

/// Entries per chunk (32 KiB).
const CHUNK: usize = 4096;

/// Ids below this are kept in the chunks; 2³² ids are 2²⁰ chunk pointers
/// at the most.
const DENSE_MAX: PageId = 1 << 32;

/// Page id → nonzero location (see the module docs).
#[derive(Debug, Default)]
pub(super) struct SlotTable {
    chunks: Vec<Option<Box<[u64; CHUNK]>>>,
    far: HashMap<PageId, u64>,
    len: usize,
}

impl SlotTable {
    /// The location of `page`, if it has one.
    pub(super) fn get(&self, page: PageId) -> Option<u64> {
        if page >= DENSE_MAX {
            return self.far.get(&page).copied();
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        let v = self.chunks.get(c)?.as_ref()?[i];
        (v != 0).then_some(v)
    }

    /// `page` is at `at` now (`at` is nonzero).
    pub(super) fn set(&mut self, page: PageId, at: u64) {
        debug_assert!(at != 0, "a location is nonzero");
        if page >= DENSE_MAX {
            if self.far.insert(page, at).is_none() {
                self.len += 1;
            }
            return;
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let slot = &mut self.chunks[c].get_or_insert_with(|| Box::new([0; CHUNK]))[i];
        if *slot == 0 {
            self.len += 1;
        }
        *slot = at;
    }

    /// `page` has no location any more.
    pub(super) fn remove(&mut self, page: PageId) {
        if page >= DENSE_MAX {
            if self.far.remove(&page).is_some() {
                self.len -= 1;
            }
            return;
        }
        let (c, i) = (page as usize / CHUNK, page as usize % CHUNK);
        if let Some(Some(chunk)) = self.chunks.get_mut(c) {
            if chunk[i] != 0 {
                chunk[i] = 0;
                self.len -= 1;
            }
        }
    }

    /// Pages with a location.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The table answers as a plain map would, for ids in the chunks
        /// and past them.
        #[test]
        fn the_table_matches_a_plain_map(ops in proptest::collection::vec(
            (proptest::prop_oneof![0u64..20_000, DENSE_MAX - 5..DENSE_MAX + 5], 0u64..4),
            0..200,
        )) {
            let mut t = SlotTable::default();
            let mut m = HashMap::new();
            for (page, at) in ops {
                if at == 0 {
                    t.remove(page);
                    m.remove(&page);
                } else {
                    t.set(page, at);
                    m.insert(page, at);
                }
                proptest::prop_assert_eq!(t.get(page), m.get(&page).copied());
                proptest::prop_assert_eq!(t.len(), m.len());
            }
            for (&page, &at) in &m {
                proptest::prop_assert_eq!(t.get(page), Some(at));
            }
        }
    }
}
