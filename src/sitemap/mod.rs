//! Sitemaps (pipeline: beside robots.txt, before the frontier): reading a
//! sitemap file and scoring its entries. The crawl loop (`src/crawl/sitemaps.rs`)
//! fetches the files through politeness and offers their URLs to the
//! frontier; this module holds what needs no network:
//!
//! - [`parse`]: one file as fetched → [`Parsed`]. gzip is recognised by its
//!   magic bytes and decompressed as it is read; XML is read with quick-xml's
//!   streaming reader (`<urlset>` of `<url>`, `<sitemapindex>` of
//!   `<sitemap>`, each with `<loc>`, `<lastmod>`, `<changefreq>`,
//!   `<priority>`; elements matched by local name, so any namespace prefix
//!   works, and extension elements such as `<image:loc>` are not taken for
//!   the entry's own); anything that does not start with `<` is a text
//!   sitemap, one URL per line. The protocol's limits are kept:
//!   [`Limits::max_entries`] entries and [`Limits::max_bytes`] uncompressed
//!   bytes per file (a gzip bomb stops there; memory stays bounded by the
//!   limit); broken XML keeps the entries read before the error.
//! - [`score`]: an entry's frontier component, `priority + freshness`.
//! - [`SitemapRecord`]: one line of `DIR/sitemaps.jsonl`, what became of
//!   one sitemap file; [`SitemapTotals`] sums them for the crawl summary.
//!
//! quick-xml rather than a sitemap crate: the crates that parse sitemaps
//! either read the whole document into memory or are young and little
//! used; the limits above are a few lines over a streaming reader.

mod parse;
mod score;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use parse::parse;
pub use score::{days_since_epoch, score, DEFAULT_PRIORITY};

/// How much of one file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries (URLs, or sitemaps of an index) kept; reading stops at the next one.
    pub max_entries: usize,
    /// Uncompressed bytes read.
    pub max_bytes: u64,
}

impl Default for Limits {
    /// The protocol's: 50,000 entries and 50 MiB.
    fn default() -> Self {
        Limits {
            max_entries: 50_000,
            max_bytes: 50 * 1024 * 1024,
        }
    }
}

/// What kind of sitemap a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `<urlset>`: page URLs.
    #[serde(rename = "urlset")]
    UrlSet,
    /// `<sitemapindex>`: URLs of further sitemaps.
    Index,
    /// Plain text, one URL per line.
    Text,
}

/// Why reading a file stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cut {
    /// [`Limits::max_entries`] entries were read and more followed.
    #[serde(rename = "max_urls_per_file")]
    MaxEntries,
    /// [`Limits::max_bytes`] uncompressed bytes were read and more followed.
    #[serde(rename = "max_file_bytes")]
    MaxBytes,
}

/// One `<url>` or `<sitemap>` entry (or text line), fields as written
/// (trimmed, entities resolved).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// `<loc>`: the URL.
    pub loc: String,
    /// `<lastmod>`: a W3C datetime.
    pub lastmod: Option<String>,
    /// `<changefreq>`: always, hourly, daily, weekly, monthly, yearly, never.
    pub changefreq: Option<String>,
    /// `<priority>`: 0.0 to 1.0.
    pub priority: Option<String>,
}

/// What reading one file gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The format; None when not even the root element could be read.
    pub format: Option<Format>,
    /// The file was gzip-compressed.
    pub gzip: bool,
    /// The entries read, in file order: page URLs, or sitemap URLs of an index.
    pub entries: Vec<Entry>,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Why reading stopped early, when a limit stopped it.
    pub cut: Option<Cut>,
    /// Why reading failed (broken XML or gzip, not a sitemap); the entries
    /// before the failure are kept.
    pub error: Option<String>,
    /// Entries without a usable `<loc>` and text lines that are not http(s) URLs.
    pub skipped: u64,
}

/// Where a sitemap's URL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A `Sitemap:` line of a robots.txt.
    Robots,
    /// `/sitemap.xml` of a seed origin (`[sitemaps] root_sitemap`).
    Root,
    /// A `<sitemap>` entry of a sitemap index.
    Index,
    /// The target of a sitemap URL's redirect.
    Redirect,
}

/// What became of one sitemap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Read to its end.
    Read,
    /// Read up to a limit (`cut` says which).
    Cut,
    /// Read up to broken XML or gzip (`reason`); the entries before it were used.
    Broken,
    /// Fetched, but no sitemap: HTTP error, network error, redirect (the
    /// target is a record of its own), not a sitemap.
    Failed,
    /// Not fetched (`reason`: out of scope, robots.txt, another host, the
    /// per-host cap, nested too deep, already read).
    Skipped,
}

/// One line of `DIR/sitemaps.jsonl` (fields: docs/reports.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapRecord {
    /// The sitemap's URL.
    pub url: String,
    /// Where the URL came from.
    pub source: Source,
    /// The robots.txt, index or redirecting sitemap that named it (None for `/sitemap.xml`).
    pub parent: Option<String>,
    /// Index levels above it (0 for a sitemap named by robots.txt or `/sitemap.xml`).
    pub nesting: u32,
    /// What became of it.
    pub outcome: Outcome,
    /// Why it was skipped, failed or broken.
    pub reason: Option<String>,
    /// HTTP status (0: no request).
    pub status: u16,
    /// When the response arrived (RFC 3339), if a request was sent.
    pub fetched_at: Option<String>,
    /// The format read.
    pub format: Option<Format>,
    /// gzip-compressed.
    pub gzip: bool,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Which limit stopped the reading.
    pub cut: Option<Cut>,
    /// Entries read (URLs, or sitemaps of an index).
    pub entries: u64,
    /// Entries without a usable URL.
    pub skipped: u64,
    /// URLs queued as new.
    pub queued: u64,
    /// URLs already known (queued ones had their sitemap component raised).
    pub known: u64,
    /// URLs outside the crawl's scope or caught by its trap rules.
    pub out_of_scope: u64,
    /// URLs (or sitemaps) on another host than the sitemap's (and its robots.txt's).
    pub other_host: u64,
}

impl SitemapRecord {
    /// A record of `url` with nothing read yet.
    pub fn new(url: &str, source: Source, parent: Option<String>, nesting: u32) -> Self {
        SitemapRecord {
            url: url.to_string(),
            source,
            parent,
            nesting,
            outcome: Outcome::Skipped,
            reason: None,
            status: 0,
            fetched_at: None,
            format: None,
            gzip: false,
            bytes: 0,
            cut: None,
            entries: 0,
            skipped: 0,
            queued: 0,
            known: 0,
            out_of_scope: 0,
            other_host: 0,
        }
    }

    /// The record of a file that was not fetched.
    pub fn skipped(mut self, reason: impl Into<String>) -> Self {
        self.outcome = Outcome::Skipped;
        self.reason = Some(reason.into());
        self
    }
}

/// The sitemaps of a crawl run, summed over its [`SitemapRecord`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SitemapTotals {
    /// Files read (to their end, to a limit or to broken content).
    pub read: u64,
    /// Files read up to a limit.
    pub cut: u64,
    /// Files read up to broken content.
    pub broken: u64,
    /// Files fetched without a sitemap in the answer.
    pub failed: u64,
    /// Sitemap URLs not fetched.
    pub skipped: u64,
    /// Page URLs listed in the files read.
    pub urls: u64,
    /// Of those, URLs queued as new.
    pub queued: u64,
}

impl SitemapTotals {
    /// Count one record.
    pub fn add(&mut self, r: &SitemapRecord) {
        match r.outcome {
            Outcome::Read => self.read += 1,
            Outcome::Cut => {
                self.read += 1;
                self.cut += 1;
            }
            Outcome::Broken => {
                self.read += 1;
                self.broken += 1;
            }
            Outcome::Failed => self.failed += 1,
            Outcome::Skipped => self.skipped += 1,
        }
        if r.format != Some(Format::Index) {
            self.urls += r.entries;
        }
        self.queued += r.queued;
    }
}
