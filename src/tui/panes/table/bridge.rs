//! contract-bridge-v1 at the table pane: what its events say in the log,
//! and its board lines (the dealer and the auction, or the contract, the
//! trick, the tricks won and the dummy).

use super::*;

pub(super) fn bridge_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    Some(match ev.get_str("kind")? {
        "pass" => does(who("public_key"), "passes"),
        "bid" => format!(
            "{} {}",
            does(who("public_key"), "bids"),
            bid_label(int("level"), ev.get_str("denomination").unwrap_or("?"))
        ),
        "double" => does(who("public_key"), "doubles"),
        "redouble" => does(who("public_key"), "redoubles"),
        "board_passed_out" => "four passes: the board is passed out".to_owned(),
        "contract_set" => {
            let c = ev.get("contract").and_then(Value::as_object);
            let n = |k: &str| {
                c.and_then(|c| c.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            let x = match n("doubled") {
                1 => " doubled",
                2 => " redoubled",
                _ => "",
            };
            let denom = c.and_then(|c| c.get_str("denomination")).unwrap_or("?");
            format!(
                "the contract is {}{x}, declared by {}; {} the dummy",
                bid_label(n("level"), denom),
                who("declarer"),
                does(who("dummy"), "is")
            )
        }
        "bridge_card_played" => {
            let card = ev
                .get("card")
                .and_then(Card::parse)
                .map(|c| c.label())
                .unwrap_or_else(|| "?".into());
            if ev.get_str("public_key") != ev.get_str("hand_owner") {
                format!("{} {card} from the dummy", does(who("public_key"), "plays"))
            } else {
                format!("{} {card}", does(who("public_key"), "plays"))
            }
        }
        "dummy_revealed" => format!("the dummy's hand is shown ({})", who("dummy")),
        "bridge_trick_won" => format!(
            "{} trick {} for {}",
            does(who("winner"), "wins"),
            int("trick_number"),
            side_word(ev.get_str("partnership").unwrap_or("?"))
        ),
        "bridge_board_complete" => {
            let outcome = ev.get_str("outcome").unwrap_or("");
            let (side, made) = outcome.split_once('_').unwrap_or((outcome, ""));
            let score = int("contract_score");
            let what = if made == "made" {
                format!(
                    "{} make the contract with {} tricks (+{score})",
                    side_word(side),
                    int("tricks")
                )
            } else {
                format!(
                    "{} go down with {} tricks ({} to the defenders)",
                    side_word(side),
                    int("tricks"),
                    score.saturating_abs()
                )
            };
            let scores = ev.get("scores").and_then(Value::as_object);
            let pts = |k: &str| {
                scores
                    .and_then(|m| m.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            format!("{what}: NS {} · EW {}", pts("ns"), pts("ew"))
        }
        "board_restarted_after_leader_change" => {
            format!("the leader changed: board {} goes on", int("board_number"))
        }
        _ => return shared_event(ev, name),
    })
}

impl TablePaint<'_> {
    /// `N`, `E`, `S`, `W`: a bridge seat's compass point.
    pub(super) fn compass(&self, v: &TableView, pk: &str) -> &'static str {
        match v.seat_of(pk).and_then(|s| s.seat) {
            Some(0) => "N",
            Some(1) => "E",
            Some(2) => "S",
            Some(3) => "W",
            _ => "?",
        }
    }

    /// Cards by suit (`♠ A K 5  ♥ Q 3  ♣ —  ♦ J 9`) within `room` cells.
    pub(super) fn suit_spans(
        &self,
        theme: &Theme,
        cards: &[Card],
        room: usize,
    ) -> Vec<Span<'static>> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        for (suit, sym, red) in [
            ("spades", "♠", false),
            ("hearts", "♥", true),
            ("clubs", "♣", false),
            ("diamonds", "♦", true),
        ] {
            let ranks: Vec<&str> = cards
                .iter()
                .filter(|c| c.suit == suit)
                .map(|c| c.rank.as_str())
                .collect();
            let text = if ranks.is_empty() {
                "—".to_owned()
            } else {
                ranks.join(" ")
            };
            let style = if red {
                theme.fg(Slot::Error)
            } else {
                theme.text()
            };
            let sep = if spans.is_empty() { "" } else { "  " };
            spans.push(Span::styled(format!("{sep}{sym} "), style));
            spans.push(Span::styled(text, style.add_modifier(Modifier::BOLD)));
        }
        let mut used = 0;
        let mut out = Vec::new();
        for sp in spans {
            used += sp.width();
            if used > room {
                out.push(Span::styled("…", theme.muted()));
                break;
            }
            out.push(sp);
        }
        out
    }

    /// A trick as `N 7♠  E 9♠ (from the dummy)`.
    pub(super) fn trick_spans(
        &self,
        theme: &Theme,
        v: &TableView,
        trick: &[crate::session::table::TrickCard],
    ) -> Vec<Span<'static>> {
        let mut out = Vec::new();
        for (i, p) in trick.iter().enumerate() {
            let sep = if i == 0 { "" } else { "  " };
            out.push(Span::styled(
                format!("{sep}{} ", self.compass(v, &p.hand_owner)),
                theme.muted(),
            ));
            out.push(Span::styled(
                p.card.label(),
                card_style(theme, &p.card).add_modifier(Modifier::BOLD),
            ));
        }
        out
    }

    /// Bridge: the dealer and the auction, or the contract, the trick,
    /// the tricks won and the dummy.
    pub(super) fn bridge_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let Some(b) = v.bridge() else {
            return Vec::new();
        };
        let label = |s: &str| Span::styled(format!("{s:<9}"), theme.muted());
        let room = (w as usize).saturating_sub(9);
        let mut out = Vec::new();
        if v.phase == "auction" || b.contract.is_none() {
            out.push(Line::from(vec![
                label("dealer"),
                Span::styled(self.who(&b.dealer), theme.text()),
                Span::styled(
                    format!(" · the auction has {} calls", b.auction.len()),
                    theme.muted(),
                ),
            ]));
            // The latest calls that fit, oldest first.
            let mut calls: Vec<String> = Vec::new();
            let mut used = 0;
            for c in b.auction.iter().rev() {
                let t = format!("{} {}", self.compass(v, &c.public_key), c.label());
                if used + t.chars().count() + 3 > room {
                    calls.push("…".into());
                    break;
                }
                used += t.chars().count() + 3;
                calls.push(t);
            }
            calls.reverse();
            let text = if calls.is_empty() {
                format!("no call yet: {} first", does(self.who(&v.current), "calls"))
            } else {
                calls.join(" · ")
            };
            out.push(Line::from(vec![
                label("auction"),
                Span::styled(text, theme.text()),
            ]));
            return out;
        }
        if let Some(c) = &b.contract {
            let mut spans = vec![
                label("contract"),
                Span::styled(c.label(), theme.fg(Slot::Warn).add_modifier(Modifier::BOLD)),
                Span::styled(format!(" by {}", self.who(&b.declarer)), theme.text()),
                Span::styled(format!(" · dummy {}", self.who(&b.dummy)), theme.muted()),
                Span::styled(
                    format!(" · tricks NS {} EW {}", b.tricks_ns, b.tricks_ew),
                    theme.text(),
                ),
            ];
            if b.score_ns != 0 || b.score_ew != 0 {
                spans.push(Span::styled(
                    format!(" · points NS {} EW {}", b.score_ns, b.score_ew),
                    theme.muted(),
                ));
            }
            out.extend(wrap_spans(spans, w));
        }
        let mut spans = vec![label(&format!("trick {}", (b.tricks_played + 1).min(13)))];
        if !b.trick.is_empty() {
            spans.extend(self.trick_spans(theme, v, &b.trick));
        } else if let Some((winner, cards)) = &b.last_trick {
            spans.push(Span::styled(
                format!(
                    "{} leads · last trick to {}: ",
                    self.who(&b.hand_owner),
                    self.name(winner)
                ),
                theme.muted(),
            ));
            spans.extend(self.trick_spans(theme, v, cards));
        } else if v.phase == "playing" {
            spans.push(Span::styled(
                format!("{} makes the opening lead", self.who(&b.hand_owner)),
                theme.muted(),
            ));
        }
        out.push(Line::from(spans));
        if b.dummy_revealed && b.plays_dummy(&v.you) && v.phase == "playing" {
            // The picker holds the dummy's cards: yours are listed here.
            let mut spans = vec![label("you hold")];
            spans.extend(self.suit_spans(theme, &v.hand, room));
            out.push(Line::from(spans));
        } else if b.dummy_revealed && b.dummy != v.you {
            let mut spans = vec![label("dummy")];
            spans.extend(self.suit_spans(theme, &b.dummy_hand, room));
            out.push(Line::from(spans));
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
    fn bridge_events_read_as_sentences() {
        let name = |pk: &str| {
            if pk == "me" {
                "you".to_owned()
            } else {
                format!("<{pk}>")
            }
        };
        let alias = "contract-bridge-v1";
        let say = |ev: Map| event_text(alias, &ev, &name, None).unwrap();
        assert_eq!(
            say(
                obj! { "kind" => "bid", "public_key" => "a", "level" => 3, "denomination" => "nt" }
            ),
            "<a> bids 3NT"
        );
        assert_eq!(
            say(obj! { "kind" => "pass", "public_key" => "me" }),
            "you pass"
        );
        assert_eq!(
            say(obj! { "kind" => "double", "public_key" => "b" }),
            "<b> doubles"
        );
        assert_eq!(
            say(obj! {
                "kind" => "contract_set", "declarer" => "me", "dummy" => "c",
                "contract" => obj! { "level" => 4, "denomination" => "spades", "doubled" => 1 },
            }),
            "the contract is 4♠ doubled, declared by you; <c> is the dummy"
        );
        assert_eq!(
            say(
                obj! { "kind" => "bridge_card_played", "public_key" => "me", "hand_owner" => "c", "card" => std_card(12, "hearts") }
            ),
            "you play Q♥ from the dummy"
        );
        assert_eq!(
            say(
                obj! { "kind" => "bridge_trick_won", "winner" => "b", "partnership" => "ew", "trick_number" => 3 }
            ),
            "<b> wins trick 3 for EW"
        );
        assert_eq!(
            say(obj! {
                "kind" => "bridge_board_complete", "outcome" => "ns_down", "contract_score" => -100, "tricks" => 8,
                "scores" => obj! { "ns" => 0, "ew" => 100 },
            }),
            "NS go down with 8 tricks (100 to the defenders): NS 0 · EW 100"
        );
        // A call's kind is not the landlord's pass or bid.
        assert_eq!(
            event_text(
                "four-player-landlord-v1",
                &obj! { "kind" => "pass", "public_key" => "a" },
                &name,
                None
            )
            .unwrap(),
            "<a> passes"
        );
    }
}
