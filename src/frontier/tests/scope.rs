//! Scope and trap rules, the per-host page cap, and how each priority
//! component moves a URL.

use super::*;
use crate::frontier::scope::*;
use crate::host::{host_key, registrable_domain};

// ---------------------------------------------------------------------------
// Scope and traps.

fn rules(overrides: &[&str], seeds: &[&str]) -> ScopeRules {
    let s = settings(overrides);
    let seeds: Vec<Url> = seeds.iter().map(|x| u(x)).collect();
    ScopeRules::new(&s.crawl, &seeds)
}

fn oos(r: ScopeReason) -> Result<(), Rejection> {
    Err(Rejection::OutOfScope(r))
}

#[test]
fn scope_same_host() {
    let r = rules(&["crawl.scope=same-host"], &["http://www.a.test/"]);
    assert_eq!(r.check(&u("http://www.a.test/x"), 1), Ok(()));
    assert_eq!(r.check(&u("https://www.a.test:8443/x"), 1), Ok(()));
    assert_eq!(r.check(&u("http://b.a.test/x"), 1), oos(ScopeReason::OtherHost));
}

#[test]
fn scope_same_domain() {
    let r = rules(
        &["crawl.scope=same-domain"],
        &["http://www.a.test/", "http://127.0.0.1:8080/"],
    );
    assert_eq!(r.check(&u("http://deep.sub.a.test/x"), 1), Ok(()));
    assert_eq!(r.check(&u("http://a.test/"), 1), Ok(()));
    assert_eq!(r.check(&u("http://b.test/"), 1), oos(ScopeReason::OtherDomain));
    assert_eq!(r.check(&u("http://xa.test/"), 1), oos(ScopeReason::OtherDomain));
    assert_eq!(r.check(&u("http://127.0.0.1:9/"), 1), Ok(()));
    assert_eq!(r.check(&u("http://127.0.0.2/"), 1), oos(ScopeReason::OtherDomain));
    assert_eq!(registrable_domain("a.b.c.example"), "c.example");
    assert_eq!(registrable_domain("localhost"), "localhost");
}

#[test]
fn scope_surt_prefixes() {
    assert_eq!(
        surt(&u("http://mirror-a.test/docs/x?q=1")),
        "http://(test,mirror-a,)/docs/x?q=1"
    );
    assert_eq!(surt(&u("http://a.test:8080/")), "http://(test,a,:8080)/");
    assert_eq!(surt(&u("http://10.0.0.1/")), "http://(10.0.0.1,)/");
    let r = rules(
        &[
            "crawl.scope=surt",
            r#"crawl.surt_prefixes=["http://(test,mirror-a,)/docs/"]"#,
        ],
        &["http://x.test/"],
    );
    assert_eq!(r.check(&u("http://mirror-a.test/docs/a"), 1), Ok(()));
    assert_eq!(r.check(&u("http://mirror-a.test/other"), 1), oos(ScopeReason::Surt));
    assert_eq!(r.check(&u("https://mirror-a.test/docs/a"), 1), oos(ScopeReason::Surt));
}

#[test]
fn scope_any_allow_deny_depth_scheme_length() {
    let r = rules(
        &[
            "crawl.scope=any",
            r#"crawl.allow=["^http://[^/]+/(docs|blog)/"]"#,
            r#"crawl.deny=["/private/", "\\.pdf$"]"#,
            "crawl.max_depth=3",
            "crawl.max_url_length=64",
        ],
        &["http://a.test/"],
    );
    assert_eq!(r.check(&u("http://other.test/docs/x"), 3), Ok(()));
    assert_eq!(r.check(&u("http://other.test/shop/x"), 1), oos(ScopeReason::NotAllowed));
    assert_eq!(r.check(&u("http://a.test/docs/private/x"), 1), oos(ScopeReason::Denied));
    assert_eq!(r.check(&u("http://a.test/docs/x.pdf"), 1), oos(ScopeReason::Denied));
    assert_eq!(r.check(&u("http://a.test/docs/x"), 4), oos(ScopeReason::TooDeep));
    assert_eq!(r.check(&u("ftp://a.test/docs/x"), 1), oos(ScopeReason::Scheme));
    let long = format!("http://a.test/docs/{}", "x".repeat(60));
    assert_eq!(r.check(&u(&long), 1), Err(Rejection::Trap(TrapReason::TooLong)));
}

#[test]
fn trap_path_repetition() {
    let r = rules(&["crawl.max_path_repetition=3"], &["http://a.test/"]);
    assert_eq!(r.check(&u("http://a.test/a/b/a/b/a/b/"), 1), Ok(()));
    assert_eq!(
        r.check(&u("http://a.test/a/b/a/b/a/b/a/"), 1),
        Err(Rejection::Trap(TrapReason::PathRepetition {
            segment: "a".into(),
            count: 4
        }))
    );
    assert_eq!(path_repetition("/x/y/y/"), Some(("y", 2)));
    assert_eq!(path_repetition("/"), None);
    // Longer paths than the segments kept on the stack: the repeats past
    // them count too.
    let long: String = (0..40)
        .map(|i| if i % 8 == 7 { "/r".to_string() } else { format!("/s{i}") })
        .collect();
    assert_eq!(path_repetition(&long), Some(("r", 5)));
    let tail = format!("{}/t/t/t", (0..30).map(|i| format!("/s{i}")).collect::<String>());
    assert_eq!(path_repetition(&tail), Some(("t", 3)));
}

#[test]
fn trap_calendar_pattern_cap_per_pattern() {
    let s = settings(&["crawl.max_urls_per_pattern=3"]);
    let f = frontier_with(&s, &["http://a.test/"]);
    assert_eq!(
        digit_pattern(&u("http://a.test:81/cal/2024/05/?day=17")).as_deref(),
        Some("a.test:81/cal/#/#/?day=#")
    );
    assert_eq!(digit_pattern(&u("http://a.test/about/")), None);
    // The first calendar page stays the original of the rest.
    let first = std::sync::Mutex::new(None::<u64>);
    // Fetch every page of `pattern` URLs `from..to`, recording them as `decision`.
    let crawl = |f: &Frontier, urls: Vec<String>, decision: Decision| -> Vec<Offer> {
        let out: Vec<Offer> = urls.iter().map(|x| f.offer(link(x, 1)).unwrap()).collect();
        loop {
            let now = Instant::now();
            match f.next(now).unwrap() {
                NextUrl::Ready(q) => {
                    let d = if q.canonical.contains("/cal/") || q.canonical.contains("/article/") {
                        decision
                    } else {
                        Decision::New
                    };
                    let mut page = page_for(f, &q, d);
                    if d.is_duplicate() {
                        // A duplicate of the first page of its pattern, which stays new.
                        let mut first = first.lock().unwrap();
                        match *first {
                            Some(id) => page.dup_of = Some(id),
                            None => {
                                *first = Some(page.id);
                                page.decision = Decision::New;
                            }
                        }
                    }
                    f.complete(&q, &page, None).unwrap();
                    f.set_host_ready(&q.host, now).unwrap();
                }
                _ => return out,
            }
        }
    };
    // Numbered pages with distinct content are never capped.
    let articles = (1..=10).map(|i| format!("http://a.test/article/{i}/")).collect();
    let out = crawl(&f, articles, Decision::New);
    assert!(out.iter().all(|o| *o == Offer::Enqueued), "{out:?}");
    // A calendar whose months are near duplicates is cut off after 3 of them.
    let months = (1..=6).map(|m| format!("http://a.test/cal/2024/{m:02}/")).collect();
    let out = crawl(&f, months, Decision::NearDuplicate);
    assert!(
        out.iter().all(|o| *o == Offer::Enqueued),
        "all offered before any was fetched"
    );
    let more = f.offer(link("http://a.test/cal/2025/01/", 1)).unwrap();
    assert!(
        matches!(&more, Offer::Trap(TrapReason::PatternCap { pattern }) if pattern == "a.test/cal/#/#/"),
        "{more:?}"
    );
    // Another pattern and URLs without digits are not affected.
    assert_eq!(
        f.offer(link("http://a.test/cal/2024/01/event", 1)).unwrap(),
        Offer::Enqueued
    );
    assert_eq!(f.offer(link("http://a.test/about", 1)).unwrap(), Offer::Enqueued);
}

#[test]
fn mirror_pages_are_not_a_pattern_trap() {
    // Pages that duplicate another host's pages (a mirror) never count
    // towards the pattern cap: only self-similar patterns are traps.
    let s = settings(&["crawl.max_urls_per_pattern=2", "crawl.scope=any"]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let mut originals = Vec::new();
    for i in 1..=6 {
        f.offer(link(&format!("http://a.test/news/{i}/"), 1)).unwrap();
    }
    drain_with(&f, |f, q| {
        let p = page_for(f, q, Decision::New);
        if q.canonical.contains("/news/") {
            originals.push(p.id);
        }
        p
    });
    let offers: Vec<Offer> = (1..=6)
        .map(|i| f.offer(link(&format!("http://b.test/mirror/news/{i}/"), 1)).unwrap())
        .collect();
    assert!(offers.iter().all(|o| *o == Offer::Enqueued), "{offers:?}");
    let mut k = 0;
    drain_with(&f, |f, q| {
        let mut p = page_for(f, q, Decision::ExactDuplicate);
        p.dup_of = Some(originals[k % originals.len()]);
        k += 1;
        p
    });
    assert_eq!(
        f.offer(link("http://b.test/mirror/news/7/", 1)).unwrap(),
        Offer::Enqueued
    );
}

/// Take and complete every ready URL, recording the page `make` builds.
fn drain_with(f: &Frontier, mut make: impl FnMut(&Frontier, &QueuedUrl) -> StoredPage) {
    loop {
        let now = Instant::now();
        match f.next(now).unwrap() {
            NextUrl::Ready(q) => {
                let p = make(f, &q);
                f.complete(&q, &p, None).unwrap();
                f.set_host_ready(&q.host, now).unwrap();
            }
            _ => return,
        }
    }
}

#[test]
fn max_pages_per_host() {
    let s = settings(&["crawl.max_pages_per_host=3"]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let offers = f
        .offer_many(
            &(0..5)
                .map(|i| link(&format!("http://a.test/p{i}"), 1))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    assert_eq!(offers[..2], [Offer::Enqueued, Offer::Enqueued]);
    assert!(offers[2..]
        .iter()
        .all(|o| *o == Offer::OutOfScope(ScopeReason::HostFull)));
    assert_eq!(f.offer(link("http://b.test/p", 1)).unwrap(), Offer::Enqueued);
}

// ---------------------------------------------------------------------------
// Priority components.

fn enqueued(f: &Frontier, c: Candidate) -> QueuedUrl {
    let url = c.url.clone();
    assert_eq!(f.offer(c).unwrap(), Offer::Enqueued);
    match f.store().url_state(url.as_str()).unwrap() {
        Some(UrlState::Queued(k)) => f.store().queued(&host_key(&url), k).unwrap().unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_component_moves_priority_the_right_way() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let base = enqueued(&f, link("http://a.test/base", 1));
    let explained: f64 = explain(&base.components, f.weights()).iter().map(|e| e.3).sum();
    assert!(
        (explained - base.priority).abs() < 1e-12,
        "explain sums to the priority"
    );

    let deeper = enqueued(&f, link("http://a.test/deeper", 2));
    assert!(deeper.priority < base.priority && deeper.components.depth == -2.0);

    let mut c = link("http://a.test/exact", 1);
    c.parent_dup = ParentDup::Exact;
    let exact = enqueued(&f, c);
    let mut c = link("http://a.test/near0", 1);
    c.parent_dup = ParentDup::Near(0);
    let near0 = enqueued(&f, c);
    let mut c = link("http://a.test/near3", 1);
    c.parent_dup = ParentDup::Near(3);
    let near3 = enqueued(&f, c);
    assert!(exact.priority < near0.priority, "default exact penalty 10 > near 8");
    assert!(near0.priority < near3.priority && near3.priority < base.priority);
    assert_eq!(exact.components.parent_dup, -s.dedup.exact_penalty);

    let mut c = link("http://a.test/relevant", 1);
    c.relevance = 0.7;
    let rel = enqueued(&f, c);
    assert!(rel.priority > base.priority && rel.components.relevance == 0.7);

    let mut c = link("http://a.test/mirror", 1);
    c.mirror = true;
    let mir = enqueued(&f, c);
    assert_eq!(mir.components.mirror, -s.mirror.penalty);
    assert!(mir.priority < base.priority);

    // In-links: offering a queued URL again raises its priority.
    // (The count is kept in memory until the URL is handed out or written.)
    assert_eq!(f.offer(link("http://a.test/base", 1)).unwrap(), Offer::AlreadySeen);
    f.write_pending().unwrap();
    let again = match f.store().url_state("http://a.test/base").unwrap() {
        Some(UrlState::Queued(k)) => f.store().queued("a.test", k).unwrap().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(again.inlinks, 2);
    assert!(again.priority > base.priority);
    assert_eq!(again.components.inlinks, 3f64.ln());
}

#[test]
fn host_duplicates_and_visits_lower_new_links() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/", "http://b.test/"]);
    let fresh_b = enqueued(&f, link("http://b.test/fresh", 1));
    assert_eq!(fresh_b.components.host_novelty, 1.0);
    assert_eq!(fresh_b.components.host_dup_rate, 0.0);
    // Crawl a.test's seed as a duplicate and b.test's seed as new.
    for _ in 0..2 {
        let NextUrl::Ready(q) = f.next(Instant::now()).unwrap() else {
            panic!()
        };
        let d = if q.host == "a.test" {
            Decision::NearDuplicate
        } else {
            Decision::New
        };
        f.complete(&q, &page_for(&f, &q, d), None).unwrap();
    }
    assert_eq!(f.host_stats("a.test").duplicates, 1);
    let a = enqueued(&f, link("http://a.test/x", 1));
    let b = enqueued(&f, link("http://b.test/x", 1));
    assert_eq!(a.components.host_dup_rate, -1.0);
    assert_eq!(b.components.host_dup_rate, 0.0);
    assert_eq!(b.components.host_novelty, 0.5);
    assert!(b.priority < fresh_b.priority, "novelty falls as the host is crawled");
    assert!(a.priority < b.priority, "a host serving duplicates gets less");
}

#[test]
fn ready_hosts_are_served_best_url_first() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    drain(&f);
    f.offer(link("http://a.test/deep", 5)).unwrap();
    let mut c = link("http://b.test/relevant", 1);
    c.relevance = 1.0;
    f.offer(c).unwrap();
    f.offer(link("http://c.test/", 2)).unwrap();
    let order: Vec<String> = drain(&f).into_iter().map(|q| q.canonical).collect();
    assert_eq!(
        order,
        ["http://b.test/relevant", "http://c.test/", "http://a.test/deep"]
    );
}

fn stored(f: &Frontier, url: &str) -> QueuedUrl {
    match f.store().url_state(url).unwrap() {
        Some(UrlState::Queued(k)) => f.store().queued("a.test", k).unwrap().unwrap(),
        other => panic!("{url}: {other:?}"),
    }
}

fn listed(url: &str, component: f64) -> Candidate {
    Candidate {
        parent: Some("http://a.test/sitemap.xml".into()),
        sitemap: Some(component),
        ..Candidate::new(u(url), 1)
    }
}

#[test]
fn sitemap_entries_queue_new_urls_and_raise_queued_ones() {
    let mut s = settings(&[]);
    s.frontier.memory_window = 16;
    let f = frontier_with(&s, &["http://a.test/"]);
    // A URL only in a sitemap: queued with its component, no extra in-link.
    let new = enqueued(&f, listed("http://a.test/listed", 0.8));
    let base = enqueued(&f, link("http://a.test/base", 1));
    assert_eq!((new.components.sitemap, new.inlinks), (0.8, 1));
    assert!((new.priority - base.priority - 0.8 * s.frontier.sitemap_weight).abs() < 1e-12);
    let explained: f64 = explain(&new.components, f.weights()).iter().map(|e| e.3).sum();
    assert!((explained - new.priority).abs() < 1e-12);
    assert!(explain(&new.components, f.weights())
        .iter()
        .any(|e| e.0 == "sitemap" && e.1 == 0.8));

    // Linked first, listed later: the component is raised (in the window),
    // the entry rewritten, and no in-link counted; a lower value changes nothing.
    assert_eq!(
        f.offer_many(&[listed("http://a.test/base", 1.2)]).unwrap(),
        [Offer::AlreadySeen]
    );
    let raised = stored(&f, "http://a.test/base");
    assert_eq!((raised.components.sitemap, raised.inlinks), (1.2, 1));
    assert!((raised.priority - base.priority - 1.2).abs() < 1e-12);
    f.offer_many(&[listed("http://a.test/base", 0.3)]).unwrap();
    assert_eq!(stored(&f, "http://a.test/base").components.sitemap, 1.2);

    // URLs beyond the window live in the store only: raised there too.
    for i in 0..40 {
        enqueued(&f, link(&format!("http://a.test/d{i}"), 3));
    }
    f.offer_many(&[listed("http://a.test/d39", 1.0)]).unwrap();
    assert_eq!(stored(&f, "http://a.test/d39").components.sitemap, 1.0);

    // A batch mixing links and sitemap entries: each kind counts its own way.
    let offers = f
        .offer_many(&[
            link("http://a.test/d38", 2),
            listed("http://a.test/d38", 0.5),
            link("http://a.test/fresh", 1),
        ])
        .unwrap();
    assert_eq!(offers, [Offer::AlreadySeen, Offer::AlreadySeen, Offer::Enqueued]);
    f.write_pending().unwrap();
    let d38 = stored(&f, "http://a.test/d38");
    assert_eq!((d38.components.sitemap, d38.inlinks), (0.5, 2));

    // Every URL is handed out exactly once, raised ones with their component.
    let all = drain(&f);
    let mut urls: Vec<&str> = all.iter().map(|q| q.canonical.as_str()).collect();
    urls.sort_unstable();
    urls.dedup();
    // The seed, listed, base, d0..d39 and fresh.
    assert_eq!((all.len(), urls.len()), (44, 44));
    let d39 = all.iter().find(|q| q.canonical == "http://a.test/d39").unwrap();
    assert_eq!(d39.components.sitemap, 1.0);
    // Raised URLs come out before their unraised peers.
    let pos = |url: &str| all.iter().position(|q| q.canonical == url).unwrap();
    assert!(pos("http://a.test/d39") < pos("http://a.test/d0"));
    // A done URL listed later stays done.
    assert_eq!(
        f.offer_many(&[listed("http://a.test/base", 2.0)]).unwrap(),
        [Offer::AlreadySeen]
    );
    assert!(f.is_empty());
}

fn with_host_rules(rules: &str) -> Settings {
    let layers = [
        ("config/test.toml".to_string(), crate::config::TEST_TOML),
        ("rules.toml".to_string(), rules),
    ];
    Settings::from_layers(&layers, &[]).unwrap()
}

#[test]
fn host_rules_cap_pages_and_in_flight_per_host() {
    let s = with_host_rules(
        "[crawl]\nmax_pages_per_host = 4\n[[hosts]]\npattern = \"a.test\"\nmax_pages = 2\nmax_in_flight = 2\n",
    );
    let f = frontier_with(&s, &["http://a.test/", "http://b.test/"]);
    let links: Vec<Candidate> = ["a.test", "b.test"]
        .iter()
        .flat_map(|h| (0..4).map(move |i| link(&format!("http://{h}/p{i}"), 1)))
        .collect();
    let offers = f.offer_many(&links).unwrap();
    let full = Offer::OutOfScope(ScopeReason::HostFull);
    // a.test: its seed and one link (max_pages = 2); b.test: the global 4.
    assert_eq!(offers[..4], [Offer::Enqueued, full.clone(), full.clone(), full.clone()]);
    assert_eq!(offers[4..7], [Offer::Enqueued, Offer::Enqueued, Offer::Enqueued]);
    assert_eq!(offers[7], full);
    // a.test may have two URLs in flight, b.test one.
    let t = Instant::now();
    let mut hosts = Vec::new();
    while let NextUrl::Ready(q) = f.next(t).unwrap() {
        f.set_host_ready(&q.host, t).unwrap();
        hosts.push(q.host);
    }
    hosts.sort();
    assert_eq!(hosts, ["a.test", "a.test", "b.test"]);
}

#[test]
fn host_rules_scope_keys_apply_to_their_hosts() {
    let s = with_host_rules(
        "[crawl]\nmax_depth = 3\ndeny = [\"/global-no/\"]\n\
         [[hosts]]\npattern = \"*.a.test\"\nmax_depth = 5\nallow = [\"/docs/\"]\ndeny = [\"/docs/old/\"]\n\
         [[hosts]]\npattern = \"(test,b,\"\nmax_depth = 1\n",
    );
    let r = ScopeRules::new(&s.crawl, &[u("http://www.a.test/")]).with_host_rules(&s.hosts);
    assert_eq!(
        r.check(&u("http://www.a.test/docs/x"), 5),
        Ok(()),
        "deeper than the global 3"
    );
    assert_eq!(r.check(&u("http://www.a.test/docs/x"), 6), oos(ScopeReason::TooDeep));
    assert_eq!(r.check(&u("http://www.a.test/blog/x"), 1), oos(ScopeReason::NotAllowed));
    assert_eq!(r.check(&u("http://www.a.test/docs/old/x"), 1), oos(ScopeReason::Denied));
    assert_eq!(
        r.check(&u("http://www.a.test/docs/global-no/x"), 1),
        oos(ScopeReason::Denied)
    );
    assert_eq!(r.check(&u("http://b.test/x"), 2), oos(ScopeReason::TooDeep));
    assert_eq!(r.check(&u("http://x.b.test:81/x"), 1), Ok(()));
    // Other hosts keep the global rules.
    assert_eq!(r.check(&u("http://c.test/blog/x"), 3), Ok(()));
    assert_eq!(r.check(&u("http://c.test/blog/x"), 4), oos(ScopeReason::TooDeep));
    assert_eq!(r.check(&u("http://a.test/blog/x"), 1), Ok(()), "*.a.test is not a.test");
}
