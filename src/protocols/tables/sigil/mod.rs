//! aether-sigil-v1: a four-seat duel of channelers over one shared pile of
//! 72 cards (18 original faces, four copies each). Every seat starts with
//! five private cards, `starting_life` life (10–50, default 20), no shield
//! and one Aether. On its turn a seat spends Aether to summon units (at
//! most three on its row; they enter exhausted), set relics (at most two)
//! or cast spells, attacks once with each ready unit — another seat's unit
//! (both deal their power to the other's guard at once) or a channeler
//! directly (shield absorbs first) — and ends its turn. The next seat still
//! standing gains one maximum Aether (up to ten), refills, readies its units
//! and draws; drawing from the empty pile deals fatigue damage that grows by
//! one each time. A channeler at zero life (or one who concedes) is out; the
//! last one standing wins, and the outcome is its public key.
//!
//! The rules, events, refusal texts and state shape are those of the
//! reference's hooks.py of this protocol (cbdb124e…) with its helper
//! `proto/shared_deck.py`, checked line by line by tests/tables_hooks.rs.
//! Where the reference is odd, this is odd the same way: a spell takes
//! effect before its card leaves the hand (so Star Map can draw into a hand
//! that still holds it), a seat felled by its own spell's fatigue passes the
//! turn without the turn number moving, and a leader change only rewrites
//! the recovery notice (the fresh deal comes from `restore`).
//!
//! A new match is built as a [`Game`] and written as the state; an action
//! is checked and applied by the rules in `rules` on the state's own map,
//! in place (only the members it changes are copied); a seat's choices
//! (legal actions and the bot) are in `bot`.

mod bot;
mod rules;
#[cfg(test)]
mod tests;

use super::{deck, hook_result, leader_changed};
use crate::engine::HostMetadata;
use crate::engine::group::{GroupHooks, HookFailure};
use crate::json::{Map, Number, Value};
use crate::obj;
use std::collections::BTreeMap;

type Hooked<T> = Result<T, HookFailure>;

/// The most units a seat may have on its row.
const MAX_UNITS: usize = 3;
/// The most relics a seat may have set.
const MAX_RELICS: usize = 2;
/// Maximum Aether never grows past this.
const ENERGY_CAP: i64 = 10;
/// Cards dealt to each seat.
const HAND_SIZE: usize = 5;
/// Physical copies of each face in the pile.
const COPIES: usize = 4;

/// `proto_host_metadata` of aether-sigil-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Aether Sigil".into(),
        tags: "game,cards,multiplayer,shared-deck,original".into(),
        invite_type: "supply".into(),
        default_options: obj! { "starting_life" => 20 },
    }
}

/// The rules of aether-sigil-v1.
#[derive(Debug, Clone, Default)]
pub struct Sigil {
    options: Map,
}

/// One channeler, as the state holds it.
#[derive(Debug, Clone, PartialEq)]
struct Player {
    seat: Value,
    life: i64,
    shield: i64,
    energy: i64,
    max_energy: i64,
    fatigue: i64,
    defeated: bool,
}

/// A unit on a row: damage taken, whether it may still attack this turn,
/// and the power its owner's relics gave it when it was summoned.
#[derive(Debug, Clone, PartialEq)]
struct UnitState {
    damage: i64,
    exhausted: bool,
    power_bonus: i64,
}

/// The whole authority state of a match.
#[derive(Debug, Clone)]
struct Game {
    phase: String,
    restart_count: i64,
    recovery_notice: String,
    turn_number: i64,
    turn_order: Vec<String>,
    current_player: String,
    players: BTreeMap<String, Player>,
    /// The shared deck in the reference's shape (see [`deck`]).
    deck: Map,
    unit_state: BTreeMap<String, UnitState>,
    winner: String,
}

/// What a card does, read from its catalog entry (absent numbers are 0).
#[derive(Debug, Clone, Default, PartialEq)]
struct Card {
    id: String,
    card_type: String,
    effect: String,
    cost: i64,
    power: i64,
    guard: i64,
    amount: i64,
    max_power: i64,
    /// The catalog entry itself, as events show it.
    face: Map,
}

impl Card {
    fn from_face(face: &Map) -> Card {
        let n = |k: &str| face.get(k).and_then(Value::as_i64).unwrap_or(0);
        let s = |k: &str| face.get_str(k).unwrap_or_default().to_owned();
        Card {
            id: s("card_id"),
            card_type: s("card_type"),
            effect: s("effect"),
            cost: n("cost"),
            power: n("power"),
            guard: n("guard"),
            amount: n("amount"),
            max_power: n("max_power"),
            face: face.clone(),
        }
    }
}

impl Sigil {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }

    /// `int(options.get("starting_life", 20))`, refused outside 10–50: the
    /// life every channeler starts with and no heal goes past.
    fn starting_life(&self) -> Hooked<i64> {
        let out_of_range = || HookFailure::from("starting_life must be between 10 and 50");
        let life = match self.options.get("starting_life") {
            None => 20,
            Some(v) => match py_int(v)? {
                Some(n) => n,
                None => return Err(out_of_range()),
            },
        };
        if !(10..=50).contains(&life) {
            return Err(out_of_range());
        }
        Ok(life)
    }

    /// No heal takes a channeler above `int(options.get("starting_life",
    /// 20))` (read when a heal happens, as the reference does; a new match
    /// has already checked it is 10–50).
    fn heal_cap(&self) -> Hooked<i64> {
        match self.options.get("starting_life") {
            None => Ok(20),
            Some(v) => Ok(py_int(v)?.unwrap_or(i64::MAX)),
        }
    }

    /// A new match for the active members in seat order: a fresh deal,
    /// seeded `{deal_seed}:{restart_count}` when the room set a seed.
    fn new_match(&self, members: &[Value], restart_count: i64, notice: &str) -> Hooked<Game> {
        let mut active: Vec<&Value> = members
            .iter()
            .filter(|m| m.get_str("status") == Some("active"))
            .collect();
        if active.iter().any(|m| m.get("seat").is_none()) {
            return Err("'seat'".into());
        }
        active.sort_by_key(|m| m.get("seat").and_then(Value::as_i64).unwrap_or(0));
        if active.len() != 4 {
            return Err("Aether Sigil requires exactly four active Members".into());
        }
        let seed = match self.options.get_str("deal_seed") {
            Some(s) if !s.is_empty() => format!("{s}:{restart_count}"),
            _ => hex::encode(rand::random::<[u8; 24]>()),
        };
        let life = self.starting_life()?;
        let seated: Vec<Value> = active.iter().map(|m| (*m).clone()).collect();
        let deck = deck::create(&faces(), &seated, HAND_SIZE, &seed, COPIES)?;
        let mut order = Vec::with_capacity(4);
        let mut players = BTreeMap::new();
        for m in &active {
            let pk = m.get_str("public_key").ok_or("'public_key'")?.to_owned();
            players.insert(
                pk.clone(),
                Player {
                    seat: m.get("seat").cloned().unwrap_or(Value::Null),
                    life,
                    shield: 0,
                    energy: 1,
                    max_energy: 1,
                    fatigue: 0,
                    defeated: false,
                },
            );
            order.push(pk);
        }
        Ok(Game {
            phase: "playing".into(),
            restart_count,
            recovery_notice: notice.into(),
            turn_number: 1,
            current_player: order[0].clone(),
            turn_order: order,
            players,
            deck,
            unit_state: BTreeMap::new(),
            winner: String::new(),
        })
    }
}

impl GroupHooks for Sigil {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        Ok(Value::Object(self.new_match(members, 0, "")?.to_state()))
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_rejoined",
            "public_key" => field(member, "public_key")?,
            "seat" => field(member, "seat")?,
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        let event = obj! {
            "kind" => "member_disconnected",
            "public_key" => field(member, "public_key")?,
            "reason" => reason,
        };
        Ok(super::result_value(state, vec![Value::Object(event)]))
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let Value::Object(state) = state else {
            return Err("the table state is not an object".into());
        };
        rules::check(&state)?;
        if state.get_str("phase") != Some("playing") {
            return Err("the match is complete".into());
        }
        let pk = field(actor, "public_key")?;
        let current = state.get_str("current_player").unwrap_or_default();
        if pk.as_str() != Some(current) {
            return Err("it is not this Member's turn".into());
        }
        let pk = current.to_owned();
        let Value::Object(action) = action else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                action.py_type_name()
            ));
        };
        let cap = self.heal_cap();
        let mut live = rules::Live { state };
        let events = match action.get("kind").and_then(Value::as_str) {
            Some("play_card") => live.play_card(&pk, action, &cap)?,
            Some("attack") => live.attack(&pk, action)?,
            Some("end_turn") => live.end_turn(&pk, &cap)?,
            Some("concede") => live.concede(&pk)?,
            _ => return Err("unsupported Aether Sigil action".into()),
        };
        Ok(live.result(events))
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        let state = state
            .as_object()
            .ok_or("the table state is not an object")?;
        let pk = field(viewer, "public_key")?;
        let pk = pk.as_str().ok_or("viewer does not own a hand")?;
        let empty = Map::new();
        let deck_map = state
            .get("deck")
            .ok_or("'deck'")?
            .as_object()
            .unwrap_or(&empty);
        let seen = deck::private_view(deck_map, pk, &[])?;
        let zone = |name: &str| {
            seen.get("zones")
                .and_then(|z| z.get(name))
                .cloned()
                .unwrap_or(Value::Object(Map::new()))
        };
        let copy = |key: &str| state.get(key).cloned().ok_or_else(|| format!("'{key}'"));
        let from_deck = |key: &str| seen.get(key).cloned().unwrap_or(Value::Null);
        let mut v = Map::with_capacity(17);
        for key in [
            "phase",
            "restart_count",
            "recovery_notice",
            "turn_number",
            "turn_order",
            "current_player",
            "players",
        ] {
            v.insert(key, copy(key)?);
        }
        v.insert("units", zone("units"));
        v.insert("relics", zone("relics"));
        v.insert("unit_state", copy("unit_state")?);
        for key in ["draw_count", "discard", "hand_counts", "my_hand"] {
            v.insert(key, from_deck(key));
        }
        v.insert("winner", copy("winner")?);
        v.insert(
            "you",
            Value::Object(obj! { "public_key" => pk, "seat" => field(viewer, "seat")? }),
        );
        Ok(Value::Object(v))
    }

    fn recovery_snapshot(&mut self, state: &Value) -> Hooked<Value> {
        Ok(Value::Object(obj! {
            "restart_count" => field(state, "restart_count")?,
            "public_outcome" => field(state, "winner")?,
        }))
    }

    fn restore(&mut self, checkpoint: Value, members: &[Value], _epoch: u64) -> Hooked<Value> {
        let Value::Object(checkpoint) = checkpoint else {
            return Err(format!(
                "'{}' object has no attribute 'get'",
                checkpoint.py_type_name()
            ));
        };
        let restarts = match checkpoint.get("restart_count") {
            None => 0,
            Some(v) => py_int(v)?.ok_or("restart_count is out of range")?,
        };
        let restarts = restarts
            .checked_add(1)
            .ok_or("restart_count is out of range")?;
        let game = self.new_match(
            members,
            restarts,
            "The previous hidden deal was discarded after a Leader change.",
        )?;
        Ok(Value::Object(game.to_state()))
    }

    fn on_leader_changed(&mut self, state: Value, old: &str, new: &str) -> Hooked<Value> {
        leader_changed(
            state,
            (old, new),
            "a fresh shared deck was dealt",
            "match_restarted_after_leader_change",
            "restart_count",
        )
    }
}

impl Game {
    /// Reads a state this module wrote (a malformed one is refused; the
    /// hooks [`rules::check`] it the same way without reading it).
    #[cfg(test)]
    fn from_state(state: &Map) -> Hooked<Game> {
        let bad = |key: &str| format!("the table state has no valid {key}");
        let text = |key: &str| {
            state
                .get_str(key)
                .map(str::to_owned)
                .ok_or_else(|| bad(key))
        };
        let int = |key: &str| {
            state
                .get(key)
                .and_then(Value::as_i64)
                .ok_or_else(|| bad(key))
        };
        let turn_order = state
            .get("turn_order")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
            })
            .filter(|o| !o.is_empty())
            .ok_or_else(|| bad("turn_order"))?;
        let mut players = BTreeMap::new();
        for (pk, p) in state
            .get("players")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("players"))?
            .iter()
        {
            players.insert(
                pk.to_owned(),
                Player::read(p).ok_or_else(|| bad("players"))?,
            );
        }
        if turn_order.iter().any(|pk| !players.contains_key(pk)) {
            return Err(bad("turn_order"));
        }
        let mut unit_state = BTreeMap::new();
        for (id, u) in state
            .get("unit_state")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("unit_state"))?
            .iter()
        {
            unit_state.insert(
                id.to_owned(),
                UnitState::read(u).ok_or_else(|| bad("unit_state"))?,
            );
        }
        let deck = state
            .get("deck")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| bad("deck"))?;
        Ok(Game {
            phase: text("phase")?,
            restart_count: int("restart_count")?,
            recovery_notice: text("recovery_notice")?,
            turn_number: int("turn_number")?,
            current_player: text("current_player")?,
            turn_order,
            players,
            deck,
            unit_state,
            winner: text("winner")?,
        })
    }

    /// The state in the reference's shape.
    fn to_state(&self) -> Map {
        let mut players = Map::with_capacity(self.players.len());
        for pk in &self.turn_order {
            if let Some(p) = self.players.get(pk) {
                players.insert(pk.as_str(), Value::Object(p.write()));
            }
        }
        let mut units = Map::with_capacity(self.unit_state.len());
        for (id, u) in &self.unit_state {
            units.insert(id.as_str(), Value::Object(u.write()));
        }
        obj! {
            "phase" => self.phase.as_str(),
            "restart_count" => self.restart_count,
            "recovery_notice" => self.recovery_notice.as_str(),
            "turn_number" => self.turn_number,
            "turn_order" => Value::Array(self.turn_order.iter().map(|p| Value::from(p.as_str())).collect()),
            "current_player" => self.current_player.as_str(),
            "players" => players,
            "deck" => self.deck.clone(),
            "unit_state" => units,
            "winner" => self.winner.as_str(),
        }
    }
}

impl Player {
    fn read(v: &Value) -> Option<Player> {
        let n = |k: &str| v.get(k).and_then(Value::as_i64);
        Some(Player {
            seat: v.get("seat")?.clone(),
            life: n("life")?,
            shield: n("shield")?,
            energy: n("energy")?,
            max_energy: n("max_energy")?,
            fatigue: n("fatigue")?,
            defeated: v.get("defeated")?.as_bool()?,
        })
    }

    fn write(&self) -> Map {
        obj! {
            "seat" => self.seat.clone(),
            "life" => self.life,
            "shield" => self.shield,
            "energy" => self.energy,
            "max_energy" => self.max_energy,
            "fatigue" => self.fatigue,
            "defeated" => self.defeated,
        }
    }
}

impl UnitState {
    fn read(v: &Value) -> Option<UnitState> {
        Some(UnitState {
            damage: v.get("damage")?.as_i64()?,
            exhausted: v.get("exhausted")?.as_bool()?,
            power_bonus: v.get("power_bonus")?.as_i64()?,
        })
    }

    fn write(&self) -> Map {
        obj! { "damage" => self.damage, "exhausted" => self.exhausted, "power_bonus" => self.power_bonus }
    }
}

/// `obj[key]` of a member (or state) object, or Python's KeyError text.
fn field(v: &Value, key: &str) -> Hooked<Value> {
    v.get(key).cloned().ok_or_else(|| format!("'{key}'"))
}

/// Python's `int()` of an option or checkpoint value: `Ok(None)` when it is
/// a whole number beyond 64 bits (every range check refuses it), the
/// reference's exception text when `int()` would raise.
fn py_int(v: &Value) -> Hooked<Option<i64>> {
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            v.py_type_name()
        )),
        Value::Bool(b) => Ok(Some(i64::from(*b))),
        Value::Number(Number::Int(i)) => Ok(Some(*i)),
        Value::Number(Number::BigInt(_)) => Ok(None),
        Value::Number(Number::Float(f)) => {
            let t = f.trunc();
            Ok((t.abs() < 9.2e18).then_some(t as i64))
        }
        Value::String(s) => int_literal(s)
            .ok_or_else(|| format!("invalid literal for int() with base 10: {}", v.py_repr())),
    }
}

/// Python's `int(text)` in base 10: optional surrounding whitespace and
/// sign, ASCII digits with single underscores between them. `None` when it
/// is no such literal; `Some(None)` when it is one beyond 64 bits.
fn int_literal(s: &str) -> Option<Option<i64>> {
    let t = s.trim();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let b = digits.as_bytes();
    let well_formed = !b.is_empty()
        && b.first().is_some_and(u8::is_ascii_digit)
        && b.last().is_some_and(u8::is_ascii_digit)
        && b.iter().all(|c| c.is_ascii_digit() || *c == b'_')
        && !digits.contains("__");
    if !well_formed {
        return None;
    }
    let plain: String = digits.chars().filter(|c| *c != '_').collect();
    let n = plain
        .parse::<i64>()
        .ok()
        .map(|n| if negative { -n } else { n });
    Some(n)
}

/// The 18 faces, in the reference's order (their order and content fix
/// every card id).
fn faces() -> Vec<Map> {
    let unit = |name: &str, cost: i64, power: i64, guard: i64| {
        obj! { "name" => name, "card_type" => "unit", "cost" => cost, "power" => power, "guard" => guard }
    };
    let spell = |name: &str, cost: i64, effect: &str, amount: i64| {
        obj! { "name" => name, "card_type" => "spell", "cost" => cost, "effect" => effect, "amount" => amount }
    };
    let relic = |name: &str, cost: i64, effect: &str, amount: i64| {
        obj! { "name" => name, "card_type" => "relic", "cost" => cost, "effect" => effect, "amount" => amount }
    };
    vec![
        unit("Dawnling", 1, 2, 1),
        unit("Iron Finch", 1, 1, 2),
        unit("Glass Hound", 2, 3, 2),
        unit("Tide Scribe", 2, 2, 3),
        unit("Aether Guard", 3, 2, 5),
        unit("Void Lynx", 3, 4, 2),
        unit("Verdant Giant", 4, 4, 6),
        unit("Ember Drake", 5, 6, 4),
        spell("Cinder Shot", 1, "damage_player", 2),
        spell("Mending Rain", 2, "heal_self", 4),
        spell("Star Map", 2, "draw", 2),
        obj! { "name" => "Dissolve", "card_type" => "spell", "cost" => 3, "effect" => "destroy_unit", "max_power" => 3 },
        spell("Pulse Shield", 2, "shield_self", 4),
        spell("Rally Spark", 2, "ready_all", 0),
        relic("Sun Dial", 2, "end_heal", 1),
        relic("Prism Lens", 3, "spell_power", 1),
        relic("Living Forge", 3, "unit_power", 1),
        relic("Deep Reservoir", 2, "max_energy", 1),
    ]
}
