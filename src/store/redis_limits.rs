//! The [`SharedLimits`] of a crawl on Redis Cluster, each one script on
//! one key, timed by the Redis server's clock (`TIME`), so that workers on
//! machines whose clocks differ agree:
//!
//! - `{N|ip|addr}`: a sorted set of the slot holders of server address
//!   `addr`, scored by when each holder's slot expires (ms). Taking a slot
//!   drops the expired holders, then adds the holder if fewer than `max`
//!   remain (a retried call finds its holder there and keeps it).
//! - `{N}:rate`: the crawl's theoretical arrival time (µs, the generic
//!   cell rate algorithm): a request may start when the time has reached
//!   it, and moves it on by 1/`per_sec`. No burst: requests are spaced.

use super::limits::SharedLimits;
use super::redis_conn::Conn;
use super::StoreError;
use std::sync::Arc;
use std::time::Duration;

const TAKE_SLOT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
return 0
";

const TAKE_REQUEST: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat > now then return tat - now end
redis.call('SET', KEYS[1], tostring(now + interval), 'PX', math.floor(interval / 1000) + 1000)
return 0
";

/// The crawl-wide politeness limits of one crawl on Redis Cluster.
pub struct RedisLimits {
    conn: Arc<Conn>,
    name: String,
}

impl RedisLimits {
    pub(super) fn new(conn: Arc<Conn>, name: &str) -> Self {
        RedisLimits {
            conn,
            name: name.to_string(),
        }
    }

    fn slot_key(&self, addr: &str) -> String {
        format!("{{{}|ip|{addr}}}", self.name)
    }
}

impl SharedLimits for RedisLimits {
    fn take_slot(&self, addr: &str, max: usize, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let key = self.slot_key(addr);
        let ttl = ttl.as_millis().max(1) as u64;
        let got: i64 = self.conn.with(|c| {
            ::redis::cmd("EVAL")
                .arg(TAKE_SLOT)
                .arg(1)
                .arg(&key)
                .arg(max)
                .arg(ttl)
                .arg(holder)
                .query(c)
        })?;
        Ok(got == 1)
    }

    fn free_slot(&self, addr: &str, holder: &str) -> Result<(), StoreError> {
        let key = self.slot_key(addr);
        self.conn
            .with(|c| ::redis::cmd("ZREM").arg(&key).arg(holder).query::<i64>(c))
            .map(|_| ())
    }

    fn take_request(&self, per_sec: u32) -> Result<Duration, StoreError> {
        let key = format!("{{{}}}:rate", self.name);
        let interval = 1_000_000 / u64::from(per_sec.max(1));
        let wait: i64 = self.conn.with(|c| {
            ::redis::cmd("EVAL")
                .arg(TAKE_REQUEST)
                .arg(1)
                .arg(&key)
                .arg(interval)
                .query(c)
        })?;
        Ok(Duration::from_micros(wait.max(0) as u64))
    }
}
