//! The [`ContentOwners`] of a crawl on Redis Cluster: hashes
//! `{N|x|b|hh}` (body) and `{N|x|t|hh}` (text), where `hh` is the key's
//! first byte in hex (256 hashes per map, spread over the slots), each
//! field a hash's 16-byte key and its value the owner's page id (u64 BE).
//! [`ContentOwners::owners`] is one `HGET` per key and
//! [`ContentOwners::change`] one compare-and-set script per change, each
//! call one cluster pipeline (one round trip per node). A retried change
//! finds its `from` gone and does nothing.

use super::content_owners::{ContentOwners, HashKind, OwnerChange, OwnerKey};
use super::redis_conn::Conn;
use super::StoreError;
use ::redis::cluster::cluster_pipe;
use std::sync::Arc;

const CHANGE: &str = r"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if (v == false and ARGV[2] == '') or v == ARGV[2] then
  if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
  return 1
end
return 0
";

/// The shared exact-duplicate maps of one crawl on Redis Cluster.
pub struct RedisOwners {
    conn: Arc<Conn>,
    name: String,
}

impl RedisOwners {
    pub(super) fn new(conn: Arc<Conn>, name: &str) -> Self {
        RedisOwners {
            conn,
            name: name.to_string(),
        }
    }

    fn map_key(&self, kind: HashKind, key: &OwnerKey) -> String {
        let k = match kind {
            HashKind::Body => 'b',
            HashKind::Text => 't',
        };
        format!("{{{}|x|{k}|{:02x}}}", self.name, key[0])
    }
}

fn id_bytes(id: Option<u64>) -> Vec<u8> {
    id.map_or_else(Vec::new, |i| i.to_be_bytes().to_vec())
}

impl ContentOwners for RedisOwners {
    fn owners(&self, keys: &[(HashKind, OwnerKey)]) -> Result<Vec<Option<u64>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = cluster_pipe();
        for (kind, key) in keys {
            p.cmd("HGET").arg(self.map_key(*kind, key)).arg(&key[..]);
        }
        let raw: Vec<Option<Vec<u8>>> = self.conn.with(|c| p.query(c))?;
        raw.into_iter()
            .map(|v| match v {
                None => Ok(None),
                Some(b) => <[u8; 8]>::try_from(b.as_slice())
                    .map(|a| Some(u64::from_be_bytes(a)))
                    .map_err(|_| StoreError::Backend(format!("redis: an exact-duplicate owner of {} bytes", b.len()))),
            })
            .collect()
    }

    fn change(&self, changes: &[OwnerChange]) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut p = cluster_pipe();
        for c in changes {
            p.cmd("EVAL")
                .arg(CHANGE)
                .arg(1)
                .arg(self.map_key(c.kind, &c.key))
                .arg(&c.key[..])
                .arg(id_bytes(c.from))
                .arg(id_bytes(c.to))
                .ignore();
        }
        self.conn.with(|c| p.exec(c))
    }
}
