//! Serving the test web: an axum server on a local address that answers
//! every request with [`TestWeb::respond`], records each request in an
//! in-memory log (start and end instants, so politeness tests can check
//! per-host spacing and concurrency), and stops on drop or
//! [`RunningTestWeb::shutdown`].

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::generate::host_name;
use super::{GroundTruth, TestWeb};

/// Errors of serving the test web.
#[derive(Debug, thiserror::Error)]
pub enum TestWebError {
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The ground truth file could not be written.
    #[error("cannot write the ground truth to {path}: {source}")]
    WriteTruth {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The server failed while running.
    #[error("test web server failed: {0}")]
    Serve(std::io::Error),
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLogEntry {
    /// Host name from the `Host` header: lower case, without the port.
    pub host: String,
    /// Path and query as requested.
    pub target: String,
    /// HTTP method.
    pub method: String,
    /// The status answered.
    pub status: u16,
    /// The `If-None-Match` header of a conditional request.
    pub if_none_match: Option<String>,
    /// The `If-Modified-Since` header of a conditional request.
    pub if_modified_since: Option<String>,
    /// When the request's headers had been read.
    pub start: Instant,
    /// When the response body had been handed to the connection (or the
    /// response was dropped); `None` while the request is still in flight.
    pub end: Option<Instant>,
}

#[derive(Default)]
struct Log {
    /// Id of `entries[0]`.
    base: u64,
    entries: Vec<RequestLogEntry>,
}

struct ServerState {
    web: Arc<TestWeb>,
    port: u16,
    log: Mutex<Log>,
    busy_once_done: AtomicBool,
    /// The epoch of `changing.test` (see [`super::changing`]).
    epoch: AtomicU64,
}

/// A running test web server. The server stops when this is dropped or
/// [`shutdown`](RunningTestWeb::shutdown) is awaited.
pub struct RunningTestWeb {
    /// The address the server listens on (with the real port when started on port 0).
    pub addr: SocketAddr,
    state: Arc<ServerState>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl std::fmt::Debug for RunningTestWeb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningTestWeb")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningTestWeb {
    /// Binds `addr` (port 0 picks a free port) and serves `web` on it in a
    /// tokio task. Must be called inside a tokio runtime.
    pub async fn start(web: Arc<TestWeb>, addr: SocketAddr) -> std::io::Result<RunningTestWeb> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(ServerState {
            web,
            port: addr.port(),
            log: Mutex::new(Log::default()),
            busy_once_done: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
        });
        let app = axum::Router::new().fallback(handle).with_state(Arc::clone(&state));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(RunningTestWeb {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://HOST:PORT/PATH` on this server (`path` should start with '/').
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port())
    }

    /// The seed URLs (see [`TestWeb::seeds`]).
    pub fn seeds(&self) -> Vec<String> {
        self.state.web.seeds(self.port())
    }

    /// The ground truth with this server's port.
    pub fn truth(&self) -> GroundTruth {
        self.state.web.truth(self.port())
    }

    /// The truth of the sitemap cases on `sitemaps.test` with this server's port.
    pub fn sitemap_truth(&self) -> super::SitemapTruth {
        super::sitemap_truth(self.port())
    }

    /// The test web being served.
    pub fn web(&self) -> &Arc<TestWeb> {
        &self.state.web
    }

    /// Every request received since start (or the last
    /// [`clear_requests`](RunningTestWeb::clear_requests)), in arrival order.
    pub fn requests(&self) -> Vec<RequestLogEntry> {
        self.state.log.lock().entries.clone()
    }

    /// Forgets the logged requests, and re-arms the first-request 429 of
    /// `errors.test/busy-once`.
    pub fn clear_requests(&self) {
        let mut log = self.state.log.lock();
        log.base += log.entries.len() as u64;
        log.entries.clear();
        self.state.busy_once_done.store(false, Ordering::SeqCst);
    }

    /// The epoch of `changing.test` (0 at start).
    pub fn epoch(&self) -> u64 {
        self.state.epoch.load(Ordering::SeqCst)
    }

    /// Moves `changing.test` to its next epoch: its pages change by their
    /// [`Schedule`](super::changing::Schedule). Returns the new epoch.
    pub fn bump_epoch(&self) -> u64 {
        self.state.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Stops accepting connections and waits (up to 5 s) for open ones to finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(Duration::from_secs(5), &mut task).await.is_err() {
                task.abort();
            }
        }
    }

    /// Serves until the server fails (`simcrawl testweb` waits on it beside Ctrl-C).
    pub async fn wait(&mut self) -> Result<(), TestWebError> {
        match self.task.as_mut() {
            Some(task) => match task.await {
                Ok(r) => r.map_err(TestWebError::Serve),
                Err(e) => Err(TestWebError::Serve(std::io::Error::other(e))),
            },
            None => Ok(()),
        }
    }
}

impl Drop for RunningTestWeb {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Marks a log entry as finished when dropped.
struct EndGuard {
    state: Arc<ServerState>,
    id: u64,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        let now = Instant::now();
        let mut log = self.state.log.lock();
        if let Some(i) = self.id.checked_sub(log.base) {
            if let Some(e) = log.entries.get_mut(i as usize) {
                e.end = Some(now);
            }
        }
    }
}

/// A one-chunk body with an exact length that finishes its log entry when
/// the connection drops it (after the last byte was handed over).
struct LoggedBody {
    data: Option<Bytes>,
    len: u64,
    _guard: EndGuard,
}

impl http_body::Body for LoggedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(if self.data.is_some() { self.len } else { 0 })
    }
}

async fn handle(State(state): State<Arc<ServerState>>, req: Request) -> Response {
    let start = Instant::now();
    let raw_host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()))
        .unwrap_or_default();
    let host = host_name(&raw_host);
    let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str()).to_string();
    let [if_none_match, if_modified_since] = [header::IF_NONE_MATCH, header::IF_MODIFIED_SINCE].map(|name| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    let mut validators = None;
    let mut reply = if host == super::changing::HOST {
        let cond = super::changing::Conditions {
            if_none_match: if_none_match.as_deref(),
            if_modified_since: if_modified_since.as_deref(),
        };
        let epoch = if target == super::changing::NEXT_EPOCH {
            state.epoch.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            state.epoch.load(Ordering::SeqCst)
        };
        let a = super::changing::respond(state.web.options().seed, epoch, &target, &cond);
        validators = Some((a.etag, a.last_modified));
        let mut reply = super::generate::html(a.status, a.body);
        if a.status == 404 {
            reply.content_type = Some("text/plain; charset=utf-8");
        }
        reply
    } else {
        state.web.respond(&host, &target, state.port)
    };
    if host == "errors.test" && target == "/busy-once" && !state.busy_once_done.swap(true, Ordering::SeqCst) {
        reply.status = 429;
        reply.retry_after_secs = Some(1);
    }
    let id = {
        let mut log = state.log.lock();
        let id = log.base + log.entries.len() as u64;
        log.entries.push(RequestLogEntry {
            host,
            target,
            method: req.method().to_string(),
            status: reply.status,
            if_none_match,
            if_modified_since,
            start,
            end: None,
        });
        id
    };
    let guard = EndGuard {
        state: Arc::clone(&state),
        id,
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let len = reply.body.len() as u64;
    let mut resp = Response::new(Body::new(LoggedBody {
        data: Some(reply.body),
        len,
        _guard: guard,
    }));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(header::SERVER, HeaderValue::from_static("simcrawl-testweb"));
    if let Some(ct) = reply.content_type {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    if let Some(loc) = reply.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, loc);
    }
    if let Some(secs) = reply.retry_after_secs {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some((etag, date)) = validators {
        for (name, v) in [(header::ETAG, etag), (header::LAST_MODIFIED, date)] {
            if let Some(v) = v.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(name, v);
            }
        }
    }
    resp
}

/// Writes `truth` as pretty JSON to `path`.
pub fn write_truth(truth: &GroundTruth, path: &Path) -> Result<(), TestWebError> {
    let err = |source| TestWebError::WriteTruth {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(err)?;
    let mut w = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, truth).map_err(|e| err(e.into()))?;
    w.write_all(b"\n").map_err(err)?;
    w.flush().map_err(err)
}
