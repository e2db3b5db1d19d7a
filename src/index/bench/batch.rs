//! `simcrawl bench hamming` (beside the index pipeline): batch mode against
//! brute force and against the previous sweep, on random fingerprints with
//! planted neighbours.

use std::io::Write;
use std::time::Instant;

use super::{human, rate, Rng};
use crate::error::{Error, Result};

/// `simcrawl bench hamming`: batch mode over `n` random stored fingerprints
/// (1% of them planted within k of a query) and `q` random queries, timed, and
/// checked against a brute-force scan for a sample of queries.
pub fn run_batch(n: usize, q: usize, tables: Option<usize>, out: &mut impl Write) -> Result<()> {
    let k = 3;
    let mut rng = Rng::new(7);
    let queries: Vec<u64> = (0..q).map(|_| rng.next_u64()).collect();
    let fps: Vec<u64> = (0..n)
        .map(|i| {
            if i % 100 == 0 && q > 0 {
                let mut x = queries[rng.below(q as u64) as usize];
                for _ in 0..rng.below(k as u64 + 1) {
                    x ^= 1 << rng.below(64);
                }
                x
            } else {
                rng.next_u64()
            }
        })
        .collect();
    let design = crate::index::batch::design_for(q, k, tables);
    let t = Instant::now();
    let pairs = crate::index::batch::run(&fps, &queries, k, tables);
    let secs = t.elapsed().as_secs_f64();
    // The previous path (Run::sweep) on the first 10M fingerprints, in this
    // process, as the baseline; it must agree on them too.
    let m = n.min(10_000_000);
    let t = Instant::now();
    let prev = crate::index::batch::run_sweep(&fps[..m], &queries, k, tables);
    let prev_secs = t.elapsed().as_secs_f64();
    let mut head: Vec<(usize, usize, u32)> = pairs.iter().copied().filter(|p| p.1 < m).collect();
    head.sort_unstable();
    let prev_agrees = head == prev;
    // Brute force over every fingerprint for a few queries: the oracle, and
    // the time a scan without tables would take.
    let sample: Vec<usize> = (0..q.min(8)).map(|i| i * (q / 8).max(1)).filter(|&i| i < q).collect();
    let t = Instant::now();
    let mut misses = 0usize;
    for &qi in &sample {
        let want: Vec<usize> = fps
            .iter()
            .enumerate()
            .filter(|(_, &f)| (f ^ queries[qi]).count_ones() <= k)
            .map(|(fi, _)| fi)
            .collect();
        let lo = pairs.partition_point(|p| p.0 < qi);
        let hi = pairs.partition_point(|p| p.0 <= qi);
        let got: Vec<usize> = pairs[lo..hi].iter().map(|p| p.1).collect();
        misses += usize::from(got != want);
    }
    let brute_secs = t.elapsed().as_secs_f64() / sample.len().max(1) as f64 * q as f64;
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("<stdout>", e));
    w(
        out,
        format!(
            "== batch: {n} fingerprints x {q} queries, k={k}, design: {} ==",
            design.name()
        ),
    )?;
    w(
        out,
        format!("{:<34} {:>10.2} s", "simcrawl (tables over Q, scan F)", secs),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>10.0} s   ({:.0}x; estimated from {} queries)",
            "brute force",
            brute_secs,
            brute_secs / secs,
            sample.len()
        ),
    )?;
    w(
        out,
        format!("{:<34} {:>12}", "fingerprints probed/s", human(rate(n, secs))),
    )?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({:.2}x; first {m} fingerprints; {})",
            "previous sweep (Run::sweep), fp/s",
            human(rate(m, prev_secs)),
            rate(n, secs) / rate(m, prev_secs).max(1e-9),
            if prev_agrees { "same pairs" } else { "DIFFERENT pairs" }
        ),
    )?;
    w(out, format!("{:<34} {:>12}", "pairs within k", pairs.len()))?;
    w(
        out,
        format!(
            "{:<34} {:>12}   ({} queries checked)",
            "queries disagreeing with brute force",
            misses,
            sample.len()
        ),
    )?;
    if misses > 0 || !prev_agrees {
        return Err(Error::InvalidInput(
            "batch mode disagrees with brute force or the previous path".into(),
        ));
    }
    Ok(())
}
