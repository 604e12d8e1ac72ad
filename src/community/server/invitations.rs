//! Invitations: a host's signed transport binding, listed, renewed and
//! cancelled by their owner.

use super::{
    ApiError, AppState, Id, Reply, Req, blocking, err, need, now_f, query, registered, reply,
};
use crate::community::store::Renewal;
use crate::identity::verify;
use crate::json::{Map, Value};
use crate::obj;
use crate::web::auth;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use std::collections::HashMap;
use std::sync::Arc;

fn too_many(st: &AppState) -> ApiError {
    err(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_invitations",
        format!(
            "at most {} active invitations per key: cancel one first",
            st.cfg.max_active_invitations
        ),
    )
}

pub(super) async fn create_invitation(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| create_invitation_now(st, r)).await
}

fn create_invitation_now(st: &AppState, r: Req) -> Reply {
    let agent = registered(st, &r.key)?;
    let now = now_f();
    if st.store.active_invitations(&r.key, now)? >= st.cfg.max_active_invitations {
        return Err(too_many(st));
    }
    let ticket = need(&r.body, "iroh_ticket")?;
    let transport = r.body.get_str("transport").unwrap_or("iroh");
    let protocol_id = r.body.get_str("protocol_id");
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
    let post_id = hex::encode(rand::random::<[u8; 8]>());
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
    // The limit again, with the insert in one transaction: a post racing
    // this one (on this server or another) cannot pass it too.
    if !st
        .store
        .add_invitation(&inv, &r.key, now, expires_at, st.cfg.max_active_invitations)?
    {
        return Err(too_many(st));
    }
    reply(
        StatusCode::CREATED,
        Value::Object(obj! { "post_id" => post_id, "expires_at" => expires_at }),
    )
}

pub(super) async fn list_invitations(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    if let Some(calls) = st.store.async_calls() {
        let b = Browse::of(&u);
        let rows = calls
            .invitations(b.protocol_id(), b.kind(), b.tag(), b.limit, now_f())
            .await?;
        return b.reply(rows);
    }
    blocking(st, move |st| list_invitations_now(st, u, r)).await
}

fn list_invitations_now(st: &AppState, u: Uri, _: Req) -> Reply {
    let b = Browse::of(&u);
    let rows = st
        .store
        .invitations(b.protocol_id(), b.kind(), b.tag(), b.limit, now_f())?;
    b.reply(rows)
}

/// A browse's query: `protocol_id`, `type`, the first of `tags`, `limit`
/// (1 to 100, 50 when absent or not a number).
struct Browse {
    q: HashMap<String, String>,
    limit: usize,
}

impl Browse {
    fn of(u: &Uri) -> Browse {
        let q = query(u);
        let limit = q
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(50usize)
            .clamp(1, 100);
        Browse { q, limit }
    }

    fn protocol_id(&self) -> Option<&str> {
        self.q.get("protocol_id").map(String::as_str)
    }

    fn kind(&self) -> Option<&str> {
        self.q.get("type").map(String::as_str)
    }

    fn tag(&self) -> Option<&str> {
        self.q
            .get("tags")
            .and_then(|t| t.split(',').next())
            .filter(|t| !t.is_empty())
    }

    fn reply(&self, rows: Vec<Map>) -> Reply {
        let total = rows.len();
        let results: Vec<Value> = rows.into_iter().map(Value::Object).collect();
        reply(
            StatusCode::OK,
            Value::Object(obj! { "results" => results, "total" => total }),
        )
    }
}

pub(super) async fn get_invitation(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| get_invitation_now(st, id, r)).await
}

fn get_invitation_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
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
    if inv.get_str("public_key") != Some(key) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "not_yours",
            "only the invitation's author may change it",
        ));
    }
    Ok(inv)
}

pub(super) async fn renew_invitation(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| renew_invitation_now(st, id, r)).await
}

fn renew_invitation_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let inv = own_open_invitation(st, &id, &r.key)?;
    if inv.get_str("status") != Some("open") {
        return Err(err(
            StatusCode::CONFLICT,
            "not_open",
            format!("the invitation is {}", inv.get_str("status").unwrap_or("?")),
        ));
    }
    let now = now_f();
    let expires_at = now + st.cfg.invitation_ttl;
    match st
        .store
        .renew_invitation(&id, now, expires_at, st.cfg.max_active_invitations)?
    {
        Renewal::Renewed => {}
        Renewal::TooMany => return Err(too_many(st)),
        Renewal::NotOpen(status) => {
            return Err(err(
                StatusCode::CONFLICT,
                "not_open",
                format!("the invitation is {status}"),
            ));
        }
        Renewal::Missing => {
            return Err(err(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no invitation {id}"),
            ));
        }
    }
    reply(
        StatusCode::OK,
        Value::Object(obj! { "post_id" => id, "expires_at" => expires_at }),
    )
}

pub(super) async fn cancel_invitation(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| cancel_invitation_now(st, id, r)).await
}

fn cancel_invitation_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let inv = own_open_invitation(st, &id, &r.key)?;
    let status = match inv.get_str("status") {
        // Only an open invitation moves; one matched meanwhile stays so.
        Some("open") if st.store.cancel_invitation(&id)? => "cancelled".to_owned(),
        Some("open") => st
            .store
            .invitation(&id)?
            .and_then(|i| i.get_str("status").map(str::to_owned))
            .unwrap_or_default(),
        other => other.unwrap_or("?").to_owned(),
    };
    match status.as_str() {
        // Cancelling twice is fine and writes nothing.
        "cancelled" => Ok(StatusCode::NO_CONTENT.into_response()),
        other => Err(err(
            StatusCode::CONFLICT,
            "not_open",
            format!("the invitation is {other}: a session was recorded for it"),
        )),
    }
}
