//! Features (pipeline: after extraction, before simhash): tokenize, case-fold,
//! drop stop words, stem (rust-stemmers), add phrase bigrams, and weigh by term
//! frequency, title/heading boosts and per-host template learning.
