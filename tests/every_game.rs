//! Every two-party bundled game played over the wire: iroh on loopback,
//! introduced by a real `palaver serve`, with the real binaries. palaver
//! with palaver (the card games many times over, since their endings race:
//! both sides send a receipt and then read the other's), palaver hosting the
//! reference client, and the reference hosting palaver.
//!
//! After each match, every record must say the same thing: each palaver
//! side's session.json is `closed` and `completed` with the winner it
//! printed, and the server holds the session `closed` with one report from
//! each side naming that same winner (a chat has no winner and no report).
//!
//! `PALAVER_ENDINGS_MATCHES` sets how many palaver-with-palaver matches each
//! card game plays (default 12; the note of issue #35 records a run of 200).

use crate::common;

use common::{Kill, ok, read_until};
use palaver::json::{self, Value};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

/// Every two-party game palaver bundles, with options that keep a match
/// short, the chat (it ends when one side says `/quit`) and the one service,
/// trusted-agent-task-v1 (its generic exchange: two status queries, two
/// answers; no winner, so no report, like the chat).
const GAMES: &[(&str, Option<&str>)] = &[
    ("rps-v1", Some(r#"{"best_of":3}"#)),
    ("coin-flip-v1", None),
    ("guess-number-v1", None),
    ("weak-wins-all", None),
    ("hero-duel-v1", None),
    ("gomoku-v1", None),
    ("connect4-v1", None),
    ("reversi-v1", None),
    ("crazy-eights-v1", Some(r#"{"hand_size":5}"#)),
    ("briscola-v1", None),
    ("human-chat-v1", None),
    ("trusted-agent-task-v1", None),
];

const CARDS: &[(&str, Option<&str>)] = &[
    ("crazy-eights-v1", Some(r#"{"hand_size":5}"#)),
    ("briscola-v1", None),
];

/// How long one side of one match may take.
const MATCH_WITHIN: Duration = Duration::from_secs(120);

struct World {
    url: String,
    db: PathBuf,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("community.sqlite");
        let (serve, url) = common::palaver_serve(&db, &["--rate-limit", "0"]);
        World {
            url,
            db,
            tmp,
            _serve: serve,
        }
    }

    /// A file for a process's stderr, named after `what` (left in the
    /// world's temporary dir; the test's panic message names the process).
    fn log(&self, what: &str) -> std::fs::File {
        std::fs::File::create(self.log_path(what)).unwrap()
    }

    fn log_path(&self, what: &str) -> PathBuf {
        let logs = self.tmp.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        logs.join(format!("{what}.err.log"))
    }

    fn dir(&self, who: &str) -> PathBuf {
        self.tmp.path().join(who)
    }

    fn palaver(&self, who: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(self.dir(who))
            .arg("--server")
            .arg(&self.url)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// A registered palaver identity named `who`; its public key.
    fn palaver_identity(&self, who: &str) -> String {
        ok(
            self.palaver(who, &["init"]).output().unwrap(),
            "palaver init",
        );
        ok(
            self.palaver(who, &["register", "--nickname", who])
                .output()
                .unwrap(),
            "palaver register",
        );
        public_key(&self.dir(who))
    }

    /// A registered reference identity named `who`; its public key.
    fn reference_identity(&self, py: &str, who: &str) -> String {
        common::reference_identity(py, &self.url, &self.dir(who), who);
        public_key(&self.dir(who))
    }

    /// The server's record of the session of `post_id` once it is closed
    /// with `reports` winner reports: each reporter's winner.
    fn reports(&self, post_id: &str, reports: i64) -> Vec<(String, String)> {
        let (status, _, n) = common::settled(&self.db, post_id, reports);
        assert_eq!((status.as_str(), n), ("closed", reports), "{post_id}");
        let c = rusqlite::Connection::open(&self.db).unwrap();
        let mut q = c
            .prepare(
                "SELECT r.reporter, r.winner FROM results r JOIN sessions s ON s.session_id = r.session_id WHERE s.post_id = ?1 ORDER BY r.reporter",
            )
            .unwrap();
        q.query_map([post_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

fn public_key(dir: &Path) -> String {
    let key = json::parse_str(&std::fs::read_to_string(dir.join("key.json")).unwrap()).unwrap();
    key.get_str("public_key").unwrap().to_owned()
}

/// A palaver side's record: (status, completed, winner) from the
/// session.json of the parent state dir a `session state: DIR …` line names.
fn palaver_record(printed: &str) -> (String, bool, Option<String>) {
    let parent = common::played::printed_state_dir(printed);
    let s =
        json::parse_str(&std::fs::read_to_string(parent.join("session.json")).unwrap()).unwrap();
    (
        s.get_str("status").unwrap_or("").to_owned(),
        s.get("completed") == Some(&Value::Bool(true)),
        s.get_str("winner").map(str::to_owned),
    )
}

/// The winner a palaver side printed (`completed: completed, winner: W`).
fn printed_winner(printed: &str) -> Option<String> {
    let w = common::winner_line(printed);
    (w != "none").then_some(w)
}

/// Writes a chat line into the inbox of the engine dir under `parent`.
fn say_in_inbox(printed: &str, text: &str) {
    let parent = common::played::printed_state_dir(printed);
    let engine = std::fs::read_dir(&parent)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap_or(parent);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(engine.join("inbox.jsonl"))
        .unwrap();
    writeln!(f, r#"{{"text": "{text}"}}"#).unwrap();
}

/// The args of a palaver host of `alias`, autonomous, direct.
fn host_args<'a>(alias: &'a str, options: Option<&'a str>) -> Vec<&'a str> {
    let mut a = vec![
        "host",
        alias,
        "--direct",
        "--control-mode",
        "autonomous",
        "--invitation-ttl-minutes",
        "30",
    ];
    if let Some(o) = options {
        a.extend(["--options", o]);
    }
    a
}

/// One match of `alias` between palaver `host` and palaver `guest`; checks
/// both records and the server's. Returns the agreed winner.
fn palaver_with_palaver(
    w: &World,
    host: (&str, &str),
    guest: (&str, &str),
    alias: &str,
    options: Option<&str>,
) -> Option<String> {
    let (hseen, _) = palaver_with_palaver_seen(w, host, guest, alias, options);
    palaver_record(&hseen).2
}

/// [`palaver_with_palaver`], returning what the host and the guest printed.
fn palaver_with_palaver_seen(
    w: &World,
    (host, host_key): (&str, &str),
    (guest, guest_key): (&str, &str),
    alias: &str,
    options: Option<&str>,
) -> (String, String) {
    let mut h = Kill(
        w.palaver(host, &host_args(alias, options))
            .stdout(Stdio::piped())
            .stderr(w.log(&format!("{host}-{alias}")))
            .spawn()
            .unwrap(),
    );
    let mut hout = BufReader::new(h.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let hlog = w.log_path(&format!("{host}-{alias}"));
    let post = read_or_explain(&mut hout, "post_id:", &mut hseen, &hlog);
    let mut g = Kill(
        w.palaver(
            guest,
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        )
        .stdout(Stdio::piped())
        .stderr(w.log(&format!("{guest}-{post}")))
        .spawn()
        .unwrap(),
    );
    let mut gout = BufReader::new(g.0.stdout.take().unwrap());
    let mut gseen = String::new();
    if alias == "human-chat-v1" {
        read_until(&mut gout, "session state:", &mut gseen);
        say_in_inbox(&gseen, "hello from the guest");
        std::thread::sleep(Duration::from_millis(300));
        say_in_inbox(&gseen, "/quit");
    }
    let what = format!("{alias}: palaver join {post}");
    let gseen = finish_logged(
        g,
        gout,
        gseen,
        &what,
        &w.log_path(&format!("{guest}-{post}")),
    );
    let what = format!("{alias}: palaver host {post}");
    let hseen = finish_logged(h, hout, hseen, &what, &hlog);
    let ctx = format!("{alias} {post}\n--- host:\n{hseen}\n--- guest:\n{gseen}");
    let (hs, hc, hw) = palaver_record(&hseen);
    let (gs, gc, gw) = palaver_record(&gseen);
    assert_eq!(
        (hs.as_str(), hc, gs.as_str(), gc),
        ("closed", true, "closed", true),
        "both records must say closed and completed: {ctx}"
    );
    assert_eq!(hw, gw, "the two records name different winners: {ctx}");
    assert_eq!(hw, printed_winner(&hseen), "{ctx}");
    assert_eq!(gw, printed_winner(&gseen), "{ctx}");
    let reports = w.reports(&post, if hw.is_some() { 2 } else { 0 });
    if let Some(winner) = &hw {
        let mut want = vec![
            (host_key.to_owned(), winner.clone()),
            (guest_key.to_owned(), winner.clone()),
        ];
        want.sort();
        assert_eq!(reports, want, "the server's reports: {ctx}");
    }
    (hseen, gseen)
}

/// Waits for a palaver side to exit successfully within [`MATCH_WITHIN`];
/// all it printed (its stderr is in the log file the world gave it).
fn finish_logged(
    k: Kill,
    out: BufReader<std::process::ChildStdout>,
    seen: String,
    what: &str,
    log: &Path,
) -> String {
    let (status, seen) = common::finish_status(k, out, seen, what, MATCH_WITHIN);
    assert!(
        status.success(),
        "{what} exited with {status}:\n{seen}\n--- stderr:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    seen
}

/// Reads up to the line starting with `prefix` (its rest), or fails with
/// what the process printed on both streams.
fn read_or_explain(
    out: &mut BufReader<std::process::ChildStdout>,
    prefix: &str,
    seen: &mut String,
    log: &Path,
) -> String {
    use std::io::BufRead;
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            panic!(
                "the process ended before printing {prefix:?}:\n{seen}\n--- stderr:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        seen.push_str(&line);
        if let Some(rest) = line.trim_end().strip_prefix(prefix) {
            return rest.trim().to_owned();
        }
    }
}

/// Every two-party game, palaver with palaver, once each; then the card
/// games again and again.
#[test]
fn every_game_palaver_with_palaver_ends_true_on_both_sides() {
    let w = World::new();
    let hk = w.palaver_identity("h");
    let gk = w.palaver_identity("g");
    for (alias, options) in GAMES {
        palaver_with_palaver(&w, ("h", &hk), ("g", &gk), alias, *options);
    }
}

/// The card games' simultaneous endings, many times, two matches at a time
/// (each pair of identities plays one match at once).
#[test]
fn card_game_endings_hold_over_many_matches() {
    let matches: usize = std::env::var("PALAVER_ENDINGS_MATCHES")
        .ok()
        .map(|v| v.parse().expect("PALAVER_ENDINGS_MATCHES: a whole number"))
        .unwrap_or(12);
    let w = World::new();
    let pairs: Vec<(String, String, String, String)> = (0..2)
        .map(|i| {
            let (h, g) = (format!("h{i}"), format!("g{i}"));
            let (hk, gk) = (w.palaver_identity(&h), w.palaver_identity(&g));
            (h, hk, g, gk)
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let winners = std::sync::Mutex::new(std::collections::BTreeMap::<String, usize>::new());
    std::thread::scope(|s| {
        for (h, hk, g, gk) in &pairs {
            let (w, next, winners) = (&w, &next, &winners);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= matches * CARDS.len() {
                        return;
                    }
                    let (alias, options) = CARDS[i % CARDS.len()];
                    let winner = palaver_with_palaver(w, (h, hk), (g, gk), alias, options);
                    let key = format!("{alias} {}", winner.as_deref().unwrap_or("none"));
                    *winners.lock().unwrap().entry(key).or_default() += 1;
                }
            });
        }
    });
    eprintln!(
        "{} card matches ended closed on both sides: {:?}",
        matches * CARDS.len(),
        winners.into_inner().unwrap()
    );
}

/// palaver hosts each game and the reference client joins; then the
/// reference hosts and palaver joins.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn every_game_with_the_reference_both_ways_ends_true() {
    let py = common::reference_python();
    let w = World::new();
    let pk = w.palaver_identity("pal");
    let rk = w.reference_identity(&py, "ref");
    for (alias, options) in GAMES {
        palaver_hosts_reference_joins(&w, &py, (&pk, &rk), alias, *options);
        reference_hosts_palaver_joins(&w, &py, (&pk, &rk), alias, *options);
    }
}

/// trusted-agent-task-v1 alone, palaver with palaver (it is in [`GAMES`]
/// too; this runs it without the rest).
#[test]
fn trusted_agent_task_palaver_with_palaver() {
    let w = World::new();
    let hk = w.palaver_identity("h");
    let gk = w.palaver_identity("g");
    let winner = palaver_with_palaver(&w, ("h", &hk), ("g", &gk), "trusted-agent-task-v1", None);
    assert_eq!(winner, None, "a task session has no winner");
}

/// trusted-agent-task-v1 alone with the reference, both ways.
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn trusted_agent_task_with_the_reference_both_ways() {
    let py = common::reference_python();
    let w = World::new();
    let pk = w.palaver_identity("pal");
    let rk = w.reference_identity(&py, "ref");
    let alias = "trusted-agent-task-v1";
    palaver_hosts_reference_joins(&w, &py, (&pk, &rk), alias, None);
    reference_hosts_palaver_joins(&w, &py, (&pk, &rk), alias, None);
}

/// The reference's record, as the server holds it: its report agrees with
/// palaver's record.
fn check_with_reference(
    w: &World,
    post: &str,
    pal_seen: &str,
    (pal_key, ref_key): (&str, &str),
    ctx: &str,
) {
    let (s, c, winner) = palaver_record(pal_seen);
    assert_eq!((s.as_str(), c), ("closed", true), "palaver's record: {ctx}");
    assert_eq!(winner, printed_winner(pal_seen), "{ctx}");
    let reports = w.reports(post, if winner.is_some() { 2 } else { 0 });
    if let Some(winner) = &winner {
        let mut want = vec![
            (pal_key.to_owned(), winner.clone()),
            (ref_key.to_owned(), winner.clone()),
        ];
        want.sort();
        assert_eq!(reports, want, "the server's reports: {ctx}");
    }
}

fn palaver_hosts_reference_joins(
    w: &World,
    py: &str,
    keys: (&str, &str),
    alias: &str,
    options: Option<&str>,
) {
    let mut h = Kill(
        w.palaver("pal", &host_args(alias, options))
            .stdout(Stdio::piped())
            .stderr(w.log("pal-host"))
            .spawn()
            .unwrap(),
    );
    let mut hout = BufReader::new(h.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let mut j = common::aigenora(
        py,
        &w.url,
        &w.dir("ref"),
        &["join", &post, "--control-mode", "autonomous", "--no-web"],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = j.stdin.take().unwrap();
    let chat = alias == "human-chat-v1";
    let feeder = std::thread::spawn(move || {
        if chat {
            for l in ["hello from the reference", "/quit"] {
                std::thread::sleep(Duration::from_millis(1500));
                let _ = writeln!(stdin, "{l}");
            }
        }
    });
    let o = j.wait_with_output().unwrap();
    feeder.join().unwrap();
    let ref_out = ok(o, &format!("aigenora join {alias}"));
    let what = format!("{alias}: palaver host {post}");
    let hseen = finish_logged(h, hout, hseen, &what, &w.log_path("pal-host"));
    let ctx =
        format!("{alias} {post} (palaver hosts)\n--- palaver:\n{hseen}\n--- reference:\n{ref_out}");
    check_with_reference(w, &post, &hseen, keys, &ctx);
}

fn reference_hosts_palaver_joins(
    w: &World,
    py: &str,
    keys: (&str, &str),
    alias: &str,
    options: Option<&str>,
) {
    let dir = ok(
        w.palaver("ref", &["protocol", "path", alias])
            .output()
            .unwrap(),
        "protocol path",
    )
    .trim()
    .to_owned();
    let mut args = vec![
        "host",
        "--protocol-dir",
        &dir,
        "--control-mode",
        "autonomous",
        "--no-web",
    ];
    if let Some(o) = options {
        args.extend(["--options", o]);
    }
    let mut h = Kill(
        common::aigenora(py, &w.url, &w.dir("ref"), &args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut hout = BufReader::new(h.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let mut g = Kill(
        w.palaver(
            "pal",
            &["join", &post, "--direct", "--control-mode", "autonomous"],
        )
        .stdout(Stdio::piped())
        .stderr(w.log("pal-join"))
        .spawn()
        .unwrap(),
    );
    let mut gout = BufReader::new(g.0.stdout.take().unwrap());
    let mut gseen = String::new();
    if alias == "human-chat-v1" {
        read_until(&mut gout, "session state:", &mut gseen);
        say_in_inbox(&gseen, "hello from palaver");
        std::thread::sleep(Duration::from_millis(1000));
        say_in_inbox(&gseen, "/quit");
    }
    let what = format!("{alias}: palaver join {post}");
    let gseen = finish_logged(g, gout, gseen, &what, &w.log_path("pal-join"));
    let what = format!("aigenora host {alias}");
    let (status, hseen) = common::finish_status(h, hout, hseen, &what, MATCH_WITHIN);
    common::reference_host_ended(status, &what, &hseen, || {
        common::settled(&w.db, &post, 0).0 == "closed"
    });
    let ctx =
        format!("{alias} {post} (reference hosts)\n--- palaver:\n{gseen}\n--- reference:\n{hseen}");
    check_with_reference(w, &post, &gseen, keys, &ctx);
}

/// tank-battle-v1 (authoritative_realtime, at its real 10 Hz) keeps short.
const TANK: (&str, Option<&str>) = ("tank-battle-v1", Some(r#"{"max_ticks":30,"team_size":2}"#));

/// The engine state dir (`host-…`/`guest-…`) of a side from what it printed.
fn engine_dir(printed: &str) -> PathBuf {
    let parent = common::played::printed_state_dir(printed);
    std::fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("realtime-frames.jsonl").exists())
        .unwrap_or_else(|| panic!("no realtime journal under {}", parent.display()))
}

fn journal(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("realtime-frames.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v = json::parse_str(l).unwrap();
            let f = v.get("frame").unwrap();
            palaver::json::canonical::to_string(f)
        })
        .collect()
}

/// The tank battle over iroh, palaver with palaver, three matches: both
/// records and the server agree, both journals hold the same verified
/// chain, and the guest's audit passed.
#[test]
fn tank_battle_palaver_with_palaver_over_iroh() {
    let w = World::new();
    let hk = w.palaver_identity("h");
    let gk = w.palaver_identity("g");
    for _ in 0..3 {
        let (hseen, gseen) = palaver_with_palaver_seen(&w, ("h", &hk), ("g", &gk), TANK.0, TANK.1);
        let (hd, gd) = (engine_dir(&hseen), engine_dir(&gseen));
        let (hj, gj) = (journal(&hd), journal(&gd));
        assert_eq!(hj.len(), 31, "ticks 0 to 30");
        assert_eq!(hj, gj, "both journals hold the same frames");
        let audit = std::fs::read_to_string(gd.join("realtime-audit.json")).unwrap();
        assert!(audit.contains(r#""status":"passed""#), "{audit}");
        assert!(audit.contains(r#""integrity":"verified""#), "{audit}");
    }
}

/// palaver and the reference client play the tank battle both ways: the
/// palaver side presents the reference's ruleset (`--ruleset-dir` on the
/// reference's own tank-battle dir).
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn tank_battle_with_the_reference_both_ways() {
    let py = common::reference_python();
    let w = World::new();
    let pk = w.palaver_identity("pal");
    let rk = w.reference_identity(&py, "ref");
    let refdir = common::realtime::reference_protocol_dir(&py, "tank-battle-v1")
        .display()
        .to_string();
    let (alias, options) = TANK;
    let options = options.unwrap();

    // palaver hosts, the reference joins.
    let mut args = host_args(alias, Some(options));
    args.extend(["--ruleset-dir", &refdir]);
    let mut h = Kill(
        w.palaver("pal", &args)
            .stdout(Stdio::piped())
            .stderr(w.log("pal-tank-host"))
            .spawn()
            .unwrap(),
    );
    let mut hout = BufReader::new(h.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let j = common::aigenora(
        &py,
        &w.url,
        &w.dir("ref"),
        &["join", &post, "--control-mode", "autonomous", "--no-web"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let ref_out = ok(
        j.wait_with_output().unwrap(),
        "aigenora join tank-battle-v1",
    );
    let hseen = finish_logged(
        h,
        hout,
        hseen,
        "palaver host tank",
        &w.log_path("pal-tank-host"),
    );
    let ctx = format!("{post} (palaver hosts)\n--- palaver:\n{hseen}\n--- reference:\n{ref_out}");
    check_with_reference(&w, &post, &hseen, (&pk, &rk), &ctx);

    // The reference hosts its own tank-battle dir, palaver joins.
    let mut h = Kill(
        common::aigenora(
            &py,
            &w.url,
            &w.dir("ref"),
            &[
                "host",
                "--protocol-dir",
                &refdir,
                "--control-mode",
                "autonomous",
                "--no-web",
                "--options",
                options,
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
    );
    let mut hout = BufReader::new(h.0.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    let mut g = Kill(
        w.palaver(
            "pal",
            &[
                "join",
                &post,
                "--direct",
                "--control-mode",
                "autonomous",
                "--ruleset-dir",
                &refdir,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(w.log("pal-tank-join"))
        .spawn()
        .unwrap(),
    );
    let gout = BufReader::new(g.0.stdout.take().unwrap());
    let gseen = finish_logged(
        g,
        gout,
        String::new(),
        "palaver join tank",
        &w.log_path("pal-tank-join"),
    );
    let what = "aigenora host tank-battle-v1";
    let (status, hseen) = common::finish_status(h, hout, hseen, what, MATCH_WITHIN);
    common::reference_host_ended(status, what, &hseen, || {
        common::settled(&w.db, &post, 0).0 == "closed"
    });
    let ctx = format!("{post} (reference hosts)\n--- palaver:\n{gseen}\n--- reference:\n{hseen}");
    check_with_reference(&w, &post, &gseen, (&pk, &rk), &ctx);
    let audit = std::fs::read_to_string(engine_dir(&gseen).join("realtime-audit.json")).unwrap();
    assert!(audit.contains(r#""status":"passed""#), "{audit}\n{ctx}");
}
