//! A map of small fixed-size keys and values kept in sorted chunks, in
//! exactly the bytes of their entries: the in-memory part of a
//! [`SpillMap`](crate::spillmap::SpillMap), the crawl's per-page maps (the
//! exact-hash owners, the content-sketch band keys, the online mirror
//! detector's pages).
//!
//! A hash table is at most 7/8 full and doubles when it fills, so an entry
//! takes 1.1 to 2.3 times its bytes, and while it grows the old and the new
//! table are both held: at the moment of a resize, up to 3.4 times. A
//! [`ChunkMap`] holds its entries in sorted, exactly sized chunks of at most
//! [`CHUNK`] entries, and new ones in a small hash map (`recent`) that is
//! merged into the chunks each time it holds `recent_max` keys or a
//! [`RECENT_SHARE`]th of the map, whichever is more. A merge
//! rewrites only the chunks that receive keys, one at a time, each freed as
//! soon as its replacement is built, so the map never holds more than its
//! entries, one chunk and the recent keys.
//!
//! A lookup reads `recent` (one hash probe) and then binary-searches the
//! chunks' last keys and one chunk. A merge costs at most about
//! [`RECENT_SHARE`] entry moves per key inserted (fewer while the map is
//! smaller than `recent_max` times that); in a map past that size the recent
//! keys take a few percent more than the chunks, in a smaller one at most
//! `recent_max` entries of a hash map.

use std::hash::Hash;

use hashbrown::HashMap;

/// Entries per chunk at most: a chunk that grows past it is split evenly.
pub const CHUNK: usize = 2048;

/// Keys held apart before a merge, unless [`ChunkMap::with_recent_max`]
/// says otherwise.
pub const RECENT_MAX: usize = 16_384;

/// A large map merges when its recent keys are this fraction of its entries.
pub const RECENT_SHARE: usize = 64;

/// A sorted map of `Copy` keys to `Copy` values. See the module docs.
#[derive(Debug)]
pub struct ChunkMap<K, V> {
    /// Sorted, disjoint, in key order; none empty.
    chunks: Vec<Box<[(K, V)]>>,
    /// The last key of each chunk (what a lookup searches first).
    lasts: Vec<K>,
    /// Keys set or removed since the last merge: `None` removes a key of the
    /// chunks.
    recent: HashMap<K, Option<V>>,
    /// `recent` is merged when it holds this many keys (or more: see
    /// [`RECENT_SHARE`]).
    recent_max: usize,
    /// Entries in the chunks.
    chunked: usize,
}

impl<K, V> Default for ChunkMap<K, V> {
    fn default() -> Self {
        ChunkMap::with_recent_max(RECENT_MAX)
    }
}

impl<K, V> ChunkMap<K, V> {
    /// An empty map that merges its recent keys each time they are
    /// `recent_max` (at least 1).
    pub fn with_recent_max(recent_max: usize) -> Self {
        ChunkMap {
            chunks: Vec::new(),
            lasts: Vec::new(),
            recent: HashMap::default(),
            recent_max: recent_max.max(1),
            chunked: 0,
        }
    }
}

impl<K: Copy + Ord + Hash, V: Copy> ChunkMap<K, V> {
    /// The value of `k`.
    pub fn get(&self, k: &K) -> Option<V> {
        if let Some(v) = self.recent.get(k) {
            return *v;
        }
        let c = self.lasts.partition_point(|last| last < k);
        let chunk = self.chunks.get(c)?;
        chunk.binary_search_by(|(e, _)| e.cmp(k)).ok().map(|i| chunk[i].1)
    }

    /// Set the value of `k` (replacing any).
    pub fn insert(&mut self, k: K, v: V) {
        self.recent.insert(k, Some(v));
        self.merge_if_due();
    }

    /// Forget `k`.
    pub fn remove(&mut self, k: &K) {
        if self.get(k).is_some() {
            self.recent.insert(*k, None);
            self.merge_if_due();
        }
    }

    /// Entries held: those in the chunks and the recent keys (a recent key
    /// that replaces or removes a chunk's counts twice).
    pub fn held(&self) -> usize {
        self.chunked + self.recent.len()
    }

    /// Every entry in key order: the chunks, after the recent keys are
    /// merged into them.
    pub fn sorted_chunks(&mut self) -> &[Box<[(K, V)]>] {
        self.merge();
        &self.chunks
    }

    /// Forget every entry.
    pub fn clear(&mut self) {
        self.chunks = Vec::new();
        self.lasts = Vec::new();
        self.recent = HashMap::default();
        self.chunked = 0;
    }

    fn merge_if_due(&mut self) {
        if self.recent.len() >= self.recent_max.max(self.chunked / RECENT_SHARE) {
            self.merge();
        }
    }

    /// Keys with a value (merges the recent keys first).
    #[cfg(test)]
    pub fn len(&mut self) -> usize {
        self.merge();
        self.chunked
    }

    /// Fold the recent keys into the chunks: each chunk that receives keys
    /// is rebuilt (and split evenly when it grows past [`CHUNK`]); the others
    /// stay where they are.
    fn merge(&mut self) {
        if self.recent.is_empty() {
            return;
        }
        let mut recent: Vec<(K, Option<V>)> = self.recent.drain().collect();
        recent.sort_unstable_by_key(|e| e.0);
        let old = std::mem::take(&mut self.chunks);
        self.lasts.clear();
        self.chunked = 0;
        let n = old.len();
        let mut r = 0;
        let mut buf: Vec<(K, V)> = Vec::new();
        for (i, chunk) in old.into_iter().enumerate() {
            // This chunk takes the recent keys up to its last key (the last
            // chunk takes the rest).
            let end = if i + 1 == n {
                recent.len()
            } else {
                let last = chunk[chunk.len() - 1].0;
                r + recent[r..].partition_point(|(k, _)| *k <= last)
            };
            if end == r {
                self.push_chunk(chunk);
                continue;
            }
            buf.clear();
            merge_into(&chunk, &recent[r..end], &mut buf);
            drop(chunk);
            self.push_split(&buf);
            r = end;
        }
        if n == 0 {
            buf.clear();
            merge_into(&[], &recent, &mut buf);
            self.push_split(&buf);
        }
    }

    fn push_chunk(&mut self, chunk: Box<[(K, V)]>) {
        self.chunked += chunk.len();
        self.lasts.push(chunk[chunk.len() - 1].0);
        self.chunks.push(chunk);
    }

    /// Append `entries` (sorted) as chunks of at most [`CHUNK`], of even sizes.
    fn push_split(&mut self, entries: &[(K, V)]) {
        if entries.is_empty() {
            return;
        }
        let pieces = entries.len().div_ceil(CHUNK);
        let size = entries.len().div_ceil(pieces);
        for piece in entries.chunks(size) {
            self.push_chunk(piece.into());
        }
    }
}

/// Merge the sorted `chunk` with the sorted updates `recent` into `out`: an
/// update replaces or (`None`) removes its key.
fn merge_into<K: Copy + Ord, V: Copy>(chunk: &[(K, V)], recent: &[(K, Option<V>)], out: &mut Vec<(K, V)>) {
    out.reserve(chunk.len() + recent.len());
    let (mut i, mut j) = (0, 0);
    while i < chunk.len() || j < recent.len() {
        let take_chunk = j == recent.len() || (i < chunk.len() && chunk[i].0 < recent[j].0);
        if take_chunk {
            out.push(chunk[i]);
            i += 1;
            continue;
        }
        let (k, v) = recent[j];
        if i < chunk.len() && chunk[i].0 == k {
            i += 1;
        }
        if let Some(v) = v {
            out.push((k, v));
        }
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> u64 {
        n.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    proptest::proptest! {
        /// Across merges and splits, the map answers as a plain map.
        #[test]
        fn chunk_map_matches_a_plain_map(
            ops in proptest::collection::vec((0u8..5, 0u64..3000, 0u32..50), 1..3000),
            recent_max in 1usize..200,
        ) {
            let mut m: ChunkMap<u64, u32> = ChunkMap::with_recent_max(recent_max);
            let mut oracle: std::collections::HashMap<u64, u32> = Default::default();
            for (op, key_n, v) in ops {
                let key = k(key_n);
                if op == 0 {
                    m.remove(&key);
                    oracle.remove(&key);
                } else {
                    m.insert(key, v);
                    oracle.insert(key, v);
                }
                proptest::prop_assert_eq!(m.get(&key), oracle.get(&key).copied());
            }
            proptest::prop_assert_eq!(m.len(), oracle.len());
            proptest::prop_assert_eq!(m.chunks.iter().map(|c| c.len()).sum::<usize>(), oracle.len());
            proptest::prop_assert!(m.recent.is_empty());
            let all: Vec<u64> = m.chunks.iter().flat_map(|c| c.iter().map(|e| e.0)).collect();
            proptest::prop_assert!(all.windows(2).all(|w| w[0] < w[1]));
            proptest::prop_assert!(m.chunks.iter().all(|c| !c.is_empty() && c.len() <= CHUNK));
            proptest::prop_assert!(m.chunks.iter().zip(&m.lasts).all(|(c, l)| c[c.len() - 1].0 == *l));
            for (key, v) in &oracle {
                proptest::prop_assert_eq!(m.get(key), Some(*v));
            }
        }
    }

    #[test]
    fn large_maps_split_into_chunks_and_keep_every_key() {
        let mut m: ChunkMap<(u64, u64), u64> = ChunkMap::default();
        let n = 3 * RECENT_MAX as u64 + 17;
        for i in 0..n {
            m.insert((k(i), i), i + 1);
        }
        assert!(m.recent.len() < RECENT_MAX && m.len() >= 3 * RECENT_MAX);
        assert!(m.chunks.len() >= 3 * RECENT_MAX / CHUNK);
        for i in 0..n {
            assert_eq!(m.get(&(k(i), i)), Some(i + 1));
        }
        assert_eq!(m.get(&(k(n), n)), None);
        m.remove(&(k(5), 5));
        assert_eq!(m.get(&(k(5), 5)), None);
        assert_eq!(m.len(), n as usize - 1);
        // Exactly sized chunks, at least half full.
        assert_eq!(m.chunks.iter().map(|c| c.len()).sum::<usize>(), n as usize - 1);
        assert!(m.chunks.len() <= 2 * (n as usize).div_ceil(CHUNK));
    }
}
