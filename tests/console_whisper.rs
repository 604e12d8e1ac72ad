//! The sessions screen's coaching (issue 24): the whisper line (preview,
//! the whispers.jsonl line, the feed's mark once it takes effect), the peer
//! banner, details.jsonl in the feed, the round-by-round history, one
//! numbering for people, and the strategy presets of every bundled game.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::json::{Map, Value};
use palaver::obj;
use palaver::session::decision::mono_now;
use palaver::tui::screens::sessions::{Focus, Modal};
use palaver::tui::{Headless, load_settings};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn write(path: &Path, v: Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, palaver::json::canonical::to_string_ordered(&v)).unwrap();
}

fn line(v: Map) -> String {
    palaver::json::canonical::to_string_ordered(&Value::Object(v)) + "\n"
}

/// One event line at a fixed time (`sec` seconds after noon).
fn event(sec: u32, kind: &str, data: Map, summary: Option<&str>) -> String {
    let mut m = obj! { "ts" => format!("2026-11-30T12:{:02}:{:02}.000000+00:00", sec / 60, sec % 60), "type" => kind, "data" => data };
    if let Some(s) = summary {
        m.insert("summary", Value::from(s));
    }
    line(m)
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// An rps session as the runtime writes it: round 2 (wire round 1) open
/// for a human guest; (parent, child).
fn rps_session(data: &Path, status: &str) -> (PathBuf, PathBuf) {
    let parent = data.join("sessions").join("guest-2000");
    let child = parent.join("guest-2000");
    let spec = palaver::library::bundled_spec("rps-v1").unwrap();
    write(
        &parent.join("session.json"),
        Value::Object(obj! {
            "role" => "guest", "status" => status, "protocol_id" => spec.protocol_id(),
            "protocol_name" => spec.name().unwrap_or(""), "local_control_mode" => "human",
            "peer_control_mode" => "autonomous", "options" => obj! { "best_of" => 3 },
            "started_at" => palaver::session::files::epoch_now() - 7200.0, "pid" => std::process::id(),
            "state_dir" => parent.display().to_string(), "engine_state_dir" => child.display().to_string(),
        }),
    );
    write(
        &child.join("snapshot.json"),
        Value::Object(obj! {
            "protocol_id" => spec.protocol_id(), "protocol_name" => spec.name().unwrap_or(""),
            "control_mode" => "human", "phase" => "playing", "role" => "guest", "round" => 2, "best_of" => 3,
            "score" => obj! { "host" => 0, "guest" => 1 },
            "last_event" => obj! { "summary" => "R1 done: guest wins, score 0-1" },
        }),
    );
    let events = [
        event(
            1,
            "protocol_message",
            obj! { "direction" => "received", "msg" => obj! { "action" => "commit", "round" => 0, "hash" => "ab".repeat(32) } },
            None,
        ),
        event(
            2,
            "protocol_message",
            obj! { "direction" => "received", "msg" => obj! { "action" => "round_result", "round" => 0, "round_winner" => "guest" } },
            Some("Round 1: host rock vs guest paper -> guest (0-1)"),
        ),
        event(
            3,
            "decision_window_opened",
            obj! { "match_key" => "round", "match_value" => 1, "mode" => "human" },
            None,
        ),
    ];
    std::fs::write(parent.join("events.jsonl"), events.concat()).unwrap();
    std::fs::write(
        child.join("details.jsonl"),
        line(obj! {
            "ts" => "2026-11-30T12:00:02.000000+00:00", "type" => "round_result", "round" => 1,
            "host_choice" => "rock", "guest_choice" => "paper", "winner" => "guest",
            "host_wins" => 0, "guest_wins" => 1, "game_over" => false, "game_winner" => "none",
            "summary" => "R1: Rock vs Paper -> guest (0-1)",
        }),
    )
    .unwrap();
    if status == "running" {
        let t = mono_now() + 500.5;
        write(
            &child.join("decision").join("state.json"),
            Value::Object(obj! {
                "match_key" => "round", "match_value" => 1, "mode" => "human",
                "release_at" => mono_now() + 1.0, "deadline_at" => t, "waiting_for" => "decision",
            }),
        );
    }
    (parent, child)
}

fn console(data: &Path, w: u16, h: u16) -> Headless {
    Headless::new(load_settings(data, None, None).unwrap(), w, h)
}

async fn attach(h: &mut Headless, parent: &Path, want_window: bool) {
    h.app.attach(parent);
    let ok = h
        .until(Duration::from_secs(10), |app| {
            app.sessions.attached.as_ref().is_some_and(|a| {
                a.feed.total > 0
                    && !a.snapshot.is_empty()
                    && !a.session.is_empty()
                    && !a.aside.details.is_empty()
                    && (!want_window || a.prompt.is_some())
            }) && !app.sessions.rows.is_empty()
        })
        .await;
    assert!(ok, "the session did not load:\n{}", h.screen());
}

/// The screen with the countdowns (which move while a test waits) as `N`.
fn steady(s: &str) -> String {
    fn digits_after(line: &str, marker: &str) -> String {
        let Some(i) = line.find(marker) else {
            return line.to_owned();
        };
        let start = i + marker.len();
        let n = line[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        let pad = " ".repeat(n.saturating_sub(1));
        format!("{}N{pad}{}", &line[..start], &line[start + n..])
    }
    s.lines()
        .map(|l| {
            let l = digits_after(l, "deadline in ");
            match l.find("s left") {
                Some(i) => {
                    let n = l[..i]
                        .chars()
                        .rev()
                        .take_while(char::is_ascii_digit)
                        .count();
                    format!(
                        "{}{}N{}",
                        &l[..i - n],
                        " ".repeat(n.saturating_sub(1)),
                        &l[i..]
                    )
                }
                None => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn until_screen(h: &mut Headless, what: &str) {
    let mut seen = String::new();
    for _ in 0..250 {
        h.until(Duration::from_millis(40), |_| false).await;
        seen = h.screen();
        if seen.contains(what) {
            return;
        }
    }
    panic!("the screen never showed {what:?}:\n{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_read_the_same_in_the_prompt_the_snapshot_and_the_feed() {
    let tmp = tempfile::tempdir().unwrap();
    let (parent, _) = rps_session(tmp.path(), "running");
    let mut h = console(tmp.path(), 120, 36);
    attach(&mut h, &parent, true).await;
    let s = h.screen();
    // Wire round 1 is the second round: every place says round 2.
    assert!(s.contains("Decide: round 2 (human)"), "{s}");
    assert!(s.contains("round 2 open"), "{s}");
    assert!(s.contains("round 2 · best of 3"), "{s}");
    assert!(s.contains("commit round 1 hash="), "{s}");
    assert!(s.contains("decision_window_opened · round 2"), "{s}");
    assert!(!s.contains("round 0") && !s.contains("round=0"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whisper_line_previews_sends_and_marks_when_it_took_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let (parent, child) = rps_session(tmp.path(), "running");
    let mut h = console(tmp.path(), 120, 36);
    attach(&mut h, &parent, true).await;
    h.app.sessions.focus = Focus::Feed;
    h.key(ch('w'));
    assert!(matches!(h.app.sessions.modal, Some(Modal::Whisper(_))));
    for c in "hold on".chars() {
        h.key(ch(c));
    }
    let s = h.screen();
    assert!(s.contains("not understood as a move"), "{s}");
    for _ in 0.."hold on".len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in "paper this round".chars() {
        h.key(ch(c));
    }
    let s = h.screen();
    assert!(
        s.contains("one-shot decision: choice paper for round 2"),
        "{s}"
    );
    for _ in 0.."paper this round".len() {
        h.key(key(KeyCode::Backspace));
    }
    for c in "always rock".chars() {
        h.key(ch(c));
    }
    let s = h.screen();
    assert!(
        s.contains("persistent strategy: choice rock from now on"),
        "{s}"
    );
    insta::assert_snapshot!("whisper_line_preview", s);
    h.key(key(KeyCode::Enter));
    assert!(h.app.sessions.modal.is_none());
    let sent = h
        .until(Duration::from_secs(10), |a| {
            a.sessions
                .attached
                .as_ref()
                .and_then(|a| a.aside.whisper.as_ref())
                .is_some_and(|w| !w.id.is_empty())
        })
        .await;
    assert!(sent, "the whisper was not sent:\n{}", h.screen());
    let lines = palaver::session::files::read_jsonl(&child.join("whispers.jsonl"));
    assert_eq!(lines.len(), 1);
    let w = &lines[0];
    assert_eq!(w.get("text").and_then(Value::as_str), Some("always rock"));
    assert_eq!(w.get("role").and_then(Value::as_str), Some("user"));
    assert_eq!(w.get("origin").and_then(Value::as_str), Some("console"));
    let id = w.get("id").and_then(Value::as_str).unwrap().to_owned();
    let strat = palaver::session::files::read_json_object(&child.join("strategy.json")).unwrap();
    assert_eq!(strat.get("mode").and_then(Value::as_str), Some("fixed"));
    until_screen(&mut h, "waiting to take effect").await;
    // The running session says it took effect.
    append(
        &parent.join("events.jsonl"),
        &event(
            20,
            "whisper_applied",
            obj! {
                "whisper_id" => id.as_str(), "status" => "decision_produced", "action" => "strategy",
                "match_key" => "round", "match_value" => 1, "result" => "rock",
            },
            None,
        ),
    );
    until_screen(&mut h, "took effect as the strategy for round 2: rock").await;
    let w = h
        .app
        .sessions
        .attached
        .as_ref()
        .unwrap()
        .aside
        .whisper
        .clone()
        .unwrap();
    assert!(w.applied, "{w:?}");
    let s = h.screen();
    assert!(s.contains("whisper “always rock” ✓"), "{s}");
    insta::assert_snapshot!(
        "whisper_took_effect",
        steady(&s.replace(&id, "<whisper id>"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_peer_shows_as_a_banner_until_it_comes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (parent, _) = rps_session(tmp.path(), "running");
    let mut h = console(tmp.path(), 120, 36);
    attach(&mut h, &parent, true).await;
    append(
        &parent.join("events.jsonl"),
        &event(
            31,
            "peer_unresponsive",
            obj! { "silent_seconds" => 30 },
            Some("The peer has gone silent"),
        ),
    );
    until_screen(
        &mut h,
        "⚠ the peer has gone silent for 30s (since 12:00:31)",
    )
    .await;
    insta::assert_snapshot!("banner_peer_silent", h.screen());
    append(
        &parent.join("events.jsonl"),
        &event(40, "peer_resumed", obj! { "silent_seconds" => 39 }, None),
    );
    until_screen(&mut h, "✓ the peer is back (12:00:40)").await;
    assert!(!h.screen().contains("gone silent for"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn details_show_in_the_feed_and_the_history_in_the_snapshot_pane() {
    let tmp = tempfile::tempdir().unwrap();
    let (parent, child) = rps_session(tmp.path(), "running");
    let mut h = console(tmp.path(), 120, 36);
    attach(&mut h, &parent, true).await;
    h.app.sessions.focus = Focus::Feed;
    append(
        &child.join("details.jsonl"),
        &line(obj! {
            "ts" => "2026-11-30T12:00:09.000000+00:00", "type" => "round_result", "round" => 2,
            "host_choice" => "scissors", "guest_choice" => "scissors", "winner" => "draw",
            "host_wins" => 0, "guest_wins" => 1, "game_over" => false, "game_winner" => "none",
            "summary" => "R2: Scissors vs Scissors -> draw (0-1)",
        }),
    );
    h.until(Duration::from_secs(5), |a| {
        a.sessions
            .attached
            .as_ref()
            .is_some_and(|a| a.aside.details.len() == 2)
    })
    .await;
    h.key(ch('d'));
    let s = h.screen();
    assert!(s.contains("details.jsonl (d: back to events)"), "{s}");
    assert!(
        s.contains("round_result: R2: Scissors vs Scissors -> draw (0-1)"),
        "{s}"
    );
    h.key(ch('H'));
    let s = h.screen();
    assert!(s.contains("History · 2"), "{s}");
    assert!(s.contains("guest (you) won"), "{s}");
    insta::assert_snapshot!("details_and_history", s);
    h.key(ch('d'));
    h.key(ch('H'));
    let s = h.screen();
    assert!(
        !s.contains("History ·") && !s.contains("details.jsonl (d"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_session_says_who_won_in_words() {
    let tmp = tempfile::tempdir().unwrap();
    let (parent, _) = rps_session(tmp.path(), "closed");
    let mut s = palaver::session::files::read_json_object(&parent.join("session.json")).unwrap();
    s.insert("winner", Value::from("guest"));
    s.insert("end_reason", Value::from("completed"));
    write(&parent.join("session.json"), Value::Object(s));
    let mut h = console(tmp.path(), 120, 36);
    attach(&mut h, &parent, false).await;
    until_screen(&mut h, "finished — you won").await;
    assert!(!h.screen().contains("closed completed"));
}

#[test]
fn every_bundled_game_has_meaningful_presets() {
    use palaver::tui::panes::editor::presets;
    for alias in [
        "rps-v1",
        "coin-flip-v1",
        "guess-number-v1",
        "weak-wins-all",
        "hero-duel-v1",
        "gomoku-v1",
        "connect4-v1",
        "reversi-v1",
    ] {
        let hooks = palaver::protocols::native_hooks_for_alias(alias).unwrap();
        let p = presets(hooks.decision_schema().as_ref());
        assert!(p.len() >= 2, "{alias}: {p:?}");
        assert!(
            p.iter().all(|(_, m)| m.get("mode").is_some()),
            "{alias}: every preset sets a mode: {p:?}"
        );
    }
    let c4 = palaver::protocols::native_hooks_for_alias("connect4-v1").unwrap();
    let p = presets(c4.decision_schema().as_ref());
    assert_eq!(p[0].1.get("mode").and_then(Value::as_str), Some("greedy"));
    let hero = palaver::protocols::native_hooks_for_alias("hero-duel-v1").unwrap();
    let p = presets(hero.decision_schema().as_ref());
    assert!(p.iter().all(|(_, m)| m.get("policy").is_none()), "{p:?}");
    let coin = palaver::protocols::native_hooks_for_alias("coin-flip-v1").unwrap();
    let p = presets(coin.decision_schema().as_ref());
    assert!(p.iter().all(|(n, _)| !n.contains("counter")), "{p:?}");
}
