//! The engine and the native protocols, bot against bot over the in-memory
//! channel: frame sequences as the reference sends them, outcomes, and the
//! decision paths of the three control modes.

use palaver::engine::{
    ControlMode, EngineConfig, MemorySink, ScriptedChat, ScriptedDecider, SessionOutcome,
};
use palaver::json::{self, Map, Value};
use palaver::library;
use palaver::obj;
use palaver::protocols::native_hooks_for_alias;
use palaver::services::local::{Side, play};
use std::sync::Arc;
use std::time::Duration;

struct Played {
    host: SessionOutcome,
    guest: SessionOutcome,
    hs: Arc<MemorySink>,
    gs: Arc<MemorySink>,
}

fn side(alias: &str, seed: u64) -> (Side, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::default());
    let mut s = Side::auto(
        native_hooks_for_alias(alias).expect("native hooks"),
        sink.clone(),
    );
    s.seed = Some(seed);
    (s, sink)
}

async fn play_pair(
    alias: &str,
    options: Map,
    host: Side,
    guest: Side,
    hs: Arc<MemorySink>,
    gs: Arc<MemorySink>,
) -> Played {
    let spec = library::bundled_spec(alias).expect("bundled");
    let cfg = EngineConfig {
        peer_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let (host, guest) = play(spec, &options, &cfg, host, guest).await;
    Played {
        host,
        guest,
        hs,
        gs,
    }
}

async fn bots(alias: &str, options: Map, seed: u64) -> Played {
    let (h, hs) = side(alias, seed);
    let (g, gs) = side(alias, seed.wrapping_mul(31).wrapping_add(7));
    play_pair(alias, options, h, g, hs, gs).await
}

fn opts(src: &str) -> Map {
    json::parse_str(src).unwrap().as_object().unwrap().clone()
}

/// The sent frames' actions, in order, from one side's events.
fn sent(sink: &MemorySink) -> Vec<String> {
    sink.frames()
        .into_iter()
        .filter(|(d, _)| d == "sent")
        .map(|(_, a)| a)
        .collect()
}

fn assert_completed_same_winner(p: &Played) {
    assert!(p.host.completed, "host: {:?}", p.host);
    assert!(p.guest.completed, "guest: {:?}", p.guest);
    assert_eq!(p.host.winner, p.guest.winner);
    assert_eq!(p.host.frames_sent, p.guest.frames_received);
    assert_eq!(p.guest.frames_sent, p.host.frames_received);
}

#[tokio::test]
async fn rps_frame_sequence_matches_the_reference_transcript() {
    let p = bots("rps-v1", opts(r#"{"best_of":3}"#), 1).await;
    assert_completed_same_winner(&p);
    let h = sent(&p.hs);
    let g = sent(&p.gs);
    // G→H join; H→G ready; per round H commit, G commit, H reveal, G reveal, H round_result; H end.
    assert_eq!(g[0], "join");
    assert_eq!(h[0], "ready");
    let rounds = (h.len() - 2) / 3;
    assert!(rounds >= 2, "{h:?}");
    for r in 0..rounds {
        assert_eq!(
            &h[1 + 3 * r..4 + 3 * r],
            ["commit", "reveal", "round_result"]
        );
        assert_eq!(&g[1 + 2 * r..3 + 2 * r], ["commit", "reveal"]);
    }
    assert_eq!(h.last().unwrap(), "end");
    let winner = p.host.winner.clone().unwrap();
    assert!(winner == "host" || winner == "guest");
    assert_eq!(
        p.hs.kinds()
            .iter()
            .filter(|k| **k == "session_ended")
            .count(),
        1
    );
    let score = p.gs.snapshot_value("score").unwrap();
    assert_eq!(score.get(&winner).and_then(Value::as_i64), Some(2));
}

#[tokio::test]
async fn rps_many_seeds_fixed_rounds_and_first_to_win() {
    for seed in 0..40 {
        let p = bots(
            "rps-v1",
            opts(r#"{"best_of":5,"termination":"fixed_rounds"}"#),
            seed,
        )
        .await;
        assert_completed_same_winner(&p);
        let results = sent(&p.hs).iter().filter(|a| *a == "round_result").count();
        assert_eq!(results, 5, "fixed_rounds plays exactly best_of rounds");
        let p = bots("rps-v1", Map::new(), seed).await;
        assert_completed_same_winner(&p);
    }
}

#[tokio::test]
async fn rps_strategies_decide_the_game() {
    let (h, hs) = side("rps-v1", 3);
    h.strategy.set(opts(r#"{"mode":"fixed","fixed":"paper"}"#));
    let (g, gs) = side("rps-v1", 4);
    g.strategy
        .set(opts(r#"{"mode":"seq","sequence":["rock"]}"#));
    let p = play_pair("rps-v1", opts(r#"{"best_of":3}"#), h, g, hs, gs).await;
    assert_completed_same_winner(&p);
    assert_eq!(p.host.winner.as_deref(), Some("host"));
    assert_eq!(
        sent(&p.hs).iter().filter(|a| *a == "round_result").count(),
        2
    );
    assert!(p.hs.kinds().contains(&"strategy_applied"));
}

#[tokio::test]
async fn coin_flip_and_guess_number_finish_for_many_seeds() {
    for seed in 0..30 {
        let p = bots("coin-flip-v1", opts(r#"{"best_of":5}"#), seed).await;
        assert_completed_same_winner(&p);
        let p = bots(
            "guess-number-v1",
            opts(r#"{"range_min":1,"range_max":100,"max_attempts":7}"#),
            seed,
        )
        .await;
        assert_completed_same_winner(&p);
        // Bisection finds any number in 1..100 within 7 attempts.
        assert_eq!(p.host.winner.as_deref(), Some("guest"));
        let g = sent(&p.gs);
        assert_eq!(g[0], "join");
        assert!(g[1..].iter().all(|a| a == "guess"));
        assert_eq!(sent(&p.hs).last().unwrap(), "game_over");
    }
}

#[tokio::test]
async fn guess_number_host_wins_when_attempts_run_out() {
    let (h, hs) = side("guess-number-v1", 1);
    let (g, gs) = side("guess-number-v1", 2);
    g.strategy.set(opts(r#"{"mode":"fixed","number":1}"#));
    let p = play_pair(
        "guess-number-v1",
        opts(r#"{"range_min":1,"range_max":100,"max_attempts":3,"secret":50}"#),
        h,
        g,
        hs,
        gs,
    )
    .await;
    assert_completed_same_winner(&p);
    assert_eq!(p.host.winner.as_deref(), Some("host"));
}

#[tokio::test]
async fn human_chat_exchanges_lines_and_ends_on_quit() {
    let (mut h, hs) = side("human-chat-v1", 1);
    h.chat = Some(Box::new(ScriptedChat::new(
        ["hello", "how are you?"],
        Duration::from_millis(5),
    )));
    let (mut g, gs) = side("human-chat-v1", 2);
    g.chat = Some(Box::new(ScriptedChat::new(
        ["hi", "fine", "/quit"],
        Duration::from_millis(20),
    )));
    let p = play_pair("human-chat-v1", Map::new(), h, g, hs, gs).await;
    assert!(
        p.host.completed && p.guest.completed,
        "{:?} {:?}",
        p.host,
        p.guest
    );
    let msgs = p.hs.snapshot_value("messages").unwrap();
    let texts: Vec<String> = msgs
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.get("text").unwrap().py_str())
        .collect();
    for t in ["hello", "how are you?", "hi", "fine"] {
        assert!(texts.contains(&t.to_string()), "{texts:?}");
    }
    // A chat is no game: both sides end in phase `ended`.
    for sink in [&p.hs, &p.gs] {
        assert_eq!(
            sink.snapshot_value("phase").unwrap().as_str(),
            Some("ended")
        );
    }
}

#[tokio::test]
async fn a_game_ends_in_game_over() {
    let p = bots("rps-v1", opts(r#"{"best_of":3}"#), 5).await;
    assert_completed_same_winner(&p);
    for sink in [&p.hs, &p.gs] {
        assert_eq!(
            sink.snapshot_value("phase").unwrap().as_str(),
            Some("game_over")
        );
    }
}

fn decider(items: &[&str]) -> Arc<ScriptedDecider> {
    Arc::new(ScriptedDecider::new(items.iter().map(|s| opts(s))))
}

#[tokio::test]
async fn human_mode_takes_decisions_and_fails_cleanly_without_them() {
    // Three human decisions win three rounds against a fixed bot.
    let (mut h, hs) = side("rps-v1", 1);
    h.control_mode = ControlMode::Human;
    h.decider = decider(&[
        r#"{"round":0,"choice":"paper"}"#,
        r#"{"round":1,"choice":"paper"}"#,
        r#"{"round":2,"choice":"paper"}"#,
    ]);
    let (g, gs) = side("rps-v1", 2);
    g.strategy.set(opts(r#"{"mode":"fixed","fixed":"rock"}"#));
    let p = play_pair("rps-v1", opts(r#"{"best_of":5}"#), h, g, hs, gs).await;
    assert_completed_same_winner(&p);
    assert_eq!(p.host.winner.as_deref(), Some("host"));

    // An illegal human decision ends both sides cleanly with a reason.
    let (mut h, hs) = side("rps-v1", 1);
    h.control_mode = ControlMode::Human;
    h.decider = decider(&[r#"{"round":0,"choice":"lizard"}"#]);
    let (g, gs) = side("rps-v1", 2);
    let p = play_pair("rps-v1", Map::new(), h, g, hs, gs).await;
    assert!(!p.host.completed);
    assert_eq!(p.host.reason, "human_decision_failed");
    assert!(p.hs.kinds().contains(&"human_decision_failed"));
    assert!(!p.guest.completed);
    assert!(
        ["peer_error", "peer_disconnected"].contains(&p.guest.reason.as_str()),
        "{:?}",
        p.guest
    );

    // No decision at all: human mode fails, it never plays for the human.
    let (mut h, hs) = side("rps-v1", 1);
    h.control_mode = ControlMode::Human;
    h.decider = decider(&[]);
    let (g, gs) = side("rps-v1", 2);
    let p = play_pair("rps-v1", Map::new(), h, g, hs, gs).await;
    assert_eq!(p.host.reason, "human_decision_failed");
}

#[tokio::test]
async fn hybrid_uses_legal_decisions_and_falls_back_otherwise() {
    let (mut h, hs) = side("rps-v1", 1);
    h.control_mode = ControlMode::Hybrid;
    // Round 0 explicit scissors, round 1 illegal (auto is used), then none.
    h.decider = decider(&[
        r#"{"round":0,"choice":"scissors"}"#,
        r#"{"round":1,"choice":"lizard"}"#,
    ]);
    h.strategy.set(opts(r#"{"mode":"fixed","fixed":"rock"}"#));
    let (g, gs) = side("rps-v1", 2);
    g.strategy.set(opts(r#"{"mode":"fixed","fixed":"paper"}"#));
    let p = play_pair("rps-v1", opts(r#"{"best_of":3}"#), h, g, hs, gs).await;
    assert_completed_same_winner(&p);
    let details = p.hs.details.lock().unwrap().clone();
    let host_choices: Vec<String> = details
        .iter()
        .map(|d| d.get("host_choice").unwrap().py_str())
        .collect();
    assert_eq!(host_choices, ["scissors", "rock", "rock"]);
    assert_eq!(p.host.winner.as_deref(), Some("guest"));
}

#[tokio::test]
async fn human_guess_number_host_sets_the_secret() {
    let (mut h, hs) = side("guess-number-v1", 1);
    h.control_mode = ControlMode::Human;
    h.decider = decider(&[r#"{"setup":0,"secret":77}"#]);
    let (g, gs) = side("guess-number-v1", 2);
    let p = play_pair("guess-number-v1", Map::new(), h, g, hs, gs).await;
    assert_completed_same_winner(&p);
    let last = p.gs.details.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.get("secret_number").and_then(Value::as_i64), Some(77));
    let _ = obj! {};
}

#[tokio::test]
async fn every_native_protocol_plays_to_completion_for_many_seeds() {
    let cases: [(&str, &str); 8] = [
        ("rps-v1", r#"{"best_of":3}"#),
        ("coin-flip-v1", r#"{"best_of":3}"#),
        ("guess-number-v1", "{}"),
        ("weak-wins-all", r#"{"total_points":25,"total_rounds":5}"#),
        ("gomoku-v1", r#"{"board_size":9}"#),
        ("connect4-v1", "{}"),
        ("reversi-v1", r#"{"board_size":6}"#),
        ("hero-duel-v1", r#"{"max_rounds":30}"#),
    ];
    for (alias, o) in cases {
        for seed in 0..12 {
            let p = bots(alias, opts(o), seed).await;
            assert_completed_same_winner(&p);
            assert!(p.host.frames_sent >= 2, "{alias}");
        }
    }
}

#[tokio::test]
async fn board_games_follow_the_reference_frame_pattern() {
    for alias in ["gomoku-v1", "connect4-v1", "reversi-v1"] {
        let p = bots(alias, Map::new(), 5).await;
        assert_completed_same_winner(&p);
        let h = sent(&p.hs);
        let g = sent(&p.gs);
        assert_eq!(g[0], "join");
        assert_eq!(h[0], "ready");
        assert!(
            g[1..].iter().all(|a| a == "move" || a == "pass"),
            "{alias}: {g:?}"
        );
        assert!(h[1..].iter().all(|a| a == "round_result"), "{alias}: {h:?}");
        // One host answer per guest move.
        assert_eq!(g.len() - 1, h.len() - 1, "{alias}");
        let board = p.gs.snapshot_value("board").unwrap();
        assert!(board.as_array().unwrap().len() >= 4);
    }
}

#[tokio::test]
async fn reversi_reports_stone_counts_consistently() {
    let p = bots("reversi-v1", opts(r#"{"board_size":8}"#), 9).await;
    assert_completed_same_winner(&p);
    let (b, w) = (
        p.gs.snapshot_value("black").unwrap(),
        p.gs.snapshot_value("white").unwrap(),
    );
    let (b, w) = (b.as_i64().unwrap(), w.as_i64().unwrap());
    let expected = match b.cmp(&w) {
        std::cmp::Ordering::Greater => Some("guest"),
        std::cmp::Ordering::Less => Some("host"),
        std::cmp::Ordering::Equal => None,
    };
    assert_eq!(p.host.winner.as_deref(), expected);
}

#[tokio::test]
async fn hero_duel_guest_shadow_judges_every_round() {
    let p = bots(
        "hero-duel-v1",
        opts(r#"{"host_hero":"mage","guest_hero":"tank","max_rounds":12}"#),
        2,
    )
    .await;
    assert_completed_same_winner(&p);
    assert!(!p.gs.kinds().contains(&"balance_mismatch_detected"));
    let heroes = p.gs.snapshot_value("heroes").unwrap();
    assert_eq!(heroes.get("host").and_then(Value::as_str), Some("mage"));
    assert_eq!(heroes.get("guest").and_then(Value::as_str), Some("tank"));
}
