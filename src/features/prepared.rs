//! A page's features before weighting ([`PreparedDoc`]): its distinct
//! unigram and bigram hashes in ascending order, the block of each of
//! their occurrences, and its word keys, computed once, so that weighing
//! the page again under another template costs no tokenizing, stemming or
//! sorting: one pass over the hashes. The crawl keeps young pages this way
//! (they are fingerprinted again while their host's template settles).

use super::stem::Occurrences;
use super::weigh::run_weight;
use super::{FeatureExtractor, Features, HostTemplate, PageShape};
use crate::extract::{BlockKind, Extracted};

/// The occurrences of a page's blocks as [`FeatureExtractor::prepare`]
/// collects them: `(hash, tag)` with tag `2 × block` for a unigram and
/// `2 × block + 1` for a bigram, and the word keys in text order.
#[derive(Debug, Default)]
struct Occ {
    tagged: Vec<(u64, u32)>,
    /// The block being added, as its unigrams' tag.
    tag: u32,
    /// Word keys, when the extractor keeps them.
    words: Vec<u64>,
    keep_words: bool,
}

impl Occurrences for Occ {
    fn unigram(&mut self, h: u64, _: f32, _: &str) {
        self.tagged.push((h, self.tag));
    }
    fn bigram(&mut self, h: u64, _: f32, _: &str) {
        self.tagged.push((h, self.tag | 1));
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
    /// The distinct unigram and bigram hashes, ascending.
    hashes: Vec<u64>,
    /// Per hash, where its occurrences end in `tags`.
    run_ends: Vec<u32>,
    /// The tag ([`Occ`]) of each occurrence, grouped by hash.
    tags: Vec<u32>,
    /// Word keys of every block, in text order (empty unless kept).
    words: Vec<u64>,
    keep_words: bool,
    /// Per block, where its words end in `words`.
    word_ends: Vec<u32>,
}

/// The first byte of [`PreparedDoc::encode`]'s layout.
const ENCODING_VERSION: u8 = 2;

impl PreparedDoc {
    /// Appends the document to `out` in a compact binary layout that
    /// [`PreparedDoc::decode`] reads back (little-endian: a version byte,
    /// the page's byte count, then each vector as its length and items; a
    /// block kind is one byte; a hash's occurrences are counted in one
    /// byte, or 255 and four; a tag takes two bytes when every tag fits).
    /// For keeping prepared pages outside memory within one process: the
    /// layout is not a stable file format.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        fn len(out: &mut Vec<u8>, n: usize) {
            out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
        }
        let wide = 2 * self.page.kinds.len() > usize::from(u16::MAX) + 1;
        out.reserve(
            32 + self.page.kinds.len() * 10 + 9 * self.hashes.len() + 4 * self.tags.len() + 8 * self.words.len(),
        );
        out.push(ENCODING_VERSION);
        out.extend_from_slice(&(self.page.bytes as u64).to_le_bytes());
        out.push(u8::from(self.keep_words));
        len(out, self.page.kinds.len());
        out.extend(self.page.kinds.iter().map(|&k| kind_byte(k)));
        len(out, self.page.names_the_page.len());
        out.extend(self.page.names_the_page.iter().map(|&b| u8::from(b)));
        len(out, self.page.sizes.len());
        for v in &self.page.sizes {
            out.extend_from_slice(&v.to_le_bytes());
        }
        len(out, self.hashes.len());
        for h in &self.hashes {
            out.extend_from_slice(&h.to_le_bytes());
        }
        let mut start = 0;
        for &end in &self.run_ends {
            match u8::try_from(end - start) {
                Ok(n) if n < u8::MAX => out.push(n),
                _ => {
                    out.push(u8::MAX);
                    out.extend_from_slice(&(end - start).to_le_bytes());
                }
            }
            start = end;
        }
        len(out, self.tags.len());
        for &t in &self.tags {
            if wide {
                out.extend_from_slice(&t.to_le_bytes());
            } else {
                out.extend_from_slice(&(t as u16).to_le_bytes());
            }
        }
        len(out, self.words.len());
        for h in &self.words {
            out.extend_from_slice(&h.to_le_bytes());
        }
        len(out, self.word_ends.len());
        for e in &self.word_ends {
            out.extend_from_slice(&e.to_le_bytes());
        }
    }

    /// The document [`PreparedDoc::encode`] wrote at the start of `b`;
    /// None when `b` is not such a layout (wrong version, cut short, a
    /// length past its end, an unknown block kind, hashes out of order,
    /// occurrences that do not add up or of a block the page does not
    /// have, word ranges out of order).
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
        // Each length is checked against the bytes left before allocating.
        let sizes = r.take(n.checked_mul(4)?)?.chunks_exact(4).map(le_u32).collect();
        let n = r.len()?;
        let hashes: Vec<u64> = r.take(n.checked_mul(8)?)?.chunks_exact(8).map(le_u64).collect();
        if hashes.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        r.0.get(..n)?;
        let mut run_ends = Vec::with_capacity(n);
        let mut end = 0u32;
        for _ in 0..n {
            let c = match r.take(1)?[0] {
                u8::MAX => r.u32()?,
                c => u32::from(c),
            };
            end = end.checked_add(c)?;
            run_ends.push(end);
        }
        let n = r.len()?;
        if n != end as usize {
            return None;
        }
        let wide = 2 * kinds.len() > usize::from(u16::MAX) + 1;
        let tags: Vec<u32> = if wide {
            r.take(n.checked_mul(4)?)?.chunks_exact(4).map(le_u32).collect()
        } else {
            let two = |c: &[u8]| u32::from(u16::from_le_bytes([c[0], c[1]]));
            r.take(n.checked_mul(2)?)?.chunks_exact(2).map(two).collect()
        };
        if tags.iter().any(|&t| t as usize >= 2 * kinds.len()) {
            return None;
        }
        let n = r.len()?;
        let words: Vec<u64> = r.take(n.checked_mul(8)?)?.chunks_exact(8).map(le_u64).collect();
        let n = r.len()?;
        let word_ends: Vec<u32> = r.take(n.checked_mul(4)?)?.chunks_exact(4).map(le_u32).collect();
        if word_ends.windows(2).any(|w| w[0] > w[1]) || word_ends.last().is_some_and(|&e| e as usize > words.len()) {
            return None;
        }
        Some(PreparedDoc {
            page: PageShape {
                kinds,
                names_the_page,
                sizes,
                bytes,
            },
            hashes,
            run_ends,
            tags,
            words,
            keep_words,
            word_ends,
        })
    }

    /// Block `i`'s word keys.
    fn block_words(&self, i: usize) -> &[u64] {
        let start = i
            .checked_sub(1)
            .and_then(|j| self.word_ends.get(j))
            .copied()
            .unwrap_or(0);
        let end = self.word_ends.get(i).copied().unwrap_or(start);
        self.words.get(start as usize..end as usize).unwrap_or_default()
    }

    /// The weighed features (ascending hashes) under `mult`, the
    /// multiplier of each tag (a block's unigrams, then its bigrams; 0 for
    /// a block left out): a hash's occurrences of positive multiplier
    /// count, and it weighs [`run_weight`] of their number and largest
    /// multiplier, as [`super::weigh::Accumulator`] weighs them.
    fn weighed(&self, mult: &[f32]) -> Vec<(u64, f32)> {
        let mut items = Vec::with_capacity(self.hashes.len());
        let mut start = 0;
        for (&h, &end) in self.hashes.iter().zip(&self.run_ends) {
            let (mut count, mut max) = (0u32, 0.0f32);
            for &t in self.tags.get(start..end as usize).unwrap_or_default() {
                let m = mult.get(t as usize).copied().unwrap_or(0.0);
                if m > 0.0 {
                    count += 1;
                    max = if m > max { m } else { max };
                }
            }
            start = end as usize;
            if count > 0 {
                let w = run_weight(count, max);
                if w > 0.0 {
                    items.push((h, w));
                }
            }
        }
        items
    }
}

fn le_u32(c: &[u8]) -> u32 {
    u32::from_le_bytes([c[0], c[1], c[2], c[3]])
}

fn le_u64(c: &[u8]) -> u64 {
    u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
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
            tagged: Vec::with_capacity(2 * words),
            tag: 0,
            words: Vec::with_capacity(if self.words { words } else { 0 }),
            keep_words: self.words,
        };
        let mut word_ends = Vec::with_capacity(doc.blocks.len());
        for (i, b) in doc.blocks.iter().enumerate() {
            occ.tag = u32::try_from(2 * i).unwrap_or(u32::MAX - 1);
            self.add_text(&mut occ, lang, &b.text, 1.0);
            word_ends.push(u32::try_from(occ.words.len()).unwrap_or(u32::MAX));
        }
        let mut sorted = Vec::new();
        crate::hashsort::sorted_by_key(&occ.tagged, &mut sorted, |e| e.0);
        let (mut hashes, mut run_ends) = (Vec::new(), Vec::new());
        let mut tags = Vec::with_capacity(sorted.len());
        for (i, &(h, tag)) in sorted.iter().enumerate() {
            if hashes.last() != Some(&h) {
                if i > 0 {
                    run_ends.push(u32::try_from(i).unwrap_or(u32::MAX));
                }
                hashes.push(h);
            }
            tags.push(tag);
        }
        if !sorted.is_empty() {
            run_ends.push(u32::try_from(sorted.len()).unwrap_or(u32::MAX));
        }
        occ.words.shrink_to_fit();
        PreparedDoc {
            page,
            hashes,
            run_ends,
            tags,
            words: occ.words,
            keep_words: self.words,
            word_ends,
        }
    }

    /// [`FeatureExtractor::features_hashed`] of a prepared document: the
    /// same features, weighed from the stored occurrences.
    pub fn features_prepared(&self, doc: &PreparedDoc, hashes: &[u64], template: Option<&HostTemplate>) -> Features {
        let s = &self.shared.settings;
        let (unigram_weight, bigram_weight) = (s.unigram_weight as f32, s.bigram_weight as f32);
        // Each tag's multiplier: the blocks `weigh` adds get theirs.
        let mut mult = vec![0.0f32; 2 * doc.page.kinds.len()];
        let mut features = self.weigh(&doc.page, hashes, template, |acc, i, m| {
            if let Some(t) = mult.get_mut(2 * i..2 * i + 2) {
                t.copy_from_slice(&[m * unigram_weight, m * bigram_weight]);
            }
            if let Some(words) = &mut acc.words {
                words.extend_from_slice(doc.block_words(i));
            }
        });
        features.items = doc.weighed(&mult);
        if let Some(labels) = &mut features.labels {
            *labels = vec![String::new(); features.items.len()];
        }
        features
    }
}
