//! Daemon sessions as real background processes: crash consistency under
//! SIGKILL, live `session events --follow`, abort, and the reference
//! client's own CLI steering a palaver session.

use crate::common;

use palaver::json::{self, Value};
use palaver::session::files;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_palaver")
}

struct Daemon {
    parent: PathBuf,
    child: PathBuf,
    pid: i32,
}

fn start(data: &Path, args: &[&str]) -> Daemon {
    let mut all = vec!["--data-dir", data.to_str().unwrap(), "protocol", "test"];
    all.extend_from_slice(args);
    all.push("--daemon");
    let o = Command::new(bin())
        .args(&all)
        .output()
        .expect("start daemon");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json::parse_bytes(&o.stdout).expect("daemon JSON");
    Daemon {
        parent: PathBuf::from(v.get("state_dir").unwrap().as_str().unwrap()),
        child: PathBuf::from(v.get("engine_state_dir").unwrap().as_str().unwrap()),
        pid: v.get("pid").unwrap().as_i64().unwrap() as i32,
    }
}

fn palaver(data: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(bin())
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn status(parent: &Path) -> String {
    files::read_json_object(&parent.join("session.json"))
        .and_then(|m| m.get("status").map(Value::py_str))
        .unwrap_or_default()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every file in the tree parses: JSON documents whole, JSONL line by line.
/// `torn_tail_allowed`: a .jsonl file may end in a line cut short (right
/// after a SIGKILL: Linux stops a write between pages when the process is
/// killed, and nobody has appended since); otherwise every .jsonl file must
/// end in a newline, so every byte of it is a whole line that parses.
fn assert_all_parse(dir: &Path, torn_tail_allowed: bool) -> usize {
    let mut torn = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            torn += assert_all_parse(&p, torn_tail_allowed);
            continue;
        }
        let name = p.file_name().unwrap().to_str().unwrap().to_owned();
        let bytes = std::fs::read(&p).unwrap();
        if name.ends_with(".jsonl") {
            let whole = bytes
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |at| at + 1);
            assert!(
                torn_tail_allowed || whole == bytes.len(),
                "{}: ends in a line cut short: {:?}",
                p.display(),
                String::from_utf8_lossy(&bytes[whole..])
            );
            torn += usize::from(whole != bytes.len());
            let lines: Vec<&[u8]> = bytes[..whole]
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .collect();
            assert_eq!(
                palaver::session::files::read_jsonl(&p).len(),
                lines.len(),
                "{}: the reader takes every complete line",
                p.display()
            );
            for line in lines {
                assert!(
                    json::parse_bytes(line).is_ok(),
                    "{}: bad line {}",
                    p.display(),
                    String::from_utf8_lossy(line)
                );
            }
        } else if name.ends_with(".json") {
            assert!(
                json::parse_bytes(&bytes).is_ok(),
                "{} does not parse",
                p.display()
            );
        } else {
            assert!(
                name.ends_with(".log") || name.starts_with('.'),
                "unexpected file {}",
                p.display()
            );
        }
    }
    torn
}

#[test]
fn sigkill_at_random_points_leaves_files_that_parse() {
    let data = tempfile::tempdir().unwrap();
    let (mut killed_running, mut torn_seen) = (0, 0);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    // PALAVER_SIGKILL_ROUNDS runs the loop longer (1 to 10000; default 16).
    let rounds: u32 = std::env::var("PALAVER_SIGKILL_ROUNDS")
        .ok()
        .map(|v| {
            v.parse()
                .ok()
                .filter(|n| (1..=10_000).contains(n))
                .unwrap_or_else(|| panic!("PALAVER_SIGKILL_ROUNDS={v}: want 1 to 10000"))
        })
        .unwrap_or(16);
    for i in 0..rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let d = start(
            data.path(),
            &[
                "rps-v1",
                "--role",
                if i % 2 == 0 { "host" } else { "guest" },
                "--control-mode",
                "hybrid",
                "--options",
                r#"{"best_of":999,"termination":"fixed_rounds"}"#,
            ],
        );
        std::thread::sleep(Duration::from_millis(20 + seed % 250));
        let was = status(&d.parent);
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(d.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        wait_for("the daemon to die", || {
            !palaver::services::run::pid_alive(d.pid as u32)
        });
        if was == "running" || was == "starting" {
            killed_running += 1;
        }
        torn_seen += assert_all_parse(&d.parent, true);
        // A real tear is rare (the write must cross a page boundary as the
        // signal lands), so every other dead daemon gets one made by hand:
        // the events file it was writing ends in half a line, which
        // `session list` must cut off before it appends `daemon_died`.
        let events = d.parent.join("events.jsonl");
        if i % 2 == 1 && matches!(status(&d.parent).as_str(), "running" | "starting") {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&events)
                .unwrap();
            std::io::Write::write_all(
                &mut f,
                br#"{"ts":"2026-12-01T00:00:00.000000+00:00","type":"protocol_mes"#,
            )
            .unwrap();
            torn_seen += 1;
        }
        let (code, out) = palaver(data.path(), &["session", "list", "--json"]);
        assert_eq!(code, 0);
        let rows = json::parse_str(&out).unwrap();
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r.get("dir").and_then(Value::as_str) == Some(d.parent.to_str().unwrap()))
            .unwrap()
            .clone();
        let st = row
            .get("status")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        assert!(
            ["stopped", "crashed", "closed"].contains(&st.as_str()),
            "after SIGKILL: {st}"
        );
        if st != "closed" {
            let events = files::read_jsonl(&d.parent.join("events.jsonl"));
            assert!(
                events
                    .iter()
                    .any(|e| e.get("type").and_then(Value::as_str) == Some("daemon_died"))
            );
        }
        // `session list` found the daemon dead, cut any line it left
        // unfinished and appended `daemon_died`: now every file parses whole.
        let _ = assert_all_parse(&d.parent, false);
    }
    eprintln!(
        "{rounds} kills, {killed_running} mid-session, {torn_seen} files left with a line cut short"
    );
    assert!(
        killed_running >= rounds / 2,
        "only {killed_running} of {rounds} kills hit a running session"
    );
}

#[test]
fn events_follow_shows_frames_live_and_decide_reaches_the_daemon() {
    let data = tempfile::tempdir().unwrap();
    let d = start(
        data.path(),
        &[
            "rps-v1",
            "--role",
            "host",
            "--control-mode",
            "human",
            "--options",
            r#"{"best_of":1,"termination":"fixed_rounds","max_think_seconds":30}"#,
        ],
    );
    let mut follow = Command::new(bin())
        .args(["session", "events", d.parent.to_str().unwrap(), "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // The window opens (the daemon waits for the human)…
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push(l.clone());
        if l.contains("local_decision_window_started") {
            break;
        }
    }
    let started = Instant::now();
    let (code, out) = palaver(
        data.path(),
        &[
            "session",
            "decide",
            d.parent.to_str().unwrap(),
            "--decision",
            r#"{"choice":"rock"}"#,
        ],
    );
    assert_eq!(code, 0, "{out}");
    // …and the frames that follow the decision stream in as they happen.
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push(l.clone());
        if l.contains("session_ended") {
            break;
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        seen.iter().any(|l| l.contains("received: join")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|l| l.contains("sent: reveal")), "{seen:?}");
    assert!(
        seen.iter().any(|l| l.contains("local_decision_finalized")),
        "{seen:?}"
    );
    wait_for("the session to close", || status(&d.parent) == "closed");
    let _ = d.child;
}

#[test]
fn abort_stops_a_waiting_daemon() {
    let data = tempfile::tempdir().unwrap();
    let d = start(
        data.path(),
        &[
            "rps-v1",
            "--role",
            "guest",
            "--control-mode",
            "human",
            "--options",
            r#"{"max_think_seconds":60}"#,
        ],
    );
    wait_for("the window", || {
        d.child.join("decision/state.json").exists()
    });
    let (code, out) = palaver(
        data.path(),
        &[
            "session",
            "abort",
            d.parent.to_str().unwrap(),
            "--reason",
            "test_abort",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.contains("\"killed\":true"), "{out}");
    wait_for("the daemon to stop", || {
        !palaver::services::run::pid_alive(d.pid as u32)
    });
    assert_eq!(status(&d.parent), "aborted");
    let (_, list) = palaver(data.path(), &["session", "list"]);
    assert!(list.contains("aborted"), "{list}");
    let _ = assert_all_parse(&d.parent, false);
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn the_reference_cli_steers_a_palaver_session() {
    let py = common::reference_python();
    let data = tempfile::tempdir().unwrap();
    let d = start(
        data.path(),
        &[
            "rps-v1",
            "--role",
            "host",
            "--control-mode",
            "human",
            "--options",
            r#"{"best_of":1,"termination":"fixed_rounds","max_think_seconds":30}"#,
        ],
    );
    wait_for("the window", || {
        d.child.join("decision/state.json").exists()
    });
    // The reference's own `session decide` and `session snapshot` on palaver's files.
    let o = Command::new(&py)
        .args([
            "-m",
            "aigenora",
            "session",
            "decide",
            "--state-dir",
            d.parent.to_str().unwrap(),
            "--decision",
            r#"{"round":0,"choice":"scissors"}"#,
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let t0 = Instant::now();
    while status(&d.parent) != "closed" {
        if t0.elapsed() > Duration::from_secs(15) {
            let dump = Command::new("bash")
                .args(["/tmp/dbg.sh", d.parent.to_str().unwrap()])
                .output()
                .unwrap();
            panic!(
                "not closed: {}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&dump.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = Command::new(&py)
        .args([
            "-m",
            "aigenora",
            "session",
            "snapshot",
            "--state-dir",
            d.parent.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("phase: game_over"), "{text}");
    let events = files::read_jsonl(&d.parent.join("events.jsonl"));
    let reveal = events
        .iter()
        .find(|e| {
            e.get("data")
                .and_then(|d| d.get("msg"))
                .and_then(|m| m.get("action"))
                .and_then(Value::as_str)
                == Some("reveal")
                && e.get("data")
                    .and_then(|d| d.get("direction"))
                    .and_then(Value::as_str)
                    == Some("sent")
        })
        .unwrap();
    assert_eq!(
        reveal
            .get("data")
            .and_then(|d| d.get("msg"))
            .and_then(|m| m.get("choice"))
            .and_then(Value::as_str),
        Some("scissors")
    );
}
