//! protocol_id: the SHA-256 of the canonical contract subset of a spec.
//!
//! The contract holds `messages`, `rules`, `choices`, `commit_reveal` and
//! `timing` verbatim when present, `parameters` (only if an object) with each
//! object entry's top-level `default` removed, and a normalised `flow`: its
//! `phases` when truthy, its `mode` unless empty or `session_loop`, and the
//! mode's own sub-object (`round`, `realtime` or `group`). Everything else,
//! names and descriptions included, stays out of the hash.
//!
//! The canonical bytes are streamed straight from the parsed spec; nothing
//! is cloned, so computing an id costs little more than hashing the bytes.

use crate::canonical::{write_object, write_object_with, write_str, write_value};
use crate::json::{Map, Value};
use sha2::{Digest, Sha256};
use std::cell::RefCell;

/// Appends the canonical contract bytes of `spec` to `out`.
pub fn write_contract(spec: &Map, out: &mut Vec<u8>) {
    out.push(b'{');
    let first = &mut true;
    // Keys in code-point order.
    if let Some(v) = spec.get("choices") {
        member(first, "choices", out);
        write_value(v, out);
    }
    if let Some(v) = spec.get("commit_reveal") {
        member(first, "commit_reveal", out);
        write_value(v, out);
    }
    if let Some(flow) = spec.get("flow").and_then(Value::as_object) {
        write_flow(flow, first, out);
    }
    if let Some(v) = spec.get("messages") {
        member(first, "messages", out);
        write_value(v, out);
    }
    if let Some(params) = spec.get("parameters").and_then(Value::as_object) {
        member(first, "parameters", out);
        write_parameters(params, out);
    }
    if let Some(v) = spec.get("rules") {
        member(first, "rules", out);
        write_value(v, out);
    }
    if let Some(v) = spec.get("timing") {
        member(first, "timing", out);
        write_value(v, out);
    }
    out.push(b'}');
}

/// Writes `,"key":` (without the comma for the first member).
fn member(first: &mut bool, key: &str, out: &mut Vec<u8>) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    write_str(key, out);
    out.push(b':');
}

fn write_flow(flow: &Map, first: &mut bool, out: &mut Vec<u8>) {
    let phases = flow.get("phases").filter(|p| p.truthy());
    let mode = flow
        .get("mode")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty() && *m != "session_loop");
    if phases.is_none() && mode.is_none() {
        return;
    }
    let sub = mode.and_then(|m| {
        let name = match m {
            "simultaneous_round" => "round",
            "authoritative_realtime" => "realtime",
            "authoritative_group" => "group",
            _ => return None,
        };
        flow.get(name)
            .filter(|v| v.as_object().is_some())
            .map(|v| (name, v))
    });
    member(first, "flow", out);
    out.push(b'{');
    let inner = &mut true;
    // group < mode < phases < realtime < round
    if let Some(("group", v)) = sub {
        member(inner, "group", out);
        write_value(v, out);
    }
    if let Some(m) = mode {
        member(inner, "mode", out);
        write_str(m, out);
    }
    if let Some(p) = phases {
        member(inner, "phases", out);
        write_value(p, out);
    }
    if let Some((name @ ("realtime" | "round"), v)) = sub {
        member(inner, name, out);
        write_value(v, out);
    }
    out.push(b'}');
}

fn write_parameters(params: &Map, out: &mut Vec<u8>) {
    write_object_with(params, out, None, |v, out| match v {
        Value::Object(m) => write_object(m, out, Some("default")),
        other => write_value(other, out),
    });
}

/// The canonical contract bytes of a spec object.
pub fn contract_bytes(spec: &Map) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    write_contract(spec, &mut out);
    out
}

/// protocol_id of a spec object: lowercase hex SHA-256 of its canonical
/// contract.
pub fn protocol_id_of(spec: &Map) -> String {
    // A scratch buffer per thread: computing an id allocates nothing but
    // the hex string it returns.
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    let mut buf = SCRATCH
        .try_with(|s| s.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    buf.clear();
    buf.reserve(4096);
    write_contract(spec, &mut buf);
    let id = crate::canonical::hex(&Sha256::digest(&buf));
    // Kept for the next call unless a huge spec made it large.
    if buf.capacity() <= 1 << 20 {
        let _ = SCRATCH.try_with(|s| s.try_borrow_mut().map(|mut b| *b = buf));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn contract(src: &str) -> String {
        let v = parse_str(src).unwrap();
        String::from_utf8(contract_bytes(v.as_object().unwrap())).unwrap()
    }

    #[test]
    fn flow_normalisation() {
        assert_eq!(
            contract(r#"{"flow":{"mode":"session_loop","phases":[]}}"#),
            "{}"
        );
        assert_eq!(contract(r#"{"flow":{"mode":"","end_when":"x"}}"#), "{}");
        assert_eq!(
            contract(r#"{"flow":{"mode":"free","end_when":"either_ends","phases":[1]}}"#),
            r#"{"flow":{"mode":"free","phases":[1]}}"#
        );
        assert_eq!(
            contract(r#"{"flow":{"mode":"simultaneous_round","round":{"b":1,"a":2},"group":{}}}"#),
            r#"{"flow":{"mode":"simultaneous_round","round":{"a":2,"b":1}}}"#
        );
        assert_eq!(
            contract(r#"{"flow":{"mode":"authoritative_group","group":{"x":1},"phases":[0]}}"#),
            r#"{"flow":{"group":{"x":1},"mode":"authoritative_group","phases":[0]}}"#
        );
        assert_eq!(
            contract(r#"{"flow":{"phases":"yes"}}"#),
            r#"{"flow":{"phases":"yes"}}"#
        );
    }

    #[test]
    fn parameters_drop_top_level_default_only() {
        assert_eq!(
            contract(
                r#"{"name":"x","parameters":{"b":{"type":"integer","default":3},"a":5,"t":{"default":1,"columns":{"default":2}}}}"#
            ),
            r#"{"parameters":{"a":5,"b":{"type":"integer"},"t":{"columns":{"default":2}}}}"#
        );
        assert_eq!(
            contract(r#"{"parameters":[1],"timing":null,"rules":{}}"#),
            r#"{"rules":{},"timing":null}"#
        );
    }
}
