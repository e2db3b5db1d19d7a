//! Per-address politeness (beside the per-host limits of `host.rs`): at most
//! `max_in_flight_per_ip` requests in flight to one server address, over
//! every host name that resolves to it, so one machine behind many names is
//! not fetched once per name at a time (Nutch's `fetcher.queue.mode = byIP`).
//!
//! In a crawl that several worker processes share, the limit is
//! crawl-wide ([`IpLimits::shared`]): after its own slot, a request takes
//! one of the address's slots in the store ([`SharedLimits`]), polling
//! while every slot is held, and frees it when it ends. A slot expires
//! after the request timeout plus [`SLOT_GRACE`], so a worker that dies
//! holds none for long.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

use crate::config::Settings;
use crate::fetch::HostResolver;
use crate::store::SharedLimits;

/// How long a host name's resolved address is reused.
const RESOLVE_TTL: Duration = Duration::from_secs(300);

/// How long a crawl-wide slot outlives the request timeout.
pub const SLOT_GRACE: Duration = Duration::from_secs(10);

/// The longest pause between two asks for a crawl-wide slot.
const POLL_MAX: Duration = Duration::from_millis(50);

/// The per-address limits of a crawl. Cheap to share behind an `Arc`.
pub struct IpLimits {
    max: usize,
    rules: HostResolver,
    slots: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
    resolved: Mutex<HashMap<String, (Option<IpAddr>, Instant)>>,
    shared: Option<Shared>,
}

/// The crawl-wide slots, and what names this process's holders.
struct Shared {
    limits: Arc<dyn SharedLimits>,
    /// Unique to this process: the worker id and a random part.
    prefix: String,
    next: std::sync::atomic::AtomicU64,
    ttl: Duration,
}

impl std::fmt::Debug for IpLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpLimits")
            .field("max", &self.max)
            .field("shared", &self.shared.is_some())
            .finish_non_exhaustive()
    }
}

/// A crawl-wide slot, freed on drop.
struct SharedSlot {
    limits: Arc<dyn SharedLimits>,
    addr: String,
    holder: String,
}

impl Drop for SharedSlot {
    fn drop(&mut self) {
        let (limits, addr, holder) = (
            self.limits.clone(),
            std::mem::take(&mut self.addr),
            std::mem::take(&mut self.holder),
        );
        let free = move || {
            if let Err(e) = limits.free_slot(&addr, &holder) {
                tracing::debug!("politeness: freeing a slot of {addr}: {e} (it expires)");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(free);
            }
            Err(_) => free(),
        }
    }
}

/// One of the `max_in_flight_per_ip` slots of an address; freed on drop.
pub struct IpPermit {
    _slot: Option<OwnedSemaphorePermit>,
    _shared: Option<SharedSlot>,
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
            shared: None,
        }
    }

    /// These limits, crawl-wide: each request also holds one of the
    /// address's slots in `limits` (the store the crawl's worker processes
    /// share); `worker` names this process's holders.
    pub fn shared(mut self, settings: &Settings, limits: Arc<dyn SharedLimits>, worker: u16) -> Self {
        let salt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id());
        self.shared = Some(Shared {
            limits,
            prefix: format!("{worker}:{salt:x}"),
            next: std::sync::atomic::AtomicU64::new(0),
            ttl: settings.fetch.timeout + SLOT_GRACE,
        });
        self
    }

    /// Wait for one of `ip`'s crawl-wide slots. A store that fails leaves
    /// the request to the local limit (with a warning), not failed.
    async fn take_shared(&self, ip: IpAddr) -> Option<SharedSlot> {
        let sh = self.shared.as_ref()?;
        let holder = format!(
            "{}:{}",
            sh.prefix,
            sh.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let addr = ip.to_string();
        let mut pause = Duration::from_millis(1);
        loop {
            let (limits, a, h, max, ttl) = (sh.limits.clone(), addr.clone(), holder.clone(), self.max, sh.ttl);
            let got = tokio::task::spawn_blocking(move || limits.take_slot(&a, max, &h, ttl)).await;
            match got {
                Ok(Ok(true)) => {
                    return Some(SharedSlot {
                        limits: sh.limits.clone(),
                        addr,
                        holder,
                    })
                }
                Ok(Ok(false)) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(POLL_MAX);
                }
                Ok(Err(e)) => {
                    tracing::warn!(
                        "politeness: the crawl-wide slots of {addr}: {e}; this request holds only a local one"
                    );
                    return None;
                }
                Err(e) => {
                    tracing::warn!("politeness: the crawl-wide slots of {addr}: {e}");
                    return None;
                }
            }
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
        let shared = match (ip, self.max) {
            (Some(ip), max) if max > 0 => self.take_shared(ip).await,
            _ => None,
        };
        IpPermit {
            _slot: slot,
            _shared: shared,
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

    /// [`SharedLimits`] in memory: the slots two "processes" share.
    #[derive(Default)]
    struct FakeShared(Mutex<HashMap<String, Vec<String>>>);

    impl SharedLimits for FakeShared {
        fn take_slot(
            &self,
            addr: &str,
            max: usize,
            holder: &str,
            _: Duration,
        ) -> Result<bool, crate::store::StoreError> {
            let mut all = self.0.lock();
            let held = all.entry(addr.to_string()).or_default();
            if held.len() < max {
                held.push(holder.to_string());
                return Ok(true);
            }
            Ok(false)
        }
        fn free_slot(&self, addr: &str, holder: &str) -> Result<(), crate::store::StoreError> {
            self.0
                .lock()
                .entry(addr.to_string())
                .or_default()
                .retain(|h| h != holder);
            Ok(())
        }
        fn take_request(&self, _: u32) -> Result<Duration, crate::store::StoreError> {
            Ok(Duration::ZERO)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_processes_share_an_address_limit() {
        let settings = Settings::test_web(&["politeness.max_in_flight_per_ip=2".to_string()]).unwrap();
        let store: Arc<dyn SharedLimits> = Arc::new(FakeShared::default());
        let p1 = Arc::new(IpLimits::new(&settings).shared(&settings, store.clone(), 1));
        let p2 = Arc::new(IpLimits::new(&settings).shared(&settings, store.clone(), 2));
        let a = p1.acquire(&Url::parse("http://a.test/").unwrap()).await;
        let b = p2.acquire(&Url::parse("http://b.test/").unwrap()).await;
        // Each process has a local slot left, but the address has none.
        let third = {
            let p2 = p2.clone();
            tokio::spawn(async move { p2.acquire(&Url::parse("http://c.test/").unwrap()).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !third.is_finished(),
            "a third request to the address waits, in either process"
        );
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .unwrap()
            .unwrap();
        assert!(c.waited >= Duration::from_millis(90));
        drop((b, c));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            store.take_slot("127.0.0.1", 2, "x", Duration::ZERO).unwrap(),
            "dropped permits free their slots"
        );
    }
}
