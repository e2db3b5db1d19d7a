//! Politeness (pipeline: between the frontier and the fetcher): robots.txt per
//! RFC 9309 (cached per origin, single-flight fetch), Crawl-delay, per-host
//! minimum delay and in-flight limit, adaptive delay, Retry-After and
//! exponential backoff, parking of failing hosts, and bounded URL retries.
//! On by default; never fails open. A host's `[[hosts]]` rule replaces the
//! delays and in-flight limit of `[politeness]` for it (resolved once per
//! origin, kept in its state).
//!
//! One [`Politeness`] is shared by all workers. Per-origin state lives in a
//! sharded map (a `parking_lot::Mutex<HashMap>` per shard, chosen by a hash of
//! the origin), so workers on different hosts rarely touch the same lock and
//! no lock is held across an `.await`. The rate limit is a per-host *ready
//! time* rather than a `governor` keyed limiter, because the delay of each
//! host changes at run time (adaptive delay, Crawl-delay, backoff). The
//! crawl-wide cap `politeness.max_requests_per_sec` is a `governor` direct
//! limiter applied by the crawl loop on top of the per-host limits.
//!
//! Every request to a host — robots.txt included — runs under a
//! [`HostPermit`] from [`Politeness::try_acquire`] or [`Politeness::acquire`]
//! and reports its result with [`HostPermit::finish`].

mod host;
pub mod ip;
pub mod rate;
pub mod robots;

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use url::Url;

use crate::config::{HostRules, PolitenessSettings, Settings};
use crate::fetch::{FetchError, FetchResponse, Fetcher, RedirectChain};
use host::{HostState, StartRefused};
pub use robots::Robots;

/// Shards of the per-host map (a power of two).
const SHARDS: usize = 64;
/// Redirect hops followed for robots.txt (RFC 9309 §2.3.1.2: at least five).
pub const ROBOTS_MAX_REDIRECTS: u32 = 5;

/// Why a host is not crawled at all (recorded as the reason of `disallowed`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkipReason {
    /// robots.txt asks for a Crawl-delay above `politeness.max_crawl_delay_secs`.
    #[error("crawl-delay {requested}s exceeds the cap of {max}s")]
    CrawlDelayTooLong {
        /// Seconds asked for.
        requested: f64,
        /// The configured cap, seconds.
        max: u64,
    },
}

/// Why a request must wait (see [`NotReady::Wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// The host's minimum, adaptive or Crawl-delay spacing.
    Delay,
    /// Retry-After or exponential backoff after 429/503/network errors.
    Backoff,
    /// Too many failures in a row.
    Parked,
}

/// Why [`Politeness::try_acquire`] gave no permit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotReady {
    /// The host has `max_in_flight_per_host` requests running; try again
    /// when one of them finishes (the crawl loop re-arms the host then).
    #[error("host busy")]
    Busy,
    /// Not before `until`.
    #[error("host not ready ({reason:?})")]
    Wait {
        /// Earliest time a request may start.
        until: Instant,
        /// Why.
        reason: WaitReason,
    },
    /// Never, for this crawl: record the URL as `disallowed` with this reason.
    #[error("host skipped: {0}")]
    Skip(SkipReason),
}

/// What a request to a host came to, for [`HostPermit::finish`] and [`RetryPolicy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    /// An HTTP response (any status).
    Response {
        /// HTTP status.
        status: u16,
        /// Parsed Retry-After, if sent.
        retry_after: Option<Duration>,
        /// Response time (feeds the adaptive delay).
        elapsed: Duration,
    },
    /// No response: timeout, connect or read error.
    Failed,
}

impl RequestOutcome {
    /// The outcome of a fetch result.
    pub fn of(result: &Result<FetchResponse, FetchError>) -> Self {
        match result {
            Ok(r) => RequestOutcome::Response {
                status: r.status,
                retry_after: r.retry_after,
                elapsed: r.elapsed,
            },
            Err(_) => RequestOutcome::Failed,
        }
    }
}

/// The right to send one request to a host. Call [`finish`](Self::finish)
/// with the outcome. Dropping a permit without `finish` (a cancelled task)
/// frees the in-flight slot and restarts the spacing, but is not counted as
/// a failure or success of the host.
#[derive(Debug)]
pub struct HostPermit {
    inner: Arc<Inner>,
    key: String,
    delay: Duration,
    done: bool,
}

impl HostPermit {
    /// The origin this permit is for.
    pub fn origin(&self) -> &str {
        &self.key
    }

    /// The spacing the host required before this request (crawl log `delay_ms`).
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Report the request's outcome: updates the adaptive delay, backoff
    /// (Retry-After or exponential), failure count and parking, and frees the
    /// in-flight slot.
    pub fn finish(mut self, outcome: &RequestOutcome) {
        self.done = true;
        self.inner.end(&self.key, Instant::now(), Some(outcome));
    }
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        if !self.done {
            self.inner.end(&self.key, Instant::now(), None);
        }
    }
}

/// Where a robots.txt entry came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsSource {
    /// 2xx: parsed.
    Fetched {
        /// HTTP status.
        status: u16,
    },
    /// 4xx, or more redirects than allowed: everything allowed (RFC 9309 §2.3.1.3).
    AllowAll {
        /// HTTP status of the last hop.
        status: u16,
    },
    /// 5xx, 429 or unreachable: everything disallowed until `expires_at` (RFC 9309 §2.3.1.4).
    Unavailable {
        /// Status, or the error text.
        reason: String,
    },
    /// `politeness.respect_robots = false`.
    Ignored,
}

/// The cached robots.txt of one origin.
#[derive(Debug, Clone)]
pub struct RobotsEntry {
    /// The rules.
    pub robots: Robots,
    /// How they were obtained.
    pub source: RobotsSource,
    /// When the fetch ended.
    pub fetched_at: Instant,
    /// When the entry must be fetched again (TTL, or `robots_retry` when unavailable).
    pub expires_at: Instant,
}

/// The robots.txt verdict for one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsVerdict {
    /// May be fetched.
    Allow,
    /// Disallowed by the rules: record as `disallowed`.
    Disallow,
    /// robots.txt could not be fetched (5xx/unreachable): fetch nothing from
    /// this host before `retry_at` (re-queue, or record as `disallowed`).
    Unavailable {
        /// When robots.txt will be tried again.
        retry_at: Instant,
    },
}

impl RobotsEntry {
    /// The verdict for `url` and product token `agent`.
    pub fn verdict(&self, agent: &str, url: &Url) -> RobotsVerdict {
        match self.source {
            RobotsSource::Unavailable { .. } => RobotsVerdict::Unavailable {
                retry_at: self.expires_at,
            },
            _ if self.robots.is_allowed(agent, url) => RobotsVerdict::Allow,
            _ => RobotsVerdict::Disallow,
        }
    }
}

/// How often and when one URL is retried (`politeness.max_retries`, backoff keys).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    max_retries: u32,
    retry_after_cap: Duration,
    limits: PolitenessSettings,
}

impl RetryPolicy {
    /// From `[politeness]`.
    pub fn new(limits: &PolitenessSettings) -> Self {
        RetryPolicy {
            max_retries: limits.max_retries,
            retry_after_cap: limits.retry_after_cap,
            limits: limits.clone(),
        }
    }

    /// Whether to retry after `outcome`, given `retries_done` retries of this
    /// URL so far (0 after its first attempt), and after how long. Retryable:
    /// no response, 429, 500, 502, 503, 504. Retry-After (429/503) wins,
    /// capped; otherwise `backoff_base x 2^retries_done`, capped.
    pub fn should_retry(&self, outcome: &RequestOutcome, retries_done: u32) -> Option<Duration> {
        if retries_done >= self.max_retries {
            return None;
        }
        let retry_after = match outcome {
            RequestOutcome::Failed => None,
            RequestOutcome::Response {
                status: status @ (429 | 500 | 502 | 503 | 504),
                retry_after,
                ..
            } => retry_after.filter(|_| matches!(status, 429 | 503)),
            RequestOutcome::Response { .. } => return None,
        };
        Some(match retry_after {
            Some(d) => d.min(self.retry_after_cap),
            None => host::exponential(&self.limits, retries_done + 1),
        })
    }
}

#[derive(Debug)]
struct Inner {
    limits: PolitenessSettings,
    /// `limits` shared by the hosts no `[[hosts]]` rule matches.
    default_limits: Arc<PolitenessSettings>,
    /// The `[[hosts]]` rules and, per rule, the limits of its hosts.
    rules: HostRules,
    rule_limits: Vec<Arc<PolitenessSettings>>,
    agent: String,
    shards: Box<[Mutex<HashMap<String, HostState>>]>,
    hasher: RandomState,
}

impl Inner {
    fn shard(&self, key: &str) -> &Mutex<HashMap<String, HostState>> {
        &self.shards[self.hasher.hash_one(key) as usize & (SHARDS - 1)]
    }

    /// Run `f` on the state of `key`, creating it if new.
    fn with_host<T>(&self, key: &str, now: Instant, f: impl FnOnce(&mut HostState) -> T) -> T {
        let mut shard = self.shard(key).lock();
        if let Some(h) = shard.get_mut(key) {
            return f(h);
        }
        let h = shard
            .entry(key.to_string())
            .or_insert_with(|| HostState::new(now, self.limits_of(key)));
        f(h)
    }

    /// The limits of an origin: its host's `[[hosts]]` rule over
    /// `[politeness]` (looked up once, when the origin's state is created).
    fn limits_of(&self, origin: &str) -> Arc<PolitenessSettings> {
        match self.rules.find(crate::host::host_key_of_origin(origin)) {
            Some((i, _)) => self.rule_limits[i].clone(),
            None => self.default_limits.clone(),
        }
    }

    fn end(&self, key: &str, now: Instant, outcome: Option<&RequestOutcome>) {
        let notify = self.with_host(key, now, |h| {
            let limits = h.limits.clone();
            h.end(now, outcome, &limits);
            h.notify.clone()
        });
        notify.notify_waiters();
    }
}

/// Per-host politeness for the whole crawl. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct Politeness {
    inner: Arc<Inner>,
}

impl Politeness {
    /// From `[politeness]`, the `[[hosts]]` rules (per-host delays and
    /// in-flight limits) and the product token `crawl.user_agent`.
    pub fn new(settings: &Settings) -> Self {
        Politeness {
            inner: Arc::new(Inner {
                limits: settings.politeness.clone(),
                default_limits: Arc::new(settings.politeness.clone()),
                rules: settings.hosts.clone(),
                rule_limits: settings
                    .hosts
                    .rules()
                    .iter()
                    .map(|r| Arc::new(r.politeness(&settings.politeness)))
                    .collect(),
                agent: settings.crawl.user_agent.clone(),
                shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
                hasher: RandomState::new(),
            }),
        }
    }

    /// The robots.txt product token in use.
    pub fn agent(&self) -> &str {
        &self.inner.agent
    }

    /// The politeness key of a URL: its [`origin`](crate::host::origin).
    /// robots.txt and limits are per origin.
    pub fn origin_key(url: &Url) -> String {
        crate::host::origin(url)
    }

    /// Start a request to `url`'s host now, if its limits allow: one of at
    /// most `max_in_flight_per_host`, no sooner than its delay after the
    /// previous one, not while backing off, parked or skipped.
    pub fn try_acquire(&self, url: &Url, now: Instant) -> Result<HostPermit, NotReady> {
        let key = Self::origin_key(url);
        let started = self.inner.with_host(&key, now, |h| {
            let limits = h.limits.clone();
            h.try_start(now, &limits)
        });
        match started {
            Ok(delay) => Ok(HostPermit {
                inner: self.inner.clone(),
                key,
                delay,
                done: false,
            }),
            Err(StartRefused::Busy) => Err(NotReady::Busy),
            Err(StartRefused::Wait(until, reason)) => Err(NotReady::Wait { until, reason }),
            Err(StartRefused::Skip(reason)) => Err(NotReady::Skip(reason)),
        }
    }

    /// Wait until a request to `url`'s host may start and take the permit.
    /// Waits through `Busy` and delay/backoff; returns `Err` at once for a
    /// parked or skipped host (the caller re-queues or records the URL).
    /// For worker-per-URL loops; a frontier with a ready-time heap uses
    /// [`try_acquire`](Self::try_acquire) and [`next_ready`](Self::next_ready).
    pub async fn acquire(&self, url: &Url) -> Result<HostPermit, NotReady> {
        let key = Self::origin_key(url);
        loop {
            let notify = self.inner.with_host(&key, Instant::now(), |h| h.notify.clone());
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.try_acquire(url, Instant::now()) {
                Ok(permit) => return Ok(permit),
                Err(NotReady::Busy) => notified.await,
                Err(NotReady::Wait {
                    until,
                    reason: WaitReason::Delay | WaitReason::Backoff,
                }) => tokio::time::sleep_until(until).await,
                Err(other) => return Err(other),
            }
        }
    }

    /// When the host `origin_key` may next start a request (ignoring its
    /// in-flight limit): for the frontier's ready-time heap. Unknown hosts: now.
    pub fn next_ready(&self, origin_key: &str) -> Instant {
        let shard = self.inner.shard(origin_key).lock();
        shard.get(origin_key).map_or_else(Instant::now, HostState::ready_at)
    }

    /// Origins parked after `max_consecutive_failures` failures in a row and
    /// still parked at `now`. Visits every origin: for metrics scrapes, not
    /// per request.
    pub fn parked(&self, now: Instant) -> usize {
        self.inner
            .shards
            .iter()
            .map(|s| {
                s.lock()
                    .values()
                    .filter(|h| h.parked_until.is_some_and(|t| t > now))
                    .count()
            })
            .sum()
    }

    /// Set a host's Crawl-delay in seconds (normally applied from its
    /// robots.txt by [`robots`](Self::robots)). Above `max_crawl_delay` the
    /// host is skipped; `None`, negative or non-finite values clear it.
    pub fn set_crawl_delay(&self, origin_key: &str, secs: Option<f64>) {
        let max = self.inner.limits.max_crawl_delay;
        self.inner.with_host(origin_key, Instant::now(), |h| {
            h.skip = None;
            h.crawl_delay = None;
            match secs.filter(|s| s.is_finite() && *s > 0.0) {
                Some(s) if s > max.as_secs_f64() => {
                    h.skip = Some(SkipReason::CrawlDelayTooLong {
                        requested: s,
                        max: max.as_secs(),
                    })
                }
                Some(s) => h.crawl_delay = Some(Duration::from_secs_f64(s)),
                None => {}
            }
            h.respace();
        });
    }

    /// The robots.txt entry for `url`'s origin: from the cache while fresh,
    /// else fetched with `fetcher` (under the host's own permit, so it counts
    /// against the host's delay and in-flight limit), following at most
    /// [`ROBOTS_MAX_REDIRECTS`] redirects. Concurrent callers for one origin
    /// share one fetch. The entry's Crawl-delay is applied to the host.
    ///
    /// Never call this while holding a [`HostPermit`] for the same host:
    /// with one request in flight per host it would wait for itself.
    pub async fn robots(&self, fetcher: &dyn Fetcher, url: &Url) -> Arc<RobotsEntry> {
        let key = Self::origin_key(url);
        let limits = &self.inner.limits;
        if !limits.respect_robots {
            let now = Instant::now();
            return Arc::new(RobotsEntry {
                robots: Robots::allow_all(),
                source: RobotsSource::Ignored,
                fetched_at: now,
                expires_at: now + limits.robots_cache_ttl,
            });
        }
        let (cached, lock) = self.cached_robots(&key);
        if let Some(entry) = cached {
            return entry;
        }
        let _single_flight = lock.lock().await;
        if let (Some(entry), _) = self.cached_robots(&key) {
            return entry;
        }
        let entry = Arc::new(self.fetch_robots(fetcher, url).await);
        // An unavailable robots.txt leaves the host's Crawl-delay (and skip) as they were.
        if !matches!(entry.source, RobotsSource::Unavailable { .. }) {
            self.set_crawl_delay(&key, entry.robots.crawl_delay(&self.inner.agent));
        }
        self.inner
            .with_host(&key, Instant::now(), |h| h.robots = Some(entry.clone()));
        tracing::debug!(origin = %key, source = ?entry.source, "robots.txt cached");
        entry
    }

    /// [`robots`](Self::robots) then [`RobotsEntry::verdict`] for `url`.
    pub async fn check(&self, fetcher: &dyn Fetcher, url: &Url) -> RobotsVerdict {
        self.robots(fetcher, url).await.verdict(&self.inner.agent, url)
    }

    fn cached_robots(&self, key: &str) -> (Option<Arc<RobotsEntry>>, Arc<tokio::sync::Mutex<()>>) {
        let now = Instant::now();
        self.inner.with_host(key, now, |h| {
            let fresh = h.robots.clone().filter(|e| e.expires_at > now);
            (fresh, h.robots_lock.clone())
        })
    }

    async fn fetch_robots(&self, fetcher: &dyn Fetcher, url: &Url) -> RobotsEntry {
        let limits = &self.inner.limits;
        let mut start = url.clone();
        start.set_path("/robots.txt");
        start.set_query(None);
        start.set_fragment(None);
        let mut chain = RedirectChain::new(start, ROBOTS_MAX_REDIRECTS);
        let (robots, source) = loop {
            let permit = match self.acquire(chain.current()).await {
                Ok(p) => p,
                Err(e) => break unavailable(e.to_string()),
            };
            let result = fetcher.fetch(chain.current()).await;
            permit.finish(&RequestOutcome::of(&result));
            let resp = match result {
                Ok(r) => r,
                Err(e) => break unavailable(e.to_string()),
            };
            match resp.status {
                200..=299 => {
                    let robots = Robots::parse(&resp.body, limits.robots_max_bytes);
                    break (robots, RobotsSource::Fetched { status: resp.status });
                }
                300..=399 => {
                    if chain.next_hop(resp.location.as_deref()).is_err() {
                        // Too many hops, a loop or no target: "unavailable" in
                        // RFC 9309 terms, which means allow all.
                        break (Robots::allow_all(), RobotsSource::AllowAll { status: resp.status });
                    }
                }
                429 => break unavailable("status 429".into()),
                400..=499 => break (Robots::allow_all(), RobotsSource::AllowAll { status: resp.status }),
                s => break unavailable(format!("status {s}")),
            }
        };
        let now = Instant::now();
        let ttl = match source {
            RobotsSource::Unavailable { .. } => limits.robots_retry,
            _ => limits.robots_cache_ttl,
        };
        RobotsEntry {
            robots,
            source,
            fetched_at: now,
            expires_at: now + ttl,
        }
    }
}

fn unavailable(reason: String) -> (Robots, RobotsSource) {
    (Robots::disallow_all(), RobotsSource::Unavailable { reason })
}

#[cfg(test)]
mod tests;
