//! A tmux harness for end-to-end tests of the real binary: one tmux server
//! per test on its own socket, polling `capture-pane` (never a fixed
//! sleep), a wrapper that reports how the console left the terminal.
//! Needs `tmux`: the tests are `#[ignore]`d and run by scripts/test, where a
//! missing tmux fails them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_palaver");
pub const WIDTH: u16 = 100;
pub const HEIGHT: u16 = 30;
pub const POLL: Duration = Duration::from_millis(50);
/// The tmux session (and window) name inside each test's own server.
pub const SESSION: &str = "console";

/// One console at a time: three embedded communities at once on a small
/// machine would make the printed timings meaningless.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the console, then reports how it left the terminal: exit status and
/// whether the tty is back in cooked mode (`icanon`, `echo`), on the normal
/// screen where the dead pane (remain-on-exit) keeps it for us to read.
pub const WRAPPER: &str = r#"unset PALAVER_SERVER PALAVER_THEME
PALAVER_DATA_DIR="$2" PALAVER_CONFIG_DIR="$3" "$1"
s=$?
flags=$(stty -a 2>/dev/null | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' ')
printf '\n[palaver exited: %s] [tty: %s]\n' "$s" "$flags"
# A live pane for a moment: tmux hides the cursor of a dead one.
sleep 2
"#;

/// As [`WRAPPER`], running `palaver` with the arguments after the data
/// and config dirs.
pub const WRAPPER_ARGS: &str = r#"unset PALAVER_SERVER PALAVER_THEME
bin="$1"; data="$2"; config="$3"; shift 3
PALAVER_DATA_DIR="$data" PALAVER_CONFIG_DIR="$config" "$bin" "$@"
s=$?
flags=$(stty -a 2>/dev/null | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' ')
printf '\n[palaver exited: %s] [tty: %s]\n' "$s" "$flags"
sleep 2
"#;

pub fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Panics when tmux is missing: the tests that call this are `#[ignore]`d,
/// so they run only when asked for (`--include-ignored`, as scripts/test
/// does), and then a missing tmux is a failure, never a skip.
pub fn require_tmux(test: &str) {
    assert!(
        tmux_installed(),
        "{test}: tmux is not installed (apt-get install -y tmux, as .ci/run does)"
    );
}

/// The console running in its own tmux server; dropping it kills the server
/// (and waits for the console process to be gone).
pub struct Console {
    socket: String,
    conf: PathBuf,
    dir: tempfile::TempDir,
    /// When the console was started (for first-frame timings).
    pub spawned: Instant,
}

impl Console {
    /// Starts `palaver` (no arguments) with fresh data and config dirs in a
    /// detached `WIDTH`×`HEIGHT` tmux window.
    pub fn start(test: &str) -> Console {
        Console::start_with_config(test, None)
    }

    /// As [`Console::start`], with `config` as the config dir's config.toml.
    pub fn start_with_config(test: &str, config: Option<&str>) -> Console {
        Console::start_command(test, config, &[], |_| {})
    }

    /// `palaver ARGS…` in the window instead of the bare console, after
    /// `prepare` has seen the (empty) data dir.
    pub fn start_command(
        test: &str,
        config: Option<&str>,
        args: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> Console {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["data", "config"] {
            std::fs::create_dir(dir.path().join(d)).expect("mkdir");
        }
        if let Some(text) = config {
            std::fs::write(dir.path().join("config").join("config.toml"), text)
                .expect("config.toml");
        }
        let conf = dir.path().join("tmux.conf");
        // remain-on-exit: the pane outlives the console, so its exit status
        // and the screen it left behind can be read after `q`.
        std::fs::write(
            &conf,
            "set -sg escape-time 10\nset -g remain-on-exit on\nset -g status off\n",
        )
        .expect("tmux.conf");
        let mut c = Console {
            socket: format!("palaver-{test}-{}", std::process::id()),
            conf,
            dir,
            spawned: Instant::now(),
        };
        let (w, h) = (WIDTH.to_string(), HEIGHT.to_string());
        let data = c.data_dir();
        prepare(&data);
        let config = c.dir.path().join("config");
        c.spawned = Instant::now();
        let mut argv = vec![
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            &w,
            "-y",
            &h,
            "sh",
            "-c",
            if args.is_empty() {
                WRAPPER
            } else {
                WRAPPER_ARGS
            },
            "sh",
            BIN,
            data.to_str().expect("utf-8 path"),
            config.to_str().expect("utf-8 path"),
        ];
        argv.extend_from_slice(args);
        let o = c.tmux(&argv);
        assert!(
            o.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Also as a command, as documented (the config file already set it).
        c.tmux(&["set", "-sg", "escape-time", "10"]);
        c
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
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

    /// The screen as text, `None` once the tmux session is gone.
    pub fn capture(&self) -> Option<String> {
        let o = self.tmux(&["capture-pane", "-p", "-t", SESSION]);
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// A tmux format of the pane, e.g. `#{pane_dead}`.
    pub fn pane(&self, format: &str) -> String {
        let o = self.tmux(&["display-message", "-p", "-t", SESSION, format]);
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    pub fn dead(&self) -> bool {
        self.pane("#{pane_dead}") == "1"
    }

    /// Key names as tmux knows them (`Enter`, `Escape`, `q`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        let o = self.tmux(&args);
        assert!(o.status.success(), "send-keys {keys:?} failed");
    }

    /// Literal text.
    pub fn type_text(&self, text: &str) {
        let o = self.tmux(&["send-keys", "-t", SESSION, "-l", text]);
        assert!(o.status.success(), "send-keys -l {text:?} failed");
    }

    /// Polls the screen every `every` until `done` holds; on timeout (or if
    /// the console exits first) fails showing the last screen.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        every: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let end = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if let Some(s) = self.capture() {
                if done(&s) {
                    return self.settled(s, &done);
                }
                last = s;
            }
            if self.dead() {
                panic!(
                    "the console exited while waiting for {what}; last screen:\n{}",
                    self.capture().unwrap_or(last)
                );
            }
            if Instant::now() >= end {
                panic!("timed out after {timeout:?} waiting for {what}; last screen:\n{last}");
            }
            std::thread::sleep(every);
        }
    }

    /// A capture can land in the middle of a frame being drawn (the title
    /// there, the pane under it not yet): once `done` holds, capture again
    /// until two captures in a row agree and still satisfy it, for at most
    /// a second (a screen that keeps ticking returns its latest match).
    fn settled(&self, first: String, done: &impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(1);
        let mut prev = first;
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(40));
            match self.capture() {
                Some(s) if s == prev => return s,
                Some(s) if done(&s) => prev = s,
                _ => {}
            }
        }
        prev
    }

    pub fn wait_for(&self, text: &str, timeout: Duration) -> String {
        self.wait_until(&format!("{text:?}"), timeout, POLL, |s| s.contains(text))
    }

    /// Processes started in the pane (the wrapper's children), Linux only.
    pub fn pane_children(&self) -> Vec<u32> {
        let pid = self.pane("#{pane_pid}");
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let kids = self.pane_children();
        let socket = self.pane("#{socket_path}");
        let _ = self.tmux(&["kill-server"]);
        // tmux 3.3 leaves the socket file behind.
        if !socket.is_empty() {
            let _ = std::fs::remove_file(socket);
        }
        // The console gets SIGHUP and cancels its sessions; let it finish
        // before its data dir is removed under it.
        let end = Instant::now() + Duration::from_secs(5);
        while kids
            .iter()
            .any(|p| Path::new(&format!("/proc/{p}")).exists())
            && Instant::now() < end
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Presses q, and once more if the console asks because a session task is
/// still finishing. The question is a status line that a report arriving
/// at the same moment (the task's end) may replace before it is read, so a
/// console still up after a second presses q again: within five seconds of
/// the first that confirms, and a console that had nothing to ask has quit.
pub fn quit(c: &Console) {
    c.keys(&["q"]);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        match c.capture() {
            Some(s) if s.contains("quit again to end them") => {
                c.keys(&["q"]);
                return;
            }
            Some(s) if s.contains("[palaver exited") => return,
            None => return,
            _ if start.elapsed() > Duration::from_secs(1) => {
                let _ = c.tmux(&["send-keys", "-t", SESSION, "q"]);
                return;
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// After `q`: the process exited 0 and left the tty cooked and the normal
/// screen back (and should have shown the cursor again).
pub fn assert_clean_exit(c: &Console) {
    let after = c.wait_for("[palaver exited", Duration::from_secs(10));
    // Read while the wrapper still runs (a dead pane hides its cursor).
    let cursor = c.pane("#{cursor_flag}");
    assert!(
        after.contains("[palaver exited: 0]"),
        "exit status; screen after exit:\n{after}"
    );
    let tty = after
        .lines()
        .find_map(|l| l.split_once("[tty: ").map(|(_, t)| t.trim_end_matches(']')))
        .unwrap_or("");
    let flags: Vec<&str> = tty.split_whitespace().collect();
    assert!(
        flags.contains(&"icanon") && flags.contains(&"echo"),
        "the terminal was left in raw mode ({tty:?}); screen after exit:\n{after}"
    );
    assert_eq!(
        c.pane("#{alternate_on}"),
        "0",
        "still on the alternate screen"
    );
    // The cursor is visible again.
    assert_eq!(cursor, "1", "the console left the cursor hidden");
    // Nothing of the console's frame is left on the normal screen.
    assert!(
        !after.contains("Invitations") && !after.contains("Werewolf"),
        "screen after exit:\n{after}"
    );
}
