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
    scan(html, true)
}

/// [`limit_nesting`]; with `early` false, the tags are scanned to the end
/// (the test's oracle for the early stop).
#[inline(always)]
fn scan(html: &str, early: bool) -> &str {
    let b = html.as_bytes();
    // Each level needs a `<` of its own: with at most MAX_NESTING of them
    // the depth cannot pass the limit, and a SIMD count of one byte is
    // several times cheaper than the tag scan below.
    if b.len() <= MAX_NESTING {
        return html;
    }
    let lt = memchr::memchr_iter(b'<', b).count();
    if lt <= MAX_NESTING {
        return html;
    }
    // Only a `<` that is not `</` can open a level: most pages have fewer
    // than MAX_NESTING such. The scan below keeps count of those it has
    // passed, and stops as soon as the ones left cannot take the depth past
    // the limit (a real page's closing tags keep it shallow, so the scan
    // ends about MAX_NESTING such `<` before the end of the page).
    let openers = lt - memchr::memmem::find_iter(b, b"</").count();
    // `<` not followed by `/` before `i`.
    let mut passed = 0usize;
    let mut depth = 0usize;
    let mut i = 0usize;
    while !early || depth + openers.saturating_sub(passed) > MAX_NESTING {
        let Some(off) = memchr::memchr(b'<', &b[i..]) else {
            break;
        };
        let lt = i + off;
        i = lt + 1;
        let Some(&c) = b.get(i) else { break };
        passed += usize::from(c != b'/');
        if c == b'!' {
            if b[i..].starts_with(b"!--") {
                match memchr::memmem::find(&b[i..], b"-->") {
                    Some(end) => {
                        passed += openers_in(&b[i..i + end + 3]);
                        i += end + 3;
                    }
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
                    passed += openers_in(&b[i..at + raw.len()]);
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

/// The `<` of `region` not followed by `/`. The scan skips comments and
/// raw text by regions that end in `-->` or an end tag's name, so a `</`
/// never spans a region's end.
fn openers_in(region: &[u8]) -> usize {
    memchr::memchr_iter(b'<', region).count() - memchr::memmem::find_iter(region, b"</").count()
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The scan to its end, without stopping early: the oracle.
    fn full_scan(html: &str) -> &str {
        scan(html, false)
    }

    /// Pieces of markup that move the estimate: openers, closers, implied
    /// and void elements, comments and raw text (whose `<` are text).
    const PIECES: &[&str] = &[
        "<div>",
        "</div>",
        "<DIV class=a>",
        "<p>",
        "<li>",
        "<br>",
        "<b",
        "</",
        "<",
        "<!--",
        "-->",
        "<!x>",
        "<script>",
        "</script>",
        "<SCRIPT>",
        "</Script>",
        "<title>",
        "</title>",
        "<textarea>",
        "</textarea>",
        "x",
        " ",
        "a<b",
        "<figcaption>",
        "<-x>",
        "<1>",
        "<!--<i><i>-->",
        "<script><i><i></script>",
        "<style><i></style>",
        "<Title><i><i></TITLE>",
    ];

    fn pieces() -> impl Strategy<Value = String> {
        proptest::collection::vec((0..PIECES.len(), 1usize..60), 0..8)
            .prop_map(|runs| runs.iter().map(|&(p, n)| PIECES[p].repeat(n)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Stopping once the `<` left cannot pass the limit cuts where the
        /// whole scan does: markup around two runs of openers whose depth
        /// ends near the limit, with comments and raw text among them.
        #[test]
        fn stops_early_where_the_whole_scan_cuts(
            before in pieces(),
            deep in (MAX_NESTING - 60)..(MAX_NESTING + 4),
            between in pieces(),
            deeper in 0usize..80,
            after in pieces(),
        ) {
            let html = before + &"<div>".repeat(deep) + &between + &"<div>".repeat(deeper) + &after;
            prop_assert_eq!(limit_nesting(&html), full_scan(&html));
        }
    }

    #[test]
    fn stops_early_at_the_limit() {
        for (open, close) in [
            (MAX_NESTING, 0),
            (MAX_NESTING + 1, 0),
            (MAX_NESTING + 1, 1),
            (2000, 976),
            (2000, 975),
        ] {
            let html = "<div>x</div>".repeat(3000) + &"<div>".repeat(open) + &"</div>".repeat(close);
            assert_eq!(limit_nesting(&html), full_scan(&html), "{open} {close}");
        }
    }
}
