//! Coaching a running house game in the real console (issue 24), under
//! tmux: the user joins the house's rps-v1 in hybrid mode, so the strategy
//! plays, and steers it mid-game — by the whisper line (`w`) in one test,
//! by adopting the coach pane's reply (`c`, then ctrl-a) in the other. The
//! rounds after the whisper took effect must play what it said; the state
//! dir's events are the judge, not the screen.
//!
//! The house pauses between rounds (`[house] round_delay_seconds`, set to
//! 5 or 8 s here) so a person can coach between them. Needs tmux; `#[ignore]`d
//! and run by scripts/test, where a missing tmux fails them.

use crate::common;

use common::tmux::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const HOUSE_PAUSE: &str = "[house]\nround_delay_seconds = 5\n";
/// A coach's turn (an agent process) and the adoption need longer.
const HOUSE_PAUSE_COACH: &str = "[house]\nround_delay_seconds = 8\n";

/// From a fresh console: joins the house's rps-v1 in hybrid mode and waits
/// for the first round's result in the feed.
fn join_house_rps_hybrid(c: &Console) {
    // The house's first invitations are in; rps-v1 may be below the
    // list's fold (the house keeps a table of each four-seat game too), so
    // filter for it and wait for it there.
    c.wait_for("house", Duration::from_secs(60));
    c.keys(&["/"]);
    c.type_text("rps");
    c.wait_until(
        "the invitations filtered to rps-v1",
        Duration::from_secs(60),
        POLL,
        |s| s.contains("Invitations (1)") && s.contains("/rps"),
    );
    c.keys(&["Enter"]);
    c.keys(&["Enter"]);
    c.wait_for("play as", Duration::from_secs(10));
    // Human is selected first; → selects hybrid.
    c.keys(&["Right"]);
    c.wait_for("coaching: the strategy plays", Duration::from_secs(5));
    c.keys(&["Enter"]);
    let s = c.wait_for("Round 1:", Duration::from_secs(30));
    assert!(s.contains("guest · hybrid"), "session pane:\n{s}");
}

/// Every events.jsonl under the console's one session dir, as JSON values.
fn session_events(data: &Path) -> Vec<Value> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "events.jsonl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&data.join("sessions"), &mut files);
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// (wire round, guest's choice) of every round_result the guest received.
fn guest_choices(events: &[Value]) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["type"] == "protocol_message" && e["data"]["direction"] == "received")
        .map(|e| &e["data"]["msg"])
        .filter(|m| m["action"] == "round_result")
        .filter_map(|m| Some((m["round"].as_u64()?, m["guest_choice"].as_str()?.to_owned())))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Waits for the game to end, then checks that the whisper took effect
/// before the last round and that every round from the one it took effect
/// in played `want`.
fn assert_rounds_follow_the_whisper(c: &Console, want: &str) {
    c.wait_until(
        "the session to finish",
        Duration::from_secs(60),
        POLL,
        |s| s.contains("session_ended"),
    );
    let events = session_events(&c.data_dir());
    let applied: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "whisper_applied")
        .collect();
    assert!(
        !applied.is_empty(),
        "no whisper_applied event; events:\n{events:#?}"
    );
    let from = applied
        .iter()
        .filter_map(|e| e["data"]["match_value"].as_u64())
        .min()
        .unwrap_or_else(|| panic!("whisper_applied without a round: {applied:?}"));
    let rounds = guest_choices(&events);
    println!("whisper took effect in wire round {from}; guest played {rounds:?}");
    assert_eq!(rounds.len(), 3, "best of 3 fixed rounds: {rounds:?}");
    assert!(
        from <= 2,
        "the whisper took effect only after the last round ({from})"
    );
    for (round, choice) in &rounds {
        if *round >= from {
            assert_eq!(
                choice,
                want,
                "round {} (wire {round}) after the whisper",
                round + 1
            );
        }
    }
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn whisper_always_paper_to_a_running_house_game() {
    require_tmux("whisper_always_paper_to_a_running_house_game");
    let _one = serial();
    let c = Console::start_with_config("whisper", Some(HOUSE_PAUSE));
    join_house_rps_hybrid(&c);
    c.keys(&["w"]);
    c.wait_for("Whisper", Duration::from_secs(5));
    c.type_text("always paper");
    let s = c.wait_for("persistent strategy: choice paper", Duration::from_secs(5));
    println!("preview:\n{s}");
    c.keys(&["Enter"]);
    let s = c.wait_for("took effect", Duration::from_secs(20));
    println!("took effect:\n{s}");
    assert_rounds_follow_the_whisper(&c, "paper");
    quit(&c);
    assert_clean_exit(&c);
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn adopt_the_coach_reply_in_a_running_house_game() {
    require_tmux("adopt_the_coach_reply_in_a_running_house_game");
    let _one = serial();
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/coach/fake_agent.py");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.log");
    let config = format!(
        "{HOUSE_PAUSE_COACH}[coach]\nagent = \"custom\"\ncommand = '{} --log {} --delay 0.02 --reply \"always scissors\" --ask {{prompt}}'\ntimeout_seconds = 30\n",
        fake.display(),
        log.display()
    );
    let c = Console::start_with_config("coachadopt", Some(&config));
    join_house_rps_hybrid(&c);
    c.keys(&["c"]);
    c.wait_for("Coach", Duration::from_secs(5));
    c.type_text("what should I play?");
    c.keys(&["Enter"]);
    let s = c.wait_for("always scissors", Duration::from_secs(20));
    assert!(s.contains("Coach here."), "the reply streamed in:\n{s}");
    // The turn is over once the pane offers to adopt it.
    c.wait_for("adopt sends this reply", Duration::from_secs(10));
    c.keys(&["C-a"]);
    let s = c.wait_for("adopted as a whisper", Duration::from_secs(10));
    println!("adopted:\n{s}");
    c.keys(&["Escape"]);
    assert_rounds_follow_the_whisper(&c, "scissors");
    // The agent ran once, in the coach's workspace, the prompt one argument.
    let rec: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .expect("agent.log")
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["files"], serde_json::json!(["COACH.md"]));
    let prompt = rec["argv"][1].as_str().unwrap();
    assert!(prompt.contains("## Current situation"), "{prompt}");
    assert!(prompt.ends_with("what should I play?"), "{prompt}");
    quit(&c);
    assert_clean_exit(&c);
}
