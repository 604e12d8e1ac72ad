//! Building a frame: the hook's views, the checkpoint, every member's
//! envelope, then making the frame current.

use super::super::core::{
    self, CHECKPOINT_STATE_FIELDS_SORTED, GroupError, MAX_CHECKPOINT_HISTORY, Result, WIRE_VERSION,
    canonical_nest, compose, fits_one_down, member_active, member_key, object, opt_str, quoted,
    walk,
};
use super::super::delta::{make_delta_exact, make_fields_delta_exact};
use super::envelope::{Shared, ViewPart, member_envelope};
use super::{Authority, Envelopes, FrameRecord};
use crate::json::canonical::{self, sha256_hex};
use crate::json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A frame computed but not yet made current.
struct Prepared {
    seq: u64,
    kind: &'static str,
    core: Map,
    core_len: usize,
    frame_hash: String,
    events: Value,
    checkpoint: Arc<Value>,
    checkpoint_json: Vec<u8>,
    checkpoint_nest: usize,
    checkpoint_delta: Option<Value>,
    envelopes: Map,
    views: HashMap<String, Value>,
    max_envelope_bytes: usize,
}

impl Authority {
    pub(super) fn view_of(&mut self, member: usize) -> Result<Value> {
        let view = self
            .hooks
            .view(&self.state, &self.members[member])
            .map_err(GroupError::Hook)?;
        if !matches!(view, Value::Object(_)) {
            return Err(GroupError::Protocol(
                "proto_group_view must return an object",
            ));
        }
        Ok(view)
    }

    /// Builds, signs and makes current the next frame.
    pub(super) fn build(
        &mut self,
        events: Vec<Value>,
        direct: &Map,
        kind: &'static str,
        advance: bool,
    ) -> Result<Envelopes> {
        let p = self.prepare(events, direct, kind, advance)?;
        Ok(self.commit(p))
    }

    fn prepare(
        &mut self,
        events: Vec<Value>,
        direct: &Map,
        kind: &'static str,
        advance: bool,
    ) -> Result<Prepared> {
        let seq = if advance {
            self.seq
                .checked_add(1)
                .ok_or_else(|| GroupError::Value("group seq does not fit in 64 bits".into()))?
        } else {
            self.seq
        };
        // The checkpoint state: what a successor restores.
        let protocol_state = self
            .hooks
            .recovery_snapshot(&self.state)
            .map_err(GroupError::Hook)?;
        if !matches!(protocol_state, Value::Object(_)) {
            return Err(GroupError::Protocol(
                "proto_group_recovery_snapshot must return an object",
            ));
        }
        let fields: [(&str, Value); 6] = [
            ("members", Value::Array(self.members.clone())),
            (
                "last_client_seq",
                Value::Object(self.last_client_seq.clone()),
            ),
            (
                "recovery_mode",
                Value::from(self.config.recovery_mode.as_str()),
            ),
            ("protocol_state", protocol_state),
            ("completed", Value::Bool(self.completed)),
            ("outcome", opt_str(self.outcome.as_deref())),
        ];
        let checkpoint_nest = core::walk_members(fields.iter().map(|(k, v)| (*k, v)), 1, 0)?;
        let field_json: Vec<(&str, Vec<u8>)> = fields
            .iter()
            .map(|(k, v)| (*k, canonical::to_vec(v)))
            .collect();
        let recovery_state_hash = sha256_hex(core::compose_members(&field_json));
        let events = Value::Array(events);
        let events_json = canonical::to_vec(&events);
        let events_nest = walk(&events, 0)?;

        let mut core = Map::with_capacity(13);
        core.push_new("_group", Value::from(kind));
        core.push_new("wire_version", Value::from(WIRE_VERSION));
        core.push_new("group_id", Value::from(self.group_id.as_str()));
        core.push_new(
            "leader_public_key",
            Value::from(self.keys.public_key.as_str()),
        );
        core.push_new("leader_epoch", Value::from(self.leader_epoch));
        core.push_new("seq", Value::from(seq));
        core.push_new("previous_hash", Value::from(self.previous_hash.as_str()));
        core.push_new("membership_version", Value::from(self.membership_version));
        core.push_new(
            "authority_state_hash",
            Value::from(canonical::sha256_hex_of(&self.state)),
        );
        core.push_new("recovery_state_hash", Value::from(recovery_state_hash));
        core.push_new("events_hash", Value::from(sha256_hex(&events_json)));
        core.push_new("completed", Value::Bool(self.completed));
        core.push_new("outcome", opt_str(self.outcome.as_deref()));
        let core = Value::Object(core);
        let core_json = core::canonical(&core)?;
        let frame_hash = sha256_hex(&core_json);
        let Value::Object(core) = core else {
            return Err(GroupError::Protocol(
                "group authority state must be an object",
            ));
        };

        // The checkpoint certifying this frame, signed.
        let meta: [(&str, Vec<u8>); 7] = [
            ("version", b"1".to_vec()),
            ("group_id", quoted(&self.group_id)),
            ("leader_public_key", quoted(&self.keys.public_key)),
            ("leader_epoch", self.leader_epoch.to_string().into_bytes()),
            ("seq", seq.to_string().into_bytes()),
            ("frame_hash", quoted(&frame_hash)),
            (
                "membership_version",
                self.membership_version.to_string().into_bytes(),
            ),
        ];
        let mut unsigned: Vec<(&str, &[u8])> = meta
            .iter()
            .chain(field_json.iter())
            .map(|(k, v)| (*k, v.as_slice()))
            .collect();
        let unsigned = compose(&mut unsigned);
        let checkpoint_hash = sha256_hex(&unsigned);
        let certificate = format!(
            "aigenora-group-checkpoint-v1:{}:{}:{}:{}:{}:{}:{}",
            self.group_id,
            self.keys.public_key,
            self.leader_epoch,
            seq,
            frame_hash,
            self.membership_version,
            checkpoint_hash
        );
        let checkpoint_signature = self.keys.sign(certificate.as_bytes());
        // Both signature members sort before every other checkpoint key.
        let mut checkpoint_json = Vec::with_capacity(unsigned.len() + 240);
        checkpoint_json.extend_from_slice(b"{\"checkpoint_hash\":");
        checkpoint_json.extend_from_slice(&quoted(&checkpoint_hash));
        checkpoint_json.extend_from_slice(b",\"checkpoint_signature\":");
        checkpoint_json.extend_from_slice(&quoted(&checkpoint_signature));
        checkpoint_json.push(b',');
        checkpoint_json.extend_from_slice(unsigned.get(1..).unwrap_or_default());
        drop(field_json);
        let mut cp = Map::with_capacity(15);
        cp.push_new("version", Value::from(1));
        cp.push_new("group_id", Value::from(self.group_id.as_str()));
        cp.push_new(
            "leader_public_key",
            Value::from(self.keys.public_key.as_str()),
        );
        cp.push_new("leader_epoch", Value::from(self.leader_epoch));
        cp.push_new("seq", Value::from(seq));
        cp.push_new("frame_hash", Value::from(frame_hash.as_str()));
        cp.push_new("membership_version", Value::from(self.membership_version));
        for (k, v) in fields {
            cp.push_new(k, v);
        }
        cp.push_new("checkpoint_hash", Value::from(checkpoint_hash.as_str()));
        cp.push_new(
            "checkpoint_signature",
            Value::from(checkpoint_signature.as_str()),
        );

        let force_full = self.current.is_none()
            || kind != "frame"
            || self.completed
            || seq % self.config.checkpoint_every_events.max(1) == 0;
        let mut checkpoint_delta: Option<(Value, Vec<u8>, usize)> = None;
        if let (false, Some((Value::Object(prev), _))) =
            (force_full, self.current.as_ref().map(|(c, n)| (&**c, n)))
        {
            let whole = || {
                Value::Object(
                    core::CHECKPOINT_STATE_FIELDS
                        .iter()
                        .map(|k| (*k, cp.get(k).cloned().unwrap_or(Value::Null)))
                        .collect(),
                )
            };
            let ops = Value::Array(make_fields_delta_exact(
                prev,
                &cp,
                &CHECKPOINT_STATE_FIELDS_SORTED,
                whole,
            ));
            let (ops_json, ops_nest) = canonical_nest(&ops)?;
            if ops_json.len() + 256 < checkpoint_json.len() {
                checkpoint_delta = Some((ops, ops_json, ops_nest));
            }
        }
        let checkpoint = Value::Object(cp);

        let shared = Shared {
            core: &core,
            core_len: core_json.len(),
            frame_hash: &frame_hash,
            events: &events,
            events_json: &events_json,
            checkpoint: &checkpoint,
            checkpoint_json: &checkpoint_json,
            checkpoint_nest,
            checkpoint_delta: checkpoint_delta
                .as_ref()
                .map(|(o, j, n)| (o, j.as_slice(), *n)),
            checkpoint_hash: &checkpoint_hash,
            checkpoint_signature: &checkpoint_signature,
        };
        let mut envelopes = Map::with_capacity(self.members.len());
        let mut views = HashMap::with_capacity(self.members.len());
        let mut max_envelope_bytes = 0;
        for i in 0..self.members.len() {
            if !member_active(&self.members[i]) {
                continue;
            }
            let view = self.view_of(i)?;
            let view_nest = walk(&view, 0)?;
            let view_json = canonical::to_vec(&view);
            let public_key = member_key(&self.members[i]).to_owned();
            let mut delta = None;
            if let (Some(prev), "frame") = (self.last_views.get(&public_key), kind) {
                let ops = Value::Array(make_delta_exact(prev, &view));
                let (ops_json, ops_nest) = canonical_nest(&ops)?;
                if ops_json.len() + 96 < view_json.len() {
                    delta = Some((ops, ops_json, ops_nest));
                }
            }
            let part = ViewPart {
                public_key: &public_key,
                view: &view,
                view_json: &view_json,
                view_nest,
                delta,
                direct: direct
                    .get(&public_key)
                    .cloned()
                    .unwrap_or_else(|| Value::Array(Vec::new())),
            };
            let (envelope, len) = member_envelope(&self.keys, &shared, part)?;
            max_envelope_bytes = max_envelope_bytes.max(len);
            envelopes.insert(public_key.as_str(), envelope);
            views.insert(public_key, view);
        }
        if !envelopes.is_empty() {
            // The events sit one level down in every envelope.
            fits_one_down(events_nest)?;
        }
        Ok(Prepared {
            seq,
            kind,
            core_len: core_json.len(),
            core,
            frame_hash,
            events,
            checkpoint: Arc::new(checkpoint),
            checkpoint_json,
            checkpoint_nest,
            checkpoint_delta: checkpoint_delta.map(|(ops, _, _)| ops),
            envelopes,
            views,
            max_envelope_bytes,
        })
    }

    fn commit(&mut self, p: Prepared) -> Envelopes {
        let previous_hash = std::mem::replace(&mut self.previous_hash, p.frame_hash.clone());
        self.seq = p.seq;
        self.history.insert(p.seq, p.checkpoint.clone());
        while self.history.len() > MAX_CHECKPOINT_HISTORY {
            self.history.pop_first();
        }
        let envelopes = Arc::new(p.envelopes);
        self.last_envelopes = envelopes.clone();
        self.last_views = p.views;
        let core_get = |k: &str| p.core.get(k).cloned().unwrap_or(Value::Null);
        let (full, delta_ops, delta) = match &p.checkpoint_delta {
            None => (true, 0, Value::Array(Vec::new())),
            Some(d) => (false, d.as_array().map_or(0, Vec::len), d.clone()),
        };
        let checkpoint_mode = Value::from(if full { "full" } else { "delta" });
        let text = |k: &str| Value::from(p.checkpoint.get_str(k).unwrap_or_default());
        let recovery = object([
            ("type", Value::from("group_recovery_record")),
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.keys.public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(p.seq)),
            ("frame_hash", Value::from(p.frame_hash.as_str())),
            ("membership_version", Value::from(self.membership_version)),
            ("recovery_state_hash", core_get("recovery_state_hash")),
            ("checkpoint_mode", checkpoint_mode.clone()),
            (
                "checkpoint",
                if full {
                    (*p.checkpoint).clone()
                } else {
                    Value::Null
                },
            ),
            ("checkpoint_delta", delta),
            ("checkpoint_hash", text("checkpoint_hash")),
            ("checkpoint_signature", text("checkpoint_signature")),
        ]);
        let frame = object([
            ("type", Value::from("group_frame")),
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.keys.public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(p.seq)),
            ("frame_kind", Value::from(p.kind)),
            ("wire_version", Value::from(WIRE_VERSION)),
            ("previous_hash", Value::from(previous_hash)),
            ("frame_hash", Value::from(p.frame_hash.as_str())),
            ("membership_version", Value::from(self.membership_version)),
            ("authority_state_hash", core_get("authority_state_hash")),
            ("recovery_state_hash", core_get("recovery_state_hash")),
            ("events_hash", core_get("events_hash")),
            ("events", p.events.clone()),
            ("checkpoint_mode", checkpoint_mode.clone()),
            ("checkpoint_delta_ops", Value::from(delta_ops)),
            ("max_envelope_bytes", Value::from(p.max_envelope_bytes)),
            ("completed", Value::Bool(self.completed)),
            ("outcome", opt_str(self.outcome.as_deref())),
        ]);
        let event = object([
            ("group_id", Value::from(self.group_id.as_str())),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(p.seq)),
            ("frame_kind", Value::from(p.kind)),
            ("frame_hash", Value::from(p.frame_hash.as_str())),
            ("checkpoint_mode", checkpoint_mode),
            ("completed", Value::Bool(self.completed)),
        ]);
        let group = object([
            ("group_id", Value::from(self.group_id.as_str())),
            (
                "leader_public_key",
                Value::from(self.keys.public_key.as_str()),
            ),
            ("leader_epoch", Value::from(self.leader_epoch)),
            ("seq", Value::from(p.seq)),
            ("membership_version", Value::from(self.membership_version)),
            ("members", Value::Array(self.members.clone())),
            ("checkpoint_hash", text("checkpoint_hash")),
            (
                "recovery_mode",
                Value::from(self.config.recovery_mode.as_str()),
            ),
            ("peer_channels", self.config.peer_channels_value()),
        ]);
        let mut snapshot = Map::with_capacity(8);
        snapshot.insert(
            "phase",
            Value::from(if self.completed {
                "group_completed"
            } else {
                "group_active"
            }),
        );
        snapshot.insert("role", Value::from("host"));
        snapshot.insert("protocol_name", Value::from(self.protocol_name.as_str()));
        snapshot.insert("group", group);
        snapshot.insert(
            "group_view",
            self.last_views
                .get(&self.keys.public_key)
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        );
        snapshot.insert("group_events", p.events.clone());
        snapshot.insert("completed", Value::Bool(self.completed));
        snapshot.insert("outcome", opt_str(self.outcome.as_deref()));
        self.records.push_back(FrameRecord {
            seq: p.seq,
            frame_hash: p.frame_hash,
            checkpoint: p.checkpoint.clone(),
            checkpoint_json: p.checkpoint_json,
            details: vec![recovery, frame],
            event: ("group_frame", event),
            snapshot,
        });
        self.last_core = Some((p.core, p.core_len));
        self.last_events = p.events;
        self.current = Some((p.checkpoint, p.checkpoint_nest));
        envelopes
    }
}
