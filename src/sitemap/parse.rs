//! Reading one sitemap file: gzip or not, XML (`<urlset>`, `<sitemapindex>`)
//! or plain text, within the protocol's limits. Never fails: what could be
//! read is returned with the reason reading stopped.

use std::io::{BufRead, BufReader, Read};

use flate2::read::MultiGzDecoder;
use quick_xml::events::Event;
use quick_xml::Reader;

use super::{Cut, Entry, Format, Limits, Parsed};

/// Longest text kept for one field (`<loc>`, `<lastmod>`, ...): the protocol
/// allows URLs of up to 2,048 characters; a longer field is not a usable URL.
const MAX_FIELD_BYTES: usize = 8192;

/// Bytes looked at to tell XML from text (after a BOM and whitespace).
const SNIFF_BYTES: usize = 64 * 1024;

/// At most `left` bytes of `inner`; records whether `inner` had more.
struct Limited<R> {
    inner: R,
    left: u64,
    read: u64,
    /// `inner` had bytes beyond the limit.
    over: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            if !self.over {
                let mut probe = [0u8; 1];
                self.over = self.inner.read(&mut probe)? > 0;
            }
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        self.read += n as u64;
        Ok(n)
    }
}

/// Read the sitemap in `body` (as fetched: gzip is recognised by its magic
/// bytes, whatever the URL or content type says) within `limits`.
pub fn parse(body: &[u8], limits: &Limits) -> Parsed {
    let gzip = body.starts_with(&[0x1f, 0x8b]);
    let inner: Box<dyn Read + '_> = if gzip {
        Box::new(MultiGzDecoder::new(body))
    } else {
        Box::new(body)
    };
    let limited = Limited {
        inner,
        left: limits.max_bytes,
        read: 0,
        over: false,
    };
    let mut input = BufReader::with_capacity(SNIFF_BYTES, limited);
    let mut out = Parsed {
        gzip,
        ..Parsed::default()
    };
    let xml = match input.fill_buf() {
        Ok(head) => {
            let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
            head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<')
        }
        Err(e) => {
            out.error = Some(read_error(gzip, &e));
            return out;
        }
    };
    let input = if xml {
        read_xml(input, limits, &mut out)
    } else {
        read_text(input, limits, &mut out)
    };
    let limited = input.into_inner();
    out.bytes = limited.read;
    if limited.over && out.cut.is_none() {
        // Whatever broke at the limit (an element cut in two) is the limit's doing.
        out.cut = Some(Cut::MaxBytes);
        out.error = None;
    }
    out
}

fn read_error(gzip: bool, e: &std::io::Error) -> String {
    if gzip {
        format!("gzip: {e}")
    } else {
        format!("read: {e}")
    }
}

/// Add a finished entry, or stop at the entry limit.
fn push(out: &mut Parsed, entry: Entry, limits: &Limits) -> bool {
    if out.entries.len() >= limits.max_entries {
        out.cut = Some(Cut::MaxEntries);
        return false;
    }
    out.entries.push(entry);
    true
}

fn read_text<R: BufRead>(mut input: R, limits: &Limits, out: &mut Parsed) -> R {
    out.format = Some(Format::Text);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                out.error = Some(read_error(out.gzip, &e));
                break;
            }
        }
        let l = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line);
        let l = l.trim_ascii();
        if l.is_empty() {
            continue;
        }
        let url = match std::str::from_utf8(l) {
            Ok(s) if s.len() <= MAX_FIELD_BYTES && is_http(s) => s,
            _ => {
                out.skipped += 1;
                continue;
            }
        };
        let entry = Entry {
            loc: url.to_string(),
            ..Entry::default()
        };
        if !push(out, entry, limits) {
            break;
        }
    }
    input
}

fn is_http(s: &str) -> bool {
    let b = s.as_bytes();
    let starts = |p: &str| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    starts("http://") || starts("https://")
}

/// The child element of `<url>` / `<sitemap>` whose text is being read.
#[derive(Clone, Copy)]
enum Field {
    Loc,
    Lastmod,
    Changefreq,
    Priority,
}

fn is(name: &str, want: &str) -> bool {
    name.eq_ignore_ascii_case(want)
}

fn read_xml<R: BufRead>(input: R, limits: &Limits, out: &mut Parsed) -> R {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    // Depth of the element being read (the root is at 1).
    let mut depth = 0usize;
    let mut entry: Option<Entry> = None;
    let mut field: Option<Field> = None;
    let mut text = String::new();
    // The element the entries are (`url` or `sitemap`), once the root is known.
    let mut entry_name = "";
    loop {
        let ev = match reader.read_event_into(&mut buf) {
            Ok(ev) => ev,
            Err(e) => {
                out.error = Some(format!("XML error at byte {}: {e}", reader.error_position()));
                break;
            }
        };
        match ev {
            Event::Start(e) if depth == 0 => match root(e.local_name().as_ref(), out) {
                Some(name) => {
                    entry_name = name;
                    depth = 1;
                }
                None => break,
            },
            // `<urlset/>`: a sitemap with nothing in it (`root` records the
            // format, or the error that ends the reading).
            Event::Empty(e) if depth == 0 && root(e.local_name().as_ref(), out).is_none() => break,
            Event::Start(e) => {
                depth += 1;
                let name = e.local_name();
                let name = name.as_ref();
                if depth == 2 && is(name, entry_name) {
                    entry = Some(Entry::default());
                } else if depth == 3 && entry.is_some() {
                    field = if is(name, "loc") {
                        Some(Field::Loc)
                    } else if is(name, "lastmod") {
                        Some(Field::Lastmod)
                    } else if is(name, "changefreq") {
                        Some(Field::Changefreq)
                    } else if is(name, "priority") {
                        Some(Field::Priority)
                    } else {
                        None
                    };
                    text.clear();
                }
            }
            Event::Text(t) if field.is_some() => append(&mut text, &t.xml10_content()),
            Event::CData(t) if field.is_some() => append(&mut text, &t),
            Event::GeneralRef(r) if field.is_some() => match r.resolve_char_ref() {
                Ok(Some(c)) => append(&mut text, c.encode_utf8(&mut [0; 4])),
                _ => append(
                    &mut text,
                    match &*r {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        // Unknown entity: the field is not usable as written.
                        _ => "\u{fffd}",
                    },
                ),
            },
            Event::End(_) => {
                if depth == 3 {
                    if let (Some(f), Some(en)) = (field.take(), entry.as_mut()) {
                        let v = Some(text.trim().to_string()).filter(|v| !v.is_empty());
                        match f {
                            Field::Loc => en.loc = v.unwrap_or_default(),
                            Field::Lastmod => en.lastmod = v,
                            Field::Changefreq => en.changefreq = v,
                            Field::Priority => en.priority = v,
                        }
                    }
                } else if depth == 2 {
                    if let Some(en) = entry.take() {
                        if en.loc.is_empty() || en.loc.len() > MAX_FIELD_BYTES || en.loc.contains('\u{fffd}') {
                            out.skipped += 1;
                        } else if !push(out, en, limits) {
                            break;
                        }
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Event::Eof => {
                if out.format.is_none() {
                    out.error = Some("not a sitemap: no root element".into());
                } else if depth > 0 {
                    out.error = Some("unexpected end of file inside an element".into());
                }
                break;
            }
            _ => {}
        }
        buf.clear();
    }
    reader.into_inner()
}

/// The format a root element names, and the element its entries are;
/// None (and the error recorded) for any other root.
fn root(name: &str, out: &mut Parsed) -> Option<&'static str> {
    if is(name, "urlset") {
        out.format = Some(Format::UrlSet);
        Some("url")
    } else if is(name, "sitemapindex") {
        out.format = Some(Format::Index);
        Some("sitemap")
    } else {
        out.error = Some(format!(
            "not a sitemap: the root element is <{}>, not <urlset> or <sitemapindex>",
            name
        ));
        None
    }
}

fn append(text: &mut String, s: &str) {
    if text.len() + s.len() <= MAX_FIELD_BYTES + 1 {
        text.push_str(s);
    } else {
        // Too long to be a URL or a date: marked unusable (and no longer grows).
        if !text.ends_with('\u{fffd}') {
            text.push('\u{fffd}');
        }
    }
}
