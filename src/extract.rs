//! Extraction (pipeline: after fetch and decoding, before [`crate::features`]):
//! an HTML (or plain-text) document, already decoded to UTF-8, becomes an
//! [`Extracted`]: title, visible text as blocks in document order (each
//! tagged title / heading / body / structural boilerplate), links with anchor
//! text and `rel=nofollow`, `<base href>`, `<link rel=canonical>`,
//! `<meta name=robots>` and `<html lang>`.
//!
//! The parser is html5ever (through `scraper`), which accepts any input and
//! builds a tree without recursion; the walk over the tree is iterative too,
//! so malformed or deeply nested markup cannot overflow the stack. Visible
//! text is capped at `max_text_bytes` (the rest is dropped and
//! [`Extracted::truncated`] is set); links are still collected past the cap.

use ego_tree::iter::Edge;
use scraper::{Html, Node};

/// What a document yields for the later stages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// The `<title>` text, whitespace collapsed (None when absent or empty).
    pub title: Option<String>,
    /// Visible text in document order, one block per block-level element;
    /// the title (if any) is the first block, with kind [`BlockKind::Title`].
    pub blocks: Vec<TextBlock>,
    /// `<a href>` and `<area href>` links in document order (hrefs as written,
    /// not resolved: resolve against [`Extracted::base_href`] or the page URL).
    pub links: Vec<Link>,
    /// `<base href>` (the first one), as written.
    pub base_href: Option<String>,
    /// `<link rel=canonical href>` (the first one), as written.
    pub canonical: Option<String>,
    /// `<meta name=robots>` directives (merge the X-Robots-Tag header in with
    /// [`MetaRobots::merge`] and [`parse_x_robots_tag`]).
    pub meta_robots: MetaRobots,
    /// `<html lang>`, as written (e.g. `en-US`).
    pub lang: Option<String>,
    /// Visible text went beyond `max_text_bytes` and was cut.
    pub truncated: bool,
}

/// One run of visible text between block boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextBlock {
    /// The text, whitespace collapsed to single spaces and trimmed (never empty).
    pub text: String,
    /// Where the text sits in the page structure.
    pub kind: BlockKind,
}

/// Where a [`TextBlock`] sits in the page, which decides its weight in
/// [`crate::features`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// The `<title>`.
    Title,
    /// `<h1>`..`<h6>` outside structural boilerplate.
    Heading,
    /// Ordinary visible text.
    Body,
    /// Text inside `nav`, `header`, `footer`, `aside` (or the ARIA roles
    /// navigation, banner, contentinfo, complementary, or an ad or
    /// navigation class name).
    Boilerplate,
    /// Outside structural boilerplate, a block whose text is at least half
    /// link text: an entry of a table of contents, a menu, prev/next links
    /// — or of an index page's lists. Weighed like body text; content for a
    /// sketch only on a page that is mostly links.
    Links,
}

/// One out-link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The `href` attribute as written (trimmed).
    pub href: String,
    /// The anchor text (or `alt` of images inside), whitespace collapsed.
    pub anchor: String,
    /// `rel` contains `nofollow` (or `sponsored` / `ugc`, which imply it).
    pub nofollow: bool,
    /// Text of the enclosing block around the anchor (up to
    /// [`CONTEXT_BYTES`] before and after it, whole words, the anchor text
    /// itself left out): what a focused crawl reads besides the anchor.
    /// Empty for links in structural boilerplate (navigation, footers),
    /// whose neighbours are other links, not a description.
    pub context: String,
}

/// Bytes of block text kept on each side of a link's anchor in [`Link::context`].
pub const CONTEXT_BYTES: usize = 48;

/// Robots directives from `<meta name=robots>` and `X-Robots-Tag`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaRobots {
    /// `noindex` (or `none`): do not fingerprint or index the page.
    pub noindex: bool,
    /// `nofollow` (or `none`): do not follow the page's links.
    pub nofollow: bool,
}

impl MetaRobots {
    /// Both sets of directives together (the most restrictive wins).
    pub fn merge(self, other: MetaRobots) -> MetaRobots {
        MetaRobots {
            noindex: self.noindex || other.noindex,
            nofollow: self.nofollow || other.nofollow,
        }
    }

    fn apply_directive(&mut self, directive: &str) {
        let d = directive.trim();
        if d.eq_ignore_ascii_case("noindex") {
            self.noindex = true;
        } else if d.eq_ignore_ascii_case("nofollow") {
            self.nofollow = true;
        } else if d.eq_ignore_ascii_case("none") {
            self.noindex = true;
            self.nofollow = true;
        }
    }
}

/// Parses a `<meta name=robots content=...>` value: comma-separated
/// directives, case-insensitive; unknown ones are ignored.
pub fn parse_meta_robots(content: &str) -> MetaRobots {
    let mut r = MetaRobots::default();
    for d in content.split(',') {
        r.apply_directive(d);
    }
    r
}

/// Parses one `X-Robots-Tag` header value (merge several headers, and the
/// page's meta robots, with [`MetaRobots::merge`]).
///
/// Directives without a user-agent prefix apply; a value prefixed by a user
/// agent (`googlebot: noindex`) applies only to that agent and is ignored
/// here, except for the prefix `simcrawl`. Use [`parse_x_robots_tag_for`]
/// with a configured product token.
pub fn parse_x_robots_tag(value: &str) -> MetaRobots {
    parse_x_robots_tag_for(value, "simcrawl")
}

/// [`parse_x_robots_tag`] for the product token `agent` (case-insensitive).
pub fn parse_x_robots_tag_for(value: &str, agent: &str) -> MetaRobots {
    let mut r = MetaRobots::default();
    // A user-agent prefix ("ua: d1, d2") applies to the directives after it.
    // `unavailable_after: DATE` also has a colon: it is not an agent.
    let (applies, rest) = match value.split_once(':') {
        Some((head, tail))
            if !head.trim().is_empty()
                && !head.contains(',')
                && !head.trim().eq_ignore_ascii_case("unavailable_after") =>
        {
            (head.trim().eq_ignore_ascii_case(agent), tail)
        }
        _ => (true, value),
    };
    if applies {
        for d in rest.split(',') {
            r.apply_directive(d);
        }
    }
    r
}

/// Extracts a parsed HTML document; see [`extract_html`]. Split out so the
/// parse and the walk can be measured apart (benches/pipeline.rs).
pub fn extract_parsed(doc: &Html, max_text_bytes: usize) -> Extracted {
    let mut w = Walker::new(max_text_bytes);
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(el) => w.open(el),
                Node::Text(t) => w.text(t),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(el) = node.value() {
                    w.close(el.name());
                }
            }
        }
    }
    w.finish()
}

/// Extracts title, visible text, links and metadata from an HTML document
/// (already decoded to UTF-8). Never fails: any input yields a (maybe empty)
/// [`Extracted`]. Visible text beyond `max_text_bytes` bytes is dropped and
/// `truncated` set.
///
/// The document is read in one streaming pass over html5ever's tokenizer
/// (no tree builder, no DOM): a stack of open elements stands in for the
/// tree, with the HTML tree builder's implied end tags that matter for text
/// blocks (`p`, `li`, `dd`/`dt`, table cells and rows, `option`, headings,
/// nested `a`), end tags closing the nearest matching open element, and the
/// raw-text elements (`script`, `style`, `title`, `textarea`, ...) switched
/// into the tokenizer's raw-text states as the tree builder would. On
/// well-formed pages it yields what [`extract_parsed`] yields from the full
/// tree (tests compare the two over the test web).
///
/// Markup nested deeper than [`MAX_NESTING`] elements is cut off before
/// parsing (see [`limit_nesting`]; `truncated` is set).
pub fn extract_html(html: &str, max_text_bytes: usize) -> Extracted {
    let limited = limit_nesting(html);
    let mut out = stream::extract(limited, max_text_bytes);
    out.truncated |= limited.len() < html.len();
    out
}

/// [`extract_html`] through html5ever's full tree builder and a walk over
/// the tree (`scraper`): the reference the streaming pass is tested against,
/// and a fallback for callers that want the spec's tree exactly.
pub fn extract_html_tree(html: &str, max_text_bytes: usize) -> Extracted {
    let limited = limit_nesting(html);
    let mut out = extract_parsed(&Html::parse_document(limited), max_text_bytes);
    out.truncated |= limited.len() < html.len();
    out
}

/// An element as the walk sees it: a tree node or a start-tag token.
trait ElementLike {
    /// Local name, lowercase.
    fn name(&self) -> &str;
    /// The value of an attribute.
    fn attr(&self, name: &str) -> Option<&str>;
    /// All attributes as (name, value).
    fn attrs(&self) -> impl Iterator<Item = (&str, &str)>;
}

impl ElementLike for scraper::node::Element {
    fn name(&self) -> &str {
        scraper::node::Element::name(self)
    }
    fn attr(&self, name: &str) -> Option<&str> {
        scraper::node::Element::attr(self, name)
    }
    fn attrs(&self) -> impl Iterator<Item = (&str, &str)> {
        scraper::node::Element::attrs(self)
    }
}

/// The streaming extraction: html5ever's tokenizer feeding a [`Walker`].
mod stream {
    use std::cell::RefCell;

    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::states::RawKind;
    use html5ever::tokenizer::{
        BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
    };
    use html5ever::{local_name, Attribute, LocalName};

    use super::{ElementLike, Extracted, Walker};

    /// Open elements kept at most; deeper start tags are treated as empty
    /// elements (opened and closed at once). [`super::limit_nesting`] keeps
    /// ordinary input far below this.
    const MAX_STACK: usize = 4096;
    /// Open elements an end tag searches for its match (from the top).
    const MAX_SEARCH: usize = 512;

    /// A start tag seen as an element.
    struct TagRef<'a> {
        name: &'a str,
        attrs: &'a [Attribute],
    }

    impl ElementLike for TagRef<'_> {
        fn name(&self) -> &str {
            self.name
        }
        fn attr(&self, name: &str) -> Option<&str> {
            self.attrs.iter().find(|a| &*a.name.local == name).map(|a| &*a.value)
        }
        fn attrs(&self) -> impl Iterator<Item = (&str, &str)> {
            self.attrs.iter().map(|a| (&*a.name.local, &*a.value))
        }
    }

    struct State {
        w: Walker,
        /// Open elements, innermost last.
        stack: Vec<LocalName>,
        /// Character data since the last tag (one DOM text node).
        text: String,
        /// Open `svg` / `math` elements (self-closing tags count there).
        foreign: u32,
        /// Body content has started (a later `<head>` is ignored).
        body_started: bool,
        /// A head was opened (explicitly or implicitly); later ones are ignored.
        head_opened: bool,
    }

    struct Sink(RefCell<State>);

    /// Elements the tree builder never leaves open.
    fn is_void(n: &LocalName) -> bool {
        matches!(
            *n,
            local_name!("area")
                | local_name!("base")
                | local_name!("br")
                | local_name!("col")
                | local_name!("embed")
                | local_name!("hr")
                | local_name!("img")
                | local_name!("input")
                | local_name!("link")
                | local_name!("meta")
                | local_name!("source")
                | local_name!("track")
                | local_name!("wbr")
                | local_name!("param")
                | local_name!("keygen")
                | local_name!("basefont")
                | local_name!("bgsound")
                | local_name!("frame")
        )
    }

    /// Elements that bound a search of the open-element stack (the tree
    /// builder's "scope" markers).
    fn is_scope_marker(n: &LocalName) -> bool {
        matches!(
            *n,
            local_name!("html")
                | local_name!("table")
                | local_name!("td")
                | local_name!("th")
                | local_name!("caption")
                | local_name!("template")
                | local_name!("applet")
                | local_name!("marquee")
                | local_name!("object")
        )
    }

    fn is_heading(n: &LocalName) -> bool {
        matches!(
            *n,
            local_name!("h1")
                | local_name!("h2")
                | local_name!("h3")
                | local_name!("h4")
                | local_name!("h5")
                | local_name!("h6")
        )
    }

    /// Start tags that close an open `<p>` ("close a p element").
    fn closes_p(n: &LocalName) -> bool {
        matches!(
            *n,
            local_name!("address")
                | local_name!("article")
                | local_name!("aside")
                | local_name!("blockquote")
                | local_name!("center")
                | local_name!("details")
                | local_name!("dialog")
                | local_name!("dir")
                | local_name!("div")
                | local_name!("dl")
                | local_name!("fieldset")
                | local_name!("figcaption")
                | local_name!("figure")
                | local_name!("footer")
                | local_name!("header")
                | local_name!("hgroup")
                | local_name!("main")
                | local_name!("menu")
                | local_name!("nav")
                | local_name!("ol")
                | local_name!("p")
                | local_name!("search")
                | local_name!("section")
                | local_name!("summary")
                | local_name!("ul")
                | local_name!("h1")
                | local_name!("h2")
                | local_name!("h3")
                | local_name!("h4")
                | local_name!("h5")
                | local_name!("h6")
                | local_name!("pre")
                | local_name!("listing")
                | local_name!("form")
                | local_name!("li")
                | local_name!("dd")
                | local_name!("dt")
                | local_name!("plaintext")
                | local_name!("table")
                | local_name!("hr")
                | local_name!("xmp")
        )
    }

    /// Elements allowed in `<head>`; any other start tag ends it.
    fn in_head(n: &LocalName) -> bool {
        matches!(
            *n,
            local_name!("title")
                | local_name!("meta")
                | local_name!("link")
                | local_name!("base")
                | local_name!("style")
                | local_name!("script")
                | local_name!("noscript")
                | local_name!("template")
                | local_name!("basefont")
                | local_name!("bgsound")
        )
    }

    impl State {
        fn flush_text(&mut self) {
            if self.text.is_empty() {
                return;
            }
            let top_level = self
                .stack
                .last()
                .is_none_or(|n| matches!(*n, local_name!("html") | local_name!("head")));
            if !self.body_started && top_level && !self.text.trim_ascii().is_empty() {
                // Non-blank text ends the head (the tree builder opens the body).
                self.body_started = true;
                if let Some(i) = self.find(|n| *n == local_name!("head"), false) {
                    self.pop_through(i);
                }
            }
            self.w.text(&self.text);
            self.text.clear();
        }

        /// Index of the innermost open element matching `f`, searching at
        /// most [`MAX_SEARCH`] elements and (if `scoped`) stopping at scope
        /// markers.
        fn find(&self, f: impl Fn(&LocalName) -> bool, scoped: bool) -> Option<usize> {
            for (i, n) in self.stack.iter().enumerate().rev().take(MAX_SEARCH) {
                if f(n) {
                    return Some(i);
                }
                if scoped && is_scope_marker(n) {
                    return None;
                }
            }
            None
        }

        /// Closes the element at `i` and everything opened inside it.
        fn pop_through(&mut self, i: usize) {
            while self.stack.len() > i {
                if let Some(n) = self.stack.pop() {
                    if matches!(n, local_name!("svg") | local_name!("math")) {
                        self.foreign = self.foreign.saturating_sub(1);
                    }
                    self.w.close(&n);
                }
            }
        }

        /// Closes the innermost open element matching `f` (within scope).
        fn close_open(&mut self, f: impl Fn(&LocalName) -> bool, scoped: bool) {
            if let Some(i) = self.find(f, scoped) {
                self.pop_through(i);
            }
        }

        fn start(&mut self, tag: &Tag) -> TokenSinkResult<()> {
            let n = &tag.name;
            match *n {
                local_name!("html") | local_name!("body") if self.stack.iter().any(|o| o == n) => {
                    return TokenSinkResult::Continue;
                }
                local_name!("head") if self.body_started || self.head_opened => {
                    return TokenSinkResult::Continue;
                }
                local_name!("head") => self.head_opened = true,
                _ if !self.body_started && !self.head_opened && in_head(n) => {
                    // The tree builder opens the head implicitly.
                    self.head_opened = true;
                    let head = local_name!("head");
                    self.w.open(&TagRef {
                        name: &head,
                        attrs: &[],
                    });
                    self.stack.push(head);
                }
                _ => {}
            }
            if !self.body_started && !in_head(n) && !matches!(*n, local_name!("html") | local_name!("head")) {
                self.body_started = true;
                self.close_open(|o| *o == local_name!("head"), false);
            }
            // Implied end tags.
            if closes_p(n) {
                self.close_open(|o| *o == local_name!("p"), true);
            }
            match *n {
                local_name!("li") => self.close_open(|o| *o == local_name!("li"), true),
                local_name!("dd") | local_name!("dt") => {
                    self.close_open(|o| matches!(*o, local_name!("dd") | local_name!("dt")), true)
                }
                local_name!("td") | local_name!("th") => {
                    let cell = self.find(
                        |o| matches!(*o, local_name!("td") | local_name!("th") | local_name!("table")),
                        false,
                    );
                    if let Some(i) = cell.filter(|&i| self.stack[i] != local_name!("table")) {
                        self.pop_through(i);
                    }
                }
                local_name!("tr") => {
                    let row = self.find(|o| matches!(*o, local_name!("tr") | local_name!("table")), false);
                    if let Some(i) = row.filter(|&i| self.stack[i] == local_name!("tr")) {
                        self.pop_through(i);
                    }
                }
                local_name!("option") | local_name!("optgroup") => {
                    if self.stack.last() == Some(&local_name!("option")) {
                        self.close_open(|o| *o == local_name!("option"), false);
                    }
                    if *n == local_name!("optgroup") && self.stack.last() == Some(&local_name!("optgroup")) {
                        self.close_open(|o| *o == local_name!("optgroup"), false);
                    }
                }
                local_name!("a") => self.close_open(|o| *o == local_name!("a"), true),
                _ if is_heading(n) && self.stack.last().is_some_and(is_heading) => {
                    self.close_open(is_heading, false);
                }
                _ => {}
            }
            let el = TagRef {
                name: n,
                attrs: &tag.attrs,
            };
            self.w.open(&el);
            let foreign_tag = matches!(*n, local_name!("svg") | local_name!("math"));
            let empty = is_void(n) || (tag.self_closing && (self.foreign > 0 || foreign_tag));
            if empty || self.stack.len() >= MAX_STACK {
                self.w.close(n);
                return TokenSinkResult::Continue;
            }
            if foreign_tag {
                self.foreign += 1;
            }
            self.stack.push(n.clone());
            if self.foreign > 0 {
                return TokenSinkResult::Continue;
            }
            match *n {
                local_name!("script") => TokenSinkResult::RawData(RawKind::ScriptData),
                local_name!("style")
                | local_name!("xmp")
                | local_name!("iframe")
                | local_name!("noembed")
                | local_name!("noframes")
                | local_name!("noscript") => TokenSinkResult::RawData(RawKind::Rawtext),
                local_name!("title") | local_name!("textarea") => TokenSinkResult::RawData(RawKind::Rcdata),
                local_name!("plaintext") => TokenSinkResult::Plaintext,
                _ => TokenSinkResult::Continue,
            }
        }

        fn end(&mut self, tag: &Tag) {
            let n = &tag.name;
            match *n {
                // The tree builder keeps html and body open to the end.
                local_name!("html") | local_name!("body") => {}
                local_name!("br") => {
                    // `</br>` is a `<br>`.
                    let el = TagRef { name: n, attrs: &[] };
                    self.w.open(&el);
                    self.w.close(n);
                }
                local_name!("p") => {
                    if let Some(i) = self.find(|o| *o == local_name!("p"), true) {
                        self.pop_through(i);
                    } else {
                        // `</p>` without a `<p>` is an empty paragraph.
                        let el = TagRef { name: n, attrs: &[] };
                        self.w.open(&el);
                        self.w.close(n);
                    }
                }
                _ if is_heading(n) => self.close_open(is_heading, true),
                _ => {
                    let scoped = !is_scope_marker(n);
                    self.close_open(|o| o == n, scoped);
                }
            }
        }
    }

    impl TokenSink for Sink {
        type Handle = ();

        fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
            let mut st = self.0.borrow_mut();
            match token {
                Token::CharacterTokens(t) => {
                    st.text.push_str(&t);
                    TokenSinkResult::Continue
                }
                Token::TagToken(tag) => {
                    st.flush_text();
                    match tag.kind {
                        TagKind::StartTag => st.start(&tag),
                        TagKind::EndTag => {
                            st.end(&tag);
                            TokenSinkResult::Continue
                        }
                    }
                }
                Token::EOFToken => {
                    st.flush_text();
                    st.pop_through(0);
                    TokenSinkResult::Continue
                }
                _ => TokenSinkResult::Continue,
            }
        }
    }

    /// One pass over `html`.
    pub(super) fn extract(html: &str, max_text_bytes: usize) -> Extracted {
        let sink = Sink(RefCell::new(State {
            w: Walker::new(max_text_bytes),
            stack: Vec::with_capacity(64),
            text: String::new(),
            foreign: 0,
            body_started: false,
            head_opened: false,
        }));
        let tok = Tokenizer::new(sink, TokenizerOpts::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from_slice(html));
        let _ = tok.feed(&input);
        tok.end();
        let st = tok.sink.0.into_inner();
        st.w.finish()
    }
}

/// Whether `b` is ASCII with no whitespace but single spaces: no byte of
/// 0x80 or more, none in 0x09..=0x0D, no two spaces in a row (a space may
/// lead or end). Extraction writes text this way, so [`push_collapsed`] and the
/// content hashes can copy such text at once. Branch-free folds, so that it
/// runs at memory speed.
pub(crate) fn single_spaced_ascii(b: &[u8]) -> bool {
    let odd = b
        .iter()
        .fold(0u8, |a, &c| a | (c & 0x80) | u8::from(c.wrapping_sub(9) < 5));
    let double = b
        .iter()
        .zip(&b[1.min(b.len())..])
        .fold(0u8, |a, (&x, &y)| a | (u8::from(x == b' ') & u8::from(y == b' ')));
    odd | double == 0
}

/// Estimated element nesting beyond which [`extract_html`] cuts the input.
pub const MAX_NESTING: usize = 1024;

/// The longest prefix of `html` whose estimated element nesting stays within
/// [`MAX_NESTING`]. The estimate is a byte scan: a start tag opens a level
/// (except void elements and those whose end tag is implied, like `p`, `li`,
/// `td`), an end tag closes one; comments and the raw text of `script`,
/// `style`, `textarea`, `title` are skipped. Linear time, no allocation.
pub fn limit_nesting(html: &str) -> &str {
    let b = html.as_bytes();
    // Each level needs a `<` of its own: with at most MAX_NESTING of them
    // (most pages) the depth cannot pass the limit, and a SIMD count of one
    // byte is several times cheaper than the tag scan below.
    if b.len() <= MAX_NESTING || memchr::memchr_iter(b'<', b).count() <= MAX_NESTING {
        return html;
    }
    let mut depth = 0usize;
    let mut i = 0usize;
    while let Some(off) = memchr::memchr(b'<', &b[i..]) {
        let lt = i + off;
        i = lt + 1;
        let Some(&c) = b.get(i) else { break };
        if c == b'!' {
            if b[i..].starts_with(b"!--") {
                match memchr::memmem::find(&b[i..], b"-->") {
                    Some(end) => i += end + 3,
                    None => break,
                }
            }
            continue;
        }
        let end_tag = c == b'/';
        let start = if end_tag { i + 1 } else { i };
        let name_len = b[start..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'-')
            .count();
        if name_len == 0 || !b[start].is_ascii_alphabetic() {
            continue;
        }
        let name = &b[start..start + name_len];
        let ignored = |n: &[u8]| {
            const NAMES: &[&[u8]] = &[
                b"area",
                b"base",
                b"br",
                b"col",
                b"embed",
                b"hr",
                b"img",
                b"input",
                b"link",
                b"meta",
                b"source",
                b"track",
                b"wbr",
                b"param",
                b"keygen",
                b"p",
                b"li",
                b"dt",
                b"dd",
                b"option",
                b"optgroup",
                b"tr",
                b"td",
                b"th",
                b"thead",
                b"tbody",
                b"tfoot",
                b"rb",
                b"rt",
                b"rp",
                b"colgroup",
                b"caption",
                b"html",
                b"head",
                b"body",
            ];
            NAMES.iter().any(|k| k.eq_ignore_ascii_case(n))
        };
        if end_tag {
            if !ignored(name) {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        let raw = [b"script".as_slice(), b"style", b"textarea", b"title"]
            .into_iter()
            .find(|k| k.eq_ignore_ascii_case(name));
        if let Some(raw) = raw {
            // Skip to the matching end tag (case-insensitive).
            let mut j = start + name_len;
            let mut found = false;
            while let Some(o) = memchr::memmem::find(&b[j..], b"</") {
                let at = j + o + 2;
                if b.len() >= at + raw.len() && b[at..at + raw.len()].eq_ignore_ascii_case(raw) {
                    i = at + raw.len();
                    found = true;
                    break;
                }
                j = at;
            }
            if !found {
                break;
            }
            continue;
        }
        if !ignored(name) {
            depth += 1;
            if depth > MAX_NESTING {
                return &html[..lt];
            }
        }
    }
    html
}

/// Extracts a plain-text document: no title, no links; one body block per
/// paragraph (blank-line separated), capped at `max_text_bytes`.
pub fn extract_plain(text: &str, max_text_bytes: usize) -> Extracted {
    let mut out = Extracted::default();
    let mut used = 0usize;
    let mut para = String::new();
    let mut pending = false;
    // Paragraphs end at blank lines (any line ending); a trailing empty
    // "line" flushes the last one.
    for line in text.lines().chain(std::iter::once("")) {
        if !line.trim().is_empty() {
            push_collapsed(&mut para, line, &mut pending);
            pending = true;
            continue;
        }
        pending = false;
        if para.is_empty() {
            continue;
        }
        let room = max_text_bytes.saturating_sub(used);
        let cut = floor_char_boundary(&para, room);
        if cut < para.len() {
            out.truncated = true;
        }
        used += cut;
        if cut > 0 {
            para.truncate(cut);
            let text = para.trim_end().to_string();
            out.blocks.push(TextBlock {
                text,
                kind: BlockKind::Body,
            });
        }
        para.clear();
        if out.truncated {
            break;
        }
    }
    out
}

/// Whether `bytes` looks like HTML rather than plain text (a `<` tag among
/// the first non-blank bytes: doctype, html, head, body or any tag).
pub fn looks_like_html(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1024)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
    match start {
        Some(i) => head[i] == b'<',
        None => false,
    }
}

/// Largest `i <= max` that is a char boundary of `s`.
/// Up to [`CONTEXT_BYTES`] of whole words of `block` before `start` and
/// after `end`, joined by one space.
fn context_window(block: &str, start: usize, end: usize) -> String {
    let before = &block[..floor_char_boundary(block, start)];
    let mut from = ceil_char_boundary(before, before.len().saturating_sub(CONTEXT_BYTES));
    if from > 0 && !before[..from].ends_with(' ') {
        // Drop the word cut by the window's edge.
        from = before[from..].find(' ').map_or(before.len(), |p| from + p);
    }
    let after = &block[ceil_char_boundary(block, end)..];
    let mut to = floor_char_boundary(after, CONTEXT_BYTES);
    if to < after.len() && !after[to..].starts_with(' ') {
        to = after[..to].rfind(' ').unwrap_or(0);
    }
    let (b, a) = (before[from..].trim(), after[..to].trim());
    let mut out = String::with_capacity(b.len() + a.len() + 1);
    out.push_str(b);
    if !b.is_empty() && !a.is_empty() {
        out.push(' ');
    }
    out.push_str(a);
    out
}

fn ceil_char_boundary(s: &str, min: usize) -> usize {
    let mut i = min.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Appends `text` to `buf` with runs of whitespace collapsed to one space.
/// `pending_space` carries a space owed from the previous piece (a space is
/// never written at the start of `buf`).
fn push_collapsed(buf: &mut String, text: &str, pending_space: &mut bool) {
    let bytes = text.as_bytes();
    if single_spaced_ascii(bytes) {
        // Words joined by single spaces, maybe one space at either end (most
        // text nodes): the loop below would copy the core at once.
        if bytes.first() == Some(&b' ') {
            *pending_space = true;
        }
        let core = text.strip_prefix(' ').unwrap_or(text);
        let core = core.strip_suffix(' ').unwrap_or(core);
        if !core.is_empty() {
            if *pending_space && !buf.is_empty() {
                buf.push(' ');
            }
            buf.push_str(core);
        }
        *pending_space = bytes.last() == Some(&b' ') || (*pending_space && core.is_empty());
        return;
    }
    // (U+000B is whitespace to `char::is_whitespace`, not to `u8`'s.)
    if text.is_ascii() && !bytes.contains(&0x0B) {
        // Same result as the general path below; ASCII whitespace only.
        if bytes.first().is_some_and(u8::is_ascii_whitespace) {
            *pending_space = true;
        }
        for piece in text.split_ascii_whitespace() {
            if *pending_space && !buf.is_empty() {
                buf.push(' ');
            }
            buf.push_str(piece);
            *pending_space = true;
        }
        // A space is owed only if the text ended in whitespace.
        *pending_space = bytes.last().is_some_and(u8::is_ascii_whitespace)
            || (*pending_space && bytes.iter().all(u8::is_ascii_whitespace));
        return;
    }
    push_collapsed_general(buf, text, pending_space);
}

/// [`push_collapsed`] for any text (Unicode whitespace).
fn push_collapsed_general(buf: &mut String, text: &str, pending_space: &mut bool) {
    let mut first = true;
    for piece in text.split(char::is_whitespace) {
        if !first {
            *pending_space = true;
        }
        first = false;
        if piece.is_empty() {
            continue;
        }
        if *pending_space && !buf.is_empty() {
            buf.push(' ');
        }
        *pending_space = false;
        buf.push_str(piece);
    }
}

/// Elements whose content is never visible text.
fn is_skipped(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "head"
            | "svg"
            | "math"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "select"
            | "datalist"
            | "textarea"
    )
}

/// Elements whose start and end break the text into blocks.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "br"
            | "caption"
            | "dd"
            | "details"
            | "dialog"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "legend"
            | "li"
            | "main"
            | "nav"
            | "ol"
            | "option"
            | "p"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "tfoot"
            | "th"
            | "thead"
            | "tr"
            | "ul"
            | "button"
    )
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

fn is_boilerplate(el: &impl ElementLike) -> bool {
    match el.name() {
        "nav" | "header" | "footer" | "aside" => true,
        "html" | "body" | "main" | "article" => false,
        _ => el.attrs().any(|(name, value)| match name {
            "role" => {
                let r = value.trim();
                ["navigation", "banner", "contentinfo", "complementary"]
                    .iter()
                    .any(|k| r.eq_ignore_ascii_case(k))
            }
            "class" | "id" => boilerplate_name(value),
            _ => false,
        }),
    }
}

/// Class or id names that mark ads and navigation in the wild (after
/// Readability's "unlikely candidates", kept to names that rarely wrap the
/// main text): the attribute is split into words at whitespace, `-` and `_`
/// and one word must be one of these, case-insensitively. `header` is left
/// out on purpose: article headers hold the `<h1>`.
fn boilerplate_name(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "ad",
        "ads",
        "adslot",
        "adsbygoogle",
        "advert",
        "adverts",
        "advertisement",
        "advertising",
        "sponsor",
        "sponsored",
        "promo",
        "nav",
        "navbar",
        "navigation",
        "menu",
        "breadcrumb",
        "breadcrumbs",
        "sidebar",
        "footer",
        "cookie",
        "cookies",
        "share",
        "social",
    ];
    value
        .split(|c: char| c.is_ascii_whitespace() || c == '-' || c == '_')
        .any(|w| WORDS.iter().any(|k| k.eq_ignore_ascii_case(w)))
}

/// `hidden`, `aria-hidden=true`, or an inline style with `display:none` /
/// `visibility:hidden` (or `<input type=hidden>`).
fn is_hidden(el: &impl ElementLike) -> bool {
    for (name, value) in el.attrs() {
        match name {
            "hidden" => return true,
            "aria-hidden" if value.trim().eq_ignore_ascii_case("true") => return true,
            "style" if contains_ci(value, "none") || contains_ci(value, "hidden") => {
                let compact: String = value
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .flat_map(char::to_lowercase)
                    .collect();
                if compact.contains("display:none") || compact.contains("visibility:hidden") {
                    return true;
                }
            }
            "type" if el.name() == "input" && value.eq_ignore_ascii_case("hidden") => return true,
            _ => {}
        }
    }
    false
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

fn has_rel(el: &impl ElementLike, token: &str) -> bool {
    el.attr("rel")
        .is_some_and(|r| r.split_ascii_whitespace().any(|t| t.eq_ignore_ascii_case(token)))
}

/// State of the iterative tree walk.
struct Walker {
    out: Extracted,
    max_text_bytes: usize,
    text_bytes: usize,
    /// Depth inside skipped (invisible) elements; text is ignored while > 0.
    skip: u32,
    heading: u32,
    boilerplate: u32,
    /// Depth inside `<title>` (title text is taken only from the head's title).
    in_title: u32,
    title_buf: String,
    buf: String,
    pending_space: bool,
    /// Index in `out.links` of the open `<a>` (anchor text goes there).
    anchor: Option<usize>,
    anchor_pending_space: bool,
    /// Links of the current block: (index in `out.links`, offset in `buf`
    /// where the anchor starts, where it ends once closed), for contexts.
    spans: Vec<(usize, usize, Option<usize>)>,
    /// Alphanumeric characters of the current block inside links.
    link_chars: usize,
    /// Per open element: what `open` did (F_* bits), undone by `close`.
    open_flags: Vec<u8>,
}

const F_SKIP: u8 = 1;
const F_BLOCK: u8 = 2;
const F_HEADING: u8 = 4;
const F_BOILER: u8 = 8;

impl Walker {
    fn new(max_text_bytes: usize) -> Self {
        Walker {
            out: Extracted::default(),
            max_text_bytes,
            text_bytes: 0,
            skip: 0,
            heading: 0,
            boilerplate: 0,
            in_title: 0,
            title_buf: String::new(),
            buf: String::new(),
            pending_space: false,
            anchor: None,
            anchor_pending_space: false,
            spans: Vec::new(),
            link_chars: 0,
            open_flags: Vec::with_capacity(64),
        }
    }

    fn open(&mut self, el: &impl ElementLike) {
        let name = el.name();
        match name {
            "html" if self.out.lang.is_none() => {
                self.out.lang = el
                    .attr("lang")
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from);
            }
            "title" if self.in_title == 0 && self.out.title.is_none() && self.skip <= 1 => {
                self.in_title += 1;
            }
            "base" if self.out.base_href.is_none() => {
                self.out.base_href = el.attr("href").map(|h| h.trim().to_string());
            }
            "link" if self.out.canonical.is_none() && has_rel(el, "canonical") => {
                self.out.canonical = el.attr("href").map(|h| h.trim().to_string());
            }
            "meta" if el.attr("name").is_some_and(|n| n.trim().eq_ignore_ascii_case("robots")) => {
                if let Some(c) = el.attr("content") {
                    self.out.meta_robots = self.out.meta_robots.merge(parse_meta_robots(c));
                }
            }
            "a" | "area" => {
                if let Some(href) = el.attr("href") {
                    let nofollow = has_rel(el, "nofollow") || has_rel(el, "sponsored") || has_rel(el, "ugc");
                    self.out.links.push(Link {
                        href: href.trim().to_string(),
                        anchor: String::new(),
                        nofollow,
                        context: String::new(),
                    });
                    if name == "a" {
                        self.anchor = Some(self.out.links.len() - 1);
                        self.anchor_pending_space = false;
                        if self.skip == 0 && self.boilerplate == 0 {
                            self.spans.push((self.out.links.len() - 1, self.buf.len(), None));
                        }
                    }
                }
            }
            "img" => {
                if let (Some(i), Some(alt)) = (self.anchor, el.attr("alt")) {
                    if let Some(link) = self.out.links.get_mut(i) {
                        push_collapsed(&mut link.anchor, alt, &mut self.anchor_pending_space);
                        self.anchor_pending_space = true;
                    }
                }
            }
            _ => {}
        }
        let mut flags = 0u8;
        if is_skipped(name) || is_hidden(el) {
            self.skip += 1;
            flags |= F_SKIP;
        } else if self.skip == 0 {
            if is_block(name) {
                self.flush();
                flags |= F_BLOCK;
            }
            if is_heading(name) {
                self.heading += 1;
                flags |= F_HEADING;
            }
            if is_boilerplate(el) {
                self.boilerplate += 1;
                flags |= F_BOILER;
            }
        }
        self.open_flags.push(flags);
    }

    fn close(&mut self, name: &str) {
        if name == "title" && self.in_title > 0 {
            self.in_title -= 1;
            let t = self.title_buf.trim();
            if !t.is_empty() {
                self.out.title = Some(t.to_string());
            }
            self.title_buf.clear();
        }
        if name == "a" {
            if let Some(i) = self.anchor.take() {
                if let Some(span) = self.spans.iter_mut().rev().find(|s| s.0 == i) {
                    span.2.get_or_insert(self.buf.len());
                }
            }
        }
        // What `open` decided for this element (the walk is properly nested).
        let flags = self.open_flags.pop().unwrap_or(0);
        if flags & F_SKIP != 0 {
            self.skip = self.skip.saturating_sub(1);
        }
        if flags & F_BLOCK != 0 {
            self.flush();
        }
        if flags & F_HEADING != 0 {
            self.heading = self.heading.saturating_sub(1);
        }
        if flags & F_BOILER != 0 {
            self.boilerplate = self.boilerplate.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        if self.in_title > 0 {
            let mut p = !self.title_buf.is_empty();
            push_collapsed(&mut self.title_buf, text, &mut p);
            return;
        }
        if self.skip > 0 {
            return;
        }
        if let Some(i) = self.anchor {
            if let Some(link) = self.out.links.get_mut(i) {
                if link.anchor.len() < 1024 {
                    push_collapsed(&mut link.anchor, text, &mut self.anchor_pending_space);
                }
            }
            self.link_chars += text.chars().filter(|c| c.is_alphanumeric()).count();
        }
        if self.out.truncated {
            return;
        }
        let room = self.max_text_bytes.saturating_sub(self.text_bytes + self.buf.len());
        if text.len() <= room {
            push_collapsed(&mut self.buf, text, &mut self.pending_space);
        } else {
            let cut = floor_char_boundary(text, room);
            push_collapsed(&mut self.buf, &text[..cut], &mut self.pending_space);
            self.out.truncated = true;
        }
    }

    /// Ends the current block.
    fn flush(&mut self) {
        self.pending_space = false;
        if !self.spans.is_empty() {
            let buf = self.buf.as_str();
            for (i, start, end) in self.spans.drain(..) {
                let (start, end) = (start.min(buf.len()), end.unwrap_or(buf.len()).min(buf.len()).max(start));
                if let Some(link) = self.out.links.get_mut(i) {
                    link.context = context_window(buf, start, end);
                }
            }
        }
        let link_chars = std::mem::take(&mut self.link_chars);
        let t = self.buf.trim();
        if t.is_empty() {
            self.buf.clear();
            return;
        }
        // A block whose text is mostly link text is a list of links — a
        // table of contents, a menu, prev/next navigation, an index —
        // wherever it sits in the markup.
        let linked = link_chars > 0 && 2 * link_chars >= t.chars().filter(|c| c.is_alphanumeric()).count();
        let kind = if self.boilerplate > 0 {
            BlockKind::Boilerplate
        } else if linked {
            BlockKind::Links
        } else if self.heading > 0 {
            BlockKind::Heading
        } else {
            BlockKind::Body
        };
        self.text_bytes += t.len();
        self.out.blocks.push(TextBlock {
            text: t.to_string(),
            kind,
        });
        self.buf.clear();
    }

    fn finish(mut self) -> Extracted {
        self.flush();
        for l in &mut self.out.links {
            let t = l.anchor.trim();
            if t.len() != l.anchor.len() {
                l.anchor = t.to_string();
            }
        }
        if let Some(t) = &self.out.title {
            self.out.blocks.insert(
                0,
                TextBlock {
                    text: t.clone(),
                    kind: BlockKind::Title,
                },
            );
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
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
    fn robots_directives() {
        assert_eq!(
            parse_meta_robots("none"),
            MetaRobots {
                noindex: true,
                nofollow: true
            }
        );
        assert_eq!(parse_x_robots_tag("noindex, nofollow"), parse_meta_robots("none"));
        assert_eq!(parse_x_robots_tag("googlebot: noindex"), MetaRobots::default());
        assert!(parse_x_robots_tag("simcrawl: noindex").noindex);
        assert!(parse_x_robots_tag("unavailable_after: 25 Jun 2010 15:00:00 PST").eq(&MetaRobots::default()));
        assert!(parse_x_robots_tag_for("MyBot: nofollow", "mybot").nofollow);
        let merged = parse_x_robots_tag("nofollow").merge(parse_meta_robots("noindex"));
        assert!(merged.noindex && merged.nofollow);
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
        let scripted = format!("<div><script>{}</script>x</div>", "if (a<b) {}".repeat(5000));
        assert_eq!(limit_nesting(&scripted).len(), scripted.len());

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

    /// `push_collapsed` and the plain general path give the same text and
    /// owed space after every piece.
    fn collapses_like_the_general_path(
        start: String,
        pending: bool,
        pieces: &[String],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let (mut a, mut b) = (start.clone(), start);
        let (mut pa, mut pb) = (pending, pending);
        for p in pieces {
            push_collapsed(&mut a, p, &mut pa);
            push_collapsed_general(&mut b, p, &mut pb);
            proptest::prop_assert_eq!(&a, &b);
            proptest::prop_assert_eq!(pa, pb);
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn ascii_fast_path_collapses_like_the_general_path(
            pieces in proptest::collection::vec("[ a-c\t\n\r\x0B\x0C]{0,6}", 0..6),
            start in "[a ]{0,2}",
            pending in proptest::bool::ANY,
        ) {
            collapses_like_the_general_path(start, pending, &pieces)?;
        }
    }

    proptest::proptest! {
        /// Text nodes mostly of words and single spaces (the shortcut for
        /// them), now and then a double space or a line feed.
        #[test]
        fn single_space_shortcut_collapses_like_the_general_path(
            pieces in proptest::collection::vec("(?: | | |  |[a-c]{1,3}|[a-c]{1,3}|\n|é){0,6}", 0..6),
            start in "[a ]{0,2}",
            pending in proptest::bool::ANY,
        ) {
            collapses_like_the_general_path(start, pending, &pieces)?;
        }
    }

    /// Inputs on which the streaming pass must agree with the tree walk.
    const TRICKY: &[&str] = &[
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
        let mut n = 0;
        for p in truth.pages.iter().filter(|p| p.status == 200) {
            let target = p.url.splitn(4, '/').nth(3).map_or("/".to_string(), |t| format!("/{t}"));
            let body = web.respond(&p.host, &target, 80).body.to_vec();
            let html = String::from_utf8_lossy(&body);
            if !looks_like_html(html.as_bytes()) {
                continue;
            }
            n += 1;
            assert_eq!(
                extract_html(&html, 1 << 20),
                extract_html_tree(&html, 1 << 20),
                "{}",
                p.url
            );
        }
        assert!(n > 100, "{n} pages");
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
}
