//! Unit tests of the crawl's parts.

use super::*;

/// The link set keeps the first of each URL, as a set of copied strings
/// would, through the table's growth.
#[test]
fn link_set_keeps_first_occurrences() {
    let urls: Vec<Url> = (0..300)
        .map(|i| Url::parse(&format!("http://h.test/{}", (i * 7) % 113)).expect("url"))
        .collect();
    let mut set = LinkSet::with_capacity(1);
    let mut links: Vec<(Url, String, f64)> = Vec::new();
    let mut plain = HashSet::new();
    for u in &urls {
        let first = set.first_time(&links, u);
        assert_eq!(first, plain.insert(u.as_str().to_string()), "{u}");
        if first {
            links.push((u.clone(), String::new(), 0.0));
        }
    }
    assert_eq!(links.len(), 113);
}

/// The decider's starting state from one scan of the page records:
/// every `New` fingerprint in the index once (snapshot or not), the
/// exact maps owned by the first page of each hash.
#[test]
fn dedup_state_reads_index_and_exact_maps_in_one_scan() {
    use crate::model::HostStats;
    use crate::store::test_suite::{page, qurl};
    use crate::store::MemStore;
    let settings = Settings::default();
    let store = MemStore::new();
    let urls: Vec<QueuedUrl> = (0..40).map(|i| qurl("a.test", &format!("p{i}"), 0.0, i)).collect();
    store.enqueue(&urls).unwrap();
    let mut fps = Vec::new();
    let record = |range: std::ops::Range<usize>, fps: &mut Vec<(u64, PageId)>| {
        for u in &urls[range] {
            store.claim(u).unwrap();
            // Every third page an exact duplicate (body hash of page 0).
            let dup = u.seq % 3 == 2;
            let mut p = page(&store, u, if dup { Decision::ExactDuplicate } else { Decision::New });
            p.simhash = Some(u.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if dup {
                p.content_hash = Some([0; 32]);
            } else {
                fps.push((p.simhash.unwrap(), p.id));
            }
            store.complete(u, &p, None, &HostStats::default()).unwrap();
        }
    };
    record(0..25, &mut fps);
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("index.snap");
    // No snapshot: everything from the page records.
    let state = DedupState::load(&store, &settings, &snapshot, dir.path(), 1).unwrap();
    let check = |state: &DedupState, fps: &[(u64, PageId)]| {
        assert_eq!(state.index.len(), fps.len());
        let mut out = Vec::new();
        for &(fp, id) in fps {
            out.clear();
            state.index.query(fp, &mut out);
            assert_eq!(out.iter().filter(|m| m.fp == fp && m.id == id).count(), 1, "{fp:x}");
        }
        // Page 0 (seq 0) owns body hash [0; 32]; the text hash [7; 32]
        // is every page's, owned by the first.
        let first = fps[0].1;
        assert_eq!(
            state.exact.lookup(Some(&[0; 32]), Some(&[7; 32])).unwrap(),
            (Some(first), Some(first))
        );
    };
    check(&state, &fps);
    // A snapshot of the first 25 pages, then 15 more pages: the index
    // has each fingerprint once, the later ones from the records.
    save_index(&state.index, &snapshot, store.next_page_id(), 1);
    record(25..40, &mut fps);
    let state = DedupState::load(&store, &settings, &snapshot, dir.path(), 1).unwrap();
    check(&state, &fps);
    // A snapshot of another crawl (another tag, a watermark that fits
    // this store) is not used: the index is rebuilt from the store.
    let foreign = LiveIndex::from_settings(&settings.index, settings.simhash.k);
    foreign.insert(0x0123_4567_89ab_cdef, 1);
    foreign.save_tagged(&snapshot, 1, 99).unwrap();
    let state = DedupState::load(&store, &settings, &snapshot, dir.path(), 1).unwrap();
    check(&state, &fps);
}

#[test]
fn damaged_store_backup_is_put_back_and_an_interrupted_one_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join(CrawlDir::STORE_DIR);
    std::fs::create_dir_all(store.join("blobs")).unwrap();
    std::fs::write(store.join("db"), "as found").unwrap();
    std::fs::write(store.join("blobs/1"), "blob").unwrap();
    let b = StoreBackup::take(&store).unwrap();
    std::fs::write(store.join("db"), "changed by the engine").unwrap();
    b.restore();
    assert_eq!(std::fs::read_to_string(store.join("db")).unwrap(), "as found");
    assert_eq!(std::fs::read_to_string(store.join("blobs/1")).unwrap(), "blob");
    // A resume interrupted after its copy: the next one starts from the copy.
    let _interrupted = StoreBackup::take(&store).unwrap();
    std::fs::write(store.join("db"), "half repaired").unwrap();
    let b = StoreBackup::take(&store).unwrap();
    assert_eq!(std::fs::read_to_string(store.join("db")).unwrap(), "as found");
    b.discard();
    assert!(!dir.path().join("store.before-resume").exists());
}

#[test]
fn rfc3339_formats_utc() {
    let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
}

#[test]
fn seeds_file_skips_comments() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("seeds.txt");
    std::fs::write(&p, "# c\n\nhttp://a.test/\n  http://b.test/x \n").unwrap();
    assert_eq!(read_seeds(&p).unwrap(), vec!["http://a.test/", "http://b.test/x"]);
}

/// However many hosts have a URL ready, at most
/// [`UNANALYZED_PER_CONNECTION`] × `crawl.concurrency` pages are fetched or
/// wait for their analysis at once: with fetches that answer at once and
/// 200 hosts, fetching waits for the analysis threads instead of holding
/// every host's page in memory (196 pages at once without the bound).
#[test]
fn fetching_waits_for_analysis_that_falls_behind() {
    use crate::fetch::testing::StaticFetcher;
    let hosts = 200;
    let fetcher = StaticFetcher::new();
    let links: String = (0..hosts)
        .map(|i| format!("<a href=\"http://h{i}.test/\">h{i}</a> "))
        .collect();
    fetcher.add_page(
        "http://seed.test/",
        200,
        &format!("<html><body><p>{links}</p></body></html>"),
    );
    for i in 0..hosts {
        // Distinct words, so that no page is a copy of another and each
        // takes its analysis time.
        let text: String = (0..3000)
            .map(|w| format!("w{}x{} ", (w * 7919 + i * 104_729) % 100_003, w % 17))
            .collect();
        fetcher.add_page(
            &format!("http://h{i}.test/"),
            200,
            &format!("<html><body><p>{text}</p></body></html>"),
        );
    }
    let settings = Settings::load(
        None,
        &[
            "crawl.concurrency=2".into(),
            "crawl.scope=\"any\"".into(),
            "politeness.min_delay_ms=0".into(),
            "politeness.delay_factor=0.0".into(),
            "politeness.max_in_flight_per_ip=0".into(),
            "fetch.resolve=[\"*.test=127.0.0.1\"]".into(),
            "output.reports=false".into(),
        ],
    )
    .expect("settings");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = CrawlOptions::new(dir.path(), vec!["http://seed.test/".into()]);
    opts.fetcher = Some(Arc::new(fetcher));
    let summary = run_blocking(settings, opts, std::future::pending()).expect("crawl");
    assert_eq!(
        summary.count(Decision::New),
        hosts as u64 + 1,
        "{:?}",
        summary.by_decision
    );
    assert!(
        (1..=2 * UNANALYZED_PER_CONNECTION).contains(&summary.peak_unanalyzed),
        "{} pages waited for analysis at once",
        summary.peak_unanalyzed
    );
}
