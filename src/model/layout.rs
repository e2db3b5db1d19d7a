//! The layout of a crawl's output directory (a contract: docs/reports.md).
//!
//! ```text
//! DIR/
//!   pages.jsonl          one record per fetch attempt
//!   sitemaps.jsonl       one record per sitemap file (when any was read)
//!   crawl_stats.json     counts and rates of the crawl
//!   settings.toml        the settings the crawl ran with
//!   store/               the crawl store (frontier, seen-set, pages)
//!   index/tables.bin     the near-duplicate index snapshot (and, while
//!                        the crawl runs, its sketches and spilled maps)
//!   reports/             summary, clusters and mirror reports
//!   warc/                WARC/1.1 files, when `output.warc` is on
//!   worker-N/            a shared crawl's workers (`simcrawl crawl
//!                        --workers`): each a directory as above
//! ```

use std::path::{Path, PathBuf};

/// A crawl's output directory and the paths of what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlDir {
    root: PathBuf,
}

impl CrawlDir {
    /// The crawl log's file name.
    pub const LOG_FILE: &'static str = "pages.jsonl";
    /// The store's directory name.
    pub const STORE_DIR: &'static str = "store";
    /// The index snapshot, relative to the root.
    pub const INDEX_SNAPSHOT: &'static str = "index/tables.bin";
    /// The sitemap log's file name.
    pub const SITEMAPS_FILE: &'static str = "sitemaps.jsonl";
    /// The crawl statistics file name.
    pub const STATS_FILE: &'static str = "crawl_stats.json";
    /// The reports' directory name.
    pub const REPORTS_DIR: &'static str = "reports";
    /// The WARC files' directory name.
    pub const WARC_DIR: &'static str = "warc";
    /// The prefix of a worker's directory (`worker-N`) in a shared crawl.
    pub const WORKER_PREFIX: &'static str = "worker-";

    /// The layout under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        CrawlDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `DIR/pages.jsonl`.
    pub fn log(&self) -> PathBuf {
        self.root.join(Self::LOG_FILE)
    }

    /// The crawl logs of the directory: `DIR/pages.jsonl`, or, for a crawl
    /// that several workers shared (`simcrawl crawl --workers`), each
    /// `DIR/worker-N/pages.jsonl` in the order of N. Empty when there is
    /// none.
    pub fn logs(&self) -> Vec<PathBuf> {
        let own = self.log();
        if own.is_file() {
            return vec![own];
        }
        let mut workers: Vec<(u64, PathBuf)> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let n = name.to_str()?.strip_prefix(Self::WORKER_PREFIX)?.parse().ok()?;
                let log = e.path().join(Self::LOG_FILE);
                log.is_file().then_some((n, log))
            })
            .collect();
        workers.sort();
        workers.into_iter().map(|(_, p)| p).collect()
    }

    /// `DIR/worker-N`: worker N's own directory in a shared crawl.
    pub fn worker(&self, n: u16) -> PathBuf {
        self.root.join(format!("{}{n}", Self::WORKER_PREFIX))
    }

    /// `DIR/store`.
    pub fn store(&self) -> PathBuf {
        self.root.join(Self::STORE_DIR)
    }

    /// `DIR/index/tables.bin`.
    pub fn index_snapshot(&self) -> PathBuf {
        self.root.join(Self::INDEX_SNAPSHOT)
    }

    /// `DIR/sitemaps.jsonl`.
    pub fn sitemaps(&self) -> PathBuf {
        self.root.join(Self::SITEMAPS_FILE)
    }

    /// `DIR/crawl_stats.json`.
    pub fn stats(&self) -> PathBuf {
        self.root.join(Self::STATS_FILE)
    }

    /// `DIR/reports`.
    pub fn reports(&self) -> PathBuf {
        self.root.join(Self::REPORTS_DIR)
    }

    /// `DIR/warc`.
    pub fn warc(&self) -> PathBuf {
        self.root.join(Self::WARC_DIR)
    }
}

#[cfg(test)]
mod tests {
    use super::CrawlDir;

    #[test]
    fn paths_are_under_the_root() {
        let d = CrawlDir::new("/c");
        assert_eq!(d.log().to_str(), Some("/c/pages.jsonl"));
        assert_eq!(d.store().to_str(), Some("/c/store"));
        assert_eq!(d.index_snapshot().to_str(), Some("/c/index/tables.bin"));
        assert_eq!(d.stats().to_str(), Some("/c/crawl_stats.json"));
        assert_eq!(d.reports().to_str(), Some("/c/reports"));
        assert_eq!(d.warc().to_str(), Some("/c/warc"));
    }
}
