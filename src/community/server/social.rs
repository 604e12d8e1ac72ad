//! Agents by integer id or public key, their ELO and karma, the two
//! leaderboards, and declared capabilities (the rules are
//! `community::social`'s).

use super::{AppState, Id, Reply, Req, blocking, err, iso, paging, query, registered, reply};
use crate::community::standing::{EloRating, Karma, Page, Ranked, check_capabilities};
use crate::community::store::Agent;
use crate::identity::is_key_hex;
use crate::json::{Map, Value};
use crate::obj;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use std::sync::Arc;

/// The agent a `{id}` names (integer id, agent_id or public key), or 404.
pub(super) fn agent_named(st: &AppState, id: &str) -> Result<Agent, super::ApiError> {
    st.store
        .agent(id)?
        .ok_or_else(|| err(StatusCode::NOT_FOUND, "not_found", format!("no agent {id}")))
}

/// The fields every agent answer starts with.
fn head(a: &Agent) -> Map {
    obj! {
        "id" => a.id, "agent_id" => a.agent_id.as_str(), "public_key" => a.public_key.as_str(),
        "nickname" => a.nickname.as_str(),
    }
}

/// `GET /api/v1/agents?public_key=K` (one agent, or 404) or
/// `?capability=X&limit=&cursor=` (the agents declaring X).
pub(super) async fn agents(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    blocking(st, move |st| agents_now(st, u, r)).await
}

fn agents_now(st: &AppState, u: Uri, _: Req) -> Reply {
    let q = query(&u);
    if let Some(cap) = q.get("capability") {
        let (limit, after) = paging(&u)?;
        let page = st
            .store
            .agents_with_capability(cap, after.as_ref(), limit)?;
        let entries: Vec<Value> = page
            .entries
            .iter()
            .map(|(a, caps)| {
                Value::Object(obj! {
                    "id" => a.id, "public_key" => a.public_key.as_str(), "nickname" => a.nickname.as_str(),
                    "capabilities" => caps.iter().map(|c| Value::from(c.as_str())).collect::<Vec<_>>(),
                })
            })
            .collect();
        return reply(StatusCode::OK, listing(entries, &page));
    }
    let Some(pk) = q.get("public_key") else {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "give `public_key` (64 hex) or `capability`",
        ));
    };
    let pk = pk.to_ascii_lowercase();
    if !is_key_hex(&pk) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_public_key",
            "public_key must be 64 hex characters",
        ));
    }
    let a = agent_named(st, &pk)?;
    let mut m = head(&a);
    m.insert("registered_at", iso(a.registered_at));
    reply(StatusCode::OK, Value::Object(m))
}

/// `{"entries": …, "next_cursor": …}`.
pub(super) fn listing<T>(entries: Vec<Value>, page: &Page<T>) -> Value {
    Value::Object(obj! {
        "entries" => entries,
        "next_cursor" => page.next.as_ref().map(|c| Value::from(c.encode())).unwrap_or(Value::Null),
    })
}

fn when(t: Option<f64>) -> Value {
    t.map(iso).unwrap_or(Value::Null)
}

pub(super) async fn agent_elo(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| agent_elo_now(st, id, r)).await
}

fn agent_elo_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    let a = agent_named(st, &id)?;
    let EloRating {
        rating,
        games,
        wins,
        losses,
        draws,
        updated_at,
    } = st.store.elo(&a.public_key)?;
    let mut m = head(&a);
    for (k, v) in [
        ("rating", rating),
        ("games_played", games),
        ("wins", wins),
        ("losses", losses),
        ("draws", draws),
    ] {
        m.insert(k, Value::from(v));
    }
    m.insert("updated_at", when(updated_at));
    reply(StatusCode::OK, Value::Object(m))
}

pub(super) async fn agent_karma(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| agent_karma_now(st, id, r)).await
}

fn agent_karma_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    let a = agent_named(st, &id)?;
    let Karma {
        karma,
        level,
        ratings,
        updated_at,
    } = st.store.karma(&a.public_key)?;
    let mut m = head(&a);
    m.insert("karma", Value::from(karma));
    m.insert("level", Value::from(level));
    m.insert("ratings", Value::from(ratings));
    m.insert("updated_at", when(updated_at));
    reply(StatusCode::OK, Value::Object(m))
}

fn board(page: Page<Ranked>, value: &str, count: &str, level: bool) -> Value {
    let entries = page
        .entries
        .iter()
        .map(|r| {
            let mut m = obj! {
                "rank" => r.rank as i64, "id" => r.id, "agent_id" => r.agent_id.as_str(),
                "public_key" => r.public_key.as_str(), "nickname" => r.nickname.as_str(),
            };
            m.insert(value, Value::from(r.value));
            if level {
                m.insert(
                    "level",
                    Value::from(crate::community::standing::confidence(r.count)),
                );
            }
            m.insert(count, Value::from(r.count));
            Value::Object(m)
        })
        .collect();
    listing(entries, &page)
}

pub(super) async fn elo_leaderboard(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    blocking(st, move |st| {
        let _ = r;
        let (limit, after) = paging(&u)?;
        let page = st.store.elo_board(after.as_ref(), limit)?;
        reply(StatusCode::OK, board(page, "rating", "games_played", false))
    })
    .await
}

pub(super) async fn karma_leaderboard(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    blocking(st, move |st| {
        let _ = r;
        let (limit, after) = paging(&u)?;
        let page = st.store.karma_board(after.as_ref(), limit)?;
        reply(StatusCode::OK, board(page, "karma", "ratings", true))
    })
    .await
}

fn capabilities_value(a: &Agent, caps: Option<(Vec<String>, f64)>) -> Value {
    let (list, at) = match caps {
        Some((l, t)) => (l, Some(t)),
        None => (Vec::new(), None),
    };
    Value::Object(obj! {
        "id" => a.id, "agent_id" => a.agent_id.as_str(), "public_key" => a.public_key.as_str(),
        "capabilities" => list.iter().map(|c| Value::from(c.as_str())).collect::<Vec<_>>(),
        "updated_at" => when(at),
    })
}

pub(super) async fn get_capabilities(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| {
        let _ = r;
        let a = agent_named(st, &id.0)?;
        let caps = st.store.capabilities(&a.public_key)?;
        reply(StatusCode::OK, capabilities_value(&a, caps))
    })
    .await
}

pub(super) async fn set_capabilities(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| set_capabilities_now(st, id, r)).await
}

fn set_capabilities_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    registered(st, &r.key)?;
    let a = agent_named(st, &id)?;
    if a.public_key != r.key {
        return Err(err(
            StatusCode::FORBIDDEN,
            "forbidden",
            "an agent sets only its own capabilities",
        ));
    }
    let caps = check_capabilities(r.body.get("capabilities"))
        .map_err(|m| err(StatusCode::BAD_REQUEST, "bad_capabilities", m))?;
    st.store
        .set_capabilities(&a.public_key, &caps, super::now_f())?;
    let stored = st.store.capabilities(&a.public_key)?;
    reply(StatusCode::OK, capabilities_value(&a, stored))
}
