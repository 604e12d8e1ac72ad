//! A four-seat card table (four-player-landlord-v1; texas-holdem-v1 and
//! contract-bridge-v1 with their own seat columns, board lines and
//! numbered choices) as its seat's files
//! tell it: the round, phase and stake; every seat with its name, kind
//! (you, a bot the host seated, a person), role, cards left, score and
//! whose turn it is; the landlord and the revealed bottom; the play to
//! beat and who made it; the table's log; your hand sorted and grouped by
//! rank with the picked cards raised above the rest; and the action line
//! (the bid choices, or how to play and pass). Drawn from a
//! [`TableView`] (`session::table`) and the screen's pick; nothing here
//! changes state. What a game's events say in the log is its adapter
//! ([`event_text`]).

use crate::json::{Map, Value};
use crate::session::table::{Card, Play, Seat, TableView, bid_label};
use crate::tui::command::Command;
use crate::tui::keymap::{Context, Keymap};
use crate::session::room::{RoomKind, short_key};
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
    pub note: Option<&'a (bool, String)>,
    /// The session's status when nothing sends from it any more.
    pub ended: Option<&'a str>,
    /// The round's outcome (snapshot.json), once completed.
    pub outcome: Option<&'a str>,
    /// This seat's control mode.
    pub mode: &'a str,
    pub keymap: &'a Keymap,
    pub focused: bool,
}

/// What a game's event says in the log, if anything. `name` turns a public key into what the seats list calls it.
pub fn event_text(alias: &str, ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    match alias {
        "four-player-landlord-v1" => landlord_event(ev, name),
        "texas-holdem-v1" => holdem_event(ev, name),
        "contract-bridge-v1" => bridge_event(ev, name),
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

fn landlord_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
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

fn holdem_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
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

fn bridge_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
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
                "texas-holdem-v1" => "hand",
                "contract-bridge-v1" => "board",
                _ => "round",
            };
            spans.push(Span::styled(format!("{word} {r}"), theme.text()));
            spans.push(Span::styled(" · ", theme.muted()));
        }
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
                ("texas-holdem-v1", Some(pk)) => format!("{} won the match", self.who(pk)),
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

    /// A hold'em or a bridge seat: marker, seat, name, kind, role, then
    /// the chips and the wager (hold'em) or the cards left and the side
    /// (bridge).
    fn other_seat_line(
        &self,
        theme: &Theme,
        v: &TableView,
        s: &Seat,
        name_w: usize,
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
        if v.holdem().is_some() {
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
                .map(|s| self.other_seat_line(theme, v, s, name_w))
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

    /// `N`, `E`, `S`, `W`: a bridge seat's compass point.
    fn compass(&self, v: &TableView, pk: &str) -> &'static str {
        match v.seat_of(pk).and_then(|s| s.seat) {
            Some(0) => "N",
            Some(1) => "E",
            Some(2) => "S",
            Some(3) => "W",
            _ => "?",
        }
    }

    /// Hold'em: the board, the pot and the wager, the last showdown.
    fn holdem_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
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

    /// Cards by suit (`♠ A K 5  ♥ Q 3  ♣ —  ♦ J 9`) within `room` cells.
    fn suit_spans(&self, theme: &Theme, cards: &[Card], room: usize) -> Vec<Span<'static>> {
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
    fn trick_spans(
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
    fn bridge_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
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
                format!("no call yet: {} calls first", self.who(&v.current))
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

    fn log_lines(&self, theme: &Theme, h: usize, w: u16) -> Vec<Line<'static>> {
        if h == 0 {
            return Vec::new();
        }
        let alias = self.view.as_ref().map(|v| v.alias.as_str()).unwrap_or("");
        let name = |pk: &str| self.name(pk);
        let mut out: Vec<Line<'static>> = Vec::new();
        for e in self.log.iter().rev() {
            if out.len() >= h {
                break;
            }
            let (text, style) = match e {
                LogEntry::Event { event, .. } => match event_text(alias, event, &name) {
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

    fn hand_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
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
        if !picked.is_empty() {
            head.push(Span::styled(
                format!(" · picked {}: {}", picked.len(), labels(&picked)),
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

    fn action_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let muted = theme.muted();
        let mut line: Vec<Span<'static>> = Vec::new();
        if let Some(s) = self.ended {
            line.push(Span::styled(
                format!("this table has ended here ({s}): nothing more is sent"),
                muted,
            ));
        } else if v.phase == "completed" {
            line.push(Span::styled("the round is over", muted));
        } else if self.pick.waiting {
            line.push(Span::styled(
                "your action is on its way: waiting for the table…",
                theme.fg(Slot::Warn),
            ));
        } else if !v.your_turn() {
            let meanwhile = if v.landlord().is_some() {
                " · you may pick cards meanwhile"
            } else {
                ""
            };
            line.push(Span::styled(
                format!("waiting for {}{meanwhile}", self.who(&v.current)),
                muted,
            ));
        } else if !self.pick.choices.is_empty() {
            line.extend(self.choice_spans(theme, v));
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
        if let Some((ok, text)) = self.note {
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
}

/// What a hold'em or a bridge choice says: `call 10`, `raise to 40`,
/// `all in 990`, `pass`, `double`, `3NT`.
pub fn choice_label(a: &Value, v: &TableView) -> String {
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

/// Choices the number keys reach at once (1–9): more are paged.
pub const CHOICE_PAGE: usize = 9;

impl TablePaint<'_> {
    /// The numbered choices of the page the cursor is on, and the keys.
    fn choice_spans(&self, theme: &Theme, v: &TableView) -> Vec<Span<'static>> {
        let muted = theme.muted();
        let page = CHOICE_PAGE;
        let all = self.pick.choices;
        let cur = self.pick.choice_cursor.min(all.len().saturating_sub(1));
        let start = cur / page * page;
        let what = if v.holdem().is_some() {
            "your action "
        } else {
            "your call "
        };
        let mut line = vec![Span::styled(
            what,
            theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
        )];
        for (n, a) in all.iter().enumerate().skip(start).take(page) {
            let text = format!("{} {}", n - start + 1, choice_label(a, v));
            let style = if n == cur {
                theme.cursor()
            } else {
                theme.accent()
            };
            line.push(Span::styled(format!("[{text}]"), style));
            line.push(Span::raw(" "));
        }
        let pages = all.len().div_ceil(page);
        if pages > 1 {
            line.push(Span::styled(
                format!(
                    "page {}/{pages}: {}/{} for more · ",
                    start / page + 1,
                    self.key(Command::Up),
                    self.key(Command::Down)
                ),
                muted,
            ));
        }
        let send = if v.holdem().is_some() {
            "sends"
        } else {
            "calls"
        };
        line.push(Span::styled(
            format!("{} {send} the marked one", self.key(Command::Submit)),
            muted,
        ));
        line
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
mod tests {
    use super::*;
    use crate::obj;

    fn card(rank: &str, value: i64, suit: &str) -> Card {
        Card {
            rank: rank.into(),
            value,
            suit: suit.into(),
            card_id: format!("{rank}{suit}"),
            copy: 0,
        }
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
            event_text(alias, &ev, &name).unwrap(),
            "<a> plays pair: 7♥ 7♠"
        );
        let bid = obj! { "kind" => "bid", "public_key" => "b", "value" => 0 };
        assert_eq!(
            event_text(alias, &bid, &name).unwrap(),
            "<b> passes the bid"
        );
        let over = obj! {
            "kind" => "game_over", "outcome" => "farmers", "winner" => "a",
            "score_delta" => obj! { "a" => 2, "b" => -6 },
        };
        assert_eq!(
            event_text(alias, &over, &name).unwrap(),
            "<a> went out: the farmers win (<a> +2, <b> -6)"
        );
        assert!(event_text(alias, &obj! { "no" => "kind" }, &name).is_none());
        // Your own moves read as you say them.
        let you = |_: &str| "you".to_owned();
        assert_eq!(
            event_text(alias, &ev, &you).unwrap(),
            "you play pair: 7♥ 7♠"
        );
        let lead = obj! { "kind" => "trick_reset", "public_key" => "a" };
        assert_eq!(
            event_text(alias, &lead, &you).unwrap(),
            "you take the trick and lead"
        );
    }

    fn std_card(rank: i64, suit: &str) -> Value {
        Value::Object(obj! { "rank" => rank, "suit" => suit, "card_id" => format!("{rank}{suit}") })
    }

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
        let say = |ev: Map| event_text(alias, &ev, &name).unwrap();
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
        let say = |ev: Map| event_text(alias, &ev, &name).unwrap();
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
                &name
            )
            .unwrap(),
            "<a> passes"
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
