//! The [`Fingerprinter`]: a page's 64-bit simhash from its HTML or text,
//! through the crawler's own extraction and feature pipeline, for programs
//! that fingerprint documents outside a crawl.
//!
//! ```
//! use simcrawl::{Fingerprinter, Settings};
//!
//! let fp = Fingerprinter::new(&Settings::default());
//! let a = fp.html("<title>Rust</title><p>The borrow checker enforces ownership rules at compile time.</p>");
//! let b = fp.html("<title>Rust</title><p>The borrow checker enforces the ownership rules at compile time.</p>");
//! assert!(simcrawl::hamming(a, b) <= 3);
//! ```
//!
//! A crawl also learns each host's template (navigation and footers shared
//! by its pages) and leaves it out of the fingerprint; a standalone
//! fingerprint sees the whole page, as `simcrawl fingerprint` does.

use crate::config::Settings;
use crate::extract;
use crate::features::FeatureExtractor;
use crate::simhash;

/// Fingerprints documents with the `[features]` settings.
pub struct Fingerprinter {
    fx: FeatureExtractor,
}

impl Fingerprinter {
    /// With the `[features]` settings of `settings`.
    pub fn new(settings: &Settings) -> Self {
        Fingerprinter {
            fx: FeatureExtractor::new(&settings.features),
        }
    }

    /// The fingerprint of an HTML document.
    pub fn html(&self, html: &str) -> u64 {
        let doc = extract::extract_html(html, self.fx.max_text_bytes());
        simhash::simhash(&self.fx.features(&doc, None))
    }

    /// The fingerprint of a plain-text document.
    pub fn text(&self, text: &str) -> u64 {
        let doc = extract::extract_plain(text, self.fx.max_text_bytes());
        simhash::simhash(&self.fx.features(&doc, None))
    }

    /// The fingerprint of raw bytes: HTML when they look like HTML, else
    /// text (decoded as UTF-8, invalid sequences replaced).
    pub fn bytes(&self, bytes: &[u8]) -> u64 {
        let text = String::from_utf8_lossy(bytes);
        if extract::looks_like_html(bytes) {
            self.html(&text)
        } else {
            self.text(&text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_fingerprint_and_other_text_far() {
        let fp = Fingerprinter::new(&Settings::default());
        let page = "<p>Crawlers fetch pages politely and skip near duplicates of pages they have seen.</p>";
        assert_eq!(fp.html(page), fp.bytes(page.as_bytes()));
        assert_eq!(
            fp.text("Crawlers fetch pages politely and skip near duplicates of pages they have seen."),
            fp.html(page)
        );
        let other = fp.html("<p>Bread rises when yeast ferments the sugars in warm dough overnight.</p>");
        assert!(simhash::hamming(fp.html(page), other) > 3);
    }
}
