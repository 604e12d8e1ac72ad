//! Frames and command messages, and the checks a guest makes of every
//! frame: the exact key set, tick continuity, the state hash, both previous
//! hashes and the chain hash. Nothing here re-runs the game.

use crate::json::{Map, Value};
use crate::obj;

/// The previous hashes of the first frame.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A frame's outcome: still playing, or who won.
pub const OUTCOMES: [&str; 4] = ["none", "host", "guest", "draw"];

/// SHA-256 hex of a value's canonical JSON (the reference's `json_hash`).
pub fn json_hash(v: &Value) -> String {
    crate::json::canonical::sha256_hex(crate::json::canonical::to_vec(v))
}

/// Why a frame fails the guest's check (the reference's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("real-time frame has missing or unknown fields")]
    Fields,
    #[error("real-time frame tick is invalid")]
    Tick,
    #[error("real-time frame tick discontinuity: expected {expected}, got {got}")]
    Discontinuity { expected: u64, got: u64 },
    #[error("real-time frame state must be an object")]
    State,
    #[error("real-time frame state_hash mismatch")]
    StateHash,
    #[error("real-time frame prev_state_hash mismatch")]
    PrevStateHash,
    #[error("real-time frame prev_chain_hash mismatch")]
    PrevChainHash,
    #[error("real-time frame outcome is invalid")]
    Outcome,
    #[error("real-time frame events/commands shape is invalid")]
    Shape,
    #[error("real-time frame chain_hash mismatch")]
    ChainHash,
}

const FIELDS: [&str; 10] = [
    "tick",
    "state",
    "state_hash",
    "prev_state_hash",
    "prev_chain_hash",
    "chain_hash",
    "applied_commands",
    "events",
    "outcome",
    "host_time_ns",
];

/// The eight fields the chain hash covers, in the reference's order.
fn core(frame: &Map) -> Map {
    let mut m = Map::with_capacity(8);
    for k in [
        "tick",
        "state_hash",
        "prev_state_hash",
        "prev_chain_hash",
        "applied_commands",
        "events",
        "outcome",
        "host_time_ns",
    ] {
        m.insert(k, frame.get(k).cloned().unwrap_or(Value::Null));
    }
    m
}

/// The chain hash of a frame's eight core fields.
pub fn frame_core_hash(frame: &Map) -> String {
    json_hash(&Value::Object(core(frame)))
}

/// Nanoseconds since the epoch (the reference's `time.time_ns()`).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Builds a frame. `state_hash` may be given when the rules already know
/// it (it must be `json_hash(state)`); `previous` is the frame before.
pub fn make_frame(
    tick: u64,
    state: Value,
    state_hash: Option<String>,
    previous: Option<&Map>,
    applied_commands: Map,
    events: Value,
    outcome: &str,
) -> Map {
    let state_hash = state_hash.unwrap_or_else(|| json_hash(&state));
    let prev = |k: &str| {
        previous
            .and_then(|p| p.get(k))
            .cloned()
            .unwrap_or_else(|| Value::from(ZERO_HASH))
    };
    let mut frame = obj! {
        "tick" => tick as i64,
        "state_hash" => state_hash,
        "prev_state_hash" => prev("state_hash"),
        "prev_chain_hash" => prev("chain_hash"),
        "applied_commands" => Value::Object(applied_commands),
        "events" => events,
        "outcome" => outcome,
        "host_time_ns" => now_ns(),
    };
    let chain = json_hash(&Value::Object(frame.clone()));
    frame.insert("state", state);
    frame.insert("chain_hash", Value::from(chain));
    frame
}

/// The guest's check of `frame` after `previous` (None: the first frame).
pub fn verify_frame(frame: &Map, previous: Option<&Map>) -> Result<(), FrameError> {
    if frame.len() != FIELDS.len() || FIELDS.iter().any(|k| !frame.contains_key(k)) {
        return Err(FrameError::Fields);
    }
    let tick = frame
        .get("tick")
        .and_then(Value::as_i64)
        .filter(|t| *t >= 0)
        .ok_or(FrameError::Tick)? as u64;
    let expected = previous
        .and_then(|p| p.get("tick"))
        .and_then(Value::as_i64)
        .map_or(0, |t| t as u64 + 1);
    if tick != expected {
        return Err(FrameError::Discontinuity {
            expected,
            got: tick,
        });
    }
    let Some(state) = frame.get("state").filter(|s| s.as_object().is_some()) else {
        return Err(FrameError::State);
    };
    if frame.get("state_hash").and_then(Value::as_str) != Some(json_hash(state).as_str()) {
        return Err(FrameError::StateHash);
    }
    let prev = |k: &str| {
        previous
            .and_then(|p| p.get(k))
            .cloned()
            .unwrap_or_else(|| Value::from(ZERO_HASH))
    };
    if frame.get("prev_state_hash") != Some(&prev("state_hash")) {
        return Err(FrameError::PrevStateHash);
    }
    if frame.get("prev_chain_hash") != Some(&prev("chain_hash")) {
        return Err(FrameError::PrevChainHash);
    }
    if !frame
        .get("outcome")
        .and_then(Value::as_str)
        .is_some_and(|o| OUTCOMES.contains(&o))
    {
        return Err(FrameError::Outcome);
    }
    if frame.get("events").and_then(Value::as_array).is_none()
        || frame
            .get("applied_commands")
            .and_then(Value::as_object)
            .is_none()
    {
        return Err(FrameError::Shape);
    }
    if frame.get("chain_hash").and_then(Value::as_str) != Some(frame_core_hash(frame).as_str()) {
        return Err(FrameError::ChainHash);
    }
    Ok(())
}

/// An `rt_command` with its hash over `{seq, target_tick, commands}`.
pub fn command_message(seq: u64, target_tick: u64, commands: Vec<Value>) -> Map {
    let commands = Value::Array(commands);
    let hash = json_hash(&Value::Object(obj! {
        "seq" => seq as i64,
        "target_tick" => target_tick as i64,
        "commands" => commands.clone(),
    }));
    obj! {
        "action" => "rt_command",
        "seq" => seq as i64,
        "target_tick" => target_tick as i64,
        "commands" => commands,
        "command_hash" => hash,
    }
}

/// The applied entry of a side that had no commands for `tick`.
pub fn empty_applied(side: &str, tick: u64) -> Value {
    let hash = json_hash(&Value::Object(obj! {
        "seq" => Value::Null,
        "target_tick" => tick as i64,
        "commands" => Value::Array(Vec::new()),
    }));
    Value::Object(obj! {
        "side" => side,
        "seq" => Value::Null,
        "target_tick" => tick as i64,
        "commands" => Value::Array(Vec::new()),
        "command_hash" => hash,
    })
}

/// The applied entry of a side's accepted command message.
pub fn applied(side: &str, message: &Map) -> Value {
    let get = |k: &str| message.get(k).cloned().unwrap_or(Value::Null);
    Value::Object(obj! {
        "side" => side,
        "seq" => get("seq"),
        "target_tick" => get("target_tick"),
        "commands" => get("commands"),
        "command_hash" => get("command_hash"),
    })
}
