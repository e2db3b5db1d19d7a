//! Text-buffer primitives of extraction: whitespace collapsing (with ASCII
//! fast paths equal to the general Unicode path) and cuts at char
//! boundaries.

/// Whether `b` is ASCII with no whitespace but single spaces: no byte of
/// 0x80 or more, none in 0x09..=0x0D, no two spaces in a row (a space may
/// lead or end). Extraction writes text this way, so [`push_collapsed`] and the
/// content hashes can copy such text at once. Branch-free folds, so that it
/// runs at memory speed.
pub(crate) fn single_spaced_ascii(b: &[u8]) -> bool {
    let odd = b
        .iter()
        .fold(0u8, |a, &c| a | (c & 0x80) | u8::from(c.wrapping_sub(9) < 5));
    let double = b
        .iter()
        .zip(&b[1.min(b.len())..])
        .fold(0u8, |a, (&x, &y)| a | (u8::from(x == b' ') & u8::from(y == b' ')));
    odd | double == 0
}

/// Smallest `i >= min` that is a char boundary of `s` (at most `s.len()`).
pub(super) fn ceil_char_boundary(s: &str, min: usize) -> usize {
    let mut i = min.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Largest `i <= max` that is a char boundary of `s`.
pub(super) fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Appends `text` to `buf` with runs of whitespace collapsed to one space.
/// `pending_space` carries a space owed from the previous piece (a space is
/// never written at the start of `buf`).
pub(super) fn push_collapsed(buf: &mut String, text: &str, pending_space: &mut bool) {
    let bytes = text.as_bytes();
    if single_spaced_ascii(bytes) {
        // Words joined by single spaces, maybe one space at either end (most
        // text nodes): the loop below would copy the core at once.
        if bytes.first() == Some(&b' ') {
            *pending_space = true;
        }
        let core = text.strip_prefix(' ').unwrap_or(text);
        let core = core.strip_suffix(' ').unwrap_or(core);
        if !core.is_empty() {
            if *pending_space && !buf.is_empty() {
                buf.push(' ');
            }
            buf.push_str(core);
        }
        *pending_space = bytes.last() == Some(&b' ') || (*pending_space && core.is_empty());
        return;
    }
    // (U+000B is whitespace to `char::is_whitespace`, not to `u8`'s.)
    if text.is_ascii() && !bytes.contains(&0x0B) {
        // Same result as the general path below; ASCII whitespace only.
        if bytes.first().is_some_and(u8::is_ascii_whitespace) {
            *pending_space = true;
        }
        let mut at = 0;
        loop {
            let start = ascii_find(bytes, at, false);
            if start >= bytes.len() {
                break;
            }
            let end = ascii_find(bytes, start, true);
            if *pending_space && !buf.is_empty() {
                buf.push(' ');
            }
            // ASCII: every index is a char boundary.
            buf.push_str(text.get(start..end).unwrap_or_default());
            *pending_space = true;
            at = end;
        }
        // A space is owed only if the text ended in whitespace.
        *pending_space = bytes.last().is_some_and(u8::is_ascii_whitespace)
            || (*pending_space && bytes.iter().all(u8::is_ascii_whitespace));
        return;
    }
    push_collapsed_general(buf, text, pending_space);
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (8 ASCII bytes, none U+000B) that is
/// ASCII whitespace (0x20, 0x09, 0x0A, 0x0C, 0x0D), the others 0. Exact
/// per byte: no sum carries into the next byte.
#[inline(always)]
fn ascii_whitespace_bits(x: u64) -> u64 {
    let t = x ^ (0x20 * LO);
    let space = !(((t & !HI).wrapping_add(!HI)) | t | !HI);
    // Bit 7 of b + 0x77 is set for b >= 0x09, of b + 0x72 for b >= 0x0E.
    let control = x.wrapping_add(0x77 * LO) & !x.wrapping_add(0x72 * LO) & HI;
    space | control
}

/// The first index at or after `from` whose byte is ASCII whitespace
/// (`whitespace`) or not (`!whitespace`), else `b.len()`; `b` is ASCII
/// without U+000B. Eight bytes at a time.
#[inline]
fn ascii_find(b: &[u8], mut from: usize, whitespace: bool) -> usize {
    while let Some(chunk) = b.get(from..from + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
        let ws = ascii_whitespace_bits(u64::from_le_bytes(chunk));
        let hit = if whitespace { ws } else { !ws & HI };
        if hit != 0 {
            return from + (hit.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while b.get(from).is_some_and(|c| c.is_ascii_whitespace() != whitespace) {
        from += 1;
    }
    from.min(b.len())
}

/// [`push_collapsed`] for any text (Unicode whitespace).
pub(super) fn push_collapsed_general(buf: &mut String, text: &str, pending_space: &mut bool) {
    let mut first = true;
    for piece in text.split(char::is_whitespace) {
        if !first {
            *pending_space = true;
        }
        first = false;
        if piece.is_empty() {
            continue;
        }
        if *pending_space && !buf.is_empty() {
            buf.push(' ');
        }
        *pending_space = false;
        buf.push_str(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_collapsed` and the plain general path give the same text and
    /// owed space after every piece.
    fn collapses_like_the_general_path(
        start: String,
        pending: bool,
        pieces: &[String],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let (mut a, mut b) = (start.clone(), start);
        let (mut pa, mut pb) = (pending, pending);
        for p in pieces {
            push_collapsed(&mut a, p, &mut pa);
            push_collapsed_general(&mut b, p, &mut pb);
            proptest::prop_assert_eq!(&a, &b);
            proptest::prop_assert_eq!(pa, pb);
        }
        Ok(())
    }

    proptest::proptest! {
        /// The eight-byte search finds what a byte-by-byte one finds.
        #[test]
        fn ascii_find_is_a_byte_search(
            text in proptest::collection::vec(proptest::sample::select(vec![b' ', b'\t', b'\n', b'\x0C', b'\r', b'a', b'\x00', b'\x08', b'\x0E', b'\x1F', b'!', b'\x7F']), 0..40),
            from in 0usize..45,
            whitespace in proptest::bool::ANY,
        ) {
            let slow = (from..text.len()).find(|&i| text[i].is_ascii_whitespace() == whitespace).unwrap_or(text.len());
            proptest::prop_assert_eq!(ascii_find(&text, from, whitespace), slow.max(from.min(text.len())));
        }

        #[test]
        fn ascii_fast_path_collapses_like_the_general_path(
            pieces in proptest::collection::vec("[ a-c\t\n\r\x0B\x0C]{0,24}", 0..6),
            start in "[a ]{0,2}",
            pending in proptest::bool::ANY,
        ) {
            collapses_like_the_general_path(start, pending, &pieces)?;
        }

        /// Longer ASCII pieces without U+000B: the eight-byte search.
        #[test]
        fn eight_byte_search_collapses_like_the_general_path(
            pieces in proptest::collection::vec("[ a-c\t\n\r\x0C]{0,40}", 0..6),
            start in "[a ]{0,2}",
            pending in proptest::bool::ANY,
        ) {
            collapses_like_the_general_path(start, pending, &pieces)?;
        }
    }

    proptest::proptest! {
        /// Text nodes mostly of words and single spaces (the shortcut for
        /// them), now and then a double space or a line feed.
        #[test]
        fn single_space_shortcut_collapses_like_the_general_path(
            pieces in proptest::collection::vec("(?: | | |  |[a-c]{1,3}|[a-c]{1,3}|\n|é){0,6}", 0..6),
            start in "[a ]{0,2}",
            pending in proptest::bool::ANY,
        ) {
            collapses_like_the_general_path(start, pending, &pieces)?;
        }
    }
}
