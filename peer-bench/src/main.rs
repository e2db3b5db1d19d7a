//! Peer comparison for simcrawl's permuted-table index: generates one
//! workload with `simcrawl::bench::index::Workload`, then runs simcrawl's
//! `LiveIndex`, mih-rs (multi-index hashing), gaoya's `SimHashIndex` and a
//! brute-force popcount scan on the same fingerprints and queries in this one
//! process, checks every answer against brute force on a sample, and prints a
//! table of rates, bytes per fingerprint (from a counting allocator) and
//! ratios against simcrawl.
//!
//! Usage: `peer-bench [N] [QUERIES] [random|clustered] [nogaoya]` (defaults 1000000 1000000 random;
//! `nogaoya` skips gaoya, which needs about 1 KB per fingerprint).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use simcrawl::bench::index::{brute_force, Shape, Workload};
use simcrawl::index::{Design, LiveIndex};

/// Counts live heap bytes so each structure's footprint is measured, not guessed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only adds a counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same layout as requested.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: p was allocated by System with layout l.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

struct Row {
    name: &'static str,
    build_fps: f64,
    q1: f64,
    q2: f64,
    bytes_fp: f64,
    misses: usize,
}

fn two_threads(queries: &[u64], f: impl Fn(&[u64]) + Sync) -> f64 {
    let t = Instant::now();
    std::thread::scope(|s| {
        for half in queries.chunks(queries.len().div_ceil(2).max(1)) {
            let f = &f;
            s.spawn(move || f(half));
        }
    });
    queries.len() as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let q: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let shape = if args.get(3).map(String::as_str) == Some("clustered") {
        Shape::Clustered
    } else {
        Shape::Random
    };
    let k = 3u32;
    let wl = Workload::new(shape, n, q, k, 42);
    println!("peer comparison: {shape:?} n={n} queries={q} k={k} (half the queries planted neighbours)");

    // Ground truth on a sample, by brute force (also its rate).
    let sample = &wl.queries[..q.min(200)];
    let t = Instant::now();
    let truth: Vec<Vec<u64>> = sample
        .iter()
        .map(|&x| {
            let mut v = Vec::new();
            brute_force(&wl.fps, x, k, &mut v);
            let mut ids: Vec<u64> = v.into_iter().map(|m| m.id).collect();
            ids.sort_unstable();
            ids
        })
        .collect();
    let brute_q = sample.len() as f64 / t.elapsed().as_secs_f64();
    let check = |ids: &mut dyn FnMut(u64) -> Vec<u64>| -> usize {
        sample
            .iter()
            .zip(&truth)
            .map(|(&x, want)| {
                let mut got = ids(x);
                got.sort_unstable();
                want.iter().filter(|w| got.binary_search(w).is_err()).count() + usize::from(got.len() > want.len())
            })
            .sum()
    };
    let mut rows = Vec::new();

    // simcrawl: the paper's 10-table design, its 4-table design (p = 16,
    // what `index.design = "auto"` picks up to 2^20 fingerprints) and the
    // two-halves 6-table design (p = 21, picked from 2^21 to 2^27)
    let designs = [
        (10, "simcrawl (10 tables)"),
        (4, "simcrawl (4 tables)"),
        (6, "simcrawl (6 tables)"),
    ];
    for (tables, name) in designs {
        let before = live();
        let t = Instant::now();
        let idx = LiveIndex::new(Design::with_tables(k, tables), k);
        idx.bulk_load(wl.items());
        let build = n as f64 / t.elapsed().as_secs_f64();
        let bytes = (live() - before) as f64 / n as f64;
        let run = |qs: &[u64]| {
            let mut out = Vec::with_capacity(4096);
            for c in qs.chunks(256) {
                out.clear();
                idx.query_many(c, &mut out);
            }
        };
        let t = Instant::now();
        run(&wl.queries);
        let q1 = q as f64 / t.elapsed().as_secs_f64();
        let q2 = two_threads(&wl.queries, run);
        let misses = check(&mut |x| {
            let mut out = Vec::new();
            idx.query(x, &mut out);
            out.into_iter().map(|m| m.id).collect()
        });
        rows.push(Row {
            name,
            build_fps: build,
            q1,
            q2,
            bytes_fp: bytes,
            misses,
        });
    }
    // mih-rs
    {
        let before = live();
        let t = Instant::now();
        let idx = mih_rs::Index::new(wl.fps.clone()).expect("mih index");
        let build = n as f64 / t.elapsed().as_secs_f64();
        let bytes = (live() - before) as f64 / n as f64;
        let run = |qs: &[u64]| {
            let mut s = idx.range_searcher();
            for &x in qs {
                std::hint::black_box(s.run(x, k as usize).len());
            }
        };
        let t = Instant::now();
        run(&wl.queries);
        let q1 = q as f64 / t.elapsed().as_secs_f64();
        let q2 = two_threads(&wl.queries, run);
        let mut s = idx.range_searcher();
        let misses = check(&mut |x| s.run(x, k as usize).iter().map(|&i| i as u64).collect());
        rows.push(Row {
            name: "mih-rs",
            build_fps: build,
            q1,
            q2,
            bytes_fp: bytes,
            misses,
        });
    }
    // gaoya (5 blocks, k = 3: C(5,3) = 10 tables like simcrawl's)
    if args.get(4).map(String::as_str) != Some("nogaoya") {
        let before = live();
        let t = Instant::now();
        let mut idx = gaoya::simhash::SimHashIndex::<u64, u64>::new(5, k as usize);
        idx.par_bulk_insert_pairs(wl.items().map(|(fp, id)| (id, fp)).collect());
        let build = n as f64 / t.elapsed().as_secs_f64();
        let bytes = (live().saturating_sub(before)) as f64 / n as f64;
        let run = |qs: &[u64]| {
            for x in qs {
                std::hint::black_box(idx.query(x).len());
            }
        };
        let t = Instant::now();
        run(&wl.queries);
        let q1 = q as f64 / t.elapsed().as_secs_f64();
        let q2 = two_threads(&wl.queries, run);
        let misses = check(&mut |x| idx.query_owned(&x).into_iter().collect());
        rows.push(Row {
            name: "gaoya SimHashIndex",
            build_fps: build,
            q1,
            q2,
            bytes_fp: bytes,
            misses,
        });
    }

    println!(
        "{:<22} {:>12} {:>12} {:>12} {:>9} {:>14} {:>7}",
        "", "build fp/s", "q/s 1 thr", "q/s 2 thr", "B/fp", "best simcrawl", "misses"
    );
    // The fastest simcrawl design's one-thread rate over each row's.
    let ours = rows[..designs.len()].iter().map(|r| r.q1).fold(0.0, f64::max);
    for r in &rows {
        println!(
            "{:<22} {:>12.0} {:>12.0} {:>12.0} {:>9.1} {:>13.1}x {:>7}",
            r.name,
            r.build_fps,
            r.q1,
            r.q2,
            r.bytes_fp,
            ours / r.q1,
            r.misses
        );
    }
    println!(
        "{:<22} {:>12} {:>12.0} {:>12} {:>9.1} {:>13.0}x {:>7}",
        "brute force",
        "-",
        brute_q,
        "-",
        8.0,
        ours / brute_q,
        0
    );
}
