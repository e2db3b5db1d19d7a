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

pub(super) fn is_boilerplate(el: &impl ElementLike) -> bool {
    match el.name() {
        // Page furniture: landmarks, and the controls and pop-ups of the
        // page's interface (a button's label, a help dialog), never its text.
        "nav" | "header" | "footer" | "aside" | "button" | "dialog" => true,
        "html" | "body" | "main" | "article" => false,
        _ => el.attrs().any(|(name, value)| match name {
            "role" => {
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
    value
        .split(|c: char| c.is_ascii_whitespace() || c == '-' || c == '_')
        .any(boilerplate_word)
}

/// One of [`boilerplate_name`]'s words, case-insensitively (lowercased in a
/// stack buffer, then one `match`).
fn boilerplate_word(w: &str) -> bool {
    let b = w.as_bytes();
    if !(2..=13).contains(&b.len()) {
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

/// `hidden`, `aria-hidden=true`, or an inline style with `display:none` /
/// `visibility:hidden` (or `<input type=hidden>`).
pub(super) fn is_hidden(el: &impl ElementLike) -> bool {
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

pub(super) fn has_rel(el: &impl ElementLike, token: &str) -> bool {
    el.attr("rel")
        .is_some_and(|r| r.split_ascii_whitespace().any(|t| t.eq_ignore_ascii_case(token)))
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
            assert!(boilerplate_word(w), "{w}");
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
            assert!(!boilerplate_word(w), "{w}");
        }
        assert!(boilerplate_name("main-Sidebar left"));
        assert!(boilerplate_name("x_nav"));
        assert!(!boilerplate_name("navigator content"));
    }
}
