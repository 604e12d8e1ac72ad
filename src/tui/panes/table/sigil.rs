//! aether-sigil-v1 at the table pane: what its events say in the log (the
//! cards an event names by id are looked up in the view: on a row, set, in
//! the discard), each seat's life, shield, aether and cards left, each
//! seat's board (units with power/guard left, dimmed when exhausted; relics
//! marked `◇`), your hand with costs (dimmed when nothing plays it now),
//! and what a numbered choice says (`summon Glass Hound`, `Cinder Shot at
//! bot-1`, `Glass Hound → bot-2`). Everything fits the pane's width, cut
//! with `…` rather than overflowing.

use super::*;
use crate::session::table::{Channeler, Sigil, SigilCard};

/// The label column of the board and hand lines.
const LABEL: usize = 9;
/// The pane is wide enough for effects, owners and stats in full.
const WIDE: u16 = 80;

/// `your`, `bot-1's`.
fn whose(who: &str) -> String {
    if who == "you" {
        "your".to_owned()
    } else {
        format!("{who}'s")
    }
}

/// A unit an event names by id: `bot-1's Glass Hound` while it is on a
/// row, its name once it has fallen, `a unit` when the view has no such
/// card (a match dealt afresh since).
fn unit_words(s: Option<&Sigil>, id: &str, name: &dyn Fn(&str) -> String) -> String {
    let Some(s) = s else {
        return "a unit".into();
    };
    match s.unit(id) {
        Some((owner, u)) => format!("{} {}", whose(&name(&owner.public_key)), u.card.title()),
        None => s
            .card(id)
            .map_or_else(|| "a unit".to_owned(), |c| c.title().to_owned()),
    }
}

pub(super) fn sigil_event(
    ev: &Map,
    name: &dyn Fn(&str) -> String,
    s: Option<&Sigil>,
) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    let card = || {
        ev.get("card")
            .and_then(SigilCard::parse)
            .unwrap_or_default()
    };
    let unit = |k: &str| unit_words(s, ev.get_str(k).unwrap_or(""), name);
    Some(match ev.get_str("kind")? {
        "unit_summoned" => {
            let c = card();
            format!(
                "{} {} ({})",
                does(who("public_key"), "summons"),
                c.title(),
                c.effect_words()
            )
        }
        "relic_played" => {
            let c = card();
            format!(
                "{} {} ({})",
                does(who("public_key"), "sets"),
                c.title(),
                c.effect_words()
            )
        }
        "spell_cast" => {
            let c = card();
            format!(
                "{} {} ({})",
                does(who("public_key"), "casts"),
                c.title(),
                c.effect_words()
            )
        }
        "spell_damage" => format!("{} {} damage", does(who("target"), "takes"), int("amount")),
        "healed" | "relic_heal" if int("amount") == 0 => {
            let by = if ev.get_str("kind") == Some("relic_heal") {
                " by relics"
            } else {
                ""
            };
            format!(
                "{} nothing{by}: full life already",
                does(who("public_key"), "heals")
            )
        }
        "healed" => format!(
            "{} {} life",
            does(who("public_key"), "heals"),
            int("amount")
        ),
        "card_drawn" => format!("{} a card", does(who("public_key"), "draws")),
        "fatigue" => format!(
            "the pile is empty: {} {} fatigue damage",
            does(who("public_key"), "takes"),
            int("amount")
        ),
        "unit_dissolved" => {
            let id = ev.get_str("card_id").unwrap_or("");
            let what = s
                .and_then(|s| s.card(id))
                .map_or("a unit", SigilCard::title);
            format!("{} {what} is dissolved", whose(&who("owner")))
        }
        "shield_gained" => format!(
            "{} {} shield",
            does(who("public_key"), "gains"),
            int("amount")
        ),
        "units_readied" => format!("{} units are readied", whose(&who("public_key"))),
        "unit_combat" => format!(
            "{} ({}) fights {} ({})",
            unit("attacker"),
            int("attack_power"),
            unit("defender"),
            int("counter_power")
        ),
        "unit_destroyed" => format!("{} falls", unit("card_id")),
        "direct_attack" => format!(
            "{} hits {} for {}",
            unit("attacker"),
            who("target"),
            int("amount")
        ),
        "relic_heal" => format!(
            "{} {} life by relics",
            does(who("public_key"), "heals"),
            int("amount")
        ),
        "conceded" => does(who("public_key"), "concedes"),
        "turn_started" => format!("{} turn begins", whose(&who("public_key"))),
        "game_over" => format!("{} the match", does(who("winner"), "wins")),
        "match_restarted_after_leader_change" => {
            "the leader changed: a fresh match is dealt".to_owned()
        }
        _ => return shared_event(ev, name),
    })
}

/// A unit a choice targets: its name, with its owner and stats when the
/// pane is wide or another opposing unit has the same name.
fn target_unit(
    s: &Sigil,
    id: &str,
    you: &str,
    name: &dyn Fn(&str) -> String,
    wide: bool,
) -> String {
    let Some((owner, u)) = s.unit(id) else {
        return "a unit".into();
    };
    let title = u.card.title();
    let twins = s
        .channelers
        .iter()
        .filter(|c| c.public_key != you)
        .flat_map(|c| c.units.iter())
        .filter(|o| o.card.title() == title)
        .count();
    if wide || twins > 1 {
        format!(
            "{} {title} {}/{}",
            whose(&name(&owner.public_key)),
            u.power(),
            u.guard_left()
        )
    } else {
        title.to_owned()
    }
}

/// What a sigil choice says: `summon Glass Hound`, `set Sun Dial`, `cast
/// Star Map`, `Cinder Shot at bot-1`, `Dissolve on bot-2's Void Lynx 4/2`,
/// `Glass Hound → bot-2`, `end turn`, `concede`; when the pane is narrow,
/// the card alone and `→` its target (`Glass Hound`, `Cinder Shot→bot-1`,
/// `Glass Hound→Void Lynx`).
pub(super) fn sigil_choice(
    a: &Value,
    v: &TableView,
    name: &dyn Fn(&str) -> String,
    wide: bool,
) -> String {
    let Some(s) = v.sigil() else {
        return a.get_str("kind").unwrap_or("?").replace('_', " ");
    };
    let card = |k: &str| {
        a.get_str(k)
            .and_then(|id| s.card(id))
            .map_or("a card", SigilCard::title)
    };
    let target = || match (a.get_str("target_public_key"), a.get_str("target_card_id")) {
        (_, Some(id)) if !id.is_empty() => Some(target_unit(s, id, &v.you, name, wide)),
        (Some(pk), _) => Some(name(pk)),
        _ => None,
    };
    match a.get_str("kind").unwrap_or("?") {
        // Narrow: the card alone, `→` its target.
        "play_card" if !wide => match target() {
            Some(t) => format!("{}→{t}", card("card_id")),
            None => card("card_id").to_owned(),
        },
        "play_card" => {
            let c = a.get_str("card_id").and_then(|id| s.card(id));
            let title = card("card_id");
            match (c.map(|c| c.card_type.as_str()), target()) {
                (_, Some(t)) if a.get_str("target_card_id").is_some() => format!("{title} on {t}"),
                (_, Some(t)) => format!("{title} at {t}"),
                (Some("unit"), None) => format!("summon {title}"),
                (Some("relic"), None) => format!("set {title}"),
                _ => format!("cast {title}"),
            }
        }
        "attack" => match (target(), wide) {
            (Some(t), true) => format!("{} → {t}", card("unit_id")),
            (Some(t), false) => format!("{}→{t}", card("unit_id")),
            (None, _) => format!("{} attacks", card("unit_id")),
        },
        k => k.replace('_', " "),
    }
}

/// Spans cut to `room` cells, the last with `…` when they do not fit.
fn fit(spans: Vec<Span<'static>>, room: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for sp in spans {
        let n = sp.width();
        if used + n <= room {
            used += n;
            out.push(sp);
            continue;
        }
        let mut t = sp.content.to_string();
        cut(&mut t, room.saturating_sub(used));
        if !t.is_empty() {
            out.push(Span::styled(t, sp.style));
        }
        break;
    }
    out
}

/// Items laid out after a label column, as many to a line as fit (two
/// cells between them), an item wider than a line cut with `…`.
fn rows(label: Span<'static>, items: Vec<Vec<Span<'static>>>, w: u16) -> Vec<Line<'static>> {
    let room = (w as usize).saturating_sub(LABEL).max(1);
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut line: Vec<Span<'static>> = vec![label];
    let mut used = 0;
    for item in items {
        let n = spans_width(&item);
        if used > 0 && used + 2 + n > room {
            out.push(Line::from(std::mem::replace(
                &mut line,
                vec![Span::raw(" ".repeat(LABEL))],
            )));
            used = 0;
        }
        if used > 0 {
            line.push(Span::raw("  "));
            used += 2;
        }
        let item = fit(item, room.saturating_sub(used));
        used += spans_width(&item);
        line.extend(item);
    }
    out.push(Line::from(line));
    out
}

impl TablePaint<'_> {
    fn label(&self, theme: &Theme, s: &str) -> Span<'static> {
        Span::styled(pad(s, LABEL - 1) + " ", theme.muted())
    }

    /// A seat's life, shield, aether, cards left and fatigue, within
    /// `room` cells: in words when they fit, else `♥14+4 ◆2/5 4 cards`.
    pub(super) fn sigil_stats(
        &self,
        theme: &Theme,
        s: &Seat,
        c: Option<&Channeler>,
        base: Style,
        room: usize,
    ) -> Vec<Span<'static>> {
        let Some(c) = c else {
            return Vec::new();
        };
        let cards = s
            .cards_left
            .map(|n| format!("{n} card{}", if n == 1 { "" } else { "s" }));
        let spans = match s.role.as_str() {
            "winner" => vec![Span::styled(
                format!("winner · life {}", c.life),
                theme.fg(Slot::Ok).add_modifier(Modifier::BOLD),
            )],
            "out" => vec![Span::styled("out", theme.muted())],
            _ => {
                let life = theme.fg(Slot::Error).add_modifier(Modifier::BOLD);
                let mut words = vec![Span::styled(format!("life {}", c.life), life)];
                if c.shield > 0 {
                    words.push(Span::styled(
                        format!(" · shield {}", c.shield),
                        theme.accent(),
                    ));
                }
                words.push(Span::styled(
                    format!(" · aether {}/{}", c.energy, c.max_energy),
                    base,
                ));
                if let Some(n) = &cards {
                    words.push(Span::styled(format!(" · {n}"), theme.muted()));
                }
                if c.fatigue > 0 {
                    words.push(Span::styled(
                        format!(" · fatigue {}", c.fatigue),
                        theme.fg(Slot::Warn),
                    ));
                }
                if spans_width(&words) <= room {
                    words
                } else {
                    let mut short = vec![Span::styled(format!("♥{}", c.life), life)];
                    if c.shield > 0 {
                        short.push(Span::styled(format!("+{}", c.shield), theme.accent()));
                    }
                    short.push(Span::styled(
                        format!(" ◆{}/{}", c.energy, c.max_energy),
                        base,
                    ));
                    if let Some(n) = &cards {
                        short.push(Span::styled(format!(" {n}"), theme.muted()));
                    }
                    if c.fatigue > 0 {
                        short.push(Span::styled(
                            format!(" fatigue {}", c.fatigue),
                            theme.fg(Slot::Warn),
                        ));
                    }
                    short
                }
            }
        };
        fit(spans, room)
    }

    /// A unit on a row: `Glass Hound 3/2` (power/guard left), dimmed when
    /// exhausted.
    fn unit_item(&self, theme: &Theme, u: &crate::session::table::SigilUnit) -> Vec<Span<'static>> {
        let style = if u.exhausted {
            theme.muted()
        } else {
            theme.text().add_modifier(Modifier::BOLD)
        };
        vec![Span::styled(
            format!("{} {}/{}", u.card.title(), u.power(), u.guard_left()),
            style,
        )]
    }

    /// A relic: `◇Sun Dial`, with what it does when the pane is wide.
    fn relic_item(&self, theme: &Theme, r: &SigilCard, wide: bool) -> Vec<Span<'static>> {
        let mut out = vec![Span::styled(format!("◇{}", r.title()), theme.accent())];
        if wide {
            out.push(Span::styled(
                format!(" ({})", r.effect_words()),
                theme.muted(),
            ));
        }
        out
    }

    /// Aether sigil: each seat's board (its units and relics; narrow, the
    /// relics that do not fit after the units are counted), and when wide,
    /// how to read it and the discard's latest cards.
    pub(super) fn sigil_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let Some(s) = v.sigil() else {
            return Vec::new();
        };
        let wide = w >= WIDE;
        let mut out = Vec::new();
        for c in &s.channelers {
            if c.units.is_empty() && c.relics.is_empty() {
                continue;
            }
            let mut items: Vec<Vec<Span<'static>>> =
                c.units.iter().map(|u| self.unit_item(theme, u)).collect();
            let relics: Vec<Vec<Span<'static>>> = c
                .relics
                .iter()
                .map(|r| self.relic_item(theme, r, wide))
                .collect();
            let label = self.label(theme, &self.name(&c.public_key));
            if !wide && !relics.is_empty() {
                // Narrow: the relics by name when they fit after the
                // units, else how many there are (`◇2 relics`, `◇2`), so
                // a seat's board takes no more lines than its units do;
                // by name when even a count would not fit.
                let n = relics.len();
                let counted = |text: String| vec![vec![Span::styled(text, theme.accent())]];
                let unit_lines = rows(label.clone(), items.clone(), w).len();
                let fits = |extra: &[Vec<Span<'static>>]| {
                    let mut all = items.clone();
                    all.extend(extra.iter().cloned());
                    rows(label.clone(), all, w).len() <= unit_lines
                };
                let tail = [
                    relics.clone(),
                    counted(format!("◇{n} relic{}", if n == 1 { "" } else { "s" })),
                    counted(format!("◇{n}")),
                ]
                .into_iter()
                .find(|t| fits(t))
                .unwrap_or(relics);
                items.extend(tail);
            } else {
                items.extend(relics);
            }
            out.extend(rows(label, items, w));
        }
        if out.is_empty() {
            out.push(Line::from(vec![
                self.label(theme, "board"),
                Span::styled("no units or relics in play yet", theme.muted()),
            ]));
        }
        if wide {
            let mut text = "units power/guard left, dimmed when exhausted · ◇ relics".to_owned();
            if let Some(last) = s.discard.last() {
                text.push_str(&format!(
                    " · discard {} (latest {})",
                    s.discard.len(),
                    last.title()
                ));
            }
            cut(&mut text, (w as usize).saturating_sub(LABEL).max(1));
            out.push(Line::from(vec![
                self.label(theme, ""),
                Span::styled(text, theme.muted()),
            ]));
        }
        out
    }

    /// Your hand: every card with its cost in aether (`Glass Hound 2◆`,
    /// copies once: `Mending Rain 2◆ ×2`), what it does (`3/2`, `heal 4`)
    /// when the pane is wide; on your turn the cards no legal action plays
    /// are dimmed.
    pub(super) fn sigil_hand_lines(
        &self,
        theme: &Theme,
        v: &TableView,
        w: u16,
    ) -> Vec<Line<'static>> {
        let Some(s) = v.sigil() else {
            return Vec::new();
        };
        let wide = w >= WIDE;
        let playable: BTreeSet<&str> = self
            .pick
            .choices
            .iter()
            .filter(|a| a.get_str("kind") == Some("play_card"))
            .filter_map(|a| a.get_str("card_id"))
            .collect();
        let turn = v.your_turn() && !self.pick.choices.is_empty();
        if s.hand.is_empty() {
            return vec![Line::from(vec![
                self.label(theme, "hand"),
                Span::styled("no cards", theme.muted()),
            ])];
        }
        // Copies of a card are one item (`Mending Rain 2◆ ×2`), playable
        // when any of them is.
        let mut groups: Vec<(&SigilCard, usize, bool)> = Vec::new();
        for c in &s.hand {
            let ok = playable.contains(c.card_id.as_str());
            match groups
                .iter_mut()
                .find(|(g, _, _)| g.name == c.name && g.cost == c.cost && g.effect == c.effect)
            {
                Some(g) => {
                    g.1 += 1;
                    g.2 |= ok;
                }
                None => groups.push((c, 1, ok)),
            }
        }
        let items = groups
            .into_iter()
            .map(|(c, n, ok)| {
                let style = if turn && !ok {
                    theme.muted()
                } else {
                    theme.text().add_modifier(Modifier::BOLD)
                };
                let mut item = vec![
                    Span::styled(c.title().to_owned(), style),
                    Span::styled(format!(" {}◆", c.cost), theme.accent()),
                ];
                if wide {
                    item.push(Span::styled(
                        format!(" {}", c.effect_words()),
                        theme.muted(),
                    ));
                }
                if n > 1 {
                    item.push(Span::styled(format!(" ×{n}"), style));
                }
                item
            })
            .collect();
        rows(self.label(theme, "hand"), items, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tui::keymap::Keymap;
    use std::collections::BTreeMap;

    fn face(id: &str, name: &str, kind: &str, cost: i64, power: i64, guard: i64) -> Value {
        Value::Object(obj! {
            "card_id" => id, "name" => name, "card_type" => kind, "cost" => cost, "power" => power, "guard" => guard,
        })
    }

    fn board() -> TableView {
        let view = Value::Object(obj! {
            "phase" => "playing", "turn_number" => 6, "current_player" => "me",
            "turn_order" => vec![Value::from("me"), Value::from("a"), Value::from("b")],
            "players" => obj! {
                "me" => obj! { "seat" => 0, "life" => 17, "shield" => 2, "energy" => 3, "max_energy" => 3, "fatigue" => 0, "defeated" => false },
                "a" => obj! { "seat" => 1, "life" => 20, "shield" => 0, "energy" => 0, "max_energy" => 3, "fatigue" => 0, "defeated" => false },
                "b" => obj! { "seat" => 2, "life" => 0, "shield" => 0, "energy" => 0, "max_energy" => 2, "fatigue" => 0, "defeated" => true },
            },
            "units" => obj! {
                "me" => vec![face("h", "Glass Hound", "unit", 2, 3, 2)],
                "a" => vec![face("l1", "Void Lynx", "unit", 3, 4, 2)],
                "b" => vec![face("l2", "Void Lynx", "unit", 3, 4, 2)],
            },
            "unit_state" => obj! {
                "h" => obj! { "damage" => 0, "exhausted" => false, "power_bonus" => 0 },
                "l1" => obj! { "damage" => 1, "exhausted" => true, "power_bonus" => 0 },
                "l2" => obj! { "damage" => 0, "exhausted" => false, "power_bonus" => 0 },
            },
            "relics" => obj! { "me" => vec![Value::Object(obj! {
                "card_id" => "r", "name" => "Sun Dial", "card_type" => "relic", "cost" => 2, "effect" => "end_heal", "amount" => 1,
            })] },
            "discard" => vec![face("d", "Dawnling", "unit", 1, 2, 1)],
            "my_hand" => vec![
                Value::Object(obj! { "card_id" => "c", "name" => "Cinder Shot", "card_type" => "spell", "cost" => 1, "effect" => "damage_player", "amount" => 2 }),
                Value::Object(obj! { "card_id" => "x", "name" => "Dissolve", "card_type" => "spell", "cost" => 3, "effect" => "destroy_unit", "max_power" => 3 }),
                face("g", "Tide Scribe", "unit", 2, 2, 3),
            ],
            "draw_count" => 40, "winner" => "", "you" => obj! { "public_key" => "me", "seat" => 0 },
        });
        TableView::parse("aether-sigil-v1", &view).unwrap()
    }

    fn name(pk: &str) -> String {
        if pk == "me" {
            "you".to_owned()
        } else {
            format!("<{pk}>")
        }
    }

    #[test]
    fn sigil_events_read_as_sentences() {
        let v = board();
        let say = |ev: Map| event_text("aether-sigil-v1", &ev, &name, Some(&v)).unwrap();
        assert_eq!(
            say(
                obj! { "kind" => "unit_summoned", "public_key" => "a", "card" => face("l1", "Void Lynx", "unit", 3, 4, 2) }
            ),
            "<a> summons Void Lynx (4/2)"
        );
        assert_eq!(
            say(
                obj! { "kind" => "spell_cast", "public_key" => "me", "card" => Value::Object(obj! {
                    "card_id" => "c", "name" => "Cinder Shot", "card_type" => "spell", "cost" => 1, "effect" => "damage_player", "amount" => 2,
                }) }
            ),
            "you cast Cinder Shot (2 damage)"
        );
        assert_eq!(
            say(
                obj! { "kind" => "relic_played", "public_key" => "me", "card" => Value::Object(obj! {
                    "card_id" => "r", "name" => "Sun Dial", "card_type" => "relic", "effect" => "end_heal", "amount" => 1,
                }) }
            ),
            "you set Sun Dial (heal 1 at turn end)"
        );
        assert_eq!(
            say(obj! { "kind" => "spell_damage", "target" => "a", "amount" => 3 }),
            "<a> takes 3 damage"
        );
        assert_eq!(
            say(obj! { "kind" => "healed", "public_key" => "me", "amount" => 4 }),
            "you heal 4 life"
        );
        assert_eq!(
            say(obj! { "kind" => "relic_heal", "public_key" => "a", "amount" => 0 }),
            "<a> heals nothing by relics: full life already"
        );
        assert_eq!(
            say(obj! { "kind" => "card_drawn", "public_key" => "a" }),
            "<a> draws a card"
        );
        assert_eq!(
            say(obj! { "kind" => "fatigue", "public_key" => "me", "amount" => 2 }),
            "the pile is empty: you take 2 fatigue damage"
        );
        assert_eq!(
            say(obj! { "kind" => "unit_dissolved", "owner" => "a", "card_id" => "d" }),
            "<a>'s Dawnling is dissolved"
        );
        assert_eq!(
            say(obj! { "kind" => "shield_gained", "public_key" => "me", "amount" => 4 }),
            "you gain 4 shield"
        );
        assert_eq!(
            say(obj! { "kind" => "units_readied", "public_key" => "me" }),
            "your units are readied"
        );
        assert_eq!(
            say(obj! {
                "kind" => "unit_combat", "attacker" => "h", "defender" => "l1",
                "attack_power" => 3, "counter_power" => 4,
            }),
            "your Glass Hound (3) fights <a>'s Void Lynx (4)"
        );
        assert_eq!(
            say(obj! { "kind" => "unit_destroyed", "card_id" => "d" }),
            "Dawnling falls"
        );
        assert_eq!(
            say(obj! { "kind" => "unit_destroyed", "card_id" => "gone" }),
            "a unit falls"
        );
        assert_eq!(
            say(
                obj! { "kind" => "direct_attack", "attacker" => "h", "target" => "a", "amount" => 3 }
            ),
            "your Glass Hound hits <a> for 3"
        );
        assert_eq!(
            say(obj! { "kind" => "relic_heal", "public_key" => "a", "amount" => 1 }),
            "<a> heals 1 life by relics"
        );
        assert_eq!(
            say(obj! { "kind" => "conceded", "public_key" => "b" }),
            "<b> concedes"
        );
        assert_eq!(
            say(obj! { "kind" => "turn_started", "public_key" => "a" }),
            "<a>'s turn begins"
        );
        assert_eq!(
            say(obj! { "kind" => "game_over", "winner" => "me" }),
            "you win the match"
        );
        assert_eq!(
            say(obj! { "kind" => "match_restarted_after_leader_change", "restart_count" => 1 }),
            "the leader changed: a fresh match is dealt"
        );
        assert_eq!(
            say(
                obj! { "kind" => "member_disconnected", "public_key" => "b", "reason" => "timeout" }
            ),
            "<b> left the table (timeout)"
        );
        // Without a view, a unit is only a unit.
        assert_eq!(
            sigil_event(
                &obj! { "kind" => "unit_destroyed", "card_id" => "h" },
                &name,
                None
            )
            .unwrap(),
            "a unit falls"
        );
    }

    #[test]
    fn sigil_choices_name_the_card_and_the_target() {
        let v = board();
        let say = |a: Map, wide: bool| sigil_choice(&Value::Object(a), &v, &name, wide);
        let summon = obj! { "kind" => "play_card", "card_id" => "g" };
        assert_eq!(say(summon.clone(), true), "summon Tide Scribe");
        assert_eq!(say(summon, false), "Tide Scribe");
        let shot = obj! { "kind" => "play_card", "card_id" => "c", "target_public_key" => "a" };
        assert_eq!(say(shot.clone(), true), "Cinder Shot at <a>");
        assert_eq!(say(shot, false), "Cinder Shot→<a>");
        // Two Void Lynxes are out: the owner tells them apart.
        assert_eq!(
            say(
                obj! { "kind" => "play_card", "card_id" => "x", "target_card_id" => "l1" },
                false
            ),
            "Dissolve→<a>'s Void Lynx 4/1"
        );
        let hit = obj! { "kind" => "attack", "unit_id" => "h", "target_public_key" => "a" };
        assert_eq!(say(hit.clone(), true), "Glass Hound → <a>");
        assert_eq!(say(hit, false), "Glass Hound→<a>");
        assert_eq!(say(obj! { "kind" => "end_turn" }, false), "end turn");
        assert_eq!(say(obj! { "kind" => "concede" }, true), "concede");
    }

    #[test]
    fn a_sigil_board_fits_its_width_and_dims_exhausted_units() {
        let v = Ok(board());
        let (kinds, nicks) = (BTreeMap::new(), BTreeMap::new());
        let keymap = Keymap::builtin();
        let theme = Theme::builtin_default();
        let choices = vec![
            Value::Object(
                obj! { "kind" => "play_card", "card_id" => "c", "target_public_key" => "a" },
            ),
            Value::Object(obj! { "kind" => "end_turn" }),
        ];
        let paint = TablePaint {
            name: "Aether Sigil",
            title: "t",
            view: &v,
            waiting: None,
            kinds: &kinds,
            nicks: &nicks,
            log: &[],
            pick: Pick {
                choices: &choices,
                ..Pick::default()
            },
            note: None,
            ended: None,
            outcome: None,
            mode: "human",
            keymap: &keymap,
            focused: true,
        };
        let t = v.as_ref().unwrap();
        for w in [30u16, 46, 79, 80, 110] {
            let mut lines = paint.seat_lines(&theme, t, w);
            lines.extend(paint.sigil_lines(&theme, t, w));
            lines.extend(paint.sigil_hand_lines(&theme, t, w));
            lines.extend(paint.action_lines(&theme, t, w));
            for l in &lines {
                assert!(l.width() <= w as usize, "{w}: {l:?}");
            }
        }
        let board = paint.sigil_lines(&theme, t, 110);
        let span = |text: &str| {
            board
                .iter()
                .flat_map(|l| l.spans.iter())
                .find(|s| s.content.starts_with(text))
                .unwrap_or_else(|| panic!("{text} in {board:?}"))
                .clone()
        };
        // a's lynx attacked (exhausted): dimmed; b's and yours are ready.
        let lines: Vec<String> = board.iter().map(|l| l.to_string()).collect();
        assert!(
            lines[0].starts_with("you      Glass Hound 3/2  ◇Sun Dial (heal 1 at turn end)"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("a        Void Lynx 4/1"), "{lines:?}");
        assert_eq!(span("Void Lynx 4/1").style, theme.muted());
        assert_ne!(span("Glass Hound").style, theme.muted());
        // The hand: Dissolve and Tide Scribe have no legal play now.
        let hand: Vec<String> = paint
            .sigil_hand_lines(&theme, t, 46)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(hand[0].trim_end(), "hand     Cinder Shot 1◆  Dissolve 3◆");
        let dim = paint.sigil_hand_lines(&theme, t, 110);
        let dissolve = dim[0]
            .spans
            .iter()
            .find(|s| s.content == "Dissolve")
            .unwrap();
        assert_eq!(dissolve.style, theme.muted());
        // The seats: life, shield, aether; the felled one is out.
        let seats: Vec<String> = paint
            .seat_lines(&theme, t, 46)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert!(seats[0].ends_with("♥17+2 ◆3/3"), "{seats:?}");
        assert!(seats[2].ends_with("out"), "{seats:?}");
    }

    #[test]
    fn rows_never_overflow_their_width() {
        let items: Vec<Vec<Span<'static>>> = (0..6)
            .map(|n| vec![Span::raw(format!("Verdant Giant {n}/6"))])
            .collect();
        for w in [1u16, 10, 20, 46, 110] {
            let lines = rows(Span::raw(" ".repeat(LABEL)), items.clone(), w);
            for l in &lines {
                assert!(l.width() <= (w as usize).max(LABEL + 1), "{w}: {l:?}");
            }
        }
        let mut long = vec![Span::raw("a".repeat(30)), Span::raw("b".repeat(30))];
        long = fit(long, 40);
        assert_eq!(spans_width(&long), 40);
        assert!(long[1].content.ends_with('…'));
    }
}
