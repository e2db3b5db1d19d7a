//! Criterion benchmarks of the permuted-table index: one query, a batch of
//! queries (query_many), live inserts, and the brute-force scan as the
//! baseline, on 1M random fingerprints (override with SIMCRAWL_BENCH_N).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use simcrawl::bench::index::{brute_force, Shape, Workload};
use simcrawl::index::{Design, LiveIndex};

fn index(c: &mut Criterion) {
    let n: usize = std::env::var("SIMCRAWL_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let wl = Workload::new(Shape::Random, n, 4096, 3, 7);
    let idx = LiveIndex::new(Design::paper_k3(10).expect("paper design"), 3);
    idx.bulk_load(wl.items()).expect("an index in memory does no I/O");
    let mut g = c.benchmark_group(format!("index_n{n}"));
    g.throughput(Throughput::Elements(wl.queries.len() as u64));
    g.bench_function("query", |b| {
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            for &q in &wl.queries {
                out.clear();
                idx.query(q, &mut out);
            }
        })
    });
    g.bench_function("query_many", |b| {
        let mut out = Vec::with_capacity(4096);
        b.iter(|| {
            for ch in wl.queries.chunks(256) {
                out.clear();
                idx.query_many(ch, &mut out);
            }
        })
    });
    g.throughput(Throughput::Elements(16));
    g.sample_size(10);
    g.bench_function("brute_force_16_queries", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            for &q in &wl.queries[..16] {
                out.clear();
                brute_force(&wl.fps, q, 3, &mut out);
            }
        })
    });
    g.throughput(Throughput::Elements(60_000));
    g.bench_function("insert_60000", |b| {
        b.iter_batched(
            || LiveIndex::new(Design::paper_k3(10).expect("paper design"), 3),
            |live| {
                for (i, &fp) in wl.fps.iter().take(60_000).enumerate() {
                    live.insert(fp, i as u64);
                }
                live
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, index);
criterion_main!(benches);
