//! Page generation: routes `(host, path)` to a page and renders it from the
//! seed. Pure functions of `(seed, size, port, host, path)`; no I/O.
//!
//! This file routes a request to its host and holds the HTML helpers every
//! page uses. `rules` holds the link rules (which alias URLs appear where),
//! small functions shared with the ground truth (`truth/`), so the truth
//! lists exactly the URLs the pages link to; `articles` renders the news,
//! wiki and blog pages (with the variable chrome of their near-duplicate
//! copies), `docs` the docs.test API pages, and `hazards` the traps.test
//! and errors.test pages.

mod articles;
mod docs;
mod hazards;
mod rules;

use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;

use super::rng::Rng;
use super::{text, Reply, TestWeb};

pub(crate) use docs::docs_template;
pub(crate) use hazards::{big_body, LEGACY_TEXT};
pub(crate) use rules::{
    blog_slashless, crawl_delay, news_alias_href, news_alias_link, news_in_topic, redirect, robots, robots_host_pages,
    topic_of, AliasForm, ERROR_PATHS, PER_LIST, PER_MODULE, TRAP_LINKS, VARIANT_KINDS,
};

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

/// The `Content-Type` of every generated HTML page.
pub(super) const HTML: &str = "text/html; charset=utf-8";

/// An HTML answer with `status` and `body`.
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

/// The 404 page.
pub(crate) fn not_found() -> Reply {
    html(
        404,
        "<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>\n".into(),
    )
}

/// The doctype, head (with `title`) and `<body>` of a page.
pub(super) fn page_start(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    out.push_str(title);
    out.push_str("</title></head>\n<body>\n");
}

/// The end of every page.
pub(super) const PAGE_END: &str = "</body></html>\n";

/// A simple page: title, a paragraph, and links (href, text).
pub(super) fn simple_page(title: &str, para: &str, links: &[(String, String)]) -> String {
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
pub(super) fn parse_id(s: &str) -> Option<usize> {
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
        if host == super::SITEMAP_HOST {
            return self.sitemaps(path, port);
        }
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
                    .fold(0u64, |h, b| crate::hash::mix64(h ^ u64::from(b)));
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
}
