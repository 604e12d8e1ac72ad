//! The werewolf screen end to end: the real binary in a real terminal
//! (tmux) — F3, watch a 5-seat bot game to its winner, quit cleanly.
//!
//! The harness is the one of tests/console_tmux.rs (one tmux server per
//! test on its own socket, polling `capture-pane`, never a fixed sleep).
//! Needs `tmux`: the test is `#[ignore]`d and runs under scripts/test
//! (`--include-ignored`), where a missing tmux fails it.

use crate::common;

use common::tmux::*;
use std::time::{Duration, Instant};

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn watch_a_five_seat_bot_game_to_its_winner() {
    require_tmux("watch_a_five_seat_bot_game_to_its_winner");
    let _one = serial();
    let c = Console::start("wolf");
    c.wait_for(" palaver ", Duration::from_secs(30));
    println!(
        "first frame after {:.1} ms",
        c.spawned.elapsed().as_secs_f64() * 1e3
    );
    c.keys(&["F3"]);
    c.wait_for("Werewolf games (AIWolf NLP)", Duration::from_secs(10));
    c.keys(&["w"]);
    c.wait_for("How many seats?", Duration::from_secs(10));
    // 5 seats is the first choice.
    c.keys(&["Enter"]);
    let t0 = Instant::now();
    let s = c.wait_for("watching 5 bots", Duration::from_secs(10));
    assert!(
        s.contains("speed 4/s"),
        "a watched game is replayed at a reading pace:\n{s}"
    );
    // The replay shows the days as they come, then the winner.
    c.wait_for("Day 1", Duration::from_secs(60));
    let end = c.wait_until("the winner banner", Duration::from_secs(120), POLL, |s| {
        s.contains("TEAM WINS") || s.contains("NO WINNER")
    });
    let took = t0.elapsed();
    println!("final screen:\n{end}");
    println!(
        "a 5-seat game watched to its end in {:.1} s at 4 events/s",
        took.as_secs_f64()
    );
    assert!(end.contains("Seats"), "{end}");
    assert!(end.contains("game over"), "{end}");
    assert!(
        end.contains("WEREWOLF") && end.contains("SEER"),
        "the god view shows the roles:\n{end}"
    );
    // Hide the roles, then quit cleanly from the werewolf screen.
    c.keys(&["r"]);
    c.wait_until("the roles hidden", Duration::from_secs(10), POLL, |s| {
        !s.contains("SEER")
    });
    quit(&c);
    assert_clean_exit(&c);
}
