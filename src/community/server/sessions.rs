//! Sessions: the proof both sides signed, status and result from a party,
//! the transport, feedback and ratings.

use super::{ApiError, AppState, Id, Reply, Req, blocking, err, need, now_f, reply};
use crate::community::store::{NewSession, SessionRow};
use crate::identity::verify;
use crate::json::Value;
use crate::obj;
use crate::web::auth;
use axum::extract::State;
use axum::http::StatusCode;
use std::sync::Arc;

pub(super) async fn create_session(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    // A store with asynchronous calls tries the usual case on the worker;
    // only a refused one goes to the blocking checks that say why.
    if let Some(calls) = st.store.async_calls() {
        let p = Proposal::of(&r)?;
        if p.signed
            && calls
                .add_session_at_once(&p.row, &p.nonce, &p.host_sig, &p.guest_sig)
                .await?
        {
            return p.created();
        }
        return blocking(st, move |st| p.checked(st)).await;
    }
    blocking(st, move |st| create_session_now(st, r)).await
}

fn create_session_now(st: &AppState, r: Req) -> Reply {
    let p = Proposal::of(&r)?;
    // The usual case, both proofs good, in one transaction of two
    // statements that hold only if every check below would pass; otherwise
    // (nothing written) the checks one by one say why, in their order.
    if p.signed
        && st
            .store
            .add_session_at_once(&p.row, &p.nonce, &p.host_sig, &p.guest_sig)?
    {
        return p.created();
    }
    p.checked(st)
}

/// A session as its create request proposes it, the proofs checked.
struct Proposal {
    row: SessionRow,
    nonce: String,
    host_sig: String,
    guest_sig: String,
    /// Whether both proof signatures verify.
    signed: bool,
}

impl Proposal {
    /// The request's session: every field present, the caller a party.
    fn of(r: &Req) -> Result<Proposal, ApiError> {
        let post_id = need(&r.body, "post_id")?;
        let host = need(&r.body, "host_public_key")?.to_ascii_lowercase();
        let guest = need(&r.body, "guest_public_key")?.to_ascii_lowercase();
        let nonce = need(&r.body, "session_nonce")?;
        let (hs, gs) = (
            need(&r.body, "host_signature")?,
            need(&r.body, "guest_signature")?,
        );
        let protocol_id = r.body.get_str("protocol_id").filter(|p| !p.is_empty());
        if r.key != host && r.key != guest {
            return Err(err(
                StatusCode::FORBIDDEN,
                "not_a_party",
                "only the host or the guest may record their session",
            ));
        }
        let canonical = auth::session_canonical(post_id, &host, &guest, protocol_id, nonce);
        let signed =
            verify(&host, canonical.as_bytes(), hs) && verify(&guest, canonical.as_bytes(), gs);
        Ok(Proposal {
            row: SessionRow {
                session_id: auth::session_id(&canonical),
                post_id: post_id.to_owned(),
                protocol_id: protocol_id.unwrap_or("").to_owned(),
                host_public_key: host,
                guest_public_key: guest,
                status: "matched".into(),
                winner: None,
                disputed: false,
                iroh_ticket: None,
                created_at: now_f(),
            },
            nonce: nonce.to_owned(),
            host_sig: hs.to_owned(),
            guest_sig: gs.to_owned(),
            signed,
        })
    }

    fn created(&self) -> Reply {
        reply(
            StatusCode::CREATED,
            Value::Object(
                obj! { "session_id" => self.row.session_id.as_str(), "status" => "matched" },
            ),
        )
    }

    /// The checks one by one, in their order, and the session recorded if
    /// they all pass (the usual case's statement took nothing).
    fn checked(&self, st: &AppState) -> Reply {
        let (row, post_id) = (&self.row, self.row.post_id.as_str());
        let (host, guest) = (&row.host_public_key, &row.guest_public_key);
        // The invitation and whether both keys are registered, in one read.
        let (inv, registered) = st
            .store
            .invitation_and_agents(post_id, [host, guest])?
            .ok_or_else(|| {
                err(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no invitation {post_id}"),
                )
            })?;
        if inv.get_str("public_key") != Some(host.as_str()) {
            return Err(err(
                StatusCode::FORBIDDEN,
                "wrong_host",
                "host_public_key is not the invitation's author",
            ));
        }
        if !self.signed {
            return Err(err(
                StatusCode::BAD_REQUEST,
                "bad_signature",
                "both signatures must sign post_id:host:guest:protocol_id:session_nonce",
            ));
        }
        for (k, registered) in [&host, &guest].into_iter().zip(registered) {
            if !registered {
                return Err(err(
                    StatusCode::FORBIDDEN,
                    "not_registered",
                    format!("key {}… is not registered", &k[..12]),
                ));
            }
        }
        // Recorded only while the invitation is open, checked in the same
        // transaction as the insert: a cancelled invitation, or one another
        // session matched (on any server), takes no session.
        match st
            .store
            .add_session(row, &self.nonce, &self.host_sig, &self.guest_sig)?
        {
            NewSession::Added => {}
            NewSession::Exists => {
                return Err(err(
                    StatusCode::CONFLICT,
                    "exists",
                    format!("session {} is already recorded", row.session_id),
                ));
            }
            NewSession::NotOpen(status) => {
                return Err(err(
                    StatusCode::CONFLICT,
                    "not_open",
                    format!("invitation {post_id} is {status}: a session needs an open invitation"),
                ));
            }
            NewSession::NoInvitation => {
                return Err(err(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no invitation {post_id}"),
                ));
            }
        }
        self.created()
    }
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

pub(super) async fn get_session(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| get_session_now(st, id, r)).await
}

fn get_session_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
    match st.store.session(&id)? {
        Some(s) => reply(StatusCode::OK, session_value(&s)),
        None => Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {id}"),
        )),
    }
}

pub(super) async fn session_status(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| session_status_now(st, id, r)).await
}

fn session_status_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let session = party_session(st, &id, &r.key)?;
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

pub(super) async fn session_result(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| session_result_now(st, id, r)).await
}

fn session_result_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    party_session(st, &id, &r.key)?;
    let winner = need(&r.body, "winner")?;
    if !matches!(winner, "host" | "guest" | "draw") {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_winner",
            "winner must be host, guest or draw",
        ));
    }
    let got = st.store.report_result(&id, &r.key, winner, now_f())?;
    reply(
        StatusCode::OK,
        Value::Object(obj! {
            "session_id" => id, "winner" => got.winner.map(Value::from).unwrap_or(Value::Null),
            "disputed" => got.disputed, "elo" => got.elo.as_str(),
        }),
    )
}

pub(super) async fn get_transport(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| get_transport_now(st, id, r)).await
}

fn get_transport_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let s = party_session(st, &id, &r.key)?;
    reply(
        StatusCode::OK,
        Value::Object(
            obj! { "session_id" => id, "iroh_ticket" => s.iroh_ticket.map(Value::from).unwrap_or(Value::Null) },
        ),
    )
}

pub(super) async fn patch_transport(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| patch_transport_now(st, id, r)).await
}

fn patch_transport_now(st: &AppState, Id(id): Id, r: Req) -> Reply {
    let s = party_session(st, &id, &r.key)?;
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

pub(super) async fn feedback(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| feedback_now(st, r)).await
}

fn feedback_now(st: &AppState, r: Req) -> Reply {
    let sid = need(&r.body, "session_id")?;
    party_session(st, sid, &r.key)?;
    st.store.add_feedback(sid, &r.key, &r.body, now_f())?;
    reply(
        StatusCode::CREATED,
        Value::Object(obj! { "status" => "recorded", "session_id" => sid }),
    )
}

pub(super) async fn rating(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| rating_now(st, r)).await
}

fn rating_now(st: &AppState, r: Req) -> Reply {
    let sid = need(&r.body, "session_id")?;
    let s = party_session(st, sid, &r.key)?;
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
        r.body.get_str("comment").unwrap_or(""),
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
