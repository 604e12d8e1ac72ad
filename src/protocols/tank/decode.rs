//! A world back from the JSON a frame carries (`frame.state`): what a
//! guest or a viewer that does not simulate needs to draw it.

use super::TankError;
use super::map::{Grid, SCALE};
use super::rules::{MatchSetup, Rules};
use super::types::{Dir, Team, UnitId};
use super::world::{Bullet, EndReason, Event, Outcome, Pickup, PickupKind, Tank, World};
use crate::json::canonical;
use crate::json::{Map, Value};

fn err(what: impl std::fmt::Display) -> TankError {
    TankError::new(format!("the state's {what} is not what the rules write"))
}

fn field<'a>(m: &'a Map, key: &str) -> Result<&'a Value, TankError> {
    m.get(key).ok_or_else(|| err(key))
}

fn int(m: &Map, key: &str, lo: i64, hi: i64) -> Result<i64, TankError> {
    match field(m, key)?.as_i64() {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(err(key)),
    }
}

fn text<'a>(m: &'a Map, key: &str) -> Result<&'a str, TankError> {
    field(m, key)?.as_str().ok_or_else(|| err(key))
}

fn boolean(m: &Map, key: &str) -> Result<bool, TankError> {
    field(m, key)?.as_bool().ok_or_else(|| err(key))
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map, TankError> {
    v.as_object().ok_or_else(|| err(what))
}

fn list<'a>(m: &'a Map, key: &str, max: usize) -> Result<&'a [Value], TankError> {
    match field(m, key)?.as_array() {
        Some(a) if a.len() <= max => Ok(a),
        _ => Err(err(key)),
    }
}

fn unit(m: &Map, key: &str) -> Result<UnitId, TankError> {
    UnitId::parse(text(m, key)?).ok_or_else(|| err(key))
}

fn dir(m: &Map, key: &str) -> Result<Dir, TankError> {
    Dir::parse(text(m, key)?).ok_or_else(|| err(key))
}

fn kind(m: &Map) -> Result<PickupKind, TankError> {
    match text(m, "kind")? {
        "repair" => Ok(PickupKind::Repair),
        "speed" => Ok(PickupKind::Speed),
        "rapid" => Ok(PickupKind::Rapid),
        _ => Err(err("kind")),
    }
}

fn outcome(s: &str) -> Option<Outcome> {
    [Outcome::None, Outcome::Host, Outcome::Guest, Outcome::Draw]
        .into_iter()
        .find(|o| o.as_str() == s)
}

fn pickup_index(m: &Map, key: &str) -> Result<usize, TankError> {
    text(m, key)?
        .strip_prefix('p')
        .filter(|d| !d.is_empty() && d.len() <= 4 && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| err(key))
}

fn event(v: &Value, coord: i64) -> Result<Event, TankError> {
    let m = object(v, "event")?;
    Ok(match text(m, "type")? {
        "fire" => Event::Fire {
            tank: unit(m, "tank")?,
            x: int(m, "x", -coord, coord)?,
            y: int(m, "y", -coord, coord)?,
        },
        "brick_destroyed" => Event::BrickDestroyed {
            bullets: list(m, "bullets", 4096)?
                .iter()
                .map(|b| b.as_str().map(str::to_string).ok_or_else(|| err("bullets")))
                .collect::<Result<_, _>>()?,
            row: int(m, "row", 0, 127)? as usize,
            col: int(m, "col", 0, 127)? as usize,
        },
        "hit" => Event::Hit {
            attacker: unit(m, "attacker")?,
            victim: unit(m, "victim")?,
            victim_hp: int(m, "victim_hp", 0, 99)?,
        },
        "destroyed" => Event::Destroyed {
            tank: unit(m, "tank")?,
        },
        "pickup" => Event::Pickup {
            tank: unit(m, "tank")?,
            pickup: pickup_index(m, "pickup")?,
            kind: kind(m)?,
        },
        "game_over" => Event::GameOver {
            winner: outcome(text(m, "winner")?).ok_or_else(|| err("winner"))?,
            reason: match text(m, "reason")? {
                "elimination" => EndReason::Elimination,
                "tick_limit" => EndReason::TickLimit,
                _ => return Err(err("reason")),
            },
        },
        _ => return Err(err("event type")),
    })
}

fn rules(m: &Map) -> Result<Rules, TankError> {
    // The rules hold the same values as the options, with the balance row
    // unwrapped: check them with the options' ranges.
    let mut options = Map::new();
    let mut table = Map::new();
    table.insert("tank", field(m, "balance")?.clone());
    options.insert("balance", Value::Object(table));
    for key in [
        "team_size",
        "max_ticks",
        "friendly_fire",
        "pickup_mode",
        "powerup_duration_ticks",
    ] {
        options.insert(key, field(m, key)?.clone());
    }
    Ok(MatchSetup::from_options(&options)?.rules)
}

impl World {
    /// The world a frame's `state` describes. Every number is range-checked,
    /// and the result must write back to exactly the same canonical JSON (so
    /// its `state_hash` is the frame's); anything else is refused.
    pub fn from_value(v: &Value) -> Result<World, TankError> {
        let m = object(v, "state")?;
        if int(m, "schema_version", 1, 1)? != 1 {
            return Err(err("schema_version"));
        }
        let rules = rules(object(field(m, "rules")?, "rules")?)?;
        let tick = int(m, "tick", 0, rules.max_ticks)?;
        let rows = int(m, "rows", 5, 128)? as usize;
        let cols = int(m, "cols", 5, 128)? as usize;
        let mut cells = Vec::with_capacity(rows * cols);
        let grid_rows = list(m, "grid", rows)?;
        if grid_rows.len() != rows {
            return Err(err("grid"));
        }
        for row in grid_rows {
            match row.as_array() {
                Some(r) if r.len() == cols => {
                    for t in r {
                        match t.as_str().map(str::as_bytes) {
                            Some([b @ (b'#' | b'B' | b'W' | b'S' | b'P' | b'.')]) => cells.push(*b),
                            _ => return Err(err("grid")),
                        }
                    }
                }
                _ => return Err(err("grid")),
            }
        }
        let coord = (rows.max(cols) as i64 + 1) * SCALE;
        let later = tick + 100_000;
        let n = rules.team_size;
        let mut tanks = Vec::with_capacity(2 * n);
        for (i, t) in list(m, "tanks", 2 * n)?.iter().enumerate() {
            let t = object(t, "tank")?;
            let id = unit(t, "id")?;
            let want = if i < n {
                UnitId {
                    team: Team::Host,
                    index: i as u16,
                }
            } else {
                UnitId {
                    team: Team::Guest,
                    index: (i - n) as u16,
                }
            };
            if id != want || Team::parse(text(t, "team")?) != Some(id.team) {
                return Err(err("tank id"));
            }
            tanks.push(Tank {
                id,
                x: int(t, "x", 0, coord)?,
                y: int(t, "y", 0, coord)?,
                facing: dir(t, "facing")?,
                hp: int(t, "hp", 0, 99)?,
                fire_cd: int(t, "fire_cd", 0, 60)?,
                last_move: dir(t, "last_move")?,
                last_fire: boolean(t, "last_fire")?,
                speed_until: int(t, "speed_until", 0, later)?,
                rapid_until: int(t, "rapid_until", 0, later)?,
            });
        }
        if tanks.len() != 2 * n {
            return Err(err("tanks"));
        }
        let mut bullets = Vec::new();
        for b in list(m, "bullets", 64 * 1024)? {
            let b = object(b, "bullet")?;
            let id = text(b, "id")?;
            if id.len() > 32 {
                return Err(err("bullet id"));
            }
            bullets.push(Bullet {
                id: id.to_string(),
                team: Team::parse(text(b, "team")?).ok_or_else(|| err("bullet team"))?,
                owner: unit(b, "owner_id")?,
                x: int(b, "x", -coord, coord)?,
                y: int(b, "y", -coord, coord)?,
                dir: dir(b, "dir")?,
            });
        }
        let mut pickups = Vec::new();
        for (i, p) in list(m, "pickups", rows * cols)?.iter().enumerate() {
            let p = object(p, "pickup")?;
            if pickup_index(p, "id")? != i {
                return Err(err("pickup id"));
            }
            pickups.push(Pickup {
                index: i,
                kind: kind(p)?,
                x: int(p, "x", 0, coord)?,
                y: int(p, "y", 0, coord)?,
                active: boolean(p, "active")?,
            });
        }
        let events = list(m, "events", 64 * 1024)?
            .iter()
            .map(|e| event(e, coord))
            .collect::<Result<_, _>>()?;
        let mut w = World {
            tick,
            grid: Grid { rows, cols, cells },
            tanks,
            bullets,
            pickups,
            events,
            host_alive: int(m, "host_alive", 0, n as i64)? as usize,
            guest_alive: int(m, "guest_alive", 0, n as i64)? as usize,
            game_over: boolean(m, "game_over")?,
            winner: outcome(text(m, "winner")?).ok_or_else(|| err("winner"))?,
            rules,
            by_text: Vec::new(),
        };
        w.index();
        if w.canonical_bytes() != canonical::to_vec(v) {
            return Err(TankError::new(
                "the state has fields or values the rules do not write",
            ));
        }
        Ok(w)
    }
}
