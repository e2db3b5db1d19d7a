//! Evaluation harness (beside the pipeline): precision and recall of each
//! near-duplicate detector against exact shingle resemblance.
//!
//! Ground truth is computed, not sampled: every pair of pages whose exact
//! w-shingle resemblance (Jaccard) is at least the lowest reported threshold
//! (0.8) is found by an exact all-pairs similarity join with prefix
//! filtering ([`exact_pairs`]): shingles are ordered rarest first, and two
//! sets of resemblance ≥ t must share one of the first |x| − ⌈t·|x|⌉ + 1
//! shingles of each, so only pairs sharing a prefix shingle are compared and
//! none is missed. A random sample of other pairs is still scored exactly as
//! a check that the join missed nothing ([`SampleCheck`]). A pair is a true
//! near duplicate at threshold θ (0.8, 0.9 — the headline — and 0.95) when its
//! resemblance is ≥ θ.
//!
//! Each method proposes its pairs the way `simcrawl near` finds them
//! ([`crate::sketch::near`]), for every setting: simhash k = 0..=10, simhash
//! with min-hash verification, min-hash super-shingles for several s and
//! r = 1..=k, and Bloom similarity thresholds. The [`Report`] has precision
//! and recall per setting and threshold, written as a text table, CSV and
//! SVG plots (precision and recall against k, like Manku et al.'s Figure 1).
//!
//! [`corpus`] reads the documents (a directory, or a crawl's stored bodies)
//! and runs `simcrawl near` and `simcrawl eval` over them.

pub mod corpus;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::sketch::minhash::{super_shingles_of, FeatureIndex};
use crate::sketch::near::{bloom_pairs, simhash_pairs, Detectors, PageSketch};
use crate::sketch::{intersection_size, jaccard};

/// Resemblance thresholds at which precision and recall are reported.
pub const TRUTH_THRESHOLDS: [f64; 3] = [0.8, 0.9, 0.95];
/// The headline threshold (table and plots).
pub const PRIMARY_THRESHOLD: f64 = 0.9;
/// Largest simhash k evaluated.
pub const MAX_K: u32 = 10;
/// Bloom similarity thresholds evaluated.
pub const BLOOM_THRESHOLDS: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0];
/// Random pairs scored exactly to check the exact join.
pub const SAMPLE_PAIRS: usize = 20_000;

/// Every pair (a < b) of sets with exact Jaccard resemblance ≥ `t` (t > 0),
/// with the resemblance, sorted. Empty sets match nothing.
pub fn exact_pairs(sets: &[Vec<u64>], t: f64) -> Vec<(u32, u32, f64)> {
    let t = t.clamp(f64::MIN_POSITIVE, 1.0);
    // Global order: rarest shingle first.
    let mut freq: HashMap<u64, u32> = HashMap::new();
    for s in sets {
        for &x in s {
            *freq.entry(x).or_default() += 1;
        }
    }
    let prefix_len = |n: usize| n - ((t * n as f64 - 1e-9).ceil() as usize).min(n) + 1;
    let prefixes: Vec<Vec<u64>> = sets
        .par_iter()
        .map(|s| {
            if s.is_empty() {
                return Vec::new();
            }
            let mut r: Vec<(u32, u64)> = s.iter().map(|&x| (freq[&x], x)).collect();
            r.sort_unstable();
            r.truncate(prefix_len(s.len()));
            r.into_iter().map(|(_, x)| x).collect()
        })
        .collect();
    // Process in (size, id) order; each doc probes earlier (smaller) docs only.
    let order_key = |d: usize| (sets[d].len(), d);
    let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
    for (d, p) in prefixes.iter().enumerate() {
        for &x in p {
            postings.entry(x).or_default().push(d as u32);
        }
    }
    let mut out: Vec<(u32, u32, f64)> = (0..sets.len())
        .into_par_iter()
        .flat_map_iter(|x| {
            let min_size = (t * sets[x].len() as f64 - 1e-9).ceil() as usize;
            let mut cands: Vec<u32> = prefixes[x]
                .iter()
                .flat_map(|tok| postings.get(tok).map(Vec::as_slice).unwrap_or(&[]))
                .copied()
                .filter(|&y| order_key(y as usize) < order_key(x) && sets[y as usize].len() >= min_size)
                .collect();
            cands.sort_unstable();
            cands.dedup();
            cands.into_iter().filter_map(move |y| {
                let (a, b) = (&sets[x], &sets[y as usize]);
                let inter = intersection_size(a, b);
                let j = inter as f64 / (a.len() + b.len() - inter) as f64;
                (j >= t).then_some(((y as usize).min(x) as u32, (y as usize).max(x) as u32, j))
            })
        })
        .collect();
    out.sort_unstable_by_key(|&(a, b, _)| (a, b));
    out
}

/// Points (x, y) of one plotted curve.
pub type Points = Vec<(f64, f64)>;
/// One curve of [`line_plot`]: name, points, dashed.
pub type Series<'a> = (&'a str, &'a [(f64, f64)], bool);
/// One evaluated setting: method, label, x, series, predicted pairs.
type Setting = (&'static str, String, f64, usize, Vec<(u32, u32)>);

/// Random pairs scored exactly, as a check on [`exact_pairs`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleCheck {
    /// Distinct random pairs scored.
    pub sampled: usize,
    /// Of those, pairs with resemblance ≥ the lowest threshold.
    pub above: usize,
    /// Of those, pairs the exact join did not find (must be 0).
    pub missed: usize,
}

/// Precision and recall of one method setting at one truth threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `simhash`, `simhash+verify`, `minhash` or `bloom`.
    pub method: &'static str,
    /// The setting, e.g. `k=3`, `k=6 s=14 r=2`, `t=0.70`.
    pub setting: String,
    /// The plotted parameter (k, r or the Bloom threshold).
    pub x: f64,
    /// For min-hash: s (one curve per s); 0 otherwise.
    pub series: usize,
    /// The resemblance threshold defining true near duplicates.
    pub truth_threshold: f64,
    /// Pairs the method proposed.
    pub predicted: usize,
    /// Proposed pairs that are true near duplicates.
    pub correct: usize,
    /// All true near duplicates.
    pub truth: usize,
}

impl Row {
    /// correct / predicted (1 when nothing was predicted).
    pub fn precision(&self) -> f64 {
        if self.predicted == 0 {
            1.0
        } else {
            self.correct as f64 / self.predicted as f64
        }
    }

    /// correct / truth (1 when there is nothing to find).
    pub fn recall(&self) -> f64 {
        if self.truth == 0 {
            1.0
        } else {
            self.correct as f64 / self.truth as f64
        }
    }
}

/// The outcome of an evaluation.
#[derive(Debug, Clone)]
pub struct Report {
    /// Pages evaluated.
    pub pages: usize,
    /// Pages with at least one shingle.
    pub nonempty_pages: usize,
    /// True near-duplicate pairs per threshold.
    pub truth_pairs: Vec<(f64, usize)>,
    /// The exact-join check.
    pub sample: SampleCheck,
    /// The min-hash verification threshold used for `simhash+verify`.
    pub verify_threshold: f64,
    /// One row per (method setting, truth threshold).
    pub rows: Vec<Row>,
}

/// Evaluate every method and setting on `pages` (sketched with `det`);
/// `verify_threshold` is the min-hash resemblance required by `simhash+verify`.
pub fn evaluate(pages: &[PageSketch], det: &Detectors, verify_threshold: f64) -> Report {
    let sets: Vec<Vec<u64>> = pages.iter().map(|p| p.shingles.clone()).collect();
    let lowest = TRUTH_THRESHOLDS.iter().copied().fold(1.0, f64::min);
    let truth: HashMap<(u32, u32), f64> = exact_pairs(&sets, lowest)
        .into_iter()
        .map(|(a, b, j)| ((a, b), j))
        .collect();
    let sample = sample_check(&sets, &truth, lowest);
    let is_true = |a: u32, b: u32, theta: f64| truth.get(&(a, b)).is_some_and(|&j| j >= theta);

    // Each setting's predicted pairs.
    let mut settings: Vec<Setting> = Vec::new();
    let fps: Vec<u64> = pages.iter().map(|p| p.simhash).collect();
    let sim = simhash_pairs(&fps, MAX_K);
    for k in 0..=MAX_K {
        let within: Vec<(u32, u32)> = sim.iter().filter(|p| p.2 <= k).map(|p| (p.0, p.1)).collect();
        let verified: Vec<(u32, u32)> = within
            .iter()
            .copied()
            .filter(|&(a, b)| pages[a as usize].minhash.resemblance(&pages[b as usize].minhash) >= verify_threshold)
            .collect();
        settings.push(("simhash", format!("k={k}"), f64::from(k), 0, within));
        settings.push(("simhash+verify", format!("k={k}"), f64::from(k), 0, verified));
    }
    let groups = det.minhash.groups();
    let mins_len = pages.iter().map(|p| p.minhash.mins.len()).max().unwrap_or(0);
    let mut sizes: Vec<usize> = vec![7, 10, det.minhash.group_size()];
    sizes.sort_unstable();
    sizes.dedup();
    for s in sizes.into_iter().filter(|&s| groups * s <= mins_len) {
        let mut idx = FeatureIndex::new();
        for (i, p) in pages.iter().enumerate() {
            idx.insert(i as u32, &super_shingles_of(&p.minhash.mins, groups, s));
        }
        let cands = idx.pairs(1);
        for r in 1..=groups {
            let pred = cands.iter().filter(|c| c.2 >= r).map(|c| (c.0, c.1)).collect();
            settings.push(("minhash", format!("k={groups} s={s} r={r}"), r as f64, s, pred));
        }
    }
    let lowest_bloom = BLOOM_THRESHOLDS.iter().copied().fold(1.0, f64::min);
    let bloom = bloom_pairs(pages, lowest_bloom);
    for t in BLOOM_THRESHOLDS {
        let pred = bloom.iter().filter(|p| p.score >= t).map(|p| (p.a, p.b)).collect();
        settings.push(("bloom", format!("t={t:.2}"), t, 0, pred));
    }

    let truth_pairs: Vec<(f64, usize)> = TRUTH_THRESHOLDS
        .iter()
        .map(|&th| (th, truth.values().filter(|&&j| j >= th).count()))
        .collect();
    let mut rows = Vec::new();
    for (method, setting, x, series, pred) in &settings {
        for &(th, n_truth) in &truth_pairs {
            let correct = pred.iter().filter(|&&(a, b)| is_true(a, b, th)).count();
            rows.push(Row {
                method,
                setting: setting.clone(),
                x: *x,
                series: *series,
                truth_threshold: th,
                predicted: pred.len(),
                correct,
                truth: n_truth,
            });
        }
    }
    Report {
        pages: pages.len(),
        nonempty_pages: sets.iter().filter(|s| !s.is_empty()).count(),
        truth_pairs,
        sample,
        verify_threshold,
        rows,
    }
}

/// Score up to [`SAMPLE_PAIRS`] distinct random pairs (fixed seed) exactly.
fn sample_check(sets: &[Vec<u64>], truth: &HashMap<(u32, u32), f64>, t: f64) -> SampleCheck {
    let n = sets.len();
    let all = n * n.saturating_sub(1) / 2;
    let mut pairs: Vec<(u32, u32)> = if all <= SAMPLE_PAIRS {
        (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a as u32, b as u32)))
            .collect()
    } else {
        let mut x = 0x5a3b_1e00_u64;
        let mut v = Vec::with_capacity(SAMPLE_PAIRS);
        while v.len() < SAMPLE_PAIRS {
            x = crate::sketch::mix64(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
            let (a, b) = ((x % n as u64) as u32, ((x >> 32) % n as u64) as u32);
            if a != b {
                v.push((a.min(b), a.max(b)));
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    };
    pairs.retain(|&(a, b)| a != b);
    let scored: Vec<bool> = pairs
        .par_iter()
        .map(|&(a, b)| jaccard(&sets[a as usize], &sets[b as usize]) >= t)
        .collect();
    let above = scored.iter().filter(|&&x| x).count();
    let missed = pairs
        .iter()
        .zip(&scored)
        .filter(|(p, &x)| x && !truth.contains_key(p))
        .count();
    SampleCheck {
        sampled: pairs.len(),
        above,
        missed,
    }
}

impl Report {
    /// The rows at one truth threshold.
    pub fn at(&self, theta: f64) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(move |r| (r.truth_threshold - theta).abs() < 1e-9)
    }

    /// A fixed-width text table of the rows at `theta`, with a header
    /// giving the corpus and truth sizes.
    pub fn table(&self, theta: f64) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "pages: {} ({} with shingles); true near-duplicate pairs: {}",
            self.pages,
            self.nonempty_pages,
            self.truth_pairs
                .iter()
                .map(|(t, n)| format!("{n} at >= {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            s,
            "exact join check: {} random pairs scored, {} >= {}, {} missed by the join",
            self.sample.sampled, self.sample.above, TRUTH_THRESHOLDS[0], self.sample.missed
        );
        let _ = writeln!(s, "precision/recall at resemblance >= {theta}:");
        let _ = writeln!(
            s,
            "{:<15} {:<14} {:>9} {:>8} {:>9} {:>7}",
            "method", "setting", "predicted", "correct", "precision", "recall"
        );
        for r in self.at(theta) {
            let _ = writeln!(
                s,
                "{:<15} {:<14} {:>9} {:>8} {:>9.3} {:>7.3}",
                r.method,
                r.setting,
                r.predicted,
                r.correct,
                r.precision(),
                r.recall()
            );
        }
        s
    }

    /// All rows as CSV with a header line.
    pub fn csv(&self) -> String {
        let mut s = String::from("method,setting,truth_threshold,predicted,correct,truth,precision,recall\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.4},{:.4}",
                r.method,
                r.setting,
                r.truth_threshold,
                r.predicted,
                r.correct,
                r.truth,
                r.precision(),
                r.recall()
            );
        }
        s
    }

    fn curve(&self, method: &str, series: usize, theta: f64) -> (Points, Points) {
        let rows: Vec<&Row> = self
            .at(theta)
            .filter(|r| r.method == method && r.series == series)
            .collect();
        (
            rows.iter().map(|r| (r.x, r.precision())).collect(),
            rows.iter().map(|r| (r.x, r.recall())).collect(),
        )
    }

    /// SVG plots at `theta`: (file name, SVG text) for simhash (precision and
    /// recall against k, with and without verification), min-hash (against
    /// r, one pair of curves per s) and Bloom (against the threshold).
    pub fn plots(&self, theta: f64) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let (p, r) = self.curve("simhash", 0, theta);
        let (vp, vr) = self.curve("simhash+verify", 0, theta);
        let verify = format!("verified (minhash >= {})", self.verify_threshold);
        out.push((
            "eval-simhash.svg".to_string(),
            line_plot(
                &format!("simhash: precision and recall vs k (resemblance >= {theta})"),
                "Hamming distance k",
                &[
                    ("precision", &p, false),
                    ("recall", &r, false),
                    (&format!("precision, {verify}"), &vp, true),
                    (&format!("recall, {verify}"), &vr, true),
                ],
            ),
        ));
        let mut series: Vec<usize> = self
            .rows
            .iter()
            .filter(|r| r.method == "minhash")
            .map(|r| r.series)
            .collect();
        series.sort_unstable();
        series.dedup();
        let curves: Vec<(String, Points, bool)> = series
            .iter()
            .flat_map(|&s| {
                let (p, r) = self.curve("minhash", s, theta);
                [
                    (format!("precision, s={s}"), p, false),
                    (format!("recall, s={s}"), r, true),
                ]
            })
            .collect();
        let refs: Vec<Series<'_>> = curves.iter().map(|(n, c, d)| (n.as_str(), &c[..], *d)).collect();
        out.push((
            "eval-minhash.svg".to_string(),
            line_plot(
                &format!("min-hash super-shingles: precision and recall vs r (resemblance >= {theta})"),
                "shared super-shingles r",
                &refs.iter().map(|(n, c, d)| (*n, *c, *d)).collect::<Vec<_>>(),
            ),
        ));
        let (p, r) = self.curve("bloom", 0, theta);
        out.push((
            "eval-bloom.svg".to_string(),
            line_plot(
                &format!("Bloom over CDC: precision and recall vs threshold (resemblance >= {theta})"),
                "Bloom similarity threshold",
                &[("precision", &p, false), ("recall", &r, false)],
            ),
        ));
        out
    }

    /// Write `eval.csv`, `eval.txt` (the table at every threshold) and the
    /// plots at [`PRIMARY_THRESHOLD`] into `dir`; the paths written.
    pub fn write(&self, dir: &Path) -> crate::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| crate::Error::io(dir, e))?;
        let mut files = vec![("eval.csv".to_string(), self.csv())];
        let tables: Vec<String> = TRUTH_THRESHOLDS.iter().map(|&t| self.table(t)).collect();
        files.push(("eval.txt".to_string(), tables.join("\n")));
        files.extend(self.plots(PRIMARY_THRESHOLD));
        let mut written = Vec::new();
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| crate::Error::io(&path, e))?;
            written.push(path);
        }
        Ok(written)
    }
}

/// A line plot as standalone SVG: y from 0 to 1, x over the data's range;
/// each series (name, points, dashed) drawn as a polyline with markers.
pub fn line_plot(title: &str, x_label: &str, series: &[Series<'_>]) -> String {
    const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];
    let (w, h) = (720.0, 440.0);
    let (left, right, top, bottom) = (60.0, 250.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let xs: Vec<f64> = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).collect();
    let xmin = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let xmax = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
        (xmin, xmax)
    } else {
        (0.0, 1.0)
    };
    let sx = |x: f64| left + (x - xmin) / (xmax - xmin) * pw;
    let sy = |y: f64| top + (1.0 - y.clamp(0.0, 1.0)) * ph;
    let esc = |t: &str| t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{}" y="22" font-size="14">{}</text>"#, left, esc(title));
    for i in 0..=5 {
        let y = f64::from(i) / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{2}" y="{3:.1}" text-anchor="end">{y:.1}</text>"##,
            sy(y),
            left + pw,
            left - 6.0,
            sy(y) + 4.0
        );
    }
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in ticks {
        let label = if x.fract() == 0.0 {
            format!("{x}")
        } else {
            format!("{x:.2}")
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
            sx(x),
            top + ph + 16.0
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        h - 12.0,
        esc(x_label)
    );
    for (i, (name, pts, dashed)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = if *dashed { r#" stroke-dasharray="6 4""# } else { "" };
        let path: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for &(x, y) in pts.iter() {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                sx(x),
                sy(y)
            );
        }
        let ly = top + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{2}" y="{3}">{4}</text>"#,
            left + pw + 10.0,
            left + pw + 35.0,
            left + pw + 40.0,
            ly + 4.0,
            esc(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::sketch::mix64;

    fn words(seed: u64, n: usize) -> Vec<String> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = mix64(x.wrapping_add(1));
                format!("w{}", x % 3000)
            })
            .collect()
    }

    #[test]
    fn exact_join_equals_brute_force() {
        // Sets with many overlaps at all levels.
        let base = words(1, 400);
        let mut docs: Vec<Vec<String>> = Vec::new();
        for i in 0..40usize {
            let mut d = base.clone();
            let every = 2 + i * 7;
            for (j, w) in d.iter_mut().enumerate() {
                if j % every == 0 {
                    *w = format!("e{i}_{j}");
                }
            }
            d.truncate(400 - i * 5);
            docs.push(d);
        }
        docs.push(Vec::new());
        docs.push(words(9, 30));
        let sets: Vec<Vec<u64>> = docs.iter().map(|d| crate::sketch::shingles(d, 3)).collect();
        for t in [0.3, 0.8, 0.9] {
            let got = exact_pairs(&sets, t);
            let mut want = Vec::new();
            for a in 0..sets.len() {
                for b in a + 1..sets.len() {
                    let j = jaccard(&sets[a], &sets[b]);
                    if j >= t {
                        want.push((a as u32, b as u32, j));
                    }
                }
            }
            assert!(!want.is_empty(), "t={t}");
            assert_eq!(got, want, "t={t}");
        }
    }

    #[test]
    fn evaluation_scores_a_planted_corpus() {
        let s = Settings::default();
        let det = Detectors::from_settings(&s);
        let mut pages = Vec::new();
        // 10 originals, each with a near copy (one word changed) and a far copy.
        for i in 0..10u64 {
            let base = words(100 + i, 800);
            let mut near = base.clone();
            near[400] = "changed".into();
            let mut far = base.clone();
            for w in far.iter_mut().step_by(4) {
                *w = "x".into();
            }
            for (j, t) in [base, near, far].iter().enumerate() {
                // Stand-in fingerprints: originals and near copies share one.
                let fp = mix64(i) ^ if j == 2 { 0xffff_ffff } else { j as u64 };
                pages.push(det.sketch_page(t, fp));
            }
        }
        let rep = evaluate(&pages, &det, 0.8);
        assert_eq!(rep.truth_pairs[1], (0.9, 10));
        assert_eq!(rep.sample.missed, 0);
        let row = |m: &str, set: &str| {
            rep.at(0.9)
                .find(|r| r.method == m && r.setting == set)
                .cloned()
                .unwrap_or_else(|| panic!("{m} {set}"))
        };
        let sim = row("simhash", "k=1");
        assert_eq!((sim.predicted, sim.correct), (10, 10));
        let mh = row("minhash", "k=6 s=14 r=2");
        assert_eq!((mh.precision(), mh.recall()), (1.0, 1.0));
        let bl = row("bloom", "t=0.70");
        assert_eq!(bl.recall(), 1.0);
        assert!(rep.table(0.9).contains("simhash+verify"));
        assert_eq!(rep.csv().lines().count(), 1 + rep.rows.len());
        let plots = rep.plots(0.9);
        assert_eq!(plots.len(), 3);
        assert!(plots
            .iter()
            .all(|(_, svg)| svg.starts_with("<svg") && svg.contains("polyline")));
    }
}
