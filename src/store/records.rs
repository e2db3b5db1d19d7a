//! Value encodings of the stored records (pipeline: between [`super::KvStore`]
//! and its backend): one `enc_*`/`dec_*` pair per record type, over the
//! primitives of `codec.rs`.

use super::codec::{self, Dec, Enc};
use super::{BodyRef, HostStats, QueueKey, QueuedUrl, StoredPage, UrlState};
use crate::model::ScoreComponents;
use crate::model::{Change, Decision, Revisit};

pub(super) const DECISIONS: [Decision; 10] = Decision::ALL;

pub(super) fn enc_queued(u: &QueuedUrl) -> Vec<u8> {
    let mut e = Enc::with_capacity(64 + u.url.len() + u.canonical.len());
    e.str(&u.url)
        .str(&u.canonical)
        .str(&u.host)
        .varint(u64::from(u.depth))
        .opt_str(u.parent.as_deref());
    let c = &u.components;
    for v in [
        c.depth,
        c.parent_dup,
        c.host_dup_rate,
        c.host_novelty,
        c.relevance,
        c.inlinks,
        c.mirror,
    ] {
        e.f64(v);
    }
    e.f64(u.priority)
        .u64(u.seq)
        .varint(u64::from(u.retries))
        .varint(u64::from(u.inlinks))
        .varint(u64::from(u.tunnel));
    // Format 6: the sitemap component and the revisited page id, 9 or 17
    // bytes (format 5 appended the page id alone, 8 bytes, and only for a
    // revisit; format 4 nothing): the length tells them apart. Then the
    // components added after the sitemap one: a count, then their values in
    // [`EXTRA_COMPONENTS`] order (absent: zeros; more than this build knows:
    // skipped).
    e.f64(c.sitemap).opt_u64(u.revisit);
    let extra = [c.host_relevance, c.url_relevance];
    e.varint(extra.len() as u64);
    for v in extra {
        e.f64(v);
    }
    e.buf
}

/// The components stored after the sitemap one, in order.
pub(super) const EXTRA_COMPONENTS: [&str; 2] = ["host_relevance", "url_relevance"];

/// A queued URL; the fields after `tunnel` depend on the format that wrote
/// it (see `enc_queued`): absent ones read as no revisit and components of 0.
pub(super) fn dec_queued(d: &mut Dec<'_>) -> codec::DecResult<QueuedUrl> {
    let mut q = QueuedUrl {
        url: d.str()?,
        canonical: d.str()?,
        host: d.str()?,
        depth: d.u32()?,
        parent: d.opt_str()?,
        components: ScoreComponents {
            depth: d.f64()?,
            parent_dup: d.f64()?,
            host_dup_rate: d.f64()?,
            host_novelty: d.f64()?,
            relevance: d.f64()?,
            inlinks: d.f64()?,
            mirror: d.f64()?,
            sitemap: 0.0,
            host_relevance: 0.0,
            url_relevance: 0.0,
        },
        priority: d.f64()?,
        seq: d.u64()?,
        retries: d.u32()?,
        inlinks: d.u32()?,
        tunnel: d.u32()?,
        revisit: None,
    };
    match d.remaining() {
        0 => {}
        8 => q.revisit = Some(d.u64()?),
        _ => {
            q.components.sitemap = d.f64()?;
            q.revisit = d.opt_u64()?;
            if !d.at_end() {
                let n = d.varint()?;
                let mut extra = [0.0f64; EXTRA_COMPONENTS.len()];
                for i in 0..n {
                    let v = d.f64()?;
                    if let Some(slot) = usize::try_from(i).ok().and_then(|i| extra.get_mut(i)) {
                        *slot = v;
                    }
                }
                let [host_relevance, url_relevance] = extra;
                q.components.host_relevance = host_relevance;
                q.components.url_relevance = url_relevance;
            }
        }
    }
    Ok(q)
}

pub(super) fn enc_state(s: &UrlState) -> Vec<u8> {
    let mut e = Enc::with_capacity(17);
    match s {
        UrlState::Queued(k) => e.u8(0).u64(k.rank).u64(k.seq),
        UrlState::InFlight(k) => e.u8(1).u64(k.rank).u64(k.seq),
        UrlState::Done(id) => e.u8(2).u64(*id),
        UrlState::AliasOf(u) => e.u8(3).str(u),
    };
    e.buf
}

pub(super) fn dec_state(d: &mut Dec<'_>) -> codec::DecResult<UrlState> {
    Ok(match d.u8()? {
        0 => UrlState::Queued(QueueKey {
            rank: d.u64()?,
            seq: d.u64()?,
        }),
        1 => UrlState::InFlight(QueueKey {
            rank: d.u64()?,
            seq: d.u64()?,
        }),
        2 => UrlState::Done(d.u64()?),
        3 => UrlState::AliasOf(d.str()?),
        t => return Err(format!("unknown url state tag {t}")),
    })
}

pub(super) fn enc_page(p: &StoredPage) -> Vec<u8> {
    let mut e = Enc::with_capacity(160 + p.canonical.len() + p.final_url.len());
    let decision = DECISIONS.iter().position(|d| *d == p.decision).unwrap_or(0) as u8;
    e.u64(p.id)
        .str(&p.canonical)
        .str(&p.final_url)
        .u16(p.status)
        .varint(u64::from(p.depth))
        .u8(decision)
        .opt_u64(p.dup_of)
        .opt_u64(p.distance.map(u64::from))
        .opt_u64(p.simhash)
        .opt_hash(p.content_hash.as_ref())
        .opt_hash(p.text_hash.as_ref())
        .u64(p.fetched_at_ms)
        .varint(p.bytes);
    // Format 5: the recrawl state, appended (a format-4 record ends before it).
    let r = &p.revisit;
    let change = r
        .change
        .map_or(0, |c| 1 + Change::ALL.iter().position(|x| *x == c).unwrap_or(0) as u8);
    e.opt_str(r.etag.as_deref())
        .opt_str(r.last_modified.as_deref())
        .varint(r.interval_secs)
        .varint(u64::from(r.fetches))
        .varint(u64::from(r.changes))
        .u8(change);
    e.buf
}

pub(super) fn dec_page(d: &mut Dec<'_>) -> codec::DecResult<StoredPage> {
    Ok(StoredPage {
        id: d.u64()?,
        canonical: d.str()?,
        final_url: d.str()?,
        status: d.u16()?,
        depth: d.u32()?,
        decision: {
            let t = d.u8()?;
            *DECISIONS
                .get(usize::from(t))
                .ok_or_else(|| format!("unknown decision tag {t}"))?
        },
        dup_of: d.opt_u64()?,
        distance: d
            .opt_u64()?
            .map(|v| u32::try_from(v).map_err(|_| "distance does not fit 32 bits".to_string()))
            .transpose()?,
        simhash: d.opt_u64()?,
        content_hash: d.opt_hash()?,
        text_hash: d.opt_hash()?,
        fetched_at_ms: d.u64()?,
        bytes: d.varint()?,
        revisit: if d.at_end() {
            // A format-4 record: one fetch, no validators.
            Revisit {
                fetches: 1,
                ..Revisit::default()
            }
        } else {
            Revisit {
                etag: d.opt_str()?,
                last_modified: d.opt_str()?,
                interval_secs: d.varint()?,
                fetches: d.u32()?,
                changes: d.u32()?,
                change: match d.u8()? {
                    0 => None,
                    t => Some(
                        *Change::ALL
                            .get(usize::from(t) - 1)
                            .ok_or_else(|| format!("unknown change tag {t}"))?,
                    ),
                },
            }
        },
    })
}

pub(super) fn enc_body_ref(b: &BodyRef) -> Vec<u8> {
    let mut e = Enc::with_capacity(16);
    e.varint(u64::from(b.file)).varint(b.offset).varint(b.length);
    e.buf
}

pub(super) fn dec_body_ref(d: &mut Dec<'_>) -> codec::DecResult<BodyRef> {
    Ok(BodyRef {
        file: u32::try_from(d.varint()?).map_err(|_| "WARC file number does not fit 32 bits".to_string())?,
        offset: d.varint()?,
        length: d.varint()?,
    })
}

pub(super) fn enc_host(h: &HostStats) -> Vec<u8> {
    let mut e = Enc::with_capacity(24);
    e.varint(h.fetched)
        .varint(h.duplicates)
        .varint(h.errors)
        .varint(h.disallowed)
        .u64(h.last_fetch_ms);
    e.buf
}

pub(super) fn dec_host(d: &mut Dec<'_>) -> codec::DecResult<HostStats> {
    Ok(HostStats {
        fetched: d.varint()?,
        duplicates: d.varint()?,
        errors: d.varint()?,
        disallowed: d.varint()?,
        last_fetch_ms: d.u64()?,
    })
}
