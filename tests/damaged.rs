//! Damaged crawl directories and failed starts, through the `simcrawl crawl`
//! command line: a garbled or truncated store, a cut or deleted crawl log, a
//! foreign index snapshot, a resume of nothing, a bad seeds file. Each ends
//! in a verified repair or a one-line error (exit code 1 or 2) that leaves
//! the directory as it was; never a panic, never a silent loss.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use simcrawl::crawllog::read_log;
use simcrawl::testweb::{RunningTestWeb, TestWeb, TestWebOptions};

async fn start_web() -> RunningTestWeb {
    RunningTestWeb::start(
        Arc::new(TestWeb::new(TestWebOptions::default())),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap()
}

/// `simcrawl crawl` over the test web config; `--seeds` for a new crawl.
fn crawl_cmd(out: &Path, seeds: Option<&Path>, max_pages: u32) -> std::process::Command {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/test.toml");
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_simcrawl"));
    c.env_remove("RUST_LOG")
        .args(["crawl", "--set", "output.reports=false", "--config"])
        .arg(config)
        .arg("--max-pages")
        .arg(max_pages.to_string())
        .arg("--out")
        .arg(out);
    match seeds {
        // These tests damage sled's files (`store/db`): new crawls here
        // are on sled (fjall's damaged journal: src/store/tests.rs).
        Some(s) => c.args(["--set", "store.engine=\"sled\"", "--seeds"]).arg(s),
        None => c.arg("--resume"),
    };
    c
}

async fn run(mut c: std::process::Command) -> Output {
    tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap()
}

/// A finished crawl of `max_pages` pages in `dir/name`.
async fn finished_crawl(web: &RunningTestWeb, dir: &Path, name: &str, max_pages: u32) -> PathBuf {
    let seeds = dir.join(format!("{name}-seeds.txt"));
    std::fs::write(&seeds, web.seeds().join("\n")).unwrap();
    let out = dir.join(name);
    let o = run(crawl_cmd(&out, Some(&seeds), max_pages)).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

/// The failure is one line `simcrawl: error: ...` with `code`, no panic.
fn assert_one_line_error(o: &Output, code: i32, mentions: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("simcrawl: error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains(mentions), "{err}");
    lines[0].to_string()
}

fn canonicals(out: &Path) -> HashSet<String> {
    read_log(&out.join(simcrawl::model::CrawlDir::LOG_FILE))
        .unwrap()
        .into_iter()
        .map(|r| r.canonical)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_store_garbled_or_truncated_is_refused_and_left_as_it_was() {
    let web = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let out = finished_crawl(&web, dir.path(), "crawl", 300).await;
    let db = out.join("store/db");
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 64 * 1024, "db is {len} bytes");

    // Garbled: 4 KiB of pseudo-random bytes over the middle of the file, at
    // a few places (the storage engine panics on some, errs on others).
    let mut refused = 0;
    for (i, at) in [len / 2, len / 3, len / 4, len / 5, len * 2 / 3, len * 3 / 4]
        .into_iter()
        .enumerate()
    {
        let copy = dir.path().join(format!("garbled-{i}"));
        copy_dir(&out, &copy);
        let db = copy.join("store/db");
        let mut bytes = std::fs::read(&db).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ at;
        for b in &mut bytes[at as usize..at as usize + 4096] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        std::fs::write(&db, &bytes).unwrap();
        let before = snapshot(&copy.join("store"));
        let o = run(crawl_cmd(&copy, None, 300)).await;
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        if o.status.success() {
            // The damage was in space the engine no longer used: every
            // recorded page is still there.
            assert!(canonicals(&copy).is_superset(&canonicals(&out)));
        } else {
            refused += 1;
            let line = assert_one_line_error(&o, 1, "store");
            eprintln!("garbled at {at}: {line}");
            assert_eq!(snapshot(&copy.join("store")), before, "the refused store was changed");
        }
    }
    eprintln!("garbled stores refused: {refused} of 6");

    // Truncated to half: refused, and the file keeps its (half) size.
    let copy = dir.path().join("truncated");
    copy_dir(&out, &copy);
    let db = copy.join("store/db");
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let before = snapshot(&copy.join("store"));
    let o = run(crawl_cmd(&copy, None, 300)).await;
    let line = assert_one_line_error(&o, 1, "store");
    eprintln!("truncated: {line}");
    assert_eq!(snapshot(&copy.join("store")), before, "the refused store was changed");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), len / 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_log_cut_or_deleted_is_rewritten_from_the_store() {
    let web = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let out = finished_crawl(&web, dir.path(), "crawl", 200).await;
    let all = canonicals(&out);
    let log = out.join(simcrawl::model::CrawlDir::LOG_FILE);

    // The last 100 bytes cut.
    let text = std::fs::read(&log).unwrap();
    std::fs::write(&log, &text[..text.len() - 100]).unwrap();
    let o = run(crawl_cmd(&out, None, 200)).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("rewritten from the store"), "{err}");
    assert_eq!(canonicals(&out), all);
    assert_eq!(read_log(&log).unwrap().len(), all.len());

    // Deleted.
    std::fs::remove_file(&log).unwrap();
    let o = run(crawl_cmd(&out, None, 200)).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("rewritten from the store"), "{err}");
    assert_eq!(canonicals(&out), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_foreign_index_snapshot_is_rebuilt_with_a_warning() {
    let web = start_web().await;
    let dir = tempfile::tempdir().unwrap();
    let small = finished_crawl(&web, dir.path(), "small", 60).await;
    let big = finished_crawl(&web, dir.path(), "big", 200).await;
    let snap = simcrawl::model::CrawlDir::INDEX_SNAPSHOT;
    std::fs::copy(small.join(snap), big.join(snap)).unwrap();
    let o = run(crawl_cmd(&big, None, 200)).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("belongs to another crawl"), "{err}");
    // The clean stop wrote this crawl's own snapshot again: no warning now.
    let o = run(crawl_cmd(&big, None, 200)).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !err.contains("another crawl"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_failed_start_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // --resume of a directory that does not exist.
    let missing = dir.path().join("missing");
    let o = run(crawl_cmd(&missing, None, 10)).await;
    assert_one_line_error(&o, 2, "no crawl to resume");
    assert!(!missing.exists());
    // A seeds file with one bad line: nothing created, in a new directory or
    // in one the user made.
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(&seeds, "http://www.news.test/\nnot a url\n").unwrap();
    let new = dir.path().join("new");
    let o = run(crawl_cmd(&new, Some(&seeds), 10)).await;
    assert_one_line_error(&o, 2, "not a url");
    assert!(!new.exists());
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let o = run(crawl_cmd(&mine, Some(&seeds), 10)).await;
    assert_one_line_error(&o, 2, "not a url");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 0);
    // After both, the directory takes a new crawl (the error said what to do).
    let o = run(crawl_cmd(&mine, None, 10)).await;
    assert_one_line_error(&o, 2, "start one without --resume");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
