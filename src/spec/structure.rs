//! Spec-level validation with the reference's decisions and texts: `timing`,
//! `flow` (all seven modes' structural rules) and `shadow_judge`.
//!
//! The first failing section raises, as in the reference: timing errors are
//! collected and joined with `"; "`, flow and shadow_judge stop at the first.

use crate::json::{Map, Value};

/// Flow modes the engine contract knows about.
pub const FLOW_MODES: [&str; 7] = [
    "session_loop",
    "free",
    "request_response",
    "simultaneous_round",
    "mental_poker",
    "authoritative_realtime",
    "authoritative_group",
];

const REPEAT_VALUES: [&str; 3] = ["best_of", "total_rounds", "until game_over"];

/// Runs the reference's `load_spec` checks on a spec object.
pub fn validate_structure(spec: &Map) -> Result<(), String> {
    validate_timing(spec)?;
    validate_flow(spec)?;
    if let Some(sj) = spec.get("shadow_judge")
        && !sj.is_null()
        && sj.as_bool().is_none()
    {
        return Err("shadow_judge must be a boolean when present".into());
    }
    Ok(())
}

/// Python `isinstance(v, int)`, which includes bools.
fn py_int(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Bool(_))) || v.is_some_and(Value::is_integer)
}

fn py_lt(a: &Value, b: &Value) -> bool {
    match (a.py_number(), b.py_number()) {
        (Some(x), Some(y)) => x.py_cmp(&y) == Some(std::cmp::Ordering::Less),
        _ => false,
    }
}

fn validate_timing(spec: &Map) -> Result<(), String> {
    let Some(timing) = spec.get("timing").filter(|t| !t.is_null()) else {
        return Ok(());
    };
    let Some(timing) = timing.as_object() else {
        return Err("timing must be an object".into());
    };
    let mut errors: Vec<String> = Vec::new();
    let mode_ok = matches!(
        timing.get("mode").and_then(Value::as_str),
        Some("simultaneous" | "sequential" | "none")
    );
    if !mode_ok {
        errors.push("timing.mode must be simultaneous, sequential, or none".into());
    }
    for key in ["min_think_seconds", "max_think_seconds"] {
        if let Some(v) = timing.get(key).filter(|v| !v.is_null()) {
            let ok = v.is_integer() && !py_lt(v, &Value::from(0));
            if !ok {
                errors.push(format!("timing.{key} must be a non-negative integer"));
            }
        }
    }
    let (min_s, max_s) = (
        timing.get("min_think_seconds"),
        timing.get("max_think_seconds"),
    );
    if py_int(min_s)
        && py_int(max_s)
        && let (Some(lo), Some(hi)) = (min_s, max_s)
        && py_lt(hi, lo)
    {
        errors.push("timing.max_think_seconds must be >= timing.min_think_seconds".into());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The effective flow mode with the reference's resolution rules: a missing
/// flow, a missing/null/empty mode all mean `session_loop`.
pub fn resolve_flow_mode(spec: &Map) -> Result<&'static str, String> {
    let Some(flow) = spec.get("flow").and_then(Value::as_object) else {
        return Ok("session_loop");
    };
    match flow.get("mode") {
        None | Some(Value::Null) => Ok("session_loop"),
        Some(Value::String(m)) if m.is_empty() => Ok("session_loop"),
        Some(Value::String(m)) => {
            FLOW_MODES
                .iter()
                .find(|k| **k == &**m)
                .copied()
                .ok_or_else(|| {
                    let mut sorted = FLOW_MODES;
                    sorted.sort_unstable();
                    let list: Vec<String> = sorted.iter().map(|m| format!("'{m}'")).collect();
                    format!(
                        "unsupported flow.mode: {}; current stage allows [{}]",
                        Value::from(&**m).py_repr(),
                        list.join(", ")
                    )
                })
        }
        Some(_) => Err("flow.mode must be a string".into()),
    }
}

fn validate_flow(spec: &Map) -> Result<(), String> {
    let Some(flow) = spec.get("flow").filter(|f| !f.is_null()) else {
        return Ok(());
    };
    let Some(flow) = flow.as_object() else {
        return Err("flow must be an object".into());
    };
    if flow.contains_key("mode") {
        resolve_flow_mode(spec)?;
    }
    match flow.get("mode").and_then(Value::as_str) {
        Some("simultaneous_round") => validate_simultaneous_round(flow)?,
        Some("authoritative_realtime") => validate_realtime(flow)?,
        Some("authoritative_group") => validate_group(flow)?,
        _ => {}
    }
    let Some(phases) = flow.get("phases").filter(|p| !p.is_null()) else {
        return Ok(());
    };
    let Some(phases) = phases.as_array() else {
        return Err("flow.phases must be an array".into());
    };
    for (idx, phase) in phases.iter().enumerate() {
        let Some(repeat) = phase.as_object().and_then(|p| p.get("repeat")) else {
            continue;
        };
        if !repeat.as_str().is_some_and(|r| REPEAT_VALUES.contains(&r)) {
            return Err(format!(
                "flow.phases[{idx}].repeat must be one of ['best_of', 'total_rounds', 'until game_over'], got {}",
                repeat.py_repr()
            ));
        }
    }
    Ok(())
}

fn validate_simultaneous_round(flow: &Map) -> Result<(), String> {
    let Some(round) = flow.get("round").and_then(Value::as_object) else {
        return Err("flow.round must be an object when mode=simultaneous_round".into());
    };
    if round
        .get("value_field")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("flow.round.value_field must be a non-empty string".into());
    }
    if round
        .get("value_type_ref")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("flow.round.value_type_ref must be a non-empty string".into());
    }
    Ok(())
}

/// `sorted(set(obj) - allowed)` as a Python list repr, or None when empty.
fn unknown_keys(obj: &Map, allowed: &[&str]) -> Option<String> {
    let mut unknown: Vec<&str> = obj.keys().filter(|k| !allowed.contains(k)).collect();
    if unknown.is_empty() {
        return None;
    }
    unknown.sort_unstable();
    let reprs: Vec<String> = unknown.iter().map(|k| Value::from(*k).py_repr()).collect();
    Some(format!("[{}]", reprs.join(", ")))
}

fn int_in(v: Option<&Value>, lo: i64, hi: i64) -> Option<bool> {
    let v = v?;
    if !v.is_integer() {
        return None;
    }
    Some(v.as_i64().is_some_and(|i| (lo..=hi).contains(&i)))
}

fn validate_realtime(flow: &Map) -> Result<(), String> {
    let Some(rt) = flow.get("realtime").and_then(Value::as_object) else {
        return Err("flow.realtime must be an object when mode=authoritative_realtime".into());
    };
    const RANGES: [(&str, i64, i64); 5] = [
        ("tick_rate_hz", 1, 60),
        ("input_delay_ticks", 1, 120),
        ("snapshot_every_ticks", 1, 60),
        ("max_command_lead_ticks", 1, 600),
        ("max_commands_per_frame", 1, 1024),
    ];
    let mut allowed: Vec<&str> = RANGES.iter().map(|r| r.0).collect();
    allowed.push("disconnect_policy");
    if let Some(u) = unknown_keys(rt, &allowed) {
        return Err(format!("flow.realtime has unknown fields: {u}"));
    }
    for (key, lo, hi) in RANGES {
        match int_in(rt.get(key), lo, hi) {
            None => return Err(format!("flow.realtime.{key} must be an integer")),
            Some(false) => {
                return Err(format!("flow.realtime.{key} must be between {lo} and {hi}"));
            }
            Some(true) => {}
        }
    }
    let lead = rt
        .get("max_command_lead_ticks")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let delay = rt
        .get("input_delay_ticks")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if lead < delay.max(1) {
        return Err("flow.realtime.max_command_lead_ticks must be >= input_delay_ticks".into());
    }
    if !matches!(
        rt.get("disconnect_policy").and_then(Value::as_str),
        Some("abort" | "continue")
    ) {
        return Err("flow.realtime.disconnect_policy must be 'abort' or 'continue'".into());
    }
    Ok(())
}

fn validate_group(flow: &Map) -> Result<(), String> {
    let Some(g) = flow.get("group").and_then(Value::as_object) else {
        return Err("flow.group must be an object when mode=authoritative_group".into());
    };
    let allowed = [
        "min_participants",
        "max_participants",
        "allow_late_join",
        "recovery_mode",
        "start_policy",
        "checkpoint_every_events",
        "max_action_bytes",
        "max_events_per_action",
        "peer_channels",
    ];
    if let Some(u) = unknown_keys(g, &allowed) {
        return Err(format!("flow.group has unknown fields: {u}"));
    }
    let min = g.get("min_participants").filter(|v| v.is_integer());
    let max = g.get("max_participants").filter(|v| v.is_integer());
    let Some(min) = min else {
        return Err("flow.group.min_participants must be an integer".into());
    };
    let Some(max) = max else {
        return Err("flow.group.max_participants must be an integer".into());
    };
    let bounds_ok = match (min.as_i64(), max.as_i64()) {
        (Some(lo), Some(hi)) => lo >= 2 && lo <= hi && hi <= 32,
        _ => false,
    };
    if !bounds_ok {
        return Err("flow.group participant bounds must satisfy 2 <= min <= max <= 32".into());
    }
    if g.get("allow_late_join").and_then(Value::as_bool).is_none() {
        return Err("flow.group.allow_late_join must be boolean".into());
    }
    if !matches!(
        g.get("recovery_mode").and_then(Value::as_str),
        Some("exact" | "restart_round" | "abort")
    ) {
        return Err("flow.group.recovery_mode must be exact, restart_round, or abort".into());
    }
    if !matches!(
        g.get("start_policy").and_then(Value::as_str),
        Some("min_ready" | "full" | "fixed_full")
    ) {
        return Err("flow.group.start_policy must be min_ready, full, or fixed_full".into());
    }
    for (key, lo, hi) in [
        ("checkpoint_every_events", 1, 256),
        ("max_action_bytes", 256, 65536),
        ("max_events_per_action", 1, 256),
    ] {
        let Some(v) = g.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        match int_in(Some(v), lo, hi) {
            None => return Err(format!("flow.group.{key} must be an integer")),
            Some(false) => return Err(format!("flow.group.{key} must be between {lo} and {hi}")),
            Some(true) => {}
        }
    }
    validate_peer_channels(g.get("peer_channels"))
}

fn validate_peer_channels(value: Option<&Value>) -> Result<(), String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Some(pc) = value.as_object() else {
        return Err("flow.group.peer_channels must be an object".into());
    };
    if let Some(u) = unknown_keys(pc, &["enabled", "routing", "channels", "max_message_bytes"]) {
        return Err(format!("flow.group.peer_channels has unknown fields: {u}"));
    }
    let Some(enabled) = pc.get("enabled").and_then(Value::as_bool) else {
        return Err("flow.group.peer_channels.enabled must be boolean".into());
    };
    if !enabled {
        if pc.len() != 1 {
            return Err("disabled flow.group.peer_channels must contain only enabled".into());
        }
        return Ok(());
    }
    if !matches!(
        pc.get("routing").and_then(Value::as_str),
        Some("all_members" | "hook")
    ) {
        return Err("flow.group.peer_channels.routing must be all_members or hook".into());
    }
    let channels = pc
        .get("channels")
        .and_then(Value::as_array)
        .filter(|c| (1..=16).contains(&c.len()));
    let Some(channels) = channels else {
        return Err("flow.group.peer_channels.channels must contain 1 to 16 names".into());
    };
    let mut seen: Vec<&str> = Vec::new();
    for ch in channels {
        let ok = ch.as_str().is_some_and(|s| {
            let n = s.chars().count();
            (1..=32).contains(&n)
                && s.starts_with(|c: char| c.is_ascii_lowercase())
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        });
        if !ok {
            return Err("flow.group.peer_channels channel names must be lowercase slugs".into());
        }
        let s = ch.as_str().unwrap_or_default();
        if seen.contains(&s) {
            return Err("flow.group.peer_channels channel names must be unique".into());
        }
        seen.push(s);
    }
    let max = match pc.get("max_message_bytes") {
        None => Some(true),
        Some(v) => int_in(Some(v), 256, 65536),
    };
    match max {
        None => Err("flow.group.peer_channels.max_message_bytes must be an integer".into()),
        Some(false) => {
            Err("flow.group.peer_channels.max_message_bytes must be between 256 and 65536".into())
        }
        Some(true) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn check(src: &str) -> Result<(), String> {
        validate_structure(parse_str(src).unwrap().as_object().unwrap())
    }

    #[test]
    fn timing_rules() {
        assert!(
            check(
                r#"{"timing":{"mode":"simultaneous","min_think_seconds":1,"max_think_seconds":3}}"#
            )
            .is_ok()
        );
        assert_eq!(
            check(r#"{"timing":{"mode":"x","min_think_seconds":-1,"max_think_seconds":true}}"#)
                .unwrap_err(),
            "timing.mode must be simultaneous, sequential, or none; timing.min_think_seconds must be a non-negative integer; timing.max_think_seconds must be a non-negative integer"
        );
        assert_eq!(
            check(r#"{"timing":{"mode":"none","min_think_seconds":5,"max_think_seconds":3}}"#)
                .unwrap_err(),
            "timing.max_think_seconds must be >= timing.min_think_seconds"
        );
        assert_eq!(
            check(r#"{"timing":[]}"#).unwrap_err(),
            "timing must be an object"
        );
    }

    #[test]
    fn flow_rules() {
        assert!(check(r#"{"flow":{"mode":null}}"#).is_ok());
        assert_eq!(
            check(r#"{"flow":{"mode":3}}"#).unwrap_err(),
            "flow.mode must be a string"
        );
        assert_eq!(
            check(r#"{"flow":{"mode":"x"}}"#).unwrap_err(),
            "unsupported flow.mode: 'x'; current stage allows ['authoritative_group', 'authoritative_realtime', 'free', 'mental_poker', 'request_response', 'session_loop', 'simultaneous_round']"
        );
        assert_eq!(
            check(r#"{"flow":{"phases":[{"repeat":"forever"}]}}"#).unwrap_err(),
            "flow.phases[0].repeat must be one of ['best_of', 'total_rounds', 'until game_over'], got 'forever'"
        );
        assert_eq!(
            check(r#"{"flow":{"mode":"simultaneous_round","round":{"value_field":"c"}}}"#)
                .unwrap_err(),
            "flow.round.value_type_ref must be a non-empty string"
        );
        assert_eq!(
            check(r#"{"flow":{"mode":"authoritative_realtime","realtime":{"z":1,"a":2}}}"#)
                .unwrap_err(),
            "flow.realtime has unknown fields: ['a', 'z']"
        );
        assert_eq!(
            check(r#"{"flow":{"mode":"authoritative_group","group":{"min_participants":1,"max_participants":4}}}"#)
                .unwrap_err(),
            "flow.group participant bounds must satisfy 2 <= min <= max <= 32"
        );
        assert_eq!(
            check(r#"{"shadow_judge":1}"#).unwrap_err(),
            "shadow_judge must be a boolean when present"
        );
    }
}
