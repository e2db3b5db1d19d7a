//! Compressed sealed tables (Manku §3.2): a sorted run of permuted
//! fingerprints stored as blocks of [`BLOCK_BYTES`] bytes. The first
//! fingerprint of a block is kept whole (64 bits); each following one is
//! stored as the Huffman code of h, the position of the most significant 1-bit
//! of its XOR with its predecessor, then its h bits below that position (the
//! bits above h equal the predecessor's, bit h is 1 since the run is sorted).
//! Successive fingerprints of n random ones share about log2 n top bits, so an
//! entry costs about 64 − log2 n + 2 bits instead of 64.
//!
//! A lookup finds the block by interpolation search on the block keys (the
//! first fingerprint of each block) and decodes forward from there.

/// Size of one block in bytes (the paper's B = 1024).
pub const BLOCK_BYTES: usize = 1024;
const BLOCK_BITS: usize = BLOCK_BYTES * 8;
/// Longest Huffman code; the decode table has 2^MAX_CODE entries.
const MAX_CODE: u32 = 12;

/// A canonical Huffman code over the 64 values of h.
#[derive(Debug, Clone)]
struct Code {
    /// (code, length) per symbol.
    enc: [(u16, u8); 64],
    /// Decode table indexed by the next MAX_CODE bits: (symbol, length).
    dec: Vec<(u8, u8)>,
}

impl Code {
    fn from_counts(counts: &[u64; 64]) -> Code {
        let mut freq: Vec<u64> = counts.iter().map(|&c| c + 1).collect();
        let lengths = loop {
            let l = huffman_lengths(&freq);
            if l.iter().all(|&x| x <= MAX_CODE) {
                break l;
            }
            for f in &mut freq {
                *f = (*f / 2).max(1);
            }
        };
        // Canonical codes: by (length, symbol).
        let mut syms: Vec<usize> = (0..64).collect();
        syms.sort_by_key(|&s| (lengths[s], s));
        let mut enc = [(0u16, 0u8); 64];
        let mut code = 0u32;
        let mut prev_len = lengths[syms[0]];
        for (i, &s) in syms.iter().enumerate() {
            if i > 0 {
                code += 1;
                code <<= lengths[s] - prev_len;
            }
            prev_len = lengths[s];
            enc[s] = (code as u16, lengths[s] as u8);
        }
        let mut dec = vec![(0u8, 0u8); 1 << MAX_CODE];
        for (s, &(c, l)) in enc.iter().enumerate() {
            let shift = MAX_CODE - l as u32;
            let start = (c as usize) << shift;
            for slot in &mut dec[start..start + (1 << shift)] {
                *slot = (s as u8, l);
            }
        }
        Code { enc, dec }
    }
}

/// Huffman code lengths of `freq` (all > 0).
fn huffman_lengths(freq: &[u64]) -> Vec<u32> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = freq.len();
    let mut parent = vec![usize::MAX; 2 * n];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = freq.iter().enumerate().map(|(i, &f)| Reverse((f, i))).collect();
    let mut next = n;
    while heap.len() > 1 {
        let (Some(Reverse((fa, a))), Some(Reverse((fb, b)))) = (heap.pop(), heap.pop()) else {
            break;
        };
        parent[a] = next;
        parent[b] = next;
        heap.push(Reverse((fa + fb, next)));
        next += 1;
    }
    (0..n)
        .map(|mut i| {
            let mut d = 0;
            while parent[i] != usize::MAX {
                i = parent[i];
                d += 1;
            }
            d.max(1)
        })
        .collect()
}

/// One table's sorted permuted fingerprints, compressed.
#[derive(Debug, Clone)]
pub struct CompressedTable {
    code: Code,
    /// Blocks, each BLOCK_BYTES long, then 8 bytes of padding for word reads.
    bytes: Vec<u8>,
    /// First fingerprint of each block.
    keys: Vec<u64>,
    /// Entries in each block.
    counts: Vec<u16>,
    len: usize,
}

struct BitWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl BitWriter<'_> {
    fn put(&mut self, value: u64, n: u32) {
        // MSB first, one bit at a time over bytes (encoding is not the hot path).
        for i in (0..n).rev() {
            if (value >> i) & 1 == 1 {
                self.out[self.pos / 8] |= 0x80 >> (self.pos % 8);
            }
            self.pos += 1;
        }
    }
}

#[inline]
fn peek(bytes: &[u8], pos: usize, n: u32) -> u64 {
    // n <= 56: one unaligned 8-byte big-endian read covers pos..pos+n.
    let at = pos / 8;
    let mut w = [0u8; 8];
    let end = (at + 8).min(bytes.len());
    w[..end - at].copy_from_slice(&bytes[at..end]);
    let word = u64::from_be_bytes(w) << (pos % 8);
    if n == 0 {
        0
    } else {
        word >> (64 - n)
    }
}

#[inline]
fn read(bytes: &[u8], pos: &mut usize, n: u32) -> u64 {
    let v = if n <= 56 {
        peek(bytes, *pos, n)
    } else {
        let hi = peek(bytes, *pos, n - 32);
        let lo = peek(bytes, *pos + (n - 32) as usize, 32);
        (hi << 32) | lo
    };
    *pos += n as usize;
    v
}

impl CompressedTable {
    /// Compresses a sorted run (duplicates are dropped).
    pub fn encode(sorted: &[u64]) -> CompressedTable {
        let mut counts = [0u64; 64];
        for w in sorted.windows(2) {
            let x = w[0] ^ w[1];
            if x != 0 {
                counts[63 - x.leading_zeros() as usize] += 1;
            }
        }
        let code = Code::from_counts(&counts);
        let mut bytes = Vec::new();
        let mut keys = Vec::new();
        let mut block_counts = Vec::new();
        let mut len = 0;
        let mut i = 0;
        while i < sorted.len() {
            let start = bytes.len();
            bytes.resize(start + BLOCK_BYTES, 0);
            let mut w = BitWriter {
                out: &mut bytes[start..],
                pos: 0,
            };
            let first = sorted[i];
            w.put(first, 64);
            keys.push(first);
            let mut n = 1u16;
            let mut prev = first;
            i += 1;
            while i < sorted.len() && n < u16::MAX {
                let cur = sorted[i];
                let x = prev ^ cur;
                if x == 0 {
                    i += 1;
                    continue;
                }
                let h = 63 - x.leading_zeros();
                let (c, l) = code.enc[h as usize];
                if w.pos + l as usize + h as usize > BLOCK_BITS {
                    break;
                }
                w.put(c as u64, l as u32);
                w.put(cur & ((1u64 << h) - 1), h);
                prev = cur;
                n += 1;
                i += 1;
            }
            len += n as usize;
            block_counts.push(n);
        }
        bytes.extend_from_slice(&[0; 8]);
        CompressedTable {
            code,
            bytes,
            keys,
            counts: block_counts,
            len,
        }
    }

    /// Number of fingerprints.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held (blocks, keys, counts, Huffman tables).
    pub fn bytes(&self) -> usize {
        self.bytes.len() + self.keys.len() * 8 + self.counts.len() * 2 + self.code.dec.len() * 2 + 64 * 3
    }

    /// Decodes block `b`, calling `f` per fingerprint until it returns false.
    #[inline]
    fn decode_block(&self, b: usize, mut f: impl FnMut(u64) -> bool) -> bool {
        let bytes = &self.bytes[b * BLOCK_BYTES..];
        let mut pos = 0usize;
        let mut prev = read(bytes, &mut pos, 64);
        if !f(prev) {
            return false;
        }
        for _ in 1..self.counts[b] {
            let (sym, l) = self.code.dec[peek(bytes, pos, MAX_CODE) as usize];
            pos += l as usize;
            let h = sym as u32;
            let low = read(bytes, &mut pos, h);
            let cur = ((prev >> h) | 1) << h | low;
            // (prev >> h) | 1 sets bit h; the bits above h are prev's.
            prev = cur;
            if !f(cur) {
                return false;
            }
        }
        true
    }

    /// Every fingerprint, in order.
    pub fn decode_all(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len);
        for b in 0..self.keys.len() {
            self.decode_block(b, |x| {
                out.push(x);
                true
            });
        }
        out
    }

    /// The last block whose key is <= `x` (0 if none), by interpolation search.
    fn find_block(&self, x: u64) -> usize {
        let keys = &self.keys;
        if keys.is_empty() || x <= keys[0] {
            return 0;
        }
        let (mut lo, mut hi) = (0usize, keys.len() - 1); // keys[lo] <= x
        if keys[hi] <= x {
            return hi;
        }
        // Invariant: keys[lo] <= x < keys[hi].
        while hi - lo > 1 {
            let (a, b) = (keys[lo], keys[hi]);
            let frac = (x - a) as f64 / (b - a) as f64;
            let mut mid = lo + ((hi - lo) as f64 * frac) as usize;
            mid = mid.clamp(lo + 1, hi - 1);
            if keys[mid] <= x {
                lo = mid;
            } else {
                hi = mid;
            }
            // Fall back to bisection when interpolation stalls on skewed keys.
            if hi - lo > 1 {
                let m2 = lo + (hi - lo) / 2;
                if keys[m2] <= x {
                    lo = m2;
                } else {
                    hi = m2;
                }
            }
        }
        lo
    }

    /// Calls `f` for every fingerprint whose top `prefix` bits equal `pq`'s.
    /// Returns the number of entries decoded.
    pub fn for_prefix(&self, pq: u64, prefix: u32, mut f: impl FnMut(u64)) -> usize {
        if self.keys.is_empty() {
            return 0;
        }
        let (lo, hi) = if prefix == 0 {
            (0, u64::MAX)
        } else {
            let shift = 64 - prefix;
            let base = (pq >> shift) << shift;
            let span = if shift == 64 { u64::MAX } else { (1u64 << shift) - 1 };
            (base, base | span)
        };
        let mut decoded = 0;
        let mut b = self.find_block(lo);
        while b < self.keys.len() && (b == 0 || self.keys[b] <= hi) {
            let more = self.decode_block(b, |x| {
                decoded += 1;
                if x > hi {
                    return false;
                }
                if x >= lo {
                    f(x);
                }
                true
            });
            if !more {
                break;
            }
            b += 1;
            if b < self.keys.len() && self.keys[b] > hi {
                break;
            }
        }
        decoded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed ^ (*seed >> 29)
    }

    #[test]
    fn round_trips_and_compresses_random_runs() {
        let mut seed = 3;
        let mut v: Vec<u64> = (0..100_000).map(|_| lcg(&mut seed)).collect();
        v.sort_unstable();
        v.dedup();
        let c = CompressedTable::encode(&v);
        assert_eq!(c.decode_all(), v);
        let per = c.bytes() as f64 / v.len() as f64;
        // 64 − log2(1e5) + ~2 bits ≈ 49 bits ≈ 6.1 bytes.
        assert!(per < 6.6, "{per} bytes per fingerprint");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prefix_lookup_equals_filter(
            mut v in proptest::collection::vec(any::<u64>(), 0..3000),
            q in any::<u64>(),
            prefix in 0u32..=20,
            shared in any::<bool>(),
        ) {
            // Cluster half the values under a few prefixes so ranges span blocks.
            for (i, x) in v.iter_mut().enumerate() {
                if shared && i % 2 == 0 { *x = (q & !0x0FFF_FFFF_FFFF_u64) | (*x & 0x0FFF_FFFF_FFFF); }
            }
            v.sort_unstable();
            v.dedup();
            let c = CompressedTable::encode(&v);
            prop_assert_eq!(c.decode_all(), v.clone());
            let mut got = Vec::new();
            c.for_prefix(q, prefix, |x| got.push(x));
            let want: Vec<u64> = v.iter().copied().filter(|&x| prefix == 0 || (x ^ q) >> (64 - prefix) == 0).collect();
            prop_assert_eq!(got, want);
        }
    }
}
