//! The built-in local test web (beside the pipeline: the demo, the tests and
//! the crawl benchmark crawl it): a deterministic synthetic web served by one
//! local HTTP server on 127.0.0.1, with virtual hosts chosen by the `Host`
//! header, and its ground truth.
//!
//! - [`TestWeb`] is the immutable generator: [`TestWeb::respond`] builds any
//!   page from `(seed, host, path)` on request (nothing is held per page, so
//!   100k+ pages cost no memory); [`TestWeb::truth`] lists every page with
//!   its expected status and its duplicate, near-duplicate, mirror, robots and
//!   topic facts ([`GroundTruth`]).
//! - [`RunningTestWeb`] serves a `TestWeb` with axum on a local address
//!   (port 0 for tests), logs every request ([`RequestLogEntry`]) so
//!   politeness tests can check per-host spacing, and stops on drop.
//!
//! # Hosts (all under `.test`; URLs carry the server's port)
//!
//! | host | what it holds |
//! |------|---------------|
//! | `www.news.test` | the hub `/` (links every host), `/news/{topic}/{id}/` articles in five topics, alias links |
//! | `archive.test` | partial mirror: `/mirror/news/...` serves the bytes of `www.news.test/news/...` |
//! | `mirror-a.test`, `mirror-b.test` | a wiki; `mirror-b` is a byte-identical full mirror of `mirror-a` |
//! | `blog.test` | posts `/posts/{p}/` and near-duplicate copies `/copy/{p}/` (ad, timestamp, counter, edited words, large ad) |
//! | `docs.test` | generated-API-doc pages: a heavy shared template around a short main text |
//! | `robots-disallow.test`, `robots-delay.test`, `robots-404.test`, `robots-503.test` | robots.txt cases |
//! | `traps.test` | a redirect chain, a cross-host redirect, a redirect loop, an infinite calendar |
//! | `errors.test` | 404, 500, 429 + Retry-After, 503 + Retry-After, a slow page, a 2 MiB body, PDF, PNG, windows-1252 |
//! | `ref.test` | a generated API reference: 40 short property pages (20 to 60 words) in a heavy template, distinct pages that differ in a few words, and 4 near-duplicate copies under `/latest/` |
//! | `manual.test` | a manual under `/en/`, `/fr/`, `/de/`, `/es/`: translated chrome and titles; untranslated chapters are near duplicates of their `/en/` page, translated ones distinct |
//! | `v1.docs.test`, `v2.docs.test` | two versions of one documentation site: mostly the same paths and main texts (near duplicates), some pages rewritten, pages only on one side; NOT mirrors |
//!
//! Beside these, `changing.test` (see [`changing`]) serves pages that change
//! with the server's epoch, for recrawl tests; it is linked from nowhere.
//!
//! The last three rows are regression cases of near-duplicate decisions on
//! real websites (see `cases.rs`).
//!
//! One more host, `sitemaps.test` ([`SITEMAP_HOST`]), is not in [`HOSTS`]:
//! nothing links to it and the main truth leaves it out. It holds the
//! sitemap cases (robots.txt `Sitemap:` lines, an index, gzip, text, broken
//! and bomb sitemaps, nested indexes) and pages reachable only through them;
//! a crawl seeded at it is checked against [`sitemap_truth`].
//!
//! Variable regions of article pages are delimited by HTML comments
//! (`<!--tw:time-->…<!--/tw:time-->`, likewise `tw:counter`, `tw:ad`,
//! `tw:main`) so tests can check that a near-duplicate differs from its
//! original only inside the intended region. The comments are invisible to
//! text extraction.

mod cases;
pub mod changing;
mod generate;
mod rng;
mod server;
mod sitemaps;
mod text;
mod truth;
mod words;

use std::time::Duration;

pub use server::{write_truth, RequestLogEntry, RunningTestWeb, TestWebError};
pub use sitemaps::{sitemap_truth, SitemapTruth, HUB_DELAY, SITEMAP_HOST};
pub use truth::{
    DistinctKind, DistinctPair, GroundTruth, HostTruth, MirrorKind, MirrorTruth, NearDuplicatePair, NotMirrorTruth,
    PageKind, PageTruth, RobotsTruth, TrapTruth, VariantKind,
};

/// The topics articles belong to (focused crawling); an article's topic is
/// `TOPICS[id % TOPICS.len()]` and is recorded in the truth.
pub const TOPICS: [&str; 5] = words::TOPICS;

/// Topic vocabularies: the words that mark each topic (same order as
/// [`TOPICS`]). About a third of an article's words come from its topic's list.
pub fn topic_words(topic: &str) -> Option<&'static [&'static str]> {
    TOPICS.iter().position(|t| *t == topic).map(|i| words::TOPIC_WORDS[i])
}

/// Every virtual host of the test web, lower case, in a fixed order.
pub const HOSTS: [&str; 16] = [
    "www.news.test",
    "archive.test",
    "mirror-a.test",
    "mirror-b.test",
    "blog.test",
    "docs.test",
    "robots-disallow.test",
    "robots-delay.test",
    "robots-404.test",
    "robots-503.test",
    "traps.test",
    "errors.test",
    "ref.test",
    "manual.test",
    "v1.docs.test",
    "v2.docs.test",
];

/// The hosts of the near-duplicate regression cases (`cases.rs`): pages
/// that simhash alone is known to get wrong (short pages within k of each
/// other, untranslated pages far from their original), there to check the
/// crawl's confirmed decisions. Offline single-detector evaluations of the
/// truth leave them out.
pub const CASE_HOSTS: [&str; 4] = ["ref.test", "manual.test", "v1.docs.test", "v2.docs.test"];

/// Whether `url` is on one of the [`CASE_HOSTS`].
pub fn is_case_url(url: &str) -> bool {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| CASE_HOSTS.contains(&h)))
        .unwrap_or(false)
}

/// Size of the body served at `errors.test/big`: 2 MiB, twice the 1 MiB
/// `fetch.max_body_bytes` of `config/test.toml`.
pub const BIG_BODY_BYTES: usize = 2 * 1024 * 1024;

/// How a test web is generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestWebOptions {
    /// Seed of the generator: same seed (and port), same bytes.
    pub seed: u64,
    /// Scales the number of article-like pages: about `0.6 x pages` news
    /// articles, `0.1 x` wiki pages (served twice: mirror-a and mirror-b),
    /// `1/15 x` blog posts (each with a near-duplicate copy) and `0.1 x`
    /// doc pages. The news articles are served again by the partial mirror.
    pub pages: usize,
    /// Delay before `errors.test/slow` answers, in milliseconds.
    pub slow_ms: u64,
}

impl Default for TestWebOptions {
    /// Seed 1, 300 pages, a 1500 ms slow page.
    fn default() -> Self {
        TestWebOptions {
            seed: 1,
            pages: 300,
            slow_ms: 1500,
        }
    }
}

/// One HTTP answer of the test web, before it is put on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` header, when there is a body type to declare.
    pub content_type: Option<&'static str>,
    /// `Location` header of redirects (absolute or relative, as served).
    pub location: Option<String>,
    /// `Retry-After` header in seconds (429 and 503 answers).
    pub retry_after_secs: Option<u64>,
    /// How long the server waits before answering (the slow page).
    pub delay: Duration,
    /// The body bytes.
    pub body: bytes::Bytes,
}

/// How many pages of each generated kind a size gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    /// News articles on www.news.test (ids `0..news`).
    pub(crate) news: usize,
    /// Wiki pages on mirror-a.test (and mirror-b.test).
    pub(crate) wiki: usize,
    /// Blog posts (each with one near-duplicate copy).
    pub(crate) posts: usize,
    /// Doc item pages on docs.test.
    pub(crate) docs: usize,
}

impl Counts {
    fn for_pages(pages: usize) -> Counts {
        Counts {
            news: (pages * 6 / 10).max(10),
            wiki: (pages / 10).max(5),
            posts: (pages / 15).max(10),
            docs: (pages / 10).max(8),
        }
    }
}

/// The deterministic synthetic web: generates every page on request from the
/// seed, and its ground truth. Immutable; share it with `Arc`.
#[derive(Debug)]
pub struct TestWeb {
    opts: TestWebOptions,
    counts: Counts,
    /// The docs.test template (nav, sidebar, footer): identical on every doc page.
    docs_template: (String, String),
    /// The `errors.test/big` body (port independent, built once).
    big_body: bytes::Bytes,
}

impl TestWeb {
    /// A test web for `opts` (cheap: builds the shared docs template and
    /// the 2 MiB body, nothing per page).
    pub fn new(opts: TestWebOptions) -> TestWeb {
        let counts = Counts::for_pages(opts.pages);
        let docs_template = generate::docs_template(opts.seed, counts);
        let big_body = generate::big_body(opts.seed);
        TestWeb {
            opts,
            counts,
            docs_template,
            big_body,
        }
    }

    /// The options this web was built with.
    pub fn options(&self) -> &TestWebOptions {
        &self.opts
    }

    /// Every virtual host name, lower case (see [`HOSTS`]).
    pub fn hosts(&self) -> Vec<String> {
        HOSTS.iter().map(|h| h.to_string()).collect()
    }

    /// The seed URLs of a crawl of this web served on `port`: the hub
    /// `http://www.news.test:PORT/`, from which every host is linked.
    pub fn seeds(&self, port: u16) -> Vec<String> {
        vec![format!("http://www.news.test:{port}/")]
    }
}

#[cfg(test)]
mod tests;
