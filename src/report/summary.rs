//! The crawl summary (reports stage): pages by decision, status and content
//! type; a per-host table; what dedup saved; and the fingerprint statistics of
//! Manku et al. §4.2 (Figure 2) showing how far from uniform the simhashes are.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{csv_line, opt, CrawlStats};
use crate::crawllog::PageRecord;
use crate::host::split_url;
use crate::mirror::has_content;
use crate::model::{Change, Decision};

/// Every decision, in report order.
pub const DECISIONS: [Decision; 10] = Decision::ALL;

/// Fingerprint histogram buckets (Manku Figure 2(b)).
pub const BUCKETS: usize = 128;

/// Records with one decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionCount {
    /// The decision (`pages.jsonl` spelling).
    pub decision: String,
    /// Records.
    pub count: u64,
}

/// Records with one HTTP status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusCount {
    /// HTTP status (0: no response).
    pub status: u16,
    /// Records.
    pub count: u64,
}

/// Records with one content type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeCount {
    /// Media type, or "none".
    pub content_type: String,
    /// Records.
    pub count: u64,
}

/// One row of the per-host table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    /// Host (authority).
    pub host: String,
    /// Fetch attempts (records).
    pub fetched: u64,
    /// Pages with content (2xx with a hash or fingerprint).
    pub pages: u64,
    /// Exact and near duplicates.
    pub duplicates: u64,
    /// duplicates / pages (0 without pages).
    pub duplicate_rate: f64,
    /// Records decided `error` (network errors and HTTP 4xx/5xx).
    pub errors: u64,
    /// Records decided `disallowed` (robots.txt).
    pub disallowed: u64,
    /// Body bytes read.
    pub bytes: u64,
    /// Mean response time, ms (null when none recorded).
    pub mean_latency_ms: Option<f64>,
    /// Mean politeness delay applied before a request, ms (null when none).
    pub mean_delay_ms: Option<f64>,
}

/// What dedup saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DedupStats {
    /// Exact and near duplicates fetched.
    pub duplicates: u64,
    /// Exact duplicates.
    pub exact: u64,
    /// Near duplicates.
    pub near: u64,
    /// duplicates / pages with content.
    pub duplicate_rate: f64,
    /// Out-links found on duplicate pages (the links dedup dropped or
    /// demoted: an upper bound on fetches saved, derived from the log).
    pub duplicate_outlinks: u64,
    /// Fetched URLs that carried a mirror penalty (score.mirror < 0).
    pub mirror_demoted_fetched: u64,
    /// Fetches saved as counted by the crawl (dropped duplicate out-links +
    /// mirror fetches saved), null without `crawl_stats.json`.
    pub fetches_saved: Option<u64>,
    /// The crawl's own counters (`crawl_stats.json`), null when absent.
    pub crawl_stats: Option<CrawlStats>,
}

/// Recrawl rounds: the revisits in the log, by what they found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevisitStats {
    /// Revisit records (`revisit` set).
    pub revisits: u64,
    /// Of which answered 304 Not Modified (decision `unchanged`).
    pub not_modified: u64,
    /// Revisits with a change class, per class (every class listed:
    /// `unchanged`, `near_unchanged`, `changed`).
    pub by_change: Vec<ChangeCount>,
    /// Revisits without a class (error, redirect, robots.txt, not HTML...).
    pub no_content: u64,
}

/// Revisits with one change class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeCount {
    /// The class (`pages.jsonl` spelling).
    pub change: String,
    /// Revisit records.
    pub count: u64,
}

/// Fingerprint distribution (Manku §4.2, Figure 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FingerprintStats {
    /// Records with a simhash.
    pub count: u64,
    /// Distinct simhashes.
    pub distinct: u64,
    /// Simhashes equal to 0 (empty pages).
    pub zero: u64,
    /// 64 counts: `leading_bit[i]` = successive distinct sorted fingerprints
    /// whose XOR has its leading 1-bit at position i (0 = most significant).
    pub leading_bit: Vec<u64>,
    /// For uniformly random fingerprints, the expected `leading_bit` counts.
    pub leading_bit_uniform: Vec<f64>,
    /// 128 counts: distinct fingerprints per equal-width bucket of the
    /// 64-bit space (bucket = top 7 bits).
    pub buckets: Vec<u64>,
    /// Pearson chi-square of `buckets` against uniform (127 degrees of
    /// freedom: about 127 ± 16 when uniform).
    pub bucket_chi_square: f64,
    /// Largest bucket / mean bucket.
    pub bucket_max_ratio: f64,
}

/// Focused crawls: how much of what was fetched is on the topic.
///
/// A crawl has no ground truth, so "on-topic" is the crawl's own judgement:
/// a page whose recorded relevance (`pages.jsonl` `relevance`, cosine
/// similarity to the topic profile) is at least `on_topic` (the crawl's
/// `focus.on_topic`, from `crawl_stats.json`, else the default). Only records
/// with a relevance count (pages that were parsed), in log order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarvestStats {
    /// The on-topic threshold used.
    pub on_topic: f64,
    /// Pages with a relevance.
    pub pages: u64,
    /// Of which on-topic.
    pub on_topic_pages: u64,
    /// on_topic_pages / pages.
    pub harvest_rate: f64,
    /// The harvest rate over the first half of those pages.
    pub first_half_rate: f64,
    /// Mean relevance.
    pub mean_relevance: f64,
    /// The curve: `[pages so far, cumulative harvest rate]`, at most
    /// [`CURVE_POINTS`] points, the last one at `pages`.
    pub curve: Vec<(u64, f64)>,
}

/// Points kept of the harvest-rate curve.
pub const CURVE_POINTS: usize = 200;

/// The harvest rate of the records that carry a relevance (None when none
/// does: the crawl was not focused). See [`HarvestStats`].
pub fn harvest(records: &[PageRecord], on_topic: f64) -> Option<HarvestStats> {
    let rel: Vec<f64> = records.iter().filter_map(|r| r.relevance).collect();
    harvest_of(&rel, on_topic)
}

/// The harvest rate of the relevances of the records that carry one, in log
/// order (None when empty).
pub fn harvest_of(rel: &[f64], on_topic: f64) -> Option<HarvestStats> {
    if rel.is_empty() {
        return None;
    }
    let n = rel.len();
    let step = n.div_ceil(CURVE_POINTS).max(1);
    let (mut on, mut half_on, mut sum) = (0u64, 0u64, 0.0);
    let mut curve = Vec::with_capacity(n / step + 1);
    for (i, &r) in rel.iter().enumerate() {
        sum += r;
        if r >= on_topic {
            on += 1;
        }
        if i + 1 == n.div_ceil(2) {
            half_on = on;
        }
        if (i + 1) % step == 0 || i + 1 == n {
            curve.push(((i + 1) as u64, on as f64 / (i + 1) as f64));
        }
    }
    Some(HarvestStats {
        on_topic,
        pages: n as u64,
        on_topic_pages: on,
        harvest_rate: rate(on, n as u64),
        first_half_rate: rate(half_on, n.div_ceil(2) as u64),
        mean_relevance: sum / n as f64,
        curve,
    })
}

/// The summary report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Records (fetch attempts) in `pages.jsonl`.
    pub records: u64,
    /// Pages with content.
    pub pages: u64,
    /// Distinct hosts.
    pub hosts_count: u64,
    /// Records per decision (every decision listed).
    pub by_decision: Vec<DecisionCount>,
    /// Records per HTTP status, ascending.
    pub by_status: Vec<StatusCount>,
    /// Records per content type, most first.
    pub by_content_type: Vec<TypeCount>,
    /// Per-host table, most fetched first.
    pub hosts: Vec<HostRow>,
    /// What dedup saved.
    pub dedup: DedupStats,
    /// Fingerprint distribution.
    pub fingerprints: FingerprintStats,
    /// Focused crawls: the harvest rate (absent for unfocused crawls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harvest: Option<HarvestStats>,
    /// Recrawl rounds: revisits by class (absent when the log has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisits: Option<RevisitStats>,
}

#[derive(Default)]
struct HostAcc {
    row: Option<HostRow>,
    latency: (u64, u64),
    delay: (u64, u64),
}

/// Build the summary from the records in memory (and the crawl's counters,
/// if any): a [`SummaryBuilder`] fed every record.
pub fn build(records: &[PageRecord], crawl_stats: Option<CrawlStats>) -> Summary {
    let mut b = SummaryBuilder::default();
    for r in records {
        b.add(r);
    }
    b.finish(crawl_stats)
}

/// The summary built one record at a time, in log order: counters, one
/// accumulator per host and per content type, and per record at most one
/// `u64` (its simhash, for the fingerprint statistics) and one `f64` (its
/// relevance, for the harvest curve).
#[derive(Default)]
pub struct SummaryBuilder {
    records: u64,
    by_decision: HashMap<Decision, u64>,
    by_status: BTreeMap<u16, u64>,
    by_type: HashMap<String, u64>,
    hosts: HashMap<String, HostAcc>,
    pages: u64,
    exact: u64,
    near: u64,
    dup_links: u64,
    mirror_demoted: u64,
    fps: Vec<u64>,
    relevances: Vec<f64>,
    /// Revisits, 304s, per change class (in `Change::ALL` order), without class.
    revisits: (u64, u64, [u64; 3], u64),
}

impl SummaryBuilder {
    /// Count the next record of the log.
    pub fn add(&mut self, r: &PageRecord) {
        self.records += 1;
        if r.revisit.is_some() {
            let v = &mut self.revisits;
            v.0 += 1;
            v.1 += u64::from(r.decision == Decision::Unchanged);
            match r.change.and_then(|c| Change::ALL.iter().position(|x| *x == c)) {
                Some(i) => v.2[i] += 1,
                None => v.3 += 1,
            }
        }
        *self.by_decision.entry(r.decision).or_insert(0) += 1;
        *self.by_status.entry(r.status).or_insert(0) += 1;
        let content_type = r.content_type.as_deref().unwrap_or("none");
        match self.by_type.get_mut(content_type) {
            Some(n) => *n += 1,
            None => {
                self.by_type.insert(content_type.to_string(), 1);
            }
        }
        let host = split_url(&r.canonical).map_or("(invalid url)", |(h, _)| h);
        if !self.hosts.contains_key(host) {
            self.hosts.insert(host.to_string(), HostAcc::default());
        }
        let Some(acc) = self.hosts.get_mut(host) else {
            return;
        };
        let row = acc.row.get_or_insert_with(|| HostRow {
            host: host.to_string(),
            fetched: 0,
            pages: 0,
            duplicates: 0,
            duplicate_rate: 0.0,
            errors: 0,
            disallowed: 0,
            bytes: 0,
            mean_latency_ms: None,
            mean_delay_ms: None,
        });
        row.fetched += 1;
        row.bytes += r.bytes;
        if has_content(r) {
            self.pages += 1;
            row.pages += 1;
        }
        match r.decision {
            Decision::ExactDuplicate => self.exact += 1,
            Decision::NearDuplicate => self.near += 1,
            Decision::Error => row.errors += 1,
            Decision::Disallowed => row.disallowed += 1,
            _ => {}
        }
        if r.decision.is_duplicate() {
            row.duplicates += 1;
            self.dup_links += u64::from(r.outlinks);
        }
        if r.score.mirror < 0.0 {
            self.mirror_demoted += 1;
        }
        if let Some(ms) = r.latency_ms {
            acc.latency = (acc.latency.0 + ms, acc.latency.1 + 1);
        }
        if let Some(ms) = r.delay_ms {
            acc.delay = (acc.delay.0 + ms, acc.delay.1 + 1);
        }
        if let Some(fp) = r.simhash.as_deref().and_then(|h| u64::from_str_radix(h, 16).ok()) {
            self.fps.push(fp);
        }
        if let Some(rel) = r.relevance {
            self.relevances.push(rel);
        }
    }

    /// The summary of the records added (and the crawl's counters, if any).
    pub fn finish(self, crawl_stats: Option<CrawlStats>) -> Summary {
        let mean = |(sum, n): (u64, u64)| (n > 0).then(|| sum as f64 / n as f64);
        let mut host_rows: Vec<HostRow> = self
            .hosts
            .into_values()
            .filter_map(|acc| {
                let mut row = acc.row?;
                row.duplicate_rate = rate(row.duplicates, row.pages);
                row.mean_latency_ms = mean(acc.latency);
                row.mean_delay_ms = mean(acc.delay);
                Some(row)
            })
            .collect();
        host_rows.sort_by(|a, b| b.fetched.cmp(&a.fetched).then_with(|| a.host.cmp(&b.host)));
        let mut types: Vec<TypeCount> = self
            .by_type
            .into_iter()
            .map(|(content_type, count)| TypeCount { content_type, count })
            .collect();
        types.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.content_type.cmp(&b.content_type)));
        let on_topic = crawl_stats
            .as_ref()
            .and_then(|s| s.focus_on_topic)
            .unwrap_or_else(|| crate::config::Settings::default().focus.on_topic);
        let harvest = harvest_of(&self.relevances, on_topic);
        let fetches_saved = crawl_stats.as_ref().and_then(|s| {
            (s.dup_links_dropped.is_some() || s.mirror_fetches_saved.is_some())
                .then(|| s.dup_links_dropped.unwrap_or(0) + s.mirror_fetches_saved.unwrap_or(0))
        });
        let (exact, near, pages) = (self.exact, self.near, self.pages);
        let (revisits, not_modified, by_change, no_content) = self.revisits;
        let revisits = (revisits > 0).then(|| RevisitStats {
            revisits,
            not_modified,
            by_change: Change::ALL
                .iter()
                .zip(by_change)
                .map(|(c, count)| ChangeCount {
                    change: c.as_str().to_string(),
                    count,
                })
                .collect(),
            no_content,
        });
        Summary {
            records: self.records,
            pages,
            hosts_count: host_rows.len() as u64,
            by_decision: DECISIONS
                .iter()
                .map(|d| DecisionCount {
                    decision: d.as_str().to_string(),
                    count: self.by_decision.get(d).copied().unwrap_or(0),
                })
                .collect(),
            by_status: self
                .by_status
                .into_iter()
                .map(|(status, count)| StatusCount { status, count })
                .collect(),
            by_content_type: types,
            hosts: host_rows,
            dedup: DedupStats {
                duplicates: exact + near,
                exact,
                near,
                duplicate_rate: rate(exact + near, pages),
                duplicate_outlinks: self.dup_links,
                mirror_demoted_fetched: self.mirror_demoted,
                fetches_saved,
                crawl_stats,
            },
            fingerprints: fingerprint_stats(self.fps),
            harvest,
            revisits,
        }
    }
}

fn rate(x: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        x as f64 / n as f64
    }
}

/// Manku §4.2: leading-1-bit positions of XORs of successive sorted distinct
/// fingerprints, and a 128-bucket histogram.
pub fn fingerprint_stats(mut fps: Vec<u64>) -> FingerprintStats {
    let count = fps.len() as u64;
    let zero = fps.iter().filter(|&&f| f == 0).count() as u64;
    fps.sort_unstable();
    fps.dedup();
    let mut leading_bit = vec![0u64; 64];
    for w in fps.windows(2) {
        leading_bit[(w[0] ^ w[1]).leading_zeros() as usize] += 1;
    }
    let mut buckets = vec![0u64; BUCKETS];
    for &f in &fps {
        buckets[(f >> 57) as usize] += 1;
    }
    let n = fps.len() as f64;
    let expected = n / BUCKETS as f64;
    let chi = if n > 0.0 {
        buckets.iter().map(|&b| (b as f64 - expected).powi(2) / expected).sum()
    } else {
        0.0
    };
    let max = buckets.iter().copied().max().unwrap_or(0) as f64;
    FingerprintStats {
        count,
        distinct: fps.len() as u64,
        zero,
        leading_bit,
        leading_bit_uniform: uniform_leading_bits(fps.len()),
        buckets,
        bucket_chi_square: chi,
        bucket_max_ratio: if expected > 0.0 { max / expected } else { 0.0 },
    }
}

/// Expected leading-bit counts of XORs of successive sorted uniform random
/// 64-bit values, n of them: a gap between neighbours is about
/// exponential with mean 2^64/n, and its XOR's leading bit is at position
/// i with probability P(gap spans a 2^(63-i) boundary first) ≈
/// exp(-n·2^-(i+1)) − exp(-n·2^-i) (the "symmetric, exponentially decaying"
/// curve of Manku Figure 2(a)).
fn uniform_leading_bits(n: usize) -> Vec<f64> {
    if n < 2 {
        return vec![0.0; 64];
    }
    let pairs = (n - 1) as f64;
    let nf = n as f64;
    let p = |i: i32| (-nf * 2f64.powi(-i)).exp();
    (0..64).map(|i| pairs * (p(i + 1) - p(i)).max(0.0)).collect()
}

/// The per-host table as CSV.
pub fn hosts_csv(s: &Summary) -> String {
    let mut out = String::new();
    csv_line(
        &mut out,
        &[
            "host",
            "fetched",
            "pages",
            "duplicates",
            "duplicate_rate",
            "errors",
            "disallowed",
            "bytes",
            "mean_latency_ms",
            "mean_delay_ms",
        ],
    );
    for h in &s.hosts {
        let f = [
            h.fetched.to_string(),
            h.pages.to_string(),
            h.duplicates.to_string(),
            format!("{:.4}", h.duplicate_rate),
            h.errors.to_string(),
            h.disallowed.to_string(),
            h.bytes.to_string(),
            opt(h.mean_latency_ms.map(|v| format!("{v:.1}"))),
            opt(h.mean_delay_ms.map(|v| format!("{v:.1}"))),
        ];
        let mut row = vec![h.host.as_str()];
        row.extend(f.iter().map(String::as_str));
        csv_line(&mut out, &row);
    }
    out
}

#[cfg(test)]
mod tests;
