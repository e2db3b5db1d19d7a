//! The crawl's pages indexed by host and path, candidate mirror pairs from
//! duplicate matches, and each candidate verified over its subtrees and
//! classified.

use super::*;

/// A page with content, as the detector sees it (24 bytes: a table holds
/// one per page of the crawl; its URL and path are read from the digest).
pub(super) struct Page<'a> {
    pub(super) host: u32,
    /// Where its path is in its canonical URL: start and length, or
    /// [`ROOT`] when the URL has none (its path is `/`).
    path: (u32, u32),
    pub(super) rec: &'a PageDigest,
}

/// [`Page::path`] of a URL without a path.
const ROOT: (u32, u32) = (0, u32::MAX);

/// The crawl's pages indexed for verification.
pub(super) struct PageTable<'a> {
    log: &'a LogDigest,
    pub(super) pages: Vec<Page<'a>>,
    pub(super) host_names: Vec<&'a str>,
    /// Per host: its pages (indexes in `pages`) sorted by path.
    by_host: Vec<Vec<u32>>,
    /// Content group of each page (union-find root).
    pub(super) group: Vec<u32>,
    /// Fetch times, to compare pages'.
    pub(super) times: &'a Times,
}

impl<'a> PageTable<'a> {
    pub(super) fn build(log: &'a LogDigest) -> (Self, Vec<(u32, u32)>) {
        // Page index by canonical URL id.
        let mut index: HashMap<u32, u32> = HashMap::new();
        let mut pages: Vec<Page<'a>> = Vec::new();
        let mut host_ids: HashMap<&str, u32> = HashMap::new();
        let mut host_names = Vec::new();
        for r in log.pages.iter().filter(|r| r.has_content) {
            let canonical = log.url(r.canonical);
            let Some((host, path)) = split_url(canonical) else {
                continue;
            };
            let next = host_ids.len() as u32;
            let host = *host_ids.entry(host).or_insert_with(|| {
                host_names.push(host);
                next
            });
            let at = (path.as_ptr() as usize).wrapping_sub(canonical.as_ptr() as usize);
            let path = if at <= canonical.len() && canonical.get(at..at + path.len()) == Some(path) {
                (at as u32, path.len() as u32)
            } else {
                ROOT
            };
            let page = Page { host, path, rec: r };
            match index.get(&r.canonical) {
                // A later fetch of the same URL replaces the earlier one.
                Some(&i) => pages[i as usize] = page,
                None => {
                    index.insert(r.canonical, pages.len() as u32);
                    pages.push(page);
                }
            }
        }
        let mut uf = UnionFind::new(pages.len());
        let mut edges = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            if let Some(j) = p.rec.dup_of.and_then(|d| index.get(&d)) {
                uf.union(i, *j as usize);
                edges.push((i as u32, *j));
            }
        }
        // Equal body or text hashes are exact matches even without a decision
        // (e.g. the original was fetched after the copy in another order).
        for pick in [|r: &PageDigest| r.content_hash, |r: &PageDigest| r.text_hash] {
            let mut first: HashMap<HashKey, u32> = HashMap::new();
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
        let mut table = PageTable {
            log,
            pages,
            host_names,
            by_host: Vec::new(),
            group,
            times: &log.times,
        };
        let mut by_host: Vec<Vec<u32>> = vec![Vec::new(); table.host_names.len()];
        for (i, p) in table.pages.iter().enumerate() {
            by_host[p.host as usize].push(i as u32);
        }
        for list in &mut by_host {
            list.sort_unstable_by(|&a, &b| table.path(a).cmp(table.path(b)).then(a.cmp(&b)));
        }
        table.by_host = by_host;
        (table, edges)
    }

    /// The canonical URL of page `i`.
    pub(super) fn canonical(&self, i: u32) -> &'a str {
        self.log.url(self.pages[i as usize].rec.canonical)
    }

    /// The path of page `i` (`/` when its URL has none).
    pub(super) fn path(&self, i: u32) -> &'a str {
        match self.pages[i as usize].path {
            ROOT => "/",
            (at, len) => &self.canonical(i)[at as usize..(at + len) as usize],
        }
    }

    /// The pages of `host` whose path starts with `prefix`.
    pub(super) fn subtree(&self, host: u32, prefix: &str) -> &[u32] {
        let list = &self.by_host[host as usize];
        let lo = list.partition_point(|&i| self.path(i) < prefix);
        let len = list[lo..].partition_point(|&i| self.path(i).starts_with(prefix));
        &list[lo..lo + len]
    }

    pub(super) fn lookup(&self, host: u32, path: &str) -> Option<u32> {
        let list = &self.by_host[host as usize];
        list.binary_search_by(|&i| self.path(i).cmp(path)).ok().map(|k| list[k])
    }

    pub(super) fn compare(&self, a: u32, b: u32) -> (MatchKind, Option<u32>) {
        let (pa, pb) = (&self.pages[a as usize], &self.pages[b as usize]);
        let distance = match (pa.rec.simhash, pb.rec.simhash) {
            (Some(x), Some(y)) => Some((x ^ y).count_ones()),
            _ => None,
        };
        let same = |x: &Option<HashKey>, y: &Option<HashKey>| x.is_some() && x == y;
        let exact_decision =
            |p: &Page, q: &Page| p.rec.decision == Decision::ExactDuplicate && p.rec.dup_of == Some(q.rec.canonical);
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
pub(super) struct Candidate {
    pub(super) host_a: u32,
    pub(super) prefix_a: String,
    pub(super) host_b: u32,
    pub(super) prefix_b: String,
}

pub(super) fn candidate(table: &PageTable, x: u32, y: u32) -> Option<Candidate> {
    let (px, py) = (&table.pages[x as usize], &table.pages[y as usize]);
    if px.host == py.host {
        return None;
    }
    let (ax, ay) = align_prefixes(strip_query(table.path(x)), strip_query(table.path(y)))?;
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

pub(super) fn strip_query(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Result of walking one candidate.
pub(super) struct Verified {
    pub(super) compared: u64,
    pub(super) exact: u64,
    pub(super) near: u64,
    pub(super) only_a: u64,
    pub(super) only_b: u64,
    pub(super) n_a: u64,
    pub(super) n_b: u64,
    /// Relative paths that matched, and the original side counts.
    pub(super) matched_rel: Vec<String>,
    pub(super) originals_on_a: u64,
    pub(super) originals_on_b: u64,
    pub(super) examples: Vec<ExamplePair>,
}

pub(super) fn verify(table: &PageTable, c: &Candidate) -> Verified {
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
    for &i in small {
        let rel = &table.path(i)[small_prefix.len()..];
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
            url_a: table.canonical(ia).to_string(),
            url_b: table.canonical(ib).to_string(),
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
        let b_vs_a = table.times.cmp(rb.fetched_at, ra.fetched_at);
        let b_is_dup = rb.dup_of.is_some() && (ra.dup_of.is_none() || b_vs_a.is_ge());
        let a_is_dup = ra.dup_of.is_some() && !b_is_dup;
        if b_is_dup || (!a_is_dup && b_vs_a.is_ge()) {
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
pub(super) fn common_dir(paths: &[String]) -> &str {
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

pub(super) fn classify(v: &Verified, c: &Candidate, s: &MirrorSettings) -> (MirrorKind, f64, f64) {
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
