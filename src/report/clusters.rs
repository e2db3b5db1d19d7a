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
    let plan = Plan::new(log);
    ClusterReport {
        clusters_count: plan.clusters_count(),
        pages_in_clusters: plan.pages_in_clusters(),
        largest: plan.largest(),
        clusters: plan.clusters().collect(),
    }
}

/// The clusters of a crawl log's digest before their members are named:
/// each cluster's URL ids and its original, in report order. A [`Cluster`]
/// (its members' URLs as strings) is made only as it is written
/// ([`Plan::clusters`]), one at a time, so writing the report holds about
/// 4 bytes per member beside the digest. It serializes as its
/// [`ClusterReport`] does.
pub struct Plan<'a> {
    log: &'a LogDigest,
    /// The last record of each canonical URL, by URL id.
    by_url: Vec<u32>,
    /// (original, members) of each cluster, largest first.
    groups: Vec<(u32, Vec<u32>)>,
}

impl<'a> Plan<'a> {
    /// The clusters of `log`'s duplicate decisions (each duplicate joined
    /// to its `dup_of`).
    pub fn new(log: &'a LogDigest) -> Self {
        let mut by_url: Vec<u32> = vec![u32::MAX; log.urls.len()];
        for (i, r) in log.pages.iter().enumerate() {
            by_url[r.canonical as usize] = i as u32;
        }
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
        drop(ids);
        let mut groups: HashMap<usize, Vec<u32>> = HashMap::new();
        for (i, u) in urls.iter().enumerate() {
            groups.entry(uf.find(i)).or_default().push(*u);
        }
        let mut plan = Plan {
            log,
            by_url,
            groups: Vec::new(),
        };
        let mut groups: Vec<(u32, Vec<u32>)> = groups
            .into_values()
            .filter(|g| g.len() >= 2)
            .map(|mut g| {
                g.shrink_to_fit();
                (plan.original(&g), g)
            })
            .collect();
        groups.sort_by(|(oa, a), (ob, b)| b.len().cmp(&a.len()).then_with(|| log.url(*oa).cmp(log.url(*ob))));
        plan.groups = groups;
        plan
    }

    /// Clusters (two or more members).
    pub fn clusters_count(&self) -> u64 {
        self.groups.len() as u64
    }

    /// Pages in some cluster.
    pub fn pages_in_clusters(&self) -> u64 {
        self.groups.iter().map(|(_, g)| g.len() as u64).sum()
    }

    /// Size of the largest cluster.
    pub fn largest(&self) -> u64 {
        self.groups.first().map_or(0, |(_, g)| g.len() as u64)
    }

    fn record(&self, u: u32) -> Option<&'a PageDigest> {
        self.log.pages.get(self.by_url[u as usize] as usize)
    }

    /// The original of a group: not a duplicate, earliest fetched, then URL.
    fn original(&self, g: &[u32]) -> u32 {
        let log = self.log;
        let empty_time = log.times.find("");
        let key = |u: u32| {
            let r = self.record(u);
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
        g.iter()
            .copied()
            .min_by(|&a, &b| {
                let (ka, kb) = (key(a), key(b));
                ka.0.cmp(&kb.0)
                    .then_with(|| time_cmp(ka.1, kb.1))
                    .then_with(|| log.url(a).cmp(log.url(b)))
            })
            .unwrap_or_default()
    }

    /// The clusters in report order, each made as it is asked for.
    pub fn clusters(&self) -> impl Iterator<Item = Cluster> + '_ {
        self.groups
            .iter()
            .enumerate()
            .map(|(i, (original, g))| self.cluster(i as u64 + 1, *original, g))
    }

    fn cluster(&self, id: u64, original: u32, g: &[u32]) -> Cluster {
        let log = self.log;
        let fp = |u: u32| self.record(u).and_then(|r| r.simhash);
        let ofp = fp(original);
        let mut members: Vec<Member> = g
            .iter()
            .map(|&u| {
                let r = self.record(u);
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
            id,
            original: original.to_string(),
            size: members.len() as u64,
            exact: count(Decision::ExactDuplicate),
            near: count(Decision::NearDuplicate),
            hosts: hosts.len() as u64,
            max_distance,
            members,
        }
    }
}

impl Serialize for Plan<'_> {
    /// As its [`ClusterReport`], the clusters made one at a time.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Clusters<'p, 'a>(&'p Plan<'a>);
        impl Serialize for Clusters<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.clusters())
            }
        }
        let mut st = s.serialize_struct("ClusterReport", 4)?;
        st.serialize_field("clusters_count", &self.clusters_count())?;
        st.serialize_field("pages_in_clusters", &self.pages_in_clusters())?;
        st.serialize_field("largest", &self.largest())?;
        st.serialize_field("clusters", &Clusters(self))?;
        st.end()
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
pub fn write_csv(c: &Plan, out: &mut dyn std::io::Write) -> std::io::Result<()> {
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
    for cl in c.clusters() {
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
