//! The leader's side of a room: the one state, the ordered actions, and
//! for every frame one signed, personalised envelope per active member.
//!
//! [`Authority`] computes what the reference's `GroupAuthority` computes,
//! byte for byte, but writes no file: each frame it builds leaves a
//! [`FrameRecord`] (taken with [`Authority::take_records`]) holding what
//! the runtime writes to the state dir. A step that fails changes nothing,
//! so a refused action leaves the room exactly as it was.

use super::core::{
    self, CHECKPOINT_STATE_FIELDS_SORTED, GroupConfig, GroupError, MAX_CHECKPOINT_HISTORY, Result,
    WIRE_VERSION, ZERO_HASH, canonical_nest, compose, fits_one_down, member_active, member_key,
    member_seat, normalize_members, object, opt_str, quoted, walk,
};
use super::delta::{make_delta_exact, make_fields_delta_exact};
use super::hooks::GroupHooks;
use crate::identity::KeyPair;
use crate::json::canonical::{self, sha256_hex};
use crate::json::{Map, Number, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// The envelopes of one frame: member public key → envelope, in seat order.
pub type Envelopes = Arc<Map>;

/// Everything a new [`Authority`] starts from.
pub struct AuthorityInit {
    pub config: GroupConfig,
    pub hooks: Box<dyn GroupHooks>,
    /// The spec's `name` (the snapshot's `protocol_name`).
    pub protocol_name: String,
    pub group_id: String,
    /// The leader's identity: it signs every envelope and checkpoint.
    pub keys: KeyPair,
    pub leader_epoch: u64,
    pub membership_version: u64,
    /// The room's members as the server lists them (normalised here).
    pub members: Vec<Value>,
    /// A replicated checkpoint to take the room over from (a new leader
    /// epoch), or `None` for a new room.
    pub checkpoint: Option<Value>,
}

/// What one frame leaves for the state dir (the files the reference
/// writes as it builds the frame).
#[derive(Debug, Clone)]
pub struct FrameRecord {
    pub seq: u64,
    pub frame_hash: String,
    /// The checkpoint certifying this frame: `group-checkpoint.json`.
    pub checkpoint: Arc<Value>,
    /// Its canonical bytes, the exact content of `group-checkpoint.json`.
    pub checkpoint_json: Vec<u8>,
    /// `details.jsonl` lines in the order written (without `ts`, which the
    /// writer adds).
    pub details: Vec<Value>,
    /// One `events.jsonl` event: its type and data.
    pub event: (&'static str, Value),
    /// The fields the snapshot is updated with (deep-merged into it).
    pub snapshot: Map,
}

/// A hook result, checked.
struct HookResult {
    state: Value,
    events: Vec<Value>,
    direct: Map,
    completed: bool,
    outcome: Option<String>,
}

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

/// What every envelope of one frame shares.
struct Shared<'a> {
    core: &'a Map,
    core_len: usize,
    frame_hash: &'a str,
    events: &'a Value,
    events_json: &'a [u8],
    checkpoint: &'a Value,
    checkpoint_json: &'a [u8],
    checkpoint_nest: usize,
    /// `(ops, canonical ops, deepest level)` when the checkpoint is sent as
    /// a delta; the full checkpoint otherwise.
    checkpoint_delta: Option<(&'a Value, &'a [u8], usize)>,
    checkpoint_hash: &'a str,
    checkpoint_signature: &'a str,
}

/// One member's part of an envelope.
struct ViewPart<'a> {
    public_key: &'a str,
    view: &'a Value,
    view_json: &'a [u8],
    view_nest: usize,
    /// `(ops, canonical ops, deepest level)` when the view is sent as a delta.
    delta: Option<(Value, Vec<u8>, usize)>,
    direct: Value,
}

const EMPTY_ARRAY: &[u8] = b"[]";
const NULL: &[u8] = b"null";

/// Length of `"key":` and a value of `len` bytes.
fn member_len(key: &str, len: usize) -> usize {
    key.len() + 3 + len
}

/// One member's signed envelope and its canonical length.
fn member_envelope(keys: &KeyPair, s: &Shared<'_>, p: ViewPart<'_>) -> Result<(Value, usize)> {
    let view_full = p.delta.is_none();
    if view_full {
        fits_one_down(p.view_nest)?;
    }
    if let Some((_, _, nest)) = &p.delta {
        fits_one_down(*nest)?;
    }
    match s.checkpoint_delta {
        None => fits_one_down(s.checkpoint_nest)?,
        Some((_, _, nest)) => fits_one_down(nest)?,
    }
    let view_state_hash = sha256_hex(p.view_json);
    let view_mode = if view_full { "full" } else { "delta" };
    let checkpoint_mode = if s.checkpoint_delta.is_none() {
        "full"
    } else {
        "delta"
    };
    let direct_json = canonical::to_vec(&p.direct);
    let (q_ck_hash, q_ck_sig, q_ck_mode) = (
        quoted(s.checkpoint_hash),
        quoted(s.checkpoint_signature),
        quoted(checkpoint_mode),
    );
    let (q_mode, q_vsh, q_viewer) = (
        quoted(view_mode),
        quoted(&view_state_hash),
        quoted(p.public_key),
    );
    let mut private = [
        ("viewer_public_key", q_viewer.as_slice()),
        ("view_mode", q_mode.as_slice()),
        ("view", if view_full { p.view_json } else { NULL }),
        (
            "view_delta",
            p.delta.as_ref().map_or(EMPTY_ARRAY, |d| d.1.as_slice()),
        ),
        ("view_state_hash", q_vsh.as_slice()),
        ("direct", direct_json.as_slice()),
        ("checkpoint_mode", q_ck_mode.as_slice()),
        (
            "checkpoint",
            if s.checkpoint_delta.is_none() {
                s.checkpoint_json
            } else {
                NULL
            },
        ),
        (
            "checkpoint_delta",
            s.checkpoint_delta.map_or(EMPTY_ARRAY, |d| d.1),
        ),
        ("checkpoint_hash", q_ck_hash.as_slice()),
        ("checkpoint_signature", q_ck_sig.as_slice()),
    ];
    let private_json = compose(&mut private);
    let view_hash = sha256_hex(&private_json);
    let (q_fh, q_vh) = (quoted(s.frame_hash), quoted(&view_hash));
    let signed = compose(&mut [
        ("frame_hash", q_fh.as_slice()),
        ("view_hash", q_vh.as_slice()),
        ("viewer_public_key", q_viewer.as_slice()),
    ]);
    let signature = keys.sign(&signed);
    let len = 2
        + (s.core_len - 2)
        + (private_json.len() - 2)
        + member_len("frame_hash", q_fh.len())
        + member_len("events", s.events_json.len())
        + member_len("view_hash", q_vh.len())
        + member_len("signature", signature.len() + 2)
        // 28 members: 27 commas, 22 of them inside the two composed parts.
        + 5;

    let mut env = Map::with_capacity(28);
    for (k, v) in s.core.iter() {
        env.insert(k, v.clone());
    }
    env.insert("frame_hash", Value::from(s.frame_hash));
    env.insert("events", s.events.clone());
    env.insert("viewer_public_key", Value::from(p.public_key));
    env.insert("view_mode", Value::from(view_mode));
    env.insert(
        "view",
        if view_full {
            p.view.clone()
        } else {
            Value::Null
        },
    );
    env.insert(
        "view_delta",
        p.delta.map_or_else(|| Value::Array(Vec::new()), |d| d.0),
    );
    env.insert("view_state_hash", Value::from(view_state_hash));
    env.insert("direct", p.direct);
    env.insert("checkpoint_mode", Value::from(checkpoint_mode));
    env.insert(
        "checkpoint",
        if s.checkpoint_delta.is_none() {
            s.checkpoint.clone()
        } else {
            Value::Null
        },
    );
    env.insert(
        "checkpoint_delta",
        s.checkpoint_delta
            .map_or_else(|| Value::Array(Vec::new()), |d| d.0.clone()),
    );
    env.insert("checkpoint_hash", Value::from(s.checkpoint_hash));
    env.insert("checkpoint_signature", Value::from(s.checkpoint_signature));
    env.insert("view_hash", Value::from(view_hash));
    env.insert("signature", Value::from(signature));
    Ok((Value::Object(env), len))
}

/// The leader's authority over one room for one leader epoch.
pub struct Authority {
    hooks: Box<dyn GroupHooks>,
    config: GroupConfig,
    protocol_name: String,
    group_id: String,
    keys: KeyPair,
    leader_epoch: u64,
    membership_version: u64,
    members: Vec<Value>,
    seq: u64,
    previous_hash: String,
    last_client_seq: Map,
    completed: bool,
    outcome: Option<String>,
    state: Value,
    last_envelopes: Envelopes,
    last_views: HashMap<String, Value>,
    last_core: Option<(Map, usize)>,
    last_events: Value,
    current: Option<(Arc<Value>, usize)>,
    history: BTreeMap<u64, Arc<Value>>,
    acknowledged: HashMap<String, u64>,
    replicated: Option<Arc<Value>>,
    records: VecDeque<FrameRecord>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("group_id", &self.group_id)
            .field("leader_public_key", &self.keys.public_key)
            .field("leader_epoch", &self.leader_epoch)
            .field("seq", &self.seq)
            .field("previous_hash", &self.previous_hash)
            .finish_non_exhaustive()
    }
}

/// The fields of a step that a failure puts back.
struct Saved {
    members: Vec<Value>,
    membership_version: u64,
    completed: bool,
    outcome: Option<String>,
    last_client_seq: Map,
    state: Option<Value>,
}

/// The members of a list by public key, as the reference's dict
/// comprehension keeps them: first position, last record.
fn by_key(members: &[Value]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::with_capacity(members.len());
    for m in members {
        let key = member_key(m);
        match out.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = m.clone(),
            None => out.push((key.to_owned(), m.clone())),
        }
    }
    out
}

fn number(v: Option<&Value>) -> Option<&Number> {
    match v {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

impl Authority {
    /// A new room (its first frame is a `snapshot` at seq 0), or a room
    /// taken over from `checkpoint` (its first frame is an `epoch_start`
    /// that continues the checkpoint's hash chain).
    pub fn new(init: AuthorityInit) -> Result<Authority> {
        let members = normalize_members(&init.members)?;
        let restored = init.checkpoint.is_some();
        let mut a = Authority {
            hooks: init.hooks,
            config: init.config,
            protocol_name: init.protocol_name,
            group_id: init.group_id,
            keys: init.keys,
            leader_epoch: init.leader_epoch,
            membership_version: init.membership_version,
            members,
            seq: 0,
            previous_hash: ZERO_HASH.to_owned(),
            last_client_seq: Map::new(),
            completed: false,
            outcome: None,
            state: Value::Null,
            last_envelopes: Arc::new(Map::new()),
            last_views: HashMap::new(),
            last_core: None,
            last_events: Value::Array(Vec::new()),
            current: None,
            history: BTreeMap::new(),
            acknowledged: HashMap::new(),
            replicated: None,
            records: VecDeque::new(),
        };
        let events = match &init.checkpoint {
            None => {
                a.state = a
                    .hooks
                    .initial_state(&a.members)
                    .map_err(GroupError::Hook)?;
                Vec::new()
            }
            Some(checkpoint) => a.restore(checkpoint)?,
        };
        if !matches!(a.state, Value::Object(_)) {
            return Err(GroupError::Protocol(
                "group authority state must be an object",
            ));
        }
        walk(&a.state, 0)?;
        let kind = if restored { "epoch_start" } else { "snapshot" };
        a.build(events, &Map::new(), kind, restored)?;
        Ok(a)
    }

    fn restore(&mut self, checkpoint: &Value) -> Result<Vec<Value>> {
        let Value::Object(cp) = checkpoint else {
            return Err(GroupError::Value("checkpoint must be an object".into()));
        };
        let old_leader = cp
            .get("leader_public_key")
            .filter(|v| v.truthy())
            .map(Value::py_str)
            .unwrap_or_default();
        self.restore_metadata(cp)?;
        let Some(protocol_state @ Value::Object(_)) = cp.get("protocol_state") else {
            return Err(GroupError::Protocol(
                "checkpoint protocol_state must be an object",
            ));
        };
        self.state = self
            .hooks
            .restore(protocol_state.clone(), &self.members, self.leader_epoch)
            .map_err(GroupError::Hook)?;
        if !matches!(self.state, Value::Object(_)) {
            return Err(GroupError::Protocol(
                "proto_group_restore must return an object",
            ));
        }
        for result in self.reconcile(cp)? {
            let r = self.check_result(result)?;
            self.state = r.state;
            self.completed = r.completed;
            self.outcome = r.outcome;
        }
        let changed = self
            .hooks
            .on_leader_changed(self.state.clone(), &old_leader, &self.keys.public_key)
            .map_err(GroupError::Hook)?;
        let r = self.check_result(changed)?;
        self.state = r.state;
        self.completed = r.completed;
        self.outcome = r.outcome;
        Ok(r.events)
    }

    /// Membership changes the server saw after the checkpoint was made:
    /// the hook results, in the reference's order.
    fn reconcile(&mut self, cp: &Map) -> Result<Vec<Value>> {
        let Some(Value::Array(raw)) = cp.get("members") else {
            return Err(GroupError::Protocol("checkpoint members must be an array"));
        };
        let previous = by_key(&normalize_members(raw)?);
        let current = by_key(&self.members);
        let mut results = Vec::new();
        let mut take = |state: &mut Value, r: Value| {
            if let Some(s @ Value::Object(_)) = r.get("state") {
                *state = s.clone();
            }
            results.push(r);
        };
        for (key, old) in &previous {
            if member_active(old) && !current.iter().any(|(k, _)| k == key) {
                let r = self
                    .hooks
                    .member_left(
                        self.state.clone(),
                        old,
                        "membership_changed_during_failover",
                    )
                    .map_err(GroupError::Hook)?;
                take(&mut self.state, r);
            }
        }
        for (key, member) in &current {
            let old = previous.iter().find(|(k, _)| k == key).map(|(_, m)| m);
            if !old.is_some_and(member_active) {
                let r = self
                    .hooks
                    .member_joined(self.state.clone(), member)
                    .map_err(GroupError::Hook)?;
                take(&mut self.state, r);
            }
        }
        Ok(results)
    }

    fn restore_metadata(&mut self, cp: &Map) -> Result<()> {
        const SIGNED: [&str; 2] = ["checkpoint_hash", "checkpoint_signature"];
        let hash_ok = match cp.get("checkpoint_hash") {
            Some(Value::String(expected)) => {
                let members = core::canonical_members(cp, &SIGNED)?;
                sha256_hex(core::compose_members(&members)) == *expected
            }
            _ => false,
        };
        if !hash_ok {
            return Err(GroupError::Protocol("checkpoint hash mismatch"));
        }
        let Some(signature) = cp.get_str("checkpoint_signature") else {
            return Err(GroupError::Protocol("checkpoint signature is missing"));
        };
        let signer = cp
            .get("leader_public_key")
            .filter(|v| v.truthy())
            .map(Value::py_str)
            .unwrap_or_default();
        let certificate = core::checkpoint_certificate(cp);
        if !core::verify_signature(&signer, certificate.as_bytes(), signature) {
            return Err(GroupError::Protocol("checkpoint certificate is invalid"));
        }
        if cp.get_str("group_id") != Some(self.group_id.as_str()) {
            return Err(GroupError::Protocol("checkpoint group_id mismatch"));
        }
        if !cp.get("version").is_some_and(|v| v.py_eq(&Value::from(1))) {
            return Err(GroupError::Protocol("checkpoint version is invalid"));
        }
        core::validate_checkpoint_state(&Value::Object(core::checkpoint_state_from(cp)?))?;
        let seq = match cp.get("seq") {
            Some(Value::Number(Number::Int(i))) if *i >= 0 => i.unsigned_abs(),
            Some(Value::Bool(b)) => u64::from(*b),
            Some(Value::Number(Number::BigInt(s))) if !s.starts_with('-') => {
                return Err(GroupError::Value(format!(
                    "checkpoint seq {s} does not fit in 64 bits"
                )));
            }
            _ => return Err(GroupError::Protocol("checkpoint seq is invalid")),
        };
        let Some(frame_hash) = cp.get_str("frame_hash").filter(|h| core::is_hash_str(h)) else {
            return Err(GroupError::Protocol("checkpoint frame_hash is invalid"));
        };
        self.seq = seq;
        self.previous_hash = frame_hash.to_owned();
        let restored = match cp.get("last_client_seq").filter(|v| v.truthy()) {
            None => Map::new(),
            Some(Value::Object(m)) => m
                .iter()
                .filter(|(_, v)| match v {
                    Value::Number(Number::Int(i)) => *i >= 0,
                    Value::Number(Number::BigInt(s)) => !s.starts_with('-'),
                    _ => false,
                })
                .map(|(k, v)| (k, v.clone()))
                .collect(),
            Some(_) => {
                return Err(GroupError::Protocol(
                    "checkpoint last_client_seq is invalid",
                ));
            }
        };
        self.last_client_seq = restored;
        self.completed = cp.get("completed").is_some_and(Value::truthy);
        self.outcome = cp.get_str("outcome").map(str::to_owned);
        Ok(())
    }

    /// The reference's `_normalize_result`.
    fn check_result(&self, result: Value) -> Result<HookResult> {
        let Value::Object(mut m) = result else {
            return Err(GroupError::Protocol("group hook result must be an object"));
        };
        let Some(state @ Value::Object(_)) = m.remove("state") else {
            return Err(GroupError::Protocol(
                "group hook result.state must be an object",
            ));
        };
        let Value::Array(events) = m.remove("events").unwrap_or(Value::Array(Vec::new())) else {
            return Err(GroupError::Protocol(
                "group hook result.events must be an array",
            ));
        };
        if events.len() as u64 > self.config.max_events_per_action {
            return Err(GroupError::Protocol("group hook emitted too many events"));
        }
        let Value::Object(direct) = m.remove("direct").unwrap_or(Value::Object(Map::new())) else {
            return Err(GroupError::Protocol(
                "group hook result.direct must be an object",
            ));
        };
        let Value::Bool(completed) = m.remove("completed").unwrap_or(Value::Bool(false)) else {
            return Err(GroupError::Protocol(
                "group hook result.completed must be boolean",
            ));
        };
        let outcome = match m.remove("outcome") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                return Err(GroupError::Protocol(
                    "group hook result.outcome must be string or null",
                ));
            }
        };
        walk(&state, 0)?;
        let events = Value::Array(events);
        walk(&events, 0)?;
        let direct = Value::Object(direct);
        walk(&direct, 0)?;
        let (Value::Array(events), Value::Object(direct)) = (events, direct) else {
            return Err(GroupError::Protocol("group hook result must be an object"));
        };
        Ok(HookResult {
            state,
            events,
            direct,
            completed,
            outcome,
        })
    }

    fn save(&self, state: Option<Value>) -> Saved {
        Saved {
            members: self.members.clone(),
            membership_version: self.membership_version,
            completed: self.completed,
            outcome: self.outcome.clone(),
            last_client_seq: self.last_client_seq.clone(),
            state,
        }
    }

    fn put_back(&mut self, saved: Saved) {
        self.members = saved.members;
        self.membership_version = saved.membership_version;
        self.completed = saved.completed;
        self.outcome = saved.outcome;
        self.last_client_seq = saved.last_client_seq;
        if let Some(state) = saved.state {
            self.state = state;
        }
    }

    /// Runs `step`; when it fails, the fields in `saved` are put back.
    fn atomically<T>(
        &mut self,
        saved: Saved,
        step: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let out = step(self);
        if out.is_err() {
            self.put_back(saved);
        }
        out
    }

    fn member_index(&self, public_key: &str) -> Option<usize> {
        let lowered = public_key.to_lowercase();
        self.members.iter().position(|m| member_key(m) == lowered)
    }

    /// One ordered action of `actor_public_key`, numbered `client_seq` by
    /// the actor (1, 2, …). Returns the frame's envelopes and the receipt
    /// (`accepted`, or `duplicate` with the last frame's envelopes, which
    /// are not to be sent again). Every error is a `rejected` receipt's
    /// reason ([`GroupError::reason`]); [`GroupError::Hook`] when the
    /// protocol's rules refused the action.
    pub fn apply_input(
        &mut self,
        actor_public_key: &str,
        client_seq: i64,
        action: &Value,
    ) -> Result<(Envelopes, Map)> {
        if self.completed {
            return Err(GroupError::Protocol("group is already completed"));
        }
        let Some(actor) = self
            .member_index(actor_public_key)
            .filter(|i| member_active(&self.members[*i]))
        else {
            return Err(GroupError::Protocol("actor is not an active group member"));
        };
        if client_seq < 1 {
            return Err(GroupError::Protocol(
                "client_seq must be a positive integer",
            ));
        }
        let previous = match number(self.last_client_seq.get(actor_public_key)) {
            None => Some(0),
            Some(Number::Int(i)) => Some(*i),
            // Only non-negative integers are kept: a big one is past any i64.
            Some(_) => None,
        };
        let Some(previous) = previous.filter(|p| client_seq > *p) else {
            let mut receipt = Map::with_capacity(3);
            receipt.insert("status", Value::from("duplicate"));
            receipt.insert("client_seq", Value::from(client_seq));
            receipt.insert("authority_seq", Value::from(self.seq));
            return Ok((self.last_envelopes.clone(), receipt));
        };
        let expected = i128::from(previous) + 1;
        if i128::from(client_seq) != expected {
            return Err(GroupError::ClientSeqGap {
                expected,
                got: client_seq,
            });
        }
        if !matches!(action, Value::Object(_)) {
            return Err(GroupError::Protocol("group action must be an object"));
        }
        let action_bytes = core::canonical(action)?;
        if action_bytes.len() as u64 > self.config.max_action_bytes {
            return Err(GroupError::Protocol(
                "group action exceeds max_action_bytes",
            ));
        }
        let result = self
            .hooks
            .handle(self.state.clone(), &self.members[actor], action)
            .map_err(GroupError::Hook)?;
        let r = self.check_result(result)?;
        let saved = self.save(None);
        let old_state = std::mem::replace(&mut self.state, r.state);
        let saved = Saved {
            state: Some(old_state),
            ..saved
        };
        self.completed = r.completed;
        self.outcome = r.outcome;
        self.last_client_seq
            .insert(actor_public_key, Value::from(client_seq));
        let envelopes = self.atomically(saved, |a| a.build(r.events, &r.direct, "frame", true))?;
        let mut receipt = Map::with_capacity(5);
        receipt.insert("status", Value::from("accepted"));
        receipt.insert("client_seq", Value::from(client_seq));
        receipt.insert("authority_seq", Value::from(self.seq));
        receipt.insert("frame_hash", Value::from(self.previous_hash.as_str()));
        receipt.insert("completed", Value::Bool(self.completed));
        Ok((envelopes, receipt))
    }

    /// Admits `member` (or re-admits a known one) at `membership_version`:
    /// a `membership` frame.
    pub fn add_member(&mut self, member: &Value, membership_version: u64) -> Result<Envelopes> {
        let normalized = normalize_members(std::slice::from_ref(member))?
            .into_iter()
            .next()
            .ok_or(GroupError::Protocol("group member must be an object"))?;
        let saved = self.save(None);
        match self.member_index(member_key(&normalized)) {
            None => {
                if self.members.len() as u64 >= self.config.max_participants {
                    return Err(GroupError::Protocol("group is full"));
                }
                let seat = member_seat(&normalized);
                if self.members.iter().any(|m| member_seat(m) == seat) {
                    return Err(GroupError::Protocol("member seat is already occupied"));
                }
                self.members.push(normalized.clone());
                self.members.sort_by_key(member_seat);
            }
            Some(i) => {
                let mut updated = normalized.clone();
                if let Value::Object(m) = &mut updated {
                    m.insert("status", Value::from("active"));
                }
                self.members[i] = updated;
            }
        }
        self.membership_version = membership_version;
        self.atomically(saved, |a| {
            let result = a
                .hooks
                .member_joined(a.state.clone(), &normalized)
                .map_err(GroupError::Hook)?;
            let r = a.check_result(result)?;
            let old = std::mem::replace(&mut a.state, r.state);
            a.build(r.events, &r.direct, "membership", true)
                .inspect_err(|_| a.state = old)
        })
    }

    /// Marks a member as having left, for `reason`: a `membership` frame.
    pub fn remove_member(
        &mut self,
        public_key: &str,
        membership_version: u64,
        reason: &str,
    ) -> Result<Envelopes> {
        let Some(i) = self.member_index(public_key) else {
            return Err(GroupError::Protocol("unknown group member"));
        };
        let saved = self.save(None);
        if let Value::Object(m) = &mut self.members[i] {
            m.insert("status", Value::from("left"));
        }
        self.membership_version = membership_version;
        self.atomically(saved, |a| {
            let result = a
                .hooks
                .member_left(a.state.clone(), &a.members[i], reason)
                .map_err(GroupError::Hook)?;
            let r = a.check_result(result)?;
            let old = std::mem::replace(&mut a.state, r.state);
            a.completed = r.completed;
            a.outcome = r.outcome;
            a.build(r.events, &r.direct, "membership", true)
                .inspect_err(|_| a.state = old)
        })
    }

    /// The protocol's recovery after the fencing epoch changed: an
    /// `epoch_start` frame.
    pub fn leader_changed(&mut self, old_leader: &str, new_leader: &str) -> Result<Envelopes> {
        let result = self
            .hooks
            .on_leader_changed(self.state.clone(), old_leader, new_leader)
            .map_err(GroupError::Hook)?;
        let r = self.check_result(result)?;
        let old = std::mem::replace(&mut self.state, r.state);
        self.build(r.events, &r.direct, "epoch_start", true)
            .inspect_err(|_| self.state = old)
    }

    /// A self-contained envelope of the current frame for one member (its
    /// first frame, or after a reconnect): full view, full checkpoint.
    /// `None` for an unknown or inactive member.
    pub fn bootstrap_envelope(&mut self, public_key: &str) -> Result<Option<Value>> {
        if self.last_core.is_none() || self.current.is_none() {
            return Ok(None);
        }
        let Some(i) = self
            .member_index(public_key)
            .filter(|i| member_active(&self.members[*i]))
        else {
            return Ok(None);
        };
        let view = self.view_of(i)?;
        let (Some((core, core_len)), Some((checkpoint, checkpoint_nest))) =
            (&self.last_core, &self.current)
        else {
            return Ok(None);
        };
        let (view_nest, view_json) = (walk(&view, 0)?, canonical::to_vec(&view));
        let checkpoint_json = canonical::to_vec(checkpoint);
        let text = |k: &str| checkpoint.get_str(k).unwrap_or_default();
        let events_json = canonical::to_vec(&self.last_events);
        let shared = Shared {
            core,
            core_len: *core_len,
            frame_hash: text("frame_hash"),
            events: &self.last_events,
            events_json: &events_json,
            checkpoint,
            checkpoint_json: &checkpoint_json,
            checkpoint_nest: *checkpoint_nest,
            checkpoint_delta: None,
            checkpoint_hash: text("checkpoint_hash"),
            checkpoint_signature: text("checkpoint_signature"),
        };
        let lowered = public_key.to_lowercase();
        let part = ViewPart {
            public_key: &lowered,
            view: &view,
            view_json: &view_json,
            view_nest,
            delta: None,
            direct: Value::Array(Vec::new()),
        };
        member_envelope(&self.keys, &shared, part).map(|(env, _)| Some(env))
    }

    /// [`Authority::bootstrap_envelope`] for every active member.
    pub fn bootstrap_envelopes(&mut self) -> Result<Map> {
        let keys: Vec<String> = self
            .members
            .iter()
            .filter(|m| member_active(m))
            .map(|m| member_key(m).to_owned())
            .collect();
        let mut out = Map::with_capacity(keys.len());
        for key in keys {
            if let Some(env) = self.bootstrap_envelope(&key)? {
                out.insert(key, env);
            }
        }
        Ok(out)
    }

    /// Records that a member (not the leader) holds the checkpoint of
    /// `seq`: true when it matches one of the last
    /// [`MAX_CHECKPOINT_HISTORY`] checkpoints and is not older than what
    /// the member acknowledged before.
    pub fn acknowledge(
        &mut self,
        public_key: &str,
        seq: u64,
        frame_hash: &str,
        checkpoint_hash: Option<&str>,
    ) -> bool {
        let active = self
            .member_index(public_key)
            .is_some_and(|i| member_active(&self.members[i]));
        if !active || public_key == self.keys.public_key {
            return false;
        }
        let Some(checkpoint) = self.history.get(&seq) else {
            return false;
        };
        if checkpoint.get_str("frame_hash") != Some(frame_hash)
            || checkpoint_hash.is_some_and(|h| checkpoint.get_str("checkpoint_hash") != Some(h))
            || self.acknowledged.get(public_key).is_some_and(|a| seq < *a)
        {
            return false;
        }
        self.acknowledged.insert(public_key.to_owned(), seq);
        let newer = match &self.replicated {
            None => true,
            Some(r) => r
                .get("seq")
                .and_then(Value::as_i64)
                .is_none_or(|s| i128::from(seq) > i128::from(s)),
        };
        if newer {
            self.replicated = Some(checkpoint.clone());
        }
        true
    }

    /// The newest checkpoint some successor acknowledged.
    pub fn replicated_checkpoint(&self) -> Option<Arc<Value>> {
        self.replicated.clone()
    }

    /// The checkpoint of the current frame.
    pub fn checkpoint(&self) -> Arc<Value> {
        self.current
            .as_ref()
            .map_or_else(|| Arc::new(Value::Null), |(c, _)| c.clone())
    }

    /// What the frames built since the last call leave for the state dir,
    /// oldest first.
    pub fn take_records(&mut self) -> Vec<FrameRecord> {
        self.records.drain(..).collect()
    }

    /// The normalised record of a member (by public key, any case).
    pub fn member(&self, public_key: &str) -> Option<&Value> {
        self.member_index(public_key).map(|i| &self.members[i])
    }

    /// Every member record, in seat order.
    pub fn members(&self) -> &[Value] {
        &self.members
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The frame hash of the current frame (the next one's `previous_hash`).
    pub fn previous_hash(&self) -> &str {
        &self.previous_hash
    }

    pub fn completed(&self) -> bool {
        self.completed
    }

    pub fn outcome(&self) -> Option<&str> {
        self.outcome.as_deref()
    }

    /// The highest `client_seq` taken from each actor.
    pub fn last_client_seqs(&self) -> &Map {
        &self.last_client_seq
    }

    /// The highest `client_seq` taken from `public_key` (0 before any).
    pub fn last_client_seq(&self, public_key: &str) -> u64 {
        match number(self.last_client_seq.get(public_key)) {
            Some(Number::Int(i)) => u64::try_from(*i).unwrap_or(0),
            Some(_) => u64::MAX,
            None => 0,
        }
    }

    pub fn leader_epoch(&self) -> u64 {
        self.leader_epoch
    }

    pub fn leader_public_key(&self) -> &str {
        &self.keys.public_key
    }

    pub fn membership_version(&self) -> u64 {
        self.membership_version
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The authority state (the whole truth; never sent as it is).
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// The envelopes of the current frame.
    pub fn last_envelopes(&self) -> &Envelopes {
        &self.last_envelopes
    }

    /// The view a member got with the current frame.
    pub fn view(&self, public_key: &str) -> Option<&Value> {
        self.last_views.get(&public_key.to_lowercase())
    }

    /// The leader's own current view (empty when it has none).
    pub fn leader_view(&self) -> Option<&Value> {
        self.last_views.get(&self.keys.public_key)
    }

    fn view_of(&mut self, member: usize) -> Result<Value> {
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
    fn build(
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
        core.insert("_group", Value::from(kind));
        core.insert("wire_version", Value::from(WIRE_VERSION));
        core.insert("group_id", Value::from(self.group_id.as_str()));
        core.insert(
            "leader_public_key",
            Value::from(self.keys.public_key.as_str()),
        );
        core.insert("leader_epoch", Value::from(self.leader_epoch));
        core.insert("seq", Value::from(seq));
        core.insert("previous_hash", Value::from(self.previous_hash.as_str()));
        core.insert("membership_version", Value::from(self.membership_version));
        core.insert(
            "authority_state_hash",
            Value::from(sha256_hex(canonical::to_vec(&self.state))),
        );
        core.insert("recovery_state_hash", Value::from(recovery_state_hash));
        core.insert("events_hash", Value::from(sha256_hex(&events_json)));
        core.insert("completed", Value::Bool(self.completed));
        core.insert("outcome", opt_str(self.outcome.as_deref()));
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
        cp.insert("version", Value::from(1));
        cp.insert("group_id", Value::from(self.group_id.as_str()));
        cp.insert(
            "leader_public_key",
            Value::from(self.keys.public_key.as_str()),
        );
        cp.insert("leader_epoch", Value::from(self.leader_epoch));
        cp.insert("seq", Value::from(seq));
        cp.insert("frame_hash", Value::from(frame_hash.as_str()));
        cp.insert("membership_version", Value::from(self.membership_version));
        for (k, v) in fields {
            cp.insert(k, v);
        }
        cp.insert("checkpoint_hash", Value::from(checkpoint_hash.as_str()));
        cp.insert(
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::group::hooks::result;
    use crate::engine::group::replica::Replica;
    use crate::json::parse_str;

    /// A small room for tests: `{"say": text}` appends to a bounded log,
    /// `{"fail": text}` is refused, `{"end": true}` completes the room;
    /// each member sees the log and its own seat.
    pub(crate) struct Chat;

    impl GroupHooks for Chat {
        fn initial_state(&mut self, members: &[Value]) -> std::result::Result<Value, String> {
            Ok(object([
                ("log", Value::Array(Vec::new())),
                ("n", Value::from(members.len())),
            ]))
        }

        fn handle(
            &mut self,
            mut state: Value,
            actor: &Value,
            action: &Value,
        ) -> std::result::Result<Value, String> {
            if let Some(reason) = action.get_str("fail") {
                return Err(reason.to_owned());
            }
            if action.get("end").is_some() {
                let mut r = result(state, vec![]);
                if let Value::Object(m) = &mut r {
                    m.insert("completed", Value::Bool(true));
                    m.insert("outcome", Value::from("ended"));
                }
                return Ok(r);
            }
            if action.get("bad").is_some() {
                return Ok(Value::from(1));
            }
            let text = action.get_str("say").unwrap_or_default().to_owned();
            let seat = actor.get("seat").cloned().unwrap_or(Value::Null);
            let entry = object([("seat", seat.clone()), ("text", Value::from(text.as_str()))]);
            if let Some(Value::Array(log)) = state.as_object_mut().and_then(|m| m.get_mut("log")) {
                log.push(entry.clone());
                if log.len() > 30 {
                    log.remove(0);
                }
            }
            let mut r = result(
                state,
                vec![object([("kind", Value::from("said")), ("entry", entry)])],
            );
            if let Value::Object(m) = &mut r {
                let pk = actor.get_str("public_key").unwrap_or_default();
                m.insert(
                    "direct",
                    object([(pk, Value::Array(vec![Value::from("echo")]))]),
                );
            }
            Ok(r)
        }

        fn view(&mut self, state: &Value, viewer: &Value) -> std::result::Result<Value, String> {
            Ok(object([
                ("log", state.get("log").cloned().unwrap_or(Value::Null)),
                ("me", viewer.get("seat").cloned().unwrap_or(Value::Null)),
            ]))
        }
    }

    pub(crate) fn key(i: u8) -> KeyPair {
        KeyPair::from_seed([i + 1; 32])
    }

    pub(crate) fn member(i: u8) -> Value {
        object([
            ("public_key", Value::from(key(i).public_key)),
            ("seat", Value::from(u32::from(i))),
            ("member_id", Value::from(format!("m{i}"))),
        ])
    }

    pub(crate) fn config() -> GroupConfig {
        GroupConfig::from_value(
            &parse_str(
                r#"{"flow":{"group":{"min_participants":2,"max_participants":8,"allow_late_join":true,
                "recovery_mode":"exact","start_policy":"min_ready","checkpoint_every_events":5,
                "max_action_bytes":1024,"max_events_per_action":4}}}"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    pub(crate) fn room(n: u8) -> Authority {
        Authority::new(AuthorityInit {
            config: config(),
            hooks: Box::new(Chat),
            protocol_name: "Chat".into(),
            group_id: "g1".into(),
            keys: key(0),
            leader_epoch: 0,
            membership_version: 1,
            members: (0..n).map(member).collect(),
            checkpoint: None,
        })
        .unwrap()
    }

    fn replicas(a: &mut Authority, n: u8) -> Vec<Replica> {
        (0..n)
            .map(|i| {
                let mut r = Replica::new(
                    "g1",
                    &key(i).public_key,
                    &a.keys.public_key,
                    a.leader_epoch,
                    "Chat",
                );
                let boot = a.bootstrap_envelope(&key(i).public_key).unwrap().unwrap();
                assert!(r.apply(&boot, true).unwrap());
                r
            })
            .collect()
    }

    fn say(a: &mut Authority, who: u8, seq: i64, text: &str) -> Envelopes {
        let action = object([("say", Value::from(text))]);
        let (envs, receipt) = a.apply_input(&key(who).public_key, seq, &action).unwrap();
        assert_eq!(receipt.get_str("status"), Some("accepted"));
        envs
    }

    #[test]
    fn frames_verify_and_use_deltas() {
        let mut a = room(3);
        assert_eq!(a.seq(), 0);
        let mut reps = replicas(&mut a, 3);
        assert_eq!(a.take_records().len(), 1);
        let mut modes = std::collections::BTreeSet::new();
        for n in 1..=40 {
            let envs = say(
                &mut a,
                ((n - 1) % 3) as u8,
                i64::from((n - 1) / 3 + 1),
                &if n % 13 == 0 {
                    "long ".repeat(190)
                } else {
                    format!("message {n} with some padding text")
                },
            );
            for (i, r) in reps.iter_mut().enumerate() {
                let env = envs.get(&key(i as u8).public_key).unwrap();
                let mode = |k: &str| env.get_str(k).unwrap().to_owned();
                modes.insert((mode("view_mode"), mode("checkpoint_mode")));
                // A view delta exactly when it saves more than 96 bytes; a
                // checkpoint delta when it saves more than 256.
                let view = a.view(&key(i as u8).public_key).unwrap();
                let view_delta = make_delta_exact(r.view().unwrap(), view);
                let saves = canonical::to_vec(&Value::Array(view_delta)).len() + 96
                    < canonical::to_vec(view).len();
                assert_eq!(mode("view_mode") == "delta", saves, "frame {n}");
                if n % 5 != 0 {
                    let (Some(Value::Object(prev)), Value::Object(cur)) =
                        (r.checkpoint().map(|c| &**c), &*a.checkpoint())
                    else {
                        panic!("checkpoints")
                    };
                    let ops =
                        make_fields_delta_exact(prev, cur, &CHECKPOINT_STATE_FIELDS_SORTED, || {
                            Value::Null
                        });
                    let saves = canonical::to_vec(&Value::Array(ops)).len() + 256
                        < canonical::to_vec(&a.checkpoint()).len();
                    assert_eq!(mode("checkpoint_mode") == "delta", saves, "frame {n}");
                }
                assert!(r.apply(env, false).unwrap(), "frame {n}");
                assert_eq!(r.view(), a.view(&key(i as u8).public_key));
            }
            // Every 5th frame carries a full checkpoint.
            let env = envs.values().next().unwrap();
            if n % 5 == 0 {
                assert_eq!(env.get_str("checkpoint_mode"), Some("full"));
            }
            let recs = a.take_records();
            assert_eq!(recs.len(), 1);
            for rec in recs {
                assert_eq!(rec.checkpoint_json, canonical::to_vec(&rec.checkpoint));
                let max = envs.values().map(canonical::canonical_len).max().unwrap();
                assert_eq!(
                    rec.details[1].get("max_envelope_bytes"),
                    Some(&Value::from(max))
                );
            }
        }
        assert!(
            modes.contains(&("delta".into(), "delta".into())),
            "{modes:?}"
        );
        assert!(
            modes.contains(&("delta".into(), "full".into())),
            "{modes:?}"
        );
        assert!(
            modes.contains(&("full".into(), "delta".into())),
            "{modes:?}"
        );
        assert_eq!(a.seq(), 40);
        assert_eq!(reps[0].seq(), Some(40));
        assert_eq!(reps[0].checkpoint().map(|c| &**c), Some(&*a.checkpoint()));
    }

    #[test]
    fn duplicates_gaps_and_refusals_change_nothing() {
        let mut a = room(2);
        let envs = say(&mut a, 1, 1, "hi");
        let (again, receipt) = a
            .apply_input(&key(1).public_key, 1, &object([("say", Value::from("x"))]))
            .unwrap();
        assert_eq!(receipt.get_str("status"), Some("duplicate"));
        assert!(Arc::ptr_eq(&again, &envs));
        let err = |a: &mut Authority, who: u8, seq: i64, action: &str| {
            a.apply_input(&key(who).public_key, seq, &parse_str(action).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&mut a, 1, 3, "{}"), "client_seq gap: expected 2, got 3");
        assert_eq!(
            err(&mut a, 1, 0, "{}"),
            "client_seq must be a positive integer"
        );
        assert_eq!(
            err(&mut a, 5, 1, "{}"),
            "actor is not an active group member"
        );
        assert_eq!(err(&mut a, 1, 2, "[]"), "group action must be an object");
        assert_eq!(
            err(&mut a, 1, 2, r#"{"x":1.5}"#),
            "floating-point values are not allowed in group state"
        );
        let long = format!(r#"{{"say":"{}"}}"#, "x".repeat(1100));
        assert_eq!(
            err(&mut a, 1, 2, &long),
            "group action exceeds max_action_bytes"
        );
        let before = (a.seq(), a.previous_hash().to_owned(), a.state().clone());
        let e = a
            .apply_input(
                &key(1).public_key,
                2,
                &parse_str(r#"{"fail":"no way"}"#).unwrap(),
            )
            .unwrap_err();
        assert!(e.is_hook() && e.is_refusal());
        assert_eq!(e.reason(), "no way");
        assert_eq!(
            err(&mut a, 1, 2, r#"{"bad":1}"#),
            "group hook result must be an object"
        );
        assert_eq!(
            (a.seq(), a.previous_hash().to_owned(), a.state().clone()),
            before
        );
        assert_eq!(a.last_client_seq(&key(1).public_key), 1);
        // The refused number is still free.
        say(&mut a, 1, 2, "again");
        let (_, receipt) = a
            .apply_input(
                &key(0).public_key,
                1,
                &parse_str(r#"{"end":true}"#).unwrap(),
            )
            .unwrap();
        assert_eq!(receipt.get("completed"), Some(&Value::Bool(true)));
        assert_eq!(a.outcome(), Some("ended"));
        assert_eq!(err(&mut a, 1, 3, "{}"), "group is already completed");
    }

    #[test]
    fn membership_acknowledgements_and_takeover() {
        let mut a = room(2);
        let mut reps = replicas(&mut a, 2);
        for n in 1..=3 {
            let envs = say(&mut a, 1, n, "x");
            for (i, r) in reps.iter_mut().enumerate() {
                r.apply(envs.get(&key(i as u8).public_key).unwrap(), false)
                    .unwrap();
            }
        }
        let envs = a.add_member(&member(2), 2).unwrap();
        assert_eq!(envs.len(), 3);
        assert_eq!(
            envs.values().next().unwrap().get_str("_group"),
            Some("membership")
        );
        assert_eq!(
            a.add_member(
                &member(3)
                    .as_object()
                    .map(|m| {
                        let mut m = m.clone();
                        m.insert("seat", Value::from(1));
                        Value::Object(m)
                    })
                    .unwrap(),
                3
            )
            .unwrap_err()
            .to_string(),
            "member seat is already occupied"
        );
        for (i, r) in reps.iter_mut().enumerate() {
            r.apply(envs.get(&key(i as u8).public_key).unwrap(), false)
                .unwrap();
        }
        let cp = reps[1].checkpoint().unwrap().clone();
        let seq = reps[1].seq().unwrap();
        let fh = reps[1].frame_hash().unwrap().to_owned();
        assert!(
            !a.acknowledge(&key(0).public_key, seq, &fh, None),
            "the leader never counts"
        );
        assert!(!a.acknowledge(&key(1).public_key, seq, "0", None));
        assert!(a.acknowledge(&key(1).public_key, seq, &fh, cp.get_str("checkpoint_hash")));
        assert!(!a.acknowledge(&key(1).public_key, seq - 1, "x", None));
        assert_eq!(a.replicated_checkpoint().as_deref(), Some(&*cp));
        let envs = a.remove_member(&key(0).public_key, 4, "left").unwrap();
        assert_eq!(envs.len(), 2);
        assert_eq!(
            a.remove_member(&key(7).public_key, 4, "x")
                .unwrap_err()
                .to_string(),
            "unknown group member"
        );

        // Member 1 takes over from the acknowledged checkpoint.
        let mut b = Authority::new(AuthorityInit {
            config: config(),
            hooks: Box::new(Chat),
            protocol_name: "Chat".into(),
            group_id: "g1".into(),
            keys: key(1),
            leader_epoch: 1,
            membership_version: 5,
            members: vec![member(1), member(2)],
            checkpoint: Some((*cp).clone()),
        })
        .unwrap();
        assert_eq!(b.seq(), seq + 1);
        let envs = b.bootstrap_envelopes().unwrap();
        let env = envs.get(&key(1).public_key).unwrap();
        assert_eq!(env.get_str("_group"), Some("epoch_start"));
        assert_eq!(env.get_str("previous_hash"), Some(fh.as_str()));
        reps[1].advance_epoch(&key(1).public_key, 1).unwrap();
        // The frame built at takeover chains from the checkpoint.
        let epoch_start = b.last_envelopes().get(&key(1).public_key).unwrap().clone();
        assert!(reps[1].apply(&epoch_start, false).unwrap());
        // A checkpoint of another group, or a forged one, is refused.
        let init = |cp: Value| AuthorityInit {
            config: config(),
            hooks: Box::new(Chat),
            protocol_name: "Chat".into(),
            group_id: "g1".into(),
            keys: key(1),
            leader_epoch: 1,
            membership_version: 5,
            members: vec![member(1)],
            checkpoint: Some(cp),
        };
        let mut forged = (*cp).clone();
        forged
            .as_object_mut()
            .unwrap()
            .insert("seq", Value::from(99));
        assert_eq!(
            Authority::new(init(forged)).unwrap_err().to_string(),
            "checkpoint hash mismatch"
        );
        let mut unsigned = (*cp).clone();
        unsigned
            .as_object_mut()
            .unwrap()
            .remove("checkpoint_signature");
        assert_eq!(
            Authority::new(init(unsigned)).unwrap_err().to_string(),
            "checkpoint signature is missing"
        );
    }

    /// State, view and events nested `d`/`e` levels deep, as in an
    /// experiment with the reference (its outcomes are the expectations).
    struct Deep(usize);

    fn nested(k: usize) -> Value {
        (0..k).fold(Value::from(1), |v, _| Value::Array(vec![v]))
    }

    impl GroupHooks for Deep {
        fn initial_state(&mut self, _: &[Value]) -> std::result::Result<Value, String> {
            Ok(object([("deep", Value::from(0))]))
        }

        fn handle(
            &mut self,
            mut state: Value,
            _: &Value,
            action: &Value,
        ) -> std::result::Result<Value, String> {
            let d = action.get("d").and_then(Value::as_i64).unwrap_or(0) as usize;
            if let Value::Object(m) = &mut state {
                m.insert("deep", nested(d));
            }
            let events = match action.get("e").and_then(Value::as_i64) {
                Some(e) => vec![nested(e as usize)],
                None => vec![],
            };
            Ok(result(state, events))
        }

        fn view(&mut self, state: &Value, _: &Value) -> std::result::Result<Value, String> {
            Ok(object([
                ("deep", state.get("deep").cloned().unwrap_or(Value::Null)),
                ("pad", Value::from("x".repeat(self.0))),
            ]))
        }
    }

    #[test]
    fn nesting_limits_inside_envelopes_match_the_reference() {
        for pad in [0, 3000] {
            for d in 9..17i64 {
                for e in [None, Some(14i64), Some(15)] {
                    let mut a = Authority::new(AuthorityInit {
                        config: config(),
                        hooks: Box::new(Deep(pad)),
                        protocol_name: "Deep".into(),
                        group_id: "g".into(),
                        keys: key(0),
                        leader_epoch: 0,
                        membership_version: 1,
                        members: vec![member(0), member(1)],
                        checkpoint: None,
                    })
                    .unwrap();
                    let mut action = Map::new();
                    action.insert("d", Value::from(d));
                    if let Some(e) = e {
                        action.insert("e", Value::from(e));
                    }
                    let got = a.apply_input(&key(0).public_key, 1, &Value::Object(action));
                    let case = format!("pad {pad}, d {d}, e {e:?}");
                    if d <= 13 && e != Some(15) {
                        let (envs, _) = got.unwrap_or_else(|err| panic!("{case}: {err}"));
                        let env = envs.values().next().unwrap();
                        let want = if pad == 0 { "full" } else { "delta" };
                        assert_eq!(env.get_str("view_mode"), Some(want), "{case}");
                        assert_eq!(env.get_str("checkpoint_mode"), Some("delta"), "{case}");
                    } else {
                        assert_eq!(
                            got.unwrap_err().to_string(),
                            "JSON nesting exceeds the group protocol limit",
                            "{case}"
                        );
                        assert_eq!(a.seq(), 0, "{case}: nothing changed");
                    }
                }
            }
        }
    }

    #[test]
    fn history_is_bounded() {
        let mut a = room(2);
        for n in 1..=300 {
            say(&mut a, 1, n, "m");
        }
        assert_eq!(a.history.len(), MAX_CHECKPOINT_HISTORY);
        assert_eq!(a.history.keys().next(), Some(&(300 - 255)));
        assert!(!a.acknowledge(&key(1).public_key, 10, "x", None));
    }
}
