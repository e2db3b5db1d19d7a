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
//! by its pages) and leaves it out of the fingerprint; [`Fingerprinter`]
//! sees the whole page. [`fingerprint_files`] (`simcrawl fingerprint`) learns
//! one template per directory, the directory playing the host.

mod files;

use std::path::PathBuf;

pub use files::{collect_files, extract_file, MAX_FILE_BYTES};

use crate::config::{FeatureSettings, Settings};
use crate::error::Result;
use crate::extract;
use crate::features::{FeatureExtractor, TemplateLearner};
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
        let opts = extract::ExtractOptions::new(self.fx.max_text_bytes()).without_link_text();
        let doc = extract::extract_html_with(html, opts);
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

/// One file's fingerprint (from [`fingerprint_files`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FileFingerprint {
    /// The file.
    pub path: PathBuf,
    /// Its simhash under its directory's template.
    pub fingerprint: u64,
    /// Its heaviest features as `(label, weight)`, when asked for.
    pub top: Vec<(String, f32)>,
}

/// What [`fingerprint_files`] found.
#[derive(Debug, Default)]
pub struct FileFingerprints {
    /// The files fingerprinted, in walk order.
    pub files: Vec<FileFingerprint>,
    /// The files that could not be read, with why.
    pub failed: Vec<crate::Error>,
}

/// Fingerprint every file under `paths` (see [`collect_files`]), with
/// `top = Some(n)` also listing each file's `n` heaviest features.
///
/// Two passes: the first extracts every file and, when
/// `features.template_learning` is on, learns one template per directory
/// (the directory plays the role of a crawl's host); the second fingerprints
/// every file against its directory's template. A file that cannot be read
/// is listed in `failed` and skipped.
pub fn fingerprint_files(
    paths: &[PathBuf],
    settings: &FeatureSettings,
    top: Option<usize>,
) -> Result<FileFingerprints> {
    let found = collect_files(paths)?;
    let fx = FeatureExtractor::new(settings).with_labels(top.is_some());
    let learner = TemplateLearner::new(settings);
    let mut docs = Vec::with_capacity(found.len());
    let mut out = FileFingerprints::default();
    for f in found {
        match extract_file(&f, settings.max_text_bytes) {
            Ok(doc) => {
                learner.observe(&files::file_host(&f), &doc);
                docs.push((f, doc));
            }
            Err(e) => out.failed.push(e),
        }
    }
    for (path, doc) in docs {
        let template = learner.template(&files::file_host(&path));
        let feats = fx.features(&doc, template.as_ref());
        out.files.push(FileFingerprint {
            fingerprint: simhash::simhash(&feats),
            top: top.map(|n| feats.top(n)).unwrap_or_default(),
            path,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_walked_in_order_and_unreadable_ones_listed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("site");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::write(sub.join("b.html"), "<p>second page about crawling</p>").expect("write");
        std::fs::write(sub.join("a.txt"), "first page about robots").expect("write");
        std::fs::write(sub.join("skip.bin"), [0u8, 1, 2]).expect("write");
        let st = Settings::default().features;
        let run = fingerprint_files(&[dir.path().to_path_buf()], &st, Some(2)).expect("run");
        assert!(run.failed.is_empty());
        let names: Vec<_> = run
            .files
            .iter()
            .map(|f| f.path.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.txt", "b.html"]);
        assert!(run.files.iter().all(|f| f.top.len() == 2));
        let plain = fingerprint_files(&[sub.join("a.txt")], &st, None).expect("run");
        assert_eq!(plain.files[0].fingerprint, run.files[0].fingerprint);
        assert!(plain.files[0].top.is_empty());
    }

    #[test]
    fn same_page_under_alias_urls_gets_the_same_fingerprint() {
        // What differs between a page's URLs (session ids and tracking
        // parameters in its own links, its canonical, its base) is not a
        // feature: hrefs are never hashed, only visible text.
        let page = |sid: &str, base: &str| {
            format!(
                "<html><head><title>Widgets</title><base href='{base}'><link rel=canonical href='{base}w?sid={sid}'>\
                 </head><body><nav><a href='/?sid={sid}'>Home</a></nav><h1>Blue widgets</h1><p>Blue widgets are \
                 <a href='/w/blue?sid={sid}&utm_source=x'>cheap</a> and sturdy.</p></body></html>"
            )
        };
        let fp = Fingerprinter::new(&Settings::default());
        let fps: Vec<u64> = [
            ("a1", "http://shop.test/"),
            ("zz9", "http://shop.test/index.html"),
            ("", "https://SHOP.test:443/"),
        ]
        .iter()
        .map(|(sid, base)| fp.html(&page(sid, base)))
        .collect();
        assert!(fps.iter().all(|&f| f == fps[0]), "{fps:x?}");
        // ...and the run is deterministic: a fresh fingerprinter gives the same.
        let again = Fingerprinter::new(&Settings::default());
        assert_eq!(again.html(&page("a1", "http://shop.test/")), fps[0]);
    }

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
