//! The real binary: outputs, exit codes and error lines.

use std::path::Path;
use std::process::{Command, Output};

const RPS_ID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

fn palaver(args: &[&str], data_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_DATA_DIR", data_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run palaver")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn run(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let o = palaver(args, dir.path());
    Run {
        code: o.status.code().unwrap_or(-1),
        out: text(&o.stdout),
        err: text(&o.stderr),
    }
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

#[test]
fn hash_prints_the_reference_id() {
    let r = run(&["protocol", "hash", "assets/protocols/rps-v1/spec.json"]);
    assert_eq!((r.code, r.out.trim()), (0, RPS_ID));
    let r = run(&["protocol", "hash", "rps-v1", "--json"]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["protocol_id"], RPS_ID);
    // A directory holding spec.json works too.
    let r = run(&["protocol", "hash", "assets/protocols/rps-v1"]);
    assert_eq!(r.out.trim(), RPS_ID);
}

#[test]
fn hash_warns_on_unknown_spec_version_but_still_prints() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "s.json",
        r#"{"spec_version":"2.0","messages":[]}"#,
    );
    let r = run(&["protocol", "hash", &f]);
    assert_eq!(r.code, 0);
    assert_eq!(r.out.trim().len(), 64);
    assert!(
        r.err
            .contains("[warning] unsupported spec_version: '2.0' (supported: 1.0)"),
        "{}",
        r.err
    );
    // Everything else refuses it.
    let r = run(&["validate", &f, r#"{"action":"x"}"#]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("unsupported spec_version: '2.0'"),
        "{}",
        r.err
    );
}

#[test]
fn bad_input_gets_one_clear_line_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let bad = write(
        d.path(),
        "bad.json",
        "{\n  \"messages\": [\n    {\"name\": \"x\",}\n  ]\n}\n",
    );
    let r = run(&["protocol", "hash", &bad]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("bad.json: invalid JSON") && r.err.contains("line 3, column 18"),
        "{}",
        r.err
    );
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
    assert!(!r.err.contains("panicked"));

    let r = run(&["protocol", "hash", "no/such/spec.json"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("cannot read no/such/spec.json"), "{}", r.err);

    let arr = write(d.path(), "arr.json", "[1,2]");
    let r = run(&["protocol", "hash", &arr]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("spec must be a JSON object, found array"),
        "{}",
        r.err
    );

    let r = run(&["validate", "rps-v1", "{\"action\": "]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("message: invalid JSON") && r.err.contains("column"),
        "{}",
        r.err
    );

    let r = run(&["protocol", "show", "no-such-protocol"]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("no protocol 'no-such-protocol'"),
        "{}",
        r.err
    );

    let bin = write(d.path(), "bin.json", "\u{feff}{}");
    let r = run(&["protocol", "hash", &bin]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("byte-order mark"), "{}", r.err);
}

#[test]
fn validate_message_ok_and_rejected() {
    let r = run(&[
        "validate",
        "rps-v1",
        r#"{"action":"join","best_of":3}"#,
        "--direction",
        "guest_to_host",
    ]);
    assert_eq!((r.code, r.out.trim()), (0, "OK"));
    let r = run(&[
        "validate",
        "assets/protocols/rps-v1/spec.json",
        r#"{"action":"reveal","round":-1,"choice":"lizard","nonce":"xyz","extra":1}"#,
        "--direction",
        "guest_to_host",
    ]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.err.trim(),
        "ValidationError: unknown field: extra; round: below min 0; choice: value 'lizard' not in enum; nonce: expected 16-64 lowercase hex chars"
    );
    let r = run(&[
        "validate",
        "rps-v1",
        r#"{"action":"end"}"#,
        "--message",
        "end",
        "--json",
    ]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["ok"], true);
    let r = run(&[
        "validate",
        "rps-v1",
        r#"{"action":"join"}"#,
        "--direction",
        "host_to_guest",
        "--json",
    ]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        v["error"],
        "message schema not found for action='join' direction=host_to_guest"
    );
}

#[test]
fn validate_options() {
    let r = run(&[
        "validate",
        "rps-v1",
        "--options",
        r#"{"best_of":5,"anything":1}"#,
    ]);
    assert_eq!((r.code, r.out.trim()), (0, "OK"));
    let r = run(&[
        "validate",
        "rps-v1",
        "--options",
        r#"{"best_of":0,"termination":"x"}"#,
    ]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.err.trim(),
        "ValidationError: best_of: value out of range; termination: invalid enum"
    );
    let r = run(&["validate", "rps-v1", "--options", "[1]"]);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("--options must be a JSON object"));
}

#[test]
fn check_passes_bundled_and_reports_paths() {
    for alias in [
        "rps-v1",
        "guess-number-v1",
        "human-chat-v1",
        "tank-battle-v1",
        "community-room-v1",
    ] {
        let r = run(&["protocol", "check", alias]);
        assert_eq!(r.code, 0, "{alias}: {}", r.out);
    }
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "s.json",
        r#"{"name":"x","messages":[{"name":"go","direction":"sideways","fields":{"action":{"type":"enum","values":["go"],"required":true}}}]}"#,
    );
    let r = run(&["protocol", "check", &f, "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["findings"][0]["path"], "$.messages[0].direction");
}

#[test]
fn list_show_and_path() {
    let r = run(&["protocol", "list", "--json"]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 21);
    // Every bundled protocol has palaver's own rules (the realtime tank
    // battle's since issue 42).
    let unplayable: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["plays_natively"] != true)
        .map(|e| e["alias"].as_str().unwrap())
        .collect();
    assert!(unplayable.is_empty(), "{unplayable:?}");
    let r = run(&["protocol", "list"]);
    assert!(r.out.lines().any(|l| l.starts_with("rps-v1")
        && l.contains("simultaneous_round")
        && l.contains(" yes ")));

    let r = run(&["protocol", "show", "43a80648"]);
    assert_eq!(r.code, 0);
    assert!(
        r.out.contains(&format!("protocol_id  {RPS_ID}")),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("best_of") && r.out.contains("*standard"),
        "{}",
        r.out
    );

    let d = tempfile::tempdir().unwrap();
    let o = palaver(&["protocol", "path", "rps-v1"], d.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let p = text(&o.stdout).trim().to_owned();
    assert!(
        p.ends_with("protocols/43a80648/1a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f"),
        "{p}"
    );
    assert!(Path::new(&p).join("spec.json").is_file());
    assert!(d.path().join("protocols/index.json").is_file());
    // Idempotent, and the library now reads through the installed index.
    let o = palaver(&["protocol", "path", "human-chat-v1", "--json"], d.path());
    assert!(o.status.success());
    let o = palaver(&["protocol", "list", "--json"], d.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 21);
}

#[test]
fn wolf_join_in_a_persons_control_mode_opens_the_console() {
    // human and hybrid are played at the console's decision prompt: without
    // a terminal that is the console's own error, before any connection.
    for mode in ["human", "hybrid"] {
        let r = run(&[
            "wolf",
            "join",
            "ws://127.0.0.1:9/ws",
            "--name",
            "team1",
            "--control-mode",
            mode,
        ]);
        assert_eq!(r.code, 2, "{mode}: {}", r.err);
        assert!(r.err.contains("the console needs a terminal"), "{}", r.err);
    }
    // autonomous stays the plain client: it tries the server.
    let r = run(&["wolf", "join", "ws://127.0.0.1:9/ws", "--name", "team1"]);
    assert_eq!(r.code, 2);
    assert!(
        !r.err.contains("terminal") && r.err.contains("127.0.0.1:9"),
        "{}",
        r.err
    );
}

#[test]
fn no_arguments_opens_the_console_which_needs_a_terminal() {
    // Under the test harness stdout is a pipe: the console says why it
    // cannot start and where the commands are, instead of garbling it.
    let r = run(&[]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("the console needs a terminal") && r.err.contains("palaver --help"),
        "{}",
        r.err
    );
    let h = run(&["--help"]);
    assert_eq!(h.code, 0);
    assert!(h.out.contains("Usage: palaver") && h.out.contains("palaver console --server"));
}

#[test]
fn community_commands_say_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let no_server = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["browse"])
        .env("PALAVER_DATA_DIR", dir.path())
        .env("PALAVER_CONFIG_DIR", dir.path().join("config"))
        .env_remove("PALAVER_SERVER")
        .output()
        .unwrap();
    assert_eq!(no_server.status.code(), Some(2));
    assert!(
        text(&no_server.stderr).contains("no community server: pass --server"),
        "{}",
        text(&no_server.stderr)
    );

    let r = run(&["--server", "http://127.0.0.1:1", "browse"]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("no identity") || r.err.contains("key.json"),
        "{}",
        r.err
    );

    let init = palaver(&["init"], dir.path());
    assert!(init.status.success(), "{}", text(&init.stderr));
    let again = palaver(&["--json", "init"], dir.path());
    assert!(
        text(&again.stdout).contains("\"created\": false"),
        "{}",
        text(&again.stdout)
    );
    let down = palaver(&["--server", "http://127.0.0.1:1", "browse"], dir.path());
    assert_eq!(down.status.code(), Some(2));
    assert!(
        text(&down.stderr).contains("cannot reach http://127.0.0.1:1"),
        "{}",
        text(&down.stderr)
    );
}

/// `--profile`: a protocol's profile gives the options, `--options` changes
/// single keys over it, and an unknown profile is named with the ones there are.
#[test]
fn protocol_test_takes_a_profile_and_options_over_it() {
    let options = |args: &[&str]| -> serde_json::Value {
        let r = run(args);
        assert_eq!(r.code, 0, "{args:?}: {}{}", r.out, r.err);
        serde_json::from_str::<serde_json::Value>(&r.out).unwrap()["options"].clone()
    };
    let quick = options(&["--json", "protocol", "test", "rps-v1", "--profile", "quick"]);
    assert_eq!(quick["best_of"], 1);
    assert_eq!(quick["termination"], "first_to_win");
    let paced = options(&[
        "--json",
        "protocol",
        "test",
        "rps-v1",
        "--profile",
        "paced",
        "--options",
        r#"{"round_delay_seconds":0}"#,
    ]);
    assert_eq!(paced["best_of"], 3, "{paced}");
    assert_eq!(
        paced["round_delay_seconds"], 0,
        "the --options key wins: {paced}"
    );
    let r = run(&["protocol", "test", "rps-v1", "--profile", "nope"]);
    assert_ne!(r.code, 0);
    assert!(
        r.err.contains(
            "rps-v1 has no profile 'nope' (its profiles: quick, standard, long, marathon, paced)"
        ),
        "{}",
        r.err
    );
}
