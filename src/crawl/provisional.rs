//! Young pages (pipeline: part of the decider): the new pages of a young
//! host or section, kept and fingerprinted again while the template they
//! were fingerprinted under settles, so a copy fetched later, under the
//! settled template, still finds them. Their prepared words wait on disk
//! ([`super::kept`]); memory holds each page's block hashes.

use super::decide::Decider;
use super::kept::Slot;
use super::*;

/// A new page of a young host or section, kept to be re-fingerprinted.
pub(super) struct Provisional {
    id: PageId,
    /// Its [`template_key`](crate::features::template_key).
    key: String,
    /// The page tokenized and stemmed (weighed again on each change), in
    /// the decider's [`super::kept::KeptFile`].
    prepared: Slot,
    /// The page itself, for min-hash sketches only.
    doc: Option<Extracted>,
    /// Block hashes of `doc`, and which were template blocks when `fp` was
    /// computed: a page's features depend on its host's template only
    /// through these, so a template change that leaves them alone leaves
    /// `fp` alone.
    blocks: Vec<u64>,
    member: Vec<bool>,
    fp: u64,
    /// The membership `fp` was computed under before the current one (its
    /// [`member_hash`]) and the fingerprint it gave: a block that comes
    /// and goes around the template's threshold turns a page back to it.
    before: Option<(u64, u64)>,
    version: u64,
}

/// The young pages of one site, and what their last scan saw.
#[derive(Default)]
pub(super) struct YoungSite {
    pages: Vec<Provisional>,
    /// Each key of `pages`, with its template version at the last scan.
    keys: Vec<(String, u64)>,
    /// Whether a page was added since the last scan. When not, every page
    /// of a key was fingerprinted under the key's version in `keys`, and
    /// the key was young: while neither changes, a scan changes nothing.
    added: bool,
}

impl YoungSite {
    /// Whether a scan would change nothing: no page added since the last
    /// one, and each key still at the template version that scan saw and
    /// still young. `now` gives a key's template version and pages.
    fn unchanged(&self, now: impl Fn(&str) -> (u64, usize)) -> bool {
        !self.added
            && self.keys.iter().all(|(k, v)| {
                let (version, pages) = now(k);
                version == *v && is_young(pages)
            })
    }

    /// After a scan that saw `of_key` (each key's version and pages, in
    /// the order of `keys`): keys past their youth are dropped (their pages
    /// were), the others keep the version seen.
    fn scanned(&mut self, of_key: Vec<(u64, usize)>) {
        let mut of_key = of_key.into_iter();
        self.keys.retain_mut(|(_, v)| {
            let (version, pages) = of_key.next().unwrap_or((*v, 0));
            *v = version;
            is_young(pages)
        });
        self.added = false;
    }

    /// Records that a page of `key`, fingerprinted under template
    /// `version`, was added.
    fn add(&mut self, key: &str, version: u64) {
        if !self.keys.iter().any(|(k, _)| k == key) {
            self.keys.push((key.to_string(), version));
        }
        self.added = true;
    }
}

/// Whether a key with this many pages is young: its pages are kept.
fn is_young(pages: usize) -> bool {
    pages <= 2 * PROVISIONAL_PER_HOST
}

/// A 64-bit hash of a template membership ([`in_template`]).
fn member_hash(member: &[bool]) -> u64 {
    member.chunks(64).fold(member.len() as u64, |h, c| {
        let bits = c.iter().rev().fold(0u64, |b, &m| (b << 1) | u64::from(m));
        crate::hash::mix64(h ^ bits).wrapping_add(0x9e37_79b9_7f4a_7c15)
    })
}

/// Which of `blocks` (block hashes) are blocks of `template`.
pub(super) fn in_template(blocks: &[u64], template: Option<&crate::features::HostTemplate>) -> Vec<bool> {
    blocks
        .iter()
        .map(|h| template.is_some_and(|t| t.blocks.contains(h)))
        .collect()
}

impl Decider {
    /// A page fingerprinted before its host's template was learned carries the
    /// template's weight; a copy fetched later does not, and would miss it.
    /// So the new pages of a young host, or of a young section of a host,
    /// are kept, and when the template they were fingerprinted under (the
    /// site's and their section's) changes they are fingerprinted again and
    /// the new fingerprint is indexed under the same page id (the old one
    /// stays: both name the page). A site's kept pages are looked at when
    /// any page of the site is decided: its template changes with every
    /// section's pages.
    pub(super) fn refresh_provisional(&mut self, key: &str) -> Result<()> {
        let shared = &self.shared;
        let site = crate::features::template_site(key);
        let Some(young) = self.provisional.get_mut(site) else {
            return Ok(());
        };
        let now = |k: &str| (shared.templates.version(k), shared.templates.pages(k) as usize);
        if young.unchanged(now) {
            return Ok(());
        }
        let (list, keys) = (&mut young.pages, &young.keys);
        // Template version and pages of each key, looked up once per call.
        let of_key: Vec<(u64, usize)> = keys.iter().map(|(k, _)| now(k)).collect();
        let index: hashbrown::HashMap<&str, usize> =
            keys.iter().enumerate().map(|(i, (k, _))| (k.as_str(), i)).collect();
        let of_page: Vec<(u64, usize)> = list
            .iter()
            .map(|p| index.get(p.key.as_str()).map_or_else(|| now(&p.key), |&i| of_key[i]))
            .collect();
        drop(index);
        // When the sketch index compares pages outside their templates at
        // the time, the sketch taken stays: its shingles are tagged with
        // their blocks, so a block that joined the template since is left
        // out of both pages, and one that left it (its words are not in the
        // sketch: `cut_blocks`) is left out of the other page too. Only the
        // fingerprint moves.
        let resketch = !self.dedup.replica().cuts_templates();
        for (p, &(version, _)) in list.iter_mut().zip(&of_page) {
            if p.version == version {
                continue;
            }
            p.version = version;
            let template = shared.templates.template_shared(&p.key);
            let member = in_template(&p.blocks, template.as_deref());
            if member == p.member {
                // None of its blocks changed side: same features, same fp.
                continue;
            }
            let now = member_hash(&member);
            let back = p.before.filter(|&(h, _)| h == now && !resketch).map(|(_, fp)| fp);
            p.before = Some((member_hash(&p.member), p.fp));
            p.member = member;
            self.refingerprinted += 1;
            self.taken_back += u64::from(back.is_some());
            let (fp, sketch) = match back {
                // Back to the membership it had before: the fingerprint it had.
                Some(fp) => (fp, None),
                None => {
                    let kept = &self.kept;
                    let io = |e| Error::io(kept.dir(), e);
                    kept.get(p.prepared, &mut self.kept_buf).map_err(io)?;
                    let prepared = crate::features::PreparedDoc::decode(&self.kept_buf)
                        .ok_or_else(|| io(std::io::Error::other("a kept page reads back corrupt")))?;
                    let features = shared.fx.features_prepared(&prepared, &p.blocks, template.as_deref());
                    let sketch = resketch
                        .then(|| page_sketch(&shared.fx, shared.verifier.as_ref(), p.doc.as_ref(), &features, &p.key))
                        .flatten();
                    (simhash::simhash(&features), sketch)
                }
            };
            let dedup = &mut self.dedup;
            dedup
                .replica_mut()
                .reindex(p.id, p.fp, fp, sketch)
                .map_err(|e| Error::io(dedup.replica().sketch_path(), e))?;
            p.fp = fp;
        }
        // A site or section past its youth has a settled template: forget
        // its pages.
        let before = list.len();
        let mut pages = of_page.iter().map(|k| k.1);
        let kept = &mut self.kept;
        list.retain(|p| {
            let keep = is_young(pages.next().unwrap_or(0));
            if !keep {
                kept.free(p.prepared);
            }
            keep
        });
        self.provisional_len -= before - list.len();
        young.scanned(of_key);
        if young.pages.is_empty() {
            self.provisional.remove(site);
        }
        if self.kept.wants_compaction() {
            let slots = self
                .provisional
                .values_mut()
                .flat_map(|y| &mut y.pages)
                .map(|p| &mut p.prepared);
            self.kept.compact(slots).map_err(|e| Error::io(self.kept.dir(), e))?;
        }
        Ok(())
    }

    pub(super) fn keep_provisional(&mut self, id: PageId, a: &mut Analysis, decision: Decision) -> Result<()> {
        if decision != Decision::New || self.provisional_len >= PROVISIONAL_MAX {
            return Ok(());
        }
        let Some(Young {
            prepared,
            doc,
            blocks,
            member,
        }) = a.young.take()
        else {
            return Ok(());
        };
        let site = crate::features::template_site(&a.template);
        let young = self.provisional.entry(site.to_string()).or_default();
        if young.pages.iter().filter(|p| p.key == a.template).count() < PROVISIONAL_PER_HOST {
            young.add(&a.template, a.template_version);
            self.kept_buf.clear();
            prepared.encode(&mut self.kept_buf);
            let prepared = self
                .kept
                .put(&self.kept_buf)
                .map_err(|e| Error::io(self.kept.dir(), e))?;
            young.pages.push(Provisional {
                id,
                key: a.template.clone(),
                prepared,
                doc,
                blocks,
                member,
                fp: a.simhash,
                before: None,
                version: a.template_version,
            });
            self.provisional_len += 1;
            if self.provisional_len.is_multiple_of(500) {
                tracing::debug!(
                    "young pages: {} kept, {} bytes of prepared words in {}",
                    self.provisional_len,
                    self.kept.live_bytes(),
                    self.kept.dir().display()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Two memberships hash alike only when they are the same: a page
        /// turned back to its membership before takes the fingerprint it
        /// had, never another's.
        #[test]
        fn memberships_hash_alike_only_when_equal(
            a in proptest::collection::vec(proptest::bool::ANY, 0..300),
            b in proptest::collection::vec(proptest::bool::ANY, 0..300),
            flip in 0usize..300,
        ) {
            proptest::prop_assert_eq!(member_hash(&a) == member_hash(&b), a == b);
            let mut c = a.clone();
            if let Some(m) = c.get_mut(flip) {
                *m = !*m;
                proptest::prop_assert_ne!(member_hash(&a), member_hash(&c));
            }
            c = a.clone();
            c.push(false);
            proptest::prop_assert_ne!(member_hash(&a), member_hash(&c));
        }
    }

    /// A site scanned once is left alone until a page is added, a key's
    /// template version moves, or a key grows past its youth.
    #[test]
    fn a_young_site_is_scanned_again_only_when_something_changed() {
        let young_pages = 2 * PROVISIONAL_PER_HOST;
        let mut site = YoungSite::default();
        site.add("h/a", 1);
        site.add("h/b", 1);
        site.add("h/a", 2);
        assert_eq!(site.keys.len(), 2, "one entry per key");
        let at = |va: u64, vb: u64, pages_b: usize| move |k: &str| if k == "h/a" { (va, 3) } else { (vb, pages_b) };
        assert!(!site.unchanged(at(1, 1, 3)), "pages were added");
        site.scanned(vec![(4, 3), (7, 3)]);
        assert!(site.unchanged(at(4, 7, 3)));
        assert!(site.unchanged(at(4, 7, young_pages)), "still young");
        assert!(!site.unchanged(at(5, 7, 3)), "a's template moved");
        assert!(!site.unchanged(at(4, 8, 3)), "b's template moved");
        assert!(!site.unchanged(at(4, 7, young_pages + 1)), "b grew past its youth");
        site.add("h/c", 7);
        assert!(!site.unchanged(at(4, 7, 3)), "a page was added");
        // A scan that saw b past its youth (its pages dropped) forgets b.
        site.scanned(vec![(4, 3), (7, young_pages + 1), (1, 1)]);
        let keys: Vec<&str> = site.keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["h/a", "h/c"]);
        assert!(site.unchanged(|k: &str| if k == "h/a" { (4, 3) } else { (1, 1) }));
    }
}
