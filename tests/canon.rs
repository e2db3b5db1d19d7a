//! URL canonicalization against the table in `tests/data/canon.tsv`, a
//! property test of idempotence, and the `simcrawl canon` exit codes.

use std::process::Command;

use proptest::prelude::*;
use simcrawl::canon::Canonicalizer;
use simcrawl::config::CanonProfile;
use url::Url;

const TABLE: &str = include_str!("data/canon.tsv");

fn profile(name: &str) -> CanonProfile {
    match name {
        "rfc3986" => CanonProfile::Rfc3986,
        "crawler" => CanonProfile::Crawler,
        other => panic!("canon.tsv: unknown profile {other:?}"),
    }
}

#[test]
fn canon_table() {
    let mut failures = Vec::new();
    let mut rows = 0;
    for (n, line) in TABLE.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            cols.len() == 4 || cols.len() == 5,
            "canon.tsv line {}: 4 or 5 columns",
            n + 1
        );
        let (input, expected, prof, why) = (cols[0], cols[1], cols[2], cols[3]);
        let c = Canonicalizer::with_profile(profile(prof));
        let got = match cols.get(4) {
            Some(base) => c.resolve(&Url::parse(base).expect("base in canon.tsv"), input),
            None => c.parse(input),
        };
        let got = match got {
            Ok(u) => {
                // Every canonical URL is a fixed point, as a Url and as text.
                assert_eq!(c.canonicalize(&u), u, "line {}: not idempotent", n + 1);
                assert_eq!(
                    c.parse(u.as_str()).as_ref(),
                    Ok(&u),
                    "line {}: text not a fixed point",
                    n + 1
                );
                u.to_string()
            }
            Err(_) => "error".to_string(),
        };
        if got != expected {
            failures.push(format!(
                "line {}: {input:?} ({prof}): got {got:?}, expected {expected:?} — {why}",
                n + 1
            ));
        }
        rows += 1;
    }
    assert!(rows >= 80, "canon.tsv has {rows} rows");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn settings_are_honoured() {
    let mut s = simcrawl::Settings::default().canon;
    s.sort_query = false;
    s.strip_index_file = false;
    s.drop_params = vec!["ref*".into(), "x".into()];
    let c = Canonicalizer::new(&s);
    assert_eq!(
        c.parse("http://a/index.html?b=1&referrer=q&X=2&a=3&utm_source=s")
            .unwrap()
            .as_str(),
        "http://a/index.html?b=1&a=3&utm_source=s"
    );
}

/// URL-ish text: a scheme, a host, and path/query/fragment from a charset
/// rich in the characters canonicalization touches.
fn urlish() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![Just("http"), Just("https"), Just("HTTP"), Just("hTTps")];
    let host = prop_oneof![
        Just("example.com".to_string()),
        Just("WWW.News.TEST:8080".to_string()),
        Just("Bücher.example".to_string()),
        Just("[::1]:80".to_string()),
        "[a-zA-Z0-9.-]{1,12}",
    ];
    let part = proptest::string::string_regex(
        "([a-zA-Z0-9/.;=&?#%~_+ -]|%[0-9a-fA-F]{2}|%7[eE]|index\\.html?|utm_source=1|sid=2|;jsessionid=3|ツ|\\.\\./|%2[eE]){0,12}",
    )
    .expect("valid regex");
    (scheme, host, part).prop_map(|(s, h, p)| format!("{s}://{h}/{p}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn canonicalization_is_idempotent(input in urlish()) {
        for prof in [CanonProfile::Rfc3986, CanonProfile::Crawler] {
            let c = Canonicalizer::with_profile(prof);
            if let Ok(once) = c.parse(&input) {
                prop_assert_eq!(&c.canonicalize(&once), &once);
                let reparsed = c.parse(once.as_str());
                prop_assert_eq!(reparsed.as_ref(), Ok(&once));
                prop_assert!(once.fragment().is_none());
            }
        }
    }

    #[test]
    fn never_panics_on_arbitrary_text(input in ".{0,200}", href in ".{0,100}") {
        let c = Canonicalizer::with_profile(CanonProfile::Crawler);
        let _ = c.parse(&input);
        let base = Url::parse("http://www.news.test/a/b.html").unwrap();
        if let Ok(u) = c.resolve(&base, &href) {
            prop_assert_eq!(c.canonicalize(&u), u);
        }
    }
}

fn simcrawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simcrawl"))
}

#[test]
fn cli_prints_one_line_per_input_and_exits_2_on_invalid() {
    let out = simcrawl()
        .args(["canon", "HTTP://A.test/x/index.html?b=1&a=2#f", "http://B.test/%7e"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "http://a.test/x/?a=2&b=1\nhttp://b.test/~\n"
    );

    let out = simcrawl()
        .args([
            "canon",
            "--profile",
            "rfc3986",
            "http://A.test/x/index.html?",
            "not a url",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], "http://a.test/x/index.html?");
    assert!(lines[1].starts_with("error: "), "{stdout}");
}

#[test]
fn cli_resolves_against_base() {
    let out = simcrawl()
        .args([
            "canon",
            "--base",
            "http://a.test/p/q.html",
            "../r/index.htm",
            "mailto:x@y",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("http://a.test/r/\nerror: unsupported scheme"),
        "{stdout}"
    );
    let out = simcrawl().args(["canon", "--base", "nope", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
