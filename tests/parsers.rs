//! Property tests of the parsers that face the network: whatever a server
//! sends (URLs in links and `Location`, header values, robots.txt, HTML),
//! each returns a value or an error and never panics. A bounded number of
//! cases per property keeps `cargo test` fast.

use proptest::prelude::*;
use simcrawl::canon::{effective_base, Canonicalizer};
use simcrawl::config::CanonProfile;
use simcrawl::extract::{extract_html, extract_plain, parse_x_robots_tag, MetaRobots};
use simcrawl::fetch::{decode_text, parse_content_type, parse_retry_after, RedirectChain};
use simcrawl::politeness::robots::{policy_for_fetch, Robots};
use url::Url;

/// Strings near URL syntax: schemes, userinfo, ports, IPv6, escapes,
/// non-ASCII, control bytes.
fn urlish() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        "(https?:|//|[a-z]{1,5}:|)([a-z0-9:@.\\[\\]%_~+-]|%[0-9a-fA-F]{0,2}|ツ|\u{0}|\t|\\\\){0,24}(/[^#]{0,16})?(\\?[ -~]{0,12})?(#[ -~]{0,4})?",
    )
    .expect("valid regex")
}

/// Markup-like text: tags (closed or not, nested, with attributes),
/// entities, comments, script, and any characters.
fn htmlish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::string::string_regex("<(/?)(a|p|div|script|style|title|base|link|meta|html|table|td|li|svg|noscript|template|nav)( [a-z]{1,6}(=(\"[^\"]{0,10}\"|'[^']{0,6}'|[a-z/:.]{0,10}))?){0,3}(/?)>")
            .expect("valid regex"),
        proptest::string::string_regex("&[a-z#0-9]{0,6};?").expect("valid regex"),
        proptest::string::string_regex("<!--[^>]{0,8}(-->)?|<!\\[CDATA\\[[a-z]{0,4}|<![a-z]{0,8}>").expect("valid regex"),
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any link or seed: an error or a canonical URL without credentials that
    /// is its own canonical form.
    #[test]
    fn canon_any_input_is_ok_or_error(input in urlish(), base in urlish()) {
        let base = Url::parse(&base).unwrap_or_else(|_| Url::parse("http://h.test/x/y?q").expect("valid"));
        for prof in [CanonProfile::Rfc3986, CanonProfile::Crawler] {
            let c = Canonicalizer::with_profile(prof);
            for u in [c.parse(&input), c.resolve(&base, &input)].into_iter().flatten() {
                prop_assert!(u.username().is_empty() && u.password().is_none(), "{}", u);
                prop_assert_eq!(&c.canonicalize(&u), &u);
            }
        }
        let page = Url::parse("http://h.test/p").expect("valid");
        let _ = effective_base(&page, Some(&input));
    }

    /// Any `Location` value against any hop: a next URL or an error.
    #[test]
    fn location_any_value_is_ok_or_error(location in urlish(), extra in any::<String>()) {
        let mut chain = RedirectChain::new(Url::parse("http://h.test/a?b").expect("valid"), 3);
        let _ = chain.resolve(Some(&location));
        let _ = chain.resolve(Some(&extra));
        let _ = chain.resolve(None);
        for _ in 0..5 {
            if chain.next_hop(Some(&location)).is_err() {
                break;
            }
        }
    }

    /// Any Retry-After, Content-Type or X-Robots-Tag value.
    #[test]
    fn header_values_any_text_is_ok_or_none(
        value in any::<String>(),
        near in proptest::string::string_regex("[ \t]*(-?[0-9]{0,22}|[A-Z][a-z]{2}, [0-9]{1,2} [A-Z][a-z]{2} [0-9]{1,5} [0-9:]{0,8} GMT|text/html;[ a-z=\"-]{0,20})").expect("valid regex"),
    ) {
        let now = std::time::SystemTime::now();
        for v in [&value, &near] {
            let _ = parse_retry_after(v, now);
            let _ = parse_retry_after(v, std::time::UNIX_EPOCH);
            let (media, charset) = parse_content_type(v);
            if let Some(m) = media {
                prop_assert_eq!(m.to_ascii_lowercase(), m);
            }
            let _ = charset;
            let _: MetaRobots = parse_x_robots_tag(v);
        }
    }

    /// Any body with any declared charset decodes to text.
    #[test]
    fn decode_any_bytes(body in proptest::collection::vec(any::<u8>(), 0..600), charset in "[a-zA-Z0-9_-]{0,12}") {
        let _ = decode_text(&body, Some(&charset));
        let _ = decode_text(&body, None);
    }

    /// Any robots.txt body and status: rules (or a policy) and a verdict.
    #[test]
    fn robots_any_body_and_status(body in proptest::collection::vec(any::<u8>(), 0..1500), status in proptest::option::of(0u16..1000), hops in 0u32..10, path in urlish()) {
        let r = Robots::parse(&body, 1000);
        let rules = r.for_agent("simcrawl");
        if let Ok(u) = Url::parse("http://h.test/").and_then(|b| b.join(&path)) {
            let _ = rules.is_allowed(&u);
        }
        let _ = policy_for_fetch(status, hops).robots();
    }

    /// Any markup: extraction returns blocks and links within its limits.
    #[test]
    fn extract_any_markup(html in htmlish(), text in any::<String>()) {
        let e = extract_html(&html, 4096);
        prop_assert!(e.links.len() <= html.len());
        let _ = extract_html(&text, 64);
        let _ = extract_plain(&text, 64);
    }
}
