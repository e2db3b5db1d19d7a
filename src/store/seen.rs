//! The seen-set cache (inside [`KvStore`](super::KvStore), in front of its `s`
//! keys): canonical URL → [`UrlState`] in memory, so that the frontier's
//! check of every offered out-link (most are already seen) costs a hash
//! lookup instead of a backend read, a key allocation and a value copy.
//!
//! URLs are keyed by a 128-bit fingerprint (BLAKE3 of the canonical URL, cut
//! to 128 bits), as Mercator and Heritrix key their seen-sets by 64-bit
//! fingerprints: equal fingerprints are taken as the same URL (the chance of
//! any collision among n URLs is about n² / 2¹²⁹, below 10⁻²⁰ for 10⁹ URLs).
//! A state is packed into 16 bytes, so one entry is 32 bytes in a hash table
//! kept at most 7/8 full: 38 to 76 bytes per URL (more while it grows).
//!
//! The cache is written through: the store updates it after every batch that
//! changes `s` keys, under the same lock, so a cached state is always the
//! stored one. It holds at most `max` URLs, in two generations of `max / 2`
//! (a cheap approximation of least-recently-used): written URLs go into the
//! young one, and when it is full the old one is dropped and the young one
//! takes its place. A URL read from the backend is admitted again, so the
//! links every page repeats (navigation, footers) stay cached.
//!
//! While no generation has been dropped the cache is *complete*: it holds
//! every stored URL, and a miss means "not seen" at no read. From the first
//! drop on, a Bloom filter of every stored URL ([`UrlFilter`], about 1.3
//! bytes per URL) answers for the URLs the cache lacks: a URL it has never
//! seen (most new out-links) costs no read either; the others, and its
//! about 1% of false positives, are read from the backend.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::{PageId, QueueKey, UrlState};
use crate::blocked_bloom::BlockedBloom;

/// A URL's 128-bit fingerprint.
pub(super) type Fp = (u64, u64);

/// The fingerprint of a canonical URL.
pub(super) fn fingerprint(canonical: &str) -> Fp {
    let h = blake3::hash(canonical.as_bytes());
    let b = h.as_bytes();
    let mut lo = [0u8; 8];
    let mut hi = [0u8; 8];
    lo.copy_from_slice(&b[0..8]);
    hi.copy_from_slice(&b[8..16]);
    (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
}

/// Tags in the top two bits of the packed second word.
const TAG_SHIFT: u32 = 62;
const QUEUED: u64 = 0;
const IN_FLIGHT: u64 = 1;
const DONE: u64 = 2;
const ALIAS: u64 = 3;
const LOW: u64 = (1 << TAG_SHIFT) - 1;

/// What the cache knows about a URL.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// Its state (an alias's target is not cached: see [`Lookup::Alias`]).
    Known(UrlState),
    /// An alias of another URL (read the target from the store).
    Alias,
    /// Not seen (the cache is complete).
    Absent,
    /// Not cached: ask the store.
    Unknown,
}

type Map = HashMap<Fp, (u64, u64), BuildHasherDefault<crate::hash::PreHashed>>;

/// The cache (see the module docs).
pub(super) struct SeenCache {
    /// The generation written to.
    young: Map,
    /// The generation before; dropped when `young` is full again.
    old: Map,
    /// URLs a generation holds before it is turned over: half the cap
    /// (and 1 for a cap of 1, whose one generation is dropped whole).
    half: usize,
    /// The cap.
    max: usize,
    /// Every stored URL is in `young` or `old`.
    complete: bool,
    /// Every stored URL, from the first turnover on.
    filter: Option<UrlFilter>,
    /// Generations turned over so far (see [`SeenCache::admit`]).
    turnovers: u64,
}

fn pack(s: &UrlState) -> Option<(u64, u64)> {
    let key = |k: &QueueKey, tag: u64| (k.seq <= LOW).then_some((k.rank, k.seq | tag << TAG_SHIFT));
    match s {
        UrlState::Queued(k) => key(k, QUEUED),
        UrlState::InFlight(k) => key(k, IN_FLIGHT),
        UrlState::Done(id) => Some((*id, DONE << TAG_SHIFT)),
        UrlState::AliasOf(_) => Some((0, ALIAS << TAG_SHIFT)),
    }
}

fn unpack((a, b): (u64, u64)) -> Lookup {
    let key = QueueKey { rank: a, seq: b & LOW };
    match b >> TAG_SHIFT {
        QUEUED => Lookup::Known(UrlState::Queued(key)),
        IN_FLIGHT => Lookup::Known(UrlState::InFlight(key)),
        DONE => Lookup::Known(UrlState::Done(a as PageId)),
        _ => Lookup::Alias,
    }
}

impl SeenCache {
    /// A cache of at most `max` URLs over an empty seen-set (0: no cache).
    pub(super) fn new(max: usize) -> Self {
        SeenCache {
            young: Map::default(),
            old: Map::default(),
            half: max.div_ceil(2),
            max,
            complete: max > 0,
            filter: None,
            turnovers: 0,
        }
    }

    /// Makes room for `n` more URLs (at most a generation's worth), so
    /// filling the cache at open does not rehash it again and again.
    pub(super) fn reserve(&mut self, n: usize) {
        self.young.reserve(n.min(self.half.saturating_sub(self.young.len())));
    }

    /// What is known about the URL with fingerprint `fp`.
    pub(super) fn get(&self, fp: Fp) -> Lookup {
        if let Some(&v) = self.young.get(&fp).or_else(|| self.old.get(&fp)) {
            return unpack(v);
        }
        if self.complete || self.filter.as_ref().is_some_and(|f| !f.may_contain(fp)) {
            Lookup::Absent
        } else {
            Lookup::Unknown
        }
    }

    /// Generations turned over so far: a state read from the backend is
    /// [admitted](SeenCache::admit) only if none was turned over since the
    /// read began.
    pub(super) fn turnovers(&self) -> u64 {
        self.turnovers
    }

    /// The URL with fingerprint `fp` is now stored with state `s`.
    pub(super) fn set(&mut self, fp: Fp, s: &UrlState) {
        if self.half == 0 {
            return;
        }
        match pack(s) {
            Some(v) => self.put(fp, v),
            None => {
                // Not representable (a sequence number past 2^62): forget it.
                self.young.remove(&fp);
                self.old.remove(&fp);
                self.lose_completeness();
            }
        }
        if let Some(f) = &mut self.filter {
            f.insert(fp);
        }
    }

    /// `s`, read from the backend for the URL with fingerprint `fp` after
    /// [`turnovers`](SeenCache::turnovers) was `since`, is cached unless the
    /// cache has the URL already. A write of the URL between the read and
    /// now put its newer state into the cache, and it is still there unless
    /// a generation was turned over, so the read is admitted only if none
    /// was.
    pub(super) fn admit(&mut self, fp: Fp, s: &UrlState, since: u64) {
        if self.half == 0 || self.turnovers != since || self.young.contains_key(&fp) || self.old.contains_key(&fp) {
            return;
        }
        if let Some(v) = pack(s) {
            self.put(fp, v);
        }
    }

    fn put(&mut self, fp: Fp, v: (u64, u64)) {
        if let Some(slot) = self.young.get_mut(&fp) {
            *slot = v;
            return;
        }
        self.old.remove(&fp);
        if self.young.len() >= self.half {
            self.turn_over();
        }
        self.young.insert(fp, v);
    }

    /// The old generation is dropped and the young one takes its place.
    fn turn_over(&mut self) {
        self.lose_completeness();
        let young = std::mem::replace(
            &mut self.young,
            Map::with_capacity_and_hasher(self.half, Default::default()),
        );
        if 2 * self.half <= self.max {
            self.old = young;
        }
        self.turnovers += 1;
    }

    /// The cache will no longer hold every stored URL: the filter starts,
    /// with every URL it holds now.
    fn lose_completeness(&mut self) {
        if self.complete {
            self.complete = false;
            let mut f = UrlFilter::new((2 * self.half).max(1 << 16));
            for &fp in self.young.keys().chain(self.old.keys()) {
                f.insert(fp);
            }
            self.filter = Some(f);
        }
    }

    /// URLs cached.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

/// A Bloom filter of URL fingerprints that grows with what it holds: a
/// series of blocked Bloom filters (Putze, Sanders and Singler 2007: the
/// probes of one key fall in one 512-bit block, one cache line), each for
/// twice as many keys as the one before, at 10 bits and 7 probes per key
/// (about 1% false positives each). A key is in the newest; a query asks
/// each (a handful for billions of URLs).
pub(super) struct UrlFilter {
    parts: Vec<BlockedBloom>,
}

impl UrlFilter {
    /// An empty filter whose first part holds `capacity` keys.
    pub(super) fn new(capacity: usize) -> Self {
        UrlFilter {
            parts: vec![BlockedBloom::new(capacity.max(1))],
        }
    }

    /// Adds `fp`.
    pub(super) fn insert(&mut self, fp: Fp) {
        let last = self.parts.last().expect("a filter has a part");
        if last.is_full() {
            let next = BlockedBloom::new(last.capacity() * 2);
            self.parts.push(next);
        }
        self.parts.last_mut().expect("a filter has a part").insert(fp);
    }

    /// False only if `fp` was never inserted.
    pub(super) fn may_contain(&self, fp: Fp) -> bool {
        self.parts.iter().any(|p| p.may_contain(fp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rank: u64, seq: u64) -> QueueKey {
        QueueKey { rank, seq }
    }

    #[test]
    fn states_round_trip() {
        let mut c = SeenCache::new(10);
        let states = [
            UrlState::Queued(key(u64::MAX, LOW)),
            UrlState::InFlight(key(0, 1)),
            UrlState::Done(u64::MAX),
            UrlState::Queued(key(7, 0)),
        ];
        for (i, s) in states.iter().enumerate() {
            let fp = fingerprint(&format!("http://a.test/{i}"));
            assert_eq!(c.get(fp), Lookup::Absent);
            c.set(fp, s);
            assert_eq!(c.get(fp), Lookup::Known(s.clone()));
        }
        let fp = fingerprint("http://a.test/alias");
        c.set(fp, &UrlState::AliasOf("http://a.test/0".into()));
        assert_eq!(c.get(fp), Lookup::Alias);
    }

    #[test]
    fn a_full_cache_turns_over_and_its_filter_answers_for_the_rest() {
        let mut c = SeenCache::new(2);
        let fps: Vec<Fp> = (0..3).map(|i| fingerprint(&format!("http://a.test/{i}"))).collect();
        c.set(fps[0], &UrlState::Queued(key(1, 1)));
        c.set(fps[1], &UrlState::Queued(key(1, 2)));
        c.set(fps[2], &UrlState::Queued(key(1, 3)));
        assert_eq!(c.len(), 2);
        // The oldest URL is no longer cached, but the filter knows it is stored.
        assert_eq!(c.get(fps[0]), Lookup::Unknown);
        assert_eq!(c.get(fps[2]), Lookup::Known(UrlState::Queued(key(1, 3))));
        // A URL never stored is not seen, without a read.
        assert_eq!(c.get(fingerprint("http://a.test/never")), Lookup::Absent);
        // Cached URLs are updated in place.
        c.set(fps[1], &UrlState::Done(9));
        assert_eq!(c.get(fps[1]), Lookup::Known(UrlState::Done(9)));
    }

    #[test]
    fn a_read_is_admitted_unless_a_generation_turned_over_since() {
        let mut c = SeenCache::new(4);
        let fps: Vec<Fp> = (0..8).map(|i| fingerprint(&format!("http://a.test/{i}"))).collect();
        for (i, &fp) in fps.iter().enumerate() {
            c.set(fp, &UrlState::Done(i as u64));
        }
        assert_eq!(c.get(fps[0]), Lookup::Unknown);
        let since = c.turnovers();
        c.admit(fps[0], &UrlState::Done(0), since);
        assert_eq!(c.get(fps[0]), Lookup::Known(UrlState::Done(0)));
        // A read that began before a turnover may be stale: not admitted.
        assert_eq!(c.get(fps[1]), Lookup::Unknown);
        let since = c.turnovers();
        for i in 8..12 {
            c.set(fingerprint(&format!("http://a.test/{i}")), &UrlState::Done(i));
        }
        c.admit(fps[1], &UrlState::Done(1), since);
        assert_eq!(c.get(fps[1]), Lookup::Unknown);
        // A cached state is never replaced by a read.
        let newer = fingerprint("http://a.test/11");
        c.admit(newer, &UrlState::Done(99), c.turnovers());
        assert_eq!(c.get(newer), Lookup::Known(UrlState::Done(11)));
    }

    /// A full cache asked about ever more new URLs keeps its two tables:
    /// its memory stays bounded by `max`.
    #[test]
    fn full_cache_does_not_grow_its_tables() {
        let mut c = SeenCache::new(64);
        for i in 0..64 {
            c.set(fingerprint(&format!("http://a.test/{i}")), &UrlState::Done(i));
        }
        let cap = c.young.capacity() + c.old.capacity();
        for i in 64..10_000 {
            c.set(fingerprint(&format!("http://a.test/{i}")), &UrlState::Done(i));
        }
        assert!(c.len() <= 64);
        assert!(c.young.capacity() + c.old.capacity() <= cap.max(2 * c.young.capacity()));
        assert!(c.young.capacity() < 128, "{}", c.young.capacity());
    }

    #[test]
    fn the_filter_has_no_false_negatives_and_few_false_positives() {
        let mut f = UrlFilter::new(1000);
        for i in 0..5000 {
            f.insert(fingerprint(&format!("http://a.test/{i}")));
        }
        assert!((0..5000).all(|i| f.may_contain(fingerprint(&format!("http://a.test/{i}")))));
        let fp = (0..20_000)
            .filter(|i| f.may_contain(fingerprint(&format!("http://b.test/{i}"))))
            .count();
        // About 1% per part, three parts.
        assert!(fp < 20_000 * 4 / 100, "{fp} false positives");
    }

    proptest::proptest! {
        /// Against a plain map of every stored state: a known state is the
        /// stored one, "absent" only for URLs never stored, and the cache
        /// never holds more than its bound.
        #[test]
        fn the_cache_agrees_with_the_stored_states(
            max in 0usize..12,
            ops in proptest::collection::vec((0u8..40, 0u64..1000, proptest::bool::ANY), 0..300),
        ) {
            let mut c = SeenCache::new(max);
            let mut stored = std::collections::HashMap::new();
            for (url, v, read) in ops {
                let fp = fingerprint(&format!("http://a.test/{url}"));
                if read {
                    // A read from the backend, admitted.
                    if let Some(s) = stored.get(&url) {
                        let since = c.turnovers();
                        c.admit(fp, s, since);
                    }
                } else {
                    let s = UrlState::Done(v);
                    c.set(fp, &s);
                    stored.insert(url, s);
                }
                proptest::prop_assert!(c.len() <= max);
                for u in 0u8..40 {
                    match c.get(fingerprint(&format!("http://a.test/{u}"))) {
                        Lookup::Known(s) => proptest::prop_assert_eq!(Some(&s), stored.get(&u)),
                        Lookup::Absent => proptest::prop_assert!(!stored.contains_key(&u)),
                        Lookup::Unknown => proptest::prop_assert!(max == 0 || stored.contains_key(&u)),
                        Lookup::Alias => proptest::prop_assert!(false),
                    }
                }
            }
        }
    }

    #[test]
    fn disabled_and_unpackable_states_defer_to_the_store() {
        let mut off = SeenCache::new(0);
        let fp = fingerprint("http://a.test/");
        off.set(fp, &UrlState::Done(1));
        assert_eq!(off.get(fp), Lookup::Unknown);
        let mut c = SeenCache::new(4);
        c.set(fp, &UrlState::Done(1));
        c.set(fp, &UrlState::Queued(key(0, u64::MAX)));
        assert_eq!(c.get(fp), Lookup::Unknown);
    }
}
