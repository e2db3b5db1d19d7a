//! Dedup decisions (pipeline: after the index, before the frontier update):
//! new / exact duplicate / near duplicate, exact content hashes, and the policy
//! that turns a decision into out-link treatment.

use serde::{Deserialize, Serialize};

/// What the crawl decided about one fetch attempt. Serialized in
/// `pages.jsonl` as the `decision` string (`new`, `exact_duplicate`, ...);
/// the page duplicated and the distance go in `dup_of` and `distance`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// New content: its fingerprint was inserted into the index.
    #[default]
    New,
    /// Same body bytes or same normalized text as an earlier page.
    ExactDuplicate,
    /// Simhash within k of an earlier page.
    NearDuplicate,
    /// robots.txt (or a parked/over-delayed host) forbade the fetch.
    Disallowed,
    /// Network error, timeout, or an HTTP error status (4xx/5xx).
    Error,
    /// The body exceeded the fetch cap.
    TooLarge,
    /// Content type not parsed (not HTML/text).
    NotHtml,
    /// A redirect hop; the target is recorded as `final_url`.
    Redirect,
    /// `noindex` in meta robots or X-Robots-Tag: not fingerprinted.
    Noindex,
}

impl Decision {
    /// The `pages.jsonl` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::New => "new",
            Decision::ExactDuplicate => "exact_duplicate",
            Decision::NearDuplicate => "near_duplicate",
            Decision::Disallowed => "disallowed",
            Decision::Error => "error",
            Decision::TooLarge => "too_large",
            Decision::NotHtml => "not_html",
            Decision::Redirect => "redirect",
            Decision::Noindex => "noindex",
        }
    }

    /// Whether the page is an exact or near duplicate of an earlier page.
    pub fn is_duplicate(self) -> bool {
        matches!(self, Decision::ExactDuplicate | Decision::NearDuplicate)
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exact content hashes of one page (BLAKE3, 32 bytes each): `body` says
/// "same bytes", `text` says "same visible text in different markup".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHashes {
    /// BLAKE3 of the raw body bytes as fetched (after content decoding).
    pub body: [u8; 32],
    /// BLAKE3 of the normalized visible text: every block of the extracted
    /// document (title first, boilerplate included), case-folded
    /// (`str::to_lowercase`), whitespace collapsed, blocks joined by one space.
    pub text: [u8; 32],
}

impl ContentHashes {
    /// Both hashes of a page.
    pub fn compute(body: &[u8], doc: &crate::extract::Extracted) -> Self {
        let mut text = blake3::Hasher::new();
        let mut first = true;
        for block in &doc.blocks {
            for word in block.text.split_whitespace() {
                if !first {
                    text.update(b" ");
                }
                first = false;
                if word.is_ascii() {
                    text.update(word.to_ascii_lowercase().as_bytes());
                } else {
                    text.update(word.to_lowercase().as_bytes());
                }
            }
        }
        ContentHashes {
            body: *blake3::hash(body).as_bytes(),
            text: *text.finalize().as_bytes(),
        }
    }

    /// `body` as 64 lowercase hex digits (the `content_hash` of `pages.jsonl`).
    pub fn body_hex(&self) -> String {
        hex(&self.body)
    }

    /// `text` as 64 lowercase hex digits.
    pub fn text_hex(&self) -> String {
        hex(&self.text)
    }
}

fn hex(bytes: &[u8; 32]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::extract_html;

    #[test]
    fn text_hash_ignores_markup_body_hash_does_not() {
        let a = "<html><body><p>Hello   World</p><p>Second</p></body></html>";
        let b = "<div><b>hello</b> world</div>\n<div>SECOND</div>";
        let c = "<p>Hello World Second!</p>";
        let h = |s: &str| ContentHashes::compute(s.as_bytes(), &extract_html(s, 1 << 20));
        assert_eq!(h(a).text, h(b).text);
        assert_ne!(h(a).body, h(b).body);
        assert_ne!(h(a).text, h(c).text);
        assert_eq!(h(a).body_hex().len(), 64);
        assert_eq!(h(a).body_hex(), blake3::hash(a.as_bytes()).to_hex().to_string());
    }
}
