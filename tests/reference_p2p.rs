//! Sessions over iroh between palaver and the reference client (aigenora
//! 0.1.4 with iroh 0.35, a Python process), introduced by `palaver serve`:
//! palaver hosts and the reference joins, the reference hosts and palaver
//! joins, for rps-v1, guess-number-v1 and human-chat-v1 — and the reference
//! alone, `host --daemon` and `join --daemon`, against palaver's server.
//! Both sides must complete, and the server must hold one closed session
//! whose winner both sides reported.

use crate::common;

use common::{Kill, ok, read_until};

use palaver::json::{self, Value};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

struct World {
    py: String,
    url: String,
    db: PathBuf,
    pal: PathBuf,
    refd: PathBuf,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new() -> World {
        let py = common::reference_python();
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = common::palaver_serve(&db, &["--rate-limit", "0"]);
        let w = World {
            py,
            url,
            db,
            pal: tmp.path().join("palaver"),
            refd: tmp.path().join("reference"),
            tmp,
            _serve: serve,
        };
        ok(
            w.palaver(&w.pal, &["init"]).output().unwrap(),
            "palaver init",
        );
        ok(
            w.palaver(&w.pal, &["register", "--nickname", "pal"])
                .output()
                .unwrap(),
            "palaver register",
        );
        w.reference_identity(&w.refd, "ref");
        w
    }

    fn reference_identity(&self, dir: &Path, nick: &str) {
        common::reference_identity(&self.py, &self.url, dir, nick);
    }

    fn palaver(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(dir)
            .arg("--server")
            .arg(&self.url)
            .args(args);
        c
    }

    fn aigenora(&self, dir: &Path, args: &[&str]) -> Command {
        common::aigenora(&self.py, &self.url, dir, args)
    }

    /// The protocol's directory in the reference's own library.
    fn ref_protocol_dir(&self, dir: &Path, alias: &str) -> String {
        ok(
            self.palaver(dir, &["protocol", "path", alias])
                .output()
                .unwrap(),
            "protocol path",
        )
        .trim()
        .to_owned()
    }

    /// Waits until the server's record of the session is settled: closed,
    /// with a report from each side when it is a game.
    fn settled(&self, post_id: &str, reports: i64) -> (String, Option<String>, i64) {
        common::settled(&self.db, post_id, reports)
    }
}

/// Waits for a process to finish; all it printed.
fn finish(child: Child, out: BufReader<ChildStdout>, seen: String, what: &str) -> String {
    common::finish(Kill(child), out, seen, what, Duration::from_secs(90))
}

fn chat_lines(dir: &Path) -> Vec<String> {
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
    events
        .lines()
        .filter_map(|l| json::parse_str(l).ok())
        .filter_map(|e| {
            e.get("data")?
                .get("msg")?
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// palaver hosts; the reference joins (stdin feeds its chat lines).
fn palaver_hosts(w: &World, alias: &str, options: Option<&str>, ref_stdin: &str) {
    let mut args = vec![
        "host",
        alias,
        "--direct",
        "--control-mode",
        "autonomous",
        "--invitation-ttl-minutes",
        "120",
    ];
    if let Some(o) = options {
        args.extend(["--options", o]);
    }
    let mut host = w
        .palaver(&w.pal, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let mut seen = String::new();
    let post = read_until(&mut out, "post_id:", &mut seen);
    let state = {
        let mut join = w
            .aigenora(
                &w.refd,
                &["join", &post, "--control-mode", "autonomous", "--no-web"],
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = join.stdin.take().unwrap();
        let script = ref_stdin.to_owned();
        let feeder = std::thread::spawn(move || {
            for l in script.lines() {
                std::thread::sleep(Duration::from_millis(1500));
                let _ = writeln!(stdin, "{l}");
            }
        });
        let state = read_until(&mut out, "session state:", &mut seen);
        let o = join.wait_with_output().unwrap();
        feeder.join().unwrap();
        let ref_out = ok(o, &format!("aigenora join {alias}"));
        assert!(ref_out.contains("done"), "{ref_out}");
        state
    };
    let seen = finish(host, out, seen, &format!("palaver host {alias}"));
    let parent = PathBuf::from(state.split_whitespace().next().unwrap());
    check(w, alias, &post, &seen, &parent);
}

/// The reference hosts; palaver joins (its inbox feeds the chat lines).
fn reference_hosts(w: &World, alias: &str, options: Option<&str>, palaver_inbox: &[&str]) {
    let dir = w.ref_protocol_dir(&w.refd, alias);
    let mut args = vec![
        "host",
        "--protocol-dir",
        &dir,
        "--control-mode",
        "autonomous",
        "--no-web",
    ];
    if let Some(o) = options {
        args.extend(["--options", o]);
    }
    // RPS runs slowly enough for heartbeats to cross both ways mid-session.
    let beats = alias == "rps-v1";
    if beats {
        args.extend(["--pace", "0.6", "--heartbeat-interval", "0.2"]);
    }
    let mut host = w
        .aigenora(&w.refd, &args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut hout = BufReader::new(host.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let mut join = w
        .palaver(
            &w.pal,
            &[
                "join",
                &post,
                "--direct",
                "--control-mode",
                "autonomous",
                "--heartbeat-interval",
                "0.2",
                "--heartbeat-timeout",
                "0.45",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut jout = BufReader::new(join.stdout.take().unwrap());
    let mut jseen = String::new();
    let state = read_until(&mut jout, "session state:", &mut jseen);
    let parent = PathBuf::from(state.split_whitespace().next().unwrap());
    if !palaver_inbox.is_empty() {
        let engine = std::fs::read_dir(&parent)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .unwrap();
        for l in palaver_inbox {
            std::thread::sleep(Duration::from_millis(1000));
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(engine.join("inbox.jsonl"))
                .unwrap();
            writeln!(
                f,
                "{}",
                palaver::json::canonical::to_string_ordered(&Value::Object(
                    palaver::obj! { "text" => *l }
                ))
            )
            .unwrap();
        }
    }
    let jseen = finish(join, jout, jseen, &format!("palaver join {alias}"));
    let what = format!("aigenora host {alias}");
    let (status, hseen) =
        common::finish_status(Kill(host), hout, hseen, &what, Duration::from_secs(90));
    common::reference_host_ended(status, &what, &hseen, || w.settled(&post, 0).0 == "closed");
    check(w, alias, &post, &jseen, &parent);
    if beats {
        let events = std::fs::read_to_string(parent.join("events.jsonl")).unwrap();
        assert!(
            !events.contains("peer_unresponsive"),
            "pongs did not come back: {events}"
        );
    }
    if alias == "human-chat-v1" {
        assert!(
            hseen.contains("hello from palaver"),
            "the reference never showed palaver's line:\n{hseen}"
        );
    }
}

fn check(w: &World, alias: &str, post: &str, palaver_out: &str, parent: &Path) {
    if matches!(alias, "crazy-eights-v1" | "briscola-v1") {
        check_cards(w, post, palaver_out, parent);
        return;
    }
    if alias == "human-chat-v1" {
        assert!(
            palaver_out.contains("completed: completed"),
            "{palaver_out}"
        );
        let (status, winner, _) = w.settled(post, 0);
        assert_eq!((status.as_str(), winner), ("closed", None));
        let lines = chat_lines(parent);
        assert!(
            lines.iter().any(|l| l.contains("hello")),
            "no chat line crossed: {lines:?}"
        );
    } else {
        let winner = common::winner_line(palaver_out);
        // Both sides report; the server holds one agreed winner.
        let (status, server_winner, reports) = w.settled(post, 2);
        assert_eq!(status, "closed");
        assert_eq!(reports, 2);
        assert_eq!(
            server_winner.as_deref(),
            Some(winner.as_str()),
            "the two sides disagree about the winner"
        );
    }
}

/// A card game: palaver passed its audit and verified the reference's
/// receipt (the same transcript root, signed by the key the handshake
/// bound); the server holds both sides' agreed winner (the reference reports
/// only a named winner after its own audit passed).
fn check_cards(w: &World, post: &str, palaver_out: &str, parent: &Path) {
    let events = std::fs::read_dir(parent)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("events.jsonl"))
        .find(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|| std::fs::read_to_string(parent.join("events.jsonl")).unwrap());
    let verified: Vec<Value> = events
        .lines()
        .filter_map(|l| palaver::json::parse_str(l).ok())
        .filter(|e| e.get_str("type") == Some("mp_terminal_receipt_verified"))
        .collect();
    assert_eq!(verified.len(), 1, "one receipt check: {events}");
    let data = verified[0].get("data").unwrap();
    assert_eq!(
        data.get("peer_signature_ok"),
        Some(&Value::Bool(true)),
        "{data:?}"
    );
    assert_eq!(data.get_str("transcript_hash").map(str::len), Some(64));
    assert!(
        events.contains("\"audit_passed\""),
        "palaver's audit passed"
    );
    let winner = common::winner_line(palaver_out);
    if winner != "none" {
        let (status, server_winner, reports) = w.settled(post, 2);
        assert_eq!((status.as_str(), reports), ("closed", 2));
        assert_eq!(server_winner.as_deref(), Some(winner.as_str()));
    }
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn crazy_eights_palaver_hosts_reference_joins() {
    let w = World::new();
    palaver_hosts(&w, "crazy-eights-v1", Some(r#"{"hand_size":5}"#), "");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn crazy_eights_reference_hosts_palaver_joins() {
    let w = World::new();
    reference_hosts(&w, "crazy-eights-v1", Some(r#"{"hand_size":5}"#), &[]);
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn briscola_palaver_hosts_reference_joins() {
    let w = World::new();
    palaver_hosts(&w, "briscola-v1", None, "");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn briscola_reference_hosts_palaver_joins() {
    let w = World::new();
    reference_hosts(&w, "briscola-v1", None, &[]);
}

const RPS: Option<&str> = Some(r#"{"best_of":3}"#);

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn rps_palaver_hosts_reference_joins() {
    let w = World::new();
    palaver_hosts(&w, "rps-v1", RPS, "");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn rps_reference_hosts_palaver_joins() {
    let w = World::new();
    reference_hosts(&w, "rps-v1", RPS, &[]);
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn guess_number_palaver_hosts_reference_joins() {
    let w = World::new();
    palaver_hosts(&w, "guess-number-v1", None, "");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn guess_number_reference_hosts_palaver_joins() {
    let w = World::new();
    reference_hosts(&w, "guess-number-v1", None, &[]);
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn chat_palaver_hosts_reference_joins() {
    let w = World::new();
    palaver_hosts(&w, "human-chat-v1", None, "hello from the reference\n/quit");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn chat_reference_hosts_palaver_joins() {
    let w = World::new();
    reference_hosts(&w, "human-chat-v1", None, &["hello from palaver", "/quit"]);
}

/// The reference on both ends, daemons and all, with palaver as its server.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn reference_daemons_meet_on_palaver_serve() {
    let w = World::new();
    let guest = w.tmp.path().join("reference-guest");
    w.reference_identity(&guest, "ref-guest");
    let dir = w.ref_protocol_dir(&w.refd, "rps-v1");
    let out = ok(
        w.aigenora(
            &w.refd,
            &[
                "host",
                "--protocol-dir",
                &dir,
                "--control-mode",
                "autonomous",
                "--no-web",
                "--daemon",
                "--options",
                r#"{"best_of":3}"#,
            ],
        )
        .output()
        .unwrap(),
        "aigenora host --daemon",
    );
    let started = json::parse_str(out.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    let post = started
        .get("post_id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let listed = ok(
        w.aigenora(&guest, &["browse"]).output().unwrap(),
        "aigenora browse",
    );
    assert!(listed.contains(&post), "{listed}");
    ok(
        w.aigenora(
            &guest,
            &[
                "join",
                &post,
                "--control-mode",
                "autonomous",
                "--no-web",
                "--daemon",
            ],
        )
        .output()
        .unwrap(),
        "aigenora join --daemon",
    );
    let (status, winner, reports) = w.settled(&post, 2);
    assert_eq!(status, "closed");
    assert_eq!(reports, 2);
    assert!(
        matches!(winner.as_deref(), Some("host" | "guest" | "draw")),
        "{winner:?}"
    );
}
