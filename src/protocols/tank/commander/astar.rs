//! Navigation: a weighted A* over map cells (turn, congestion and history
//! costs, ties broken so that mirrored positions get mirrored routes) and
//! the per-tank route memory that follows a committed route, replans when
//! stuck, blocked or stale, and breaks two-cell oscillations.

use super::{Cell, TargetKey, tank_cell, to_canonical, unit_index};
use crate::protocols::tank::{Dir, SCALE, TANK_HALF, Tank, Team, World, blocks_move};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A route is replanned after this many ticks.
pub const ROUTE_TTL: i64 = 48;
/// Ticks stuck (or blocked) before replanning around it.
pub const STUCK_REPLAN_TICKS: i64 = 4;

const CARDINAL: [Dir; 4] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right];

/// The order directions are tried in: host up, left, right, down; guest the
/// same turned 180°.
pub fn direction_order(team: Team) -> [Dir; 4] {
    match team {
        Team::Host => [Dir::Up, Dir::Left, Dir::Right, Dir::Down],
        Team::Guest => [Dir::Down, Dir::Right, Dir::Left, Dir::Up],
    }
}

pub fn reverse(d: Dir) -> Dir {
    match d {
        Dir::Up => Dir::Down,
        Dir::Down => Dir::Up,
        Dir::Left => Dir::Right,
        Dir::Right => Dir::Left,
        Dir::None => Dir::None,
    }
}

fn dir_index(d: Dir) -> usize {
    match d {
        Dir::Up => 0,
        Dir::Down => 1,
        Dir::Left => 2,
        Dir::Right => 3,
        Dir::None => 4,
    }
}

fn step(cell: Cell, d: Dir) -> Cell {
    let (vx, vy) = d.vector();
    (cell.0 + vy, cell.1 + vx)
}

/// The direction from a cell to a neighbour, `None` if not adjacent.
fn direction_between(from: Cell, to: Cell) -> Option<Dir> {
    CARDINAL.into_iter().find(|&d| step(from, d) == to)
}

/// What one tank remembers between ticks.
#[derive(Debug, Clone)]
pub struct NavMemory {
    pub route: Vec<Cell>,
    pub target_key: Option<TargetKey>,
    pub planned_target: Option<Cell>,
    pub planned_at: i64,
    pub last_position: Option<(i64, i64)>,
    pub last_output: Dir,
    pub last_nonzero: Dir,
    pub stuck_ticks: i64,
    pub blocked_ticks: i64,
    /// The last 14 cells it stood in (a cell once per stay).
    pub recent_cells: VecDeque<Cell>,
    /// Its last 8 moves.
    pub recent_moves: VecDeque<Dir>,
    pub yield_until: i64,
    pub cycle_breaks: i64,
}

impl Default for NavMemory {
    fn default() -> NavMemory {
        NavMemory {
            route: Vec::new(),
            target_key: None,
            planned_target: None,
            planned_at: -1,
            last_position: None,
            last_output: Dir::None,
            last_nonzero: Dir::None,
            stuck_ticks: 0,
            blocked_ticks: 0,
            recent_cells: VecDeque::with_capacity(14),
            recent_moves: VecDeque::with_capacity(8),
            yield_until: -1,
            cycle_breaks: 0,
        }
    }
}

/// The cells of the other live tanks.
pub fn occupied_cells(world: &World, tank: &Tank) -> Vec<Cell> {
    world
        .tanks
        .iter()
        .filter(|u| u.hp > 0 && u.id != tank.id)
        .map(|u| tank_cell(world, u))
        .collect()
}

/// The cells on the way from `start` to a goal: the target cell, or when
/// it is blocked or taken the open free cells next to it. `[start]` when
/// there is no goal, the tank is on one, or none can be reached. A step
/// costs 10, plus 70 onto another tank, 55 onto a cell a teammate has
/// claimed this tick, 6 for each recent visit, 3 for a turn, 18 more for
/// a reversal, and from the start 2 for leaving the last heading and 28
/// for reversing it; the estimate is 1.2 × 10 × Manhattan distance.
pub fn plan_route(
    world: &World,
    tank: &Tank,
    start: Cell,
    target: Cell,
    memory: &NavMemory,
    reserved: &[Cell],
    banned_first: Option<Dir>,
) -> Vec<Cell> {
    let (rows, cols) = (world.grid.rows as i64, world.grid.cols as i64);
    let target = (
        (rows - 2).min(target.0).max(1),
        (cols - 2).min(target.1).max(1),
    );
    let occupied = occupied_cells(world, tank);
    let team = tank.team();
    let blocked = |c: Cell| blocks_move(world.grid.tile(c.0, c.1));
    let mut goals: Vec<Cell> = vec![target];
    if blocked(target) || occupied.contains(&target) {
        goals.clear();
        for d in direction_order(team) {
            let c = step(target, d);
            if 1 <= c.0
                && c.0 < rows - 1
                && 1 <= c.1
                && c.1 < cols - 1
                && !blocked(c)
                && !occupied.contains(&c)
                && !goals.contains(&c)
            {
                goals.push(c);
            }
        }
    }
    if goals.is_empty() || goals.contains(&start) {
        return vec![start];
    }
    let recent = |c: Cell| memory.recent_cells.iter().filter(|&&r| r == c).count() as i64;
    let order = direction_order(team);
    let rank = |d: Dir| order.iter().position(|&o| o == d).unwrap_or(0) as i64;
    let last_nonzero = memory.last_nonzero;
    let heuristic = |c: Cell| {
        goals
            .iter()
            .map(|g| (c.0 - g.0).abs() + (c.1 - g.1).abs())
            .min()
            .unwrap_or(0)
            * 10
    };
    // State index: (row, col, incoming) with incoming 4 meaning none.
    let width = cols.max(1) as usize;
    let slots = (rows.max(1) as usize) * width * 5;
    let slot = |c: Cell, d: Dir| -> Option<usize> {
        if c.0 < 0 || c.1 < 0 || c.0 >= rows || c.1 >= cols {
            return None;
        }
        Some((c.0 as usize * width + c.1 as usize) * 5 + dir_index(d))
    };
    let mut best: Vec<i64> = vec![i64::MAX; slots];
    let mut parent: Vec<u32> = vec![u32::MAX; slots];
    let Some(start_slot) = slot(start, Dir::None) else {
        return vec![start];
    };
    best[start_slot] = 0;
    // (f, h, cost, turns, canonical row, canonical col, rank, row, col, incoming)
    type Entry = (i64, i64, i64, i64, i64, i64, i64, i64, i64, usize);
    let mut heap: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
    let h0 = heuristic(start);
    let cs = to_canonical(world, team, start);
    heap.push(Reverse((
        h0 * 6 / 5,
        h0,
        0,
        0,
        cs.0,
        cs.1,
        0,
        start.0,
        start.1,
        4,
    )));
    const DIRS: [Dir; 5] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right, Dir::None];
    while let Some(Reverse((_, _, cost, turns, _, _, _, row, col, inc))) = heap.pop() {
        let cell = (row, col);
        let incoming = DIRS[inc];
        let Some(here) = slot(cell, incoming) else {
            continue;
        };
        if best[here] != cost {
            continue;
        }
        if goals.contains(&cell) {
            let mut route = vec![cell];
            let mut cursor = here;
            while parent[cursor] != u32::MAX {
                cursor = parent[cursor] as usize;
                let c = cursor / 5;
                route.push(((c / width) as i64, (c % width) as i64));
            }
            route.reverse();
            return route;
        }
        for d in order {
            if cell == start && banned_first == Some(d) {
                continue;
            }
            let next = step(cell, d);
            if !(1 <= next.0 && next.0 < rows - 1 && 1 <= next.1 && next.1 < cols - 1) {
                continue;
            }
            if blocked(next) {
                continue;
            }
            let goal = goals.contains(&next);
            let mut cost_step = 10;
            if occupied.contains(&next) && !goal {
                cost_step += 70;
            }
            if reserved.contains(&next) && !goal {
                cost_step += 55;
            }
            cost_step += recent(next) * 6;
            let mut next_turns = turns;
            if incoming != Dir::None && d != incoming {
                cost_step += 3;
                next_turns += 1;
            }
            if incoming != Dir::None && d == reverse(incoming) {
                cost_step += 18;
            }
            if cell == start && last_nonzero != Dir::None {
                if d != last_nonzero {
                    cost_step += 2;
                }
                if d == reverse(last_nonzero) {
                    cost_step += 28;
                }
            }
            let next_cost = cost + cost_step;
            let Some(ns) = slot(next, d) else {
                continue;
            };
            if next_cost >= best[ns] {
                continue;
            }
            best[ns] = next_cost;
            parent[ns] = here as u32;
            let cn = to_canonical(world, team, next);
            let remaining = heuristic(next);
            heap.push(Reverse((
                next_cost + remaining * 6 / 5,
                remaining,
                next_cost,
                next_turns,
                cn.0,
                cn.1,
                rank(d),
                next.0,
                next.1,
                dir_index(d),
            )));
        }
    }
    vec![start]
}

/// The tank's move this tick toward `target`: follow the remembered route
/// (replanned when empty, for a new target, when the target drifted, when
/// a wall appeared on it, when stuck or when stale), wait for or route
/// around a tank in the way, line up with the lane before moving along it,
/// and stand for two ticks to break an A-B-A-B loop. Claims the next cell
/// in `reserved` when it moves.
pub fn path_direction(
    world: &World,
    tank: &Tank,
    memory: &mut NavMemory,
    reserved: &mut Vec<Cell>,
    target: Cell,
    target_key: TargetKey,
    target_tick: i64,
) -> Dir {
    let start = tank_cell(world, tank);
    let position = (tank.x, tank.y);
    let uindex = unit_index(tank);
    if memory.last_position == Some(position) && memory.last_output != Dir::None {
        memory.stuck_ticks += 1;
    } else if memory.last_position != Some(position) {
        memory.stuck_ticks = 0;
    }
    if memory.recent_cells.back() != Some(&start) {
        if memory.recent_cells.len() == 14 {
            memory.recent_cells.pop_front();
        }
        memory.recent_cells.push_back(start);
    }
    let changed = memory.target_key.as_ref() != Some(&target_key);
    if changed {
        memory.target_key = Some(target_key);
        memory.route.clear();
        memory.blocked_ticks = 0;
        memory.recent_moves.clear();
    }
    let mut route: Vec<Cell> = match memory.route.iter().position(|&c| c == start) {
        Some(i) => memory.route[i..].to_vec(),
        None => Vec::new(),
    };
    let drift = memory
        .planned_target
        .map_or(1 << 30, |p| (p.0 - target.0).abs() + (p.1 - target.1).abs());
    let threshold = (route.len() as i64 / 4).clamp(4, 12);
    let drifted =
        drift > threshold && (i128::from(target_tick) + i128::from(uindex)).rem_euclid(4) == 0;
    let invalid = route
        .iter()
        .take(4)
        .any(|&(r, c)| blocks_move(world.grid.tile(r, c)));
    if route.is_empty()
        || changed
        || drifted
        || invalid
        || memory.stuck_ticks >= STUCK_REPLAN_TICKS
        || target_tick.saturating_sub(memory.planned_at) >= ROUTE_TTL
    {
        let banned = if memory.stuck_ticks >= STUCK_REPLAN_TICKS && memory.last_output != Dir::None
        {
            Some(memory.last_output)
        } else {
            None
        };
        route = plan_route(world, tank, start, target, memory, reserved, banned);
        memory.planned_target = Some(target);
        memory.planned_at = target_tick.saturating_add(uindex.rem_euclid(24));
        memory.stuck_ticks = 0;
    }

    let mut candidate = Dir::None;
    let mut next_cell: Option<Cell> = None;
    if target_tick > memory.yield_until && route.len() > 1 {
        next_cell = Some(route[1]);
        let occupied = occupied_cells(world, tank);
        let taken = |c: Cell| occupied.contains(&c) || reserved.contains(&c);
        if taken(route[1]) {
            memory.blocked_ticks += 1;
            if memory.blocked_ticks >= STUCK_REPLAN_TICKS {
                let blocked_dir = direction_between(start, route[1]);
                route = plan_route(world, tank, start, target, memory, reserved, blocked_dir);
                memory.blocked_ticks = 0;
                next_cell = route.get(1).copied();
            }
        } else {
            memory.blocked_ticks = 0;
        }
        if let Some(next) = next_cell
            && !taken(next)
        {
            let along = direction_between(start, next).unwrap_or(Dir::None);
            let row_center = start.0 * SCALE + SCALE / 2;
            let col_center = start.1 * SCALE + SCALE / 2;
            let tolerance = SCALE / 2 - TANK_HALF;
            match along {
                Dir::Left | Dir::Right => {
                    let offset = tank.y - row_center;
                    candidate = if offset.abs() > tolerance {
                        if offset > 0 { Dir::Up } else { Dir::Down }
                    } else {
                        along
                    };
                }
                Dir::Up | Dir::Down => {
                    let offset = tank.x - col_center;
                    candidate = if offset.abs() > tolerance {
                        if offset > 0 { Dir::Left } else { Dir::Right }
                    } else {
                        along
                    };
                }
                Dir::None => {}
            }
        }
    }
    let h = &memory.recent_moves;
    let n = h.len();
    if candidate != Dir::None
        && n >= 3
        && h[n - 3] == h[n - 1]
        && h[n - 2] == candidate
        && h[n - 1] == reverse(candidate)
    {
        candidate = Dir::None;
        route.clear();
        memory.yield_until = target_tick.saturating_add(2);
        memory.cycle_breaks += 1;
    }
    memory.route = route;
    memory.last_position = Some(position);
    memory.last_output = candidate;
    if memory.recent_moves.len() == 8 {
        memory.recent_moves.pop_front();
    }
    memory.recent_moves.push_back(candidate);
    if candidate != Dir::None {
        memory.last_nonzero = candidate;
        if let Some(c) = next_cell
            && !reserved.contains(&c)
        {
            reserved.push(c);
        }
    }
    candidate
}
