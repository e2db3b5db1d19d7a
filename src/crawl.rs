//! The crawl loop (pipeline: joins every stage). Workers take URLs from the
//! frontier, fetch them politely, parse, fingerprint, decide (new / exact /
//! near duplicate), store the result and push out-links back to the frontier.
