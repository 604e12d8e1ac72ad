//! four-player-landlord-v1 at the table pane: what its events say in the
//! log, and its board lines (the bidding, the landlord with the bottom, the
//! play to beat).

use super::*;

pub(super) fn landlord_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    let cards = |k: &str| {
        let mut c: Vec<Card> = ev
            .get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .take(64)
                    .filter_map(|c| parse_card(c.as_object()?))
                    .collect()
            })
            .unwrap_or_default();
        crate::session::table::sort_cards(&mut c);
        labels(&c)
    };
    Some(match ev.get_str("kind")? {
        "bid" if int("value") == 0 => format!("{} the bid", does(who("public_key"), "passes")),
        "bid" => format!("{} {}", does(who("public_key"), "bids"), int("value")),
        "all_passed_redeal" => format!(
            "everyone passed: the cards are dealt again (round {})",
            int("round_number")
        ),
        "landlord_selected" => format!(
            "{} the landlord for {} and takes the bottom: {}",
            does(who("public_key"), "is"),
            int("bid"),
            cards("bottom")
        ),
        "play" => {
            let combo = ev
                .get("combination")
                .and_then(Value::as_object)
                .map(|c| c.get_str("kind").unwrap_or("").replace('_', " "))
                .unwrap_or_default();
            format!(
                "{} {combo}: {}",
                does(who("public_key"), "plays"),
                cards("cards")
            )
        }
        "pass" => does(who("public_key"), "passes"),
        "trick_reset" => match who("public_key") {
            w if w == "you" => "you take the trick and lead".to_owned(),
            w => format!("{w} takes the trick and leads"),
        },
        "game_over" => {
            let side = match ev.get_str("outcome") {
                Some("landlord") => "the landlord wins",
                Some("farmers") => "the farmers win",
                _ => "the round is over",
            };
            let mut s = format!("{} went out: {side}", who("winner"));
            if let Some(d) = ev.get("score_delta").and_then(Value::as_object) {
                let parts: Vec<String> = d
                    .iter()
                    .take(8)
                    .map(|(pk, v)| format!("{} {:+}", name(pk), v.as_i64().unwrap_or(0)))
                    .collect();
                s.push_str(&format!(" ({})", parts.join(", ")));
            }
            s
        }
        "round_restarted_after_leader_change" => format!(
            "the leader changed: round {} is dealt again",
            int("round_number")
        ),
        _ => return shared_event(ev, name),
    })
}

impl TablePaint<'_> {
    /// Landlord: the bidding, or the landlord with the bottom and the play
    /// to beat.
    pub(super) fn landlord_lines(
        &self,
        theme: &Theme,
        v: &TableView,
        w: u16,
    ) -> Vec<Line<'static>> {
        let Some(l) = v.landlord() else {
            return Vec::new();
        };
        let label = |s: &str| Span::styled(format!("{s:<9}"), theme.muted());
        let mut out = Vec::new();
        if v.phase == "bidding" {
            let high = if l.highest_bid > 0 {
                format!(
                    "highest bid {} by {}",
                    l.highest_bid,
                    self.who(&l.highest_bidder)
                )
            } else {
                "no bid yet".to_owned()
            };
            let mut spans = vec![label("bidding"), Span::styled(high, theme.text())];
            let more = " · the highest bidder takes the bottom and leads";
            if spans_width(&spans) + more.chars().count() <= w as usize {
                spans.push(Span::styled(more, theme.muted()));
            }
            out.push(Line::from(spans));
            return out;
        }
        let mut spans = vec![
            label("landlord"),
            Span::styled(
                self.who(&l.landlord),
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            ),
        ];
        if !l.bottom.is_empty() {
            spans.push(Span::styled(" · bottom ", theme.muted()));
            let room = (w as usize).saturating_sub(spans_width(&spans));
            spans.extend(card_spans(theme, &l.bottom, room));
        }
        out.push(Line::from(spans));
        let mut spans = vec![label("to beat")];
        match &l.last_play {
            Some(p) => {
                spans.push(Span::styled(
                    format!("{}: {} ", self.who(&p.public_key), play_words(p)),
                    theme.text(),
                ));
                let room = (w as usize).saturating_sub(spans_width(&spans));
                spans.extend(card_spans(theme, &p.cards, room));
            }
            None if v.phase == "playing" => spans.push(Span::styled(
                format!("nothing: {} leads any combination", self.who(&v.current)),
                theme.muted(),
            )),
            None => spans.push(Span::styled("—", theme.muted())),
        }
        out.push(Line::from(spans));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tui::panes::table::tests::card;

    #[test]
    fn landlord_events_read_as_sentences() {
        let name = |pk: &str| format!("<{pk}>");
        let c = |r: &str, v: i64, s: &str| {
            Value::Object(
                obj! { "rank" => r, "value" => v, "suit" => s, "card_id" => "x", "copy" => 0 },
            )
        };
        let ev = obj! {
            "kind" => "play", "public_key" => "a", "seat" => 0,
            "cards" => vec![c("7", 7, "spades"), c("7", 7, "hearts")],
            "combination" => obj! { "kind" => "pair", "primary" => 7, "length" => 2, "tier" => 0 },
        };
        let alias = "four-player-landlord-v1";
        assert_eq!(
            event_text(alias, &ev, &name, None).unwrap(),
            "<a> plays pair: 7♥ 7♠"
        );
        let bid = obj! { "kind" => "bid", "public_key" => "b", "value" => 0 };
        assert_eq!(
            event_text(alias, &bid, &name, None).unwrap(),
            "<b> passes the bid"
        );
        let over = obj! {
            "kind" => "game_over", "outcome" => "farmers", "winner" => "a",
            "score_delta" => obj! { "a" => 2, "b" => -6 },
        };
        assert_eq!(
            event_text(alias, &over, &name, None).unwrap(),
            "<a> went out: the farmers win (<a> +2, <b> -6)"
        );
        assert!(event_text(alias, &obj! { "no" => "kind" }, &name, None).is_none());
        // Your own moves read as you say them.
        let you = |_: &str| "you".to_owned();
        assert_eq!(
            event_text(alias, &ev, &you, None).unwrap(),
            "you play pair: 7♥ 7♠"
        );
        let lead = obj! { "kind" => "trick_reset", "public_key" => "a" };
        assert_eq!(
            event_text(alias, &lead, &you, None).unwrap(),
            "you take the trick and lead"
        );
    }

    #[test]
    fn plays_are_named_as_players_say_them() {
        let p = Play {
            public_key: "a".into(),
            seat: Some(0),
            cards: vec![card("Q", 12, "clubs"), card("Q", 12, "hearts")],
            kind: "pair".into(),
            primary: 12,
            length: 2,
            tier: 0,
        };
        assert_eq!(play_words(&p), "pair of Qs");
        let s = Play {
            kind: "straight".into(),
            primary: 11,
            length: 5,
            cards: vec![card("J", 11, "clubs")],
            ..p
        };
        assert_eq!(play_words(&s), "straight of 5 to J");
    }
}
