//! Frontier cost per crawled page: `next` + `offer_many` of the page's
//! out-links + `complete` + `set_host_ready`, over the in-memory and the sled
//! store, against a baseline of the bare in-memory work (a binary heap push
//! and pop per URL plus a hash-set seen check per link).
//!
//! Run: `cargo run --release --example frontier_bench [PAGES]`

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use simcrawl::config::Settings;
use simcrawl::frontier::{Candidate, Frontier, NextUrl};
use simcrawl::model::{Decision, StoredPage};
use simcrawl::store::{MemStore, SledStore, Store};
use url::Url;

const LINKS: u64 = 10;
const HOSTS: u64 = 200;

/// Page n's out-links: 5 new pages (5n+1..5n+5) and 5 links to older pages.
fn links(n: u64) -> Vec<Url> {
    (1..=5)
        .map(|i| 5 * n + i)
        .chain((0..LINKS - 5).map(|i| (n * 31 + i * 97) % (n + 1)))
        .map(|m| Url::parse(&format!("http://h{}.test/p/{m}", m % HOSTS)).unwrap())
        .collect()
}

fn run(store: Arc<dyn Store>, pages: u64) -> f64 {
    let s = Settings::from_layers(&[], &["crawl.scope=any".into(), "crawl.max_urls_per_pattern=0".into()]).unwrap();
    let f = Frontier::new(store, &s, &[Url::parse("http://h0.test/p/0").unwrap()]).unwrap();
    let pre: Vec<Vec<Url>> = (0..pages).map(links).collect();
    let t = Instant::now();
    let mut done = 0u64;
    while done < pages {
        let now = Instant::now();
        let NextUrl::Ready(q) = f.next(now).unwrap() else {
            panic!("frontier ran dry")
        };
        let n: u64 = q.canonical.rsplit('/').next().unwrap().parse().unwrap();
        let cands: Vec<Candidate> = pre[n as usize % pre.len()]
            .iter()
            .map(|u| Candidate::link(u.clone(), &q, Default::default()))
            .collect();
        f.offer_many(&cands).unwrap();
        let page = StoredPage {
            id: f.allocate_page_id(),
            canonical: q.canonical.clone(),
            final_url: q.canonical.clone(),
            status: 200,
            decision: Decision::New,
            simhash: Some(n),
            content_hash: Some([(n % 251) as u8; 32]),
            ..Default::default()
        };
        f.complete(&q, &page, None).unwrap();
        f.set_host_ready(&q.host, now).unwrap();
        done += 1;
    }
    t.elapsed().as_secs_f64() / pages as f64
}

fn baseline(pages: u64) -> f64 {
    let pre: Vec<Vec<Url>> = (0..pages).map(links).collect();
    let t = Instant::now();
    let mut heap = BinaryHeap::new();
    let mut seen = HashSet::new();
    heap.push((0u64, "http://h0.test/p/0".to_string()));
    for n in 0..pages {
        let (_, u) = heap.pop().unwrap();
        std::hint::black_box(&u);
        for l in &pre[n as usize] {
            if seen.insert(l.as_str().to_string()) {
                heap.push((u64::MAX - n, l.as_str().to_string()));
            }
        }
    }
    t.elapsed().as_secs_f64() / pages as f64
}

fn main() {
    let pages: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let base = baseline(pages);
    let mem = run(Arc::new(MemStore::new()), pages);
    let dir = tempfile::tempdir().unwrap();
    let sled = run(Arc::new(SledStore::open(dir.path()).unwrap()), pages);
    println!("pages: {pages}, out-links per page: {LINKS} (5 new, 5 repeats), hosts: {HOSTS}");
    println!("baseline (heap + hash set): {:8.2} us/page  1.00x", base * 1e6);
    for (name, t) in [("frontier over MemStore", mem), ("frontier over SledStore", sled)] {
        println!(
            "{name:26}  {:8.2} us/page  {:5.1}x  ({:.0} pages/s on one thread)",
            t * 1e6,
            t / base,
            1.0 / t
        );
    }
}
