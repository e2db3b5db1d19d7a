//! The crawl log reduced to what mirror detection and the cluster report
//! read, so that neither holds the log's records: one [`PageDigest`] per
//! record (about 80 bytes: ids, flags, the parsed simhash and 128-bit keys of
//! the two content hashes), the URLs once each in one string arena
//! ([`Strings`]), fetch times as order-preserving numbers ([`Times`]) and
//! per host the facts mirror sets need (first fetch, in-links from other
//! hosts). It is built one record at a time ([`LogDigest::add`]), so a
//! report reads `pages.jsonl` as a stream; what it keeps grows with the
//! pages (a few hundred bytes each, mostly the URL text), never with the
//! records' other strings.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use crate::crawllog::PageRecord;
use crate::host::split_url;
use crate::model::Decision;

use super::has_content;

/// Strings stored once each in one arena, named by a dense `u32` id.
pub struct Strings {
    text: String,
    /// End of each string in `text` (its start is the previous end).
    ends: Vec<usize>,
    table: hashbrown::HashTable<u32>,
    state: hashbrown::DefaultHashBuilder,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            text: String::new(),
            ends: Vec::new(),
            table: hashbrown::HashTable::new(),
            state: hashbrown::DefaultHashBuilder::default(),
        }
    }
}

impl Strings {
    /// The id of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        let hash = self.state.hash_one(s);
        let (text, ends) = (&self.text, &self.ends);
        let get = |id: u32| slice(text, ends, id);
        if let Some(&id) = self.table.find(hash, |&id| get(id) == s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        let (text, ends, state) = (&self.text, &self.ends, &self.state);
        self.table
            .insert_unique(hash, id, |&id| state.hash_one(slice(text, ends, id)));
        id
    }

    /// The id of `s`, if it was interned.
    pub fn find(&self, s: &str) -> Option<u32> {
        let hash = self.state.hash_one(s);
        self.table.find(hash, |&id| self.get(id) == s).copied()
    }

    /// The string of an id.
    pub fn get(&self, id: u32) -> &str {
        slice(&self.text, &self.ends, id)
    }

    /// How many strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

fn slice<'a>(text: &'a str, ends: &[usize], id: u32) -> &'a str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

/// A fetch time as a number whose order is the order of the RFC 3339 text
/// (how the reports compare times): the crawl's own form
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` packs its 17 digits into the number itself;
/// any other text is interned and compared as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeKey(u64);

/// Digits of the crawl's time form, and the first key of interned text.
const PACKED_LIMIT: u64 = 100_000_000_000_000_000;

/// The fetch times of a log (see [`TimeKey`]).
#[derive(Default)]
pub struct Times {
    other: Strings,
}

impl Times {
    /// The key of a time's text.
    pub fn key(&mut self, s: &str) -> TimeKey {
        match pack_time(s) {
            Some(n) => TimeKey(n),
            None => TimeKey(PACKED_LIMIT + u64::from(self.other.intern(s))),
        }
    }

    /// The key of a time's text, if some record has it.
    pub fn find(&self, s: &str) -> Option<TimeKey> {
        match pack_time(s) {
            Some(n) => Some(TimeKey(n)),
            None => self.other.find(s).map(|id| TimeKey(PACKED_LIMIT + u64::from(id))),
        }
    }

    /// The text of a key.
    pub fn text(&self, k: TimeKey) -> std::borrow::Cow<'_, str> {
        if k.0 < PACKED_LIMIT {
            std::borrow::Cow::Owned(unpack_time(k.0))
        } else {
            std::borrow::Cow::Borrowed(self.other.get((k.0 - PACKED_LIMIT) as u32))
        }
    }

    /// Compare two times as their texts compare.
    pub fn cmp(&self, a: TimeKey, b: TimeKey) -> Ordering {
        if a.0 < PACKED_LIMIT && b.0 < PACKED_LIMIT {
            a.0.cmp(&b.0)
        } else {
            self.text(a).cmp(&self.text(b))
        }
    }
}

/// Positions of the non-digit bytes of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
const TIME_FORM: &[u8; 24] = b"0000-00-00T00:00:00.000Z";

fn pack_time(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != TIME_FORM.len() {
        return None;
    }
    let mut n = 0u64;
    for (&c, &f) in b.iter().zip(TIME_FORM) {
        if f == b'0' {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + u64::from(c - b'0');
        } else if c != f {
            return None;
        }
    }
    Some(n)
}

fn unpack_time(mut n: u64) -> String {
    let mut out = *TIME_FORM;
    for i in (0..out.len()).rev() {
        if out[i] == b'0' {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// 128 bits of BLAKE3 of a content hash's text: equal texts, equal keys
/// (and different texts, different keys but with negligible chance).
pub type HashKey = [u8; 16];

fn hash_key(text: &str) -> HashKey {
    let mut k = [0u8; 16];
    k.copy_from_slice(&blake3::hash(text.as_bytes()).as_bytes()[..16]);
    k
}

/// One record of the crawl log, as mirror detection and clusters read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDigest {
    /// The canonical URL (an id in [`LogDigest::urls`]).
    pub canonical: u32,
    /// The page it duplicates (an id in [`LogDigest::urls`]).
    pub dup_of: Option<u32>,
    /// The recorded Hamming distance to `dup_of`.
    pub distance: Option<u32>,
    /// The simhash, when recorded and valid hex.
    pub simhash: Option<u64>,
    /// Key of the body hash.
    pub content_hash: Option<HashKey>,
    /// Key of the visible-text hash.
    pub text_hash: Option<HashKey>,
    /// When it was fetched.
    pub fetched_at: TimeKey,
    /// The decision.
    pub decision: Decision,
    /// [`has_content`] of the record.
    pub has_content: bool,
}

/// Per host (of any record's canonical URL): what mirror sets pick their
/// canonical host by.
#[derive(Debug, Clone, Copy)]
pub struct HostFacts {
    /// The earliest fetch time of its records.
    pub first_fetched: TimeKey,
    /// Records whose parent is on another host.
    pub inlinks: u64,
}

/// The crawl log reduced for mirror detection and clusters; see the module
/// docs.
#[derive(Default)]
pub struct LogDigest {
    /// Every record, in log order.
    pub pages: Vec<PageDigest>,
    /// Canonical URLs and `dup_of` targets.
    pub urls: Strings,
    /// Fetch times.
    pub times: Times,
    /// Host keys of the records' canonical URLs.
    pub hosts: Strings,
    /// Facts per host, indexed by host id.
    pub host_facts: Vec<HostFacts>,
}

impl LogDigest {
    /// The digest of records held in memory.
    pub fn from_records(records: &[PageRecord]) -> LogDigest {
        let mut d = LogDigest::default();
        for r in records {
            d.add(r);
        }
        d
    }

    /// Add the next record of the log.
    pub fn add(&mut self, r: &PageRecord) {
        let fetched_at = self.times.key(&r.fetched_at);
        if let Some((host, _)) = split_url(&r.canonical) {
            let id = self.hosts.intern(host) as usize;
            if id == self.host_facts.len() {
                self.host_facts.push(HostFacts {
                    first_fetched: fetched_at,
                    inlinks: 0,
                });
            }
            let facts = &mut self.host_facts[id];
            if self.times.cmp(fetched_at, facts.first_fetched) == Ordering::Less {
                facts.first_fetched = fetched_at;
            }
            if let Some((parent_host, _)) = r.parent.as_deref().and_then(split_url) {
                if parent_host != host {
                    facts.inlinks += 1;
                }
            }
        }
        self.pages.push(PageDigest {
            canonical: self.urls.intern(&r.canonical),
            dup_of: r.dup_of.as_deref().map(|d| self.urls.intern(d)),
            distance: r.distance,
            simhash: r.simhash.as_deref().and_then(|h| u64::from_str_radix(h, 16).ok()),
            content_hash: r.content_hash.as_deref().map(hash_key),
            text_hash: r.text_hash.as_deref().map(hash_key),
            fetched_at,
            decision: r.decision,
            has_content: has_content(r),
        });
    }

    /// A URL's text.
    pub fn url(&self, id: u32) -> &str {
        self.urls.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_intern_once() {
        let mut s = Strings::default();
        let a = s.intern("http://a.test/");
        let b = s.intern("http://b.test/");
        assert_eq!(s.intern("http://a.test/"), a);
        assert_ne!(a, b);
        assert_eq!((s.get(a), s.get(b)), ("http://a.test/", "http://b.test/"));
        assert_eq!(s.find("http://b.test/"), Some(b));
        assert_eq!(s.find("http://c.test/"), None);
        assert_eq!(s.intern(""), 2);
        assert_eq!(s.get(2), "");
        for i in 0..10_000 {
            s.intern(&format!("u{i}"));
        }
        assert_eq!(s.find("u777").map(|id| s.get(id)), Some("u777"));
        assert_eq!(s.len(), 10_003);
    }

    #[test]
    fn times_order_like_their_text() {
        let texts = [
            "2025-01-01T00:00:00.000Z",
            "2025-01-01T00:00:00.001Z",
            "2025-01-01T00:00:05Z",
            "2025-01-01T00:00:05.5Z",
            "2024-12-31T23:59:59.999Z",
            "",
            "9999-12-31T23:59:59.999Z",
            "0000-01-01T00:00:00.000Z",
            "not a time",
        ];
        let mut t = Times::default();
        let keys: Vec<TimeKey> = texts.iter().map(|s| t.key(s)).collect();
        for (i, a) in texts.iter().enumerate() {
            assert_eq!(t.text(keys[i]), *a);
            for (j, b) in texts.iter().enumerate() {
                assert_eq!(t.cmp(keys[i], keys[j]), a.cmp(b), "{a} {b}");
            }
        }
        assert!(keys[0].0 < PACKED_LIMIT && keys[2].0 >= PACKED_LIMIT);
    }

    #[test]
    fn page_digest_stays_small() {
        assert!(
            std::mem::size_of::<PageDigest>() <= 88,
            "{}",
            std::mem::size_of::<PageDigest>()
        );
    }
}
