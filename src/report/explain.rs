//! `simcrawl explain`: why one URL of a stored crawl was fetched, skipped or
//! demoted — its decision, the page it duplicates and the distance, its
//! priority components with their weights, its parent, the robots.txt
//! verdict and the `[[hosts]]` rule of its host. Reads `DIR/pages.jsonl` and, for URLs still queued, `DIR/store`.

use std::fmt::Write as _;
use std::path::Path;

use crate::canon::Canonicalizer;
use crate::config::Settings;
use crate::crawllog::{self, PageRecord};
use crate::error::{Error, Result};
use crate::model::Decision;
use crate::model::ScoreComponents;
use crate::model::UrlState;

fn components(out: &mut String, c: &ScoreComponents, priority: f64, settings: &Settings) {
    let _ = writeln!(
        out,
        "priority    {priority:.3} = sum of weight x component ([frontier] weights):"
    );
    for (name, value, weight, product) in crate::frontier::explain(c, &settings.frontier) {
        let _ = writeln!(out, "  {name:<14} {value:>8.3} x {weight:<6} = {product:>8.3}");
    }
}

fn explain_record(out: &mut String, r: &PageRecord, settings: &Settings) {
    let _ = writeln!(out, "url         {}", r.url);
    if let Some(href) = &r.href {
        let _ = writeln!(out, "written as  {href}");
    }
    let _ = writeln!(out, "canonical   {}", r.canonical);
    let verdict = match (r.decision, &r.dup_of, r.distance) {
        (Decision::ExactDuplicate, Some(of), _) => format!("exact_duplicate of {of} (same body or same visible text)"),
        (Decision::NearDuplicate, Some(of), Some(d)) => {
            format!(
                "near_duplicate of {of} at Hamming distance {d} (k = {})",
                settings.simhash.k
            )
        }
        (Decision::Redirect, _, _) => format!("redirect to {}", r.final_url),
        (d, _, _) => d.to_string(),
    };
    let _ = writeln!(out, "decision    {verdict}");
    if let Some(e) = &r.error {
        let _ = writeln!(out, "reason      {e}");
    }
    let _ = writeln!(
        out,
        "fetch       HTTP {} {} {} bytes at {}{}{}",
        r.status,
        r.content_type.as_deref().unwrap_or("-"),
        r.bytes,
        r.fetched_at,
        r.latency_ms.map_or(String::new(), |l| format!(", {l} ms")),
        r.delay_ms
            .map_or(String::new(), |d| format!(", politeness delay {d} ms")),
    );
    if let Some(ip) = &r.server_ip {
        let limit = match settings.politeness.max_in_flight_per_ip {
            0 => "no per-address limit".to_string(),
            n => format!("at most {n} requests in flight to it ([politeness] max_in_flight_per_ip)"),
        };
        let _ = writeln!(
            out,
            "server      {ip}: {limit}; waited {} ms for a slot",
            r.ip_wait_ms.unwrap_or(0)
        );
    }
    host_rule_line(out, &r.canonical, settings);
    let _ = writeln!(out, "robots.txt  {}", r.robots.as_deref().unwrap_or("not checked"));
    if let Some(fp) = &r.simhash {
        let _ = writeln!(out, "simhash     {fp}");
    }
    let _ = writeln!(
        out,
        "parent      {} (depth {})",
        r.parent.as_deref().unwrap_or("(seed)"),
        r.depth
    );
    components(out, &r.score, r.priority, settings);
    let links = if r.decision.is_duplicate() {
        format!(
            "{} enqueued (duplicate: [dedup] policy decides whether and how they are followed)",
            r.outlinks
        )
    } else {
        format!("{} enqueued", r.outlinks)
    };
    let _ = writeln!(out, "out-links   {links}");
}

/// The `[[hosts]]` rule of `url`'s host, as one line (nothing when the
/// crawl has no rules).
fn host_rule_line(out: &mut String, url: &str, settings: &Settings) {
    if settings.hosts.is_empty() {
        return;
    }
    let Some(host) = url::Url::parse(url).ok().map(|u| crate::host::host_key(&u)) else {
        return;
    };
    match settings.hosts.find(&host) {
        Some((i, rule)) => {
            let summary = rule.summary();
            let _ = writeln!(
                out,
                "host rule   #{} \"{}\" ({})",
                i + 1,
                rule.pattern,
                if summary.is_empty() { "no overrides" } else { &summary }
            );
        }
        None => {
            let _ = writeln!(
                out,
                "host rule   none of the {} [[hosts]] rules matches {host}: global settings",
                settings.hosts.len()
            );
        }
    }
}

/// How many of a page's duplicates the explanation lists.
const SHOWN_DUPLICATES: usize = 20;

/// The explanation of `url` in the crawl stored in `dir`, as text (the log
/// is read as a stream).
pub fn explain(dir: &Path, url: &str, settings: &Settings) -> Result<String> {
    let logs = crate::model::CrawlDir::new(dir).logs();
    if logs.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{}: not a crawl directory (no pages.jsonl)",
            dir.display()
        )));
    }
    let canon = Canonicalizer::new(&settings.canon);
    let canonical = canon.parse(url).map_or_else(|_| url.to_string(), |u| u.to_string());
    // One pass over the log, keeping only the URL's records and the first
    // of the pages that duplicate it.
    let mut hits: Vec<PageRecord> = Vec::new();
    let mut duplicates: Vec<PageRecord> = Vec::new();
    let mut duplicates_count = 0usize;
    for r in crawllog::records_of(&logs)? {
        let r = r?;
        if r.dup_of.as_deref() == Some(&canonical) {
            duplicates_count += 1;
            if duplicates.len() < SHOWN_DUPLICATES {
                duplicates.push(r.clone());
            }
        }
        if r.canonical == canonical || r.url == url || r.canonical == url {
            hits.push(r);
        }
    }
    let mut out = String::new();
    for r in &hits {
        explain_record(&mut out, r, settings);
    }
    if duplicates_count > 0 {
        let _ = writeln!(out, "original of {duplicates_count} duplicate page(s):");
        for r in &duplicates {
            let _ = writeln!(
                out,
                "  {} ({}{})",
                r.canonical,
                r.decision,
                r.distance.map_or(String::new(), |d| format!(", distance {d}"))
            );
        }
    }
    if !hits.is_empty() {
        return Ok(out);
    }
    // Not fetched: ask the store.
    let store_dir = crate::model::CrawlDir::new(dir).store();
    let store = crate::store::open_crawl_store(&store_dir)?;
    match store.url_state(&canonical)? {
        Some(UrlState::AliasOf(of)) => {
            let _ = writeln!(
                out,
                "{canonical} is an alias of {of} (redirect or rel=canonical): explain that URL"
            );
        }
        Some(UrlState::Queued(key)) | Some(UrlState::InFlight(key)) => {
            let host = url::Url::parse(&canonical)
                .map(|u| crate::host::host_key(&u))
                .unwrap_or_default();
            let _ = writeln!(out, "url         {canonical}");
            let _ = writeln!(
                out,
                "decision    not fetched yet: queued (the crawl stopped before reaching it)"
            );
            host_rule_line(&mut out, &canonical, settings);
            if let Some(q) = store.queued(&host, key)? {
                let _ = writeln!(
                    out,
                    "parent      {} (depth {})",
                    q.parent.as_deref().unwrap_or("(seed)"),
                    q.depth
                );
                let _ = writeln!(out, "in-links    {}", q.inlinks);
                components(&mut out, &q.components, q.priority, settings);
            }
        }
        Some(UrlState::Done(id)) => {
            let _ = writeln!(
                out,
                "{canonical} was recorded as page {id}, but its crawl log line is missing"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "{canonical} was never queued: not linked from a fetched page, out of scope, a trap, or only linked from duplicates whose links were dropped"
            );
            host_rule_line(&mut out, &canonical, settings);
        }
    }
    Ok(out)
}
