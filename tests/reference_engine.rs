//! palaver's engine against the reference client's engine and hooks, run as
//! a Python process (tests/reference/peer.py) over NDJSON on loopback TCP:
//! each bundled game both ways round, completed on both sides with the same
//! outcome; and the `request_response` flow, which no bundled protocol uses,
//! on a small protocol of our own (tests/data/request-response-v1: spec.json
//! and hooks.py on the reference's SDK; palaver's hooks are `Calculator`
//! here), completed and aborted both ways round with the same frames seen and
//! the same ending per role.

use crate::common;

use async_trait::async_trait;
use palaver::engine::{
    self, Channel, Ctx, EngineConfig, HookError, HookResult, Hooks, HostMetadata, MemorySink, Role,
};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::obj;
use palaver::protocols::native_hooks_for_alias;
use palaver::spec::Spec;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

struct Match {
    ours: engine::SessionOutcome,
    theirs: Value,
    sink: Arc<MemorySink>,
}

async fn against_reference(py: &str, alias: &str, our_role: Role, options: &str) -> Match {
    let spec = library::bundled_spec(alias).expect("bundled");
    let mut hooks = native_hooks_for_alias(alias).expect("native hooks");
    play_reference(
        py,
        ["--alias", alias],
        spec,
        hooks.as_mut(),
        our_role,
        options,
    )
    .await
}

/// Plays `hooks` on `spec` as `our_role` against tests/reference/peer.py run
/// with `which` (`--alias A` or `--protocol-dir D`) as the other role.
async fn play_reference(
    py: &str,
    which: [&str; 2],
    spec: &Spec,
    hooks: &mut dyn Hooks,
    our_role: Role,
    options: &str,
) -> Match {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let their_role = our_role.peer().as_str();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/peer.py");
    let mut child = tokio::process::Command::new(py)
        .args([
            script,
            "--role",
            their_role,
            which[0],
            which[1],
            "--port",
            &port.to_string(),
            "--options",
            options,
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the reference peer");
    let (stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
        .await
        .expect("peer connects")
        .expect("accept");
    let (r, w) = stream.into_split();
    let channel = Channel::from_stream(r, w);
    let opts: Map = json::parse_str(options)
        .expect("options")
        .as_object()
        .cloned()
        .unwrap_or_default();
    let sink = Arc::new(MemorySink::default());
    let ctx = Ctx::new(our_role, engine::ControlMode::Autonomous, opts)
        .with_sink(sink.clone())
        .with_seed(7);
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(30)),
        ..Default::default()
    };
    let ours = engine::run(spec, hooks, channel, &ctx, &cfg).await;
    let mut out = String::new();
    let mut err = String::new();
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let _ = tokio::time::timeout(Duration::from_secs(30), async {
        let _ = stdout.read_to_string(&mut out).await;
        let _ = stderr.read_to_string(&mut err).await;
        let _ = child.wait().await;
    })
    .await;
    let label = which[1];
    let theirs = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|j| json::parse_str(j).ok())
        .unwrap_or_else(|| {
            panic!("{label}: the reference peer gave no result.\nstdout:\n{out}\nstderr:\n{err}")
        });
    Match { ours, theirs, sink }
}

fn check(alias: &str, role: Role, m: &Match) {
    assert!(
        m.ours.completed,
        "{alias} as {role:?}: ours {:?}; theirs {}",
        m.ours, m.theirs
    );
    assert_eq!(
        m.theirs.get("completed"),
        Some(&Value::Bool(true)),
        "{alias} as {role:?}: theirs {}",
        m.theirs
    );
    let theirs_winner = m
        .theirs
        .get("outcome")
        .and_then(Value::as_str)
        .map(str::to_owned);
    assert_eq!(
        m.ours.winner, theirs_winner,
        "{alias} as {role:?}: same outcome on both sides"
    );
    assert!(m.sink.kinds().contains(&"protocol_message"));
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_game_plays_the_reference_both_ways() {
    let py = common::reference_python();
    let games: [(&str, &str); 8] = [
        ("rps-v1", r#"{"best_of":3}"#),
        ("coin-flip-v1", r#"{"best_of":3}"#),
        (
            "guess-number-v1",
            r#"{"range_min":1,"range_max":100,"max_attempts":7}"#,
        ),
        ("weak-wins-all", r#"{"total_points":25,"total_rounds":5}"#),
        ("gomoku-v1", r#"{"board_size":9}"#),
        ("connect4-v1", "{}"),
        ("reversi-v1", r#"{"board_size":6}"#),
        ("hero-duel-v1", r#"{"max_rounds":10}"#),
    ];
    for (alias, options) in games {
        for role in [Role::Host, Role::Guest] {
            let m = against_reference(&py, alias, role, options).await;
            check(alias, role, &m);
            if matches!(alias, "rps-v1" | "coin-flip-v1" | "guess-number-v1") {
                assert!(m.ours.winner.is_some(), "{alias}: a winner is named");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// request_response: no bundled protocol uses it, so tests/data holds a small
// one of our own (Integer Calculator: the guest asks one question, the host
// computes the answer), with hooks on the reference's SDK (hooks.py there)
// and on palaver's (`Calculator` below).

const CALCULATOR_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/request-response-v1"
);
const OPS: [&str; 4] = ["sum", "product", "gcd", "divmod"];
const OPERAND_LIMIT: i64 = 10_000;
const MAX_OPERANDS: i64 = 4;

fn calculator_spec() -> Spec {
    Spec::load(&std::path::Path::new(CALCULATOR_DIR).join("spec.json"))
        .expect("tests/data/request-response-v1/spec.json loads")
}

/// `"12, -7,3"` → `[12, -7, 3]`: 1..=MAX_OPERANDS integers within
/// ±OPERAND_LIMIT.
fn parse_operands(text: &str) -> Result<Vec<i64>, String> {
    let values = text
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<i64>()
                .map_err(|_| format!("operands must be comma-separated integers, got {text:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if values.len() as i64 > MAX_OPERANDS {
        return Err(format!(
            "at most {MAX_OPERANDS} operands, got {}",
            values.len()
        ));
    }
    if let Some(v) = values.iter().find(|v| v.abs() > OPERAND_LIMIT) {
        return Err(format!(
            "operand {v} is outside -{OPERAND_LIMIT}..{OPERAND_LIMIT}"
        ));
    }
    Ok(values)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The answer's fields (`result`, and `remainder` for divmod), or None when
/// the question has no answer. divmod floors the quotient, so the remainder
/// takes the divisor's sign (as Python's `divmod`).
fn compute(op: &str, operands: &[i64]) -> Option<Map> {
    match op {
        "sum" => Some(obj! { "result" => operands.iter().sum::<i64>() }),
        // Within the spec's limits (4 operands of at most 10^4) a product
        // fits an i64; an overflow would be a question left unanswered.
        "product" => operands
            .iter()
            .try_fold(1i64, |acc, &v| acc.checked_mul(v))
            .map(|p| obj! { "result" => p }),
        "gcd" => {
            let g = operands.iter().fold(0u64, |g, &v| gcd(g, v.unsigned_abs()));
            i64::try_from(g).ok().map(|g| obj! { "result" => g })
        }
        "divmod" => match *operands {
            [_, 0] => None,
            [a, b] => {
                let (mut q, mut r) = (a / b, a % b);
                if r != 0 && (r < 0) != (b < 0) {
                    q -= 1;
                    r += b;
                }
                Some(obj! { "result" => q, "remainder" => r })
            }
            _ => None,
        },
        _ => None,
    }
}

/// palaver's hooks for the Integer Calculator (test data, not a product
/// protocol). The guest keeps the answer it received.
#[derive(Debug, Default)]
struct Calculator {
    op: String,
    operands: Vec<i64>,
    max_operands: i64,
    answer: Option<Map>,
    /// A faulty guest: its question is an empty object (which the
    /// reference's engine takes as no question).
    empty_question: bool,
}

fn int_list(v: Option<&Value>) -> Option<Vec<i64>> {
    v?.as_array()?.iter().map(Value::as_i64).collect()
}

#[async_trait]
impl Hooks for Calculator {
    fn supported_control_modes(&self) -> &'static [engine::ControlMode] {
        &[engine::ControlMode::Autonomous, engine::ControlMode::Hybrid]
    }

    fn host_metadata(&self) -> HostMetadata {
        let operands: Vec<String> = self.operands.iter().map(i64::to_string).collect();
        HostMetadata {
            display_name: "Integer Calculator".into(),
            tags: "test,calculator".into(),
            invite_type: "supply".into(),
            default_options: obj! {
                "op" => self.op.as_str(),
                "operands" => operands.join(","),
                "max_operands" => self.max_operands,
            },
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let o = &ctx.options;
        let op = o.get("op").and_then(Value::as_str).unwrap_or("sum");
        if !OPS.contains(&op) {
            return Err(HookError::Invalid(format!(
                "op must be one of {}, got {op:?}",
                OPS.join(", ")
            )));
        }
        self.op = op.to_owned();
        let text = o.get("operands").and_then(Value::as_str).unwrap_or("12,30");
        self.operands = parse_operands(text).map_err(HookError::Invalid)?;
        self.max_operands = match o.get("max_operands") {
            None => MAX_OPERANDS,
            Some(v) => v
                .as_i64()
                .filter(|n| (1..=MAX_OPERANDS).contains(n))
                .ok_or_else(|| {
                    HookError::Invalid(format!(
                        "max_operands must be an integer in 1..{MAX_OPERANDS}"
                    ))
                })?,
        };
        Ok(())
    }

    async fn host_handle_join(&mut self, _ctx: &Ctx, _join: &Map) -> Result<HookResult, HookError> {
        Ok(HookResult::send(
            obj! { "action" => "ready", "max_operands" => self.max_operands },
        ))
    }

    async fn host_handle(&mut self, _ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        let (Some(op), Some(id), Some(operands)) = (
            msg.get("op").and_then(Value::as_str),
            msg.get("id").cloned(),
            int_list(msg.get("operands")),
        ) else {
            return Err(HookError::Protocol(
                "a question needs an op, an id and integer operands".into(),
            ));
        };
        let fields = if operands.len() as i64 > self.max_operands {
            None
        } else {
            compute(op, &operands)
        };
        let Some(fields) = fields else {
            return Ok(HookResult::none());
        };
        let mut answer = obj! { "action" => "answer", "id" => id, "op" => op };
        for (k, v) in fields.iter() {
            answer.insert(k, v.clone());
        }
        Ok(HookResult::send(answer))
    }

    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Ok(obj! { "action" => "join" })
    }

    async fn guest_handle_ready(&mut self, _ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        self.max_operands = ready
            .get("max_operands")
            .and_then(Value::as_i64)
            .ok_or_else(|| HookError::Protocol("ready without max_operands".into()))?;
        Ok(())
    }

    async fn guest_first_action(&mut self, _ctx: &Ctx) -> Result<Option<Map>, HookError> {
        if self.empty_question {
            return Ok(Some(Map::new()));
        }
        if self.operands.len() as i64 > self.max_operands {
            return Ok(None);
        }
        let operands: Vec<Value> = self.operands.iter().map(|&v| Value::from(v)).collect();
        Ok(Some(obj! {
            "action" => "question", "id" => "q1", "op" => self.op.as_str(), "operands" => operands,
        }))
    }

    async fn guest_handle(&mut self, _ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        self.answer = Some(msg.clone());
        Ok(HookResult::none())
    }
}

/// The reference's kept events of one type, as data objects.
fn their_events<'a>(theirs: &'a Value, kind: &str) -> Vec<&'a Map> {
    theirs
        .get("events")
        .and_then(Value::as_array)
        .map(|evs| {
            evs.iter()
                .filter_map(Value::as_object)
                .filter(|e| e.get("type").and_then(Value::as_str) == Some(kind))
                .filter_map(|e| e.get("data").and_then(Value::as_object))
                .collect()
        })
        .unwrap_or_default()
}

/// (direction, frame) of each `protocol_message` one side reported.
type Frames = Vec<(String, Map)>;

/// Ours then theirs with the direction turned round (what they sent we
/// received), so the two lists are equal when both sides saw the same
/// frames in the same order.
fn frames_both(m: &Match) -> (Frames, Frames) {
    let ours = m
        .sink
        .events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.kind == "protocol_message")
        .map(|e| {
            (
                e.data
                    .get("direction")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                e.data
                    .get("msg")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            )
        })
        .collect();
    let theirs = their_events(&m.theirs, "protocol_message")
        .into_iter()
        .map(|d| {
            let dir = match d.get("direction").and_then(Value::as_str) {
                Some("sent") => "received",
                Some("received") => "sent",
                other => panic!("reference protocol_message with direction {other:?}"),
            };
            (
                dir.to_owned(),
                d.get("msg")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            )
        })
        .collect();
    (ours, theirs)
}

/// Both sides saw the same frames, same members in the same key order, with
/// these actions.
fn assert_same_frames(m: &Match, label: &str, actions: &[&str]) {
    let (ours, theirs) = frames_both(m);
    assert_eq!(ours, theirs, "{label}: frames differ");
    let keys = |l: &[(String, Map)]| -> Vec<Vec<String>> {
        l.iter()
            .map(|(_, f)| f.iter().map(|(k, _)| k.to_string()).collect())
            .collect()
    };
    assert_eq!(keys(&ours), keys(&theirs), "{label}: key order differs");
    let got: Vec<&str> = ours
        .iter()
        .map(|(_, f)| f.get("action").and_then(Value::as_str).unwrap_or(""))
        .collect();
    assert_eq!(got, actions, "{label}: frame sequence");
}

/// How each side ended: ours from the outcome and our one `session_ended`
/// event (which must agree), theirs from its one `session_ended` event.
fn endings(m: &Match, label: &str) -> ((bool, String), (bool, String)) {
    let ours_events: Vec<Map> = m
        .sink
        .events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.kind == "session_ended")
        .map(|e| e.data.clone())
        .collect();
    assert_eq!(ours_events.len(), 1, "{label}: one session_ended of ours");
    let pick = |d: &Map| {
        (
            d.get("completed").and_then(Value::as_bool).unwrap_or(true),
            d.get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let ours = pick(&ours_events[0]);
    assert_eq!(
        ours,
        (m.ours.completed, m.ours.reason.clone()),
        "{label}: our event and outcome agree"
    );
    let theirs_events = their_events(&m.theirs, "session_ended");
    assert_eq!(
        theirs_events.len(),
        1,
        "{label}: one session_ended of theirs: {}",
        m.theirs
    );
    let theirs = pick(theirs_events[0]);
    assert_eq!(
        m.theirs.get("completed"),
        Some(&Value::Bool(theirs.0)),
        "{label}: their result and event agree"
    );
    (ours, theirs)
}

async fn play_calculator(py: &str, our_role: Role, options: &str) -> (Match, Calculator) {
    play_calculator_with(py, our_role, options, Calculator::default()).await
}

async fn play_calculator_with(
    py: &str,
    our_role: Role,
    options: &str,
    mut hooks: Calculator,
) -> (Match, Calculator) {
    let spec = calculator_spec();
    let m = play_reference(
        py,
        ["--protocol-dir", CALCULATOR_DIR],
        &spec,
        &mut hooks,
        our_role,
        options,
    )
    .await;
    (m, hooks)
}

#[test]
fn calculator_spec_is_valid_and_request_response() {
    let spec = calculator_spec();
    assert_eq!(spec.flow_mode(), "request_response");
    for (frame, dir) in [
        (
            r#"{"action":"question","id":"q1","op":"divmod","operands":[-7,2]}"#,
            "guest_to_host",
        ),
        (
            r#"{"action":"answer","id":"q1","op":"divmod","result":-4,"remainder":1}"#,
            "host_to_guest",
        ),
    ] {
        let v = json::parse_str(frame).expect("frame");
        spec.validate_message(&v, Some(dir), None)
            .unwrap_or_else(|e| panic!("{frame}: {e}"));
    }
    let five =
        json::parse_str(r#"{"action":"question","id":"q1","op":"sum","operands":[1,2,3,4,5]}"#)
            .expect("frame");
    assert!(
        spec.validate_message(&five, Some("guest_to_host"), None)
            .is_err()
    );
}

/// A request/response exchange is no game: palaver against palaver, both
/// sides end completed in phase `ended`, not `game_over`.
#[tokio::test]
async fn a_request_response_session_ends_in_phase_ended() {
    let spec = calculator_spec();
    let (hs, gs) = (
        Arc::new(MemorySink::default()),
        Arc::new(MemorySink::default()),
    );
    let host = palaver::services::local::Side::auto(Box::new(Calculator::default()), hs.clone());
    let guest = palaver::services::local::Side::auto(Box::new(Calculator::default()), gs.clone());
    let options = json::parse_str(r#"{"op":"sum","operands":"1,2"}"#)
        .unwrap()
        .as_object()
        .unwrap()
        .clone();
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let (h, g) = palaver::services::local::play(&spec, &options, &cfg, host, guest).await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
    for sink in [&hs, &gs] {
        assert_eq!(
            sink.snapshot_value("phase")
                .and_then(|v| v.as_str().map(str::to_owned)),
            Some("ended".to_owned())
        );
    }
}

#[test]
fn calculator_arithmetic_floors_like_python() {
    let divmod = |a, b| compute("divmod", &[a, b]);
    assert_eq!(
        divmod(-7, 2),
        Some(obj! { "result" => -4, "remainder" => 1 })
    );
    assert_eq!(
        divmod(7, -2),
        Some(obj! { "result" => -4, "remainder" => -1 })
    );
    assert_eq!(
        divmod(-7, -2),
        Some(obj! { "result" => 3, "remainder" => -1 })
    );
    assert_eq!(divmod(6, 3), Some(obj! { "result" => 2, "remainder" => 0 }));
    assert_eq!(divmod(9, 0), None);
    assert_eq!(compute("divmod", &[1, 2, 3]), None);
    assert_eq!(
        compute("gcd", &[84, -36, 120]),
        Some(obj! { "result" => 12 })
    );
    assert_eq!(compute("gcd", &[0, 0]), Some(obj! { "result" => 0 }));
    assert_eq!(
        compute("product", &[-10_000, 10_000, 10_000, -10_000]),
        Some(obj! { "result" => 10_000_000_000_000_000i64 })
    );
    assert!(parse_operands("1,2,3,4,5").is_err());
    assert!(parse_operands("10001").is_err());
    assert!(parse_operands("1,,2").is_err());
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_answers_the_reference_both_ways() {
    let py = common::reference_python();
    // (options, the answer the guest must receive)
    let cases = [
        (
            r#"{"op":"divmod","operands":"-7,2"}"#,
            obj! { "action" => "answer", "id" => "q1", "op" => "divmod", "result" => -4, "remainder" => 1 },
        ),
        (
            r#"{"op":"divmod","operands":"7,-2"}"#,
            obj! { "action" => "answer", "id" => "q1", "op" => "divmod", "result" => -4, "remainder" => -1 },
        ),
        (
            r#"{"op":"gcd","operands":"84,-36,120"}"#,
            obj! { "action" => "answer", "id" => "q1", "op" => "gcd", "result" => 12 },
        ),
        (
            r#"{"op":"product","operands":"-10000,10000,10000,-10000"}"#,
            obj! { "action" => "answer", "id" => "q1", "op" => "product", "result" => 10_000_000_000_000_000i64 },
        ),
        (
            r#"{"op":"sum","operands":"-3,5,9000","max_operands":3}"#,
            obj! { "action" => "answer", "id" => "q1", "op" => "sum", "result" => 9002 },
        ),
    ];
    for (options, expected) in cases {
        for role in [Role::Host, Role::Guest] {
            let label = format!("{options} with palaver as {}", role.as_str());
            let (m, hooks) = play_calculator(&py, role, options).await;
            let done = (true, "request_response_complete".to_owned());
            let (ours, theirs) = endings(&m, &label);
            assert_eq!(ours, done, "{label}: ours {:?}", m.ours);
            assert_eq!(theirs, done, "{label}: theirs {}", m.theirs);
            assert_eq!(m.ours.winner, None, "{label}");
            assert_eq!(m.ours.frames_sent, 2, "{label}");
            assert_eq!(m.ours.frames_received, 2, "{label}");
            assert_same_frames(&m, &label, &["join", "ready", "question", "answer"]);
            // The guest received the right answer: ours kept by our hooks,
            // theirs as the last frame the reference reports received.
            let got = match role {
                Role::Guest => hooks.answer.clone(),
                Role::Host => their_events(&m.theirs, "protocol_message")
                    .last()
                    .filter(|d| d.get("direction").and_then(Value::as_str) == Some("received"))
                    .and_then(|d| d.get("msg"))
                    .and_then(Value::as_object)
                    .cloned(),
            };
            assert_eq!(got, Some(expected.clone()), "{label}: the answer");
        }
    }
}

/// Plays `options` both ways round and checks that palaver ends each role
/// as the reference ends it: our host as their host, our guest as their
/// guest (and as `host`/`guest` given here), with the same frames seen.
async fn ends_like_the_reference(
    py: &str,
    options: &str,
    host: (bool, &str),
    guest: (bool, &str),
    actions: &[&str],
) {
    let host = (host.0, host.1.to_owned());
    let guest = (guest.0, guest.1.to_owned());
    let (a, _) = play_calculator(py, Role::Host, options).await;
    let label_a = format!("{options} with palaver as host");
    let (our_host, their_guest) = endings(&a, &label_a);
    assert_same_frames(&a, &label_a, actions);
    let (b, hooks) = play_calculator(py, Role::Guest, options).await;
    let label_b = format!("{options} with palaver as guest");
    let (our_guest, their_host) = endings(&b, &label_b);
    assert_same_frames(&b, &label_b, actions);
    assert_eq!(hooks.answer, None, "{label_b}: no answer arrived");
    assert_eq!(their_host, host, "{label_b}: the reference host");
    assert_eq!(their_guest, guest, "{label_a}: the reference guest");
    assert_eq!(
        our_host, their_host,
        "palaver's host ends as the reference's"
    );
    assert_eq!(
        our_guest, their_guest,
        "palaver's guest ends as the reference's"
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_without_an_answer_ends_like_the_reference() {
    let py = common::reference_python();
    // Division by zero has no answer: the host returns no response and ends
    // with `abort`; the guest, waiting for the answer, sees the connection
    // close.
    ends_like_the_reference(
        &py,
        r#"{"op":"divmod","operands":"9,0"}"#,
        (false, "abort"),
        (false, "peer_disconnected"),
        &["join", "ready", "question"],
    )
    .await;
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_without_a_question_ends_like_the_reference() {
    let py = common::reference_python();
    // Three operands where the host takes two: the guest sends no question
    // and ends with `abort`; the host, waiting for it, sees the connection
    // close.
    ends_like_the_reference(
        &py,
        r#"{"op":"sum","operands":"1,2,3","max_operands":2}"#,
        (false, "peer_disconnected"),
        (false, "abort"),
        &["join", "ready"],
    )
    .await;
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_empty_question_ends_like_no_question() {
    let py = common::reference_python();
    // The reference's guest ends on any falsy request (`if not request`),
    // an empty object included; palaver's guest does the same rather than
    // sending a frame the spec rejects.
    let hooks = Calculator {
        empty_question: true,
        ..Default::default()
    };
    let (m, _) =
        play_calculator_with(&py, Role::Guest, r#"{"op":"sum","operands":"1,2"}"#, hooks).await;
    let label = "empty question with palaver as guest";
    let (ours, theirs) = endings(&m, label);
    assert_eq!(ours, (false, "abort".to_owned()), "{label}: {:?}", m.ours);
    assert_eq!(
        theirs,
        (false, "peer_disconnected".to_owned()),
        "{label}: {}",
        m.theirs
    );
    assert_same_frames(&m, label, &["join", "ready"]);
}
