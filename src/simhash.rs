//! Simhash (pipeline: after [`crate::features`], before the index):
//! Charikar's construction over weighted features, exactly as in Manku,
//! Jain and Das Sarma (WWW 2007) §2, with f = 64 bits, and the Hamming
//! distance between two fingerprints.
//!
//! # The fingerprint, precisely
//!
//! 1. Every feature is a 64-bit hash [`feature_hash`] of its text (see there)
//!    with a weight `w > 0`.
//! 2. Weights are quantized to integers, `q = round(w × 1024)`, so the sums
//!    below are exact integer arithmetic and identical on every machine
//!    whatever the order of the features (floating-point sums are not).
//! 3. A vector `V` of 64 signed integers starts at zero; for every feature
//!    and every bit `i` (bit 0 = least significant), `V[i] += q` if bit `i`
//!    of the feature hash is 1, else `V[i] -= q`.
//! 4. Bit `i` of the fingerprint is 1 iff `V[i] >= 0` (the note's rule; Manku
//!    only says "the signs of the components"). A document without features
//!    therefore gets `ffffffffffffffff`.

use crate::features::Features;

/// Bits per fingerprint (the product uses 64 only).
pub const BITS: u32 = 64;

/// The feature hash and its parts, defined in [`crate::hash`] (re-exported
/// here because the fingerprint is specified in terms of them).
pub use crate::hash::{feature_hash, fmix64, fnv1a_continue, FNV1A_OFFSET};

/// The weight quantum: weights are summed as integer multiples of 1/1024.
pub const WEIGHT_SCALE: f32 = 1024.0;

/// Charikar's simhash of weighted features (see the module docs for the
/// exact construction). Features with non-positive or non-finite weight are
/// skipped.
pub fn simhash(features: &Features) -> u64 {
    simhash_items(&features.items)
}

/// [`simhash`] over bare `(feature hash, weight)` pairs.
pub fn simhash_items(items: &[(u64, f32)]) -> u64 {
    // V[i] = sum(+q where bit i is 1, -q where 0) = 2 S[i] - T, with S[i]
    // the sum of q over features with bit i set and T the sum of all q.
    // S is gathered per nibble: t[j][v] sums q over the features whose
    // nibble j (bits 4j..4j+3) is v, 16 adds per feature instead of 64
    // masked adds; each S[4j + b] is then the sum of the 8 entries of t[j]
    // with bit b set. The same integers, so the same fingerprint
    // (`cargo bench --bench pipeline -- 4_simhash`).
    let mut t = [[0i64; 16]; 16];
    let mut total = 0i64;
    for &(h, w) in items {
        if !(w.is_finite() && w > 0.0) {
            continue;
        }
        let q = round_positive(w * WEIGHT_SCALE);
        total += q;
        for (j, tj) in t.iter_mut().enumerate() {
            tj[((h >> (4 * j)) & 15) as usize] += q;
        }
    }
    let mut fp = 0u64;
    for (j, tj) in t.iter().enumerate() {
        for b in 0..4 {
            let s: i64 = (0..16).filter(|v| v >> b & 1 == 1).map(|v| tj[v]).sum();
            if 2 * s - total >= 0 {
                fp |= 1 << (4 * j + b);
            }
        }
    }
    fp
}

/// `x.round() as i64` for a finite `x > 0`, without the `roundf` call (the
/// default x86-64 target has no rounding instruction): below 2^23 the
/// conversion truncates exactly and `x - trunc(x)` is exact, so rounding half
/// away from zero is `trunc + (fraction >= 0.5)`; larger values are whole.
#[inline]
fn round_positive(x: f32) -> i64 {
    if x < 8_388_608.0 {
        let t = x as i64;
        t + i64::from(x - t as f32 >= 0.5)
    } else {
        x.round() as i64
    }
}

/// Number of differing bits (popcount of the XOR).
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// The 16 lowercase hex digits of a fingerprint (the file contract).
pub fn to_hex(fp: u64) -> String {
    format!("{fp:016x}")
}

/// Parses 16 hex digits (either case) into a fingerprint.
pub fn from_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.len() != 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The quick rounding equals `round` on every positive finite `f32`
        /// (any bit pattern, and values near halves).
        #[test]
        fn round_positive_equals_round(bits in 0u32..0x7f80_0000, n in 0u32..20_000_000) {
            let x = f32::from_bits(bits);
            if x > 0.0 {
                prop_assert_eq!(round_positive(x), x.round() as i64);
            }
            for y in [n as f32 + 0.5, n as f32 + 0.499_999_97, f32::from_bits((n as f32 + 0.5).to_bits() + 1)] {
                if y > 0.0 {
                    prop_assert_eq!(round_positive(y), y.round() as i64, "{}", y);
                }
            }
        }
    }

    #[test]
    fn round_positive_examples() {
        for (x, q) in [
            (0.25f32, 0i64),
            (0.5, 1),
            (0.499_999_97, 0),
            (1.5, 2),
            (2.5, 3),
            (8_388_607.5, 8_388_608),
            (1e20, 1e20 as i64),
        ] {
            assert_eq!(round_positive(x), q, "{x}");
        }
    }

    proptest! {
        #[test]
        fn fnv_state_continues_over_concatenation(a in ".{0,20}", b in ".{0,20}") {
            let joined = format!("{a}{b}");
            let state = fnv1a_continue(fnv1a_continue(FNV1A_OFFSET, a.as_bytes()), b.as_bytes());
            prop_assert_eq!(fmix64(state), feature_hash(joined.as_bytes()));
        }
    }

    #[test]
    fn feature_hash_is_fixed() {
        // Pinned values, computed by an independent Python implementation of
        // the documented definition. A change here changes every stored
        // fingerprint.
        assert_eq!(feature_hash(b""), 0xefd0_1f60_ba99_2926);
        assert_eq!(feature_hash(b"a"), 0x82a2_a958_a9be_ce5b);
        assert_eq!(feature_hash(b"simhash"), 0x91be_d202_841f_2537);
        assert_eq!(feature_hash(b"web crawl"), 0xb889_f4f1_a5c1_45da);
    }

    #[test]
    fn simhash_matches_the_definition() {
        // One feature: the fingerprint is the feature's hash.
        let h = feature_hash(b"x");
        assert_eq!(simhash_items(&[(h, 1.0)]), h);
        // Two features of different weight: the heavier wins every bit.
        let g = feature_hash(b"y");
        assert_eq!(simhash_items(&[(h, 1.0), (g, 2.0)]), g);
        // Equal weights: bits where they agree keep the value; where they
        // disagree V = 0, which is >= 0, so 1.
        assert_eq!(simhash_items(&[(h, 1.0), (g, 1.0)]), (h & g) | (h ^ g));
        assert_eq!(simhash_items(&[]), u64::MAX);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        assert_eq!(from_hex(&to_hex(0x00ab_cdef_0123_4567)), Some(0x00ab_cdef_0123_4567));
        assert_eq!(to_hex(0xab), "00000000000000ab");
    }

    /// Brute-force oracle: V in f64 by the paper's words.
    fn oracle(items: &[(u64, f32)]) -> u64 {
        let mut v = [0i64; 64];
        for &(h, w) in items {
            let q = (w * WEIGHT_SCALE).round() as i64;
            for (i, vi) in v.iter_mut().enumerate() {
                if h >> i & 1 == 1 {
                    *vi += q;
                } else {
                    *vi -= q;
                }
            }
        }
        (0..64).filter(|&i| v[i] >= 0).fold(0u64, |fp, i| fp | 1 << i)
    }

    proptest! {
        #[test]
        fn simhash_equals_oracle_and_ignores_order(
            mut items in proptest::collection::vec((any::<u64>(), 0.01f32..50.0), 0..40)
        ) {
            let fp = simhash_items(&items);
            prop_assert_eq!(fp, oracle(&items));
            items.reverse();
            prop_assert_eq!(simhash_items(&items), fp);
        }

        #[test]
        fn hamming_is_popcount(a in any::<u64>(), b in any::<u64>()) {
            let naive = (0..64).filter(|i| (a >> i & 1) != (b >> i & 1)).count() as u32;
            prop_assert_eq!(hamming(a, b), naive);
        }
    }
}
