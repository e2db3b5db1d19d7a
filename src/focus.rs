//! Focused crawling (pipeline: feeds the frontier's relevance component): a
//! topic profile and cosine relevance of pages and anchor texts.
