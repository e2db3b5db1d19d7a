//! Duplicate clusters (reports stage): union-find over the crawl's exact and
//! near-duplicate decisions (each duplicate joined to its `dup_of`), each
//! cluster with its original, members, sizes and largest distance.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{csv_line, opt};
use crate::crawllog::PageRecord;
use crate::host::split_url;
use crate::mirror::{LogDigest, PageDigest, TimeKey, UnionFind};
use crate::model::Decision;

/// One member of a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Canonical URL.
    pub url: String,
    /// Its decision (`pages.jsonl` spelling), or "unknown" for an original
    /// absent from the log.
    pub decision: String,
    /// The page it was found to duplicate (null for the original).
    pub dup_of: Option<String>,
    /// Recorded Hamming distance to `dup_of`.
    pub distance: Option<u32>,
    /// Hamming distance of its simhash to the original's, when both known.
    pub distance_to_original: Option<u32>,
}

/// One cluster of duplicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// 1-based rank (largest first).
    pub id: u64,
    /// The original: the member that is not a duplicate, first fetched.
    pub original: String,
    /// Members (including the original).
    pub size: u64,
    /// Exact-duplicate members.
    pub exact: u64,
    /// Near-duplicate members.
    pub near: u64,
    /// Distinct hosts among the members.
    pub hosts: u64,
    /// Largest distance of a member to the original (recorded or computed).
    pub max_distance: u32,
    /// The members, original first, then by URL.
    pub members: Vec<Member>,
}

/// The clusters report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    /// Clusters (two or more members).
    pub clusters_count: u64,
    /// Pages in some cluster.
    pub pages_in_clusters: u64,
    /// Size of the largest cluster.
    pub largest: u64,
    /// Clusters, largest first.
    pub clusters: Vec<Cluster>,
}

/// Build the clusters from the records' duplicate decisions (records in
/// memory: [`build_in`] of their [`LogDigest`]).
pub fn build(records: &[PageRecord]) -> ClusterReport {
    build_in(&LogDigest::from_records(records))
}

/// Build the clusters from a crawl log's digest.
pub fn build_in(log: &LogDigest) -> ClusterReport {
    // The last record of each canonical URL, by URL id.
    let mut by_url: Vec<u32> = vec![u32::MAX; log.urls.len()];
    for (i, r) in log.pages.iter().enumerate() {
        by_url[r.canonical as usize] = i as u32;
    }
    let record = |u: u32| -> Option<&PageDigest> { log.pages.get(by_url[u as usize] as usize) };
    let mut ids: HashMap<u32, usize> = HashMap::new();
    let mut urls: Vec<u32> = Vec::new();
    let mut uf = UnionFind::default();
    for r in log.pages.iter().filter(|r| r.decision.is_duplicate()) {
        let Some(orig) = r.dup_of else {
            continue;
        };
        let a = intern(r.canonical, &mut ids, &mut urls, &mut uf);
        let b = intern(orig, &mut ids, &mut urls, &mut uf);
        uf.union(a, b);
    }
    let mut groups: HashMap<usize, Vec<u32>> = HashMap::new();
    for (i, u) in urls.iter().enumerate() {
        groups.entry(uf.find(i)).or_default().push(*u);
    }
    let fp = |u: u32| record(u).and_then(|r| r.simhash);
    let empty_time = log.times.find("");
    let mut clusters: Vec<Cluster> = groups
        .into_values()
        .filter(|g| g.len() >= 2)
        .map(|mut g| {
            // The original: not a duplicate, earliest fetched, then URL.
            g.sort_unstable_by(|a, b| log.url(*a).cmp(log.url(*b)));
            let key = |u: u32| {
                let r = record(u);
                (
                    r.is_some_and(|r| r.decision.is_duplicate()),
                    r.map(|r| r.fetched_at).or(empty_time),
                )
            };
            let time_cmp = |a: Option<TimeKey>, b: Option<TimeKey>| match (a, b) {
                (Some(a), Some(b)) => log.times.cmp(a, b),
                // No record and no record fetched at "": the empty text first.
                (a, b) => a.is_some().cmp(&b.is_some()),
            };
            let original = g
                .iter()
                .copied()
                .min_by(|&a, &b| {
                    let (ka, kb) = (key(a), key(b));
                    ka.0.cmp(&kb.0)
                        .then_with(|| time_cmp(ka.1, kb.1))
                        .then_with(|| log.url(a).cmp(log.url(b)))
                })
                .unwrap_or_default();
            let ofp = fp(original);
            let mut members: Vec<Member> = g
                .iter()
                .map(|&u| {
                    let r = record(u);
                    let not_original = u != original;
                    Member {
                        url: log.url(u).to_string(),
                        decision: r.map_or("unknown", |r| r.decision.as_str()).to_string(),
                        dup_of: r
                            .and_then(|r| r.dup_of)
                            .filter(|_| not_original)
                            .map(|d| log.url(d).to_string()),
                        distance: r.and_then(|r| r.distance).filter(|_| not_original),
                        distance_to_original: match (fp(u), ofp) {
                            (Some(a), Some(b)) => Some((a ^ b).count_ones()),
                            _ => None,
                        },
                    }
                })
                .collect();
            let original = log.url(original);
            members.sort_by(|a, b| (a.url != original, &a.url).cmp(&(b.url != original, &b.url)));
            let count = |d: Decision| members.iter().filter(|m| m.decision == d.as_str()).count() as u64;
            let mut hosts: Vec<&str> = g.iter().filter_map(|&u| split_url(log.url(u)).map(|x| x.0)).collect();
            hosts.sort_unstable();
            hosts.dedup();
            let max_distance = members
                .iter()
                .filter_map(|m| m.distance_to_original.or(m.distance))
                .max()
                .unwrap_or(0);
            Cluster {
                id: 0,
                original: original.to_string(),
                size: members.len() as u64,
                exact: count(Decision::ExactDuplicate),
                near: count(Decision::NearDuplicate),
                hosts: hosts.len() as u64,
                max_distance,
                members,
            }
        })
        .collect();
    clusters.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.original.cmp(&b.original)));
    for (i, c) in clusters.iter_mut().enumerate() {
        c.id = i as u64 + 1;
    }
    ClusterReport {
        clusters_count: clusters.len() as u64,
        pages_in_clusters: clusters.iter().map(|c| c.size).sum(),
        largest: clusters.first().map_or(0, |c| c.size),
        clusters,
    }
}

fn intern(u: u32, ids: &mut HashMap<u32, usize>, urls: &mut Vec<u32>, uf: &mut UnionFind) -> usize {
    *ids.entry(u).or_insert_with(|| {
        urls.push(u);
        uf.push()
    })
}

/// The clusters as CSV, one row per member, written to `out` a row at a
/// time.
pub fn write_csv(c: &ClusterReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut line = String::new();
    csv_line(
        &mut line,
        &[
            "cluster",
            "size",
            "original",
            "url",
            "decision",
            "dup_of",
            "distance",
            "distance_to_original",
        ],
    );
    out.write_all(line.as_bytes())?;
    for cl in &c.clusters {
        let (id, size) = (cl.id.to_string(), cl.size.to_string());
        for m in &cl.members {
            let (d, dto) = (opt(m.distance), opt(m.distance_to_original));
            line.clear();
            csv_line(
                &mut line,
                &[
                    &id,
                    &size,
                    &cl.original,
                    &m.url,
                    &m.decision,
                    m.dup_of.as_deref().unwrap_or(""),
                    &d,
                    &dto,
                ],
            );
            out.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}
