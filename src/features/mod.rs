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
//!   one block (bigram, "phrase"), hashed with [`crate::hash::feature_hash`]
//!   of the stem, or of the two stems joined by one space.
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
//! The stages of [`FeatureExtractor`], one file each: `tokenize` splits
//! text into words, `lang` picks the page's language, `stem` looks words
//! up in the per-thread stem cache and emits unigram and bigram
//! occurrences, `weigh` turns occurrences into weights, and `template`
//! learns each host's repeated blocks.
//!
//! Stems are cached per thread (the cache is a pure function of language and
//! word — stem, its FNV-1a state, stop word, has a letter — shared by all
//! extractors on the thread, cleared when it reaches 200 000 entries), so a
//! word costs one hash lookup. ASCII text is split into words by a fast path
//! that yields exactly what UAX #29 (`unicode_words`) yields (proptest checks
//! it against `unicode_words`).

mod lang;
mod prepared;
mod stem;
mod stopwords;
mod template;
mod tokenize;
mod weigh;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use crate::config::FeatureSettings;
use crate::extract::{BlockKind, Extracted};
use crate::hash::{fmix64, fnv1a_continue};

pub use lang::LANGUAGES;
pub use prepared::PreparedDoc;
pub use template::{block_hash, block_hashes, template_key, template_site, HostTemplate, TemplateLearner};

use lang::{algorithm, lang_id};
use tokenize::case_fold;
use weigh::Accumulator;

/// A hasher for keys that are already hashes or short words (not DoS
/// resistant; only for in-process tables).
#[derive(Default)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        fmix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fnv1a_continue(self.0, bytes);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

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
    /// Where each run of [`Features::words`] from one block ends in
    /// `words`, and that block's [`block_hash`] (ascending ends), when the
    /// block hashes were given and the page has blocks weighed as content
    /// (not when it is weighed as if all of it were: see the module docs);
    /// empty otherwise. A block of [`Features::cut_blocks`] is an empty run
    /// where its words would be, so the shingles across the gap it leaves
    /// go with it.
    pub word_blocks: Vec<(u32, u64)>,
    /// The [`block_hash`]es of the blocks whose words the page's template
    /// left out of [`Features::words`] (blocks that would be content but
    /// are template blocks now), sorted, each once, when the words are
    /// kept; empty otherwise. A template changes as the crawl goes (a
    /// block repeated on about `template_min_fraction` of a site's pages
    /// comes and goes), so a content sketch keeps them: a later page is
    /// compared without them too.
    pub cut_blocks: Vec<u64>,
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
    /// Each stop word of any language, with bit `i` set for each language
    /// `i` that lists it (language detection reads a word once).
    stop_langs: FastMap<&'static str, u32>,
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
        let stop: Vec<FastSet<&'static str>> = LANGUAGES
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
        let stop_langs = lang::stop_langs(&stop);
        FeatureExtractor {
            shared: Arc::new(Shared {
                settings: settings.clone(),
                default_lang,
                stemmers,
                stop,
                stop_langs,
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
        let page = PageShape::of(doc);
        self.weigh(&page, hashes, template, |acc, i, m| {
            if let Some(b) = doc.blocks.get(i) {
                self.add_text(acc, lang, &b.text, m);
            }
        })
    }

    /// The weighting of a page's blocks (see the module docs): `add` puts
    /// block `i`'s occurrences into the accumulator with multiplier `m`
    /// (word keys too when the accumulator keeps them), for each block
    /// whose multiplier is positive, in document order.
    fn weigh(
        &self,
        page: &PageShape,
        hashes: &[u64],
        template: Option<&HostTemplate>,
        mut add: impl FnMut(&mut Accumulator, usize, f32),
    ) -> Features {
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
        let kinds = &page.kinds;
        let mut any = kinds.iter().enumerate().any(|(i, &k)| mult(i, k, true) > 0.0);
        let structural = any;
        if !any {
            any = !kinds.is_empty();
        }
        let mut acc = Accumulator::with_capacity(self.labels, page.bytes);
        if self.words {
            acc.words = Some(Vec::with_capacity(page.bytes / 5));
        }
        let mut word_blocks: Vec<(u32, u64)> = Vec::new();
        let mut cut_blocks: Vec<u64> = Vec::new();
        // Content words: the weighed blocks but the <title> (the page's
        // name, not its content) and a heading that repeats it, and, on a
        // page that is not mostly links, link lists (menus, prev/next
        // links, tables of contents).
        let links_are_content = page.links_are_content(hashes, template);
        let is_content = |i: usize, kind: BlockKind| match kind {
            BlockKind::Title => false,
            BlockKind::Heading => !page.names_the_page.get(i).copied().unwrap_or(false),
            BlockKind::Links => links_are_content || !structural,
            _ => true,
        };
        if any {
            for (i, &kind) in kinds.iter().enumerate() {
                let m = mult(i, kind, structural);
                if m <= 0.0 {
                    // A block the template leaves out of the content.
                    let template_cut = self.words
                        && structural
                        && kind != BlockKind::Boilerplate
                        && is_content(i, kind)
                        && hashes
                            .get(i)
                            .is_some_and(|h| template.is_some_and(|t| t.blocks.contains(h)));
                    if let (true, Some(&h), Some(at)) = (template_cut, hashes.get(i), acc.words.as_ref().map(Vec::len))
                    {
                        // An empty run: a shingle across the gap it leaves
                        // goes with it too.
                        cut_blocks.push(h);
                        word_blocks.push((u32::try_from(at).unwrap_or(u32::MAX), h));
                    }
                } else {
                    let content = is_content(i, kind);
                    let words = if content { None } else { acc.words.take() };
                    let before = acc.words.as_ref().map(Vec::len);
                    add(&mut acc, i, m);
                    if words.is_some() {
                        acc.words = words;
                    } else if let (Some(before), Some(after), Some(&block)) =
                        (before, acc.words.as_ref().map(Vec::len), hashes.get(i))
                    {
                        if after > before && structural {
                            word_blocks.push((u32::try_from(after).unwrap_or(u32::MAX), block));
                        }
                    }
                }
            }
        }
        let mut features = acc.finish();
        if word_blocks.last().is_some_and(|r| r.0 as usize == features.words.len()) {
            features.word_blocks = word_blocks;
        }
        cut_blocks.sort_unstable();
        cut_blocks.dedup();
        features.cut_blocks = cut_blocks;
        features
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
}

/// What the weighting needs of a page besides its words: each block's
/// kind, which headings repeat the title, whether link lists are content,
/// and the text's size.
#[derive(Debug, Clone, Default, PartialEq)]
struct PageShape {
    kinds: Vec<BlockKind>,
    /// Per block: a heading that repeats the title ([`names_the_page`]).
    names_the_page: Vec<bool>,
    /// Per block: its text's bytes.
    sizes: Vec<u32>,
    bytes: usize,
}

impl PageShape {
    fn of(doc: &Extracted) -> Self {
        let title = doc.title.as_deref().unwrap_or_default();
        PageShape {
            kinds: doc.blocks.iter().map(|b| b.kind).collect(),
            names_the_page: doc
                .blocks
                .iter()
                .map(|b| b.kind == BlockKind::Heading && names_the_page(&b.text, title))
                .collect(),
            sizes: doc
                .blocks
                .iter()
                .map(|b| u32::try_from(b.text.len()).unwrap_or(u32::MAX))
                .collect(),
            bytes: doc.blocks.iter().map(|b| b.text.len()).sum(),
        }
    }

    /// Whether link lists are content: they are on a page that is mostly
    /// links (an index, a table of contents page: its link-list text
    /// outweighs its body and heading text) and navigation on any other
    /// page. Both are counted outside the blocks of `template` (a banner or
    /// a notice a site adds to every page does not make a table of contents
    /// navigation; a copy of the page without it weighs the same).
    fn links_are_content(&self, hashes: &[u64], template: Option<&HostTemplate>) -> bool {
        let in_template = |i: usize| template.is_some_and(|t| hashes.get(i).is_some_and(|h| t.blocks.contains(h)));
        let (mut links, mut text) = (0u64, 0u64);
        for (i, (&kind, &size)) in self.kinds.iter().zip(&self.sizes).enumerate() {
            if in_template(i) {
                continue;
            }
            match kind {
                BlockKind::Links => links += u64::from(size),
                BlockKind::Body | BlockKind::Heading => text += u64::from(size),
                _ => {}
            }
        }
        links > text
    }
}

/// Whether a heading repeats the page's title as written: the whole title,
/// or its first part when the title adds the site's name after a
/// separator ("Installing | Foo documentation"), case aside. A heading that
/// differs from the title in any character (a reference page's
/// "Foo.bar¶" under the title "Foo.bar — API") is content.
fn names_the_page(heading: &str, title: &str) -> bool {
    let heading = heading.trim();
    let title = title.trim();
    if heading.is_empty() {
        return false;
    }
    heading.eq_ignore_ascii_case(title)
        || [" | ", " — ", " – ", " - ", " · "]
            .iter()
            .filter_map(|sep| title.split_once(sep))
            .any(|(first, _)| heading.eq_ignore_ascii_case(first.trim()))
}

#[cfg(test)]
mod tests;
