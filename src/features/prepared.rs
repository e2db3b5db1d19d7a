//! A page's features before weighting ([`PreparedDoc`]): each block's
//! unigram and bigram hashes and word keys, computed once, so that weighing
//! the page again under another template costs no tokenizing or stemming.
//! The crawl keeps young pages this way (they are fingerprinted again while
//! their host's template settles).

use super::stem::Occurrences;
use super::{FeatureExtractor, Features, HostTemplate, PageShape};
use crate::extract::Extracted;

/// The occurrences of a page's blocks, each kind in one vector (block
/// `i`'s are `ends[i - 1]..ends[i]`).
#[derive(Debug, Clone, Default, PartialEq)]
struct Occ {
    unigrams: Vec<u64>,
    bigrams: Vec<u64>,
    /// Word keys, when the extractor keeps them.
    words: Vec<u64>,
    keep_words: bool,
}

impl Occurrences for Occ {
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
    occ: Occ,
    /// Per block, where its unigrams, bigrams and words end.
    ends: Vec<[u32; 3]>,
}

impl PreparedDoc {
    /// Block `i`'s unigrams, bigrams and words.
    fn block(&self, i: usize) -> Option<(&[u64], &[u64], &[u64])> {
        let end = *self.ends.get(i)?;
        let start = i
            .checked_sub(1)
            .and_then(|j| self.ends.get(j))
            .copied()
            .unwrap_or([0; 3]);
        let r = |k: usize| start[k] as usize..end[k] as usize;
        Some((
            self.occ.unigrams.get(r(0))?,
            self.occ.bigrams.get(r(1))?,
            self.occ.words.get(r(2))?,
        ))
    }
}

impl FeatureExtractor {
    /// The occurrences of `doc`'s features, to weigh later with
    /// [`FeatureExtractor::features_prepared`] (not for an extractor that
    /// keeps labels: they are not prepared).
    pub fn prepare(&self, doc: &Extracted) -> PreparedDoc {
        let lang = self.lang_of(doc);
        let page = PageShape::of(doc);
        // About a word per six bytes, a unigram and a bigram per word.
        let words = page.bytes / 6 + 1;
        let mut occ = Occ {
            unigrams: Vec::with_capacity(words),
            bigrams: Vec::with_capacity(words),
            words: Vec::with_capacity(if self.words { words } else { 0 }),
            keep_words: self.words,
        };
        let mut ends = Vec::with_capacity(doc.blocks.len());
        for b in &doc.blocks {
            self.add_text(&mut occ, lang, &b.text, 1.0);
            let end = |v: &Vec<u64>| u32::try_from(v.len()).unwrap_or(u32::MAX);
            ends.push([end(&occ.unigrams), end(&occ.bigrams), end(&occ.words)]);
        }
        occ.unigrams.shrink_to_fit();
        occ.bigrams.shrink_to_fit();
        occ.words.shrink_to_fit();
        PreparedDoc { page, occ, ends }
    }

    /// [`FeatureExtractor::features_hashed`] of a prepared document: the
    /// same features, weighed from the stored occurrences.
    pub fn features_prepared(&self, doc: &PreparedDoc, hashes: &[u64], template: Option<&HostTemplate>) -> Features {
        let s = &self.shared.settings;
        let (unigram_weight, bigram_weight) = (s.unigram_weight as f32, s.bigram_weight as f32);
        self.weigh(&doc.page, hashes, template, |acc, i, m| {
            let Some((unigrams, bigrams, block_words)) = doc.block(i) else {
                return;
            };
            let (uw, bw) = (m * unigram_weight, m * bigram_weight);
            if uw > 0.0 {
                for &h in unigrams {
                    acc.add(h, uw, "");
                }
            }
            if bw > 0.0 {
                for &h in bigrams {
                    acc.add(h, bw, "");
                }
            }
            if let Some(words) = &mut acc.words {
                words.extend_from_slice(block_words);
            }
        })
    }
}
