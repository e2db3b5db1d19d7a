//! Reports (pipeline: the end): crawl summary, duplicate clusters and mirror
//! report, as JSON, CSV and self-contained HTML.
