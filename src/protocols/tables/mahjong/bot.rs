//! What a seat may do at a Mahjong table, read from its own view, and
//! what a bot does there.
//!
//! The bot wins whenever it can; otherwise it keeps its hand as close to a
//! win as possible (by shanten): on its turn it declares a concealed kong
//! that costs nothing and discards the tile whose removal leaves the
//! lowest shanten (among equals, the most isolated tile); in a claim
//! window it takes a pung or chow only when that brings the hand closer,
//! and a kong when it does not set the hand back.
//!
//! One thing the view does not tell: whether the seat to move has just
//! claimed a pung or chow (it must then discard before it may declare a
//! self-draw win). A hand complete right after such a claim was complete
//! with the claimed discard too, so a seat that always wins when it can
//! (the bot) never stands there; for others the listed `win` may be
//! refused in that one case.

use super::tiles::{self, Counts, FACES};
use super::{next_key, strings, strings_of};
use crate::json::{Map, Value};
use crate::obj;

/// The parts of a view the rules' choices depend on.
struct Seat {
    /// Tile ids of the hand with their face index, in hand order.
    hand: Vec<(String, usize)>,
    counts: Counts,
    melds: usize,
    /// The open window's discard (face) and whether this seat may chow it.
    discard: Option<(usize, bool)>,
}

enum Turn {
    Move(Seat),
    Answer(Seat),
}

fn read(view: &Value) -> Option<Turn> {
    let me = view.get("you")?.get_str("public_key")?;
    let mut hand = Vec::new();
    for t in view.get("my_hand")?.as_array()? {
        let t = t.as_object()?;
        hand.push((t.get_str("card_id")?.to_owned(), tiles::tile_index(t)?));
    }
    let mut counts = [0u8; FACES];
    for (_, i) in &hand {
        counts[*i] = counts[*i].saturating_add(1);
    }
    let melds = view
        .get("melds")
        .and_then(|m| m.get(me))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut seat = Seat {
        hand,
        counts,
        melds,
        discard: None,
    };
    match view.get_str("phase")? {
        "discard" if view.get_str("current_player") == Some(me) => Some(Turn::Move(seat)),
        "claim"
            if view.get("you")?.get("may_claim") == Some(&Value::Bool(true))
                && view.get("my_claim").is_none_or(Value::is_null) =>
        {
            let last = view.get("last_discard")?;
            let face = tiles::tile_index(last.get("card")?.as_object()?)?;
            let order = strings_of(view.get("turn_order"));
            let next = next_key(&order, last.get_str("public_key")?) == me;
            seat.discard = Some((face, next));
            Some(Turn::Answer(seat))
        }
        _ => None,
    }
}

impl Seat {
    /// The first `n` ids in the hand of face `f`.
    fn ids(&self, f: usize, n: usize) -> Vec<String> {
        self.hand
            .iter()
            .filter(|(_, i)| *i == f)
            .take(n)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Faces in the hand, in order of first appearance.
    fn faces(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for (_, f) in &self.hand {
            if !out.contains(f) {
                out.push(*f);
            }
        }
        out
    }

    fn can_win_on(&self, tile: Option<usize>) -> bool {
        let mut c = self.counts;
        if let Some(t) = tile {
            c[t] = c[t].saturating_add(1);
        }
        tiles::win_kind(&c, self.melds).is_some()
    }

    /// The chows this seat may make with the window's discard.
    fn chows(&self) -> Vec<[usize; 2]> {
        match self.discard {
            Some((d, true)) => tiles::chow_pairs(&self.counts, d),
            _ => Vec::new(),
        }
    }
}

fn action(kind: &str) -> Map {
    obj! { "kind" => kind }
}

fn with_ids(kind: &str, ids: &[String]) -> Value {
    let mut a = action(kind);
    a.insert("card_ids", strings(ids));
    Value::Object(a)
}

fn discard(id: &str) -> Value {
    let mut a = action("discard");
    a.insert("card_id", Value::from(id));
    Value::Object(a)
}

/// Every action the viewer may send now: on its turn a discard of each
/// face it holds, a win when its hand is complete and a concealed kong of
/// each face it holds four times; in a claim window it has not answered,
/// a pass and each claim its hand allows (one per choice of faces).
pub fn legal_actions(view: &Value) -> Vec<Value> {
    match read(view) {
        Some(Turn::Move(s)) => {
            let mut out: Vec<Value> = s
                .faces()
                .into_iter()
                .map(|f| discard(&s.ids(f, 1)[0]))
                .collect();
            if s.can_win_on(None) {
                out.push(Value::Object(action("win")));
            }
            for f in s.faces() {
                if s.counts[f] == 4 {
                    out.push(with_ids("concealed_kong", &s.ids(f, 4)));
                }
            }
            out
        }
        Some(Turn::Answer(s)) => {
            let Some((d, _)) = s.discard else {
                return Vec::new();
            };
            let mut out = vec![Value::Object(action("pass_claim"))];
            if s.can_win_on(Some(d)) {
                out.push(Value::Object(action("win")));
            }
            if s.counts[d] >= 2 {
                out.push(with_ids("pung", &s.ids(d, 2)));
            }
            if s.counts[d] >= 3 {
                out.push(with_ids("kong", &s.ids(d, 3)));
            }
            for [a, b] in s.chows() {
                out.push(with_ids("chow", &[s.ids(a, 1), s.ids(b, 1)].concat()));
            }
            out
        }
        None => Vec::new(),
    }
}

/// The bot's action (`None`: the viewer has nothing to do now).
pub fn bot_action(view: &Value) -> Option<Value> {
    match read(view)? {
        Turn::Move(s) => Some(move_action(&s)),
        Turn::Answer(s) => Some(answer(&s)),
    }
}

/// The best shanten after one discard from `c`, and that discard's face.
fn best_discard(c: &Counts, melds: usize) -> (i32, usize) {
    let mut best: Option<(i32, i32, usize)> = None;
    for f in 0..FACES {
        if c[f] == 0 {
            continue;
        }
        let mut after = *c;
        after[f] -= 1;
        let key = (tiles::shanten(&after, melds), keep_value(c, f), f);
        if best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
            best = Some(key);
        }
    }
    best.map_or((8, 0), |(s, _, f)| (s, f))
}

/// How much a tile works with the rest of the hand (its other copies,
/// and for a numbered tile, its neighbours); terminals and honors that
/// work with nothing go first.
fn keep_value(c: &Counts, f: usize) -> i32 {
    let mut v = 3 * (i32::from(c[f]) - 1);
    if f < 27 {
        let rank = f % 9;
        for (d, w) in [(1usize, 2), (2, 1)] {
            if rank >= d {
                v += w * i32::from(c[f - d]);
            }
            if rank + d < 9 {
                v += w * i32::from(c[f + d]);
            }
        }
        v += i32::from(rank != 0 && rank != 8);
    }
    v
}

fn move_action(s: &Seat) -> Value {
    if s.can_win_on(None) {
        return Value::Object(action("win"));
    }
    let (now, face) = best_discard(&s.counts, s.melds);
    for f in s.faces() {
        if s.counts[f] == 4 {
            let mut after = s.counts;
            after[f] = 0;
            if tiles::shanten(&after, s.melds + 1) <= now {
                return with_ids("concealed_kong", &s.ids(f, 4));
            }
        }
    }
    discard(&s.ids(face, 1)[0])
}

fn answer(s: &Seat) -> Value {
    let Some((d, _)) = s.discard else {
        return Value::Object(action("pass_claim"));
    };
    if s.can_win_on(Some(d)) {
        return Value::Object(action("win"));
    }
    let now = tiles::shanten(&s.counts, s.melds);
    if s.counts[d] >= 3 {
        let mut after = s.counts;
        after[d] -= 3;
        if tiles::shanten(&after, s.melds + 1) <= now {
            return with_ids("kong", &s.ids(d, 3));
        }
    }
    // A pung or chow leaves the hand one tile to discard.
    let mut best: Option<(i32, Value)> = None;
    if s.counts[d] >= 2 {
        let mut after = s.counts;
        after[d] -= 2;
        let (sh, _) = best_discard(&after, s.melds + 1);
        best = Some((sh, with_ids("pung", &s.ids(d, 2))));
    }
    for [a, b] in s.chows() {
        let mut after = s.counts;
        after[a] -= 1;
        after[b] -= 1;
        let (sh, _) = best_discard(&after, s.melds + 1);
        if best.as_ref().is_none_or(|(b, _)| sh < *b) {
            let ids = [s.ids(a, 1), s.ids(b, 1)].concat();
            best = Some((sh, with_ids("chow", &ids)));
        }
    }
    match best {
        Some((sh, claim)) if sh < now => claim,
        _ => Value::Object(action("pass_claim")),
    }
}

/// Are these tiles of the viewer's hand a legal play now: one to discard
/// or four of a face for a concealed kong on its turn; in a claim window,
/// two or three of the discard's face (pung, kong) or two that make a
/// chow with it (the next seat only)?
pub fn is_legal_selection(view: &Value, card_ids: &[String]) -> bool {
    let Some(turn) = read(view) else {
        return false;
    };
    let s = match &turn {
        Turn::Move(s) | Turn::Answer(s) => s,
    };
    let mut faces = Vec::with_capacity(card_ids.len());
    for (n, id) in card_ids.iter().enumerate() {
        if card_ids[..n].contains(id) {
            return false;
        }
        match s.hand.iter().find(|(h, _)| h == id) {
            Some((_, f)) => faces.push(*f),
            None => return false,
        }
    }
    let same = |f: usize| faces.iter().all(|x| *x == f);
    match (&turn, faces.as_slice()) {
        (Turn::Move(_), [_]) => true,
        (Turn::Move(_), [f, ..]) => faces.len() == 4 && same(*f),
        (Turn::Answer(s), [a, b, ..]) => {
            let Some((d, _)) = s.discard else {
                return false;
            };
            match faces.len() {
                2 => {
                    same(d)
                        || s.chows()
                            .iter()
                            .any(|p| (p[0], p[1]) == (*a, *b) || (p[0], p[1]) == (*b, *a))
                }
                3 => same(d),
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::group::GroupHooks;
    use crate::protocols::tables::mahjong::Mahjong;
    use crate::protocols::tables::mahjong::tests::{deal, give, id_of, members, state_of};

    fn view_of(t: &mut Mahjong, state: &Value, seat: usize) -> Value {
        t.view(state, &members()[seat]).unwrap()
    }

    #[test]
    fn the_bot_discards_what_keeps_it_closest_to_a_win_and_wins_when_it_can() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "b" });
        let mut s = deal(&mut t);
        give(
            &mut s,
            [
                "1m 2m 3m 4p 5p 6p 7s 8s 9s east east east red north",
                "1s 1s 2s 2s 3s 3s 4s 4s 5s 5s 6s 6s 7s",
                "1p 1p 2p 2p 3p 3p 5m 5m 6m 6m 7m 7m white",
                "green green green white white white 7s 8s 8s 9s 9s 9s 9p",
            ],
        );
        let v = view_of(&mut t, &s, 0);
        let a = bot_action(&v).unwrap();
        assert_eq!(a.get_str("kind"), Some("discard"));
        let id = a.get_str("card_id").unwrap();
        let code = v
            .get("my_hand")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .find(|c| c.get_str("card_id") == Some(id))
            .and_then(|c| c.get_str("code"))
            .unwrap();
        assert!(code == "red" || code == "north", "{code}");
        assert!(is_legal_selection(&v, &[id.to_owned()]));
        assert!(!is_legal_selection(&v, &[id.to_owned(), id.to_owned()]));
        let legal = legal_actions(&v);
        assert_eq!(legal.len(), 12, "one discard per face, no win, no kong");
        assert!(bot_action(&view_of(&mut t, &s, 1)).is_none());
        assert!(legal_actions(&view_of(&mut t, &s, 1)).is_empty());
        // After the discard, each other seat may at least pass; the
        // discarder has nothing to do.
        let out = t.handle(s, &members()[0], &a).unwrap();
        let s = out.get("state").cloned().unwrap();
        for seat in 1..4 {
            let v = view_of(&mut t, &s, seat);
            assert_eq!(legal_actions(&v)[0].get_str("kind"), Some("pass_claim"));
        }
        assert!(bot_action(&view_of(&mut t, &s, 0)).is_none());
    }

    #[test]
    fn the_bot_claims_a_win_and_a_pung_that_helps_and_passes_otherwise() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "c" });
        let mut s = deal(&mut t);
        give(
            &mut s,
            [
                "1m 2m 3m 4m 5m 6m 7m 8m 9m 1p 2p 3p 4p red",
                "red red 1s 2s 3s 4p 5p 6p 7p 8p 9p 9s 9s",
                "east east 1p 1p 2p 2p 3p 3p 5s 5s 6s 6s white",
                "red 1s 1s 7s 8s 8s 9s 2m 3m 4m 5m 6m 7m",
            ],
        );
        let id = id_of(&s, 0, "red");
        let out = t.handle(s, &members()[0], &discard(&id)).unwrap();
        let s = out.get("state").cloned().unwrap();
        // Seat 1 wins on the red (a pair of them and four sets).
        let v1 = view_of(&mut t, &s, 1);
        assert_eq!(bot_action(&v1).unwrap().get_str("kind"), Some("win"));
        let kinds: Vec<String> = legal_actions(&v1)
            .iter()
            .map(|a| a.get_str("kind").unwrap().to_owned())
            .collect();
        assert_eq!(kinds, ["pass_claim", "win", "pung"]);
        // Seat 2 has nothing; seat 3 has one red: both pass.
        assert_eq!(
            bot_action(&view_of(&mut t, &s, 2)).unwrap().get_str("kind"),
            Some("pass_claim")
        );
        assert_eq!(
            bot_action(&view_of(&mut t, &s, 3)).unwrap().get_str("kind"),
            Some("pass_claim")
        );
        // Every legal answer is accepted by the rules.
        for seat in 1..4 {
            let v = view_of(&mut t, &s, seat);
            for a in legal_actions(&v) {
                assert!(t.handle(s.clone(), &members()[seat], &a).is_ok(), "{a:?}");
            }
        }
        let st = state_of(
            &t.handle(
                s.clone(),
                &members()[1],
                &Value::Object(action("pass_claim")),
            )
            .unwrap(),
        );
        let v = view_of(&mut t, &Value::Object(st), 1);
        assert!(legal_actions(&v).is_empty(), "it has answered");
        assert_eq!(
            v.get("my_claim").and_then(|c| c.get_str("kind")),
            Some("pass_claim")
        );
    }
}
