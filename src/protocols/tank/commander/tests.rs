//! Unit tests without the reference: A*, the commander's basic choices and
//! the whisper parser's readings of hand-checked phrases.

use super::*;
use crate::json::{self, Map, Value};
use crate::protocols::tank::{MatchSetup, World};

fn world(options: &str) -> World {
    let map: Map = json::parse_str(options)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    World::new(MatchSetup::from_options(&map).unwrap())
}

const OPEN: &str = "#######\n#.....#\n#.###.#\n#.....#\n#.....#\n#.....#\n#######\n";

#[test]
fn astar_goes_round_a_wall_and_stays_on_the_grid() {
    let w = world(&format!(r#"{{"team_size":1,"map_text":{:?}}}"#, OPEN));
    let tank = w.tanks[0].clone();
    let mem = NavMemory::default();
    let route = plan_route(&w, &tank, (3, 3), (1, 3), &mem, &[], None);
    assert_eq!(route.first(), Some(&(3, 3)));
    assert_eq!(route.last(), Some(&(1, 3)));
    for pair in route.windows(2) {
        let d = (pair[0].0 - pair[1].0).abs() + (pair[0].1 - pair[1].1).abs();
        assert_eq!(d, 1, "{route:?}");
        assert_ne!(
            w.grid.tile(pair[1].0, pair[1].1),
            crate::protocols::tank::STEEL
        );
    }
    // Around the wall: up the side column and back along row 1.
    assert_eq!(route.len(), 7, "{route:?}");
}

#[test]
fn astar_on_the_goal_or_without_a_goal_stays() {
    let w = world(&format!(r#"{{"team_size":1,"map_text":{:?}}}"#, OPEN));
    let tank = w.tanks[0].clone();
    let mem = NavMemory::default();
    assert_eq!(
        plan_route(&w, &tank, (3, 3), (3, 3), &mem, &[], None),
        vec![(3, 3)]
    );
    // A steel target: the free cells next to it are the goals.
    let r = plan_route(&w, &tank, (4, 3), (2, 3), &mem, &[], None);
    assert_eq!(r, vec![(4, 3), (3, 3)]);
}

#[test]
fn astar_honours_a_banned_first_step() {
    let w = world(&format!(r#"{{"team_size":1,"map_text":{:?}}}"#, OPEN));
    let tank = w.tanks[0].clone();
    let mem = NavMemory::default();
    let free = plan_route(&w, &tank, (4, 3), (4, 5), &mem, &[], None);
    assert_eq!(free[1], (4, 4));
    let banned = plan_route(&w, &tank, (4, 3), (4, 5), &mem, &[], Some(Dir::Right));
    assert_ne!(banned[1], (4, 4));
    assert_eq!(banned.last(), Some(&(4, 5)));
}

#[test]
fn hold_stands_and_assault_moves_or_fires() {
    let w = world(r#"{"team_size":3}"#);
    let mut c = Commander::new(Team::Host);
    let hold: Value = json::parse_str(r#"{"maneuver":"hold"}"#).unwrap();
    let cmds = c.commands(&w, 1, &hold).unwrap();
    assert_eq!(cmds.len(), 3);
    assert!(cmds.iter().all(|c| c.mv == Dir::None && !c.fire));
    let cmds = c.commands(&w, 1, &Value::Null).unwrap();
    assert!(cmds.iter().all(|c| c.mv != Dir::None || c.fire));
}

#[test]
fn bad_order_values_are_refused_not_a_panic() {
    let w = world(r#"{"team_size":2}"#);
    let mut c = Commander::new(Team::Guest);
    for s in [
        r#"{"order":{"kind":"move_to","target":{"row":"x"}}}"#,
        r#"{"order":{"kind":"patrol","waypoints":[{"row":null}]}}"#,
        r#"{"plan":{"orders":5}}"#,
        r#"{"plan":{"orders":[{"trigger":{"type":"x","value":[1]}}]}}"#,
        r#"{"order":{"issued_at_tick":null},"plan":{"x":1}}"#,
    ] {
        let v: Value = json::parse_str(s).unwrap();
        assert!(c.commands(&w, 1, &v).is_err(), "{s}");
    }
    for s in [
        r#"{"order":{"kind":"move_to","target":{"row":-99999999999999999999999,"col":1e300}}}"#,
        r#"{"order":{"kind":"nonsense"},"maneuver":17}"#,
        r#"{"plan":{"orders":"abc"}}"#,
        r#"[1,2]"#,
        r#"{"micro_commands":[{"unit_id":"g0","move":"up"}],"micro_expires_tick":true}"#,
    ] {
        let v: Value = json::parse_str(s).unwrap();
        assert!(c.commands(&w, 1, &v).is_ok(), "{s}");
    }
}

#[test]
fn whispers_compile_to_plans() {
    let w = world(r#"{"team_size":5}"#);
    let ctx = WhisperContext {
        role: Some(Team::Host),
        tick: 10,
        world: Some(&w),
    };
    let i = parse_tactical_whisper("h0,h1 前往坐标(5, 7)，然后全军突击", &ctx).unwrap();
    let o = &i.plan.orders;
    assert_eq!(o.len(), 2);
    assert_eq!(o[0].kind, Maneuver::MoveTo);
    assert_eq!(
        o[0].unit_ids,
        Some(vec!["h0".to_string(), "h1".to_string()])
    );
    assert_eq!(
        o[0].target,
        Some(Target {
            row: PyInt::Small(7),
            col: PyInt::Small(5)
        })
    );
    assert_eq!(o[1].kind, Maneuver::Assault);
    assert_eq!(o[1].start_tick, PyInt::Small(190));
    assert_eq!(i.maneuver, Maneuver::Assault);
    assert_eq!(i.confidence, 0.9);

    let i = parse_tactical_whisper("attack g2 for 30 ticks", &ctx).unwrap();
    let o = &i.plan.orders[0];
    assert_eq!(o.kind, Maneuver::AttackUnit);
    assert_eq!(o.target_unit_id.as_deref(), Some("g2"));
    assert_eq!(o.expires_tick, Some(PyInt::Small(40)));

    let i = parse_tactical_whisper(
        "3号坦克 在第4行第6列 到第 4行 第9列 之间巡逻 敌方只剩2辆",
        &ctx,
    )
    .unwrap();
    let o = &i.plan.orders[0];
    assert_eq!(o.kind, Maneuver::Patrol);
    assert_eq!(o.unit_ids, Some(vec!["h3".to_string()]));
    assert_eq!(o.waypoints.as_ref().map(Vec::len), Some(2));
    assert_eq!(
        o.trigger,
        Some(Trigger {
            kind: TriggerKind::EnemyAliveLte,
            value: 2
        })
    );

    assert!(parse_tactical_whisper("   ", &ctx).is_none());
    assert!(parse_tactical_whisper("hello there", &ctx).is_none());
    assert!(parse_tactical_whisper("move to nowhere", &ctx).is_none());
}

#[test]
fn clause_splitting_keeps_pairs_and_unit_lists() {
    assert_eq!(
        split_tactical_clauses("h1, h2 move to 3, 4; 持续20帧。然后撤退"),
        vec![
            "h1、h2 move to 3,4，持续20帧".to_string(),
            "然后撤退".to_string()
        ]
    );
    assert_eq!(
        match_maneuver("  FLANK\t LEFT now"),
        Some(Maneuver::FlankLeft)
    );
    assert_eq!(
        match_maneuver("左翼包围后集中火力"),
        Some(Maneuver::FlankLeft)
    );
    assert_eq!(hint_maneuver("Hold Fire"), Some(Maneuver::Hold));
    assert_eq!(match_maneuver(""), None);
}

#[test]
fn hostile_text_never_panics() {
    let w = world(r#"{"team_size":2}"#);
    let long = "第1行".repeat(700) + &"9".repeat(3000);
    for text in [
        long.as_str(),
        "\u{0}\u{ffff}𝟘𝟙,𝟚 patrol (1,2) (3,4) at 99999999999999999999999 tick",
        "hp<=",
        "第行列",
        "g999 attack",
        "h1,h2,h3,,,,",
        "撤退 持续 99999999999999999999999999 tick",
    ] {
        for role in [None, Some(Team::Host), Some(Team::Guest)] {
            let ctx = WhisperContext {
                role,
                tick: 0,
                world: Some(&w),
            };
            let _ = parse_tactical_whisper(text, &ctx);
            let ctx = WhisperContext {
                role,
                tick: -5,
                world: None,
            };
            let _ = parse_tactical_whisper(text, &ctx);
        }
    }
}
