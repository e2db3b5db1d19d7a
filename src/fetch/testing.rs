//! A [`Fetcher`] with canned answers, for unit tests of the modules that use
//! a fetcher (politeness, the crawl loop) without a network.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use url::Url;

use super::{FetchError, FetchResponse, Fetcher};

/// A 200-style response for `url` with `status` and an HTML `body`.
///
/// # Panics
/// When `url` does not parse (test helper).
pub fn response(url: &str, status: u16, body: &str) -> FetchResponse {
    FetchResponse {
        url: Url::parse(url).expect("test URL parses"),
        status,
        content_type: Some("text/html".into()),
        charset: None,
        location: None,
        retry_after: None,
        x_robots_tag: None,
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
        truncated: false,
        elapsed: Duration::from_millis(1),
        etag: None,
        last_modified: None,
    }
}

/// Canned answers by URL (exact string of the parsed URL). Each URL holds a
/// queue: answers are served in order and the last one repeats. Unknown URLs
/// get a 404. Every request is logged (see [`StaticFetcher::requests`]).
#[derive(Debug, Default)]
pub struct StaticFetcher {
    answers: Mutex<HashMap<String, VecDeque<Result<FetchResponse, FetchError>>>>,
    log: Mutex<Vec<Url>>,
}

impl StaticFetcher {
    /// An empty fetcher (every URL is a 404).
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue `answer` for `url`.
    ///
    /// # Panics
    /// When `url` does not parse (test helper).
    pub fn add(&self, url: &str, answer: Result<FetchResponse, FetchError>) -> &Self {
        let key = Url::parse(url).expect("test URL parses").to_string();
        self.answers.lock().entry(key).or_default().push_back(answer);
        self
    }

    /// Queue a response with `status` and `body` for `url`.
    pub fn add_page(&self, url: &str, status: u16, body: &str) -> &Self {
        self.add(url, Ok(response(url, status, body)))
    }

    /// The URLs requested so far, in order.
    pub fn requests(&self) -> Vec<Url> {
        self.log.lock().clone()
    }
}

impl Fetcher for StaticFetcher {
    fn fetch<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<FetchResponse, FetchError>> {
        self.log.lock().push(url.clone());
        let mut answers = self.answers.lock();
        let answer = match answers.get_mut(url.as_str()) {
            Some(q) if q.len() > 1 => q.pop_front(),
            Some(q) => q.front().cloned(),
            None => None,
        };
        let answer = answer.unwrap_or_else(|| Ok(response(url.as_str(), 404, "not found")));
        Box::pin(std::future::ready(answer))
    }
}
