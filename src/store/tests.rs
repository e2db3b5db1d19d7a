//! Tests of the store: the shared suite over [`MemStore`] and [`DiskStore`],
//! format versions, corruption, combining and the seen-set cache.

use super::keys::{id_key, queue_key, B, P};
use super::*;
use crate::model::priority_rank;
use crate::model::Decision;

/// A sled store in a temporary directory removed on drop.
struct TempSled(DiskStore, #[allow(dead_code)] tempfile::TempDir);
impl std::ops::Deref for TempSled {
    type Target = DiskStore;
    fn deref(&self) -> &DiskStore {
        &self.0
    }
}
fn temp_sled() -> TempSled {
    let dir = tempfile::tempdir().unwrap();
    TempSled(DiskStore::open(&dir.path().join("store")).unwrap(), dir)
}

fn temp_sled_cached() -> TempSled {
    let dir = tempfile::tempdir().unwrap();
    TempSled(
        DiskStore::open_cached(&dir.path().join("store"), Engine::default(), 1 << 10, 64 << 20).unwrap(),
        dir,
    )
}

/// A fjall store in a temporary directory (with a seen-set cache).
fn temp_fjall() -> TempSled {
    let dir = tempfile::tempdir().unwrap();
    TempSled(
        DiskStore::open_cached(&dir.path().join("store"), Engine::Fjall, 1 << 10, 16 << 20).unwrap(),
        dir,
    )
}

store_suite!(mem, Box::new(MemStore::new()));
store_suite!(fjall_store, temp_fjall());
store_suite!(fjall_uncached, {
    let dir = tempfile::tempdir().unwrap();
    TempSled(
        DiskStore::open_with(&dir.path().join("store"), Engine::Fjall).unwrap(),
        dir,
    )
});
store_suite!(fjall_combining, {
    let t = temp_fjall();
    TempSled(t.0.combining(), t.1)
});
store_suite!(mem_uncached, Box::new(MemStore::over(MemBackend::default()).unwrap()));
store_suite!(sled_store, temp_sled());
store_suite!(sled_cached, temp_sled_cached());
store_suite!(mem_combining, Box::new(MemStore::new().combining()));
store_suite!(
    mem_uncached_combining,
    Box::new(MemStore::over(MemBackend::default()).unwrap().combining())
);
store_suite!(sled_combining, {
    let t = temp_sled_cached();
    TempSled(t.0.combining(), t.1)
});

/// A Redis store in a crawl namespace of its own on the local cluster
/// (`scripts/redis-cluster.sh`), or `None` with a printed message when no
/// cluster can be started (a failure instead with `SIMCRAWL_REQUIRE_REDIS`).
fn redis_store() -> Option<Box<RedisStore>> {
    let nodes = redis_local::cluster_for_test("the redis store suite")?;
    let store = RedisStore::open(&nodes, &redis_local::unique_crawl_name("suite")).unwrap();
    assert!(store.fresh());
    Some(Box::new(store))
}

store_suite!(redis_store, optional redis_store());

/// A backend that counts the batches applied to it.
#[derive(Default)]
struct Counting(MemBackend, std::sync::atomic::AtomicUsize);
impl Counting {
    fn batches(&self) -> usize {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
}
impl Backend for Counting {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }
    fn apply(&self, batch: Vec<BatchOp>) -> Result<(), StoreError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.apply(batch)
    }
    fn scan_from(&self, prefix: &[u8], from: &[u8]) -> RawIter<'_> {
        self.0.scan_from(prefix, from)
    }
    fn last(&self, prefix: &[u8]) -> Result<Option<Entry>, StoreError> {
        self.0.last(prefix)
    }
    fn is_empty(&self) -> Result<bool, StoreError> {
        self.0.is_empty()
    }
    fn meta_get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.meta_get(name)
    }
    fn meta_set(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.0.meta_set(name, value)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.0.flush()
    }
}

/// A combining store holds queue updates until the next page commit,
/// answers reads from them meanwhile, and writes them with the commit in
/// one batch (without a seen-set cache, so `url_state` reads them too).
#[test]
fn combining_holds_queue_updates_until_the_commit() {
    let s = KvStore::over(Counting::default()).unwrap().combining();
    let before = s.backend().batches();
    let (a, b, c) = (
        test_suite::qurl("a.test", "a", 1.0, 1),
        test_suite::qurl("a.test", "b", 2.0, 2),
        test_suite::qurl("a.test", "c", 3.0, 3),
    );
    s.enqueue(&[a.clone(), b.clone()]).unwrap();
    let mut c2 = c.clone();
    s.enqueue(std::slice::from_ref(&c)).unwrap();
    c2.priority = -1.0;
    s.reprioritize(c.key(), &c2).unwrap();
    assert!(s.record_alias("http://a.test/alias", &a.canonical).unwrap());
    assert!(!s.record_alias("http://a.test/alias", &a.canonical).unwrap());
    assert_eq!(s.backend().batches(), before, "nothing written before the commit");
    assert_eq!(s.backend().get(&queue_key("a.test", a.key())).unwrap(), None);
    // Reads see the held writes, removals included.
    assert_eq!(s.queued("a.test", b.key()).unwrap(), Some(b.clone()));
    assert_eq!(s.queued("a.test", c.key()).unwrap(), None, "moved away");
    assert_eq!(s.queued("a.test", c2.key()).unwrap(), Some(c2.clone()));
    assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Queued(a.key())));
    assert_eq!(
        s.url_state("http://a.test/alias").unwrap(),
        Some(UrlState::AliasOf(a.canonical.clone()))
    );
    let p = test_suite::page(&s, &a, Decision::New);
    s.complete(&a, &p, None, &HostStats::default()).unwrap();
    assert_eq!(
        s.backend().batches(),
        before + 1,
        "one batch for the updates and the page"
    );
    assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Done(p.id)));
    let queue: Vec<String> = s
        .scan_queue("a.test", 10)
        .unwrap()
        .into_iter()
        .map(|u| u.canonical)
        .collect();
    assert_eq!(queue, [b.canonical.clone(), c.canonical.clone()]);
    assert_eq!(
        s.backend().batches(),
        before + 1,
        "nothing held, nothing to write before the scan"
    );
    // A scan writes what is held first.
    s.enqueue(&[test_suite::qurl("a.test", "d", 0.0, 4)]).unwrap();
    assert_eq!(s.scan_queue("a.test", 10).unwrap().len(), 3);
    assert_eq!(s.backend().batches(), before + 2);
}

/// Dropping a combining store writes what it holds.
#[test]
fn combining_store_writes_held_updates_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let a = test_suite::qurl("a.test", "a", 1.0, 1);
    {
        let s = DiskStore::open_cached(dir.path(), Engine::default(), 16, 64 << 20)
            .unwrap()
            .combining();
        s.enqueue(std::slice::from_ref(&a)).unwrap();
    }
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.queued("a.test", a.key()).unwrap(), Some(a.clone()));
    assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Queued(a.key())));
}

/// A reopened store's seen-set cache is loaded from the store: it answers
/// like the backend for every kind of state, and "not seen" for others.
#[test]
fn seen_cache_is_loaded_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        test_suite::qurl("a.test", "a", 1.0, 1),
        test_suite::qurl("a.test", "b", 2.0, 2),
    );
    let id;
    {
        let s = DiskStore::open_cached(dir.path(), Engine::default(), 16, 64 << 20).unwrap();
        s.enqueue(&[a.clone(), b.clone()]).unwrap();
        let p = test_suite::page(&s, &a, Decision::New);
        id = p.id;
        s.complete(&a, &p, None, &HostStats::default()).unwrap();
        assert!(s.record_alias("http://a.test/alias", &b.canonical).unwrap());
        s.flush().unwrap();
    }
    for max in [0, 1, 16] {
        let s = DiskStore::open_cached(dir.path(), Engine::default(), max, 64 << 20).unwrap();
        assert_eq!(s.url_state(&a.canonical).unwrap(), Some(UrlState::Done(id)), "{max}");
        assert_eq!(
            s.url_state(&b.canonical).unwrap(),
            Some(UrlState::Queued(b.key())),
            "{max}"
        );
        assert_eq!(
            s.url_state("http://a.test/alias").unwrap(),
            Some(UrlState::AliasOf(b.canonical.clone())),
            "{max}"
        );
        assert_eq!(s.url_state("http://a.test/never").unwrap(), None, "{max}");
    }
}

#[test]
fn priority_rank_orders_descending() {
    let ps = [f64::INFINITY, 1e9, 2.5, 0.1, 0.0, -0.0, -0.1, -7.0, f64::NEG_INFINITY];
    for w in ps.windows(2) {
        assert!(priority_rank(w[0]) <= priority_rank(w[1]), "{w:?}");
    }
    assert!(priority_rank(2.0) < priority_rank(1.0));
    assert_eq!(priority_rank(f64::NAN), u64::MAX);
}

#[test]
fn sled_reopen_keeps_state_and_next_id() {
    let dir = tempfile::tempdir().unwrap();
    let u = test_suite::qurl("a.test", "x", 1.0, 1);
    let id;
    {
        let s = DiskStore::open(dir.path()).unwrap();
        s.enqueue(std::slice::from_ref(&u)).unwrap();
        s.claim(&u).unwrap();
        let p = test_suite::page(&s, &u, Decision::New);
        id = p.id;
        s.complete(&u, &p, None, &HostStats::default()).unwrap();
        s.flush().unwrap();
    }
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(id)));
    assert!(s.allocate_page_id() > id);
}

#[test]
fn version_2_to_4_stores_are_read_and_relabelled() {
    for version in [2u32, 3, 4] {
        let dir = tempfile::tempdir().unwrap();
        let u = test_suite::qurl("a.test", "x", 1.0, 1);
        let (id, fp);
        {
            let s = DiskStore::open(dir.path()).unwrap();
            s.enqueue(std::slice::from_ref(&u)).unwrap();
            let p = test_suite::page(&s, &u, Decision::New);
            (id, fp) = (p.id, p.simhash.unwrap());
            s.complete(&u, &p, None, &HostStats::default()).unwrap();
            // What a version-2 build also wrote: a body hash → page map;
            // versions 2 and 3: a page → simhash map (here a stale value,
            // to show it is not what the index is rebuilt from).
            let mut hash_key = vec![b'h'];
            hash_key.extend_from_slice(&[1; 32]);
            let mut fp_key = vec![b'f'];
            fp_key.extend_from_slice(&id.to_be_bytes());
            // Versions before 5: the body itself under `b`.
            let mut old = vec![
                (fp_key, Some(0x0bad_u64.to_be_bytes().to_vec())),
                (id_key(B, id), Some(b"<html><p>an old body</p>".to_vec())),
            ];
            if version == 2 {
                old.push((hash_key, Some(id.to_be_bytes().to_vec())));
            }
            s.backend().apply(old).unwrap();
            s.backend().meta_set("format_version", &version.to_be_bytes()).unwrap();
            s.flush().unwrap();
        }
        let s = DiskStore::open(dir.path()).unwrap();
        assert_eq!(
            s.meta("format_version").unwrap().as_deref(),
            Some(&FORMAT_VERSION.to_be_bytes()[..])
        );
        let exact = crate::dedup::ExactIndex::load(&s).unwrap();
        assert_eq!(
            exact.lookup(Some(&[1; 32]), Some(&[7; 32])).unwrap(),
            (Some(id), Some(id))
        );
        assert_eq!(s.iter_pages().count(), 1);
        let fps: Vec<_> = s.iter_fingerprints().map(Result::unwrap).collect();
        assert_eq!(fps, vec![(id, fp)]);
        // The old body is gone, not misread as a reference.
        assert_eq!(s.body_ref(id).unwrap(), None, "version {version}");
        assert!(s.backend().get(&id_key(B, id)).unwrap().is_none());
    }
}

#[test]
fn older_queue_entries_read_with_no_sitemap_component() {
    let dir = tempfile::tempdir().unwrap();
    let mut u = test_suite::qurl("a.test", "x", 1.0, 1);
    u.components.sitemap = 0.75;
    let mut r = test_suite::qurl("a.test", "r", 1.0, 2);
    r.revisit = Some(9);
    {
        let s = DiskStore::open(dir.path()).unwrap();
        s.enqueue(&[u.clone(), r.clone()]).unwrap();
        // What a version-4 build wrote: the entry without the trailer
        // (9 bytes: component and an empty option, then 17 bytes of later
        // components: a count and two values); what a version-5 build wrote
        // for a revisit: the page id alone.
        let mut v4 = records::enc_queued(&u);
        v4.truncate(v4.len() - 9 - 17);
        let mut v5 = records::enc_queued(&r);
        v5.truncate(v5.len() - 17 - 17);
        v5.extend_from_slice(&9u64.to_be_bytes());
        s.backend()
            .apply(vec![
                (queue_key(&u.host, u.key()), Some(v4)),
                (queue_key(&r.host, r.key()), Some(v5)),
            ])
            .unwrap();
        s.backend().meta_set("format_version", &5u32.to_be_bytes()).unwrap();
        s.flush().unwrap();
    }
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(
        s.meta("format_version").unwrap().as_deref(),
        Some(&FORMAT_VERSION.to_be_bytes()[..])
    );
    let q = s.queued(&u.host, u.key()).unwrap().unwrap();
    assert_eq!((q.components.sitemap, q.revisit, q.tunnel), (0.0, None, u.tunnel));
    assert_eq!(q.url, u.url);
    let q = s.queued(&r.host, r.key()).unwrap().unwrap();
    assert_eq!((q.components.sitemap, q.revisit), (0.0, Some(9)));
    // Version-6 entries keep both, and the focus components after them.
    r.components.sitemap = 1.25;
    r.components.host_relevance = 0.5;
    r.components.url_relevance = 0.75;
    s.enqueue(&[u.clone(), r.clone()]).unwrap();
    assert_eq!(s.queued(&u.host, u.key()).unwrap().unwrap(), u);
    assert_eq!(s.queued(&r.host, r.key()).unwrap().unwrap(), r);
    // A version-6 entry without the later components reads them as 0.
    let mut short = records::enc_queued(&r);
    short.truncate(short.len() - 17);
    let q = super::keys::decode(b"q", &short, records::dec_queued).unwrap();
    assert_eq!(
        (
            q.components.sitemap,
            q.revisit,
            q.components.host_relevance,
            q.components.url_relevance
        ),
        (1.25, r.revisit, 0.0, 0.0)
    );
}

#[test]
fn format_4_records_read_without_the_recrawl_fields() {
    use super::codec::Dec;
    use super::records::{dec_page, dec_queued, enc_page, enc_queued};
    use crate::model::{Change, Revisit};
    let revisit = Revisit {
        etag: Some("\"v1\"".into()),
        last_modified: Some("Mon, 01 Jan 2024 00:00:00 GMT".into()),
        interval_secs: 1200,
        fetches: 3,
        changes: 1,
        change: Some(Change::NearUnchanged),
    };
    let page = StoredPage {
        id: 9,
        canonical: "http://a.test/".into(),
        simhash: Some(42),
        revisit: revisit.clone(),
        ..StoredPage::default()
    };
    let full = enc_page(&page);
    assert_eq!(dec_page(&mut Dec::new(&full)).unwrap(), page);
    // A format-4 record is the same bytes without the appended state: one
    // fetch, no validators.
    // (Tag and length byte of each string, interval 2 bytes, counts and class 1 each.)
    let (etag, date) = (revisit.etag.as_ref().unwrap(), revisit.last_modified.as_ref().unwrap());
    let tail = (2 + etag.len()) + (2 + date.len()) + 2 + 1 + 1 + 1;
    let old = dec_page(&mut Dec::new(&full[..full.len() - tail])).unwrap();
    assert_eq!(
        old.revisit,
        Revisit {
            fetches: 1,
            ..Revisit::default()
        }
    );
    assert_eq!(
        StoredPage {
            revisit: revisit.clone(),
            ..old
        },
        page
    );
    // Queue entries: the revisited page id is appended only for a revisit.
    let mut q = crate::store::test_suite::qurl("a.test", "/x", 1.0, 3);
    let plain = enc_queued(&q);
    assert_eq!(dec_queued(&mut Dec::new(&plain)).unwrap(), q);
    q.revisit = Some(9);
    let with = enc_queued(&q);
    assert_eq!(with.len(), plain.len() + 8);
    assert_eq!(dec_queued(&mut Dec::new(&with)).unwrap(), q);
}

#[test]
fn version_mismatch_is_a_clear_error() {
    // 1: a store of the build before queued URLs carried `tunnel`.
    for old in [1u32, FORMAT_VERSION + 1] {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = DiskStore::open(dir.path()).unwrap();
            s.backend().meta_set("format_version", &old.to_be_bytes()).unwrap();
            s.flush().unwrap();
        }
        let e = DiskStore::open(dir.path()).err().unwrap();
        assert!(
            matches!(e, StoreError::Version { expected: FORMAT_VERSION, got } if got == old),
            "{e}"
        );
        assert!(
            e.to_string().contains(&format!("version {old} is not supported")),
            "{e}"
        );
        assert!(e.to_string().contains("start a new crawl directory"), "{e}");
    }
}

#[test]
fn corrupt_value_names_the_key() {
    // Uncached: the damage goes behind the store's back.
    let mut s = MemStore::over(MemBackend::default()).unwrap();
    s.backend()
        .apply(vec![(b"shttp://a.test/x".to_vec(), Some(vec![0, 1, 2]))])
        .unwrap();
    let e = s.url_state("http://a.test/x").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }));
    assert!(e.to_string().contains("shttp://a.test/x"), "{e}");
    s.backend().apply(vec![(id_key(P, 5), Some(vec![9; 3]))]).unwrap();
    assert!(s.page(5).is_err());
    assert!(s.iter_pages().next().unwrap().is_err());
    assert!(KvStore::over(std::mem::take(&mut s.kv)).is_ok());
}

#[test]
fn a_store_reopens_on_the_engine_that_wrote_it() {
    for (made, asked) in [(Engine::Sled, Engine::Fjall), (Engine::Fjall, Engine::Sled)] {
        let dir = tempfile::tempdir().unwrap();
        let q = crate::store::test_suite::qurl("a.test", "/x", 1.0, 0);
        {
            let s = DiskStore::open_with(dir.path(), made).unwrap();
            assert_eq!(s.backend().engine(), made);
            s.enqueue(std::slice::from_ref(&q)).unwrap();
            s.flush().unwrap();
        }
        assert_eq!(Engine::of_dir(dir.path()), Some(made));
        let s = DiskStore::open_cached(dir.path(), asked, 16, 16 << 20).unwrap();
        assert_eq!(s.backend().engine(), made, "{made:?} store opened as {asked:?}");
        assert_eq!(s.url_state(&q.canonical).unwrap(), Some(UrlState::Queued(q.key())));
        assert_eq!(s.scan_queue("a.test", 10).unwrap(), vec![q.clone()]);
    }
    assert_eq!(Engine::of_dir(tempfile::tempdir().unwrap().path()), None);
}

#[test]
fn fjall_batches_keep_the_last_write_of_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let b = DiskBackend::open(dir.path(), Engine::Fjall, None).unwrap();
    b.apply(vec![
        (b"k1".to_vec(), Some(b"a".to_vec())),
        (b"k1".to_vec(), Some(b"b".to_vec())),
        (b"k2".to_vec(), Some(b"x".to_vec())),
        (b"k2".to_vec(), None),
        (b"k3".to_vec(), None),
        (b"k3".to_vec(), Some(b"z".to_vec())),
    ])
    .unwrap();
    assert_eq!(b.get(b"k1").unwrap(), Some(b"b".to_vec()));
    assert_eq!(b.get(b"k2").unwrap(), None);
    assert_eq!(b.get(b"k3").unwrap(), Some(b"z".to_vec()));
    assert_eq!(b.last(b"k").unwrap(), Some((b"k3".to_vec(), b"z".to_vec())));
    let from: Vec<_> = b.scan_from(b"k", b"k2").map(|r| r.unwrap().0).collect();
    assert_eq!(from, vec![b"k3".to_vec()]);
}

#[test]
fn fjall_reopen_without_a_flush_keeps_what_was_committed() {
    let dir = tempfile::tempdir().unwrap();
    let u = test_suite::qurl("a.test", "x", 1.0, 1);
    let id;
    {
        let s = DiskStore::open_with(dir.path(), Engine::Fjall).unwrap().combining();
        s.enqueue(std::slice::from_ref(&u)).unwrap();
        let p = test_suite::page(&s, &u, Decision::New);
        id = p.id;
        s.complete(&u, &p, None, &HostStats::default()).unwrap();
        // Dropped without `flush`: the commit's batch is in the journal.
    }
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.backend().engine(), Engine::Fjall);
    assert_eq!(s.url_state(&u.canonical).unwrap(), Some(UrlState::Done(id)));
    assert_eq!(s.pages_recorded().unwrap(), 1);
    assert!(s.page(id).unwrap().is_some());
    assert!(s.scan_queue("a.test", 10).unwrap().is_empty());
    assert!(s.allocate_page_id() > id);
}

#[test]
fn a_garbled_fjall_journal_keeps_the_batches_before_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<u64> = {
        let s = DiskStore::open_with(dir.path(), Engine::Fjall).unwrap();
        (0..200)
            .map(|i| {
                let u = test_suite::qurl("a.test", &format!("p{i}"), 1.0, i);
                s.enqueue(std::slice::from_ref(&u)).unwrap();
                let p = test_suite::page(&s, &u, Decision::New);
                s.complete(&u, &p, None, &HostStats::default()).unwrap();
                p.id
            })
            .collect()
    };
    let journal = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jnl"))
        .unwrap();
    let mut bytes = std::fs::read(&journal).unwrap();
    // The journal file may be preallocated: damage the middle of what is written.
    let written = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    let mid = written / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(&journal, &bytes).unwrap();
    let s = DiskStore::open(dir.path()).unwrap();
    let kept: Vec<u64> = s.iter_pages().map(|p| p.unwrap().id).collect();
    // A prefix of the batches, the pages recorded before the damage: what a
    // crash leaves (resume queues the rest again).
    assert!(
        !kept.is_empty() && kept.len() < ids.len(),
        "{} of {} kept",
        kept.len(),
        ids.len()
    );
    assert_eq!(kept, ids[..kept.len()]);
    assert_eq!(s.pages_recorded().unwrap(), kept.len() as u64);
}
