//! The replay view with the real binary in a real terminal (tmux): a
//! connect4 session finished by `palaver protocol test --role guest` in the
//! console's data dir, picked in the sessions list, opened with R, stepped
//! through with the arrows, played to its end, and left with Esc.
//!
//! The harness is tests/common/tmux.rs (one tmux server per test on its own
//! socket, polling `capture-pane`). Needs `tmux`: `#[ignore]`d, run by
//! scripts/test (`--include-ignored`), where a missing tmux fails it.

mod common;

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
