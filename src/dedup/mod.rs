//! Dedup decisions (pipeline: after the simhash, before the frontier
//! update): new / exact duplicate / near duplicate, and the policy that turns
//! a decision into out-link treatment.
//!
//! - this file: the ordered decision procedure over lookups already made
//!   ([`decide`], a [`Ruling`]) and what a ruling means for the page's
//!   out-links (`[dedup] policy` and penalties, [`DedupPolicyEngine`]);
//! - `exact.rs`: exact content hashes, the in-memory exact-hash index and the
//!   cache of decided content;
//! - `online.rs`: the [`Deduper`] that owns the exact index, the near-duplicate
//!   index and the content sketches, and decides each page as it arrives;
//! - `shared_exact.rs`: the exact-hash maps of a crawl several worker
//!   processes share, in the store ([`SharedExact`]);
//! - `replica.rs`: its mutations as entries of a log the worker processes of
//!   one crawl share ([`Op`]), and the [`Replica`] / [`SharedReplica`] that
//!   record and apply them.

mod exact;
mod online;
mod owners;
pub mod replica;
mod shared_exact;

pub(crate) use exact::hex;
pub use exact::{ContentHashes, ExactIndex, KnownContent};
pub use online::{Deduper, Judgement};
pub use replica::{Fate, ReplicaError, SharedReplica};
pub use shared_exact::SharedExact;

use crate::config::{DedupPolicy, DedupSettings, Settings};
use crate::model::{Decision, NearMatch, PageId, ParentDup, Verdict};

/// A content verdict with what it points at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ruling {
    /// New, exact duplicate or near duplicate.
    pub verdict: Verdict,
    /// The original page for a duplicate.
    pub dup_of: Option<PageId>,
    /// Hamming distance to `dup_of` (0 for exact duplicates).
    pub distance: Option<u32>,
    /// The confirmed shingle resemblance to `dup_of` (near duplicates
    /// decided with `[dedup] verify`).
    pub resemblance: Option<f64>,
}

impl Ruling {
    /// New content: no original.
    pub fn new_content() -> Self {
        Ruling {
            verdict: Verdict::New,
            dup_of: None,
            distance: None,
            resemblance: None,
        }
    }

    /// The duplicate status this page passes to its out-links (a confirmed
    /// near duplicate whose fingerprint lies beyond k counts as at k in
    /// [`parent_dup_penalty`]).
    pub fn parent_dup(&self) -> ParentDup {
        match (self.verdict, self.distance) {
            (Verdict::ExactDuplicate, _) => ParentDup::Exact,
            (Verdict::NearDuplicate, Some(d)) => ParentDup::Near(d),
            _ => ParentDup::None,
        }
    }

    /// The record's decision.
    pub fn decision(&self) -> Decision {
        self.verdict.into()
    }
}

/// The ordered decision procedure for one fetched page, as a pure function
/// over lookups already made: exact body hash match, then exact text hash
/// match, then the near-duplicate index's matches within `k` (the nearest
/// wins; among equally near ones the earliest-crawled, i.e. smallest page id,
/// is the original). The exact URL check happens before the fetch (seen-set).
pub fn decide(body_match: Option<PageId>, text_match: Option<PageId>, near: &[NearMatch], k: u32) -> Ruling {
    if let Some(of) = body_match.or(text_match) {
        return Ruling {
            verdict: Verdict::ExactDuplicate,
            dup_of: Some(of),
            distance: Some(0),
            resemblance: None,
        };
    }
    match near
        .iter()
        .filter(|m| m.distance <= k)
        .min_by_key(|m| (m.distance, m.page))
    {
        Some(m) => Ruling {
            verdict: Verdict::NearDuplicate,
            dup_of: Some(m.page),
            distance: Some(m.distance),
            resemblance: None,
        },
        None => Ruling::new_content(),
    }
}

/// Priority penalty (≥ 0) passed to the out-links of a page with this status
/// (a distance above k counts as k: the page was confirmed a near duplicate):
/// `exact_penalty` for an exact duplicate, `near_penalty × (k + 1 − d) / (k + 1)`
/// for a near duplicate at distance d ≤ k (the closer the copy, the larger).
pub fn parent_dup_penalty(dup: ParentDup, k: u32, s: &DedupSettings) -> f64 {
    match dup {
        ParentDup::None => 0.0,
        ParentDup::Exact => s.exact_penalty,
        ParentDup::Near(d) => {
            let d = d.min(k);
            s.near_penalty * f64::from(k + 1 - d) / f64::from(k + 1)
        }
    }
}

/// Whether a page's out-links are followed under `policy`: all but the
/// duplicates under `drop`.
pub fn follow_links(decision: Decision, policy: DedupPolicy) -> bool {
    !(policy == DedupPolicy::Drop && decision.is_duplicate())
}

/// `[dedup]` applied to verdicts: which out-links are followed and with what
/// parent status (under `keep` duplicates pass on no penalty).
#[derive(Debug, Clone)]
pub struct DedupPolicyEngine {
    settings: DedupSettings,
    k: u32,
}

impl DedupPolicyEngine {
    /// From the `[dedup]` and `[simhash]` settings.
    pub fn new(settings: &Settings) -> Self {
        DedupPolicyEngine {
            settings: settings.dedup.clone(),
            k: settings.simhash.k,
        }
    }

    /// `None` when the page's out-links are not followed; otherwise the
    /// parent status to give them (see [`crate::frontier::Candidate`]).
    pub fn out_links(&self, ruling: &Ruling) -> Option<ParentDup> {
        match self.settings.policy {
            _ if !follow_links(ruling.decision(), self.settings.policy) => None,
            DedupPolicy::Keep => Some(ParentDup::None),
            _ => Some(ruling.parent_dup()),
        }
    }

    /// The penalty for a parent status (0 under `keep`).
    pub fn penalty(&self, dup: ParentDup) -> f64 {
        match self.settings.policy {
            DedupPolicy::Keep => 0.0,
            _ => parent_dup_penalty(dup, self.k, &self.settings),
        }
    }
}

#[cfg(test)]
mod policy_tests {
    use super::*;

    #[test]
    fn decision_order_body_text_near() {
        let near = [
            NearMatch { page: 9, distance: 2 },
            NearMatch { page: 4, distance: 1 },
            NearMatch { page: 3, distance: 1 },
            NearMatch { page: 1, distance: 5 },
        ];
        assert_eq!(decide(Some(5), Some(6), &near, 3).dup_of, Some(5));
        let v = decide(None, Some(6), &near, 3);
        assert_eq!(
            (v.verdict, v.dup_of, v.distance),
            (Verdict::ExactDuplicate, Some(6), Some(0))
        );
        let v = decide(None, None, &near, 3);
        assert_eq!(
            (v.verdict, v.dup_of, v.distance),
            (Verdict::NearDuplicate, Some(3), Some(1))
        );
        // Matches beyond k are ignored.
        assert_eq!(decide(None, None, &near[3..], 3), Ruling::new_content());
        assert_eq!(decide(None, None, &[], 3).parent_dup(), ParentDup::None);
        assert_eq!(v.parent_dup(), ParentDup::Near(1));
    }

    #[test]
    fn near_penalty_grows_as_distance_shrinks() {
        let s = Settings::default();
        let k = s.simhash.k;
        let p: Vec<f64> = (0..=k)
            .map(|d| parent_dup_penalty(ParentDup::Near(d), k, &s.dedup))
            .collect();
        assert_eq!(p[0], s.dedup.near_penalty);
        assert!(p.windows(2).all(|w| w[0] > w[1]), "{p:?}");
        // A confirmed near duplicate beyond k (found through its shingles)
        // still passes on the smallest near penalty.
        let beyond = parent_dup_penalty(ParentDup::Near(k + 5), k, &s.dedup);
        assert_eq!(beyond, p[k as usize]);
        assert!(beyond > 0.0);
        assert_eq!(parent_dup_penalty(ParentDup::Exact, k, &s.dedup), s.dedup.exact_penalty);
        assert_eq!(parent_dup_penalty(ParentDup::None, k, &s.dedup), 0.0);
    }

    #[test]
    fn policy_controls_out_links() {
        let dup = Ruling {
            verdict: Verdict::NearDuplicate,
            dup_of: Some(1),
            distance: Some(2),
            resemblance: None,
        };
        let new = Ruling::new_content();
        let engine =
            |p: &str| DedupPolicyEngine::new(&Settings::from_layers(&[], &[format!("dedup.policy={p}")]).unwrap());
        assert_eq!(engine("drop").out_links(&dup), None);
        assert_eq!(engine("drop").out_links(&new), Some(ParentDup::None));
        assert_eq!(engine("deprioritize").out_links(&dup), Some(ParentDup::Near(2)));
        assert!(engine("deprioritize").penalty(ParentDup::Near(2)) > 0.0);
        assert_eq!(engine("keep").out_links(&dup), Some(ParentDup::None));
        assert_eq!(engine("keep").penalty(ParentDup::Exact), 0.0);
        assert!(follow_links(Decision::Noindex, DedupPolicy::Drop));
    }

    #[test]
    fn exact_index_is_online_and_first_wins() {
        let mut ix = ExactIndex::new();
        assert_eq!(ix.check_and_insert(Some(&[1; 32]), Some(&[2; 32]), 1).unwrap(), None);
        let v = ix.check_and_insert(Some(&[9; 32]), Some(&[2; 32]), 2).unwrap().unwrap();
        assert_eq!((v.verdict, v.dup_of), (Verdict::ExactDuplicate, Some(1)));
        assert_eq!(ix.lookup(Some(&[9; 32]), None).unwrap(), (Some(2), None));
        assert_eq!(
            ix.check_and_insert(Some(&[1; 32]), None, 3).unwrap().unwrap().dup_of,
            Some(1)
        );
    }

    #[test]
    fn exact_index_loads_from_store() {
        use crate::model::HostStats;
        use crate::store::{MemStore, Store};
        let s = MemStore::new();
        let u = crate::store::test_suite::qurl("a.test", "x", 1.0, 1);
        s.enqueue(std::slice::from_ref(&u)).unwrap();
        let p = crate::store::test_suite::page(&s, &u, Decision::New);
        s.complete(&u, &p, None, &HostStats::default()).unwrap();
        let ix = ExactIndex::load(&s).unwrap();
        assert_eq!(
            ix.lookup(Some(&[1; 32]), Some(&[7; 32])).unwrap(),
            (Some(p.id), Some(p.id))
        );
    }
}
