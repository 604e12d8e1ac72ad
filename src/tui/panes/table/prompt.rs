//! Your side of the table pane: your hand sorted and grouped, the picked
//! cards raised, and the action line (the legal choices numbered, or how to
//! play and pass).

use super::*;
use crate::tui::note::Note;

/// Choices the number keys reach at once (1–9): more are paged.
pub const CHOICE_PAGE: usize = 9;

/// What a hold'em, a bridge or an aether sigil choice says: `call 10`,
/// `raise to 40`, `all in 990`, `pass`, `double`, `3NT`, `summon Glass
/// Hound`, `Cinder Shot at bot-1`, `Glass Hound → bot-2`, `end turn`.
/// `name` says who a public key is; `wide`: room for a target unit's owner
/// and stats even when its name alone tells it apart.
pub fn choice_label(a: &Value, v: &TableView, name: &dyn Fn(&str) -> String, wide: bool) -> String {
    if v.sigil().is_some() {
        return super::sigil::sigil_choice(a, v, name, wide);
    }
    if v.tractor().is_some() {
        return super::tractor::tractor_choice(a, v);
    }
    if v.mahjong().is_some() {
        return super::mahjong::mahjong_choice(a, v);
    }
    let n = |k: &str| a.get(k).and_then(Value::as_i64).unwrap_or(0);
    let h = v.holdem();
    match a.get_str("kind").unwrap_or("?") {
        "call" => format!("call {}", h.map_or(0, |h| h.to_call)),
        "bet" => format!("bet {}", n("amount")),
        "raise" => format!("raise to {}", n("amount")),
        "all_in" => format!("all in {}", h.map_or(0, |h| h.max_to)),
        "bid" => bid_label(n("level"), a.get_str("denomination").unwrap_or("?")),
        k => k.replace('_', " "),
    }
}

/// Where each card of a hand goes: rows of (index, column), `width` cells
/// wide. A card takes a lead cell (the cursor's mark) and its label; a new
/// rank starts one cell further on.
pub fn hand_layout(hand: &[Card], width: u16) -> Vec<Vec<(usize, u16)>> {
    hand_layout_by(hand, width, &|c| c.value)
}

/// [`hand_layout`] with a cell between cards of different `group`s (the
/// rank, or the suit at bridge).
pub fn hand_layout_by(
    hand: &[Card],
    width: u16,
    group: &dyn Fn(&Card) -> i64,
) -> Vec<Vec<(usize, u16)>> {
    let width = width.max(6);
    let mut rows: Vec<Vec<(usize, u16)>> = Vec::new();
    let mut row: Vec<(usize, u16)> = Vec::new();
    let mut x: u16 = 0;
    for (i, c) in hand.iter().enumerate() {
        let w = 1 + c.label().chars().count() as u16;
        let gap = u16::from(i > 0 && group(&hand[i - 1]) != group(c) && !row.is_empty());
        if !row.is_empty() && x + gap + w > width {
            rows.push(std::mem::take(&mut row));
            x = 0;
        }
        let at = if row.is_empty() { 0 } else { x + gap };
        row.push((i, at));
        x = at + w;
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

impl TablePaint<'_> {
    pub(super) fn hand_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        if v.sigil().is_some() {
            return self.sigil_hand_lines(theme, v, w);
        }
        if v.mahjong().is_some() {
            return self.mahjong_hand_lines(theme, v, w);
        }
        let empty = BTreeSet::new();
        let selected = self.pick.selected.unwrap_or(&empty);
        let hand = v.pick_hand();
        let picked: Vec<Card> = hand
            .iter()
            .filter(|c| selected.contains(&c.card_id))
            .cloned()
            .collect();
        let dummy = v
            .bridge()
            .is_some_and(|b| v.phase == "playing" && b.plays_dummy(&v.you));
        let whose = if dummy {
            "the dummy's hand (you play it) "
        } else if v.holdem().is_some() {
            "your hole cards "
        } else {
            "your hand "
        };
        let mut head = vec![
            Span::styled(whose, theme.muted()),
            Span::styled(format!("{} cards", hand.len()), theme.text()),
        ];
        // Tractor's burial counts the picked cards against the kitty's.
        let of = v
            .tractor()
            .filter(|_| v.phase == "bury" && v.your_turn())
            .map(|g| format!(" of {}", g.kitty_count))
            .unwrap_or_default();
        if !picked.is_empty() {
            head.push(Span::styled(
                format!(" · picked {}{of}: {}", picked.len(), labels(&picked)),
                theme.accent(),
            ));
        }
        let mut out = vec![Line::from(head)];
        if hand.is_empty() {
            return out;
        }
        let bridge = v.bridge().is_some();
        let rows = if bridge {
            hand_layout_by(hand, w, &Card::suit_group)
        } else if let Some(g) = v.tractor() {
            hand_layout_by(hand, w, &|c| g.hand_group(c))
        } else {
            hand_layout(hand, w)
        };
        // No cursor on cards nothing is done with (hold'em's hole cards).
        let cursor_on = self.focused && v.holdem().is_none();
        for row in rows {
            // Picked cards are raised onto the upper line.
            let mut up: Vec<Span<'static>> = Vec::new();
            let mut down: Vec<Span<'static>> = Vec::new();
            let (mut x_up, mut x_down) = (0u16, 0u16);
            for (i, x) in row {
                let c = &hand[i];
                let raised = selected.contains(&c.card_id);
                let cursor = i == self.pick.cursor && cursor_on;
                // At bridge, on your turn, the cards that may not be
                // played now are dimmed.
                let barred = self
                    .pick
                    .playable
                    .is_some_and(|p| !p.is_empty() && !p.contains(&c.card_id));
                let (line, at) = if raised {
                    (&mut up, &mut x_up)
                } else {
                    (&mut down, &mut x_down)
                };
                if x > *at {
                    line.push(Span::raw(" ".repeat((x - *at) as usize)));
                }
                let mark = if cursor { "›" } else { " " };
                line.push(Span::styled(
                    mark,
                    theme.accent().add_modifier(Modifier::BOLD),
                ));
                let mut style = card_style(theme, c).add_modifier(Modifier::BOLD);
                if barred {
                    style = theme.muted();
                }
                if cursor {
                    style = theme.cursor();
                } else if raised {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                let label = c.label();
                *at = x + 1 + label.chars().count() as u16;
                line.push(Span::styled(label, style));
            }
            out.push(Line::from(up));
            out.push(Line::from(down));
        }
        out
    }

    pub(super) fn action_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let muted = theme.muted();
        let mut line: Vec<Span<'static>> = Vec::new();
        if let Some(s) = self.ended {
            line.push(Span::styled(
                format!("this table has ended here ({s}): nothing more is sent"),
                muted,
            ));
        } else if v.phase == "completed" {
            let over = if v.sigil().is_some() || v.mahjong().is_some() {
                "the match is over"
            } else {
                "the round is over"
            };
            line.push(Span::styled(over, muted));
        } else if self.pick.waiting {
            line.push(Span::styled(
                "your action is on its way: waiting for the table…",
                theme.fg(Slot::Warn),
            ));
        } else if !v.your_turn() {
            let meanwhile = if v.landlord().is_some() || v.tractor().is_some() {
                " · you may pick cards meanwhile"
            } else {
                ""
            };
            let waiting = self
                .tractor_waiting(v)
                .or_else(|| self.mahjong_waiting(v))
                .unwrap_or_else(|| format!("waiting for {}", self.who(&v.current)));
            line.push(Span::styled(format!("{waiting}{meanwhile}"), muted));
        } else if v.mahjong().is_some() {
            line.extend(self.mahjong_action(theme, v, w));
        } else if !self.pick.choices.is_empty() {
            line.extend(self.choice_spans(theme, v, w));
        } else if v.tractor().is_some() {
            line.extend(self.tractor_action(theme, v));
        } else if let Some(b) = v.bridge()
            && v.phase == "playing"
        {
            let from = if b.plays_dummy(&v.you) {
                "from the dummy "
            } else {
                ""
            };
            line.push(Span::styled(
                format!("your card {from}· "),
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            ));
            let mut keys = vec![
                format!("{} picks", self.key(Command::SelectCard)),
                format!("{} plays it", self.key(Command::Submit)),
            ];
            if let Some(led) = b.trick.first() {
                keys.push(format!("follow {} if you can", led.card.suit_symbol()));
            }
            for (i, k) in keys.into_iter().enumerate() {
                let sep = if i == 0 { "" } else { " · " };
                line.push(Span::styled(format!("{sep}{k}"), muted));
            }
        } else if v.phase == "bidding" {
            line.push(Span::styled(
                "your bid ",
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            ));
            for (n, b) in self.pick.bids.iter().enumerate() {
                let what = if *b == 0 {
                    "pass".to_owned()
                } else {
                    format!("bid {b}")
                };
                let text = format!("{} {what}", n + 1);
                let style = if n == self.pick.bid_cursor {
                    theme.cursor()
                } else {
                    theme.accent()
                };
                line.push(Span::styled(format!("[{text}]"), style));
                line.push(Span::raw(" "));
            }
            line.push(Span::styled(
                format!("{} bids the marked one", self.key(Command::Submit)),
                muted,
            ));
        } else {
            line.push(Span::styled(
                "your turn ",
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            ));
            let mut keys = vec![
                format!("{} picks", self.key(Command::SelectCard)),
                format!("{} picks the rank", self.key(Command::SelectGroup)),
                format!("{} plays", self.key(Command::Submit)),
            ];
            if self.pick.can_pass {
                keys.push(format!("{} passes", self.key(Command::PassTurn)));
            }
            for (i, k) in keys.into_iter().enumerate() {
                let sep = if i == 0 { "" } else { " · " };
                line.push(Span::styled(format!("{sep}{k}"), muted));
            }
        }
        let mut out = wrap_spans(line, w);
        if let Some(Note { ok, text }) = self.note {
            let mut t = text.clone();
            cut(&mut t, (w as usize).max(1));
            out.push(Line::from(Span::styled(
                t,
                if *ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            )));
        }
        out
    }

    /// The numbered choices of the page the cursor is on, and the keys.
    pub(super) fn choice_spans(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Span<'static>> {
        let muted = theme.muted();
        let page = CHOICE_PAGE;
        let all = self.pick.choices;
        let cur = self.pick.choice_cursor.min(all.len().saturating_sub(1));
        let start = cur / page * page;
        let what = if v.holdem().is_some() || v.sigil().is_some() {
            "your action "
        } else if v.tractor().is_some() {
            "declare "
        } else {
            "your call "
        };
        let name = |pk: &str| self.name(pk);
        let mut line = vec![Span::styled(
            what,
            theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
        )];
        for (n, a) in all.iter().enumerate().skip(start).take(page) {
            let mut text = format!("{} {}", n - start + 1, choice_label(a, v, &name, w >= 80));
            // A choice is never wider than the line.
            cut(&mut text, (w as usize).saturating_sub(2).max(1));
            let style = if n == cur {
                theme.cursor()
            } else {
                theme.accent()
            };
            line.push(Span::styled(format!("[{text}]"), style));
            line.push(Span::raw(" "));
        }
        // Aether sigil's choices are many and long: its keys are said
        // shortly in a narrow pane.
        let short = v.sigil().is_some() && w < 80;
        let pages = all.len().div_ceil(page);
        if pages > 1 {
            let (up, down) = (self.key(Command::Up), self.key(Command::Down));
            let text = if short {
                format!("page {}/{pages} ({up}/{down}) · ", start / page + 1)
            } else {
                format!("page {}/{pages}: {up}/{down} for more · ", start / page + 1)
            };
            line.push(Span::styled(text, muted));
        }
        let send = if v.holdem().is_some() || v.sigil().is_some() || v.tractor().is_some() {
            "sends"
        } else {
            "calls"
        };
        let what = if short { "" } else { " the marked one" };
        line.push(Span::styled(
            format!("{} {send}{what}", self.key(Command::Submit)),
            muted,
        ));
        if v.sigil().is_some() {
            line.push(Span::styled(
                format!(" · {} ends the turn", self.key(Command::PassTurn)),
                muted,
            ));
        }
        if v.tractor().is_some() {
            line.push(Span::styled(
                format!(" · {} passes", self.key(Command::PassTurn)),
                muted,
            ));
        }
        line
    }
}
