//! A page's features before weighting ([`PreparedDoc`]): each block's
//! unigram and bigram hashes and word keys, computed once, so that weighing
//! the page again under another template costs no tokenizing or stemming.
//! The crawl keeps young pages this way (they are fingerprinted again while
//! their host's template settles).

use super::stem::Occurrences;
use super::{FeatureExtractor, Features, HostTemplate, PageShape};
use crate::extract::Extracted;

/// One block's occurrences.
#[derive(Debug, Clone, Default, PartialEq)]
struct PreparedBlock {
    unigrams: Vec<u64>,
    bigrams: Vec<u64>,
    /// Word keys, when the extractor keeps them.
    words: Vec<u64>,
    keep_words: bool,
}

impl Occurrences for PreparedBlock {
    fn unigram(&mut self, h: u64, _: f32, _: &str) {
        self.unigrams.push(h);
    }
    fn bigram(&mut self, h: u64, _: f32, _: &str) {
        self.bigrams.push(h);
    }
    fn word(&mut self, key: u64) {
        if self.keep_words {
            self.words.push(key);
        }
    }
    fn labels(&self) -> bool {
        false
    }
}

/// A document tokenized, stemmed and hashed, not yet weighted: what
/// [`FeatureExtractor::features_prepared`] weighs under any template.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreparedDoc {
    page: PageShape,
    blocks: Vec<PreparedBlock>,
}

impl PreparedDoc {
    /// Heap bytes held (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| 8 * (b.unigrams.capacity() + b.bigrams.capacity() + b.words.capacity()))
            .sum::<usize>()
            + self.blocks.capacity() * std::mem::size_of::<PreparedBlock>()
    }
}

impl FeatureExtractor {
    /// The occurrences of `doc`'s features, to weigh later with
    /// [`FeatureExtractor::features_prepared`] (not for an extractor that
    /// keeps labels: they are not prepared).
    pub fn prepare(&self, doc: &Extracted) -> PreparedDoc {
        let lang = self.lang_of(doc);
        let blocks = doc
            .blocks
            .iter()
            .map(|b| {
                let mut p = PreparedBlock {
                    keep_words: self.words,
                    ..Default::default()
                };
                self.add_text(&mut p, lang, &b.text, 1.0);
                p.unigrams.shrink_to_fit();
                p.bigrams.shrink_to_fit();
                p.words.shrink_to_fit();
                p
            })
            .collect();
        PreparedDoc {
            page: PageShape::of(doc),
            blocks,
        }
    }

    /// [`FeatureExtractor::features_hashed`] of a prepared document: the
    /// same features, weighed from the stored occurrences.
    pub fn features_prepared(&self, doc: &PreparedDoc, hashes: &[u64], template: Option<&HostTemplate>) -> Features {
        let s = &self.shared.settings;
        let (unigram_weight, bigram_weight) = (s.unigram_weight as f32, s.bigram_weight as f32);
        self.weigh(&doc.page, hashes, template, |acc, i, m| {
            let Some(b) = doc.blocks.get(i) else { return };
            let (uw, bw) = (m * unigram_weight, m * bigram_weight);
            if uw > 0.0 {
                for &h in &b.unigrams {
                    acc.add(h, uw, "");
                }
            }
            if bw > 0.0 {
                for &h in &b.bigrams {
                    acc.add(h, bw, "");
                }
            }
            if let Some(words) = &mut acc.words {
                words.extend_from_slice(&b.words);
            }
        })
    }
}
