//! The eight `/api/v1/groups` calls a room's leader and members make on the
//! community server, with the bodies the reference client sends.

use crate::json::{Map, Value};
use crate::obj;
use crate::web::{Client, ClientError, auth};

/// A group object as the server returns it.
pub type GroupObj = Map;

/// Why a group call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server answered something a group client cannot use.
    #[error("{0}")]
    Shape(String),
}

fn object(v: Value, what: &str) -> Result<Map, ApiError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ApiError::Shape(format!(
            "the server's {what} is {}, not a JSON object",
            other.type_name()
        ))),
    }
}

/// A field of a group object that must be a non-empty string.
pub fn text<'a>(g: &'a Map, key: &str) -> Result<&'a str, ApiError> {
    g.get_str(key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::Shape(format!("the group's {key} is missing or not text")))
}

/// A field of a group object that must be a non-negative integer.
pub fn count(g: &Map, key: &str) -> Result<u64, ApiError> {
    g.get(key)
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| {
            ApiError::Shape(format!(
                "the group's {key} is missing or not a non-negative integer"
            ))
        })
}

/// The transport binding a leader signs for its ticket.
fn binding_signature(client: &Client, protocol_id: &str, ticket: &str) -> String {
    let keys = client.keys();
    let binding =
        auth::transport_binding_canonical(&keys.public_key, "iroh", ticket, Some(protocol_id));
    keys.sign(binding.as_bytes())
}

/// `POST /api/v1/groups`: the room behind an invitation just posted.
pub async fn create(
    client: &Client,
    post_id: &str,
    cfg: &crate::engine::group::GroupConfig,
) -> Result<GroupObj, ApiError> {
    let body = obj! {
        "post_id" => post_id, "min_participants" => cfg.min_participants,
        "max_participants" => cfg.max_participants, "allow_late_join" => cfg.allow_late_join,
        "recovery_mode" => cfg.recovery_mode.as_str(),
    };
    let v = client
        .call(
            "POST",
            "/api/v1/groups",
            Some(&Value::Object(body)),
            &[200, 201],
        )
        .await?;
    object(v, "group")
}

/// `GET /api/v1/groups/{id}`.
pub async fn get(client: &Client, group_id: &str) -> Result<GroupObj, ApiError> {
    let v = client
        .call("GET", &format!("/api/v1/groups/{group_id}"), None, &[200])
        .await?;
    object(v, "group")
}

/// `GET /api/v1/groups/by-post/{post_id}`.
pub async fn by_post(client: &Client, post_id: &str) -> Result<GroupObj, ApiError> {
    let v = client
        .call(
            "GET",
            &format!("/api/v1/groups/by-post/{post_id}"),
            None,
            &[200],
        )
        .await?;
    object(v, "group")
}

/// `POST /api/v1/groups/{id}/members`: this member's admission, carrying
/// the leader's signature over the admission string and its own.
pub async fn admit(
    client: &Client,
    group_id: &str,
    leader_epoch: u64,
    join_nonce: &str,
    leader_signature: &str,
    member_signature: &str,
) -> Result<Map, ApiError> {
    let body = obj! {
        "join_nonce" => join_nonce, "leader_epoch" => leader_epoch,
        "leader_signature" => leader_signature, "member_signature" => member_signature,
    };
    let v = client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/members"),
            Some(&Value::Object(body)),
            &[200, 201],
        )
        .await?;
    object(v, "member")
}

/// `POST /api/v1/groups/{id}/heartbeat`: the leader's lease, with the newest
/// checkpoint some successor holds.
pub async fn renew_lease(
    client: &Client,
    group_id: &str,
    protocol_id: &str,
    leader_epoch: u64,
    checkpoint: (u64, &str),
    ticket: &str,
) -> Result<Map, ApiError> {
    let body = obj! {
        "leader_epoch" => leader_epoch, "checkpoint_seq" => checkpoint.0,
        "checkpoint_hash" => checkpoint.1, "iroh_ticket" => ticket,
        "transport_binding_signature" => binding_signature(client, protocol_id, ticket),
    };
    let v = client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/heartbeat"),
            Some(&Value::Object(body)),
            &[200],
        )
        .await?;
    object(v, "lease")
}

/// `POST /api/v1/groups/{id}/members/heartbeat`.
pub async fn member_heartbeat(client: &Client, group_id: &str) -> Result<(), ApiError> {
    client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/members/heartbeat"),
            Some(&Value::Object(Map::new())),
            &[200],
        )
        .await?;
    Ok(())
}

/// `POST /api/v1/groups/{id}/claim-leader` with this member's replica
/// checkpoint (which the server compares with what the old leader reported).
pub async fn claim(
    client: &Client,
    group_id: &str,
    protocol_id: &str,
    expected_epoch: u64,
    checkpoint: &Map,
    ticket: &str,
) -> Result<GroupObj, ApiError> {
    let field = |k: &str| checkpoint.get(k).cloned().unwrap_or(Value::Null);
    let body = obj! {
        "expected_epoch" => expected_epoch, "checkpoint_seq" => field("seq"),
        "checkpoint_hash" => field("checkpoint_hash"), "checkpoint_frame_hash" => field("frame_hash"),
        "checkpoint_membership_version" => field("membership_version"),
        "checkpoint_signature" => field("checkpoint_signature"), "iroh_ticket" => ticket,
        "transport_binding_signature" => binding_signature(client, protocol_id, ticket),
    };
    let v = client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/claim-leader"),
            Some(&Value::Object(body)),
            &[200],
        )
        .await?;
    object(v, "group")
}

/// `POST /api/v1/groups/{id}/leave`.
pub async fn leave(client: &Client, group_id: &str) -> Result<(), ApiError> {
    client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/leave"),
            Some(&Value::Object(Map::new())),
            &[200],
        )
        .await?;
    Ok(())
}

/// `POST /api/v1/groups/{id}/status` (`active` when the room starts,
/// `closed` when it completes).
pub async fn set_status(
    client: &Client,
    group_id: &str,
    leader_epoch: u64,
    status: &str,
) -> Result<GroupObj, ApiError> {
    let body = obj! { "leader_epoch" => leader_epoch, "status" => status };
    let v = client
        .call(
            "POST",
            &format!("/api/v1/groups/{group_id}/status"),
            Some(&Value::Object(body)),
            &[200],
        )
        .await?;
    object(v, "group")
}

/// The active members of a group object.
pub fn active_members(g: &Map) -> Vec<Value> {
    g.get("members")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter(|m| m.get_str("status") == Some("active"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Has the leader's lease run out, by the server's own clock?
pub fn lease_expired(g: &Map) -> bool {
    let at = |k: &str| g.get_str(k).and_then(parse_iso);
    match (at("leader_lease_expires_at"), at("server_time")) {
        (Some(expiry), Some(now)) => now >= expiry,
        _ => false,
    }
}

/// The lease length the server grants (3..=300 s; else the default 15).
pub fn lease_seconds(g: &Map) -> u64 {
    g.get("leader_lease_seconds")
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .filter(|n| (3..=300).contains(n))
        .map_or(15, |n| n as u64)
}

/// An RFC 3339 UTC time (`…Z` or `…+00:00`) as unix milliseconds.
fn parse_iso(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_suffix("+00:00") {
        Some(body) => crate::utc::parse_rfc3339_utc(&format!("{body}Z")),
        None => crate::utc::parse_rfc3339_utc(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_compare_by_the_servers_clock() {
        assert_eq!(parse_iso("1970-01-01T00:00:01Z"), Some(1_000));
        assert_eq!(
            parse_iso("2026-12-02T12:00:00.5+00:00"),
            parse_iso("2026-12-02T12:00:00.500000Z")
        );
        assert!(parse_iso("2026-13-02T12:00:00Z").is_none());
        assert!(parse_iso("nonsense").is_none());
        let g = |exp: &str, now: &str| {
            let mut m = Map::new();
            m.insert("leader_lease_expires_at", Value::from(exp));
            m.insert("server_time", Value::from(now));
            lease_expired(&m)
        };
        assert!(g("2026-12-02T12:00:00Z", "2026-12-02T12:00:00Z"));
        assert!(!g("2026-12-02T12:00:01Z", "2026-12-02T12:00:00.999Z"));
        assert!(!lease_expired(&Map::new()));
    }
}
