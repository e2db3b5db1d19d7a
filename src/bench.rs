//! Built-in benchmarks (`simcrawl bench index|pipeline|crawl`): each prints
//! figures as ratios against a baseline measured in the same run.
