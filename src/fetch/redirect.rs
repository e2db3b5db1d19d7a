//! Redirects as explicit hops: the crawl loop, not the HTTP client, follows
//! `Location`, so each hop can be canonicalized, checked against robots.txt
//! and the seen-set, and recorded as an alias of the final URL.

use url::Url;

/// Why a redirect hop is not followed. Recorded per URL, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
    /// A 3xx without a usable `Location` header.
    #[error("redirect without a Location header")]
    MissingLocation,
    /// `Location` does not resolve to an http(s) URL.
    #[error("bad redirect Location {location:?}: {reason}")]
    BadLocation {
        /// The header value.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The target was already a hop of this chain.
    #[error("redirect loop back to {url}")]
    Loop {
        /// The URL seen twice.
        url: String,
    },
    /// More hops than `fetch.max_redirects`.
    #[error("more than {max} redirects")]
    TooMany {
        /// The configured maximum.
        max: u32,
    },
}

/// The hops of one fetch: the URL first requested, then each redirect target.
///
/// Loop detection compares URLs as pushed: push canonical URLs (from
/// `canon`) so that trivially different spellings of one URL count as a loop.
#[derive(Debug, Clone)]
pub struct RedirectChain {
    hops: Vec<Url>,
    max_redirects: u32,
}

impl RedirectChain {
    /// A chain starting at `start`, allowing `max_redirects` hops after it.
    pub fn new(start: Url, max_redirects: u32) -> Self {
        RedirectChain {
            hops: vec![start],
            max_redirects,
        }
    }

    /// The URL to fetch next (the last hop).
    pub fn current(&self) -> &Url {
        self.hops.last().expect("a chain has at least its start URL")
    }

    /// Every hop, the start first.
    pub fn hops(&self) -> &[Url] {
        &self.hops
    }

    /// Redirects followed so far.
    pub fn redirects(&self) -> u32 {
        (self.hops.len() - 1) as u32
    }

    /// Resolve a `Location` value against the current hop (relative
    /// references allowed; the fragment is dropped). Does not push.
    pub fn resolve(&self, location: Option<&str>) -> Result<Url, RedirectError> {
        let location = location.map(str::trim).filter(|l| !l.is_empty());
        let location = location.ok_or(RedirectError::MissingLocation)?;
        let bad = |reason: String| RedirectError::BadLocation {
            location: location.to_string(),
            reason,
        };
        let mut url = self.current().join(location).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("scheme {} is not http(s)", url.scheme())));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("no host".into()));
        }
        url.set_fragment(None);
        Ok(url)
    }

    /// Append `next` (normally canonicalized) as a hop, or say why not.
    pub fn push(&mut self, next: Url) -> Result<(), RedirectError> {
        if self.hops.contains(&next) {
            return Err(RedirectError::Loop { url: next.to_string() });
        }
        if self.redirects() >= self.max_redirects {
            return Err(RedirectError::TooMany {
                max: self.max_redirects,
            });
        }
        self.hops.push(next);
        Ok(())
    }

    /// [`resolve`](Self::resolve) then [`push`](Self::push) without
    /// canonicalization; returns the new current URL.
    pub fn next_hop(&mut self, location: Option<&str>) -> Result<&Url, RedirectError> {
        let next = self.resolve(location)?;
        self.push(next)?;
        Ok(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn relative_locations_resolve_against_the_current_hop() {
        let mut c = RedirectChain::new(url("http://a.test/x/y"), 10);
        assert_eq!(c.next_hop(Some("z")).unwrap().as_str(), "http://a.test/x/z");
        assert_eq!(c.next_hop(Some("/top#frag")).unwrap().as_str(), "http://a.test/top");
        assert_eq!(c.next_hop(Some("//b.test/p")).unwrap().as_str(), "http://b.test/p");
        assert_eq!(c.redirects(), 3);
        assert_eq!(c.hops()[0].as_str(), "http://a.test/x/y");
    }

    #[test]
    fn loops_are_detected() {
        let mut c = RedirectChain::new(url("http://a.test/1"), 10);
        c.next_hop(Some("/2")).unwrap();
        assert_eq!(
            c.next_hop(Some("/1")),
            Err(RedirectError::Loop {
                url: "http://a.test/1".into()
            })
        );
        // A self-redirect is a loop too.
        let mut c = RedirectChain::new(url("http://a.test/1"), 10);
        assert!(matches!(c.next_hop(Some("/1")), Err(RedirectError::Loop { .. })));
    }

    #[test]
    fn hop_limit() {
        let mut c = RedirectChain::new(url("http://a.test/0"), 2);
        c.next_hop(Some("/1")).unwrap();
        c.next_hop(Some("/2")).unwrap();
        assert_eq!(c.next_hop(Some("/3")), Err(RedirectError::TooMany { max: 2 }));
        let mut zero = RedirectChain::new(url("http://a.test/0"), 0);
        assert_eq!(zero.next_hop(Some("/1")), Err(RedirectError::TooMany { max: 0 }));
    }

    #[test]
    fn bad_locations() {
        let c = RedirectChain::new(url("http://a.test/0"), 5);
        assert_eq!(c.resolve(None), Err(RedirectError::MissingLocation));
        assert_eq!(c.resolve(Some("  ")), Err(RedirectError::MissingLocation));
        assert!(matches!(
            c.resolve(Some("mailto:x@y")),
            Err(RedirectError::BadLocation { .. })
        ));
        assert!(matches!(
            c.resolve(Some("http://[::1")),
            Err(RedirectError::BadLocation { .. })
        ));
    }
}
