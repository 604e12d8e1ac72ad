//! `palaver serve`: the community server — registration with proof of
//! work, protocols, invitations, session proofs and their outcomes,
//! feedback and ratings — with every endpoint the reference client uses and
//! its signed-request auth on every request.
//!
//! A rejected request writes nothing: every check runs before the store is
//! touched, and multi-step changes are single transactions in the store.
//! The store is synchronous (SQLite, or PostgreSQL's blocking client), so
//! the signed-request checks and every route's work run on tokio's
//! blocking pool ([`blocking`]), never on an async worker. The replay
//! window and the rate limit are the store's too: with PostgreSQL every
//! instance of one community shares them.

mod agents;
mod groups;
mod inbox;
mod invitations;
mod protocols;
mod sessions;
mod social;
mod trust;

use super::standing::Cursor;
use super::store::{Agent, Store};
use super::timed::Timed;
use crate::identity::{is_key_hex, verify};
use crate::json::{self, Map, Value};
use crate::obj;
use crate::web::auth::{self, MAX_SKEW};
use crate::web::{buffer_body, closing, json_response, observe};
use agents::{agent_ratings, agent_stats, challenge, register};
use axum::Router;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use invitations::{
    cancel_invitation, create_invitation, get_invitation, list_invitations, renew_invitation,
};
use protocols::{add_protocol, get_protocol, list_protocols};
use sessions::{
    create_session, feedback, get_session, get_transport, patch_transport, rating, session_result,
    session_status,
};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest request body a community route accepts; a larger one is refused
/// with 413 `too_large` before it is read (by its Content-Length) or as soon
/// as it passes the limit (a chunked body). A spec bundle fits many times
/// over. The market's `POST /api/gtl` has its own, smaller limit.
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// The largest body whose signature check and parse run on an async worker
/// (a store with [`AsyncCalls`](super::store::AsyncCalls)); a larger one is
/// checked on the blocking pool.
const INLINE_BODY: usize = 64 * 1024;

/// How long a client may take to send a request's head, and then again its
/// body, by default (`palaver serve --read-timeout`). A client that dribbles
/// its head is disconnected; one that dribbles its body gets 408
/// `timeout`. An idle keep-alive connection is closed after as long.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Server settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Registration proof-of-work difficulty, in zero bytes.
    pub difficulty: u32,
    /// Invitation time to live, seconds.
    pub invitation_ttl: f64,
    /// Active invitations allowed per key.
    pub max_active_invitations: usize,
    /// Requests per second per key (0: unlimited); bursts of twice that.
    pub rate_limit: f64,
    /// Deadline for a request's head and, separately, its body (see
    /// [`READ_TIMEOUT`]).
    pub read_timeout: Duration,
    /// A group leader's lease, seconds (3–300).
    pub group_lease_seconds: i64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            difficulty: 1,
            invitation_ttl: 300.0,
            max_active_invitations: 3,
            rate_limit: 20.0,
            read_timeout: READ_TIMEOUT,
            group_lease_seconds: crate::community::groups::LEASE_SECONDS,
        }
    }
}

struct AppState {
    store: Arc<dyn Store>,
    cfg: Config,
    /// Serialises changes of one group within this process (a group's id
    /// picks its stripe), so a room's members admitted and heartbeating at
    /// once queue for the row instead of losing its compare-and-set to each
    /// other; the compare-and-set still decides between instances.
    group_stripes: Vec<std::sync::Mutex<()>>,
}

/// Runs `f` (a route's work: store calls, signature checks) on tokio's
/// blocking pool, where a synchronous store may block.
/// The request's span goes along, so what the work logs (a slow store
/// call) carries the request id.
async fn blocking<T: Send + 'static>(
    st: Arc<AppState>,
    f: impl FnOnce(&AppState) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| f(&st)))
        .await
        .map_err(|e| {
            err(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request's work",
                format!("ended abnormally: {e}"),
            )
        })?
}

/// An error with a status and a message a person can act on. A 500 is an
/// internal failure: its message is logged (with the request id) and the
/// client gets `{"error": "internal", "message": …, "request_id": …}`
/// instead, with nothing of the failure's detail.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// The client's error code; for a 500, what failed (logged only).
    pub code: &'static str,
    pub message: String,
}

fn err(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            let id = observe::internal(self.code, &self.message);
            let mut body = obj! {
                "error" => INTERNAL, "message" => observe::internal_message(id.as_deref()),
            };
            if let Some(id) = id {
                body.insert("request_id", Value::from(&*id));
            }
            return json_response(self.status, &Value::Object(body));
        }
        let body = obj! { "error" => self.code, "message" => self.message };
        json_response(self.status, &Value::Object(body))
    }
}

/// The code of every internal failure a client sees.
pub const INTERNAL: &str = "internal";

impl From<super::store::StoreError> for ApiError {
    fn from(e: super::store::StoreError) -> Self {
        err(StatusCode::INTERNAL_SERVER_ERROR, "store", e.0)
    }
}

type Reply = Result<Response, ApiError>;

fn reply(status: StatusCode, v: Value) -> Reply {
    Ok(json_response(status, &v))
}

fn now_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A request that passed the signed-request checks, as a handler argument.
struct Req {
    key: String,
    body: Map,
}

/// The community routes' body guard ([`MAX_BODY`], the read timeout).
async fn guard_body(
    State(timeout): State<Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match buffer_body(req, MAX_BODY, timeout).await {
        Ok(req) => next.run(req).await,
        Err(p) => closing(err(p.status(), p.code(), p.message()).into_response()),
    }
}

/// A `{id}` path segment; one that does not decode (bad percent-encoding,
/// not UTF-8) is a 400 with the usual JSON error.
struct Id(String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Id, ApiError> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(Id(id)),
            Err(e) => Err(err(
                StatusCode::BAD_REQUEST,
                "bad_path",
                format!("the id in the path is not valid: {}", e.body_text()),
            )),
        }
    }
}

impl axum::extract::FromRequest<Arc<AppState>> for Req {
    type Rejection = ApiError;

    async fn from_request(
        req: axum::extract::Request,
        st: &Arc<AppState>,
    ) -> Result<Req, ApiError> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| {
            err(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("request bodies are limited to {MAX_BODY} bytes"),
            )
        })?;
        // A store with asynchronous calls admits the request here on the
        // worker (a signature check and one statement, no blocking hop),
        // unless its body is large enough that hashing and parsing it would
        // hold the worker up: that one goes to the blocking pool as before.
        if let Some(calls) = st
            .store
            .async_calls()
            .filter(|_| bytes.len() <= INLINE_BODY)
        {
            let s = check_signature(&parts.method, &parts.uri, &parts.headers, &bytes)?;
            admitted(calls.admit(s.admit(st)).await?, st.cfg.rate_limit)?;
            return Ok(Req {
                body: body_map(&bytes)?,
                key: s.key,
            });
        }
        blocking(st.clone(), move |st| {
            authenticate(st, &parts.method, &parts.uri, &parts.headers, &bytes)
        })
        .await
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}
/// Checks the signed-request headers, the clock, replays and the rate.
fn authenticate(
    st: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    h: &HeaderMap,
    body: &[u8],
) -> Result<Req, ApiError> {
    let s = check_signature(method, uri, h, body)?;
    admitted(st.store.admit(&s.admit(st))?, st.cfg.rate_limit)?;
    Ok(Req {
        body: body_map(body)?,
        key: s.key,
    })
}

/// A request whose signed-request headers check out.
struct Checked {
    key: String,
    request_id: String,
    /// Its timestamp, and the server's clock when it was checked.
    t: i64,
    now: i64,
}

impl Checked {
    /// What admitting it takes on server `st`: its id noted and, when the
    /// server limits rates, a token taken now.
    fn admit<'a>(&'a self, st: &AppState) -> super::recent::Admit<'a> {
        super::recent::Admit {
            key: &self.key,
            request_id: &self.request_id,
            t: self.t,
            now: self.now,
            rate: (st.cfg.rate_limit > 0.0).then_some(st.cfg.rate_limit),
            at: now_f(),
        }
    }
}

/// Checks the signed-request headers (present, well formed, the clock
/// within [`MAX_SKEW`], the signature over the request).
fn check_signature(
    method: &Method,
    uri: &axum::http::Uri,
    h: &HeaderMap,
    body: &[u8],
) -> Result<Checked, ApiError> {
    let unauth = |m: &str| err(StatusCode::UNAUTHORIZED, "unauthorized", m.to_owned());
    let key = header(h, "x-public-key")
        .ok_or_else(|| unauth("missing (or non-ASCII) X-Public-Key"))?
        .to_ascii_lowercase();
    let ts =
        header(h, "x-timestamp").ok_or_else(|| unauth("missing (or non-ASCII) X-Timestamp"))?;
    let rid =
        header(h, "x-request-id").ok_or_else(|| unauth("missing (or non-ASCII) X-Request-Id"))?;
    let sig =
        header(h, "x-signature").ok_or_else(|| unauth("missing (or non-ASCII) X-Signature"))?;
    if !is_key_hex(&key) {
        return Err(unauth("X-Public-Key must be 64 lowercase hex characters"));
    }
    if rid.is_empty() || rid.len() > 128 {
        return Err(unauth("X-Request-Id must be 1 to 128 characters"));
    }
    let t: i64 = ts
        .parse()
        .map_err(|_| unauth("X-Timestamp must be unix seconds"))?;
    let now = now_f() as i64;
    // i128: a timestamp near i64::MIN or MAX must not overflow the difference.
    let skew = i128::from(now) - i128::from(t);
    if skew.abs() > i128::from(MAX_SKEW) {
        return Err(unauth(&format!(
            "X-Timestamp is {skew}s away from the server clock (limit {MAX_SKEW}s): check your clock"
        )));
    }
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or(uri.path());
    if !verify(
        &key,
        &auth::signing_payload(ts, method.as_str(), path, rid, body),
        sig,
    ) {
        return Err(unauth(
            "X-Signature does not verify over the request (timestamp, method, path with query, request id, body)",
        ));
    }
    Ok(Checked {
        key,
        request_id: rid.to_owned(),
        t,
        now,
    })
}

/// The answer to a store too busy to track another request.
fn busy() -> ApiError {
    err(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "the server is tracking too many recent requests; try again in a few seconds",
    )
}

/// The admission's answer as the request's (the server's rate, `rate` a
/// second, named when it refused one).
fn admitted(a: super::recent::Admission, rate: f64) -> Result<(), ApiError> {
    use super::recent::Refusal;
    match a {
        Ok(()) => Ok(()),
        Err(Refusal::Busy) => Err(busy()),
        Err(Refusal::Replayed) => Err(err(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "X-Request-Id was already used: every request needs a fresh one",
        )),
        Err(Refusal::RateLimited) => Err(err(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("more than {rate} requests per second"),
        )),
    }
}

/// A request's body as the handler's map: empty is `{}`; anything else
/// must be a JSON object without a U+0000.
fn body_map(body: &[u8]) -> Result<Map, ApiError> {
    if body.is_empty() {
        return Ok(Map::new());
    }
    let bad = |m: String| err(StatusCode::BAD_REQUEST, "bad_request", m);
    match json::parse_bytes(body) {
        // PostgreSQL text cannot hold U+0000, so neither store takes it:
        // the same answer on both.
        Ok(v @ Value::Object(_)) if v.holds_nul() => Err(bad(
            "the body holds a U+0000 (NUL) character, which no field may hold".into(),
        )),
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad("the body must be a JSON object".into())),
        Err(e) => Err(bad(format!("the body is not valid JSON: {e}"))),
    }
}

fn registered(st: &AppState, key: &str) -> Result<Agent, ApiError> {
    st.store.agent(key)?.ok_or_else(|| {
        err(
            StatusCode::FORBIDDEN,
            "not_registered",
            "register this key first: palaver register --nickname NAME",
        )
    })
}

fn need<'a>(m: &'a Map, k: &str) -> Result<&'a str, ApiError> {
    m.get_str(k).filter(|v| !v.is_empty()).ok_or_else(|| {
        err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("`{k}` is required (a non-empty string)"),
        )
    })
}

fn query(u: &Uri) -> HashMap<String, String> {
    u.query()
        .map(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), pct_decode(v)))
                .collect()
        })
        .unwrap_or_default()
}

/// A listing's `?limit=` (1–100, 20 by default; otherwise 400
/// `bad_limit`) and `?cursor=` (what the previous page's `next_cursor`
/// was; otherwise 400 `bad_cursor`): the one paging rule of the
/// leaderboards, the inbox and the capability listing.
fn paging(u: &Uri) -> Result<(usize, Option<Cursor>), ApiError> {
    let q = query(u);
    Ok((limit_of(&q, 20)?, cursor_of(&q)?))
}

/// A query's `limit` (1–100, `default` when absent; otherwise 400
/// `bad_limit`).
fn limit_of(q: &HashMap<String, String>, default: usize) -> Result<usize, ApiError> {
    match q.get("limit") {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| {
                err(
                    StatusCode::BAD_REQUEST,
                    "bad_limit",
                    "limit must be an integer from 1 to 100",
                )
            }),
    }
}

/// A query's `cursor` (what a previous page's `next_cursor` was; absent or
/// empty: the first page; otherwise 400 `bad_cursor`).
fn cursor_of(q: &HashMap<String, String>) -> Result<Option<Cursor>, ApiError> {
    match q.get("cursor").map(String::as_str) {
        None | Some("") => Ok(None),
        Some(c) => Cursor::decode(c).map(Some).ok_or_else(|| {
            err(
                StatusCode::BAD_REQUEST,
                "bad_cursor",
                "cursor must be a next_cursor this server gave",
            )
        }),
    }
}

/// Unix seconds as an ISO-8601 UTC string (`…T…Z`, milliseconds).
fn iso(t: f64) -> Value {
    Value::from(crate::utc::format_rfc3339_utc((t * 1000.0) as i64))
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let mut v = [0u8];
                if hex::decode_to_slice(&b[i + 1..i + 3], &mut v).is_ok() {
                    out.push(v[0]);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A signed request from a registered identity, as a route outside the
/// community sees it.
pub struct Signed {
    pub key: String,
    pub agent_id: String,
    pub body: Map,
}

/// What a route outside the community answers: its own response, or the
/// community's JSON error.
pub type SignedReply = Pin<Box<dyn Future<Output = Result<Response, ApiError>> + Send>>;

/// A route another module adds to the community's router (the market's
/// token issuance): it takes the community's signed requests, from
/// registered keys only, under the same replay and rate checks.
pub type SignedHandler = Arc<dyn Fn(Signed) -> SignedReply + Send + Sync>;

/// The community's routes over `store`, with `signed` routes (POST) of
/// other modules taking its signed requests. No fallbacks yet: merge other
/// routes first, then [`with_fallbacks`].
pub fn routes(
    store: Arc<dyn Store>,
    cfg: Config,
    signed: &[(&'static str, SignedHandler)],
) -> Router {
    let read_timeout = cfg.read_timeout;
    let store: Arc<dyn Store> = Arc::new(Timed::new(store));
    let st = Arc::new(AppState {
        store,
        cfg,
        group_stripes: (0..groups::STRIPES)
            .map(|_| std::sync::Mutex::new(()))
            .collect(),
    });
    let mut community = Router::new()
        .route("/healthz", get(health))
        .route("/api/v1/auth/challenge", get(challenge))
        .route("/api/v1/auth/register", post(register))
        .route("/api/v1/protocols", post(add_protocol).get(list_protocols))
        .route("/api/v1/protocols/{id}", get(get_protocol))
        .route("/api/v1/protocols/{id}/bundle", get(get_protocol))
        .route(
            "/api/v1/invitations",
            post(create_invitation).get(list_invitations),
        )
        .route(
            "/api/v1/invitations/{id}",
            get(get_invitation).delete(cancel_invitation),
        )
        .route("/api/v1/invitations/{id}/renew", post(renew_invitation))
        .route("/api/v1/sessions", post(create_session))
        .route("/api/v1/sessions/{id}", get(get_session))
        .route("/api/v1/sessions/{id}/status", post(session_status))
        .route("/api/v1/sessions/{id}/result", post(session_result))
        .route(
            "/api/v1/sessions/{id}/transport",
            get(get_transport).patch(patch_transport),
        )
        .route("/api/v1/feedback", post(feedback))
        .route("/api/v1/ratings", post(rating))
        .route("/api/v1/agents", get(social::agents))
        .route("/api/v1/agents/{id}/stats", get(agent_stats))
        .route("/api/v1/agents/{id}/ratings", get(agent_ratings))
        .route("/api/v1/agents/{id}/elo", get(social::agent_elo))
        .route("/api/v1/agents/{id}/karma", get(social::agent_karma))
        .route(
            "/api/v1/agents/{id}/capabilities",
            get(social::get_capabilities).post(social::set_capabilities),
        )
        .route("/api/v1/elo/leaderboard", get(social::elo_leaderboard))
        .route("/api/v1/karma/leaderboard", get(social::karma_leaderboard))
        .route(
            "/api/v1/inbox",
            post(inbox::send).get(inbox::list).delete(inbox::clear),
        )
        .route("/api/v1/inbox/{id}", get(inbox::read).delete(inbox::delete))
        // Unsigned: the reference fetches the trust snapshots with plain
        // GETs (its trust URL is this server's base, or base/trust).
        .route("/trust/latest.json", get(trust::latest))
        .route("/trust/trust-{date}", get(trust::dated))
        .route("/latest.json", get(trust::latest))
        .route("/trust-{date}", get(trust::dated))
        .route("/api/v1/groups", post(groups::create_group))
        .route("/api/v1/groups/{id}", get(groups::get_group))
        .route("/api/v1/groups/by-post/{id}", get(groups::group_by_post))
        .route("/api/v1/groups/{id}/members", post(groups::join_group))
        .route(
            "/api/v1/groups/{id}/heartbeat",
            post(groups::leader_heartbeat),
        )
        .route(
            "/api/v1/groups/{id}/members/heartbeat",
            post(groups::member_heartbeat),
        )
        .route(
            "/api/v1/groups/{id}/claim-leader",
            post(groups::claim_leader),
        )
        .route("/api/v1/groups/{id}/leave", post(groups::leave_group))
        .route("/api/v1/groups/{id}/status", post(groups::group_status));
    for (path, handler) in signed {
        let handler = handler.clone();
        community = community.route(
            path,
            post(move |State(st): State<Arc<AppState>>, r: Req| {
                let handler = handler.clone();
                async move {
                    let key = r.key.clone();
                    let agent = blocking(st, move |st| registered(st, &key)).await?;
                    handler(Signed {
                        key: r.key,
                        agent_id: agent.agent_id,
                        body: r.body,
                    })
                    .await
                }
            }),
        );
    }
    community
        .with_state(st)
        .layer(axum::middleware::from_fn_with_state(
            read_timeout,
            guard_body,
        ))
}

/// `GET /healthz`, unsigned: 200 `{"status": "ok", "store": KIND}` when the
/// store answers, 503 `{"status": "unavailable", "store": KIND, "error": …}`
/// when it does not (a load balancer's check). Why it does not answer is
/// logged with the request id; the unauthenticated client is told only
/// where to look.
async fn health(State(st): State<Arc<AppState>>) -> Response {
    let kind = st.store.kind();
    let span = tracing::Span::current();
    let answer = tokio::task::spawn_blocking(move || span.in_scope(|| st.store.ping())).await;
    let failure = match answer {
        Ok(Ok(())) => {
            return json_response(
                StatusCode::OK,
                &Value::Object(obj! { "status" => "ok", "store" => kind }),
            );
        }
        Ok(Err(e)) => e.0,
        Err(e) => e.to_string(),
    };
    let id = observe::internal("the health check's store ping", &failure);
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &Value::Object(
            obj! { "status" => "unavailable", "store" => kind, "error" => observe::internal_message(id.as_deref()) },
        ),
    )
}

/// `app` with the community's JSON answers for an unknown route (404) and
/// a method a route does not take (405).
pub fn with_fallbacks(app: Router) -> Router {
    app.fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    err(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no route {method} {}", uri.path()),
    )
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    err(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not take {method}", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use super::pct_decode;

    #[test]
    fn query_values_are_percent_decoded() {
        assert_eq!(pct_decode("a%20b+c%2Fd%2f"), "a b c/d/");
        assert_eq!(pct_decode("%C3%A9"), "é");
        // A `%` not followed by two hex digits stays as it is.
        assert_eq!(pct_decode("100%"), "100%");
        assert_eq!(pct_decode("%zz%4"), "%zz%4");
        assert_eq!(pct_decode("%%41"), "%A");
    }
}
