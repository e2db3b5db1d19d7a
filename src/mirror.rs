//! Mirror detection (pipeline: reports, and online feedback to the frontier):
//! host and host+path-prefix pairs whose same-path pages are duplicates.
