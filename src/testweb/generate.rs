//! Page generation: routes `(host, path)` to a page and renders it from the
//! seed. Pure functions of `(seed, size, port, host, path)`; no I/O.
//!
//! The link rules (which alias URLs appear where) live here as small
//! functions shared with the ground truth (`truth.rs`), so the truth lists
//! exactly the URLs the pages link to.

use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;

use super::text::{self, Rng, Text, TOPICS, TOPIC_WORDS};
use super::{Counts, Reply, TestWeb, VariantKind, BIG_BODY_BYTES};

/// Stream tags of the PRNG (one per kind of generated thing).
pub(crate) mod stream {
    pub(crate) const NEWS: u64 = 1;
    pub(crate) const WIKI: u64 = 2;
    pub(crate) const POST: u64 = 3;
    pub(crate) const DOC: u64 = 4;
    pub(crate) const TITLE: u64 = 10;
    pub(crate) const META: u64 = 11;
    pub(crate) const LINKS: u64 = 12;
    pub(crate) const AD: u64 = 13;
    pub(crate) const VARIANT: u64 = 14;
    pub(crate) const TEMPLATE: u64 = 15;
    pub(crate) const BIG: u64 = 16;
}

/// Links per list page (topic lists, wiki lists, blog lists).
pub(crate) const PER_LIST: usize = 50;
/// Doc items per module page.
pub(crate) const PER_MODULE: usize = 20;
/// Number of distinct ad texts.
const ADS: u64 = 40;

/// Words of ad copy.
const AD_WORDS: &[&str] = &[
    "sale",
    "discount",
    "offer",
    "buy",
    "shop",
    "free",
    "shipping",
    "deal",
    "subscribe",
    "premium",
    "insurance",
    "mortgage",
    "loan",
    "credit",
    "vacation",
    "hotel",
    "flight",
    "car",
    "phone",
    "bargain",
    "coupon",
    "limited",
    "exclusive",
    "save",
    "today",
    "order",
    "now",
    "club",
    "membership",
    "upgrade",
];

/// Verbs and nouns of generated API item names (docs.test).
const DOC_VERBS: &[&str] = &[
    "get", "set", "new", "parse", "read", "write", "open", "close", "insert", "remove", "find", "build", "load",
    "store", "encode", "decode",
];
const DOC_NOUNS: &[&str] = &[
    "buffer", "config", "handle", "index", "entry", "record", "stream", "frame", "token", "node", "table", "cursor",
    "header", "block", "chunk", "range",
];

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

/// Meta data of an article page: publication time, view counter, ad id.
#[derive(Clone, Debug)]
struct Chrome {
    time: String,
    counter: u64,
    ad: u64,
    large_ad: bool,
    edits: Vec<(usize, &'static str)>,
}

fn time_string(rng: &mut Rng) -> String {
    format!(
        "{}-{:02}-{:02} {:02}:{:02} UTC",
        2022 + rng.below(3),
        1 + rng.below(12),
        1 + rng.below(28),
        rng.below(24),
        rng.below(60)
    )
}

fn chrome(seed: u64, space: u64, id: usize) -> Chrome {
    let mut rng = Rng::for_stream(&[seed, stream::META, space, id as u64]);
    Chrome {
        time: time_string(&mut rng),
        counter: 10 + rng.below(50_000) as u64,
        ad: rng.below(ADS as usize) as u64,
        large_ad: false,
        edits: Vec::new(),
    }
}

/// The chrome of the near-duplicate copy of post `p`: the original's chrome
/// with one change of `kind`.
fn variant_chrome(seed: u64, p: usize, kind: VariantKind, body: &Text) -> Chrome {
    let mut c = chrome(seed, stream::POST, p);
    let mut rng = Rng::for_stream(&[seed, stream::VARIANT, p as u64]);
    match kind {
        VariantKind::Ad => c.ad = (c.ad + 1 + rng.below(ADS as usize - 1) as u64) % ADS,
        VariantKind::LargeAd => {
            c.ad = (c.ad + 1 + rng.below(ADS as usize - 1) as u64) % ADS;
            c.large_ad = true;
        }
        VariantKind::Timestamp => {
            // Same date, another time of day: "YYYY-MM-DD HH:MM UTC".
            let date = c.time[..10].to_string();
            loop {
                let t = format!("{date} {:02}:{:02} UTC", rng.below(24), rng.below(60));
                if t != c.time {
                    c.time = t;
                    break;
                }
            }
        }
        VariantKind::Counter => c.counter += 1 + rng.below(5000) as u64,
        VariantKind::EditedWords => {
            let n = rng.range(2, 5);
            let words = TOPIC_WORDS[topic_of(p)];
            while c.edits.len() < n {
                let pos = rng.below(body.words.len());
                if c.edits.iter().any(|(q, _)| *q == pos) {
                    continue;
                }
                let w = words[rng.below(words.len())];
                if w != body.words[pos] {
                    c.edits.push((pos, w));
                }
            }
        }
        // Kinds of the regression-case hosts (cases.rs), never of blog copies.
        VariantKind::OneWord | VariantKind::Untranslated | VariantKind::OtherVersion => {}
    }
    c
}

/// Renders the text of ad `ad` (small: 12 words; large: 160 words).
fn push_ad(out: &mut String, seed: u64, ad: u64, large: bool) {
    let mut rng = Rng::for_stream(&[seed, stream::AD, ad]);
    let n = if large { 160 } else { 12 };
    out.push_str("Sponsored:");
    for i in 0..n {
        out.push(' ');
        let w = if i % 3 == 0 {
            text::COMMON_WORDS[rng.below(text::COMMON_WORDS.len())]
        } else {
            AD_WORDS[rng.below(AD_WORDS.len())]
        };
        out.push_str(w);
    }
    out.push('.');
}

/// The main text of article-like page `id` in `space`: 300-800 words;
/// blog posts (which have near-duplicate copies) 550-800, so that a small
/// change stays a small fraction of the page.
fn article_text(seed: u64, space: u64, id: usize) -> Text {
    let min = if space == stream::POST { 550 } else { 300 };
    text::text(&mut Rng::for_stream(&[seed, space, id as u64]), topic_of(id), min, 800)
}

/// The title of article-like page `id` in `space`.
pub(crate) fn article_title(seed: u64, space: u64, id: usize) -> String {
    text::title(
        &mut Rng::for_stream(&[seed, stream::TITLE, space, id as u64]),
        topic_of(id),
    )
}

/// Name of doc item `i`, e.g. `parse_buffer` or `parse_buffer_3`.
pub(crate) fn doc_item_name(i: usize) -> String {
    let v = DOC_VERBS[i % DOC_VERBS.len()];
    let n = DOC_NOUNS[(i / DOC_VERBS.len()) % DOC_NOUNS.len()];
    let round = i / (DOC_VERBS.len() * DOC_NOUNS.len());
    if round == 0 {
        format!("{v}_{n}")
    } else {
        format!("{v}_{n}_{round}")
    }
}

/// The docs.test template: (everything before the main text, everything after).
pub(crate) fn docs_template(seed: u64, counts: Counts) -> (String, String) {
    let mut head = String::with_capacity(16 * 1024);
    head.push_str("<div id=\"top-nav\"><table class=\"modules\"><tr>");
    let modules = counts.docs.div_ceil(PER_MODULE);
    for m in 0..modules.min(30) {
        let noun = DOC_NOUNS[m % DOC_NOUNS.len()];
        let _ = write!(
            head,
            "<td><a href=\"/api/m{m}/\">m{m}</a> {noun} utilities and helpers</td>"
        );
        if m % 5 == 4 {
            head.push_str("</tr><tr>");
        }
    }
    head.push_str("</tr></table><form class=\"search\">Search the documentation of every module, trait, function and type</form></div>\n");
    head.push_str("<div class=\"sidebar\"><table class=\"items\">");
    let mut rng = Rng::for_stream(&[seed, stream::TEMPLATE]);
    for i in 0..counts.docs.min(60) {
        let _ = write!(
            head,
            "<tr><td><a href=\"/api/m{}/fn.item{i}.html\">{}</a></td><td>{}</td></tr>",
            i / PER_MODULE,
            doc_item_name(i),
            text::sentence_words(&mut rng, 4, 8)
        );
    }
    head.push_str("</table></div>\n");
    let mut foot = String::with_capacity(4096);
    foot.push_str("<div class=\"footer-links\"><p>");
    foot.push_str(&text::sentence_words(&mut rng, 4, 220));
    foot.push_str("</p><p>Generated documentation. Copyright the test authors. Licensed under the MIT or Apache-2.0 licenses. <a href=\"/index.html\">Home</a></p></div>\n");
    (head, foot)
}

/// The `errors.test/big` body: an HTML page of exactly [`BIG_BODY_BYTES`].
pub(crate) fn big_body(seed: u64) -> Bytes {
    let mut rng = Rng::for_stream(&[seed, stream::BIG]);
    let mut s = String::with_capacity(BIG_BODY_BYTES + 1024);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>A very large page</title></head><body>\n<h1>A very large page</h1>\n");
    let end = "</body></html>\n";
    while s.len() < BIG_BODY_BYTES - 2048 {
        s.push_str("<p>");
        s.push_str(&text::sentence_words(&mut rng, 0, 100));
        s.push_str("</p>\n");
    }
    s.push_str("<!--");
    while s.len() < BIG_BODY_BYTES - end.len() - 3 {
        s.push('x');
    }
    s.push_str("-->");
    s.push_str(end);
    Bytes::from(s)
}

/// A 1x1 transparent PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A small fake PDF document.
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

/// Text the windows-1252 page must decode to (it is in its body).
pub(crate) const LEGACY_TEXT: &str = "Café crème brûlée – “naïve” façade for 5 €";

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

const HTML: &str = "text/html; charset=utf-8";

pub(crate) fn html(status: u16, body: String) -> Reply {
    Reply {
        status,
        content_type: Some(HTML),
        location: None,
        retry_after_secs: None,
        delay: Duration::ZERO,
        body: Bytes::from(body),
    }
}

pub(crate) fn not_found() -> Reply {
    html(
        404,
        "<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>\n".into(),
    )
}

fn page_start(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    out.push_str(title);
    out.push_str("</title></head>\n<body>\n");
}

const PAGE_END: &str = "</body></html>\n";

/// A simple page: title, a paragraph, and links (href, text).
fn simple_page(title: &str, para: &str, links: &[(String, String)]) -> String {
    let mut s = String::with_capacity(512 + links.len() * 64);
    page_start(&mut s, title);
    let _ = write!(s, "<h1>{title}</h1>\n<p>{para}</p>\n<ul>\n");
    for (href, txt) in links {
        let _ = writeln!(s, "<li><a href=\"{href}\">{txt}</a></li>");
    }
    s.push_str("</ul>\n");
    s.push_str(PAGE_END);
    s
}

/// Splits a request target into (path, query) and folds a final
/// `index.html` into its directory.
fn split_target(target: &str) -> (&str, Option<&str>) {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let path = path.strip_suffix("index.html").unwrap_or(path);
    (if path.is_empty() { "/" } else { path }, query)
}

/// Parses a decimal id with no sign or leading zeros.
fn parse_id(s: &str) -> Option<usize> {
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Host name of a Host header value: lower case, without the port.
pub(crate) fn host_name(host: &str) -> String {
    let h = match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    h.trim_end_matches('.').to_ascii_lowercase()
}

impl TestWeb {
    /// The answer to `GET target` on virtual host `host` (any case, with or
    /// without `:port`) for a server on `port` (absolute links carry it).
    /// `target` is the path with its query. Deterministic: the same
    /// `(seed, pages, port, host, target)` gives the same bytes. The
    /// `errors.test/busy-once` page answers 200 here; its first-request 429
    /// is the server's (see [`super::RunningTestWeb`]).
    pub fn respond(&self, host: &str, target: &str, port: u16) -> Reply {
        let host = host_name(host);
        let (path, query) = split_target(target);
        if path == "/robots.txt" {
            let (status, body) = robots(&host);
            return Reply {
                status,
                content_type: Some("text/plain; charset=utf-8"),
                location: None,
                retry_after_secs: None,
                delay: Duration::ZERO,
                body: Bytes::from_static(
                    body.unwrap_or(if status == 503 {
                        "Service unavailable\n"
                    } else {
                        "Not found\n"
                    })
                    .as_bytes(),
                ),
            };
        }
        let seed = self.opts.seed;
        match host.as_str() {
            "www.news.test" => match path {
                "/" => html(200, self.hub(port)),
                _ => match path.strip_prefix("/news") {
                    Some(rest) => self.news(rest, port),
                    None => not_found(),
                },
            },
            "archive.test" => match path {
                "/" => html(
                    200,
                    simple_page(
                        "The Test Archive",
                        "A partial mirror of the Daily Test news section.",
                        &[("/mirror/news/".into(), "Mirrored news".into())],
                    ),
                ),
                _ => match path.strip_prefix("/mirror/news") {
                    Some(rest) => self.news(rest, port),
                    None => not_found(),
                },
            },
            "mirror-a.test" | "mirror-b.test" => self.wiki(path, port),
            "blog.test" => self.blog(path, port),
            "docs.test" => self.docs(path),
            "robots-disallow.test" | "robots-delay.test" | "robots-404.test" | "robots-503.test" => {
                let pages = robots_host_pages(&host);
                let target_q = match query {
                    Some(q) => format!("{path}?{q}"),
                    None => path.to_string(),
                };
                if !pages.iter().any(|(p, _)| *p == target_q || *p == path) {
                    return not_found();
                }
                let links: Vec<(String, String)> = if path == "/" {
                    pages
                        .iter()
                        .skip(1)
                        .map(|(p, _)| (p.to_string(), format!("Page {p}")))
                        .collect()
                } else {
                    vec![("/".into(), "Home".into())]
                };
                // Seeded by the whole host and path, so every page has its own text.
                let key = host
                    .bytes()
                    .chain(path.bytes())
                    .fold(0u64, |h, b| text::mix64(h ^ u64::from(b)));
                let mut rng = Rng::for_stream(&[seed, stream::LINKS, key]);
                let para = text::sentence_words(&mut rng, (key % 5) as usize, 80);
                html(200, simple_page(&format!("{host} {path}"), &para, &links))
            }
            "traps.test" => self.traps(path, port),
            "errors.test" => self.errors(path),
            "ref.test" => self.reference(path),
            "manual.test" => self.manual(path),
            "v1.docs.test" => self.versions(0, path),
            "v2.docs.test" => self.versions(1, path),
            _ => not_found(),
        }
    }

    /// The www.news.test hub: links the news section and every host's front page.
    fn hub(&self, port: u16) -> String {
        let mut links: Vec<(String, String)> = vec![("/news/".into(), "News".into())];
        for h in super::HOSTS.iter().skip(1) {
            links.push((format!("http://{h}:{port}/"), format!("Front page of {h}")));
        }
        simple_page(
            "The Daily Test",
            "Welcome to the Daily Test, the hub of the simcrawl test web.",
            &links,
        )
    }

    /// The news section; `rest` is the path after `/news` (served at
    /// www.news.test/news and archive.test/mirror/news; relative links only,
    /// so both copies are byte-identical).
    fn news(&self, rest: &str, port: u16) -> Reply {
        let c = self.counts;
        let segs: Vec<&str> = match rest.strip_prefix('/') {
            Some(r) => r.split('/').collect(),
            None => return not_found(),
        };
        match segs.as_slice() {
            [""] => {
                let links: Vec<(String, String)> =
                    TOPICS.iter().map(|t| (format!("{t}/"), format!("{t} news"))).collect();
                html(200, simple_page("Daily Test news", "All news, by topic.", &links))
            }
            [topic, ""] => {
                let Some(t) = TOPICS.iter().position(|x| x == topic) else {
                    return not_found();
                };
                let n = news_in_topic(c.news, t);
                let links: Vec<(String, String)> = (0..n.div_ceil(PER_LIST).max(1))
                    .map(|k| (format!("p{}/", k + 1), format!("{topic} news, page {}", k + 1)))
                    .collect();
                html(
                    200,
                    simple_page(&format!("{topic} news"), &format!("News about {topic}."), &links),
                )
            }
            [topic, page, ""] if page.starts_with('p') => {
                let (Some(t), Some(k)) = (TOPICS.iter().position(|x| x == topic), parse_id(&page[1..])) else {
                    return not_found();
                };
                let n = news_in_topic(c.news, t);
                if k == 0 || (k - 1) * PER_LIST >= n.max(1) {
                    return not_found();
                }
                let links: Vec<(String, String)> = ((k - 1) * PER_LIST..(k * PER_LIST).min(n))
                    .map(|r| {
                        let id = r * TOPICS.len() + t;
                        (format!("../{id}/"), article_title(self.opts.seed, stream::NEWS, id))
                    })
                    .collect();
                html(
                    200,
                    simple_page(&format!("{topic} news, page {k}"), "Articles.", &links),
                )
            }
            [topic, id, ""] => match parse_id(id) {
                Some(i) if i < c.news && TOPICS[topic_of(i)] == *topic => html(200, self.news_article(i, port)),
                _ => not_found(),
            },
            _ => not_found(),
        }
    }

    fn news_article(&self, i: usize, port: u16) -> String {
        let seed = self.opts.seed;
        let t = TOPICS[topic_of(i)];
        let title = article_title(seed, stream::NEWS, i);
        let body = article_text(seed, stream::NEWS, i);
        let ch = chrome(seed, stream::NEWS, i);
        let mut s = String::with_capacity(body.words.len() * 9 + 2048);
        page_start(&mut s, &title);
        let _ = writeln!(
            s,
            "<div class=\"masthead\"><a href=\"http://www.news.test:{port}/\">The Daily Test</a> | <a href=\"../../\">News</a> | <a href=\"../\">{t}</a></div>"
        );
        push_meta(&mut s, "Published", &ch, "visits");
        let _ = writeln!(s, "<h1>{title}</h1>");
        push_main(&mut s, &body, &ch);
        push_ad_slot(&mut s, seed, &ch);
        s.push_str("<div class=\"related\"><h2>Related</h2><ul>\n");
        for j in news_related(seed, i, self.counts) {
            let _ = writeln!(
                s,
                "<li><a href=\"../../{}/{j}/\">{}</a></li>",
                TOPICS[topic_of(j)],
                article_title(seed, stream::NEWS, j)
            );
        }
        if let Some((j, form)) = news_alias_link(i, self.counts) {
            let _ = writeln!(
                s,
                "<li><a href=\"{}\">{}</a></li>",
                news_alias_href(seed, j, form, port),
                article_title(seed, stream::NEWS, j)
            );
        }
        s.push_str("</ul></div>\n<div class=\"footer\">The Daily Test, a newspaper of the simcrawl test web.</div>\n");
        s.push_str(PAGE_END);
        s
    }

    /// The wiki served identically by mirror-a.test and mirror-b.test (root-relative links only).
    fn wiki(&self, path: &str, port: u16) -> Reply {
        let seed = self.opts.seed;
        let n = self.counts.wiki;
        let segs: Vec<&str> = path[1..].split('/').collect();
        match segs.as_slice() {
            [""] => {
                let links: Vec<(String, String)> = (0..n.div_ceil(PER_LIST))
                    .map(|k| (format!("/list/{}/", k + 1), format!("Wiki pages, part {}", k + 1)))
                    .collect();
                html(200, simple_page("The Test Wiki", "A wiki about everything.", &links))
            }
            ["list", k, ""] => match parse_id(k) {
                Some(k) if k >= 1 && (k - 1) * PER_LIST < n => {
                    let links: Vec<(String, String)> = ((k - 1) * PER_LIST..(k * PER_LIST).min(n))
                        .map(|id| (format!("/wiki/{id}/"), article_title(seed, stream::WIKI, id)))
                        .collect();
                    html(200, simple_page(&format!("Wiki pages, part {k}"), "Pages.", &links))
                }
                _ => not_found(),
            },
            ["wiki", id, ""] => match parse_id(id) {
                Some(i) if i < n => {
                    let title = article_title(seed, stream::WIKI, i);
                    let body = article_text(seed, stream::WIKI, i);
                    let mut s = String::with_capacity(body.words.len() * 9 + 1024);
                    page_start(&mut s, &title);
                    let _ = write!(
                        s,
                        "<div class=\"wiki-nav\"><a href=\"/\">Test Wiki</a> | <a href=\"http://www.news.test:{port}/\">Daily Test</a></div>\n<h1>{title}</h1>\n<div class=\"wiki-body\">\n"
                    );
                    text::render_paragraphs(&mut s, &body, &[]);
                    s.push_str("</div>\n<ul class=\"see-also\">\n");
                    let mut rng = Rng::for_stream(&[seed, stream::LINKS, stream::WIKI, i as u64]);
                    for _ in 0..4 {
                        let j = rng.below(n);
                        let _ = writeln!(
                            s,
                            "<li><a href=\"/wiki/{j}/\">{}</a></li>",
                            article_title(seed, stream::WIKI, j)
                        );
                    }
                    s.push_str("</ul>\n");
                    s.push_str(PAGE_END);
                    html(200, s)
                }
                _ => not_found(),
            },
            _ => not_found(),
        }
    }

    fn blog(&self, path: &str, port: u16) -> Reply {
        let seed = self.opts.seed;
        let n = self.counts.posts;
        let segs: Vec<&str> = path[1..].split('/').collect();
        match segs.as_slice() {
            [""] => {
                let links: Vec<(String, String)> = (0..n.div_ceil(PER_LIST))
                    .map(|k| (format!("/list/{}/", k + 1), format!("Posts, part {}", k + 1)))
                    .collect();
                html(
                    200,
                    simple_page("The Test Blog", "Posts and their syndicated copies.", &links),
                )
            }
            ["list", k, ""] => match parse_id(k) {
                Some(k) if k >= 1 && (k - 1) * PER_LIST < n => {
                    let mut links = Vec::new();
                    for p in (k - 1) * PER_LIST..(k * PER_LIST).min(n) {
                        let title = article_title(seed, stream::POST, p);
                        let href = if blog_slashless(p) {
                            format!("/posts/{p}")
                        } else {
                            format!("/posts/{p}/")
                        };
                        links.push((href, title.clone()));
                        links.push((format!("/copy/{p}/"), format!("{title} (syndicated)")));
                    }
                    html(200, simple_page(&format!("Posts, part {k}"), "Posts.", &links))
                }
                _ => not_found(),
            },
            ["posts", id] | ["posts", id, ""] => match parse_id(id) {
                Some(p) if p < n => html(200, self.blog_post(p, None, port)),
                _ => not_found(),
            },
            ["copy", id, ""] => match parse_id(id) {
                Some(p) if p < n => html(
                    200,
                    self.blog_post(p, Some(VARIANT_KINDS[p % VARIANT_KINDS.len()]), port),
                ),
                _ => not_found(),
            },
            _ => not_found(),
        }
    }

    /// Blog post `p`, or its near-duplicate copy of `variant` kind.
    fn blog_post(&self, p: usize, variant: Option<VariantKind>, port: u16) -> String {
        let seed = self.opts.seed;
        let n = self.counts.posts;
        let title = article_title(seed, stream::POST, p);
        let body = article_text(seed, stream::POST, p);
        let ch = match variant {
            Some(kind) => variant_chrome(seed, p, kind, &body),
            None => chrome(seed, stream::POST, p),
        };
        let mut s = String::with_capacity(body.words.len() * 9 + 4096);
        page_start(&mut s, &title);
        let _ = write!(
            s,
            "<div class=\"blog-header\"><a href=\"/\">The Test Blog</a> | <a href=\"http://www.news.test:{port}/\">The Daily Test</a></div>\n<h1>{title}</h1>\n"
        );
        push_meta(&mut s, "Posted", &ch, "views");
        push_main(&mut s, &body, &ch);
        push_ad_slot(&mut s, seed, &ch);
        s.push_str("<div class=\"more\"><h2>More</h2><ul>\n");
        for d in 1..=2 {
            let q = (p + d) % n;
            let _ = writeln!(
                s,
                "<li><a href=\"/posts/{q}/\">{}</a></li>",
                article_title(seed, stream::POST, q)
            );
        }
        let mut rng = Rng::for_stream(&[seed, stream::LINKS, stream::POST, p as u64]);
        for _ in 0..2 {
            let j = rng.below(self.counts.news);
            let _ = writeln!(
                s,
                "<li><a href=\"http://www.news.test:{port}/news/{}/{j}/\">{}</a></li>",
                TOPICS[topic_of(j)],
                article_title(seed, stream::NEWS, j)
            );
        }
        s.push_str("</ul></div>\n<div class=\"footer\">The Test Blog.</div>\n");
        s.push_str(PAGE_END);
        s
    }

    fn docs(&self, path: &str) -> Reply {
        let n = self.counts.docs;
        let modules = n.div_ceil(PER_MODULE);
        let segs: Vec<&str> = path[1..].split('/').collect();
        match segs.as_slice() {
            [""] => {
                let links: Vec<(String, String)> = (0..modules)
                    .map(|m| {
                        let href = if m == 0 {
                            "/api/m0".to_string()
                        } else {
                            format!("/api/m{m}/")
                        };
                        (href, format!("Module m{m}"))
                    })
                    .collect();
                html(200, simple_page("Test crate documentation", "API reference.", &links))
            }
            ["api", m] | ["api", m, ""] => match m.strip_prefix('m').and_then(parse_id) {
                Some(m) if m < modules => {
                    let mut links: Vec<(String, String)> = (m * PER_MODULE..((m + 1) * PER_MODULE).min(n))
                        .map(|i| (format!("/api/m{m}/fn.item{i}.html"), doc_item_name(i)))
                        .collect();
                    links.push(("/index.html".into(), "Home".into()));
                    html(
                        200,
                        simple_page(&format!("Module m{m}"), "Functions of this module.", &links),
                    )
                }
                _ => not_found(),
            },
            ["api", m, item] => {
                let m = m.strip_prefix('m').and_then(parse_id);
                let i = item
                    .strip_prefix("fn.item")
                    .and_then(|r| r.strip_suffix(".html"))
                    .and_then(parse_id);
                match (m, i) {
                    (Some(m), Some(i)) if i < n && i / PER_MODULE == m => html(200, self.doc_item(i)),
                    _ => not_found(),
                }
            }
            _ => not_found(),
        }
    }

    fn doc_item(&self, i: usize) -> String {
        let name = doc_item_name(i);
        let mut rng = Rng::for_stream(&[self.opts.seed, stream::DOC, i as u64]);
        let words = rng.range(30, 80);
        let (head, foot) = &self.docs_template;
        let mut s = String::with_capacity(head.len() + foot.len() + 1024);
        page_start(&mut s, &format!("{name} in test_crate - Rust"));
        s.push_str(head);
        let _ = write!(
            s,
            "<div class=\"main-content\"><h1>Function <code>{name}</code></h1>\n<pre>pub fn {name}(input: &amp;[u8]) -&gt; Result&lt;Output, Error&gt;</pre>\n<!--tw:main--><p>"
        );
        text::push_capitalized(&mut s, &text::sentence_words(&mut rng, 4, words));
        let _ = writeln!(
            s,
            ".</p><!--/tw:main--><p><a href=\"/api/m{}/\">Back to the module</a></p></div>",
            i / PER_MODULE
        );
        s.push_str(foot);
        s.push_str(PAGE_END);
        s
    }

    fn traps(&self, path: &str, port: u16) -> Reply {
        if path == "/" {
            let links: Vec<(String, String)> = TRAP_LINKS.iter().map(|p| (p.to_string(), p.to_string())).collect();
            return html(
                200,
                simple_page("Traps", "Redirects, loops and an endless calendar.", &links),
            );
        }
        if path == "/redirect/end" {
            return html(
                200,
                simple_page("End of the chain", "You followed four redirects.", &[]),
            );
        }
        if let Some((status, location)) = redirect(path, port) {
            let mut r = html(
                status,
                format!("<!DOCTYPE html>\n<html><body><a href=\"{location}\">moved</a></body></html>\n"),
            );
            r.location = Some(location);
            return r;
        }
        let segs: Vec<&str> = path[1..].split('/').collect();
        if let ["calendar", y, m, ""] = segs.as_slice() {
            if let (Some(y), Some(m)) = (parse_id(y), m.parse::<usize>().ok().filter(|_| m.len() == 2)) {
                if (1..=9999).contains(&y) && (1..=12).contains(&m) {
                    return html(200, calendar_page(y, m));
                }
            }
        }
        not_found()
    }

    fn errors(&self, path: &str) -> Reply {
        match path {
            "/" => {
                let links: Vec<(String, String)> = ERROR_PATHS.iter().map(|p| (p.to_string(), p.to_string())).collect();
                html(200, simple_page("Errors", "Pages that fail in every way.", &links))
            }
            "/error500" => html(500, simple_page("Internal server error", "Something broke.", &[])),
            "/busy" | "/unavailable" => {
                let mut r = html(
                    if path == "/busy" { 429 } else { 503 },
                    simple_page("Try again later", "Too many requests; come back in a second.", &[]),
                );
                r.retry_after_secs = Some(1);
                r
            }
            "/busy-once" => html(
                200,
                simple_page("Busy once", "This page answered 429 once, then this.", &[]),
            ),
            "/slow" => {
                let mut r = html(200, simple_page("A slow page", "This page takes its time.", &[]));
                r.delay = Duration::from_millis(self.opts.slow_ms);
                r
            }
            "/big" => Reply {
                status: 200,
                content_type: Some(HTML),
                location: None,
                retry_after_secs: None,
                delay: Duration::ZERO,
                body: self.big_body.clone(),
            },
            "/report.pdf" => binary("application/pdf", PDF),
            "/logo.png" => binary("image/png", PNG),
            "/legacy" => {
                let page = format!(
                    "<!DOCTYPE html>\n<html lang=\"fr\"><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><title>Page en windows-1252</title></head>\n<body><h1>Menu</h1><p>{LEGACY_TEXT}</p></body></html>\n"
                );
                let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&page);
                Reply {
                    status: 200,
                    content_type: Some("text/html"),
                    location: None,
                    retry_after_secs: None,
                    delay: Duration::ZERO,
                    body: Bytes::from(bytes.into_owned()),
                }
            }
            _ => not_found(),
        }
    }
}

/// Number of news articles of topic `t` among ids `0..news`.
pub(crate) fn news_in_topic(news: usize, t: usize) -> usize {
    (news + TOPICS.len() - 1 - t) / TOPICS.len()
}

fn binary(content_type: &'static str, body: &'static [u8]) -> Reply {
    Reply {
        status: 200,
        content_type: Some(content_type),
        location: None,
        retry_after_secs: None,
        delay: Duration::ZERO,
        body: Bytes::from_static(body),
    }
}

/// The calendar page of month `m` of year `y`: links to the previous and
/// next month and the next year, forever.
fn calendar_page(y: usize, m: usize) -> String {
    let (py, pm) = if m == 1 {
        (y.saturating_sub(1).max(1), 12)
    } else {
        (y, m - 1)
    };
    let (ny, nm) = if m == 12 { ((y + 1).min(9999), 1) } else { (y, m + 1) };
    simple_page(
        &format!("Events in {y}-{m:02}"),
        "No events this month.",
        &[
            (format!("/calendar/{py}/{pm:02}/"), "Previous month".into()),
            (format!("/calendar/{ny}/{nm:02}/"), "Next month".into()),
            (format!("/calendar/{}/{m:02}/", (y + 1).min(9999)), "Next year".into()),
        ],
    )
}

fn push_meta(s: &mut String, verb: &str, ch: &Chrome, unit: &str) {
    let _ = writeln!(
        s,
        "<div class=\"meta\">{verb} <!--tw:time-->{}<!--/tw:time--> | <!--tw:counter-->{} {unit}<!--/tw:counter--></div>",
        ch.time, ch.counter
    );
}

fn push_main(s: &mut String, body: &Text, ch: &Chrome) {
    s.push_str("<!--tw:main--><div class=\"article-body\">\n");
    text::render_paragraphs(s, body, &ch.edits);
    s.push_str("</div><!--/tw:main-->\n");
}

fn push_ad_slot(s: &mut String, seed: u64, ch: &Chrome) {
    s.push_str("<div class=\"ad-slot\"><!--tw:ad-->");
    push_ad(s, seed, ch.ad, ch.large_ad);
    s.push_str("<!--/tw:ad--></div>\n");
}
