//! `simcrawl bench index` and the workload shared with the peer comparison
//! (`peer-bench/`) and the criterion benchmarks: the live index against a
//! BTreeSet-per-table baseline and a brute-force popcount scan, on the same
//! fingerprints and queries, in one process. Figures are printed with ratios
//! against the baselines measured in the same run (the machine is shared and
//! noisy, so absolute numbers move).

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Instant;

use super::compressed::CompressedTable;
use rayon::prelude::*;

use super::design::Design;
use super::refs::RefIndex;
use super::table::{LiveIndex, Match};
use crate::error::{Error, Result};

/// A deterministic splitmix64 stream.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Which fingerprint distribution a workload draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Uniformly random 64-bit fingerprints.
    Random,
    /// Simhash-like skew (Manku §4.2): 1% empty pages (fingerprint 0), the
    /// rest in clusters of 1..200 pages within 0..11 bits of a centre.
    Clustered,
}

/// Stored fingerprints and queries; half the queries are planted neighbours
/// (a stored fingerprint with 0..=k bits flipped), half random.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The distribution.
    pub shape: Shape,
    /// Fingerprints to store; the id of `fps[i]` is `i`.
    pub fps: Vec<u64>,
    /// Queries.
    pub queries: Vec<u64>,
}

impl Workload {
    /// `n` fingerprints and `q` queries of `shape` for threshold `k`, from `seed`.
    pub fn new(shape: Shape, n: usize, q: usize, k: u32, seed: u64) -> Workload {
        let mut rng = Rng::new(seed);
        let mut fps = Vec::with_capacity(n);
        match shape {
            Shape::Random => fps.extend((0..n).map(|_| rng.next_u64())),
            Shape::Clustered => {
                fps.extend(std::iter::repeat_n(0, n / 100));
                while fps.len() < n {
                    let centre = rng.next_u64();
                    let size = 1 + rng.below(200) as usize;
                    for _ in 0..size.min(n - fps.len()) {
                        let mut x = centre;
                        for _ in 0..rng.below(12) {
                            x ^= 1 << rng.below(64);
                        }
                        fps.push(x);
                    }
                }
                // Interleave clusters as a crawl would meet them.
                for i in (1..fps.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    fps.swap(i, j);
                }
            }
        }
        let queries = (0..q)
            .map(|i| {
                if i % 2 == 0 || fps.is_empty() {
                    rng.next_u64()
                } else {
                    let mut x = fps[rng.below(fps.len() as u64) as usize];
                    for _ in 0..rng.below(k as u64 + 1) {
                        x ^= 1 << rng.below(64);
                    }
                    x
                }
            })
            .collect();
        Workload { shape, fps, queries }
    }

    /// `(fp, id)` pairs with id = position.
    pub fn items(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.fps.iter().enumerate().map(|(i, &fp)| (fp, i as u64))
    }
}

/// Brute force: every stored fingerprint within k, by a popcount scan.
pub fn brute_force(fps: &[u64], q: u64, k: u32, out: &mut Vec<Match>) {
    for (i, &fp) in fps.iter().enumerate() {
        let d = (fp ^ q).count_ones();
        if d <= k {
            out.push(Match {
                fp,
                id: i as u64,
                distance: d,
            });
        }
    }
}

/// The baseline: one `BTreeSet<(permuted fp, id)>` per table of the same design.
#[derive(Debug)]
pub struct BTreeTables {
    design: Design,
    k: u32,
    sets: Vec<BTreeSet<(u64, u64)>>,
}

impl BTreeTables {
    /// An empty baseline.
    pub fn new(design: Design, k: u32) -> BTreeTables {
        let sets = vec![BTreeSet::new(); design.tables()];
        BTreeTables { design, k, sets }
    }

    /// Builds each table from sorted input (the BTree's bulk path).
    pub fn bulk(design: Design, k: u32, items: &[(u64, u64)]) -> BTreeTables {
        let sets = design
            .specs()
            .iter()
            .map(|s| {
                let mut v: Vec<(u64, u64)> = items.iter().map(|&(fp, id)| (s.permute(fp), id)).collect();
                v.sort_unstable();
                v.into_iter().collect()
            })
            .collect();
        BTreeTables { design, k, sets }
    }

    /// Inserts one pair into every table.
    pub fn insert(&mut self, fp: u64, id: u64) {
        for (s, set) in self.design.specs().iter().zip(&mut self.sets) {
            set.insert((s.permute(fp), id));
        }
    }

    /// Every `(fp, id)` within k (each once).
    pub fn query(&self, q: u64, out: &mut Vec<Match>) {
        for (i, (s, set)) in self.design.specs().iter().zip(&self.sets).enumerate() {
            let pq = s.permute(q);
            let p = s.prefix();
            let (lo, hi) = if p == 0 {
                (0, u64::MAX)
            } else {
                let shift = 64 - p;
                let base = (pq >> shift) << shift;
                (base, base | ((1u64 << shift) - 1))
            };
            for &(e, id) in set.range((lo, 0)..=(hi, u64::MAX)) {
                let c = s.unpermute(e);
                let x = c ^ q;
                if x.count_ones() <= self.k {
                    let first = self.design.specs().iter().position(|t| x & t.prefix_mask() == 0);
                    if first == Some(i) {
                        out.push(Match {
                            fp: c,
                            id,
                            distance: x.count_ones(),
                        });
                    }
                }
            }
        }
    }
}

/// Options of `simcrawl bench index`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stored fingerprints.
    pub n: usize,
    /// Queries.
    pub queries: usize,
    /// Tables: 4, 10, 16 or 20 give the paper's k = 3 designs, 6 and 8 the
    /// two-halves ones, other counts the longest prefix that fits
    /// ([`Design::with_tables`]); `None` the `index.design = "auto"` choice
    /// for n ([`Design::fastest_for`]).
    pub tables: Option<usize>,
    /// Workloads to run.
    pub shapes: Vec<Shape>,
    /// Skip the BTreeSet baseline (for very large n).
    pub no_btree: bool,
    /// Queries checked against brute force (and timed for the brute-force rate).
    pub brute_queries: usize,
    /// Skip compressing the sealed tables (minutes at 100M).
    pub no_compression: bool,
    /// Build only the sealed compact structures (compressed tables and the
    /// reference index), not the live index nor the baselines: what fits
    /// 100M fingerprints in under 10 GB.
    pub only_compact: bool,
}

fn rate(count: usize, secs: f64) -> f64 {
    count as f64 / secs.max(1e-9)
}

fn human(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}

/// Runs `simcrawl bench index` and prints the report to `out`.
pub fn run(opts: &Options, out: &mut impl Write) -> Result<()> {
    let k = 3;
    let design = match opts.tables {
        Some(0) => {
            return Err(Error::InvalidInput(
                "--tables 0: a design needs at least one table".into(),
            ));
        }
        Some(t) => Design::with_tables(k, t),
        // What a crawl with `index.expected_size_log2` = log2 n would use.
        None => Design::fastest_for(k, (opts.n.max(2) as f64).log2().round() as u32),
    };
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    for &shape in &opts.shapes {
        let wl = Workload::new(shape, opts.n, opts.queries, k, 42);
        w(
            out,
            format!(
                "== {:?} n={} queries={} k={k} design: {} ==",
                shape,
                opts.n,
                opts.queries,
                design.name()
            ),
        )?;
        if opts.only_compact {
            run_compact(opts, &design, k, &wl, out)?;
            continue;
        }
        let items: Vec<(u64, u64)> = wl.items().collect();

        // Bulk load.
        let idx = LiveIndex::new(design.clone(), k);
        let t = Instant::now();
        idx.bulk_load(items.iter().copied());
        let bulk = rate(items.len(), t.elapsed().as_secs_f64());
        let bytes = idx.memory_bytes() as f64 / opts.n.max(1) as f64;

        // Start-up from a snapshot (what a resumed crawl reads) vs the bulk load.
        let snap = std::env::temp_dir().join(format!("simcrawl-bench-{}.snapshot", std::process::id()));
        let t = Instant::now();
        idx.save(&snap, 0).map_err(|e| Error::Internal(e.to_string()))?;
        let save_rate = rate(items.len(), t.elapsed().as_secs_f64());
        let t = Instant::now();
        let (loaded, _) = LiveIndex::load(&snap, design.clone(), k).map_err(|e| Error::Internal(e.to_string()))?;
        let load_secs = t.elapsed().as_secs_f64();
        let load_rate = rate(items.len(), load_secs);
        let loaded_ok = loaded.len() == idx.len();
        drop(loaded);
        let _ = std::fs::remove_file(&snap);

        // Queries, one at a time, 1 thread, with work statistics.
        let mut buf = Vec::with_capacity(1024);
        let t = Instant::now();
        let (mut examined, mut worst, mut matches) = (0usize, 0usize, 0usize);
        for &q in &wl.queries {
            buf.clear();
            let st = idx.query_stats(q, &mut buf);
            examined += st.examined;
            worst = worst.max(st.examined);
            matches += st.matches;
        }
        let q1 = rate(wl.queries.len(), t.elapsed().as_secs_f64());

        // Latency percentiles on a sample (includes ~20 ns of clock reads).
        let sample = &wl.queries[..wl.queries.len().min(200_000)];
        let mut lat: Vec<u64> = Vec::with_capacity(sample.len());
        for &q in sample {
            buf.clear();
            let t = Instant::now();
            idx.query(q, &mut buf);
            lat.push(t.elapsed().as_nanos() as u64);
        }
        lat.sort_unstable();
        let pct = |p: f64| {
            lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
                .copied()
        };
        let (p50, p99) = (pct(0.50).unwrap_or(0), pct(0.99).unwrap_or(0));

        // 2 threads, one query at a time, and batched (query_many) on 1 and 2 threads.
        let two = |batched: bool| {
            let t = Instant::now();
            std::thread::scope(|s| {
                for half in wl.queries.chunks(wl.queries.len().div_ceil(2).max(1)) {
                    let idx = &idx;
                    s.spawn(move || run_queries(idx, half, batched));
                }
            });
            rate(wl.queries.len(), t.elapsed().as_secs_f64())
        };
        let q2 = two(false);
        let t = Instant::now();
        run_queries(&idx, &wl.queries, true);
        let qb1 = rate(wl.queries.len(), t.elapsed().as_secs_f64());
        let qb2 = two(true);

        // Compression of the sealed tables.
        let comp = if opts.no_compression {
            Compressed::skipped()
        } else {
            Compressed::measure(&design, opts.n, &wl.queries, |i| idx.sealed_table(i))
        };
        let Compressed {
            table: comp_table,
            total: comp_total,
            secs: comp_secs,
            qps: qc,
            decoded: decoded_per,
        } = comp;

        // Zero misses against brute force, and the brute-force rate.
        let (brute_sets, qbrute) = brute_answers(&wl, k, opts.brute_queries);
        let bq = &wl.queries[..brute_sets.len()];
        let mut misses = 0usize;
        let mut extra = 0usize;
        for (&q, want) in bq.iter().zip(&brute_sets) {
            buf.clear();
            idx.query(q, &mut buf);
            buf.sort_unstable();
            misses += want.iter().filter(|m| buf.binary_search(m).is_err()).count();
            extra += buf.iter().filter(|m| want.binary_search(m).is_err()).count();
        }

        // Live inserts into an empty index, each queryable on return (at most
        // 10M, so that a second index of 100M does not have to fit).
        let live_n = items.len().min(10_000_000);
        let live = LiveIndex::new(design.clone(), k);
        let t = Instant::now();
        for &(fp, id) in &items[..live_n] {
            live.insert(fp, id);
        }
        let ins = rate(live_n, t.elapsed().as_secs_f64());
        live.wait_merged();
        let ins_merged = rate(live_n, t.elapsed().as_secs_f64());
        let mut live_ok = true;
        if live_n == items.len() {
            for (&q, want) in bq.iter().zip(&brute_sets).take(50) {
                buf.clear();
                live.query(q, &mut buf);
                buf.sort_unstable();
                live_ok &= &buf == want;
            }
        }
        drop(live);

        // Live inserts into the loaded index (n stored): 1M new fingerprints,
        // then each checked to be found at once.
        let more: Vec<u64> = {
            let mut rng = Rng::new(99);
            (0..1_000_000).map(|_| rng.next_u64()).collect()
        };
        let t = Instant::now();
        for (i, &fp) in more.iter().enumerate() {
            idx.insert(fp, (opts.n + i) as u64);
        }
        let ins_loaded = rate(more.len(), t.elapsed().as_secs_f64());
        for (i, &fp) in more.iter().enumerate().step_by(1000) {
            buf.clear();
            idx.query(fp, &mut buf);
            live_ok &= buf.iter().any(|m| m.fp == fp && m.id == (opts.n + i) as u64);
        }
        // Queries right after those inserts: the live delta (and a merge, if
        // one is running) on top of the main run.
        let t = Instant::now();
        run_queries(&idx, &wl.queries, false);
        let q_live = rate(wl.queries.len(), t.elapsed().as_secs_f64());

        // Baseline: BTreeSet per table.
        let btree = if opts.no_btree {
            None
        } else {
            let t = Instant::now();
            let bt = BTreeTables::bulk(design.clone(), k, &items);
            let bbulk = rate(items.len(), t.elapsed().as_secs_f64());
            let sample = &wl.queries[..wl.queries.len().min(200_000)];
            let t = Instant::now();
            for &q in sample {
                buf.clear();
                bt.query(q, &mut buf);
            }
            let bq1 = rate(sample.len(), t.elapsed().as_secs_f64());
            drop(bt);
            let m = items.len().min(1_000_000);
            let mut bt = BTreeTables::new(design.clone(), k);
            let t = Instant::now();
            for &(fp, id) in &items[..m] {
                bt.insert(fp, id);
            }
            let bins = rate(m, t.elapsed().as_secs_f64());
            Some((bbulk, bq1, bins))
        };

        let ratio = |a: f64, b: Option<f64>| b.map_or("-".to_string(), |b| format!("{:.1}x", a / b));
        let bt = |f: fn(&(f64, f64, f64)) -> f64| btree.as_ref().map(f);
        w(
            out,
            format!(
                "{:<34} {:>12} {:>12} {:>10} {:>10}",
                "", "simcrawl", "btree", "vs btree", "vs brute"
            ),
        )?;
        let row = |out: &mut dyn Write, name: &str, v: f64, b: Option<f64>, brute: bool| {
            w(
                out,
                format!(
                    "{:<34} {:>12} {:>12} {:>10} {:>10}",
                    name,
                    human(v),
                    b.map_or("-".into(), human),
                    ratio(v, b),
                    if brute { ratio(v, Some(qbrute)) } else { "-".into() }
                ),
            )
        };
        row(out, "bulk load fp/s", bulk, bt(|b| b.0), false)?;
        row(out, "snapshot save fp/s", save_rate, None, false)?;
        w(
            out,
            format!(
                "{:<34} {:>12} {:>12} {:>9.1}x {:>10}",
                "snapshot load fp/s (vs bulk load)",
                human(load_rate),
                human(bulk),
                load_rate / bulk,
                format!("{load_secs:.2} s")
            ),
        )?;
        row(out, "live inserts/s from empty", ins, bt(|b| b.2), false)?;
        row(out, "live inserts/s incl. merges", ins_merged, None, false)?;
        row(out, "live inserts/s into the loaded n", ins_loaded, None, false)?;
        row(out, "queries/s 1 thread, after them", q_live, None, false)?;
        row(out, "queries/s 1 thread", q1, bt(|b| b.1), true)?;
        row(out, "queries/s 2 threads", q2, None, true)?;
        row(out, "queries/s 1 thread, batched", qb1, bt(|b| b.1), true)?;
        row(out, "queries/s 2 threads, batched", qb2, None, true)?;
        if !opts.no_compression {
            row(out, "queries/s 1 thread, compressed", qc, None, true)?;
        }
        w(out, format!("{:<34} {:>12}", "brute-force queries/s", human(qbrute)))?;
        w(out, format!("{:<34} {:>9} ns {:>9} ns", "latency p50 / p99", p50, p99))?;
        // The memory roofline: how many random cache lines one thread can
        // read per second here, and how many a query reads.
        let lines = idx.lines_per_query(&wl.queries[..wl.queries.len().min(100_000)]);
        let lps = random_lines_per_sec(idx.memory_bytes());
        w(out, format!("{:<34} {:>12.1}", "cache lines/query (tables)", lines))?;
        w(
            out,
            format!(
                "{:<34} {:>12}   (ceiling {} q/s at {lines:.1} lines/query; 1 thread got {:.0}%)",
                "random lines/s, 1 thread",
                human(lps),
                human(lps / lines.max(1e-9)),
                100.0 * q1.max(qb1) / (lps / lines.max(1e-9))
            ),
        )?;
        w(out, format!("{:<34} {:>12.1}", "bytes/fp (all tables + ids)", bytes))?;
        if !opts.no_compression {
            w(
                out,
                format!("{:<34} {:>12.2}", "compressed bytes/fp per table", comp_table),
            )?;
            w(
                out,
                format!(
                    "{:<34} {:>12.1}   (encode {comp_secs:.2} s)",
                    "compressed bytes/fp (+ 8 B id)", comp_total
                ),
            )?;
        }
        w(
            out,
            format!(
                "{:<34} {:>12.1}   (worst {worst}{})",
                "examined/query",
                examined as f64 / wl.queries.len().max(1) as f64,
                if decoded_per.is_nan() {
                    String::new()
                } else {
                    format!(", compressed decodes {decoded_per:.1}")
                }
            ),
        )?;
        w(
            out,
            format!(
                "{:<34} {:>12.3}",
                "matches/query",
                matches as f64 / wl.queries.len().max(1) as f64
            ),
        )?;
        w(
            out,
            format!(
                "{:<34} {:>12}   ({} queries checked; {} extra; live index {})",
                "misses vs brute force",
                misses,
                bq.len(),
                extra,
                if live_ok { "agrees" } else { "DISAGREES" }
            ),
        )?;
        drop(idx);
        let refs_ok = ref_rows(&design, k, &wl, &items, &brute_sets, qbrute, out)?;
        if misses > 0 || extra > 0 || !live_ok || !loaded_ok || !refs_ok {
            return Err(Error::InvalidInput("the index disagrees with brute force".into()));
        }
    }
    Ok(())
}

/// A compressed copy of every table (Manku §3.2): sizes, encode time and the
/// rate of a probe that decodes every table's prefix range.
struct Compressed {
    /// Bytes per distinct fingerprint per table.
    table: f64,
    /// Bytes per fingerprint, all tables plus an 8-byte id.
    total: f64,
    /// Encode seconds.
    secs: f64,
    /// Queries/s, 1 thread, on up to 100k queries.
    qps: f64,
    /// Entries decoded per query.
    decoded: f64,
}

impl Compressed {
    fn skipped() -> Compressed {
        Compressed {
            table: f64::NAN,
            total: f64::NAN,
            secs: 0.0,
            qps: f64::NAN,
            decoded: f64::NAN,
        }
    }

    /// Encodes the sorted permuted keys `table(i)` of every table of `design`.
    fn measure(design: &Design, n: usize, queries: &[u64], table: impl Fn(usize) -> Vec<u64>) -> Compressed {
        let t = Instant::now();
        // One table at a time, so that 100M fingerprints fit.
        let mut distinct = 1.0f64;
        let comp: Vec<CompressedTable> = (0..design.tables())
            .map(|i| {
                let keys = table(i);
                distinct = keys.len().max(1) as f64;
                CompressedTable::encode(&keys)
            })
            .collect();
        let secs = t.elapsed().as_secs_f64();
        let sum = comp.iter().map(|c| c.bytes() as f64).sum::<f64>();
        // A compressed probe: decode the prefix range of every table.
        let t = Instant::now();
        let mut decoded = 0usize;
        let cq = &queries[..queries.len().min(100_000)];
        for &q in cq {
            for (s, c) in design.specs().iter().zip(&comp) {
                decoded += c.for_prefix(s.permute(q), s.prefix(), |_| {});
            }
        }
        Compressed {
            table: sum / comp.len().max(1) as f64 / distinct,
            total: sum / n.max(1) as f64 + 8.0,
            secs,
            qps: rate(cq.len(), t.elapsed().as_secs_f64()),
            decoded: decoded as f64 / cq.len().max(1) as f64,
        }
    }
}

/// Brute-force answers (sorted) for the first `count` queries, and the scan rate.
fn brute_answers(wl: &Workload, k: u32, count: usize) -> (Vec<Vec<Match>>, f64) {
    let bq = &wl.queries[..wl.queries.len().min(count)];
    let t = Instant::now();
    let mut sets = Vec::with_capacity(bq.len());
    for &q in bq {
        let mut truth = Vec::new();
        brute_force(&wl.fps, q, k, &mut truth);
        truth.sort_unstable();
        sets.push(truth);
    }
    (sets, rate(bq.len(), t.elapsed().as_secs_f64()))
}

/// The reference index ([`RefIndex`]) on the same fingerprints and queries:
/// build rate, bytes (total and by part), queries/s on one thread, work per
/// query, and misses against the brute-force answers `brute` (for the first
/// queries). Returns whether it agreed with brute force.
fn ref_rows(
    design: &Design,
    k: u32,
    wl: &Workload,
    items: &[(u64, u64)],
    brute: &[Vec<Match>],
    qbrute: f64,
    out: &mut impl Write,
) -> Result<bool> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    let t = Instant::now();
    let refs = RefIndex::build(design, k, items);
    let build = rate(items.len(), t.elapsed().as_secs_f64());
    let parts = refs.byte_parts();
    let n = items.len().max(1) as f64;
    let mut buf = Vec::with_capacity(1024);
    let (mut examined, mut cands, mut worst) = (0usize, 0usize, 0usize);
    let t = Instant::now();
    for &q in &wl.queries {
        buf.clear();
        let st = refs.query(q, k, &mut buf);
        examined += st.examined;
        cands += st.candidates;
        worst = worst.max(st.candidates);
    }
    let q1 = rate(wl.queries.len(), t.elapsed().as_secs_f64());
    let (mut misses, mut extra) = (0usize, 0usize);
    for (&q, want) in wl.queries.iter().zip(brute) {
        buf.clear();
        refs.query(q, k, &mut buf);
        buf.sort_unstable();
        misses += want.iter().filter(|m| buf.binary_search(m).is_err()).count();
        extra += buf.iter().filter(|m| want.binary_search(m).is_err()).count();
    }
    let nq = wl.queries.len().max(1) as f64;
    let t_count = parts.dirs.len().max(1) as f64;
    let geo = refs.geometry();
    let geo_s: Vec<String> = {
        let mut g: Vec<(u32, u32, u32)> = geo.clone();
        g.sort_unstable();
        g.dedup();
        g.iter().map(|(d, e, wd)| format!("{d}/{e}/{wd}")).collect()
    };
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} tables, refs {} bits)",
            "refs: build fp/s",
            human(build),
            geo.len(),
            geo.first().map_or(0, |g| g.2 - g.1)
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({:.1}x brute force)",
            "refs: queries/s 1 thread",
            human(q1),
            q1 / qbrute.max(1e-9)
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12.1}   (fps {:.2}, ids {:.2}, per table {:.2} entries + {:.2} directory; d/e/w {})",
            "refs: bytes/fp (all, ids incl.)",
            refs.bytes() as f64 / n,
            parts.fps as f64 / n,
            parts.ids as f64 / n,
            parts.entries.iter().sum::<usize>() as f64 / n / t_count,
            parts.dirs.iter().sum::<usize>() as f64 / n / t_count,
            geo_s.join(" ")
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12.2}   (worst {worst}; entries read {:.1}/query)",
            "refs: candidates (fps read)/query",
            cands as f64 / nq,
            examined as f64 / nq
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} queries checked; {} extra)",
            "refs: misses vs brute force",
            misses,
            brute.len(),
            extra
        ),
    )?;
    Ok(misses == 0 && extra == 0)
}

/// `bench index --only-compact`: the brute-force oracle, the reference index
/// and (unless `--no-compression`) the compressed tables, built from the
/// workload alone (no live index), so 100M fingerprints fit in memory.
fn run_compact(opts: &Options, design: &Design, k: u32, wl: &Workload, out: &mut impl Write) -> Result<()> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    let (brute, qbrute) = brute_answers(wl, k, opts.brute_queries);
    w(out, format!("{:<34} {:>12}", "brute-force queries/s", human(qbrute)))?;
    let items: Vec<(u64, u64)> = wl.items().collect();
    let ok = ref_rows(design, k, wl, &items, &brute, qbrute, out)?;
    drop(items);
    if !opts.no_compression {
        let mut distinct = wl.fps.clone();
        distinct.par_sort_unstable();
        distinct.dedup();
        let c = Compressed::measure(design, opts.n, &wl.queries, |i| {
            let s = &design.specs()[i];
            let mut keys: Vec<u64> = distinct.par_iter().map(|&fp| s.permute(fp)).collect();
            keys.par_sort_unstable();
            keys
        });
        w(
            out,
            format!(
                "{:<34} {:>12}   ({:.1}x brute force; decodes {:.1}/query)",
                "queries/s 1 thread, compressed",
                human(c.qps),
                c.qps / qbrute.max(1e-9),
                c.decoded
            ),
        )?;
        w(
            out,
            format!("{:<34} {:>12.2}", "compressed bytes/fp per table", c.table),
        )?;
        w(
            out,
            format!(
                "{:<34} {:>12.1}   (encode {:.2} s)",
                "compressed bytes/fp (+ 8 B id)", c.total, c.secs
            ),
        )?;
    }
    if !ok {
        return Err(Error::InvalidInput(
            "the reference index disagrees with brute force".into(),
        ));
    }
    Ok(())
}

/// `simcrawl bench hamming`: batch mode over `n` random stored fingerprints
/// (1% of them planted within k of a query) and `q` random queries, timed, and
/// checked against a brute-force scan for a sample of queries.
pub fn run_batch(n: usize, q: usize, tables: Option<usize>, out: &mut impl Write) -> Result<()> {
    let k = 3;
    let mut rng = Rng::new(7);
    let queries: Vec<u64> = (0..q).map(|_| rng.next_u64()).collect();
    let fps: Vec<u64> = (0..n)
        .map(|i| {
            if i % 100 == 0 && q > 0 {
                let mut x = queries[rng.below(q as u64) as usize];
                for _ in 0..rng.below(k as u64 + 1) {
                    x ^= 1 << rng.below(64);
                }
                x
            } else {
                rng.next_u64()
            }
        })
        .collect();
    let design = super::batch::design_for(q, k, tables);
    let t = Instant::now();
    let pairs = super::batch::run(&fps, &queries, k, tables);
    let secs = t.elapsed().as_secs_f64();
    // The previous path (Run::sweep) on the first 10M fingerprints, in this
    // process, as the baseline; it must agree on them too.
    let m = n.min(10_000_000);
    let t = Instant::now();
    let prev = super::batch::run_sweep(&fps[..m], &queries, k, tables);
    let prev_secs = t.elapsed().as_secs_f64();
    let mut head: Vec<(usize, usize, u32)> = pairs.iter().copied().filter(|p| p.1 < m).collect();
    head.sort_unstable();
    let prev_agrees = head == prev;
    // Brute force over every fingerprint for a few queries: the oracle, and
    // the time a scan without tables would take.
    let sample: Vec<usize> = (0..q.min(8)).map(|i| i * (q / 8).max(1)).filter(|&i| i < q).collect();
    let t = Instant::now();
    let mut misses = 0usize;
    for &qi in &sample {
        let want: Vec<usize> = fps
            .iter()
            .enumerate()
            .filter(|(_, &f)| (f ^ queries[qi]).count_ones() <= k)
            .map(|(fi, _)| fi)
            .collect();
        let lo = pairs.partition_point(|p| p.0 < qi);
        let hi = pairs.partition_point(|p| p.0 <= qi);
        let got: Vec<usize> = pairs[lo..hi].iter().map(|p| p.1).collect();
        misses += usize::from(got != want);
    }
    let brute_secs = t.elapsed().as_secs_f64() / sample.len().max(1) as f64 * q as f64;
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    w(
        out,
        format!(
            "== batch: {n} fingerprints x {q} queries, k={k}, design: {} ==",
            design.name()
        ),
    )?;
    w(
        out,
        format!("{:<34} {:>10.2} s", "simcrawl (tables over Q, scan F)", secs),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>10.0} s   ({:.0}x; estimated from {} queries)",
            "brute force",
            brute_secs,
            brute_secs / secs,
            sample.len()
        ),
    )?;
    w(
        out,
        format!("{:<34} {:>12}", "fingerprints probed/s", human(rate(n, secs))),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({:.2}x; first {m} fingerprints; {})",
            "previous sweep (Run::sweep), fp/s",
            human(rate(m, prev_secs)),
            rate(n, secs) / rate(m, prev_secs).max(1e-9),
            if prev_agrees { "same pairs" } else { "DIFFERENT pairs" }
        ),
    )?;
    w(out, format!("{:<34} {:>12}", "pairs within k", pairs.len()))?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} queries checked)",
            "queries disagreeing with brute force",
            misses,
            sample.len()
        ),
    )?;
    if misses > 0 || !prev_agrees {
        return Err(Error::InvalidInput(
            "batch mode disagrees with brute force or the previous path".into(),
        ));
    }
    Ok(())
}

/// Random cache lines per second one thread reads from a buffer as large as
/// the index (at most 1 GiB, on huge pages like the tables): independent
/// 8-byte loads, 32 in flight per step, as a probe batch would issue them.
/// The ceiling of any structure that must read L random lines per query is
/// this rate divided by L.
pub fn random_lines_per_sec(bytes: usize) -> f64 {
    let words = (bytes.min(1 << 30) / 8).max(1 << 20);
    let mut buf: Vec<u64> = super::table::huge_vec(words);
    buf.resize(words, 1);
    let lines = (words / 8) as u64;
    let mut rng = Rng::new(0x11e5);
    let (steps, width) = (1usize << 19, 32usize);
    let mut sum = 0u64;
    let t = Instant::now();
    for _ in 0..steps {
        let mut at = [0usize; 32];
        for a in at.iter_mut() {
            *a = (((rng.next_u64() as u128 * lines as u128) >> 64) * 8) as usize;
        }
        for &a in &at {
            sum = sum.wrapping_add(buf[a]);
        }
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(sum);
    rate(steps * width, secs)
}

fn run_queries(idx: &LiveIndex, qs: &[u64], batched: bool) -> usize {
    let mut n = 0;
    if batched {
        let mut out = Vec::with_capacity(4096);
        for chunk in qs.chunks(256) {
            out.clear();
            idx.query_many(chunk, &mut out);
            n += out.len();
        }
    } else {
        let mut out = Vec::with_capacity(1024);
        for &q in qs {
            out.clear();
            idx.query(q, &mut out);
            n += out.len();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn btree_baseline_and_index_agree_with_brute_force() {
        for shape in [Shape::Random, Shape::Clustered] {
            let wl = Workload::new(shape, 3000, 200, 3, 1);
            let items: Vec<(u64, u64)> = wl.items().collect();
            let bt = BTreeTables::bulk(Design::paper_k3(10).unwrap(), 3, &items);
            let idx = LiveIndex::new(Design::paper_k3(4).unwrap(), 3);
            idx.bulk_load(items.iter().copied());
            let mut planted = 0;
            for &q in &wl.queries {
                let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
                brute_force(&wl.fps, q, 3, &mut a);
                bt.query(q, &mut b);
                idx.query(q, &mut c);
                a.sort_unstable();
                b.sort_unstable();
                c.sort_unstable();
                assert_eq!(a, b);
                assert_eq!(a, c);
                planted += usize::from(!a.is_empty());
            }
            assert!(planted >= 100, "planted neighbours must be found: {planted}");
        }
    }

    #[test]
    fn small_report_runs() {
        let opts = Options {
            n: 2000,
            queries: 500,
            tables: Some(10),
            shapes: vec![Shape::Random, Shape::Clustered],
            no_btree: false,
            brute_queries: 100,
            no_compression: false,
            only_compact: false,
        };
        let mut out = Vec::new();
        run(&opts, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("misses vs brute force                         0"), "{s}");
        assert!(s.contains("refs: misses vs brute force                   0"), "{s}");
        let compact = Options {
            only_compact: true,
            ..opts
        };
        let mut out = Vec::new();
        run(&compact, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("refs: misses vs brute force                   0"), "{s}");
        assert!(s.contains("compressed bytes/fp (+ 8 B id)"), "{s}");
        assert!(!s.contains("live inserts"), "{s}");
    }
}
