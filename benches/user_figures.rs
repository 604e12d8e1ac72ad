//! What a user waits for, measured on the release binary as a user runs it:
//! a `palaver serve` on loopback, two identities registered on it, and RPS
//! (best_of 1, both sides `--control-mode autonomous`) between a host and a
//! join, every state file written. Each run is one of two layouts — the host
//! as a daemon (`host --daemon`) with `join` in the foreground, or `host` in
//! the foreground with `join --daemon` — with `--direct` and in the default
//! mode (n0's relays and discovery; offline here, so none is reachable).
//!
//! Figures, each a median over the runs (min and max beside it):
//! - **join start → first frame**: from spawning the `join` process (the
//!   foreground CLI, or the `join --daemon` launcher) to the `ts` of the first
//!   `protocol_message` in the guest's events.jsonl. Includes process start,
//!   fetching and checking the invitation, binding the endpoint, dialling and
//!   the session handshake (with its POST to the server); excludes the host.
//! - **session_ended → exit**, per side and layout: from the `ts` of the
//!   side's `session_ended` event to the moment its process is gone (a
//!   foreground process: `wait` returns; a daemon: its /proc entry is gone
//!   or a zombie, polled every 0.5 ms). Includes settling the session on the
//!   server, closing the iroh connection and endpoint, and process teardown.
//! - the size of the binary.
//! - **per round**: RPS `fixed_rounds` at 101 and 9,999 rounds (the
//!   contract's largest `best_of`) in the default control mode (hybrid, so
//!   every move opens a decision window and writes its files), `host
//!   --daemon` and `join` in the foreground, default network mode: the span
//!   from the host's first to its last `protocol_message` `ts` over the
//!   rounds. Includes framing, validation, both engines, every state file
//!   (events, snapshot, details, decision state/finalized/consumed) and the
//!   loopback QUIC path; excludes connecting and exiting.
//! - **peak RSS** of each side in the 9,999-round run (VmHWM, polled).
//! - **the reference**, when its venv is there (`PALAVER_REFERENCE_PYTHON`,
//!   else target/reference-venv; `USER_FIGURES_REFERENCE=1` makes a missing
//!   one an error): `aigenora host --daemon` and `aigenora join` over 101
//!   rounds in their default control mode on the same server, measured from
//!   its host's events.jsonl the same way, and the ratio of the medians.
//!
//! Every run also checks what must hold when both have exited: both sides
//! recorded `session_ended` with `completed: true`, the server holds the
//! session `closed` with a result from each side, and the host's frames all
//! reached the guest (its sent count equals the guest's received count).
//!
//! Run: `cargo build --release && cargo bench --bench user_figures`.
//! `PALAVER_BIN` names another binary; `USER_FIGURES_RUNS` sets the runs per
//! layout and mode (default 7). Wall-clock figures on a shared machine:
//! read medians, not single runs.

mod support;

use palaver::json::{self, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{binary, line, median, reference_python};

fn main() {
    let bin = binary();
    let runs: usize = std::env::var("USER_FIGURES_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(7);
    let size = std::fs::metadata(&bin)
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()))
        .len();
    println!("binary: {} ({:.1} MB)", bin.display(), size as f64 / 1e6);
    let w = World::new(&bin);
    for direct in [true, false] {
        let mode = if direct { "--direct" } else { "default mode" };
        let mut a = Vec::new();
        let mut b = Vec::new();
        for _ in 0..runs {
            a.push(w.host_daemon_join_cli(direct));
            b.push(w.host_cli_join_daemon(direct));
        }
        println!("\n{mode}, {runs} runs per layout (ms: median [min … max])");
        line(
            "join start → first frame (join CLI)",
            a.iter().map(|r| r.first_frame),
        );
        line(
            "join start → first frame (join --daemon)",
            b.iter().map(|r| r.first_frame),
        );
        line(
            "session_ended → exit: host daemon",
            a.iter().map(|r| r.host_exit),
        );
        line(
            "session_ended → exit: join CLI",
            a.iter().map(|r| r.join_exit),
        );
        line(
            "session_ended → exit: host CLI",
            b.iter().map(|r| r.host_exit),
        );
        line(
            "session_ended → exit: join daemon",
            b.iter().map(|r| r.join_exit),
        );
    }
    rounds(&w, runs);
}

/// The rounds section: RPS `fixed_rounds` at 101 and at 9,999 rounds (the
/// contract's largest `best_of`) in the default control mode (hybrid: every
/// move is a decision window with its files), host as a daemon and join in
/// the foreground, default network mode; then the reference pair the same
/// way at 101 rounds, when its venv is there.
fn rounds(w: &World, runs: usize) {
    println!(
        "\nRPS fixed_rounds, default control mode, host --daemon + join (ms: median [min … max])"
    );
    let short: Vec<Rounds> = (0..runs).map(|_| w.palaver_rounds(101)).collect();
    let long: Vec<Rounds> = (0..runs.min(3)).map(|_| w.palaver_rounds(9_999)).collect();
    line("per round, 101 rounds", short.iter().map(|r| r.per_round));
    line("per round, 9,999 rounds", long.iter().map(|r| r.per_round));
    line(
        "peak RSS MB, host, 9,999 rounds",
        long.iter().map(|r| r.host_rss_mb),
    );
    line(
        "peak RSS MB, join, 9,999 rounds",
        long.iter().map(|r| r.join_rss_mb),
    );
    let ours = median(short.iter().map(|r| r.per_round));
    match reference_python() {
        Some(py) => {
            let refs: Vec<f64> = (0..runs.min(3))
                .map(|_| w.reference_rounds(&py, 101))
                .collect();
            line("reference per round, 101 rounds", refs.iter().copied());
            println!(
                "  palaver is {:.1}× faster per round than the reference (medians)",
                median(refs.iter().copied()) / ours
            );
        }
        None => println!(
            "  the reference: not measured (no venv; run scripts/test once, or set PALAVER_REFERENCE_PYTHON)"
        ),
    }
}

/// One rounds run's figures.
struct Rounds {
    /// Milliseconds per round: the span of the host's protocol frames in its
    /// events.jsonl over the number of rounds.
    per_round: f64,
    host_rss_mb: f64,
    join_rss_mb: f64,
}

/// One run's figures, in milliseconds.
struct Run {
    first_frame: f64,
    host_exit: f64,
    join_exit: f64,
}

struct World {
    bin: PathBuf,
    url: String,
    db: PathBuf,
    host_dir: PathBuf,
    guest_dir: PathBuf,
    config: PathBuf,
    serve: Child,
    _tmp: tempfile::TempDir,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.serve.kill();
        let _ = self.serve.wait();
    }
}

impl World {
    fn new(bin: &Path) -> World {
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = support::serve(bin, &db);
        let config = tmp.path().join("config");
        std::fs::create_dir_all(&config).expect("config dir");
        let w = World {
            bin: bin.to_owned(),
            url,
            db,
            host_dir: tmp.path().join("host"),
            guest_dir: tmp.path().join("guest"),
            config,
            serve,
            _tmp: tmp,
        };
        for (dir, nick) in [(&w.host_dir, "bench-host"), (&w.guest_dir, "bench-guest")] {
            ok(w.palaver(dir, &["init"]).output().expect("init"), "init");
            ok(
                w.palaver(dir, &["register", "--nickname", nick])
                    .output()
                    .expect("register"),
                "register",
            );
        }
        w
    }

    /// A palaver command on `dir`, with an empty config dir (no relay URL
    /// from the user's config.toml) and no relay from the environment.
    fn palaver(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.env("PALAVER_CONFIG_DIR", &self.config)
            .env_remove("PALAVER_RELAY_URL")
            // A user's default environment: with RUST_BACKTRACE set, iroh's
            // failed relay lookups (offline) format their errors with
            // resolved backtraces, ~35 MB of symbol tables in each process.
            .env_remove("RUST_BACKTRACE")
            .arg("--data-dir")
            .arg(dir)
            .arg("--server")
            .arg(&self.url)
            .args(args);
        c
    }

    fn peer_args(direct: bool) -> Vec<&'static str> {
        let mut a = vec!["--control-mode", "autonomous"];
        if direct {
            a.push("--direct");
        }
        a
    }

    fn host_args(direct: bool, daemon: bool) -> Vec<&'static str> {
        let mut a = vec!["host", "rps-v1", "--options", r#"{"best_of":1}"#];
        a.extend(Self::peer_args(direct));
        if daemon {
            a.push("--daemon");
        }
        a
    }

    /// `host --daemon`, then `join` in the foreground.
    fn host_daemon_join_cli(&self, direct: bool) -> Run {
        let out = ok(
            self.palaver(&self.host_dir, &Self::host_args(direct, true))
                .output()
                .expect("host --daemon"),
            "host --daemon",
        );
        let started = launcher_json(&out);
        let post = field(&started, "post_id");
        let host_pid = pid(&started);
        let host_gone = watch_pid(host_pid);

        let mut args = vec!["join", post.as_str()];
        args.extend(Self::peer_args(direct));
        let t0 = epoch();
        let mut join = self
            .palaver(&self.guest_dir, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start join");
        let (stdout, stderr) = drain(&mut join);
        let status = join.wait().expect("wait for join");
        let join_exit = epoch();
        let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
        assert!(
            status.success(),
            "join failed ({status}):\n{stdout}\n{stderr}"
        );
        let host_exit = host_gone.join().expect("host watcher");
        let guest = state_dir(&stdout);
        let host = newest_session(&self.host_dir, "host");
        self.checked(&post, &host, &guest, t0, host_exit, join_exit)
    }

    /// `host` in the foreground, then `join --daemon`.
    fn host_cli_join_daemon(&self, direct: bool) -> Run {
        let mut host = self
            .palaver(&self.host_dir, &Self::host_args(direct, false))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start host");
        let mut hout = BufReader::new(host.stdout.take().expect("stdout"));
        let mut seen = String::new();
        let post = loop {
            let mut l = String::new();
            if hout.read_line(&mut l).expect("host stdout") == 0 {
                let _ = host.kill();
                let mut err = String::new();
                let _ = host.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("host ended before its invitation was up:\n{seen}\n{err}");
            }
            seen.push_str(&l);
            if let Some(p) = l.strip_prefix("post_id:") {
                break p.trim().to_owned();
            }
        };
        let herr = host.stderr.take().expect("stderr");
        let hrest = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = hout.read_to_string(&mut s);
            let mut e = String::new();
            let _ = BufReader::new(herr).read_to_string(&mut e);
            (s, e)
        });
        let host_done = std::thread::spawn(move || {
            let status = host.wait().expect("wait for host");
            (status, epoch())
        });

        let mut args = vec!["join", post.as_str()];
        args.extend(Self::peer_args(direct));
        args.push("--daemon");
        let t0 = epoch();
        let out = ok(
            self.palaver(&self.guest_dir, &args)
                .output()
                .expect("join --daemon"),
            "join --daemon",
        );
        let started = launcher_json(&out);
        let join_exit = watch_pid(pid(&started)).join().expect("join watcher");
        let guest = PathBuf::from(field(&started, "state_dir"));
        let (status, host_exit) = host_done.join().expect("host waiter");
        let (hout, herr) = hrest.join().expect("host output");
        assert!(
            status.success(),
            "host failed ({status}):\n{seen}{hout}\n{herr}"
        );
        let host = newest_session(&self.host_dir, "host");
        self.checked(&post, &host, &guest, t0, host_exit, join_exit)
    }

    /// Checks the run's records and computes its figures.
    fn checked(
        &self,
        post: &str,
        host: &Path,
        guest: &Path,
        t0: f64,
        host_exit: f64,
        join_exit: f64,
    ) -> Run {
        let h = Events::read(host);
        let g = Events::read(guest);
        let (status, reports) = self.server_record(post);
        assert_eq!(
            (status.as_str(), reports),
            ("closed", 2),
            "the server's record of {post} is not settled by both sides"
        );
        assert_eq!(
            h.sent, g.received,
            "the guest did not receive every frame the host sent"
        );
        assert_eq!(
            g.sent, h.received,
            "the host did not receive every frame the guest sent"
        );
        Run {
            first_frame: (g.first_frame - t0) * 1e3,
            host_exit: (host_exit - h.ended) * 1e3,
            join_exit: (join_exit - g.ended) * 1e3,
        }
    }

    /// RPS over `n` fixed rounds in the default control mode: `host
    /// --daemon`, `join` in the foreground, both watched for peak RSS.
    fn palaver_rounds(&self, n: u32) -> Rounds {
        let options = format!(r#"{{"best_of":{n},"termination":"fixed_rounds"}}"#);
        let out = ok(
            self.palaver(
                &self.host_dir,
                &["host", "rps-v1", "--options", &options, "--daemon"],
            )
            .output()
            .expect("host --daemon"),
            "host --daemon",
        );
        let started = launcher_json(&out);
        let post = field(&started, "post_id");
        let host_rss = watch_rss(pid(&started));
        let mut join = self
            .palaver(&self.guest_dir, &["join", post.as_str()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start join");
        let join_rss = watch_rss(join.id());
        let (stdout, stderr) = drain(&mut join);
        let status = join.wait().expect("wait for join");
        let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
        assert!(
            status.success(),
            "join failed ({status}):\n{stdout}\n{stderr}"
        );
        let host_rss_mb = host_rss.join().expect("host RSS watcher");
        let join_rss_mb = join_rss.join().expect("join RSS watcher");
        let host = newest_session(&self.host_dir, "host");
        let guest = state_dir(&stdout);
        let h = Events::read(&host);
        let g = Events::read(&guest);
        assert_eq!(h.sent, g.received, "frames lost host → guest");
        assert_eq!(g.sent, h.received, "frames lost guest → host");
        assert!(h.sent >= n as usize, "{n} rounds, {} frames sent", h.sent);
        Rounds {
            per_round: (h.last_frame - h.first_frame) * 1e3 / f64::from(n),
            host_rss_mb,
            join_rss_mb,
        }
    }

    /// The reference pair over `n` fixed rounds in its default control mode,
    /// the same way (`aigenora host --daemon`, `aigenora join`), on this
    /// world's server; milliseconds per round from its host's events.jsonl.
    fn reference_rounds(&self, py: &Path, n: u32) -> f64 {
        let root = self._tmp.path().join("reference");
        let (host_dir, guest_dir) = (root.join("host"), root.join("guest"));
        let aigenora = |dir: &Path, args: &[&str]| {
            let mut c = Command::new(py);
            c.args(["-m", "aigenora"])
                .args(args)
                .arg("--server")
                .arg(&self.url)
                .arg("--data-dir")
                .arg(dir);
            c
        };
        for (dir, nick) in [(&host_dir, "ref-host"), (&guest_dir, "ref-guest")] {
            if dir.join("key.json").is_file() {
                continue;
            }
            let mut init = Command::new(py);
            init.args(["-m", "aigenora", "init", "--data-dir"]).arg(dir);
            ok(init.output().expect("aigenora init"), "aigenora init");
            ok(
                aigenora(dir, &["register", "--nickname", nick])
                    .output()
                    .expect("aigenora register"),
                "aigenora register",
            );
        }
        // The reference's library takes the contract from the directory
        // palaver installs in the same layout.
        let spec_dir = ok(
            self.palaver(&host_dir, &["protocol", "path", "rps-v1"])
                .output()
                .expect("protocol path"),
            "protocol path",
        );
        let options = format!(r#"{{"best_of":{n},"termination":"fixed_rounds"}}"#);
        let out = ok(
            aigenora(
                &host_dir,
                &[
                    "host",
                    "--protocol-dir",
                    spec_dir.trim(),
                    "--no-web",
                    "--daemon",
                    "--options",
                    &options,
                ],
            )
            .output()
            .expect("aigenora host --daemon"),
            "aigenora host --daemon",
        );
        let started = launcher_json(&out);
        let post = field(&started, "post_id");
        ok(
            aigenora(&guest_dir, &["join", &post, "--no-web"])
                .output()
                .expect("aigenora join"),
            "aigenora join",
        );
        let (status, reports) = wait_settled(self, &post);
        assert_eq!(
            (status.as_str(), reports),
            ("closed", 2),
            "reference session {post}"
        );
        let h = Events::read(&newest_session(&host_dir, "host"));
        (h.last_frame - h.first_frame) * 1e3 / f64::from(n)
    }

    /// (status, number of result reports) of the one session of `post`.
    fn server_record(&self, post: &str) -> (String, i64) {
        let c = rusqlite::Connection::open(&self.db).expect("open the server's db");
        c.query_row(
            "SELECT status, (SELECT COUNT(*) FROM results r WHERE r.session_id = s.session_id) FROM sessions s WHERE post_id = ?1",
            [post],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap_or_else(|e| panic!("no session of {post} on the server: {e}"))
    }
}

/// What one side's events.jsonl says.
struct Events {
    first_frame: f64,
    last_frame: f64,
    ended: f64,
    sent: usize,
    received: usize,
}

impl Events {
    fn read(parent: &Path) -> Events {
        let path = parent.join("events.jsonl");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (mut first, mut last, mut ended, mut sent, mut received) = (None, None, None, 0, 0);
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            let v = json::parse_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display()));
            let ts = v.get("ts").and_then(Value::as_str).map(parse_iso);
            match v.get("type").and_then(Value::as_str) {
                Some("protocol_message") => {
                    first = first.or(ts);
                    last = ts.or(last);
                    match v
                        .get("data")
                        .and_then(|d| d.get("direction"))
                        .and_then(Value::as_str)
                    {
                        Some("sent") => sent += 1,
                        Some("received") => received += 1,
                        _ => {}
                    }
                }
                Some("session_ended") => {
                    let completed = v
                        .get("data")
                        .and_then(|d| d.get("completed"))
                        .and_then(Value::as_bool);
                    assert_eq!(completed, Some(true), "{}: {l}", path.display());
                    ended = ts;
                }
                _ => {}
            }
        }
        Events {
            first_frame: first.unwrap_or_else(|| panic!("{}: no protocol frame", path.display())),
            last_frame: last.unwrap_or_else(|| panic!("{}: no protocol frame", path.display())),
            ended: ended.unwrap_or_else(|| panic!("{}: no session_ended", path.display())),
            sent,
            received,
        }
    }
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`.
fn parse_iso(s: &str) -> f64 {
    palaver::utc::parse_iso_seconds(s).unwrap_or_else(|| panic!("not a UTC timestamp: {s}"))
}

fn epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn ok(o: std::process::Output, what: &str) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({}):\n{out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The JSON a `--daemon` launcher prints.
fn launcher_json(out: &str) -> serde_json::Value {
    let start = out.find('{').unwrap_or_else(|| panic!("no JSON in {out}"));
    serde_json::from_str(&out[start..]).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn field(v: &serde_json::Value, k: &str) -> String {
    v[k].as_str()
        .unwrap_or_else(|| panic!("no {k} in {v}"))
        .to_owned()
}

fn pid(v: &serde_json::Value) -> u32 {
    v["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or_else(|| panic!("no pid in {v}"))
}

/// Reads a child's stdout and stderr to the end on two threads.
fn drain(
    child: &mut Child,
) -> (
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
) {
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    (
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }),
    )
}

/// When a process that is not our child is gone (no /proc entry, or a
/// zombie), polled every 0.5 ms for at most 60 s.
fn watch_pid(pid: u32) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let stat = PathBuf::from(format!("/proc/{pid}/stat"));
        let start = Instant::now();
        loop {
            let gone = match std::fs::read_to_string(&stat) {
                Err(_) => true,
                // The state follows the command name's closing parenthesis.
                Ok(s) => s
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            };
            if gone {
                return epoch();
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "process {pid} still runs after 60 s"
            );
            std::thread::sleep(Duration::from_micros(500));
        }
    })
}

/// The peak RSS (VmHWM) of a process in MB, read every 2 ms until it is
/// gone (the last reading before it exits is its peak).
fn watch_rss(pid: u32) -> std::thread::JoinHandle<f64> {
    std::thread::spawn(move || {
        let status = PathBuf::from(format!("/proc/{pid}/status"));
        let mut peak_kb = 0u64;
        let start = Instant::now();
        while let Ok(s) = std::fs::read_to_string(&status) {
            let kb = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok());
            match kb {
                Some(kb) => peak_kb = peak_kb.max(kb),
                // A zombie has no memory lines left.
                None => break,
            }
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "process {pid} still runs after 600 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        peak_kb as f64 / 1024.0
    })
}

/// Waits (≤ 120 s) for the server to hold `post`'s session closed with a
/// result from each side.
fn wait_settled(w: &World, post: &str) -> (String, i64) {
    let start = Instant::now();
    loop {
        let rec = w.server_record(post);
        if rec.0 == "closed" && rec.1 >= 2 || start.elapsed() > Duration::from_secs(120) {
            return rec;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The parent state dir a foreground side printed.
fn state_dir(stdout: &str) -> PathBuf {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("session state:"))
        .and_then(|v| v.split_whitespace().next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no session state line in:\n{stdout}"))
}

/// The newest `<role>-<epoch_ms>` parent state dir under `data/sessions`.
fn newest_session(data: &Path, role: &str) -> PathBuf {
    let dir = data.join("sessions");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let ms: u64 = name.strip_prefix(role)?.strip_prefix('-')?.parse().ok()?;
            Some((ms, e.path()))
        })
        .max_by_key(|(ms, _)| *ms)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no {role} session under {}", dir.display()))
}
