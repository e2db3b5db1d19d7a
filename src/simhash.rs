//! Simhash (pipeline: after features, before the index): Charikar's 64-bit
//! fingerprint over weighted features, with a fixed portable feature hash, and
//! Hamming distance.
