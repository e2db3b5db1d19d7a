//! A byte-level HTML tokenizer for the streaming extraction: the states of
//! the WHATWG tokenizer that decide text, start tags, end tags and
//! attributes, on the whole document at once (text runs and attribute
//! values are slices of the input, no per-character buffer). It yields what
//! html5ever's tokenizer yields to [`super::stream`]'s sink — the same text
//! (character references decoded, CR LF folded), the same tags with the
//! same attributes, comments and doctypes skipped — and gives up
//! ([`Unsupported`]) on the input it does not model, which the caller then
//! hands to html5ever: a NUL byte. A script holding `<!--` (the old way of
//! hiding scripts from browsers without them) is walked through the script
//! data escape states to find its end. Tests compare the two on generated
//! markup and on the test web. The tests of every tokenizer state against
//! html5ever are in this file beside the states they check, which takes it
//! past 800 lines.

use std::borrow::Cow;

use html5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};
use html5ever::LocalName;

/// The input uses what this tokenizer leaves to html5ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unsupported;

/// The tokenizer state the sink asks for after a start tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    Data,
    /// Text with character references (`title`, `textarea`).
    Rcdata,
    /// Text as written (`style`, `noscript`, ...).
    Rawtext,
    /// A script's text.
    Script,
    /// Everything to the end is text.
    Plaintext,
}

/// A start tag's attributes: names (lowercase) and values (references
/// decoded) in one buffer, the first of equal names only.
#[derive(Debug, Default)]
pub(super) struct Attrs {
    buf: String,
    /// (name start, name end, value end): the value follows its name.
    spans: Vec<(u32, u32, u32)>,
}

impl Attrs {
    fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
    }

    /// All attributes as (name, value), in document order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spans.iter().map(|&(s, n, v)| {
            let (s, n, v) = (s as usize, n as usize, v as usize);
            (&self.buf[s..n], &self.buf[n..v])
        })
    }

    /// The value of `name`.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Starts an attribute whose name begins with `first` (lowercased).
    fn start(&mut self, first: &str) -> usize {
        let at = self.buf.len();
        push_lower(&mut self.buf, first);
        at
    }

    /// Ends the name begun at `at`; returns where the value starts.
    fn end_name(&self) -> usize {
        self.buf.len()
    }

    /// Ends the attribute (dropped when its name is taken already).
    fn finish(&mut self, at: usize, name_end: usize) {
        let name = &self.buf[at..name_end];
        let dup = self
            .spans
            .iter()
            .any(|&(s, n, _)| &self.buf[s as usize..n as usize] == name);
        if dup || self.buf.len() > u32::MAX as usize {
            self.buf.truncate(at);
        } else {
            self.spans.push((at as u32, name_end as u32, self.buf.len() as u32));
        }
    }
}

/// What the tokenizer feeds.
pub(super) trait Sink {
    /// Character data (any number of pieces between two tags).
    fn text(&mut self, text: &str);
    /// A start tag; returns the state to continue in.
    fn start(&mut self, name: &LocalName, attrs: &Attrs, self_closing: bool) -> Next;
    /// An end tag.
    fn end(&mut self, name: &LocalName);
}

/// Appends `s` with ASCII upper case folded.
fn push_lower(buf: &mut String, s: &str) {
    let at = buf.len();
    buf.push_str(s);
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        buf[at..].make_ascii_lowercase();
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0C' | b' ')
}

/// `html` with CR LF and lone CR as LF (the tokenizer's input stream
/// preprocessing), without a copy when there is no CR.
fn normalize_newlines(html: &str) -> Cow<'_, str> {
    if memchr::memchr(b'\r', html.as_bytes()).is_none() {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find('\r') {
        out.push_str(&rest[..i]);
        out.push('\n');
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('\n') {
            rest = r;
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A decoded character reference: up to two characters and where the
/// input continues.
struct CharRef {
    chars: [char; 2],
    n: usize,
    end: usize,
}

impl CharRef {
    fn push_to(&self, out: &mut String) {
        for &c in &self.chars[..self.n] {
            out.push(c);
        }
    }
}

/// The character reference after the `&` at `s[i - 1]`, as html5ever
/// decodes it; None when the `&` is literal text (the input continues at
/// `i`). `in_attr`: the historical rule of attribute values (a named
/// reference without `;` followed by `=` or an alphanumeric is text).
fn char_ref(s: &str, i: usize, in_attr: bool) -> Option<CharRef> {
    let b = s.as_bytes();
    let &first = b.get(i)?;
    if first == b'#' {
        let mut j = i + 1;
        let hex = matches!(b.get(j), Some(b'x' | b'X'));
        if hex {
            j += 1;
        }
        let base = if hex { 16 } else { 10 };
        let (mut num, mut too_big, start) = (0u32, false, j);
        while let Some(d) = b.get(j).and_then(|&c| (c as char).to_digit(base)) {
            num = num.wrapping_mul(base);
            if num > 0x10FFFF {
                too_big = true;
            }
            num = num.wrapping_add(d);
            j += 1;
        }
        if j == start {
            return None;
        }
        if b.get(j) == Some(&b';') {
            j += 1;
        }
        let c = match num {
            n if n > 0x10FFFF || too_big => '\u{fffd}',
            0x00 | 0xD800..=0xDFFF => '\u{fffd}',
            0x80..=0x9F => C1_REPLACEMENTS[(num - 0x80) as usize]
                .or_else(|| char::from_u32(num))
                .unwrap_or('\u{fffd}'),
            n => char::from_u32(n).unwrap_or('\u{fffd}'),
        };
        return Some(CharRef {
            chars: [c, '\0'],
            n: 1,
            end: j,
        });
    }
    if !first.is_ascii_alphanumeric() {
        return None;
    }
    // The longest name in the table that the input starts with; the table
    // holds every prefix of a name (with (0, 0)), so the walk stops at the
    // first byte that extends no name.
    let mut best: Option<(usize, u32, u32)> = None;
    let mut j = i;
    while j < b.len() && b[j].is_ascii() {
        j += 1;
        match NAMED_ENTITIES.get(&s[i..j]) {
            Some(&(c1, c2)) => {
                if c1 != 0 {
                    best = Some((j, c1, c2));
                }
            }
            None => break,
        }
    }
    let (end, c1, c2) = best?;
    if b[end - 1] != b';' && in_attr && b.get(end).is_some_and(|&c| c == b'=' || c.is_ascii_alphanumeric()) {
        return None;
    }
    let c1 = char::from_u32(c1).unwrap_or('\u{fffd}');
    let c2 = char::from_u32(c2).unwrap_or('\0');
    Some(CharRef {
        chars: [c1, c2],
        n: if c2 == '\0' { 1 } else { 2 },
        end,
    })
}

/// The attribute states, from "before attribute name".
#[derive(Clone, Copy)]
enum AttrState {
    BeforeName,
    AfterName,
    BeforeValue,
    AfterQuoted,
    SelfClosing,
}

/// Tokenizes the whole of `html` into `sink`. On [`Unsupported`] (a NUL
/// byte, found before any token) the sink has seen nothing.
pub(super) fn tokenize(html: &str, sink: &mut impl Sink) -> Result<(), Unsupported> {
    let b0 = html.as_bytes();
    if memchr::memchr(0, b0).is_some() {
        return Err(Unsupported);
    }
    let html = normalize_newlines(html);
    let s = html.strip_prefix('\u{feff}').unwrap_or(&html);
    Tokenizer {
        s,
        attrs: Attrs::default(),
        text: String::new(),
        names: std::array::from_fn(|_| (0, None)),
    }
    .run(sink);
    Ok(())
}

struct Tokenizer<'a> {
    s: &'a str,
    attrs: Attrs,
    /// Scratch for text with references decoded.
    text: String,
    /// Tag names of at most 8 bytes seen in this document, by their
    /// lowercased bytes packed into a `u64` (the input has no NUL, so the
    /// zero padding is unambiguous), each in one of [`NAME_SLOTS`] slots:
    /// a repeated name is not interned again.
    names: [(u64, Option<LocalName>); NAME_SLOTS],
}

/// Slots of [`Tokenizer::names`] (a power of two).
const NAME_SLOTS: usize = 64;

/// A tag read by [`Tokenizer::tag`].
struct TagEnd {
    /// Where the input continues (None: the input ended inside the tag,
    /// which drops it).
    end: Option<usize>,
    self_closing: bool,
}

impl Tokenizer<'_> {
    fn run(mut self, sink: &mut impl Sink) {
        let s = self.s;
        let b = s.as_bytes();
        let n = b.len();
        let mut i = 0;
        while i < n {
            let Some(off) = memchr::memchr2(b'<', b'&', &b[i..]) else {
                sink.text(&s[i..]);
                break;
            };
            if off > 0 {
                sink.text(&s[i..i + off]);
            }
            i += off;
            if b[i] == b'&' {
                i = self.text_ref(s, i, sink);
                continue;
            }
            // `<` at i.
            let Some(&c) = b.get(i + 1) else {
                sink.text("<");
                break;
            };
            match c {
                b'!' => i = self.markup_declaration(i + 2),
                b'/' => match b.get(i + 2) {
                    None => {
                        sink.text("</");
                        break;
                    }
                    Some(b'>') => i += 3,
                    Some(c) if c.is_ascii_alphabetic() => {
                        let (name, at) = self.tag_name(i + 2);
                        let t = self.tag(at);
                        let Some(end) = t.end else { break };
                        sink.end(&name);
                        i = end;
                    }
                    Some(_) => i = bogus_comment(b, i + 2),
                },
                b'?' => i = bogus_comment(b, i + 1),
                c if c.is_ascii_alphabetic() => {
                    let (name, at) = self.tag_name(i + 1);
                    let t = self.tag(at);
                    let Some(end) = t.end else { break };
                    let next = sink.start(&name, &self.attrs, t.self_closing);
                    i = match next {
                        Next::Data => end,
                        Next::Plaintext => {
                            if end < n {
                                sink.text(&s[end..]);
                            }
                            n
                        }
                        raw => self.raw_text(end, &name, raw, sink),
                    };
                }
                _ => {
                    sink.text("<");
                    i += 1;
                }
            }
        }
    }

    /// After `<!` at `i`: a comment, a doctype or a bogus comment; returns
    /// where the input continues.
    /// The character reference at `s[amp]` (an `&`) in text, or the `&`
    /// itself when none is there, given to `sink`; the offset after it.
    fn text_ref(&mut self, s: &str, amp: usize, sink: &mut impl Sink) -> usize {
        match char_ref(s, amp + 1, false) {
            Some(r) => {
                self.text.clear();
                r.push_to(&mut self.text);
                sink.text(&self.text);
                r.end
            }
            None => {
                sink.text("&");
                amp + 1
            }
        }
    }

    fn markup_declaration(&self, i: usize) -> usize {
        let b = self.s.as_bytes();
        let rest = &b[i..];
        if rest.starts_with(b"--") {
            let body = &rest[2..];
            let end = if body.starts_with(b">") {
                Some(1)
            } else if body.starts_with(b"->") {
                Some(2)
            } else {
                let a = memchr::memmem::find(body, b"-->").map(|p| p + 3);
                let c = memchr::memmem::find(body, b"--!>").map(|p| p + 4);
                match (a, c) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                }
            };
            return end.map_or(b.len(), |e| i + 2 + e);
        }
        // A doctype ends at its first `>` as a bogus comment does.
        bogus_comment(b, i)
    }

    /// The tag name starting at `i` (an ASCII letter), lowercased, and
    /// where it ends.
    fn tag_name(&mut self, i: usize) -> (LocalName, usize) {
        let b = self.s.as_bytes();
        let mut j = i;
        while j < b.len() && !matches!(b[j], b'\t' | b'\n' | b'\x0C' | b' ' | b'/' | b'>') {
            j += 1;
        }
        let raw = &self.s[i..j];
        let intern = || {
            if raw.bytes().any(|c| c.is_ascii_uppercase()) {
                LocalName::from(raw.to_ascii_lowercase())
            } else {
                LocalName::from(raw)
            }
        };
        if raw.len() > 8 {
            return (intern(), j);
        }
        let packed = raw
            .bytes()
            .rev()
            .fold(0u64, |k, c| (k << 8) | u64::from(c.to_ascii_lowercase()));
        let slot = &mut self.names
            [(packed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - NAME_SLOTS.trailing_zeros())) as usize];
        match slot {
            (k, Some(name)) if *k == packed => (name.clone(), j),
            _ => {
                let name = intern();
                *slot = (packed, Some(name.clone()));
                (name, j)
            }
        }
    }

    /// The rest of a tag after its name (attributes into `self.attrs`).
    fn tag(&mut self, mut i: usize) -> TagEnd {
        let s = self.s;
        let b = s.as_bytes();
        let n = b.len();
        self.attrs.clear();
        let dropped = TagEnd {
            end: None,
            self_closing: false,
        };
        let emit = |end: usize, self_closing: bool| TagEnd {
            end: Some(end),
            self_closing,
        };
        // The attribute being read: where its name starts and ends.
        let mut cur: Option<(usize, usize)> = None;
        let mut state = match b.get(i) {
            None => return dropped,
            Some(b'>') => return emit(i + 1, false),
            Some(b'/') => {
                i += 1;
                AttrState::SelfClosing
            }
            Some(_) => {
                i += 1;
                AttrState::BeforeName
            }
        };
        loop {
            let Some(&c) = b.get(i) else {
                return dropped;
            };
            match state {
                AttrState::BeforeName => {
                    if is_space(c) {
                        i += 1;
                    } else if c == b'/' || c == b'>' {
                        state = AttrState::AfterName;
                    } else {
                        // A new attribute; `=` may be its name's first character.
                        if let Some((at, ne)) = cur.take() {
                            self.attrs.finish(at, ne);
                        }
                        let at = self.attrs.buf.len();
                        let j = self.attr_name_end(i + 1);
                        self.attrs.start(&s[i..j]);
                        cur = Some((at, self.attrs.end_name()));
                        i = j;
                        state = AttrState::AfterName;
                        if b.get(i) == Some(&b'=') {
                            i += 1;
                            state = AttrState::BeforeValue;
                        }
                    }
                }
                AttrState::AfterName => {
                    i += 1;
                    match c {
                        _ if is_space(c) => {}
                        b'/' => state = AttrState::SelfClosing,
                        b'=' => state = AttrState::BeforeValue,
                        b'>' => {
                            self.finish_attr(cur);
                            return emit(i, false);
                        }
                        _ => {
                            if let Some((at, ne)) = cur.take() {
                                self.attrs.finish(at, ne);
                            }
                            let at = self.attrs.buf.len();
                            let j = self.attr_name_end(i);
                            self.attrs.start(&s[i - 1..j]);
                            cur = Some((at, self.attrs.end_name()));
                            i = j;
                            if b.get(i) == Some(&b'=') {
                                i += 1;
                                state = AttrState::BeforeValue;
                            }
                        }
                    }
                }
                AttrState::BeforeValue => match c {
                    _ if is_space(c) => i += 1,
                    b'"' | b'\'' => {
                        let Some(end) = self.quoted_value(i + 1, c) else {
                            return dropped;
                        };
                        i = end + 1;
                        state = AttrState::AfterQuoted;
                    }
                    b'>' => {
                        self.finish_attr(cur);
                        return emit(i + 1, false);
                    }
                    _ => {
                        let Some(end) = self.unquoted_value(i) else {
                            return dropped;
                        };
                        i = end + 1;
                        if b[end] == b'>' {
                            self.finish_attr(cur);
                            return emit(i, false);
                        }
                        state = AttrState::BeforeName;
                    }
                },
                AttrState::AfterQuoted => match c {
                    _ if is_space(c) => {
                        i += 1;
                        state = AttrState::BeforeName;
                    }
                    b'/' => {
                        i += 1;
                        state = AttrState::SelfClosing;
                    }
                    b'>' => {
                        self.finish_attr(cur);
                        return emit(i + 1, false);
                    }
                    _ => state = AttrState::BeforeName,
                },
                AttrState::SelfClosing => {
                    if c == b'>' {
                        self.finish_attr(cur);
                        return emit(i + 1, true);
                    }
                    state = AttrState::BeforeName;
                }
            }
            if i > n {
                return dropped;
            }
        }
    }

    fn finish_attr(&mut self, cur: Option<(usize, usize)>) {
        if let Some((at, ne)) = cur {
            self.attrs.finish(at, ne);
        }
    }

    /// Where an attribute name whose rest starts at `i` ends.
    fn attr_name_end(&self, mut i: usize) -> usize {
        let b = self.s.as_bytes();
        while i < b.len() && !matches!(b[i], b'\t' | b'\n' | b'\x0C' | b' ' | b'/' | b'>' | b'=') {
            i += 1;
        }
        i
    }

    /// Reads a value quoted with `q` starting at `i` into the attribute
    /// buffer; returns the position of the closing quote.
    fn quoted_value(&mut self, mut i: usize, q: u8) -> Option<usize> {
        let s = self.s;
        let b = s.as_bytes();
        loop {
            let off = memchr::memchr2(q, b'&', &b[i..])?;
            self.attrs.buf.push_str(&s[i..i + off]);
            i += off;
            if b[i] == q {
                return Some(i);
            }
            i = self.attr_char_ref(i + 1);
        }
    }

    /// Reads an unquoted value starting at `i`; returns the position of
    /// the whitespace or `>` that ends it.
    fn unquoted_value(&mut self, mut i: usize) -> Option<usize> {
        let s = self.s;
        let b = s.as_bytes();
        loop {
            let off = b[i..]
                .iter()
                .position(|&c| matches!(c, b'\t' | b'\n' | b'\x0C' | b' ' | b'&' | b'>'))?;
            self.attrs.buf.push_str(&s[i..i + off]);
            i += off;
            if b[i] != b'&' {
                return Some(i);
            }
            i = self.attr_char_ref(i + 1);
        }
    }

    /// A character reference in an attribute value after the `&` at
    /// `i - 1`; returns where the value continues.
    fn attr_char_ref(&mut self, i: usize) -> usize {
        match char_ref(self.s, i, true) {
            Some(r) => {
                r.push_to(&mut self.attrs.buf);
                r.end
            }
            None => {
                self.attrs.buf.push('&');
                i
            }
        }
    }

    /// The text of a raw-text element `name` from `i` to its end tag, and
    /// the end tag; returns where the input continues.
    fn raw_text(&mut self, i: usize, name: &LocalName, kind: Next, sink: &mut impl Sink) -> usize {
        let s = self.s;
        let b = s.as_bytes();
        let n = b.len();
        let name_b = name.as_bytes();
        let mut j = i;
        // The end tag: `</name` (any case) followed by whitespace, `/` or `>`.
        let close = loop {
            let Some(off) = memchr::memmem::find(&b[j..], b"</") else {
                break None;
            };
            let at = j + off;
            let k = at + 2;
            if b.len() >= k + name_b.len()
                && b[k..k + name_b.len()].eq_ignore_ascii_case(name_b)
                && b.get(k + name_b.len())
                    .is_some_and(|&c| matches!(c, b'\t' | b'\n' | b'\x0C' | b' ' | b'/' | b'>'))
            {
                break Some(at);
            }
            j = at + 1;
        };
        // `<!--` in a script opens the script data escape states, in which
        // a `</script>` may not end it: walk them then (an end tag they
        // find is one of the search's, so without one there is none).
        let close = match close {
            Some(at) if kind == Next::Script && memchr::memmem::find(&b[i..at], b"<!--").is_some() => {
                escaped_script_end(b, i, name_b)
            }
            c => c,
        };
        let text_end = close.unwrap_or(n);
        if kind == Next::Rcdata {
            let mut p = i;
            while let Some(off) = memchr::memchr(b'&', &b[p..text_end]) {
                if off > 0 {
                    sink.text(&s[p..p + off]);
                }
                p += off;
                // A reference never runs past the end tag's `<`.
                p = self.text_ref(&s[..text_end], p, sink);
            }
            if p < text_end {
                sink.text(&s[p..text_end]);
            }
        } else if text_end > i {
            sink.text(&s[i..text_end]);
        }
        let Some(at) = close else {
            return n;
        };
        let t = self.tag(at + 2 + name_b.len());
        match t.end {
            Some(end) => {
                sink.end(name);
                end
            }
            None => n,
        }
    }
}

/// Where the script text from `i` ends: the `<` of its end tag `</name`
/// (any case, followed by whitespace, `/` or `>`), walking the WHATWG
/// script data states with their escapes. `<!--` opens the escaped state,
/// `-->` closes it; inside it `<script` followed by whitespace, `/` or `>`
/// opens the double-escaped state, where `</script` does not end the
/// script, until `</script` (back to escaped) or `-->` (back to plain
/// script data). None: the script runs to the end of the input.
fn escaped_script_end(b: &[u8], i: usize, name: &[u8]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Data,
        Escaped,
        Double,
    }
    let is_end = |c: u8| matches!(c, b'\t' | b'\n' | b'\x0C' | b' ' | b'/' | b'>');
    // Whether the bytes from `at` spell `name` (any case) followed by
    // whitespace, `/` or `>`.
    let names_it = |at: usize| {
        b.len() > at + name.len() && b[at..at + name.len()].eq_ignore_ascii_case(name) && is_end(b[at + name.len()])
    };
    let n = b.len();
    let (mut st, mut dashes, mut p) = (S::Data, 0usize, i);
    while p < n {
        let c = b[p];
        match st {
            S::Data => {
                p += memchr::memchr(b'<', &b[p..])?;
                if b.get(p + 1) == Some(&b'/') && names_it(p + 2) {
                    return Some(p);
                }
                if b[p..].starts_with(b"<!--") {
                    // `<!--` leaves the state after its dashes: `<!-->` closes at once.
                    st = S::Escaped;
                    dashes = 2;
                    p += 4;
                } else {
                    p += 1;
                }
                continue;
            }
            S::Escaped | S::Double => match c {
                b'-' => {
                    dashes += 1;
                    p += 1;
                    continue;
                }
                b'>' if dashes >= 2 => {
                    st = S::Data;
                    p += 1;
                }
                b'<' if st == S::Escaped => {
                    if b.get(p + 1) == Some(&b'/') && names_it(p + 2) {
                        return Some(p);
                    }
                    if names_it(p + 1) {
                        // `<script` followed by whitespace, `/` or `>`: the
                        // letters are read, the character after them is
                        // consumed as it is in the double-escaped state.
                        st = S::Double;
                        p += 1 + name.len() + 1;
                    } else {
                        p += 1;
                    }
                }
                b'<' => {
                    if b.get(p + 1) == Some(&b'/') && names_it(p + 2) {
                        st = S::Escaped;
                        p += 2 + name.len() + 1;
                    } else {
                        p += 1;
                    }
                }
                _ => p += 1,
            },
        }
        dashes = 0;
    }
    None
}

/// A bogus comment (or doctype) from `i` to its first `>`; returns where
/// the input continues.
fn bogus_comment(b: &[u8], i: usize) -> usize {
    match memchr::memchr(b'>', &b[i.min(b.len())..]) {
        Some(off) => i + off + 1,
        None => b.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::{extract, extract_html5ever};
    use super::super::ExtractOptions;
    use super::*;

    /// Feeds nothing anywhere: only whether the tokenizer takes the input.
    struct Null;
    impl Sink for Null {
        fn text(&mut self, _: &str) {}
        fn start(&mut self, name: &LocalName, _: &Attrs, _: bool) -> Next {
            match &**name {
                "script" => Next::Script,
                "title" => Next::Rcdata,
                "style" => Next::Rawtext,
                _ => Next::Data,
            }
        }
        fn end(&mut self, _: &LocalName) {}
    }

    /// Markup where the two tokenizers could part: references, comments,
    /// raw text and its end tags, attributes, line ends, the end of input.
    const EDGES: &[&str] = &[
        "<a href=\"?a=1&copy=2&amp;b&ampx&amp=3&notit;\" title='&lt&gt;&#65&#x42;&#X43'>x&ampy &notin; &notit; &amp</a>",
        "<p>&#0;&#128;&#x9F;&#x110000;&#xD800;&#99999999999;&#;&#x;&#xg;&#12a &a &; &AMP; &Aacute &#x41",
        "<p>a\r\nb\rc\n\rd</p><a href='x\r\ny'>\r</a>",
        "\u{feff}<title>bom</title><p>x",
        "<p>x</>y<?php echo 1 ?>z<!doctype html><!DOCTYPE x \"a>b\">w",
        "<p>a<!---->b<!--->c<!-->d<!-- x --!>e<!-- -- -x- --->f<!--<!-->g<!--a--!-->h",
        "<p>a<!-b>c<![CDATA[d>e]]>f</ p>g</1>h<",
        "<style>p{}</STYLE >x<style></stylex></style/>y<style>a</style foo=\"></style>\">z",
        "<script>if (a</b) x = '</scrip'</script >s<script></script",
        "<title>a &amp; <b>b</b></title ><textarea>&lt;p&gt;</textarea>",
        "<a href=x =y z=w HREF=dup a'b=c d\"e f<g>t</a><a href=/u/>u</a><p/>",
        "<a href  =  v  title>t</a><a href=\"q\"title='r'>q</a><a href=a&amp;b>x</a>",
        "<img src=x alt=\"a>b\"><a href='x",
        "<p>one<plaintext><p>all & text</p>",
        "<div class=\"nav bar\" id=Menu-Top>m</div><P CLASS=x>P</P>",
        "<svg><foo/><bar /></svg><math><p/>q</math>",
        "<p>end in tag <a href=x",
        "<p>end in name <abc",
        "<p>ends with </",
        "<p>ends with <!",
        "<p>ends with &",
        "<p>ends with &#",
        "<p>ends with &am",
        "<p>ends with &amp",
        "<p>é<ü>ö</ü>&eacute;<a hréf=ç>ç</a>",
    ];

    #[test]
    fn own_tokenizer_agrees_with_html5ever() {
        for html in EDGES.iter().chain(super::super::tests::TRICKY) {
            assert_eq!(tokenize(html, &mut Null), Ok(()), "{html}");
            for max in [1 << 20, 16] {
                assert_eq!(
                    extract(html, ExtractOptions::new(max)),
                    extract_html5ever(html, ExtractOptions::new(max)),
                    "{html}"
                );
            }
        }
    }

    #[test]
    fn nul_bytes_go_to_html5ever() {
        for html in ["<p>a\u{0}b</p>", "<script><!-- \u{0} --></script>z"] {
            assert_eq!(tokenize(html, &mut Null), Err(Unsupported), "{html}");
            assert_eq!(
                extract(html, ExtractOptions::new(1 << 20)),
                extract_html5ever(html, ExtractOptions::new(1 << 20)),
                "{html}"
            );
        }
    }

    /// Scripts hidden in comments, the script data escape states: where
    /// each script ends, so what text follows it.
    #[test]
    fn escaped_scripts_end_where_html5ever_ends_them() {
        for html in [
            "<script><!-- x </script> y --></script>z",
            "<script>a<!--b</script><p>c",
            "<script><!--\ndocument.write('<script>x</script>');\n//--></script><p>after</p>",
            "<script><!-- <script> </script> still --> </script>t",
            "<script><!-- <SCRIPT>a</Script >b--></script>c",
            "<script><!-- <script>a--> </script>d",
            "<script><!-- <scripts> </script>e",
            "<script><!-- <script/></script/>f--></script>g",
            "<script><!-->x</script>h",
            "<script><!--->x</script>i",
            "<script><!- -></script>j",
            "<script><!-- - -> <script> </script> x --></script>k",
            "<script><!-- --!> <script> </script> x --></script>l",
            "<script><!-- -- > <script> </script> x --></script>l2",
            "<script><!-- ---> <script> </script> x --></script>l3",
            "<script><!-- <script> - -> </script> x --></script>l4",
            "<script><!-- <script>x<!-- </script>m",
            "<script><!-- <script>--<-->n</script>o",
            "<script><!-- </scr--> </script>p",
            "<script><!-- <script x</script>q",
            "<script><!-- </script",
            "<script><!-- <script",
            "<script><!-- <script> </script",
            "<SCRIPT LANGUAGE=JavaScript><!--\nfunction f() { return a<b && c-->d; }\n// --></SCRIPT>r",
        ] {
            assert_eq!(tokenize(html, &mut Null), Ok(()), "{html}");
            for max in [1 << 20, 4] {
                assert_eq!(
                    extract(html, ExtractOptions::new(max)),
                    extract_html5ever(html, ExtractOptions::new(max)),
                    "{html}"
                );
            }
        }
        // A comment in a style or after the script is no escape.
        let html = "<style><!-- a </style><p>s</p><script>x</script><!-- c --><p>t";
        assert_eq!(
            extract(html, ExtractOptions::new(1 << 20)),
            extract_html5ever(html, ExtractOptions::new(1 << 20))
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Markup assembled from pieces where tokenizers differ agrees.
        #[test]
        fn own_tokenizer_agrees_on_generated_markup(pieces in proptest::collection::vec(0usize..PIECES.len(), 0..40)) {
            let html: String = pieces.iter().map(|&i| PIECES[i]).collect();
            proptest::prop_assert_eq!(extract(&html, ExtractOptions::new(1 << 20)), extract_html5ever(&html, ExtractOptions::new(1 << 20)), "{}", html);
        }
    }

    const PIECES: &[&str] = &[
        "<p>",
        "</p>",
        "<a href=",
        "\"",
        "'",
        "&amp",
        "&",
        ";",
        "#x41",
        "#",
        "x",
        "9",
        "<!--",
        "-->",
        "--!>",
        "-",
        "!",
        "<script>",
        "</script>",
        "</SCRIPT",
        "<script ",
        "<SCRIPT/",
        "<scripts>",
        "</script ",
        "--",
        "<!-->",
        "<title>",
        "</title>",
        "<style>",
        "</style",
        "word",
        " ",
        "\n",
        "\r",
        "<",
        ">",
        "/",
        "=",
        "<div class=nav>",
        "</div>",
        "é",
        "<!DOCTYPE html>",
        "<textarea>",
        "<svg>",
        "<br/>",
        "&not",
        "in",
        "<?",
        "</",
        "<h1>",
        "<li>",
        "<table><td>",
        "&#",
        "&#x",
        "</a>",
        "<A HREF=X>",
        "\u{feff}",
        "\t",
        "a=b",
        " hidden",
        "<nav>",
        "<header>",
        "<html lang=fr>",
        "<head>",
        "<body>",
        "<meta ",
        "name=robots content=noindex",
        "<link rel=canonical href=c>",
        "<base href=/b/>",
        "<img alt=",
        "<h2>",
        "<a href=#s>",
        "<button>",
        "<plaintext>",
        "<noscript>",
        "<iframe>",
        "<!",
        "[CDATA[",
        "]]>",
        "&lt;",
        "&copy",
        "<math>",
        "<option>",
        "<dd>",
        "<tr>",
    ];
}
