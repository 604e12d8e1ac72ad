//! Native hooks for the bundled protocols: the same messages and rules as
//! the reference's hooks, written in Rust, with automatic play that follows
//! the strategy.json conventions so two bots always finish a game.
//!
//! Strategy shapes each protocol reads (strategy.json):
//! - rps-v1, coin-flip-v1: `{"mode":"fixed","fixed":"rock"}`,
//!   `{"mode":"seq","sequence":["rock","paper"]}`, `{"mode":"random"}`,
//!   `{"mode":"policy","policy":"mirror_previous_opponent" |
//!   "counter_previous_opponent" | "repeat_own_previous"}` (coin flip: mirror
//!   only). Without a mode, a choice in `operator_hint` plays.
//! - weak-wins-all: `{"mode":"fixed","bid":N}`, `{"mode":"seq","sequence":[…]}`,
//!   `{"mode":"percent","percent":P}` (P % of what is left), `{"mode":"random"}`,
//!   `{"mode":"even"}` (spread the points evenly; the default, where a number
//!   in `operator_hint` is the bid).
//! - guess-number-v1: `{"mode":"bisect"}` (default), `{"mode":"fixed","number":N}`,
//!   `{"mode":"seq","sequence":[…]}`.
//! - gomoku-v1, connect4-v1, reversi-v1: `{"mode":"greedy"}` (default: win,
//!   block, then the best-scoring move) or `{"mode":"random"}` (any legal move).
//! - hero-duel-v1: `{"mode":"fixed","move":"ult"}`, `{"mode":"seq","sequence":[…]}`,
//!   `{"mode":"greedy"}` (default: the strongest affordable move).
//! - crazy-eights-v1, briscola-v1: none (fixed heuristics, as the reference).
//! - trusted-agent-task-v1: none (a service: the options `collab_task_id`
//!   and `collab_data_dir` shape it, see `task`).

pub mod board;
pub mod cards;
mod chat;
mod choice;
mod guess;
mod hero;
pub mod rooms;
pub mod tables;
pub mod tank;
pub mod task;
mod weak;

pub use rooms::{GROUP_NATIVE, group_hooks_by_id, group_hooks_for_alias, group_host_metadata};

use crate::engine::Hooks;
use crate::json::{Map, Value};
use crate::library::Library;
use crate::spec::Spec;

/// Native hooks for a spec, when palaver ships them for its protocol_id.
pub fn native_hooks(spec: &Spec) -> Option<Box<dyn Hooks>> {
    let lib = Library::bundled();
    let entry = lib
        .entries()
        .iter()
        .find(|e| e.protocol_id == spec.protocol_id())?;
    native_hooks_for_alias(&entry.alias)
}

/// Native hooks for a protocol_id of a bundled protocol.
pub fn native_hooks_by_id(protocol_id: &str) -> Option<Box<dyn Hooks>> {
    let lib = Library::bundled();
    let entry = lib
        .entries()
        .iter()
        .find(|e| e.protocol_id == protocol_id)?;
    native_hooks_for_alias(&entry.alias)
}

/// Does palaver have its own rules for this protocol (a two-party game or
/// service, a room or a table)? Without them it can still run a protocol
/// whose hooks are a program (`--hooks`), but not a bundled one alone.
pub fn plays_natively(protocol_id: &str) -> bool {
    native_hooks_by_id(protocol_id).is_some()
        || rooms::group_hooks_by_id(protocol_id, &crate::json::Map::new()).is_some()
}

/// Native hooks by bundled alias.
pub fn native_hooks_for_alias(alias: &str) -> Option<Box<dyn Hooks>> {
    Some(match alias {
        "rps-v1" => Box::new(choice::ChoiceGame::rps()),
        "coin-flip-v1" => Box::new(choice::ChoiceGame::coin()),
        "guess-number-v1" => Box::new(guess::GuessNumber::default()),
        "human-chat-v1" => Box::new(chat::HumanChat::default()),
        "weak-wins-all" => Box::new(weak::WeakWins::default()),
        "gomoku-v1" => Box::new(board::BoardGame::new(board::Kind::Gomoku)),
        "connect4-v1" => Box::new(board::BoardGame::new(board::Kind::Connect4)),
        "reversi-v1" => Box::new(board::BoardGame::new(board::Kind::Reversi)),
        "hero-duel-v1" => Box::new(hero::HeroDuel::default()),
        "crazy-eights-v1" => Box::new(cards::CrazyEights::default()),
        "briscola-v1" => Box::new(cards::Briscola::default()),
        "trusted-agent-task-v1" => Box::new(task::TrustedAgentTask::default()),
        tank::hooks::ALIAS => Box::new(tank::hooks::TankBattle::default()),
        _ => return None,
    })
}

/// Aliases with native hooks.
pub const NATIVE: [&str; 13] = [
    "rps-v1",
    "coin-flip-v1",
    "guess-number-v1",
    "human-chat-v1",
    "weak-wins-all",
    "gomoku-v1",
    "connect4-v1",
    "reversi-v1",
    "hero-duel-v1",
    "crazy-eights-v1",
    "briscola-v1",
    "trusted-agent-task-v1",
    "tank-battle-v1",
];

/// Python's `int(options.get(key) or default)` for an integer option.
pub(crate) fn opt_int(options: &Map, key: &str, default: i64) -> i64 {
    match options.get(key) {
        Some(v) if v.truthy() => as_int(v).unwrap_or(default),
        _ => default,
    }
}

/// A JSON value as an integer the way `int()` would take it (ints, integral
/// floats, bools, numeric strings).
pub(crate) fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(crate::json::Number::Int(i)) => Some(*i),
        Value::Number(crate::json::Number::Float(f)) if f.is_finite() => Some(f.trunc() as i64),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An integer field of a frame (schema-validated frames always have it).
pub(crate) fn int_field(m: &Map, key: &str) -> i64 {
    m.get(key).and_then(as_int).unwrap_or(0)
}

pub(crate) fn str_field<'a>(m: &'a Map, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `{"summary": s, "structured": structured}` for snapshot `last_event`.
pub(crate) fn last_event(summary: impl Into<String>, structured: Map) -> Value {
    Value::Object(crate::obj! { "summary" => summary.into(), "structured" => structured })
}

/// Emits `strategy_applied {round, strategy, result}`.
/// Runs the strategy's policy script for window `round` (strategy mode
/// `script`): `context` is the protocol's (None: nothing to decide from
/// yet), `accept` turns the script's decision into the window's value or
/// refuses it. The outcome is recorded — `policy_generated`, or
/// `policy_failed` / `policy_timeout` with the reason — and `None` means
/// the automatic choice stands in.
pub(crate) async fn run_policy_script(
    ctx: &crate::engine::Ctx,
    round: u64,
    context: Option<Map>,
    schema: Map,
    accept: impl Fn(&Map) -> Option<Value>,
) -> Option<Value> {
    use crate::engine::policy_script;
    let strat = ctx.strategy.get();
    let id = policy_script::script_id(&strat)?.to_owned();
    let fail = |kind: &'static str, reason: &str, detail: Option<String>| {
        ctx.emit(
            kind,
            crate::obj! { "match_key" => "round", "match_value" => round, "reason" => reason, "script_id" => id.as_str(),
                "detail" => detail.map(Value::from).unwrap_or(Value::Null) },
            Some(format!("Policy script {id}: {reason}; the automatic choice plays")),
        );
    };
    let Some(context) = context else {
        fail("policy_failed", "unsupported_context", None);
        return None;
    };
    let dir = ctx.sink.state_dir();
    match policy_script::run(dir.as_deref(), &strat, &schema, &context).await {
        Ok(p) => match accept(&p.decision) {
            Some(v) => {
                ctx.emit(
                    "policy_generated",
                    crate::obj! { "match_key" => "round", "match_value" => round, "decision" => p.decision.clone(),
                        "origin" => "script_runner", "script_id" => id.as_str(),
                        "reason" => p.reason.clone().map(Value::from).unwrap_or(Value::Null) },
                    Some(format!("Policy script {id} chose {}", v.py_str())),
                );
                strategy_applied(ctx, round, &strat, v.clone());
                Some(v)
            }
            None => {
                let text = crate::json::canonical::to_string_ordered(&Value::Object(p.decision));
                fail("policy_failed", "illegal_decision", Some(text));
                None
            }
        },
        Err(f) => {
            let kind = if f.reason == "policy_timeout" {
                "policy_timeout"
            } else {
                "policy_failed"
            };
            fail(kind, &f.reason, f.detail);
            None
        }
    }
}

pub(crate) fn strategy_applied(
    ctx: &crate::engine::Ctx,
    round: u64,
    strategy: &Map,
    result: Value,
) {
    ctx.emit(
        "strategy_applied",
        crate::obj! { "round" => round, "strategy" => strategy.clone(), "result" => result },
        None,
    );
}
