//! The attached session when it is a card table (a protocol of
//! `protocols::tables::TABLES` with a view in `session::table`): the seat's
//! typed view, the cards picked in the hand, the table's log (the game's
//! events from details.jsonl, the room's notices from events.jsonl), who
//! sits where (the host's `bots/`), and the actions: a play of the picked
//! cards, a bid, a pass; at hold'em and bridge the legal bets and calls as
//! numbered choices, and bridge's one card (from the dummy's hand when the
//! declarer plays it); at aether sigil every legal action (a card with its
//! target, an attack, ending the turn, conceding) as a numbered choice, and
//! `p` ends the turn; at tractor the declarations (and the pass) as
//! numbered choices, the burial of eight and the plays as picked cards; at
//! mahjong the discard as one picked tile, a win or a concealed kong as
//! numbered choices, and in a claim window the legal claims as numbered
//! choices (or the picked tiles of one). Only what the table's rules allow now is sent
//! (`Table::is_legal_selection`, `Table::legal_actions`); anything else is
//! refused with the reason. An action is queued in the room's
//! `group-actions.jsonl` by a task, exactly as `palaver session action`
//! queues it, and its result comes back as `Report::RoomAction`.

use super::{Attached, SessionsView, say};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables;
use crate::session::room::{self, RoomKind};
use crate::session::table::{Card, Play, TableView};
use crate::tui::command::Command;
use crate::tui::effect::{Effects, SessionTask};
use crate::tui::panes::table::{self as pane, LogEntry, MAX_LOG, SeatKind};
use std::collections::{BTreeMap, BTreeSet};

/// Cards a hand may hold for the console to ask the rules about it (a
/// landlord holds at most 33).
const MAX_HAND: usize = 128;

/// Choices the number keys reach at once (1–9): more are paged (the pane
/// draws the pages, so the number lives there).
pub use crate::tui::panes::table::CHOICE_PAGE;

/// What the console keeps of an attached table besides its files.
#[derive(Debug, Clone)]
pub struct TableState {
    pub alias: String,
    /// The protocol's name (`Four-player Landlord`).
    pub name: String,
    /// The seat's view as the snapshot has it (the rules read this).
    pub raw: Value,
    pub view: Result<TableView, String>,
    /// The frame the view is of (`group.seq`).
    pub seq: Option<i64>,
    /// The hand's cursor (an index into the sorted hand).
    pub cursor: usize,
    /// Card ids picked.
    pub selected: BTreeSet<String>,
    /// The bids the rules allow now, and the one the cursor is on.
    pub bids: Vec<i64>,
    pub bid_cursor: usize,
    /// The rules allow a pass now.
    pub can_pass: bool,
    /// Every action the rules allow now (`Table::legal_actions`).
    pub legal: Vec<Value>,
    /// The actions offered as numbered choices (hold'em's bets, bridge's
    /// calls), and the one the cursor is on.
    pub choices: Vec<Value>,
    pub choice_cursor: usize,
    pub log: Vec<LogEntry>,
    /// The last action's result, or why one was refused.
    pub note: Option<(bool, String)>,
    /// An action was queued at this frame and the table has not moved
    /// since (`Some(None)`: queued before any frame).
    pub sent_at: Option<Option<i64>>,
    /// The bots the host seated: (member id, seat).
    pub bots: Vec<(String, Option<i64>)>,
    /// What sits in each seat, by public key.
    pub kinds: BTreeMap<String, SeatKind>,
}

/// What a watch update says that a table needs.
pub(super) struct TableNews {
    pub snapshot: bool,
    pub session: bool,
    /// New details.jsonl records.
    pub details: Vec<Map>,
    /// New room events (refused actions, leader changes).
    pub events: Vec<Map>,
    pub bots: Option<Vec<(String, Option<i64>)>>,
}

/// The table alias of a protocol id, when palaver can show it as a table.
pub fn table_alias(pid: &str) -> Option<String> {
    let alias = crate::library::Library::bundled()
        .entries()
        .iter()
        .find(|e| e.protocol_id == pid)?
        .alias
        .clone();
    (tables::TABLES.contains(&alias.as_str())
        && crate::session::table::VIEWS.contains(&alias.as_str()))
    .then_some(alias)
}

impl TableState {
    fn new(alias: String) -> TableState {
        let name = crate::library::bundled_spec(&alias)
            .and_then(|s| s.name())
            .unwrap_or("Table")
            .to_owned();
        TableState {
            alias,
            name,
            raw: Value::Null,
            view: Err("nothing dealt yet".into()),
            seq: None,
            cursor: 0,
            selected: BTreeSet::new(),
            bids: Vec::new(),
            bid_cursor: 0,
            can_pass: false,
            legal: Vec::new(),
            choices: Vec::new(),
            choice_cursor: 0,
            log: Vec::new(),
            note: None,
            sent_at: None,
            bots: Vec::new(),
            kinds: BTreeMap::new(),
        }
    }

    /// Has the table dealt (is there a view)?
    pub fn dealt(&self) -> bool {
        matches!(&self.raw, Value::Object(m) if !m.is_empty())
    }

    pub fn waiting(&self) -> bool {
        self.sent_at.is_some()
    }

    fn rules(&self, options: &Map) -> Option<Box<dyn tables::Table>> {
        tables::table_for_alias(&self.alias, options)
    }

    /// The cards the picker works on (the dummy's while the declarer
    /// plays them).
    fn hand(&self) -> &[Card] {
        self.view.as_ref().map(|v| v.pick_hand()).unwrap_or(&[])
    }

    /// Takes a new snapshot: the view, the legal actions, the pick kept
    /// on the cards still in the hand.
    fn take_snapshot(&mut self, snapshot: &Map, options: &Map) {
        let at_cursor = self.hand().get(self.cursor).map(|c| c.card_id.clone());
        self.raw = snapshot.get("group_view").cloned().unwrap_or(Value::Null);
        self.seq = snapshot
            .get("group")
            .and_then(|g| g.get("seq"))
            .and_then(Value::as_i64);
        let held = self
            .raw
            .get("my_hand")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        self.view = if !self.dealt() {
            Err("nothing dealt yet".into())
        } else if held > MAX_HAND {
            // The rules' search over a hand grows with its size: a view no
            // table deals is not handed to them.
            Err(format!(
                "its hand holds {held} cards, more than a table deals ({MAX_HAND})"
            ))
        } else {
            let events = snapshot
                .get("group_events")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            TableView::parse_at(&self.alias, &self.raw, events)
        };
        let legal = match (&self.view, self.rules(options)) {
            (Ok(_), Some(r)) => r.legal_actions(&self.raw),
            _ => Vec::new(),
        };
        self.bids = legal
            .iter()
            .filter(|a| a.get_str("kind") == Some("bid"))
            .filter_map(|a| a.get("value").and_then(Value::as_i64))
            .collect();
        self.bid_cursor = self.bid_cursor.min(self.bids.len().saturating_sub(1));
        self.can_pass = legal.iter().any(|a| a.get_str("kind") == Some("pass"));
        // Hold'em's bets, bridge's calls and every action of aether sigil
        // are choices; cards and the landlord's bids are not.
        let old = self.choices.get(self.choice_cursor).cloned();
        self.choices = match self.alias.as_str() {
            SIGIL => legal.clone(),
            // Tractor's declarations (and the pass) are choices; the
            // burial and the plays are picked cards.
            TRACTOR if self.raw.get_str("phase") == Some("declaration") => legal.clone(),
            // Mahjong's claims are choices; on its turn a win and the
            // concealed kongs are, the discard is a picked tile.
            MAHJONG if self.raw.get_str("phase") == Some("claim") => legal.clone(),
            MAHJONG => legal
                .iter()
                .filter(|a| a.get_str("kind") != Some("discard"))
                .cloned()
                .collect(),
            "texas-holdem-v1" | "contract-bridge-v1" => legal
                .iter()
                .filter(|a| a.get_str("kind") != Some("play"))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        self.choice_cursor = old
            .and_then(|o| self.choices.iter().position(|c| *c == o))
            .unwrap_or(0);
        self.legal = legal;
        let ids: BTreeSet<String> = self.hand().iter().map(|c| c.card_id.clone()).collect();
        self.selected.retain(|id| ids.contains(id));
        self.cursor = at_cursor
            .and_then(|id| self.hand().iter().position(|c| c.card_id == id))
            .unwrap_or(self.cursor)
            .min(self.hand().len().saturating_sub(1));
        // The table moved on: whatever was sent has been taken (or refused).
        if self.sent_at.is_some_and(|at| at != self.seq) {
            self.sent_at = None;
        }
    }

    /// Adds an entry in time order (frames and notices come from two
    /// files, read in one go).
    fn push_log(&mut self, e: LogEntry) {
        let at = self.log.partition_point(|x| x.time() <= e.time());
        self.log.insert(at, e);
        let over = self.log.len().saturating_sub(MAX_LOG);
        self.log.drain(..over);
    }

    /// Who sits where: you, the host's bots, and (on the host's side)
    /// people; a guest cannot tell bots from people.
    fn seat_kinds(&mut self, snapshot: &Map, host_side: bool) {
        let Ok(v) = &self.view else {
            return;
        };
        let members: Vec<(String, String, Option<i64>)> = snapshot
            .get("group")
            .and_then(|g| g.get("members"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .take(64)
                    .map(|m| {
                        (
                            m.get_str("member_id").unwrap_or("").to_owned(),
                            m.get_str("public_key").unwrap_or("").to_owned(),
                            m.get("seat").and_then(Value::as_i64),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut kinds = BTreeMap::new();
        for s in &v.seats {
            let member = members.iter().find(|m| m.1 == s.public_key);
            let bot = self.bots.iter().any(|(id, seat)| match member {
                Some((mid, _, _)) if !mid.is_empty() => mid == id,
                _ => seat.is_some() && *seat == s.seat,
            });
            let kind = if s.public_key == v.you {
                SeatKind::You
            } else if bot {
                SeatKind::Bot
            } else if host_side {
                SeatKind::Person
            } else {
                SeatKind::Unknown
            };
            kinds.insert(s.public_key.clone(), kind);
        }
        self.kinds = kinds;
    }

    /// What groups the hand: the rank, the suit at bridge, the class
    /// (the trumps, then each plain suit) at tractor.
    fn group(&self, c: &Card) -> i64 {
        // Mahjong: the suit (a tile's value is its face, 0–33).
        if self.alias == MAHJONG {
            return match c.value {
                0..27 => c.value / 9,
                27..31 => 3,
                31..34 => 4,
                _ => 5,
            };
        }
        if let Ok(v) = &self.view
            && let Some(g) = v.tractor()
        {
            return g.class_group(c);
        }
        if self.alias == "contract-bridge-v1" {
            c.suit_group()
        } else {
            c.value
        }
    }

    /// Moves the cursor to the first card of the previous (`-1`) or next
    /// (`1`) rank (suit at bridge).
    fn jump_rank(&mut self, dir: i32) {
        let hand = self.hand();
        let Some(here) = hand.get(self.cursor).map(|c| self.group(c)) else {
            return;
        };
        let target = if dir < 0 {
            let prev = hand[..self.cursor]
                .iter()
                .rev()
                .find(|c| self.group(c) != here)
                .map(|c| self.group(c));
            prev.and_then(|v| hand.iter().position(|c| self.group(c) == v))
        } else {
            hand.iter()
                .enumerate()
                .skip(self.cursor)
                .find(|(_, c)| self.group(c) != here)
                .map(|(i, _)| i)
        };
        if let Some(i) = target {
            self.cursor = i;
        }
    }

    fn toggle_card(&mut self) {
        if let Some(id) = self.hand().get(self.cursor).map(|c| c.card_id.clone())
            && !self.selected.remove(&id)
        {
            if self.alias == "contract-bridge-v1" {
                // One card is played at a time.
                self.selected.clear();
            }
            self.selected.insert(id);
        }
    }

    /// Ids of the cards the rules let this seat play now (empty when
    /// none or when cards are not played one by one).
    pub fn playable_ids(&self) -> BTreeSet<String> {
        // Tractor's declarer buries any card but those it declared with.
        if let Ok(v) = &self.view
            && let Some(g) = v.tractor()
            && v.phase == "bury"
            && v.your_turn()
        {
            return v
                .hand
                .iter()
                .filter(|c| !g.protected().contains(&c.card_id))
                .map(|c| c.card_id.clone())
                .collect();
        }
        if self.alias != "contract-bridge-v1" {
            return BTreeSet::new();
        }
        self.legal
            .iter()
            .filter(|a| a.get_str("kind") == Some("play"))
            .filter_map(|a| a.get_str("card_id").map(str::to_owned))
            .collect()
    }

    /// The choices on the page the cursor is on: where it starts, and
    /// how many there are.
    pub fn choice_page(&self) -> (usize, usize) {
        let start = self.choice_cursor / CHOICE_PAGE * CHOICE_PAGE;
        let n = self.choices.len().saturating_sub(start).min(CHOICE_PAGE);
        (start, n)
    }

    /// Picks every card of the cursor's rank (at tractor: of its face, a
    /// pair), or unpicks them all when they are all picked.
    fn toggle_rank(&mut self) {
        let Some((v, suit)) = self
            .hand()
            .get(self.cursor)
            .map(|c| (c.value, c.suit.clone()))
        else {
            return;
        };
        let face = self.alias == TRACTOR;
        let ids: Vec<String> = self
            .hand()
            .iter()
            .filter(|c| c.value == v && (!face || c.suit == suit))
            .map(|c| c.card_id.clone())
            .collect();
        if ids.iter().all(|id| self.selected.contains(id)) {
            for id in &ids {
                self.selected.remove(id);
            }
        } else {
            self.selected.extend(ids);
        }
    }

    /// The picked cards' ids, in hand order.
    fn picked_ids(&self) -> Vec<String> {
        self.hand()
            .iter()
            .filter(|c| self.selected.contains(&c.card_id))
            .map(|c| c.card_id.clone())
            .collect()
    }
}

/// What the table calls a player: you, a nickname, else a short key; with
/// the seat.
fn who(v: &TableView, nicks: &BTreeMap<String, String>, pk: &str) -> String {
    if pk == v.you {
        return "you".into();
    }
    let name = match nicks.get(pk) {
        Some(n) if !n.is_empty() => n.clone(),
        _ => room::short_key(pk),
    };
    match v.seat_of(pk).and_then(|s| s.seat) {
        Some(n) => format!("{name} (seat {n})"),
        None => name,
    }
}

const LANDLORD: &str = "four-player-landlord-v1";
const SIGIL: &str = "aether-sigil-v1";
const TRACTOR: &str = "upgrade-tractor-v1";
const MAHJONG: &str = "classical-mahjong-v1";

/// Tractor's picked cards as a burial or a play, when the rules take them
/// now (`Table::is_legal_selection`); else why not, as a person reads it.
fn tractor_cards(
    t: &TableState,
    v: &TableView,
    options: &Map,
    nicks: &BTreeMap<String, String>,
) -> Result<Value, String> {
    let ids = t.picked_ids();
    if !ids.is_empty()
        && t.rules(options)
            .is_some_and(|r| r.is_legal_selection(&t.raw, &ids))
    {
        let kind = if v.phase == "bury" { "bury" } else { "play" };
        let ids: Vec<Value> = ids.into_iter().map(Value::from).collect();
        return Ok(Value::Object(obj! { "kind" => kind, "card_ids" => ids }));
    }
    let picked: Vec<Card> = v
        .hand
        .iter()
        .filter(|c| t.selected.contains(&c.card_id))
        .cloned()
        .collect();
    let name = |pk: &str| who(v, nicks, pk);
    Err(v.tractor().map_or_else(
        || "the rules offer nothing to send now".to_owned(),
        |g| g.refusal(&v.phase, &v.hand, &picked, &name),
    ))
}

/// Keys at a hold'em, a bridge or an aether sigil table: the numbered
/// choices (bets, calls, sigil's actions) and, in bridge's play, one card
/// of the hand to play. What to send, or why not (`refusal`: why nothing
/// can be sent now).
fn choice_or_card(
    t: &mut TableState,
    v: &TableView,
    c: Command,
    refusal: Option<String>,
    nicks: &BTreeMap<String, String>,
) -> Option<Result<Value, String>> {
    let choosing = !t.choices.is_empty();
    let top = t.choices.len().saturating_sub(1);
    let last = t.hand().len().saturating_sub(1);
    let card_play = v.bridge().is_some() && v.phase == "playing";
    let holdem = v.holdem().is_some();
    let sigil = v.sigil().is_some();
    let tractor = v.tractor().is_some();
    match c {
        Command::Left if choosing => t.choice_cursor = t.choice_cursor.saturating_sub(1),
        Command::Right if choosing => t.choice_cursor = (t.choice_cursor + 1).min(top),
        Command::Up if choosing => t.choice_cursor = t.choice_cursor.saturating_sub(CHOICE_PAGE),
        Command::Down if choosing => t.choice_cursor = (t.choice_cursor + CHOICE_PAGE).min(top),
        Command::Left => t.cursor = t.cursor.saturating_sub(1),
        Command::Right => t.cursor = (t.cursor + 1).min(last),
        Command::Up => t.jump_rank(-1),
        Command::Down => t.jump_rank(1),
        Command::Top => t.cursor = 0,
        Command::Bottom => t.cursor = last,
        Command::SelectCard | Command::SelectGroup if holdem => {
            return Some(Err(
                "hold'em plays no cards: choose an action with its number".into(),
            ));
        }
        Command::SelectCard | Command::SelectGroup if sigil => {
            return Some(Err(
                "a card is played by its numbered choice (with its target)".into(),
            ));
        }
        Command::SelectGroup if tractor => t.toggle_rank(),
        Command::SelectCard | Command::SelectGroup => t.toggle_card(),
        Command::ClearSelection => t.selected.clear(),
        c if c.choice().is_some() => {
            let k = usize::from(c.choice().unwrap_or(1)) - 1;
            let (start, n) = t.choice_page();
            return Some(match refusal {
                Some(why) => Err(why),
                None if k < n => Ok(t.choices[start + k].clone()),
                None if card_play => {
                    Err("the numbers choose a call: play a card with Enter".into())
                }
                None if tractor && n == 0 => {
                    Err("the numbers choose a declaration: pick cards and Enter sends them".into())
                }
                None => Err(format!("there are {n} choices to pick from here")),
            });
        }
        Command::Submit => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if choosing => t
                    .choices
                    .get(t.choice_cursor)
                    .cloned()
                    .ok_or_else(|| "the rules offer no choice now".to_owned()),
                None if card_play => play_card(t, v, nicks),
                None => Err("the rules offer nothing to send now".into()),
            });
        }
        Command::PassTurn => {
            let want = if holdem {
                "check"
            } else if sigil {
                "end_turn"
            } else if tractor {
                "pass_declare"
            } else {
                "pass"
            };
            return Some(match refusal {
                Some(why) => Err(why),
                None => t
                    .choices
                    .iter()
                    .find(|a| a.get_str("kind") == Some(want))
                    .cloned()
                    .ok_or_else(|| {
                        if holdem {
                            "there is a wager to match: call, raise or fold with the numbers"
                                .to_owned()
                        } else if tractor {
                            "only a declaration is passed: now pick cards and Enter sends them"
                                .to_owned()
                        } else {
                            "no call is open now: play a card".to_owned()
                        }
                    }),
            });
        }
        _ => {}
    }
    None
}

/// The card picked (else the one under the cursor) as a bridge play, when
/// the rules take it now.
fn play_card(
    t: &TableState,
    v: &TableView,
    nicks: &BTreeMap<String, String>,
) -> Result<Value, String> {
    let hand = v.pick_hand();
    let card = hand
        .iter()
        .find(|c| t.selected.contains(&c.card_id))
        .or_else(|| hand.get(t.cursor))
        .ok_or("there is no card to play")?;
    let legal = t.legal.iter().find(|a| {
        a.get_str("kind") == Some("play") && a.get_str("card_id") == Some(card.card_id.as_str())
    });
    if let Some(a) = legal {
        return Ok(a.clone());
    }
    let led = v
        .bridge()
        .and_then(|b| b.trick.first())
        .map(|p| (p.card.suit.clone(), p.hand_owner.clone()));
    Err(match led {
        Some((suit, by)) if hand.iter().any(|c| c.suit == suit) => format!(
            "{} does not follow {suit}, which {} led: play a card of {suit}",
            card.label(),
            who(v, nicks, &by)
        ),
        _ => format!("{} does not play now", card.label()),
    })
}

/// Why the rules refuse these cards now, as a person reads it.
fn why_not(t: &TableState, v: &TableView, nicks: &BTreeMap<String, String>) -> String {
    let picked: Vec<Card> = v
        .hand
        .iter()
        .filter(|c| t.selected.contains(&c.card_id))
        .cloned()
        .collect();
    let shown = pane::labels(&picked);
    let Some(l) = v.landlord() else {
        return format!("{shown} does not play now");
    };
    let faces: Vec<Map> = t
        .raw
        .get("my_hand")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .filter(|c| {
                    c.get_str("card_id")
                        .is_some_and(|id| t.selected.contains(id))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    match tables::landlord::classify(&faces) {
        Err(_) => format!(
            "{shown} is not a combination: play a single, a pair, a triple (alone, with one card or a pair), \
             a straight of 5+, 3+ pairs in a row, an airplane, four with two, or a bomb"
        ),
        Ok(c) => {
            let mine = Play {
                public_key: v.you.clone(),
                seat: v.you_seat,
                cards: picked,
                kind: c.kind.clone(),
                primary: c.primary,
                length: c.length,
                tier: c.tier,
            };
            match &l.last_play {
                Some(p) if p.tier > 0 => format!(
                    "your {} does not beat {}'s {}: only a bigger bomb does",
                    pane::play_words(&mine),
                    who(v, nicks, &p.public_key),
                    pane::play_words(p)
                ),
                Some(p) => format!(
                    "your {} does not beat {}'s {}: play a higher {} of {} cards, or a bomb",
                    pane::play_words(&mine),
                    who(v, nicks, &p.public_key),
                    pane::play_words(p),
                    p.kind.replace('_', " "),
                    p.cards.len()
                ),
                None => format!("{shown} does not play now"),
            }
        }
    }
}

impl Attached {
    /// This session's table alias, if it is a table the console shows.
    fn table_alias(&self) -> Option<String> {
        self.session
            .get_str("protocol_id")
            .or_else(|| self.snapshot.get_str("protocol_id"))
            .and_then(table_alias)
    }

    fn options(&self) -> Map {
        self.session
            .get("options")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

impl SessionsView {
    /// Is the attached session a table?
    pub fn table(&self) -> Option<&TableState> {
        self.attached.as_ref().and_then(|a| a.table.as_ref())
    }

    /// Takes what a watch update says of a table (after the snapshot and
    /// session.json are in `Attached`).
    pub(super) fn table_watched(&mut self, u: TableNews) {
        let Some(att) = self.attached.as_mut() else {
            return;
        };
        if att.table.is_none() {
            let Some(alias) = att.table_alias() else {
                return;
            };
            att.table = Some(TableState::new(alias));
        }
        let fresh = att
            .table
            .as_ref()
            .is_some_and(|t| t.seq.is_none() && t.log.is_empty());
        let options = att.options();
        let host_side = att.session.get_str("role") == Some("host");
        let Some(t) = att.table.as_mut() else {
            return;
        };
        if u.snapshot || u.session || fresh {
            t.take_snapshot(&att.snapshot, &options);
        }
        if let Some(b) = u.bots {
            t.bots = b;
        }
        t.seat_kinds(&att.snapshot, host_side);
        for d in &u.details {
            if d.get_str("type") != Some("group_frame") {
                continue;
            }
            let time = pane::time_of(d);
            for ev in d
                .get("events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(ev) = ev.as_object() {
                    t.push_log(LogEntry::Event {
                        time: time.clone(),
                        event: ev.clone(),
                    });
                }
            }
        }
        let nicks = &self.nicks;
        let you = t.view.as_ref().map(|v| v.you.clone()).unwrap_or_default();
        let name = |pk: &str| -> String {
            if pk == you && !you.is_empty() {
                return "you".into();
            }
            match nicks.get(pk) {
                Some(n) if !n.is_empty() => n.clone(),
                _ => room::short_key(pk),
            }
        };
        for ev in &u.events {
            let Some((text, _)) = room::notice_text(ev, RoomKind::Other, &name) else {
                continue;
            };
            let refused = ev.get_str("type") == Some("group_action_receipt");
            if refused && t.sent_at.is_some() {
                // The table said no: the pick stays for another try.
                t.sent_at = None;
                t.note = Some((false, text.clone()));
            }
            t.push_log(LogEntry::Notice {
                time: pane::time_of(ev),
                event: ev.clone(),
            });
        }
    }

    /// Keys on the table.
    pub(super) fn table_command(&mut self, c: Command) -> Effects {
        let mut fx = Effects::new();
        let Some(att) = self.attached.as_mut() else {
            return fx;
        };
        let live = att.room_live();
        let options = att.options();
        let dir = att.key.clone();
        let Some(t) = att.table.as_mut() else {
            return fx;
        };
        let Ok(v) = t.view.clone() else {
            say(&mut fx, false, "the table has not dealt yet");
            return fx;
        };
        let bidding = v.phase == "bidding" && v.your_turn();
        let last = v.hand.len().saturating_sub(1);
        // Why nothing can be sent now, whatever is picked.
        let refusal = if !live {
            Some("this table has ended here: nothing would send it".to_owned())
        } else if v.phase == "completed" {
            Some("the round is over: there is nothing to play".to_owned())
        } else if !v.your_turn() && v.tractor().is_some() && v.phase == "declaration" {
            Some("you have declared: waiting for the others to declare or pass".to_owned())
        } else if !v.your_turn()
            && v.phase == "claim"
            && let Some(m) = v.mahjong()
        {
            Some(mahjong_not_yours(&v, m, &self.nicks))
        } else if !v.your_turn() {
            Some(format!(
                "it is {}'s turn, not yours",
                who(&v, &self.nicks, &v.current)
            ))
        } else if t.waiting() {
            Some("your last action is on its way: waiting for the table".to_owned())
        } else {
            None
        };
        let bid = |b: i64| Value::Object(obj! { "kind" => "bid", "value" => b });
        // What to send, or why not.
        let send: Option<Result<Value, String>> = if t.alias == MAHJONG {
            mahjong_keys(t, &v, c, refusal, &options)
        } else if t.alias == TRACTOR && c == Command::Submit && t.choices.is_empty() {
            Some(match refusal {
                Some(why) => Err(why),
                None => tractor_cards(t, &v, &options, &self.nicks),
            })
        } else if t.alias != LANDLORD {
            choice_or_card(t, &v, c, refusal, &self.nicks)
        } else {
            match c {
                Command::Left if bidding => {
                    t.bid_cursor = t.bid_cursor.saturating_sub(1);
                    None
                }
                Command::Right if bidding => {
                    t.bid_cursor = (t.bid_cursor + 1).min(t.bids.len().saturating_sub(1));
                    None
                }
                Command::Left => {
                    t.cursor = t.cursor.saturating_sub(1);
                    None
                }
                Command::Right => {
                    t.cursor = (t.cursor + 1).min(last);
                    None
                }
                Command::Up => {
                    t.jump_rank(-1);
                    None
                }
                Command::Down => {
                    t.jump_rank(1);
                    None
                }
                Command::Top => {
                    t.cursor = 0;
                    None
                }
                Command::Bottom => {
                    t.cursor = last;
                    None
                }
                Command::SelectCard => {
                    t.toggle_card();
                    None
                }
                Command::SelectGroup => {
                    t.toggle_rank();
                    None
                }
                Command::ClearSelection => {
                    t.selected.clear();
                    None
                }
                c if c.choice().is_some() => {
                    let n = usize::from(c.choice().unwrap_or(1)) - 1;
                    Some(match refusal {
                        Some(why) => Err(why),
                        None if !bidding => Err("no bid is open: the numbers choose a bid".into()),
                        None => t.bids.get(n).map(|b| bid(*b)).ok_or_else(|| {
                            format!("there are {} bids to choose from", t.bids.len())
                        }),
                    })
                }
                Command::Submit => Some(match refusal {
                    Some(why) => Err(why),
                    None if bidding => t
                        .bids
                        .get(t.bid_cursor)
                        .map(|b| bid(*b))
                        .ok_or_else(|| "the rules allow no bid now".to_owned()),
                    None => {
                        let ids = t.picked_ids();
                        if ids.is_empty() {
                            Err("pick cards first (Space picks one, a picks its whole rank)".into())
                        } else if t
                            .rules(&options)
                            .is_some_and(|r| r.is_legal_selection(&t.raw, &ids))
                        {
                            let ids: Vec<Value> = ids.into_iter().map(Value::from).collect();
                            Ok(Value::Object(obj! { "kind" => "play", "card_ids" => ids }))
                        } else {
                            Err(why_not(t, &v, &self.nicks))
                        }
                    }
                }),
                Command::PassTurn => Some(match refusal {
                    Some(why) => Err(why),
                    None if bidding && t.bids.contains(&0) => Ok(bid(0)),
                    None if t.can_pass => Ok(Value::Object(obj! { "kind" => "pass" })),
                    None if v.landlord().is_some_and(|l| l.last_play.is_none()) => Err(
                        "you lead this trick: play any combination (the leader cannot pass)".into(),
                    ),
                    None => Err("the rules allow no pass now".into()),
                }),
                _ => None,
            }
        };
        match send {
            Some(Ok(action)) => {
                t.sent_at = Some(t.seq);
                t.note = Some((true, "sending…".into()));
                fx.push(SessionTask::RoomAction { dir, action }.into());
            }
            Some(Err(why)) => {
                // In the pane and on the status bar.
                t.note = Some((false, why.clone()));
                say(&mut fx, false, why);
            }
            // An old complaint no longer applies to the new pick.
            None if t.note.as_ref().is_some_and(|n| !n.0) => t.note = None,
            None => {}
        }
        fx
    }

    /// A queued action's result, for the table.
    pub(super) fn table_sent(&mut self, r: &Result<String, String>) {
        let Some(t) = self.attached.as_mut().and_then(|a| a.table.as_mut()) else {
            return;
        };
        match r {
            Ok(s) => {
                t.selected.clear();
                t.note = Some((true, s.clone()));
            }
            Err(e) => {
                t.sent_at = None;
                t.note = Some((false, e.clone()));
            }
        }
    }
}

/// Why a seat cannot act in a mahjong claim window it may not answer.
fn mahjong_not_yours(
    v: &TableView,
    m: &crate::session::table::Mahjong,
    nicks: &BTreeMap<String, String>,
) -> String {
    let Some(w) = &m.window else {
        return "no claim window is open".to_owned();
    };
    let tile = w.tile.label();
    if w.by == v.you {
        format!("you discarded {tile}: the others are answering the claim window")
    } else if w.my_claim.is_some() {
        format!("you have answered the claim window on {tile}: waiting for the others")
    } else {
        format!(
            "the claim window on {}'s {tile} is not yours to answer",
            who(v, nicks, &w.by)
        )
    }
}

/// Keys at a mahjong table. On your turn the arrows move along the hand,
/// `Enter` discards the picked tile (the one under the cursor when none
/// is picked; four of a face picked: a concealed kong), the numbers send a
/// win or a concealed kong. In a claim window you may answer, the claims
/// are the choices: the arrows move the mark, the numbers and `Enter` send
/// one, `p` passes.
fn mahjong_keys(
    t: &mut TableState,
    v: &TableView,
    c: Command,
    refusal: Option<String>,
    options: &Map,
) -> Option<Result<Value, String>> {
    let claims = v.phase == "claim" && !t.choices.is_empty();
    let last = t.hand().len().saturating_sub(1);
    let top = t.choices.len().saturating_sub(1);
    match c {
        Command::Left if claims => t.choice_cursor = t.choice_cursor.saturating_sub(1),
        Command::Right if claims => t.choice_cursor = (t.choice_cursor + 1).min(top),
        Command::SelectCard | Command::SelectGroup if claims => {
            return Some(Err(
                "a claim is sent by its number (or ←/→ and Enter), not by picked tiles".into(),
            ));
        }
        Command::Left => t.cursor = t.cursor.saturating_sub(1),
        Command::Right => t.cursor = (t.cursor + 1).min(last),
        Command::Up => t.jump_rank(-1),
        Command::Down => t.jump_rank(1),
        Command::Top => t.cursor = 0,
        Command::Bottom => t.cursor = last,
        Command::SelectCard => t.toggle_card(),
        Command::SelectGroup => t.toggle_rank(),
        Command::ClearSelection => t.selected.clear(),
        c if c.choice().is_some() => {
            let k = usize::from(c.choice().unwrap_or(1)) - 1;
            let (start, n) = t.choice_page();
            return Some(match refusal {
                Some(why) => Err(why),
                None if k < n => Ok(t.choices[start + k].clone()),
                None if n == 0 => {
                    Err("nothing is chosen by number now: pick a tile and Enter discards it".into())
                }
                None => Err(format!("there are {n} choices to pick from here")),
            });
        }
        Command::PassTurn => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if v.phase == "claim" => t
                    .choices
                    .iter()
                    .find(|a| a.get_str("kind") == Some("pass_claim"))
                    .cloned()
                    .ok_or_else(|| "the rules offer no pass now".to_owned()),
                None => Err("there is no passing on your turn: discard a tile".into()),
            });
        }
        Command::Submit => {
            return Some(match refusal {
                Some(why) => Err(why),
                None if claims => t
                    .choices
                    .get(t.choice_cursor)
                    .cloned()
                    .ok_or_else(|| "the rules offer no claim now".to_owned()),
                None => mahjong_discard(t, v, options),
            });
        }
        _ => {}
    }
    None
}

/// The picked tile as a discard (the one under the cursor when none is
/// picked), or four picked of a face as a concealed kong, when the rules
/// take them now (`Table::is_legal_selection`); else why not.
fn mahjong_discard(t: &TableState, v: &TableView, options: &Map) -> Result<Value, String> {
    let m = v.mahjong().ok_or("the rules offer nothing to send now")?;
    let mut ids = t.picked_ids();
    if ids.is_empty()
        && let Some(c) = t.hand().get(t.cursor)
    {
        ids.push(c.card_id.clone());
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let tiles = m.tiles_of(&refs);
    let shown = crate::session::table::tile_labels(&tiles);
    let legal = t
        .rules(options)
        .is_some_and(|r| r.is_legal_selection(&t.raw, &ids));
    let same = tiles.windows(2).all(|p| p[0].code == p[1].code);
    match ids.len() {
        1 if legal => Ok(Value::Object(
            obj! { "kind" => "discard", "card_id" => ids[0].as_str() },
        )),
        4 if legal => {
            let ids: Vec<Value> = ids.iter().map(|id| Value::from(id.as_str())).collect();
            Ok(Value::Object(
                obj! { "kind" => "concealed_kong", "card_ids" => ids },
            ))
        }
        4 if !same => Err(format!(
            "{shown} is no kong: a concealed kong takes four tiles of one face"
        )),
        0 => Err("there is no tile to discard".into()),
        1 => Err(format!("{shown} cannot be discarded now")),
        n => Err(format!(
            "{shown}: discard one tile, or pick four of a face for a concealed kong ({n} picked)"
        )),
    }
}
