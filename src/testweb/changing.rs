//! `changing.test`: pages that change on a schedule, for recrawl tests. The
//! server keeps an epoch counter ([`RunningTestWeb::bump_epoch`]); each
//! page's content is a function of the seed, the page and the epoch, by
//! the page's [`Schedule`]. Pages carry an `ETag` and a `Last-Modified`
//! that change exactly when their bytes do, and conditional requests are
//! answered 304 when they still match. The host is linked from no other
//! page and is not in [`super::HOSTS`]: a crawl reaches it only from a seed
//! (`http://changing.test:PORT/`), so the other hosts' truth is untouched.
//!
//! [`RunningTestWeb::bump_epoch`]: super::RunningTestWeb::bump_epoch

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::rng::Rng;
use super::text;
use crate::model::Change;

/// The host name.
pub const HOST: &str = "changing.test";

/// `GET` this path moves the server to the next epoch (what
/// [`RunningTestWeb::bump_epoch`] does, for `simcrawl testweb`); the answer
/// names the new epoch. Linked from nowhere.
///
/// [`RunningTestWeb::bump_epoch`]: super::RunningTestWeb::bump_epoch
pub const NEXT_EPOCH: &str = "/epoch/next";

/// Article pages `/p/0/` .. `/p/{PAGES-1}/`, besides the index `/`.
pub const PAGES: usize = 12;

/// How a page of `changing.test` changes from epoch to epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// New text at every epoch.
    Every,
    /// The same bytes at every epoch (answered 304 when asked conditionally).
    Never,
    /// The same text, but an "updated" line whose number is the epoch: other
    /// bytes, the same fingerprint (numbers are not features).
    Trivial,
    /// New text when the epoch becomes even (epochs 2, 4, ...).
    Even,
}

impl Schedule {
    /// The content version at `epoch` (the text is a function of it).
    fn version(self, epoch: u64) -> u64 {
        match self {
            Schedule::Every => epoch,
            Schedule::Never | Schedule::Trivial => 0,
            Schedule::Even => epoch / 2,
        }
    }

    /// Whether the bytes at `epoch` differ from those at `before`.
    fn bytes_differ(self, before: u64, epoch: u64) -> bool {
        self.version(before) != self.version(epoch) || (self == Schedule::Trivial && before != epoch)
    }

    /// What a revisit at `to` finds after a fetch at `from`.
    pub fn change(self, from: u64, to: u64) -> Change {
        if self.version(from) != self.version(to) {
            Change::Changed
        } else if self.bytes_differ(from, to) {
            Change::NearUnchanged
        } else {
            Change::Unchanged
        }
    }
}

/// One page of `changing.test` in the truth.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangingPage {
    /// Its URL (with the server's port).
    pub url: String,
    /// How it changes.
    pub schedule: Schedule,
}

/// Every page of `changing.test` on `port`: the index `/` (never changes)
/// and the articles.
pub fn pages(port: u16) -> Vec<ChangingPage> {
    let mut v = vec![ChangingPage {
        url: format!("http://{HOST}:{port}/"),
        schedule: Schedule::Never,
    }];
    v.extend((0..PAGES).map(|i| ChangingPage {
        url: format!("http://{HOST}:{port}/p/{i}/"),
        schedule: schedule_of(i),
    }));
    v
}

/// Article `i`'s schedule: the four kinds in turn.
fn schedule_of(i: usize) -> Schedule {
    [Schedule::Every, Schedule::Never, Schedule::Trivial, Schedule::Even][i % 4]
}

/// An answer of `changing.test`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
}

/// The conditional headers of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Conditions<'a> {
    pub(crate) if_none_match: Option<&'a str>,
    pub(crate) if_modified_since: Option<&'a str>,
}

/// A fixed origin of the `Last-Modified` dates: 2024-01-01T00:00:00Z.
const DATES_FROM: u64 = 1_704_067_200;

/// The answer to `GET path` at `epoch` (RFC 9110 §13.2.2: `If-None-Match`
/// decides when present, else `If-Modified-Since`).
pub(crate) fn respond(seed: u64, epoch: u64, path: &str, cond: &Conditions<'_>) -> Answer {
    if path == NEXT_EPOCH {
        return Answer {
            status: 200,
            body: format!("epoch {epoch}\n"),
            etag: None,
            last_modified: None,
        };
    }
    let (schedule, body_of): (Schedule, Box<dyn Fn() -> String>) = if path == "/" {
        (Schedule::Never, Box::new(index))
    } else {
        match path
            .strip_prefix("/p/")
            .and_then(|r| r.strip_suffix('/'))
            .and_then(super::generate::parse_id)
            .filter(|i| *i < PAGES)
        {
            Some(i) => (schedule_of(i), Box::new(move || article(seed, i, epoch))),
            None => {
                return Answer {
                    status: 404,
                    body: "Not found\n".into(),
                    etag: None,
                    last_modified: None,
                }
            }
        }
    };
    let version = schedule.version(epoch);
    // The bytes' own version: Trivial pages change their bytes every epoch.
    let bytes = if schedule == Schedule::Trivial { epoch } else { version };
    let key = if path == "/" { 0 } else { path.len() as u64 };
    let etag = format!("\"{key:x}-{bytes}\"");
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(DATES_FROM + bytes * 86_400);
    let last_modified = httpdate::fmt_http_date(modified);
    let fresh = match (cond.if_none_match, cond.if_modified_since) {
        (Some(inm), _) => inm.split(',').map(str::trim).any(|t| t == "*" || weak_eq(t, &etag)),
        (None, Some(ims)) => httpdate::parse_http_date(ims).is_ok_and(|since| modified <= since),
        (None, None) => false,
    };
    Answer {
        status: if fresh { 304 } else { 200 },
        body: if fresh { String::new() } else { body_of() },
        etag: Some(etag),
        last_modified: Some(last_modified),
    }
}

/// Weak comparison of entity tags (`W/` prefixes ignored).
fn weak_eq(a: &str, b: &str) -> bool {
    a.trim_start_matches("W/") == b.trim_start_matches("W/")
}

fn index() -> String {
    let mut s = String::new();
    super::generate::page_start(&mut s, "Changing pages");
    s.push_str("<h1>Changing pages</h1>\n<ul>\n");
    for i in 0..PAGES {
        let _ = writeln!(s, "<li><a href=\"/p/{i}/\">Page {i}</a></li>");
    }
    s.push_str("</ul>\n</body></html>\n");
    s
}

/// Article `i` at `epoch`: a text of its version, and for a trivial page a
/// line naming the epoch.
fn article(seed: u64, i: usize, epoch: u64) -> String {
    let schedule = schedule_of(i);
    let version = schedule.version(epoch);
    let mut rng = Rng::for_stream(&[seed, 0xC4A6, i as u64, version]);
    let topic = i % crate::testweb::TOPICS.len();
    let title = text::title(&mut rng, topic);
    let body = text::text(&mut rng, topic, 220, 320);
    let mut s = String::with_capacity(4096);
    super::generate::page_start(&mut s, &title);
    let _ = writeln!(s, "<h1>{title}</h1>");
    if schedule == Schedule::Trivial {
        let _ = writeln!(s, "<p class=\"updated\">Updated on day {epoch} of the run</p>");
    }
    text::render_paragraphs(&mut s, &body, &[]);
    s.push_str("<p><a href=\"/\">All changing pages</a></p>\n</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_and_answers_agree() {
        let none = Conditions::default();
        for e in 0..5u64 {
            for p in pages(80) {
                let path = p.url.trim_start_matches("http://changing.test:80");
                let a = respond(7, e, path, &none);
                let b = respond(7, e + 1, path, &none);
                assert_eq!(a.status, 200);
                let change = p.schedule.change(e, e + 1);
                // Bytes differ exactly when the change is not `unchanged`,
                // and the ETag with them.
                assert_eq!(a.body != b.body, change != Change::Unchanged, "{path} {e}");
                assert_eq!(a.etag != b.etag, change != Change::Unchanged, "{path} {e}");
                // A conditional request with the old ETag gets 304 exactly
                // when unchanged; with the old date likewise.
                let inm = Conditions {
                    if_none_match: a.etag.as_deref(),
                    ..Conditions::default()
                };
                let got = respond(7, e + 1, path, &inm);
                assert_eq!(got.status == 304, change == Change::Unchanged, "{path} {e}");
                assert!(got.status == 200 || got.body.is_empty());
                let ims = Conditions {
                    if_modified_since: a.last_modified.as_deref(),
                    ..Conditions::default()
                };
                assert_eq!(respond(7, e + 1, path, &ims).status == 304, change == Change::Unchanged);
            }
        }
        assert_eq!(Schedule::Even.change(1, 2), Change::Changed);
        assert_eq!(Schedule::Even.change(2, 3), Change::Unchanged);
        assert_eq!(Schedule::Trivial.change(2, 3), Change::NearUnchanged);
        assert_eq!(respond(7, 0, "/p/99/", &none).status, 404);
        assert_eq!(
            respond(
                7,
                0,
                "/p/1/",
                &Conditions {
                    if_none_match: Some("*"),
                    ..Conditions::default()
                }
            )
            .status,
            304
        );
    }
}
