//! Evaluation harness (beside the pipeline): precision and recall of each
//! near-duplicate detector against exact shingle resemblance.
