//! tank-battle-v1 hosted by palaver with the reference's own rules: the
//! installed reference's protocol dir (spec.json + hooks.py on the
//! reference SDK) run as a hooks program through palaver's bridge
//! (assets/hooks/aigenora_bridge.py), answering the realtime hooks. The
//! bridged host presents that dir's ruleset hash, the one the reference
//! presents, so it serves a reference guest (tests/reference/peer.py over
//! loopback TCP) and a palaver guest that presents the same ruleset; its
//! frames equal palaver's native simulation tick by tick. Ignored by
//! default: scripts/test runs them with the reference's Python.
//!
//! The last tests need no reference: a realtime hooks program that crashes
//! or replies garbage ends the session (`hook_error`) or fails the call
//! with its reason, never a panic.

use crate::common;

use palaver::engine::external::HooksProgram;
use palaver::engine::realtime::{Journal, ruleset_hash, verify_frame};
use palaver::engine::{
    self, Channel, ControlMode, Ctx, EngineConfig, Hooks, MemorySink, Role, SessionOutcome,
};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use palaver::protocols::tank::{Command, World};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

use common::realtime::DirSink;

const ALIAS: &str = "tank-battle-v1";
const OPTIONS: &str = r#"{"max_ticks":40,"team_size":3}"#;
/// The ruleset hash aigenora 0.1.4 presents for its tank-battle dir.
const REFERENCE_RULESET: &str = "b67f90ae20f6f26856727cf9426eced5eee6ed061601c851a3d1988b3aa8a3d0";

/// The reference's hooks.py through the bridge, as `palaver host <dir>`
/// starts it.
fn bridged(py: &str, dir: &Path) -> Box<dyn Hooks> {
    let program = HooksProgram::find(dir, false, py).expect("the bridge is picked");
    assert!(
        program
            .command
            .iter()
            .any(|a| a.contains("aigenora_bridge")),
        "{:?}",
        program.command
    );
    Box::new(program.spawn().expect("the bridge starts"))
}

fn options(s: &str) -> Map {
    json::parse_str(s).unwrap().as_object().cloned().unwrap()
}

/// A bridged palaver host against the reference guest: (ours, theirs).
async fn bridged_host_vs_reference_guest(py: &str, dir: &Path) -> (SessionOutcome, Value) {
    let spec = library::bundled_spec(ALIAS).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/peer.py");
    let mut child = tokio::process::Command::new(py)
        .args([
            script,
            "--role",
            "guest",
            "--alias",
            ALIAS,
            "--port",
            &port.to_string(),
            "--options",
            OPTIONS,
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the reference peer");
    let (stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
        .await
        .expect("the reference connects")
        .unwrap();
    let (r, w) = stream.into_split();
    let channel = Channel::from_stream(r, w).pumped();
    let sink = Arc::new(MemorySink::default());
    let ctx =
        Ctx::new(Role::Host, ControlMode::Autonomous, options(OPTIONS)).with_sink(sink.clone());
    let mut hooks = bridged(py, dir);
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(30)),
        ..Default::default()
    };
    let ours = tokio::time::timeout(
        Duration::from_secs(120),
        engine::run(spec, hooks.as_mut(), channel, &ctx, &cfg),
    )
    .await
    .expect("the match ends");
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(30), async {
        let _ = stdout.read_to_string(&mut out).await;
        let _ = stderr.read_to_string(&mut err).await;
        let _ = child.wait().await;
    })
    .await;
    let theirs = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|j| json::parse_str(j).ok())
        .unwrap_or_else(|| panic!("no result from the reference.\nstdout:\n{out}\nstderr:\n{err}"));
    assert!(
        common::realtime::last_event(&sink, "realtime_command_rejected").is_none(),
        "every command of the reference's guest was accepted by its own rules"
    );
    (ours, theirs)
}

struct InProcess {
    host: SessionOutcome,
    guest: SessionOutcome,
    host_sink: Arc<DirSink>,
    guest_sink: Arc<DirSink>,
    elapsed: Duration,
}

/// A bridged host against palaver's native guest presenting the
/// reference's ruleset, in one process.
async fn bridged_host_vs_native_guest(
    py: &str,
    dir: &Path,
    opts: &str,
    lockstep: bool,
    journals: (&Path, &Path),
) -> InProcess {
    let spec = library::bundled_spec(ALIAS).unwrap();
    let (hc, gc) = Channel::memory_pair();
    let host_sink = Arc::new(DirSink {
        mem: MemorySink::default(),
        dir: journals.0.to_owned(),
    });
    let guest_sink = Arc::new(DirSink {
        mem: MemorySink::default(),
        dir: journals.1.to_owned(),
    });
    let hctx =
        Ctx::new(Role::Host, ControlMode::Autonomous, options(opts)).with_sink(host_sink.clone());
    let gctx =
        Ctx::new(Role::Guest, ControlMode::Autonomous, options(opts)).with_sink(guest_sink.clone());
    let mut hh = bridged(py, dir);
    let mut gh = native_hooks_for_alias(ALIAS).unwrap();
    gh.realtime()
        .unwrap()
        .present_ruleset(ruleset_hash(dir).unwrap());
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(30)),
        realtime_lockstep: lockstep,
        ..Default::default()
    };
    let started = Instant::now();
    let (host, guest) = tokio::time::timeout(Duration::from_secs(300), async {
        tokio::join!(
            engine::run(spec, hh.as_mut(), hc.pumped(), &hctx, &cfg),
            engine::run(spec, gh.as_mut(), gc.pumped(), &gctx, &cfg),
        )
    })
    .await
    .expect("the match ends");
    InProcess {
        host,
        guest,
        host_sink,
        guest_sink,
        elapsed: started.elapsed(),
    }
}

fn journal_frames(dir: &Path) -> Vec<Map> {
    let text = std::fs::read_to_string(dir.join(Journal::FRAMES)).unwrap();
    text.lines()
        .map(|l| {
            let v = json::parse_str(l).unwrap();
            v.get("frame").and_then(Value::as_object).cloned().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_bridged_palaver_host_serves_a_reference_guest_whose_audit_passes() {
    let py = common::reference_python();
    let dir = common::realtime::reference_protocol_dir(&py, ALIAS);
    let (ours, theirs) = bridged_host_vs_reference_guest(&py, &dir).await;
    assert!(ours.completed, "ours {ours:?}\ntheirs {theirs}");
    assert_eq!(
        theirs.get("completed"),
        Some(&Value::Bool(true)),
        "{theirs}"
    );
    assert_eq!(
        ours.winner.as_deref(),
        theirs.get("outcome").and_then(Value::as_str),
        "both sides record the same outcome"
    );
    let audit = theirs.get("audit").expect("the reference guest's audit");
    assert_eq!(
        audit.get("status"),
        Some(&Value::from("passed")),
        "{audit:?}"
    );
    assert_eq!(audit.get("integrity"), Some(&Value::from("verified")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_bridged_host_serves_a_native_guest_presenting_the_reference_ruleset() {
    let py = common::reference_python();
    let dir = common::realtime::reference_protocol_dir(&py, ALIAS);
    let (hd, gd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // At the tick rate, as a live match.
    let m = bridged_host_vs_native_guest(&py, &dir, OPTIONS, false, (hd.path(), gd.path())).await;
    assert!(
        m.host.completed && m.guest.completed,
        "host {:?}\nguest {:?}",
        m.host,
        m.guest
    );
    assert!(m.host.winner.is_some());
    assert_eq!(m.host.winner, m.guest.winner);
    let ended = common::realtime::last_event(&m.guest_sink.mem, "realtime_ended").unwrap();
    let audit = ended.get("audit").and_then(Value::as_object).unwrap();
    assert_eq!(
        audit.get("status"),
        Some(&Value::from("passed")),
        "{audit:?}"
    );
    assert_eq!(audit.get("integrity"), Some(&Value::from("verified")));
    assert!(common::realtime::last_event(&m.host_sink.mem, "realtime_command_rejected").is_none());
    // The bridged host presents the dir's hash, the reference's own,
    // without being told; the guest was told to.
    for sink in [&m.host_sink, &m.guest_sink] {
        let snap = sink.mem.snapshot.lock().unwrap();
        assert_eq!(
            snap.get("ruleset_hash").and_then(Value::as_str),
            Some(REFERENCE_RULESET)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn the_bridged_hosts_frames_equal_the_native_simulation_tick_by_tick() {
    let py = common::reference_python();
    let dir = common::realtime::reference_protocol_dir(&py, ALIAS);
    let opts = r#"{"max_ticks":150,"team_size":4,"pickup_mode":"powerups"}"#;
    let (hd, gd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = bridged_host_vs_native_guest(&py, &dir, opts, true, (hd.path(), gd.path())).await;
    assert!(
        m.host.completed && m.guest.completed,
        "host {:?}\nguest {:?}",
        m.host,
        m.guest
    );
    let frames = journal_frames(gd.path());
    assert!(frames.len() > 1);
    eprintln!(
        "{} ticks in {:.0} ms lockstep ({:.2} ms a tick, bridged host + native guest)",
        frames.len() - 1,
        m.elapsed.as_secs_f64() * 1000.0,
        m.elapsed.as_secs_f64() * 1000.0 / (frames.len() - 1) as f64
    );
    let mut prev: Option<&Map> = None;
    for f in &frames {
        verify_frame(f, prev).unwrap();
        prev = Some(f);
    }
    let mut world = World::from_options(&options(opts)).unwrap();
    assert_eq!(
        Some(world.state_hash().as_str()),
        frames[0].get("state_hash").and_then(Value::as_str),
        "tick 0"
    );
    let (mut host_commands, mut guest_commands) = (0, 0);
    for f in &frames[1..] {
        let side = |s: &str| -> Vec<Command> {
            f.get("applied_commands")
                .and_then(|a| a.get(s))
                .and_then(|a| a.get("commands"))
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, c)| Command::from_value(c, i).unwrap())
                .collect()
        };
        let (hc, gc) = (side("host"), side("guest"));
        host_commands += hc.len();
        guest_commands += gc.len();
        world.step(&hc, &gc);
        assert_eq!(
            Some(world.state_hash().as_str()),
            f.get("state_hash").and_then(Value::as_str),
            "tick {:?}",
            f.get("tick")
        );
    }
    assert!(host_commands > 0 && guest_commands > 0);
    let last = frames.last().unwrap();
    assert_eq!(
        last.get("outcome").and_then(Value::as_str),
        m.host.winner.as_deref()
    );
}

// ---- broken realtime hooks programs (no reference needed) ----------------

/// A protocol dir with tank-battle's spec and a `hooks` shell program that
/// answers `describe`/`init` and then, for any realtime hook, does `act`.
fn broken_program(act: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let spec = library::bundled_spec(ALIAS).unwrap();
    std::fs::write(
        tmp.path().join("spec.json"),
        json::canonical::to_string_ordered(&Value::Object(spec.doc().clone())),
    )
    .unwrap();
    let script = format!(
        "#!/bin/sh\n\
         while IFS= read -r line; do\n\
         id=$(printf '%s' \"$line\" | sed -n 's/^{{\"id\":\\([0-9]*\\).*/\\1/p')\n\
         case \"$line\" in\n\
         *'\"hook\":\"realtime_'*) {act} ;;\n\
         *) printf '{{\"id\":%s,\"ok\":true,\"result\":null}}\\n' \"$id\" ;;\n\
         esac\n\
         done\n"
    );
    let path = tmp.path().join("hooks");
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    tmp
}

/// A host whose hooks program is `act`'s against a native guest presenting
/// the program dir's ruleset.
async fn host_with_broken_program(act: &str) -> (SessionOutcome, SessionOutcome) {
    let tmp = broken_program(act);
    let spec = library::bundled_spec(ALIAS).unwrap();
    let mut program = HooksProgram::find(tmp.path(), false, "python3").unwrap();
    program.timeout = Duration::from_secs(3);
    let mut hh: Box<dyn Hooks> = Box::new(program.spawn().unwrap());
    let mut gh = native_hooks_for_alias(ALIAS).unwrap();
    gh.realtime()
        .unwrap()
        .present_ruleset(ruleset_hash(tmp.path()).unwrap());
    let (hc, gc) = Channel::memory_pair();
    let opts = options(OPTIONS);
    let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, opts.clone());
    let gctx = Ctx::new(Role::Guest, ControlMode::Autonomous, opts);
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(5)),
        realtime_lockstep: true,
        ..Default::default()
    };
    tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(
            engine::run(spec, hh.as_mut(), hc.pumped(), &hctx, &cfg),
            engine::run(spec, gh.as_mut(), gc.pumped(), &gctx, &cfg),
        )
    })
    .await
    .expect("the session ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_realtime_program_that_replies_garbage_ends_the_host_with_hook_error() {
    let (host, guest) = host_with_broken_program("echo 'not json at all'").await;
    assert!(!host.completed && !guest.completed, "{host:?} / {guest:?}");
    assert_eq!(host.reason, "hook_error", "{host:?}");
    let error = host.error.as_deref().unwrap_or("");
    assert!(error.contains("garbage"), "{error}");
    assert!(error.contains("realtime_initial_state"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_realtime_program_that_crashes_ends_the_host_with_hook_error() {
    let (host, _) = host_with_broken_program("echo 'boom' >&2; exit 3").await;
    assert!(!host.completed);
    assert_eq!(host.reason, "hook_error", "{host:?}");
    let error = host.error.as_deref().unwrap_or("");
    assert!(error.contains("closed its output"), "{error}");
    assert!(error.contains("boom"), "the program's last words: {error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_realtime_program_with_a_malformed_state_fails_each_call_with_its_reason() {
    // A reply that is JSON but not a step: the call fails, typed, and the
    // program is still usable. Its reporting lines before each reply reach
    // the session's sink although the realtime hooks get no Ctx.
    let tmp = broken_program(
        "printf '{\"snapshot\":{\"from_program\":%s}}\\n' \"$id\"; \
         printf '{\"id\":%s,\"ok\":true,\"result\":{\"state\":[1],\"outcome\":\"maybe\"}}\\n' \"$id\"",
    );
    let mut program = HooksProgram::find(tmp.path(), false, "python3").unwrap();
    program.timeout = Duration::from_secs(3);
    let mut hooks = program.spawn().unwrap();
    let sink = Arc::new(MemorySink::default());
    let ctx =
        Ctx::new(Role::Host, ControlMode::Autonomous, options(OPTIONS)).with_sink(sink.clone());
    hooks.init(&ctx).await.unwrap();
    let rules = hooks
        .realtime()
        .expect("a realtime spec's program has rules");
    assert_eq!(
        rules.ruleset_hash().unwrap(),
        ruleset_hash(tmp.path()).unwrap()
    );
    let e = rules.initial_state().await.unwrap_err();
    assert!(e.0.contains("no `state` object"), "{e}");
    let e = rules.step(1, &[], &[]).await.unwrap_err();
    assert!(e.0.contains("realtime_step"), "{e}");
    let e = rules
        .commands(Role::Host, 3, &Map::new())
        .await
        .unwrap_err();
    assert!(e.contains("instead of a list"), "{e}");
    let audit = rules.audit_outcome(&Map::new()).await;
    assert_eq!(audit.get("status"), Some(&Value::from("failed")));
    assert!(
        sink.snapshot.lock().unwrap().get("from_program").is_some(),
        "the program's snapshot line reached the sink"
    );
    rules.present_ruleset("ab".repeat(32));
    assert_eq!(rules.ruleset_hash().unwrap(), "ab".repeat(32));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_of_a_non_realtime_spec_has_no_realtime_rules() {
    let tmp = broken_program("exit 1");
    let spec = library::bundled_spec("rps-v1").unwrap();
    std::fs::write(
        tmp.path().join("spec.json"),
        json::canonical::to_string_ordered(&Value::Object(spec.doc().clone())),
    )
    .unwrap();
    let mut hooks = HooksProgram::find(tmp.path(), false, "python3")
        .unwrap()
        .spawn()
        .unwrap();
    assert!(hooks.realtime().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn the_strategy_palaver_passes_is_what_the_reference_hooks_read() {
    let py = common::reference_python();
    let dir = common::realtime::reference_protocol_dir(&py, ALIAS);
    let ctx = Ctx::new(Role::Host, ControlMode::Autonomous, options(OPTIONS));
    let mut theirs = bridged(&py, &dir);
    let mut ours = native_hooks_for_alias(ALIAS).unwrap();
    theirs.init(&ctx).await.unwrap();
    ours.init(&ctx).await.unwrap();
    let (t, o) = (theirs.realtime().unwrap(), ours.realtime().unwrap());
    let (ts, os) = (
        t.initial_state().await.unwrap(),
        o.initial_state().await.unwrap(),
    );
    assert_eq!(ts.state, os.state, "the same tick 0");
    let mut seen = Vec::new();
    for (tick, strategy) in [
        (2, r#"{}"#),
        (3, r#"{"maneuver":"retreat"}"#),
        (4, r#"{"maneuver":"hold"}"#),
        (5, r#"{"maneuver":"flank_left"}"#),
    ] {
        let s = options(strategy);
        let mine = o.commands(Role::Host, tick, &s).await.unwrap();
        let bridged = t.commands(Role::Host, tick, &s).await.unwrap();
        assert_eq!(bridged, mine, "strategy {strategy}");
        seen.push(bridged);
    }
    seen.dedup();
    assert!(
        seen.len() > 1,
        "the strategy changes the reference's commands"
    );
}

/// `palaver protocol test <the reference's tank dir>` picks the bridge for
/// both sides (the dir's hooks.py is on the reference SDK) and plays a
/// whole match at default options, unpaced.
#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
fn protocol_test_plays_the_reference_tank_dir_through_the_bridge() {
    let py = common::reference_python();
    let dir = common::realtime::reference_protocol_dir(&py, ALIAS);
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["--json", "protocol", "test"])
        .arg(&dir)
        .env("PALAVER_HOOKS_PYTHON", &py)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json::parse_str(&text).unwrap();
    let get = |path: &[&str]| -> Value {
        path.iter()
            .try_fold(&r, |v, k| v.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(get(&["flow_mode"]), Value::from("authoritative_realtime"));
    assert_eq!(get(&["paced"]), Value::Bool(false));
    assert_eq!(get(&["host", "completed"]), Value::Bool(true), "{text}");
    assert_eq!(get(&["guest", "completed"]), Value::Bool(true), "{text}");
    assert_eq!(get(&["host", "winner"]), get(&["guest", "winner"]));
    assert_eq!(get(&["audit", "status"]), Value::from("passed"), "{text}");
    assert!(get(&["ticks"]).as_i64().unwrap_or(0) > 0);
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
}

/// The reference's tank dir copied with its `proto_realtime_step` made to
/// do `act` (Python, `os` imported) at tick 10.
fn dying_reference_dir(py: &str, act: &str) -> tempfile::TempDir {
    let from = common::realtime::reference_protocol_dir(py, ALIAS);
    let tmp = tempfile::tempdir().unwrap();
    for name in ["spec.json", "hooks.py"] {
        std::fs::copy(from.join(name), tmp.path().join(name)).unwrap();
    }
    let mut hooks = std::fs::read_to_string(tmp.path().join("hooks.py")).unwrap();
    hooks.push_str(&format!(
        "\n\nimport os as _os\n\
         _step = Hooks.proto_realtime_step\n\
         def _dying_step(self, state, tick, commands):\n\
         \x20   if tick == 10:\n\
         \x20       {act}\n\
         \x20   return _step(self, state, tick, commands)\n\
         Hooks.proto_realtime_step = _dying_step\n"
    ));
    std::fs::write(tmp.path().join("hooks.py"), hooks).unwrap();
    tmp
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_bridged_host_whose_hooks_die_or_raise_mid_match_ends_with_hook_error() {
    let py = common::reference_python();
    for (act, says) in [
        ("_os._exit(5)", "closed its output"),
        (
            "raise ValueError('the tank rules broke')",
            "the tank rules broke",
        ),
    ] {
        let dir = dying_reference_dir(&py, act);
        let (hd, gd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m =
            bridged_host_vs_native_guest(&py, dir.path(), OPTIONS, true, (hd.path(), gd.path()))
                .await;
        assert!(
            !m.host.completed && !m.guest.completed,
            "{act}: {m:?}",
            m = (&m.host, &m.guest)
        );
        assert_eq!(m.host.reason, "hook_error", "{act}: {:?}", m.host);
        let error = m.host.error.as_deref().unwrap_or("");
        assert!(error.contains(says), "{act}: {error}");
        // The match ran until then.
        let frames = journal_frames(gd.path());
        assert_eq!(frames.len(), 10, "{act}: ticks 0 to 9 reached the guest");
    }
}

/// A bridged *guest* whose program dies mid-match ends the session with
/// `hook_error` at once (it used to play on with empty batches and fail its
/// audit); the native host sees the guest leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_bridged_guest_whose_hooks_die_mid_match_ends_with_hook_error() {
    let py = common::reference_python();
    let from = common::realtime::reference_protocol_dir(&py, ALIAS);
    let dir = tempfile::tempdir().unwrap();
    for name in ["spec.json", "hooks.py"] {
        std::fs::copy(from.join(name), dir.path().join(name)).unwrap();
    }
    let mut hooks = std::fs::read_to_string(dir.path().join("hooks.py")).unwrap();
    hooks.push_str(
        "\n\nimport os as _os\n\
         _commands = Hooks.proto_realtime_commands\n\
         def _dying_commands(self, state, target_tick):\n\
         \x20   if target_tick >= 12:\n\
         \x20       _os._exit(5)\n\
         \x20   return _commands(self, state, target_tick)\n\
         Hooks.proto_realtime_commands = _dying_commands\n",
    );
    std::fs::write(dir.path().join("hooks.py"), hooks).unwrap();
    let spec = library::bundled_spec(ALIAS).unwrap();
    let (hc, gc) = Channel::memory_pair();
    let (hs, gs) = (
        Arc::new(MemorySink::default()),
        Arc::new(MemorySink::default()),
    );
    let hctx = Ctx::new(Role::Host, ControlMode::Autonomous, options(OPTIONS)).with_sink(hs);
    let gctx = Ctx::new(Role::Guest, ControlMode::Autonomous, options(OPTIONS)).with_sink(gs);
    let mut hh = native_hooks_for_alias(ALIAS).unwrap();
    hh.realtime()
        .unwrap()
        .present_ruleset(ruleset_hash(dir.path()).unwrap());
    let mut gh = bridged(&py, dir.path());
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(30)),
        realtime_lockstep: true,
        ..Default::default()
    };
    let (host, guest) = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::join!(
            engine::run(spec, hh.as_mut(), hc.pumped(), &hctx, &cfg),
            engine::run(spec, gh.as_mut(), gc.pumped(), &gctx, &cfg),
        )
    })
    .await
    .expect("both sides end");
    assert_eq!(guest.reason, "hook_error", "{guest:?}");
    assert!(!guest.completed && !host.completed, "{host:?} / {guest:?}");
    assert_eq!(host.reason, "peer_disconnected", "{host:?}");
}
