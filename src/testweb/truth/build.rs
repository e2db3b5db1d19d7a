//! Building the ground truth: every page of every host, in the order a
//! listing walks them, then the derived lists (duplicate groups, distinct
//! pairs, reachable URLs).

use std::collections::BTreeMap;

use super::*;
use crate::testweb::cases::{
    self, VersionPage, MANUAL_CHAPTERS, MANUAL_LANGS, REF_COPIES, REF_ITEMS, VERSION_HOSTS, VERSION_PAGES,
};
use crate::testweb::generate::{
    self, blog_slashless, news_alias_href, news_alias_link, news_in_topic, robots, robots_host_pages, topic_of,
    AliasForm, ERROR_PATHS, PER_LIST, PER_MODULE, TRAP_LINKS, VARIANT_KINDS,
};
use crate::testweb::{TestWeb, BIG_BODY_BYTES, HOSTS, TOPICS};

/// The `Content-Type` of the generated HTML pages.
const HTML: &str = "text/html; charset=utf-8";

/// The pages listed so far, with the port their URLs carry.
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
