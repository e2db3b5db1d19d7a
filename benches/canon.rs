//! URL canonicalization throughput: realistic link resolution + crawler
//! canonicalization, against `Url::join` alone (the baseline: what resolving
//! a link costs without canonicalization), and robots.txt matching.
//!
//! Run: `cargo bench --bench canon -- --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use simcrawl::canon::Canonicalizer;
use simcrawl::config::CanonProfile;
use simcrawl::politeness::robots::{Robots, DEFAULT_MAX_BYTES};
use std::hint::black_box;
use url::Url;

/// Links as found on a news page of the test web.
const HREFS: &[&str] = &[
    "/",
    "/world/",
    "/world/2024/05/story-1234.html",
    "story-1235.html",
    "../sport/index.html",
    "/search?q=election&page=2",
    "/article?id=77&utm_source=homepage&utm_medium=web&utm_campaign=spring",
    "http://WWW.NEWS.TEST:8080/tech/index.html?sid=9f8e7d6c",
    "https://cdn.news.test/img/logo.png",
    "#comments",
    "/tags/%7Eeditor%27s-pick/",
    "//mirror-a.test/world/2024/05/story-1234.html",
    "/calendar/2024/05/?month=5&year=2024&day=",
    "/a/./b/../c/page.html;jsessionid=0123456789ABCDEF",
    "mailto:desk@news.test",
    "/opinion/letters?sort=new&fbclid=IwAR0abc",
];

fn bench(c: &mut Criterion) {
    let base = Url::parse("http://www.news.test:8080/world/2024/05/index.html").unwrap();
    let canon = Canonicalizer::with_profile(CanonProfile::Crawler);
    let mut g = c.benchmark_group("links");
    g.throughput(Throughput::Elements(HREFS.len() as u64));
    g.bench_function("baseline_url_join", |b| {
        b.iter(|| {
            for h in HREFS {
                let _ = black_box(base.join(black_box(h.trim())));
            }
        })
    });
    g.bench_function("resolve_and_canonicalize", |b| {
        b.iter(|| {
            for h in HREFS {
                let _ = black_box(canon.resolve(&base, black_box(h)));
            }
        })
    });
    g.finish();

    let mut body = String::from("User-agent: *\n");
    for i in 0..50 {
        body.push_str(&format!("Disallow: /private{i}/\nAllow: /private{i}/public*.html$\n"));
    }
    body.push_str("Disallow: /*?sid=\n");
    let robots = Robots::parse(body.as_bytes(), DEFAULT_MAX_BYTES);
    let rules = robots.for_agent("simcrawl");
    let urls: Vec<Url> = HREFS.iter().filter_map(|h| canon.resolve(&base, h).ok()).collect();
    let mut g = c.benchmark_group("robots");
    g.throughput(Throughput::Elements(urls.len() as u64));
    g.bench_function("agent_rules_is_allowed_101_rules", |b| {
        b.iter(|| {
            for u in &urls {
                black_box(rules.is_allowed(black_box(u)));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
