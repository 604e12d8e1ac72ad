//! What a seat of aether-sigil-v1 may do, read from its own view: every
//! legal action now, and a greedy bot that takes a lethal line when it has
//! one and otherwise the play worth most (ending its turn when nothing is
//! worth doing).

use super::{Card, ENERGY_CAP, MAX_RELICS, MAX_UNITS, Sigil, py_int};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::Table;

/// A channeler as a view shows it.
#[derive(Debug, Clone)]
struct Seat {
    pk: String,
    life: i64,
    shield: i64,
    energy: i64,
    max_energy: i64,
    defeated: bool,
}

impl Seat {
    /// Damage it takes to fell this channeler.
    fn toughness(&self) -> i64 {
        self.life.saturating_add(self.shield)
    }
}

/// A unit on a row as a view shows it.
#[derive(Debug, Clone)]
struct Unit {
    owner: String,
    card: Card,
    damage: i64,
    exhausted: bool,
    bonus: i64,
}

impl Unit {
    fn power(&self) -> i64 {
        self.card.power.saturating_add(self.bonus)
    }

    /// Guard left before it falls.
    fn left(&self) -> i64 {
        self.card.guard.saturating_sub(self.damage)
    }

    /// A rough worth of having it on a row.
    fn worth(&self) -> i64 {
        self.power().saturating_mul(2).saturating_add(self.left())
    }
}

/// What the viewer knows on its turn.
#[derive(Debug, Clone)]
struct Seen {
    me: String,
    hand: Vec<Card>,
    /// Every channeler in turn order.
    seats: Vec<Seat>,
    units: Vec<Unit>,
    relics: Vec<(String, Card)>,
    draw_count: i64,
}

impl Seen {
    /// The view's facts when it is the viewer's turn in a match going on.
    fn read(view: &Value) -> Option<Seen> {
        let me = view.get("you")?.get_str("public_key")?.to_owned();
        if view.get_str("phase") != Some("playing") || view.get_str("current_player") != Some(&me) {
            return None;
        }
        let cards = |v: Option<&Value>| -> Vec<Card> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_object)
                        .map(Card::from_face)
                        .filter(|c| !c.id.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let players = view.get("players").and_then(Value::as_object)?;
        let seats = view
            .get("turn_order")
            .and_then(Value::as_array)?
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|pk| {
                let p = players.get(pk)?;
                let n = |k: &str| p.get(k).and_then(Value::as_i64).unwrap_or(0);
                Some(Seat {
                    pk: pk.to_owned(),
                    life: n("life"),
                    shield: n("shield"),
                    energy: n("energy"),
                    max_energy: n("max_energy"),
                    defeated: p.get("defeated").and_then(Value::as_bool).unwrap_or(true),
                })
            })
            .collect();
        let states = view.get("unit_state").and_then(Value::as_object);
        let mut units = Vec::new();
        for (owner, row) in view
            .get("units")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::iter)
        {
            for card in cards(Some(row)) {
                let Some(s) = states.and_then(|s| s.get(&card.id)) else {
                    continue;
                };
                units.push(Unit {
                    owner: owner.to_owned(),
                    damage: s.get("damage").and_then(Value::as_i64).unwrap_or(0),
                    exhausted: s.get("exhausted").and_then(Value::as_bool).unwrap_or(true),
                    bonus: s.get("power_bonus").and_then(Value::as_i64).unwrap_or(0),
                    card,
                });
            }
        }
        let mut relics = Vec::new();
        for (owner, row) in view
            .get("relics")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::iter)
        {
            relics.extend(cards(Some(row)).into_iter().map(|c| (owner.to_owned(), c)));
        }
        Some(Seen {
            hand: cards(view.get("my_hand")),
            draw_count: view.get("draw_count").and_then(Value::as_i64).unwrap_or(0),
            me,
            seats,
            units,
            relics,
        })
    }

    fn mine(&self) -> Option<&Seat> {
        self.seats.iter().find(|s| s.pk == self.me)
    }

    fn opponents(&self) -> impl Iterator<Item = &Seat> {
        self.seats.iter().filter(|s| s.pk != self.me && !s.defeated)
    }

    fn my_units(&self) -> impl Iterator<Item = &Unit> {
        self.units.iter().filter(|u| u.owner == self.me)
    }

    fn relic_total(&self, effect: &str) -> i64 {
        self.relics
            .iter()
            .filter(|(owner, c)| *owner == self.me && c.effect == effect)
            .fold(0i64, |sum, (_, c)| sum.saturating_add(c.amount))
    }

    fn seat(&self, pk: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.pk == pk)
    }

    fn unit(&self, id: &str) -> Option<&Unit> {
        self.units.iter().find(|u| u.card.id == id)
    }

    /// Every action the rules accept now, one per card and target.
    fn legal(&self) -> Vec<Value> {
        let Some(me) = self.mine() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let my_units = self.my_units().count();
        let my_relics = self.relics.iter().filter(|(o, _)| *o == self.me).count();
        for card in self.hand.iter().filter(|c| c.cost <= me.energy) {
            let play = |extra: Option<(&str, &str)>| {
                let mut a = obj! { "kind" => "play_card", "card_id" => card.id.as_str() };
                if let Some((k, v)) = extra {
                    a.insert(k, Value::from(v));
                }
                Value::Object(a)
            };
            match (card.card_type.as_str(), card.effect.as_str()) {
                ("unit", _) if my_units < MAX_UNITS => out.push(play(None)),
                ("relic", _) if my_relics < MAX_RELICS => out.push(play(None)),
                ("spell", "damage_player") => {
                    for s in self.opponents() {
                        out.push(play(Some(("target_public_key", &s.pk))));
                    }
                }
                ("spell", "destroy_unit") => {
                    for u in self.units.iter().filter(|u| u.owner != self.me) {
                        if u.power() <= card.max_power {
                            out.push(play(Some(("target_card_id", &u.card.id))));
                        }
                    }
                }
                ("spell", "heal_self" | "draw" | "shield_self" | "ready_all") => {
                    out.push(play(None))
                }
                _ => {}
            }
        }
        for u in self.my_units().filter(|u| !u.exhausted) {
            let attack = |k: &str, v: &str| {
                Value::Object(obj! { "kind" => "attack", "unit_id" => u.card.id.as_str(), k => v })
            };
            for t in self.units.iter().filter(|t| t.owner != self.me) {
                out.push(attack("target_card_id", &t.card.id));
            }
            for s in self.opponents() {
                out.push(attack("target_public_key", &s.pk));
            }
        }
        out.push(Value::Object(obj! { "kind" => "end_turn" }));
        out.push(Value::Object(obj! { "kind" => "concede" }));
        out
    }

    /// The opponent the whole burst this turn can fell (ready units
    /// straight at it, then every affordable Cinder Shot), the lowest
    /// first; `None` when there is none.
    fn lethal_target(&self) -> Option<String> {
        let energy = self.mine()?.energy;
        let units: i64 = self
            .my_units()
            .filter(|u| !u.exhausted)
            .fold(0i64, |sum, u| sum.saturating_add(u.power()));
        let mut costs: Vec<(i64, i64)> = self
            .hand
            .iter()
            .filter(|c| c.effect == "damage_player")
            .map(|c| {
                (
                    c.cost,
                    c.amount.saturating_add(self.relic_total("spell_power")),
                )
            })
            .collect();
        costs.sort_unstable();
        let mut left = energy;
        let mut spells = 0i64;
        for (cost, dealt) in costs {
            if cost <= left {
                left -= cost;
                spells = spells.saturating_add(dealt);
            }
        }
        let burst = units.saturating_add(spells);
        self.opponents()
            .filter(|s| s.toughness() <= burst)
            .min_by_key(|s| s.toughness())
            .map(|s| s.pk.clone())
    }

    /// How much the bot wants `action` (the best one above zero is taken;
    /// ending the turn is worth zero and conceding is never chosen).
    fn worth(&self, action: &Value, lethal: Option<&str>, cap: i64) -> i64 {
        let Some(me) = self.mine() else {
            return i64::MIN;
        };
        let target_pk = action.get_str("target_public_key");
        let target_unit = action
            .get_str("target_card_id")
            .and_then(|id| self.unit(id));
        match action.get_str("kind") {
            Some("end_turn") => 0,
            Some("play_card") => {
                let Some(card) = action
                    .get_str("card_id")
                    .and_then(|id| self.hand.iter().find(|c| c.id == id))
                else {
                    return i64::MIN;
                };
                self.card_worth(me, card, target_pk, target_unit, lethal, cap)
            }
            Some("attack") => {
                let Some(unit) = action.get_str("unit_id").and_then(|id| self.unit(id)) else {
                    return i64::MIN;
                };
                self.attack_worth(unit, target_pk, target_unit, lethal)
            }
            _ => i64::MIN,
        }
    }

    fn card_worth(
        &self,
        me: &Seat,
        card: &Card,
        target_pk: Option<&str>,
        target_unit: Option<&Unit>,
        lethal: Option<&str>,
        cap: i64,
    ) -> i64 {
        let units = self.my_units().count() as i64;
        match (card.card_type.as_str(), card.effect.as_str()) {
            ("unit", _) => 50 + card.power * 2 + card.guard + card.cost,
            ("relic", "max_energy") if me.max_energy < ENERGY_CAP - 2 => 70,
            ("relic", "unit_power") => 40 + 8 * (MAX_UNITS as i64 - units),
            ("relic", "max_energy") => 10,
            ("relic", _) => 35,
            ("spell", "damage_player") => {
                let Some(target) = target_pk.and_then(|pk| self.seat(pk)) else {
                    return i64::MIN;
                };
                let dealt = card.amount.saturating_add(self.relic_total("spell_power"));
                if lethal == Some(target.pk.as_str()) || dealt >= target.toughness() {
                    1000 - target.toughness()
                } else {
                    25 - target.toughness() / 4
                }
            }
            ("spell", "heal_self") => {
                let gain = (cap - me.life).min(card.amount);
                if gain >= card.amount || me.life <= cap / 2 {
                    15 * gain
                } else {
                    -1
                }
            }
            ("spell", "shield_self") if me.life <= cap / 2 => 45,
            ("spell", "shield_self") => 12,
            // Drawing from a short pile is fatigue to itself.
            ("spell", "draw") if self.draw_count >= 2 && self.hand.len() <= 4 => 40,
            ("spell", "draw") => -1,
            ("spell", "destroy_unit") => target_unit.map_or(i64::MIN, |u| 30 + u.worth() * 3),
            ("spell", "ready_all") => {
                let tired = self.my_units().filter(|u| u.exhausted).count() as i64;
                if tired >= 1 { 12 * tired } else { -1 }
            }
            _ => -1,
        }
    }

    fn attack_worth(
        &self,
        unit: &Unit,
        target_pk: Option<&str>,
        target_unit: Option<&Unit>,
        lethal: Option<&str>,
    ) -> i64 {
        if let Some(target) = target_pk.and_then(|pk| self.seat(pk)) {
            let fells = unit.power() >= target.toughness();
            return if lethal == Some(target.pk.as_str()) || fells {
                // Strongest first, so the burst lands in as few blows as possible.
                900 + unit.power() - target.toughness()
            } else {
                // Hit the weakest: felling seats is what wins.
                60 + unit.power() * 3 - target.toughness()
            };
        }
        let Some(defender) = target_unit else {
            return i64::MIN;
        };
        let kills = unit.power() >= defender.left();
        let survives = defender.power() < unit.left();
        match (kills, survives) {
            (true, true) => 70 + defender.worth(),
            (true, false) if defender.worth() > unit.worth() => {
                20 + defender.worth() - unit.worth()
            }
            _ => -1,
        }
    }
}

impl Table for Sigil {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        Seen::read(view).map(|s| s.legal()).unwrap_or_default()
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let seen = Seen::read(view)?;
        let cap = match self.options.get("starting_life") {
            None => 20,
            Some(v) => py_int(v).ok().flatten().unwrap_or(20),
        };
        let lethal = seen.lethal_target();
        let mut best = Value::Object(obj! { "kind" => "end_turn" });
        let mut best_worth = 0;
        for action in seen.legal() {
            let w = seen.worth(&action, lethal.as_deref(), cap);
            if w > best_worth {
                best_worth = w;
                best = action;
            }
        }
        Some(best)
    }

    /// One card of the hand that some action may play now.
    fn is_legal_selection(&self, view: &Value, card_ids: &[String]) -> bool {
        let [id] = card_ids else {
            return false;
        };
        Seen::read(view).is_some_and(|s| {
            s.legal()
                .iter()
                .any(|a| a.get_str("kind") == Some("play_card") && a.get_str("card_id") == Some(id))
        })
    }
}
