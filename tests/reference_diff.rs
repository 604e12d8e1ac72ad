//! Differential tests against the reference client itself (aigenora 0.1.4
//! from PyPI, run as a Python process): thousands of generated values, spec
//! mutations, messages and options, each answered by both implementations.
//!
//! Needs `PALAVER_REFERENCE_PYTHON` pointing at a Python with aigenora
//! installed (scripts/test sets it up). The tests are `#[ignore]`d, so a plain
//! `cargo test` lists them as ignored; scripts/test runs them, and there a
//! missing reference is a failure.

use crate::common;

use palaver::json::canonical;
use palaver::json::{self, Map, Value};
use palaver::library::{self, BUNDLED_SPECS};
use palaver::spec::{self, Spec};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn oracle_python() -> String {
    common::reference_python()
}

/// Sends every request to the oracle and returns its answers in order.
fn ask(python: &str, requests: &[Value]) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/oracle.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the reference oracle");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: Vec<String> = requests.iter().map(canonical::to_string_ordered).collect();
    let writer = std::thread::spawn(move || {
        for l in lines {
            writeln!(stdin, "{l}").expect("write request");
        }
    });
    let answers: Vec<Value> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|l| json::parse_str(&l.expect("read answer")).expect("oracle answers JSON"))
        .collect();
    writer.join().expect("writer");
    assert!(
        child.wait().expect("oracle exit").success(),
        "oracle failed"
    );
    assert_eq!(
        answers.len(),
        requests.len(),
        "oracle answered every request"
    );
    answers
}

fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<Map>(),
    )
}

struct Gen {
    runner: TestRunner,
    state: u64,
}

impl Gen {
    fn new() -> Self {
        Gen {
            runner: TestRunner::deterministic(),
            state: 0x9e37_79b9_7f4a_7c15,
        }
    }

    fn value(&mut self) -> Value {
        common::value()
            .new_tree(&mut self.runner)
            .expect("tree")
            .current()
    }

    fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A value biased towards what validators care about.
    fn field_value(&mut self) -> Value {
        let pool = [
            "0",
            "-1",
            "1",
            "3",
            "9999",
            "10000",
            "1.0",
            "true",
            "false",
            "null",
            "\"\"",
            "\"x\"",
            "\"join\"",
            "\"rock\"",
            "\"0123456789abcdef\"",
            "\"0123456789ABCDEF\"",
            "[]",
            "{}",
            "[1,\"a\",null]",
            "12345678901234567890",
            "-12345678901234567890",
            "\"43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f\"",
            "\"人狼\"",
            "\"it's\"",
        ];
        if self.below(4) == 0 {
            self.value()
        } else {
            let lit = self.pick(&pool[..]).to_owned();
            json::parse_str(lit).expect("pool literal")
        }
    }
}

fn bundled_docs() -> Vec<(&'static str, Map)> {
    BUNDLED_SPECS
        .iter()
        .map(|(a, t)| {
            (
                *a,
                json::parse_str(t)
                    .expect("bundled")
                    .as_object()
                    .expect("object")
                    .clone(),
            )
        })
        .collect()
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn canonical_json_matches_python_dumps() {
    let py = oracle_python();
    let mut g = Gen::new();
    let values: Vec<Value> = (0..1500).map(|_| g.value()).collect();
    let reqs: Vec<Value> = values
        .iter()
        .map(|v| obj(vec![("op", "canonical".into()), ("value", v.clone())]))
        .collect();
    let answers = ask(&py, &reqs);
    for (v, a) in values.iter().zip(&answers) {
        assert_eq!(
            Some(canonical::to_string(v).as_str()),
            a.get("text").and_then(Value::as_str),
            "value {v}"
        );
    }
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn protocol_id_matches_on_mutated_specs() {
    let py = oracle_python();
    let mut g = Gen::new();
    let docs = bundled_docs();
    let modes = [
        "",
        "session_loop",
        "free",
        "simultaneous_round",
        "authoritative_group",
        "authoritative_realtime",
        "x",
    ];
    let mut specs: Vec<Map> = Vec::new();
    for (_, doc) in &docs {
        specs.push(doc.clone());
        for _ in 0..25 {
            let mut m = doc.clone();
            for _ in 0..1 + g.below(3) {
                let key = *g.pick(&[
                    "messages",
                    "rules",
                    "choices",
                    "commit_reveal",
                    "timing",
                    "name",
                    "flow",
                    "parameters",
                    "decision",
                ]);
                match g.below(5) {
                    0 => {
                        m.remove(key);
                    }
                    1 => {
                        let v = g.value();
                        m.insert(key, v);
                    }
                    2 => {
                        let mut flow = m
                            .get("flow")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        flow.insert("mode", Value::from(*g.pick(&modes)));
                        if g.below(2) == 0 {
                            flow.insert(
                                "phases",
                                if g.below(2) == 0 {
                                    Value::Array(vec![])
                                } else {
                                    g.value()
                                },
                            );
                        }
                        let sub = *g.pick(&["round", "group", "realtime", "end_when"]);
                        let v = g.value();
                        flow.insert(sub, v);
                        m.insert("flow", Value::Object(flow));
                    }
                    3 => {
                        let mut params = m
                            .get("parameters")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        let v = g.value();
                        params.insert("p", obj(vec![("type", "integer".into()), ("default", v)]));
                        let raw = g.field_value();
                        params.insert("q", raw);
                        m.insert("parameters", Value::Object(params));
                    }
                    _ => {
                        let v = g.field_value();
                        m.insert(key, v);
                    }
                }
            }
            specs.push(m);
        }
    }
    let reqs: Vec<Value> = specs
        .iter()
        .map(|s| {
            obj(vec![
                ("op", "hash".into()),
                ("spec", Value::Object(s.clone())),
            ])
        })
        .collect();
    let answers = ask(&py, &reqs);
    for (s, a) in specs.iter().zip(&answers) {
        assert_eq!(
            Some(spec::protocol_id_of(s).as_str()),
            a.get("id").and_then(Value::as_str),
            "spec {}",
            Value::Object(s.clone())
        );
    }
}

/// Compares one decision; where the reference crashed, palaver must reject.
fn same_decision(ours: Result<(), String>, theirs: &Value) -> bool {
    let ok = theirs.get("ok").and_then(Value::as_bool).unwrap_or(false);
    if theirs.get("crash").is_some() {
        return ours.is_err();
    }
    match ours {
        Ok(()) => ok,
        Err(e) => !ok && Some(e.as_str()) == theirs.get("error").and_then(Value::as_str),
    }
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn message_validation_matches_on_mutated_messages() {
    let py = oracle_python();
    let mut g = Gen::new();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aigenora/validation_cases.jsonl"
    ))
    .expect("cases");
    let cases: Vec<Value> = text
        .lines()
        .map(|l| json::parse_str(l).expect("case"))
        .collect();
    let directions = [
        Value::Null,
        "host_to_guest".into(),
        "guest_to_host".into(),
        "both".into(),
        "".into(),
    ];
    let mut work: Vec<(&'static str, Value, Value, Value)> = Vec::new();
    for _ in 0..3000 {
        let c = g.pick(&cases);
        let alias = BUNDLED_SPECS
            .iter()
            .map(|(a, _)| *a)
            .find(|a| Some(*a) == c.get("protocol").and_then(Value::as_str))
            .expect("alias");
        let mut msg = c.get("msg").cloned().unwrap_or_default();
        if let Some(m) = msg.as_object_mut() {
            for _ in 0..g.below(4) {
                let keys: Vec<String> = m.keys().map(str::to_owned).collect();
                match g.below(4) {
                    0 if !keys.is_empty() => {
                        let k = g.pick(&keys).clone();
                        m.remove(&k);
                    }
                    1 => {
                        let v = g.field_value();
                        m.insert(format!("zz{}", g.below(3)), v);
                    }
                    _ if !keys.is_empty() => {
                        let k = g.pick(&keys).clone();
                        let v = g.field_value();
                        m.insert(k, v);
                    }
                    _ => {}
                }
            }
        }
        let dir = g.pick(&directions).clone();
        let name = if g.below(4) == 0 {
            c.get("message").cloned().unwrap_or_default()
        } else {
            Value::Null
        };
        work.push((alias, msg, dir, name));
    }
    let docs = bundled_docs();
    let doc_of =
        |a: &str| Value::Object(docs.iter().find(|(d, _)| *d == a).expect("doc").1.clone());
    let reqs: Vec<Value> = work
        .iter()
        .map(|(a, msg, dir, name)| {
            obj(vec![
                ("op", "validate".into()),
                ("spec", doc_of(a)),
                ("msg", msg.clone()),
                ("direction", dir.clone()),
                ("message", name.clone()),
            ])
        })
        .collect();
    let answers = ask(&py, &reqs);
    let mut diffs = Vec::new();
    for ((a, msg, dir, name), theirs) in work.iter().zip(&answers) {
        let s: &Spec = library::bundled_spec(a).expect("bundled");
        let ours = s
            .validate_message(msg, dir.as_str(), name.as_str())
            .map_err(|e| e.into_string());
        if !same_decision(ours.clone(), theirs) {
            diffs.push(format!(
                "{a} {} dir={dir} name={name}\n  ours: {ours:?}\n  ref:  {theirs}",
                canonical::to_string_ordered(msg)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} of {} differ:\n{}",
        diffs.len(),
        work.len(),
        diffs[..diffs.len().min(8)].join("\n")
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn options_and_structure_match() {
    let py = oracle_python();
    let mut g = Gen::new();
    let docs = bundled_docs();
    let mut reqs = Vec::new();
    let mut ours = Vec::new();
    for (alias, doc) in &docs {
        let params: Vec<String> = doc
            .get("parameters")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(str::to_owned).collect())
            .unwrap_or_default();
        for _ in 0..40 {
            let mut o = Map::new();
            for _ in 0..1 + g.below(3) {
                let k = if params.is_empty() || g.below(5) == 0 {
                    "extra".to_owned()
                } else {
                    g.pick(&params).clone()
                };
                let v = if *alias == "hero-duel-v1" && k == "balance" && g.below(2) == 0 {
                    json::parse_str(r#"{"warrior":{"hp":100,"skill":{"cd":100}}}"#)
                        .expect("literal")
                } else {
                    g.field_value()
                };
                o.insert(k, v);
            }
            let o = Value::Object(o);
            ours.push(spec::validate_options(doc, o.as_object().expect("object")));
            reqs.push(obj(vec![
                ("op", "options".into()),
                ("spec", Value::Object(doc.clone())),
                ("options", o),
            ]));
        }
    }
    // Structural checks on generated timing/flow sections.
    let modes = [
        "simultaneous_round",
        "authoritative_group",
        "authoritative_realtime",
        "free",
        "nope",
    ];
    for _ in 0..600 {
        let mut m = Map::new();
        match g.below(3) {
            0 => {
                let mut t = Map::new();
                for k in ["mode", "min_think_seconds", "max_think_seconds"] {
                    if g.below(3) > 0 {
                        let v = if k == "mode" && g.below(2) == 0 {
                            "sequential".into()
                        } else {
                            g.field_value()
                        };
                        t.insert(k, v);
                    }
                }
                m.insert("timing", Value::Object(t));
            }
            1 => {
                let mut f = Map::new();
                f.insert("mode", Value::from(*g.pick(&modes)));
                let sub = *g.pick(&["round", "group", "realtime"]);
                let mut s = Map::new();
                for k in [
                    "value_field",
                    "value_type_ref",
                    "min_participants",
                    "max_participants",
                    "allow_late_join",
                    "recovery_mode",
                    "start_policy",
                    "tick_rate_hz",
                    "input_delay_ticks",
                    "snapshot_every_ticks",
                    "max_command_lead_ticks",
                    "max_commands_per_frame",
                    "disconnect_policy",
                    "peer_channels",
                ] {
                    if g.below(2) == 0 {
                        let v = g.field_value();
                        s.insert(k, v);
                    }
                }
                f.insert(sub, Value::Object(s));
                if g.below(3) == 0 {
                    let v = g.field_value();
                    f.insert("phases", Value::Array(vec![obj(vec![("repeat", v)])]));
                }
                m.insert("flow", Value::Object(f));
            }
            _ => {
                let v = g.field_value();
                m.insert(*g.pick(&["shadow_judge", "flow", "timing"]), v);
            }
        }
        ours.push(spec::validate_structure(&m));
        reqs.push(obj(vec![
            ("op", "structure".into()),
            ("spec", Value::Object(m)),
        ]));
    }
    let answers = ask(&py, &reqs);
    let mut diffs = Vec::new();
    for ((o, r), theirs) in ours.into_iter().zip(&reqs).zip(&answers) {
        if !same_decision(o.clone(), theirs) {
            diffs.push(format!(
                "{}\n  ours: {o:?}\n  ref:  {theirs}",
                canonical::to_string_ordered(r)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} of {} differ:\n{}",
        diffs.len(),
        reqs.len(),
        diffs[..diffs.len().min(6)].join("\n")
    );
}
