//! Exact duplicates: BLAKE3 hashes of a page's body and of its normalized
//! text, the index of their first owners, and the cache of content already
//! decided.

use std::collections::HashMap;

use super::owners::{self, OwnerMap};
use super::{decide, Ruling};
use crate::model::{PageId, Verdict};
#[cfg(test)]
use crate::store::{Store, StoreError};

/// A map keyed by the first 128 bits of BLAKE3 hashes ([`owners::key`]).
type KeyMap<V> = HashMap<owners::Key, V, std::hash::BuildHasherDefault<crate::hash::PreHashed>>;

/// Exact-duplicate lookups: body hash → first page and text hash → first
/// page ([`OwnerMap`]: in memory, or the newest hashes in memory and the
/// others on disk), updated online as pages are decided and rebuilt at
/// start from the hashes in the store's page records
/// ([`Store::iter_hashes`]).
#[derive(Debug, Default)]
pub struct ExactIndex {
    body: OwnerMap,
    text: OwnerMap,
}

/// The simhash of each body and text hash the crawl has decided, readable
/// by the analysis threads while the decider adds to it.
///
/// A page whose body or text hash is already here is an exact duplicate
/// whatever its simhash (the decision checks exact hashes first), so its
/// analysis takes the simhash from here instead of computing features and
/// fingerprint (about a fifth of a page's CPU). The decider adds a page's
/// hashes when [`ExactIndex::check_and_insert`] makes the page their owner,
/// so every hash here is also in the decider's [`ExactIndex`]. A focused
/// crawl's copy also takes its original's topic relevance, when the
/// original had one. It is a bounded cache: past its capacity it starts
/// over, and a hash it does not hold only means the full analysis.
#[derive(Debug)]
pub struct KnownContent {
    map: parking_lot::RwLock<KeyMap<Known>>,
    cap: usize,
}

/// What [`KnownContent`] holds of the page that owns a hash.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Known {
    /// The page's simhash.
    pub simhash: u64,
    /// The page's topic relevance, in a focused crawl
    /// ([`crate::focus::Focus::page_relevance`]).
    pub relevance: Option<f32>,
}

impl KnownContent {
    /// An empty cache that holds up to `cap` hashes (two per page).
    pub fn new(cap: usize) -> Self {
        KnownContent {
            map: parking_lot::RwLock::new(KeyMap::default()),
            cap,
        }
    }

    /// What is recorded for the page's body, else for its text.
    pub fn get(&self, h: &ContentHashes) -> Option<Known> {
        let map = self.map.read();
        map.get(&owners::key(&h.body))
            .or_else(|| map.get(&owners::key(&h.text)))
            .copied()
    }

    /// The simhash recorded for the page's body, else for its text.
    #[cfg(test)]
    pub fn simhash_of(&self, h: &ContentHashes) -> Option<u64> {
        self.get(h).map(|k| k.simhash)
    }

    /// Record the page that now owns `h`, its simhash and, in a focused
    /// crawl, its relevance (the first page with a hash keeps it).
    pub fn insert(&self, h: &ContentHashes, simhash: u64, relevance: Option<f64>) {
        let known = Known {
            simhash,
            relevance: relevance.map(|r| r as f32),
        };
        let mut map = self.map.write();
        if map.len() + 2 > self.cap {
            map.clear();
        }
        map.entry(owners::key(&h.body)).or_insert(known);
        map.entry(owners::key(&h.text)).or_insert(known);
    }

    /// Hashes held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.read().len()
    }
}

impl ExactIndex {
    /// An empty index in memory.
    pub fn new() -> Self {
        ExactIndex::default()
    }

    /// An empty index in bounded memory, with its runs in `dir`
    /// ([`OwnerMap::spilling`]).
    pub fn spilling(dir: &std::path::Path) -> Self {
        ExactIndex {
            body: OwnerMap::spilling(dir),
            text: OwnerMap::spilling(dir),
        }
    }

    /// Rebuild from the hashes of a store's page records (in id order, so
    /// the first page with a hash owns it, as it did when it was crawled).
    /// The crawl reads it in the same scan as the index
    /// (`crawl::DedupState::load`); tests check that against this.
    #[cfg(test)]
    pub fn load(store: &dyn Store) -> Result<Self, StoreError> {
        let mut ix = ExactIndex::new();
        for r in store.iter_hashes() {
            let h = r?;
            ix.insert(h.body.as_ref(), h.text.as_ref(), h.id)
                .map_err(|e| StoreError::Backend(e.to_string()))?;
        }
        Ok(ix)
    }

    /// The first pages with this body hash and this text hash.
    #[cfg(test)]
    pub fn lookup(
        &self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
    ) -> std::io::Result<(Option<PageId>, Option<PageId>)> {
        let get = |map: &OwnerMap, h: Option<&[u8; 32]>| h.map_or(Ok(None), |h| map.get(owners::key(h)));
        Ok((get(&self.body, body)?, get(&self.text, text)?))
    }

    /// Remember `page` as the owner of its hashes (the first page keeps
    /// them), and return their owners before it.
    pub fn insert(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> std::io::Result<(Option<PageId>, Option<PageId>)> {
        let owner = |map: &mut OwnerMap, h: Option<&[u8; 32]>| match h {
            Some(h) => map.get_or_insert(owners::key(h), page),
            None => Ok(None),
        };
        Ok((owner(&mut self.body, body)?, owner(&mut self.text, text)?))
    }

    /// Forget `page` as the owner of these hashes (its content changed): a
    /// hash another page owns stays with it.
    pub fn remove_owned(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> std::io::Result<()> {
        for (map, h) in [(&mut self.body, body), (&mut self.text, text)] {
            if let Some(h) = h {
                map.remove_owned(owners::key(h), page)?;
            }
        }
        Ok(())
    }

    /// Look up, decide exactly, and insert in one step (online: the next page
    /// sees this one). Returns the exact verdict, or `None` when the page is
    /// not an exact duplicate and the near-duplicate index must be asked.
    pub fn check_and_insert(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> std::io::Result<Option<Ruling>> {
        let (b, t) = self.insert(body, text, page)?;
        let v = decide(b, t, &[], 0);
        Ok((v.verdict == Verdict::ExactDuplicate).then_some(v))
    }
}

/// Exact content hashes of one page (BLAKE3, 32 bytes each): `body` says
/// "same bytes", `text` says "same visible text in different markup".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHashes {
    /// BLAKE3 of the raw body bytes as fetched (after content decoding).
    pub body: [u8; 32],
    /// BLAKE3 of the normalized visible text: every block of the extracted
    /// document (title first, boilerplate included), case-folded
    /// (`str::to_lowercase`), whitespace collapsed, blocks joined by one space.
    pub text: [u8; 32],
}

impl ContentHashes {
    /// Both hashes of a page.
    pub fn compute(body: &[u8], doc: &crate::extract::Extracted) -> Self {
        // The normalized text (words case-folded, joined by one space), built
        // in one buffer and hashed at once.
        let mut text = Vec::with_capacity(doc.blocks.iter().map(|b| b.text.len() + 1).sum());
        for block in &doc.blocks {
            let bytes = block.text.as_bytes();
            if is_collapsed_ascii(bytes) {
                // Already words joined by single spaces (as extraction
                // writes every block): the loops below would copy it as it
                // is, lower-cased.
                if !text.is_empty() {
                    text.push(b' ');
                }
                let at = text.len();
                text.extend_from_slice(bytes);
                text[at..].make_ascii_lowercase();
                continue;
            }
            if block.text.is_ascii() {
                // The same as the general loop below: each run of non-space
                // bytes copied at once and lower-cased in place.
                let is_space = |b: u8| b.is_ascii_whitespace() || b == 0x0B;
                let bytes = block.text.as_bytes();
                let mut i = 0;
                while i < bytes.len() {
                    while i < bytes.len() && is_space(bytes[i]) {
                        i += 1;
                    }
                    let start = i;
                    while i < bytes.len() && !is_space(bytes[i]) {
                        i += 1;
                    }
                    if start < i {
                        if !text.is_empty() {
                            text.push(b' ');
                        }
                        let at = text.len();
                        text.extend_from_slice(&bytes[start..i]);
                        text[at..].make_ascii_lowercase();
                    }
                }
                continue;
            }
            for word in block.text.split_whitespace() {
                if !text.is_empty() {
                    text.push(b' ');
                }
                if word.is_ascii() {
                    text.extend(word.bytes().map(|b| b.to_ascii_lowercase()));
                } else {
                    text.extend_from_slice(word.to_lowercase().as_bytes());
                }
            }
        }
        ContentHashes {
            body: *blake3::hash(body).as_bytes(),
            text: *blake3::hash(&text).as_bytes(),
        }
    }

    /// `body` as 64 lowercase hex digits (the `content_hash` of `pages.jsonl`).
    pub fn body_hex(&self) -> String {
        hex(&self.body)
    }

    /// `text` as 64 lowercase hex digits.
    pub fn text_hex(&self) -> String {
        hex(&self.text)
    }
}

/// Whether `b` is ASCII words joined by single spaces: not empty, no
/// leading or trailing space, and [`crate::extract::single_spaced_ascii`].
fn is_collapsed_ascii(b: &[u8]) -> bool {
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => first != b' ' && last != b' ' && crate::extract::single_spaced_ascii(b),
        _ => false,
    }
}

/// A 32-byte hash as 64 lowercase hex digits.
pub(crate) fn hex(bytes: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::extract_html;

    fn hashes(body: u8, text: u8) -> ContentHashes {
        ContentHashes {
            body: [body; 32],
            text: [text; 32],
        }
    }

    #[test]
    fn known_content_gives_the_first_owners_simhash_by_body_or_text() {
        let k = KnownContent::new(100);
        assert_eq!(k.simhash_of(&hashes(1, 2)), None);
        k.insert(&hashes(1, 2), 0xA, None);
        // A later owner of other hashes does not take these over.
        k.insert(&hashes(1, 3), 0xB, None);
        assert_eq!(k.simhash_of(&hashes(1, 9)), Some(0xA), "same body");
        assert_eq!(k.simhash_of(&hashes(9, 2)), Some(0xA), "same text");
        assert_eq!(k.simhash_of(&hashes(9, 3)), Some(0xB));
        assert_eq!(k.simhash_of(&hashes(9, 9)), None);
        assert_eq!(k.len(), 3);
        k.insert(&hashes(7, 8), 0xC, Some(0.25));
        assert_eq!(
            k.get(&hashes(0, 8)),
            Some(Known {
                simhash: 0xC,
                relevance: Some(0.25)
            }),
            "a focused crawl's relevance with it"
        );
    }

    #[test]
    fn known_content_starts_over_when_full() {
        let k = KnownContent::new(4);
        k.insert(&hashes(1, 2), 1, None);
        k.insert(&hashes(3, 4), 2, None);
        assert_eq!(k.len(), 4);
        k.insert(&hashes(5, 6), 3, None);
        assert_eq!(k.len(), 2, "cleared, then the new page's two hashes");
        assert_eq!(k.simhash_of(&hashes(1, 2)), None);
        assert_eq!(k.simhash_of(&hashes(5, 0)), Some(3));
    }

    #[test]
    fn hashes_that_differ_in_their_first_16_bytes_are_told_apart() {
        let mut ix = ExactIndex::new();
        let mut a = [7u8; 32];
        let mut b = [7u8; 32];
        a[15] = 1;
        b[15] = 2;
        ix.insert(Some(&a), None, 10).unwrap();
        ix.insert(Some(&b), None, 20).unwrap();
        assert_eq!(ix.lookup(Some(&a), None).unwrap(), (Some(10), None));
        assert_eq!(ix.lookup(Some(&b), None).unwrap(), (Some(20), None));
        assert_eq!(ix.lookup(None, Some(&a)).unwrap(), (None, None), "body and text apart");
    }

    /// The text hash of a page of these body blocks is the definition's:
    /// BLAKE3 of the words, case-folded, joined by one space.
    fn text_hash_is_the_definition(blocks: &[String]) -> Result<(), proptest::test_runner::TestCaseError> {
        let doc = crate::extract::Extracted {
            blocks: blocks
                .iter()
                .map(|t| crate::extract::TextBlock {
                    text: t.clone(),
                    kind: crate::extract::BlockKind::Body,
                })
                .collect(),
            ..Default::default()
        };
        let words: Vec<String> = blocks
            .iter()
            .flat_map(|b| b.split_whitespace().map(str::to_lowercase))
            .collect();
        let expect = *blake3::hash(words.join(" ").as_bytes()).as_bytes();
        proptest::prop_assert_eq!(ContentHashes::compute(b"", &doc).text, expect);
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn ascii_text_path_matches_the_word_loop(blocks in proptest::collection::vec("[a-cA-CÄ \t\n\x0B\x0C]{0,8}", 0..5)) {
            text_hash_is_the_definition(&blocks)?;
        }
    }

    proptest::proptest! {
        /// Blocks written as extraction writes them (single spaces), with
        /// now and then a stray space, tab, U+000B or non-ASCII letter: the
        /// shortcut for collapsed blocks agrees with the definition.
        #[test]
        fn collapsed_block_shortcut_matches_the_definition(
            blocks in proptest::collection::vec("[a-zA-Z0-9.,]{1,6}(?:(?: | | |  |\t|\x0B)[a-zA-Z0-9.,Äé]{1,6}){0,6}", 0..5),
            edges in proptest::collection::vec(0u8..8, 5),
        ) {
            // Now and then a leading or a trailing space.
            let blocks: Vec<String> = blocks
                .into_iter()
                .zip(edges)
                .map(|(b, e)| match e {
                    0 => format!(" {b}"),
                    1 => format!("{b} "),
                    _ => b,
                })
                .collect();
            text_hash_is_the_definition(&blocks)?;
        }
    }

    #[test]
    fn collapsed_ascii_examples() {
        assert!(is_collapsed_ascii(b"Hello World"));
        assert!(is_collapsed_ascii(b"a"));
        for b in [
            &b""[..],
            b" a",
            b"a ",
            b"a  b",
            b"a\tb",
            b"a\x0Bb",
            b"a\nb",
            "é".as_bytes(),
        ] {
            assert!(!is_collapsed_ascii(b), "{b:?}");
        }
    }

    #[test]
    fn text_hash_ignores_markup_body_hash_does_not() {
        let a = "<html><body><p>Hello   World</p><p>Second</p></body></html>";
        let b = "<div><b>hello</b> world</div>\n<div>SECOND</div>";
        let c = "<p>Hello World Second!</p>";
        let h = |s: &str| ContentHashes::compute(s.as_bytes(), &extract_html(s, 1 << 20));
        assert_eq!(h(a).text, h(b).text);
        assert_ne!(h(a).body, h(b).body);
        assert_ne!(h(a).text, h(c).text);
        assert_eq!(h(a).body_hex().len(), 64);
        assert_eq!(h(a).body_hex(), blake3::hash(a.as_bytes()).to_hex().to_string());
        assert_eq!(
            h(a).text_hex(),
            blake3::hash(b"hello world second").to_hex().to_string()
        );
    }
}
