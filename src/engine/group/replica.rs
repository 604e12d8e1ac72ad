//! A member's side of a room: every envelope from the leader is checked
//! (identity, hashes, signature, sequence and hash chain, checkpoint,
//! view) before it replaces what the member holds.
//!
//! [`Replica`] makes the reference `GroupReplica`'s checks in its order
//! and refuses with its texts. Nothing changes unless every check passes;
//! an accepted frame leaves a [`FrameRecord`] for the state dir.

use super::core::{
    self, CHECKPOINT_STATE_FIELDS, CORE_FIELDS, GroupError, PRIVATE_PAYLOAD_FIELDS, Result,
    canonical_fields, canonical_members, compose, compose_members, is_hash, object, quoted,
    validate_checkpoint_state, walk,
};
use super::delta::{apply_delta, apply_delta_owned};
use super::frame::FrameRecord;
use crate::json::canonical::{self, sha256_hex};
use crate::json::{Map, Number, Value};
use std::collections::VecDeque;
use std::sync::Arc;

/// A member's verified copy of the room.
#[derive(Debug, Clone)]
pub struct Replica {
    group_id: String,
    viewer_public_key: String,
    leader_public_key: String,
    leader_epoch: u64,
    protocol_name: String,
    seq: Option<u64>,
    frame_hash: Option<String>,
    membership_version: i64,
    checkpoint: Option<Arc<Value>>,
    view: Option<Value>,
    records: VecDeque<FrameRecord>,
    /// Set by [`Replica::advance_epoch`]: the new leader's first bootstrap
    /// may stand at or before this replica's frame (see there).
    rebase: bool,
}

const SIGNED: [&str; 2] = ["checkpoint_hash", "checkpoint_signature"];

/// Python's `a == b` with absent values read as `None`.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.unwrap_or(&Value::Null).py_eq(b.unwrap_or(&Value::Null))
}

fn is_str(v: Option<&Value>, s: &str) -> bool {
    v.and_then(Value::as_str) == Some(s)
}

impl Replica {
    /// A replica that has seen nothing yet: its first envelope must be a
    /// bootstrap.
    pub fn new(
        group_id: &str,
        viewer_public_key: &str,
        leader_public_key: &str,
        leader_epoch: u64,
        protocol_name: &str,
    ) -> Replica {
        Replica {
            group_id: group_id.to_owned(),
            viewer_public_key: viewer_public_key.to_lowercase(),
            leader_public_key: leader_public_key.to_lowercase(),
            leader_epoch,
            protocol_name: protocol_name.to_owned(),
            seq: None,
            frame_hash: None,
            membership_version: 0,
            checkpoint: None,
            view: None,
            records: VecDeque::new(),
            rebase: false,
        }
    }

    /// Checks `envelope` and makes it current. `bootstrap`: a
    /// self-contained envelope (the first one, or after a reconnect), which
    /// may skip ahead. Returns false for the current frame received again.
    pub fn apply(&mut self, envelope: &Value, bootstrap: bool) -> Result<bool> {
        let Value::Object(env) = envelope else {
            return Err(GroupError::Protocol("group envelope must be an object"));
        };
        if !is_str(env.get("group_id"), &self.group_id) {
            return Err(GroupError::Protocol("group envelope group_id mismatch"));
        }
        if !is_str(env.get("leader_public_key"), &self.leader_public_key) {
            return Err(GroupError::Protocol("group envelope leader mismatch"));
        }
        if !same(
            env.get("leader_epoch"),
            Some(&Value::from(self.leader_epoch)),
        ) {
            return Err(GroupError::Protocol("group envelope epoch mismatch"));
        }
        if !is_str(env.get("viewer_public_key"), &self.viewer_public_key) {
            return Err(GroupError::Protocol("group envelope viewer mismatch"));
        }
        if !same(
            env.get("wire_version"),
            Some(&Value::from(core::WIRE_VERSION)),
        ) {
            return Err(GroupError::Protocol("group envelope wire version mismatch"));
        }
        let frame_hash = match env.get("frame_hash") {
            Some(Value::String(h)) if core::is_hash_str(h) => &**h,
            _ => return Err(GroupError::Protocol("group frame hash mismatch")),
        };
        if sha256_hex(canonical_fields(env, &CORE_FIELDS)?) != frame_hash {
            return Err(GroupError::Protocol("group frame hash mismatch"));
        }
        let Some(events @ Value::Array(_)) = env.get("events") else {
            return Err(GroupError::Protocol("group events hash mismatch"));
        };
        if !is_str(env.get("events_hash"), &core::json_hash(events)?) {
            return Err(GroupError::Protocol("group events hash mismatch"));
        }
        let view_hash = match env.get("view_hash") {
            Some(Value::String(h)) if core::is_hash_str(h) => &**h,
            _ => return Err(GroupError::Protocol("group view hash mismatch")),
        };
        if sha256_hex(canonical_fields(env, &PRIVATE_PAYLOAD_FIELDS)?) != view_hash {
            return Err(GroupError::Protocol("group view hash mismatch"));
        }
        let Some(signature) = env.get_str("signature") else {
            return Err(GroupError::Protocol("group envelope signature is missing"));
        };
        let (q_fh, q_vh, q_viewer) = (
            quoted(frame_hash),
            quoted(view_hash),
            quoted(&self.viewer_public_key),
        );
        let signed = compose(&mut [
            ("frame_hash", q_fh.as_slice()),
            ("view_hash", q_vh.as_slice()),
            ("viewer_public_key", q_viewer.as_slice()),
        ]);
        if !core::verify_signature(&self.leader_public_key, &signed, signature) {
            return Err(GroupError::EnvelopeSignature);
        }
        // `None`: an integer past 64 bits, which only a bootstrap could
        // carry without a sequence error.
        let seq = match env.get("seq") {
            Some(Value::Number(Number::Int(i))) if *i >= 0 => Some(i.unsigned_abs()),
            Some(Value::Number(Number::BigInt(s))) if !s.starts_with('-') => None,
            _ => return Err(GroupError::Protocol("group frame seq is invalid")),
        };
        match self.seq {
            Some(current) => {
                if seq == Some(current) && self.frame_hash.as_deref() == Some(frame_hash) {
                    return Ok(false);
                }
                if seq.is_some_and(|s| s <= current) && !(bootstrap && self.rebase) {
                    return Err(GroupError::Protocol("group frame sequence moved backwards"));
                }
                if !bootstrap && seq != current.checked_add(1) {
                    return Err(GroupError::Protocol("group frame sequence has a gap"));
                }
                if !bootstrap
                    && !is_str(
                        env.get("previous_hash"),
                        self.frame_hash.as_deref().unwrap_or_default(),
                    )
                {
                    return Err(GroupError::Protocol("group frame hash chain mismatch"));
                }
            }
            None if !bootstrap => {
                return Err(GroupError::Protocol(
                    "first group frame must be a bootstrap",
                ));
            }
            None => {}
        }
        let Some(seq) = seq else {
            return Err(GroupError::Value(
                "group frame seq does not fit in 64 bits".into(),
            ));
        };

        let (checkpoint, checkpoint_json) =
            self.decode_checkpoint(env, seq, frame_hash, bootstrap)?;
        let view = self.decode_view(env, bootstrap)?;
        let membership_version = core::py_int_or_zero(env.get("membership_version"))?;

        let get = |k: &str| env.get(k).cloned().unwrap_or(Value::Null);
        let or_empty = |k: &str| {
            env.get(k)
                .filter(|v| v.truthy())
                .cloned()
                .unwrap_or_else(|| Value::Array(Vec::new()))
        };
        let ops = |k: &str| env.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        let completed = env.get("completed").is_some_and(Value::truthy);
        let checkpoint_hash = checkpoint
            .get("checkpoint_hash")
            .cloned()
            .unwrap_or(Value::Null);
        let group = object([
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.leader_public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(seq)),
            ("membership_version", Value::from(membership_version)),
            (
                "members",
                checkpoint
                    .get("members")
                    .cloned()
                    .unwrap_or_else(|| Value::Array(Vec::new())),
            ),
            ("checkpoint_hash", checkpoint_hash.clone()),
            (
                "recovery_mode",
                checkpoint
                    .get("recovery_mode")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        ]);
        let mut snapshot = Map::with_capacity(9);
        snapshot.insert(
            "phase",
            Value::from(if completed {
                "group_completed"
            } else {
                "group_active"
            }),
        );
        snapshot.insert("role", Value::from("guest"));
        snapshot.insert("protocol_name", Value::from(self.protocol_name.as_str()));
        snapshot.insert("group", group);
        snapshot.insert("group_view", view.clone());
        snapshot.insert("group_events", or_empty("events"));
        snapshot.insert("direct", or_empty("direct"));
        snapshot.insert("completed", Value::Bool(completed));
        snapshot.insert("outcome", get("outcome"));
        let frame = object([
            ("type", Value::from("group_frame")),
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.leader_public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(seq)),
            ("frame_hash", Value::from(frame_hash)),
            ("frame_kind", get("_group")),
            ("wire_version", get("wire_version")),
            ("previous_hash", get("previous_hash")),
            ("membership_version", Value::from(membership_version)),
            ("authority_state_hash", get("authority_state_hash")),
            ("recovery_state_hash", get("recovery_state_hash")),
            ("events_hash", get("events_hash")),
            ("events", or_empty("events")),
            ("checkpoint_mode", get("checkpoint_mode")),
            ("checkpoint_delta_ops", Value::from(ops("checkpoint_delta"))),
            ("view_mode", get("view_mode")),
            ("view_delta_ops", Value::from(ops("view_delta"))),
            ("completed", Value::Bool(completed)),
            ("outcome", get("outcome")),
        ]);
        let full = env.get_str("checkpoint_mode") == Some("full");
        let recovery = object([
            ("type", Value::from("group_recovery_record")),
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.leader_public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(seq)),
            ("frame_hash", Value::from(frame_hash)),
            ("membership_version", Value::from(membership_version)),
            ("recovery_state_hash", get("recovery_state_hash")),
            ("checkpoint_mode", get("checkpoint_mode")),
            (
                "checkpoint",
                if full { get("checkpoint") } else { Value::Null },
            ),
            ("checkpoint_delta", or_empty("checkpoint_delta")),
            ("checkpoint_hash", checkpoint_hash),
            (
                "checkpoint_signature",
                checkpoint
                    .get("checkpoint_signature")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        ]);
        let event = object([
            ("group_id", Value::from(self.group_id.as_str())),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(seq)),
            ("frame_hash", Value::from(frame_hash)),
        ]);
        let checkpoint = Arc::new(Value::Object(checkpoint));
        self.records.push_back(FrameRecord {
            seq,
            frame_hash: frame_hash.to_owned(),
            checkpoint_json,
            checkpoint: checkpoint.clone(),
            details: vec![frame, recovery],
            event: ("group_frame_received", event),
            snapshot,
        });
        self.seq = Some(seq);
        self.frame_hash = Some(frame_hash.to_owned());
        self.membership_version = membership_version;
        self.checkpoint = Some(checkpoint);
        self.view = Some(view);
        self.rebase = false;
        Ok(true)
    }

    /// The checkpoint of this frame, checked, and its canonical bytes.
    fn decode_checkpoint(
        &self,
        env: &Map,
        seq: u64,
        frame_hash: &str,
        bootstrap: bool,
    ) -> Result<(Map, Vec<u8>)> {
        let Some(delta @ Value::Array(ops)) = env.get("checkpoint_delta") else {
            return Err(GroupError::Protocol(
                "group checkpoint delta must be an array",
            ));
        };
        let checkpoint = match env.get_str("checkpoint_mode") {
            Some("full") => match env.get("checkpoint") {
                Some(Value::Object(cp)) if ops.is_empty() => cp.clone(),
                _ => {
                    return Err(GroupError::Protocol(
                        "full group checkpoint payload is invalid",
                    ));
                }
            },
            Some("delta") => {
                if bootstrap || env.get("checkpoint").is_some_and(|c| !c.is_null()) {
                    return Err(GroupError::Protocol(
                        "bootstrap requires a full group checkpoint",
                    ));
                }
                let Some(Value::Object(base)) = self.checkpoint.as_deref() else {
                    return Err(GroupError::Protocol(
                        "group checkpoint delta has no replay base",
                    ));
                };
                let state = core::checkpoint_state_from(base)?;
                let state = apply_delta_owned(Value::Object(state), delta)
                    .map_err(GroupError::CheckpointDelta)?;
                validate_checkpoint_state(&state)?;
                let Value::Object(state) = state else {
                    return Err(GroupError::Protocol(
                        "group checkpoint state fields are invalid",
                    ));
                };
                let mut cp = Map::with_capacity(15);
                cp.insert("version", Value::from(1));
                cp.insert("group_id", Value::from(self.group_id.as_str()));
                cp.insert(
                    "leader_public_key",
                    Value::from(self.leader_public_key.as_str()),
                );
                cp.insert("leader_epoch", Value::from(self.leader_epoch));
                cp.insert("seq", Value::from(seq));
                cp.insert("frame_hash", Value::from(frame_hash));
                cp.insert(
                    "membership_version",
                    env.get("membership_version")
                        .cloned()
                        .unwrap_or(Value::Null),
                );
                for (k, v) in state.into_entries() {
                    cp.insert(k, v);
                }
                for k in SIGNED {
                    cp.insert(k, env.get(k).cloned().unwrap_or(Value::Null));
                }
                cp
            }
            _ => return Err(GroupError::Protocol("group checkpoint mode is invalid")),
        };

        let mismatch = GroupError::Protocol("group checkpoint hash mismatch");
        if !same(checkpoint.get("version"), Some(&Value::from(1)))
            || !checkpoint.get("checkpoint_hash").is_some_and(is_hash)
        {
            return Err(mismatch);
        }
        let expected = checkpoint.get_str("checkpoint_hash").unwrap_or_default();
        let members = canonical_members(&checkpoint, &SIGNED)?;
        if sha256_hex(compose_members(&members)) != expected
            || !is_str(env.get("checkpoint_hash"), expected)
            || !same(
                env.get("checkpoint_signature"),
                checkpoint.get("checkpoint_signature"),
            )
        {
            return Err(mismatch);
        }
        if !is_str(checkpoint.get("group_id"), &self.group_id)
            || !is_str(checkpoint.get("leader_public_key"), &self.leader_public_key)
            || !same(
                checkpoint.get("leader_epoch"),
                Some(&Value::from(self.leader_epoch)),
            )
            || !same(checkpoint.get("seq"), Some(&Value::from(seq)))
            || !is_str(checkpoint.get("frame_hash"), frame_hash)
            || !same(
                checkpoint.get("membership_version"),
                env.get("membership_version"),
            )
            || !same(checkpoint.get("completed"), env.get("completed"))
            || !same(checkpoint.get("outcome"), env.get("outcome"))
        {
            return Err(GroupError::Protocol(
                "group checkpoint does not certify this frame",
            ));
        }
        let state = core::checkpoint_state_from(&checkpoint)?;
        validate_checkpoint_state(&Value::Object(state))?;
        // The state's members were validated with the checkpoint: reuse
        // their canonical bytes.
        let mut state_members: Vec<(&str, &[u8])> = members
            .iter()
            .filter(|(k, _)| CHECKPOINT_STATE_FIELDS.contains(k))
            .map(|(k, v)| (*k, v.as_slice()))
            .collect();
        if !is_str(
            env.get("recovery_state_hash"),
            &sha256_hex(compose(&mut state_members)),
        ) {
            return Err(GroupError::Protocol("group recovery state hash mismatch"));
        }
        let Some(signature) = checkpoint.get_str("checkpoint_signature") else {
            return Err(GroupError::Protocol(
                "group checkpoint signature is missing",
            ));
        };
        let certificate = core::checkpoint_certificate(&checkpoint);
        if !core::verify_signature(&self.leader_public_key, certificate.as_bytes(), signature) {
            return Err(GroupError::Protocol(
                "group checkpoint certificate is invalid",
            ));
        }
        let (q_hash, q_sig) = (quoted(expected), quoted(signature));
        let mut all: Vec<(&str, &[u8])> = members.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        all.push(("checkpoint_hash", &q_hash));
        all.push(("checkpoint_signature", &q_sig));
        let json = compose(&mut all);
        Ok((checkpoint, json))
    }

    fn decode_view(&self, env: &Map, bootstrap: bool) -> Result<Value> {
        let Some(delta @ Value::Array(ops)) = env.get("view_delta") else {
            return Err(GroupError::Protocol("group view delta must be an array"));
        };
        let view = match env.get("view_mode").and_then(Value::as_str) {
            Some("full") => match env.get("view") {
                Some(view @ Value::Object(_)) if ops.is_empty() => view.clone(),
                _ => return Err(GroupError::Protocol("full group view payload is invalid")),
            },
            Some("delta") => {
                if bootstrap || env.get("view").is_some_and(|v| !v.is_null()) {
                    return Err(GroupError::Protocol("bootstrap requires a full group view"));
                }
                let Some(base) = &self.view else {
                    return Err(GroupError::Protocol("group view delta has no replay base"));
                };
                let view = apply_delta(base, delta).map_err(GroupError::ViewDelta)?;
                if !matches!(view, Value::Object(_)) {
                    return Err(GroupError::Protocol(
                        "group view delta produced a non-object",
                    ));
                }
                view
            }
            _ => return Err(GroupError::Protocol("group view mode is invalid")),
        };
        walk(&view, 0)?;
        if !is_str(env.get("view_state_hash"), &canonical::sha256_hex_of(&view)) {
            return Err(GroupError::Protocol("group view state hash mismatch"));
        }
        Ok(view)
    }

    /// Follows the room to a new leader at a higher epoch (the sequence and
    /// hash chain continue from the checkpoint it took over with). Returns
    /// the `group_leader_changed` event.
    ///
    /// That checkpoint may be older than this replica's frame: the old
    /// leader sent its frames to one member after another and died between
    /// two, and the member that claimed the room had not got the newest
    /// (the community only knows the newest checkpoint some member
    /// acknowledged at the last lease renewal). The frames past it died with
    /// their epoch, so the new leader's first bootstrap is taken even at or
    /// before this replica's seq; the reference's replica refuses it ("moved
    /// backwards") and that member cannot follow its table any more.
    pub fn advance_epoch(
        &mut self,
        leader_public_key: &str,
        leader_epoch: u64,
    ) -> Result<(&'static str, Value)> {
        if leader_epoch <= self.leader_epoch {
            return Err(GroupError::Protocol("new leader epoch must increase"));
        }
        self.leader_public_key = leader_public_key.to_lowercase();
        self.leader_epoch = leader_epoch;
        self.rebase = true;
        Ok((
            "group_leader_changed",
            object([
                ("group_id", Value::from(self.group_id.as_str())),
                (
                    "leader_public_key",
                    Value::from(self.leader_public_key.as_str()),
                ),
                ("leader_epoch", Value::from(self.leader_epoch)),
            ]),
        ))
    }

    /// What the frames accepted since the last call leave for the state
    /// dir, oldest first.
    pub fn take_records(&mut self) -> Vec<FrameRecord> {
        self.records.drain(..).collect()
    }

    /// The current frame's seq (none before the bootstrap).
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    pub fn frame_hash(&self) -> Option<&str> {
        self.frame_hash.as_deref()
    }

    /// The verified checkpoint of the current frame (what this member
    /// offers when it claims the leadership).
    pub fn checkpoint(&self) -> Option<&Arc<Value>> {
        self.checkpoint.as_ref()
    }

    /// This member's verified view.
    pub fn view(&self) -> Option<&Value> {
        self.view.as_ref()
    }

    /// Whether the current frame completed the room.
    pub fn completed(&self) -> bool {
        self.checkpoint
            .as_deref()
            .and_then(|c| c.get("completed"))
            .is_some_and(Value::truthy)
    }

    /// The room's outcome, once the leader gave one.
    pub fn outcome(&self) -> Option<&str> {
        self.checkpoint
            .as_deref()
            .and_then(|c| c.get_str("outcome"))
    }

    pub fn membership_version(&self) -> i64 {
        self.membership_version
    }

    pub fn leader_public_key(&self) -> &str {
        &self.leader_public_key
    }

    pub fn leader_epoch(&self) -> u64 {
        self.leader_epoch
    }

    pub fn viewer_public_key(&self) -> &str {
        &self.viewer_public_key
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }
}

#[cfg(test)]
#[path = "replica_tests.rs"]
mod tests;
