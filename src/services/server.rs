//! The server `palaver serve` runs and the console embeds: the community's
//! routes and the GTL market's on one router, over one database (a SQLite
//! file, or PostgreSQL shared by several instances). The
//! market's bearer token (`POST /api/gtl/token`) is issued on a community
//! route, because it is asked for with the community's signed requests.

use crate::community::server::{self, ApiError, Config, Signed, SignedHandler};
use crate::community::{SqliteStore, Store};
use crate::json::Value;
use crate::market::{Market, MarketConfig};
use crate::obj;
use crate::web::observe::observe;
use crate::web::{Client, ClientError, json_response, serve_router};
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;

/// Active invitations one key may hold on the embedded server (the house
/// keeps one per game open).
pub const EMBEDDED_MAX_ACTIVE_INVITATIONS: usize = 32;

/// The community's routes over `store`, the token route, and the market's
/// routes when `market` is given (same process, same database file);
/// without one the token route answers 404.
pub fn router(store: Box<dyn Store>, cfg: Config, market: Option<Arc<Market>>) -> Router {
    router_on(Arc::from(store), cfg, market)
}

/// [`router`] over a shared store (`palaver serve`: SQLite or PostgreSQL).
pub fn router_on(store: Arc<dyn Store>, cfg: Config, market: Option<Arc<Market>>) -> Router {
    router_with(store, cfg, market, false)
}

/// [`router_on`], with `GET /metrics` when `metrics`. Every request runs in
/// [`observe`]: a request id, a span, a log line and its metrics.
pub fn router_with(
    store: Arc<dyn Store>,
    cfg: Config,
    market: Option<Arc<Market>>,
    metrics: bool,
) -> Router {
    let read_timeout = cfg.read_timeout;
    let scrape = metrics.then(|| super::metrics::get_metrics(store.clone(), market.clone()));
    let token: SignedHandler = {
        let market = market.clone();
        Arc::new(move |who| Box::pin(market_token(market.clone(), who)))
    };
    let community = server::routes(store, cfg, &[("/api/gtl/token", token)]);
    let mut all = match market {
        Some(m) => community
            .merge(crate::market::http::routes(m.clone(), read_timeout))
            .merge(super::mcp::routes(m, read_timeout)),
        None => community,
    };
    if let Some(scrape) = scrape {
        // Off by default, so tests/community_hostile.rs (which reads the
        // community's and the market's routes) does not list it.
        all = all.route(super::metrics::PATH, scrape);
    }
    server::with_fallbacks(all).layer(axum::middleware::from_fn(observe))
}

/// Issues the GTL bearer token of a registered identity: a signed request
/// (the community scheme) proves the key; the body may choose a
/// `principal_id` on the first call (default: the agent_id), which then
/// stays bound to the key.
async fn market_token(market: Option<Arc<Market>>, who: Signed) -> Result<Response, ApiError> {
    let Some(market) = market else {
        return Err(ApiError {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: "this server runs no market".into(),
        });
    };
    let principal = who.body.get_str("principal_id").map(str::to_owned);
    let grant = tokio::task::spawn_blocking(move || {
        market.issue_token(&who.key, &who.agent_id, principal.as_deref())
    })
    .await
    .map_err(|e| ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        code: "the token's work",
        message: format!("ended abnormally: {e}"),
    })?;
    Ok(match grant {
        Ok(g) => json_response(
            if g.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            &Value::Object(obj! {
                "token" => g.token, "principal_id" => g.principal_id, "agent_id" => g.agent_id,
                "created" => g.created, "token_type" => "bearer",
            }),
        ),
        Err(e) => e.into_response(),
    })
}

/// Serves the community (no market) until the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Box<dyn Store>,
    cfg: Config,
) -> std::io::Result<()> {
    let t = cfg.read_timeout;
    serve_router(listener, router(store, cfg, None), t).await
}

/// Serves the community and the GTL market until the listener fails.
pub async fn serve_with_market(
    listener: tokio::net::TcpListener,
    store: Box<dyn Store>,
    cfg: Config,
    market: Arc<Market>,
) -> std::io::Result<()> {
    // Deadlines pass without anyone asking: apply them every second (any
    // request applies them too).
    let sweeper = {
        let m = market.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let m = m.clone();
                let _ = tokio::task::spawn_blocking(move || m.sweep()).await;
            }
        })
    };
    let t = cfg.read_timeout;
    let r = serve_router(listener, router(store, cfg, Some(market)), t).await;
    sweeper.abort();
    r
}

/// How [`serve_until`] stops: when `signal` completes it stops accepting,
/// finishes the requests in flight and returns, waiting at most `grace`.
pub struct Shutdown {
    pub signal: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    pub grace: std::time::Duration,
}

impl Shutdown {
    /// SIGTERM or SIGINT (Ctrl-C), with `grace` for the requests in flight.
    pub fn on_signals(grace: std::time::Duration) -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(Shutdown {
            signal: Box::pin(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }),
            grace,
        })
    }
}

/// Where `GET /metrics` is served.
pub enum MetricsAt {
    /// Nowhere (the default: a 404 like any unknown path).
    Off,
    /// On the main listener, beside the API (`palaver serve --metrics`).
    Main,
    /// On a listener of its own (`--metrics-bind ADDR`), e.g. on loopback
    /// or a private interface, and not on the main one.
    Own(tokio::net::TcpListener),
}

/// Applies the market's deadlines every second (any request applies them
/// too); a failure is logged, and the next second tries again.
fn sweeper(m: Arc<Market>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let m = m.clone();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || m.sweep()).await {
                tracing::warn!(error = %e, "the market's deadline sweep failed");
            }
        }
    })
}

/// Serves the community over `store` (with the market when given, and
/// its deadline sweeper) until `shutdown` says stop; then drains as
/// [`crate::web::serve_router_until`] does. `metrics` says where
/// `GET /metrics` is served.
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    store: Arc<dyn Store>,
    cfg: Config,
    market: Option<Arc<Market>>,
    shutdown: Shutdown,
    metrics: MetricsAt,
) -> std::io::Result<crate::web::Drained> {
    let sweeper = market.clone().map(sweeper);
    let t = cfg.read_timeout;
    let main = matches!(metrics, MetricsAt::Main);
    let own = match metrics {
        MetricsAt::Own(l) => {
            let app = super::metrics::own_router(store.clone(), market.clone());
            Some(tokio::spawn(serve_router(l, app, t)))
        }
        _ => None,
    };
    let r = crate::web::serve_router_until(
        listener,
        router_with(store, cfg, market, main),
        t,
        shutdown.signal,
        shutdown.grace,
    )
    .await;
    if let Some(s) = sweeper {
        s.abort();
    }
    if let Some(s) = own {
        s.abort();
    }
    r
}

/// Starts the console's community: its store (and the market's tables) at
/// `db`, on 127.0.0.1 (a free port), room for the house's invitations.
/// Returns its base URL (`http://127.0.0.1:PORT`) and the task that serves
/// it (abort it to stop the server).
pub async fn start_embedded(db: &Path) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let store = SqliteStore::open(db)
        .map_err(|e| std::io::Error::other(format!("opening {}: {e}", db.display())))?;
    let market = Market::open(db, MarketConfig::default()).map_err(|e| {
        std::io::Error::other(format!("opening the market in {}: {e}", db.display()))
    })?;
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let cfg = Config {
        max_active_invitations: EMBEDDED_MAX_ACTIVE_INVITATIONS,
        ..Config::default()
    };
    let task = tokio::spawn(async move {
        // axum's serve only returns when the listener fails; the console
        // notices a dead server through its requests.
        let _ = serve_with_market(listener, Box::new(store), cfg, Arc::new(market)).await;
    });
    Ok((url, task))
}

/// Registers the client's identity under `nickname`; an identity the server
/// already knows (it answers 409 `already_registered`) is fine too.
pub async fn ensure_registered(client: &Client, nickname: &str) -> Result<(), ClientError> {
    client.register(nickname, "").await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::KeyPair;

    /// A store failure (a table gone under the server) is logged and
    /// answered 500 `internal` with the request's own id, and nothing of
    /// the failure reaches the client.
    #[tokio::test]
    async fn an_internal_failure_is_answered_without_its_detail() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.sqlite");
        let store = SqliteStore::open(&db).unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("DROP TABLE challenges")
            .unwrap();
        let app = router(Box::new(store), Config::default(), None);
        let path = "/api/v1/auth/challenge";
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut req = axum::http::Request::builder().method("GET").uri(path);
        let mut rid = String::new();
        for (k, v) in crate::web::auth::headers(&KeyPair::generate(), "GET", path, b"", now) {
            if k == "X-Request-Id" {
                rid = v.clone();
            }
            req = req.header(k, v);
        }
        let resp = crate::web::call(&app, req.body(axum::body::Body::empty()).unwrap()).await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()["x-request-id"], rid.as_str());
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let v = crate::json::parse_bytes(&body).unwrap();
        assert_eq!(v.get("error").and_then(Value::as_str), Some("internal"));
        assert_eq!(
            v.get("request_id").and_then(Value::as_str),
            Some(rid.as_str())
        );
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains(&rid), "{text}");
        for secret in ["challenges", "no such table", "sqlite", "store"] {
            assert!(!text.contains(secret), "{secret:?} leaked: {text}");
        }
    }

    /// The market's store failure keeps the market's envelope but says
    /// `internal` and the request id, never the failure's text.
    #[tokio::test]
    async fn a_market_store_failure_is_answered_without_its_detail() {
        let app = Router::new()
            .route(
                "/x",
                axum::routing::get(|| async {
                    crate::market::MarketError::Store("relation gtl_secret is gone".into())
                }),
            )
            .layer(axum::middleware::from_fn(observe));
        let req = axum::http::Request::builder()
            .uri("/x")
            .header("x-request-id", "rid-market-1")
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = crate::web::call(&app, req).await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let v = crate::json::parse_bytes(&body).unwrap();
        assert_eq!(v.get("ok").and_then(Value::as_bool), Some(false));
        assert_eq!(v.get("error").and_then(Value::as_str), Some("internal"));
        assert_eq!(
            v.get("request_id").and_then(Value::as_str),
            Some("rid-market-1")
        );
        assert!(!String::from_utf8_lossy(&body).contains("gtl_secret"));
    }
}
