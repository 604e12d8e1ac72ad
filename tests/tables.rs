//! The four-seat tables end to end with the real binary: `protocol test`
//! plays a whole match in one process; `palaver host <table> --bots N`
//! over iroh through a real `palaver serve`, alone with its bots and with
//! a palaver member joining; and a reference client seated at a palaver
//! table, its moves sent with `aigenora session action`.

use crate::common;

use common::{Kill, ok, read_until};
use palaver::json::{self, Value};
use std::io::{BufRead, BufReader};
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

    /// `palaver host LANDLORD --direct --control-mode MODE --options
    /// {"deal_seed": SEED} EXTRA…` as `who`, its stdout read as it goes.
    fn host(&self, who: &str, mode: &str, seed: &str, extra: &[&str]) -> Running {
        self.host_table(LANDLORD, who, mode, seed, extra)
    }

    /// As [`World::host`], for any table (short options: one hold'em hand).
    fn host_table(
        &self,
        table: &str,
        who: &str,
        mode: &str,
        seed: &str,
        extra: &[&str],
    ) -> Running {
        let options = table_options(table, seed);
        let mut args = vec![
            "host",
            table,
            "--direct",
            "--control-mode",
            mode,
            "--options",
            &options,
        ];
        args.extend(extra);
        let mut k = Kill(
            self.palaver(who, &args)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let out = BufReader::new(k.0.stdout.take().unwrap());
        Running {
            k,
            out,
            seen: String::new(),
        }
    }

    /// `palaver join POST --direct --control-mode autonomous` as `who`.
    fn join(&self, who: &str, post: &str) -> Kill {
        Kill(
            self.palaver(
                who,
                &["join", post, "--direct", "--control-mode", "autonomous"],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
        )
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

/// A process whose stdout is read as it goes.
struct Running {
    k: Kill,
    out: BufReader<std::process::ChildStdout>,
    seen: String,
}

impl Running {
    fn until(&mut self, prefix: &str) -> String {
        read_until(&mut self.out, prefix, &mut self.seen)
    }

    fn finish(self, what: &str) -> String {
        common::finish(self.k, self.out, self.seen, what, Duration::from_secs(60))
    }
}

/// Waits for a palaver member to exit; its snapshot.
fn member_done(mut m: Kill, what: &str) -> Value {
    let out = BufReader::new(m.0.stdout.take().unwrap());
    let seen = common::finish(m, out, String::new(), what, Duration::from_secs(60));
    snapshot(&seen).1
}

/// The snapshot of a room's state dir named in a `session state: DIR` line.
fn snapshot(printed: &str) -> (PathBuf, Value) {
    let dir = common::played::printed_state_dir(printed);
    let snap =
        json::parse_str(&std::fs::read_to_string(dir.join("snapshot.json")).unwrap()).unwrap();
    (dir, snap)
}

/// Why the room in `dir` ended as it did: the session's end reason and the
/// events that speak of failures, leases or departures (the snapshot alone
/// gets cut in a CI log).
fn why_not(dir: &std::path::Path) -> String {
    let session = std::fs::read_to_string(dir.join("session.json")).unwrap_or_default();
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
    let telling: Vec<&str> = events
        .lines()
        .filter(|l| {
            ["fail", "lease", "disconnect", "reject", "fenced", "timeout"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    let tail = &telling[telling.len().saturating_sub(12)..];
    // The last events whatever they say, and where the view stands: a rejoin
    // that stalls with no failure event shows where it waits.
    let all: Vec<&str> = events.lines().collect();
    let last = &all[all.len().saturating_sub(8)..];
    let snapshot = std::fs::read_to_string(dir.join("snapshot.json")).unwrap_or_default();
    let snapshot: String = snapshot.chars().take(4000).collect();
    format!(
        "session.json: {session}\nevents (failures):\n{}\nlast events:\n{}\nsnapshot.json (start):\n{snapshot}",
        tail.join("\n"),
        last.join("\n")
    )
}

/// The thread stacks of a stalled process `pid`, by gdb when the machine
/// has it (.ci/run installs it): where a process that stopped making
/// progress waits. Best effort; it decides nothing.
fn stacks(pid: u32) -> String {
    let out = Command::new("timeout")
        .args([
            "60",
            "gdb",
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt 30",
        ])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with('#') || l.starts_with("Thread"))
                .collect();
            let joined = lines.join("\n");
            format!(
                "thread stacks (gdb):\n{}",
                joined.chars().take(30_000).collect::<String>()
            )
        }
        Err(e) => format!("thread stacks: gdb did not run: {e}"),
    }
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
    for table in palaver::protocols::tables::TABLES {
        // One host per table: the community keeps at most three active
        // invitations per key.
        let host = format!("h-{table}");
        w.identity(&host);
        let out = w
            .palaver(
                &host,
                &[
                    "host",
                    table,
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
        let printed = ok(out, &format!("host {table} --bots 3"));
        assert!(
            printed.contains("3 bot(s) take the empty seats"),
            "{printed}"
        );
        let (dir, snap) = snapshot(&printed);
        assert_eq!(
            snap.get("completed"),
            Some(&Value::Bool(true)),
            "{table} did not complete: {}",
            why_not(&dir)
        );
        let outcome = snap.get_str("outcome").unwrap_or_default().to_owned();
        assert!(
            printed.contains(&format!("closed: {outcome}")),
            "{table}: {printed}"
        );
        // Every bot replicated the same match to the same end.
        for n in 1..=3 {
            let bot = dir.join("bots").join(format!("bot-{n}"));
            let s = json::parse_str(&std::fs::read_to_string(bot.join("snapshot.json")).unwrap())
                .unwrap();
            assert_eq!(
                s.get_str("outcome"),
                Some(outcome.as_str()),
                "{table}: bot {n}"
            );
            assert_eq!(scores(&s), scores(&snap), "{table}: bot {n}");
        }
        let session =
            json::parse_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap();
        assert_eq!(session.get_str("status"), Some("closed"), "{table}");
    }
}

#[test]
fn a_palaver_member_sits_down_with_two_bots_and_both_ends_agree() {
    let w = World::new();
    w.identity("h");
    w.identity("g");
    let mut host = w.host("h", "autonomous", "b2", &["--bots", "2"]);
    let post = host.until("post_id:");
    let joined = w
        .palaver(
            "g",
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        )
        .output()
        .unwrap();
    let gseen = ok(joined, "join");
    let (_, hs) = snapshot(&host.finish("host"));
    let (_, gs) = snapshot(&gseen);
    assert_eq!(hs.get("completed"), Some(&Value::Bool(true)), "{hs:?}");
    assert_eq!(gs.get("completed"), Some(&Value::Bool(true)), "{gs:?}");
    assert_eq!(hs.get_str("outcome"), gs.get_str("outcome"));
    assert_eq!(scores(&hs), scores(&gs));
}

/// A table's options for these tests: the seed, and one hand of hold'em,
/// of tractor (whose full match is sixteen) or of mahjong.
fn table_options(table: &str, seed: &str) -> String {
    // The failover tests kill the leader mid-round: a single hold'em hand
    // may be folded out before that.
    if table == "texas-holdem-v1" && seed == "failover" {
        return format!(r#"{{"deal_seed":"{seed}","max_hands":3}}"#);
    }
    if matches!(
        table,
        "texas-holdem-v1" | "upgrade-tractor-v1" | "classical-mahjong-v1"
    ) {
        format!(r#"{{"deal_seed":"{seed}","max_hands":1}}"#)
    } else {
        format!(r#"{{"deal_seed":"{seed}"}}"#)
    }
}

/// Sends the reference member's moves: whenever its own view (its
/// snapshot's `group_view`) says it is its turn, palaver's bot picks the
/// move from that view and `aigenora session action` sends it. The file
/// is the reference's merge of every view it verified, not the last one:
/// right until the view loses a key (a tractor hand redealt).
/// `leader`: the leading palaver side's state dir, printed too when the
/// table does not finish (where the table stopped when the reference seat
/// was not the one to act).
fn drive_reference_member(
    py: &str,
    data: &Path,
    table: &str,
    within: Duration,
    leader: Option<&Path>,
) -> Value {
    let t = palaver::protocols::tables::table_for_alias(table, &palaver::json::Map::new()).unwrap();
    let start = Instant::now();
    // What was sent for which frame, and when: a view read while the
    // client was still writing it can give a move the leader refuses, so
    // a different move for the same frame, or the same one after 5 s, is
    // sent again.
    let mut acted_on: Option<(Option<Value>, Value, Instant)> = None;
    let mut seen: Option<PathBuf> = None;
    loop {
        if start.elapsed() >= within {
            // Its session's failures and last events say where it stopped
            // (a leader it refused, a reconnect that kept failing).
            panic!(
                "{table}: the reference member's table did not finish in {within:?}\n{}\nthe leader:\n{}",
                seen.as_deref().map(why_not).unwrap_or_default(),
                leader.map(why_not).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
        let Some(dir) = std::fs::read_dir(data.join("sessions")).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.join("snapshot.json").exists())
        }) else {
            continue;
        };
        seen = Some(dir.clone());
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
        if let Some((s, a, at)) = &acted_on
            && *s == seq
            && *a == action
            && at.elapsed() < Duration::from_secs(5)
        {
            continue;
        }
        acted_on = Some((seq, action.clone(), Instant::now()));
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
    for table in palaver::protocols::tables::TABLES {
        let w = World::new();
        w.identity("h");
        let rdir = w.tmp.path().join("ref");
        common::reference_identity(&py, &w.url, &rdir, "ref");
        let mut host = w.host_table(table, "h", "autonomous", "ref", &["--bots", "2"]);
        let state = host.until("session state:");
        let hdir = PathBuf::from(state.split_whitespace().next().unwrap());
        let post = host.until("post_id:");
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
        let rsnap =
            drive_reference_member(&py, &rdir, table, Duration::from_secs(180), Some(&hdir));
        let (_, hs) = snapshot(&host.finish("host"));
        drop(member);
        assert_eq!(
            hs.get("completed"),
            Some(&Value::Bool(true)),
            "{table}: {hs:?}"
        );
        assert_eq!(
            rsnap.get_str("outcome"),
            hs.get_str("outcome"),
            "{table}: {rsnap:?}"
        );
        assert_eq!(scores(&rsnap), scores(&hs), "{table}");
    }
}

/// The reference leads a table; three palaver members take the other
/// seats and play with the table's bot; the reference's own moves are sent
/// with `aigenora session action`. Every palaver member verifies every
/// frame, and all agree on the outcome and the scores.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn palaver_members_play_at_a_reference_table() {
    let py = common::reference_python();
    for table in palaver::protocols::tables::TABLES {
        palaver_members_at_a_reference_table(&py, table);
    }
}

fn palaver_members_at_a_reference_table(py: &str, table: &str) {
    let py = py.to_owned();
    let w = World::new();
    let rdir = w.tmp.path().join("ref");
    common::reference_identity(&py, &w.url, &rdir, "ref");
    let proto = ok(
        w.palaver("ref", &["protocol", "path", table])
            .output()
            .unwrap(),
        "protocol path",
    )
    .trim()
    .to_owned();
    let mut host = Kill(
        common::aigenora(
            &py,
            &w.url,
            &rdir,
            &[
                "host",
                "--protocol-dir",
                &proto,
                "--control-mode",
                "human",
                "--no-web",
                "--options",
                &table_options(table, "refhost"),
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let mut hout = BufReader::new(host.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let members: Vec<Kill> = ["m1", "m2", "m3"]
        .iter()
        .map(|who| {
            w.identity(who);
            w.join(who, &post)
        })
        .collect();
    let rsnap = drive_reference_member(&py, &rdir, table, Duration::from_secs(180), None);
    let mut outcomes = Vec::new();
    for (n, m) in members.into_iter().enumerate() {
        let s = member_done(m, &format!("palaver member {n}"));
        assert_eq!(
            s.get("completed"),
            Some(&Value::Bool(true)),
            "member {n}: {s:?}"
        );
        outcomes.push((s.get_str("outcome").map(str::to_owned), scores(&s)));
    }
    drop(host);
    for o in &outcomes {
        assert_eq!(
            o,
            &(rsnap.get_str("outcome").map(str::to_owned), scores(&rsnap))
        );
    }
}

/// At every table, the leader dies mid-round (SIGKILL): a member claims the table, the
/// round restarts by the rules (a new deal, the scores kept), the player who
/// died comes back as a member and gets its seat back, and the match plays
/// to its end with every side agreeing.
#[test]
fn a_table_survives_its_leader_killed_mid_round() {
    for table in palaver::protocols::tables::TABLES {
        survive_a_killed_leader(table, None);
    }
}

/// As above, with a reference client in the fourth seat: it follows the
/// palaver member that takes the table over.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn a_table_with_a_reference_member_survives_its_leader_killed_mid_round() {
    let py = common::reference_python();
    // Not upgrade-tractor-v1: the reference's defect, not palaver's
    // (docs/tables.md). aigenora 0.1.4 writes each verified view into
    // snapshot.json with `SnapshotBus.update`, a deep merge, so a key the
    // view lost stays in the file. The first frame of the restarted hand
    // the reference takes (seq 10 in the runs seen: a full view, verified
    // against its hash) lists three declarations; its file keeps a fourth,
    // its own pass from the killed hand, and its moves are picked from
    // that file, so it never declares and the new leader waits for it.
    // The same file stalls it at the second hand of any tractor match, no
    // failover needed. palaver members play from the verified view and
    // write it whole (the test above).
    for table in palaver::protocols::tables::TABLES
        .into_iter()
        .filter(|t| *t != "upgrade-tractor-v1")
    {
        survive_a_killed_leader(table, Some(py.clone()));
    }
}

/// The frame after which the leader is killed: the round is under way.
const KILL_AT: i64 = 6;

fn survive_a_killed_leader(table: &str, reference: Option<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let (serve, url) = common::palaver_serve(
        &tmp.path().join("db.sqlite"),
        &["--rate-limit", "0", "--group-lease", "3"],
    );
    let w = World {
        url,
        tmp,
        _serve: serve,
    };
    let palaver_members: &[&str] = if reference.is_some() {
        &["m1", "m2"]
    } else {
        &["m1", "m2", "m3"]
    };
    w.identity("h");
    for who in palaver_members {
        w.identity(who);
    }
    // The host decides by hand, so the table waits on its seat.
    let mut host = w.host_table(table, "h", "human", "failover", &[]);
    let state = host.until("session state:");
    let hdir = PathBuf::from(state.split_whitespace().next().unwrap());
    let post = host.until("post_id:");
    let members: Vec<Kill> = palaver_members
        .iter()
        .map(|who| w.join(who, &post))
        .collect();
    // The reference's seat: its moves picked by palaver's bot on its own
    // view and sent with `aigenora session action`, until its table ends.
    let reference_seat = reference.map(|py| {
        let rdir = w.tmp.path().join("ref");
        common::reference_identity(&py, &w.url, &rdir, "ref");
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
        let table = table.to_owned();
        let driver = std::thread::spawn(move || {
            drive_reference_member(&py, &rdir, &table, Duration::from_secs(180), None)
        });
        (member, driver)
    });
    // The host plays its seat by hand (palaver's bot picks each move from
    // its view, `session action` sends it) until a few frames are in and
    // the round is under way.
    let view = |dir: &Path| -> Option<Value> {
        let text = std::fs::read_to_string(dir.join("snapshot.json")).ok()?;
        json::parse_str(&text).ok()
    };
    let rules = palaver::protocols::tables::table_for_alias(table, &palaver::json::Map::new())
        .expect("a table with rules");
    let start = Instant::now();
    let mut acted_at = None;
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "{table}: the table never got going"
        );
        std::thread::sleep(Duration::from_millis(50));
        let Some(snap) = view(&hdir) else { continue };
        let seq = snap
            .get("group")
            .and_then(|g| g.get("seq"))
            .and_then(Value::as_i64);
        let Some(v) = snap.get("group_view") else {
            continue;
        };
        assert_ne!(
            snap.get("completed"),
            Some(&Value::Bool(true)),
            "{table}: the round ended before the leader could be killed"
        );
        if seq >= Some(KILL_AT) {
            break;
        }
        let Some(action) = rules.bot_action(v) else {
            continue;
        };
        if acted_at == Some(seq) {
            continue;
        }
        acted_at = Some(seq);
        ok(
            w.palaver(
                "h",
                &[
                    "session",
                    "action",
                    hdir.to_str().unwrap(),
                    &json::canonical::to_string_ordered(&action),
                ],
            )
            .output()
            .unwrap(),
            "session action",
        );
    }
    let before = view(&hdir).and_then(|s| s.get("group_view").cloned());
    // SIGKILL: no goodbye, no status, the lease simply runs out.
    host.k.0.kill().unwrap();
    let _ = host.k.0.wait();
    // The player comes back as a member and plays its seat with the bot.
    std::thread::sleep(Duration::from_secs(1));
    let err = w.tmp.path().join(format!("rejoin-{table}.err"));
    let mut back = Kill(
        w.palaver(
            "h",
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        )
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap(),
    );
    // Read as it goes, so a rejoin that does not finish says how far it got.
    let out = BufReader::new(back.0.stdout.take().unwrap());
    let (tx, printed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut back_out = String::new();
    let started = Instant::now();
    let status = loop {
        while let Ok(line) = printed.try_recv() {
            back_out.push_str(&line);
            back_out.push('\n');
        }
        if let Some(status) = back.0.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let dir = back_out
                .lines()
                .find_map(|l| l.strip_prefix("session state: "))
                .and_then(|l| l.split_whitespace().next())
                .map(PathBuf::from);
            // The other seats too: the last stall had the rejoined side
            // idle and healthy, waiting on a frame that never came.
            let others: String = palaver_members
                .iter()
                .map(|who| {
                    let sessions = w.tmp.path().join(who).join("sessions");
                    let newest = std::fs::read_dir(&sessions)
                        .into_iter()
                        .flatten()
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.is_dir())
                        .max();
                    let told = newest.as_deref().map(why_not).unwrap_or_default();
                    format!("\n--- {who}:\n{told}")
                })
                .collect();
            panic!(
                "{table}: the old leader joining again did not finish in 300 s\nprinted:\n{back_out}\nstderr:\n{}\n{}\n{}\nthe other palaver seats:{others}",
                std::fs::read_to_string(&err).unwrap_or_default(),
                dir.map(|d| why_not(&d)).unwrap_or_default(),
                stacks(back.0.id())
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The reader ends with the pipe; take what it still holds.
    let drained = Instant::now() + Duration::from_secs(5);
    while let Ok(line) = printed.recv_timeout(drained.saturating_duration_since(Instant::now())) {
        back_out.push_str(&line);
        back_out.push('\n');
    }
    assert!(
        status.success(),
        "{table}: the old leader joining again exited with {status}:\n{back_out}\n{}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    let back = back_out;
    let (_, bs) = snapshot(&back);
    assert_eq!(bs.get("completed"), Some(&Value::Bool(true)), "{bs:?}");
    let view = bs.get("group_view").unwrap();
    assert!(
        view.get("restart_count").and_then(Value::as_i64) >= Some(1),
        "{table}: the round did not restart: {view:?} (before: {before:?})"
    );
    assert!(
        view.get_str("recovery_notice")
            .is_some_and(|n| !n.is_empty())
    );
    for (n, m) in members.into_iter().enumerate() {
        let s = member_done(m, &format!("member {n}"));
        assert_eq!(
            s.get("completed"),
            Some(&Value::Bool(true)),
            "member {n}: {s:?}"
        );
        assert_eq!(s.get_str("outcome"), bs.get_str("outcome"), "member {n}");
        assert_eq!(scores(&s), scores(&bs), "member {n}");
    }
    if let Some((member, driver)) = reference_seat {
        let rs = driver.join().expect("the reference seat's driver");
        drop(member);
        assert_eq!(
            rs.get_str("outcome"),
            bs.get_str("outcome"),
            "the reference member"
        );
        assert_eq!(scores(&rs), scores(&bs), "the reference member");
    }
}

/// A person at a table in human mode: each of its turns opens a decision
/// window on the seat's decision bus (`decision/state.json`), and `palaver
/// session decide DIR ACTION` answers it, as in a two-party game.
#[test]
fn a_person_decides_each_turn_on_the_decision_bus() {
    let w = World::new();
    w.identity("h");
    let mut host = w.host("h", "human", "decide", &["--bots", "3"]);
    let state = host.until("session state:");
    let dir = PathBuf::from(state.split_whitespace().next().unwrap());
    let t =
        palaver::protocols::tables::table_for_alias(LANDLORD, &palaver::json::Map::new()).unwrap();
    let read =
        |f: &Path| -> Option<Value> { json::parse_str(&std::fs::read_to_string(f).ok()?).ok() };
    let start = Instant::now();
    let mut answered = Vec::new();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the table did not finish"
        );
        let Some(snap) = read(&dir.join("snapshot.json")) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if snap.get("completed") == Some(&Value::Bool(true)) {
            break;
        }
        let window = read(&dir.join("decision").join("state.json"))
            .and_then(|s| s.get("match_value").and_then(Value::as_i64));
        let (Some(seq), Some(view)) = (window, snap.get("group_view")) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let frame = snap
            .get("group")
            .and_then(|g| g.get("seq"))
            .and_then(Value::as_i64);
        if answered.contains(&seq) || frame != Some(seq) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let Some(action) = t.bot_action(view) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        ok(
            w.palaver(
                "h",
                &[
                    "session",
                    "decide",
                    dir.to_str().unwrap(),
                    "--decision",
                    &json::canonical::to_string_ordered(&action),
                ],
            )
            .output()
            .unwrap(),
            "session decide",
        );
        answered.push(seq);
    }
    let printed = host.finish("host");
    let (_, snap) = snapshot(&printed);
    assert_eq!(snap.get("completed"), Some(&Value::Bool(true)));
    assert!(!answered.is_empty(), "no window was answered");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let count = |kind: &str| {
        events
            .lines()
            .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
            .count()
    };
    assert!(
        count("local_decision_window_started") >= answered.len(),
        "{events}"
    );
    assert!(
        count("group_autoplay") >= answered.len(),
        "every decision was sent"
    );
}
