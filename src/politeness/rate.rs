//! The crawl-wide request rate cap (`[politeness] max_requests_per_sec`):
//! a `governor` direct limiter in a crawl one process runs, or the rate the
//! worker processes of a shared crawl take from the store together
//! ([`SharedLimits::take_request`]: requests spaced by 1/rate crawl-wide).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Settings;
use crate::store::SharedLimits;

/// The request rate cap of a crawl.
pub enum RateCap {
    /// This process's requests (a crawl one process runs).
    Local(governor::DefaultDirectRateLimiter),
    /// Every worker process's requests, through the store.
    Shared {
        /// Where the crawl's rate is taken.
        limits: Arc<dyn SharedLimits>,
        /// Requests per second, crawl-wide.
        per_sec: u32,
    },
}

impl RateCap {
    /// From `[politeness] max_requests_per_sec` (`None`: no cap), over
    /// `shared` when the crawl's workers share one.
    pub fn new(settings: &Settings, shared: Option<Arc<dyn SharedLimits>>) -> Option<RateCap> {
        let n = NonZeroU32::new(settings.politeness.max_requests_per_sec)?;
        Some(match shared {
            Some(limits) => RateCap::Shared {
                limits,
                per_sec: n.get(),
            },
            None => RateCap::Local(governor::RateLimiter::direct(governor::Quota::per_second(n))),
        })
    }

    /// Wait until the next request may start. A store that fails leaves
    /// the request to go (with a warning) rather than fail it.
    pub async fn wait(&self) {
        match self {
            RateCap::Local(l) => l.until_ready().await,
            RateCap::Shared { limits, per_sec } => loop {
                let (l, n) = (limits.clone(), *per_sec);
                match tokio::task::spawn_blocking(move || l.take_request(n)).await {
                    Ok(Ok(wait)) if wait.is_zero() => return,
                    Ok(Ok(wait)) => tokio::time::sleep(wait.min(Duration::from_secs(1))).await,
                    Ok(Err(e)) => {
                        tracing::warn!("politeness: the crawl-wide request rate: {e}; this request goes");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!("politeness: the crawl-wide request rate: {e}");
                        return;
                    }
                }
            },
        }
    }
}
