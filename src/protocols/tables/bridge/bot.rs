//! What a seat may send and what a bot sends: the legal calls and cards
//! read from a seat's view, a bot that bids naturally by its high-card
//! points and plays by the usual rules of thumb (second hand low, third
//! hand high, ruff only to win).

use super::auction::{bid_of_value, bid_value};
use super::play::winning_index;
use super::{Bridge, SUITS};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::Table;

impl Table for Bridge {
    fn legal_actions(&self, view: &Value) -> Vec<Value> {
        let Some(me) = my_turn(view) else {
            return Vec::new();
        };
        match view.get_str("phase") {
            Some("auction") => {
                let mut out = vec![call_action("pass")];
                let a = Auction::of(view, me);
                if a.can_double() {
                    out.push(call_action("double"));
                }
                if a.can_redouble() {
                    out.push(call_action("redouble"));
                }
                for value in a.last_value.saturating_add(1).max(0)..35 {
                    let (level, denomination) = bid_of_value(value);
                    out.push(bid_action(level, denomination));
                }
                out
            }
            Some("playing") => legal_cards(view)
                .into_iter()
                .map(|c| play_action(&c.id))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn bot_action(&self, view: &Value) -> Option<Value> {
        let me = my_turn(view)?;
        match view.get_str("phase")? {
            "auction" => Some(bot_call(view, me)),
            "playing" => bot_card(view).map(|id| play_action(&id)),
            _ => None,
        }
    }

    fn is_legal_selection(&self, view: &Value, ids: &[String]) -> bool {
        my_turn(view).is_some()
            && view.get_str("phase") == Some("playing")
            && ids.len() == 1
            && legal_cards(view).iter().any(|c| c.id == ids[0])
    }
}

pub(super) fn call_action(kind: &str) -> Value {
    Value::Object(obj! { "kind" => kind })
}

pub(super) fn bid_action(level: i64, denomination: &str) -> Value {
    Value::Object(obj! { "kind" => "bid", "level" => level, "denomination" => denomination })
}

pub(super) fn play_action(card_id: &str) -> Value {
    Value::Object(obj! { "kind" => "play", "card_id" => card_id })
}

/// The viewer's key when it is the viewer's turn.
fn my_turn(view: &Value) -> Option<&str> {
    let me = view.get("you")?.get_str("public_key")?;
    (view.get_str("current_player") == Some(me)).then_some(me)
}

/// A card as the bot sees it.
#[derive(Debug, Clone)]
pub(super) struct Card {
    pub(super) id: String,
    pub(super) suit: String,
    pub(super) rank: i64,
}

pub(super) fn cards_of(v: Option<&Value>) -> Vec<Card> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some(Card {
                        id: c.get_str("card_id")?.to_owned(),
                        suit: c.get_str("suit")?.to_owned(),
                        rank: c.get("rank")?.as_i64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The cards of the hand to play that may be played now.
fn legal_cards(view: &Value) -> Vec<Card> {
    let playable = cards_of(view.get("playable_hand"));
    let led = view
        .get("current_trick")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(|p| p.get("card"))
        .and_then(|c| c.get_str("suit"))
        .map(str::to_owned);
    match led {
        Some(led) if playable.iter().any(|c| c.suit == led) => {
            playable.into_iter().filter(|c| c.suit == led).collect()
        }
        _ => playable,
    }
}

/// The auction as a seat sees it in its view.
struct Auction<'a> {
    view: &'a Value,
    me: &'a str,
    /// The last bid's rank, -1 before any bid.
    last_value: i64,
    last_bidder: Option<&'a str>,
    doubled: i64,
    last_non_pass: Option<&'a str>,
}

impl<'a> Auction<'a> {
    fn of(view: &'a Value, me: &'a str) -> Self {
        let last = view.get("last_bid").filter(|b| !b.is_null());
        let last_non_pass = view.get("auction").and_then(Value::as_array).and_then(|a| {
            a.iter()
                .rev()
                .filter_map(|c| c.get_str("kind"))
                .find(|k| *k != "pass")
        });
        Auction {
            view,
            me,
            last_value: last
                .and_then(|b| b.get("value"))
                .and_then(Value::as_i64)
                .unwrap_or(-1),
            last_bidder: last.and_then(|b| b.get_str("public_key")),
            doubled: view.get("doubled").and_then(Value::as_i64).unwrap_or(0),
            last_non_pass,
        }
    }

    fn team(&self, pk: &str) -> Option<&'a str> {
        self.view.get("players")?.get(pk)?.get_str("partnership")
    }

    fn ours(&self, pk: &str) -> bool {
        self.team(pk).is_some() && self.team(pk) == self.team(self.me)
    }

    fn can_double(&self) -> bool {
        self.last_bidder.is_some_and(|b| !self.ours(b))
            && self.doubled == 0
            && self.last_non_pass == Some("bid")
    }

    fn can_redouble(&self) -> bool {
        self.last_bidder.is_some_and(|b| self.ours(b))
            && self.doubled == 1
            && self.last_non_pass == Some("double")
    }

    /// The last denomination `who` bid (`who`: partner or opponents).
    fn bids_by(&self, partner: bool) -> Vec<&'a str> {
        self.view
            .get("auction")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|c| c.get_str("kind") == Some("bid"))
                    .filter(|c| {
                        let pk = c.get_str("public_key").unwrap_or_default();
                        if partner {
                            pk != self.me && self.ours(pk)
                        } else {
                            !self.ours(pk)
                        }
                    })
                    .filter_map(|c| c.get_str("denomination"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn my_bids(&self) -> usize {
        self.view
            .get("auction")
            .and_then(Value::as_array)
            .map_or(0, |a| {
                a.iter()
                    .filter(|c| {
                        c.get_str("kind") == Some("bid") && c.get_str("public_key") == Some(self.me)
                    })
                    .count()
            })
    }

    /// The lowest level at which `denomination` outranks the last bid.
    fn lowest_level(&self, denomination: &str) -> i64 {
        (1..=8)
            .find(|l| bid_value(*l, denomination) > self.last_value)
            .unwrap_or(8)
    }
}

/// High-card points: ace 4, king 3, queen 2, jack 1.
fn hcp(hand: &[Card]) -> i64 {
    hand.iter()
        .map(|c| c.rank.saturating_sub(10).clamp(0, 4))
        .sum()
}

fn suit_len(hand: &[Card], suit: &str) -> usize {
    hand.iter().filter(|c| c.suit == suit).count()
}

fn balanced(hand: &[Card]) -> bool {
    let lens: Vec<usize> = SUITS.iter().map(|s| suit_len(hand, s)).collect();
    lens.iter().all(|n| *n >= 2) && lens.iter().filter(|n| **n == 2).count() <= 1
}

/// The longest suit (majors first among equals).
fn longest_suit(hand: &[Card]) -> &'static str {
    let mut best = "clubs";
    for s in SUITS {
        if suit_len(hand, s) >= suit_len(hand, best) {
            best = s;
        }
    }
    best
}

/// Natural bidding: open at 12+ points (1NT with a balanced 15–17), raise
/// or bid on with partner to the level the combined points earn (game at
/// 26, slam at 33), overcall a five-card suit at 9+ points, double the
/// opponents' low bid at 13+; otherwise pass.
fn bot_call(view: &Value, me: &str) -> Value {
    let hand = cards_of(view.get("my_hand"));
    let points = hcp(&hand);
    let a = Auction::of(view, me);
    let longest = longest_suit(&hand);
    let bid_at = |d: &str, max_level: i64| {
        let level = a.lowest_level(d);
        (level <= max_level.min(7)).then(|| bid_action(level, d))
    };
    if a.can_redouble() && points >= 14 {
        return call_action("redouble");
    }
    let partner = a.bids_by(true);
    let opponents = a.bids_by(false);
    if let Some(&their) = partner.last() {
        let fit = match their {
            "nt" => balanced(&hand),
            suit => suit_len(&hand, suit) >= 3,
        };
        let denomination = if fit {
            their
        } else if suit_len(&hand, longest) >= 5 {
            longest
        } else {
            "nt"
        };
        let combined = points + 12;
        let game = match denomination {
            "nt" => 3,
            "hearts" | "spades" => 4,
            _ => 5,
        };
        let target = match combined {
            c if c >= 37 => 7,
            c if c >= 33 => 6,
            c if c >= 26 => game,
            c if c >= 23 => 3.min(game),
            c if c >= 19 => 2,
            _ => 0,
        };
        // One raise per call of partner's: never outbid partner's game.
        if a.my_bids() < partner.len() {
            return bid_at(denomination, target).unwrap_or_else(|| call_action("pass"));
        }
        return call_action("pass");
    }
    if a.my_bids() == 0 {
        if opponents.is_empty() {
            if (15..=17).contains(&points) && balanced(&hand) {
                return bid_at("nt", 1).unwrap_or_else(|| call_action("pass"));
            }
            if points >= 12 || (points >= 10 && suit_len(&hand, longest) >= 6) {
                return bid_at(longest, 1).unwrap_or_else(|| call_action("pass"));
            }
        } else {
            let their_level = bid_of_value(a.last_value.max(0)).0;
            if a.can_double() && points >= 13 && their_level <= 2 {
                return call_action("double");
            }
            if points >= 9 && suit_len(&hand, longest) >= 5 {
                return bid_at(longest, 2).unwrap_or_else(|| call_action("pass"));
            }
        }
    } else if points >= 18 && suit_len(&hand, longest) >= 6 && a.my_bids() == 1 {
        return bid_at(longest, 3).unwrap_or_else(|| call_action("pass"));
    }
    call_action("pass")
}

/// Card play: lead an ace from ace–king, else low from the longest side
/// suit; second hand low; third hand high (unless partner is winning);
/// fourth hand wins as cheaply as it can; ruff only to win; discard the
/// lowest side card.
fn bot_card(view: &Value) -> Option<String> {
    let legal = legal_cards(view);
    let trump = view
        .get("contract")
        .and_then(|c| c.get_str("denomination"))
        .filter(|d| SUITS.contains(d))
        .map(str::to_owned);
    let is_trump = |c: &Card| trump.as_deref() == Some(c.suit.as_str());
    let lowest = |cards: &[Card]| {
        cards
            .iter()
            .min_by_key(|c| (is_trump(c), c.rank))
            .map(|c| c.id.clone())
    };
    let trick: Vec<Map> = view
        .get("current_trick")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|p| p.get("card").and_then(Value::as_object).cloned())
                .collect()
        })
        .unwrap_or_default();
    if trick.is_empty() {
        return lead(&legal, trump.as_deref());
    }
    let led = trick[0].get_str("suit").unwrap_or_default().to_owned();
    let owner = view.get_str("current_hand_owner").unwrap_or_default();
    let team = |pk: &str| {
        view.get("players")
            .and_then(|p| p.get(pk))
            .and_then(|p| p.get_str("partnership"))
            .map(str::to_owned)
    };
    let owners: Vec<String> = view
        .get("current_trick")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|p| p.get_str("hand_owner").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let winning = winning_index(&trick, &led, trump.as_deref());
    let partner_winning = owners
        .get(winning)
        .is_some_and(|w| team(w).is_some() && team(w) == team(owner));
    let wins = |c: &Card| {
        let mut cards = trick.clone();
        cards.push(obj! { "suit" => c.suit.as_str(), "rank" => c.rank });
        winning_index(&cards, &led, trump.as_deref()) == trick.len()
    };
    let winners: Vec<Card> = legal.iter().filter(|c| wins(c)).cloned().collect();
    match trick.len() {
        1 => lowest(&legal),
        2 if !partner_winning => {
            // Third hand high: the top card of the suit if it wins, else
            // the cheapest winner (a ruff), else low.
            let top = legal
                .iter()
                .filter(|c| c.suit == led && wins(c))
                .max_by_key(|c| c.rank);
            top.map(|c| c.id.clone())
                .or_else(|| lowest(&winners))
                .or_else(|| lowest(&legal))
        }
        _ if partner_winning => lowest(&legal),
        _ => lowest(&winners).or_else(|| lowest(&legal)),
    }
}

fn lead(legal: &[Card], trump: Option<&str>) -> Option<String> {
    for s in SUITS {
        let has = |r: i64| legal.iter().find(|c| c.suit == s && c.rank == r);
        if let (Some(ace), Some(_)) = (has(14), has(13)) {
            return Some(ace.id.clone());
        }
    }
    let side: Vec<&Card> = legal
        .iter()
        .filter(|c| Some(c.suit.as_str()) != trump)
        .collect();
    let pool: Vec<&Card> = if side.is_empty() {
        legal.iter().collect()
    } else {
        side
    };
    let len = |s: &str| pool.iter().filter(|c| c.suit == s).count();
    let suit = pool
        .iter()
        .max_by_key(|c| (len(&c.suit), c.suit.clone()))?
        .suit
        .clone();
    pool.iter()
        .filter(|c| c.suit == suit)
        .min_by_key(|c| c.rank)
        .map(|c| c.id.clone())
}
