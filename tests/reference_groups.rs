//! Group rooms of the reference client (aigenora 0.1.4) on `palaver serve`:
//! the server side of `authoritative_group` (`/api/v1/groups`, rules in
//! docs/groups.md). A reference host opens community-room-v1 and two
//! reference members join through palaver's server; a message sent by one
//! member reaches everyone; the host closes the room and the server holds
//! it closed. Then the leader is killed (SIGKILL): once its lease lapses a
//! member claims the room through the server, and the room goes on at the
//! next epoch with its history.

mod common;

use common::{Kill, read_until};
use palaver::json::{self, Value};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Room {
    py: String,
    url: String,
    db: PathBuf,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl Room {
    fn new() -> Room {
        let py = common::reference_python();
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = common::palaver_serve(&db, &["--rate-limit", "0"]);
        let r = Room {
            py,
            url,
            db,
            tmp,
            _serve: serve,
        };
        for who in ["host", "amy", "bob"] {
            common::reference_identity(&r.py, &r.url, &r.dir(who), who);
        }
        r
    }

    fn dir(&self, who: &str) -> PathBuf {
        self.tmp.path().join(who)
    }

    fn aigenora(&self, who: &str, args: &[&str]) -> Command {
        common::aigenora(&self.py, &self.url, &self.dir(who), args)
    }

    /// The protocol dir of community-room-v1 in `who`'s library.
    fn room_dir(&self, who: &str) -> String {
        let o = Command::new(&self.py)
            .args([
                "-m",
                "aigenora",
                "protocol",
                "path",
                "community-room-v1",
                "--data-dir",
            ])
            .arg(self.dir(who))
            .output()
            .unwrap();
        common::ok(o, "aigenora protocol path").trim().to_owned()
    }

    /// The one session state dir `who` has (`<data>/sessions/*group*`).
    fn state_dir(&self, who: &str) -> PathBuf {
        let start = Instant::now();
        loop {
            let found = std::fs::read_dir(self.dir(who).join("sessions"))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| {
                    p.is_dir()
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().contains("group"))
                });
            if let Some(p) = found {
                return p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{who} has no group state dir"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `aigenora session action` in a member's state dir (what the
    /// reference's own users run to speak in a room).
    fn act(&self, state: &Path, action: &str) {
        common::ok(
            Command::new(&self.py)
                .args(["-m", "aigenora", "session", "action", "--state-dir"])
                .arg(state)
                .args(["--action", action])
                .output()
                .unwrap(),
            "aigenora session action",
        );
    }

    /// The group row the server holds: (status, leader_epoch, leader key).
    fn server_group(&self) -> (String, i64, String) {
        let c = rusqlite::Connection::open(&self.db).unwrap();
        let body: String = c
            .query_row("SELECT body FROM groups", [], |r| r.get(0))
            .unwrap();
        let g = json::parse_str(&body).unwrap();
        (
            g.get_str("status").unwrap().to_owned(),
            g.get("leader_epoch").and_then(Value::as_i64).unwrap(),
            g.get_str("leader_public_key").unwrap().to_owned(),
        )
    }
}

/// The texts of the room's messages in a state dir's snapshot.
fn messages(state: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(state.join("snapshot.json")).unwrap_or_default();
    let Ok(v) = json::parse_str(&text) else {
        return Vec::new();
    };
    v.get("group_view")
        .and_then(|g| g.get("messages"))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|m| m.get_str("text").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn wait_for_message(state: &Path, text: &str, within: Duration) {
    let start = Instant::now();
    while !messages(state).iter().any(|m| m == text) {
        assert!(
            start.elapsed() < within,
            "{text:?} never reached {}: {:?}",
            state.display(),
            messages(state)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The host (foreground) and two members (foreground); returns them with
/// their state dirs once the room runs.
fn open_room(r: &Room) -> (Kill, Vec<(Kill, PathBuf)>, PathBuf) {
    let dir = r.room_dir("host");
    let mut host = r
        .aigenora(
            "host",
            &[
                "host",
                "--protocol-dir",
                &dir,
                "--control-mode",
                "autonomous",
                "--no-web",
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let mut seen = String::new();
    let post = read_until(&mut out, "post_id:", &mut seen);
    // Keep reading the host's output so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let host = Kill(host);
    let members: Vec<(Kill, PathBuf)> = ["amy", "bob"]
        .into_iter()
        .map(|who| {
            let child = r
                .aigenora(
                    who,
                    &["join", &post, "--control-mode", "autonomous", "--no-web"],
                )
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (Kill(child), r.state_dir(who))
        })
        .collect();
    let host_state = r.state_dir("host");
    (host, members, host_state)
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn reference_rooms_run_on_palaver_serve_and_close() {
    let r = Room::new();
    let (mut host, mut members, host_state) = open_room(&r);
    let amy_state = members[0].1.clone();
    let bob_state = members[1].1.clone();
    r.act(&amy_state, r#"{"kind":"send","text":"hello from amy"}"#);
    for s in [&host_state, &amy_state, &bob_state] {
        wait_for_message(s, "hello from amy", Duration::from_secs(60));
    }
    let (status, epoch, _) = r.server_group();
    assert_eq!((status.as_str(), epoch), ("active", 0));
    r.act(&host_state, r#"{"kind":"close_room"}"#);
    let start = Instant::now();
    loop {
        let done = host.0.try_wait().unwrap().is_some()
            && members
                .iter_mut()
                .all(|(k, _)| k.0.try_wait().unwrap().is_some());
        if done {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the room did not end"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(host.0.wait().unwrap().success(), "the host failed");
    assert_eq!(r.server_group().0, "closed");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_member_takes_over_a_reference_room_whose_leader_was_killed() {
    let r = Room::new();
    let (mut host, members, host_state) = open_room(&r);
    let amy_state = members[0].1.clone();
    let bob_state = members[1].1.clone();
    r.act(&bob_state, r#"{"kind":"send","text":"before"}"#);
    for s in [&host_state, &amy_state, &bob_state] {
        wait_for_message(s, "before", Duration::from_secs(60));
    }
    let (_, _, first_leader) = r.server_group();
    host.0.kill().unwrap();
    let _ = host.0.wait();
    // Lease 15 s, then a claim.
    let start = Instant::now();
    let (status, epoch, leader) = loop {
        let g = r.server_group();
        if g.1 >= 1 {
            break g;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "nobody took over: {g:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!((status.as_str(), epoch), ("active", 1));
    assert_ne!(leader, first_leader);
    r.act(&amy_state, r#"{"kind":"send","text":"after"}"#);
    for s in [&amy_state, &bob_state] {
        wait_for_message(s, "after", Duration::from_secs(60));
        assert!(
            messages(s).iter().any(|m| m == "before"),
            "history lost in {}",
            s.display()
        );
    }
    drop(members);
}
