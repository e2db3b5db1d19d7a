//! `simcrawl bench hamming`: batch mode against brute force, on random
//! fingerprints with planted neighbours.

use std::io::Write;
use std::time::Instant;

use super::{human, rate, Rng};
use crate::error::{Error, Result};
use crate::index::batch;

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
    let design = batch::design_for(q, k, tables);
    let t = Instant::now();
    let pairs = batch::run(&fps, &queries, k, tables);
    let secs = t.elapsed().as_secs_f64();
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
    if misses > 0 {
        return Err(Error::InvalidInput("batch mode disagrees with brute force".into()));
    }
    Ok(())
}
