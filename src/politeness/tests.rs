//! Unit tests of [`Politeness`] against canned responses, on tokio's paused
//! clock (timing is exact and the tests do not sleep).

use std::time::Duration;

use super::*;
use crate::fetch::testing::{response, StaticFetcher};

fn settings() -> Settings {
    Settings::default()
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn page() -> RequestOutcome {
    RequestOutcome::Response {
        status: 200,
        retry_after: None,
        elapsed: Duration::from_millis(1),
    }
}

#[test]
fn origin_keys_fill_default_ports() {
    assert_eq!(Politeness::origin_key(&url("http://A.test/x?y")), "http://a.test:80");
    assert_eq!(
        Politeness::origin_key(&url("https://a.test:8443/")),
        "https://a.test:8443"
    );
    assert_eq!(Politeness::origin_key(&url("https://a.test/")), "https://a.test:443");
}

#[tokio::test(start_paused = true)]
async fn acquire_spaces_requests_by_the_delay() {
    let p = Politeness::new(&settings());
    let t0 = Instant::now();
    for i in 0..4u32 {
        let permit = p.acquire(&url("http://a.test/")).await.unwrap();
        // The request itself takes no time on the paused clock.
        assert_eq!(Instant::now() - t0, Duration::from_secs(i as u64));
        permit.finish(&page());
    }
    // Another host is independent.
    let t1 = Instant::now();
    let _b = p.acquire(&url("http://b.test/")).await.unwrap();
    assert_eq!(Instant::now(), t1);
}

#[tokio::test(start_paused = true)]
async fn host_rules_set_the_delay_and_in_flight_limit_of_their_hosts() {
    let rules = "[[hosts]]\npattern = \"slow.test\"\nmin_delay_ms = 5000\n\
                 [[hosts]]\npattern = \"*.wide.test:8080\"\nmin_delay_ms = 0\nmax_in_flight = 2\n";
    let s = Settings::from_layers(&[("rules.toml".into(), rules)], &[]).unwrap();
    let p = Politeness::new(&s);
    let t0 = Instant::now();
    let one = |u: &str| {
        let permit = p.try_acquire(&url(u), t0).unwrap();
        let delay = permit.delay();
        permit.finish(&page());
        delay
    };
    assert_eq!(one("http://slow.test/"), Duration::from_secs(5), "the rule's delay");
    assert_eq!(one("https://slow.test:8443/"), Duration::from_secs(5), "any port");
    assert_eq!(one("http://a.test/"), Duration::from_secs(1), "the global delay");
    assert_eq!(
        one("http://a.wide.test/"),
        Duration::from_secs(1),
        "the rule's port only"
    );
    // Two in flight to a host of the second rule, one elsewhere.
    let a = p.try_acquire(&url("http://a.wide.test:8080/1"), t0).unwrap();
    let b = p.try_acquire(&url("http://a.wide.test:8080/2"), t0).unwrap();
    assert_eq!(a.delay(), Duration::ZERO);
    assert_eq!(
        p.try_acquire(&url("http://a.wide.test:8080/3"), t0).unwrap_err(),
        NotReady::Busy
    );
    drop((a, b));
    let c = p.try_acquire(&url("http://c.test/1"), t0).unwrap();
    assert_eq!(p.try_acquire(&url("http://c.test/2"), t0).unwrap_err(), NotReady::Busy);
    drop(c);
}

#[tokio::test(start_paused = true)]
async fn busy_host_wakes_waiter_on_finish() {
    let mut s = settings();
    s.politeness.min_delay = Duration::ZERO;
    s.politeness.delay_factor = 0.0;
    let p = Politeness::new(&s);
    let first = p.try_acquire(&url("http://a.test/1"), Instant::now()).unwrap();
    assert_eq!(
        p.try_acquire(&url("http://a.test/2"), Instant::now()).unwrap_err(),
        NotReady::Busy
    );
    let p2 = p.clone();
    let waiter = tokio::spawn(async move { p2.acquire(&url("http://a.test/2")).await.map(|_| Instant::now()) });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let released = Instant::now();
    first.finish(&page());
    let got = waiter.await.unwrap().unwrap();
    assert_eq!(got, released);
}

#[tokio::test(start_paused = true)]
async fn robots_disallow_and_crawl_delay_are_applied() {
    let f = StaticFetcher::new();
    f.add_page(
        "http://a.test/robots.txt",
        200,
        "User-agent: *\nDisallow: /private\nCrawl-delay: 3\n",
    );
    let p = Politeness::new(&settings());
    assert_eq!(
        p.check(&f, &url("http://a.test/private/x")).await,
        RobotsVerdict::Disallow
    );
    assert_eq!(p.check(&f, &url("http://a.test/public")).await, RobotsVerdict::Allow);
    assert_eq!(f.requests().len(), 1, "cached");
    // The robots.txt request itself started the spacing: 3 s Crawl-delay.
    let t0 = Instant::now();
    let permit = p.acquire(&url("http://a.test/public")).await.unwrap();
    assert_eq!(Instant::now() - t0, Duration::from_secs(3));
    assert_eq!(permit.delay(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn crawl_delay_over_the_cap_skips_the_host() {
    let f = StaticFetcher::new();
    f.add_page("http://slow.test/robots.txt", 200, "User-agent: *\nCrawl-delay: 31\n");
    let p = Politeness::new(&settings());
    assert_eq!(p.check(&f, &url("http://slow.test/")).await, RobotsVerdict::Allow);
    let err = p.try_acquire(&url("http://slow.test/"), Instant::now()).unwrap_err();
    assert!(
        matches!(err, NotReady::Skip(SkipReason::CrawlDelayTooLong { max: 30, .. })),
        "{err:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn robots_status_policy() {
    let f = StaticFetcher::new();
    f.add_page("http://gone.test/robots.txt", 404, "");
    f.add_page("http://down.test/robots.txt", 503, "");
    f.add_page("http://busy.test/robots.txt", 429, "");
    f.add(
        "http://dead.test/robots.txt",
        Err(FetchError::Connect("refused".into())),
    );
    let p = Politeness::new(&settings());
    let x = |h: &str| url(&format!("http://{h}/x"));
    assert_eq!(p.check(&f, &x("gone.test")).await, RobotsVerdict::Allow);
    for host in ["down.test", "busy.test", "dead.test"] {
        let v = p.check(&f, &x(host)).await;
        assert!(matches!(v, RobotsVerdict::Unavailable { .. }), "{host}: {v:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn unavailable_robots_is_retried_after_robots_retry() {
    let f = StaticFetcher::new();
    let robots = "http://down.test/robots.txt";
    f.add_page(robots, 503, "")
        .add_page(robots, 200, "User-agent: *\nDisallow: /no\n");
    let p = Politeness::new(&settings());
    let t0 = Instant::now();
    match p.check(&f, &url("http://down.test/yes")).await {
        RobotsVerdict::Unavailable { retry_at } => assert_eq!(retry_at, t0 + Duration::from_secs(600)),
        v => panic!("{v:?}"),
    }
    tokio::time::advance(Duration::from_secs(599)).await;
    assert!(matches!(
        p.check(&f, &url("http://down.test/yes")).await,
        RobotsVerdict::Unavailable { .. }
    ));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(p.check(&f, &url("http://down.test/yes")).await, RobotsVerdict::Allow);
    assert_eq!(p.check(&f, &url("http://down.test/no")).await, RobotsVerdict::Disallow);
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn robots_ttl_expires() {
    let f = StaticFetcher::new();
    f.add_page("http://a.test/robots.txt", 200, "");
    let p = Politeness::new(&settings());
    p.check(&f, &url("http://a.test/")).await;
    tokio::time::advance(Duration::from_secs(86_399)).await;
    p.check(&f, &url("http://a.test/")).await;
    assert_eq!(f.requests().len(), 1);
    tokio::time::advance(Duration::from_secs(2)).await;
    p.check(&f, &url("http://a.test/")).await;
    assert_eq!(f.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn robots_redirects_are_followed_up_to_five() {
    let f = StaticFetcher::new();
    let mut r = response("http://a.test/robots.txt", 301, "");
    r.location = Some("http://cdn.test/r.txt".into());
    f.add("http://a.test/robots.txt", Ok(r));
    f.add_page("http://cdn.test/r.txt", 200, "User-agent: *\nDisallow: /\n");
    // A chain of six hops: too many, treated as unavailable = allow all.
    for i in 0..7 {
        let mut r = response(&format!("http://loop.test/{i}"), 302, "");
        r.location = Some(format!("/{}", i + 1));
        f.add(
            &format!(
                "http://loop.test/{}",
                if i == 0 { "robots.txt".into() } else { i.to_string() }
            ),
            Ok(r),
        );
    }
    let mut s = settings();
    s.politeness.min_delay = Duration::ZERO;
    let p = Politeness::new(&s);
    assert_eq!(p.check(&f, &url("http://a.test/x")).await, RobotsVerdict::Disallow);
    assert_eq!(p.check(&f, &url("http://loop.test/x")).await, RobotsVerdict::Allow);
    let loop_requests = f
        .requests()
        .iter()
        .filter(|u| u.host_str() == Some("loop.test"))
        .count();
    assert_eq!(loop_requests, 6, "the start plus five hops");
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_robots_fetch() {
    let f = std::sync::Arc::new(StaticFetcher::new());
    f.add_page("http://a.test/robots.txt", 200, "User-agent: *\nDisallow: /x\n");
    let p = Politeness::new(&settings());
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let (p, f) = (p.clone(), f.clone());
            tokio::spawn(async move { p.check(f.as_ref(), &url(&format!("http://a.test/x{i}"))).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), RobotsVerdict::Disallow);
    }
    assert_eq!(f.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn robots_off_fetches_nothing() {
    let f = StaticFetcher::new();
    let mut s = settings();
    s.politeness.respect_robots = false;
    let p = Politeness::new(&s);
    assert_eq!(p.check(&f, &url("http://a.test/x")).await, RobotsVerdict::Allow);
    assert!(f.requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn parked_host_is_refused_by_acquire() {
    let mut s = settings();
    s.politeness.max_consecutive_failures = 2;
    s.politeness.min_delay = Duration::ZERO;
    let p = Politeness::new(&s);
    for _ in 0..2 {
        p.acquire(&url("http://bad.test/"))
            .await
            .unwrap()
            .finish(&RequestOutcome::Failed);
    }
    assert_eq!(p.parked(Instant::now()), 1, "one origin parked");
    assert_eq!(
        p.parked(Instant::now() + Duration::from_secs(601)),
        0,
        "until the park ends"
    );
    let err = p.acquire(&url("http://bad.test/")).await.unwrap_err();
    assert!(
        matches!(
            err,
            NotReady::Wait {
                reason: WaitReason::Parked,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(p.next_ready("http://bad.test:80") >= Instant::now() + Duration::from_secs(599));
}

#[test]
fn retry_policy() {
    let s = settings();
    let r = RetryPolicy::new(&s.politeness);
    let resp = |status, retry_after| RequestOutcome::Response {
        status,
        retry_after,
        elapsed: Duration::ZERO,
    };
    assert_eq!(r.should_retry(&RequestOutcome::Failed, 0), Some(Duration::from_secs(5)));
    assert_eq!(
        r.should_retry(&RequestOutcome::Failed, 1),
        Some(Duration::from_secs(10))
    );
    assert_eq!(r.should_retry(&RequestOutcome::Failed, 2), None, "max_retries = 2");
    assert_eq!(
        r.should_retry(&resp(429, Some(Duration::from_secs(7))), 0),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        r.should_retry(&resp(503, Some(Duration::from_secs(99_999))), 0),
        Some(Duration::from_secs(3600))
    );
    assert_eq!(
        r.should_retry(&resp(500, Some(Duration::from_secs(7))), 0),
        Some(Duration::from_secs(5))
    );
    assert_eq!(r.should_retry(&resp(404, None), 0), None);
    assert_eq!(r.should_retry(&resp(200, None), 0), None);
    assert_eq!(r.should_retry(&resp(501, None), 0), None);
}
