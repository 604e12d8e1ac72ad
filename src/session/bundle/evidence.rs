//! Re-derivation of a bundle's evidence files: every authority frame's core
//! hash and checkpoint certificate, the frame chain, the protocol events of
//! each frame against its `events_hash`, the peer index's shape, and the
//! manifest's terminal evidence against its frame. The same checks, in the
//! same order, as the reference's `_validate_derived_evidence` and
//! `_validate_terminal_evidence`; each failure says which file, line and
//! field.

use super::{Failure, Line, decode_jsonl, differs, get_or_null, int, is_hash, is_message_id};
use crate::json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

pub(super) const FRAMES: &str = "evidence/authority-frames.jsonl";
pub(super) const EVENTS: &str = "evidence/protocol-events.jsonl";
pub(super) const PUBLIC: &str = "evidence/public-events.jsonl";
pub(super) const PEERS: &str = "evidence/peer-index.jsonl";

const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The fields of a frame its hash covers (`_group` is the frame's kind).
const CORE: [(&str, &str); 13] = [
    ("_group", "frame_kind"),
    ("wire_version", "wire_version"),
    ("group_id", "group_id"),
    ("leader_public_key", "leader_public_key"),
    ("leader_epoch", "leader_epoch"),
    ("seq", "seq"),
    ("previous_hash", "previous_hash"),
    ("membership_version", "membership_version"),
    ("authority_state_hash", "authority_state_hash"),
    ("recovery_state_hash", "recovery_state_hash"),
    ("events_hash", "events_hash"),
    ("completed", "completed"),
    ("outcome", "outcome"),
];

type FrameKey = (i64, i64, String);

fn at(check: &'static str, reason: &str, file: &str, line: usize) -> Failure {
    Failure::new(check, reason).file(file).line(line)
}

/// Decodes one evidence file (absent is empty).
pub(super) fn lines(content: &HashMap<String, Vec<u8>>, file: &str) -> Result<Vec<Line>, Failure> {
    content
        .get(file)
        .map_or(Ok(Vec::new()), |d| decode_jsonl(file, d))
}

/// Checks one authority frame's own evidence; returns its key.
fn check_frame(
    line: usize,
    frame: &Map,
    seen: &mut HashMap<(i64, i64), String>,
) -> Result<FrameKey, Failure> {
    let fail = |check, reason: &str| at(check, reason, FRAMES, line);
    let epoch = int(frame.get("leader_epoch")).filter(|e| *e >= 0);
    let seq = int(frame.get("seq")).filter(|s| *s >= 0);
    let (Some(epoch), Some(seq), true) = (epoch, seq, is_hash(frame.get("frame_hash"))) else {
        let field = if epoch.is_none() {
            "leader_epoch"
        } else if seq.is_none() {
            "seq"
        } else {
            "frame_hash"
        };
        return Err(fail("authority_frame", "authority frame evidence is invalid").field(field));
    };
    let frame_hash = frame.get_str("frame_hash").unwrap_or_default().to_owned();
    if let Some(other) = seen.get(&(epoch, seq))
        && *other != frame_hash
    {
        return Err(fail(
            "equivocation",
            "one replay bundle contains authority equivocation",
        )
        .field(format!("leader_epoch {epoch}, seq {seq}")));
    }
    seen.insert((epoch, seq), frame_hash.clone());
    let mut core = Map::new();
    for (key, source) in CORE {
        core.insert(key, get_or_null(frame, source));
    }
    if let Some((_, source)) = CORE
        .iter()
        .find(|(k, s)| *k != "outcome" && frame.get(s).is_none_or(Value::is_null))
    {
        return Err(
            fail("frame_core", "authority frame core evidence is incomplete").field(*source),
        );
    }
    let kind_ok = matches!(
        frame.get_str("frame_kind"),
        Some("snapshot" | "membership" | "epoch_start" | "frame")
    );
    let invalid_field = if !kind_ok {
        Some("frame_kind")
    } else if !frame
        .get("wire_version")
        .is_some_and(|v| v.py_eq(&Value::from(2)))
    {
        Some("wire_version")
    } else if frame.get_str("group_id").is_none_or(str::is_empty) {
        Some("group_id")
    } else if !is_hash(frame.get("leader_public_key")) {
        Some("leader_public_key")
    } else if !is_hash(frame.get("previous_hash")) {
        Some("previous_hash")
    } else if int(frame.get("membership_version")).is_none() {
        Some("membership_version")
    } else if !is_hash(frame.get("authority_state_hash")) {
        Some("authority_state_hash")
    } else if !is_hash(frame.get("recovery_state_hash")) {
        Some("recovery_state_hash")
    } else if !is_hash(frame.get("events_hash")) {
        Some("events_hash")
    } else if frame.get("completed").and_then(Value::as_bool).is_none() {
        Some("completed")
    } else {
        None
    };
    if let Some(field) = invalid_field {
        return Err(fail("frame_core", "authority frame core evidence is invalid").field(field));
    }
    if super::json_hash(&Value::Object(core)).as_deref() != Some(frame_hash.as_str()) {
        return Err(fail("frame_hash", "authority frame core hash is invalid").field("frame_hash"));
    }
    let checkpoint_hash = frame.get("checkpoint_hash");
    let signature = frame.get_str("checkpoint_signature");
    if !is_hash(checkpoint_hash) || signature.is_none() {
        let field = if is_hash(checkpoint_hash) {
            "checkpoint_signature"
        } else {
            "checkpoint_hash"
        };
        return Err(fail(
            "checkpoint",
            "authority checkpoint certificate is incomplete",
        )
        .field(field));
    }
    let mut cert = Map::new();
    for k in [
        "group_id",
        "leader_public_key",
        "leader_epoch",
        "seq",
        "frame_hash",
    ] {
        cert.insert(k, get_or_null(frame, k));
    }
    cert.insert(
        "membership_version",
        get_or_null(frame, "membership_version"),
    );
    cert.insert("checkpoint_hash", get_or_null(frame, "checkpoint_hash"));
    let text = crate::engine::group::core::checkpoint_certificate(&cert);
    let leader = frame.get_str("leader_public_key").unwrap_or_default();
    if !crate::identity::verify(leader, text.as_bytes(), signature.unwrap_or_default()) {
        return Err(fail(
            "checkpoint_signature",
            "authority checkpoint certificate signature is invalid",
        )
        .field("checkpoint_signature"));
    }
    Ok((epoch, seq, frame_hash))
}

/// The reference's `_validate_derived_evidence` over a bundle's files.
pub(super) fn validate_derived(content: &HashMap<String, Vec<u8>>) -> Result<(), Failure> {
    let frames = lines(content, FRAMES)?;
    let mut seen = HashMap::new();
    let mut by_key: BTreeMap<FrameKey, (usize, &Map)> = BTreeMap::new();
    for (line, frame) in &frames {
        let key = check_frame(*line, frame, &mut seen)?;
        by_key.insert(key, (*line, frame));
    }
    let mut ordered: Vec<(&FrameKey, &(usize, &Map))> = by_key.iter().collect();
    ordered.sort_by_key(|(k, _)| (k.1, k.0));
    if let Some(((_, 0, _), (line, first))) = ordered.first()
        && first.get_str("previous_hash") != Some(ZERO_HASH)
    {
        return Err(at(
            "chain",
            "authority frame chain does not start at zero",
            FRAMES,
            *line,
        )
        .field("previous_hash"));
    }
    for pair in ordered.windows(2) {
        let ((_, prev_seq, prev_hash), _) = pair[0];
        let ((_, seq, _), (line, frame)) = pair[1];
        if seq <= prev_seq {
            return Err(at(
                "chain",
                "authority frame sequence is not monotonic",
                FRAMES,
                *line,
            )
            .field("seq"));
        }
        if *seq == prev_seq + 1 && frame.get_str("previous_hash") != Some(prev_hash.as_str()) {
            return Err(at(
                "chain",
                "authority frame hash chain is invalid",
                FRAMES,
                *line,
            )
            .field("previous_hash"));
        }
    }

    let events = lines(content, EVENTS)?;
    let mut by_frame: HashMap<FrameKey, Vec<(usize, &Map)>> = HashMap::new();
    let mut order: Vec<FrameKey> = Vec::new();
    for (line, record) in &events {
        let (Some(epoch), Some(seq), true) = (
            int(record.get("leader_epoch")),
            int(record.get("seq")),
            is_hash(record.get("frame_hash")),
        ) else {
            return Err(at(
                "protocol_event",
                "protocol event evidence is invalid",
                EVENTS,
                *line,
            ));
        };
        let key = (
            epoch,
            seq,
            record.get_str("frame_hash").unwrap_or_default().to_owned(),
        );
        if !by_frame.contains_key(&key) {
            order.push(key.clone());
        }
        by_frame.entry(key).or_default().push((*line, record));
    }
    for key in &order {
        let records = &by_frame[key];
        let first_line = records[0].0;
        let Some((_, frame)) = by_key.get(key) else {
            return Err(at(
                "protocol_event",
                "protocol events reference an unknown authority frame",
                EVENTS,
                first_line,
            )
            .field(format!("leader_epoch {}, seq {}", key.0, key.1)));
        };
        let mut indexed = Vec::with_capacity(records.len());
        for (line, r) in records {
            let Some(i) = int(r.get("event_index")) else {
                return Err(at(
                    "protocol_event",
                    "protocol event indexes are invalid",
                    EVENTS,
                    *line,
                )
                .field("event_index"));
            };
            indexed.push((i, *line, *r));
        }
        indexed.sort_by_key(|(i, _, _)| *i);
        if let Some((_, line, _)) = indexed
            .iter()
            .enumerate()
            .find(|(n, (i, _, _))| usize::try_from(*i).ok() != Some(*n))
            .map(|(_, x)| x)
        {
            return Err(at(
                "protocol_event",
                "protocol event indexes are invalid",
                EVENTS,
                *line,
            )
            .field("event_index"));
        }
        let frame_events_hash = frame.get("events_hash");
        if let Some((_, line, _)) = indexed
            .iter()
            .find(|(_, _, r)| differs(r.get("events_hash"), frame_events_hash))
        {
            return Err(at(
                "protocol_event",
                "protocol event hash is invalid",
                EVENTS,
                *line,
            )
            .field("events_hash"));
        }
        let list = Value::Array(
            indexed
                .iter()
                .map(|(_, _, r)| get_or_null(r, "event"))
                .collect(),
        );
        if super::json_hash(&list).as_deref() != frame.get_str("events_hash") {
            return Err(at(
                "protocol_event",
                "protocol event hash is invalid",
                EVENTS,
                first_line,
            )
            .field("event"));
        }
    }
    let empty = super::json_hash(&Value::Array(Vec::new()));
    for (key, (line, frame)) in &by_key {
        if !by_frame.contains_key(key) && frame.get_str("events_hash") != empty.as_deref() {
            return Err(at(
                "protocol_event",
                "authority frame protocol events are missing",
                FRAMES,
                *line,
            )
            .field("events_hash"));
        }
    }
    for (line, record) in lines(content, PEERS)? {
        let bad = if !is_message_id(record.get("message_id")) {
            Some("message_id")
        } else if !matches!(record.get_str("direction"), Some("sent" | "received")) {
            Some("direction")
        } else if !is_hash(record.get("envelope_hash")) {
            Some("envelope_hash")
        } else if !is_hash(record.get("peer_public_key")) {
            Some("peer_public_key")
        } else if record.get_str("channel").is_none_or(str::is_empty) {
            Some("channel")
        } else if !is_hash(record.get("record_hash")) {
            Some("record_hash")
        } else if !is_hash(record.get("receipt_hash")) {
            Some("receipt_hash")
        } else {
            None
        };
        if let Some(field) = bad {
            return Err(
                at("peer_index", "peer index evidence is invalid", PEERS, line).field(field),
            );
        }
    }
    Ok(())
}

/// The reference's `_validate_terminal_evidence`: the manifest's terminal
/// evidence names an authority frame of the bundle and agrees with it.
pub(super) fn validate_terminal(
    terminal: Option<&Value>,
    frames: &[Line],
    required: bool,
) -> Result<(), Failure> {
    let terminal = match terminal {
        None | Some(Value::Null) if !required => return Ok(()),
        Some(Value::Object(m)) => m,
        _ => {
            return Err(
                Failure::new("terminal", "replay terminal evidence is missing or invalid")
                    .file("manifest.json")
                    .field("terminal_evidence"),
            );
        }
    };
    let keys = ["leader_epoch", "seq", "frame_hash"];
    let matched = frames
        .iter()
        .find(|(_, f)| keys.iter().all(|k| !differs(terminal.get(k), f.get(k))));
    let Some((line, frame)) = matched else {
        return Err(Failure::new(
            "terminal",
            "replay terminal evidence has no authority frame",
        )
        .file("manifest.json")
        .field("terminal_evidence"));
    };
    for field in [
        "leader_public_key",
        "checkpoint_hash",
        "checkpoint_signature",
        "completed",
        "outcome",
    ] {
        if differs(terminal.get(field), frame.get(field)) {
            return Err(Failure::new(
                "terminal",
                "replay terminal evidence does not match its frame",
            )
            .file(FRAMES)
            .line(*line)
            .field(format!("terminal_evidence.{field}")));
        }
    }
    Ok(())
}
