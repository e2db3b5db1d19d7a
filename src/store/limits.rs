//! [`SharedLimits`]: the politeness limits that the worker processes of one
//! crawl share, so that they hold crawl-wide rather than per process: the
//! requests in flight to one server address (`[politeness]
//! max_in_flight_per_ip`) and the request rate (`max_requests_per_sec`).
//! The Redis implementation is in `redis_limits.rs`; the waiting is the
//! politeness module's (`crate::politeness::ip`, `crate::politeness::rate`).

use super::StoreError;
use std::time::Duration;

/// Crawl-wide politeness limits. Each call is one round trip.
pub trait SharedLimits: Send + Sync {
    /// Take one of the `max` slots of server address `addr` for `holder`
    /// (a token unique to this request), held until [`SharedLimits::free_slot`]
    /// or for `ttl` at most (a process that dies frees its slots that way).
    /// `false`: every slot is held; ask again later.
    fn take_slot(&self, addr: &str, max: usize, holder: &str, ttl: Duration) -> Result<bool, StoreError>;
    /// Free `holder`'s slot of `addr`.
    fn free_slot(&self, addr: &str, holder: &str) -> Result<(), StoreError>;
    /// Take the crawl's next request at `per_sec` requests per second
    /// crawl-wide: `Duration::ZERO` when it may start now, else how long to
    /// wait before asking again.
    fn take_request(&self, per_sec: u32) -> Result<Duration, StoreError>;
}
