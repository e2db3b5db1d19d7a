//! Tests of confirming near-duplicate candidates (`confirm.rs`).

use super::*;
use crate::sketch::ContentSketch;

/// A content sketch of `n` words from `base` on, with `shared` of them
/// taken from base 0 (so sketches overlap as much as their words do).
fn sketch(base: u64, n: u64, shared: u64) -> Sketch {
    let words: Vec<u64> = (0..n).map(|i| if i < shared { i } else { base + i }).collect();
    Sketch::Content(ContentSketch::from_words(&words))
}

/// Page `id` of a family: 2 000 words every page of it shares, then `own`
/// words of its own.
fn family_page(id: u64, own: u64) -> Sketch {
    let words: Vec<u64> = (0..2000u64).chain((0..own).map(|i| 1_000_000 * (id + 1) + i)).collect();
    Sketch::Content(ContentSketch::from_words(&words))
}

/// Pages sharing a long section (an API reference's provided methods)
/// fill the buckets of its smallest hashes, so a later page of the kind
/// shares no band key with them; the full buckets of its smallest
/// hashes still give it candidates.
#[test]
fn pages_sharing_a_long_section_are_found_through_full_buckets() {
    let mut ix = SketchIndex::new();
    // 2 000 shared words, then 3 words of each page's own.
    let page = |id: u64| family_page(id, 3);
    for id in 1..=600u64 {
        ix.insert(id, page(id), id).unwrap();
    }
    let q = page(1000);
    assert!(q.resemblance(&page(1)) >= 0.9);
    // Each of the first band-scan keys is full, or no page is filed
    // under it (the query's own words): no open bucket gives a candidate.
    let Sketch::Content(c) = &q else { unreachable!() };
    assert!(c.key_candidates(&|_| false, BAND_SCAN).iter().all(|&k| {
        let n = ix.bucket_len(k).unwrap();
        n == 0 || n >= BUCKET_MAX
    }));
    let (m, r) = ix
        .confirm(&q, 0, &[], 0.9)
        .unwrap()
        .expect("a copy among the full buckets");
    assert!(m.page <= 600 && r >= 0.9);
}

/// Pages around a long shared section, each with a part of its own:
/// the section fills the buckets of the smallest hashes, and a page is
/// filed under the smallest hashes further down its sketch whose
/// buckets are not full, often those of its own part, which only its
/// copies share.
#[test]
fn a_copy_of_one_page_of_a_family_finds_that_page() {
    let mut ix = SketchIndex::new();
    // 2 000 shared words, then 150 of the page's own.
    let page = |id: u64| family_page(id, 150);
    for id in 1..=300u64 {
        ix.insert(id, page(id), id).unwrap();
    }
    let full = |id: u64, n: usize| {
        let Sketch::Content(c) = page(id) else { unreachable!() };
        c.key_candidates(&|_| false, n)
            .iter()
            .all(|&k| ix.bucket_len(k).unwrap() >= BUCKET_MAX)
    };
    let found = (1..=300u64)
        .filter(|&id| {
            ix.confirm(&page(id), 0, &[], 0.99)
                .unwrap()
                .is_some_and(|(m, r)| m.page == id && r == 1.0)
        })
        .count();
    // The section fills the 16 smallest hashes' buckets of many pages
    // and never all of the 64 scanned.
    assert!((1..=300u64).filter(|&id| full(id, 16)).count() > 100);
    assert!((1..=300u64).all(|id| !full(id, BAND_SCAN)));
    // 222 of the 300 copies find their page (a scan of the 16 smallest
    // hashes: 183).
    assert!(found >= 220, "{found}");
}

/// A short page needs `short` resemblance, a long one `long`.
#[test]
fn short_pages_need_the_short_page_threshold() {
    let text = |n: u64, changed: u64| -> Sketch {
        let words: Vec<u64> = (0..n).map(|i| if i == changed { 99_999 } else { i }).collect();
        Sketch::Content(ContentSketch::from_words(&words))
    };
    let t = Thresholds {
        long: 0.86,
        short: 0.92,
        short_below: 50,
    };
    // 44 words (40 shingles), the second to last changed: 38 of 42
    // shingles shared; 104 words, one changed: 95 of 105.
    let (short_a, short_b) = (text(44, 42), text(44, 1000));
    let (long_a, long_b) = (text(104, 50), text(104, 1000));
    for (x, y) in [(&short_a, &short_b), (&long_a, &long_b)] {
        let r = x.resemblance(y);
        assert!((0.86..0.92).contains(&r), "{r}");
    }
    assert_eq!(t.between(&long_a, &long_b), 0.86);
    assert_eq!(t.between(&short_a, &short_b), 0.92);
    assert_eq!(t.between(&short_a, &long_b), 0.92);
    assert_eq!(Thresholds::uniform(0.7).between(&short_a, &short_b), 0.7);
    let mut ix = SketchIndex::new();
    ix.insert(1, short_b, 0).unwrap();
    ix.insert(2, long_b, 0).unwrap();
    let near = [NearMatch { page: 1, distance: 0 }, NearMatch { page: 2, distance: 0 }];
    let page = |got: Option<(NearMatch, f64)>| got.map(|(m, _)| m.page);
    assert_eq!(page(ix.confirm(&long_a, 0, &near, t).unwrap()), Some(2));
    assert_eq!(page(ix.confirm(&short_a, 0, &near, t).unwrap()), None);
    assert_eq!(page(ix.confirm(&short_a, 0, &near, 0.86).unwrap()), Some(1));
}

#[test]
fn a_spilled_index_confirms_exactly_as_one_in_memory() {
    spilled_index_confirms_exactly_as_one_in_memory(BAND_MEM_MAX);
}

/// The same with all but 8 band keys on disk.
#[test]
fn an_index_with_its_band_keys_on_disk_confirms_exactly_as_one_in_memory() {
    spilled_index_confirms_exactly_as_one_in_memory(8);
}

/// The same with a cache of 3 decoded sketches, so that most reads
/// evict one.
#[test]
fn an_index_with_a_small_cache_of_sketches_confirms_exactly_as_one_in_memory() {
    spilled_index_confirms_exactly_as_one_in_memory_with(BAND_MEM_MAX, 3);
}

fn spilled_index_confirms_exactly_as_one_in_memory(band_mem_max: usize) {
    spilled_index_confirms_exactly_as_one_in_memory_with(band_mem_max, super::super::cache::SKETCH_CACHE);
}

fn spilled_index_confirms_exactly_as_one_in_memory_with(band_mem_max: usize, cached: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sketches.bin");
    let mut held = SketchIndex::new();
    let mut spilled = SketchIndex::spilling_with(&path, band_mem_max).unwrap();
    spilled.cache = parking_lot::Mutex::new(SketchCache::with_capacity(cached));
    // Pages 1..=60: families of near copies (same base words, a few
    // differ), so band keys are shared and buckets fill.
    for id in 1..=60u64 {
        let sk = sketch(1000 * (id % 7 + 1), 300, 200 + (id % 5) * 20);
        held.insert(id, sk.clone(), id * 31).unwrap();
        spilled.insert(id, sk, id * 31).unwrap();
    }
    // A re-fingerprinted page: its sketch and fingerprint replaced.
    let again = sketch(5000, 300, 250);
    held.update(4, again.clone(), 7).unwrap();
    spilled.update(4, again, 7).unwrap();
    assert_eq!(held.len(), spilled.len());
    let mut confirmed = 0;
    for q in 0..40u64 {
        let sk = sketch(1000 * (q % 7 + 1), 300, 180 + (q % 6) * 20);
        // Every other query has no simhash candidate: band keys alone.
        let near: Vec<NearMatch> = (1..=3)
            .filter(|_| q % 2 == 0)
            .map(|p| NearMatch {
                page: q + p,
                distance: (p % 4) as u32,
            })
            .collect();
        for threshold in [0.3, 0.6, 0.9] {
            let a = held.confirm(&sk, q, &near, threshold).unwrap();
            let b = spilled.confirm(&sk, q, &near, threshold).unwrap();
            assert_eq!(a, b, "query {q} at {threshold}");
            confirmed += usize::from(a.is_some());
        }
    }
    assert!(confirmed > 10, "only {confirmed} confirmations: the test checks little");
    assert!(std::fs::metadata(&path).unwrap().len() > 60 * 4 * 100);
    // The spill file holds one run's sketches: it goes with the index.
    drop(spilled);
    assert!(!path.exists());
}

/// A fingerprint set beside a page's sketch is the one a ruling
/// measures distance from: in memory, in the spill file's cache, and
/// read back from the file once the cache has let it go. A page
/// without a sketch takes nothing.
#[test]
fn a_fingerprint_set_beside_a_sketch_is_the_one_a_ruling_measures() {
    let dir = tempfile::tempdir().unwrap();
    let (page, other) = (sketch(1000, 300, 250), sketch(7000, 300, 0));
    let near = |page| [NearMatch { page, distance: 0 }];
    let distance = |ix: &SketchIndex| ix.confirm(&page, 0, &near(1), 0.9).unwrap().map(|(m, _)| m.distance);
    let mut held = SketchIndex::new();
    let mut cached = SketchIndex::spilling(&dir.path().join("cached.bin")).unwrap();
    let mut evicted = SketchIndex::spilling(&dir.path().join("evicted.bin")).unwrap();
    evicted.cache = parking_lot::Mutex::new(SketchCache::with_capacity(1));
    for ix in [&mut held, &mut cached, &mut evicted] {
        ix.insert(1, page.clone(), 0).unwrap();
        ix.insert(2, other.clone(), 0).unwrap();
        assert_eq!(distance(ix), Some(0));
        ix.set_fingerprint(1, 0b1011).unwrap();
        ix.set_fingerprint(3, 1).unwrap();
    }
    // Reading page 2 takes the only slot of `evicted`'s cache.
    assert!(evicted.confirm(&other, 0, &near(2), 0.9).unwrap().is_some());
    for ix in [&held, &cached, &evicted] {
        assert_eq!(distance(ix), Some(3));
        assert_eq!(ix.len(), 2);
    }
}

/// A page sketched before its site's chrome was learned is confirmed
/// against a copy sketched after, once the index consults the learner;
/// an index without it compares the sketches as taken.
#[test]
fn tagged_sketches_are_compared_outside_the_current_templates() {
    let learner = Arc::new(TemplateLearner::new(
        &crate::Settings::from_layers(&[], &[]).expect("defaults").features,
    ));
    let (chrome, content, other) = (
        (0..40u64).map(|i| 9000 + i).collect::<Vec<_>>(),
        (0..80u64).collect::<Vec<_>>(),
        (0..80u64).map(|i| 5000 + i).collect::<Vec<_>>(),
    );
    let tagged = |parts: &[(u64, &[u64])], key: &str| {
        let mut words = Vec::new();
        let mut runs = Vec::new();
        for (block, w) in parts {
            words.extend_from_slice(w);
            runs.push((words.len() as u32, *block));
        }
        Sketch::Content(ContentSketch::from_blocks(&words, &runs, key))
    };
    let early = tagged(&[(77, &chrome), (1, &content)], "h");
    let stranger = tagged(&[(77, &chrome), (2, &other)], "h");
    let late = tagged(&[(1, &content)], "h");
    let mut with = SketchIndex::new().with_templates(Some(learner.clone()));
    let mut without = SketchIndex::new();
    for ix in [&mut with, &mut without] {
        ix.insert(1, early.clone(), 0).unwrap();
        ix.insert(2, stranger.clone(), 0).unwrap();
    }
    let near = [1, 2].map(|page| NearMatch { page, distance: 0 });
    // No template yet: the chrome counts on both sides.
    assert_eq!(with.confirm(&late, 0, &near, 0.9).unwrap(), None);
    // The chrome (block 77) is on every page of the site now.
    for i in 0..40u64 {
        learner.observe_hashes("h", &[77, 100 + i]);
    }
    assert!(learner.template("h").is_some_and(|t| t.blocks.contains(&77)));
    let (m, r) = with.confirm(&late, 0, &near, 0.9).unwrap().expect("confirmed");
    assert_eq!((m.page, r), (1, 1.0));
    assert_eq!(without.confirm(&late, 0, &near, 0.9).unwrap(), None);
    // Round trip through the spill encoding keeps the tags.
    assert_eq!(Sketch::from_bytes(&early.to_bytes()), Some(early));
}

/// Pages that share a long common text (a reference section on every
/// page) fill the buckets of its smallest shingles; a page filed later
/// goes under the next keys, and its copy finds it there.
#[test]
fn band_keys_pass_over_full_buckets() {
    let common: Vec<u64> = (0..300).map(|i| 70_000 + i).collect();
    let page = |id: u64| -> Sketch {
        let mut words = common.clone();
        words.extend((0..200).map(|i| id * 1000 + i));
        Sketch::Content(ContentSketch::from_words(&words))
    };
    let mut ix = SketchIndex::new();
    for id in 1..=60 {
        ix.insert(id, page(id), id).unwrap();
    }
    for id in [45, 60] {
        let (m, r) = ix.confirm(&page(id), 0, &[], 0.9).unwrap().expect("its copy is found");
        assert_eq!((m.page, r), (id, 1.0));
    }
    // The common text's smallest shingle: its bucket holds the first
    // pages only, and the last page is filed elsewhere.
    let c = ContentSketch::from_words(&common);
    let mut first = Vec::new();
    ix.bucket(c.band_keys()[0], &mut first).unwrap();
    assert_eq!(first.len(), BUCKET_MAX);
    assert!(!first.contains(&60));
}

#[test]
fn a_bucket_keeps_its_first_pages_once() {
    // In memory, and with all but 4 entries of each band-key map on disk.
    let dir = tempfile::tempdir().unwrap();
    let spilled = |name: &str| SketchIndex::spilling_with(&dir.path().join(name), 4).unwrap();
    for (mut ix, mut only_big) in [
        (SketchIndex::new(), SketchIndex::new()),
        (spilled("a.bin"), spilled("b.bin")),
    ] {
        let sk = sketch(0, 50, 50);
        // Page ids past 32 bits are filed too.
        let big = u64::from(u32::MAX) + 5;
        for id in (1..=40).chain([big]) {
            ix.insert(id, sk.clone(), 0).unwrap();
        }
        ix.insert(3, sk.clone(), 0).unwrap();
        let Sketch::Content(c) = &sk else { unreachable!() };
        for &key in c.band_keys() {
            let mut pages = Vec::new();
            ix.bucket(key, &mut pages).unwrap();
            assert_eq!(pages, (1..=BUCKET_MAX as u64).collect::<Vec<_>>());
        }
        only_big.insert(big, sk.clone(), 0).unwrap();
        let mut pages = Vec::new();
        only_big.bucket(c.band_keys()[0], &mut pages).unwrap();
        assert_eq!(pages, vec![big]);
    }
}
