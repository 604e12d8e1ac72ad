//! Replay of finished sessions (`session::replay`, `palaver session
//! replay`): state dirs made here by playing sessions through the library
//! (rps, connect4, reversi; a hybrid session with a person's and a
//! whisper's decisions), the reference's state dirs (the stored fixture, and
//! one made by running the reference's `protocol test`, ignored without
//! it), torn and odd files, and the CLI's `--json`; a werewolf game's .log
//! (the reference server's sample and one `palaver wolf play` writes)
//! through the CLI.

use crate::common;

use palaver::engine::{ControlMode, Role};
use palaver::json::{Map, Value};
use palaver::library;
use palaver::obj;
use palaver::session::replay::{self, Actor, StepKind, Timeline};
use palaver::session::{StateDir, SubmitOptions, files, submit};
use std::path::{Path, PathBuf};

fn snapshot(parent: &Path) -> Map {
    let dir = StateDir::resolve(parent).unwrap();
    files::read_json_object(&dir.child.join("snapshot.json")).unwrap()
}

fn kinds(t: &Timeline, k: StepKind) -> usize {
    t.steps.iter().filter(|s| s.kind == k).count()
}

#[tokio::test]
async fn rps_frames_rounds_decisions_and_end() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "rps-v1",
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let t = replay::load(&parent).unwrap();
    assert!(t.finished, "{t:?}");
    assert_eq!(t.protocol_name.as_deref(), Some("Rock-Paper-Scissors"));
    assert_eq!(t.role.as_deref(), Some("guest"));
    assert!(!t.room);
    assert!(kinds(&t, StepKind::Sent) >= 3, "{t:#?}");
    assert!(kinds(&t, StepKind::Received) >= 3);
    assert!(kinds(&t, StepKind::RoundResult) >= 2);
    assert_eq!(kinds(&t, StepKind::Ended), 1);
    assert_eq!(t.steps.last().unwrap().kind, StepKind::Ended);
    // Every decision was the strategy's; nobody intervened.
    let decisions: Vec<_> = t
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Decision)
        .collect();
    assert!(!decisions.is_empty());
    assert!(decisions.iter().all(|s| s.by == Some(Actor::Strategy)));
    assert!(t.interventions().is_empty());
    // Times only go forward, from 0.
    assert_eq!(t.steps[0].t, 0.0);
    assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));
    // The score grows round by round and ends as the snapshot says.
    let first = t
        .steps
        .iter()
        .find(|s| s.kind == StepKind::RoundResult)
        .unwrap();
    let sc = first.state.get("score").unwrap();
    let total = |v: &Value| {
        v.get("host").and_then(Value::as_i64).unwrap()
            + v.get("guest").and_then(Value::as_i64).unwrap()
    };
    assert!(total(sc) <= 1, "{sc:?}");
    let end = &t.steps.last().unwrap().state;
    assert_eq!(end.get("score"), snapshot(&parent).get("score"));
    assert_eq!(end.get("phase").and_then(Value::as_str), Some("game_over"));
    // The state before the first frame has no score yet.
    assert!(t.steps[0].state.get("score").is_none());
}

/// The board at each round_result, then at the end, is the one the live
/// snapshot ended with.
async fn board_game(alias: &str) {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        alias,
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let t = replay::load(&parent).unwrap();
    let snap = snapshot(&parent);
    let last_result = t
        .steps
        .iter()
        .rev()
        .find(|s| s.kind == StepKind::RoundResult)
        .unwrap();
    assert_eq!(
        last_result.state.get("board"),
        snap.get("board"),
        "{alias}: rebuilt board differs from the snapshot's"
    );
    // Stones appear move by move.
    let stones = |m: &Map| {
        replay::board_rows(m)
            .map(|rows| {
                rows.iter()
                    .map(|r| r.chars().filter(|c| *c != '.').count())
                    .sum::<usize>()
            })
            .unwrap_or(0)
    };
    let counts: Vec<usize> = t.steps.iter().map(|s| stones(&s.state)).collect();
    assert!(
        counts.iter().any(|c| *c > 0 && *c < stones(&snap)),
        "{counts:?}"
    );
    if alias == "connect4-v1" {
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    } else {
        let s = &last_result.state;
        assert_eq!(s.get("black"), snap.get("black"));
        assert_eq!(s.get("white"), snap.get("white"));
    }
}

#[tokio::test]
async fn connect4_board_is_rebuilt_from_frames() {
    board_game("connect4-v1").await;
}

#[tokio::test]
async fn reversi_board_is_rebuilt_from_frames() {
    board_game("reversi-v1").await;
}

#[tokio::test]
async fn human_and_whisper_interventions_are_marked() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "rps-v1",
        Role::Host,
        ControlMode::Hybrid,
        |dir| {
            // On file before the windows open: a person's for round 0, one
            // a whisper caused for round 1, and the whisper itself.
            let r = submit(
                &dir.child,
                obj! { "round" => 0, "choice" => "rock" },
                &SubmitOptions {
                    origin: "console".into(),
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(r.ok, "{r:?}");
            let rec = obj! { "round" => 1, "choice" => "paper", "_meta" => obj! {
                "decision_id" => "dec_w1", "origin" => "whisper_bridge", "caused_by_whisper_id" => "abc123def456",
            }};
            files::append_line(
                &dir.child.join("decision").join("decisions.jsonl"),
                &Value::Object(rec),
            )
            .unwrap();
            let w = obj! { "id" => "abc123def456", "ts" => palaver::utc::iso_now(), "role" => "user", "text" => "play paper next", "origin" => "cli" };
            files::append_line(&dir.child.join("whispers.jsonl"), &Value::Object(w)).unwrap();
        },
    )
    .await;
    let t = replay::load(&parent).unwrap();
    let by: Vec<Actor> = t.steps.iter().filter_map(|s| s.by).collect();
    assert!(by.contains(&Actor::Human), "{t:#?}");
    assert!(by.contains(&Actor::Whisper), "{by:?}");
    let human = t.steps.iter().find(|s| s.by == Some(Actor::Human)).unwrap();
    assert!(human.summary.contains("rock"), "{}", human.summary);
    assert!(
        t.steps
            .iter()
            .any(|s| s.kind == StepKind::Whisper && s.summary.contains("play paper next"))
    );
    assert!(kinds(&t, StepKind::Window) >= 2);
    assert!(t.interventions().len() >= 3, "{:?}", t.interventions());
    assert_eq!(
        t.steps[t.interventions()[0]]
            .state
            .get("decided_by")
            .and_then(Value::as_str),
        t.steps[t.interventions()[0]].by.map(Actor::as_str)
    );
}

#[tokio::test]
async fn torn_unknown_and_odd_lines_never_break_it() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "rps-v1",
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let whole = replay::load(&parent).unwrap().steps.len();
    let events = parent.join("events.jsonl");
    let mut text = std::fs::read_to_string(&events).unwrap();
    text.push_str("not json at all\n");
    text.push_str("[1,2,3]\n");
    text.push_str(
        "{\"ts\":\"2099-01-01T00:00:00+00:00\",\"type\":\"something_new\",\"data\":{\"x\":1}}\n",
    );
    text.push_str("{\"ts\":\"garbage\",\"type\":\"protocol_message\",\"data\":{\"direction\":\"received\",\"msg\":{\"action\":\"move\",\"row\":99999999999999999999,\"col\":-5}}}\n");
    text.push_str("{\"type\":\"protocol_message\",\"data\":{\"msg\":\"not an object\"}}\n");
    text.push_str("{\"ts\":\"2099-01-01T00:00:01+00:00\",\"type\":\"session_end"); // torn
    std::fs::write(&events, text).unwrap();
    let t = replay::load(&parent).unwrap();
    assert!(t.steps.iter().any(|s| s.action == "something_new"));
    assert_eq!(t.steps.len(), whole + 3, "{:#?}", &t.steps[whole - 1..]);
    assert!(t.steps.windows(2).all(|w| w[0].t <= w[1].t));

    // Odd files: a snapshot that is not an object, a board of silly dims,
    // an events file that is a directory, whispers without fields.
    let odd = data.path().join("odd");
    let child = odd.join("guest-1");
    std::fs::create_dir_all(child.join("events.jsonl")).unwrap();
    std::fs::write(
        odd.join("session.json"),
        "{\"role\":7,\"protocol_name\":\"Connect Four\"}",
    )
    .unwrap();
    std::fs::write(child.join("snapshot.json"), "[]").unwrap();
    std::fs::write(odd.join("events.jsonl"), concat!(
        "{\"ts\":\"2026-01-01T00:00:00+00:00\",\"type\":\"protocol_message\",\"data\":{\"direction\":\"sent\",\"msg\":{\"action\":\"join\",\"cols\":1000000,\"rows\":-1}}}\n",
        "{\"ts\":\"2026-01-01T00:00:01+00:00\",\"type\":\"protocol_message\",\"data\":{\"direction\":\"sent\",\"msg\":{\"action\":\"move\",\"col\":3}}}\n",
        "{\"ts\":\"2026-01-01T00:00:02+00:00\",\"type\":\"local_decision_consumed\",\"data\":{\"decision\":5}}\n",
        "{\"ts\":\"2026-01-01T00:00:03+00:00\",\"type\":\"session_ended\",\"data\":{\"reason\":[1]}}\n",
    )).unwrap();
    std::fs::write(child.join("whispers.jsonl"), "{}\n{\"text\":5}\n").unwrap();
    let t = replay::load(&odd).unwrap();
    assert!(t.finished);
    assert_eq!(t.steps.len(), 6, "{t:#?}");
    assert!(t.steps.iter().all(|s| s.state.get("board").is_none()));

    assert!(replay::load(&data.path().join("nowhere")).is_err());
}

fn reference_fixture(name: &str) -> PathBuf {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-state/rps-protocol-test");
    std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(name))
        .unwrap()
}

fn check_reference(t: &Timeline, child: &Path) {
    let snap = files::read_json_object(&child.join("snapshot.json")).unwrap();
    assert!(t.finished, "{t:#?}");
    assert!(kinds(t, StepKind::RoundResult) >= 2, "{t:#?}");
    assert!(t.steps.iter().any(|s| s.by == Some(Actor::Strategy)));
    assert!(t.steps.iter().any(|s| s.by == Some(Actor::Autonomous)));
    let end = t.steps.last().unwrap();
    assert_eq!(end.kind, StepKind::Ended);
    assert_eq!(end.state.get("score"), snap.get("score"));
}

#[test]
fn reference_fixture_replays() {
    for side in ["host-", "guest-"] {
        let child = reference_fixture(side);
        let t = replay::load(&child).unwrap();
        check_reference(&t, &child);
    }
}

#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON or target/reference-venv)"]
fn reference_protocol_test_state_dir_replays() {
    let python = common::reference_python();
    let base = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import aigenora, os; print(os.path.dirname(aigenora.__file__))",
        ])
        .output()
        .unwrap();
    let pkg = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let pid = library::bundled_spec("rps-v1")
        .unwrap()
        .protocol_id()
        .to_owned();
    let proto = pkg.join("protocols").join(&pid[..8]).join(&pid[8..]);
    assert!(proto.join("spec.json").is_file(), "{}", proto.display());
    let run = std::process::Command::new(&python)
        .args(["-m", "aigenora", "protocol", "test", "--state-base"])
        .arg(base.path())
        .arg(&proto)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut n = 0;
    for e in std::fs::read_dir(base.path()).unwrap() {
        let child = e.unwrap().path();
        let t = replay::load(&child).unwrap();
        check_reference(&t, &child);
        n += 1;
    }
    assert_eq!(n, 2);
}

#[tokio::test]
async fn cli_prints_the_timeline() {
    let data = tempfile::tempdir().unwrap();
    let parent = common::played::session(
        data.path(),
        "connect4-v1",
        Role::Guest,
        ControlMode::Autonomous,
        |_| {},
    )
    .await;
    let bin = env!("CARGO_BIN_EXE_palaver");
    let o = std::process::Command::new(bin)
        .args(["session", "replay", "--json"])
        .arg(&parent)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["finished"], true);
    assert_eq!(v["protocol_name"], "Connect Four");
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() > 5);
    assert_eq!(steps[0]["kind"], "sent");
    assert_eq!(steps.last().unwrap()["kind"], "ended");
    assert!(
        steps
            .iter()
            .any(|s| s["kind"] == "round_result" && s["state"]["board"].is_array())
    );
    assert!(
        steps
            .iter()
            .all(|s| s["t"].is_number() && s["summary"].is_string())
    );

    // Text, paced: a high speed still prints every step, in order.
    let o = std::process::Command::new(bin)
        .args(["--data-dir"])
        .arg(data.path())
        .args(["session", "replay", "--speed", "1000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("Connect Four as guest"), "{text}");
    assert!(
        text.lines().last().unwrap().starts_with("end: completed"),
        "{text}"
    );
    let o = std::process::Command::new(bin)
        .args(["session", "replay", "--speed", "0"])
        .arg(&parent)
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn cli_replays_a_werewolf_game_log() {
    let bin = env!("CARGO_BIN_EXE_palaver");
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiwolf/v0.4.12_13p_game.log");
    let o = std::process::Command::new(bin)
        .args(["--json", "session", "replay"])
        .arg(&sample)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["werewolf"], true);
    assert_eq!(v["finished"], true);
    assert_eq!(v["winner"], "WEREWOLF");
    assert!(v.get("skipped").is_none(), "no line skipped");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 163);
    assert_eq!(steps[0]["action"], "status");
    assert_eq!(steps[0]["state"]["agents"].as_array().unwrap().len(), 13);
    let end = steps.last().unwrap();
    assert_eq!(end["kind"], "ended");
    assert_eq!(end["state"]["result"]["winner"], "WEREWOLF");
    assert_eq!(end["state"]["alive"], 6);

    // One palaver's server writes (`wolf play --game-log`), under a name
    // that says nothing: read by its content, in text, paced.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("game-9");
    let o = std::process::Command::new(bin)
        .args([
            "wolf",
            "play",
            "--players",
            "9",
            "--seed",
            "5",
            "--game-log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let winner = text.rsplit(',').next().unwrap().to_owned();
    let o = std::process::Command::new(bin)
        .args(["session", "replay", "--speed", "10000"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("werewolf game log, 9 agents"),
        "{out}"
    );
    assert!(out.contains("day 1 · "), "{out}");
    assert_eq!(
        out.lines().last().unwrap(),
        format!("end: finished, winner {winner}")
    );

    // A file that is no game log: a clear error, no panic.
    let notes = dir.path().join("notes.log");
    std::fs::write(&notes, "hello\n").unwrap();
    let o = std::process::Command::new(bin)
        .args(["session", "replay"])
        .arg(&notes)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a werewolf game log"), "{err}");
    // --help says so.
    let o = std::process::Command::new(bin)
        .args(["session", "replay", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("werewolf game's .log"), "{help}");
}
