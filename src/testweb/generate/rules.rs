//! The link rules shared by the pages and the ground truth (`truth/`):
//! which lists link which pages, which alias URLs appear where, what each
//! robots.txt says, and the trap and error paths. Small pure functions, so
//! the truth lists exactly the URLs the pages link to.

use super::stream;
use crate::testweb::rng::Rng;
use crate::testweb::words::TOPICS;
use crate::testweb::{Counts, VariantKind};

/// Links per list page (topic lists, wiki lists, blog lists).
pub(crate) const PER_LIST: usize = 50;
/// Doc items per module page.
pub(crate) const PER_MODULE: usize = 20;
/// How an alias URL of a news article is written in a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AliasForm {
    /// `http://WWW.NEWS.TEST:PORT/news/t/j/` (absolute, upper-case host).
    UpperHost,
    /// `.../t/j/index.html`.
    IndexHtml,
    /// `.../t/j/?utm_source=...&utm_medium=...&utm_campaign=...`.
    Utm,
    /// `.../t/j/?sid=HEX`.
    SessionId,
    /// `.../t/j/?jsessionid=HEX`.
    JSessionId,
}

/// The alias forms, in the order articles cycle through them.
const ALIAS_FORMS: [AliasForm; 5] = [
    AliasForm::UpperHost,
    AliasForm::IndexHtml,
    AliasForm::Utm,
    AliasForm::SessionId,
    AliasForm::JSessionId,
];

/// Variant kinds of blog copies, cycling by post id.
pub(crate) const VARIANT_KINDS: [VariantKind; 5] = [
    VariantKind::Ad,
    VariantKind::Timestamp,
    VariantKind::Counter,
    VariantKind::EditedWords,
    VariantKind::LargeAd,
];

/// The topic index of article-like id `id`.
pub(crate) fn topic_of(id: usize) -> usize {
    id % TOPICS.len()
}

/// Article `i` (news) links an alias of article `i + 1`: which form, if any.
pub(crate) fn news_alias_link(i: usize, counts: Counts) -> Option<(usize, AliasForm)> {
    (i.is_multiple_of(10) && i + 1 < counts.news).then(|| (i + 1, ALIAS_FORMS[(i / 10) % ALIAS_FORMS.len()]))
}

/// The alias link text for article `j` as written on a news page (relative
/// to a news article directory, except the absolute upper-case host form).
pub(crate) fn news_alias_href(seed: u64, j: usize, form: AliasForm, port: u16) -> String {
    let t = TOPICS[topic_of(j)];
    match form {
        AliasForm::UpperHost => format!("http://WWW.NEWS.TEST:{port}/news/{t}/{j}/"),
        AliasForm::IndexHtml => format!("../../{t}/{j}/index.html"),
        AliasForm::Utm => format!("../../{t}/{j}/?utm_source=newsletter&utm_medium=email&utm_campaign=spring"),
        AliasForm::SessionId => format!("../../{t}/{j}/?sid={:016x}", session_hex(seed, j)),
        AliasForm::JSessionId => format!("../../{t}/{j}/?jsessionid={:016X}", session_hex(seed, j)),
    }
}

/// The session id written in the session-id alias forms of article `j`.
fn session_hex(seed: u64, j: usize) -> u64 {
    Rng::for_stream(&[seed, stream::LINKS, j as u64, 7]).next_u64()
}

/// Blog list pages link post `p` without its trailing slash when this holds.
pub(crate) fn blog_slashless(p: usize) -> bool {
    p % 7 == 3
}

/// The four news articles a news article links (cross-topic on purpose).
pub(crate) fn news_related(seed: u64, i: usize, counts: Counts) -> [usize; 4] {
    let mut rng = Rng::for_stream(&[seed, stream::LINKS, stream::NEWS, i as u64]);
    let mut out = [0; 4];
    for o in &mut out {
        *o = rng.below(counts.news);
    }
    out
}

/// Number of news articles of topic `t` among ids `0..news`.
pub(crate) fn news_in_topic(news: usize, t: usize) -> usize {
    (news + TOPICS.len() - 1 - t) / TOPICS.len()
}

/// The robots.txt answer of each host: (status, body).
pub(crate) fn robots(host: &str) -> (u16, Option<&'static str>) {
    match host {
        "robots-disallow.test" => (
            200,
            Some(
                "# robots.txt of robots-disallow.test (simcrawl test web)\n\
                 User-agent: *\n\
                 Disallow: /private/\n\
                 Allow: /private/public-note\n\
                 Disallow: /search\n\
                 Disallow: /*.bak$\n\
                 \n\
                 User-agent: badbot\n\
                 Disallow: /\n",
            ),
        ),
        "robots-delay.test" => (
            200,
            Some(
                "# robots.txt of robots-delay.test (simcrawl test web)\n\
                 User-agent: *\n\
                 Crawl-delay: 1\n\
                 Disallow:\n",
            ),
        ),
        "robots-404.test" => (404, None),
        "robots-503.test" => (503, None),
        _ => (200, Some("User-agent: *\nDisallow:\n")),
    }
}

/// Crawl-delay (seconds) each host's robots.txt asks for.
pub(crate) fn crawl_delay(host: &str) -> Option<u64> {
    (host == "robots-delay.test").then_some(1)
}

/// The pages of the robots hosts: (path, disallowed for `simcrawl`).
pub(crate) fn robots_host_pages(host: &str) -> &'static [(&'static str, bool)] {
    match host {
        "robots-disallow.test" => &[
            ("/", false),
            ("/public/1", false),
            ("/public/2", false),
            ("/public/3", false),
            ("/private/1", true),
            ("/private/2", true),
            ("/private/public-note", false),
            ("/search?q=stars", true),
            ("/notes.bak", true),
            ("/notes.bak.html", false),
        ],
        "robots-delay.test" | "robots-404.test" => {
            &[("/", false), ("/page/1", false), ("/page/2", false), ("/page/3", false)]
        }
        "robots-503.test" => &[("/", true), ("/page/1", true), ("/page/2", true), ("/page/3", true)],
        _ => &[],
    }
}

/// The errors.test paths linked from its front page.
pub(crate) const ERROR_PATHS: [&str; 10] = [
    "/missing",
    "/error500",
    "/busy",
    "/busy-once",
    "/unavailable",
    "/slow",
    "/big",
    "/report.pdf",
    "/logo.png",
    "/legacy",
];

/// The traps.test redirect chain: (path, status, Location as served).
pub(crate) fn redirect(path: &str, port: u16) -> Option<(u16, String)> {
    Some(match path {
        "/redirect/start" => (301, "/redirect/1".to_string()),
        "/redirect/1" => (302, format!("http://traps.test:{port}/redirect/2")),
        "/redirect/2" => (307, "3".to_string()),
        "/redirect/3" => (308, "/redirect/end".to_string()),
        "/redirect/cross-host" => (301, format!("http://www.news.test:{port}/news/")),
        "/loop/a" => (302, "/loop/b".to_string()),
        "/loop/b" => (302, "/loop/a".to_string()),
        _ => return None,
    })
}

/// The traps.test paths linked from its front page.
pub(crate) const TRAP_LINKS: [&str; 4] = [
    "/redirect/start",
    "/redirect/cross-host",
    "/loop/a",
    "/calendar/2024/01/",
];
