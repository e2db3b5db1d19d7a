//! `simcrawl bench resume`: what `crawl --resume` reads before its first
//! fetch, on a store of many recorded pages.

use std::io::Write;
use std::time::Instant;

use crate::config::Settings;
use crate::error::{Error, Result};

/// `simcrawl bench resume`: what `crawl --resume` reads before its first
/// fetch, timed on a sled store of `pages` recorded pages (85% new, the rest
/// exact duplicates, 40 hosts) and `pages / 4` queued URLs, written through
/// the store API as a crawl writes them. Each step is one that
/// [`crate::crawl::run`] takes on resume: open the store (the seen-set cache is
/// filled from the `s` keys), rebuild the frontier (`s`, `p`, `q`), and read
/// the decider's state (`crawl::DedupState`: exact-duplicate maps and, with
/// no index snapshot, as after a crawl killed before its first clean stop,
/// the index bulk load, from one scan of `p`). Those last two are timed alone
/// and then on two threads at once, as the crawl runs them. A plain scan of
/// `p` and a reopen without the seen-set cache are the baselines. The store
/// goes to a temporary directory, removed after.
pub fn run_resume_bench(pages: u64, out: &mut dyn Write) -> Result<()> {
    use crate::model::Decision;
    use crate::model::{HostStats, QueuedUrl, StoredPage};
    use crate::store::{Completion, DiskStore, Store};

    let dir = std::env::temp_dir().join(format!("simcrawl-bench-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = Settings::default();
    let w = |e: std::io::Error| Error::io("stdout", e);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // splitmix64: reproducible fingerprints and hashes.
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::hash::mix64(seed)
    };
    let hash = |a: u64, b: u64| {
        let mut h = [0u8; 32];
        h[..8].copy_from_slice(&a.to_le_bytes());
        h[8..16].copy_from_slice(&b.to_le_bytes());
        h
    };
    let qurl = |i: u64| {
        let host = format!("h{}.test", i % 40);
        let canonical = format!("http://{host}/section-{}/article-{i}.html", i % 97);
        QueuedUrl {
            url: canonical.clone(),
            canonical,
            host,
            depth: 3,
            parent: Some(format!("http://h{}.test/section-{}/", i % 40, i % 97)),
            components: crate::model::ScoreComponents::default(),
            priority: -3.0,
            seq: i,
            retries: 0,
            inlinks: 1,
            tunnel: 0,
            revisit: None,
        }
    };

    let started = Instant::now();
    {
        let store = DiskStore::open_cached(
            &dir,
            settings.store.engine,
            settings.frontier.seen_cache_urls,
            settings.store.cache_bytes,
        )?
        .combining();
        store.set_meta("seeds", b"http://h0.test/")?;
        let queued = pages / 4;
        const GROUP: u64 = 1000;
        let host = HostStats::default();
        let mut i = 0;
        while i < pages + queued {
            let urls: Vec<QueuedUrl> = (i..(i + GROUP).min(pages + queued)).map(qurl).collect();
            store.enqueue(&urls)?;
            let done: Vec<&QueuedUrl> = urls.iter().filter(|u| u.seq < pages).collect();
            let mut recs = Vec::with_capacity(done.len());
            for u in &done {
                store.claim(u)?;
                let new = u.seq % 100 < 85;
                let (a, b) = (next(), next());
                recs.push(StoredPage {
                    id: store.allocate_page_id(),
                    canonical: u.canonical.clone(),
                    final_url: u.canonical.clone(),
                    status: 200,
                    depth: u.depth,
                    decision: if new { Decision::New } else { Decision::ExactDuplicate },
                    dup_of: (!new).then_some(1),
                    simhash: Some(a),
                    content_hash: Some(hash(a, b)),
                    text_hash: Some(hash(b, a)),
                    fetched_at_ms: 1_700_000_000_000 + u.seq,
                    bytes: 5000,
                    ..StoredPage::default()
                });
            }
            let batch: Vec<Completion<'_>> = done
                .iter()
                .zip(&recs)
                .map(|(u, p)| Completion {
                    url: u,
                    key: u.key(),
                    page: p,
                    body: None,
                    host: &host,
                })
                .collect();
            store.complete_many(&batch)?;
            i += GROUP;
        }
        store.flush()?;
    }
    writeln!(
        out,
        "store with {pages} pages and {} queued URLs written in {:.1} s ({})",
        pages / 4,
        started.elapsed().as_secs_f64(),
        dir.display()
    )
    .map_err(w)?;
    let mut report = |what: &str, t: Instant, n: usize| -> Result<f64> {
        let s = t.elapsed().as_secs_f64();
        writeln!(
            out,
            "{what:<46} {s:>8.2} s   ({n} items, {:.0}/s)",
            n as f64 / s.max(1e-9)
        )
        .map_err(w)?;
        Ok(s)
    };

    let t = Instant::now();
    let cached = DiskStore::open_cached(
        &dir,
        settings.store.engine,
        settings.frontier.seen_cache_urls,
        settings.store.cache_bytes,
    )?;
    report("open (seen-set cache filled from s)", t, (pages + pages / 4) as usize)?;
    drop(cached);
    // sled's own part of the open (its log recovery), for comparison; the
    // crawl opens once, as the step above did.
    let t = Instant::now();
    drop(DiskStore::open(&dir)?);
    report("baseline: reopen without a seen-set cache", t, 0)?;
    // Each step below runs on a freshly reopened store (not timed), so each
    // starts with sled's page cache as cold as a resumed crawl's.
    let reopen = || -> Result<std::sync::Arc<dyn Store>> {
        Ok(std::sync::Arc::new(
            DiskStore::open_cached(
                &dir,
                settings.store.engine,
                settings.frontier.seen_cache_urls,
                settings.store.cache_bytes,
            )?
            .combining(),
        ))
    };
    let store = reopen()?;
    let t = Instant::now();
    let n = store.iter_pages().try_fold(0usize, |n, r| r.map(|_| n + 1))?;
    let scan = report("baseline: plain scan of p (decode each page)", t, n)?;
    drop(store);
    let no_snapshot = dir.join("no-snapshot");
    let store = reopen()?;
    let t = Instant::now();
    let frontier = crate::frontier::Frontier::resume(store.clone(), &settings)?;
    let alone = report("frontier resume (s, p, q; alone)", t, frontier.len())?;
    drop((frontier, store));
    let store = reopen()?;
    let t = Instant::now();
    let state = crate::crawl::DedupState::load(store.as_ref(), &settings, &no_snapshot, &no_snapshot, 0)?;
    let load = report("dedup state: exact maps + index (one scan of p)", t, state.index.len())?;
    drop((state, store));
    // What `crawl --resume` waits for after the open: both at once.
    let store = reopen()?;
    let t = Instant::now();
    let (frontier, state) = std::thread::scope(|sc| {
        let loader =
            sc.spawn(|| crate::crawl::DedupState::load(store.as_ref(), &settings, &no_snapshot, &no_snapshot, 0));
        let frontier = crate::frontier::Frontier::resume(store.clone(), &settings);
        (frontier, loader.join())
    });
    let state = state.map_err(|_| Error::thread_panicked("loader"))??;
    let frontier = frontier?;
    let both = report("both, as crawl --resume runs them (2 threads)", t, frontier.len())?;
    writeln!(
        out,
        "dedup state / plain scan of p: {:.2}x; both at once / one after the other: {:.2}x",
        load / scan.max(1e-9),
        both / (alone + load).max(1e-9)
    )
    .map_err(w)?;
    drop((frontier, state, store));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_bench_reads_back_what_it_wrote() {
        let mut out = Vec::new();
        run_resume_bench(2000, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let items = |step: &str| -> String {
            let line = out
                .lines()
                .find(|l| l.starts_with(step))
                .unwrap_or_else(|| panic!("{step}: {out}"));
            line.rsplit('(').next().unwrap().split(' ').next().unwrap().to_string()
        };
        // 2,000 pages and 500 queued URLs; 85% of the pages are new.
        assert_eq!(items("open"), "2500");
        assert_eq!(items("frontier resume"), "500");
        assert_eq!(items("baseline: plain"), "2000");
        assert_eq!(items("dedup state"), "1700");
        assert_eq!(items("both"), "500");
    }
}
