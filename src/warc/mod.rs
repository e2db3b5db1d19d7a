//! WARC output (pipeline: beside the crawl log, fed by the decider): every
//! HTTP exchange of a crawl as WARC/1.1 records (ISO 28500:2017) in
//! `DIR/warc/simcrawl-NNNNN.warc.gz`, when `output.warc` is on.
//!
//! # The format, briefly
//!
//! A WARC file is a sequence of records. A record is a version line
//! (`WARC/1.1`), named header fields (`WARC-Type`, `WARC-Record-ID`,
//! `WARC-Date`, `WARC-Target-URI`, `Content-Type`, `Content-Length`, ...),
//! an empty line, a *block* of exactly `Content-Length` bytes, and two CRLFs.
//! Each record here is compressed as its own gzip member, and the members
//! are concatenated: the file is a valid `.gz` as a whole, and a reader can
//! start decompressing at the offset of any record (what CDX indexes store).
//!
//! The records simcrawl writes, per file and per recorded page:
//!
//! - `warcinfo` (first record of every file): the software, the WARC format,
//!   the User-Agent and the robots policy, as `application/warc-fields`.
//!   Every other record names it in `WARC-Warcinfo-ID`.
//! - `response` (`application/http; msgtype=response`), for each fetch that
//!   got an HTTP response: the status line, the response headers and the
//!   body. The body is stored as the crawler used it, decompressed, so the
//!   `Content-Encoding` and `Transfer-Encoding` headers are left out and
//!   `Content-Length` is the length of the stored body. The status line
//!   says `HTTP/1.1` whatever version was spoken (the headers are the same).
//!   A body cut at `fetch.max_body_bytes` gets `WARC-Truncated: length`.
//! - `revisit` instead of `response` for an exact duplicate whose body is
//!   byte for byte one already written in this run (same SHA-1): profile
//!   `identical-payload-digest`, the response's status line and headers
//!   only, and `WARC-Refers-To` / `-Target-URI` / `-Date` naming the
//!   original response record.
//! - `request` (`application/http; msgtype=request`): the GET as sent,
//!   rebuilt from the URL and the crawler's fixed headers (`Host`,
//!   `User-Agent`, `Accept`, `Accept-Encoding`).
//! - `metadata` (`application/json`), for every page the crawl log records
//!   (also those without a response, such as `disallowed`): its decision,
//!   simhash, `dup_of`, Hamming distance and resemblance, as in
//!   `pages.jsonl`.
//!
//! Response and revisit records carry `WARC-Payload-Digest` (SHA-1 of the
//! body) and all records `WARC-Block-Digest` (SHA-1 of the block), both as
//! `sha1:` and base 32, the form `warcio check` and wayback tools verify.
//! `WARC-Concurrent-To` links a page's request and metadata records to its
//! response or revisit record.
//!
//! A file is closed, and the next one begun, when it holds at least
//! `output.warc_max_bytes` bytes (one page's records never straddle two
//! files). A resumed crawl starts a new file after the highest number
//! present; files are never appended to or overwritten.
//!
//! The format is written by hand with `flate2` (zlib-rs backend) and
//! `sha1`: the `warc` crate writes WARC/1.0 version lines by default and
//! compresses a whole file as one gzip stream (no reading from a record's
//! offset), and it pulls in `chrono` and `uuid` for what takes a few lines
//! here.
//!
//! Files: `record.rs` (one record's bytes: header fields, digests, record
//! ids, gzip member), `writer.rs` ([`WarcWriter`]: files, rotation, the
//! revisit index; [`WarcThread`]: the writer on a thread of its own),
//! `read.rs` ([`read_file`]: a small reader, for tests and tools;
//! [`read_body`]: one page's body at its [`BodyRef`](crate::model::BodyRef)).
//!
//! # Bodies
//!
//! The WARC files are where a crawl keeps its page bodies: the store holds
//! only each page's [`BodyRef`](crate::model::BodyRef) (file number, offset
//! and length of the gzip member of its response record; for a revisit,
//! the original's), which `--resume` (rebuilding host templates and content
//! sketches) and `simcrawl eval --crawl` read with [`read_body`]. The
//! decider hands each page to the writer thread as soon as it is decided;
//! the writer acknowledges it once its records are written and flushed to
//! the operating system ([`WarcThread::ack`]), and the group's store commit
//! waits for those acknowledgements and records the references in the same
//! batch as the pages. So every reference in the store points at bytes
//! already written; a crawl killed before a commit may leave records of
//! pages the store does not hold, which the resumed crawl fetches and
//! writes again.

mod read;
mod record;
mod writer;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::SystemTime;

pub use read::{read_body, read_file, WarcRecord};
pub use record::{sha1_base32, warc_date};
pub use writer::{WarcOptions, WarcStats, WarcThread, WarcWriter};

/// Why WARC output failed. A failure stops the crawl: its archive would be
/// incomplete.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    /// A WARC file or directory could not be created, written or read.
    #[error("WARC output {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file read back is not WARC as simcrawl writes it.
    #[error("{path}: not a WARC file simcrawl can read: {what}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What was wrong, and at which record.
        what: String,
    },
    /// The writer thread ended (it panicked, or could not be started).
    #[error("the WARC writer thread failed: {0}")]
    Thread(String),
}

/// One HTTP exchange: what a response (or revisit) record and its request
/// record are made of.
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    /// The URL requested (`WARC-Target-URI`).
    pub target_uri: String,
    /// When the request was sent (`WARC-Date`).
    pub date: Option<SystemTime>,
    /// The server's address (`WARC-IP-Address`).
    pub ip: Option<IpAddr>,
    /// HTTP status code.
    pub status: u16,
    /// The response headers as received (name, value). When empty (a
    /// fetcher that keeps no headers), `Content-Type` and `Location` are
    /// written from the two fields below.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The `Content-Type` value, used only when `headers` is empty.
    pub content_type: Option<String>,
    /// The `Location` value, used only when `headers` is empty.
    pub location: Option<String>,
    /// The body as received, decompressed.
    pub body: Vec<u8>,
    /// The body was cut at `fetch.max_body_bytes`.
    pub truncated: bool,
}

/// One recorded page: its exchange, if it got a response, and its metadata.
#[derive(Debug, Clone, Default)]
pub struct PageEntry {
    /// The page's id (echoed by [`WarcThread::ack`]).
    pub page: crate::model::PageId,
    /// The page's canonical URL (the metadata record's target when there
    /// is no exchange).
    pub uri: String,
    /// When the page was fetched (or recorded, without an exchange).
    pub date: Option<SystemTime>,
    /// The request and response, when an HTTP response arrived.
    pub exchange: Option<Exchange>,
    /// The page is an exact duplicate: written as a revisit record when an
    /// identical body was written before.
    pub exact_duplicate: bool,
    /// The metadata record's block: a JSON object.
    pub metadata: Vec<u8>,
}
