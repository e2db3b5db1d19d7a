//! URL canonicalization (pipeline: applied to every discovered link and
//! redirect hop before the seen-set): RFC 3986 §6 normalization and the crawler
//! profile (sorted query, tracking parameters dropped). Contract: `simcrawl canon`.
