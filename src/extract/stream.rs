//! The streaming extraction: a tokenizer feeding a [`Walker`], with a
//! stack of open elements standing in for the tree builder (the implied end
//! tags that matter for text blocks, raw-text states, the implicit head and
//! body). The tokenizer is [`super::tokenize`]'s, or html5ever's for the
//! input that one leaves to it; both feed the same [`State`].

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use html5ever::{local_name, Attribute, LocalName};

use super::tokenize::{self, Attrs, Next};
use super::walker::Walker;
use super::{ElementLike, ExtractOptions, Extracted};

/// Open elements kept at most; deeper start tags are treated as empty
/// elements (opened and closed at once). [`super::limit_nesting`] keeps
/// ordinary input far below this.
const MAX_STACK: usize = 4096;
/// Open elements an end tag searches for its match (from the top).
const MAX_SEARCH: usize = 512;

/// A start tag's attributes, from either tokenizer.
#[derive(Clone, Copy)]
enum AttrList<'a> {
    Html5ever(&'a [Attribute]),
    Own(&'a Attrs),
}

/// A start tag seen as an element.
struct TagRef<'a> {
    name: &'a str,
    attrs: AttrList<'a>,
}

const NO_ATTRS: AttrList<'static> = AttrList::Html5ever(&[]);

impl ElementLike for TagRef<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn attr(&self, name: &str) -> Option<&str> {
        match self.attrs {
            AttrList::Html5ever(a) => a.iter().find(|a| &*a.name.local == name).map(|a| &*a.value),
            AttrList::Own(a) => a.get(name),
        }
    }
    fn attrs(&self) -> impl Iterator<Item = (&str, &str)> {
        let (h, o) = match self.attrs {
            AttrList::Html5ever(a) => (Some(a.iter().map(|a| (&*a.name.local, &*a.value))), None),
            AttrList::Own(a) => (None, Some(a.iter())),
        };
        h.into_iter().flatten().chain(o.into_iter().flatten())
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

    fn start(&mut self, n: &LocalName, attrs: AttrList<'_>, self_closing: bool) -> Next {
        match *n {
            local_name!("html") | local_name!("body") if self.stack.iter().any(|o| o == n) => {
                return Next::Data;
            }
            local_name!("head") if self.body_started || self.head_opened => {
                return Next::Data;
            }
            local_name!("head") => self.head_opened = true,
            _ if !self.body_started && !self.head_opened && in_head(n) => {
                // The tree builder opens the head implicitly.
                self.head_opened = true;
                let head = local_name!("head");
                self.w.open(&TagRef {
                    name: &head,
                    attrs: NO_ATTRS,
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
        let el = TagRef { name: n, attrs };
        self.w.open(&el);
        let foreign_tag = matches!(*n, local_name!("svg") | local_name!("math"));
        let empty = is_void(n) || (self_closing && (self.foreign > 0 || foreign_tag));
        if empty || self.stack.len() >= MAX_STACK {
            self.w.close(n);
            return Next::Data;
        }
        if foreign_tag {
            self.foreign += 1;
        }
        self.stack.push(n.clone());
        if self.foreign > 0 {
            return Next::Data;
        }
        match *n {
            local_name!("script") => Next::Script,
            local_name!("style")
            | local_name!("xmp")
            | local_name!("iframe")
            | local_name!("noembed")
            | local_name!("noframes")
            | local_name!("noscript") => Next::Rawtext,
            local_name!("title") | local_name!("textarea") => Next::Rcdata,
            local_name!("plaintext") => Next::Plaintext,
            _ => Next::Data,
        }
    }

    fn end(&mut self, n: &LocalName) {
        match *n {
            // The tree builder keeps html and body open to the end.
            local_name!("html") | local_name!("body") => {}
            local_name!("br") => {
                // `</br>` is a `<br>`.
                let el = TagRef {
                    name: n,
                    attrs: NO_ATTRS,
                };
                self.w.open(&el);
                self.w.close(n);
            }
            local_name!("p") => {
                if let Some(i) = self.find(|o| *o == local_name!("p"), true) {
                    self.pop_through(i);
                } else {
                    // `</p>` without a `<p>` is an empty paragraph.
                    let el = TagRef {
                        name: n,
                        attrs: NO_ATTRS,
                    };
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
    /// The end of the input: pending text, then every open element closed.
    fn eof(&mut self) {
        self.flush_text();
        self.pop_through(0);
    }

    fn new(opts: ExtractOptions) -> Self {
        State {
            w: Walker::new(opts),
            stack: Vec::with_capacity(64),
            text: String::new(),
            foreign: 0,
            body_started: false,
            head_opened: false,
        }
    }
}

impl tokenize::Sink for State {
    fn text(&mut self, text: &str) {
        self.text.push_str(text);
    }
    fn start(&mut self, name: &LocalName, attrs: &Attrs, self_closing: bool) -> Next {
        self.flush_text();
        State::start(self, name, AttrList::Own(attrs), self_closing)
    }
    fn end(&mut self, name: &LocalName) {
        self.flush_text();
        State::end(self, name);
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
                    TagKind::StartTag => match st.start(&tag.name, AttrList::Html5ever(&tag.attrs), tag.self_closing) {
                        Next::Data => TokenSinkResult::Continue,
                        Next::Script => TokenSinkResult::RawData(RawKind::ScriptData),
                        Next::Rawtext => TokenSinkResult::RawData(RawKind::Rawtext),
                        Next::Rcdata => TokenSinkResult::RawData(RawKind::Rcdata),
                        Next::Plaintext => TokenSinkResult::Plaintext,
                    },
                    TagKind::EndTag => {
                        st.end(&tag.name);
                        TokenSinkResult::Continue
                    }
                }
            }
            Token::EOFToken => {
                st.eof();
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }
}

/// One pass over `html`: [`super::tokenize`]'s tokenizer, or html5ever's
/// for the input that one does not model.
pub(super) fn extract(html: &str, opts: ExtractOptions) -> Extracted {
    let mut st = State::new(opts);
    if tokenize::tokenize(html, &mut st).is_ok() {
        st.eof();
        return st.w.finish();
    }
    extract_html5ever(html, opts)
}

/// One pass over `html` with html5ever's tokenizer.
pub(super) fn extract_html5ever(html: &str, opts: ExtractOptions) -> Extracted {
    let sink = Sink(RefCell::new(State::new(opts)));
    let tok = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let _ = tok.feed(&input);
    tok.end();
    let st = tok.sink.0.into_inner();
    st.w.finish()
}
