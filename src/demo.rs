//! The demo (beside the pipeline): start the built-in test web on 127.0.0.1,
//! crawl it with the test-web settings (`config/test.toml`), and score the
//! crawl's duplicate decisions against the web's ground truth.
//!
//! [`score`] is also what the end-to-end tests assert on: precision and
//! recall of exact and near duplicates, and robots.txt violations seen by the
//! server.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::canon::Canonicalizer;
use crate::config::Settings;
use crate::crawl::{self, CrawlOptions, CrawlSummary};
use crate::crawllog::{self, PageRecord};
use crate::error::{Error, Result};
use crate::model::Decision;
use crate::testweb::{GroundTruth, RequestLogEntry, RunningTestWeb, TestWeb, TestWebOptions};

/// Precision and recall of one kind of decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PrecisionRecall {
    /// Decisions (or pairs) the crawl made.
    pub decided: u64,
    /// Of which correct by the ground truth.
    pub correct: u64,
    /// Duplicates (or pairs) the ground truth has among the crawled pages.
    pub expected: u64,
    /// Of which the crawl found.
    pub found: u64,
}

impl PrecisionRecall {
    /// correct / decided (1 when nothing was decided).
    pub fn precision(&self) -> f64 {
        if self.decided == 0 {
            1.0
        } else {
            self.correct as f64 / self.decided as f64
        }
    }

    /// found / expected (1 when nothing was expected).
    pub fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.found as f64 / self.expected as f64
        }
    }
}

/// A crawl scored against the test web's ground truth.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TruthScore {
    /// Exact-duplicate decisions.
    pub exact: PrecisionRecall,
    /// Near-duplicate decisions (precision) and the truth's near-duplicate
    /// pairs whose pages the crawl put in one cluster (recall).
    pub near: PrecisionRecall,
    /// Duplicate decisions whose page and original the truth does not relate.
    pub false_decisions: Vec<(String, String)>,
    /// Truth duplicates the crawl missed (page, its original).
    pub missed: Vec<(String, String)>,
    /// Requests the server saw for URLs the truth lists as disallowed.
    pub robots_violations: Vec<String>,
}

/// Union-find over URLs (a name → index map over [`crate::sketch::UnionFind`]).
struct UrlSets {
    sets: crate::sketch::UnionFind,
    ids: HashMap<String, usize>,
}

impl UrlSets {
    fn new() -> Self {
        UrlSets {
            sets: crate::sketch::UnionFind::default(),
            ids: HashMap::new(),
        }
    }
    fn id(&mut self, s: &str) -> usize {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.sets.push();
        self.ids.insert(s.to_string(), i);
        i
    }
    fn find(&mut self, i: usize) -> usize {
        self.sets.find(i)
    }
    fn union(&mut self, a: &str, b: &str) {
        let (a, b) = (self.id(a), self.id(b));
        self.sets.union(a, b);
    }
    fn same(&mut self, a: &str, b: &str) -> bool {
        let (a, b) = (self.id(a), self.id(b));
        self.sets.find(a) == self.sets.find(b)
    }
}

/// Score `records` (a crawl of the test web) against `truth`. URLs of the
/// truth are canonicalized with `canon` (the crawl's canonicalizer) first;
/// `requests` is the server's request log (for robots.txt violations).
pub fn score(
    truth: &GroundTruth,
    records: &[PageRecord],
    canon: &Canonicalizer,
    requests: &[RequestLogEntry],
) -> TruthScore {
    let c = |u: &str| canon.parse(u).map_or_else(|_| u.to_string(), |u| u.to_string());
    // Truth relations: `exact` = same bytes or same page under another URL;
    // `all` = exact plus near duplicates.
    let mut exact = UrlSets::new();
    let mut all = UrlSets::new();
    for p in &truth.pages {
        let u = c(&p.url);
        for of in [&p.canonical_of, &p.exact_dup_of].into_iter().flatten() {
            exact.union(&u, &c(of));
            all.union(&u, &c(of));
        }
        if let Some(of) = &p.near_dup_of {
            all.union(&u, &c(of));
        }
    }
    for g in &truth.exact_duplicate_groups {
        for w in g.windows(2) {
            exact.union(&c(&w[0]), &c(&w[1]));
            all.union(&c(&w[0]), &c(&w[1]));
        }
    }
    for pair in &truth.near_duplicate_pairs {
        all.union(&c(&pair.a), &c(&pair.b));
    }
    // Calendar-trap pages are near duplicates of the trap's entry.
    for trap in truth.traps.iter().filter(|t| t.kind == "calendar") {
        let prefix = c(&trap.url_prefix);
        let entry = c(&trap.entry);
        for r in records.iter().filter(|r| r.canonical.starts_with(&prefix)) {
            all.union(&r.canonical, &entry);
        }
    }

    let content = |d: Decision| matches!(d, Decision::New | Decision::ExactDuplicate | Decision::NearDuplicate);
    let mut out = TruthScore::default();
    let mut crawl_clusters = UrlSets::new();
    for r in records.iter().filter(|r| content(r.decision)) {
        let Some(of) = &r.dup_of else { continue };
        crawl_clusters.union(&r.canonical, of);
        let ok = all.same(&r.canonical, of);
        let pr = if r.decision == Decision::ExactDuplicate {
            &mut out.exact
        } else {
            &mut out.near
        };
        pr.decided += 1;
        if ok {
            pr.correct += 1;
        } else {
            out.false_decisions.push((r.canonical.clone(), of.clone()));
        }
    }
    // Exact recall: in each exact truth cluster, every crawled member but one
    // should be an exact (or near) duplicate of another member.
    let mut members: HashMap<usize, Vec<&PageRecord>> = HashMap::new();
    for r in records.iter().filter(|r| content(r.decision)) {
        let id = exact.id(&r.canonical);
        let root = exact.find(id);
        members.entry(root).or_default().push(r);
    }
    for group in members.values().filter(|g| g.len() > 1) {
        out.exact.expected += group.len() as u64 - 1;
        for r in group {
            match &r.dup_of {
                Some(of) if r.decision.is_duplicate() && exact.same(&r.canonical, of) => out.exact.found += 1,
                _ => {}
            }
        }
        if let Some(first) = group.iter().find(|r| r.dup_of.is_none()) {
            for r in group
                .iter()
                .filter(|r| r.dup_of.is_none() && r.canonical != first.canonical)
            {
                out.missed.push((r.canonical.clone(), first.canonical.clone()));
            }
        }
    }
    // Near recall: truth pairs whose pages were both crawled.
    let crawled: std::collections::HashSet<&str> = records
        .iter()
        .filter(|r| content(r.decision))
        .map(|r| r.canonical.as_str())
        .collect();
    for pair in &truth.near_duplicate_pairs {
        let (a, b) = (c(&pair.a), c(&pair.b));
        if crawled.contains(a.as_str()) && crawled.contains(b.as_str()) {
            out.near.expected += 1;
            if crawl_clusters.same(&a, &b) {
                out.near.found += 1;
            } else {
                out.missed.push((b, a));
            }
        }
    }
    // robots.txt: the server must never have seen a disallowed URL.
    let disallowed: std::collections::HashSet<String> = truth.disallowed.iter().map(|u| c(u)).collect();
    for req in requests {
        let url = format!("http://{}:{}{}", req.host, truth.port, req.target);
        let u = c(&url);
        if disallowed.contains(&u) {
            out.robots_violations.push(u);
        }
    }
    out
}

/// What `simcrawl demo` did.
pub struct DemoResult {
    /// Where the crawl was written.
    pub out: PathBuf,
    /// The test web's address.
    pub addr: SocketAddr,
    /// The crawl's summary.
    pub summary: CrawlSummary,
    /// The crawl scored against the ground truth.
    pub score: TruthScore,
    /// Hosts of the test web.
    pub hosts: usize,
}

/// Start the test web, crawl it into `out` (a new temporary directory when
/// `None`), and score the result. `overrides` are `--set` style config keys
/// laid over `config/test.toml`.
pub async fn run(out: Option<PathBuf>, overrides: &[String], progress: bool) -> Result<DemoResult> {
    let settings = Settings::test_web(overrides)?;
    let out = match out {
        Some(o) => o,
        None => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            std::env::temp_dir().join(format!("simcrawl-demo-{stamp}"))
        }
    };
    let web = Arc::new(TestWeb::new(TestWebOptions::default()));
    let hosts = web.hosts().len();
    let server = RunningTestWeb::start(
        web,
        "127.0.0.1:0"
            .parse()
            .map_err(|_| Error::InvalidInput("address".into()))?,
    )
    .await
    .map_err(|e| Error::io("127.0.0.1:0 (test web)", e))?;
    let addr = server.addr;
    let opts = CrawlOptions {
        progress,
        ..CrawlOptions::new(&out, server.seeds())
    };
    let canon = Canonicalizer::new(&settings.canon);
    let summary = crawl::run(settings, opts, std::future::pending()).await?;
    let records = crawllog::read_log(&out.join(crate::model::CrawlDir::LOG_FILE))?;
    let score = score(&server.truth(), &records, &canon, &server.requests());
    server.shutdown().await;
    Ok(DemoResult {
        out,
        addr,
        summary,
        score,
        hosts,
    })
}

impl std::fmt::Display for DemoResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.summary;
        writeln!(
            f,
            "crawled the built-in test web ({} hosts on {}) in {:.1} s",
            self.hosts,
            self.addr,
            s.elapsed.as_secs_f64()
        )?;
        let parts: Vec<String> = s.by_decision.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(f, "  pages fetched     {} ({})", s.total_pages, parts.join(", "))?;
        for (name, pr) in [
            ("exact duplicates", &self.score.exact),
            ("near duplicates", &self.score.near),
        ] {
            writeln!(
                f,
                "  {name:<17} precision {:.3} ({}/{} decisions right)  recall {:.3} ({}/{} found) vs ground truth",
                pr.precision(),
                pr.correct,
                pr.decided,
                pr.recall(),
                pr.found,
                pr.expected
            )?;
        }
        writeln!(
            f,
            "  robots.txt        {} disallowed URLs requested",
            self.score.robots_violations.len()
        )?;
        let st = &s.stats;
        writeln!(
            f,
            "  dedup policy      {} out-links of duplicates demoted (fetched after other URLs), {} dropped and never fetched, {} mirror-copy URLs never fetched",
            st.dup_links_demoted.unwrap_or(0),
            st.dup_links_dropped.unwrap_or(0),
            st.mirror_fetches_saved.unwrap_or(0)
        )?;
        writeln!(
            f,
            "  crawl log         {}",
            self.out.join(crate::model::CrawlDir::LOG_FILE).display()
        )?;
        if let Some(r) = &s.reports {
            for file in r.files.iter().filter(|p| p.extension().is_some_and(|e| e == "html")) {
                writeln!(f, "  report            {}", file.display())?;
            }
        }
        Ok(())
    }
}
