//! The hooks of classical-mahjong-v1 on hands arranged for each rule (the
//! claim window's own tests are in claims.rs; tests/tables_hooks.rs
//! compares whole seeded matches with the reference).

use super::*;

pub(super) fn pk(n: usize) -> String {
    format!("{:064x}", n + 0xa1)
}

pub(super) fn members() -> Vec<Value> {
    (0..4)
        .map(|n| {
            Value::Object(obj! {
                "member_id" => format!("m{n}"), "public_key" => pk(n), "seat" => n as i64, "status" => "active",
            })
        })
        .collect()
}

pub(super) fn deal(t: &mut Mahjong) -> Value {
    t.initial_state(&members()).unwrap()
}

pub(super) fn state_of(out: &Value) -> Map {
    out.get("state")
        .and_then(Value::as_object)
        .cloned()
        .unwrap()
}

fn deck_map(state: &mut Value) -> &mut Map {
    state
        .as_object_mut()
        .unwrap()
        .get_mut("deck")
        .unwrap()
        .as_object_mut()
        .unwrap()
}

/// Rearranges the deal so that each seat holds exactly the tiles named
/// (the rest go back to the wall); the deck stays whole.
pub(super) fn give(state: &mut Value, hands: [&str; 4]) {
    let deck = deck_map(state);
    let catalog = deck.get("catalog").unwrap().as_object().unwrap().clone();
    let mut wall: Vec<String> = Vec::new();
    for (_, ids) in deck.get("hands").unwrap().as_object().unwrap().iter() {
        wall.extend(
            ids.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned()),
        );
    }
    wall.extend(
        deck.get("draw_pile")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned()),
    );
    let mut new_hands = Map::new();
    for (seat, codes) in hands.iter().enumerate() {
        let mut ids = Vec::new();
        for code in codes.split_whitespace() {
            let at = wall
                .iter()
                .position(|id| catalog.get(id).unwrap().get_str("code") == Some(code))
                .unwrap_or_else(|| panic!("no {code} left for seat {seat}"));
            ids.push(Value::from(wall.remove(at)));
        }
        new_hands.insert(pk(seat), Value::Array(ids));
    }
    deck.insert("hands", Value::Object(new_hands));
    deck.insert(
        "draw_pile",
        Value::Array(wall.into_iter().map(Value::from).collect()),
    );
    deck::validate(deck).unwrap();
}

/// Leaves `n` tiles in the wall (the others go to the discard pile).
pub(super) fn set_wall(state: &mut Map, n: usize) {
    let deck = state.get_mut("deck").unwrap().as_object_mut().unwrap();
    let mut pile: Vec<Value> = deck.get("draw_pile").unwrap().as_array().unwrap().clone();
    let cut = pile.len().saturating_sub(n);
    let gone: Vec<Value> = pile.drain(..cut).collect();
    deck.insert("draw_pile", Value::Array(pile));
    if let Some(Value::Array(d)) = deck.get_mut("discard_pile") {
        d.extend(gone);
    }
    deck::validate(deck).unwrap();
}

/// The ids in a seat's hand of the named tiles (each id once).
pub(super) fn tile_ids(state: &Value, seat: usize, codes: &str) -> Vec<String> {
    let s = state.as_object().unwrap();
    let mut hand = hand_ids(s, &pk(seat));
    codes
        .split_whitespace()
        .map(|code| {
            let at = hand
                .iter()
                .position(|id| card(s, id).get_str("code") == Some(code))
                .unwrap_or_else(|| panic!("seat {seat} holds no {code}"));
            hand.remove(at)
        })
        .collect()
}

pub(super) fn id_of(state: &Value, seat: usize, code: &str) -> String {
    tile_ids(state, seat, code).remove(0)
}

fn act(kind: &str) -> Map {
    obj! { "kind" => kind }
}

fn ids_value(ids: &[String]) -> Value {
    strings(ids)
}

#[test]
fn a_hand_deals_thirteen_each_and_one_more_to_the_dealer() {
    let mut t = Mahjong::new(&obj! { "deal_seed" => "d" });
    let s = deal(&mut t);
    let st = s.as_object().unwrap();
    for (n, want) in [14, 13, 13, 13].into_iter().enumerate() {
        assert_eq!(hand_ids(st, &pk(n)).len(), want);
    }
    assert_eq!(wall_count(st), 136 - 53);
    assert_eq!(text(st, "current_player"), pk(0));
    assert_eq!(int(st, "hand_number"), 1);
    let scores = obj(st, "scores");
    assert!(scores.values().all(|v| v.as_i64() == Some(25000)));
    // The same seed deals the same wall.
    assert_eq!(deal(&mut Mahjong::new(&obj! { "deal_seed" => "d" })), s);
    assert_ne!(deal(&mut Mahjong::new(&obj! { "deal_seed" => "e" })), s);
}

#[test]
fn options_and_seats_are_checked() {
    for (options, want) in [
        (
            obj! { "starting_points" => -1 },
            "starting_points must be between 0 and 100000",
        ),
        (
            obj! { "starting_points" => 1.0 },
            "starting_points must be between 0 and 100000",
        ),
        (
            obj! { "max_hands" => 0 },
            "max_hands must be between 1 and 32",
        ),
        (
            obj! { "max_hands" => true },
            "max_hands must be between 1 and 32",
        ),
        (
            obj! { "max_hands" => Value::Null },
            "max_hands must be between 1 and 32",
        ),
    ] {
        let mut t = Mahjong::new(&options);
        assert_eq!(t.initial_state(&members()).unwrap_err(), want);
    }
    let mut t = Mahjong::new(&Map::new());
    assert_eq!(t.initial_state(&members()[..3]).unwrap_err(), FOUR_SEATS);
    let mut five = members();
    five.push(members()[0].clone());
    assert_eq!(t.initial_state(&five).unwrap_err(), FOUR_SEATS);
}

#[test]
fn the_turn_refuses_what_the_reference_refuses() {
    let mut t = Mahjong::new(&obj! { "deal_seed" => "t" });
    let s = deal(&mut t);
    let m = members();
    let other = hand_ids(s.as_object().unwrap(), &pk(1));
    let refuse =
        |t: &mut Mahjong, seat: usize, a: Value| t.handle(s.clone(), &m[seat], &a).unwrap_err();
    let mut discard = act("discard");
    discard.insert("card_id", Value::from(other[0].as_str()));
    assert_eq!(
        refuse(&mut t, 1, Value::Object(discard.clone())),
        "it is not this Member's turn"
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Object(discard)),
        "card_id is not in this Member's hand"
    );
    let mut odd = act("discard");
    odd.insert("card_id", Value::from(7));
    assert_eq!(
        refuse(&mut t, 0, Value::Object(odd)),
        "card_id is not in this Member's hand"
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Object(act("pung"))),
        "turn accepts discard, win, or concealed_kong"
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Array(vec![])),
        "'list' object has no attribute 'get'"
    );
    let mut kong = act("concealed_kong");
    kong.insert("card_ids", Value::from("x"));
    assert_eq!(
        refuse(&mut t, 0, Value::Object(kong.clone())),
        "card_ids must contain 4 unique tile ids"
    );
    let mine = hand_ids(s.as_object().unwrap(), &pk(0));
    kong.insert(
        "card_ids",
        ids_value(&[
            mine[0].clone(),
            mine[0].clone(),
            mine[1].clone(),
            mine[2].clone(),
        ]),
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Object(kong.clone())),
        "card_ids must contain 4 unique tile ids"
    );
    kong.insert(
        "card_ids",
        Value::Array(vec![
            Value::from("a"),
            Value::Object(Map::new()),
            Value::Array(vec![]),
            Value::from(1),
        ]),
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Object(kong.clone())),
        "unhashable type: 'dict'"
    );
    kong.insert(
        "card_ids",
        ids_value(&[
            mine[0].clone(),
            mine[1].clone(),
            mine[2].clone(),
            other[0].clone(),
        ]),
    );
    assert_eq!(
        refuse(&mut t, 0, Value::Object(kong.clone())),
        "a selected tile is not in this Member's hand"
    );
    let mut s2 = s.clone();
    give(
        &mut s2,
        [
            "1m 2m 3m 4m 5m 6m 7m 8m 9m 1p 2p 3p 4p 5p",
            "1s 1s 2s 2s 3s 3s 4s 4s 5s 5s 6s 6s 7s",
            "east east east south south south west west west north north north red",
            "green green green white white white 7s 8s 8s 9s 9s 9s 9p",
        ],
    );
    kong.insert("card_ids", ids_value(&tile_ids(&s2, 0, "1m 2m 3m 4m")));
    assert_eq!(
        t.handle(s2.clone(), &m[0], &Value::Object(kong))
            .unwrap_err(),
        "a concealed kong needs four identical tile faces"
    );
    assert_eq!(
        t.handle(s2, &m[0], &Value::Object(act("win"))).unwrap_err(),
        "the hand does not match a supported winning shape"
    );
}

#[test]
fn a_concealed_kong_draws_a_replacement_and_a_self_draw_scores_from_everyone() {
    let mut t = Mahjong::new(&obj! { "deal_seed" => "s", "max_hands" => 1 });
    let mut s = deal(&mut t);
    give(
        &mut s,
        [
            "2m 2m 2m 2m 3p 4p 5p 6s 7s 8s 4m 4m 6m 6m",
            "1s 1s 2s 2s 3s 3s 4s 4s 5s 5s 6s 6s 7s",
            "east east east south south south west west west north north north red",
            "green green green white white white 7s 8s 8s 9s 9s 9s 9p",
        ],
    );
    // Whatever the wall would give, the replacement is a 6m: 234 suits
    // aside, the hand is then 2222m (kong) 345p 678s 44m 666m.
    let six = {
        let st = s.as_object().unwrap();
        let d = deck_of(st).unwrap();
        let pile = d.get("draw_pile").unwrap().as_array().unwrap();
        pile.iter()
            .position(|id| card(st, id.as_str().unwrap()).get_str("code") == Some("6m"))
            .unwrap()
    };
    {
        let pile = deck_map(&mut s).get_mut("draw_pile").unwrap();
        let Value::Array(pile) = pile else { panic!() };
        let id = pile.remove(six);
        pile.push(id);
    }
    let mut kong = act("concealed_kong");
    kong.insert("card_ids", ids_value(&tile_ids(&s, 0, "2m 2m 2m 2m")));
    let out = t.handle(s, &members()[0], &Value::Object(kong)).unwrap();
    let kinds: Vec<&str> = out
        .get("events")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| e.get_str("kind").unwrap())
        .collect();
    assert_eq!(kinds, ["concealed_kong", "replacement_draw"]);
    let s = out.get("state").cloned().unwrap();
    assert_eq!(hand_ids(s.as_object().unwrap(), &pk(0)).len(), 11);
    let out = t
        .handle(s, &members()[0], &Value::Object(act("win")))
        .unwrap();
    assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
    let st = state_of(&out);
    let result = st.get("last_result").unwrap();
    assert_eq!(result.get_str("kind"), Some("self_draw"));
    assert_eq!(result.get_str("win_kind"), Some("standard"));
    // Winning hand, self draw, concealed (a concealed kong keeps it so),
    // all simples: 4 from each other seat.
    assert_eq!(result.get("points").and_then(Value::as_i64), Some(4));
    let scores = obj(&st, "scores");
    assert_eq!(scores.get(&pk(0)).and_then(Value::as_i64), Some(25012));
    assert_eq!(scores.get(&pk(1)).and_then(Value::as_i64), Some(24996));
    assert_eq!(out.get_str("outcome"), Some(pk(0).as_str()));
    assert_eq!(
        t.handle(
            out.get("state").cloned().unwrap(),
            &members()[0],
            &Value::Object(act("win"))
        )
        .unwrap_err(),
        "the Mahjong match is complete"
    );
}

#[test]
fn an_unclaimed_discard_on_an_empty_wall_deals_the_next_hand() {
    let mut t = Mahjong::new(&obj! { "deal_seed" => "n", "max_hands" => 2 });
    let mut s = deal(&mut t);
    set_wall(s.as_object_mut().unwrap(), 0);
    let id = hand_ids(s.as_object().unwrap(), &pk(0))[0].clone();
    let mut d = act("discard");
    d.insert("card_id", Value::from(id.as_str()));
    let mut s = t
        .handle(s, &members()[0], &Value::Object(d))
        .unwrap()
        .get("state")
        .cloned()
        .unwrap();
    let mut last = Value::Null;
    for seat in 1..4 {
        last = t
            .handle(
                s.clone(),
                &members()[seat],
                &Value::Object(act("pass_claim")),
            )
            .unwrap();
        s = last.get("state").cloned().unwrap();
    }
    let events = last.get("events").and_then(Value::as_array).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.get_str("kind").unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "claim_response_received",
            "claim_resolved",
            "mahjong_wall_exhausted",
            "mahjong_hand_started"
        ]
    );
    let st = s.as_object().unwrap();
    assert_eq!(int(st, "hand_number"), 2);
    assert_eq!(text(st, "dealer"), pk(1));
    assert_eq!(
        st.get("last_result").and_then(|r| r.get_str("kind")),
        Some("wall_exhausted")
    );
}

#[test]
fn views_snapshots_restores_and_leader_changes() {
    let mut t = Mahjong::new(&obj! { "deal_seed" => "v" });
    let s = deal(&mut t);
    let m = members();
    let v = t.view(&s, &m[2]).unwrap();
    assert_eq!(
        v.get("my_hand").and_then(Value::as_array).unwrap().len(),
        13
    );
    assert_eq!(v.get("wall_count").and_then(Value::as_i64), Some(83));
    assert_eq!(v.get("you").and_then(|y| y.get_str("wind")), Some("west"));
    assert_eq!(v.get("my_claim"), Some(&Value::Null));
    assert!(v.get("deck").is_none());
    let stranger = Value::Object(obj! { "public_key" => "zz", "seat" => 0 });
    assert_eq!(
        t.view(&s, &stranger).unwrap_err(),
        "viewer does not own a hand"
    );

    let snap = t.recovery_snapshot(&s).unwrap();
    assert_eq!(
        snap,
        Value::Object(obj! {
            "hand_number" => 1, "dealer_index" => 0, "restart_count" => 0,
            "scores" => Value::Object(obj(s.as_object().unwrap(), "scores")),
        })
    );
    let restored = t.restore(snap, &m, 2).unwrap();
    let r = restored.as_object().unwrap();
    assert_eq!(int(r, "restart_count"), 1);
    assert_ne!(obj(r, "deck"), obj(s.as_object().unwrap(), "deck"));
    assert_eq!(
        text(r, "recovery_notice"),
        "The interrupted hidden wall was discarded after a Leader change."
    );
    assert_eq!(
        t.restore(Value::from(3), &m, 2).unwrap_err(),
        "'int' object has no attribute 'get'"
    );
    assert_eq!(
        t.restore(
            Value::Object(obj! { "scores" => Value::Array(vec![]) }),
            &m,
            2
        )
        .unwrap_err(),
        "'list' object has no attribute 'get'"
    );
    assert_eq!(
        t.restore(Value::Object(obj! { "hand_number" => Value::Null }), &m, 2)
            .unwrap_err(),
        "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"
    );
    let odd = t
        .restore(
            Value::Object(obj! { "dealer_index" => -3, "hand_number" => "2" }),
            &m,
            2,
        )
        .unwrap();
    assert_eq!(int(odd.as_object().unwrap(), "dealer_index"), 1);
    assert_eq!(int(odd.as_object().unwrap(), "hand_number"), 2);
    let out = t.on_leader_changed(restored, &pk(0), &pk(1)).unwrap();
    let st = state_of(&out);
    assert!(text(&st, "recovery_notice").starts_with("Leader changed from 00000000 to 00000000;"));
    let events = out.get("events").and_then(Value::as_array).unwrap();
    assert_eq!(
        events[0].get_str("kind"),
        Some("mahjong_hand_restarted_after_leader_change")
    );
}
