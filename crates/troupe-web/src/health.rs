//! `/healthz`, `/readyz` and `/metrics`, without a session: for process
//! supervisors, load balancers and Prometheus. `troupe worker --health
//! ADDR` serves them on their own address; `troupe serve` beside its pages.
//!
//! `/healthz` answers 200 while the process serves at all; `/readyz` 200
//! when the store answers (503 with why otherwise); `/metrics` the
//! Prometheus text exposition (`troupe_host::metrics`).

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use troupe_store::Store;

/// What the endpoints ask of the process.
pub trait Probe: Send + Sync + 'static {
    /// `Err(why)` when the process should not be sent work.
    fn ready(&self) -> Result<(), String>;
    /// The metrics, in the Prometheus text format.
    fn metrics(&self) -> Result<String, String>;
}

/// A probe of a store alone (`troupe serve`), or of a worker's host with
/// its store.
#[derive(Debug)]
pub struct StoreProbe {
    pub store: Store,
    pub host: Option<troupe_host::Host>,
}

impl Probe for StoreProbe {
    fn ready(&self) -> Result<(), String> {
        self.store.runnable().map(|_| ()).map_err(|e| e.to_string())
    }

    fn metrics(&self) -> Result<String, String> {
        let gauges = self.store.gauges().map_err(|e| e.to_string())?;
        Ok(troupe_host::metrics::render(self.host.as_ref(), &gauges))
    }
}

/// The three routes, over `probe`.
pub fn health_router(probe: Arc<dyn Probe>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(probe)
}

async fn readyz(State(probe): State<Arc<dyn Probe>>) -> Response {
    match tokio::task::spawn_blocking(move || probe.ready()).await {
        Ok(Ok(())) => "ready\n".into_response(),
        Ok(Err(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn metrics(State(probe): State<Arc<dyn Probe>>) -> Response {
    match tokio::task::spawn_blocking(move || probe.metrics()).await {
        Ok(Ok(text)) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Ok(Err(why)) => (StatusCode::SERVICE_UNAVAILABLE, format!("# {why}\n")).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Serves the health routes on `listener` until the future is dropped.
pub async fn serve_health(
    listener: tokio::net::TcpListener,
    probe: Arc<dyn Probe>,
) -> Result<(), crate::WebError> {
    crate::serve_connections(listener, health_router(probe)).await
}
