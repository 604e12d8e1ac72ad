//! The world as JSON, and its state hash: SHA-256 (lowercase hex) of the
//! world's canonical JSON (sorted keys, no spaces), the `state_hash` that
//! every `rt_frame` carries.
//!
//! [`World::to_value`] builds the JSON value a frame carries;
//! [`World::canonical_bytes`] writes the same text straight from the typed
//! world (no intermediate value, so the per-tick hash stays cheap). A unit
//! test holds the two to the same bytes.

use super::rules::Rules;
use super::world::{Bullet, Event, Pickup, Tank, World};
use crate::json::canonical::sha256_hex;
use crate::json::{Map, Value};
use std::io::Write;

fn obj(entries: Vec<(&str, Value)>) -> Value {
    let mut m = Map::with_capacity(entries.len());
    for (k, v) in entries {
        m.insert(k, v);
    }
    Value::Object(m)
}

fn s(x: impl ToString) -> Value {
    Value::from(x.to_string())
}

fn rules_value(r: &Rules) -> Value {
    let b = r.balance;
    obj(vec![
        (
            "balance",
            obj(vec![
                ("hp", b.hp.into()),
                ("speed", b.speed.into()),
                ("fire_cooldown", b.fire_cooldown.into()),
                ("bullet_speed", b.bullet_speed.into()),
            ]),
        ),
        ("team_size", (r.team_size as i64).into()),
        ("max_ticks", r.max_ticks.into()),
        ("friendly_fire", r.friendly_fire.into()),
        ("pickup_mode", r.pickup_mode.as_str().into()),
        ("powerup_duration_ticks", r.powerup_duration_ticks.into()),
    ])
}

fn tank_value(t: &Tank) -> Value {
    obj(vec![
        ("id", s(t.id)),
        ("team", t.team().as_str().into()),
        ("x", t.x.into()),
        ("y", t.y.into()),
        ("facing", t.facing.as_str().into()),
        ("hp", t.hp.into()),
        ("fire_cd", t.fire_cd.into()),
        ("last_move", t.last_move.as_str().into()),
        ("last_fire", t.last_fire.into()),
        ("speed_until", t.speed_until.into()),
        ("rapid_until", t.rapid_until.into()),
    ])
}

fn bullet_value(b: &Bullet) -> Value {
    obj(vec![
        ("id", s(&b.id)),
        ("team", b.team.as_str().into()),
        ("owner_id", s(b.owner)),
        ("x", b.x.into()),
        ("y", b.y.into()),
        ("dir", b.dir.as_str().into()),
    ])
}

fn pickup_value(p: &Pickup) -> Value {
    obj(vec![
        ("id", s(format!("p{}", p.index))),
        ("kind", p.kind.as_str().into()),
        ("x", p.x.into()),
        ("y", p.y.into()),
        ("active", p.active.into()),
    ])
}

impl Event {
    /// The event as the world lists it.
    pub fn to_value(&self) -> Value {
        match self {
            Event::Fire { tank, x, y } => obj(vec![
                ("type", "fire".into()),
                ("tank", s(tank)),
                ("x", (*x).into()),
                ("y", (*y).into()),
            ]),
            Event::BrickDestroyed { bullets, row, col } => obj(vec![
                ("type", "brick_destroyed".into()),
                (
                    "bullet",
                    s(bullets.first().map(String::as_str).unwrap_or("")),
                ),
                ("bullets", Value::Array(bullets.iter().map(s).collect())),
                ("row", (*row as i64).into()),
                ("col", (*col as i64).into()),
            ]),
            Event::Hit {
                attacker,
                victim,
                victim_hp,
            } => obj(vec![
                ("type", "hit".into()),
                ("attacker", s(attacker)),
                ("victim", s(victim)),
                ("victim_hp", (*victim_hp).into()),
            ]),
            Event::Destroyed { tank } => obj(vec![
                ("type", "destroyed".into()),
                ("tank", s(tank)),
                ("team", tank.team.as_str().into()),
            ]),
            Event::Pickup { tank, pickup, kind } => obj(vec![
                ("type", "pickup".into()),
                ("tank", s(tank)),
                ("pickup", s(format!("p{pickup}"))),
                ("kind", kind.as_str().into()),
            ]),
            Event::GameOver { winner, reason } => obj(vec![
                ("type", "game_over".into()),
                ("winner", winner.as_str().into()),
                ("reason", reason.as_str().into()),
            ]),
        }
    }
}

/// The events as a JSON list.
pub fn events_value(events: &[Event]) -> Value {
    Value::Array(events.iter().map(Event::to_value).collect())
}

impl World {
    /// The world as the JSON object a frame's `state` carries.
    pub fn to_value(&self) -> Value {
        let grid: Vec<Value> = (0..self.grid.rows)
            .map(|r| {
                let row = &self.grid.cells[r * self.grid.cols..(r + 1) * self.grid.cols];
                Value::Array(row.iter().map(|&b| s(b as char)).collect())
            })
            .collect();
        obj(vec![
            ("schema_version", super::world::SCHEMA_VERSION.into()),
            ("tick", self.tick.into()),
            ("rows", (self.grid.rows as i64).into()),
            ("cols", (self.grid.cols as i64).into()),
            ("grid", Value::Array(grid)),
            (
                "tanks",
                Value::Array(self.tanks.iter().map(tank_value).collect()),
            ),
            (
                "bullets",
                Value::Array(self.bullets.iter().map(bullet_value).collect()),
            ),
            (
                "pickups",
                Value::Array(self.pickups.iter().map(pickup_value).collect()),
            ),
            ("events", events_value(&self.events)),
            ("host_alive", (self.host_alive as i64).into()),
            ("guest_alive", (self.guest_alive as i64).into()),
            ("game_over", self.game_over.into()),
            ("winner", self.winner.as_str().into()),
            ("rules", rules_value(&self.rules)),
        ])
    }

    /// The world's canonical JSON text as bytes (what the state hash hashes).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(512 + self.grid.cells.len() * 4 + self.tanks.len() * 200);
        self.write_canonical(&mut o);
        o
    }

    /// SHA-256 hex of the canonical JSON: the frame's `state_hash`.
    pub fn state_hash(&self) -> String {
        sha256_hex(self.canonical_bytes())
    }

    // Keys below are written in code-point order by hand; every string is
    // ASCII that needs no escape (tile letters, ids, enum words).
    fn write_canonical(&self, o: &mut Vec<u8>) {
        o.extend_from_slice(b"{\"bullets\":[");
        for (i, b) in self.bullets.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            let _ = write!(
                o,
                "{{\"dir\":\"{}\",\"id\":\"{}\",\"owner_id\":\"{}\",\"team\":\"{}\",\"x\":{},\"y\":{}}}",
                b.dir.as_str(),
                b.id,
                b.owner,
                b.team.as_str(),
                b.x,
                b.y
            );
        }
        let _ = write!(o, "],\"cols\":{},\"events\":[", self.grid.cols);
        for (i, e) in self.events.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            write_event(e, o);
        }
        let _ = write!(o, "],\"game_over\":{},\"grid\":[", self.game_over);
        for r in 0..self.grid.rows {
            if r > 0 {
                o.push(b',');
            }
            o.push(b'[');
            for (c, &t) in self.grid.cells[r * self.grid.cols..(r + 1) * self.grid.cols]
                .iter()
                .enumerate()
            {
                if c > 0 {
                    o.push(b',');
                }
                o.extend_from_slice(&[b'"', t, b'"']);
            }
            o.push(b']');
        }
        let _ = write!(
            o,
            "],\"guest_alive\":{},\"host_alive\":{},\"pickups\":[",
            self.guest_alive, self.host_alive
        );
        for (i, p) in self.pickups.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            let _ = write!(
                o,
                "{{\"active\":{},\"id\":\"p{}\",\"kind\":\"{}\",\"x\":{},\"y\":{}}}",
                p.active,
                p.index,
                p.kind.as_str(),
                p.x,
                p.y
            );
        }
        let r = &self.rules;
        let b = r.balance;
        let _ = write!(
            o,
            "],\"rows\":{},\"rules\":{{\"balance\":{{\"bullet_speed\":{},\"fire_cooldown\":{},\"hp\":{},\"speed\":{}}},\"friendly_fire\":{},\"max_ticks\":{},\"pickup_mode\":\"{}\",\"powerup_duration_ticks\":{},\"team_size\":{}}},\"schema_version\":{},\"tanks\":[",
            self.grid.rows,
            b.bullet_speed,
            b.fire_cooldown,
            b.hp,
            b.speed,
            r.friendly_fire,
            r.max_ticks,
            r.pickup_mode.as_str(),
            r.powerup_duration_ticks,
            r.team_size,
            super::world::SCHEMA_VERSION
        );
        for (i, t) in self.tanks.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            let _ = write!(
                o,
                "{{\"facing\":\"{}\",\"fire_cd\":{},\"hp\":{},\"id\":\"{}\",\"last_fire\":{},\"last_move\":\"{}\",\"rapid_until\":{},\"speed_until\":{},\"team\":\"{}\",\"x\":{},\"y\":{}}}",
                t.facing.as_str(),
                t.fire_cd,
                t.hp,
                t.id,
                t.last_fire,
                t.last_move.as_str(),
                t.rapid_until,
                t.speed_until,
                t.team().as_str(),
                t.x,
                t.y
            );
        }
        let _ = write!(
            o,
            "],\"tick\":{},\"winner\":\"{}\"}}",
            self.tick,
            self.winner.as_str()
        );
    }
}

fn write_event(e: &Event, o: &mut Vec<u8>) {
    let _ = match e {
        Event::Fire { tank, x, y } => write!(
            o,
            "{{\"tank\":\"{tank}\",\"type\":\"fire\",\"x\":{x},\"y\":{y}}}"
        ),
        Event::BrickDestroyed { bullets, row, col } => {
            let first = bullets.first().map(String::as_str).unwrap_or("");
            let _ = write!(o, "{{\"bullet\":\"{first}\",\"bullets\":[");
            for (i, b) in bullets.iter().enumerate() {
                if i > 0 {
                    o.push(b',');
                }
                let _ = write!(o, "\"{b}\"");
            }
            write!(
                o,
                "],\"col\":{col},\"row\":{row},\"type\":\"brick_destroyed\"}}"
            )
        }
        Event::Hit {
            attacker,
            victim,
            victim_hp,
        } => write!(
            o,
            "{{\"attacker\":\"{attacker}\",\"type\":\"hit\",\"victim\":\"{victim}\",\"victim_hp\":{victim_hp}}}"
        ),
        Event::Destroyed { tank } => write!(
            o,
            "{{\"tank\":\"{tank}\",\"team\":\"{}\",\"type\":\"destroyed\"}}",
            tank.team.as_str()
        ),
        Event::Pickup { tank, pickup, kind } => write!(
            o,
            "{{\"kind\":\"{}\",\"pickup\":\"p{pickup}\",\"tank\":\"{tank}\",\"type\":\"pickup\"}}",
            kind.as_str()
        ),
        Event::GameOver { winner, reason } => write!(
            o,
            "{{\"reason\":\"{}\",\"type\":\"game_over\",\"winner\":\"{}\"}}",
            reason.as_str(),
            winner.as_str()
        ),
    };
}
