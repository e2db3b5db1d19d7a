//! The store's own records beside the shared ones in [`crate::model`]: the
//! exact-duplicate hashes of a page, and one page to record.

use crate::model::{BodyRef, HostStats, PageId, QueueKey, QueuedUrl, StoredPage};

/// The exact-duplicate hashes of one recorded page (see [`Store::iter_hashes`](super::Store::iter_hashes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHashes {
    /// The page.
    pub id: PageId,
    /// BLAKE3 of its raw body, when it had one.
    pub body: Option<[u8; 32]>,
    /// BLAKE3 of its normalized text, when it had text.
    pub text: Option<[u8; 32]>,
}

/// One page to record with [`Store::complete_many`](super::Store::complete_many).
#[derive(Debug, Clone, Copy)]
pub struct Completion<'a> {
    /// The in-flight URL.
    pub url: &'a QueuedUrl,
    /// The key of its queue entry in the store: `url.key()` unless the
    /// frontier moved it up in memory after storing it.
    pub key: QueueKey,
    /// Its page (id from [`Store::allocate_page_id`](super::Store::allocate_page_id)).
    pub page: &'a StoredPage,
    /// Where its body is kept in the WARC files (`output.warc`).
    pub body: Option<BodyRef>,
    /// The URL's host stats with this page counted.
    pub host: &'a HostStats,
}
