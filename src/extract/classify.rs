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
        "popup",
        "modal",
        "toolbar",
    ];
    value
        .split(|c: char| c.is_ascii_whitespace() || c == '-' || c == '_')
        .any(|w| WORDS.iter().any(|k| k.eq_ignore_ascii_case(w)))
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
