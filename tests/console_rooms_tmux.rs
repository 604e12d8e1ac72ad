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

mod common;

use common::tmux::{BIN, POLL, SESSION, WRAPPER, require_tmux, serial};
use common::{Kill, ok, read_until};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The console in its own tmux server, on a data dir and a config dir
/// prepared by the test; dropping it kills the server.
struct Console {
    socket: String,
    conf: PathBuf,
}

impl Console {
    fn start(test: &str, root: &Path, data: &Path, config: &Path) -> Console {
        let conf = root.join("tmux.conf");
        std::fs::write(
            &conf,
            "set -sg escape-time 10\nset -g remain-on-exit on\nset -g status off\n",
        )
        .unwrap();
        let c = Console {
            socket: format!("palaver-{test}-{}", std::process::id()),
            conf,
        };
        let o = c.tmux(&[
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            "120",
            "-y",
            "36",
            "sh",
            "-c",
            WRAPPER,
            "sh",
            BIN,
            data.to_str().unwrap(),
            config.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        c
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .env_remove("TMUX")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg(&self.conf)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn capture(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-t", SESSION]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success(), "send-keys {keys:?}");
    }

    fn type_text(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", SESSION, "-l", text])
                .status
                .success()
        );
    }

    fn wait_until(&self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let s = self.capture();
            if done(&s) {
                return s;
            }
            if Instant::now() >= end {
                panic!("timed out after {timeout:?} waiting for {what}; last screen:\n{s}");
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let socket = String::from_utf8_lossy(
            &self
                .tmux(&["display-message", "-p", "-t", SESSION, "#{socket_path}"])
                .stdout,
        )
        .trim()
        .to_owned();
        let _ = self.tmux(&["kill-server"]);
        if !socket.is_empty() {
            let _ = std::fs::remove_file(socket);
        }
    }
}

fn palaver(data: &Path, url: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("PALAVER_SERVER")
        .env_remove("RUST_BACKTRACE")
        .arg("--data-dir")
        .arg(data)
        .arg("--server")
        .arg(url);
    c
}

fn read_json(path: &Path) -> serde_json::Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The one room dir under `<data>/sessions`, once there is one.
fn room_dir(data: &Path) -> Option<PathBuf> {
    std::fs::read_dir(data.join("sessions"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("-group-"))
        })
}

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
