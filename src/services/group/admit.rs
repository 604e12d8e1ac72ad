//! Admission of a member to a room's leader over a fresh channel: the
//! `join` → `admission` → `ready` exchange, checked against the server's
//! record of the group on both sides.

use super::api;
use crate::engine::Channel;
use crate::engine::group::core as gcore;
use crate::identity::KeyPair;
use crate::json::{Map, Value};
use crate::net;
use crate::obj;
use crate::web::{Client, auth};
use std::time::Duration;

/// How long each admission step waits for the other side.
pub const STEP: Duration = Duration::from_secs(30);

fn hex_lower(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

async fn recv_within(ch: &mut Channel, what: &str) -> Result<Map, String> {
    match tokio::time::timeout(STEP, ch.rx.recv()).await {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(e)) => Err(format!("waiting for {what}: {e}")),
        Err(_) => Err(format!("no {what} within {STEP:?}")),
    }
}

/// The leader's side: admits the member that opened `ch`, returning the
/// member object the server lists for it.
pub async fn admit_member(
    ch: &mut Channel,
    client: &Client,
    keys: &KeyPair,
    group: &Map,
) -> Result<Value, String> {
    let first = recv_within(ch, "a group join").await?;
    if first.get_str("_group") != Some("join") {
        return Err("first multiplayer frame must be group join".into());
    }
    let group_id = group.get_str("group_id").unwrap_or_default().to_owned();
    let protocol_id = group.get_str("protocol_id").unwrap_or_default().to_owned();
    let epoch = api::count(group, "leader_epoch").map_err(|e| e.to_string())?;
    let member_pk = first
        .get_str("member_public_key")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let nonce = first.get_str("join_nonce").unwrap_or_default().to_owned();
    if first.get_str("group_id") != Some(group_id.as_str()) {
        return Err("group join targets a different group".into());
    }
    if !hex_lower(&member_pk, 64) {
        return Err("member_public_key must be 64-char hex".into());
    }
    if nonce.is_empty() || nonce.chars().count() > 64 {
        return Err("join_nonce is invalid".into());
    }
    let current = api::get(client, &group_id)
        .await
        .map_err(|e| e.to_string())?;
    if current.get_str("leader_public_key") != Some(keys.public_key.as_str())
        || api::count(&current, "leader_epoch").ok() != Some(epoch)
    {
        return Err("this process is not the current leader epoch".into());
    }
    let admission = gcore::admission_canonical(
        &group_id,
        &keys.public_key,
        &member_pk,
        &protocol_id,
        epoch,
        &nonce,
    );
    let challenge = hex::encode(rand::random::<[u8; 16]>());
    let frame = obj! {
        "_group" => "admission", "group_id" => group_id.as_str(), "protocol_id" => protocol_id.as_str(),
        "leader_public_key" => keys.public_key.as_str(), "leader_epoch" => epoch,
        "join_nonce" => nonce.as_str(), "channel_challenge" => challenge.as_str(),
        "leader_signature" => keys.sign(admission.as_bytes()),
    };
    ch.tx
        .send(&Value::Object(frame))
        .await
        .map_err(|e| format!("sending the admission: {e}"))?;
    let ready = recv_within(ch, "the member's ready").await?;
    let same = |k: &str, v: &str| ready.get_str(k) == Some(v);
    if !same("_group", "ready")
        || !same("group_id", &group_id)
        || !same("protocol_id", &protocol_id)
        || ready
            .get("leader_epoch")
            .filter(|v| v.is_integer())
            .and_then(Value::as_i64)
            != i64::try_from(epoch).ok()
        || !same("member_public_key", &member_pk)
        || !same("join_nonce", &nonce)
        || !same("channel_challenge", &challenge)
    {
        return Err("member did not complete server admission".into());
    }
    let member_id = ready.get_str("member_id").unwrap_or_default().to_owned();
    let seat = ready
        .get("seat")
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .filter(|s| *s >= 0);
    let signature = ready.get_str("member_signature");
    let (Some(seat), Some(signature)) = (seat, signature) else {
        return Err("member channel proof is invalid".into());
    };
    if member_id.is_empty() || member_id.chars().count() > 128 {
        return Err("member channel proof is invalid".into());
    }
    let proof = gcore::channel_ready_canonical(
        &group_id,
        &protocol_id,
        epoch,
        &member_pk,
        &member_id,
        seat as u64,
        &nonce,
        &challenge,
    );
    if !gcore::verify_signature(&member_pk, &proof, signature) {
        return Err("member channel proof signature is invalid".into());
    }
    let latest = api::get(client, &group_id)
        .await
        .map_err(|e| e.to_string())?;
    let member = api::active_members(&latest)
        .into_iter()
        .find(|m| m.get_str("public_key") == Some(member_pk.as_str()))
        .ok_or("server does not list the admitted member")?;
    if member.get_str("member_id") != Some(member_id.as_str())
        || member.get("seat").and_then(Value::as_i64) != Some(seat)
    {
        return Err("member channel proof does not match server admission".into());
    }
    Ok(member)
}

/// Why a member could not join its leader.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The leader or the server said no: trying again would get the same.
    #[error("{0}")]
    Refused(String),
    /// Anything else on the way (the dial, a lost or malformed answer, a
    /// signature that does not verify).
    #[error("{0}")]
    Failed(String),
}

impl From<String> for JoinError {
    fn from(e: String) -> Self {
        JoinError::Failed(e)
    }
}

/// A member's side: dials the leader the group object names (its ticket
/// signed by the leader's key), is admitted by it and by the server, and
/// returns the open link and channel with the member object the server gave.
pub async fn join_leader(
    ep: &iroh::Endpoint,
    client: &Client,
    group: &Map,
    control_mode: &str,
    dial: Duration,
) -> Result<(net::Link, Channel, Map), JoinError> {
    let keys = client.keys();
    let leader = group.get_str("leader_public_key").unwrap_or_default();
    let protocol_id = group.get_str("protocol_id").unwrap_or_default();
    let group_id = group.get_str("group_id").unwrap_or_default();
    let ticket = group.get_str("iroh_ticket").unwrap_or_default();
    let epoch = api::count(group, "leader_epoch").map_err(|e| e.to_string())?;
    let binding = auth::transport_binding_canonical(leader, "iroh", ticket, Some(protocol_id));
    if !gcore::verify_signature(
        leader,
        binding.as_bytes(),
        group
            .get_str("transport_binding_signature")
            .unwrap_or_default(),
    ) {
        return Err(JoinError::Failed("the group's leader ticket is not signed by the leader's key: refusing it (possible man in the middle)".into()));
    }
    let (link, mut ch) = net::connect_within(ep, ticket, dial)
        .await
        .map_err(|e| e.to_string())?;
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let join = obj! {
        "_group" => "join", "group_id" => group_id, "member_public_key" => keys.public_key.as_str(),
        "join_nonce" => nonce.as_str(), "member_control_mode" => control_mode,
    };
    let admitted = async {
        ch.tx
            .send(&Value::Object(join))
            .await
            .map_err(|e| format!("sending the join: {e}"))?;
        let adm = recv_within(&mut ch, "the leader's admission").await?;
        if adm.get_str("_group") == Some("error") {
            return Err(JoinError::Refused(format!(
                "the leader refused this member: {}",
                adm.get_str("reason").unwrap_or("no reason given")
            )));
        }
        if adm.get_str("_group") != Some("admission") {
            return Err(JoinError::Failed(
                "leader did not return a group admission".into(),
            ));
        }
        if adm.get_str("group_id") != Some(group_id)
            || adm.get_str("protocol_id") != Some(protocol_id)
            || adm.get_str("leader_public_key") != Some(leader)
            || adm
                .get("leader_epoch")
                .filter(|v| v.is_integer())
                .and_then(Value::as_i64)
                != i64::try_from(epoch).ok()
            || adm.get_str("join_nonce") != Some(nonce.as_str())
        {
            return Err(JoinError::Failed(
                "group admission does not match server state".into(),
            ));
        }
        let challenge = adm
            .get_str("channel_challenge")
            .unwrap_or_default()
            .to_owned();
        if !hex_lower(&challenge, 32) {
            return Err(JoinError::Failed(
                "group channel challenge is invalid".into(),
            ));
        }
        let admission = gcore::admission_canonical(
            group_id,
            leader,
            &keys.public_key,
            protocol_id,
            epoch,
            &nonce,
        );
        let leader_sig = adm
            .get_str("leader_signature")
            .unwrap_or_default()
            .to_owned();
        if !gcore::verify_signature(leader, admission.as_bytes(), &leader_sig) {
            return Err(JoinError::Failed(
                "the leader's admission signature is invalid".into(),
            ));
        }
        let member = api::admit(
            client,
            group_id,
            epoch,
            &nonce,
            &leader_sig,
            &keys.sign(admission.as_bytes()),
        )
        .await
        .map_err(|e| JoinError::Refused(format!("the server refused the admission: {e}")))?;
        let member_id = api::text(&member, "member_id")
            .map_err(|e| e.to_string())?
            .to_owned();
        let seat = api::count(&member, "seat").map_err(|e| e.to_string())?;
        let proof = gcore::channel_ready_canonical(
            group_id,
            protocol_id,
            epoch,
            &keys.public_key,
            &member_id,
            seat,
            &nonce,
            &challenge,
        );
        let ready = obj! {
            "_group" => "ready", "group_id" => group_id, "protocol_id" => protocol_id, "leader_epoch" => epoch,
            "member_public_key" => keys.public_key.as_str(), "member_id" => member_id.as_str(), "seat" => seat,
            "join_nonce" => nonce.as_str(), "channel_challenge" => challenge.as_str(),
            "member_signature" => keys.sign(&proof),
        };
        ch.tx
            .send(&Value::Object(ready))
            .await
            .map_err(|e| format!("sending ready: {e}"))?;
        Ok(member)
    };
    match admitted.await {
        Ok(member) => Ok((link, ch, member)),
        Err(e) => {
            link.conn.close(1u32.into(), b"admission failed");
            Err(e)
        }
    }
}
