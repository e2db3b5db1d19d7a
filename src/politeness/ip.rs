//! Per-address politeness (beside the per-host limits of `host.rs`): at most
//! `max_in_flight_per_ip` requests in flight to one server address, over
//! every host name that resolves to it, so one machine behind many names is
//! not fetched once per name at a time (Nutch's `fetcher.queue.mode = byIP`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

use crate::config::Settings;
use crate::fetch::HostResolver;

/// How long a host name's resolved address is reused.
const RESOLVE_TTL: Duration = Duration::from_secs(300);

/// The per-address limits of a crawl. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct IpLimits {
    max: usize,
    rules: HostResolver,
    slots: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
    resolved: Mutex<HashMap<String, (Option<IpAddr>, Instant)>>,
}

/// One of the `max_in_flight_per_ip` slots of an address; freed on drop.
#[derive(Debug)]
pub struct IpPermit {
    _slot: Option<OwnedSemaphorePermit>,
    /// The server address the request goes to (None: not resolved).
    pub ip: Option<IpAddr>,
    /// How long the request waited for a slot of its address.
    pub waited: Duration,
}

impl IpLimits {
    /// From `[politeness] max_in_flight_per_ip` and `[fetch] resolve`.
    pub fn new(settings: &Settings) -> Self {
        IpLimits {
            max: settings.politeness.max_in_flight_per_ip,
            rules: HostResolver::new(settings.fetch.resolve.clone()),
            slots: Mutex::new(HashMap::new()),
            resolved: Mutex::new(HashMap::new()),
        }
    }

    /// The address `url`'s host resolves to: an IP literal, a `[fetch]
    /// resolve` rule, else DNS (cached for a few minutes); None when it does
    /// not resolve (the fetch then fails on its own).
    pub async fn resolve(&self, url: &Url) -> Option<IpAddr> {
        let host = match url.host()? {
            url::Host::Ipv4(a) => return Some(IpAddr::V4(a)),
            url::Host::Ipv6(a) => return Some(IpAddr::V6(a)),
            url::Host::Domain(d) => d.to_string(),
        };
        if let Some(ip) = self.rules.lookup(&host) {
            return Some(ip);
        }
        if let Some(&(ip, at)) = self.resolved.lock().get(&host) {
            if at.elapsed() < RESOLVE_TTL {
                return ip;
            }
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let ip = tokio::net::lookup_host((host.as_str(), port))
            .await
            .ok()
            .and_then(|mut addrs| addrs.next())
            .map(|a| a.ip());
        self.resolved.lock().insert(host, (ip, Instant::now()));
        ip
    }

    /// Wait for a slot of `url`'s server address (at once when there is no
    /// limit or the host does not resolve).
    pub async fn acquire(&self, url: &Url) -> IpPermit {
        let started = Instant::now();
        let ip = self.resolve(url).await;
        let slot = match (ip, self.max) {
            (Some(ip), max) if max > 0 => {
                let sem = self
                    .slots
                    .lock()
                    .entry(ip)
                    .or_insert_with(|| Arc::new(Semaphore::new(max)))
                    .clone();
                // The semaphore is never closed.
                sem.acquire_owned().await.ok()
            }
            _ => None,
        };
        IpPermit {
            _slot: slot,
            ip,
            waited: started.elapsed(),
        }
    }

    /// The configured limit (0 = none).
    pub fn max(&self) -> usize {
        self.max
    }
}

/// A [`Fetcher`](crate::fetch::Fetcher) whose every request takes a slot of
/// its server address first: for requests the crawl does not account for
/// itself (robots.txt).
pub struct IpLimitedFetcher {
    /// The fetcher that does the request.
    pub inner: Arc<dyn crate::fetch::Fetcher>,
    /// The limits shared with the crawl.
    pub limits: Arc<IpLimits>,
}

impl crate::fetch::Fetcher for IpLimitedFetcher {
    fn fetch<'a>(
        &'a self,
        url: &'a Url,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::fetch::FetchResponse, crate::fetch::FetchError>> {
        Box::pin(async move {
            let _slot = self.limits.acquire(url).await;
            self.inner.fetch(url).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hostile_many_names_one_address_share_the_limit() {
        let settings = Settings::test_web(&["politeness.max_in_flight_per_ip=2".to_string()]).unwrap();
        let limits = Arc::new(IpLimits::new(&settings));
        let a = limits.acquire(&Url::parse("http://a.test/").unwrap()).await;
        let b = limits.acquire(&Url::parse("http://b.test/").unwrap()).await;
        assert_eq!(a.ip, Some("127.0.0.1".parse().unwrap()));
        let third = {
            let limits = limits.clone();
            tokio::spawn(async move { limits.acquire(&Url::parse("http://c.test/").unwrap()).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!third.is_finished(), "a third name of the same address waits");
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .unwrap()
            .unwrap();
        assert!(c.waited >= Duration::from_millis(40));
        drop((b, c));
        // No limit: at once.
        let free = IpLimits::new(&Settings::test_web(&["politeness.max_in_flight_per_ip=0".to_string()]).unwrap());
        let urls: Vec<Url> = (0..10)
            .map(|i| Url::parse(&format!("http://h{i}.test/")).unwrap())
            .collect();
        let all = tokio::time::timeout(
            Duration::from_secs(5),
            futures_util::future::join_all(urls.iter().map(|u| free.acquire(u))),
        )
        .await
        .unwrap();
        assert_eq!(all.len(), 10);
    }
}
