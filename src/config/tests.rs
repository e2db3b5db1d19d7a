//! Tests of loading: defaults, layering, overrides and the error messages
//! of every kind of bad value.

use std::path::Path;
use std::time::Duration;

use super::*;

fn layer(text: &str) -> Result<Settings, ConfigError> {
    Settings::from_layers(&[("my.toml".into(), text)], &[])
}

/// The defaults with `--set` overrides.
fn set(overrides: &[&str]) -> Result<Settings, ConfigError> {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Settings::from_layers(&[], &o)
}

#[test]
fn defaults_load() {
    let s = Settings::default();
    assert_eq!(s.simhash.k, 3);
    assert_eq!(s.politeness.min_delay, Duration::from_secs(1));
    assert_eq!(s.dedup.policy, DedupPolicy::Deprioritize);
    assert!(s.politeness.respect_robots);
    assert!(s.crawl.user_agent_header().starts_with("simcrawl/"));
}

#[test]
fn test_toml_loads_and_turns_delays_off() {
    let s = Settings::test_web(&[]).unwrap();
    assert_eq!(s.politeness.min_delay, Duration::ZERO);
}

#[test]
fn unknown_key_names_file_key_and_allowed() {
    let e = layer("[crawl]\nmax_pagez = 3\n").unwrap_err().to_string();
    assert!(
        e.contains("my.toml") && e.contains("crawl.max_pagez") && e.contains("max_pages"),
        "{e}"
    );
    let e = layer("[crawll]\n").unwrap_err().to_string();
    assert!(e.contains("crawll") && e.contains("politeness"), "{e}");
}

#[test]
fn negative_delay_is_rejected() {
    let e = layer("[politeness]\nmin_delay_ms = -5\n").unwrap_err().to_string();
    assert!(
        e.contains("politeness.min_delay_ms") && e.contains("-5") && e.contains("0..=3600000"),
        "{e}"
    );
}

#[test]
fn k_above_range_is_rejected() {
    let e = layer("[simhash]\nk = 65\n").unwrap_err().to_string();
    assert!(e.contains("simhash.k") && e.contains("0..=10"), "{e}");
    let e = set(&["simhash.k=99"]).unwrap_err().to_string();
    assert!(e.contains("--set") && e.contains("simhash.k"), "{e}");
}

#[test]
fn hostile_input_limits_are_validated() {
    let s = Settings::default();
    assert_eq!(s.dedup.max_duplicate_chain, 5);
    assert_eq!(s.politeness.max_in_flight_per_ip, 4);
    assert_eq!(Settings::test_web(&[]).unwrap().politeness.max_in_flight_per_ip, 32);
    let e = set(&["dedup.max_duplicate_chain=1001"]).unwrap_err().to_string();
    assert!(e.contains("dedup.max_duplicate_chain") && e.contains("0..=1000"), "{e}");
    let e = set(&["politeness.max_in_flight_per_ip=-1"]).unwrap_err().to_string();
    assert!(
        e.contains("politeness.max_in_flight_per_ip") && e.contains("0..=4096"),
        "{e}"
    );
    assert_eq!(
        set(&["dedup.max_duplicate_chain=0"]).unwrap().dedup.max_duplicate_chain,
        0
    );
}

#[test]
fn io_threads_default_to_one_per_four_cores() {
    let auto = Settings::from_layers(&[], &[]).unwrap().crawl;
    assert_eq!(auto.io_threads, 0);
    assert_eq!(
        [1, 2, 3, 4, 8, 9, 64].map(|cores| auto.io_threads(cores)),
        [1, 1, 1, 1, 2, 2, 16]
    );
    assert_eq!(set(&["crawl.io_threads=3"]).unwrap().crawl.io_threads(2), 3);
    let e = set(&["crawl.io_threads=257"]).unwrap_err().to_string();
    assert!(e.contains("crawl.io_threads") && e.contains("0..=256"), "{e}");
}

#[test]
fn index_designs_are_named_or_chosen_by_size() {
    use crate::index::LiveIndex;
    let tables = |overrides: &[&str]| {
        let s = set(overrides).unwrap();
        LiveIndex::from_settings(&s.index, s.simhash.k).design().tables()
    };
    // The default expected size (2^24) gets the two-halves 6 tables.
    assert_eq!(tables(&[]), 6);
    assert_eq!(tables(&["index.expected_size_log2=20"]), 4);
    for (name, t) in [("t4", 4), ("t6", 6), ("t8", 8), ("t10", 10), ("t16", 16), ("t20", 20)] {
        assert_eq!(tables(&[&format!("index.design=\"{name}\"")]), t, "{name}");
    }
    let e = set(&["index.design=\"t7\""]).unwrap_err().to_string();
    assert!(e.contains("index.design") && e.contains("t6"), "{e}");
}

#[test]
fn wrong_type_is_rejected() {
    let e = layer("[crawl]\nconcurrency = \"many\"\n").unwrap_err().to_string();
    assert!(
        e.contains("crawl.concurrency") && e.contains("an integer") && e.contains("a string"),
        "{e}"
    );
}

#[test]
fn bad_choice_lists_options() {
    let e = layer("[dedup]\npolicy = \"delete\"\n").unwrap_err().to_string();
    assert!(e.contains("\"drop\" | \"deprioritize\" | \"keep\""), "{e}");
}

#[test]
fn unreadable_file_is_an_error() {
    let e = Settings::load(Some(Path::new("/nonexistent/simcrawl.toml")), &[]).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(e.to_string().contains("/nonexistent/simcrawl.toml"));
}

#[test]
fn invalid_toml_names_file() {
    let e = layer("[crawl\n").unwrap_err().to_string();
    assert!(e.starts_with("my.toml: invalid TOML"), "{e}");
}

#[test]
fn overrides_accept_bare_strings_and_ints_for_floats() {
    let s = Settings::from_layers(
        &[],
        &["crawl.scope=same-host".into(), "politeness.delay_factor=3".into()],
    )
    .unwrap();
    assert_eq!(s.crawl.scope, Scope::SameHost);
    assert_eq!(s.politeness.delay_factor, 3.0);
    assert!(matches!(
        Settings::from_layers(&[], &["nodot=1".into()]),
        Err(ConfigError::BadOverride { .. })
    ));
}

#[test]
fn max_delay_below_min_is_rejected() {
    let e = layer("[politeness]\nmin_delay_ms = 5000\nmax_delay_ms = 100\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_delay_ms"), "{e}");
}

#[test]
fn every_default_key_is_documented() {
    // Each key line in default.toml is preceded by a comment line (directly
    // or as part of a documented group).
    let mut prev_comment = false;
    for line in DEFAULT_TOML.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            prev_comment = true;
        } else if t.is_empty() || t.starts_with('[') {
            prev_comment = false;
        } else {
            assert!(prev_comment, "undocumented key line: {t}");
        }
    }
}

#[test]
fn request_headers_proxy_and_cookies() {
    let s = layer(
        "[fetch]\nheaders = { From = \"ops@example.org\", X-Crawl = \"test\" }\naccept_language = \"en, de;q=0.8\"\nproxy = \"socks5h://127.0.0.1:1080\"\ncookies = true\n",
    )
    .unwrap();
    assert_eq!(
        s.fetch.headers,
        [
            ("from".to_string(), "ops@example.org".to_string()),
            ("x-crawl".into(), "test".into()),
            ("accept-language".into(), "en, de;q=0.8".into())
        ]
    );
    assert_eq!(s.fetch.proxy.as_ref().map(|u| u.scheme()), Some("socks5h"));
    assert!(s.fetch.cookies);
    let d = Settings::default();
    assert!(d.fetch.headers.is_empty() && d.fetch.proxy.is_none() && !d.fetch.cookies);
    for bad in [
        "[fetch]\nheaders = { Authorization = \"Bearer x\" }\n",
        "[fetch]\nheaders = { cookie = \"a=b\" }\n",
        "[fetch]\nheaders = { \"bad name\" = \"x\" }\n",
        "[fetch]\nheaders = { X = \"a\\nb\" }\n",
        "[fetch]\nproxy = \"ftp://proxy.example\"\n",
        "[fetch]\nproxy = \"not a url\"\n",
    ] {
        let e = layer(bad).unwrap_err().to_string();
        assert!(e.contains("fetch."), "{bad}: {e}");
    }
}

#[test]
fn store_engine_is_fjall_or_sled() {
    use crate::store::Engine;
    assert_eq!(Settings::default().store.engine, Engine::Fjall);
    assert_eq!(set(&["store.engine=\"fjall\""]).unwrap().store.engine, Engine::Fjall);
    let e = set(&["store.engine=\"rocks\""]).unwrap_err().to_string();
    assert!(e.contains("store.engine") && e.contains("fjall"), "{e}");
}

#[test]
fn store_cache_is_bounded_in_mib() {
    assert_eq!(Settings::default().store.cache_bytes, 4 << 20);
    assert_eq!(set(&["store.cache_mb=128"]).unwrap().store.cache_bytes, 128 << 20);
    for bad in ["store.cache_mb=2", "store.cache_mb=100000"] {
        let e = set(&[bad]).unwrap_err().to_string();
        assert!(e.contains("store.cache_mb"), "{e}");
    }
}

#[test]
fn store_backend_and_redis_nodes_are_checked() {
    let d = Settings::default();
    assert_eq!(d.store.backend, StoreBackend::Disk);
    assert_eq!(d.store.crawl_name, "");
    assert_eq!(d.store.redis_nodes.len(), 3);
    let s = set(&[
        "store.backend=\"redis\"",
        "store.crawl_name=\"big-1.a_b\"",
        "store.redis_nodes=[\"10.0.0.1:7000\", \"redis.internal:6379\"]",
    ])
    .unwrap();
    assert_eq!(s.store.backend, StoreBackend::Redis);
    assert_eq!(s.store.crawl_name, "big-1.a_b");
    assert_eq!(s.store.redis_nodes, ["10.0.0.1:7000", "redis.internal:6379"]);
    for (bad, key) in [
        ("store.backend=\"mongo\"", "store.backend"),
        ("store.crawl_name=\"a b\"", "store.crawl_name"),
        ("store.crawl_name=\"{x}\"", "store.crawl_name"),
        ("store.redis_nodes=[]", "store.redis_nodes"),
        ("store.redis_nodes=[\"127.0.0.1\"]", "store.redis_nodes"),
        ("store.redis_nodes=[\"127.0.0.1:0\"]", "store.redis_nodes"),
        ("store.redis_nodes=[\"redis://x:1\"]", "store.redis_nodes"),
        ("store.redis_nodes=[\":7000\"]", "store.redis_nodes"),
    ] {
        let e = set(&[bad]).unwrap_err().to_string();
        assert!(e.contains(key), "{bad}: {e}");
    }
}

const HOST_RULES: &str = r#"
[politeness]
min_delay_ms = 100

[[hosts]]
pattern = "Docs.Example.org"
min_delay_ms = 2000
max_in_flight = 2
max_pages = 50
deny = ["/private/"]
headers = { Authorization = "Bearer t0ken", X-Team = "search" }
accept_language = "de"

[[hosts]]
pattern = "*.example.org"
delay_factor = 3
max_depth = 2
proxy = ""
cookies = true
"#;

#[test]
fn host_rules_load_in_file_order() {
    let s = layer(HOST_RULES).unwrap();
    assert_eq!(s.hosts.len(), 2);
    let (i, r) = s.hosts.find("docs.example.org").unwrap();
    assert_eq!(i, 0);
    assert_eq!(r.pattern.to_string(), "docs.example.org");
    assert_eq!(r.min_delay, Some(Duration::from_secs(2)));
    assert_eq!((r.max_in_flight, r.max_pages), (Some(2), Some(50)));
    assert_eq!(r.deny[0].as_str(), "/private/");
    assert_eq!(
        r.headers,
        [
            ("authorization".to_string(), "Bearer t0ken".to_string()),
            ("x-team".into(), "search".into()),
            ("accept-language".into(), "de".into())
        ]
    );
    // The first match wins: docs.example.org is also under *.example.org.
    let (i, r) = s.hosts.find("www.example.org:8080").unwrap();
    assert_eq!(i, 1);
    assert_eq!(
        (r.delay_factor, r.max_depth, r.cookies),
        (Some(3.0), Some(2), Some(true))
    );
    assert_eq!(r.proxy, Some(None));
    assert!(r.own_client(false));
    assert!(s.hosts.find("example.org").is_none());
    assert!(Settings::default().hosts.is_empty());
}

#[test]
fn host_rules_round_trip_through_settings_toml_and_config() {
    let s = layer(HOST_RULES).unwrap();
    let text = s.effective.to_toml();
    let back = Settings::from_layers(&[("settings.toml".into(), &text)], &[]).unwrap();
    assert_eq!(back.hosts.len(), 2);
    assert_eq!(back.hosts.rules()[0].summary(), s.hosts.rules()[0].summary());
    assert_eq!(back.hosts.rules()[1].summary(), s.hosts.rules()[1].summary());
    assert_eq!(back.effective.to_toml(), text);
    let annotated = s.effective.annotated();
    assert!(
        annotated.contains("[[hosts]]") && annotated.contains("set by my.toml"),
        "{annotated}"
    );
    let again = Settings::from_layers(&[("annotated".into(), &annotated)], &[]).unwrap();
    assert_eq!(again.hosts.rules()[1].summary(), s.hosts.rules()[1].summary());
    // A later layer's list replaces the earlier one; a layer without rules keeps it.
    let later = "[[hosts]]\npattern = \"other.test\"\n";
    let s = Settings::from_layers(&[("a.toml".into(), HOST_RULES), ("b.toml".into(), later)], &[]).unwrap();
    assert_eq!(s.hosts.len(), 1);
    let s = Settings::from_layers(
        &[("a.toml".into(), HOST_RULES), ("b.toml".into(), "[simhash]\nk = 4\n")],
        &[],
    )
    .unwrap();
    assert_eq!(s.hosts.len(), 2);
}

#[test]
fn bad_host_rules_name_the_file_rule_and_key() {
    for (text, want) in [
        (
            "[[hosts]]\npattern = \"a.test\"\n[[hosts]]\npattern = \"b.test\"\nmin_delay = 5\n",
            "hosts #2.min_delay",
        ),
        (
            "[[hosts]]\npattern = \"a.test\"\nmax_in_flight = \"two\"\n",
            "hosts #1.max_in_flight",
        ),
        ("[[hosts]]\nmin_delay_ms = 5\n", "hosts #1.pattern"),
        ("[[hosts]]\npattern = \"http://a.test/\"\n", "hosts #1.pattern"),
        ("[[hosts]]\npattern = \"a.test:443\"\n", "hosts #1.pattern"),
        (
            "[[hosts]]\npattern = \"a.test\"\nmax_in_flight = 0\n",
            "hosts #1.max_in_flight",
        ),
        (
            "[[hosts]]\npattern = \"a.test\"\nmin_delay_ms = -1\n",
            "hosts #1.min_delay_ms",
        ),
        (
            "[[hosts]]\npattern = \"a.test\"\nmin_delay_ms = 500\nmax_delay_ms = 100\n",
            "hosts #1.max_delay_ms",
        ),
        ("[[hosts]]\npattern = \"a.test\"\ndeny = [\"(\"]\n", "hosts #1.deny"),
        (
            "[[hosts]]\npattern = \"a.test\"\nheaders = { User-Agent = \"x\" }\n",
            "hosts #1.headers",
        ),
        (
            "[[hosts]]\npattern = \"a.test\"\nheaders = { X = 1 }\n",
            "hosts #1.headers",
        ),
        (
            "[[hosts]]\npattern = \"a.test\"\nproxy = \"ftp://p.test\"\n",
            "hosts #1.proxy",
        ),
        ("hosts = 3\n", "hosts"),
    ] {
        let e = layer(text).unwrap_err().to_string();
        assert!(e.starts_with("my.toml: ") && e.contains(want), "{text}: {e}");
    }
    let e = layer("[[hosts]]\npattern = \"a.test\"\nmin_delay = 5\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("min_delay_ms") && e.contains("max_in_flight"),
        "lists the keys: {e}"
    );
    let e = layer("[crawll]\n").unwrap_err().to_string();
    assert!(e.contains("hosts"), "{e}");
    let e = set(&["hosts.pattern=a.test"]).unwrap_err().to_string();
    assert!(e.contains("--set") && e.contains("hosts"), "{e}");
}
