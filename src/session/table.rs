//! A table session's seat as typed data: the `group_view` of its
//! snapshot.json (the seat's verified view of a four-seat card table) read
//! into a [`TableView`] without trusting it. What every table has (seats,
//! whose turn, your hand, scores) is common; what one game adds is its
//! [`Game`] (one adapter per table: [`TableView::parse`] knows which).
//! Pure: no I/O, never panics on any shape of input.
//!
//! Built: four-player-landlord-v1, texas-holdem-v1, contract-bridge-v1.

use crate::json::{Map, Value};

/// Cards of a hand, a bottom or a play read at most.
const MAX_CARDS: usize = 128;
/// Seats read at most.
const MAX_SEATS: usize = 16;

/// Table aliases this module reads views of.
pub const VIEWS: [&str; 3] = [
    "four-player-landlord-v1",
    "texas-holdem-v1",
    "contract-bridge-v1",
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

/// A pot a hand ended with: its chips and who took them.
#[derive(Debug, Clone, PartialEq)]
pub struct PotResult {
    pub amount: i64,
    pub winners: Vec<String>,
}

/// A hand shown at a hold'em showdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub public_key: String,
    pub cards: Vec<Card>,
    /// `two_pair`, `straight`, … as the rules name it.
    pub category: String,
}

/// What texas-holdem-v1 adds to a table (the hand number is the view's
/// `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Holdem {
    /// `preflop`, `flop`, `turn`, `river`.
    pub street: String,
    pub button: String,
    pub small_blind: String,
    pub big_blind: String,
    /// The wager to match this street, and the last full raise.
    pub current_bet: i64,
    pub last_full_raise: i64,
    /// Every chip committed this hand.
    pub pot: i64,
    pub board: Vec<Card>,
    /// This seat's `legal`: what it must add to call, the least a raise
    /// goes to, the most it can put in this street, whether it may raise.
    pub to_call: i64,
    pub min_raise_to: i64,
    pub max_to: i64,
    pub can_raise: bool,
    /// The last hand's pots and showdown, while the view still has them.
    pub pots: Vec<PotResult>,
    pub shown: Vec<Shown>,
}

/// One call of a bridge auction.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub public_key: String,
    /// `pass`, `bid`, `double`, `redouble`.
    pub kind: String,
    pub level: i64,
    pub denomination: String,
}

impl Call {
    /// `pass`, `X`, `XX`, `1♣`, `3NT`.
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "bid" => bid_label(self.level, &self.denomination),
            "double" => "X".into(),
            "redouble" => "XX".into(),
            k => k.to_owned(),
        }
    }
}

/// `1♣`, `4♠`, `3NT`: a bid as players write it.
pub fn bid_label(level: i64, denomination: &str) -> String {
    let d = match denomination {
        "clubs" => "♣",
        "diamonds" => "♦",
        "hearts" => "♥",
        "spades" => "♠",
        "nt" => "NT",
        other => other,
    };
    format!("{level}{d}")
}

/// A bridge contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    pub level: i64,
    pub denomination: String,
    /// 0, 1 doubled, 2 redoubled.
    pub doubled: i64,
    /// The declaring side, `ns` or `ew`.
    pub partnership: String,
}

impl Contract {
    /// `4♠`, `3NT X`, `2♥ XX`.
    pub fn label(&self) -> String {
        let x = match self.doubled {
            1 => " X",
            2 => " XX",
            _ => "",
        };
        format!("{}{x}", bid_label(self.level, &self.denomination))
    }
}

/// One card of a bridge trick.
#[derive(Debug, Clone, PartialEq)]
pub struct TrickCard {
    /// Who played it (the declarer for the dummy's cards).
    pub public_key: String,
    /// Whose hand it came from.
    pub hand_owner: String,
    pub card: Card,
}

/// What contract-bridge-v1 adds to a table (the board number is the
/// view's `round`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bridge {
    pub dealer: String,
    /// `none`, `ns`, `ew`, `both`.
    pub vulnerability: String,
    pub auction: Vec<Call>,
    pub contract: Option<Contract>,
    pub declarer: String,
    pub dummy: String,
    pub dummy_revealed: bool,
    /// The dummy's cards once revealed, sorted ([`sort_by_suit`]).
    pub dummy_hand: Vec<Card>,
    /// Whose hand is to play (the dummy's when the declarer plays it).
    pub hand_owner: String,
    pub trick: Vec<TrickCard>,
    /// Tricks played, and the last one's winner and cards.
    pub tricks_played: usize,
    pub last_trick: Option<(String, Vec<TrickCard>)>,
    /// Tricks won and points by side.
    pub tricks_ns: i64,
    pub tricks_ew: i64,
    pub score_ns: i64,
    pub score_ew: i64,
    /// The cards this seat plays now (the dummy's when the declarer plays
    /// them), sorted.
    pub playable: Vec<Card>,
    /// This seat's side, `ns` or `ew`.
    pub side: String,
}

impl Bridge {
    /// Is the viewer (`you`) the declarer playing from the dummy now?
    pub fn plays_dummy(&self, you: &str) -> bool {
        !you.is_empty() && self.declarer == you && self.hand_owner == self.dummy
    }
}

/// What one game adds to the common view.
#[derive(Debug, Clone, PartialEq)]
pub enum Game {
    Landlord(Landlord),
    Holdem(Holdem),
    Bridge(Bridge),
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
            "texas-holdem-v1" => holdem(alias, v),
            "contract-bridge-v1" => bridge(alias, v),
            _ => Err(format!("palaver has no table view for {alias} yet")),
        }
    }

    /// Is it this seat's turn in a phase that takes actions?
    pub fn your_turn(&self) -> bool {
        !self.you.is_empty()
            && self.current == self.you
            && matches!(
                self.phase.as_str(),
                "bidding" | "playing" | "betting" | "auction"
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

fn holdem(alias: &str, v: &Map) -> Result<TableView, String> {
    let button = text(v.get("button"));
    let sb = text(v.get("small_blind_player"));
    let bb = text(v.get("big_blind_player"));
    let seats = seats_of(v, &|s, p| {
        let n = |k: &str| p.and_then(|p| int(p.get(k)));
        let b = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_bool) == Some(true);
        s.stack = n("stack");
        s.wager = n("street_contribution");
        s.folded = b("folded");
        s.all_in = b("all_in");
        let pk = s.public_key.as_str();
        s.role = if pk == button {
            "button"
        } else if pk == sb {
            "small blind"
        } else if pk == bb {
            "big blind"
        } else {
            ""
        }
        .to_owned();
    })?;
    let mut hand = cards(v.get("my_hand"));
    sort_by_suit(&mut hand);
    hand.sort_by_key(|c| -c.value);
    let legal = v.get("legal").and_then(Value::as_object);
    let l = |k: &str| legal.and_then(|m| int(m.get(k))).unwrap_or(0);
    let pots = v
        .get("pot_results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_SEATS)
        .filter_map(Value::as_object)
        .map(|p| PotResult {
            amount: int(p.get("amount")).unwrap_or(0),
            winners: keys(p.get("winners")),
        })
        .collect();
    let shown = v
        .get("showdown_hands")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .take(MAX_SEATS)
        .map(|(pk, h)| Shown {
            public_key: pk.to_owned(),
            cards: cards(h.get("cards")),
            category: text(h.get("category")),
        })
        .collect();
    let game = Holdem {
        street: text(v.get("street")),
        button,
        small_blind: sb,
        big_blind: bb,
        current_bet: int(v.get("current_bet")).unwrap_or(0),
        last_full_raise: int(v.get("last_full_raise")).unwrap_or(0),
        pot: int(v.get("pot_total")).unwrap_or(0),
        board: cards(v.get("board")),
        to_call: l("to_call"),
        min_raise_to: l("min_raise_to"),
        max_to: l("max_to"),
        can_raise: legal
            .and_then(|m| m.get("can_raise"))
            .and_then(Value::as_bool)
            == Some(true),
        pots,
        shown,
    };
    Ok(common(
        alias,
        v,
        "hand_number",
        seats,
        hand,
        Game::Holdem(game),
    ))
}

fn bridge(alias: &str, v: &Map) -> Result<TableView, String> {
    let declarer = text(v.get("declarer"));
    let dummy = text(v.get("dummy"));
    let seats = seats_of(v, &|s, p| {
        let compass = p.map(|p| text(p.get("compass"))).unwrap_or_default();
        s.role = if s.public_key == declarer {
            format!("{compass} declarer")
        } else if s.public_key == dummy {
            format!("{compass} dummy")
        } else {
            compass
        };
    })?;
    let sorted = |k: &str| {
        let mut c = cards(v.get(k));
        sort_by_suit(&mut c);
        c
    };
    let trick_of = |t: Option<&Value>| -> Vec<TrickCard> {
        t.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_SEATS)
            .filter_map(|p| {
                Some(TrickCard {
                    public_key: text(p.get("public_key")),
                    hand_owner: text(p.get("hand_owner")),
                    card: Card::parse(p.get("card")?)?,
                })
            })
            .collect()
    };
    let history = v.get("trick_history").and_then(Value::as_array);
    let last_trick = history
        .and_then(|h| h.last())
        .map(|t| (text(t.get("winner")), trick_of(t.get("cards"))));
    let auction = v
        .get("auction")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(Value::as_object)
        .map(|c| Call {
            public_key: text(c.get("public_key")),
            kind: text(c.get("kind")),
            level: int(c.get("level")).unwrap_or(0),
            denomination: text(c.get("denomination")),
        })
        .collect();
    let contract = v
        .get("contract")
        .and_then(Value::as_object)
        .map(|c| Contract {
            level: int(c.get("level")).unwrap_or(0),
            denomination: text(c.get("denomination")),
            doubled: int(c.get("doubled")).unwrap_or(0),
            partnership: text(c.get("partnership")),
        });
    let side = |m: &str, k: &str| {
        v.get(m)
            .and_then(Value::as_object)
            .and_then(|t| int(t.get(k)))
            .unwrap_or(0)
    };
    let game = Bridge {
        dealer: text(v.get("dealer")),
        vulnerability: text(v.get("vulnerability")),
        auction,
        contract,
        declarer: declarer.clone(),
        dummy: dummy.clone(),
        dummy_revealed: v.get("dummy_revealed").and_then(Value::as_bool) == Some(true),
        dummy_hand: sorted("dummy_hand"),
        hand_owner: text(v.get("current_hand_owner")),
        trick: trick_of(v.get("current_trick")),
        tricks_played: history.map_or(0, Vec::len),
        last_trick,
        tricks_ns: side("tricks", "ns"),
        tricks_ew: side("tricks", "ew"),
        score_ns: side("scores", "ns"),
        score_ew: side("scores", "ew"),
        playable: sorted("playable_hand"),
        side: v
            .get("you")
            .and_then(|y| y.get("partnership"))
            .map(|p| text(Some(p)))
            .unwrap_or_default(),
    };
    Ok(common(
        alias,
        v,
        "board_number",
        seats,
        sorted("my_hand"),
        Game::Bridge(game),
    ))
}

fn landlord(alias: &str, v: &Map) -> Result<TableView, String> {
    let per = |k: &str| v.get(k).and_then(Value::as_object);
    let (scores, bids) = (per("scores"), per("bids"));
    let seats = seats_of(v, &|s, p| {
        let at = |m: Option<&Map>| m.and_then(|m| int(m.get(&s.public_key)));
        s.role = p.map(|p| text(p.get("role"))).unwrap_or_default();
        s.score = at(scores);
        s.bid = at(bids);
    })?;
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
    Ok(common(
        alias,
        v,
        "round_number",
        seats,
        hand,
        Game::Landlord(game),
    ))
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

    fn members() -> Vec<Value> {
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
    fn dealt(alias: &str) -> (Box<dyn crate::protocols::tables::Table>, Value) {
        let mut rules =
            crate::protocols::tables::table_for_alias(alias, &obj! { "deal_seed" => "unit" })
                .unwrap();
        let state = rules.initial_state(&members()).unwrap();
        (rules, state)
    }

    #[test]
    fn a_holdem_view_reads_its_stacks_blinds_and_bet() {
        let alias = "texas-holdem-v1";
        let (mut rules, state) = dealt(alias);
        let current = state.get_str("current_player").unwrap().to_owned();
        let n: i64 = current.trim_start_matches("pk").parse().unwrap();
        let member = &members()[n as usize];
        let view = rules.view(&state, member).unwrap();
        let t = TableView::parse(alias, &view).unwrap();
        assert_eq!(t.round, Some(1));
        assert_eq!(t.phase, "betting");
        assert!(t.your_turn());
        assert_eq!(t.hand.len(), 2);
        // Ace high first.
        assert!(t.hand[0].value >= t.hand[1].value && t.hand[0].value >= 2);
        let h = t.holdem().unwrap();
        assert_eq!(h.street, "preflop");
        assert!(h.board.is_empty());
        // Blinds of 5 and 10 from stacks of 1000: 10 to call for the
        // first to act, a raise to 20 at least.
        assert_eq!((h.pot, h.current_bet, h.to_call), (15, 10, 10));
        assert_eq!((h.min_raise_to, h.max_to), (20, 1000));
        assert!(h.can_raise);
        let sb = t.seat_of(&h.small_blind).unwrap();
        assert_eq!(
            (sb.stack, sb.wager, sb.role.as_str()),
            (Some(995), Some(5), "small blind")
        );
        assert_eq!(t.seat_of(&h.button).unwrap().role, "button");
        assert!(t.landlord().is_none() && t.bridge().is_none());
    }

    #[test]
    fn a_bridge_view_reads_the_auction_and_the_dummy_it_plays() {
        let alias = "contract-bridge-v1";
        let (mut rules, mut state) = dealt(alias);
        let me = members()[0].clone();
        let t = TableView::parse(alias, &rules.view(&state, &me).unwrap()).unwrap();
        // Board 1: north deals and calls first; 13 cards sorted by suit.
        assert!(t.your_turn());
        assert_eq!(t.phase, "auction");
        assert_eq!(t.hand.len(), 13);
        let groups: Vec<i64> = t.hand.iter().map(Card::suit_group).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(t.seats[2].role, "south");
        // North bids 1NT, everyone passes: north declares, south is the
        // dummy, east leads.
        let act = |rules: &mut Box<dyn crate::protocols::tables::Table>,
                   state: &mut Value,
                   n: usize,
                   a: Value| {
            let r = rules.handle(state.clone(), &members()[n], &a).unwrap();
            *state = r.get("state").unwrap().clone();
        };
        let bid = obj! { "kind" => "bid", "level" => 1, "denomination" => "nt" };
        act(&mut rules, &mut state, 0, Value::Object(bid));
        for n in 1..4 {
            act(
                &mut rules,
                &mut state,
                n,
                Value::Object(obj! { "kind" => "pass" }),
            );
        }
        let east = rules.view(&state, &members()[1]).unwrap();
        let lead = rules.legal_actions(&east)[0].clone();
        act(&mut rules, &mut state, 1, lead);
        let view = rules.view(&state, &me).unwrap();
        let t = TableView::parse(alias, &view).unwrap();
        let b = t.bridge().unwrap();
        assert_eq!(
            b.auction.iter().map(Call::label).collect::<Vec<_>>(),
            ["1NT", "pass", "pass", "pass"]
        );
        assert_eq!(b.contract.as_ref().unwrap().label(), "1NT");
        assert_eq!((b.declarer.as_str(), b.dummy.as_str()), ("pk0", "pk2"));
        assert_eq!(t.seats[0].role, "north declarer");
        assert!(b.dummy_revealed && b.dummy_hand.len() == 13);
        assert_eq!(b.trick.len(), 1);
        // The declarer plays the dummy's cards: the picker holds them.
        assert!(t.your_turn() && b.plays_dummy(&t.you));
        assert_eq!(t.pick_hand(), b.dummy_hand.as_slice());
        assert_eq!(t.hand.len(), 13);
        // South, the dummy, never has the turn.
        let south = TableView::parse(alias, &rules.view(&state, &members()[2]).unwrap()).unwrap();
        assert!(!south.your_turn());
        assert_eq!(south.pick_hand(), south.hand.as_slice());
    }

    #[test]
    fn odd_views_are_refused_or_read_without_a_panic() {
        let alias = "four-player-landlord-v1";
        assert!(TableView::parse(alias, &Value::from(3)).is_err());
        assert!(TableView::parse("upgrade-tractor-v1", &Value::Object(Map::new())).is_err());
        assert!(TableView::parse(alias, &Value::Object(obj! { "players" => 1 })).is_err());
        for odd in [
            r#"{"players":{"x":5},"my_hand":[1,{"value":"7"},null],"last_play":[],"you":3}"#,
            r#"{"turn_order":["a","a",7],"bids":[],"scores":{"a":1.5},"discard":{}}"#,
            r#"{"legal":[],"board":{"a":1},"pot_results":[3,{"winners":7}],"showdown_hands":{"a":2}}"#,
            r#"{"auction":[1,{"level":"x"}],"contract":[],"current_trick":[{"card":3}],"trick_history":[{}],"tricks":7,"playable_hand":"x"}"#,
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
