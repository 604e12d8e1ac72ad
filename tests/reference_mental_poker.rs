//! The `mental_poker` flow against the reference client's engine and hooks
//! (tests/reference/peer.py, aigenora 0.1.4) over NDJSON on loopback TCP:
//! both games, palaver as host and as guest, bound to a session id and
//! identity keys as a real session is. Both sides must pass their audit and
//! sign the same transcript root; and each fault the reference can inject
//! (`AIGENORA_MP_TEST_FAULT`) must end palaver's side with the reason its
//! checks name, in bounded time.

use crate::common;

use palaver::engine::{self, Channel, Ctx, EngineConfig, MatchBinding, MemorySink, Role};
use palaver::identity::KeyPair;
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

const SID: &str = "abababababababababababababababababababababababababababababababab";
const OUR_SEED: [u8; 32] = [7; 32];
const THEIR_SEED: &str = "0909090909090909090909090909090909090909090909090909090909090909";

struct Played {
    ours: engine::SessionOutcome,
    theirs: Value,
    sink: Arc<MemorySink>,
    took: Duration,
}

struct Setup<'a> {
    alias: &'a str,
    our_role: Role,
    options: &'a str,
    /// None: neither side is told a session id ("mp-session" both).
    sid: Option<&'a str>,
    fault: Option<&'a str>,
    peer_timeout: Duration,
}

async fn play(py: &str, s: Setup<'_>) -> Played {
    let spec = library::bundled_spec(s.alias).expect("bundled");
    let mut hooks = native_hooks_for_alias(s.alias).expect("native hooks");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let ours_kp = KeyPair::from_seed(OUR_SEED);
    let theirs_kp = KeyPair::from_seed(
        palaver::engine::mental_poker::num::from_hex_array(THEIR_SEED).expect("seed"),
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/peer.py");
    let mut args: Vec<String> = [
        script,
        "--role",
        s.our_role.peer().as_str(),
        "--alias",
        s.alias,
        "--port",
        &port.to_string(),
        "--options",
        s.options,
        "--key-seed",
        THEIR_SEED,
        "--peer-public-key",
        &ours_kp.public_key,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    if let Some(sid) = s.sid {
        args.extend(["--session-id".to_owned(), sid.to_owned()]);
    }
    let mut cmd = tokio::process::Command::new(py);
    cmd.args(&args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(f) = s.fault {
        cmd.env("AIGENORA_ENABLE_TEST_FAULTS", "1")
            .env("AIGENORA_MP_TEST_FAULT", f);
    }
    let mut child = cmd.spawn().expect("start the reference peer");
    let (stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
        .await
        .expect("peer connects")
        .expect("accept");
    let (r, w) = stream.into_split();
    let opts: Map = json::parse_str(s.options)
        .expect("options")
        .as_object()
        .cloned()
        .unwrap_or_default();
    let sink = Arc::new(MemorySink::default());
    let ctx = Ctx::new(s.our_role, engine::ControlMode::Autonomous, opts)
        .with_sink(sink.clone())
        .with_binding(MatchBinding {
            session_id: s.sid.map(str::to_owned),
            identity: Some(Arc::new(ours_kp)),
            peer_public_key: Some(theirs_kp.public_key.clone()),
            ..MatchBinding::default()
        });
    let cfg = EngineConfig {
        peer_timeout: Some(s.peer_timeout),
        ..Default::default()
    };
    let t0 = Instant::now();
    let ours = engine::run(spec, hooks.as_mut(), Channel::from_stream(r, w), &ctx, &cfg).await;
    let took = t0.elapsed();
    let (mut out, mut err) = (String::new(), String::new());
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
            // A fault can make the reference raise instead of returning.
            Value::Object(palaver::obj! { "crashed" => err.as_str() })
        });
    Played {
        ours,
        theirs,
        sink,
        took,
    }
}

fn their_events<'a>(theirs: &'a Value, kind: &str) -> Vec<&'a Map> {
    theirs
        .get("events")
        .and_then(Value::as_array)
        .map(|evs| {
            evs.iter()
                .filter(|e| e.get_str("type") == Some(kind))
                .filter_map(|e| e.get("data").and_then(Value::as_object))
                .collect()
        })
        .unwrap_or_default()
}

fn honest<'a>(alias: &'a str, options: &'a str, our_role: Role, sid: Option<&'a str>) -> Setup<'a> {
    Setup {
        alias,
        our_role,
        options,
        sid,
        fault: None,
        peer_timeout: Duration::from_secs(60),
    }
}

fn check_honest(label: &str, p: &Played) {
    assert!(
        p.ours.completed && p.ours.audit_passed == Some(true),
        "{label}: ours {:?}\ntheirs {}",
        p.ours,
        p.theirs
    );
    assert_eq!(
        p.theirs.get("completed"),
        Some(&Value::Bool(true)),
        "{label}: theirs {}",
        p.theirs
    );
    assert_eq!(
        p.theirs.get("audit_passed"),
        Some(&Value::Bool(true)),
        "{label}: the reference's audit passed: {}",
        p.theirs
    );
    let verified = their_events(&p.theirs, "mp_terminal_receipt_verified");
    assert_eq!(verified.len(), 1, "{label}: one receipt check");
    assert_eq!(
        verified[0].get("peer_signature_ok"),
        Some(&Value::Bool(true)),
        "{label}: the reference verified our receipt"
    );
    assert_eq!(
        verified[0].get_str("transcript_hash"),
        p.ours.transcript_hash.as_deref(),
        "{label}: both sides signed the same transcript root"
    );
    let theirs_winner = p
        .theirs
        .get("outcome")
        .and_then(Value::as_str)
        .map(str::to_owned);
    assert_eq!(p.ours.winner, theirs_winner, "{label}: same outcome");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_games_play_the_reference_both_ways_with_audit_and_receipts() {
    let py = common::reference_python();
    let cases = [
        ("crazy-eights-v1", r#"{"hand_size":3}"#),
        ("crazy-eights-v1", r#"{"hand_size":7}"#),
        ("crazy-eights-v1", "{}"),
        ("briscola-v1", "{}"),
    ];
    for (alias, options) in cases {
        for role in [Role::Host, Role::Guest] {
            let label = format!("{alias} {options} as {role:?}");
            let p = play(&py, honest(alias, options, role, Some(SID))).await;
            check_honest(&label, &p);
            eprintln!("{label}: {:?}, {:.0?}", p.ours.winner, p.took);
        }
    }
    // Without a session id both sides fall back to "mp-session".
    let p = play(&py, honest("crazy-eights-v1", "{}", Role::Guest, None)).await;
    check_honest("crazy-eights-v1 without a session id", &p);
}

/// A reference fault and the reason palaver's side must end with.
struct FaultCase {
    alias: &'static str,
    our_role: Role,
    fault: &'static str,
    reason: &'static str,
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_faults_end_palaver_with_the_audit_reason() {
    let py = common::reference_python();
    let ce = "crazy-eights-v1";
    let cases = [
        // The reference guest poisons the sealed entry of a card only it
        // ever fetches itself: palaver sees it in the audit.
        FaultCase {
            alias: ce,
            our_role: Role::Host,
            fault: "corrupt_sealed_payload:g-0",
            reason: "sealed_payload_poisoned",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Guest,
            fault: "corrupt_sealed_payload:h-51",
            reason: "sealed_payload_poisoned",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Guest,
            fault: "forge_token:h-0",
            reason: "forged_token",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Host,
            fault: "forge_token:g-0",
            reason: "forged_token",
        },
        // The reference trips over its own skipped opening (it raises when
        // it records the openings) and drops the connection.
        FaultCase {
            alias: ce,
            our_role: Role::Host,
            fault: "skip_opening",
            reason: "peer_disconnected",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Guest,
            fault: "skip_witness",
            reason: "witness_transcript_mismatch",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Host,
            fault: "bogus_witness",
            reason: "ot_snapshot_missing",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Guest,
            fault: "drop_ot_response:guest-0",
            reason: "peer_timeout",
        },
        FaultCase {
            alias: ce,
            our_role: Role::Host,
            fault: "drop_ot_response:host-0",
            reason: "peer_timeout",
        },
    ];
    for c in cases {
        let label = format!("{} as {:?} against {}", c.alias, c.our_role, c.fault);
        let p = play(
            &py,
            Setup {
                alias: c.alias,
                our_role: c.our_role,
                options: "{}",
                sid: Some(SID),
                fault: Some(c.fault),
                peer_timeout: Duration::from_secs(3),
            },
        )
        .await;
        assert!(
            !p.ours.completed,
            "{label}: palaver must not complete: {:?}",
            p.ours
        );
        assert_eq!(
            p.ours.reason, c.reason,
            "{label}: {:?}\ntheirs {}",
            p.ours, p.theirs
        );
        assert!(
            !their_events(&p.theirs, "mp_test_fault_injected").is_empty()
                || p.theirs.get("crashed").is_some(),
            "{label}: the reference injected its fault: {}",
            p.theirs
        );
        assert!(p.took < Duration::from_secs(30), "{label}: bounded");
        let ended: Vec<_> = p
            .sink
            .kinds()
            .into_iter()
            .filter(|k| *k == "session_ended")
            .collect();
        assert_eq!(ended.len(), 1, "{label}: exactly one session_ended");
    }
}
