//! [`RedisTables`]: the [`TableBuckets`] of a crawl on Redis Cluster. A
//! bucket is a string key `{N|t|i|prefix}` (its own hash tag, so the
//! buckets of every table spread over the cluster's slots) holding its
//! 16-byte entries back to back: [`TableBuckets::add`] is one `APPEND` per
//! entry, [`TableBuckets::fetch`] one `GET` per bucket, each call one
//! cluster pipeline (one round trip per node). An `APPEND` retried after a
//! dropped connection may store an entry twice; readers ignore repeats.

use super::redis_conn::Conn;
use super::redis_keys::Keys;
use super::tables::{decode_entries, encode_entry, Bucket, BucketEntry, TableBuckets};
use super::StoreError;
use ::redis::cluster::cluster_pipe;
use std::sync::Arc;

/// The shared near-duplicate tables of one crawl on Redis Cluster.
pub struct RedisTables {
    conn: Arc<Conn>,
    keys: Keys,
}

impl RedisTables {
    pub(super) fn new(conn: Arc<Conn>, name: &str) -> Self {
        RedisTables {
            conn,
            keys: Keys::new(name),
        }
    }
}

impl TableBuckets for RedisTables {
    fn fetch(&self, buckets: &[Bucket]) -> Result<Vec<Vec<BucketEntry>>, StoreError> {
        if buckets.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = buckets.iter().map(|b| self.keys.bucket(b.table, b.prefix)).collect();
        let mut p = cluster_pipe();
        for k in &keys {
            p.cmd("GET").arg(k);
        }
        let raw: Vec<Option<Vec<u8>>> = self.conn.with(|c| p.query(c))?;
        raw.into_iter()
            .zip(&keys)
            .map(|(v, k)| {
                decode_entries(v.as_deref().unwrap_or_default())
                    .map_err(|e| StoreError::Backend(format!("redis: near-duplicate table bucket {k}: {e}")))
            })
            .collect()
    }

    fn add(&self, entries: &[(Bucket, BucketEntry)]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut p = cluster_pipe();
        for (b, e) in entries {
            p.cmd("APPEND")
                .arg(self.keys.bucket(b.table, b.prefix))
                .arg(&encode_entry(*e)[..])
                .ignore();
        }
        self.conn.with(|c| p.exec(c))
    }
}
