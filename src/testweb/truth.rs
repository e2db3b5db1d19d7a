//! The ground truth of the test web: every page a crawler can meet, with its
//! expected status and what it duplicates; duplicate groups, near-duplicate
//! pairs and same-topic negatives, mirror host pairs, robots.txt answers,
//! disallowed URLs and traps. Written as JSON by `simcrawl testweb --truth`.
//!
//! Built from the same link rules the pages are rendered with
//! (`generate.rs`), in time linear in the page count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cases::{
    self, VersionPage, MANUAL_CHAPTERS, MANUAL_LANGS, REF_COPIES, REF_ITEMS, VERSION_HOSTS, VERSION_PAGES,
};
use super::generate::{
    self, blog_slashless, news_alias_href, news_alias_link, news_in_topic, robots, robots_host_pages, topic_of,
    AliasForm, ERROR_PATHS, PER_LIST, PER_MODULE, TRAP_LINKS, VARIANT_KINDS,
};
use super::{TestWeb, BIG_BODY_BYTES, HOSTS, TOPICS};

/// What a page is, for tests and evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// The www.news.test hub that links every host.
    Hub,
    /// A front, section, topic-index or list page.
    Index,
    /// An original article (news, wiki or blog post), with a topic.
    Article,
    /// A byte-identical copy of a page on a mirror host (`exact_dup_of` is the original).
    Mirror,
    /// The same page under another URL (`canonical_of` is the canonical URL).
    Alias,
    /// A near-duplicate of an article (`near_dup_of`, `variant_kind`).
    Variant,
    /// A docs.test page: heavy shared template, short distinct main text.
    Template,
    /// A robots.txt file.
    Robots,
    /// A small page of a robots test host.
    Plain,
    /// A redirect (`redirect_to`).
    Redirect,
    /// A page of an infinite link space (the calendar).
    Trap,
    /// An error answer (404, 500, 429, 503).
    Error,
    /// A page that answers after a delay.
    Slow,
    /// A body larger than the test config's fetch cap.
    Large,
    /// A non-HTML body (PDF, PNG).
    Binary,
    /// An HTML page in a legacy encoding declared in a meta tag.
    Legacy,
}

/// How a near-duplicate variant differs from its original.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariantKind {
    /// Another small ad text in the `tw:ad` region.
    Ad,
    /// Another publication time in the `tw:time` region.
    Timestamp,
    /// Another visit count in the `tw:counter` region.
    Counter,
    /// 2 to 5 words of the main text (`tw:main`) replaced.
    EditedWords,
    /// A large ad (about 160 words) instead of a small one in `tw:ad`.
    LargeAd,
    /// One word of a short main text (`tw:main`) replaced near its end
    /// (ref.test `/latest/` copies).
    OneWord,
    /// The same main text (`tw:main`) inside another language's chrome,
    /// title and navigation (manual.test untranslated chapters).
    Untranslated,
    /// The same page of another version of the site: the version in the
    /// chrome differs, and at most 2 words of the main text (`tw:main`).
    OtherVersion,
}

/// One URL of the test web.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageTruth {
    /// The URL exactly as linked (or as requested, for robots.txt), with the server's port.
    pub url: String,
    /// The host part of `url`, as written there (may be upper case for alias URLs).
    pub host: String,
    /// Path and query of `url`.
    pub path: String,
    /// The status of the first answer to a GET of `url` (redirects are not followed).
    pub status: u16,
    /// The `Content-Type` header of the answer.
    pub content_type: Option<String>,
    /// What the page is.
    pub kind: PageKind,
    /// Topic (one of [`super::TOPICS`]) of articles, their copies, aliases and variants.
    pub topic: Option<String>,
    /// For alias URLs: the canonical URL of the same page (same bytes).
    pub canonical_of: Option<String>,
    /// For pages byte-identical to an earlier-listed page (mirror copies,
    /// aliases): the original URL (the root of its exact-duplicate group).
    pub exact_dup_of: Option<String>,
    /// For near-duplicate variants: the original's URL.
    pub near_dup_of: Option<String>,
    /// For near-duplicate variants: what was changed.
    pub variant_kind: Option<VariantKind>,
    /// For redirects: the `Location` resolved to an absolute URL.
    pub redirect_to: Option<String>,
    /// For 429/503 answers: the `Retry-After` header in seconds.
    pub retry_after_secs: Option<u64>,
    /// For pages whose answer changes after a retry (`/busy-once`): the status of later requests.
    pub status_after_retry: Option<u16>,
    /// Whether robots.txt forbids this URL to the `simcrawl` agent (RFC 9309,
    /// a 5xx robots.txt disallowing everything). Such URLs are also in [`GroundTruth::disallowed`].
    pub disallowed: bool,
    /// Text the decoded page must contain (the legacy-encoding page).
    pub expect_text: Option<String>,
    /// Exact body size in bytes, for the oversized page.
    pub body_bytes: Option<u64>,
}

/// A pair of URLs that are near-duplicates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearDuplicatePair {
    /// The original.
    pub a: String,
    /// The variant.
    pub b: String,
    /// How `b` differs from `a`.
    pub kind: VariantKind,
}

/// Why two pages look alike but are NOT near-duplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistinctKind {
    /// Two articles on the same topic (same vocabulary, different text).
    SameTopic,
    /// Two docs.test pages sharing a heavy template, different main text.
    SharedTemplate,
    /// Two short ref.test pages that share most of their words but differ
    /// in a few meaningful ones (another property, another class): their
    /// 5-word shingle resemblance is low.
    FewWords,
    /// A manual.test chapter translated into another language, and the
    /// English original.
    Translated,
    /// The same path on two versions of a site, rewritten in between.
    Rewritten,
}

/// A negative example: two distinct pages that a detector must not pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistinctPair {
    /// One page.
    pub a: String,
    /// The other page.
    pub b: String,
    /// Why they look alike.
    pub kind: DistinctKind,
}

/// Full or partial mirror.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MirrorKind {
    /// Every path of `host_a` is served byte-identically by `host_b`.
    Full,
    /// The subtree `prefix_a` of `host_a` is served byte-identically under `prefix_b` of `host_b`.
    Partial,
}

/// Two hosts (or host + path prefixes) serving the same content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorTruth {
    /// The original host.
    pub host_a: String,
    /// Path prefix on `host_a` (`/` for the whole host).
    pub prefix_a: String,
    /// The mirroring host.
    pub host_b: String,
    /// Path prefix on `host_b` whose paths correspond to `prefix_a`'s.
    pub prefix_b: String,
    /// Full or partial.
    pub kind: MirrorKind,
    /// How many truth pages of `host_b` (under `prefix_b`) are copies.
    pub pages: usize,
}

/// Two hosts (or host + path prefixes) that share paths and much content
/// but are NOT mirrors (e.g. two versions of one site); a mirror detector
/// must not pair them, nor put them in one mirror set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotMirrorTruth {
    /// One host.
    pub host_a: String,
    /// The other host.
    pub host_b: String,
    /// Why they look like mirrors and are not (one line).
    pub why: String,
}

/// The robots.txt answer of one host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotsTruth {
    /// Host name.
    pub host: String,
    /// `http://HOST:PORT/robots.txt`.
    pub url: String,
    /// HTTP status of the robots.txt answer.
    pub status: u16,
    /// The body when the status is 200.
    pub body: Option<String>,
    /// The Crawl-delay (seconds) the body asks of every agent.
    pub crawl_delay_secs: Option<u64>,
}

/// A region of infinitely many URLs a crawler must bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapTruth {
    /// Every URL starting with this is part of the trap.
    pub url_prefix: String,
    /// `"calendar"`. Every page of a calendar trap is a near duplicate of
    /// every other (the month in the title is the only difference): a
    /// crawler that calls them near duplicates is right.
    pub kind: String,
    /// The trap URL linked from outside it.
    pub entry: String,
}

/// One virtual host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTruth {
    /// Lower-case host name.
    pub name: String,
    /// What it is for (one line).
    pub role: String,
    /// Front page URL.
    pub front: String,
}

/// Everything the test web knows about itself, for one port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// Generator seed.
    pub seed: u64,
    /// The `pages` size option.
    pub size: usize,
    /// Port the URLs carry.
    pub port: u16,
    /// Seed URLs: every host and page below is reachable from them by links.
    pub seeds: Vec<String>,
    /// The topics, in id order (article id `i` has topic `topics[i % topics.len()]`).
    pub topics: Vec<String>,
    /// The virtual hosts.
    pub hosts: Vec<HostTruth>,
    /// Every URL linked anywhere (plus robots.txt and redirect targets),
    /// except the calendar trap beyond its first months: see `traps`.
    pub pages: Vec<PageTruth>,
    /// Groups of URLs serving byte-identical bodies (original first):
    /// mirror copies and alias URLs with their original.
    pub exact_duplicate_groups: Vec<Vec<String>>,
    /// Original/variant pairs that are near-duplicates.
    pub near_duplicate_pairs: Vec<NearDuplicatePair>,
    /// Negative examples: pages alike in vocabulary or template that are not near-duplicates.
    pub distinct_pairs: Vec<DistinctPair>,
    /// Mirror host (prefix) pairs.
    pub mirrors: Vec<MirrorTruth>,
    /// Host pairs that share paths and content but are not mirrors.
    #[serde(default)]
    pub not_mirrors: Vec<NotMirrorTruth>,
    /// robots.txt of every host.
    pub robots: Vec<RobotsTruth>,
    /// Crawl-delay in seconds per host that asks for one.
    pub crawl_delays: BTreeMap<String, u64>,
    /// URLs (as linked) a polite `simcrawl` crawler must never request.
    pub disallowed: Vec<String>,
    /// Infinite URL spaces.
    pub traps: Vec<TrapTruth>,
    /// Canonical URLs reachable and allowed from the seeds: every listed
    /// page that is not an alias, not disallowed, not robots.txt, and not a
    /// calendar page other than the trap entry. Includes redirects, their
    /// targets and error pages (a crawler requests them too). A crawl that
    /// requests all of these (and nothing disallowed) is complete.
    pub reachable: Vec<String>,
}

impl GroundTruth {
    /// The page whose URL is `url`, if listed (linear search).
    pub fn page(&self, url: &str) -> Option<&PageTruth> {
        self.pages.iter().find(|p| p.url == url)
    }

    /// Pages of kind `kind`.
    pub fn pages_of_kind(&self, kind: PageKind) -> impl Iterator<Item = &PageTruth> {
        self.pages.iter().filter(move |p| p.kind == kind)
    }
}

const HTML: &str = "text/html; charset=utf-8";

struct Builder {
    port: u16,
    pages: Vec<PageTruth>,
}

impl Builder {
    fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    fn push(&mut self, host: &str, path: &str, status: u16, kind: PageKind) -> &mut PageTruth {
        let url = self.url(host, path);
        self.pages.push(PageTruth {
            url,
            host: host.to_string(),
            path: path.to_string(),
            status,
            content_type: Some(HTML.to_string()),
            kind,
            topic: None,
            canonical_of: None,
            exact_dup_of: None,
            near_dup_of: None,
            variant_kind: None,
            redirect_to: None,
            retry_after_secs: None,
            status_after_retry: None,
            disallowed: false,
            expect_text: None,
            body_bytes: None,
        });
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }
}

/// Resolves a relative reference written on a page at directory `base` (ending in '/').
fn resolve_rel(base: &str, rel: &str) -> String {
    let mut dir: Vec<&str> = base.trim_end_matches('/').split('/').collect();
    let mut rest = rel;
    while let Some(r) = rest.strip_prefix("../") {
        dir.pop();
        rest = r;
    }
    format!("{}/{rest}", dir.join("/"))
}

impl TestWeb {
    /// The ground truth for this web served on `port` (URLs carry the port).
    pub fn truth(&self, port: u16) -> GroundTruth {
        let seed = self.opts.seed;
        let c = self.counts;
        let mut b = Builder {
            port,
            pages: Vec::with_capacity(c.news * 2 + c.wiki * 2 + c.posts * 2 + c.docs + 200),
        };
        let topic = |id: usize| Some(TOPICS[topic_of(id)].to_string());

        // robots.txt of every host.
        let mut robots_truth = Vec::new();
        let mut crawl_delays = BTreeMap::new();
        for h in HOSTS {
            let (status, body) = robots(h);
            let p = b.push(h, "/robots.txt", status, PageKind::Robots);
            p.content_type = Some("text/plain; charset=utf-8".into());
            let url = p.url.clone();
            let delay = generate::crawl_delay(h);
            if let Some(d) = delay {
                crawl_delays.insert(h.to_string(), d);
            }
            robots_truth.push(RobotsTruth {
                host: h.to_string(),
                url,
                status,
                body: body.map(str::to_string),
                crawl_delay_secs: delay,
            });
        }

        // www.news.test: hub, section, topic indexes, lists, articles, alias URLs.
        b.push("www.news.test", "/", 200, PageKind::Hub);
        let news_start = b.pages.len();
        b.push("www.news.test", "/news/", 200, PageKind::Index);
        for (t, name) in TOPICS.iter().enumerate() {
            b.push("www.news.test", &format!("/news/{name}/"), 200, PageKind::Index)
                .topic = Some(name.to_string());
            let n = news_in_topic(c.news, t);
            for k in 1..=n.div_ceil(PER_LIST).max(1) {
                b.push("www.news.test", &format!("/news/{name}/p{k}/"), 200, PageKind::Index)
                    .topic = Some(name.to_string());
            }
        }
        for i in 0..c.news {
            let path = format!("/news/{}/{i}/", TOPICS[topic_of(i)]);
            b.push("www.news.test", &path, 200, PageKind::Article).topic = topic(i);
        }
        for i in 0..c.news {
            let Some((j, form)) = news_alias_link(i, c) else {
                continue;
            };
            let canonical_path = format!("/news/{}/{j}/", TOPICS[topic_of(j)]);
            let canonical = b.url("www.news.test", &canonical_path);
            let href = news_alias_href(seed, j, form, port);
            let (host, path) = match form {
                AliasForm::UpperHost => ("WWW.NEWS.TEST", canonical_path.clone()),
                _ => (
                    "www.news.test",
                    resolve_rel(&format!("/news/{}/{i}/", TOPICS[topic_of(i)]), &href),
                ),
            };
            let p = b.push(host, &path, 200, PageKind::Alias);
            p.topic = topic(j);
            p.canonical_of = Some(canonical.clone());
            p.exact_dup_of = Some(canonical);
        }
        let news_end = b.pages.len();

        // archive.test: front, and a copy of every /news/ page (upper-case host aliases are absolute: not copied).
        b.push("archive.test", "/", 200, PageKind::Index);
        let mut archive_pages = 0;
        for idx in news_start..news_end {
            let orig = b.pages[idx].clone();
            if orig.host != "www.news.test" {
                continue;
            }
            let path = format!("/mirror{}", orig.path);
            let p = b.push("archive.test", &path, 200, PageKind::Mirror);
            p.topic = orig.topic.clone();
            match orig.canonical_of {
                Some(canon) => {
                    let canon_path = canon.replacen(&format!("http://www.news.test:{port}"), "", 1);
                    p.kind = PageKind::Alias;
                    p.canonical_of = Some(format!("http://archive.test:{port}/mirror{canon_path}"));
                    p.exact_dup_of = Some(canon);
                }
                None => p.exact_dup_of = Some(orig.url.clone()),
            }
            archive_pages += 1;
        }

        // mirror-a.test and its full mirror mirror-b.test.
        let mut mirror_b_pages = 0;
        for (host, kind) in [("mirror-a.test", None), ("mirror-b.test", Some(PageKind::Mirror))] {
            let mut push = |b: &mut Builder, path: String, k: PageKind, t: Option<String>| {
                let orig = b.url("mirror-a.test", &path);
                let p = b.push(host, &path, 200, kind.unwrap_or(k));
                p.topic = t;
                if kind.is_some() {
                    p.exact_dup_of = Some(orig);
                    mirror_b_pages += 1;
                }
            };
            push(&mut b, "/".into(), PageKind::Index, None);
            for k in 1..=c.wiki.div_ceil(PER_LIST) {
                push(&mut b, format!("/list/{k}/"), PageKind::Index, None);
            }
            for i in 0..c.wiki {
                push(&mut b, format!("/wiki/{i}/"), PageKind::Article, topic(i));
            }
        }

        // blog.test: posts, their near-duplicate copies, slashless aliases.
        let mut near_pairs = Vec::new();
        b.push("blog.test", "/", 200, PageKind::Index);
        for k in 1..=c.posts.div_ceil(PER_LIST) {
            b.push("blog.test", &format!("/list/{k}/"), 200, PageKind::Index);
        }
        for p in 0..c.posts {
            let orig = b.url("blog.test", &format!("/posts/{p}/"));
            b.push("blog.test", &format!("/posts/{p}/"), 200, PageKind::Article)
                .topic = topic(p);
            let kind = VARIANT_KINDS[p % VARIANT_KINDS.len()];
            let v = b.push("blog.test", &format!("/copy/{p}/"), 200, PageKind::Variant);
            v.topic = topic(p);
            v.near_dup_of = Some(orig.clone());
            v.variant_kind = Some(kind);
            near_pairs.push(NearDuplicatePair {
                a: orig.clone(),
                b: v.url.clone(),
                kind,
            });
            if blog_slashless(p) {
                let a = b.push("blog.test", &format!("/posts/{p}"), 200, PageKind::Alias);
                a.topic = topic(p);
                a.canonical_of = Some(orig.clone());
                a.exact_dup_of = Some(orig);
            }
        }

        // docs.test: front (+ /index.html alias), modules (+ slashless alias of m0), items.
        let docs_front = b.url("docs.test", "/");
        b.push("docs.test", "/", 200, PageKind::Index);
        let a = b.push("docs.test", "/index.html", 200, PageKind::Alias);
        a.canonical_of = Some(docs_front.clone());
        a.exact_dup_of = Some(docs_front);
        let modules = c.docs.div_ceil(PER_MODULE);
        for m in 0..modules {
            b.push("docs.test", &format!("/api/m{m}/"), 200, PageKind::Index);
        }
        let m0 = b.url("docs.test", "/api/m0/");
        let a = b.push("docs.test", "/api/m0", 200, PageKind::Alias);
        a.canonical_of = Some(m0.clone());
        a.exact_dup_of = Some(m0);
        let docs_items_start = b.pages.len();
        for i in 0..c.docs {
            b.push(
                "docs.test",
                &format!("/api/m{}/fn.item{i}.html", i / PER_MODULE),
                200,
                PageKind::Template,
            );
        }

        // Robots hosts.
        let mut disallowed = Vec::new();
        for h in [
            "robots-disallow.test",
            "robots-delay.test",
            "robots-404.test",
            "robots-503.test",
        ] {
            for (path, dis) in robots_host_pages(h) {
                let kind = if *path == "/" { PageKind::Index } else { PageKind::Plain };
                let p = b.push(h, path, 200, kind);
                p.disallowed = *dis;
                if *dis {
                    disallowed.push(p.url.clone());
                }
            }
        }

        // traps.test.
        b.push("traps.test", "/", 200, PageKind::Index);
        let mut trap_entry = String::new();
        for link in TRAP_LINKS {
            if link.starts_with("/calendar/") {
                trap_entry = b.url("traps.test", link);
                continue;
            }
        }
        for path in [
            "/redirect/start",
            "/redirect/1",
            "/redirect/2",
            "/redirect/3",
            "/redirect/cross-host",
            "/loop/a",
            "/loop/b",
        ] {
            let (status, loc) = generate::redirect(path, port).unwrap_or((0, String::new()));
            let target = if loc.starts_with("http://") {
                loc
            } else if loc.starts_with('/') {
                b.url("traps.test", &loc)
            } else {
                b.url(
                    "traps.test",
                    &resolve_rel(&format!("{}/", path.rsplit_once('/').map_or("", |x| x.0)), &loc),
                )
            };
            b.push("traps.test", path, status, PageKind::Redirect).redirect_to = Some(target);
        }
        b.push("traps.test", "/redirect/end", 200, PageKind::Index);
        for path in ["/calendar/2024/01/", "/calendar/2024/02/", "/calendar/2023/12/"] {
            b.push("traps.test", path, 200, PageKind::Trap);
        }

        // errors.test.
        b.push("errors.test", "/", 200, PageKind::Index);
        for path in ERROR_PATHS {
            let (status, kind) = match path {
                "/missing" => (404, PageKind::Error),
                "/error500" => (500, PageKind::Error),
                "/busy" | "/busy-once" => (429, PageKind::Error),
                "/unavailable" => (503, PageKind::Error),
                "/slow" => (200, PageKind::Slow),
                "/big" => (200, PageKind::Large),
                "/report.pdf" | "/logo.png" => (200, PageKind::Binary),
                _ => (200, PageKind::Legacy),
            };
            let p = b.push("errors.test", path, status, kind);
            match path {
                "/busy" | "/unavailable" => p.retry_after_secs = Some(1),
                "/busy-once" => {
                    p.retry_after_secs = Some(1);
                    p.status_after_retry = Some(200);
                }
                "/big" => p.body_bytes = Some(BIG_BODY_BYTES as u64),
                "/report.pdf" => p.content_type = Some("application/pdf".into()),
                "/logo.png" => p.content_type = Some("image/png".into()),
                "/legacy" => {
                    p.content_type = Some("text/html".into());
                    p.expect_text = Some(generate::LEGACY_TEXT.into());
                }
                _ => {}
            }
        }

        // Regression cases (cases.rs): ref.test, manual.test, the docs versions.
        let mut case_distinct = Vec::new();
        b.push("ref.test", "/", 200, PageKind::Index);
        for i in 0..REF_ITEMS {
            b.push("ref.test", &format!("/{}", cases::ref_file(i)), 200, PageKind::Template);
        }
        for (i, kind) in REF_COPIES {
            let orig = b.url("ref.test", &format!("/{}", cases::ref_file(i)));
            let v = b.push(
                "ref.test",
                &format!("/latest/{}", cases::ref_file(i)),
                200,
                PageKind::Variant,
            );
            v.near_dup_of = Some(orig.clone());
            v.variant_kind = Some(kind);
            near_pairs.push(NearDuplicatePair {
                a: orig,
                b: v.url.clone(),
                kind,
            });
        }
        for (i, j) in cases::ref_distinct_pairs() {
            case_distinct.push(DistinctPair {
                a: b.url("ref.test", &format!("/{}", cases::ref_file(i))),
                b: b.url("ref.test", &format!("/{}", cases::ref_file(j))),
                kind: DistinctKind::FewWords,
            });
        }
        b.push("manual.test", "/", 200, PageKind::Index);
        for lang in MANUAL_LANGS {
            b.push("manual.test", &format!("/{lang}/"), 200, PageKind::Index);
            for ch in 0..MANUAL_CHAPTERS {
                let path = format!("/{lang}/ch{:02}.html", ch + 1);
                let en = b.url("manual.test", &format!("/en/ch{:02}.html", ch + 1));
                if lang == "en" {
                    b.push("manual.test", &path, 200, PageKind::Article);
                } else if cases::manual_untranslated(lang, ch) {
                    let v = b.push("manual.test", &path, 200, PageKind::Variant);
                    v.near_dup_of = Some(en.clone());
                    v.variant_kind = Some(VariantKind::Untranslated);
                    near_pairs.push(NearDuplicatePair {
                        a: en,
                        b: v.url.clone(),
                        kind: VariantKind::Untranslated,
                    });
                } else {
                    let url = b.push("manual.test", &path, 200, PageKind::Article).url.clone();
                    case_distinct.push(DistinctPair {
                        a: en,
                        b: url,
                        kind: DistinctKind::Translated,
                    });
                }
            }
        }
        for (v, host) in VERSION_HOSTS.iter().enumerate() {
            b.push(host, "/", 200, PageKind::Index);
            for (path, kind) in VERSION_PAGES.iter().filter(|(_, k)| cases::version_has(v, *k)) {
                let v1 = b.url(VERSION_HOSTS[0], path);
                match kind {
                    VersionPage::Same | VersionPage::Edited if v == 1 => {
                        let p = b.push(host, path, 200, PageKind::Variant);
                        p.near_dup_of = Some(v1.clone());
                        p.variant_kind = Some(VariantKind::OtherVersion);
                        near_pairs.push(NearDuplicatePair {
                            a: v1,
                            b: p.url.clone(),
                            kind: VariantKind::OtherVersion,
                        });
                    }
                    VersionPage::Rewritten if v == 1 => {
                        let url = b.push(host, path, 200, PageKind::Article).url.clone();
                        case_distinct.push(DistinctPair {
                            a: v1,
                            b: url,
                            kind: DistinctKind::Rewritten,
                        });
                    }
                    _ => {
                        b.push(host, path, 200, PageKind::Article);
                    }
                }
            }
        }

        // Derived lists.
        let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for p in &b.pages {
            if let Some(o) = &p.exact_dup_of {
                groups.entry(o.as_str()).or_default().push(p.url.clone());
            }
        }
        let exact_duplicate_groups: Vec<Vec<String>> = groups
            .into_iter()
            .map(|(o, mut members)| {
                members.insert(0, o.to_string());
                members
            })
            .collect();

        let mut distinct = Vec::new();
        for i in 0..c.news.saturating_sub(TOPICS.len()).min(100) {
            let j = i + TOPICS.len();
            distinct.push(DistinctPair {
                a: b.url("www.news.test", &format!("/news/{}/{i}/", TOPICS[topic_of(i)])),
                b: b.url("www.news.test", &format!("/news/{}/{j}/", TOPICS[topic_of(j)])),
                kind: DistinctKind::SameTopic,
            });
        }
        for i in 0..c.docs.saturating_sub(1).min(50) {
            distinct.push(DistinctPair {
                a: b.pages[docs_items_start + i].url.clone(),
                b: b.pages[docs_items_start + i + 1].url.clone(),
                kind: DistinctKind::SharedTemplate,
            });
        }

        distinct.extend(case_distinct);

        let trap_prefix = b.url("traps.test", "/calendar/");
        let reachable = b
            .pages
            .iter()
            .filter(|p| {
                p.canonical_of.is_none()
                    && !p.disallowed
                    && p.kind != PageKind::Robots
                    && (p.kind != PageKind::Trap || p.url == trap_entry)
            })
            .map(|p| p.url.clone())
            .collect();

        let hosts = HOSTS
            .iter()
            .map(|h| HostTruth {
                name: h.to_string(),
                role: host_role(h).to_string(),
                front: b.url(h, "/"),
            })
            .collect();

        GroundTruth {
            seed,
            size: self.opts.pages,
            port,
            seeds: self.seeds(port),
            topics: TOPICS.iter().map(|t| t.to_string()).collect(),
            hosts,
            exact_duplicate_groups,
            near_duplicate_pairs: near_pairs,
            distinct_pairs: distinct,
            mirrors: vec![
                MirrorTruth {
                    host_a: "mirror-a.test".into(),
                    prefix_a: "/".into(),
                    host_b: "mirror-b.test".into(),
                    prefix_b: "/".into(),
                    kind: MirrorKind::Full,
                    pages: mirror_b_pages,
                },
                MirrorTruth {
                    host_a: "www.news.test".into(),
                    prefix_a: "/news/".into(),
                    host_b: "archive.test".into(),
                    prefix_b: "/mirror/news/".into(),
                    kind: MirrorKind::Partial,
                    pages: archive_pages,
                },
            ],
            not_mirrors: vec![NotMirrorTruth {
                host_a: VERSION_HOSTS[0].into(),
                host_b: VERSION_HOSTS[1].into(),
                why: "two versions of one site: most shared paths have the same main text, some were rewritten, \
                      and each side has pages the other lacks"
                    .into(),
            }],
            robots: robots_truth,
            crawl_delays,
            disallowed,
            traps: vec![TrapTruth {
                url_prefix: trap_prefix,
                kind: "calendar".into(),
                entry: trap_entry,
            }],
            reachable,
            pages: b.pages,
        }
    }
}

fn host_role(h: &str) -> &'static str {
    match h {
        "www.news.test" => "hub and news articles in five topics, with alias URLs",
        "archive.test" => "partial mirror of www.news.test/news/ under /mirror/news/",
        "mirror-a.test" => "a wiki (original of the full mirror)",
        "mirror-b.test" => "byte-identical full mirror of mirror-a.test",
        "blog.test" => "posts and their near-duplicate copies",
        "docs.test" => "generated API docs: heavy shared template, short main text",
        "robots-disallow.test" => "robots.txt with Disallow and Allow rules",
        "robots-delay.test" => "robots.txt with Crawl-delay: 1",
        "robots-404.test" => "robots.txt answers 404 (allow all)",
        "robots-503.test" => "robots.txt answers 503 (disallow all)",
        "traps.test" => "redirect chain, cross-host redirect, redirect loop, calendar trap",
        "ref.test" => "generated API reference: short property pages in a heavy template, a few near copies",
        "manual.test" => "a manual in four languages: translated chrome, some chapters untranslated",
        "v1.docs.test" => "version 1 of a documentation site (not a mirror of v2)",
        "v2.docs.test" => "version 2 of a documentation site (not a mirror of v1)",
        _ => "404, 500, 429, 503, slow, oversized, non-HTML and windows-1252 pages",
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_rel;

    #[test]
    fn relative_references_resolve_like_a_browser() {
        assert_eq!(
            resolve_rel("/news/astronomy/10/", "../../cooking/11/index.html"),
            "/news/cooking/11/index.html"
        );
        assert_eq!(resolve_rel("/redirect/", "3"), "/redirect/3");
    }
}
