//! A sealed run: t packed tables over the same distinct fingerprints plus
//! their ids (index pipeline: the main layer of a [`super::LiveIndex`], built
//! by merging a frozen [`super::Delta`] into the previous run). Holds the
//! merge and the probe loops (scalar and POPCNT).

use rayon::prelude::*;

use super::{Geometry, Ids, Table, TableBuilder, PAD, ROUND};

/// A sealed, immutable set of t tables over the same distinct fingerprints,
/// with the page id of each fingerprint parallel to table 0.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) tables: Vec<Table>,
    pub(crate) ids: Ids,
}

impl Run {
    /// Builds from distinct `(fp, id)` pairs (any order), tables in parallel.
    pub(crate) fn build(geo: &Geometry, items: &[(u64, u64)]) -> Run {
        let empty = Run::default();
        empty.merged(geo, items).0
    }

    /// A new run holding this run's fingerprints and those of `more` that
    /// are not in it (distinct among themselves), merged table by table. Also
    /// returns the pairs of `more` whose fingerprint this run already holds.
    pub(crate) fn merged(&self, geo: &Geometry, more: &[(u64, u64)]) -> (Run, Vec<(u64, u64)>) {
        type Pairs = Vec<(u64, u64)>;
        let (more, dups): (std::borrow::Cow<'_, [(u64, u64)]>, Pairs) = if self.len() == 0 {
            (more.into(), Vec::new())
        } else {
            // Which of `more` this run holds: sort them by table 0's order and
            // walk table 0 once (sequential reads), instead of a random probe
            // (two cache misses) per item.
            let spec0 = &geo.specs[0];
            let mut keyed: Vec<(u64, u64, u64)> = more.iter().map(|&(fp, id)| (spec0.permute(fp), fp, id)).collect();
            keyed.par_sort_unstable_by_key(|x| x.0);
            let mut old = self.tables[0].iter().peekable();
            let (mut new, mut dups): (Pairs, Pairs) = (Vec::with_capacity(keyed.len()), Vec::new());
            for (pk, fp, id) in keyed {
                while old.next_if(|&k| k < pk).is_some() {}
                if old.peek() == Some(&pk) {
                    dups.push((fp, id));
                } else {
                    new.push((fp, id));
                }
            }
            (new.into(), dups)
        };
        let n = self.len() + more.len();
        let tables: Vec<(Table, Ids)> = geo
            .specs
            .par_iter()
            .enumerate()
            .map(|(i, spec)| {
                let old = self.tables.get(i);
                if i == 0 {
                    let mut add: Vec<(u64, u64)> = more.iter().map(|&(fp, id)| (spec.permute(fp), id)).collect();
                    add.par_sort_unstable();
                    if let Some(t) = old {
                        let (keys, add_ids): (Vec<u64>, Vec<u64>) = add.iter().copied().unzip();
                        if let Some(done) = t.merged_runs(&keys, spec.prefix(), Some((&self.ids, &add_ids))) {
                            return done;
                        }
                    }
                    let old_keys = old.into_iter().flat_map(|t| t.iter());
                    let mut out = TableBuilder::new(n, spec.prefix());
                    let mut ids = Ids::with_width(n, self.ids.is_wide());
                    let old = old_keys.zip(self.ids.iter());
                    merge_sorted(old, add.into_iter(), |k, id| {
                        out.push(k);
                        ids.push(id);
                    });
                    (out.finish(), ids)
                } else {
                    let mut add: Vec<u64> = more.iter().map(|&(fp, _)| spec.permute(fp)).collect();
                    add.par_sort_unstable();
                    if let Some((t, _)) = old.and_then(|t| t.merged_runs(&add, spec.prefix(), None)) {
                        return (t, Ids::default());
                    }
                    let old_keys = old.into_iter().flat_map(|t| t.iter());
                    let mut out = TableBuilder::new(n, spec.prefix());
                    let old = old_keys.map(|k| (k, ()));
                    merge_sorted(old, add.into_iter().map(|k| (k, ())), |k, ()| out.push(k));
                    (out.finish(), Ids::default())
                }
            })
            .collect();
        let mut ids = Ids::default();
        let mut out = Vec::with_capacity(tables.len());
        for (i, (t, v)) in tables.into_iter().enumerate() {
            if i == 0 {
                ids = v;
            }
            out.push(t);
        }
        (Run { tables: out, ids }, dups)
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Position of `fp` in table 0, if stored.
    #[inline]
    pub(crate) fn find(&self, geo: &Geometry, fp: u64) -> Option<usize> {
        self.tables.first()?.find(geo.specs[0].permute(fp))
    }

    /// Calls `emit(fp, id, distance)` once per stored fingerprint within k of `q`.
    /// Returns the number of entries examined.
    #[inline(always)]
    pub(crate) fn probe(&self, geo: &Geometry, q: u64, mut emit: impl FnMut(u64, u64, u32)) -> usize {
        if self.ids.is_empty() {
            return 0;
        }
        let mut examined = 0;
        let mut pqs = [0u64; ROUND];
        let mut ranges = [(0usize, 0usize); ROUND];
        // Rounds of up to ROUND tables so the cache misses of different
        // tables overlap: directory prefetch, range prefetch, then the scans.
        for start in (0..self.tables.len()).step_by(ROUND) {
            let end = (start + ROUND).min(self.tables.len());
            for i in start..end {
                pqs[i - start] = geo.specs[i].permute(q);
                self.tables[i].prefetch_dir(pqs[i - start]);
            }
            for i in start..end {
                let r = self.tables[i].bucket(pqs[i - start]);
                self.tables[i].prefetch_range(r);
                ranges[i - start] = r;
            }
            for i in start..end {
                examined += self.scan(geo, i, q, pqs[i - start], ranges[i - start], &mut emit);
            }
        }
        examined
    }

    /// Scans entries `lo..hi` of table `i` (the bucket of `pq`, the query
    /// `q` permuted by table i) and emits the matches this table owns.
    #[inline(always)]
    pub(super) fn scan(
        &self,
        geo: &Geometry,
        i: usize,
        q: u64,
        pq: u64,
        (lo, hi): (usize, usize),
        emit: &mut impl FnMut(u64, u64, u32),
    ) -> usize {
        let t = &self.tables[i];
        // One bounds check per bucket, then a tight loop: the table's fields
        // in registers, one unaligned load, xor, mask, popcount and compare
        // per entry (this loop is most of a probe's time).
        assert!(lo <= hi && hi * t.width + PAD <= t.data.len());
        let (w, low, k) = (t.width, t.low, geo.k);
        let base = t.data.as_ptr();
        for j in lo..hi {
            // SAFETY: j < hi, and hi·w + PAD ≤ data.len() (checked above), so
            // the 8 bytes at j·w are inside the data.
            let raw = u64::from_le(unsafe { (base.add(j * w) as *const u64).read_unaligned() });
            let x = (raw ^ pq) & low;
            let d = x.count_ones();
            if d <= k {
                self.owned_match(geo, i, q, pq ^ x, j, d, emit);
            }
        }
        hi - lo
    }

    /// A candidate within k found in table `i` at position `j`: emitted if
    /// table i is the first table whose prefix it shares with the query (so
    /// every match is reported by exactly one table).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn owned_match(
        &self,
        geo: &Geometry,
        i: usize,
        q: u64,
        permuted: u64,
        j: usize,
        d: u32,
        emit: &mut impl FnMut(u64, u64, u32),
    ) {
        let c = geo.specs[i].unpermute(permuted);
        if geo.first_table(c ^ q) != i {
            return;
        }
        let id = if i == 0 {
            self.ids.get(j)
        } else {
            match self.find(geo, c) {
                Some(p) => self.ids.get(p),
                None => return,
            }
        };
        emit(c, id, d);
    }

    /// Probes for a batch of queries, software-pipelined: while query s is
    /// scanned, the bucket ranges of query s + DEPTH are prefetched and the
    /// directory words of query s + 2·DEPTH. `emit(query index, fp, id,
    /// distance)`.
    #[inline(always)]
    pub(crate) fn probe_many(&self, geo: &Geometry, qs: &[u64], mut emit: impl FnMut(usize, u64, u64, u32)) -> usize {
        const DEPTH: usize = 2;
        const SLOTS: usize = 2 * DEPTH + 1;
        let nt = self.tables.len();
        if self.ids.is_empty() || qs.is_empty() {
            return 0;
        }
        if nt > ROUND {
            return qs
                .iter()
                .enumerate()
                .map(|(qi, &q)| self.probe(geo, q, |c, id, d| emit(qi, c, id, d)))
                .sum();
        }
        let mut pqs = [[0u64; ROUND]; SLOTS];
        let mut ranges = [[(0usize, 0usize); ROUND]; SLOTS];
        let mut examined = 0;
        let n = qs.len();
        for s in 0..n + 2 * DEPTH {
            if s < n {
                let slot = &mut pqs[s % SLOTS];
                for ((pq, spec), t) in slot.iter_mut().zip(&geo.specs).zip(&self.tables) {
                    *pq = spec.permute(qs[s]);
                    t.prefetch_dir(*pq);
                }
            }
            if s >= DEPTH && s - DEPTH < n {
                let m = (s - DEPTH) % SLOTS;
                for i in 0..nt {
                    let r = self.tables[i].bucket(pqs[m][i]);
                    self.tables[i].prefetch_range(r);
                    ranges[m][i] = r;
                }
            }
            if s >= 2 * DEPTH && s - 2 * DEPTH < n {
                let qi = s - 2 * DEPTH;
                let m = qi % SLOTS;
                let q = qs[qi];
                for i in 0..nt {
                    examined += self.scan(geo, i, q, pqs[m][i], ranges[m][i], &mut |c, id, d| emit(qi, c, id, d));
                }
            }
        }
        examined
    }

    pub(crate) fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum::<usize>() + self.ids.bytes()
    }

    /// Every `(fp, id)` of the run (first ids only).
    pub(super) fn items(&self, geo: &Geometry) -> Vec<(u64, u64)> {
        match self.tables.first() {
            Some(t) => t
                .iter()
                .zip(self.ids.iter())
                .map(|(k, id)| (geo.specs[0].unpermute(k), id))
                .collect(),
            None => Vec::new(),
        }
    }
}

/// Merges two ascending sequences of `(key, value)` into `push`.
fn merge_sorted<V>(a: impl Iterator<Item = (u64, V)>, b: impl Iterator<Item = (u64, V)>, mut push: impl FnMut(u64, V)) {
    let mut a = a.peekable();
    let mut b = b.peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.0 <= y.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return,
        };
        let (k, v) = if take_a { a.next() } else { b.next() }.expect("peeked");
        push(k, v);
    }
}
