//! What a focused crawl learns while it runs: which hosts and which URL
//! words lead to on-topic pages. The decider owns one [`Evidence`]: every
//! parsed page's relevance is [observed](Evidence::observe) as it is
//! decided, and every out-link is scored from the evidence so far
//! ([`Evidence::host_relevance`], [`Evidence::url_relevance`]), before the
//! page that link leads to is fetched.
//!
//! # Units
//!
//! A page's evidence is whether it is on-topic: 1 or 0. It is on-topic when
//! its relevance is above 0 and at least the crawl's threshold
//! ([`Evidence::threshold`]): `focus.on_topic`, or, once
//! [`MIN_QUANTILE_PAGES`] pages were seen, the `focus.on_topic_quantile`
//! quantile of the relevance of all pages seen so far when that is lower.
//! Cosine values depend on the topic's words and the sites (a profile of
//! common words scores every page higher), so a fixed threshold calls few
//! pages of one topic on-topic and many of another; the quantile adapts it
//! to the crawl. The relevance histogram has [`BINS`] bins over
//! `sqrt(relevance)`, fine where most pages are.
//!
//! # Host relevance
//!
//! The share `c` of on-topic pages among the host's pages, shrunk towards
//! the share among all pages so far by [`HOST_PRIOR_PAGES`] pseudo-pages:
//!
//! ```text
//! host_relevance(h) = (Σ c over h's pages + m × ḡ) / (pages of h + m)      m = HOST_PRIOR_PAGES, ḡ = mean c of all pages
//! ```
//!
//! A host nothing was fetched from yet scores ḡ; one that yielded only
//! on-topic pages tends to 1. It is the host's *yield*: with
//! `focus.hold_margin` the crawl spends its fetches on the hosts that
//! yield, and leaves a host as its yield drops. This is the share of its
//! budget a site has earned: a site with many on-topic pages gets more of
//! the crawl than a site with none, whatever its link structure.
//!
//! With `focus.host_memory = M` above 0 the sums are over about the host's
//! last M pages: each earlier page's count (and its place in "pages of h")
//! fades by `1 − 1/M` as the next one comes, so a site whose on-topic pages
//! run out, or whose first pages matched the keywords by chance, loses its
//! share of the crawl within a few M pages. The global mean ḡ is over all
//! pages alike.
//!
//! # URL relevance
//!
//! The words of a URL's path (lower-cased runs of letters, at least two
//! long; digits, file extensions and the same word twice count once) are
//! the features of the crawl's learned link scorer ([`LinkScorer`], an
//! online logistic regression): every observed page teaches it its path
//! words and whether it was on-topic, and a link's URL relevance is the
//! scorer's estimate, 0..1, that the page behind it is on-topic:
//!
//! ```text
//! url_relevance(u) = σ(b + Σ over u's path words w of weight(w) / sqrt(words of u))
//! ```
//!
//! so once pages under `/reference/api/pandas.Series.str.*` turn out
//! on-topic, their siblings rise, and so do the same file's pages in the
//! other languages of a manual. The frontier re-scores a host's queued
//! URLs as the scorer learns ([`crate::frontier::Frontier::rescore`]):
//! links found before the evidence was in rise too. Link text is scored
//! separately (anchor and context, in [`super::Focus::link_relevance`]);
//! URL words add what the site's naming tells.

use std::collections::HashMap;

use url::Url;

use super::scorer::LinkScorer;
use crate::hash::{fnv1a, fnv1a_continue};

/// Pseudo-pages of the global mean in a host's relevance.
pub const HOST_PRIOR_PAGES: f64 = 8.0;
/// Words of a path that are scored (the rest are ignored).
const MAX_WORDS: usize = 16;
/// Path words that name a file type or an index, never a topic.
const STOP_WORDS: &[&str] = &[
    "html", "htm", "xhtml", "php", "asp", "aspx", "jsp", "cgi", "shtml", "index", "www", "en", "us",
];

/// A running count of on-topic pages (as a sum) and of pages; with a
/// `keep` factor below 1 each page's count fades by it as the next comes
/// (`weight` counts the faded pages).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Tally {
    sum: f64,
    weight: f64,
    pages: u32,
}

impl Tally {
    fn add(&mut self, c: f64, keep: f64) {
        self.sum = self.sum * keep + c;
        self.weight = self.weight * keep + 1.0;
        self.pages = self.pages.saturating_add(1);
    }

    fn shrunk(&self, prior_pages: f64, prior_mean: f64) -> f64 {
        (self.sum + prior_pages * prior_mean) / (self.weight + prior_pages)
    }
}

/// Bins of the relevance histogram (over `sqrt(relevance)`, so that the
/// low relevances most pages have are finely resolved).
const BINS: usize = 1024;
/// Pages seen before the quantile threshold applies.
pub const MIN_QUANTILE_PAGES: u32 = 20;

/// Online host and URL-word relevance of a focused crawl, and its on-topic
/// threshold (see the module docs).
#[derive(Debug, Clone)]
pub struct Evidence {
    on_topic: f64,
    quantile: f64,
    /// Pages per relevance bin ([`BINS`]).
    hist: Vec<u32>,
    /// The threshold as of the last page observed ([`Evidence::threshold`]).
    threshold: f64,
    /// What a host's earlier pages keep of their weight as each new one is
    /// observed: `1 − 1 / focus.host_memory`, or 1 (every page alike).
    host_keep: f64,
    all: Tally,
    hosts: HashMap<String, Tally>,
    scorer: LinkScorer,
}

/// The distinct topic words of a URL's path (hashed), at most [`MAX_WORDS`].
fn path_words(url: &Url, out: &mut Vec<u64>) {
    path_words_of(url.path(), out);
}

/// The path of a serialized URL (`scheme://authority/path?query#fragment`).
fn serialized_path(url: &str) -> &str {
    let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
    let rest = rest.find('/').map_or("", |i| &rest[i..]);
    rest.find(['?', '#']).map_or(rest, |i| &rest[..i])
}

/// [`path_words`] of a path: ASCII words are lower-cased as they are
/// hashed (no allocation).
fn path_words_of(path: &str, out: &mut Vec<u64>) {
    out.clear();
    for word in path.split(|c: char| !c.is_alphabetic()).filter(|w| w.len() >= 2) {
        if STOP_WORDS.iter().any(|s| s.eq_ignore_ascii_case(word)) {
            continue;
        }
        let h = if word.is_ascii() {
            word.bytes()
                .fold(fnv1a(b""), |h, b| fnv1a_continue(h, &[b.to_ascii_lowercase()]))
        } else {
            fnv1a(word.to_lowercase().as_bytes())
        };
        if !out.contains(&h) {
            out.push(h);
            if out.len() == MAX_WORDS {
                break;
            }
        }
    }
}

fn bin(relevance: f64) -> usize {
    ((relevance.clamp(0.0, 1.0).sqrt() * BINS as f64) as usize).min(BINS - 1)
}

impl Evidence {
    /// No evidence yet; pages are judged against `on_topic` (the
    /// `focus.on_topic` threshold, > 0) and, with `quantile` in 0..1
    /// (`focus.on_topic_quantile`), against that quantile of the relevance
    /// of the pages seen so far (module docs).
    pub fn new(on_topic: f64, quantile: f64) -> Evidence {
        Evidence::with_host_memory(on_topic, quantile, 0)
    }

    /// [`Evidence::new`], with a host's relevance taken over about its last
    /// `host_memory` pages (`focus.host_memory`; 0 = all its pages alike).
    pub fn with_host_memory(on_topic: f64, quantile: f64, host_memory: u32) -> Evidence {
        let on_topic = if on_topic > 0.0 { on_topic } else { 1.0 };
        Evidence {
            on_topic,
            quantile: if quantile.is_finite() {
                quantile.clamp(0.0, 1.0)
            } else {
                0.0
            },
            hist: vec![0; BINS],
            threshold: on_topic,
            host_keep: if host_memory == 0 {
                1.0
            } else {
                1.0 - 1.0 / f64::from(host_memory)
            },
            all: Tally::default(),
            hosts: HashMap::new(),
            scorer: LinkScorer::new(),
        }
    }

    /// The relevance at which a page counts as on-topic now: `on_topic`, or
    /// the lower bound of the relevance bin of the `quantile` of the pages
    /// seen so far when that is lower and above 0 (and at least
    /// [`MIN_QUANTILE_PAGES`] were seen).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    fn update_threshold(&mut self) {
        self.threshold = self.on_topic;
        if self.quantile <= 0.0 || self.all.pages < MIN_QUANTILE_PAGES {
            return;
        }
        let rank = (self.quantile * f64::from(self.all.pages)).ceil() as u64;
        let mut seen = 0u64;
        for (i, &n) in self.hist.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                let low = (i as f64 / BINS as f64).powi(2);
                if low > 0.0 && low < self.on_topic {
                    self.threshold = low;
                }
                return;
            }
        }
    }

    /// Whether a page of this relevance is on-topic ([`Evidence::threshold`]).
    pub fn on_topic(&self, relevance: f64) -> bool {
        relevance > 0.0 && relevance >= self.threshold
    }

    /// Learn from one parsed page of `host` at `url` with this relevance;
    /// `duplicate`: the page is an exact or near duplicate of a page fetched
    /// before. A duplicate adds its relevance to the threshold's histogram
    /// but counts as not on-topic for its host and its URL words: what a
    /// host yields is new on-topic pages, and a manual whose untranslated
    /// pages copy its English ones yields no more for them.
    pub fn observe(&mut self, url: &Url, host: &str, relevance: f64, duplicate: bool) {
        let relevance = if relevance.is_finite() { relevance } else { 0.0 };
        self.hist[bin(relevance)] += 1;
        let c = if !duplicate && self.on_topic(relevance) {
            1.0
        } else {
            0.0
        };
        self.all.add(c, 1.0);
        let keep = self.host_keep;
        match self.hosts.get_mut(host) {
            Some(t) => t.add(c, keep),
            None => {
                let mut t = Tally::default();
                t.add(c, keep);
                self.hosts.insert(host.to_string(), t);
            }
        }
        let mut words = Vec::new();
        path_words(url, &mut words);
        self.scorer.update(&words, c > 0.0);
        self.update_threshold();
    }

    /// The share of on-topic pages among all pages observed (0 before the first).
    pub fn mean(&self) -> f64 {
        if self.all.pages == 0 {
            0.0
        } else {
            self.all.sum / f64::from(self.all.pages)
        }
    }

    /// Pages observed.
    pub fn pages(&self) -> u32 {
        self.all.pages
    }

    /// Every host observed, with its relevance.
    pub fn host_relevances(&self) -> impl Iterator<Item = (&str, f64)> + '_ {
        self.hosts.keys().map(|h| (h.as_str(), self.host_relevance(h)))
    }

    /// The host's relevance, 0..1 (module docs).
    pub fn host_relevance(&self, host: &str) -> f64 {
        let g = self.mean();
        self.hosts.get(host).map_or(g, |t| t.shrunk(HOST_PRIOR_PAGES, g))
    }

    /// The URL's relevance from its path words, 0..1: the link scorer's
    /// estimate (module docs); `buf` is scratch space reused across calls.
    pub fn url_relevance(&self, url: &Url, buf: &mut Vec<u64>) -> f64 {
        path_words(url, buf);
        self.scorer.predict(buf)
    }

    /// [`Evidence::url_relevance`] of a serialized URL (a queued URL's
    /// canonical form), without parsing it.
    pub fn url_relevance_of(&self, url: &str, buf: &mut Vec<u64>) -> f64 {
        path_words_of(serialized_path(url), buf);
        self.scorer.predict(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn path_words_skip_digits_extensions_and_repeats() {
        let mut w = Vec::new();
        path_words(&u("http://h/Library/re.html"), &mut w);
        assert_eq!(w, vec![fnv1a(b"library"), fnv1a(b"re")], "html is a file type");
        path_words(&u("http://h/api/pandas.Series.str.replace/api/2024/index.htm"), &mut w);
        let want: Vec<u64> = ["api", "pandas", "series", "str", "replace"]
            .iter()
            .map(|s| fnv1a(s.as_bytes()))
            .collect();
        assert_eq!(w, want);
        // Serialized URLs give the same words as parsed ones.
        let mut v = Vec::new();
        for s in ["http://h:8/Api/Straße/x.html?q=regex#frag", "http://h", "http://h/?a/b"] {
            path_words(&u(s), &mut w);
            path_words_of(serialized_path(u(s).as_str()), &mut v);
            assert_eq!(w, v, "{s}");
        }
    }

    #[test]
    fn host_relevance_is_a_shrunk_mean() {
        let mut e = Evidence::new(0.1, 0.0);
        assert_eq!(e.host_relevance("a"), 0.0, "no evidence: 0");
        assert!(e.on_topic(0.1) && !e.on_topic(0.05) && !e.on_topic(f64::NAN));
        for i in 0..8 {
            e.observe(&u(&format!("http://a/p{i}")), "a", 0.2, false);
            e.observe(&u(&format!("http://b/p{i}")), "b", 0.0, false);
        }
        let g = e.mean();
        assert!((g - 0.5).abs() < 1e-12);
        // (8 × 1 + 8 × 0.5) / 16 and (0 + 8 × 0.5) / 16.
        assert!((e.host_relevance("a") - 0.75).abs() < 1e-12);
        assert!((e.host_relevance("b") - 0.25).abs() < 1e-12);
        assert!(
            (e.host_relevance("new") - 0.5).abs() < 1e-12,
            "unseen host: the global mean"
        );
        // Copies of on-topic pages yield nothing new for their host.
        for i in 0..8 {
            e.observe(&u(&format!("http://c/p{i}")), "c", 0.2, true);
        }
        assert_eq!(e.host_relevance("c"), e.host_relevance("b"));
        assert!(e.host_relevance("c") < e.host_relevance("a"));
    }

    #[test]
    fn host_memory_lets_a_host_that_ran_dry_fall_behind() {
        // Host "a" yields 10 on-topic pages, then 30 off-topic ones; host
        // "b" 30 off-topic pages, then 10 on-topic ones. Over all their
        // pages alike both have the same share; over about the last 8
        // pages "a" has run dry and "b" yields.
        let run = |memory: u32| {
            let mut e = Evidence::with_host_memory(0.1, 0.0, memory);
            for i in 0..40 {
                e.observe(
                    &u(&format!("http://a/p{i}")),
                    "a",
                    if i < 10 { 0.2 } else { 0.0 },
                    false,
                );
                e.observe(
                    &u(&format!("http://b/p{i}")),
                    "b",
                    if i >= 30 { 0.2 } else { 0.0 },
                    false,
                );
            }
            (e.host_relevance("a"), e.host_relevance("b"), e.mean())
        };
        let (a, b, g) = run(0);
        assert!((a - b).abs() < 1e-12, "{a} {b}");
        assert!((a - (10.0 + 8.0 * g) / 48.0).abs() < 1e-12);
        let (a, b, g) = run(8);
        assert!(a < g && g < b, "{a} {g} {b}");
        assert!(a < 0.15 && b > 0.45, "{a} {b}");
        // The global mean is over all pages whatever the memory.
        assert!((g - 0.25).abs() < 1e-12);
    }

    #[test]
    fn url_words_rank_siblings_of_on_topic_pages() {
        let mut e = Evidence::new(0.1, 0.0);
        let mut buf = Vec::new();
        for i in 0..20 {
            e.observe(&u(&format!("http://h/api/str/f{i}.html")), "h", 0.3, false);
            for j in 0..4 {
                e.observe(&u(&format!("http://h/api/frame/g{i}x{j}.html")), "h", 0.0, false);
            }
        }
        let sibling = e.url_relevance(&u("http://h/api/str/match.html"), &mut buf);
        let other = e.url_relevance(&u("http://h/api/frame/join.html"), &mut buf);
        let unknown = e.url_relevance(&u("http://h/guide/intro.html"), &mut buf);
        assert!(
            sibling > 0.5 && sibling > unknown && unknown > other,
            "{sibling} {unknown} {other}"
        );
        // The same file in another language of the manual.
        let fr = e.url_relevance(&u("http://h/fr-FR/api/str/f3.html"), &mut buf);
        assert!(fr > unknown, "{fr} {unknown}");
    }

    #[test]
    fn threshold_follows_the_quantile_below_on_topic() {
        let mut e = Evidence::new(0.15, 0.9);
        let h = |i: u32| u(&format!("http://h/p{i}"));
        // 19 pages: too few for the quantile.
        for i in 0..19 {
            e.observe(&h(i), "h", 0.01 * f64::from(i % 10), false);
        }
        assert_eq!(e.threshold(), 0.15);
        // 100 pages, relevance 0.00..0.09 (ten each): the 0.9 quantile is
        // the 90th page, relevance 0.08 (the bin's lower bound, within 1%).
        for i in 19..100 {
            e.observe(&h(i), "h", 0.01 * f64::from(i % 10), false);
        }
        assert!((e.threshold() - 0.08).abs() < 0.001, "{}", e.threshold());
        assert!(e.on_topic(0.085) && !e.on_topic(0.07));
        // Host relevance is the share of on-topic pages: 2 in 10 since the
        // quantile applies.
        assert!(e.mean() > 0.1 && e.mean() <= 0.2, "{}", e.mean());
        // Never above on_topic, and relevance 0 is never on-topic.
        let mut e = Evidence::new(0.05, 0.9);
        for i in 0..100 {
            e.observe(&h(i), "h", 0.5, false);
        }
        assert_eq!(e.threshold(), 0.05);
        let mut z = Evidence::new(0.05, 0.9);
        for i in 0..100 {
            z.observe(&h(i), "h", 0.0, false);
        }
        assert_eq!(z.threshold(), 0.05);
        assert!(!z.on_topic(0.0));
    }
}
