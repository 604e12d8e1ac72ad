//! The werewolf server over real WebSockets: packet conformance (the
//! reference validator, aiwolf-nlp-common + strict schema), interop with a
//! Python agent built on aiwolf-nlp-common, and the fault injections of
//! aiwolf-nlp.md §9.4.

use crate::common;

use futures_util::{SinkExt, StreamExt};
use palaver::werewolf::agent::{BotDecider, JoinOptions, join};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::{Config, GoDuration};
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::jwt;
use palaver::werewolf::packet::{Packet, Request, Team};
use palaver::werewolf::server::Server;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// The Python with aiwolf-nlp-common and jsonschema (`PALAVER_AIWOLF_PYTHON`,
/// set by scripts/test). The tests that need it are `#[ignore]`d; run, they
/// fail when it is missing.
fn aiwolf_python() -> String {
    common::peer_python(
        "PALAVER_AIWOLF_PYTHON",
        "a Python with aiwolf-nlp-common==0.7.0 (scripts/test makes one in target/reference-venv)",
    )
}

/// The conformance validator (strict JSON Schema + aiwolf-nlp-common), a
/// copy of the shared conformance data.
fn validator() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiwolf/validate_packets.py")
}

fn fast(mut c: Config) -> Config {
    c.server.timeout.action = GoDuration(Duration::from_millis(600));
    c.server.timeout.acceptable = GoDuration(Duration::from_millis(200));
    c.server.timeout.response = GoDuration(Duration::from_millis(1500));
    c
}

async fn start(cfg: Config, seed: u64) -> (Arc<Server>, String) {
    let srv = Server::new(cfg, seed).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let s = srv.clone();
    tokio::spawn(async move { palaver::werewolf::server::serve(listener, s).await });
    (srv, format!("127.0.0.1:{}", addr.port()))
}

fn bot(
    addr: &str,
    name: &str,
    seed: u64,
) -> tokio::task::JoinHandle<palaver::werewolf::agent::ClientReport> {
    let opts = JoinOptions {
        url: format!("ws://{addr}/ws"),
        name: name.into(),
        token: None,
        seed,
    };
    tokio::spawn(async move {
        let mut d = BotDecider(Bot::new(seed));
        join(&opts, &mut d).await.unwrap()
    })
}

#[ignore = "needs aiwolf-nlp-common 0.7.0 in a venv: run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_packet_in_5_9_13_player_games_validates() {
    let py = aiwolf_python();
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for n in [5usize, 9, 13] {
        let (srv, addr) = start(Config::default_for(n).unwrap(), n as u64).await;
        let clients: Vec<_> = (1..=n)
            .map(|i| bot(&addr, &format!("wire{i}"), i as u64))
            .collect();
        let outcomes = tokio::time::timeout(Duration::from_secs(60), srv.wait_finished(1))
            .await
            .unwrap();
        assert_ne!(outcomes[0].winner, Team::None, "{n}p: {:?}", outcomes[0]);
        let mut lines = String::new();
        for c in clients {
            let r = c.await.unwrap();
            assert!(r.finished);
            for f in r.frames {
                lines.push_str(&f);
                lines.push('\n');
            }
        }
        let f = dir.path().join(format!("p{n}.jsonl"));
        std::fs::write(&f, lines).unwrap();
        files.push(f);
    }
    let out = std::process::Command::new(&py)
        .arg(validator())
        .args(&files)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(", 0 invalid"), "{text}");
}

#[ignore = "needs aiwolf-nlp-common 0.7.0 in a venv: run scripts/test"]
#[test]
fn negative_packets_are_rejected_by_the_validator_too() {
    // The validator must be able to fail: the shared negative samples do.
    let py = aiwolf_python();
    let neg = validator().with_file_name("negative_packets.jsonl");
    let out = std::process::Command::new(&py)
        .arg(validator())
        .arg(neg)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

fn python_agent(py: &str, addr: &str, name: &str, token: Option<&str>) -> tokio::process::Child {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/aiwolf_agent.py");
    let mut c = tokio::process::Command::new(py);
    c.arg(script).arg(format!("ws://{addr}/ws")).arg(name);
    if let Some(t) = token {
        c.arg(t);
    }
    c.kill_on_drop(true).spawn().unwrap()
}

#[ignore = "needs aiwolf-nlp-common 0.7.0 in a venv: run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_python_agents_complete_a_game() {
    let py = aiwolf_python();
    for n in [5usize, 13] {
        let (srv, addr) = start(Config::default_for(n).unwrap(), 7).await;
        let mut kids: Vec<_> = (1..=n)
            .map(|i| python_agent(&py, &addr, &format!("py{i}"), None))
            .collect();
        let o = tokio::time::timeout(Duration::from_secs(120), srv.wait_finished(1))
            .await
            .unwrap();
        assert!(o[0].errors.is_empty(), "{:?}", o[0].errors);
        assert_ne!(o[0].winner, Team::None);
        for k in &mut kids {
            assert!(k.wait().await.unwrap().success());
        }
    }
}

#[ignore = "needs aiwolf-nlp-common 0.7.0 in a venv: run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn palaver_client_with_four_python_agents_completes_a_game() {
    let py = aiwolf_python();
    let (srv, addr) = start(Config::default_for(5).unwrap(), 8).await;
    let mut kids: Vec<_> = (1..=4)
        .map(|i| python_agent(&py, &addr, &format!("mix{i}"), None))
        .collect();
    let me = bot(&addr, "mix5", 5);
    let o = tokio::time::timeout(Duration::from_secs(120), srv.wait_finished(1))
        .await
        .unwrap();
    assert!(o[0].errors.is_empty(), "{:?}", o[0].errors);
    let r = me.await.unwrap();
    assert!(r.finished && r.fallbacks == 0);
    assert_eq!(r.view.finished, Some(o[0].winner));
    for k in &mut kids {
        assert!(k.wait().await.unwrap().success());
    }
}

/// How the scripted fault agent behaves on its n-th reply-needing request.
#[derive(Clone, Copy)]
enum Fault {
    /// First TALK: sleep past the deadline, then answer NAME only.
    Slow,
    /// First TALK: answer late, then answer the NAME probe.
    LateThenName,
    /// Close the socket at the first TALK.
    Disconnect,
    /// Answer every no-reply request with junk.
    ReplyToNoReply,
    /// Answer the first TALK with a binary frame.
    Binary,
    /// Answer the first TALK with an oversized text frame.
    Oversized,
    /// Vote for nobody known.
    UnknownTarget,
}

async fn fault_agent(url: String, name: &'static str, fault: Fault) -> Vec<Packet> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let mut seen = Vec::new();
    let mut talks = 0;
    while let Some(Ok(m)) = ws.next().await {
        let Message::Text(t) = m else { continue };
        let p = Packet::from_json(&t).unwrap();
        seen.push(p.clone());
        let me = p.info.as_ref().map(|i| i.agent.clone()).unwrap_or_default();
        let target = p
            .info
            .as_ref()
            .and_then(|i| i.status_map.keys().find(|k| **k != me).cloned())
            .unwrap_or_default();
        let reply: Option<Message> = match p.request {
            Request::Name => Some(Message::text(name)),
            Request::Talk => {
                talks += 1;
                match (fault, talks) {
                    (Fault::Slow, 1) => {
                        tokio::time::sleep(Duration::from_millis(1000)).await;
                        None
                    }
                    (Fault::LateThenName, 1) => {
                        tokio::time::sleep(Duration::from_millis(900)).await;
                        Some(Message::text("a late answer"))
                    }
                    (Fault::Disconnect, 1) => {
                        let _ = ws.close(None).await;
                        return seen;
                    }
                    (Fault::Binary, 1) => Some(Message::binary(vec![0xffu8, 0xfe])),
                    (Fault::Oversized, 1) => Some(Message::text("x".repeat(200_000))),
                    _ => Some(Message::text("Over")),
                }
            }
            Request::Vote if matches!(fault, Fault::UnknownTarget) => {
                Some(Message::text("NoSuchAgent"))
            }
            r if r.needs_reply() => Some(Message::text(target)),
            _ if matches!(fault, Fault::ReplyToNoReply) => Some(Message::text("junk")),
            _ => None,
        };
        if let Some(r) = reply
            && ws.send(r).await.is_err()
        {
            break;
        }
    }
    seen
}

async fn fault_game(
    fault: Fault,
) -> (
    palaver::werewolf::Outcome,
    Vec<GameEvent>,
    Vec<Packet>,
    Vec<palaver::werewolf::agent::ClientReport>,
) {
    let mut cfg = fast(Config::default_for(5).unwrap());
    cfg.server.max_frame_bytes = 64 * 1024;
    let (srv, addr) = start(cfg, 11).await;
    let f = tokio::spawn(fault_agent(format!("ws://{addr}/ws"), "fault1", fault));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let others: Vec<_> = (2..=5)
        .map(|i| bot(&addr, &format!("fault{i}"), i))
        .collect();
    let o = tokio::time::timeout(Duration::from_secs(60), srv.wait_finished(1))
        .await
        .unwrap()
        .remove(0);
    let events = srv.games()[0].events();
    let seen = f.await.unwrap();
    let mut reports = Vec::new();
    for c in others {
        reports.push(c.await.unwrap());
    }
    (o, events, seen, reports)
}

fn talk_texts(ev: &[GameEvent], idx: usize) -> Vec<String> {
    ev.iter()
        .filter_map(|e| match e {
            GameEvent::Talk { idx: i, talk, .. } if *i == idx => Some(talk.text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t20_slow_reply_then_name_counts_as_failed_action() {
    let (o, ev, seen, _) = fault_game(Fault::Slow).await;
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(talk_texts(&ev, 1).first().map(String::as_str), Some("Skip"));
    assert!(
        seen.iter().filter(|p| p.request == Request::Name).count() >= 2,
        "a NAME probe was sent"
    );
    assert_ne!(o.winner, Team::None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t21_late_reply_before_name_is_not_taken_as_the_name() {
    let (o, ev, _, _) = fault_game(Fault::LateThenName).await;
    assert!(
        o.errors.is_empty(),
        "v0.4.12 would mark this agent broken: {:?}",
        o.errors
    );
    assert!(!talk_texts(&ev, 1).iter().any(|t| t.contains("late")));
    assert_ne!(o.winner, Team::None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t22_disconnect_aborts_a_five_player_game_and_others_get_finish() {
    let (o, _, _, reports) = fault_game(Fault::Disconnect).await;
    assert_eq!(o.winner, Team::None);
    assert_eq!(o.errors.len(), 1);
    assert_eq!(o.errors[0].0, 1);
    assert!(reports.iter().all(|r| r.finished));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t23_replies_to_no_reply_requests_are_discarded_without_desync() {
    let (o, ev, _, _) = fault_game(Fault::ReplyToNoReply).await;
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert!(!talk_texts(&ev, 1).iter().any(|t| t == "junk"));
    assert!(talk_texts(&ev, 1).iter().all(|t| t == "Over"));
    assert_ne!(o.winner, Team::None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t24_binary_frame_fails_the_action_only() {
    let (o, ev, _, _) = fault_game(Fault::Binary).await;
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(talk_texts(&ev, 1).first().map(String::as_str), Some("Skip"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t24_oversized_frame_breaks_the_seat_with_a_reason() {
    let (o, _, _, reports) = fault_game(Fault::Oversized).await;
    assert_eq!(o.winner, Team::None);
    assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
    assert!(reports.iter().all(|r| r.finished));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t24_unknown_vote_target_is_ignored() {
    let (o, ev, _, _) = fault_game(Fault::UnknownTarget).await;
    assert!(o.errors.is_empty());
    assert!(ev.iter().any(|e| matches!(
        e,
        GameEvent::Vote {
            voter: 1,
            target: None,
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t25_auth_tokens_players_and_spectators() {
    let mut cfg = fast(Config::default_for(5).unwrap());
    cfg.server.authentication.enable = true;
    cfg.server.authentication.secret_key = "test-secret".into();
    let (srv, addr) = start(cfg, 3).await;
    // Wrong team claim: connection closed after NAME, no game.
    let bad = jwt::player_token("test-secret", "other");
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws?token={bad}"))
        .await
        .unwrap();
    let _name = ws.next().await;
    ws.send(Message::text("auth1")).await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap();
    assert!(
        matches!(next, Some(Ok(Message::Close(_))) | None | Some(Err(_))),
        "{next:?}"
    );
    // Valid tokens via Bearer (palaver's client) and via the query string.
    let good = jwt::player_token("test-secret", "auth");
    let mut joins = Vec::new();
    for i in 1..=4u64 {
        let opts = JoinOptions {
            url: format!("ws://{addr}/ws"),
            name: format!("auth{i}"),
            token: Some(good.clone()),
            seed: i,
        };
        joins.push(tokio::spawn(async move {
            join(&opts, &mut BotDecider(Bot::new(i))).await.unwrap()
        }));
    }
    let opts = JoinOptions {
        url: format!("ws://{addr}/ws?token={good}"),
        name: "auth5".into(),
        token: None,
        seed: 5,
    };
    joins.push(tokio::spawn(async move {
        join(&opts, &mut BotDecider(Bot::new(5))).await.unwrap()
    }));
    let o = tokio::time::timeout(Duration::from_secs(60), srv.wait_finished(1))
        .await
        .unwrap();
    assert!(o[0].errors.is_empty());
    for j in joins {
        assert!(j.await.unwrap().finished);
    }
    // Spectators: 401 without a token, a PLAYER token is not enough, RECEIVER works.
    let base = format!("http://{addr}");
    assert!(
        palaver::werewolf::spectate::list_games(&base, None)
            .await
            .is_err()
    );
    assert!(
        palaver::werewolf::spectate::list_games(&base, Some(&good))
            .await
            .is_err()
    );
    let rec = jwt::receiver_token("test-secret");
    let games = palaver::werewolf::spectate::list_games(&base, Some(&rec))
        .await
        .unwrap();
    assert_eq!(games.len(), 1);
    // The god-view stream replays the finished game to its end.
    let id = games[0]["id"].as_str().unwrap().to_owned();
    let mut rx = palaver::werewolf::spectate::follow(&base, &id, Some(&rec))
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(e) = rx.recv().await {
        got.push(e);
    }
    assert!(matches!(got.first(), Some(GameEvent::Started { .. })));
    assert!(matches!(got.last(), Some(GameEvent::Finished { .. })));
    // A game's streams refuse a missing token and answer an unknown game.
    let refused = palaver::werewolf::spectate::follow(&base, &id, None)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
    let missing = palaver::werewolf::spectate::follow(&base, "no-such-game", Some(&rec))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("404"), "{missing}");
}
