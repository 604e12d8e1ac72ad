//! What a realtime protocol gives the runtime: its ruleset identity, the
//! initial state, the host's check of a side's commands, one tick of the
//! simulation, a side's own commands, and the guest's end-of-match audit.

use crate::engine::Role;
use crate::json::{Map, Value};
use async_trait::async_trait;

/// The rules failed (a bug or a broken rules program, never peer input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RulesError(pub String);

/// A state after a tick.
#[derive(Debug, Clone)]
pub struct Stepped {
    /// The frame's `state` (a JSON object).
    pub state: Value,
    /// `json_hash(state)` when the rules computed it already.
    pub state_hash: Option<String>,
    /// The tick's events (a JSON list of objects).
    pub events: Value,
    /// none, host, guest or draw.
    pub outcome: &'static str,
}

/// Async because a protocol's rules may be a program (a hooks.py through
/// the bridge) answering over a pipe.
#[async_trait]
pub trait RealtimeRules: Send {
    /// The ruleset hash this side presents in the handshake.
    fn ruleset_hash(&self) -> Result<String, RulesError>;

    /// Why the rules can no longer answer at all (a rules program that
    /// died), as opposed to refusing one request: the session then ends
    /// (`hook_error`) instead of playing on with empty batches.
    fn broken(&self) -> Option<String> {
        None
    }

    /// Presents `hash` instead (`--ruleset-dir`: the hash of a protocol dir
    /// whose rules these are known to match, e.g. the reference's).
    fn present_ruleset(&mut self, hash: String);

    /// The state at tick 0 (host).
    async fn initial_state(&mut self) -> Result<Stepped, RulesError>;

    /// The host's check of `side`'s batch for `target_tick` against the
    /// current state: the normalised list, or why it is refused.
    async fn validate_commands(
        &mut self,
        side: Role,
        commands: &Value,
        target_tick: u64,
    ) -> Result<Vec<Value>, String>;

    /// Advances the current state by one tick with both sides' accepted
    /// commands (host).
    async fn step(
        &mut self,
        tick: u64,
        host: &[Value],
        guest: &[Value],
    ) -> Result<Stepped, RulesError>;

    /// A verified frame's state becomes the current state (guest).
    async fn observe(&mut self, state: &Value) -> Result<(), RulesError>;

    /// This side's own commands for `target_tick`, from the current state
    /// and its strategy; an error sends an empty batch for that tick.
    async fn commands(
        &mut self,
        side: Role,
        target_tick: u64,
        strategy: &Map,
    ) -> Result<Vec<Value>, String>;

    /// The guest's check of the final frame (`status` passed or failed).
    async fn audit_outcome(&mut self, frame: &Map) -> Map;

    /// What the session snapshot shows for a frame (merged over the
    /// runtime's own keys).
    async fn snapshot(&mut self, state: &Value, events: &Value) -> Map;
}
