//! Unit tests of the frontier: scope and trap rules, priority components,
//! the seen-set, window refill, scheduling, resume and kill safety.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::scope::*;
use super::*;
use crate::config::Settings;
use crate::host::{host_key, registrable_domain};
use crate::model::Decision;
use crate::store::{MemStore, SledStore};

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn settings(overrides: &[&str]) -> Settings {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Settings::test_web(&o).unwrap()
}

fn frontier_with(s: &Settings, seeds: &[&str]) -> Frontier {
    let seeds: Vec<Url> = seeds.iter().map(|x| u(x)).collect();
    Frontier::new(Arc::new(MemStore::new()), s, &seeds).unwrap()
}

fn page_for(f: &Frontier, q: &QueuedUrl, decision: Decision) -> StoredPage {
    StoredPage {
        id: f.allocate_page_id(),
        canonical: q.canonical.clone(),
        final_url: q.canonical.clone(),
        status: 200,
        depth: q.depth,
        decision,
        ..Default::default()
    }
}

/// Take, complete and release hosts until nothing is queued.
fn drain(f: &Frontier) -> Vec<QueuedUrl> {
    let mut out = Vec::new();
    loop {
        let now = Instant::now();
        match f.next(now).unwrap() {
            NextUrl::Ready(q) => {
                f.complete(&q, &page_for(f, &q, Decision::New), None).unwrap();
                f.set_host_ready(&q.host, now).unwrap();
                out.push(q);
            }
            NextUrl::Empty => return out,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn link(url: &str, depth: u32) -> Candidate {
    Candidate {
        parent: Some("http://a.test/".into()),
        ..Candidate::new(u(url), depth)
    }
}

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

// ---------------------------------------------------------------------------
// Seen-set, window refill, scheduling.

#[test]
fn seen_set_blocks_repeats_and_aliases() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let offers = f
        .offer_many(&[
            link("http://a.test/x", 1),
            link("http://a.test/x", 1),
            link("http://a.test/", 1),
        ])
        .unwrap();
    assert_eq!(offers, [Offer::Enqueued, Offer::AlreadySeen, Offer::AlreadySeen]);
    assert!(f.record_alias("http://a.test/x/", "http://a.test/x").unwrap());
    assert_eq!(f.offer(link("http://a.test/x/", 1)).unwrap(), Offer::AlreadySeen);
    let got = drain(&f);
    assert_eq!(got.len(), 2);
    assert_eq!(got.iter().find(|q| q.canonical.ends_with("/x")).unwrap().inlinks, 2);
    // Done URLs stay seen.
    assert_eq!(f.offer(link("http://a.test/x", 1)).unwrap(), Offer::AlreadySeen);
    assert!(!f.record_alias("http://a.test/x", "http://a.test/y").unwrap());
    assert_eq!(f.next(Instant::now()).unwrap(), NextUrl::Empty);
}

#[test]
fn window_refills_from_store_in_priority_order() {
    let mut s = settings(&["crawl.max_urls_per_pattern=0"]);
    s.frontier.memory_window = 16;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    let f = Frontier::new(store, &s, &[u("http://a.test/")]).unwrap();
    // 10,000 URLs with scrambled relevance, in batches of 100.
    let n = 10_000u64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let cands: Vec<Candidate> = chunk
            .iter()
            .map(|i| {
                let mut c = link(&format!("http://a.test/p{i}"), 1);
                c.relevance = ((i * 7919) % 1000) as f64 / 1000.0;
                c
            })
            .collect();
        assert!(f.offer_many(&cands).unwrap().iter().all(|o| *o == Offer::Enqueued));
        assert!(f.window_sizes().iter().all(|(_, w)| *w <= 16));
    }
    assert_eq!(f.len() as u64, n + 1);
    let got = drain(&f);
    assert_eq!(got.len() as u64, n + 1);
    assert!(
        got.windows(2).all(|w| w[0].key() <= w[1].key()),
        "handed out in priority order, FIFO among equals"
    );
    let mut urls: Vec<&str> = got.iter().map(|q| q.canonical.as_str()).collect();
    urls.sort_unstable();
    urls.dedup();
    assert_eq!(urls.len() as u64, n + 1, "each URL once");
}

#[test]
fn host_waits_for_politeness_and_in_flight_limit() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    f.offer_many(&[link("http://a.test/1", 1), link("http://a.test/2", 1)])
        .unwrap();
    let t0 = Instant::now();
    let NextUrl::Ready(q) = f.next(t0).unwrap() else {
        panic!()
    };
    assert_eq!(f.in_flight(), 1);
    assert_eq!(
        f.next(t0).unwrap(),
        NextUrl::Busy,
        "one in flight per host, not ready until told"
    );
    f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
    assert_eq!(
        f.next(t0).unwrap(),
        NextUrl::Busy,
        "complete alone does not make the host ready"
    );
    let later = t0 + Duration::from_secs(1);
    f.set_host_ready("a.test", later).unwrap();
    assert_eq!(f.next(t0).unwrap(), NextUrl::Wait(later));
    assert!(matches!(f.next(later).unwrap(), NextUrl::Ready(_)));
    // max_in_flight_per_host = 2: two handouts once the host is told it is ready again.
    let s = settings(&["politeness.max_in_flight_per_host=2"]);
    let f = frontier_with(&s, &["http://a.test/"]);
    f.offer_many(&[link("http://a.test/1", 1), link("http://a.test/2", 1)])
        .unwrap();
    let t1 = Instant::now();
    assert!(matches!(f.next(t1).unwrap(), NextUrl::Ready(_)));
    f.set_host_ready("a.test", t1).unwrap();
    assert!(matches!(f.next(t1).unwrap(), NextUrl::Ready(_)));
    f.set_host_ready("a.test", t1).unwrap();
    assert_eq!(f.next(t1).unwrap(), NextUrl::Busy, "two in flight");
}

#[test]
fn requeue_counts_retries_and_delays_host() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let t0 = Instant::now();
    let NextUrl::Ready(q) = f.next(t0).unwrap() else {
        panic!()
    };
    let later = t0 + Duration::from_secs(5);
    f.requeue(q.clone(), later).unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(f.next(t0).unwrap(), NextUrl::Wait(later));
    let NextUrl::Ready(again) = f.next(later).unwrap() else {
        panic!()
    };
    assert_eq!((again.canonical.as_str(), again.retries), (q.canonical.as_str(), 1));
    assert!(matches!(f.complete(&q, &page_for(&f, &q, Decision::New), None), Ok(())));
    assert!(matches!(
        f.complete(&q, &page_for(&f, &q, Decision::New), None),
        Err(FrontierError::NotInFlight(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever the order of offers, handouts and completions, no canonical
    /// URL is handed out twice and every offered URL is handed out once.
    #[test]
    fn never_hands_out_a_url_twice(ops in proptest::collection::vec((0u8..3, 0u32..40, 0u32..4), 1..200)) {
        let mut s = settings(&["politeness.max_in_flight_per_host=2"]);
        s.frontier.memory_window = 2;
        let f = frontier_with(&s, &["http://h0.test/0"]);
        let mut handed = std::collections::HashSet::new();
        handed.insert("http://h0.test/0".to_string());
        let mut offered = handed.clone();
        let mut in_flight: Vec<QueuedUrl> = Vec::new();
        let now = Instant::now();
        let mut check = |q: QueuedUrl, in_flight: &mut Vec<QueuedUrl>| {
            assert!(handed.insert(q.canonical.clone()) || q.canonical == "http://h0.test/0" && handed.len() == 1);
            in_flight.push(q);
        };
        if let NextUrl::Ready(q) = f.next(now).unwrap() { in_flight.push(q); }
        for (op, n, h) in ops {
            match op {
                0 => {
                    let url = format!("http://h{h}.test/{n}");
                    offered.insert(url.clone());
                    f.offer(link(&url, 1)).unwrap();
                }
                1 => if let NextUrl::Ready(q) = f.next(now).unwrap() { check(q, &mut in_flight); },
                _ => if !in_flight.is_empty() {
                    let q = in_flight.remove((n as usize) % in_flight.len());
                    f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
                    f.set_host_ready(&q.host, now).unwrap();
                },
            }
        }
        for q in in_flight.drain(..) {
            f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
            f.set_host_ready(&q.host, now).unwrap();
        }
        for q in drain(&f) {
            prop_assert!(handed.insert(q.canonical.clone()), "{} twice", q.canonical);
        }
        prop_assert_eq!(handed, offered);
        // Every store queue entry left with its page, whatever key it had.
        prop_assert!(f.store.iter_queue().next().is_none());
    }
}

// ---------------------------------------------------------------------------
// Resume and kill safety.

#[test]
fn resume_requeues_in_flight_urls() {
    let s = settings(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (done, flying);
    {
        let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).unwrap());
        let f = Frontier::new(store.clone(), &s, &[u("http://a.test/")]).unwrap();
        assert!(matches!(
            Frontier::new(store.clone(), &s, &[u("http://a.test/")]),
            Err(FrontierError::ExistingCrawl)
        ));
        f.offer_many(&[
            link("http://a.test/1", 1),
            link("http://b.test/2", 1),
            link("http://b.test/3", 1),
        ])
        .unwrap();
        let t = Instant::now();
        let NextUrl::Ready(a) = f.next(t).unwrap() else {
            panic!()
        };
        f.complete(&a, &page_for(&f, &a, Decision::New), None).unwrap();
        let NextUrl::Ready(b) = f.next(t).unwrap() else {
            panic!()
        };
        done = a.canonical;
        flying = b.canonical;
        store.flush().unwrap();
    }
    let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).unwrap());
    let f = Frontier::resume(store, &s).unwrap();
    assert_eq!(f.len(), 3, "two queued + one re-queued");
    assert_eq!(f.in_flight(), 0);
    assert_eq!(f.host_stats("a.test").fetched, 1);
    let got: Vec<String> = drain(&f).into_iter().map(|q| q.canonical).collect();
    assert!(got.contains(&flying) && !got.contains(&done), "{got:?}");
    assert!(matches!(
        Frontier::resume(Arc::new(MemStore::new()), &s),
        Err(FrontierError::NothingToResume)
    ));
}

/// A URL moved up by in-links counted in memory is fetched without
/// rewriting its store entry: the completion removes the entry under the key
/// it was stored with, and a crash in flight re-queues it from that entry.
#[test]
fn moved_up_urls_complete_and_resume_under_their_stored_key() {
    let s = settings(&[]);
    let dir = tempfile::tempdir().unwrap();
    let x = "http://a.test/x";
    let stored;
    {
        let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).unwrap());
        let f = Frontier::new(store.clone(), &s, &[u("http://a.test/")]).unwrap();
        f.offer_many(&[link(x, 1), link("http://a.test/y", 1)]).unwrap();
        let Some(UrlState::Queued(k)) = store.url_state(x).unwrap() else {
            panic!("x is queued")
        };
        stored = k;
        // Two more in-links: x moves up in memory only.
        f.offer_many(&[link(x, 1), link(x, 1)]).unwrap();
        let t = Instant::now();
        let NextUrl::Ready(seed) = f.next(t).unwrap() else {
            panic!()
        };
        f.complete(&seed, &page_for(&f, &seed, Decision::New), None).unwrap();
        f.set_host_ready("a.test", t).unwrap();
        let NextUrl::Ready(q) = f.next(t).unwrap() else {
            panic!()
        };
        assert_eq!((q.canonical.as_str(), q.inlinks), (x, 3));
        assert_ne!(q.key(), stored, "its priority moved up");
        assert_eq!(
            store.url_state(x).unwrap(),
            Some(UrlState::Queued(stored)),
            "not rewritten"
        );
        assert!(store.queued("a.test", stored).unwrap().is_some());
        // Found again while in flight: counted nowhere, handed out nowhere.
        assert_eq!(f.offer(link(x, 1)).unwrap(), Offer::AlreadySeen);
        store.flush().unwrap();
        // Killed here, with x in flight.
    }
    let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).unwrap());
    let f = Frontier::resume(store.clone(), &s).unwrap();
    assert_eq!(f.len(), 2, "y queued, x re-queued");
    let got: Vec<QueuedUrl> = drain(&f);
    let xs: Vec<&QueuedUrl> = got.iter().filter(|q| q.canonical == x).collect();
    assert_eq!(xs.len(), 1, "x fetched once: {got:?}");
    assert_eq!(xs[0].inlinks, 1, "a crash loses only the in-memory in-link counts");
    assert!(
        store.iter_queue().next().is_none(),
        "x left the queue under its stored key"
    );
    assert!(matches!(store.url_state(x).unwrap(), Some(UrlState::Done(_))));
}

/// The synthetic web of the kill test: page n of 400 (on 5 hosts) links to
/// 2n+1, 2n+2, n/2 and (n*7+3) mod 400.
fn kill_links(n: u64) -> Vec<Candidate> {
    [2 * n + 1, 2 * n + 2, n / 2, (n * 7 + 3) % 400]
        .into_iter()
        .filter(|&m| m < 400)
        .map(|m| link(&format!("http://h{}.test/{m}", m % 5), 1))
        .collect()
}

fn kill_crawl(f: &Frontier, stop_after: Option<usize>) -> usize {
    let mut pages = 0;
    loop {
        let now = Instant::now();
        let q = match f.next(now).unwrap() {
            NextUrl::Ready(q) => q,
            NextUrl::Empty => return pages,
            other => panic!("{other:?}"),
        };
        if stop_after == Some(pages) {
            // Killed with this URL in flight and others queued.
            std::process::abort();
        }
        let n: u64 = q.canonical.rsplit('/').next().unwrap().parse().unwrap();
        f.offer_many(&kill_links(n)).unwrap();
        f.complete(&q, &page_for(f, &q, Decision::New), None).unwrap();
        f.set_host_ready(&q.host, now).unwrap();
        pages += 1;
        if pages % 50 == 0 {
            f.store().flush().unwrap();
        }
    }
}

/// Child half of `kill_minus_nine_loses_nothing` (runs only when spawned by it).
#[test]
#[ignore = "run by kill_minus_nine_loses_nothing in a child process"]
fn kill_child() {
    let Ok(dir) = std::env::var("SIMCRAWL_KILL_DIR") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SledStore::open(std::path::Path::new(&dir)).unwrap());
    let f = Frontier::new(
        store,
        &settings(&["crawl.max_urls_per_pattern=0"]),
        &[u("http://h0.test/0")],
    )
    .unwrap();
    kill_crawl(&f, Some(137));
    unreachable!("the child aborts mid-crawl");
}

#[test]
fn kill_minus_nine_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "frontier::tests::kill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SIMCRAWL_KILL_DIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child must die by abort");
    let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).unwrap());
    let before = store.pages_recorded().unwrap();
    assert!(before >= 100, "flushed pages survive: {before}");
    let f = Frontier::resume(store.clone(), &settings(&["crawl.max_urls_per_pattern=0"])).unwrap();
    // No queued URL lost: every seen URL without a page is queued again.
    let mut not_done = 0;
    for r in store.iter_seen() {
        match r.unwrap().1 {
            UrlState::Done(_) => {}
            UrlState::Queued(_) => not_done += 1,
            other => panic!("after resume: {other:?}"),
        }
    }
    assert_eq!(f.len(), not_done);
    assert!(not_done > 0);
    let rest = kill_crawl(&f, None) as u64;
    assert_eq!(before + rest, 400, "every page of the synthetic web recorded once");
    let mut canon: Vec<String> = store.iter_pages().map(|p| p.unwrap().canonical).collect();
    canon.sort();
    canon.dedup();
    assert_eq!(canon.len(), 400, "no page recorded twice");
    assert_eq!(store.pages_recorded().unwrap(), 400);
}

#[test]
fn concurrent_workers_record_each_page_once() {
    let s = settings(&["crawl.max_urls_per_pattern=0", "politeness.max_in_flight_per_host=2"]);
    let store: Arc<dyn Store> = Arc::new(MemStore::new());
    let f = Arc::new(Frontier::new(store.clone(), &s, &[u("http://h0.test/0")]).unwrap());
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || loop {
                let now = Instant::now();
                match f.next(now).unwrap() {
                    NextUrl::Ready(q) => {
                        f.set_host_ready(&q.host, now).unwrap();
                        let n: u64 = q.canonical.rsplit('/').next().unwrap().parse().unwrap();
                        f.offer_many(&kill_links(n)).unwrap();
                        f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
                    }
                    NextUrl::Empty if f.in_flight() == 0 => return,
                    _ => std::thread::yield_now(),
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(store.pages_recorded().unwrap(), 400);
    let mut canon: Vec<String> = store.iter_pages().map(|p| p.unwrap().canonical).collect();
    canon.sort();
    canon.dedup();
    assert_eq!(canon.len(), 400);
}

#[test]
fn repeated_links_in_one_batch_count_each_in_link() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    f.offer(link("http://a.test/x", 1)).unwrap();
    let offers = f
        .offer_many(&[
            link("http://a.test/x", 1),
            link("http://a.test/x", 1),
            link("http://a.test/y", 1),
        ])
        .unwrap();
    assert_eq!(offers, [Offer::AlreadySeen, Offer::AlreadySeen, Offer::Enqueued]);
    let x = drain(&f)
        .into_iter()
        .find(|q| q.canonical == "http://a.test/x")
        .unwrap();
    assert_eq!(x.inlinks, 3);
}
