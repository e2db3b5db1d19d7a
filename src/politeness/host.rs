//! The state of one host (origin) and the pure rules that update it: when
//! the next request may start, adaptive delay, backoff, failure counting and
//! parking. No I/O and no clock reads here: every method takes `now`, so the
//! rules are unit-tested with exact instants.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::{RequestOutcome, RobotsEntry, SkipReason, WaitReason};
use crate::config::PolitenessSettings;

/// Per-origin politeness state.
#[derive(Debug)]
pub(crate) struct HostState {
    /// Requests started and not yet finished or dropped.
    pub in_flight: usize,
    /// Earliest start of the next request (delay spacing).
    pub next_start: Instant,
    /// No request before this (429/503 Retry-After, exponential backoff).
    pub backoff_until: Option<Instant>,
    /// Parked after too many failures in a row: no request before this.
    pub parked_until: Option<Instant>,
    /// delay_factor x last response time, clamped to [min_delay, max_delay].
    pub adaptive_delay: Duration,
    /// Crawl-delay from robots.txt (already checked against the cap).
    pub crawl_delay: Option<Duration>,
    /// The host is not crawled at all (e.g. Crawl-delay above the cap).
    pub skip: Option<SkipReason>,
    /// Failures (network errors, 429, 5xx) in a row; reset by a success.
    pub consecutive_failures: u32,
    /// The cached robots.txt of this origin.
    pub robots: Option<Arc<RobotsEntry>>,
    /// Held (async) while robots.txt is being fetched: single flight.
    pub robots_lock: Arc<tokio::sync::Mutex<()>>,
    /// Woken whenever a request to this host finishes.
    pub notify: Arc<Notify>,
    /// The latest start or end of a request (for re-spacing when the delay grows).
    pub last_activity: Option<Instant>,
    /// This host's limits: `[politeness]` with its `[[hosts]]` rule's
    /// overrides, resolved once when the state is created.
    pub limits: Arc<PolitenessSettings>,
}

impl HostState {
    pub fn new(now: Instant, limits: Arc<PolitenessSettings>) -> Self {
        HostState {
            in_flight: 0,
            next_start: now,
            backoff_until: None,
            parked_until: None,
            adaptive_delay: limits.min_delay,
            crawl_delay: None,
            skip: None,
            consecutive_failures: 0,
            robots: None,
            robots_lock: Arc::new(tokio::sync::Mutex::new(())),
            notify: Arc::new(Notify::new()),
            last_activity: None,
            limits,
        }
    }

    /// The spacing currently required between two requests to this host.
    pub fn delay(&self) -> Duration {
        self.adaptive_delay.max(self.crawl_delay.unwrap_or(Duration::ZERO))
    }

    /// When the next request may start, ignoring the in-flight limit.
    pub fn ready_at(&self) -> Instant {
        let mut t = self.next_start;
        for limit in [self.backoff_until, self.parked_until].into_iter().flatten() {
            t = t.max(limit);
        }
        t
    }

    /// Start a request at `now` if allowed; `Err` says why not.
    pub fn try_start(&mut self, now: Instant, limits: &PolitenessSettings) -> Result<Duration, StartRefused> {
        if let Some(reason) = &self.skip {
            return Err(StartRefused::Skip(reason.clone()));
        }
        if let Some(until) = self.parked_until.filter(|&t| t > now) {
            return Err(StartRefused::Wait(until, WaitReason::Parked));
        }
        if self.in_flight >= limits.max_in_flight_per_host {
            return Err(StartRefused::Busy);
        }
        if let Some(until) = self.backoff_until.filter(|&t| t > now) {
            return Err(StartRefused::Wait(until.max(self.next_start), WaitReason::Backoff));
        }
        if self.next_start > now {
            return Err(StartRefused::Wait(self.next_start, WaitReason::Delay));
        }
        let delay = self.delay();
        self.in_flight += 1;
        self.next_start = now + delay;
        self.last_activity = Some(now);
        Ok(delay)
    }

    /// A request ended at `now`: `outcome` is `None` when it was abandoned
    /// (permit dropped without [`finish`](super::HostPermit::finish)); then
    /// only the in-flight slot is freed and the spacing is restarted.
    pub fn end(&mut self, now: Instant, outcome: Option<&RequestOutcome>, limits: &PolitenessSettings) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match outcome {
            None => {}
            Some(RequestOutcome::Response {
                status,
                retry_after,
                elapsed,
            }) => {
                if limits.delay_factor > 0.0 {
                    let scaled = elapsed.mul_f64(limits.delay_factor);
                    self.adaptive_delay = scaled.clamp(limits.min_delay, limits.max_delay);
                }
                match *status {
                    429 | 503 => {
                        let wait = match retry_after {
                            Some(d) => (*d).min(limits.retry_after_cap),
                            None => exponential(limits, self.consecutive_failures + 1),
                        };
                        self.fail(now, Some(wait), limits);
                    }
                    500..=599 => self.fail(now, None, limits),
                    _ => {
                        self.consecutive_failures = 0;
                        self.backoff_until = None;
                        self.parked_until = None;
                    }
                }
            }
            Some(RequestOutcome::Failed) => {
                let wait = exponential(limits, self.consecutive_failures + 1);
                self.fail(now, Some(wait), limits);
            }
        }
        // Spacing counts from the end of the previous request too: the server
        // then sees starts at least `delay` apart whatever the network latency.
        self.last_activity = Some(now);
        self.respace();
    }

    /// Re-apply the current delay from the last activity (after the delay
    /// changed, e.g. a Crawl-delay learnt from robots.txt).
    pub fn respace(&mut self) {
        if let Some(last) = self.last_activity {
            self.next_start = self.next_start.max(last + self.delay());
        }
    }

    fn fail(&mut self, now: Instant, backoff: Option<Duration>, limits: &PolitenessSettings) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        if let Some(wait) = backoff {
            self.backoff_until = Some(now + wait);
        }
        if self.consecutive_failures >= limits.max_consecutive_failures {
            self.parked_until = Some(now + limits.park);
        }
    }
}

/// Why [`HostState::try_start`] refused.
#[derive(Debug)]
pub(crate) enum StartRefused {
    Busy,
    Wait(Instant, WaitReason),
    Skip(SkipReason),
}

/// backoff_base x 2^(n-1), capped at backoff_cap (n >= 1).
pub(crate) fn exponential(limits: &PolitenessSettings, n: u32) -> Duration {
    let factor = 1u32 << n.saturating_sub(1).min(30);
    limits.backoff_base.saturating_mul(factor).min(limits.backoff_cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    fn limits() -> PolitenessSettings {
        Settings::default().politeness
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn ok(status: u16, elapsed_ms: u64) -> RequestOutcome {
        RequestOutcome::Response {
            status,
            retry_after: None,
            elapsed: ms(elapsed_ms),
        }
    }

    #[test]
    fn one_in_flight_and_min_delay_between_starts() {
        let l = limits();
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        assert_eq!(h.try_start(t0, &l).unwrap(), Duration::from_secs(1));
        assert!(matches!(h.try_start(t0, &l), Err(StartRefused::Busy)));
        h.end(t0 + ms(100), Some(&ok(200, 100)), &l);
        // delay_factor 2 x 100 ms < min 1 s: the delay stays 1 s, counted from the end.
        match h.try_start(t0 + ms(500), &l) {
            Err(StartRefused::Wait(until, WaitReason::Delay)) => assert_eq!(until, t0 + ms(1100)),
            other => panic!("{other:?}"),
        }
        assert!(h.try_start(t0 + ms(1100), &l).is_ok());
    }

    #[test]
    fn adaptive_delay_is_clamped() {
        let l = limits();
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        h.try_start(t0, &l).unwrap();
        h.end(t0 + ms(3000), Some(&ok(200, 3000)), &l);
        assert_eq!(h.delay(), ms(6000));
        h.try_start(t0 + ms(9000), &l).unwrap();
        h.end(t0 + ms(9000), Some(&ok(200, 100_000)), &l);
        assert_eq!(h.delay(), l.max_delay);
        let mut off = l.clone();
        off.delay_factor = 0.0;
        let mut h = HostState::new(t0, Arc::new(off.clone()));
        h.try_start(t0, &off).unwrap();
        h.end(t0, Some(&ok(200, 100_000)), &off);
        assert_eq!(h.delay(), off.min_delay);
    }

    #[test]
    fn crawl_delay_raises_the_spacing() {
        let l = limits();
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        h.crawl_delay = Some(ms(7000));
        assert_eq!(h.try_start(t0, &l).unwrap(), ms(7000));
        h.end(t0, Some(&ok(200, 1)), &l);
        assert_eq!(h.ready_at(), t0 + ms(7000));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let l = limits();
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        h.try_start(t0, &l).unwrap();
        let throttled = RequestOutcome::Response {
            status: 429,
            retry_after: Some(Duration::from_secs(120)),
            elapsed: ms(1),
        };
        h.end(t0, Some(&throttled), &l);
        match h.try_start(t0 + Duration::from_secs(119), &l) {
            Err(StartRefused::Wait(until, WaitReason::Backoff)) => assert_eq!(until, t0 + Duration::from_secs(120)),
            other => panic!("{other:?}"),
        }
        assert!(h.try_start(t0 + Duration::from_secs(120), &l).is_ok());
        let huge = RequestOutcome::Response {
            status: 503,
            retry_after: Some(Duration::from_secs(1_000_000)),
            elapsed: ms(1),
        };
        h.end(t0 + Duration::from_secs(120), Some(&huge), &l);
        assert_eq!(h.backoff_until, Some(t0 + Duration::from_secs(120) + l.retry_after_cap));
    }

    #[test]
    fn exponential_backoff_doubles_caps_and_resets() {
        let l = limits();
        assert_eq!(exponential(&l, 1), Duration::from_secs(5));
        assert_eq!(exponential(&l, 2), Duration::from_secs(10));
        assert_eq!(exponential(&l, 4), Duration::from_secs(40));
        assert_eq!(exponential(&l, 20), Duration::from_secs(3600));
        assert_eq!(exponential(&l, u32::MAX), Duration::from_secs(3600));
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        let mut t = t0;
        for expect in [5, 10, 20] {
            h.try_start(t, &l).unwrap();
            h.end(t, Some(&ok(429, 1)), &l);
            assert_eq!(h.backoff_until, Some(t + Duration::from_secs(expect)));
            t = h.ready_at();
        }
        h.try_start(t, &l).unwrap();
        h.end(t, Some(&ok(200, 1)), &l);
        assert_eq!((h.consecutive_failures, h.backoff_until), (0, None));
    }

    #[test]
    fn failures_in_a_row_park_the_host() {
        let mut l = limits();
        l.max_consecutive_failures = 3;
        l.backoff_base = Duration::ZERO;
        l.min_delay = Duration::ZERO;
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        for _ in 0..2 {
            h.try_start(t0, &l).unwrap();
            h.end(t0, Some(&RequestOutcome::Failed), &l);
        }
        // A 500 counts as a failure but sets no backoff.
        h.try_start(t0, &l).unwrap();
        h.end(t0, Some(&ok(500, 1)), &l);
        assert!(matches!(
            h.try_start(t0, &l),
            Err(StartRefused::Wait(_, WaitReason::Parked))
        ));
        assert!(h.try_start(t0 + l.park, &l).is_ok());
    }

    #[test]
    fn abandoned_request_frees_the_slot_only() {
        let l = limits();
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        h.try_start(t0, &l).unwrap();
        h.end(t0 + ms(10), None, &l);
        assert_eq!(h.in_flight, 0);
        assert_eq!(h.consecutive_failures, 0);
        assert_eq!(h.ready_at(), t0 + ms(1010));
    }

    #[test]
    fn more_in_flight_when_configured() {
        let mut l = limits();
        l.max_in_flight_per_host = 2;
        l.min_delay = Duration::ZERO;
        let t0 = Instant::now();
        let mut h = HostState::new(t0, Arc::new(l.clone()));
        assert!(h.try_start(t0, &l).is_ok());
        assert!(h.try_start(t0, &l).is_ok());
        assert!(matches!(h.try_start(t0, &l), Err(StartRefused::Busy)));
    }
}
