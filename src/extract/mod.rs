//! Extraction (pipeline: after fetch and decoding, before [`crate::features`]):
//! an HTML (or plain-text) document, already decoded to UTF-8, becomes an
//! [`Extracted`]: title, visible text as blocks in document order (each
//! tagged title / heading / body / structural boilerplate), links with anchor
//! text and `rel=nofollow`, `<base href>`, `<link rel=canonical>`,
//! `<meta name=robots>` and `<html lang>`.
//!
//! The parser is a streaming tokenizer of the crate's own, with html5ever's
//! for the input it leaves aside; html5ever's tree builder (through
//! `scraper`) is the reference it is tested against. Each accepts any input
//! without recursion, so malformed or deeply nested markup cannot overflow
//! the stack. Visible
//! text is capped at `max_text_bytes` (the rest is dropped and
//! [`Extracted::truncated`] is set); links are still collected past the cap.
//!
//! The stages, one file each: `tokenize` (the tokenizer), `stream` (the
//! streaming pass over it, or over html5ever's tokenizer) or the tree walk
//! of [`extract_parsed`] feeds
//! elements and text to the `walker`, which asks `classify` what an element
//! is (invisible, a block, a heading, boilerplate, hidden) and builds text
//! blocks with the whitespace rules of `text`; `meta` parses robots
//! directives and `nesting` cuts markup nested too deep before parsing.

mod classify;
mod meta;
mod nesting;
mod stream;
mod text;
mod tokenize;
mod walker;

use ego_tree::iter::Edge;
use scraper::{Html, Node};

pub use meta::{parse_meta_robots, parse_x_robots_tag, parse_x_robots_tag_for, MetaRobots};
pub use nesting::{limit_nesting, MAX_NESTING};
pub(crate) use text::single_spaced_ascii;

use text::{floor_char_boundary, push_collapsed};
use walker::Walker;

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
    /// `<h1>`..`<h6>` outside structural boilerplate, or inside `<header>`
    /// elements and no other boilerplate (an article's or a reference
    /// page's own heading), linked or not.
    Heading,
    /// Ordinary visible text.
    Body,
    /// Text inside `nav`, `header`, `footer`, `aside`, the controls
    /// `button` and `dialog` (or the ARIA roles navigation, banner,
    /// contentinfo, complementary, dialog, toolbar, or an ad, navigation or
    /// pop-up class name).
    Boilerplate,
    /// Outside structural boilerplate and headings, a block whose text is
    /// at least half link text: an entry of a table of contents, a menu, prev/next links
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
    /// A link with fewer than 8 words around it in a table row or a `<dt>`
    /// (an API index's name column) also gets up to `2 × CONTEXT_BYTES` of
    /// the description beside it: the body text of the row's other cells,
    /// or the first body block of the `<dd>` that follows.
    /// Empty for links in structural boilerplate (navigation, footers),
    /// whose neighbours are other links, not a description.
    pub context: String,
}

/// Bytes of block text kept on each side of a link's anchor in [`Link::context`].
pub const CONTEXT_BYTES: usize = 48;

/// Extracts a parsed HTML document; see [`extract_html`]. Split out so the
/// parse and the walk can be measured apart (benches/pipeline.rs).
pub fn extract_parsed(doc: &Html, max_text_bytes: usize) -> Extracted {
    let mut w = Walker::new(ExtractOptions::new(max_text_bytes));
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
/// The document is read in one streaming pass over a tokenizer (the
/// crate's own; html5ever's for a document with a NUL byte; no tree
/// builder, no DOM): a stack of open elements stands in for the
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
    extract_html_with(html, ExtractOptions::new(max_text_bytes))
}

/// [`extract_html`] with [`ExtractOptions`]: without link text, every
/// [`Link::anchor`] and [`Link::context`] is empty and the walk does not
/// collect them (a crawl that does not score links by their words).
pub fn extract_html_with(html: &str, opts: ExtractOptions) -> Extracted {
    let limited = limit_nesting(html);
    let mut out = stream::extract(limited, opts);
    out.truncated |= limited.len() < html.len();
    out
}

/// What an extraction collects beyond text blocks, hrefs and metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Visible text kept, in bytes (the rest is dropped and
    /// [`Extracted::truncated`] set).
    pub max_text_bytes: usize,
    /// Collect each link's [`Link::anchor`] and [`Link::context`]
    /// (`true` by default): what a focused crawl scores links by. Whether
    /// a block is mostly link text ([`BlockKind::Links`]) is decided
    /// either way.
    pub link_text: bool,
}

impl ExtractOptions {
    /// Text up to `max_text_bytes`, link text collected.
    pub fn new(max_text_bytes: usize) -> Self {
        ExtractOptions {
            max_text_bytes,
            link_text: true,
        }
    }

    /// The same, without link text.
    pub fn without_link_text(self) -> Self {
        ExtractOptions {
            link_text: false,
            ..self
        }
    }
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

#[cfg(test)]
mod tests;
