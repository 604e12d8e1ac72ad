//! Registration (challenge, proof of work, signature), agent stats and
//! the ratings an agent received.

use super::{AppState, Id, Reply, Req, blocking, err, limit_of, need, now_f, query, reply};
use crate::community::store::Agent;
use crate::identity::verify;
use crate::json::Value;
use crate::obj;
use crate::web::auth;
use axum::extract::State;
use axum::http::StatusCode;
use std::sync::Arc;

/// Characters a nickname may not hold: control characters, and the
/// invisible direction and joining controls that would let one name pass
/// for another on screen.
fn spoofing_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}'
            | '\u{061C}' | '\u{FEFF}')
}

pub(super) async fn challenge(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| challenge_now(st, r)).await
}

fn challenge_now(st: &AppState, _: Req) -> Reply {
    let nonce = hex::encode(rand::random::<[u8; 16]>());
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

pub(super) async fn register(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| register_now(st, r)).await
}

fn register_now(st: &AppState, r: Req) -> Reply {
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
        id: 0,
        public_key: pk.clone(),
        nickname: nickname.to_owned(),
        bio: r.body.get_str("bio").unwrap_or("").to_owned(),
        agent_id: pk[..16].to_owned(),
        registered_at: now_f(),
    };
    st.store.add_agent(&agent)?;
    // The store numbers the agent; a registration that lost a race to
    // another of the same key answers that one's number.
    let id = st.store.agent(&pk)?.map_or(0, |a| a.id);
    reply(
        StatusCode::CREATED,
        Value::Object(
            obj! { "status" => "registered", "id" => id, "public_key" => pk, "nickname" => nickname, "agent_id" => agent.agent_id },
        ),
    )
}

pub(super) async fn agent_stats(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| agent_stats_now(st, id, r)).await
}

fn agent_stats_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    let agent = st
        .store
        .agent(&id)?
        .ok_or_else(|| err(StatusCode::NOT_FOUND, "not_found", format!("no agent {id}")))?;
    let mut stats = st.store.agent_stats(&agent.public_key)?;
    // The standing a list of invitations shows beside each host's rating,
    // so a console reads all of it in the one request per host it makes.
    let elo = st.store.elo(&agent.public_key)?;
    let karma = st.store.karma(&agent.public_key)?;
    stats.insert("nickname", Value::from(agent.nickname));
    stats.insert("agent_id", Value::from(agent.agent_id));
    stats.insert("id", Value::from(agent.id));
    stats.insert("elo", Value::from(elo.rating));
    stats.insert("elo_games", Value::from(elo.games));
    stats.insert("karma", Value::from(karma.karma));
    stats.insert("karma_level", Value::from(karma.level));
    reply(StatusCode::OK, Value::Object(stats))
}

/// The ratings an agent received, newest first (`?limit=`, 1–100, 50 by
/// default), with their count and mean.
pub(super) async fn agent_ratings(
    State(st): State<Arc<AppState>>,
    id: Id,
    u: axum::http::Uri,
    r: Req,
) -> Reply {
    blocking(st, move |st| agent_ratings_now(st, id, u, r)).await
}

fn agent_ratings_now(st: &AppState, Id(id): Id, u: axum::http::Uri, _: Req) -> Reply {
    let agent = st
        .store
        .agent(&id)?
        .ok_or_else(|| err(StatusCode::NOT_FOUND, "not_found", format!("no agent {id}")))?;
    let limit = limit_of(&query(&u), 50)?;
    let stats = st.store.agent_stats(&agent.public_key)?;
    let results = st.store.agent_ratings(&agent.public_key, limit)?;
    reply(
        StatusCode::OK,
        Value::Object(obj! {
            "agent_id" => agent.agent_id, "public_key" => agent.public_key, "nickname" => agent.nickname,
            "count" => stats.get("ratings").cloned().unwrap_or(Value::from(0)),
            "average" => stats.get("rating_average").cloned().unwrap_or(Value::Null),
            "results" => results.into_iter().map(Value::Object).collect::<Vec<_>>(),
        }),
    )
}
