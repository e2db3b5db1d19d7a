//! robots.txt (RFC 9309): parsing, matching, and what a fetch status means.
