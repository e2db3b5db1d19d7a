//! Storage (pipeline: the sink of every stage): the `Store` trait and its sled
//! implementation, with a versioned key layout; resumable crawl state.
