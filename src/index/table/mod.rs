//! Live permuted tables (Manku §3.1): the index the crawl engine asks "is
//! there a stored fingerprint within k of this page's simhash?" while it keeps
//! inserting the fingerprints of new pages.
//!
//! # Layout
//!
//! A [`LiveIndex`] (`live`) is three layers, each holding the same t tables:
//!
//! - the **main run** (`Run`, `run`, immutable, shared by `Arc`): per table a sorted
//!   packed array of *permuted, distinct* fingerprints (`packed`: only the
//!   bits below the directory are kept: 6 bytes per entry from 2^18
//!   fingerprints, 5 from 2^26) and a
//!   directory of `u32` offsets on the top `b` permuted bits (about 4 to 8
//!   entries per bucket), so a probe is one directory read plus one short
//!   scan. Table 0 also keeps, parallel to its keys, the page id of each
//!   fingerprint (`Ids`: 4 bytes while every id fits in 32 bits, widened to
//!   8 bytes on the first id that does not). A match found in table i > 0
//!   gets its id by one exact probe of table 0 — matches are rare, so ids
//!   cost 4 bytes per fingerprint once, not once per table. After
//!   [`LiveIndex::spill_to`] (what a crawl does) the packed entries and
//!   ids of every run built are in unlinked files, read with one positioned
//!   read per table and probe (and one per match for its id); only the
//!   directories stay in memory, coarser than an in-memory table's (about
//!   32 to 64 entries per bucket).
//! - at most one **frozen delta** being merged into the main run by a
//!   background thread;
//! - the **live delta** (`Delta`, `delta`): fingerprints and ids in insertion order,
//!   and per table a hash of 64-byte bucket lines on the table's prefix bits
//!   (a header word and up to 7 fingerprints inline, spill lines beyond), and
//!   an open-addressing set of its fingerprints for the existence check and
//!   the ids of matches: O(1) insert per table, one cache line per table per
//!   probe, the t lines and the set slot prefetched together so their cache
//!   misses overlap, no allocation except amortized growth.
//!
//! Duplicate fingerprints (many pages with one simhash, e.g. empty pages = 0)
//! are stored once in every table; the other ids go to a side map `extras`,
//! read only when that fingerprint matches. A crowd of equal fingerprints so
//! never lengthens a probe.
//!
//! # Concurrency
//!
//! One `parking_lot::RwLock` guards the layers. `insert` (one writer at a time,
//! the crawl engine's single inserting task) takes the write lock for about a
//! microsecond; `query` takes the read lock for the duration of one query, so
//! many readers run in parallel and every insert is visible to every query that
//! starts after `insert` returns. When the live delta reaches
//! `max(2^14, n / 8)` entries it is frozen (moved, O(1)) and a background
//! thread merges it into a new main run, installed under the write lock.
//! Once the runs are on disk the delta freezes at 2^14 entries
//! (`SPILLED_DELTA`) whatever n, and a second sealed run, the **recent
//! run**, takes the merges until it holds an eighth of the main run, when
//! both merge into a new main run: the heap holds a fixed delta, and the
//! merges re-encode about 9 + n / 2^18 entries per table per insert.
//!
//! # Exactness
//!
//! A stored fingerprint c is reported by table i only if i is the *first*
//! table whose prefix c shares with the query (`(c ^ q) & mask_j == 0`), so
//! each match is reported once even though several tables see it, and the
//! design's covering property ([`Design::covers`]) guarantees some table sees
//! every c within k. Distances are exact popcounts; nothing beyond k is
//! returned.
//!
//! # Files
//!
//! - this file: [`Match`], the `Geometry` every layer shares, and the
//!   memory helpers (`huge_vec`, `prefetch`);
//! - `packed`: one sealed table (`Table`), its builder, and where its
//!   entries are (in memory or in a file);
//! - `ids`: the page ids of a run, 32 or 64 bits wide, in memory or in a file;
//! - `run`: a sealed run of t tables, its merge and its probes;
//! - `delta`: the mutable layer of bucket lines;
//! - `live`: [`LiveIndex`], locking, the background merge, snapshots;
//! - `tests.rs`: the index against brute force (proptest) and the layers'
//!   edge cases.

mod delta;
mod ids;
mod live;
mod packed;
mod run;
#[cfg(test)]
mod tests;

pub(crate) use delta::Delta;
pub(crate) use ids::Ids;
pub use live::{LiveIndex, ProbeStats, MIN_DELTA};
pub(crate) use packed::{Table, TableBuilder};
pub(crate) use run::Run;

use super::design::{Design, TableSpec};

/// One answer of a query: a stored fingerprint, one page id it was inserted
/// with, and its Hamming distance from the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// The stored fingerprint.
    pub fp: u64,
    /// The page id it was inserted with (one match per id).
    pub id: u64,
    /// Hamming distance from the query.
    pub distance: u32,
}

/// Bytes after the last packed entry, so an unaligned 8-byte load of any
/// entry stays inside the allocation.
const PAD: usize = 8;

/// A vector with room for `cap` items whose large middle is backed by
/// transparent huge pages where the kernel allows it (`madvise`): a probe
/// touches ~2 random lines per table, and with 4 KiB pages each would also
/// miss the TLB.
pub(crate) fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(cap);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = cap * std::mem::size_of::<T>();
        if bytes >= 2 * HUGE {
            let start = v.as_ptr() as usize;
            let lo = start.next_multiple_of(HUGE);
            let hi = (start + bytes) / HUGE * HUGE;
            if hi > lo {
                // SAFETY: the range lies inside this vector's allocation;
                // MADV_HUGEPAGE only changes how pages are backed, not contents.
                unsafe {
                    libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
                }
            }
        }
    }
    v
}

/// A hint to fetch the cache line at `p` (any address; never faults).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The geometry shared by every layer: table specs, prefix masks, k.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    pub(crate) specs: Vec<TableSpec>,
    masks: Vec<u64>,
    pub(crate) k: u32,
}

impl Geometry {
    pub(crate) fn new(design: &Design, k: u32) -> Geometry {
        let specs = design.specs().to_vec();
        let masks = specs.iter().map(|s| s.prefix_mask()).collect();
        Geometry { specs, masks, k }
    }

    /// The first table whose prefix the two fingerprints with XOR `x` share.
    #[inline]
    fn first_table(&self, x: u64) -> usize {
        self.masks.iter().position(|&m| x & m == 0).unwrap_or(usize::MAX)
    }
}

/// Tables probed together in one prefetch round (bounds stack arrays).
const ROUND: usize = 16;
