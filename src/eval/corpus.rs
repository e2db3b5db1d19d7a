//! Corpora for `simcrawl near` and `simcrawl eval` (beside the pipeline):
//! documents in, [`PageSketch`]es out, through the crawler's own extraction,
//! feature and simhash code, on all cores, with a progress bar on a terminal.
//!
//! A source of documents is anything yielding `(name, Extracted)`: a
//! directory of HTML/text files ([`read_corpus`]) today; a crawl's stored
//! bodies ([`eval_crawl`]) plug in the same way. The binary prints what
//! [`near`], [`eval_corpus`] and [`eval_crawl`] return.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::config::Settings;
use crate::extract::Extracted;
use crate::features::FeatureExtractor;
use crate::fingerprint::{collect_files, extract_file};
use crate::simhash::simhash;
use crate::sketch::near::{clusters, near_pairs, Detectors, Method, PageSketch, Pair};

/// Named documents: (name, extracted page).
pub type Documents = Vec<(String, Extracted)>;

/// A progress bar on stderr when it is a terminal; hidden otherwise.
pub fn progress(len: usize, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len as u64);
    let style = ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    pb.set_style(style);
    pb.set_message(what.to_string());
    pb
}

/// The documents of a directory of HTML/text files (recursive, in a stable
/// order), named by their path relative to `dir`, extracted in parallel.
/// Files that cannot be read are returned as errors beside the documents.
pub fn read_corpus(dir: &Path, max_text_bytes: usize) -> crate::Result<(Documents, Vec<crate::Error>)> {
    let meta = std::fs::metadata(dir).map_err(|e| crate::Error::io(dir, e))?;
    if !meta.is_dir() {
        return Err(crate::Error::InvalidInput(format!(
            "--corpus {}: not a directory",
            dir.display()
        )));
    }
    let files = collect_files(&[dir.to_path_buf()])?;
    let pb = progress(files.len(), "reading");
    let results: Vec<(PathBuf, crate::Result<Extracted>)> = files
        .into_par_iter()
        .map(|f| {
            let r = extract_file(&f, max_text_bytes);
            pb.inc(1);
            (f, r)
        })
        .collect();
    pb.finish_and_clear();
    let mut docs = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for (f, r) in results {
        match r {
            Ok(doc) => {
                let name = f.strip_prefix(dir).unwrap_or(&f).to_string_lossy().into_owned();
                docs.push((name, doc));
            }
            Err(e) => errors.push(e),
        }
    }
    Ok((docs, errors))
}

/// Sketch every document with the shared pipeline: canonical tokens and the
/// simhash fingerprint from [`FeatureExtractor`] (as the crawler computes
/// them), then shingles, min-hash and Bloom ([`Detectors::sketch_page`]).
pub fn sketch_documents(docs: &[(String, Extracted)], settings: &Settings, det: &Detectors) -> Vec<PageSketch> {
    let fx = FeatureExtractor::new(&settings.features);
    let pb = progress(docs.len(), "sketching");
    let out = docs
        .par_iter()
        .map(|(_, doc)| {
            let tokens = fx.tokens(doc);
            let fp = simhash(&fx.features(doc, None));
            pb.inc(1);
            det.sketch_page(&tokens, fp)
        })
        .collect();
    pb.finish_and_clear();
    out
}

/// What `simcrawl near` is asked to do.
#[derive(Debug, Clone)]
pub struct NearOptions {
    /// The corpus directory.
    pub corpus: PathBuf,
    /// The detector.
    pub method: Method,
    /// Simhash Hamming threshold.
    pub k: u32,
    /// Min-hash resemblance or Bloom similarity threshold.
    pub threshold: Option<f64>,
}

/// The near-duplicate pairs of a corpus (from [`near`]).
#[derive(Debug)]
pub struct NearResult {
    /// Document names, relative to the corpus.
    pub names: Vec<String>,
    /// Pairs by index into `names`; score = Hamming distance, estimated
    /// resemblance or Bloom similarity, by method.
    pub pairs: Vec<Pair>,
    /// Files that could not be read.
    pub errors: Vec<crate::Error>,
}

impl NearResult {
    /// The clusters (two or more documents) the pairs join, as indexes into
    /// `names`.
    pub fn clusters(&self) -> Vec<Vec<usize>> {
        clusters(self.names.len(), &self.pairs)
    }
}

/// `simcrawl near`: the near-duplicate pairs of a directory of HTML/text
/// files by one method. Unreadable files are listed and skipped.
pub fn near(opts: &NearOptions, settings: &Settings) -> crate::Result<NearResult> {
    if let Some(t) = opts.threshold {
        if !(0.0..=1.0).contains(&t) {
            return Err(crate::Error::InvalidInput(format!("--threshold {t}: must be in 0..=1")));
        }
    }
    if opts.k > 64 {
        return Err(crate::Error::InvalidInput(format!("-k {}: must be in 0..=64", opts.k)));
    }
    let (docs, errors) = read_corpus(&opts.corpus, settings.features.max_text_bytes)?;
    let det = Detectors::from_settings(settings);
    let pages = sketch_documents(&docs, settings, &det);
    let pairs = near_pairs(&pages, &det, opts.method, opts.k, opts.threshold);
    Ok(NearResult {
        names: docs.into_iter().map(|(name, _)| name).collect(),
        pairs,
        errors,
    })
}

/// An evaluation and the files it wrote.
#[derive(Debug)]
pub struct Evaluation {
    /// Precision and recall per method and setting.
    pub report: super::Report,
    /// The CSV, text tables and SVG plots written.
    pub written: Vec<PathBuf>,
    /// Files that could not be read (corpus directories).
    pub errors: Vec<crate::Error>,
}

/// `simcrawl eval --corpus DIR`: evaluate every method on the corpus and
/// write the CSV, text tables and SVG plots to `out_dir`.
pub fn eval_corpus(corpus: &Path, out_dir: &Path, settings: &Settings) -> crate::Result<Evaluation> {
    let (docs, errors) = read_corpus(corpus, settings.features.max_text_bytes)?;
    let mut e = eval_documents(&docs, out_dir, settings)?;
    e.errors = errors;
    Ok(e)
}

/// Evaluate a set of documents from any source (a corpus directory, a
/// crawl's stored bodies) and write the results to `out_dir`.
pub fn eval_documents(docs: &[(String, Extracted)], out_dir: &Path, settings: &Settings) -> crate::Result<Evaluation> {
    let det = Detectors::from_settings(settings);
    let pages = sketch_documents(docs, settings, &det);
    let report = crate::eval::evaluate(&pages, &det, settings.dedup.verify_threshold);
    let written = report.write(out_dir)?;
    Ok(Evaluation {
        report,
        written,
        errors: Vec::new(),
    })
}

/// `simcrawl eval --crawl DIR`: evaluate the pages of a stored crawl: the
/// bodies its WARC files keep (`[output] warc = true`, the default; the
/// store records where each is) of every page that was decided new, exact or near duplicate, extracted with
/// the same pipeline as the crawl, named by canonical URL.
pub fn eval_crawl(crawl: &Path, out_dir: &Path, settings: &Settings) -> crate::Result<Evaluation> {
    use crate::model::Decision;
    let dir = crate::model::CrawlDir::new(crawl);
    if !dir.log().is_file() {
        return Err(crate::Error::InvalidInput(format!(
            "--crawl {}: no pages.jsonl (not a crawl output directory)",
            crawl.display()
        )));
    }
    let store = crate::store::open_crawl_store(&dir.store())?;
    let mut docs = Vec::new();
    for page in store.iter_pages() {
        let page = page?;
        if !matches!(
            page.decision,
            Decision::New | Decision::ExactDuplicate | Decision::NearDuplicate
        ) {
            continue;
        }
        let Some(at) = store.body_ref(page.id)? else { continue };
        let body = crate::warc::read_body(&dir.warc(), &at)?;
        let (text, _) = crate::fetch::decode_text(&body, None);
        let doc = if crate::extract::looks_like_html(&body) {
            crate::extract::extract_html(&text, settings.features.max_text_bytes)
        } else {
            crate::extract::extract_plain(&text, settings.features.max_text_bytes)
        };
        docs.push((page.canonical, doc));
    }
    if docs.is_empty() {
        return Err(crate::Error::InvalidInput(format!(
            "--crawl {}: no page bodies are kept (was the crawl run with output.warc = false?)",
            crawl.display()
        )));
    }
    eval_documents(&docs, out_dir, settings)
}
