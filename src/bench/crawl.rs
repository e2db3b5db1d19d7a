//! `simcrawl bench crawl`: the built-in test web in a child process (so the
//! crawler's CPU time is its own), crawled by simcrawl with politeness delays
//! off and the full dedup pipeline on, then by `benches/peer_scrapy.sh` (a
//! plain Scrapy CrawlSpider: robots.txt obeyed, 64 concurrent requests, no
//! delay) against the same server; both figures and their ratios are printed.
//! Beside simcrawl's figures it prints the process's peak resident memory
//! (the kernel's high-water mark `VmHWM`: the crawl in this process, its
//! runtime and the benchmark's own few megabytes; the test web is a child
//! process and not counted), the high-water mark each time another tenth of
//! the crawl's records is written, and the store's size on disk against the
//! body bytes fetched.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// the benchmark's own (concurrency 64, politeness off, no reports, no
    /// WARC files), validated like `crawl --set`.
    pub overrides: Vec<String>,
    /// Where to keep simcrawl's crawl directory (it must not exist), or
    /// `None` to crawl into a temporary directory removed at the end.
    pub keep: Option<PathBuf>,
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

/// Peak resident memory of this process so far, in bytes: `VmHWM` of
/// `/proc/self/status`, else getrusage's `ru_maxrss`.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok();
    let hwm = status.as_deref().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
    });
    if let Some(kb) = hwm {
        return Some(kb * 1024);
    }
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    // Kilobytes on Linux.
    u64::try_from(usage.ru_maxrss).ok().map(|kb| kb * 1024)
}

/// Bytes a directory's files take on disk (allocated blocks, as `du`
/// counts them; symbolic links are not followed).
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.blocks() * 512;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries.flatten().map(|e| disk_usage(&e.path())).sum()
}

/// The bytes of every key and value in the store in `dir` (what it holds,
/// against what it takes on disk), in all and per key prefix (its first
/// byte: `q` queue, `s` seen-set, `p` pages, `b` body references, `H`
/// hosts); `None` when it does not open.
fn live_store_bytes(dir: &Path) -> Option<(u64, Vec<(char, u64)>)> {
    use crate::store::Backend;
    let store = crate::store::DiskStore::open(dir).ok()?;
    let mut by_prefix = std::collections::BTreeMap::<char, u64>::new();
    for r in store.backend().scan(&[]) {
        let (k, v) = r.ok()?;
        *by_prefix
            .entry(char::from(k.first().copied().unwrap_or(b'?')))
            .or_default() += (k.len() + v.len()) as u64;
    }
    Some((by_prefix.values().sum(), by_prefix.into_iter().collect()))
}

pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// Peak RSS as a crawl goes: the process's high-water mark ([`peak_rss`])
/// each time another tenth of its records is written, so one run shows how
/// memory grows with the pages fetched, apart from the web's size (a crawl
/// of the first 20 000 pages of a 300 000-page web queues more URLs per
/// page than a crawl of a 20 000-page web).
struct RssCourse {
    every: u64,
    written: AtomicU64,
    marks: Mutex<Vec<(u64, u64)>>,
    /// `(records written, peak live heap in bytes)` at the same marks, with
    /// a counting allocator ([`super::live_heap`]).
    heap_marks: Mutex<Vec<(u64, usize)>>,
}

impl RssCourse {
    /// A course with a mark every tenth of `max_pages` records.
    fn new(max_pages: u64) -> Arc<Self> {
        Arc::new(RssCourse {
            every: (max_pages / 10).max(1),
            written: AtomicU64::new(0),
            marks: Mutex::new(Vec::new()),
            heap_marks: Mutex::new(Vec::new()),
        })
    }

    /// The crawl's `on_page` callback: counts records, reads the
    /// high-water mark at each tenth (one read of `/proc/self/status`).
    /// The kernel raises `VmHWM` lazily (a read can return less than an
    /// earlier one when memory was given back in between), so each mark is
    /// the highest reading so far.
    fn callback(self: &Arc<Self>) -> crawl::PageCallback {
        let me = Arc::clone(self);
        Arc::new(move |_| {
            let n = me.written.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(me.every) {
                if let Some(b) = peak_rss() {
                    let mut marks = me.marks.lock().unwrap_or_else(|e| e.into_inner());
                    let peak = marks.last().map_or(b, |&(_, last)| b.max(last));
                    marks.push((n, peak));
                }
                if let Some(h) = super::live_heap() {
                    me.heap_marks
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((n, h.peak));
                }
            }
        })
    }

    /// The highest reading at the marks so far (0 before the first).
    fn peak(&self) -> u64 {
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks.last().map_or(0, |&(_, b)| b)
    }

    /// `(records written, peak RSS in bytes)` at each mark so far.
    fn marks(&self) -> Vec<(u64, u64)> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `(records written, peak live heap in bytes)` at each mark so far
    /// (none without a counting allocator).
    fn heap_marks(&self) -> Vec<(u64, usize)> {
        self.heap_marks.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
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
pub(super) struct ChildWeb {
    child: Child,
    pub(super) port: u16,
}

impl Drop for ChildWeb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn start_child_web(pages: usize) -> Result<ChildWeb> {
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
pub(super) fn crawl_simcrawl(
    port: u16,
    max_pages: u64,
    overrides: &[String],
    out: &Path,
) -> Result<(CrawlFigures, crawl::CrawlSummary)> {
    crawl_simcrawl_with(port, max_pages, overrides, out, None)
}

/// [`crawl_simcrawl`], calling `on_page` with each record written.
fn crawl_simcrawl_with(
    port: u16,
    max_pages: u64,
    overrides: &[String],
    out: &Path,
    on_page: Option<crawl::PageCallback>,
) -> Result<(CrawlFigures, crawl::CrawlSummary)> {
    let mut set = vec![
        format!("crawl.max_pages={max_pages}"),
        "crawl.concurrency=64".into(),
        // Politeness off, as for the peer: no per-host spacing or in-flight limit.
        "politeness.max_in_flight_per_host=64".into(),
        "output.reports=false".into(),
        "output.warc=false".into(),
    ];
    set.extend(overrides.iter().cloned());
    let settings = Settings::test_web(&set)?;
    let seeds = vec![format!("http://www.news.test:{port}/")];
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let mut opts = CrawlOptions::new(out, seeds);
    opts.on_page = on_page;
    let summary = crawl::run_blocking(settings, opts, std::future::pending())?;
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

/// With `--set output.warc=true`: the size of the WARC files against the
/// body bytes fetched (`bytes` summed over `pages.jsonl`).
fn warc_figures(crawl_dir: &Path, out: &mut dyn Write) -> Result<()> {
    let layout = crate::model::CrawlDir::new(crawl_dir);
    if !layout.warc().is_dir() {
        return Ok(());
    }
    let files = crate::warc::WarcWriter::files(&layout.warc())?;
    let mut warc_bytes = 0;
    for f in &files {
        warc_bytes += std::fs::metadata(f).map_err(|e| Error::io(f, e))?.len();
    }
    let fetched: u64 = crate::crawllog::read_log(&layout.log())?.iter().map(|r| r.bytes).sum();
    writeln!(
        out,
        "warc:     {} files, {} bytes = {:.3} of the {} body bytes fetched",
        files.len(),
        warc_bytes,
        warc_bytes as f64 / (fetched.max(1) as f64),
        fetched
    )
    .map_err(|e| Error::io("stdout", e))
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

    let crawl_dir = match &opts.keep {
        Some(d) if d.exists() => {
            return Err(Error::InvalidInput(format!("--keep {}: already exists", d.display())));
        }
        Some(d) => d.clone(),
        None => dir.join("simcrawl"),
    };
    let course = RssCourse::new(opts.max_pages);
    let (ours, summary) = crawl_simcrawl_with(
        web.port,
        opts.max_pages,
        &opts.overrides,
        &crawl_dir,
        Some(course.callback()),
    )?;
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
    let store = disk_usage(&crawl_dir.join(crate::model::CrawlDir::STORE_DIR));
    writeln!(
        out,
        "memory:   peak RSS {} (VmHWM of this process: the crawl and the bench); store {:.1} MiB on disk, {:.1} MiB fetched ({:.0} store bytes per page)",
        peak_rss().map_or_else(|| "unknown".to_string(), |b| format!("{:.0} MiB", mib(b.max(course.peak())))),
        mib(store),
        mib(summary.bytes),
        store as f64 / summary.total_pages.max(1) as f64
    )
    .map_err(io)?;

    let marks = course.marks();
    if !marks.is_empty() {
        let parts: Vec<String> = marks.iter().map(|(n, b)| format!("{n} {:.0}", mib(*b))).collect();
        writeln!(
            out,
            "          peak RSS so far, MiB, by records written: {}",
            parts.join(", ")
        )
        .map_err(io)?;
    }
    if let Some(h) = super::live_heap() {
        let parts: Vec<String> = course
            .heap_marks()
            .iter()
            .map(|(n, b)| format!("{n} {:.0}", mib(*b as u64)))
            .collect();
        writeln!(
            out,
            "heap:     peak live heap {:.0} MiB (counted by the allocator, --features heap-count); so far, MiB, by records written: {}",
            mib(h.peak as u64),
            parts.join(", ")
        )
        .map_err(io)?;
    }

    if let Some((live, by_prefix)) = live_store_bytes(&crawl_dir.join(crate::model::CrawlDir::STORE_DIR)) {
        let parts: Vec<String> = by_prefix.iter().map(|(p, n)| format!("{p} {:.1}", mib(*n))).collect();
        writeln!(
            out,
            "store:    {:.1} MiB of keys and values ({} MiB; {:.3} of the bytes fetched); on disk {:.2}x that",
            mib(live),
            parts.join(", "),
            live as f64 / summary.bytes.max(1) as f64,
            store as f64 / live.max(1) as f64
        )
        .map_err(io)?;
    }
    warc_figures(&crawl_dir, out)?;

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
