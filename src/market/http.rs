//! The market's endpoints, merged with the community's into one router
//! ([`crate::services::server`]):
//!
//! | method | path | auth |
//! |---|---|---|
//! | GET | `/.well-known/aiguishi.json` | none |
//! | GET | `/api/market` (`?all=1` adds finished jobs) | none |
//! | GET | `/api/gtl/schema` | none |
//! | GET | `/api/gtl/policies/{id}` (ETag = PolicyHash) | none |
//! | POST | `/api/gtl` | `Authorization: Bearer <token>` (HELLO needs none) |
//! | GET | `/api/gtl/transactions/{id}` | none |
//! | GET | `/api/gtl/accounts/{principal_id}` | none |
//!
//! `POST /api/gtl/token` is a community route, because it is authenticated
//! with the community's signed-request scheme.
//!
//! Bodies are limited to [`super::MAX_MESSAGE_BYTES`] (413 `too_large`,
//! refused by Content-Length before a byte is read) and must arrive within
//! the server's read timeout (408 `timeout`); a path id that does not decode
//! is a 400. Every error is the market's JSON envelope.
//!
//! A store failure answers 500 `internal` with the request id, never its
//! detail (that is logged). Every handler that touches the market runs it
//! on tokio's blocking pool (`spawn_blocking`, timed as a store call): the
//! store's calls block (SQLite's group commit waits
//! for its batch; the PostgreSQL client runs its own runtime and must never
//! run on an async worker thread).

use super::view::Jobs;
use super::{Market, MarketError, policy};
use crate::json::Value;
use crate::obj;
use crate::web::{buffer_body, closing, json_response, metrics, observe};
use axum::Router;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

fn json(status: u16, v: &Value) -> Response {
    json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        v,
    )
}

/// A 200 with a view type, its fields in declaration order.
fn view(v: &impl serde::Serialize) -> Response {
    match serde_json::to_string(v) {
        Ok(text) => ([("content-type", "application/json")], text).into_response(),
        Err(e) => MarketError::Store(e.to_string()).into_response(),
    }
}

/// A refusal as the market's envelope ([`refusal`]).
impl IntoResponse for MarketError {
    fn into_response(self) -> Response {
        let (status, body) = refusal(&self);
        json(status, &body)
    }
}

/// A refusal's status and envelope, as every entry (REST, MCP) answers it.
/// A store failure's detail is logged (with the request id) and the caller
/// gets `{"ok": false, "error": "internal", "message": …, "request_id": …}`.
pub fn refusal(e: &MarketError) -> (u16, Value) {
    if let MarketError::Store(detail) = e {
        let id = observe::internal("the market's store", detail);
        let mut m = obj! {
            "ok" => false, "error" => "internal", "message" => observe::internal_message(id.as_deref()),
        };
        if let Some(id) = id {
            m.insert("request_id", Value::from(&*id));
        }
        return (e.status(), Value::Object(m));
    }
    (e.status(), e.to_json())
}

/// Runs market work on tokio's blocking pool, in the request's span, timed
/// as the store call `op` ([`metrics::timed`]).
pub(crate) async fn work<T: Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> Result<T, MarketError> + Send + 'static,
) -> Result<T, MarketError> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| metrics::timed(op, f)))
        .await
        .unwrap_or_else(|e| {
            Err(MarketError::Store(format!(
                "the work ended abnormally: {e}"
            )))
        })
}

/// The discovery document.
pub fn discovery() -> Value {
    Value::Object(obj! {
        "name" => "palaver market core",
        "gtl_versions" => Value::Array(super::GTL_VERSIONS.iter().map(|v| Value::from(*v)).collect()),
        "endpoints" => Value::Object(obj! {
            "market" => "/api/market", "schema" => "/api/gtl/schema", "policies" => "/api/gtl/policies/{id}",
            "gtl" => "/api/gtl", "transactions" => "/api/gtl/transactions/{id}",
            "accounts" => "/api/gtl/accounts/{principal_id}", "token" => "/api/gtl/token",
            "mcp" => "/mcp",
        }),
        "policies" => Value::Array(vec![Value::Object(obj! { "id" => policy::POLICY_ID, "policy_hash" => policy::policy_hash() })]),
        "auth" => "bearer",
        "token_issuance" => "POST /api/gtl/token with palaver's signed-request headers (X-Public-Key, X-Timestamp, X-Request-Id, X-Signature) from a registered identity",
        "signature_scheme" => super::SIGNATURE_SCHEME,
        "canonicalization" => super::CANONICALIZATION,
        "asset" => "GTU (sandbox test units, not currency)",
    })
}

/// A `{id}` path segment; one that does not decode is a 400 with the
/// market's error envelope.
struct Id(String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Id, Response> {
        match Path::<String>::from_request_parts(parts, state).await {
            // No id holds U+0000 (no message may), and PostgreSQL could
            // not even look one up.
            Ok(Path(id)) if id.contains('\0') => Err(MarketError::Malformed(
                "the id in the path holds a U+0000 (NUL) character".into(),
            )
            .into_response()),
            Ok(Path(id)) => Ok(Id(id)),
            Err(e) => Err(MarketError::Malformed(format!(
                "the id in the path is not valid: {}",
                e.body_text()
            ))
            .into_response()),
        }
    }
}

/// The market's body guard: [`super::MAX_MESSAGE_BYTES`] and the read
/// timeout, refused with the market's envelope (413 `too_large`, 408
/// `timeout`).
async fn guard_body(
    State(timeout): State<std::time::Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match buffer_body(req, super::MAX_MESSAGE_BYTES, timeout).await {
        Ok(req) => next.run(req).await,
        Err(p) => closing(json_response(
            p.status(),
            &Value::Object(obj! { "ok" => false, "error" => p.code(), "message" => p.message() }),
        )),
    }
}

async fn well_known() -> Response {
    json(200, &discovery())
}

async fn list_market(State(m): State<Arc<Market>>, u: Uri) -> Response {
    let all = u
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "all=1" || kv == "all=true"));
    match work("market.listing", move || m.listing(all)).await {
        Ok(jobs) => view(&Jobs {
            jobs,
            policy_hash: policy::policy_hash(),
        }),
        Err(e) => e.into_response(),
    }
}

async fn schema() -> Response {
    json(200, &super::schema::schema())
}

async fn get_policy(Id(id): Id) -> Response {
    if id != policy::POLICY_ID {
        return MarketError::NotFound(format!(
            "no policy {id}: this market publishes {}",
            policy::POLICY_ID
        ))
        .into_response();
    }
    let mut r = json(200, &policy::policy());
    if let Ok(v) = format!("\"{}\"", policy::policy_hash()).parse() {
        r.headers_mut().insert("etag", v);
    }
    r
}

pub fn bearer(h: &HeaderMap) -> Option<String> {
    let v = h.get("authorization")?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

async fn post_gtl(State(m): State<Arc<Market>>, h: HeaderMap, body: axum::body::Bytes) -> Response {
    let token = bearer(&h);
    match work("market.submit", move || m.submit(token.as_deref(), &body)).await {
        Ok(v) => json(200, &v),
        Err(e) => e.into_response(),
    }
}

async fn get_transaction(State(m): State<Arc<Market>>, Id(id): Id) -> Response {
    match work("market.transaction", move || m.transaction(&id)).await {
        Ok(v) => view(&v),
        Err(e) => e.into_response(),
    }
}

async fn get_account(State(m): State<Arc<Market>>, Id(id): Id) -> Response {
    let who = id.clone();
    match work("market.balance", move || m.balance(&who)).await {
        Ok(Some(b)) => json(
            200,
            &Value::Object(obj! { "principal_id" => id, "balance" => b, "asset" => "GTU" }),
        ),
        Ok(None) => MarketError::NotFound(format!("no principal {id}")).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The market's routes over `market`; a request's head and then its body
/// must each arrive within `read_timeout`.
pub fn routes(market: Arc<Market>, read_timeout: std::time::Duration) -> Router {
    Router::new()
        .route("/.well-known/aiguishi.json", get(well_known))
        .route("/api/market", get(list_market))
        .route("/api/gtl/schema", get(schema))
        .route("/api/gtl/policies/{id}", get(get_policy))
        .route("/api/gtl", axum::routing::post(post_gtl))
        .route("/api/gtl/transactions/{id}", get(get_transaction))
        .route("/api/gtl/accounts/{id}", get(get_account))
        .layer(axum::extract::DefaultBodyLimit::max(
            super::MAX_MESSAGE_BYTES,
        ))
        .with_state(market)
        .layer(axum::middleware::from_fn_with_state(
            read_timeout,
            guard_body,
        ))
}
