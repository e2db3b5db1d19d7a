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
