//! Deterministic text for the test web: article bodies and titles built
//! from the vocabularies (`words.rs`) with the seeded PRNG (`rng.rs`).
//!
//! An article is a list of words plus a sentence/paragraph layout; variants
//! re-render the same list with a few words swapped, so "edited words"
//! near-duplicates differ from their original in exactly the chosen positions.

use super::rng::Rng;
use super::words::{COMMON_WORDS, TOPIC_WORDS};

/// One generated text: words, and after which word indexes a sentence or
/// paragraph ends.
#[derive(Clone, Debug)]
pub(crate) struct Text {
    /// The words, lower case.
    pub(crate) words: Vec<&'static str>,
    /// `ends[i]`: 0 = no break after word i, 1 = sentence end, 2 = paragraph end.
    pub(crate) ends: Vec<u8>,
}

/// A word of topic `topic`'s text: about a third topic words, the rest common words.
fn pick_word(rng: &mut Rng, topic: usize) -> &'static str {
    let tw = TOPIC_WORDS[topic];
    match rng.below(100) {
        0..=32 => tw[rng.below(tw.len())],
        33..=44 => tw[rng.skewed(tw.len())],
        45..=69 => COMMON_WORDS[rng.skewed(COMMON_WORDS.len())],
        _ => COMMON_WORDS[rng.below(COMMON_WORDS.len())],
    }
}

/// A text of `min..=max` words on `topic`, sentences of 7..=18 words,
/// paragraphs of 3..=6 sentences.
pub(crate) fn text(rng: &mut Rng, topic: usize, min: usize, max: usize) -> Text {
    let n = rng.range(min, max);
    let mut words = Vec::with_capacity(n + 20);
    let mut ends = Vec::with_capacity(n + 20);
    let mut sentences_left = rng.range(3, 6);
    while words.len() < n {
        let len = rng.range(7, 18);
        for i in 0..len {
            words.push(pick_word(rng, topic));
            ends.push(u8::from(i + 1 == len));
        }
        sentences_left -= 1;
        if sentences_left == 0 {
            if let Some(last) = ends.last_mut() {
                *last = 2;
            }
            sentences_left = rng.range(3, 6);
        }
    }
    if let Some(last) = ends.last_mut() {
        *last = 2;
    }
    Text { words, ends }
}

/// A title of 4..=7 words on `topic`, capitalized.
pub(crate) fn title(rng: &mut Rng, topic: usize) -> String {
    let n = rng.range(4, 7);
    let mut s = String::with_capacity(64);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let w = if i % 2 == 0 {
            TOPIC_WORDS[topic][rng.below(TOPIC_WORDS[topic].len())]
        } else {
            COMMON_WORDS[rng.below(COMMON_WORDS.len())]
        };
        push_capitalized(&mut s, w);
    }
    s
}

/// Appends `w` with its first letter upper-cased (the words are ASCII).
pub(crate) fn push_capitalized(out: &mut String, w: &str) {
    let mut chars = w.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

/// Renders `text` as `<p>` paragraphs, replacing word `i` by `w` for each `(i, w)` in `edits`.
pub(crate) fn render_paragraphs(out: &mut String, text: &Text, edits: &[(usize, &'static str)]) {
    out.push_str("<p>");
    let mut sentence_start = true;
    let mut paragraph_start = true;
    for (i, (&w, &end)) in text.words.iter().zip(&text.ends).enumerate() {
        let w = edits.iter().find(|(j, _)| *j == i).map_or(w, |(_, e)| *e);
        if !paragraph_start {
            out.push(' ');
        }
        paragraph_start = end == 2;
        if sentence_start {
            push_capitalized(out, w);
        } else {
            out.push_str(w);
        }
        sentence_start = end > 0;
        match end {
            1 => out.push('.'),
            2 if i + 1 < text.words.len() => out.push_str(".</p>\n<p>"),
            2 => out.push('.'),
            _ => {}
        }
    }
    out.push_str("</p>\n");
}

/// Plain words of a short text (ad copy, doc summaries), as one string.
pub(crate) fn sentence_words(rng: &mut Rng, topic: usize, n: usize) -> String {
    let mut s = String::with_capacity(n * 8);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(pick_word(rng, topic));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_are_sentences_separated_by_spaces() {
        let t = Text {
            words: vec!["one", "two", "three", "four", "five"],
            ends: vec![0, 1, 0, 2, 2],
        };
        let mut out = String::new();
        render_paragraphs(&mut out, &t, &[(2, "zebra")]);
        assert_eq!(out, "<p>One two. Zebra four.</p>\n<p>Five.</p>\n");
    }

    #[test]
    fn texts_have_requested_length_and_differ() {
        let mut r1 = Rng::for_stream(&[9, 1]);
        let mut r2 = Rng::for_stream(&[9, 2]);
        let t1 = text(&mut r1, 0, 300, 800);
        let t2 = text(&mut r2, 0, 300, 800);
        assert!(t1.words.len() >= 300 && t1.words.len() <= 800 + 18);
        assert_eq!(t1.words.len(), t1.ends.len());
        assert_ne!(t1.words, t2.words);
    }
}
