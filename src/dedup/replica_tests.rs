//! Tests of the decision log's ops and of replicas sharing a log: the
//! encoding round trip and its errors, replicas fed the same ops agreeing,
//! and two workers deciding copies of each other's pages at the same time
//! ([`two_workers_share_decisions`], also run on Redis by the store's tests).

use super::*;
use crate::dedup::ExactIndex;
use crate::model::Verdict;
use crate::sketch::{ContentSketch, SketchIndex};
use crate::store::{ContentOwners, MemBuckets, MemLog, MemOwners, TableBuckets};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn deduper() -> Deduper {
    let s = crate::Settings::default();
    Deduper::new(
        ExactIndex::new(),
        LiveIndex::from_settings(&s.index, s.simhash.k),
        SketchIndex::new(),
        s.simhash.k,
        0.9,
    )
}

/// The store side of a shared crawl's dedup state: its near-duplicate
/// tables and its exact-duplicate maps.
pub(crate) type SharedState = (Arc<dyn TableBuckets>, Arc<dyn ContentOwners>);

/// In memory.
fn mem_state() -> SharedState {
    (Arc::new(MemBuckets::new()), Arc::new(MemOwners::new()))
}

/// [`deduper`] with its maps and tables in `state` (a shared crawl's).
fn shared_deduper(state: &SharedState) -> Deduper {
    let s = crate::Settings::default();
    let tables = crate::index::SharedIndex::from_settings(&s.index, s.simhash.k, state.0.clone());
    let exact = crate::dedup::SharedExact::new(state.1.clone());
    Deduper::shared(exact, tables, SketchIndex::new(), s.simhash.k, 0.9)
}

/// A fresh deduper for [`two_workers_share_decisions`]: its maps and index
/// in memory, or in `state`.
fn fresh(state: &Option<SharedState>) -> Deduper {
    state.as_ref().map_or_else(deduper, shared_deduper)
}

fn sketch_of(base: u64) -> Sketch {
    let words: Vec<u64> = (0..60).map(|i| base * 1000 + i).collect();
    Sketch::Content(ContentSketch::from_words(&words))
}

fn arb_hash() -> impl Strategy<Value = [u8; 32]> {
    prop::array::uniform32(any::<u8>())
}

fn arb_sketch() -> impl Strategy<Value = Option<Sketch>> {
    prop_oneof![Just(None), (0u64..50).prop_map(|b| Some(sketch_of(b)))]
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            any::<u64>(),
            ".{0,12}",
            ".{0,40}",
            arb_hash(),
            arb_hash(),
            any::<u64>(),
            arb_sketch(),
            prop_oneof![
                Just(Verdict::New),
                Just(Verdict::ExactDuplicate),
                Just(Verdict::NearDuplicate)
            ]
        )
            .prop_map(|(id, host, url, body, text, simhash, sketch, verdict)| Op::Decide {
                id,
                host,
                url,
                hashes: ContentHashes { body, text },
                simhash,
                sketch,
                verdict,
            }),
        (any::<u64>(), any::<u64>(), any::<u64>(), arb_sketch()).prop_map(|(id, old, simhash, sketch)| {
            Op::Reindex {
                id,
                old,
                simhash,
                sketch,
            }
        }),
        (any::<u64>(), prop::option::of(arb_hash()), prop::option::of(arb_hash()))
            .prop_map(|(id, body, text)| Op::Forget { id, body, text }),
        prop::collection::vec(any::<u64>(), 0..20).prop_map(|ids| Op::Committed { ids }),
    ]
}

proptest! {
    #[test]
    fn ops_round_trip(op in arb_op()) {
        let bytes = op.encode();
        prop_assert_eq!(Op::decode(&bytes).unwrap(), op);
        // Every cut of an entry is an error, never a panic or another op.
        for n in 0..bytes.len() {
            prop_assert!(Op::decode(&bytes[..n]).is_err());
        }
    }

    #[test]
    fn any_bytes_decode_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Op::decode(&bytes);
    }
}

#[test]
fn bad_entries_name_what_is_wrong() {
    let ok = Op::Committed { ids: vec![1, 2] }.encode();
    let mut v = ok.clone();
    v[0] = 9;
    assert!(matches!(Op::decode(&v), Err(ReplicaError::Version(9))));
    let mut k = ok.clone();
    k[1] = 77;
    assert!(matches!(Op::decode(&k), Err(ReplicaError::Kind(77))));
    let mut trailing = ok.clone();
    trailing.push(0);
    assert!(matches!(Op::decode(&trailing), Err(ReplicaError::Malformed(_))));
    // A count of ids far beyond the entry's bytes allocates nothing.
    let huge = [OP_VERSION, COMMITTED, 0xff, 0xff, 0xff, 0xff, 0x0f];
    assert!(matches!(Op::decode(&huge), Err(ReplicaError::Malformed(_))));
    assert!(matches!(Op::decode(&[]), Err(ReplicaError::Malformed(_))));
}

/// One step of a random history: decide a page (a copy of an earlier one,
/// near it, or new), re-fingerprint or forget one.
#[derive(Debug, Clone)]
enum Step {
    Decide {
        like: usize,
        bits: u32,
        exact: bool,
        sketch: bool,
    },
    Reindex {
        page: usize,
        bits: u32,
    },
    Forget {
        page: usize,
    },
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..12, 0u32..6, any::<bool>(), any::<bool>())
            .prop_map(|(like, bits, exact, sketch)| Step::Decide { like, bits, exact, sketch }),
        1 => (0usize..40, 0u32..3).prop_map(|(page, bits)| Step::Reindex { page, bits }),
        1 => (0usize..40).prop_map(|page| Step::Forget { page }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// A recording replica's live decisions, replayed from its ops by
    /// another, are the same decisions, and both end in the same state.
    #[test]
    fn replicas_fed_the_same_ops_agree(steps in prop::collection::vec(arb_step(), 1..60)) {
        let mut live = Replica::recording(deduper());
        let mut pages: Vec<(PageId, ContentHashes, u64)> = Vec::new();
        let mut decided = Vec::new();
        for (n, step) in steps.iter().enumerate() {
            let id = n as PageId + 1;
            match *step {
                Step::Decide { like, bits, exact, sketch } => {
                    let base = (like % 6) as u64;
                    let fp = (base.wrapping_mul(0x9E37_79B9_7F4A_7C15)) ^ ((1u64 << bits) - 1);
                    let hashes = if exact {
                        ContentHashes { body: [base as u8; 32], text: [base as u8; 32] }
                    } else {
                        ContentHashes { body: [n as u8; 32], text: [200; 32] }
                    };
                    let sk = sketch.then(|| sketch_of(base));
                    let j = live.decide(id, "h.test", &format!("http://h.test/{n}"), &hashes, fp, sk.as_ref()).unwrap();
                    pages.push((id, hashes, fp));
                    decided.push((id, j));
                }
                Step::Reindex { page, bits } if !pages.is_empty() => {
                    let (pid, _, fp) = pages[page % pages.len()];
                    live.reindex(pid, fp, fp ^ (1 << (bits + 10)), None).unwrap();
                }
                Step::Forget { page } if !pages.is_empty() => {
                    let (pid, h, _) = pages[page % pages.len()];
                    live.forget(pid, Some(&h.body), Some(&h.text)).unwrap();
                }
                _ => {}
            }
        }
        let entries: Vec<Vec<u8>> = live.take_outbox().iter().map(Op::encode).collect();
        let mut replayed = Replica::recording(deduper());
        let mut again = Vec::new();
        for e in &entries {
            let op = Op::decode(e).unwrap();
            let id = match &op { Op::Decide { id, .. } => Some(*id), _ => None };
            if let Some(j) = replayed.apply(op).unwrap() {
                again.push((id.unwrap(), j));
            }
        }
        prop_assert_eq!(&decided, &again);
        // The same state: the same answers to the same new pages.
        for probe in 0..8u64 {
            let fp = probe.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 1;
            let h = ContentHashes { body: [probe as u8; 32], text: [probe as u8 + 100; 32] };
            let sk = sketch_of(probe);
            let a = live.decide(1000 + probe, "h", "u", &h, fp, Some(&sk)).unwrap();
            let b = replayed.decide(1000 + probe, "h", "u", &h, fp, Some(&sk)).unwrap();
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(live.index_len(), replayed.index_len());
        prop_assert_eq!(live.uncommitted_of_host(None), replayed.uncommitted_of_host(None));
    }
}

/// Page `i` of a worker in [`two_workers_share_decisions`]: pair `i`'s
/// content, as an exact copy (even pairs) or a near copy one bit away with
/// other hashes (odd pairs; every fourth with a content sketch).
fn pair_page(worker: u8, i: u64) -> (ContentHashes, u64, Option<Sketch>) {
    let fp = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    let mut body = [0u8; 32];
    body[..8].copy_from_slice(&i.to_be_bytes());
    if i.is_multiple_of(2) {
        return (ContentHashes { body, text: body }, fp, None);
    }
    // The exact maps key on a hash's first bytes.
    body[0] = worker + 1;
    let sketch = (i % 4 == 1).then(|| sketch_of(i));
    (ContentHashes { body, text: body }, fp ^ u64::from(worker), sketch)
}

/// Two workers, each with its own replica over `log`, decide `pairs`
/// pages each in interleaved batches, where page `i` of one is a copy of
/// page `i` of the other (exact or near): exactly one of each pair is new,
/// the other its duplicate; both replicas, caught up, hold the same state,
/// and a third that replays the log makes the same decisions. With
/// `tables`, the near-duplicate index is shared there instead of held by
/// each replica. Returns lock holds per page.
pub(crate) fn two_workers_share_decisions(log: Arc<dyn DecisionLog>, tables: Option<SharedState>, pairs: u64) -> f64 {
    // The workers go through their chunks in step (each waits, at most 5 s,
    // for the other to reach its chunk), so that each decides some pairs
    // first however the threads are scheduled.
    let steps = Arc::new([
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    ]);
    let run = |worker: u8| {
        let (log, tables, steps) = (log.clone(), tables.clone(), steps.clone());
        std::thread::spawn(move || {
            let mut r = SharedReplica::open(fresh(&tables), log).unwrap();
            let mut decided: BTreeMap<PageId, Judgement> = BTreeMap::new();
            let order: Vec<u64> = if worker == 0 {
                (0..pairs).collect()
            } else {
                (0..pairs).rev().collect()
            };
            let mut rng = u64::from(worker) + 7;
            for (step, chunk) in order.chunks(5).enumerate() {
                let (mine, other) = (&steps[usize::from(worker)], &steps[1 - usize::from(worker)]);
                mine.store(step, std::sync::atomic::Ordering::SeqCst);
                let waiting = std::time::Instant::now();
                while other.load(std::sync::atomic::Ordering::SeqCst) < step
                    && waiting.elapsed() < std::time::Duration::from_secs(5)
                {
                    std::thread::yield_now();
                }
                let ids: Vec<PageId> = chunk.iter().map(|i| 10_000 * (u64::from(worker) + 1) + i).collect();
                r.begin().unwrap();
                let pages: Vec<_> = chunk.iter().map(|&i| pair_page(worker, i)).collect();
                let fps: Vec<u64> = pages.iter().map(|p| p.1).collect();
                let hashes = pages.iter().map(|p| (Some(&p.0.body), Some(&p.0.text)));
                r.prefetch(&fps, hashes, |_| Ok::<bool, ReplicaError>(true)).unwrap();
                for (&i, &id) in chunk.iter().zip(&ids) {
                    let (h, fp, sk) = pair_page(worker, i);
                    let url = format!("http://w{worker}.test/{i}");
                    let j = r
                        .replica_mut()
                        .decide(id, &format!("w{worker}.test"), &url, &h, fp, sk.as_ref())
                        .unwrap();
                    decided.insert(id, j);
                }
                r.end().unwrap();
                rng = crate::hash::mix64(rng);
                std::thread::sleep(std::time::Duration::from_micros(rng % 2000));
                r.committed(&ids).unwrap();
            }
            let holds = r.counts().0;
            (r, decided, holds)
        })
    };
    let (a, b) = (run(0), run(1));
    let (mut sa, da, ha) = a.join().unwrap();
    let (mut sb, db, hb) = b.join().unwrap();
    // Caught up with the other's last entries.
    sa.catch_up().unwrap();
    sb.catch_up().unwrap();
    let (mut ra, mut rb) = (sa.into_replica(), sb.into_replica());
    let id = |w: u64, i: u64| 10_000 * (w + 1) + i;
    let mut new_of_a = 0;
    for i in 0..pairs {
        let (ja, jb) = (da[&id(0, i)].ruling, db[&id(1, i)].ruling);
        let (first, dup, original) = match (ja.verdict, jb.verdict) {
            (Verdict::New, _) => (id(0, i), jb, id(0, i)),
            (_, Verdict::New) => (id(1, i), ja, id(1, i)),
            _ => panic!("pair {i}: neither is new: {ja:?} {jb:?}"),
        };
        new_of_a += u64::from(first == id(0, i));
        let want = if i.is_multiple_of(2) {
            Verdict::ExactDuplicate
        } else {
            Verdict::NearDuplicate
        };
        assert_eq!((dup.verdict, dup.dup_of), (want, Some(original)), "pair {i}");
    }
    // Both workers decided first sometimes (they go through the pairs in
    // opposite orders).
    assert!(new_of_a > 0 && new_of_a < pairs, "{new_of_a} of {pairs}");
    // A third replica replaying the log decides every page as its worker did.
    let mut third = Replica::recording(fresh(&tables));
    let mut replayed = BTreeMap::new();
    for (_, e) in log.read_all_after(&Cursor::start()).unwrap() {
        let op = Op::decode(&e).unwrap();
        let pid = match &op {
            Op::Decide { id, .. } => Some(*id),
            _ => None,
        };
        if let Some(j) = third.apply(op).unwrap() {
            replayed.insert(pid.unwrap(), j);
        }
    }
    let mut live = da.clone();
    live.extend(db.clone());
    if tables.is_none() {
        assert_eq!(replayed, live);
    } else {
        // Over shared tables a replica applies outcomes: the same verdicts.
        let verdicts = |m: &BTreeMap<PageId, Judgement>| -> Vec<(PageId, Verdict)> {
            m.iter().map(|(id, j)| (*id, j.ruling.verdict)).collect()
        };
        assert_eq!(verdicts(&replayed), verdicts(&live));
    }
    // Every page was committed; the three hold the same state.
    for r in [&ra, &rb, &third] {
        assert_eq!(r.uncommitted_len(), 0);
        assert_eq!(r.index_len(), third.index_len());
    }
    for i in 0..pairs {
        let (h, fp, sk) = pair_page(0, i);
        let probe = |r: &mut Replica| r.decide(99_000 + i, "p", "p", &h, fp, sk.as_ref()).unwrap();
        let j = probe(&mut third);
        assert_eq!(probe(&mut ra), j);
        assert_eq!(probe(&mut rb), j);
    }
    (ha + hb) as f64 / (2 * pairs) as f64
}

#[test]
fn two_workers_share_decisions_in_memory() {
    let per_page = two_workers_share_decisions(Arc::new(MemLog::new()), None, 60);
    // One lock hold per batch of five pages.
    assert!(per_page <= 0.25, "{per_page} lock holds per page");
}

#[test]
fn two_workers_share_decisions_over_shared_tables() {
    let (tables, owners) = (Arc::new(MemBuckets::new()), Arc::new(MemOwners::new()));
    let state: SharedState = (tables.clone(), owners.clone());
    let per_page = two_workers_share_decisions(Arc::new(MemLog::new()), Some(state), 60);
    assert!(per_page <= 0.25, "{per_page} lock holds per page");
    // The fingerprints of the new pages and of the near duplicates are in
    // the tables, once per table, and their hashes in the maps: the exact
    // pairs share one body and text hash, the near pairs have one of each
    // per worker.
    let t = crate::index::Design::fewest_tables(3, crate::Settings::default().index.expected_size_log2).tables();
    assert_eq!(tables.entries(), (60 + 30) * t);
    assert_eq!(owners.len(), 30 * 2 + 30 * 2 * 2);
}

#[test]
fn table_entries_no_decision_names_are_left_out() {
    let log: Arc<dyn DecisionLog> = Arc::new(MemLog::new());
    let tables = mem_state();
    let h = |n: u8| ContentHashes {
        body: [n; 32],
        text: [n; 32],
    };
    // A holder whose lock expired wrote page 7's entries, and its append
    // was refused: the log never names page 7.
    let mut zombie = shared_deduper(&tables);
    zombie.prefetch(&[0xabcd], [(Some(&[7; 32]), Some(&[7; 32]))]).unwrap();
    zombie.decide(7, &h(7), 0xabcd, None).unwrap();
    zombie.flush().unwrap();
    let mut b = SharedReplica::open(shared_deduper(&tables), log.clone()).unwrap();
    b.begin().unwrap();
    let mut asked = Vec::new();
    b.prefetch(
        &[0xabce],
        [(Some(&h(8).body), Some(&h(8).text))],
        |id| -> Result<bool, ReplicaError> {
            asked.push(id);
            Ok(false)
        },
    )
    .unwrap();
    let j = b
        .replica_mut()
        .decide(8, "a.test", "http://a.test/8", &h(8), 0xabce, None)
        .unwrap();
    b.end().unwrap();
    assert_eq!(asked, vec![7]);
    assert_eq!(j.ruling.verdict, Verdict::New);
    // A page the store has is a candidate; one decided and uncommitted in
    // the log is one without asking the store.
    b.begin().unwrap();
    let mut asked = Vec::new();
    b.prefetch(
        &[0xabcf],
        [(Some(&h(9).body), Some(&h(9).text))],
        |id| -> Result<bool, ReplicaError> {
            asked.push(id);
            Ok(true)
        },
    )
    .unwrap();
    let j = b
        .replica_mut()
        .decide(9, "a.test", "http://a.test/9", &h(9), 0xabcf, None)
        .unwrap();
    b.end().unwrap();
    assert_eq!(asked, vec![7]);
    assert_eq!((j.ruling.verdict, j.ruling.dup_of), (Verdict::NearDuplicate, Some(7)));
}

#[test]
fn ghosts_are_forgotten_and_recorded_pages_marked() {
    let log: Arc<dyn DecisionLog> = Arc::new(MemLog::new());
    // Worker A decides three pages and stops before committing two.
    let mut a = SharedReplica::open(deduper(), log.clone()).unwrap();
    let h = |n: u8| ContentHashes {
        body: [n; 32],
        text: [n; 32],
    };
    let fp = |n: u8| u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    a.locked(|r| -> Result<(), ReplicaError> {
        for n in 1..=3u8 {
            r.decide(
                u64::from(n),
                "a.test",
                &format!("http://a.test/{n}"),
                &h(n),
                fp(n),
                None,
            )?;
        }
        Ok(())
    })
    .unwrap();
    a.committed(&[1]).unwrap();
    drop(a);
    // Worker B joins: page 2 is in the store (its marker was lost), page 3
    // is a ghost.
    let mut b = SharedReplica::open(deduper(), log.clone()).unwrap();
    assert_eq!(b.replica().url_of(3), Some("http://a.test/3"));
    assert_eq!(b.replica().url_of(1), None);
    let other = b
        .locked(|r| r.forget_ghosts(Some("b.test"), |_| -> Result<Fate, ReplicaError> { Ok(Fate::Ghost) }))
        .unwrap();
    assert!(other.is_empty());
    let ghosts = b
        .locked(|r| {
            r.forget_ghosts(Some("a.test"), |id| -> Result<Fate, ReplicaError> {
                Ok(if id == 2 { Fate::Recorded } else { Fate::Ghost })
            })
        })
        .unwrap();
    assert_eq!(ghosts, vec![3]);
    assert_eq!(b.replica().uncommitted_len(), 0);
    // A new fetch of page 3's URL is new, not a copy of the ghost; a copy
    // of page 2 is its duplicate.
    let j = b
        .locked(|r| {
            r.decide(4, "a.test", "http://a.test/3", &h(3), fp(3), None)
                .map_err(ReplicaError::from)
        })
        .unwrap();
    assert_eq!(j.ruling.verdict, Verdict::New);
    let j = b
        .locked(|r| {
            r.decide(5, "a.test", "x", &h(2), fp(9), None)
                .map_err(ReplicaError::from)
        })
        .unwrap();
    assert_eq!((j.ruling.verdict, j.ruling.dup_of), (Verdict::ExactDuplicate, Some(2)));
    // A third worker replays all of it to the same place.
    let mut c = SharedReplica::open(deduper(), log).unwrap();
    assert_eq!(
        c.replica().uncommitted_of_host(None),
        b.replica().uncommitted_of_host(None)
    );
    let probe = |r: &mut Replica| r.decide(9, "a.test", "y", &h(3), fp(11), None).unwrap();
    assert_eq!(probe(c.replica_mut()).ruling.dup_of, Some(4));
}
