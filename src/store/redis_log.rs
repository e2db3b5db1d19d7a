//! [`RedisLog`]: the [`DecisionLog`] of a crawl on Redis Cluster, in the
//! slot of `{N}`: `{N}:dlog`, a stream (one field `e` per entry, ids from
//! `XADD *`), `{N}:dlock`, the lock (its holder's token, `PX` TTL), and
//! `{N}:dlast`, the holder's last append (`token first-id last-id`, 60 s).
//!
//! - [`DecisionLog::lock`] is one script: it takes the lock when it is free
//!   (or already this token's: a retried call) and returns the entries after
//!   the caller's cursor (`XRANGE`), so taking the lock and catching up is
//!   one round trip. While another holder has it the call sleeps 1 ms,
//!   doubling to 8 ms, and tries again.
//! - [`DecisionLog::append_unlock`] is one script: it appends only if the
//!   lock still holds this token (fencing: a holder whose lock expired
//!   writes nothing and gets [`StoreError::LockLost`]), returns the entries
//!   appended without the lock since the caller's cursor, records
//!   `{N}:dlast` and deletes the lock. A call retried after its first
//!   attempt was applied (a dropped connection) finds `{N}:dlast` naming
//!   its token and returns the same answer instead of appending twice.
//! - [`DecisionLog::append`] (commit markers) appends without the lock; a
//!   retried call may append its entries twice, which their reader ignores.

use super::decision_log::{Cursor, DecisionLog, Lease, LogEntries, LOCK_TTL, LOCK_WAIT_MAX};
use super::redis_conn::Conn;
use super::redis_keys::Keys;
use super::StoreError;
use ::redis::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Entries the lock script returns at most; the rest are read after it.
const LOCK_READ_MAX: usize = 5000;

/// Takes the lock and reads what the caller has not seen. KEYS: lock, log.
/// ARGV: token, TTL (ms), cursor, count. Returns `{0, pttl}` while another
/// holder has the lock, else `{1, entries}`.
const LOCK: &str = r#"
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, redis.call('XRANGE', KEYS[2], '(' .. ARGV[3], '+', 'COUNT', ARGV[4])}
"#;

/// Appends under the lock and releases it. KEYS: lock, log, last append.
/// ARGV: token, cursor, entries. Returns `{0}` when the lock is not this
/// token's (nothing appended), else `{1, last id, entries after the cursor
/// appended by others}`.
const APPEND_UNLOCK: &str = r#"
if #ARGV == 2 then
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('DEL', KEYS[1])
  end
  local others = redis.call('XRANGE', KEYS[2], '(' .. ARGV[2], '+')
  local last = ARGV[2]
  if #others > 0 then last = others[#others][1] end
  return {1, last, others}
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  local done = redis.call('GET', KEYS[3])
  if done then
    local t, first, last = string.match(done, '^(%S+) (%S+) (%S+)$')
    if t == ARGV[1] then
      return {1, last, redis.call('XRANGE', KEYS[2], '(' .. ARGV[2], '(' .. first)}
    end
  end
  return {0}
end
local others = redis.call('XRANGE', KEYS[2], '(' .. ARGV[2], '+')
local first, last
for i = 3, #ARGV do
  last = redis.call('XADD', KEYS[2], '*', 'e', ARGV[i])
  if not first then first = last end
end
redis.call('SET', KEYS[3], ARGV[1] .. ' ' .. first .. ' ' .. last, 'PX', 60000)
redis.call('DEL', KEYS[1])
return {1, last, others}
"#;

/// Appends without the lock. KEYS: log. ARGV: entries. Returns the last id.
const APPEND: &str = r#"
local last = ''
for i = 1, #ARGV do
  last = redis.call('XADD', KEYS[1], '*', 'e', ARGV[i])
end
return last
"#;

/// The decision log of one crawl (see the module docs).
pub struct RedisLog {
    conn: Arc<Conn>,
    name: String,
    /// `{N}:dlock`, `{N}:dlog`, `{N}:dlast`.
    keys: [String; 3],
    ttl: std::time::Duration,
    /// Lock scripts sent (each try while another holder has the lock counts).
    lock_tries: AtomicU64,
    /// Locks taken.
    locks: AtomicU64,
}

impl RedisLog {
    pub(super) fn new(conn: Arc<Conn>, name: &str) -> Self {
        RedisLog {
            conn,
            name: name.to_string(),
            keys: Keys::new(name).decision_log(),
            ttl: LOCK_TTL,
            lock_tries: AtomicU64::new(0),
            locks: AtomicU64::new(0),
        }
    }

    /// This log with another lock TTL (tests of fencing).
    #[cfg(test)]
    pub(super) fn with_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Locks taken and lock scripts sent by this process (each round trip
    /// that found the lock held by another counts one more script).
    pub fn lock_counts(&self) -> (u64, u64) {
        (
            self.locks.load(Ordering::Relaxed),
            self.lock_tries.load(Ordering::Relaxed),
        )
    }

    fn bad(&self, v: &Value) -> StoreError {
        StoreError::Backend(format!("redis: decision log {}: unexpected reply {v:?}", self.name))
    }

    /// `XRANGE` replies as entries.
    fn entries(&self, v: &Value) -> Result<LogEntries, StoreError> {
        let Value::Array(items) = v else {
            return Err(self.bad(v));
        };
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            let parsed = match it {
                Value::Array(pair) => match pair.as_slice() {
                    [id, Value::Array(fields)] => match (id, fields.as_slice()) {
                        (Value::BulkString(id), [_, Value::BulkString(e)]) => std::str::from_utf8(id)
                            .ok()
                            .map(|id| (Cursor(id.to_string()), e.clone())),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            out.push(parsed.ok_or_else(|| self.bad(it))?);
        }
        Ok(out)
    }

    fn cursor(&self, v: &Value) -> Result<Cursor, StoreError> {
        match v {
            Value::BulkString(b) => std::str::from_utf8(b)
                .map(|s| Cursor(s.to_string()))
                .map_err(|_| self.bad(v)),
            Value::SimpleString(s) => Ok(Cursor(s.clone())),
            _ => Err(self.bad(v)),
        }
    }
}

impl DecisionLog for RedisLog {
    fn lock(&self, after: &Cursor) -> Result<(Lease, LogEntries), StoreError> {
        let lease = Lease::fresh();
        let started = std::time::Instant::now();
        let mut wait = std::time::Duration::from_millis(1);
        let ttl_ms = self.ttl.as_millis().max(1) as u64;
        loop {
            self.lock_tries.fetch_add(1, Ordering::Relaxed);
            let v: Value = self.conn.with(|c| {
                ::redis::cmd("EVAL")
                    .arg(LOCK)
                    .arg(2)
                    .arg(&self.keys[0])
                    .arg(&self.keys[1])
                    .arg(&lease.token)
                    .arg(ttl_ms)
                    .arg(after.as_str())
                    .arg(LOCK_READ_MAX)
                    .query(c)
            })?;
            let parts = match &v {
                Value::Array(p) => p,
                _ => return Err(self.bad(&v)),
            };
            match parts.as_slice() {
                [Value::Int(1), entries] => {
                    self.locks.fetch_add(1, Ordering::Relaxed);
                    let mut entries = self.entries(entries)?;
                    // More than one reply's worth: the rest, under the lock.
                    if entries.len() >= LOCK_READ_MAX {
                        let last = entries.last().map(|e| e.0.clone()).unwrap_or_else(|| after.clone());
                        entries.extend(self.read_all_after(&last)?);
                    }
                    return Ok((lease, entries));
                }
                [Value::Int(0), ..] => {
                    if started.elapsed() >= LOCK_WAIT_MAX {
                        return Err(StoreError::Backend(format!(
                            "redis: decision log {}: its lock stayed held for {} s",
                            self.name,
                            LOCK_WAIT_MAX.as_secs()
                        )));
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(std::time::Duration::from_millis(8));
                }
                _ => return Err(self.bad(&v)),
            }
        }
    }

    fn append_unlock(
        &self,
        lease: Lease,
        after: &Cursor,
        entries: &[Vec<u8>],
    ) -> Result<(LogEntries, Cursor), StoreError> {
        let v: Value = self.conn.with(|c| {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(APPEND_UNLOCK)
                .arg(3)
                .arg(&self.keys)
                .arg(&lease.token)
                .arg(after.as_str());
            for e in entries {
                cmd.arg(e.as_slice());
            }
            cmd.query(c)
        })?;
        let parts = match &v {
            Value::Array(p) => p,
            _ => return Err(self.bad(&v)),
        };
        match parts.as_slice() {
            [Value::Int(1), last, others] => Ok((self.entries(others)?, self.cursor(last)?)),
            [Value::Int(0)] => Err(StoreError::LockLost { log: self.name.clone() }),
            _ => Err(self.bad(&v)),
        }
    }

    fn append(&self, entries: &[Vec<u8>]) -> Result<Cursor, StoreError> {
        if entries.is_empty() {
            return Err(StoreError::Backend("decision log: nothing to append".into()));
        }
        let v: Value = self.conn.with(|c| {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(APPEND).arg(1).arg(&self.keys[1]);
            for e in entries {
                cmd.arg(e.as_slice());
            }
            cmd.query(c)
        })?;
        self.cursor(&v)
    }

    fn read_after(&self, after: &Cursor, limit: usize) -> Result<LogEntries, StoreError> {
        let v: Value = self.conn.with(|c| {
            ::redis::cmd("XRANGE")
                .arg(&self.keys[1])
                .arg(format!("({after}"))
                .arg("+")
                .arg("COUNT")
                .arg(limit.max(1))
                .query(c)
        })?;
        self.entries(&v)
    }
}
