//! The nesting guard: the longest prefix of a document whose estimated
//! element nesting stays within [`MAX_NESTING`], found by a linear byte scan
//! before parsing.

/// Estimated element nesting beyond which [`super::extract_html`] cuts the input.
pub const MAX_NESTING: usize = 1024;

/// The longest prefix of `html` whose estimated element nesting stays within
/// [`MAX_NESTING`]. The estimate is a byte scan: a start tag opens a level
/// (except void elements and those whose end tag is implied, like `p`, `li`,
/// `td`), an end tag closes one; comments and the raw text of `script`,
/// `style`, `textarea`, `title` are skipped. Linear time, no allocation.
pub fn limit_nesting(html: &str) -> &str {
    let b = html.as_bytes();
    // Each level needs a `<` of its own: with at most MAX_NESTING of them
    // the depth cannot pass the limit, and a SIMD count of one byte is
    // several times cheaper than the tag scan below.
    if b.len() <= MAX_NESTING {
        return html;
    }
    let lt = memchr::memchr_iter(b'<', b).count();
    // Only a `<` that is not `</` can open a level: most pages have fewer
    // than MAX_NESTING such.
    if lt <= MAX_NESTING || lt - memchr::memmem::find_iter(b, b"</").count() <= MAX_NESTING {
        return html;
    }
    let mut depth = 0usize;
    let mut i = 0usize;
    while let Some(off) = memchr::memchr(b'<', &b[i..]) {
        let lt = i + off;
        i = lt + 1;
        let Some(&c) = b.get(i) else { break };
        if c == b'!' {
            if b[i..].starts_with(b"!--") {
                match memchr::memmem::find(&b[i..], b"-->") {
                    Some(end) => i += end + 3,
                    None => break,
                }
            }
            continue;
        }
        let end_tag = c == b'/';
        let start = if end_tag { i + 1 } else { i };
        let name_len = b[start..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'-')
            .count();
        if name_len == 0 || !b[start].is_ascii_alphabetic() {
            continue;
        }
        let name = &b[start..start + name_len];
        // Names are compared lower-cased; none of interest is longer than 8 bytes.
        let mut lower = [0u8; 8];
        let known = name_len <= lower.len();
        if known {
            lower[..name_len].copy_from_slice(name);
            lower.make_ascii_lowercase();
        }
        let name = if known { &lower[..name_len] } else { &[][..] };
        if end_tag {
            if !ignored(name) {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        let raw: Option<&[u8]> = match name {
            b"script" | b"style" | b"textarea" | b"title" => Some(name),
            _ => None,
        };
        if let Some(raw) = raw {
            // Skip to the matching end tag (case-insensitive).
            let mut j = start + name_len;
            let mut found = false;
            while let Some(o) = memchr::memmem::find(&b[j..], b"</") {
                let at = j + o + 2;
                if b.len() >= at + raw.len() && b[at..at + raw.len()].eq_ignore_ascii_case(raw) {
                    i = at + raw.len();
                    found = true;
                    break;
                }
                j = at;
            }
            if !found {
                break;
            }
            continue;
        }
        if !ignored(name) {
            depth += 1;
            if depth > MAX_NESTING {
                return &html[..lt];
            }
        }
    }
    html
}

/// Elements that add no nesting level: void elements, those whose end tag
/// is implied (`p`, `li`, table parts...) and the document's own `html`,
/// `head`, `body`. `name` is lower-case.
fn ignored(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"img"
            | b"input"
            | b"link"
            | b"meta"
            | b"source"
            | b"track"
            | b"wbr"
            | b"param"
            | b"keygen"
            | b"p"
            | b"li"
            | b"dt"
            | b"dd"
            | b"option"
            | b"optgroup"
            | b"tr"
            | b"td"
            | b"th"
            | b"thead"
            | b"tbody"
            | b"tfoot"
            | b"rb"
            | b"rt"
            | b"rp"
            | b"colgroup"
            | b"caption"
            | b"html"
            | b"head"
            | b"body"
    )
}
