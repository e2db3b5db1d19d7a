//! The page's language: the `<html lang>` primary subtag when a stemmer
//! exists for it, else (with `features.detect_language`) the script or the
//! most frequent stop words, else `features.default_language`.

use rust_stemmers::Algorithm;
use unicode_segmentation::UnicodeSegmentation;

use super::tokenize::case_fold_into;
use super::{FastMap, FastSet, FeatureExtractor};
use crate::extract::{BlockKind, Extracted};

/// Languages with a stemmer, as ISO 639-1 codes, in a fixed order (the index
/// is the language id used internally).
pub const LANGUAGES: &[&str] = &[
    "ar", "da", "de", "el", "en", "es", "fi", "fr", "hu", "it", "nl", "no", "pt", "ro", "ru", "sv", "ta", "tr",
];

pub(super) fn algorithm(code: &str) -> Option<Algorithm> {
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

pub(super) fn lang_id(code: &str) -> Option<usize> {
    let code = match code {
        "nb" | "nn" => "no",
        c => c,
    };
    LANGUAGES.iter().position(|l| *l == code)
}

/// Each word of the stop-word sets (one per language of [`LANGUAGES`]), with
/// bit `i` set for each set `i` that holds it.
pub(super) fn stop_langs(stop: &[FastSet<&'static str>]) -> FastMap<&'static str, u32> {
    const _: () = assert!(LANGUAGES.len() <= 32, "a language's bit in a u32");
    let mut langs = FastMap::default();
    for (i, set) in stop.iter().enumerate() {
        for &w in set {
            *langs.entry(w).or_insert(0) |= 1 << i;
        }
    }
    langs
}

impl FeatureExtractor {
    /// The language (ISO 639-1) used for a document: see the module docs.
    pub fn language(&self, doc: &Extracted) -> &'static str {
        LANGUAGES[self.lang_of(doc)]
    }

    pub(super) fn lang_of(&self, doc: &Extracted) -> usize {
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

    /// Adds one to `hits[i]` for each language `i` whose stop words hold
    /// `folded` (a case-folded word).
    fn stop_hits(&self, folded: &str, hits: &mut [u32]) {
        let mut langs = self.shared.stop_langs.get(folded).copied().unwrap_or(0);
        while langs != 0 {
            if let Some(h) = hits.get_mut(langs.trailing_zeros() as usize) {
                *h += 1;
            }
            langs &= langs - 1;
        }
    }

    /// Script first, then the stop-word ratio over the first 400 words.
    pub(super) fn detect<'a>(&self, blocks: impl Iterator<Item = &'a str>) -> Option<usize> {
        let mut hits = vec![0u32; LANGUAGES.len()];
        let mut script = [0u32; 4]; // cyrillic, greek, arabic, tamil
        let mut words = 0u32;
        let mut f = String::new();
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
                case_fold_into(&mut f, w);
                self.stop_hits(&f, &mut hits);
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
}

#[cfg(test)]
mod tests {
    use crate::extract::extract_html;

    use super::super::tests::settings;
    use super::*;

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

    /// A word counts for exactly the languages whose stop-word sets hold
    /// it: every stop word of every language (many are in several), and
    /// words in none.
    #[test]
    fn a_stop_word_counts_for_each_language_that_lists_it() {
        let fx = FeatureExtractor::new(&settings());
        let stop = &fx.shared.stop;
        let mut shared = 0;
        for w in stop.iter().flatten().copied().chain(["zzz", "", "regex"]) {
            let mut got = vec![0u32; LANGUAGES.len()];
            fx.stop_hits(w, &mut got);
            let want: Vec<u32> = stop.iter().map(|set| u32::from(set.contains(w))).collect();
            assert_eq!(got, want, "{w}");
            shared += usize::from(want.iter().sum::<u32>() > 1);
        }
        assert!(shared > 100, "{shared} words in several languages");
    }
}
