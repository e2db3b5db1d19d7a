//! `simcrawl bench pipeline`: the per-page path against a BLAKE3 baseline,
//! on the built-in test web's pages or on HTML files (real sites).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use url::Url;

use crate::config::Settings;
use crate::error::{Error, Result};

/// One page to measure on: its host (for template learning), its URL (the
/// base of its links) and its body.
struct Page {
    host: String,
    url: Url,
    body: Vec<u8>,
}

/// `simcrawl bench pipeline`: the per-page path (parse + extract, features,
/// simhash, exact hashes, link resolution) in MB/s of HTML input on one
/// core, against BLAKE3 over the same bytes (a memory-speed baseline
/// measured in the same run). "whole per-page path" leaves template
/// learning out (features without a template); "as crawl::analyze does"
/// parses without link text (as a crawl that is not focused does), adds
/// per-host template learning, weights features by the host's
/// template (keeping the content words, as the crawl's extractor does),
/// takes the content sketch, and resolves and canonicalizes every link, as
/// the crawl does.
///
/// The pages are the built-in test web's HTML pages (`pages` article
/// pages), or, when `dirs` are given, HTML files of real sites: from each
/// directory (one site, served as `http://siteN.test/` with its files at
/// their relative paths), at most `pages` of its `.html`/`.htm`/`.xhtml`
/// files, evenly spread over the directory's sorted file list.
pub fn run_pipeline_bench(pages: usize, dirs: &[PathBuf], out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("stdout", e);
    let (what, pages) = if dirs.is_empty() {
        ("HTML pages of the test web".to_string(), test_web_pages(pages))
    } else {
        let mut all = Vec::new();
        for (i, dir) in dirs.iter().enumerate() {
            all.extend(site_pages(dir, i, pages)?);
        }
        let n = dirs.len();
        (
            format!("HTML files of {n} director{}", if n == 1 { "y" } else { "ies" }),
            all,
        )
    };
    if pages.is_empty() {
        return Err(Error::InvalidInput("no HTML pages to measure on".into()));
    }
    let hosts: Vec<&str> = pages.iter().map(|p| p.host.as_str()).collect();
    let bodies: Vec<&[u8]> = pages.iter().map(|p| p.body.as_slice()).collect();
    let texts: Vec<String> = bodies.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    let bytes: usize = bodies.iter().map(|b| b.len()).sum();
    let settings = Settings::default();
    let fx = crate::features::FeatureExtractor::new(&settings.features);
    let max = settings.features.max_text_bytes;
    let mb = bytes as f64 / 1e6;
    let rate = |d: Duration| mb / d.as_secs_f64().max(1e-9);

    let mut sink = 0u64;
    let (baseline, _) = best(|| {
        for b in &bodies {
            sink ^= blake3::hash(b).as_bytes()[0] as u64;
        }
    });
    let (parse, docs) = best(|| -> Vec<crate::extract::Extracted> {
        texts.iter().map(|h| crate::extract::extract_html(h, max)).collect()
    });
    // The crawl collects no anchor texts or contexts unless it is focused.
    let bare = crate::extract::ExtractOptions::new(max).without_link_text();
    let (parse_bare, _) = best(|| -> Vec<crate::extract::Extracted> {
        texts
            .iter()
            .map(|h| crate::extract::extract_html_with(h, bare))
            .collect()
    });
    let (features, feats) =
        best(|| -> Vec<crate::features::Features> { docs.iter().map(|d| fx.features(d, None)).collect() });
    // What crawl::analyze adds: per-host template learning, and features
    // weighted by the host's template. Learning changes the learner, so it
    // runs once.
    let learner = crate::features::TemplateLearner::new(&settings.features);
    let t = Instant::now();
    // Blocks are hashed once per page (here), as the crawl does.
    let templates: Vec<_> = hosts
        .iter()
        .zip(&docs)
        .map(|(&h, d)| {
            let blocks = crate::features::block_hashes(d);
            learner.observe_hashes(h, &blocks);
            sink ^= learner.version(h);
            (blocks, learner.template_shared(h))
        })
        .collect();
    let learn = t.elapsed();
    // The crawl's extractor also keeps each page's content words, for its
    // content sketch.
    let fx_crawl = crate::crawl::feature_extractor(&settings);
    let (features_tpl, feats_tpl) = best(|| -> Vec<crate::features::Features> {
        docs.iter()
            .zip(&templates)
            .map(|(d, (blocks, tpl))| fx_crawl.features_hashed(d, blocks, tpl.as_deref()))
            .collect()
    });
    let (sketch, _) = best(|| {
        for (f, &h) in feats_tpl.iter().zip(&hosts) {
            let s = crate::crawl::page_sketch(&fx_crawl, None, None, f, h);
            if let Some(crate::sketch::Sketch::Content(c)) = s {
                sink ^= u64::from(c.shingles());
            }
        }
    });
    let (simhash, _) = best(|| {
        for f in &feats {
            sink ^= crate::simhash::simhash(f);
        }
    });
    let (hashes, _) = best(|| {
        for (b, d) in bodies.iter().zip(&docs) {
            sink ^= crate::dedup::ContentHashes::compute(b, d).text[0] as u64;
        }
    });
    // Every link resolved against the page's base and canonicalized,
    // through the per-thread link cache as the crawl does; each timed run
    // starts with a canonicalizer of its own, so it finds none of the
    // previous run's links in the cache.
    let links: usize = docs.iter().map(|d| d.links.len()).sum();
    let (resolve, _) = best(|| {
        let canon = crate::canon::Canonicalizer::new(&settings.canon);
        for (p, d) in pages.iter().zip(&docs) {
            let base = crate::canon::effective_base(&p.url, d.base_href.as_deref());
            for l in &d.links {
                if let Ok(u) = canon.resolve_link(&base, &l.href) {
                    sink ^= u.as_str().len() as u64;
                }
            }
        }
    });
    std::hint::black_box(sink);

    writeln!(
        out,
        "{} {what}, {:.1} MB, {links} links, one core, fastest of {RUNS} runs",
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
        ("parse, no link text", parse_bare),
        ("template learning", learn),
        ("features with template", features_tpl),
        ("content sketch", sketch),
        ("links resolved", resolve),
        (
            "as crawl::analyze does",
            parse_bare + learn + features_tpl + simhash + hashes + sketch + resolve,
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

/// The test web's HTML pages: `pages` article pages and what links them.
fn test_web_pages(pages: usize) -> Vec<Page> {
    use crate::testweb::{TestWeb, TestWebOptions};
    let web = TestWeb::new(TestWebOptions {
        pages,
        ..Default::default()
    });
    let truth = web.truth(80);
    truth
        .pages
        .iter()
        .filter(|p| p.status == 200 && p.content_type.as_deref().is_some_and(|c| c.starts_with("text/html")))
        .filter_map(|p| {
            let target = p.url.splitn(4, '/').nth(3).map_or("/".to_string(), |t| format!("/{t}"));
            let body = web.respond(&p.host, &target, 80).body.to_vec();
            let url = Url::parse(&p.url).ok()?;
            (!body.is_empty()).then(|| Page {
                host: p.host.clone(),
                url,
                body,
            })
        })
        .collect()
}

/// At most `pages` HTML files of `dir`, evenly spread over its sorted
/// file list, as pages of `http://site{i}.test/`.
fn site_pages(dir: &Path, i: usize, pages: usize) -> Result<Vec<Page>> {
    let files: Vec<PathBuf> = crate::fingerprint::collect_files(&[dir.to_path_buf()])?
        .into_iter()
        .filter(|f| {
            f.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| ["html", "htm", "xhtml"].iter().any(|k| x.eq_ignore_ascii_case(k)))
        })
        .collect();
    let step = files.len().div_ceil(pages.max(1)).max(1);
    let host = format!("site{i}.test");
    let mut out = Vec::new();
    for f in files.iter().step_by(step) {
        let rel = f.strip_prefix(dir).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let url = Url::parse(&format!("http://{host}/"))
            .and_then(|u| u.join(&rel))
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", f.display())))?;
        let body = std::fs::read(f).map_err(|e| Error::io(f, e))?;
        out.push(Page {
            host: host.clone(),
            url,
            body,
        });
    }
    Ok(out)
}

/// Runs of each stage; the fastest is reported.
const RUNS: usize = 3;

/// The fastest of [`RUNS`] runs of `f` (the one least disturbed by other
/// work on the machine) and the result of the last.
fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let t = Instant::now();
    let mut last = std::hint::black_box(f());
    let mut fastest = t.elapsed();
    for _ in 1..RUNS {
        let t = Instant::now();
        last = std::hint::black_box(f());
        fastest = fastest.min(t.elapsed());
    }
    (fastest, last)
}
