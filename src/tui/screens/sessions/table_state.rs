//! What the console keeps of an attached card table besides its files
//! (the seat's view, the hand's cursor and picks, the legal bids, calls and
//! choices, the log, who sits where) and how a snapshot updates it; the
//! keys and the actions on it are in `table`.

use crate::json::{Map, Value};
use crate::protocols::tables;
use crate::session::table::{Card, TableView};
use crate::tui::note::Note;
use crate::tui::panes::table::{LogEntry, MAX_LOG, SeatKind};
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
    pub note: Option<Note>,
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
    pub(super) fn new(alias: String) -> TableState {
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

    pub(super) fn rules(&self, options: &Map) -> Option<Box<dyn tables::Table>> {
        tables::table_for_alias(&self.alias, options)
    }

    /// The cards the picker works on (the dummy's while the declarer
    /// plays them).
    pub(super) fn hand(&self) -> &[Card] {
        self.view.as_ref().map(|v| v.pick_hand()).unwrap_or(&[])
    }

    /// Takes a new snapshot: the view, the legal actions, the pick kept
    /// on the cards still in the hand.
    pub(super) fn take_snapshot(&mut self, snapshot: &Map, options: &Map) {
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
    pub(super) fn push_log(&mut self, e: LogEntry) {
        let at = self.log.partition_point(|x| x.time() <= e.time());
        self.log.insert(at, e);
        let over = self.log.len().saturating_sub(MAX_LOG);
        self.log.drain(..over);
    }

    /// Who sits where: you, the host's bots, and (on the host's side)
    /// people; a guest cannot tell bots from people.
    pub(super) fn seat_kinds(&mut self, snapshot: &Map, host_side: bool) {
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
    pub(super) fn group(&self, c: &Card) -> i64 {
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
    pub(super) fn jump_rank(&mut self, dir: i32) {
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

    pub(super) fn toggle_card(&mut self) {
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
    pub(super) fn toggle_rank(&mut self) {
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
    pub(super) fn picked_ids(&self) -> Vec<String> {
        self.hand()
            .iter()
            .filter(|c| self.selected.contains(&c.card_id))
            .map(|c| c.card_id.clone())
            .collect()
    }
}

/// The aliases of the tables whose keys differ from the others.
pub(super) const LANDLORD: &str = "four-player-landlord-v1";
pub(super) const SIGIL: &str = "aether-sigil-v1";
pub(super) const TRACTOR: &str = "upgrade-tractor-v1";
pub(super) const MAHJONG: &str = "classical-mahjong-v1";
