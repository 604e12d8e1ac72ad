//! Reading strategy.json the way the reference does: which order (a quick
//! order, a phase of a whispered plan, or the default maneuver) each tank
//! follows this tick, with Python's rules for what counts as an int, a
//! list or a true value, so that odd values from outside lead where they
//! lead in the reference (including to a refusal where it raises).

use super::Maneuver;
use super::vocab::hint_maneuver;
use crate::json::{Map, Number, Value};
use crate::protocols::tank::{Tank, TankError, Team, World};

/// Python's `int(v)` for a JSON value, saturated to `i128` (every use
/// compares or clamps it against small numbers, so saturation keeps the
/// result). `None`, lists, objects and non-numeric text are refused, as
/// `int()` raises on them.
pub fn py_int(v: &Value, what: &str) -> Result<i128, TankError> {
    match v {
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::Number(Number::Int(i)) => Ok(i128::from(*i)),
        Value::Number(Number::BigInt(s)) => Ok(if s.starts_with('-') {
            i128::MIN
        } else {
            i128::MAX
        }),
        Value::Number(Number::Float(f)) => {
            if f.is_finite() {
                Ok(f.trunc().clamp(i128::MIN as f64, i128::MAX as f64) as i128)
            } else {
                Err(TankError::new(format!("{what}: not a finite number")))
            }
        }
        Value::String(s) => int_from_text(s)
            .ok_or_else(|| TankError::new(format!("{what}: {s:?} is not an integer"))),
        other => Err(TankError::new(format!(
            "{what}: an integer was expected, not {}",
            other.py_type_name()
        ))),
    }
}

/// Python's `int(str)`: optional white space and sign around decimal
/// digits of any script, single underscores between digits.
fn int_from_text(s: &str) -> Option<i128> {
    let t = super::text::py_strip(s);
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let mut v: i128 = 0;
    for c in body.chars() {
        if c == '_' {
            continue;
        }
        let d = super::text::digit(c)?;
        v = v.saturating_mul(10).saturating_add(i128::from(d));
    }
    Some(if neg { -v } else { v })
}

/// `isinstance(v, int)` (bools included) and its value.
pub fn as_py_int(v: Option<&Value>) -> Option<i128> {
    match v? {
        Value::Bool(_) | Value::Number(Number::Int(_) | Number::BigInt(_)) => py_int(v?, "").ok(),
        _ => None,
    }
}

/// A non-empty JSON object (a true dict).
fn nonempty_object(v: Option<&Value>) -> Option<&Map> {
    v.and_then(Value::as_object).filter(|m| !m.is_empty())
}

/// Whether `id` is in a scope list (`str()` of each member).
pub fn in_scope(scope: &[Value], id: &str) -> bool {
    scope.iter().any(|v| v.as_str() == Some(id))
}

/// The maneuver a value names (a string among the ten), else `fallback`.
pub fn maneuver_or(v: Option<&Value>, fallback: Option<Maneuver>) -> Option<Maneuver> {
    match v {
        Some(v) if v.truthy() => v.as_str().and_then(Maneuver::parse).or(fallback),
        _ => fallback,
    }
}

/// What strategy.json says for this tick, before the per-tank choice.
pub struct Reading<'a> {
    /// The quick order (`order`), if live.
    pub quick: Option<&'a Map>,
    /// The whispered plan (`plan`), if any.
    pub plan: Option<&'a Map>,
    /// The default maneuver (none: the configured fallback is not one).
    pub fallback: Option<Maneuver>,
}

/// Read the strategy: the quick order unless an as new or newer plan or
/// its expiry overrides it, and the default maneuver from `maneuver`, the
/// free-text `operator_hint` or the configured fallback, in that order.
pub fn read<'a>(
    strategy: &'a Map,
    target_tick: i64,
    configured: Option<Maneuver>,
) -> Result<Reading<'a>, TankError> {
    let mut quick = nonempty_object(strategy.get("order"));
    let plan = nonempty_object(strategy.get("plan"));
    if let (Some(q), Some(p)) = (quick, plan) {
        let at = |m: &Map, what: &str| -> Result<i128, TankError> {
            match m.get("issued_at_tick") {
                None => Ok(-1),
                Some(v) => py_int(v, what),
            }
        };
        if at(q, "order.issued_at_tick")? < at(p, "plan.issued_at_tick")? {
            quick = None;
        }
    }
    if let Some(e) = as_py_int(quick.and_then(|q| q.get("expires_tick")))
        && i128::from(target_tick) > e
    {
        quick = None;
    }
    let fallback = match strategy.get("maneuver") {
        Some(v) if v.truthy() => v.as_str().and_then(Maneuver::parse).or(configured),
        _ => strategy
            .get("operator_hint")
            .and_then(Value::as_str)
            .and_then(hint_maneuver)
            .or(configured),
    };
    Ok(Reading {
        quick,
        plan,
        fallback,
    })
}

/// The micro commands in strategy.json for this tick, if still live.
pub fn direct(strategy: &Map, target_tick: i64) -> Option<&Value> {
    let list = strategy
        .get("micro_commands")
        .filter(|v| v.as_array().is_some())?;
    let until = as_py_int(strategy.get("micro_expires_tick"))?;
    (i128::from(target_tick) <= until).then_some(list)
}

/// The plan phase that applies to `tank` now: the last one (in list order)
/// whose scope holds it, whose window holds `target_tick` and whose
/// trigger holds.
pub fn plan_order_for<'a>(
    world: &World,
    tank: &Tank,
    plan: &'a Map,
    target_tick: i64,
) -> Result<Option<&'a Map>, TankError> {
    let Some(orders) = plan.get("orders").filter(|v| v.truthy()) else {
        return Ok(None);
    };
    let list: &[Value] = match orders {
        Value::Array(a) => a,
        // A string or an object iterates to strings: no phase.
        Value::String(_) | Value::Object(_) => return Ok(None),
        other => {
            return Err(TankError::new(format!(
                "plan.orders: a list was expected, not {}",
                other.py_type_name()
            )));
        }
    };
    let id = tank.id.to_string();
    let tick = i128::from(target_tick);
    let mut selected = None;
    for candidate in list {
        let Some(c) = candidate.as_object() else {
            continue;
        };
        if let Some(Value::Array(scope)) = c.get("unit_ids")
            && !in_scope(scope, &id)
        {
            continue;
        }
        if as_py_int(c.get("start_tick")).is_some_and(|s| tick < s) {
            continue;
        }
        if as_py_int(c.get("expires_tick")).is_some_and(|e| tick > e) {
            continue;
        }
        if !trigger_allows(world, tank, c.get("trigger"))? {
            continue;
        }
        selected = Some(c);
    }
    Ok(selected)
}

/// Whether a phase's trigger holds (no trigger, or not an object: it
/// does; an unknown type: it does not).
pub fn trigger_allows(
    world: &World,
    tank: &Tank,
    trigger: Option<&Value>,
) -> Result<bool, TankError> {
    let Some(t) = trigger.and_then(Value::as_object) else {
        return Ok(true);
    };
    let value = match t.get("value") {
        Some(v) if v.truthy() => py_int(v, "trigger.value")?,
        _ => 0,
    };
    let alive = |team: Team| -> i128 {
        match team {
            Team::Host => world.host_alive as i128,
            Team::Guest => world.guest_alive as i128,
        }
    };
    let kind = t.get("type").filter(|v| v.truthy()).and_then(Value::as_str);
    Ok(match kind {
        Some("own_alive_lte") => alive(tank.team()) <= value,
        Some("enemy_alive_lte") => alive(tank.team().other()) <= value,
        Some("unit_hp_lte") => i128::from(tank.hp) <= value,
        _ => false,
    })
}

/// Merge `patch` into `base` as the reference's strategy store does:
/// objects merge key by key, anything else replaces.
pub fn deep_merge(base: &mut Map, patch: &Map) {
    for (k, v) in patch.iter() {
        if let (Value::Object(p), Some(Value::Object(b))) = (v, base.get_mut(k)) {
            deep_merge(b, p);
            continue;
        }
        base.insert(k, v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_reads_like_python() {
        assert_eq!(int_from_text(" 1_000 "), Some(1000));
        assert_eq!(int_from_text("-٣"), Some(-3));
        assert_eq!(int_from_text("1__0"), None);
        assert_eq!(int_from_text("1.5"), None);
        assert_eq!(int_from_text(""), None);
        assert_eq!(py_int(&Value::Bool(true), "x"), Ok(1));
        assert_eq!(py_int(&Value::Number(Number::Float(-2.7)), "x"), Ok(-2));
        assert!(py_int(&Value::Null, "x").is_err());
    }

    #[test]
    fn merge_is_deep_for_objects_only() {
        let mut base = crate::json::parse_str(r#"{"a":{"x":1,"y":2},"b":[1]}"#)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let patch = crate::json::parse_str(r#"{"a":{"y":3},"b":[2],"c":null}"#)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        deep_merge(&mut base, &patch);
        assert_eq!(
            crate::json::canonical::to_string(&Value::Object(base)),
            r#"{"a":{"x":1,"y":3},"b":[2],"c":null}"#
        );
    }
}
