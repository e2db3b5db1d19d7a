//! Tests of the benchmark helpers: the baselines and the workloads agree
//! with brute force.

use super::*;

#[test]
fn btree_baseline_and_index_agree_with_brute_force() {
    for shape in [Shape::Random, Shape::Clustered] {
        let wl = Workload::new(shape, 3000, 200, 3, 1);
        let items: Vec<(u64, u64)> = wl.items().collect();
        let bt = BTreeTables::bulk(Design::paper_k3(10).unwrap(), 3, &items);
        let idx = LiveIndex::new(Design::paper_k3(4).unwrap(), 3);
        idx.bulk_load(items.iter().copied()).unwrap();
        let mut planted = 0;
        for &q in &wl.queries {
            let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
            brute_force(&wl.fps, q, 3, &mut a);
            bt.query(q, &mut b);
            idx.query(q, &mut c);
            a.sort_unstable();
            b.sort_unstable();
            c.sort_unstable();
            assert_eq!(a, b);
            assert_eq!(a, c);
            planted += usize::from(!a.is_empty());
        }
        assert!(planted >= 100, "planted neighbours must be found: {planted}");
    }
}

#[test]
fn small_report_runs() {
    let opts = Options {
        n: 2000,
        queries: 500,
        tables: Some(10),
        shapes: vec![Shape::Random, Shape::Clustered],
        no_btree: false,
        brute_queries: 100,
    };
    let mut out = Vec::new();
    run(&opts, &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains("misses vs brute force                         0"), "{s}");
    assert!(s.contains("live inserts/s from empty"), "{s}");
}

#[test]
fn small_batch_report_runs() {
    let mut out = Vec::new();
    run_batch(20_000, 300, None, &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    let line = s
        .lines()
        .find(|l| l.starts_with("queries disagreeing with brute force"))
        .unwrap_or_else(|| panic!("{s}"));
    assert_eq!(line.split_whitespace().nth(5), Some("0"), "{line}");
}
