//! `simcrawl fingerprint` end to end on tests/data/fingerprint: output
//! format, near-duplicate copies, exit codes.

use std::process::Command;

fn simcrawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simcrawl"))
}

fn data(rel: &str) -> String {
    format!("{}/tests/data/fingerprint/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn parse(stdout: &[u8]) -> Vec<(u64, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            let (hex, path) = l.split_once('\t').expect("tab-separated line");
            assert_eq!(hex.len(), 16, "{l}");
            assert!(
                hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{l}"
            );
            (u64::from_str_radix(hex, 16).expect("hex"), path.to_string())
        })
        .collect()
}

#[test]
fn directory_recurses_in_order_and_copies_match() {
    let out = simcrawl().args(["fingerprint", &data("")]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = parse(&out.stdout);
    let names: Vec<&str> = rows.iter().map(|(_, p)| p.rsplit('/').next().unwrap_or("")).collect();
    assert_eq!(names, ["notes.txt", "other.html", "post-copy.html", "post.html"]);
    let fp = |name: &str| {
        rows.iter()
            .find(|(_, p)| p.ends_with(name))
            .map(|(f, _)| *f)
            .expect(name)
    };
    // The copy differs in timestamp, view counter and ad: same fingerprint.
    assert!((fp("post.html") ^ fp("post-copy.html")).count_ones() <= 3);
    assert!((fp("post.html") ^ fp("other.html")).count_ones() > 3);
}

#[test]
fn features_flag_lists_weighted_features() {
    let out = simcrawl()
        .args(["fingerprint", "--features", "--top", "5", &data("blog/post.html")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let features: Vec<&str> = text.lines().filter(|l| l.starts_with(' ')).collect();
    assert_eq!(features.len(), 5, "{text}");
    assert!(
        text.contains("\tnear\n") && text.contains("\tduplic\n"),
        "stemmed title words lead: {text}"
    );
}

#[test]
fn missing_path_is_bad_input() {
    let out = simcrawl().args(["fingerprint", "/no/such/path"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/path"));
}

/// Runs `simcrawl ARGS` with a time limit; None when it did not finish.
#[cfg(unix)]
fn run_bounded(args: &[&str], limit: std::time::Duration) -> Option<std::process::Output> {
    let mut child = simcrawl()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().expect("output"))
}

/// `fingerprint` and `near` on a tree with directory link loops and a
/// `.txt` link to /dev/zero: they finish, list each file once and skip the
/// device.
#[cfg(unix)]
#[test]
fn hostile_tree_with_link_loops_and_dev_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::copy(data("blog/post.html"), root.join("post.html")).unwrap();
    std::fs::copy(data("blog/post-copy.html"), root.join("d/post-copy.html")).unwrap();
    std::os::unix::fs::symlink(".", root.join("loop1")).unwrap();
    std::os::unix::fs::symlink(".", root.join("d/loop2")).unwrap();
    std::os::unix::fs::symlink("..", root.join("d/up")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero.txt")).unwrap();
    let root_s = root.to_str().unwrap();
    let out = run_bounded(&["fingerprint", root_s], std::time::Duration::from_secs(20)).expect("fingerprint finishes");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = parse(&out.stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let out = run_bounded(&["near", "--corpus", root_s], std::time::Duration::from_secs(20)).expect("near finishes");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Named on the command line, a device is refused (exit 2), not read.
    let out = run_bounded(&["fingerprint", "/dev/zero"], std::time::Duration::from_secs(20)).expect("finishes");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
