//! The ground truth of the test web: every page a crawler can meet, with its
//! expected status and what it duplicates; duplicate groups, near-duplicate
//! pairs and same-topic negatives, mirror host pairs, robots.txt answers,
//! disallowed URLs and traps. Written as JSON by `simcrawl testweb --truth`.
//!
//! Built from the same link rules the pages are rendered with
//! (`generate/rules.rs`), in time linear in the page count.
//!
//! This file holds the truth's types; `build.rs` walks the hosts and fills
//! them in.

mod build;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a page is, for tests and evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// The www.news.test hub that links every host.
    Hub,
    /// A front, section, topic-index or list page.
    Index,
    /// An original article (news, wiki or blog post), with a topic.
    Article,
    /// A byte-identical copy of a page on a mirror host (`exact_dup_of` is the original).
    Mirror,
    /// The same page under another URL (`canonical_of` is the canonical URL).
    Alias,
    /// A near-duplicate of an article (`near_dup_of`, `variant_kind`).
    Variant,
    /// A docs.test page: heavy shared template, short distinct main text.
    Template,
    /// A robots.txt file.
    Robots,
    /// A small page of a robots test host.
    Plain,
    /// A redirect (`redirect_to`).
    Redirect,
    /// A page of an infinite link space (the calendar).
    Trap,
    /// An error answer (404, 500, 429, 503).
    Error,
    /// A page that answers after a delay.
    Slow,
    /// A body larger than the test config's fetch cap.
    Large,
    /// A non-HTML body (PDF, PNG).
    Binary,
    /// An HTML page in a legacy encoding declared in a meta tag.
    Legacy,
}

/// How a near-duplicate variant differs from its original.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariantKind {
    /// Another small ad text in the `tw:ad` region.
    Ad,
    /// Another publication time in the `tw:time` region.
    Timestamp,
    /// Another visit count in the `tw:counter` region.
    Counter,
    /// 2 to 5 words of the main text (`tw:main`) replaced.
    EditedWords,
    /// A large ad (about 160 words) instead of a small one in `tw:ad`.
    LargeAd,
    /// One word of a short main text (`tw:main`) replaced near its end
    /// (ref.test `/latest/` copies).
    OneWord,
    /// The same main text (`tw:main`) inside another language's chrome,
    /// title and navigation (manual.test untranslated chapters).
    Untranslated,
    /// The same page of another version of the site: the version in the
    /// chrome differs, and at most 2 words of the main text (`tw:main`).
    OtherVersion,
}

/// One URL of the test web.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageTruth {
    /// The URL exactly as linked (or as requested, for robots.txt), with the server's port.
    pub url: String,
    /// The host part of `url`, as written there (may be upper case for alias URLs).
    pub host: String,
    /// Path and query of `url`.
    pub path: String,
    /// The status of the first answer to a GET of `url` (redirects are not followed).
    pub status: u16,
    /// The `Content-Type` header of the answer.
    pub content_type: Option<String>,
    /// What the page is.
    pub kind: PageKind,
    /// Topic (one of [`super::TOPICS`]) of articles, their copies, aliases and variants.
    pub topic: Option<String>,
    /// For alias URLs: the canonical URL of the same page (same bytes).
    pub canonical_of: Option<String>,
    /// For pages byte-identical to an earlier-listed page (mirror copies,
    /// aliases): the original URL (the root of its exact-duplicate group).
    pub exact_dup_of: Option<String>,
    /// For near-duplicate variants: the original's URL.
    pub near_dup_of: Option<String>,
    /// For near-duplicate variants: what was changed.
    pub variant_kind: Option<VariantKind>,
    /// For redirects: the `Location` resolved to an absolute URL.
    pub redirect_to: Option<String>,
    /// For 429/503 answers: the `Retry-After` header in seconds.
    pub retry_after_secs: Option<u64>,
    /// For pages whose answer changes after a retry (`/busy-once`): the status of later requests.
    pub status_after_retry: Option<u16>,
    /// Whether robots.txt forbids this URL to the `simcrawl` agent (RFC 9309,
    /// a 5xx robots.txt disallowing everything). Such URLs are also in [`GroundTruth::disallowed`].
    pub disallowed: bool,
    /// Text the decoded page must contain (the legacy-encoding page).
    pub expect_text: Option<String>,
    /// Exact body size in bytes, for the oversized page.
    pub body_bytes: Option<u64>,
}

/// A pair of URLs that are near-duplicates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearDuplicatePair {
    /// The original.
    pub a: String,
    /// The variant.
    pub b: String,
    /// How `b` differs from `a`.
    pub kind: VariantKind,
}

/// Why two pages look alike but are NOT near-duplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistinctKind {
    /// Two articles on the same topic (same vocabulary, different text).
    SameTopic,
    /// Two docs.test pages sharing a heavy template, different main text.
    SharedTemplate,
    /// Two short ref.test pages that share most of their words but differ
    /// in a few meaningful ones (another property, another class): their
    /// 5-word shingle resemblance is low.
    FewWords,
    /// A manual.test chapter translated into another language, and the
    /// English original.
    Translated,
    /// The same path on two versions of a site, rewritten in between.
    Rewritten,
}

/// A negative example: two distinct pages that a detector must not pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistinctPair {
    /// One page.
    pub a: String,
    /// The other page.
    pub b: String,
    /// Why they look alike.
    pub kind: DistinctKind,
}

/// Full or partial mirror.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MirrorKind {
    /// Every path of `host_a` is served byte-identically by `host_b`.
    Full,
    /// The subtree `prefix_a` of `host_a` is served byte-identically under `prefix_b` of `host_b`.
    Partial,
}

/// Two hosts (or host + path prefixes) serving the same content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorTruth {
    /// The original host.
    pub host_a: String,
    /// Path prefix on `host_a` (`/` for the whole host).
    pub prefix_a: String,
    /// The mirroring host.
    pub host_b: String,
    /// Path prefix on `host_b` whose paths correspond to `prefix_a`'s.
    pub prefix_b: String,
    /// Full or partial.
    pub kind: MirrorKind,
    /// How many truth pages of `host_b` (under `prefix_b`) are copies.
    pub pages: usize,
}

/// Two hosts (or host + path prefixes) that share paths and much content
/// but are NOT mirrors (e.g. two versions of one site); a mirror detector
/// must not pair them, nor put them in one mirror set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotMirrorTruth {
    /// One host.
    pub host_a: String,
    /// The other host.
    pub host_b: String,
    /// Why they look like mirrors and are not (one line).
    pub why: String,
}

/// The robots.txt answer of one host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotsTruth {
    /// Host name.
    pub host: String,
    /// `http://HOST:PORT/robots.txt`.
    pub url: String,
    /// HTTP status of the robots.txt answer.
    pub status: u16,
    /// The body when the status is 200.
    pub body: Option<String>,
    /// The Crawl-delay (seconds) the body asks of every agent.
    pub crawl_delay_secs: Option<u64>,
}

/// A region of infinitely many URLs a crawler must bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapTruth {
    /// Every URL starting with this is part of the trap.
    pub url_prefix: String,
    /// `"calendar"`. Every page of a calendar trap is a near duplicate of
    /// every other (the month in the title is the only difference): a
    /// crawler that calls them near duplicates is right.
    pub kind: String,
    /// The trap URL linked from outside it.
    pub entry: String,
}

/// One virtual host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTruth {
    /// Lower-case host name.
    pub name: String,
    /// What it is for (one line).
    pub role: String,
    /// Front page URL.
    pub front: String,
}

/// Everything the test web knows about itself, for one port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// Generator seed.
    pub seed: u64,
    /// The `pages` size option.
    pub size: usize,
    /// Port the URLs carry.
    pub port: u16,
    /// Seed URLs: every host and page below is reachable from them by links.
    pub seeds: Vec<String>,
    /// The topics, in id order (article id `i` has topic `topics[i % topics.len()]`).
    pub topics: Vec<String>,
    /// The virtual hosts.
    pub hosts: Vec<HostTruth>,
    /// Every URL linked anywhere (plus robots.txt and redirect targets),
    /// except the calendar trap beyond its first months: see `traps`.
    pub pages: Vec<PageTruth>,
    /// Groups of URLs serving byte-identical bodies (original first):
    /// mirror copies and alias URLs with their original.
    pub exact_duplicate_groups: Vec<Vec<String>>,
    /// Original/variant pairs that are near-duplicates.
    pub near_duplicate_pairs: Vec<NearDuplicatePair>,
    /// Negative examples: pages alike in vocabulary or template that are not near-duplicates.
    pub distinct_pairs: Vec<DistinctPair>,
    /// Mirror host (prefix) pairs.
    pub mirrors: Vec<MirrorTruth>,
    /// Host pairs that share paths and content but are not mirrors.
    #[serde(default)]
    pub not_mirrors: Vec<NotMirrorTruth>,
    /// robots.txt of every host.
    pub robots: Vec<RobotsTruth>,
    /// Crawl-delay in seconds per host that asks for one.
    pub crawl_delays: BTreeMap<String, u64>,
    /// URLs (as linked) a polite `simcrawl` crawler must never request.
    pub disallowed: Vec<String>,
    /// Infinite URL spaces.
    pub traps: Vec<TrapTruth>,
    /// Canonical URLs reachable and allowed from the seeds: every listed
    /// page that is not an alias, not disallowed, not robots.txt, and not a
    /// calendar page other than the trap entry. Includes redirects, their
    /// targets and error pages (a crawler requests them too). A crawl that
    /// requests all of these (and nothing disallowed) is complete.
    pub reachable: Vec<String>,
}

impl GroundTruth {
    /// The page whose URL is `url`, if listed (linear search).
    pub fn page(&self, url: &str) -> Option<&PageTruth> {
        self.pages.iter().find(|p| p.url == url)
    }

    /// Pages of kind `kind`.
    pub fn pages_of_kind(&self, kind: PageKind) -> impl Iterator<Item = &PageTruth> {
        self.pages.iter().filter(move |p| p.kind == kind)
    }
}
