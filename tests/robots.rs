//! robots.txt (RFC 9309) against the table in `tests/data/robots.toml`,
//! hostile inputs, the status policy and the `simcrawl robots` CLI.

use std::process::Command;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde::Deserialize;
use simcrawl::canon::Canonicalizer;
use simcrawl::config::CanonProfile;
use simcrawl::politeness::robots::{policy_for_status, Robots, RobotsPolicyKind, DEFAULT_MAX_BYTES};
use url::Url;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    why: String,
    robots: String,
    agent: String,
    url: String,
    expected: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Delay {
    why: String,
    robots: String,
    agent: String,
    expected: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    case: Vec<Case>,
    delay: Vec<Delay>,
}

fn table() -> Table {
    toml::from_str(include_str!("data/robots.toml")).expect("tests/data/robots.toml parses")
}

fn url_of(s: &str) -> Url {
    let full = if s.starts_with('/') {
        format!("http://www.example.com{s}")
    } else {
        s.to_string()
    };
    Url::parse(&full).expect("URL in robots.toml")
}

#[test]
fn robots_table() {
    let t = table();
    assert!(t.case.len() >= 60, "robots.toml has {} cases", t.case.len());
    let canon = Canonicalizer::with_profile(CanonProfile::Rfc3986);
    let mut failures = Vec::new();
    for (i, c) in t.case.iter().enumerate() {
        assert!(
            c.expected == "allow" || c.expected == "disallow",
            "case {i}: expected {:?}",
            c.expected
        );
        let want = c.expected == "allow";
        let robots = Robots::parse(c.robots.as_bytes(), DEFAULT_MAX_BYTES);
        let rules = robots.for_agent(&c.agent);
        let raw = url_of(&c.url);
        let canonical = canon.canonicalize(&raw);
        // The same answer for the URL as parsed and as canonicalized, through
        // both entry points.
        for (what, u) in [("raw", &raw), ("canonical", &canonical)] {
            let a = robots.is_allowed(&c.agent, u);
            let b = rules.is_allowed(u);
            if a != want || b != want {
                failures.push(format!(
                    "case {i} ({what} {u}): Robots {a}, AgentRules {b}, expected {} — {}",
                    c.expected, c.why
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn crawl_delay_table() {
    for d in table().delay {
        let robots = Robots::parse(d.robots.as_bytes(), DEFAULT_MAX_BYTES);
        let got = robots
            .crawl_delay(&d.agent)
            .map_or("none".to_string(), |s| s.to_string());
        assert_eq!(got, d.expected, "{}", d.why);
        assert_eq!(
            robots.for_agent(&d.agent).crawl_delay(),
            robots.crawl_delay(&d.agent),
            "{}",
            d.why
        );
    }
}

#[test]
fn sitemaps_are_global() {
    let r = Robots::parse(
        b"Sitemap: http://a.test/s1.xml\nUser-agent: x\nSitemap: http://a.test/s2.xml\n",
        1000,
    );
    assert_eq!(r.sitemaps(), ["http://a.test/s1.xml", "http://a.test/s2.xml"]);
}

#[test]
fn parse_limit_ignores_the_rest_and_the_cut_line() {
    let mut body = b"User-agent: *\nDisallow: /a\n".to_vec();
    let limit = body.len() + 10;
    body.extend_from_slice(b"Disallow: /bbbbbbbbbbbbbbbbbbbb\nDisallow: /c\n");
    let r = Robots::parse(&body, limit);
    assert!(!r.is_allowed("x", &url_of("/a")));
    // `Disallow: /b` (the cut line) and `/c` (past the limit) are not read.
    assert!(r.is_allowed("x", &url_of("/b")));
    assert!(r.is_allowed("x", &url_of("/c")));
    let full = Robots::parse(&body, DEFAULT_MAX_BYTES);
    assert!(!full.is_allowed("x", &url_of("/c")));
}

#[test]
fn hostile_huge_line_and_binary() {
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    body.extend(std::iter::repeat_n(b'a', 2_000_000));
    let r = Robots::parse(&body, DEFAULT_MAX_BYTES);
    assert!(r.is_allowed("x", &url_of("/aaa")), "the cut line is dropped");
    let binary: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let r = Robots::parse(&binary, DEFAULT_MAX_BYTES);
    let _ = r.is_allowed("x", &url_of("/x"));
    // Invalid UTF-8 in a pattern is matched octet by octet (percent-encoded).
    let r = Robots::parse(b"User-agent: *\nDisallow: /\xff\xfe\n", 1000);
    assert!(!r.is_allowed("x", &url_of("/%FF%FEx")));
    assert!(r.is_allowed("x", &url_of("/x")));
}

#[test]
fn hostile_million_rules() {
    let mut body = String::from("User-agent: *\n");
    for i in 0..1_000_000 {
        body.push_str("Disallow: /p");
        body.push_str(&i.to_string());
        body.push('\n');
    }
    body.push_str("Allow: /p999999/ok\n");
    let start = Instant::now();
    let r = Robots::parse(body.as_bytes(), usize::MAX);
    let rules = r.for_agent("x");
    assert_eq!(rules.len(), 1_000_001);
    assert!(!rules.is_allowed(&url_of("/p999999/x")));
    assert!(rules.is_allowed(&url_of("/p999999/ok")));
    assert!(rules.is_allowed(&url_of("/q")));
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
}

#[test]
fn pathological_wildcards_are_linear() {
    let r = Robots::parse(
        b"User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*b\nDisallow: /*a*a*a*a*a*a*a*a*c$\n",
        1000,
    );
    let path = format!("/{}", "a".repeat(15_000));
    let u = url_of(&path);
    let rules = r.for_agent("x");
    let start = Instant::now();
    for _ in 0..100 {
        assert!(rules.is_allowed(&u));
        assert!(r.is_allowed("x", &u));
    }
    // A backtracking matcher needs ~15000^12 steps; a linear one ~100 * 2 * 30 KB.
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert!(!rules.is_allowed(&url_of(&format!("{path}b"))));
}

#[test]
fn status_policy() {
    let allowed = |s: Option<u16>| policy_for_status(s).robots().map(|r| r.is_allowed("x", &url_of("/a")));
    assert_eq!(policy_for_status(Some(200)), RobotsPolicyKind::Parse);
    assert_eq!(policy_for_status(Some(302)), RobotsPolicyKind::FollowRedirect);
    assert_eq!(allowed(Some(404)), Some(true));
    assert_eq!(allowed(Some(401)), Some(true));
    assert_eq!(allowed(Some(429)), Some(false));
    assert_eq!(allowed(Some(500)), Some(false));
    assert_eq!(allowed(Some(503)), Some(false));
    assert_eq!(allowed(None), Some(false));
    // Disallow-all still lets the crawler fetch robots.txt itself.
    assert!(Robots::disallow_all().is_allowed("x", &url_of("/robots.txt")));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn parse_and_match_never_panic(body in proptest::collection::vec(any::<u8>(), 0..2000), path in "/[ -~]{0,60}") {
        let r = Robots::parse(&body, 1500);
        if let Ok(u) = Url::parse(&format!("http://h{path}")) {
            prop_assert_eq!(r.is_allowed("bot", &u), r.for_agent("bot").is_allowed(&u));
        }
    }

    #[test]
    fn matching_agrees_with_a_naive_oracle(
        pattern in "/[ab*]{0,8}\\$?",
        path in "/[ab]{0,12}",
    ) {
        // Oracle: backtracking glob over the (all-ASCII) strings.
        fn glob(p: &[u8], s: &[u8], anchored: bool) -> bool {
            match p.split_first() {
                None => !anchored || s.is_empty(),
                Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..], anchored)),
                Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..], anchored),
            }
        }
        let (p, anchored) = match pattern.strip_suffix('$') { Some(p) => (p, true), None => (pattern.as_str(), false) };
        let want = !glob(p.as_bytes(), path.as_bytes(), anchored);
        let r = Robots::parse(format!("User-agent: *\nDisallow: {pattern}\n").as_bytes(), 1000);
        prop_assert_eq!(r.is_allowed("x", &url_of(&path)), want || path == "/robots.txt");
    }
}

fn simcrawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simcrawl"))
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = simcrawl().args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn cli_status_answers() {
    let u = "http://a.test/x";
    assert_eq!(
        run(&["robots", "--status", "503", "--agent", "x", u]),
        (Some(0), "disallow\n".into())
    );
    assert_eq!(
        run(&["robots", "--status", "404", "--agent", "x", u]),
        (Some(0), "allow\n".into())
    );
    assert_eq!(
        run(&["robots", "--status", "unreachable", "--agent", "x", u]),
        (Some(0), "disallow\n".into())
    );
    assert_eq!(
        run(&["robots", "--status", "429", "--agent", "x", u]),
        (Some(0), "disallow\n".into())
    );
    assert_eq!(run(&["robots", "--status", "200", "--agent", "x", u]).0, Some(2));
    assert_eq!(run(&["robots", "--status", "abc", "--agent", "x", u]).0, Some(2));
    assert_eq!(run(&["robots", "--agent", "x", u]).0, Some(2));
}

#[test]
fn cli_robots_file_and_crawl_delay() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("robots.txt");
    std::fs::write(
        &file,
        "User-agent: *\nDisallow: /private\nCrawl-delay: 2.5\n\nUser-agent: simcrawl\nDisallow: /x\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(
        run(&[
            "robots",
            "--robots",
            f,
            "--agent",
            "otherbot",
            "http://a.test/private/1",
            "http://a.test/x"
        ]),
        (Some(0), "disallow\nallow\n".into())
    );
    assert_eq!(
        run(&["robots", "--robots", f, "--agent", "otherbot", "--crawl-delay"]),
        (Some(0), "2.5\n".into())
    );
    assert_eq!(
        run(&["robots", "--robots", f, "--agent", "SimCrawl", "--crawl-delay"]),
        (Some(0), "none\n".into())
    );
    let (code, out) = run(&[
        "robots",
        "--robots",
        f,
        "--agent",
        "simcrawl",
        "http://a.test/x",
        "nope",
    ]);
    assert_eq!(code, Some(2));
    assert!(out.starts_with("disallow\nerror: "), "{out}");
    assert_eq!(
        run(&["robots", "--robots", "/no/such/file", "--agent", "x", "http://a.test/"]).0,
        Some(1)
    );
}
