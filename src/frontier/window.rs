//! A queued URL as a host's in-memory window keeps it ([`Packed`]), and the
//! parts of a queued URL that its priority is computed from ([`Scored`]),
//! packed or whole.
//!
//! The windows hold most of the frontier's memory: up to
//! `[frontier] memory_budget` URLs (twice that briefly). A [`QueuedUrl`]
//! keeps four strings, each in its own allocation, and the host's name is
//! the same in every URL of a window; a packed one keeps the URL, its
//! canonical form (only when it differs) and its parent in one allocation
//! and takes the host from its window: 168 bytes and one allocation
//! instead of 224 and four. With a bench-web URL (about 40 bytes, its
//! canonical form the same, its parent as long) a window entry with its
//! key takes about 290 bytes instead of about 420.

use crate::model::{PageId, QueueKey, QueuedUrl, ScoreComponents};

/// A queued URL without its host (the window's host), its strings in one
/// allocation. [`Packed::unpack`] gives the [`QueuedUrl`] back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Packed {
    /// The URL, then its canonical form unless the same, then the parent's.
    text: Box<str>,
    /// Where the URL ends in `text`.
    url_end: usize,
    /// Where the canonical form ends (`url_end` when it is the URL).
    canonical_end: usize,
    /// The canonical form is the URL (and not in `text` again).
    same_canonical: bool,
    /// The URL has a parent (`text` after `canonical_end`).
    has_parent: bool,
    pub(super) depth: u32,
    pub(super) retries: u32,
    pub(super) inlinks: u32,
    pub(super) tunnel: u32,
    pub(super) components: ScoreComponents,
    pub(super) priority: f64,
    pub(super) seq: u64,
    pub(super) revisit: Option<PageId>,
}

impl Packed {
    /// Pack `q`, whose host the window keeps.
    pub(super) fn pack(q: QueuedUrl) -> Packed {
        let same = q.canonical == q.url;
        let parent = q.parent.as_deref().unwrap_or("");
        let mut text = String::with_capacity(q.url.len() + if same { 0 } else { q.canonical.len() } + parent.len());
        text.push_str(&q.url);
        let url_end = text.len();
        if !same {
            text.push_str(&q.canonical);
        }
        let canonical_end = text.len();
        text.push_str(parent);
        Packed {
            text: text.into_boxed_str(),
            url_end,
            canonical_end,
            same_canonical: same,
            has_parent: q.parent.is_some(),
            depth: q.depth,
            retries: q.retries,
            inlinks: q.inlinks,
            tunnel: q.tunnel,
            components: q.components,
            priority: q.priority,
            seq: q.seq,
            revisit: q.revisit,
        }
    }

    /// The URL as discovered.
    pub(super) fn url(&self) -> &str {
        &self.text[..self.url_end]
    }

    /// Its canonical form (the seen-set key).
    pub(super) fn canonical(&self) -> &str {
        if self.same_canonical {
            self.url()
        } else {
            &self.text[self.url_end..self.canonical_end]
        }
    }

    fn parent(&self) -> Option<&str> {
        self.has_parent.then(|| &self.text[self.canonical_end..])
    }

    /// Its position in the host's queue (as [`QueuedUrl::key`]).
    pub(super) fn key(&self) -> QueueKey {
        QueueKey {
            rank: crate::model::priority_rank(self.priority),
            seq: self.seq,
        }
    }

    /// The queued URL, with `host` (its window's) as its host.
    pub(super) fn unpack(&self, host: &str) -> QueuedUrl {
        QueuedUrl {
            url: self.url().to_owned(),
            canonical: self.canonical().to_owned(),
            host: host.to_owned(),
            depth: self.depth,
            parent: self.parent().map(str::to_owned),
            components: self.components.clone(),
            priority: self.priority,
            seq: self.seq,
            retries: self.retries,
            inlinks: self.inlinks,
            tunnel: self.tunnel,
            revisit: self.revisit,
        }
    }
}

/// The parts of a queued URL its priority is computed from, borrowed from a
/// whole ([`QueuedUrl`]) or packed ([`Packed`]) one, so that one function
/// re-scores both.
pub(super) struct ScoreParts<'a> {
    pub(super) components: &'a mut ScoreComponents,
    pub(super) priority: &'a mut f64,
    pub(super) inlinks: &'a mut u32,
    pub(super) tunnel: &'a mut u32,
}

/// A queued URL, whole or packed, whose priority can be changed.
pub(super) trait Scored {
    fn parts(&mut self) -> ScoreParts<'_>;
}

impl Scored for QueuedUrl {
    fn parts(&mut self) -> ScoreParts<'_> {
        ScoreParts {
            components: &mut self.components,
            priority: &mut self.priority,
            inlinks: &mut self.inlinks,
            tunnel: &mut self.tunnel,
        }
    }
}

impl Scored for Packed {
    fn parts(&mut self) -> ScoreParts<'_> {
        ScoreParts {
            components: &mut self.components,
            priority: &mut self.priority,
            inlinks: &mut self.inlinks,
            tunnel: &mut self.tunnel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn queued(url: &str, canonical: &str, parent: Option<&str>) -> QueuedUrl {
        QueuedUrl {
            url: url.into(),
            canonical: canonical.into(),
            host: "h.test:8080".into(),
            depth: 3,
            parent: parent.map(Into::into),
            components: ScoreComponents {
                depth: -3.0,
                inlinks: 0.7,
                url_relevance: 0.25,
                ..Default::default()
            },
            priority: -1.5,
            seq: 42,
            retries: 1,
            inlinks: 2,
            tunnel: 4,
            revisit: Some(7),
        }
    }

    #[test]
    fn a_packed_url_unpacks_to_itself_and_keeps_its_key() {
        for q in [
            queued(
                "http://h.test:8080/a",
                "http://h.test:8080/a",
                Some("http://h.test:8080/"),
            ),
            queued("http://h.test:8080/a#x", "http://h.test:8080/a", None),
            queued("", "", Some("")),
            queued(
                "http://h.test:8080/é",
                "http://h.test:8080/%C3%A9",
                Some("http://h.test:8080/ü"),
            ),
        ] {
            let p = Packed::pack(q.clone());
            assert_eq!(p.unpack(&q.host), q);
            assert_eq!(p.key(), q.key());
            assert_eq!(p.canonical(), q.canonical);
            assert_eq!(p.url(), q.url);
        }
    }

    #[test]
    fn a_packed_url_takes_less_room_than_a_whole_one() {
        assert!(std::mem::size_of::<Packed>() + 32 < std::mem::size_of::<QueuedUrl>());
    }

    proptest! {
        #[test]
        fn pack_then_unpack_is_the_identity(
            url in ".{0,40}",
            canonical in ".{0,40}",
            same in any::<bool>(),
            parent in proptest::option::of(".{0,40}"),
        ) {
            let canonical = if same { url.clone() } else { canonical };
            let q = queued(&url, &canonical, parent.as_deref());
            let p = Packed::pack(q.clone());
            prop_assert_eq!(p.unpack(&q.host), q);
        }
    }
}
