//! Reports and mirror detection from a crawl log alone: a fixture builder
//! writes `pages.jsonl` records for hosts, a full mirror, a partial mirror
//! under a prefix, an overlap, near duplicates and errors; the tests check the
//! mirror pairs, clusters, summary, the files written, the CLI, the online
//! detector, and the JSON against the fields documented in docs/reports.md.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use simcrawl::config::MirrorSettings;
use simcrawl::crawllog::{CrawlLogWriter, PageRecord};
use simcrawl::mirror::{self, MirrorKind, OnlineMirrors};
use simcrawl::model::Decision;
use simcrawl::report::{self, Format, ReportKind};
use simcrawl::Settings;

/// Builds crawl records in crawl order. Content is named by an id: the same
/// id gives the same body hash (an exact duplicate of the first URL that had
/// it); `near` variants flip simhash bits and change the body hash.
#[derive(Default)]
pub struct Fixture {
    pub records: Vec<PageRecord>,
    first_url: HashMap<String, String>,
    clock: u32,
}

fn fp_of(content: &str) -> u64 {
    // A fixed, well-mixed 64-bit value per content id (FNV-1a + splitmix).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in content.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
    h ^ (h >> 31)
}

impl Fixture {
    fn base(&mut self, url: &str, parent: Option<&str>) -> PageRecord {
        self.clock += 1;
        PageRecord {
            url: url.to_string(),
            canonical: url.to_string(),
            final_url: url.to_string(),
            status: 200,
            depth: 1,
            parent: parent.map(str::to_string),
            fetched_at: format!("2025-01-01T00:{:02}:{:02}Z", self.clock / 60, self.clock % 60),
            bytes: 1000,
            content_type: Some("text/html".into()),
            latency_ms: Some(10 + u64::from(self.clock % 7)),
            delay_ms: Some(1000),
            robots: Some("allow".into()),
            outlinks: 3,
            ..Default::default()
        }
    }

    /// A fetched page with content `content` (exact duplicate if seen before).
    pub fn page(&mut self, url: &str, content: &str) -> &mut Self {
        self.page_from(url, content, None)
    }

    /// Same, found on `parent`.
    pub fn page_from(&mut self, url: &str, content: &str, parent: Option<&str>) -> &mut Self {
        let mut r = self.base(url, parent);
        r.content_hash = Some(format!("{:064x}", u128::from(fp_of(content))));
        r.text_hash = Some(format!("t{:063x}", u128::from(fp_of(content))));
        r.simhash = Some(format!("{:016x}", fp_of(content)));
        match self.first_url.get(content) {
            Some(orig) => {
                r.decision = Decision::ExactDuplicate;
                r.dup_of = Some(orig.clone());
                r.distance = Some(0);
            }
            None => {
                self.first_url.insert(content.to_string(), url.to_string());
            }
        }
        self.records.push(r);
        self
    }

    /// A near duplicate of the first page with `content`: `bits` simhash bits flipped.
    pub fn near(&mut self, url: &str, content: &str, bits: u32) -> &mut Self {
        let mut r = self.base(url, None);
        let orig = self.first_url.get(content).cloned().expect("near() of a known content");
        let fp = fp_of(content) ^ ((1u64 << bits) - 1) << 7;
        r.content_hash = Some(format!("{:064x}", u128::from(fp_of(url))));
        r.text_hash = Some(format!("t{:063x}", u128::from(fp_of(url))));
        r.simhash = Some(format!("{fp:016x}"));
        r.decision = Decision::NearDuplicate;
        r.dup_of = Some(orig);
        r.distance = Some(bits);
        self.records.push(r);
        self
    }

    /// A failed fetch (HTTP status, 0 = network error).
    pub fn error(&mut self, url: &str, status: u16) -> &mut Self {
        let mut r = self.base(url, None);
        r.status = status;
        r.decision = Decision::Error;
        r.error = Some(format!("http status {status}"));
        r.outlinks = 0;
        self.records.push(r);
        self
    }

    /// A URL robots.txt disallowed.
    pub fn disallowed(&mut self, url: &str) -> &mut Self {
        let mut r = self.base(url, None);
        r.status = 0;
        r.decision = Decision::Disallowed;
        r.robots = Some("disallow".into());
        r.latency_ms = None;
        r.outlinks = 0;
        self.records.push(r);
        self
    }

    pub fn write(&self, dir: &Path) {
        let f = std::fs::File::create(dir.join("pages.jsonl")).unwrap();
        let mut w = CrawlLogWriter::new(std::io::BufWriter::new(f));
        for r in &self.records {
            w.write(r).unwrap();
        }
        w.flush().unwrap();
    }
}

/// The standard fixture:
/// - a.test: 20 pages; b.test: a full mirror of a.test (2 near copies, 1 missing, 1 extra);
/// - c.test/mirror/docs/ mirrors a.test/docs/ (a partial mirror), c.test has its own pages;
/// - d.test shares one page with a.test at the same path (overlap, not a mirror);
/// - a.test has a near-duplicate cluster; e.test has errors and a disallowed URL.
pub fn standard() -> Fixture {
    let mut f = Fixture::default();
    let a_paths: Vec<String> = std::iter::once("/".to_string())
        .chain(["/about.html".to_string()])
        .chain((0..8).map(|i| format!("/docs/p{i}.html")))
        .chain((0..10).map(|i| format!("/news/n{i}.html")))
        .collect();
    for p in &a_paths {
        f.page(&format!("http://a.test{p}"), &format!("A{p}"));
    }
    f.near("http://a.test/news/n1-print.html", "A/news/n1.html", 2);
    f.near("http://a.test/news/n1-amp.html", "A/news/n1.html", 3);
    for (i, p) in a_paths.iter().enumerate() {
        let url = format!("http://b.test{p}");
        match i {
            3 | 12 => f.near(&url, &format!("A{p}"), 1),
            19 => continue, // not fetched on b.test
            _ => f.page_from(&url, &format!("A{p}"), Some("http://x.test/links.html")),
        };
    }
    f.page("http://b.test/extra.html", "B-extra");
    f.page("http://c.test/", "C/");
    for i in 0..6 {
        f.page(&format!("http://c.test/blog/b{i}.html"), &format!("C/blog/{i}"));
    }
    for i in 0..8 {
        f.page(
            &format!("http://c.test/mirror/docs/p{i}.html"),
            &format!("A/docs/p{i}.html"),
        );
    }
    f.page("http://d.test/", "D/");
    f.page("http://d.test/about.html", "A/about.html");
    f.page("http://d.test/news/n0.html", "D-n0");
    f.page("http://d.test/news/n1.html", "D-n1");
    for i in 0..4 {
        f.page(&format!("http://d.test/x{i}.html"), &format!("D/x{i}"));
    }
    f.page("http://e.test/", "E/");
    f.error("http://e.test/missing.html", 404);
    f.error("http://e.test/broken.html", 500);
    f.disallowed("http://e.test/private/x.html");
    f
}

fn settings() -> MirrorSettings {
    Settings::default().mirror
}

fn mirror_keys(r: &mirror::MirrorReport) -> BTreeSet<(String, String, String, String, MirrorKind)> {
    r.pairs
        .iter()
        .filter(|p| p.kind.is_mirror())
        .map(|p| {
            (
                p.host_a.clone(),
                p.prefix_a.clone(),
                p.host_b.clone(),
                p.prefix_b.clone(),
                p.kind,
            )
        })
        .collect()
}

#[test]
fn mirrors_found_exactly_with_prefixes() {
    let f = standard();
    let r = mirror::detect(&f.records, &settings());
    let want: BTreeSet<_> = [
        ("a.test", "/", "b.test", "/", MirrorKind::Full),
        ("a.test", "/docs/", "c.test", "/mirror/docs/", MirrorKind::Partial),
    ]
    .into_iter()
    .map(|(a, pa, b, pb, k)| (a.to_string(), pa.to_string(), b.to_string(), pb.to_string(), k))
    .collect();
    assert_eq!(mirror_keys(&r), want, "{:#?}", r.pairs);

    let full = &r.pairs[0];
    assert_eq!(full.kind, MirrorKind::Full);
    // 19 shared paths: 17 exact, 2 near; a.test/news/n9.html and the two
    // a.test near copies have no counterpart; b.test/extra.html has none.
    assert_eq!((full.compared, full.exact, full.near, full.differ), (19, 17, 2, 0));
    assert_eq!((full.only_a, full.only_b), (3, 1));
    assert!((full.score - 1.0).abs() < 1e-9);
    assert!(full.examples.iter().all(|e| e.url_a.starts_with("http://a.test/")));
    let partial = r.pairs.iter().find(|p| p.kind == MirrorKind::Partial).unwrap();
    assert_eq!(
        (partial.compared, partial.exact, partial.only_a, partial.only_b),
        (8, 8, 0, 0)
    );

    // d.test overlaps a.test (one shared page out of three same-path pages).
    let overlap = r
        .pairs
        .iter()
        .find(|p| p.host_b == "d.test" || p.host_a == "d.test")
        .unwrap();
    assert_eq!(overlap.kind, MirrorKind::Overlap);
    assert_eq!((overlap.compared, overlap.exact), (4, 1), "{overlap:#?}");

    // One mirror set. a.test was crawled first, but the rule puts in-links
    // first: 17 of b.test's pages were linked from x.test.
    assert_eq!(r.sets.len(), 1);
    assert_eq!(r.sets[0].hosts, vec!["a.test", "b.test", "c.test"]);
    assert_eq!(r.sets[0].inlinks, vec![0, 17, 0]);
    assert_eq!(r.sets[0].canonical, "b.test", "most in-links wins");
}

/// o.test is copied whole by m1.test and m2.test; for some paths m2's copy
/// is fetched first, so duplicate matches also join m1 and m2 directly.
fn two_copies() -> Fixture {
    let mut f = Fixture::default();
    let paths: Vec<String> = (0..10).map(|i| format!("/p{i}.html")).collect();
    for (i, p) in paths.iter().enumerate() {
        if i % 3 == 0 {
            f.page(&format!("http://m2.test{p}"), p);
        }
        f.page(&format!("http://o.test{p}"), p);
    }
    for (i, p) in paths.iter().enumerate() {
        f.page(&format!("http://m1.test{p}"), p);
        if i % 3 != 0 {
            f.page(&format!("http://m2.test{p}"), p);
        }
    }
    f
}

#[test]
fn copies_of_one_original_give_an_implied_pair() {
    let f = two_copies();
    let r = mirror::detect(&f.records, &settings());
    let keys: Vec<_> = mirror_keys(&r).into_iter().map(|k| (k.0, k.2)).collect();
    assert_eq!(
        keys,
        vec![("o.test".into(), "m1.test".into()), ("o.test".into(), "m2.test".into())],
        "{:#?}",
        r.pairs
    );
    assert_eq!(r.implied.len(), 1, "{:#?}", r.implied);
    assert_eq!(r.implied[0].via, "o.test");
    assert_eq!(r.sets[0].hosts.len(), 3);
}

#[test]
fn mirrors_need_sample_and_score() {
    let f = standard();
    let strict = MirrorSettings {
        min_sample: 10,
        ..settings()
    };
    let r = mirror::detect(&f.records, &strict);
    // The 8-page partial mirror falls below the sample size.
    let kinds: Vec<_> = r.pairs.iter().map(|p| (p.host_b.as_str(), p.kind)).collect();
    assert!(kinds.contains(&("b.test", MirrorKind::Full)), "{kinds:?}");
    assert!(kinds.contains(&("c.test", MirrorKind::Overlap)), "{kinds:?}");
    let lax = MirrorSettings {
        min_score: 0.2,
        min_coverage: 0.1,
        min_sample: 1,
        ..settings()
    };
    let r = mirror::detect(&f.records, &lax);
    assert!(r
        .pairs
        .iter()
        .any(|p| p.host_b == "d.test" && p.kind == MirrorKind::Full));
}

#[test]
fn no_false_pairs_from_shared_boilerplate() {
    // 30 hosts that each share one identical page (same path) and nothing else.
    let mut f = Fixture::default();
    for h in 0..30 {
        f.page(&format!("http://h{h}.test/"), &format!("home{h}"));
        f.page(&format!("http://h{h}.test/terms.html"), "terms");
        for i in 0..5 {
            f.page(&format!("http://h{h}.test/p{i}.html"), &format!("h{h}p{i}"));
        }
    }
    let r = mirror::detect(&f.records, &settings());
    assert!(r.pairs.iter().all(|p| !p.kind.is_mirror()), "{:#?}", r.pairs);
    assert!(r.sets.is_empty());
}

#[test]
fn candidates_scale_with_matches_not_host_pairs() {
    // 10,000 hosts of 3 pages each; 50 mirror pairs among them.
    let mut f = Fixture::default();
    for h in 0..10_000 {
        let src = if h % 200 == 1 { h - 1 } else { h };
        for p in ["/", "/a.html", "/b/c.html", "/d.html", "/e.html"] {
            f.page(&format!("http://h{h}.test{p}"), &format!("{src}{p}"));
        }
    }
    let start = Instant::now();
    let r = mirror::detect(&f.records, &settings());
    let took = start.elapsed();
    assert_eq!(r.hosts, 10_000);
    assert_eq!(r.pairs.iter().filter(|p| p.kind == MirrorKind::Full).count(), 50);
    assert!(r.candidates <= 50 * 3, "candidates {}", r.candidates);
    // All-pairs would be 5e7 host comparisons; this is a few linear passes.
    assert!(took.as_secs() < 10, "took {took:?}");
}

#[test]
fn clusters_largest_first() {
    let f = standard();
    let c = report::clusters::build(&f.records);
    assert_eq!(c.clusters[0].size, c.largest);
    assert!(c.clusters.windows(2).all(|w| w[0].size >= w[1].size));
    // a.test/news/n1.html: its exact b.test copy and two near copies on a.test.
    let n1 = c
        .clusters
        .iter()
        .find(|cl| cl.original == "http://a.test/news/n1.html")
        .expect("n1 cluster");
    let members: Vec<&str> = n1.members.iter().map(|m| m.url.as_str()).collect();
    assert_eq!(members[0], "http://a.test/news/n1.html");
    assert!(members.contains(&"http://a.test/news/n1-amp.html"));
    assert_eq!((n1.size, n1.max_distance), (4, 3));
    assert_eq!(n1.near, 2);
    // a.test/docs/p0.html is on b.test and c.test too: 3 members, 3 hosts.
    let p0 = c
        .clusters
        .iter()
        .find(|cl| cl.original == "http://a.test/docs/p0.html")
        .unwrap();
    assert_eq!((p0.size, p0.hosts, p0.exact, p0.max_distance), (3, 3, 2, 0));
    // The report is written a cluster at a time; it reads as the clusters
    // built whole do.
    let json = report::render(
        ReportKind::Clusters,
        Format::Json,
        &f.records,
        &Settings::default(),
        None,
    )
    .unwrap();
    assert_eq!(json, serde_json::to_string_pretty(&c).unwrap() + "\n");
}

#[test]
fn summary_counts() {
    let f = standard();
    let s = report::summary::build(&f.records, None);
    assert_eq!(s.records, f.records.len() as u64);
    let count = |d: &str| s.by_decision.iter().find(|x| x.decision == d).unwrap().count;
    assert_eq!(count("error"), 2);
    assert_eq!(count("disallowed"), 1);
    assert_eq!(count("near_duplicate"), 4);
    assert_eq!(count("exact_duplicate") + count("near_duplicate"), s.dedup.duplicates);
    let e = s.hosts.iter().find(|h| h.host == "e.test").unwrap();
    assert_eq!((e.fetched, e.pages, e.errors, e.disallowed), (4, 1, 2, 1));
    let b = s.hosts.iter().find(|h| h.host == "b.test").unwrap();
    assert_eq!((b.pages, b.duplicates), (20, 19));
    assert_eq!(b.mean_delay_ms, Some(1000.0));
    assert_eq!(
        s.by_status.iter().map(|x| x.status).collect::<Vec<_>>(),
        vec![0, 200, 404, 500]
    );
    assert_eq!(s.dedup.fetches_saved, None);
    let fp = &s.fingerprints;
    assert_eq!(fp.count, (s.pages) as u64);
    assert_eq!(fp.leading_bit.iter().sum::<u64>(), fp.distinct - 1);
    assert_eq!(fp.buckets.iter().sum::<u64>(), fp.distinct);
}

#[test]
fn write_all_and_regenerate_from_stored_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let f = standard();
    f.write(dir.path());
    std::fs::write(
        dir.path().join("crawl_stats.json"),
        r#"{"dup_links_dropped": 40, "dup_links_demoted": 3, "mirror_fetches_saved": 7, "future_field": 1}"#,
    )
    .unwrap();
    let settings = Settings::default();
    let paths = report::write_all(dir.path(), &f.records, &settings).unwrap();
    let names: Vec<String> = paths
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "summary.json",
        "clusters.json",
        "mirrors.json",
        "mirrors.csv",
        "mirrors.html",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(paths.dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["dedup"]["fetches_saved"], 47);

    // The CLI regenerates every file byte for byte from pages.jsonl alone.
    for (kind, format) in report::ALL_REPORTS {
        let out = Command::new(env!("CARGO_BIN_EXE_simcrawl"))
            .args(["report", kind.name(), "--crawl"])
            .arg(dir.path())
            .args(["--format", format.ext()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stored = std::fs::read(paths.dir.join(format!("{}.{}", kind.name(), format.ext()))).unwrap();
        assert!(out.stdout == stored, "{} {} differs", kind.name(), format.ext());
    }
    let csv = report::render(ReportKind::Mirrors, Format::Csv, &f.records, &settings, None).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("host_a,prefix_a,host_b,prefix_b,kind,"));
    assert!(
        csv.contains("a.test,/docs/,c.test,/mirror/docs/,partial,8,8,0,0,0,0,1.0000,1.0000"),
        "{csv}"
    );
}

#[test]
fn report_cli_rejects_a_non_crawl_dir() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_simcrawl"))
        .args(["report", "summary", "--crawl"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no pages.jsonl"));
}

#[test]
fn html_is_self_contained() {
    let f = standard();
    let settings = Settings::default();
    for kind in [ReportKind::Summary, ReportKind::Clusters, ReportKind::Mirrors] {
        let html = report::render(kind, Format::Html, &f.records, &settings, None).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        for bad in ["<link", "src=\"http", "src='http", "@import", "url(http"] {
            assert!(!html.contains(bad), "{} has {bad}", kind.name());
        }
    }
    let html = report::render(ReportKind::Mirrors, Format::Html, &f.records, &settings, None).unwrap();
    assert!(html.contains("<code>a.test/docs/</code> ↔ <code>c.test/mirror/docs/</code>"));
    let html = report::render(ReportKind::Summary, Format::Html, &f.records, &settings, None).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
}

/// Every JSON path of a value: `a.b`, arrays of objects as `a[].b`.
fn json_paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                json_paths(v, &p, out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_object()) {
                json_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The documented paths of each report: rows "| `path` | type | meaning |"
/// under a heading naming the file (`## summary.json`).
fn documented() -> HashMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reports.md")).unwrap();
    let mut out: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = ["summary.json", "clusters.json", "mirrors.json"]
                .into_iter()
                .find(|f| h.contains(f))
                .map(str::to_string);
        } else if let (Some(cur), Some(rest)) = (&current, line.strip_prefix("| `")) {
            if let Some(end) = rest.find('`') {
                out.entry(cur.clone()).or_default().insert(rest[..end].to_string());
            }
        }
    }
    out
}

#[test]
fn json_matches_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let f = standard();
    std::fs::write(
        dir.path().join("crawl_stats.json"),
        r#"{"dup_links_dropped": 1, "dup_links_demoted": 2, "mirror_fetches_saved": 3}"#,
    )
    .unwrap();
    let paths = report::write_all(dir.path(), &f.records, &Settings::default()).unwrap();
    let docs = documented();
    for name in ["summary.json", "clusters.json", "mirrors.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(paths.dir.join(name)).unwrap()).unwrap();
        let mut got = BTreeSet::new();
        json_paths(&v, "", &mut got);
        if name == "summary.json" {
            // `harvest` appears only for focused crawls (records with a relevance),
            // `revisits` only for recrawls (records with `revisit`).
            let mut focused = f.records.clone();
            focused[0].relevance = Some(0.5);
            focused[1].revisit = Some(2);
            focused[1].change = Some(simcrawl::model::Change::Changed);
            json_paths(
                &serde_json::to_value(report::summary::build(&focused, None)).unwrap(),
                "",
                &mut got,
            );
        }
        if name == "mirrors.json" {
            // The standard fixture has no implied pair; this one has.
            let other = mirror::detect(&two_copies().records, &settings());
            json_paths(&serde_json::to_value(&other).unwrap(), "", &mut got);
        }
        let doc = docs.get(name).cloned().unwrap_or_default();
        let undocumented: Vec<_> = got.difference(&doc).collect();
        let missing: Vec<_> = doc.difference(&got).collect();
        assert!(
            undocumented.is_empty(),
            "{name}: fields not in docs/reports.md: {undocumented:?}"
        );
        assert!(missing.is_empty(), "{name}: documented but not produced: {missing:?}");
    }
}

#[test]
fn online_detector_establishes_and_demotes() {
    online_detector_establishes_and_demotes_with(OnlineMirrors::new(&settings()));
}

/// The same with the pages on disk but for the newest 4.
#[test]
fn online_detector_on_disk_establishes_and_demotes() {
    let dir = tempfile::tempdir().unwrap();
    online_detector_establishes_and_demotes_with(OnlineMirrors::spilling(&settings(), dir.path(), 4));
}

fn online_detector_establishes_and_demotes_with(mut online: OnlineMirrors) {
    let f = standard();
    let mut penalties_before = 0;
    for r in &f.records {
        if r.canonical == "http://b.test/news/n8.html" {
            // Asked before b.test/news/n8.html is fetched: b.test is established by now.
            let got = online.penalty_for(&r.canonical).unwrap();
            assert_eq!(
                got,
                Some((settings().penalty, "http://a.test/news/n8.html".to_string())),
                "{:?}",
                online.established()
            );
        }
        if r.canonical.starts_with("http://b.test/")
            && online.penalty_for("http://b.test/never.html").unwrap().is_some()
        {
            penalties_before += 1;
        }
        online.observe(r).unwrap();
    }
    assert_eq!(penalties_before, 0, "no counterpart known: no penalty");
    let est = online.established();
    assert!(
        est.contains(&("b.test".into(), "/".into(), "a.test".into(), "/".into())),
        "{est:?}"
    );
    // Not established: d.test.
    assert!(est.iter().all(|e| e.0 != "d.test" && e.2 != "d.test"), "{est:?}");
    // a.test/news/n9.html was never fetched on b.test: a saved fetch once demoted.
    assert_eq!(
        online.penalty_for("http://b.test/news/n9.html").unwrap().map(|p| p.1),
        Some("http://a.test/news/n9.html".into())
    );
    assert_eq!(
        online.penalty_for("http://a.test/news/n9.html").unwrap(),
        None,
        "the original is not demoted"
    );
    let st = online.stats();
    assert_eq!(st.demoted, 2);
    assert_eq!(st.demoted_fetched, 1);
    assert_eq!(st.fetches_saved(), 1);
    let off = MirrorSettings {
        online: false,
        ..settings()
    };
    let mut online = OnlineMirrors::new(&off);
    f.records.iter().for_each(|r| online.observe(r).unwrap());
    assert_eq!(online.penalty_for("http://b.test/news/n9.html").unwrap(), None);
}

/// `tests/data/mirror-fixture/pages.jsonl` is the standard fixture, stored so
/// `scripts/browser-test.sh` and people can render it without Rust code.
/// Regenerate with `UPDATE_FIXTURES=1 cargo test --test tests stored_fixture`.
#[test]
fn stored_fixture_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mirror-fixture");
    let tmp = tempfile::tempdir().unwrap();
    standard().write(tmp.path());
    let fresh = std::fs::read(tmp.path().join("pages.jsonl")).unwrap();
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pages.jsonl"), &fresh).unwrap();
    }
    let stored = std::fs::read(dir.join("pages.jsonl")).unwrap();
    assert!(
        stored == fresh,
        "tests/data/mirror-fixture/pages.jsonl is stale: rerun with UPDATE_FIXTURES=1"
    );
}

/// Two versions of one documentation site: the same paths, most pages the
/// same, some rewritten. Issue 22: versions are not mirrors.
#[test]
fn versions_of_one_site_are_not_mirrors() {
    let mut f = Fixture::default();
    for i in 0..40 {
        f.page(&format!("http://v1.test/p{i}.html"), &format!("v1/p{i}"));
    }
    for i in 0..40 {
        // 34 of 40 pages unchanged (85 %), 6 rewritten.
        let content = if i % 7 == 3 {
            format!("v2/p{i}")
        } else {
            format!("v1/p{i}")
        };
        f.page(&format!("http://v2.test/p{i}.html"), &content);
    }
    let r = mirror::detect(&f.records, &settings());
    assert!(r.pairs.iter().all(|p| !p.kind.is_mirror()), "{:#?}", r.pairs);
    assert!(r.sets.is_empty(), "{:#?}", r.sets);
}

/// A site that holds all of another one's pages and many more besides is
/// not its mirror: coverage counts on both sides.
#[test]
fn a_superset_is_not_a_mirror() {
    let mut f = Fixture::default();
    for i in 0..10 {
        f.page(&format!("http://small.test/p{i}.html"), &format!("p{i}"));
    }
    for i in 0..10 {
        f.page(&format!("http://big.test/p{i}.html"), &format!("p{i}"));
    }
    for i in 10..40 {
        f.page(&format!("http://big.test/p{i}.html"), &format!("big/p{i}"));
    }
    let r = mirror::detect(&f.records, &settings());
    assert!(r.sets.is_empty(), "{:#?}", r.pairs);
    // Both sides whole: a mirror, in a set whose score is its pair's.
    let mut f = Fixture::default();
    for i in 0..10 {
        f.page(&format!("http://small.test/p{i}.html"), &format!("p{i}"));
        f.page(&format!("http://copy.test/p{i}.html"), &format!("p{i}"));
    }
    let r = mirror::detect(&f.records, &settings());
    assert_eq!(r.sets.len(), 1, "{:#?}", r.pairs);
    assert_eq!(r.sets[0].score, 1.0);
}
