//! [`SharedExact`]: the exact-duplicate maps of a crawl that several worker
//! processes share, in the store ([`ContentOwners`]) instead of memory.
//!
//! Like the shared near-duplicate tables (`crate::index::shared`), it is
//! used under the decision log's lock, a batch at a time: the owners of the
//! batch's hashes are fetched in one call ([`SharedExact::prefetch`]),
//! each page is decided against them and against the batch's own pages
//! ([`SharedExact::check_and_insert`]: the first page keeps a hash), and
//! the changes are written at the end of the batch ([`SharedExact::flush`])
//! as compare-and-set changes from the owner fetched. An owner that no
//! decision names (written by a holder whose lock expired) is left out
//! ([`SharedExact::drop_owners`]) and replaced by the next page with the
//! hash.

use super::{decide, Ruling};
use crate::model::{PageId, Verdict};
use crate::store::{owner_key, ContentOwners, HashKind, OwnerChange, OwnerKey, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

type Slot = (HashKind, OwnerKey);

/// The exact-duplicate maps in the store, with the batch's view of them.
pub struct SharedExact {
    owners: Arc<dyn ContentOwners>,
    /// The owner of each key in the store when it was fetched.
    fetched: HashMap<Slot, Option<PageId>>,
    /// The owner of each fetched key as this batch decides.
    now: HashMap<Slot, Option<PageId>>,
    /// Keys whose owner this batch changed, in order.
    changed: Vec<Slot>,
}

impl SharedExact {
    /// Over `owners`.
    pub fn new(owners: Arc<dyn ContentOwners>) -> Self {
        SharedExact {
            owners,
            fetched: HashMap::new(),
            now: HashMap::new(),
            changed: Vec::new(),
        }
    }

    fn slots(body: Option<&[u8; 32]>, text: Option<&[u8; 32]>) -> impl Iterator<Item = Slot> {
        body.map(|h| (HashKind::Body, owner_key(h)))
            .into_iter()
            .chain(text.map(|h| (HashKind::Text, owner_key(h))))
    }

    /// Fetch the owners of these hashes (one call) not fetched yet in this
    /// batch; returns them.
    pub fn prefetch<'a>(
        &mut self,
        hashes: impl IntoIterator<Item = (Option<&'a [u8; 32]>, Option<&'a [u8; 32]>)>,
    ) -> Result<HashSet<PageId>, StoreError> {
        let mut want: Vec<Slot> = hashes
            .into_iter()
            .flat_map(|(b, t)| Self::slots(b, t))
            .filter(|s| !self.now.contains_key(s))
            .collect();
        want.sort_unstable();
        want.dedup();
        let mut ids = HashSet::new();
        if want.is_empty() {
            return Ok(ids);
        }
        let got = self.owners.owners(&want)?;
        for (slot, owner) in want.into_iter().zip(got) {
            ids.extend(owner);
            self.fetched.insert(slot, owner);
            self.now.insert(slot, owner);
        }
        Ok(ids)
    }

    /// Treat these fetched owners as absent (no decision names them).
    pub fn drop_owners(&mut self, ids: &HashSet<PageId>) {
        if ids.is_empty() {
            return;
        }
        for owner in self.now.values_mut() {
            if owner.is_some_and(|o| ids.contains(&o)) {
                *owner = None;
            }
        }
    }

    fn owner(&mut self, slot: Slot) -> Result<Option<PageId>, StoreError> {
        if let Some(o) = self.now.get(&slot) {
            return Ok(*o);
        }
        let o = self.owners.owners(&[slot])?.pop().flatten();
        self.fetched.insert(slot, o);
        self.now.insert(slot, o);
        Ok(o)
    }

    fn set(&mut self, slot: Slot, to: Option<PageId>) {
        self.now.insert(slot, to);
        self.changed.push(slot);
    }

    /// [`super::ExactIndex::check_and_insert`] over the shared maps: the
    /// exact verdict, or `None`; `page` becomes the owner of each hash that
    /// has none. A hash no prefetch covered is fetched on its own.
    pub fn check_and_insert(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> Result<Option<Ruling>, StoreError> {
        let mut found = [None, None];
        for (i, slot) in [
            body.map(|h| (HashKind::Body, owner_key(h))),
            text.map(|h| (HashKind::Text, owner_key(h))),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(slot) = slot else { continue };
            match self.owner(slot)? {
                Some(o) => found[i] = Some(o),
                None => self.set(slot, Some(page)),
            }
        }
        let v = decide(found[0], found[1], &[], 0);
        Ok((v.verdict == Verdict::ExactDuplicate).then_some(v))
    }

    /// [`super::ExactIndex::remove_owned`] over the shared maps.
    pub fn remove_owned(
        &mut self,
        body: Option<&[u8; 32]>,
        text: Option<&[u8; 32]>,
        page: PageId,
    ) -> Result<(), StoreError> {
        for slot in Self::slots(body, text) {
            if self.owner(slot)? == Some(page) {
                self.set(slot, None);
            }
        }
        Ok(())
    }

    /// End the batch: write its changes (each from the owner fetched).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        let mut seen = HashSet::new();
        let changes: Vec<OwnerChange> = self
            .changed
            .iter()
            .filter(|s| seen.insert(**s))
            .filter_map(|s| {
                let (from, to) = (
                    self.fetched.get(s).copied().flatten(),
                    self.now.get(s).copied().flatten(),
                );
                (from != to).then_some(OwnerChange {
                    kind: s.0,
                    key: s.1,
                    from,
                    to,
                })
            })
            .collect();
        self.discard();
        self.owners.change(&changes)
    }

    /// End the batch without writing.
    pub fn discard(&mut self) {
        self.fetched.clear();
        self.now.clear();
        self.changed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemOwners;

    #[test]
    fn first_page_owns_across_batches_and_processes() {
        let store: Arc<dyn ContentOwners> = Arc::new(MemOwners::new());
        let (mut a, mut b) = (SharedExact::new(store.clone()), SharedExact::new(store.clone()));
        let (x, y) = ([1u8; 32], [2u8; 32]);
        a.prefetch([(Some(&x), Some(&y))]).unwrap();
        assert_eq!(a.check_and_insert(Some(&x), Some(&y), 1).unwrap(), None);
        // The batch's own pages see the first.
        let r = a.check_and_insert(Some(&x), None, 2).unwrap().unwrap();
        assert_eq!(r.dup_of, Some(1));
        a.flush().unwrap();
        // Another process, next batch: a text copy of page 1.
        let ids = b.prefetch([(Some(&[3; 32]), Some(&y))]).unwrap();
        assert_eq!(ids, HashSet::from([1]));
        assert_eq!(
            b.check_and_insert(Some(&[3; 32]), Some(&y), 3).unwrap().unwrap().dup_of,
            Some(1)
        );
        // Page 1's content changes: it gives its hashes up.
        b.remove_owned(Some(&x), Some(&y), 1).unwrap();
        b.flush().unwrap();
        assert_eq!(
            a.check_and_insert(Some(&x), Some(&y), 4).unwrap(),
            None,
            "page 4 owns them now"
        );
    }

    #[test]
    fn an_owner_no_decision_names_is_replaced_and_a_stale_writer_takes_nothing() {
        let store: Arc<dyn ContentOwners> = Arc::new(MemOwners::new());
        let mut zombie = SharedExact::new(store.clone());
        let mut a = SharedExact::new(store.clone());
        let h = [5u8; 32];
        zombie.prefetch([(Some(&h), None)]).unwrap();
        a.prefetch([(Some(&h), None)]).unwrap();
        zombie.check_and_insert(Some(&h), None, 66).unwrap();
        zombie.flush().unwrap();
        // Page 66 was never logged: left out, and page 7 takes the hash.
        let ids = {
            a.discard();
            a.prefetch([(Some(&h), None)]).unwrap()
        };
        assert_eq!(ids, HashSet::from([66]));
        a.drop_owners(&ids);
        assert_eq!(a.check_and_insert(Some(&h), None, 7).unwrap(), None);
        a.flush().unwrap();
        // A writer that saw no owner cannot take it from page 7.
        zombie.prefetch([(Some(&[9; 32]), None)]).unwrap();
        zombie.now.insert((HashKind::Body, owner_key(&h)), None);
        zombie.fetched.insert((HashKind::Body, owner_key(&h)), None);
        zombie.check_and_insert(Some(&h), None, 67).unwrap();
        zombie.flush().unwrap();
        assert_eq!(store.owners(&[(HashKind::Body, owner_key(&h))]).unwrap(), vec![Some(7)]);
    }
}
