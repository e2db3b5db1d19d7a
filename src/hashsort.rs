//! Sorting by hash keys: one counting-sort pass on the keys' top bits, then
//! each bucket on its own (insertion sort when small). Hash keys are close
//! to uniform, so with about one bucket per key most buckets hold zero to
//! two keys, and the sort costs two passes over the data where a
//! comparison sort costs about log2(n). Used where a page's hashes are
//! sorted: its feature occurrences before they are merged
//! ([`crate::features`]) and its shingle hashes before its content sketch
//! keeps the smallest ([`crate::sketch`]).
//!
//! Keys that are not uniform (many equal keys, or keys sharing their top
//! bits) only make some buckets large; those go to the standard library's
//! sort, so the result is always sorted.
//!
//! This module depends on nothing else in the crate.

/// Below this many items a comparison sort is cheaper than the buckets.
const SMALL: usize = 64;

/// Largest bucket sorted by insertion.
const INSERTION_MAX: usize = 16;

/// Writes the items of `src` to `out`, sorted by `key(item)` (ascending;
/// items with equal keys in any order). `out`'s contents are replaced, its
/// allocation reused.
pub(crate) fn sorted_by_key<T: Copy, K: Fn(&T) -> u64>(src: &[T], out: &mut Vec<T>, key: K) {
    let n = src.len();
    out.clear();
    let Some(&first) = src.first().filter(|_| n >= SMALL) else {
        out.extend_from_slice(src);
        out.sort_unstable_by_key(&key);
        return;
    };
    // Every slot is written by the scatter below.
    out.resize(n, first);
    // About one bucket per item, at most 2^16 buckets.
    let bits = (usize::BITS - (n - 1).leading_zeros()).min(16);
    let shift = 64 - bits;
    let bucket = |e: &T| (key(e) >> shift) as usize;
    let mut start = vec![0u32; (1usize << bits) + 1];
    for e in src {
        start[bucket(e) + 1] += 1;
    }
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    let mut next = start.clone();
    for e in src {
        let b = bucket(e);
        out[next[b] as usize] = *e;
        next[b] += 1;
    }
    for w in start.windows(2) {
        let bucket = &mut out[w[0] as usize..w[1] as usize];
        if bucket.len() <= INSERTION_MAX {
            for i in 1..bucket.len() {
                let mut j = i;
                while j > 0 && key(&bucket[j - 1]) > key(&bucket[j]) {
                    bucket.swap(j - 1, j);
                    j -= 1;
                }
            }
        } else {
            bucket.sort_unstable_by_key(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Sorts: the same multiset as the standard library's sort, in
        /// order, with repeated keys and keys sharing their top bits.
        #[test]
        fn sorts_like_the_standard_sort(mut v in proptest::collection::vec(proptest::num::u64::ANY, 0..3000), dup in 0usize..50) {
            let extra: Vec<u64> = v.iter().take(dup).map(|&h| h & !0xffff).collect();
            v.extend(extra.iter().copied());
            v.extend(extra);
            let mut expect = v.clone();
            expect.sort_unstable();
            let mut got = Vec::new();
            sorted_by_key(&v, &mut got, |&h| h);
            proptest::prop_assert_eq!(got, expect);
        }

        /// 32-bit keys shifted to the top of the 64-bit key.
        #[test]
        fn sorts_u32_keys(v in proptest::collection::vec(proptest::num::u32::ANY, 0..3000)) {
            let mut expect = v.clone();
            expect.sort_unstable();
            let mut got = vec![7; 5];
            sorted_by_key(&v, &mut got, |&h| u64::from(h) << 32);
            proptest::prop_assert_eq!(got, expect);
        }
    }

    /// All keys equal, or all in one bucket: still sorted.
    #[test]
    fn degenerate_keys_sort() {
        let mut out = Vec::new();
        sorted_by_key(&[5u64; 1000], &mut out, |&h| h);
        assert_eq!(out, vec![5u64; 1000]);
        let low: Vec<u64> = (0..1000u64).rev().collect();
        sorted_by_key(&low, &mut out, |&h| h);
        assert_eq!(out, (0..1000u64).collect::<Vec<_>>());
    }
}
