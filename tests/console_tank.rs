//! The tank battle in the console (tank-battle-v1), without a terminal: a
//! session dir written the way the realtime runtime leaves it
//! (snapshot.json with the frame's `world`, realtime-frames.jsonl), the
//! world played by the real rules and both sides' auto commanders. The
//! battlefield pane as TestBackend snapshots (mid-match, spectating, a
//! terminal too small); orders from keys and from the command line read
//! back from strategy.json; the replay stepped and played from a journal.

use crate::common;

use common::console::{ch, key};
use crossterm::event::KeyCode;
use palaver::json::{self, Map, Value};
use palaver::obj;
use palaver::protocols::tank::commander::Commander;
use palaver::protocols::tank::{Team, UnitId, World};
use palaver::tui::panes::battlefield::BattlePaint;
use palaver::tui::screens::sessions::Modal;
use palaver::tui::tank_journal::{FRAMES_FILE, frame_line};
use palaver::tui::theme::Theme;
use palaver::tui::{Headless, load_settings};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(10);

/// The default 5 v 5 match with power-ups, both commanders assaulting,
/// after `ticks` ticks; every world on the way.
fn played(ticks: usize) -> Vec<World> {
    let options: Map = json::parse_str(r#"{"team_size":5,"pickup_mode":"powerups"}"#)
        .unwrap()
        .as_object()
        .cloned()
        .unwrap();
    let mut w = World::from_options(&options).unwrap();
    let (mut host, mut guest) = (Commander::new(Team::Host), Commander::new(Team::Guest));
    let strategy = Value::Object(Map::new());
    let mut out = vec![w.clone()];
    for _ in 0..ticks {
        if w.game_over {
            break;
        }
        let next = w.tick + 1;
        let h = host.commands(&w, next, &strategy).unwrap();
        let g = guest.commands(&w, next, &strategy).unwrap();
        w.step(&h, &g);
        out.push(w.clone());
    }
    out
}

fn pane(world: &World, side: Option<Team>, spectating: bool, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let theme = Theme::builtin_default();
    term.draw(|f| {
        BattlePaint {
            world: Ok(world),
            title: "host-1 ",
            side,
            spectating,
            selected: Some(UnitId {
                team: Team::Host,
                index: 1,
            }),
            target: None,
            cursor: Some((15, 15)),
            status: "battle",
            line: None,
            note: None,
            hint: "a assault · . unit",
            focused: true,
        }
        .draw(f, f.area(), &theme)
    })
    .unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_battlefield_mid_match() {
    let worlds = played(150);
    let w = worlds.last().unwrap();
    assert!(!w.bullets.is_empty() || w.tanks.iter().any(|t| t.hp < 3));
    insta::assert_snapshot!(
        "battlefield_mid_match",
        pane(w, Some(Team::Host), false, 90, 36)
    );
    insta::assert_snapshot!(
        "battlefield_spectating",
        pane(w, Some(Team::Guest), true, 90, 36)
    );
}

#[test]
fn a_terminal_too_small_says_so_instead_of_drawing_garbage() {
    let w = &played(0)[0];
    let s = pane(w, Some(Team::Host), false, 60, 20);
    insta::assert_snapshot!("battlefield_too_small", s);
    assert!(s.contains("too small"), "{s}");
    // Tiny areas never panic.
    for (x, y) in [(1, 1), (2, 2), (10, 3), (0, 0)] {
        let _ = pane(w, None, false, x.max(1), y.max(1));
    }
}

/// A session's engine dir with the snapshot the runtime writes at `w`.
fn write_session(dir: &Path, w: &World, role: &str) {
    let phase = if w.game_over { "game_over" } else { "battle" };
    let snap = obj! {
        "phase" => phase,
        "role" => role,
        "tick" => w.tick,
        "game_over" => w.game_over,
        "winner" => w.winner.as_str(),
        "state_hash" => w.state_hash(),
        "chain_hash" => w.state_hash(),
        "realtime" => obj! { "wire_version" => 1, "tick_rate_hz" => 10, "input_delay_ticks" => 2 },
        "team_size" => 5,
        "host_alive" => w.host_alive,
        "guest_alive" => w.guest_alive,
        "world" => w.to_value(),
        "combat_events" => palaver::protocols::tank::events_value(&w.events),
        "protocol_name" => "tank-battle-v1",
    };
    std::fs::create_dir_all(dir).unwrap();
    let text = json::canonical::to_string(&Value::Object(snap));
    std::fs::write(dir.join("snapshot.json.tmp"), text).unwrap();
    std::fs::rename(dir.join("snapshot.json.tmp"), dir.join("snapshot.json")).unwrap();
}

async fn attached(data: &Path, w: &World, role: &str) -> (Headless, std::path::PathBuf) {
    let dir = data.join("sessions").join("tank-1").join("engine");
    write_session(&dir, w, role);
    std::fs::write(
        dir.join("strategy.json"),
        r#"{"keep":"me","order":{"kind":"old","target":{"row":1,"col":1}}}"#,
    )
    .unwrap();
    let settings = load_settings(data, None, None).unwrap();
    let mut h = Headless::new(settings, 120, 40);
    h.app.attach(&dir);
    let tick = w.tick;
    let ok = h
        .until(LONG, |app| {
            app.sessions
                .tank()
                .and_then(|t| t.world())
                .is_some_and(|x| x.tick == tick)
        })
        .await;
    assert!(ok, "the battlefield did not load:\n{}", h.screen());
    (h, dir)
}

fn strategy(dir: &Path) -> Map {
    json::parse_str(&std::fs::read_to_string(dir.join("strategy.json")).unwrap_or_default())
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// Waits until strategy.json's `order` (or `key`) is `kind`.
async fn order_is(h: &mut Headless, dir: &Path, key: &str, want: &str) -> Map {
    let ok = h
        .until(LONG, |_| {
            strategy(dir)
                .get(key)
                .and_then(|o| o.get_str("kind").or(o.as_str()))
                == Some(want)
        })
        .await;
    assert!(
        ok,
        "no {key} {want} in {:?}:\n{}",
        strategy(dir),
        h.screen()
    );
    strategy(dir)
}

#[tokio::test]
async fn order_keys_write_the_order_into_strategy_json() {
    let data = tempfile::tempdir().unwrap();
    let w = played(40).pop().unwrap();
    let (mut h, dir) = attached(data.path(), &w, "host").await;
    assert_eq!(
        h.app.context(),
        palaver::tui::keymap::Context::Battle,
        "{}",
        h.screen()
    );
    // All units: the order and the default maneuver; other keys kept.
    h.key(ch('a'));
    let s = order_is(&mut h, &dir, "order", "assault").await;
    let order = s.get("order").unwrap();
    assert_eq!(
        order.get("issued_at_tick").and_then(Value::as_i64),
        Some(40)
    );
    assert!(order.get("unit_ids").is_none() && order.get("target").is_none());
    assert_eq!(s.get_str("maneuver"), Some("assault"));
    assert_eq!(s.get_str("keep"), Some("me"));
    h.drain();
    assert!(h.screen().contains("order assault → all units"));
    // One unit: h1 after two presses of `.` (h0, then h1).
    h.key(ch('.'));
    h.key(ch('.'));
    assert_eq!(
        h.app
            .sessions
            .tank()
            .unwrap()
            .selected
            .map(|u| u.to_string()),
        Some("h1".into())
    );
    h.key(ch('['));
    let s = order_is(&mut h, &dir, "order", "flank_left").await;
    let ids = s.get("order").unwrap().get("unit_ids").unwrap().clone();
    assert_eq!(json::canonical::to_string(&ids), r#"["h1"]"#);
    assert_eq!(
        s.get_str("maneuver"),
        Some("assault"),
        "one unit's order leaves the default"
    );
    // Move to the cursor.
    for _ in 0..3 {
        h.key(key(KeyCode::Down));
    }
    h.key(key(KeyCode::Left));
    let (r, c) = h.app.sessions.tank().unwrap().cursor.unwrap();
    h.key(ch('m'));
    let s = order_is(&mut h, &dir, "order", "move_to").await;
    let t = s.get("order").unwrap().get("target").unwrap();
    assert_eq!(t.get("row").and_then(Value::as_i64), Some(r as i64));
    assert_eq!(t.get("col").and_then(Value::as_i64), Some(c as i64));
    // Attack needs a target: refused with the reason, then given.
    h.key(ch('x'));
    assert!(
        h.app
            .sessions
            .tank()
            .unwrap()
            .note
            .as_ref()
            .is_some_and(|n| !n.ok),
        "{}",
        h.screen()
    );
    h.key(ch('e'));
    h.key(ch('x'));
    let s = order_is(&mut h, &dir, "order", "attack_unit").await;
    assert_eq!(
        s.get("order").unwrap().get_str("target_unit_id"),
        Some("g0")
    );
    // 0: all units again; hold.
    h.key(ch('0'));
    h.key(ch('h'));
    let s = order_is(&mut h, &dir, "order", "hold").await;
    assert!(s.get("order").unwrap().get("unit_ids").is_none());
    // Spectating lists their units; orders still go to ours.
    h.key(ch('v'));
    assert!(h.screen().contains("their units (guest)"));
}

#[tokio::test]
async fn the_command_line_compiles_words_into_a_plan() {
    let data = tempfile::tempdir().unwrap();
    let w = played(10).pop().unwrap();
    let (mut h, dir) = attached(data.path(), &w, "guest").await;
    h.key(ch(':'));
    assert_eq!(h.app.context(), palaver::tui::keymap::Context::Text);
    for c in "flank left".chars() {
        h.key(ch(c));
    }
    h.update(palaver::tui::msg::Msg::Paste(" with g1".into()));
    assert!(h.screen().contains("order> flank left with g1"));
    h.key(key(KeyCode::Enter));
    let s = order_is(&mut h, &dir, "mode", "tactical_plan").await;
    assert_eq!(s.get_str("operator_hint"), Some("flank left with g1"));
    let phase = s
        .get("plan")
        .and_then(|p| p.get("orders"))
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .cloned()
        .unwrap();
    assert_eq!(phase.get_str("kind"), Some("flank_left"));
    assert_eq!(
        json::canonical::to_string(phase.get("unit_ids").unwrap()),
        r#"["g1"]"#
    );
    assert!(s.get("order").is_some_and(Value::is_null));
    assert_eq!(s.get_str("keep"), Some("me"));
    // Words that say nothing: kept as a hint, said so in red.
    h.key(ch(':'));
    for c in "zzz".chars() {
        h.key(ch(c));
    }
    h.key(key(KeyCode::Enter));
    let ok = h
        .until(LONG, |app| {
            app.sessions
                .tank()
                .and_then(|t| t.note.as_ref())
                .is_some_and(|n| !n.ok && n.text.contains("not understood"))
        })
        .await;
    assert!(ok, "{}", h.screen());
    assert_eq!(strategy(&dir).get_str("operator_hint"), Some("zzz"));
    // Esc closes the line without sending.
    h.key(ch(':'));
    h.key(ch('q'));
    h.key(key(KeyCode::Esc));
    assert!(h.app.sessions.tank().unwrap().line.is_none());
    assert!(!h.app.quit);
}

#[tokio::test]
async fn an_unwritable_strategy_is_a_clear_error() {
    let data = tempfile::tempdir().unwrap();
    let w = played(5).pop().unwrap();
    let (mut h, dir) = attached(data.path(), &w, "host").await;
    // A directory where the temp file would go makes the write fail.
    std::fs::remove_file(dir.join("strategy.json")).unwrap();
    std::fs::create_dir(dir.join("strategy.json")).unwrap();
    h.key(ch('r'));
    let ok = h
        .until(LONG, |app| {
            app.sessions
                .tank()
                .and_then(|t| t.note.as_ref())
                .is_some_and(|n| !n.ok && n.text.contains("strategy.json"))
        })
        .await;
    assert!(ok, "{}", h.screen());
}

#[tokio::test]
async fn a_finished_match_replays_from_its_frames() {
    let data = tempfile::tempdir().unwrap();
    let worlds = played(60);
    let last = worlds.last().unwrap().clone();
    let (mut h, dir) = attached(data.path(), &last, "host").await;
    let mut text = String::new();
    for (i, w) in worlds.iter().enumerate() {
        text += &frame_line(w, i.checked_sub(1).map(|p| &worlds[p]), "sent");
        text.push('\n');
    }
    text += "{\"direction\":\"sent\",\"frame\":{\"ti"; // torn by a crash
    std::fs::write(dir.join(FRAMES_FILE), text).unwrap();
    h.key(ch('R'));
    let ok = h
        .until(LONG, |app| {
            matches!(app.sessions.modal, Some(Modal::TankReplay(_)))
        })
        .await;
    assert!(ok, "{}", h.screen());
    let tick = |h: &Headless| match &h.app.sessions.modal {
        Some(Modal::TankReplay(r)) => r.world().unwrap().tick,
        _ => panic!("the replay closed"),
    };
    assert_eq!(tick(&h), 0);
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    assert_eq!(tick(&h), 2);
    h.key(key(KeyCode::Left));
    assert_eq!(tick(&h), 1);
    h.key(key(KeyCode::End));
    assert_eq!(tick(&h), 60);
    let screen = h.screen();
    assert!(screen.contains("frame 61/61"), "{screen}");
    assert!(screen.contains("your units (host)"), "{screen}");
    h.key(ch('v'));
    assert!(h.screen().contains("their units (guest)"));
    h.key(key(KeyCode::Home));
    h.key(ch('+'));
    h.key(ch('+'));
    h.key(ch(' '));
    // Let the console's ticks play it for a moment.
    h.until(Duration::from_millis(600), |_| false).await;
    let t = tick(&h);
    assert!(t > 0, "playing moved on");
    h.key(ch(' '));
    assert!(h.screen().contains("4×"), "{}", h.screen());
    h.key(key(KeyCode::Esc));
    assert!(h.app.sessions.modal.is_none());
}

#[tokio::test]
async fn a_snapshot_that_does_not_read_keeps_the_last_world_and_says_why() {
    let data = tempfile::tempdir().unwrap();
    let w = played(8).pop().unwrap();
    let (mut h, dir) = attached(data.path(), &w, "host").await;
    std::fs::write(
        dir.join("snapshot.json"),
        r#"{"phase":"battle","role":"host","world":{"tanks":[{"x":"oops"}],"tick":-5}}"#,
    )
    .unwrap();
    let ok = h
        .until(LONG, |app| {
            app.sessions
                .tank()
                .is_some_and(|t| t.problem.contains("does not read"))
        })
        .await;
    assert!(ok, "{}", h.screen());
    let screen = h.screen();
    assert!(screen.contains("tick 8/1800"), "{screen}");
    assert!(screen.contains("snapshot unreadable"), "{screen}");
    // Torn or not JSON at all: nothing breaks either.
    std::fs::write(dir.join("snapshot.json"), "{\"phase\":").unwrap();
    h.until(Duration::from_millis(300), |_| false).await;
    assert!(h.screen().contains("tick 8/1800"));
}
