//! Sending a whisper to a session side: the whisper line, the operator_hint
//! in strategy.json, and what the text was understood as put where the
//! engine reads it (the reference's materialize step):
//!
//! | understood as                 | written                                  | ack               |
//! |-------------------------------|------------------------------------------|-------------------|
//! | persistent value              | strategy `{mode: fixed, <field>: v}`     | strategy_active   |
//! | persistent policy             | strategy `{mode: policy, policy, …}`     | policy_active     |
//! | one-shot, this window         | decision for the open window             | decision_queued   |
//! | one-shot, next window         | decision for the open window + 1         | decision_queued   |
//! | one-shot policy / no window   | intervention_intents.jsonl               | intent_queued     |
//! | a closed window               | nothing                                  | rejected_finalized|
//! | nothing recognised            | nothing                                  | unparsed          |
//!
//! Every strategy and decision written carries the whisper's id in its
//! `_meta.caused_by_whisper_id`, which is how a running session tells the
//! whisper took effect ([`super::whisper_log::AckObserver`]).

use super::decision::{SubmitOptions, is_finalized, submit_caused_by};
use super::files;
use super::strategy::StrategyFile;
use super::whisper_log::{AckOptions, IntentOrigin, IntentStore, WhisperLog, py_dumps};
use crate::engine::whisper::{Intent, Schema, Scope, TargetWindow, parse_intent};
use crate::json::{Map, Value};
use crate::obj;
use std::io;
use std::path::Path;

/// The longest whisper accepted, in characters (the reference's web limit).
pub const MAX_TEXT_CHARS: usize = 2000;

/// The decision window a whisper is read against.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowNow {
    pub match_key: String,
    pub match_value: Value,
}

/// Python's `int(x)` for a snapshot's `round`, or `None` where it raises.
fn py_int(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(crate::json::Number::Int(i)) => Some(*i),
        Value::Number(crate::json::Number::Float(f)) if f.is_finite() => {
            let t = f.trunc();
            (t.abs() < 9.0e18).then_some(t as i64)
        }
        Value::String(s) => s.trim().replace('_', "").parse::<i64>().ok(),
        _ => None,
    }
}

/// The open window: the schema's match key (else `round`) at the
/// snapshot's round (1-based there, 0-based here), both overridden by
/// decision/state.json when it names them.
pub fn window_now(child: &Path, schema: Option<&Schema>) -> WindowNow {
    let mut key = schema
        .and_then(|s| s.match_key)
        .unwrap_or("round")
        .to_owned();
    let round = files::read_json_object(&child.join("snapshot.json"))
        .and_then(|s| s.get("round").cloned())
        .filter(|r| !r.is_null());
    let mut value = Value::from(match round {
        Some(r) => py_int(&r).map_or(0, |r| r.saturating_sub(1).max(0)),
        None => 0,
    });
    if let Some(st) = files::read_json_object(&child.join("decision").join("state.json")) {
        if let Some(k) = st
            .get("match_key")
            .filter(|k| k.truthy())
            .and_then(Value::as_str)
        {
            key = k.to_owned();
        }
        if let Some(v) = st.get("match_value").filter(|v| !v.is_null()) {
            value = v.clone();
        }
    }
    WindowNow {
        match_key: key,
        match_value: value,
    }
}

/// What materializing an intent came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Materialized {
    pub ack_status: &'static str,
    /// `{type: strategy|policy|decide|intent, …}`.
    pub applied: Option<Map>,
    pub detail: Value,
}

/// Who is materializing.
#[derive(Debug, Clone)]
pub struct MaterializeBy<'a> {
    pub origin: &'a str,
    pub agent_id: Option<&'a str>,
    pub whisper_id: Option<&'a str>,
}

fn meta(by: &MaterializeBy<'_>) -> Map {
    let opt = |o: Option<&str>| o.map(Value::from).unwrap_or(Value::Null);
    obj! { "origin" => by.origin, "agent_id" => opt(by.agent_id), "caused_by_whisper_id" => opt(by.whisper_id) }
}

fn queue_intent(
    child: &Path,
    intent: &Intent,
    by: &MaterializeBy<'_>,
    window: &WindowNow,
    current: &Value,
) -> Materialized {
    let opt = |m: Option<Map>| m.map(Value::Object).unwrap_or(Value::Null);
    let fields = obj! {
        "scope" => intent.scope.as_str(), "target_policy" => intent.target.as_str(),
        "value" => opt(intent.value_object()), "policy" => opt(intent.policy_object()),
        "created_match_key" => window.match_key.as_str(), "created_match_value" => current.clone(),
        "ttl_windows" => 3,
    };
    let origin = IntentOrigin {
        origin: by.origin,
        agent_id: by.agent_id,
        whisper_id: by.whisper_id,
    };
    match IntentStore::in_dir(child).append(fields, &origin) {
        Ok(rec) => Materialized {
            ack_status: "intent_queued",
            applied: Some(
                obj! { "type" => "intent", "intent_id" => rec.get("intent_id").cloned().unwrap_or(Value::Null) },
            ),
            detail: Value::Object(rec),
        },
        Err(_) => Materialized {
            ack_status: "error",
            applied: None,
            detail: Value::from("intent_store_failed"),
        },
    }
}

fn submitted_json(s: &super::Submitted) -> Value {
    let opt_s = |o: Option<&str>| o.map(Value::from).unwrap_or(Value::Null);
    Value::Object(obj! {
        "ok" => s.ok, "status" => s.status, "reason" => opt_s(s.reason),
        "match_key" => opt_s(s.match_key.as_deref()),
        "match_value" => s.match_value.clone().unwrap_or(Value::Null),
        "decision_id" => opt_s(s.decision_id.as_deref()),
    })
}

fn decide(
    child: &Path,
    window: &WindowNow,
    match_value: Value,
    intent: &Intent,
    by: &MaterializeBy<'_>,
    finalized_status: &'static str,
) -> io::Result<Materialized> {
    let mut body = Map::new();
    body.insert(window.match_key.as_str(), match_value.clone());
    if let Some((f, v)) = &intent.value {
        body.insert(f.as_str(), v.clone());
    }
    let opts = SubmitOptions {
        origin: by.origin.to_owned(),
        agent_id: by.agent_id.map(str::to_owned),
        idempotency_key: None,
        require_match_key: true,
    };
    let res = submit_caused_by(child, body, &opts, by.whisper_id)?;
    if res.ok {
        return Ok(Materialized {
            ack_status: "decision_queued",
            applied: Some(obj! {
                "type" => "decide", "match_key" => window.match_key.as_str(), "match_value" => match_value,
                "decision_id" => res.decision_id.clone().map(Value::from).unwrap_or(Value::Null),
            }),
            detail: submitted_json(&res),
        });
    }
    let status = if res.reason == Some("decision_finalized") {
        finalized_status
    } else {
        "error"
    };
    Ok(Materialized {
        ack_status: status,
        applied: None,
        detail: submitted_json(&res),
    })
}

/// Puts an intent where the engine reads it (see the module table).
pub fn materialize(
    child: &Path,
    intent: &Intent,
    by: &MaterializeBy<'_>,
    window: &WindowNow,
    schema: Option<&Schema>,
) -> io::Result<Materialized> {
    let unparsed = Materialized {
        ack_status: "unparsed",
        applied: None,
        detail: Value::Null,
    };
    let current = &window.match_value;
    match intent.scope {
        Scope::Persist => {
            let strat = StrategyFile::in_dir(child);
            if let Some(mut payload) = intent.policy_object() {
                payload.insert("_meta", Value::Object(meta(by)));
                strat.merge(payload.clone(), None)?;
                return Ok(Materialized {
                    ack_status: "policy_active",
                    applied: Some(
                        obj! { "type" => "policy", "policy" => intent.policy.unwrap_or_default() },
                    ),
                    detail: Value::Object(payload),
                });
            }
            let Some((_, v)) = &intent.value else {
                return Ok(unparsed);
            };
            let value_field = schema.and_then(|s| s.value_field).unwrap_or("choice");
            let field = schema.and_then(|s| s.strategy_field).unwrap_or(value_field);
            let payload = obj! { "mode" => "fixed", field => v.clone(), "_meta" => meta(by) };
            strat.merge(payload.clone(), None)?;
            Ok(Materialized {
                ack_status: "strategy_active",
                applied: Some(obj! { "type" => "strategy", "payload" => payload.clone() }),
                detail: Value::Object(payload),
            })
        }
        Scope::Once if intent.policy.is_some() => {
            Ok(queue_intent(child, intent, by, window, current))
        }
        Scope::Once if intent.value.is_some() => match intent.target {
            TargetWindow::Current => {
                if current.is_null() {
                    return Ok(queue_intent(child, intent, by, window, current));
                }
                if is_finalized(&child.join("decision"), &window.match_key, current) {
                    return Ok(Materialized {
                        ack_status: "rejected_finalized",
                        applied: None,
                        detail: Value::from(format!(
                            "window {}={} finalized",
                            window.match_key,
                            current.py_str()
                        )),
                    });
                }
                decide(
                    child,
                    window,
                    current.clone(),
                    intent,
                    by,
                    "rejected_finalized",
                )
            }
            TargetWindow::Next => {
                let now = match current {
                    Value::Bool(b) => Some(i64::from(*b)),
                    v => v.as_i64(),
                };
                match now.and_then(|n| n.checked_add(1)) {
                    Some(next) => decide(child, window, Value::from(next), intent, by, "error"),
                    None => Ok(queue_intent(child, intent, by, window, current)),
                }
            }
            TargetWindow::Persist => Ok(queue_intent(child, intent, by, window, current)),
        },
        Scope::Once => Ok(unparsed),
    }
}

/// The whole of one whisper.
#[derive(Debug, Clone)]
pub struct Whispered {
    /// The whispers.jsonl line.
    pub entry: Map,
    /// What the text was understood as (user whispers only).
    pub intent: Option<Intent>,
    /// `unparsed` for an unrecognised text or a non-user whisper.
    pub ack_status: &'static str,
    pub applied: Option<Map>,
    /// The ack line written (user whispers only).
    pub ack: Option<Map>,
}

/// Records a whisper in `child` and, for a user whisper, steers the side:
/// operator_hint, then the materialized intent, then the ack.
pub fn send(
    child: &Path,
    text: &str,
    role: &str,
    origin: &str,
    agent_id: Option<&str>,
    schema: Option<&Schema>,
) -> io::Result<Whispered> {
    let text = crate::engine::whisper::py_trim(text);
    if text.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the whisper is empty",
        ));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the whisper is longer than {MAX_TEXT_CHARS} characters"),
        ));
    }
    let log = WhisperLog::in_dir(child);
    let entry = log.append(role, text, origin, agent_id)?;
    let mut out = Whispered {
        entry,
        intent: None,
        ack_status: "unparsed",
        applied: None,
        ack: None,
    };
    if role != "user" {
        return Ok(out);
    }
    let id = out
        .entry
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    StrategyFile::in_dir(child).merge(obj! { "operator_hint" => text }, None)?;
    let window = window_now(child, schema);
    out.intent = parse_intent(text, schema);
    if let Some(intent) = &out.intent {
        let by = MaterializeBy {
            origin: "whisper_bridge",
            agent_id,
            whisper_id: Some(&id),
        };
        let m = materialize(child, intent, &by, &window, schema)?;
        out.ack_status = m.ack_status;
        out.applied = m.applied;
    }
    let opts = AckOptions {
        action: out
            .applied
            .as_ref()
            .and_then(|a| a.get("type"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        detail: out
            .applied
            .as_ref()
            .map(|a| Value::from(py_dumps(&Value::Object(a.clone())))),
        ..AckOptions::default()
    };
    out.ack = Some(log.append_ack(&id, out.ack_status, &opts)?);
    Ok(out)
}
