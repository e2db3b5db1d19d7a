//! [`LiveIndex`], the index the crawl queries and inserts into (index
//! pipeline: after simhash, before the dedup decision): the main run, a
//! spilled index's recent run, a frozen delta being merged, the live
//! delta, one lock over them, the background merge and snapshots.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use rayon::prelude::*;

use super::{Delta, Geometry, Ids, Match, Run, Table};
use crate::index::design::Design;
use crate::index::persist::{design_hash, Header, SnapReader, SnapWriter, SnapshotError};

#[derive(Debug)]
struct State {
    main: Arc<Run>,
    /// A spilled index's second run: each frozen delta is merged into it,
    /// and it into the main run once it holds more than an eighth of it
    /// ([`recent_is_full`]). Always empty in an index in memory.
    recent: Arc<Run>,
    frozen: Option<Arc<Delta>>,
    delta: Delta,
    /// Ids beyond the first of fingerprints inserted more than once.
    extras: HashMap<u64, Vec<u64>>,
    len: usize,
}

#[derive(Debug)]
struct Inner {
    geo: Geometry,
    design: Design,
    state: RwLock<State>,
    merger: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Where merged runs put their tables' entries ([`LiveIndex::spill_to`]).
    spill: OnceLock<PathBuf>,
    /// The live delta's size in a spilled index ([`SPILLED_DELTA`]; tests
    /// set a smaller one).
    spilled_delta: usize,
}

/// Smallest live delta that is frozen and merged into the main run of an
/// index in memory: about 1.5 MB of bucket lines and entries, first full
/// after 16 384 pages, so a crawl's memory reaches its level early. Past
/// 131 072 fingerprints the threshold is an eighth of the main run
/// ([`delta_threshold`]).
pub const MIN_DELTA: usize = 1 << 14;

/// Entries a new live delta's bucket lines have room for before they first
/// double (`Delta::with_lines_for`): the delta created when its predecessor
/// is frozen does not take a full delta's lines while the merge runs, and a
/// small index takes the lines of what it holds.
const START_LINES: usize = 1 << 10;

/// The live delta's size in an index whose runs are on disk
/// ([`LiveIndex::spill_to`]): about 1.5 MB of bucket lines and entries,
/// whatever the index's size. Each frozen delta is merged into the recent
/// run, and the recent run into the main run once it holds more than an
/// eighth of it ([`recent_is_full`]): merges re-encode about
/// 9 + n / 2^18 entries per table per insert for a main run of n (47 at
/// 10M), and the heap holds no more delta at 10M fingerprints than at
/// 20 000 (an eighth of 10M as a delta would hold 120 MB).
pub const SPILLED_DELTA: usize = 1 << 14;

/// Live delta size at which it is frozen and merged: in memory an eighth
/// of the main run of `main` fingerprints, at least [`MIN_DELTA`]; for a
/// spilled index `spilled`, whatever the runs' size.
pub(super) fn delta_threshold(main: usize, spilled: Option<usize>) -> usize {
    match spilled {
        Some(size) => size,
        None => MIN_DELTA.max(main / 8),
    }
}

/// Whether a spilled index's recent run of `recent` fingerprints is merged
/// into its main run of `main`: past an eighth of it (so below 131 072
/// fingerprints every merge reaches the main run).
pub(super) fn recent_is_full(recent: usize, main: usize) -> bool {
    recent > main / 8
}

/// The live Hamming index: inserts and queries interleaved from many threads
/// (`Send + Sync`; clones share one index). See the module docs for the
/// layout and the locking.
#[derive(Debug, Clone)]
pub struct LiveIndex {
    inner: Arc<Inner>,
}

/// `(fp, id)` pairs whose fingerprint a run already holds (they go to
/// `extras`).
type Repeats = Vec<(u64, u64)>;

/// `run` merged with `items`, in `spill` (falling back to memory when
/// writing there fails), and the items whose fingerprint `run` holds.
fn merge_into(
    geo: &Geometry,
    run: &Run,
    items: &[(u64, u64)],
    spill: Option<&Path>,
) -> std::io::Result<(Arc<Run>, Repeats)> {
    let merged = run.merged(geo, items, spill).or_else(|e| {
        if spill.is_none() {
            return Err(e);
        }
        tracing::error!("index: writing a merged run to disk failed ({e}); merging in memory");
        run.merged(geo, items, None)
    })?;
    Ok((Arc::new(merged.0), merged.1))
}

/// A spilled index's merge: the frozen delta into the recent run, or both
/// into the main run once the recent run would be full
/// ([`recent_is_full`]). Returns the new main and recent runs and the pairs
/// whose fingerprint is stored already.
fn merge_spilled(
    geo: &Geometry,
    main: &Arc<Run>,
    recent: &Arc<Run>,
    frozen: &Delta,
    dir: &Path,
) -> std::io::Result<(Arc<Run>, Arc<Run>, Repeats)> {
    let items = frozen.items();
    if !recent_is_full(recent.len() + items.len(), main.len()) {
        let (recent, dups) = merge_into(geo, recent, &items, Some(dir))?;
        return Ok((main.clone(), recent, dups));
    }
    let mut all = recent.items(geo)?;
    all.extend(items);
    // A fingerprint in both keeps the recent run's pair; the delta's goes
    // with the duplicates (the sort is stable).
    all.sort_by_key(|p| p.0);
    let mut dups = Vec::new();
    all.dedup_by(|later, first| {
        let repeat = later.0 == first.0;
        if repeat {
            dups.push(*later);
        }
        repeat
    });
    let (main, more) = merge_into(geo, main, &all, Some(dir))?;
    dups.extend(more);
    Ok((main, Arc::default(), dups))
}

/// Statistics of one query, for benchmarks and the clustered-set report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStats {
    /// Table entries compared with the query.
    pub examined: usize,
    /// Matches appended.
    pub matches: usize,
}

impl LiveIndex {
    /// An empty index over `design` answering distance `k`.
    ///
    /// The design should cover k ([`Design::covers`]); a design that does not
    /// can miss neighbours.
    pub fn new(design: Design, k: u32) -> LiveIndex {
        let geo = Geometry::new(&design, k);
        let delta = Delta::with_lines_for(&geo, MIN_DELTA, START_LINES);
        let main = Arc::new(Run::build(&geo, &[], None).expect("an empty run in memory does no I/O"));
        LiveIndex {
            inner: Arc::new(Inner {
                geo,
                design,
                state: RwLock::new(State {
                    main,
                    recent: Arc::default(),
                    frozen: None,
                    delta,
                    extras: HashMap::new(),
                    len: 0,
                }),
                merger: Mutex::new(None),
                spill: OnceLock::new(),
                spilled_delta: SPILLED_DELTA,
            }),
        }
    }

    /// An empty index with the design chosen by `[index]` settings for `k`.
    pub fn from_settings(settings: &crate::config::IndexSettings, k: u32) -> LiveIndex {
        use crate::config::IndexDesign;
        // 4, 10, 16 and 20 are the paper's designs; 6 and 8 the two-halves ones.
        let named = |t| (k == 3).then(|| Design::with_tables(3, t));
        let design = match settings.design {
            IndexDesign::Auto => None,
            IndexDesign::T4 => named(4),
            IndexDesign::T6 => named(6),
            IndexDesign::T8 => named(8),
            IndexDesign::T10 => named(10),
            IndexDesign::T16 => named(16),
            IndexDesign::T20 => named(20),
        }
        .unwrap_or_else(|| Design::fastest_for(k, settings.expected_size_log2));
        LiveIndex::new(design, k)
    }

    /// The design in use.
    pub fn design(&self) -> &Design {
        &self.inner.design
    }

    /// The distance threshold k.
    pub fn k(&self) -> u32 {
        self.inner.geo.k
    }

    /// Adds `(fp, id)`; every query that starts after this returns sees it.
    pub fn insert(&self, fp: u64, id: u64) {
        let inner = &self.inner;
        let geo = &inner.geo;
        let mut st = inner.state.write();
        st.len += 1;
        // A fingerprint already in the main run is not looked up there (two
        // cache misses per insert): it goes to the delta, and the merge moves
        // it to `extras`. Until then the main run and the delta each report
        // their own id, which is the same answer.
        // The delta's head words and set slot, and the frozen delta's set
        // slot, are fetched together: their misses overlap.
        let bk = st.delta.prepare(geo, fp);
        st.delta.prefetch_set(fp);
        if let Some(f) = &st.frozen {
            f.prefetch_set(fp);
        }
        let exists = (!st.extras.is_empty() && st.extras.contains_key(&fp))
            || st.frozen.as_ref().is_some_and(|f| f.contains(fp))
            || st.delta.contains(fp);
        if exists {
            st.extras.entry(fp).or_default().push(id);
            return;
        }
        st.delta.push(geo, fp, id, &bk);
        let spilled = self.spilled_delta();
        let threshold = delta_threshold(st.main.len(), spilled);
        if st.delta.len() >= threshold && st.frozen.is_none() {
            let next = delta_threshold(st.main.len() + st.delta.len(), spilled);
            let full = std::mem::replace(&mut st.delta, Delta::with_lines_for(geo, next, START_LINES));
            let full = Arc::new(full);
            st.frozen = Some(full.clone());
            let (main, recent) = (st.main.clone(), st.recent.clone());
            drop(st);
            self.spawn_merge(main, recent, full);
        }
    }

    /// The live delta's size once the runs are on disk
    /// ([`Inner::spilled_delta`]); none while they are in memory.
    fn spilled_delta(&self) -> Option<usize> {
        self.inner.spill.get().map(|_| self.inner.spilled_delta)
    }

    /// Entries in the live delta (not yet frozen or merged).
    #[cfg(test)]
    pub(super) fn delta_len(&self) -> usize {
        self.inner.state.read().delta.len()
    }

    /// Entries in the recent run (tests).
    #[cfg(test)]
    pub(super) fn recent_len(&self) -> usize {
        self.inner.state.read().recent.len()
    }

    /// The index with a smaller live delta once spilled (tests: the
    /// default needs tens of thousands of inserts per merge).
    #[cfg(test)]
    pub(super) fn with_spilled_delta(self, size: usize) -> LiveIndex {
        let inner = Arc::try_unwrap(self.inner).expect("a new index has no clones");
        LiveIndex {
            inner: Arc::new(Inner {
                spilled_delta: size,
                ..inner
            }),
        }
    }

    fn spawn_merge(&self, main: Arc<Run>, recent: Arc<Run>, frozen: Arc<Delta>) {
        let mut slot = self.inner.merger.lock();
        if let Some(h) = slot.take() {
            let _ = h.join();
        }
        let inner = self.inner.clone();
        *slot = Some(std::thread::spawn(move || {
            let merged = match inner.spill.get() {
                None => merge_into(&inner.geo, &main, &frozen.items(), None).map(|(m, dups)| (m, recent, dups)),
                Some(dir) => merge_spilled(&inner.geo, &main, &recent, &frozen, dir),
            };
            let (main, recent, dups) = match merged {
                Ok(m) => m,
                Err(e) => {
                    // The frozen delta stays queryable: nothing is lost, and
                    // the live delta grows past its size instead.
                    tracing::error!("index: reading a run failed ({e}); the delta is not merged");
                    return;
                }
            };
            let mut st = inner.state.write();
            st.main = main;
            st.recent = recent;
            st.frozen = None;
            for (fp, id) in dups {
                st.extras.entry(fp).or_default().push(id);
            }
        }));
    }

    /// Waits for a background merge to finish (benchmarks and tests).
    pub fn wait_merged(&self) {
        if let Some(h) = self.inner.merger.lock().take() {
            let _ = h.join();
        }
    }

    /// From now on, merged runs keep their tables' entries in unlinked files
    /// in `dir`, read with positioned reads (the page cache holds them, not
    /// the heap): the index's memory is then its directories, ids and
    /// deltas, about 8 bytes per fingerprint instead of 30. The current main
    /// run moves there too. A probe of a spilled table costs one `pread` per
    /// table. Set once; later calls change nothing.
    pub fn spill_to(&self, dir: &Path) -> std::io::Result<()> {
        if self.inner.spill.set(dir.to_path_buf()).is_err() {
            return Ok(());
        }
        self.wait_merged();
        let mut st = self.inner.state.write();
        let main = std::mem::take(&mut st.main);
        match Arc::try_unwrap(main) {
            Ok(run) => st.main = Arc::new(run.spill(dir)?),
            Err(shared) => st.main = shared,
        }
        // From the next insert on, the live delta freezes at the spilled size.
        Ok(())
    }

    /// Adds many `(fp, id)` at once by rebuilding the main run (start-up from
    /// the store): sorts, deduplicates and builds every table in parallel.
    /// An error reading or writing a spilled run leaves the index as it was.
    pub fn bulk_load(&self, items: impl IntoIterator<Item = (u64, u64)>) -> std::io::Result<()> {
        self.wait_merged();
        let geo = &self.inner.geo;
        let mut st = self.inner.state.write();
        let mut all: Vec<(u64, u64)> = st.main.items(geo)?;
        all.extend(st.recent.items(geo)?);
        if let Some(f) = &st.frozen {
            all.extend(f.items());
        }
        all.extend(st.delta.items());
        let before = all.len();
        all.extend(items);
        let added = all.len() - before;
        all.par_sort_unstable();
        let mut extras = std::mem::take(&mut st.extras);
        // In place: the first id of each fingerprint stays, the others go to extras.
        all.dedup_by(|later, first| {
            let repeat = later.0 == first.0;
            if repeat {
                extras.entry(later.0).or_default().push(later.1);
            }
            repeat
        });
        let spill = self.inner.spill.get().map(PathBuf::as_path);
        let main = std::mem::take(&mut st.main);
        match Run::build(geo, &all, spill) {
            Ok(run) => st.main = Arc::new(run),
            Err(e) => {
                st.main = main;
                return Err(e);
            }
        }
        drop(all);
        st.recent = Arc::default();
        st.frozen = None;
        st.delta = Delta::with_lines_for(geo, delta_threshold(st.main.len(), self.spilled_delta()), START_LINES);
        st.extras = extras;
        st.len += added;
        Ok(())
    }

    /// Appends every stored `(fp, id)` within k of `fp` to `out` (each once;
    /// order unspecified). Allocates nothing when `out` has room.
    pub fn query(&self, fp: u64, out: &mut Vec<Match>) {
        self.query_stats(fp, out);
    }

    /// [`LiveIndex::query`] that also says how much work it did.
    pub fn query_stats(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.query_popcnt(fp, out) };
        }
        self.query_body(fp, out)
    }

    /// [`LiveIndex::query_body`] compiled with the popcnt instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn query_popcnt(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        self.query_body(fp, out)
    }

    #[inline(always)]
    fn query_body(&self, fp: u64, out: &mut Vec<Match>) -> ProbeStats {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let before = out.len();
        // The delta's bucket lines first: their misses overlap the main run's.
        if let Some(f) = &st.frozen {
            f.prefetch_probe(geo, fp);
        }
        st.delta.prefetch_probe(geo, fp);
        let mut examined = st
            .main
            .probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        examined += st
            .recent
            .probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        if let Some(f) = &st.frozen {
            examined += f.probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        }
        examined += st
            .delta
            .probe(geo, fp, |c, id, d| out.push(Match { fp: c, id, distance: d }));
        if !st.extras.is_empty() {
            let end = out.len();
            for i in before..end {
                let m = out[i];
                // A fingerprint can match more than once (in each run and
                // delta that holds it) before the merges reach the main run.
                if out[before..i].iter().any(|o| o.fp == m.fp) {
                    continue;
                }
                if let Some(more) = st.extras.get(&m.fp) {
                    out.extend(more.iter().map(|&id| Match { id, ..m }));
                }
            }
        }
        ProbeStats {
            examined,
            matches: out.len() - before,
        }
    }

    /// Queries a batch at once (prefetching across queries): appends
    /// `(query index, match)` pairs.
    pub fn query_many(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction.
            return unsafe { self.query_many_popcnt(fps, out) };
        }
        self.query_many_body(fps, out)
    }

    /// [`LiveIndex::query_many_body`] compiled with the popcnt instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn query_many_popcnt(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        self.query_many_body(fps, out)
    }

    #[inline(always)]
    fn query_many_body(&self, fps: &[u64], out: &mut Vec<(usize, Match)>) -> usize {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let before = out.len();
        let mut examined = st.main.probe_many(geo, fps, |qi, c, id, d| {
            out.push((qi, Match { fp: c, id, distance: d }))
        });
        examined += st.recent.probe_many(geo, fps, |qi, c, id, d| {
            out.push((qi, Match { fp: c, id, distance: d }))
        });
        if st.frozen.is_some() || st.delta.len() > 0 {
            // Pipelined: query qi + AHEAD's bucket lines are prefetched while
            // query qi is probed.
            const AHEAD: usize = 4;
            for &q in fps.iter().take(AHEAD) {
                if let Some(f) = &st.frozen {
                    f.prefetch_probe(geo, q);
                }
                st.delta.prefetch_probe(geo, q);
            }
            for (qi, &q) in fps.iter().enumerate() {
                if let Some(&ahead) = fps.get(qi + AHEAD) {
                    if let Some(f) = &st.frozen {
                        f.prefetch_probe(geo, ahead);
                    }
                    st.delta.prefetch_probe(geo, ahead);
                }
                if let Some(f) = &st.frozen {
                    examined += f.probe(geo, q, |c, id, d| out.push((qi, Match { fp: c, id, distance: d })));
                }
                examined += st
                    .delta
                    .probe(geo, q, |c, id, d| out.push((qi, Match { fp: c, id, distance: d })));
            }
        }
        if !st.extras.is_empty() {
            let end = out.len();
            for i in before..end {
                let (qi, m) = out[i];
                if out[before..i].iter().any(|&(oq, o)| oq == qi && o.fp == m.fp) {
                    continue;
                }
                if let Some(more) = st.extras.get(&m.fp) {
                    out.extend(more.iter().map(|&id| (qi, Match { id, ..m })));
                }
            }
        }
        examined
    }

    /// The closest stored fingerprint: smallest distance, ties broken by the
    /// smallest id (the earliest crawled page).
    pub fn nearest(&self, fp: u64) -> Option<Match> {
        let mut out = Vec::new();
        self.query(fp, &mut out);
        out.into_iter().min_by_key(|m| (m.distance, m.id))
    }

    /// Number of `(fp, id)` pairs inserted.
    pub fn len(&self) -> usize {
        self.inner.state.read().len
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Average number of distinct cache lines the sealed tables' probes read
    /// per query of `qs` (directory words plus bucket entries; the delta and
    /// the id lookups of matches are not counted). With a memory system that
    /// serves L random lines/s to one thread, L divided by this is the
    /// ceiling on single-thread queries/s (`simcrawl bench index` prints both).
    pub fn lines_per_query(&self, qs: &[u64]) -> f64 {
        let st = self.inner.state.read();
        let geo = &self.inner.geo;
        if st.main.ids.is_empty() || qs.is_empty() {
            return 0.0;
        }
        let total: usize = qs
            .iter()
            .map(|&q| {
                (st.main.tables.iter().zip(&geo.specs))
                    .map(|(t, spec)| t.lines_touched(spec.permute(q)))
                    .sum::<usize>()
            })
            .sum();
        total as f64 / qs.len() as f64
    }

    /// Number of distinct fingerprints stored.
    pub fn distinct(&self) -> usize {
        let st = self.inner.state.read();
        st.main.len() + st.recent.len() + st.frozen.as_ref().map_or(0, |f| f.len()) + st.delta.len()
    }

    /// Heap bytes held by the tables, ids, deltas and duplicate ids.
    pub fn memory_bytes(&self) -> usize {
        let st = self.inner.state.read();
        st.main.bytes()
            + st.recent.bytes()
            + st.frozen.as_ref().map_or(0, |f| f.bytes())
            + st.delta.bytes()
            + st.extras.capacity() * 48
            + st.extras.values().map(|v| v.capacity() * 8).sum::<usize>()
    }

    /// Every stored `(fp, id)`, sorted (persistence and tests).
    pub fn items(&self) -> std::io::Result<Vec<(u64, u64)>> {
        let geo = &self.inner.geo;
        let st = self.inner.state.read();
        let mut all = st.main.items(geo)?;
        all.extend(st.recent.items(geo)?);
        if let Some(f) = &st.frozen {
            all.extend(f.items());
        }
        all.extend(st.delta.items());
        for (&fp, ids) in &st.extras {
            all.extend(ids.iter().map(|&id| (fp, id)));
        }
        all.sort_unstable();
        Ok(all)
    }

    /// Writes a snapshot of the whole index to `path` (through a temporary
    /// file renamed into place, so a crash leaves the old snapshot or the new
    /// one). `watermark` is stored for the caller: the crawl stores the next
    /// page id, so that on load it adds only the fingerprints the store got
    /// after the snapshot. See [`crate::index::persist`] for the format.
    pub fn save(&self, path: &Path, watermark: u64) -> Result<(), SnapshotError> {
        self.save_tagged(path, watermark, 0)
    }

    /// [`LiveIndex::save`] with the tag of the crawl the index belongs to
    /// (read back by [`LiveIndex::load_tagged`]).
    pub fn save_tagged(&self, path: &Path, watermark: u64, crawl: u32) -> Result<(), SnapshotError> {
        let geo = &self.inner.geo;
        let tmp = path.with_extension("tmp");
        let st = self.inner.state.read();
        // The recent run is saved with the deltas: a load inserts them again.
        let mut delta = st.recent.items(geo).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        delta.extend(st.frozen.as_ref().map_or_else(Vec::new, |f| f.items()));
        delta.extend(st.delta.items());
        let extras: u64 = st.extras.values().map(|v| v.len() as u64).sum();
        let mut w = SnapWriter::create(&tmp)?;
        w.header(&Header {
            k: geo.k,
            design: design_hash(&self.inner.design, geo.k),
            tables: geo.specs.len() as u32,
            distinct: st.main.len() as u64,
            pairs: st.len as u64,
            watermark,
            delta: delta.len() as u64,
            extras,
            crawl,
        })?;
        for t in &st.main.tables {
            t.write(&mut w)?;
        }
        let mut ids = st.main.ids.cursor();
        let mut err = None;
        w.u64s((0..st.main.ids.len()).map_while(|_| ids.next().map_err(|e| err = Some(e)).ok()))?;
        if let Some(e) = err {
            return Err(w.fail(e));
        }
        w.u64s(delta.iter().flat_map(|&(fp, id)| [fp, id]))?;
        w.u64s(
            st.extras
                .iter()
                .flat_map(|(&fp, ids)| ids.iter().flat_map(move |&id| [fp, id])),
        )?;
        drop(st);
        w.finish()?;
        std::fs::rename(&tmp, path).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a snapshot written by [`LiveIndex::save`] for the same design
    /// and k; returns the index and the saved watermark. The tables are read
    /// as stored, not rebuilt.
    pub fn load(path: &Path, design: Design, k: u32) -> Result<(LiveIndex, u64), SnapshotError> {
        Self::load_tagged(path, design, k).map(|(idx, mark, _)| (idx, mark))
    }

    /// [`LiveIndex::load`] that also returns the crawl tag the snapshot was
    /// saved with (0 when none).
    pub fn load_tagged(path: &Path, design: Design, k: u32) -> Result<(LiveIndex, u64, u32), SnapshotError> {
        let mut r = SnapReader::open(path)?;
        let h = r.header(&design, k)?;
        let idx = LiveIndex::new(design, k);
        let geo = &idx.inner.geo;
        let n = h.distinct as usize;
        let mut tables = Vec::with_capacity(geo.specs.len());
        for spec in &geo.specs {
            tables.push(Table::read(&mut r, n, spec.prefix())?);
        }
        r.has(h.distinct * 8)?;
        let mut ids = Ids::with_capacity(n);
        r.u64s(h.distinct, |id| ids.push(id))?;
        let pairs = |r: &mut SnapReader, count: u64| -> Result<Vec<(u64, u64)>, SnapshotError> {
            r.has(count.saturating_mul(16))?;
            let mut flat = Vec::with_capacity(count as usize * 2);
            r.u64s(count * 2, |x| flat.push(x))?;
            Ok(flat.chunks_exact(2).map(|c| (c[0], c[1])).collect())
        };
        let delta = pairs(&mut r, h.delta)?;
        let extras = pairs(&mut r, h.extras)?;
        r.finish()?;
        idx.inner.state.write().main = Arc::new(Run { tables, ids });
        // The delta before the extras: an insert takes a fingerprint that
        // has extras for a repeat, and would leave the delta's first copy
        // out of the tables.
        for (fp, id) in delta {
            idx.insert(fp, id);
        }
        {
            let mut st = idx.inner.state.write();
            for (fp, id) in extras {
                st.extras.entry(fp).or_default().push(id);
            }
            st.len = h.pairs as usize;
        }
        Ok((idx, h.watermark, h.crawl))
    }
}
