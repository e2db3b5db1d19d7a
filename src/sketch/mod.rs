//! Other near-duplicate detectors from the papers (beside simhash; used for
//! verification, `simcrawl near` and `simcrawl eval`): Broder min-hash
//! super-shingles and Jain et al. Bloom filters over content-defined chunks.
