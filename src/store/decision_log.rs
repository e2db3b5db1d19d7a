//! [`DecisionLog`]: the crawl-wide, totally ordered log of opaque entries
//! that the deciders of several worker processes share (what an entry
//! means is `crate::dedup::replica`'s business), written under a fenced
//! lock; [`MemLog`], an in-process implementation for tests. The Redis
//! implementation is in `redis_log.rs`.

use super::StoreError;
use parking_lot::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A position in a [`DecisionLog`]: the id of an entry, or
/// [`Cursor::start`], before the first. Opaque; only the log compares them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor(pub(crate) String);

impl Cursor {
    /// Before the first entry (reading after it reads the whole log).
    pub fn start() -> Self {
        Cursor("0-0".into())
    }

    /// The entry id as the log writes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A held lock of a [`DecisionLog`]: its holder's token, handed back to
/// [`DecisionLog::append_unlock`] (which consumes it).
#[derive(Debug)]
pub struct Lease {
    pub(crate) token: String,
}

impl Lease {
    /// A fresh token no other lock holder has: a hash of this process, the
    /// time, a counter and the thread.
    pub(crate) fn fresh() -> Lease {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!(
            "{}:{nanos}:{}:{:?}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::thread::current().id()
        );
        let hash = blake3::hash(seed.as_bytes());
        Lease {
            token: hash.to_hex()[..32].to_string(),
        }
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Entries read from a log, each with its cursor, in log order.
pub type LogEntries = Vec<(Cursor, Vec<u8>)>;

/// A totally ordered log of opaque byte entries shared by the worker
/// processes of one crawl, with one lock: entries that decide something are
/// appended only by the lock's holder, after it has read every entry before
/// them ([`DecisionLog::lock`] returns them), so every reader sees each
/// decision after everything it was decided from. The lock expires (a
/// holder that dies frees it); an append by a holder whose lock expired is
/// refused ([`StoreError::LockLost`], fencing). Entries that decide nothing
/// (commit markers) are appended without the lock.
pub trait DecisionLog: Send + Sync {
    /// Take the lock, waiting while another holder has it, and return with
    /// it every entry appended after `after`.
    fn lock(&self, after: &Cursor) -> Result<(Lease, LogEntries), StoreError>;
    /// Append `entries` (in order, together) if `lease` still holds the
    /// lock, and release it. Returns the entries appended by others without
    /// the lock after `after` (the caller's position: everything it has
    /// applied) and before these, and the cursor of the last entry this
    /// call saw (the last appended; with nothing to append, the last
    /// returned or `after`). [`StoreError::LockLost`] when the lock expired
    /// or another holder has it: nothing is appended.
    fn append_unlock(
        &self,
        lease: Lease,
        after: &Cursor,
        entries: &[Vec<u8>],
    ) -> Result<(LogEntries, Cursor), StoreError>;
    /// Append `entries` without the lock (entries that decide nothing);
    /// returns the cursor of the last.
    fn append(&self, entries: &[Vec<u8>]) -> Result<Cursor, StoreError>;
    /// Up to `limit` entries after `after`, in order, without the lock.
    fn read_after(&self, after: &Cursor, limit: usize) -> Result<LogEntries, StoreError>;
    /// Every entry after `after` ([`DecisionLog::read_after`] repeated).
    fn read_all_after(&self, after: &Cursor) -> Result<LogEntries, StoreError> {
        let mut all = LogEntries::new();
        let mut at = after.clone();
        loop {
            let chunk = self.read_after(&at, READ_CHUNK)?;
            let full = chunk.len() >= READ_CHUNK;
            if let Some((c, _)) = chunk.last() {
                at = c.clone();
            }
            all.extend(chunk);
            if !full {
                return Ok(all);
            }
        }
    }
}

/// Entries read per round trip by [`DecisionLog::read_all_after`].
pub const READ_CHUNK: usize = 2000;

/// How long a lock lasts after it is taken unless released
/// ([`DecisionLog::append_unlock`]).
pub const LOCK_TTL: Duration = Duration::from_secs(10);

/// How long [`DecisionLog::lock`] waits for another holder at most (a
/// holder that died frees the lock after [`LOCK_TTL`]).
pub const LOCK_WAIT_MAX: Duration = Duration::from_secs(60);

/// A [`DecisionLog`] in memory, shared by the threads of one process
/// (tests). `ttl` is the lock's lifetime.
pub struct MemLog {
    state: Mutex<MemState>,
    freed: Condvar,
    ttl: Duration,
}

#[derive(Default)]
struct MemState {
    entries: Vec<Vec<u8>>,
    /// The holder's token and when its lock expires.
    lock: Option<(String, Instant)>,
}

impl MemLog {
    /// An empty log whose lock lasts [`LOCK_TTL`].
    pub fn new() -> Self {
        Self::with_ttl(LOCK_TTL)
    }

    /// An empty log whose lock lasts `ttl`.
    pub fn with_ttl(ttl: Duration) -> Self {
        MemLog {
            state: Mutex::new(MemState::default()),
            freed: Condvar::new(),
            ttl,
        }
    }

    fn cursor(n: usize) -> Cursor {
        Cursor(format!("0-{n}"))
    }

    /// The index of the first entry after `c`.
    fn first_after(c: &Cursor) -> Result<usize, StoreError> {
        c.0.strip_prefix("0-")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| StoreError::Backend(format!("decision log: bad cursor {c}")))
    }

    fn entries_from(st: &MemState, from: usize, to: usize) -> LogEntries {
        (from..to.min(st.entries.len()))
            .map(|i| (Self::cursor(i + 1), st.entries[i].clone()))
            .collect()
    }
}

impl Default for MemLog {
    fn default() -> Self {
        Self::new()
    }
}

impl DecisionLog for MemLog {
    fn lock(&self, after: &Cursor) -> Result<(Lease, LogEntries), StoreError> {
        let from = Self::first_after(after)?;
        let lease = Lease::fresh();
        let mut st = self.state.lock();
        let deadline = Instant::now() + LOCK_WAIT_MAX;
        loop {
            let now = Instant::now();
            match &st.lock {
                Some((_, until)) if *until > now => {
                    if now >= deadline {
                        return Err(StoreError::Backend("decision log: lock wait timed out".into()));
                    }
                    let wait = (*until).min(deadline) - now;
                    self.freed.wait_for(&mut st, wait);
                }
                _ => break,
            }
        }
        st.lock = Some((lease.token.clone(), Instant::now() + self.ttl));
        let entries = Self::entries_from(&st, from, usize::MAX);
        Ok((lease, entries))
    }

    fn append_unlock(
        &self,
        lease: Lease,
        after: &Cursor,
        entries: &[Vec<u8>],
    ) -> Result<(LogEntries, Cursor), StoreError> {
        let from = Self::first_after(after)?;
        let mut st = self.state.lock();
        match &st.lock {
            Some((t, until)) if *t == lease.token && *until > Instant::now() => {}
            _ => return Err(StoreError::LockLost { log: "memory".into() }),
        }
        let others = Self::entries_from(&st, from, usize::MAX);
        st.entries.extend(entries.iter().cloned());
        st.lock = None;
        let last = match others.last() {
            _ if !entries.is_empty() => Self::cursor(st.entries.len()),
            Some((c, _)) => c.clone(),
            None => after.clone(),
        };
        drop(st);
        self.freed.notify_one();
        Ok((others, last))
    }

    fn append(&self, entries: &[Vec<u8>]) -> Result<Cursor, StoreError> {
        let mut st = self.state.lock();
        st.entries.extend(entries.iter().cloned());
        Ok(Self::cursor(st.entries.len()))
    }

    fn read_after(&self, after: &Cursor, limit: usize) -> Result<LogEntries, StoreError> {
        let from = Self::first_after(after)?;
        let st = self.state.lock();
        Ok(Self::entries_from(&st, from, from.saturating_add(limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_log_fences_an_expired_lock() {
        let log = MemLog::with_ttl(Duration::from_millis(30));
        let (lease, seen) = log.lock(&Cursor::start()).unwrap();
        assert!(seen.is_empty());
        std::thread::sleep(Duration::from_millis(60));
        let err = log
            .append_unlock(lease, &Cursor::start(), &[b"a".to_vec()])
            .unwrap_err();
        assert!(matches!(err, StoreError::LockLost { .. }), "{err}");
        assert!(log.read_after(&Cursor::start(), 10).unwrap().is_empty());
    }
}
