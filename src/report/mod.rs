//! Reports (pipeline: the end, after the crawl log): crawl summary, duplicate
//! clusters and mirror report, built from `DIR/pages.jsonl` alone so they can
//! be regenerated from a stored crawl without re-crawling. Formats: JSON
//! (field names documented in docs/reports.md), CSV for tables, and one
//! self-contained HTML page per report (no network, no external assets).
//!
//! The crawl calls [`write_from_log`] when it ends; `simcrawl report` calls
//! [`render_crawl`].
//!
//! Memory: the log is read as a stream ([`crawllog::records`]), never held.
//! The summary is an aggregation ([`summary::SummaryBuilder`]: counters, one
//! row per host and content type, and one `u64` simhash and one `f64`
//! relevance per record). Clusters and mirrors need the pages side by side
//! (duplicate groups, each host's sorted paths); they read a
//! [`mirror::LogDigest`] built in the same pass: per record a fixed-size
//! entry (ids, decision, the parsed simhash, 128-bit keys of the content
//! hashes), the URLs once each in one arena. An external sort or the store
//! would make this part flat too, at the cost of a second pass over disk;
//! at a few hundred bytes per page (against the records' ~7 KB) the digest
//! is what the reports keep. The crawl's reports are built one at a time
//! beside it, each written and dropped before the next is built, and each
//! is written as it is made (to a buffered file, or `simcrawl report`'s
//! stdout), never held as one string: the clusters are planned as URL ids
//! ([`clusters::Plan`], about 4 bytes per member) and each is named only
//! as it is written, and mirror detection reads pages' URLs and paths
//! from the digest.

pub mod clusters;
pub mod explain;
pub mod html;
pub mod summary;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Settings;
use crate::crawllog::{self, PageRecord};
use crate::error::{Error, Result};
use crate::mirror;
use crate::model::CrawlDir;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// Pages by decision, status, type; per-host table; fingerprint statistics.
    Summary,
    /// Near-duplicate clusters.
    Clusters,
    /// Mirror host (prefix) pairs and mirror sets.
    Mirrors,
}

impl ReportKind {
    /// The file stem in `DIR/reports/`.
    pub fn name(self) -> &'static str {
        match self {
            ReportKind::Summary => "summary",
            ReportKind::Clusters => "clusters",
            ReportKind::Mirrors => "mirrors",
        }
    }
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Pretty JSON (fields in docs/reports.md).
    Json,
    /// CSV of the report's main table, with a header row.
    Csv,
    /// One self-contained HTML page.
    Html,
}

impl Format {
    /// The file extension.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
        }
    }
}

/// Counters only the crawl loop knows, read from the optional
/// `DIR/crawl_stats.json` (written by the crawl at the end; unknown fields
/// are ignored, missing ones are null).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrawlStats {
    /// Out-links of duplicate pages never enqueued (dedup policy `drop`).
    pub dup_links_dropped: Option<u64>,
    /// Out-links of duplicate pages enqueued with a penalty (`deprioritize`).
    pub dup_links_demoted: Option<u64>,
    /// URLs demoted by the online mirror detector and never fetched.
    pub mirror_fetches_saved: Option<u64>,
    /// Focused crawls: the `focus.on_topic` threshold the crawl ran with
    /// (the summary's harvest rate uses it).
    pub focus_on_topic: Option<f64>,
    /// Focused crawls: out-links not enqueued because of `focus.min_relevance`.
    pub focus_links_cut: Option<u64>,
    /// Exact duplicates (same body or text as a page decided before) whose
    /// analysis took that page's simhash instead of computing features and
    /// a fingerprint of their own: CPU the exact check saved.
    pub fingerprints_reused: Option<u64>,
    /// Pages of young sites fingerprinted again because their site's
    /// template changed which of their blocks are template blocks.
    pub refingerprints: Option<u64>,
    /// Of those, pages whose template blocks turned back to the set before
    /// and took back the fingerprint they had then instead of being weighed
    /// again.
    pub refingerprints_taken_back: Option<u64>,
}

/// Read `DIR/crawl_stats.json` if present.
pub fn read_crawl_stats(dir: &Path) -> Result<Option<CrawlStats>> {
    let path = CrawlDir::new(dir).stats();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::InvalidInput(format!("{}: bad crawl stats: {e}", path.display())))
}

/// A stored crawl: its log (read as a stream) and counters.
pub struct CrawlData {
    /// `DIR/pages.jsonl`, or the workers' logs of a shared crawl
    /// ([`CrawlDir::logs`]).
    pub logs: Vec<PathBuf>,
    /// `crawl_stats.json`, if the crawl wrote one.
    pub stats: Option<CrawlStats>,
}

impl CrawlData {
    /// Check that `DIR/pages.jsonl` exists (required) and read
    /// `DIR/crawl_stats.json` (optional); the records are read by
    /// [`CrawlData::records`].
    pub fn load(dir: &Path) -> Result<CrawlData> {
        let logs = CrawlDir::new(dir).logs();
        if logs.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{}: not a crawl directory (no pages.jsonl, nor worker-N/pages.jsonl)",
                dir.display()
            )));
        }
        Ok(CrawlData {
            logs,
            stats: read_crawl_stats(dir)?,
        })
    }

    /// The log's records, one at a time.
    pub fn records(&self) -> Result<crawllog::LogRecords> {
        Ok(crawllog::records_of(&self.logs)?)
    }
}

/// Which reports a [`ReportBuilder`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// The summary.
    pub summary: bool,
    /// Clusters and/or mirrors (both read the [`mirror::LogDigest`]).
    pub digest: bool,
}

impl Wanted {
    /// Every report.
    pub const ALL: Wanted = Wanted {
        summary: true,
        digest: true,
    };

    /// What one report needs.
    pub fn of(kind: ReportKind) -> Wanted {
        Wanted {
            summary: kind == ReportKind::Summary,
            digest: kind != ReportKind::Summary,
        }
    }
}

/// The reports of a crawl built in one pass over its records, in log order
/// (see the module docs on memory).
pub struct ReportBuilder {
    summary: Option<summary::SummaryBuilder>,
    digest: Option<mirror::LogDigest>,
}

/// The reports a [`ReportBuilder`] computed.
pub struct Built {
    /// The summary.
    pub summary: Option<summary::Summary>,
    /// The clusters.
    pub clusters: Option<clusters::ClusterReport>,
    /// The mirrors.
    pub mirrors: Option<mirror::MirrorReport>,
}

impl ReportBuilder {
    /// A builder for the `wanted` reports.
    pub fn new(wanted: Wanted) -> Self {
        ReportBuilder {
            summary: wanted.summary.then(summary::SummaryBuilder::default),
            digest: wanted.digest.then(mirror::LogDigest::default),
        }
    }

    /// Add the next record of the log.
    pub fn add(&mut self, r: &PageRecord) {
        if let Some(s) = &mut self.summary {
            s.add(r);
        }
        if let Some(d) = &mut self.digest {
            d.add(r);
        }
    }

    /// Add every record of a log, read as a stream.
    pub fn add_log(&mut self, records: crawllog::LogRecords) -> Result<()> {
        for r in records {
            self.add(&r?);
        }
        Ok(())
    }

    /// The reports (clusters only with `clusters`, mirrors only with `mirrors`).
    pub fn finish(self, stats: Option<CrawlStats>, settings: &Settings, clusters: bool, mirrors: bool) -> Built {
        let (c, m) = match &self.digest {
            Some(d) => (
                clusters.then(|| clusters::build_in(d)),
                mirrors.then(|| mirror::detect_in(d, &settings.mirror)),
            ),
            None => (None, None),
        };
        drop(self.digest);
        Built {
            summary: self.summary.map(|s| s.finish(stats)),
            clusters: c,
            mirrors: m,
        }
    }
}

/// One report in one format, as a string, from records in memory.
pub fn render(
    kind: ReportKind,
    format: Format,
    records: &[PageRecord],
    settings: &Settings,
    stats: Option<&CrawlStats>,
) -> Result<String> {
    let mut b = ReportBuilder::new(Wanted::of(kind));
    for r in records {
        b.add(r);
    }
    let mut out = Vec::new();
    write_one(kind, format, b, settings, stats, &mut out)?;
    String::from_utf8(out).map_err(|e| Error::Internal(format!("report text: {e}")))
}

/// Build one report and write it to `out` (a report is written as it is
/// made, never held whole: see the module docs on memory).
fn write_one(
    kind: ReportKind,
    format: Format,
    b: ReportBuilder,
    settings: &Settings,
    stats: Option<&CrawlStats>,
    out: &mut dyn Write,
) -> Result<()> {
    let missing = || Error::Internal(format!("{} report not built", kind.name()));
    let written = match kind {
        ReportKind::Summary => {
            let s = b.summary.ok_or_else(missing)?.finish(stats.cloned());
            Report::Summary(&s).write(format, out)
        }
        ReportKind::Clusters => {
            let d = b.digest.ok_or_else(missing)?;
            Report::Clusters(&clusters::Plan::new(&d)).write(format, out)
        }
        ReportKind::Mirrors => {
            let d = b.digest.ok_or_else(missing)?;
            Report::Mirrors(&mirror::detect_in(&d, &settings.mirror)).write(format, out)
        }
    };
    written.map_err(|e| Error::io("report output", e))
}

/// One built report.
enum Report<'a> {
    Summary(&'a summary::Summary),
    Clusters(&'a clusters::Plan<'a>),
    Mirrors(&'a mirror::MirrorReport),
}

impl Report<'_> {
    /// Write it in `format`. The clusters' size follows the crawl's, so
    /// they go out a row or a field at a time; the summary's and the
    /// mirrors' follow the hosts', and are written from a string.
    fn write(&self, format: Format, out: &mut dyn Write) -> std::io::Result<()> {
        match (self, format) {
            (Report::Summary(s), Format::Json) => json(*s, out),
            (Report::Summary(s), Format::Csv) => out.write_all(summary::hosts_csv(s).as_bytes()),
            (Report::Summary(s), Format::Html) => out.write_all(html::summary_page(s).as_bytes()),
            (Report::Clusters(c), Format::Json) => json(*c, out),
            (Report::Clusters(c), Format::Csv) => clusters::write_csv(c, out),
            (Report::Clusters(c), Format::Html) => html::write_clusters_page(c, out),
            (Report::Mirrors(m), Format::Json) => json(*m, out),
            (Report::Mirrors(m), Format::Csv) => out.write_all(mirrors_csv(m).as_bytes()),
            (Report::Mirrors(m), Format::Html) => out.write_all(html::mirrors_page(m).as_bytes()),
        }
    }
}

/// Pretty JSON of a report, then a line break.
fn json<T: Serialize>(v: &T, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    out.write_all(b"\n")
}

/// One report of a stored crawl directory (what `simcrawl report` prints),
/// reading its log as a stream and writing the report to `out` as it is
/// made.
pub fn render_crawl(
    kind: ReportKind,
    format: Format,
    dir: &Path,
    settings: &Settings,
    out: &mut dyn Write,
) -> Result<()> {
    let data = CrawlData::load(dir)?;
    let mut b = ReportBuilder::new(Wanted::of(kind));
    b.add_log(data.records()?)?;
    write_one(kind, format, b, settings, data.stats.as_ref(), out)
}

/// The files [`write_all`] wrote.
#[derive(Debug, Clone, Default)]
pub struct ReportPaths {
    /// `DIR/reports/`.
    pub dir: PathBuf,
    /// Every file written, in writing order.
    pub files: Vec<PathBuf>,
}

/// The reports written by [`write_all`]: (kind, format) pairs.
pub const ALL_REPORTS: [(ReportKind, Format); 8] = [
    (ReportKind::Summary, Format::Json),
    (ReportKind::Summary, Format::Csv),
    (ReportKind::Summary, Format::Html),
    (ReportKind::Clusters, Format::Json),
    (ReportKind::Clusters, Format::Html),
    (ReportKind::Mirrors, Format::Json),
    (ReportKind::Mirrors, Format::Csv),
    (ReportKind::Mirrors, Format::Html),
];

/// Write every report of a crawl to `DIR/reports/` (summary.{json,csv,html},
/// clusters.{json,html}, mirrors.{json,csv,html}) from records in memory;
/// reads the optional `DIR/crawl_stats.json`. Each report is computed once.
pub fn write_all(dir: &Path, records: &[PageRecord], settings: &Settings) -> Result<ReportPaths> {
    let mut b = ReportBuilder::new(Wanted::ALL);
    for r in records {
        b.add(r);
    }
    write_built(dir, b, settings)
}

/// [`write_all`] from the crawl's own `DIR/pages.jsonl`, read as a stream:
/// what the crawl calls when it ends.
pub fn write_from_log(dir: &Path, settings: &Settings) -> Result<ReportPaths> {
    let mut b = ReportBuilder::new(Wanted::ALL);
    b.add_log(crawllog::records_of(&CrawlDir::new(dir).logs())?)?;
    write_built(dir, b, settings)
}

fn write_built(dir: &Path, b: ReportBuilder, settings: &Settings) -> Result<ReportPaths> {
    let out = CrawlDir::new(dir).reports();
    std::fs::create_dir_all(&out).map_err(|e| Error::io(&out, e))?;
    let stats = read_crawl_stats(dir)?;
    let (Some(summary), Some(digest)) = (b.summary, b.digest) else {
        return Err(Error::Internal("reports not built".into()));
    };
    let mut paths = ReportPaths {
        dir: out.clone(),
        files: Vec::new(),
    };
    // One report at a time beside the digest: each is built, written in
    // its formats and dropped before the next is built.
    let mut write = |kind: ReportKind, report: Report| -> Result<()> {
        for (_, format) in ALL_REPORTS.iter().filter(|(k, _)| *k == kind) {
            let path = out.join(format!("{}.{}", kind.name(), format.ext()));
            let written = std::fs::File::create(&path).and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                report.write(*format, &mut w)?;
                w.flush()
            });
            written.map_err(|e| Error::io(&path, e))?;
            paths.files.push(path);
        }
        Ok(())
    };
    write(ReportKind::Summary, Report::Summary(&summary.finish(stats)))?;
    write(ReportKind::Clusters, Report::Clusters(&clusters::Plan::new(&digest)))?;
    write(
        ReportKind::Mirrors,
        Report::Mirrors(&mirror::detect_in(&digest, &settings.mirror)),
    )?;
    Ok(paths)
}

/// One CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV line from fields (already formatted), CRLF-free (`\n`).
pub fn csv_line(out: &mut String, fields: &[&str]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&csv_field(f));
    }
    out.push('\n');
}

/// Format an optional number for CSV (empty when absent).
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The mirror pairs as CSV, one row per pair.
pub fn mirrors_csv(m: &mirror::MirrorReport) -> String {
    let mut out = String::new();
    csv_line(
        &mut out,
        &[
            "host_a", "prefix_a", "host_b", "prefix_b", "kind", "compared", "exact", "near", "differ", "only_a",
            "only_b", "score", "coverage", "support",
        ],
    );
    for p in &m.pairs {
        let nums = [p.compared, p.exact, p.near, p.differ, p.only_a, p.only_b].map(|n| n.to_string());
        let (score, coverage, support) = (
            format!("{:.4}", p.score),
            format!("{:.4}", p.coverage),
            p.support.to_string(),
        );
        let mut row = vec![
            p.host_a.as_str(),
            p.prefix_a.as_str(),
            p.host_b.as_str(),
            p.prefix_b.as_str(),
            p.kind.as_str(),
        ];
        row.extend(nums.iter().map(String::as_str));
        row.extend([score.as_str(), coverage.as_str(), support.as_str()]);
        csv_line(&mut out, &row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        let mut s = String::new();
        csv_line(&mut s, &["1", "x\ny"]);
        assert_eq!(s, "1,\"x\ny\"\n");
    }
}
