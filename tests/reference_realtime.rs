//! tank-battle-v1 between palaver and the reference client (aigenora 0.1.4,
//! tests/reference/peer.py as a process, NDJSON over loopback TCP) at the
//! real tick rate: a palaver guest joins a reference host and a palaver host
//! serves a reference guest, both presenting the reference's ruleset hash
//! (computed over the installed reference's protocol dir, as
//! `--ruleset-dir` does); with palaver's native ruleset hash both sides
//! refuse the handshake, each saying why. Ignored by default: scripts/test
//! runs them with the reference's Python.

use crate::common;

use palaver::engine::realtime::ruleset_hash;
use palaver::engine::{
    self, Channel, ControlMode, Ctx, EngineConfig, MemorySink, Role, SessionOutcome,
};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

const ALIAS: &str = "tank-battle-v1";

struct Match {
    ours: SessionOutcome,
    theirs: Value,
    sink: Arc<MemorySink>,
}

async fn against_reference(
    py: &str,
    our_role: Role,
    present: Option<String>,
    options: &str,
) -> Match {
    let spec = library::bundled_spec(ALIAS).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/peer.py");
    let mut child = tokio::process::Command::new(py)
        .args([
            script,
            "--role",
            our_role.peer().as_str(),
            "--alias",
            ALIAS,
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
        .expect("the reference connects")
        .unwrap();
    let (r, w) = stream.into_split();
    let channel = Channel::from_stream(r, w).pumped();
    let opts: Map = json::parse_str(options)
        .unwrap()
        .as_object()
        .cloned()
        .unwrap();
    let sink = Arc::new(MemorySink::default());
    let ctx = Ctx::new(our_role, ControlMode::Autonomous, opts).with_sink(sink.clone());
    let mut hooks = native_hooks_for_alias(ALIAS).unwrap();
    if let Some(h) = present {
        hooks.realtime().unwrap().present_ruleset(h);
    }
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
    Match { ours, theirs, sink }
}

#[test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
fn the_reference_protocol_dir_hashes_to_the_documented_ruleset() {
    let py = common::reference_python();
    assert_eq!(
        ruleset_hash(&common::realtime::reference_protocol_dir(&py, ALIAS)).unwrap(),
        "b67f90ae20f6f26856727cf9426eced5eee6ed061601c851a3d1988b3aa8a3d0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_palaver_guest_plays_a_reference_host_and_audits_its_frames() {
    let py = common::reference_python();
    let theirs_hash = ruleset_hash(&common::realtime::reference_protocol_dir(&py, ALIAS)).unwrap();
    let m = against_reference(
        &py,
        Role::Guest,
        Some(theirs_hash),
        r#"{"max_ticks":40,"team_size":3}"#,
    )
    .await;
    assert!(m.ours.completed, "ours {:?}\ntheirs {}", m.ours, m.theirs);
    assert_eq!(
        m.theirs.get("completed"),
        Some(&Value::Bool(true)),
        "{}",
        m.theirs
    );
    assert_eq!(
        m.ours.winner.as_deref(),
        m.theirs.get("outcome").and_then(Value::as_str),
        "both sides record the same outcome"
    );
    let ended = common::realtime::last_event(&m.sink, "realtime_ended").unwrap();
    assert_eq!(
        ended.get("audit").and_then(|a| a.get("status")),
        Some(&Value::from("passed")),
        "{ended:?}"
    );
    // The reference host accepted every command palaver's commander sent.
    let events = m
        .theirs
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert!(
        !events
            .iter()
            .any(|e| e.get("type") == Some(&Value::from("realtime_command_rejected"))),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn a_palaver_host_serves_a_reference_guest_whose_audit_passes() {
    let py = common::reference_python();
    let theirs_hash = ruleset_hash(&common::realtime::reference_protocol_dir(&py, ALIAS)).unwrap();
    let m = against_reference(
        &py,
        Role::Host,
        Some(theirs_hash),
        r#"{"max_ticks":40,"team_size":3}"#,
    )
    .await;
    assert!(m.ours.completed, "ours {:?}\ntheirs {}", m.ours, m.theirs);
    assert_eq!(
        m.theirs.get("completed"),
        Some(&Value::Bool(true)),
        "{}",
        m.theirs
    );
    assert_eq!(
        m.ours.winner.as_deref(),
        m.theirs.get("outcome").and_then(Value::as_str)
    );
    let audit = m.theirs.get("audit").expect("the reference guest's audit");
    assert_eq!(
        audit.get("status"),
        Some(&Value::from("passed")),
        "{audit:?}"
    );
    assert_eq!(audit.get("integrity"), Some(&Value::from("verified")));
    // Every command the reference's commander sent was accepted by palaver.
    assert!(common::realtime::last_event(&m.sink, "realtime_command_rejected").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON)"]
async fn native_rules_against_the_reference_are_refused_on_both_sides() {
    let py = common::reference_python();
    for role in [Role::Guest, Role::Host] {
        let m = against_reference(&py, role, None, "{}").await;
        assert_eq!(
            m.ours.reason, "ruleset_hash_mismatch",
            "{role:?}: {:?}",
            m.ours
        );
        assert!(
            m.ours
                .error
                .as_deref()
                .unwrap_or("")
                .contains("different rules"),
            "{:?}",
            m.ours
        );
        assert_eq!(
            m.theirs.get("reason"),
            Some(&Value::from("ruleset_hash_mismatch")),
            "{role:?}: {}",
            m.theirs
        );
    }
}
