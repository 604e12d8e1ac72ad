//! texas-holdem-v1 at the table pane: what its events say in the log, and
//! its board lines (the board, the pot and the wager, the last showdown).

use super::*;

pub(super) fn holdem_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    Some(match ev.get_str("kind")? {
        "fold" => does(who("public_key"), "folds"),
        "check" => does(who("public_key"), "checks"),
        "call" => format!(
            "{} ({} in this street)",
            does(who("public_key"), "calls"),
            int("amount")
        ),
        "bet" => format!("{} {}", does(who("public_key"), "bets"), int("amount")),
        "raise" => format!("{} to {}", does(who("public_key"), "raises"), int("amount")),
        "all_in" => format!(
            "{} all in ({} in this street)",
            does(who("public_key"), "goes"),
            int("amount")
        ),
        "holdem_street" => format!(
            "the {}: {}",
            ev.get_str("street").unwrap_or("board"),
            labels(&event_cards(ev.get("cards")))
        ),
        "holdem_showdown" => {
            let hands: Vec<String> = ev
                .get("hands")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.iter())
                .take(8)
                .map(|(pk, h)| {
                    format!(
                        "{} {} ({})",
                        name(pk),
                        h.get_str("category").unwrap_or("?").replace('_', " "),
                        labels(&event_cards(h.get("cards")))
                    )
                })
                .collect();
            let pots: Vec<String> = ev
                .get("pots")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(8)
                .map(|p| {
                    let winners: Vec<String> = p
                        .get("winners")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .take(4)
                        .map(|w| name(w.as_str().unwrap_or("")))
                        .collect();
                    let amount = p.get("amount").and_then(Value::as_i64).unwrap_or(0);
                    match winners.as_slice() {
                        [one] => format!("{} {amount}", does(one.clone(), "takes")),
                        many => format!("{} split {amount}", many.join(" and ")),
                    }
                })
                .collect();
            format!("showdown: {}; {}", hands.join(", "), pots.join(", "))
        }
        "holdem_uncontested" => format!(
            "{} the pot of {} uncontested",
            does(who("winner"), "takes"),
            int("amount")
        ),
        "holdem_hand_started" => format!(
            "hand {} is dealt: {} the button",
            int("hand_number"),
            does(who("button"), "has")
        ),
        "holdem_match_complete" => {
            let mut s = format!("the match is over: {} it", does(who("winner"), "wins"));
            if let Some(st) = ev.get("stacks").and_then(Value::as_object) {
                let parts: Vec<String> = st
                    .iter()
                    .take(8)
                    .map(|(pk, v)| format!("{} {}", name(pk), v.as_i64().unwrap_or(0)))
                    .collect();
                s.push_str(&format!(" ({})", parts.join(", ")));
            }
            s
        }
        "hand_restarted_after_leader_change" => {
            "the leader changed: the hand is dealt again".to_owned()
        }
        _ => return shared_event(ev, name),
    })
}

impl TablePaint<'_> {
    /// Hold'em: the board, the pot and the wager, the last showdown.
    pub(super) fn holdem_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let Some(h) = v.holdem() else {
            return Vec::new();
        };
        let label = |s: &str| Span::styled(format!("{s:<9}"), theme.muted());
        let mut out = Vec::new();
        let mut spans = vec![label("board")];
        if h.board.is_empty() {
            spans.push(Span::styled("no cards yet (preflop)", theme.muted()));
        } else {
            let room = (w as usize).saturating_sub(spans_width(&spans));
            spans.extend(card_spans(theme, &h.board, room));
        }
        out.push(Line::from(spans));
        let mut spans = vec![
            label("pot"),
            Span::styled(h.pot.to_string(), theme.text().add_modifier(Modifier::BOLD)),
        ];
        let wager = if h.current_bet > 0 {
            format!(" · wager {}", h.current_bet)
        } else {
            " · no wager yet".to_owned()
        };
        spans.push(Span::styled(wager, theme.muted()));
        if v.your_turn() {
            let call = if h.to_call > 0 {
                format!(" · {} to call", h.to_call)
            } else {
                " · nothing to call".to_owned()
            };
            spans.push(Span::styled(call, theme.fg(Slot::Warn)));
        }
        let mut spans = wrap_spans(spans, w);
        out.append(&mut spans);
        if !h.pots.is_empty() {
            let mut text = String::new();
            for p in &h.pots {
                let names: Vec<String> = p.winners.iter().map(|k| self.name(k)).collect();
                if !text.is_empty() {
                    text.push_str(" · ");
                }
                text.push_str(&format!(
                    "{} {} {}",
                    names.join(" and "),
                    if names.len() == 1 { "took" } else { "split" },
                    p.amount
                ));
            }
            for sh in &h.shown {
                text.push_str(&format!(
                    " · {} {} {}",
                    self.name(&sh.public_key),
                    sh.category.replace('_', " "),
                    labels(&sh.cards)
                ));
            }
            cut(&mut text, (w as usize).saturating_sub(9).max(1));
            out.push(Line::from(vec![
                label("result"),
                Span::styled(text, theme.fg(Slot::Ok)),
            ]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tui::panes::table::tests::std_card;

    #[test]
    fn holdem_events_read_as_sentences() {
        let name = |pk: &str| {
            if pk == "me" {
                "you".to_owned()
            } else {
                format!("<{pk}>")
            }
        };
        let alias = "texas-holdem-v1";
        let say = |ev: Map| event_text(alias, &ev, &name, None).unwrap();
        assert_eq!(
            say(obj! { "kind" => "raise", "public_key" => "a", "amount" => 40 }),
            "<a> raises to 40"
        );
        assert_eq!(
            say(obj! { "kind" => "all_in", "public_key" => "me", "amount" => 990 }),
            "you go all in (990 in this street)"
        );
        assert_eq!(
            say(obj! { "kind" => "check", "public_key" => "me" }),
            "you check"
        );
        assert_eq!(
            say(
                obj! { "kind" => "holdem_street", "street" => "flop", "cards" => vec![std_card(14, "hearts"), std_card(10, "spades"), std_card(2, "clubs")] }
            ),
            "the flop: A♥ 10♠ 2♣"
        );
        assert_eq!(
            say(obj! { "kind" => "holdem_uncontested", "winner" => "me", "amount" => 30 }),
            "you take the pot of 30 uncontested"
        );
        assert_eq!(
            say(obj! { "kind" => "holdem_hand_started", "hand_number" => 2, "button" => "b" }),
            "hand 2 is dealt: <b> has the button"
        );
        let showdown = obj! {
            "kind" => "holdem_showdown",
            "hands" => obj! { "a" => obj! { "cards" => vec![std_card(7, "spades"), std_card(7, "hearts")], "category" => "two_pair" } },
            "pots" => vec![Value::Object(obj! { "amount" => 240, "winners" => vec![Value::from("a")] })],
        };
        assert_eq!(
            say(showdown),
            "showdown: <a> two pair (7♠ 7♥); <a> takes 240"
        );
    }
}
