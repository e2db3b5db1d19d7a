//! Tests of the summary: fingerprint statistics, the harvest curve, and the
//! streaming builder against the in-memory computation it replaced.

use super::*;
use crate::crawllog::{records, CrawlLogWriter};
use crate::hash::mix64;
use crate::model::ScoreComponents;

#[test]
fn leading_bits_and_buckets() {
    // 0b00.., 0b01.., 0b10.. : XORs 0x4000.. (bit 1) and 0xC000.. (bit 0).
    let s = fingerprint_stats(vec![0x8000_0000_0000_0000, 0, 0x4000_0000_0000_0000, 0]);
    assert_eq!((s.count, s.distinct, s.zero), (4, 3, 2));
    assert_eq!(s.leading_bit[0], 1);
    assert_eq!(s.leading_bit[1], 1);
    assert_eq!(s.leading_bit.iter().sum::<u64>(), 2);
    assert_eq!(s.buckets[0], 1);
    assert_eq!(s.buckets[32], 1);
    assert_eq!(s.buckets[64], 1);
    assert_eq!(s.buckets.len(), 128);
}

#[test]
fn harvest_rate_curve() {
    let rec = |r: Option<f64>| PageRecord {
        relevance: r,
        ..PageRecord::default()
    };
    assert!(harvest(&[rec(None)], 0.2).is_none());
    // on, off, (no relevance), on, off: 2 of 4 on-topic; first half 1 of 2.
    let recs = [
        rec(Some(0.3)),
        rec(Some(0.1)),
        rec(None),
        rec(Some(0.2)),
        rec(Some(0.0)),
    ];
    let h = harvest(&recs, 0.2).unwrap();
    assert_eq!((h.pages, h.on_topic_pages), (4, 2));
    assert_eq!((h.harvest_rate, h.first_half_rate), (0.5, 0.5));
    assert_eq!(h.curve, vec![(1, 1.0), (2, 0.5), (3, 2.0 / 3.0), (4, 0.5)]);
    assert!((h.mean_relevance - 0.15).abs() < 1e-12);
    let many: Vec<PageRecord> = (0..1000).map(|i| rec(Some(f64::from(i % 2)))).collect();
    let h = harvest(&many, 0.5).unwrap();
    assert!(h.curve.len() <= CURVE_POINTS && h.curve.last() == Some(&(1000, 0.5)));
}

#[test]
fn uniform_expectation_sums_to_pairs() {
    let u = uniform_leading_bits(1 << 20);
    let total: f64 = u.iter().sum();
    assert!((total - ((1 << 20) - 1) as f64).abs() / total < 0.01, "{total}");
    // Peak near log2(n) = 20.
    let peak = u.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|x| x.0);
    assert!(matches!(peak, Some(19..=21)), "{peak:?}");
}

/// The summary as computed before [`SummaryBuilder`]: every record in memory.
fn build_in_memory(records: &[PageRecord], crawl_stats: Option<CrawlStats>) -> Summary {
    let mut by_decision: HashMap<Decision, u64> = HashMap::new();
    let mut by_status: BTreeMap<u16, u64> = BTreeMap::new();
    let mut by_type: HashMap<&str, u64> = HashMap::new();
    let mut hosts: HashMap<&str, HostAcc> = HashMap::new();
    let (mut pages, mut exact, mut near, mut dup_links, mut mirror_demoted) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut fps = Vec::new();
    for r in records {
        *by_decision.entry(r.decision).or_insert(0) += 1;
        *by_status.entry(r.status).or_insert(0) += 1;
        *by_type.entry(r.content_type.as_deref().unwrap_or("none")).or_insert(0) += 1;
        let host = split_url(&r.canonical).map_or("(invalid url)", |(h, _)| h);
        let acc = hosts.entry(host).or_default();
        let row = acc.row.get_or_insert_with(|| HostRow {
            host: host.to_string(),
            fetched: 0,
            pages: 0,
            duplicates: 0,
            duplicate_rate: 0.0,
            errors: 0,
            disallowed: 0,
            bytes: 0,
            mean_latency_ms: None,
            mean_delay_ms: None,
        });
        row.fetched += 1;
        row.bytes += r.bytes;
        let content = has_content(r);
        if content {
            pages += 1;
            row.pages += 1;
        }
        match r.decision {
            Decision::ExactDuplicate => exact += 1,
            Decision::NearDuplicate => near += 1,
            Decision::Error => row.errors += 1,
            Decision::Disallowed => row.disallowed += 1,
            _ => {}
        }
        if r.decision.is_duplicate() {
            row.duplicates += 1;
            dup_links += u64::from(r.outlinks);
        }
        if r.score.mirror < 0.0 {
            mirror_demoted += 1;
        }
        if let Some(ms) = r.latency_ms {
            acc.latency = (acc.latency.0 + ms, acc.latency.1 + 1);
        }
        if let Some(ms) = r.delay_ms {
            acc.delay = (acc.delay.0 + ms, acc.delay.1 + 1);
        }
        if let Some(fp) = r.simhash.as_deref().and_then(|h| u64::from_str_radix(h, 16).ok()) {
            fps.push(fp);
        }
    }
    let mean = |(sum, n): (u64, u64)| (n > 0).then(|| sum as f64 / n as f64);
    let mut host_rows: Vec<HostRow> = hosts
        .into_values()
        .filter_map(|acc| {
            let mut row = acc.row?;
            row.duplicate_rate = rate(row.duplicates, row.pages);
            row.mean_latency_ms = mean(acc.latency);
            row.mean_delay_ms = mean(acc.delay);
            Some(row)
        })
        .collect();
    host_rows.sort_by(|a, b| b.fetched.cmp(&a.fetched).then_with(|| a.host.cmp(&b.host)));
    let mut types: Vec<TypeCount> = by_type
        .into_iter()
        .map(|(t, count)| TypeCount {
            content_type: t.to_string(),
            count,
        })
        .collect();
    types.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.content_type.cmp(&b.content_type)));
    let on_topic = crawl_stats
        .as_ref()
        .and_then(|s| s.focus_on_topic)
        .unwrap_or_else(|| crate::config::Settings::default().focus.on_topic);
    let harvest = harvest(records, on_topic);
    let fetches_saved = crawl_stats.as_ref().and_then(|s| {
        (s.dup_links_dropped.is_some() || s.mirror_fetches_saved.is_some())
            .then(|| s.dup_links_dropped.unwrap_or(0) + s.mirror_fetches_saved.unwrap_or(0))
    });
    Summary {
        records: records.len() as u64,
        pages,
        hosts_count: host_rows.len() as u64,
        by_decision: DECISIONS
            .iter()
            .map(|d| DecisionCount {
                decision: d.as_str().to_string(),
                count: by_decision.get(d).copied().unwrap_or(0),
            })
            .collect(),
        by_status: by_status
            .into_iter()
            .map(|(status, count)| StatusCount { status, count })
            .collect(),
        by_content_type: types,
        hosts: host_rows,
        dedup: DedupStats {
            duplicates: exact + near,
            exact,
            near,
            duplicate_rate: rate(exact + near, pages),
            duplicate_outlinks: dup_links,
            mirror_demoted_fetched: mirror_demoted,
            fetches_saved,
            crawl_stats,
        },
        fingerprints: fingerprint_stats(fps),
        harvest,
        revisits: None,
    }
}

/// A varied sample: hosts (one URL unparseable), every decision, statuses,
/// content types, optional latencies, delays, simhashes (some not hex),
/// relevances and mirror penalties.
fn sample(n: u64) -> Vec<PageRecord> {
    let hosts = ["a.test", "b.test", "c.test:8080", "d.test", "e.test"];
    (0..n)
        .map(|i| {
            let x = mix64(i + 1);
            let pick = |shift: u32, m: u64| (x >> shift) % m;
            let host = hosts[pick(0, hosts.len() as u64) as usize];
            let canonical = if pick(4, 97) == 0 {
                "not a url".to_string()
            } else {
                format!("http://{host}/p/{}", pick(8, 50))
            };
            let decision = Decision::ALL[pick(16, Decision::ALL.len() as u64) as usize];
            let mut score = ScoreComponents::default();
            if pick(20, 5) == 0 {
                score.mirror = -1.0;
            }
            PageRecord {
                url: canonical.clone(),
                canonical,
                status: [200, 200, 200, 301, 404, 0, 503][pick(24, 7) as usize],
                content_type: [None, Some("text/html"), Some("text/plain"), Some("image/png")][pick(28, 4) as usize]
                    .map(str::to_string),
                content_hash: (pick(30, 3) != 0).then(|| format!("{:064x}", pick(32, 7))),
                text_hash: (pick(34, 3) == 0).then(|| format!("{:064x}", pick(36, 5))),
                simhash: match pick(38, 6) {
                    0 => None,
                    1 => Some("zz".to_string()),
                    _ => Some(format!("{:016x}", mix64(x))),
                },
                decision,
                dup_of: decision.is_duplicate().then(|| format!("http://{host}/p/0")),
                bytes: pick(40, 5000),
                outlinks: pick(44, 9) as u32,
                latency_ms: (pick(48, 4) != 0).then(|| pick(50, 300)),
                delay_ms: (pick(52, 4) != 0).then(|| pick(54, 2000)),
                relevance: (pick(56, 3) == 0).then(|| (pick(58, 1000) as f64) / 1000.0),
                score,
                ..PageRecord::default()
            }
        })
        .collect()
}

#[test]
fn streaming_summary_equals_in_memory() {
    let stats = CrawlStats {
        dup_links_dropped: Some(3),
        mirror_fetches_saved: Some(4),
        focus_on_topic: Some(0.4),
        ..CrawlStats::default()
    };
    for n in [0, 1, 7, 2_000] {
        let recs = sample(n);
        for st in [None, Some(stats.clone())] {
            let want = build_in_memory(&recs, st.clone());
            assert_eq!(build(&recs, st.clone()), want, "{n} records");
            // The same records read back from a log, one at a time.
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("pages.jsonl");
            let mut w = CrawlLogWriter::new(std::fs::File::create(&path).unwrap());
            for r in &recs {
                w.write(r).unwrap();
            }
            w.flush().unwrap();
            let mut b = SummaryBuilder::default();
            for r in records(&path).unwrap() {
                b.add(&r.unwrap());
            }
            let got = b.finish(st);
            assert_eq!(
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&want).unwrap()
            );
        }
    }
    assert!(build(&sample(2_000), None).harvest.is_some());
}
