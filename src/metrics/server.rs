//! The metrics endpoint: an axum server on the crawl's runtime answering
//! `GET /metrics` (Prometheus text) and `GET /status` (JSON) until the crawl
//! ends. A scrape reads the counters, asks the crawl loop for its [`Probe`]
//! and sums the directory sizes on a blocking thread, never on the async
//! threads the crawl uses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{Metrics, MetricsError, Probe};

/// What the crawl loop knows at scrape time (see [`Probe`]).
pub type ProbeFn = Arc<dyn Fn() -> Probe + Send + Sync>;

/// How long [`MetricsServer::stop`] lets open scrapes finish.
const STOP_GRACE: Duration = Duration::from_secs(2);

struct ServerState {
    metrics: Arc<Metrics>,
    probe: ProbeFn,
}

/// The running endpoint. It stops on [`MetricsServer::stop`] or when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Serve `metrics` on `listener` (bound by the caller, see
    /// [`super::bind`]) as a task of the current tokio runtime.
    pub fn start(metrics: Arc<Metrics>, probe: ProbeFn, listener: std::net::TcpListener) -> Result<Self, MetricsError> {
        listener.set_nonblocking(true).map_err(MetricsError::Listener)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(MetricsError::Listener)?;
        let addr = listener.local_addr().map_err(MetricsError::Listener)?;
        let state = Arc::new(ServerState { metrics, probe });
        let app = axum::Router::new()
            .route("/metrics", axum::routing::get(get_metrics))
            .route("/status", axum::routing::get(get_status))
            .with_state(state);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("metrics endpoint on {addr} failed: {e}");
            }
        });
        tracing::info!("metrics: http://{addr}/metrics and http://{addr}/status");
        Ok(MetricsServer {
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The address served (with the real port when bound to port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop serving: scrapes under way get [`STOP_GRACE`] to finish; when
    /// this returns the port is closed.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Run `f` with the state on a blocking thread (the probe takes locks of
/// the crawl, and the directory sizes read the file system).
async fn scrape(state: Arc<ServerState>, f: fn(&Metrics, Probe) -> String) -> Result<String, StatusCode> {
    tokio::task::spawn_blocking(move || f(&state.metrics, (state.probe)()))
        .await
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
}

async fn get_metrics(State(state): State<Arc<ServerState>>) -> Response {
    match scrape(state, Metrics::encode).await {
        Ok(text) => ([(header::CONTENT_TYPE, Metrics::CONTENT_TYPE)], text).into_response(),
        Err(code) => code.into_response(),
    }
}

async fn get_status(State(state): State<Arc<ServerState>>) -> Response {
    match scrape(state, Metrics::status_json).await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(code) => code.into_response(),
    }
}
