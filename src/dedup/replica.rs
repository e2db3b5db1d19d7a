//! The operations on a [`Deduper`] as entries of a shared decision log
//! ([`crate::store::DecisionLog`]), and [`Replica`], a `Deduper` that records
//! the operations it performs and applies those of other workers.
//!
//! Every worker process of one crawl owns a `Deduper`. Each mutation of it
//! is an [`Op`] with all its inputs: [`Op::Decide`] (a page decided by
//! [`Deduper::decide`]), [`Op::Reindex`] (a young page fingerprinted again,
//! [`Deduper::reindex`]), [`Op::Forget`] (a revisit's previous content, or a
//! ghost's, [`Deduper::forget`]). Applying an op calls the same method with
//! the same inputs, so `Deduper`s that go through the same ops in the log's
//! order reach the same state and make the same decisions. [`Op::Committed`]
//! says pages reached the store; it changes no decision.
//!
//! Encoding (version [`OP_VERSION`]): a version byte, a kind byte, then the
//! fields with `store::codec` primitives (LEB128 ids, big-endian
//! fingerprints, raw 32-byte hashes, length-prefixed strings and sketches).
//! A malformed entry is a [`ReplicaError`], never a panic.

use super::{ContentHashes, Deduper, Judgement};
use crate::index::LiveIndex;
use crate::model::{PageId, Verdict};
use crate::sketch::Sketch;
use crate::store::codec::{Dec, Enc};
use crate::store::{Cursor, DecisionLog, Lease, LogEntries, READ_CHUNK};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The encoding version of an [`Op`] this build writes and reads.
pub const OP_VERSION: u8 = 2;

const DECIDE: u8 = 1;
const REINDEX: u8 = 2;
const FORGET: u8 = 3;
const COMMITTED: u8 = 4;

/// One mutation of a [`Deduper`] (or a commit marker), with all its inputs.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// [`Deduper::decide`] of page `id` of `host`, canonical URL `url`.
    Decide {
        /// The page.
        id: PageId,
        /// Its host key (which ghosts a host's new holder forgets).
        host: String,
        /// Its canonical URL (what a duplicate of it names before its
        /// record is in the store).
        url: String,
        /// Its body and text hashes.
        hashes: ContentHashes,
        /// Its fingerprint.
        simhash: u64,
        /// Its verification sketch.
        sketch: Option<Sketch>,
        /// What it was decided (what a replica over the shared maps and
        /// tables applies instead of deciding again).
        verdict: Verdict,
    },
    /// [`Deduper::reindex`]: page `id` fingerprinted again.
    Reindex {
        /// The page.
        id: PageId,
        /// Its fingerprint before.
        old: u64,
        /// Its fingerprint now.
        simhash: u64,
        /// Its sketch now.
        sketch: Option<Sketch>,
    },
    /// [`Deduper::forget`]: page `id`'s content no longer names it.
    Forget {
        /// The page.
        id: PageId,
        /// Its body hash.
        body: Option<[u8; 32]>,
        /// Its text hash.
        text: Option<[u8; 32]>,
    },
    /// The pages are recorded in the store.
    Committed {
        /// The pages.
        ids: Vec<PageId>,
    },
}

/// Why a decision log entry could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// The entry was written by another encoding version.
    #[error("decision log entry of version {0}: this simcrawl reads version {OP_VERSION}")]
    Version(u8),
    /// The entry's kind byte is unknown.
    #[error("decision log entry of unknown kind {0}")]
    Kind(u8),
    /// The entry is damaged.
    #[error("malformed decision log entry: {0}")]
    Malformed(String),
    /// The sketch index could not write or read its spill file.
    #[error("sketch index: {0}")]
    Io(#[from] std::io::Error),
    /// The shared log failed (or its lock was lost).
    #[error(transparent)]
    Log(crate::store::StoreError),
}

fn opt_sketch(e: &mut Enc, s: Option<&Sketch>) {
    match s {
        None => {
            e.u8(0);
        }
        Some(s) => {
            let b = s.to_bytes();
            e.u8(1).varint(b.len() as u64).raw(&b);
        }
    }
}

fn dec_sketch(d: &mut Dec<'_>) -> Result<Option<Sketch>, String> {
    match d.u8()? {
        0 => Ok(None),
        1 => {
            let n = usize::try_from(d.varint()?).map_err(|_| "sketch length overflow".to_string())?;
            Sketch::from_bytes(d.raw(n)?)
                .map(Some)
                .ok_or_else(|| "malformed sketch".to_string())
        }
        t => Err(format!("bad option tag {t}")),
    }
}

fn hash(d: &mut Dec<'_>) -> Result<[u8; 32], String> {
    let mut h = [0u8; 32];
    h.copy_from_slice(d.raw(32)?);
    Ok(h)
}

impl Op {
    /// The op as a log entry.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(96);
        e.u8(OP_VERSION);
        match self {
            Op::Decide {
                id,
                host,
                url,
                hashes,
                simhash,
                sketch,
                verdict,
            } => {
                e.u8(DECIDE).varint(*id).str(host).str(url);
                e.raw(&hashes.body).raw(&hashes.text).u64(*simhash);
                opt_sketch(&mut e, sketch.as_ref());
                e.u8(match verdict {
                    Verdict::New => 0,
                    Verdict::ExactDuplicate => 1,
                    Verdict::NearDuplicate => 2,
                });
            }
            Op::Reindex {
                id,
                old,
                simhash,
                sketch,
            } => {
                e.u8(REINDEX).varint(*id).u64(*old).u64(*simhash);
                opt_sketch(&mut e, sketch.as_ref());
            }
            Op::Forget { id, body, text } => {
                e.u8(FORGET).varint(*id).opt_hash(body.as_ref()).opt_hash(text.as_ref());
            }
            Op::Committed { ids } => {
                e.u8(COMMITTED).varint(ids.len() as u64);
                for id in ids {
                    e.varint(*id);
                }
            }
        }
        e.buf
    }

    /// An op from a log entry.
    pub fn decode(bytes: &[u8]) -> Result<Op, ReplicaError> {
        let mut d = Dec::new(bytes);
        let version = d.u8().map_err(ReplicaError::Malformed)?;
        if version != OP_VERSION {
            return Err(ReplicaError::Version(version));
        }
        let kind = d.u8().map_err(ReplicaError::Malformed)?;
        let op = (|| -> Result<Result<Op, u8>, String> {
            Ok(Ok(match kind {
                DECIDE => Op::Decide {
                    id: d.varint()?,
                    host: d.str()?,
                    url: d.str()?,
                    hashes: ContentHashes {
                        body: hash(&mut d)?,
                        text: hash(&mut d)?,
                    },
                    simhash: d.u64()?,
                    sketch: dec_sketch(&mut d)?,
                    verdict: match d.u8()? {
                        0 => Verdict::New,
                        1 => Verdict::ExactDuplicate,
                        2 => Verdict::NearDuplicate,
                        b => return Err(format!("bad verdict {b}")),
                    },
                },
                REINDEX => Op::Reindex {
                    id: d.varint()?,
                    old: d.u64()?,
                    simhash: d.u64()?,
                    sketch: dec_sketch(&mut d)?,
                },
                FORGET => Op::Forget {
                    id: d.varint()?,
                    body: d.opt_hash()?,
                    text: d.opt_hash()?,
                },
                COMMITTED => {
                    let n = d.varint()?;
                    // Each id takes a byte at least: a count beyond the
                    // bytes left is damage, not an allocation to make.
                    if n > d.remaining() as u64 {
                        return Err(format!("{n} ids in {} bytes", d.remaining()));
                    }
                    let ids = (0..n).map(|_| d.varint()).collect::<Result<Vec<_>, _>>()?;
                    Op::Committed { ids }
                }
                k => return Ok(Err(k)),
            }))
        })()
        .map_err(ReplicaError::Malformed)?
        .map_err(ReplicaError::Kind)?;
        d.finish().map_err(ReplicaError::Malformed)?;
        Ok(op)
    }
}

/// A page decided and, as far as the log says, not yet in the store.
#[derive(Debug, Clone)]
struct Uncommitted {
    host: String,
    url: String,
    body: [u8; 32],
    text: [u8; 32],
}

/// A [`Deduper`] that, when recording, keeps every mutation it performs as
/// an [`Op`] to append to the shared log ([`Replica::take_outbox`]), applies
/// the ops other workers appended ([`Replica::apply`]), and remembers the
/// pages decided and not yet committed: their URLs (a duplicate of such a
/// page names it before the store has it, [`Replica::url_of`]) and hashes
/// (to forget the ghosts of a worker that died before its commit,
/// [`Replica::uncommitted_of_host`]). Not recording (a crawl one process
/// runs), it is the `Deduper` alone.
pub struct Replica {
    dedup: Deduper,
    /// The ops performed and not taken yet; `None`: not recording.
    outbox: Option<Vec<Op>>,
    uncommitted: HashMap<PageId, Uncommitted>,
}

impl Replica {
    /// `dedup` alone: records nothing.
    pub fn new(dedup: Deduper) -> Self {
        Replica {
            dedup,
            outbox: None,
            uncommitted: HashMap::new(),
        }
    }

    /// `dedup`, recording its mutations for a shared log.
    pub fn recording(dedup: Deduper) -> Self {
        Replica {
            outbox: Some(Vec::new()),
            ..Replica::new(dedup)
        }
    }

    /// Whether mutations are recorded.
    pub fn is_recording(&self) -> bool {
        self.outbox.is_some()
    }

    fn record(&mut self, op: impl FnOnce() -> Op) {
        if let Some(out) = self.outbox.as_mut() {
            out.push(op());
        }
    }

    /// [`Deduper::decide`] of page `id` (of `host`, canonical `url`),
    /// recorded.
    pub fn decide(
        &mut self,
        id: PageId,
        host: &str,
        url: &str,
        hashes: &ContentHashes,
        simhash: u64,
        sketch: Option<&Sketch>,
    ) -> std::io::Result<Judgement> {
        let judged = self.dedup.decide(id, hashes, simhash, sketch)?;
        if self.is_recording() {
            self.pending(id, host, url, hashes);
            self.record(|| Op::Decide {
                id,
                host: host.to_string(),
                url: url.to_string(),
                hashes: *hashes,
                simhash,
                sketch: sketch.cloned(),
                verdict: judged.ruling.verdict,
            });
        }
        Ok(judged)
    }

    fn pending(&mut self, id: PageId, host: &str, url: &str, hashes: &ContentHashes) {
        self.uncommitted.insert(
            id,
            Uncommitted {
                host: host.to_string(),
                url: url.to_string(),
                body: hashes.body,
                text: hashes.text,
            },
        );
    }

    /// [`Deduper::reindex`], recorded.
    pub fn reindex(&mut self, id: PageId, old: u64, simhash: u64, sketch: Option<Sketch>) -> std::io::Result<()> {
        let op = self.is_recording().then(|| Op::Reindex {
            id,
            old,
            simhash,
            sketch: sketch.clone(),
        });
        self.dedup.reindex(id, old, simhash, sketch)?;
        if let Some(op) = op {
            self.record(|| op);
        }
        Ok(())
    }

    /// [`Deduper::forget`], recorded.
    pub fn forget(&mut self, id: PageId, body: Option<&[u8; 32]>, text: Option<&[u8; 32]>) -> std::io::Result<()> {
        self.dedup.forget(id, body, text)?;
        self.uncommitted.remove(&id);
        self.record(|| Op::Forget {
            id,
            body: body.copied(),
            text: text.copied(),
        });
        Ok(())
    }

    /// The pages are in the store: they are no longer uncommitted. Returns
    /// the [`Op::Committed`] to append (without the lock).
    pub fn committed(&mut self, ids: &[PageId]) -> Op {
        for id in ids {
            self.uncommitted.remove(id);
        }
        Op::Committed { ids: ids.to_vec() }
    }

    /// Apply an op of the log (another worker's, or a replay): the same
    /// mutation, not recorded. Returns the judgement of an [`Op::Decide`].
    /// Over the shared maps and tables ([`Deduper::is_shared`]) a decision
    /// is applied from its verdict, since they hold what was decided after
    /// it too; over maps and an index in memory it is decided again, from
    /// the same state, to the same outcome.
    pub fn apply(&mut self, op: Op) -> std::io::Result<Option<Judgement>> {
        match op {
            Op::Decide {
                id,
                host,
                url,
                hashes,
                simhash,
                sketch,
                verdict,
            } => {
                let judged = if self.dedup.is_shared() {
                    self.dedup.apply_decided(id, simhash, sketch.as_ref(), verdict)?
                } else {
                    self.dedup.decide(id, &hashes, simhash, sketch.as_ref())?
                };
                self.uncommitted.insert(
                    id,
                    Uncommitted {
                        host,
                        url,
                        body: hashes.body,
                        text: hashes.text,
                    },
                );
                return Ok(Some(judged));
            }
            Op::Reindex {
                id,
                old,
                simhash,
                sketch,
            } if self.dedup.is_shared() => self.dedup.apply_reindexed(id, old, simhash, sketch)?,
            Op::Reindex {
                id,
                old,
                simhash,
                sketch,
            } => self.dedup.reindex(id, old, simhash, sketch)?,
            Op::Forget { id, .. } if self.dedup.is_shared() => {
                self.dedup.apply_forgotten(id);
                self.uncommitted.remove(&id);
            }
            Op::Forget { id, body, text } => {
                self.dedup.forget(id, body.as_ref(), text.as_ref())?;
                self.uncommitted.remove(&id);
            }
            Op::Committed { ids } => {
                for id in ids {
                    self.uncommitted.remove(&id);
                }
            }
        }
        Ok(None)
    }

    /// Decode and [`Replica::apply`] one log entry; also returns the op's
    /// hashes and fingerprint with its judgement for an [`Op::Decide`].
    pub fn apply_entry(&mut self, bytes: &[u8]) -> Result<Option<(ContentHashes, u64, Judgement)>, ReplicaError> {
        let op = Op::decode(bytes)?;
        let decided = match &op {
            Op::Decide { hashes, simhash, .. } => Some((*hashes, *simhash)),
            _ => None,
        };
        let judged = self.apply(op)?;
        Ok(decided.zip(judged).map(|((h, fp), j)| (h, fp, j)))
    }

    /// Record that the pages are in the store (under the lock: a ghost
    /// check found their records).
    pub fn mark_committed(&mut self, ids: &[PageId]) {
        let op = self.committed(ids);
        self.record(|| op);
    }

    /// Under the lock: the pages of `host` (every host: `None`) decided and
    /// not committed are looked at with `fate`; a [`Fate::Ghost`] is
    /// forgotten ([`Op::Forget`]), a [`Fate::Recorded`] one marked
    /// committed. Returns the ghosts forgotten.
    pub fn forget_ghosts<E: From<ReplicaError>>(
        &mut self,
        host: Option<&str>,
        mut fate: impl FnMut(PageId) -> Result<Fate, E>,
    ) -> Result<Vec<PageId>, E> {
        let (mut ghosts, mut recorded) = (Vec::new(), Vec::new());
        for (id, body, text) in self.uncommitted_of_host(host) {
            match fate(id)? {
                Fate::Ghost => {
                    self.forget(id, Some(&body), Some(&text))
                        .map_err(|e| E::from(ReplicaError::Io(e)))?;
                    ghosts.push(id);
                }
                Fate::Recorded => recorded.push(id),
                Fate::Pending => {}
            }
        }
        if !recorded.is_empty() {
            self.mark_committed(&recorded);
        }
        Ok(ghosts)
    }

    /// The ops performed since the last call, in order.
    pub fn take_outbox(&mut self) -> Vec<Op> {
        self.outbox.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The canonical URL of page `id` while it is decided and not yet
    /// committed.
    pub fn url_of(&self, id: PageId) -> Option<&str> {
        self.uncommitted.get(&id).map(|u| u.url.as_str())
    }

    /// The pages of `host` (every host: `None`) decided and not yet
    /// committed, with their body and text hashes, in id order.
    pub fn uncommitted_of_host(&self, host: Option<&str>) -> Vec<(PageId, [u8; 32], [u8; 32])> {
        let mut out: Vec<_> = self
            .uncommitted
            .iter()
            .filter(|(_, u)| host.is_none_or(|h| u.host == h))
            .map(|(id, u)| (*id, u.body, u.text))
            .collect();
        out.sort_unstable_by_key(|p| p.0);
        out
    }

    /// Pages decided and not yet committed.
    pub fn uncommitted_len(&self) -> usize {
        self.uncommitted.len()
    }

    /// [`Deduper::sketch_path`].
    pub fn sketch_path(&self) -> std::path::PathBuf {
        self.dedup.sketch_path()
    }

    /// [`Deduper::cuts_templates`].
    pub fn cuts_templates(&self) -> bool {
        self.dedup.cuts_templates()
    }

    /// [`Deduper::index_len`].
    pub fn index_len(&self) -> usize {
        self.dedup.index_len()
    }

    /// [`Deduper::into_index`].
    pub fn into_index(self) -> Option<LiveIndex> {
        self.dedup.into_index()
    }
}

/// What became of a page decided and not committed (see
/// [`SharedReplica::forget_ghosts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The store has its record: committed (its marker is missing).
    Recorded,
    /// The store has no record and no worker will commit it: forget it.
    Ghost,
    /// Still being committed by this worker: left alone.
    Pending,
}

/// A [`Replica`] over a shared [`DecisionLog`] (what each worker's decider
/// owns), or alone ([`SharedReplica::local`]: a crawl one process runs,
/// where the lock and the log calls do nothing). Every mutation that
/// decides something happens between [`SharedReplica::begin`] and
/// [`SharedReplica::end`] (or in [`SharedReplica::locked`]): under the
/// log's lock, after the replica has applied every entry before it; its
/// ops are appended before the lock is released.
pub struct SharedReplica {
    replica: Replica,
    log: Option<Arc<dyn DecisionLog>>,
    /// The lock, between `begin` and `end`.
    lease: Option<Lease>,
    /// Every entry up to here is applied.
    cursor: Cursor,
    /// Content other workers decided (not as exact duplicates), with its
    /// fingerprint, not taken yet ([`SharedReplica::take_learned`]).
    learned: Vec<(ContentHashes, u64)>,
    /// Lock holds, and log entries of others applied (replay included).
    holds: u64,
    applied: u64,
    /// Pages found in the store while their entries in the shared tables
    /// were checked ([`SharedReplica::prefetch`]); at most
    /// [`RECORDED_CACHE`].
    recorded: HashSet<PageId>,
}

/// Page ids [`SharedReplica::prefetch`] remembers as recorded.
const RECORDED_CACHE: usize = 1 << 16;

impl SharedReplica {
    /// `dedup` alone: nothing recorded, no log.
    pub fn local(dedup: Deduper) -> Self {
        SharedReplica {
            replica: Replica::new(dedup),
            log: None,
            lease: None,
            cursor: Cursor::start(),
            learned: Vec::new(),
            holds: 0,
            applied: 0,
            recorded: HashSet::new(),
        }
    }

    /// `dedup` (empty: the log is the whole state) over `log`, with every
    /// entry of the log applied (a worker joining a crawl replays it all).
    pub fn open(dedup: Deduper, log: Arc<dyn DecisionLog>) -> Result<Self, ReplicaError> {
        let mut s = SharedReplica {
            replica: Replica::recording(dedup),
            log: Some(log),
            lease: None,
            cursor: Cursor::start(),
            learned: Vec::new(),
            holds: 0,
            applied: 0,
            recorded: HashSet::new(),
        };
        s.catch_up()?;
        Ok(s)
    }

    /// Whether a log is shared.
    pub fn is_shared(&self) -> bool {
        self.log.is_some()
    }

    /// Apply the entries appended since the last look, without the lock.
    pub fn catch_up(&mut self) -> Result<usize, ReplicaError> {
        let Some(log) = self.log.clone() else { return Ok(0) };
        let mut n = 0;
        loop {
            // A chunk at a time: a joining worker reads the whole log.
            let entries = log.read_after(&self.cursor, READ_CHUNK)?;
            let full = entries.len() >= READ_CHUNK;
            n += entries.len();
            self.apply_entries(entries)?;
            if !full {
                return Ok(n);
            }
        }
    }

    fn apply_entries(&mut self, entries: LogEntries) -> Result<(), ReplicaError> {
        for (at, bytes) in entries {
            if let Some((hashes, fp, j)) = self.replica.apply_entry(&bytes)? {
                if j.ruling.verdict != crate::model::Verdict::ExactDuplicate {
                    self.learned.push((hashes, fp));
                }
            }
            self.cursor = at;
            self.applied += 1;
        }
        Ok(())
    }

    /// Take the lock and apply what others appended before it.
    pub fn begin(&mut self) -> Result<(), ReplicaError> {
        let Some(log) = self.log.clone() else { return Ok(()) };
        if self.lease.is_some() {
            return Err(ReplicaError::Malformed(
                "the decision log's lock is already held".into(),
            ));
        }
        let (lease, entries) = log.lock(&self.cursor)?;
        self.holds += 1;
        if let Err(e) = self.apply_entries(entries) {
            let _ = log.append_unlock(lease, &self.cursor, &[]);
            return Err(e);
        }
        self.lease = Some(lease);
        Ok(())
    }

    /// Under the lock, before a batch is decided: fetch from the shared
    /// tables the candidates of the fingerprints `fps`, and from the shared
    /// maps the owners of `hashes` (one call each; nothing when they are in
    /// memory), and leave out those whose page no decision in the log
    /// names: a page neither decided and uncommitted
    /// (as far as the log says) nor recorded (`recorded(id)`, the store) is
    /// an entry written by a holder whose lock expired before its append.
    pub fn prefetch<'a, E: From<ReplicaError>>(
        &mut self,
        fps: &[u64],
        hashes: impl IntoIterator<Item = (Option<&'a [u8; 32]>, Option<&'a [u8; 32]>)>,
        mut recorded: impl FnMut(PageId) -> Result<bool, E>,
    ) -> Result<(), E> {
        let ids = self
            .replica
            .dedup
            .prefetch(fps, hashes)
            .map_err(|e| E::from(ReplicaError::Log(e)))?;
        let mut stray = HashSet::new();
        for id in ids {
            if self.replica.url_of(id).is_some() || self.recorded.contains(&id) {
                continue;
            }
            if recorded(id)? {
                if self.recorded.len() >= RECORDED_CACHE {
                    self.recorded.clear();
                }
                self.recorded.insert(id);
            } else {
                stray.insert(id);
            }
        }
        if !stray.is_empty() {
            tracing::info!(
                "near-duplicate tables: {} entries that no decision names are left out",
                stray.len()
            );
            self.replica.dedup.drop_candidates(&stray);
        }
        Ok(())
    }

    /// Append the ops performed since [`SharedReplica::begin`] and release
    /// the lock. A lock lost meanwhile is [`StoreError::LockLost`]
    /// (in [`ReplicaError::Log`]): this replica then holds mutations the
    /// log does not, and must not decide again.
    ///
    /// [`StoreError::LockLost`]: crate::store::StoreError::LockLost
    pub fn end(&mut self) -> Result<(), ReplicaError> {
        let (Some(log), Some(lease)) = (self.log.clone(), self.lease.take()) else {
            return Ok(());
        };
        let ops: Vec<Vec<u8>> = self.replica.take_outbox().iter().map(Op::encode).collect();
        // The tables first: whoever takes the lock next finds every
        // fingerprint the log names. Entries written by a holder whose
        // append is refused name no decision (see `prefetch`).
        if let Err(e) = self.replica.dedup.flush() {
            self.replica.dedup.discard();
            let _ = log.append_unlock(lease, &self.cursor, &[]);
            return Err(ReplicaError::Log(e));
        }
        let (others, last) = log.append_unlock(lease, &self.cursor, &ops)?;
        self.apply_entries(others)?;
        self.cursor = last;
        Ok(())
    }

    /// [`SharedReplica::begin`], `f` on the replica, [`SharedReplica::end`]
    /// (also when `f` fails: its mutations happened).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn locked<T, E: From<ReplicaError>>(&mut self, f: impl FnOnce(&mut Replica) -> Result<T, E>) -> Result<T, E> {
        self.begin()?;
        let r = f(&mut self.replica);
        self.end()?;
        r
    }

    /// Pages recorded in the store: append the [`Op::Committed`] of those
    /// that were decided (without the lock).
    pub fn committed(&mut self, ids: &[PageId]) -> Result<(), ReplicaError> {
        let Some(log) = self.log.clone() else { return Ok(()) };
        let ids: Vec<PageId> = ids
            .iter()
            .copied()
            .filter(|id| self.replica.url_of(*id).is_some())
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let op = self.replica.committed(&ids);
        log.append(&[op.encode()])?;
        Ok(())
    }

    /// Content other workers decided since the last call (not as exact
    /// duplicates), with its fingerprint: what an exact copy's analysis may
    /// reuse ([`super::KnownContent`]).
    pub fn take_learned(&mut self) -> Vec<(ContentHashes, u64)> {
        std::mem::take(&mut self.learned)
    }

    /// Lock holds so far, and entries of others applied (replay included).
    pub fn counts(&self) -> (u64, u64) {
        (self.holds, self.applied)
    }

    /// The replica.
    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// The replica, to mutate between [`SharedReplica::begin`] and
    /// [`SharedReplica::end`].
    pub fn replica_mut(&mut self) -> &mut Replica {
        &mut self.replica
    }

    /// The replica, leaving the log.
    pub fn into_replica(self) -> Replica {
        self.replica
    }
}

impl From<crate::store::StoreError> for ReplicaError {
    fn from(e: crate::store::StoreError) -> Self {
        ReplicaError::Log(e)
    }
}

#[cfg(test)]
#[path = "replica_tests.rs"]
pub(crate) mod tests;
