//! Batch queries (Manku §3.3, `simcrawl hamming`): tables are built over the
//! (small) query set Q, and the (large) set of existing fingerprints F is
//! scanned in parallel chunks, each fingerprint probing Q's tables. Reports
//! every (q, f) pair within k.

use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use super::design::Design;
use super::table::{Geometry, Run};
use crate::error::{Error, Result};

/// Fingerprints probed per rayon task: large, so that sweeping a table in
/// bucket order reads each of its cache lines for many probes.
const CHUNK: usize = 1 << 18;

/// Every `(q_index, f_index, distance)` with `distance(queries[q], fingerprints[f]) <= k`,
/// 0-based, sorted by q then f. `tables` picks a design with at most that many
/// tables ([`Design::with_tables`]); by default one chosen by |Q| ([`Design::for_k`]).
pub fn run(fingerprints: &[u64], queries: &[u64], k: u32, tables: Option<usize>) -> Vec<(usize, usize, u32)> {
    let design = design_for(queries.len(), k, tables);
    let geo = Geometry::new(&design, k);
    // Distinct queries in the tables; repeated query values resolved afterwards.
    let mut order: Vec<(u64, u64)> = queries.iter().enumerate().map(|(i, &q)| (q, i as u64)).collect();
    order.par_sort_unstable();
    let mut distinct: Vec<(u64, u64)> = Vec::new();
    // For each distinct value, the range of `order` holding its query indices.
    let mut first_of: Vec<usize> = Vec::new();
    for (i, &(q, _)) in order.iter().enumerate() {
        if distinct.last().is_none_or(|&(last, _)| last != q) {
            distinct.push((q, first_of.len() as u64));
            first_of.push(i);
        }
    }
    first_of.push(order.len());
    let run = Run::build(&geo, &distinct);
    let mut out: Vec<(usize, usize, u32)> = fingerprints
        .par_chunks(CHUNK)
        .enumerate()
        .flat_map_iter(|(c, chunk)| {
            let mut found = Vec::new();
            run.sweep_fast(&geo, chunk, |fi, _q, slot, d| {
                let slot = slot as usize;
                for &(_, qi) in &order[first_of[slot]..first_of[slot + 1]] {
                    found.push((qi as usize, c * CHUNK + fi, d));
                }
            });
            found
        })
        .collect();
    out.par_sort_unstable();
    out
}

/// The design batch mode uses for `n` queries.
pub fn design_for(n: usize, k: u32, tables: Option<usize>) -> Design {
    match tables {
        Some(t) => Design::with_tables(k, t),
        None => {
            // One size smaller than X(f, k, d) picks for the crawl: a probe
            // expects up to 16 queries, not 8, and the fewer tables over Q stay
            // in cache while F streams past (4 tables instead of 10 at |Q| = 1M).
            let log2 = usize::BITS - n.max(1).leading_zeros();
            Design::for_k(k, log2.saturating_sub(1).max(10))
        }
    }
}

/// Parses one fingerprint line: exactly 16 hex digits (surrounding
/// whitespace ignored).
pub fn parse_line(line: &str) -> Option<u64> {
    let t = line.trim();
    if t.len() != 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(t, 16).ok()
}

/// Reads a fingerprint file (16 hex digits per line). A bad line is an
/// [`Error::InvalidInput`] naming the file and the 1-based line number.
pub fn read_fingerprints(path: impl AsRef<Path>) -> Result<Vec<u64>> {
    let path = path.as_ref();
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text =
        String::from_utf8(text).map_err(|e| Error::InvalidInput(format!("{}: not UTF-8 text: {e}", path.display())))?;
    let mut out = Vec::with_capacity(text.len() / 17);
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Some(v) => out.push(v),
            None => {
                let shown: String = line.chars().take(40).collect();
                return Err(Error::InvalidInput(format!(
                    "{}:{}: expected 16 hex digits, got {shown:?}",
                    path.display(),
                    i + 1
                )));
            }
        }
    }
    Ok(out)
}

/// `simcrawl hamming`: writes `q_line\tf_line\tdistance` (1-based) per match.
pub fn run_files(
    fingerprints: &Path,
    queries: &Path,
    k: u32,
    tables: Option<usize>,
    out: impl std::io::Write,
) -> Result<usize> {
    if k > 32 {
        return Err(Error::InvalidInput(format!("-k {k}: expected 0..=32")));
    }
    if tables == Some(0) {
        return Err(Error::InvalidInput("--tables 0: expected at least 1".into()));
    }
    let f = read_fingerprints(fingerprints)?;
    let q = read_fingerprints(queries)?;
    let pairs = run(&f, &q, k, tables);
    let mut w = std::io::BufWriter::new(out);
    for &(qi, fi, d) in &pairs {
        writeln!(w, "{}\t{}\t{}", qi + 1, fi + 1, d).map_err(|e| Error::io("<stdout>", e))?;
    }
    w.flush().map_err(|e| Error::io("<stdout>", e))?;
    Ok(pairs.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(f: &[u64], q: &[u64], k: u32) -> Vec<(usize, usize, u32)> {
        let mut v = Vec::new();
        for (qi, &a) in q.iter().enumerate() {
            for (fi, &b) in f.iter().enumerate() {
                let d = (a ^ b).count_ones();
                if d <= k {
                    v.push((qi, fi, d));
                }
            }
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn batch_equals_brute_force(
            k in 0u32..=5,
            tables in proptest::option::of(1usize..12),
            q in proptest::collection::vec(any::<u64>(), 0..30),
            f in proptest::collection::vec((any::<u64>(), 0usize..30, any::<u64>()), 0..200),
        ) {
            // Half the stored fingerprints are planted neighbours of queries.
            let f: Vec<u64> = f.into_iter().map(|(r, pick, noise)| {
                if q.is_empty() || r % 2 == 0 { r } else {
                    let mut x = q[pick % q.len()];
                    for s in 0..(noise % (k as u64 + 3)) { x ^= 1 << ((noise >> (8 * s + 8)) & 63); }
                    x
                }
            }).collect();
            let mut q2 = q.clone();
            if let Some(&first) = q.first() { q2.push(first); } // a repeated query
            prop_assert_eq!(run(&f, &q2, k, tables), brute(&f, &q2, k));
        }
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, "0000000000000000\nffffffffffffffff\n12345\n").unwrap();
        let e = read_fingerprints(&p).unwrap_err().to_string();
        assert!(e.ends_with("f.txt:3: expected 16 hex digits, got \"12345\""), "{e}");
        assert!(parse_line("g000000000000000").is_none());
        assert!(parse_line("+00000000000000f").is_none());
        assert_eq!(parse_line(" 00000000000000Ff "), Some(255));
    }
}
