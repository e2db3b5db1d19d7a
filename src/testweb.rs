//! The built-in local test web (beside the pipeline: the demo and tests crawl
//! it): a deterministic synthetic web on 127.0.0.1 with virtual hosts, and its
//! ground truth.
