//! The binary's contract (README "Commands", docs/usage.md): every command's
//! happy path, and its exit codes: 0 on success, 2 on bad usage or bad input
//! with a one-line reason on stderr, 1 (also one line) when an input file
//! cannot be read. One small crawl of the test web (a
//! `simcrawl testweb` child, `crawl --max-pages`) serves `report`, `explain`
//! and `eval --crawl`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

fn simcrawl() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_simcrawl"));
    // Only errors on stderr, so a one-line reason is the whole of it.
    c.env("RUST_LOG", "error");
    c
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs `c`, requires exit code 0, returns stdout.
fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{c:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `c`, requires exit code 2 and exactly one line on stderr naming the
/// error; returns that line.
fn bad_input(c: &mut Command) -> String {
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(out.status.code(), Some(2), "{c:?}\nstderr: {err}");
    assert_eq!(err.lines().count(), 1, "{c:?}: one line on stderr, got:\n{err}");
    assert!(err.starts_with("simcrawl: error: "), "{err}");
    err
}

/// Runs `c`, requires exit code 1 (a failure other than bad usage, such as
/// an input file that cannot be read) and one line on stderr; returns it.
fn failure(c: &mut Command) -> String {
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(out.status.code(), Some(1), "{c:?}\nstderr: {err}");
    assert_eq!(err.lines().count(), 1, "{c:?}: one line on stderr, got:\n{err}");
    assert!(err.starts_with("simcrawl: error: "), "{err}");
    err
}

/// Runs `c`, requires exit code 2 from argument parsing (clap: the reason
/// first, then the usage).
fn bad_usage(c: &mut Command) {
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{c:?}\nstderr: {err}");
    assert!(err.starts_with("error: "), "{c:?}: {err}");
}

#[test]
fn unknown_or_missing_command_is_bad_usage() {
    bad_usage(simcrawl().arg("no-such-command"));
    // No command: the help, and exit code 2.
    let out = simcrawl().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: simcrawl"));
    bad_usage(simcrawl().args(["bench", "no-such-bench"]));
    let version = ok(simcrawl().arg("--version"));
    assert!(version.starts_with("simcrawl "), "{version}");
}

#[test]
fn canon_prints_one_canonical_url_per_input() {
    let out = ok(simcrawl().args([
        "canon",
        "HTTP://WWW.News.TEST:80/a/./b/index.html?utm_source=x&b=2&a=1#top",
    ]));
    assert_eq!(out, "http://www.news.test/a/b/?a=1&b=2\n");
    let out = ok(simcrawl().args(["canon", "--profile", "rfc3986", "HTTP://A.test:80/x/../y?b=2&a=1"]));
    assert_eq!(out, "http://a.test/y?b=2&a=1\n");
    // An invalid input is a line "error: ..." in its place, and exit code 2.
    let o = simcrawl()
        .args(["canon", "http://a.test/", "mailto:x@a.test"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let lines: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], "http://a.test/");
    assert!(lines[1].starts_with("error: "), "{lines:?}");
    bad_usage(simcrawl().arg("canon"));
    bad_usage(simcrawl().args(["canon", "--profile", "nope", "http://a.test/"]));
}

#[test]
fn robots_answers_per_url_and_crawl_delay() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("robots.txt");
    std::fs::write(
        &file,
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: simcrawl\nDisallow: /calendar/\n",
    )
    .unwrap();
    let out = ok(simcrawl()
        .args(["robots", "--agent", "simcrawl", "--robots"])
        .arg(&file)
        .args(["http://a.test/private/x", "http://a.test/calendar/2024"]));
    assert_eq!(out, "allow\ndisallow\n");
    let out = ok(simcrawl()
        .args(["robots", "--agent", "otherbot", "--crawl-delay", "--robots"])
        .arg(&file)
        .arg("http://a.test/private/x"));
    assert_eq!(out, "2\ndisallow\n");
    let out = ok(simcrawl().args(["robots", "--status", "503", "--agent", "simcrawl", "http://a.test/"]));
    assert_eq!(out, "disallow\n");
    let out = ok(simcrawl().args(["robots", "--status", "404", "--agent", "simcrawl", "http://a.test/"]));
    assert_eq!(out, "allow\n");
    let err = failure(
        simcrawl()
            .args(["robots", "--agent", "simcrawl", "--robots"])
            .arg(dir.path().join("missing.txt"))
            .arg("http://a.test/"),
    );
    assert_eq!(err.matches("missing.txt").count(), 1, "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "the cause once: {err}");
    bad_usage(simcrawl().args(["robots", "--agent", "simcrawl", "http://a.test/"]));
}

#[test]
fn fingerprint_prints_hex_and_path_per_file() {
    let dir = repo("tests/data/fingerprint");
    let out = ok(simcrawl().arg("fingerprint").arg(&dir));
    assert!(out.lines().count() >= 4, "{out}");
    for line in out.lines() {
        let (hex, path) = line.split_once('\t').unwrap();
        assert!(
            hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{line}"
        );
        assert!(Path::new(path).is_file(), "{line}");
    }
    let err = bad_input(simcrawl().arg("fingerprint").arg(dir.join("no-such-file.html")));
    assert!(err.contains("no-such-file.html"), "{err}");
    let err = bad_input(
        simcrawl()
            .args(["fingerprint", "--set", "features.no_such_key=1"])
            .arg(&dir),
    );
    assert!(err.contains("features.no_such_key"), "{err}");
}

#[test]
fn hamming_prints_pairs_within_k() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.txt");
    let q = dir.path().join("q.txt");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&f, "0000000000000000\nffffffffffffffff\n0123456789abcdef\n").unwrap();
    std::fs::write(&q, "0000000000000001\n0123456789abcdee\n").unwrap();
    std::fs::write(&bad, "0000000000000001\nxyz\n").unwrap();
    let out = ok(simcrawl()
        .arg("hamming")
        .arg("--fingerprints")
        .arg(&f)
        .arg("--queries")
        .arg(&q));
    assert_eq!(out, "1\t1\t1\n2\t3\t1\n");
    let err = bad_input(
        simcrawl()
            .arg("hamming")
            .arg("--fingerprints")
            .arg(&f)
            .arg("--queries")
            .arg(&bad),
    );
    assert!(err.contains("bad.txt:2"), "{err}");
}

#[test]
fn near_and_eval_on_a_corpus() {
    let corpus = repo("tests/data/fingerprint/blog");
    let out = ok(simcrawl().args(["near", "--corpus"]).arg(&corpus));
    assert!(
        out.lines()
            .any(|l| l.contains("post-copy.html") && l.contains("post.html")),
        "the copy and its original are a pair: {out}"
    );
    let out = ok(simcrawl()
        .args(["near", "--method", "minhash", "--clusters", "--corpus"])
        .arg(&corpus));
    assert!(out.lines().all(|l| l.split('\t').count() >= 2), "{out}");
    let err = failure(simcrawl().args(["near", "--corpus"]).arg(corpus.join("no-such-dir")));
    assert_eq!(err.matches("No such file").count(), 1, "the cause once: {err}");

    let dir = tempfile::tempdir().unwrap();
    ok(simcrawl()
        .args(["eval", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(dir.path()));
    assert!(dir.path().join("eval.csv").is_file());
    bad_usage(simcrawl().arg("eval"));
}

#[test]
fn report_regenerates_from_a_stored_crawl() {
    let fixture = repo("tests/data/mirror-fixture");
    let json = ok(simcrawl().args(["report", "summary", "--crawl"]).arg(&fixture));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v.is_object(), "{json}");
    let csv = ok(simcrawl()
        .args(["report", "mirrors", "--format", "csv", "--crawl"])
        .arg(&fixture));
    assert!(csv.lines().any(|l| l.starts_with("a.test,/,b.test,/,full,")), "{csv}");
    let html = ok(simcrawl()
        .args(["report", "clusters", "--format", "html", "--crawl"])
        .arg(&fixture));
    assert!(html.contains("<html"), "{html}");
    bad_input(
        simcrawl()
            .args(["report", "summary", "--crawl"])
            .arg(fixture.join("no-such-dir")),
    );
    bad_usage(simcrawl().args(["report", "everything", "--crawl"]).arg(&fixture));
}

/// A `simcrawl testweb` child on a free port, killed on drop.
struct TestWebChild {
    child: Child,
    port: u16,
}

impl TestWebChild {
    fn start(truth: &Path) -> TestWebChild {
        let mut child = simcrawl()
            .args(["testweb", "--addr", "127.0.0.1:0", "--pages", "30", "--truth"])
            .arg(truth)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr: std::net::SocketAddr = first.trim().rsplit(' ').next().unwrap().parse().unwrap();
        TestWebChild {
            child,
            port: addr.port(),
        }
    }
}

impl Drop for TestWebChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One small crawl of the test web through the CLI, shared by the tests
/// that read a crawl: its directory and the seed URL.
struct Crawled {
    _dir: tempfile::TempDir,
    out: PathBuf,
    seed: String,
}

fn crawled() -> &'static Crawled {
    static CRAWL: OnceLock<Crawled> = OnceLock::new();
    CRAWL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let truth = dir.path().join("truth.json");
        let web = TestWebChild::start(&truth);
        let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&truth).unwrap()).unwrap();
        assert_eq!(t["port"], web.port, "the truth names the served port");
        let seed = format!("http://www.news.test:{}/", web.port);
        let seeds = dir.path().join("seeds.txt");
        std::fs::write(&seeds, format!("{seed}\n")).unwrap();
        let out = dir.path().join("out");
        let printed = ok(simcrawl()
            .args(["crawl", "--max-pages", "40", "--config"])
            .arg(repo("config/test.toml"))
            .arg("--seeds")
            .arg(&seeds)
            .arg("--out")
            .arg(&out));
        assert!(printed.starts_with("crawl MaxPages: 40 pages this run"), "{printed}");
        Crawled { _dir: dir, out, seed }
    })
}

#[test]
fn testweb_crawl_report_explain_and_eval_on_one_crawl() {
    let c = crawled();
    let log = std::fs::read_to_string(c.out.join("pages.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 40);
    for name in ["summary.json", "clusters.json", "mirrors.html"] {
        assert!(c.out.join("reports").join(name).is_file(), "{name}");
    }
    let summary = ok(simcrawl().args(["report", "summary", "--crawl"]).arg(&c.out));
    assert!(summary.contains("\"pages\""), "{summary}");

    let why = ok(simcrawl().args(["explain", "--crawl"]).arg(&c.out).arg(&c.seed));
    assert!(
        why.lines().any(|l| l.starts_with("decision") && l.contains("new")),
        "{why}"
    );
    let never = ok(simcrawl()
        .args(["explain", "--crawl"])
        .arg(&c.out)
        .arg("http://www.news.test:1/not-crawled"));
    assert!(never.contains("was never queued"), "{never}");
    let err = bad_input(
        simcrawl()
            .args(["explain", "--crawl"])
            .arg(c.out.join("reports"))
            .arg(&c.seed),
    );
    assert!(err.contains("not a crawl directory"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let table = ok(simcrawl()
        .args(["eval", "--crawl"])
        .arg(&c.out)
        .arg("--out")
        .arg(dir.path()));
    assert!(!table.is_empty());
    assert!(dir.path().join("eval.txt").is_file());
}

#[test]
fn crawl_rejects_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let config = repo("config/test.toml");
    let err = bad_input(
        simcrawl()
            .args(["crawl", "--config"])
            .arg(&config)
            .arg("--out")
            .arg(dir.path().join("o")),
    );
    assert!(err.contains("--seeds"), "{err}");
    bad_input(
        simcrawl()
            .args(["crawl", "--config"])
            .arg(dir.path().join("missing.toml"))
            .arg("--seeds")
            .arg(&config)
            .arg("--out")
            .arg(dir.path().join("o")),
    );
    let err = bad_input(
        simcrawl()
            .args(["crawl", "--set", "crawl.max_depth=-3", "--config"])
            .arg(&config)
            .arg("--out")
            .arg(dir.path().join("o"))
            .arg("--resume"),
    );
    assert!(err.contains("crawl.max_depth"), "{err}");
    bad_usage(simcrawl().args(["crawl", "--no-such-flag"]));
}

#[test]
fn crawl_metrics_address_that_cannot_be_served_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(&seeds, "http://127.0.0.1:9/\n").unwrap();
    let crawl = |metrics: &str| {
        let mut c = simcrawl();
        c.args(["crawl", "--config"])
            .arg(repo("config/test.toml"))
            .arg("--seeds")
            .arg(&seeds)
            .arg("--out")
            .arg(dir.path().join("o"))
            .args(["--metrics", metrics]);
        c
    };
    let err = bad_input(&mut crawl("localhost"));
    assert!(
        err.contains("--metrics \"localhost\"") && err.contains("IP:PORT"),
        "{err}"
    );
    let err = bad_input(&mut crawl("127.0.0.1:99999"));
    assert!(err.contains("--metrics"), "{err}");
    // A port already in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = bad_input(&mut crawl(&addr));
    assert!(err.contains(&addr) && err.contains("cannot listen"), "{err}");
    assert!(!dir.path().join("o").exists(), "nothing is created");
}

/// The main job: about 12 s of wall time (politeness waits), little CPU.
#[test]
fn demo_crawls_the_test_web_and_scores_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(simcrawl().arg("demo").arg("--out").arg(dir.path()));
    assert!(out.starts_with("crawled the built-in test web"), "{out}");
    for prefix in [
        "  exact duplicates  precision 1.000",
        "  near duplicates   precision 1.000",
    ] {
        assert!(out.lines().any(|l| l.starts_with(prefix)), "{prefix}: {out}");
    }
    assert!(out.contains("robots.txt        0 disallowed URLs requested"), "{out}");
    assert!(dir.path().join("pages.jsonl").is_file());
    assert!(dir.path().join("reports/summary.html").is_file());
}

#[test]
fn testweb_rejects_a_bad_address() {
    let err = bad_input(simcrawl().args(["testweb", "--addr", "localhost"]));
    assert!(err.contains("--addr"), "{err}");
}

#[test]
fn bench_index_runs_small() {
    let out = ok(simcrawl().args([
        "bench",
        "index",
        "--n",
        "5000",
        "--queries",
        "2000",
        "--workload",
        "random",
        "--no-btree",
        "--brute-queries",
        "20",
    ]));
    let misses = out
        .lines()
        .find(|l| l.starts_with("misses vs brute force"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(misses.split_whitespace().nth(4), Some("0"), "{misses}");
}

/// `config/default.toml` sends crawler operators and site owners to the
/// README's "Identify your crawler" section: the anchor must exist.
#[test]
fn default_contact_url_points_at_a_readme_section() {
    let config = std::fs::read_to_string(repo("config/default.toml")).unwrap();
    let url = config
        .lines()
        .find_map(|l| l.strip_prefix("contact_url = "))
        .unwrap()
        .trim_matches('"');
    let anchor = url.rsplit_once('#').unwrap().1;
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    assert!(
        readme.contains(&format!("<a id=\"{anchor}\"></a>")),
        "README has no anchor #{anchor}"
    );
}

#[test]
fn bench_commands_run_small_and_reject_bad_input() {
    let out = ok(simcrawl().args([
        "bench",
        "index",
        "--n",
        "2000",
        "--queries",
        "50",
        "--workload",
        "random",
    ]));
    assert!(out.contains("misses vs brute force                         0"), "{out}");
    let out = ok(simcrawl().args(["bench", "hamming", "--fingerprints", "2000", "--queries", "20"]));
    assert!(
        out.contains("queries disagreeing with brute force            0"),
        "{out}"
    );
    let out = ok(simcrawl().args(["bench", "frontier", "--pages", "500"]));
    assert!(out.contains("frontier over DiskStore"), "{out}");
    let out = ok(simcrawl().args(["bench", "pipeline", "--pages", "40"]));
    assert!(out.contains("whole per-page path"), "{out}");
    // On a directory of HTML files: two of its three pages (`--pages 2`),
    // their links counted; a directory without HTML is an input error.
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("sub")).unwrap();
    for (name, links) in [("a.html", 2), ("b.htm", 3), ("sub/c.html", 4), ("notes.txt", 9)] {
        let body: String = (0..links)
            .map(|i| format!("<p><a href=\"../p{i}.html\">page {i}</a></p>"))
            .collect();
        std::fs::write(site.path().join(name), format!("<title>t</title><body>{body}</body>")).unwrap();
    }
    let dir = site.path().to_str().unwrap();
    let out = ok(simcrawl().args(["bench", "pipeline", "--pages", "2", "--dir", dir]));
    assert!(out.contains("2 HTML files of 1 directory"), "{out}");
    assert!(
        out.contains("links resolved") && out.contains("as crawl::analyze does"),
        "{out}"
    );
    let out = ok(simcrawl().args(["bench", "pipeline", "--pages", "5", "--dir", dir, "--dir", dir]));
    assert!(out.contains("6 HTML files of 2 directories, 0.0 MB, 18 links"), "{out}");
    let empty = tempfile::tempdir().unwrap();
    bad_input(simcrawl().args(["bench", "pipeline", "--dir", empty.path().to_str().unwrap()]));
    let out = ok(simcrawl().args(["bench", "resume", "--pages", "2000"]));
    assert!(out.contains("dedup state"), "{out}");
    let out = ok(simcrawl().args(["bench", "crawl", "--pages", "200", "--max-pages", "100", "--no-peer"]));
    assert!(out.contains("pages"), "{out}");
    // The high-water mark at each tenth of the records: 10, 20, ... records,
    // never falling.
    let course = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("peak RSS so far, MiB, by records written: "))
        .unwrap_or_else(|| panic!("no RSS course: {out}"));
    let marks: Vec<(u64, u64)> = course
        .split(", ")
        .map(|m| {
            let (n, mib) = m.split_once(' ').unwrap();
            (n.parse().unwrap(), mib.parse().unwrap())
        })
        .collect();
    assert!(marks.len() >= 5, "{out}");
    assert!(
        marks.iter().enumerate().all(|(i, &(n, _))| n == 10 * (i as u64 + 1)),
        "{out}"
    );
    assert!(marks.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].1 > 0), "{out}");
    bad_usage(simcrawl().args(["bench", "index", "--n", "many"]));
    bad_input(simcrawl().args(["bench", "crawl", "--no-peer", "--set", "crawl.concurrency=0"]));
}

/// A crawl writes the settings it ran with to DIR/settings.toml; `report`
/// and `config --crawl` read them, and `--resume` without `--config` runs
/// on them.
#[test]
fn a_crawl_keeps_its_settings_for_reports_config_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let web = TestWebChild::start(&dir.path().join("truth.json"));
    let out = dir.path().join("out");
    let printed = ok(simcrawl()
        .args(["crawl", "--max-pages", "30", "--set", "mirror.min_sample=1", "--config"])
        .arg(repo("config/test.toml"))
        .arg("--out")
        .arg(&out)
        .arg(format!("http://www.news.test:{}/", web.port))
        .arg(format!("http://archive.test:{}/", web.port)));
    assert!(printed.starts_with("crawl MaxPages: 30 pages this run"), "{printed}");
    let settings = std::fs::read_to_string(out.join("settings.toml")).unwrap();
    assert!(settings.contains("min_sample = 1"), "{settings}");
    // The report of the stored crawl agrees with the one the crawl wrote.
    let written = std::fs::read_to_string(out.join("reports/mirrors.json")).unwrap();
    let again = ok(simcrawl().args(["report", "mirrors", "--crawl"]).arg(&out));
    assert_eq!(again.trim_end(), written.trim_end());
    let shown = ok(simcrawl().args(["config", "--crawl"]).arg(&out));
    assert!(shown.contains("min_sample = 1"), "{shown}");
    // Resume without --config: the crawl's own settings (max_pages 30, the
    // test web's host mapping), so nothing is left to fetch.
    let resumed = ok(simcrawl().args(["crawl", "--resume", "--out"]).arg(&out));
    assert!(
        resumed.starts_with("crawl MaxPages: 0 pages this run, 30 in all"),
        "{resumed}"
    );
}

/// `crawl` runs on the built-in defaults with seeds given as arguments.
#[test]
fn crawl_needs_no_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let web = TestWebChild::start(&dir.path().join("truth.json"));
    let out = dir.path().join("out");
    // 127.0.0.1 is no host of the test web: one 404, then nothing to follow.
    let printed = ok(simcrawl()
        .args(["crawl", "--out"])
        .arg(&out)
        .arg(format!("http://127.0.0.1:{}/", web.port)));
    assert!(printed.starts_with("crawl Completed: 1 pages this run"), "{printed}");
    let shown = ok(simcrawl().arg("config"));
    assert!(
        shown.contains("[crawl]") && shown.contains("# Product token"),
        "{shown}"
    );
    let err = bad_input(simcrawl().args(["crawl", "--out"]).arg(dir.path().join("none")));
    assert!(err.contains("seed"), "{err}");
}
