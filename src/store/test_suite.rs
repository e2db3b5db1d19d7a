//! The shared [`Store`] test suite (tests only): the [`store_suite!`] macro and
//! its cases, each a function over `&dyn Store`, run against every
//! implementation.

/// The shared [`Store`] test suite: `store_suite!(module_name, make_store())`
/// (any expression that dereferences to a store) expands to a test module
/// running every case against the store the expression makes (one fresh
/// store per case); `store_suite!(module_name, optional make())` takes an
/// `Option` of one, and a `None` skips the case (a store that needs a
/// server that is not there). Used for [`MemStore`], [`DiskStore`] (both engines) and
/// [`RedisStore`]; another implementation adds one line.
macro_rules! store_suite {
    (@cases $name:ident, $opt:expr, [$($case:ident),*]) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $case() {
                    if let Some(s) = $opt {
                        $crate::store::test_suite::$case(&*s);
                    }
                }
            )*
        }
    };
    ($name:ident, optional $make:expr) => {
        store_suite!(@cases $name, $make, [
            enqueue_scan_best_first, claim_complete_lifecycle, complete_many_is_one_group,
            reprioritize_moves_entry, aliases_and_meta, page_ids_increase
        ]);
    };
    ($name:ident, $make:expr) => {
        store_suite!($name, optional Some($make));
    };
}

use super::*;
use crate::model::Decision;
use crate::model::ScoreComponents;

pub(crate) fn qurl(host: &str, path: &str, priority: f64, seq: u64) -> QueuedUrl {
    let canonical = format!("http://{host}/{path}");
    QueuedUrl {
        url: canonical.clone(),
        canonical,
        host: host.to_string(),
        depth: 1,
        parent: Some(format!("http://{host}/")),
        components: ScoreComponents {
            depth: -1.0,
            // Non-zero for some, so round trips check the field.
            sitemap: (seq % 2) as f64 * 0.75,
            ..Default::default()
        },
        priority,
        seq,
        retries: 0,
        inlinks: 1,
        // Non-zero for some, so round trips check the field.
        tunnel: (seq % 3) as u32,
        revisit: None,
    }
}

pub(crate) fn page(s: &dyn Store, u: &QueuedUrl, decision: Decision) -> StoredPage {
    StoredPage {
        id: s.allocate_page_id(),
        canonical: u.canonical.clone(),
        final_url: u.canonical.clone(),
        status: 200,
        depth: u.depth,
        decision,
        simhash: Some(0xdead_beef),
        content_hash: Some([u.seq as u8; 32]),
        text_hash: Some([7; 32]),
        fetched_at_ms: 1000 + u.seq,
        bytes: 10,
        ..Default::default()
    }
}

pub(crate) fn enqueue_scan_best_first(s: &dyn Store) {
    let urls = vec![
        qurl("a.test", "low", -3.0, 1),
        qurl("a.test", "high", 2.5, 2),
        qurl("a.test", "mid", 0.0, 3),
        qurl("a.test", "mid-later", 0.0, 4),
        qurl("a.test", "neg", -0.5, 5),
        qurl("a.test:8080", "other-port", 9.0, 6),
        qurl("b.test", "x", 100.0, 7),
    ];
    s.enqueue(&urls).unwrap();
    let got: Vec<String> = s
        .scan_queue("a.test", 10)
        .unwrap()
        .into_iter()
        .map(|u| u.canonical)
        .collect();
    assert_eq!(
        got,
        ["high", "mid", "mid-later", "neg", "low"].map(|p| format!("http://a.test/{p}"))
    );
    assert_eq!(s.scan_queue("a.test", 2).unwrap().len(), 2);
    assert_eq!(s.scan_queue("a.test:8080", 10).unwrap().len(), 1);
    assert_eq!(s.iter_queue().count(), 7);
    let back = s.queued("a.test", urls[1].key()).unwrap().unwrap();
    assert_eq!(back, urls[1]);
    assert_eq!(
        s.url_state("http://a.test/high").unwrap(),
        Some(UrlState::Queued(urls[1].key()))
    );
    assert_eq!(s.url_state("http://a.test/none").unwrap(), None);
}

/// The first pages with body hash `[1; 32]` and text hash `[7; 32]`, as
/// exact-duplicate detection finds them after a restart.
fn owners(s: &dyn Store) -> (Option<PageId>, Option<PageId>) {
    crate::dedup::ExactIndex::load(s)
        .unwrap()
        .lookup(Some(&[1; 32]), Some(&[7; 32]))
        .unwrap()
}

pub(crate) fn claim_complete_lifecycle(s: &dyn Store) {
    let u = qurl("a.test", "x", 1.0, 1);
    let v = qurl("a.test", "y", 1.0, 2);
    s.enqueue(&[u.clone(), v.clone()]).unwrap();
    s.claim(&u).unwrap();
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::InFlight(u.key())));
    assert_eq!(s.scan_queue("a.test", 10).unwrap().len(), 2, "in-flight stays queued");
    let p = page(s, &u, Decision::New);
    let mut hs = HostStats::default();
    hs.record(&p);
    let body = crate::model::BodyRef {
        file: 3,
        offset: 1 << 33,
        length: 4321,
    };
    s.complete(&u, &p, Some(body), &hs).unwrap();
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(p.id)));
    assert_eq!(s.scan_queue("a.test", 10).unwrap(), vec![v.clone()]);
    assert_eq!(s.page(p.id).unwrap(), Some(p.clone()));
    assert_eq!(s.body_ref(p.id).unwrap(), Some(body));
    assert_eq!(s.host_stats("a.test").unwrap(), Some(hs.clone()));
    assert_eq!(s.pages_recorded().unwrap(), 1);
    assert_eq!(owners(s), (Some(p.id), Some(p.id)));
    // Recording the same URL again is refused.
    let again = page(s, &u, Decision::New);
    assert!(matches!(
        s.complete(&u, &again, None, &hs),
        Err(StoreError::AlreadyDone { page, .. }) if page == p.id
    ));
    // A duplicate keeps the first page as the hash owner and adds no fingerprint.
    s.claim(&v).unwrap();
    let mut q = page(s, &v, Decision::ExactDuplicate);
    q.content_hash = Some([1; 32]);
    q.dup_of = Some(p.id);
    hs.record(&q);
    s.complete(&v, &q, None, &hs).unwrap();
    assert_eq!(owners(s), (Some(p.id), Some(p.id)));
    let fps: Vec<_> = s.iter_fingerprints().map(Result::unwrap).collect();
    assert_eq!(fps, vec![(p.id, 0xdead_beef)]);
    let from = |id| s.iter_fingerprints_from(id).map(Result::unwrap).collect::<Vec<_>>();
    assert_eq!(from(p.id), fps);
    assert_eq!(from(p.id + 1), vec![]);
    assert!(s.next_page_id() > q.id);
    let pages: Vec<_> = s.iter_pages().map(|r| r.unwrap().id).collect();
    assert_eq!(pages, vec![p.id, q.id]);
    let hashes: Vec<PageHashes> = s.iter_hashes().map(Result::unwrap).collect();
    assert_eq!(
        hashes,
        vec![
            PageHashes {
                id: p.id,
                body: Some([1; 32]),
                text: Some([7; 32])
            },
            PageHashes {
                id: q.id,
                body: Some([1; 32]),
                text: q.text_hash
            },
        ]
    );
    let hosts: Vec<_> = s.iter_hosts().map(Result::unwrap).collect();
    assert_eq!(hosts, vec![("a.test".to_string(), hs.clone())]);
    assert_eq!(hs.duplicates, 1);
    assert!(s.iter_queue().next().is_none());
    assert_eq!(s.pages_recorded().unwrap(), 2);
}

pub(crate) fn complete_many_is_one_group(s: &dyn Store) {
    let (u, v, w) = (
        qurl("a.test", "x", 1.0, 1),
        qurl("a.test", "y", 1.0, 2),
        qurl("b.test", "z", 1.0, 3),
    );
    s.enqueue(&[u.clone(), v.clone(), w.clone()]).unwrap();
    // Two pages with the same body and text in one group: the first owns the hashes.
    let p = page(s, &u, Decision::New);
    let mut q = page(s, &v, Decision::ExactDuplicate);
    q.dup_of = Some(p.id);
    q.content_hash = p.content_hash;
    let r = page(s, &w, Decision::New);
    let (mut ha, mut hb) = (HostStats::default(), HostStats::default());
    ha.record(&p);
    let ha1 = ha.clone();
    ha.record(&q);
    hb.record(&r);
    let group = [
        Completion {
            url: &u,
            key: u.key(),
            page: &p,
            body: None,
            host: &ha1,
        },
        Completion {
            url: &v,
            key: v.key(),
            page: &q,
            body: None,
            host: &ha,
        },
        Completion {
            url: &w,
            key: w.key(),
            page: &r,
            body: None,
            host: &hb,
        },
    ];
    s.complete_many(&group).unwrap();
    assert_eq!(owners(s), (Some(p.id), Some(p.id)));
    assert_eq!(s.host_stats("a.test").unwrap(), Some(ha), "the last page's stats");
    assert_eq!(s.host_stats("b.test").unwrap(), Some(hb));
    assert_eq!(s.pages_recorded().unwrap(), 3);
    assert!(s.iter_queue().next().is_none());
    for (x, id) in [(&u, p.id), (&v, q.id), (&w, r.id)] {
        assert_eq!(s.url_state(&x.canonical).unwrap(), Some(UrlState::Done(id)));
    }
    // A group naming a recorded URL is refused whole.
    let x = qurl("c.test", "x", 1.0, 4);
    s.enqueue(std::slice::from_ref(&x)).unwrap();
    let px = page(s, &x, Decision::New);
    let again = page(s, &u, Decision::New);
    let hs = HostStats::default();
    let bad = [
        Completion {
            url: &x,
            key: x.key(),
            page: &px,
            body: None,
            host: &hs,
        },
        Completion {
            url: &u,
            key: u.key(),
            page: &again,
            body: None,
            host: &hs,
        },
    ];
    assert!(matches!(s.complete_many(&bad), Err(StoreError::AlreadyDone { .. })));
    assert_eq!(s.url_state(&x.canonical).unwrap(), Some(UrlState::Queued(x.key())));
    assert_eq!(s.pages_recorded().unwrap(), 3);
}

pub(crate) fn reprioritize_moves_entry(s: &dyn Store) {
    let a = qurl("a.test", "a", 1.0, 1);
    let mut b = qurl("a.test", "b", 0.5, 2);
    s.enqueue(&[a, b.clone()]).unwrap();
    s.claim(&b).unwrap();
    let old = b.key();
    b.priority = 3.0;
    s.reprioritize(old, &b).unwrap();
    let order: Vec<_> = s
        .scan_queue("a.test", 10)
        .unwrap()
        .into_iter()
        .map(|u| u.canonical)
        .collect();
    assert_eq!(order, ["http://a.test/b", "http://a.test/a"]);
    assert_eq!(s.url_state(&b.canonical).unwrap(), Some(UrlState::Queued(b.key())));
    assert_eq!(s.queued("a.test", old).unwrap(), None);
    // New and moved entries in one batch.
    let c = qurl("a.test", "c", 2.0, 3);
    let old = b.key();
    b.priority = -1.0;
    s.update_queue(std::slice::from_ref(&c), &[(old, b.clone())]).unwrap();
    let order: Vec<_> = s
        .scan_queue("a.test", 10)
        .unwrap()
        .into_iter()
        .map(|u| u.canonical)
        .collect();
    assert_eq!(order, ["http://a.test/c", "http://a.test/a", "http://a.test/b"]);
}

pub(crate) fn aliases_and_meta(s: &dyn Store) {
    let a = qurl("a.test", "a", 1.0, 1);
    s.enqueue(std::slice::from_ref(&a)).unwrap();
    assert!(s.record_alias("http://a.test/a/", &a.canonical).unwrap());
    assert!(!s.record_alias("http://a.test/a/", &a.canonical).unwrap());
    assert!(!s.record_alias(&a.canonical, "http://elsewhere/").unwrap());
    assert_eq!(
        s.url_state("http://a.test/a/").unwrap(),
        Some(UrlState::AliasOf(a.canonical.clone()))
    );
    assert_eq!(s.iter_seen().count(), 2);
    assert_eq!(s.meta("seeds").unwrap(), None);
    s.set_meta("seeds", b"http://a.test/").unwrap();
    assert_eq!(s.meta("seeds").unwrap().as_deref(), Some(&b"http://a.test/"[..]));
    s.flush().unwrap();
}

pub(crate) fn page_ids_increase(s: &dyn Store) {
    let a = s.allocate_page_id();
    let b = s.allocate_page_id();
    assert!(a >= 1 && b > a);
}
