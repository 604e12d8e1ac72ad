//! The console end to end: the real binary in a real terminal (tmux), with
//! keys sent and the screen read back as a user would see it.
//!
//! Needs `tmux` (`apt-get install -y tmux`; `.ci/run` installs it). The tests
//! are `#[ignore]`d and run under scripts/test, where a missing tmux fails them.
//!
//! Each test owns a tmux server on its own socket (`tmux -L <name>`), killed
//! when the test ends, pass or fail. Nothing waits with a fixed sleep: every
//! wait polls `capture-pane` until the text shows or a timeout passes, and a
//! timeout prints the last screen. The tests run one at a time (a lock) so
//! the timings they print are not skewed by each other.

use crate::common;

use common::tmux::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// From a fresh console: finds the house's rps-v1 invitation with `/rps`,
/// opens the Join dialog, joins in human mode, and waits for the first
/// decision prompt. Returns that screen.
fn join_house_rps(c: &Console) -> String {
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
    // Enter ends the search, the next Enter opens the Join dialog.
    c.keys(&["Enter"]);
    c.keys(&["Enter"]);
    let dialog = c.wait_for("play as", Duration::from_secs(10));
    assert!(
        dialog.contains("rps-v1 hosted by house"),
        "join dialog:\n{dialog}"
    );
    assert!(
        dialog.contains("termination=fixed_rounds"),
        "join dialog:\n{dialog}"
    );
    // Enter joins in the selected mode, human by default.
    c.keys(&["Enter"]);
    let s = c.wait_for("Decide: round 1 (human)", Duration::from_secs(30));
    assert!(s.contains("guest · human"), "session pane:\n{s}");
    assert!(
        s.contains("[1 rock] [2 paper] [3 scissors]"),
        "prompt:\n{s}"
    );
    s
}

/// The value after `key` on the Session pane's line starting with it.
fn field<'a>(screen: &'a str, key: &str) -> Option<&'a str> {
    screen.lines().find_map(|l| {
        let (_, rest) = l.split_once("││")?;
        let rest = rest.strip_prefix(key)?;
        rest.starts_with(' ')
            .then(|| rest.trim().trim_end_matches('│').trim())
    })
}

/// `host N : guest M` from the score line.
fn score(screen: &str) -> (u32, u32) {
    let s = field(screen, "score").unwrap_or_else(|| panic!("no score line in:\n{screen}"));
    let nums: Vec<u32> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(nums.len(), 2, "score line {s:?}");
    (nums[0], nums[1])
}

/// The session dirs under `<data>/sessions/`.
fn session_dirs(data: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data.join("sessions"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn join_the_house_rps_and_play_three_rounds() {
    require_tmux("join_the_house_rps_and_play_three_rounds");
    let _one = serial();
    let c = Console::start("rps3");
    join_house_rps(&c);

    // Rounds read from 1 (the wire's round 0 is round 1).
    for (round, key) in ["1", "2", "3"].into_iter().enumerate() {
        let round = round + 1;
        c.wait_for(
            &format!("Decide: round {round} (human)"),
            Duration::from_secs(30),
        );
        c.keys(&[key]);
    }

    // The result is final once session.json is closed (a draw's winner
    // comes from there: the snapshot alone shows none).
    let end = c.wait_until(
        "game_over, session_ended, the session closed and a winner",
        Duration::from_secs(30),
        POLL,
        |s| {
            field(s, "phase").is_some_and(|p| p.starts_with("game_over"))
                && s.contains("session_ended")
                && field(s, "session")
                    .is_some_and(|v| v.starts_with("finished") || v.starts_with("ended"))
                && field(s, "winner").is_some()
        },
    );
    println!("final screen:\n{end}");
    let phase = field(&end, "phase").unwrap();
    assert!(
        phase.contains("round 3"),
        "fixed_rounds best of 3 plays exactly three rounds; phase {phase:?}"
    );
    assert!(end.contains("Round 3: host "), "third result in the feed");
    assert!(
        !end.contains("Round 4"),
        "a fourth round was played:\n{end}"
    );
    let (host, guest) = score(&end);
    assert!(host + guest <= 3, "score {host}:{guest} in three rounds");
    let winner = field(&end, "winner").map(|w| w.split_whitespace().next().unwrap());
    match winner {
        Some("host") => assert!(host > guest, "host wins {host}:{guest}"),
        Some("draw") => assert_eq!(host, guest, "a draw at {host}:{guest}"),
        Some("guest") => {
            assert!(guest > host, "guest wins {host}:{guest}");
            assert!(field(&end, "winner").unwrap().contains("(you)"));
        }
        w => panic!("unexpected winner {w:?}"),
    }
    println!(
        "result: winner {}, score host {host} : guest {guest}",
        winner.unwrap()
    );

    // The session is over: one q quits (after a moment the console may
    // still count the finishing task; then it asks once more).
    quit(&c);
    assert_clean_exit(&c);

    let data = c.data_dir();
    let sessions = session_dirs(&data);
    assert_eq!(sessions.len(), 1, "session dirs: {sessions:?}");
    let sj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sessions[0].join("session.json")).expect("session.json"),
    )
    .expect("session.json is JSON");
    assert_eq!(sj["status"], "closed", "session.json: {sj:#}");
    assert_eq!(sj["local_control_mode"], "human", "session.json: {sj:#}");
    assert_eq!(
        sj["winner"].as_str(),
        winner,
        "session.json and the screen disagree on the winner"
    );
    assert!(
        data.join("console.log").is_file(),
        "console.log in {data:?}"
    );
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn a_second_terminal_decision_shows_in_the_console() {
    require_tmux("a_second_terminal_decision_shows_in_the_console");
    let _one = serial();
    let c = Console::start("decide");
    join_house_rps(&c);

    let data = c.data_dir();
    let sessions = session_dirs(&data);
    assert_eq!(sessions.len(), 1, "session dirs: {sessions:?}");
    let t0 = Instant::now();
    let o = Command::new(BIN)
        .args(["session", "decide", "--decision", r#"{"choice":"paper"}"#])
        .arg(&sessions[0])
        .env("PALAVER_DATA_DIR", &data)
        .env_remove("PALAVER_SERVER")
        .output()
        .expect("run palaver session decide");
    let exited = Instant::now();
    assert!(
        o.status.success(),
        "palaver session decide: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let want = "on file: choice=paper (from cli)";
    let s = c.wait_until(
        &format!("{want:?}"),
        Duration::from_secs(10),
        Duration::from_millis(5),
        |s| s.contains(want),
    );
    let latency = exited.elapsed();
    println!(
        "decide process: {:.1} ms; decide exit -> console shows it: {:.1} ms",
        (exited - t0).as_secs_f64() * 1e3,
        latency.as_secs_f64() * 1e3
    );
    assert!(
        s.contains("Decide: round 1"),
        "the prompt it shows in:\n{s}"
    );
    assert!(
        latency < Duration::from_secs(5),
        "the console took {latency:?} to show a decision made in another terminal"
    );
    // The engine took it: the guest revealed paper and round 2 opened.
    let s = c.wait_for("Decide: round 2 (human)", Duration::from_secs(30));
    assert!(s.contains("→ Round 1: reveals paper"), "feed:\n{s}");

    // Quitting mid-session asks first, then cancels it and exits cleanly.
    c.keys(&["q"]);
    c.wait_for("quit again to end them", Duration::from_secs(10));
    c.keys(&["q"]);
    assert_clean_exit(&c);
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn first_frame_shows_quickly() {
    require_tmux("first_frame_shows_quickly");
    let _one = serial();
    let c = Console::start("frame");
    let s = c.wait_until(
        "the first frame",
        Duration::from_secs(30),
        Duration::from_millis(5),
        |s| s.contains(" palaver "),
    );
    let took = c.spawned.elapsed();
    println!(
        "first frame {:.1} ms after spawning (tmux new-session included)",
        took.as_secs_f64() * 1e3
    );
    assert!(s.contains("Invitations"), "first frame:\n{s}");
    assert!(took < Duration::from_secs(5), "first frame took {took:?}");
}

/// Kills a session daemon this test started, if it still runs when the
/// test ends (a failed test must not leave it waiting for decisions).
struct Daemon(u32);

impl Drop for Daemon {
    fn drop(&mut self) {
        if Path::new(&format!("/proc/{}", self.0)).exists() {
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }
}

/// The keys that play the first legal action of `snap` through the card
/// prompt: `d` draws, `p` passes; a card is picked by its number in the
/// hand (or left where the prompt picks it, the first card that plays)
/// and played with Enter, and an 8 then calls hearts with `h`.
fn card_keys(snap: &serde_json::Value) -> Vec<String> {
    let legal = &snap["legal_actions"][0];
    match legal["kind"].as_str() {
        Some("draw") => vec!["d".into()],
        Some("pass") => vec!["p".into()],
        _ => {
            let id = legal["id_b"].as_str().unwrap_or_default();
            let at = snap["hand"]
                .as_array()
                .and_then(|h| h.iter().position(|c| c["id_b"].as_str() == Some(id)));
            let mut keys = Vec::new();
            if let Some(i) = at.filter(|i| *i < 9) {
                keys.push((i + 1).to_string());
            }
            keys.push("Enter".into());
            if legal["call_suit_required"] == true {
                keys.push("h".into());
            }
            keys
        }
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn play_crazy_eights_in_human_mode_through_the_card_prompt() {
    require_tmux("play_crazy_eights_in_human_mode_through_the_card_prompt");
    let _one = serial();
    let c = Console::start("cards");
    let data = c.data_dir();
    // Our side in human mode against a bot, run by a session daemon.
    let o = Command::new(BIN)
        .args(["protocol", "test", "crazy-eights-v1", "--role", "guest"])
        .args(["--control-mode", "human", "--daemon", "--seed", "7"])
        .args(["--options", r#"{"hand_size":3}"#])
        // The bot waits for us as long as a person may think.
        .args(["--peer-timeout", "120"])
        .env("PALAVER_DATA_DIR", &data)
        .env_remove("PALAVER_SERVER")
        .output()
        .expect("run palaver protocol test --daemon");
    assert!(
        o.status.success(),
        "palaver protocol test --daemon: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let started: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let _daemon = Daemon(started["pid"].as_u64().unwrap_or(0) as u32);
    let parent = PathBuf::from(started["state_dir"].as_str().expect("state_dir"));
    let child = PathBuf::from(started["engine_state_dir"].as_str().expect("engine dir"));

    // Attach it from the Sessions list; its first decision takes the focus.
    c.wait_for("Crazy Eights", Duration::from_secs(30));
    c.keys(&["Tab"]);
    c.keys(&["Enter"]);
    // The window may open a moment before the snapshot with the table is
    // written out; the prompt waits for it.
    c.wait_until(
        "the first decision with the card table",
        Duration::from_secs(30),
        POLL,
        |s| s.contains("Decide: action_seq 0 (human)") && s.contains("top ") && s.contains("hand "),
    );

    let decided = |seq: i64| {
        std::fs::read_to_string(child.join("decision").join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains(&format!("\"action_seq\":{seq},")))
    };
    let running = || read_json(&parent.join("session.json"))["status"] == "running";
    let mut played = 0;
    let end = Instant::now() + Duration::from_secs(240);
    while running() {
        assert!(
            Instant::now() < end,
            "the match did not end:\n{:?}",
            c.capture()
        );
        let snap = read_json(&child.join("snapshot.json"));
        let seq = snap["action_seq"].as_i64().unwrap_or(-1);
        let open = snap["phase"] == "action_required"
            && !decided(seq)
            && c.capture()
                .is_some_and(|s| s.contains(&format!("Decide: action_seq {seq} (human)")));
        if !open {
            std::thread::sleep(POLL);
            continue;
        }
        for k in card_keys(&snap) {
            c.keys(&[k.as_str()]);
        }
        // The prompt refuses a table it has not read yet: then try again.
        let until = Instant::now() + Duration::from_secs(5);
        while !decided(seq) && running() && Instant::now() < until {
            std::thread::sleep(POLL);
        }
        if decided(seq) {
            played += 1;
        }
    }
    assert!(played > 0, "no decision went through the prompt");
    let events = std::fs::read_to_string(parent.join("events.jsonl")).unwrap_or_default();
    let hash = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "mp_terminal_receipt_verified")
        .and_then(|e| e["data"]["transcript_hash"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no receipt in the events:\n{events}"));
    let end = c.wait_until(
        "the audit, the hash and the result on the card table",
        Duration::from_secs(30),
        POLL,
        |s| {
            s.contains("audit   passed")
                && s.contains(&hash[..40])
                && s.contains("result  ")
                && field(s, "session")
                    .is_some_and(|v| v.starts_with("finished") || v.starts_with("ended"))
                && (field(s, "winner").is_some() || s.contains("result  no winner"))
        },
    );
    println!("{played} decisions through the card prompt; final screen:\n{end}");
    let sj = read_json(&parent.join("session.json"));
    assert_eq!(sj["status"], "closed", "session.json: {sj:#}");

    quit(&c);
    assert_clean_exit(&c);
}

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn the_inbox_and_the_leaderboard_screens() {
    require_tmux("the_inbox_and_the_leaderboard_screens");
    let _one = serial();
    let c = Console::start("social");
    c.wait_for("house", Duration::from_secs(60));
    // F5: the inbox, listed from the embedded community.
    c.keys(&["F5"]);
    let s = c.wait_for("unread", Duration::from_secs(30));
    assert!(s.contains("No messages"), "inbox:\n{s}");
    // n composes; a recipient that is not a key is refused here.
    c.keys(&["n"]);
    c.wait_for("Write a sealed message", Duration::from_secs(10));
    c.type_text("abc");
    c.keys(&["Tab"]);
    c.type_text("hi");
    c.keys(&["Enter"]);
    let s = c.wait_for("64-hex public key", Duration::from_secs(10));
    assert!(s.contains("2/256"), "the count:\n{s}");
    c.keys(&["Escape"]);
    // F6: the leaderboard, its boards toggled with t.
    c.keys(&["F6"]);
    c.wait_for("ELO leaderboard · page 1", Duration::from_secs(30));
    c.keys(&["t"]);
    let s = c.wait_for("karma leaderboard · page 1", Duration::from_secs(30));
    assert!(!s.contains("cannot read"), "leaderboard:\n{s}");
    quit(&c);
    assert_clean_exit(&c);
}

/// `palaver host --control-mode human` in a terminal opens the console on
/// its own session (which runs in the background and outlives the
/// console); `--no-console` keeps the command in the terminal.
#[ignore = "needs tmux: run scripts/test"]
#[test]
fn a_human_host_in_a_terminal_opens_the_console_on_its_session() {
    require_tmux("a_human_host_in_a_terminal_opens_the_console_on_its_session");
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (_serve, url) =
        common::palaver_serve(&tmp.path().join("community.sqlite"), &["--rate-limit", "0"]);
    let prepare = |data: &Path| {
        for args in [&["init"][..], &["register", "--nickname", "seat"][..]] {
            let o = Command::new(BIN)
                .arg("--data-dir")
                .arg(data)
                .args(["--server", &url])
                .args(args)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    };
    let host = [
        "--server",
        url.as_str(),
        "host",
        "rps-v1",
        "--control-mode",
        "human",
        "--direct",
    ];
    let c = Console::start_command("human-host", None, &host, prepare);
    // The console, attached to the waiting host's session.
    let screen = c.wait_for("Rock-Paper-Scissors", Duration::from_secs(60));
    assert!(screen.contains("Sessions (1)"), "{screen}");
    quit(&c);
    let screen = c.wait_for("[palaver exited: 0]", Duration::from_secs(20));
    assert!(
        screen.contains("the session goes on in the background"),
        "{screen}"
    );
    // The session is there, running, and can be stopped.
    let dirs = session_dirs(&c.data_dir());
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let o = Command::new(BIN)
        .arg("--data-dir")
        .arg(c.data_dir())
        .args(["session", "abort"])
        .arg(&dirs[0])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    drop(c);

    // --no-console: the command stays in the terminal and says where it is.
    let mut args = host.to_vec();
    args.push("--no-console");
    let c = Console::start_command("human-host-nc", None, &args, prepare);
    let screen = c.wait_for("post_id:", Duration::from_secs(60));
    assert!(!screen.contains("Sessions ("), "{screen}");
}
