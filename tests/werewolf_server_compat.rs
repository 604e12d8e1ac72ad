//! `palaver wolf join` as the official server aiwolf-nlp-server v0.4.12
//! (and older v0.4.x) sees it (issue #17). A fake server in the test
//! replays the recorded v0.4.12 packet stream of one agent into the real
//! binary, changed the way a case needs:
//!
//! - talk length limits from the setting (`per_talk`, word counting, a
//!   daily `per_agent` budget announced in `remain_length`, counting
//!   spaces): every talk the bot sends is one the server keeps uncut;
//! - the settings of servers v0.4.0–v0.4.4 (no `allow_self_vote`), `null`
//!   vote lists and a minimal setting: played to the end, as the official
//!   library (aiwolf-nlp-common 0.7.0) plays them, with its defaults;
//! - `--json`: one parsed line per game, and one for the error;
//! - a close before the game, a refused token: one line that says so;
//! - after FINISH the client closes the connection itself.
//!
//! And in-process, over 200 seeded games: the bot votes as it said it
//! would that day.

use futures_util::{SinkExt, StreamExt};
use palaver::werewolf::agent::decode_packet;
use palaver::werewolf::bot::announced_vote;
use palaver::werewolf::config::{Config, LengthConfig};
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::length;
use palaver::werewolf::packet::{Packet, Request, Role, Status, Team};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

const PALAVER: &str = env!("CARGO_BIN_EXE_palaver");
const RECORDED: &str = "v0.4.12_5p_profiles_packets.jsonl";

/// The packets agent `agent` received in a recorded game, in order.
fn recorded(file: &str, agent: u64) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aiwolf")
        .join(file);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["agent_no"] == agent && v["dir"] == "recv")
        .map(|v| v["data"].clone())
        .collect()
}

fn request(p: &Value) -> Request {
    serde_json::from_value(p["request"].clone()).unwrap()
}

/// Whitespace-free text: a recorded talk against the sent one (the server
/// re-spaces around a mention).
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

type Pre = Box<dyn FnMut(&mut Value) + Send>;
type Post = Box<dyn FnMut(&Value, &str) + Send>;

/// What the fake server saw.
#[derive(Debug, Default)]
struct Seen {
    /// Every reply-needing packet (as sent) and its answer.
    answers: Vec<(Value, String)>,
    /// After the last packet: how long until the client closed (None: it
    /// did not within 5 s). Only when the server holds the connection open.
    client_closed: Option<Duration>,
}

/// The result of one `palaver wolf join` run.
struct Run {
    code: Option<i32>,
    out: String,
    err: String,
    seen: Seen,
}

/// Runs `palaver wolf join --name cap1 EXTRA…` against a server that sends
/// `packets` (each changed by `pre` first), reads an answer to every
/// reply-needing one (then calls `post`), and at the end closes (or, with
/// `hold_open`, waits for the client to close).
async fn replay(
    packets: Vec<Value>,
    extra: &[&str],
    hold_open: bool,
    mut pre: Pre,
    mut post: Post,
) -> Run {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let mut seen = Seen::default();
        for mut p in packets {
            pre(&mut p);
            let r = request(&p);
            if ws.send(Message::text(p.to_string())).await.is_err() {
                return seen;
            }
            if !r.needs_reply() {
                continue;
            }
            let a = match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => t.to_string(),
                other => panic!("no answer to {}: {other:?}", r.as_str()),
            };
            if r == Request::Name {
                assert_eq!(a, "cap1");
                continue;
            }
            post(&p, &a);
            seen.answers.push((p, a));
        }
        if hold_open {
            let t0 = Instant::now();
            loop {
                match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
                    Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => {
                        seen.client_closed = Some(t0.elapsed());
                        break;
                    }
                    Ok(Some(Ok(m))) => assert!(!m.is_text(), "unasked frame {m:?}"),
                    Err(_) => break,
                }
            }
        } else {
            let _ = ws.close(None).await;
            while let Ok(Some(Ok(_))) =
                tokio::time::timeout(Duration::from_secs(5), ws.next()).await
            {}
        }
        seen
    });
    let (code, out, err) = run_join(&url, extra).await;
    let seen = server.await.unwrap();
    Run {
        code,
        out,
        err,
        seen,
    }
}

async fn run_join(url: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let child = tokio::process::Command::new(PALAVER)
        .args(["wolf", "join", url, "--name", "cap1"])
        .args(["--idle-timeout", "5", "--connect-timeout", "5"])
        .args(extra)
        .env_remove("AIWOLF_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("wolf join hung")
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn no_pre() -> Pre {
    Box::new(|_| {})
}

fn no_post() -> Post {
    Box::new(|_, _| {})
}

/// The winner the recorded FINISH shows.
fn recorded_winner(packets: &[Value]) -> Team {
    let fin = packets
        .iter()
        .find(|p| request(p) == Request::Finish)
        .unwrap();
    let p: Packet = serde_json::from_value(fin.clone()).unwrap();
    let info = p.info.unwrap();
    let alive = |n: &String| info.status_map.get(n) == Some(&Status::Alive);
    let wolves = info
        .role_map
        .iter()
        .filter(|(n, r)| alive(n) && **r == Role::Werewolf)
        .count();
    let humans = info
        .role_map
        .iter()
        .filter(|(n, r)| alive(n) && **r != Role::Werewolf)
        .count();
    match (wolves, humans) {
        (0, _) => Team::Villager,
        (w, h) if w >= h => Team::Werewolf,
        _ => Team::None,
    }
}

/// Exit 0 and the summary line of a finished game.
fn assert_played(run: &Run, winner: Team) {
    assert_eq!(run.code, Some(0), "stderr: {}", run.err);
    assert!(!run.err.contains("panicked"), "{}", run.err);
    let answers = run.seen.answers.len();
    assert!(
        run.out.contains(&format!(
            "{answers} answers, 0 fallbacks, winner {}",
            winner.as_str()
        )),
        "{}",
        run.out
    );
}

/// Exit 2 and one error line containing `what`.
fn assert_error(code: Option<i32>, err: &str, what: &str) {
    assert_eq!(code, Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("palaver: error: "), "{err}");
    assert!(lines[0].contains(what), "wanted {what:?} in {err}");
}

// ---------------------------------------------------------------------------
// Talk length limits.

/// Sets `setting.talk.max_length` of every packet that carries a setting.
fn with_max_length(p: &mut Value, m: &Value) {
    if let Some(s) = p.get_mut("setting").filter(|s| s.is_object()) {
        s["talk"]["max_length"] = m.clone();
    }
}

/// Checks every talk answer against the rules in `m`, with a daily budget
/// (`per_agent`) the fake server keeps and announces in `remain_length` as
/// v0.4.12 does, for each of the five recorded agents. Returns how many
/// talks were not `Over`/`Skip`.
async fn play_with_limits(m: Value) -> usize {
    let mut talks = 0;
    for agent in 1..=5 {
        talks += play_agent_with_limits(agent, &m).await;
    }
    talks
}

async fn play_agent_with_limits(agent: u64, m: &Value) -> usize {
    // Every agent answers NAME as cap1 here; names do not matter in a replay.
    let packets = recorded(RECORDED, agent);
    let winner = recorded_winner(&packets);
    let cfg: LengthConfig = length::from_setting(&serde_json::from_value(m.clone()).unwrap());
    let budget: Arc<Mutex<Option<i64>>> = Arc::new(Mutex::new(None));
    let (b1, b2) = (budget.clone(), budget.clone());
    let m1 = m.clone();
    let pre: Pre = Box::new(move |p| {
        with_max_length(p, &m1);
        let r = request(p);
        let mut b = b1.lock().unwrap();
        if r == Request::DailyInitialize {
            *b = cfg.per_agent();
        }
        if r == Request::Talk
            && let Some(n) = *b
        {
            p["info"]["remain_length"] = json!(n);
        }
    });
    let post: Post = Box::new(move |p, a| {
        if request(p) != Request::Talk || a == "Over" || a == "Skip" {
            return;
        }
        let info = &p["info"];
        let me = info["agent"].as_str().unwrap();
        let names: Vec<String> = info["status_map"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != me)
            .cloned()
            .collect();
        let others: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut b = b2.lock().unwrap();
        let kept = length::apply(a, &cfg, &others, &mut b);
        assert_eq!(
            squeeze(&kept),
            squeeze(a),
            "the server would cut {a:?} under {cfg:?}"
        );
        assert!(!a.ends_with(char::is_whitespace), "{a:?}");
    });
    let run = replay(packets, &[], false, pre, post).await;
    assert_played(&run, winner);
    run.seen
        .answers
        .iter()
        .filter(|(p, a)| request(p) == Request::Talk && a != "Over" && a != "Skip")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_talk_20_is_honoured_and_cut_between_words() {
    let m = json!({"count_in_word": false, "count_spaces": false, "per_talk": 20,
                   "mention_length": 50, "base_length": 50});
    let talks = play_with_limits(m).await;
    assert!(talks >= 10, "{talks} talks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn word_counting_a_daily_budget_and_counted_spaces_are_honoured() {
    for m in [
        json!({"count_in_word": true, "count_spaces": false, "mention_length": 3,
               "base_length": 4}),
        json!({"count_in_word": false, "count_spaces": false, "mention_length": 10,
               "per_agent": 30, "base_length": 5}),
        json!({"count_in_word": false, "count_spaces": true, "per_talk": 15,
               "mention_length": 50, "base_length": 50}),
    ] {
        let talks = play_with_limits(m.clone()).await;
        assert!(talks >= 1, "{m}: {talks} talks");
    }
}

// ---------------------------------------------------------------------------
// Lenient decoding: what the official library accepts.

/// The setting changes of the lenient cases, by name.
/// A change made to each packet of a case.
type Change = fn(&mut Value);

fn lenient_cases() -> Vec<(&'static str, Change)> {
    fn old_setting(p: &mut Value) {
        // Servers v0.4.0–v0.4.4 send no allow_self_vote.
        if let Some(s) = p.get_mut("setting").filter(|s| s.is_object()) {
            s["vote"].as_object_mut().unwrap().remove("allow_self_vote");
            s["attack_vote"]
                .as_object_mut()
                .unwrap()
                .remove("allow_self_vote");
        }
    }
    fn null_lists(p: &mut Value) {
        if let Some(i) = p.get_mut("info").filter(|i| i.is_object()) {
            i["vote_list"] = Value::Null;
            i["attack_vote_list"] = Value::Null;
            i["profile"] = Value::Null;
        }
        for h in ["talk_history", "whisper_history"] {
            for t in p
                .get_mut(h)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                t["skip"] = Value::Null;
                t.as_object_mut().unwrap().remove("over");
            }
        }
    }
    fn minimal_setting(p: &mut Value) {
        if let Some(s) = p.get_mut("setting").and_then(Value::as_object_mut) {
            for k in [
                "whisper",
                "vote",
                "attack_vote",
                "timeout",
                "vote_visibility",
            ] {
                s.remove(k);
            }
            s["talk"].as_object_mut().unwrap().remove("max_skip");
            s["talk"]["max_count"]
                .as_object_mut()
                .unwrap()
                .remove("per_day");
        }
    }
    vec![
        ("v0.4.0-v0.4.4 setting", old_setting as Change),
        ("null lists", null_lists),
        ("minimal setting", minimal_setting),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_settings_and_null_lists_are_played_to_the_end() {
    let packets = recorded(RECORDED, 1);
    let winner = recorded_winner(&packets);
    for (what, change) in lenient_cases() {
        let pre: Pre = Box::new(change);
        let run = replay(packets.clone(), &[], false, pre, no_post()).await;
        eprintln!("{what}: {}", run.out.trim());
        assert_played(&run, winner);
    }
}

#[test]
fn absent_and_null_members_take_the_official_librarys_defaults() {
    let init = recorded(RECORDED, 1)
        .into_iter()
        .find(|p| request(p) == Request::Initialize)
        .unwrap();
    for (what, change) in lenient_cases() {
        let mut p = init.clone();
        change(&mut p);
        let d = decode_packet(&p.to_string()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let s = d.setting.unwrap();
        match what {
            "v0.4.0-v0.4.4 setting" => {
                assert!(!s.vote.allow_self_vote && !s.attack_vote.allow_self_vote);
                assert_eq!(s.vote.max_count, 1);
            }
            "null lists" => {
                let i = d.info.unwrap();
                assert!(i.vote_list.is_empty() && i.attack_vote_list.is_empty());
                assert_eq!(i.profile, None);
            }
            _ => {
                assert_eq!((s.vote.max_count, s.vote.allow_self_vote), (0, false));
                assert_eq!((s.timeout.action, s.timeout.response), (0, 0));
                assert_eq!(s.whisper.max_count.per_agent, 0);
                assert_eq!((s.talk.max_skip, s.talk.max_count.per_day), (0, 0));
                assert!(!s.vote_visibility);
            }
        }
    }
    // Talk entries: null or absent skip/over are false.
    let talk = r#"{"request":"TALK","info":{"game_id":"g","day":1,"agent":"A",
        "status_map":{"A":"ALIVE"},"role_map":{"A":"SEER"}},
        "talk_history":[{"idx":0,"day":1,"turn":0,"agent":"A","text":"hi","skip":null}]}"#;
    let p = decode_packet(talk).unwrap();
    let t = &p.talk_history.unwrap()[0];
    assert!(!t.skip && !t.over);
    // What the library requires is still required, and ranges still hold.
    for (bad, what) in [
        (
            r#"{"request":"VOTE","info":{"day":1,"agent":"A","status_map":{},"role_map":{}}}"#,
            "game_id",
        ),
        (
            r#"{"request":"VOTE","info":{"game_id":"g","day":1,"agent":"A","status_map":null,"role_map":{}}}"#,
            "status_map",
        ),
    ] {
        let e = decode_packet(bad).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
    let mut p = init.clone();
    p["setting"]["vote"]["max_count"] = json!(-3);
    let e = decode_packet(&p.to_string()).unwrap_err().to_string();
    assert!(e.contains("setting.vote.max_count = -3"), "{e}");
}

/// The same changed packets through aiwolf-nlp-common 0.7.0: it accepts
/// every one, with the defaults asserted above.
#[test]
#[ignore = "needs the reference venv (aiwolf-nlp-common): run scripts/test"]
fn the_official_library_accepts_the_same_packets() {
    let python = std::env::var("PALAVER_AIWOLF_PYTHON")
        .or_else(|_| std::env::var("PALAVER_REFERENCE_PYTHON"))
        .expect("PALAVER_AIWOLF_PYTHON or PALAVER_REFERENCE_PYTHON");
    let init = recorded(RECORDED, 1)
        .into_iter()
        .find(|p| request(p) == Request::Initialize)
        .unwrap();
    let mut lines = String::new();
    for (_, change) in lenient_cases() {
        let mut p = init.clone();
        change(&mut p);
        lines.push_str(&p.to_string());
        lines.push('\n');
    }
    let script = r#"
import json, sys
from aiwolf_nlp_common.packet import Packet
for line in sys.stdin:
    p = Packet.from_dict(json.loads(line))
    s = p.setting
    print(json.dumps([s.vote.allow_self_vote, s.attack_vote.allow_self_vote, s.vote.max_count,
                      s.timeout.action, p.info.vote_list, s.vote_visibility]))
"#;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), 3);
    // Same defaults as decode_packet: false, false, and for the minimal
    // setting max_count 0, timeout 0, vote_visibility false.
    assert_eq!(got[0][0], json!(false));
    assert_eq!(got[0][1], json!(false));
    assert_eq!(got[1][4], Value::Null);
    assert_eq!(got[2], json!([false, false, 0, 0, null, false]));
    for (i, (_, change)) in lenient_cases().into_iter().enumerate() {
        let mut p = init.clone();
        change(&mut p);
        let d = decode_packet(&p.to_string()).unwrap();
        let s = d.setting.unwrap();
        assert_eq!(got[i][0], json!(s.vote.allow_self_vote), "case {i}");
        assert_eq!(got[i][1], json!(s.attack_vote.allow_self_vote), "case {i}");
        assert_eq!(got[i][2], json!(s.vote.max_count), "case {i}");
        assert_eq!(got[i][3], json!(s.timeout.action), "case {i}");
        assert_eq!(got[i][5], json!(s.vote_visibility), "case {i}");
    }
}

// ---------------------------------------------------------------------------
// --json, close before the game, refused tokens, close after FINISH.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_summary_and_json_error() {
    let packets = recorded(RECORDED, 1);
    let winner = recorded_winner(&packets);
    let run = replay(packets, &["--json"], false, no_pre(), no_post()).await;
    assert_eq!(run.code, Some(0), "{}", run.err);
    let lines: Vec<Value> = run
        .out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.out);
    let g = &lines[0];
    assert_eq!(g["game"], 1);
    assert_eq!(g["finished"], true);
    assert_eq!(g["winner"], winner.as_str());
    assert_eq!(g["answers"], run.seen.answers.len());
    assert_eq!(g["fallbacks"], 0);
    assert_eq!(g["name"], "cap1");
    assert!(g["game_id"].as_str().is_some_and(|s| s.len() == 26), "{g}");
    assert!(
        g["role"].as_str().is_some_and(|r| Role::parse(r).is_some()),
        "{g}"
    );
    // An error is a JSON line too (and still one line on stderr, exit 2).
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let _ = ws.close(None).await;
    });
    let (code, out, err) = run_join(&url, &["--json"]).await;
    server.await.unwrap();
    assert_error(code, &err, "before asking for a name");
    let e: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out}: {e}"));
    assert_eq!(e["finished"], false);
    assert_eq!(e["kind"], "connection");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("before asking for a name"),
        "{e}"
    );
}

/// A server that sends NAME, reads the answer, then ends the connection:
/// with a close frame (`close`), or by dropping the socket (as v0.4.12
/// does on a refused token).
async fn name_then_close(
    extra: &[&str],
    close: Option<CloseFrame>,
) -> (Option<i32>, String, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        ws.send(Message::text(r#"{"request":"NAME"}"#))
            .await
            .unwrap();
        let name = ws.next().await.unwrap().unwrap();
        assert_eq!(name.to_text().unwrap(), "cap1");
        if let Some(f) = close {
            let _ = ws.send(Message::Close(Some(f))).await;
            let _ = tokio::time::timeout(Duration::from_secs(2), ws.next()).await;
        }
        // Dropping the stream drops the TCP connection.
    });
    let out = run_join(&url, extra).await;
    server.await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_before_the_game_says_what_happened() {
    // Closed in the waiting room, with a close frame.
    let (code, out, err) = name_then_close(
        &[],
        Some(CloseFrame {
            code: 1001u16.into(),
            reason: "server shutting down".into(),
        }),
    )
    .await;
    assert_error(
        code,
        &err,
        "the server closed the connection before the game began (NAME answered as \"cap1\", \
         no INITIALIZE) (close code 1001: server shutting down)",
    );
    assert!(out.is_empty(), "no empty summary: {out}");
    // Closed before NAME.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let _ = ws.close(None).await;
    });
    let (code, out, err) = run_join(&url, &[]).await;
    server.await.unwrap();
    assert_error(code, &err, "before asking for a name (close code 1005)");
    assert!(out.is_empty(), "{out}");
    // Dropped right after NAME without a token: the hint names --token.
    let (code, _, err) = name_then_close(&[], None).await;
    assert_error(code, &err, "before the game began");
    assert!(err.contains("without a close frame"), "{err}");
    assert!(err.contains("--token or AIWOLF_TOKEN"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_named() {
    // v0.4.12: the socket is dropped right after NAME.
    let (code, out, err) = name_then_close(&["--token", "not.a.jwt"], None).await;
    assert_error(code, &err, "authentication: the server refused the token");
    assert!(err.contains("team \"cap\""), "{err}");
    assert!(!err.contains("Connection reset"), "{err}");
    assert!(out.is_empty(), "{out}");
    // A server that says why in its close frame (palaver wolf serve).
    let (code, _, err) = name_then_close(
        &["--token", "not.a.jwt", "--json"],
        Some(CloseFrame {
            code: 1008u16.into(),
            reason: "authentication: bad signature".into(),
        }),
    )
    .await;
    assert_error(code, &err, "refused the token");
    assert!(
        err.contains("close code 1008: authentication: bad signature"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_closes_after_finish() {
    let packets = recorded(RECORDED, 1);
    let winner = recorded_winner(&packets);
    let t0 = Instant::now();
    let run = replay(packets, &[], true, no_pre(), no_post()).await;
    assert_played(&run, winner);
    let closed = run
        .seen
        .client_closed
        .expect("the client closed the connection after FINISH");
    assert!(closed < Duration::from_secs(3), "{closed:?}");
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

// ---------------------------------------------------------------------------
// Word and vote.

/// Over 200 seeded in-process games (150 of 5 seats, 50 of 13): whenever a
/// bot said "I will vote for @X" (or another announcement) on a day, its
/// votes that day are for X.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_votes_as_it_said_over_200_seeded_games() {
    let five = Arc::new(Config::default_for(5).unwrap());
    let thirteen = Arc::new(Config::default_for(13).unwrap());
    let (mut votes, mut announced, mut broken) = (0usize, 0usize, Vec::new());
    for seed in 0..200u64 {
        let cfg = if seed < 150 {
            five.clone()
        } else {
            thirteen.clone()
        };
        let mut ev: Vec<GameEvent> = Vec::new();
        palaver::werewolf::local::play_bot_game(cfg, seed, &mut ev)
            .await
            .unwrap();
        let GameEvent::Started { seats, .. } = &ev[0] else {
            panic!("a game starts with Started");
        };
        let names: Vec<String> = seats.iter().map(|s| s.name.clone()).collect();
        let name_of = |idx: usize| names[idx - 1].clone();
        // (day, speaker) → the last target announced that day.
        let mut said: BTreeMap<(i64, String), String> = BTreeMap::new();
        for e in &ev {
            match e {
                GameEvent::Talk {
                    whisper: false,
                    talk,
                    ..
                } => {
                    if let Some(t) = announced_vote(&talk.text, &names) {
                        said.insert((talk.day, talk.agent.clone()), t);
                    }
                }
                GameEvent::Vote {
                    day, voter, target, ..
                } => {
                    votes += 1;
                    let who = name_of(*voter);
                    if let Some(t) = said.get(&(*day, who.clone())) {
                        announced += 1;
                        let got = target.map(name_of);
                        if got.as_ref() != Some(t) {
                            broken.push(format!(
                                "seed {seed} day {day}: {who} said @{t}, voted {got:?}"
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    eprintln!("{votes} votes, {announced} after an announcement");
    assert!(
        announced >= 200,
        "too few announcements to judge: {announced}"
    );
    assert!(
        broken.is_empty(),
        "{} broken of {announced}:\n{}",
        broken.len(),
        broken.join("\n")
    );
}
