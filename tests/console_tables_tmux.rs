//! A card table end to end with the real binary in a real terminal (tmux):
//! `palaver serve`, `palaver host four-player-landlord-v1 --bots 3
//! --control-mode human` (the human seat at the table, three bots in the
//! others), and the console on the host's data dir attaching the table's
//! state dir (`o`), showing it as a table, and bidding with one key; the
//! bid reaches the leader (the host's snapshot.json has it) and the table's
//! log says so.
//!
//! The harness is the one of tests/console_rooms_tmux.rs (one tmux server
//! per test on its own socket, polling `capture-pane`, never a fixed
//! sleep). Needs `tmux`: the test is `#[ignore]`d and runs under
//! scripts/test (`--include-ignored`), where a missing tmux fails it.

use crate::common;

use common::tmux::{POLL, SESSION, require_tmux, serial};
use common::tmux_dirs::{Console, palaver, read_json};
use common::{Kill, ok, read_until};
use std::io::BufReader;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn the_console_bids_at_a_landlord_table_with_three_bots() {
    require_tmux("the_console_bids_at_a_landlord_table_with_three_bots");
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (_serve, url) =
        common::palaver_serve(&root.join("community.sqlite"), &["--rate-limit", "0"]);

    // The host: seat 0 is the person's, three bots take the others, and the
    // table starts at once. The console shares the host's data dir (its
    // identity, its sessions).
    let data = root.join("host");
    ok(palaver(&data, &url).arg("init").output().unwrap(), "init");
    ok(
        palaver(&data, &url)
            .args(["register", "--nickname", "ada"])
            .output()
            .unwrap(),
        "register",
    );
    let mut child = palaver(&data, &url)
        .args([
            "host",
            "four-player-landlord-v1",
            "--direct",
            "--bots",
            "3",
            "--control-mode",
            "human",
            "--options",
            r#"{"deal_seed":"console-tmux"}"#,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let _host = Kill(child);
    let mut seen = String::new();
    let state = read_until(&mut out, "session state:", &mut seen);
    let dir = PathBuf::from(state.split_whitespace().next().unwrap());
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));

    let config = root.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("server = \"{url}\"\nnickname = \"ada\"\n"),
    )
    .unwrap();
    let c = Console::start("table", root, &data, &config);
    c.wait_until("the console", Duration::from_secs(30), |s| {
        s.contains("Invitations")
    });
    // o attaches a state dir by path.
    c.keys(&["o"]);
    c.wait_until("the path box", Duration::from_secs(10), |s| {
        s.contains("Attach a state dir")
    });
    c.type_text(dir.to_str().unwrap());
    c.keys(&["Enter"]);
    let s = c.wait_until("the table, bidding", Duration::from_secs(60), |s| {
        s.contains("Four-player Landlord") && s.contains("your turn") && s.contains("[1 pass]")
    });
    println!("the table:\n{s}");
    // The bots' nicknames come from their session files, read about once a
    // second beside the frames: they may show a moment after the table.
    let s = c.wait_until(
        "the bots by their nicknames",
        Duration::from_secs(10),
        |s| s.contains("bot-1"),
    );
    assert!(s.contains("your hand 25 cards"), "{s}");

    // 1: the first choice, a pass (a bid of 0), queued as `session action`
    // queues it.
    c.keys(&["1"]);
    let me = read_json(&data.join("key.json"))["public_key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let snap = read_json(&dir.join("snapshot.json"));
        if snap["group_view"]["bids"][me.as_str()] == 0 {
            break;
        }
        assert!(
            Instant::now() < end,
            "the leader has not taken the bid:\n{snap:#}\nscreen:\n{}",
            c.capture()
        );
        std::thread::sleep(POLL);
    }
    let queued = std::fs::read_to_string(dir.join("group-actions.jsonl")).unwrap_or_default();
    assert!(
        queued.contains(r#"{"kind":"bid","value":0}"#),
        "group-actions.jsonl: {queued}"
    );
    let s = c.wait_until("the bid in the log", Duration::from_secs(30), |s| {
        s.contains("you pass the bid")
    });
    println!("after the bid:\n{s}");

    // q quits (the table runs in the host's process, not here).
    c.keys(&["q"]);
    let start = Instant::now();
    let after = c.wait_until("the console's exit", Duration::from_secs(15), |s| {
        if s.contains("quit again to end them") && start.elapsed() > Duration::from_millis(200) {
            let _ = c.tmux(&["send-keys", "-t", SESSION, "q"]);
        }
        s.contains("[palaver exited")
    });
    assert!(after.contains("[palaver exited: 0]"), "{after}");
}
