//! The per-thread stem cache and the word loop: each word of a block is
//! looked up (stem, FNV-1a state, stop word, has a letter) by its
//! [`word_key`] and becomes a unigram and a bigram occurrence.

use std::cell::RefCell;
use std::hash::BuildHasherDefault;

use rust_stemmers::Stemmer;

use super::lang::LANGUAGES;
use super::tokenize::{fold_into, for_each_word_ascii};
use super::weigh::Accumulator;
use super::{FastSet, FeatureExtractor};
use crate::hash::{fmix64, fnv1a_continue, FNV1A_OFFSET};

/// Words in one generation of a [`StemCache`]: 7/8 of 2^14, so a
/// generation's table holds them in 2^14 slots without growing (24 bytes
/// and a control byte each, about 0.4 MB, and the stems' text, about 0.1
/// MB: a thread's English words fit its core's cache beside the page it
/// works on).
const GENERATION: usize = 14_336;

/// What the stem cache knows about one case-folded word of one language
/// (all pure functions of the language and the word).
struct WordInfo {
    /// The Snowball stem (empty when the word has no letter).
    stem: Box<str>,
    /// FNV-1a state of the stem's bytes.
    state: u64,
    /// A stop word of the language.
    stop: bool,
    /// Has a letter (words without one are not features).
    letter: bool,
}

/// A [`WordInfo`] as a generation keeps it: the stem is `len` bytes at
/// `at` in the generation's text, so an entry is 16 bytes and no stem is
/// an allocation of its own (a lookup would chase its pointer).
#[derive(Clone, Copy)]
struct Entry {
    state: u64,
    at: u32,
    /// The stem's length, then [`STOP`] and [`LETTER`].
    len_flags: u32,
}

const STOP: u32 = 1 << 31;
const LETTER: u32 = 1 << 30;
/// Stems are kept at most this long (a page's text, and so a word, is
/// bounded by `[features] max_text_bytes`, far below).
const MAX_STEM: usize = (LETTER - 1) as usize;
/// A generation's text past this many bytes (words of many kilobytes) ends
/// the generation too, so the text stays bounded and its offsets within
/// `u32`.
const MAX_TEXT: usize = 16 << 20;

/// A cached word: its stem (in its generation's text) and the rest of its
/// [`WordInfo`].
struct Word<'a> {
    stem: &'a str,
    state: u64,
    stop: bool,
    letter: bool,
}

/// One generation of a stem cache: [`word_key`] of the case-folded word →
/// [`Entry`], and the text of its stems. Keyed by the hash, not the text,
/// so a lookup touches the table only (no key string to compare on the
/// heap: one cache miss less per word). Two words with equal hashes would
/// share a stem; among n distinct words that happens with probability about
/// n²/2^65 (3·10⁻⁹ for 10⁴ words), and it would still be deterministic.
/// Its keys are [`word_key`] outputs, already well mixed (the fold of a
/// 128-bit product), so they are their own hash.
#[derive(Default)]
struct Generation {
    words: hashbrown::HashMap<u64, Entry, BuildHasherDefault<crate::hash::PreHashed>>,
    text: String,
}

impl Generation {
    fn clear(&mut self) {
        self.words.clear();
        self.text.clear();
    }

    /// Whether the generation is full: [`GENERATION`] words, or
    /// [`MAX_TEXT`] bytes of stems.
    fn full(&self) -> bool {
        self.words.len() >= GENERATION || self.text.len() >= MAX_TEXT
    }

    /// Keep `stem` with the rest of a word's facts; the entry to file. The
    /// text is below `MAX_TEXT + MAX_STEM` bytes (it grows only while not
    /// [`Generation::full`]), so offsets and lengths fit their bits.
    fn keep(&mut self, stem: &str, state: u64, stop: bool, letter: bool) -> Entry {
        let mut len = stem.len().min(MAX_STEM);
        while !stem.is_char_boundary(len) {
            len -= 1;
        }
        let at = self.text.len() as u32;
        self.text.push_str(&stem[..len]);
        Entry {
            state,
            at,
            len_flags: len as u32 | flags(stop, letter),
        }
    }

    fn word(&self, e: Entry) -> Word<'_> {
        let (at, len) = (e.at as usize, (e.len_flags & (LETTER - 1)) as usize);
        Word {
            stem: self.text.get(at..at + len).unwrap_or(""),
            state: e.state,
            stop: e.len_flags & STOP != 0,
            letter: e.len_flags & LETTER != 0,
        }
    }
}

fn flags(stop: bool, letter: bool) -> u32 {
    (if stop { STOP } else { 0 }) | (if letter { LETTER } else { 0 })
}

/// Stem cache of one language in two generations, bounded at
/// 2 × [`GENERATION`] words: lookups go to the young generation, a word
/// found only in the old one is copied to the young one, and when the
/// young one is full the old one is dropped and the young one becomes old. The
/// words a crawl keeps meeting stay; a vocabulary that keeps growing (names,
/// identifiers, typos) costs no more memory.
#[derive(Default)]
struct StemCache {
    young: Generation,
    old: Generation,
}

impl StemCache {
    #[inline]
    fn get(&mut self, key: u64, make: impl FnOnce() -> WordInfo) -> Word<'_> {
        if let Some(&e) = self.young.words.get(&key) {
            return self.young.word(e);
        }
        if self.young.full() {
            self.old.clear();
            std::mem::swap(&mut self.young, &mut self.old);
        }
        let e = match self.old.words.get(&key) {
            Some(&e) => {
                let w = self.old.word(e);
                self.young.keep(w.stem, w.state, w.stop, w.letter)
            }
            None => {
                let w = make();
                self.young.keep(&w.stem, w.state, w.stop, w.letter)
            }
        };
        self.young.words.insert(key, e);
        self.young.word(e)
    }
}

thread_local! {
    /// Per-thread stem cache, one map per language id.
    static STEM_CACHE: RefCell<Vec<StemCache>> = RefCell::new((0..LANGUAGES.len()).map(|_| StemCache::default()).collect());
}

/// Where [`FeatureExtractor::add_text`] puts a block's occurrences: an
/// [`Accumulator`] (weighted at once) or a [`super::PreparedBlock`] (kept
/// for weighting later).
pub(super) trait Occurrences {
    fn unigram(&mut self, h: u64, w: f32, label: &str);
    fn bigram(&mut self, h: u64, w: f32, label: &str);
    /// A word key (of every word, stop words and numbers included), when
    /// word keys are kept.
    fn word(&mut self, key: u64);
    fn labels(&self) -> bool;
}

impl Occurrences for Accumulator {
    #[inline]
    fn unigram(&mut self, h: u64, w: f32, label: &str) {
        self.add(h, w, label);
    }
    #[inline]
    fn bigram(&mut self, h: u64, w: f32, label: &str) {
        self.add(h, w, label);
    }
    #[inline]
    fn word(&mut self, key: u64) {
        if let Some(words) = &mut self.words {
            words.push(key);
        }
    }
    fn labels(&self) -> bool {
        self.labels.is_some()
    }
}

impl FeatureExtractor {
    /// Adds the unigrams and bigrams of one block with multiplier `m`.
    pub(super) fn add_text(&self, acc: &mut impl Occurrences, lang: usize, text: &str, m: f32) {
        let s = &self.shared.settings;
        let (uw, bw) = (m * s.unigram_weight as f32, m * s.bigram_weight as f32);
        let stop = &self.shared.stop[lang];
        let stemmer = &self.shared.stemmers[lang];
        // The case-folded word, written only when needed (a word not in the
        // cache, stemming off, or a non-ASCII word).
        let mut fold = String::new();
        // The previous stem's FNV-1a state (and text, only for labels): a
        // bigram hashes as the previous stem, a space and this stem.
        let mut prev_state: Option<u64> = None;
        let mut prev = String::new();
        let mut pair = String::new();
        STEM_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let cache = &mut cache[lang];
            for_each_word_ascii(text, |w, ascii| {
                // The cache key of the case-folded word; an ASCII word is
                // folded and hashed in one pass, without a copy.
                let key = if ascii {
                    word_key::<true>(w.as_bytes())
                } else {
                    fold.clear();
                    fold_into(&mut fold, w);
                    word_key::<false>(fold.as_bytes())
                };
                let info = cache.get(key, || {
                    if ascii {
                        fold.clear();
                        fold.push_str(w);
                        fold.make_ascii_lowercase();
                    }
                    WordInfo::new(&fold, stemmer, stop)
                });
                acc.word(key);
                if (s.stop_words && info.stop) || !info.letter {
                    return;
                }
                let (stem, state): (&str, u64) = if s.stemming {
                    (info.stem, info.state)
                } else {
                    if ascii {
                        fold.clear();
                        fold.push_str(w);
                        fold.make_ascii_lowercase();
                    }
                    (&fold, fnv1a_continue(FNV1A_OFFSET, fold.as_bytes()))
                };
                if uw > 0.0 {
                    acc.unigram(fmix64(state), uw, stem);
                }
                if let (Some(p), true) = (prev_state, bw > 0.0) {
                    let h = fmix64(fnv1a_continue(fnv1a_continue(p, b" "), stem.as_bytes()));
                    if acc.labels() {
                        pair.clear();
                        pair.push_str(&prev);
                        pair.push(' ');
                        pair.push_str(stem);
                    }
                    acc.bigram(h, bw, &pair);
                }
                prev_state = Some(state);
                if acc.labels() {
                    prev.clear();
                    prev.push_str(stem);
                }
            });
        });
    }
}

impl WordInfo {
    /// What the cache keeps for the case-folded `word`.
    fn new(word: &str, stemmer: &Stemmer, stop: &FastSet<&'static str>) -> Self {
        // Numbers (no letter at all) are not features: dates, view
        // counters, prices change between copies of one page.
        let letter = if word.is_ascii() {
            word.bytes().any(|b| b.is_ascii_alphabetic())
        } else {
            word.chars().any(char::is_alphabetic)
        };
        let stem: Box<str> = if letter { stemmer.stem(word).into() } else { "".into() };
        WordInfo {
            state: fnv1a_continue(FNV1A_OFFSET, stem.as_bytes()),
            stem,
            stop: stop.contains(word),
            letter,
        }
    }
}

/// The 1 to 7 bytes of `rest` as a little-endian `u64`, zero-padded: what
/// copying them into a zeroed `[u8; 8]` gives, from two overlapping loads
/// (or three single bytes) instead of a copy of variable length, which
/// compiles to a call of `memcpy` on every word.
#[inline(always)]
fn tail_le(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    if n >= 4 {
        let word = |at: usize| {
            rest.get(at..at + 4)
                .map_or(0, |b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        };
        // The bytes both loads hold are equal, so OR keeps them.
        word(0) | (word(n - 4) << (8 * (n - 4)))
    } else {
        let byte = |at: usize| rest.get(at).map_or(0, |&b| u64::from(b));
        byte(0) | (byte(n / 2) << (8 * (n / 2))) | (byte(n - 1) << (8 * (n - 1)))
    }
}

/// The stem cache's key of a case-folded word: a 64-bit hash of its bytes
/// (8 at a time, folded multiply). With `FOLD`, `bytes` must be ASCII and
/// the hash is that of its ASCII lowercase (upper-case letters are folded
/// in the same pass, 8 bytes at a time), so `word_key::<true>(w) ==
/// word_key::<false>(w.to_ascii_lowercase())`. Only a cache key: never
/// stored or compared across runs.
#[inline]
fn word_key<const FOLD: bool>(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    #[inline(always)]
    fn mix(h: u64, chunk: u64) -> u64 {
        let r = u128::from(h ^ chunk) * u128::from(K);
        (r as u64) ^ ((r >> 64) as u64)
    }
    #[inline(always)]
    fn lower<const FOLD: bool>(x: u64) -> u64 {
        if !FOLD {
            return x;
        }
        // Per byte (all < 0x80, so no carries between bytes): bit 7 of
        // `x + 0x3f` is set for bytes >= 'A', of `x + 0x25` for bytes > 'Z'.
        const LO: u64 = 0x0101_0101_0101_0101;
        let upper = (x.wrapping_add(0x3f * LO) & !x.wrapping_add(0x25 * LO)) & (0x80 * LO);
        x | (upper >> 2)
    }
    let mut h = (bytes.len() as u64).wrapping_mul(K) ^ 0x2d35_8dcc_aa6c_78a5;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        h = mix(h, lower::<FOLD>(u64::from_le_bytes(a)));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = mix(h, lower::<FOLD>(tail_le(rest)));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past two generations of distinct words the cache stops growing, and a
    /// word met often is never stemmed again.
    #[test]
    fn the_cache_keeps_two_generations_and_its_frequent_words() {
        let mut cache = StemCache::default();
        let info = |n: u64| WordInfo {
            stem: format!("w{n}").into(),
            state: n,
            stop: false,
            letter: true,
        };
        let mut made = 0;
        for i in 0..(5 * GENERATION as u64) {
            assert_eq!(cache.get(1 << 40 | i, || info(i)).state, i);
            if i % 100 == 0 {
                let got = cache.get(7, || {
                    made += 1;
                    info(7)
                });
                assert_eq!(got.stem, "w7");
            }
            assert!(cache.young.words.len() + cache.old.words.len() <= 2 * GENERATION);
        }
        assert_eq!(made, 1);
        assert!(cache.old.words.len() >= GENERATION - 1);
    }

    /// Stems of many kilobytes end a generation by its text's size, before
    /// its word count: the cache's text stays bounded, and every word
    /// still reads back as made.
    #[test]
    fn long_stems_end_a_generation_by_its_text() {
        let mut cache = StemCache::default();
        let long = |n: u64| WordInfo {
            stem: format!("{}{n:010}", "x".repeat(99_990)).into(),
            state: n,
            stop: n.is_multiple_of(2),
            letter: true,
        };
        for i in 0..1000u64 {
            let got = cache.get(i, || long(i));
            assert_eq!((got.stem.len(), got.state, got.stop), (100_000, i, i.is_multiple_of(2)));
            assert!(got.stem.ends_with(&i.to_string()));
            assert!(cache.young.text.len() <= MAX_TEXT + 100_000);
        }
        assert!(cache.young.words.len() < 200, "{}", cache.young.words.len());
        // A word of the old generation moves to the young one intact.
        let old = *cache.old.words.keys().next().unwrap();
        let got = cache.get(old, || unreachable!("in the old generation"));
        assert_eq!((got.stem.len(), got.state), (100_000, old));
    }

    proptest::proptest! {
        /// The tail's loads give what a zero-padded copy gives.
        #[test]
        fn tail_le_is_the_padded_bytes(rest in proptest::collection::vec(proptest::num::u8::ANY, 1..8)) {
            let mut a = [0u8; 8];
            a[..rest.len()].copy_from_slice(&rest);
            proptest::prop_assert_eq!(tail_le(&rest), u64::from_le_bytes(a));
        }

        /// Folding while hashing equals hashing the folded word.
        #[test]
        fn word_key_folds_ascii(w in "[ -~]{0,40}") {
            proptest::prop_assert_eq!(word_key::<true>(w.as_bytes()), word_key::<false>(w.to_ascii_lowercase().as_bytes()));
        }
    }
}
