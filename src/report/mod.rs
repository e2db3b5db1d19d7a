//! Reports (pipeline: the end, after the crawl log): crawl summary, duplicate
//! clusters and mirror report, built from `DIR/pages.jsonl` alone so they can
//! be regenerated from a stored crawl without re-crawling. Formats: JSON
//! (field names documented in docs/reports.md), CSV for tables, and one
//! self-contained HTML page per report (no network, no external assets).
//!
//! The crawl calls [`write_all`] when it ends; `simcrawl report` calls
//! [`render_crawl`].

pub mod clusters;
pub mod explain;
pub mod html;
pub mod summary;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Settings;
use crate::crawllog::{read_log, PageRecord};
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

/// A stored crawl's records and counters.
pub struct CrawlData {
    /// Every record of `pages.jsonl`.
    pub records: Vec<PageRecord>,
    /// `crawl_stats.json`, if the crawl wrote one.
    pub stats: Option<CrawlStats>,
}

impl CrawlData {
    /// Read `DIR/pages.jsonl` (required) and `DIR/crawl_stats.json` (optional).
    pub fn load(dir: &Path) -> Result<CrawlData> {
        let log = CrawlDir::new(dir).log();
        if !log.is_file() {
            return Err(Error::InvalidInput(format!(
                "{}: not a crawl directory (no pages.jsonl)",
                dir.display()
            )));
        }
        Ok(CrawlData {
            records: read_log(&log)?,
            stats: read_crawl_stats(dir)?,
        })
    }
}

/// One report in one format, as a string.
pub fn render(
    kind: ReportKind,
    format: Format,
    records: &[PageRecord],
    settings: &Settings,
    stats: Option<&CrawlStats>,
) -> Result<String> {
    let json = |v: &dyn erased::Json| v.to_json();
    Ok(match kind {
        ReportKind::Summary => {
            let s = summary::build(records, stats.cloned());
            match format {
                Format::Json => json(&s)?,
                Format::Csv => summary::hosts_csv(&s),
                Format::Html => html::summary_page(&s),
            }
        }
        ReportKind::Clusters => {
            let c = clusters::build(records);
            match format {
                Format::Json => json(&c)?,
                Format::Csv => clusters::csv(&c),
                Format::Html => html::clusters_page(&c),
            }
        }
        ReportKind::Mirrors => {
            let m = mirror::detect(records, &settings.mirror);
            match format {
                Format::Json => json(&m)?,
                Format::Csv => mirrors_csv(&m),
                Format::Html => html::mirrors_page(&m),
            }
        }
    })
}

/// One report of a stored crawl directory (what `simcrawl report` prints).
pub fn render_crawl(kind: ReportKind, format: Format, dir: &Path, settings: &Settings) -> Result<String> {
    let data = CrawlData::load(dir)?;
    render(kind, format, &data.records, settings, data.stats.as_ref())
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
/// clusters.{json,html}, mirrors.{json,csv,html}); reads the optional
/// `DIR/crawl_stats.json`. Each report is computed once.
pub fn write_all(dir: &Path, records: &[PageRecord], settings: &Settings) -> Result<ReportPaths> {
    let out = CrawlDir::new(dir).reports();
    std::fs::create_dir_all(&out).map_err(|e| Error::io(&out, e))?;
    let stats = read_crawl_stats(dir)?;
    let s = summary::build(records, stats);
    let c = clusters::build(records);
    let m = mirror::detect(records, &settings.mirror);
    let mut paths = ReportPaths {
        dir: out.clone(),
        files: Vec::new(),
    };
    for (kind, format) in ALL_REPORTS {
        let text = match (kind, format) {
            (ReportKind::Summary, Format::Json) => erased::Json::to_json(&s)?,
            (ReportKind::Summary, Format::Csv) => summary::hosts_csv(&s),
            (ReportKind::Summary, Format::Html) => html::summary_page(&s),
            (ReportKind::Clusters, Format::Json) => erased::Json::to_json(&c)?,
            (ReportKind::Clusters, Format::Csv) => clusters::csv(&c),
            (ReportKind::Clusters, Format::Html) => html::clusters_page(&c),
            (ReportKind::Mirrors, Format::Json) => erased::Json::to_json(&m)?,
            (ReportKind::Mirrors, Format::Csv) => mirrors_csv(&m),
            (ReportKind::Mirrors, Format::Html) => html::mirrors_page(&m),
        };
        let path = out.join(format!("{}.{}", kind.name(), format.ext()));
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        paths.files.push(path);
    }
    Ok(paths)
}

mod erased {
    //! Pretty JSON of any report without monomorphizing `render` per type.
    pub trait Json {
        fn to_json(&self) -> crate::error::Result<String>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> crate::error::Result<String> {
            let mut s = serde_json::to_string_pretty(self)
                .map_err(|e| crate::error::Error::Internal(format!("report serialization: {e}")))?;
            s.push('\n');
            Ok(s)
        }
    }
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
