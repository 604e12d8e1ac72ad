//! Whispers against the reference client: the same texts on the same state
//! dirs through the reference's keyword bridge and materialize step
//! (tests/whisper_diff/driver.py) and through `palaver session whisper`;
//! the structured result and every file written must be the same, up to
//! fresh ids and timestamps.
//!
//! Needs `PALAVER_REFERENCE_PYTHON` (scripts/test sets it); `#[ignore]`d
//! like the other reference tests, and a missing interpreter fails.

use crate::common;

use palaver::engine::whisper::{Schema, parse_intent};
use palaver::json::{self, Map, Value, canonical};
use std::path::Path;
use std::process::{Command, Stdio};

const PROTOCOLS: [&str; 11] = [
    "rps-v1",
    "coin-flip-v1",
    "guess-number-v1",
    "gomoku-v1",
    "connect4-v1",
    "reversi-v1",
    "hero-duel-v1",
    "weak-wins-all",
    "crazy-eights-v1",
    "briscola-v1",
    "human-chat-v1",
];

const TEXTS: [&str; 66] = [
    "always paper",
    "Always play ROCK",
    "keep scissors",
    "from now on heads",
    "every round tails",
    "一直出布",
    "总是出石头",
    "以后都出剪刀",
    "接下来都出纸",
    "保持正面",
    "固定反面",
    "这轮出石头",
    "这一轮出布",
    "下一轮出剪刀",
    "下一手出石头",
    "下次出布",
    "只出一次剪刀",
    "this round rock",
    "this turn paper",
    "next round scissors",
    "next: heads",
    "once tails",
    "just this once play rock",
    "one time paper",
    "mirror them",
    "copy opponent",
    "模仿对方上一轮",
    "对方出啥我出啥",
    "counter the opponent",
    "beat opponent",
    "克制对方",
    "打败上一轮",
    "repeat own move",
    "重复自己上一轮",
    "继续上一次",
    "下一轮克制",
    "下一手打败他",
    "下一轮模仿",
    "下次跟着",
    "next round counter",
    "always counter",
    "bid 7",
    "always bid 12",
    "一直押5",
    "下一轮押 3",
    "guess 50",
    "this round guess 42",
    "next guess 17",
    "play column 3",
    "x 7 y 9",
    "出 ７",
    "bet 0007",
    "123456789012345678901234567890",
    "use skill a",
    "ult now",
    "normal attack",
    "draw a card",
    "pass",
    "play the ace",
    "hello there",
    "随便",
    "   spaced    out   \t words  ",
    "R",
    "P S",
    "正",
    "tail",
];

/// The window key each protocol's decisions use.
fn match_key(protocol: &str) -> &'static str {
    match protocol {
        "guess-number-v1" => "attempt",
        "crazy-eights-v1" | "briscola-v1" => "action_seq",
        _ => "round",
    }
}

/// Writes the same starting files into a dir: 0 = nothing, 1 = a snapshot
/// at round 3 and an open window at 2, 2 = that window already finalized,
/// 3 = only a snapshot at round 5.
fn setup(dir: &Path, protocol: &str, kind: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let mk = match_key(protocol);
    if kind == 1 || kind == 2 {
        std::fs::write(dir.join("snapshot.json"), r#"{"round": 3}"#).unwrap();
        std::fs::create_dir_all(dir.join("decision")).unwrap();
        std::fs::write(
            dir.join("decision/state.json"),
            format!(r#"{{"match_key": "{mk}", "match_value": 2, "status": "open"}}"#),
        )
        .unwrap();
    }
    if kind == 2 {
        std::fs::write(
            dir.join("decision/finalized.json"),
            format!(r#"{{"{mk}:2": {{"reason": "consumed"}}}}"#),
        )
        .unwrap();
    }
    if kind == 3 {
        std::fs::write(dir.join("snapshot.json"), r#"{"round": 5}"#).unwrap();
    }
}

const VOLATILE: [&str; 9] = [
    "id",
    "ts",
    "whisper_id",
    "idempotency_key",
    "decision_id",
    "intent_id",
    "caused_by_whisper_id",
    "request_ts",
    "updated_at",
];

/// Fresh ids and times become `<x>`; a JSON-encoded `detail` is decoded.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m.iter() {
                let nx = if VOLATILE.contains(&k) && x.as_str().is_some() {
                    Value::from("<x>")
                } else if k == "detail"
                    && let Some(s) = x.as_str()
                    && let Ok(parsed) = json::parse_str(s)
                {
                    Value::from(format!(
                        "json:{}",
                        canonical::to_string_ordered(&normalize(&parsed))
                    ))
                } else {
                    normalize(x)
                };
                out.insert(k, nx);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

const FILES: [&str; 7] = [
    "whispers.jsonl",
    "whisper_acks.jsonl",
    "strategy.json",
    "strategy_events.jsonl",
    "decision/decisions.jsonl",
    "intervention_intents.jsonl",
    "decision/finalized.json",
];

/// Each file's lines (or whole JSON), normalized, as ordered JSON text.
fn files_of(dir: &Path) -> Vec<(String, Vec<String>)> {
    FILES
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            let lines: Vec<String> = if f.ends_with(".json") {
                if text.is_empty() {
                    vec![]
                } else {
                    vec![canonical::to_string_ordered(&normalize(
                        &json::parse_str(&text).unwrap(),
                    ))]
                }
            } else {
                text.lines()
                    .map(|l| canonical::to_string_ordered(&normalize(&json::parse_str(l).unwrap())))
                    .collect()
            };
            ((*f).to_owned(), lines)
        })
        .collect()
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn whispers_match_the_reference() {
    let py = common::reference_python();
    let root = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    let mut plan = Vec::new();
    let mut n = 0usize;
    for protocol in PROTOCOLS {
        for (i, text) in TEXTS.iter().enumerate() {
            let kind = (i + n) % 4;
            let role = if i % 23 == 22 { "agent" } else { "user" };
            let ours = root.path().join(format!("p{n}"));
            let theirs = root.path().join(format!("r{n}"));
            setup(&ours, protocol, kind);
            setup(&theirs, protocol, kind);
            let spec: Map = palaver::json::parse_str(
                &std::fs::read_to_string(format!(
                    "{}/assets/protocols/{protocol}/spec.json",
                    env!("CARGO_MANIFEST_DIR")
                ))
                .unwrap(),
            )
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
            let name = spec.get("name").unwrap().as_str().unwrap().to_owned();
            cases.push(Value::Object(palaver::obj! {
                "dir" => theirs.display().to_string(), "protocol" => name.as_str(), "text" => *text,
                "role" => role,
            }));
            plan.push((protocol, *text, role, ours, theirs, name));
            n += 1;
        }
    }
    assert!(TEXTS.len() >= 60);
    let mut child = Command::new(&py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/whisper_diff/driver.py"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(canonical::to_string_ordered(&Value::Array(cases)).as_bytes())
            .unwrap();
    }
    let out = common::ok(child.wait_with_output().unwrap(), "whisper driver");
    let theirs_all = json::parse_str(&out).unwrap();
    let theirs_all = theirs_all.as_array().unwrap();
    assert_eq!(theirs_all.len(), plan.len());
    let mut failures = Vec::new();
    let mut statuses = std::collections::BTreeMap::new();
    for ((protocol, text, role, ours, theirs_dir, name), theirs) in plan.iter().zip(theirs_all) {
        let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["--json", "session", "whisper"])
            .arg(ours)
            .arg(text)
            .args(["--role", role])
            .arg("--protocol-dir")
            .arg(format!(
                "{}/assets/protocols/{protocol}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .output()
            .unwrap();
        let ours_out = common::ok(o, "palaver session whisper");
        let mut ours_v = json::parse_str(&ours_out).unwrap();
        // The pure parser must agree too.
        let direct = parse_intent(text.trim(), Schema::for_protocol(name).as_ref())
            .map(|i| Value::Object(i.to_json()))
            .unwrap_or(Value::Null);
        if role == &"user" && direct != *theirs.get("intent").unwrap() {
            failures.push(format!(
                "{protocol} {text:?}: parse_intent {} vs reference {}",
                canonical::to_string_ordered(&direct),
                canonical::to_string_ordered(theirs.get("intent").unwrap())
            ));
        }
        if let Value::Object(m) = &mut ours_v
            && role != &"user"
        {
            m.insert("intent", Value::Null);
        }
        let (a, b) = (normalize(&ours_v), normalize(theirs));
        if canonical::to_string_ordered(&a) != canonical::to_string_ordered(&b) {
            failures.push(format!(
                "{protocol} {text:?}: output\n  palaver   {}\n  reference {}",
                canonical::to_string_ordered(&a),
                canonical::to_string_ordered(&b)
            ));
        }
        let (fa, fb) = (files_of(ours), files_of(theirs_dir));
        for ((f, la), (_, lb)) in fa.iter().zip(&fb) {
            if la != lb {
                failures.push(format!(
                    "{protocol} {text:?}: {f}\n  palaver   {la:?}\n  reference {lb:?}"
                ));
            }
        }
        *statuses
            .entry(theirs.get("ack_status").unwrap().py_str())
            .or_insert(0) += 1;
    }
    eprintln!("ack statuses covered: {statuses:?}");
    for s in [
        "strategy_active",
        "policy_active",
        "decision_queued",
        "intent_queued",
        "rejected_finalized",
        "unparsed",
    ] {
        assert!(statuses.contains_key(s), "no case reached {s}");
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A palaver daemon (`protocol test … --daemon`): (parent, engine dir).
fn palaver_daemon(data: &Path, args: &[&str]) -> (std::path::PathBuf, std::path::PathBuf) {
    let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("--data-dir")
        .arg(data)
        .args(["protocol", "test"])
        .args(args)
        .arg("--daemon")
        .output()
        .unwrap();
    let v = json::parse_bytes(common::ok(o, "palaver protocol test --daemon").as_bytes()).unwrap();
    let s = |k: &str| std::path::PathBuf::from(v.get(k).unwrap().as_str().unwrap());
    (s("state_dir"), s("engine_state_dir"))
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(
            t0.elapsed().as_secs() < secs,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn session_status(parent: &Path) -> String {
    palaver::session::files::read_json_object(&parent.join("session.json"))
        .and_then(|m| m.get("status").map(Value::py_str))
        .unwrap_or_default()
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn the_reference_whisper_steers_a_running_palaver_session() {
    let py = common::reference_python();
    let data = tempfile::tempdir().unwrap();
    let (parent, child) = palaver_daemon(
        data.path(),
        &[
            "rps-v1",
            "--role",
            "guest",
            "--control-mode",
            "autonomous",
            "--options",
            r#"{"best_of":6,"termination":"fixed_rounds","round_delay_seconds":1}"#,
        ],
    );
    let rounds = || palaver::session::files::read_jsonl(&child.join("details.jsonl"));
    wait_until("the first round", 20, || !rounds().is_empty());
    let o = Command::new(&py)
        .args(["-m", "aigenora", "session", "whisper", "--state-dir"])
        .arg(&parent)
        .args(["--text", "always paper", "--json"])
        .output()
        .unwrap();
    let out = common::ok(o, "aigenora session whisper");
    let answer = json::parse_str(&out).unwrap();
    let id = answer
        .get("entry")
        .and_then(|e| e.get("id"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let whispered_at = rounds().len();
    wait_until("the session to close", 30, || {
        session_status(&parent) == "closed"
    });
    let all = rounds();
    assert_eq!(all.len(), 6, "{all:?}");
    // Rounds after the whisper (one may have been chosen already) play paper.
    for r in &all[(whispered_at + 1).min(6)..] {
        assert_eq!(
            r.get("guest_choice").and_then(Value::as_str),
            Some("paper"),
            "{all:?}"
        );
    }
    assert!(whispered_at + 1 < 6, "the session ran past the whisper");
    // The engine acknowledged it once and said so in the feed.
    let acks = palaver::session::files::read_jsonl(&child.join("whisper_acks.jsonl"));
    let ours: Vec<_> = acks
        .iter()
        .filter(|a| a.get("agent_id").and_then(Value::as_str) == Some("engine"))
        .collect();
    assert_eq!(ours.len(), 1, "{acks:?}");
    assert_eq!(
        ours[0].get("whisper_id").and_then(Value::as_str),
        Some(id.as_str())
    );
    assert_eq!(
        ours[0].get("status").and_then(Value::as_str),
        Some("decision_produced")
    );
    let events = palaver::session::files::read_jsonl(&parent.join("events.jsonl"));
    assert!(
        events.iter().any(
            |e| e.get("type").and_then(Value::as_str) == Some("whisper_applied")
                && e.get("data")
                    .and_then(|d| d.get("whisper_id"))
                    .and_then(Value::as_str)
                    == Some(id.as_str())
        ),
        "no whisper_applied event"
    );
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn palavers_whisper_steers_a_running_reference_session() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    common::ok(
        Command::new(&py)
            .args(["-m", "aigenora", "init", "--data-dir"])
            .arg(&data)
            .output()
            .unwrap(),
        "aigenora init",
    );
    let o = Command::new(&py)
        .args(["-m", "aigenora", "protocol", "path", "rps-v1", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let proto = common::ok(o, "aigenora protocol path").trim().to_owned();
    let base = tmp.path().join("states");
    // The reference plays both sides of six rounds, a second apart.
    let mut run = common::Kill(
        Command::new(&py)
            .args(["-m", "aigenora", "protocol", "test", &proto, "--state-base"])
            .arg(&base)
            .args([
                "--options",
                r#"{"best_of":6,"termination":"fixed_rounds","round_delay_seconds":1}"#,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let guest = || {
        std::fs::read_dir(&base)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("guest-"))
            })
    };
    wait_until("the reference's guest dir", 30, || guest().is_some());
    let dir = guest().unwrap();
    let rounds = || palaver::session::files::read_jsonl(&dir.join("details.jsonl"));
    wait_until("the first round", 30, || !rounds().is_empty());
    let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["session", "whisper"])
        .arg(&dir)
        .args(["always paper", "--json"])
        .output()
        .unwrap();
    let out = common::ok(o, "palaver session whisper");
    assert!(out.contains("strategy_active"), "{out}");
    let whispered_at = rounds().len();
    assert!(
        run.0.wait().unwrap().success(),
        "the reference's test failed"
    );
    let all = rounds();
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(whispered_at + 1 < 6, "the session ran past the whisper");
    for r in &all[whispered_at + 1..] {
        assert_eq!(
            r.get("guest_choice").and_then(Value::as_str),
            Some("paper"),
            "{all:?}"
        );
    }
}

/// A one-shot policy whisper from palaver's own CLI ("下一轮克制": counter
/// their last move, next round only) to a running palaver session in
/// hybrid mode: the next round plays the counter to the host's previous
/// move (origin `policy_runner`), and the rounds after go back to the
/// strategy.
#[test]
fn a_one_shot_policy_whisper_counters_the_next_round() {
    let data = tempfile::tempdir().unwrap();
    let (parent, child) = palaver_daemon(
        data.path(),
        &[
            "rps-v1",
            "--role",
            "guest",
            "--control-mode",
            "hybrid",
            "--options",
            r#"{"best_of":5,"termination":"fixed_rounds","round_delay_seconds":1}"#,
        ],
    );
    let rounds = || palaver::session::files::read_jsonl(&child.join("details.jsonl"));
    wait_until("the first round", 20, || !rounds().is_empty());
    let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["session", "whisper"])
        .arg(&parent)
        .args(["下一轮克制对方", "--json"])
        .output()
        .unwrap();
    let out = common::ok(o, "palaver session whisper");
    assert!(out.contains("intent_queued"), "{out}");
    wait_until("the session to close", 30, || {
        session_status(&parent) == "closed"
    });
    let all = rounds();
    assert_eq!(all.len(), 5, "{all:?}");
    let intents = palaver::session::files::read_jsonl(&child.join("intervention_intents.jsonl"));
    let done = intents
        .iter()
        .find(|l| l.get("status_event").is_some())
        .unwrap_or_else(|| panic!("the intent was never taken up: {intents:?}"));
    assert_eq!(
        done.get("reason").and_then(Value::as_str),
        Some("policy_decision_written"),
        "{intents:?}"
    );
    // The decision it wrote: the counter to the host's previous move.
    let decisions = palaver::session::files::read_jsonl(&child.join("decision/decisions.jsonl"));
    let d = decisions
        .iter()
        .find(|d| {
            d.get("_meta")
                .and_then(|m| m.get("origin"))
                .and_then(Value::as_str)
                == Some("policy_runner")
        })
        .unwrap_or_else(|| panic!("no policy_runner decision: {decisions:?}"));
    let round = d.get("round").and_then(Value::as_i64).unwrap() as usize;
    assert!(round >= 1, "{d:?}");
    let host_before = all[round - 1]
        .get("host_choice")
        .and_then(Value::as_str)
        .unwrap();
    let counter = match host_before {
        "rock" => "paper",
        "paper" => "scissors",
        _ => "rock",
    };
    assert_eq!(
        d.get("choice").and_then(Value::as_str),
        Some(counter),
        "{d:?}"
    );
    assert_eq!(
        all[round].get("guest_choice").and_then(Value::as_str),
        Some(counter),
        "{all:?}"
    );
}
