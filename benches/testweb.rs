//! The built-in test web's cost: generating pages on request and building
//! the ground truth of a large web (pages are not stored, so both must stay
//! cheap for `bench crawl` and 100k-page tests).
//!
//! Run: `cargo bench --bench testweb -- --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use simcrawl::testweb::{PageKind, TestWeb, TestWebOptions};
use std::hint::black_box;

fn web(pages: usize) -> TestWeb {
    TestWeb::new(TestWebOptions {
        seed: 1,
        pages,
        slow_ms: 10,
    })
}

fn bench(c: &mut Criterion) {
    let w = web(20_000);
    let truth = w.truth(80);
    let pages: Vec<_> = truth
        .pages
        .iter()
        .filter(|p| p.kind != PageKind::Large)
        .take(2_000)
        .collect();
    let mut g = c.benchmark_group("testweb");
    g.throughput(Throughput::Elements(pages.len() as u64));
    g.bench_function("respond_2000_pages", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for p in &pages {
                bytes += w.respond(&p.host, &p.path, 80).body.len();
            }
            black_box(bytes)
        })
    });
    g.finish();
    let mut g = c.benchmark_group("truth");
    g.sample_size(10);
    g.bench_function("truth_100k_pages", |b| {
        b.iter(|| black_box(web(100_000).truth(80).pages.len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
