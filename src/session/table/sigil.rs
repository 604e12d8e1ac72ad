//! aether-sigil-v1's part of a table view: every channeler's life, aether,
//! shield and fatigue, the units (with their power, guard left and whether
//! they are exhausted) and the relics on each seat's board, this seat's hand
//! of units, spells and relics with their costs, the pile, the discard (the
//! spells cast and the units fallen, the latest last) and the winner. The
//! turn number is the view's `round`.

use super::*;

/// A card of aether-sigil-v1 as its catalog entry names it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SigilCard {
    pub card_id: String,
    pub name: String,
    /// `unit`, `spell` or `relic`.
    pub card_type: String,
    pub cost: i64,
    /// A unit's power and guard.
    pub power: i64,
    pub guard: i64,
    /// A spell's or a relic's effect (`damage_player`, `end_heal`, …), its
    /// amount, and the most power Dissolve takes.
    pub effect: String,
    pub amount: i64,
    pub max_power: i64,
}

impl SigilCard {
    /// A catalog entry as a view or an event shows it.
    pub fn parse(v: &Value) -> Option<SigilCard> {
        let o = v.as_object()?;
        let n = |k: &str| int(o.get(k)).unwrap_or(0);
        Some(SigilCard {
            card_id: text(o.get("card_id")),
            name: text(o.get("name")),
            card_type: text(o.get("card_type")),
            cost: n("cost"),
            power: n("power"),
            guard: n("guard"),
            effect: text(o.get("effect")),
            amount: n("amount"),
            max_power: n("max_power"),
        })
    }

    /// The name, or `a card` when the catalog gave none.
    pub fn title(&self) -> &str {
        if self.name.is_empty() {
            "a card"
        } else {
            &self.name
        }
    }

    /// What a spell or a relic does, in a few words (`2 damage`, `heal 4`,
    /// `spells +1`); a unit's power and guard (`3/2`).
    pub fn effect_words(&self) -> String {
        let a = self.amount;
        match (self.card_type.as_str(), self.effect.as_str()) {
            ("unit", _) => format!("{}/{}", self.power, self.guard),
            (_, "damage_player") => format!("{a} damage"),
            (_, "heal_self") => format!("heal {a}"),
            (_, "draw") => format!("draw {a}"),
            (_, "destroy_unit") => format!("destroy power ≤{}", self.max_power),
            (_, "shield_self") => format!("shield {a}"),
            (_, "ready_all") => "ready your units".to_owned(),
            (_, "end_heal") => format!("heal {a} at turn end"),
            (_, "spell_power") => format!("spells +{a}"),
            (_, "unit_power") => format!("new units +{a}"),
            (_, "max_energy") => format!("max aether +{a}"),
            (_, e) => e.replace('_', " "),
        }
    }
}

/// A unit on a seat's row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SigilUnit {
    pub card: SigilCard,
    pub damage: i64,
    /// It has attacked or entered this turn: it cannot attack.
    pub exhausted: bool,
    /// The power its owner's relics gave it when it was summoned.
    pub power_bonus: i64,
}

impl SigilUnit {
    /// The power it attacks and strikes back with.
    pub fn power(&self) -> i64 {
        self.card.power.saturating_add(self.power_bonus)
    }

    /// The guard it has left before it falls.
    pub fn guard_left(&self) -> i64 {
        self.card.guard.saturating_sub(self.damage)
    }
}

/// One seat's channeler and its board.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Channeler {
    pub public_key: String,
    pub life: i64,
    /// Damage the shield absorbs before life.
    pub shield: i64,
    /// Aether to spend this turn, and the most it refills to.
    pub energy: i64,
    pub max_energy: i64,
    /// The damage the last draw from the empty pile dealt.
    pub fatigue: i64,
    /// Out of the match (felled or conceded).
    pub defeated: bool,
    pub units: Vec<SigilUnit>,
    pub relics: Vec<SigilCard>,
}

/// What aether-sigil-v1 adds to a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sigil {
    /// Every channeler the view lists, by seat.
    pub channelers: Vec<Channeler>,
    /// This seat's hand, as dealt and drawn (the table view's common
    /// `hand` holds no cards of this game).
    pub hand: Vec<SigilCard>,
    /// Cards left in the shared pile.
    pub draw_count: i64,
    /// The discard pile, the latest last.
    pub discard: Vec<SigilCard>,
    /// The last channeler standing, once the match is over.
    pub winner: String,
}

impl Sigil {
    pub fn channeler(&self, pk: &str) -> Option<&Channeler> {
        self.channelers.iter().find(|c| c.public_key == pk)
    }

    /// A unit on any row, with its owner.
    pub fn unit(&self, id: &str) -> Option<(&Channeler, &SigilUnit)> {
        self.channelers.iter().find_map(|c| {
            c.units
                .iter()
                .find(|u| u.card.card_id == id)
                .map(|u| (c, u))
        })
    }

    /// Any card this seat can see: on a row, set as a relic, in its hand,
    /// in the discard.
    pub fn card(&self, id: &str) -> Option<&SigilCard> {
        if id.is_empty() {
            return None;
        }
        self.unit(id).map(|(_, u)| &u.card).or_else(|| {
            self.channelers
                .iter()
                .flat_map(|c| c.relics.iter())
                .chain(self.hand.iter())
                .chain(self.discard.iter().rev())
                .find(|c| c.card_id == id)
        })
    }
}

/// The cards of a list, at most [`MAX_CARDS`] (the latest when `last`).
fn sigil_cards(v: Option<&Value>, last: bool) -> Vec<SigilCard> {
    let Some(a) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    let skip = if last {
        a.len().saturating_sub(MAX_CARDS)
    } else {
        0
    };
    a.iter()
        .skip(skip)
        .take(MAX_CARDS)
        .filter_map(SigilCard::parse)
        .collect()
}

pub(super) fn sigil<'a>(alias: &str, v: &'a Map) -> Result<TableView, String> {
    let winner = text(v.get("winner"));
    let seats = seats_of(v, &|s, p| {
        let defeated = p.and_then(|p| p.get("defeated")).and_then(Value::as_bool) == Some(true);
        s.role = if !winner.is_empty() && s.public_key == winner {
            "winner"
        } else if defeated {
            "out"
        } else {
            ""
        }
        .to_owned();
    })?;
    let per = |k: &str| v.get(k).and_then(Value::as_object);
    let (players, units, relics, states) = (
        per("players"),
        per("units"),
        per("relics"),
        per("unit_state"),
    );
    let channelers = seats
        .iter()
        .filter_map(|s| {
            let p = players?.get(&s.public_key)?;
            let n = |k: &str| int(p.get(k)).unwrap_or(0);
            let row = |m: Option<&'a Map>| m.and_then(|m| m.get(&s.public_key));
            let units = sigil_cards(row(units), false)
                .into_iter()
                .map(|card| {
                    let st = states.and_then(|m| m.get(&card.card_id));
                    let at = |k: &str| st.and_then(|st| int(st.get(k))).unwrap_or(0);
                    SigilUnit {
                        damage: at("damage"),
                        exhausted: st
                            .and_then(|st| st.get("exhausted"))
                            .and_then(Value::as_bool)
                            == Some(true),
                        power_bonus: at("power_bonus"),
                        card,
                    }
                })
                .collect();
            Some(Channeler {
                public_key: s.public_key.clone(),
                life: n("life"),
                shield: n("shield"),
                energy: n("energy"),
                max_energy: n("max_energy"),
                fatigue: n("fatigue"),
                defeated: p.get("defeated").and_then(Value::as_bool) == Some(true),
                units,
                relics: sigil_cards(row(relics), false),
            })
        })
        .collect();
    let game = Sigil {
        channelers,
        hand: sigil_cards(v.get("my_hand"), false),
        draw_count: int(v.get("draw_count")).unwrap_or(0),
        discard: sigil_cards(v.get("discard"), true),
        winner,
    };
    Ok(common(
        alias,
        v,
        "turn_number",
        seats,
        Vec::new(),
        Game::Sigil(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::session::table::tests::*;

    #[test]
    fn a_dealt_sigil_view_reads_every_channeler_and_the_hand() {
        let alias = "aether-sigil-v1";
        let (mut rules, state) = dealt(alias);
        let me = members()[0].clone();
        let t = TableView::parse(alias, &rules.view(&state, &me).unwrap()).unwrap();
        // Turn 1: seat 0 begins with five cards, 20 life and one Aether.
        assert_eq!((t.round, t.phase.as_str()), (Some(1), "playing"));
        assert!(t.your_turn());
        assert!(t.hand.is_empty());
        assert_eq!(t.seats.len(), 4);
        assert_eq!(t.seats[1].cards_left, Some(5));
        let s = t.sigil().unwrap();
        assert_eq!(s.hand.len(), 5);
        assert!(s.hand.iter().all(|c| !c.name.is_empty() && c.cost >= 1));
        assert_eq!(s.channelers.len(), 4);
        let c = s.channeler("pk0").unwrap();
        assert_eq!(
            (c.life, c.shield, c.energy, c.max_energy, c.fatigue),
            (20, 0, 1, 1, 0)
        );
        assert!(c.units.is_empty() && c.relics.is_empty() && !c.defeated);
        assert_eq!(s.draw_count, 72 - 20);
        assert!(s.discard.is_empty() && s.winner.is_empty());
        assert!(t.landlord().is_none() && t.holdem().is_none() && t.bridge().is_none());
        // A card of the hand is found by its id.
        let id = &s.hand[0].card_id;
        assert_eq!(s.card(id), Some(&s.hand[0]));
        assert_eq!(s.card(""), None);
    }

    #[test]
    fn a_sigil_board_reads_its_units_and_relics() {
        let view = Value::Object(obj! {
            "phase" => "playing", "turn_number" => 9, "current_player" => "bb",
            "turn_order" => vec![Value::from("aa"), Value::from("bb")],
            "players" => obj! {
                "aa" => obj! { "seat" => 0, "life" => 14, "shield" => 4, "energy" => 2, "max_energy" => 5, "fatigue" => 0, "defeated" => false },
                "bb" => obj! { "seat" => 1, "life" => 0, "shield" => 0, "energy" => 0, "max_energy" => 5, "fatigue" => 2, "defeated" => true },
            },
            "units" => obj! { "aa" => vec![Value::Object(obj! {
                "card_id" => "u1", "name" => "Glass Hound", "card_type" => "unit", "cost" => 2, "power" => 3, "guard" => 2,
            })] },
            "relics" => obj! { "aa" => vec![Value::Object(obj! {
                "card_id" => "r1", "name" => "Sun Dial", "card_type" => "relic", "cost" => 2, "effect" => "end_heal", "amount" => 1,
            })] },
            "unit_state" => obj! { "u1" => obj! { "damage" => 1, "exhausted" => true, "power_bonus" => 1 } },
            "discard" => vec![Value::Object(obj! {
                "card_id" => "s1", "name" => "Dissolve", "card_type" => "spell", "cost" => 3, "effect" => "destroy_unit", "max_power" => 3,
            })],
            "draw_count" => 30, "hand_counts" => obj! { "aa" => 4, "bb" => 0 }, "my_hand" => Value::Array(Vec::new()),
            "winner" => "", "you" => obj! { "public_key" => "aa", "seat" => 0 },
        });
        let t = TableView::parse("aether-sigil-v1", &view).unwrap();
        assert!(!t.your_turn());
        assert_eq!(t.round, Some(9));
        assert_eq!(t.seats[1].role, "out");
        let s = t.sigil().unwrap();
        let a = s.channeler("aa").unwrap();
        assert_eq!((a.life, a.shield, a.energy, a.max_energy), (14, 4, 2, 5));
        let u = &a.units[0];
        assert_eq!((u.power(), u.guard_left(), u.exhausted), (4, 1, true));
        assert_eq!(a.relics[0].effect_words(), "heal 1 at turn end");
        assert!(s.channeler("bb").unwrap().defeated);
        assert_eq!(s.unit("u1").unwrap().0.public_key, "aa");
        assert_eq!(s.card("s1").unwrap().effect_words(), "destroy power ≤3");
        assert_eq!(s.card("r1").unwrap().title(), "Sun Dial");
        assert_eq!(s.draw_count, 30);
    }
}
