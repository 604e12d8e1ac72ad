//! protocol_id: the SHA-256 of the canonical contract subset of a spec.
//!
//! The contract holds `messages`, `rules`, `choices`, `commit_reveal` and
//! `timing` verbatim when present, `parameters` (only if an object) with each
//! object entry's top-level `default` removed, and a normalised `flow`: its
//! `phases` when truthy, its `mode` unless empty or `session_loop`, and the
//! mode's own sub-object (`round`, `realtime` or `group`). Everything else,
//! names and descriptions included, stays out of the hash.
//!
//! The canonical bytes are streamed straight from the parsed spec (nothing
//! is cloned), and each 64-byte block is hashed as soon as it is written, so
//! the hashing runs alongside the writing.

use crate::json::canonical::{
    NoTap, Sha256Tap, Tap, put_key, put_object, put_object_with, put_str, put_value, put1,
    room_after,
};
use crate::json::{Map, Value};
use std::cell::RefCell;

/// Appends the canonical contract bytes of `spec` to `out`.
pub fn write_contract(spec: &Map, out: &mut Vec<u8>) {
    let pos = out.len();
    let mut buf = room_after(std::mem::take(out), pos, 4096);
    let end = contract(spec, &mut buf, pos, &mut NoTap);
    buf.truncate(end);
    *out = buf;
}

/// Writes the contract at `pos`; returns the end (see the position-passing
/// writer in [`crate::json::canonical`]).
fn contract<T: Tap>(spec: &Map, buf: &mut Vec<u8>, pos: usize, tap: &mut T) -> usize {
    // One pass over the spec's members picks out the contract's (a spec
    // has a dozen top-level keys; seven lookups would scan them seven
    // times). Python's dict keeps the last of duplicate keys; so does Map.
    let mut part: [Option<&Value>; 7] = [None; 7];
    for (k, v) in spec.iter() {
        let slot = match k {
            "choices" => 0,
            "commit_reveal" => 1,
            "flow" => 2,
            "messages" => 3,
            "parameters" => 4,
            "rules" => 5,
            "timing" => 6,
            _ => continue,
        };
        part[slot] = Some(v);
    }
    let [
        choices,
        commit_reveal,
        flow,
        messages,
        parameters,
        rules,
        timing,
    ] = part;
    let mut pos = put1(buf, pos, b'{');
    let first = &mut true;
    // Keys in code-point order.
    for (key, v) in [("choices", choices), ("commit_reveal", commit_reveal)] {
        if let Some(v) = v {
            pos = member(first, key, buf, pos);
            pos = put_value(buf, pos, v, tap);
            tap.written(buf, pos);
        }
    }
    if let Some(flow) = flow.and_then(Value::as_object) {
        pos = write_flow(flow, first, buf, pos, tap);
    }
    if let Some(v) = messages {
        pos = member(first, "messages", buf, pos);
        pos = put_value(buf, pos, v, tap);
        tap.written(buf, pos);
    }
    if let Some(params) = parameters.and_then(Value::as_object) {
        pos = member(first, "parameters", buf, pos);
        pos = put_object_with(buf, pos, params, None, tap, |buf, pos, v, tap| match v {
            Value::Object(m) => put_object(buf, pos, m, Some("default"), tap),
            other => put_value(buf, pos, other, tap),
        });
    }
    for (key, v) in [("rules", rules), ("timing", timing)] {
        if let Some(v) = v {
            pos = member(first, key, buf, pos);
            pos = put_value(buf, pos, v, tap);
            tap.written(buf, pos);
        }
    }
    put1(buf, pos, b'}')
}

/// Writes `,"key":` (without the comma for the first member).
fn member(first: &mut bool, key: &str, buf: &mut Vec<u8>, pos: usize) -> usize {
    let lead = (!*first).then_some(b',');
    *first = false;
    put_key(buf, pos, key, false, lead)
}

fn write_flow<T: Tap>(
    flow: &Map,
    first: &mut bool,
    buf: &mut Vec<u8>,
    pos: usize,
    tap: &mut T,
) -> usize {
    let phases = flow.get("phases").filter(|p| p.truthy());
    let mode = flow
        .get("mode")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty() && *m != "session_loop");
    if phases.is_none() && mode.is_none() {
        return pos;
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
    let mut pos = member(first, "flow", buf, pos);
    pos = put1(buf, pos, b'{');
    let inner = &mut true;
    // group < mode < phases < realtime < round
    if let Some(("group", v)) = sub {
        pos = member(inner, "group", buf, pos);
        pos = put_value(buf, pos, v, tap);
        tap.written(buf, pos);
    }
    if let Some(m) = mode {
        pos = member(inner, "mode", buf, pos);
        pos = put_str(buf, pos, m);
    }
    if let Some(p) = phases {
        pos = member(inner, "phases", buf, pos);
        pos = put_value(buf, pos, p, tap);
        tap.written(buf, pos);
    }
    if let Some((name @ ("realtime" | "round"), v)) = sub {
        pos = member(inner, name, buf, pos);
        pos = put_value(buf, pos, v, tap);
        tap.written(buf, pos);
    }
    put1(buf, pos, b'}')
}

/// The canonical contract bytes of a spec object.
pub fn contract_bytes(spec: &Map) -> Vec<u8> {
    let mut out = Vec::new();
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
    let id = |buf: &mut Vec<u8>| {
        if buf.len() < 4096 {
            buf.resize(4096, 0);
        }
        let mut sha = Sha256Tap::default();
        let end = contract(spec, buf, 0, &mut sha);
        hex::encode(sha.finish(buf, end))
    };
    SCRATCH
        .try_with(|s| match s.try_borrow_mut() {
            Ok(mut buf) => {
                let out = id(&mut buf);
                // Not kept if a huge spec made it large.
                if buf.len() > 1 << 20 {
                    *buf = Vec::new();
                }
                out
            }
            Err(_) => id(&mut Vec::new()),
        })
        .unwrap_or_else(|_| id(&mut Vec::new()))
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
            contract(r#"{"parameters":{"only":{"default":1},"e":[],"o":{}}}"#),
            r#"{"parameters":{"e":[],"o":{},"only":{}}}"#
        );
        assert_eq!(
            contract(r#"{"parameters":[1],"timing":null,"rules":{}}"#),
            r#"{"rules":{},"timing":null}"#
        );
    }
}
