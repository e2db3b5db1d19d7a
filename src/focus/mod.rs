//! Topic relevance for focused crawls (beside the pipeline: called by the
//! crawl loop between [`crate::features`] and the [`crate::frontier`]). A
//! [`Focus`] holds the topic profile and scores pages, links and out-link
//! priorities; an [`Evidence`] (owned by the decider) learns, from the pages
//! scored so far, which hosts and which URL words lead to on-topic pages
//! (`evidence.rs`). The frontier only sees the resulting components of each
//! [`Candidate`](crate::frontier::Candidate) — `relevance`,
//! `host_relevance` and `url_relevance`, each with its `[frontier]` weight —
//! and the tunnelling counter. docs/focus.md measures them on real sites.
//!
//! # Profile
//!
//! `[focus] keywords` and `examples` (HTML or text files) go through the same
//! feature pipeline as pages ([`FeatureExtractor::text_features`] for each
//! keyword, [`FeatureExtractor::features`] for each example), so the profile
//! is stemmed, stop-word free and weighted like a page. Each keyword and each
//! example is L2-normalized before they are summed (a long example does not
//! drown the keywords), and the sum is normalized again.
//!
//! Page relevance reads a keyword of several words as a phrase
//! (`focus.phrases`, on by default): only its pairs of adjacent words (the
//! bigram features pages have too) enter the page profile, so a page full
//! of "time" and "zone" in other senses does not match "time zone", nor one
//! full of "number" match "port number". Link relevance keeps every word:
//! a link's text is a few words ("Time series" leads to time zones), and a
//! word of the phrase there is evidence. docs/focus.md measures both.
//!
//! # Relevance
//!
//! Both are cosines to the profile weighted by inverse document frequency
//! ([`Focus::vector`], taken once per page): each profile feature's weight
//! times `ln(1 + N / (1 + df))`, with N the pages scored so far and df those
//! holding the feature, normalized again. A keyword word that most crawled
//! pages hold ("expression" of "regular expression" on a programming site)
//! then weighs little against one that few hold. Before the first page the
//! keywords' own weights apply.
//!
//! - **page relevance**: cosine similarity of the page's features (the ones
//!   its simhash is made of) to the topic vector, in 0..1, with pivoted
//!   length normalization (Singhal, Buckley and Mitra 1996) when
//!   `focus.length_slope` is below 1: the page's vector norm `|p|` is
//!   replaced by `(1 − s) × pivot + s × |p|`, the pivot being the mean norm
//!   of the pages scored so far, so a page of average length scores its
//!   cosine, a longer one more and a shorter one less than its cosine
//!   (clamped to 1). Cosine alone ranks a long page that discusses the
//!   topic in a few paragraphs below a short one that names it once. The
//!   page is counted in the document frequencies and the pivot. With
//!   `focus.coordination = c` above 0 the result is multiplied by the
//!   share of the keywords the page holds (any of a keyword's page
//!   features: its pairs, or the word of a one-word keyword) to the power
//!   c, the coordination factor of classic vector-space ranking: a page
//!   that names one facet of the topic many times ("pattern matching" of
//!   a language reference, for a regular-expression topic) ranks below one
//!   that touches several ("regex", "character class", "backreference");
//! - **link relevance**: cosine similarity of the features of the anchor
//!   text followed by its context window ([`crate::extract::Link::context`])
//!   to the topic vector. URL tokens are never used.
//!
//! # Out-link priority ([`Focus::out_link`])
//!
//! A page is *on-topic* when its relevance reaches the crawl's threshold
//! ([`Evidence::threshold`]: `on_topic`, or the `on_topic_quantile` of the
//! relevance seen so far when that is lower). Each
//! queued URL carries `tunnel`: off-topic pages on its path since the last
//! on-topic one. An out-link of page P gets the relevance component
//!
//! ```text
//! base      = (parent_weight × rel(P) + anchor_weight × rel(anchor)) / (parent_weight + anchor_weight)
//! tunnel    = 0 if P is on-topic, else tunnel(P) + 1
//! allowance = component(P) × (1 − tunnel / (tunnel_distance + 1))   if P is off-topic and tunnel ≤ tunnel_distance, else 0
//! component = max(base, allowance)
//! ```
//!
//! so a path that leaves the topic keeps a decaying share of the priority it
//! had, for at most `tunnel_distance` off-topic pages (shark-search style
//! inheritance). A URL found through several links keeps the highest
//! component and that link's `tunnel` (the frontier raises it when a better
//! link is offered). With `min_relevance > 0`, links of a page below it whose
//! `tunnel` would exceed `tunnel_distance` are not enqueued at all. Links of a
//! duplicate page get component 0: their duplicate penalty stays whole,
//! because a copy of an on-topic page is no reason to crawl more copies.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

mod evidence;
mod scorer;

pub use evidence::Evidence;

/// URLs of the frontier re-scored per page judged, on average
/// ([`crate::frontier::Frontier::rescore`]): each host's in-memory window is
/// re-scored in full once its pages (and its turns) earned as many
/// re-scorings as it holds URLs.
pub const RESCORE_PER_PAGE: usize = 32;

use crate::config::{FocusSettings, Settings};
use crate::extract;
use crate::features::{FeatureExtractor, Features};

/// Link texts whose features each analysis thread keeps
/// ([`Focus::link_relevance`]); the cache starts over when full.
pub const LINK_TEXT_CACHE: usize = 4096;

thread_local! {
    /// Features of recent link texts, by a hash of profile id, language and text.
    static LINK_FEATURES: std::cell::RefCell<std::collections::HashMap<u64, Vec<(u64, f32)>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// A `[focus]` topic that cannot be used: an unreadable example file, or a
/// topic with no features (a usage error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FocusError(String);

/// The topic profile and the relevance rules of a focused crawl.
#[derive(Debug)]
pub struct Focus {
    fx: FeatureExtractor,
    /// `(feature hash, weight)`, sorted by hash, unit L2 norm: every word
    /// and pair of the keywords, for link relevance.
    profile: Vec<(u64, f32)>,
    /// The weight of each profile feature for page relevance, unit L2 norm:
    /// with `phrases`, a keyword of several words has its pairs only.
    page_weights: Vec<f32>,
    /// For each profile feature, the keywords (bits, by their place in
    /// `focus.keywords`, the first 64) whose page features it is among,
    /// for the coordination factor of [`Focus::page_relevance`].
    keyword_bits: Vec<u64>,
    /// Keywords the coordination factor counts (those with a bit).
    keywords: u32,
    /// The factor's power (`focus.coordination`; 0 = no factor).
    coordination: f64,
    /// Pages scored so far that hold each profile feature (its document
    /// frequency, for the IDF weights of [`Focus::vector`]).
    df: Vec<AtomicU32>,
    /// Pages scored so far.
    docs: AtomicU32,
    /// Sum of the vector norms of the pages scored so far (`f64` bits), for
    /// the pivot of the length normalization.
    norm_sum: AtomicU64,
    /// Tells this profile's entries in the per-thread link text cache from
    /// another's (two crawls in one process may extract features differently).
    id: u64,
    settings: FocusSettings,
}

/// The next [`Focus::id`].
static NEXT_FOCUS_ID: AtomicU64 = AtomicU64::new(1);

/// The topic profile as it is weighted now ([`Focus::vector`]), for link
/// relevance (every word and pair of the keywords) and for page relevance
/// (with `focus.phrases`, a keyword of several words by its pairs only):
/// each sorted by hash, unit L2 norm.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicVector(Vec<(u64, f32)>, Vec<(u64, f32)>);

/// What the out-link rule needs to know about the page a link was found on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Parent {
    /// The page's relevance ([`Focus::page_relevance`]).
    pub relevance: f64,
    /// The relevance component the page was queued with.
    pub component: f64,
    /// Off-topic hops on the page's path (its queued `tunnel`).
    pub tunnel: u32,
    /// The page is an exact or near duplicate.
    pub duplicate: bool,
    /// The page is on-topic ([`Evidence::on_topic`]).
    pub on_topic: bool,
}

/// An out-link's relevance component and tunnelling counter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkScore {
    /// The `relevance` priority component, 0..1.
    pub relevance: f64,
    /// Off-topic pages on the path to the link since the last on-topic one.
    pub tunnel: u32,
}

/// Unit-normalize a sorted feature vector in place (no-op on a zero vector).
fn normalize(v: &mut [(u64, f32)]) {
    let norm = v.iter().map(|&(_, w)| f64::from(w) * f64::from(w)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for (_, w) in v.iter_mut() {
            *w = (f64::from(*w) / norm) as f32;
        }
    }
}

/// Add `b` (sorted by hash, unit norm) into the sorted accumulator `acc`.
fn add_into(acc: &mut Vec<(u64, f32)>, b: &[(u64, f32)]) {
    let mut out = Vec::with_capacity(acc.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < acc.len() || j < b.len() {
        match (acc.get(i), b.get(j)) {
            (Some(&(ha, wa)), Some(&(hb, wb))) if ha == hb => {
                out.push((ha, wa + wb));
                i += 1;
                j += 1;
            }
            (Some(&(ha, wa)), Some(&(hb, _))) if ha < hb => {
                out.push((ha, wa));
                i += 1;
            }
            (Some(&a), None) => {
                out.push(a);
                i += 1;
            }
            (_, Some(&b)) => {
                out.push(b);
                j += 1;
            }
            (None, None) => break,
        }
    }
    *acc = out;
}

/// Cosine similarity of a sorted feature vector to a sorted unit vector
/// (merge join; 0 when either is empty).
fn cosine_to_unit(items: &[(u64, f32)], unit: &[(u64, f32)]) -> f64 {
    let (dot, norm) = dot_and_norm(items, unit);
    if norm > 0.0 {
        (dot / norm).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The dot product of a sorted feature vector with a sorted unit vector
/// (merge join), and the feature vector's L2 norm.
fn dot_and_norm(items: &[(u64, f32)], unit: &[(u64, f32)]) -> (f64, f64) {
    let (mut dot, mut norm) = (0.0f64, 0.0f64);
    let mut j = 0;
    for &(h, w) in items {
        let w = f64::from(w);
        norm += w * w;
        while j < unit.len() && unit[j].0 < h {
            j += 1;
        }
        if j < unit.len() && unit[j].0 == h {
            dot += w * f64::from(unit[j].1);
        }
    }
    (dot, norm.sqrt())
}

impl Focus {
    /// The profile of `settings.focus` (keywords and example files, with the
    /// `[features]` pipeline). Errors name an unreadable example, or a topic
    /// that yields no feature at all (only stop words or numbers).
    pub fn new(settings: &Settings) -> Result<Focus, FocusError> {
        let fx = FeatureExtractor::new(&settings.features);
        let f = &settings.focus;
        // A keyword's word pairs only (none for a keyword of one word);
        // pages have pairs only when bigrams weigh something.
        let pairs = (f.phrases && settings.features.bigram_weight > 0.0).then(|| {
            let mut s = settings.features.clone();
            s.unigram_weight = 0.0;
            FeatureExtractor::new(&s)
        });
        let mut profile: Vec<(u64, f32)> = Vec::new();
        let mut page_profile: Vec<(u64, f32)> = Vec::new();
        // Each keyword's page features, by hash, with its bit.
        let mut bits: Vec<(u64, u64)> = Vec::new();
        let mut keywords = 0u32;
        for (i, k) in f.keywords.iter().enumerate() {
            let mut v = fx.text_features(k).items;
            normalize(&mut v);
            add_into(&mut profile, &v);
            let page = if let Some(p) = &pairs {
                let mut phrase = p.text_features(k).items;
                if phrase.is_empty() {
                    phrase = v;
                }
                normalize(&mut phrase);
                phrase
            } else {
                v
            };
            if i < 64 && !page.is_empty() {
                bits.extend(page.iter().map(|&(h, _)| (h, 1u64 << i)));
                keywords += 1;
            }
            add_into(&mut page_profile, &page);
        }
        for path in &f.examples {
            let mut v = example_features(&fx, path)?.items;
            if v.is_empty() {
                return Err(FocusError(format!(
                    "focus.examples: {} has no text to learn the topic from",
                    path.display()
                )));
            }
            normalize(&mut v);
            add_into(&mut profile, &v);
            add_into(&mut page_profile, &v);
        }
        if profile.is_empty() {
            return Err(FocusError(
                "focus.keywords: no keyword yields a feature (only stop words or numbers?); give topic words".into(),
            ));
        }
        normalize(&mut profile);
        normalize(&mut page_profile);
        // Every page feature is a profile feature (a keyword's pairs are
        // among its features): its weight beside each of them.
        let page_weights = profile
            .iter()
            .map(|(h, _)| {
                page_profile
                    .binary_search_by_key(h, |p| p.0)
                    .map_or(0.0, |i| page_profile[i].1)
            })
            .collect();
        let keyword_bits = profile
            .iter()
            .map(|(h, _)| bits.iter().filter(|b| b.0 == *h).fold(0, |m, b| m | b.1))
            .collect();
        Ok(Focus {
            fx,
            page_weights,
            keyword_bits,
            keywords,
            coordination: f.coordination,
            df: profile.iter().map(|_| AtomicU32::new(0)).collect(),
            docs: AtomicU32::new(0),
            norm_sum: AtomicU64::new(0f64.to_bits()),
            id: NEXT_FOCUS_ID.fetch_add(1, Ordering::Relaxed),
            profile,
            settings: f.clone(),
        })
    }

    /// Features in the profile.
    pub fn profile_len(&self) -> usize {
        self.profile.len()
    }

    /// The profile weighted by each feature's inverse document frequency
    /// among the pages scored so far (module docs), unit norm: one per page,
    /// for its page and link relevance.
    pub fn vector(&self) -> TopicVector {
        let n = f64::from(self.docs.load(Ordering::Relaxed));
        let idf: Vec<f64> = self
            .df
            .iter()
            .map(|df| (1.0 + n / (1.0 + f64::from(df.load(Ordering::Relaxed)))).ln())
            .collect();
        // The features of nonzero weight, weighted by IDF, unit norm; the
        // weights as given while no page is scored.
        let weighed = |weights: &mut dyn Iterator<Item = f32>| {
            type Weights = Vec<(u64, f32)>;
            let (mut own, mut v): (Weights, Weights) = self
                .profile
                .iter()
                .zip(weights)
                .zip(&idf)
                .filter(|((_, w), _)| *w > 0.0)
                .map(|((&(h, _), w), &idf)| ((h, w), (h, (f64::from(w) * idf) as f32)))
                .unzip();
            normalize(&mut v);
            if v.iter().all(|&(_, w)| w == 0.0) {
                std::mem::swap(&mut v, &mut own);
            }
            v
        };
        let links = weighed(&mut self.profile.iter().map(|p| p.1));
        let pages = weighed(&mut self.page_weights.iter().copied());
        TopicVector(links, pages)
    }

    /// Relevance of a page's features to the topic vector `v` (from
    /// [`Focus::vector`]), 0..1: their cosine with pivoted length
    /// normalization, times the coordination factor (module docs). The
    /// page is counted in the document frequencies of the profile features
    /// it holds and in the pivot.
    pub fn page_relevance(&self, v: &TopicVector, features: &Features) -> f64 {
        let mut j = 0;
        let mut held = 0u64;
        for &(h, _) in &features.items {
            while j < self.profile.len() && self.profile[j].0 < h {
                j += 1;
            }
            if j < self.profile.len() && self.profile[j].0 == h {
                self.df[j].fetch_add(1, Ordering::Relaxed);
                held |= self.keyword_bits[j];
            }
        }
        let coordination = if self.coordination > 0.0 && self.keywords > 0 {
            (f64::from(held.count_ones()) / f64::from(self.keywords)).powf(self.coordination)
        } else {
            1.0
        };
        let (dot, norm) = dot_and_norm(&features.items, &v.1);
        let pages = self.docs.fetch_add(1, Ordering::Relaxed);
        let sum = f64::from_bits(
            self.norm_sum
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some((f64::from_bits(b) + norm).to_bits())
                })
                .unwrap_or_else(|b| b),
        );
        if norm <= 0.0 {
            return 0.0;
        }
        let s = self.settings.length_slope;
        // The pivot before this page (its own norm when it is the first).
        let pivot = if pages == 0 { norm } else { sum / f64::from(pages) };
        let effective = (1.0 - s) * pivot + s * norm;
        if effective > 0.0 {
            (coordination * dot / effective).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// Relevance of a link: cosine similarity of the features of `text` (its
    /// anchor text and context window, see [`Focus::link_text`]) to the
    /// topic vector `v`, stemmed as `language` (the page's,
    /// [`FeatureExtractor::language`]).
    ///
    /// The features of a link text are cached per thread
    /// ([`LINK_TEXT_CACHE`] texts): a site's navigation repeats the same
    /// anchors and context on every page, and the cosine is taken against
    /// the current vector each time.
    pub fn link_relevance(&self, v: &TopicVector, text: &str, language: &str) -> f64 {
        if text.trim().is_empty() {
            return 0.0;
        }
        let key = crate::hash::fnv1a_continue(
            crate::hash::fnv1a_continue(crate::hash::fnv1a(&self.id.to_le_bytes()), language.as_bytes()),
            text.as_bytes(),
        );
        LINK_FEATURES.with(|cache| {
            let mut cache = cache.borrow_mut();
            if let Some(items) = cache.get(&key) {
                return cosine_to_unit(items, &v.0);
            }
            let items = self.fx.text_features_in(text, language).items;
            let r = cosine_to_unit(&items, &v.0);
            if cache.len() >= LINK_TEXT_CACHE {
                cache.clear();
            }
            cache.insert(key, items);
            r
        })
    }

    /// Empty this thread's cache of link text features (for benchmarks of
    /// the first page of a site).
    #[doc(hidden)]
    pub fn clear_link_cache() {
        LINK_FEATURES.with(|cache| cache.borrow_mut().clear());
    }

    /// The text [`Focus::link_relevance`] scores for `link`, written into
    /// `buf` (reused across links): the anchor, then its context.
    pub fn link_text<'a>(&self, link: &extract::Link, buf: &'a mut String) -> &'a str {
        buf.clear();
        buf.push_str(&link.anchor);
        if !link.context.is_empty() {
            buf.push(' ');
            buf.push_str(&link.context);
        }
        buf
    }

    /// The relevance component and tunnelling counter of an out-link of
    /// `parent` whose link relevance is `anchor` (see the module docs); None
    /// when `min_relevance` says the link is not to be enqueued.
    pub fn out_link(&self, parent: Parent, anchor: f64) -> Option<LinkScore> {
        let s = &self.settings;
        let on = parent.on_topic;
        let tunnel = if on { 0 } else { parent.tunnel.saturating_add(1) };
        if s.min_relevance > 0.0 && parent.relevance < s.min_relevance && tunnel > s.tunnel_distance {
            return None;
        }
        if parent.duplicate {
            return Some(LinkScore { relevance: 0.0, tunnel });
        }
        let wsum = s.parent_weight + s.anchor_weight;
        let base = if wsum > 0.0 {
            (s.parent_weight * parent.relevance + s.anchor_weight * anchor) / wsum
        } else {
            0.0
        };
        let allowance = if !on && tunnel <= s.tunnel_distance {
            let keep = 1.0 - f64::from(tunnel) / (f64::from(s.tunnel_distance) + 1.0);
            parent.component.max(0.0) * keep
        } else {
            0.0
        };
        let relevance = base.max(allowance);
        Some(LinkScore {
            relevance: if relevance.is_finite() {
                relevance.clamp(0.0, 1.0)
            } else {
                0.0
            },
            tunnel,
        })
    }
}

/// Features of one example file: HTML unless it ends in `.txt` or `.text`.
fn example_features(fx: &FeatureExtractor, path: &Path) -> Result<Features, FocusError> {
    let bytes = std::fs::read(path).map_err(|e| {
        FocusError(format!(
            "focus.examples: cannot read {}: {e} (paths are relative to the config file)",
            path.display()
        ))
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let plain = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("txt") || e.eq_ignore_ascii_case("text"));
    let doc = if plain {
        extract::extract_plain(&text, fx.max_text_bytes())
    } else {
        extract::extract_html(&text, fx.max_text_bytes())
    };
    Ok(fx.features(&doc, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn focus(keywords: &[&str], extra: &[&str]) -> Focus {
        let mut o: Vec<String> = vec![
            "focus.enabled=true".into(),
            format!(
                "focus.keywords=[{}]",
                keywords.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(",")
            ),
        ];
        o.extend(extra.iter().map(|s| s.to_string()));
        Focus::new(&Settings::from_layers(&[], &o).unwrap()).unwrap()
    }

    #[test]
    fn cosine_matches_a_dense_oracle() {
        let unit = {
            let mut u = vec![(1, 3.0), (5, 4.0), (9, 0.0)];
            normalize(&mut u);
            u
        };
        let items = [(0, 1.0), (1, 2.0), (5, 2.0), (7, 1.0)];
        // dense: a = [1,2,2,1] over hashes 0,1,5,7; u = 0.6 at 1, 0.8 at 5.
        let want = (2.0 * 0.6 + 2.0 * 0.8) / (1.0f64 + 4.0 + 4.0 + 1.0).sqrt();
        assert!((cosine_to_unit(&items, &unit) - want).abs() < 1e-6);
        assert_eq!(cosine_to_unit(&[], &unit), 0.0);
        assert!((cosine_to_unit(&unit, &unit) - 1.0).abs() < 1e-6);
        let mut acc = vec![(1, 1.0), (4, 1.0)];
        add_into(&mut acc, &[(0, 2.0), (4, 1.0), (9, 1.0)]);
        assert_eq!(acc, vec![(0, 2.0), (1, 1.0), (4, 2.0), (9, 1.0)]);
    }

    #[test]
    fn on_topic_text_scores_higher_and_stems_match() {
        let f = focus(&["telescope", "galaxies", "planet orbit"], &[]);
        let v = f.vector();
        let astro = f.link_relevance(&v, "New telescopes find a galaxy with a planet in orbit", "en");
        let cook = f.link_relevance(&v, "Slow roasted garlic and a simple tomato sauce", "en");
        assert!(astro > 0.3 && cook == 0.0, "{astro} {cook}");
        assert_eq!(f.link_relevance(&v, "   ", "en"), 0.0);
        let fx = FeatureExtractor::new(&Settings::default().features);
        let page = fx.text_features("the galaxy and the telescope");
        assert!(f.page_relevance(&v, &page) > f.page_relevance(&v, &fx.text_features("a recipe for bread")));
    }

    /// A keyword of several words is a phrase to page relevance: a page
    /// that uses its words in other senses, apart, does not match it; one
    /// word alone is itself. A link's short text matches its words.
    #[test]
    fn a_keyword_of_several_words_is_a_phrase_to_page_relevance() {
        let fx = FeatureExtractor::new(&Settings::default().features);
        let apart = fx.text_features("the time it takes to load the zone file, and the time of the last load");
        let phrase = fx.text_features("convert the time to another time zone");
        let f = focus(&["time zone", "UTC"], &[]);
        let v = f.vector();
        assert_eq!(f.page_relevance(&v, &apart), 0.0);
        assert!(f.page_relevance(&v, &phrase) > 0.0);
        assert!(f.link_relevance(&v, "UTC offsets", "en") > 0.0, "a keyword of one word");
        assert!(
            f.link_relevance(&v, "Time series", "en") > 0.0,
            "a word of a phrase, in a link"
        );
        let words = focus(&["time zone", "UTC"], &["focus.phrases=false"]);
        assert!(
            words.page_relevance(&words.vector(), &apart) > 0.0,
            "each word on its own"
        );
        // Without bigram features pages have no pairs: words count.
        let no_pairs = focus(&["time zone", "UTC"], &["features.bigram_weight=0"]);
        assert!(no_pairs.page_relevance(&no_pairs.vector(), &apart) > 0.0);
    }

    #[test]
    fn coordination_ranks_pages_by_the_keywords_they_hold() {
        let fx = FeatureExtractor::new(&Settings::default().features);
        // One keyword, many times, against two of them once each in a page
        // about something else.
        let one = fx.text_features(&"pattern matching of enums. ".repeat(8));
        let two = fx.text_features(&format!(
            "the build script reads a regex from the manifest, then checks each backreference. {}",
            (0..200).map(|i| format!("step{i} ")).collect::<String>()
        ));
        let keywords = [
            "regular expression",
            "regex",
            "pattern matching",
            "backreference",
            "character class",
        ];
        let rank = |coordination: &str| {
            let f = focus(&keywords, &[coordination, "focus.length_slope=1.0"]);
            let v = f.vector();
            (f.page_relevance(&v, &one), f.page_relevance(&v, &two))
        };
        let (one_plain, two_plain) = rank("focus.coordination=0.0");
        assert!(one_plain > two_plain, "{one_plain} {two_plain}");
        let (one_coord, two_coord) = rank("focus.coordination=1.0");
        // The factor is the share of the five keywords held: 1/5 and 2/5.
        assert!((one_coord - one_plain / 5.0).abs() < 1e-9, "{one_coord} {one_plain}");
        assert!((two_coord - two_plain * 2.0 / 5.0).abs() < 1e-9);
        assert!(two_coord > one_coord, "{one_coord} {two_coord}");
    }

    #[test]
    fn common_profile_words_weigh_less_as_pages_are_scored() {
        // Each word of a keyword on its own, to watch "expression" weigh less.
        let f = focus(&["regular expression", "regex"], &["focus.phrases=false"]);
        let fx = FeatureExtractor::new(&Settings::default().features);
        let before = f.vector();
        assert_eq!(
            before,
            TopicVector(f.profile.clone(), f.profile.clone()),
            "no page yet: the keywords' own weights"
        );
        // "expression" is on every page, "regex" on one in ten.
        for i in 0..50 {
            let text = if i % 10 == 0 {
                "an expression and a regex"
            } else {
                "an expression of time"
            };
            f.page_relevance(&f.vector(), &fx.text_features(text));
        }
        let after = f.vector();
        let weight = |v: &TopicVector, word: &str| {
            let h = fx.text_features(word).items[0].0;
            v.0.iter().find(|&&(k, _)| k == h).map_or(0.0, |&(_, w)| w)
        };
        let ratio = |v: &TopicVector| weight(v, "regex") / weight(v, "expression");
        assert!(
            ratio(&after) > 2.0 * ratio(&before),
            "{} {}",
            ratio(&before),
            ratio(&after)
        );
        // A page of the common word only now scores lower than before.
        let common = fx.text_features("an expression");
        assert!(f.link_relevance(&after, "an expression", "en") < f.link_relevance(&before, "an expression", "en"));
        assert!(f.page_relevance(&after, &common) < f.page_relevance(&before, &common));
    }

    #[test]
    fn pivoted_length_normalization_lifts_long_pages_that_discuss_the_topic() {
        let fx = FeatureExtractor::new(&Settings::default().features);
        let filler = |n: usize, from: usize| -> String {
            (from..from + n)
                .map(|i| {
                    format!(
                        "word{} ",
                        char::from(b'a' + (i % 26) as u8).to_string().repeat(1 + i / 26)
                    )
                })
                .collect()
        };
        // A short page that names the topic once, and a long one that
        // discusses it in three places.
        let short = fx.text_features(&format!("regex {}", filler(10, 0)));
        let long = fx.text_features(&format!(
            "regex {} regex {} regex {}",
            filler(150, 100),
            filler(150, 300),
            filler(150, 500)
        ));
        let medium = fx.text_features(&filler(60, 700));
        let rel = |slope: f64, page: &Features| {
            let f = focus(&["regex"], &[&format!("focus.length_slope={slope}")]);
            // The pivot: pages of about the medium page's length.
            for _ in 0..5 {
                f.page_relevance(&f.vector(), &medium);
            }
            f.page_relevance(&f.vector(), page)
        };
        let v = focus(&["regex"], &[]).vector();
        assert!(
            (rel(1.0, &short) - cosine_to_unit(&short.items, &v.0)).abs() < 1e-9,
            "slope 1 is the cosine"
        );
        assert!(rel(1.0, &short) > rel(1.0, &long), "cosine favours the short page");
        assert!(
            rel(0.3, &long) > rel(0.3, &short),
            "{} {}",
            rel(0.3, &long),
            rel(0.3, &short)
        );
        assert!(rel(0.3, &long) > rel(1.0, &long) && rel(0.3, &short) < rel(1.0, &short));
    }

    #[test]
    fn out_link_rule_tunnels_decays_and_cuts() {
        let f = focus(&["star"], &["focus.on_topic=0.2", "focus.tunnel_distance=2"]);
        let on = Parent {
            relevance: 0.5,
            component: 0.1,
            tunnel: 3,
            duplicate: false,
            on_topic: true,
        };
        let s = f.out_link(on, 0.1).unwrap();
        assert_eq!(s.tunnel, 0, "an on-topic parent resets the counter");
        assert!((s.relevance - 0.3).abs() < 1e-9, "{s:?}");
        // Off-topic parent: the allowance decays with the hop count, then vanishes.
        let mut p = Parent {
            relevance: 0.0,
            component: 0.6,
            tunnel: 0,
            duplicate: false,
            on_topic: false,
        };
        let one = f.out_link(p, 0.0).unwrap();
        assert_eq!(one.tunnel, 1);
        assert!((one.relevance - 0.4).abs() < 1e-9, "{one:?}");
        p.tunnel = 1;
        p.component = one.relevance;
        let two = f.out_link(p, 0.0).unwrap();
        assert!(two.tunnel == 2 && two.relevance < one.relevance && two.relevance > 0.0);
        p.tunnel = 2;
        assert_eq!(f.out_link(p, 0.0).unwrap().relevance, 0.0, "beyond tunnel_distance");
        // A duplicate parent passes no relevance on.
        assert_eq!(
            f.out_link(Parent { duplicate: true, ..on }, 0.9).unwrap().relevance,
            0.0
        );
        // Hard threshold: nothing beyond the tunnelling distance.
        let hard = focus(&["star"], &["focus.min_relevance=0.1", "focus.tunnel_distance=1"]);
        p.tunnel = 0;
        assert!(hard.out_link(p, 0.0).is_some());
        p.tunnel = 1;
        assert!(hard.out_link(p, 0.9).is_none());
        assert!(hard
            .out_link(
                Parent {
                    relevance: 0.5,
                    on_topic: true,
                    ..p
                },
                0.0
            )
            .is_some());
    }

    #[test]
    fn bad_profiles_are_errors() {
        let o = |k: &str| vec!["focus.enabled=true".to_string(), format!("focus.keywords={k}")];
        let s = Settings::from_layers(&[], &o(r#"["the", "2024"]"#)).unwrap();
        assert!(Focus::new(&s).unwrap_err().to_string().contains("no keyword"));
        let mut s = Settings::from_layers(&[], &o(r#"["star"]"#)).unwrap();
        s.focus.examples = vec!["/nonexistent/example.html".into()];
        assert!(Focus::new(&s).unwrap_err().to_string().contains("cannot read"));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, "Stars and galaxies seen through a telescope.").unwrap();
        s.focus.examples = vec![p];
        let f = Focus::new(&s).unwrap();
        assert!(f.profile_len() > 3 && f.link_relevance(&f.vector(), "telescope", "en") > 0.1);
    }
}
