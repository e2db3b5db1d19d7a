//! The frontier's sitemap component of one entry:
//!
//! `component = priority + freshness`, where `priority` is `<priority>`
//! (0.0..=1.0; [`DEFAULT_PRIORITY`] when absent or invalid, as the protocol
//! says) and `freshness` (0..=0.5) is the larger of
//! - `0.5 x 2^(-age / 30 days)` for `<lastmod>` (age from the crawl's day;
//!   a date in the future counts as today), and
//! - a `<changefreq>` step: always and hourly 0.5, daily 0.4, weekly 0.3,
//!   monthly 0.2, yearly 0.1, never 0.
//!
//! So a URL listed with nothing but its `<loc>` gets 0.5, one the site marks
//! important and changed today 1.5. The frontier multiplies it by
//! `[frontier] sitemap_weight`.

use std::time::{SystemTime, UNIX_EPOCH};

use super::Entry;

/// `<priority>` of an entry that gives none (the protocol's default).
pub const DEFAULT_PRIORITY: f64 = 0.5;
/// The largest freshness term.
const MAX_FRESHNESS: f64 = 0.5;
/// The age at which `<lastmod>`'s term halves, in days.
const HALF_LIFE_DAYS: f64 = 30.0;

/// The component of `entry` on day `today` (days since 1970-01-01, see
/// [`days_since_epoch`]).
pub fn score(entry: &Entry, today: i64) -> f64 {
    let priority = entry
        .priority
        .as_deref()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| (0.0..=1.0).contains(p))
        .unwrap_or(DEFAULT_PRIORITY);
    let by_date = entry.lastmod.as_deref().and_then(w3c_day).map_or(0.0, |day| {
        let age = (today - day).max(0) as f64;
        MAX_FRESHNESS * (-age / HALF_LIFE_DAYS).exp2()
    });
    let by_freq = match entry.changefreq.as_deref().map(|c| c.trim().to_ascii_lowercase()) {
        Some(c) => match c.as_str() {
            "always" | "hourly" => 0.5,
            "daily" => 0.4,
            "weekly" => 0.3,
            "monthly" => 0.2,
            "yearly" => 0.1,
            _ => 0.0,
        },
        None => 0.0,
    };
    priority + by_date.max(by_freq)
}

/// Days since 1970-01-01 (UTC) of `t` (negative before).
pub fn days_since_epoch(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() / 86_400) as i64,
        Err(e) => -((e.duration().as_secs() / 86_400) as i64) - 1,
    }
}

/// The day (days since 1970-01-01) of a W3C datetime: `YYYY`, `YYYY-MM`,
/// `YYYY-MM-DD`, optionally followed by `T` and a time (ignored: a day is
/// precise enough here). None when it is not one.
pub(super) fn w3c_day(s: &str) -> Option<i64> {
    let s = s.trim();
    let date = s.split(['T', 't']).next()?;
    let mut parts = date.split('-');
    let num = |p: Option<&str>, len: usize| -> Option<Option<u32>> {
        match p {
            None => Some(None),
            Some(p) if p.len() == len && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok().map(Some),
            Some(_) => None,
        }
    };
    let year = num(parts.next(), 4)??;
    let month = num(parts.next(), 2)?.unwrap_or(1);
    let day = num(parts.next(), 2)?.unwrap_or(1);
    if parts.next().is_some() || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(i64::from(year), month, day))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
