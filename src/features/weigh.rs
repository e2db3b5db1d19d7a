//! From occurrences to weights: every `(feature hash, multiplier)`
//! occurrence of a page is appended, then sorted by hash and merged, each
//! feature weighing `(1 + ln n) × max m`.

use std::cell::RefCell;

use super::{FastMap, Features};

/// Collects feature occurrences, then turns them into weights: each
/// occurrence is appended (no table per page); [`Accumulator::finish`] sorts
/// them by hash and merges equal hashes.
pub(super) struct Accumulator {
    /// `(feature hash, multiplier)` of every occurrence, in text order.
    occ: Vec<(u64, f32)>,
    pub(super) labels: Option<FastMap<u64, String>>,
    /// Word keys of the text added, when asked for.
    pub(super) words: Option<Vec<u64>>,
}

/// `(feature hash, multiplier)` occurrences.
type Occurrences = Vec<(u64, f32)>;

thread_local! {
    /// Occurrence buffers reused across pages (the occurrences and the
    /// sort's scratch), so a page allocates only its output.
    static OCC_BUFS: RefCell<(Occurrences, Occurrences, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// `(n as f32).ln()` for the small occurrence counts `n` (the same `f32`
/// values, computed once): most features occur a few times on a page.
static LN_SMALL: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();

/// Occurrence buffers kept per thread at most this long (a huge page's
/// buffers are dropped rather than kept).
const OCC_KEEP: usize = 1 << 18;

impl Accumulator {
    pub(super) fn new(labels: bool) -> Self {
        Self::with_capacity(labels, 0)
    }

    /// An accumulator for about `text_bytes` of text (a unigram and a
    /// bigram per word of about six bytes), so it does not regrow.
    pub(super) fn with_capacity(labels: bool, text_bytes: usize) -> Self {
        let mut occ = OCC_BUFS.with(|b| std::mem::take(&mut b.borrow_mut().0));
        occ.clear();
        occ.reserve(text_bytes / 3);
        Accumulator {
            occ,
            labels: labels.then(FastMap::default),
            words: None,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, h: u64, m: f32, label: &str) {
        self.occ.push((h, m));
        if let Some(l) = &mut self.labels {
            l.entry(h).or_insert_with(|| label.to_string());
        }
    }

    pub(super) fn finish(self) -> Features {
        let Accumulator { mut occ, labels, words } = self;
        let (mut tmp, mut counts) = OCC_BUFS.with(|b| {
            let mut b = b.borrow_mut();
            (std::mem::take(&mut b.1), std::mem::take(&mut b.2))
        });
        crate::hashsort::sorted_by_key(&occ, &mut tmp, |e| e.0);
        std::mem::swap(&mut occ, &mut tmp);
        // Runs of one hash: weight (1 + ln n) × max m (the same f32
        // operations as a per-feature count and running maximum from 0).
        merge_runs(&mut occ, &mut counts);
        let mut items: Vec<(u64, f32)> = Vec::with_capacity(occ.len());
        for (&(h, max_m), &count) in occ.iter().zip(counts.iter()) {
            let w = run_weight(count, max_m);
            if w > 0.0 {
                items.push((h, w));
            }
        }
        if occ.capacity() <= OCC_KEEP && tmp.capacity() <= OCC_KEEP && counts.capacity() <= OCC_KEEP {
            occ.clear();
            tmp.clear();
            counts.clear();
            OCC_BUFS.with(|b| *b.borrow_mut() = (occ, tmp, counts));
        }
        let labels = labels.map(|l| {
            items
                .iter()
                .map(|(h, _)| l.get(h).cloned().unwrap_or_default())
                .collect()
        });
        Features {
            items,
            labels,
            words: words.unwrap_or_default(),
            word_blocks: Vec::new(),
            cut_blocks: Vec::new(),
        }
    }
}

/// The weight of a feature that occurs `count` times with multipliers up
/// to `max_m`: `(1 + ln count) × max_m`.
#[inline]
pub(super) fn run_weight(count: u32, max_m: f32) -> f32 {
    let ln_table = LN_SMALL.get_or_init(|| std::array::from_fn(|n| (n as f32).ln()));
    let ln = match ln_table.get(count as usize) {
        Some(&l) => l,
        None => (count as f32).ln(),
    };
    (1.0 + ln) * max_m
}

/// Merges the runs of equal hashes of the sorted `occ` in place: afterwards
/// `occ` holds one `(hash, largest m of the run, at least 0)` per run, in
/// order, and `counts` the run lengths. Branch-free: most runs are of one
/// occurrence, so a branch on the end of a run would mispredict.
fn merge_runs(occ: &mut Vec<(u64, f32)>, counts: &mut Vec<u32>) {
    counts.clear();
    let n = occ.len();
    let Some(&(first_h, first_m)) = occ.first() else {
        return;
    };
    counts.resize(n, 0);
    let pos = |m: f32| if m > 0.0 { m } else { 0.0 };
    // The open run: its hash, maximum and length; it is written to slot `k`
    // after every step (and overwritten while it goes on).
    let (mut h, mut m, mut c) = (first_h, pos(first_m), 1u32);
    let mut k = 0;
    for i in 1..n {
        let (hi, mi) = occ[i];
        occ[k] = (h, m);
        counts[k] = c;
        let same = hi == h;
        k += usize::from(!same);
        let base = if same { m } else { 0.0 };
        m = if mi > base { mi } else { base };
        c = if same { c + 1 } else { 1 };
        h = hi;
    }
    occ[k] = (h, m);
    counts[k] = c;
    occ.truncate(k + 1);
    counts.truncate(k + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The branch-free merge equals a plain loop over the runs.
        #[test]
        fn merge_runs_merges(mut v in proptest::collection::vec((0u64..40, -1i8..4), 0..300)) {
            v.sort_by_key(|e| e.0);
            let mut occ: Vec<(u64, f32)> = v.iter().map(|&(h, m)| (h, f32::from(m) * 0.75)).collect();
            let mut expect: Vec<(u64, u32, u32)> = Vec::new();
            for &(h, m) in &occ {
                match expect.last_mut() {
                    Some(e) if e.0 == h => {
                        e.1 += 1;
                        if m > f32::from_bits(e.2) {
                            e.2 = m.to_bits();
                        }
                    }
                    _ => expect.push((h, 1, if m > 0.0 { m } else { 0.0 }.to_bits())),
                }
            }
            let mut counts = vec![7];
            merge_runs(&mut occ, &mut counts);
            let got: Vec<(u64, u32, u32)> = occ.iter().zip(&counts).map(|(&(h, m), &c)| (h, c, m.to_bits())).collect();
            proptest::prop_assert_eq!(got, expect);
        }
    }
}
