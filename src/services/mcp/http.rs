//! The market tools over MCP's streamable HTTP transport, at [`PATH`] on
//! `palaver serve` (when it runs a market).
//!
//! Every request must carry the market's bearer token
//! (`Authorization: Bearer …`, from `POST /api/gtl/token`), checked before
//! the MCP layer sees it: a missing or unknown token is a 401 with the
//! market's envelope, as `POST /api/gtl` answers it. Bodies are held to the
//! market's limit ([`crate::market::MAX_MESSAGE_BYTES`], 413) and must
//! arrive within the server's read timeout (408), like REST's. The server
//! is stateless (no MCP session to track, each request stands alone) and
//! answers plain JSON.

use super::Palaver;
use crate::json::Value;
use crate::market::{Market, MarketError};
use crate::obj;
use crate::web::{buffer_body, closing, json_response};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use std::time::Duration;

/// Where the MCP entry answers.
pub const PATH: &str = "/mcp";

fn refusal(e: &MarketError) -> Response {
    let (status, body) = crate::market::http::refusal(e);
    json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::UNAUTHORIZED),
        &body,
    )
}

#[derive(Clone)]
struct Gate {
    market: Arc<Market>,
    read_timeout: Duration,
}

/// The body guard and the bearer check, before the MCP layer (the body
/// first, as on `POST /api/gtl`: an oversized body is a 413 whoever sends it).
async fn gate(State(g): State<Gate>, req: Request, next: axum::middleware::Next) -> Response {
    let req = match buffer_body(req, crate::market::MAX_MESSAGE_BYTES, g.read_timeout).await {
        Ok(req) => req,
        Err(p) => {
            return closing(json_response(
                p.status(),
                &Value::Object(
                    obj! { "ok" => false, "error" => p.code(), "message" => p.message() },
                ),
            ));
        }
    };
    let Some(token) = crate::market::http::bearer(req.headers()) else {
        return refusal(&MarketError::Unauthorized(
            "the MCP entry needs the market's bearer token: Authorization: Bearer <token> (POST /api/gtl/token issues one)".into(),
        ));
    };
    let market = g.market.clone();
    let known =
        crate::market::http::work("market.principal", move || market.principal(&token)).await;
    match known {
        Ok(Some(_)) => {}
        Ok(None) => {
            return refusal(&MarketError::Unauthorized(
                "the bearer token is not one this market issued".into(),
            ));
        }
        Err(e) => return refusal(&e),
    }
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    // The body is in memory: one that is not a JSON-RPC message gets the
    // JSON-RPC error it is owed here (−32700 not JSON, −32600 not a
    // message; batches are not part of MCP), not the SDK's bare 415.
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, crate::market::MAX_MESSAGE_BYTES)
        .await
        .unwrap_or_default();
    let rpc_error = |id: serde_json::Value, code: i32, message: String| {
        axum::response::IntoResponse::into_response((
            StatusCode::BAD_REQUEST,
            [("content-type", "application/json")],
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
                .to_string(),
        ))
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(e) => {
            return rpc_error(
                serde_json::Value::Null,
                -32700,
                format!("Parse error: the body is not JSON: {e}"),
            );
        }
        Ok(v) if !v.is_object() => {
            return rpc_error(
                serde_json::Value::Null,
                -32600,
                "Invalid Request: the body must be one JSON-RPC message (an object)".into(),
            );
        }
        Ok(v) => {
            let id = v.get("id").cloned().unwrap_or(serde_json::Value::Null);
            if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v) {
                return rpc_error(
                    id,
                    -32600,
                    format!("Invalid Request: not a JSON-RPC 2.0 message of MCP: {e}"),
                );
            }
        }
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The MCP entry's route over `market`.
pub fn routes(market: Arc<Market>, read_timeout: Duration) -> Router {
    let m = market.clone();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // The bearer token already stands between a browser page and the
        // market; the server answers whatever name it is reached by.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(crate::market::MAX_MESSAGE_BYTES);
    let service: StreamableHttpService<Palaver, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Palaver::market_only(m.clone())),
        Default::default(),
        config,
    );
    Router::new()
        .nest_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(
            Gate {
                market,
                read_timeout,
            },
            gate,
        ))
}
