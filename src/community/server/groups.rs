//! `/api/v1/groups`: the group rooms' routes (rules in
//! [`crate::community::groups`]). Every change is a compare-and-set on the
//! group's row version, so two claims racing for one epoch cannot both
//! win, and a refused request writes nothing.

use super::{ApiError, AppState, Id, Reply, Req, blocking, err, need, now_f, registered, reply};
use crate::community::groups::{Group, GroupError, NewGroup};
use crate::identity::verify;
use crate::json::{Map, Value};
use crate::web::auth;
use axum::extract::State;
use axum::http::StatusCode;
use std::sync::Arc;

impl From<GroupError> for ApiError {
    fn from(e: GroupError) -> ApiError {
        err(
            StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST),
            e.code,
            e.message,
        )
    }
}

fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

fn not_found(what: &str, id: &str) -> ApiError {
    err(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no {what} {id}"),
    )
}

/// Does `sig` bind `ticket` to `key` and the group's protocol (the 1v1
/// transport binding string)?
fn binding(key: String, pid: String) -> impl Fn(&str, &str) -> bool {
    move |ticket: &str, sig: &str| {
        let s = auth::transport_binding_canonical(&key, "iroh", ticket, Some(&pid));
        verify(&key, s.as_bytes(), sig)
    }
}

/// Lock stripes for group changes in one process (see `AppState`).
pub(super) const STRIPES: usize = 64;

/// Attempts of one group change before answering 409 `busy`. Within one
/// process changes of a group are serialised, so only another instance
/// (PostgreSQL) can make the compare-and-set fail.
const CHANGE_ATTEMPTS: u32 = 32;

fn stripe<'a>(st: &'a AppState, id: &str) -> std::sync::MutexGuard<'a, ()> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    let m = &st.group_stripes[(h.finish() % st.group_stripes.len() as u64) as usize];
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Loads a group, applies `f` and saves it if nobody changed it meanwhile;
/// returns what `f` returned with the saved group. A compare-and-set lost to
/// another instance is tried again after a short random pause (growing to
/// 20 ms).
fn change<T>(
    st: &AppState,
    id: &str,
    mut f: impl FnMut(&mut Group, f64) -> Result<T, GroupError>,
) -> Result<(T, Group), ApiError> {
    let _serial = stripe(st, id);
    for attempt in 0..CHANGE_ATTEMPTS {
        if attempt > 0 {
            let cap = 1u64 << attempt.min(4);
            let ms = rand::random::<u64>() % (cap + 1) + u64::from(attempt >= 8) * 4;
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let (mut g, version) = st
            .store
            .group(id, false)?
            .ok_or_else(|| not_found("group", id))?;
        let now = now_f();
        let out = match f(&mut g, now) {
            Ok(out) => out,
            Err(e) => {
                // A lapsed `abort` room is recorded as failed even when the
                // request itself is refused.
                let mut settled = g.clone();
                if settled.settle(now) {
                    let _ = st.store.save_group(&settled, version)?;
                }
                return Err(e.into());
            }
        };
        g.settle(now);
        if st.store.save_group(&g, version)? {
            return Ok((out, g));
        }
    }
    Err(err(
        StatusCode::CONFLICT,
        "busy",
        format!("group {id} kept changing: try again"),
    ))
}

pub(super) async fn create_group(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| create_group_now(st, r)).await
}

fn create_group_now(st: &AppState, r: Req) -> Reply {
    let post_id = need(&r.body, "post_id")?;
    let inv = st
        .store
        .invitation(post_id)?
        .ok_or_else(|| not_found("invitation", post_id))?;
    if inv.get_str("public_key") != Some(r.key.as_str()) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "not_author",
            "only the invitation's author opens its group",
        ));
    }
    if let Some((g, _)) = st.store.group(post_id, true)? {
        // Idempotent for its host: the same group again.
        if g.leader_public_key == r.key || g.leaders.first().is_some_and(|(_, k)| *k == r.key) {
            return reply(StatusCode::OK, Value::Object(g.to_json(now_f())));
        }
        return Err(err(
            StatusCode::CONFLICT,
            "group_exists",
            format!("invitation {post_id} has a group already"),
        ));
    }
    if inv.get_str("status") != Some("open") {
        return Err(err(
            StatusCode::CONFLICT,
            "invitation_closed",
            format!("invitation {post_id} is not open"),
        ));
    }
    let text = |k: &str| inv.get_str(k).unwrap_or("").to_owned();
    let (pid, ticket, sig) = (
        text("protocol_id"),
        text("iroh_ticket"),
        text("transport_binding_signature"),
    );
    let now = now_f();
    let g = Group::create(
        NewGroup {
            group_id: random_hex(16),
            member_id: random_hex(8),
            post_id,
            protocol_id: &pid,
            host: &r.key,
            iroh_ticket: &ticket,
            transport_binding_signature: &sig,
            body: &r.body,
            lease_seconds: st.cfg.group_lease_seconds,
        },
        now,
    )?;
    if !st.store.add_group(&g)? {
        return Err(err(
            StatusCode::CONFLICT,
            "group_exists",
            format!("invitation {post_id} has a group already"),
        ));
    }
    reply(StatusCode::CREATED, Value::Object(g.to_json(now)))
}

/// GET by group_id.
pub(super) async fn get_group(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| get_group_now(st, id, r)).await
}

fn get_group_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    show(st, &id, false)
}

/// GET by the invitation's post_id.
pub(super) async fn group_by_post(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| group_by_post_now(st, id, r)).await
}

fn group_by_post_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    show(st, &id, true)
}

fn show(st: &AppState, id: &str, by_post: bool) -> Reply {
    let (mut g, version) = st.store.group(id, by_post)?.ok_or_else(|| {
        not_found(
            if by_post {
                "group for invitation"
            } else {
                "group"
            },
            id,
        )
    })?;
    let now = now_f();
    if g.settle(now) {
        // Lost a race: the other writer saw the same lapse.
        let _ = st.store.save_group(&g, version)?;
    }
    reply(StatusCode::OK, Value::Object(g.to_json(now)))
}

pub(super) async fn join_group(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| join_group_now(st, id, r)).await
}

fn join_group_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    registered(st, &r.key)?;
    let key = r.key.clone();
    let (member, _) = change(st, &id, |g, now| {
        g.admit(&key, &r.body, || random_hex(8), now)
    })?;
    reply(StatusCode::OK, Value::Object(member.to_json()))
}

pub(super) async fn leader_heartbeat(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| leader_heartbeat_now(st, id, r)).await
}

fn leader_heartbeat_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let (_, g) = change(st, &id, |g, now| {
        let ok = binding(r.key.clone(), g.protocol_id.clone());
        g.heartbeat(&r.key, &r.body, ok, now)
    })?;
    reply(StatusCode::OK, Value::Object(g.to_json(now_f())))
}

pub(super) async fn member_heartbeat(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| member_heartbeat_now(st, id, r)).await
}

fn member_heartbeat_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let (member, g) = change(st, &id, |g, now| g.member_heartbeat(&r.key, now))?;
    let mut out: Map = member.to_json();
    out.insert("group_id", Value::from(g.group_id.as_str()));
    out.insert("group_status", Value::from(g.status.as_str()));
    reply(StatusCode::OK, Value::Object(out))
}

pub(super) async fn claim_leader(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| claim_leader_now(st, id, r)).await
}

fn claim_leader_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let (_, g) = change(st, &id, |g, now| {
        let ok = binding(r.key.clone(), g.protocol_id.clone());
        g.claim(&r.key, &r.body, ok, now)
    })?;
    reply(StatusCode::OK, Value::Object(g.to_json(now_f())))
}

pub(super) async fn leave_group(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| leave_group_now(st, id, r)).await
}

fn leave_group_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let (_, g) = change(st, &id, |g, _| g.leave(&r.key))?;
    reply(StatusCode::OK, Value::Object(g.to_json(now_f())))
}

pub(super) async fn group_status(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| group_status_now(st, id, r)).await
}

fn group_status_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let (_, g) = change(st, &id, |g, _| g.set_status(&r.key, &r.body))?;
    reply(StatusCode::OK, Value::Object(g.to_json(now_f())))
}
