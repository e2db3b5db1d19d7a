//! The per-page fingerprint path, stage by stage: parse (html5ever via
//! scraper) → text (extraction walk) → features (tokenize, stop words, stem,
//! bigrams, weights) → simhash, on synthetic realistic pages of 10 KB,
//! 100 KB and 1 MB. Throughput is reported in bytes of HTML input, so the
//! MB/s figures of the stages add up as rates of the same input.
//!
//! `7_focus` is the extra work of a focused crawl per page: the page's
//! relevance (cosine to the topic profile over the features already computed)
//! and every link's relevance (features of its anchor text and context
//! window, none of them in the per-thread link text cache yet, as on the
//! first page of a site);
//! compare it with `6_whole`.
//!
//! Run: `cargo bench --bench pipeline -- --measurement-time 3 --warm-up-time 1`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scraper::Html;
use simcrawl::extract::{extract_html, extract_parsed};
use simcrawl::features::FeatureExtractor;
use simcrawl::simhash::simhash;

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Zipf-like pick from `n` items (skewed to small indices).
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

const WORDS: &str = "the of and to in a is that for it as was with be by on not he this are or his from at which but \
    have an they you were her all she there would their we him been has when who will more no if out so said what up its \
    about into than them can only other new some could time these two may then do first any my now such like our over \
    man me even most made after also did many before must through back years where much your way well down should \
    because each just those people how too little state good very make world still own see men work long get here \
    between both life being under never day same another know while last might us great old year off come since against \
    go came right used take three crawler frontier politeness robots fingerprint simhash hamming duplicate mirror \
    canonical redirect index permutation table shingle stemmer tokenizer language parser document template boilerplate \
    navigation footer sidebar request response header server latency throughput cache queue priority scheduler worker";

/// A page of about `size` bytes: head with style and script, a header and
/// nav with links, a sidebar, an article of paragraphs with inline markup
/// and links, and a footer — the mix of markup and text of real pages
/// (about a third of the bytes are visible text).
fn page(size: usize, seed: u64) -> String {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut r = Rng(seed | 1);
    let mut s = String::with_capacity(size + 4096);
    s.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Crawler notes</title>");
    s.push_str("<style>body{font-family:sans-serif;margin:0}.nav a{padding:4px}.side{float:left;width:20%}</style>");
    s.push_str("<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script>");
    s.push_str("</head><body><header class=\"top\"><div class=\"nav\">");
    for i in 0..12 {
        s.push_str(&format!(
            "<a href=\"/section/{i}/index.html\" class=\"nav-link\">Section {i}</a> "
        ));
    }
    s.push_str("</div></header><aside class=\"side\"><ul>");
    for i in 0..20 {
        s.push_str(&format!(
            "<li><a href=\"/topic/{i}\">Topic {} {}</a></li>",
            words[i + 40],
            words[i + 60]
        ));
    }
    s.push_str("</ul></aside><main><article>");
    let mut h = 0;
    while s.len() < size.saturating_sub(600) {
        if r.next().is_multiple_of(6) {
            h += 1;
            s.push_str(&format!(
                "<h2 id=\"s{h}\">{} {}</h2>",
                words[r.zipf(words.len())],
                words[r.zipf(words.len())]
            ));
        }
        s.push_str("<div class=\"para-wrapper\"><p class=\"para\">");
        let n = 40 + (r.next() % 60) as usize;
        for k in 0..n {
            let w = words[r.zipf(words.len())];
            match r.next() % 40 {
                0 => s.push_str(&format!("<a href=\"/wiki/{w}?ref=p{k}\" title=\"{w}\">{w}</a>")),
                1 => s.push_str(&format!("<strong>{w}</strong>")),
                2 => s.push_str(&format!("<em class=\"term\">{w}</em>")),
                _ => s.push_str(w),
            }
            s.push(if k % 15 == 14 { '.' } else { ' ' });
            if k % 15 == 14 {
                s.push(' ');
            }
        }
        s.push_str("</p></div>\n");
    }
    s.push_str("</article></main><footer><p>Copyright 2024 Example. <a href=\"/privacy\">Privacy</a></p></footer>");
    s.push_str("</body></html>");
    s
}

fn bench(c: &mut Criterion) {
    let all = simcrawl::Settings::from_layers(
        &[],
        &[
            "focus.enabled=true".to_string(),
            r#"focus.keywords=["crawler", "frontier", "politeness", "duplicate", "simhash", "mirror"]"#.to_string(),
        ],
    )
    .expect("default config");
    let focus = simcrawl::focus::Focus::new(&all).expect("focus profile");
    let settings = all.features.clone();
    let fx = FeatureExtractor::new(&settings);
    for (label, size) in [("10KB", 10usize << 10), ("100KB", 100 << 10), ("1MB", 1 << 20)] {
        let html = page(size, 42);
        let parsed = Html::parse_document(&html);
        let doc = extract_parsed(&parsed, settings.max_text_bytes);
        let feats = fx.features(&doc, None);
        let mut g = c.benchmark_group("pipeline");
        g.throughput(Throughput::Bytes(html.len() as u64));
        g.bench_with_input(BenchmarkId::new("1_parse", label), &html, |b, h| {
            b.iter(|| Html::parse_document(black_box(h)))
        });
        g.bench_with_input(BenchmarkId::new("2_text", label), &parsed, |b, p| {
            b.iter(|| extract_parsed(black_box(p), settings.max_text_bytes))
        });
        g.bench_with_input(BenchmarkId::new("3_features", label), &doc, |b, d| {
            b.iter(|| fx.features(black_box(d), None))
        });
        g.bench_with_input(BenchmarkId::new("4_simhash", label), &feats, |b, f| {
            b.iter(|| simhash(black_box(f)))
        });
        g.bench_with_input(BenchmarkId::new("5_after_parse", label), &parsed, |b, p| {
            b.iter(|| simhash(&fx.features(&extract_parsed(black_box(p), settings.max_text_bytes), None)))
        });
        g.bench_with_input(BenchmarkId::new("6_whole", label), &html, |b, h| {
            b.iter(|| simhash(&fx.features(&extract_html(black_box(h), settings.max_text_bytes), None)))
        });
        g.bench_with_input(BenchmarkId::new("7_focus", label), &(&doc, &feats), |b, (d, f)| {
            let mut buf = String::new();
            b.iter(|| {
                // The first page of a site: no link text in the cache.
                simcrawl::focus::Focus::clear_link_cache();
                let v = focus.vector();
                let mut sum = focus.page_relevance(&v, black_box(f));
                let language = fx.language(d);
                for l in &d.links {
                    sum += focus.link_relevance(&v, focus.link_text(l, &mut buf), language);
                }
                sum
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
