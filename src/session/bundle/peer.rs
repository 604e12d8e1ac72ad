//! The group peer evidence log (`group-peer-evidence.jsonl`): a hash chain
//! of the signed peer messages a member sent and received, each with its
//! receipt. Export derives the public peer index from it; verification of a
//! participant bundle re-checks the chain, every grant, message and receipt
//! signature and each record's context, and that the public index is the
//! one the log derives, as the reference does.

use super::{Failure, Line, differs, int, is_hash, is_message_id, json_hash};
use crate::json::{Map, Value};

const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The peer wire version the reference writes.
const PEER_WIRE_VERSION: i64 = 1;
/// Largest payload (canonical bytes) a verified peer message may carry.
const MAX_MESSAGE_BYTES: usize = 65_536;

/// The chain of a log: `record_seq` 1, 2, …, each `previous_hash` the last
/// `record_hash`, each `record_hash` the hash of the record without it.
/// `Err((line, field))` names the first record that breaks it.
pub(super) fn check_chain(records: &[Line]) -> Result<(), (usize, &'static str)> {
    let mut previous = ZERO_HASH.to_owned();
    for (n, (line, record)) in records.iter().enumerate() {
        let claimed = record.get_str("record_hash");
        let mut unsigned = record.clone();
        unsigned.remove("record_hash");
        let field = if differs(record.get("record_seq"), Some(&Value::from(n + 1))) {
            Some("record_seq")
        } else if record.get_str("previous_hash") != Some(previous.as_str()) {
            Some("previous_hash")
        } else if !is_hash(record.get("record_hash"))
            || json_hash(&Value::Object(unsigned)).as_deref() != claimed
        {
            Some("record_hash")
        } else {
            None
        };
        if let Some(f) = field {
            return Err((*line, f));
        }
        previous = claimed.unwrap_or_default().to_owned();
    }
    Ok(())
}

/// The public index of a log's records.
pub(super) fn index(records: &[Line]) -> Vec<Map> {
    records
        .iter()
        .map(|(_, r)| {
            let mut m = Map::new();
            for k in [
                "record_seq",
                "record_hash",
                "recorded_at",
                "direction",
                "leader_epoch",
                "authority_seq",
                "message_id",
                "envelope_hash",
                "peer_public_key",
                "channel",
            ] {
                m.insert(k, super::get_or_null(r, k));
            }
            let receipt = r.get("receipt").and_then(Value::as_object);
            m.insert(
                "receipt_status",
                receipt.map_or(Value::Null, |x| super::get_or_null(x, "status")),
            );
            m.insert(
                "receipt_hash",
                receipt
                    .and_then(|x| json_hash(&Value::Object(x.clone())))
                    .map_or(Value::Null, Value::from),
            );
            m
        })
        .collect()
}

/// `body` (the value without `signature`) signed by `key`.
fn signed_by(key: &str, value: &Map) -> Result<Map, &'static str> {
    let Some(signature) = value.get_str("signature") else {
        return Err("signature");
    };
    let mut body = value.clone();
    body.remove("signature");
    let bytes = crate::engine::group::core::canonical(&Value::Object(body.clone()))
        .map_err(|_| "signature")?;
    if crate::identity::verify(key, &bytes, signature) {
        Ok(body)
    } else {
        Err("signature")
    }
}

/// Does any of these fields differ (Python `!=`)?
fn mismatch(body: &Map, expected: &[(&str, Value)]) -> bool {
    expected.iter().any(|(k, v)| differs(body.get(k), Some(v)))
}

/// The message's grant, message and receipt signatures and contexts, as the
/// reference checks them with the message's own context; `Err(field)`
/// names what failed. Returns the envelope hash.
fn check_envelope(message: &Map, receipt: &Map) -> Result<String, String> {
    let text = |k: &str| message.get_str(k).unwrap_or_default().to_owned();
    let number = |k: &str| int(message.get(k)).ok_or_else(|| format!("message.{k}"));
    let (epoch, seq, version) = (
        number("leader_epoch")?,
        number("authority_seq")?,
        number("membership_version")?,
    );
    let leader = text("leader_public_key").to_lowercase();
    let recipient = text("recipient_public_key").to_lowercase();
    let grant = message
        .get("grant")
        .and_then(Value::as_object)
        .ok_or("message.grant")?;
    let channels: Vec<String> = grant
        .get("channels")
        .and_then(Value::as_array)
        .ok_or("message.grant.channels")?
        .iter()
        .map(Value::py_str)
        .collect();
    let ticket = grant
        .get_str("recipient_ticket_hash")
        .unwrap_or_default()
        .to_owned();
    let sender = message.get_str("sender_public_key");
    let channel = message.get_str("channel");
    let context = [
        ("_peer", Value::from("message")),
        ("wire_version", Value::from(PEER_WIRE_VERSION)),
        ("group_id", Value::from(text("group_id"))),
        ("protocol_id", Value::from(text("protocol_id"))),
        ("leader_public_key", Value::from(leader.as_str())),
        ("leader_epoch", Value::from(epoch)),
        ("authority_seq", Value::from(seq)),
        ("membership_version", Value::from(version)),
        ("recipient_public_key", Value::from(recipient.as_str())),
    ];
    if mismatch(message, &context)
        || !is_hash(message.get("sender_public_key"))
        || !is_message_id(message.get("message_id"))
        || !channel.is_some_and(|c| channels.iter().any(|x| x == c))
    {
        return Err("message (context)".into());
    }
    let payload = message
        .get("payload")
        .and_then(Value::as_object)
        .ok_or("message.payload")?;
    let fits = crate::engine::group::core::canonical(&Value::Object(payload.clone()))
        .is_ok_and(|b| b.len() <= MAX_MESSAGE_BYTES);
    if !fits {
        return Err("message.payload".into());
    }
    let sender = sender.unwrap_or_default();
    let grant_context = [
        ("wire_version", Value::from(PEER_WIRE_VERSION)),
        ("group_id", Value::from(text("group_id"))),
        ("protocol_id", Value::from(text("protocol_id"))),
        ("leader_public_key", Value::from(leader.as_str())),
        ("leader_epoch", Value::from(epoch)),
        ("authority_seq", Value::from(seq)),
        ("membership_version", Value::from(version)),
        ("sender_public_key", Value::from(sender.to_lowercase())),
        ("recipient_public_key", Value::from(recipient.as_str())),
        ("recipient_ticket_hash", Value::from(ticket.as_str())),
    ];
    if mismatch(grant, &grant_context) {
        return Err("message.grant (context)".into());
    }
    signed_by(&leader, grant).map_err(|f| format!("message.grant.{f}"))?;
    signed_by(sender, message).map_err(|f| format!("message.{f}"))?;
    let envelope = json_hash(&Value::Object(message.clone())).ok_or("message")?;
    let receipt_context = [
        ("_peer", Value::from("receipt")),
        ("wire_version", Value::from(PEER_WIRE_VERSION)),
        ("group_id", super::get_or_null(message, "group_id")),
        ("protocol_id", super::get_or_null(message, "protocol_id")),
        (
            "leader_public_key",
            super::get_or_null(message, "leader_public_key"),
        ),
        ("leader_epoch", super::get_or_null(message, "leader_epoch")),
        (
            "authority_seq",
            super::get_or_null(message, "authority_seq"),
        ),
        (
            "membership_version",
            super::get_or_null(message, "membership_version"),
        ),
        ("message_id", super::get_or_null(message, "message_id")),
        ("envelope_hash", Value::from(envelope.as_str())),
        (
            "sender_public_key",
            super::get_or_null(message, "sender_public_key"),
        ),
        (
            "recipient_public_key",
            super::get_or_null(message, "recipient_public_key"),
        ),
    ];
    if mismatch(receipt, &receipt_context)
        || !matches!(receipt.get_str("status"), Some("accepted" | "duplicate"))
    {
        return Err("receipt (context)".into());
    }
    signed_by(
        message.get_str("recipient_public_key").unwrap_or_default(),
        receipt,
    )
    .map_err(|f| format!("receipt.{f}"))?;
    Ok(envelope)
}

/// Checks a participant bundle's peer evidence logs against its public
/// peer index.
pub(super) fn validate_participant(
    logs: &[(&str, &[u8])],
    peer_index: &[Map],
    index_file: &str,
) -> Result<(), Failure> {
    if logs.is_empty() {
        if !peer_index.is_empty() {
            return Err(Failure::new(
                "peer_evidence",
                "participant replay omits its peer evidence log",
            )
            .file(index_file));
        }
        return Ok(());
    }
    let mut derived = Vec::new();
    for (file, data) in logs {
        let records = super::decode_jsonl(file, data)?;
        if let Err((line, field)) = check_chain(&records) {
            return Err(Failure::new(
                "peer_evidence",
                "participant peer evidence hash chain is invalid",
            )
            .file(*file)
            .line(line)
            .field(field));
        }
        for (line, record) in &records {
            let at = |reason: &str, field: String| {
                Failure::new("peer_evidence", reason)
                    .file(*file)
                    .line(*line)
                    .field(field)
            };
            let (Some(message), Some(receipt)) = (
                record.get("message").and_then(Value::as_object),
                record.get("receipt").and_then(Value::as_object),
            ) else {
                return Err(at(
                    "participant peer evidence envelope is missing",
                    "message".into(),
                ));
            };
            let grant = message.get("grant").and_then(Value::as_object);
            let channels_ok = grant
                .and_then(|g| g.get("channels"))
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            if !channels_ok || !is_hash(grant.and_then(|g| g.get("recipient_ticket_hash"))) {
                return Err(at(
                    "participant peer evidence grant is invalid",
                    "message.grant".into(),
                ));
            }
            let envelope = check_envelope(message, receipt)
                .map_err(|field| at("participant peer evidence signature is invalid", field))?;
            let expected_peer = match record.get_str("direction") {
                Some("sent") => message.get("recipient_public_key"),
                Some("received") => message.get("sender_public_key"),
                _ => None,
            };
            let envelope_value = Value::from(envelope);
            let pairs: [(&str, Option<&Value>); 8] = [
                ("group_id", message.get("group_id")),
                ("protocol_id", message.get("protocol_id")),
                ("leader_epoch", message.get("leader_epoch")),
                ("authority_seq", message.get("authority_seq")),
                ("message_id", message.get("message_id")),
                ("envelope_hash", Some(&envelope_value)),
                ("peer_public_key", expected_peer),
                ("channel", message.get("channel")),
            ];
            if let Some((k, _)) = pairs.iter().find(|(k, v)| differs(record.get(k), *v)) {
                return Err(at(
                    "participant peer evidence context is invalid",
                    (*k).to_owned(),
                ));
            }
        }
        derived.push(index(&records));
    }
    let matches = |d: &Vec<Map>| {
        d.len() == peer_index.len()
            && d.iter()
                .zip(peer_index)
                .all(|(a, b)| Value::Object(a.clone()).py_eq(&Value::Object(b.clone())))
    };
    if !derived.iter().any(matches) {
        return Err(Failure::new(
            "peer_evidence",
            "participant peer evidence does not match the public index",
        )
        .file(index_file));
    }
    Ok(())
}
