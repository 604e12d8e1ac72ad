//! Native rules for the two bundled `authoritative_group` rooms:
//! community-room-v1 ([`CommunityRoom`]) and meeting-room-v1
//! ([`MeetingRoom`]). Both are [`GroupHooks`]: they take and return the
//! same JSON documents as the reference client's hooks (aigenora 0.1.4),
//! key order included, and refuse a bad action with the reference's text.
//!
//! Options are read the way the reference reads them, at the moment it
//! reads them:
//! - community-room-v1: `initial_topic` (any truthy value, as text, first
//!   200 characters; default "Community room") and `history_limit`
//!   (Python's `int()` of it, default 200, kept in the state unclamped;
//!   every trim clamps it to 20..=500), both when the room is created.
//! - meeting-room-v1: `meeting_title` (as `initial_topic`, default "Working
//!   session") when the room is created, and `max_agenda_items` (as
//!   `int()` takes it, default 20) on every `add_agenda`. The reference
//!   hooks do not clamp it: the 1..=50 range of the spec's `parameters`
//!   (like 20..=500 for `history_limit`) is the host's check of its
//!   options against the spec ([`crate::spec::Spec::validate_options`])
//!   before any hook runs, which callers of [`group_hooks_for_alias`]
//!   make as the reference's host does.
//!
//! An option that `int()` refuses fails where the reference fails: the
//! initial state (community) or each `add_agenda` (meeting), with
//! Python's exception text.
//!
//! The helpers below give the handful of Python behaviours the rules
//! depend on: `int()`, `str.strip()`, subscripts and `+= 1`, with the
//! exception texts Python would give.

pub mod community;
pub mod meeting;

pub use community::CommunityRoom;
pub use meeting::MeetingRoom;

use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Number, Value};
use crate::library::Library;
use std::cmp::Ordering;

/// Aliases of the bundled group protocols that have native hooks: the
/// rooms here and the tables of `protocols::tables`.
pub const GROUP_NATIVE: [&str; 8] = [
    "community-room-v1",
    "meeting-room-v1",
    "four-player-landlord-v1",
    "contract-bridge-v1",
    "texas-holdem-v1",
    "aether-sigil-v1",
    "upgrade-tractor-v1",
    "classical-mahjong-v1",
];

/// Native group hooks for a bundled alias, configured by the room's
/// `options` (what the reference hands `proto_init`: the host's options
/// over [`group_host_metadata`]'s defaults; an absent option takes its
/// default either way). `None` for any other alias.
pub fn group_hooks_for_alias(alias: &str, options: &Map) -> Option<Box<dyn GroupHooks>> {
    Some(match alias {
        "community-room-v1" => Box::new(CommunityRoom::new(options)),
        "meeting-room-v1" => Box::new(MeetingRoom::new(options)),
        other => {
            return super::tables::table_for_alias(other, options)
                .map(|t| t as Box<dyn GroupHooks>);
        }
    })
}

/// Native group hooks for the protocol_id of a bundled group protocol.
pub fn group_hooks_by_id(protocol_id: &str, options: &Map) -> Option<Box<dyn GroupHooks>> {
    let lib = Library::bundled();
    let entry = lib
        .entries()
        .iter()
        .find(|e| e.protocol_id == protocol_id)?;
    group_hooks_for_alias(&entry.alias, options)
}

/// What `proto_host_metadata` gives for a bundled group protocol: display
/// name, tags, invitation type and default options.
pub fn group_host_metadata(alias: &str) -> Option<HostMetadata> {
    match alias {
        "community-room-v1" => Some(community::host_metadata()),
        "meeting-room-v1" => Some(meeting::host_metadata()),
        other => super::tables::host_metadata(other),
    }
}

type Hooked<T> = Result<T, HookFailure>;

/// Python's type name of a JSON value, for exception texts.
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(Number::Float(_)) => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python's `str.isspace()`: Rust's White_Space plus the four information
/// separators U+001C..U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// The first `n` characters (code points), as Python's `s[:n]`.
fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// The rooms' text check: a string, stripped, 1..=`limit` UTF-8 bytes.
fn bounded_text(value: Option<&Value>, limit: usize, field: &str) -> Hooked<String> {
    let Some(Value::String(raw)) = value else {
        return Err(format!("{field} must be text"));
    };
    let text = py_strip(raw);
    if text.is_empty() || text.len() > limit {
        return Err(format!("{field} must be 1-{limit} UTF-8 bytes"));
    }
    Ok(text.to_owned())
}

/// `str(options.get(key) or default)[:200]`: a room's title option.
fn title_option(options: &Map, key: &str, default: &str) -> String {
    match options.get(key) {
        Some(v) if v.truthy() => first_chars(&v.py_str(), 200).to_owned(),
        _ => first_chars(default, 200).to_owned(),
    }
}

/// `int(options.get(key, default))`.
fn int_option(options: &Map, key: &str, default: i64) -> Hooked<Value> {
    match options.get(key) {
        Some(v) => py_int(v),
        None => Ok(Value::from(default)),
    }
}

/// Python's `int(value)` for a JSON value: an integer `Value` (64-bit or
/// big), or the exception text.
fn py_int(v: &Value) -> Hooked<Value> {
    match v {
        Value::Bool(b) => Ok(Value::from(i64::from(*b))),
        Value::Number(Number::Int(_) | Number::BigInt(_)) => Ok(v.clone()),
        Value::Number(Number::Float(f)) => float_to_int(*f),
        Value::String(s) => parse_int_literal(s)
            .ok_or_else(|| format!("invalid literal for int() with base 10: {}", v.py_repr())),
        other => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            py_type(other)
        )),
    }
}

fn float_to_int(f: f64) -> Hooked<Value> {
    if f.is_nan() {
        return Err("cannot convert float NaN to integer".into());
    }
    if f.is_infinite() {
        return Err("cannot convert float infinity to integer".into());
    }
    let t = f.trunc();
    let two_63 = 2f64.powi(63);
    if (-two_63..two_63).contains(&t) {
        return Ok(Value::from(t as i64));
    }
    // Rust prints the exact decimal expansion of an integral float.
    Ok(int_from_digits(t < 0.0, &format!("{:.0}", t.abs())))
}

/// A base-10 literal as Python's `int(str)` accepts it: surrounding
/// whitespace, an optional sign, ASCII digits with single underscores
/// between them. (Python also takes non-ASCII decimal digits; no option
/// or state of these rooms carries them.)
fn parse_int_literal(s: &str) -> Option<Value> {
    let t = py_strip(s);
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = body.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_digit() || !bytes[bytes.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut digits = String::with_capacity(body.len());
    let mut prev_underscore = false;
    for &b in bytes {
        match b {
            b'0'..=b'9' => {
                digits.push(char::from(b));
                prev_underscore = false;
            }
            b'_' if !prev_underscore => prev_underscore = true,
            _ => return None,
        }
    }
    Some(int_from_digits(negative, &digits))
}

/// An integer `Value` from a sign and decimal digits (leading zeros
/// allowed).
fn int_from_digits(negative: bool, digits: &str) -> Value {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Value::from(0);
    }
    let signed = if negative {
        format!("-{digits}")
    } else {
        digits.to_owned()
    };
    match signed.parse::<i64>() {
        Ok(i) => Value::from(i),
        Err(_) => Value::Number(Number::BigInt(signed.into())),
    }
}

/// An integer `Value` as an `i64`, saturating big integers (enough for
/// every comparison with a length or a limit).
fn saturate(v: &Value) -> i64 {
    match v {
        Value::Number(Number::Int(i)) => *i,
        Value::Number(Number::BigInt(s)) if s.starts_with('-') => i64::MIN,
        Value::Number(Number::BigInt(_)) => i64::MAX,
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// Python's `value + 1` for a counter kept in the state.
fn plus_one(v: &Value) -> Hooked<Value> {
    match v {
        Value::Bool(b) => Ok(Value::from(i64::from(*b) + 1)),
        Value::Number(Number::Int(i)) => Ok(match i.checked_add(1) {
            Some(n) => Value::from(n),
            None => Value::Number(Number::BigInt((i128::from(*i) + 1).to_string().into())),
        }),
        Value::Number(Number::BigInt(s)) => Ok(big_plus_one(s)),
        Value::Number(Number::Float(f)) => Ok(Value::from(f + 1.0)),
        Value::String(_) => Err("can only concatenate str (not \"int\") to str".into()),
        Value::Array(_) => Err("can only concatenate list (not \"int\") to list".into()),
        other => Err(format!(
            "unsupported operand type(s) for +: '{}' and 'int'",
            py_type(other)
        )),
    }
}

/// `n + 1` for an integer outside the 64-bit range, in decimal.
fn big_plus_one(s: &str) -> Value {
    let (negative, mag) = match s.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, s),
    };
    let mut digits: Vec<u8> = mag.bytes().filter(u8::is_ascii_digit).collect();
    // The magnitude moves by one: down for a negative number (|n| exceeds
    // 2^63, so a borrow never runs off the front), up for a positive one.
    let (from, to) = if negative { (b'0', b'9') } else { (b'9', b'0') };
    let mut carry = true;
    for d in digits.iter_mut().rev() {
        if *d == from {
            *d = to;
        } else {
            *d = if negative { *d - 1 } else { *d + 1 };
            carry = false;
            break;
        }
    }
    if carry && !negative {
        digits.insert(0, b'1');
    }
    int_from_digits(negative, &String::from_utf8_lossy(&digits))
}

/// Python's `a < b` between two state values that should be numbers.
fn py_cmp_num(a: &Value, b: &Value, op: &str) -> Hooked<Ordering> {
    let unsupported = || {
        format!(
            "'{op}' not supported between instances of '{}' and '{}'",
            py_type(a),
            py_type(b)
        )
    };
    match (a.py_number(), b.py_number()) {
        (Some(x), Some(y)) => x.py_cmp(&y).ok_or_else(unsupported),
        _ => Err(unsupported()),
    }
}

/// Python's `seq[index]` position for a list of `len` items (negative
/// indices count from the end).
fn list_index(index: &Value, len: usize) -> Hooked<usize> {
    let i = match index {
        Value::Bool(b) => i64::from(*b),
        Value::Number(Number::Int(i)) => *i,
        Value::Number(Number::BigInt(_)) => {
            return Err("cannot fit 'int' into an index-sized integer".into());
        }
        other => {
            return Err(format!(
                "list indices must be integers or slices, not {}",
                py_type(other)
            ));
        }
    };
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let at = if i < 0 { i + len } else { i };
    if (0..len).contains(&at) {
        Ok(at as usize)
    } else {
        Err("list index out of range".into())
    }
}

/// Python's `value[key]` for a JSON value and a string key.
fn item<'a>(value: &'a Value, key: &str) -> Hooked<&'a Value> {
    match value {
        Value::Object(m) => m.get(key).ok_or_else(|| key_error(key)),
        other => Err(not_subscriptable(other)),
    }
}

fn item_mut<'a>(value: &'a mut Value, key: &str) -> Hooked<&'a mut Value> {
    match value {
        Value::Object(m) => m.get_mut(key).ok_or_else(|| key_error(key)),
        other => Err(not_subscriptable(other)),
    }
}

/// `dict[key]` of a map.
fn field<'a>(m: &'a Map, key: &str) -> Hooked<&'a Value> {
    m.get(key).ok_or_else(|| key_error(key))
}

fn field_mut<'a>(m: &'a mut Map, key: &str) -> Hooked<&'a mut Value> {
    m.get_mut(key).ok_or_else(|| key_error(key))
}

/// `str(KeyError(key))`.
fn key_error(key: &str) -> String {
    Value::from(key).py_repr()
}

fn not_subscriptable(v: &Value) -> String {
    match v {
        Value::Array(_) => "list indices must be integers or slices, not str".into(),
        Value::String(_) => "string indices must be integers, not 'str'".into(),
        other => format!("'{}' object is not subscriptable", py_type(other)),
    }
}

/// `value[key] = new` on a value that should be a dict.
fn set_item(value: &mut Value, key: &str, new: Value) -> Hooked<()> {
    match value {
        Value::Object(m) => {
            m.insert(key, new);
            Ok(())
        }
        other => Err(format!(
            "'{}' object does not support item assignment",
            py_type(other)
        )),
    }
}

/// The state object the hooks receive.
fn state_map(state: Value) -> Hooked<Map> {
    match state {
        Value::Object(m) => Ok(m),
        other => Err(not_subscriptable(&other)),
    }
}

/// The action object (`action.get(...)` needs a dict).
fn action_map(action: &Value) -> Hooked<&Map> {
    action
        .as_object()
        .ok_or_else(|| format!("'{}' object has no attribute 'get'", py_type(action)))
}

/// A list held in the state under `key`.
fn list_mut<'a>(m: &'a mut Map, key: &str) -> Hooked<&'a mut Vec<Value>> {
    match field_mut(m, key)? {
        Value::Array(a) => Ok(a),
        other => Err(format!(
            "'{}' object has no attribute 'append'",
            py_type(other)
        )),
    }
}

/// Python's `len(value)`.
fn py_len(value: &Value) -> Hooked<usize> {
    match value {
        Value::Array(a) => Ok(a.len()),
        Value::Object(o) => Ok(o.len()),
        Value::String(s) => Ok(s.chars().count()),
        other => Err(format!("object of type '{}' has no len()", py_type(other))),
    }
}

/// `len(state[key])`.
fn list_len(m: &Map, key: &str) -> Hooked<usize> {
    py_len(field(m, key)?)
}

/// A dict held in the state under `key`.
fn dict_mut<'a>(m: &'a mut Map, key: &str) -> Hooked<&'a mut Map> {
    match field_mut(m, key)? {
        Value::Object(o) => Ok(o),
        other => Err(format!(
            "'{}' object does not support item assignment",
            py_type(other)
        )),
    }
}

/// A member's public key as a dict key (members are normalised with a hex
/// string key, so anything else is a broken member object).
fn member_key(member: &Value) -> Hooked<String> {
    match item(member, "public_key")? {
        Value::String(s) => Ok(s.to_string()),
        other => Err(format!(
            "member public_key must be text, not '{}'",
            py_type(other)
        )),
    }
}

/// Reads the counter at `key`, stores it plus one, and returns the value
/// it had.
fn take_counter(m: &mut Map, key: &str) -> Hooked<Value> {
    let slot = field_mut(m, key)?;
    let next = plus_one(slot)?;
    Ok(std::mem::replace(slot, next))
}

/// `{"state", "events", "completed": true, "outcome": outcome}`.
fn completed_result(state: Map, events: Vec<Value>, outcome: &str) -> Value {
    let mut out = crate::engine::group::hooks::result(Value::Object(state), events);
    if let Value::Object(m) = &mut out {
        m.insert("completed", Value::Bool(true));
        m.insert("outcome", Value::from(outcome));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use proptest::prelude::*;

    #[test]
    fn lookup_by_alias_and_metadata() {
        for alias in GROUP_NATIVE {
            assert!(
                group_hooks_for_alias(alias, &Map::new()).is_some(),
                "{alias}"
            );
            assert!(group_host_metadata(alias).is_some(), "{alias}");
        }
        assert!(group_hooks_for_alias("rps-v1", &Map::new()).is_none());
        assert!(group_host_metadata("rps-v1").is_none());
        let community = group_host_metadata("community-room-v1").unwrap();
        assert_eq!(community.display_name, "Community Room");
        assert_eq!(community.tags, "chat,multiplayer,community-room");
        assert_eq!(community.invite_type, "chat");
        assert_eq!(
            community.default_options,
            obj! { "history_limit" => 200, "initial_topic" => "Community room" }
        );
        let meeting = group_host_metadata("meeting-room-v1").unwrap();
        assert_eq!(meeting.display_name, "Meeting Room");
        assert_eq!(meeting.tags, "meeting,multiplayer,agenda,vote");
        assert_eq!(
            meeting.default_options,
            obj! { "meeting_title" => "Working session", "max_agenda_items" => 20 }
        );
    }

    #[test]
    fn lookup_by_protocol_id() {
        let lib = Library::bundled();
        for alias in GROUP_NATIVE {
            let entry = lib.entries().iter().find(|e| e.alias == alias);
            let entry = entry.unwrap_or_else(|| panic!("{alias} is bundled"));
            assert!(group_hooks_by_id(&entry.protocol_id, &Map::new()).is_some());
        }
        assert!(group_hooks_by_id("no-such-id", &Map::new()).is_none());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-3i64..8).prop_map(Value::from),
            Just(Value::Number(Number::BigInt(
                "-99999999999999999999".into()
            ))),
            Just(Value::Number(Number::BigInt("99999999999999999999".into()))),
            prop::num::f64::NORMAL.prop_map(Value::from),
            "[ a-z\u{1c}\u{3000}é]{0,6}".prop_map(Value::from),
            Just(Value::from(
                "0101010101010101010101010101010101010101010101010101010101010101"
            )),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z_]{1,12}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map>())),
            ]
        })
    }

    const KINDS: [&str; 15] = [
        "send",
        "set_topic",
        "close_room",
        "add_agenda",
        "advance_agenda",
        "request_to_speak",
        "yield_speaker",
        "open_vote",
        "cast_vote",
        "close_vote",
        "add_action_item",
        "complete_action_item",
        "transfer_facilitator",
        "end_meeting",
        "other",
    ];

    proptest! {
        /// Whatever the options, state, member or action, a hook answers
        /// (a result or a refusal) and never panics.
        #[test]
        fn hooks_never_panic(
            options in prop::collection::vec(
                (prop_oneof![Just("history_limit"), Just("initial_topic"), Just("meeting_title"), Just("max_agenda_items")], json_value()),
                0..3,
            ),
            replace in prop::collection::vec((0usize..12, json_value()), 0..3),
            member in json_value(),
            kind in 0usize..KINDS.len(),
            fields in prop::collection::vec(
                (prop_oneof![Just("text"), Just("topic"), Just("question"), Just("choices"), Just("choice"),
                    Just("item_id"), Just("assignee"), Just("public_key")], json_value()),
                0..5,
            ),
            action in json_value(),
        ) {
            let options: Map = options.into_iter().collect();
            let key = "01".repeat(32);
            let good = Value::Object(obj! { "member_id" => "m", "public_key" => key.as_str(), "seat" => 0, "status" => "active" });
            let mut structured = obj! { "kind" => KINDS[kind] };
            for (k, v) in fields {
                structured.insert(k, v);
            }
            for alias in GROUP_NATIVE {
                let mut h = group_hooks_for_alias(alias, &options).unwrap();
                let _ = h.initial_state(std::slice::from_ref(&member));
                let Ok(mut state) = h.initial_state(std::slice::from_ref(&good)) else { continue };
                for kind in KINDS {
                    let warmup = Value::Object(obj! {
                        "kind" => kind, "text" => "t", "topic" => "t", "question" => "q",
                        "choices" => vec![Value::from("a"), Value::from("b")], "choice" => 0,
                        "item_id" => 1, "public_key" => key.as_str(),
                    });
                    if let Ok(out) = h.handle(state.clone(), &good, &warmup) {
                        state = out.get("state").cloned().unwrap_or_default();
                    }
                }
                if let Value::Object(m) = &mut state {
                    for (at, v) in &replace {
                        let k = m.keys().nth(at % m.len().max(1)).map(str::to_owned);
                        if let Some(k) = k {
                            m.insert(k, v.clone());
                        }
                    }
                }
                for actor in [&good, &member] {
                    let _ = h.handle(state.clone(), actor, &Value::Object(structured.clone()));
                    let _ = h.handle(state.clone(), actor, &action);
                    let _ = h.view(&state, actor);
                    let _ = h.member_joined(state.clone(), actor);
                    let _ = h.member_left(state.clone(), actor, "gone");
                }
                let _ = h.on_leader_changed(state.clone(), "é", "");
                let _ = h.restore(state.clone(), &[], 1);
                let _ = h.recovery_snapshot(&state);
            }
        }
    }

    #[test]
    fn python_int() {
        let int = |v: Value| py_int(&v);
        assert_eq!(int(Value::from(7)), Ok(Value::from(7)));
        assert_eq!(int(Value::Bool(true)), Ok(Value::from(1)));
        assert_eq!(int(Value::from(25.9)), Ok(Value::from(25)));
        assert_eq!(int(Value::from(-25.9)), Ok(Value::from(-25)));
        assert_eq!(int(Value::from(" +1_000 \u{1f}")), Ok(Value::from(1000)));
        assert_eq!(int(Value::from("-007")), Ok(Value::from(-7)));
        assert_eq!(
            int(Value::from("123456789012345678901234567890")),
            Ok(Value::Number(Number::BigInt(
                "123456789012345678901234567890".into()
            )))
        );
        assert_eq!(
            int(Value::from(1e30)),
            Ok(Value::Number(Number::BigInt(
                "1000000000000000019884624838656".into()
            )))
        );
        for bad in ["", "abc", "1__0", "_1", "1_", "+", "1.5", "0x10"] {
            assert_eq!(
                int(Value::from(bad)),
                Err(format!(
                    "invalid literal for int() with base 10: {}",
                    Value::from(bad).py_repr()
                ))
            );
        }
        assert_eq!(
            int(Value::Null),
            Err("int() argument must be a string, a bytes-like object or a real number, not 'NoneType'".into())
        );
        assert_eq!(
            saturate(&Value::Number(Number::BigInt(
                "-99999999999999999999".into()
            ))),
            i64::MIN
        );
    }

    #[test]
    fn python_arithmetic_and_text() {
        assert_eq!(
            plus_one(&Value::from(i64::MAX)),
            Ok(Value::Number(Number::BigInt("9223372036854775808".into())))
        );
        assert_eq!(
            plus_one(&Value::Number(Number::BigInt(
                "99999999999999999999".into()
            ))),
            Ok(Value::Number(Number::BigInt(
                "100000000000000000000".into()
            )))
        );
        assert_eq!(
            plus_one(&Value::Number(Number::BigInt(
                "-9223372036854775809".into()
            ))),
            Ok(Value::from(i64::MIN))
        );
        assert_eq!(plus_one(&Value::from(1.5)), Ok(Value::from(2.5)));
        assert!(plus_one(&Value::Null).is_err());
        assert_eq!(py_strip("\u{1c}\u{3000} hi \u{85}"), "hi");
        assert_eq!(py_strip("\u{200b}x"), "\u{200b}x");
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(first_chars("hé", 5), "hé");
        assert_eq!(
            bounded_text(Some(&Value::from("  ok ")), 2, "text"),
            Ok("ok".into())
        );
        assert_eq!(
            bounded_text(Some(&Value::from("   ")), 2, "text"),
            Err("text must be 1-2 UTF-8 bytes".into())
        );
        assert_eq!(
            bounded_text(Some(&Value::from("é é")), 2, "t"),
            Err("t must be 1-2 UTF-8 bytes".into())
        );
        assert_eq!(
            bounded_text(Some(&Value::from(3)), 2, "topic"),
            Err("topic must be text".into())
        );
        assert_eq!(
            bounded_text(None, 2, "topic"),
            Err("topic must be text".into())
        );
        assert_eq!(list_index(&Value::from(-1), 3), Ok(2));
        assert_eq!(
            list_index(&Value::from(3), 3),
            Err("list index out of range".into())
        );
        assert_eq!(
            list_index(&Value::from(1.0), 3),
            Err("list indices must be integers or slices, not float".into())
        );
        assert_eq!(title_option(&obj! { "t" => 12 }, "t", "d"), "12");
        assert_eq!(title_option(&obj! { "t" => "" }, "t", "d"), "d");
        assert_eq!(
            title_option(&obj! { "t" => "x".repeat(300) }, "t", "d").len(),
            200
        );
    }
}
