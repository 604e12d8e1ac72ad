//! The hooks of upgrade-tractor-v1 on dealt hands: declarations, the
//! kitty, follow obligations through the hooks, scoring and level-ups,
//! recovery, and bots that never send what the rules refuse.

use super::*;
use crate::protocols::tables::Table;

fn members() -> Vec<Value> {
    (0..4)
        .map(|n: i64| {
            Value::Object(obj! {
                "member_id" => format!("m{n}"), "public_key" => format!("pk{n}"), "seat" => n, "status" => "active",
            })
        })
        .collect()
}

fn table(options: Map) -> (Tractor, Value) {
    let mut t = Tractor::new(&options);
    let state = t.initial_state(&members()).unwrap();
    (t, state)
}

fn act(t: &mut Tractor, state: &Value, seat: usize, action: Value) -> Result<Value, String> {
    t.handle(state.clone(), &members()[seat], &action)
}

fn kind(k: &str) -> Value {
    Value::Object(obj! { "kind" => k })
}

fn ids_action(k: &str, ids: &[String]) -> Value {
    Value::Object(obj! {
        "kind" => k, "card_ids" => Value::Array(ids.iter().map(|i| Value::from(i.as_str())).collect()),
    })
}

fn hand(state: &Value, seat: usize) -> Vec<(String, Face)> {
    let deck = state.get("deck").and_then(Value::as_object).unwrap();
    deck::hand(deck, &format!("pk{seat}"))
        .into_iter()
        .map(|id| {
            let f = Face::of(&Value::Object(deck::card(deck, &id).unwrap())).unwrap();
            (id, f)
        })
        .collect()
}

#[test]
fn options_are_range_checked() {
    let err = |o: Map| Tractor::new(&o).initial_state(&members()).unwrap_err();
    assert_eq!(
        err(obj! { "start_level" => 1 }),
        "start_level must be between 2 and 14"
    );
    assert_eq!(
        err(obj! { "start_level" => true }),
        "start_level must be between 2 and 14"
    );
    assert_eq!(
        err(obj! { "target_level" => 2.5 }),
        "target_level must be between 3 and 14"
    );
    assert_eq!(
        err(obj! { "start_level" => 9, "target_level" => 9 }),
        "target_level must be higher than start_level"
    );
    assert_eq!(
        err(obj! { "max_hands" => 65 }),
        "max_hands must be between 1 and 64"
    );
    let three: Vec<Value> = members().into_iter().take(3).collect();
    assert_eq!(
        Tractor::new(&Map::new()).initial_state(&three).unwrap_err(),
        "Upgrade requires exactly four active Members"
    );
}

#[test]
fn a_deal_gives_25_cards_each_and_a_kitty_of_8() {
    let (_, state) = table(obj! { "deal_seed" => "deal" });
    for seat in 0..4 {
        assert_eq!(hand(&state, seat).len(), 25);
    }
    let pile = state.get("deck").unwrap().get("draw_pile").unwrap();
    assert_eq!(pile.as_array().unwrap().len(), 8);
    assert_eq!(state.get_str("phase"), Some("declaration"));
    assert_eq!(state.get("level_rank"), Some(&Value::from(2)));
    let players = state.get("players").unwrap();
    assert_eq!(players.get("pk3").unwrap().get_str("team"), Some("team1"));
}

#[test]
fn declarations_outrank_each_other_and_pick_the_declarer() {
    let (mut t, state) = table(obj! { "deal_seed" => "declare", "start_level" => 5 });
    // Seat 1 declares with a level card if it has one; weaker ones are
    // refused, a non-level single too.
    let (seat, id, card) = (0..4)
        .find_map(|s| {
            hand(&state, s)
                .into_iter()
                .find(|(_, f)| f.rank == 5)
                .map(|(id, f)| (s, id, f))
        })
        .unwrap();
    let id = id.as_str();
    let plain = hand(&state, seat)
        .into_iter()
        .find(|(_, f)| f.rank != 5 && !f.is_joker())
        .unwrap();
    assert_eq!(
        act(
            &mut t,
            &state,
            seat,
            ids_action("declare_trump", &[plain.0])
        ),
        Err("a single declaration must be one level card".into())
    );
    let out = act(
        &mut t,
        &state,
        seat,
        ids_action("declare_trump", &[id.to_owned()]),
    )
    .unwrap();
    let event = &out.get("events").unwrap().as_array().unwrap()[0];
    assert_eq!(event.get_str("kind"), Some("declare_trump"));
    assert_eq!(event.get("strength"), Some(&Value::from(1)));
    assert_eq!(event.get_str("trump_suit"), Some(card.suit));
    let mut state = out.get("state").cloned().unwrap();
    assert_eq!(
        act(&mut t, &state, seat, kind("pass_declare")),
        Err("this Member has already declared or passed".into())
    );
    let other = (seat + 1) % 4;
    if let Some(l) = hand(&state, other).into_iter().find(|(_, f)| f.rank == 5) {
        assert_eq!(
            act(&mut t, &state, other, ids_action("declare_trump", &[l.0])),
            Err("the declaration must be stronger than the current one".into())
        );
    }
    assert_eq!(
        act(&mut t, &state, other, kind("declare")),
        Err("declaration accepts pass_declare or declare_trump".into())
    );
    for s in (0..4).filter(|s| *s != seat) {
        let out = act(&mut t, &state, s, kind("pass_declare")).unwrap();
        state = out.get("state").cloned().unwrap();
    }
    assert_eq!(state.get_str("phase"), Some("bury"));
    assert_eq!(
        state.get_str("declarer"),
        Some(format!("pk{seat}").as_str())
    );
    assert_eq!(state.get_str("trump_suit"), Some(card.suit));
    assert_eq!(hand(&state, seat).len(), 33);
    // The declaring card cannot be buried; seven cards are not eight.
    let cards: Vec<String> = hand(&state, seat).into_iter().map(|c| c.0).collect();
    let mut with_id: Vec<String> = cards.iter().filter(|c| *c != id).take(7).cloned().collect();
    assert_eq!(
        act(&mut t, &state, seat, ids_action("bury", &with_id)),
        Err("card_ids must contain 8-8 unique ids".into())
    );
    with_id.push(id.to_owned());
    assert_eq!(
        act(&mut t, &state, seat, ids_action("bury", &with_id)),
        Err("the winning declaration cards cannot be buried".into())
    );
    assert_eq!(
        act(&mut t, &state, other, ids_action("bury", &with_id)),
        Err("it is not this Member's turn".into())
    );
    with_id.pop();
    with_id.push(cards.iter().rev().find(|c| **c != id).unwrap().clone());
    let out = act(&mut t, &state, seat, ids_action("bury", &with_id)).unwrap();
    let state = out.get("state").unwrap();
    assert_eq!(state.get_str("phase"), Some("playing"));
    assert_eq!(hand(state, seat).len(), 25);
}

#[test]
fn all_passing_leaves_the_starter_declaring_no_trump() {
    let (mut t, mut state) = table(obj! { "deal_seed" => "pass" });
    for s in [2, 0, 3, 1] {
        state = act(&mut t, &state, s, kind("pass_declare"))
            .unwrap()
            .get("state")
            .cloned()
            .unwrap();
    }
    assert_eq!(state.get_str("declarer"), Some("pk0"));
    assert_eq!(state.get("trump_suit"), Some(&Value::Null));
    assert_eq!(state.get_str("current_player"), Some("pk0"));
}

#[test]
fn odd_actions_are_refused_with_the_references_texts() {
    let (mut t, state) = table(obj! { "deal_seed" => "odd" });
    let declare = |ids: Value| Value::Object(obj! { "kind" => "declare_trump", "card_ids" => ids });
    assert_eq!(
        act(&mut t, &state, 0, Value::from("pass")),
        Err("'str' object has no attribute 'get'".into())
    );
    assert_eq!(
        act(&mut t, &state, 0, declare(Value::Null)),
        Err("card_ids must contain 1-2 unique ids".into())
    );
    let nested = Value::Array(vec![Value::Array(vec![])]);
    assert_eq!(
        act(&mut t, &state, 0, declare(nested)),
        Err("unhashable type: 'list'".into())
    );
    let twice = Value::Array(vec![Value::from("a"), Value::from("a")]);
    assert_eq!(
        act(&mut t, &state, 0, declare(twice)),
        Err("card_ids must contain 1-2 unique ids".into())
    );
    let theirs = hand(&state, 1)[0].0.clone();
    assert_eq!(
        act(
            &mut t,
            &state,
            0,
            declare(Value::Array(vec![Value::from(theirs)]))
        ),
        Err("a selected card is not in this Member's hand".into())
    );
}

/// Plays a hand with bots from `state`; the hook results in order.
fn bots_play(t: &mut Tractor, mut state: Value, limit: usize) -> (Value, Vec<Value>) {
    let mut outs = Vec::new();
    for _ in 0..limit {
        let mover = (0..4).find(|s| {
            let view = t.view(&state, &members()[*s]).unwrap();
            t.bot_action(&view).is_some()
        });
        let Some(seat) = mover else { break };
        let view = t.view(&state, &members()[seat]).unwrap();
        for a in t.legal_actions(&view) {
            if let Err(e) = act(t, &state, seat, a.clone()) {
                panic!("legal {a:?} refused: {e}");
            }
            if let Some(ids) = a.get("card_ids").and_then(Value::as_array) {
                let ids: Vec<String> = ids.iter().map(|v| v.as_str().unwrap().to_owned()).collect();
                assert!(t.is_legal_selection(&view, &ids), "{a:?}");
            }
        }
        let a = t.bot_action(&view).unwrap();
        let out = act(t, &state, seat, a.clone()).unwrap_or_else(|e| panic!("bot {a:?}: {e}"));
        state = out.get("state").cloned().unwrap();
        let done = out.get("completed") == Some(&Value::Bool(true));
        outs.push(out);
        if done {
            break;
        }
    }
    (state, outs)
}

#[test]
fn a_hand_scores_points_moves_levels_and_deals_the_next() {
    for seed in 0..6 {
        let (mut t, state) =
            table(obj! { "deal_seed" => format!("hand-{seed}"), "max_hands" => 2 });
        let (_, outs) = bots_play(&mut t, state, 400);
        let events: Vec<&Value> = outs
            .iter()
            .flat_map(|o| o.get("events").unwrap().as_array().unwrap())
            .collect();
        let tricks = events
            .iter()
            .filter(|e| e.get_str("kind") == Some("upgrade_trick_won"))
            .count();
        assert!((25..=50).contains(&tricks), "seed {seed}: {tricks} tricks");
        let done: Vec<&&Value> = events
            .iter()
            .filter(|e| e.get_str("kind") == Some("upgrade_hand_complete"))
            .collect();
        assert_eq!(done.len(), 2, "seed {seed}");
        // Every hand's tricks hold 200 points less the kitty's; the kitty
        // award comes on top.
        let mut expected = 0;
        for r in done {
            let dp = r.get("defender_points").unwrap().as_i64().unwrap();
            let steps = r.get("level_steps").unwrap().as_i64().unwrap();
            let want = match dp {
                0 => 3,
                p if p < 40 => 2,
                p if p < 80 => 1,
                p => 1 + (p - 80) / 40,
            };
            assert_eq!(steps, want, "seed {seed}: {r:?}");
            let points = r.get("kitty_points").unwrap().as_i64().unwrap();
            let award = r.get("kitty_award").unwrap().as_i64().unwrap();
            let times = r.get("kitty_multiplier").unwrap().as_i64().unwrap();
            assert!(award == 0 || award == points * times, "{r:?}");
            expected += 200 - points + award;
        }
        let last = outs.last().unwrap();
        assert_eq!(last.get("completed"), Some(&Value::Bool(true)));
        assert!(matches!(last.get_str("outcome"), Some("team0" | "team1")));
        let s = last.get("state").unwrap();
        let mp = s.get("match_points").unwrap();
        let total =
            mp.get("team0").unwrap().as_i64().unwrap() + mp.get("team1").unwrap().as_i64().unwrap();
        assert_eq!(total, expected, "seed {seed}");
    }
}

#[test]
fn a_target_level_ends_the_match_and_caps_the_level() {
    let (mut t, state) =
        table(obj! { "deal_seed" => "cap", "start_level" => 12, "target_level" => 13 });
    let (_, outs) = bots_play(&mut t, state, 2000);
    let last = outs.last().unwrap();
    assert_eq!(last.get("completed"), Some(&Value::Bool(true)));
    let levels = last.get("state").unwrap().get("levels").unwrap();
    let winner = last.get_str("outcome").unwrap();
    assert_eq!(levels.get(winner), Some(&Value::from(13)));
    assert_eq!(
        act(&mut t, last.get("state").unwrap(), 0, kind("pass_declare")),
        Err("the Upgrade match is complete".into())
    );
}

#[test]
fn restore_redeals_with_levels_and_counters_kept() {
    let (mut t, state) = table(obj! { "deal_seed" => "restore", "start_level" => 4 });
    let snap = t.recovery_snapshot(&state).unwrap();
    assert_eq!(
        snap.get("levels").unwrap().get("team1"),
        Some(&Value::from(4))
    );
    let restored = t.restore(snap, &members(), 2).unwrap();
    assert_eq!(restored.get("restart_count"), Some(&Value::from(1)));
    assert_eq!(restored.get("hand_number"), Some(&Value::from(1)));
    assert_ne!(
        restored.get("deck").unwrap().get("hands"),
        state.get("deck").unwrap().get("hands"),
        "a fresh deal"
    );
    assert!(
        restored
            .get_str("recovery_notice")
            .unwrap()
            .starts_with("The interrupted private deal")
    );
    let bad = Value::Object(obj! { "levels" => Value::Null });
    assert_eq!(
        t.restore(bad, &members(), 3).unwrap_err(),
        "'NoneType' object has no attribute 'get'"
    );
    let bad = Value::Object(obj! { "declarer_team" => "team9" });
    assert_eq!(
        t.restore(bad, &members(), 3).unwrap_err(),
        "declarer_team is invalid"
    );
    let out = t
        .on_leader_changed(state, &"a".repeat(64), &"b".repeat(64))
        .unwrap();
    let notice = out
        .get("state")
        .unwrap()
        .get_str("recovery_notice")
        .unwrap();
    assert_eq!(
        notice,
        "Leader changed from aaaaaaaa to bbbbbbbb; the private hand was redealt."
    );
}

#[test]
fn a_view_shows_only_the_viewers_hand() {
    let (mut t, state) = table(obj! { "deal_seed" => "view" });
    let view = t.view(&state, &members()[1]).unwrap();
    assert_eq!(view.get("my_hand").unwrap().as_array().unwrap().len(), 25);
    assert!(view.get("deck").is_none());
    let you = view.get("you").unwrap();
    assert_eq!(you.get_str("team"), Some("team1"));
    assert_eq!(you.get("is_declarer"), Some(&Value::Bool(false)));
    assert_eq!(
        view.get("hand_counts").unwrap().get("pk3"),
        Some(&Value::from(25))
    );
}
