//! The key layout of [`super::RedisStore`] (see the table in its module
//! docs): key builders under one crawl's namespace, the per-slot write
//! groups, and the Lua scripts that apply one group atomically.

use super::codec::show_key;
use super::keys::decode;
use super::records::dec_state;
use super::types::Completion;
use super::{PageId, QueueKey, StoreError, UrlState};
use ::redis::Value;
use std::collections::BTreeMap;

/// The layout version a [`super::RedisStore`] writes into its `meta` hash
/// (`format_version`, u32 big-endian), checked at open.
pub(super) const REDIS_FORMAT_VERSION: u32 = 2;

/// Page ids per page-index bucket (`{N|pi|id / PAGE_BUCKET}`).
pub(super) const PAGE_BUCKET: u64 = 1024;

/// Host registry shards (`{N|hs|0..HOST_SHARDS}`).
pub(super) const HOST_SHARDS: u64 = 16;

/// The keys of one crawl (`N`, its name). Every key starts with a hash tag
/// `{...}`, so Redis Cluster places keys with the same tag in one slot.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    name: String,
}

impl Keys {
    pub(super) fn new(name: &str) -> Keys {
        Keys { name: name.to_string() }
    }

    /// `{N}:meta`: named values (format version, seeds, crawl id).
    pub(super) fn meta(&self) -> String {
        format!("{{{}}}:meta", self.name)
    }

    /// `{N}:ids`: the last page id handed out (`INCRBY` allocates).
    pub(super) fn ids(&self) -> String {
        format!("{{{}}}:ids", self.name)
    }

    /// `{N}:pages`: pages recorded (first fetches).
    pub(super) fn pages(&self) -> String {
        format!("{{{}}}:pages", self.name)
    }

    /// `{N}:fetches`: fetches the crawl's workers took from its budget
    /// (`crawl.max_pages`).
    pub(super) fn fetches(&self) -> String {
        format!("{{{}}}:fetches", self.name)
    }

    /// `{N}:workers`: hash worker id → when its heartbeat expires (ms
    /// since the Unix epoch).
    pub(super) fn workers(&self) -> String {
        format!("{{{}}}:workers", self.name)
    }

    /// `{N}:dlock`: the decision log's lock (its holder's token, with a
    /// TTL); `{N}:dlog`: the decision log (a stream, one field `e` per
    /// entry); `{N}:dlast`: the last locked append (`token first last`), so
    /// a retried append finds its work done. All in the slot of `{N}`.
    pub(super) fn decision_log(&self) -> [String; 3] {
        ["dlock", "dlog", "dlast"].map(|k| format!("{{{}}}:{k}", self.name))
    }

    /// `{N|hs|k}`: the set of host keys of shard `k`.
    pub(super) fn host_shard(&self, k: u64) -> String {
        format!("{{{}|hs|{k}}}", self.name)
    }

    /// The shard of `host` in the host registry.
    pub(super) fn shard_of(host: &str) -> u64 {
        crate::hash::fnv1a(host.as_bytes()) % HOST_SHARDS
    }

    /// `{N|pi|b}`: page id → host key, for the ids of bucket `b`.
    pub(super) fn page_index(&self, id: PageId) -> String {
        format!("{{{}|pi|{}}}", self.name, id / PAGE_BUCKET)
    }

    /// `{N|t|i|prefix}`: bucket `prefix` (lowercase hex) of the shared
    /// near-duplicate index's table `i` (see `redis_tables.rs`): every
    /// bucket is its own slot, so the tables spread over the cluster.
    pub(super) fn bucket(&self, table: u8, prefix: u64) -> String {
        format!("{{{}|t|{table}|{prefix:x}}}", self.name)
    }

    /// `{N|h|host}:lease` (the worker holding the host's lease, with a TTL)
    /// and `{N|h|host}:next` (when the host may be fetched next, ms since
    /// the Unix epoch, written by the worker that gives the lease up): in
    /// the host's slot, apart from [`HostKeys`] so that the per-URL calls
    /// do not build them.
    pub(super) fn host_lease(&self, host: &str) -> (String, String) {
        let tag = format!("{{{}|h|{host}}}", self.name);
        (format!("{tag}:lease"), format!("{tag}:next"))
    }

    /// The keys of one host: all in the slot of the tag `{N|h|host}`.
    pub(super) fn host(&self, host: &str) -> HostKeys {
        let tag = format!("{{{}|h|{host}}}", self.name);
        HostKeys {
            queue: format!("{tag}:q"),
            values: format!("{tag}:qv"),
            seen: format!("{tag}:s"),
            stats: format!("{tag}:st"),
            pages: format!("{tag}:p"),
            bodies: format!("{tag}:b"),
        }
    }
}

/// The keys of one host (one slot).
#[derive(Debug, Clone)]
pub(super) struct HostKeys {
    /// Sorted set, every score 0, members [`member`]: the queue in lexical
    /// (= rank, then sequence) order.
    pub(super) queue: String,
    /// Hash member → queued URL.
    pub(super) values: String,
    /// Hash canonical URL → URL state (the URLs whose host key is this host).
    pub(super) seen: String,
    /// The host's stats.
    pub(super) stats: String,
    /// Hash page id (u64 BE) → page record.
    pub(super) pages: String,
    /// Hash page id (u64 BE) → body reference.
    pub(super) bodies: String,
}

/// The host key a canonical URL's seen state lives under: the host key of
/// the URL (as the frontier keys it), or `""` for a string that is not an
/// http(s) URL.
pub(super) fn seen_host(canonical: &str) -> &str {
    crate::host::host_key_of_serialized(canonical).unwrap_or("")
}

/// A queue entry's member in the host's sorted set: rank then sequence,
/// big-endian, so lexical order is priority order (best first), FIFO on ties.
pub(super) fn member(key: QueueKey) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(&key.rank.to_be_bytes());
    m[8..].copy_from_slice(&key.seq.to_be_bytes());
    m
}

/// [`StoreError::Corrupt`] for a Redis value: `what` and the key or field.
pub(super) fn corrupt_at(what: &str, key: &[u8], reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: format!("{what} {}", show_key(key)),
        reason: reason.into(),
    }
}

/// One write of a [`Groups`] entry.
#[derive(Debug, Clone)]
pub(super) enum Op {
    /// `HSET key field value`.
    HSet(usize, Vec<u8>, Vec<u8>),
    /// `HDEL key field`.
    HDel(usize, Vec<u8>),
    /// `ZADD key 0 member`.
    ZAdd(usize, Vec<u8>),
    /// `ZREM key member`.
    ZRem(usize, Vec<u8>),
    /// Queue a new URL unless it is in the seen-set already: `HSETNX seen
    /// url state`, and only when that set it, `ZADD queue 0 member` and
    /// `HSET values member value` (seen, url, state, queue, values,
    /// member, value). Two processes offering the same new URL at once
    /// queue it once.
    QueueNew {
        seen: usize,
        url: Vec<u8>,
        state: Vec<u8>,
        queue: usize,
        values: usize,
        member: Vec<u8>,
        value: Vec<u8>,
    },
}

/// The writes of one slot: its keys and their ops, in order.
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) keys: Vec<String>,
    pub(super) ops: Vec<Op>,
}

impl Group {
    /// The index of `key` in this group's keys.
    pub(super) fn key(&mut self, key: &str) -> usize {
        match self.keys.iter().position(|k| k == key) {
            Some(i) => i,
            None => {
                self.keys.push(key.to_string());
                self.keys.len() - 1
            }
        }
    }

    /// The `EVAL` of [`APPLY`] that performs this group atomically.
    pub(super) fn eval(&self) -> ::redis::Cmd {
        let mut c = ::redis::cmd("EVAL");
        c.arg(APPLY).arg(self.keys.len()).arg(&self.keys);
        for op in &self.ops {
            match op {
                Op::HSet(k, f, v) => c.arg("hset").arg(k + 1).arg(f).arg(v),
                Op::HDel(k, f) => c.arg("hdel").arg(k + 1).arg(f),
                Op::ZAdd(k, m) => c.arg("zadd").arg(k + 1).arg(m),
                Op::ZRem(k, m) => c.arg("zrem").arg(k + 1).arg(m),
                Op::QueueNew {
                    seen,
                    url,
                    state,
                    queue,
                    values,
                    member,
                    value,
                } => c
                    .arg("qnew")
                    .arg(seen + 1)
                    .arg(url)
                    .arg(state)
                    .arg(queue + 1)
                    .arg(values + 1)
                    .arg(member)
                    .arg(value),
            };
        }
        c
    }
}

/// Writes grouped by host (one slot each): each group is one atomic `EVAL`.
pub(super) type Groups = BTreeMap<String, Group>;

/// Applies a group's ops in order, atomically (one script on one slot).
/// ARGV: `op, key index, field or member[, value]` repeated; `qnew`:
/// seen key index, URL, state, queue key index, values key index, member,
/// value ([`Op::QueueNew`]).
pub(super) const APPLY: &str = r#"
local i = 1
while i <= #ARGV do
  local op, k = ARGV[i], KEYS[tonumber(ARGV[i + 1])]
  if op == 'hset' then
    redis.call('HSET', k, ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'hdel' then
    redis.call('HDEL', k, ARGV[i + 2]); i = i + 3
  elseif op == 'zadd' then
    redis.call('ZADD', k, 0, ARGV[i + 2]); i = i + 3
  elseif op == 'zrem' then
    redis.call('ZREM', k, ARGV[i + 2]); i = i + 3
  elseif op == 'qnew' then
    if redis.call('HSETNX', k, ARGV[i + 2], ARGV[i + 3]) == 1 then
      redis.call('ZADD', KEYS[tonumber(ARGV[i + 4])], 0, ARGV[i + 6])
      redis.call('HSET', KEYS[tonumber(ARGV[i + 5])], ARGV[i + 6], ARGV[i + 7])
    end
    i = i + 8
  else
    return redis.error_reply('simcrawl: unknown op ' .. tostring(op))
  end
end
return 1
"#;

/// Records one host's pages atomically. KEYS: seen, queue, queue values,
/// stats, pages, bodies ([`HostKeys`]). ARGV: the host's stats, then per
/// page: canonical URL, its `Done` state, `0` (first fetch) or `1`
/// (revisit), page id (u64 BE), page record, body reference (`""`: none),
/// queue member.
///
/// Every URL is checked before anything is written: a URL done as another
/// page refuses the whole host part (`{-1, index, state}`), as does a
/// revisit of a URL that is not done (`{-2, index}`). A first fetch already
/// done as this very page was recorded by an earlier attempt of the same
/// commit and is skipped, so a retried commit changes nothing twice.
/// Returns `{first fetches recorded}`.
pub(super) const COMPLETE: &str = r#"
local n = (#ARGV - 1) / 7
local skip = {}
for j = 0, n - 1 do
  local b = 2 + j * 7
  local cur = redis.call('HGET', KEYS[1], ARGV[b])
  if cur and string.byte(cur, 1) == 2 then
    if cur ~= ARGV[b + 1] then
      return {-1, j, cur}
    end
    if ARGV[b + 2] == '0' then
      skip[j] = true
    end
  elseif ARGV[b + 2] == '1' then
    return {-2, j}
  end
end
local added = 0
for j = 0, n - 1 do
  if not skip[j] then
    local b = 2 + j * 7
    redis.call('HSET', KEYS[5], ARGV[b + 3], ARGV[b + 4])
    if ARGV[b + 5] ~= '' then
      redis.call('HSET', KEYS[6], ARGV[b + 3], ARGV[b + 5])
    end
    redis.call('HSET', KEYS[1], ARGV[b], ARGV[b + 1])
    redis.call('ZREM', KEYS[2], ARGV[b + 6])
    redis.call('HDEL', KEYS[3], ARGV[b + 6])
    if ARGV[b + 2] == '0' then
      added = added + 1
    end
  end
end
redis.call('SET', KEYS[4], ARGV[1])
return {added}
"#;

/// A recorded state that refuses recording `c`: `Ok(true)` when `c` is
/// already recorded by an earlier attempt of the same commit.
pub(super) fn check_done(c: &Completion<'_>, state: Option<&UrlState>) -> Result<bool, StoreError> {
    let (url, page) = (c.url, c.page);
    match state {
        Some(UrlState::Done(id)) if *id == page.id => Ok(url.revisit.is_none()),
        Some(UrlState::Done(id)) => Err(StoreError::AlreadyDone {
            url: url.canonical.clone(),
            page: *id,
        }),
        _ if url.revisit.is_some() => Err(corrupt_at(
            "url",
            url.canonical.as_bytes(),
            "a revisit of a URL the seen-set does not have as done",
        )),
        _ => Ok(false),
    }
}

/// The result of one [`COMPLETE`] script: `Ok(first fetches recorded)`.
pub(super) fn complete_result(v: Value, items: &[&Completion<'_>]) -> Result<u64, StoreError> {
    let bad = || StoreError::Backend(format!("redis: unexpected script result {v:?}"));
    let Value::Array(parts) = &v else { return Err(bad()) };
    let int = |i: usize| match parts.get(i) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    match int(0) {
        Some(n) if n >= 0 => Ok(n as u64),
        Some(-1) => {
            let j = int(1).and_then(|j| usize::try_from(j).ok()).ok_or_else(bad)?;
            let it = items.get(j).ok_or_else(bad)?;
            let page = match parts.get(2) {
                Some(Value::BulkString(s)) => match decode(it.url.canonical.as_bytes(), s, dec_state)? {
                    UrlState::Done(id) => id,
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            };
            Err(StoreError::AlreadyDone {
                url: it.url.canonical.clone(),
                page,
            })
        }
        Some(-2) => {
            let j = int(1).and_then(|j| usize::try_from(j).ok()).ok_or_else(bad)?;
            let it = items.get(j).ok_or_else(bad)?;
            check_done(it, None).map(|_| 0)
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_order_is_key_order() {
        let keys = [
            QueueKey { rank: 1, seq: 9 },
            QueueKey { rank: 1, seq: 10 },
            QueueKey { rank: 2, seq: 0 },
            QueueKey { rank: u64::MAX, seq: 1 },
        ];
        for w in keys.windows(2) {
            assert!(member(w[0]) < member(w[1]));
            assert!(w[0] < w[1]);
        }
    }

    #[test]
    fn one_host_shares_one_tag() {
        let k = Keys::new("c1");
        let h = k.host("a.test:8080");
        for key in [&h.queue, &h.values, &h.seen, &h.stats, &h.pages, &h.bodies] {
            assert!(key.starts_with("{c1|h|a.test:8080}:"), "{key}");
        }
        assert_eq!(k.page_index(1023), "{c1|pi|0}");
        assert_eq!(k.page_index(1024), "{c1|pi|1}");
        assert_eq!(seen_host("http://a.test:8080/x?y"), "a.test:8080");
        assert_eq!(seen_host("not a url"), "");
        assert!(Keys::shard_of("a.test") < HOST_SHARDS);
    }
}
