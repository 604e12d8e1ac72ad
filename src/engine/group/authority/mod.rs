//! The leader's side of a room: the one state, the ordered actions, and
//! for every frame one signed, personalised envelope per active member.
//!
//! [`Authority`] computes what the reference's `GroupAuthority` computes,
//! byte for byte, but writes no file: each frame it builds leaves a
//! [`FrameRecord`] (taken with [`Authority::take_records`]) holding what
//! the runtime writes to the state dir. A step that fails changes nothing,
//! so a refused action leaves the room exactly as it was.

mod build;
mod envelope;
mod restore;
#[cfg(test)]
mod tests;

use super::core::{
    self, GroupConfig, GroupError, Result, ZERO_HASH, member_active, member_key, member_seat,
    normalize_members, walk,
};
pub use super::frame::{Envelopes, FrameRecord};
use super::hooks::GroupHooks;
use crate::identity::KeyPair;
use crate::json::canonical::{self};
use crate::json::{Map, Number, Value};
use envelope::{Shared, ViewPart, member_envelope};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

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

/// A hook result, checked.
struct HookResult {
    state: Value,
    events: Vec<Value>,
    direct: Map,
    completed: bool,
    outcome: Option<String>,
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
    /// that continues the checkpoint's hash chain, at the checkpoint's seq
    /// + 1, as the reference's authority numbers it).
    pub fn new(init: AuthorityInit) -> Result<Authority> {
        Authority::taking_over_past(init, 0)
    }

    /// [`Authority::new`], but a room taken over starts its epoch `gap`
    /// frames further on: at the checkpoint's seq + `gap` + 1. The old
    /// leader may have sent frames past the checkpoint to other members
    /// before it died (one member after another), and a member's replica
    /// (the reference's, at least) refuses a first frame at or before its
    /// own seq as "moved backwards"; a first frame is a bootstrap, which may
    /// skip ahead, so one past every frame the old leader could have sent is
    /// taken by all. The hash chain still continues from the checkpoint.
    pub fn taking_over_past(init: AuthorityInit, gap: u64) -> Result<Authority> {
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
            Some(checkpoint) => {
                let events = a.restore(checkpoint)?;
                a.seq = a.seq.checked_add(gap).ok_or_else(|| {
                    GroupError::Value("checkpoint seq too large to take over".into())
                })?;
                events
            }
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
            Some(Value::String(s)) => Some(s.to_string()),
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
}
