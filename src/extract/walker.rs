//! The walk that turns elements and text (from the tree or the token
//! stream) into an [`Extracted`]: text blocks with their kind, links with
//! anchor text and context, and the head's metadata.

use super::classify::{attr_facts, has_rel, is_block, is_boilerplate, is_heading, is_skipped};
use super::text::{ceil_char_boundary, floor_char_boundary, push_collapsed};
use super::{parse_meta_robots, BlockKind, ElementLike, ExtractOptions, Extracted, Link, TextBlock, CONTEXT_BYTES};

/// Up to [`CONTEXT_BYTES`] of whole words of `block` before `start` and
/// after `end`, joined by one space.
pub(super) fn context_window(block: &str, start: usize, end: usize) -> String {
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

/// A link whose own block says little more than its name (fewer words of
/// context than this) takes the description beside it as context: the
/// other cells of its table row, or the `<dd>` after its `<dt>`.
const NAME_ONLY_WORDS: usize = 8;

/// Up to `2 × CONTEXT_BYTES` of whole words from the start of `text`.
fn description_window(text: &str) -> &str {
    let max = 2 * CONTEXT_BYTES;
    if text.len() <= max {
        return text;
    }
    let cut = floor_char_boundary(text, max);
    if text[cut..].starts_with(' ') {
        return text[..cut].trim_end();
    }
    text[..cut].rfind(' ').map_or("", |p| &text[..p])
}

/// Append `desc` to a link's context (space-separated).
fn add_description(link: &mut Link, desc: &str) {
    if desc.is_empty() {
        return;
    }
    if !link.context.is_empty() {
        link.context.push(' ');
    }
    link.context.push_str(desc);
}

/// An open table row: where its blocks start, and its name-only links
/// (index in `out.links`, index in `out.blocks` of their own block).
struct Row {
    first_block: usize,
    names: Vec<(usize, Option<usize>)>,
}

/// State of the iterative tree walk.
pub(super) struct Walker {
    out: Extracted,
    max_text_bytes: usize,
    /// Collect anchor texts and contexts ([`ExtractOptions::link_text`]).
    link_text: bool,
    text_bytes: usize,
    /// Depth inside skipped (invisible) elements; text is ignored while > 0.
    skip: u32,
    heading: u32,
    boilerplate: u32,
    /// How many of the open boilerplate elements are `<header>`s: a
    /// heading inside headers only (an article's or a reference page's
    /// `<h1>`) is the page's heading, not furniture.
    header: u32,
    /// Depth inside `<title>` (title text is taken only from the head's title).
    in_title: u32,
    title_buf: String,
    buf: String,
    pending_space: bool,
    /// Index in `out.links` of the open `<a>`, whose anchor text is
    /// collected in `anchor_buf` and copied to the link, trimmed, when it
    /// closes (one allocation of the text's size per link).
    anchor: Option<usize>,
    anchor_buf: String,
    anchor_pending_space: bool,
    /// Links of the current block: (index in `out.links`, offset in `buf`
    /// where the anchor starts, where it ends once closed), for contexts.
    spans: Vec<(usize, usize, Option<usize>)>,
    /// Alphanumeric characters of the current block inside links.
    link_chars: usize,
    /// The open `<a>` is a heading's link to a place on its own page (a
    /// permalink such as `<h2><a href="#usage">Usage</a></h2>`): its text
    /// is the heading's, not link text.
    self_anchor: bool,
    /// Per open element: what `open` did (F_* bits), undone by `close`.
    open_flags: Vec<u8>,
    /// Open table rows, innermost last.
    rows: Vec<Row>,
    /// Depth inside `<dt>` and inside `<dd>`.
    in_dt: u32,
    in_dd: u32,
    /// Name-only links of the `<dt>`s before the next `<dd>`.
    terms: Vec<usize>,
}

const F_SKIP: u8 = 1;
const F_BLOCK: u8 = 2;
const F_HEADING: u8 = 4;
const F_BOILER: u8 = 8;
const F_HEADER: u8 = 16;
const F_ROW: u8 = 32;
const F_DT: u8 = 64;
const F_DD: u8 = 128;

impl Walker {
    pub(super) fn new(opts: ExtractOptions) -> Self {
        Walker {
            out: Extracted::default(),
            max_text_bytes: opts.max_text_bytes,
            link_text: opts.link_text,
            text_bytes: 0,
            skip: 0,
            heading: 0,
            boilerplate: 0,
            header: 0,
            in_title: 0,
            title_buf: String::new(),
            buf: String::new(),
            pending_space: false,
            anchor: None,
            anchor_buf: String::new(),
            anchor_pending_space: false,
            spans: Vec::new(),
            link_chars: 0,
            self_anchor: false,
            open_flags: Vec::with_capacity(64),
            rows: Vec::new(),
            in_dt: 0,
            in_dd: 0,
            terms: Vec::new(),
        }
    }

    pub(super) fn open(&mut self, el: &impl ElementLike) {
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
            "link" if self.out.canonical.is_none() && has_rel(el, &["canonical"]) => {
                self.out.canonical = el.attr("href").map(|h| h.trim().to_string());
            }
            "meta" if el.attr("name").is_some_and(|n| n.trim().eq_ignore_ascii_case("robots")) => {
                if let Some(c) = el.attr("content") {
                    self.out.meta_robots = self.out.meta_robots.merge(parse_meta_robots(c));
                }
            }
            "a" | "area" => {
                if let Some(href) = el.attr("href") {
                    let nofollow = has_rel(el, &["nofollow", "sponsored", "ugc"]);
                    self.out.links.push(Link {
                        href: href.trim().to_string(),
                        anchor: String::new(),
                        nofollow,
                        context: String::new(),
                    });
                    if name == "a" {
                        // An `<a>` inside another ends the outer one's text.
                        self.end_anchor();
                        self.anchor = Some(self.out.links.len() - 1);
                        self.self_anchor = self.heading > 0 && href.trim_start().starts_with('#');
                        self.anchor_pending_space = false;
                        if self.link_text && self.skip == 0 && self.boilerplate == 0 {
                            self.spans.push((self.out.links.len() - 1, self.buf.len(), None));
                        }
                    }
                }
            }
            "img" => {
                if let (Some(_), true, Some(alt)) = (self.anchor, self.link_text, el.attr("alt")) {
                    push_collapsed(&mut self.anchor_buf, alt, &mut self.anchor_pending_space);
                    self.anchor_pending_space = true;
                }
            }
            _ => {}
        }
        let mut flags = 0u8;
        let facts = attr_facts(el);
        if is_skipped(name) || facts.hidden {
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
            if is_boilerplate(name, facts) {
                self.boilerplate += 1;
                flags |= F_BOILER;
                if name == "header" {
                    self.header += 1;
                    flags |= F_HEADER;
                }
            }
            match name {
                "tr" => {
                    self.rows.push(Row {
                        first_block: self.out.blocks.len(),
                        names: Vec::new(),
                    });
                    flags |= F_ROW;
                }
                "dt" => {
                    self.in_dt += 1;
                    flags |= F_DT;
                }
                "dd" => {
                    self.in_dd += 1;
                    flags |= F_DD;
                }
                _ => {}
            }
        }
        self.open_flags.push(flags);
    }

    pub(super) fn close(&mut self, name: &str) {
        if name == "title" && self.in_title > 0 {
            self.in_title -= 1;
            let t = self.title_buf.trim();
            if !t.is_empty() {
                self.out.title = Some(t.to_string());
            }
            self.title_buf.clear();
        }
        if name == "a" {
            self.self_anchor = false;
            if let Some(i) = self.end_anchor() {
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
        if flags & F_HEADER != 0 {
            self.header = self.header.saturating_sub(1);
        }
        if flags & F_ROW != 0 {
            self.close_row();
        }
        if flags & F_DT != 0 {
            self.in_dt = self.in_dt.saturating_sub(1);
        }
        if flags & F_DD != 0 {
            self.in_dd = self.in_dd.saturating_sub(1);
            self.terms.clear();
        }
        if name == "dl" {
            self.terms.clear();
        }
    }

    /// A table row ends: its name-only links take the row's other body
    /// text (the description column of an API index) as context.
    fn close_row(&mut self) {
        let Some(row) = self.rows.pop() else { return };
        if row.names.is_empty() {
            return;
        }
        // The row's first few body blocks (a hostile row of many cells
        // costs no more per link).
        let bodies: Vec<usize> = (row.first_block..self.out.blocks.len())
            .filter(|&i| self.out.blocks[i].kind == BlockKind::Body)
            .take(8)
            .collect();
        for (link, own) in row.names {
            let mut desc = String::new();
            for &i in &bodies {
                if Some(i) != own && desc.len() < 2 * CONTEXT_BYTES {
                    if !desc.is_empty() {
                        desc.push(' ');
                    }
                    desc.push_str(description_window(&self.out.blocks[i].text));
                }
            }
            if let Some(l) = self.out.links.get_mut(link) {
                add_description(l, description_window(&desc));
            }
        }
    }

    pub(super) fn text(&mut self, text: &str) {
        if self.in_title > 0 {
            let mut p = !self.title_buf.is_empty();
            push_collapsed(&mut self.title_buf, text, &mut p);
            return;
        }
        if self.skip > 0 {
            return;
        }
        if self.anchor.is_some() {
            if self.link_text && self.anchor_buf.len() < 1024 {
                push_collapsed(&mut self.anchor_buf, text, &mut self.anchor_pending_space);
            }
            if !self.self_anchor {
                self.link_chars += text.chars().filter(|c| c.is_alphanumeric()).count();
            }
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
        // Links of this block that name something described beside them.
        let named = self.terms.len();
        let mut row_names = Vec::new();
        let wait = !self.rows.is_empty() || self.in_dt > 0;
        if !self.spans.is_empty() {
            let buf = self.buf.as_str();
            for (i, start, end) in self.spans.drain(..) {
                let (start, end) = (start.min(buf.len()), end.unwrap_or(buf.len()).min(buf.len()).max(start));
                if let Some(link) = self.out.links.get_mut(i) {
                    link.context = context_window(buf, start, end);
                    if wait && link.context.split_whitespace().nth(NAME_ONLY_WORDS - 1).is_none() {
                        if self.in_dt > 0 {
                            self.terms.push(i);
                        } else {
                            row_names.push(i);
                        }
                    }
                }
            }
        }
        let link_chars = std::mem::take(&mut self.link_chars);
        let t = self.buf.trim();
        let own = (!t.is_empty()).then_some(self.out.blocks.len());
        if let Some(row) = self.rows.last_mut() {
            row.names.extend(row_names.into_iter().map(|i| (i, own)));
        }
        if t.is_empty() {
            self.buf.clear();
            return;
        }
        // A block whose text is mostly link text is a list of links — a
        // table of contents, a menu, prev/next navigation, an index —
        // wherever it sits in the markup, but a heading: one whose words
        // link (an API reference's signature, a listed post's title) is
        // still the heading of what follows.
        let linked = link_chars > 0 && 2 * link_chars >= t.chars().filter(|c| c.is_alphanumeric()).count();
        let in_headers_only = self.boilerplate == self.header && self.heading > 0;
        let kind = if self.boilerplate > 0 && !in_headers_only {
            BlockKind::Boilerplate
        } else if self.heading > 0 {
            BlockKind::Heading
        } else if linked {
            BlockKind::Links
        } else {
            BlockKind::Body
        };
        self.text_bytes += t.len();
        // The first body text of a `<dd>` describes the terms before it.
        if kind == BlockKind::Body && self.in_dd > 0 && self.in_dt == 0 && named > 0 {
            let desc = description_window(t);
            for &i in &self.terms[..named] {
                if let Some(l) = self.out.links.get_mut(i) {
                    add_description(l, desc);
                }
            }
            self.terms.clear();
        }
        self.out.blocks.push(TextBlock {
            text: t.to_string(),
            kind,
        });
        self.buf.clear();
    }

    /// The open `<a>`'s text, trimmed, goes to its link; returns the
    /// link's index.
    fn end_anchor(&mut self) -> Option<usize> {
        let i = self.anchor.take()?;
        if let Some(link) = self.out.links.get_mut(i) {
            link.anchor = self.anchor_buf.trim().to_string();
        }
        self.anchor_buf.clear();
        Some(i)
    }

    pub(super) fn finish(mut self) -> Extracted {
        self.end_anchor();
        self.flush();
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
