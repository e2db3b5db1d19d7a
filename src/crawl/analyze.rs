//! The CPU work on one fetched page, on the analysis threads: extract,
//! template learning, features, simhash, content hashes, content sketch and
//! out-link resolution.

use super::provisional::in_template;
use super::*;

/// Parse, learn the host template, fingerprint and resolve links.
pub(super) fn analyze(shared: &Shared, url: &Url, resp: FetchResponse) -> Analysis {
    let s = &shared.settings;
    let (text, _encoding) = resp.text();
    let max = s.features.max_text_bytes;
    // Anchor texts and contexts are read only to score links for a topic.
    let opts = extract::ExtractOptions {
        max_text_bytes: max,
        link_text: shared.focus.is_some(),
    };
    let mut doc = extract_body(&text, resp.content_type.as_deref() == Some("text/plain"), opts);
    let mut meta = doc.meta_robots;
    if let Some(x) = &resp.x_robots_tag {
        meta = meta.merge(extract::parse_x_robots_tag_for(x, &s.crawl.user_agent));
    }
    let host = crate::host::host_key(url);
    let template_key = crate::features::template_key(&host, url.path(), doc.lang.as_deref());
    // Each block hashed once: for template learning, the features and, on a
    // young host, the page's template membership.
    let blocks = crate::features::block_hashes(&doc);
    shared.templates.observe_hashes(&template_key, &blocks);
    let template_version = shared.templates.version(&template_key);
    let template = shared.templates.template_shared(&template_key);
    let hashes = ContentHashes::compute(&resp.body, &doc);
    // An exact duplicate of a decided page (same body or text) needs no
    // fingerprint of its own: it takes its original's, and in a focused
    // crawl its relevance (a copy scored by a worker of a shared crawl has
    // none here, and is scored).
    let known = shared
        .known
        .get(&hashes)
        .filter(|k| shared.focus.is_none() || k.relevance.is_some());
    // The topic's weights as they are now, for the page and its links.
    let topic = shared.focus.as_ref().map(|f| f.vector());
    // A young host's or section's page is kept prepared (tokenized,
    // stemmed and hashed) by the decider, which weighs it again while the
    // template settles; its features come from the same preparation.
    let young = (shared.templates.pages(&template_key) as usize) <= PROVISIONAL_PER_HOST;
    let mut prepared = None;
    let (fp, relevance, sketch) = match known {
        Some(k) => (k.simhash, k.relevance.map(f64::from), None),
        None => {
            let features = if young {
                let p = shared.fx.prepare(&doc);
                let f = shared.fx.features_prepared(&p, &blocks, template.as_deref());
                prepared = Some(p);
                f
            } else {
                shared.fx.features_hashed(&doc, &blocks, template.as_deref())
            };
            let relevance = shared
                .focus
                .as_ref()
                .zip(topic.as_ref())
                .map(|(f, v)| f.page_relevance(v, &features));
            let sketch = page_sketch(
                &shared.fx,
                shared.verifier.as_ref(),
                Some(&doc),
                &features,
                &template_key,
            );
            (simhash::simhash(&features), relevance, sketch)
        }
    };
    let mut link_text = String::new();
    // Links are stemmed in the page's language (no detection per link).
    let language = if shared.focus.is_some() {
        shared.fx.language(&doc)
    } else {
        "en"
    };

    let base = canon::effective_base(&resp.url, doc.base_href.as_deref());
    let mut links = Vec::with_capacity(doc.links.len() + 1);
    let mut seen = LinkSet::with_capacity(doc.links.len());
    for l in &mut doc.links {
        if l.nofollow {
            continue;
        }
        if let Ok(u) = shared.canon.resolve_link(&base, &l.href) {
            if seen.first_time(&links, &u) {
                let rel = shared.focus.as_ref().zip(topic.as_ref()).map_or(0.0, |(f, v)| {
                    f.link_relevance(v, f.link_text(l, &mut link_text), language)
                });
                // The page's links are not read after this: the href moves
                // (unless it carries credentials to remove).
                let found = if l.href.contains('@') {
                    canon::redacted_href(&base, &l.href)
                } else {
                    std::mem::take(&mut l.href)
                };
                links.push((u, found, rel));
            }
        }
    }
    // rel=canonical names the page's preferred URL: offer it like a link.
    if let Some(c) = doc
        .canonical
        .as_deref()
        .and_then(|c| shared.canon.resolve(&base, c).ok())
    {
        if c.as_str() != url.as_str() && seen.first_time(&links, &c) {
            let found = canon::redacted_href(&base, doc.canonical.as_deref().unwrap_or_default());
            links.push((c, found, 0.0));
        }
    }
    let young = young.then(|| {
        let member = in_template(&blocks, template.as_deref());
        let prepared = prepared.unwrap_or_else(|| shared.fx.prepare(&doc));
        Young {
            prepared,
            // The min-hash sketch reads the tokens of the text.
            doc: shared.verifier.is_some().then_some(doc),
            blocks,
            member,
        }
    });
    Analysis {
        young,
        template: template_key,
        template_version,
        hashes,
        simhash: fp,
        reused: known.is_some(),
        noindex: meta.noindex,
        nofollow: meta.nofollow,
        links,
        relevance,
        sketch,
        body: s.output.warc.then_some(resp.body),
    }
}

/// The crawl's feature extractor: it keeps content words when candidates
/// are confirmed by content shingles.
pub(crate) fn feature_extractor(settings: &Settings) -> FeatureExtractor {
    FeatureExtractor::new(&settings.features).with_words(settings.dedup.verify == crate::config::Verify::Shingles)
}

/// The min-hash sketcher, when candidates are confirmed by min-hash.
pub(super) fn verifier(settings: &Settings) -> Option<MinHasher> {
    (settings.dedup.verify == crate::config::Verify::Minhash).then(|| MinHasher::from_settings(&settings.sketch))
}

/// The sketch a page's near-duplicate candidates are confirmed with
/// (`[dedup] verify`): min-hash over its tokens when `verifier` is set (and
/// `doc` given), the content shingles of its features when the extractor
/// keeps their words (each kept shingle tagged with its blocks and the
/// page's template key `key`), else none.
pub(crate) fn page_sketch(
    fx: &FeatureExtractor,
    verifier: Option<&MinHasher>,
    doc: Option<&Extracted>,
    features: &crate::features::Features,
    key: &str,
) -> Option<Sketch> {
    match verifier {
        Some(v) => doc.map(|d| Sketch::MinHash(v.sketch(&fx.tokens(d)))),
        None if fx.keeps_words() => Some(Sketch::Content(
            ContentSketch::from_blocks(&features.words, &features.word_blocks, key).with_left_out(&features.cut_blocks),
        )),
        None => None,
    }
}

/// The extracted document of a fetched body (HTML, or plain text).
pub(super) fn extract_body(text: &str, plain: bool, opts: extract::ExtractOptions) -> Extracted {
    if plain {
        extract::extract_plain(text, opts.max_text_bytes)
    } else {
        extract::extract_html_with(text, opts)
    }
}

/// The URLs already in a page's out-link list, as indices into it (no copy
/// of each URL), for [`analyze`]'s de-duplication.
pub(super) struct LinkSet {
    hasher: hashbrown::DefaultHashBuilder,
    table: hashbrown::HashTable<usize>,
}

impl LinkSet {
    pub(super) fn with_capacity(n: usize) -> Self {
        LinkSet {
            hasher: hashbrown::DefaultHashBuilder::default(),
            table: hashbrown::HashTable::with_capacity(n),
        }
    }

    /// Whether `u` is not among `links` yet; if so it is recorded as the
    /// next entry of `links`, which the caller must push next.
    pub(super) fn first_time(&mut self, links: &[(Url, String, f64)], u: &Url) -> bool {
        use std::hash::BuildHasher;
        let hasher = &self.hasher;
        let h = hasher.hash_one(u.as_str());
        let entry = self.table.entry(
            h,
            |&i| links.get(i).is_some_and(|l| l.0.as_str() == u.as_str()),
            |&i| links.get(i).map_or(0, |l| hasher.hash_one(l.0.as_str())),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(links.len());
                true
            }
        }
    }
}
