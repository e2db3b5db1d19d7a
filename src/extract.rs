//! Extraction (pipeline: after fetch, before features): title, visible text
//! blocks with their weights, links, meta robots, rel=canonical, base href and
//! language, from HTML parsed by `scraper`.
