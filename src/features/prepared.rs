//! A page's features before weighting ([`PreparedDoc`]): each block's
//! unigram and bigram hashes and word keys, computed once, so that weighing
//! the page again under another template costs no tokenizing or stemming.
//! The crawl keeps young pages this way (they are fingerprinted again while
//! their host's template settles).

use super::stem::Occurrences;
use super::{FeatureExtractor, Features, HostTemplate, PageShape};
use crate::extract::{BlockKind, Extracted};

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

/// The first byte of [`PreparedDoc::encode`]'s layout.
const ENCODING_VERSION: u8 = 1;

impl PreparedDoc {
    /// Appends the document to `out` in a compact binary layout that
    /// [`PreparedDoc::decode`] reads back (little-endian: a version byte,
    /// the page's byte count, then each vector as its length and items; a
    /// block kind is one byte). For keeping prepared pages outside memory
    /// within one process: the layout is not a stable file format.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        fn len(out: &mut Vec<u8>, n: usize) {
            out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
        }
        out.reserve(
            32 + self.page.kinds.len() * 6
                + 8 * (self.occ.unigrams.len() + self.occ.bigrams.len() + self.occ.words.len())
                + 12 * self.ends.len(),
        );
        out.push(ENCODING_VERSION);
        out.extend_from_slice(&(self.page.bytes as u64).to_le_bytes());
        out.push(u8::from(self.occ.keep_words));
        len(out, self.page.kinds.len());
        out.extend(self.page.kinds.iter().map(|&k| kind_byte(k)));
        len(out, self.page.names_the_page.len());
        out.extend(self.page.names_the_page.iter().map(|&b| u8::from(b)));
        len(out, self.page.sizes.len());
        for v in &self.page.sizes {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [&self.occ.unigrams, &self.occ.bigrams, &self.occ.words] {
            len(out, v.len());
            for h in v {
                out.extend_from_slice(&h.to_le_bytes());
            }
        }
        len(out, self.ends.len());
        for e in &self.ends {
            for v in e {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// The document [`PreparedDoc::encode`] wrote at the start of `b`;
    /// None when `b` is not such a layout (wrong version, cut short, a
    /// length past its end, an unknown block kind).
    pub(crate) fn decode(b: &[u8]) -> Option<PreparedDoc> {
        let mut r = Reader(b);
        if r.take(1)?[0] != ENCODING_VERSION {
            return None;
        }
        let bytes = usize::try_from(r.u64()?).ok()?;
        let keep_words = r.take(1)?[0] != 0;
        let n = r.len()?;
        let kinds = r.take(n)?.iter().map(|&k| byte_kind(k)).collect::<Option<Vec<_>>>()?;
        let n = r.len()?;
        let names_the_page = r.take(n)?.iter().map(|&b| b != 0).collect();
        let n = r.len()?;
        let sizes = (0..n).map(|_| r.u32()).collect::<Option<Vec<_>>>()?;
        let mut vecs = [Vec::new(), Vec::new(), Vec::new()];
        for v in &mut vecs {
            let n = r.len()?;
            // The length is checked against the bytes left before allocating.
            let bytes = r.take(n.checked_mul(8)?)?;
            *v = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect();
        }
        let n = r.len()?;
        r.0.get(..n.checked_mul(12)?)?;
        let ends = (0..n)
            .map(|_| Some([r.u32()?, r.u32()?, r.u32()?]))
            .collect::<Option<Vec<_>>>()?;
        let [unigrams, bigrams, words] = vecs;
        Some(PreparedDoc {
            page: PageShape {
                kinds,
                names_the_page,
                sizes,
                bytes,
            },
            occ: Occ {
                unigrams,
                bigrams,
                words,
                keep_words,
            },
            ends,
        })
    }

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

/// Reads [`PreparedDoc::encode`]'s layout from the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.u32()?).ok()
    }
}

fn kind_byte(k: BlockKind) -> u8 {
    match k {
        BlockKind::Title => 0,
        BlockKind::Heading => 1,
        BlockKind::Body => 2,
        BlockKind::Boilerplate => 3,
        BlockKind::Links => 4,
    }
}

fn byte_kind(b: u8) -> Option<BlockKind> {
    Some(match b {
        0 => BlockKind::Title,
        1 => BlockKind::Heading,
        2 => BlockKind::Body,
        3 => BlockKind::Boilerplate,
        4 => BlockKind::Links,
        _ => return None,
    })
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
