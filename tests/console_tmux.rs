//! The console end to end: the real binary in a real terminal (tmux), with
//! keys sent and the screen read back as a user would see it.
//!
//! Needs `tmux` (`apt-get install -y tmux`; `.ci/run` installs it). Without
//! it the tests print a note and pass, unless `CI` is set: then they fail.
//!
//! Each test owns a tmux server on its own socket (`tmux -L <name>`), killed
//! when the test ends, pass or fail. Nothing waits with a fixed sleep: every
//! wait polls `capture-pane` until the text shows or a timeout passes, and a
//! timeout prints the last screen. The tests run one at a time (a lock) so
//! the timings they print are not skewed by each other.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;
const POLL: Duration = Duration::from_millis(50);
/// The tmux session (and window) name inside each test's own server.
const SESSION: &str = "console";

/// One console at a time: three embedded communities at once on a small
/// machine would make the printed timings meaningless.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the console, then reports how it left the terminal: exit status and
/// whether the tty is back in cooked mode (`icanon`, `echo`), on the normal
/// screen where the dead pane (remain-on-exit) keeps it for us to read.
const WRAPPER: &str = r#"unset PALAVER_SERVER PALAVER_THEME
PALAVER_DATA_DIR="$2" PALAVER_CONFIG_DIR="$3" "$1"
s=$?
flags=$(stty -a 2>/dev/null | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' ')
printf '\n[palaver exited: %s] [tty: %s]\n' "$s" "$flags"
# A live pane for a moment: tmux hides the cursor of a dead one.
sleep 2
"#;

fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `false` (after a note) when the test cannot run here; fails under CI.
fn tmux_or_skip(test: &str) -> bool {
    if tmux_installed() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: tmux is not installed, and CI is set so this is a failure, not a skip; \
             install it (`apt-get install -y tmux`, as .ci/run does)"
        );
    }
    eprintln!("note: {test} skipped: tmux is not installed (apt-get install -y tmux)");
    false
}

/// The console running in its own tmux server; dropping it kills the server
/// (and waits for the console process to be gone).
struct Console {
    socket: String,
    conf: PathBuf,
    dir: tempfile::TempDir,
    spawned: Instant,
}

impl Console {
    /// Starts `palaver` (no arguments) with fresh data and config dirs in a
    /// detached `WIDTH`×`HEIGHT` tmux window.
    fn start(test: &str) -> Console {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["data", "config"] {
            std::fs::create_dir(dir.path().join(d)).expect("mkdir");
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
        let config = c.dir.path().join("config");
        c.spawned = Instant::now();
        let o = c.tmux(&[
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
            WRAPPER,
            "sh",
            BIN,
            data.to_str().expect("utf-8 path"),
            config.to_str().expect("utf-8 path"),
        ]);
        assert!(
            o.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Also as a command, as documented (the config file already set it).
        c.tmux(&["set", "-sg", "escape-time", "10"]);
        c
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
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

    /// The screen as text, `None` once the tmux session is gone.
    fn capture(&self) -> Option<String> {
        let o = self.tmux(&["capture-pane", "-p", "-t", SESSION]);
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// A tmux format of the pane, e.g. `#{pane_dead}`.
    fn pane(&self, format: &str) -> String {
        let o = self.tmux(&["display-message", "-p", "-t", SESSION, format]);
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    fn dead(&self) -> bool {
        self.pane("#{pane_dead}") == "1"
    }

    /// Key names as tmux knows them (`Enter`, `Escape`, `q`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        let o = self.tmux(&args);
        assert!(o.status.success(), "send-keys {keys:?} failed");
    }

    /// Literal text.
    fn type_text(&self, text: &str) {
        let o = self.tmux(&["send-keys", "-t", SESSION, "-l", text]);
        assert!(o.status.success(), "send-keys -l {text:?} failed");
    }

    /// Polls the screen every `every` until `done` holds; on timeout (or if
    /// the console exits first) fails showing the last screen.
    fn wait_until(
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
                    return s;
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

    fn wait_for(&self, text: &str, timeout: Duration) -> String {
        self.wait_until(&format!("{text:?}"), timeout, POLL, |s| s.contains(text))
    }

    /// Processes started in the pane (the wrapper's children), Linux only.
    fn pane_children(&self) -> Vec<u32> {
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

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// From a fresh console: finds the house's rps-v1 invitation with `/rps`,
/// opens the Join dialog, joins in human mode, and waits for the first
/// decision prompt. Returns that screen.
fn join_house_rps(c: &Console) -> String {
    c.wait_for("rps-v1", Duration::from_secs(60));
    c.keys(&["/"]);
    c.type_text("rps");
    c.wait_until(
        "the invitations filtered to rps-v1",
        Duration::from_secs(10),
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
    let s = c.wait_for("Decide: round 0 (human)", Duration::from_secs(30));
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

/// Presses q, and once more if the console asks because a session task is
/// still finishing.
fn quit(c: &Console) {
    c.keys(&["q"]);
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        match c.capture() {
            Some(s) if s.contains("quit again to end them") => {
                c.keys(&["q"]);
                return;
            }
            Some(s) if s.contains("[palaver exited") => return,
            None => return,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// After `q`: the process exited 0 and left the tty cooked and the normal
/// screen back (and should have shown the cursor again).
fn assert_clean_exit(c: &Console) {
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
        !after.contains("Invitations"),
        "screen after exit:\n{after}"
    );
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

#[test]
fn join_the_house_rps_and_play_three_rounds() {
    if !tmux_or_skip("join_the_house_rps_and_play_three_rounds") {
        return;
    }
    let _one = serial();
    let c = Console::start("rps3");
    join_house_rps(&c);

    for (round, key) in ["1", "2", "3"].into_iter().enumerate() {
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
                && field(s, "session").is_some_and(|v| v.starts_with("closed"))
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

#[test]
fn a_second_terminal_decision_shows_in_the_console() {
    if !tmux_or_skip("a_second_terminal_decision_shows_in_the_console") {
        return;
    }
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
        s.contains("Decide: round 0"),
        "the prompt it shows in:\n{s}"
    );
    assert!(
        latency < Duration::from_secs(5),
        "the console took {latency:?} to show a decision made in another terminal"
    );
    // The engine took it: the guest revealed paper and round 1 opened.
    let s = c.wait_for("Decide: round 1 (human)", Duration::from_secs(30));
    assert!(s.contains("→ Round 1: reveals paper"), "feed:\n{s}");

    // Quitting mid-session asks first, then cancels it and exits cleanly.
    c.keys(&["q"]);
    c.wait_for("quit again to end them", Duration::from_secs(10));
    c.keys(&["q"]);
    assert_clean_exit(&c);
}

#[test]
fn first_frame_shows_quickly() {
    if !tmux_or_skip("first_frame_shows_quickly") {
        return;
    }
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
