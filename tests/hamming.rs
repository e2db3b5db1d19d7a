//! `simcrawl hamming` (batch mode, Manku §3.3): output format, order, line
//! numbers and bad input, on the files in tests/data/hamming/.

use std::process::Command;

fn data(name: &str) -> String {
    format!("{}/tests/data/hamming/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn hamming(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_simcrawl"))
        .arg("hamming")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn prints_sorted_one_based_pairs() {
    let out = hamming(&[
        "--fingerprints",
        &data("fingerprints.txt"),
        "--queries",
        &data("queries.txt"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let want = std::fs::read_to_string(data("expected-k3.txt")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn larger_k_and_table_count_find_more() {
    let out = hamming(&[
        "--fingerprints",
        &data("fingerprints.txt"),
        "--queries",
        &data("queries.txt"),
        "-k",
        "8",
        "--tables",
        "12",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1\t3\t7\n"), "{text}");
}

#[test]
fn bad_line_is_exit_2_with_file_and_line() {
    let out = hamming(&[
        "--fingerprints",
        &data("fingerprints.txt"),
        "--queries",
        &data("bad.txt"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.txt:2: expected 16 hex digits"), "{err}");
}
