//! Protocols: publishing a spec under its protocol_id, listing, fetching.

use super::{
    AppState, Id, Reply, Req, blocking, cursor_of, err, need, now_f, query, registered, reply,
};
use crate::community::store::NewProtocol;
use crate::json::{self, Value};
use crate::obj;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use std::sync::Arc;

pub(super) async fn add_protocol(State(st): State<Arc<AppState>>, r: Req) -> Reply {
    blocking(st, move |st| add_protocol_now(st, r)).await
}

fn add_protocol_now(st: &AppState, r: Req) -> Reply {
    registered(st, &r.key)?;
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
    let name = r
        .body
        .get_str("name")
        .or(spec.get_str("name"))
        .unwrap_or(claimed);
    let text = crate::json::canonical::to_string_ordered(&Value::Object(spec.clone()));
    let new = NewProtocol {
        protocol_id: claimed,
        name,
        description: r.body.get_str("description").unwrap_or(""),
        kind: r.body.get_str("type").unwrap_or("protocol"),
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
pub(super) async fn list_protocols(State(st): State<Arc<AppState>>, u: Uri, r: Req) -> Reply {
    blocking(st, move |st| list_protocols_now(st, u, r)).await
}

fn list_protocols_now(st: &AppState, u: Uri, _: Req) -> Reply {
    let q = query(&u);
    // Clamped, not refused: the reference's `protocol discover` passes
    // what its user typed (`--limit 0` or a negative one among them).
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<i64>().ok())
        .unwrap_or(50)
        .clamp(1, 100) as usize;
    let cursor = cursor_of(&q)?;
    let page = st.store.protocols(cursor.as_ref(), limit)?;
    let results: Vec<Value> = page
        .entries
        .into_iter()
        .map(|(id, name, d)| {
            Value::Object(obj! { "protocol_id" => id, "name" => name, "description" => d })
        })
        .collect();
    let next = page.next.map(|c| Value::from(c.encode()));
    reply(
        StatusCode::OK,
        Value::Object(obj! { "results" => results, "next_cursor" => next.unwrap_or(Value::Null) }),
    )
}

pub(super) async fn get_protocol(State(st): State<Arc<AppState>>, id: Id, r: Req) -> Reply {
    blocking(st, move |st| get_protocol_now(st, id, r)).await
}

fn get_protocol_now(st: &AppState, Id(id): Id, _: Req) -> Reply {
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
