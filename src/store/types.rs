//! The records the store holds (pipeline: written by the frontier, the
//! dedup decision and the crawl's page commit; read back on resume and by
//! the reports): queued URLs, seen-set states, pages, host statistics.

use crate::crawllog::ScoreComponents;
use crate::dedup::Decision;

/// A page's number: monotonically increasing in the order pages are decided.
pub type PageId = u64;
/// A queue entry's position: `rank` (inverted priority) then `seq`; smaller is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueKey {
    /// [`priority_rank`] of the priority.
    pub rank: u64,
    /// Discovery sequence number (unique).
    pub seq: u64,
}

/// Map a priority to a `u64` whose ascending order is the priority's
/// descending order (NaN sorts last).
pub fn priority_rank(priority: f64) -> u64 {
    if priority.is_nan() {
        return u64::MAX;
    }
    let b = priority.to_bits();
    let ascending = if b >> 63 == 1 { !b } else { b ^ (1 << 63) };
    !ascending
}

/// One URL waiting in the frontier, with its explainable priority.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedUrl {
    /// The URL as discovered (before canonicalization).
    pub url: String,
    /// Its canonical form: the seen-set key.
    pub canonical: String,
    /// The politeness key: host, with `:port` when the port is not the scheme's default.
    pub host: String,
    /// Link hops from a seed.
    pub depth: u32,
    /// Canonical URL of the page it was found on (None for seeds).
    pub parent: Option<String>,
    /// The priority's parts (see `[frontier]`).
    pub components: ScoreComponents,
    /// Weighted sum of the components: higher is fetched first.
    pub priority: f64,
    /// Discovery sequence number (FIFO among equal priorities).
    pub seq: u64,
    /// Fetch attempts so far that ended in a retryable failure.
    pub retries: u32,
    /// Known in-links (offers of this URL), starting at 1.
    pub inlinks: u32,
    /// Focused crawls: off-topic pages on the path to this URL since the
    /// last on-topic one (see [`crate::focus`]); 0 otherwise.
    pub tunnel: u32,
}

impl QueuedUrl {
    /// Its position in the host's queue.
    pub fn key(&self) -> QueueKey {
        QueueKey {
            rank: priority_rank(self.priority),
            seq: self.seq,
        }
    }
}

/// A canonical URL's state in the seen-set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlState {
    /// Waiting in its host's queue at this key.
    Queued(QueueKey),
    /// Handed to a worker (still in the queue until its page is recorded).
    InFlight(QueueKey),
    /// Fetched (or skipped) and recorded as this page.
    Done(PageId),
    /// Another name of this canonical URL (redirect hop or rel=canonical).
    AliasOf(String),
}

/// The compact record of one fetch attempt kept in the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredPage {
    /// Page id (from [`Store::allocate_page_id`](super::Store::allocate_page_id)).
    pub id: PageId,
    /// Canonical URL fetched.
    pub canonical: String,
    /// URL the content came from after redirects.
    pub final_url: String,
    /// HTTP status (0 when no response).
    pub status: u16,
    /// Link hops from a seed.
    pub depth: u32,
    /// What was decided.
    pub decision: Decision,
    /// The page this one duplicates.
    pub dup_of: Option<PageId>,
    /// Hamming distance to `dup_of`.
    pub distance: Option<u32>,
    /// 64-bit simhash (pages with text).
    pub simhash: Option<u64>,
    /// BLAKE3 of the body.
    pub content_hash: Option<[u8; 32]>,
    /// BLAKE3 of the normalized visible text.
    pub text_hash: Option<[u8; 32]>,
    /// Fetch start, milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// Body bytes read.
    pub bytes: u64,
}

/// Per-host counts behind the host duplicate-rate and novelty components.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Pages recorded (every fetch attempt).
    pub fetched: u64,
    /// Of which exact or near duplicates.
    pub duplicates: u64,
    /// Of which errors (network, 4xx/5xx, too large).
    pub errors: u64,
    /// Of which disallowed by robots.txt.
    pub disallowed: u64,
    /// Last fetch start, milliseconds since the Unix epoch.
    pub last_fetch_ms: u64,
}

impl HostStats {
    /// Duplicates / fetched (0 before the first fetch).
    pub fn dup_rate(&self) -> f64 {
        if self.fetched == 0 {
            0.0
        } else {
            self.duplicates as f64 / self.fetched as f64
        }
    }

    /// 1 / (1 + fetched): 1 for an unvisited host, falling as it is crawled.
    pub fn novelty(&self) -> f64 {
        1.0 / (1.0 + self.fetched as f64)
    }

    /// Count one recorded page.
    pub fn record(&mut self, page: &StoredPage) {
        self.fetched += 1;
        match page.decision {
            d if d.is_duplicate() => self.duplicates += 1,
            Decision::Error | Decision::TooLarge => self.errors += 1,
            Decision::Disallowed => self.disallowed += 1,
            _ => {}
        }
        self.last_fetch_ms = self.last_fetch_ms.max(page.fetched_at_ms);
    }
}

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
    /// The body, when bodies are stored.
    pub body: Option<&'a [u8]>,
    /// The URL's host stats with this page counted.
    pub host: &'a HostStats,
}
