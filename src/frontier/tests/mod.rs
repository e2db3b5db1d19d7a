//! Unit tests of the frontier, by topic: `scope` (scope and trap rules,
//! per-host caps, priority components) and `schedule` (the seen-set,
//! window refill, scheduling, resume and kill safety). This file holds the
//! helpers both use.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::config::Settings;
use crate::model::Decision;
use crate::store::MemStore;

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn settings(overrides: &[&str]) -> Settings {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Settings::test_web(&o).unwrap()
}

fn frontier_with(s: &Settings, seeds: &[&str]) -> Frontier {
    let seeds: Vec<Url> = seeds.iter().map(|x| u(x)).collect();
    Frontier::new(Arc::new(MemStore::new()), s, &seeds).unwrap()
}

fn page_for(f: &Frontier, q: &QueuedUrl, decision: Decision) -> StoredPage {
    StoredPage {
        id: f.allocate_page_id(),
        canonical: q.canonical.clone(),
        final_url: q.canonical.clone(),
        status: 200,
        depth: q.depth,
        decision,
        ..Default::default()
    }
}

/// Take, complete and release hosts until nothing is queued.
fn drain(f: &Frontier) -> Vec<QueuedUrl> {
    let mut out = Vec::new();
    loop {
        let now = Instant::now();
        match f.next(now).unwrap() {
            NextUrl::Ready(q) => {
                f.complete(&q, &page_for(f, &q, Decision::New), None).unwrap();
                f.set_host_ready(&q.host, now).unwrap();
                out.push(q);
            }
            NextUrl::Empty => return out,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn link(url: &str, depth: u32) -> Candidate {
    Candidate {
        parent: Some("http://a.test/".into()),
        ..Candidate::new(u(url), depth)
    }
}

mod schedule;
mod scope;
