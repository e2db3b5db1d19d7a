//! The crawl log (pipeline: written by the crawl loop, read by reports,
//! `explain` and `eval`): one [`PageRecord`] per fetch attempt, as
//! `DIR/pages.jsonl` (a contract: field meanings in docs/reports.md).

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::{Change, Decision, ScoreComponents};

/// One fetch attempt, as a line of `pages.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageRecord {
    /// The absolute URL requested (the canonical form of the link).
    pub url: String,
    /// The link as written on the parent page (or the `Location` header of a
    /// redirect), when it differs from `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Its canonical form (the seen-set key).
    pub canonical: String,
    /// The URL the content came from after redirects (same as `canonical` without).
    pub final_url: String,
    /// HTTP status (0 when no response was received).
    pub status: u16,
    /// Link hops from a seed.
    pub depth: u32,
    /// Canonical URL of the page the link was found on (None for seeds).
    pub parent: Option<String>,
    /// RFC 3339 UTC time the fetch started.
    pub fetched_at: String,
    /// Body bytes read.
    pub bytes: u64,
    /// Media type of the response, lower-cased, no parameters.
    pub content_type: Option<String>,
    /// BLAKE3 of the raw body, hex.
    pub content_hash: Option<String>,
    /// BLAKE3 of the normalized visible text, hex.
    pub text_hash: Option<String>,
    /// 64-bit simhash, 16 lowercase hex digits.
    pub simhash: Option<String>,
    /// What was decided.
    pub decision: Decision,
    /// Canonical URL of the page this one duplicates.
    pub dup_of: Option<String>,
    /// Hamming distance to `dup_of` (0 for exact duplicates).
    pub distance: Option<u32>,
    /// Content-shingle resemblance to `dup_of` that confirmed a near
    /// duplicate (`[dedup] verify`), 0..=1.
    #[serde(default)]
    pub resemblance: Option<f64>,
    /// For a new page: an earlier page with the very same fingerprint (only
    /// numbers or stop words differ; a link in a duplicate chain).
    #[serde(default)]
    pub looks_like: Option<String>,
    /// Priority the URL had when it was taken from the frontier.
    pub priority: f64,
    /// The priority's parts.
    pub score: ScoreComponents,
    /// Response time in milliseconds (headers and body).
    pub latency_ms: Option<u64>,
    /// The politeness delay applied before this request to its host, ms.
    pub delay_ms: Option<u64>,
    /// robots.txt verdict for the URL: "allow" or "disallow".
    pub robots: Option<String>,
    /// Error or reason text (for error, too_large, disallowed, ...).
    pub error: Option<String>,
    /// Out-links found on the page (after scope checks).
    #[serde(default)]
    pub outlinks: u32,
    /// Topic relevance of the page (focused crawls).
    #[serde(default)]
    pub relevance: Option<f64>,
    /// The server address the request went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ip: Option<String>,
    /// How long the request waited for one of its server address's slots
    /// (`[politeness] max_in_flight_per_ip`), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_wait_ms: Option<u64>,
    /// A revisit (recrawl round): which fetch of this URL the record is
    /// (2 for the first revisit). Absent on a first fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisit: Option<u32>,
    /// A revisit that got content or a 304: what it found against the
    /// previous fetch (`unchanged`, `near_unchanged`, `changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// A revisit: Hamming distance between the new and the previous simhash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_distance: Option<u32>,
    /// A revisit: the page's revisit interval after it, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_secs: Option<u64>,
    /// The page's id in the crawl store (a revisit keeps its page's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_id: Option<u64>,
}

/// Beside a `pages.jsonl`: the page ids of records in the crawl's logs that
/// the store does not hold, one decimal id per line. A worker of a shared
/// crawl writes them: the pages another worker decided and stopped before
/// recording (forgotten when the host passes on), and its own pages that
/// another worker recorded first (after a stall). The readers of the logs
/// ([`records_of`]) leave those records out.
pub const VOIDED_FILE: &str = "voided.txt";

/// Appends page ids to a [`VOIDED_FILE`] (created on the first).
pub struct VoidedWriter {
    path: std::path::PathBuf,
    out: Option<std::fs::File>,
}

impl VoidedWriter {
    /// For the log `log` (the file goes beside it).
    pub fn beside(log: &Path) -> Self {
        VoidedWriter {
            path: log.with_file_name(VOIDED_FILE),
            out: None,
        }
    }

    /// Append `ids` (each written through to the file at once).
    pub fn void(&mut self, ids: &[u64]) -> std::io::Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        if self.out.is_none() {
            self.out = Some(std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?);
        }
        let mut text = String::new();
        for id in ids {
            text.push_str(&id.to_string());
            text.push('\n');
        }
        self.out.as_mut().expect("opened").write_all(text.as_bytes())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The ids in the [`VOIDED_FILE`]s beside `logs` (a line that is not an id,
/// such as one cut short by a kill, is skipped).
fn voided_beside(logs: &[std::path::PathBuf]) -> Result<std::collections::HashSet<u64>, LogError> {
    let mut ids = std::collections::HashSet::new();
    for log in logs {
        let path = log.with_file_name(VOIDED_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => ids.extend(text.lines().filter_map(|l| l.trim().parse::<u64>().ok())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(LogError::Io { path, source }),
        }
    }
    Ok(ids)
}

/// Appends [`PageRecord`]s to a `pages.jsonl` file, one JSON object per line.
pub struct CrawlLogWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> CrawlLogWriter<W> {
    /// Wrap a writer (use a `BufWriter` around a file).
    pub fn new(out: W) -> Self {
        CrawlLogWriter {
            out,
            line: Vec::with_capacity(512),
        }
    }

    /// Append one record as a line.
    pub fn write(&mut self, rec: &PageRecord) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, rec).map_err(std::io::Error::other)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Why a crawl log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The log file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line other than the last is not a record.
    #[error("{}:{line}: bad record: {message}", path.display())]
    BadRecord {
        /// The log file.
        path: std::path::PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the JSON parser said.
        message: String,
    },
}

/// Read every record of a `pages.jsonl` into memory (small logs and tests;
/// the reports read the log as a stream with [`records`]). A truncated last
/// line (a killed crawl) is skipped; any other bad line is an error naming
/// its line number.
pub fn read_log(path: &Path) -> Result<Vec<PageRecord>, LogError> {
    records(path)?.collect()
}

/// The records of a `pages.jsonl`, one at a time, in log order: memory does
/// not grow with the log. Same tolerance as [`read_log`]: a bad last line is
/// skipped, any other bad line ends the stream with a
/// [`LogError::BadRecord`] naming its line.
pub fn records(path: &Path) -> Result<LogRecords, LogError> {
    records_of(std::slice::from_ref(&path.to_path_buf()))
}

/// [`records`] of several logs, one after the other (the workers' logs of
/// a shared crawl, `DIR/worker-N/pages.jsonl`); each is read with the same
/// tolerance. At least one path is needed. Records whose page id is in a
/// [`VOIDED_FILE`] beside any of the logs are left out.
pub fn records_of(paths: &[std::path::PathBuf]) -> Result<LogRecords, LogError> {
    let Some((first, rest)) = paths.split_first() else {
        return Err(LogError::Io {
            path: std::path::PathBuf::new(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no crawl log"),
        });
    };
    Ok(LogRecords {
        voided: voided_beside(paths)?,
        path: first.clone(),
        lines: open_log(first)?,
        line: String::new(),
        next: String::new(),
        has_next: false,
        number: 0,
        done: false,
        rest: rest.iter().rev().cloned().collect(),
    })
}

fn open_log(path: &Path) -> Result<std::io::BufReader<std::fs::File>, LogError> {
    let file = std::fs::File::open(path).map_err(|source| LogError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(std::io::BufReader::with_capacity(1 << 16, file))
}

/// The iterator of [`records`]: yields each record of the log, or the
/// first error (then ends).
pub struct LogRecords {
    path: std::path::PathBuf,
    lines: std::io::BufReader<std::fs::File>,
    /// The line being parsed, and the one read after it (to know whether a
    /// bad line is the last one).
    line: String,
    next: String,
    has_next: bool,
    /// 1-based number of `line`.
    number: usize,
    done: bool,
    /// Logs still to read, last first.
    rest: Vec<std::path::PathBuf>,
    /// Page ids whose records are left out.
    voided: std::collections::HashSet<u64>,
}

impl LogRecords {
    /// Read one line into `buf` (without its line break); false at the end.
    fn read_line(&mut self, into_next: bool) -> Result<bool, LogError> {
        let buf = if into_next { &mut self.next } else { &mut self.line };
        buf.clear();
        let n = self.lines.read_line(buf).map_err(|source| LogError::Io {
            path: self.path.clone(),
            source,
        })?;
        if buf.ends_with('\n') {
            buf.pop();
            if buf.ends_with('\r') {
                buf.pop();
            }
        }
        Ok(n > 0)
    }

    fn advance(&mut self) -> Result<Option<PageRecord>, LogError> {
        loop {
            if self.has_next {
                std::mem::swap(&mut self.line, &mut self.next);
                self.has_next = false;
            } else if !self.read_line(false)? {
                match self.rest.pop() {
                    Some(path) => {
                        self.lines = open_log(&path)?;
                        self.path = path;
                        self.number = 0;
                        continue;
                    }
                    None => return Ok(None),
                }
            }
            self.number += 1;
            if self.line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<PageRecord>(&self.line) {
                Ok(rec) if rec.page_id.is_some_and(|id| self.voided.contains(&id)) => continue,
                Ok(rec) => return Ok(Some(rec)),
                Err(e) => {
                    // A bad last line is a record cut short by a kill.
                    self.has_next = self.read_line(true)?;
                    if !self.has_next {
                        // The last line of this log: the next log, if any.
                        continue;
                    }
                    return Err(LogError::BadRecord {
                        path: self.path.clone(),
                        line: self.number,
                        message: e.to_string(),
                    });
                }
            }
        }
    }
}

impl Iterator for LogRecords {
    type Item = Result<PageRecord, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.advance().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voided_records_are_left_out_of_every_log_read_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("w1"), dir.path().join("w2"));
        let rec = |url: &str, id: u64| PageRecord {
            url: url.into(),
            canonical: url.into(),
            page_id: Some(id),
            ..PageRecord::default()
        };
        for (d, recs) in [
            (&a, vec![rec("http://x/1", 1), rec("http://x/2", 2)]),
            (&b, vec![rec("http://x/2", 7)]),
        ] {
            std::fs::create_dir_all(d).unwrap();
            let mut w = CrawlLogWriter::new(std::fs::File::create(d.join("pages.jsonl")).unwrap());
            for r in &recs {
                w.write(r).unwrap();
            }
        }
        // Worker 2 took x/2 over from worker 1, which never recorded it.
        let mut v = VoidedWriter::beside(&b.join("pages.jsonl"));
        v.void(&[2]).unwrap();
        v.void(&[]).unwrap();
        let logs = [a.join("pages.jsonl"), b.join("pages.jsonl")];
        let ids: Vec<_> = records_of(&logs).unwrap().map(|r| r.unwrap().page_id).collect();
        assert_eq!(ids, vec![Some(1), Some(7)]);
        // Worker 1's log alone is read whole (its own file voids nothing).
        assert_eq!(read_log(&logs[0]).unwrap().len(), 2);
        // A line cut short by a kill is skipped.
        std::fs::write(b.join(VOIDED_FILE), "2\n1").unwrap();
        std::fs::write(a.join(VOIDED_FILE), "12x").unwrap();
        assert_eq!(records_of(&logs).unwrap().count(), 1);
    }

    #[test]
    fn round_trip_and_truncated_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.jsonl");
        let rec = PageRecord {
            url: "http://a.test/x".into(),
            canonical: "http://a.test/x".into(),
            decision: Decision::NearDuplicate,
            dup_of: Some("http://b.test/x".into()),
            distance: Some(2),
            ..Default::default()
        };
        let mut w = CrawlLogWriter::new(std::fs::File::create(&path).unwrap());
        w.write(&rec).unwrap();
        w.write(&rec).unwrap();
        w.flush().unwrap();
        drop(w);
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"url\":\"http://a.te").unwrap();
        let back = read_log(&path).unwrap();
        assert_eq!(back, vec![rec.clone(), rec]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"decision\":\"near_duplicate\""));
    }

    #[test]
    fn several_logs_read_as_one() {
        // A worker's log cut short by a kill, then another worker's, as
        // `DIR/worker-N/pages.jsonl` in a shared crawl.
        let dir = tempfile::tempdir().unwrap();
        let one = |u: &str| PageRecord {
            url: u.into(),
            canonical: u.into(),
            ..Default::default()
        };
        let line = |u: &str| serde_json::to_string(&one(u)).unwrap();
        let layout = crate::model::CrawlDir::new(dir.path());
        for (n, text) in [
            (2, format!("{}\n{{\"url\":\"http://a.te", line("http://a.test/2"))),
            (10, format!("{}\n", line("http://a.test/10"))),
            (
                1,
                format!("{}\n{}\n", line("http://a.test/1a"), line("http://a.test/1b")),
            ),
        ] {
            std::fs::create_dir_all(layout.worker(n)).unwrap();
            std::fs::write(layout.worker(n).join("pages.jsonl"), text).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("worker-x")).unwrap();
        let logs = layout.logs();
        assert_eq!(logs.len(), 3, "{logs:?}");
        let urls: Vec<String> = records_of(&logs).unwrap().map(|r| r.unwrap().url).collect();
        assert_eq!(
            urls,
            [
                "http://a.test/1a",
                "http://a.test/1b",
                "http://a.test/2",
                "http://a.test/10"
            ]
        );
        // A crawl's own log is read alone.
        std::fs::write(layout.log(), format!("{}\n", line("http://a.test/own"))).unwrap();
        assert_eq!(layout.logs(), vec![layout.log()]);
        assert!(records_of(&[]).is_err());
    }

    #[test]
    fn stream_names_a_bad_middle_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.jsonl");
        let good = serde_json::to_string(&PageRecord::default()).unwrap();
        std::fs::write(&path, format!("{good}\n\n{{bad\n{good}\n")).unwrap();
        let got: Vec<_> = records(&path).unwrap().collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        match &got[1] {
            Err(LogError::BadRecord { line, .. }) => assert_eq!(*line, 3),
            other => panic!("{other:?}"),
        }
        // A bad line followed only by an empty line is not the last line.
        std::fs::write(&path, format!("{good}\r\n{{bad\n\n")).unwrap();
        assert!(matches!(read_log(&path), Err(LogError::BadRecord { line: 2, .. })));
        std::fs::write(&path, format!("{good}\r\n{good}\n{{bad")).unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 2);
    }
}
