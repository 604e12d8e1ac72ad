//! What every request of a server leaves behind: a request id, a tracing
//! span, one log line when it is answered, and its metrics ([`observe`],
//! the outermost middleware of `palaver serve`'s router). An internal
//! failure is logged here with its detail ([`internal`]) while the client
//! gets a stable code and the request id only.
//!
//! The request id is the client's `X-Request-Id` when it is sane (1 to
//! [`MAX_REQUEST_ID`] visible ASCII characters: the community's signed
//! requests carry a fresh one each), else one made here; the response
//! echoes it in `X-Request-Id`. The request itself is never changed (a
//! signed request's id is part of what its signature covers).

use super::metrics::{self, InFlight, UNMATCHED};
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::fmt::Display;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// The header that carries the request id both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest client-chosen request id taken (the community's signed
/// requests allow as many).
pub const MAX_REQUEST_ID: usize = 128;

/// A request's id, in its extensions for handlers that want it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub Arc<str>);

tokio::task_local! {
    static CURRENT: Arc<str>;
}

/// Is `id` a request id worth keeping: 1 to [`MAX_REQUEST_ID`] bytes, each
/// visible ASCII (no spaces, no control characters, nothing that could
/// forge a log line or a header)?
pub fn sane_request_id(id: &str) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// A fresh request id: 32 random hex digits.
pub fn new_request_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The id of the request being served by this task, if any.
pub fn request_id() -> Option<Arc<str>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Logs an internal failure (`what` failed: `detail`) in the current
/// request's span, and returns the request id the client is told.
pub fn internal(what: &str, detail: &dyn Display) -> Option<Arc<str>> {
    tracing::error!(error = %detail, "internal error: {what}");
    request_id()
}

/// The message a client gets for an internal failure, in place of its
/// detail.
pub fn internal_message(id: Option<&str>) -> String {
    match id {
        Some(id) => format!(
            "the server failed to handle this request; its log has the details under request id {id}"
        ),
        None => "the server failed to handle this request; its log has the details".to_owned(),
    }
}

/// Whether a route's answers are logged at debug rather than info: the
/// probes a load balancer and a scraper send every few seconds.
fn quiet(route: &str) -> bool {
    matches!(route, "/healthz" | "/metrics")
}

/// The middleware: picks the request id, runs the request in a span
/// (`request` with `request_id`, `method`, `route`), echoes the id, logs one
/// line when it is answered (status, latency) and records its metrics.
pub async fn observe(mut req: Request, next: Next) -> Response {
    let start = Instant::now();
    let id: Arc<str> = match req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        Some(v) if sane_request_id(v) => Arc::from(v),
        _ => Arc::from(new_request_id()),
    };
    let route: Arc<str> = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| Arc::from(p.as_str()))
        .unwrap_or_else(|| Arc::from(UNMATCHED));
    let method = req.method().clone();
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %method,
        route = %route,
    );
    let _in_flight = InFlight::start();
    let mut resp = CURRENT
        .scope(id.clone(), next.run(req).instrument(span.clone()))
        .await;
    let took = start.elapsed();
    let status = resp.status().as_u16();
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    // Whole microseconds: no float noise in the line.
    let latency_ms = took.as_micros() as f64 / 1000.0;
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(status, latency_ms, "answered");
        } else if quiet(&route) && status < 400 {
            tracing::debug!(status, latency_ms, "answered");
        } else {
            tracing::info!(status, latency_ms, "answered");
        }
    });
    metrics::request_done(method.as_str(), &route, status, took);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_bounded_visible_ascii() {
        assert!(sane_request_id("abc-123_XYZ.~:/"));
        assert!(sane_request_id(&"a".repeat(MAX_REQUEST_ID)));
        assert!(!sane_request_id(""));
        assert!(!sane_request_id(&"a".repeat(MAX_REQUEST_ID + 1)));
        assert!(!sane_request_id("a b"));
        assert!(!sane_request_id("a\nlevel=error"));
        assert!(!sane_request_id("é"));
        let fresh = new_request_id();
        assert_eq!(fresh.len(), 32);
        assert!(sane_request_id(&fresh));
        assert_ne!(fresh, new_request_id());
    }

    #[tokio::test]
    async fn the_request_id_is_known_inside_the_scope_only() {
        assert_eq!(request_id(), None);
        let inside = CURRENT
            .scope(Arc::from("rid-1"), async { request_id() })
            .await;
        assert_eq!(inside.as_deref(), Some("rid-1"));
        assert!(internal_message(Some("rid-1")).contains("rid-1"));
    }
}
