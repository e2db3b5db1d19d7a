//! The vocabulary every stage shares, with no dependency on any stage: page
//! ids, what a fetch attempt came to ([`Decision`], [`Verdict`],
//! [`FetchOutcome`]), the frontier's records ([`QueuedUrl`], [`UrlState`],
//! [`ScoreComponents`]), the stored page and host counts, and the layout of a
//! crawl's output directory ([`CrawlDir`]).
//!
//! Stages import these types from here, so a record type never pulls in the
//! stage that produces it.

mod decision;
mod layout;
mod page;
mod queue;

pub use decision::{Change, Decision, FetchOutcome, NearMatch, ParentDup, Verdict};
pub use layout::CrawlDir;
pub use page::{BodyRef, HostStats, Revisit, StoredPage};
pub use queue::{priority_rank, QueueKey, QueuedUrl, ScoreComponents, UrlState};

/// A page's number: monotonically increasing in the order pages are decided.
pub type PageId = u64;
