//! Test oracles shared by the index's test suites (tests only): the
//! brute-force scan every index structure must agree with, and planted
//! neighbours at chosen bit positions.

use super::Match;

/// Every `(fp, id)` of `items` within Hamming distance `k` of `q`, sorted: what
/// a query must return, by a linear scan.
pub(crate) fn brute(items: &[(u64, u64)], q: u64, k: u32) -> Vec<Match> {
    let mut v: Vec<Match> = items
        .iter()
        .filter(|(fp, _)| (fp ^ q).count_ones() <= k)
        .map(|&(fp, id)| Match {
            fp,
            id,
            distance: (fp ^ q).count_ones(),
        })
        .collect();
    v.sort_unstable();
    v
}

/// `x` with the bits at `bits` (mod 64) flipped: a neighbour at distance up
/// to `bits.len()`.
pub(crate) fn flip(mut x: u64, bits: &[u8]) -> u64 {
    for &b in bits {
        x ^= 1u64 << (b % 64);
    }
    x
}
