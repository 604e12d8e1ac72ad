//! A hooks program as a realtime protocol's rules: each `RealtimeRules`
//! method is one `realtime_*` hook call (docs/hooks.md, Realtime hooks).

use super::ExternalHooks;
use crate::engine::HookError;
use crate::engine::Role;
use crate::engine::realtime::{RealtimeRules, RulesError, Stepped};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

/// A realtime hook's failure as the rules' error.
fn rules_error(e: HookError) -> RulesError {
    RulesError(e.to_string())
}

/// `{state, events, outcome}` from a program, checked.
fn stepped_of(hook: &str, v: Value) -> Result<Stepped, RulesError> {
    let Value::Object(mut m) = v else {
        return Err(RulesError(format!(
            "`{hook}` returned {} instead of {{state, events, outcome}}",
            v.type_name()
        )));
    };
    let state = match m.remove("state") {
        Some(s @ Value::Object(_)) => s,
        _ => {
            return Err(RulesError(format!("`{hook}` returned no `state` object")));
        }
    };
    let events = match m.remove("events") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::Array(list)) if list.iter().all(|e| e.as_object().is_some()) => {
            Value::Array(list)
        }
        Some(_) => {
            return Err(RulesError(format!(
                "`{hook}` returned `events` that are not a list of objects"
            )));
        }
    };
    let outcome = match m.get("outcome") {
        None | Some(Value::Null) => "none",
        Some(o) => crate::engine::realtime::OUTCOMES
            .iter()
            .copied()
            .find(|k| o.as_str() == Some(*k))
            .ok_or_else(|| {
                RulesError(format!(
                    "`{hook}` returned the outcome {}, not none, host, guest or draw",
                    o.py_str()
                ))
            })?,
    };
    Ok(Stepped {
        state,
        state_hash: None,
        events,
        outcome,
    })
}

/// A list of command objects from a program.
fn commands_of(hook: &str, v: Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(list) if list.iter().all(|c| c.as_object().is_some()) => Ok(list),
        other => Err(format!(
            "`{hook}` returned {} instead of a list of command objects",
            other.type_name()
        )),
    }
}

/// The realtime hooks (docs/hooks.md, Realtime hooks): each method is one
/// call; the program keeps the current state between them.
#[async_trait]
impl RealtimeRules for ExternalHooks {
    fn ruleset_hash(&self) -> Result<String, RulesError> {
        match &self.ruleset {
            Some(h) => Ok(h.clone()),
            None => crate::engine::realtime::ruleset_hash(&self.dir)
                .map_err(|e| RulesError(e.to_string())),
        }
    }

    fn present_ruleset(&mut self, hash: String) {
        self.ruleset = Some(hash);
    }

    fn broken(&self) -> Option<String> {
        self.dead.clone()
    }

    async fn initial_state(&mut self) -> Result<Stepped, RulesError> {
        let hook = "realtime_initial_state";
        let v = self
            .call(None, hook, Map::new())
            .await
            .map_err(rules_error)?;
        stepped_of(hook, v)
    }

    async fn validate_commands(
        &mut self,
        side: Role,
        commands: &Value,
        target_tick: u64,
    ) -> Result<Vec<Value>, String> {
        let hook = "realtime_validate_commands";
        let args = obj! {
            "side" => side.as_str(),
            "commands" => commands.clone(),
            "target_tick" => target_tick,
        };
        let v = self
            .call(None, hook, args)
            .await
            .map_err(|e| e.to_string())?;
        // `{"rejected": why}` is the protocol refusing the batch (the
        // reason the peer is told); `{"accepted": [...]}` or a bare list
        // the normalised batch.
        if let Value::Object(m) = &v {
            if let Some(why) = m.get("rejected") {
                return Err(why
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| why.py_str()));
            }
            if let Some(list) = m.get("accepted") {
                return commands_of(hook, list.clone());
            }
        }
        commands_of(hook, v)
    }

    async fn step(
        &mut self,
        tick: u64,
        host: &[Value],
        guest: &[Value],
    ) -> Result<Stepped, RulesError> {
        let hook = "realtime_step";
        let args = obj! {
            "tick" => tick,
            "host" => Value::Array(host.to_vec()),
            "guest" => Value::Array(guest.to_vec()),
        };
        let v = self.call(None, hook, args).await.map_err(rules_error)?;
        stepped_of(hook, v)
    }

    async fn observe(&mut self, state: &Value) -> Result<(), RulesError> {
        self.call(None, "realtime_observe", obj! { "state" => state.clone() })
            .await
            .map(|_| ())
            .map_err(rules_error)
    }

    async fn commands(
        &mut self,
        side: Role,
        target_tick: u64,
        strategy: &Map,
    ) -> Result<Vec<Value>, String> {
        let hook = "realtime_commands";
        let args = obj! {
            "side" => side.as_str(),
            "target_tick" => target_tick,
            "strategy" => strategy.clone(),
        };
        let v = self
            .call(None, hook, args)
            .await
            .map_err(|e| e.to_string())?;
        commands_of(hook, v)
    }

    async fn audit_outcome(&mut self, frame: &Map) -> Map {
        let hook = "realtime_audit_outcome";
        match self
            .call(None, hook, obj! { "frame" => frame.clone() })
            .await
        {
            Ok(Value::Object(m)) if m.get("status").and_then(Value::as_str).is_some() => m,
            Ok(other) => obj! {
                "status" => "failed",
                "check" => "hooks_program",
                "error" => format!("`{hook}` returned {} without a status", other.type_name()),
            },
            Err(e) => obj! {
                "status" => "failed",
                "check" => "hooks_program",
                "error" => e.to_string(),
            },
        }
    }

    async fn snapshot(&mut self, state: &Value, events: &Value) -> Map {
        let args = obj! { "state" => state.clone(), "events" => events.clone() };
        match self.call(None, "realtime_snapshot", args).await {
            Ok(Value::Object(m)) => m,
            // The runtime's own keys still show the frame.
            _ => obj! { "world" => state.clone() },
        }
    }
}
