//! `sitemaps.test`: the sitemap cases of the test web, on a host of their
//! own that nothing links to (crawls seeded at the hub never see it, so the
//! main truth and its page counts are untouched; a test seeds
//! [`SitemapTruth::seed`]).
//!
//! | path | what it is |
//! |------|------------|
//! | `/robots.txt` | `Disallow: /private/` and three `Sitemap:` lines: `/index.xml`, `/private/sitemap.xml` (disallowed), `/moved.xml` (a 301 to `/moved-target.xml`) |
//! | `/` | links `/hub/`, nothing else |
//! | `/hub/` | answers after [`HUB_DELAY`]; links `/linked/0/` .. `/linked/2/` |
//! | `/sitemap.xml` | the root sitemap (a seed origin's): `/root/0/`, `/root/1/` |
//! | `/index.xml` | a sitemap index of everything below, itself included |
//! | `/urls.xml` | a `<urlset>` with lastmod, changefreq and priority: `/only/0..3/` and `/linked/0/` (priority 1.0, lastmod 2000-01-01: component 1.0) |
//! | `/urls.xml.gz` | a gzip `<urlset>`: `/gz/0..2/` |
//! | `/urls.txt` | a text sitemap: `/txt/0..2/`, `/linked/1/` and two lines that are not URLs |
//! | `/broken.xml` | `/broken/0/`, `/broken/1/`, then a mismatched end tag, then `/broken/2/` (never read) |
//! | `/bomb.xml.gz` | 4 KiB compressed into 64 MiB: `/bomb/0/`, 64 MiB of comment, `/bomb/1/` (past the 50 MiB limit) |
//! | `/many.txt` | 30 URLs `/many/0..29/` (for a `max_urls_per_file` below 30) |
//! | `/nest/N.xml` | indexes nested 5 deep: each lists `/nest/urls-N.xml` (a `<urlset>` of `/nest/page/N/`) and `/nest/{N+1}.xml` |
//! | `/foreign.xml` | URLs on other hosts (never queued: a sitemap lists its own host's) |
//! | `/missing.xml` | 404 |
//! | `/private/sitemap.xml` | `/private-only/0/` (never read: robots.txt disallows the sitemap) |
//!
//! Every page under `/linked/`, `/root/`, `/only/`, ... is a distinct text
//! page linking back to `/`.

use std::io::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;

use super::generate::{html, not_found, simple_page};
use super::rng::Rng;
use super::{text, Reply, TestWeb};

/// The host of the sitemap cases.
pub const SITEMAP_HOST: &str = "sitemaps.test";

/// Page families: (path prefix, pages).
const FAMILIES: [(&str, usize); 12] = [
    ("linked", 3),
    ("root", 2),
    ("only", 4),
    ("gz", 3),
    ("txt", 3),
    ("broken", 3),
    ("bomb", 2),
    ("many", 30),
    ("nest/page", NEST_LEVELS + 1),
    ("moved", 1),
    ("private-only", 1),
    ("foreign-only", 1),
];

/// How long `/hub/` takes to answer: a crawl that may send two requests
/// to the host at once has read the sitemaps before it finds the links.
pub const HUB_DELAY: Duration = Duration::from_millis(1500);

/// Index levels under `/nest/` (`/nest/1.xml` .. `/nest/5.xml`).
const NEST_LEVELS: usize = 5;
/// Padding of the bomb: 64 MiB decompressed.
const BOMB_PAD: usize = 64 << 20;

/// What a crawl seeded at [`SitemapTruth::seed`] should find.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapTruth {
    /// The seed: `http://sitemaps.test:PORT/`.
    pub seed: String,
    /// Pages a crawl with the default `[sitemaps]` settings and
    /// `max_urls_per_file` of 30 or more fetches (the seed, linked pages and
    /// pages listed in sitemaps it reads); `many` included.
    pub pages: Vec<String>,
    /// The pages of `pages` that no page links to: reached only through a sitemap.
    pub sitemap_only: Vec<String>,
    /// URLs a sitemap lists that a crawl must not fetch: after the break of
    /// `broken`, after the bomb's limit, below `max_nesting` 3, on other
    /// hosts, in the robots-disallowed sitemap.
    pub never: Vec<String>,
    /// `/linked/0/`: linked from `/hub/` and listed in `urls` with priority
    /// 1.0 and an old lastmod: its sitemap component is 1.0.
    pub linked_and_listed: String,
    /// The URLs of `many.txt`, in file order.
    pub many: Vec<String>,
    /// Sitemap URLs by case.
    pub index: String,
    /// The root sitemap (`/sitemap.xml`).
    pub root: String,
    /// The XML `<urlset>` with metadata.
    pub urls: String,
    /// The gzip sitemap.
    pub gzip: String,
    /// The text sitemap.
    pub text: String,
    /// The broken XML sitemap.
    pub broken: String,
    /// The gzip bomb.
    pub bomb: String,
    /// The 30-URL text sitemap.
    pub many_sitemap: String,
    /// The nested indexes `/nest/1.xml` .. `/nest/5.xml`.
    pub nest: Vec<String>,
    /// The sitemap of other hosts' URLs.
    pub foreign: String,
    /// The 404 sitemap.
    pub missing: String,
    /// The robots-disallowed sitemap.
    pub private: String,
    /// The sitemap that redirects, and its target.
    pub moved: (String, String),
}

fn page(port: u16, family: &str, i: usize) -> String {
    format!("http://{SITEMAP_HOST}:{port}/{family}/{i}/")
}

fn sm(port: u16, path: &str) -> String {
    format!("http://{SITEMAP_HOST}:{port}{path}")
}

/// The truth of `sitemaps.test` served on `port`.
pub fn sitemap_truth(port: u16) -> SitemapTruth {
    let p = |f: &str, i: usize| page(port, f, i);
    let mut sitemap_only = Vec::new();
    for (family, n) in [
        ("root", 2),
        ("only", 4),
        ("gz", 3),
        ("txt", 3),
        ("broken", 2),
        ("bomb", 1),
        ("many", 30),
    ] {
        sitemap_only.extend((0..n).map(|i| p(family, i)));
    }
    // /nest/urls-1.xml is read at nesting 2, /nest/urls-2.xml at 3.
    sitemap_only.extend((1..=2).map(|i| p("nest/page", i)));
    sitemap_only.push(p("moved", 0));
    let mut pages = vec![
        format!("http://{SITEMAP_HOST}:{port}/"),
        format!("http://{SITEMAP_HOST}:{port}/hub/"),
    ];
    pages.extend((0..3).map(|i| p("linked", i)));
    pages.extend(sitemap_only.iter().cloned());
    let mut never = vec![p("broken", 2), p("bomb", 1), p("private-only", 0)];
    never.extend((3..=NEST_LEVELS).map(|i| p("nest/page", i)));
    never.extend(foreign_urls(port));
    SitemapTruth {
        seed: format!("http://{SITEMAP_HOST}:{port}/"),
        pages,
        sitemap_only,
        never,
        linked_and_listed: p("linked", 0),
        many: (0..30).map(|i| p("many", i)).collect(),
        index: sm(port, "/index.xml"),
        root: sm(port, "/sitemap.xml"),
        urls: sm(port, "/urls.xml"),
        gzip: sm(port, "/urls.xml.gz"),
        text: sm(port, "/urls.txt"),
        broken: sm(port, "/broken.xml"),
        bomb: sm(port, "/bomb.xml.gz"),
        many_sitemap: sm(port, "/many.txt"),
        nest: (1..=NEST_LEVELS).map(|i| sm(port, &format!("/nest/{i}.xml"))).collect(),
        foreign: sm(port, "/foreign.xml"),
        missing: sm(port, "/missing.xml"),
        private: sm(port, "/private/sitemap.xml"),
        moved: (sm(port, "/moved.xml"), sm(port, "/moved-target.xml")),
    }
}

fn foreign_urls(port: u16) -> Vec<String> {
    vec![
        format!("http://www.news.test:{port}/"),
        format!("http://elsewhere.test:{port}/foreign-only/0/"),
    ]
}

fn reply(content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    Reply {
        status: 200,
        content_type: Some(content_type),
        location: None,
        retry_after_secs: None,
        delay: Duration::ZERO,
        body: body.into(),
    }
}

const XML: &str = "application/xml";

fn urlset(entries: &[String]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for e in entries {
        s.push_str(e);
        s.push('\n');
    }
    s.push_str("</urlset>\n");
    s
}

fn url_entry(loc: &str) -> String {
    format!("  <url><loc>{loc}</loc></url>")
}

fn index(locs: &[String]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for l in locs {
        s.push_str(&format!("  <sitemap><loc>{l}</loc></sitemap>\n"));
    }
    s.push_str("</sitemapindex>\n");
    s
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

/// The bomb's middle: one gzip member of [`BOMB_PAD`] spaces (about 64 KiB),
/// built once per process. The bomb is three members (gzip allows
/// concatenation): the head with the port, this, the tail.
fn bomb_padding() -> &'static Bytes {
    static PAD: OnceLock<Bytes> = OnceLock::new();
    PAD.get_or_init(|| Bytes::from(gzip(&vec![b' '; BOMB_PAD])))
}

impl TestWeb {
    /// An answer of `sitemaps.test` (see the module docs).
    pub(super) fn sitemaps(&self, path: &str, port: u16) -> Reply {
        let t = sitemap_truth(port);
        let p = |f: &str, i: usize| page(port, f, i);
        match path {
            "/robots.txt" => reply(
                "text/plain; charset=utf-8",
                format!(
                    "User-agent: *\nDisallow: /private/\n\nSitemap: {}\nSitemap: {}\nSitemap: {}\n",
                    t.index, t.private, t.moved.0
                ),
            ),
            "/" => html(
                200,
                simple_page(
                    "Sitemap cases",
                    "Most pages of this host are only in its sitemaps.",
                    &[("/hub/".into(), "The linked pages".into())],
                ),
            ),
            "/hub/" => {
                let links: Vec<(String, String)> = (0..3)
                    .map(|i| (format!("/linked/{i}/"), format!("Linked page {i}")))
                    .collect();
                Reply {
                    delay: HUB_DELAY,
                    ..html(
                        200,
                        simple_page("Linked pages", "Pages both linked and listed in sitemaps.", &links),
                    )
                }
            }
            "/sitemap.xml" => reply(XML, urlset(&[url_entry(&p("root", 0)), url_entry(&p("root", 1))])),
            "/index.xml" => {
                let mut locs = vec![
                    t.urls.clone(),
                    t.gzip.clone(),
                    t.text.clone(),
                    t.broken.clone(),
                    t.bomb.clone(),
                    t.many_sitemap.clone(),
                    t.nest[0].clone(),
                    t.foreign.clone(),
                    t.missing.clone(),
                ];
                locs.push(t.index.clone());
                reply(XML, index(&locs))
            }
            "/urls.xml" => {
                let mut entries = vec![format!(
                    "  <url>\n    <loc>{}</loc>\n    <lastmod>2000-01-01</lastmod>\n    <priority>1.0</priority>\n  </url>",
                    t.linked_and_listed
                )];
                let meta = [
                    "<changefreq>daily</changefreq><priority>0.9</priority>",
                    "<lastmod>2001-02-03T04:05:06+00:00</lastmod>",
                    "<changefreq>never</changefreq><priority>0.1</priority>",
                    "",
                ];
                for (i, m) in meta.iter().enumerate() {
                    entries.push(format!("  <url><loc>{}</loc>{m}</url>", p("only", i)));
                }
                reply(XML, urlset(&entries))
            }
            "/urls.xml.gz" => {
                let entries: Vec<String> = (0..3).map(|i| url_entry(&p("gz", i))).collect();
                reply("application/gzip", gzip(urlset(&entries).as_bytes()))
            }
            "/urls.txt" => {
                let mut s = String::new();
                for i in 0..3 {
                    s.push_str(&p("txt", i));
                    s.push('\n');
                }
                s.push_str("# not a URL\n\n");
                s.push_str(&p("linked", 1));
                s.push_str("\nmailto:someone@sitemaps.test\n");
                reply("text/plain; charset=utf-8", s)
            }
            "/broken.xml" => reply(
                XML,
                format!(
                    "<?xml version=\"1.0\"?>\n<urlset>\n{}\n{}\n  <url><loc>{}</lox></url>\n</urlset>\n",
                    url_entry(&p("broken", 0)),
                    url_entry(&p("broken", 1)),
                    p("broken", 2)
                ),
            ),
            "/bomb.xml.gz" => {
                let head = format!("<urlset>{}\n<!--", url_entry(&p("bomb", 0)));
                let tail = format!("-->{}</urlset>\n", url_entry(&p("bomb", 1)));
                let mut body = gzip(head.as_bytes());
                body.extend_from_slice(bomb_padding());
                body.extend_from_slice(&gzip(tail.as_bytes()));
                reply("application/gzip", body)
            }
            "/many.txt" => {
                let s: String = t.many.iter().map(|u| format!("{u}\n")).collect();
                reply("text/plain; charset=utf-8", s)
            }
            "/foreign.xml" => {
                let entries: Vec<String> = foreign_urls(port).iter().map(|u| url_entry(u)).collect();
                reply(XML, urlset(&entries))
            }
            "/private/sitemap.xml" => reply(XML, urlset(&[url_entry(&p("private-only", 0))])),
            "/moved.xml" => Reply {
                status: 301,
                location: Some("/moved-target.xml".into()),
                ..not_found()
            },
            "/moved-target.xml" => reply(XML, urlset(&[url_entry(&p("moved", 0))])),
            _ => self.sitemap_page(path, port),
        }
    }

    /// `/nest/N.xml`, `/nest/urls-N.xml` and the pages.
    fn sitemap_page(&self, path: &str, port: u16) -> Reply {
        if let Some(rest) = path.strip_prefix("/nest/") {
            let level = |s: &str| s.parse::<usize>().ok().filter(|n| (1..=NEST_LEVELS).contains(n));
            if let Some(n) = rest
                .strip_suffix(".xml")
                .and_then(|r| r.strip_prefix("urls-"))
                .and_then(level)
            {
                return reply(XML, urlset(&[url_entry(&page(port, "nest/page", n))]));
            }
            if let Some(n) = rest.strip_suffix(".xml").and_then(level) {
                let mut locs = vec![sm(port, &format!("/nest/urls-{n}.xml"))];
                if n < NEST_LEVELS {
                    locs.push(sm(port, &format!("/nest/{}.xml", n + 1)));
                }
                return reply(XML, index(&locs));
            }
        }
        for (family, n) in FAMILIES {
            let Some(rest) = path.strip_prefix('/').and_then(|p| p.strip_prefix(family)) else {
                continue;
            };
            let Some(id) = rest
                .strip_prefix('/')
                .and_then(|r| r.strip_suffix('/'))
                .and_then(|r| r.parse::<usize>().ok())
            else {
                continue;
            };
            if id >= n || rest != format!("/{id}/") {
                return not_found();
            }
            let key = path
                .bytes()
                .fold(0x51_7e_3a_95u64, |h, b| crate::hash::mix64(h ^ u64::from(b)));
            let mut rng = Rng::for_stream(&[self.options().seed, key]);
            let para = text::sentence_words(&mut rng, (key % 5) as usize, 80);
            return html(
                200,
                simple_page(&format!("{SITEMAP_HOST} {path}"), &para, &[("/".into(), "Home".into())]),
            );
        }
        not_found()
    }
}
