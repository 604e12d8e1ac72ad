//! The console in its own tmux server on a data dir and a config dir a
//! test prepares (the room and table tests in a real terminal): one tmux
//! server per test on its own socket, polling `capture-pane`, never a fixed
//! sleep; and the little the tests read from a room's state dir.

use super::tmux::{BIN, POLL, SESSION, WRAPPER};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The console in its own tmux server, on a data dir and a config dir
/// prepared by the test; dropping it kills the server.
pub struct Console {
    socket: String,
    conf: PathBuf,
}

impl Console {
    pub fn start(test: &str, root: &Path, data: &Path, config: &Path) -> Console {
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

    pub fn tmux(&self, args: &[&str]) -> Output {
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

    pub fn capture(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-t", SESSION]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success(), "send-keys {keys:?}");
    }

    pub fn type_text(&self, text: &str) {
        assert!(
            self.tmux(&["send-keys", "-t", SESSION, "-l", text])
                .status
                .success()
        );
    }

    pub fn wait_until(&self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
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

pub fn palaver(data: &Path, url: &str) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("PALAVER_SERVER")
        .env_remove("RUST_BACKTRACE")
        .arg("--data-dir")
        .arg(data)
        .arg("--server")
        .arg(url);
    c
}

pub fn read_json(path: &Path) -> serde_json::Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The one room dir under `<data>/sessions`, once there is one.
pub fn room_dir(data: &Path) -> Option<PathBuf> {
    std::fs::read_dir(data.join("sessions"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("-group-"))
        })
}
