//! The article-like pages: the www.news.test news section (also served
//! by the archive.test partial mirror), the wiki of mirror-a.test and
//! mirror-b.test, and the blog.test posts with their near-duplicate copies,
//! whose chrome (time, counter, ad, edited words) is what a copy changes.

use std::fmt::Write as _;

use super::rules::{
    blog_slashless, news_alias_href, news_alias_link, news_in_topic, news_related, topic_of, PER_LIST, VARIANT_KINDS,
};
use super::{html, not_found, page_start, parse_id, simple_page, stream, PAGE_END};
use crate::testweb::rng::Rng;
use crate::testweb::text::{self, Text};
use crate::testweb::words::{COMMON_WORDS, TOPICS, TOPIC_WORDS};
use crate::testweb::{Reply, TestWeb, VariantKind};

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
            COMMON_WORDS[rng.below(COMMON_WORDS.len())]
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
pub(super) fn article_text(seed: u64, space: u64, id: usize) -> Text {
    let min = if space == stream::POST { 550 } else { 300 };
    text::text(&mut Rng::for_stream(&[seed, space, id as u64]), topic_of(id), min, 800)
}

/// The title of article-like page `id` in `space`.
pub(super) fn article_title(seed: u64, space: u64, id: usize) -> String {
    text::title(
        &mut Rng::for_stream(&[seed, stream::TITLE, space, id as u64]),
        topic_of(id),
    )
}

/// The page's meta line: time and counter, each in its `tw:` region.
fn push_meta(s: &mut String, verb: &str, ch: &Chrome, unit: &str) {
    let _ = writeln!(
        s,
        "<div class=\"meta\">{verb} <!--tw:time-->{}<!--/tw:time--> | <!--tw:counter-->{} {unit}<!--/tw:counter--></div>",
        ch.time, ch.counter
    );
}

/// The main text (with the chrome's edited words) in its `tw:main` region.
fn push_main(s: &mut String, body: &Text, ch: &Chrome) {
    s.push_str("<!--tw:main--><div class=\"article-body\">\n");
    text::render_paragraphs(s, body, &ch.edits);
    s.push_str("</div><!--/tw:main-->\n");
}

/// The ad slot, its ad in the `tw:ad` region.
fn push_ad_slot(s: &mut String, seed: u64, ch: &Chrome) {
    s.push_str("<div class=\"ad-slot\"><!--tw:ad-->");
    push_ad(s, seed, ch.ad, ch.large_ad);
    s.push_str("<!--/tw:ad--></div>\n");
}

impl TestWeb {
    /// The news section; `rest` is the path after `/news` (served at
    /// www.news.test/news and archive.test/mirror/news; relative links only,
    /// so both copies are byte-identical).
    pub(super) fn news(&self, rest: &str, port: u16) -> Reply {
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
    pub(super) fn wiki(&self, path: &str, port: u16) -> Reply {
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

    pub(super) fn blog(&self, path: &str, port: u16) -> Reply {
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
}
