//! A four-seat card table (four-player-landlord-v1; texas-holdem-v1,
//! contract-bridge-v1 and aether-sigil-v1 with their own seat columns,
//! board lines and numbered choices) as its seat's files
//! tell it: the round, phase and stake; every seat with its name, kind
//! (you, a bot the host seated, a person), role, cards left, score and
//! whose turn it is; the landlord and the revealed bottom; the play to
//! beat and who made it; the table's log; your hand sorted and grouped by
//! rank with the picked cards raised above the rest; and the action line
//! (the bid choices, or how to play and pass). Drawn from a
//! [`TableView`] (`session::table`) and the screen's pick; nothing here
//! changes state. What a game's events say in the log is its adapter
//! ([`event_text`]). Each game's log sentences and board lines are its own
//! module (landlord, holdem, bridge, sigil, tractor, mahjong); your hand and
//! the action line are `prompt`'s.

mod bridge;
mod holdem;
mod landlord;
mod mahjong;
mod prompt;
mod sigil;
mod tractor;

pub use prompt::{CHOICE_PAGE, choice_label, hand_layout, hand_layout_by};

use crate::json::{Map, Value};
use crate::session::room::{RoomKind, short_key};
use crate::session::table::{Card, Play, Seat, TableView, bid_label};
use crate::tui::command::Command;
use crate::tui::keymap::{Context, Keymap};
use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::collections::{BTreeMap, BTreeSet};

/// Log entries a table keeps (the oldest go first).
pub const MAX_LOG: usize = 300;

/// Who sits in a seat, as far as the files tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeatKind {
    You,
    /// A bot this side's host seated (`bots/` of its state dir).
    Bot,
    /// Not a bot of the host's: a member who joined.
    Person,
    /// This side cannot tell (a guest's view).
    Unknown,
}

impl SeatKind {
    fn word(self) -> &'static str {
        match self {
            // The name column says it.
            SeatKind::You => "",
            SeatKind::Bot => "bot",
            SeatKind::Person => "person",
            SeatKind::Unknown => "",
        }
    }
}

/// One entry of the table's log: a game event of a frame (details.jsonl),
/// or a notice of the room (a refused action, a leader change).
#[derive(Debug, Clone, PartialEq)]
pub enum LogEntry {
    Event {
        time: String,
        event: Map,
    },
    /// A room event `room::notice_text` says something of (named when
    /// drawn, so nicknames that arrive later show).
    Notice {
        time: String,
        event: Map,
    },
}

impl LogEntry {
    /// `HH:MM:SS`.
    pub fn time(&self) -> &str {
        match self {
            LogEntry::Event { time, .. } | LogEntry::Notice { time, .. } => time,
        }
    }
}

/// The action line's state, from the screen.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pick<'a> {
    /// Index of the cursor in the (sorted) hand.
    pub cursor: usize,
    /// Card ids picked.
    pub selected: Option<&'a BTreeSet<String>>,
    /// The bids the rules allow now, and the one the cursor is on.
    pub bids: &'a [i64],
    pub bid_cursor: usize,
    /// The rules allow a pass now.
    pub can_pass: bool,
    /// The actions offered as numbered choices (hold'em's bets, bridge's
    /// calls), and the one the cursor is on.
    pub choices: &'a [Value],
    pub choice_cursor: usize,
    /// Ids of the cards the rules let this seat play now (bridge).
    pub playable: Option<&'a BTreeSet<String>>,
    /// An action is on its way to the table.
    pub waiting: bool,
}

/// Everything the table pane draws from.
pub struct TablePaint<'a> {
    /// The protocol's name (`Four-player Landlord`).
    pub name: &'a str,
    /// The state dir's name.
    pub title: &'a str,
    pub view: &'a Result<TableView, String>,
    /// Nothing dealt yet: the room is still seating (the status then).
    pub waiting: Option<&'a str>,
    pub kinds: &'a BTreeMap<String, SeatKind>,
    pub nicks: &'a BTreeMap<String, String>,
    pub log: &'a [LogEntry],
    pub pick: Pick<'a>,
    pub note: Option<&'a Note>,
    /// The session's status when nothing sends from it any more.
    pub ended: Option<&'a str>,
    /// The round's outcome (snapshot.json), once completed.
    pub outcome: Option<&'a str>,
    /// This seat's control mode.
    pub mode: &'a str,
    pub keymap: &'a Keymap,
    pub focused: bool,
}

/// What a game's event says in the log, if anything. `name` turns a
/// public key into what the seats list calls it; `view` (the table as it is
/// now) names the cards an event gives only by id (aether sigil's units).
pub fn event_text(
    alias: &str,
    ev: &Map,
    name: &dyn Fn(&str) -> String,
    view: Option<&TableView>,
) -> Option<String> {
    match alias {
        "four-player-landlord-v1" => landlord::landlord_event(ev, name),
        "texas-holdem-v1" => holdem::holdem_event(ev, name),
        "contract-bridge-v1" => bridge::bridge_event(ev, name),
        "aether-sigil-v1" => sigil::sigil_event(ev, name, view.and_then(TableView::sigil)),
        "upgrade-tractor-v1" => tractor::tractor_event(ev, name, view),
        "classical-mahjong-v1" => mahjong::mahjong_event(ev, name),
        _ => {
            let mut s = format!(
                "{} {}",
                ev.get_str("kind").unwrap_or("event"),
                crate::json::canonical::to_string_ordered(&Value::Object(ev.clone()))
            );
            cut(&mut s, 160);
            Some(s)
        }
    }
}

/// `bot-1 plays`, `you play`: a subject and its verb.
fn does(who: String, verb: &str) -> String {
    if who == "you" {
        let base = match verb {
            "is" => "are",
            "passes" => "pass",
            "takes" => "take",
            "goes" => "go",
            "has" => "have",
            v => v.strip_suffix('s').unwrap_or(v),
        };
        format!("you {base}")
    } else {
        format!("{who} {verb}")
    }
}

/// Events every table has (a seat leaving, coming back), and any other
/// event as its kind and fields.
fn shared_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    Some(match ev.get_str("kind")? {
        "member_rejoined" => format!("{} back", does(who("public_key"), "is")),
        "member_disconnected" => format!(
            "{} left the table ({})",
            who("public_key"),
            ev.get_str("reason").unwrap_or("no reason given")
        ),
        other => {
            let mut s = format!("{other} {}", short_json(ev));
            cut(&mut s, 160);
            s
        }
    })
}

/// The cards of an event's list, as they came.
fn event_cards(v: Option<&Value>) -> Vec<Card> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(64).filter_map(Card::parse).collect())
        .unwrap_or_default()
}

/// `NS`, `EW`: a bridge side.
fn side_word(side: &str) -> String {
    side.to_uppercase()
}

fn parse_card(o: &Map) -> Option<Card> {
    let text = |k: &str| o.get_str(k).unwrap_or("").to_owned();
    Some(Card {
        rank: text("rank"),
        value: o.get("value").and_then(Value::as_i64)?,
        suit: text("suit"),
        card_id: text("card_id"),
        copy: o.get("copy").and_then(Value::as_i64).unwrap_or(0),
    })
}

fn short_json(m: &Map) -> String {
    let rest: Map = m
        .iter()
        .filter(|(k, _)| *k != "kind")
        .map(|(k, v)| (k, v.clone()))
        .collect();
    crate::json::canonical::to_string_ordered(&Value::Object(rest))
}

/// `7♥ 7♠`.
pub fn labels(cards: &[Card]) -> String {
    cards.iter().map(Card::label).collect::<Vec<_>>().join(" ")
}

/// `pair of 7s`, `straight of 5 to J`, `triple of 9s with one`: what a
/// play of a climbing game is, for people.
pub fn play_words(p: &Play) -> String {
    let top = p.cards.iter().find(|c| c.value == p.primary);
    let rank = top
        .map(Card::rank_word)
        .unwrap_or_else(|| p.primary.to_string());
    match p.kind.as_str() {
        "single" => rank,
        "pair" | "triple" => format!("{} of {rank}s", p.kind),
        "triple_single" => format!("triple of {rank}s with one"),
        "triple_pair" => format!("triple of {rank}s with a pair"),
        "straight" | "pair_straight" | "airplane" | "airplane_single" | "airplane_pair" => {
            format!("{} to {rank}", p.kind_words())
        }
        "bomb" => format!("bomb of {} {rank}s", p.length),
        "joker_bomb" => format!("joker bomb of {}", p.length),
        _ => p.kind_words(),
    }
}

fn card_style(theme: &Theme, c: &Card) -> Style {
    if c.is_red() {
        theme.fg(Slot::Error)
    } else {
        theme.text()
    }
}

fn cut(s: &mut String, max: usize) {
    if s.chars().count() > max {
        let c: String = s.chars().take(max.saturating_sub(1)).collect();
        *s = c + "…";
    }
}

fn pad(s: &str, w: usize) -> String {
    let mut s = s.to_owned();
    cut(&mut s, w);
    format!("{s:<w$}")
}

impl TablePaint<'_> {
    fn you(&self) -> &str {
        self.view.as_ref().map(|v| v.you.as_str()).unwrap_or("")
    }

    /// What the table calls a seat's player: `you`, a nickname, else a
    /// short key.
    pub fn name(&self, pk: &str) -> String {
        if pk.is_empty() {
            return "?".into();
        }
        if pk == self.you() {
            return "you".into();
        }
        match self.nicks.get(pk) {
            Some(n) if !n.is_empty() => n.clone(),
            _ => short_key(pk),
        }
    }

    /// A player with their seat: `bot-2 (seat 2)`.
    fn who(&self, pk: &str) -> String {
        let seat = self
            .view
            .as_ref()
            .ok()
            .and_then(|v| v.seat_of(pk))
            .and_then(|s| s.seat);
        match seat {
            Some(n) if pk != self.you() => format!("{} (seat {n})", self.name(pk)),
            _ => self.name(pk),
        }
    }

    fn key(&self, c: Command) -> String {
        self.keymap
            .key_for(Context::Table, c)
            .unwrap_or_else(|| c.name().to_owned())
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let facts = self.facts();
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(self.focused))
            .title(Span::styled(
                format!(" {} {}", self.name, self.title),
                theme.title(),
            ))
            .title_bottom(Line::from(Span::styled(
                format!(" {facts} "),
                theme.muted(),
            )));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let w = inner.width;
        let v = match (self.view, self.waiting) {
            (_, Some(status)) => {
                let lines = vec![
                    Line::from(Span::styled(
                        format!("waiting for the table to deal ({status})…"),
                        theme.muted(),
                    )),
                    Line::from(Span::styled(
                        "four seats are taken first; bots fill the empty ones when the host seated them",
                        theme.muted(),
                    )),
                ];
                f.render_widget(
                    Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
                    inner,
                );
                return;
            }
            (Err(why), None) => {
                let lines = vec![
                    Line::from(Span::styled(
                        format!("the table's view is unreadable: {why}"),
                        theme.fg(Slot::Error),
                    )),
                    Line::from(Span::styled(
                        "it is shown again with the next good snapshot.json",
                        theme.muted(),
                    )),
                ];
                f.render_widget(
                    Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
                    inner,
                );
                return;
            }
            (Ok(v), None) => v,
        };
        let mut top: Vec<Line<'static>> = Vec::new();
        top.push(self.state_line(theme, v));
        top.extend(self.seat_lines(theme, v, w));
        top.extend(self.board_lines(theme, v, w));
        let hand = self.hand_lines(theme, v, w);
        let action = self.action_lines(theme, v, w);
        // Too tall for the pane: the board gives way (the state and the
        // seats stay), so the hand and the action line stay in sight.
        let room = (inner.height as usize).saturating_sub(hand.len() + action.len());
        let keep = 1 + v.seats.len();
        if top.len() > room && top.len() > keep {
            let shown = room.max(keep + 1) - 1;
            let hidden = top.len() - shown;
            top.truncate(shown);
            let mut more = format!("… {hidden} more lines of the board: a taller pane shows them");
            cut(&mut more, usize::from(w.max(1)));
            top.push(Line::from(Span::styled(more, theme.muted())));
        }
        let fixed = (top.len() + hand.len() + action.len()) as u16;
        let log_h = inner.height.saturating_sub(fixed);
        let mut lines = top;
        lines.extend(self.log_lines(theme, log_h as usize, w));
        lines.extend(hand);
        lines.extend(action);
        f.render_widget(Paragraph::new(lines), inner);
    }

    /// The border's facts: the session's state and this seat's mode.
    fn facts(&self) -> String {
        let mut facts = Vec::new();
        match self.ended {
            Some(s) => facts.push(s.to_owned()),
            None => facts.push("live".to_owned()),
        }
        if !self.mode.is_empty() {
            facts.push(format!("mode {}", self.mode));
        }
        if let Ok(v) = self.view
            && let Some(s) = v.you_seat
        {
            facts.push(format!("you: seat {s}"));
        }
        facts.join(" · ")
    }

    fn state_line(&self, theme: &Theme, v: &TableView) -> Line<'static> {
        let mut spans = Vec::new();
        if let Some(r) = v.round {
            let word = match v.alias.as_str() {
                "texas-holdem-v1" | "upgrade-tractor-v1" | "classical-mahjong-v1" => "hand",
                "contract-bridge-v1" => "board",
                "aether-sigil-v1" => "turn",
                _ => "round",
            };
            spans.push(Span::styled(format!("{word} {r}"), theme.text()));
            spans.push(Span::styled(" · ", theme.muted()));
        }
        // Tractor's trump and level come first: always in sight.
        spans.extend(self.tractor_state(theme, v));
        spans.extend(self.mahjong_state(theme, v));
        let mut phase = v.phase.clone();
        if let Some(h) = v.holdem()
            && v.phase == "betting"
            && !h.street.is_empty()
        {
            phase = format!("{phase} · {}", h.street);
        }
        spans.push(Span::styled(
            phase,
            theme.accent().add_modifier(Modifier::BOLD),
        ));
        let turn = if v.phase == "completed" {
            let o = match (v.alias.as_str(), self.outcome) {
                (_, Some("landlord")) => "the landlord won".to_owned(),
                (_, Some("farmers")) => "the farmers won".to_owned(),
                (_, Some("passed_out")) => "the board was passed out".to_owned(),
                ("contract-bridge-v1", Some(o)) => match o.split_once('_') {
                    Some((side, "made")) => format!("{} made the contract", side_word(side)),
                    Some((side, _)) => format!("{} went down", side_word(side)),
                    None => "board over".to_owned(),
                },
                ("upgrade-tractor-v1", Some(team)) if !team.is_empty() => {
                    let team = team.strip_prefix("team").unwrap_or(team);
                    format!("team {team} won the match")
                }
                ("classical-mahjong-v1", Some("draw")) => "the match is a draw".to_owned(),
                ("texas-holdem-v1" | "aether-sigil-v1" | "classical-mahjong-v1", Some(pk))
                    if !pk.is_empty() =>
                {
                    format!("{} won the match", self.who(pk))
                }
                _ => "round over".to_owned(),
            };
            Span::styled(format!(" · {o}"), theme.fg(Slot::Ok))
        } else if v.your_turn() {
            Span::styled(
                " · your turn",
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            )
        } else if !v.current.is_empty() {
            Span::styled(
                format!(" · {} to play", self.who(&v.current)),
                theme.muted(),
            )
        } else {
            Span::raw("")
        };
        spans.push(turn);
        if let Some(l) = v.landlord()
            && v.phase != "bidding"
        {
            let bombs = match l.bombs {
                0 => String::new(),
                1 => ", 1 bomb".into(),
                n => format!(", {n} bombs"),
            };
            spans.push(Span::styled(
                format!(
                    " · stake ×{} (bid {}{bombs})",
                    l.base(),
                    l.highest_bid.max(1)
                ),
                theme.muted(),
            ));
        }
        if let Some(h) = v.holdem() {
            spans.push(Span::styled(format!(" · pot {}", h.pot), theme.muted()));
        }
        if let Some(s) = v.sigil() {
            spans.push(Span::styled(
                format!(" · pile {}", s.draw_count),
                theme.muted(),
            ));
        }
        if let Some(b) = v.bridge() {
            let vul = match b.vulnerability.as_str() {
                "none" | "" => "none".to_owned(),
                "both" => "both".to_owned(),
                side => side_word(side),
            };
            spans.push(Span::styled(
                format!(" · you {} · vul {vul}", side_word(&b.side)),
                theme.muted(),
            ));
        }
        if !v.notice.is_empty() {
            spans.push(Span::styled(
                format!(" · {}", v.notice),
                theme.fg(Slot::Warn),
            ));
        }
        Line::from(spans)
    }

    fn seat_kind(&self, v: &TableView, pk: &str) -> SeatKind {
        self.kinds.get(pk).copied().unwrap_or(if pk == v.you {
            SeatKind::You
        } else {
            SeatKind::Unknown
        })
    }

    /// A hold'em, a bridge or an aether sigil seat: marker, seat, name,
    /// kind, then the role, the chips and the wager (hold'em), the role,
    /// the cards left and the side (bridge), or life, shield, aether and
    /// cards left (aether sigil), within `w` cells.
    fn other_seat_line(
        &self,
        theme: &Theme,
        v: &TableView,
        s: &Seat,
        name_w: usize,
        w: u16,
    ) -> Line<'static> {
        let turn = v.current == s.public_key && v.phase != "completed";
        let kind = self.seat_kind(v, &s.public_key);
        let mine = kind == SeatKind::You;
        let base = if mine { theme.accent() } else { theme.text() };
        let seat = s.seat.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
        let name = if mine {
            "you".to_owned()
        } else {
            self.name(&s.public_key)
        };
        let mut spans = vec![
            Span::styled(
                if turn { "▶" } else { " " },
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!("{seat:>2} "), theme.muted()),
            Span::styled(pad(&name, name_w), base.add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {:<6} ", kind.word()), theme.muted()),
        ];
        if let Some(sg) = v.sigil() {
            let room = (w as usize).saturating_sub(spans_width(&spans));
            let c = sg.channeler(&s.public_key);
            spans.extend(self.sigil_stats(theme, s, c, base, room));
        } else if v.tractor().is_some() {
            let room = (w as usize).saturating_sub(spans_width(&spans));
            spans.extend(self.tractor_seat(theme, v, s, base, room));
        } else if v.mahjong().is_some() {
            let room = (w as usize).saturating_sub(spans_width(&spans));
            spans.extend(self.mahjong_seat(theme, v, s, base, room));
        } else if v.holdem().is_some() {
            let unit = if name_w >= 14 { " chips" } else { "" };
            let stack = s.stack.map(|n| format!("{n:>6}{unit}")).unwrap_or_default();
            let role = match s.role.as_str() {
                "small blind" => "SB",
                "big blind" => "BB",
                r => r,
            };
            spans.push(Span::styled(pad(role, 7), theme.muted()));
            spans.push(Span::styled(stack, base));
            let state = if s.folded {
                Span::styled(" folded", theme.muted())
            } else if s.all_in {
                Span::styled(
                    format!(" all in ({} in)", s.wager.unwrap_or(0)),
                    theme.fg(Slot::Warn),
                )
            } else {
                match s.wager {
                    Some(n) if n > 0 => Span::styled(format!(" bet {n}"), base),
                    _ => Span::raw(""),
                }
            };
            spans.push(state);
        } else {
            let role_style = if s.role.contains("declarer") {
                theme.fg(Slot::Warn).add_modifier(Modifier::BOLD)
            } else {
                theme.muted()
            };
            let cards = s
                .cards_left
                .map(|n| format!("{n:>3} cards"))
                .unwrap_or_default();
            spans.push(Span::styled(pad(&s.role, 14), role_style));
            spans.push(Span::styled(cards, base));
        }
        Line::from(spans)
    }

    fn seat_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        // marker, seat, name, kind, role or bid, cards, score.
        let name_w = (w as usize).saturating_sub(36).clamp(9, 20);
        if v.landlord().is_none() {
            return v
                .seats
                .iter()
                .map(|s| self.other_seat_line(theme, v, s, name_w, w))
                .collect();
        }
        v.seats
            .iter()
            .map(|s| {
                let turn = v.current == s.public_key && v.phase != "completed";
                let kind =
                    self.kinds
                        .get(&s.public_key)
                        .copied()
                        .unwrap_or(if s.public_key == v.you {
                            SeatKind::You
                        } else {
                            SeatKind::Unknown
                        });
                let role = if v.phase == "bidding" || s.role == "unassigned" || s.role.is_empty() {
                    match s.bid {
                        Some(0) => "bid pass".to_owned(),
                        Some(b) => format!("bid {b}"),
                        None => String::new(),
                    }
                } else {
                    s.role.clone()
                };
                let seat = s.seat.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
                let name = if kind == SeatKind::You {
                    "you".to_owned()
                } else {
                    self.name(&s.public_key)
                };
                let cards = s
                    .cards_left
                    .map(|n| format!("{n:>2} cards"))
                    .unwrap_or_default();
                let score = s.score.map(|n| format!("{n:+}")).unwrap_or_default();
                let mine = kind == SeatKind::You;
                let base = if mine { theme.accent() } else { theme.text() };
                let role_style = if s.role == "landlord" {
                    theme.fg(Slot::Warn).add_modifier(Modifier::BOLD)
                } else {
                    theme.muted()
                };
                Line::from(vec![
                    Span::styled(
                        if turn { "▶" } else { " " },
                        theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(format!("{seat:>2} "), theme.muted()),
                    Span::styled(pad(&name, name_w), base.add_modifier(Modifier::BOLD)),
                    Span::styled(format!(" {:<6} ", kind.word()), theme.muted()),
                    Span::styled(pad(&role, 8), role_style),
                    Span::styled(format!(" {cards:>8} "), base),
                    Span::styled(format!("{score:>5}"), base),
                ])
            })
            .collect()
    }

    fn board_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        if v.holdem().is_some() {
            return self.holdem_lines(theme, v, w);
        }
        if v.bridge().is_some() {
            return self.bridge_lines(theme, v, w);
        }
        if v.sigil().is_some() {
            return self.sigil_lines(theme, v, w);
        }
        if v.tractor().is_some() {
            return self.tractor_lines(theme, v, w);
        }
        if v.mahjong().is_some() {
            return self.mahjong_lines(theme, v, w);
        }
        self.landlord_lines(theme, v, w)
    }

    fn log_lines(&self, theme: &Theme, h: usize, w: u16) -> Vec<Line<'static>> {
        if h == 0 {
            return Vec::new();
        }
        let alias = self.view.as_ref().map(|v| v.alias.as_str()).unwrap_or("");
        let view = self.view.as_ref().ok();
        let name = |pk: &str| self.name(pk);
        let mut out: Vec<Line<'static>> = Vec::new();
        for e in self.log.iter().rev() {
            if out.len() >= h {
                break;
            }
            let (text, style) = match e {
                LogEntry::Event { event, .. } => match event_text(alias, event, &name, view) {
                    Some(t) => (t, theme.text()),
                    None => continue,
                },
                LogEntry::Notice { event, .. } => {
                    match crate::session::room::notice_text(event, RoomKind::Other, &name) {
                        Some((t, true)) => (t, theme.fg(Slot::Error)),
                        Some((t, false)) => (t, theme.fg(Slot::System)),
                        None => continue,
                    }
                }
            };
            let mut text = text;
            cut(&mut text, (w as usize).saturating_sub(9).max(1));
            out.push(Line::from(vec![
                Span::styled(format!("{} ", e.time()), theme.muted()),
                Span::styled(text, style),
            ]));
        }
        if out.is_empty() {
            out.push(Line::from(Span::styled(
                "the table's log is empty so far",
                theme.muted(),
            )));
        }
        out.reverse();
        // The log sits at the bottom of its space, over the hand.
        let mut lines = vec![Line::raw(""); h.saturating_sub(out.len())];
        lines.extend(out);
        lines
    }
}

/// Spans broken into lines of at most `width` cells, between spans.
fn wrap_spans(spans: Vec<Span<'static>>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for sp in spans {
        let n = sp.width();
        if used + n > width && !line.is_empty() {
            out.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        // A line does not start with the space or the `·` between two
        // spans.
        let sp = if line.is_empty() && sp.content.starts_with(' ') {
            let trimmed = sp.content.trim_start();
            let trimmed = trimmed.strip_prefix("· ").unwrap_or(trimmed).to_owned();
            Span::styled(trimmed, sp.style)
        } else {
            sp
        };
        used += sp.width();
        line.push(sp);
    }
    if !line.is_empty() || out.is_empty() {
        out.push(Line::from(line));
    }
    out
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(Span::width).sum()
}

/// Cards as spans within `room` cells (`…` when they do not fit).
fn card_spans(theme: &Theme, cards: &[Card], room: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for (i, c) in cards.iter().enumerate() {
        let label = c.label();
        let need = label.chars().count() + usize::from(i > 0);
        if used + need + 2 > room && i + 1 < cards.len() {
            out.push(Span::styled(" …", theme.muted()));
            break;
        }
        if i > 0 {
            out.push(Span::raw(" "));
        }
        out.push(Span::styled(
            label,
            card_style(theme, c).add_modifier(Modifier::BOLD),
        ));
        used += need;
    }
    out
}

/// The time (`HH:MM:SS`) of a record's `ts`.
pub fn time_of(m: &Map) -> String {
    m.get_str("ts")
        .and_then(|t| t.get(11..19))
        .unwrap_or("--:--:--")
        .to_owned()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::obj;

    pub(in crate::tui::panes::table) fn card(rank: &str, value: i64, suit: &str) -> Card {
        Card {
            rank: rank.into(),
            value,
            suit: suit.into(),
            card_id: format!("{rank}{suit}"),
            copy: 0,
        }
    }

    pub(in crate::tui::panes::table) fn std_card(rank: i64, suit: &str) -> Value {
        Value::Object(obj! { "rank" => rank, "suit" => suit, "card_id" => format!("{rank}{suit}") })
    }

    #[test]
    fn a_hand_wraps_by_width_and_leaves_a_cell_between_ranks() {
        let hand = vec![
            card("7", 7, "hearts"),
            card("7", 7, "spades"),
            card("10", 10, "clubs"),
            card("Red Joker", 17, "joker"),
        ];
        // 7♥ at 0, 7♠ at 3, a gap, 10♣ at 7, a gap, RJ at 12.
        assert_eq!(
            hand_layout(&hand, 80),
            vec![vec![(0, 0), (1, 3), (2, 7), (3, 12)]]
        );
        let rows = hand_layout(&hand, 8);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1][0], (2, 0));
        // Every card is laid out once, however narrow.
        assert_eq!(hand_layout(&hand, 1).iter().map(Vec::len).sum::<usize>(), 4);
    }
}
