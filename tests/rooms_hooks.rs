//! Differential tests of the native group-room hooks (community-room-v1,
//! meeting-room-v1) against the reference client's own hooks.py (aigenora
//! 0.1.4).
//!
//! Each test writes a list of steps (create the room with some options,
//! initial state, actions valid and refused, joins, departures, views,
//! checkpoints and restores, leader changes), has
//! tests/rooms_hooks/drive.py play them through the reference's `Hooks`
//! class, plays them through palaver's hooks here, and requires the two
//! outputs to be the same line for line: every result object (key order
//! included) or the text of every refusal.
//!
//! Needs `PALAVER_REFERENCE_PYTHON` naming a Python with aigenora 0.1.4
//! (scripts/test sets it up). The tests are `#[ignore]`d for a plain
//! `cargo test`; run with `--include-ignored`, where a missing interpreter
//! is a failure, never a skip.

use crate::common;

use palaver::engine::group::GroupHooks;
use palaver::json::{self, Map, Number, Value, canonical};
use palaver::obj;
use palaver::protocols::rooms::{group_hooks_for_alias, group_host_metadata};
use std::collections::BTreeSet;
use std::process::Command;

const COMMUNITY: &str = "community-room-v1";
const MEETING: &str = "meeting-room-v1";

/// A JSON literal.
fn j(text: &str) -> Value {
    json::parse_str(text).unwrap_or_else(|e| panic!("bad literal {text}: {e:?}"))
}

/// A distinct 64-hex public key for member number `n`.
fn pk(n: u64) -> String {
    let part = format!("{:016x}", (n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    part.repeat(4)
}

/// A normalised member object, as the authority hands it to the hooks.
fn member(n: u64, seat: i64) -> Value {
    Value::Object(obj! {
        "member_id" => format!("member-{n}"), "public_key" => pk(n), "seat" => seat, "status" => "active",
    })
}

/// An action object from a kind and extra fields.
fn action(kind: &str, fields: Map) -> Value {
    let mut m = obj! { "kind" => kind };
    for (k, v) in fields.iter() {
        m.insert(k, v.clone());
    }
    Value::Object(m)
}

/// A list of steps for both drivers (the ops are described in drive.py).
#[derive(Default)]
struct Script {
    steps: Vec<Value>,
}

impl Script {
    fn push(&mut self, step: Map) {
        self.steps.push(Value::Object(step));
    }
    fn spec(&mut self, room: &str) {
        self.push(obj! { "op" => "spec", "room" => room });
    }
    fn room(&mut self, room: &str, options: Value) {
        self.push(obj! { "op" => "new", "room" => room, "options" => options });
    }
    fn init(&mut self, members: &[Value]) {
        self.push(obj! { "op" => "init", "members" => members.to_vec() });
    }
    fn join(&mut self, m: &Value) {
        self.push(obj! { "op" => "join", "member" => m });
    }
    fn leave(&mut self, m: &Value, reason: &str) {
        self.push(obj! { "op" => "leave", "member" => m, "reason" => reason });
    }
    fn act(&mut self, actor: &Value, action: Value) {
        self.push(obj! { "op" => "act", "actor" => actor, "action" => action });
    }
    fn view(&mut self, viewer: &Value) {
        self.push(obj! { "op" => "view", "viewer" => viewer });
    }
    fn snapshot(&mut self) {
        self.push(obj! { "op" => "snapshot" });
    }
    fn restore(&mut self, members: &[Value], epoch: u64) {
        self.push(obj! { "op" => "restore", "members" => members.to_vec(), "epoch" => epoch });
    }
    fn restore_from(&mut self, checkpoint: Value, members: &[Value], epoch: u64) {
        self.push(obj! {
            "op" => "restore", "members" => members.to_vec(), "epoch" => epoch, "checkpoint" => checkpoint,
        });
    }
    fn leader(&mut self, old: &str, new: &str) {
        self.push(obj! { "op" => "leader", "old" => old, "new" => new });
    }
}

/// The reference's output lines for `steps`.
fn run_reference(steps: &[Value]) -> Vec<String> {
    let python = common::reference_python();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("steps.jsonl");
    let mut lines = String::new();
    for step in steps {
        lines.push_str(&canonical::to_string_ordered(step));
        lines.push('\n');
    }
    std::fs::write(&file, lines).expect("write steps");
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rooms_hooks/drive.py");
    let out = Command::new(&python)
        .arg(driver)
        .arg(&file)
        .output()
        .expect("run tests/rooms_hooks/drive.py");
    let stdout = common::ok(out, "tests/rooms_hooks/drive.py");
    stdout.lines().map(str::to_owned).collect()
}

/// palaver's output lines for `steps`, in the driver's format.
fn run_native(steps: &[Value]) -> Vec<String> {
    let mut hooks: Option<Box<dyn GroupHooks>> = None;
    let mut state = Value::Null;
    steps
        .iter()
        .map(|step| {
            let line = match native_step(&mut hooks, &mut state, step) {
                Ok(v) => obj! { "ok" => v },
                Err(e) => obj! { "error" => e },
            };
            canonical::to_string_ordered(&Value::Object(line))
        })
        .collect()
}

fn native_step(
    hooks: &mut Option<Box<dyn GroupHooks>>,
    state: &mut Value,
    step: &Value,
) -> Result<Value, String> {
    let op = step.get_str("op").expect("op");
    let field = |k: &str| {
        step.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("{op} needs {k}"))
    };
    let list = |k: &str| field(k).as_array().cloned().expect("an array");
    if op == "spec" {
        let room = field("room");
        let text = palaver::library::BUNDLED_SPECS
            .iter()
            .find(|(alias, _)| Some(*alias) == room.as_str())
            .map(|(_, text)| *text)
            .expect("bundled spec");
        return Ok(j(text));
    }
    if op == "new" {
        let room = field("room");
        let room = room.as_str().expect("room");
        let options = field("options")
            .as_object()
            .cloned()
            .expect("options object");
        *hooks = Some(group_hooks_for_alias(room, &options).expect("native group hooks"));
        *state = Value::Null;
        let meta = group_host_metadata(room).expect("metadata");
        return Ok(Value::Array(vec![
            Value::from(meta.display_name),
            Value::from(meta.tags),
            Value::from(meta.invite_type),
            Value::Object(meta.default_options),
        ]));
    }
    let h = hooks.as_mut().expect("a room before any hook");
    let replace = |state: &mut Value, out: &Value| {
        *state = out.get("state").cloned().expect("hook result state");
    };
    match op {
        "init" => {
            let out = h.initial_state(&list("members"))?;
            *state = out.clone();
            Ok(out)
        }
        "join" => {
            let out = h.member_joined(state.clone(), &field("member"))?;
            replace(state, &out);
            Ok(out)
        }
        "leave" => {
            let reason = field("reason");
            let out = h.member_left(
                state.clone(),
                &field("member"),
                reason.as_str().expect("reason"),
            )?;
            replace(state, &out);
            Ok(out)
        }
        "act" => {
            let out = h.handle(state.clone(), &field("actor"), &field("action"))?;
            replace(state, &out);
            Ok(out)
        }
        "view" => h.view(state, &field("viewer")),
        "snapshot" => h.recovery_snapshot(state),
        "restore" => {
            let checkpoint = match step.get("checkpoint") {
                Some(c) => c.clone(),
                None => {
                    let snap = h.recovery_snapshot(state)?;
                    j(&canonical::to_string_ordered(&snap))
                }
            };
            let epoch = field("epoch")
                .as_i64()
                .and_then(|e| u64::try_from(e).ok())
                .expect("epoch");
            let out = h.restore(checkpoint, &list("members"), epoch)?;
            *state = out.clone();
            Ok(out)
        }
        "leader" => {
            let (old, new) = (field("old"), field("new"));
            let out = h.on_leader_changed(
                state.clone(),
                old.as_str().expect("old"),
                new.as_str().expect("new"),
            )?;
            replace(state, &out);
            Ok(out)
        }
        other => panic!("unknown op {other}"),
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_owned();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// Runs `script` through both and requires identical lines; returns the
/// reference's lines.
fn same_as_reference(script: &Script) -> Vec<String> {
    let want = run_reference(&script.steps);
    let got = run_native(&script.steps);
    for (i, step) in script.steps.iter().enumerate() {
        let (w, g) = (want.get(i), got.get(i));
        if w != g {
            let w = w.map_or("<no line>".to_owned(), |l| l.clone());
            let g = g.map_or("<no line>".to_owned(), |l| l.clone());
            let at = w.bytes().zip(g.bytes()).take_while(|(a, b)| a == b).count();
            let from = at.saturating_sub(200);
            let from_w = (from..=at).find(|p| w.is_char_boundary(*p)).unwrap_or(at);
            let from_g = (from..=at).find(|p| g.is_char_boundary(*p)).unwrap_or(at);
            panic!(
                "step {i} differs: {}\n(first difference at byte {at})\nreference: …{}\npalaver:   …{}",
                clip(&canonical::to_string_ordered(step), 600),
                clip(w.get(from_w..).unwrap_or(&w), 600),
                clip(g.get(from_g..).unwrap_or(&g), 600),
            );
        }
    }
    assert_eq!(
        want.len(),
        script.steps.len(),
        "the driver printed one line per step"
    );
    assert_eq!(got.len(), want.len());
    want
}

/// The refusal texts among `lines`.
fn errors(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| j(l).get_str("error").map(str::to_owned))
        .collect()
}

fn assert_refusals(lines: &[String], expected: &[&str]) {
    let seen = errors(lines);
    for e in expected {
        assert!(
            seen.contains(*e),
            "no step was refused with {e:?}; refusals seen: {seen:#?}"
        );
    }
}

fn text(n: usize, unit: &str) -> Value {
    Value::from(unit.repeat(n))
}

/// Refusals for every malformed text field value.
fn bad_texts() -> Vec<Value> {
    vec![
        Value::from(""),
        Value::from(" \t\n "),
        Value::from("\u{3000}\u{1c}\u{85}"),
        Value::from(42),
        Value::Null,
        Value::Bool(true),
        j("[\"hi\"]"),
        j("{\"text\":\"hi\"}"),
        Value::from(1.5),
    ]
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn community_room_matches_reference() {
    let (a, b, c, d, e) = (
        member(0, 0),
        member(1, 1),
        member(2, 2),
        member(3, 3),
        member(4, 4),
    );
    let mut s = Script::default();
    s.spec(COMMUNITY);
    s.room(
        COMMUNITY,
        j(r#"{"history_limit": 25, "initial_topic": "  Launch planning  "}"#),
    );
    s.init(&[a.clone(), b.clone(), c.clone()]);
    for v in [&a, &b, &c, &d] {
        s.view(v);
    }
    // Text bounds: trimming, byte (not character) limits, types.
    s.act(&b, j(r#"{"kind":"send","text":"hello"}"#));
    s.act(
        &c,
        j("{\"kind\":\"send\",\"text\":\"\\u3000\\u001c  padded \\t\\n\\u0085\"}"),
    );
    s.act(
        &a,
        j("{\"kind\":\"send\",\"text\":\"\\u200bzero-width stays\\u200b\"}"),
    );
    s.act(&b, action("send", obj! { "text" => text(2000, "x") }));
    s.act(&b, action("send", obj! { "text" => text(2001, "x") }));
    s.act(&b, action("send", obj! { "text" => text(1000, "é") }));
    s.act(
        &b,
        action("send", obj! { "text" => format!("{}a", "é".repeat(1000)) }),
    );
    s.act(&b, action("send", obj! { "text" => text(667, "人") }));
    s.act(
        &b,
        action(
            "send",
            obj! { "text" => format!("  {}  ", "x".repeat(2000)) },
        ),
    );
    s.act(&b, action("send", Map::new()));
    for bad in bad_texts() {
        s.act(&c, action("send", obj! { "text" => bad.clone() }));
        s.act(&c, action("set_topic", obj! { "topic" => bad }));
    }
    s.act(&c, action("set_topic", obj! { "topic" => " New topic " }));
    s.act(&c, action("set_topic", obj! { "topic" => text(200, "t") }));
    s.act(&c, action("set_topic", obj! { "topic" => text(201, "t") }));
    s.act(&c, action("set_topic", obj! { "topic" => text(100, "é") }));
    s.act(&c, action("set_topic", obj! { "topic" => text(67, "人") }));
    s.act(&c, action("set_topic", obj! { "text" => "wrong field" }));
    // Unknown kinds, and an action that is no object.
    for bad in [
        r#"{"kind":"shout","text":"hi"}"#,
        r#"{"text":"no kind"}"#,
        r#"{"kind":5}"#,
        r#"{"kind":"SEND","text":"x"}"#,
        r#"{"kind":null}"#,
        r#"{"kind":["send"],"text":"x"}"#,
        r#"{"kind":"close_room ","text":"x"}"#,
        r#"["send"]"#,
    ] {
        s.act(&a, j(bad));
    }
    // Only seat 0 closes.
    s.act(&b, j(r#"{"kind":"close_room"}"#));
    s.act(&c, j(r#"{"kind":"close_room"}"#));
    s.view(&b);
    // Membership: join, leave, an unknown member leaving, rejoin.
    s.join(&d);
    s.leave(&c, "disconnect");
    s.leave(&e, "membership_changed_during_failover");
    s.join(&c);
    s.join(&member(2, 7));
    s.view(&c);
    // Past the history limit (25): trimming of chat and system lines.
    for i in 0..30 {
        let who = [&a, &b, &c, &d][i % 4];
        s.act(
            who,
            action("send", obj! { "text" => format!("message {i}") }),
        );
    }
    s.view(&a);
    s.view(&d);
    // Failover: checkpoint, restore at a new epoch, leader notice.
    s.snapshot();
    s.restore(&[a.clone(), b.clone(), d.clone()], 2);
    s.leader(&pk(0), &pk(1));
    s.leader("", "short");
    s.leader("ünïcødé-leader-key", "人人人人人人人人人人");
    s.view(&b);
    // The owner closes (twice: the reference does not refuse it), and the
    // room still takes messages.
    s.act(&a, j(r#"{"kind":"close_room","extra":1}"#));
    s.act(&a, j(r#"{"kind":"close_room"}"#));
    s.act(&b, j(r#"{"kind":"send","text":"after close"}"#));
    s.view(&a);
    // Seats as Python compares them.
    s.act(
        &j(&format!(r#"{{"public_key":"{}","seat":0.0}}"#, pk(5))),
        j(r#"{"kind":"close_room"}"#),
    );
    s.act(
        &j(&format!(r#"{{"public_key":"{}","seat":false}}"#, pk(5))),
        j(r#"{"kind":"close_room"}"#),
    );
    s.act(
        &j(&format!(r#"{{"public_key":"{}","seat":"0"}}"#, pk(5))),
        j(r#"{"kind":"close_room"}"#),
    );
    // A restored checkpoint with odd but valid counters and limits.
    let checkpoint = |limit: &str, next: &str, n: usize| {
        let lines: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":{i},"kind":"message","from":"{}","seat":1,"text":"old {i}"}}"#,
                    pk(1)
                )
            })
            .collect();
        j(&format!(
            r#"{{"topic":"restored","messages":[{}],"next_message_id":{next},"history_limit":{limit},"presence":{{}},"closed":true}}"#,
            lines.join(",")
        ))
    };
    for (limit, next) in [
        ("3", "100"),
        ("1000", "1"),
        ("\"30\"", "9223372036854775807"),
        ("22.9", "2.5"),
        ("true", "99999999999999999999"),
        ("-5", "-9223372036854775809"),
        ("\"many\"", "1"),
        ("null", "1"),
    ] {
        s.restore_from(checkpoint(limit, next, 30), &[a.clone(), b.clone()], 3);
        s.act(&b, j(r#"{"kind":"send","text":"next"}"#));
        s.leader(&pk(1), &pk(0));
        s.join(&e);
    }
    let lines = same_as_reference(&s);
    assert_refusals(
        &lines,
        &[
            "text must be text",
            "text must be 1-2000 UTF-8 bytes",
            "topic must be text",
            "topic must be 1-200 UTF-8 bytes",
            "kind must be send, set_topic, or close_room",
            "only the room owner at seat 0 can close the room",
        ],
    );
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn community_room_options_match_reference() {
    let (a, b) = (member(0, 0), member(1, 1));
    let mut s = Script::default();
    for options in [
        "{}",
        r#"{"history_limit": 200, "initial_topic": "Community room"}"#,
        r#"{"history_limit": 20}"#,
        r#"{"history_limit": 5}"#,
        r#"{"history_limit": 0}"#,
        r#"{"history_limit": -3}"#,
        r#"{"history_limit": 21}"#,
        r#"{"history_limit": 10000}"#,
        r#"{"history_limit": 1000000000000000000000000000000}"#,
        r#"{"history_limit": -1000000000000000000000000000000}"#,
        r#"{"history_limit": "30"}"#,
        r#"{"history_limit": " 2_2 "}"#,
        r#"{"history_limit": true}"#,
        r#"{"history_limit": false}"#,
        r#"{"history_limit": 25.9}"#,
        r#"{"history_limit": 1e30}"#,
        r#"{"history_limit": null}"#,
        r#"{"history_limit": "abc"}"#,
        r#"{"history_limit": "2.5"}"#,
        r#"{"history_limit": [25]}"#,
        r#"{"history_limit": {"n": 25}}"#,
        r#"{"initial_topic": ""}"#,
        r#"{"initial_topic": "   "}"#,
        r#"{"initial_topic": null}"#,
        r#"{"initial_topic": false}"#,
        r#"{"initial_topic": 0}"#,
        r#"{"initial_topic": 123}"#,
        r#"{"initial_topic": 1.5e20}"#,
        r#"{"initial_topic": true}"#,
        r#"{"initial_topic": [1, "two", null]}"#,
        r#"{"initial_topic": {"a": 1.5, "b'": "c\"d"}}"#,
        r#"{"unrelated": 1}"#,
    ] {
        s.room(COMMUNITY, j(options));
        s.init(&[a.clone(), b.clone()]);
        for i in 0..24 {
            s.act(&b, action("send", obj! { "text" => format!("m{i}") }));
        }
        s.view(&a);
    }
    for topic in [
        text(300, "x"),
        text(250, "人"),
        text(199, "é"),
        text(201, "😀"),
    ] {
        s.room(COMMUNITY, Value::Object(obj! { "initial_topic" => topic }));
        s.init(std::slice::from_ref(&a));
    }
    // Members as the hooks receive them, unsorted, with an empty roster.
    s.room(COMMUNITY, j("{}"));
    s.init(&[]);
    s.init(&[member(3, 3), a.clone(), member(3, 5)]);
    let lines = same_as_reference(&s);
    assert!(
        errors(&lines)
            .iter()
            .any(|e| e.starts_with("invalid literal for int()")),
        "a bad history_limit is refused as the reference refuses it"
    );
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn meeting_room_matches_reference() {
    let (a, b, c) = (member(0, 0), member(1, 1), member(2, 2));
    let mut d = member(3, 3);
    if let Value::Object(m) = &mut d {
        m.insert("status", Value::from("left"));
    }
    let e = member(4, 4);
    let ghost = member(5, 5);
    let key = |m: &Value| m.get_str("public_key").unwrap_or_default().to_owned();
    let mut s = Script::default();
    s.spec(MEETING);
    s.room(
        MEETING,
        j(r#"{"meeting_title": " Q3 review ", "max_agenda_items": 3}"#),
    );
    // Unsorted members: the lowest seat facilitates; a member's own status
    // is kept.
    s.init(&[b.clone(), d.clone(), a.clone(), c.clone()]);
    s.view(&a);
    s.view(&b);

    // Agenda: anyone adds, the facilitator advances.
    s.act(&b, j(r#"{"kind":"add_agenda","text":" Budget "}"#));
    s.act(&c, j(r#"{"kind":"add_agenda","text":"Hiring"}"#));
    for bad in bad_texts() {
        s.act(&a, action("add_agenda", obj! { "text" => bad }));
    }
    s.act(&a, action("add_agenda", obj! { "text" => text(501, "x") }));
    s.act(&a, action("add_agenda", obj! { "text" => text(500, "x") }));
    s.act(&a, action("add_agenda", obj! { "text" => "fourth" }));
    s.act(&a, action("add_agenda", obj! { "text" => 5 }));
    s.act(&b, j(r#"{"kind":"advance_agenda"}"#));
    for _ in 0..5 {
        s.act(&a, j(r#"{"kind":"advance_agenda"}"#));
    }
    s.view(&c);

    // Speaking queue.
    s.act(&b, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&c, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&b, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&c, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&a, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&c, j(r#"{"kind":"yield_speaker"}"#));
    s.act(&b, j(r#"{"kind":"yield_speaker"}"#));
    s.act(&b, j(r#"{"kind":"request_to_speak"}"#));

    // Votes: only the facilitator opens and closes; ballots replaceable.
    let vote = |question: Value, choices: Value| {
        action(
            "open_vote",
            obj! { "question" => question, "choices" => choices },
        )
    };
    s.act(&b, vote(Value::from("Ship it?"), j(r#"["Yes","No"]"#)));
    s.act(&b, j(r#"{"kind":"close_vote"}"#));
    s.act(&a, j(r#"{"kind":"close_vote"}"#));
    s.act(&b, j(r#"{"kind":"cast_vote","choice":0}"#));
    for bad in bad_texts() {
        s.act(&a, vote(bad, j(r#"["Yes","No"]"#)));
    }
    s.act(&a, vote(text(501, "q"), j(r#"["Yes","No"]"#)));
    for choices in [
        "null",
        r#""Yes,No""#,
        r#"{"a":"Yes","b":"No"}"#,
        "[]",
        r#"["Only"]"#,
        r#"["1","2","3","4","5","6","7"]"#,
        r#"["Yes",""]"#,
        r#"["Yes","  "]"#,
        r#"["Yes",2]"#,
        r#"["Yes",null]"#,
    ] {
        s.act(&a, vote(Value::from("Ship it?"), j(choices)));
    }
    s.act(&a, action("open_vote", obj! { "question" => "Ship it?" }));
    s.act(
        &a,
        vote(
            Value::from("Ship it?"),
            Value::Array(vec![text(101, "c"), Value::from("No")]),
        ),
    );
    s.act(
        &a,
        vote(
            Value::from("Ship it?"),
            Value::Array(vec![text(100, "c"), Value::from("No")]),
        ),
    );
    s.act(&a, j(r#"{"kind":"close_vote"}"#));
    s.act(
        &a,
        vote(
            Value::from(" Ship it? "),
            j(r#"[" Yes ","No","Maybe","a","b","c"]"#),
        ),
    );
    s.act(&a, vote(Value::from("Again?"), j(r#"["Yes","No"]"#)));
    s.act(&b, vote(Value::from(""), j("[]")));
    s.act(&b, j(r#"{"kind":"cast_vote","choice":0}"#));
    s.act(&c, j(r#"{"kind":"cast_vote","choice":2}"#));
    s.act(&b, j(r#"{"kind":"cast_vote","choice":1}"#));
    for bad in [
        "6",
        "-1",
        "true",
        "false",
        "1.0",
        r#""1""#,
        "null",
        "100000000000000000000",
        "[1]",
    ] {
        s.act(&c, j(&format!(r#"{{"kind":"cast_vote","choice":{bad}}}"#)));
    }
    s.act(&c, j(r#"{"kind":"cast_vote"}"#));
    s.act(&a, j(r#"{"kind":"cast_vote","choice":5}"#));
    for v in [&a, &b, &c, &d] {
        s.view(v);
    }
    s.act(&b, j(r#"{"kind":"close_vote"}"#));
    s.act(&a, j(r#"{"kind":"close_vote"}"#));
    s.act(&a, j(r#"{"kind":"close_vote"}"#));
    s.act(&c, j(r#"{"kind":"cast_vote","choice":0}"#));
    s.act(&a, vote(Value::from("Lunch?"), j(r#"["Pizza","Salad"]"#)));
    s.view(&b);

    // Action items.
    s.act(&b, j(r#"{"kind":"add_action_item","text":"Write notes"}"#));
    s.act(
        &b,
        action(
            "add_action_item",
            obj! { "text" => "Book room", "assignee" => key(&c) },
        ),
    );
    s.act(
        &b,
        action(
            "add_action_item",
            obj! { "text" => "Left one", "assignee" => key(&d) },
        ),
    );
    s.act(
        &b,
        action(
            "add_action_item",
            obj! { "text" => "Ghost", "assignee" => key(&ghost) },
        ),
    );
    for assignee in [r#""nobody""#, "7", "true", r#"["x"]"#] {
        s.act(
            &b,
            j(&format!(
                r#"{{"kind":"add_action_item","text":"t","assignee":{assignee}}}"#
            )),
        );
    }
    for falsy in [r#""""#, "0", "false", "null", "[]", "{}"] {
        s.act(
            &c,
            j(&format!(
                r#"{{"kind":"add_action_item","text":"mine","assignee":{falsy}}}"#
            )),
        );
    }
    for bad in bad_texts() {
        s.act(
            &b,
            action(
                "add_action_item",
                obj! { "text" => bad, "assignee" => "nobody" },
            ),
        );
    }
    s.act(
        &b,
        action("add_action_item", obj! { "text" => text(501, "x") }),
    );
    // Ids: agenda 1-3, votes 4-6, action items from 7 ("Write notes",
    // then "Book room" for C, then C's own).
    s.act(&c, j(r#"{"kind":"complete_action_item","item_id":7}"#));
    s.act(&b, j(r#"{"kind":"complete_action_item","item_id":7}"#));
    s.act(&b, j(r#"{"kind":"complete_action_item","item_id":7}"#));
    s.act(&c, j(r#"{"kind":"complete_action_item","item_id":8}"#));
    s.act(&a, j(r#"{"kind":"complete_action_item","item_id":9}"#));
    for bad in [
        r#""7""#,
        "true",
        "7.0",
        "null",
        "999",
        "-1",
        "100000000000000000000",
        "[7]",
    ] {
        s.act(
            &a,
            j(&format!(
                r#"{{"kind":"complete_action_item","item_id":{bad}}}"#
            )),
        );
    }
    s.act(&a, j(r#"{"kind":"complete_action_item"}"#));
    s.view(&c);

    // Handing over the facilitator role.
    s.act(
        &b,
        action("transfer_facilitator", obj! { "public_key" => key(&c) }),
    );
    for target in [key(&d), key(&ghost), String::new(), "x".into()] {
        s.act(
            &a,
            action("transfer_facilitator", obj! { "public_key" => target }),
        );
    }
    s.act(
        &a,
        j(r#"{"kind":"transfer_facilitator","public_key":null}"#),
    );
    s.act(&a, j(r#"{"kind":"transfer_facilitator","public_key":5}"#));
    s.act(&a, j(r#"{"kind":"transfer_facilitator"}"#));
    s.act(
        &a,
        action("transfer_facilitator", obj! { "public_key" => key(&a) }),
    );
    s.act(
        &a,
        action("transfer_facilitator", obj! { "public_key" => key(&b) }),
    );
    s.act(&a, j(r#"{"kind":"advance_agenda"}"#));
    s.act(&a, j(r#"{"kind":"close_vote"}"#));
    s.act(&b, j(r#"{"kind":"advance_agenda"}"#));
    s.act(&a, j(r#"{"kind":"complete_action_item","item_id":12}"#));
    s.view(&a);
    s.view(&b);

    // Unknown kinds.
    for bad in [
        r#"{"kind":"dance"}"#,
        "{}",
        r#"{"kind":null}"#,
        r#"{"kind":"END_MEETING"}"#,
        "[1]",
        r#""end_meeting""#,
    ] {
        s.act(&b, j(bad));
    }

    // Membership while people wait to speak.
    s.act(&c, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&a, j(r#"{"kind":"request_to_speak"}"#));
    s.join(&e);
    s.act(&e, j(r#"{"kind":"request_to_speak"}"#));
    s.leave(&b, "disconnect");
    s.leave(&a, "timeout");
    s.leave(&ghost, "membership_changed_during_failover");
    s.act(
        &a,
        j(r#"{"kind":"add_agenda","text":"left but still acting"}"#),
    );
    s.act(
        &b,
        action("transfer_facilitator", obj! { "public_key" => key(&a) }),
    );
    s.act(
        &b,
        action("transfer_facilitator", obj! { "public_key" => key(&e) }),
    );
    s.join(&a);
    s.act(&a, j(r#"{"kind":"request_to_speak"}"#));
    s.view(&e);

    // Failover.
    s.snapshot();
    s.restore(&[a.clone(), c.clone(), e.clone()], 4);
    s.leader(&pk(0), &pk(2));
    s.view(&c);

    // The end, and what the reference still accepts afterwards.
    s.act(&b, j(r#"{"kind":"end_meeting"}"#));
    s.act(&e, j(r#"{"kind":"end_meeting","why":"done"}"#));
    s.act(&c, j(r#"{"kind":"add_agenda","text":"after the end"}"#));
    s.act(&e, j(r#"{"kind":"end_meeting"}"#));
    s.view(&c);

    // Restored checkpoints with edge values the rules still handle.
    let restored = format!(
        r#"{{"title":"R","facilitator":"{f}","members":{{"{f}":{{"seat":0,"status":"active"}},"{g}":{{"seat":1,"status":"active"}}}},
        "agenda":[{{"id":1,"text":"a","created_by":"{f}","status":"done"}},{{"id":2,"text":"b","created_by":"{f}","status":"done"}}],
        "active_agenda":-1,"speaking_queue":["{g}","{g}"],"active_speaker":"","vote":{{"id":3,"question":"q","choices":["x","y","z"],
        "ballots":{{"{f}":-1,"{g}":0}},"status":"open"}},"vote_history":[],"action_items":[],"next_id":9223372036854775807,"ended":false}}"#,
        f = pk(0),
        g = pk(1)
    );
    let (r0, r1) = (member(0, 0), member(1, 1));
    s.restore_from(j(&restored), &[r0.clone(), r1.clone()], 5);
    s.view(&r0);
    s.view(&r1);
    s.act(&r1, j(r#"{"kind":"request_to_speak"}"#));
    s.act(&r0, j(r#"{"kind":"advance_agenda"}"#));
    s.act(&r0, j(r#"{"kind":"advance_agenda"}"#));
    s.act(&r0, j(r#"{"kind":"advance_agenda"}"#));
    s.act(&r0, j(r#"{"kind":"add_agenda","text":"big id"}"#));
    s.act(&r0, j(r#"{"kind":"add_agenda","text":"bigger id"}"#));
    s.act(&r1, j(r#"{"kind":"add_action_item","text":"x"}"#));
    s.act(
        &r1,
        j(r#"{"kind":"complete_action_item","item_id":9223372036854775809}"#),
    );
    s.act(&r0, j(r#"{"kind":"close_vote"}"#));
    s.leader(&pk(1), &pk(0));
    // After all agenda items are done, a new item is marked active while
    // active_agenda points at the first one (as the reference does).
    s.restore_from(
        j(&restored.replace("9223372036854775807", "1")),
        &[r0.clone(), r1.clone()],
        6,
    );
    s.act(&r0, j(r#"{"kind":"add_agenda","text":"c"}"#));
    s.act(&r0, j(r#"{"kind":"advance_agenda"}"#));
    s.view(&r1);

    let lines = same_as_reference(&s);
    assert_refusals(
        &lines,
        &[
            "agenda is full",
            "text must be text",
            "text must be 1-500 UTF-8 bytes",
            "this action requires the meeting facilitator",
            "only the active speaker can yield",
            "a vote is already open",
            "question must be text",
            "question must be 1-500 UTF-8 bytes",
            "choices must contain 2-6 items",
            "choice must be text",
            "choice must be 1-100 UTF-8 bytes",
            "no vote is open",
            "choice is out of range",
            "assignee must be a member public key",
            "item_id must be an integer",
            "item does not exist",
            "only the facilitator or assignee can complete it",
            "public_key must identify an active member",
            "unsupported meeting action",
        ],
    );
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn meeting_room_options_match_reference() {
    let (a, b) = (member(0, 0), member(1, 1));
    let mut s = Script::default();
    for options in [
        "{}",
        r#"{"meeting_title": "Working session", "max_agenda_items": 20}"#,
        r#"{"max_agenda_items": 1}"#,
        r#"{"max_agenda_items": 0}"#,
        r#"{"max_agenda_items": -1}"#,
        r#"{"max_agenda_items": 50}"#,
        r#"{"max_agenda_items": 60}"#,
        r#"{"max_agenda_items": "2"}"#,
        r#"{"max_agenda_items": 2.9}"#,
        r#"{"max_agenda_items": true}"#,
        r#"{"max_agenda_items": false}"#,
        r#"{"max_agenda_items": 100000000000000000000}"#,
        r#"{"max_agenda_items": null}"#,
        r#"{"max_agenda_items": "two"}"#,
        r#"{"max_agenda_items": [2]}"#,
        r#"{"meeting_title": ""}"#,
        r#"{"meeting_title": null}"#,
        r#"{"meeting_title": 0}"#,
        r#"{"meeting_title": 7}"#,
        r#"{"meeting_title": 2.50}"#,
        r#"{"meeting_title": {"k": [true, null]}}"#,
    ] {
        s.room(MEETING, j(options));
        s.init(&[a.clone(), b.clone()]);
        for i in 0..62 {
            s.act(
                &b,
                action("add_agenda", obj! { "text" => format!("item {i}") }),
            );
        }
        s.view(&a);
    }
    for title in [
        text(300, "x"),
        text(250, "人"),
        text(201, "😀"),
        Value::from("\u{7f}\u{1}tab\t"),
    ] {
        s.room(MEETING, Value::Object(obj! { "meeting_title" => title }));
        s.init(std::slice::from_ref(&a));
    }
    s.room(MEETING, j("{}"));
    s.init(&[]);
    s.init(&[member(7, 9), member(8, 3), member(9, 3)]);
    let mut odd = member(6, 2);
    if let Value::Object(m) = &mut odd {
        m.remove("status");
    }
    s.init(&[
        odd.clone(),
        j(&format!(
            r#"{{"public_key":"{}","seat":1,"status":null}}"#,
            pk(10)
        )),
    ]);
    s.init(&[
        odd,
        j(&format!(r#"{{"public_key":"{}","seat":1.5}}"#, pk(11))),
    ]);
    let lines = same_as_reference(&s);
    assert!(errors(&lines).contains("agenda is full"));
    assert!(errors(&lines).contains("min() arg is an empty sequence"));
}

/// splitmix64: a fixed sequence of pseudo-random numbers per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A value for a text field: mostly valid, sometimes at or past a bound,
/// sometimes of the wrong type.
fn random_text(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => rng.pick(&bad_texts()),
        1 => text(
            rng.pick(&[99, 100, 101, 199, 200, 201, 499, 500, 501, 1999, 2000, 2001]),
            "x",
        ),
        2 => text(rng.pick(&[50, 100, 101, 250, 251, 1000, 1001]), "é"),
        3 => Value::from(format!(" \u{3000}spaced {} \u{1f}", rng.below(100))),
        _ => Value::from(format!("text {}", rng.below(1000))),
    }
}

fn random_number(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => Value::Bool(rng.chance(50)),
        1 => Value::from(rng.pick(&[-1.0, 0.0, 1.0, 2.5])),
        2 => Value::Number(Number::BigInt("100000000000000000000".into())),
        3 => Value::from(format!("{}", rng.below(4))),
        4 => Value::Null,
        _ => Value::from(rng.below(8) as i64 - 1),
    }
}

fn random_action(rng: &mut Rng, keys: &[String]) -> Value {
    let kinds = [
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
        "bogus",
    ];
    let mut m = Map::new();
    if !rng.chance(3) {
        m.insert("kind", Value::from(rng.pick(&kinds)));
    }
    for field in ["text", "topic", "question"] {
        if rng.chance(70) {
            m.insert(field, random_text(rng));
        }
    }
    if rng.chance(80) {
        let n = rng.pick(&[0, 1, 2, 2, 3, 3, 4, 6, 7]);
        let choices: Vec<Value> = (0..n)
            .map(|i| {
                if rng.chance(90) {
                    Value::from(format!("c{i}"))
                } else {
                    random_text(rng)
                }
            })
            .collect();
        m.insert(
            "choices",
            if rng.chance(95) {
                Value::Array(choices)
            } else {
                Value::from("a,b")
            },
        );
    }
    for field in ["choice", "item_id"] {
        if rng.chance(85) {
            m.insert(field, random_number(rng));
        }
    }
    for field in ["assignee", "public_key"] {
        if rng.chance(70) {
            let v = match rng.below(6) {
                0 => Value::from(""),
                1 => Value::Null,
                2 => Value::from(3),
                _ => Value::from(rng.pick(keys)),
            };
            m.insert(field, v);
        }
    }
    Value::Object(m)
}

/// Long seeded random sessions: both rooms, every kind of step.
fn random_script(room: &str, seed: u64, steps: usize) -> Script {
    let mut rng = Rng(seed);
    let pool: Vec<Value> = (0..7).map(|n| member(n, n as i64)).collect();
    let keys: Vec<String> = (0..8).map(pk).collect();
    let mut s = Script::default();
    let options = match room {
        COMMUNITY => j(r#"{"history_limit": 20}"#),
        _ => j(r#"{"max_agenda_items": 6}"#),
    };
    s.room(room, options);
    let first = 2 + rng.below(3);
    s.init(&pool[..first]);
    for _ in 0..steps {
        // Seat 0 (the owner, and the first facilitator) acts more often.
        let who = if rng.chance(30) {
            pool[0].clone()
        } else {
            rng.pick(&pool)
        };
        match rng.below(100) {
            0..=79 => s.act(&who, random_action(&mut rng, &keys)),
            80..=86 => s.view(&who),
            87..=90 => s.join(&who),
            91..=94 => s.leave(
                &who,
                rng.pick(&["left", "timeout", "membership_changed_during_failover"]),
            ),
            95..=96 => s.leader(&rng.pick(&keys), &rng.pick(&keys)),
            97..=98 => s.restore(&pool[..first], rng.below(10) as u64),
            _ => s.snapshot(),
        }
    }
    s
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn random_sessions_match_reference() {
    let mut all = Script::default();
    for seed in 1..=10u64 {
        for room in [COMMUNITY, MEETING] {
            all.steps
                .extend(random_script(room, seed * 7919, 800).steps);
        }
    }
    let lines = same_as_reference(&all);
    // The sessions reached every event of both rooms and most refusals.
    let mut kinds = BTreeSet::new();
    for line in &lines {
        let events = j(line).get("ok").and_then(|ok| ok.get("events")).cloned();
        for event in events
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            kinds.insert(event.get_str("kind").unwrap_or_default().to_owned());
        }
    }
    for kind in [
        "message",
        "topic_changed",
        "room_closed",
        "member_joined",
        "member_left",
        "leader_changed",
        "agenda_added",
        "agenda_advanced",
        "speaking_queue_changed",
        "speaker_yielded",
        "vote_opened",
        "vote_cast",
        "vote_closed",
        "action_item_added",
        "action_item_completed",
        "facilitator_transferred",
        "meeting_ended",
        "network_leader_changed",
    ] {
        assert!(
            kinds.contains(kind),
            "no random step produced {kind}: {kinds:?}"
        );
    }
    let refused = errors(&lines);
    assert!(
        refused.len() >= 20,
        "only {} distinct refusals: {refused:#?}",
        refused.len()
    );
}
