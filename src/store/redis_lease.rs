//! Host leases on the Redis store: which worker of a crawl fetches which
//! host ([`HostLeases`], docs/distributed.md).
//!
//! A worker fetches a host only while it holds the host's lease,
//! `{N|h|host}:lease`: a string naming the worker, with a TTL the worker
//! renews. One holder at a time means one worker applies the host's
//! politeness delay and in-flight limit, so both hold across workers. A
//! worker that dies stops renewing; when its leases expire, other workers
//! take the hosts and find the URLs it had in flight still queued (a queue
//! entry leaves only with its page's record). A worker that gives a lease
//! up writes when the host may be fetched next (`{N|h|host}:next`), which
//! the next holder waits for; a lease that expires is taken no earlier than
//! its TTL after the last renewal, longer than any delay between requests.
//!
//! Each call is one pipeline (one round trip per node); each host's part
//! is one script on its slot.

use super::*;
use ::redis::cluster::cluster_pipe;
use std::time::Duration;

/// A host in the crawl's host registry, as [`HostLeases::survey`] saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWork {
    /// The host key.
    pub host: String,
    /// Entries in its queue (in-flight URLs included).
    pub queued: u64,
    /// The worker holding its lease, if any.
    pub holder: Option<String>,
}

/// A lease taken by [`HostLeases::acquire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    /// Entries in the host's queue.
    pub queued: u64,
    /// When the host may be fetched next (ms since the Unix epoch; 0: now).
    pub next_ms: u64,
}

/// Hosts handed to the workers of one crawl by leases with a TTL.
pub trait HostLeases: Send + Sync {
    /// Worker `worker` is alive for `ttl` more; returns how many workers
    /// are alive (itself included). Entries of workers dead for a while
    /// are removed.
    fn heartbeat(&self, worker: &str, ttl: Duration) -> Result<usize, StoreError>;
    /// Worker `worker` leaves the crawl (its heartbeat entry is removed).
    fn leave(&self, worker: &str) -> Result<(), StoreError>;
    /// Every registered host with its queue length and lease holder.
    fn survey(&self) -> Result<Vec<HostWork>, StoreError>;
    /// Take the leases of `hosts` for `ttl` where free (or already held by
    /// `worker`) and the host has queued URLs; per host, what was taken.
    fn acquire(&self, worker: &str, hosts: &[&str], ttl: Duration) -> Result<Vec<Option<Acquired>>, StoreError>;
    /// Renew `worker`'s leases of `hosts` for `ttl`; per host, its queue
    /// length, or `None` when the lease is no longer `worker`'s.
    fn renew(&self, worker: &str, hosts: &[&str], ttl: Duration) -> Result<Vec<Option<u64>>, StoreError>;
    /// Give up `worker`'s leases of these hosts, each with the time it may
    /// be fetched next (ms since the Unix epoch).
    fn release(&self, worker: &str, hosts: &[(&str, u64)]) -> Result<(), StoreError>;
    /// Count `n` more fetches against the crawl's fetch counter; returns
    /// the count after (the workers share `crawl.max_pages` through it).
    fn take_fetches(&self, n: u64) -> Result<u64, StoreError>;
}

/// Milliseconds since the Unix epoch, now.
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Takes a lease. KEYS: lease, queue, next. ARGV: worker, TTL (ms).
/// Returns `{queued, next_ms}`, `{-1, 0}` when another worker holds it,
/// `{-2, 0}` when the host has nothing queued.
const ACQUIRE: &str = r#"
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return {-1, 0} end
local n = redis.call('ZCARD', KEYS[2])
if n == 0 and not cur then return {-2, 0} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {n, tonumber(redis.call('GET', KEYS[3]) or '0')}
"#;

/// Renews a lease. KEYS: lease, queue. ARGV: worker, TTL (ms). Returns the
/// queue length, or -1 when the lease is another's or expired.
const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[2])
"#;

/// Gives a lease up. KEYS: lease, next. ARGV: worker, next fetch time (ms).
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
"#;

/// How long a dead worker's heartbeat entry stays before it is removed.
const FORGET_DEAD_AFTER: u64 = 60_000;

fn script(src: &str, keys: &[&str], args: &[&[u8]]) -> ::redis::Cmd {
    let mut c = ::redis::cmd("EVAL");
    c.arg(src).arg(keys.len()).arg(keys);
    for a in args {
        c.arg(*a);
    }
    c
}

impl HostLeases for RedisStore {
    fn heartbeat(&self, worker: &str, ttl: Duration) -> Result<usize, StoreError> {
        let now = epoch_ms();
        let key = self.keys.workers();
        let until = now + ttl.as_millis() as u64;
        let all: Vec<(String, u64)> = self.with(|c| {
            let ((), all): ((), Vec<(String, u64)>) = cluster_pipe()
                .cmd("HSET")
                .arg(&key)
                .arg(worker)
                .arg(until)
                .cmd("HGETALL")
                .arg(&key)
                .query(c)?;
            Ok(all)
        })?;
        let dead: Vec<&str> = all
            .iter()
            .filter(|(_, t)| t + FORGET_DEAD_AFTER < now)
            .map(|(w, _)| w.as_str())
            .collect();
        if !dead.is_empty() {
            self.with(|c| ::redis::cmd("HDEL").arg(&key).arg(&dead).exec(c))?;
        }
        Ok(all.iter().filter(|(_, t)| *t >= now).count().max(1))
    }

    fn leave(&self, worker: &str) -> Result<(), StoreError> {
        self.with(|c| ::redis::cmd("HDEL").arg(self.keys.workers()).arg(worker).exec(c))
    }

    fn survey(&self) -> Result<Vec<HostWork>, StoreError> {
        let hosts = self.hosts()?;
        let mut out = Vec::with_capacity(hosts.len());
        for chunk in hosts.chunks(1000) {
            let mut p = cluster_pipe();
            for h in chunk {
                let (lease, _) = self.keys.host_lease(h);
                p.cmd("ZCARD").arg(self.keys.host(h).queue).cmd("GET").arg(&lease);
            }
            let raw: Vec<(u64, Option<String>)> = self.with(|c| {
                let flat: Vec<::redis::Value> = p.query(c)?;
                let mut v = Vec::with_capacity(flat.len() / 2);
                let mut it = flat.into_iter();
                while let (Some(n), Some(l)) = (it.next(), it.next()) {
                    v.push((::redis::from_redis_value(n)?, ::redis::from_redis_value(l)?));
                }
                Ok(v)
            })?;
            for (h, (queued, holder)) in chunk.iter().zip(raw) {
                out.push(HostWork {
                    host: h.clone(),
                    queued,
                    holder,
                });
            }
        }
        Ok(out)
    }

    fn acquire(&self, worker: &str, hosts: &[&str], ttl: Duration) -> Result<Vec<Option<Acquired>>, StoreError> {
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        let ttl = ttl.as_millis().max(1).to_string();
        let mut p = cluster_pipe();
        for h in hosts {
            let (lease, next) = self.keys.host_lease(h);
            let queue = self.keys.host(h).queue;
            p.add_command(script(
                ACQUIRE,
                &[&lease, &queue, &next],
                &[worker.as_bytes(), ttl.as_bytes()],
            ));
        }
        let raw: Vec<(i64, u64)> = self.with(|c| p.query(c))?;
        Ok(raw
            .into_iter()
            .map(|(n, next_ms)| {
                (n >= 0).then_some(Acquired {
                    queued: n as u64,
                    next_ms,
                })
            })
            .collect())
    }

    fn renew(&self, worker: &str, hosts: &[&str], ttl: Duration) -> Result<Vec<Option<u64>>, StoreError> {
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        let ttl = ttl.as_millis().max(1).to_string();
        let mut p = cluster_pipe();
        for h in hosts {
            let (lease, _) = self.keys.host_lease(h);
            let queue = self.keys.host(h).queue;
            p.add_command(script(RENEW, &[&lease, &queue], &[worker.as_bytes(), ttl.as_bytes()]));
        }
        let raw: Vec<i64> = self.with(|c| p.query(c))?;
        Ok(raw.into_iter().map(|n| (n >= 0).then_some(n as u64)).collect())
    }

    fn take_fetches(&self, n: u64) -> Result<u64, StoreError> {
        self.with(|c| ::redis::cmd("INCRBY").arg(self.keys.fetches()).arg(n).query(c))
    }

    fn release(&self, worker: &str, hosts: &[(&str, u64)]) -> Result<(), StoreError> {
        if hosts.is_empty() {
            return Ok(());
        }
        let mut p = cluster_pipe();
        for (h, at) in hosts {
            let (lease, next) = self.keys.host_lease(h);
            let at = at.to_string();
            p.add_command(script(RELEASE, &[&lease, &next], &[worker.as_bytes(), at.as_bytes()]))
                .ignore();
        }
        self.with(|c| p.exec(c))
    }
}
