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
//! first word picks the block, the second the bits. The block is the high
//! word of the first word times the number of blocks (Lemire's multiply-shift
//! range reduction), so a filter has exactly the blocks its capacity needs:
//! a mask would need a power of two of them, up to twice the bits (1.6 times
//! for the seen-set's first part of 65 536 keys).
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
    /// 512-bit blocks, at least one.
    blocks: Vec<[u64; 8]>,
    keys: usize,
    capacity: usize,
}

impl BlockedBloom {
    /// An empty filter for `capacity` keys (10 bits each, in whole blocks).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let blocks = (capacity * BITS_PER_KEY).div_ceil(512);
        BlockedBloom {
            blocks: vec![[0; 8]; blocks],
            keys: 0,
            capacity,
        }
    }

    /// The block of `key` and the bits in it (9 bits of the second word each).
    fn probes(&self, key: BloomKey) -> (usize, impl Iterator<Item = (usize, u64)>) {
        let block = ((u128::from(key.0) * self.blocks.len() as u128) >> 64) as usize;
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
        assert!(fp < 1_300, "{fp} false positives in 100 000");
        assert_eq!(f.bytes(), 196 * 64, "100 000 bits in 512-bit blocks");
    }

    /// The filter takes the blocks its capacity needs, not the next power
    /// of two of them, and every block is used.
    #[test]
    fn blocks_are_exactly_what_the_capacity_needs_and_all_used() {
        let f = BlockedBloom::new(65_536);
        assert_eq!(f.bytes(), 65_536 * BITS_PER_KEY / 8, "1 280 blocks, not 2 048");
        assert_eq!(BlockedBloom::new(1).bytes(), 64);
        let mut f = BlockedBloom::new(3 * 512 / BITS_PER_KEY);
        assert_eq!(f.blocks.len(), 3);
        for n in 0..3_000 {
            f.insert(key(n));
        }
        assert!(f.blocks.iter().all(|b| b.iter().any(|&w| w != 0)));
    }
}
