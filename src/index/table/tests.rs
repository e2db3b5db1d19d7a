//! Tests of the live index: every query against brute force (proptest),
//! merges, snapshots, duplicate fingerprints and wide ids.

use super::*;
use crate::index::oracle::{brute, flip};
use crate::index::persist::SnapshotError;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn index_equals_brute_force(
        k in 0u32..=7,
        which in 0usize..8,
        base in proptest::collection::vec(any::<u64>(), 1..40),
        ops in proptest::collection::vec((any::<bool>(), 0usize..1000, proptest::collection::vec(any::<u8>(), 0..10)), 1..120),
    ) {
        let design = match which {
            0 => Design::paper_k3(4).unwrap(),
            1 => Design::paper_k3(10).unwrap(),
            2 => Design::paper_k3(16).unwrap(),
            3 => Design::paper_k3(20).unwrap(),
            4 => Design::for_k(k, 20),
            5 => Design::with_tables(k, 6),
            // The two-halves designs for k = 3 (6 tables p = 21, 8 p = 24).
            6 => Design::with_tables(3, 6),
            _ => Design::with_tables(3, 8),
        };
        // The k = 3 designs cover k = 3 only; use them for k <= 3.
        let k = if (4..6).contains(&which) { k } else { k.min(3) };
        let idx = LiveIndex::new(design, k);
        // Half the cases keep the rebuilt run's entries in files.
        let dir = tempfile::tempdir().unwrap();
        if which % 2 == 1 {
            idx.spill_to(dir.path()).unwrap();
        }
        let mut items: Vec<(u64, u64)> = Vec::new();
        let mut next_id = 0u64;
        for (insert, pick, bits) in ops {
            // Planted neighbours: a base fingerprint with 0..=k+2 flipped bits.
            let b = base[pick % base.len()];
            let nb = bits.len().min(k as usize + 2);
            let fp = flip(b, &bits[..nb]);
            if insert {
                idx.insert(fp, next_id);
                items.push((fp, next_id));
                next_id += 1;
            } else {
                let mut got = Vec::new();
                idx.query(fp, &mut got);
                got.sort_unstable();
                prop_assert_eq!(got, brute(&items, fp, k));
            }
        }
        // And after a rebuild.
        idx.bulk_load(std::iter::empty()).unwrap();
        for &b in &base {
            let mut got = Vec::new();
            idx.query(b, &mut got);
            got.sort_unstable();
            prop_assert_eq!(got, brute(&items, b, k));
        }
    }
}

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

#[test]
fn run_by_run_merge_equals_a_rebuild() {
    // Table::merged_runs (copying old entries in runs) must produce the
    // very tables and ids a full rebuild of the union does, including new
    // keys next to old ones in the same bucket; with 32-bit ids, with new
    // ids that need 64 bits, and with an old run already wide.
    let geo = Geometry::new(&Design::paper_k3(10).unwrap(), 3);
    for (old_base, new_base, wide) in [
        (0u64, 1_000_000u64, false),
        (0, 1 << 40, true),
        (1 << 33, 1_000_000, true),
    ] {
        let mut seed = 11;
        let old: Vec<(u64, u64)> = (0..100_000).map(|i| (lcg(&mut seed), old_base + i)).collect();
        let mut more: Vec<(u64, u64)> = (0..5_000).map(|i| (lcg(&mut seed), new_base + i)).collect();
        more.extend(
            old.iter()
                .step_by(50)
                .map(|&(fp, id)| (fp ^ 1, new_base + 2_000_000 + id)),
        );
        more.extend(
            old.iter()
                .skip(7)
                .step_by(50)
                .map(|&(fp, id)| (fp ^ (1 << 40), new_base + 3_000_000 + id)),
        );
        let held: std::collections::HashSet<u64> = old.iter().map(|p| p.0).collect();
        more.retain(|p| !held.contains(&p.0));
        more.sort_unstable();
        more.dedup_by_key(|p| p.0);
        let base = Run::build(&geo, &old, None).unwrap();
        assert_eq!(base.ids.is_wide(), old_base > 0);
        let (merged, dups) = base.merged(&geo, &more, None).unwrap();
        assert!(dups.is_empty());
        let all: Vec<(u64, u64)> = old.iter().chain(&more).copied().collect();
        let rebuilt = Run::build(&geo, &all, None).unwrap();
        // The merge written to files, and the rebuild moved there, hold the
        // same keys and ids.
        let dir = tempfile::tempdir().unwrap();
        let (on_disk, _) = base.merged(&geo, &more, Some(dir.path())).unwrap();
        let moved = Run::build(&geo, &all, None).unwrap().spill(dir.path()).unwrap();
        for ((a, b), c) in on_disk.tables.iter().zip(&rebuilt.tables).zip(&moved.tables) {
            assert!(matches!(a.data, packed::Data::File { .. }));
            // A table written to a file has the coarser directory.
            assert_eq!(a.len, b.len);
            assert!(a.bits < b.bits && a.dir.len() < b.dir.len());
            assert_eq!(a.keys(), b.keys());
            assert_eq!(c.keys(), b.keys());
        }
        assert!(on_disk.ids.is_file() && moved.ids.is_file());
        assert_eq!(on_disk.ids, rebuilt.ids);
        assert_eq!(moved.ids, rebuilt.ids);
        for (i, (a, b)) in merged.tables.iter().zip(&rebuilt.tables).enumerate() {
            // The same geometry, so this merge took the run-copying path.
            assert_eq!(a.bits, base.tables[i].bits, "table {i}");
            assert_eq!(a.dir, b.dir, "table {i} directory");
            assert_eq!(a.len, b.len);
            let (packed::Data::Mem(ad), packed::Data::Mem(bd)) = (&a.data, &b.data) else {
                panic!("tables built in memory");
            };
            assert_eq!(ad[..a.len * a.width], bd[..b.len * b.width], "table {i} entries");
        }
        assert_eq!(merged.ids, rebuilt.ids);
        assert_eq!((merged.ids.is_wide(), rebuilt.ids.is_wide()), (wide, wide));
        let mut got = merged.items(&geo).unwrap();
        got.sort_unstable();
        let mut want = all.clone();
        want.sort_unstable();
        assert_eq!(got, want);
    }
}

#[test]
fn ids_stay_narrow_until_an_id_needs_64_bits() {
    let mut ids = Ids::with_capacity(4);
    for id in [7, u64::from(u32::MAX), 0] {
        ids.push(id);
    }
    assert!(!ids.is_wide());
    assert_eq!(ids.bytes(), 4 * 4);
    ids.push(1 << 32);
    assert!(ids.is_wide());
    assert_eq!(ids.to_vec().unwrap(), [7, u64::from(u32::MAX), 0, 1 << 32]);
    assert_eq!(
        (ids.get(1), ids.get(3), ids.len()),
        (Some(u64::from(u32::MAX)), Some(1 << 32), 4)
    );
    // Copying between the forms keeps the values.
    let mut narrow = Ids::with_capacity(2);
    narrow.push(5);
    let mut wide = Ids::with_width(8, true);
    wide.extend_from(&narrow, 0..1);
    wide.extend_from(&ids, 2..4);
    assert_eq!(wide.to_vec().unwrap(), [5, 0, 1 << 32]);
    let mut n2 = Ids::with_capacity(8);
    n2.extend_from(&ids, 0..3);
    assert!(!n2.is_wide(), "values that fit stay narrow");
    n2.extend_from(&ids, 3..4);
    assert!(n2.is_wide());
    assert_eq!(n2, ids);
}

/// The delta alone, from a tiny set and hash so that both grow many
/// times: `contains` and `probe` agree with a brute-force scan after
/// every growth.
#[test]
fn delta_grows_its_set_and_hash_without_losing_entries() {
    let design = Design::paper_k3(10).expect("paper design");
    let geo = Geometry::new(&design, 3);
    let mut d = Delta::new(&geo, 1);
    let mut seed = 7u64;
    let mut stored: Vec<(u64, u64)> = Vec::new();
    for id in 0..3000u64 {
        // Every third fingerprint near an earlier one, so probes match.
        let fp = match stored.get(lcg(&mut seed) as usize % (stored.len() + 1)) {
            Some(&(near, _)) if id % 3 == 0 => near ^ (1 << (lcg(&mut seed) % 64)) ^ (1 << (lcg(&mut seed) % 64)),
            _ => lcg(&mut seed),
        };
        if d.contains(fp) {
            assert!(stored.iter().any(|&(f, _)| f == fp));
            continue;
        }
        assert!(!stored.iter().any(|&(f, _)| f == fp));
        let bk = d.prepare(&geo, fp);
        d.push(&geo, fp, id, &bk);
        stored.push((fp, id));
        if id.is_power_of_two() || id % 997 == 0 {
            assert!(stored.iter().all(|&(f, _)| d.contains(f)));
            for &(q, _) in stored.iter().step_by(7) {
                let mut got: Vec<Match> = Vec::new();
                d.probe(&geo, q, |fp, id, distance| got.push(Match { fp, id, distance }));
                got.sort_unstable();
                assert_eq!(got, brute(&stored, q, 3));
            }
        }
    }
    assert!(d.nb > 16 && d.set.len() >= 2 * stored.len());
}

/// A live delta takes the bucket lines of the entries it holds, not of the
/// size at which it is frozen: a fresh index, and the delta that replaces a
/// frozen one while the merge runs, hold much less than a delta made with
/// room for `MIN_DELTA` entries, and every entry stays found.
#[test]
fn a_new_delta_takes_the_lines_of_its_entries() {
    let design = Design::paper_k3(4).expect("paper design");
    let geo = Geometry::new(&design, 3);
    let full = Delta::new(&geo, MIN_DELTA).bytes();
    let ix = LiveIndex::new(design, 3);
    assert!(
        ix.memory_bytes() < full / 3,
        "fresh: {} of a full delta's {full}",
        ix.memory_bytes()
    );
    let mut seed = 5u64;
    let items: Vec<(u64, u64)> = (0..MIN_DELTA as u64 + 100).map(|i| (lcg(&mut seed), i)).collect();
    for &(fp, id) in &items {
        ix.insert(fp, id);
    }
    ix.wait_merged();
    let mut frozen: Vec<(u64, u64)> = items[..MIN_DELTA].to_vec();
    frozen.sort_unstable();
    let run = Run::build(&geo, &frozen, None).expect("a run in memory").bytes();
    let held = ix.memory_bytes();
    assert!(
        held < run + full / 3,
        "after a merge: {held} against the run's {run} and a full delta's {full}"
    );
    let mut out = Vec::new();
    for &(fp, id) in &items {
        out.clear();
        ix.query(fp, &mut out);
        assert!(out.iter().any(|m| m.fp == fp && m.id == id), "{fp:x} lost");
    }
}

/// Crowded buckets: many fingerprints sharing one table's prefix fill
/// its bucket line and several spill lines; probes (single and batched,
/// before and after the delta outgrows its buckets) agree with brute force.
#[test]
fn delta_spill_lines_hold_crowded_buckets() {
    for t in [4usize, 10] {
        let design = Design::paper_k3(t).expect("paper design");
        let geo = Geometry::new(&design, 3);
        let mut d = Delta::new(&geo, 64);
        let mut seed = 11u64;
        let mask = geo.masks[0];
        let centre = lcg(&mut seed);
        let mut stored: Vec<(u64, u64)> = Vec::new();
        for id in 0..600u64 {
            // Table 0's prefix fixed, the other bits random; every fifth
            // one within 2 bits of an earlier fingerprint.
            let fp = if id % 5 == 4 {
                stored[lcg(&mut seed) as usize % stored.len()].0 ^ (1 << (lcg(&mut seed) % 64))
            } else {
                (centre & mask) | (lcg(&mut seed) & !mask)
            };
            if d.contains(fp) {
                continue;
            }
            let bk = d.prepare(&geo, fp);
            d.push(&geo, fp, id, &bk);
            stored.push((fp, id));
        }
        assert!(d.spill[0].len() >= 8 * 10, "table 0's bucket spilled into many lines");
        for &(q, _) in &stored {
            let mut got: Vec<Match> = Vec::new();
            d.probe(&geo, q, |fp, id, distance| got.push(Match { fp, id, distance }));
            got.sort_unstable();
            assert_eq!(got, brute(&stored, q, 3));
        }
    }
}

#[test]
fn a_spilled_index_keeps_a_fixed_delta_and_a_recent_run() {
    // Once spilled, the live delta freezes at a fixed size whatever the
    // runs hold; each frozen delta goes to the recent run, and the recent
    // run to the main run past an eighth of it. Queries (single and
    // batched, with planted neighbours and repeated fingerprints) answer
    // as brute force does throughout, after a snapshot and after a rebuild.
    let size = 512;
    let dir = tempfile::tempdir().unwrap();
    let idx = LiveIndex::new(Design::with_tables(3, 6), 3).with_spilled_delta(size);
    idx.spill_to(dir.path()).unwrap();
    let mut seed = 11u64;
    let mut items: Vec<(u64, u64)> = Vec::new();
    let (mut largest, mut recent_seen) = (0, 0);
    for id in 0..24_000u64 {
        let fp = match id % 10 {
            // A neighbour of an earlier fingerprint, or the same one again.
            3 => items[(lcg(&mut seed) % id) as usize].0 ^ (1 << (lcg(&mut seed) % 64)),
            7 => items[(lcg(&mut seed) % id) as usize].0,
            _ => lcg(&mut seed),
        };
        idx.insert(fp, id);
        items.push((fp, id));
        largest = largest.max(idx.delta_len());
        recent_seen = recent_seen.max(idx.recent_len());
        // A crawl inserts far more slowly than a merge runs.
        if id % 256 == 255 {
            idx.wait_merged();
        }
        if id % 4000 == 3999 {
            let qs: Vec<u64> = (0..50)
                .map(|i| items[(i * 97 + id as usize) % items.len()].0 ^ (i as u64 & 7))
                .collect();
            let mut batch = Vec::new();
            idx.query_many(&qs, &mut batch);
            for (qi, &q) in qs.iter().enumerate() {
                let mut got = Vec::new();
                idx.query(q, &mut got);
                got.sort_unstable();
                assert_eq!(got, brute(&items, q, 3), "query {q:x} after {id}");
                let mut b: Vec<Match> = batch.iter().filter(|(i, _)| *i == qi).map(|&(_, m)| m).collect();
                b.sort_unstable();
                assert_eq!(b, got, "batched query {q:x} after {id}");
            }
        }
    }
    idx.wait_merged();
    assert!(largest <= size, "live delta reached {largest}, its size {size}");
    assert!(
        recent_seen > size,
        "the recent run held {recent_seen}: it never kept a merge"
    );
    let check = |idx: &LiveIndex| {
        for &(fp, _) in items.iter().step_by(211) {
            let mut got = Vec::new();
            idx.query(fp ^ 2, &mut got);
            got.sort_unstable();
            assert_eq!(got, brute(&items, fp ^ 2, 3));
        }
    };
    check(&idx);
    let snap = dir.path().join("index.snapshot");
    idx.save(&snap, 7).unwrap();
    let (back, mark) = LiveIndex::load(&snap, Design::with_tables(3, 6), 3).unwrap();
    assert_eq!((mark, back.len()), (7, items.len()));
    check(&back);
    idx.bulk_load(std::iter::empty()).unwrap();
    assert_eq!(idx.recent_len(), 0);
    check(&idx);
    assert_eq!(super::live::delta_threshold(10 * size, None), MIN_DELTA);
    assert_eq!(super::live::delta_threshold(1 << 20, None), 1 << 17);
    assert_eq!(super::live::delta_threshold(1 << 20, Some(size)), size);
    assert!(super::live::recent_is_full(1, 0) && !super::live::recent_is_full(1 << 14, 1 << 17));
}

/// Interleaved inserts and queries (single and batched) across several
/// freezes and background merges, with planted near-duplicates, against
/// brute force: the delta, the frozen delta and the main run together
/// answer exactly.
#[test]
fn live_layers_agree_with_brute_force_across_merges() {
    // The paper's 4 and 10 tables, and the two-halves 6 tables (p = 21);
    // the main run in memory, and in files (the crawl's index).
    let dir = tempfile::tempdir().unwrap();
    for (t, spill) in [(4usize, false), (10, false), (6, false), (4, true), (6, true)] {
        let idx = LiveIndex::new(Design::with_tables(3, t), 3);
        if spill {
            idx.spill_to(dir.path()).unwrap();
        }
        let mut seed = 5u64;
        let mut items: Vec<(u64, u64)> = Vec::new();
        let total = 3 * MIN_DELTA as u64 + 5000;
        for id in 0..total {
            let fp = match items.len() {
                0 => lcg(&mut seed),
                n if id % 4 == 0 => {
                    let base = items[lcg(&mut seed) as usize % n].0;
                    base ^ (1 << (lcg(&mut seed) % 64)) ^ (1 << (lcg(&mut seed) % 64)) ^ (1 << (lcg(&mut seed) % 64))
                }
                _ => lcg(&mut seed),
            };
            idx.insert(fp, id);
            items.push((fp, id));
            if id % 40_000 == 39_999 || id == total - 1 {
                let qs: Vec<u64> = (0..40)
                    .map(|j| items[(lcg(&mut seed) as usize) % items.len()].0 ^ (j as u64 & 3))
                    .collect();
                let mut many = Vec::new();
                idx.query_many(&qs, &mut many);
                for (qi, &q) in qs.iter().enumerate() {
                    let want = brute(&items, q, 3);
                    let mut got = Vec::new();
                    idx.query(q, &mut got);
                    got.sort_unstable();
                    assert_eq!(got, want, "query {q:x} after {} inserts", id + 1);
                    let mut batched: Vec<Match> = many.iter().filter(|&&(i, _)| i == qi).map(|&(_, m)| m).collect();
                    batched.sort_unstable();
                    assert_eq!(batched, want, "batched query {q:x}");
                }
            }
        }
        idx.wait_merged();
    }
}

#[test]
fn merges_keep_every_fingerprint() {
    let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
    let mut seed = 7;
    let items: Vec<(u64, u64)> = (0..(MIN_DELTA as u64 * 2 + 100)).map(|i| (lcg(&mut seed), i)).collect();
    for &(fp, id) in &items {
        idx.insert(fp, id);
    }
    idx.wait_merged();
    assert_eq!(idx.len(), items.len());
    for &(fp, id) in items.iter().step_by(997) {
        let mut out = Vec::new();
        idx.query(fp ^ 0b101, &mut out);
        assert!(out.contains(&Match { fp, id, distance: 2 }), "{fp:x}");
    }
}

#[test]
fn repeats_across_merges_are_reported_once_per_id() {
    // Re-inserted fingerprints land in the delta while their first copy is
    // in the main run (insert does not look there); merges move them to
    // `extras`. Before, during and after merges each id is reported once.
    let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
    let mut seed = 3;
    let mut items: Vec<(u64, u64)> = Vec::new();
    let mut probes = Vec::new();
    for id in 0..(MIN_DELTA as u64 * 3) {
        let fp = if id % 997 == 0 && !items.is_empty() {
            let old = items[(lcg(&mut seed) % items.len() as u64) as usize].0;
            probes.push(old);
            old
        } else {
            lcg(&mut seed)
        };
        idx.insert(fp, id);
        items.push((fp, id));
        if id % 20_011 == 0 {
            for &q in probes.iter().rev().take(20) {
                let mut got = Vec::new();
                idx.query(q ^ 0b11, &mut got);
                got.sort_unstable();
                assert_eq!(got, brute(&items, q ^ 0b11, 3));
            }
        }
    }
    idx.wait_merged();
    for &q in &probes {
        let mut got = Vec::new();
        idx.query(q, &mut got);
        got.sort_unstable();
        assert_eq!(got, brute(&items, q, 3));
    }
    let mut batch = Vec::new();
    idx.query_many(&probes, &mut batch);
    assert_eq!(
        batch.len(),
        probes.iter().map(|&q| brute(&items, q, 3).len()).sum::<usize>()
    );
    assert_eq!(idx.items().unwrap(), {
        let mut v = items.clone();
        v.sort_unstable();
        v
    });
}

#[test]
fn snapshots_round_trip_and_refuse_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.bin");
    let design = Design::paper_k3(10).unwrap();
    let idx = LiveIndex::new(design.clone(), 3);
    let mut seed = 5;
    let mut items: Vec<(u64, u64)> = (0..5000).map(|i| (lcg(&mut seed), i)).collect();
    idx.bulk_load(items.iter().copied()).unwrap();
    // A delta, a repeated fingerprint, and a repeat of a main-run fingerprint.
    for id in 5000..5100 {
        let fp = if id % 10 == 0 {
            items[id as usize % 100].0
        } else {
            lcg(&mut seed)
        };
        idx.insert(fp, id);
        items.push((fp, id));
    }
    idx.save(&path, 77).unwrap();
    let (back, mark) = LiveIndex::load(&path, design.clone(), 3).unwrap();
    assert_eq!(mark, 77);
    assert_eq!(back.len(), idx.len());
    assert_eq!(back.items().unwrap(), idx.items().unwrap());
    for &(fp, _) in items.iter().step_by(13) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        idx.query(fp ^ 0b1001, &mut a);
        back.query(fp ^ 0b1001, &mut b);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(b, brute(&items, fp ^ 0b1001, 3));
    }
    // Another design or k is refused.
    let e = LiveIndex::load(&path, Design::paper_k3(4).unwrap(), 3).unwrap_err();
    assert!(matches!(e, SnapshotError::Mismatch { .. }), "{e}");
    assert!(LiveIndex::load(&path, design.clone(), 2).is_err());
    // A flipped byte anywhere, or a truncation, is refused, never a panic.
    let bytes = std::fs::read(&path).unwrap();
    for at in [0, 9, 40, 100, bytes.len() / 2, bytes.len() - 20, bytes.len() - 3] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        assert!(LiveIndex::load(&path, design.clone(), 3).is_err(), "flip at {at}");
    }
    for len in [0, 7, 60, bytes.len() / 3, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        assert!(LiveIndex::load(&path, design.clone(), 3).is_err(), "truncated to {len}");
    }
    let e = LiveIndex::load(&dir.path().join("none"), design, 3).unwrap_err();
    assert!(e.is_missing());
}

/// An index whose main run is in files saves the snapshot an index in
/// memory saves, and answers as it does; a loaded snapshot moves to files.
#[test]
fn a_spilled_index_saves_loads_and_answers_as_one_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let design = Design::fastest_for(3, 24);
    let (mem, disk) = (LiveIndex::new(design.clone(), 3), LiveIndex::new(design.clone(), 3));
    disk.spill_to(dir.path()).unwrap();
    let mut seed = 23;
    let mut items: Vec<(u64, u64)> = (0..20_000).map(|i| (lcg(&mut seed), i)).collect();
    for idx in [&mem, &disk] {
        idx.bulk_load(items.iter().copied()).unwrap();
    }
    for id in 20_000..(20_000 + MIN_DELTA as u64 + 3000) {
        let fp = if id % 9 == 0 {
            items[id as usize % 5000].0 ^ 0b110
        } else {
            lcg(&mut seed)
        };
        mem.insert(fp, id);
        disk.insert(fp, id);
        items.push((fp, id));
    }
    mem.wait_merged();
    disk.wait_merged();
    // The packed entries (at least 4 bytes per fingerprint and table) left
    // the heap.
    let saved = mem.memory_bytes() - disk.memory_bytes();
    assert!(saved >= 4 * mem.design().tables() * mem.distinct(), "{saved} bytes");
    assert_eq!(disk.items().unwrap(), mem.items().unwrap());
    let path = dir.path().join("tables.bin");
    disk.save(&path, 5).unwrap();
    let (back, mark) = LiveIndex::load(&path, design, 3).unwrap();
    assert_eq!(mark, 5);
    back.spill_to(dir.path()).unwrap();
    assert_eq!(back.items().unwrap(), mem.items().unwrap());
    for &(fp, _) in items.iter().step_by(101) {
        let q = fp ^ 0b1_0000_0001;
        let want = brute(&items, q, 3);
        for idx in [&mem, &disk, &back] {
            let mut got = Vec::new();
            idx.query(q, &mut got);
            got.sort_unstable();
            assert_eq!(got, want);
        }
    }
}

/// Every fingerprint a saved index holds is found again after loading, in
/// every design family (the paper's, and two halves of 32 bits).
#[test]
fn snapshots_answer_every_stored_fingerprint_in_every_design() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.bin");
    for design in [
        Design::paper_k3(4).unwrap(),
        Design::with_tables(3, 6),
        Design::fastest_for(3, 24),
    ] {
        let idx = LiveIndex::new(design.clone(), 3);
        let mut seed = 11;
        // Live inserts from empty, as a crawl makes them (through merges of
        // the delta), with fingerprints repeated many times (pages of one
        // template) and a bulk-loaded start for the other path.
        let mut items: Vec<(u64, u64)> = Vec::new();
        if design.tables() == 4 {
            items = (0..3000).map(|i| (lcg(&mut seed), i)).collect();
            idx.bulk_load(items.iter().copied()).unwrap();
        }
        for id in 3000..6000 {
            let fp = match id % 5 {
                0 => 0x5ba8_e489_f3d6_f8e5,
                1 if !items.is_empty() => items[id as usize % items.len()].0,
                _ => lcg(&mut seed),
            };
            idx.insert(fp, id);
            items.push((fp, id));
        }
        let live_missing = items.iter().filter(|&&(fp, _)| {
            let mut out = Vec::new();
            idx.query(fp, &mut out);
            out.is_empty()
        });
        assert_eq!(live_missing.count(), 0, "live, {} tables", design.tables());
        idx.save(&path, 1).unwrap();
        let (back, _) = LiveIndex::load(&path, design.clone(), 3).unwrap();
        let missing: Vec<_> = items
            .iter()
            .filter(|&&(fp, _)| {
                let mut out = Vec::new();
                back.query(fp, &mut out);
                out.is_empty()
            })
            .collect();
        assert!(
            missing.is_empty(),
            "{} tables: {} of {} missing",
            design.tables(),
            missing.len(),
            items.len()
        );
    }
}

#[test]
fn duplicates_are_stored_once_and_reported_per_id() {
    let idx = LiveIndex::new(Design::paper_k3(10).unwrap(), 3);
    for id in 0..1000 {
        idx.insert(0, id);
    }
    idx.insert(0b111, 5000);
    assert_eq!(idx.distinct(), 2);
    let mut out = Vec::new();
    let st = idx.query_stats(0b1, &mut out);
    assert_eq!(out.len(), 1001);
    assert!(st.examined <= 2 * 10, "duplicates lengthened the probe: {st:?}");
    assert_eq!(
        idx.nearest(0b1),
        Some(Match {
            fp: 0,
            id: 0,
            distance: 1
        })
    );
    // A query far from 0 but sharing prefixes examines nothing of the crowd.
    let mut out = Vec::new();
    let st = idx.query_stats(0xF000_0000_0000_000F, &mut out);
    assert!(out.is_empty());
    assert!(st.examined <= 2 * 10, "{st:?}");
}

#[test]
fn clustered_sets_keep_probes_bounded() {
    // 64 clusters of 500 fingerprints, each within 8 bits of its centre
    // (simhash clusters similar pages, Manku §4.2).
    let mut seed = 11;
    let mut items = Vec::new();
    for c in 0..64 {
        let centre = lcg(&mut seed);
        for j in 0..500u64 {
            let r = lcg(&mut seed);
            let bits: Vec<u8> = (0..8).map(|s| ((r >> (s * 8)) & 63) as u8).collect();
            items.push((flip(centre, &bits), c * 1000 + j));
        }
    }
    for t in [10, 6] {
        let idx = LiveIndex::new(Design::with_tables(3, t), 3);
        idx.bulk_load(items.iter().copied()).unwrap();
        let mut worst = 0;
        for &(fp, _) in items.iter().step_by(37) {
            let mut out = Vec::new();
            let st = idx.query_stats(fp ^ 1, &mut out);
            worst = worst.max(st.examined);
            out.sort_unstable();
            assert_eq!(out, brute(&items, fp ^ 1, 3));
        }
        // A full scan would examine 32 000 entries per table.
        assert!(worst < 32_000, "{t} tables: worst probe {worst}");
    }
}
