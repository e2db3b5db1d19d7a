//! [`ContentOwners`]: the exact-duplicate maps of a crawl that several
//! worker processes share — the first page (the owner) of each body hash
//! and of each text hash, keyed by the hash's first 16 bytes as the
//! in-memory maps key it — and [`MemOwners`], an in-process implementation
//! for tests. The Redis implementation is in `redis_owners.rs`.
//!
//! Owners change by compare-and-set ([`OwnerChange`]): a change applies
//! only when the key's owner is still the one the writer saw, so a writer
//! whose decisions never reached the decision log (its lock expired) cannot
//! take a hash from the page that owns it.

use super::StoreError;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Which map: body hashes or text hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashKind {
    /// Hashes of the response body.
    Body,
    /// Hashes of the visible text.
    Text,
}

/// A content hash's key: its first 16 bytes.
pub type OwnerKey = [u8; 16];

/// Set the owner of `key` to `to` (`None`: remove it) if it is `from`
/// (`None`: it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerChange {
    /// The map.
    pub kind: HashKind,
    /// The hash's key.
    pub key: OwnerKey,
    /// The owner the writer saw.
    pub from: Option<u64>,
    /// The owner to set.
    pub to: Option<u64>,
}

/// The shared exact-duplicate maps. Each call is one round trip per node
/// it touches.
pub trait ContentOwners: Send + Sync {
    /// The owner of each key, in order.
    fn owners(&self, keys: &[(HashKind, OwnerKey)]) -> Result<Vec<Option<u64>>, StoreError>;
    /// Apply each change whose `from` still holds (the others are left).
    fn change(&self, changes: &[OwnerChange]) -> Result<(), StoreError>;
}

/// The key of a 32-byte content hash.
pub fn owner_key(h: &[u8; 32]) -> OwnerKey {
    let mut k = [0u8; 16];
    k.copy_from_slice(&h[..16]);
    k
}

/// [`ContentOwners`] in memory (tests).
#[derive(Default)]
pub struct MemOwners {
    map: Mutex<HashMap<(HashKind, OwnerKey), u64>>,
}

impl MemOwners {
    /// Empty.
    pub fn new() -> Self {
        MemOwners::default()
    }

    /// Keys with an owner.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether no key has an owner.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ContentOwners for MemOwners {
    fn owners(&self, keys: &[(HashKind, OwnerKey)]) -> Result<Vec<Option<u64>>, StoreError> {
        let map = self.map.lock();
        Ok(keys.iter().map(|k| map.get(k).copied()).collect())
    }

    fn change(&self, changes: &[OwnerChange]) -> Result<(), StoreError> {
        let mut map = self.map.lock();
        for c in changes {
            let k = (c.kind, c.key);
            if map.get(&k).copied() == c.from {
                match c.to {
                    Some(to) => map.insert(k, to),
                    None => map.remove(&k),
                };
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_apply_only_from_the_owner_seen() {
        let m = MemOwners::new();
        let k = owner_key(&[7; 32]);
        let set = |from, to| OwnerChange {
            kind: HashKind::Body,
            key: k,
            from,
            to,
        };
        m.change(&[set(None, Some(1))]).unwrap();
        // A writer that saw no owner cannot take the hash from page 1.
        m.change(&[set(None, Some(2))]).unwrap();
        assert_eq!(
            m.owners(&[(HashKind::Body, k), (HashKind::Text, k)]).unwrap(),
            vec![Some(1), None]
        );
        m.change(&[set(Some(1), None)]).unwrap();
        assert!(m.is_empty());
    }
}
