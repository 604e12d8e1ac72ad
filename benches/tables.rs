//! The four-seat tables' rules, palaver against the reference, on the same
//! work in the same run: seeded landlord matches played to their end by the
//! bots (their actions recorded once), then every action applied again by
//! palaver's rules (`GroupHooks::handle` on a copy of the state, as the
//! authority calls it) and by the reference's hooks.py
//! (`proto_group_handle` on deep copies of the state, the actor and the
//! action, as its GroupAuthority calls it, through
//! tests/rooms_hooks/drive.py --time).
//!
//! The figure is the mean time per action. Included: the hook call and the
//! copies the runtime makes. Excluded: process start-up, reading the
//! script, the views, signing and the network (the over-the-wire figure is
//! the `tables` tests' and `rooms` bench's business). Target: palaver at
//! least 50× faster per action.
//!
//! Run: `cargo bench --bench tables` (`TABLE_MATCHES`, default 50; needs
//! `PALAVER_REFERENCE_PYTHON`, as scripts/test sets it, for the reference's
//! side; without it only palaver's figure is printed).

use palaver::json::{Map, Value, canonical};
use palaver::obj;
use palaver::protocols::tables::table_for_alias;
use std::time::{Duration, Instant};

const ALIAS: &str = "four-player-landlord-v1";

fn member(n: u64) -> Value {
    Value::Object(obj! {
        "member_id" => format!("m{n}"), "public_key" => format!("{:064x}", n + 1), "seat" => n as i64, "status" => "active",
    })
}

/// One seeded match played by the bots: its options and (actor, action)s.
fn record(seed: u64) -> (Map, Vec<(Value, Value)>) {
    let options = obj! { "deal_seed" => format!("bench-{seed}") };
    let mut t = table_for_alias(ALIAS, &options).unwrap();
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut state = t.initial_state(&members).unwrap();
    let mut acts = Vec::new();
    for _ in 0..5000 {
        let current = state.get_str("current_player").unwrap().to_owned();
        let me = members
            .iter()
            .find(|m| m.get_str("public_key") == Some(&current))
            .unwrap();
        let view = t.view(&state, me).unwrap();
        let a = t.bot_action(&view).unwrap();
        let out = t.handle(state.clone(), me, &a).unwrap();
        acts.push((me.clone(), a));
        state = out.get("state").cloned().unwrap();
        if out.get("completed") == Some(&Value::Bool(true)) {
            break;
        }
    }
    (options, acts)
}

fn main() {
    let n: u64 = std::env::var("TABLE_MATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
        .clamp(1, 10_000);
    let matches: Vec<_> = (0..n).map(record).collect();
    let actions: usize = matches.iter().map(|(_, a)| a.len()).sum();
    let members: Vec<Value> = (0..4).map(member).collect();

    // palaver: the same actions on fresh tables, timed per call.
    let mut ours = Duration::ZERO;
    for (options, acts) in &matches {
        let mut t = table_for_alias(ALIAS, options).unwrap();
        let mut state = t.initial_state(&members).unwrap();
        for (actor, action) in acts {
            let began = Instant::now();
            let out = t.handle(state.clone(), actor, action).unwrap();
            ours += began.elapsed();
            state = out.get("state").cloned().unwrap();
        }
    }
    let ours_per = ours / actions as u32;
    println!(
        "{ALIAS}: {n} matches, {actions} actions; palaver {:.1} µs per action",
        ours_per.as_secs_f64() * 1e6
    );

    let Ok(py) = std::env::var("PALAVER_REFERENCE_PYTHON") else {
        println!("reference: PALAVER_REFERENCE_PYTHON is not set; run through scripts/test's venv");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.jsonl");
    let mut text = String::new();
    let mut line = |v: Map| {
        text.push_str(&canonical::to_string_ordered(&Value::Object(v)));
        text.push('\n');
    };
    for (options, acts) in &matches {
        line(obj! { "op" => "new", "room" => ALIAS, "options" => Value::Object(options.clone()) });
        line(obj! { "op" => "init", "members" => members.clone() });
        for (actor, action) in acts {
            line(obj! { "op" => "act", "actor" => actor.clone(), "action" => action.clone() });
        }
    }
    std::fs::write(&file, text).unwrap();
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rooms_hooks/drive.py");
    let out = std::process::Command::new(&py)
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
    assert_eq!(errors, 0, "the reference refused an action palaver took");
    let timing = palaver::json::parse_str(stdout.lines().last().unwrap()).unwrap();
    let t = timing.get("timing").unwrap();
    let secs = t.get("act_seconds").and_then(Value::as_f64).unwrap();
    let count = t.get("acts").and_then(Value::as_i64).unwrap() as usize;
    assert_eq!(count, actions);
    let theirs_per = Duration::from_secs_f64(secs / count as f64);
    let ratio = theirs_per.as_secs_f64() / ours_per.as_secs_f64();
    println!(
        "reference {:.1} µs per action; palaver is {ratio:.0}x faster (target: 50x — {})",
        theirs_per.as_secs_f64() * 1e6,
        if ratio >= 50.0 { "met" } else { "NOT met" }
    );
}
