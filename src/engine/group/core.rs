//! What both ends of an `authoritative_group` room agree on: the error
//! texts, the JSON limits, canonical bytes and their hashes, the room's
//! configuration from the spec, member records, and the strings that get
//! signed (admission, channel proof, checkpoint certificate).

use super::delta::DeltaError;
use crate::json::canonical::{self, sha256_hex, write_str};
use crate::json::{Map, Number, Value};
use crate::limits::{Count, LimitError};
use crate::obj;
use crate::spec::Spec;

/// `previous_hash` of the first frame.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Deepest nesting a group value may have (the outermost value is level 0).
pub const MAX_JSON_DEPTH: usize = 16;
/// Most members of one array or object.
pub const MAX_CONTAINER_ITEMS: usize = 1024;
/// Longest string, in UTF-8 bytes.
pub const MAX_STRING_BYTES: usize = 65536;
/// The envelope format this module speaks.
pub const WIRE_VERSION: i64 = 2;
/// Checkpoints kept for acknowledgements.
pub const MAX_CHECKPOINT_HISTORY: usize = 256;
/// Seats run from 0 to this.
pub const MAX_SEAT: i64 = 31;

/// The envelope fields the frame hash covers, in the reference's order.
pub const CORE_FIELDS: [&str; 13] = [
    "_group",
    "wire_version",
    "group_id",
    "leader_public_key",
    "leader_epoch",
    "seq",
    "previous_hash",
    "membership_version",
    "authority_state_hash",
    "recovery_state_hash",
    "events_hash",
    "completed",
    "outcome",
];

/// The checkpoint fields a successor restores from (the part a checkpoint
/// delta covers), in the reference's order.
pub const CHECKPOINT_STATE_FIELDS: [&str; 6] = [
    "members",
    "last_client_seq",
    "recovery_mode",
    "protocol_state",
    "completed",
    "outcome",
];

/// [`CHECKPOINT_STATE_FIELDS`] by code point (the order a diff walks them).
pub(crate) const CHECKPOINT_STATE_FIELDS_SORTED: [&str; 6] = [
    "completed",
    "last_client_seq",
    "members",
    "outcome",
    "protocol_state",
    "recovery_mode",
];

/// The per-member envelope fields the view hash covers, in the reference's
/// order.
pub const PRIVATE_PAYLOAD_FIELDS: [&str; 11] = [
    "viewer_public_key",
    "view_mode",
    "view",
    "view_delta",
    "view_state_hash",
    "direct",
    "checkpoint_mode",
    "checkpoint",
    "checkpoint_delta",
    "checkpoint_hash",
    "checkpoint_signature",
];

/// Why a group step was refused. Displayed, each is the reference's text
/// (`GroupProtocolError`, `JsonDeltaError`, or the `ValueError` of a hook).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GroupError {
    /// A broken rule of the group contract, with the reference's fixed text.
    #[error("{0}")]
    Protocol(&'static str),
    #[error("client_seq gap: expected {expected}, got {got}")]
    ClientSeqGap { expected: i128, got: i64 },
    #[error("group checkpoint state is missing {0}")]
    CheckpointStateMissing(&'static str),
    #[error("group checkpoint delta is invalid: {0}")]
    CheckpointDelta(DeltaError),
    #[error("group view delta is invalid: {0}")]
    ViewDelta(DeltaError),
    /// A protocol hook refused (the reference's `ValueError` from a hook):
    /// for an action, the reason of a `rejected` receipt.
    #[error("{0}")]
    Hook(String),
    /// The leader's signature over an envelope does not verify (the
    /// reference lets the crypto library's exception through here).
    #[error("group envelope signature is invalid")]
    EnvelopeSignature,
    /// A value the reference would fail to convert (its `ValueError` or
    /// `TypeError` text), or one past what palaver holds (integers beyond
    /// 64 bits where the reference takes any size).
    #[error("{0}")]
    Value(String),
    /// The spec's `flow.group` cannot configure a room.
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Limit(#[from] LimitError),
}

impl GroupError {
    /// Whether the reference answers this failure of an action with a
    /// `rejected` receipt (and keeps the room running): every failure of
    /// [`Authority::apply_input`](super::Authority::apply_input) is one.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, GroupError::Config(_) | GroupError::Limit(_))
    }

    /// Whether a protocol hook refused (rather than the group contract).
    pub fn is_hook(&self) -> bool {
        matches!(self, GroupError::Hook(_))
    }

    /// The text a receipt or event carries: the message, cut to 256
    /// characters as the reference cuts it.
    pub fn reason(&self) -> String {
        self.to_string().chars().take(256).collect()
    }
}

pub type Result<T, E = GroupError> = std::result::Result<T, E>;

const DEPTH: GroupError = GroupError::Protocol("JSON nesting exceeds the group protocol limit");

/// Checks `v`, found at nesting level `depth`, against the group limits,
/// visiting it in the reference's order so the first problem found is the
/// one it reports. Returns the deepest level visited.
pub(crate) fn walk(v: &Value, depth: usize) -> Result<usize> {
    if depth > MAX_JSON_DEPTH {
        return Err(DEPTH);
    }
    match v {
        Value::Null | Value::Bool(_) | Value::Number(Number::Int(_) | Number::BigInt(_)) => {
            Ok(depth)
        }
        Value::Number(Number::Float(_)) => Err(GroupError::Protocol(
            "floating-point values are not allowed in group state",
        )),
        Value::String(s) => check_str(s).map(|()| depth),
        Value::Array(a) => {
            if a.len() > MAX_CONTAINER_ITEMS {
                return Err(GroupError::Protocol(
                    "array exceeds the group protocol limit",
                ));
            }
            let mut deepest = depth;
            for item in a {
                deepest = deepest.max(walk(item, depth + 1)?);
            }
            Ok(deepest)
        }
        Value::Object(m) => {
            // An object that passed unchanged before is known to hold no
            // float, nothing too long or too large: only its depth can fail
            // here, and that is walked again for the reference's answer.
            if let Some(nest) = m.nest_memo()
                && depth + nest as usize <= MAX_JSON_DEPTH
            {
                return Ok(depth + nest as usize);
            }
            if m.len() > MAX_CONTAINER_ITEMS {
                return Err(GroupError::Protocol(
                    "object exceeds the group protocol limit",
                ));
            }
            let deepest = walk_members(m.iter(), depth + 1, depth)?;
            m.set_nest_memo(u32::try_from(deepest - depth).unwrap_or(u32::MAX));
            Ok(deepest)
        }
    }
}

/// The members of an object at level `depth` (keys first, each then its
/// value), as the reference visits them.
pub(crate) fn walk_members<'a>(
    members: impl Iterator<Item = (&'a str, &'a Value)>,
    depth: usize,
    mut deepest: usize,
) -> Result<usize> {
    for (k, item) in members {
        if depth > MAX_JSON_DEPTH {
            return Err(DEPTH);
        }
        check_str(k)?;
        deepest = deepest.max(depth).max(walk(item, depth)?);
    }
    Ok(deepest)
}

fn check_str(s: &str) -> Result<()> {
    if s.len() > MAX_STRING_BYTES {
        return Err(GroupError::Protocol(
            "string exceeds the group protocol limit",
        ));
    }
    Ok(())
}

/// The reference's `_validate_json`: depth at most [`MAX_JSON_DEPTH`], at
/// most [`MAX_CONTAINER_ITEMS`] members per container, strings at most
/// [`MAX_STRING_BYTES`], no floats.
pub fn validate_json(v: &Value) -> Result<()> {
    walk(v, 0).map(|_| ())
}

/// Checks that a value whose deepest level (counted from itself) is `nest`
/// still fits when placed one level down, inside another object.
pub(crate) fn fits_one_down(nest: usize) -> Result<()> {
    if nest + 1 > MAX_JSON_DEPTH {
        return Err(DEPTH);
    }
    Ok(())
}

/// Canonical bytes (`json.dumps(sort_keys=True, ensure_ascii=False,
/// separators=(",", ":"))`) of a value that passes [`validate_json`].
pub fn canonical(v: &Value) -> Result<Vec<u8>> {
    validate_json(v)?;
    Ok(canonical::to_vec(v))
}

/// [`canonical`], with the deepest level of the value.
pub(crate) fn canonical_nest(v: &Value) -> Result<(Vec<u8>, usize)> {
    let nest = walk(v, 0)?;
    Ok((canonical::to_vec(v), nest))
}

/// SHA-256 (lowercase hex) of the canonical bytes of a valid value.
pub fn json_hash(v: &Value) -> Result<String> {
    canonical(v).map(sha256_hex)
}

/// The canonical bytes of an object given as members whose values are
/// already canonical bytes (keys distinct).
pub(crate) fn compose(entries: &mut [(&str, &[u8])]) -> Vec<u8> {
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let len: usize = entries.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let mut out = Vec::with_capacity(len + 2);
    out.push(b'{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, &mut out);
        out.push(b':');
        out.extend_from_slice(v);
    }
    out.push(b'}');
    out
}

/// The canonical bytes of the object `{field: obj.get(field)}` over
/// `fields` (absent ones are `null`), validated as the reference validates
/// that dict. Nothing is copied out of `obj`.
pub(crate) fn canonical_fields(obj: &Map, fields: &[&str]) -> Result<Vec<u8>> {
    const NULL: Value = Value::Null;
    let values: Vec<(&str, &Value)> = fields
        .iter()
        .map(|f| (*f, obj.get(f).unwrap_or(&NULL)))
        .collect();
    walk_members(values.iter().copied(), 1, 0)?;
    let bytes: Vec<(&str, Vec<u8>)> = values
        .iter()
        .map(|(k, v)| (*k, canonical::to_vec(v)))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = bytes.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    Ok(compose(&mut entries))
}

/// The canonical members of `obj` without `skip`, validated as the
/// reference validates `dict(obj)` with those keys popped: each member's
/// canonical value bytes, by key.
pub(crate) fn canonical_members<'a>(
    obj: &'a Map,
    skip: &[&str],
) -> Result<Vec<(&'a str, Vec<u8>)>> {
    let kept: Vec<(&str, &Value)> = obj.iter().filter(|(k, _)| !skip.contains(k)).collect();
    if kept.len() > MAX_CONTAINER_ITEMS {
        return Err(GroupError::Protocol(
            "object exceeds the group protocol limit",
        ));
    }
    walk_members(kept.iter().copied(), 1, 0)?;
    Ok(kept
        .into_iter()
        .map(|(k, v)| (k, canonical::to_vec(v)))
        .collect())
}

/// The canonical object of members from [`canonical_members`] (or a subset).
pub(crate) fn compose_members(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut entries: Vec<(&str, &[u8])> = members.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    compose(&mut entries)
}

/// `s` as a canonical JSON string literal.
pub(crate) fn quoted(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_str(s, &mut out);
    out
}

/// The reference's `_is_hash`: 64 hexadecimal digits, either case.
pub fn is_hash(v: &Value) -> bool {
    v.as_str().is_some_and(is_hash_str)
}

/// [`is_hash`] on text.
pub fn is_hash_str(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `str(v)` as the reference formats a value into a signed string (`None`
/// for an absent one).
fn py_format(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_owned(), Value::py_str)
}

/// The checkpoint certificate the frame's leader signs:
/// `aigenora-group-checkpoint-v1:{group_id}:{leader_public_key}:{leader_epoch}:{seq}:{frame_hash}:{membership_version}:{checkpoint_hash}`,
/// each field formatted as the reference's f-string formats it.
pub fn checkpoint_certificate(checkpoint: &Map) -> String {
    let f = |k: &str| py_format(checkpoint.get(k));
    format!(
        "aigenora-group-checkpoint-v1:{}:{}:{}:{}:{}:{}:{}",
        f("group_id"),
        f("leader_public_key"),
        f("leader_epoch"),
        f("seq"),
        f("frame_hash"),
        f("membership_version"),
        f("checkpoint_hash"),
    )
}

/// What the leader (as `leader_signature`) and the member (to the server)
/// sign to admit a member.
pub fn admission_canonical(
    group_id: &str,
    leader_public_key: &str,
    member_public_key: &str,
    protocol_id: &str,
    leader_epoch: u64,
    join_nonce: &str,
) -> String {
    format!(
        "aigenora-group-admission-v1:{group_id}:{leader_public_key}:{member_public_key}:{protocol_id}:{leader_epoch}:{join_nonce}"
    )
}

/// What a member signs in its `ready` frame: the bytes
/// `aigenora-group-channel-ready-v1:` and the canonical JSON of the
/// admission it completes on this channel.
#[allow(clippy::too_many_arguments)]
pub fn channel_ready_canonical(
    group_id: &str,
    protocol_id: &str,
    leader_epoch: u64,
    member_public_key: &str,
    member_id: &str,
    seat: u64,
    join_nonce: &str,
    channel_challenge: &str,
) -> Vec<u8> {
    let mut m = Map::with_capacity(8);
    m.insert("group_id", Value::from(group_id));
    m.insert("protocol_id", Value::from(protocol_id));
    m.insert("leader_epoch", Value::from(leader_epoch));
    m.insert("member_public_key", Value::from(member_public_key));
    m.insert("member_id", Value::from(member_id));
    m.insert("seat", Value::from(seat));
    m.insert("join_nonce", Value::from(join_nonce));
    m.insert("channel_challenge", Value::from(channel_challenge));
    let mut out = b"aigenora-group-channel-ready-v1:".to_vec();
    canonical::write_value(&Value::Object(m), &mut out);
    out
}

/// Hex as Python's `bytes.fromhex` reads it (whitespace allowed between
/// byte pairs, either case), as lowercase hex with nothing between.
fn from_py_hex(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut bytes = s.bytes();
    loop {
        let hi = loop {
            match bytes.next() {
                None => return Some(out),
                Some(b) if b.is_ascii_whitespace() || b == 0x0b => continue,
                Some(b) => break b,
            }
        };
        let lo = bytes.next()?;
        if !hi.is_ascii_hexdigit() || !lo.is_ascii_hexdigit() {
            return None;
        }
        out.push(char::from(hi.to_ascii_lowercase()));
        out.push(char::from(lo.to_ascii_lowercase()));
    }
}

/// Verifies a hex Ed25519 signature as the reference's `verify_raw` does
/// (key and signature read with `bytes.fromhex`).
pub fn verify_signature(public_key_hex: &str, msg: &[u8], signature_hex: &str) -> bool {
    match (from_py_hex(public_key_hex), from_py_hex(signature_hex)) {
        (Some(pk), Some(sig)) => crate::identity::verify(&pk, msg, &sig),
        _ => false,
    }
}

/// Normalises member records as the reference's `normalize_members`:
/// each becomes `{member_id, public_key (lowercase), seat, status}`, in
/// seat order.
pub fn normalize_members(members: &[Value]) -> Result<Vec<Value>> {
    let mut out: Vec<(i64, Value)> = Vec::with_capacity(members.len());
    let mut keys: Vec<&str> = Vec::with_capacity(members.len());
    let mut seats: Vec<i64> = Vec::with_capacity(members.len());
    for raw in members {
        let Value::Object(raw) = raw else {
            return Err(GroupError::Protocol("group member must be an object"));
        };
        let public_key = raw
            .get("public_key")
            .and_then(Value::as_str)
            .filter(|pk| pk.len() == 64 && pk.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(public_key) = public_key else {
            return Err(GroupError::Protocol(
                "group member public_key must be 64-char hex",
            ));
        };
        let seat = raw
            .get("seat")
            .and_then(Value::as_i64)
            .filter(|s| (0..=MAX_SEAT).contains(s));
        let Some(seat) = seat else {
            return Err(GroupError::Protocol(
                "group member seat must be between 0 and 31",
            ));
        };
        if keys.contains(&public_key) || seats.contains(&seat) {
            return Err(GroupError::Protocol(
                "group members must have unique identity and seat",
            ));
        }
        keys.push(public_key);
        seats.push(seat);
        // A string already as it normalises is shared, not copied.
        let text_or = |k: &str, default: &str| match raw.get(k).filter(|v| v.truthy()) {
            Some(v @ Value::String(_)) => v.clone(),
            Some(v) => Value::from(v.py_str()),
            None => Value::from(default),
        };
        let key = match raw.get("public_key") {
            Some(v) if !public_key.bytes().any(|b| b.is_ascii_uppercase()) => v.clone(),
            _ => Value::from(public_key.to_ascii_lowercase()),
        };
        let m = obj! {
            "member_id" => text_or("member_id", public_key),
            "public_key" => key,
            "seat" => seat,
            "status" => text_or("status", "active"),
        };
        out.push((seat, Value::Object(m)));
    }
    out.sort_by_key(|(seat, _)| *seat);
    Ok(out.into_iter().map(|(_, m)| m).collect())
}

/// A member record's `public_key` (normalised records always have one).
pub(crate) fn member_key(member: &Value) -> &str {
    member.get_str("public_key").unwrap_or_default()
}

/// Whether a member record's status is `active`.
pub(crate) fn member_active(member: &Value) -> bool {
    member.get_str("status") == Some("active")
}

/// A member record's seat.
pub(crate) fn member_seat(member: &Value) -> i64 {
    member.get("seat").and_then(Value::as_i64).unwrap_or(-1)
}

/// A room's settings, from the spec's `flow.group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    pub min_participants: u64,
    pub max_participants: u64,
    pub allow_late_join: bool,
    pub recovery_mode: String,
    pub start_policy: String,
    pub checkpoint_every_events: u64,
    pub max_action_bytes: u64,
    pub max_events_per_action: u64,
    pub peer_channels_enabled: bool,
    pub peer_routing: String,
    pub peer_channel_names: Vec<String>,
    pub max_peer_message_bytes: u64,
}

/// Participant bounds (the spec contract's `2 <= min <= max <= 32`).
pub const PARTICIPANTS: Count = Count {
    field: "flow.group.min_participants",
    min: 2,
    max: 32,
};
pub const MAX_ACTION_BYTES: Count = Count {
    field: "flow.group.max_action_bytes",
    min: 256,
    max: 65536,
};
pub const MAX_EVENTS_PER_ACTION: Count = Count {
    field: "flow.group.max_events_per_action",
    min: 1,
    max: 256,
};
pub const MAX_PEER_MESSAGE_BYTES: Count = Count {
    field: "flow.group.peer_channels.max_message_bytes",
    min: 256,
    max: 65536,
};

/// An integer setting: `default` when absent; a big integer reads as the
/// far end of the 64-bit range so the range check refuses it.
fn int_setting(m: &Map, key: &str, field: &str, default: Option<i64>) -> Result<i64> {
    match (m.get(key), default) {
        (None, Some(d)) => Ok(d),
        (None, None) => Err(GroupError::Config(format!("{field} is missing"))),
        (Some(Value::Number(Number::Int(i))), _) => Ok(*i),
        (Some(Value::Number(Number::BigInt(s))), _) => Ok(if s.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        }),
        (Some(_), _) => Err(GroupError::Config(format!("{field} must be an integer"))),
    }
}

fn unsigned(i: i64) -> u64 {
    u64::try_from(i).unwrap_or(0)
}

impl GroupConfig {
    /// The settings of a loaded spec.
    pub fn from_spec(spec: &Spec) -> Result<GroupConfig> {
        GroupConfig::from_doc(spec.doc())
    }

    /// The settings of a spec document given as a value.
    pub fn from_value(spec: &Value) -> Result<GroupConfig> {
        match spec {
            Value::Object(doc) => GroupConfig::from_doc(doc),
            _ => Err(GroupError::Protocol(
                "authoritative_group spec has no flow.group",
            )),
        }
    }

    /// The settings of a spec document: the reference's reading, with
    /// every number checked against the range palaver honours.
    pub fn from_doc(spec: &Map) -> Result<GroupConfig> {
        let group = spec
            .get("flow")
            .and_then(Value::as_object)
            .and_then(|f| f.get("group"))
            .and_then(Value::as_object);
        let Some(group) = group else {
            return Err(GroupError::Protocol(
                "authoritative_group spec has no flow.group",
            ));
        };
        let every = match group.get("checkpoint_every_events") {
            None => Some(20),
            Some(Value::Number(Number::Int(i))) if (1..=256).contains(i) => Some(*i),
            Some(_) => None,
        };
        let Some(every) = every else {
            return Err(GroupError::Protocol(
                "checkpoint_every_events must be between 1 and 256",
            ));
        };
        let peer = group.get("peer_channels").and_then(Value::as_object);
        let peer_enabled = peer.is_some_and(|p| p.get("enabled") == Some(&Value::Bool(true)));
        let min = int_setting(
            group,
            "min_participants",
            "flow.group.min_participants",
            None,
        )?;
        let max = int_setting(
            group,
            "max_participants",
            "flow.group.max_participants",
            None,
        )?;
        PARTICIPANTS.check(min)?;
        Count {
            field: "flow.group.max_participants",
            min,
            max: PARTICIPANTS.max,
        }
        .check(max)?;
        let late = group
            .get("allow_late_join")
            .ok_or_else(|| GroupError::Config("flow.group.allow_late_join is missing".into()))?;
        let text = |key: &str| {
            group
                .get(key)
                .map(Value::py_str)
                .ok_or_else(|| GroupError::Config(format!("flow.group.{key} is missing")))
        };
        let recovery_mode = text("recovery_mode")?;
        let start_policy = text("start_policy")?;
        let action_bytes = int_setting(
            group,
            "max_action_bytes",
            MAX_ACTION_BYTES.field,
            Some(8192),
        )?;
        MAX_ACTION_BYTES.check(action_bytes)?;
        let events = int_setting(
            group,
            "max_events_per_action",
            MAX_EVENTS_PER_ACTION.field,
            Some(64),
        )?;
        MAX_EVENTS_PER_ACTION.check(events)?;
        let (routing, names, peer_bytes) = match peer.filter(|_| peer_enabled) {
            Some(p) => {
                let names = match p.get("channels") {
                    None => Vec::new(),
                    Some(Value::Array(a)) => a.iter().map(Value::py_str).collect(),
                    Some(_) => {
                        return Err(GroupError::Config(
                            "flow.group.peer_channels.channels must be an array".into(),
                        ));
                    }
                };
                let bytes = int_setting(
                    p,
                    "max_message_bytes",
                    MAX_PEER_MESSAGE_BYTES.field,
                    Some(16384),
                )?;
                MAX_PEER_MESSAGE_BYTES.check(bytes)?;
                (py_format(p.get("routing")), names, bytes)
            }
            None => ("disabled".to_owned(), Vec::new(), 16384),
        };
        Ok(GroupConfig {
            min_participants: unsigned(min),
            max_participants: unsigned(max),
            allow_late_join: late.truthy(),
            recovery_mode,
            start_policy,
            checkpoint_every_events: unsigned(every),
            max_action_bytes: unsigned(action_bytes),
            max_events_per_action: unsigned(events),
            peer_channels_enabled: peer_enabled,
            peer_routing: routing,
            peer_channel_names: names,
            max_peer_message_bytes: unsigned(peer_bytes),
        })
    }

    /// The `peer_channels` object of the leader's snapshot.
    pub fn peer_channels_value(&self) -> Value {
        let mut m = Map::with_capacity(4);
        m.insert("enabled", Value::Bool(self.peer_channels_enabled));
        m.insert("routing", Value::from(self.peer_routing.as_str()));
        m.insert(
            "channels",
            Value::Array(
                self.peer_channel_names
                    .iter()
                    .map(|s| Value::from(s.as_str()))
                    .collect(),
            ),
        );
        m.insert(
            "max_message_bytes",
            Value::from(self.max_peer_message_bytes),
        );
        Value::Object(m)
    }
}

/// The reference's `_checkpoint_state_from`: the six restorable fields of
/// a checkpoint, copied.
pub fn checkpoint_state_from(checkpoint: &Map) -> Result<Map> {
    for key in CHECKPOINT_STATE_FIELDS {
        if !checkpoint.contains_key(key) {
            return Err(GroupError::CheckpointStateMissing(key));
        }
    }
    Ok(CHECKPOINT_STATE_FIELDS
        .iter()
        .map(|k| (*k, checkpoint.get(k).cloned().unwrap_or(Value::Null)))
        .collect())
}

/// Python's name for a value's type, for the `TypeError` texts.
fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(Number::Float(_)) => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The reference's `_validate_checkpoint_state`: exactly the six restorable
/// fields, each of the right shape, within the JSON limits. Returns the
/// deepest level.
pub(crate) fn validate_checkpoint_state(value: &Value) -> Result<usize> {
    let Value::Object(m) = value else {
        return Err(GroupError::Protocol(
            "group checkpoint state fields are invalid",
        ));
    };
    if m.len() != CHECKPOINT_STATE_FIELDS.len()
        || !CHECKPOINT_STATE_FIELDS.iter().all(|k| m.contains_key(k))
    {
        return Err(GroupError::Protocol(
            "group checkpoint state fields are invalid",
        ));
    }
    let Some(Value::Array(members)) = m.get("members") else {
        return Err(GroupError::Protocol(
            "group checkpoint members must be an array",
        ));
    };
    normalize_members(members)?;
    let lcs_ok = match m.get("last_client_seq") {
        Some(Value::Object(l)) => l.values().all(|s| match s {
            Value::Number(Number::Int(i)) => *i >= 0,
            Value::Number(Number::BigInt(b)) => !b.starts_with('-'),
            _ => false,
        }),
        _ => false,
    };
    if !lcs_ok {
        return Err(GroupError::Protocol(
            "group checkpoint last_client_seq is invalid",
        ));
    }
    match m.get("recovery_mode") {
        Some(Value::String(s)) if matches!(&**s, "exact" | "restart_round" | "abort") => {}
        // Python's set membership hashes the value first.
        Some(v @ (Value::Array(_) | Value::Object(_))) => {
            return Err(GroupError::Value(format!(
                "unhashable type: '{}'",
                py_type_name(v)
            )));
        }
        _ => {
            return Err(GroupError::Protocol(
                "group checkpoint recovery_mode is invalid",
            ));
        }
    }
    if !matches!(m.get("protocol_state"), Some(Value::Object(_))) {
        return Err(GroupError::Protocol(
            "group checkpoint protocol_state must be an object",
        ));
    }
    if !matches!(m.get("completed"), Some(Value::Bool(_))) {
        return Err(GroupError::Protocol(
            "group checkpoint completed is invalid",
        ));
    }
    if !matches!(
        m.get("outcome"),
        None | Some(Value::Null | Value::String(_))
    ) {
        return Err(GroupError::Protocol("group checkpoint outcome is invalid"));
    }
    walk(value, 0)
}

/// Python's `int(v or 0)` for a value that is the reference's
/// `membership_version`, within 64 bits.
pub(crate) fn py_int_or_zero(v: Option<&Value>) -> Result<i64> {
    let Some(v) = v.filter(|v| v.truthy()) else {
        return Ok(0);
    };
    match v {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Number(Number::Int(i)) => Ok(*i),
        Value::Number(Number::Float(f)) if f.is_finite() && f.abs() < 9.2e18 => {
            Ok(f.trunc() as i64)
        }
        Value::Number(_) => Err(GroupError::Value(format!(
            "{} does not fit in 64 bits",
            v.py_str()
        ))),
        Value::String(s) => {
            let t = s.trim();
            let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
            let well_formed = !digits.is_empty()
                && !digits.starts_with('_')
                && !digits.ends_with('_')
                && !digits.contains("__")
                && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
            let parsed = well_formed
                .then(|| t.replace('_', "").parse::<i64>().ok())
                .flatten();
            parsed.ok_or_else(|| {
                GroupError::Value(format!(
                    "invalid literal for int() with base 10: {}",
                    v.py_repr()
                ))
            })
        }
        other => Err(GroupError::Value(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            py_type_name(other)
        ))),
    }
}

/// Builds an object from members in order.
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    let mut m = Map::with_capacity(N);
    for (k, v) in members {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// `Some(s)` as a string value, `None` as null.
pub(crate) fn opt_str(s: Option<&str>) -> Value {
    s.map_or(Value::Null, Value::from)
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
