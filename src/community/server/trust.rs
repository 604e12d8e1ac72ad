//! The web of trust's daily snapshots, as the reference client fetches
//! them: unsigned GETs of `latest.json` and `trust-YYYY-MM-DD.json`, under
//! `/trust/` and at the root. A date's snapshot is built at the first
//! request on that UTC date and served byte for byte the same afterwards;
//! after the first request of a day each answer is one primary-key read.

use super::{AppState, err, now_f};
use crate::community::standing::{date_of, is_date};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

async fn snapshot(st: Arc<AppState>, date: String) -> Response {
    let now = now_f();
    let today = date_of(now);
    let build = date == today;
    let span = tracing::Span::current();
    let got = tokio::task::spawn_blocking(move || {
        span.in_scope(|| st.store.trust_snapshot(&date, build, now))
    })
    .await;
    match got {
        Ok(Ok(Some(body))) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "public, max-age=300"),
            ],
            body,
        )
            .into_response(),
        Ok(Ok(None)) => err(
            StatusCode::NOT_FOUND,
            "not_found",
            "no trust snapshot of that date (one is made on the first request of each UTC day)",
        )
        .into_response(),
        Ok(Err(e)) => super::ApiError::from(e).into_response(),
        Err(e) => err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the trust snapshot's work",
            format!("ended abnormally: {e}"),
        )
        .into_response(),
    }
}

/// `GET /trust/latest.json` and `GET /latest.json`: today's snapshot.
pub(super) async fn latest(State(st): State<Arc<AppState>>) -> Response {
    snapshot(st, date_of(now_f())).await
}

/// `GET /trust/trust-{date}` and `GET /trust-{date}`, `date` being
/// `YYYY-MM-DD.json`.
pub(super) async fn dated(State(st): State<Arc<AppState>>, Path(file): Path<String>) -> Response {
    let date = file.strip_suffix(".json").unwrap_or("");
    if !is_date(date) {
        return err(
            StatusCode::BAD_REQUEST,
            "bad_date",
            "a snapshot is named trust-YYYY-MM-DD.json",
        )
        .into_response();
    }
    snapshot(st, date.to_owned()).await
}
