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

use crate::common;

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
    let options = table_options(alias, seed);
    let mut t: Box<dyn Table> = table_for_alias(alias, &options).expect("native table");
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut m = Match {
        steps: Vec::new(),
        native: Vec::new(),
    };
    refuse_options(alias, seed, &members, &mut m);
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
        let seat = match alias {
            // Declarations come from any seat that has not declared.
            "upgrade-tractor-v1" => tractor_seat(&mut rng, &state),
            _ => (0..4).find(|n| pk(*n) == current).unwrap_or(0),
        };
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
        // A bridge board is short (about a hundred steps) and a hold'em
        // match shorter (a few dozen): restore early.
        let restore_after = match alias {
            "contract-bridge-v1" => 20,
            "texas-holdem-v1" => 3,
            "aether-sigil-v1" => SIGIL_RESTORE_AFTER,
            // A hand is about 110 actions; matches are one to three hands.
            "upgrade-tractor-v1" => 40,
            _ => max_steps / 2,
        };
        if !restored && i > restore_after && roll < 9 {
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
        let (actor, action) = if roll < 80 && !(retry_raise(alias, &view) && roll.is_multiple_of(2))
        {
            let legal = t.legal_actions(&view);
            // A bridge auction of uniformly random legal calls races to
            // seven no trump: the bot makes half the calls, and a random
            // call is a pass, a (re)double or one of the next few bids.
            let bridge_auction =
                alias == "contract-bridge-v1" && view.get_str("phase") == Some("auction");
            let a = if legal.is_empty()
                || rng.random_range(0..4) == 0
                || (bridge_auction && rng.random_range(0..3) == 0)
                // Random hold'em actions go all in or fold too often to
                // reach the river: half of them are the bot's.
                || (alias == "texas-holdem-v1" && rng.random_range(0..2) == 0)
            {
                t.bot_action(&view)
            } else if bridge_auction {
                Some(legal[rng.random_range(0..legal.len().min(6))].clone())
            } else if alias == "aether-sigil-v1" {
                sigil_pick(&mut rng, &legal)
            } else {
                Some(legal[rng.random_range(0..legal.len())].clone())
            };
            (
                members[seat as usize].clone(),
                a.unwrap_or(Value::Object(obj! { "kind" => "pass" })),
            )
        } else {
            match alias {
                "contract-bridge-v1" => bridge_mistake(&mut rng, &view, &members, seat),
                "texas-holdem-v1" => holdem_mistake(&mut rng, &view, &members, seat),
                "aether-sigil-v1" => sigil_mistake(&mut rng, &view, &members, seat),
                "upgrade-tractor-v1" => tractor_mistake(&mut rng, &view, &members, seat),
                _ => mistake(&mut rng, &view, &members, seat),
            }
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

/// Something a bridge player may get wrong: a bid that does not outrank
/// the last one, a malformed bid, a double of its own side's bid, a
/// redouble without a double, a revoke, a card of another hand (its own
/// when the dummy is to play, or the dummy's when it is its own turn), a
/// card id that is no string, the dummy playing for itself, a call or card
/// out of turn, an unknown or missing kind, an action that is no object.
fn bridge_mistake(rng: &mut StdRng, view: &Value, members: &[Value], seat: u64) -> (Value, Value) {
    let me = members[seat as usize].clone();
    let cards = |key: &str| -> Vec<Value> {
        view.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let id_of = |c: &Value| Value::from(c.get_str("card_id").unwrap_or_default());
    let play = |id: Value| Value::Object(obj! { "kind" => "play", "card_id" => id });
    let bid = |level: Value, denomination: Value| {
        Value::Object(obj! { "kind" => "bid", "level" => level, "denomination" => denomination })
    };
    let denominations = ["clubs", "diamonds", "hearts", "spades", "nt"];
    let playable = cards("playable_hand");
    let any_card = |rng: &mut StdRng, from: &[Value]| match from {
        [] => Value::from("000000000000000000000000"),
        _ => id_of(&from[rng.random_range(0..from.len())]),
    };
    let action = match rng.random_range(0..16) {
        // Not above the last bid (or a random bid before any).
        0 | 1 => {
            let last = view
                .get("last_bid")
                .and_then(|b| b.get("value"))
                .and_then(Value::as_i64);
            let value = match last {
                Some(v) => rng.random_range(0..=v),
                None => rng.random_range(0..35),
            };
            bid(
                Value::from(value / 5 + 1),
                Value::from(denominations[(value % 5) as usize]),
            )
        }
        2 => {
            let levels = [
                Value::from(0),
                Value::from(8),
                Value::Bool(true),
                Value::from(1.0),
                Value::from("2"),
                Value::Null,
            ];
            let level = levels[rng.random_range(0..levels.len())].clone();
            bid(level, Value::from("nt"))
        }
        3 => {
            let names = [
                Value::from("notrump"),
                Value::from("NT"),
                Value::Null,
                Value::from(4),
            ];
            bid(
                Value::from(rng.random_range(1..=7)),
                names[rng.random_range(0..names.len())].clone(),
            )
        }
        4 => Value::Object(obj! { "kind" => "double" }),
        5 => Value::Object(obj! { "kind" => "redouble" }),
        // A revoke when possible, else any card of the hand to play.
        6 | 7 => {
            let led = view
                .get("current_trick")
                .and_then(Value::as_array)
                .and_then(|t| t.first())
                .and_then(|p| p.get("card"))
                .and_then(|c| c.get_str("suit"))
                .map(str::to_owned);
            let off: Vec<Value> = playable
                .iter()
                .filter(|c| led.is_some() && c.get_str("suit") != led.as_deref())
                .cloned()
                .collect();
            let from = if off.is_empty() { &playable } else { &off };
            play(any_card(rng, from))
        }
        8 => {
            let other = if view.get("playable_hand") == view.get("my_hand") {
                cards("dummy_hand")
            } else {
                cards("my_hand")
            };
            play(any_card(rng, &other))
        }
        9 => {
            let ids = [
                Value::from(7),
                Value::Null,
                Value::Array(vec![Value::from("x")]),
            ];
            play(ids[rng.random_range(0..ids.len())].clone())
        }
        10 => {
            let dummy = view.get_str("dummy").unwrap_or_default();
            if let Some(d) = members
                .iter()
                .find(|m| m.get_str("public_key") == Some(dummy))
            {
                let action = play(any_card(rng, &playable));
                return (d.clone(), action);
            }
            play(any_card(rng, &playable))
        }
        11 | 12 => {
            let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
            let action = if rng.random_range(0..2) == 0 {
                Value::Object(obj! { "kind" => "pass" })
            } else {
                play(any_card(rng, &playable))
            };
            return (other, action);
        }
        13 => {
            let kinds = ["dance", "pass", "bid", "play", "claim"];
            Value::Object(obj! { "kind" => kinds[rng.random_range(0..kinds.len())] })
        }
        14 => Value::Object(Map::new()),
        _ => {
            let odd = [Value::from("pass"), Value::Array(Vec::new()), Value::Null];
            return (me, odd[rng.random_range(0..odd.len())].clone());
        }
    };
    (me, action)
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
    let (mut completed, mut refused, mut steps, mut played_out) = (0, 0, 0, 0);
    let mut refusals = std::collections::BTreeSet::new();
    let (mut made, mut down, mut redeals) = (0, 0, 0);
    let (mut hands, mut side_pots, mut restarts) = (0, 0, 0);
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
            played_out += usize::from(native.contains("\"kind\":\"bridge_board_complete\""));
            made += usize::from(native.contains("_made\""));
            down += usize::from(native.contains("_down\""));
            redeals += usize::from(native.contains("\"board_restarted_after_leader_change\""));
            if let Some(text) = json::parse_str(native)
                .ok()
                .and_then(|v| v.get_str("error").map(str::to_owned))
            {
                refusals.insert(text);
            }
            hands += usize::from(native.contains("\"kind\":\"holdem_showdown\""))
                + usize::from(native.contains("\"kind\":\"holdem_uncontested\""));
            side_pots += usize::from(native.contains("\"pot_index\":1,"));
            restarts += usize::from(native.contains("\"hand_restarted_after_leader_change\""));
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
    if alias == "contract-bridge-v1" {
        // A passed-out board completes too; most boards must be played to
        // the thirteenth trick and scored.
        assert!(
            played_out * 2 >= n as usize,
            "too few boards were played out ({played_out} of {n})"
        );
        // Enough boards show every refusal the mistakes aim at, and both
        // made and defeated contracts.
        if n >= 20 {
            let missing: Vec<&str> = [
                "it is not this Member's turn to call",
                "it is not this Member's turn to play",
                "a new bid must outrank the current contract",
                "a bid requires level 1-7 and a valid denomination",
                "double is not legal in the current auction",
                "redouble is not legal in the current auction",
                "auction accepts pass, bid, double, or redouble",
                "card play accepts only play",
                "card_id is not in the active hand",
                "the player must follow the led suit",
                "the board is complete",
                "'str' object has no attribute 'get'",
            ]
            .into_iter()
            .filter(|t| !refusals.contains(*t))
            .collect();
            assert!(missing.is_empty(), "refusals never compared: {missing:?}");
            assert!(made > 0 && down > 0, "made {made}, down {down}");
            assert!(
                redeals * 2 >= n as usize,
                "too few restores and leader changes ({redeals} of {n})"
            );
        }
        eprintln!(
            "{alias}: {played_out} boards played out, {made} made, {down} down, {redeals} restored; {} distinct refusals",
            refusals.len()
        );
    }
    if alias == "texas-holdem-v1" {
        // A match is hand after hand: most matches end (max_hands or one
        // seat left with every chip), many hands end, some with side pots.
        assert!(
            hands >= 2 * n as usize,
            "too few hands finished ({hands} in {n} matches)"
        );
        assert!(side_pots > 0, "no side pot was compared");
        // Enough matches show every refusal the mistakes aim at (the
        // rarest comes up a few times in 200 matches).
        if n >= 100 {
            let missing: Vec<&str> = [
                "the Hold'em match is complete",
                "it is not this Member's turn to act",
                "check is illegal while facing a wager",
                "there is no wager to call",
                "bet or raise amount must be an integer target",
                "bet is legal only when no wager exists",
                "use bet when no wager exists",
                "raise target must exceed the wager and fit the stack",
                "raise target is below the minimum full raise",
                "a short all-in did not reopen this Member's raise",
                "betting accepts fold, check, call, bet, raise, or all_in",
                "unhashable type: 'list'",
                "'str' object has no attribute 'get'",
                "small_blind must be lower than big_blind",
                "big_blind cannot exceed starting_stack",
                "max_hands must be between 1 and 100",
            ]
            .into_iter()
            .filter(|t| !refusals.contains(*t))
            .collect();
            assert!(missing.is_empty(), "refusals never compared: {missing:?}");
            assert!(
                restarts * 4 >= n as usize,
                "too few restores and leader changes ({restarts} of {n})"
            );
        }
        eprintln!(
            "{alias}: {hands} hands finished, {side_pots} with side pots, {restarts} restored; {} distinct refusals",
            refusals.len()
        );
    }
    if alias == "aether-sigil-v1" {
        sigil_figures(n, &matches, &refusals);
    }
    if alias == "upgrade-tractor-v1" {
        tractor_report(&matches, &refusals);
    }
    eprintln!(
        "{alias}: {n} matches, {steps} steps, {completed} completed, {refused} refused — all equal"
    );
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn landlord_matches_the_reference_rules() {
    differential("four-player-landlord-v1");
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn bridge_matches_the_reference_rules() {
    differential("contract-bridge-v1");
}

/// Without the reference: bots alone finish every seeded match, and every
/// action a bot or the legal list offers is accepted.
#[test]
fn landlord_bots_finish_every_seeded_match() {
    bots_finish_every_seeded_match("four-player-landlord-v1");
}

/// The same for bridge; some boards are played out to the last trick.
#[test]
fn bridge_bots_finish_every_seeded_match() {
    let outcomes = bots_finish_every_seeded_match("contract-bridge-v1");
    eprintln!("contract-bridge-v1 bots: {outcomes:?}");
    assert!(
        outcomes.iter().filter(|o| *o != "passed_out").count() >= 20,
        "{outcomes:?}"
    );
    assert!(
        outcomes.iter().any(|o| o.ends_with("_made")),
        "{outcomes:?}"
    );
}

/// Plays 30 seeded matches of bots alone; their outcomes.
fn bots_finish_every_seeded_match(alias: &str) -> Vec<String> {
    let mut outcomes = Vec::new();
    for seed in 0..30u64 {
        let mut options = obj! { "deal_seed" => format!("bots-{seed}") };
        if alias == "upgrade-tractor-v1" {
            tractor_bot_options(seed, &mut options);
        }
        let mut t = table_for_alias(alias, &options).unwrap();
        let members: Vec<Value> = (0..4).map(member).collect();
        let mut state = t.initial_state(&members).unwrap();
        let mut done = false;
        for _ in 0..2000 {
            let current = state.get_str("current_player").unwrap().to_owned();
            // No current player (tractor's declarations): the first seat
            // whose bot has something to send.
            let me = members
                .iter()
                .find(|m| m.get_str("public_key") == Some(&current))
                .or_else(|| {
                    members.iter().find(|m| {
                        let v = t.view(&state, m).unwrap();
                        t.bot_action(&v).is_some()
                    })
                })
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
                outcomes.push(out.get_str("outcome").unwrap_or_default().to_owned());
                break;
            }
        }
        assert!(done, "seed {seed}: the bots did not finish");
    }
    outcomes
}

/// The room's options for a seeded match: hold'em varies the stacks, the
/// blinds and the number of hands (short stacks make all-ins and side
/// pots); the other tables take only the deal seed.
fn table_options(alias: &str, seed: u64) -> Map {
    let mut options = obj! { "deal_seed" => format!("seed-{seed}") };
    if alias == "upgrade-tractor-v1" {
        tractor_options(seed, &mut options);
    }
    if alias == "texas-holdem-v1" && !seed.is_multiple_of(7) {
        let stack = [100, 150, 200, 400, 1000][(seed % 5) as usize];
        let (small, big) = [(1, 2), (5, 10), (10, 20), (25, 50)][(seed / 5 % 4) as usize];
        options.insert("starting_stack", Value::from(stack));
        options.insert("small_blind", Value::from(small));
        options.insert("big_blind", Value::from(big));
        options.insert("max_hands", Value::from(1 + seed / 3 % 8));
    }
    if alias == "aether-sigil-v1" {
        sigil_options(seed, &mut options);
    }
    options
}

/// Is a hold'em seat facing a short all-in that did not reopen its raise
/// (it may only call or fold)? Then half its actions try to raise anyway.
fn retry_raise(alias: &str, view: &Value) -> bool {
    let legal = |k: &str| view.get("legal").and_then(|l| l.get(k));
    alias == "texas-holdem-v1"
        && legal("can_raise") == Some(&Value::Bool(false))
        && legal("max_to").and_then(Value::as_i64) > view.get("current_bet").and_then(Value::as_i64)
}

/// For some hold'em seeds, first a room whose options the rules refuse:
/// its `init` must fail with the reference's text.
fn refuse_options(alias: &str, seed: u64, members: &[Value], m: &mut Match) {
    if alias == "aether-sigil-v1" {
        return sigil_refuse_options(seed, members, m);
    }
    if alias == "upgrade-tractor-v1" {
        return tractor_refuse_options(seed, members, m);
    }
    if alias != "texas-holdem-v1" || seed % 4 != 1 {
        return;
    }
    let bad = [
        obj! { "small_blind" => 10, "big_blind" => 10 },
        obj! { "small_blind" => 20 },
        obj! { "starting_stack" => 50 },
        obj! { "starting_stack" => 100, "big_blind" => 200 },
        obj! { "max_hands" => 0 },
        obj! { "max_hands" => true },
        obj! { "small_blind" => 2.5 },
        obj! { "big_blind" => 10.0 },
        obj! { "starting_stack" => "1000" },
        obj! { "big_blind" => Value::Null },
    ];
    let mut options = bad[(seed / 4) as usize % bad.len()].clone();
    options.insert("deal_seed", Value::from(format!("bad-{seed}")));
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
    let out = table_for_alias(alias, &options)
        .expect("native table")
        .initial_state(members);
    assert!(out.is_err(), "seed {seed}: {options:?} were accepted");
    m.step(obj! { "op" => "init", "members" => members.to_vec() }, out);
}

/// Something a hold'em player may get wrong: an amount that is negative,
/// a float, a bool, a string, missing or beyond 64 bits; a raise below the
/// minimum full raise, not above the wager or beyond the stack; a bet when
/// a wager exists or a raise when none does; a check facing a wager or a
/// call with nothing to call; an action out of turn; an unknown, missing
/// or unhashable kind; an action that is no object; or an all-in (refused
/// when a short all-in did not reopen the raise).
fn holdem_mistake(rng: &mut StdRng, view: &Value, members: &[Value], seat: u64) -> (Value, Value) {
    let me = members[seat as usize].clone();
    let legal = |k: &str| {
        view.get("legal")
            .and_then(|l| l.get(k))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let (to_call, min_to, max_to) = (legal("to_call"), legal("min_raise_to"), legal("max_to"));
    let current = view.get("current_bet").and_then(Value::as_i64).unwrap_or(0);
    let (wager, wrong) = if current == 0 {
        ("bet", "raise")
    } else {
        ("raise", "bet")
    };
    let act =
        |kind: &str, amount: Value| Value::Object(obj! { "kind" => kind, "amount" => amount });
    let kind = |k: Value| Value::Object(obj! { "kind" => k });
    if retry_raise("texas-holdem-v1", view) {
        // A short all-in did not reopen the raise: try to raise anyway.
        let action = if rng.random_range(0..2) == 0 {
            act(wager, Value::from(min_to.min(max_to)))
        } else {
            kind(Value::from("all_in"))
        };
        return (me, action);
    }
    let action = match rng.random_range(0..17) {
        0 => act(wager, Value::from(rng.random_range(-50..0))),
        1 => act(wager, Value::from(min_to as f64 + 0.5)),
        2 => act(wager, Value::from(min_to as f64)),
        3 => act(wager, Value::Bool(rng.random_range(0..2) == 0)),
        4 => act(wager, Value::from(min_to.to_string())),
        5 => kind(Value::from(wager)),
        6 => {
            let below = if min_to - 1 > current {
                rng.random_range(current + 1..min_to)
            } else {
                current
            };
            act(wager, Value::from(below))
        }
        7 => act(wager, Value::from(max_to + 1 + rng.random_range(0..100))),
        8 => act(wager, Value::from(current)),
        9 => act(wrong, Value::from(min_to.min(max_to).max(1))),
        10 => kind(Value::from(if to_call > 0 { "check" } else { "call" })),
        11 => {
            let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
            let k = ["check", "fold", "call", "all_in"][rng.random_range(0..4)];
            return (other, kind(Value::from(k)));
        }
        12 => {
            let odd = [
                Value::from("dance"),
                Value::from("pass"),
                Value::from("FOLD"),
                Value::from(""),
                Value::from(5),
                Value::Bool(true),
                Value::Null,
                Value::Array(vec![Value::from("fold")]),
                Value::Object(obj! { "kind" => "fold" }),
            ];
            kind(odd[rng.random_range(0..odd.len())].clone())
        }
        13 => Value::Object(Map::new()),
        14 => {
            let big = ["99999999999999999999", "-99999999999999999999"][rng.random_range(0..2)];
            act(wager, json::parse_str(big).expect("a big integer"))
        }
        15 => kind(Value::from("all_in")),
        _ => {
            let odd = [
                Value::from("fold"),
                Value::Array(vec![Value::from("call")]),
                Value::Null,
            ];
            return (me, odd[rng.random_range(0..odd.len())].clone());
        }
    };
    (me, action)
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn holdem_matches_the_reference_rules() {
    differential("texas-holdem-v1");
}

/// Hold'em bots finish every match (eight hands of 1,000 chips at 5/10),
/// and the winner is a seat.
#[test]
fn holdem_bots_finish_every_seeded_match() {
    let outcomes = bots_finish_every_seeded_match("texas-holdem-v1");
    let seats: Vec<String> = (0..4).map(pk).collect();
    assert!(outcomes.iter().all(|o| seats.contains(o)), "{outcomes:?}");
}

// ---- aether-sigil-v1 -------------------------------------------------

/// A sigil match restores on a new leader after this many steps (matches
/// last a few hundred steps; a restore is a fresh deal).
const SIGIL_RESTORE_AFTER: usize = 60;

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn sigil_matches_the_reference_rules() {
    differential("aether-sigil-v1");
}

/// Sigil bots finish every match; the winner is a seat, and some matches
/// go on to the empty pile's fatigue.
#[test]
fn sigil_bots_finish_every_seeded_match() {
    let outcomes = bots_finish_every_seeded_match("aether-sigil-v1");
    let seats: Vec<String> = (0..4).map(pk).collect();
    assert!(outcomes.iter().all(|o| seats.contains(o)), "{outcomes:?}");
    let winners: std::collections::BTreeSet<&String> = outcomes.iter().collect();
    assert!(
        winners.len() >= 3,
        "the bots' seats do not all win: {outcomes:?}"
    );
}

/// The starting life of a seeded sigil match: the default, the bounds, a
/// short match, and the text and float forms `int()` accepts.
fn sigil_options(seed: u64, options: &mut Map) {
    let life = match seed % 7 {
        0 => return,
        1 => Value::from(10),
        2 => Value::from(12),
        3 => Value::from("15"),
        4 => Value::from(10.9),
        5 => Value::from(" +11 "),
        _ => Value::from(14),
    };
    options.insert("starting_life", life);
}

/// For some sigil seeds, first a room the rules refuse: a starting life
/// outside 10–50 or that `int()` refuses, or three active members.
fn sigil_refuse_options(seed: u64, members: &[Value], m: &mut Match) {
    if seed % 3 != 1 {
        return;
    }
    let alias = "aether-sigil-v1";
    let bad = [
        Value::from(9),
        Value::from(51),
        Value::Bool(true),
        Value::Null,
        Value::from("abc"),
        Value::from("1e2"),
        Value::Array(vec![Value::from(20)]),
        json::parse_str("99999999999999999999").expect("a big integer"),
        Value::from(9.99),
        Value::from("  60 "),
        Value::Object(obj! { "life" => 20 }),
        Value::from("2_0_"),
    ];
    let k = (seed / 3) as usize % (bad.len() + 1);
    let mut options = obj! { "deal_seed" => format!("bad-{seed}") };
    let mut seated = members.to_vec();
    match bad.get(k) {
        Some(v) => {
            options.insert("starting_life", v.clone());
        }
        None => {
            if let Value::Object(o) = &mut seated[(seed % 4) as usize] {
                o.insert("status", Value::from("left"));
            }
        }
    }
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
    let out = table_for_alias(alias, &options)
        .expect("native table")
        .initial_state(&seated);
    assert!(out.is_err(), "seed {seed}: {options:?} were accepted");
    m.step(obj! { "op" => "init", "members" => seated }, out);
}

/// A random legal sigil action; conceding (always legal) only now and then,
/// or matches would end by concession before the pile runs out.
fn sigil_pick(rng: &mut StdRng, legal: &[Value]) -> Option<Value> {
    let playing: Vec<&Value> = legal
        .iter()
        .filter(|a| a.get_str("kind") != Some("concede") || rng.random_range(0..40) == 0)
        .collect();
    (!playing.is_empty()).then(|| playing[rng.random_range(0..playing.len())].clone())
}

/// Something an aether-sigil player may get wrong: a card not in its hand
/// (a made-up id, a card on a row), a card id that is no text, a card it
/// cannot pay for, a unit or relic onto a full row, a spell at itself, at an
/// unknown or felled seat or with no target, Dissolve at its own unit, a
/// unit too strong or none, an attack with a unit not its own, an exhausted
/// one, at its own unit, at itself, with a target card id that is no text
/// (or falsy, which the reference takes as a direct attack), a move out of
/// turn, an unknown or missing kind, an action that is no object; and now
/// and then a concession.
fn sigil_mistake(rng: &mut StdRng, view: &Value, members: &[Value], seat: u64) -> (Value, Value) {
    let me = members[seat as usize].clone();
    let my_pk = pk(seat);
    let hand: Vec<Value> = view
        .get("my_hand")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let id_of = |c: &Value| c.get_str("card_id").unwrap_or_default().to_owned();
    let rows = |key: &str, mine: bool| -> Vec<String> {
        view.get(key)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter(|(owner, _)| (*owner == my_pk) == mine)
                    .flat_map(|(_, cards)| cards.as_array().cloned().unwrap_or_default())
                    .map(|c| id_of(&c))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (my_units, their_units) = (rows("units", true), rows("units", false));
    let exhausted = |id: &String| {
        view.get("unit_state")
            .and_then(|s| s.get(id))
            .and_then(|u| u.get("exhausted"))
            == Some(&Value::Bool(true))
    };
    let energy = view
        .get("players")
        .and_then(|p| p.get(&my_pk))
        .and_then(|p| p.get("energy"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let felled: Vec<String> = view
        .get("players")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter(|(_, p)| p.get("defeated") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.to_owned())
                .collect()
        })
        .unwrap_or_default();
    let opponent = pk((seat + 1 + rng.random_range(0..3)) % 4);
    let of_kind = |rng: &mut StdRng, pred: &dyn Fn(&Value) -> bool| -> Option<String> {
        let picked: Vec<&Value> = hand.iter().filter(|c| pred(c)).collect();
        (!picked.is_empty()).then(|| id_of(picked[rng.random_range(0..picked.len())]))
    };
    let any = |rng: &mut StdRng, ids: &[String]| -> Value {
        match ids {
            [] => Value::from("000000000000000000000000"),
            _ => Value::from(ids[rng.random_range(0..ids.len())].as_str()),
        }
    };
    let play = |id: Value| obj! { "kind" => "play_card", "card_id" => id };
    let effect = |e: &'static str| move |c: &Value| c.get_str("effect") == Some(e);
    let cost = |c: &Value| c.get("cost").and_then(Value::as_i64).unwrap_or(0);
    let attack =
        |unit: Value, k: &str, v: Value| obj! { "kind" => "attack", "unit_id" => unit, k => v };
    let action = match rng.random_range(0..22) {
        0 => play(Value::from("000000000000000000000000")),
        1 => {
            let odd = [
                Value::from(7),
                Value::Null,
                Value::Array(vec![Value::from("x")]),
            ];
            play(odd[rng.random_range(0..odd.len())].clone())
        }
        2 => play(any(rng, &[my_units.clone(), their_units.clone()].concat())),
        3 => match of_kind(rng, &|c| cost(c) > energy) {
            Some(id) => play(Value::from(id)),
            None => play(any(rng, &my_units)),
        },
        4 => {
            // A unit or relic onto its row, full or not.
            let kind = ["unit", "relic"][rng.random_range(0..2)];
            match of_kind(rng, &|c| {
                c.get_str("card_type") == Some(kind) && cost(c) <= energy
            }) {
                Some(id) => play(Value::from(id)),
                None => play(Value::from("000000000000000000000000")),
            }
        }
        5 | 6 => {
            // Cinder Shot at itself, a felled or unknown seat, or no one.
            let targets = [
                Value::from(my_pk.as_str()),
                any(rng, &felled),
                Value::from("ab".repeat(32)),
                Value::Null,
                Value::from(5),
            ];
            let target = targets[rng.random_range(0..targets.len())].clone();
            let id = of_kind(rng, &effect("damage_player")).unwrap_or_default();
            let mut a = play(Value::from(id));
            if !target.is_null() {
                a.insert("target_public_key", target);
            }
            a
        }
        7 | 8 => {
            // Dissolve at its own unit, any unit (maybe too strong), none,
            // or a target that is no text.
            let targets = [
                any(rng, &my_units),
                any(rng, &their_units),
                any(rng, &their_units),
                Value::from("000000000000000000000000"),
                Value::from(3),
            ];
            let id = of_kind(rng, &effect("destroy_unit")).unwrap_or_default();
            let mut a = play(Value::from(id));
            a.insert(
                "target_card_id",
                targets[rng.random_range(0..targets.len())].clone(),
            );
            a
        }
        9 => {
            let unit = any(rng, &their_units);
            attack(unit, "target_public_key", Value::from(opponent.as_str()))
        }
        10 => {
            let odd = [Value::from(1), Value::Null, Value::Array(Vec::new())];
            let unit = odd[rng.random_range(0..odd.len())].clone();
            attack(unit, "target_public_key", Value::from(opponent.as_str()))
        }
        11 => {
            let tired: Vec<String> = my_units.iter().filter(|u| exhausted(u)).cloned().collect();
            let unit = any(rng, &tired);
            attack(unit, "target_public_key", Value::from(opponent.as_str()))
        }
        12 => {
            let unit = any(rng, &my_units);
            let target = any(rng, &my_units);
            attack(unit, "target_card_id", target)
        }
        13 => {
            let unit = any(rng, &my_units);
            let target = [Value::from(my_pk.as_str()), any(rng, &felled), Value::Null];
            attack(
                unit,
                "target_public_key",
                target[rng.random_range(0..3)].clone(),
            )
        }
        14 => {
            // A falsy target card goes at the player; a truthy one that is
            // no text is refused.
            let unit = any(rng, &my_units);
            let odd = [
                Value::from(""),
                Value::from(0),
                Value::Bool(false),
                Value::Array(Vec::new()),
                Value::Bool(true),
                Value::from(2.5),
                Value::Array(vec![Value::from("x")]),
                Value::Object(obj! { "card_id" => "x" }),
            ];
            let mut a = attack(
                unit,
                "target_card_id",
                odd[rng.random_range(0..odd.len())].clone(),
            );
            a.insert("target_public_key", Value::from(opponent.as_str()));
            a
        }
        15 | 16 => {
            let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
            let kinds = ["end_turn", "concede", "play_card", "attack"];
            let action = obj! { "kind" => kinds[rng.random_range(0..kinds.len())] };
            return (other, Value::Object(action));
        }
        17 => {
            let odd = [
                Value::from("dance"),
                Value::from("END_TURN"),
                Value::from(""),
                Value::from(5),
                Value::Null,
                Value::Array(vec![Value::from("end_turn")]),
            ];
            obj! { "kind" => odd[rng.random_range(0..odd.len())].clone() }
        }
        18 => Map::new(),
        19 => {
            let odd = [
                Value::from("end_turn"),
                Value::Array(vec![Value::from("attack")]),
                Value::Null,
                Value::from(3),
            ];
            return (me, odd[rng.random_range(0..odd.len())].clone());
        }
        20 if rng.random_range(0..4) == 0 => obj! { "kind" => "concede" },
        _ => {
            // Rally Spark, Star Map, Pulse Shield or Mending Rain with a
            // stray target field (ignored), or else a card with no target.
            let id = of_kind(rng, &|c| c.get_str("card_type") == Some("spell")).unwrap_or_default();
            let mut a = play(Value::from(id));
            a.insert("target_public_key", Value::from(my_pk.as_str()));
            a
        }
    };
    (me, Value::Object(action))
}

/// What the sigil matches showed: every event kind and every refusal the
/// mistakes aim at came up at least once in enough matches.
fn sigil_figures(n: u64, matches: &[Match], refusals: &std::collections::BTreeSet<String>) {
    let kinds = [
        "turn_started",
        "card_drawn",
        "unit_summoned",
        "relic_played",
        "spell_cast",
        "spell_damage",
        "healed",
        "shield_gained",
        "units_readied",
        "unit_dissolved",
        "unit_combat",
        "unit_destroyed",
        "direct_attack",
        "relic_heal",
        "fatigue",
        "conceded",
        "game_over",
        "member_rejoined",
        "member_disconnected",
        "match_restarted_after_leader_change",
    ];
    let mut counts = std::collections::BTreeMap::new();
    let mut by_text = std::collections::BTreeMap::new();
    for m in matches {
        for line in &m.native {
            if let Some(text) = json::parse_str(line)
                .ok()
                .and_then(|v| v.get_str("error").map(str::to_owned))
            {
                *by_text.entry(text).or_insert(0usize) += 1;
            }
            for kind in kinds {
                if line.contains(&format!("\"kind\":\"{kind}\"")) {
                    *counts.entry(kind).or_insert(0usize) += 1;
                }
            }
        }
    }
    eprintln!("aether-sigil-v1: actions with each event kind: {counts:?}");
    eprintln!("aether-sigil-v1: refusals compared, by text: {by_text:#?}");
    assert_eq!(by_text.len(), refusals.len());
    if n >= 100 {
        let unseen: Vec<&str> = kinds
            .into_iter()
            .filter(|k| !counts.contains_key(k))
            .collect();
        assert!(unseen.is_empty(), "event kinds never compared: {unseen:?}");
        let missing: Vec<&str> = [
            "the match is complete",
            "it is not this Member's turn",
            "unsupported Aether Sigil action",
            "card_id must be text",
            "card is not in this Member's hand",
            "not enough Aether",
            "the unit row is full",
            "the relic row is full",
            "target_public_key must identify an active opponent",
            "target_card_id must be text",
            "target unit does not exist",
            "Dissolve must target an opposing unit",
            "the target unit is too powerful for Dissolve",
            "unit_id is not controlled by this Member",
            "this unit is exhausted",
            "a unit cannot attack an allied unit",
            "'str' object has no attribute 'get'",
            "'list' object has no attribute 'get'",
            "'NoneType' object has no attribute 'get'",
            "'int' object has no attribute 'get'",
            "Aether Sigil requires exactly four active Members",
            "starting_life must be between 10 and 50",
            "invalid literal for int() with base 10: 'abc'",
            "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'",
            "int() argument must be a string, a bytes-like object or a real number, not 'list'",
        ]
        .into_iter()
        .filter(|t| !refusals.contains(*t))
        .collect();
        assert!(missing.is_empty(), "refusals never compared: {missing:?}");
    }
}

// ---- upgrade-tractor-v1 ----

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn tractor_matches_the_reference_rules() {
    differential("upgrade-tractor-v1");
}

/// Tractor bots finish every match (most in the reference's quick
/// profile, some in the full race from level 2 to the ace), and the winner
/// is a partnership.
#[test]
fn tractor_bots_finish_every_seeded_match() {
    let outcomes = bots_finish_every_seeded_match("upgrade-tractor-v1");
    assert!(
        outcomes.iter().all(|o| o == "team0" || o == "team1"),
        "{outcomes:?}"
    );
}

/// A bots' match: the reference's quick profile (levels 2 to 4, eight
/// hands at most), every tenth seed its standard one (2 to the ace,
/// sixteen hands at most: some thousand actions).
fn tractor_bot_options(seed: u64, options: &mut Map) {
    if !seed.is_multiple_of(10) {
        options.insert("start_level", Value::from(2));
        options.insert("target_level", Value::from(4));
        options.insert("max_hands", Value::from(8));
    }
}

/// The seat that acts next in a tractor match: during the declarations,
/// mostly a seat that has not declared yet (sometimes any seat); else the
/// current player.
fn tractor_seat(rng: &mut StdRng, state: &Value) -> u64 {
    if state.get_str("phase") == Some("declaration") {
        let declared = state.get("declarations");
        let open: Vec<u64> = (0..4)
            .filter(|n| declared.and_then(|d| d.get(&pk(*n))).is_none())
            .collect();
        if open.is_empty() || rng.random_range(0..10) == 0 {
            return rng.random_range(0..4);
        }
        return open[rng.random_range(0..open.len())];
    }
    let current = state.get_str("current_player").unwrap_or_default();
    (0..4).find(|n| pk(*n) == current).unwrap_or(0)
}

/// A tractor match's options: one to three hands, from a start level
/// (2 to 13) to a target one to four levels above it.
fn tractor_options(seed: u64, options: &mut Map) {
    let start = 2 + (seed % 12) as i64;
    let target = (start + 1 + (seed / 3 % 4) as i64).min(14);
    options.insert("start_level", Value::from(start));
    options.insert("target_level", Value::from(target));
    options.insert("max_hands", Value::from(1 + (seed / 2 % 3) as i64));
}

/// For some seeds, first a tractor room whose options the rules refuse.
fn tractor_refuse_options(seed: u64, members: &[Value], m: &mut Match) {
    if seed % 5 != 2 {
        return;
    }
    let bad = [
        obj! { "start_level" => 1 },
        obj! { "start_level" => 15 },
        obj! { "start_level" => true },
        obj! { "target_level" => 2 },
        obj! { "target_level" => 7.0 },
        obj! { "start_level" => 9, "target_level" => 9 },
        obj! { "start_level" => 10, "target_level" => 4 },
        obj! { "max_hands" => 0 },
        obj! { "max_hands" => "3" },
        obj! { "max_hands" => Value::Null },
    ];
    let mut options = bad[(seed / 5) as usize % bad.len()].clone();
    options.insert("deal_seed", Value::from(format!("bad-{seed}")));
    let alias = "upgrade-tractor-v1";
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
    let out = table_for_alias(alias, &options)
        .expect("native table")
        .initial_state(members);
    assert!(out.is_err(), "seed {seed}: {options:?} were accepted");
    m.step(obj! { "op" => "init", "members" => members.to_vec() }, out);
}

/// Something a tractor player may get wrong. Declaring: a plain single, two
/// different faces, an identical pair of a plain rank, a declaration no
/// stronger than the standing one, three cards, an unknown id, an unknown
/// kind. Burying: seven or nine cards, a declaring card, another kind, a
/// seat that is not the declarer. Playing: a lead mixing classes; a follow
/// of the wrong count, one that keeps cards of the led class back, one that
/// breaks the pairs or the tractor it owes; out of turn. Any time: card
/// ids that are no list, a list inside, duplicates, non-strings, an action
/// that is no object.
fn tractor_mistake(rng: &mut StdRng, view: &Value, members: &[Value], seat: u64) -> (Value, Value) {
    let me = members[seat as usize].clone();
    let hand: Vec<Value> = view
        .get("my_hand")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let level = view.get("level_rank").and_then(Value::as_i64).unwrap_or(0);
    let trump = view.get_str("trump_suit").map(str::to_owned);
    let rank = |c: &Value| c.get("rank").and_then(Value::as_i64).unwrap_or(0);
    let suit = |c: &Value| c.get_str("suit").unwrap_or_default().to_owned();
    let class = |c: &Value| {
        let s = suit(c);
        if s == "joker" || rank(c) == level || Some(&s) == trump.as_ref() {
            "trump".to_owned()
        } else {
            s
        }
    };
    let id = |c: &Value| c.get_str("card_id").unwrap_or_default().to_owned();
    let act = |kind: &str, ids: Vec<String>| {
        Value::Object(obj! {
            "kind" => kind, "card_ids" => Value::Array(ids.into_iter().map(Value::from).collect()),
        })
    };
    let pick = |rng: &mut StdRng, from: &[Value], n: usize| -> Vec<String> {
        let mut h: Vec<Value> = from.to_vec();
        let mut out = Vec::new();
        for _ in 0..n.min(h.len()) {
            out.push(id(&h.swap_remove(rng.random_range(0..h.len()))));
        }
        out
    };
    let unknown = "000000000000000000000000".to_owned();
    let phase = view.get_str("phase").unwrap_or_default();
    // Mistakes any phase can get.
    let roll = rng.random_range(0..20);
    if roll < 4 {
        let kind = match phase {
            "declaration" => "declare_trump",
            "bury" => "bury",
            _ => "play",
        };
        let one = pick(rng, &hand, 1);
        let action = match roll {
            0 => Value::Object(obj! { "kind" => kind, "card_ids" => Value::from("x") }),
            1 => Value::Object(obj! {
                "kind" => kind, "card_ids" => Value::Array(vec![Value::Array(Vec::new()), Value::from(1)]),
            }),
            2 => act(kind, [one.clone(), one].concat()),
            _ => {
                let odd = [Value::from(kind), Value::Null, Value::Array(Vec::new())];
                odd[rng.random_range(0..odd.len())].clone()
            }
        };
        return (me, action);
    }
    if roll < 6 {
        let kinds = ["dance", "pass", "declare", "bury", "play", "pass_declare"];
        let action = Value::Object(obj! { "kind" => kinds[rng.random_range(0..kinds.len())] });
        return (me, action);
    }
    let action = match phase {
        "declaration" => {
            let plain: Vec<Value> = hand.iter().filter(|c| rank(c) != level).cloned().collect();
            let levels: Vec<Value> = hand.iter().filter(|c| rank(c) == level).cloned().collect();
            match rng.random_range(0..6) {
                0 => act("declare_trump", pick(rng, &plain, 1)),
                1 => act("declare_trump", pick(rng, &hand, 2)),
                2 => {
                    // An identical pair of a plain rank, when there is one.
                    let pair: Option<Vec<String>> = plain.iter().enumerate().find_map(|(i, a)| {
                        plain[i + 1..]
                            .iter()
                            .find(|b| suit(b) == suit(a) && rank(b) == rank(a))
                            .map(|b| vec![id(a), id(b)])
                    });
                    act(
                        "declare_trump",
                        pair.unwrap_or_else(|| pick(rng, &plain, 2)),
                    )
                }
                3 => act("declare_trump", pick(rng, &levels, 1)),
                4 => act("declare_trump", pick(rng, &hand, 3)),
                _ => act("declare_trump", vec![unknown]),
            }
        }
        "bury" => {
            let declared: Vec<String> = view
                .get("winning_declaration")
                .and_then(|w| w.get("card_ids"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            match rng.random_range(0..6) {
                0 => act("bury", pick(rng, &hand, 7)),
                1 => act("bury", pick(rng, &hand, 9)),
                2 if !declared.is_empty() => {
                    let mut ids: Vec<String> = pick(rng, &hand, 12)
                        .into_iter()
                        .filter(|i| !declared.contains(i))
                        .take(7)
                        .collect();
                    ids.push(declared[0].clone());
                    act("bury", ids)
                }
                3 => act("play", pick(rng, &hand, 8)),
                4 => {
                    let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
                    return (other, act("bury", pick(rng, &hand, 8)));
                }
                _ => act("bury", [pick(rng, &hand, 7), vec![unknown]].concat()),
            }
        }
        _ => {
            let lead = view
                .get("current_trick")
                .and_then(Value::as_array)
                .and_then(|t| t.first())
                .and_then(|p| p.get("shape"))
                .cloned();
            let Some(lead) = lead else {
                // Leading: cards of two classes, or a random pick.
                return match rng.random_range(0..4) {
                    0 | 1 => {
                        let first = pick(rng, &hand, 1);
                        let c = hand.iter().find(|c| Some(id(c)) == first.first().cloned());
                        let other: Vec<Value> = hand
                            .iter()
                            .filter(|h| c.is_some_and(|c| class(h) != class(c)))
                            .cloned()
                            .collect();
                        (me, act("play", [first, pick(rng, &other, 1)].concat()))
                    }
                    2 => {
                        let other =
                            members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
                        (other, act("play", pick(rng, &hand, 1)))
                    }
                    _ => {
                        let n = rng.random_range(2..=5);
                        (me, act("play", pick(rng, &hand, n)))
                    }
                };
            };
            let n = lead.get("count").and_then(Value::as_i64).unwrap_or(1) as usize;
            let led = lead.get_str("suit").unwrap_or_default().to_owned();
            let (ins, outs): (Vec<Value>, Vec<Value>) =
                hand.iter().cloned().partition(|c| class(c) == led);
            // The class's pairs, by face.
            let mut pairs: Vec<Vec<String>> = Vec::new();
            for (i, a) in ins.iter().enumerate() {
                if let Some(b) = ins[i + 1..]
                    .iter()
                    .find(|b| suit(b) == suit(a) && rank(b) == rank(a))
                {
                    pairs.push(vec![id(a), id(b)]);
                }
            }
            match rng.random_range(0..6) {
                0 => {
                    let m = if n > 1 && rng.random_range(0..2) == 0 {
                        n - 1
                    } else {
                        n + 1
                    };
                    act("play", pick(rng, &hand, m))
                }
                1 if !ins.is_empty() && !outs.is_empty() => {
                    // Keeps a card of the led class back.
                    let k = n.min(ins.len()) - 1;
                    let mut ids = pick(rng, &ins, k);
                    ids.extend(pick(rng, &outs, n - k));
                    act("play", ids)
                }
                2 if ins.len() >= n => {
                    // Single cards of the class, one per face, pairs left whole.
                    let mut seen: Vec<(String, i64)> = Vec::new();
                    let mut ids = Vec::new();
                    for c in &ins {
                        if ids.len() < n && !seen.contains(&(suit(c), rank(c))) {
                            seen.push((suit(c), rank(c)));
                            ids.push(id(c));
                        }
                    }
                    if ids.len() < n {
                        ids = pick(rng, &ins, n);
                    }
                    act("play", ids)
                }
                3 if pairs.len() * 2 >= n && n >= 4 => {
                    // Pairs of the class picked at random: often no tractor.
                    let mut p = pairs.clone();
                    let mut ids = Vec::new();
                    while ids.len() + 2 <= n && !p.is_empty() {
                        ids.extend(p.swap_remove(rng.random_range(0..p.len())));
                    }
                    ids.extend(
                        pick(rng, &ins, n)
                            .into_iter()
                            .filter(|i| !ids.contains(i))
                            .take(n - ids.len())
                            .collect::<Vec<_>>(),
                    );
                    act("play", ids)
                }
                4 => {
                    let other = members[((seat + 1 + rng.random_range(0..3)) % 4) as usize].clone();
                    return (other, act("play", pick(rng, &hand, n)));
                }
                _ => act("play", pick(rng, &hand, n)),
            }
        }
    };
    (me, action)
}

/// What the tractor matches covered: hands played out and scored, kitty
/// awards, tractors and throws, restores, and every refusal the mistakes
/// aim at (with enough matches).
fn tractor_report(matches: &[Match], refusals: &std::collections::BTreeSet<String>) {
    let lines = || matches.iter().flat_map(|m| m.native.iter());
    let count = |needle: &str| lines().filter(|l| l.contains(needle)).count();
    let hands = count("\"kind\":\"upgrade_hand_complete\"");
    let awards = lines()
        .filter(|l| l.contains("\"kitty_award\":") && !l.contains("\"kitty_award\":0,"))
        .count();
    let tractors = count("\"tractor_length\":");
    let throws = count("\"kind\":\"throw\"");
    let restarts = count("\"upgrade_hand_restarted_after_leader_change\"");
    let n = matches.len();
    assert!(hands >= n, "too few hands scored ({hands} in {n} matches)");
    if n >= 100 {
        let missing: Vec<&str> = [
            "the Upgrade match is complete",
            "it is not this Member's turn",
            "this Member has already declared or passed",
            "declaration accepts pass_declare or declare_trump",
            "card_ids must contain 1-2 unique ids",
            "card_ids must contain 8-8 unique ids",
            "card_ids must contain 1-25 unique ids",
            "a selected card is not in this Member's hand",
            "a single declaration must be one level card",
            "a pair declaration needs identical card faces",
            "a pair declaration needs level cards or identical jokers",
            "the declaration must be stronger than the current one",
            "the declarer must bury exactly eight cards",
            "the winning declaration cards cannot be buried",
            "trick play accepts only play",
            "all cards in a play must share an effective suit",
            "a follower must play the same number of cards",
            "the follower must exhaust the led effective suit",
            "the follower must preserve available pairs",
            "unhashable type: 'list'",
            "'str' object has no attribute 'get'",
            "'NoneType' object has no attribute 'get'",
            "start_level must be between 2 and 14",
            "target_level must be between 3 and 14",
            "target_level must be higher than start_level",
            "max_hands must be between 1 and 64",
        ]
        .into_iter()
        .filter(|t| !refusals.contains(*t))
        .collect();
        assert!(missing.is_empty(), "refusals never compared: {missing:?}");
        assert!(
            awards > 0 && tractors > 0 && throws > 0,
            "awards {awards}, tractors {tractors}, throws {throws}"
        );
        assert!(
            restarts * 4 >= n,
            "too few restores and leader changes ({restarts} of {n})"
        );
    }
    eprintln!(
        "upgrade-tractor-v1: {hands} hands scored, {awards} kitty awards, {tractors} tractor plays, {throws} throws, {restarts} restored; {} distinct refusals: {refusals:?}",
        refusals.len()
    );
}

// classical-mahjong-v1. A discard opens a claim window in which the three
// other seats answer, in any order, with no `current_player`: the match
// loop below picks the seat to act among those the window still waits for
// (`mahjong::awaiting`), and its mistakes include answers by the wrong
// seat and answers after the window has closed.

const MAHJONG: &str = "classical-mahjong-v1";

/// The options of a seeded mahjong match: the seed, one to three hands
/// (a whole hand is some three hundred actions) and varied starting points.
fn mahjong_options(seed: u64) -> Map {
    let mut options = obj! { "deal_seed" => format!("seed-{seed}") };
    options.insert(
        "max_hands",
        Value::from([1, 1, 2, 1, 3][(seed % 5) as usize]),
    );
    if seed % 3 == 1 {
        options.insert(
            "starting_points",
            Value::from([0, 500, 100_000][(seed / 3 % 3) as usize]),
        );
    }
    options
}

/// The seat whose turn it is (discard phase), else a seat the claim window
/// still waits for (`None`: nobody may act).
fn mahjong_actor(rng: &mut StdRng, state: &Value) -> Option<usize> {
    let st = state.as_object()?;
    let waiting = palaver::protocols::tables::mahjong::awaiting(st);
    let key = if waiting.is_empty() {
        st.get_str("current_player")?.to_owned()
    } else {
        waiting[rng.random_range(0..waiting.len())].clone()
    };
    (0..4).find(|n| pk(*n) == key).map(|n| n as usize)
}

/// Plays one seeded mahjong match through palaver's rules.
fn mahjong_play(seed: u64, max_steps: usize) -> Match {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6d61_686a);
    let options = mahjong_options(seed);
    let mut t = table_for_alias(MAHJONG, &options).expect("native table");
    let members: Vec<Value> = (0..4).map(member).collect();
    let mut m = Match {
        steps: Vec::new(),
        native: Vec::new(),
    };
    let meta = palaver::protocols::tables::host_metadata(MAHJONG).expect("metadata");
    let new_room = |options: &Map| {
        (
            obj! { "op" => "new", "room" => MAHJONG, "options" => Value::Object(options.clone()) },
            Ok(Value::Array(vec![
                Value::from(meta.display_name.as_str()),
                Value::from(meta.tags.as_str()),
                Value::from(meta.invite_type.as_str()),
                Value::Object(meta.default_options.clone()),
            ])),
        )
    };
    if seed % 6 == 5 {
        // First a room whose options or members the rules refuse.
        let bad = [
            obj! { "starting_points" => -1 },
            obj! { "starting_points" => 100_001 },
            obj! { "starting_points" => 1.5 },
            obj! { "starting_points" => "100" },
            obj! { "max_hands" => 0 },
            obj! { "max_hands" => 33 },
            obj! { "max_hands" => Value::Null },
            obj! { "max_hands" => true },
            obj! { "max_hands" => 2.0 },
        ];
        let mut options = bad[(seed / 6) as usize % bad.len()].clone();
        options.insert("deal_seed", Value::from(format!("bad-{seed}")));
        let (step, out) = new_room(&options);
        m.step(step, out);
        let out = table_for_alias(MAHJONG, &options)
            .expect("native table")
            .initial_state(&members);
        assert!(out.is_err(), "seed {seed}: {options:?} were accepted");
        m.step(obj! { "op" => "init", "members" => members.clone() }, out);
        // Then good options and only three members.
        let options = obj! { "deal_seed" => format!("three-{seed}") };
        let (step, out) = new_room(&options);
        m.step(step, out);
        let out = table_for_alias(MAHJONG, &options)
            .expect("native table")
            .initial_state(&members[..3]);
        m.step(
            obj! { "op" => "init", "members" => members[..3].to_vec() },
            out,
        );
    }
    let (step, out) = new_room(&options);
    m.step(step, out);
    let mut state = t.initial_state(&members).expect("initial state");
    m.step(
        obj! { "op" => "init", "members" => members.clone() },
        Ok(state.clone()),
    );
    let mut restored = false;
    for i in 0..max_steps {
        let Some(seat) = mahjong_actor(&mut rng, &state) else {
            break;
        };
        let view = t.view(&state, &members[seat]).expect("view");
        let roll: u32 = rng.random_range(0..100);
        if roll < 3 {
            let v = &members[rng.random_range(0..4)];
            let out = t.view(&state, v);
            m.step(obj! { "op" => "view", "viewer" => v.clone() }, out);
            continue;
        }
        if roll < 4 {
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
        if !restored && i > 60 && roll < 6 {
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
        let (actor, action) = if roll < 88 {
            let legal = t.legal_actions(&view);
            // The bot makes most moves (random discards seldom win); a
            // random legal action the others.
            let a = if legal.is_empty() || rng.random_range(0..10) < 7 {
                t.bot_action(&view)
            } else {
                Some(legal[rng.random_range(0..legal.len())].clone())
            };
            (
                members[seat].clone(),
                a.unwrap_or(Value::Object(obj! { "kind" => "pass_claim" })),
            )
        } else {
            mahjong_mistake(&mut rng, &state, &view, &members, seat)
        };
        let out = t.handle(state.clone(), &actor, &action);
        let done = matches!(&out, Ok(o) if o.get("completed") == Some(&Value::Bool(true)));
        let closed =
            matches!(&out, Ok(o) if canonical::to_string(o).contains("\"claim_resolved\""));
        if let Ok(o) = &out {
            state = o.get("state").cloned().unwrap();
        }
        m.step(
            obj! { "op" => "act", "actor" => actor, "action" => action },
            out,
        );
        if done {
            // One more action on a finished match is refused.
            let a = members[seat].clone();
            let late = Value::Object(obj! { "kind" => "discard", "card_id" => "x" });
            let out = t.handle(state.clone(), &a, &late);
            m.step(obj! { "op" => "act", "actor" => a, "action" => late }, out);
            break;
        }
        if closed && rng.random_range(0..4) == 0 {
            // An answer after the window closed.
            let late = members[rng.random_range(0..4)].clone();
            let kinds = ["pass_claim", "win", "pung", "chow"];
            let action = Value::Object(obj! { "kind" => kinds[rng.random_range(0..4)] });
            // (A win by the seat now to move is no late answer but a self
            // draw, which may end the match.)
            let out = t.handle(state.clone(), &late, &action);
            let done = matches!(&out, Ok(o) if o.get("completed") == Some(&Value::Bool(true)));
            if let Ok(o) = &out {
                state = o.get("state").cloned().unwrap();
            }
            m.step(
                obj! { "op" => "act", "actor" => late, "action" => action },
                out,
            );
            if done {
                break;
            }
        }
    }
    m
}

/// Something a mahjong player may get wrong: a tile not in its hand, a
/// card id that is no string, a win its hand does not make, a pung, kong or
/// chow of tiles that do not make it (or a chow by a seat not next to the
/// discarder), a concealed kong of four random tiles or a malformed list
/// of them, a discard out of turn, an answer from the discarder or from a
/// seat that has answered, a claim on its own turn, an unknown, missing or
/// unhashable kind, an action that is no object.
fn mahjong_mistake(
    rng: &mut StdRng,
    state: &Value,
    view: &Value,
    members: &[Value],
    seat: usize,
) -> (Value, Value) {
    let me = members[seat].clone();
    let hand: Vec<String> = view
        .get("my_hand")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get_str("card_id").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let pick = |rng: &mut StdRng, n: usize| -> Value {
        let mut h = hand.clone();
        let mut out = Vec::new();
        for _ in 0..n.min(h.len()) {
            out.push(Value::from(h.swap_remove(rng.random_range(0..h.len()))));
        }
        Value::Array(out)
    };
    let with = |kind: &str, ids: Value| Value::Object(obj! { "kind" => kind, "card_ids" => ids });
    let claim = view.get_str("phase") == Some("claim");
    let st = state.as_object().expect("state object");
    let someone_else = |rng: &mut StdRng| members[(seat + 1 + rng.random_range(0..3)) % 4].clone();
    let action = match rng.random_range(0..13) {
        0 => {
            // A tile of another hand (or an id that is no tile).
            let other = someone_else(rng);
            let theirs = st
                .get("deck")
                .and_then(|d| d.get("hands"))
                .and_then(|h| h.get(other.get_str("public_key").unwrap_or_default()))
                .and_then(Value::as_array)
                .and_then(|a| a.first().cloned())
                .unwrap_or(Value::from("000000000000000000000000"));
            Value::Object(obj! { "kind" => "discard", "card_id" => theirs })
        }
        1 => {
            let odd = [
                Value::from(7),
                Value::Null,
                Value::Array(vec![Value::from("x")]),
            ];
            Value::Object(
                obj! { "kind" => "discard", "card_id" => odd[rng.random_range(0..3)].clone() },
            )
        }
        2 => Value::Object(obj! { "kind" => "win" }),
        3 => {
            let (kind, n) = [("pung", 2), ("kong", 3), ("chow", 2)][rng.random_range(0..3)];
            let mut ids = pick(rng, n);
            if rng.random_range(0..3) == 0
                && let Value::Array(a) = &mut ids
                && let Some(first) = a.first_mut()
            {
                // One of them is no tile of this hand.
                *first = Value::from("000000000000000000000000");
            }
            with(kind, ids)
        }
        4 => {
            let n = [4, 4, 3, 5][rng.random_range(0..4)];
            with("concealed_kong", pick(rng, n))
        }
        5 => {
            let malformed = [
                Value::from("x"),
                Value::Null,
                Value::Array(vec![Value::from(1), Value::from(2)]),
                Value::Array(vec![Value::Array(vec![]), Value::from("a")]),
                Value::Array(vec![Value::from("a"), Value::Object(Map::new())]),
                Value::Array(vec![Value::from("a"), Value::from("a")]),
            ];
            let kind = ["pung", "chow", "concealed_kong"][rng.random_range(0..3)];
            let ids = malformed[rng.random_range(0..malformed.len())].clone();
            let ids = match (kind, ids) {
                ("concealed_kong", Value::Array(mut a)) => {
                    a.extend([Value::from("b"), Value::from("c")]);
                    Value::Array(a)
                }
                (_, ids) => ids,
            };
            with(kind, ids)
        }
        6 => {
            // Out of turn: another seat discards (or answers) with its own tile.
            let other = someone_else(rng);
            let theirs = st
                .get("deck")
                .and_then(|d| d.get("hands"))
                .and_then(|h| h.get(other.get_str("public_key").unwrap_or_default()))
                .and_then(Value::as_array)
                .and_then(|a| a.first().cloned())
                .unwrap_or(Value::Null);
            let kind = if claim { "pass_claim" } else { "discard" };
            return (
                other,
                Value::Object(obj! { "kind" => kind, "card_id" => theirs }),
            );
        }
        7 => {
            // In a window: the discarder, or a seat that already answered.
            let by = st
                .get("claim_responses")
                .and_then(Value::as_object)
                .and_then(|r| r.keys().next().map(str::to_owned))
                .filter(|_| rng.random_range(0..2) == 0)
                .or_else(|| {
                    st.get("last_discard")
                        .and_then(|d| d.get_str("public_key"))
                        .map(str::to_owned)
                });
            let actor = by
                .and_then(|k| {
                    members
                        .iter()
                        .find(|m| m.get_str("public_key") == Some(&k))
                        .cloned()
                })
                .unwrap_or_else(|| someone_else(rng));
            return (actor, Value::Object(obj! { "kind" => "pass_claim" }));
        }
        8 => {
            // A claim on one's own turn, or a turn's action in a window.
            let kinds = ["pass_claim", "pung", "chow", "discard", "concealed_kong"];
            Value::Object(obj! { "kind" => kinds[rng.random_range(0..kinds.len())] })
        }
        9 => {
            let odd = [
                Value::from("dance"),
                Value::from("pass"),
                Value::from("DISCARD"),
                Value::from(""),
                Value::from(5),
                Value::Bool(true),
                Value::Null,
                Value::Array(vec![Value::from("pung")]),
                Value::Object(obj! { "kind" => "win" }),
            ];
            Value::Object(obj! { "kind" => odd[rng.random_range(0..odd.len())].clone() })
        }
        10 => Value::Object(Map::new()),
        11 => {
            // A chow by a seat that is not next to the discarder.
            let discarder = st
                .get("last_discard")
                .and_then(|d| d.get_str("public_key"))
                .and_then(|k| (0..4).find(|n| pk(*n) == k));
            if let Some(d) = discarder {
                let far = members[(d as usize + 2 + rng.random_range(0..2)) % 4].clone();
                return (far, with("chow", pick(rng, 2)));
            }
            with("chow", pick(rng, 2))
        }
        _ => {
            let odd = [
                Value::from("discard"),
                Value::Array(vec![Value::from("win")]),
                Value::Null,
                Value::from(3),
            ];
            return (me, odd[rng.random_range(0..odd.len())].clone());
        }
    };
    (me, action)
}

#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
#[test]
fn mahjong_matches_the_reference_rules() {
    let n: u64 = std::env::var("PALAVER_TABLE_MATCHES")
        .ok()
        .map(|v| v.parse().expect("PALAVER_TABLE_MATCHES: a whole number"))
        .unwrap_or(200);
    let matches: Vec<Match> = (0..n).map(|seed| mahjong_play(seed, 1500)).collect();
    let reference = run_reference(&matches);
    let mut at = 0;
    let (mut completed, mut steps, mut refused) = (0, 0, 0);
    let mut refusals: std::collections::BTreeMap<String, usize> = Default::default();
    let mut tally: std::collections::BTreeMap<&str, usize> = Default::default();
    for (seed, m) in matches.iter().enumerate() {
        for (i, native) in m.native.iter().enumerate() {
            let theirs = reference.get(at).map(String::as_str).unwrap_or("<no line>");
            assert_eq!(
                native,
                theirs,
                "{MAHJONG} seed {seed}, step {i}: {}\npalaver:   {native}\nreference: {theirs}",
                canonical::to_string(&m.steps[i])
            );
            completed += usize::from(native.contains("\"completed\":true"));
            if let Some(text) = json::parse_str(native)
                .ok()
                .and_then(|v| v.get_str("error").map(str::to_owned))
            {
                refused += 1;
                *refusals.entry(text).or_default() += 1;
            }
            let acted = m.steps[i].get_str("op") == Some("act");
            for (name, needle) in [
                ("self-draw wins", "\"kind\":\"self_draw\""),
                ("discard wins", "\"kind\":\"discard_win\""),
                ("exhausted walls", "\"kind\":\"mahjong_wall_exhausted\""),
                ("pungs", "\"claim\":\"pung\""),
                ("kongs", "\"claim\":\"kong\""),
                ("chows", "\"claim\":\"chow\""),
                ("concealed kongs", "\"kind\":\"concealed_kong\",\"owner\""),
                ("restarts", "\"mahjong_hand_restarted_after_leader_change\""),
            ] {
                // A view shows the last result again: count what actions did.
                if acted || name == "restarts" {
                    *tally.entry(name).or_default() += native.matches(needle).count();
                }
            }
            steps += 1;
            at += 1;
        }
    }
    assert_eq!(at, reference.len(), "the reference printed more lines");
    eprintln!(
        "{MAHJONG}: {n} matches, {steps} steps, {completed} completed, {refused} refused — all equal"
    );
    eprintln!("{MAHJONG}: {tally:?}");
    for (text, count) in &refusals {
        eprintln!("{MAHJONG}: refused {count}× {text:?}");
    }
    assert!(
        completed * 2 >= n as usize,
        "too few matches completed ({completed} of {n})"
    );
    if n >= 100 {
        let wins = tally["self-draw wins"] + tally["discard wins"];
        assert!(wins > 0 && tally["exhausted walls"] > 0, "{tally:?}");
        assert!(
            tally["pungs"] > 0 && tally["chows"] > 0 && tally["kongs"] > 0,
            "{tally:?}"
        );
        assert!(tally["restarts"] * 4 >= n as usize, "{tally:?}");
        let missing: Vec<&str> = [
            "the Mahjong match is complete",
            "it is not this Member's turn",
            "card_id is not in this Member's hand",
            "turn accepts discard, win, or concealed_kong",
            "the hand does not match a supported winning shape",
            "card_ids must contain 4 unique tile ids",
            "a selected tile is not in this Member's hand",
            "a concealed kong needs four identical tile faces",
            "this Member cannot respond to the discard",
            "this Member already responded to the claim window",
            "the discard does not complete a supported win",
            "pung tiles must match the discard",
            "kong tiles must match the discard",
            "only the next seat may chow",
            "card_ids do not form a legal chow",
            "card_ids must contain 2 unique tile ids",
            "claim accepts pass_claim, win, pung, kong, or chow",
            "unhashable type: 'list'",
            "unhashable type: 'dict'",
            "'str' object has no attribute 'get'",
            "'list' object has no attribute 'get'",
            "'NoneType' object has no attribute 'get'",
            "starting_points must be between 0 and 100000",
            "max_hands must be between 1 and 32",
            "Classical Mahjong requires exactly four active Members",
        ]
        .into_iter()
        .filter(|t| !refusals.contains_key(*t))
        .collect();
        assert!(missing.is_empty(), "refusals never compared: {missing:?}");
    }
}

/// Bots alone finish every seeded mahjong match (four hands): every seat
/// the table waits for acts, and every action its legal list offers is
/// accepted.
#[test]
fn mahjong_bots_finish_every_seeded_match() {
    let members: Vec<Value> = (0..4).map(member).collect();
    let (mut wins, mut walls, mut steps) = (0, 0, 0);
    let mut outcomes = Vec::new();
    for seed in 0..30u64 {
        let options = obj! { "deal_seed" => format!("bots-{seed}") };
        let mut t = table_for_alias(MAHJONG, &options).unwrap();
        let mut state = t.initial_state(&members).unwrap();
        let mut done = false;
        for _ in 0..6000 {
            let st = state.as_object().unwrap();
            let waiting = palaver::protocols::tables::mahjong::awaiting(st);
            let key = waiting
                .first()
                .cloned()
                .unwrap_or_else(|| st.get_str("current_player").unwrap().to_owned());
            let me = members
                .iter()
                .find(|m| m.get_str("public_key") == Some(&key))
                .unwrap();
            // Seats the table is not waiting for have nothing to do.
            for other in members.iter().filter(|_| steps % 8 == 0) {
                if other != me
                    && !waiting.contains(&other.get_str("public_key").unwrap().to_owned())
                {
                    let v = t.view(&state, other).unwrap();
                    assert!(t.bot_action(&v).is_none() && t.legal_actions(&v).is_empty());
                }
            }
            let view = t.view(&state, me).unwrap();
            for a in t.legal_actions(&view) {
                assert!(
                    t.handle(state.clone(), me, &a).is_ok(),
                    "seed {seed}: legal {a:?} refused"
                );
            }
            let a = t
                .bot_action(&view)
                .expect("a bot acts when the table waits for it");
            let out = t
                .handle(state.clone(), me, &a)
                .unwrap_or_else(|e| panic!("seed {seed}: bot's {a:?}: {e}"));
            steps += 1;
            let text = canonical::to_string(out.get("events").unwrap_or(&Value::Null));
            wins += text.matches("\"kind\":\"self_draw\"").count()
                + text.matches("\"kind\":\"discard_win\"").count();
            walls += text.matches("\"kind\":\"mahjong_wall_exhausted\"").count();
            state = out.get("state").cloned().unwrap();
            if out.get("completed") == Some(&Value::Bool(true)) {
                done = true;
                outcomes.push(out.get_str("outcome").unwrap_or_default().to_owned());
                break;
            }
        }
        assert!(done, "seed {seed}: the bots did not finish");
    }
    eprintln!(
        "{MAHJONG} bots: 30 matches, {steps} actions, {wins} wins, {walls} exhausted walls; {outcomes:?}"
    );
    assert_eq!(wins + walls, 120, "four hands a match");
    assert!(wins >= 30, "the bots seldom win ({wins} of 120 hands)");
}
