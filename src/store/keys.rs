//! The key layout (see the table in the module docs of [`super`]): one-byte
//! prefixes, key builders, and the helpers that decode a value or report it
//! corrupt naming its key.

use super::codec::{self, show_key, Dec};
use super::{PageId, QueueKey, StoreError};

pub(super) const Q: u8 = b'q';
pub(super) const S: u8 = b's';
pub(super) const P: u8 = b'p';
pub(super) const B: u8 = b'b';
pub(super) const HOST: u8 = b'H';
pub(super) const PAGES_COUNTER: &[u8] = b"cpages";

pub(super) fn k1(prefix: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + rest.len());
    k.push(prefix);
    k.extend_from_slice(rest);
    k
}

pub(super) fn id_key(prefix: u8, id: PageId) -> Vec<u8> {
    k1(prefix, &id.to_be_bytes())
}

pub(super) fn host_prefix(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + host.len());
    k.push(Q);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k
}

pub(super) fn queue_key(host: &str, key: QueueKey) -> Vec<u8> {
    let mut k = host_prefix(host);
    k.extend_from_slice(&key.rank.to_be_bytes());
    k.extend_from_slice(&key.seq.to_be_bytes());
    k
}

pub(super) fn corrupt(key: &[u8], reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: show_key(key),
        reason: reason.into(),
    }
}

pub(super) fn decode<T>(
    key: &[u8],
    value: &[u8],
    f: impl FnOnce(&mut Dec<'_>) -> codec::DecResult<T>,
) -> Result<T, StoreError> {
    let mut d = Dec::new(value);
    let v = f(&mut d).map_err(|r| corrupt(key, r))?;
    d.finish().map_err(|r| corrupt(key, r))?;
    Ok(v)
}

pub(super) fn be_u64(key: &[u8], v: &[u8]) -> Result<u64, StoreError> {
    decode(key, v, |d| d.u64())
}
