//! The replay view with the real binary in a real terminal (tmux): a
//! connect4 session finished by `palaver protocol test --role guest` in the
//! console's data dir, picked in the sessions list, opened with R, stepped
//! through with the arrows, played to its end, and left with Esc; and a
//! werewolf game's .log written by `palaver wolf play --game-log`, opened
//! by its path with `o`.
//!
//! The harness is tests/common/tmux.rs (one tmux server per test on its own
//! socket, polling `capture-pane`). Needs `tmux`: `#[ignore]`d, run by
//! scripts/test (`--include-ignored`), where a missing tmux fails it.

use crate::common;

use common::tmux::{BIN, Console, assert_clean_exit, quit, require_tmux, serial};
use std::time::Duration;

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn open_a_finished_session_replay_and_step_through_it() {
    require_tmux("open_a_finished_session_replay_and_step_through_it");
    let _one = serial();
    let c = Console::start("replay");
    let data = c.data_dir();
    let o = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(&data)
        .args([
            "protocol",
            "test",
            "connect4-v1",
            "--role",
            "guest",
            "--control-mode",
            "autonomous",
            "--seed",
            "3",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The sessions list (refreshed every 2 s) shows it; focus it, open R.
    c.wait_for("Connect Four", Duration::from_secs(15));
    c.keys(&["Tab"]);
    c.keys(&["R"]);
    let s = c.wait_for("Replay · Connect Four as guest", Duration::from_secs(10));
    assert!(s.contains("step 1/"), "{s}");
    c.keys(&["Right", "Right", "Right"]);
    let s = c.wait_for("step 4/", Duration::from_secs(5));
    assert!(s.contains("⏸ paused"), "{s}");
    c.keys(&["Left"]);
    c.wait_for("step 3/", Duration::from_secs(5));
    // Faster, play: it plays to the end and stops there.
    c.keys(&["+", "+", "+", "+", "+", "+", "Space"]);
    let s = c.wait_for("session ended: completed", Duration::from_secs(20));
    assert!(s.contains("×64"), "{s}");
    c.wait_until(
        "the replay to stop at its end",
        Duration::from_secs(20),
        common::tmux::POLL,
        |s| s.contains("⏸ paused") && s.contains("▶") && s.contains("finished —"),
    );
    c.keys(&["Escape"]);
    c.wait_until(
        "the replay to close",
        Duration::from_secs(5),
        common::tmux::POLL,
        |s| !s.contains("Replay ·"),
    );
    quit(&c);
    assert_clean_exit(&c);
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn open_a_werewolf_game_log_by_its_path_and_replay_it() {
    require_tmux("open_a_werewolf_game_log_by_its_path_and_replay_it");
    let _one = serial();
    let c = Console::start("wolf-replay");
    // The game .log as `palaver wolf serve` writes it, from a bot game; the
    // name says nothing (the content tells a game log).
    let log = c.data_dir().join("game-7.txt");
    let o = std::process::Command::new(BIN)
        .args([
            "wolf",
            "play",
            "--players",
            "5",
            "--seed",
            "3",
            "--game-log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let winner = text.rsplit(',').next().unwrap().trim().to_owned();
    c.wait_for("Sessions", Duration::from_secs(15));
    c.keys(&["Tab"]);
    c.keys(&["o"]);
    c.wait_for("replay a bundle or a werewolf .log", Duration::from_secs(5));
    c.type_text(log.to_str().unwrap());
    c.keys(&["Enter"]);
    let s = c.wait_for("Replay · werewolf game, 5 agents", Duration::from_secs(10));
    assert!(s.contains("step 1/"), "{s}");
    assert!(s.contains("day 0 · day · 5 of 5 alive"), "{s}");
    assert!(s.contains(&format!("finished — {winner} won")), "{s}");
    c.keys(&["Right", "Right"]);
    c.wait_for("step 3/", Duration::from_secs(5));
    // The end: the result drawn in the day's pane.
    c.keys(&["End"]);
    let s = c.wait_for("game over", Duration::from_secs(5));
    assert!(s.contains(&format!("result: {winner} wins")), "{s}");
    c.keys(&["Escape"]);
    c.wait_until(
        "the replay to close",
        Duration::from_secs(5),
        common::tmux::POLL,
        |s| !s.contains("Replay ·"),
    );
    quit(&c);
    assert_clean_exit(&c);
}
