//! Differential tests of the four-seat tables' rules against the reference
//! client's own hooks.py (aigenora 0.1.4): the same seeded deal and the
//! same actions must give the same results — every accepted action's
//! events, completion and outcome, the same state (compared by the SHA-256
//! of its canonical JSON), the same views, the same refusals with the same
//! texts.
//!
//! Each match is a script made here by playing palaver's rules: mostly a
//! legal action of the player to move (from `Table::legal_actions` of its
//! view), and now and then something a player may get wrong (a card not in
//! its hand, a random pick of its cards, a pass that is not allowed, a bad
//! bid, a move out of turn, an unknown kind), a view of a random seat, a
//! member leaving and coming back, and near the end a checkpoint, a restore
//! on a new leader and a leader change. tests/rooms_hooks/drive.py plays the
//! script through the reference's `Hooks`; the outputs must agree line for
//! line.
//!
//! `PALAVER_TABLE_MATCHES` sets how many seeded matches each table plays
//! (default 200). Needs `PALAVER_REFERENCE_PYTHON` (scripts/test sets it);
//! `#[ignore]`d for a plain `cargo test`, and with `--include-ignored` a
//! missing interpreter is a failure, never a skip.

mod common;

use palaver::json::{self, Map, Value, canonical};
use palaver::obj;
use palaver::protocols::tables::{Table, table_for_alias};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::process::Command;

fn pk(n: u64) -> String {
    let part = format!("{:016x}", (n + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    part.repeat(4)
}

fn member(n: u64) -> Value {
    Value::Object(obj! {
        "member_id" => format!("member-{n}"), "public_key" => pk(n), "seat" => n as i64, "status" => "active",
    })
}

/// The digest drive.py --brief shows for a state.
fn digest(state: &Value) -> Value {
    Value::from(format!(
        "sha256:{}",
        canonical::sha256_hex(canonical::to_string(state).as_bytes())
    ))
}

/// A hook's output as drive.py --brief prints it.
fn brief(out: &Value) -> Value {
    match out {
        Value::Object(m) if m.contains_key("state") => {
            let mut m = m.clone();
            let s = m.get("state").cloned().unwrap_or(Value::Null);
            m.insert("state", digest(&s));
            Value::Object(m)
        }
        Value::Object(m) if m.contains_key("deck") => digest(out),
        other => other.clone(),
    }
}

fn line(r: Result<Value, String>) -> String {
    let v = match r {
        Ok(v) => obj! { "ok" => brief(&v) },
        Err(e) => obj! { "error" => e },
    };
    canonical::to_string(&Value::Object(v))
}

/// One seeded match: the steps for drive.py and palaver's own output lines.
struct Match {
    steps: Vec<Value>,
    native: Vec<String>,
}

impl Match {
    fn step(&mut self, step: Map, out: Result<Value, String>) {
        self.steps.push(Value::Object(step));
        self.native.push(line(out));
    }
}

/// Plays one match of `alias` with `seed` through palaver's rules.
fn play(alias: &str, seed: u64, max_steps: usize) -> Match {
    let mut rng = StdRng::seed_from_u64(seed);
    let options = obj! { "deal_seed" => format!("seed-{seed}") };
    let mut t: Box<dyn Table> = table_for_alias(alias, &options).expect("native table");
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut m = Match {
        steps: Vec::new(),
        native: Vec::new(),
    };
    let meta = palaver::protocols::tables::host_metadata(alias).expect("metadata");
    m.step(
        obj! { "op" => "new", "room" => alias, "options" => Value::Object(options.clone()) },
        Ok(Value::Array(vec![
            Value::from(meta.display_name),
            Value::from(meta.tags),
            Value::from(meta.invite_type),
            Value::Object(meta.default_options),
        ])),
    );
    let mut state = t.initial_state(&members).expect("initial state");
    m.step(
        obj! { "op" => "init", "members" => members.clone() },
        Ok(state.clone()),
    );
    let mut restored = false;
    for i in 0..max_steps {
        let current = state
            .get_str("current_player")
            .unwrap_or_default()
            .to_owned();
        let seat = (0..4).find(|n| pk(*n) == current).unwrap_or(0);
        let view = t.view(&state, &members[seat as usize]).expect("view");
        let roll: u32 = rng.random_range(0..100);
        if roll < 4 {
            let v = &members[rng.random_range(0..4)];
            let out = t.view(&state, v);
            m.step(obj! { "op" => "view", "viewer" => v.clone() }, out);
            continue;
        }
        if roll < 6 {
            let v = &members[rng.random_range(0..4)];
            let out = t.member_left(state.clone(), v, "connection_lost");
            if let Ok(o) = &out {
                state = o.get("state").cloned().unwrap();
            }
            m.step(
                obj! { "op" => "leave", "member" => v.clone(), "reason" => "connection_lost" },
                out,
            );
            let out = t.member_joined(state.clone(), v);
            if let Ok(o) = &out {
                state = o.get("state").cloned().unwrap();
            }
            m.step(obj! { "op" => "join", "member" => v.clone() }, out);
            continue;
        }
        if !restored && i > max_steps / 2 && roll < 9 {
            restored = true;
            let snap = t.recovery_snapshot(&state);
            m.step(obj! { "op" => "snapshot" }, snap.clone());
            let cp = json::parse_str(&canonical::to_string_ordered(&snap.unwrap())).unwrap();
            let out = t.restore(cp, &members, 2);
            if let Ok(s) = &out {
                state = s.clone();
            }
            m.step(
                obj! { "op" => "restore", "members" => members.clone(), "epoch" => 2 },
                out,
            );
            let out = t.on_leader_changed(state.clone(), &pk(0), &pk(1));
            if let Ok(o) = &out {
                state = o.get("state").cloned().unwrap();
            }
            m.step(
                obj! { "op" => "leader", "old" => pk(0), "new" => pk(1) },
                out,
            );
            continue;
        }
        let (actor, action) = if roll < 80 {
            let legal = t.legal_actions(&view);
            let a = if legal.is_empty() || rng.random_range(0..4) == 0 {
                t.bot_action(&view)
            } else {
                Some(legal[rng.random_range(0..legal.len())].clone())
            };
            (
                members[seat as usize].clone(),
                a.unwrap_or(Value::Object(obj! { "kind" => "pass" })),
            )
        } else {
            mistake(&mut rng, &view, &members, seat)
        };
        let out = t.handle(state.clone(), &actor, &action);
        let done = matches!(&out, Ok(o) if o.get("completed") == Some(&Value::Bool(true)));
        if let Ok(o) = &out {
            state = o.get("state").cloned().unwrap();
        }
        m.step(
            obj! { "op" => "act", "actor" => actor, "action" => action },
            out,
        );
        if done {
            // One more action on a finished round is refused.
            let a = members[seat as usize].clone();
            let out = t.handle(state.clone(), &a, &Value::Object(obj! { "kind" => "pass" }));
            m.step(obj! { "op" => "act", "actor" => a, "action" => Value::Object(obj! { "kind" => "pass" }) }, out);
            break;
        }
    }
    m
}

/// Something a player may get wrong, or a random pick of its cards.
fn mistake(rng: &mut StdRng, view: &Value, members: &[Value], seat: u64) -> (Value, Value) {
    let me = members[seat as usize].clone();
    let hand: Vec<String> = view
        .get("my_hand")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get_str("card_id").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let ids = |v: Vec<String>| Value::Array(v.into_iter().map(Value::from).collect());
    let pick = |rng: &mut StdRng, n: usize| -> Vec<String> {
        let mut h = hand.clone();
        let mut out = Vec::new();
        for _ in 0..n.min(h.len()) {
            out.push(h.swap_remove(rng.random_range(0..h.len())));
        }
        out
    };
    let action = match rng.random_range(0..12) {
        0 => obj! { "kind" => "bid", "value" => rng.random_range(-1..6) },
        1 => obj! { "kind" => "bid", "value" => true },
        2 => obj! { "kind" => "bid", "value" => 1.5 },
        3 => obj! { "kind" => "play", "card_ids" => ids(vec!["000000000000000000000000".into()]) },
        4 => obj! { "kind" => "play", "card_ids" => Value::Array(Vec::new()) },
        5 => {
            let one = pick(rng, 1);
            obj! { "kind" => "play", "card_ids" => ids([one.clone(), one].concat()) }
        }
        6 => obj! { "kind" => "dance" },
        7 => obj! { "kind" => "pass" },
        8 => {
            let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
            return (other, Value::Object(obj! { "kind" => "pass" }));
        }
        _ => {
            let n = rng.random_range(1..=6);
            obj! { "kind" => "play", "card_ids" => ids(pick(rng, n)) }
        }
    };
    (me, Value::Object(action))
}

/// The reference's output lines for all `matches`' steps, in one process.
fn run_reference(matches: &[Match]) -> Vec<String> {
    let python = common::reference_python();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("steps.jsonl");
    let mut text = String::new();
    for m in matches {
        for s in &m.steps {
            text.push_str(&canonical::to_string_ordered(s));
            text.push('\n');
        }
    }
    std::fs::write(&file, text).expect("write steps");
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/rooms_hooks/drive.py");
    let out = Command::new(&python)
        .arg(driver)
        .arg(&file)
        .arg("--brief")
        .output()
        .expect("run tests/rooms_hooks/drive.py");
    let stdout = common::ok(out, "tests/rooms_hooks/drive.py");
    stdout
        .lines()
        .map(|l| canonical::to_string(&json::parse_str(l).expect("driver line")))
        .collect()
}

fn differential(alias: &str) {
    let n: u64 = std::env::var("PALAVER_TABLE_MATCHES")
        .ok()
        .map(|v| v.parse().expect("PALAVER_TABLE_MATCHES: a whole number"))
        .unwrap_or(200);
    let matches: Vec<Match> = (0..n).map(|seed| play(alias, seed, 400)).collect();
    let reference = run_reference(&matches);
    let mut at = 0;
    let (mut completed, mut refused, mut steps) = (0, 0, 0);
    for (seed, m) in matches.iter().enumerate() {
        for (i, native) in m.native.iter().enumerate() {
            let theirs = reference.get(at).map(String::as_str).unwrap_or("<no line>");
            assert_eq!(
                native,
                theirs,
                "{alias} seed {seed}, step {i}: {}\npalaver:   {native}\nreference: {theirs}",
                canonical::to_string(&m.steps[i])
            );
            completed += usize::from(native.contains("\"completed\":true"));
            refused += usize::from(native.starts_with("{\"error\""));
            steps += 1;
            at += 1;
        }
    }
    assert_eq!(at, reference.len(), "the reference printed more lines");
    assert!(
        completed * 2 >= n as usize,
        "too few matches completed ({completed} of {n})"
    );
    assert!(refused > 0, "no refusal was compared");
    eprintln!(
        "{alias}: {n} matches, {steps} steps, {completed} completed, {refused} refused — all equal"
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn landlord_matches_the_reference_rules() {
    differential("four-player-landlord-v1");
}

/// Without the reference: bots alone finish every seeded match, and every
/// action a bot or the legal list offers is accepted.
#[test]
fn landlord_bots_finish_every_seeded_match() {
    for seed in 0..30u64 {
        let options = obj! { "deal_seed" => format!("bots-{seed}") };
        let mut t = table_for_alias("four-player-landlord-v1", &options).unwrap();
        let members: Vec<Value> = (0..4).map(member).collect();
        let mut state = t.initial_state(&members).unwrap();
        let mut done = false;
        for _ in 0..2000 {
            let current = state.get_str("current_player").unwrap().to_owned();
            let me = members
                .iter()
                .find(|m| m.get_str("public_key") == Some(&current))
                .unwrap();
            let view = t.view(&state, me).unwrap();
            for a in t.legal_actions(&view) {
                assert!(
                    t.handle(state.clone(), me, &a).is_ok(),
                    "seed {seed}: legal {a:?} refused"
                );
            }
            let a = t.bot_action(&view).expect("a bot acts on its turn");
            let out = t
                .handle(state.clone(), me, &a)
                .unwrap_or_else(|e| panic!("seed {seed}: bot's {a:?}: {e}"));
            state = out.get("state").cloned().unwrap();
            if out.get("completed") == Some(&Value::Bool(true)) {
                done = true;
                break;
            }
        }
        assert!(done, "seed {seed}: the bots did not finish");
    }
}
