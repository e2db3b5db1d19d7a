//! The frontier (pipeline: after seeds, before politeness): per-host priority
//! queues, a heap of hosts keyed by the time each may next be contacted, the
//! URL seen-set, crawl scope and trap detection, and explainable priority scores.
