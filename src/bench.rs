//! Built-in benchmarks (`simcrawl bench index|pipeline|crawl|resume`): each prints
//! figures as ratios against a baseline measured in the same run. The index
//! benchmark lives in [`crate::index::bench`]; this module holds the crawl
//! benchmark, whose baseline is the peer people would pick (Scrapy).
//!
//! `bench crawl` starts the built-in test web in a child process (so the
//! crawler's CPU time is its own), crawls it with politeness delays off and
//! the full dedup pipeline on, then runs `benches/peer_scrapy.sh` (a plain
//! Scrapy CrawlSpider: robots.txt obeyed, 64 concurrent requests, no delay)
//! against the same server and prints both figures and their ratios.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::config::Settings;
use crate::crawl::{self, CrawlOptions};
use crate::error::{Error, Result};

/// Options of `simcrawl bench crawl`.
#[derive(Debug, Clone)]
pub struct CrawlBenchOptions {
    /// Article pages of the test web (`simcrawl testweb --pages`).
    pub pages: usize,
    /// Fetches per crawler (both stop there).
    pub max_pages: u64,
    /// The peer script, or `None` to skip the peer.
    pub peer_script: Option<PathBuf>,
    /// `SECTION.KEY=VALUE` overrides of simcrawl's settings, applied after
    /// the benchmark's own (concurrency 64, politeness off, no reports or
    /// bodies), validated like `crawl --set`.
    pub overrides: Vec<String>,
}

/// CPU time (user + system) of this process so far.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One crawler's figures.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct CrawlFigures {
    /// Pages fetched (responses).
    pub pages: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds of the crawler process.
    pub cpu_s: f64,
}

impl CrawlFigures {
    /// Pages per second.
    pub fn pages_per_s(&self) -> f64 {
        self.pages as f64 / self.wall_s.max(1e-9)
    }
    /// CPU seconds per 1,000 pages.
    pub fn cpu_per_1k(&self) -> f64 {
        self.cpu_s * 1000.0 / (self.pages.max(1) as f64)
    }
}

/// The test web in a child process; killed on drop.
struct ChildWeb {
    child: Child,
    port: u16,
}

impl Drop for ChildWeb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_child_web(pages: usize) -> Result<ChildWeb> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    let mut child = Command::new(exe)
        .args(["testweb", "--addr", "127.0.0.1:0", "--pages", &pages.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("simcrawl testweb", e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::InvalidInput("test web: no stdout".into()))?;
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .map_err(|e| Error::io("simcrawl testweb", e))?;
    // Keep draining its output: a closed pipe would end the server.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    // "simcrawl test web listening on 127.0.0.1:PORT"
    let port = first
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| Error::InvalidInput(format!("test web did not report its port: {first:?}")))?;
    // Wait until it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(Error::InvalidInput(format!(
                "test web on port {port} does not accept connections"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(ChildWeb { child, port })
}

/// Crawl the test web with simcrawl in this process (on the runtime a
/// `simcrawl crawl` builds); returns its figures.
fn crawl_simcrawl(
    port: u16,
    max_pages: u64,
    overrides: &[String],
    out: &Path,
) -> Result<(CrawlFigures, crawl::CrawlSummary)> {
    let mut set = vec![
        format!("crawl.max_pages={max_pages}"),
        "crawl.concurrency=64".into(),
        // Politeness off, as for the peer: no per-host spacing or in-flight limit.
        "politeness.max_in_flight_per_host=64".into(),
        "output.reports=false".into(),
        "output.store_bodies=false".into(),
    ];
    set.extend(overrides.iter().cloned());
    let settings = Settings::test_web(&set)?;
    let seeds = vec![format!("http://www.news.test:{port}/")];
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let summary = crawl::run_blocking(settings, CrawlOptions::new(out, seeds), std::future::pending())?;
    let (wall, cpu) = (t0.elapsed(), cpu_time() - cpu0);
    let fetched = summary.pages - summary.count(crate::model::Decision::Disallowed);
    Ok((
        CrawlFigures {
            pages: fetched,
            wall_s: wall.as_secs_f64(),
            cpu_s: cpu.as_secs_f64(),
        },
        summary,
    ))
}

fn run_peer(script: &Path, port: u16, max_pages: u64, dir: &Path) -> Result<CrawlFigures> {
    let seeds = dir.join("peer-seeds.txt");
    std::fs::write(&seeds, format!("http://www.news.test:{port}/\n")).map_err(|e| Error::io(&seeds, e))?;
    let out = dir.join("peer.json");
    let status = Command::new("bash")
        .arg(script)
        .arg(&seeds)
        .arg(max_pages.to_string())
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::io(script, e))?;
    if !status.success() {
        return Err(Error::InvalidInput(format!("{} failed ({status})", script.display())));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| Error::io(&out, e))?;
    serde_json::from_str(&text).map_err(|e| Error::InvalidInput(format!("{}: {e}", out.display())))
}

/// Run `simcrawl bench crawl` and print the figures to `out`.
pub fn run_crawl_bench(opts: &CrawlBenchOptions, out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("stdout", e);
    let web = start_child_web(opts.pages)?;
    let dir = std::env::temp_dir().join(format!("simcrawl-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    writeln!(
        out,
        "test web: {} article pages on 127.0.0.1:{} (child process); each crawler stops at {} fetches",
        opts.pages, web.port, opts.max_pages
    )
    .map_err(io)?;

    let (ours, summary) = crawl_simcrawl(web.port, opts.max_pages, &opts.overrides, &dir.join("simcrawl"))?;
    let parts: Vec<String> = summary.by_decision.iter().map(|(k, n)| format!("{k} {n}")).collect();
    writeln!(
        out,
        "simcrawl: {} pages in {:.2} s = {:.0} pages/s, {:.3} CPU-s per 1k pages ({})",
        ours.pages,
        ours.wall_s,
        ours.pages_per_s(),
        ours.cpu_per_1k(),
        parts.join(", ")
    )
    .map_err(io)?;

    match &opts.peer_script {
        None => writeln!(out, "peer: skipped (--no-peer)").map_err(io)?,
        Some(script) => match run_peer(script, web.port, opts.max_pages, &dir) {
            Ok(peer) => {
                writeln!(
                    out,
                    "scrapy:   {} pages in {:.2} s = {:.0} pages/s, {:.3} CPU-s per 1k pages",
                    peer.pages,
                    peer.wall_s,
                    peer.pages_per_s(),
                    peer.cpu_per_1k()
                )
                .map_err(io)?;
                writeln!(
                    out,
                    "ratio:    simcrawl/scrapy pages/s = {:.1}x; scrapy/simcrawl CPU per page = {:.1}x",
                    ours.pages_per_s() / peer.pages_per_s().max(1e-9),
                    peer.cpu_per_1k() / ours.cpu_per_1k().max(1e-9)
                )
                .map_err(io)?;
            }
            Err(e) => writeln!(out, "peer: skipped ({e})").map_err(io)?,
        },
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

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

/// `simcrawl bench resume`: what `crawl --resume` reads before its first
/// fetch, timed on a sled store of `pages` recorded pages (85% new, the rest
/// exact duplicates, 40 hosts) and `pages / 4` queued URLs, written through
/// the store API as a crawl writes them. Each step is one that
/// [`crawl::run`] takes on resume: open the store (the seen-set cache is
/// filled from the `s` keys), rebuild the frontier (`s`, `p`, `q`), and read
/// the decider's state (`crawl::DedupState`: exact-duplicate maps and, with
/// no index snapshot, as after a crawl killed before its first clean stop,
/// the index bulk load, from one scan of `p`). Those last two are timed alone
/// and then on two threads at once, as the crawl runs them. A plain scan of
/// `p` and a reopen without the seen-set cache are the baselines. The store
/// goes to a temporary directory, removed after.
pub fn run_resume_bench(pages: u64, out: &mut dyn Write) -> Result<()> {
    use crate::model::Decision;
    use crate::model::{HostStats, QueuedUrl, StoredPage};
    use crate::store::{Completion, SledStore, Store};

    let dir = std::env::temp_dir().join(format!("simcrawl-bench-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = Settings::default();
    let w = |e: std::io::Error| Error::io("stdout", e);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // splitmix64: reproducible fingerprints and hashes.
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let hash = |a: u64, b: u64| {
        let mut h = [0u8; 32];
        h[..8].copy_from_slice(&a.to_le_bytes());
        h[8..16].copy_from_slice(&b.to_le_bytes());
        h
    };
    let qurl = |i: u64| {
        let host = format!("h{}.test", i % 40);
        let canonical = format!("http://{host}/section-{}/article-{i}.html", i % 97);
        QueuedUrl {
            url: canonical.clone(),
            canonical,
            host,
            depth: 3,
            parent: Some(format!("http://h{}.test/section-{}/", i % 40, i % 97)),
            components: crate::model::ScoreComponents::default(),
            priority: -3.0,
            seq: i,
            retries: 0,
            inlinks: 1,
            tunnel: 0,
        }
    };

    let started = Instant::now();
    {
        let store = SledStore::open_cached(&dir, settings.frontier.seen_cache_urls)?.combining();
        store.set_meta("seeds", b"http://h0.test/")?;
        let queued = pages / 4;
        const GROUP: u64 = 1000;
        let host = HostStats::default();
        let mut i = 0;
        while i < pages + queued {
            let urls: Vec<QueuedUrl> = (i..(i + GROUP).min(pages + queued)).map(qurl).collect();
            store.enqueue(&urls)?;
            let done: Vec<&QueuedUrl> = urls.iter().filter(|u| u.seq < pages).collect();
            let mut recs = Vec::with_capacity(done.len());
            for u in &done {
                store.claim(u)?;
                let new = u.seq % 100 < 85;
                let (a, b) = (next(), next());
                recs.push(StoredPage {
                    id: store.allocate_page_id(),
                    canonical: u.canonical.clone(),
                    final_url: u.canonical.clone(),
                    status: 200,
                    depth: u.depth,
                    decision: if new { Decision::New } else { Decision::ExactDuplicate },
                    dup_of: (!new).then_some(1),
                    simhash: Some(a),
                    content_hash: Some(hash(a, b)),
                    text_hash: Some(hash(b, a)),
                    fetched_at_ms: 1_700_000_000_000 + u.seq,
                    bytes: 5000,
                    ..StoredPage::default()
                });
            }
            let batch: Vec<Completion<'_>> = done
                .iter()
                .zip(&recs)
                .map(|(u, p)| Completion {
                    url: u,
                    key: u.key(),
                    page: p,
                    body: None,
                    host: &host,
                })
                .collect();
            store.complete_many(&batch)?;
            i += GROUP;
        }
        store.flush()?;
    }
    writeln!(
        out,
        "store with {pages} pages and {} queued URLs written in {:.1} s ({})",
        pages / 4,
        started.elapsed().as_secs_f64(),
        dir.display()
    )
    .map_err(w)?;
    let mut report = |what: &str, t: Instant, n: usize| -> Result<f64> {
        let s = t.elapsed().as_secs_f64();
        writeln!(
            out,
            "{what:<46} {s:>8.2} s   ({n} items, {:.0}/s)",
            n as f64 / s.max(1e-9)
        )
        .map_err(w)?;
        Ok(s)
    };

    let t = Instant::now();
    let cached = SledStore::open_cached(&dir, settings.frontier.seen_cache_urls)?;
    report("open (seen-set cache filled from s)", t, (pages + pages / 4) as usize)?;
    drop(cached);
    // sled's own part of the open (its log recovery), for comparison; the
    // crawl opens once, as the step above did.
    let t = Instant::now();
    drop(SledStore::open(&dir)?);
    report("baseline: reopen without a seen-set cache", t, 0)?;
    // Each step below runs on a freshly reopened store (not timed), so each
    // starts with sled's page cache as cold as a resumed crawl's.
    let reopen = || -> Result<std::sync::Arc<dyn Store>> {
        Ok(std::sync::Arc::new(
            SledStore::open_cached(&dir, settings.frontier.seen_cache_urls)?.combining(),
        ))
    };
    let store = reopen()?;
    let t = Instant::now();
    let n = store.iter_pages().try_fold(0usize, |n, r| r.map(|_| n + 1))?;
    let scan = report("baseline: plain scan of p (decode each page)", t, n)?;
    drop(store);
    let no_snapshot = dir.join("no-snapshot");
    let store = reopen()?;
    let t = Instant::now();
    let frontier = crate::frontier::Frontier::resume(store.clone(), &settings)?;
    let alone = report("frontier resume (s, p, q; alone)", t, frontier.len())?;
    drop((frontier, store));
    let store = reopen()?;
    let t = Instant::now();
    let state = crate::crawl::DedupState::load(store.as_ref(), &settings, &no_snapshot, 0)?;
    let load = report("dedup state: exact maps + index (one scan of p)", t, state.index.len())?;
    drop((state, store));
    // What `crawl --resume` waits for after the open: both at once.
    let store = reopen()?;
    let t = Instant::now();
    let (frontier, state) = std::thread::scope(|sc| {
        let loader = sc.spawn(|| crate::crawl::DedupState::load(store.as_ref(), &settings, &no_snapshot, 0));
        let frontier = crate::frontier::Frontier::resume(store.clone(), &settings);
        (frontier, loader.join())
    });
    let state = state.map_err(|_| Error::thread_panicked("loader"))??;
    let frontier = frontier?;
    let both = report("both, as crawl --resume runs them (2 threads)", t, frontier.len())?;
    writeln!(
        out,
        "dedup state / plain scan of p: {:.2}x; both at once / one after the other: {:.2}x",
        load / scan.max(1e-9),
        both / (alone + load).max(1e-9)
    )
    .map_err(w)?;
    drop((frontier, state, store));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_bench_reads_back_what_it_wrote() {
        let mut out = Vec::new();
        run_resume_bench(2000, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let items = |step: &str| -> String {
            let line = out
                .lines()
                .find(|l| l.starts_with(step))
                .unwrap_or_else(|| panic!("{step}: {out}"));
            line.rsplit('(').next().unwrap().split(' ').next().unwrap().to_string()
        };
        // 2,000 pages and 500 queued URLs; 85% of the pages are new.
        assert_eq!(items("open"), "2500");
        assert_eq!(items("frontier resume"), "500");
        assert_eq!(items("baseline: plain"), "2000");
        assert_eq!(items("dedup state"), "1700");
        assert_eq!(items("both"), "500");
    }
}
