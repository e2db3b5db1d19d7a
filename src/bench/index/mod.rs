//! `simcrawl bench index` and the workload shared with the peer comparison
//! (`peer-bench/`) and the criterion benchmarks: the live index against a
//! BTreeSet-per-table baseline and a brute-force popcount scan, on the same
//! fingerprints and queries, in one process. Figures are printed with ratios
//! against the baselines measured in the same run (the machine is shared and
//! noisy, so absolute numbers move).
//!
//! Files: this one runs `bench index` (the live index and its baselines);
//! `workload.rs` holds the shared workload, brute force and the BTreeSet
//! baseline; `batch.rs` `bench hamming`.

mod batch;
#[cfg(test)]
mod tests;
mod workload;

pub use batch::run_batch;
pub use workload::{brute_force, BTreeTables, Rng, Shape, Workload};

use std::io::Write;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::index::table::{huge_vec, LiveIndex, Match};
use crate::index::Design;

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
        let items: Vec<(u64, u64)> = wl.items().collect();

        // Bulk load.
        let idx = LiveIndex::new(design.clone(), k);
        let t = Instant::now();
        idx.bulk_load(items.iter().copied())
            .map_err(|e| Error::Internal(e.to_string()))?;
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
        w(
            out,
            format!(
                "{:<34} {:>12.1}   (worst {worst})",
                "examined/query",
                examined as f64 / wl.queries.len().max(1) as f64,
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
        if misses > 0 || extra > 0 || !live_ok || !loaded_ok {
            return Err(Error::InvalidInput("the index disagrees with brute force".into()));
        }
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
    let mut buf: Vec<u64> = huge_vec(words);
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
