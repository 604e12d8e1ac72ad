//! `GET /metrics`: the process's metrics ([`crate::web::metrics`]) in the
//! Prometheus/OpenMetrics text format, with the gauges read at scrape time
//! first — the community's open invitations and live group rooms, and the
//! PostgreSQL pools' connections. Off unless `palaver serve --metrics`
//! (on the main listener) or `--metrics-bind ADDR` (a listener of its own,
//! for a private interface); docs/deploy.md lists every metric.

use crate::community::Store;
use crate::market::Market;
use crate::web::metrics::{self, OPENMETRICS, PROMETHEUS_TEXT};
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use std::sync::Arc;

/// The path the metrics are served on.
pub const PATH: &str = "/metrics";

struct Sources {
    store: Arc<dyn Store>,
    market: Option<Arc<Market>>,
}

/// The `GET /metrics` handler over `store` (and `market`'s pool, if any),
/// for the main router ([`super::server::router_with`]).
pub fn get_metrics(store: Arc<dyn Store>, market: Option<Arc<Market>>) -> MethodRouter {
    let src = Arc::new(Sources { store, market });
    get(move |h: HeaderMap| scrape(src.clone(), h))
}

/// A router of `GET /metrics` alone, for a listener of its own
/// (`--metrics-bind`), every request observed like the main router's.
pub fn own_router(store: Arc<dyn Store>, market: Option<Arc<Market>>) -> Router {
    crate::community::server::with_fallbacks(Router::new().route(PATH, get_metrics(store, market)))
        .layer(axum::middleware::from_fn(crate::web::observe::observe))
}

/// The scrape: OpenMetrics when the client asks for it (Prometheus does),
/// else the Prometheus text format 0.0.4.
async fn scrape(src: Arc<Sources>, h: HeaderMap) -> Response {
    let openmetrics = h
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let span = tracing::Span::current();
    let text = tokio::task::spawn_blocking(move || {
        span.in_scope(|| {
            read_gauges(&src);
            if openmetrics {
                metrics::render()
            } else {
                metrics::render_text()
            }
        })
    })
    .await;
    let kind = if openmetrics {
        OPENMETRICS
    } else {
        PROMETHEUS_TEXT
    };
    match text {
        Ok(text) => (StatusCode::OK, [("content-type", kind)], text).into_response(),
        Err(e) => {
            crate::web::observe::internal("rendering the metrics", &e);
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Sets the scrape-time gauges. A store that does not answer leaves the
/// last values (and says so in the log): the scrape still shows the rest.
fn read_gauges(src: &Sources) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    match metrics::timed("gauges", || src.store.gauges(now)) {
        Ok(g) => metrics::set_community(g),
        Err(e) => tracing::warn!(error = %e, "metrics: the community's gauges could not be read"),
    }
    if let Some(p) = src.store.pool_state() {
        metrics::set_pool("community", p);
    }
    if let Some(p) = src.market.as_ref().and_then(|m| m.pool_state()) {
        metrics::set_pool("market", p);
    }
}
