//! Tests of content sketches (`content.rs`).

use super::*;
use std::collections::HashSet;

fn words(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64).map(|i| mix64(i ^ (seed << 40))).collect()
}

fn exact(a: &[u64], b: &[u64]) -> f64 {
    let sh = |w: &[u64]| -> HashSet<Vec<u64>> {
        if w.len() < SHINGLE_WORDS {
            return [w.to_vec()].into_iter().collect();
        }
        w.windows(SHINGLE_WORDS).map(<[u64]>::to_vec).collect()
    };
    let (x, y) = (sh(a), sh(b));
    x.intersection(&y).count() as f64 / x.union(&y).count() as f64
}

#[test]
fn short_pages_compare_exactly() {
    let a = words(60, 1);
    let mut b = a.clone();
    b[30] = 7; // one word changed: 5 shingles of 56 differ
    let (sa, sb) = (ContentSketch::from_words(&a), ContentSketch::from_words(&b));
    assert!(sa.is_exact() && sb.is_exact());
    assert_eq!(sa.resemblance(&sb), exact(&a, &b));
    assert_eq!(sa.resemblance(&sa), 1.0);
}

#[test]
fn long_pages_are_estimated_within_a_few_standard_errors() {
    let a = words(3000, 2);
    for changed in [30usize, 150, 300, 900] {
        let mut b = a.clone();
        for i in 0..changed {
            b[i * (3000 / changed)] ^= 0xdead;
        }
        let r = exact(&a, &b);
        let est = ContentSketch::from_words(&a).resemblance(&ContentSketch::from_words(&b));
        let se = (r * (1.0 - r) / SKETCH_SIZE as f64).sqrt().max(0.01);
        assert!(
            (est - r).abs() < 4.0 * se,
            "changed {changed}: exact {r:.3}, estimate {est:.3}"
        );
    }
}

#[test]
fn a_short_page_inside_a_long_one_is_not_a_copy() {
    let long = words(2000, 3);
    let short = long[..100].to_vec();
    let r = ContentSketch::from_words(&short).resemblance(&ContentSketch::from_words(&long));
    assert!(r <= 96.0 / 1996.0 + 1e-9, "{r}");
}

#[test]
fn empty_content_confirms_nothing() {
    let e = ContentSketch::from_words(&[]);
    assert_eq!(e.resemblance(&e), 0.0);
    assert_eq!(e.resemblance(&ContentSketch::from_words(&[1, 2])), 0.0);
    let one = ContentSketch::from_words(&[1, 2, 3]);
    assert_eq!(one.shingles(), 1);
    assert_eq!(one.resemblance(&one), 1.0);
}

#[test]
fn bytes_round_trip_and_reject_garbage() {
    let s = ContentSketch::from_words(&words(500, 4));
    assert_eq!(ContentSketch::from_bytes(&s.to_bytes()), Some(s));
    assert_eq!(ContentSketch::from_bytes(&[1, 2, 3]), None);
    // Not ascending.
    let mut bad = 2u32.to_le_bytes().to_vec();
    bad.extend_from_slice(&9u32.to_le_bytes());
    bad.extend_from_slice(&3u32.to_le_bytes());
    assert_eq!(ContentSketch::from_bytes(&bad), None);
}

/// Words of blocks: each block `(hash, words)` in order, as the runs
/// [`ContentSketch::from_blocks`] takes.
fn blocks(parts: &[(u64, &[u64])]) -> (Vec<u64>, Vec<(u32, u64)>) {
    let mut words = Vec::new();
    let mut runs = Vec::new();
    for (block, w) in parts {
        words.extend_from_slice(w);
        runs.push((words.len() as u32, *block));
    }
    (words, runs)
}

/// The sketches of two pages of template key "k": `chrome` (block 7)
/// then their own words (blocks 1 and 2).
fn chrome_pair(chrome: &[u64], own_a: &[u64], own_b: &[u64]) -> (ContentSketch, ContentSketch) {
    let (wa, ra) = blocks(&[(7, chrome), (1, own_a)]);
    let (wb, rb) = blocks(&[(7, chrome), (2, own_b)]);
    (
        ContentSketch::from_blocks(&wa, &ra, "k"),
        ContentSketch::from_blocks(&wb, &rb, "k"),
    )
}

/// A page sketched before a block became template, against a copy
/// sketched after: as taken they differ by the block's shingles; left
/// out, they are the same text (exactly on short pages, within a few
/// standard errors on long ones).
#[test]
fn blocks_now_template_are_left_out_of_both_sketches() {
    for (chrome_len, content_len) in [(40usize, 60usize), (1500, 2500)] {
        let chrome = words(chrome_len, 10);
        let content = words(content_len, 11);
        let (half_a, half_b) = content.split_at(content_len / 2);
        let (wa, ra) = blocks(&[(7, &chrome), (1, half_a), (2, half_b)]);
        let (wb, rb) = blocks(&[(1, half_a), (2, half_b)]);
        let early = ContentSketch::from_blocks(&wa, &ra, "h|/a/");
        let late = ContentSketch::from_blocks(&wb, &rb, "h|/a/");
        assert_eq!(early.template_key(), Some("h|/a/"));
        let as_taken = early.resemblance(&late);
        assert!(as_taken < 0.75, "{chrome_len}: {as_taken}");
        let chrome_cut = |h: u64| h == 7;
        let r = early.resemblance_without(&late, &chrome_cut);
        assert_eq!(r, late.resemblance_without(&early, &chrome_cut), "symmetric");
        if content_len < SKETCH_SIZE {
            assert_eq!(r, 1.0);
        } else {
            assert!(r > 0.85, "{chrome_len}: {r}");
        }
        // Nothing cut, or the cut leaves one side empty: as taken.
        assert_eq!(early.resemblance_without(&late, &|_| false), as_taken);
        assert_eq!(early.resemblance_without(&late, &|h| h != 9), as_taken);
        // Untagged sketches are compared as taken.
        let plain = ContentSketch::from_words(&wa);
        assert!(!plain.is_tagged());
        assert_eq!(plain.resemblance_without(&late, &chrome_cut), plain.resemblance(&late));
    }
}

/// A template changes as the crawl goes: a block repeated on about the
/// template's share of a site's pages comes and goes. A page sketched
/// while such a block was template has no words of it (an empty run
/// where they were, the block named as left out); a copy sketched
/// after it left the template has them. Compared, the block is left
/// out of both, the shingles across its gap too: the same text.
#[test]
fn blocks_template_when_either_was_sketched_are_left_out_of_both() {
    for (before_len, after_len) in [(30usize, 40usize), (1500, 2500)] {
        let before = words(before_len, 40);
        let flapping = words(12, 41);
        let after = words(after_len, 42);
        // Sketched while block 5 was template: its words are not there.
        let (wa, mut ra) = blocks(&[(1, &before), (2, &after)]);
        ra.insert(1, (before_len as u32, 5));
        let early = ContentSketch::from_blocks(&wa, &ra, "k").with_left_out(&[5]);
        // Sketched after block 5 left the template.
        let (wb, rb) = blocks(&[(1, &before), (5, &flapping), (2, &after)]);
        let late = ContentSketch::from_blocks(&wb, &rb, "k");
        let r = early.resemblance_without(&late, &|_| false);
        assert_eq!(r, late.resemblance_without(&early, &|_| false), "symmetric");
        if before_len + after_len < SKETCH_SIZE {
            assert_eq!(r, 1.0);
            // Without the gap's empty run, the shingles across it are
            // the early page's own: not the same text.
            let (wa2, ra2) = blocks(&[(1, &before), (2, &after)]);
            let untied = ContentSketch::from_blocks(&wa2, &ra2, "k").with_left_out(&[5]);
            assert!(untied.resemblance_without(&late, &|_| false) < 0.95);
            // Not named as left out, the block's shingles count.
            let unnamed = ContentSketch::from_blocks(&wa, &ra, "k");
            assert!(unnamed.resemblance_without(&late, &|_| false) < 0.8);
        } else {
            assert!(r > 0.9, "{before_len}: {r}");
        }
        // The names survive the spill encoding.
        assert_eq!(
            ContentSketch::from_tagged_bytes(&early.to_tagged_bytes()),
            Some(early.clone())
        );
    }
}

/// Generated reference pages differ in a few words between template
/// blocks (a name between "Declaration" and "Description"). When both
/// pages were sketched with those blocks left out, the shingles across
/// the gaps are the same on both sides where the text is, and they
/// hold the words that differ: they stay.
#[test]
fn gaps_both_pages_left_are_compared_as_they_are() {
    let before = words(30, 50);
    let after = words(40, 51);
    let page = |name: &[u64]| {
        let (w, mut r) = blocks(&[(1, &before), (2, name), (3, &after)]);
        r.insert(1, (30, 8));
        r.insert(3, (30 + name.len() as u32, 9));
        ContentSketch::from_blocks(&w, &r, "k").with_left_out(&[8, 9])
    };
    let (a, b) = (page(&[1, 2, 3]), page(&[4, 5, 6]));
    let r = a.resemblance_without(&b, &|h| h == 8 || h == 9);
    assert!(r < 0.85, "{r}");
    assert_eq!(a.resemblance_without(&a.clone(), &|h| h == 8), 1.0);
}

/// Different text stays apart once shared blocks are cut, and a short
/// page's content inside a long one is still bounded by their sizes.
#[test]
fn cutting_blocks_does_not_make_different_pages_alike() {
    let chrome = words(300, 20);
    let (a, b) = (words(200, 21), words(200, 22));
    let (sa, sb) = chrome_pair(&chrome, &a, &b);
    assert!(sa.resemblance(&sb) > 0.3);
    assert!(sa.resemblance_without(&sb, &|h| h == 7) < 0.1);
    let long = words(3000, 23);
    let (wl, rl) = blocks(&[(7, &chrome), (3, &long)]);
    let (ws, rs) = blocks(&[(7, &chrome), (3, &long[..100])]);
    let r = ContentSketch::from_blocks(&ws, &rs, "k")
        .resemblance_without(&ContentSketch::from_blocks(&wl, &rl, "k"), &|h| h == 7);
    assert!(r < 0.1, "{r}");
}

/// A shingle across two blocks goes with either: it is left out when
/// either block is cut.
#[test]
fn a_shingle_across_blocks_goes_with_each() {
    let (w, r) = blocks(&[(1, &[1, 2, 3]), (2, &[4, 5, 6]), (3, &[7])]);
    let s = ContentSketch::from_blocks(&w, &r, "k");
    let other = ContentSketch::from_blocks(&w, &r, "k");
    // Shingles: 1-5 (blocks 1, 2), 2-6 (1, 2), 3-7 (1, 2, 3).
    let o = s.origin.as_deref().expect("tagged");
    assert_eq!(o.ends.len(), 3);
    let kept = |cut: u64| o.kept(&|h| h == cut).iter().filter(|&&k| k).count();
    assert_eq!((kept(1), kept(2), kept(3), kept(9)), (0, 0, 2, 3));
    assert_eq!(s.resemblance_without(&other, &|h| h == 3), 1.0);
}

#[test]
fn tagged_bytes_round_trip_and_reject_garbage() {
    let chrome = words(50, 30);
    let content = words(400, 31);
    let (w, r) = blocks(&[(7, &chrome), (1, &content[..200]), (2, &content[200..])]);
    let s = ContentSketch::from_blocks(&w, &r, "127.0.0.1:8|/std/");
    let bytes = s.to_tagged_bytes();
    assert_eq!(ContentSketch::from_tagged_bytes(&bytes), Some(s.clone()));
    let plain = ContentSketch::from_words(&w);
    assert_eq!(ContentSketch::from_tagged_bytes(&plain.to_tagged_bytes()), Some(plain));
    for cut in [1, 5, bytes.len() / 2, bytes.len() - 1] {
        assert_eq!(ContentSketch::from_tagged_bytes(&bytes[..cut]), None, "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(ContentSketch::from_tagged_bytes(&longer), None);
    // A block index past the table.
    let mut bad = bytes;
    let n = bad.len();
    bad[n - 2..].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(ContentSketch::from_tagged_bytes(&bad), None);
}

proptest::proptest! {
    /// Sketches of short word sequences give the exact resemblance.
    #[test]
    fn exact_below_the_sketch_size(
        a in proptest::collection::vec(0u64..6, 0..60),
        b in proptest::collection::vec(0u64..6, 0..60),
    ) {
        let (sa, sb) = (ContentSketch::from_words(&a), ContentSketch::from_words(&b));
        if !a.is_empty() && !b.is_empty() {
            // 32-bit shingle hashes of at most 120 shingles: no collision expected.
            let r = exact(&a, &b);
            proptest::prop_assert!((sa.resemblance(&sb) - r).abs() < 1e-12, "{} vs {}", sa.resemblance(&sb), r);
        }
    }
}

/// Each shingle's hash as the sketch's format defines it: the fold of its
/// words, finalized.
fn shingle_hash(run: &[u64]) -> u32 {
    let h = run.iter().fold(0x243f_6a88_85a3_08d3u64, |h, &k| {
        mix64(h ^ k).wrapping_add(0x9e37_79b9_7f4a_7c15)
    });
    (mix64(h) >> 32) as u32
}

proptest::proptest! {
    /// A sketch holds the smallest distinct shingle hashes of the format.
    #[test]
    fn sketch_holds_the_smallest_shingle_hashes(words in proptest::collection::vec(proptest::num::u64::ANY, 0..400)) {
        let sketch = ContentSketch::from_words(&words);
        let mut all: Vec<u32> = if words.is_empty() {
            Vec::new()
        } else if words.len() < SHINGLE_WORDS {
            vec![shingle_hash(&words)]
        } else {
            words.windows(SHINGLE_WORDS).map(shingle_hash).collect()
        };
        all.sort_unstable();
        all.dedup();
        proptest::prop_assert_eq!(sketch.shingles() as usize, all.len());
        all.truncate(SKETCH_SIZE);
        proptest::prop_assert_eq!(&sketch.mins, &all);
    }
}

/// Two pages sharing a long chrome around short texts of their own: left
/// out, the chrome leaves too few samples of the texts to compare, which
/// `resemblance_without` answers with the sketches as taken and
/// `resemblance_without_only` with None; with enough left, both give the
/// same estimate.
#[test]
fn a_cut_that_leaves_too_little_is_no_comparison() {
    let chrome = words(5000, 20);
    let (own_a, own_b) = (words(40, 21), words(40, 22));
    let (a, b) = chrome_pair(&chrome, &own_a, &own_b);
    let chrome_cut = |h: u64| h == 7;
    assert!(a.resemblance(&b) > 0.85, "alike by their chrome");
    assert_eq!(a.resemblance_without(&b, &chrome_cut), a.resemblance(&b));
    assert_eq!(a.resemblance_without_only(&b, &chrome_cut), None);
    // Nothing cut: as taken.
    assert_eq!(a.resemblance_without_only(&b, &|_| false), Some(a.resemblance(&b)));
    // Short chrome: enough of the texts is left, and they differ.
    let short = words(40, 20);
    let (a, b) = chrome_pair(&short, &own_a, &own_b);
    let r = a.resemblance_without(&b, &chrome_cut);
    assert_eq!(a.resemblance_without_only(&b, &chrome_cut), Some(r));
    assert!(r < 0.1, "{r}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// A page compared with several others through one memo gets the
    /// answers it gets compared afresh each time, whichever of them left
    /// blocks out.
    #[test]
    fn a_memo_of_one_side_answers_as_a_fresh_comparison(
        own in proptest::collection::vec((0u64..6, 1usize..120), 1..6),
        others in proptest::collection::vec((proptest::collection::vec((0u64..6, 1usize..120), 1..6), proptest::option::of(0u64..6)), 1..6),
        cut_blocks in proptest::collection::vec(0u64..6, 0..3),
        floor in 0.0f64..1.0,
    ) {
        // Block b's words are the same on every page (seeded by b), so
        // pages share text block by block; a page may have left one block
        // out (an empty run where it was, its words gone).
        let page = |parts: &[(u64, usize)], left_out: Option<u64>| {
            let texts: Vec<(u64, Vec<u64>)> = parts
                .iter()
                .filter(|&&(b, _)| Some(b) != left_out)
                .map(|&(b, n)| (b, words(n, 60 + b)))
                .collect();
            let refs: Vec<(u64, &[u64])> = texts.iter().map(|(b, w)| (*b, w.as_slice())).collect();
            let (w, mut r) = blocks(&refs);
            match left_out {
                Some(gone) => {
                    r.insert(0, (0, gone));
                    ContentSketch::from_blocks(&w, &r, "k").with_left_out(&[gone])
                }
                None => ContentSketch::from_blocks(&w, &r, "k"),
            }
        };
        let a = page(&own, None);
        let cut = |h: u64| cut_blocks.contains(&h);
        let (mut memo, mut memo_only) = (SideMemo::default(), SideMemo::default());
        for (parts, left_out) in &others {
            let b = page(parts, *left_out);
            proptest::prop_assert_eq!(a.resemblance_without_memo(&b, &cut, &mut memo, 0.0), Some(a.resemblance_without(&b, &cut)));
            proptest::prop_assert_eq!(
                a.resemblance_without_only_memo(&b, &cut, &mut memo_only, 0.0),
                a.resemblance_without_only(&b, &cut)
            );
            // With a floor: the same answer, or None only below it.
            let fresh = a.resemblance_without(&b, &cut);
            match a.resemblance_without_memo(&b, &cut, &mut memo, floor) {
                Some(r) => proptest::prop_assert_eq!(r, fresh),
                None => proptest::prop_assert!(fresh < floor, "{} passed over at floor {}", fresh, floor),
            }
            let fresh = a.resemblance_without_only(&b, &cut);
            match a.resemblance_without_only_memo(&b, &cut, &mut memo_only, floor) {
                Some(r) => proptest::prop_assert_eq!(Some(r), fresh),
                None => proptest::prop_assert!(fresh.is_none_or(|r| r < floor), "{:?} passed over at floor {}", fresh, floor),
            }
        }
    }
}
