//! The dispatcher and the workers: the dispatcher hands each ready URL to a
//! worker task, which asks robots.txt and politeness, fetches once, and
//! sends what it found (an outcome, a redirect or an analysed page) to the
//! decider.

use super::*;

/// The dispatcher: hands ready URLs to workers until done, stopped or failed.
pub(super) async fn dispatch(
    shared: &Arc<Shared>,
    tx: mpsc::Sender<Fetched>,
    shutdown: impl std::future::Future<Output = ()> + Send,
    progress: &Progress,
) -> StopReason {
    let slots = Arc::new(Semaphore::new(shared.settings.crawl.concurrency));
    let max_pages = shared.settings.crawl.max_pages;
    tokio::pin!(shutdown);
    let mut stop = StopReason::Completed;
    loop {
        progress.tick(shared);
        if shared.failed.load(Ordering::Relaxed) {
            break;
        }
        let inflight = shared.in_flight.load(Ordering::Acquire);
        // A worker of a shared crawl ends when no URL is queued anywhere (its
        // lease loop says so) and nothing is in flight here.
        if inflight == 0 && shared.worker.as_ref().is_some_and(|w| w.drained()) {
            let reading = shared.sitemaps.as_ref().map_or(0, |s| s.running());
            if reading == 0 {
                break;
            }
        }
        // A worker fetches within the fetch budget it took from the whole
        // crawl's (see `shared_crawl.rs`).
        let over = match &shared.worker {
            Some(w) if max_pages > 0 && !shared.frontier.is_empty() => !w.has_budget(shared).await,
            Some(_) => false,
            None => max_pages > 0 && shared.recorded.load(Ordering::Acquire) + inflight as u64 >= max_pages,
        };
        if over {
            stop = StopReason::MaxPages;
            if inflight == 0 {
                break;
            }
            tokio::select! {
                _ = shared.wake.notified() => continue,
                _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
            }
        }
        // Analysis is behind: fetch no more until it catches up (woken when
        // the backlog falls to its low-water mark, `Unanalyzed::drop`).
        if shared.unanalyzed.load(Ordering::Acquire) >= shared.max_unanalyzed {
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
            }
            continue;
        }
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
        };
        let next = match shared.frontier.next(std::time::Instant::now()) {
            Ok(n) => n,
            Err(e) => {
                tracing::error!("frontier: {e}");
                shared.failed.store(true, Ordering::Relaxed);
                break;
            }
        };
        tracing::trace!("frontier.next: {next:?}");
        let wait_until = match next {
            NextUrl::Ready(q) => {
                if let Some(w) = &shared.worker {
                    w.spend_budget();
                }
                shared.in_flight.fetch_add(1, Ordering::AcqRel);
                let unanalyzed = Unanalyzed::new(shared);
                let (shared, tx) = (shared.clone(), tx.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    work(&shared, q, &tx, unanalyzed).await;
                });
                continue;
            }
            NextUrl::Wait(at) => Some(at),
            NextUrl::Busy => None,
            NextUrl::Empty => {
                // A sitemap being read may still queue URLs.
                let reading = shared.sitemaps.as_ref().map_or(0, |s| s.running());
                // A worker ends when the whole crawl has nothing queued.
                let done_elsewhere = shared.worker.as_ref().is_none_or(|w| w.drained());
                if shared.in_flight.load(Ordering::Acquire) == 0 && reading == 0 && done_elsewhere {
                    break;
                }
                None
            }
        };
        drop(permit);
        // Sleep until a host is ready or a worker finishes (with a short
        // fallback tick, so a missed wake-up costs at most 50 ms).
        let tick = tokio::time::Instant::now() + Duration::from_millis(50);
        let until = wait_until.map_or(tick, |t| tokio::time::Instant::from_std(t).min(tick));
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep_until(until) => {}
            _ = &mut shutdown => { stop = StopReason::Interrupted; break; }
        }
    }
    // Let in-flight work finish (a second signal is not awaited here: the
    // binary exits on it, and resume re-queues what was in flight).
    let drain_deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while shared.in_flight.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < drain_deadline {
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        progress.tick(shared);
    }
    drop(tx);
    stop
}

/// A page dispatched and not yet analysed, counted in
/// [`Shared::unanalyzed`] until this is dropped: when its analysis ends, or
/// when it goes to the decider or back to the frontier without one.
pub(super) struct Unanalyzed(Arc<Shared>);

impl Unanalyzed {
    fn new(shared: &Arc<Shared>) -> Self {
        let n = shared.unanalyzed.fetch_add(1, Ordering::AcqRel) + 1;
        shared.peak_unanalyzed.fetch_max(n, Ordering::Relaxed);
        Unanalyzed(shared.clone())
    }
}

impl Drop for Unanalyzed {
    /// The dispatcher waiting at the bound is woken once the backlog has
    /// fallen by a quarter, not for every page (a wake-up from an analysis
    /// thread costs the runtime a thread switch).
    fn drop(&mut self) {
        let sh = &self.0;
        let was = sh.unanalyzed.fetch_sub(1, Ordering::AcqRel);
        if was == sh.max_unanalyzed - sh.max_unanalyzed / 4 {
            sh.wake.notify_one();
        }
    }
}

/// One URL: robots, permit, fetch, analysis; then to the decider (or back to the frontier).
pub(super) async fn work(shared: &Arc<Shared>, q: QueuedUrl, tx: &mpsc::Sender<Fetched>, unanalyzed: Unanalyzed) {
    // A revisit's page as recorded: its validators for the request, its
    // hashes and interval for the decider.
    let previous = match q.revisit.map(|id| shared.frontier.store().page(id)) {
        Some(Ok(p)) => p.map(Box::new),
        Some(Err(e)) => {
            tracing::warn!(
                "{}: the page it revisits is unreadable ({e}); fetched unconditionally",
                q.canonical
            );
            None
        }
        None => None,
    };
    let origin;
    let step = match Url::parse(&q.canonical) {
        Err(e) => {
            origin = None;
            Step::Record(outcome(
                &q,
                Decision::Error,
                0,
                Some(format!("unparseable URL: {e}")),
                None,
            ))
        }
        Ok(url) => {
            origin = Some(Politeness::origin_key(&url));
            fetch_one(shared, &q, &url, previous.as_deref(), tx, unanalyzed).await
        }
    };
    // The host may be contacted again when politeness says so (a retry
    // pushes that later, never earlier: `requeue` keeps the later time).
    let ready = origin.map_or_else(std::time::Instant::now, |o| shared.politeness.next_ready(&o).into_std());
    if let Err(e) = shared.frontier.fetched(&q, ready) {
        tracing::error!("frontier: {e}");
        shared.failed.store(true, Ordering::Relaxed);
    }
    if ready <= std::time::Instant::now() {
        shared.wake.notify_one();
    }
    match step {
        Step::Record(mut f) => {
            f.previous = previous;
            if tx.send(f).await.is_err() {
                shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Step::Retry(at) => {
            requeue(shared, &q, at);
            shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            shared.wake.notify_one();
        }
        Step::Analyzing => {}
    }
}

/// Tell the frontier when `host` may be contacted again; a host ready now
/// wakes the dispatcher (it may be waiting for just this host).
pub(super) fn set_host_ready(shared: &Shared, host: &str, ready: std::time::Instant) {
    if let Err(e) = shared.frontier.set_host_ready(host, ready) {
        tracing::error!("frontier: {e}");
        shared.failed.store(true, Ordering::Relaxed);
    }
    if ready <= std::time::Instant::now() {
        shared.wake.notify_one();
    }
}

pub(super) fn outcome(
    q: &QueuedUrl,
    decision: Decision,
    status: u16,
    error: Option<String>,
    robots: Option<&'static str>,
) -> Fetched {
    Fetched {
        previous: None,
        validators: Default::default(),
        fetched_at: SystemTime::now(),
        latency_ms: None,
        delay_ms: None,
        robots,
        status,
        final_url: q.canonical.clone(),
        content_type: None,
        bytes: 0,
        server_ip: None,
        ip_wait_ms: None,
        kind: FetchedKind::Outcome {
            decision,
            error,
            body_hash: None,
        },
        capture: None,
        q: q.clone(),
    }
}

/// What a worker does with its URL. (Short-lived and moved once: boxing the
/// large variant would cost an allocation per page for nothing.)
#[allow(clippy::large_enum_variant)]
pub(super) enum Step {
    /// Record this outcome (through the decider).
    Record(Fetched),
    /// Try again, not before this instant (retryable failure).
    Retry(std::time::Instant),
    /// The page went to the analysis threads, which hand the analysed page
    /// to the decider themselves (no hop back through this task).
    Analyzing,
}

/// Robots, permit, request and analysis of one URL.
pub(super) async fn fetch_one(
    shared: &Arc<Shared>,
    q: &QueuedUrl,
    url: &Url,
    previous: Option<&StoredPage>,
    to_decider: &mpsc::Sender<Fetched>,
    unanalyzed: Unanalyzed,
) -> Step {
    use Step::{Record, Retry};
    let s = &shared.settings;
    let mut robots = None;
    if s.politeness.respect_robots {
        let entry = shared.politeness.robots(&shared.robots_fetcher, url).await;
        super::sitemaps::start(shared, url, Some(&entry));
        match entry.verdict(shared.politeness.agent(), url) {
            RobotsVerdict::Allow => robots = Some("allow"),
            RobotsVerdict::Disallow => {
                return Record(outcome(
                    q,
                    Decision::Disallowed,
                    0,
                    Some("robots.txt".into()),
                    Some("disallow"),
                ))
            }
            RobotsVerdict::Unavailable { .. } => {
                return Record(outcome(
                    q,
                    Decision::Disallowed,
                    0,
                    Some("robots.txt unavailable (5xx or unreachable); retry in a later run".into()),
                    Some("disallow"),
                ))
            }
        }
    } else {
        super::sitemaps::start(shared, url, None);
    }
    let permit = match shared.politeness.acquire(url).await {
        Ok(p) => p,
        Err(NotReady::Skip(reason)) => {
            return Record(outcome(q, Decision::Disallowed, 0, Some(reason.to_string()), robots))
        }
        Err(NotReady::Wait { until, .. }) => {
            if q.retries < s.politeness.max_retries {
                return Retry(until.into_std());
            }
            return Record(outcome(
                q,
                Decision::Error,
                0,
                Some("host parked after repeated failures".into()),
                robots,
            ));
        }
        Err(NotReady::Busy) => return Retry(std::time::Instant::now()),
    };
    // The host may take its next request when politeness allows (the
    // frontier's in-flight limit still holds); with one request in flight
    // per host this changes nothing, with more it lets them overlap.
    let ready = shared.politeness.next_ready(permit.origin()).into_std();
    set_host_ready(shared, &q.host, ready);
    let delay_ms = Some(permit.delay().as_millis() as u64);
    // One of the server address's slots, held for the request; then the
    // crawl-wide rate, last, so that requests that waited for a slot do not
    // start together when slots free.
    let ip_slot = shared.ip_limits.acquire(url).await;
    if let Some(rate) = &shared.rate {
        rate.wait().await;
    }
    let fetched_at = SystemTime::now();
    // A revisit asks with the validators the server gave for this URL (a
    // first fetch never sends any).
    let validators = previous
        .filter(|_| q.revisit.is_some() && s.recrawl.conditional)
        .map(|p| crate::fetch::Validators {
            etag: p.revisit.etag.clone(),
            last_modified: p.revisit.last_modified.clone(),
        })
        .filter(|v| !v.is_empty());
    let result = match &validators {
        Some(v) => shared.fetcher.fetch_conditional(url, v).await,
        None => shared.fetcher.fetch(url).await,
    };
    let outcome_of = RequestOutcome::of(&result);
    permit.finish(&outcome_of);
    let (server_ip, ip_wait_ms) = (ip_slot.ip, ip_slot.waited.as_millis() as u64);
    drop(ip_slot);
    if let Some(wait) = shared.retry.should_retry(&outcome_of, q.retries) {
        shared.metrics.record_retry();
        return Retry(std::time::Instant::now() + wait);
    }
    let base = |status: u16, latency: Option<u64>, kind: FetchedKind| Fetched {
        q: q.clone(),
        previous: None,
        validators: Default::default(),
        fetched_at,
        latency_ms: latency,
        delay_ms,
        robots,
        status,
        final_url: q.canonical.clone(),
        content_type: None,
        bytes: 0,
        server_ip,
        ip_wait_ms: Some(ip_wait_ms),
        kind,
        capture: None,
    };
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => {
            return Record(base(
                0,
                None,
                FetchedKind::Outcome {
                    decision: Decision::Error,
                    error: Some(e.to_string()),
                    body_hash: None,
                },
            ))
        }
    };
    let latency = Some(resp.elapsed.as_millis() as u64);
    let mut f = base(
        resp.status,
        latency,
        FetchedKind::Outcome {
            decision: Decision::Error,
            error: None,
            body_hash: None,
        },
    );
    f.content_type = resp.content_type.clone();
    f.bytes = resp.body.len() as u64;
    f.validators = crate::fetch::Validators {
        etag: resp.etag.clone(),
        last_modified: resp.last_modified.clone(),
    };
    if s.output.warc {
        f.capture = Some(Capture::of(&mut resp));
    }
    if resp.status == 304 && validators.is_some() {
        f.kind = FetchedKind::NotModified;
        return Record(with_body(f, resp));
    }
    if resp.is_redirect() {
        let target = resp
            .location
            .as_deref()
            .map(|loc| (loc.to_string(), shared.canon.resolve(url, loc)));
        f.kind = match target {
            Some((location, Ok(target))) => {
                f.final_url = target.to_string();
                FetchedKind::Redirect { target, location }
            }
            Some((location, Err(e))) => FetchedKind::Outcome {
                decision: Decision::Error,
                error: Some(format!("bad redirect Location {location:?}: {e}")),
                body_hash: None,
            },
            None => FetchedKind::Outcome {
                decision: Decision::Error,
                error: Some(format!("HTTP {} without Location", resp.status)),
                body_hash: None,
            },
        };
        return Record(with_body(f, resp));
    }
    if resp.status >= 400 || resp.status < 200 {
        f.kind = FetchedKind::Outcome {
            decision: Decision::Error,
            error: Some(format!("HTTP {}", resp.status)),
            body_hash: None,
        };
        return Record(with_body(f, resp));
    }
    if resp.truncated {
        f.kind = FetchedKind::Outcome {
            decision: Decision::TooLarge,
            error: Some(format!(
                "body larger than fetch.max_body_bytes ({} bytes)",
                s.fetch.max_body_bytes
            )),
            body_hash: None,
        };
        return Record(with_body(f, resp));
    }
    if !resp.is_parseable(&s.fetch.parse_content_types) {
        f.kind = FetchedKind::Outcome {
            decision: Decision::NotHtml,
            error: None,
            body_hash: Some(*blake3::hash(&resp.body).as_bytes()),
        };
        return Record(with_body(f, resp));
    }
    // CPU work off the async threads, on the pool's one thread per core.
    // The job queues in the pool (no permit to wait for: the pages waiting
    // are the fetches in flight, bounded by crawl.concurrency either way,
    // and a permit's release woke this runtime once per page: 13% of the
    // crawl's CPU, docs/benchmarks.md). The analysis thread
    // sends the page on to the decider itself, so a page costs no wake-up of
    // this task after its fetch.
    f.previous = previous.map(|p| Box::new(p.clone()));
    let (sh, page, tx) = (shared.clone(), url.clone(), to_decider.clone());
    shared.analysis.spawn(move || {
        let a = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyze(&sh, &page, resp)));
        drop(unanalyzed);
        f.kind = match a {
            Ok(a) => FetchedKind::Page(Box::new(a)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                FetchedKind::Outcome {
                    decision: Decision::Error,
                    error: Some(format!("page analysis failed: {what}")),
                    body_hash: None,
                }
            }
        };
        // Not an async thread, so a full channel blocks this analysis
        // thread (back-pressure from the decider) instead of a runtime one.
        if tx.blocking_send(f).is_err() {
            sh.in_flight.fetch_sub(1, Ordering::AcqRel);
            sh.wake.notify_one();
        }
    });
    Step::Analyzing
}

/// `f` with the body of `resp` in its WARC capture, if it has one (a
/// response that is not analysed: redirect, error status, too large, not
/// HTML).
fn with_body(mut f: Fetched, resp: FetchResponse) -> Fetched {
    if let Some(c) = f.capture.as_mut() {
        c.body = resp.body;
    }
    f
}

pub(super) fn requeue(shared: &Shared, q: &QueuedUrl, at: std::time::Instant) {
    tracing::debug!(
        "requeue {} in {:?}",
        q.canonical,
        at.saturating_duration_since(std::time::Instant::now())
    );
    if let Err(e) = shared.frontier.requeue(q.clone(), at) {
        tracing::error!("frontier: {e}");
        shared.failed.store(true, Ordering::Relaxed);
    }
}
