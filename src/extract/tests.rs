//! Tests of extraction as a whole: fields and blocks of a page, link
//! contexts, the text cap and hostile input, and the streaming pass against
//! the tree walk.

use super::walker::context_window;
use super::*;

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en-US"><head>
<title>  The  Page </title>
<base href="https://ex.test/base/">
<link rel="canonical" href="https://ex.test/page">
<meta name="ROBOTS" content="NoIndex">
<style>p { color: red }</style><script>var x = "<p>hidden</p>";</script>
</head><body>
<nav><a href="/home">Home</a> | <a href="/about" rel="nofollow noopener">About us</a></nav>
<h1>Main   heading</h1>
<p>First <b>para</b>graph text.<br>After break</p>
<div hidden>secret</div><span style="display: none">also secret</span>
<noscript>enable js</noscript><template><p>tpl</p></template>
<p>Link to <a href="x.html"><img alt="an image"> text</a>.</p>
<footer>Copyright 2024</footer>
<div class="ad-slot">Sponsored: buy now</div><div id="main-sidebar">Related</div><div class="shadow padded">Kept</div>
</body></html>"#;

#[test]
fn extracts_fields_and_blocks() {
    let e = extract_html(PAGE, 1 << 20);
    assert_eq!(e.title.as_deref(), Some("The Page"));
    assert_eq!(e.lang.as_deref(), Some("en-US"));
    assert_eq!(e.base_href.as_deref(), Some("https://ex.test/base/"));
    assert_eq!(e.canonical.as_deref(), Some("https://ex.test/page"));
    assert!(e.meta_robots.noindex && !e.meta_robots.nofollow);
    assert!(!e.truncated);
    let blocks: Vec<(&str, BlockKind)> = e.blocks.iter().map(|b| (b.text.as_str(), b.kind)).collect();
    assert_eq!(
        blocks,
        vec![
            ("The Page", BlockKind::Title),
            ("Home | About us", BlockKind::Boilerplate),
            ("Main heading", BlockKind::Heading),
            ("First paragraph text.", BlockKind::Body),
            ("After break", BlockKind::Body),
            ("Link to text.", BlockKind::Body),
            ("Copyright 2024", BlockKind::Boilerplate),
            ("Sponsored: buy now", BlockKind::Boilerplate),
            ("Related", BlockKind::Boilerplate),
            ("Kept", BlockKind::Body),
        ]
    );
    let links: Vec<(&str, &str, bool)> = e
        .links
        .iter()
        .map(|l| (l.href.as_str(), l.anchor.as_str(), l.nofollow))
        .collect();
    assert_eq!(
        links,
        vec![
            ("/home", "Home", false),
            ("/about", "About us", true),
            ("x.html", "an image text", false)
        ]
    );
}

#[test]
fn link_context_is_the_block_text_around_the_anchor() {
    let long = "word ".repeat(40);
    let html = format!(
        "<p>The <a href=/t>telescope</a> saw a comet.</p><ul><li><a href=/x>Only anchor</a></li></ul>\
         <p>{long}<a href=/y>déjà vu</a> über {long}</p><p><a href=/z>open <b>bold</b></p>\
         <nav>Home <a href=/n>News</a> Sport</nav>"
    );
    let e = extract_html(&html, 1 << 20);
    let ctx: Vec<&str> = e.links.iter().map(|l| l.context.as_str()).collect();
    assert_eq!(ctx[0], "The saw a comet.");
    assert_eq!(ctx[1], "");
    // Whole words only, at most CONTEXT_BYTES on each side.
    let words: Vec<&str> = ctx[2].split(' ').collect();
    assert!(words.iter().all(|w| *w == "word" || *w == "über"), "{:?}", ctx[2]);
    assert!(ctx[2].len() <= 2 * CONTEXT_BYTES + 1 && ctx[2].contains("word über word"));
    assert_eq!(e.links[3].anchor, "open bold");
    assert_eq!(ctx[3], "");
    let nav = e.links.iter().find(|l| l.href == "/n").unwrap();
    assert_eq!(
        (nav.anchor.as_str(), nav.context.as_str()),
        ("News", ""),
        "no context in navigation"
    );
    assert_eq!(context_window("ab", 5, 9), "ab", "out-of-range offsets do not panic");
}

#[test]
fn caps_text_and_survives_hostile_input() {
    let big = format!("<p>{}</p><a href=/late>late</a>", "word ".repeat(100_000));
    let e = extract_html(&big, 1024);
    assert!(e.truncated);
    let total: usize = e.blocks.iter().map(|b| b.text.len()).sum();
    assert!(total <= 1024, "{total}");
    assert_eq!(e.links.len(), 1, "links past the text cap are still collected");

    let deep = "<div>".repeat(100_000) + "deep text" + &"</div>".repeat(100_000);
    let start = std::time::Instant::now();
    let e = extract_html(&deep, 1 << 20);
    assert!(e.truncated);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let ok = "<div>".repeat(500) + "deep text" + &"</div>".repeat(500);
    let e = extract_html(&ok, 1 << 20);
    assert!(!e.truncated && e.blocks.iter().any(|b| b.text == "deep text"));
    // At the limit and one past it (the `<` count shortcut and the scan agree).
    let at = "<div>".repeat(MAX_NESTING) + "x";
    assert_eq!(limit_nesting(&at), at);
    let past = "<div>".repeat(MAX_NESTING + 1) + "x";
    assert!(limit_nesting(&past).len() < past.len());
    // Many tags, few of them open at once (the `</` count shortcut), and a
    // deep run after many closed tags (still cut).
    let flat = "<b>x</b>".repeat(3000);
    assert_eq!(limit_nesting(&flat), flat);
    let deep_after = "<b>x</b>".repeat(3000) + &"<div>".repeat(MAX_NESTING + 1) + "x";
    assert!(limit_nesting(&deep_after).len() < deep_after.len());
    let scripted = format!("<div><script>{}</script>x</div>", "if (a<b) {}".repeat(5000));
    assert_eq!(limit_nesting(&scripted).len(), scripted.len());
    // Names in any case; elements with implied end tags add no level,
    // names longer than any of those do; a raw-text element's `<` are text.
    let n = MAX_NESTING + 1;
    let closed_in_caps = "<Div>x</DIV>".repeat(3000) + &"<P><LI><TD><OptGroup>".repeat(n) + "x";
    assert_eq!(limit_nesting(&closed_in_caps), closed_in_caps);
    let long_names = "<blockquote>".repeat(n / 2) + &"<Figcaption>".repeat(n / 2 + 1) + "x";
    assert!(limit_nesting(&long_names).len() < long_names.len());
    let raw_caps = format!("<TEXTAREA>{}</textArea>x", "<div>".repeat(n)) + &"<em>x</em>".repeat(3000);
    assert_eq!(limit_nesting(&raw_caps), raw_caps);

    for junk in [
        "",
        "<",
        "<<<>>>",
        "</p></div>",
        "<a href=",
        "\u{0}\u{feff}<p>x",
        "<title>t",
        "é<p>ü",
    ] {
        let _ = extract_html(junk, 16);
    }
    let multibyte = "ü".repeat(2000);
    let e = extract_html(&format!("<p>{multibyte}</p>"), 1001);
    assert!(e.truncated && e.blocks[0].text.len() <= 1001);
}

/// Inputs on which the streaming pass must agree with the tree walk.
pub(super) const TRICKY: &[&str] = &[
    "<p>unclosed <b>bold <i>italic<p>next para<div>div text",
    "<a href=/x title=unquoted>one</a><a href='/y' rel=nofollow>two</a>",
    "<a href=\"/q?a=1&amp;b=2&lt;\">Tom &amp; Jerry&nbsp;&copy; &#169; &#x41;&notanentity;</a>",
    "<p>before<!-- <p>comment</p> -->after</p><!-- unterminated",
    "<p>x<![CDATA[ cdata ]]>y</p><svg><![CDATA[z]]></svg>",
    "<div><script>document.write('</div><p>no</p>');</script>visible</div>",
    "<HTML LANG=DE><HEAD><TITLE>Upper</TITLE></HEAD><BODY><P>Para<A HREF=/u>Link</A></BODY></HTML>",
    "<p><a href=/1>first <a href=/2>second</a> tail</p>",
    "<ul><li>one<li>two<li>three</ul><dl><dt>term<dd>def<dt>t2</dl>",
    "<table><tr><td>a<td>b<tr><td>c</table>after",
    "<title>T &amp; T</title><h1>H1<h2>H2</h2>x</h1>",
    "<nav><ul><li><a href=/n1>N1</a><li><a href=/n2>N2</a></ul></nav><p>body</p>",
    "<div class=sidebar><p>side<div>inner</div></div><p>main",
    "<textarea><p>not a tag</p></textarea><p>after</p>",
    "<noscript><a href=/ns>ns</a></noscript><p>x</p>",
    "<svg/><p>after self-closing svg</p><math><mi>x</mi></math><p>y</p>",
    "<select><option>a<option>b</select><p>z</p>",
    "</p>stray end<br></br>x</div></span>",
    "<head><meta name=robots content=nofollow><link rel=canonical href=/c><base href=/b/></head>text",
    "<p>a<p hidden>b</p><p style='display : NONE'>c<p aria-hidden=true>d<p>e",
    "<title>One</title><title>Two</title><p>x",
    "<a href=/img><img alt='Alt text'> and text</a>",
    "<pre>  keep\n\n  lines </pre><p>\u{a0}nbsp\u{2003}em space</p>",
    "<p>déjà vu ünïcödé</p>",
];

#[test]
fn streaming_pass_agrees_with_the_tree_on_tricky_input() {
    for html in TRICKY.iter().copied().chain([PAGE]) {
        assert_eq!(extract_html(html, 1 << 20), extract_html_tree(html, 1 << 20), "{html}");
        assert_eq!(extract_html(html, 20), extract_html_tree(html, 20), "{html}");
    }
    let e = extract_html(TRICKY[2], 1 << 20);
    assert_eq!(e.links[0].href, "/q?a=1&b=2<");
    // `&not` is a legacy entity (no `;` needed); NBSP collapses like a space.
    assert_eq!(e.links[0].anchor, "Tom & Jerry © © A¬anentity;");
    let e = extract_html(TRICKY[5], 1 << 20);
    let t: Vec<&str> = e.blocks.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(t, vec!["visible"]);
    let e = extract_html(TRICKY[7], 1 << 20);
    let a: Vec<(&str, &str)> = e.links.iter().map(|l| (l.href.as_str(), l.anchor.as_str())).collect();
    assert_eq!(a, vec![("/1", "first"), ("/2", "second")]);
}

#[test]
fn streaming_pass_agrees_with_the_tree_on_the_test_web() {
    use crate::testweb::{TestWeb, TestWebOptions};
    let web = TestWeb::new(TestWebOptions {
        pages: 150,
        ..Default::default()
    });
    let truth = web.truth(80);
    let (mut n, mut with_text) = (0, 0);
    for p in truth.pages.iter().filter(|p| p.status == 200) {
        let target = p.url.splitn(4, '/').nth(3).map_or("/".to_string(), |t| format!("/{t}"));
        let body = web.respond(&p.host, &target, 80).body.to_vec();
        let html = String::from_utf8_lossy(&body);
        if !looks_like_html(html.as_bytes()) {
            continue;
        }
        n += 1;
        assert_eq!(
            stream::extract(&html, ExtractOptions::new(1 << 20)),
            stream::extract_html5ever(&html, ExtractOptions::new(1 << 20)),
            "{}",
            p.url
        );
        let full = extract_html(&html, 1 << 20);
        assert_eq!(full, extract_html_tree(&html, 1 << 20), "{}", p.url);
        // Without link text: the same page but every anchor and context
        // empty.
        let bare = extract_html_with(&html, ExtractOptions::new(1 << 20).without_link_text());
        let mut expected = full.clone();
        for l in &mut expected.links {
            with_text += usize::from(!l.anchor.is_empty() || !l.context.is_empty());
            l.anchor.clear();
            l.context.clear();
        }
        assert_eq!(bare, expected, "{}", p.url);
    }
    assert!(n > 100, "{n} pages");
    assert!(with_text > 1_000, "{with_text} links with anchor text or context");
}

#[test]
fn plain_text_paragraphs() {
    let e = extract_plain("Hello   world\r\nline two\r\n \r\n\n  Second para  ", 1 << 20);
    let t: Vec<&str> = e.blocks.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(t, vec!["Hello world line two", "Second para"]);
    let e = extract_plain(&"ab ".repeat(1000), 100);
    assert!(e.truncated && e.blocks[0].text.len() <= 100);
    assert!(looks_like_html(b"  <!doctype html>"));
    assert!(!looks_like_html(b"plain <b>text"));
}

/// Interface furniture is boilerplate; a page's own heading is a heading
/// even inside `<header>` or around a permalink to itself.
#[test]
fn headings_and_interface_furniture() {
    let html = r##"<html><body>
<div class="mdbook-help-popup"><h2>Keyboard shortcuts</h2><p>Press S to search</p></div>
<dialog><p>Settings</p></dialog>
<header class="page"><h1>GtkWidget:visible</h1><p>Library version 4.8</p></header>
<header><h1><a href="/">Site name</a></h1></header>
<nav><h2>Contents</h2></nav>
<h2><a href="#usage">Usage</a></h2>
<h2><a href="other.html">Other page</a></h2>
<h4 class="code-header">fn <a href="#method.next">next</a>(&amp;mut self) -&gt; <a href="option.html">Option</a>&lt;<a href="item.html">Item</a>&gt;</h4>
<ul><li><a href="a.html">First entry</a></li></ul>
<p>Text <button>Copy item path</button> more text.</p>
<div role="toolbar">Bold Italic</div>
</body></html>"##;
    let e = extract_html(html, 1 << 20);
    let blocks: Vec<(&str, BlockKind)> = e.blocks.iter().map(|b| (b.text.as_str(), b.kind)).collect();
    assert_eq!(
        blocks,
        vec![
            ("Keyboard shortcuts", BlockKind::Boilerplate),
            ("Press S to search", BlockKind::Boilerplate),
            ("Settings", BlockKind::Boilerplate),
            ("GtkWidget:visible", BlockKind::Heading),
            ("Library version 4.8", BlockKind::Boilerplate),
            // A heading whose words link is a heading (a linked title, an
            // API signature); a list entry of links is a link list.
            ("Site name", BlockKind::Heading),
            ("Contents", BlockKind::Boilerplate),
            ("Usage", BlockKind::Heading),
            ("Other page", BlockKind::Heading),
            ("fn next(&mut self) -> Option<Item>", BlockKind::Heading),
            ("First entry", BlockKind::Links),
            ("Text", BlockKind::Body),
            ("Copy item path", BlockKind::Boilerplate),
            ("more text.", BlockKind::Body),
            ("Bold Italic", BlockKind::Boilerplate),
        ]
    );
    // The streaming pass agrees.
    assert_eq!(extract_html_tree(html, 1 << 20), e);
}

#[test]
fn a_name_only_link_takes_the_description_beside_it() {
    let html = "<table>\
        <tr><td><p><a href=/tz>Series.tz_convert</a>(tz[, axis])</p></td><td><p>Convert to target time zone.</p></td></tr>\
        <tr><td>A row whose link <a href=/long>sits</a> in a sentence of many words already</td><td><p>Other cell.</p></td></tr>\
        <tr><td><a href=/a>first</a></td><td><a href=/b>second</a></td></tr>\
        </table>\
        <dl><dt><a href=/re>re</a></dt><dt><a href=/regex>regex</a></dt><dd><p>Regular expression operations.</p><p>More.</p></dd>\
        <dt><a href=/glob>glob</a></dt><dd><ul><li><a href=/x>x</a></li></ul></dd></dl>\
        <ul><li><a href=/only>Only anchor</a></li></ul><p>A paragraph after the list.</p>";
    let e = extract_html(html, 1 << 20);
    let ctx = |href: &str| e.links.iter().find(|l| l.href == href).unwrap().context.clone();
    assert_eq!(ctx("/tz"), "(tz[, axis]) Convert to target time zone.");
    assert_eq!(
        ctx("/long"),
        "A row whose link in a sentence of many words already",
        "context enough"
    );
    assert_eq!(
        (ctx("/a"), ctx("/b")),
        (String::new(), String::new()),
        "cells of links describe nothing"
    );
    assert_eq!(ctx("/re"), "Regular expression operations.");
    assert_eq!(ctx("/regex"), "Regular expression operations.");
    assert_eq!(ctx("/glob"), "", "a list of links is no description");
    assert_eq!(ctx("/only"), "", "a list item is no term");
}
