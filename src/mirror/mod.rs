//! Mirror detection (pipeline: at the end of a crawl for the reports, and
//! online beside the frontier): host and host+path-prefix pairs whose pages at
//! the same relative path are exact or near duplicates.
//!
//! Following the definition in the USC deduplication lecture, `Host1/α` and
//! `Host2/β` are mirrors when for all (or most) paths `p`, `Host1/α/p` and
//! `Host2/β/p` both exist with identical or near-identical content.
//!
//! Offline ([`detect`]): pages with content are grouped by content (union-find
//! over the crawl's duplicate decisions and equal body/text hashes). Candidate
//! pairs are never formed by comparing all host pairs: each duplicate match
//! `(url1, url2)` on two hosts yields one candidate `(host1, α, host2, β)`, the
//! prefixes being what is left of the two paths after removing their longest
//! common suffix of path segments (`/news/x.html` vs `/mirror/news/x.html` →
//! α = `/`, β = `/mirror/`). Each distinct candidate is then verified by
//! walking the smaller of the two subtrees and looking up the counterpart of
//! every page, narrowed to the deepest directory holding all the matches, and
//! classified (see [`MirrorKind`]). Hosts joined by mirror pairs form mirror
//! sets (union-find) with a suggested canonical host.
//!
//! Online ([`OnlineMirrors`]): the same candidates are counted incrementally as
//! pages are decided, with map lookups only (no scans), so the frontier can demote
//! URLs of an established mirror whose counterpart is already known.
//!
//! Offline detection reads the log as a [`LogDigest`] (`digest.rs`): one
//! compact entry per record, URLs interned once, hashes as fixed-size keys,
//! so a report never holds the log's records; [`detect`] takes records in
//! memory and builds the digest itself.
//!
//! Files: this one (the report's types, [`detect`] and [`detect_in`]),
//! `digest.rs` ([`LogDigest`]), `verify.rs` (the page table, candidate pairs
//! and their verification and classification), `online.rs`
//! ([`OnlineMirrors`]).

mod digest;
mod online;
#[cfg(test)]
mod tests;
mod verify;

pub use digest::{HashKey, HostFacts, LogDigest, PageDigest, Strings, TimeKey, Times};
pub use online::{OnlineMirrors, OnlineStats, MEM_PAGES as ONLINE_MEM_PAGES};
use verify::*;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::config::MirrorSettings;
use crate::crawllog::PageRecord;
use crate::host::split_url;
use crate::model::Decision;

/// How much of two hosts a verified pair covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MirrorKind {
    /// Both prefixes are `/`: the whole hosts mirror each other (score,
    /// coverage and sample size at or above the thresholds).
    Full,
    /// A subtree on at least one side (a prefix other than `/`) mirrors the
    /// other side (same thresholds).
    Partial,
    /// Some same-path pages match, but below the score, coverage or sample
    /// thresholds: shared content rather than a mirror.
    Overlap,
}

impl MirrorKind {
    /// The JSON/CSV spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorKind::Full => "full",
            MirrorKind::Partial => "partial",
            MirrorKind::Overlap => "overlap",
        }
    }

    /// Whether this is a mirror (full or partial), not mere overlap.
    pub fn is_mirror(self) -> bool {
        !matches!(self, MirrorKind::Overlap)
    }
}

/// How one compared path matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// Same body or same normalized text (or an exact-duplicate decision).
    Exact,
    /// In the same near-duplicate cluster.
    Near,
    /// Both sides exist but the content differs.
    Differ,
}

/// One example of a compared path: the two URLs side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamplePair {
    /// The path relative to the prefixes.
    pub path: String,
    /// Canonical URL on side A.
    pub url_a: String,
    /// Canonical URL on side B.
    pub url_b: String,
    /// How the two pages matched.
    #[serde(rename = "match")]
    pub matched: MatchKind,
    /// Hamming distance of their simhashes, when both have one.
    pub distance: Option<u32>,
}

/// One verified host (prefix) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MirrorPair {
    /// Host (authority) of side A: the side holding more of the originals.
    pub host_a: String,
    /// Path prefix on side A, starting and ending with `/`.
    pub prefix_a: String,
    /// Host (authority) of side B: the side holding more of the duplicates.
    pub host_b: String,
    /// Path prefix on side B.
    pub prefix_b: String,
    /// Classification.
    pub kind: MirrorKind,
    /// Relative paths present (with content) on both sides.
    pub compared: u64,
    /// Compared paths whose pages are exact duplicates.
    pub exact: u64,
    /// Compared paths whose pages are near duplicates.
    pub near: u64,
    /// Compared paths whose pages differ.
    pub differ: u64,
    /// Pages under A's prefix with no fetched counterpart under B's.
    pub only_a: u64,
    /// Pages under B's prefix with no fetched counterpart under A's.
    pub only_b: u64,
    /// (exact + near) / compared.
    pub score: f64,
    /// compared / (pages in scope on the larger side): how much of both
    /// sides the comparison covers.
    pub coverage: f64,
    /// Duplicate matches that proposed this pair (its evidence).
    pub support: u64,
    /// Up to [`MAX_EXAMPLES`] compared paths, matches first.
    pub examples: Vec<ExamplePair>,
}

/// A mirror pair between two copies of one original host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpliedPair {
    /// Host of side A.
    pub host_a: String,
    /// Path prefix on side A.
    pub prefix_a: String,
    /// Host of side B.
    pub host_b: String,
    /// Path prefix on side B.
    pub prefix_b: String,
    /// Classification (full or partial).
    pub kind: MirrorKind,
    /// (exact + near) / compared.
    pub score: f64,
    /// The original host both sides mirror.
    pub via: String,
}

/// A group of hosts joined by mirror pairs, with the host to keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MirrorSet {
    /// Member hosts, sorted.
    pub hosts: Vec<String>,
    /// The lowest score of the mirror pairs joining the members: a set is
    /// only as good as its weakest pair.
    #[serde(default)]
    pub score: f64,
    /// The suggested canonical host (see [`CANONICAL_RULE`]).
    pub canonical: String,
    /// In-links from other hosts per member, same order as `hosts`.
    pub inlinks: Vec<u64>,
}

/// The rule used to pick [`MirrorSet::canonical`].
pub const CANONICAL_RULE: &str =
    "most in-links from other hosts (parents of fetched pages), then first crawled, then shortest name";

/// How many example pairs each [`MirrorPair`] keeps.
pub const MAX_EXAMPLES: usize = 5;

/// The mirror report of one crawl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MirrorReport {
    /// Thresholds used (from `[mirror]`).
    pub min_sample: u32,
    /// Score threshold used.
    pub min_score: f64,
    /// Coverage threshold used (of each side).
    #[serde(default)]
    pub min_coverage: f64,
    /// Pages with content that took part (2xx with a hash or fingerprint).
    pub pages: u64,
    /// Distinct hosts with content.
    pub hosts: u64,
    /// Duplicate matches across hosts (the candidate source).
    pub matches: u64,
    /// Distinct candidate pairs verified.
    pub candidates: u64,
    /// Verified pairs: mirrors (full, partial) first, then overlap; by score.
    pub pairs: Vec<MirrorPair>,
    /// Mirror pairs between two copies of the same original, left out of
    /// `pairs` (they follow from the two pairs with the original).
    pub implied: Vec<ImpliedPair>,
    /// Mirror sets (from full and partial pairs), largest first.
    pub sets: Vec<MirrorSet>,
    /// How `sets[].canonical` was chosen.
    pub canonical_rule: String,
}

/// The prefixes of two paths left after removing their longest common suffix
/// of path segments, or None when they share no segment (different file
/// names: no alignment). `/news/x.html`, `/mirror/news/x.html` → (`/`, `/mirror/`).
pub fn align_prefixes<'a>(path1: &'a str, path2: &'a str) -> Option<(&'a str, &'a str)> {
    let (p1, p2) = (path1.as_bytes(), path2.as_bytes());
    if p1.first() != Some(&b'/') || p2.first() != Some(&b'/') {
        return None;
    }
    // Walk back over whole segments while both sides agree.
    let (mut i, mut j) = (p1.len(), p2.len());
    let mut cut = None;
    loop {
        let s1 = path1[..i].rfind('/')?;
        let s2 = path2[..j].rfind('/')?;
        if path1[s1..i] != path2[s2..j] {
            break;
        }
        cut = Some((s1 + 1, s2 + 1));
        if s1 == 0 || s2 == 0 {
            break;
        }
        i = s1;
        j = s2;
    }
    let (c1, c2) = cut?;
    Some((&path1[..c1], &path2[..c2]))
}

/// Whether a record is a page with content that can take part in matching.
pub fn has_content(r: &PageRecord) -> bool {
    (200..300).contains(&r.status)
        && !matches!(
            r.decision,
            Decision::Redirect | Decision::Error | Decision::Disallowed | Decision::TooLarge
        )
        && (r.content_hash.is_some() || r.text_hash.is_some() || r.simhash.is_some())
}

pub use crate::sketch::UnionFind;

/// Find the mirror host (prefix) pairs of a crawl from its records alone
/// (records in memory: [`detect_in`] of their [`LogDigest`]).
pub fn detect(records: &[PageRecord], settings: &MirrorSettings) -> MirrorReport {
    detect_in(&LogDigest::from_records(records), settings)
}

/// Find the mirror host (prefix) pairs of a crawl from its log's digest.
///
/// Runs in O(P log P + M + C·S log P) for P pages, M duplicate matches, C
/// distinct candidates and S pages in the smaller subtree of a candidate: no
/// pair of hosts is compared unless they share at least one duplicate.
pub fn detect_in(log: &LogDigest, settings: &MirrorSettings) -> MirrorReport {
    let (table, edges) = PageTable::build(log);
    // Candidates, with the number of matches supporting each.
    let mut support: HashMap<Candidate, u64> = HashMap::new();
    let mut matches = 0u64;
    for &(x, y) in &edges {
        if let Some(c) = candidate(&table, x, y) {
            matches += 1;
            *support.entry(c).or_insert(0) += 1;
        }
    }
    let mut candidates: Vec<(Candidate, u64)> = support.into_iter().collect();
    candidates.sort_unstable();
    let total_candidates = candidates.len() as u64;

    // Verify, narrow each to the deepest common directory of its matches,
    // verify the narrowed pair; keep one result per distinct pair.
    let mut results: BTreeMap<Candidate, (Verified, u64)> = BTreeMap::new();
    for (c, sup) in candidates {
        let v = verify(&table, &c);
        let dir = common_dir(&v.matched_rel).to_string();
        let (c, v) = if dir.is_empty() {
            (c, v)
        } else {
            let narrowed = Candidate {
                prefix_a: format!("{}{dir}", c.prefix_a),
                prefix_b: format!("{}{dir}", c.prefix_b),
                ..c
            };
            let v = verify(&table, &narrowed);
            (narrowed, v)
        };
        if v.exact + v.near == 0 {
            continue;
        }
        results.entry(c).and_modify(|(_, s)| *s += sup).or_insert((v, sup));
    }

    let mut pairs: Vec<MirrorPair> = results
        .into_iter()
        .map(|(c, (v, sup))| {
            let (kind, score, coverage) = classify(&v, &c, settings);
            let name = |h: u32| table.host_names[h as usize].to_string();
            let mut pair = MirrorPair {
                host_a: name(c.host_a),
                prefix_a: c.prefix_a.clone(),
                host_b: name(c.host_b),
                prefix_b: c.prefix_b.clone(),
                kind,
                compared: v.compared,
                exact: v.exact,
                near: v.near,
                differ: v.compared - v.exact - v.near,
                only_a: v.only_a,
                only_b: v.only_b,
                score,
                coverage,
                support: sup,
                examples: v.examples,
            };
            if v.originals_on_b > v.originals_on_a {
                swap_sides(&mut pair);
            }
            pair
        })
        .collect();
    pairs.sort_by(|x, y| {
        (
            x.kind,
            y.score,
            y.compared,
            &x.host_a,
            &x.prefix_a,
            &x.host_b,
            &x.prefix_b,
        )
            .partial_cmp(&(
                y.kind,
                x.score,
                x.compared,
                &y.host_a,
                &y.prefix_a,
                &y.host_b,
                &y.prefix_b,
            ))
            .unwrap_or(std::cmp::Ordering::Equal)
    });

    let sets = mirror_sets(log, &pairs);
    let (pairs, implied) = split_implied(pairs);
    MirrorReport {
        min_sample: settings.min_sample,
        min_score: settings.min_score,
        min_coverage: settings.min_coverage,
        pages: table.pages.len() as u64,
        hosts: table.host_names.len() as u64,
        matches,
        candidates: total_candidates,
        pairs,
        implied,
        sets,
        canonical_rule: CANONICAL_RULE.to_string(),
    }
}

/// Move out mirror pairs between two copies of the same original: when X and
/// Y both mirror Z (Z on side A of both pairs), the pair X~Y follows from them.
fn split_implied(pairs: Vec<MirrorPair>) -> (Vec<MirrorPair>, Vec<ImpliedPair>) {
    let mut originals: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in pairs.iter().filter(|p| p.kind.is_mirror()) {
        originals.entry(&p.host_b).or_default().push(&p.host_a);
    }
    let via = |p: &MirrorPair| -> Option<String> {
        if !p.kind.is_mirror() {
            return None;
        }
        let (of_a, of_b) = (originals.get(p.host_a.as_str())?, originals.get(p.host_b.as_str())?);
        of_a.iter().filter(|z| of_b.contains(z)).min().map(|z| z.to_string())
    };
    let vias: Vec<Option<String>> = pairs.iter().map(via).collect();
    let mut kept = Vec::new();
    let mut implied = Vec::new();
    for (p, v) in pairs.into_iter().zip(vias) {
        match v {
            Some(via) => implied.push(ImpliedPair {
                host_a: p.host_a,
                prefix_a: p.prefix_a,
                host_b: p.host_b,
                prefix_b: p.prefix_b,
                kind: p.kind,
                score: p.score,
                via,
            }),
            None => kept.push(p),
        }
    }
    (kept, implied)
}

fn swap_sides(p: &mut MirrorPair) {
    std::mem::swap(&mut p.host_a, &mut p.host_b);
    std::mem::swap(&mut p.prefix_a, &mut p.prefix_b);
    std::mem::swap(&mut p.only_a, &mut p.only_b);
    for e in &mut p.examples {
        std::mem::swap(&mut e.url_a, &mut e.url_b);
    }
}

/// Mirror sets from the mirror pairs, strongest pair first; canonical host
/// per set. Two sets are joined by a pair only when no verified pair between
/// their members says "not a mirror" (overlap): X mirrors Y and Y mirrors Z
/// does not make X and Z one set when X and Z were compared and differ.
fn mirror_sets(log: &LogDigest, pairs: &[MirrorPair]) -> Vec<MirrorSet> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut uf = UnionFind::default();
    let mut mirrors: Vec<&MirrorPair> = pairs.iter().filter(|p| p.kind.is_mirror()).collect();
    mirrors.sort_by(|x, y| y.score.total_cmp(&x.score));
    for p in &mirrors {
        ids.entry(p.host_a.as_str()).or_insert_with(|| uf.push());
        ids.entry(p.host_b.as_str()).or_insert_with(|| uf.push());
    }
    // Host pairs that were compared and found not to mirror each other.
    let apart: Vec<(usize, usize)> = pairs
        .iter()
        .filter(|p| !p.kind.is_mirror())
        .filter_map(|p| Some((*ids.get(p.host_a.as_str())?, *ids.get(p.host_b.as_str())?)))
        .collect();
    let mut weakest: HashMap<usize, f64> = HashMap::new();
    for p in &mirrors {
        let (a, b) = (uf.find(ids[p.host_a.as_str()]), uf.find(ids[p.host_b.as_str()]));
        if a == b {
            continue;
        }
        let conflict = apart.iter().any(|&(x, y)| {
            let (x, y) = (uf.find(x), uf.find(y));
            (x == a && y == b) || (x == b && y == a)
        });
        if conflict {
            continue;
        }
        let score = [weakest.get(&a), weakest.get(&b), Some(&p.score)]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, |m, &s| m.min(s));
        uf.union(a, b);
        weakest.insert(uf.find(a), score);
    }
    if ids.is_empty() {
        return Vec::new();
    }
    // In-links from other hosts and first fetch time per member host.
    let facts = |h: &str| log.hosts.find(h).map(|id| log.host_facts[id as usize]);
    let mut groups: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut hosts: Vec<(&str, usize)> = ids.iter().map(|(h, i)| (*h, *i)).collect();
    hosts.sort_unstable();
    for (h, i) in hosts {
        groups.entry(uf.find(i)).or_default().push(h);
    }
    let mut sets: Vec<MirrorSet> = groups
        .into_iter()
        .filter(|(_, hosts)| hosts.len() > 1)
        .map(|(root, hosts)| {
            let links: Vec<u64> = hosts.iter().map(|h| facts(h).map_or(0, |f| f.inlinks)).collect();
            let first = |h: &str| facts(h).map(|f| f.first_fetched);
            let canonical = hosts
                .iter()
                .zip(&links)
                .min_by(|(h1, l1), (h2, l2)| {
                    l2.cmp(l1)
                        .then_with(|| match (first(h1), first(h2)) {
                            (Some(a), Some(b)) => log.times.cmp(a, b),
                            (a, b) => a.is_some().cmp(&b.is_some()),
                        })
                        .then_with(|| h1.len().cmp(&h2.len()))
                        .then_with(|| h1.cmp(h2))
                })
                .map(|(h, _)| h.to_string())
                .unwrap_or_default();
            MirrorSet {
                hosts: hosts.iter().map(|h| h.to_string()).collect(),
                score: weakest.get(&root).copied().unwrap_or(0.0),
                canonical,
                inlinks: links,
            }
        })
        .collect();
    sets.sort_by(|a, b| b.hosts.len().cmp(&a.hosts.len()).then_with(|| a.hosts.cmp(&b.hosts)));
    sets
}
