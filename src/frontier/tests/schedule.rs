//! The seen-set, window refill and scheduling (politeness, in-flight
//! limits, retries), resume after a crash, and kill -9 safety.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::store::DiskStore;

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
    let store = Arc::new(DiskStore::open(dir.path()).unwrap());
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

/// `memory_budget` is shared among the hosts found: a window takes at most
/// its share when it takes a URL, every window is shrunk once the share has
/// halved, never below 16, and every host still hands out all its URLs best
/// first.
#[test]
fn windows_share_the_memory_budget_among_hosts() {
    let mut s = settings(&["crawl.max_urls_per_pattern=0", "crawl.scope=\"any\""]);
    s.frontier.memory_window = 4096;
    s.frontier.memory_budget = 128;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DiskStore::open(dir.path()).unwrap());
    let f = Frontier::new(store, &s, &[u("http://h0.test/")]).unwrap();
    let mut got = Vec::new();
    let mut fetch_one = || {
        let now = Instant::now();
        let NextUrl::Ready(q) = f.next(now).unwrap() else {
            panic!("nothing ready")
        };
        f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
        f.set_host_ready(&q.host, now).unwrap();
        got.push(q);
    };
    let offer_host = |h: u32, n: u64| {
        let cands: Vec<Candidate> = (0..n)
            .map(|i| {
                let mut c = link(&format!("http://h{h}.test/p{i}"), 1);
                c.relevance = ((i * 7919) % 1000) as f64 / 1000.0;
                c
            })
            .collect();
        assert!(f.offer_many(&cands).unwrap().iter().all(|o| *o == Offer::Enqueued));
    };
    let windows = |f: &Frontier| f.window_sizes().into_iter().map(|(_, w)| w).collect::<Vec<_>>();
    // One host: the whole budget.
    offer_host(0, 500);
    assert_eq!(windows(&f), [128]);
    // Four hosts: each takes a quarter when it takes a URL, and the next
    // handout shrinks h0's window too.
    for h in 1..4 {
        offer_host(h, 500);
    }
    assert_eq!(windows(&f), [128, 64, 42, 32]);
    fetch_one();
    let w = windows(&f);
    assert!(w.iter().all(|&w| w <= 32) && w.iter().sum::<usize>() <= 128, "{w:?}");
    // Sixteen hosts: the floor of 16 URLs each.
    for h in 4..16 {
        offer_host(h, 40);
    }
    fetch_one();
    let w = windows(&f);
    assert!(w.iter().all(|&w| w <= 16), "{w:?}");
    got.extend(drain(&f));
    assert_eq!(got.len(), 1 + 4 * 500 + 12 * 40);
    for h in 0..16 {
        let host = format!("h{h}.test");
        let keys: Vec<_> = got.iter().filter(|q| q.host == host).map(|q| q.key()).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{host}: best first");
    }
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
fn host_counts_split_hosts_with_queued_urls_into_ready_and_waiting() {
    let s = settings(&[]);
    let f = frontier_with(&s, &["http://a.test/"]);
    f.offer_many(&[link("http://a.test/1", 1)]).unwrap();
    let t0 = Instant::now();
    assert_eq!(f.host_counts(t0), (1, 0), "a new host is ready at once");
    let NextUrl::Ready(q) = f.next(t0).unwrap() else {
        panic!()
    };
    assert_eq!(f.host_counts(t0), (0, 1), "not ready until told");
    let later = t0 + Duration::from_secs(1);
    f.set_host_ready("a.test", later).unwrap();
    assert_eq!(f.host_counts(later), (0, 1), "at its in-flight limit");
    f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
    assert_eq!(f.host_counts(t0), (0, 1), "waiting for its time");
    assert_eq!(f.host_counts(later), (1, 0), "ready once its time has come");
    let NextUrl::Ready(_) = f.next(later).unwrap() else {
        panic!()
    };
    assert_eq!(
        f.host_counts(later),
        (0, 0),
        "a host with nothing queued is not counted"
    );
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
        let store: Arc<dyn Store> = Arc::new(DiskStore::open(dir.path()).unwrap());
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
    let store: Arc<dyn Store> = Arc::new(DiskStore::open(dir.path()).unwrap());
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
        let store: Arc<dyn Store> = Arc::new(DiskStore::open(dir.path()).unwrap());
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
    let store: Arc<dyn Store> = Arc::new(DiskStore::open(dir.path()).unwrap());
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
    let store: Arc<dyn Store> = Arc::new(DiskStore::open(std::path::Path::new(&dir)).unwrap());
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
            "frontier::tests::schedule::kill_child",
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
    let store: Arc<dyn Store> = Arc::new(DiskStore::open(dir.path()).unwrap());
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

/// A worker counts a host's store entries by a queue length read when it
/// took the host; other workers queue more for the host meanwhile. Loading
/// the window must count what was loaded, or the worker's total goes below
/// zero as the window drains.
#[test]
fn a_worker_counts_the_entries_other_workers_queued_for_its_host() {
    let s = settings(&["crawl.max_urls_per_pattern=0"]);
    let store: Arc<dyn Store> = Arc::new(MemStore::new());
    let (a, seeded) = Frontier::for_worker(store.clone(), &s, &[u("http://h0.test/0")], 1).unwrap();
    assert!(seeded);
    let (b, _) = Frontier::for_worker(store.clone(), &s, &[], 2).unwrap();
    let host = store.iter_queue().next().unwrap().unwrap().host;
    a.adopt(&host, 1, Instant::now()).unwrap();
    let links: Vec<Candidate> = (1..=60).map(|m| link(&format!("http://h0.test/{m}"), 1)).collect();
    b.offer_many(&links).unwrap();
    assert_eq!(b.len(), 0, "b owns no host");
    let in_store = |h: &str| store.iter_queue().filter(|q| q.as_ref().unwrap().host == h).count() as u64;
    assert_eq!(in_store(&host), 61);
    let mut fetched = 0;
    for _ in 0..10 {
        let got = drain(&a).len();
        assert_eq!(a.len(), 0, "nothing counted once drained");
        fetched += got;
        let left = in_store(&host);
        if left == 0 {
            break;
        }
        a.refresh(&host, left).unwrap();
        assert_eq!(a.len() as u64, left);
    }
    assert_eq!(fetched, 61);
    assert_eq!(store.pages_recorded().unwrap(), 61);
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

/// A frontier with two hosts, each with its seed taken and done: host
/// `a.test` then gets two links of relevance 0.5, `b.test` one of 0.
fn two_hosts(overrides: &[&str]) -> Frontier {
    let s = settings(overrides);
    let f = frontier_with(&s, &["http://a.test/", "http://b.test/"]);
    let t0 = Instant::now();
    for _ in 0..2 {
        let NextUrl::Ready(q) = f.next(t0).unwrap() else {
            panic!()
        };
        f.complete(&q, &page_for(&f, &q, Decision::New), None).unwrap();
        f.set_host_ready(&q.host, t0).unwrap();
    }
    let rel = |url: &str, r: f64| Candidate {
        relevance: r,
        ..link(url, 1)
    };
    f.offer_many(&[
        rel("http://a.test/1", 0.5),
        rel("http://a.test/2", 0.5),
        rel("http://b.test/1", 0.0),
    ])
    .unwrap();
    f
}

const FOCUSED: &[&str] = &[
    "focus.enabled=true",
    r#"focus.keywords=["star"]"#,
    "focus.hold_margin=1.0",
];

#[test]
fn a_focused_crawl_holds_a_slot_for_a_better_host_until_its_page_is_decided() {
    let mut o = FOCUSED.to_vec();
    o.push("focus.hold_ms=60000");
    let f = two_hosts(&o);
    let t = Instant::now();
    let NextUrl::Ready(a1) = f.next(t).unwrap() else {
        panic!()
    };
    assert_eq!(a1.host, "a.test");
    // b.test/1 trails a.test/2 by 5 points: the slot waits for a.test.
    let NextUrl::Wait(until) = f.next(t).unwrap() else {
        panic!("held")
    };
    assert!(until >= t + Duration::from_secs(59));
    f.fetched(&a1, t).unwrap();
    assert!(
        matches!(f.next(t).unwrap(), NextUrl::Wait(_)),
        "fetched, not decided yet"
    );
    f.decided(&a1).unwrap();
    let NextUrl::Ready(a2) = f.next(t).unwrap() else {
        panic!()
    };
    assert_eq!(
        a2.canonical, "http://a.test/2",
        "decided: a.test's next URL, before the commit"
    );
    // a.test has nothing left: b.test is the best there is.
    let NextUrl::Ready(b1) = f.next(t).unwrap() else {
        panic!()
    };
    assert_eq!(b1.canonical, "http://b.test/1");
    f.complete(&a1, &page_for(&f, &a1, Decision::New), None).unwrap();
    assert_eq!(f.in_flight(), 2);
}

#[test]
fn a_hold_ends_after_hold_ms_and_never_without_focus() {
    let mut o = FOCUSED.to_vec();
    o.push("focus.hold_ms=10");
    let f = two_hosts(&o);
    let t = Instant::now();
    assert!(matches!(f.next(t).unwrap(), NextUrl::Ready(_)));
    let NextUrl::Wait(until) = f.next(t).unwrap() else {
        panic!("held")
    };
    assert_eq!(until, t + Duration::from_millis(10));
    let NextUrl::Ready(b1) = f.next(until).unwrap() else {
        panic!("hold over")
    };
    assert_eq!(b1.host, "b.test");
    // A host waiting for its politeness delay holds nothing.
    let f = two_hosts(&[
        "focus.enabled=true",
        r#"focus.keywords=["star"]"#,
        "focus.hold_ms=60000",
    ]);
    let t = Instant::now();
    let NextUrl::Ready(a1) = f.next(t).unwrap() else {
        panic!()
    };
    f.fetched(&a1, t + Duration::from_secs(5)).unwrap();
    f.decided(&a1).unwrap();
    assert!(matches!(f.next(t).unwrap(), NextUrl::Ready(q) if q.host == "b.test"));
    // Breadth-first (focus off): no hold, and a host waits for its commit.
    let f = two_hosts(&["focus.hold_ms=60000"]);
    let t = Instant::now();
    let NextUrl::Ready(a1) = f.next(t).unwrap() else {
        panic!()
    };
    assert!(matches!(f.next(t).unwrap(), NextUrl::Ready(q) if q.host == "b.test"));
    f.fetched(&a1, t).unwrap();
    assert_eq!(f.next(t).unwrap(), NextUrl::Busy, "a.test waits for its page's record");
}

#[test]
fn rescoring_reorders_a_window_and_the_ready_hosts_at_a_bounded_rate() {
    let f = two_hosts(&["focus.enabled=true", r#"focus.keywords=["star"]"#, "focus.hold_ms=0"]);
    let score = |url: &str| -> f64 {
        if url.ends_with("/2") || url.contains("b.test") {
            0.9
        } else {
            0.1
        }
    };
    // a.test holds 2 URLs: 32 credits per call re-score its window at once;
    // the turn host is credited too.
    let n = f.rescore("a.test", 32, &mut |c| Some(score(c))).unwrap();
    assert!(n >= 2, "{n}");
    let n = f.rescore("b.test", 32, &mut |c| Some(score(c))).unwrap();
    assert!(n >= 1, "{n}");
    // Queued as a.test/1, a.test/2 (relevance 0.5 each), b.test/1 (0):
    // now a.test/2 leads (5 + 9 points), b.test/1 (9) passes a.test/1 (5 + 1).
    let order: Vec<String> = drain(&f).into_iter().map(|q| q.canonical).collect();
    assert_eq!(order, ["http://a.test/2", "http://b.test/1", "http://a.test/1"]);
    // A window larger than the credits waits for enough pages.
    let f = two_hosts(&["focus.enabled=true", r#"focus.keywords=["star"]"#, "focus.hold_ms=0"]);
    assert_eq!(f.rescore("a.test", 1, &mut |_| Some(0.5)).unwrap(), 0);
    // a.test's 2 credits reach its 2 URLs; b.test, in turn, its 1.
    assert_eq!(f.rescore("a.test", 1, &mut |_| Some(0.5)).unwrap(), 3);
    // The re-scored priorities reach the store at the end of a run.
    f.write_pending().unwrap();
    let stored = f.store().scan_queue("a.test", 10).unwrap();
    assert!(stored.iter().all(|q| q.components.url_relevance == 0.5), "{stored:?}");
}

#[test]
fn a_queued_url_keeps_the_best_relevance_of_its_in_links() {
    let s = settings(&[
        "focus.enabled=true",
        r#"focus.keywords=["star"]"#,
        "frontier.memory_window=16",
    ]);
    let f = frontier_with(&s, &["http://a.test/"]);
    let NextUrl::Ready(seed) = f.next(Instant::now()).unwrap() else {
        panic!()
    };
    f.complete(&seed, &page_for(&f, &seed, Decision::New), None).unwrap();
    f.set_host_ready(&seed.host, Instant::now()).unwrap();
    let rel = |url: &str, r: f64| Candidate {
        relevance: r,
        tunnel: 1,
        ..link(url, 1)
    };
    // 40 URLs: the window holds the best 16, the rest wait in the store.
    let mut first: Vec<Candidate> = (0..40).map(|i| rel(&format!("http://a.test/p{i}"), 0.2)).collect();
    first.push(rel("http://a.test/mid", 0.3));
    f.offer_many(&first).unwrap();
    // p39 (in the store) and p0 (in the window) are found again through
    // better links; a worse link changes nothing.
    f.offer_many(&[
        Candidate {
            tunnel: 0,
            ..rel("http://a.test/p39", 0.9)
        },
        rel("http://a.test/p0", 0.5),
        rel("http://a.test/mid", 0.1),
    ])
    .unwrap();
    let order = drain(&f);
    let names: Vec<&str> = order.iter().take(3).map(|q| q.canonical.as_str()).collect();
    assert_eq!(names, ["http://a.test/p39", "http://a.test/p0", "http://a.test/mid"]);
    assert_eq!(order[0].components.relevance, 0.9);
    assert_eq!(order[0].tunnel, 0, "the tunnelling counter of the better path");
    assert_eq!(order[0].inlinks, 2);
    assert_eq!(order[2].components.relevance, 0.3);
}
