//! The claim window after a discard.
//!
//! A discard opens the window to the three other seats (`claim_eligible`);
//! each answers exactly once (`claim_responses`): `pass_claim`, `win` (the
//! discard completes its hand), `pung` or `kong` (two or three tiles of
//! the discard's face), or `chow` (two tiles making a sequence with it,
//! the discarder's next seat only). Answers are checked when they arrive;
//! nothing is decided until the last eligible seat has answered. The
//! window has no clock: it closes on that last answer, and then a win
//! comes first, then a pung or kong, then a chow, each time the seat
//! nearest after the discarder (clockwise) among the claimants of that
//! kind. With no claim the discarder's next seat draws, or the hand ends
//! when the wall is empty. An answer after the window has closed meets the
//! turn's rules (phase `discard`): it is not that seat's turn, or a turn
//! does not accept a claim.

use super::{Hooked, Mahjong, as_action, hand_cards, hand_faces, meld_groups, py_type, tiles};
use super::{deck, deck_mut, meld_event, next_key, order, push, strings_of, wall_count, win_shape};
use crate::engine::group::hooks::result as hook_value;
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{hook_result, member_pk, obj, text};

/// The priority of an answer when the window closes (higher first).
fn priority(kind: &str) -> u8 {
    match kind {
        "win" => 3,
        "pung" | "kong" => 2,
        "chow" => 1,
        _ => 0,
    }
}

/// The seats after `pk`, clockwise.
pub(super) fn clockwise_after(order: &[String], pk: &str) -> Vec<String> {
    let i = order.iter().position(|k| k == pk).unwrap_or(0);
    (1..order.len())
        .map(|o| order[(i + o) % order.len()].clone())
        .collect()
}

/// Who takes the discard when the window closes: the seat nearest after
/// the discarder among those whose answer has the highest priority, or
/// `None` when everyone passed.
pub(super) fn resolve(
    order: &[String],
    discarder: &str,
    responses: &Map,
) -> Option<(String, String)> {
    let kind_of = |k: &str| {
        responses
            .get(k)
            .and_then(|r| r.get_str("kind"))
            .unwrap_or_default()
            .to_owned()
    };
    let seats = clockwise_after(order, discarder);
    let top = seats.iter().map(|k| priority(&kind_of(k))).max()?;
    if top == 0 {
        return None;
    }
    seats
        .into_iter()
        .find(|k| priority(&kind_of(k)) == top)
        .map(|k| {
            let kind = kind_of(&k);
            (k, kind)
        })
}

impl Mahjong {
    /// One seat's answer to the open window; the last answer closes it.
    pub(super) fn handle_claim(
        &self,
        mut state: Map,
        actor: &Value,
        action: &Value,
    ) -> Hooked<Value> {
        let pk = member_pk(actor)?;
        if !strings_of(state.get("claim_eligible")).contains(&pk) {
            return Err("this Member cannot respond to the discard".into());
        }
        if obj(&state, "claim_responses").contains_key(&pk) {
            return Err("this Member already responded to the claim window".into());
        }
        let action = as_action(action)?;
        let kind = action.get("kind").cloned().unwrap_or(Value::Null);
        let last = obj(&state, "last_discard");
        let discard = last
            .get("card")
            .and_then(Value::as_object)
            .cloned()
            .ok_or("'card'")?;
        let mut response = obj! { "kind" => kind.clone() };
        match kind.as_str() {
            Some("pass_claim") => {}
            Some("win") => {
                let mut concealed = hand_faces(&state, &pk);
                concealed.push(discard);
                if win_shape(&concealed, meld_groups(&state, &pk).len())?.is_none() {
                    return Err("the discard does not complete a supported win".into());
                }
            }
            _ if matches!(kind, Value::Array(_) | Value::Object(_)) => {
                return Err(format!("unhashable type: '{}'", py_type(&kind)));
            }
            Some(k @ ("pung" | "kong")) => {
                let expected = if k == "pung" { 2 } else { 3 };
                let (ids, cards) = hand_cards(&state, &pk, action.get("card_ids"), expected)?;
                if cards
                    .iter()
                    .any(|c| c.get_str("code") != discard.get_str("code"))
                {
                    return Err(format!("{k} tiles must match the discard"));
                }
                response.insert("card_ids", super::strings(&ids));
            }
            Some("chow") => {
                let discarder = last.get_str("public_key").unwrap_or_default();
                if pk != next_key(&order(&state), discarder) {
                    return Err("only the next seat may chow".into());
                }
                let (ids, cards) = hand_cards(&state, &pk, action.get("card_ids"), 2)?;
                let mut codes: Vec<&str> = cards
                    .iter()
                    .map(|c| c.get_str("code").unwrap_or_default())
                    .collect();
                codes.sort_unstable();
                let hand =
                    tiles::counts_of(&hand_faces(&state, &pk)).ok_or("tile code is invalid")?;
                let target = tiles::tile_index(&discard).ok_or("tile code is invalid")?;
                let legal = tiles::chow_pairs(&hand, target).into_iter().any(|pair| {
                    let mut want = pair.map(tiles::code_of);
                    want.sort_unstable();
                    want == [codes[0], codes[1]]
                });
                if !legal {
                    return Err("card_ids do not form a legal chow".into());
                }
                response.insert("card_ids", super::strings(&ids));
            }
            _ => return Err("claim accepts pass_claim, win, pung, kong, or chow".into()),
        }
        let responses = super::obj_mut(&mut state, "claim_responses")?;
        responses.insert(pk.as_str(), Value::Object(response));
        let count = responses.len();
        let events = vec![Value::Object(obj! {
            "kind" => "claim_response_received", "public_key" => pk.as_str(), "response_count" => count,
        })];
        if count < strings_of(state.get("claim_eligible")).len() {
            return Ok(hook_result(state, events));
        }
        self.close_window(state, events)
    }

    /// The last answer is in: the discard goes to the claim with the
    /// highest priority, or play moves on.
    fn close_window(&self, state: Map, mut events: Vec<Value>) -> Hooked<Value> {
        let last = obj(&state, "last_discard");
        let discarder = last.get_str("public_key").unwrap_or_default().to_owned();
        let responses = obj(&state, "claim_responses");
        let Some((claimant, kind)) = resolve(&order(&state), &discarder, &responses) else {
            events.push(Value::Object(
                obj! { "kind" => "claim_resolved", "claim" => "none" },
            ));
            return self.after_unclaimed(state, &discarder, events);
        };
        events.push(Value::Object(obj! {
            "kind" => "claim_resolved", "claim" => kind.as_str(), "winner" => claimant.as_str(),
        }));
        if kind == "win" {
            let tile = last
                .get("card")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            return self.win(state, &claimant, Some((tile, discarder)), events);
        }
        let response = responses.get(&claimant).cloned().unwrap_or(Value::Null);
        self.take_discard(state, &claimant, &kind, &response, events)
    }

    /// A pung, kong or chow: the claimant's tiles and the discard become
    /// its open meld and it moves (a kong draws a replacement first).
    fn take_discard(
        &self,
        mut state: Map,
        claimant: &str,
        kind: &str,
        response: &Value,
        mut events: Vec<Value>,
    ) -> Hooked<Value> {
        let expected = if kind == "kong" { 3 } else { 2 };
        let (ids, mut cards) = hand_cards(&state, claimant, response.get("card_ids"), expected)?;
        let last = obj(&state, "last_discard");
        let discard_id = last.get_str("card_id").unwrap_or_default().to_owned();
        let discarder = last.get_str("public_key").unwrap_or_default().to_owned();
        {
            let deck = deck_mut(&mut state)?;
            deck::hand_to_zone(deck, claimant, "melds", claimant, &ids)?;
            cards.push(deck::discard_to_zone(deck, "melds", claimant, &discard_id)?);
        }
        let Some(Value::Array(river)) = super::obj_mut(&mut state, "rivers")?.get_mut(&discarder)
        else {
            return Err(format!("'{discarder}'"));
        };
        match river
            .iter()
            .position(|v| v.as_str() == Some(discard_id.as_str()))
        {
            Some(i) => {
                river.remove(i);
            }
            None => return Err("list.remove(x): x not in list".into()),
        }
        let group = obj! {
            "kind" => kind, "owner" => claimant, "from" => discarder.as_str(), "cards" => tiles::values(cards),
        };
        push(
            &mut state,
            "meld_groups",
            claimant,
            Value::Object(group.clone()),
        )?;
        state.insert("phase", Value::from("discard"));
        state.insert("current_player", Value::from(claimant));
        state.insert(
            "must_discard_after_claim",
            Value::Bool(kind == "pung" || kind == "chow"),
        );
        close(&mut state);
        events.push(meld_event(group));
        if kind == "kong" {
            if wall_count(&state) == 0 {
                return self.finish_draw(state, events);
            }
            deck::draw(deck_mut(&mut state)?, claimant, 1)?;
            events.push(Value::Object(
                obj! { "kind" => "replacement_draw", "public_key" => claimant },
            ));
        }
        Ok(hook_result(state, events))
    }

    /// Nobody claimed: the discarder's next seat draws and moves, or the
    /// hand ends on an empty wall.
    fn after_unclaimed(
        &self,
        mut state: Map,
        discarder: &str,
        mut events: Vec<Value>,
    ) -> Hooked<Value> {
        let next = next_key(&order(&state), discarder);
        close(&mut state);
        if wall_count(&state) == 0 {
            return self.finish_draw(state, events);
        }
        deck::draw(deck_mut(&mut state)?, &next, 1)?;
        state.insert("phase", Value::from("discard"));
        state.insert("current_player", Value::from(next.as_str()));
        state.insert("must_discard_after_claim", Value::Bool(false));
        events.push(Value::Object(
            obj! { "kind" => "mahjong_draw", "public_key" => next },
        ));
        Ok(hook_value(Value::Object(state), events))
    }
}

/// The window is closed: no discard on offer, nobody to answer.
fn close(state: &mut Map) {
    state.insert("last_discard", Value::Null);
    state.insert("claim_eligible", Value::Array(Vec::new()));
    state.insert("claim_responses", Value::Object(Map::new()));
}

/// Who is to answer the open window and has not yet (in turn order).
pub fn awaiting(state: &Map) -> Vec<String> {
    let responses = obj(state, "claim_responses");
    if text(state, "phase") != "claim" {
        return Vec::new();
    }
    strings_of(state.get("claim_eligible"))
        .into_iter()
        .filter(|k| !responses.contains_key(k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::group::GroupHooks;
    use crate::protocols::tables::mahjong::tests::{
        deal, give, id_of, members, pk, set_wall, state_of, tile_ids,
    };

    /// A state in the claim phase: seat 0 has just discarded `discard` and
    /// each seat holds the given concealed tiles.
    fn window(t: &mut Mahjong, hands: [&str; 4], discard: &str) -> Value {
        let mut state = deal(t);
        let dealer = format!("{} {discard}", hands[0]);
        give(&mut state, [&dealer, hands[1], hands[2], hands[3]]);
        let id = id_of(&state, 0, discard);
        let out = t
            .handle(state, &members()[0], &act("discard", None, Some(&id)))
            .unwrap();
        assert_eq!(text(&state_of(&out), "phase"), "claim");
        out.get("state").cloned().unwrap()
    }

    fn act(kind: &str, ids: Option<Vec<String>>, card: Option<&str>) -> Value {
        let mut a = obj! { "kind" => kind };
        if let Some(ids) = ids {
            a.insert("card_ids", super::super::strings(&ids));
        }
        if let Some(c) = card {
            a.insert("card_id", Value::from(c));
        }
        Value::Object(a)
    }

    fn answer(t: &mut Mahjong, state: &Value, seat: usize, action: Value) -> Result<Value, String> {
        t.handle(state.clone(), &members()[seat], &action)
    }

    fn kinds(out: &Value) -> Vec<String> {
        out.get("events")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|e| e.get_str("kind").unwrap().to_owned())
            .collect()
    }

    const ONE: &str = "1m 2m 3m 4m 5m 6m 7m 8m 9m 1p 2p 3p 4p";

    #[test]
    fn a_win_beats_a_pung_and_a_chow_whatever_the_seat() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "w", "max_hands" => 2 });
        // Seat 1 (next) can chow 5s, seat 2 pung it, seat 3 win on it.
        let hands = [
            ONE,
            "3s 4s 1p 1p 9p 9p east east south south west west red",
            "5s 5s 1m 1m 2p 2p 3p 3p 4p 4p white white green",
            "1m 2m 3m 4p 5p 6p 7s 8s 9s red red red 5s",
        ];
        let s = window(&mut t, hands, "5s");
        let chow = tile_ids(&s, 1, "3s 4s");
        let s = answer(&mut t, &s, 1, act("chow", Some(chow), None)).unwrap();
        assert_eq!(kinds(&s), ["claim_response_received"]);
        let s = s.get("state").cloned().unwrap();
        let pung = tile_ids(&s, 2, "5s 5s");
        let s = answer(&mut t, &s, 2, act("pung", Some(pung), None)).unwrap();
        let s = s.get("state").cloned().unwrap();
        let out = answer(&mut t, &s, 3, act("win", None, None)).unwrap();
        assert_eq!(
            kinds(&out),
            [
                "claim_response_received",
                "claim_resolved",
                "discard_win",
                "mahjong_hand_started"
            ]
        );
        let events = out.get("events").and_then(Value::as_array).unwrap();
        assert_eq!(events[1].get_str("winner"), Some(pk(3).as_str()));
        assert_eq!(events[2].get_str("discarder"), Some(pk(0).as_str()));
        // A winning hand (1) and a concealed one (1): the discarder pays
        // three times the points.
        let delta = events[2].get("score_delta").unwrap();
        assert_eq!(delta.get(&pk(0)).and_then(Value::as_i64), Some(-6));
        assert_eq!(delta.get(&pk(3)).and_then(Value::as_i64), Some(6));
    }

    #[test]
    fn a_pung_beats_a_chow_and_the_nearest_of_two_wins_is_taken() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "p" });
        let hands = [
            ONE,
            "3s 4s 1p 1p 9p 9p east east south south west west red",
            "5s 5s 1m 1m 2p 2p 3p 3p 4p 4p white white green",
            "2m 2m 3m 4p 5p 6p 7s 8s 9s red red red 1p",
        ];
        let s = window(&mut t, hands, "5s");
        let s = answer(&mut t, &s, 3, act("pass_claim", None, None)).unwrap();
        let s = s.get("state").cloned().unwrap();
        let chow = tile_ids(&s, 1, "3s 4s");
        let s = answer(&mut t, &s, 1, act("chow", Some(chow), None)).unwrap();
        let s = s.get("state").cloned().unwrap();
        let pung = tile_ids(&s, 2, "5s 5s");
        let out = answer(&mut t, &s, 2, act("pung", Some(pung), None)).unwrap();
        assert_eq!(
            kinds(&out),
            ["claim_response_received", "claim_resolved", "pung"]
        );
        let st = state_of(&out);
        assert_eq!(text(&st, "current_player"), pk(2));
        assert_eq!(st.get("must_discard_after_claim"), Some(&Value::Bool(true)));
        assert!(
            obj(&st, "rivers")
                .get(&pk(0))
                .unwrap()
                .as_array()
                .unwrap()
                .is_empty()
        );
        // Nobody may answer any more: the window is closed.
        assert_eq!(
            answer(
                &mut t,
                &out.get("state").cloned().unwrap(),
                1,
                act("chow", Some(vec![]), None)
            )
            .unwrap_err(),
            "it is not this Member's turn"
        );
        assert_eq!(
            answer(
                &mut t,
                &out.get("state").cloned().unwrap(),
                2,
                act("pung", Some(vec![]), None)
            )
            .unwrap_err(),
            "turn accepts discard, win, or concealed_kong"
        );
        assert_eq!(
            answer(
                &mut t,
                &out.get("state").cloned().unwrap(),
                2,
                act("win", None, None)
            )
            .unwrap_err(),
            "cannot declare a self-draw win before drawing a tile"
        );

        // Two wins: the seat nearest after the discarder takes it.
        let order: Vec<String> = (0..4).map(pk).collect();
        let mut r = Map::new();
        r.insert(pk(3), Value::Object(obj! { "kind" => "win" }));
        r.insert(pk(2), Value::Object(obj! { "kind" => "win" }));
        r.insert(pk(0), Value::Object(obj! { "kind" => "chow" }));
        assert_eq!(resolve(&order, &pk(1), &r), Some((pk(2), "win".to_owned())));
        assert_eq!(resolve(&order, &pk(2), &r), Some((pk(3), "win".to_owned())));
        let mut r = Map::new();
        r.insert(pk(0), Value::Object(obj! { "kind" => "kong" }));
        r.insert(pk(2), Value::Object(obj! { "kind" => "pung" }));
        r.insert(pk(3), Value::Object(obj! { "kind" => "pass_claim" }));
        assert_eq!(
            resolve(&order, &pk(1), &r),
            Some((pk(2), "pung".to_owned()))
        );
        assert_eq!(
            resolve(&order, &pk(3), &r),
            Some((pk(0), "kong".to_owned()))
        );
        let passes: Map = (0..4)
            .map(|n| (pk(n), Value::Object(obj! { "kind" => "pass_claim" })))
            .collect();
        assert_eq!(resolve(&order, &pk(0), &passes), None);
    }

    #[test]
    fn passes_move_play_on_and_answers_are_checked_when_they_arrive() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "x" });
        let hands = [
            ONE,
            "3s 4s 1p 1p 9p 9p east east south south west west red",
            "5s 5s 1m 1m 2p 2p 3p 3p 4p 4p white white green",
            "2m 2m 3m 4p 5p 6p 7s 8s 9s red red red 1p",
        ];
        let s = window(&mut t, hands, "5s");
        let wrong = |t: &mut Mahjong, seat, a| answer(t, &s, seat, a).unwrap_err();
        assert_eq!(
            wrong(&mut t, 0, act("pass_claim", None, None)),
            "this Member cannot respond to the discard"
        );
        assert_eq!(
            wrong(&mut t, 2, act("chow", Some(tile_ids(&s, 2, "5s 5s")), None)),
            "only the next seat may chow"
        );
        assert_eq!(
            wrong(&mut t, 1, act("chow", Some(tile_ids(&s, 1, "1p 9p")), None)),
            "card_ids do not form a legal chow"
        );
        assert_eq!(
            wrong(&mut t, 1, act("pung", Some(tile_ids(&s, 1, "3s 4s")), None)),
            "pung tiles must match the discard"
        );
        assert_eq!(
            wrong(&mut t, 2, act("kong", Some(tile_ids(&s, 2, "5s 5s")), None)),
            "card_ids must contain 3 unique tile ids"
        );
        assert_eq!(
            wrong(&mut t, 1, act("win", None, None)),
            "the discard does not complete a supported win"
        );
        assert_eq!(
            wrong(&mut t, 1, act("discard", None, None)),
            "claim accepts pass_claim, win, pung, kong, or chow"
        );
        let list = Value::Object(obj! { "kind" => Value::Array(vec![]) });
        assert_eq!(wrong(&mut t, 1, list), "unhashable type: 'list'");
        assert_eq!(
            wrong(&mut t, 1, Value::from("pass_claim")),
            "'str' object has no attribute 'get'"
        );
        let mut s = s.clone();
        for seat in 1..4 {
            let out = answer(&mut t, &s, seat, act("pass_claim", None, None)).unwrap();
            if seat < 3 {
                assert_eq!(kinds(&out), ["claim_response_received"]);
                s = out.get("state").cloned().unwrap();
                assert_eq!(
                    answer(&mut t, &s, seat, act("pass_claim", None, None)).unwrap_err(),
                    "this Member already responded to the claim window"
                );
                let st = s.as_object().unwrap();
                assert_eq!(awaiting(st).len(), 3 - seat);
                continue;
            }
            assert_eq!(
                kinds(&out),
                ["claim_response_received", "claim_resolved", "mahjong_draw"]
            );
            let st = state_of(&out);
            assert_eq!(text(&st, "current_player"), pk(1));
            assert!(awaiting(&st).is_empty());
            assert_eq!(st.get("last_discard"), Some(&Value::Null));
        }
    }

    #[test]
    fn a_claimed_kong_draws_a_replacement_and_an_empty_wall_ends_the_hand() {
        let mut t = Mahjong::new(&obj! { "deal_seed" => "k", "max_hands" => 1 });
        let hands = [
            ONE,
            "3s 4s 1p 1p 9p 9p east east south south west west red",
            "5s 5s 5s 1m 1m 2p 2p 3p 3p 4p 4p white white",
            "2m 2m 3m 4p 5p 6p 7s 8s 9s red red red 1p",
        ];
        let s = window(&mut t, hands, "5s");
        let mut s = s;
        for (seat, a) in [
            (1, act("pass_claim", None, None)),
            (3, act("pass_claim", None, None)),
        ] {
            s = answer(&mut t, &s, seat, a)
                .unwrap()
                .get("state")
                .cloned()
                .unwrap();
        }
        let kong = tile_ids(&s, 2, "5s 5s 5s");
        let out = answer(&mut t, &s, 2, act("kong", Some(kong.clone()), None)).unwrap();
        assert_eq!(
            kinds(&out),
            [
                "claim_response_received",
                "claim_resolved",
                "kong",
                "replacement_draw"
            ]
        );
        let st = state_of(&out);
        assert_eq!(
            st.get("must_discard_after_claim"),
            Some(&Value::Bool(false))
        );
        assert_eq!(super::super::hand_ids(&st, &pk(2)).len(), 11);
        // The same kong on an empty wall: the hand (and this one-hand
        // match) ends with no winner.
        let mut dry = s.as_object().cloned().unwrap();
        set_wall(&mut dry, 0);
        let out = answer(
            &mut t,
            &Value::Object(dry),
            2,
            act("kong", Some(kong), None),
        )
        .unwrap();
        assert_eq!(
            kinds(&out),
            [
                "claim_response_received",
                "claim_resolved",
                "kong",
                "mahjong_wall_exhausted",
                "mahjong_match_complete"
            ]
        );
        assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
        assert_eq!(out.get_str("outcome"), Some("draw"));
    }
}
