//! docs.test: generated API documentation, a heavy template (module table,
//! item sidebar, long footer) shared by every item page around a short
//! main text.

use std::fmt::Write as _;

use super::rules::PER_MODULE;
use super::{html, not_found, page_start, parse_id, simple_page, stream, PAGE_END};
use crate::testweb::rng::Rng;
use crate::testweb::text;
use crate::testweb::{Counts, Reply, TestWeb};

/// Verbs and nouns of generated API item names (docs.test).
const DOC_VERBS: &[&str] = &[
    "get", "set", "new", "parse", "read", "write", "open", "close", "insert", "remove", "find", "build", "load",
    "store", "encode", "decode",
];
const DOC_NOUNS: &[&str] = &[
    "buffer", "config", "handle", "index", "entry", "record", "stream", "frame", "token", "node", "table", "cursor",
    "header", "block", "chunk", "range",
];

/// Name of doc item `i`, e.g. `parse_buffer` or `parse_buffer_3`.
fn doc_item_name(i: usize) -> String {
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

impl TestWeb {
    /// The docs.test front page, module pages and item pages.
    pub(super) fn docs(&self, path: &str) -> Reply {
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

    /// Item page `i`: the shared template around its short description.
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
}
