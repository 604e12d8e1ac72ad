//! What a group protocol's rules look like to the authority: the
//! `proto_group_*` hooks of the reference, as one trait over JSON values.
//!
//! Every method receives its own copy of the state (the authority keeps the
//! last good state, so a hook that fails changes nothing) and returns a *hook
//! result* object `{"state", "events"?, "direct"?, "completed"?, "outcome"?}`
//! exactly as the reference's hooks return it; the authority checks its shape.
//! `Err(reason)` is the reference's `ValueError`: for `handle` it becomes a
//! `rejected` receipt carrying the reason, for the others it ends the room.

use crate::json::{Map, Value};

/// A hook's refusal, shown to the member whose action caused it.
pub type HookFailure = String;

/// The rules of one `authoritative_group` protocol, run by the leader only.
pub trait GroupHooks: Send {
    /// The whole authority state for a new room. `members` are the
    /// normalised member objects `{member_id, public_key, seat, status}`.
    fn initial_state(&mut self, members: &[Value]) -> Result<Value, HookFailure>;

    /// A newly admitted member (or one re-admitted after leaving).
    fn member_joined(&mut self, state: Value, member: &Value) -> Result<Value, HookFailure> {
        let mut event = Map::new();
        event.insert("kind", Value::from("member_joined"));
        event.insert("member", member.clone());
        Ok(result(state, vec![Value::Object(event)]))
    }

    /// A member that left or was disconnected for `reason`.
    fn member_left(
        &mut self,
        state: Value,
        member: &Value,
        reason: &str,
    ) -> Result<Value, HookFailure> {
        let mut event = Map::new();
        event.insert("kind", Value::from("member_left"));
        event.insert("member", member.clone());
        event.insert(
            "reason",
            Value::from(reason.chars().take(64).collect::<String>()),
        );
        Ok(result(state, vec![Value::Object(event)]))
    }

    /// One ordered action from `actor` (a member object).
    fn handle(&mut self, state: Value, actor: &Value, action: &Value)
    -> Result<Value, HookFailure>;

    /// What `viewer` (a member object) may see of `state`.
    fn view(&mut self, state: &Value, _viewer: &Value) -> Result<Value, HookFailure> {
        Ok(state.clone())
    }

    /// The protocol state copied into every checkpoint (what a successor
    /// leader restores from).
    fn recovery_snapshot(&mut self, state: &Value) -> Result<Value, HookFailure> {
        Ok(state.clone())
    }

    /// A new leader's state from a replicated checkpoint's `protocol_state`.
    fn restore(
        &mut self,
        protocol_state: Value,
        _members: &[Value],
        _new_epoch: u64,
    ) -> Result<Value, HookFailure> {
        Ok(protocol_state)
    }

    /// Recovery after the fencing epoch changed (`old`/`new` are public keys).
    fn on_leader_changed(
        &mut self,
        state: Value,
        old_leader: &str,
        new_leader: &str,
    ) -> Result<Value, HookFailure> {
        let mut event = Map::new();
        event.insert("kind", Value::from("leader_changed"));
        event.insert("old_leader", Value::from(old_leader));
        event.insert("new_leader", Value::from(new_leader));
        Ok(result(state, vec![Value::Object(event)]))
    }
}

/// A hook result object `{"state": state, "events": events}`.
pub fn result(state: Value, events: Vec<Value>) -> Value {
    let mut out = Map::new();
    out.insert("state", state);
    out.insert("events", Value::Array(events));
    Value::Object(out)
}
