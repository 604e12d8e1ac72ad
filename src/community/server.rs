//! `palaver serve`: the community server — registration with proof of
//! work, protocols, invitations, session proofs and their outcomes,
//! feedback and ratings — with every endpoint the reference client uses and
//! its signed-request auth on every request.
//!
//! A rejected request writes nothing: every check runs before the store is
//! touched, and multi-step changes are single transactions in the store.

use super::auth::{self, MAX_SKEW};
use super::store::{Agent, NewProtocol, SessionRow, Store};
use crate::identity::{is_key_hex, verify};
use crate::json::{self, Map, Value};
use crate::obj;
use axum::Router;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest request body a community route accepts; a larger one is refused
/// with 413 `too_large` before it is read (by its Content-Length) or as soon
/// as it passes the limit (a chunked body). A spec bundle fits many times
/// over. The market's `POST /api/gtl` has its own, smaller limit
/// ([`crate::market::MAX_MESSAGE_BYTES`]).
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// How long a client may take to send a request's head, and then again its
/// body, by default (`palaver serve --read-timeout`). A client that dribbles
/// its head is disconnected; one that dribbles its body gets 408
/// `timeout`. An idle keep-alive connection is closed after as long.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections served at once; further ones wait in the listen backlog
/// until one closes.
pub const MAX_CONNECTIONS: usize = 4096;

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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            difficulty: 1,
            invitation_ttl: 300.0,
            max_active_invitations: 3,
            rate_limit: 20.0,
            read_timeout: READ_TIMEOUT,
        }
    }
}

struct AppState {
    store: Box<dyn Store>,
    /// The GTL market sharing this server (and its database file).
    market: Option<Arc<crate::market::Market>>,
    cfg: Config,
    /// Request ids seen recently, for replay refusal.
    seen: Mutex<super::recent::RequestIds>,
    /// Rate-limit buckets per key.
    buckets: Mutex<super::recent::Buckets>,
}

/// An error with a status and a message a person can act on.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
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
        let body = obj! { "error" => self.code, "message" => self.message };
        (
            self.status,
            [("content-type", "application/json")],
            crate::canonical::to_string_ordered(&Value::Object(body)),
        )
            .into_response()
    }
}

impl From<super::store::StoreError> for ApiError {
    fn from(e: super::store::StoreError) -> Self {
        err(StatusCode::INTERNAL_SERVER_ERROR, "store_error", e.0)
    }
}

type Reply = Result<Response, ApiError>;

fn reply(status: StatusCode, v: Value) -> Reply {
    Ok((
        status,
        [("content-type", "application/json")],
        crate::canonical::to_string_ordered(&v),
    )
        .into_response())
}

fn now_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The request, authenticated.
/// A request that passed the signed-request checks, as a handler argument.
struct Req {
    key: String,
    body: Map,
}

/// Why a request body was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// Longer than the limit (bytes).
    TooLarge(usize),
    /// Not complete within the read timeout.
    TimedOut(Duration),
    /// The connection failed or the framing was broken.
    Broken(String),
}

impl BodyProblem {
    pub fn status(&self) -> StatusCode {
        match self {
            BodyProblem::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            BodyProblem::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            BodyProblem::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            BodyProblem::TooLarge(_) => "too_large",
            BodyProblem::TimedOut(_) => "timeout",
            BodyProblem::Broken(_) => "bad_body",
        }
    }

    pub fn message(&self) -> String {
        match self {
            BodyProblem::TooLarge(n) => format!("request bodies are limited to {n} bytes"),
            BodyProblem::TimedOut(t) => format!(
                "the request body did not arrive within {} s",
                t.as_secs_f64()
            ),
            BodyProblem::Broken(e) => format!("the request body could not be read: {e}"),
        }
    }
}

/// Reads a request's whole body, at most `limit` bytes within `timeout`,
/// and hands the request on with the body in memory. A declared
/// Content-Length past the limit is refused before a byte is read.
pub async fn buffer_body(
    req: axum::extract::Request,
    limit: usize,
    timeout: Duration,
) -> Result<axum::extract::Request, BodyProblem> {
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyProblem::TooLarge(limit));
    }
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => return Err(BodyProblem::TimedOut(timeout)),
        Ok(Err(e)) => {
            let e = e.into_inner();
            return Err(
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    BodyProblem::TooLarge(limit)
                } else {
                    BodyProblem::Broken(e.to_string())
                },
            );
        }
        Ok(Ok(b)) => b,
    };
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}

/// The response with `Connection: close`: after a refused body the rest of
/// it is not read, so the connection cannot carry another request.
pub fn closing(mut r: Response) -> Response {
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
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
        authenticate(st, &parts.method, &parts.uri, &parts.headers, &bytes)
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Characters a nickname may not hold: control characters, and the
/// invisible direction and joining controls that would let one name pass
/// for another on screen.
fn spoofing_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}'
            | '\u{061C}' | '\u{FEFF}')
}

/// Checks the signed-request headers, the clock, replays and the rate.
fn authenticate(
    st: &AppState,
    method: &Method,
    uri: &axum::http::Uri,
    h: &HeaderMap,
    body: &[u8],
) -> Result<Req, ApiError> {
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
    use super::recent::Refusal;
    let busy = || {
        err(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the server is tracking too many recent requests; try again in a few seconds",
        )
    };
    match st
        .seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .admit(&key, rid, t, now)
    {
        Ok(()) => {}
        Err(Refusal::Busy) => return Err(busy()),
        Err(_) => {
            return Err(unauth(
                "X-Request-Id was already used: every request needs a fresh one",
            ));
        }
    }
    if st.cfg.rate_limit > 0.0 {
        match st.buckets.lock().unwrap_or_else(|p| p.into_inner()).take(
            &key,
            st.cfg.rate_limit,
            now_f(),
        ) {
            Ok(()) => {}
            Err(Refusal::Busy) => return Err(busy()),
            Err(_) => {
                return Err(err(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!("more than {} requests per second", st.cfg.rate_limit),
                ));
            }
        }
    }
    let body = if body.is_empty() {
        Map::new()
    } else {
        match json::parse_bytes(body) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(err(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "the body must be a JSON object",
                ));
            }
            Err(e) => {
                return Err(err(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    format!("the body is not valid JSON: {e}"),
                ));
            }
        }
    };
    Ok(Req { key, body })
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

fn s<'a>(m: &'a Map, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn need<'a>(m: &'a Map, k: &str) -> Result<&'a str, ApiError> {
    s(m, k).filter(|v| !v.is_empty()).ok_or_else(|| {
        err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("`{k}` is required (a non-empty string)"),
        )
    })
}

async fn challenge(State(st): State<Arc<AppState>>, _: Req) -> Reply {
    let nonce = crate::canonical::hex(&rand::random::<[u8; 16]>());
    st.store.add_challenge(&nonce, st.cfg.difficulty, now_f())?;
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "nonce" => nonce.as_str(), "challenge" => nonce.as_str(), "difficulty" => st.cfg.difficulty },
        ),
    )
}

/// How long a registration challenge stays usable, seconds.
const CHALLENGE_AGE: f64 = 300.0;

async fn register(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let pk = need(&r.body, "public_key")?.to_ascii_lowercase();
    if pk != r.key {
        return Err(err(
            StatusCode::FORBIDDEN,
            "key_mismatch",
            "public_key must be the key that signs the request",
        ));
    }
    let nickname = need(&r.body, "nickname")?;
    if nickname.chars().count() > 64 {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "nickname is limited to 64 characters",
        ));
    }
    if let Some(c) = nickname.chars().find(|c| spoofing_char(*c)) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!(
                "nickname may not hold control or direction characters (found U+{:04X})",
                u32::from(c)
            ),
        ));
    }
    let nonce = need(&r.body, "nonce")?;
    let counter = r
        .body
        .get("counter")
        .and_then(Value::as_i64)
        .filter(|c| *c >= 0)
        .ok_or_else(|| {
            err(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "`counter` must be a non-negative integer",
            )
        })?;
    let sig = need(&r.body, "signature")?;
    // Every check runs against the challenge before it is spent, so a
    // refused registration writes nothing; only a successful one takes it.
    let Some(difficulty) = st.store.challenge(nonce, now_f(), CHALLENGE_AGE)? else {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_challenge",
            "unknown or expired nonce: get a fresh one from /api/v1/auth/challenge",
        ));
    };
    if !auth::pow_ok(nonce, &pk, counter as u64, difficulty) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_pow",
            format!("sha256(nonce+public_key+counter) must start with {difficulty} zero bytes"),
        ));
    }
    if !verify(
        &pk,
        auth::registration_canonical(nonce, &pk, nickname).as_bytes(),
        sig,
    ) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_signature",
            "signature must sign \"{nonce}:{public_key}:{nickname}\"",
        ));
    }
    if let Some(existing) = st.store.agent(&pk)? {
        return reply(
            StatusCode::CONFLICT,
            Value::Object(
                obj! { "error" => "already_registered", "agent_id" => existing.agent_id, "nickname" => existing.nickname },
            ),
        );
    }
    if st
        .store
        .take_challenge(nonce, now_f(), CHALLENGE_AGE)?
        .is_none()
    {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_challenge",
            "the nonce was used meanwhile: get a fresh one from /api/v1/auth/challenge",
        ));
    }
    let agent = Agent {
        public_key: pk.clone(),
        nickname: nickname.to_owned(),
        bio: s(&r.body, "bio").unwrap_or("").to_owned(),
        agent_id: pk[..16].to_owned(),
        registered_at: now_f(),
    };
    st.store.add_agent(&agent)?;
    reply(
        StatusCode::CREATED,
        Value::Object(
            obj! { "status" => "registered", "public_key" => pk, "nickname" => nickname, "agent_id" => agent.agent_id },
        ),
    )
}

async fn add_protocol(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    registered(&st, &r.key)?;
    let claimed = need(&r.body, "protocol_id")?;
    let spec = match r.body.get("spec_json") {
        Some(Value::Object(o)) => o.clone(),
        Some(Value::String(t)) => match json::parse_str(t) {
            Ok(Value::Object(o)) => o,
            _ => {
                return Err(err(
                    StatusCode::BAD_REQUEST,
                    "bad_spec",
                    "spec_json is not a JSON object",
                ));
            }
        },
        _ => {
            return Err(err(
                StatusCode::BAD_REQUEST,
                "bad_spec",
                "`spec_json` (the spec object) is required",
            ));
        }
    };
    if let Some(p) = crate::spec::spec_version_problem(&spec) {
        return Err(err(StatusCode::BAD_REQUEST, "unsupported_spec_version", p));
    }
    let actual = crate::spec::protocol_id_of(&spec);
    if actual != claimed {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "protocol_id_mismatch",
            format!("the spec hashes to {actual}, not {claimed}"),
        ));
    }
    let name = s(&r.body, "name").or(s(&spec, "name")).unwrap_or(claimed);
    let text = crate::canonical::to_string_ordered(&Value::Object(spec.clone()));
    let new = NewProtocol {
        protocol_id: claimed,
        name,
        description: s(&r.body, "description").unwrap_or(""),
        kind: s(&r.body, "type").unwrap_or("protocol"),
        spec_json: &text,
        registered_by: &r.key,
    };
    let added = st.store.add_protocol(&new, now_f())?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::CONFLICT
    };
    reply(
        status,
        Value::Object(
            obj! { "protocol_id" => claimed, "status" => if added { "registered" } else { "exists" } },
        ),
    )
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

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = (b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit())
                    .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
                    .flatten()
                    .and_then(|x| u8::from_str_radix(x, 16).ok());
                match h {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn list_protocols(State(st): State<Arc<AppState>>, u: Uri, _: Req) -> Reply {
    let q = query(&u);
    let limit = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(50usize)
        .clamp(1, 100);
    let rows = st
        .store
        .protocols(q.get("cursor").map(String::as_str), limit)?;
    let next = (rows.len() == limit)
        .then(|| rows.last().map(|r| r.0.clone()))
        .flatten();
    let results: Vec<Value> = rows
        .into_iter()
        .map(|(id, name, d)| {
            Value::Object(obj! { "protocol_id" => id, "name" => name, "description" => d })
        })
        .collect();
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "results" => results, "next_cursor" => next.map(Value::from).unwrap_or(Value::Null) },
        ),
    )
}

async fn get_protocol(State(st): State<Arc<AppState>>, Id(id): Id, _: Req) -> Reply {
    let Some((name, description, kind, spec)) = st.store.protocol(&id)? else {
        return Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no protocol {id} here: register it with `palaver protocol register`"),
        ));
    };
    let spec = json::parse_str(&spec).unwrap_or_default();
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "protocol_id" => id, "name" => name, "description" => description, "type" => kind, "spec_json" => spec },
        ),
    )
}

async fn create_invitation(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let agent = registered(&st, &r.key)?;
    let now = now_f();
    if st.store.active_invitations(&r.key, now)? >= st.cfg.max_active_invitations {
        return Err(err(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_invitations",
            format!(
                "at most {} active invitations per key: cancel one first",
                st.cfg.max_active_invitations
            ),
        ));
    }
    let ticket = need(&r.body, "iroh_ticket")?;
    let transport = s(&r.body, "transport").unwrap_or("iroh");
    let protocol_id = s(&r.body, "protocol_id");
    let binding = need(&r.body, "transport_binding_signature")?;
    if !verify(
        &r.key,
        auth::transport_binding_canonical(&r.key, transport, ticket, protocol_id).as_bytes(),
        binding,
    ) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_binding",
            "transport_binding_signature does not sign the ticket binding for this key and protocol",
        ));
    }
    let post_id = crate::canonical::hex(&rand::random::<[u8; 8]>());
    let expires_at = now + st.cfg.invitation_ttl;
    let mut inv = r.body.clone();
    inv.insert("post_id", Value::from(post_id.as_str()));
    inv.insert("public_key", Value::from(r.key.as_str()));
    inv.insert("registered", Value::Bool(true));
    inv.insert("nickname", Value::from(agent.nickname.as_str()));
    inv.insert("agent_id", Value::from(agent.agent_id.as_str()));
    inv.insert("created_at", Value::from(now));
    if !inv.contains_key("type") {
        inv.insert("type", Value::from("supply"));
    }
    st.store.add_invitation(&inv, &r.key, now, expires_at)?;
    reply(
        StatusCode::CREATED,
        Value::Object(obj! { "post_id" => post_id, "expires_at" => expires_at }),
    )
}

async fn list_invitations(State(st): State<Arc<AppState>>, u: Uri, _: Req) -> Reply {
    let q = query(&u);
    let limit = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(50usize)
        .clamp(1, 100);
    let tag = q
        .get("tags")
        .and_then(|t| t.split(',').next())
        .filter(|t| !t.is_empty());
    let rows = st.store.invitations(
        q.get("protocol_id").map(String::as_str),
        q.get("type").map(String::as_str),
        tag,
        limit,
        now_f(),
    )?;
    let total = rows.len();
    let results: Vec<Value> = rows.into_iter().map(Value::Object).collect();
    reply(
        StatusCode::OK,
        Value::Object(obj! { "results" => results, "total" => total }),
    )
}

async fn get_invitation(State(st): State<Arc<AppState>>, Id(id): Id, _: Req) -> Reply {
    match st.store.invitation(&id)? {
        Some(inv) => reply(StatusCode::OK, Value::Object(inv)),
        None => Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no invitation {id}"),
        )),
    }
}

fn own_open_invitation(st: &AppState, id: &str, key: &str) -> Result<Map, ApiError> {
    let inv = st.store.invitation(id)?.ok_or_else(|| {
        err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no invitation {id}"),
        )
    })?;
    if s(&inv, "public_key") != Some(key) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "not_yours",
            "only the invitation's author may change it",
        ));
    }
    Ok(inv)
}

async fn renew_invitation(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    let inv = own_open_invitation(&st, &id, &r.key)?;
    if s(&inv, "status") != Some("open") {
        return Err(err(
            StatusCode::CONFLICT,
            "not_open",
            format!("the invitation is {}", s(&inv, "status").unwrap_or("?")),
        ));
    }
    let expires_at = now_f() + st.cfg.invitation_ttl;
    st.store.set_invitation(&id, None, Some(expires_at))?;
    reply(
        StatusCode::OK,
        Value::Object(obj! { "post_id" => id, "expires_at" => expires_at }),
    )
}

async fn cancel_invitation(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    let inv = own_open_invitation(&st, &id, &r.key)?;
    match s(&inv, "status") {
        Some("open") => st.store.set_invitation(&id, Some("cancelled"), None)?,
        // Cancelling twice is fine and writes nothing.
        Some("cancelled") => {}
        other => {
            return Err(err(
                StatusCode::CONFLICT,
                "not_open",
                format!(
                    "the invitation is {}: a session was recorded for it",
                    other.unwrap_or("?")
                ),
            ));
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn create_session(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let post_id = need(&r.body, "post_id")?;
    let host = need(&r.body, "host_public_key")?.to_ascii_lowercase();
    let guest = need(&r.body, "guest_public_key")?.to_ascii_lowercase();
    let nonce = need(&r.body, "session_nonce")?;
    let (hs, gs) = (
        need(&r.body, "host_signature")?,
        need(&r.body, "guest_signature")?,
    );
    let protocol_id = s(&r.body, "protocol_id").filter(|p| !p.is_empty());
    if r.key != host && r.key != guest {
        return Err(err(
            StatusCode::FORBIDDEN,
            "not_a_party",
            "only the host or the guest may record their session",
        ));
    }
    let inv = st.store.invitation(post_id)?.ok_or_else(|| {
        err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no invitation {post_id}"),
        )
    })?;
    if s(&inv, "public_key") != Some(host.as_str()) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "wrong_host",
            "host_public_key is not the invitation's author",
        ));
    }
    let canonical = auth::session_canonical(post_id, &host, &guest, protocol_id, nonce);
    if !verify(&host, canonical.as_bytes(), hs) || !verify(&guest, canonical.as_bytes(), gs) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_signature",
            "both signatures must sign post_id:host:guest:protocol_id:session_nonce",
        ));
    }
    for k in [&host, &guest] {
        if st.store.agent(k)?.is_none() {
            return Err(err(
                StatusCode::FORBIDDEN,
                "not_registered",
                format!("key {}… is not registered", &k[..12]),
            ));
        }
    }
    let session_id = auth::session_id(&canonical);
    let row = SessionRow {
        session_id: session_id.clone(),
        post_id: post_id.to_owned(),
        protocol_id: protocol_id.unwrap_or("").to_owned(),
        host_public_key: host,
        guest_public_key: guest,
        status: "matched".into(),
        winner: None,
        disputed: false,
        iroh_ticket: None,
        created_at: now_f(),
    };
    if !st.store.add_session(&row, nonce, hs, gs)? {
        return Err(err(
            StatusCode::CONFLICT,
            "exists",
            format!("session {session_id} is already recorded"),
        ));
    }
    reply(
        StatusCode::CREATED,
        Value::Object(obj! { "session_id" => session_id, "status" => "matched" }),
    )
}

fn party_session(st: &AppState, id: &str, key: &str) -> Result<SessionRow, ApiError> {
    let s = st.store.session(id)?.ok_or_else(|| {
        err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {id}"),
        )
    })?;
    if s.host_public_key != key && s.guest_public_key != key {
        return Err(err(
            StatusCode::FORBIDDEN,
            "not_a_party",
            "only the session's host or guest may do this",
        ));
    }
    Ok(s)
}

fn session_value(s: &SessionRow) -> Value {
    Value::Object(obj! {
        "session_id" => s.session_id.as_str(), "post_id" => s.post_id.as_str(), "status" => s.status.as_str(),
        "protocol_id" => s.protocol_id.as_str(), "host_public_key" => s.host_public_key.as_str(),
        "guest_public_key" => s.guest_public_key.as_str(),
        "winner" => s.winner.as_deref().map(Value::from).unwrap_or(Value::Null), "disputed" => s.disputed,
        "created_at" => s.created_at,
    })
}

async fn get_session(State(st): State<Arc<AppState>>, Id(id): Id, _: Req) -> Reply {
    match st.store.session(&id)? {
        Some(s) => reply(StatusCode::OK, session_value(&s)),
        None => Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {id}"),
        )),
    }
}

async fn session_status(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    let session = party_session(&st, &id, &r.key)?;
    let status = need(&r.body, "status")?;
    if !matches!(status, "closed" | "failed" | "cancelled") {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_status",
            "status must be closed, failed or cancelled",
        ));
    }
    if !st.store.close_session(&id, status, now_f())? {
        return Err(err(
            StatusCode::CONFLICT,
            "terminal",
            format!("the session is already {}", session.status),
        ));
    }
    reply(
        StatusCode::OK,
        Value::Object(obj! { "session_id" => id, "status" => status }),
    )
}

async fn session_result(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    party_session(&st, &id, &r.key)?;
    let winner = need(&r.body, "winner")?;
    if !matches!(winner, "host" | "guest" | "draw") {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_winner",
            "winner must be host, guest or draw",
        ));
    }
    let (agreed, disputed) = st.store.report_result(&id, &r.key, winner)?;
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "session_id" => id, "winner" => agreed.map(Value::from).unwrap_or(Value::Null), "disputed" => disputed },
        ),
    )
}

async fn get_transport(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    let s = party_session(&st, &id, &r.key)?;
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "session_id" => id, "iroh_ticket" => s.iroh_ticket.map(Value::from).unwrap_or(Value::Null) },
        ),
    )
}

async fn patch_transport(State(st): State<Arc<AppState>>, Id(id): Id, r: Req) -> Reply {
    let s = party_session(&st, &id, &r.key)?;
    let ticket = need(&r.body, "iroh_ticket")?;
    let sig = need(&r.body, "transport_binding_signature")?;
    let pid = (!s.protocol_id.is_empty()).then_some(s.protocol_id.as_str());
    if !verify(
        &r.key,
        auth::transport_binding_canonical(&r.key, "iroh", ticket, pid).as_bytes(),
        sig,
    ) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_binding",
            "transport_binding_signature does not sign the new ticket",
        ));
    }
    st.store.set_transport(&id, ticket, sig)?;
    reply(
        StatusCode::OK,
        Value::Object(obj! { "session_id" => id, "iroh_ticket" => ticket }),
    )
}

async fn feedback(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let sid = need(&r.body, "session_id")?;
    party_session(&st, sid, &r.key)?;
    st.store.add_feedback(sid, &r.key, &r.body, now_f())?;
    reply(
        StatusCode::CREATED,
        Value::Object(obj! { "status" => "recorded", "session_id" => sid }),
    )
}

async fn rating(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let sid = need(&r.body, "session_id")?;
    let s = party_session(&st, sid, &r.key)?;
    let score = r
        .body
        .get("score")
        .and_then(Value::as_i64)
        .filter(|s| (1..=5).contains(s))
        .ok_or_else(|| {
            err(
                StatusCode::BAD_REQUEST,
                "bad_score",
                "score must be an integer from 1 to 5",
            )
        })?;
    let rated = if s.host_public_key == r.key {
        &s.guest_public_key
    } else {
        &s.host_public_key
    };
    if !st.store.add_rating(
        sid,
        &r.key,
        rated,
        score,
        s_opt(&r.body, "comment"),
        now_f(),
    )? {
        return Err(err(
            StatusCode::CONFLICT,
            "already_rated",
            "you already rated this session",
        ));
    }
    reply(
        StatusCode::CREATED,
        Value::Object(
            obj! { "status" => "recorded", "session_id" => sid, "rated" => rated.as_str() },
        ),
    )
}

fn s_opt<'a>(m: &'a Map, k: &str) -> &'a str {
    s(m, k).unwrap_or("")
}

async fn agent_stats(State(st): State<Arc<AppState>>, Id(id): Id, _: Req) -> Reply {
    let agent = st
        .store
        .agent(&id)?
        .ok_or_else(|| err(StatusCode::NOT_FOUND, "not_found", format!("no agent {id}")))?;
    let mut stats = st.store.agent_stats(&agent.public_key)?;
    stats.insert("nickname", Value::from(agent.nickname));
    stats.insert("agent_id", Value::from(agent.agent_id));
    reply(StatusCode::OK, Value::Object(stats))
}

/// Issues the GTL bearer token of a registered identity: a signed request
/// (the community scheme) proves the key; the body may choose a
/// `principal_id` on the first call (default: the agent_id), which then
/// stays bound to the key.
async fn market_token(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    let agent = registered(&st, &r.key)?;
    let Some(market) = st.market.clone() else {
        return Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server runs no market",
        ));
    };
    let principal = s(&r.body, "principal_id").map(str::to_owned);
    let key = r.key.clone();
    let grant = tokio::task::spawn_blocking(move || {
        market.issue_token(&key, &agent.agent_id, principal.as_deref())
    })
    .await
    .map_err(|e| {
        err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store_error",
            e.to_string(),
        )
    })?;
    match grant {
        Ok(g) => reply(
            if g.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            Value::Object(obj! {
                "token" => g.token, "principal_id" => g.principal_id, "agent_id" => g.agent_id,
                "created" => g.created, "token_type" => "bearer",
            }),
        ),
        Err(e) => Ok(axum::response::IntoResponse::into_response(e)),
    }
}

/// The router of a community server over `store`.
pub fn router(store: Box<dyn Store>, cfg: Config) -> Router {
    router_with_market(store, cfg, None)
}

/// The router of a community server over `store`, with the GTL market's
/// endpoints when `market` is given (same process, same database file).
pub fn router_with_market(
    store: Box<dyn Store>,
    cfg: Config,
    market: Option<Arc<crate::market::Market>>,
) -> Router {
    let read_timeout = cfg.read_timeout;
    let st = Arc::new(AppState {
        store,
        market: market.clone(),
        cfg,
        seen: Mutex::new(Default::default()),
        buckets: Mutex::new(Default::default()),
    });
    let community = Router::new()
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
        .route("/api/v1/agents/{id}/stats", get(agent_stats))
        .route("/api/gtl/token", post(market_token))
        .with_state(st)
        .layer(axum::middleware::from_fn_with_state(
            read_timeout,
            guard_body,
        ));
    let all = match market {
        Some(m) => community.merge(crate::market::http::routes(m, read_timeout)),
        None => community,
    };
    all.fallback(no_route)
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

/// Runs one request through `app` in process, with no network (the fuzz
/// targets and the property tests drive the routes this way).
pub async fn call(app: &Router, req: axum::extract::Request) -> Response {
    use hyper::service::Service as _;
    match hyper_util::service::TowerToHyperService::new(app.clone())
        .call(req)
        .await
    {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// A router driven in process, one request at a time, on its own
/// single-threaded runtime: what the fuzz targets and property tests use
/// (they need neither a socket nor an async runtime of their own).
pub struct InProcess {
    rt: tokio::runtime::Runtime,
    app: Router,
}

impl InProcess {
    pub fn new(app: Router) -> std::io::Result<InProcess> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(InProcess { rt, app })
    }

    /// Sends one request; returns the status and the body bytes. A request
    /// that cannot be built (a bad method, path or header) is `Err`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut b = axum::http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let req = b
            .body(axum::body::Body::from(body))
            .map_err(|e| e.to_string())?;
        self.rt.block_on(async {
            let resp = call(&self.app, req).await;
            let status = resp.status().as_u16();
            let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .map_err(|e| e.to_string())?;
            Ok((status, bytes.to_vec()))
        })
    }
}

/// Serves the community until the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Box<dyn Store>,
    cfg: Config,
) -> std::io::Result<()> {
    let t = cfg.read_timeout;
    serve_router(listener, router(store, cfg), t).await
}

/// Serves `app` over HTTP/1.1: at most [`MAX_CONNECTIONS`] connections at
/// once, each with `read_timeout` to send every request head (hyper's
/// header read timeout, which also ends idle keep-alive connections); the
/// routes' body guards bound the bodies. A failed accept (out of file
/// descriptors, say) is retried after a short pause, never fatal.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    app: Router,
    read_timeout: Duration,
) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout);
            let _ = http
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

/// Serves the community and the GTL market until the listener fails.
pub async fn serve_with_market(
    listener: tokio::net::TcpListener,
    store: Box<dyn Store>,
    cfg: Config,
    market: Arc<crate::market::Market>,
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
    let r = serve_router(listener, router_with_market(store, cfg, Some(market)), t).await;
    sweeper.abort();
    r
}
