//! [`WarcWriter`]: the files of `DIR/warc/` (numbering, rotation, the
//! `warcinfo` record that opens each), a page's records, and the index of
//! bodies already written that turns an exact duplicate into a `revisit`;
//! [`WarcThread`]: the writer on a thread of its own, fed page by page.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use flate2::Compression;

use super::record::{self, Counting, RecordIds};
use super::{PageEntry, WarcError};
use crate::model::{BodyRef, PageId};

/// What a [`WarcWriter`] needs to know of the crawl.
#[derive(Debug, Clone)]
pub struct WarcOptions {
    /// A file is closed once it holds this many (compressed) bytes.
    pub max_file_bytes: u64,
    /// The User-Agent header of the crawler's requests.
    pub user_agent: String,
    /// Extra `warcinfo` fields (name, value), after `software` and `format`.
    pub info: Vec<(String, String)>,
    /// gzip level of every record (0..=9).
    pub level: u32,
}

/// What a writer wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarcStats {
    /// Files begun.
    pub files: u64,
    /// Records written, of every type.
    pub records: u64,
    /// Response records.
    pub responses: u64,
    /// Revisit records.
    pub revisits: u64,
    /// Compressed bytes written.
    pub bytes: u64,
}

/// The file prefix and suffix: `simcrawl-00000.warc.gz`.
const PREFIX: &str = "simcrawl-";
const SUFFIX: &str = ".warc.gz";

/// Bodies remembered for revisit records, at most this many (about 100
/// bytes each); an exact duplicate of a body not remembered is written in
/// full.
const ORIGINALS_MAX: usize = 1 << 20;

/// A response record written, for the revisits that refer to it.
#[derive(Debug)]
struct Original {
    id: Box<str>,
    uri: Box<str>,
    date: Box<str>,
    /// Where the response record is: a revisit's body is kept there.
    body: BodyRef,
}

/// A record's header fields and block parts, before it is written.
type PendingRecord<'a> = (Vec<(&'static str, String)>, Vec<&'a [u8]>);

/// An open WARC file.
struct OpenFile {
    path: PathBuf,
    /// Its number (`simcrawl-NNNNN.warc.gz`).
    number: u32,
    out: Counting<BufWriter<File>>,
    warcinfo_id: String,
}

/// Writes the records of a crawl's pages into numbered, rotated WARC files.
pub struct WarcWriter {
    dir: PathBuf,
    opts: WarcOptions,
    gz: record::GzMembers,
    file: Option<OpenFile>,
    next_number: u32,
    ids: RecordIds,
    /// SHA-1 of a body written in a response record → that record.
    originals: HashMap<[u8; 20], Original>,
    stats: WarcStats,
}

impl std::fmt::Debug for WarcWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcWriter")
            .field("dir", &self.dir)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The number of a file name `simcrawl-NNNNN.warc.gz`.
fn file_number(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?.parse().ok()
}

impl WarcWriter {
    /// A writer into `dir` (created if missing). Its first file is numbered
    /// after the highest `simcrawl-NNNNN.warc.gz` already there, so a
    /// resumed crawl never touches the files of an earlier run; it is
    /// created with the first page.
    pub fn create(dir: &Path, opts: WarcOptions) -> Result<Self, WarcError> {
        let io = |source| WarcError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut next_number = 0;
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            if let Some(n) = entry.file_name().to_str().and_then(file_number) {
                next_number = next_number.max(n + 1);
            }
        }
        Ok(WarcWriter {
            ids: RecordIds::new(dir.as_os_str().as_encoded_bytes()),
            gz: record::GzMembers::new(Compression::new(opts.level.min(9))),
            dir: dir.to_path_buf(),
            opts,
            file: None,
            next_number,
            originals: HashMap::new(),
            stats: WarcStats::default(),
        })
    }

    /// The paths of the WARC files in `dir`, in number order.
    pub fn files(dir: &Path) -> Result<Vec<PathBuf>, WarcError> {
        let io = |source| WarcError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            if let Some(n) = entry.file_name().to_str().and_then(file_number) {
                files.push((n, entry.path()));
            }
        }
        files.sort();
        Ok(files.into_iter().map(|(_, p)| p).collect())
    }

    /// What was written so far.
    pub fn stats(&self) -> WarcStats {
        self.stats
    }

    /// The open file, begun (with its `warcinfo` record) if there is none.
    fn file(&mut self) -> Result<&mut OpenFile, WarcError> {
        if self.file.is_none() {
            let name = format!("{PREFIX}{:05}{SUFFIX}", self.next_number);
            let path = self.dir.join(&name);
            let number = self.next_number;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|source| WarcError::Io {
                    path: path.clone(),
                    source,
                })?;
            self.next_number += 1;
            let mut file = OpenFile {
                out: Counting {
                    inner: BufWriter::with_capacity(1 << 18, f),
                    bytes: 0,
                },
                warcinfo_id: self.ids.next_id(),
                path,
                number,
            };
            let mut info = format!(
                "software: simcrawl/{}\r\nformat: WARC File Format 1.1\r\nconformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\nhttp-header-user-agent: {}\r\n",
                env!("CARGO_PKG_VERSION"),
                record::one_line(&self.opts.user_agent)
            );
            for (k, v) in &self.opts.info {
                info.push_str(&format!("{}: {}\r\n", record::one_line(k), record::one_line(v)));
            }
            let date = record::warc_date(SystemTime::now());
            let digest = record::sha1_base32(&[info.as_bytes()]);
            let fields = [
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", file.warcinfo_id.as_str()),
                ("WARC-Date", date.as_str()),
                ("WARC-Filename", name.as_str()),
                ("WARC-Block-Digest", digest.as_str()),
                ("Content-Type", "application/warc-fields"),
            ];
            record::write_record(&mut file.out, &mut self.gz, &fields, &[info.as_bytes()]).map_err(|source| {
                WarcError::Io {
                    path: file.path.clone(),
                    source,
                }
            })?;
            self.stats.files += 1;
            self.stats.records += 1;
            self.file = Some(file);
        }
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(WarcError::Thread("no open WARC file".into())),
        }
    }

    /// The path of file number `number` in `dir`.
    pub fn file_path(dir: &Path, number: u32) -> PathBuf {
        dir.join(format!("{PREFIX}{number:05}{SUFFIX}"))
    }

    /// Write one page's records: response or revisit, request (when it got
    /// a response) and metadata. Begins the next file first when the open
    /// one has reached `max_file_bytes`. Returns where the page's body is:
    /// its response record, or for a revisit the original's (None without
    /// a response).
    pub fn write(&mut self, page: &PageEntry) -> Result<Option<BodyRef>, WarcError> {
        if self
            .file
            .as_ref()
            .is_some_and(|f| f.out.bytes >= self.opts.max_file_bytes)
        {
            self.close()?;
        }
        let main_id = self.ids.next_id();
        let (request_id, meta_id) = (self.ids.next_id(), self.ids.next_id());
        let fallback_date = page.date.unwrap_or_else(SystemTime::now);
        let mut original_to_add = None;
        let mut body_ref = None;
        let mut revisit = false;
        let head;
        let request;
        let meta_uri;
        // Build every record's bytes before borrowing the file.
        let mut records: Vec<PendingRecord> = Vec::with_capacity(3);
        if let Some(x) = &page.exchange {
            let date = record::warc_date(x.date.unwrap_or(fallback_date));
            head = record::response_head(x, x.body.len());
            let (block_sha1, body_sha1) = record::block_and_payload_sha1(&head, &x.body);
            let payload = record::digest_text(&body_sha1);
            let mut fields: Vec<(&str, String)> = Vec::with_capacity(12);
            let original = if page.exact_duplicate && !x.truncated {
                self.originals.get(&body_sha1)
            } else {
                None
            };
            match original {
                Some(o) => {
                    revisit = true;
                    fields.push(("WARC-Type", "revisit".into()));
                    fields.push(("WARC-Record-ID", main_id.clone()));
                    fields.push(("WARC-Date", date.clone()));
                    fields.push(("WARC-Target-URI", x.target_uri.clone()));
                    fields.push((
                        "WARC-Profile",
                        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest".into(),
                    ));
                    fields.push(("WARC-Refers-To", o.id.to_string()));
                    fields.push(("WARC-Refers-To-Target-URI", o.uri.to_string()));
                    fields.push(("WARC-Refers-To-Date", o.date.to_string()));
                    body_ref = Some(o.body);
                }
                None => {
                    fields.push(("WARC-Type", "response".into()));
                    fields.push(("WARC-Record-ID", main_id.clone()));
                    fields.push(("WARC-Date", date.clone()));
                    fields.push(("WARC-Target-URI", x.target_uri.clone()));
                    if !x.truncated && !self.originals.contains_key(&body_sha1) {
                        original_to_add = Some((
                            body_sha1,
                            main_id.clone().into_boxed_str(),
                            x.target_uri.clone().into_boxed_str(),
                            date.clone().into_boxed_str(),
                        ));
                    }
                }
            }
            if let Some(ip) = x.ip {
                fields.push(("WARC-IP-Address", ip.to_string()));
            }
            let block: Vec<&[u8]> = if revisit { vec![&head] } else { vec![&head, &x.body] };
            fields.push(("WARC-Payload-Digest", payload));
            let block_digest = if revisit {
                record::sha1_base32(&block)
            } else {
                record::digest_text(&block_sha1)
            };
            fields.push(("WARC-Block-Digest", block_digest));
            if x.truncated && !revisit {
                fields.push(("WARC-Truncated", "length".into()));
            }
            fields.push(("Content-Type", "application/http; msgtype=response".into()));
            records.push((fields, block));

            request = record::request_block(&x.target_uri, &self.opts.user_agent);
            records.push((
                vec![
                    ("WARC-Type", "request".into()),
                    ("WARC-Record-ID", request_id),
                    ("WARC-Date", date),
                    ("WARC-Target-URI", x.target_uri.clone()),
                    ("WARC-Concurrent-To", main_id.clone()),
                    ("WARC-Block-Digest", record::sha1_base32(&[&request])),
                    ("Content-Type", "application/http; msgtype=request".into()),
                ],
                vec![&request],
            ));
            meta_uri = x.target_uri.clone();
        } else {
            meta_uri = page.uri.clone();
        }
        let mut meta_fields: Vec<(&str, String)> = vec![
            ("WARC-Type", "metadata".into()),
            ("WARC-Record-ID", meta_id),
            ("WARC-Date", record::warc_date(fallback_date)),
            ("WARC-Target-URI", meta_uri),
        ];
        if page.exchange.is_some() {
            meta_fields.push(("WARC-Concurrent-To", main_id));
        }
        meta_fields.push(("WARC-Block-Digest", record::sha1_base32(&[&page.metadata])));
        meta_fields.push(("Content-Type", "application/json".into()));
        records.push((meta_fields, vec![&page.metadata]));

        self.file()?;
        let (Some(file), gz) = (self.file.as_mut(), &mut self.gz) else {
            return Err(WarcError::Thread("no open WARC file".into()));
        };
        let warcinfo = file.warcinfo_id.clone();
        for (i, (mut fields, block)) in records.into_iter().enumerate() {
            // WARC-Warcinfo-ID after the record's id and date.
            fields.insert(3.min(fields.len()), ("WARC-Warcinfo-ID", warcinfo.clone()));
            let named: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let offset = file.out.bytes;
            record::write_record(&mut file.out, gz, &named, &block).map_err(|source| WarcError::Io {
                path: file.path.clone(),
                source,
            })?;
            // The first record of a page with an exchange is its response.
            if i == 0 && page.exchange.is_some() && !revisit {
                body_ref = Some(BodyRef {
                    file: file.number,
                    offset,
                    length: file.out.bytes - offset,
                });
            }
        }
        let n = if page.exchange.is_some() { 3 } else { 1 };
        self.stats.records += n;
        if page.exchange.is_some() {
            if revisit {
                self.stats.revisits += 1;
            } else {
                self.stats.responses += 1;
            }
        }
        if let (Some((k, id, uri, date)), Some(body)) = (original_to_add, body_ref) {
            if self.originals.len() < ORIGINALS_MAX {
                self.originals.insert(k, Original { id, uri, date, body });
            }
        }
        Ok(body_ref)
    }

    /// Hand what is buffered to the operating system (the writer thread
    /// does this whenever it runs out of pages to write).
    pub fn flush(&mut self) -> Result<(), WarcError> {
        if let Some(f) = self.file.as_mut() {
            f.out.flush().map_err(|source| WarcError::Io {
                path: f.path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Close the open file (the next page begins a new one).
    fn close(&mut self) -> Result<(), WarcError> {
        if let Some(mut f) = self.file.take() {
            let io = |source| WarcError::Io {
                path: f.path.clone(),
                source,
            };
            f.out.flush().map_err(io)?;
            self.stats.bytes += f.out.bytes;
            f.out.inner.get_ref().sync_all().map_err(io)?;
        }
        Ok(())
    }

    /// Close the open file and return what was written.
    pub fn finish(mut self) -> Result<WarcStats, WarcError> {
        self.close()?;
        Ok(self.stats)
    }
}

/// Pages waiting for the writer thread, at most this many (the decider
/// waits when the writer falls this far behind).
const QUEUE: usize = 256;

/// A [`WarcWriter`] on a thread of its own (`simcrawl-warc`): compression
/// and digests stay off the thread that decides pages. Each page written is
/// acknowledged with where its body is ([`WarcThread::ack`]), once its
/// records have been handed to the operating system.
pub struct WarcThread {
    tx: Option<crossbeam_channel::Sender<PageEntry>>,
    acks: crossbeam_channel::Receiver<(PageId, Option<BodyRef>)>,
    handle: Option<std::thread::JoinHandle<Result<WarcStats, WarcError>>>,
}

impl std::fmt::Debug for WarcThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcThread").finish_non_exhaustive()
    }
}

impl WarcThread {
    /// Start the thread. It writes pages in the order they are sent, and
    /// whenever no page is waiting flushes its file and acknowledges the
    /// pages written since the last flush.
    pub fn spawn(mut writer: WarcWriter) -> Result<Self, WarcError> {
        let (tx, rx) = crossbeam_channel::bounded::<PageEntry>(QUEUE);
        let (ack_tx, acks) = crossbeam_channel::unbounded();
        let handle = std::thread::Builder::new()
            .name("simcrawl-warc".into())
            .spawn(move || {
                let mut written: Vec<(PageId, Option<BodyRef>)> = Vec::new();
                let flush = |writer: &mut WarcWriter, written: &mut Vec<_>| -> Result<(), WarcError> {
                    writer.flush()?;
                    for a in written.drain(..) {
                        // The crawl stopped listening: nothing to tell.
                        let _ = ack_tx.send(a);
                    }
                    Ok(())
                };
                loop {
                    let page = match rx.try_recv() {
                        Ok(p) => p,
                        Err(crossbeam_channel::TryRecvError::Empty) => {
                            flush(&mut writer, &mut written)?;
                            match rx.recv() {
                                Ok(p) => p,
                                Err(_) => break,
                            }
                        }
                        Err(crossbeam_channel::TryRecvError::Disconnected) => break,
                    };
                    let body = writer.write(&page)?;
                    written.push((page.page, body));
                }
                flush(&mut writer, &mut written)?;
                writer.finish()
            })
            .map_err(|e| WarcError::Thread(e.to_string()))?;
        Ok(WarcThread {
            tx: Some(tx),
            acks,
            handle: Some(handle),
        })
    }

    /// Queue a page (waits while [`QUEUE`] pages are waiting). When the
    /// writer has failed, returns its error.
    pub fn send(&mut self, page: PageEntry) -> Result<(), WarcError> {
        let sent = match &self.tx {
            Some(tx) => tx.send(page).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(WarcError::Thread("the WARC writer stopped early".into())),
        }
    }

    /// The next page written, in the order sent, and where its body is:
    /// waits until the writer has written and flushed it. When the writer
    /// has failed, returns its error.
    pub fn ack(&mut self) -> Result<(PageId, Option<BodyRef>), WarcError> {
        if let Ok(a) = self.acks.recv() {
            return Ok(a);
        }
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(WarcError::Thread("the WARC writer stopped early".into())),
        }
    }

    fn join(&mut self) -> Result<WarcStats, WarcError> {
        self.tx = None;
        match self.handle.take() {
            Some(h) => match h.join() {
                Ok(r) => r,
                Err(_) => Err(WarcError::Thread("it panicked".into())),
            },
            None => Err(WarcError::Thread("it already ended".into())),
        }
    }

    /// Write what is queued, close the file and return what was written.
    pub fn finish(mut self) -> Result<WarcStats, WarcError> {
        self.join()
    }
}

impl Drop for WarcThread {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read_file, Exchange};
    use super::*;

    fn opts(max: u64) -> WarcOptions {
        WarcOptions {
            max_file_bytes: max,
            user_agent: "test/1".into(),
            info: vec![("robots".into(), "obey".into())],
            level: 1,
        }
    }

    fn page(uri: &str, body: &[u8], dup: bool) -> PageEntry {
        PageEntry {
            page: 0,
            uri: uri.into(),
            date: Some(SystemTime::UNIX_EPOCH),
            exchange: Some(Exchange {
                target_uri: uri.into(),
                date: Some(SystemTime::UNIX_EPOCH),
                status: 200,
                headers: vec![("content-type".into(), b"text/html".to_vec())],
                body: body.to_vec(),
                ..Default::default()
            }),
            exact_duplicate: dup,
            metadata: br#"{"decision":"new"}"#.to_vec(),
        }
    }

    #[test]
    fn records_of_a_page_and_a_revisit() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::create(dir.path(), opts(1 << 30)).unwrap();
        w.write(&page("http://a.test/", b"<p>same</p>", false)).unwrap();
        w.write(&page("http://a.test/copy", b"<p>same</p>", true)).unwrap();
        // An exact duplicate whose body was never written: a full response.
        w.write(&page("http://a.test/other", b"<p>other</p>", true)).unwrap();
        w.write(&PageEntry {
            uri: "http://a.test/robots-says-no".into(),
            metadata: br#"{"decision":"disallowed"}"#.to_vec(),
            ..Default::default()
        })
        .unwrap();
        let stats = w.finish().unwrap();
        assert_eq!((stats.files, stats.responses, stats.revisits), (1, 2, 1));
        let files = WarcWriter::files(dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        assert!(files[0].ends_with("simcrawl-00000.warc.gz"));
        let recs = read_file(&files[0]).unwrap();
        let types: Vec<&str> = recs.iter().map(|r| r.header("WARC-Type").unwrap()).collect();
        assert_eq!(
            types,
            [
                "warcinfo", "response", "request", "metadata", "revisit", "request", "metadata", "response", "request",
                "metadata", "metadata"
            ]
        );
        assert_eq!(stats.records, 11);
        let (resp, revisit) = (&recs[1], &recs[4]);
        assert_eq!(revisit.header("WARC-Refers-To"), resp.header("WARC-Record-ID"));
        assert_eq!(revisit.header("WARC-Refers-To-Target-URI"), Some("http://a.test/"));
        assert_eq!(revisit.header("WARC-Refers-To-Date"), resp.header("WARC-Date"));
        assert_eq!(
            revisit.header("WARC-Payload-Digest"),
            resp.header("WARC-Payload-Digest")
        );
        assert_eq!(resp.http_body(), Some(&b"<p>same</p>"[..]));
        assert_eq!(
            resp.header("WARC-Payload-Digest").unwrap(),
            record::sha1_base32(&[b"<p>same</p>"])
        );
        assert_eq!(recs[2].header("WARC-Concurrent-To"), resp.header("WARC-Record-ID"));
        assert_eq!(recs[3].header("WARC-Concurrent-To"), resp.header("WARC-Record-ID"));
        for r in &recs {
            assert_eq!(r.header("WARC-Block-Digest").unwrap(), record::sha1_base32(&[&r.block]));
            if r.header("WARC-Type") != Some("warcinfo") {
                assert_eq!(r.header("WARC-Warcinfo-ID"), recs[0].header("WARC-Record-ID"));
            }
        }
        assert_eq!(recs[10].header("WARC-Target-URI"), Some("http://a.test/robots-says-no"));
        assert_eq!(recs[10].header("WARC-Concurrent-To"), None);
    }

    #[test]
    fn body_refs_read_back_the_bodies_and_a_revisit_refers_to_its_original() {
        let dir = tempfile::tempdir().unwrap();
        // A limit of 1 byte: every page begins a file of its own.
        let mut w = WarcWriter::create(dir.path(), opts(1)).unwrap();
        let a = w
            .write(&page("http://a.test/", b"<p>first</p>", false))
            .unwrap()
            .unwrap();
        let b = w
            .write(&page("http://a.test/b", b"<p>second</p>", false))
            .unwrap()
            .unwrap();
        let copy = w.write(&page("http://a.test/copy", b"<p>first</p>", true)).unwrap();
        let none = w
            .write(&PageEntry {
                uri: "http://a.test/disallowed".into(),
                metadata: b"{}".to_vec(),
                ..Default::default()
            })
            .unwrap();
        w.finish().unwrap();
        assert_eq!((a.file, b.file), (0, 1));
        assert_eq!(copy, Some(a), "a revisit's body is its original's");
        assert_eq!(none, None);
        assert_eq!(super::super::read_body(dir.path(), &a).unwrap(), b"<p>first</p>");
        assert_eq!(super::super::read_body(dir.path(), &b).unwrap(), b"<p>second</p>");
        // A reference that does not point at a response record is an error.
        let wrong = BodyRef { offset: 0, ..a };
        assert!(matches!(
            super::super::read_body(dir.path(), &wrong),
            Err(WarcError::Malformed { .. })
        ));
        let missing = BodyRef { file: 9, ..a };
        assert!(matches!(
            super::super::read_body(dir.path(), &missing),
            Err(WarcError::Io { .. })
        ));
    }

    #[test]
    fn the_thread_acknowledges_pages_in_order_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = WarcThread::spawn(WarcWriter::create(dir.path(), opts(1 << 30)).unwrap()).unwrap();
        for id in 1..=3u64 {
            let mut p = page(&format!("http://a.test/{id}"), format!("body {id}").as_bytes(), false);
            p.page = id;
            t.send(p).unwrap();
        }
        let mut refs = Vec::new();
        for id in 1..=3u64 {
            let (got, at) = t.ack().unwrap();
            assert_eq!(got, id);
            // Acknowledged means flushed: readable while the file is open.
            let at = at.unwrap();
            assert_eq!(
                super::super::read_body(dir.path(), &at).unwrap(),
                format!("body {id}").as_bytes()
            );
            refs.push(at);
        }
        assert!(refs.windows(2).all(|w| w[0].offset + w[0].length <= w[1].offset));
        t.finish().unwrap();
    }

    #[test]
    fn files_rotate_past_the_limit_and_resume_numbers_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::create(dir.path(), opts(1)).unwrap();
        for i in 0..3 {
            w.write(&page(
                &format!("http://a.test/{i}"),
                format!("body {i}").as_bytes(),
                false,
            ))
            .unwrap();
        }
        assert_eq!(w.finish().unwrap().files, 3);
        let mut w = WarcWriter::create(dir.path(), opts(1 << 30)).unwrap();
        w.write(&page("http://a.test/again", b"x", false)).unwrap();
        w.write(&page("http://a.test/again2", b"y", false)).unwrap();
        w.finish().unwrap();
        let files = WarcWriter::files(dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "simcrawl-00000.warc.gz",
                "simcrawl-00001.warc.gz",
                "simcrawl-00002.warc.gz",
                "simcrawl-00003.warc.gz"
            ]
        );
        for (i, f) in files.iter().enumerate() {
            let recs = read_file(f).unwrap();
            assert_eq!(recs[0].header("WARC-Type"), Some("warcinfo"), "file {i}");
            assert_eq!(recs[0].header("WARC-Filename"), Some(names[i].as_str()));
            let pages = if i == 3 { 2 } else { 1 };
            assert_eq!(recs.len(), 1 + 3 * pages, "file {i}");
        }
    }

    #[test]
    fn thread_reports_a_write_failure() {
        let dir = tempfile::tempdir().unwrap();
        let w = WarcWriter::create(dir.path(), opts(1 << 30)).unwrap();
        // The file cannot be created: its name is taken by a directory.
        std::fs::create_dir(dir.path().join("simcrawl-00000.warc.gz")).unwrap();
        let mut t = WarcThread::spawn(w).unwrap();
        let mut failed = None;
        for i in 0..10 {
            if let Err(e) = t.send(page(&format!("http://a.test/{i}"), b"x", false)) {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => t.finish().unwrap_err(),
        };
        assert!(matches!(e, WarcError::Io { .. }), "{e}");
        assert!(e.to_string().contains("simcrawl-00000.warc.gz"), "{e}");
    }
}
