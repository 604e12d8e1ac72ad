//! Sessions on an iroh ticket with no community: `palaver host … --no-server`
//! prints a ticket, `palaver guest --iroh-ticket` (or the reference's
//! `guest --iroh-ticket`) plays it. The real binaries on loopback.

use crate::common;

use common::{Kill, read_until};
use palaver::json::{self, Value};
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn palaver(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(data)
        .args(args)
        .stdin(Stdio::null());
    c
}

fn session(printed: &str) -> palaver::json::Map {
    let parent = common::played::printed_state_dir(printed);
    json::parse_str(&std::fs::read_to_string(parent.join("session.json")).unwrap())
        .unwrap()
        .as_object()
        .cloned()
        .unwrap()
}

/// A `host --no-server` of `alias` with `extra` args; its ticket.
fn host(
    data: &Path,
    alias: &str,
    extra: &[&str],
) -> (Kill, BufReader<std::process::ChildStdout>, String, String) {
    let mut args = vec![
        "host",
        alias,
        "--no-server",
        "--direct",
        "--control-mode",
        "autonomous",
    ];
    args.extend(extra);
    let mut h = Kill(
        palaver(data, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(h.0.stdout.take().unwrap());
    let mut seen = String::new();
    let ticket = read_until(&mut out, "iroh_ticket:", &mut seen);
    (h, out, seen, ticket)
}

fn both_end_true(host_seen: &str, guest_seen: &str) -> Option<String> {
    let (h, g) = (session(host_seen), session(guest_seen));
    for s in [&h, &g] {
        assert_eq!(s.get("status"), Some(&Value::from("closed")), "{s:?}");
        assert_eq!(s.get("completed"), Some(&Value::Bool(true)), "{s:?}");
    }
    assert_eq!(h.get("winner"), g.get("winner"), "host {h:?}\nguest {g:?}");
    h.get("winner").and_then(Value::as_str).map(str::to_owned)
}

#[test]
fn a_palaver_guest_plays_a_palaver_host_on_its_ticket() {
    let tmp = tempfile::tempdir().unwrap();
    for (alias, opts) in [
        ("rps-v1", r#"{"best_of":3}"#),
        ("tank-battle-v1", r#"{"max_ticks":20,"team_size":2}"#),
    ] {
        let (h, hout, hseen, ticket) = host(&tmp.path().join("h"), alias, &["--options", opts]);
        let g = palaver(
            &tmp.path().join("g"),
            &[
                "guest",
                "--iroh-ticket",
                &ticket,
                alias,
                "--options",
                opts,
                "--direct",
                "--control-mode",
                "autonomous",
            ],
        )
        .output()
        .unwrap();
        let gseen = String::from_utf8_lossy(&g.stdout).into_owned();
        assert!(
            g.status.success(),
            "{alias}: guest: {gseen}\n{}",
            String::from_utf8_lossy(&g.stderr)
        );
        let (status, hseen) =
            common::finish_status(h, hout, hseen, "host --no-server", Duration::from_secs(60));
        assert!(status.success(), "{alias}: host: {hseen}");
        let winner = both_end_true(&hseen, &gseen);
        assert!(winner.is_some(), "{alias}: a game names a winner");
        assert!(
            gseen.contains(&format!("winner: {}", winner.unwrap())),
            "{gseen}"
        );
    }
}

#[test]
fn a_bad_ticket_and_a_group_protocol_are_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let o = palaver(
        tmp.path(),
        &[
            "guest",
            "--iroh-ticket",
            "nodenotaticket",
            "rps-v1",
            "--direct",
        ],
    )
    .output()
    .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad iroh ticket"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = palaver(
        tmp.path(),
        &["host", "community-room-v1", "--no-server", "--direct"],
    )
    .output()
    .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("group protocol"));
}

/// The reference's own `guest --iroh-ticket` plays a palaver host.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn the_reference_guest_plays_a_palaver_host_on_its_ticket() {
    let py = common::reference_python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::realtime::reference_protocol_dir(&py, "rps-v1")
        .display()
        .to_string();
    let (h, hout, hseen, ticket) = host(&tmp.path().join("h"), "rps-v1", &[]);
    let g = Command::new(&py)
        .args([
            "-m",
            "aigenora",
            "guest",
            "--protocol-dir",
            &dir,
            "--iroh-ticket",
            &ticket,
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let gseen = String::from_utf8_lossy(&g.stdout).into_owned();
    assert!(
        g.status.success(),
        "reference guest: {gseen}\n{}",
        String::from_utf8_lossy(&g.stderr)
    );
    assert!(gseen.contains("done"), "{gseen}");
    let (status, hseen) =
        common::finish_status(h, hout, hseen, "host --no-server", Duration::from_secs(60));
    assert!(status.success(), "host: {hseen}");
    let s = session(&hseen);
    assert_eq!(s.get("status"), Some(&Value::from("closed")), "{s:?}");
    assert_eq!(s.get("completed"), Some(&Value::Bool(true)), "{s:?}");
}
