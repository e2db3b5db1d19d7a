//! Words of a text block: exactly UAX #29 `unicode_words`, with a fast
//! path for ASCII text that splits eight bytes at a time, and case folding.

use unicode_segmentation::UnicodeSegmentation;

/// Calls `f` with each word of `text` exactly as
/// `UnicodeSegmentation::unicode_words` yields them, with a fast path for
/// ASCII text (UAX #29 restricted to ASCII: runs of letters, digits and `_`,
/// joined across one `:` `.` `'` between letters or one `,` `;` `.` `'`
/// between digits; words without a letter or digit are dropped).
#[cfg(test)]
fn for_each_word<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    for_each_word_ascii(text, |w, _| f(w));
}

/// Byte classes of the ASCII word splitter: a word byte (letter, digit,
/// `_`), a letter, a digit, and the mid characters that join two letters
/// (`:` `.` `'`, at `C_LETTER << 2`) or two digits (`,` `;` `.` `'`, at
/// `C_DIGIT << 2`).
const C_WORD: u8 = 1;
const C_LETTER: u8 = 2;
const C_DIGIT: u8 = 4;
const C_MID_LETTER: u8 = C_LETTER << 2;
const C_MID_DIGIT: u8 = C_DIGIT << 2;

/// [`C_WORD`] and friends of each byte (non-ASCII bytes: none).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        let mut k = 0;
        if b.is_ascii_alphabetic() {
            k |= C_WORD | C_LETTER;
        }
        if b.is_ascii_digit() {
            k |= C_WORD | C_DIGIT;
        }
        if b == b'_' {
            k |= C_WORD;
        }
        if matches!(b, b':' | b'.' | b'\'') {
            k |= C_MID_LETTER;
        }
        if matches!(b, b',' | b';' | b'.' | b'\'') {
            k |= C_MID_DIGIT;
        }
        t[c] = k;
        c += 1;
    }
    t
};

/// Bit 7 of each byte of `x` (eight ASCII bytes, little-endian) set where
/// the byte is not a word byte (an ASCII letter, digit or `_`). Per byte,
/// with no carries between bytes (all are < 0x80): bit 7 of `v + (0x80 -
/// lo)` is set for `v >= lo`, of `v + (0x7f - hi)` for `v > hi`.
#[inline(always)]
fn non_word_bytes(x: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x80 * LO;
    let within = |v: u64, lo: u64, hi: u64| v.wrapping_add((0x80 - lo) * LO) & !v.wrapping_add((0x7f - hi) * LO);
    // `| 0x20` maps 'A'..='Z' onto 'a'..='z' and no other byte into it.
    let letter = within(x | (0x20 * LO), u64::from(b'a'), u64::from(b'z'));
    let digit = within(x, u64::from(b'0'), u64::from(b'9'));
    // A zero byte of `y` is one whose low seven bits do not carry into bit 7.
    let y = x ^ (u64::from(b'_') * LO);
    let underscore = !((y & !HI).wrapping_add(!HI) | y);
    !(letter | digit | underscore) & HI
}

/// [`for_each_word`], also telling `f` whether the word is ASCII.
///
/// In text with non-ASCII characters (most English pages have a few: `’`,
/// `—`, `¶`) only the stretch around each of them goes through
/// `unicode_words`, from the last *cut* before it to the first cut after
/// it; the ASCII stretches between take the fast path. A cut is an ASCII
/// space between two ASCII characters that are not spaces: UAX #29 breaks
/// on both sides of it (only another space, WB3d, or an extending
/// character after it, WB4, would join it to a neighbour), and no rule
/// looks across it (the look-ahead and look-behind of WB6, WB7, WB11 and
/// WB12 need a mid character between letters or digits).
#[inline]
pub(super) fn for_each_word_ascii<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool)) {
    if text.is_ascii() {
        ascii_words(text, &mut f);
        return;
    }
    let b = text.as_bytes();
    let n = b.len();
    let solid = |c: u8| c.is_ascii() && c != b' ';
    let cut = |s: usize| b[s] == b' ' && s > 0 && solid(b[s - 1]) && b.get(s + 1).is_some_and(|&c| solid(c));
    // text[..done] is done; done is 0 or just after a cut.
    let mut done = 0;
    while let Some(off) = b[done..].iter().position(|&c| !c.is_ascii()) {
        let at = done + off;
        let from = (done..at).rev().find(|&s| cut(s)).map_or(done, |s| s + 1);
        let to = (at..n).find(|&s| cut(s)).unwrap_or(n);
        if from > done {
            ascii_words(&text[done..from], &mut f);
        }
        text[from..to].unicode_words().for_each(|w| f(w, w.is_ascii()));
        done = (to + 1).min(n);
    }
    if done < n {
        ascii_words(&text[done..], &mut f);
    }
}

/// The words of ASCII `text` (UAX #29 restricted to ASCII).
#[inline]
fn ascii_words<'a>(text: &'a str, f: &mut impl FnMut(&'a str, bool)) {
    let b = text.as_bytes();
    let n = b.len();
    let class = |c: u8| CLASS[usize::from(c)];
    let mut i = 0;
    while i < n {
        if class(b[i]) & C_WORD == 0 {
            i += 1;
            continue;
        }
        let start = i;
        loop {
            i += 1;
            // Word bytes eight at a time, then one at a time near the end.
            while i + 8 <= n {
                let mut chunk = [0u8; 8];
                chunk.copy_from_slice(&b[i..i + 8]);
                let stop = non_word_bytes(u64::from_le_bytes(chunk));
                if stop != 0 {
                    i += stop.trailing_zeros() as usize / 8;
                    break;
                }
                i += 8;
            }
            while i < n && class(b[i]) & C_WORD != 0 {
                i += 1;
            }
            // A mid character joins two letters or two digits: bits of
            // `p & q` shifted onto the mid classes of `m`.
            if i + 1 < n {
                let (p, m, q) = (class(b[i - 1]), class(b[i]), class(b[i + 1]));
                if ((p & q & (C_LETTER | C_DIGIT)) << 2) & m != 0 {
                    i += 1;
                    continue;
                }
            }
            break;
        }
        let w = &b[start..i];
        // Words of `_` only are dropped (they have no letter or digit).
        if w[0] != b'_' || w.iter().any(|&c| c != b'_') {
            f(&text[start..i], true);
        }
    }
}

/// The case-folded word (ASCII lowercase for ASCII words).
pub(super) fn case_fold(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    case_fold_into(&mut out, w);
    out
}

/// [`case_fold`] into `out`, replacing its contents (its allocation is
/// reused).
pub(super) fn case_fold_into(out: &mut String, w: &str) {
    out.clear();
    if w.is_ascii() {
        out.push_str(w);
        out.make_ascii_lowercase();
    } else {
        fold_into(out, w);
    }
}

/// Appends the case-folded `w` to `out`, with the typographic apostrophes
/// (`’` `‘` `ʼ` `＇`) as `'`: "It’s" and "It's" are one word, as they are
/// to a reader.
pub(super) fn fold_into(out: &mut String, w: &str) {
    for c in w.chars() {
        match c {
            '\u{2019}' | '\u{2018}' | '\u{02BC}' | '\u{FF07}' => out.push('\''),
            c => out.extend(c.to_lowercase()),
        }
    }
}

#[cfg(test)]
mod tests {
    use unicode_segmentation::UnicodeSegmentation;

    use super::*;

    #[test]
    fn typographic_apostrophes_fold_to_ascii() {
        let mut words = Vec::new();
        for_each_word_ascii("It’s We‘ll DON'T", |w, _| words.push(case_fold(w)));
        assert_eq!(words, vec!["it's", "we'll", "don't"]);
    }

    proptest::proptest! {
        #[test]
        fn ascii_words_match_unicode_words(text in "[a-cA-C0-2_:.,;' \"\t\n!-]{0,24}") {
            let mut fast = Vec::new();
            for_each_word(&text, |w| fast.push(w));
            let oracle: Vec<&str> = text.unicode_words().collect();
            proptest::prop_assert_eq!(fast, oracle);
        }
    }

    #[test]
    fn ascii_words_examples() {
        for text in [
            "can't stop e.g. 3.14 1,000 a.1 x_y _ __ a..b 1;2 a:b 9a a1.2 ab' 'ab",
            "Hello, WORLD!",
            "caf\u{e9} na\u{ef}ve \u{2014} it\u{2019}s \u{b6} r\u{e9}sum\u{e9}s, 3.14 \u{301}x  \u{301} a \u{93e}b",
            "\u{3000} a\u{3000} b \u{1f1e6}\u{1f1e7}\u{1f1e6} \u{1f1e6} x\u{200d} \u{1f600} \u{5d0}\u{5f4}\u{5d0} \u{5d0}\" b",
        ] {
            let mut fast = Vec::new();
            for_each_word(text, |w| fast.push(w));
            assert_eq!(fast, text.unicode_words().collect::<Vec<_>>(), "{text}");
        }
    }

    proptest::proptest! {
        /// The eight-byte word-byte test agrees with the byte classes on
        /// any ASCII bytes.
        #[test]
        fn non_word_bytes_match_the_classes(x in proptest::array::uniform8(0u8..0x80)) {
            let expect = x.iter().enumerate().fold(0u64, |a, (i, &c)| {
                a | (u64::from(CLASS[usize::from(c)] & C_WORD == 0) << (8 * i + 7))
            });
            proptest::prop_assert_eq!(non_word_bytes(u64::from_le_bytes(x)), expect);
        }

        /// Printable ASCII text of any kind splits as `unicode_words` does.
        #[test]
        fn printable_ascii_words_match_unicode_words(text in "[ -~]{0,60}") {
            let mut fast = Vec::new();
            for_each_word(&text, |w| fast.push(w));
            proptest::prop_assert_eq!(fast, text.unicode_words().collect::<Vec<_>>());
        }

    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Text mixing ASCII with the characters that join or split words
        /// around a space (other spaces, extending and format characters,
        /// ZWJ and pictographs, regional indicators, Hebrew letters and
        /// quotes, katakana, letters with marks, mid punctuation) splits
        /// as `unicode_words` does.
        #[test]
        fn mixed_words_match_unicode_words(
            text in "[a-b0-1_:.,;' \t\n\u{3000}\u{2003}\u{0301}\u{093E}\u{200D}\u{200B}\u{00AD}\u{2060}\u{1F600}\u{1F1E6}\u{1F1E7}\u{05D0}\u{05F3}\u{05F4}\"\u{30A2}\u{00E9}\u{2019}\u{00B6}\u{2014}\u{0661}\u{FF0E}\u{0085}\u{2028}\r]{0,30}"
        ) {
            let mut fast = Vec::new();
            for_each_word(&text, |w| fast.push(w));
            proptest::prop_assert_eq!(fast, text.unicode_words().collect::<Vec<_>>());
        }
    }
}
