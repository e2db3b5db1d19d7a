//! End-to-end tests of simcrawl, one binary for all (see docs/STYLE.md).
//! Each module tests one part against the built-in test web or real files.

mod cli;
mod hamming;
