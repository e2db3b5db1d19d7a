//! The permuted-table Hamming index (pipeline: after simhash, before the dedup
//! decision): Manku, Jain and Das Sarma 2007, §3. Finds every stored 64-bit
//! fingerprint within Hamming distance k of a query while inserts keep arriving.
