//! Plays of upgrade-tractor-v1: what shape a group of cards of one class
//! makes (a single, a pair of identical faces, a tractor of consecutive
//! pairs, or else a throw), what a follower owes the lead (the same count,
//! the led class first, then as many pairs as the lead had and it can
//! give, then a tractor of the lead's length when it holds one), and who
//! wins a trick.
//!
//! Refusal texts and shapes are the reference's (`proto/tractor.py` and the
//! protocol's hooks.py), compared by tests/tables_hooks.rs.

use super::cards::{Ctx, Face, SUITS, TRUMP};
use crate::json::{Map, Value};
use crate::obj;
use std::collections::BTreeMap;

/// A classified play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// `single`, `pair`, `tractor` or `throw`.
    pub kind: &'static str,
    pub count: usize,
    /// The class every card shares.
    pub suit: &'static str,
    pub pair_count: usize,
    /// Each face and how many of it, by face.
    pub signatures: BTreeMap<Face, usize>,
    /// For a tractor: how many pairs.
    pub tractor_length: Option<usize>,
}

impl Shape {
    /// The shape as the state and the events hold it.
    pub fn to_map(&self) -> Map {
        let signatures: Vec<Value> = self
            .signatures
            .iter()
            .map(|(f, n)| Value::Object(obj! { "suit" => f.suit, "rank" => f.rank, "count" => *n }))
            .collect();
        let mut m = obj! {
            "kind" => self.kind, "count" => self.count, "suit" => self.suit,
            "pair_count" => self.pair_count, "signatures" => Value::Array(signatures),
        };
        if let Some(n) = self.tractor_length {
            m.insert("tractor_length", Value::from(n));
        }
        m
    }
}

fn counts(faces: &[Face]) -> BTreeMap<Face, usize> {
    let mut out = BTreeMap::new();
    for f in faces {
        *out.entry(*f).or_insert(0) += 1;
    }
    out
}

/// How many pairs of identical faces the cards hold.
pub fn pair_count(faces: &[Face]) -> usize {
    counts(faces).values().map(|n| n / 2).sum()
}

/// The shape of a play, or why it is no play (empty, or mixing classes).
pub fn classify(faces: &[Face], ctx: &Ctx) -> Result<Shape, String> {
    if faces.is_empty() {
        return Err("a play must contain at least one card".into());
    }
    ctx.check()?;
    let suit = ctx.class(faces[0]);
    if faces.iter().any(|f| ctx.class(*f) != suit) {
        return Err("all cards in a play must share an effective suit".into());
    }
    let signatures = counts(faces);
    let mut shape = Shape {
        kind: "throw",
        count: faces.len(),
        suit,
        pair_count: signatures.values().map(|n| n / 2).sum(),
        signatures,
        tractor_length: None,
    };
    let n = faces.len();
    if n == 1 {
        shape.kind = "single";
    } else if n == 2 && shape.signatures.len() == 1 {
        shape.kind = "pair";
    } else if n >= 4 && n.is_multiple_of(2) && shape.signatures.values().all(|c| *c == 2) {
        let mut positions = shape
            .signatures
            .keys()
            .map(|f| ctx.position(*f, suit))
            .collect::<Result<Vec<i64>, String>>()?;
        positions.sort_unstable();
        if positions.windows(2).all(|w| w[1] == w[0] + 1) {
            shape.kind = "tractor";
            shape.tractor_length = Some(positions.len());
        }
    }
    Ok(shape)
}

/// The shape of a follower's play: its classification, or `mixed` when
/// its cards span classes.
pub fn safe_shape(faces: &[Face], ctx: &Ctx) -> Map {
    match classify(faces, ctx) {
        Ok(s) => s.to_map(),
        Err(_) => obj! {
            "kind" => "mixed", "count" => faces.len(), "suit" => "mixed", "pair_count" => pair_count(faces),
        },
    }
}

/// Do the cards hold `length` pairs at consecutive positions of `class`?
/// (Scanned in position order; two pairs at one position break a run.)
pub fn has_tractor(faces: &[Face], length: i64, class: &str, ctx: &Ctx) -> Result<bool, String> {
    let mut positions = counts(faces)
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .map(|(f, _)| ctx.position(f, class))
        .collect::<Result<Vec<i64>, String>>()?;
    positions.sort_unstable();
    let mut run = 1;
    for w in positions.windows(2) {
        run = if w[1] == w[0] + 1 { run + 1 } else { 1 };
        if run >= length {
            return Ok(true);
        }
    }
    Ok(length <= 1 && !positions.is_empty())
}

/// The lead of a trick as a follower is held to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub count: usize,
    pub suit: &'static str,
    pub kind: &'static str,
    pub pair_count: i64,
    pub tractor_length: i64,
}

impl Lead {
    /// A lead shape from the state (`count`, `suit`, `kind`, `pair_count`,
    /// `tractor_length`), checked.
    pub fn of(shape: &Value) -> Result<Lead, String> {
        let bad = || "lead classification is invalid".to_owned();
        let count = shape
            .get("count")
            .and_then(Value::as_i64)
            .filter(|n| *n >= 1)
            .ok_or_else(bad)?;
        let suit = SUITS
            .iter()
            .chain([TRUMP].iter())
            .find(|s| shape.get_str("suit") == Some(**s))
            .copied()
            .ok_or_else(bad)?;
        let kind = ["single", "pair", "tractor", "throw"]
            .into_iter()
            .find(|k| shape.get_str("kind") == Some(*k))
            .ok_or_else(bad)?;
        let int = |k: &str| shape.get(k).and_then(Value::as_i64).unwrap_or(0);
        Ok(Lead {
            count: usize::try_from(count).map_err(|_| bad())?,
            suit,
            kind,
            pair_count: int("pair_count"),
            tractor_length: int("tractor_length"),
        })
    }
}

/// Is `selected` (cards of `hand`) a legal follow to `lead`? The refusal
/// when it is not.
pub fn validate_follow(
    hand: &[Face],
    selected: &[Face],
    lead: &Value,
    ctx: &Ctx,
) -> Result<(), String> {
    let lead = Lead::of(lead)?;
    if selected.len() != lead.count {
        return Err("a follower must play the same number of cards".into());
    }
    ctx.check()?;
    let in_class = |f: &&Face| ctx.class(**f) == lead.suit;
    let class_hand: Vec<Face> = hand.iter().filter(in_class).copied().collect();
    let class_selected = selected.iter().filter(in_class).count();
    if class_selected != lead.count.min(class_hand.len()) {
        return Err("the follower must exhaust the led effective suit".into());
    }
    if class_hand.len() < lead.count {
        return Ok(());
    }
    let shape = classify(selected, ctx)?;
    let available = pair_count(&class_hand);
    let owed = lead.pair_count.min(available as i64);
    if (shape.pair_count as i64) < owed {
        return Err("the follower must preserve available pairs".into());
    }
    if lead.kind == "pair" && available > 0 && shape.kind != "pair" {
        return Err("an available pair must follow a pair".into());
    }
    if lead.kind == "tractor" {
        if lead.tractor_length < 2 {
            return Err("tractor lead length is invalid".into());
        }
        let same_tractor = shape.kind == "tractor"
            && shape.tractor_length.map(|n| n as i64) == Some(lead.tractor_length);
        if has_tractor(&class_hand, lead.tractor_length, lead.suit, ctx)? && !same_tractor {
            return Err("an available tractor must follow a tractor".into());
        }
    }
    Ok(())
}

/// A single, pair or tractor's strength: the card's for a single, else the
/// position of its highest face in its class.
fn play_strength(faces: &[Face], shape: &Shape, ctx: &Ctx) -> Result<(i64, i64), String> {
    if shape.kind == "single" {
        return Ok(ctx.strength(faces[0]));
    }
    let mut best = None;
    for f in shape.signatures.keys() {
        let p = ctx.position(*f, shape.suit)?;
        best = Some(best.map_or(p, |b: i64| b.max(p)));
    }
    Ok((i64::from(shape.suit == TRUMP), best.unwrap_or(0)))
}

/// Does `challenger` beat `holder` (the play now winning a trick led by a
/// single, pair or tractor)? It must have the holder's kind and count, and
/// be trump over a plain holder or stronger in the holder's class. An
/// unclassifiable challenger never wins.
fn beats(holder: &[Face], challenger: &[Face], ctx: &Ctx) -> Result<bool, String> {
    let held = classify(holder, ctx)?;
    if held.kind == "throw" {
        return Err("throw resolution must be handled by the protocol profile".into());
    }
    let held_strength = play_strength(holder, &held, ctx)?;
    let shape = classify(challenger, ctx)?;
    if shape.count != held.count || shape.kind != held.kind {
        return Ok(false);
    }
    if shape.suit != held.suit && shape.suit != TRUMP {
        return Ok(false);
    }
    let strength = play_strength(challenger, &shape, ctx)?;
    Ok((shape.suit == TRUMP && held.suit != TRUMP)
        || (shape.suit == held.suit && strength > held_strength))
}

/// A throw's strength: its cards' strengths, strongest first.
fn throw_strength(faces: &[Face], ctx: &Ctx) -> Vec<(i64, i64)> {
    let mut s: Vec<(i64, i64)> = faces.iter().map(|f| ctx.strength(*f)).collect();
    s.sort_unstable_by(|a, b| b.cmp(a));
    s
}

/// One play of a trick: its cards and its shape's class (`mixed` for a
/// follower's cards of several classes).
#[derive(Debug, Clone)]
pub struct Played {
    pub faces: Vec<Face>,
    pub kind: String,
    pub suit: String,
}

impl Played {
    /// A play as the state holds it (`{cards, shape}`).
    pub fn of(play: &Value) -> Result<Played, String> {
        let cards = play
            .get("cards")
            .and_then(Value::as_array)
            .ok_or("a trick play has no cards")?;
        let shape = play.get("shape");
        let field = |k: &str| {
            shape
                .and_then(|s| s.get_str(k))
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Played {
            faces: super::cards::faces_of(cards)?,
            kind: field("kind"),
            suit: field("suit"),
        })
    }
}

/// The index of the play that wins a trick. A lead of a single, pair or
/// tractor is taken by the same kind: trump over a plain suit, or a
/// stronger play of the winning class. A throw is taken by any trump play
/// of the class `trump` over a plain winner, or by a play of the winner's
/// class whose cards, strongest first, are stronger.
pub fn trick_winner(trick: &[Played], ctx: &Ctx) -> usize {
    let Some(lead) = trick.first() else {
        return 0;
    };
    let mut winner = 0;
    if lead.kind != "throw" {
        for (i, p) in trick.iter().enumerate().skip(1) {
            if beats(&trick[winner].faces, &p.faces, ctx).unwrap_or(false) {
                winner = i;
            }
        }
        return winner;
    }
    for (i, p) in trick.iter().enumerate().skip(1) {
        if p.suit != lead.suit && p.suit != TRUMP {
            continue;
        }
        let held = &trick[winner];
        let ruffs = held.suit != TRUMP && p.suit == TRUMP;
        if ruffs
            || (p.suit == held.suit
                && throw_strength(&p.faces, ctx) > throw_strength(&held.faces, ctx))
        {
            winner = i;
        }
    }
    winner
}

#[cfg(test)]
mod tests {
    use super::super::cards::{BIG_JOKER, SMALL_JOKER};
    use super::*;

    fn f(suit: &'static str, rank: i64) -> Face {
        Face { suit, rank }
    }

    fn lead(shape: &Shape) -> Value {
        Value::Object(shape.to_map())
    }

    fn ctx() -> Ctx {
        Ctx::new(7, Some("hearts"))
    }

    #[test]
    fn shapes_of_singles_pairs_tractors_and_throws() {
        let c = ctx();
        let k = |v: &[Face]| classify(v, &c).map(|s| (s.kind, s.tractor_length));
        assert_eq!(k(&[f("spades", 9)]), Ok(("single", None)));
        assert_eq!(k(&[f("spades", 9), f("spades", 9)]), Ok(("pair", None)));
        assert_eq!(k(&[f("spades", 9), f("spades", 10)]), Ok(("throw", None)));
        // 6 and 8 of spades are consecutive: the level rank 7 is skipped.
        let t = [
            f("spades", 6),
            f("spades", 6),
            f("spades", 8),
            f("spades", 8),
        ];
        assert_eq!(k(&t), Ok(("tractor", Some(2))));
        // Across the trump sequence: ace of trumps, an off-suit level, the
        // trump level, the small and the big joker.
        let long = [
            f("hearts", 14),
            f("hearts", 14),
            f("clubs", 7),
            f("clubs", 7),
            f("hearts", 7),
            f("hearts", 7),
            f("joker", SMALL_JOKER),
            f("joker", SMALL_JOKER),
            f("joker", BIG_JOKER),
            f("joker", BIG_JOKER),
        ];
        assert_eq!(k(&long), Ok(("tractor", Some(5))));
        // Two off-suit level pairs share a position: no tractor.
        let same = [f("clubs", 7), f("clubs", 7), f("spades", 7), f("spades", 7)];
        assert_eq!(k(&same), Ok(("throw", None)));
        assert_eq!(
            k(&[f("spades", 9), f("hearts", 9)]),
            Err("all cards in a play must share an effective suit".into())
        );
        let s = classify(&t, &c).unwrap().to_map();
        assert_eq!(s.get("pair_count"), Some(&Value::from(2)));
    }

    #[test]
    fn signatures_are_listed_by_suit_name_then_rank() {
        let c = Ctx::new(2, None);
        let s = classify(&[f("spades", 2), f("joker", BIG_JOKER), f("hearts", 2)], &c).unwrap();
        let suits: Vec<&str> = s.signatures.keys().map(|f| f.suit).collect();
        assert_eq!(suits, ["hearts", "joker", "spades"]);
    }

    #[test]
    fn a_follower_exhausts_the_class_then_keeps_pairs_and_tractors() {
        let c = ctx();
        let pair = lead(&classify(&[f("spades", 9), f("spades", 9)], &c).unwrap());
        let hand = [
            f("spades", 3),
            f("spades", 3),
            f("spades", 11),
            f("clubs", 4),
            f("hearts", 4),
        ];
        let follow = |sel: &[Face], l: &Value| validate_follow(&hand, sel, l, &c);
        assert_eq!(
            follow(&[f("spades", 3)], &pair),
            Err("a follower must play the same number of cards".into())
        );
        assert_eq!(
            follow(&[f("spades", 11), f("clubs", 4)], &pair),
            Err("the follower must exhaust the led effective suit".into())
        );
        assert_eq!(
            follow(&[f("spades", 3), f("spades", 11)], &pair),
            Err("the follower must preserve available pairs".into())
        );
        assert_eq!(follow(&[f("spades", 3), f("spades", 3)], &pair), Ok(()));
        // Short of the class: all of it, and anything else.
        let t = [
            f("spades", 5),
            f("spades", 5),
            f("spades", 6),
            f("spades", 6),
        ];
        let tractor = lead(&classify(&t, &c).unwrap());
        let sel = [
            f("spades", 3),
            f("spades", 3),
            f("spades", 11),
            f("hearts", 4),
        ];
        assert_eq!(follow(&sel, &tractor), Ok(()));
        // Holding a tractor, two loose pairs do not do.
        let rich = [
            f("spades", 3),
            f("spades", 3),
            f("spades", 4),
            f("spades", 4),
            f("spades", 12),
            f("spades", 12),
        ];
        let loose = [
            f("spades", 3),
            f("spades", 3),
            f("spades", 12),
            f("spades", 12),
        ];
        assert_eq!(
            validate_follow(&rich, &loose, &tractor, &c),
            Err("an available tractor must follow a tractor".into())
        );
        let tight = [
            f("spades", 3),
            f("spades", 3),
            f("spades", 4),
            f("spades", 4),
        ];
        assert_eq!(validate_follow(&rich, &tight, &tractor, &c), Ok(()));
        assert_eq!(
            validate_follow(&rich, &tight, &Value::Null, &c),
            Err("lead classification is invalid".into())
        );
    }

    #[test]
    fn has_tractor_scans_positions_in_order() {
        let c = ctx();
        let pairs = |fs: &[Face]| -> Vec<Face> { fs.iter().flat_map(|f| [*f, *f]).collect() };
        // Off-suit level pairs at one position, then the trump level.
        let h = pairs(&[f("clubs", 7), f("spades", 7), f("hearts", 7)]);
        assert_eq!(has_tractor(&h, 2, TRUMP, &c), Ok(true));
        assert_eq!(has_tractor(&h, 3, TRUMP, &c), Ok(false));
        let h = pairs(&[f("spades", 3), f("spades", 5)]);
        assert_eq!(has_tractor(&h, 2, "spades", &c), Ok(false));
        assert_eq!(has_tractor(&h, 1, "spades", &c), Ok(true));
    }

    #[test]
    fn tricks_go_to_trumps_then_to_the_strongest_of_the_winning_class() {
        let c = ctx();
        let play = |faces: Vec<Face>| {
            let shape = safe_shape(&faces, &c);
            Played {
                faces,
                kind: shape.get_str("kind").unwrap().to_owned(),
                suit: shape.get_str("suit").unwrap().to_owned(),
            }
        };
        // A pair led; a higher pair wins; a trump pair wins over it; a
        // higher trump pair over that; two odd cards never.
        let trick = [
            play(vec![f("spades", 9), f("spades", 9)]),
            play(vec![f("spades", 12), f("spades", 12)]),
            play(vec![f("hearts", 2), f("hearts", 2)]),
            play(vec![f("joker", SMALL_JOKER), f("joker", BIG_JOKER)]),
        ];
        assert_eq!(trick_winner(&trick, &c), 2);
        // Equal singles: the first stays ahead.
        let trick = [
            play(vec![f("spades", 7)]),
            play(vec![f("clubs", 7)]),
            play(vec![f("spades", 14)]),
            play(vec![f("diamonds", 7)]),
        ];
        assert_eq!(trick_winner(&trick, &c), 0);
        // A throw: any all-trump play takes it; a stronger same-class one
        // beats the lead.
        let trick = [
            play(vec![f("spades", 14), f("spades", 13)]),
            play(vec![f("spades", 14), f("spades", 12)]),
            play(vec![f("spades", 14), f("spades", 14)]),
            play(vec![f("spades", 2), f("clubs", 3)]),
        ];
        assert_eq!(trick_winner(&trick, &c), 2);
        let trick = [
            play(vec![f("spades", 14), f("spades", 13)]),
            play(vec![f("hearts", 2), f("hearts", 3)]),
            play(vec![f("joker", BIG_JOKER), f("spades", 2)]),
            play(vec![f("spades", 14), f("spades", 14)]),
        ];
        assert_eq!(trick_winner(&trick, &c), 1);
    }
}
