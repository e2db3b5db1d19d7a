//! One record's bytes: the header fields, the HTTP blocks of request and
//! response records, SHA-1 digests in base 32, record ids, and the gzip
//! member a record is written as.

use std::io::Write;
use std::time::SystemTime;

use flate2::Compression;

/// `t` as a WARC-Date: UTC, W3C ISO 8601 with microseconds (WARC/1.1
/// allows a fraction of a second).
pub fn warc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// RFC 4648 base 32 (upper case, `=` padding), the encoding of WARC digests.
pub(crate) fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let v = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        // Output characters that carry input bits; the rest is padding.
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(ALPHABET[((v >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The SHA-1 of `parts` concatenated, as a WARC digest: `sha1:` and base 32.
pub fn sha1_base32(parts: &[&[u8]]) -> String {
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    for p in parts {
        h.update(p);
    }
    digest_text(&h.finalize().into())
}

/// A raw SHA-1 as a WARC digest.
pub(crate) fn digest_text(sha1: &[u8; 20]) -> String {
    format!("sha1:{}", base32(sha1))
}

/// The SHA-1 of an HTTP message's head and body (the block digest of its
/// record) and of its body alone (the payload digest), reading the body
/// once: the state after the head is cloned.
pub(crate) fn block_and_payload_sha1(head: &[u8], body: &[u8]) -> ([u8; 20], [u8; 20]) {
    use sha1::Digest;
    let mut block = sha1::Sha1::new();
    block.update(head);
    let mut payload = sha1::Sha1::new();
    // Both states take the body chunk by chunk while it is in cache.
    for chunk in body.chunks(64 * 1024) {
        block.update(chunk);
        payload.update(chunk);
    }
    (block.finalize().into(), payload.finalize().into())
}

/// Record ids: random-looking version-4 UUIDs from a SplitMix64 stream
/// seeded by the clock, the process id and the output directory, so two
/// writers (two runs, two crawls) never share ids in practice.
#[derive(Debug, Clone)]
pub(crate) struct RecordIds {
    state: u64,
}

impl RecordIds {
    pub(crate) fn new(salt: &[u8]) -> Self {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = crate::hash::fnv1a_continue(now ^ u64::from(std::process::id()).rotate_left(32), salt);
        RecordIds { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::hash::mix64(self.state)
    }

    /// The next id, `<urn:uuid:...>` as WARC-Record-ID spells it.
    pub(crate) fn next_id(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        let mut u = [0u8; 16];
        u[..8].copy_from_slice(&a.to_be_bytes());
        u[8..].copy_from_slice(&b.to_be_bytes());
        u[6] = (u[6] & 0x0f) | 0x40; // version 4
        u[8] = (u[8] & 0x3f) | 0x80; // RFC 4122 variant
        let h = |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
        format!(
            "<urn:uuid:{}-{}-{}-{}-{}>",
            h(0..4),
            h(4..6),
            h(6..8),
            h(8..10),
            h(10..16)
        )
    }
}

/// Header fields never copied from a response: the body is stored
/// decompressed and whole, so these would describe bytes that are not there.
const DROPPED_HEADERS: [&str; 3] = ["content-encoding", "transfer-encoding", "content-length"];

/// The HTTP block head of a response record: status line, headers (without
/// [`DROPPED_HEADERS`], with `Content-Length: body_len`), empty line.
pub(crate) fn response_head(x: &super::Exchange, body_len: usize) -> Vec<u8> {
    let reason = reqwest::StatusCode::from_u16(x.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut h = Vec::with_capacity(256);
    let _ = write!(h, "HTTP/1.1 {} {reason}\r\n", x.status);
    if x.headers.is_empty() {
        for (name, value) in [("Content-Type", &x.content_type), ("Location", &x.location)] {
            if let Some(v) = value {
                let _ = write!(h, "{name}: {}\r\n", one_line(v));
            }
        }
    }
    for (name, value) in &x.headers {
        if DROPPED_HEADERS.iter().any(|d| name.eq_ignore_ascii_case(d)) {
            continue;
        }
        h.extend_from_slice(name.as_bytes());
        h.extend_from_slice(b": ");
        h.extend(value.iter().filter(|&&b| b != b'\r' && b != b'\n'));
        h.extend_from_slice(b"\r\n");
    }
    let _ = write!(h, "Content-Length: {body_len}\r\n\r\n");
    h
}

/// The HTTP block of a request record: the GET as the crawler sends it.
pub(crate) fn request_block(target_uri: &str, user_agent: &str) -> Vec<u8> {
    let (path, host) = match url::Url::parse(target_uri) {
        Ok(u) => {
            let mut path = u.path().to_string();
            if let Some(q) = u.query() {
                path.push('?');
                path.push_str(q);
            }
            let host = match (u.host_str(), u.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_string(),
                _ => String::new(),
            };
            (path, host)
        }
        Err(_) => ("/".to_string(), String::new()),
    };
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {}\r\nAccept: */*\r\nAccept-Encoding: gzip, br, deflate\r\n\r\n",
        one_line(user_agent)
    )
    .into_bytes()
}

/// `s` without CR and LF (a header value is one line).
pub(crate) fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ").into()
    } else {
        s.into()
    }
}

/// A writer that counts the bytes written through it (the compressed size
/// of a WARC file, for rotation).
#[derive(Debug)]
pub(crate) struct Counting<W> {
    pub(crate) inner: W,
    pub(crate) bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A gzip member writer that keeps one deflate state for every record
/// (reset between them): a new state per record would allocate and clear
/// the compressor's window and hash tables, several hundred KiB, for each
/// of a page's three records.
pub(crate) struct GzMembers {
    deflate: flate2::Compress,
    out: Vec<u8>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl GzMembers {
    pub(crate) fn new(level: Compression) -> Self {
        GzMembers {
            // Raw deflate: the gzip header and trailer are written here.
            deflate: flate2::Compress::new(level, false),
            out: Vec::with_capacity(64 * 1024),
            crc: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    /// Begin a member: the 10-byte gzip header (no name, no time, OS unknown).
    fn begin(&mut self, w: &mut impl Write) -> std::io::Result<()> {
        self.deflate.reset();
        self.crc = crc32fast::Hasher::new();
        self.len = 0;
        w.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255])
    }

    /// Compress `data` into the member.
    fn data(&mut self, w: &mut impl Write, mut data: &[u8]) -> std::io::Result<()> {
        self.crc.update(data);
        self.len += data.len() as u64;
        while !data.is_empty() {
            let before = self.deflate.total_in();
            self.step(w, data, flate2::FlushCompress::None)?;
            data = &data[(self.deflate.total_in() - before) as usize..];
        }
        Ok(())
    }

    /// End the member: the rest of the deflate stream, CRC-32 and length.
    fn end(&mut self, w: &mut impl Write) -> std::io::Result<()> {
        while self.step(w, &[], flate2::FlushCompress::Finish)? != flate2::Status::StreamEnd {}
        let crc = std::mem::take(&mut self.crc).finalize();
        w.write_all(&crc.to_le_bytes())?;
        w.write_all(&(self.len as u32).to_le_bytes())
    }

    /// One call of the compressor, its output written to `w`.
    fn step(
        &mut self,
        w: &mut impl Write,
        input: &[u8],
        flush: flate2::FlushCompress,
    ) -> std::io::Result<flate2::Status> {
        self.out.clear();
        let status = self
            .deflate
            .compress_vec(input, &mut self.out, flush)
            .map_err(std::io::Error::other)?;
        w.write_all(&self.out)?;
        Ok(status)
    }
}

/// Write one record as one gzip member: `WARC/1.1`, the `fields` (then
/// `Content-Length`, the total length of `block`), an empty line, the
/// block's parts and the closing two CRLFs.
pub(crate) fn write_record(
    out: &mut impl Write,
    gz: &mut GzMembers,
    fields: &[(&str, &str)],
    block: &[&[u8]],
) -> std::io::Result<()> {
    let len: usize = block.iter().map(|b| b.len()).sum();
    let mut head = String::with_capacity(512);
    head.push_str("WARC/1.1\r\n");
    for (name, value) in fields {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(&one_line(value));
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {len}\r\n\r\n"));
    gz.begin(out)?;
    gz.data(out, head.as_bytes())?;
    for part in block {
        gz.data(out, part)?;
    }
    gz.data(out, b"\r\n\r\n")?;
    gz.end(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc_4648_vectors() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY======");
        assert_eq!(base32(b"fo"), "MZXQ====");
        assert_eq!(base32(b"foo"), "MZXW6===");
        assert_eq!(base32(b"foob"), "MZXW6YQ=");
        assert_eq!(base32(b"fooba"), "MZXW6YTB");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
    }

    #[test]
    fn sha1_digest_of_known_input() {
        // SHA-1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d
        assert_eq!(sha1_base32(&[b"abc"]), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
        assert_eq!(sha1_base32(&[b"a", b"bc"]), sha1_base32(&[b"abc"]));
        // The empty payload, as every WARC tool writes it.
        assert_eq!(sha1_base32(&[]), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }

    #[test]
    fn record_ids_are_uuid_v4_and_distinct() {
        let mut ids = RecordIds::new(b"x");
        let a = ids.next_id();
        let b = ids.next_id();
        assert_ne!(a, b);
        assert!(a.starts_with("<urn:uuid:") && a.ends_with('>'), "{a}");
        let uuid = &a[10..a.len() - 1];
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert!("89ab".contains(&uuid[19..20]), "{uuid}");
    }

    #[test]
    fn record_framing_and_one_gzip_member() {
        let mut gz = GzMembers::new(Compression::fast());
        let big = vec![b'x'; 300_000];
        let mut members = Vec::new();
        for block in [&b"hello world"[..], &big[..]] {
            let mut out = Vec::new();
            write_record(
                &mut out,
                &mut gz,
                &[("WARC-Type", "resource"), ("WARC-Record-ID", "<urn:uuid:x>")],
                &[&block[..6], &block[6..]],
            )
            .unwrap();
            members.push(out);
        }
        // Each member decodes alone (a reader can start at its offset)...
        let mut d = flate2::bufread::GzDecoder::new(&members[0][..]);
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text.clone()).unwrap(),
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:x>\r\nContent-Length: 11\r\n\r\nhello world\r\n\r\n"
        );
        let mut d = flate2::bufread::GzDecoder::new(&members[1][..]);
        let mut second = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut second).unwrap();
        assert!(second.ends_with(&[&big[..], b"\r\n\r\n"].concat()));
        // ...and the concatenation is one valid .gz of both.
        let all = members.concat();
        let mut d = flate2::read::MultiGzDecoder::new(&all[..]);
        let mut both = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut both).unwrap();
        assert_eq!(both, [text, second].concat());
    }

    #[test]
    fn response_head_drops_encodings_and_sets_the_length() {
        let x = super::super::Exchange {
            status: 200,
            headers: vec![
                ("content-type".into(), b"text/html; charset=utf-8".to_vec()),
                ("content-encoding".into(), b"gzip".to_vec()),
                ("transfer-encoding".into(), b"chunked".to_vec()),
                ("content-length".into(), b"99".to_vec()),
                ("server".into(), b"x".to_vec()),
            ],
            ..Default::default()
        };
        let head = String::from_utf8(response_head(&x, 5)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\nserver: x\r\nContent-Length: 5\r\n\r\n"
        );
        let bare = super::super::Exchange {
            status: 301,
            location: Some("/next".into()),
            ..Default::default()
        };
        let head = String::from_utf8(response_head(&bare, 0)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n"
        );
    }

    #[test]
    fn request_block_rebuilds_the_get() {
        let r = String::from_utf8(request_block("http://a.test:8080/p/q?x=1", "bot/1 (+u)")).unwrap();
        assert!(
            r.starts_with("GET /p/q?x=1 HTTP/1.1\r\nHost: a.test:8080\r\nUser-Agent: bot/1 (+u)\r\n"),
            "{r}"
        );
        assert!(r.ends_with("\r\n\r\n"));
    }
}
