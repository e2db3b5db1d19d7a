//! The connections of a [`super::RedisStore`] and of its decision log: one
//! cluster client, a pool of idle connections, and the retry rule every call
//! goes through.

use super::StoreError;
use ::redis::cluster::{ClusterClient, ClusterConnection};
use ::redis::RetryMethod;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a call retries while the cluster is unreachable or failing over
/// (a replica takes over a dead master after the node timeout, 2 s with
/// `scripts/redis-cluster.sh`).
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Calls sent by every [`super::RedisStore`] of this process (see [`calls`]).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Calls every [`super::RedisStore`] (and its decision log) of this process
/// has sent so far, retries included: each is one command or one pipeline,
/// which the cluster client sends as one round trip per node it touches
/// (`simcrawl bench crawl --backend redis` reports them per page).
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// A Redis error as a [`StoreError`].
pub(super) fn backend(e: ::redis::RedisError) -> StoreError {
    StoreError::Backend(format!("redis: {e}"))
}

/// A cluster client and its idle connections.
pub(super) struct Conn {
    client: ClusterClient,
    /// Idle connections (a `ClusterConnection` serves one call at a time).
    pool: Mutex<Vec<ClusterConnection>>,
}

impl Conn {
    /// Over `client`, with `first` as its first idle connection.
    pub(super) fn new(client: ClusterClient, first: ClusterConnection) -> Self {
        Conn {
            client,
            pool: Mutex::new(vec![first]),
        }
    }

    /// Run `f` on an idle connection (a new one when none is idle). An
    /// error the client says is worth retrying (a dropped or refused
    /// connection, a cluster that is failing over) drops the connection and
    /// runs `f` again on a new one, for up to [`RETRY_FOR`]; every call
    /// `f` makes is idempotent but the `INCRBY`s (see the module docs of
    /// `redis.rs`) and the decision log's appends (see `redis_log.rs`).
    pub(super) fn with<T>(
        &self,
        mut f: impl FnMut(&mut ClusterConnection) -> ::redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let started = std::time::Instant::now();
        let mut wait = std::time::Duration::from_millis(50);
        loop {
            CALLS.fetch_add(1, Ordering::Relaxed);
            let pooled = self.pool.lock().pop();
            let r = match pooled {
                Some(c) => Ok(c),
                None => self.client.get_connection(),
            }
            .and_then(|mut con| {
                let r = f(&mut con);
                if r.is_ok() || matches!(r.as_ref().map_err(|e| e.retry_method()), Err(RetryMethod::NoRetry)) {
                    self.pool.lock().push(con);
                }
                r
            });
            match r {
                Ok(v) => return Ok(v),
                Err(e) if matches!(e.retry_method(), RetryMethod::NoRetry) || started.elapsed() >= RETRY_FOR => {
                    return Err(backend(e));
                }
                Err(e) => {
                    tracing::debug!("store: redis: {e}; retrying");
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(std::time::Duration::from_secs(2));
                }
            }
        }
    }
}
