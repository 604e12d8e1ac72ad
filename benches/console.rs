//! Console benchmarks: the cost of a frame as the feed grows, the memory the
//! feed holds, and the work before the first frame.
//!
//! Run: `cargo bench --bench console` (one group: `-- render/`,
//! `-- table/` or `-- startup/`). Besides criterion's report, a markdown table of the
//! figures is printed at the end, ready for the README.
//!
//! - `render/feed_1k`, `render/feed_100k`: a full frame (`Headless::screen`,
//!   160×48) of a console attached to a session whose events.jsonl holds
//!   1,000 / 100,000 events. Target ≤ 2 ms, and no growth with the length.
//! - `render/feed_pane_100k`: the feed pane alone, drawn from a `Feed` that
//!   was given 100,000 rows.
//! - feed memory (printed, not timed, measured first): rows held and their
//!   heap bytes after attaching 1k, 10k and 100k events — flat at `WINDOW`
//!   rows — with the process's peak RSS so far (the attach itself parses
//!   the whole file at once, so the peak does grow with the file).
//! - live sessions (printed, not criterion): 20 RPS sessions running at full
//!   speed in the same process (one engine pair each, the host writing its
//!   state dir as a real session does, hybrid control mode, 9,999 fixed
//!   rounds; they share one worker thread of their own), the console
//!   attached to one of them (its watcher following the files) with all 20
//!   in its session list. A frame here is what the console loop does per
//!   redraw: apply the reports that arrived, then draw 160×48. Mean, median
//!   and 99th percentile over 400 frames 5 ms apart. Target ≤ 2 ms.
//! - `startup/first_frame`: `load_settings` on a fresh data dir,
//!   `Headless::new` and the first `screen()`. Target ≤ 200 ms.
//! - `table/<game>`: a full frame 160×48 of a console attached to a card
//!   table's seat (the host's state dir as the group runtime writes it, the
//!   view dealt and played by the real rules from a fixed seed, bots on
//!   two seats, a table log of every frame's events): landlord in play with
//!   a play to beat, a hold'em hand at seat 0's turn, a bridge auction at
//!   seat 0's call, a mahjong claim window seat 0 may claim in (melds and
//!   rivers on the table). Excluded: the watcher reading the files (done before
//!   timing). Target ≤ 2 ms.

#[path = "../tests/common/table_seat.rs"]
mod table_seat;

use criterion::{BatchSize, Criterion};
use palaver::engine::Role;
use palaver::session::StateDir;
use palaver::tui::panes::feed::{Feed, WINDOW};
use palaver::tui::report::feed::FeedRow;
use palaver::tui::theme::Theme;
use palaver::tui::watch::row_of;
use palaver::tui::{Headless, load_settings};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RPS_ID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";
const WIDTH: u16 = 160;
const HEIGHT: u16 = 48;

/// Figures for the README table, printed at the end.
#[derive(Default)]
struct Report {
    timings: Vec<(String, String)>,
    memory: Vec<String>,
}

fn ts(i: usize) -> String {
    // A session of ~one event per 10 ms, starting at 08:00.
    let ms = i * 10;
    let (h, m, s, frac) = (
        8 + ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000,
    );
    format!("2026-11-30T{h:02}:{m:02}:{s:02}.{frac:03}123+00:00")
}

/// Event `i` of `n`, as the runtime writes events.jsonl: mostly the RPS
/// exchange (commit, reveal, result, both directions), with `_sys` frames,
/// liveness and lifecycle events mixed in.
fn event_line(i: usize, n: usize) -> String {
    let t = ts(i);
    if i == 0 {
        return format!(
            r#"{{"ts":"{t}","type":"session_started","data":{{"role":"guest","protocol_id":"{RPS_ID}"}},"summary":"Session started as guest"}}"#
        );
    }
    if i == n - 1 {
        return format!(
            r#"{{"ts":"{t}","type":"session_ended","data":{{"completed":true,"reason":"completed","winner":"host"}},"summary":"Session ended: completed"}}"#
        );
    }
    if i.is_multiple_of(50) {
        return format!(
            r#"{{"ts":"{t}","type":"protocol_message","data":{{"direction":"received","msg":{{"_sys":"ping","seq":{i}}}}}}}"#
        );
    }
    if i % 50 == 1 {
        return format!(
            r#"{{"ts":"{t}","type":"protocol_message","data":{{"direction":"sent","msg":{{"_sys":"pong","seq":{}}}}}}}"#,
            i - 1
        );
    }
    if i.is_multiple_of(333) {
        return format!(r#"{{"ts":"{t}","type":"heartbeat","data":{{"seq":{i}}}}}"#);
    }
    if i % 1000 == 500 {
        return format!(
            r#"{{"ts":"{t}","type":"peer_resumed","data":{{"after_seconds":0.4}},"summary":"peer back after 0.4s"}}"#
        );
    }
    let round = i / 5;
    let r1 = round + 1;
    let hash = format!("{:016x}", (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).repeat(4);
    let choice = ["rock", "paper", "scissors"][i % 3];
    let (dir, msg, summary) = match i % 5 {
        0 => (
            "received",
            format!(r#"{{"action":"commit","round":{round},"hash":"{hash}"}}"#),
            format!("Round {r1}: commitment"),
        ),
        1 => (
            "sent",
            format!(r#"{{"action":"commit","round":{round},"hash":"{hash}"}}"#),
            format!("Round {r1}: commitment"),
        ),
        2 => (
            "received",
            format!(
                r#"{{"action":"reveal","round":{round},"choice":"{choice}","nonce":"{}"}}"#,
                &hash[..32]
            ),
            format!("Round {r1}: reveals {choice}"),
        ),
        3 => (
            "sent",
            format!(
                r#"{{"action":"reveal","round":{round},"choice":"{choice}","nonce":"{}"}}"#,
                &hash[32..]
            ),
            format!("Round {r1}: reveals {choice}"),
        ),
        _ => (
            "received",
            format!(
                r#"{{"action":"result","round":{round},"host":"rock","guest":"{choice}","winner":"draw"}}"#
            ),
            format!("Round {r1}: host rock vs guest {choice} -> draw"),
        ),
    };
    format!(
        r#"{{"ts":"{t}","type":"protocol_message","data":{{"direction":"{dir}","msg":{msg}}},"summary":"{summary}"}}"#
    )
}

/// A finished guest session of `n` events under `data/sessions/`; returns
/// its parent dir (what `attach` takes).
fn write_session(data: &Path, n: usize) -> PathBuf {
    let dir = StateDir::create(data, Role::Guest).expect("state dir");
    let parent = dir.parent.clone().expect("parent");
    let session = format!(
        r#"{{"role":"guest","status":"closed","protocol_id":"{RPS_ID}","protocol_name":"Rock-Paper-Scissors","local_control_mode":"human","peer_control_mode":"autonomous","options":{{"best_of":3,"termination":"fixed_rounds"}},"completed":true,"end_reason":"completed","winner":"host"}}"#
    );
    std::fs::write(parent.join("session.json"), session).expect("session.json");
    let snapshot = format!(
        r#"{{"protocol_id":"{RPS_ID}","role":"guest","phase":"game_over","round":{},"best_of":3,"score":{{"host":2,"guest":1}},"winner":"host","last_event":{{"summary":"Session ended: completed"}}}}"#,
        n / 5
    );
    std::fs::write(dir.child.join("snapshot.json"), snapshot).expect("snapshot.json");
    let f = std::fs::File::create(parent.join("events.jsonl")).expect("events.jsonl");
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    for i in 0..n {
        writeln!(w, "{}", event_line(i, n)).expect("write event");
    }
    w.flush().expect("flush");
    parent
}

/// Peak resident memory of this process so far (Linux), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Rows the feed holds and the heap they take (approximately).
fn feed_memory(feed: &Feed) -> (usize, usize) {
    let bytes = feed
        .rows
        .iter()
        .map(|r| r.time.len() + r.summary.len() + r.raw.len() + std::mem::size_of::<FeedRow>())
        .sum();
    (feed.rows.len(), bytes)
}

/// A console attached to a fresh session of `n` events, once the feed has
/// all of them. Returns the console, its data dir (keep it alive) and how
/// long the attach took.
fn attached_console(
    rt: &tokio::runtime::Runtime,
    n: usize,
) -> (Headless, tempfile::TempDir, Duration) {
    let data = tempfile::tempdir().expect("tempdir");
    let parent = write_session(data.path(), n);
    let _rt = rt.enter();
    let settings = load_settings(data.path(), None, None).expect("settings");
    let mut h = Headless::new(settings, WIDTH, HEIGHT);
    let t0 = Instant::now();
    h.app.attach(&parent);
    let all = rt.block_on(h.until(Duration::from_secs(120), |app| {
        app.sessions
            .attached
            .as_ref()
            .is_some_and(|a| a.feed.total == n && !a.session.is_empty() && !a.snapshot.is_empty())
    }));
    let took = t0.elapsed();
    assert!(all, "the feed did not get all {n} events");
    let screen = h.screen();
    assert!(
        screen.contains("Session ended: completed"),
        "the newest event is not on screen:\n{screen}"
    );
    (h, data, took)
}

/// A console attached to a table seat of `alias` (see the module notes).
fn table_console(
    rt: &tokio::runtime::Runtime,
    alias: &'static str,
) -> (Headless, tempfile::TempDir) {
    let mut play = table_seat::Play::deal_of(alias, "bench-table");
    if alias == table_seat::LANDLORD {
        for bid in [1, 2, 0, 0] {
            play.act(palaver::json::Value::Object(
                palaver::obj! { "kind" => "bid", "value" => bid },
            ));
        }
    }
    if alias == MAHJONG {
        mahjong_claim(&mut play);
    } else {
        play.bots_until_mine();
    }
    let data = tempfile::tempdir().expect("tempdir");
    let dir = play.write(data.path(), "running");
    let _rt = rt.enter();
    let settings = load_settings(data.path(), None, None).expect("settings");
    let mut h = Headless::new(settings, WIDTH, HEIGHT);
    h.app.attach(&dir);
    let ready = rt.block_on(h.until(Duration::from_secs(60), |app| {
        app.sessions
            .table()
            .is_some_and(|t| t.view.is_ok() && !t.log.is_empty())
    }));
    assert!(ready, "the table did not load:\n{}", h.screen());
    (h, data)
}

const MAHJONG: &str = "classical-mahjong-v1";

/// Mahjong's claim window has no current player: the first seat whose bot
/// has a move acts, until seat 0 may claim more than a pass with a meld on
/// the table.
fn mahjong_claim(play: &mut table_seat::Play) {
    use palaver::json::Value;
    for _ in 0..3000 {
        let v0 = play.view(0);
        let melds = play
            .state
            .get("meld_groups")
            .and_then(Value::as_object)
            .map_or(0, |m| {
                m.iter()
                    .map(|(_, g)| g.as_array().map_or(0, Vec::len))
                    .sum::<usize>()
            });
        let claim = play
            .rules
            .legal_actions(&v0)
            .iter()
            .any(|a| a.get_str("kind") != Some("pass_claim"));
        if play.state.get_str("phase") == Some("claim") && claim && melds > 0 {
            return;
        }
        let (n, a) = (0..4u8)
            .find_map(|n| {
                let v = play.view(n);
                play.rules.bot_action(&v).map(|a| (n, a))
            })
            .expect("a seat with a move");
        let r = play
            .rules
            .handle(play.state.clone(), &table_seat::member(n), &a)
            .expect("the bot's move");
        play.state = r.get("state").expect("state").clone();
        play.frames.push(
            r.get("events")
                .and_then(Value::as_array)
                .expect("events")
                .clone(),
        );
    }
    panic!("seat 0 never had a claim");
}

fn table(c: &mut Criterion, rt: &tokio::runtime::Runtime, report: &mut Report) {
    let mut g = c.benchmark_group("table");
    for (name, alias) in [
        ("landlord_playing", table_seat::LANDLORD),
        ("holdem_hand", "texas-holdem-v1"),
        ("bridge_auction", "contract-bridge-v1"),
        ("mahjong_claim", MAHJONG),
    ] {
        let (mut h, _data) = table_console(rt, alias);
        let _rt = rt.enter();
        g.bench_function(name, |b| b.iter(|| black_box(h.screen())));
        let (mean, p50) = quick_stats(500, || {
            black_box(h.screen());
        });
        report.timings.push((
            format!("table/{name} (full frame {WIDTH}×{HEIGHT} at a {alias} seat)"),
            format!("mean {mean:.0} µs, median {p50:.0} µs"),
        ));
    }
    g.finish();
}

/// Mean and median of `frames` calls of `f`, in µs (a second opinion to
/// criterion's, and the figure the table prints).
fn quick_stats(frames: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..frames)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t.iter().sum::<f64>() / frames as f64, t[frames / 2])
}

fn render(c: &mut Criterion, rt: &tokio::runtime::Runtime, report: &mut Report) {
    let mut g = c.benchmark_group("render");
    for (name, n) in [("feed_1k", 1_000usize), ("feed_100k", 100_000)] {
        let (mut h, _data, attach) = attached_console(rt, n);
        let _rt = rt.enter();
        g.bench_function(name, |b| b.iter(|| black_box(h.screen())));
        let (mean, p50) = quick_stats(500, || {
            black_box(h.screen());
        });
        report.timings.push((
            format!("render/{name} (full frame {WIDTH}×{HEIGHT}, {n} events)"),
            format!("mean {mean:.0} µs, median {p50:.0} µs (attach + load: {attach:.2?})"),
        ));
    }

    // The feed pane alone, from a Feed given every row.
    let n = 100_000;
    let mut feed = Feed::default();
    let rows: Vec<FeedRow> = (0..n)
        .map(|i| {
            let v: palaver::json::Value =
                palaver::json::parse_bytes(event_line(i, n).as_bytes()).expect("event json");
            row_of(v.as_object().expect("object"))
        })
        .collect();
    for (k, chunk) in rows.chunks(1000).enumerate() {
        feed.append(k * 1000, chunk.to_vec());
    }
    assert_eq!(feed.total, n);
    let theme = Theme::builtin_default();
    let mut term = Terminal::new(TestBackend::new(WIDTH - 40, HEIGHT - 20)).expect("backend");
    g.bench_function("feed_pane_100k", |b| {
        b.iter(|| {
            term.draw(|f| feed.draw(f, f.area(), &theme, true, "Feed"))
                .expect("draw");
        })
    });
    g.finish();
}

fn memory(rt: &tokio::runtime::Runtime, report: &mut Report) {
    for n in [1_000usize, 10_000, 100_000] {
        let (h, _data, attach) = attached_console(rt, n);
        let feed = &h.app.sessions.attached.as_ref().expect("attached").feed;
        let (rows, bytes) = feed_memory(feed);
        let peak = peak_rss_mib()
            .map(|m| format!("{m:.0} MiB"))
            .unwrap_or_else(|| "n/a".into());
        let line = format!(
            "| {n} | {rows} | {:.0} KiB | {attach:.2?} | {peak} |",
            bytes as f64 / 1024.0
        );
        println!("feed memory: {n} events -> {rows} rows held, ~{bytes} bytes (WINDOW = {WINDOW})");
        report.memory.push(line);
    }
}

fn startup(c: &mut Criterion, rt: &tokio::runtime::Runtime, report: &mut Report) {
    let _rt = rt.enter();
    let mut g = c.benchmark_group("startup");
    let first_frame = || {
        let data = tempfile::tempdir().expect("tempdir");
        let t0 = Instant::now();
        let settings = load_settings(data.path(), None, None).expect("settings");
        let mut h = Headless::new(settings, WIDTH, HEIGHT);
        let screen = h.screen();
        (t0.elapsed(), data, h, screen)
    };
    g.bench_function("first_frame", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |data| {
                let settings = load_settings(data.path(), None, None).expect("settings");
                let mut h = Headless::new(settings, WIDTH, HEIGHT);
                let screen = h.screen();
                (data, h, screen)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let mut t: Vec<f64> = (0..100)
        .map(|_| first_frame().0.as_secs_f64() * 1e6)
        .collect();
    t.sort_by(f64::total_cmp);
    report.timings.push((
        "startup/first_frame (load_settings + Headless::new + screen)".into(),
        format!(
            "mean {:.0} µs, median {:.0} µs",
            t.iter().sum::<f64>() / t.len() as f64,
            t[t.len() / 2]
        ),
    ));
}

/// The frame cost with 20 sessions running (see the module notes).
fn live_sessions(rt: &tokio::runtime::Runtime, report: &mut Report) {
    use palaver::engine::ControlMode;
    use palaver::json::Map;
    use palaver::protocols::native_hooks_for_alias;
    use palaver::services::local::{Side, play};
    use palaver::services::run::{Launch, engine_config, stateful_side, write_launch};
    use std::sync::Arc;

    const SESSIONS: usize = 20;
    let data = tempfile::tempdir().expect("tempdir");
    let spec = palaver::library::bundled_spec("rps-v1").expect("rps-v1 is bundled");
    let options: Map = palaver::json::parse_str(r#"{"best_of":9999,"termination":"fixed_rounds"}"#)
        .expect("options")
        .as_object()
        .expect("object")
        .clone();
    // The sessions get a runtime of their own with one worker, so the
    // console keeps the other core as it would in a terminal.
    let engines = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("engine runtime");
    let mut parents = Vec::new();
    for _ in 0..SESSIONS {
        let dir = StateDir::create(data.path(), Role::Host).expect("state dir");
        parents.push(dir.parent.clone().expect("a parent dir"));
        // session.json, as every session's launcher writes it.
        write_launch(
            &dir,
            &Launch {
                spec,
                protocol_dir: None,
                role: Role::Host,
                control_mode: ControlMode::Hybrid,
                options: &options,
                pid: std::process::id(),
                status: "running",
            },
        )
        .expect("session.json");
        let ours = stateful_side(
            dir,
            spec,
            native_hooks_for_alias("rps-v1").expect("hooks"),
            Role::Host,
            ControlMode::Hybrid,
            &options,
            None,
        );
        let options = options.clone();
        // One 9,999-round match each: it outlasts the measurement (checked
        // below: the attached feed must still grow while frames are timed).
        engines.spawn(async move {
            let bot = Side::auto(
                native_hooks_for_alias("rps-v1").expect("hooks"),
                Arc::new(palaver::engine::CountingSink::default()),
            );
            let _ = play(
                spec,
                &options,
                &engine_config(Duration::from_secs(30)),
                ours.side,
                bot,
            )
            .await;
        });
    }
    let _rt = rt.enter();
    let settings = load_settings(data.path(), None, None).expect("settings");
    let mut h = Headless::new(settings, WIDTH, HEIGHT);
    // Attach once the session has started writing (as a user attaches a
    // session the list shows).
    let started = Instant::now();
    while palaver::session::StateDir::resolve(&parents[0])
        .is_none_or(|d| !d.child.join("snapshot.json").is_file())
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the sessions never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    h.app.attach(&parents[0]);
    let attached = rt.block_on(h.until(Duration::from_secs(30), |app| {
        app.sessions
            .attached
            .as_ref()
            .is_some_and(|a| a.feed.total > 1000)
    }));
    if !attached {
        let events = std::fs::read_to_string(parents[0].join("events.jsonl")).unwrap_or_default();
        panic!(
            "the attached session's feed never filled: feed {:?}, events.jsonl {} lines, last: {}",
            h.app.sessions.attached.as_ref().map(|a| a.feed.total),
            events.lines().count(),
            events.lines().last().unwrap_or("")
        );
    }
    let listed = rt.block_on(h.until(Duration::from_secs(30), |app| {
        app.sessions.rows.len() >= SESSIONS
    }));
    assert!(
        listed,
        "the session list never showed all {SESSIONS} sessions"
    );
    let before = h.app.sessions.attached.as_ref().map_or(0, |a| a.feed.total);
    let mut t: Vec<f64> = Vec::with_capacity(400);
    for _ in 0..400 {
        std::thread::sleep(Duration::from_millis(5));
        rt.block_on(async { tokio::task::yield_now().await });
        let t0 = Instant::now();
        h.drain();
        black_box(h.screen());
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    let after = h.app.sessions.attached.as_ref().map_or(0, |a| a.feed.total);
    engines.shutdown_background();
    assert!(
        after > before,
        "the attached session did not move while measured"
    );
    t.sort_by(f64::total_cmp);
    let mean = t.iter().sum::<f64>() / t.len() as f64;
    report.timings.push((
        format!("live/{SESSIONS}_sessions (reports applied + full frame {WIDTH}×{HEIGHT}, attached feed +{} events while measured)", after - before),
        format!(
            "mean {mean:.0} µs, median {:.0} µs, p99 {:.0} µs",
            t[t.len() / 2],
            t[t.len() * 99 / 100]
        ),
    ));
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let mut report = Report::default();
    // Memory first, smallest first, so the peak RSS column shows what
    // attaching each size costs (the high-water mark only grows).
    memory(&rt, &mut report);
    live_sessions(&rt, &mut report);
    render(&mut c, &rt, &mut report);
    table(&mut c, &rt, &mut report);
    startup(&mut c, &rt, &mut report);
    c.final_summary();

    let mut out = String::from("\n| benchmark | figure |\n|---|---|\n");
    for (k, v) in &report.timings {
        let _ = writeln!(out, "| {k} | {v} |");
    }
    out.push_str(
        "\n| events in file | feed rows held | heap of rows | attach until all counted | peak RSS so far |\n|---|---|---|---|---|\n",
    );
    for l in &report.memory {
        let _ = writeln!(out, "{l}");
    }
    println!("{out}");
}
