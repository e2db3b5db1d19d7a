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
//! stored one. It is *complete* while it holds every stored URL; then a miss
//! means "not seen" and costs no read either. Past `max` URLs it stops
//! growing and a miss falls back to the backend (bounded memory).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::{PageId, QueueKey, UrlState};

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

/// The cache (see the module docs).
pub(super) struct SeenCache {
    map: HashMap<Fp, (u64, u64), BuildHasherDefault<crate::hash::PreHashed>>,
    max: usize,
    /// Every stored URL is in `map`.
    complete: bool,
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
            map: HashMap::default(),
            max,
            complete: max > 0,
        }
    }

    /// Makes room for `n` more URLs (at most up to `max`), so filling the
    /// cache at open does not rehash it again and again.
    pub(super) fn reserve(&mut self, n: usize) {
        self.map.reserve(n.min(self.max.saturating_sub(self.map.len())));
    }

    /// What is known about the URL with fingerprint `fp`.
    pub(super) fn get(&self, fp: Fp) -> Lookup {
        match self.map.get(&fp) {
            Some(&v) => unpack(v),
            None if self.complete => Lookup::Absent,
            None => Lookup::Unknown,
        }
    }

    /// The URL with fingerprint `fp` is now stored with state `s`.
    pub(super) fn set(&mut self, fp: Fp, s: &UrlState) {
        let Some(v) = pack(s) else {
            // Not representable (a sequence number past 2^62): forget it.
            self.map.remove(&fp);
            self.complete = false;
            return;
        };
        if self.map.len() < self.max {
            // One hash lookup, new key or not (filling the cache at open is
            // mostly new keys).
            self.map.insert(fp, v);
        } else if let Some(slot) = self.map.get_mut(&fp) {
            // Full: update in place only. (`entry` would reserve a slot for
            // an absent key, and a table at capacity would grow past `max`.)
            *slot = v;
        } else {
            self.complete = false;
        }
    }

    /// URLs cached.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
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
    fn full_cache_stops_growing_and_defers_misses() {
        let mut c = SeenCache::new(2);
        let fps: Vec<Fp> = (0..3).map(|i| fingerprint(&format!("http://a.test/{i}"))).collect();
        c.set(fps[0], &UrlState::Queued(key(1, 1)));
        c.set(fps[1], &UrlState::Queued(key(1, 2)));
        c.set(fps[2], &UrlState::Queued(key(1, 3)));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(fps[2]), Lookup::Unknown);
        // Cached URLs are still updated in place.
        c.set(fps[0], &UrlState::Done(9));
        assert_eq!(c.get(fps[0]), Lookup::Known(UrlState::Done(9)));
        assert_eq!(c.get(fingerprint("http://a.test/never")), Lookup::Unknown);
    }

    /// A full cache asked about ever more new URLs keeps its table: its
    /// memory stays bounded by `max`.
    #[test]
    fn full_cache_does_not_grow_its_table() {
        let mut c = SeenCache::new(3);
        for i in 0..3 {
            c.set(fingerprint(&format!("http://a.test/{i}")), &UrlState::Done(i));
        }
        let cap = c.map.capacity();
        for i in 3..100 {
            c.set(fingerprint(&format!("http://a.test/{i}")), &UrlState::Done(i));
        }
        assert_eq!((c.len(), c.map.capacity()), (3, cap));
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
