//! tank-battle-v1's auto commander: the reference's per-side agent that
//! turns a side's standing orders (strategy.json: a default maneuver, a
//! quick order, a whispered plan, micro commands) and the world it sees
//! into one command per live tank for a future tick, with exactly the
//! reference's choices; and the parser that compiles whispered Chinese or
//! English orders into such a plan.
//!
//! Pure and deterministic: no I/O, no clock, no randomness, integer
//! arithmetic only. A [`Commander`] keeps one side's memory between ticks
//! (each tank's route, where it is stuck, its patrol leg), as the
//! reference's hooks object does; make one per side per match.
//!
//! Where the reference raises on a value from outside (an order field
//! that `int()` cannot read, say), [`Commander::commands`] returns an
//! error and the caller sends no commands that tick, as the reference's
//! runtime does; memory changes made for the tanks before the bad one are
//! kept, as in the reference.

mod astar;
mod orders;
mod text;
mod vocab;
mod whisper;

pub use astar::{NavMemory, ROUTE_TTL, STUCK_REPLAN_TICKS, direction_order, plan_route};
pub use orders::deep_merge;
pub use text::{Nat, PyInt};
pub use vocab::{CHOICES, hint_maneuver, match_maneuver};
pub use whisper::{
    DEFAULT_PHASE_TICKS, PlanOrder, TacticalPlan, Target, Trigger, TriggerKind, WhisperContext,
    WhisperIntent, extract_tactical_targets, extract_tactical_units, parse_tactical_whisper,
    split_tactical_clauses,
};

use super::{
    Command, Dir, SCALE, TANK_HALF, Tank, TankError, Team, UnitId, World, validate_commands,
};
use crate::json::{Map, Value};
use std::collections::HashMap;

/// A map cell, (row, col).
pub type Cell = (i64, i64);

/// A standing order's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Maneuver {
    /// Close on the nearest enemy (or a power-up on the way) and stand to
    /// fire once one is in line.
    Assault,
    /// Go to the nearest enemy's row at one's own left edge.
    FlankLeft,
    /// Go to the nearest enemy's row at one's own right edge.
    FlankRight,
    /// Back to one's own back row, spread out.
    Retreat,
    /// To a line four rows from one's own edge; stand to fire.
    Defend,
    /// To a ring of cells around the nearest enemy.
    Surround,
    /// Stand still, hold fire.
    Hold,
    /// To the order's `target` cell.
    MoveTo,
    /// Round the order's `waypoints`.
    Patrol,
    /// Chase the order's `target_unit_id`.
    AttackUnit,
}

impl Maneuver {
    pub const ALL: [Maneuver; 10] = [
        Maneuver::Assault,
        Maneuver::FlankLeft,
        Maneuver::FlankRight,
        Maneuver::Retreat,
        Maneuver::Defend,
        Maneuver::Surround,
        Maneuver::Hold,
        Maneuver::MoveTo,
        Maneuver::Patrol,
        Maneuver::AttackUnit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Maneuver::Assault => "assault",
            Maneuver::FlankLeft => "flank_left",
            Maneuver::FlankRight => "flank_right",
            Maneuver::Retreat => "retreat",
            Maneuver::Defend => "defend",
            Maneuver::Surround => "surround",
            Maneuver::Hold => "hold",
            Maneuver::MoveTo => "move_to",
            Maneuver::Patrol => "patrol",
            Maneuver::AttackUnit => "attack_unit",
        }
    }

    pub fn parse(s: &str) -> Option<Maneuver> {
        Maneuver::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// What a tank's route is for; a new key drops the remembered route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKey {
    Patrol {
        order: String,
        leg: usize,
        cell: Cell,
    },
    Explicit {
        order: String,
        cell: Cell,
    },
    Pickup(String),
    Retreat(usize),
    Defend(usize),
    FlankLeft(UnitId),
    FlankRight(UnitId),
    Surround(UnitId, usize),
    AttackUnit(UnitId),
    Assault(UnitId),
}

fn axis_cell(value: i64, limit: i64, team: Team) -> i64 {
    let mut cell = value.div_euclid(SCALE);
    if value.rem_euclid(SCALE) == 0 && team == Team::Guest {
        cell -= 1;
    }
    (limit - 2).min(cell).max(1)
}

/// The navigation cell of a tank (a centre on a cell edge goes to the
/// higher cell for the host, the lower for the guest, so mirrored
/// positions get mirrored cells), inside the border.
pub fn tank_cell(world: &World, tank: &Tank) -> Cell {
    (
        axis_cell(tank.y, world.grid.rows as i64, tank.team()),
        axis_cell(tank.x, world.grid.cols as i64, tank.team()),
    )
}

/// A cell as `team` sees the map: the guest's view is turned 180°.
pub fn to_canonical(world: &World, team: Team, cell: Cell) -> Cell {
    match team {
        Team::Host => cell,
        Team::Guest => (
            world.grid.rows as i64 - 1 - cell.0,
            world.grid.cols as i64 - 1 - cell.1,
        ),
    }
}

fn unit_index(tank: &Tank) -> i64 {
    i64::from(tank.id.index)
}

/// Where `to` lies from `from` along the larger axis (ties: left/right).
fn direction_to(from: &Tank, to: (i64, i64)) -> Dir {
    let (dx, dy) = (to.0 - from.x, to.1 - from.y);
    if dx.abs() >= dy.abs() {
        if dx > 0 { Dir::Right } else { Dir::Left }
    } else if dy > 0 {
        Dir::Down
    } else {
        Dir::Up
    }
}

/// Whether `enemy` is nearly in line with `tank` with no steel or brick
/// between them (sampled every half cell).
fn line_of_fire(world: &World, tank: &Tank, enemy: &Tank) -> bool {
    let (dx, dy) = (enemy.x - tank.x, enemy.y - tank.y);
    let clear = |along_y: bool, from: i64, to: i64, dir: i64| {
        let mut v = from + dir * SCALE / 2;
        while (dir > 0 && v < to) || (dir < 0 && v > to) {
            let tile = if along_y {
                world.grid.tile_at(tank.x, v)
            } else {
                world.grid.tile_at(v, tank.y)
            };
            if tile == super::STEEL || tile == super::BRICK {
                return false;
            }
            v += dir * SCALE / 2;
        }
        true
    };
    if dx.abs() < TANK_HALF {
        return clear(true, tank.y, enemy.y, if dy > 0 { 1 } else { -1 });
    }
    if dy.abs() < TANK_HALF {
        return clear(false, tank.x, enemy.x, if dx > 0 { 1 } else { -1 });
    }
    false
}

#[derive(Debug, Clone, Default)]
struct PatrolProgress {
    key: Option<(String, Vec<Cell>)>,
    index: usize,
}

/// One side's auto commander and its memory between ticks.
#[derive(Debug, Clone)]
pub struct Commander {
    team: Team,
    fallback: Option<Maneuver>,
    navigation: HashMap<UnitId, NavMemory>,
    patrol: HashMap<UnitId, PatrolProgress>,
    reserved: Vec<Cell>,
}

impl Commander {
    /// A commander for `team` whose last-resort maneuver is assault.
    pub fn new(team: Team) -> Commander {
        Commander::with_fallback(team, "assault")
    }

    /// A commander whose last-resort maneuver is `fallback` (the hook's
    /// first argument). A name that is not a maneuver is kept as the
    /// reference keeps it: tanks then close on the nearest enemy and fire
    /// whenever one is in line, without standing still to do it.
    pub fn with_fallback(team: Team, fallback: &str) -> Commander {
        Commander {
            team,
            fallback: Maneuver::parse(fallback),
            navigation: HashMap::new(),
            patrol: HashMap::new(),
            reserved: Vec::new(),
        }
    }

    pub fn team(&self) -> Team {
        self.team
    }

    /// A tank's navigation memory, if it has moved under this commander.
    pub fn memory(&self, unit: UnitId) -> Option<&NavMemory> {
        self.navigation.get(&unit)
    }

    /// The side's commands for `target_tick` from the world it sees and
    /// its strategy (a JSON object; anything else reads as `{}`): one per
    /// live tank, in unit id order. An error means the reference would
    /// have raised: send no commands for that tick.
    pub fn commands(
        &mut self,
        world: &World,
        target_tick: i64,
        strategy: &Value,
    ) -> Result<Vec<Command>, TankError> {
        let empty = Map::new();
        let strategy = strategy.as_object().unwrap_or(&empty);
        let reading = orders::read(strategy, target_tick, self.fallback)?;
        let mut own: Vec<&Tank> = world
            .tanks
            .iter()
            .filter(|t| t.team() == self.team && t.hp > 0)
            .collect();
        own.sort_by(|a, b| a.id.text_cmp(&b.id));
        let direct: Vec<Command> = orders::direct(strategy, target_tick)
            .and_then(|list| validate_commands(world, self.team, list, target_tick).ok())
            .unwrap_or_default();
        self.reserved.clear();
        let mut out = Vec::with_capacity(own.len());
        for (index, tank) in own.into_iter().enumerate() {
            if let Some(c) = direct.iter().find(|c| c.unit == tank.id) {
                out.push(*c);
                continue;
            }
            let mut order: Option<&Map> = None;
            let mut maneuver = reading.fallback;
            if let Some(q) = reading.quick {
                let in_scope = match q.get("unit_ids") {
                    Some(Value::Array(scope)) => orders::in_scope(scope, &tank.id.to_string()),
                    _ => true,
                };
                if in_scope {
                    order = Some(q);
                    maneuver = orders::maneuver_or(q.get("kind"), reading.fallback);
                }
            } else if let Some(plan) = reading.plan
                && let Some(sel) = orders::plan_order_for(world, tank, plan, target_tick)?
            {
                order = Some(sel);
                maneuver = orders::maneuver_or(sel.get("kind"), reading.fallback);
            }
            out.push(self.auto_command(world, tank, index, maneuver, order, target_tick)?);
        }
        Ok(out)
    }

    fn auto_command(
        &mut self,
        world: &World,
        tank: &Tank,
        index: usize,
        maneuver: Option<Maneuver>,
        order: Option<&Map>,
        target_tick: i64,
    ) -> Result<Command, TankError> {
        let idle = Command {
            unit: tank.id,
            mv: Dir::None,
            aim: Dir::None,
            fire: false,
        };
        let mut enemies: Vec<&Tank> = world
            .tanks
            .iter()
            .filter(|u| u.team() != tank.team() && u.hp > 0)
            .collect();
        enemies.sort_by(|a, b| a.id.text_cmp(&b.id));
        if enemies.is_empty() || maneuver == Some(Maneuver::Hold) {
            return Ok(idle);
        }
        let team = tank.team();
        let key = |u: &Tank| {
            let c = to_canonical(world, team, tank_cell(world, u));
            (
                (u.x - tank.x).abs() + (u.y - tank.y).abs(),
                c.0,
                c.1,
                u.id.index,
            )
        };
        let empty = Map::new();
        let order = order.unwrap_or(&empty);
        let mut nearest: &Tank = enemies
            .iter()
            .copied()
            .min_by_key(|u| key(u))
            .unwrap_or(tank);
        let wanted = order
            .get("target_unit_id")
            .filter(|v| v.truthy())
            .map(Value::py_str)
            .unwrap_or_default();
        let designated = enemies.iter().copied().find(|e| e.id.to_string() == wanted);
        if let Some(d) = designated {
            nearest = d;
        }
        let visible_enemies: Vec<&Tank> = enemies
            .iter()
            .copied()
            .filter(|e| line_of_fire(world, tank, e))
            .collect();
        let visible = match designated {
            Some(d) if visible_enemies.iter().any(|v| v.id == d.id) => Some(d),
            _ => visible_enemies.iter().copied().min_by_key(|u| key(u)),
        };
        let (rows, cols) = (world.grid.rows as i64, world.grid.cols as i64);
        let clamp_row = |v: i128| (rows as i128 - 2).min(v).max(1) as i64;
        let clamp_col = |v: i128| (cols as i128 - 2).min(v).max(1) as i64;
        let explicit = order.get("target").and_then(Value::as_object);
        let mut waypoints: Vec<Cell> = Vec::new();
        if let Some(Value::Array(list)) = order.get("waypoints") {
            for item in list {
                let Some(m) = item.as_object() else {
                    continue;
                };
                let field = |k: &str| match m.get(k) {
                    None => Ok(1),
                    Some(v) => orders::py_int(v, &format!("waypoint {k}")),
                };
                let r = clamp_row(field("row")?);
                let c = clamp_col(field("col")?);
                waypoints.push((r, c));
            }
        }
        let order_id = |default: &str| {
            order
                .get("id")
                .filter(|v| v.truthy())
                .map_or_else(|| default.to_string(), Value::py_str)
        };
        let mut patrol_target: Option<(usize, Cell)> = None;
        if maneuver == Some(Maneuver::Patrol) && waypoints.len() >= 2 {
            let pkey = (order_id("patrol"), waypoints.clone());
            let progress = self.patrol.entry(tank.id).or_default();
            if progress.key.as_ref() != Some(&pkey) {
                progress.key = Some(pkey);
                progress.index = 0;
            }
            let mut leg = progress.index % waypoints.len();
            if tank_cell(world, tank) == waypoints[leg] {
                leg = (leg + 1) % waypoints.len();
                progress.index = leg;
            }
            patrol_target = Some((leg, waypoints[leg]));
        }
        let mut pickup: Option<(Cell, String)> = None;
        let active: Vec<&super::Pickup> = world.pickups.iter().filter(|p| p.active).collect();
        if explicit.is_none()
            && !active.is_empty()
            && matches!(maneuver, Some(Maneuver::Assault | Maneuver::Surround))
        {
            let max_hp = world.rules.balance.hp;
            let useful: Vec<&super::Pickup> = active
                .into_iter()
                .filter(|p| p.kind != super::PickupKind::Repair || tank.hp < max_hp)
                .collect();
            if !useful.is_empty() && (tank.hp < max_hp || index.is_multiple_of(3)) {
                let cell_of = |p: &super::Pickup| (p.y.div_euclid(SCALE), p.x.div_euclid(SCALE));
                let best = useful.iter().copied().min_by_key(|p| {
                    let c = to_canonical(world, team, cell_of(p));
                    (
                        (p.x - tank.x).abs() + (p.y - tank.y).abs(),
                        c.0,
                        c.1,
                        p.kind.as_str(),
                    )
                });
                if let Some(p) = best {
                    let pd = (p.x - tank.x).abs() + (p.y - tank.y).abs();
                    let ed = (nearest.x - tank.x).abs() + (nearest.y - tank.y).abs();
                    if pd <= ed {
                        pickup = Some((cell_of(p), format!("p{}", p.index)));
                    }
                }
            }
        }
        let enemy_cell = tank_cell(world, nearest);
        let ec = to_canonical(world, team, enemy_cell);
        let from_c = |c: Cell| to_canonical(world, team, c);
        let (target, target_key) = if let Some((leg, cell)) = patrol_target {
            (
                cell,
                TargetKey::Patrol {
                    order: order_id("order"),
                    leg,
                    cell,
                },
            )
        } else if let Some(t) = explicit {
            let field = |k: &str, default: i64| match t.get(k) {
                None => Ok(i128::from(default)),
                Some(v) => orders::py_int(v, &format!("target {k}")),
            };
            let cell = (
                clamp_row(field("row", enemy_cell.0)?),
                clamp_col(field("col", enemy_cell.1)?),
            );
            (
                cell,
                TargetKey::Explicit {
                    order: order_id("order"),
                    cell,
                },
            )
        } else if let Some((cell, id)) = pickup {
            (cell, TargetKey::Pickup(id))
        } else {
            let i = index as i64;
            match maneuver {
                Some(Maneuver::Retreat) => (
                    from_c((rows - 2, 1 + (i * 3).rem_euclid((cols - 2).max(1)))),
                    TargetKey::Retreat(index),
                ),
                Some(Maneuver::Defend) => (
                    from_c((rows - 4, 1 + (i * 4).rem_euclid((cols - 2).max(1)))),
                    TargetKey::Defend(index),
                ),
                Some(Maneuver::FlankLeft) => (from_c((ec.0, 1)), TargetKey::FlankLeft(nearest.id)),
                Some(Maneuver::FlankRight) => {
                    (from_c((ec.0, cols - 2)), TargetKey::FlankRight(nearest.id))
                }
                Some(Maneuver::Surround) => {
                    const OFFSETS: [Cell; 8] = [
                        (-2, -2),
                        (-2, 0),
                        (-2, 2),
                        (0, -3),
                        (0, 3),
                        (2, -2),
                        (2, 0),
                        (2, 2),
                    ];
                    let (dr, dc) = OFFSETS[index % 8];
                    let c = (
                        (rows - 2).min(ec.0 + dr).max(1),
                        (cols - 2).min(ec.1 + dc).max(1),
                    );
                    (from_c(c), TargetKey::Surround(nearest.id, index))
                }
                Some(Maneuver::AttackUnit) if designated.is_some() => {
                    (enemy_cell, TargetKey::AttackUnit(nearest.id))
                }
                _ => (enemy_cell, TargetKey::Assault(nearest.id)),
            }
        };
        let memory = self.navigation.entry(tank.id).or_default();
        let mut mv = astar::path_direction(
            world,
            tank,
            memory,
            &mut self.reserved,
            target,
            target_key,
            target_tick,
        );
        if visible.is_some()
            && matches!(maneuver, Some(Maneuver::Assault | Maneuver::Defend))
            && explicit.is_none()
        {
            mv = Dir::None;
        }
        let aim = match visible {
            Some(v) => direction_to(tank, (v.x, v.y)),
            None if mv != Dir::None => mv,
            None => direction_to(tank, (nearest.x, nearest.y)),
        };
        Ok(Command {
            unit: tank.id,
            mv,
            aim,
            fire: visible.is_some(),
        })
    }
}

/// Deliver a whisper to a side's strategy as the reference's whisper
/// bridge does for the player's own whispers: the text becomes the
/// `operator_hint`, and when it compiles to a plan the plan's patch
/// (`mode`, `maneuver`, `order: null`, `plan`) is merged in. Returns the
/// plan, if any.
pub fn apply_whisper(
    strategy: &mut Map,
    text: &str,
    ctx: &WhisperContext<'_>,
) -> Option<WhisperIntent> {
    let mut hint = Map::with_capacity(1);
    hint.insert("operator_hint", Value::from(text));
    deep_merge(strategy, &hint);
    let intent = parse_tactical_whisper(text, ctx)?;
    if let Value::Object(patch) = intent.strategy_patch() {
        deep_merge(strategy, &patch);
    }
    Some(intent)
}

#[cfg(test)]
mod tests;
