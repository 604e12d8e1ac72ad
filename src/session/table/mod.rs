//! A table session's seat as typed data: the `group_view` of its
//! snapshot.json (the seat's verified view of a four-seat card table) read
//! into a [`TableView`] without trusting it. What every table has (seats,
//! whose turn, your hand, scores) is common; what one game adds is its
//! [`Game`] (one adapter per table: [`TableView::parse`] knows which).
//! Pure: no I/O, never panics on any shape of input.
//!
//! Built: four-player-landlord-v1, texas-holdem-v1, contract-bridge-v1,
//! aether-sigil-v1, upgrade-tractor-v1, classical-mahjong-v1.

mod bridge;
mod holdem;
mod landlord;
mod mahjong;
mod sigil;
mod tractor;

pub use bridge::{Bridge, Call, Contract, TrickCard, bid_label};
pub use holdem::{Holdem, PotResult, Shown};
pub use landlord::Landlord;
pub use mahjong::{
    ClaimWindow, Mahjong, MahjongResult, MahjongSeat, Meld, Tile, meld_label, sort_tiles,
    tile_label, tile_labels, wind_label,
};
pub use sigil::{Channeler, Sigil, SigilCard, SigilUnit};
pub use tractor::{
    Declaration, HandResult, TEAMS, Tractor, TrickPlay, TrickWon, class_word, level_word,
};

use crate::json::{Map, Value};

/// Cards of a hand, a bottom or a play read at most.
const MAX_CARDS: usize = 128;
/// Seats read at most.
const MAX_SEATS: usize = 16;

/// Table aliases this module reads views of.
pub const VIEWS: [&str; 6] = [
    "four-player-landlord-v1",
    "texas-holdem-v1",
    "contract-bridge-v1",
    "aether-sigil-v1",
    "upgrade-tractor-v1",
    "classical-mahjong-v1",
];

/// Entries of an auction, an action log or a trick read at most.
const MAX_ENTRIES: usize = 512;

/// One card as the table's deck names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// `3`…`10`, `J`, `Q`, `K`, `A`, `2`, `Black Joker`, `Red Joker`.
    pub rank: String,
    /// 3…15 (2 is 15), jokers 16 and 17.
    pub value: i64,
    /// `clubs`, `diamonds`, `hearts`, `spades` or `joker`.
    pub suit: String,
    pub card_id: String,
    /// Which deck of several the card comes from.
    pub copy: i64,
}

impl Card {
    /// A card of a view or an event: a landlord card (`rank` a name,
    /// `value` its order) or a standard deck's (`rank` 2…14, no `value`:
    /// hold'em, bridge).
    pub fn parse(v: &Value) -> Option<Card> {
        let o = v.as_object()?;
        let numeric = int(o.get("rank"));
        let rank = match numeric {
            Some(11) => "J".to_owned(),
            Some(12) => "Q".to_owned(),
            Some(13) => "K".to_owned(),
            Some(14) => "A".to_owned(),
            Some(n) => n.to_string(),
            None => text(o.get("rank")),
        };
        Some(Card {
            rank,
            value: int(o.get("value")).or(numeric).unwrap_or(0),
            suit: text(o.get("suit")),
            card_id: text(o.get("card_id")),
            copy: int(o.get("copy")).unwrap_or(0),
        })
    }

    /// 0 spades, 1 hearts, 2 clubs, 3 diamonds (colours alternate), 4 else:
    /// how a bridge hand is grouped.
    pub fn suit_group(&self) -> i64 {
        match self.suit.as_str() {
            "spades" => 0,
            "hearts" => 1,
            "clubs" => 2,
            "diamonds" => 3,
            _ => 4,
        }
    }

    pub fn is_joker(&self) -> bool {
        self.suit == "joker"
    }

    /// Hearts, diamonds and the red joker.
    pub fn is_red(&self) -> bool {
        matches!(self.suit.as_str(), "hearts" | "diamonds") || (self.is_joker() && self.value >= 17)
    }

    /// The suit's symbol (`♣♦♥♠`), empty for a joker.
    pub fn suit_symbol(&self) -> &'static str {
        match self.suit.as_str() {
            "clubs" => "♣",
            "diamonds" => "♦",
            "hearts" => "♥",
            "spades" => "♠",
            _ => "",
        }
    }

    /// `7♠`, `10♥`; `BJ` and `RJ` for the black and the red joker.
    pub fn label(&self) -> String {
        if self.is_joker() {
            return if self.value >= 17 { "RJ" } else { "BJ" }.to_owned();
        }
        let rank: String = self.rank.chars().take(2).collect();
        format!("{rank}{}", self.suit_symbol())
    }

    /// The rank as one word for sentences (`7`, `Q`, `black joker`).
    pub fn rank_word(&self) -> String {
        if self.is_joker() {
            return if self.value >= 17 {
                "red joker"
            } else {
                "black joker"
            }
            .to_owned();
        }
        self.rank.clone()
    }

    /// Where the card goes in a sorted hand: by value, then suit (clubs,
    /// diamonds, hearts, spades), jokers last, then deck copy.
    fn order(&self) -> (i64, u8, i64, &str) {
        let suit = match self.suit.as_str() {
            "clubs" => 0,
            "diamonds" => 1,
            "hearts" => 2,
            "spades" => 3,
            _ => 4,
        };
        (self.value, suit, self.copy, &self.card_id)
    }
}

/// Sorts cards as players hold them: by value (3 low, 2 high, jokers
/// last), suits in a fixed order within a value.
pub fn sort_cards(cards: &mut [Card]) {
    cards.sort_by(|a, b| a.order().cmp(&b.order()));
}

/// Sorts cards as a bridge player holds them: by suit (spades, hearts,
/// clubs, diamonds), high to low within a suit.
pub fn sort_by_suit(cards: &mut [Card]) {
    cards.sort_by(|a, b| {
        (a.suit_group(), -a.value, &a.card_id).cmp(&(b.suit_group(), -b.value, &b.card_id))
    });
}

/// One seat at the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Seat {
    pub public_key: String,
    pub seat: Option<i64>,
    /// The game's role (landlord, farmer, unassigned, …).
    pub role: String,
    pub cards_left: Option<i64>,
    pub score: Option<i64>,
    /// Its bid this round, once made (landlord).
    pub bid: Option<i64>,
    /// Hold'em: the chips behind, the wager this street, folded, all in.
    pub stack: Option<i64>,
    pub wager: Option<i64>,
    pub folded: bool,
    pub all_in: bool,
}

impl Seat {
    fn new(pk: &str) -> Seat {
        Seat {
            public_key: pk.to_owned(),
            seat: None,
            role: String::new(),
            cards_left: None,
            score: None,
            bid: None,
            stack: None,
            wager: None,
            folded: false,
            all_in: false,
        }
    }
}

/// One play on the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Play {
    pub public_key: String,
    pub seat: Option<i64>,
    pub cards: Vec<Card>,
    /// The combination's kind (`single`, `pair`, `straight`, `bomb`, …).
    pub kind: String,
    pub primary: i64,
    pub length: i64,
    /// 0 plain, 1 bomb, 2 joker bomb.
    pub tier: i64,
}

impl Play {
    fn parse(v: &Value) -> Option<Play> {
        let o = v.as_object()?;
        let combo = o.get("combination").and_then(Value::as_object);
        let c = |k: &str| combo.and_then(|m| int(m.get(k))).unwrap_or(0);
        let mut cards = cards(o.get("cards"));
        sort_cards(&mut cards);
        Some(Play {
            public_key: text(o.get("public_key")),
            seat: int(o.get("seat")),
            cards,
            kind: combo.map(|m| text(m.get("kind"))).unwrap_or_default(),
            primary: c("primary"),
            length: c("length"),
            tier: c("tier"),
        })
    }

    /// `pair`, `straight of 5`, `joker bomb` — the kind for people.
    pub fn kind_words(&self) -> String {
        let k = self.kind.replace('_', " ");
        match self.kind.as_str() {
            "straight" | "pair_straight" | "airplane" | "airplane_single" | "airplane_pair"
            | "bomb" | "joker_bomb"
                if self.length > 0 =>
            {
                format!("{k} of {}", self.length)
            }
            _ => k,
        }
    }
}

/// What one game adds to the common view.
#[derive(Debug, Clone, PartialEq)]
pub enum Game {
    Landlord(Landlord),
    Holdem(Holdem),
    Bridge(Bridge),
    Sigil(Sigil),
    Tractor(Tractor),
    Mahjong(Mahjong),
}

/// A seat's view of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableView {
    pub alias: String,
    /// `bidding`, `playing`, `completed` (landlord), as the view says.
    pub phase: String,
    pub round: Option<i64>,
    pub restarts: Option<i64>,
    /// Why the deal was restarted, if it was.
    pub notice: String,
    /// Every seat, by seat number.
    pub seats: Vec<Seat>,
    /// Whose turn it is (a public key).
    pub current: String,
    /// This seat's public key and number.
    pub you: String,
    pub you_seat: Option<i64>,
    /// This seat's hand, sorted ([`sort_cards`]).
    pub hand: Vec<Card>,
    pub game: Game,
}

impl TableView {
    /// Reads the `group_view` of a table `alias`. `Err` says why it cannot
    /// be read (a table palaver has no view for yet, or an odd shape).
    pub fn parse(alias: &str, view: &Value) -> Result<TableView, String> {
        let v = match view {
            Value::Object(m) => m,
            other => return Err(format!("the table's view is {}", other.type_name())),
        };
        match alias {
            "four-player-landlord-v1" => landlord::landlord(alias, v),
            "texas-holdem-v1" => holdem::holdem(alias, v),
            "contract-bridge-v1" => bridge::bridge(alias, v),
            "aether-sigil-v1" => sigil::sigil(alias, v),
            "upgrade-tractor-v1" => tractor::tractor(alias, v),
            "classical-mahjong-v1" => mahjong::mahjong(alias, v, &[]),
            _ => Err(format!("palaver has no table view for {alias} yet")),
        }
    }

    /// [`TableView::parse`] knowing the events of the frame the view is of
    /// (snapshot.json's `group_events`): at mahjong they tell whether the
    /// seat to move has just drawn a tile.
    pub fn parse_at(alias: &str, view: &Value, events: &[Value]) -> Result<TableView, String> {
        match view {
            Value::Object(v) if alias == "classical-mahjong-v1" => {
                mahjong::mahjong(alias, v, events)
            }
            _ => TableView::parse(alias, view),
        }
    }

    /// Is it this seat's turn in a phase that takes actions?
    pub fn your_turn(&self) -> bool {
        // Tractor's declarations have no current player: every seat
        // declares or passes once, in any order.
        if let Game::Tractor(t) = &self.game
            && self.phase == "declaration"
        {
            return t.to_declare(&self.you);
        }
        // Mahjong's claim window has no current player either: each of
        // the three other seats answers once.
        if let Game::Mahjong(m) = &self.game {
            return match self.phase.as_str() {
                "claim" => m.to_answer(),
                "discard" => !self.you.is_empty() && self.current == self.you,
                _ => false,
            };
        }
        !self.you.is_empty()
            && self.current == self.you
            && matches!(
                self.phase.as_str(),
                "bidding" | "playing" | "betting" | "auction" | "bury"
            )
    }

    pub fn seat_of(&self, pk: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.public_key == pk)
    }

    pub fn landlord(&self) -> Option<&Landlord> {
        match &self.game {
            Game::Landlord(l) => Some(l),
            _ => None,
        }
    }

    pub fn holdem(&self) -> Option<&Holdem> {
        match &self.game {
            Game::Holdem(h) => Some(h),
            _ => None,
        }
    }

    pub fn bridge(&self) -> Option<&Bridge> {
        match &self.game {
            Game::Bridge(b) => Some(b),
            _ => None,
        }
    }

    pub fn sigil(&self) -> Option<&Sigil> {
        match &self.game {
            Game::Sigil(s) => Some(s),
            _ => None,
        }
    }

    pub fn tractor(&self) -> Option<&Tractor> {
        match &self.game {
            Game::Tractor(t) => Some(t),
            _ => None,
        }
    }

    pub fn mahjong(&self) -> Option<&Mahjong> {
        match &self.game {
            Game::Mahjong(m) => Some(m),
            _ => None,
        }
    }

    /// The cards the picker works on: this seat's hand, or the dummy's
    /// while the declarer plays it.
    pub fn pick_hand(&self) -> &[Card] {
        match &self.game {
            Game::Bridge(b) if self.phase == "playing" && b.plays_dummy(&self.you) => &b.playable,
            _ => &self.hand,
        }
    }
}

/// The seats of a view: `players` (by public key) and any key the turn
/// order names that it lacks, by seat number. `fill` adds what a game
/// keeps per seat.
fn seats_of(v: &Map, fill: &dyn Fn(&mut Seat, Option<&Value>)) -> Result<Vec<Seat>, String> {
    let players = match v.get("players") {
        Some(Value::Object(p)) => p,
        None | Some(Value::Null) => &Map::new(),
        Some(other) => return Err(format!("its players are {}", other.type_name())),
    };
    let counts = v.get("hand_counts").and_then(Value::as_object);
    let mut seats: Vec<Seat> = Vec::new();
    let mut add = |pk: &str, p: Option<&Value>| {
        if pk.is_empty() || seats.len() >= MAX_SEATS || seats.iter().any(|s| s.public_key == pk) {
            return;
        }
        let mut s = Seat::new(pk);
        s.seat = p.and_then(|p| int(p.get("seat")));
        s.cards_left = counts.and_then(|m| int(m.get(pk)));
        fill(&mut s, p);
        seats.push(s);
    };
    for (pk, p) in players.iter() {
        add(pk, Some(p));
    }
    for pk in v
        .get("turn_order")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add(pk.as_str().unwrap_or(""), None);
    }
    seats.sort_by_key(|s| s.seat.unwrap_or(i64::MAX));
    Ok(seats)
}

/// The common part of a view.
fn common(
    alias: &str,
    v: &Map,
    round: &str,
    seats: Vec<Seat>,
    hand: Vec<Card>,
    game: Game,
) -> TableView {
    let you = v.get("you").and_then(Value::as_object);
    TableView {
        alias: alias.to_owned(),
        phase: text(v.get("phase")),
        round: int(v.get(round)),
        restarts: int(v.get("restart_count")),
        notice: text(v.get("recovery_notice")),
        seats,
        current: text(v.get("current_player")),
        you: you.map(|y| text(y.get("public_key"))).unwrap_or_default(),
        you_seat: you.and_then(|y| int(y.get("seat"))),
        hand,
        game,
    }
}

/// A list of public keys.
fn keys(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_SEATS)
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect()
}

fn cards(v: Option<&Value>) -> Vec<Card> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(MAX_CARDS).filter_map(Card::parse).collect())
        .unwrap_or_default()
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.py_str(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.filter(|x| x.is_integer()).and_then(Value::as_i64)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::obj;

    pub(super) fn card(rank: &str, value: i64, suit: &str, id: &str) -> Value {
        Value::Object(
            obj! { "rank" => rank, "value" => value, "suit" => suit, "card_id" => id, "copy" => 0 },
        )
    }

    pub(super) fn members() -> Vec<Value> {
        (0..4)
            .map(|n: i64| {
                Value::Object(obj! {
                    "member_id" => format!("m{n}"), "public_key" => format!("pk{n}"), "seat" => n,
                    "status" => "active",
                })
            })
            .collect()
    }

    /// A table of `alias` dealt by its rules; the view of seat `n`.
    pub(super) fn dealt(alias: &str) -> (Box<dyn crate::protocols::tables::Table>, Value) {
        let mut rules =
            crate::protocols::tables::table_for_alias(alias, &obj! { "deal_seed" => "unit" })
                .unwrap();
        let state = rules.initial_state(&members()).unwrap();
        (rules, state)
    }

    #[test]
    fn odd_views_are_refused_or_read_without_a_panic() {
        let alias = "four-player-landlord-v1";
        assert!(TableView::parse(alias, &Value::from(3)).is_err());
        assert!(TableView::parse("no-such-table-v1", &Value::Object(Map::new())).is_err());
        assert!(TableView::parse(alias, &Value::Object(obj! { "players" => 1 })).is_err());
        for odd in [
            r#"{"players":{"x":5},"my_hand":[1,{"value":"7"},null],"last_play":[],"you":3}"#,
            r#"{"turn_order":["a","a",7],"bids":[],"scores":{"a":1.5},"discard":{}}"#,
            r#"{"legal":[],"board":{"a":1},"pot_results":[3,{"winners":7}],"showdown_hands":{"a":2}}"#,
            r#"{"auction":[1,{"level":"x"}],"contract":[],"current_trick":[{"card":3}],"trick_history":[{}],"tricks":7,"playable_hand":"x"}"#,
            r#"{"players":{"a":{"life":"x","defeated":1},"b":7},"units":{"a":[5,{"power":"9"}],"b":"x"},"relics":[],"unit_state":{"a":3},"discard":{},"draw_count":-4,"winner":9,"turn_number":"7"}"#,
            r#"{"players":{"a":{}},"units":{"a":[{"card_id":"u"}]},"unit_state":{"u":{"exhausted":"yes","damage":1e300}},"my_hand":[{"name":7},[]],"relics":{"a":null}}"#,
        ] {
            let v = crate::json::parse_str(odd).unwrap();
            for alias in VIEWS {
                let t = TableView::parse(alias, &v).unwrap();
                assert!(!t.your_turn());
                assert_eq!(t.pick_hand(), t.hand.as_slice());
            }
        }
        assert!(
            TableView::parse(
                "contract-bridge-v1",
                &Value::Object(obj! { "players" => 1 })
            )
            .is_err()
        );
    }
}
