//! The tank-battle-v1 simulation against the reference's: the same command
//! streams stepped by palaver's `protocols::tank` and by the reference's
//! hooks.py (through tests/reference/tank_sim.py) must give the same state
//! hash after every tick, the same batch acceptances and the same outcome.
//!
//! Streams: matches the reference's own auto commander plays against itself
//! (recorded by the harness at the start of the test, both sides, several
//! option sets), random streams from a seeded xorshift (moves, aims and
//! fire for live and dead units, and now and then a malformed, duplicate or
//! foreign command that the batch check must refuse alike), and a chaser
//! that drives the host's tanks at the guest's so that one side is wiped
//! out. Every reference state must also read back into palaver's world
//! (`World::from_value`) with the same hash. The test also checks that, over all streams, fire, hits, brick
//! breaks, power-ups, tank-on-tank collisions and both endings (elimination
//! and max_ticks) happened, so a quiet stream cannot pass vacuously.
//!
//! A second differential test holds the options palaver takes to those
//! the reference takes (its spec check, then its hooks' setup), with the
//! same tick-0 hash.
//!
//! Property tests (not ignored) feed options, maps, command batches and
//! frame states from outside to the simulation: each is taken or refused
//! with a reason, never a panic, and what is taken writes back exactly.
//!
//! The differential test needs `PALAVER_REFERENCE_PYTHON` (scripts/test
//! sets it) and is `#[ignore]`d: run it with `-- --include-ignored`; there
//! a missing reference is a failure, never a skip.

use crate::common;

use common::rng::Rng;

use palaver::json::{self, Map, Value, canonical};
use palaver::protocols::tank::{Dir, Event, Team, World, rect_blocked, validate_commands};
use std::collections::BTreeSet;
use std::process::Command as Process;

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/tank_sim.py");

/// A random direction.
fn dir(r: &mut Rng) -> Dir {
    Dir::ALL[r.below(5) as usize]
}

fn parse(text: &str) -> Value {
    json::parse_str(text).unwrap_or_else(|e| panic!("not JSON ({e:?}): {text:.200}"))
}

fn obj(entries: Vec<(&str, Value)>) -> Value {
    let mut m = Map::new();
    for (k, v) in entries {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// One tick as a simulation reports it.
struct Tick {
    tick: i64,
    hash: String,
    accepted: (bool, bool),
    outcome: String,
    state: Value,
}

/// Run the harness with `args`, one JSON value per stdout line.
fn harness(args: &[&str]) -> Vec<Value> {
    let py = common::reference_python();
    let out = Process::new(&py)
        .arg(HARNESS)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {py}: {e}"));
    assert!(
        out.status.success(),
        "tank_sim.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(parse)
        .collect()
}

fn reference(stream: &Value) -> Vec<Tick> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stream.json");
    std::fs::write(&path, canonical::to_string(stream)).unwrap();
    harness(&[path.to_str().unwrap()])
        .into_iter()
        .map(|v| {
            let m = v.as_object().expect("object line");
            let acc = |side: &str| {
                m.get("accepted")
                    .and_then(Value::as_object)
                    .and_then(|a| a.get(side))
                    .and_then(Value::as_bool)
                    .unwrap_or(true)
            };
            Tick {
                tick: m.get("tick").and_then(Value::as_i64).expect("tick"),
                hash: m.get_str("hash").expect("hash").to_string(),
                accepted: (acc("host"), acc("guest")),
                outcome: m.get_str("outcome").unwrap_or("none").to_string(),
                state: m.get("state").cloned().expect("state"),
            }
        })
        .collect()
}

/// What palaver's run saw beyond the hashes.
#[derive(Default)]
struct Seen {
    events: BTreeSet<String>,
    collisions: usize,
    refused: usize,
}

/// Step palaver's simulation through a stream whose batches a policy
/// chooses from the world the host checks them against (`lead` ticks
/// before their target), as the reference's host does. Returns the stream
/// (to replay on the reference) and every tick.
fn palaver(
    options: &Value,
    lead: i64,
    ticks: usize,
    seen: &mut Seen,
    mut policy: impl FnMut(&World, i64) -> (Value, Value),
) -> (Value, Vec<Tick>) {
    let mut world = World::from_options(options.as_object().unwrap()).expect("options");
    let mut history = vec![world.clone()];
    let mut out = vec![Tick {
        tick: 0,
        hash: world.state_hash(),
        accepted: (true, true),
        outcome: "none".into(),
        state: world.to_value(),
    }];
    let mut batches = Vec::new();
    for tick in 1..=ticks as i64 {
        let basis = &history[(tick - lead).max(0) as usize];
        let (host, guest) = policy(basis, tick);
        let h = validate_commands(basis, Team::Host, &host, tick);
        let g = validate_commands(basis, Team::Guest, &guest, tick);
        seen.refused += usize::from(h.is_err()) + usize::from(g.is_err());
        let accepted = (h.is_ok(), g.is_ok());
        batches.push(obj(vec![("host", host), ("guest", guest)]));
        let before = world.clone();
        world.step(&h.unwrap_or_default(), &g.unwrap_or_default());
        // A live tank that meant to move onto open ground and stayed put was
        // stopped by another tank.
        for (b, a) in before.tanks.iter().zip(&world.tanks) {
            if b.hp > 0 && a.last_move != Dir::None && (a.x, a.y) == (b.x, b.y) {
                let (vx, vy) = a.last_move.vector();
                let s = world.rules.balance.speed;
                if !rect_blocked(&world.grid, b.x + vx * s, b.y + vy * s) {
                    seen.collisions += 1;
                }
            }
        }
        for e in &world.events {
            seen.events.insert(match e {
                Event::GameOver { reason, .. } => format!("game_over:{}", reason.as_str()),
                other => other
                    .to_value()
                    .as_object()
                    .unwrap()
                    .get_str("type")
                    .unwrap()
                    .to_string(),
            });
        }
        out.push(Tick {
            tick,
            hash: world.state_hash(),
            accepted,
            outcome: world.outcome().as_str().into(),
            state: Value::Null,
        });
        history.push(world.clone());
        if world.game_over {
            break;
        }
    }
    // Keep the states for the report on a mismatch.
    for (t, w) in out.iter_mut().zip(&history).skip(1) {
        t.state = w.to_value();
    }
    let stream = obj(vec![
        ("options", options.clone()),
        ("lead", lead.into()),
        ("ticks", Value::Array(batches)),
    ]);
    (stream, out)
}

/// The first place two JSON values differ, as a path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&str> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, &format!("{path}.{k}")) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{path}.{k}: {p:?} vs {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(p, q, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: {} vs {} items", x.len(), y.len()))
        }
        _ => {
            let (p, q) = (canonical::to_string(a), canonical::to_string(b));
            (p != q).then(|| format!("{path}: palaver {p} vs reference {q}"))
        }
    }
}

/// Replay `stream` on the reference and hold palaver's ticks to it.
fn compare(name: &str, stream: &Value, ours: &[Tick]) {
    let theirs = reference(stream);
    eprintln!(
        "{name}: {} ticks, ended {}",
        ours.len() - 1,
        ours.last().map(|t| t.outcome.as_str()).unwrap_or("?")
    );
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o.tick, t.tick, "{name}: tick numbering");
        if o.hash != t.hash {
            let d = first_difference(&o.state, &t.state, "state")
                .unwrap_or_else(|| "no field differs (serialisation)".into());
            panic!(
                "{name}: the state hash differs first at tick {}: {d}",
                o.tick
            );
        }
        let read = World::from_value(&t.state).unwrap_or_else(|e| {
            panic!(
                "{name}: the reference's state at tick {} does not read back: {e}",
                t.tick
            )
        });
        assert_eq!(
            read.state_hash(),
            t.hash,
            "{name}: the state read back at tick {}",
            t.tick
        );
        assert_eq!(
            o.accepted, t.accepted,
            "{name}: batch acceptance (host, guest) at tick {}",
            o.tick
        );
        assert_eq!(o.outcome, t.outcome, "{name}: outcome at tick {}", o.tick);
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{name}: palaver ran {} ticks, the reference {}",
        ours.len() - 1,
        theirs.len() - 1
    );
}

fn command(unit: String, mv: Dir, aim: Dir, fire: bool) -> Value {
    obj(vec![
        ("unit_id", unit.into()),
        ("move", mv.as_str().into()),
        ("aim", aim.as_str().into()),
        ("fire", fire.into()),
    ])
}

/// A random batch for a side: mostly the live units, sometimes a dead one,
/// now and then a command the check must refuse.
fn random_batch(world: &World, team: Team, rng: &mut Rng) -> Value {
    let mut list = Vec::new();
    if rng.chance(30) {
        return Value::Array(list);
    }
    for t in world.tanks.iter().filter(|t| t.team() == team) {
        if (t.hp > 0 || rng.chance(3)) && rng.chance(70) {
            list.push(command(
                t.id.to_string(),
                dir(rng),
                dir(rng),
                rng.chance(40),
            ));
        }
    }
    if rng.chance(4) {
        let p = team.prefix();
        let q = team.other().prefix();
        list.push(match rng.below(7) {
            0 => command(format!("{q}0"), Dir::Up, Dir::None, true),
            1 => command(format!("{p}99"), Dir::Up, Dir::None, true),
            2 => obj(vec![
                ("unit_id", format!("{p}0").into()),
                ("move", "sideways".into()),
            ]),
            3 => obj(vec![
                ("unit_id", format!("{p}0").into()),
                ("fire", "yes".into()),
            ]),
            4 => obj(vec![
                ("unit_id", format!("{p}0").into()),
                ("speed", 3.into()),
            ]),
            5 => command(format!("{p}0"), Dir::Left, Dir::Left, false),
            _ => Value::from("h0"),
        });
        if matches!(list.last(), Some(v) if v.as_object().and_then(|m| m.get_str("unit_id")) == Some(&format!("{p}0")))
            && rng.chance(50)
        {
            list.push(command(format!("{p}0"), Dir::Down, Dir::None, false));
        }
    }
    // Only some fields: the rest take their defaults.
    if rng.chance(10)
        && let Some(t) = world.tanks.iter().find(|t| t.team() == team && t.hp > 0)
        && !list
            .iter()
            .any(|v| v.as_object().and_then(|m| m.get_str("unit_id")) == Some(&t.id.to_string()))
    {
        list.push(obj(vec![
            ("unit_id", t.id.to_string().into()),
            ("move", dir(rng).as_str().into()),
        ]));
    }
    Value::Array(list)
}

/// The host's tanks hunt the nearest guest tank: fire when lined up, else
/// close in along the longer axis (sideways now and then to get round
/// walls). The guest's tanks wander.
fn chase(world: &World, rng: &mut Rng) -> (Value, Value) {
    let mut host = Vec::new();
    for t in world
        .tanks
        .iter()
        .filter(|t| t.team() == Team::Host && t.hp > 0)
    {
        let Some(e) = world
            .tanks
            .iter()
            .filter(|e| e.team() == Team::Guest && e.hp > 0)
            .min_by_key(|e| (e.x - t.x).abs() + (e.y - t.y).abs())
        else {
            continue;
        };
        let (dx, dy) = (e.x - t.x, e.y - t.y);
        let toward = if dx.abs() > dy.abs() {
            if dx > 0 { Dir::Right } else { Dir::Left }
        } else if dy > 0 {
            Dir::Down
        } else {
            Dir::Up
        };
        let lined = dx.abs() < 300 || dy.abs() < 300;
        let mv = if lined && rng.chance(60) {
            Dir::None
        } else if rng.chance(25) {
            dir(rng)
        } else {
            toward
        };
        host.push(command(t.id.to_string(), mv, toward, lined));
    }
    let guest = random_batch(world, Team::Guest, rng);
    (Value::Array(host), guest)
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn palaver_steps_like_the_reference() {
    let mut seen = Seen::default();

    // The reference's commander against itself, replayed by both.
    for (i, opts) in [
        r#"{"team_size":5,"pickup_mode":"powerups"}"#,
        r#"{"team_size":12,"friendly_fire":true,"pickup_mode":"powerups","max_ticks":400}"#,
        r#"{"team_size":1,"max_ticks":600,"pickup_mode":"powerups","balance":{"tank":{"hp":2,"speed":333,"fire_cooldown":3,"bullet_speed":1000}}}"#,
    ]
    .iter()
    .enumerate()
    {
        let recorded = harness(&["--record", "1800", opts]).pop().expect("a stream");
        let options = recorded.as_object().unwrap().get("options").unwrap().clone();
        let batches = recorded.as_object().unwrap().get("ticks").unwrap().as_array().unwrap().clone();
        let (stream, ours) = palaver(&options, 1, batches.len(), &mut seen, |_, tick| {
            let b = batches[tick as usize - 1].as_object().unwrap();
            (b.get("host").unwrap().clone(), b.get("guest").unwrap().clone())
        });
        assert!(ours.len() > 60, "recorded match {i} is {} ticks", ours.len());
        compare(&format!("recorded match {i} ({opts})"), &stream, &ours);
    }

    // Random streams.
    let maps = [
        "",
        "###########\n#...P.....#\n#.BBB.S...#\n#...W.....#\n#.S..B..P.#\n#...BBB...#\n#P..W...S.#\n#...B.....#\n###########\n",
    ];
    for seed in 1..=6u64 {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x1234_5678_9abc_def1));
        let team = [5, 3, 10, 2, 5, 12][seed as usize - 1];
        let map = maps[(seed % 2) as usize];
        let options = obj(vec![
            ("team_size", Value::from(team as i64)),
            ("max_ticks", Value::from(300 + 50 * seed as i64)),
            (
                "pickup_mode",
                if seed % 3 == 0 { "none" } else { "powerups" }.into(),
            ),
            ("friendly_fire", (seed % 2 == 0).into()),
            ("powerup_duration_ticks", Value::from(10 + 20 * seed as i64)),
            ("map_text", map.into()),
            (
                "balance",
                obj(vec![(
                    "tank",
                    obj(vec![
                        ("hp", Value::from(1 + seed as i64 % 4)),
                        (
                            "speed",
                            Value::from([180, 40, 1000, 250, 333, 125][seed as usize - 1]),
                        ),
                        ("fire_cooldown", Value::from(1 + seed as i64 * 3)),
                        (
                            "bullet_speed",
                            Value::from([560, 100, 3000, 251, 999, 1750][seed as usize - 1]),
                        ),
                    ]),
                )]),
            ),
        ]);
        let lead = 1 + (seed % 4) as i64;
        let (stream, ours) = palaver(&options, lead, 100_000, &mut seen, |w, _| {
            (
                random_batch(w, Team::Host, &mut rng),
                random_batch(w, Team::Guest, &mut rng),
            )
        });
        compare(&format!("random stream seed {seed}"), &stream, &ours);
    }

    // The chaser: a side wiped out.
    for seed in 1..=3u64 {
        let mut rng = Rng(0xdead_beef ^ seed);
        let options = obj(vec![
            ("team_size", Value::from(seed as i64 + 1)),
            ("max_ticks", 1500.into()),
            ("pickup_mode", "powerups".into()),
            ("map_text", maps[1].into()),
        ]);
        let (stream, ours) = palaver(&options, 2, 100_000, &mut seen, |w, _| chase(w, &mut rng));
        compare(&format!("chaser seed {seed}"), &stream, &ours);
    }

    for kind in [
        "fire",
        "hit",
        "destroyed",
        "brick_destroyed",
        "pickup",
        "game_over:elimination",
        "game_over:tick_limit",
    ] {
        assert!(
            seen.events.contains(kind),
            "no stream had a {kind} event: {:?}",
            seen.events
        );
    }
    assert!(seen.collisions > 0, "no tank ever stopped another");
    assert!(seen.refused > 0, "no batch was ever refused");
}

/// Replace the `pick`-th node (in a depth-first walk) of `v` by `with`.
fn replace_node(v: &mut Value, pick: &mut usize, with: &Value) -> bool {
    if *pick == 0 {
        *v = with.clone();
        return true;
    }
    *pick -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|x| replace_node(x, pick, with)),
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().map(str::to_string).collect();
            keys.iter()
                .any(|k| m.get_mut(k).is_some_and(|x| replace_node(x, pick, with)))
        }
        _ => false,
    }
}

fn small_world() -> World {
    let options = parse(r#"{"team_size":2,"pickup_mode":"powerups","max_ticks":50}"#);
    World::from_options(options.as_object().unwrap()).unwrap()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    #[test]
    fn options_from_outside_are_taken_or_refused_never_a_panic(v in common::value()) {
        let mut options = Map::new();
        for key in ["team_size", "max_ticks", "map_text", "balance", "pickup_mode", "friendly_fire"] {
            options.insert(key, v.clone());
            let _ = World::from_options(&options);
            options.remove(key);
        }
        if let Some(m) = v.as_object()
            && let Ok(w) = World::from_options(m)
        {
            proptest::prop_assert_eq!(w.canonical_bytes(), canonical::to_vec(&w.to_value()));
        }
    }

    #[test]
    fn maps_from_outside_are_parsed_or_refused(text in "[#.BWSP\\n\\r x]{0,200}") {
        let _ = palaver::protocols::tank::parse_map(&text);
    }

    #[test]
    fn batches_from_outside_are_normalised_or_refused_and_step_cleanly(
        v in common::value(),
        picks in proptest::collection::vec((0usize..6, 0usize..6, 0usize..6, proptest::bool::ANY), 0..8),
        ticks in 1usize..40,
    ) {
        let mut w = small_world();
        let _ = validate_commands(&w, Team::Host, &v, 1);
        let _ = validate_commands(&w, Team::Guest, &Value::Array(vec![v.clone()]), 1);
        let units = ["h0", "h1", "g0", "g1", "h2", "h01"];
        let batch = Value::Array(
            picks
                .iter()
                .map(|&(u, m, a, f)| {
                    command(units[u].to_string(), Dir::ALL[m % 5], Dir::ALL[a % 5], f)
                })
                .collect(),
        );
        for tick in 1..=ticks as i64 {
            let h = validate_commands(&w, Team::Host, &batch, tick).unwrap_or_default();
            let g = validate_commands(&w, Team::Guest, &batch, tick).unwrap_or_default();
            w.step(&h, &g);
            proptest::prop_assert_eq!(w.canonical_bytes(), canonical::to_vec(&w.to_value()));
        }
    }

    #[test]
    fn frame_states_from_outside_read_back_exactly_or_are_refused(
        pick in 0usize..4000,
        with in common::value(),
    ) {
        let mut w = small_world();
        let fire: Vec<_> = validate_commands(
            &w,
            Team::Host,
            &parse(r#"[{"unit_id":"h0","fire":true,"move":"up"}]"#),
            1,
        )
        .unwrap();
        w.step(&fire, &[]);
        let mut v = w.to_value();
        let mut at = pick;
        replace_node(&mut v, &mut at, &with);
        if let Ok(back) = World::from_value(&v) {
            proptest::prop_assert_eq!(back.canonical_bytes(), canonical::to_vec(&v));
        }
    }
}

/// Option values to try: range edges, wrong types, odd maps.
fn option_pool(key: &str, rng: &mut Rng) -> Value {
    let (lo, hi) = match key {
        "team_size" => (1, 32),
        "max_ticks" => (10, 100_000),
        "powerup_duration_ticks" => (10, 10_000),
        _ => (0, 1),
    };
    let edges = [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1];
    match key {
        "map_text" => {
            let maps = [
                "",
                "   ",
                "#####\n#...#\n#.P.#\n#...#\n#####",
                "#####\r\n#...#\r\n#.P.#\r\n#...#\r\n#####\r\n",
                "\n\n#######\n#..S..#\n#.BWB.#\n#P...P#\n#######\n\n",
                "#####\u{c}#...#\u{c}#...#\u{c}#...#\u{c}#####",
                "#####\n#...#\n#...#\n#...#\n##.##",
                "#####\n#.x.#\n#...#\n#...#\n#####",
                "#####\n#...#\n#...#\n#####",
                "####\n#..#\n#..#\n#..#\n####",
                "#####\n#...#\n#....#\n#...#\n#####",
                "#####\n#.é.#\n#...#\n#...#\n#####",
                "#####\n#...# \n#...#\n#...#\n#####",
            ];
            if rng.chance(5) {
                return Value::from(format!("#####\n{}", "#...#\n".repeat(5500)));
            }
            Value::from(maps[rng.below(maps.len() as u64) as usize])
        }
        "balance" => {
            let cols = ["hp", "speed", "fire_cooldown", "bullet_speed"];
            let ranges = [(1, 99), (40, 1000), (1, 60), (100, 3000)];
            let mut row = Map::new();
            for (c, (lo, hi)) in cols.iter().zip(ranges) {
                if rng.chance(5) {
                    continue;
                }
                let n = [lo - 1, lo, hi, hi + 1, (lo + hi) / 2][rng.below(5) as usize];
                row.insert(
                    *c,
                    if rng.chance(5) {
                        Value::from(n as f64)
                    } else {
                        n.into()
                    },
                );
            }
            if rng.chance(5) {
                row.insert("armor", 1.into());
            }
            let name = ["tank", "heavy"][rng.below(2) as usize];
            match rng.below(8) {
                0 => Value::Null,
                1 => Value::Array(vec![]),
                2 => obj(vec![(name, 3.into())]),
                3 => obj(vec![]),
                _ => obj(vec![(name, Value::Object(row))]),
            }
        }
        "friendly_fire" | "pickup_mode" => [
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
            "none".into(),
            "powerups".into(),
            "mines".into(),
            1.into(),
        ][rng.below(7) as usize]
            .clone(),
        _ => match rng.below(6) {
            0 => Value::Null,
            1 => Value::from(edges[0] as f64),
            2 => Value::from(edges[1].to_string()),
            3 => Value::Bool(true),
            _ => Value::from(edges[rng.below(6) as usize]),
        },
    }
}

#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn options_are_taken_or_refused_like_the_reference() {
    let keys = [
        "team_size",
        "max_ticks",
        "map_text",
        "friendly_fire",
        "pickup_mode",
        "powerup_duration_ticks",
        "balance",
    ];
    let mut rng = Rng(0x005e_ed0f_7a4c);
    let mut cases = vec![obj(vec![])];
    for _ in 0..400 {
        let mut m = Map::new();
        for _ in 0..=rng.below(3) {
            let key = keys[rng.below(keys.len() as u64) as usize];
            m.insert(key, option_pool(key, &mut rng));
        }
        if rng.chance(10) {
            m.insert("unrelated", "x".into());
        }
        cases.push(Value::Object(m));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("options.json");
    std::fs::write(&path, canonical::to_string(&Value::Array(cases.clone()))).unwrap();
    let answers = harness(&["--options", path.to_str().unwrap()]);
    assert_eq!(answers.len(), cases.len());
    let (mut taken, mut refused) = (0, 0);
    for (case, answer) in cases.iter().zip(&answers) {
        let a = answer.as_object().unwrap();
        let ours = World::from_options(case.as_object().unwrap());
        let theirs = a.get("ok").and_then(Value::as_bool).unwrap();
        let what = canonical::to_string(case);
        match ours {
            Ok(w) => {
                assert!(
                    theirs,
                    "palaver takes {what:.300}, the reference refuses: {:?}",
                    a.get_str("error")
                );
                assert_eq!(
                    Some(w.state_hash().as_str()),
                    a.get_str("hash"),
                    "tick 0 of {what:.300}"
                );
                taken += 1;
            }
            Err(e) => {
                assert!(
                    !theirs,
                    "palaver refuses {what:.300} ({e}), the reference takes it"
                );
                refused += 1;
            }
        }
    }
    assert!(
        taken > 40 && refused > 40,
        "taken {taken}, refused {refused}"
    );
}
