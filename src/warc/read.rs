//! A small WARC reader for the files simcrawl writes: every gzip member
//! holds exactly one record (anything else is reported as malformed), so
//! reading also checks that a file can be entered at any record's offset.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::WarcError;
use crate::model::BodyRef;

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarcRecord {
    /// Offset of the record's gzip member in the file.
    pub offset: u64,
    /// The header fields, in order (names as written).
    pub headers: Vec<(String, String)>,
    /// The block, `Content-Length` bytes.
    pub block: Vec<u8>,
}

impl WarcRecord {
    /// The first value of header field `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The HTTP message's body of a `response` or `request` record: the
    /// block after the first empty line.
    pub fn http_body(&self) -> Option<&[u8]> {
        let at = memchr::memmem::find(&self.block, b"\r\n\r\n")?;
        Some(&self.block[at + 4..])
    }

    /// The HTTP status code of a `response` or `revisit` record.
    pub fn http_status(&self) -> Option<u16> {
        let line = self.block.split(|&b| b == b'\n').next()?;
        std::str::from_utf8(line).ok()?.split(' ').nth(1)?.trim().parse().ok()
    }
}

/// A reader that counts the bytes taken from it.
struct Offset<R> {
    inner: R,
    at: u64,
}

impl<R: BufRead> Read for Offset<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Offset<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.at += amt as u64;
        self.inner.consume(amt);
    }
}

/// Every record of the WARC file at `path`, in order.
pub fn read_file(path: &Path) -> Result<Vec<WarcRecord>, WarcError> {
    let io = |source| WarcError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bad = |what: String| WarcError::Malformed {
        path: path.to_path_buf(),
        what,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut input = Offset {
        inner: BufReader::new(file),
        at: 0,
    };
    let mut records = Vec::new();
    loop {
        if input.fill_buf().map_err(io)?.is_empty() {
            break;
        }
        let offset = input.at;
        let mut member = Vec::new();
        flate2::bufread::GzDecoder::new(&mut input)
            .read_to_end(&mut member)
            .map_err(|e| bad(format!("gzip member at offset {offset}: {e}")))?;
        let record = parse_record(&member, offset).map_err(|e| bad(format!("record at offset {offset}: {e}")))?;
        records.push(record);
    }
    Ok(records)
}

/// The HTTP body kept at `at` in the WARC files of `dir` (a page's
/// [`BodyRef`]): one gzip member read at its offset, which must hold a
/// `response` record.
pub fn read_body(dir: &Path, at: &BodyRef) -> Result<Vec<u8>, WarcError> {
    use std::io::{Seek, SeekFrom};
    let path = super::WarcWriter::file_path(dir, at.file);
    let io = |source| WarcError::Io {
        path: path.clone(),
        source,
    };
    let bad = |what: String| WarcError::Malformed {
        path: path.clone(),
        what,
    };
    // A record is never larger than the largest body plus its headers; a
    // length beyond what a file can hold is a damaged reference.
    let len = usize::try_from(at.length)
        .ok()
        .filter(|&n| n <= MAX_MEMBER)
        .ok_or_else(|| {
            bad(format!(
                "record at offset {}: length {} too large",
                at.offset, at.length
            ))
        })?;
    let mut file = std::fs::File::open(&path).map_err(io)?;
    file.seek(SeekFrom::Start(at.offset)).map_err(io)?;
    let mut member = vec![0; len];
    file.read_exact(&mut member).map_err(io)?;
    let mut bytes = Vec::new();
    flate2::bufread::GzDecoder::new(&member[..])
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("gzip member at offset {}: {e}", at.offset)))?;
    let record = parse_record(&bytes, at.offset).map_err(|e| bad(format!("record at offset {}: {e}", at.offset)))?;
    if record.header("WARC-Type") != Some("response") {
        return Err(bad(format!("record at offset {} is not a response", at.offset)));
    }
    let body = record
        .http_body()
        .ok_or_else(|| bad(format!("response at offset {} has no HTTP body", at.offset)))?;
    Ok(body.to_vec())
}

/// The largest gzip member [`read_body`] reads (1 GiB).
const MAX_MEMBER: usize = 1 << 30;

/// One record, exactly the whole of `bytes`.
fn parse_record(bytes: &[u8], offset: u64) -> Result<WarcRecord, String> {
    let end = memchr::memmem::find(bytes, b"\r\n\r\n").ok_or("no end of the header")?;
    let head = std::str::from_utf8(&bytes[..end]).map_err(|_| "header is not UTF-8")?;
    let mut lines = head.split("\r\n");
    if lines.next() != Some("WARC/1.1") {
        return Err("no WARC/1.1 version line".into());
    }
    let mut headers = Vec::new();
    for line in lines {
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        headers.push((k.to_string(), v.trim().to_string()));
    }
    let rec = WarcRecord {
        offset,
        headers,
        block: Vec::new(),
    };
    let len: usize = rec
        .header("Content-Length")
        .and_then(|v| v.parse().ok())
        .ok_or("no Content-Length")?;
    let start = end + 4;
    let block = bytes
        .get(start..start + len)
        .ok_or("block shorter than Content-Length")?;
    if &bytes[start + len..] != b"\r\n\r\n" {
        return Err("not exactly one record in the gzip member".into());
    }
    Ok(WarcRecord {
        block: block.to_vec(),
        ..rec
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_records_in_one_member_are_rejected() {
        let rec = b"WARC/1.1\r\nContent-Length: 1\r\n\r\nx\r\n\r\n";
        assert!(parse_record(rec, 0).is_ok());
        let two = [&rec[..], &rec[..]].concat();
        assert!(parse_record(&two, 0).unwrap_err().contains("exactly one"));
        assert!(parse_record(b"WARC/1.0\r\n\r\n", 0).is_err());
    }
}
