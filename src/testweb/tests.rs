//! Unit tests of the generator and truth (no server).

use std::collections::HashSet;

use super::*;

fn web(seed: u64, pages: usize) -> TestWeb {
    TestWeb::new(TestWebOptions {
        seed,
        pages,
        slow_ms: 10,
    })
}

#[test]
fn same_seed_same_bytes_different_seed_different_bytes() {
    let a = web(7, 300);
    let b = web(7, 300);
    let c = web(8, 300);
    let truth = a.truth(1234);
    assert_eq!(truth, b.truth(1234));
    let mut differing = 0;
    for p in truth.pages.iter().filter(|p| p.kind == PageKind::Article) {
        let ra = a.respond(&p.host, &p.path, 1234);
        assert_eq!(ra, b.respond(&p.host, &p.path, 1234), "{}", p.url);
        if ra.body != c.respond(&p.host, &p.path, 1234).body {
            differing += 1;
        }
    }
    assert!(differing > 100, "only {differing} articles differ between seeds");
}

#[test]
fn every_truth_page_answers_its_status() {
    let w = web(1, 300);
    let t = w.truth(8080);
    assert!(t.pages.len() > 400, "{} pages", t.pages.len());
    for p in &t.pages {
        let r = w.respond(&p.host, &p.path, 8080);
        let expected = if p.path == "/busy-once" { 200 } else { p.status };
        assert_eq!(r.status, expected, "{}", p.url);
        assert_eq!(r.content_type.map(str::to_string), p.content_type, "{}", p.url);
    }
}

#[test]
fn truth_is_consistent() {
    let t = web(3, 300).truth(80);
    let urls: HashSet<&str> = t.pages.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls.len(), t.pages.len(), "duplicate URLs in the truth");
    for p in &t.pages {
        for r in [&p.canonical_of, &p.exact_dup_of, &p.near_dup_of].into_iter().flatten() {
            assert!(urls.contains(r.as_str()), "{} refers to unknown {r}", p.url);
        }
    }
    for u in t.reachable.iter().chain(&t.disallowed).chain(&t.seeds) {
        assert!(urls.contains(u.as_str()), "{u}");
    }
    let kinds: HashSet<VariantKind> = t.near_duplicate_pairs.iter().map(|p| p.kind).collect();
    assert_eq!(kinds.len(), 8, "every variant kind occurs: {kinds:?}");
    assert!(t.exact_duplicate_groups.iter().all(|g| g.len() >= 2));
    assert_eq!(t.mirrors.len(), 2);
    assert_eq!(t.not_mirrors.len(), 1);
    assert!(t.distinct_pairs.len() >= 100);
    assert_eq!(t.crawl_delays.get("robots-delay.test"), Some(&1));
}

/// Every URL linked from a reachable HTML page is in the truth (or is a calendar trap URL),
/// and every reachable page is linked from some page or is a seed.
#[test]
fn truth_lists_exactly_the_linked_urls() {
    let w = web(5, 120);
    let port = 9000;
    let t = w.truth(port);
    let urls: HashSet<&str> = t.pages.iter().map(|p| p.url.as_str()).collect();
    let mut linked: HashSet<String> = t.seeds.iter().cloned().collect();
    for p in t
        .pages
        .iter()
        .filter(|p| p.status == 200 && p.content_type.as_deref() == Some("text/html; charset=utf-8"))
    {
        if p.kind == PageKind::Large {
            continue;
        }
        let r = w.respond(&p.host, &p.path, port);
        let body = String::from_utf8(r.body.to_vec()).expect("utf-8");
        let base = url::Url::parse(&p.url).expect("url");
        for href in body.split("href=\"").skip(1).filter_map(|s| s.split('"').next()) {
            let abs = base.join(&href.replace("&amp;", "&")).expect("link");
            let s = abs.to_string();
            // url::Url lower-cases hosts; the truth keeps the upper-case alias as linked.
            let as_linked = if href.starts_with("http://WWW.") {
                href.to_string()
            } else {
                s.clone()
            };
            if s.contains("/calendar/") {
                continue;
            }
            assert!(
                urls.contains(as_linked.as_str()),
                "{} links {href} = {as_linked}, not in the truth",
                p.url
            );
            linked.insert(as_linked);
        }
    }
    for p in &t.pages {
        let by_redirect = t.pages.iter().any(|q| q.redirect_to.as_deref() == Some(&p.url));
        if p.kind != PageKind::Robots && p.kind != PageKind::Trap && !by_redirect {
            assert!(linked.contains(&p.url), "{} is not linked from anywhere", p.url);
        }
    }
}

#[test]
fn mirrors_and_aliases_are_byte_identical() {
    let w = web(2, 200);
    let t = w.truth(7000);
    let mut checked = 0;
    for g in &t.exact_duplicate_groups {
        let first = t.page(&g[0]).expect("listed");
        let body = w.respond(&first.host, &first.path, 7000).body;
        for u in &g[1..] {
            let p = t.page(u).expect("listed");
            assert_eq!(
                w.respond(&p.host, &p.path, 7000).body,
                body,
                "{u} differs from {}",
                g[0]
            );
            checked += 1;
        }
    }
    assert!(checked > 150, "{checked}");
}

#[test]
fn robots_bodies_match_truth() {
    let w = web(1, 50);
    let t = w.truth(1);
    for r in &t.robots {
        let reply = w.respond(&r.host, "/robots.txt", 1);
        assert_eq!(reply.status, r.status, "{}", r.host);
        if let Some(body) = &r.body {
            assert_eq!(reply.body.as_ref(), body.as_bytes());
        }
    }
}

#[test]
fn legacy_page_is_windows_1252() {
    let w = web(1, 50);
    let r = w.respond("errors.test", "/legacy", 1);
    assert!(
        std::str::from_utf8(&r.body).is_err(),
        "the body must not be valid UTF-8"
    );
    let (text, _, had_errors) = encoding_rs::WINDOWS_1252.decode(&r.body);
    assert!(!had_errors);
    assert!(text.contains(generate::LEGACY_TEXT));
    assert!(text.contains("charset=windows-1252"));
}

#[test]
fn big_body_is_exactly_two_mib() {
    let w = web(1, 50);
    assert_eq!(w.respond("errors.test", "/big", 1).body.len(), BIG_BODY_BYTES);
}

#[test]
fn host_matching_ignores_case_and_port() {
    let w = web(1, 50);
    let a = w.respond("www.news.test", "/news/", 5);
    assert_eq!(a.status, 200);
    assert_eq!(w.respond("WWW.News.Test:5", "/news/", 5), a);
    assert_eq!(w.respond("www.news.test", "/news/index.html", 5), a);
    assert_eq!(w.respond("nowhere.test", "/", 5).status, 404);
    assert_eq!(w.respond("www.news.test", "/news/astronomy/99999/", 5).status, 404);
    assert_eq!(
        w.respond("www.news.test", "/news/cooking/0/", 5).status,
        404,
        "article 0 is astronomy"
    );
}

#[test]
fn calendar_is_infinite_and_bounded_to_valid_months() {
    let w = web(1, 50);
    assert_eq!(w.respond("traps.test", "/calendar/3000/07/", 1).status, 200);
    assert_eq!(w.respond("traps.test", "/calendar/3000/13/", 1).status, 404);
    assert_eq!(w.respond("traps.test", "/calendar/3000/7/", 1).status, 404);
}

#[test]
fn large_sizes_have_cheap_truth() {
    let w = web(1, 100_000);
    let t = w.truth(1);
    assert!(t.pages.len() > 100_000);
    let last = t
        .pages
        .iter()
        .rev()
        .find(|p| p.kind == PageKind::Article)
        .expect("articles");
    assert_eq!(w.respond(&last.host, &last.path, 1).status, 200);
}

/// Lower-case words with a letter of the `tw:main` region of a page (tags
/// and comments dropped): the content the truth of the regression cases is
/// about, read independently of the crawler's extraction.
fn main_words(w: &TestWeb, p: &PageTruth) -> Vec<String> {
    let body = w.respond(&p.host, &p.path, 80).body;
    let page = std::str::from_utf8(&body).expect("utf-8");
    let a = page
        .find("<!--tw:main-->")
        .unwrap_or_else(|| panic!("{}: no main", p.url));
    let b = page[a..].find("<!--/tw:main-->").expect("closed") + a;
    let mut text = String::new();
    let mut in_tag = false;
    for c in page[a..b].chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
        .filter(|t| t.chars().any(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect()
}

/// Exact resemblance of the word 5-shingle sets of two word lists.
fn shingle_resemblance(a: &[String], b: &[String]) -> f64 {
    let set = |w: &[String]| -> HashSet<Vec<String>> { w.windows(5).map(<[String]>::to_vec).collect() };
    let (sa, sb) = (set(a), set(b));
    let inter = sa.intersection(&sb).count();
    let union = sa.len() + sb.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// The regression cases' truth holds by construction: near-duplicate pairs
/// of ref.test, manual.test and the docs versions have a main-text shingle
/// resemblance of at least 0.85, their distinct pairs at most 0.7 (the
/// ref.test ones share most words: above 0.2), and ref.test pages are 20 to
/// 60 words of main text.
#[test]
fn regression_cases_truth_holds_by_construction() {
    let w = web(1, 300);
    let t = w.truth(80);
    let case =
        |u: &str| ["ref.test", "manual.test", "docs.test:"].iter().any(|h| u.contains(h)) && !u.contains("//docs.test");
    let mut near = 0;
    for pair in t.near_duplicate_pairs.iter().filter(|p| case(&p.a)) {
        let (a, b) = (t.page(&pair.a).expect("a"), t.page(&pair.b).expect("b"));
        let r = shingle_resemblance(&main_words(&w, a), &main_words(&w, b));
        assert!(r >= 0.85, "{} ~ {}: resemblance {r:.3}", pair.a, pair.b);
        if pair.kind == VariantKind::Untranslated {
            assert_eq!(r, 1.0, "{}: untranslated main text", pair.b);
        }
        near += 1;
    }
    assert_eq!(
        near,
        4 + 8 + 11,
        "ref.test copies, untranslated chapters, same pages of two versions"
    );
    let mut by_kind: std::collections::HashMap<DistinctKind, usize> = std::collections::HashMap::new();
    for pair in t.distinct_pairs.iter().filter(|p| case(&p.a)) {
        let (a, b) = (t.page(&pair.a).expect("a"), t.page(&pair.b).expect("b"));
        let (wa, wb) = (main_words(&w, a), main_words(&w, b));
        let r = shingle_resemblance(&wa, &wb);
        assert!(r <= 0.7, "{} vs {}: resemblance {r:.3}", pair.a, pair.b);
        if pair.kind == DistinctKind::FewWords {
            assert!((20..=60).contains(&wa.len()), "{}: {} words", pair.a, wa.len());
        }
        *by_kind.entry(pair.kind).or_default() += 1;
    }
    assert_eq!(by_kind.get(&DistinctKind::FewWords), Some(&66));
    assert_eq!(by_kind.get(&DistinctKind::Translated), Some(&7));
    assert_eq!(by_kind.get(&DistinctKind::Rewritten), Some(&3));
    // Same-class ref.test pairs share most of their words.
    let shared = t
        .distinct_pairs
        .iter()
        .filter(|p| p.kind == DistinctKind::FewWords)
        .filter(|p| {
            let (a, b) = (t.page(&p.a).expect("a"), t.page(&p.b).expect("b"));
            shingle_resemblance(&main_words(&w, a), &main_words(&w, b)) > 0.2
        })
        .count();
    assert!(
        shared >= 20,
        "{shared} ref.test pairs share more than a fifth of their shingles"
    );
}

/// Simhash alone confuses ref.test pages: several distinct pairs are within
/// k = 3 of each other (fingerprints of the whole page, no template
/// learning), so only the shingle confirmation keeps them apart.
#[test]
fn ref_test_pages_collide_under_simhash_alone() {
    let w = web(1, 300);
    let t = w.truth(80);
    let settings = crate::config::Settings::test_web(&[]).expect("settings");
    let fx = crate::Fingerprinter::new(&settings);
    let fp = |u: &str| {
        let p = t.page(u).expect("listed");
        let body = w.respond(&p.host, &p.path, 80).body;
        fx.html(std::str::from_utf8(&body).expect("utf-8"))
    };
    let close = t
        .distinct_pairs
        .iter()
        .filter(|p| p.kind == DistinctKind::FewWords)
        .filter(|p| (fp(&p.a) ^ fp(&p.b)).count_ones() <= 3)
        .count();
    assert!(close >= 5, "only {close} distinct ref.test pairs within k = 3");
}
