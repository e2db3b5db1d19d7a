//! Features (pipeline: after [`crate::extract`], before [`crate::simhash`]):
//! an [`Extracted`] document becomes weighted features, the way Manku et al.
//! §2 describe it — tokenization, case folding, stop-word removal, stemming
//! and phrase detection — plus the weighting that keeps boilerplate from
//! dominating the fingerprint, and per-host template learning
//! ([`TemplateLearner`]).
//!
//! # Features and weights
//!
//! * Tokens: Unicode words (UAX #29) of each text block, case-folded
//!   (`str::to_lowercase`). Stop words of the page's language are dropped
//!   (`features.stop_words`), the rest stemmed with the Snowball stemmer of
//!   that language (`features.stemming`, rust-stemmers). Tokens without a
//!   letter (numbers, parts of dates and times) are not features: view
//!   counters, timestamps and prices change between copies of one page.
//! * Language: the primary subtag of `<html lang>` if a stemmer exists for
//!   it; otherwise, with `features.detect_language`, the script (Cyrillic →
//!   ru, Greek → el, Arabic → ar, Tamil → ta) or else the Latin-script
//!   language whose stop words are most frequent among the first 400 words;
//!   otherwise `features.default_language`.
//! * Features: every stem (unigram) and every pair of adjacent stems within
//!   one block (bigram, "phrase"), hashed with [`feature_hash`] of the stem,
//!   or of the two stems joined by one space.
//! * Block multiplier `m`: title `title_boost`, heading `heading_boost`, body
//!   1, structural boilerplate `boilerplate_weight`; a block that the host's
//!   template marks as repeated gets `m × template_weight`. Unigrams get
//!   `m × unigram_weight`, bigrams `m × bigram_weight`.
//! * Weight of a feature = `(1 + ln n) × max m`, where `n` counts its
//!   occurrences in blocks with `m > 0` and `max m` is the largest multiplier
//!   among them (a word in the title and twice in the body: `(1 + ln 3) × 3`).
//! * If every block has multiplier 0 (a page that is all navigation or all
//!   template), the page is weighted as if boilerplate and template weights
//!   were 1, so such pages do not all collapse onto one fingerprint.
//!
//! Stems are cached per thread (the cache is a pure function of language and
//! word — stem, its FNV-1a state, stop word, has a letter — shared by all
//! extractors on the thread, cleared when it reaches 200 000 entries), so a
//! word costs one hash lookup. ASCII text is split into words by a fast path
//! that yields exactly what UAX #29 (`unicode_words`) yields (proptest checks
//! it against `unicode_words`).

mod stopwords;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use crate::config::FeatureSettings;
use crate::extract::{BlockKind, Extracted};
use crate::simhash::{feature_hash, fmix64, fnv1a_continue, FNV1A_OFFSET};

/// Languages with a stemmer, as ISO 639-1 codes, in a fixed order (the index
/// is the language id used internally).
pub const LANGUAGES: &[&str] = &[
    "ar", "da", "de", "el", "en", "es", "fi", "fr", "hu", "it", "nl", "no", "pt", "ro", "ru", "sv", "ta", "tr",
];

fn algorithm(code: &str) -> Option<Algorithm> {
    Some(match code {
        "ar" => Algorithm::Arabic,
        "da" => Algorithm::Danish,
        "de" => Algorithm::German,
        "el" => Algorithm::Greek,
        "en" => Algorithm::English,
        "es" => Algorithm::Spanish,
        "fi" => Algorithm::Finnish,
        "fr" => Algorithm::French,
        "hu" => Algorithm::Hungarian,
        "it" => Algorithm::Italian,
        "nl" => Algorithm::Dutch,
        "no" | "nb" | "nn" => Algorithm::Norwegian,
        "pt" => Algorithm::Portuguese,
        "ro" => Algorithm::Romanian,
        "ru" => Algorithm::Russian,
        "sv" => Algorithm::Swedish,
        "ta" => Algorithm::Tamil,
        "tr" => Algorithm::Turkish,
        _ => return None,
    })
}

fn lang_id(code: &str) -> Option<usize> {
    let code = match code {
        "nb" | "nn" => "no",
        c => c,
    };
    LANGUAGES.iter().position(|l| *l == code)
}

/// A hasher for keys that are already hashes or short words (not DoS
/// resistant; only for in-process tables).
#[derive(Default)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        fmix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

const STEM_CACHE_MAX: usize = 200_000;

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

/// Stem cache of one language: [`word_key`] of the case-folded word →
/// [`WordInfo`]. Keyed by the hash, not the text, so a lookup touches the
/// table only (no key string to compare on the heap: one cache miss less per
/// word). Two words with equal hashes would share a stem; among n distinct
/// words that happens with probability about n²/2^65 (3·10⁻⁹ for 10⁴ words),
/// and it would still be deterministic.
type StemCache = hashbrown::HashMap<u64, WordInfo, BuildHasherDefault<KeyHasher>>;

/// The hasher of [`StemCache`]: its keys are [`word_key`] outputs, already
/// well mixed (the fold of a 128-bit product), so they are used as they are.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; kept correct for any other key.
        for &b in bytes {
            self.0 = fmix64(self.0 ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

thread_local! {
    /// Per-thread stem cache, one map per language id.
    static STEM_CACHE: RefCell<Vec<StemCache>> = RefCell::new((0..LANGUAGES.len()).map(|_| StemCache::default()).collect());
}

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
#[inline]
fn for_each_word_ascii<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool)) {
    if !text.is_ascii() {
        text.unicode_words().for_each(|w| f(w, w.is_ascii()));
        return;
    }
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

/// Weighted features of one document, sorted by feature hash (each hash
/// once). `labels` (same order) holds each feature's text when the extractor
/// was built [`FeatureExtractor::with_labels`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Features {
    /// `(feature hash, weight)`, sorted by hash, weights > 0.
    pub items: Vec<(u64, f32)>,
    /// The feature text of each item (unigram stem or "stem stem"), if asked for.
    pub labels: Option<Vec<String>>,
    /// The case-folded word keys of the weighed blocks but the title and
    /// (on a page that is not mostly links) link lists, in order, stop words
    /// and numbers included (the content a
    /// [`crate::sketch::ContentSketch`] shingles), when the extractor was
    /// built [`FeatureExtractor::with_words`]; empty otherwise.
    pub words: Vec<u64>,
}

impl Features {
    /// The `n` heaviest features as `(label, weight)`, heaviest first (ties
    /// by label). Labels are the hex hash when no labels were recorded.
    pub fn top(&self, n: usize) -> Vec<(String, f32)> {
        let mut all: Vec<(String, f32)> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, &(h, w))| {
                let label = self
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(i).cloned())
                    .unwrap_or_else(|| format!("#{h:016x}"));
                (label, w)
            })
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    /// Sum of the weights.
    pub fn total_weight(&self) -> f64 {
        self.items.iter().map(|&(_, w)| f64::from(w)).sum()
    }
}

/// The immutable part of an extractor, shared by its clones.
struct Shared {
    settings: FeatureSettings,
    default_lang: usize,
    stemmers: Vec<Stemmer>,
    stop: Vec<FastSet<&'static str>>,
}

/// Turns extracted documents into weighted features. Built once per crawl
/// from [`FeatureSettings`]; `Send + Sync` and cheap to clone (an `Arc`), so
/// workers can share one or clone their own.
#[derive(Clone)]
pub struct FeatureExtractor {
    shared: Arc<Shared>,
    labels: bool,
    words: bool,
}

impl std::fmt::Debug for FeatureExtractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeatureExtractor")
            .field("settings", &self.shared.settings)
            .field("labels", &self.labels)
            .field("words", &self.words)
            .finish()
    }
}

impl FeatureExtractor {
    /// An extractor for these settings (stemmers and stop-word sets are built
    /// here, once).
    pub fn new(settings: &FeatureSettings) -> Self {
        let stemmers = LANGUAGES
            .iter()
            .map(|c| Stemmer::create(algorithm(c).unwrap_or(Algorithm::English)))
            .collect();
        let stop = LANGUAGES
            .iter()
            .map(|c| {
                stopwords::LISTS
                    .iter()
                    .find(|(l, _)| l == c)
                    .map(|(_, words)| words.split_whitespace().collect())
                    .unwrap_or_default()
            })
            .collect();
        let default_lang = lang_id(&settings.default_language).unwrap_or_else(|| lang_id("en").unwrap_or(0));
        FeatureExtractor {
            shared: Arc::new(Shared {
                settings: settings.clone(),
                default_lang,
                stemmers,
                stop,
            }),
            labels: false,
            words: false,
        }
    }

    /// Keep the word keys of the weighted blocks in [`Features::words`]
    /// (for content sketches).
    pub fn with_words(mut self, words: bool) -> Self {
        self.words = words;
        self
    }

    /// Keep each feature's text in [`Features::labels`] (for
    /// `simcrawl fingerprint --features`; slower).
    pub fn with_labels(mut self, labels: bool) -> Self {
        self.labels = labels;
        self
    }

    /// Whether [`Features::words`] is filled ([`FeatureExtractor::with_words`]).
    pub fn keeps_words(&self) -> bool {
        self.words
    }

    /// `features.max_text_bytes`.
    pub fn max_text_bytes(&self) -> usize {
        self.shared.settings.max_text_bytes
    }

    /// The settings this extractor was built from.
    pub fn settings(&self) -> &FeatureSettings {
        &self.shared.settings
    }

    /// The canonical token sequence of a document, for w-shingling (min-hash)
    /// and evaluation: the Unicode words of every block except structural
    /// boilerplate (title, headings and body, in document order),
    /// case-folded; stop words KEPT and words NOT stemmed, so shingles see
    /// the text as written.
    pub fn tokens(&self, doc: &Extracted) -> Vec<String> {
        let mut out = Vec::new();
        for b in doc.blocks.iter().filter(|b| b.kind != BlockKind::Boilerplate) {
            for w in b.text.unicode_words() {
                out.push(case_fold(w));
            }
        }
        out
    }

    /// The language (ISO 639-1) used for a document: see the module docs.
    pub fn language(&self, doc: &Extracted) -> &'static str {
        LANGUAGES[self.lang_of(doc)]
    }

    fn lang_of(&self, doc: &Extracted) -> usize {
        if let Some(id) = doc.lang.as_deref().and_then(|l| {
            let primary = l.split(['-', '_']).next().unwrap_or("").trim().to_ascii_lowercase();
            lang_id(&primary)
        }) {
            return id;
        }
        if self.shared.settings.detect_language {
            let text = doc
                .blocks
                .iter()
                .filter(|b| b.kind != BlockKind::Boilerplate)
                .map(|b| b.text.as_str());
            if let Some(id) = self.detect(text) {
                return id;
            }
        }
        self.shared.default_lang
    }

    /// Script first, then the stop-word ratio over the first 400 words.
    fn detect<'a>(&self, blocks: impl Iterator<Item = &'a str>) -> Option<usize> {
        let mut hits = vec![0u32; LANGUAGES.len()];
        let mut script = [0u32; 4]; // cyrillic, greek, arabic, tamil
        let mut words = 0u32;
        'outer: for text in blocks {
            for w in text.unicode_words() {
                words += 1;
                if words > 400 {
                    break 'outer;
                }
                if let Some(c) = w.chars().next() {
                    match c as u32 {
                        0x0400..=0x04FF => script[0] += 1,
                        0x0370..=0x03FF | 0x1F00..=0x1FFF => script[1] += 1,
                        0x0600..=0x06FF => script[2] += 1,
                        0x0B80..=0x0BFF => script[3] += 1,
                        _ => {}
                    }
                }
                let f = case_fold(w);
                for (i, set) in self.shared.stop.iter().enumerate() {
                    if set.contains(f.as_str()) {
                        hits[i] += 1;
                    }
                }
            }
        }
        if words == 0 {
            return None;
        }
        let (si, &sc) = script.iter().enumerate().max_by_key(|(_, c)| **c)?;
        if sc * 2 > words {
            return lang_id(["ru", "el", "ar", "ta"][si]);
        }
        let (best, &bh) = hits
            .iter()
            .enumerate()
            .max_by_key(|(i, h)| (**h, std::cmp::Reverse(*i)))?;
        (bh >= 3 && bh * 20 >= words.min(400)).then_some(best)
    }

    /// Weighted features of a document, with the host's template (if known)
    /// cutting the weight of repeated blocks. See the module docs.
    pub fn features(&self, doc: &Extracted, template: Option<&HostTemplate>) -> Features {
        let hashes: Vec<u64> = match template {
            Some(_) => block_hashes(doc),
            None => Vec::new(),
        };
        self.features_hashed(doc, &hashes, template)
    }

    /// [`FeatureExtractor::features`] given the page's [`block_hashes`]
    /// (read only when `template` is some), for a caller that has them
    /// already: the crawl hashes each page's blocks once, for template
    /// learning and for the features.
    pub fn features_hashed(&self, doc: &Extracted, hashes: &[u64], template: Option<&HostTemplate>) -> Features {
        let lang = self.lang_of(doc);
        let s = &self.shared.settings;
        let mult = |i: usize, kind: BlockKind, structural: bool| -> f32 {
            let base = match kind {
                BlockKind::Title => s.title_boost,
                BlockKind::Heading => s.heading_boost,
                BlockKind::Body | BlockKind::Links => 1.0,
                BlockKind::Boilerplate if structural => s.boilerplate_weight,
                BlockKind::Boilerplate => 1.0,
            } as f32;
            match template {
                Some(t) if structural => base * t.hash_weight(hashes.get(i).copied().unwrap_or(0)),
                _ => base,
            }
        };
        let mut any = doc.blocks.iter().enumerate().any(|(i, b)| mult(i, b.kind, true) > 0.0);
        let structural = any;
        if !any {
            any = !doc.blocks.is_empty();
        }
        let bytes = doc.blocks.iter().map(|b| b.text.len()).sum();
        let mut acc = Accumulator::with_capacity(self.labels, bytes);
        if self.words {
            acc.words = Some(Vec::with_capacity(bytes / 5));
        }
        // Link lists are content on a page that is mostly links (an index,
        // a table of contents page) and navigation on any other page.
        let text_bytes =
            |k: BlockKind| -> usize { doc.blocks.iter().filter(|b| b.kind == k).map(|b| b.text.len()).sum() };
        let links_are_content =
            text_bytes(BlockKind::Links) > text_bytes(BlockKind::Body) + text_bytes(BlockKind::Heading);
        if any {
            for (i, b) in doc.blocks.iter().enumerate() {
                let m = mult(i, b.kind, structural);
                if m > 0.0 {
                    // Content words: the weighed blocks but the <title> (the
                    // page's name, not its content) and, on a page that is
                    // not mostly links, link lists (menus, prev/next links,
                    // tables of contents).
                    let content = match b.kind {
                        BlockKind::Title => false,
                        BlockKind::Links => links_are_content || !structural,
                        _ => true,
                    };
                    let words = if content { None } else { acc.words.take() };
                    self.add_text(&mut acc, lang, &b.text, m);
                    if words.is_some() {
                        acc.words = words;
                    }
                }
            }
        }
        acc.finish()
    }

    /// Weighted features of a bare text (topic keywords, anchor text): one
    /// body block, language detected (or the default).
    pub fn text_features(&self, text: &str) -> Features {
        let lang = if self.shared.settings.detect_language {
            self.detect(std::iter::once(text)).unwrap_or(self.shared.default_lang)
        } else {
            self.shared.default_lang
        };
        let mut acc = Accumulator::new(self.labels);
        self.add_text(&mut acc, lang, text, 1.0);
        acc.finish()
    }

    /// [`FeatureExtractor::text_features`] in a known language (ISO 639-1,
    /// e.g. from [`FeatureExtractor::language`] of the page a text comes
    /// from; the default language when it has no stemmer): no detection,
    /// so short texts of one page (anchor texts) are cheap and consistent.
    pub fn text_features_in(&self, text: &str, language: &str) -> Features {
        let lang = lang_id(language).unwrap_or(self.shared.default_lang);
        let mut acc = Accumulator::new(self.labels);
        self.add_text(&mut acc, lang, text, 1.0);
        acc.finish()
    }

    /// Adds the unigrams and bigrams of one block with multiplier `m`.
    fn add_text(&self, acc: &mut Accumulator, lang: usize, text: &str, m: f32) {
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
                    fold.extend(w.chars().flat_map(char::to_lowercase));
                    word_key::<false>(fold.as_bytes())
                };
                if cache.len() >= STEM_CACHE_MAX {
                    cache.clear();
                }
                let info = cache.entry(key).or_insert_with(|| {
                    if ascii {
                        fold.clear();
                        fold.push_str(w);
                        fold.make_ascii_lowercase();
                    }
                    WordInfo::new(&fold, stemmer, stop)
                });
                if let Some(words) = &mut acc.words {
                    words.push(key);
                }
                if (s.stop_words && info.stop) || !info.letter {
                    return;
                }
                let (stem, state): (&str, u64) = if s.stemming {
                    (&info.stem, info.state)
                } else {
                    if ascii {
                        fold.clear();
                        fold.push_str(w);
                        fold.make_ascii_lowercase();
                    }
                    (&fold, fnv1a_continue(FNV1A_OFFSET, fold.as_bytes()))
                };
                if uw > 0.0 {
                    acc.add(fmix64(state), uw, stem);
                }
                if let (Some(p), true) = (prev_state, bw > 0.0) {
                    let h = fmix64(fnv1a_continue(fnv1a_continue(p, b" "), stem.as_bytes()));
                    if acc.labels.is_some() {
                        pair.clear();
                        pair.push_str(&prev);
                        pair.push(' ');
                        pair.push_str(stem);
                    }
                    acc.add(h, bw, &pair);
                }
                prev_state = Some(state);
                if acc.labels.is_some() {
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
        let mut a = [0u8; 8];
        a[..rest.len()].copy_from_slice(rest);
        h = mix(h, lower::<FOLD>(u64::from_le_bytes(a)));
    }
    h
}

/// Collects feature occurrences, then turns them into weights: each
/// occurrence is appended (no table per page); [`Accumulator::finish`] sorts
/// them by hash and merges equal hashes.
struct Accumulator {
    /// `(feature hash, multiplier)` of every occurrence, in text order.
    occ: Vec<(u64, f32)>,
    labels: Option<FastMap<u64, String>>,
    /// Word keys of the text added, when asked for.
    words: Option<Vec<u64>>,
}

/// `(feature hash, multiplier)` occurrences.
type Occurrences = Vec<(u64, f32)>;

thread_local! {
    /// Occurrence buffers reused across pages (the occurrences and the
    /// sort's scratch), so a page allocates only its output.
    static OCC_BUFS: RefCell<(Occurrences, Occurrences, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// `(n as f32).ln()` for the small occurrence counts `n` (the same `f32`
/// values, computed once): most features occur a few times on a page.
static LN_SMALL: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();

/// Occurrence buffers kept per thread at most this long (a huge page's
/// buffers are dropped rather than kept).
const OCC_KEEP: usize = 1 << 18;

impl Accumulator {
    fn new(labels: bool) -> Self {
        Self::with_capacity(labels, 0)
    }

    /// An accumulator for about `text_bytes` of text (a unigram and a
    /// bigram per word of about six bytes), so it does not regrow.
    fn with_capacity(labels: bool, text_bytes: usize) -> Self {
        let mut occ = OCC_BUFS.with(|b| std::mem::take(&mut b.borrow_mut().0));
        occ.clear();
        occ.reserve(text_bytes / 3);
        Accumulator {
            occ,
            labels: labels.then(FastMap::default),
            words: None,
        }
    }

    #[inline]
    fn add(&mut self, h: u64, m: f32, label: &str) {
        self.occ.push((h, m));
        if let Some(l) = &mut self.labels {
            l.entry(h).or_insert_with(|| label.to_string());
        }
    }

    fn finish(self) -> Features {
        let Accumulator { mut occ, labels, words } = self;
        let (mut tmp, mut counts) = OCC_BUFS.with(|b| {
            let mut b = b.borrow_mut();
            (std::mem::take(&mut b.1), std::mem::take(&mut b.2))
        });
        sort_by_hash(&mut occ, &mut tmp);
        let ln_table = LN_SMALL.get_or_init(|| std::array::from_fn(|n| (n as f32).ln()));
        // Runs of one hash: weight (1 + ln n) × max m (the same f32
        // operations as a per-feature count and running maximum from 0).
        merge_runs(&mut occ, &mut counts);
        let mut items: Vec<(u64, f32)> = Vec::with_capacity(occ.len());
        for (&(h, max_m), &count) in occ.iter().zip(counts.iter()) {
            let ln = match ln_table.get(count as usize) {
                Some(&l) => l,
                None => (count as f32).ln(),
            };
            let w = (1.0 + ln) * max_m;
            if w > 0.0 {
                items.push((h, w));
            }
        }
        if occ.capacity() <= OCC_KEEP && tmp.capacity() <= OCC_KEEP && counts.capacity() <= OCC_KEEP {
            occ.clear();
            tmp.clear();
            counts.clear();
            OCC_BUFS.with(|b| *b.borrow_mut() = (occ, tmp, counts));
        }
        let labels = labels.map(|l| {
            items
                .iter()
                .map(|(h, _)| l.get(h).cloned().unwrap_or_default())
                .collect()
        });
        Features {
            items,
            labels,
            words: words.unwrap_or_default(),
        }
    }
}

/// Merges the runs of equal hashes of the sorted `occ` in place: afterwards
/// `occ` holds one `(hash, largest m of the run, at least 0)` per run, in
/// order, and `counts` the run lengths. Branch-free: most runs are of one
/// occurrence, so a branch on the end of a run would mispredict.
fn merge_runs(occ: &mut Vec<(u64, f32)>, counts: &mut Vec<u32>) {
    counts.clear();
    let n = occ.len();
    let Some(&(first_h, first_m)) = occ.first() else {
        return;
    };
    counts.resize(n, 0);
    let pos = |m: f32| if m > 0.0 { m } else { 0.0 };
    // The open run: its hash, maximum and length; it is written to slot `k`
    // after every step (and overwritten while it goes on).
    let (mut h, mut m, mut c) = (first_h, pos(first_m), 1u32);
    let mut k = 0;
    for i in 1..n {
        let (hi, mi) = occ[i];
        occ[k] = (h, m);
        counts[k] = c;
        let same = hi == h;
        k += usize::from(!same);
        let base = if same { m } else { 0.0 };
        m = if mi > base { mi } else { base };
        c = if same { c + 1 } else { 1 };
        h = hi;
    }
    occ[k] = (h, m);
    counts[k] = c;
    occ.truncate(k + 1);
    counts.truncate(k + 1);
}

/// Sorts `v` by hash (ties in any order) in about linear time: the hashes
/// are uniform (fmix64 output), so one counting pass on their top bits into
/// about one bucket per element leaves only tiny buckets to sort. `tmp` is
/// scratch.
fn sort_by_hash(v: &mut Vec<(u64, f32)>, tmp: &mut Vec<(u64, f32)>) {
    let n = v.len();
    if n < 64 {
        v.sort_unstable_by_key(|e| e.0);
        return;
    }
    let bits = (usize::BITS - (n - 1).leading_zeros()).min(16);
    let shift = 64 - bits;
    let mut start = vec![0u32; (1usize << bits) + 1];
    for e in v.iter() {
        start[(e.0 >> shift) as usize + 1] += 1;
    }
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    tmp.clear();
    tmp.resize(n, (0, 0.0));
    let mut next = start.clone();
    for &e in v.iter() {
        let b = (e.0 >> shift) as usize;
        tmp[next[b] as usize] = e;
        next[b] += 1;
    }
    for w in start.windows(2) {
        let bucket = &mut tmp[w[0] as usize..w[1] as usize];
        if bucket.len() <= 16 {
            // Insertion sort.
            for i in 1..bucket.len() {
                let mut j = i;
                while j > 0 && bucket[j - 1].0 > bucket[j].0 {
                    bucket.swap(j - 1, j);
                    j -= 1;
                }
            }
        } else {
            bucket.sort_unstable_by_key(|e| e.0);
        }
    }
    std::mem::swap(v, tmp);
}

fn case_fold(w: &str) -> String {
    if w.is_ascii() {
        w.to_ascii_lowercase()
    } else {
        w.to_lowercase()
    }
}

/// The hash of a text block for template learning: [`feature_hash`] of the
/// block text (whitespace already collapsed by extraction).
pub fn block_hash(text: &str) -> u64 {
    feature_hash(text.as_bytes())
}

/// [`block_hash`] of each block of `doc`, in order.
pub fn block_hashes(doc: &Extracted) -> Vec<u64> {
    doc.blocks.iter().map(|b| block_hash(&b.text)).collect()
}

/// ISO 639-1 language codes, sorted: a leading path segment made of one
/// (with an optional region or script subtag) names a language section.
const ISO_639_1: &[&str] = &[
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh", "bi", "bm", "bn",
    "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da", "de", "dv", "dz", "ee", "el", "en",
    "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr", "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he",
    "hi", "ho", "hr", "ht", "hu", "hy", "hz", "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv",
    "ka", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li",
    "ln", "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb", "nd", "ne",
    "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi", "pl", "ps", "pt", "qu", "rm",
    "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk", "sl", "sm", "sn", "so", "sq", "sr", "ss", "st",
    "su", "sv", "sw", "ta", "te", "tg", "th", "ti", "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk",
    "ur", "uz", "ve", "vi", "vo", "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
];

/// The key a page's template is learned under: its host, or its host and
/// language section when it has one — the `<html lang>` tag, else a leading
/// path segment that is a language tag (`/fr/`, `/pt-BR/`, `/zh_CN/`), the
/// usual layout of a translated site. Each language's navigation repeats
/// across that language's pages only, so a host of many languages learns
/// each one's template apart: a page whose content was left untranslated is
/// then weighed by its content alone, like the original it copies.
pub fn template_key(host: &str, path: &str, lang: Option<&str>) -> String {
    let section = lang
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_ascii_lowercase)
        .or_else(|| {
            let mut segs = path.trim_start_matches('/').split('/');
            let first = segs.next()?;
            // A directory (more path follows), named like a language tag.
            segs.next()?;
            is_language_tag(first).then(|| first.to_ascii_lowercase().replace('_', "-"))
        });
    match section {
        Some(s) => format!("{host}|{s}"),
        None => host.to_string(),
    }
}

/// `xx`, `xx-YY`, `xx_YY`, `xx-Hant` or `xx-419`, with `xx` an ISO 639-1 code.
fn is_language_tag(seg: &str) -> bool {
    let (primary, rest) = match seg.find(['-', '_']) {
        Some(i) => (&seg[..i], Some(&seg[i + 1..])),
        None => (seg, None),
    };
    let primary = primary.to_ascii_lowercase();
    if ISO_639_1.binary_search(&primary.as_str()).is_err() {
        return false;
    }
    match rest {
        None => true,
        Some(r) => {
            (r.len() == 2 && r.bytes().all(|b| b.is_ascii_alphabetic()))
                || (r.len() == 3 && r.bytes().all(|b| b.is_ascii_digit()))
                || (r.len() == 4 && r.bytes().all(|b| b.is_ascii_alphabetic()))
        }
    }
}

/// A snapshot of one host's learned template: the blocks repeated on at
/// least `template_min_pages` pages and on at least `template_min_fraction`
/// of the pages of the host seen so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostTemplate {
    /// Block hashes ([`block_hash`]) of template blocks.
    pub blocks: HashSet<u64>,
    /// Weight multiplier of a template block (`template_weight`).
    pub weight: f32,
    /// Pages of the host observed when the snapshot was taken.
    pub pages: u32,
    /// [`TemplateLearner::version`] of the host when the snapshot was taken.
    pub version: u64,
}

impl HostTemplate {
    /// The multiplier of a block with this text: `weight` if it is a
    /// template block, else 1.
    pub fn block_weight(&self, text: &str) -> f32 {
        self.hash_weight(block_hash(text))
    }

    /// [`HostTemplate::block_weight`] of a block with this [`block_hash`].
    pub fn hash_weight(&self, hash: u64) -> f32 {
        if self.blocks.contains(&hash) {
            self.weight
        } else {
            1.0
        }
    }

    /// Number of template blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// No template blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// Per-host block statistics.
#[derive(Default)]
struct HostStats {
    pages: u32,
    /// Block hash -> pages it was seen on.
    counts: FastMap<u64, u32>,
    /// Blocks whose count was at least the host's `need` when last counted,
    /// less those `need` has since overtaken: the template's blocks.
    candidates: FastSet<u64>,
    /// XOR of the current template's block hashes (detects changes).
    signature: u64,
    /// Times the template's block set changed.
    version: u64,
    /// The template built for `version` (see [`TemplateLearner::template_shared`]).
    snapshot: Option<Arc<HostTemplate>>,
}

impl HostStats {
    /// Count a block needs to be template now.
    fn need(&self, min_pages: u32, min_fraction: f64) -> u32 {
        ((min_fraction * f64::from(self.pages)).ceil() as u32).max(min_pages)
    }
}

/// Blocks remembered per host before those seen on one page only are dropped.
const MAX_BLOCKS_PER_HOST: usize = 200_000;
const SHARDS: usize = 16;

/// Learns each host's template from the pages crawled so far: which text
/// blocks recur on many pages of the same host. Thread-safe (sharded
/// mutexes; a lock is held only for one page's block updates).
///
/// Early in a crawl a host has no template yet: [`TemplateLearner::template`]
/// returns `None` until the host has `template_min_pages` pages, and a block
/// is only cut once it was seen on that many pages, so the first pages of a
/// host are weighted by structure alone (nav, header, footer, aside).
pub struct TemplateLearner {
    enabled: bool,
    min_pages: u32,
    min_fraction: f64,
    weight: f32,
    shards: Vec<Mutex<FastMap<String, HostStats>>>,
}

impl std::fmt::Debug for TemplateLearner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateLearner")
            .field("enabled", &self.enabled)
            .field("min_pages", &self.min_pages)
            .field("min_fraction", &self.min_fraction)
            .finish()
    }
}

impl TemplateLearner {
    /// A learner with the `[features]` template settings (learning off when
    /// `template_learning = false`: `observe` does nothing, `template` is None).
    pub fn new(settings: &FeatureSettings) -> Self {
        TemplateLearner {
            enabled: settings.template_learning,
            min_pages: settings.template_min_pages,
            min_fraction: settings.template_min_fraction,
            weight: settings.template_weight as f32,
            shards: (0..SHARDS).map(|_| Mutex::new(FastMap::default())).collect(),
        }
    }

    fn shard(&self, host: &str) -> &Mutex<FastMap<String, HostStats>> {
        &self.shards[(feature_hash(host.as_bytes()) % SHARDS as u64) as usize]
    }

    /// Records one page of `host`: each distinct block counts once.
    pub fn observe(&self, host: &str, doc: &Extracted) {
        if self.enabled {
            self.observe_hashes(host, &block_hashes(doc));
        }
    }

    /// [`TemplateLearner::observe`] given the page's [`block_hashes`].
    pub fn observe_hashes(&self, host: &str, blocks: &[u64]) {
        if !self.enabled {
            return;
        }
        let mut hashes = blocks.to_vec();
        hashes.sort_unstable();
        hashes.dedup();
        let mut shard = self.shard(host).lock();
        if !shard.contains_key(host) {
            shard.insert(host.to_string(), HostStats::default());
        }
        let Some(st) = shard.get_mut(host) else { return };
        st.pages = st.pages.saturating_add(1);
        let need = st.need(self.min_pages, self.min_fraction);
        for h in hashes {
            let c = st.counts.entry(h).or_insert(0);
            *c += 1;
            if *c >= need {
                st.candidates.insert(h);
            }
        }
        if st.counts.len() > MAX_BLOCKS_PER_HOST {
            st.counts.retain(|_, c| *c > 1);
        }
        // `need` only grows and a count only grows when its block is seen
        // (and checked above), so a block that falls below `need` can come
        // back only through that check: dropping it here keeps the candidate
        // set about the template's size instead of every block ever repeated.
        let HostStats { counts, candidates, .. } = &mut *st;
        candidates.retain(|h| counts.get(h).is_some_and(|&c| c >= need));
        if st.pages >= self.min_pages {
            let sig = st.candidates.iter().fold(0u64, |acc, h| acc ^ fmix64(*h));
            if sig != st.signature {
                st.signature = sig;
                st.version += 1;
            }
        }
    }

    /// How many times the host's template (its set of template blocks) has
    /// changed so far: 0 while the host has no template. Fingerprints
    /// computed under an older version weighted some blocks that are now
    /// cut; a crawl that wants exact consistency re-fingerprints a host's
    /// earlier pages when this changes (it settles after a few dozen pages
    /// on template-driven sites; see docs/fingerprints.md).
    pub fn version(&self, host: &str) -> u64 {
        self.shard(host).lock().get(host).map_or(0, |s| s.version)
    }

    /// The host's template now, or None when learning is off or the host has
    /// fewer than `template_min_pages` pages.
    pub fn template(&self, host: &str) -> Option<HostTemplate> {
        if !self.enabled {
            return None;
        }
        let shard = self.shard(host).lock();
        let st = shard.get(host)?;
        if st.pages < self.min_pages {
            return None;
        }
        Some(self.build(st))
    }

    /// The host's template as its counts stand now.
    fn build(&self, st: &HostStats) -> HostTemplate {
        let need = st.need(self.min_pages, self.min_fraction);
        let blocks = st
            .candidates
            .iter()
            .copied()
            .filter(|h| st.counts.get(h).is_some_and(|&c| c >= need))
            .collect();
        HostTemplate {
            blocks,
            weight: self.weight,
            pages: st.pages,
            version: st.version,
        }
    }

    /// [`TemplateLearner::template`], shared: the snapshot is built once per
    /// template version (the block set changes only with the version) and
    /// handed out again until the next change, so its `pages` is the host's
    /// page count when that version was first asked for. The crawl asks for
    /// the template of every page it fingerprints; this keeps that O(1).
    pub fn template_shared(&self, host: &str) -> Option<Arc<HostTemplate>> {
        if !self.enabled {
            return None;
        }
        let mut shard = self.shard(host).lock();
        let st = shard.get_mut(host)?;
        if st.pages < self.min_pages {
            return None;
        }
        if let Some(t) = st.snapshot.as_ref().filter(|t| t.version == st.version) {
            return Some(t.clone());
        }
        let t = Arc::new(self.build(st));
        st.snapshot = Some(t.clone());
        Some(t)
    }

    /// Pages observed for `host`.
    pub fn pages(&self, host: &str) -> u32 {
        self.shard(host).lock().get(host).map_or(0, |s| s.pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{extract_html, TextBlock};
    use crate::simhash::{hamming, simhash};

    fn settings() -> FeatureSettings {
        crate::Settings::from_layers(&[], &[]).expect("default config").features
    }

    #[test]
    fn tokens_fold_and_keep_stop_words() {
        let fx = FeatureExtractor::new(&settings());
        let doc = extract_html(
            "<title>The Title</title><nav>Menu</nav><p>Hello, WORLD of Ünïcode!</p>",
            1 << 20,
        );
        assert_eq!(fx.tokens(&doc), vec!["the", "title", "hello", "world", "of", "ünïcode"]);
    }

    #[test]
    fn weights_follow_the_formula() {
        let fx = FeatureExtractor::new(&settings()).with_labels(true);
        let doc = extract_html(
            "<html lang=en><title>Crawling</title><h1>Spiders</h1><p>crawling crawling and spiders</p><footer>legal</footer>",
            1 << 20,
        );
        let f = fx.features(&doc, None);
        let w = |label: &str| {
            let labels = f.labels.as_ref().unwrap();
            labels.iter().position(|l| l == label).map(|i| f.items[i].1)
        };
        // "crawl": title + 2 body occurrences -> (1 + ln 3) * title_boost.
        let title = settings().title_boost as f32;
        assert!((w("crawl").unwrap() - (1.0 + 3f32.ln()) * title).abs() < 1e-5);
        // "spider": heading (2) + body -> (1 + ln 2) * 2.
        assert!((w("spider").unwrap() - (1.0 + 2f32.ln()) * 2.0).abs() < 1e-5);
        // bigram within the body block, stop word "and" removed.
        assert!(w("crawl spider").is_some());
        // Without labels the same hashes: a bigram is feature_hash of "stem stem".
        let plain = FeatureExtractor::new(&settings()).features(&doc, None);
        assert_eq!(plain.items, f.items);
        assert!(plain.items.iter().any(|&(h, _)| h == feature_hash(b"crawl spider")));
        for (item, label) in f.items.iter().zip(f.labels.as_ref().unwrap()) {
            assert_eq!(item.0, feature_hash(label.as_bytes()), "{label}");
        }
        assert!(w("and").is_none());
        // footer has weight 0 by default.
        assert!(w("legal").is_none());
        let sorted = f.items.windows(2).all(|p| p[0].0 < p[1].0);
        assert!(sorted);
    }

    #[test]
    fn all_boilerplate_page_falls_back_to_full_text() {
        let fx = FeatureExtractor::new(&settings());
        let a = extract_html("<nav>alpha beta gamma</nav>", 1 << 20);
        let b = extract_html("<nav>delta epsilon zeta</nav>", 1 << 20);
        let (fa, fb) = (fx.features(&a, None), fx.features(&b, None));
        assert!(!fa.items.is_empty());
        assert!(hamming(simhash(&fa), simhash(&fb)) > 3);
    }

    #[test]
    fn language_from_lang_attr_and_detection() {
        let fx = FeatureExtractor::new(&settings());
        let de = extract_html(
            "<p>Der Hund und die Katze sind in dem Haus, aber nicht mit uns, weil es kalt ist.</p>",
            1 << 20,
        );
        assert_eq!(fx.language(&de), "de");
        let fr = extract_html("<html lang='fr-CA'><p>hello</p>", 1 << 20);
        assert_eq!(fx.language(&fr), "fr");
        let ru = extract_html("<p>Привет мир, это тест</p>", 1 << 20);
        assert_eq!(fx.language(&ru), "ru");
        let unknown = extract_html("<p>zzz qqq</p>", 1 << 20);
        assert_eq!(fx.language(&unknown), "en");
    }

    fn templated(body: &str) -> String {
        // A heavy template: 150 distinct index entries on every page.
        let side: String = (0..150).map(|k| format!("entry{k} ")).collect();
        format!(
            "<html><title>ACME API Reference</title><div class=top>ACME Widgets API Reference Version 4.2 Home Guides \
             Reference Examples Download Support Community Blog</div><div class=side><ul><li>Module alpha overview</li>\
             <li>Module beta configuration</li><li>Module gamma networking and sockets</li><li>Module delta storage \
             engines</li><li>{side}</li></ul></div><div class=main><p>{body}</p></div><div class=bottom>Copyright ACME Corporation. \
             All rights reserved. Generated by docgen 1.9 from the sources.</div></html>"
        )
    }

    #[test]
    fn template_keys_split_language_sections() {
        assert_eq!(template_key("h:1", "/ca-ES/sect.x.html", None), "h:1|ca-es");
        assert_eq!(template_key("h:1", "/zh_CN/ch01.html", None), "h:1|zh-cn");
        assert_eq!(template_key("h:1", "/fr/", None), "h:1|fr");
        assert_eq!(template_key("h:1", "/pt-BR/a/b.html", Some("pt")), "h:1|pt");
        assert_eq!(template_key("h:1", "/x.html", Some(" EN-us ")), "h:1|en-us");
        // Not language sections: a file, other directories, unknown codes.
        for path in [
            "/fr",
            "/fr.html",
            "/api/x.html",
            "/std/x.html",
            "/xx/y.html",
            "/en-toolong/y.html",
            "/",
        ] {
            assert_eq!(template_key("h:1", path, None), "h:1", "{path}");
        }
        assert!(ISO_639_1.windows(2).all(|w| w[0] < w[1]), "sorted for binary search");
    }

    #[test]
    fn template_learning_cuts_repeated_blocks() {
        let st = settings();
        let fx = FeatureExtractor::new(&st);
        let learner = TemplateLearner::new(&st);
        let bodies = [
            "Function open returns a handle",
            "Struct Buffer holds bytes",
            "Enum Mode lists modes",
            "Trait Read reads data",
            "Macro log prints lines",
        ];
        let docs: Vec<Extracted> = bodies.iter().map(|b| extract_html(&templated(b), 1 << 20)).collect();
        assert!(learner.template("docs.test").is_none());
        assert!(learner.template_shared("docs.test").is_none());
        for (i, d) in docs.iter().enumerate() {
            learner.observe("docs.test", d);
            // The shared snapshot is the same template, rebuilt when the version moves.
            let (a, b) = (learner.template("docs.test"), learner.template_shared("docs.test"));
            assert_eq!(a.is_some(), b.is_some(), "page {i}");
            if let (Some(a), Some(b)) = (a, b) {
                assert_eq!((&a.blocks, a.version), (&b.blocks, b.version), "page {i}");
            }
        }
        let t = learner.template("docs.test").expect("template after 5 pages");
        assert_eq!(learner.version("docs.test"), t.version);
        assert!(t.version >= 1);
        assert_eq!(learner.pages("docs.test"), 5);
        assert_eq!(
            t.len(),
            8,
            "title, top, five side list items and bottom are template: {t:?}"
        );
        let fp = |d: &Extracted, t: Option<&HostTemplate>| simhash(&fx.features(d, t));
        let min_with = (0..5)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| hamming(fp(&docs[i], Some(&t)), fp(&docs[j], Some(&t))))
            .min()
            .unwrap();
        let min_without = (0..5)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| hamming(fp(&docs[i], None), fp(&docs[j], None)))
            .min()
            .unwrap();
        assert!(min_with > 3, "distinct pages apart with the template cut: {min_with}");
        assert!(
            min_without <= 3,
            "without the cut the template dominates: {min_without}"
        );
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

    /// A page's features depend on its host's template only through which
    /// of the page's blocks it holds (the crawl skips re-fingerprinting a
    /// young host's page when a template change leaves those alone).
    #[test]
    fn features_depend_on_the_template_only_through_the_page_blocks() {
        let st = settings();
        let fx = FeatureExtractor::new(&st);
        let doc = extract_html(&templated("Function open returns a handle"), 1 << 20);
        let hashes: Vec<u64> = doc.blocks.iter().map(|b| block_hash(&b.text)).collect();
        let base = HostTemplate {
            blocks: hashes[..3].iter().copied().collect(),
            weight: st.template_weight as f32,
            pages: 10,
            version: 1,
        };
        let mut other = base.clone();
        other.blocks.extend([1, 2, 3, block_hash("a block of another page")]);
        other.version = 2;
        assert_eq!(fx.features(&doc, Some(&base)), fx.features(&doc, Some(&other)));
        let none = HostTemplate {
            blocks: [7, 8].into_iter().collect(),
            ..base.clone()
        };
        assert_eq!(fx.features(&doc, None), fx.features(&doc, Some(&none)));
        let mut toggled = base.clone();
        toggled.blocks.insert(hashes[hashes.len() - 2]);
        assert_ne!(fx.features(&doc, Some(&base)), fx.features(&doc, Some(&toggled)));
    }

    proptest::proptest! {
        /// The learner's template after every page equals the blocks a full
        /// recount puts at or above the host's `need`, and its version moves
        /// exactly when that set changes.
        #[test]
        fn template_equals_a_recount(
            pages in proptest::collection::vec(proptest::collection::vec(0u8..12, 0..8), 1..40),
            min_pages in 1u32..5,
            fraction in 0.0f64..1.0,
        ) {
            let mut st = settings();
            st.template_min_pages = min_pages;
            st.template_min_fraction = fraction;
            let learner = TemplateLearner::new(&st);
            let mut counts: HashMap<u64, u32> = HashMap::new();
            let mut last: Option<HashSet<u64>> = None;
            let mut versions = 0;
            for (n, page) in pages.iter().enumerate() {
                let doc = Extracted {
                    blocks: page
                        .iter()
                        .map(|b| TextBlock { text: format!("block {b}"), kind: BlockKind::Body })
                        .collect(),
                    ..Extracted::default()
                };
                learner.observe("h.test", &doc);
                let distinct: HashSet<u64> = doc.blocks.iter().map(|b| block_hash(&b.text)).collect();
                for h in distinct {
                    *counts.entry(h).or_insert(0) += 1;
                }
                let pages_seen = n as u32 + 1;
                let need = ((fraction * f64::from(pages_seen)).ceil() as u32).max(min_pages);
                let oracle: HashSet<u64> = counts.iter().filter(|(_, &c)| c >= need).map(|(&h, _)| h).collect();
                match learner.template("h.test") {
                    None => proptest::prop_assert!(pages_seen < min_pages),
                    Some(t) => {
                        proptest::prop_assert_eq!(&t.blocks, &oracle);
                        if last.as_ref().map_or(!oracle.is_empty(), |l| *l != oracle) {
                            versions += 1;
                        }
                        proptest::prop_assert_eq!(t.version, versions);
                        last = Some(oracle);
                    }
                }
            }
        }
    }

    #[test]
    fn ascii_words_examples() {
        for text in [
            "can't stop e.g. 3.14 1,000 a.1 x_y _ __ a..b 1;2 a:b 9a a1.2 ab' 'ab",
            "Hello, WORLD!",
        ] {
            let mut fast = Vec::new();
            for_each_word(text, |w| fast.push(w));
            assert_eq!(fast, text.unicode_words().collect::<Vec<_>>(), "{text}");
        }
    }

    /// The features as the module docs define them, written the plain way
    /// (UAX #29 words, `to_lowercase`, a `HashMap` of counts, each feature
    /// hashed from its text): the oracle for the fast path.
    fn reference_features(fx: &FeatureExtractor, doc: &Extracted, template: Option<&HostTemplate>) -> Vec<(u64, f32)> {
        let s = fx.settings();
        let lang = fx.lang_of(doc);
        let stemmer = Stemmer::create(algorithm(LANGUAGES[lang]).unwrap());
        let stop = &fx.shared.stop[lang];
        let mult = |b: &TextBlock, structural: bool| -> f32 {
            let base = match b.kind {
                BlockKind::Title => s.title_boost,
                BlockKind::Heading => s.heading_boost,
                BlockKind::Body | BlockKind::Links => 1.0,
                BlockKind::Boilerplate if structural => s.boilerplate_weight,
                BlockKind::Boilerplate => 1.0,
            } as f32;
            match template {
                Some(t) if structural => base * t.block_weight(&b.text),
                _ => base,
            }
        };
        let structural = doc.blocks.iter().any(|b| mult(b, true) > 0.0);
        let mut acc: HashMap<u64, (u32, f32)> = HashMap::new();
        let mut add = |h: u64, m: f32| {
            let e = acc.entry(h).or_insert((0, 0.0));
            e.0 += 1;
            e.1 = e.1.max(m);
        };
        for b in &doc.blocks {
            let m = mult(b, structural);
            if m <= 0.0 {
                continue;
            }
            let mut prev: Option<String> = None;
            for w in b.text.unicode_words() {
                let word = w.to_lowercase();
                let letter = word.chars().any(char::is_alphabetic);
                if (s.stop_words && stop.contains(word.as_str())) || !letter {
                    continue;
                }
                let stem = if s.stemming {
                    stemmer.stem(&word).into_owned()
                } else {
                    word
                };
                add(feature_hash(stem.as_bytes()), m * s.unigram_weight as f32);
                if let Some(p) = &prev {
                    add(
                        feature_hash(format!("{p} {stem}").as_bytes()),
                        m * s.bigram_weight as f32,
                    );
                }
                prev = Some(stem);
            }
        }
        let mut items: Vec<(u64, f32)> = acc
            .into_iter()
            .map(|(h, (n, m))| (h, (1.0 + (n as f32).ln()) * m))
            .filter(|&(_, w)| w > 0.0)
            .collect();
        items.sort_unstable_by_key(|&(h, _)| h);
        items
    }

    fn bits(items: &[(u64, f32)]) -> Vec<(u64, u32)> {
        items.iter().map(|&(h, w)| (h, w.to_bits())).collect()
    }

    /// The fast path gives bit-identical features to the plain definition
    /// on every page of the test web, with and without a template, and
    /// with stemming or stop words off.
    #[test]
    fn features_equal_the_reference_on_the_test_web() {
        use crate::testweb::{TestWeb, TestWebOptions};
        let web = TestWeb::new(TestWebOptions {
            pages: 150,
            ..Default::default()
        });
        let truth = web.truth(80);
        let mut plain = settings();
        plain.stemming = false;
        plain.stop_words = false;
        let fxs = [FeatureExtractor::new(&settings()), FeatureExtractor::new(&plain)];
        let learner = TemplateLearner::new(&settings());
        let mut n = 0;
        for p in truth.pages.iter().filter(|p| p.status == 200) {
            let target = p.url.splitn(4, '/').nth(3).map_or("/".to_string(), |t| format!("/{t}"));
            let body = web.respond(&p.host, &target, 80).body.to_vec();
            let html = String::from_utf8_lossy(&body);
            let doc = extract_html(&html, 1 << 20);
            learner.observe(&p.host, &doc);
            let template = learner.template(&p.host);
            for fx in &fxs {
                for t in [None, template.as_ref()] {
                    let fast = fx.features(&doc, t);
                    assert_eq!(bits(&fast.items), bits(&reference_features(fx, &doc, t)), "{}", p.url);
                }
            }
            n += 1;
        }
        assert!(n > 100, "{n} pages");
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

        /// The same on random text: mixed case, Unicode, digits, punctuation,
        /// repeated words, in several languages.
        #[test]
        fn features_equal_the_reference_on_random_text(
            blocks in proptest::collection::vec(("(?:[a-zA-Z]{1,12}|Ünï|ÉTÉ|straße|ΣΟΦΊΑ|дом|[0-9]{1,3}|the|THE|and|a|I'M|don't|e\\.g|[ .,:;'_-]{1,2}){0,40}", 0u8..5), 0..6),
            lang in proptest::sample::select(vec!["", "en", "de", "fr", "ru", "el"]),
        ) {
            let doc = Extracted {
                lang: (!lang.is_empty()).then(|| lang.to_string()),
                blocks: blocks
                    .into_iter()
                    .map(|(text, k)| TextBlock {
                        text: text.split_whitespace().collect::<Vec<_>>().join(" "),
                        kind: [BlockKind::Title, BlockKind::Heading, BlockKind::Body, BlockKind::Boilerplate, BlockKind::Links][k as usize % 5],
                    })
                    .filter(|b| !b.text.is_empty())
                    .collect(),
                ..Extracted::default()
            };
            let fx = FeatureExtractor::new(&settings());
            proptest::prop_assert_eq!(bits(&fx.features(&doc, None).items), bits(&reference_features(&fx, &doc, None)));
        }

        /// Folding while hashing equals hashing the folded word.
        #[test]
        fn word_key_folds_ascii(w in "[ -~]{0,40}") {
            proptest::prop_assert_eq!(word_key::<true>(w.as_bytes()), word_key::<false>(w.to_ascii_lowercase().as_bytes()));
        }

        /// The branch-free merge equals a plain loop over the runs.
        #[test]
        fn merge_runs_merges(mut v in proptest::collection::vec((0u64..40, -1i8..4), 0..300)) {
            v.sort_by_key(|e| e.0);
            let mut occ: Vec<(u64, f32)> = v.iter().map(|&(h, m)| (h, f32::from(m) * 0.75)).collect();
            let mut expect: Vec<(u64, u32, u32)> = Vec::new();
            for &(h, m) in &occ {
                match expect.last_mut() {
                    Some(e) if e.0 == h => {
                        e.1 += 1;
                        if m > f32::from_bits(e.2) {
                            e.2 = m.to_bits();
                        }
                    }
                    _ => expect.push((h, 1, if m > 0.0 { m } else { 0.0 }.to_bits())),
                }
            }
            let mut counts = vec![7];
            merge_runs(&mut occ, &mut counts);
            let got: Vec<(u64, u32, u32)> = occ.iter().zip(&counts).map(|(&(h, m), &c)| (h, c, m.to_bits())).collect();
            proptest::prop_assert_eq!(got, expect);
        }

        /// The bucket sort sorts.
        #[test]
        fn sort_by_hash_sorts(mut v in proptest::collection::vec((proptest::num::u64::ANY, 0u8..3), 0..3000), dup in 0usize..50) {
            // Some repeated hashes and some hashes sharing their top bits.
            let extra: Vec<(u64, u8)> = v.iter().take(dup).map(|&(h, m)| (h & !0xffff, m)).collect();
            v.extend(extra.iter().copied());
            v.extend(extra);
            let mut a: Vec<(u64, f32)> = v.iter().map(|&(h, m)| (h, f32::from(m))).collect();
            let mut b = a.clone();
            sort_by_hash(&mut a, &mut Vec::new());
            proptest::prop_assert!(a.windows(2).all(|p| p[0].0 <= p[1].0));
            // The same multiset (ties may come in any order).
            b.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
            a.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
            proptest::prop_assert_eq!(bits(&a), bits(&b));
        }
    }

    #[test]
    fn extractor_is_send_sync() {
        fn check<T: Send + Sync + Clone>() {}
        check::<FeatureExtractor>();
        fn check2<T: Send + Sync>() {}
        check2::<TemplateLearner>();
    }
}
