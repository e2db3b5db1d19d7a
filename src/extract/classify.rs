//! What an element is to the walk: invisible (skipped or hidden), a block
//! boundary, a heading, or structural boilerplate (navigation, header,
//! footer, aside, ads by role, class or id).

use super::ElementLike;

/// Elements whose content is never visible text.
pub(super) fn is_skipped(name: &str) -> bool {
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
pub(super) fn is_block(name: &str) -> bool {
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

pub(super) fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// What an element's attributes say about it, read in one pass: whether
/// they hide it ([`AttrFacts::hidden`]) and whether they name it page
/// furniture ([`AttrFacts::boilerplate`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct AttrFacts {
    /// `hidden`, `aria-hidden=true`, or an inline style with
    /// `display:none` / `visibility:hidden` (or `<input type=hidden>`).
    pub(super) hidden: bool,
    /// A landmark `role` (navigation, banner, …) or a class or id of ads
    /// and navigation ([`boilerplate_name`]).
    pub(super) boilerplate: bool,
}

pub(super) fn attr_facts(el: &impl ElementLike) -> AttrFacts {
    let mut f = AttrFacts::default();
    for (name, value) in el.attrs() {
        match name {
            "hidden" => f.hidden = true,
            "aria-hidden" => f.hidden |= value.trim().eq_ignore_ascii_case("true"),
            "style" => f.hidden |= style_hides(value),
            "type" => f.hidden |= el.name() == "input" && value.eq_ignore_ascii_case("hidden"),
            "role" => f.boilerplate |= landmark_role(value),
            "class" | "id" => f.boilerplate = f.boilerplate || boilerplate_name(value),
            _ => {}
        }
    }
    f
}

/// Whether an element named `name` with attributes `facts` is structural
/// boilerplate: page furniture (landmarks, and the controls and pop-ups of
/// the page's interface: a button's label, a help dialog, never its text),
/// else what its attributes say, except on the page's root and main
/// content elements.
pub(super) fn is_boilerplate(name: &str, facts: AttrFacts) -> bool {
    match name {
        "nav" | "header" | "footer" | "aside" | "button" | "dialog" => true,
        "html" | "body" | "main" | "article" => false,
        _ => facts.boilerplate,
    }
}

/// A `role` of the page's furniture.
fn landmark_role(value: &str) -> bool {
    let r = value.trim();
    [
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "dialog",
        "toolbar",
    ]
    .iter()
    .any(|k| r.eq_ignore_ascii_case(k))
}

/// Class or id names that mark ads and navigation in the wild (after
/// Readability's "unlikely candidates", kept to names that rarely wrap the
/// main text): the attribute is split into words at ASCII whitespace, `-`
/// and `_` and one word must be one of these, case-insensitively. `header`
/// is left out on purpose: article headers hold the `<h1>`.
fn boilerplate_name(value: &str) -> bool {
    // The separators are ASCII, so splitting the bytes splits the chars.
    value
        .as_bytes()
        .split(|&b| b.is_ascii_whitespace() || b == b'-' || b == b'_')
        .any(boilerplate_word)
}

/// One of [`boilerplate_name`]'s words, case-insensitively (lowercased in a
/// stack buffer, then one `match`; most class names, such as a syntax
/// highlighter's one- and two-letter ones, are ruled out by their length or
/// first letter before that).
fn boilerplate_word(b: &[u8]) -> bool {
    if !(2..=13).contains(&b.len())
        || !matches!(
            b[0] | 0x20,
            b'a' | b'b' | b'c' | b'f' | b'm' | b'n' | b'p' | b's' | b't'
        )
    {
        return false;
    }
    let mut buf = [0u8; 13];
    let lower = &mut buf[..b.len()];
    lower.copy_from_slice(b);
    lower.make_ascii_lowercase();
    matches!(
        &*lower,
        b"ad"
            | b"ads"
            | b"adslot"
            | b"adsbygoogle"
            | b"advert"
            | b"adverts"
            | b"advertisement"
            | b"advertising"
            | b"sponsor"
            | b"sponsored"
            | b"promo"
            | b"nav"
            | b"navbar"
            | b"navigation"
            | b"menu"
            | b"breadcrumb"
            | b"breadcrumbs"
            | b"sidebar"
            | b"footer"
            | b"cookie"
            | b"cookies"
            | b"share"
            | b"social"
            | b"popup"
            | b"modal"
            | b"toolbar"
    )
}

/// An inline style with `display:none` or `visibility:hidden` (whitespace
/// and case aside).
fn style_hides(value: &str) -> bool {
    if !(contains_ci(value, "none") || contains_ci(value, "hidden")) {
        return false;
    }
    let compact: String = value
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    compact.contains("display:none") || compact.contains("visibility:hidden")
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whether the element's `rel` holds any of `tokens` (ASCII
/// case-insensitively).
pub(super) fn has_rel(el: &impl ElementLike, tokens: &[&str]) -> bool {
    el.attr("rel").is_some_and(|r| {
        r.split_ascii_whitespace()
            .any(|t| tokens.iter().any(|k| t.eq_ignore_ascii_case(k)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boilerplate_words_match_whole_words_in_any_case() {
        for w in [
            "ad",
            "ADS",
            "Advertisement",
            "navBar",
            "breadcrumbs",
            "TOOLBAR",
            "modal",
            "cookie",
        ] {
            assert!(boilerplate_word(w.as_bytes()), "{w}");
        }
        for w in [
            "",
            "a",
            "navs",
            "advertisements",
            "header",
            "main",
            "ÄD",
            "naví",
            "sidebar2",
        ] {
            assert!(!boilerplate_word(w.as_bytes()), "{w}");
        }
        assert!(boilerplate_name("main-Sidebar left"));
        assert!(boilerplate_name("x_nav"));
        assert!(!boilerplate_name("navigator content"));
    }
}
