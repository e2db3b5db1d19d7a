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
//! pages are decided, with hash-map lookups only, so the frontier can demote
//! URLs of an established mirror whose counterpart is already known.

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

/// Hamming distance of two 16-hex-digit simhashes.
fn hex_distance(a: &str, b: &str) -> Option<u32> {
    let a = u64::from_str_radix(a, 16).ok()?;
    let b = u64::from_str_radix(b, 16).ok()?;
    Some((a ^ b).count_ones())
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

/// A page with content, as the detector sees it.
struct Page<'a> {
    canonical: &'a str,
    host: u32,
    path: &'a str,
    rec: &'a PageRecord,
}

/// The crawl's pages indexed for verification.
struct PageTable<'a> {
    pages: Vec<Page<'a>>,
    host_names: Vec<&'a str>,
    /// Per host: (path, page index) sorted by path.
    by_host: Vec<Vec<(&'a str, u32)>>,
    /// Content group of each page (union-find root).
    group: Vec<u32>,
}

impl<'a> PageTable<'a> {
    fn build(records: &'a [PageRecord]) -> (Self, Vec<(u32, u32)>) {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut pages: Vec<Page<'a>> = Vec::new();
        let mut host_ids: HashMap<&str, u32> = HashMap::new();
        let mut host_names = Vec::new();
        for r in records.iter().filter(|r| has_content(r)) {
            let Some((host, path)) = split_url(&r.canonical) else {
                continue;
            };
            let next = host_ids.len() as u32;
            let host = *host_ids.entry(host).or_insert_with(|| {
                host_names.push(host);
                next
            });
            let page = Page {
                canonical: &r.canonical,
                host,
                path,
                rec: r,
            };
            match index.get(r.canonical.as_str()) {
                // A later fetch of the same URL replaces the earlier one.
                Some(&i) => pages[i as usize] = page,
                None => {
                    index.insert(&r.canonical, pages.len() as u32);
                    pages.push(page);
                }
            }
        }
        let mut uf = UnionFind::new(pages.len());
        let mut edges = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            if let Some(j) = p.rec.dup_of.as_deref().and_then(|d| index.get(d)) {
                uf.union(i, *j as usize);
                edges.push((i as u32, *j));
            }
        }
        // Equal body or text hashes are exact matches even without a decision
        // (e.g. the original was fetched after the copy in another order).
        for pick in [
            |r: &PageRecord| r.content_hash.clone(),
            |r: &PageRecord| r.text_hash.clone(),
        ] {
            let mut first: HashMap<String, u32> = HashMap::new();
            for (i, p) in pages.iter().enumerate() {
                if let Some(h) = pick(p.rec) {
                    let j = *first.entry(h).or_insert(i as u32);
                    if j as usize != i {
                        uf.union(i, j as usize);
                        edges.push((i as u32, j));
                    }
                }
            }
        }
        // One edge per page pair (a dup decision and equal hashes coincide).
        let mut seen = HashSet::new();
        edges.retain(|&(x, y)| seen.insert((x.min(y), x.max(y))));
        let group = (0..pages.len()).map(|i| uf.find(i) as u32).collect();
        let mut by_host: Vec<Vec<(&str, u32)>> = vec![Vec::new(); host_names.len()];
        for (i, p) in pages.iter().enumerate() {
            by_host[p.host as usize].push((p.path, i as u32));
        }
        for list in &mut by_host {
            list.sort_unstable();
        }
        (
            PageTable {
                pages,
                host_names,
                by_host,
                group,
            },
            edges,
        )
    }

    /// The pages of `host` whose path starts with `prefix`.
    fn subtree(&self, host: u32, prefix: &str) -> &[(&'a str, u32)] {
        let list = &self.by_host[host as usize];
        let lo = list.partition_point(|(p, _)| *p < prefix);
        let len = list[lo..].partition_point(|(p, _)| p.starts_with(prefix));
        &list[lo..lo + len]
    }

    fn lookup(&self, host: u32, path: &str) -> Option<u32> {
        let list = &self.by_host[host as usize];
        list.binary_search_by(|(p, _)| (*p).cmp(path)).ok().map(|i| list[i].1)
    }

    fn compare(&self, a: u32, b: u32) -> (MatchKind, Option<u32>) {
        let (pa, pb) = (&self.pages[a as usize], &self.pages[b as usize]);
        let distance = match (&pa.rec.simhash, &pb.rec.simhash) {
            (Some(x), Some(y)) => hex_distance(x, y),
            _ => None,
        };
        let same = |x: &Option<String>, y: &Option<String>| x.is_some() && x == y;
        let exact_decision = |p: &Page, q: &Page| {
            p.rec.decision == Decision::ExactDuplicate && p.rec.dup_of.as_deref() == Some(q.canonical)
        };
        if same(&pa.rec.content_hash, &pb.rec.content_hash)
            || same(&pa.rec.text_hash, &pb.rec.text_hash)
            || exact_decision(pa, pb)
            || exact_decision(pb, pa)
        {
            (MatchKind::Exact, distance)
        } else if self.group[a as usize] == self.group[b as usize] {
            (MatchKind::Near, distance)
        } else {
            (MatchKind::Differ, distance)
        }
    }
}

/// One candidate, normalized so that (host_a, prefix_a) < (host_b, prefix_b).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Candidate {
    host_a: u32,
    prefix_a: String,
    host_b: u32,
    prefix_b: String,
}

fn candidate(table: &PageTable, x: u32, y: u32) -> Option<Candidate> {
    let (px, py) = (&table.pages[x as usize], &table.pages[y as usize]);
    if px.host == py.host {
        return None;
    }
    let (ax, ay) = align_prefixes(strip_query(px.path), strip_query(py.path))?;
    let (a, b) = if px.host < py.host {
        ((px, ax), (py, ay))
    } else {
        ((py, ay), (px, ax))
    };
    Some(Candidate {
        host_a: a.0.host,
        prefix_a: a.1.to_string(),
        host_b: b.0.host,
        prefix_b: b.1.to_string(),
    })
}

fn strip_query(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Result of walking one candidate.
struct Verified {
    compared: u64,
    exact: u64,
    near: u64,
    only_a: u64,
    only_b: u64,
    n_a: u64,
    n_b: u64,
    /// Relative paths that matched, and the original side counts.
    matched_rel: Vec<String>,
    originals_on_a: u64,
    originals_on_b: u64,
    examples: Vec<ExamplePair>,
}

fn verify(table: &PageTable, c: &Candidate) -> Verified {
    let side_a = table.subtree(c.host_a, &c.prefix_a);
    let side_b = table.subtree(c.host_b, &c.prefix_b);
    // Walk the smaller side, look up the other.
    let a_is_small = side_a.len() <= side_b.len();
    let (small, other_host, small_prefix, other_prefix) = if a_is_small {
        (side_a, c.host_b, &c.prefix_a, &c.prefix_b)
    } else {
        (side_b, c.host_a, &c.prefix_b, &c.prefix_a)
    };
    let mut v = Verified {
        compared: 0,
        exact: 0,
        near: 0,
        only_a: 0,
        only_b: 0,
        n_a: side_a.len() as u64,
        n_b: side_b.len() as u64,
        matched_rel: Vec::new(),
        originals_on_a: 0,
        originals_on_b: 0,
        examples: Vec::new(),
    };
    let mut differ_examples = Vec::new();
    let mut counterpart = String::new();
    for &(path, i) in small {
        let rel = &path[small_prefix.len()..];
        counterpart.clear();
        counterpart.push_str(other_prefix);
        counterpart.push_str(rel);
        let Some(j) = table.lookup(other_host, &counterpart) else {
            continue;
        };
        let (ia, ib) = if a_is_small { (i, j) } else { (j, i) };
        v.compared += 1;
        let (kind, distance) = table.compare(ia, ib);
        match kind {
            MatchKind::Exact => v.exact += 1,
            MatchKind::Near => v.near += 1,
            MatchKind::Differ => {}
        }
        let example = || ExamplePair {
            path: rel.to_string(),
            url_a: table.pages[ia as usize].canonical.to_string(),
            url_b: table.pages[ib as usize].canonical.to_string(),
            matched: kind,
            distance,
        };
        if kind == MatchKind::Differ {
            if differ_examples.len() < MAX_EXAMPLES {
                differ_examples.push(example());
            }
            continue;
        }
        v.matched_rel.push(rel.to_string());
        if v.examples.len() < MAX_EXAMPLES {
            v.examples.push(example());
        }
        // Which side holds the original: the page the other one duplicates,
        // or else the one fetched first.
        let (ra, rb) = (table.pages[ia as usize].rec, table.pages[ib as usize].rec);
        let b_is_dup = rb.dup_of.is_some() && (ra.dup_of.is_none() || rb.fetched_at >= ra.fetched_at);
        let a_is_dup = ra.dup_of.is_some() && !b_is_dup;
        if b_is_dup || (!a_is_dup && ra.fetched_at <= rb.fetched_at) {
            v.originals_on_a += 1;
        } else {
            v.originals_on_b += 1;
        }
    }
    let rest = MAX_EXAMPLES.saturating_sub(v.examples.len());
    v.examples.extend(differ_examples.into_iter().take(rest));
    v.only_a = v.n_a - v.compared;
    v.only_b = v.n_b - v.compared;
    v
}

/// The deepest directory (ending in `/`, possibly empty) holding every path.
fn common_dir(paths: &[String]) -> &str {
    let Some(first) = paths.first() else {
        return "";
    };
    let mut len = first.rfind('/').map_or(0, |i| i + 1);
    for p in &paths[1..] {
        let common = first.as_bytes()[..len]
            .iter()
            .zip(p.as_bytes())
            .take_while(|(x, y)| x == y)
            .count();
        len = first[..common].rfind('/').map_or(0, |i| i + 1);
        if len == 0 {
            break;
        }
    }
    &first[..len]
}

fn classify(v: &Verified, c: &Candidate, s: &MirrorSettings) -> (MirrorKind, f64, f64) {
    let matched = v.exact + v.near;
    let score = if v.compared == 0 {
        0.0
    } else {
        matched as f64 / v.compared as f64
    };
    // Coverage of the larger side: a site that holds the other and much
    // more besides (a newer version, a superset) is not its mirror.
    let larger = v.n_a.max(v.n_b).max(1);
    let coverage = v.compared as f64 / larger as f64;
    let mirror = v.compared >= u64::from(s.min_sample) && score >= s.min_score && coverage >= s.min_coverage;
    let kind = match (mirror, c.prefix_a == "/" && c.prefix_b == "/") {
        (false, _) => MirrorKind::Overlap,
        (true, true) => MirrorKind::Full,
        (true, false) => MirrorKind::Partial,
    };
    (kind, score, coverage)
}

/// Find the mirror host (prefix) pairs of a crawl from its records alone.
///
/// Runs in O(P log P + M + C·S log P) for P pages, M duplicate matches, C
/// distinct candidates and S pages in the smaller subtree of a candidate: no
/// pair of hosts is compared unless they share at least one duplicate.
pub fn detect(records: &[PageRecord], settings: &MirrorSettings) -> MirrorReport {
    let (table, edges) = PageTable::build(records);
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

    let sets = mirror_sets(records, &pairs);
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
fn mirror_sets(records: &[PageRecord], pairs: &[MirrorPair]) -> Vec<MirrorSet> {
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
    let mut inlinks: HashMap<&str, u64> = HashMap::new();
    let mut first: HashMap<&str, &str> = HashMap::new();
    for r in records {
        let Some((host, _)) = split_url(&r.canonical) else {
            continue;
        };
        if !ids.contains_key(host) {
            continue;
        }
        let e = first.entry(host).or_insert(&r.fetched_at);
        if r.fetched_at.as_str() < *e {
            *e = &r.fetched_at;
        }
        if let Some((parent_host, _)) = r.parent.as_deref().and_then(split_url) {
            if parent_host != host {
                *inlinks.entry(host).or_insert(0) += 1;
            }
        }
    }
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
            let links: Vec<u64> = hosts.iter().map(|h| inlinks.get(h).copied().unwrap_or(0)).collect();
            let canonical = hosts
                .iter()
                .zip(&links)
                .min_by(|(h1, l1), (h2, l2)| {
                    l2.cmp(l1)
                        .then_with(|| first.get(*h1).cmp(&first.get(*h2)))
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

/// Counters of the online detector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnlineStats {
    /// Pages observed.
    pub observed: u64,
    /// Candidate pairs being counted.
    pub candidates: u64,
    /// Pairs established as mirrors (sample and score above thresholds).
    pub established: u64,
    /// Distinct URLs demoted by [`OnlineMirrors::penalty_for`].
    pub demoted: u64,
    /// Demoted URLs that were fetched anyway (observed later).
    pub demoted_fetched: u64,
}

impl OnlineStats {
    /// Fetches saved so far: demoted URLs not (yet) fetched. At the end of a
    /// crawl, the fetches the mirror penalty saved.
    pub fn fetches_saved(&self) -> u64 {
        self.demoted - self.demoted_fetched
    }
}

#[derive(Debug, Clone)]
struct OnlinePage {
    content: Option<String>,
    /// The original this page's content group points at (itself if new).
    root: String,
}

#[derive(Debug)]
struct OnlinePair {
    host_a: String,
    prefix_a: String,
    host_b: String,
    prefix_b: String,
    compared: u64,
    matched: u64,
    /// Matches whose duplicate was on side B (vs. side A).
    dups_on_b: u64,
    dups_on_a: u64,
    established: bool,
}

impl OnlinePair {
    /// The mirror (demoted) side: host, prefix, and the original's host, prefix.
    fn mirror_side(&self) -> (&str, &str, &str, &str) {
        if self.dups_on_a > self.dups_on_b {
            (&self.host_a, &self.prefix_a, &self.host_b, &self.prefix_b)
        } else {
            (&self.host_b, &self.prefix_b, &self.host_a, &self.prefix_a)
        }
    }
}

/// Online mirror detection for the crawl loop: feed every decided page to
/// [`observe`](Self::observe), ask [`penalty_for`](Self::penalty_for) before
/// scoring a URL. Every call is a few hash-map lookups (no scans).
#[derive(Debug)]
pub struct OnlineMirrors {
    settings: MirrorSettings,
    /// host -> path -> page.
    pages: HashMap<String, HashMap<String, OnlinePage>>,
    pairs: Vec<OnlinePair>,
    pair_ids: HashMap<(String, String, String, String), usize>,
    /// host -> candidate pairs touching it.
    by_host: HashMap<String, Vec<usize>>,
    demoted: HashSet<String>,
    stats: OnlineStats,
}

impl OnlineMirrors {
    /// An empty detector with `[mirror]` thresholds.
    pub fn new(settings: &MirrorSettings) -> Self {
        OnlineMirrors {
            settings: settings.clone(),
            pages: HashMap::new(),
            pairs: Vec::new(),
            pair_ids: HashMap::new(),
            by_host: HashMap::new(),
            demoted: HashSet::new(),
            stats: OnlineStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> OnlineStats {
        let mut s = self.stats;
        s.candidates = self.pairs.len() as u64;
        s
    }

    /// The established pairs as (mirror host, mirror prefix, original host, original prefix).
    pub fn established(&self) -> Vec<(String, String, String, String)> {
        self.pairs
            .iter()
            .filter(|p| p.established)
            .map(|p| {
                let (h, pr, oh, op) = p.mirror_side();
                (h.to_string(), pr.to_string(), oh.to_string(), op.to_string())
            })
            .collect()
    }

    /// Record one decided page (call after the dedup decision).
    pub fn observe(&mut self, rec: &PageRecord) {
        self.stats.observed += 1;
        if self.demoted.contains(&rec.canonical) {
            self.stats.demoted_fetched += 1;
            self.demoted.remove(&rec.canonical);
        }
        if !has_content(rec) {
            return;
        }
        let Some((host, path)) = split_url(&rec.canonical) else {
            return;
        };
        let path = strip_query(path);
        let root = match rec.dup_of.as_deref() {
            Some(orig) => self.root_of(orig).unwrap_or(orig).to_string(),
            None => rec.canonical.clone(),
        };
        let content = rec.content_hash.clone().or_else(|| rec.text_hash.clone());
        // A new candidate from this page's duplicate match.
        if let Some((oh, op)) = rec.dup_of.as_deref().and_then(split_url) {
            let op = strip_query(op);
            if oh != host {
                if let Some((pa, pb)) = align_prefixes(op, path) {
                    self.candidate(oh, pa, host, pb);
                }
            }
        }
        let page = OnlinePage { content, root };
        // Count this page against every candidate of its host.
        if let Some(ids) = self.by_host.get(host) {
            for &id in ids {
                let pair = &self.pairs[id];
                let (mine, other_host, other_prefix, on_b) = if pair.host_a == host {
                    (&pair.prefix_a, &pair.host_b, &pair.prefix_b, false)
                } else {
                    (&pair.prefix_b, &pair.host_a, &pair.prefix_a, true)
                };
                let Some(rel) = path.strip_prefix(mine.as_str()) else {
                    continue;
                };
                let Some(other) = self
                    .pages
                    .get(other_host.as_str())
                    .and_then(|m| m.get(&format!("{other_prefix}{rel}")))
                else {
                    continue;
                };
                let matched = other.root == page.root || (page.content.is_some() && other.content == page.content);
                let pair = &mut self.pairs[id];
                pair.compared += 1;
                if matched {
                    pair.matched += 1;
                    if on_b {
                        pair.dups_on_b += 1;
                    } else {
                        pair.dups_on_a += 1;
                    }
                }
                let established = pair.compared >= u64::from(self.settings.min_sample)
                    && pair.matched as f64 >= self.settings.min_score * pair.compared as f64;
                if established && !pair.established {
                    self.stats.established += 1;
                    tracing::debug!(
                        "mirror established: {}{} ~ {}{} ({}/{})",
                        pair.host_a,
                        pair.prefix_a,
                        pair.host_b,
                        pair.prefix_b,
                        pair.matched,
                        pair.compared
                    );
                }
                pair.established = established;
            }
        }
        self.pages
            .entry(host.to_string())
            .or_default()
            .insert(path.to_string(), page);
    }

    fn root_of(&self, canonical: &str) -> Option<&str> {
        let (host, path) = split_url(canonical)?;
        self.pages.get(host)?.get(strip_query(path)).map(|p| p.root.as_str())
    }

    fn candidate(&mut self, h1: &str, p1: &str, h2: &str, p2: &str) {
        let ((ha, pa), (hb, pb)) = if (h1, p1) <= (h2, p2) {
            ((h1, p1), (h2, p2))
        } else {
            ((h2, p2), (h1, p1))
        };
        let key = (ha.to_string(), pa.to_string(), hb.to_string(), pb.to_string());
        if self.pair_ids.contains_key(&key) {
            return;
        }
        let id = self.pairs.len();
        self.pairs.push(OnlinePair {
            host_a: key.0.clone(),
            prefix_a: key.1.clone(),
            host_b: key.2.clone(),
            prefix_b: key.3.clone(),
            compared: 0,
            matched: 0,
            dups_on_a: 0,
            dups_on_b: 0,
            established: false,
        });
        self.by_host.entry(key.0.clone()).or_default().push(id);
        self.by_host.entry(key.2.clone()).or_default().push(id);
        self.pair_ids.insert(key, id);
    }

    /// The mirror penalty for a URL (canonical form) not fetched yet: when its
    /// host (prefix) is an established mirror and the counterpart page on the
    /// original is already known, `Some((penalty, counterpart URL))`. None when
    /// `[mirror] online` is off.
    pub fn penalty_for(&mut self, canonical: &str) -> Option<(f64, String)> {
        if !self.settings.online {
            return None;
        }
        let (host, path) = split_url(canonical)?;
        let scheme = &canonical[..canonical.find("://")? + 3];
        let path = strip_query(path);
        for &id in self.by_host.get(host)? {
            let pair = &self.pairs[id];
            if !pair.established {
                continue;
            }
            let (mh, mp, oh, op) = pair.mirror_side();
            if mh != host {
                continue;
            }
            let Some(rel) = path.strip_prefix(mp) else {
                continue;
            };
            let other = format!("{op}{rel}");
            if self.pages.get(oh).is_some_and(|m| m.contains_key(&other)) {
                let counterpart = format!("{scheme}{oh}{other}");
                if self.demoted.insert(canonical.to_string()) {
                    self.stats.demoted += 1;
                }
                return Some((self.settings.penalty, counterpart));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_align() {
        let cases = [
            ("/news/x/y.html", "/mirror/news/x/y.html", Some(("/", "/mirror/"))),
            ("/", "/", Some(("/", "/"))),
            ("/docs/", "/mirror/docs/", Some(("/", "/mirror/"))),
            ("/a/", "/b/", Some(("/a/", "/b/"))),
            ("/a.html", "/b.html", None),
            ("/x/a.html", "/a.html", Some(("/x/", "/"))),
            ("/same/p", "/same/p", Some(("/", "/"))),
        ];
        for (p1, p2, want) in cases {
            assert_eq!(align_prefixes(p1, p2), want, "{p1} {p2}");
        }
    }

    #[test]
    fn common_dir_of_paths() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(common_dir(&v(&["docs/a.html", "docs/b/c.html"])), "docs/");
        assert_eq!(common_dir(&v(&["docs/a.html", "doc/b.html"])), "");
        assert_eq!(common_dir(&v(&["docs/x/", "docs/x/y"])), "docs/x/");
        assert_eq!(common_dir(&v(&["", "docs/x"])), "");
        assert_eq!(common_dir(&v(&[])), "");
    }

    #[test]
    fn union_find_joins() {
        let mut uf = UnionFind::new(4);
        uf.union(0, 1);
        uf.union(2, 3);
        assert_eq!(uf.find(0), uf.find(1));
        assert_ne!(uf.find(1), uf.find(2));
        uf.union(1, 3);
        assert_eq!(uf.find(0), uf.find(2));
    }
}
