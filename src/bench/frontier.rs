//! `simcrawl bench frontier`: the frontier's cost per crawled page (`next`,
//! `offer_many` of the page's out-links, `complete`, `set_host_ready`) over
//! the in-memory and the sled store, against a baseline of the bare
//! in-memory work (a binary heap push and pop per URL plus a hash-set seen
//! check per link).

use std::collections::{BinaryHeap, HashSet};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use url::Url;

use crate::config::Settings;
use crate::error::{Error, Result};
use crate::frontier::{Candidate, Frontier, NextUrl};
use crate::model::{Decision, StoredPage};
use crate::store::{DiskStore, MemStore, Store};

const LINKS: u64 = 10;
const HOSTS: u64 = 200;

/// Page n's out-links: 5 new pages (5n+1..5n+5) and 5 links to older pages.
fn links(n: u64) -> Vec<Url> {
    (1..=5)
        .map(|i| 5 * n + i)
        .chain((0..LINKS - 5).map(|i| (n * 31 + i * 97) % (n + 1)))
        .filter_map(|m| Url::parse(&format!("http://h{}.test/p/{m}", m % HOSTS)).ok())
        .collect()
}

fn per_page(store: Arc<dyn Store>, pages: u64) -> Result<f64> {
    let s = Settings::from_layers(&[], &["crawl.scope=any".into(), "crawl.max_urls_per_pattern=0".into()])
        .map_err(|e| Error::Internal(e.to_string()))?;
    let f = Frontier::new(store, &s, &[Url::parse("http://h0.test/p/0").expect("seed")])?;
    let pre: Vec<Vec<Url>> = (0..pages).map(links).collect();
    let t = Instant::now();
    let mut done = 0u64;
    while done < pages {
        let now = Instant::now();
        let NextUrl::Ready(q) = f.next(now)? else {
            return Err(Error::Internal("the frontier ran dry".into()));
        };
        let n: u64 = q.canonical.rsplit('/').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let cands: Vec<Candidate> = pre[n as usize % pre.len()]
            .iter()
            .map(|u| Candidate::link(u.clone(), &q, Default::default()))
            .collect();
        f.offer_many(&cands)?;
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
        f.complete(&q, &page, None)?;
        f.set_host_ready(&q.host, now)?;
        done += 1;
    }
    Ok(t.elapsed().as_secs_f64() / pages as f64)
}

fn baseline(pages: u64) -> f64 {
    let pre: Vec<Vec<Url>> = (0..pages).map(links).collect();
    let t = Instant::now();
    let mut heap = BinaryHeap::new();
    let mut seen = HashSet::new();
    heap.push((0u64, "http://h0.test/p/0".to_string()));
    for n in 0..pages {
        let Some((_, u)) = heap.pop() else { break };
        std::hint::black_box(&u);
        for l in &pre[n as usize] {
            if seen.insert(l.as_str().to_string()) {
                heap.push((u64::MAX - n, l.as_str().to_string()));
            }
        }
    }
    t.elapsed().as_secs_f64() / pages as f64
}

/// Run the frontier benchmark over `pages` pages and print the table.
pub fn run_frontier_bench(pages: u64, out: &mut impl Write) -> Result<()> {
    let pages = pages.max(1);
    let base = baseline(pages);
    let mem = per_page(Arc::new(MemStore::new()), pages)?;
    let dir = std::env::temp_dir().join(format!("simcrawl-bench-frontier-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sled = per_page(Arc::new(DiskStore::open(&dir)?), pages);
    let _ = std::fs::remove_dir_all(&dir);
    let sled = sled?;
    let w = |e: std::io::Error| Error::io("stdout", e);
    writeln!(
        out,
        "pages: {pages}, out-links per page: {LINKS} (5 new, 5 repeats), hosts: {HOSTS}"
    )
    .map_err(w)?;
    writeln!(out, "baseline (heap + hash set): {:8.2} us/page  1.00x", base * 1e6).map_err(w)?;
    for (name, t) in [("frontier over MemStore", mem), ("frontier over DiskStore", sled)] {
        writeln!(
            out,
            "{name:26}  {:8.2} us/page  {:5.1}x  ({:.0} pages/s on one thread)",
            t * 1e6,
            t / base,
            1.0 / t
        )
        .map_err(w)?;
    }
    Ok(())
}
