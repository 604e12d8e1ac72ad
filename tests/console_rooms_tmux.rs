//! A room end to end with the real binary in a real terminal (tmux): `palaver
//! serve`, a community room hosted by `palaver host community-room-v1
//! --direct` in the background, and the console (its config.toml naming
//! that server) joining it from the invitation list, sending a message with
//! the compose line, and the message reaching the host's snapshot.json.
//!
//! The harness is the one of tests/console_tmux.rs (one tmux server per test
//! on its own socket, polling `capture-pane`, never a fixed sleep), here with
//! a config dir written before the console starts. Needs `tmux`: the test is
//! `#[ignore]`d and runs under scripts/test (`--include-ignored`), where a
//! missing tmux fails it.

use crate::common;

use common::tmux::{POLL, require_tmux, serial};
use common::tmux_dirs::{Console, palaver, read_json, room_dir};
use common::{Kill, ok, read_until};
use std::io::BufReader;

use std::process::Stdio;
use std::time::{Duration, Instant};

#[ignore = "needs tmux: run scripts/test"]
#[test]
fn the_console_joins_a_room_and_its_message_reaches_the_host() {
    require_tmux("the_console_joins_a_room_and_its_message_reaches_the_host");
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (_serve, url) =
        common::palaver_serve(&root.join("community.sqlite"), &["--rate-limit", "0"]);

    // The host: a room on loopback, waiting for its first member.
    let host = root.join("host");
    ok(palaver(&host, &url).arg("init").output().unwrap(), "init");
    ok(
        palaver(&host, &url)
            .args(["register", "--nickname", "ada"])
            .output()
            .unwrap(),
        "register",
    );
    let mut child = palaver(&host, &url)
        .args([
            "host",
            "community-room-v1",
            "--direct",
            "--control-mode",
            "autonomous",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let _host = Kill(child);
    let mut seen = String::new();
    let post = read_until(&mut out, "post_id:", &mut seen);
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));

    // The console on that server, as config.toml says.
    let data = root.join("console");
    let config = root.join("config");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("server = \"{url}\"\nnickname = \"cleo\"\n"),
    )
    .unwrap();
    let c = Console::start("room", root, &data, &config);
    c.wait_until("the room's invitation", Duration::from_secs(60), |s| {
        s.contains("community-room-v1") && s.contains("ada")
    });
    let t0 = Instant::now();
    // The only invitation is selected: Enter opens the join dialog, Enter joins.
    c.keys(&["Enter"]);
    c.wait_until("the join dialog", Duration::from_secs(10), |s| {
        s.contains("play as")
    });
    c.keys(&["Enter"]);
    let s = c.wait_until("the room view", Duration::from_secs(60), |s| {
        s.contains("Community Room") && s.contains("Members (2)") && s.contains("you: seat 1")
    });
    println!(
        "joined post {post} in {:.1} s:\n{s}",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        s.contains("★ 0 ada"),
        "the owner leads, by its nickname:\n{s}"
    );
    assert!(s.contains("Community room"), "the room's topic:\n{s}");

    // The compose line has the keys: type, Enter.
    let text = "hello from the console, q and all";
    c.type_text(text);
    c.keys(&["Enter"]);
    let s = c.wait_until("the message in the stream", Duration::from_secs(30), |s| {
        s.contains(&format!("▸[1] you: {text}"))
    });
    println!("sent:\n{s}");
    let ours = room_dir(&data).expect("the console's room dir");
    let queued = std::fs::read_to_string(ours.join("group-actions.jsonl")).unwrap_or_default();
    assert!(
        queued.contains(r#"{"kind":"send","text":"hello from the console, q and all"}"#),
        "group-actions.jsonl: {queued}"
    );

    // The leader applied it: its own snapshot has the message, from us.
    let me = read_json(&data.join("key.json"))["public_key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let theirs = room_dir(&host).expect("the host's room dir");
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let snap = read_json(&theirs.join("snapshot.json"));
        let found = snap["group_view"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["kind"] == "message" && m["text"] == text && m["from"] == me.as_str());
        if found {
            break;
        }
        assert!(
            Instant::now() < end,
            "the host's snapshot lacks the message:\n{snap:#}"
        );
        std::thread::sleep(POLL);
    }

    // Esc leaves the compose line; q asks (the room runs here), q again quits.
    c.keys(&["Escape"]);
    c.keys(&["q"]);
    c.wait_until("the quit question", Duration::from_secs(10), |s| {
        s.contains("quit again to end them")
    });
    c.keys(&["q"]);
    let after = c.wait_until("the console's exit", Duration::from_secs(15), |s| {
        s.contains("[palaver exited")
    });
    assert!(after.contains("[palaver exited: 0]"), "{after}");
}
