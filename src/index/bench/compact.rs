//! The sealed compact structures measured by `simcrawl bench index` (beside
//! the index pipeline; not used by the crawl): compressed tables (Manku
//! §3.2) and the reference index, `--only-compact` included.

use std::io::Write;
use std::time::Instant;

use rayon::prelude::*;

use super::{brute_force, human, rate, Options, Workload};
use crate::error::{Error, Result};
use crate::index::compressed::CompressedTable;
use crate::index::design::Design;
use crate::index::refs::RefIndex;
use crate::index::table::Match;

/// A compressed copy of every table (Manku §3.2): sizes, encode time and the
/// rate of a probe that decodes every table's prefix range.
pub(super) struct Compressed {
    /// Bytes per distinct fingerprint per table.
    pub(super) table: f64,
    /// Bytes per fingerprint, all tables plus an 8-byte id.
    pub(super) total: f64,
    /// Encode seconds.
    pub(super) secs: f64,
    /// Queries/s, 1 thread, on up to 100k queries.
    pub(super) qps: f64,
    /// Entries decoded per query.
    pub(super) decoded: f64,
}

impl Compressed {
    pub(super) fn skipped() -> Compressed {
        Compressed {
            table: f64::NAN,
            total: f64::NAN,
            secs: 0.0,
            qps: f64::NAN,
            decoded: f64::NAN,
        }
    }

    /// Encodes the sorted permuted keys `table(i)` of every table of `design`.
    pub(super) fn measure(design: &Design, n: usize, queries: &[u64], table: impl Fn(usize) -> Vec<u64>) -> Compressed {
        let t = Instant::now();
        // One table at a time, so that 100M fingerprints fit.
        let mut distinct = 1.0f64;
        let comp: Vec<CompressedTable> = (0..design.tables())
            .map(|i| {
                let keys = table(i);
                distinct = keys.len().max(1) as f64;
                CompressedTable::encode(&keys)
            })
            .collect();
        let secs = t.elapsed().as_secs_f64();
        let sum = comp.iter().map(|c| c.bytes() as f64).sum::<f64>();
        // A compressed probe: decode the prefix range of every table.
        let t = Instant::now();
        let mut decoded = 0usize;
        let cq = &queries[..queries.len().min(100_000)];
        for &q in cq {
            for (s, c) in design.specs().iter().zip(&comp) {
                decoded += c.for_prefix(s.permute(q), s.prefix(), |_| {});
            }
        }
        Compressed {
            table: sum / comp.len().max(1) as f64 / distinct,
            total: sum / n.max(1) as f64 + 8.0,
            secs,
            qps: rate(cq.len(), t.elapsed().as_secs_f64()),
            decoded: decoded as f64 / cq.len().max(1) as f64,
        }
    }
}

/// Brute-force answers (sorted) for the first `count` queries, and the scan rate.
pub(super) fn brute_answers(wl: &Workload, k: u32, count: usize) -> (Vec<Vec<Match>>, f64) {
    let bq = &wl.queries[..wl.queries.len().min(count)];
    let t = Instant::now();
    let mut sets = Vec::with_capacity(bq.len());
    for &q in bq {
        let mut truth = Vec::new();
        brute_force(&wl.fps, q, k, &mut truth);
        truth.sort_unstable();
        sets.push(truth);
    }
    (sets, rate(bq.len(), t.elapsed().as_secs_f64()))
}

/// The reference index ([`RefIndex`]) on the same fingerprints and queries:
/// build rate, bytes (total and by part), queries/s on one thread, work per
/// query, and misses against the brute-force answers `brute` (for the first
/// queries). Returns whether it agreed with brute force.
pub(super) fn ref_rows(
    design: &Design,
    k: u32,
    wl: &Workload,
    items: &[(u64, u64)],
    brute: &[Vec<Match>],
    qbrute: f64,
    out: &mut impl Write,
) -> Result<bool> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    let t = Instant::now();
    let refs = RefIndex::build(design, k, items);
    let build = rate(items.len(), t.elapsed().as_secs_f64());
    let parts = refs.byte_parts();
    let n = items.len().max(1) as f64;
    let mut buf = Vec::with_capacity(1024);
    let (mut examined, mut cands, mut worst) = (0usize, 0usize, 0usize);
    let t = Instant::now();
    for &q in &wl.queries {
        buf.clear();
        let st = refs.query(q, k, &mut buf);
        examined += st.examined;
        cands += st.candidates;
        worst = worst.max(st.candidates);
    }
    let q1 = rate(wl.queries.len(), t.elapsed().as_secs_f64());
    let (mut misses, mut extra) = (0usize, 0usize);
    for (&q, want) in wl.queries.iter().zip(brute) {
        buf.clear();
        refs.query(q, k, &mut buf);
        buf.sort_unstable();
        misses += want.iter().filter(|m| buf.binary_search(m).is_err()).count();
        extra += buf.iter().filter(|m| want.binary_search(m).is_err()).count();
    }
    let nq = wl.queries.len().max(1) as f64;
    let t_count = parts.dirs.len().max(1) as f64;
    let geo = refs.geometry();
    let geo_s: Vec<String> = {
        let mut g: Vec<(u32, u32, u32)> = geo.clone();
        g.sort_unstable();
        g.dedup();
        g.iter().map(|(d, e, wd)| format!("{d}/{e}/{wd}")).collect()
    };
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} tables, refs {} bits)",
            "refs: build fp/s",
            human(build),
            geo.len(),
            geo.first().map_or(0, |g| g.2 - g.1)
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({:.1}x brute force)",
            "refs: queries/s 1 thread",
            human(q1),
            q1 / qbrute.max(1e-9)
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12.1}   (fps {:.2}, ids {:.2}, per table {:.2} entries + {:.2} directory; d/e/w {})",
            "refs: bytes/fp (all, ids incl.)",
            refs.bytes() as f64 / n,
            parts.fps as f64 / n,
            parts.ids as f64 / n,
            parts.entries.iter().sum::<usize>() as f64 / n / t_count,
            parts.dirs.iter().sum::<usize>() as f64 / n / t_count,
            geo_s.join(" ")
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12.2}   (worst {worst}; entries read {:.1}/query)",
            "refs: candidates (fps read)/query",
            cands as f64 / nq,
            examined as f64 / nq
        ),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} queries checked; {} extra)",
            "refs: misses vs brute force",
            misses,
            brute.len(),
            extra
        ),
    )?;
    Ok(misses == 0 && extra == 0)
}

/// `bench index --only-compact`: the brute-force oracle, the reference index
/// and (unless `--no-compression`) the compressed tables, built from the
/// workload alone (no live index), so 100M fingerprints fit in memory.
pub(super) fn run_compact(opts: &Options, design: &Design, k: u32, wl: &Workload, out: &mut impl Write) -> Result<()> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    let (brute, qbrute) = brute_answers(wl, k, opts.brute_queries);
    w(out, format!("{:<34} {:>12}", "brute-force queries/s", human(qbrute)))?;
    let items: Vec<(u64, u64)> = wl.items().collect();
    let ok = ref_rows(design, k, wl, &items, &brute, qbrute, out)?;
    drop(items);
    if !opts.no_compression {
        let mut distinct = wl.fps.clone();
        distinct.par_sort_unstable();
        distinct.dedup();
        let c = Compressed::measure(design, opts.n, &wl.queries, |i| {
            let s = &design.specs()[i];
            let mut keys: Vec<u64> = distinct.par_iter().map(|&fp| s.permute(fp)).collect();
            keys.par_sort_unstable();
            keys
        });
        w(
            out,
            format!(
                "{:<34} {:>12}   ({:.1}x brute force; decodes {:.1}/query)",
                "queries/s 1 thread, compressed",
                human(c.qps),
                c.qps / qbrute.max(1e-9),
                c.decoded
            ),
        )?;
        w(
            out,
            format!("{:<34} {:>12.2}", "compressed bytes/fp per table", c.table),
        )?;
        w(
            out,
            format!(
                "{:<34} {:>12.1}   (encode {:.2} s)",
                "compressed bytes/fp (+ 8 B id)", c.total, c.secs
            ),
        )?;
    }
    if !ok {
        return Err(Error::InvalidInput(
            "the reference index disagrees with brute force".into(),
        ));
    }
    Ok(())
}
