//! Blocked Bloom filters of 128-bit keys (Putze, Sanders and Singler 2007):
//! the probes of one key fall in one 512-bit block, one cache line, so a
//! query reads one line whatever the filter's size. 10 bits and 7 probes per
//! key give about 1% false positives at capacity.
//!
//! Used where a map answers most queries with "absent" and its entries are
//! expensive to read: the seen-set's filter of stored URLs (`store::seen`)
//! and the on-disk runs of a [`SpillMap`](crate::spillmap::SpillMap).
//!
//! Keys must already be uniform (BLAKE3 output, or a finalized hash): the
//! first word picks the block, the second the bits.
//!
//! This module depends on nothing else in the crate.

/// A 128-bit key: the first word picks the block, the second the probes.
pub type BloomKey = (u64, u64);

/// Probes per key.
const PROBES: u32 = 7;

/// Bits per key at capacity.
const BITS_PER_KEY: usize = 10;

/// A blocked Bloom filter sized for a number of keys (see the module docs).
#[derive(Debug, Clone)]
pub struct BlockedBloom {
    /// 512-bit blocks, a power of two of them.
    blocks: Vec<[u64; 8]>,
    keys: usize,
    capacity: usize,
}

impl BlockedBloom {
    /// An empty filter for `capacity` keys (10 bits each, in whole blocks).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let blocks = (capacity * BITS_PER_KEY).div_ceil(512).next_power_of_two();
        BlockedBloom {
            blocks: vec![[0; 8]; blocks],
            keys: 0,
            capacity,
        }
    }

    /// The block of `key` and the bits in it (9 bits of the second word each).
    fn probes(&self, key: BloomKey) -> (usize, impl Iterator<Item = (usize, u64)>) {
        let block = (key.0 as usize) & (self.blocks.len() - 1);
        let bits = (0..PROBES).map(move |i| {
            let bit = (key.1 >> (9 * i)) & 511;
            ((bit >> 6) as usize, 1u64 << (bit & 63))
        });
        (block, bits)
    }

    /// Adds `key`.
    pub fn insert(&mut self, key: BloomKey) {
        let (b, bits) = self.probes(key);
        let block = &mut self.blocks[b];
        for (w, m) in bits {
            block[w] |= m;
        }
        self.keys += 1;
    }

    /// False only if `key` was never inserted.
    pub fn may_contain(&self, key: BloomKey) -> bool {
        let (b, mut bits) = self.probes(key);
        let block = &self.blocks[b];
        bits.all(|(w, m)| block[w] & m != 0)
    }

    /// Whether the filter holds as many keys as it was sized for.
    pub fn is_full(&self) -> bool {
        self.keys >= self.capacity
    }

    /// The keys it was sized for.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of its bit array.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.blocks.len() * 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    fn key(n: u64) -> BloomKey {
        (mix64(n), mix64(n ^ 0x5555))
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let mut f = BlockedBloom::new(10_000);
        for n in 0..10_000 {
            f.insert(key(n));
        }
        assert!(f.is_full());
        assert!((0..10_000).all(|n| f.may_contain(key(n))));
        let fp = (10_000..110_000).filter(|&n| f.may_contain(key(n))).count();
        assert!(fp < 2_000, "{fp} false positives in 100 000");
        assert_eq!(f.bytes() % 64, 0);
        assert!(f.bytes() >= 10_000 * BITS_PER_KEY / 8);
    }
}
