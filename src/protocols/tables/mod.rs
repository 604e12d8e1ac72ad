//! The four-seat tables on the `authoritative_group` flow: their rules as
//! [`GroupHooks`] (run by the leader, which holds every hand in the shared
//! [`deck`]), and what a seat's player or bot needs on top of them
//! ([`Table`]: the legal actions in a view, a bot's choice). Pure: no I/O.
//!
//! Built: four-player-landlord-v1 ([`landlord`]), contract-bridge-v1
//! ([`bridge`]), texas-holdem-v1 ([`holdem`]), aether-sigil-v1
//! ([`sigil`]), upgrade-tractor-v1 ([`tractor`]), classical-mahjong-v1
//! ([`mahjong`]). Each table's rules match
//! the reference's hooks.py of its protocol (tests/tables_hooks.rs drives
//! both with the same seeded actions and compares every result).

pub mod bridge;
pub mod deck;
pub mod holdem;
pub mod landlord;
pub mod mahjong;
pub mod sigil;
pub mod tractor;

use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Value};

/// What a seat needs beyond the rules: the legal actions it may take in
/// its own view (empty when it is not its turn), a bot's choice, and
/// whether a selection of cards is a legal play now.
pub trait Table: GroupHooks {
    /// Every action the viewer may send now, built from its view (for a
    /// climbing game, one candidate per combination shape and value).
    fn legal_actions(&self, view: &Value) -> Vec<Value>;
    /// What a bot in the viewer's seat sends now (`None`: not its turn).
    fn bot_action(&self, view: &Value) -> Option<Value>;
    /// Are these cards of the viewer's hand a legal play now?
    fn is_legal_selection(&self, view: &Value, card_ids: &[String]) -> bool;
}

/// Aliases of the tables with native rules.
pub const TABLES: [&str; 6] = [
    "four-player-landlord-v1",
    "contract-bridge-v1",
    "texas-holdem-v1",
    "aether-sigil-v1",
    "upgrade-tractor-v1",
    "classical-mahjong-v1",
];

/// The rules of a table by alias, configured by the room's options.
pub fn table_for_alias(alias: &str, options: &Map) -> Option<Box<dyn Table>> {
    Some(match alias {
        "four-player-landlord-v1" => Box::new(landlord::Landlord::new(options)),
        "contract-bridge-v1" => Box::new(bridge::Bridge::new(options)),
        "texas-holdem-v1" => Box::new(holdem::Holdem::new(options)),
        "aether-sigil-v1" => Box::new(sigil::Sigil::new(options)),
        "upgrade-tractor-v1" => Box::new(tractor::Tractor::new(options)),
        "classical-mahjong-v1" => Box::new(mahjong::Mahjong::new(options)),
        _ => return None,
    })
}

/// `proto_host_metadata` of a table.
pub fn host_metadata(alias: &str) -> Option<crate::engine::HostMetadata> {
    match alias {
        "four-player-landlord-v1" => Some(landlord::host_metadata()),
        "contract-bridge-v1" => Some(bridge::host_metadata()),
        "texas-holdem-v1" => Some(holdem::host_metadata()),
        "aether-sigil-v1" => Some(sigil::host_metadata()),
        "upgrade-tractor-v1" => Some(tractor::host_metadata()),
        "classical-mahjong-v1" => Some(mahjong::host_metadata()),
        _ => None,
    }
}

/// `{"state": state, "events": events}` from a state object.
fn hook_result(state: Map, events: Vec<Value>) -> Value {
    result_value(Value::Object(state), events)
}

fn result_value(state: Value, events: Vec<Value>) -> Value {
    crate::engine::group::hooks::result(state, events)
}

/// The reference's `_option_int` of the tables: an integer option (never a
/// bool or a float) within `min..=max`, or its default when absent.
fn option_int(
    options: &Map,
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64, HookFailure> {
    match options.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_i64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("{name} must be between {min} and {max}")),
    }
}

/// A table's `proto_group_member_joined`: one `member_rejoined` event.
fn member_rejoined(state: Value, member: &Value) -> Result<Value, HookFailure> {
    let event = crate::obj! {
        "kind" => "member_rejoined", "public_key" => member_pk(member)?, "seat" => member_seat(member),
    };
    Ok(result_value(state, vec![Value::Object(event)]))
}

/// A table's `proto_group_member_left`: one `member_disconnected` event.
fn member_disconnected(state: Value, member: &Value, reason: &str) -> Result<Value, HookFailure> {
    let event = crate::obj! {
        "kind" => "member_disconnected", "public_key" => member_pk(member)?, "reason" => reason,
    };
    Ok(result_value(state, vec![Value::Object(event)]))
}

/// A member object's public key.
fn member_pk(member: &Value) -> Result<String, HookFailure> {
    member
        .get_str("public_key")
        .map(str::to_owned)
        .ok_or_else(|| "a member has no public_key".into())
}

/// A member object's seat, as given.
fn member_seat(member: &Value) -> Value {
    member.get("seat").cloned().unwrap_or(Value::Null)
}

/// The deal's seed: `{deal_seed}:{round}:{restarts}` with a non-empty
/// `deal_seed` option, else 24 random bytes in hex.
fn new_seed(options: &Map, round: i64, restarts: i64) -> String {
    match options.get_str("deal_seed") {
        Some(s) if !s.is_empty() => format!("{s}:{round}:{restarts}"),
        _ => hex::encode(rand::random::<[u8; 24]>()),
    }
}

/// Python's `int()` of a checkpoint value: an integer, a float truncated, a
/// bool, or a decimal string.
fn py_int(v: &Value) -> Result<i64, HookFailure> {
    match v {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("invalid literal for int() with base 10: '{s}'")),
        _ if v.is_integer() => v.as_i64().ok_or_else(|| "integer out of range".into()),
        _ => match v.as_f64() {
            Some(f) if f.is_finite() => Ok(f.trunc() as i64),
            _ => Err(format!(
                "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                v.py_type_name()
            )),
        },
    }
}

/// A table's `proto_group_on_leader_changed`: the recovery notice "Leader
/// changed from {old, 8 chars} to {new, 8 chars}; {what}." and one event
/// `{kind, old_leader, new_leader, counter: state[counter]}` (a missing
/// counter is Python's KeyError text).
fn leader_changed(
    state: Value,
    (old, new): (&str, &str),
    what: &str,
    kind: &str,
    counter: &str,
) -> Result<Value, HookFailure> {
    let Value::Object(mut state) = state else {
        return Err("the table state is not an object".into());
    };
    let short = |s: &str| s.chars().take(8).collect::<String>();
    state.insert(
        "recovery_notice",
        Value::from(format!(
            "Leader changed from {} to {}; {what}.",
            short(old),
            short(new)
        )),
    );
    let n = state
        .get(counter)
        .cloned()
        .ok_or_else(|| format!("'{counter}'"))?;
    let mut event = Map::with_capacity(4);
    event.insert("kind", Value::from(kind));
    event.insert("old_leader", Value::from(old));
    event.insert("new_leader", Value::from(new));
    event.insert(counter, n);
    Ok(hook_result(state, vec![Value::Object(event)]))
}

/// A state's integer at `key` (0 when absent or not an integer).
fn int(state: &Map, key: &str) -> i64 {
    state.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// A state's string at `key` (empty when absent).
fn text(state: &Map, key: &str) -> String {
    state.get_str(key).unwrap_or_default().to_owned()
}

/// A copy of a state's object at `key` (empty when absent).
fn obj(state: &Map, key: &str) -> Map {
    state
        .get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}
