//! A four-seat table over the wire, as its players live it: four processes
//! on loopback (a leader and three members, each with its own identity,
//! iroh endpoint and state dir) beside a `palaver serve`, one seeded
//! four-player-landlord-v1 match played to its end — palaver's table, then
//! the reference's (aigenora 0.1.4: `aigenora host` and three `aigenora
//! join`) on the same server in the same run.
//!
//! Every seat runs in the human control mode, and this bench is each
//! person: when its verified view (snapshot.json) says it is that seat's
//! turn, palaver's bot picks a move from that view and the bench appends it
//! to the seat's group-actions.jsonl (what `session action` and the console
//! do; one format for both clients).
//!
//! **action → every member's view**: from that append (this process's
//! clock) to the `ts` of the latest of the three members' events.jsonl
//! `group_frame_received` lines for the frame the action made (each member
//! checked the leader's signature and the frame chain, and wrote its
//! checkpoint, details and snapshot before the line). Includes the side's
//! poll of its action file, the input frame, the leader's rules, the signed
//! frames, each member's checks and files. Excludes the console and the
//! bench's own polling (the time is the member's, not when the bench saw
//! it). Median and 99th percentile over the match's actions. Target for
//! palaver: median ≤ 10 ms, p99 ≤ 30 ms.
//!
//! Run: `cargo build --release && cargo bench --bench tables_wire`, or the
//! driver unoptimised with `cargo test --bench tables_wire` (the processes
//! it measures are the release binary either way; `PALAVER_BIN` names
//! another binary; the reference's Python is
//! `PALAVER_REFERENCE_PYTHON` or target/reference-venv: without it the
//! bench says so and measures palaver alone, unless
//! `USER_FIGURES_REFERENCE=1` makes that an error).

mod support;

use palaver::json::{self, Value};
use palaver::protocols::tables::{Table, table_for_alias};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const TABLE: &str = "four-player-landlord-v1";
const OPTIONS: &str = r#"{"deal_seed":"wire-bench"}"#;
const WAIT: Duration = Duration::from_secs(120);

/// A child process, killed when dropped.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How to run one client's commands.
enum Client {
    Palaver(PathBuf),
    Reference(PathBuf),
}

impl Client {
    fn cmd(&self, url: &str, data: &Path, args: &[&str]) -> Command {
        match self {
            Client::Palaver(bin) => {
                let mut c = Command::new(bin);
                c.arg("--data-dir")
                    .arg(data)
                    .arg("--server")
                    .arg(url)
                    .args(args);
                c
            }
            Client::Reference(py) => {
                let mut c = Command::new(py);
                c.args(["-m", "aigenora"])
                    .args(args)
                    .arg("--server")
                    .arg(url)
                    .arg("--data-dir")
                    .arg(data);
                c
            }
        }
    }

    fn run(&self, url: &str, data: &Path, args: &[&str]) -> String {
        let mut c = self.cmd(url, data, args);
        if let Client::Reference(py) = self
            && args[0] == "init"
        {
            c = Command::new(py);
            c.args(["-m", "aigenora", "init", "--data-dir"]).arg(data);
        }
        let o = c.stdin(Stdio::null()).output().expect("run the client");
        assert!(
            o.status.success(),
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn host(&self) -> Vec<&'static str> {
        match self {
            Client::Palaver(_) => vec![
                "host",
                TABLE,
                "--direct",
                "--control-mode",
                "human",
                "--options",
                OPTIONS,
            ],
            Client::Reference(_) => vec!["host", "--control-mode", "human", "--no-web"],
        }
    }

    fn join<'a>(&self, post: &'a str) -> Vec<&'a str> {
        match self {
            Client::Palaver(_) => vec!["join", post, "--direct", "--control-mode", "human"],
            Client::Reference(_) => vec!["join", post, "--control-mode", "human", "--no-web"],
        }
    }
}

/// The session dir under a data dir once its snapshot shows a seat.
fn seat_dir(data: &Path) -> Option<(String, PathBuf)> {
    for e in std::fs::read_dir(data.join("sessions")).ok()?.flatten() {
        let dir = e.path();
        if let Some(pk) = snapshot(&dir).and_then(|s| {
            s.get("group_view")?
                .get("you")?
                .get_str("public_key")
                .map(str::to_owned)
        }) {
            return Some((pk, dir));
        }
    }
    None
}

fn snapshot(dir: &Path) -> Option<Value> {
    json::parse_str(&std::fs::read_to_string(dir.join("snapshot.json")).ok()?).ok()
}

fn seq_of(snap: &Value) -> Option<i64> {
    snap.get("group")?.get("seq")?.as_i64()
}

/// `HH:MM:SS.ffffff` of an ISO time, in seconds since midnight.
fn day_seconds(ts: &str) -> Option<f64> {
    palaver::utc::parse_iso_seconds(ts).map(|t| t.rem_euclid(86_400.0))
}

/// A member's events.jsonl read as it grows: when each frame arrived.
struct Frames {
    path: PathBuf,
    at: u64,
    partial: String,
    arrived: HashMap<i64, f64>,
}

impl Frames {
    fn new(dir: &Path) -> Frames {
        Frames {
            path: dir.join("events.jsonl"),
            at: 0,
            partial: String::new(),
            arrived: HashMap::new(),
        }
    }

    fn poll(&mut self) {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.at)).is_err() {
            return;
        }
        let mut more = String::new();
        let Ok(n) = f.read_to_string(&mut more) else {
            return;
        };
        self.at += n as u64;
        self.partial.push_str(&more);
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            let Ok(ev) = json::parse_str(line.trim()) else {
                continue;
            };
            if ev.get_str("type") != Some("group_frame_received") {
                continue;
            }
            let seq = ev.get("data").and_then(|d| d.get("seq")?.as_i64());
            let at = ev.get_str("ts").and_then(day_seconds);
            if let (Some(seq), Some(at)) = (seq, at) {
                self.arrived.insert(seq, at);
            }
        }
    }
}

/// One match at a table of `client`'s: the latency of every action.
fn one_table(client: &Client, bin: &Path, root: &Path) -> Vec<f64> {
    let db = root.join("db.sqlite");
    let (serve, url) = support::serve(bin, &db);
    let _serve = Kill(serve);
    let seats: Vec<PathBuf> = (0..4).map(|n| root.join(format!("seat-{n}"))).collect();
    for (n, d) in seats.iter().enumerate() {
        client.run(&url, d, &["init"]);
        client.run(&url, d, &["register", "--nickname", &format!("seat{n}")]);
    }
    let mut host_args = client.host();
    let proto;
    if let Client::Reference(_) = client {
        proto = Client::Palaver(bin.to_owned()).run(&url, &seats[0], &["protocol", "path", TABLE]);
        host_args.extend(["--protocol-dir", proto.trim(), "--options", OPTIONS]);
    }
    let mut host = client
        .cmd(&url, &seats[0], &host_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the host");
    let mut out = BufReader::new(host.stdout.take().expect("stdout"));
    let _host = Kill(host);
    let post = loop {
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).expect("host stdout") > 0,
            "the host ended before its post_id"
        );
        if let Some(p) = l.trim().strip_prefix("post_id:") {
            break p.trim().to_owned();
        }
    };
    let _members: Vec<Kill> = seats[1..]
        .iter()
        .map(|d| {
            Kill(
                client
                    .cmd(&url, d, &client.join(&post))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start a member"),
            )
        })
        .collect();
    // Every seat's state dir, by its public key.
    let began = Instant::now();
    let mut dirs: HashMap<String, PathBuf> = HashMap::new();
    while dirs.len() < 4 {
        assert!(began.elapsed() < WAIT, "the four seats did not sit down");
        for d in &seats {
            if let Some((pk, dir)) = seat_dir(d) {
                dirs.insert(pk, dir);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let leader = seat_dir(&seats[0]).expect("the leader's dir").1;
    let mut members: Vec<Frames> = seats[1..]
        .iter()
        .map(|d| Frames::new(&seat_dir(d).expect("a member's dir").1))
        .collect();
    let rules: Box<dyn Table> = table_for_alias(TABLE, &json::Map::new()).expect("rules");
    let mut latencies = Vec::new();
    // The frame the last action made: snapshots are replaced at most every
    // 10 ms, so one older than it is not the table as it is now.
    let mut made = 0;
    loop {
        assert!(began.elapsed() < WAIT * 5, "the match did not finish");
        let Some(snap) = snapshot(&leader) else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        if snap.get("completed") == Some(&Value::Bool(true)) {
            break;
        }
        let (Some(seq), Some(current)) = (
            seq_of(&snap).filter(|s| *s >= made),
            snap.get("group_view")
                .and_then(|v| v.get_str("current_player"))
                .map(str::to_owned),
        ) else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        // The player's own verified view, once it has the latest frame.
        let dir = dirs.get(&current).expect("the current player's dir");
        let Some(view) = snapshot(dir)
            .filter(|s| seq_of(s) == Some(seq))
            .and_then(|s| s.get("group_view").cloned())
        else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let Some(action) = rules.bot_action(&view) else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let sent =
            day_seconds(&palaver::utc::iso_at(SystemTime::now())).expect("now as a time of day");
        palaver::services::group::outbox::append_action(dir, &action).expect("append the action");
        let next = seq + 1;
        let waited = Instant::now();
        loop {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "frame {next} did not reach every member"
            );
            members.iter_mut().for_each(Frames::poll);
            if members.iter().all(|m| m.arrived.contains_key(&next)) {
                break;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        let last = members
            .iter()
            .map(|m| m.arrived[&next])
            .fold(f64::MIN, f64::max);
        let mut ms = (last - sent) * 1e3;
        if ms < -43_200_000.0 {
            ms += 86_400_000.0; // past midnight
        }
        assert!(ms >= 0.0, "frame {next} arrived before its action was sent");
        made = next;
        latencies.push(ms);
    }
    latencies
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn report(who: &str, mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let (p50, p99) = (pct(&ms, 0.5), pct(&ms, 0.99));
    println!(
        "{who:<10} action → every member's view: median {p50:>6.1} ms   p99 {p99:>6.1} ms   (max {:.1} ms, {} actions)",
        ms.last().copied().unwrap_or(f64::NAN),
        ms.len()
    );
    (p50, p99)
}

fn main() {
    let bin = support::binary();
    println!("{TABLE}, four processes on loopback, one seeded match each:");
    let tmp = tempfile::tempdir().expect("tempdir");
    let ours = one_table(
        &Client::Palaver(bin.clone()),
        &bin,
        &tmp.path().join("palaver"),
    );
    let (p50, p99) = report("palaver", ours);
    println!(
        "  target: median ≤ 10 ms, p99 ≤ 30 ms — {}",
        if p50 <= 10.0 && p99 <= 30.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    match support::reference_python() {
        Some(py) => {
            let theirs = one_table(&Client::Reference(py), &bin, &tmp.path().join("reference"));
            let (r50, _) = report("reference", theirs);
            println!(
                "  palaver's median is {:.1}x the reference's speed",
                r50 / p50
            );
        }
        None => println!("reference: no Python with aigenora (see benches/support); not measured"),
    }
}
