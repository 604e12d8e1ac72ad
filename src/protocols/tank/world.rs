//! The world and its tick: movement, firing, shells, bricks, hits,
//! power-ups and the end of the match, in integer fixed-point arithmetic.

use super::TankError;
use super::command::Command;
use super::map::{self, BRICK, FLOOR, Grid, PICKUP, SCALE, STEEL};
use super::rules::{MatchSetup, PickupMode, Rules};
use super::types::{Dir, Team, UnitId};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Half a tank's side in fixed-point units (a tank is 0.72 cells square).
pub const TANK_HALF: i64 = 360;
/// How far in front of its centre a tank's shell appears.
pub const MUZZLE: i64 = TANK_HALF + 50;
/// The longest a shell moves between two checks.
pub const SHELL_SUBSTEP: i64 = 250;
/// The wire and hash format version of a world.
pub const SCHEMA_VERSION: i64 = 1;

/// A tank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tank {
    pub id: UnitId,
    /// Centre, fixed-point.
    pub x: i64,
    pub y: i64,
    /// Where its gun points (never `Dir::None`).
    pub facing: Dir,
    pub hp: i64,
    /// Ticks until it may fire again.
    pub fire_cd: i64,
    /// The move it keeps making until a command changes it.
    pub last_move: Dir,
    /// Whether it keeps firing until a command changes it.
    pub last_fire: bool,
    /// It moves half as fast again while the tick is below this.
    pub speed_until: i64,
    /// Its cooldown is halved while the tick is below this.
    pub rapid_until: i64,
}

impl Tank {
    pub fn team(&self) -> Team {
        self.id.team
    }

    pub fn alive(&self) -> bool {
        self.hp > 0
    }
}

/// A shell in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bullet {
    /// `b<tick fired>-<owner id>`; shells fly in the order of these texts.
    pub id: String,
    pub team: Team,
    pub owner: UnitId,
    pub x: i64,
    pub y: i64,
    pub dir: Dir,
}

/// What a power-up gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickupKind {
    /// One hit point back, up to the starting hp.
    Repair,
    /// Half as fast again for the power-up duration.
    Speed,
    /// Half the fire cooldown (at least 1) for the power-up duration.
    Rapid,
}

impl PickupKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PickupKind::Repair => "repair",
            PickupKind::Speed => "speed",
            PickupKind::Rapid => "rapid",
        }
    }
}

/// A power-up on the map (`p<index>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pickup {
    pub index: usize,
    pub kind: PickupKind,
    pub x: i64,
    pub y: i64,
    pub active: bool,
}

/// How a match stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still on (`"none"`).
    None,
    Host,
    Guest,
    Draw,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::None => "none",
            Outcome::Host => "host",
            Outcome::Guest => "guest",
            Outcome::Draw => "draw",
        }
    }
}

/// Why a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// A side (or both) has no tank left before `max_ticks`.
    Elimination,
    /// `max_ticks` was reached (even if a side died on that very tick).
    TickLimit,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Elimination => "elimination",
            EndReason::TickLimit => "tick_limit",
        }
    }
}

/// Something that happened during a tick, in the order the world lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A tank fired a shell that appeared at (x, y).
    Fire { tank: UnitId, x: i64, y: i64 },
    /// Shells broke the brick at (row, col); `bullets` sorted.
    BrickDestroyed {
        bullets: Vec<String>,
        row: usize,
        col: usize,
    },
    /// A shell hit; `victim_hp` counts this tick's earlier hits down.
    Hit {
        attacker: UnitId,
        victim: UnitId,
        victim_hp: i64,
    },
    /// A tank's hp reached 0.
    Destroyed { tank: UnitId },
    /// A tank took a power-up.
    Pickup {
        tank: UnitId,
        pickup: usize,
        kind: PickupKind,
    },
    /// The match ended.
    GameOver { winner: Outcome, reason: EndReason },
}

/// The whole public world: everything the host hashes every tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    pub tick: i64,
    pub grid: Grid,
    /// Host tanks `h0…` then guest tanks `g0…`.
    pub tanks: Vec<Tank>,
    pub bullets: Vec<Bullet>,
    pub pickups: Vec<Pickup>,
    /// This tick's events (empty at tick 0).
    pub events: Vec<Event>,
    pub host_alive: usize,
    pub guest_alive: usize,
    pub game_over: bool,
    pub winner: Outcome,
    pub rules: Rules,
    /// Tank indexes in the order of their ids' texts.
    pub(super) by_text: Vec<usize>,
}

/// Whether a tank centred at (x, y) would stand on a tile that stops it.
/// A side exactly on a cell boundary touches the next cell without
/// entering it (the corners are pulled in by one unit).
pub fn rect_blocked(grid: &Grid, x: i64, y: i64) -> bool {
    let e = TANK_HALF - 1;
    for dx in [-e, 0, e] {
        for dy in [-e, 0, e] {
            if map::blocks_move(grid.tile_at(x + dx, y + dy)) {
                return true;
            }
        }
    }
    false
}

fn overlap(a: (i64, i64), b: (i64, i64)) -> bool {
    (a.0 - b.0).abs() < 2 * TANK_HALF && (a.1 - b.1).abs() < 2 * TANK_HALF
}

fn touches(t: &Tank, x: i64, y: i64) -> bool {
    (x - t.x).abs() < TANK_HALF && (y - t.y).abs() < TANK_HALF
}

impl World {
    /// The world at tick 0 for these invitation options (see
    /// [`MatchSetup::from_options`]).
    pub fn from_options(options: &crate::json::Map) -> Result<World, TankError> {
        Ok(World::new(MatchSetup::from_options(options)?))
    }

    /// The world at tick 0: tanks on their spawn cells (host facing up,
    /// guest facing down), pickup cells turned to floor and, with
    /// power-ups on, a power-up on each (repair, speed, rapid by distance
    /// from either end of the list, so mirrored cells get the same kind).
    pub fn new(setup: MatchSetup) -> World {
        let MatchSetup { rules, mut grid } = setup;
        let n = rules.team_size;
        // `from_options` checked there is room; a setup built by hand with
        // too small a map gets the tanks there is room for.
        let (host, guest) = map::spawn_cells(&grid, n).unwrap_or_default();
        let mut tanks = Vec::with_capacity(2 * n);
        for (team, cells, facing) in [(Team::Host, host, Dir::Up), (Team::Guest, guest, Dir::Down)]
        {
            for (i, (r, c)) in cells.into_iter().enumerate() {
                let (x, y) = map::cell_center(r, c);
                tanks.push(Tank {
                    id: UnitId {
                        team,
                        index: i as u16,
                    },
                    x,
                    y,
                    facing,
                    hp: rules.balance.hp,
                    fire_cd: 0,
                    last_move: Dir::None,
                    last_fire: false,
                    speed_until: 0,
                    rapid_until: 0,
                });
            }
        }
        let mut cells = Vec::new();
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                if grid.tile(r as i64, c as i64) == PICKUP {
                    grid.set(r, c, FLOOR);
                    cells.push((r, c));
                }
            }
        }
        let mut pickups = Vec::new();
        if rules.pickup_mode == PickupMode::Powerups {
            const KINDS: [PickupKind; 3] =
                [PickupKind::Repair, PickupKind::Speed, PickupKind::Rapid];
            let len = cells.len();
            for (i, &(r, c)) in cells.iter().enumerate() {
                let (x, y) = map::cell_center(r, c);
                pickups.push(Pickup {
                    index: i,
                    kind: KINDS[i.min(len - 1 - i) % 3],
                    x,
                    y,
                    active: true,
                });
            }
        }
        let mut w = World {
            tick: 0,
            grid,
            tanks,
            bullets: Vec::new(),
            pickups,
            events: Vec::new(),
            host_alive: 0,
            guest_alive: 0,
            game_over: false,
            winner: Outcome::None,
            rules,
            by_text: Vec::new(),
        };
        w.index();
        w.count_alive();
        w
    }

    pub(crate) fn index(&mut self) {
        let mut order: Vec<usize> = (0..self.tanks.len()).collect();
        order.sort_by(|&a, &b| self.tanks[a].id.text_cmp(&self.tanks[b].id));
        self.by_text = order;
    }

    fn count_alive(&mut self) {
        self.host_alive = self.alive(Team::Host);
        self.guest_alive = self.alive(Team::Guest);
    }

    fn alive(&self, team: Team) -> usize {
        self.tanks
            .iter()
            .filter(|t| t.team() == team && t.alive())
            .count()
    }

    /// The tank with this id.
    pub fn tank(&self, id: UnitId) -> Option<&Tank> {
        self.tank_index(id).map(|i| &self.tanks[i])
    }

    fn tank_index(&self, id: UnitId) -> Option<usize> {
        let n = self.rules.team_size;
        let i = id.index as usize;
        if i >= n {
            return None;
        }
        let at = match id.team {
            Team::Host => i,
            Team::Guest => n + i,
        };
        (self.tanks.get(at).map(|t| t.id) == Some(id)).then_some(at)
    }

    /// How the match stands.
    pub fn outcome(&self) -> Outcome {
        if self.game_over {
            self.winner
        } else {
            Outcome::None
        }
    }

    /// Advance one tick with the commands that target it and return its
    /// events. A side's commands for the other side's units, for units that
    /// do not exist or are destroyed are ignored (the runtime refuses them
    /// earlier with [`validate_commands`](super::validate_commands)); of
    /// two for one unit the later wins. A unit without a command keeps its
    /// last move and fire. The rules are the reference's, in this order:
    ///
    /// 1. every live tank's cooldown drops by one, then its command sets its
    ///    move, fire and facing (the aim, else the move's direction);
    /// 2. all moves are proposed at once (1.5× speed with the speed
    ///    power-up); a move onto steel, brick or water is dropped, and any
    ///    two tanks that would overlap both stay put, repeated until nothing
    ///    changes, so no side wins a tie by its ids;
    /// 3. tanks that fire and are cooled down (in id order) put a shell in
    ///    front of them; the cooldown restarts (halved with rapid fire);
    /// 4. every shell (in id order) flies in substeps of at most 250 units:
    ///    steel stops it, a brick stops it and breaks (after all shells
    ///    moved), an enemy tank (any other tank with friendly fire) stops it
    ///    and takes one damage (after all shells moved);
    /// 5. a power-up under exactly one live tank is taken;
    /// 6. the match ends when a side is eliminated (a draw if both are) or at
    ///    `max_ticks`, where more tanks left, then more hp left, wins.
    ///
    /// A finished world steps on as the reference's does (and lists
    /// `game_over` again); the runtime stops at the first outcome.
    pub fn step(&mut self, host: &[Command], guest: &[Command]) -> &[Event] {
        let tick = self.tick + 1;
        self.tick = tick;
        self.events.clear();
        let balance = self.rules.balance;

        let mut chosen: Vec<Option<&Command>> = vec![None; self.tanks.len()];
        for (team, cmds) in [(Team::Host, host), (Team::Guest, guest)] {
            for c in cmds.iter().filter(|c| c.unit.team == team) {
                if let Some(i) = self.tank_index(c.unit) {
                    chosen[i] = Some(c);
                }
            }
        }
        for (t, c) in self.tanks.iter_mut().zip(&chosen) {
            if !t.alive() {
                continue;
            }
            if t.fire_cd > 0 {
                t.fire_cd -= 1;
            }
            if let Some(c) = c {
                t.last_move = c.mv;
                t.last_fire = c.fire;
                if c.aim != Dir::None {
                    t.facing = c.aim;
                } else if c.mv != Dir::None {
                    t.facing = c.mv;
                }
            }
        }

        self.movement(tick);

        let mut fresh = Vec::new();
        for &i in &self.by_text {
            let t = &mut self.tanks[i];
            if !t.alive() || !t.last_fire || t.fire_cd > 0 {
                continue;
            }
            let (vx, vy) = t.facing.vector();
            let (x, y) = (t.x + vx * MUZZLE, t.y + vy * MUZZLE);
            fresh.push(Bullet {
                id: format!("b{tick}-{}", t.id),
                team: t.team(),
                owner: t.id,
                x,
                y,
                dir: t.facing,
            });
            t.fire_cd = if tick < t.rapid_until {
                (balance.fire_cooldown / 2).max(1)
            } else {
                balance.fire_cooldown
            };
            self.events.push(Event::Fire { tank: t.id, x, y });
        }
        self.bullets.append(&mut fresh);

        let hits = self.fly_shells();
        // Python-style damage: all hits of the tick land together.
        let mut displayed: Vec<i64> = self.tanks.iter().map(|t| t.hp).collect();
        let mut damage: Vec<i64> = vec![0; self.tanks.len()];
        for &(attacker, victim) in &hits {
            displayed[victim] = (displayed[victim] - 1).max(0);
            damage[victim] += 1;
            self.events.push(Event::Hit {
                attacker,
                victim: self.tanks[victim].id,
                victim_hp: displayed[victim],
            });
        }
        for k in 0..self.by_text.len() {
            let i = self.by_text[k];
            if damage[i] == 0 {
                continue;
            }
            let t = &mut self.tanks[i];
            let old = t.hp;
            t.hp = (old - damage[i]).max(0);
            if old > 0 && t.hp == 0 {
                self.events.push(Event::Destroyed { tank: t.id });
            }
        }

        if self.rules.pickup_mode == PickupMode::Powerups {
            let duration = self.rules.powerup_duration_ticks;
            for p in self.pickups.iter_mut().filter(|p| p.active) {
                let mut on = self
                    .tanks
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.alive() && touches(t, p.x, p.y));
                let (Some((i, _)), None) = (on.next(), on.next()) else {
                    continue;
                };
                let t = &mut self.tanks[i];
                p.active = false;
                match p.kind {
                    PickupKind::Repair => t.hp = balance.hp.min(t.hp + 1),
                    PickupKind::Speed => t.speed_until = tick + duration,
                    PickupKind::Rapid => t.rapid_until = tick + duration,
                }
                self.events.push(Event::Pickup {
                    tank: t.id,
                    pickup: p.index,
                    kind: p.kind,
                });
            }
        }

        self.count_alive();
        let host_dead = self.host_alive == 0;
        let guest_dead = self.guest_alive == 0;
        let at_limit = tick >= self.rules.max_ticks;
        if host_dead || guest_dead || at_limit {
            self.game_over = true;
            let winner = match (host_dead, guest_dead) {
                (true, true) => Outcome::Draw,
                (true, false) => Outcome::Guest,
                (false, true) => Outcome::Host,
                (false, false) => {
                    let hp = |team: Team| -> i64 {
                        self.tanks
                            .iter()
                            .filter(|t| t.team() == team)
                            .map(|t| t.hp)
                            .sum()
                    };
                    let h = (self.host_alive, hp(Team::Host));
                    let g = (self.guest_alive, hp(Team::Guest));
                    match h.cmp(&g) {
                        Ordering::Greater => Outcome::Host,
                        Ordering::Less => Outcome::Guest,
                        Ordering::Equal => Outcome::Draw,
                    }
                }
            };
            self.winner = winner;
            self.events.push(Event::GameOver {
                winner,
                reason: if at_limit {
                    EndReason::TickLimit
                } else {
                    EndReason::Elimination
                },
            });
        }
        &self.events
    }

    fn movement(&mut self, tick: i64) {
        let speed = self.rules.balance.speed;
        let live: Vec<usize> = (0..self.tanks.len())
            .filter(|&i| self.tanks[i].alive())
            .collect();
        let mut proposed = Vec::with_capacity(live.len());
        let mut moving = Vec::with_capacity(live.len());
        for &i in &live {
            let t = &self.tanks[i];
            let (vx, vy) = t.last_move.vector();
            let s = if tick < t.speed_until {
                speed * 3 / 2
            } else {
                speed
            };
            let p = (t.x + vx * s, t.y + vy * s);
            proposed.push(p);
            moving.push(t.last_move != Dir::None && !rect_blocked(&self.grid, p.0, p.1));
        }
        loop {
            let at = |k: usize| -> (i64, i64) {
                if moving[k] {
                    proposed[k]
                } else {
                    let t = &self.tanks[live[k]];
                    (t.x, t.y)
                }
            };
            let mut rejected = vec![false; live.len()];
            let mut any = false;
            for a in 0..live.len() {
                for b in a + 1..live.len() {
                    if overlap(at(a), at(b)) {
                        for k in [a, b] {
                            if moving[k] {
                                rejected[k] = true;
                                any = true;
                            }
                        }
                    }
                }
            }
            if !any {
                break;
            }
            for (m, r) in moving.iter_mut().zip(&rejected) {
                if *r {
                    *m = false;
                }
            }
        }
        for (k, &i) in live.iter().enumerate() {
            if moving[k] {
                let t = &mut self.tanks[i];
                (t.x, t.y) = proposed[k];
            }
        }
    }

    /// Move every shell; break the bricks hit; return the hits as
    /// (attacker, victim tank index) in shell-id order.
    fn fly_shells(&mut self) -> Vec<(UnitId, usize)> {
        let speed = self.rules.balance.bullet_speed;
        let steps = ((speed + SHELL_SUBSTEP - 1) / SHELL_SUBSTEP).max(1);
        let (base, extra) = (speed / steps, speed % steps);
        let mut bullets = std::mem::take(&mut self.bullets);
        bullets.sort_by(|a, b| a.id.cmp(&b.id));
        let targets: Vec<usize> = self
            .by_text
            .iter()
            .copied()
            .filter(|&i| self.tanks[i].alive())
            .collect();
        let mut bricks: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
        let mut hits = Vec::new();
        let mut kept = Vec::with_capacity(bullets.len());
        for mut b in bullets {
            let (vx, vy) = b.dir.vector();
            let mut flying = true;
            for s in 0..steps {
                let d = base + i64::from(s < extra);
                let (x, y) = (b.x + vx * d, b.y + vy * d);
                let tile = self.grid.tile_at(x, y);
                if tile == STEEL {
                    flying = false;
                    break;
                }
                if tile == BRICK {
                    let cell = (y.div_euclid(SCALE) as usize, x.div_euclid(SCALE) as usize);
                    bricks.entry(cell).or_default().push(b.id.clone());
                    flying = false;
                    break;
                }
                let victim = targets.iter().copied().find(|&i| {
                    let t = &self.tanks[i];
                    t.id != b.owner
                        && (self.rules.friendly_fire || t.team() != b.team)
                        && touches(t, x, y)
                });
                if let Some(v) = victim {
                    hits.push((b.owner, v));
                    flying = false;
                    break;
                }
                (b.x, b.y) = (x, y);
            }
            if flying {
                kept.push(b);
            }
        }
        self.bullets = kept;
        for ((row, col), mut ids) in bricks {
            self.grid.set(row, col, FLOOR);
            ids.sort();
            self.events.push(Event::BrickDestroyed {
                bullets: ids,
                row,
                col,
            });
        }
        hits
    }
}
