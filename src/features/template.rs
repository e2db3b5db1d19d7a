//! Per-host template learning: the text blocks that recur on many pages
//! of one host (or of one language section of it), whose weight
//! [`super::FeatureExtractor::features`] then cuts.

use hashbrown::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FastMap, FastSet};
use crate::config::FeatureSettings;
use crate::extract::Extracted;
use crate::hash::{feature_hash, fmix64};

/// The hash of a text block for template learning: [`feature_hash`] of the
/// block text (whitespace already collapsed by extraction).
pub fn block_hash(text: &str) -> u64 {
    feature_hash(text.as_bytes())
}

/// [`block_hash`] of each block of `doc`, in order.
pub fn block_hashes(doc: &Extracted) -> Vec<u64> {
    doc.blocks.iter().map(|b| block_hash(&b.text)).collect()
}

/// ISO 639-1 language codes, sorted: a leading path segment made of one
/// (with an optional region or script subtag) names a language section.
const ISO_639_1: &[&str] = &[
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh", "bi", "bm", "bn",
    "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da", "de", "dv", "dz", "ee", "el", "en",
    "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr", "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he",
    "hi", "ho", "hr", "ht", "hu", "hy", "hz", "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv",
    "ka", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li",
    "ln", "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb", "nd", "ne",
    "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi", "pl", "ps", "pt", "qu", "rm",
    "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk", "sl", "sm", "sn", "so", "sq", "sr", "ss", "st",
    "su", "sv", "sw", "ta", "te", "tg", "th", "ti", "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk",
    "ur", "uz", "ve", "vi", "vo", "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
];

/// The key a page's template is learned under: its *site* — the host, or
/// the host and its language section when it has one (the `<html lang>`
/// tag, else a leading path segment that is a language tag: `/fr/`,
/// `/pt-BR/`, `/zh_CN/`, the usual layout of a translated site) — and,
/// when the page sits in a directory below that, its *section*: the first
/// such directory (`/book/`, `/api/`).
///
/// Each language's navigation repeats across that language's pages only,
/// so a host of many languages learns each one's template apart: a page
/// whose content was left untranslated is then weighed by its content
/// alone, like the original it copies. Likewise a host that serves several
/// sites side by side (a book, an API reference and a cookbook under one
/// documentation root) has chrome that repeats within one section but on
/// too small a share of the host to be learned there: the template of a
/// page is its site's template together with its section's
/// ([`TemplateLearner`]).
///
/// The key is the site, then `|` and the section (which starts with `/`)
/// when there is one; [`TemplateLearner`] takes it apart again.
pub fn template_key(host: &str, path: &str, lang: Option<&str>) -> String {
    let mut segs = path.trim_start_matches('/').split('/').peekable();
    let mut lang_seg = None;
    if let Some(first) = segs.peek().copied() {
        // A leading language directory (more path follows).
        if is_language_tag(first) && path.trim_start_matches('/').contains('/') {
            lang_seg = Some(first.to_ascii_lowercase().replace('_', "-"));
            segs.next();
        }
    }
    let section = lang
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_ascii_lowercase)
        .or(lang_seg);
    let mut key = match section {
        Some(s) => format!("{host}|{s}"),
        None => host.to_string(),
    };
    // The first directory below the site, when more path follows it.
    if let Some(dir) = segs.next().filter(|d| !d.is_empty()) {
        if segs.peek().is_some() {
            key.push_str("|/");
            key.push_str(dir);
            key.push('/');
        }
    }
    key
}

/// The site of a [`template_key`]: the key without its section.
pub fn template_site(key: &str) -> &str {
    split_key(key).0
}

/// The site part of a [`template_key`] and its section key (the whole key)
/// when it has a section.
fn split_key(key: &str) -> (&str, Option<&str>) {
    match key.find("|/") {
        Some(i) => (&key[..i], Some(key)),
        None => (key, None),
    }
}

/// `xx`, `xx-YY`, `xx_YY`, `xx-Hant` or `xx-419`, with `xx` an ISO 639-1 code.
fn is_language_tag(seg: &str) -> bool {
    let (primary, rest) = match seg.find(['-', '_']) {
        Some(i) => (&seg[..i], Some(&seg[i + 1..])),
        None => (seg, None),
    };
    let primary = primary.to_ascii_lowercase();
    if ISO_639_1.binary_search(&primary.as_str()).is_err() {
        return false;
    }
    match rest {
        None => true,
        Some(r) => {
            (r.len() == 2 && r.bytes().all(|b| b.is_ascii_alphabetic()))
                || (r.len() == 3 && r.bytes().all(|b| b.is_ascii_digit()))
                || (r.len() == 4 && r.bytes().all(|b| b.is_ascii_alphabetic()))
        }
    }
}

/// A snapshot of one host's learned template: the blocks repeated on at
/// least `template_min_pages` pages and on at least `template_min_fraction`
/// of the pages of the host seen so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostTemplate {
    /// Block hashes ([`block_hash`]) of template blocks (hashbrown's set,
    /// with its randomly seeded default hasher: page text chooses these
    /// hashes, and the set is probed for every block of every comparison).
    pub blocks: HashSet<u64>,
    /// Weight multiplier of a template block (`template_weight`).
    pub weight: f32,
    /// Pages of the host observed when the snapshot was taken.
    pub pages: u32,
    /// [`TemplateLearner::version`] of the host when the snapshot was taken.
    pub version: u64,
}

impl HostTemplate {
    /// The multiplier of a block with this text: `weight` if it is a
    /// template block, else 1.
    pub fn block_weight(&self, text: &str) -> f32 {
        self.hash_weight(block_hash(text))
    }

    /// [`HostTemplate::block_weight`] of a block with this [`block_hash`].
    pub fn hash_weight(&self, hash: u64) -> f32 {
        if self.blocks.contains(&hash) {
            self.weight
        } else {
            1.0
        }
    }

    /// Number of template blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// No template blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// Per-host block statistics.
#[derive(Default)]
struct HostStats {
    pages: u32,
    /// Block hash -> pages it was seen on.
    counts: FastMap<u64, u32>,
    /// Blocks whose count was at least the host's `need` when last counted,
    /// less those `need` has since overtaken: the template's blocks.
    candidates: FastSet<u64>,
    /// XOR of the current template's block hashes (detects changes).
    signature: u64,
    /// Times the template's block set changed.
    version: u64,
    /// The template built for `version` (see [`TemplateLearner::template_shared`]).
    snapshot: Option<Arc<HostTemplate>>,
    /// For a section: its union with its site's template, and the site's
    /// version it was built with.
    merged: Option<(u64, Arc<HostTemplate>)>,
}

impl HostStats {
    /// Count a block needs to be template now.
    fn need(&self, min_pages: u32, min_fraction: f64) -> u32 {
        ((min_fraction * f64::from(self.pages)).ceil() as u32).max(min_pages)
    }

    /// When `adding` more counts would pass [`MAX_BLOCKS_PER_KEY`], drop
    /// the blocks seen on the fewest pages (counts 1..=floor, the smallest
    /// floor below `need` that leaves at most half the cap) so that pruning
    /// runs once per many pages, and before the table would grow.
    fn prune(&mut self, need: u32, adding: usize) {
        if self.counts.len() + adding <= MAX_BLOCKS_PER_KEY {
            return;
        }
        // How many blocks have each count below `need` (counts past the
        // histogram's end are never dropped).
        let span = need.min(256) as usize;
        let mut hist = vec![0usize; span];
        for &c in self.counts.values() {
            if let Some(n) = hist.get_mut(c as usize) {
                *n += 1;
            }
        }
        let mut left = self.counts.len();
        let mut floor = 0;
        for (c, n) in hist.iter().enumerate().skip(1) {
            if left <= MAX_BLOCKS_PER_KEY / 2 {
                break;
            }
            left -= n;
            floor = c as u32;
        }
        if floor > 0 {
            // Into a new table: one that kept the dropped entries' slots
            // (removal leaves tombstones) would double at its next insert.
            let mut kept = FastMap::with_capacity_and_hasher(MAX_BLOCKS_PER_KEY, Default::default());
            kept.extend(self.counts.drain().filter(|&(_, c)| c > floor));
            self.counts = kept;
        }
    }
}

/// A section's template needs its blocks on this many of its pages at
/// least (`template_min_pages` if larger)...
const SECTION_MIN_PAGES: u32 = 16;
/// ...and on this share of them (`template_min_fraction` if larger): the
/// chrome of a section is on nearly all of its pages, while a block of
/// content shared by a few pages of a small section would otherwise come
/// and go as the crawl proceeds, in another order on a mirror.
const SECTION_MIN_FRACTION: f64 = 0.6;

/// Blocks counted per site or section at most: past it the rarest blocks
/// below the key's `need` are dropped ([`HostStats::prune`]), so a key's
/// counts take at most 140 KB however many pages it has (7,168 entries are
/// what a hash table of 8,192 slots holds before it doubles).
/// Most blocks of a page are its own text, seen once; a block that later
/// recurs on every page starts counting again, one page later per count
/// it lost, and a block at `need` (the template's) is never dropped.
const MAX_BLOCKS_PER_KEY: usize = 8_192 / 8 * 7;
const SHARDS: usize = 16;

/// Pages a young site's block is seen on to count as its chrome
/// ([`TemplateLearner::young_recurring`]): more than the two pages a
/// comparison holds.
pub const RECURRING_PAGES: u32 = 3;

/// Learns each host's template from the pages crawled so far: which text
/// blocks recur on many pages of the same host. Thread-safe (sharded
/// mutexes; a lock is held only for one page's block updates).
///
/// Early in a crawl a host has no template yet: [`TemplateLearner::template`]
/// returns `None` until the host has `template_min_pages` pages, and a block
/// is only cut once it was seen on that many pages, so the first pages of a
/// host are weighted by structure alone (nav, header, footer, aside).
pub struct TemplateLearner {
    enabled: bool,
    min_pages: u32,
    min_fraction: f64,
    weight: f32,
    shards: Vec<Mutex<FastMap<String, HostStats>>>,
}

impl std::fmt::Debug for TemplateLearner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateLearner")
            .field("enabled", &self.enabled)
            .field("min_pages", &self.min_pages)
            .field("min_fraction", &self.min_fraction)
            .finish()
    }
}

impl TemplateLearner {
    /// A learner with the `[features]` template settings (learning off when
    /// `template_learning = false`: `observe` does nothing, `template` is None).
    pub fn new(settings: &FeatureSettings) -> Self {
        TemplateLearner {
            enabled: settings.template_learning,
            min_pages: settings.template_min_pages,
            min_fraction: settings.template_min_fraction,
            weight: settings.template_weight as f32,
            shards: (0..SHARDS).map(|_| Mutex::new(FastMap::default())).collect(),
        }
    }

    fn shard(&self, host: &str) -> &Mutex<FastMap<String, HostStats>> {
        &self.shards[(feature_hash(host.as_bytes()) % SHARDS as u64) as usize]
    }

    /// Records one page under its [`template_key`]: each distinct block
    /// counts once, for the page's site and for its section.
    pub fn observe(&self, key: &str, doc: &Extracted) {
        if self.enabled {
            self.observe_hashes(key, &block_hashes(doc));
        }
    }

    /// [`TemplateLearner::observe`] given the page's [`block_hashes`].
    pub fn observe_hashes(&self, key: &str, blocks: &[u64]) {
        if !self.enabled {
            return;
        }
        let mut hashes = blocks.to_vec();
        hashes.sort_unstable();
        hashes.dedup();
        let (site, section) = split_key(key);
        self.count(site, &hashes, false);
        if let Some(section) = section {
            self.count(section, &hashes, true);
        }
    }

    /// `(min_pages, min_fraction)` of a site's or a section's template.
    fn thresholds(&self, section: bool) -> (u32, f64) {
        if section {
            (
                self.min_pages.max(SECTION_MIN_PAGES),
                self.min_fraction.max(SECTION_MIN_FRACTION),
            )
        } else {
            (self.min_pages, self.min_fraction)
        }
    }

    /// One page's distinct block hashes counted under one key.
    fn count(&self, key: &str, hashes: &[u64], section: bool) {
        let (min_pages, min_fraction) = self.thresholds(section);
        let mut shard = self.shard(key).lock();
        if !shard.contains_key(key) {
            shard.insert(key.to_string(), HostStats::default());
        }
        let Some(st) = shard.get_mut(key) else { return };
        st.pages = st.pages.saturating_add(1);
        let need = st.need(min_pages, min_fraction);
        st.prune(need, hashes.len());
        for &h in hashes {
            let c = st.counts.entry(h).or_insert(0);
            *c += 1;
            if *c >= need {
                st.candidates.insert(h);
            }
        }
        // `need` only grows and a count only grows when its block is seen
        // (and checked above), so a block that falls below `need` can come
        // back only through that check: dropping it here keeps the candidate
        // set about the template's size instead of every block ever repeated.
        let HostStats { counts, candidates, .. } = &mut *st;
        candidates.retain(|h| counts.get(h).is_some_and(|&c| c >= need));
        if st.pages >= min_pages {
            let sig = st.candidates.iter().fold(0u64, |acc, h| acc ^ fmix64(*h));
            if sig != st.signature {
                st.signature = sig;
                st.version += 1;
            }
        }
    }

    /// How many times the template of pages under `key` (its site's and
    /// its section's sets of template blocks) has changed so far: 0 while
    /// neither has a template. Fingerprints computed under an older version
    /// weighted some blocks that are now cut; a crawl that wants exact
    /// consistency re-fingerprints earlier pages when this changes (it
    /// settles after a few dozen pages on template-driven sites; see
    /// docs/fingerprints.md).
    pub fn version(&self, key: &str) -> u64 {
        let (site, section) = split_key(key);
        self.own_version(site) + section.map_or(0, |s| self.own_version(s))
    }

    fn own_version(&self, key: &str) -> u64 {
        self.shard(key).lock().get(key).map_or(0, |s| s.version)
    }

    /// The template of pages under `key` now — its site's template blocks
    /// and, once the section has enough pages, its section's (a section
    /// asks more of a block: see `SECTION_MIN_FRACTION`) —
    /// or None when learning is off or the site has fewer than
    /// `template_min_pages` pages.
    pub fn template(&self, key: &str) -> Option<HostTemplate> {
        self.template_shared(key).map(|t| (*t).clone())
    }

    /// While the site of `key` is young (fewer than twice
    /// `template_min_pages` pages), the blocks it has seen on at least
    /// [`RECURRING_PAGES`] pages: its chrome, before a template can hold
    /// it. Two pages of such a site that share these blocks resemble each
    /// other by them whatever their own text. None once the site is past
    /// that, when learning is off, or when no block recurs.
    pub fn young_recurring(&self, key: &str) -> Option<HashSet<u64>> {
        if !self.enabled {
            return None;
        }
        let site = template_site(key);
        let shard = self.shard(site).lock();
        let st = shard.get(site)?;
        if st.pages >= 2 * self.min_pages {
            return None;
        }
        let blocks: HashSet<u64> = st
            .counts
            .iter()
            .filter(|&(_, &c)| c >= RECURRING_PAGES)
            .map(|(&h, _)| h)
            .collect();
        (!blocks.is_empty()).then_some(blocks)
    }

    /// The template of one key as its counts stand now.
    fn build(&self, st: &HostStats, min_pages: u32, min_fraction: f64) -> HostTemplate {
        let need = st.need(min_pages, min_fraction);
        let blocks = st
            .candidates
            .iter()
            .copied()
            .filter(|h| st.counts.get(h).is_some_and(|&c| c >= need))
            .collect();
        HostTemplate {
            blocks,
            weight: self.weight,
            pages: st.pages,
            version: st.version,
        }
    }

    /// The template of one key (site or section), built once per version
    /// of it and handed out again until the next change.
    fn own_template(&self, key: &str, section: bool) -> Option<Arc<HostTemplate>> {
        let (min_pages, min_fraction) = self.thresholds(section);
        let mut shard = self.shard(key).lock();
        let st = shard.get_mut(key)?;
        if st.pages < min_pages {
            return None;
        }
        if let Some(t) = st.snapshot.as_ref().filter(|t| t.version == st.version) {
            return Some(t.clone());
        }
        let t = Arc::new(self.build(st, min_pages, min_fraction));
        st.snapshot = Some(t.clone());
        Some(t)
    }

    /// [`TemplateLearner::template`], shared: each site's and section's
    /// snapshot is built once per version (the block set changes only with
    /// the version), and a section's union with its site once per pair of
    /// versions, and handed out again until the next change, so its `pages`
    /// is the page count when that version was first asked for. The crawl
    /// asks for the template of every page it fingerprints; this keeps that
    /// O(1).
    pub fn template_shared(&self, key: &str) -> Option<Arc<HostTemplate>> {
        if !self.enabled {
            return None;
        }
        let (site, section) = split_key(key);
        let site_t = self.own_template(site, false)?;
        let Some(section) = section else {
            return Some(site_t);
        };
        let Some(section_t) = self.own_template(section, true) else {
            return Some(site_t);
        };
        let version = site_t.version + section_t.version;
        let mut shard = self.shard(section).lock();
        let st = shard.get_mut(section)?;
        if let Some((sv, t)) = st.merged.as_ref() {
            if *sv == site_t.version && t.version == version {
                return Some(t.clone());
            }
        }
        let merged = Arc::new(HostTemplate {
            blocks: site_t.blocks.union(&section_t.blocks).copied().collect(),
            weight: self.weight,
            pages: section_t.pages,
            version,
        });
        st.merged = Some((site_t.version, merged.clone()));
        Some(merged)
    }

    /// Pages observed under `key`: its section's when it has one, else its
    /// site's.
    pub fn pages(&self, key: &str) -> u32 {
        self.shard(key).lock().get(key).map_or(0, |s| s.pages)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use hashbrown::HashSet;

    use super::super::tests::settings;
    use super::*;
    use crate::extract::{BlockKind, TextBlock};

    #[test]
    fn template_keys_split_language_sections() {
        assert_eq!(template_key("h:1", "/ca-ES/sect.x.html", None), "h:1|ca-es");
        assert_eq!(template_key("h:1", "/zh_CN/ch01.html", None), "h:1|zh-cn");
        assert_eq!(template_key("h:1", "/fr/", None), "h:1|fr");
        assert_eq!(template_key("h:1", "/x.html", Some(" EN-us ")), "h:1|en-us");
        // Not language sections: a file, unknown codes, the root.
        for path in ["/fr", "/fr.html", "/"] {
            assert_eq!(template_key("h:1", path, None), "h:1", "{path}");
        }
        assert!(ISO_639_1.windows(2).all(|w| w[0] < w[1]), "sorted for binary search");
    }

    #[test]
    fn template_keys_name_the_first_directory_below_the_site() {
        assert_eq!(template_key("h:1", "/std/iter/x.html", None), "h:1|/std/");
        assert_eq!(template_key("h:1", "/api/x.html", None), "h:1|/api/");
        assert_eq!(template_key("h:1", "/xx/y.html", None), "h:1|/xx/");
        assert_eq!(template_key("h:1", "/en-toolong/y.html", None), "h:1|/en-toolong/");
        assert_eq!(template_key("h:1", "/fr/guide/a.html", None), "h:1|fr|/guide/");
        assert_eq!(template_key("h:1", "/pt-BR/a/b.html", Some("pt")), "h:1|pt|/a/");
        assert_eq!(
            template_key("h:1", "/book/", None),
            "h:1|/book/",
            "a directory's index is in it"
        );
        assert_eq!(
            template_key("h:1", "/book", None),
            "h:1",
            "a file at the top is the site's"
        );
        assert_eq!(split_key("h:1|fr|/guide/"), ("h:1|fr", Some("h:1|fr|/guide/")));
        assert_eq!(split_key("h:1|fr"), ("h:1|fr", None));
    }

    fn page(blocks: &[&str]) -> Extracted {
        Extracted {
            blocks: blocks
                .iter()
                .map(|b| TextBlock {
                    text: (*b).to_string(),
                    kind: BlockKind::Body,
                })
                .collect(),
            ..Extracted::default()
        }
    }

    /// Chrome repeated on every page of one section, but on too small a
    /// share of the host to be the host's template, is cut on that
    /// section's pages only; the host's own template applies everywhere.
    #[test]
    fn a_section_adds_its_own_repeated_blocks() {
        let learner = TemplateLearner::new(&settings());
        let (book, api) = ("h:1|/book/", "h:1|/api/");
        for i in 0..80 {
            learner.observe(api, &page(&["site menu", &format!("api {i}")]));
        }
        for i in 0..20 {
            // "see also" is on half the book's pages: content, not chrome.
            let also = if i % 2 == 0 { "see also" } else { "other" };
            learner.observe(book, &page(&["site menu", "book help", also, &format!("chapter {i}")]));
        }
        let menu = block_hash("site menu");
        let help = block_hash("book help");
        let on_book = learner.template(book).expect("a template");
        assert!(on_book.blocks.contains(&menu) && on_book.blocks.contains(&help));
        let on_api = learner.template(api).expect("a template");
        assert!(on_api.blocks.contains(&menu) && !on_api.blocks.contains(&help));
        let on_site = learner.template("h:1").expect("a template");
        assert!(
            !on_site.blocks.contains(&help),
            "20 of 100 pages are below the host's share"
        );
        assert!(!on_book.blocks.contains(&block_hash("see also")));
        assert_eq!(learner.pages(book), 20);
        assert_eq!(learner.pages("h:1"), 100);
        assert_eq!(
            learner.version(book),
            learner.own_version("h:1") + learner.own_version(book)
        );
        // The union is shared until either side changes.
        let again = learner.template_shared(book).expect("a template");
        assert!(Arc::ptr_eq(&again, &learner.template_shared(book).expect("a template")));
    }

    /// A host whose pages are mostly their own text keeps at most
    /// `MAX_BLOCKS_PER_KEY` counts in a table that never grows past them,
    /// and its chrome (on every page) and a block on a third of its pages
    /// are still its template.
    #[test]
    fn counts_stay_bounded_and_keep_the_template() {
        let learner = TemplateLearner::new(&settings());
        let pages = 3 * MAX_BLOCKS_PER_KEY / 10;
        for i in 0..pages {
            let third = if i % 3 == 0 { "a third" } else { "rest" };
            let own: Vec<String> = (0..10).map(|j| format!("text {i} {j}")).collect();
            let mut blocks = vec!["menu", third];
            blocks.extend(own.iter().map(String::as_str));
            learner.observe("h.test", &page(&blocks));
            let shard = learner.shard("h.test").lock();
            let counts = &shard["h.test"].counts;
            assert!(counts.len() <= MAX_BLOCKS_PER_KEY);
            // Pruned before the table would double.
            assert!(counts.capacity() <= MAX_BLOCKS_PER_KEY, "{}", counts.capacity());
        }
        let t = learner.template("h.test").expect("a template");
        assert!(t.blocks.contains(&block_hash("menu")));
        assert!(t.blocks.contains(&block_hash("rest")));
        assert!(t.blocks.contains(&block_hash("a third")));
        assert_eq!(t.blocks.len(), 3);
    }

    proptest::proptest! {
        /// The learner's template after every page equals the blocks a full
        /// recount puts at or above the host's `need`, and its version moves
        /// exactly when that set changes.
        #[test]
        fn template_equals_a_recount(
            pages in proptest::collection::vec(proptest::collection::vec(0u8..12, 0..8), 1..40),
            min_pages in 1u32..5,
            fraction in 0.0f64..1.0,
        ) {
            let mut st = settings();
            st.template_min_pages = min_pages;
            st.template_min_fraction = fraction;
            let learner = TemplateLearner::new(&st);
            let mut counts: HashMap<u64, u32> = HashMap::new();
            let mut last: Option<HashSet<u64>> = None;
            let mut versions = 0;
            for (n, page) in pages.iter().enumerate() {
                let doc = Extracted {
                    blocks: page
                        .iter()
                        .map(|b| TextBlock { text: format!("block {b}"), kind: BlockKind::Body })
                        .collect(),
                    ..Extracted::default()
                };
                learner.observe("h.test", &doc);
                let distinct: HashSet<u64> = doc.blocks.iter().map(|b| block_hash(&b.text)).collect();
                for h in distinct {
                    *counts.entry(h).or_insert(0) += 1;
                }
                let pages_seen = n as u32 + 1;
                let need = ((fraction * f64::from(pages_seen)).ceil() as u32).max(min_pages);
                let oracle: HashSet<u64> = counts.iter().filter(|(_, &c)| c >= need).map(|(&h, _)| h).collect();
                match learner.template("h.test") {
                    None => proptest::prop_assert!(pages_seen < min_pages),
                    Some(t) => {
                        proptest::prop_assert_eq!(&t.blocks, &oracle);
                        if last.as_ref().map_or(!oracle.is_empty(), |l| *l != oracle) {
                            versions += 1;
                        }
                        proptest::prop_assert_eq!(t.version, versions);
                        last = Some(oracle);
                    }
                }
            }
        }
    }
}
