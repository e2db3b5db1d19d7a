//! The compact record of one recorded page and the per-host counts built
//! from them.

use super::{Change, Decision, PageId};

/// The compact record of one fetch attempt kept in the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredPage {
    /// Page id (from [`Store::allocate_page_id`](crate::store::Store::allocate_page_id)).
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
    /// What revisits need: validators, interval and change counts.
    pub revisit: Revisit,
}

/// The recrawl state of a recorded page (see `crate::recrawl`): kept in its
/// record and carried from fetch to fetch of the same URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revisit {
    /// The `ETag` of the last 200 answer, as sent by the server.
    pub etag: Option<String>,
    /// The `Last-Modified` of the last 200 answer, as sent by the server.
    pub last_modified: Option<String>,
    /// The revisit interval in seconds after the last fetch; 0 = not yet
    /// adapted (`[recrawl] initial_interval_secs` applies).
    pub interval_secs: u64,
    /// Fetches of this URL recorded in this page (1 for a first fetch;
    /// the crawl log holds one line per fetch).
    pub fetches: u32,
    /// Revisits that found the page `changed`.
    pub changes: u32,
    /// What the last fetch found, when it was a revisit.
    pub change: Option<Change>,
}

impl StoredPage {
    /// Whether a recrawl round may revisit this page: its last fetch got
    /// content (a verdict or `noindex`) or a 304.
    pub fn revisitable(&self) -> bool {
        matches!(
            self.decision,
            Decision::New | Decision::ExactDuplicate | Decision::NearDuplicate | Decision::Noindex
        )
    }
}

/// Where a page's body is kept (`output.warc`): the gzip member of the
/// WARC record that holds it, in `DIR/warc/simcrawl-NNNNN.warc.gz` — the
/// page's own `response` record, or for a `revisit` the response record of
/// the identical body it refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyRef {
    /// The file's number `NNNNN`.
    pub file: u32,
    /// Offset of the record's gzip member in the file.
    pub offset: u64,
    /// Compressed length of the gzip member.
    pub length: u64,
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
