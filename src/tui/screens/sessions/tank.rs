//! The attached session when it is a tank battle (tank-battle-v1): the
//! latest world (read by the watcher from snapshot.json's `world`), which
//! side this session plays, the unit orders go to, the enemy targeted, the
//! order cursor and the command line; and the keys that turn into orders.
//! An order is written into the session's strategy.json (the side's
//! commander reads it every tick) by a task, as the strategy editor saves:
//! an atomic replace that keeps every other key.

use super::{Focus, SessionsView};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tank::{Team, UnitId, World};
use crate::tui::command::Command;
use crate::tui::effect::{Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::panes::battlefield::cell_of;
use crate::tui::panes::dialogs;
use crate::tui::tank_order::TankChange;

/// The protocol the battlefield is for.
pub const TANK_PROTOCOL: &str = "tank-battle-v1";
/// A command line longer than this is not taken (a whisper reads 2 000).
pub const MAX_LINE: usize = 2000;

/// What the console keeps of an attached tank battle.
#[derive(Debug, Clone, Default)]
pub struct TankState {
    pub world: Option<Box<World>>,
    /// Why there is no world to draw (yet).
    pub problem: String,
    /// The side this session plays (the snapshot's `role`).
    pub role: Option<Team>,
    /// The snapshot's `phase` (waiting_peer, battle, game_over, aborted).
    pub phase: String,
    /// The units list shows the opponent's units.
    pub spectate: bool,
    /// The unit the next order goes to (`None`: all units).
    pub selected: Option<UnitId>,
    /// The enemy unit an attack goes to.
    pub target: Option<UnitId>,
    /// The order cursor (row, col).
    pub cursor: Option<(usize, usize)>,
    /// The command line, while it is open.
    pub line: Option<String>,
    pub note: Option<Note>,
}

impl TankState {
    pub fn world(&self) -> Option<&World> {
        self.world.as_deref()
    }

    /// Whose units the list shows.
    pub fn perspective(&self) -> Option<Team> {
        self.role.map(|r| if self.spectate { r.other() } else { r })
    }

    /// Takes a new snapshot (and the world the watcher read from it).
    pub(super) fn take(&mut self, snap: &Map, world: Option<Result<Box<World>, String>>) {
        self.role = snap.get_str("role").and_then(Team::parse).or(self.role);
        self.phase = snap.get_str("phase").unwrap_or("").to_owned();
        match world {
            Some(Ok(w)) => {
                self.world = Some(w);
                self.problem.clear();
            }
            Some(Err(e)) => self.problem = e,
            None if self.world.is_none() => {
                self.problem = match self.phase.as_str() {
                    "waiting_peer" => "waiting for the other side to connect…".into(),
                    "aborted" => "the match was aborted before a battlefield was drawn".into(),
                    _ => "no battlefield in the snapshot yet".into(),
                };
            }
            None => {}
        }
        // A unit destroyed since cannot take orders alone.
        if let (Some(w), Some(u)) = (self.world(), self.selected)
            && !w.tank(u).is_some_and(|t| t.alive())
        {
            self.selected = None;
        }
    }

    fn live(&self, team: Team) -> Vec<UnitId> {
        self.world()
            .map(|w| {
                w.tanks
                    .iter()
                    .filter(|t| t.team() == team && t.alive())
                    .map(|t| t.id)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn cycle(list: &[UnitId], now: Option<UnitId>, back: bool) -> Option<UnitId> {
        if list.is_empty() {
            return None;
        }
        let n = list.len();
        let i = match now.and_then(|u| list.iter().position(|x| *x == u)) {
            None if back => n - 1,
            None => 0,
            Some(i) if back => (i + n - 1) % n,
            Some(i) => (i + 1) % n,
        };
        Some(list[i])
    }

    fn move_cursor(&mut self, dr: i64, dc: i64) {
        let Some(w) = self.world.as_deref() else {
            return;
        };
        let start = self
            .cursor
            .or_else(|| {
                self.selected
                    .and_then(|u| w.tank(u))
                    .map(|t| cell_of(w, t.x, t.y))
            })
            .unwrap_or((w.grid.rows / 2, w.grid.cols / 2));
        let r = (start.0 as i64 + dr).clamp(0, w.grid.rows as i64 - 1) as usize;
        let c = (start.1 as i64 + dc).clamp(0, w.grid.cols as i64 - 1) as usize;
        self.cursor = Some((r, c));
    }

    /// Enter on the cursor: your tank there is selected, theirs targeted.
    fn pick_at_cursor(&mut self) -> Note {
        let (Some(w), Some((r, c))) = (self.world.as_deref(), self.cursor) else {
            return Note::err("move the cursor (arrows) onto a tank first");
        };
        let Some(t) = w
            .tanks
            .iter()
            .find(|t| t.alive() && cell_of(w, t.x, t.y) == (r, c))
        else {
            return Note::err(format!("no tank at row {r}, col {c}"));
        };
        if Some(t.team()) == self.role {
            self.selected = Some(t.id);
            Note::ok(format!("orders go to {} alone", t.id))
        } else {
            self.target = Some(t.id);
            Note::ok(format!("target {} (x orders the attack)", t.id))
        }
    }

    /// The order a key gives, or why it cannot be given now.
    fn order(&self, kind: &str) -> Result<TankChange, String> {
        let Some(w) = self.world() else {
            return Err("no battlefield yet: orders wait for the match to start".into());
        };
        if self.role.is_none() {
            return Err("the snapshot does not say which side this session plays".into());
        }
        if w.game_over {
            return Err("the match is over: orders no longer reach the commander".into());
        }
        let mut order = obj! { "kind" => kind };
        if let Some(u) = self.selected {
            order.insert("unit_ids", Value::Array(vec![Value::from(u.to_string())]));
        }
        let cell = |(r, c): (usize, usize)| Value::Object(obj! { "row" => r, "col" => c });
        match kind {
            "move_to" | "patrol" => {
                let Some(to) = self.cursor else {
                    return Err("move the cursor (arrows) to a cell first".into());
                };
                if kind == "move_to" {
                    order.insert("target", cell(to));
                } else {
                    let from = self.patrol_start(w).ok_or("no live unit to patrol with")?;
                    order.insert("waypoints", Value::Array(vec![cell(from), cell(to)]));
                }
            }
            "attack_unit" => {
                let Some(t) = self
                    .target
                    .filter(|t| w.tank(*t).is_some_and(|k| k.alive()))
                else {
                    return Err("target a live enemy first (e, or Enter on it)".into());
                };
                order.insert("target_unit_id", Value::from(t.to_string()));
            }
            "assault" | "flank_left" | "flank_right" | "surround" => {
                if let Some(t) = self
                    .target
                    .filter(|t| w.tank(*t).is_some_and(|k| k.alive()))
                {
                    order.insert("target_unit_id", Value::from(t.to_string()));
                }
            }
            _ => {}
        }
        order.insert("issued_at_tick", Value::from(w.tick));
        let simple = !matches!(kind, "move_to" | "patrol" | "attack_unit");
        let maneuver = (simple && self.selected.is_none()).then(|| kind.to_owned());
        Ok(TankChange::Order { order, maneuver })
    }

    /// Where a patrol starts: the selected unit's cell, else the middle of
    /// the side's live units.
    fn patrol_start(&self, w: &World) -> Option<(usize, usize)> {
        if let Some(t) = self.selected.and_then(|u| w.tank(u)) {
            return Some(cell_of(w, t.x, t.y));
        }
        let own: Vec<_> = w
            .tanks
            .iter()
            .filter(|t| Some(t.team()) == self.role && t.alive())
            .map(|t| cell_of(w, t.x, t.y))
            .collect();
        let n = own.len();
        (n > 0).then(|| {
            let (r, c) = own.iter().fold((0, 0), |(r, c), (a, b)| (r + a, c + b));
            (r / n, c / n)
        })
    }
}

fn order_kind(c: Command) -> Option<&'static str> {
    Some(match c {
        Command::TankAssault => "assault",
        Command::TankFlankLeft => "flank_left",
        Command::TankFlankRight => "flank_right",
        Command::TankRetreat => "retreat",
        Command::TankDefend => "defend",
        Command::TankHold => "hold",
        Command::TankSurround => "surround",
        Command::TankMoveTo => "move_to",
        Command::TankPatrol => "patrol",
        Command::TankAttack => "attack_unit",
        _ => return None,
    })
}

impl SessionsView {
    pub fn tank(&self) -> Option<&TankState> {
        self.attached.as_ref().and_then(|a| a.tank.as_ref())
    }

    pub(super) fn tank_mut(&mut self) -> Option<&mut TankState> {
        self.attached.as_mut().and_then(|a| a.tank.as_mut())
    }

    /// Whether the battlefield takes the keys now.
    pub(super) fn battle_focused(&self) -> bool {
        self.tank().is_some() && matches!(self.focus, Focus::Feed | Focus::Prompt)
    }

    /// A key on the battlefield; `None` when it is not the battlefield's.
    pub(super) fn tank_msg(&mut self, m: &Msg) -> Option<Effects> {
        let child = self.attached.as_ref()?.dir.child.clone();
        let t = self.tank_mut()?;
        if let Some(line) = t.line.as_mut() {
            match m {
                Msg::Command(Command::Back) => t.line = None,
                Msg::Command(Command::Submit) => {
                    let text = line.trim().to_owned();
                    t.line = None;
                    if text.is_empty() {
                        return Some(Effects::new());
                    }
                    if t.role.is_none() {
                        t.note = Some(Note::err(
                            "the snapshot does not say which side this session plays",
                        ));
                        return Some(Effects::new());
                    }
                    let tick = t.world().map_or(0, |w| w.tick);
                    let change = TankChange::Words {
                        text,
                        role: t.role,
                        tick,
                        world: t.world.clone(),
                    };
                    t.note = Some(Note::ok("writing the order…"));
                    return Some(vec![SessionTask::TankOrder { child, change }.into()]);
                }
                Msg::Input(k) => {
                    dialogs::edit_line(line, k);
                    if line.chars().count() > MAX_LINE {
                        line.pop();
                    }
                }
                _ => {}
            }
            return Some(Effects::new());
        }
        let Msg::Command(c) = m else {
            return None;
        };
        let c = *c;
        if let Some(kind) = order_kind(c) {
            return Some(match t.order(kind) {
                Ok(change) => {
                    t.note = Some(Note::ok(format!("writing the order {kind}…")));
                    vec![SessionTask::TankOrder { child, change }.into()]
                }
                Err(e) => {
                    t.note = Some(Note::err(e));
                    Effects::new()
                }
            });
        }
        let role = t.role;
        match c {
            Command::TankNextUnit | Command::TankPrevUnit => {
                let own = role.map(|r| t.live(r)).unwrap_or_default();
                t.selected = TankState::cycle(&own, t.selected, c == Command::TankPrevUnit);
                t.note = Some(match t.selected {
                    Some(u) => Note::ok(format!("orders go to {u} alone")),
                    None => Note::err("no live unit of yours to select"),
                });
            }
            Command::TankNextEnemy => {
                let theirs = role.map(|r| t.live(r.other())).unwrap_or_default();
                t.target = TankState::cycle(&theirs, t.target, false);
                t.note = Some(match t.target {
                    Some(u) => Note::ok(format!("target {u} (x orders the attack)")),
                    None => Note::err("no live enemy to target"),
                });
            }
            Command::TankAllUnits => {
                t.selected = None;
                t.target = None;
                t.cursor = None;
                t.note = Some(Note::ok("orders go to all units"));
            }
            Command::Back if t.selected.is_some() || t.cursor.is_some() || t.target.is_some() => {
                t.selected = None;
                t.target = None;
                t.cursor = None;
                t.note = Some(Note::ok("orders go to all units"));
            }
            Command::TankCommand => {
                t.line = Some(String::new());
                t.note = None;
            }
            Command::TankSpectate => {
                t.spectate = !t.spectate;
                t.note = Some(Note::ok(if t.spectate {
                    "listing the opponent's units (v: yours again)"
                } else {
                    "listing your units"
                }));
            }
            Command::Up => t.move_cursor(-1, 0),
            Command::Down => t.move_cursor(1, 0),
            Command::Left => t.move_cursor(0, -1),
            Command::Right => t.move_cursor(0, 1),
            Command::Submit => t.note = Some(t.pick_at_cursor()),
            _ => return None,
        }
        Some(Effects::new())
    }

    /// An order's task finished.
    pub(super) fn tank_ordered(&mut self, r: Result<String, String>, fx: &mut Effects) {
        let note = match r {
            Ok(s) => Note::ok(s),
            Err(e) => Note::err(e),
        };
        if let Some(t) = self.tank_mut() {
            t.note = Some(note.clone());
        }
        super::say(fx, note.ok, note.text);
    }
}

impl SessionsView {
    /// A tank battle's frames loaded for replay.
    pub(super) fn tank_replay_loaded(
        &mut self,
        r: Result<Box<crate::tui::tank_journal::Journal>, String>,
        fx: &mut Effects,
    ) {
        match r {
            Err(e) => super::say(fx, false, format!("replay: {e}")),
            Ok(j) => {
                let n = j.frames.len();
                let end = if j.finished() {
                    ""
                } else {
                    " (the match has not ended: up to the last frame written)"
                };
                super::say(
                    fx,
                    true,
                    format!(
                        "replay: {n} frames{end} (←/→ step, space plays, +/- speed, Esc leaves)"
                    ),
                );
                // The journal's direction says whose it is; else the
                // attached session's side.
                let role = j.role.or_else(|| self.tank().and_then(|t| t.role));
                if self.modal.is_none() {
                    self.modal = Some(super::Modal::TankReplay(Box::new(
                        super::tank_replay::TankReplay::new(j, role),
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::tank_order::{apply_change, tank_world};

    fn world() -> Box<World> {
        Box::new(World::from_options(&Map::new()).unwrap())
    }

    #[test]
    fn an_order_replaces_the_last_one_and_keeps_everything_else() {
        let mut s = obj! { "keep" => 1, "order" => obj! { "kind" => "move_to", "target" => obj! { "row" => 1, "col" => 1 } } };
        let change = TankChange::Order {
            order: obj! { "kind" => "assault", "issued_at_tick" => 7 },
            maneuver: Some("assault".into()),
        };
        let said = apply_change(&mut s, &change).unwrap();
        assert_eq!(said, "order assault → all units (tick 7) written");
        assert_eq!(
            crate::json::canonical::to_string(&Value::Object(s)),
            r#"{"keep":1,"maneuver":"assault","order":{"issued_at_tick":7,"kind":"assault"}}"#
        );
    }

    #[test]
    fn the_documented_command_lines_compile() {
        for text in [
            "flank left with h1",
            "全军突击",
            "h0 move to (4, 3)",
            "30帧后撤退",
        ] {
            let mut s = Map::new();
            let change = TankChange::Words {
                text: text.into(),
                role: Some(Team::Host),
                tick: 5,
                world: Some(world()),
            };
            let r = apply_change(&mut s, &change);
            assert!(r.is_ok(), "{text}: {r:?}");
            assert_eq!(s.get_str("operator_hint"), Some(text));
        }
    }

    #[test]
    fn orders_need_what_they_name() {
        let mut t = TankState {
            world: Some(world()),
            role: Some(Team::Host),
            ..TankState::default()
        };
        assert!(t.order("move_to").unwrap_err().contains("cursor"));
        assert!(t.order("attack_unit").unwrap_err().contains("target"));
        t.cursor = Some((3, 4));
        let Ok(TankChange::Order { order, maneuver }) = t.order("patrol") else {
            panic!("a patrol")
        };
        assert_eq!(maneuver, None);
        let wp = order.get("waypoints").and_then(Value::as_array).unwrap();
        assert_eq!(wp.len(), 2);
        t.role = None;
        assert!(t.order("hold").unwrap_err().contains("which side"));
        t.role = Some(Team::Host);
        t.world.as_mut().unwrap().game_over = true;
        assert!(t.order("hold").unwrap_err().contains("over"));
    }

    #[test]
    fn a_snapshot_without_a_readable_world_says_why() {
        let mut t = TankState::default();
        let snap = obj! { "phase" => "waiting_peer", "role" => "guest" };
        t.take(&snap, tank_world(&snap));
        assert_eq!(t.role, Some(Team::Guest));
        assert!(t.problem.contains("waiting"));
        let bad = obj! { "world" => obj! { "tanks" => Value::Array(vec![]) } };
        let w = tank_world(&bad).unwrap();
        assert!(w.is_err());
        t.take(&bad, Some(w));
        assert!(t.world.is_none() && t.problem.contains("does not read"));
    }
}
