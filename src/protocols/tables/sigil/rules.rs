//! The actions of aether-sigil-v1 and the turn that follows them: each
//! changes a [`Game`] and returns its events, or refuses with the
//! reference's text (the caller then drops the changed copy).

use super::{Card, ENERGY_CAP, Game, Hooked, MAX_RELICS, MAX_UNITS, Player, UnitState};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::deck;

fn event(m: Map) -> Value {
    Value::Object(m)
}

impl Game {
    /// `play_card`: a unit onto the row, a relic into play, or a spell
    /// resolved and discarded; its cost is paid last.
    pub(super) fn play_card(
        &mut self,
        pk: &str,
        action: &Map,
        cap: &Hooked<i64>,
    ) -> Hooked<Vec<Value>> {
        let card = self.card_in_hand(pk, action.get("card_id"))?;
        if self.player(pk)?.energy < card.cost {
            return Err("not enough Aether".into());
        }
        let one = [card.id.clone()];
        let mut events = Vec::new();
        match card.card_type.as_str() {
            "unit" => {
                if self.zone("units", pk).len() >= MAX_UNITS {
                    return Err("the unit row is full".into());
                }
                deck::hand_to_zone(&mut self.deck, pk, "units", pk, &one)?;
                let power_bonus = self.relic_total(pk, "unit_power");
                self.unit_state.insert(
                    card.id.clone(),
                    UnitState {
                        damage: 0,
                        exhausted: true,
                        power_bonus,
                    },
                );
                events.push(event(obj! {
                    "kind" => "unit_summoned", "public_key" => pk, "card" => card.face.clone(),
                }));
            }
            "relic" => {
                if self.zone("relics", pk).len() >= MAX_RELICS {
                    return Err("the relic row is full".into());
                }
                deck::hand_to_zone(&mut self.deck, pk, "relics", pk, &one)?;
                if card.effect == "max_energy" {
                    let p = self.player_mut(pk)?;
                    p.max_energy = ENERGY_CAP.min(p.max_energy.saturating_add(card.amount));
                }
                events.push(event(obj! {
                    "kind" => "relic_played", "public_key" => pk, "card" => card.face.clone(),
                }));
            }
            "spell" => {
                events = self.resolve_spell(pk, action, &card, cap)?;
                deck::take_from_hand(&mut self.deck, pk, &one)?;
                deck::discard(&mut self.deck, &one)?;
                events.insert(
                    0,
                    event(obj! {
                        "kind" => "spell_cast", "public_key" => pk, "card" => card.face.clone(),
                    }),
                );
            }
            _ => return Err("unknown card type".into()),
        }
        let p = self.player_mut(pk)?;
        p.energy = p.energy.saturating_sub(card.cost);
        let mut winner = self.winner_if_finished();
        if winner.is_empty() && self.player(pk)?.defeated {
            // Felled by its own spell's fatigue: the turn passes on.
            events.extend(self.begin_viable_turn(pk)?);
            winner = self.winner_if_finished();
        }
        Ok(self.game_over_if(winner, events))
    }

    fn resolve_spell(
        &mut self,
        pk: &str,
        action: &Map,
        card: &Card,
        cap: &Hooked<i64>,
    ) -> Hooked<Vec<Value>> {
        let amount = card.amount;
        let events = match card.effect.as_str() {
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
                let p = self.player_mut(pk)?;
                let before = p.life;
                p.life = cap.min(before.saturating_add(amount));
                vec![event(obj! {
                    "kind" => "healed", "public_key" => pk, "amount" => p.life.saturating_sub(before),
                })]
            }
            "draw" => self.draw_or_fatigue(pk, amount)?,
            "destroy_unit" => {
                let (owner, target) = self.public_unit(action.get("target_card_id"))?;
                if owner == pk {
                    return Err("Dissolve must target an opposing unit".into());
                }
                let power = target
                    .power
                    .saturating_add(self.unit(&target.id)?.power_bonus);
                if power > card.max_power {
                    return Err("the target unit is too powerful for Dissolve".into());
                }
                self.destroy_unit(&owner, &target.id)?;
                vec![event(obj! {
                    "kind" => "unit_dissolved", "owner" => owner, "card_id" => target.id,
                })]
            }
            "shield_self" => {
                let p = self.player_mut(pk)?;
                p.shield = p.shield.saturating_add(amount);
                vec![event(obj! {
                    "kind" => "shield_gained", "public_key" => pk, "amount" => amount,
                })]
            }
            "ready_all" => {
                for id in self.zone("units", pk) {
                    self.unit_mut(&id)?.exhausted = false;
                }
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
        let units = self.zone("units", pk);
        let Some(unit_id) = action
            .get("unit_id")
            .and_then(Value::as_str)
            .filter(|id| units.iter().any(|u| u == id))
            .map(str::to_owned)
        else {
            return Err("unit_id is not controlled by this Member".into());
        };
        let mine = self.unit(&unit_id)?.clone();
        if mine.exhausted {
            return Err("this unit is exhausted".into());
        }
        let attacker = self.card(&unit_id)?;
        let attack_power = attacker.power.saturating_add(mine.power_bonus);
        let mut events = Vec::new();
        match action.get("target_card_id").filter(|t| t.truthy()) {
            Some(target) => {
                let (owner, defender) = self.public_unit(Some(target))?;
                if owner == pk {
                    return Err("a unit cannot attack an allied unit".into());
                }
                let theirs = self.unit_mut(&defender.id)?;
                let counter_power = defender.power.saturating_add(theirs.power_bonus);
                theirs.damage = theirs.damage.saturating_add(attack_power);
                let defender_falls = theirs.damage >= defender.guard;
                let mine = self.unit_mut(&unit_id)?;
                mine.damage = mine.damage.saturating_add(counter_power);
                let attacker_falls = mine.damage >= attacker.guard;
                events.push(event(obj! {
                    "kind" => "unit_combat", "attacker" => unit_id.as_str(), "defender" => defender.id.as_str(),
                    "attack_power" => attack_power, "counter_power" => counter_power,
                }));
                if defender_falls {
                    self.destroy_unit(&owner, &defender.id)?;
                    events.push(event(
                        obj! { "kind" => "unit_destroyed", "card_id" => defender.id.as_str() },
                    ));
                }
                if attacker_falls {
                    self.destroy_unit(pk, &unit_id)?;
                    events.push(event(
                        obj! { "kind" => "unit_destroyed", "card_id" => unit_id.as_str() },
                    ));
                } else {
                    self.unit_mut(&unit_id)?.exhausted = true;
                }
            }
            None => {
                let target = self.active_opponent(pk, action.get("target_public_key"))?;
                let dealt = self.damage_player(&target, attack_power)?;
                self.unit_mut(&unit_id)?.exhausted = true;
                events.push(event(obj! {
                    "kind" => "direct_attack", "attacker" => unit_id.as_str(), "target" => target, "amount" => dealt,
                }));
            }
        }
        let winner = self.winner_if_finished();
        Ok(self.game_over_if(winner, events))
    }

    /// `end_turn`: the actor's Sun Dials heal it, and the next channeler
    /// still standing begins its turn.
    pub(super) fn end_turn(&mut self, pk: &str, cap: &Hooked<i64>) -> Hooked<Vec<Value>> {
        let healing = self.relic_total(pk, "end_heal");
        let mut events = Vec::new();
        if healing != 0 {
            let cap = cap.clone()?;
            let p = self.player_mut(pk)?;
            let before = p.life;
            p.life = cap.min(before.saturating_add(healing));
            events.push(event(obj! {
                "kind" => "relic_heal", "public_key" => pk, "amount" => p.life.saturating_sub(before),
            }));
        }
        self.turn_number = self.turn_number.saturating_add(1);
        events.extend(self.begin_viable_turn(pk)?);
        let winner = self.winner_if_finished();
        Ok(self.game_over_if(winner, events))
    }

    /// `concede`: the actor is out at once (life 0).
    pub(super) fn concede(&mut self, pk: &str) -> Hooked<Vec<Value>> {
        let p = self.player_mut(pk)?;
        p.defeated = true;
        p.life = 0;
        let mut events = vec![event(obj! { "kind" => "conceded", "public_key" => pk })];
        let winner = self.winner_if_finished();
        if !winner.is_empty() {
            return Ok(self.game_over_if(winner, events));
        }
        events.extend(self.begin_viable_turn(pk)?);
        Ok(events)
    }

    fn game_over_if(&self, winner: String, mut events: Vec<Value>) -> Vec<Value> {
        if !winner.is_empty() {
            events.push(event(obj! { "kind" => "game_over", "winner" => winner }));
        }
        events
    }

    /// Turns begin after `after` until one falls to someone still standing
    /// (a seat felled by fatigue as its turn begins passes it on), or the
    /// match is won.
    pub(super) fn begin_viable_turn(&mut self, after: &str) -> Hooked<Vec<Value>> {
        let mut events = Vec::new();
        let mut candidate = self.next_active(after)?;
        for _ in 0..self.turn_order.len() {
            self.current_player = candidate.clone();
            events.extend(self.begin_turn(&candidate)?);
            if !self.player(&candidate)?.defeated || !self.winner_if_finished().is_empty() {
                return Ok(events);
            }
            candidate = self.next_active(&candidate)?;
        }
        Ok(events)
    }

    fn begin_turn(&mut self, pk: &str) -> Hooked<Vec<Value>> {
        let p = self.player_mut(pk)?;
        p.max_energy = ENERGY_CAP.min(p.max_energy.saturating_add(1));
        p.energy = p.max_energy;
        for id in self.zone("units", pk) {
            self.unit_mut(&id)?.exhausted = false;
        }
        let mut events = vec![event(obj! { "kind" => "turn_started", "public_key" => pk })];
        events.extend(self.draw_or_fatigue(pk, 1)?);
        Ok(events)
    }

    /// Draws `count` cards one by one; each missing card deals one more
    /// fatigue than the last.
    fn draw_or_fatigue(&mut self, pk: &str, count: i64) -> Hooked<Vec<Value>> {
        let mut events = Vec::new();
        for _ in 0..count.max(0) {
            let pile = self
                .deck
                .get("draw_pile")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if pile > 0 {
                deck::draw(&mut self.deck, pk, 1)?;
                events.push(event(obj! { "kind" => "card_drawn", "public_key" => pk }));
            } else {
                let p = self.player_mut(pk)?;
                p.fatigue = p.fatigue.saturating_add(1);
                let fatigue = p.fatigue;
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
        let p = self.player_mut(pk)?;
        let absorbed = p.shield.min(amount);
        p.shield = p.shield.saturating_sub(absorbed);
        let damage = amount.saturating_sub(absorbed);
        p.life = p.life.saturating_sub(damage).max(0);
        if p.life == 0 {
            p.defeated = true;
        }
        Ok(damage)
    }

    /// With one channeler left, the match is complete and it is the winner
    /// (returned; empty while the match goes on).
    fn winner_if_finished(&mut self) -> String {
        let standing: Vec<&String> = self
            .turn_order
            .iter()
            .filter(|pk| self.players.get(*pk).is_some_and(|p| !p.defeated))
            .collect();
        match standing.as_slice() {
            [one] => {
                let one = (*one).clone();
                self.phase = "completed".into();
                self.winner = one.clone();
                one
            }
            _ => String::new(),
        }
    }

    /// The next seat after `pk` in turn order that is still standing.
    fn next_active(&self, pk: &str) -> Hooked<String> {
        let order = &self.turn_order;
        let at = order
            .iter()
            .position(|p| p == pk)
            .ok_or_else(|| format!("{} is not in list", Value::from(pk).py_repr()))?;
        (1..=order.len())
            .map(|offset| &order[(at + offset) % order.len()])
            .find(|p| self.players.get(*p).is_some_and(|p| !p.defeated))
            .cloned()
            .ok_or_else(|| "no active Member remains".into())
    }

    fn active_opponent(&self, actor: &str, target: Option<&Value>) -> Hooked<String> {
        match target.and_then(Value::as_str) {
            Some(t) if t != actor && self.players.get(t).is_some_and(|p| !p.defeated) => {
                Ok(t.to_owned())
            }
            _ => Err("target_public_key must identify an active opponent".into()),
        }
    }

    fn card_in_hand(&self, pk: &str, id: Option<&Value>) -> Hooked<Card> {
        let Some(id) = id.and_then(Value::as_str) else {
            return Err("card_id must be text".into());
        };
        if !deck::hand(&self.deck, pk).iter().any(|h| h == id) {
            return Err("card is not in this Member's hand".into());
        }
        self.card(id)
    }

    /// A unit on any row: its owner and card.
    fn public_unit(&self, id: Option<&Value>) -> Hooked<(String, Card)> {
        let Some(id) = id.and_then(Value::as_str) else {
            return Err("target_card_id must be text".into());
        };
        let owners = self
            .deck
            .get("zones")
            .and_then(|z| z.get("units"))
            .and_then(Value::as_object);
        for (owner, cards) in owners.into_iter().flat_map(Map::iter) {
            let held = cards
                .as_array()
                .is_some_and(|a| a.iter().any(|c| c.as_str() == Some(id)));
            if held {
                return Ok((owner.to_owned(), self.card(id)?));
            }
        }
        Err("target unit does not exist".into())
    }

    fn destroy_unit(&mut self, owner: &str, id: &str) -> Hooked<()> {
        deck::zone_to_discard(&mut self.deck, "units", owner, id)?;
        self.unit_state.remove(id);
        Ok(())
    }

    /// The sum of `amount` over `pk`'s relics with `effect`.
    fn relic_total(&self, pk: &str, effect: &str) -> i64 {
        self.zone("relics", pk)
            .iter()
            .filter_map(|id| deck::card(&self.deck, id))
            .map(|face| Card::from_face(&face))
            .filter(|c| c.effect == effect)
            .fold(0i64, |sum, c| sum.saturating_add(c.amount))
    }

    /// The ids under `owner` in a zone of the deck (none when absent).
    pub(super) fn zone(&self, zone: &str, owner: &str) -> Vec<String> {
        self.deck
            .get("zones")
            .and_then(|z| z.get(zone))
            .and_then(|o| o.get(owner))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn card(&self, id: &str) -> Hooked<Card> {
        deck::card(&self.deck, id)
            .map(|face| Card::from_face(&face))
            .ok_or_else(|| format!("'{id}'"))
    }

    fn player(&self, pk: &str) -> Hooked<&Player> {
        self.players.get(pk).ok_or_else(|| format!("'{pk}'"))
    }

    fn player_mut(&mut self, pk: &str) -> Hooked<&mut Player> {
        self.players.get_mut(pk).ok_or_else(|| format!("'{pk}'"))
    }

    fn unit(&self, id: &str) -> Hooked<&UnitState> {
        self.unit_state.get(id).ok_or_else(|| format!("'{id}'"))
    }

    fn unit_mut(&mut self, id: &str) -> Hooked<&mut UnitState> {
        self.unit_state.get_mut(id).ok_or_else(|| format!("'{id}'"))
    }
}
