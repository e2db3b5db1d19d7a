//! Body bytes → UTF-8 text, choosing the encoding as the HTML standard does:
//! byte-order mark, then the `Content-Type` charset, then a `<meta charset>`
//! or `<meta http-equiv>` in the first 1024 bytes, then detection (valid
//! UTF-8, else chardetng). Malformed sequences become U+FFFD, never an error.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// Bytes the `<meta>` prescan looks at (HTML standard: 1024).
const PRESCAN_BYTES: usize = 1024;
/// Bytes chardetng looks at when the encoding must be guessed.
const DETECT_BYTES: usize = 64 * 1024;

/// Decode `body` to UTF-8. `header_charset` is the `charset` parameter of the
/// `Content-Type` header, if any. Returns the text (borrowed from `body`
/// when it is UTF-8 already) and the name of the
/// encoding used (e.g. `"UTF-8"`, `"windows-1252"`).
pub fn decode_text<'a>(body: &'a [u8], header_charset: Option<&str>) -> (Cow<'a, str>, &'static str) {
    if let Some((enc, bom_len)) = Encoding::for_bom(body) {
        return decode_with(enc, &body[bom_len..]);
    }
    if let Some(enc) = header_charset.and_then(|l| Encoding::for_label(l.trim().as_bytes())) {
        return decode_with(enc, body);
    }
    if let Some(enc) = prescan_meta(&body[..body.len().min(PRESCAN_BYTES)]) {
        return decode_with(enc, body);
    }
    if let Ok(s) = std::str::from_utf8(body) {
        return (Cow::Borrowed(s), UTF_8.name());
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(&body[..body.len().min(DETECT_BYTES)], true);
    decode_with(detector.guess(None, chardetng::Utf8Detection::Allow), body)
}

fn decode_with<'a>(enc: &'static Encoding, bytes: &'a [u8]) -> (Cow<'a, str>, &'static str) {
    let (text, _had_errors) = enc.decode_without_bom_handling(bytes);
    (text, enc.name())
}

/// The encoding named by a `charset` inside a `<meta ...>` tag of `head`
/// (covers both `<meta charset=x>` and `content="text/html; charset=x"`).
/// As the HTML standard says, a meta UTF-16 means UTF-8 (the bytes are ASCII
/// compatible, or there would have been a BOM) and x-user-defined means windows-1252.
fn prescan_meta(head: &[u8]) -> Option<&'static Encoding> {
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = memchr::memmem::find(&lower[from..], b"<meta") {
        let start = from + pos + 5;
        let end = memchr::memchr(b'>', &lower[start..]).map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(enc) = charset_in_tag(tag) {
            return Some(match enc.name() {
                "UTF-16LE" | "UTF-16BE" => UTF_8,
                "x-user-defined" => WINDOWS_1252,
                _ => enc,
            });
        }
        from = end;
    }
    None
}

fn charset_in_tag(tag: &[u8]) -> Option<&'static Encoding> {
    let mut from = 0;
    while let Some(pos) = memchr::memmem::find(&tag[from..], b"charset") {
        let mut i = from + pos + 7;
        from = i;
        while tag.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        if tag.get(i) != Some(&b'=') {
            continue;
        }
        i += 1;
        while tag
            .get(i)
            .is_some_and(|b| b.is_ascii_whitespace() || *b == b'"' || *b == b'\'')
        {
            i += 1;
        }
        let value_end = tag[i..]
            .iter()
            .position(|b| matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace())
            .map_or(tag.len(), |e| i + e);
        if let Some(enc) = Encoding::for_label(&tag[i..value_end]) {
            return Some(enc);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins_over_meta() {
        let body = b"<meta charset=utf-8>caf\xe9";
        assert_eq!(
            decode_text(body, Some("ISO-8859-1")),
            ("<meta charset=utf-8>café".into(), "windows-1252")
        );
    }

    #[test]
    fn bom_wins_over_header() {
        let body = b"\xef\xbb\xbfcaf\xc3\xa9";
        assert_eq!(decode_text(body, Some("latin1")), ("café".into(), "UTF-8"));
        let utf16 = b"\xff\xfeh\0i\0";
        assert_eq!(decode_text(utf16, None), ("hi".into(), "UTF-16LE"));
    }

    #[test]
    fn meta_charset_forms() {
        let a = b"<html><head><META CHARSET='windows-1251'></head>\xcf\xf0\xe8";
        assert_eq!(decode_text(a, None).1, "windows-1251");
        assert!(decode_text(a, None).0.ends_with("При"));
        let b = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">";
        assert_eq!(decode_text(b, None).1, "Shift_JIS");
        let c = b"<meta charset=\"utf-16\"><p>x</p>";
        assert_eq!(decode_text(c, None).1, "UTF-8");
        // An unknown label is skipped, not an error.
        let d = b"<meta charset=\"klingon\">abc";
        assert_eq!(decode_text(d, None), ("<meta charset=\"klingon\">abc".into(), "UTF-8"));
    }

    #[test]
    fn meta_after_1024_bytes_is_ignored() {
        let mut body = vec![b' '; 1100];
        body.extend_from_slice(b"<meta charset=koi8-r>");
        assert_eq!(decode_text(&body, None).1, "UTF-8");
    }

    #[test]
    fn invalid_utf8_without_hints_is_detected() {
        let latin = "Le café était très fréquenté à l'époque où nous étions étudiants."
            .chars()
            .map(|c| c as u32 as u8)
            .collect::<Vec<u8>>();
        let (text, enc) = decode_text(&latin, None);
        assert_eq!(enc, "windows-1252");
        assert!(text.contains("café était"));
    }

    #[test]
    fn garbage_never_panics() {
        let (_text, _enc) = decode_text(b"<meta charset=", None);
        let (_text, _enc) = decode_text(b"<meta", Some(""));
        let (_text, _enc) = decode_text(&[0xff, 0xfe, 0xfd], Some("bogus"));
    }
}
