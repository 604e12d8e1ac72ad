//! The four-seat tables end to end with the real binary: `protocol test`
//! plays a whole match in one process; `palaver host <table> --bots N`
//! over iroh through a real `palaver serve`, alone with its bots and with
//! a palaver member joining; and a reference client seated at a palaver
//! table, its moves sent with `aigenora session action`.

mod common;

use common::{Kill, ok, read_until};
use palaver::json::{self, Value};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const LANDLORD: &str = "four-player-landlord-v1";

struct World {
    url: String,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let (serve, url) =
            common::palaver_serve(&tmp.path().join("db.sqlite"), &["--rate-limit", "0"]);
        World {
            url,
            tmp,
            _serve: serve,
        }
    }

    fn palaver(&self, who: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(self.tmp.path().join(who))
            .arg("--server")
            .arg(&self.url)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    fn identity(&self, who: &str) {
        ok(self.palaver(who, &["init"]).output().unwrap(), "init");
        ok(
            self.palaver(who, &["register", "--nickname", who])
                .output()
                .unwrap(),
            "register",
        );
    }
}

/// The snapshot of a room's state dir named in a `session state: DIR` line.
fn snapshot(printed: &str) -> (PathBuf, Value) {
    let dir = printed
        .lines()
        .find_map(|l| l.strip_prefix("session state: "))
        .and_then(|l| l.split_whitespace().next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no state dir in:\n{printed}"));
    let snap =
        json::parse_str(&std::fs::read_to_string(dir.join("snapshot.json")).unwrap()).unwrap();
    (dir, snap)
}

fn scores(snap: &Value) -> String {
    json::canonical::to_string(
        snap.get("group_view")
            .and_then(|v| v.get("scores"))
            .unwrap_or(&Value::Null),
    )
}

#[test]
fn protocol_test_plays_a_whole_table_with_a_leader_change() {
    let out = Command::new(BIN)
        .args([
            "--json",
            "protocol",
            "test",
            LANDLORD,
            "--options",
            r#"{"deal_seed":"t"}"#,
        ])
        .env("PALAVER_DATA_DIR", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let r = json::parse_str(&ok(out, "protocol test")).unwrap();
    assert_eq!(r.get("completed"), Some(&Value::Bool(true)), "{r:?}");
    assert_eq!(r.get("views_agree"), Some(&Value::Bool(true)));
    assert_eq!(r.get("leader_epoch").and_then(Value::as_i64), Some(1));
    assert!(
        matches!(r.get_str("outcome"), Some("landlord" | "farmers")),
        "{r:?}"
    );
    let steps = r.get("steps").and_then(Value::as_array).unwrap();
    assert!(steps.iter().any(|s| {
        s.get("events")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().any(|e| e.get_str("kind") == Some("game_over")))
    }));
}

#[test]
fn a_host_with_three_bots_plays_a_whole_table_over_iroh() {
    let w = World::new();
    w.identity("h");
    let out = w
        .palaver(
            "h",
            &[
                "host",
                LANDLORD,
                "--direct",
                "--control-mode",
                "autonomous",
                "--bots",
                "3",
                "--options",
                r#"{"deal_seed":"b3"}"#,
            ],
        )
        .output()
        .unwrap();
    let printed = ok(out, "host --bots 3");
    assert!(
        printed.contains("3 bot(s) take the empty seats"),
        "{printed}"
    );
    let (dir, snap) = snapshot(&printed);
    assert_eq!(snap.get("completed"), Some(&Value::Bool(true)), "{snap:?}");
    let outcome = snap.get_str("outcome").unwrap_or_default().to_owned();
    assert!(printed.contains(&format!("closed: {outcome}")), "{printed}");
    // Every bot replicated the same match to the same end.
    for n in 1..=3 {
        let bot = dir.join("bots").join(format!("bot-{n}"));
        let s =
            json::parse_str(&std::fs::read_to_string(bot.join("snapshot.json")).unwrap()).unwrap();
        assert_eq!(s.get_str("outcome"), Some(outcome.as_str()), "bot {n}");
        assert_eq!(scores(&s), scores(&snap), "bot {n}");
    }
    let session =
        json::parse_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap();
    assert_eq!(session.get_str("status"), Some("closed"));
}

#[test]
fn a_palaver_member_sits_down_with_two_bots_and_both_ends_agree() {
    let w = World::new();
    w.identity("h");
    w.identity("g");
    let mut host = Kill(
        w.palaver(
            "h",
            &[
                "host",
                LANDLORD,
                "--direct",
                "--control-mode",
                "autonomous",
                "--bots",
                "2",
                "--options",
                r#"{"deal_seed":"b2"}"#,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap(),
    );
    let mut hout = BufReader::new(host.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let joined = w
        .palaver(
            "g",
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        )
        .output()
        .unwrap();
    let gseen = ok(joined, "join");
    let hseen = common::finish(host, hout, hseen, "host", Duration::from_secs(60));
    let (_, hs) = snapshot(&hseen);
    let (_, gs) = snapshot(&gseen);
    assert_eq!(hs.get("completed"), Some(&Value::Bool(true)), "{hs:?}");
    assert_eq!(gs.get("completed"), Some(&Value::Bool(true)), "{gs:?}");
    assert_eq!(hs.get_str("outcome"), gs.get_str("outcome"));
    assert_eq!(scores(&hs), scores(&gs));
}

/// Sends the reference member's moves: whenever its own verified view (its
/// snapshot's `group_view`) says it is its turn, palaver's bot picks the
/// move from that view and `aigenora session action` sends it.
fn drive_reference_member(py: &str, data: &Path, within: Duration) -> Value {
    let t =
        palaver::protocols::tables::table_for_alias(LANDLORD, &palaver::json::Map::new()).unwrap();
    let start = Instant::now();
    let mut acted_on = None;
    loop {
        assert!(
            start.elapsed() < within,
            "the reference member's table did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
        let Some(dir) = std::fs::read_dir(data.join("sessions")).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.join("snapshot.json").exists())
        }) else {
            continue;
        };
        let Ok(snap) =
            std::fs::read_to_string(dir.join("snapshot.json")).map(|t| json::parse_str(&t))
        else {
            continue;
        };
        let Ok(snap) = snap else { continue };
        if snap.get("completed") == Some(&Value::Bool(true)) {
            return snap;
        }
        let Some(view) = snap.get("group_view") else {
            continue;
        };
        let seq = snap.get("group").and_then(|g| g.get("seq")).cloned();
        let Some(action) = t.bot_action(view) else {
            continue;
        };
        if acted_on == Some(seq.clone()) {
            continue;
        }
        acted_on = Some(seq);
        let text = json::canonical::to_string_ordered(&action);
        ok(
            Command::new(py)
                .args(["-m", "aigenora", "session", "action", "--state-dir"])
                .arg(&dir)
                .args(["--action", &text])
                .output()
                .unwrap(),
            "aigenora session action",
        );
    }
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_reference_member_plays_at_a_palaver_table() {
    let py = common::reference_python();
    let w = World::new();
    w.identity("h");
    let rdir = w.tmp.path().join("ref");
    common::reference_identity(&py, &w.url, &rdir, "ref");
    let mut host = Kill(
        w.palaver(
            "h",
            &[
                "host",
                LANDLORD,
                "--direct",
                "--control-mode",
                "autonomous",
                "--bots",
                "2",
                "--options",
                r#"{"deal_seed":"ref"}"#,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap(),
    );
    let mut hout = BufReader::new(host.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let member = Kill(
        common::aigenora(
            &py,
            &w.url,
            &rdir,
            &["join", &post, "--control-mode", "human", "--no-web"],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let rsnap = drive_reference_member(&py, &rdir, Duration::from_secs(120));
    let hseen = common::finish(host, hout, hseen, "host", Duration::from_secs(60));
    drop(member);
    let (_, hs) = snapshot(&hseen);
    assert_eq!(hs.get("completed"), Some(&Value::Bool(true)), "{hs:?}");
    assert_eq!(rsnap.get_str("outcome"), hs.get_str("outcome"), "{rsnap:?}");
    assert_eq!(scores(&rsnap), scores(&hs));
}
