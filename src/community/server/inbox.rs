//! The end-to-end encrypted inbox: the server stores the sender's
//! ciphertext (checked for form only: base64, size, magic) and never
//! decrypts it; only the recipient lists, reads and deletes its messages,
//! and anyone else is told a message does not exist.

use super::social::listing;
use super::{ApiError, AppState, Id, Reply, Req, blocking, err, iso, need, now_f, paging, reply};
use crate::community::standing::{
    Delivery, INBOX_MAX_MESSAGES, INBOX_MAX_PER_SENDER, Message, check_ciphertext,
};
use crate::identity::is_key_hex;
use crate::json::{Map, Value};
use crate::obj;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use std::sync::Arc;

fn meta(m: &Message) -> Map {
    obj! {
        "id" => m.id, "sender_public_key" => m.sender.as_str(), "size" => m.size,
        "created_at" => iso(m.created_at), "expires_at" => iso(m.expires_at), "read" => m.read,
    }
}

/// A message id from the path; anything else names no message (404, as a
/// message of someone else's would).
fn message_id(id: &str) -> Result<i64, ApiError> {
    id.parse::<i64>()
        .ok()
        .filter(|n| *n > 0 && id.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(missing)
}

fn missing() -> ApiError {
    err(StatusCode::NOT_FOUND, "not_found", "no such message")
}

pub(super) async fn send(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| send_now(st, r)).await
}

fn send_now(st: &AppState, r: Req) -> Reply {
    let recipient = need(&r.body, "recipient_public_key")?.to_ascii_lowercase();
    let text = need(&r.body, "ciphertext")?;
    if !is_key_hex(&recipient) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "recipient_public_key must be 64 hex characters",
        ));
    }
    let size =
        check_ciphertext(text).map_err(|m| err(StatusCode::BAD_REQUEST, "bad_ciphertext", m))?;
    if st.store.agent(&r.key)?.is_none() {
        return Err(err(
            StatusCode::FORBIDDEN,
            "unknown_sender",
            "register this key before sending: palaver register --nickname NAME",
        ));
    }
    if st.store.agent(&recipient)?.is_none() {
        return Err(err(
            StatusCode::NOT_FOUND,
            "unknown_recipient",
            format!("no agent has the key {recipient}"),
        ));
    }
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    match st
        .store
        .send_message(&r.key, &recipient, text, size, now_f())?
    {
        Delivery::Delivered(m) => reply(
            StatusCode::CREATED,
            Value::Object(obj! {
                "id" => m.id, "recipient_public_key" => recipient, "size" => m.size,
                "created_at" => iso(m.created_at), "expires_at" => iso(m.expires_at),
            }),
        ),
        Delivery::InboxFull => Err(err(
            StatusCode::TOO_MANY_REQUESTS,
            "inbox_full",
            format!("the recipient holds {INBOX_MAX_MESSAGES} messages already"),
        )),
        Delivery::SenderQuota => Err(err(
            StatusCode::TOO_MANY_REQUESTS,
            "sender_quota",
            format!("you have {INBOX_MAX_PER_SENDER} unexpired messages in this inbox already"),
        )),
    }
}

pub(super) async fn list(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    blocking(st, move |st| {
        let (limit, after) = paging(&u)?;
        let got = st.store.inbox(&r.key, after.as_ref(), limit, now_f())?;
        let entries = got
            .page
            .entries
            .iter()
            .map(|m| Value::Object(meta(m)))
            .collect();
        let mut v = listing(entries, &got.page);
        if let Value::Object(m) = &mut v {
            m.insert("unread", Value::from(got.unread));
            m.insert("total", Value::from(got.total));
        }
        reply(StatusCode::OK, v)
    })
    .await
}

pub(super) async fn read(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| {
        let n = message_id(&id.0)?;
        let m = st
            .store
            .read_message(&r.key, n, now_f())?
            .ok_or_else(missing)?;
        let mut v = meta(&m);
        v.insert("recipient_public_key", Value::from(m.recipient.as_str()));
        v.insert(
            "ciphertext",
            Value::from(m.ciphertext.clone().unwrap_or_default()),
        );
        reply(StatusCode::OK, Value::Object(v))
    })
    .await
}

pub(super) async fn delete(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| {
        let n = message_id(&id.0)?;
        if !st.store.delete_message(&r.key, n)? {
            return Err(missing());
        }
        reply(
            StatusCode::OK,
            Value::Object(obj! { "id" => n, "deleted" => 1 }),
        )
    })
    .await
}

pub(super) async fn clear(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| {
        let n = st.store.clear_inbox(&r.key)?;
        reply(
            StatusCode::OK,
            Value::Object(obj! { "deleted" => i64::try_from(n).unwrap_or(i64::MAX) }),
        )
    })
    .await
}
