//! The frontier's records: a queued URL, its position, its priority's
//! parts, and a URL's state in the seen-set.

use serde::{Deserialize, Serialize};

use super::PageId;

/// The parts of a URL's priority (weight x component each; see `[frontier]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreComponents {
    /// -depth.
    pub depth: f64,
    /// -(parent's duplicate penalty).
    pub parent_dup: f64,
    /// -(host duplicate rate so far).
    pub host_dup_rate: f64,
    /// 1 / (1 + pages fetched from the host).
    pub host_novelty: f64,
    /// Topic relevance (focused crawls; 0 otherwise).
    pub relevance: f64,
    /// ln(1 + known in-links).
    pub inlinks: f64,
    /// -(mirror penalty) when the URL's host is an established mirror.
    #[serde(default)]
    pub mirror: f64,
    /// Focused crawls: the relevance of the URL's host so far, 0..1 (0 otherwise).
    #[serde(default)]
    pub host_relevance: f64,
    /// Focused crawls: the relevance learned for the words of the URL's path, 0..1 (0 otherwise).
    #[serde(default)]
    pub url_relevance: f64,
    /// The URL's sitemap entry: priority plus freshness (see
    /// [`crate::sitemap`]); 0 for URLs in no sitemap.
    #[serde(default)]
    pub sitemap: f64,
}

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
    /// A recrawl's revisit of this recorded page (the URL's seen state
    /// stays `Done(page)` while it waits); None for a first fetch.
    pub revisit: Option<PageId>,
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
