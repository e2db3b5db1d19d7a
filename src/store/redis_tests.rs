//! Tests of [`RedisStore`] beyond the shared suite: reopening a crawl,
//! retried and refused commits, readers skipping what a crash leaves, and
//! format and connection errors. On the local cluster
//! (`scripts/redis-cluster.sh`); skipped with a message without one.

use super::test_suite::{page, qurl};
use super::*;
use crate::model::Decision;
use std::sync::Arc;

/// The local cluster's nodes, or `None` (printed) when there is none.
fn nodes() -> Option<Vec<String>> {
    redis_local::cluster_for_test("the redis store tests")
}

#[test]
fn reopened_crawl_keeps_its_state_and_ids() {
    let Some(nodes) = nodes() else { return };
    let name = redis_local::unique_crawl_name("reopen");
    let s = RedisStore::open(&nodes, &name).unwrap();
    assert!(s.fresh());
    let (u, v) = (qurl("a.test", "x", 1.0, 1), qurl("b.test", "y", 2.0, 2));
    s.enqueue(&[u.clone(), v.clone()]).unwrap();
    s.set_meta("seeds", b"http://a.test/").unwrap();
    let p = page(&s, &u, Decision::New);
    let mut hs = HostStats::default();
    hs.record(&p);
    s.complete(&u, &p, None, &hs).unwrap();
    drop(s);

    let s = RedisStore::open(&nodes, &name).unwrap();
    assert!(!s.fresh(), "a seeded crawl is not fresh");
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(p.id)));
    assert_eq!(s.url_state(&v.canonical).unwrap(), Some(UrlState::Queued(v.key())));
    assert_eq!(s.pages_recorded().unwrap(), 1);
    assert_eq!(s.page(p.id).unwrap(), Some(p.clone()));
    assert_eq!(s.iter_queue().map(Result::unwrap).collect::<Vec<_>>(), vec![v.clone()]);
    assert_eq!(s.iter_seen().count(), 2);
    // Ids of the reopened store come after every id handed out before.
    assert!(s.next_page_id() > p.id);
    assert!(s.allocate_page_id() > p.id);
}

#[test]
fn retried_commit_records_nothing_twice() {
    let Some(nodes) = nodes() else { return };
    let s = RedisStore::open(&nodes, &redis_local::unique_crawl_name("retry")).unwrap();
    let (u, v) = (qurl("a.test", "x", 1.0, 1), qurl("b.test", "y", 1.0, 2));
    s.enqueue(&[u.clone(), v.clone()]).unwrap();
    let (p, q) = (page(&s, &u, Decision::New), page(&s, &v, Decision::New));
    let (mut ha, mut hb) = (HostStats::default(), HostStats::default());
    ha.record(&p);
    hb.record(&q);
    let group = [
        Completion {
            url: &u,
            key: u.key(),
            page: &p,
            body: None,
            host: &ha,
        },
        Completion {
            url: &v,
            key: v.key(),
            page: &q,
            body: None,
            host: &hb,
        },
    ];
    s.complete_many(&group).unwrap();
    // The same commit again (a caller that saw it fail midway): no change.
    s.complete_many(&group).unwrap();
    assert_eq!(s.pages_recorded().unwrap(), 2);
    assert_eq!(s.iter_pages().count(), 2);
    assert_eq!(s.host_stats("a.test").unwrap(), Some(ha));
    // The same URL as another page is still refused.
    let again = page(&s, &u, Decision::New);
    let hs = HostStats::default();
    assert!(matches!(
        s.complete(&u, &again, None, &hs),
        Err(StoreError::AlreadyDone { page, .. }) if page == p.id
    ));
}

#[test]
fn host_script_refuses_its_part_whole() {
    let Some(nodes) = nodes() else { return };
    let s = RedisStore::open(&nodes, &redis_local::unique_crawl_name("script")).unwrap();
    let (u, v) = (qurl("a.test", "x", 1.0, 1), qurl("a.test", "y", 1.0, 2));
    s.enqueue(&[u.clone(), v.clone()]).unwrap();
    let (p, q) = (page(&s, &u, Decision::New), page(&s, &v, Decision::New));
    // `v` is recorded as page 999 behind the check's back (another writer).
    let seen = s.keys.host("a.test").seen;
    let other = records::enc_state(&UrlState::Done(999));
    s.with(|c| ::redis::cmd("HSET").arg(&seen).arg(&v.canonical).arg(&other).exec(c))
        .unwrap();
    let hs = HostStats::default();
    let items = [
        Completion {
            url: &u,
            key: u.key(),
            page: &p,
            body: None,
            host: &hs,
        },
        Completion {
            url: &v,
            key: v.key(),
            page: &q,
            body: None,
            host: &hs,
        },
    ];
    let refs: Vec<&Completion<'_>> = items.iter().collect();
    let result: ::redis::Value = s.with(|c| s.complete_eval("a.test", &refs).query(c)).unwrap();
    let err = redis_keys::complete_result(result, &refs).unwrap_err();
    assert!(matches!(err, StoreError::AlreadyDone { page: 999, .. }), "{err}");
    // Nothing of the host's part was written: `u` is still queued.
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Queued(u.key())));
    assert_eq!(s.scan_queue("a.test", 10).unwrap().len(), 2);
    assert_eq!(s.page(p.id).unwrap(), None);
}

#[test]
fn dangling_page_index_entries_are_skipped() {
    let Some(nodes) = nodes() else { return };
    let s = RedisStore::open(&nodes, &redis_local::unique_crawl_name("dangling")).unwrap();
    let u = qurl("a.test", "x", 1.0, 1);
    s.enqueue(std::slice::from_ref(&u)).unwrap();
    let lost = s.allocate_page_id();
    let p = page(&s, &u, Decision::New);
    s.complete(&u, &p, None, &HostStats::default()).unwrap();
    // A crash after the index entry of page `lost`, before its host's script.
    let index = s.keys.page_index(lost);
    s.with(|c| {
        ::redis::cmd("HSET")
            .arg(&index)
            .arg(&lost.to_be_bytes())
            .arg("a.test")
            .exec(c)
    })
    .unwrap();
    assert_eq!(s.page(lost).unwrap(), None);
    let ids: Vec<PageId> = s.iter_pages().map(|r| r.unwrap().id).collect();
    assert_eq!(ids, vec![p.id]);
    assert_eq!(s.iter_fingerprints().count(), 1);
}

#[test]
fn other_format_version_and_bad_names_are_refused() {
    let Some(nodes) = nodes() else { return };
    let name = redis_local::unique_crawl_name("version");
    let s = RedisStore::open(&nodes, &name).unwrap();
    s.set_meta("format_version", &99u32.to_be_bytes()).unwrap();
    drop(s);
    assert!(matches!(
        RedisStore::open(&nodes, &name),
        Err(StoreError::Version { got: 99, .. })
    ));
    for bad in ["", "a{b", "a}b"] {
        assert!(
            matches!(RedisStore::open(&nodes, bad), Err(StoreError::Open { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn unreachable_cluster_is_an_open_error() {
    // Port 1 on loopback: nothing listens (connection refused at once).
    let err = RedisStore::open(&["127.0.0.1:1".to_string()], "x")
        .err()
        .expect("refused");
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.to_string().contains("redis://127.0.0.1:1/x"), "{err}");
}

/// The decision log of a fresh crawl on the local cluster, with a lock TTL.
fn decision_log(nodes: &[String], prefix: &str, ttl: std::time::Duration) -> (RedisStore, RedisLog) {
    let s = RedisStore::open(nodes, &redis_local::unique_crawl_name(prefix)).unwrap();
    let log = RedisLog::new(s.conn.clone(), s.name()).with_ttl(ttl);
    (s, log)
}

#[test]
fn decision_log_refuses_an_append_whose_lock_expired() {
    let Some(nodes) = nodes() else { return };
    let (s, log) = decision_log(&nodes, "dlog-fence", std::time::Duration::from_millis(100));
    let start = Cursor::start();
    let (lease, seen) = log.lock(&start).unwrap();
    assert!(seen.is_empty());
    std::thread::sleep(std::time::Duration::from_millis(250));
    // Another worker takes the expired lock, and appends.
    let (other, _) = log.lock(&start).unwrap();
    let (_, at) = log.append_unlock(other, &start, &[b"b".to_vec()]).unwrap();
    let err = log.append_unlock(lease, &start, &[b"a".to_vec()]).unwrap_err();
    assert!(matches!(err, StoreError::LockLost { .. }), "{err}");
    let all = log.read_after(&start, 10).unwrap();
    assert_eq!(all, vec![(at, b"b".to_vec())]);
    // A lock that expired with no other holder is refused as well.
    let (lease, _) = log.lock(&start).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(250));
    assert!(matches!(
        log.append_unlock(lease, &start, &[b"c".to_vec()]),
        Err(StoreError::LockLost { .. })
    ));
    assert_eq!(log.read_after(&start, 10).unwrap().len(), 1);
    // The store hands out the same log.
    let shared = s.decision_log().expect("a redis store has a decision log");
    assert_eq!(shared.read_after(&start, 10).unwrap().len(), 1);
}

/// Two threads append under the lock, each seeing the other's entries
/// when it takes the lock: both views are the log, in one order.
fn concurrent_appends_share_one_order(log: Arc<dyn DecisionLog>) {
    let done = Arc::new(std::sync::Barrier::new(2));
    let run = |t: u8| {
        let log = log.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut at = Cursor::start();
            let mut view: Vec<Vec<u8>> = Vec::new();
            for i in 0..40u8 {
                let (lease, seen) = log.lock(&at).unwrap();
                for (c, e) in seen {
                    view.push(e);
                    at = c;
                }
                let mine = vec![vec![t, i, 0], vec![t, i, 1]];
                let (others, last) = log.append_unlock(lease, &at, &mine).unwrap();
                // Only entries appended without the lock come back here.
                assert!(others.iter().all(|(_, e)| e.first() == Some(&9)), "{others:?}");
                view.extend(others.into_iter().map(|(_, e)| e));
                view.extend(mine);
                at = last;
                if i % 10 == 0 {
                    log.append(&[vec![9, t, i]]).unwrap();
                }
                std::thread::sleep(std::time::Duration::from_micros(200 * u64::from(t)));
            }
            // Both done: the last look sees the whole log.
            done.wait();
            let (lease, seen) = log.lock(&at).unwrap();
            view.extend(seen.into_iter().map(|(_, e)| e));
            log.append_unlock(lease, &at, &[]).unwrap();
            view
        })
    };
    let (a, b) = (run(1), run(2));
    let (va, vb) = (a.join().unwrap(), b.join().unwrap());
    let all: Vec<Vec<u8>> = log
        .read_all_after(&Cursor::start())
        .unwrap()
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    assert_eq!(all.len(), 2 * 40 * 2 + 8);
    // The lock's entries in one order everywhere (the unlocked ones may
    // sit elsewhere in a view: they decide nothing).
    let locked = |v: &[Vec<u8>]| -> Vec<Vec<u8>> { v.iter().filter(|e| e[0] != 9).cloned().collect() };
    assert_eq!(locked(&va), locked(&all));
    assert_eq!(locked(&vb), locked(&all));
    // Each pair of one hold is adjacent: no append of the other inside it;
    // and the threads did interleave.
    let l = locked(&all);
    assert!(
        l.windows(2).any(|w| w[0][0] != w[1][0] && w[0][0] == 2),
        "no interleaving"
    );
    for w in l.chunks(2) {
        assert_eq!((w[0][0], w[0][1], w[0][2], w[1][2]), (w[1][0], w[1][1], 0, 1));
    }
}

#[test]
fn decision_log_appends_of_two_threads_share_one_order() {
    concurrent_appends_share_one_order(Arc::new(MemLog::new()));
    let Some(nodes) = nodes() else { return };
    let (_s, log) = decision_log(&nodes, "dlog-order", LOCK_TTL);
    concurrent_appends_share_one_order(Arc::new(log));
}

#[test]
fn two_workers_share_decisions_on_redis() {
    let Some(nodes) = nodes() else { return };
    let (s, _) = decision_log(&nodes, "dlog-workers", LOCK_TTL);
    let log = s.decision_log().expect("log");
    let calls = redis_calls();
    let pairs = 100;
    let holds = crate::dedup::replica::tests::two_workers_share_decisions(
        log,
        Some((s.table_buckets().expect("tables"), s.content_owners().expect("maps"))),
        pairs,
    );
    let per_page = (redis_calls() - calls) as f64 / (2 * pairs) as f64;
    eprintln!("two workers on Redis: {holds:.2} lock holds per page, {per_page:.2} Redis calls per page");
    assert!(holds <= 0.25, "{holds}");
}

#[test]
fn shared_limits_hold_slots_crawl_wide_and_space_requests() {
    use std::time::{Duration, Instant};
    let Some(nodes) = nodes() else { return };
    let s = RedisStore::open(&nodes, &redis_local::unique_crawl_name("limits")).unwrap();
    let l = s.shared_limits().expect("limits");
    let ttl = Duration::from_secs(30);
    assert!(l.take_slot("10.0.0.1", 2, "a", ttl).unwrap());
    assert!(l.take_slot("10.0.0.1", 2, "b", ttl).unwrap());
    assert!(!l.take_slot("10.0.0.1", 2, "c", ttl).unwrap(), "both slots are held");
    // A retried take keeps its slot; another address has its own.
    assert!(l.take_slot("10.0.0.1", 2, "b", ttl).unwrap());
    assert!(l.take_slot("10.0.0.2", 2, "c", ttl).unwrap());
    l.free_slot("10.0.0.1", "a").unwrap();
    assert!(l.take_slot("10.0.0.1", 2, "c", ttl).unwrap());
    // A holder that never frees its slot loses it after its TTL.
    assert!(l.take_slot("10.0.0.3", 1, "dies", Duration::from_millis(100)).unwrap());
    assert!(!l.take_slot("10.0.0.3", 1, "waits", ttl).unwrap());
    std::thread::sleep(Duration::from_millis(150));
    assert!(l.take_slot("10.0.0.3", 1, "waits", ttl).unwrap());
    // 20 requests per second: the second waits about 50 ms.
    assert_eq!(l.take_request(20).unwrap(), Duration::ZERO);
    let wait = l.take_request(20).unwrap();
    assert!(
        wait > Duration::from_millis(30) && wait <= Duration::from_millis(50),
        "{wait:?}"
    );
    let started = Instant::now();
    let mut taken = 1;
    while taken < 6 {
        match l.take_request(20).unwrap() {
            w if w.is_zero() => taken += 1,
            w => std::thread::sleep(w),
        }
    }
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
}
