//! `simcrawl bench pipeline`: the per-page path against a BLAKE3 baseline.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::config::Settings;
use crate::error::{Error, Result};

/// `simcrawl bench pipeline`: the per-page path (parse + extract, features,
/// simhash, exact hashes) over the built-in test web's HTML pages, in MB/s of
/// HTML input on one core, against BLAKE3 over the same bytes (a memory-speed
/// baseline measured in the same run). "whole per-page path" leaves template
/// learning out (features without a template); "as crawl::analyze does"
/// adds per-host template learning and weights features by the host's
/// template, as the crawl does.
pub fn run_pipeline_bench(pages: usize, out: &mut dyn Write) -> Result<()> {
    use crate::testweb::{TestWeb, TestWebOptions};
    let io = |e| Error::io("stdout", e);
    let web = TestWeb::new(TestWebOptions {
        pages,
        ..Default::default()
    });
    let truth = web.truth(80);
    let (hosts, bodies): (Vec<String>, Vec<Vec<u8>>) = truth
        .pages
        .iter()
        .filter(|p| p.status == 200 && p.content_type.as_deref().is_some_and(|c| c.starts_with("text/html")))
        .map(|p| {
            let target = p.url.splitn(4, '/').nth(3).map_or("/".to_string(), |t| format!("/{t}"));
            (p.host.clone(), web.respond(&p.host, &target, 80).body.to_vec())
        })
        .filter(|(_, b)| !b.is_empty())
        .unzip();
    let texts: Vec<String> = bodies.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let settings = Settings::default();
    let fx = crate::features::FeatureExtractor::new(&settings.features);
    let max = settings.features.max_text_bytes;
    let mb = bytes as f64 / 1e6;
    let rate = |d: Duration| mb / d.as_secs_f64().max(1e-9);

    let t = Instant::now();
    let mut sink = 0u64;
    for b in &bodies {
        sink ^= blake3::hash(b).as_bytes()[0] as u64;
    }
    let baseline = t.elapsed();
    let t = Instant::now();
    let docs: Vec<crate::extract::Extracted> = texts.iter().map(|h| crate::extract::extract_html(h, max)).collect();
    let parse = t.elapsed();
    let t = Instant::now();
    let feats: Vec<crate::features::Features> = docs.iter().map(|d| fx.features(d, None)).collect();
    let features = t.elapsed();
    // What crawl::analyze adds: per-host template learning, and features
    // weighted by the host's template.
    let learner = crate::features::TemplateLearner::new(&settings.features);
    let t = Instant::now();
    // Blocks are hashed once per page (here), as the crawl does.
    let templates: Vec<_> = hosts
        .iter()
        .zip(&docs)
        .map(|(h, d)| {
            let blocks = crate::features::block_hashes(d);
            learner.observe_hashes(h, &blocks);
            sink ^= learner.version(h);
            (blocks, learner.template_shared(h))
        })
        .collect();
    let learn = t.elapsed();
    let t = Instant::now();
    for (d, (blocks, tpl)) in docs.iter().zip(&templates) {
        sink ^= fx.features_hashed(d, blocks, tpl.as_deref()).items.len() as u64;
    }
    let features_tpl = t.elapsed();
    let t = Instant::now();
    for f in &feats {
        sink ^= crate::simhash::simhash(f);
    }
    let simhash = t.elapsed();
    let t = Instant::now();
    for (b, d) in bodies.iter().zip(&docs) {
        sink ^= crate::dedup::ContentHashes::compute(b, d).text[0] as u64;
    }
    let hashes = t.elapsed();
    std::hint::black_box(sink);

    writeln!(
        out,
        "{} HTML pages of the test web, {:.1} MB, one core",
        bodies.len(),
        mb
    )
    .map_err(io)?;
    writeln!(out, "{:<26} {:>9} {:>12}", "stage", "MB/s", "x baseline").map_err(io)?;
    let after = features + simhash + hashes;
    for (name, d) in [
        ("blake3 (baseline)", baseline),
        ("parse + extract", parse),
        ("features", features),
        ("simhash", simhash),
        ("exact hashes", hashes),
        ("after the parse (sum)", after),
        ("whole per-page path", parse + after),
        ("template learning", learn),
        ("features with template", features_tpl),
        (
            "as crawl::analyze does",
            parse + learn + features_tpl + simhash + hashes,
        ),
    ] {
        writeln!(
            out,
            "{name:<26} {:>9.1} {:>12.3}",
            rate(d),
            baseline.as_secs_f64() / d.as_secs_f64().max(1e-9)
        )
        .map_err(io)?;
    }
    Ok(())
}
