//! Unit tests of the rules.

use super::*;
use crate::json::{Value, canonical};

fn world(options: &str) -> World {
    let v = crate::json::parse_str(options).unwrap();
    World::from_options(v.as_object().unwrap()).unwrap()
}

#[test]
fn canonical_writer_matches_canonical_json() {
    let mut w = world(r#"{"pickup_mode":"powerups"}"#);
    assert_eq!(w.canonical_bytes(), canonical::to_vec(&w.to_value()));
    let fire: Vec<Command> = w
        .tanks
        .iter()
        .map(|t| Command {
            unit: t.id,
            mv: Dir::None,
            aim: Dir::None,
            fire: true,
        })
        .collect();
    w.step(&fire, &fire);
    assert!(!w.bullets.is_empty() && !w.events.is_empty());
    assert_eq!(w.canonical_bytes(), canonical::to_vec(&w.to_value()));
}

/// A 9×7 open field with a brick and a power-up, one tank a side.
const FIELD: &str = "#########\n#.......#\n#.......#\n#...B...#\n#.......#\n#...P...#\n#########";

fn field(extra: &str) -> World {
    let opts = format!(r#"{{"team_size":1,"map_text":{:?}{extra}}}"#, FIELD);
    world(&opts)
}

fn cmd(unit: &str, mv: Dir, aim: Dir, fire: bool) -> Command {
    Command {
        unit: UnitId::parse(unit).unwrap(),
        mv,
        aim,
        fire,
    }
}

fn place(w: &mut World, id: &str, row: usize, col: usize) {
    let id = UnitId::parse(id).unwrap();
    let t = w.tanks.iter_mut().find(|t| t.id == id).unwrap();
    (t.x, t.y) = cell_center(row, col);
}

#[test]
fn the_default_map_is_point_symmetric_and_spawns_in_opposite_corners() {
    let g = default_grid();
    assert_eq!((g.rows, g.cols), (31, 31));
    for r in 0..31 {
        for c in 0..31 {
            assert_eq!(g.tile(r, c), g.tile(30 - r, 30 - c), "({r},{c})");
        }
    }
    assert_eq!(parse_map(&g.to_text()).unwrap(), g);
    let w = world("{}");
    assert_eq!(w.tanks.len(), 10);
    let h0 = w.tank(UnitId::parse("h0").unwrap()).unwrap();
    let g0 = w.tank(UnitId::parse("g0").unwrap()).unwrap();
    assert_eq!((h0.x, h0.y, h0.facing), (29_500, 29_500, Dir::Up));
    assert_eq!((g0.x, g0.y, g0.facing), (1_500, 1_500, Dir::Down));
    // Pickup cells are floor once the match starts, with or without power-ups.
    assert!(!w.grid.cells.contains(&PICKUP));
    assert!(w.pickups.is_empty());
    let p = world(r#"{"pickup_mode":"powerups"}"#);
    let kinds: Vec<_> = p.pickups.iter().map(|p| p.kind).collect();
    use PickupKind::*;
    assert_eq!(kinds, [Repair, Speed, Rapid, Rapid, Speed, Repair]);
}

#[test]
fn options_out_of_range_are_refused_with_a_reason() {
    for bad in [
        r#"{"team_size":0}"#,
        r#"{"team_size":33}"#,
        r#"{"team_size":"5"}"#,
        r#"{"team_size":5.0}"#,
        r#"{"max_ticks":9}"#,
        r#"{"max_ticks":100001}"#,
        r#"{"powerup_duration_ticks":9}"#,
        r#"{"pickup_mode":"mines"}"#,
        r#"{"friendly_fire":1}"#,
        r#"{"map_text":7}"#,
        r#"{"balance":{"tank":{"hp":100}}}"#,
        r#"{"balance":{"tank":{"speed":39}}}"#,
        r#"{"balance":{"tank":{"fire_cooldown":61}}}"#,
        r#"{"balance":{"tank":{"bullet_speed":3001}}}"#,
        r#"{"balance":{"tank":[]}}"#,
        r#"{"balance":3}"#,
        r#"{"balance":null}"#,
        r#"{"balance":{"tank":{"hp":9}}}"#,
        r#"{"balance":{"tank":{"hp":9,"speed":180,"fire_cooldown":7,"bullet_speed":560,"armor":1}}}"#,
        r#"{"balance":{"heavy":{"hp":0,"speed":180,"fire_cooldown":7,"bullet_speed":560}}}"#,
        r#"{"map_text":null}"#,
        r#"{"friendly_fire":null}"#,
        r#"{"pickup_mode":null}"#,
        "{\"team_size\":32,\"map_text\":\"#####\\n#...#\\n#...#\\n#...#\\n#####\"}",
    ] {
        let v = crate::json::parse_str(bad).unwrap();
        let e = MatchSetup::from_options(v.as_object().unwrap()).unwrap_err();
        assert!(!e.reason.is_empty(), "{bad}");
    }
    let w = world(
        r#"{"balance":{"tank":{"hp":9,"speed":180,"fire_cooldown":7,"bullet_speed":560},"heavy":{"hp":99,"speed":40,"fire_cooldown":60,"bullet_speed":100}},"map_text":"","extra":true}"#,
    );
    assert_eq!(w.rules.balance.hp, 9);
    assert_eq!(w.rules.balance.speed, 180);
    let mut floor = default_grid();
    for c in floor.cells.iter_mut().filter(|c| **c == PICKUP) {
        *c = FLOOR;
    }
    assert_eq!(w.grid, floor);
}

#[test]
fn maps_parse_like_the_reference() {
    let ok = "\n#####\r\n#.S.#\r\n   \n#BWP#\n#...#\n#####\n\n";
    let g = parse_map(ok).unwrap();
    assert_eq!((g.rows, g.cols), (5, 5));
    assert_eq!(g.tile(2, 3), PICKUP);
    assert_eq!(g.tile_at(-1, 0), STEEL);
    for bad in [
        "#####\n#...#\n#####",
        "#####\n#...#\n#..#\n#...#\n#####",
        "#####\n#...#\n#.x.#\n#...#\n#####",
        "#####\n#...#\n....#\n#...#\n#####",
        "#####\n#...#\n#...#\n#...#\n##.##",
        "####\n#..#\n#..#\n#..#\n####",
    ] {
        assert!(parse_map(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn unit_ids_are_strict_and_sort_as_text() {
    for bad in ["", "h", "x1", "h01", "h1000", "H1", "h-1", "h1 "] {
        assert_eq!(UnitId::parse(bad), None, "{bad:?}");
    }
    let mut ids: Vec<UnitId> = ["h2", "g1", "h10", "h0"]
        .iter()
        .map(|s| UnitId::parse(s).unwrap())
        .collect();
    ids.sort_by(|a, b| a.text_cmp(b));
    let text: Vec<String> = ids.iter().map(ToString::to_string).collect();
    assert_eq!(text, ["g1", "h0", "h10", "h2"]);
}

#[test]
fn batches_are_checked_and_normalised() {
    let mut w = world(r#"{"team_size":12}"#);
    let v = |s: &str| crate::json::parse_str(s).unwrap();
    let ok = validate_commands(
        &w,
        Team::Host,
        &v(r#"[{"unit_id":"h2","fire":true},{"unit_id":"h10","move":"left","aim":"up"}]"#),
        1,
    )
    .unwrap();
    assert_eq!(ok[0], cmd("h10", Dir::Left, Dir::Up, false));
    assert_eq!(ok[1], cmd("h2", Dir::None, Dir::None, true));
    assert_eq!(
        canonical::to_string(&commands_to_value(&ok[1..])),
        r#"[{"aim":"none","fire":true,"move":"none","unit_id":"h2"}]"#
    );
    for (batch, tick) in [
        (r#"[]"#, 0),
        (r#"{}"#, 1),
        (r#"[1]"#, 1),
        (r#"[{"unit_id":"h0","speed":2}]"#, 1),
        (r#"[{"unit_id":"h12"}]"#, 1),
        (r#"[{"unit_id":"g0"}]"#, 1),
        (r#"[{"unit_id":"h0"},{"unit_id":"h0"}]"#, 1),
        (r#"[{"unit_id":"h0","move":"north"}]"#, 1),
        (r#"[{"unit_id":"h0","aim":null}]"#, 1),
        (r#"[{"unit_id":"h0","fire":1}]"#, 1),
        (r#"[{"unit_id":7}]"#, 1),
    ] {
        assert!(
            validate_commands(&w, Team::Host, &v(batch), tick).is_err(),
            "{batch} for tick {tick}"
        );
    }
    w.tanks[0].hp = 0;
    assert!(validate_commands(&w, Team::Host, &v(r#"[{"unit_id":"h0"}]"#), 1).is_err());
    assert!(validate_commands(&w, Team::Guest, &v(r#"[{"unit_id":"g0"}]"#), 5).is_ok());
}

#[test]
fn tanks_stop_at_walls_and_at_each_other_without_priority() {
    let mut w = field("");
    place(&mut w, "h0", 1, 2);
    place(&mut w, "g0", 1, 3);
    // They drive at each other: the moved tanks would overlap, so
    // neither moves.
    w.step(
        &[cmd("h0", Dir::Right, Dir::None, false)],
        &[cmd("g0", Dir::Left, Dir::None, false)],
    );
    assert_eq!((w.tanks[0].x, w.tanks[1].x), (2_500, 3_500));
    assert_eq!(
        (w.tanks[0].facing, w.tanks[1].facing),
        (Dir::Right, Dir::Left)
    );
    // The host backs away; without a new command it keeps going until
    // the wall stops it (its side may touch the wall, not enter it).
    w.step(
        &[cmd("h0", Dir::Left, Dir::Right, false)],
        &[cmd("g0", Dir::None, Dir::None, false)],
    );
    assert_eq!(w.tanks[0].x, 2_320);
    assert_eq!(w.tanks[0].facing, Dir::Right);
    for _ in 0..10 {
        w.step(&[], &[]);
    }
    assert_eq!(w.tanks[0].x, 1_420);
    assert!(!rect_blocked(&w.grid, w.tanks[0].x, w.tanks[0].y));
    assert!(rect_blocked(&w.grid, w.tanks[0].x - 180, w.tanks[0].y));
    assert_eq!(w.tanks[1].x, 3_500);
}

#[test]
fn shells_break_bricks_hit_tanks_and_end_the_match() {
    let mut w =
        field(r#","balance":{"tank":{"hp":2,"speed":180,"fire_cooldown":3,"bullet_speed":560}}"#);
    place(&mut w, "h0", 5, 4);
    place(&mut w, "g0", 1, 4);
    // Up from (5,4): the brick at (3,4) stops the shell and breaks.
    let fire = cmd("h0", Dir::None, Dir::Up, true);
    let ev = w.step(&[fire], &[]).to_vec();
    assert_eq!(
        ev,
        [Event::Fire {
            tank: UnitId::parse("h0").unwrap(),
            x: 4_500,
            y: 5_500 - MUZZLE
        }]
    );
    assert_eq!(w.bullets.len(), 1);
    assert_eq!(w.tanks[0].fire_cd, 3);
    let mut broke = false;
    for _ in 0..5 {
        for e in w.step(&[], &[]) {
            if let Event::BrickDestroyed { bullets, row, col } = e {
                assert_eq!(
                    (bullets.as_slice(), *row, *col),
                    (&["b1-h0".to_string()][..], 3, 4)
                );
                broke = true;
            }
        }
    }
    assert!(broke);
    assert_eq!(w.grid.tile(3, 4), FLOOR);
    // The host kept firing (last_fire) every 3 ticks; the next shells fly
    // through the gap and hit the guest twice.
    let mut hits = 0;
    while !w.game_over && w.tick < 60 {
        for e in w.step(&[], &[]) {
            if let Event::Hit { victim_hp, .. } = e {
                hits += 1;
                assert_eq!(*victim_hp, 2 - hits);
            }
        }
    }
    assert_eq!(hits, 2);
    assert_eq!(w.outcome(), Outcome::Host);
    assert_eq!(
        w.events.last(),
        Some(&Event::GameOver {
            winner: Outcome::Host,
            reason: EndReason::Elimination
        })
    );
    assert_eq!((w.host_alive, w.guest_alive), (1, 0));
}

#[test]
fn at_max_ticks_more_tanks_then_more_hp_wins() {
    let mut w = field(r#","max_ticks":10"#);
    for _ in 0..9 {
        w.step(&[], &[]);
        assert_eq!(w.outcome(), Outcome::None);
    }
    w.tanks[1].hp -= 1;
    w.step(&[], &[]);
    assert_eq!(w.outcome(), Outcome::Host);
    assert_eq!(
        w.events.last(),
        Some(&Event::GameOver {
            winner: Outcome::Host,
            reason: EndReason::TickLimit
        })
    );
    let mut d = field(r#","max_ticks":10"#);
    for _ in 0..10 {
        d.step(&[], &[]);
    }
    assert_eq!(d.outcome(), Outcome::Draw);
}

#[test]
fn a_power_up_goes_to_the_one_tank_on_it() {
    let mut w = field(r#","pickup_mode":"powerups","powerup_duration_ticks":20"#);
    assert_eq!(w.pickups.len(), 1);
    assert_eq!(w.pickups[0].kind, PickupKind::Repair);
    w.tanks[0].hp = 1;
    place(&mut w, "h0", 5, 4);
    let ev = w.step(&[], &[]).to_vec();
    assert!(ev.contains(&Event::Pickup {
        tank: UnitId::parse("h0").unwrap(),
        pickup: 0,
        kind: PickupKind::Repair
    }));
    assert_eq!(w.tanks[0].hp, 2);
    assert!(!w.pickups[0].active);
    assert_eq!(
        w.to_value()
            .as_object()
            .unwrap()
            .get("pickups")
            .map(canonical::to_string)
            .unwrap(),
        r#"[{"active":false,"id":"p0","kind":"repair","x":4500,"y":5500}]"#
    );
}

#[test]
fn a_step_is_fast_enough_for_ten_hertz() {
    // Debug builds are slow; this only guards against a blow-up (the
    // reference's 0.2 ms budget is for optimised builds).
    let mut w = world(r#"{"pickup_mode":"powerups"}"#);
    let mut r = 7u64;
    let started = std::time::Instant::now();
    for _ in 0..300 {
        let mut cmds = Vec::new();
        for t in &w.tanks {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            cmds.push(Command {
                unit: t.id,
                mv: Dir::ALL[(r % 5) as usize],
                aim: Dir::ALL[(r / 5 % 5) as usize],
                fire: r.is_multiple_of(3),
            });
        }
        w.step(&cmds, &cmds);
        let _ = w.state_hash();
    }
    let took = started.elapsed();
    eprintln!("300 ticks of 5 v 5 with state_hash: {took:?}");
    assert!(took.as_secs() < 10);
}

#[test]
fn a_frame_state_reads_back_into_the_same_world() {
    let mut w = field(
        r#","pickup_mode":"powerups","balance":{"tank":{"hp":2,"speed":180,"fire_cooldown":3,"bullet_speed":560}}"#,
    );
    place(&mut w, "h0", 5, 4);
    place(&mut w, "g0", 1, 4);
    w.step(&[cmd("h0", Dir::None, Dir::Up, true)], &[]);
    for _ in 0..40 {
        let back = World::from_value(&w.to_value()).unwrap();
        assert_eq!(back, w, "tick {}", w.tick);
        assert_eq!(back.state_hash(), w.state_hash());
        if w.game_over {
            break;
        }
        w.step(&[], &[]);
    }
    assert!(w.game_over);
    let good = w.to_value();
    let tamper = |path: &[&str], v: Value| {
        let mut s = good.clone();
        let mut at = &mut s;
        for (i, k) in path.iter().enumerate() {
            at = if let Ok(n) = k.parse::<usize>() {
                match at {
                    Value::Array(a) => &mut a[n],
                    _ => unreachable!("a list"),
                }
            } else if i + 1 == path.len() {
                at.as_object_mut().unwrap().insert(*k, v.clone());
                return s;
            } else {
                at.as_object_mut().unwrap().get_mut(k).unwrap()
            };
        }
        *at = v;
        s
    };
    for bad in [
        tamper(&["tanks", "0", "hp"], 100.into()),
        tamper(&["tanks", "0", "hp"], "2".into()),
        tamper(&["tanks", "0", "x"], (-5i64).into()),
        tamper(&["tanks", "0", "id"], "g0".into()),
        tamper(&["tanks", "0", "extra"], true.into()),
        tamper(&["tick"], (-1i64).into()),
        tamper(&["winner"], "nobody".into()),
        tamper(&["rules", "team_size"], 2.into()),
        tamper(&["grid", "0", "0"], ".#".into()),
        tamper(&["extra"], Value::Null),
        Value::Null,
    ] {
        assert!(
            World::from_value(&bad).is_err(),
            "{}",
            canonical::to_string(&bad)
        );
    }
}
