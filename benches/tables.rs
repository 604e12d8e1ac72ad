//! The four-seat tables' rules, palaver against the reference, on the same
//! work in the same run: for every table with native rules, seeded matches
//! played to their end by the bots (their actions recorded once; the seat
//! that acts is the first, in seat order, whose bot has a move), then
//! every action applied again by
//! palaver's rules (`GroupHooks::handle` on a copy of the state, as the
//! authority calls it) and by the reference's hooks.py
//! (`proto_group_handle` on deep copies of the state, the actor and the
//! action, as its GroupAuthority calls it, through
//! tests/rooms_hooks/drive.py --time).
//!
//! The figure is the mean time per action (palaver's: the median of five
//! passes over every action, each pass tens of milliseconds long, where one
//! descheduling shows; the reference's one pass takes seconds). Included:
//! the hook call and the copies the runtime makes. Excluded: process start-up, reading the
//! script, the views, signing and the network (the over-the-wire figure is
//! benches/tables_wire.rs'). Target: palaver at
//! least 50× faster per action.
//!
//! The whole `palaver protocol test <table>` command (four bots in one
//! process, a seeded match with a leader change) is timed beside, with the
//! release binary when it is built (`PALAVER_BIN` names another).
//!
//! Run: `cargo bench --bench tables` (`TABLE_MATCHES`, default 50;
//! `TABLE_ALIASES`, default every table, comma-separated; needs
//! `PALAVER_REFERENCE_PYTHON`, as scripts/test sets it, for the reference's
//! side; without it only palaver's figures are printed).

mod support;

use palaver::json::{Map, Value, canonical};
use palaver::obj;
use palaver::protocols::tables::{TABLES, table_for_alias};
use std::time::{Duration, Instant};

fn member(n: u64) -> Value {
    Value::Object(obj! {
        "member_id" => format!("m{n}"), "public_key" => format!("{:064x}", n + 1), "seat" => n as i64, "status" => "active",
    })
}

/// One seeded match of `alias` played by the bots: its options and
/// (actor, action)s.
fn record(alias: &str, seed: u64) -> (Map, Vec<(Value, Value)>) {
    let options = obj! { "deal_seed" => format!("bench-{seed}") };
    let mut t = table_for_alias(alias, &options).unwrap();
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut state = t.initial_state(&members).unwrap();
    let mut acts = Vec::new();
    for _ in 0..20_000 {
        let Some((me, a)) = members.iter().find_map(|m| {
            let view = t.view(&state, m).ok()?;
            Some((m.clone(), t.bot_action(&view)?))
        }) else {
            panic!("{alias} seed {seed}: no seat has a move");
        };
        let out = t.handle(state.clone(), &me, &a).unwrap();
        acts.push((me, a));
        state = out.get("state").cloned().unwrap();
        if out.get("completed") == Some(&Value::Bool(true)) {
            return (options, acts);
        }
    }
    panic!("{alias} seed {seed}: the bots did not finish");
}

/// How many times palaver's side applies every action: its pass takes tens
/// of milliseconds, where one descheduling of the process shows as a third
/// more; the reference's takes seconds and averages that out.
const PASSES: usize = 5;

/// palaver's mean time per action over `matches` of `alias`: the median of
/// [`PASSES`] passes.
fn ours(alias: &str, matches: &[(Map, Vec<(Value, Value)>)]) -> Duration {
    let mut passes: Vec<Duration> = (0..PASSES).map(|_| one_pass(alias, matches)).collect();
    passes.sort();
    passes[PASSES / 2]
}

/// One pass of palaver's rules over every action: the mean per action.
fn one_pass(alias: &str, matches: &[(Map, Vec<(Value, Value)>)]) -> Duration {
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut total = Duration::ZERO;
    let mut actions = 0u32;
    for (options, acts) in matches {
        let mut t = table_for_alias(alias, options).unwrap();
        let mut state = t.initial_state(&members).unwrap();
        for (actor, action) in acts {
            let began = Instant::now();
            let out = t.handle(state.clone(), actor, action).unwrap();
            total += began.elapsed();
            actions += 1;
            state = out.get("state").cloned().unwrap();
        }
    }
    total / actions.max(1)
}

/// The reference's mean time per action over the same matches, through
/// tests/rooms_hooks/drive.py --time.
fn theirs(py: &str, alias: &str, matches: &[(Map, Vec<(Value, Value)>)]) -> Duration {
    let members: Vec<Value> = (0..4).map(member).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.jsonl");
    let mut text = String::new();
    let mut line = |v: Map| {
        text.push_str(&canonical::to_string_ordered(&Value::Object(v)));
        text.push('\n');
    };
    let mut actions = 0;
    for (options, acts) in matches {
        line(obj! { "op" => "new", "room" => alias, "options" => Value::Object(options.clone()) });
        line(obj! { "op" => "init", "members" => members.clone() });
        for (actor, action) in acts {
            line(obj! { "op" => "act", "actor" => actor.clone(), "action" => action.clone() });
            actions += 1;
        }
    }
    std::fs::write(&file, text).unwrap();
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rooms_hooks/drive.py");
    let out = std::process::Command::new(py)
        .arg(driver)
        .arg(&file)
        .args(["--brief", "--time"])
        .output()
        .expect("run the reference's driver");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let errors = stdout
        .lines()
        .filter(|l| l.starts_with("{\"error\""))
        .count();
    assert_eq!(
        errors, 0,
        "{alias}: the reference refused an action palaver took"
    );
    let timing = palaver::json::parse_str(stdout.lines().last().unwrap()).unwrap();
    let t = timing.get("timing").unwrap();
    let secs = t.get("act_seconds").and_then(Value::as_f64).unwrap();
    let count = t.get("acts").and_then(Value::as_i64).unwrap() as usize;
    assert_eq!(count, actions, "{alias}: actions the reference timed");
    Duration::from_secs_f64(secs / count as f64)
}

/// `palaver protocol test ALIAS` (four bots in one process, a seeded
/// match with a leader change), the whole command with the release binary.
fn protocol_test(alias: &str) -> Option<Duration> {
    let bin = support::binary_if_built()?;
    let data = tempfile::tempdir().unwrap();
    let began = Instant::now();
    let out = std::process::Command::new(bin)
        .arg("--data-dir")
        .arg(data.path())
        .args([
            "protocol",
            "test",
            alias,
            "--options",
            r#"{"deal_seed":"bench"}"#,
        ])
        .output()
        .expect("run palaver protocol test");
    let took = began.elapsed();
    assert!(
        out.status.success(),
        "protocol test {alias}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(took)
}

fn main() {
    let n: u64 = std::env::var("TABLE_MATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
        .clamp(1, 10_000);
    let aliases: Vec<String> = match std::env::var("TABLE_ALIASES") {
        Ok(v) if !v.is_empty() => v.split(',').map(str::to_owned).collect(),
        _ => TABLES.iter().map(|s| (*s).to_owned()).collect(),
    };
    let py = std::env::var("PALAVER_REFERENCE_PYTHON").ok();
    if py.is_none() {
        println!("reference: PALAVER_REFERENCE_PYTHON is not set; run through scripts/test's venv");
    }
    println!(
        "| table | actions | palaver per action | the reference | ratio (target 50x) | protocol test (target < 1 s) |"
    );
    println!("|---|---|---|---|---|---|");
    for alias in &aliases {
        let matches: Vec<_> = (0..n).map(|seed| record(alias, seed)).collect();
        let actions: usize = matches.iter().map(|(_, a)| a.len()).sum();
        let us = ours(alias, &matches);
        let (them, ratio) = match &py {
            Some(py) => {
                let them = theirs(py, alias, &matches);
                let r = them.as_secs_f64() / us.as_secs_f64();
                (
                    format!("{:.1} µs", them.as_secs_f64() * 1e6),
                    format!("{r:.0}x ({})", if r >= 50.0 { "met" } else { "NOT met" }),
                )
            }
            None => ("—".into(), "—".into()),
        };
        let test = protocol_test(alias)
            .map(|d| format!("{:.0} ms", d.as_secs_f64() * 1e3))
            .unwrap_or_else(|| "— (no release binary)".into());
        println!(
            "| {alias} | {actions} in {n} matches | {:.1} µs | {them} | {ratio} | {test} |",
            us.as_secs_f64() * 1e6
        );
    }
}
