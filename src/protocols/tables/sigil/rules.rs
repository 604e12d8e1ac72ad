//! The actions of aether-sigil-v1 and the turn that follows them, worked on
//! the state's own map ([`Live`]): each changes only the members it must
//! (the map shares the rest with the caller's copy) and returns its events,
//! or refuses with the reference's text (the caller then drops the changed
//! copy).

use super::{ENERGY_CAP, Hooked, MAX_RELICS, MAX_UNITS, Player, UnitState};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::deck;

fn event(m: Map) -> Value {
    Value::Object(m)
}

/// A card's catalog entry as the rules read it (absent numbers are 0; a
/// type or effect the rules do not know reads as "").
struct Stats {
    kind: &'static str,
    effect: &'static str,
    cost: i64,
    power: i64,
    guard: i64,
    amount: i64,
    max_power: i64,
    /// The catalog entry itself, as events show it (shared, not copied).
    face: Map,
}

const KINDS: [&str; 3] = ["unit", "relic", "spell"];
const EFFECTS: [&str; 10] = [
    "damage_player",
    "heal_self",
    "draw",
    "destroy_unit",
    "shield_self",
    "ready_all",
    "end_heal",
    "spell_power",
    "unit_power",
    "max_energy",
];

fn known(s: Option<&str>, among: &[&'static str]) -> &'static str {
    among.iter().copied().find(|k| Some(*k) == s).unwrap_or("")
}

impl Stats {
    fn of(face: &Map) -> Stats {
        let n = |k: &str| face.get(k).and_then(Value::as_i64).unwrap_or(0);
        Stats {
            kind: known(face.get_str("card_type"), &KINDS),
            effect: known(face.get_str("effect"), &EFFECTS),
            cost: n("cost"),
            power: n("power"),
            guard: n("guard"),
            amount: n("amount"),
            max_power: n("max_power"),
            face: face.clone(),
        }
    }
}

/// A state [`check`]ed by the hooks, changed in place by an action.
pub(super) struct Live {
    pub(super) state: Map,
}

/// Refuses a state this module could not have written, with the texts
/// (and in the order) reading it into a [`super::Game`] would.
pub(super) fn check(state: &Map) -> Hooked<()> {
    let bad = |key: &str| format!("the table state has no valid {key}");
    let order = state
        .get("turn_order")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty() && o.iter().all(|v| v.as_str().is_some()))
        .ok_or_else(|| bad("turn_order"))?;
    let players = state
        .get("players")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("players"))?;
    if !players.values().all(|p| Player::read(p).is_some()) {
        return Err(bad("players"));
    }
    if order
        .iter()
        .any(|pk| !players.contains_key(pk.as_str().unwrap_or_default()))
    {
        return Err(bad("turn_order"));
    }
    let units = state
        .get("unit_state")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("unit_state"))?;
    if !units.values().all(|u| UnitState::read(u).is_some()) {
        return Err(bad("unit_state"));
    }
    if state.get("deck").and_then(Value::as_object).is_none() {
        return Err(bad("deck"));
    }
    for (key, text) in [
        ("phase", true),
        ("restart_count", false),
        ("recovery_notice", true),
        ("turn_number", false),
        ("current_player", true),
        ("winner", true),
    ] {
        let v = state.get(key);
        let fits = if text {
            v.and_then(Value::as_str).is_some()
        } else {
            v.and_then(Value::as_i64).is_some()
        };
        if !fits {
            return Err(bad(key));
        }
    }
    Ok(())
}

impl Live {
    /// The hook result after an accepted action: completed, with the
    /// winner as outcome, once one channeler is left.
    pub(super) fn result(self, events: Vec<Value>) -> Value {
        let done = self.text("phase") == "completed";
        let winner = self.text("winner").to_owned();
        match super::hook_result(self.state, events) {
            Value::Object(mut m) if done => {
                m.insert("completed", Value::Bool(true));
                m.insert("outcome", Value::from(winner));
                Value::Object(m)
            }
            other => other,
        }
    }

    fn text(&self, key: &str) -> &str {
        self.state.get_str(key).unwrap_or_default()
    }

    /// `play_card`: a unit onto the row, a relic into play, or a spell
    /// resolved and discarded; its cost is paid last.
    pub(super) fn play_card(
        &mut self,
        pk: &str,
        action: &Map,
        cap: &Hooked<i64>,
    ) -> Hooked<Vec<Value>> {
        let (id, card) = self.card_in_hand(pk, action.get("card_id"))?;
        if self.player(pk)?.energy < card.cost {
            return Err("not enough Aether".into());
        }
        let one = [id];
        let mut events = Vec::new();
        match card.kind {
            "unit" => {
                if self.zone("units", pk).len() >= MAX_UNITS {
                    return Err("the unit row is full".into());
                }
                deck::hand_to_zone(self.deck_mut()?, pk, "units", pk, &one)?;
                let power_bonus = self.relic_total(pk, "unit_power");
                self.insert_unit(
                    &one[0],
                    UnitState {
                        damage: 0,
                        exhausted: true,
                        power_bonus,
                    },
                )?;
                events.push(event(obj! {
                    "kind" => "unit_summoned", "public_key" => pk, "card" => card.face,
                }));
            }
            "relic" => {
                if self.zone("relics", pk).len() >= MAX_RELICS {
                    return Err("the relic row is full".into());
                }
                deck::hand_to_zone(self.deck_mut()?, pk, "relics", pk, &one)?;
                if card.effect == "max_energy" {
                    self.update_player(pk, |p| {
                        p.max_energy = ENERGY_CAP.min(p.max_energy.saturating_add(card.amount));
                    })?;
                }
                events.push(event(obj! {
                    "kind" => "relic_played", "public_key" => pk, "card" => card.face,
                }));
            }
            "spell" => {
                events = self.resolve_spell(pk, action, &card, cap)?;
                deck::take_from_hand(self.deck_mut()?, pk, &one)?;
                deck::discard(self.deck_mut()?, &one)?;
                events.insert(
                    0,
                    event(obj! {
                        "kind" => "spell_cast", "public_key" => pk, "card" => card.face,
                    }),
                );
            }
            _ => return Err("unknown card type".into()),
        }
        self.update_player(pk, |p| p.energy = p.energy.saturating_sub(card.cost))?;
        let mut winner = self.winner_if_finished();
        if winner.is_empty() && self.player(pk)?.defeated {
            // Felled by its own spell's fatigue: the turn passes on.
            events.extend(self.begin_viable_turn(pk)?);
            winner = self.winner_if_finished();
        }
        Ok(game_over_if(winner, events))
    }

    fn resolve_spell(
        &mut self,
        pk: &str,
        action: &Map,
        card: &Stats,
        cap: &Hooked<i64>,
    ) -> Hooked<Vec<Value>> {
        let amount = card.amount;
        let events = match card.effect {
            "damage_player" => {
                let target = self.active_opponent(pk, action.get("target_public_key"))?;
                let amount = amount.saturating_add(self.relic_total(pk, "spell_power"));
                let dealt = self.damage_player(&target, amount)?;
                vec![event(obj! {
                    "kind" => "spell_damage", "target" => target, "amount" => dealt,
                })]
            }
            "heal_self" => {
                let cap = cap.clone()?;
                let healed = self.update_player(pk, |p| {
                    let before = p.life;
                    p.life = cap.min(before.saturating_add(amount));
                    p.life.saturating_sub(before)
                })?;
                vec![event(obj! {
                    "kind" => "healed", "public_key" => pk, "amount" => healed,
                })]
            }
            "draw" => self.draw_or_fatigue(pk, amount)?,
            "destroy_unit" => {
                let (owner, id, target) = self.public_unit(action.get("target_card_id"))?;
                if owner == pk {
                    return Err("Dissolve must target an opposing unit".into());
                }
                let power = target.power.saturating_add(self.unit(&id)?.power_bonus);
                if power > card.max_power {
                    return Err("the target unit is too powerful for Dissolve".into());
                }
                self.destroy_unit(&owner, &id)?;
                vec![event(obj! {
                    "kind" => "unit_dissolved", "owner" => owner, "card_id" => id,
                })]
            }
            "shield_self" => {
                self.update_player(pk, |p| p.shield = p.shield.saturating_add(amount))?;
                vec![event(obj! {
                    "kind" => "shield_gained", "public_key" => pk, "amount" => amount,
                })]
            }
            "ready_all" => {
                self.ready_units(pk)?;
                vec![event(
                    obj! { "kind" => "units_readied", "public_key" => pk },
                )]
            }
            _ => return Err("unknown spell effect".into()),
        };
        Ok(events)
    }

    /// `attack`: a ready unit of the actor's row against another seat's
    /// unit (`target_card_id`, when truthy) or an active opponent
    /// (`target_public_key`).
    pub(super) fn attack(&mut self, pk: &str, action: &Map) -> Hooked<Vec<Value>> {
        let Some(unit_id) = action
            .get("unit_id")
            .and_then(Value::as_str)
            .filter(|id| {
                self.zone("units", pk)
                    .iter()
                    .any(|u| u.as_str() == Some(id))
            })
            .map(str::to_owned)
        else {
            return Err("unit_id is not controlled by this Member".into());
        };
        let mine = self.unit(&unit_id)?;
        if mine.exhausted {
            return Err("this unit is exhausted".into());
        }
        let attacker = self.card(&unit_id)?;
        let attack_power = attacker.power.saturating_add(mine.power_bonus);
        let mut events = Vec::new();
        match action.get("target_card_id").filter(|t| t.truthy()) {
            Some(target) => {
                let (owner, defender_id, defender) = self.public_unit(Some(target))?;
                if owner == pk {
                    return Err("a unit cannot attack an allied unit".into());
                }
                let (counter_power, defender_falls) = self.update_unit(&defender_id, |u| {
                    u.damage = u.damage.saturating_add(attack_power);
                    (
                        defender.power.saturating_add(u.power_bonus),
                        u.damage >= defender.guard,
                    )
                })?;
                let attacker_falls = self.update_unit(&unit_id, |u| {
                    u.damage = u.damage.saturating_add(counter_power);
                    u.damage >= attacker.guard
                })?;
                events.push(event(obj! {
                    "kind" => "unit_combat", "attacker" => unit_id.as_str(), "defender" => defender_id.as_str(),
                    "attack_power" => attack_power, "counter_power" => counter_power,
                }));
                if defender_falls {
                    self.destroy_unit(&owner, &defender_id)?;
                    events.push(event(
                        obj! { "kind" => "unit_destroyed", "card_id" => defender_id.as_str() },
                    ));
                }
                if attacker_falls {
                    self.destroy_unit(pk, &unit_id)?;
                    events.push(event(
                        obj! { "kind" => "unit_destroyed", "card_id" => unit_id.as_str() },
                    ));
                } else {
                    self.update_unit(&unit_id, |u| u.exhausted = true)?;
                }
            }
            None => {
                let target = self.active_opponent(pk, action.get("target_public_key"))?;
                let dealt = self.damage_player(&target, attack_power)?;
                self.update_unit(&unit_id, |u| u.exhausted = true)?;
                events.push(event(obj! {
                    "kind" => "direct_attack", "attacker" => unit_id.as_str(), "target" => target, "amount" => dealt,
                }));
            }
        }
        let winner = self.winner_if_finished();
        Ok(game_over_if(winner, events))
    }

    /// `end_turn`: the actor's Sun Dials heal it, and the next channeler
    /// still standing begins its turn.
    pub(super) fn end_turn(&mut self, pk: &str, cap: &Hooked<i64>) -> Hooked<Vec<Value>> {
        let healing = self.relic_total(pk, "end_heal");
        let mut events = Vec::new();
        if healing != 0 {
            let cap = cap.clone()?;
            let healed = self.update_player(pk, |p| {
                let before = p.life;
                p.life = cap.min(before.saturating_add(healing));
                p.life.saturating_sub(before)
            })?;
            events.push(event(obj! {
                "kind" => "relic_heal", "public_key" => pk, "amount" => healed,
            }));
        }
        let turn = self
            .state
            .get("turn_number")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        self.state
            .insert("turn_number", Value::from(turn.saturating_add(1)));
        events.extend(self.begin_viable_turn(pk)?);
        let winner = self.winner_if_finished();
        Ok(game_over_if(winner, events))
    }

    /// `concede`: the actor is out at once (life 0).
    pub(super) fn concede(&mut self, pk: &str) -> Hooked<Vec<Value>> {
        self.update_player(pk, |p| {
            p.defeated = true;
            p.life = 0;
        })?;
        let mut events = vec![event(obj! { "kind" => "conceded", "public_key" => pk })];
        let winner = self.winner_if_finished();
        if !winner.is_empty() {
            return Ok(game_over_if(winner, events));
        }
        events.extend(self.begin_viable_turn(pk)?);
        Ok(events)
    }

    /// Turns begin after `after` until one falls to someone still standing
    /// (a seat felled by fatigue as its turn begins passes it on), or the
    /// match is won.
    fn begin_viable_turn(&mut self, after: &str) -> Hooked<Vec<Value>> {
        let mut events = Vec::new();
        let mut candidate = self.next_active(after)?;
        for _ in 0..self.order().len() {
            self.state
                .insert("current_player", Value::from(candidate.as_str()));
            events.extend(self.begin_turn(&candidate)?);
            if !self.player(&candidate)?.defeated || !self.winner_if_finished().is_empty() {
                return Ok(events);
            }
            candidate = self.next_active(&candidate)?;
        }
        Ok(events)
    }

    fn begin_turn(&mut self, pk: &str) -> Hooked<Vec<Value>> {
        self.update_player(pk, |p| {
            p.max_energy = ENERGY_CAP.min(p.max_energy.saturating_add(1));
            p.energy = p.max_energy;
        })?;
        self.ready_units(pk)?;
        let mut events = vec![event(obj! { "kind" => "turn_started", "public_key" => pk })];
        events.extend(self.draw_or_fatigue(pk, 1)?);
        Ok(events)
    }

    /// Every unit on `pk`'s row may attack again.
    fn ready_units(&mut self, pk: &str) -> Hooked<()> {
        let ids: Vec<String> = self
            .zone("units", pk)
            .iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect();
        for id in ids {
            self.update_unit(&id, |u| u.exhausted = false)?;
        }
        Ok(())
    }

    /// Draws `count` cards one by one; each missing card deals one more
    /// fatigue than the last.
    fn draw_or_fatigue(&mut self, pk: &str, count: i64) -> Hooked<Vec<Value>> {
        let mut events = Vec::new();
        for _ in 0..count.max(0) {
            let pile = self
                .deck()
                .get("draw_pile")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if pile > 0 {
                deck::draw(self.deck_mut()?, pk, 1)?;
                events.push(event(obj! { "kind" => "card_drawn", "public_key" => pk }));
            } else {
                let fatigue = self.update_player(pk, |p| {
                    p.fatigue = p.fatigue.saturating_add(1);
                    p.fatigue
                })?;
                let dealt = self.damage_player(pk, fatigue)?;
                events.push(event(
                    obj! { "kind" => "fatigue", "public_key" => pk, "amount" => dealt },
                ));
            }
        }
        Ok(events)
    }

    /// Shield absorbs first; the rest comes off life (not below 0, which
    /// fells the channeler). The damage that got through.
    fn damage_player(&mut self, pk: &str, amount: i64) -> Hooked<i64> {
        self.update_player(pk, |p| {
            let absorbed = p.shield.min(amount);
            p.shield = p.shield.saturating_sub(absorbed);
            let damage = amount.saturating_sub(absorbed);
            p.life = p.life.saturating_sub(damage).max(0);
            if p.life == 0 {
                p.defeated = true;
            }
            damage
        })
    }

    /// Is `pk` seated and still standing?
    fn standing(&self, pk: &str) -> bool {
        self.players()
            .get(pk)
            .and_then(|p| p.get("defeated"))
            .and_then(Value::as_bool)
            == Some(false)
    }

    /// With one channeler left, the match is complete and it is the winner
    /// (returned; empty while the match goes on).
    fn winner_if_finished(&mut self) -> String {
        let mut standing = self
            .order()
            .iter()
            .filter_map(Value::as_str)
            .filter(|pk| self.standing(pk));
        let (Some(one), None) = (standing.next(), standing.next()) else {
            return String::new();
        };
        let one = one.to_owned();
        self.state.insert("phase", Value::from("completed"));
        self.state.insert("winner", Value::from(one.as_str()));
        one
    }

    /// The next seat after `pk` in turn order that is still standing.
    fn next_active(&self, pk: &str) -> Hooked<String> {
        let order = self.order();
        let at = order
            .iter()
            .position(|p| p.as_str() == Some(pk))
            .ok_or_else(|| format!("{} is not in list", Value::from(pk).py_repr()))?;
        (1..=order.len())
            .filter_map(|offset| order[(at + offset) % order.len()].as_str())
            .find(|p| self.standing(p))
            .map(str::to_owned)
            .ok_or_else(|| "no active Member remains".into())
    }

    fn active_opponent(&self, actor: &str, target: Option<&Value>) -> Hooked<String> {
        match target.and_then(Value::as_str) {
            Some(t) if t != actor && self.standing(t) => Ok(t.to_owned()),
            _ => Err("target_public_key must identify an active opponent".into()),
        }
    }

    fn card_in_hand(&self, pk: &str, id: Option<&Value>) -> Hooked<(String, Stats)> {
        let Some(id) = id.and_then(Value::as_str) else {
            return Err("card_id must be text".into());
        };
        let held = self
            .deck()
            .get("hands")
            .and_then(|h| h.get(pk))
            .and_then(Value::as_array)
            .is_some_and(|h| h.iter().any(|c| c.as_str() == Some(id)));
        if !held {
            return Err("card is not in this Member's hand".into());
        }
        Ok((id.to_owned(), self.card(id)?))
    }

    /// A unit on any row: its owner, id and card.
    fn public_unit(&self, id: Option<&Value>) -> Hooked<(String, String, Stats)> {
        let Some(id) = id.and_then(Value::as_str) else {
            return Err("target_card_id must be text".into());
        };
        let owners = self
            .deck()
            .get("zones")
            .and_then(|z| z.get("units"))
            .and_then(Value::as_object);
        for (owner, cards) in owners.into_iter().flat_map(Map::iter) {
            let held = cards
                .as_array()
                .is_some_and(|a| a.iter().any(|c| c.as_str() == Some(id)));
            if held {
                return Ok((owner.to_owned(), id.to_owned(), self.card(id)?));
            }
        }
        Err("target unit does not exist".into())
    }

    fn destroy_unit(&mut self, owner: &str, id: &str) -> Hooked<()> {
        deck::zone_to_discard(self.deck_mut()?, "units", owner, id)?;
        if let Some(units) = self
            .state
            .get_mut("unit_state")
            .and_then(Value::as_object_mut)
        {
            units.remove(id);
        }
        Ok(())
    }

    /// The sum of `amount` over `pk`'s relics with `effect`.
    fn relic_total(&self, pk: &str, effect: &str) -> i64 {
        let catalog = self.deck().get("catalog");
        self.zone("relics", pk)
            .iter()
            .filter_map(|id| catalog?.get(id.as_str()?)?.as_object())
            .filter(|face| face.get_str("effect") == Some(effect))
            .fold(0i64, |sum, face| {
                sum.saturating_add(face.get("amount").and_then(Value::as_i64).unwrap_or(0))
            })
    }

    /// The ids under `owner` in a zone of the deck (none when absent).
    fn zone(&self, zone: &str, owner: &str) -> &[Value] {
        self.deck()
            .get("zones")
            .and_then(|z| z.get(zone))
            .and_then(|o| o.get(owner))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn card(&self, id: &str) -> Hooked<Stats> {
        self.deck()
            .get("catalog")
            .and_then(|c| c.get(id))
            .and_then(Value::as_object)
            .map(Stats::of)
            .ok_or_else(|| format!("'{id}'"))
    }

    fn order(&self) -> &[Value] {
        self.state
            .get("turn_order")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn players(&self) -> &Map {
        static EMPTY: std::sync::LazyLock<Map> = std::sync::LazyLock::new(Map::new);
        self.state
            .get("players")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY)
    }

    fn deck(&self) -> &Map {
        static EMPTY: std::sync::LazyLock<Map> = std::sync::LazyLock::new(Map::new);
        self.state
            .get("deck")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY)
    }

    fn deck_mut(&mut self) -> Hooked<&mut Map> {
        self.state
            .get_mut("deck")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| "'deck'".into())
    }

    fn player(&self, pk: &str) -> Hooked<Player> {
        self.players()
            .get(pk)
            .and_then(Player::read)
            .ok_or_else(|| format!("'{pk}'"))
    }

    /// Changes `pk`'s channeler; only the members that changed are written
    /// back (an unchanged channeler stays shared).
    fn update_player<R>(&mut self, pk: &str, f: impl FnOnce(&mut Player) -> R) -> Hooked<R> {
        let was = self.player(pk)?;
        let mut now = was.clone();
        let out = f(&mut now);
        if now != was {
            let Some(Value::Object(p)) = self
                .state
                .get_mut("players")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.get_mut(pk))
            else {
                return Err(format!("'{pk}'"));
            };
            now.write_changes(&was, p);
        }
        Ok(out)
    }

    fn unit(&self, id: &str) -> Hooked<UnitState> {
        self.state
            .get("unit_state")
            .and_then(|u| u.get(id))
            .and_then(UnitState::read)
            .ok_or_else(|| format!("'{id}'"))
    }

    /// Changes a unit's state; written back only when it changed.
    fn update_unit<R>(&mut self, id: &str, f: impl FnOnce(&mut UnitState) -> R) -> Hooked<R> {
        let was = self.unit(id)?;
        let mut now = was.clone();
        let out = f(&mut now);
        if now != was {
            let Some(Value::Object(u)) = self
                .state
                .get_mut("unit_state")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.get_mut(id))
            else {
                return Err(format!("'{id}'"));
            };
            now.write_changes(&was, u);
        }
        Ok(out)
    }

    /// A new unit's state, kept in id order as the state has it.
    fn insert_unit(&mut self, id: &str, unit: UnitState) -> Hooked<()> {
        let Some(units) = self
            .state
            .get_mut("unit_state")
            .and_then(Value::as_object_mut)
        else {
            return Err("'unit_state'".into());
        };
        let value = Value::Object(unit.write());
        if units.contains_key(id) || units.keys().all(|k| k < id) {
            units.insert(id, value);
            return Ok(());
        }
        let mut sorted = Map::with_capacity(units.len() + 1);
        let mut pending = Some(value);
        for (k, v) in units.iter() {
            if k > id
                && let Some(value) = pending.take()
            {
                sorted.push_new(id, value);
            }
            sorted.push_new(k, v.clone());
        }
        *units = sorted;
        Ok(())
    }
}

fn game_over_if(winner: String, mut events: Vec<Value>) -> Vec<Value> {
    if !winner.is_empty() {
        events.push(event(obj! { "kind" => "game_over", "winner" => winner }));
    }
    events
}

impl Player {
    /// Writes the members that differ from `was` into `p`.
    fn write_changes(&self, was: &Player, p: &mut Map) {
        let ints = [
            ("life", self.life, was.life),
            ("shield", self.shield, was.shield),
            ("energy", self.energy, was.energy),
            ("max_energy", self.max_energy, was.max_energy),
            ("fatigue", self.fatigue, was.fatigue),
        ];
        for (key, now, before) in ints {
            if now != before {
                p.insert(key, Value::from(now));
            }
        }
        if self.defeated != was.defeated {
            p.insert("defeated", Value::Bool(self.defeated));
        }
    }
}

impl UnitState {
    /// Writes the members that differ from `was` into `u`.
    fn write_changes(&self, was: &UnitState, u: &mut Map) {
        if self.damage != was.damage {
            u.insert("damage", Value::from(self.damage));
        }
        if self.exhausted != was.exhausted {
            u.insert("exhausted", Value::Bool(self.exhausted));
        }
        if self.power_bonus != was.power_bonus {
            u.insert("power_bonus", Value::from(self.power_bonus));
        }
    }
}
