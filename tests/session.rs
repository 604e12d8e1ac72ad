//! The session runtime: every control mode × when the decision arrives
//! (before release, between release and deadline, never, illegal) on RPS
//! and guess-number, with the decision written in-process and by a separate
//! `palaver session decide` process; the decision bus's rules; the state
//! files; and the commands on state dirs the reference client wrote.

use palaver::engine::{ControlMode, Role, SessionOutcome};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::obj;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use palaver::services::run::{Launch, engine_config, stateful_side, write_end, write_launch};
use palaver::session::{StateDir, SubmitOptions, files, submit};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    BeforeRelease,
    AfterRelease,
    Never,
    Illegal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Via {
    InProcess,
    Cli,
}

fn palaver_bin() -> &'static str {
    env!("CARGO_BIN_EXE_palaver")
}

fn decide_cli(child: &Path, body: &str) -> String {
    let o = std::process::Command::new(palaver_bin())
        .args([
            "session",
            "decide",
            child.to_str().unwrap(),
            "--decision",
            body,
        ])
        .output()
        .expect("run palaver session decide");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Waits until the decision window `key=value` is open (state.json says so).
async fn window_open(child: &Path, key: &str, value: i64) {
    let state = child.join("decision/state.json");
    let t0 = Instant::now();
    loop {
        if let Some(s) = files::read_json_object(&state)
            && s.get("match_key").and_then(Value::as_str) == Some(key)
            && s.get("match_value").and_then(Value::as_i64) == Some(value)
        {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "window {key}={value} never opened"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

struct Case {
    alias: &'static str,
    role: Role,
    key: &'static str,
    /// 0-based round for RPS, attempt 1 for guess-number.
    value: i64,
    options: &'static str,
    legal: &'static str,
    illegal: &'static str,
    /// Strategy that makes the automatic value differ from `legal`.
    strategy: &'static str,
}

const RPS: Case = Case {
    alias: "rps-v1",
    role: Role::Host,
    key: "round",
    value: 0,
    options: r#"{"best_of":1,"termination":"fixed_rounds","min_think_seconds":1,"max_think_seconds":2}"#,
    legal: r#"{"choice":"paper"}"#,
    illegal: r#"{"choice":"lizard"}"#,
    strategy: r#"{"mode":"fixed","fixed":"rock"}"#,
};

const GUESS: Case = Case {
    alias: "guess-number-v1",
    role: Role::Guest,
    key: "attempt",
    value: 1,
    options: r#"{"range_min":1,"range_max":100,"max_attempts":1,"min_think_seconds":1,"max_think_seconds":2}"#,
    legal: r#"{"number":77}"#,
    illegal: r#"{"number":"seventy"}"#,
    strategy: r#"{"mode":"fixed","number":13}"#,
};

fn obj_of(s: &str) -> Map {
    json::parse_str(s).unwrap().as_object().unwrap().clone()
}

/// The value our side played, from its events.
fn played(dir: &StateDir, alias: &str) -> Option<Value> {
    let events = files::read_jsonl(&dir.events_file());
    events.iter().find_map(|e| {
        let d = e.get("data")?;
        if d.get("direction")?.as_str()? != "sent" {
            return None;
        }
        let m = d.get("msg")?;
        match alias {
            "rps-v1" if m.get("action")?.as_str()? == "reveal" => m.get("choice").cloned(),
            "guess-number-v1" if m.get("action")?.as_str()? == "guess" => m.get("number").cloned(),
            _ => None,
        }
    })
}

async fn run_case(c: &Case, mode: ControlMode, when: When, via: Via) -> (SessionOutcome, StateDir) {
    let data = tempfile::tempdir().unwrap().keep();
    let spec = library::bundled_spec(c.alias).unwrap();
    let options = obj_of(c.options);
    let dir = StateDir::create(&data, c.role).unwrap();
    let ours = stateful_side(
        dir.clone(),
        spec,
        native_hooks_for_alias(c.alias).unwrap(),
        c.role,
        mode,
        &options,
        Some(5),
    );
    let launch = Launch {
        spec,
        protocol_dir: None,
        role: c.role,
        control_mode: mode,
        options: &options,
        pid: std::process::id(),
        status: "running",
    };
    write_launch(&dir, &launch).unwrap();
    palaver::session::StrategyFile::in_dir(&dir.child)
        .set(obj_of(c.strategy), None)
        .unwrap();
    let mut bot = Side::auto(
        native_hooks_for_alias(c.alias).unwrap(),
        Arc::new(palaver::engine::CountingSink::default()),
    );
    bot.seed = Some(9);
    let body = match when {
        When::Illegal => c.illegal,
        _ => c.legal,
    };
    let mut with_key = obj_of(body);
    with_key.insert(c.key, Value::from(c.value));
    let child = dir.child.clone();
    let (key, value) = (c.key, c.value);
    let submitter = async move {
        // When, relative to the window: hybrid's runs from its opening
        // (release) to min_think later (deadline); human's releases after
        // min_think and fails at max_think.
        match (mode, when) {
            (_, When::Never) => return,
            // Hybrid "before release": on file before the window even opens.
            (ControlMode::Hybrid, When::BeforeRelease) => {}
            (ControlMode::Hybrid, When::AfterRelease) => {
                window_open(&child, key, value).await;
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            (_, When::BeforeRelease | When::Illegal) => {
                window_open(&child, key, value).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            (_, When::AfterRelease) => {
                window_open(&child, key, value).await;
                tokio::time::sleep(Duration::from_millis(1300)).await;
            }
        }
        match via {
            Via::InProcess => {
                let r = submit(
                    &child,
                    with_key,
                    &SubmitOptions {
                        origin: "test".into(),
                        ..Default::default()
                    },
                )
                .unwrap();
                assert!(r.ok, "{r:?}");
            }
            Via::Cli => {
                let text = palaver::json::canonical::to_string_ordered(&Value::Object(with_key));
                let out = tokio::task::spawn_blocking(move || decide_cli(&child, &text))
                    .await
                    .unwrap();
                assert!(out.contains("\"status\":\"ok\""), "{out}");
            }
        }
    };
    let cfg = engine_config(std::time::Duration::from_secs(10));
    let game = async {
        match c.role {
            Role::Host => play(spec, &options, &cfg, ours.side, bot).await.0,
            Role::Guest => play(spec, &options, &cfg, bot, ours.side).await.1,
        }
    };
    let submitter = async {
        if mode != ControlMode::Autonomous {
            submitter.await;
        }
    };
    let (outcome, ()) = tokio::join!(game, submitter);
    write_end(&dir, &outcome).unwrap();
    (outcome, dir)
}

async fn matrix(c: &Case, via: Via) {
    let legal: Value = obj_of(c.legal).into_entries().pop().unwrap().1;
    let auto: Value = obj_of(c.strategy).into_entries().pop().unwrap().1;
    for mode in ControlMode::ALL {
        for when in [
            When::BeforeRelease,
            When::AfterRelease,
            When::Never,
            When::Illegal,
        ] {
            if mode == ControlMode::Autonomous && when != When::BeforeRelease {
                continue; // Autonomous never reads the bus: one run shows it.
            }
            let (o, dir) = run_case(c, mode, when, via).await;
            let tag = format!("{} {mode:?} {when:?} {via:?}: {o:?}", c.alias);
            match (mode, when) {
                (ControlMode::Autonomous, _) => {
                    assert!(o.completed, "{tag}");
                    assert_eq!(played(&dir, c.alias), Some(auto.clone()), "{tag}");
                }
                (ControlMode::Hybrid, When::BeforeRelease | When::AfterRelease) => {
                    assert!(o.completed, "{tag}");
                    assert_eq!(played(&dir, c.alias), Some(legal.clone()), "{tag}");
                }
                // No decision, or an illegal one: the automatic value.
                (ControlMode::Hybrid, _) => {
                    assert!(o.completed, "{tag}");
                    assert_eq!(played(&dir, c.alias), Some(auto.clone()), "{tag}");
                }
                (ControlMode::Human, When::BeforeRelease | When::AfterRelease) => {
                    assert!(o.completed, "{tag}");
                    assert_eq!(played(&dir, c.alias), Some(legal.clone()), "{tag}");
                }
                (ControlMode::Human, When::Never | When::Illegal) => {
                    assert!(!o.completed, "{tag}");
                    assert_eq!(o.reason, "human_decision_failed", "{tag}");
                    let kinds: Vec<String> = files::read_jsonl(&dir.events_file())
                        .iter()
                        .chain(files::read_jsonl(&dir.decision_events_file()).iter())
                        .filter_map(|e| e.get("type").map(Value::py_str))
                        .collect();
                    assert!(
                        kinds.contains(&"human_decision_failed".to_string()),
                        "{tag}: {kinds:?}"
                    );
                    let meta = files::read_json_object(&dir.session_file().unwrap()).unwrap();
                    assert_eq!(
                        meta.get("status").and_then(Value::as_str),
                        Some("aborted"),
                        "{tag}"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_modes_rps_in_process() {
    matrix(&RPS, Via::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_modes_guess_number_in_process() {
    matrix(&GUESS, Via::InProcess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_modes_rps_from_another_process() {
    matrix(&RPS, Via::Cli).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_modes_guess_number_from_another_process() {
    matrix(&GUESS, Via::Cli).await;
}

#[test]
fn submissions_follow_the_gateway_rules() {
    let d = tempfile::tempdir().unwrap();
    let child = d.path().join("host-1");
    std::fs::create_dir_all(child.join("decision")).unwrap();
    let opts = SubmitOptions {
        origin: "cli".into(),
        ..Default::default()
    };
    // No key and no open window: written as is.
    let r = submit(&child, obj_of(r#"{"choice":"rock"}"#), &opts).unwrap();
    assert!(r.ok && r.match_key.is_none());
    // An open window binds a keyless decision to it, on disk.
    files::write_json_atomic(
        &child.join("decision/state.json"),
        &Value::Object(obj! { "match_key" => "round", "match_value" => 4 }),
        false,
    )
    .unwrap();
    let r = submit(&child, obj_of(r#"{"choice":"paper"}"#), &opts).unwrap();
    assert_eq!(
        (r.match_key.as_deref(), r.match_value.clone()),
        (Some("round"), Some(Value::from(4)))
    );
    let last = files::read_jsonl(&child.join("decision/decisions.jsonl"))
        .pop()
        .unwrap();
    assert_eq!(last.get("round").and_then(Value::as_i64), Some(4));
    assert!(
        last.get("_meta")
            .and_then(|m| m.get("decision_id"))
            .and_then(Value::as_str)
            .unwrap()
            .starts_with("dec_")
    );
    // The body's own key wins over the open window.
    let r = submit(&child, obj_of(r#"{"round":7,"choice":"rock"}"#), &opts).unwrap();
    assert_eq!(r.match_value, Some(Value::from(7)));
    // A finalized window refuses.
    files::write_json_atomic(
        &child.join("decision/finalized.json"),
        &Value::Object(obj! { "round:7" => obj! { "reason" => "release" } }),
        false,
    )
    .unwrap();
    let r = submit(&child, obj_of(r#"{"round":7,"choice":"rock"}"#), &opts).unwrap();
    assert_eq!((r.ok, r.reason), (false, Some("decision_finalized")));
    // Idempotency by agent and key.
    let idem = SubmitOptions {
        origin: "web".into(),
        agent_id: Some("a1".into()),
        idempotency_key: Some("k".into()),
        require_match_key: false,
    };
    let first = submit(&child, obj_of(r#"{"round":8,"choice":"rock"}"#), &idem).unwrap();
    let again = submit(&child, obj_of(r#"{"round":8,"choice":"rock"}"#), &idem).unwrap();
    assert_eq!(again.reason, Some("duplicate_idempotency"));
    assert_eq!(again.decision_id, first.decision_id);
}

fn reference_dir(name: &str) -> PathBuf {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-state/rps-protocol-test");
    std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(name))
        .unwrap()
}

fn cli(args: &[&str]) -> (i32, String) {
    let o = std::process::Command::new(palaver_bin())
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn commands_read_state_dirs_the_reference_wrote() {
    let host = reference_dir("host-");
    let h = host.to_str().unwrap();
    let (code, out) = cli(&["session", "snapshot", h]);
    assert_eq!(code, 0);
    assert!(
        out.contains("phase: game_over") && out.contains("protocol: Rock-Paper-Scissors"),
        "{out}"
    );
    let (_, out) = cli(&["session", "snapshot", h, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["score"]["guest"], 2);
    let (_, out) = cli(&["session", "details", h]);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("R1: Paper vs Scissors -> guest (0-1)"),
        "{out}"
    );
    let (_, out) = cli(&["session", "events", h]);
    assert!(out.contains("local_decision_fallback"), "{out}");
    let (_, out) = cli(&["session", "events", h, "--json"]);
    assert!(
        out.lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
    // Writing works too: a copy of the reference's dir accepts a strategy and a decision.
    let d = tempfile::tempdir().unwrap();
    let copy = d.path().join("host-1");
    std::fs::create_dir_all(copy.join("decision")).unwrap();
    for f in [
        "snapshot.json",
        "details.jsonl",
        "events.jsonl",
        "decision/state.json",
        "decision/finalized.json",
    ] {
        std::fs::copy(host.join(f), copy.join(f)).unwrap();
    }
    let c = copy.to_str().unwrap();
    let (code, out) = cli(&[
        "session",
        "strategy",
        c,
        "--merge",
        r#"{"mode":"fixed","fixed":"rock"}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        files::read_jsonl(&copy.join("strategy_events.jsonl")).len(),
        1
    );
    // Round 5 is already finalized in the reference's run: refused.
    let (code, out) = cli(&[
        "session",
        "decide",
        c,
        "--decision",
        r#"{"round":5,"choice":"rock"}"#,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("decision_finalized"));
}

/// A whisper made while no window was open leaves an intent for the next
/// one: when that window opens in hybrid mode, a one-shot value becomes its
/// decision (origin `intent_materialize`, tied to the whisper), and a
/// one-shot policy behind it steps aside for that decision (marked
/// materialized, `explicit_decision_present`), as the reference's does;
/// nothing is left pending.
#[tokio::test]
async fn pending_whisper_intents_become_the_next_windows_decision() {
    use palaver::engine::{Decided, Decider, Window};
    use palaver::session::whisper_log::{IntentOrigin, IntentStore};
    let data = tempfile::tempdir().unwrap();
    let dir = StateDir::create(data.path(), Role::Guest).unwrap();
    let sink = Arc::new(palaver::session::StateSink::new(dir.clone()));
    let spec = library::bundled_spec("rps-v1").unwrap();
    let bus = palaver::session::DecisionBus::new(sink, Role::Guest, Map::new(), spec);
    let store = IntentStore::in_dir(&dir.child);
    let by = IntentOrigin {
        origin: "whisper",
        agent_id: Some("coach"),
        whisper_id: Some("w_1"),
    };
    let value = store
        .append(
            obj! { "created_match_key" => "round", "created_match_value" => 0,
            "value" => Value::Object(obj! { "choice" => "paper" }) },
            &by,
        )
        .unwrap();
    let policy = store
        .append(
            obj! { "created_match_key" => "round", "created_match_value" => 0,
            "policy" => Value::Object(obj! { "mode" => "policy", "name" => "counter" }) },
            &by,
        )
        .unwrap();
    let window = Window {
        match_key: "round",
        match_value: Value::from(1),
        auto: obj! { "choice" => "rock" },
        value_field: "choice",
        policy: None,
    };
    let decided = bus.decide(ControlMode::Hybrid, &window).await.unwrap();
    let Decided::Explicit(d) = decided else {
        panic!("the intent did not become the decision: {decided:?}")
    };
    assert_eq!(d.get("choice").and_then(Value::as_str), Some("paper"));
    let meta = d.get("_meta").unwrap();
    assert_eq!(
        meta.get("origin").and_then(Value::as_str),
        Some("intent_materialize")
    );
    assert_eq!(
        meta.get("caused_by_whisper_id").and_then(Value::as_str),
        Some("w_1")
    );
    let lines = files::read_jsonl(&dir.child.join("intervention_intents.jsonl"));
    let status = |id: &Value| {
        lines
            .iter()
            .filter(|l| l.get("intent_id") == Some(id) && l.contains_key("status_event"))
            .filter_map(|l| l.get("status").and_then(Value::as_str).map(str::to_owned))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        status(value.get("intent_id").unwrap()),
        vec!["materialized"]
    );
    assert_eq!(
        status(policy.get("intent_id").unwrap()),
        vec!["materialized"]
    );
    let marked = lines
        .iter()
        .find(|l| l.get("intent_id") == policy.get("intent_id") && l.contains_key("status_event"))
        .unwrap();
    assert_eq!(
        marked.get("reason").and_then(Value::as_str),
        Some("explicit_decision_present"),
        "{marked:?}"
    );
    // Nothing is left for a later window.
    assert!(store.pending_for_window(&Value::from(2)).is_empty());
}

/// A one-shot policy whisper ("counter their last move next round") runs on
/// the window's policy context: the counter to the opponent's last move
/// becomes the decision (origin `policy_runner`, tied to the whisper); a
/// policy the protocol does not run fails with the reference's reason, as
/// does any policy in a window without a context (`unsupported_context`);
/// and a person's decision already in the window is left to win.
#[tokio::test]
async fn one_shot_policy_whispers_run_on_the_windows_context() {
    use palaver::engine::{Decided, Decider, PolicyContext, Window};
    use palaver::session::whisper_log::{IntentOrigin, IntentStore};
    let data = tempfile::tempdir().unwrap();
    let dir = StateDir::create(data.path(), Role::Guest).unwrap();
    let sink = Arc::new(palaver::session::StateSink::new(dir.clone()));
    let spec = library::bundled_spec("rps-v1").unwrap();
    let bus = palaver::session::DecisionBus::new(sink.clone(), Role::Guest, Map::new(), spec);
    let store = IntentStore::in_dir(&dir.child);
    let by = IntentOrigin {
        origin: "whisper",
        agent_id: Some("coach"),
        whisper_id: Some("w_2"),
    };
    let intent = |policy: &str, round: i64| {
        store
            .append(
                obj! { "created_match_key" => "round", "created_match_value" => round,
                "policy" => Value::Object(obj! { "mode" => "policy", "policy" => policy, "params" => Map::new() }) },
                &by,
            )
            .unwrap()
    };
    let window = |round: i64| Window {
        match_key: "round",
        match_value: Value::from(round),
        auto: obj! { "choice" => "paper" },
        value_field: "choice",
        policy: Some(PolicyContext {
            value_field: "choice",
            own: "paper".into(),
            opponent: "scissors".into(),
            beats: &[
                ("rock", "scissors"),
                ("paper", "rock"),
                ("scissors", "paper"),
            ],
            policies: &["mirror_previous_opponent", "counter_previous_opponent"],
        }),
    };
    let status_of = |id: &Value| {
        files::read_jsonl(&dir.child.join("intervention_intents.jsonl"))
            .into_iter()
            .filter(|l| l.get("intent_id") == Some(id) && l.contains_key("status_event"))
            .map(|l| {
                (
                    l.get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    l.get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };

    // counter: rock beats their scissors.
    let counter = intent("counter_previous_opponent", 0);
    let repeat = intent("repeat_own_previous", 0);
    let Decided::Explicit(d) = bus.decide(ControlMode::Hybrid, &window(1)).await.unwrap() else {
        panic!("the policy did not decide")
    };
    assert_eq!(
        d.get("choice").and_then(Value::as_str),
        Some("rock"),
        "{d:?}"
    );
    let meta = d.get("_meta").unwrap();
    assert_eq!(
        meta.get("origin").and_then(Value::as_str),
        Some("policy_runner")
    );
    assert_eq!(
        meta.get("caused_by_whisper_id").and_then(Value::as_str),
        Some("w_2")
    );
    assert_eq!(
        status_of(counter.get("intent_id").unwrap()),
        vec![(
            "materialized".to_owned(),
            "policy_decision_written".to_owned()
        )]
    );
    assert_eq!(
        status_of(repeat.get("intent_id").unwrap()),
        vec![("failed".to_owned(), "unsupported_policy".to_owned())]
    );
    // Event lines are written in batches a moment later: flush them.
    palaver::engine::EventSink::flush(&*sink);
    let events: String = [Some(dir.child.clone()), dir.parent.clone()]
        .into_iter()
        .flatten()
        .filter_map(|d| std::fs::read_to_string(d.join("events.jsonl")).ok())
        .collect();
    assert!(events.contains("\"policy_generated\""), "{events}");

    // A person decided first: the policy steps aside.
    palaver::session::decision::submit(
        &dir.child,
        obj! { "round" => 2, "choice" => "scissors" },
        &palaver::session::decision::SubmitOptions {
            origin: "cli".into(),
            agent_id: None,
            idempotency_key: None,
            require_match_key: true,
        },
    )
    .unwrap();
    let mirror = intent("mirror_previous_opponent", 1);
    let Decided::Explicit(d) = bus.decide(ControlMode::Hybrid, &window(2)).await.unwrap() else {
        panic!("the person's decision was lost")
    };
    assert_eq!(d.get("choice").and_then(Value::as_str), Some("scissors"));
    assert_eq!(
        status_of(mirror.get("intent_id").unwrap()),
        vec![(
            "materialized".to_owned(),
            "explicit_decision_present".to_owned()
        )]
    );
}

/// A room's state dir is one level (session.json beside snapshot.json):
/// `session abort` finds its session.json, stops its process and records
/// why, by path and as the newest session.
#[test]
fn abort_stops_a_room_session() {
    let data = tempfile::tempdir().unwrap();
    for by_path in [true, false] {
        let dir = data.path().join("sessions").join(format!(
            "host-group-{}",
            1_700_000_000_000u64 + u64::from(!by_path)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut room = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        files::write_json_atomic(
            &dir.join("session.json"),
            &Value::Object(obj! {
                "role" => "host", "status" => "running", "pid" => room.id(), "group_id" => "g1",
                "group_role" => "leader", "started_at" => files::epoch_now(),
            }),
            false,
        )
        .unwrap();
        files::write_json_atomic(
            &dir.join("snapshot.json"),
            &Value::Object(obj! { "phase" => "running", "role" => "host" }),
            false,
        )
        .unwrap();
        let dir_arg = dir.to_str().unwrap().to_owned();
        let mut args = vec![
            "--data-dir",
            data.path().to_str().unwrap(),
            "session",
            "abort",
        ];
        if by_path {
            args.push(&dir_arg);
        }
        args.extend(["--reason", "room_closed_by_test"]);
        let (code, out) = cli(&args);
        assert_eq!(code, 0, "{out}");
        let v = json::parse_str(&out).unwrap();
        assert_eq!(v.get("killed"), Some(&Value::Bool(true)), "{out}");
        assert_eq!(
            v.get("state_dir").and_then(Value::as_str),
            Some(dir_arg.as_str())
        );
        let status = room.wait().unwrap();
        assert!(!status.success(), "the room's process was not stopped");
        let meta = files::read_json_object(&dir.join("session.json")).unwrap();
        assert_eq!(meta.get("status").and_then(Value::as_str), Some("aborted"));
        let ended: Vec<Map> = files::read_jsonl(&dir.join("events.jsonl"))
            .into_iter()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("session_ended"))
            .collect();
        assert_eq!(ended.len(), 1, "{ended:?}");
        assert_eq!(
            ended[0]
                .get("data")
                .and_then(|d| d.get("reason"))
                .and_then(Value::as_str),
            Some("room_closed_by_test")
        );
    }
}
