//! Fetching (pipeline: after politeness, before canonicalization checks and
//! parsing): the `Fetcher` trait, its reqwest implementation, body and
//! decompression caps, charset decoding, and redirects as explicit hops.
