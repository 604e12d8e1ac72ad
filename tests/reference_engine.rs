//! palaver's engine against the reference client's engine and hooks, run as
//! a Python process (tests/reference/peer.py) over NDJSON on loopback TCP:
//! each bundled game both ways round, completed on both sides with the same
//! outcome.

mod common;

use palaver::engine::{self, Channel, Ctx, EngineConfig, MemorySink, Role};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
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
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let their_role = our_role.peer().as_str();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/peer.py");
    let mut child = tokio::process::Command::new(py)
        .args([
            script,
            "--role",
            their_role,
            "--alias",
            alias,
            "--port",
            &port.to_string(),
            "--options",
            options,
        ])
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
    let spec = library::bundled_spec(alias).expect("bundled");
    let opts: Map = json::parse_str(options)
        .expect("options")
        .as_object()
        .cloned()
        .unwrap_or_default();
    let sink = Arc::new(MemorySink::default());
    let ctx = Ctx::new(our_role, engine::ControlMode::Autonomous, opts)
        .with_sink(sink.clone())
        .with_seed(7);
    let mut hooks = native_hooks_for_alias(alias).expect("native hooks");
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(30)),
        ..Default::default()
    };
    let ours = engine::run(spec, hooks.as_mut(), channel, &ctx, &cfg).await;
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
    let theirs = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|j| json::parse_str(j).ok())
        .unwrap_or_else(|| {
            panic!("{alias}: the reference peer gave no result.\nstdout:\n{out}\nstderr:\n{err}")
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_game_plays_the_reference_both_ways() {
    let Some(py) = common::reference_python() else {
        return;
    };
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
