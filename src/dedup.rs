//! Dedup decisions (pipeline: after the index, before the frontier update):
//! new / exact duplicate / near duplicate, exact content hashes, and the policy
//! that turns a decision into out-link treatment.

// ---------------------------------------------------------------------------
// Dedup policy: the ordered decision procedure over exact and near lookups,
// the in-memory exact-hash index, and what a decision means for the page's
// out-links (`[dedup] policy` and penalties).

use std::collections::HashMap;

use crate::config::{DedupPolicy, DedupSettings, Settings};
use crate::model::{Decision, NearMatch, PageId, ParentDup, Verdict};
use crate::store::{Store, StoreError};

/// A content verdict with what it points at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ruling {
    /// New, exact duplicate or near duplicate.
    pub verdict: Verdict,
    /// The original page for a duplicate.
    pub dup_of: Option<PageId>,
    /// Hamming distance to `dup_of` (0 for exact duplicates).
    pub distance: Option<u32>,
    /// The confirmed shingle resemblance to `dup_of` (near duplicates
    /// decided with `[dedup] verify`).
    pub resemblance: Option<f64>,
}

impl Ruling {
    /// New content: no original.
    pub fn new_content() -> Self {
        Ruling {
            verdict: Verdict::New,
            dup_of: None,
            distance: None,
            resemblance: None,
        }
    }

    /// The duplicate status this page passes to its out-links (a confirmed
    /// near duplicate whose fingerprint lies beyond k counts as at k in
    /// [`parent_dup_penalty`]).
    pub fn parent_dup(&self) -> ParentDup {
        match (self.verdict, self.distance) {
            (Verdict::ExactDuplicate, _) => ParentDup::Exact,
            (Verdict::NearDuplicate, Some(d)) => ParentDup::Near(d),
            _ => ParentDup::None,
        }
    }

    /// The record's decision.
    pub fn decision(&self) -> Decision {
        self.verdict.into()
    }
}

/// The ordered decision procedure for one fetched page, as a pure function
/// over lookups already made: exact body hash match, then exact text hash
/// match, then the near-duplicate index's matches within `k` (the nearest
/// wins; among equally near ones the earliest-crawled, i.e. smallest page id,
/// is the original). The exact URL check happens before the fetch (seen-set).
pub fn decide(body_match: Option<PageId>, text_match: Option<PageId>, near: &[NearMatch], k: u32) -> Ruling {
    if let Some(of) = body_match.or(text_match) {
        return Ruling {
            verdict: Verdict::ExactDuplicate,
            dup_of: Some(of),
            distance: Some(0),
            resemblance: None,
        };
    }
    match near
        .iter()
        .filter(|m| m.distance <= k)
        .min_by_key(|m| (m.distance, m.page))
    {
        Some(m) => Ruling {
            verdict: Verdict::NearDuplicate,
            dup_of: Some(m.page),
            distance: Some(m.distance),
            resemblance: None,
        },
        None => Ruling::new_content(),
    }
}

/// Priority penalty (≥ 0) passed to the out-links of a page with this status
/// (a distance above k counts as k: the page was confirmed a near duplicate):
/// `exact_penalty` for an exact duplicate, `near_penalty × (k + 1 − d) / (k + 1)`
/// for a near duplicate at distance d ≤ k (the closer the copy, the larger).
pub fn parent_dup_penalty(dup: ParentDup, k: u32, s: &DedupSettings) -> f64 {
    match dup {
        ParentDup::None => 0.0,
        ParentDup::Exact => s.exact_penalty,
        ParentDup::Near(d) => {
            let d = d.min(k);
            s.near_penalty * f64::from(k + 1 - d) / f64::from(k + 1)
        }
    }
}

/// Whether a page's out-links are followed under `policy`: all but the
/// duplicates under `drop`.
pub fn follow_links(decision: Decision, policy: DedupPolicy) -> bool {
    !(policy == DedupPolicy::Drop && decision.is_duplicate())
}

/// `[dedup]` applied to verdicts: which out-links are followed and with what
/// parent status (under `keep` duplicates pass on no penalty).
#[derive(Debug, Clone)]
pub struct DedupPolicyEngine {
    settings: DedupSettings,
    k: u32,
}

impl DedupPolicyEngine {
    /// From the `[dedup]` and `[simhash]` settings.
    pub fn new(settings: &Settings) -> Self {
        DedupPolicyEngine {
            settings: settings.dedup.clone(),
            k: settings.simhash.k,
        }
    }

    /// `None` when the page's out-links are not followed; otherwise the
    /// parent status to give them (see [`crate::frontier::Candidate`]).
    pub fn out_links(&self, ruling: &Ruling) -> Option<ParentDup> {
        match self.settings.policy {
            _ if !follow_links(ruling.decision(), self.settings.policy) => None,
            DedupPolicy::Keep => Some(ParentDup::None),
            _ => Some(ruling.parent_dup()),
        }
    }

    /// The penalty for a parent status (0 under `keep`).
    pub fn penalty(&self, dup: ParentDup) -> f64 {
        match self.settings.policy {
            DedupPolicy::Keep => 0.0,
            _ => parent_dup_penalty(dup, self.k, &self.settings),
        }
    }
}

/// The hasher of maps keyed by a BLAKE3 output: its first 8 bytes, which
/// are already uniform (and cannot be steered by a page's author without a
/// preimage attack), instead of SipHash over all 32.
#[derive(Debug, Default, Clone, Copy)]
pub struct Blake3KeyHasher(u64);

impl std::hash::Hasher for Blake3KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // `[u8; 32]` hashes as one `write` of its bytes: keep the first 8.
        // Any other input (only lengths, in practice) is mixed in.
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        self.0 = (self.0 ^ u64::from_le_bytes(head)).rotate_left(29);
    }
    fn write_usize(&mut self, n: usize) {
        // The length prefix of a slice key: the same for every key here.
        self.0 ^= n as u64;
    }
}

/// A map keyed by BLAKE3 hashes.
type Blake3Map<V> = HashMap<[u8; 32], V, std::hash::BuildHasherDefault<Blake3KeyHasher>>;

/// Exact-duplicate lookups: body hash → first page and text hash → first
/// page, in memory, updated online as pages are decided and rebuilt at
/// start from the hashes in the store's page records ([`Store::iter_hashes`]).
#[derive(Debug, Default)]
pub struct ExactIndex {
    body: Blake3Map<PageId>,
    text: Blake3Map<PageId>,
}

/// The simhash of each body and text hash the crawl has decided, readable
/// by the analysis threads while the decider adds to it.
///
/// A page whose body or text hash is already here is an exact duplicate
/// whatever its simhash (the decision checks exact hashes first), so its
/// analysis takes the simhash from here instead of computing features and
/// fingerprint (about a fifth of a page's CPU). The decider adds a page's
/// hashes when [`ExactIndex::check_and_insert`] makes the page their owner,
/// so every hash here is also in the decider's [`ExactIndex`]. It is a
/// bounded cache: past its capacity it starts over, and a hash it does not
/// hold only means the full analysis.
#[derive(Debug)]
pub struct KnownContent {
    map: parking_lot::RwLock<Blake3Map<u64>>,
    cap: usize,
}

impl KnownContent {
    /// An empty cache that holds up to `cap` hashes (two per page).
    pub fn new(cap: usize) -> Self {
        KnownContent {
            map: parking_lot::RwLock::new(Blake3Map::default()),
            cap,
        }
    }

    /// The simhash recorded for the page's body, else for its text.
    pub fn simhash_of(&self, h: &ContentHashes) -> Option<u64> {
        let map = self.map.read();
        map.get(&h.body).or_else(|| map.get(&h.text)).copied()
    }

    /// Record the page that now owns `h` and its simhash (the first page
    /// with a hash keeps it).
    pub fn insert(&self, h: &ContentHashes, simhash: u64) {
        let mut map = self.map.write();
        if map.len() + 2 > self.cap {
            map.clear();
        }
        map.entry(h.body).or_insert(simhash);
        map.entry(h.text).or_insert(simhash);
    }

    /// Hashes held.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }

    /// Whether no hash is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ExactIndex {
    /// An empty index.
    pub fn new() -> Self {
        ExactIndex::default()
    }

    /// Rebuild from the hashes of a store's page records (in id order, so
    /// the first page with a hash owns it, as it did when it was crawled).
    pub fn load(store: &dyn Store) -> Result<Self, StoreError> {
        let mut ix = ExactIndex::new();
        for r in store.iter_hashes() {
            let h = r?;
            ix.insert(h.body.as_ref(), h.text.as_ref(), h.id);
        }
        Ok(ix)
    }

    /// The first pages with this body hash and this text hash.
    pub fn lookup(&self, body: Option<&[u8; 32]>, text: Option<&[u8; 32]>) -> (Option<PageId>, Option<PageId>) {
        (
            body.and_then(|h| self.body.get(h).copied()),
            text.and_then(|h| self.text.get(h).copied()),
        )
    }

    /// Remember `page` as the owner of its hashes (the first page keeps them).
    pub fn insert(&mut self, body: Option<&[u8; 32]>, text: Option<&[u8; 32]>, page: PageId) {
        if let Some(h) = body {
            self.body.entry(*h).or_insert(page);
        }
        if let Some(h) = text {
            self.text.entry(*h).or_insert(page);
        }
    }

    /// Look up, decide exactly, and insert in one step (online: the next page
    /// sees this one). Returns the exact verdict, or `None` when the page is
    /// not an exact duplicate and the near-duplicate index must be asked.
    pub fn check_and_insert(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> Option<Ruling> {
        let (b, t) = self.lookup(body, text);
        self.insert(body, text, page);
        let v = decide(b, t, &[], 0);
        (v.verdict == Verdict::ExactDuplicate).then_some(v)
    }
}

#[cfg(test)]
mod policy_tests {
    use super::*;

    #[test]
    fn decision_order_body_text_near() {
        let near = [
            NearMatch { page: 9, distance: 2 },
            NearMatch { page: 4, distance: 1 },
            NearMatch { page: 3, distance: 1 },
            NearMatch { page: 1, distance: 5 },
        ];
        assert_eq!(decide(Some(5), Some(6), &near, 3).dup_of, Some(5));
        let v = decide(None, Some(6), &near, 3);
        assert_eq!(
            (v.verdict, v.dup_of, v.distance),
            (Verdict::ExactDuplicate, Some(6), Some(0))
        );
        let v = decide(None, None, &near, 3);
        assert_eq!(
            (v.verdict, v.dup_of, v.distance),
            (Verdict::NearDuplicate, Some(3), Some(1))
        );
        // Matches beyond k are ignored.
        assert_eq!(decide(None, None, &near[3..], 3), Ruling::new_content());
        assert_eq!(decide(None, None, &[], 3).parent_dup(), ParentDup::None);
        assert_eq!(v.parent_dup(), ParentDup::Near(1));
    }

    #[test]
    fn near_penalty_grows_as_distance_shrinks() {
        let s = Settings::default();
        let k = s.simhash.k;
        let p: Vec<f64> = (0..=k)
            .map(|d| parent_dup_penalty(ParentDup::Near(d), k, &s.dedup))
            .collect();
        assert_eq!(p[0], s.dedup.near_penalty);
        assert!(p.windows(2).all(|w| w[0] > w[1]), "{p:?}");
        // A confirmed near duplicate beyond k (found through its shingles)
        // still passes on the smallest near penalty.
        let beyond = parent_dup_penalty(ParentDup::Near(k + 5), k, &s.dedup);
        assert_eq!(beyond, p[k as usize]);
        assert!(beyond > 0.0);
        assert_eq!(parent_dup_penalty(ParentDup::Exact, k, &s.dedup), s.dedup.exact_penalty);
        assert_eq!(parent_dup_penalty(ParentDup::None, k, &s.dedup), 0.0);
    }

    #[test]
    fn policy_controls_out_links() {
        let dup = Ruling {
            verdict: Verdict::NearDuplicate,
            dup_of: Some(1),
            distance: Some(2),
            resemblance: None,
        };
        let new = Ruling::new_content();
        let engine =
            |p: &str| DedupPolicyEngine::new(&Settings::from_layers(&[], &[format!("dedup.policy={p}")]).unwrap());
        assert_eq!(engine("drop").out_links(&dup), None);
        assert_eq!(engine("drop").out_links(&new), Some(ParentDup::None));
        assert_eq!(engine("deprioritize").out_links(&dup), Some(ParentDup::Near(2)));
        assert!(engine("deprioritize").penalty(ParentDup::Near(2)) > 0.0);
        assert_eq!(engine("keep").out_links(&dup), Some(ParentDup::None));
        assert_eq!(engine("keep").penalty(ParentDup::Exact), 0.0);
        assert!(follow_links(Decision::Noindex, DedupPolicy::Drop));
    }

    #[test]
    fn exact_index_is_online_and_first_wins() {
        let mut ix = ExactIndex::new();
        assert_eq!(ix.check_and_insert(Some(&[1; 32]), Some(&[2; 32]), 1), None);
        let v = ix.check_and_insert(Some(&[9; 32]), Some(&[2; 32]), 2).unwrap();
        assert_eq!((v.verdict, v.dup_of), (Verdict::ExactDuplicate, Some(1)));
        assert_eq!(ix.lookup(Some(&[9; 32]), None), (Some(2), None));
        assert_eq!(ix.check_and_insert(Some(&[1; 32]), None, 3).unwrap().dup_of, Some(1));
    }

    #[test]
    fn exact_index_loads_from_store() {
        use crate::model::HostStats;
        use crate::store::MemStore;
        let s = MemStore::new();
        let u = crate::store::suite::qurl("a.test", "x", 1.0, 1);
        s.enqueue(std::slice::from_ref(&u)).unwrap();
        let p = crate::store::suite::page(&s, &u, Decision::New);
        s.complete(&u, &p, None, &HostStats::default()).unwrap();
        let ix = ExactIndex::load(&s).unwrap();
        assert_eq!(ix.lookup(Some(&[1; 32]), Some(&[7; 32])), (Some(p.id), Some(p.id)));
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
        k.insert(&hashes(1, 2), 0xA);
        // A later owner of other hashes does not take these over.
        k.insert(&hashes(1, 3), 0xB);
        assert_eq!(k.simhash_of(&hashes(1, 9)), Some(0xA), "same body");
        assert_eq!(k.simhash_of(&hashes(9, 2)), Some(0xA), "same text");
        assert_eq!(k.simhash_of(&hashes(9, 3)), Some(0xB));
        assert_eq!(k.simhash_of(&hashes(9, 9)), None);
        assert_eq!(k.len(), 3);
    }

    #[test]
    fn known_content_starts_over_when_full() {
        let k = KnownContent::new(4);
        k.insert(&hashes(1, 2), 1);
        k.insert(&hashes(3, 4), 2);
        assert_eq!(k.len(), 4);
        k.insert(&hashes(5, 6), 3);
        assert_eq!(k.len(), 2, "cleared, then the new page's two hashes");
        assert_eq!(k.simhash_of(&hashes(1, 2)), None);
        assert_eq!(k.simhash_of(&hashes(5, 0)), Some(3));
    }

    #[test]
    fn blake3_maps_tell_apart_keys_with_the_same_first_bytes() {
        // The hasher reads 8 bytes; the map still compares whole keys.
        let mut ix = ExactIndex::new();
        let mut a = [7u8; 32];
        let mut b = [7u8; 32];
        a[31] = 1;
        b[31] = 2;
        ix.insert(Some(&a), None, 10);
        ix.insert(Some(&b), None, 20);
        assert_eq!(ix.lookup(Some(&a), None), (Some(10), None));
        assert_eq!(ix.lookup(Some(&b), None), (Some(20), None));
        let hash = |k: &[u8; 32]| {
            use std::hash::BuildHasher;
            std::hash::BuildHasherDefault::<Blake3KeyHasher>::default().hash_one(k)
        };
        assert_eq!(hash(&a), hash(&b), "same first 8 bytes, same hash");
        let mut c = a;
        c[0] = 8;
        assert_ne!(hash(&a), hash(&c));
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
