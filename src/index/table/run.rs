//! A sealed run: t packed tables over the same distinct fingerprints plus
//! their ids (index pipeline: the main layer of a [`super::LiveIndex`], built
//! by merging a frozen [`super::Delta`] into the previous run). Holds the
//! merge and the probe loops (scalar and POPCNT).

use std::path::Path;

use rayon::prelude::*;

use super::ids::IdsBuilder;
use super::{Geometry, Ids, Table, TableBuilder, PAD, ROUND};

/// A sealed, immutable set of t tables over the same distinct fingerprints,
/// with the page id of each fingerprint parallel to table 0.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) tables: Vec<Table>,
    pub(crate) ids: Ids,
}

impl Run {
    /// Builds from distinct `(fp, id)` pairs (any order), tables in parallel;
    /// with `spill`, the tables' entries go to unlinked files there.
    pub(crate) fn build(geo: &Geometry, items: &[(u64, u64)], spill: Option<&Path>) -> std::io::Result<Run> {
        let empty = Run::default();
        Ok(empty.merged(geo, items, spill)?.0)
    }

    /// A new run holding this run's fingerprints and those of `more` that
    /// are not in it (distinct among themselves), merged table by table. Also
    /// returns the pairs of `more` whose fingerprint this run already holds.
    /// With `spill`, the new tables' entries go to unlinked files there
    /// (written as they are merged); an error reading or writing them is
    /// returned and this run is unchanged.
    pub(crate) fn merged(
        &self,
        geo: &Geometry,
        more: &[(u64, u64)],
        spill: Option<&Path>,
    ) -> std::io::Result<(Run, Vec<(u64, u64)>)> {
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
            let mut held = vec![false; keyed.len()];
            let mut at = 0;
            self.tables[0].for_each_key(|k| {
                while at < keyed.len() && keyed[at].0 < k {
                    at += 1;
                }
                if at < keyed.len() && keyed[at].0 == k {
                    held[at] = true;
                }
            })?;
            let (mut new, mut dups): (Pairs, Pairs) = (Vec::with_capacity(keyed.len()), Vec::new());
            for ((_, fp, id), held) in keyed.into_iter().zip(held) {
                if held {
                    dups.push((fp, id));
                } else {
                    new.push((fp, id));
                }
            }
            (new.into(), dups)
        };
        let n = self.len() + more.len();
        let tables: Vec<std::io::Result<(Table, Ids)>> = geo
            .specs
            .par_iter()
            .enumerate()
            .map(|(i, spec)| {
                let old = self.tables.get(i);
                if i == 0 {
                    let mut add: Vec<(u64, u64)> = more.iter().map(|&(fp, id)| (spec.permute(fp), id)).collect();
                    add.par_sort_unstable();
                    if let (Some(t), None) = (old, spill) {
                        let (keys, add_ids): (Vec<u64>, Vec<u64>) = add.iter().copied().unzip();
                        if let Some(done) = t.merged_runs(&keys, spec.prefix(), Some((&self.ids, &add_ids))) {
                            return Ok(done);
                        }
                    }
                    let mut out = TableBuilder::new(n, spec.prefix(), spill)?;
                    let mut ids = match spill {
                        None => IdsBuilder::in_memory(n, self.ids.is_wide()),
                        Some(dir) => {
                            let wide = self.ids.is_wide() || add.iter().any(|&(_, id)| Ids::too_wide(id));
                            IdsBuilder::spilling(dir, wide)?
                        }
                    };
                    let mut add = add.into_iter().peekable();
                    if let Some(t) = old {
                        let mut old_ids = self.ids.cursor();
                        let mut err = None;
                        t.for_each_key(|k| {
                            while let Some((a, id)) = add.next_if(|&(a, _)| a < k) {
                                out.push(a);
                                ids.push(id);
                            }
                            out.push(k);
                            match old_ids.next() {
                                Ok(id) => ids.push(id),
                                Err(e) => {
                                    err.get_or_insert(e);
                                }
                            }
                        })?;
                        if let Some(e) = err {
                            return Err(e);
                        }
                    }
                    for (a, id) in add {
                        out.push(a);
                        ids.push(id);
                    }
                    Ok((out.finish()?, ids.finish()?))
                } else {
                    let mut add: Vec<u64> = more.iter().map(|&(fp, _)| spec.permute(fp)).collect();
                    add.par_sort_unstable();
                    if let (Some(t), None) = (old, spill) {
                        if let Some((t, _)) = t.merged_runs(&add, spec.prefix(), None) {
                            return Ok((t, Ids::default()));
                        }
                    }
                    let mut out = TableBuilder::new(n, spec.prefix(), spill)?;
                    let mut add = add.into_iter().peekable();
                    if let Some(t) = old {
                        t.for_each_key(|k| {
                            while let Some(a) = add.next_if(|&a| a < k) {
                                out.push(a);
                            }
                            out.push(k);
                        })?;
                    }
                    add.for_each(|a| out.push(a));
                    Ok((out.finish()?, Ids::default()))
                }
            })
            .collect();
        let mut ids = Ids::default();
        let mut out = Vec::with_capacity(tables.len());
        for (i, t) in tables.into_iter().enumerate() {
            let (t, v) = t?;
            if i == 0 {
                ids = v;
            }
            out.push(t);
        }
        Ok((Run { tables: out, ids }, dups))
    }

    /// This run with its tables' entries and its ids in unlinked files in `dir`.
    pub(crate) fn spill(self, dir: &Path) -> std::io::Result<Run> {
        let tables = self
            .tables
            .into_iter()
            .map(|t| t.spill(dir))
            .collect::<std::io::Result<_>>()?;
        let ids = if self.ids.is_file() {
            self.ids
        } else {
            let mut out = IdsBuilder::spilling(dir, self.ids.is_wide())?;
            let mut c = self.ids.cursor();
            for _ in 0..self.ids.len() {
                out.push(c.next()?);
            }
            out.finish()?
        };
        Ok(Run { tables, ids })
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
        // The bucket's bytes (a slice of the table in memory, one positioned
        // read of a spilled one), one bounds check, then a tight loop: the
        // table's fields in registers, one unaligned load, xor, mask,
        // popcount and compare per entry (this loop is most of a probe's
        // time).
        let Some(bytes) = t.entries(lo, hi) else {
            return 0;
        };
        let (w, low, k) = (t.width, t.low, geo.k);
        assert!(lo <= hi && (hi - lo) * w + PAD <= bytes.len());
        let base = bytes.as_ptr();
        for j in 0..hi - lo {
            // SAFETY: j < hi - lo, and (hi - lo)·w + PAD ≤ bytes.len()
            // (checked above), so the 8 bytes at j·w are inside them.
            let raw = u64::from_le(unsafe { (base.add(j * w) as *const u64).read_unaligned() });
            let x = (raw ^ pq) & low;
            let d = x.count_ones();
            if d <= k {
                self.owned_match(geo, i, q, pq ^ x, lo + j, d, emit);
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
            self.find(geo, c).and_then(|p| self.ids.get(p))
        };
        if let Some(id) = id {
            emit(c, id, d);
        }
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
    pub(super) fn items(&self, geo: &Geometry) -> std::io::Result<Vec<(u64, u64)>> {
        let mut out = Vec::with_capacity(self.len());
        if let Some(t) = self.tables.first() {
            let mut ids = self.ids.cursor();
            let mut err = None;
            t.for_each_key(|k| match ids.next() {
                Ok(id) => out.push((geo.specs[0].unpermute(k), id)),
                Err(e) => {
                    err.get_or_insert(e);
                }
            })?;
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(out)
    }
}
