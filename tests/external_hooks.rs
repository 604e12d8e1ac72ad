//! Hooks programs as real subprocesses: the Python example plays both sides
//! and against the native hooks; a program that crashes, hangs or replies
//! garbage ends the session cleanly; skeletons are refused.

use palaver::engine::external::HooksProgram;
use palaver::engine::{EngineConfig, Hooks, MemorySink};
use palaver::json::Map;
use palaver::library;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rps-external")
}

fn palaver(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .output()
        .expect("run palaver");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn the_python_example_plays_itself() {
    let dir = example();
    let (code, out, err) = palaver(&[
        "protocol",
        "test",
        dir.to_str().unwrap(),
        "--seed",
        "4",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["frames"].as_array().unwrap().len() >= 8);
    assert!(v["host"]["winner"].is_string());
}

fn external(dir: &Path, timeout: Duration) -> Box<dyn Hooks> {
    let mut p = HooksProgram::find(dir, false, "python3").expect("hooks program");
    p.timeout = timeout;
    Box::new(p.spawn().expect("spawn"))
}

async fn match_up(
    host: Box<dyn Hooks>,
    guest: Box<dyn Hooks>,
) -> (
    palaver::engine::SessionOutcome,
    palaver::engine::SessionOutcome,
    Arc<MemorySink>,
) {
    let spec = library::bundled_spec("rps-v1").unwrap();
    let hs = Arc::new(MemorySink::default());
    let mut h = Side::auto(host, hs.clone());
    h.seed = Some(1);
    let mut g = Side::auto(guest, Arc::new(MemorySink::default()));
    g.seed = Some(2);
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let (a, b) = play(spec, &Map::new(), &cfg, h, g).await;
    (a, b, hs)
}

#[tokio::test]
async fn python_hooks_play_palavers_native_hooks_both_ways() {
    let (h, g, hs) = match_up(
        external(&example(), Duration::from_secs(10)),
        native_hooks_for_alias("rps-v1").unwrap(),
    )
    .await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
    assert_eq!(h.winner, g.winner);
    // The program's snapshot lines reach the session.
    assert!(hs.snapshot_value("score").is_some());
    let (h, g, _) = match_up(
        native_hooks_for_alias("rps-v1").unwrap(),
        external(&example(), Duration::from_secs(10)),
    )
    .await;
    assert!(h.completed && g.completed, "{h:?} {g:?}");
}

/// A protocol dir whose hooks program is `body` (Python).
fn program(body: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(example().join("spec.json"), d.path().join("spec.json")).unwrap();
    std::fs::write(d.path().join("hooks.py"), body).unwrap();
    d
}

#[tokio::test]
async fn broken_programs_end_the_session_cleanly() {
    let crash = program("import sys\nsys.stderr.write('boom: cannot start\\n')\nsys.exit(3)\n");
    let hang = program("import time\ntime.sleep(60)\n");
    let garbage =
        program("import sys\nfor line in sys.stdin:\n    print('this is not json', flush=True)\n");
    let wrong_id = program(
        "import sys, json\nfor line in sys.stdin:\n    print(json.dumps({'id': 999, 'ok': True, 'result': None}), flush=True)\n",
    );
    let cases = [
        (crash.path(), "closed its output"),
        (hang.path(), "no reply"),
        (garbage.path(), "garbage"),
        (wrong_id.path(), "carries id"),
    ];
    for (dir, expect) in cases {
        let started = std::time::Instant::now();
        let (h, g, _) = match_up(
            external(dir, Duration::from_millis(700)),
            native_hooks_for_alias("rps-v1").unwrap(),
        )
        .await;
        assert!(!h.completed && !g.completed);
        assert_eq!(h.reason, "hook_error", "{dir:?}: {h:?}");
        assert!(
            h.error.as_deref().unwrap_or("").contains(expect),
            "{expect}: {h:?}"
        );
        assert!(
            ["peer_disconnected", "peer_error"].contains(&g.reason.as_str()),
            "{g:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(8), "ended promptly");
    }
    // The crash's stderr is part of the reason.
    let (h, _, _) = match_up(
        external(crash.path(), Duration::from_millis(700)),
        native_hooks_for_alias("rps-v1").unwrap(),
    )
    .await;
    assert!(h.error.unwrap().contains("boom"));
}

#[test]
fn pristine_skeletons_are_refused_and_list_their_hooks() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("proto");
    let (code, out, err) = palaver(&[
        "protocol",
        "scaffold",
        "guess-number-v1",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(dir.join(".palaver-hooks.json").is_file());
    let (code, _, err) = palaver(&["protocol", "test", dir.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unimplemented hooks: host_handle_join, host_handle, guest_join_message"),
        "{err}"
    );
    // Allowed, it runs and ends cleanly on the first unimplemented hook.
    let (code, out, _) = palaver(&[
        "protocol",
        "test",
        dir.to_str().unwrap(),
        "--allow-skeleton-hooks",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("hook_error") && out.contains("PALAVER_SKELETON_NOT_IMPLEMENTED"),
        "{out}"
    );
    // A second scaffold into the same place needs --force.
    let (code, _, err) = palaver(&[
        "protocol",
        "scaffold",
        "guess-number-v1",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--force"));
    // The reference's markers count too.
    std::fs::write(
        dir.join("hooks.py"),
        "AIGENORA_SKELETON = True\n# AIGENORA_SKELETON_NOT_IMPLEMENTED: proto_host_handle\n",
    )
    .unwrap();
    std::fs::remove_file(dir.join(".palaver-hooks.json")).unwrap();
    let (code, _, err) = palaver(&["protocol", "test", dir.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("proto_host_handle"), "{err}");
}

/// `host|join … -- ARGS` (the reference's extra_args): a hooks program
/// gets them in `init` as `args`; native hooks refuse any; a spec whose
/// `decision.mode` is not manual refuses them with the reference's words.
#[tokio::test]
async fn extra_args_reach_a_programs_init_and_only_a_manual_protocol_takes_them() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("init.json");
    let body = format!(
        "import json, sys\nfor line in sys.stdin:\n    req = json.loads(line)\n    if req['hook'] == 'init':\n        open({:?}, 'w').write(json.dumps(req['args']))\n    print(json.dumps({{'id': req['id'], 'ok': True, 'result': None}}), flush=True)\n",
        log.to_str().unwrap()
    );
    let dir = program(&body);
    let mut hooks = external(dir.path(), Duration::from_secs(10));
    hooks
        .set_extra_args(vec!["--level".into(), "3".into()])
        .unwrap();
    let ctx = palaver::engine::Ctx::new(
        palaver::engine::Role::Host,
        palaver::engine::ControlMode::Human,
        Map::new(),
    );
    hooks.init(&ctx).await.unwrap();
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(sent["args"], serde_json::json!(["--level", "3"]), "{sent}");
    assert_eq!(sent["role"], "host");

    let mut native = native_hooks_for_alias("rps-v1").unwrap();
    assert!(native.set_extra_args(vec!["x".into()]).is_err());
    assert!(native.set_extra_args(Vec::new()).is_ok());

    let rps = library::bundled_spec("rps-v1").unwrap();
    assert_eq!(
        rps.check_extra_args(&["foo".into(), "it's".into()])
            .unwrap_err(),
        "protocol decision mode is 'auto'; extra_args ['foo', \"it's\"] not accepted. Hint: omit positional args after post_id; for interactive decisions use --coach."
    );
    assert!(rps.check_extra_args(&[]).is_ok());
    let mut manual = rps.doc().clone();
    manual.insert(
        "decision",
        palaver::json::Value::Object(palaver::obj! { "mode" => "manual" }),
    );
    let manual = palaver::spec::Spec::from_value(palaver::json::Value::Object(manual)).unwrap();
    assert!(manual.check_extra_args(&["foo".into()]).is_ok());

    // The CLI refuses them before anything is posted.
    let (code, _, err) = palaver(&[
        "--server",
        "http://127.0.0.1:9",
        "host",
        "rps-v1",
        "--",
        "foo",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("extra_args ['foo'] not accepted"), "{err}");
}
