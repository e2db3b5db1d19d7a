//! Fixed, portable 64-bit hashing primitives shared by the pipeline stages:
//! FNV-1a 64 (one-shot and resumable), the MurmurHash3 `fmix64` finalizer,
//! the SplitMix64 finalizer, and [`feature_hash`], the hash of a
//! fingerprint feature. None is seeded or randomized, so every value is the
//! same on every machine and run (fingerprints and hashes may be stored).
//!
//! This module depends on nothing else in the crate.

/// The FNV-1a 64 offset basis (the state before any byte).
pub const FNV1A_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The FNV-1a 64 prime.
pub const FNV1A_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes` (no finalizer): [`fnv1a_continue`] from
/// [`FNV1A_OFFSET`].
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_continue(FNV1A_OFFSET, bytes)
}

/// The FNV-1a 64 state after `bytes`, from state `h` ([`FNV1A_OFFSET`] to
/// start). `fmix64(fnv1a_continue(fnv1a_continue(FNV1A_OFFSET, a), b))` is
/// [`feature_hash`] of `a` followed by `b`: a bigram's hash from its first
/// stem's state without joining the strings.
#[inline]
pub fn fnv1a_continue(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV1A_PRIME);
    }
    h
}

/// MurmurHash3's 64-bit finalizer (a bijection with full avalanche).
#[inline]
pub fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// SplitMix64's finalizer (Steele et al.): a bijection on `u64` with full
/// avalanche.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The fixed, portable 64-bit feature hash: FNV-1a 64 over the bytes
/// (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`), followed by
/// the MurmurHash3 `fmix64` finalizer (`h ^= h >> 33; h *= 0xff51afd7ed558ccd;
/// h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33`) so that every output
/// bit depends on every input bit — simhash needs the 64 bits of a feature to
/// be unbiased and independent. Features are UTF-8 text, so the input is the
/// UTF-8 bytes. Not seeded and not randomized: the same feature hashes the
/// same on every machine and run.
#[inline]
pub fn feature_hash(bytes: &[u8]) -> u64 {
    fmix64(fnv1a(bytes))
}

/// The hasher of in-memory maps whose keys are already uniform hashes (u64
/// fingerprints and word keys, pairs of them, BLAKE3 outputs): an integer
/// key is its own hash (pairs are xored), a byte-array key hashes to its
/// first 8 bytes. Not for keys an attacker can choose freely.
#[derive(Debug, Default, Clone, Copy)]
pub struct PreHashed(u64);

impl std::hash::Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // A `[u8; 32]` key is one `write` of its bytes: keep the first 8.
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        self.0 = (self.0 ^ u64::from_le_bytes(head)).rotate_left(29);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_usize(&mut self, n: usize) {
        // The length prefix of an array or slice key.
        self.0 ^= n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // FNV-1a 64 test vectors (Fowler, Noll, Vo).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        // splitmix64 seeded with 0: first output is 0xE220A8397B1DCDAF.
        assert_eq!(mix64(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
        assert_eq!(fmix64(0), 0);
    }

    proptest::proptest! {
        #[test]
        fn fnv_state_continues_over_concatenation(a in ".{0,20}", b in ".{0,20}") {
            let state = fnv1a_continue(fnv1a(a.as_bytes()), b.as_bytes());
            proptest::prop_assert_eq!(state, fnv1a(format!("{a}{b}").as_bytes()));
        }
    }
}
