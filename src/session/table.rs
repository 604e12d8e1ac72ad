//! A table session's seat as typed data: the `group_view` of its
//! snapshot.json (the seat's verified view of a four-seat card table) read
//! into a [`TableView`] without trusting it. What every table has (seats,
//! whose turn, your hand, scores) is common; what one game adds is its
//! [`Game`] (one adapter per table: [`TableView::parse`] knows which).
//! Pure: no I/O, never panics on any shape of input.
//!
//! Built: four-player-landlord-v1. texas-holdem-v1 and contract-bridge-v1
//! views are refused as "no view yet" until their adapters are added.

use crate::json::{Map, Value};

/// Cards of a hand, a bottom or a play read at most.
const MAX_CARDS: usize = 128;
/// Seats read at most.
const MAX_SEATS: usize = 16;

/// Table aliases this module reads views of.
pub const VIEWS: [&str; 1] = ["four-player-landlord-v1"];

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
    fn parse(v: &Value) -> Option<Card> {
        let o = v.as_object()?;
        Some(Card {
            rank: text(o.get("rank")),
            value: int(o.get("value")).unwrap_or(0),
            suit: text(o.get("suit")),
            card_id: text(o.get("card_id")),
            copy: int(o.get("copy")).unwrap_or(0),
        })
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

/// What four-player-landlord-v1 adds to a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Landlord {
    /// The landlord's public key ("" while bidding).
    pub landlord: String,
    pub highest_bid: i64,
    pub highest_bidder: String,
    /// The bottom cards, shown once the landlord takes them.
    pub bottom: Vec<Card>,
    /// The play to beat (None: the trick is led afresh).
    pub last_play: Option<Play>,
    pub passes: i64,
    pub bombs: i64,
    /// Cards played so far.
    pub discarded: usize,
}

impl Landlord {
    /// The stake the round is played for: the bid (at least 1) doubled
    /// for every bomb.
    pub fn base(&self) -> i64 {
        let bombs = self.bombs.clamp(0, 62) as u32;
        self.highest_bid
            .max(1)
            .saturating_mul(2i64.saturating_pow(bombs))
    }
}

/// What one game adds to the common view.
#[derive(Debug, Clone, PartialEq)]
pub enum Game {
    Landlord(Landlord),
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
            "four-player-landlord-v1" => landlord(alias, v),
            _ => Err(format!("palaver has no table view for {alias} yet")),
        }
    }

    /// Is it this seat's turn in a phase that takes actions?
    pub fn your_turn(&self) -> bool {
        !self.you.is_empty()
            && self.current == self.you
            && matches!(self.phase.as_str(), "bidding" | "playing")
    }

    pub fn seat_of(&self, pk: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.public_key == pk)
    }

    pub fn landlord(&self) -> Option<&Landlord> {
        match &self.game {
            Game::Landlord(l) => Some(l),
        }
    }
}

fn landlord(alias: &str, v: &Map) -> Result<TableView, String> {
    let players = match v.get("players") {
        Some(Value::Object(p)) => p,
        None | Some(Value::Null) => &Map::new(),
        Some(other) => return Err(format!("its players are {}", other.type_name())),
    };
    let per = |k: &str| v.get(k).and_then(Value::as_object);
    let (counts, scores, bids) = (per("hand_counts"), per("scores"), per("bids"));
    let mut seats: Vec<Seat> = Vec::new();
    let mut add = |pk: &str, p: Option<&Value>| {
        if pk.is_empty() || seats.len() >= MAX_SEATS || seats.iter().any(|s| s.public_key == pk) {
            return;
        }
        let at = |m: Option<&Map>| m.and_then(|m| int(m.get(pk)));
        seats.push(Seat {
            public_key: pk.to_owned(),
            seat: p.and_then(|p| int(p.get("seat"))),
            role: p.map(|p| text(p.get("role"))).unwrap_or_default(),
            cards_left: at(counts),
            score: at(scores),
            bid: at(bids),
        });
    };
    for (pk, p) in players.iter() {
        add(pk, Some(p));
    }
    // Seats the turn order names that `players` lacks (an odd view).
    for pk in v
        .get("turn_order")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add(pk.as_str().unwrap_or(""), None);
    }
    seats.sort_by_key(|s| s.seat.unwrap_or(i64::MAX));
    let you = v.get("you").and_then(Value::as_object);
    let mut hand = cards(v.get("my_hand"));
    sort_cards(&mut hand);
    let mut bottom = cards(v.get("bottom_revealed"));
    sort_cards(&mut bottom);
    let game = Landlord {
        landlord: text(v.get("landlord")),
        highest_bid: int(v.get("highest_bid")).unwrap_or(0),
        highest_bidder: text(v.get("highest_bidder")),
        bottom,
        last_play: v.get("last_play").and_then(Play::parse),
        passes: int(v.get("passes")).unwrap_or(0),
        bombs: int(v.get("bombs")).unwrap_or(0),
        discarded: v
            .get("discard")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    };
    Ok(TableView {
        alias: alias.to_owned(),
        phase: text(v.get("phase")),
        round: int(v.get("round_number")),
        restarts: int(v.get("restart_count")),
        notice: text(v.get("recovery_notice")),
        seats,
        current: text(v.get("current_player")),
        you: you.map(|y| text(y.get("public_key"))).unwrap_or_default(),
        you_seat: you.and_then(|y| int(y.get("seat"))),
        hand,
        game: Game::Landlord(game),
    })
}

fn cards(v: Option<&Value>) -> Vec<Card> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(MAX_CARDS).filter_map(Card::parse).collect())
        .unwrap_or_default()
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.py_str(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.filter(|x| x.is_integer()).and_then(Value::as_i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    fn card(rank: &str, value: i64, suit: &str, id: &str) -> Value {
        Value::Object(
            obj! { "rank" => rank, "value" => value, "suit" => suit, "card_id" => id, "copy" => 0 },
        )
    }

    #[test]
    fn a_landlord_view_reads_sorted_and_seated() {
        let view = Value::Object(obj! {
            "phase" => "playing", "round_number" => 2, "restart_count" => 0, "recovery_notice" => "",
            "players" => obj! {
                "bb" => obj! { "seat" => 1, "role" => "landlord" },
                "aa" => obj! { "seat" => 0, "role" => "farmer" },
            },
            "turn_order" => vec![Value::from("aa"), Value::from("bb")],
            "current_player" => "aa", "landlord" => "bb", "highest_bid" => 2, "bombs" => 1,
            "hand_counts" => obj! { "aa" => 3, "bb" => 30 }, "scores" => obj! { "aa" => -4, "bb" => 12 },
            "bids" => obj! { "aa" => 0, "bb" => 2 },
            "my_hand" => vec![
                card("Red Joker", 17, "joker", "r"), card("2", 15, "clubs", "2c"),
                card("7", 7, "spades", "7s"), card("7", 7, "hearts", "7h"),
            ],
            "bottom_revealed" => vec![card("K", 13, "spades", "ks")],
            "last_play" => obj! {
                "public_key" => "bb", "seat" => 1, "cards" => vec![card("5", 5, "clubs", "5c"), card("5", 5, "spades", "5s")],
                "combination" => obj! { "kind" => "pair", "primary" => 5, "length" => 2, "tier" => 0 },
            },
            "discard" => vec![Value::Null, Value::Null],
            "you" => obj! { "public_key" => "aa", "seat" => 0, "is_landlord" => false },
        });
        let t = TableView::parse("four-player-landlord-v1", &view).unwrap();
        let labels: Vec<String> = t.hand.iter().map(Card::label).collect();
        assert_eq!(labels, ["7♥", "7♠", "2♣", "RJ"]);
        assert_eq!(t.seats[0].public_key, "aa");
        assert_eq!(t.seats[1].cards_left, Some(30));
        assert_eq!(t.seats[0].score, Some(-4));
        assert!(t.your_turn());
        let l = t.landlord().unwrap();
        assert_eq!(l.base(), 4);
        assert_eq!(l.last_play.as_ref().unwrap().kind_words(), "pair");
        assert_eq!(l.discarded, 2);
    }

    #[test]
    fn odd_views_are_refused_or_read_without_a_panic() {
        let alias = "four-player-landlord-v1";
        assert!(TableView::parse(alias, &Value::from(3)).is_err());
        assert!(TableView::parse("texas-holdem-v1", &Value::Object(Map::new())).is_err());
        assert!(TableView::parse(alias, &Value::Object(obj! { "players" => 1 })).is_err());
        for odd in [
            r#"{"players":{"x":5},"my_hand":[1,{"value":"7"},null],"last_play":[],"you":3}"#,
            r#"{"turn_order":["a","a",7],"bids":[],"scores":{"a":1.5},"discard":{}}"#,
        ] {
            let v = crate::json::parse_str(odd).unwrap();
            let t = TableView::parse(alias, &v).unwrap();
            assert!(!t.your_turn());
        }
    }
}
