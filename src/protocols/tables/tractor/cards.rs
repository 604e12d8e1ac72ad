//! Cards of upgrade-tractor-v1: the faces of one deck, a card's effective
//! suit (its *class*: a plain suit, or `trump` for the jokers, every card of
//! the level rank and every card of the trump suit), its strength inside
//! its class, and the positions that decide whether pairs are consecutive
//! (a tractor).
//!
//! Inside the trump class the order is: the trump suit's other ranks, then
//! the level cards of the other suits (all equal), then the level card of
//! the trump suit, the small joker and the big joker. With no trump suit
//! (no-trump), the class holds only level cards and jokers.

use crate::json::{Map, Value};
use crate::obj;

/// The four plain suits, as the cards name them.
pub const SUITS: [&str; 4] = ["clubs", "diamonds", "hearts", "spades"];

/// The class name of every trump card.
pub const TRUMP: &str = "trump";

/// The small and the big joker's ranks.
pub const SMALL_JOKER: i64 = 16;
pub const BIG_JOKER: i64 = 17;

/// A card's face. Ordered by suit name, then rank (the order the rules
/// list a play's signatures in: `joker` sorts between `hearts` and
/// `spades`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Face {
    pub suit: &'static str,
    pub rank: i64,
}

impl Face {
    /// The face of a catalog card (`{suit, rank, ...}`), checked.
    pub fn of(card: &Value) -> Result<Face, String> {
        let bad = || "card face is invalid".to_owned();
        let suit = card.get_str("suit").ok_or_else(bad)?;
        let suit = SUITS
            .iter()
            .chain(["joker"].iter())
            .find(|s| **s == suit)
            .copied()
            .ok_or_else(bad)?;
        let rank = card.get("rank").and_then(Value::as_i64).ok_or_else(bad)?;
        let joker_rank = rank == SMALL_JOKER || rank == BIG_JOKER;
        if !((2..=14).contains(&rank) || joker_rank) || (suit == "joker") != joker_rank {
            return Err(bad());
        }
        Ok(Face { suit, rank })
    }

    pub fn is_joker(self) -> bool {
        self.suit == "joker"
    }

    /// Points a captured card is worth: 5 for a five, 10 for a ten or king.
    pub fn points(self) -> i64 {
        match self.rank {
            5 => 5,
            10 | 13 => 10,
            _ => 0,
        }
    }
}

/// The faces of a list of catalog cards.
pub fn faces_of(cards: &[Value]) -> Result<Vec<Face>, String> {
    cards.iter().map(Face::of).collect()
}

/// What decides the classes: the level rank and the trump suit (none in
/// no-trump). Built from whatever a state holds; [`Ctx::check`] refuses a
/// level outside 2–14 or a trump that is no suit, as the rules do before
/// they classify anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    pub level: i64,
    pub trump: Option<&'static str>,
    /// The state's trump suit was neither null nor a plain suit.
    bad_trump: bool,
}

impl Ctx {
    pub fn new(level: i64, trump: Option<&'static str>) -> Ctx {
        Ctx {
            level,
            trump,
            bad_trump: false,
        }
    }

    /// The context of a view (`level_rank`, `trump_suit`).
    pub fn of(view: &Value) -> Ctx {
        Ctx::of_map(view.as_object().unwrap_or(&Map::new()))
    }

    /// The context of a state (`level_rank`, `trump_suit`).
    pub fn of_map(state: &Map) -> Ctx {
        let level = state.get("level_rank").and_then(Value::as_i64).unwrap_or(0);
        match state.get("trump_suit") {
            None | Some(Value::Null) => Ctx::new(level, None),
            Some(v) => match SUITS.iter().find(|s| v.as_str() == Some(**s)) {
                Some(s) => Ctx::new(level, Some(s)),
                None => Ctx {
                    level,
                    trump: None,
                    bad_trump: true,
                },
            },
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if !(2..=14).contains(&self.level) {
            return Err("level_rank must be between 2 and 14".into());
        }
        if self.bad_trump {
            return Err("trump_suit must be a standard suit or null".into());
        }
        Ok(())
    }

    /// The card's class: `trump` or its own suit.
    pub fn class(&self, f: Face) -> &'static str {
        if f.is_joker() || f.rank == self.level || Some(f.suit) == self.trump {
            TRUMP
        } else {
            f.suit
        }
    }

    pub fn is_trump(&self, f: Face) -> bool {
        self.class(f) == TRUMP
    }

    /// A single card's strength: (1 for trump else 0, value in the class).
    pub fn strength(&self, f: Face) -> (i64, i64) {
        if !self.is_trump(f) {
            return (0, f.rank);
        }
        let value = match f.rank {
            BIG_JOKER => 1000,
            SMALL_JOKER => 990,
            r if r == self.level && Some(f.suit) == self.trump => 980,
            r if r == self.level => 970,
            r => r,
        };
        (1, value)
    }

    /// Where a face stands in `class`, for consecutive pairs; refused for a
    /// face outside the class.
    pub fn position(&self, f: Face, class: &str) -> Result<i64, String> {
        let below_level = |rank: i64| rank - 2 - i64::from(rank > self.level);
        if class != TRUMP {
            if f.suit != class || f.rank == self.level {
                return Err("card face is outside the effective suit".into());
            }
            return Ok(below_level(f.rank));
        }
        // The trump suit's plain ranks come first (none in no-trump).
        let plain = if self.trump.is_some() { 12 } else { 0 };
        if let Some(t) = self.trump
            && f.suit == t
            && f.rank != self.level
        {
            return Ok(below_level(f.rank));
        }
        if f.rank == self.level && Some(f.suit) != self.trump {
            return Ok(plain);
        }
        if f.rank == self.level {
            return Ok(plain + 1);
        }
        let offset = if self.trump.is_some() { 2 } else { 1 };
        match (f.suit, f.rank) {
            ("joker", SMALL_JOKER) => Ok(plain + offset),
            ("joker", BIG_JOKER) => Ok(plain + offset + 1),
            _ => Err("card face is outside the trump sequence".into()),
        }
    }
}

/// One deck's 54 faces in the reference's catalog order: the suits in
/// order, ranks 2 to ace, then the small and the big joker.
pub fn deck_faces() -> Vec<Map> {
    let label = |rank: i64| match rank {
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        14 => "A".to_owned(),
        r => r.to_string(),
    };
    let mut out = Vec::with_capacity(54);
    for suit in SUITS {
        let letter = suit[..1].to_uppercase();
        let color = if suit == "diamonds" || suit == "hearts" {
            "red"
        } else {
            "black"
        };
        for rank in 2..=14 {
            let code = format!("{}{letter}", label(rank));
            out.push(obj! {
                "code" => code.as_str(), "suit" => suit, "rank" => rank, "label" => code.as_str(), "color" => color,
            });
        }
    }
    out.push(obj! {
        "code" => "SJ", "suit" => "joker", "rank" => SMALL_JOKER, "label" => "Small Joker", "color" => "black",
    });
    out.push(obj! {
        "code" => "BJ", "suit" => "joker", "rank" => BIG_JOKER, "label" => "Big Joker", "color" => "red",
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(suit: &'static str, rank: i64) -> Face {
        Face { suit, rank }
    }

    #[test]
    fn the_trump_class_holds_jokers_level_cards_and_the_trump_suit() {
        let ctx = Ctx::new(7, Some("hearts"));
        assert_eq!(ctx.class(f("hearts", 3)), TRUMP);
        assert_eq!(ctx.class(f("spades", 7)), TRUMP);
        assert_eq!(ctx.class(f("joker", SMALL_JOKER)), TRUMP);
        assert_eq!(ctx.class(f("spades", 14)), "spades");
        let nt = Ctx::new(7, None);
        assert_eq!(nt.class(f("hearts", 3)), "hearts");
        assert_eq!(nt.class(f("clubs", 7)), TRUMP);
    }

    #[test]
    fn trump_order_is_jokers_then_trump_level_then_other_levels_then_suit() {
        let ctx = Ctx::new(7, Some("hearts"));
        let order = [
            f("hearts", 14),
            f("spades", 7),
            f("hearts", 7),
            f("joker", SMALL_JOKER),
            f("joker", BIG_JOKER),
        ];
        for w in order.windows(2) {
            assert!(ctx.strength(w[0]) < ctx.strength(w[1]), "{w:?}");
        }
        // Any trump beats any plain card; the off-suit levels tie.
        assert!(ctx.strength(f("hearts", 2)) > ctx.strength(f("spades", 14)));
        assert_eq!(ctx.strength(f("spades", 7)), ctx.strength(f("clubs", 7)));
    }

    #[test]
    fn positions_skip_the_level_rank_and_run_on_through_the_trumps() {
        let ctx = Ctx::new(7, Some("hearts"));
        assert_eq!(ctx.position(f("spades", 6), "spades"), Ok(4));
        assert_eq!(ctx.position(f("spades", 8), "spades"), Ok(5));
        assert!(ctx.position(f("spades", 7), "spades").is_err());
        assert_eq!(ctx.position(f("hearts", 14), TRUMP), Ok(11));
        assert_eq!(ctx.position(f("clubs", 7), TRUMP), Ok(12));
        assert_eq!(ctx.position(f("hearts", 7), TRUMP), Ok(13));
        assert_eq!(ctx.position(f("joker", SMALL_JOKER), TRUMP), Ok(14));
        assert_eq!(ctx.position(f("joker", BIG_JOKER), TRUMP), Ok(15));
        let nt = Ctx::new(7, None);
        assert_eq!(nt.position(f("clubs", 7), TRUMP), Ok(0));
        assert_eq!(nt.position(f("joker", SMALL_JOKER), TRUMP), Ok(1));
        assert_eq!(nt.position(f("joker", BIG_JOKER), TRUMP), Ok(2));
    }

    #[test]
    fn faces_are_checked_and_the_deck_has_54() {
        let card = |s: &str, r: i64| Value::Object(obj! { "suit" => s, "rank" => r });
        assert_eq!(Face::of(&card("spades", 13)), Ok(f("spades", 13)));
        assert!(Face::of(&card("joker", 13)).is_err());
        assert!(Face::of(&card("spades", 16)).is_err());
        assert!(Face::of(&card("stars", 3)).is_err());
        assert!(Face::of(&Value::from(3)).is_err());
        let deck = deck_faces();
        assert_eq!(deck.len(), 54);
        assert_eq!(deck[0].get_str("code"), Some("2C"));
        assert_eq!(deck[12].get_str("code"), Some("AC"));
        assert_eq!(deck[53].get_str("label"), Some("Big Joker"));
        assert_eq!(f("clubs", 5).points() + f("hearts", 13).points(), 15);
    }
}
