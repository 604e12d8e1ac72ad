use super::*;
use crate::protocols::tables::Table;

fn pk(n: usize) -> String {
    format!("{n}").repeat(64)
}

fn members() -> Vec<Value> {
    (0..4)
        .map(|n| {
            Value::Object(obj! {
                "member_id" => format!("m{n}"), "public_key" => pk(n), "seat" => n, "status" => "active",
            })
        })
        .collect()
}

fn sigil(options: Map) -> Sigil {
    let mut options = options;
    options.insert("deal_seed", Value::from("unit"));
    Sigil::new(&options)
}

fn new_game() -> Game {
    sigil(Map::new()).new_match(&members(), 0, "").unwrap()
}

fn ids(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Moves a card named `name` from the draw pile into `owner`'s hand.
fn give(g: &mut Game, owner: &str, name: &str) -> String {
    let id = ids(g.deck.get("draw_pile"))
        .into_iter()
        .find(|id| deck::card(&g.deck, id).unwrap().get_str("name") == Some(name))
        .unwrap_or_else(|| panic!("no {name} left in the pile"));
    list(&mut g.deck, "draw_pile").retain(|c| c.as_str() != Some(&id));
    let hands = g
        .deck
        .get_mut("hands")
        .and_then(Value::as_object_mut)
        .unwrap();
    if let Some(Value::Array(h)) = hands.get_mut(owner) {
        h.push(Value::from(id.as_str()));
    }
    deck::validate(&g.deck).unwrap();
    id
}

fn list<'a>(deck: &'a mut Map, key: &str) -> &'a mut Vec<Value> {
    match deck.get_mut(key) {
        Some(Value::Array(a)) => a,
        _ => panic!("no {key}"),
    }
}

/// Puts a unit named `name` on `owner`'s row (ready unless `exhausted`).
fn field_unit(g: &mut Game, owner: &str, name: &str, exhausted: bool) -> String {
    let id = give(g, owner, name);
    deck::hand_to_zone(
        &mut g.deck,
        owner,
        "units",
        owner,
        std::slice::from_ref(&id),
    )
    .unwrap();
    g.unit_state.insert(
        id.clone(),
        UnitState {
            damage: 0,
            exhausted,
            power_bonus: 0,
        },
    );
    id
}

/// Sets a relic named `name` on `owner`'s row.
fn set_relic(g: &mut Game, owner: &str, name: &str) -> String {
    let id = give(g, owner, name);
    deck::hand_to_zone(
        &mut g.deck,
        owner,
        "relics",
        owner,
        std::slice::from_ref(&id),
    )
    .unwrap();
    id
}

/// Empties the draw pile onto the discard pile.
fn empty_pile(g: &mut Game) {
    let pile = ids(g.deck.get("draw_pile"));
    g.deck.insert("draw_pile", Value::Array(Vec::new()));
    deck::discard(&mut g.deck, &pile).unwrap();
}

fn act(g: &Game, who: usize, action: Map) -> Result<Value, String> {
    sigil(Map::new()).handle(
        Value::Object(g.to_state()),
        &members()[who],
        &Value::Object(action),
    )
}

fn after(out: &Value) -> Game {
    Game::from_state(out.get("state").unwrap().as_object().unwrap()).unwrap()
}

fn kinds(out: &Value) -> Vec<String> {
    out.get("events")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| e.get_str("kind").unwrap().to_owned())
        .collect()
}

fn energy(g: &mut Game, who: usize, n: i64) {
    g.players.get_mut(&pk(who)).unwrap().energy = n;
}

#[test]
fn a_deal_is_fixed_by_the_seed_and_the_restart_count() {
    let g = new_game();
    assert_eq!(g.turn_order, (0..4).map(pk).collect::<Vec<_>>());
    assert_eq!(g.current_player, pk(0));
    assert_eq!(ids(g.deck.get("draw_pile")).len(), 72 - 20);
    for n in 0..4 {
        assert_eq!(deck::hand(&g.deck, &pk(n)).len(), 5);
        let p = &g.players[&pk(n)];
        assert_eq!((p.life, p.energy, p.max_energy), (20, 1, 1));
    }
    let again = new_game();
    assert_eq!(g.deck, again.deck);
    let mut s = sigil(Map::new());
    let snap = s.recovery_snapshot(&Value::Object(g.to_state())).unwrap();
    assert_eq!(
        snap,
        Value::Object(obj! { "restart_count" => 0, "public_outcome" => "" })
    );
    let restored = s.restore(snap, &members(), 2).unwrap();
    let r = Game::from_state(restored.as_object().unwrap()).unwrap();
    assert_eq!(r.restart_count, 1);
    assert_eq!(
        r.recovery_notice,
        "The previous hidden deal was discarded after a Leader change."
    );
    assert_ne!(r.deck.get("draw_pile"), g.deck.get("draw_pile"));
    // A checkpoint's count may be text; one that int() refuses is refused.
    let r = s
        .restore(
            Value::Object(obj! { "restart_count" => "4" }),
            &members(),
            3,
        )
        .unwrap();
    assert_eq!(r.get("restart_count"), Some(&Value::from(5)));
    assert!(
        s.restore(Value::from(3), &members(), 3)
            .unwrap_err()
            .contains("'int' object has no attribute 'get'")
    );
}

#[test]
fn starting_life_is_read_as_python_int_and_kept_to_10_to_50() {
    let life = |v: Value| sigil(obj! { "starting_life" => v }).starting_life();
    assert_eq!(life(Value::from("15")), Ok(15));
    assert_eq!(life(Value::from(" +11 ")), Ok(11));
    assert_eq!(life(Value::from("2_0")), Ok(20));
    assert_eq!(life(Value::from(10.9)), Ok(10));
    let range = Err("starting_life must be between 10 and 50".to_owned());
    assert_eq!(life(Value::Bool(true)), range);
    assert_eq!(life(Value::from(51)), range);
    assert_eq!(
        life(crate::json::parse_str("99999999999999999999").unwrap()),
        range
    );
    assert_eq!(
        life(Value::from("2__0")),
        Err("invalid literal for int() with base 10: '2__0'".to_owned())
    );
    assert_eq!(
        life(Value::Null),
        Err(
            "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"
                .to_owned()
        )
    );
    let mut three = members();
    three[2] = Value::Object(obj! { "public_key" => pk(2), "seat" => 2, "status" => "left" });
    assert_eq!(
        sigil(Map::new()).initial_state(&three).unwrap_err(),
        "Aether Sigil requires exactly four active Members"
    );
}

#[test]
fn shield_absorbs_first_and_a_felled_seat_is_skipped() {
    let mut g = new_game();
    let hound = field_unit(&mut g, &pk(0), "Glass Hound", false);
    g.players.get_mut(&pk(1)).unwrap().shield = 2;
    g.players.get_mut(&pk(1)).unwrap().life = 1;
    let out = act(
        &g,
        0,
        obj! { "kind" => "attack", "unit_id" => hound.as_str(), "target_public_key" => pk(1) },
    )
    .unwrap();
    let ev = &out.get("events").unwrap().as_array().unwrap()[0];
    assert_eq!(ev.get("amount"), Some(&Value::from(1)));
    let g = after(&out);
    let one = &g.players[&pk(1)];
    assert_eq!((one.life, one.shield, one.defeated), (0, 0, true));
    assert!(g.unit_state[&hound].exhausted);
    // The felled seat's turn is skipped: seat 2 is next.
    let out = act(&g, 0, obj! { "kind" => "end_turn" }).unwrap();
    let g = after(&out);
    assert_eq!(g.current_player, pk(2));
    assert_eq!(g.turn_number, 2);
}

#[test]
fn combat_is_simultaneous_and_a_falsy_target_card_is_a_direct_attack() {
    let mut g = new_game();
    let lynx = field_unit(&mut g, &pk(0), "Void Lynx", false);
    let guard = field_unit(&mut g, &pk(1), "Aether Guard", false);
    let out = act(
        &g,
        0,
        obj! { "kind" => "attack", "unit_id" => lynx.as_str(), "target_card_id" => guard.as_str() },
    )
    .unwrap();
    // Lynx (4/2) into Guard (2/5): the Guard survives with 4 damage, the
    // Lynx falls to the counter of 2.
    assert_eq!(kinds(&out), ["unit_combat", "unit_destroyed"]);
    let g2 = after(&out);
    assert_eq!(g2.unit_state[&guard].damage, 4);
    assert!(!g2.unit_state.contains_key(&lynx));
    assert!(ids(g2.deck.get("discard_pile")).contains(&lynx));
    // An allied target is refused; a falsy one goes at the player.
    let mut g = new_game();
    let finch = field_unit(&mut g, &pk(0), "Iron Finch", false);
    let dawn = field_unit(&mut g, &pk(0), "Dawnling", false);
    assert_eq!(
        act(
            &g,
            0,
            obj! { "kind" => "attack", "unit_id" => finch.as_str(), "target_card_id" => dawn.as_str() }
        )
        .unwrap_err(),
        "a unit cannot attack an allied unit"
    );
    for falsy in [
        Value::from(""),
        Value::from(0),
        Value::Bool(false),
        Value::Array(vec![]),
    ] {
        let out = act(
            &g,
            0,
            obj! { "kind" => "attack", "unit_id" => finch.as_str(), "target_card_id" => falsy, "target_public_key" => pk(3) },
        )
        .unwrap();
        assert_eq!(kinds(&out), ["direct_attack"]);
    }
    assert_eq!(
        act(
            &g,
            0,
            obj! { "kind" => "attack", "unit_id" => finch.as_str(), "target_card_id" => 7 }
        )
        .unwrap_err(),
        "target_card_id must be text"
    );
    let mut tired = g.clone();
    tired.unit_state.get_mut(&finch).unwrap().exhausted = true;
    assert_eq!(
        act(
            &tired,
            0,
            obj! { "kind" => "attack", "unit_id" => finch.as_str(), "target_public_key" => pk(1) }
        )
        .unwrap_err(),
        "this unit is exhausted"
    );
}

#[test]
fn relics_shape_later_cards_and_dissolve_counts_the_forge() {
    let mut g = new_game();
    set_relic(&mut g, &pk(1), "Living Forge");
    energy(&mut g, 1, 10);
    g.current_player = pk(1);
    let scribe = give(&mut g, &pk(1), "Glass Hound");
    let out = act(
        &g,
        1,
        obj! { "kind" => "play_card", "card_id" => scribe.as_str() },
    )
    .unwrap();
    let mut g = after(&out);
    let u = &g.unit_state[&scribe];
    assert_eq!((u.power_bonus, u.exhausted), (1, true));
    assert_eq!(g.players[&pk(1)].energy, 8);
    // Glass Hound is 3 power + 1 from the Forge: too strong for Dissolve.
    let hound = field_unit(&mut g, &pk(2), "Glass Hound", true);
    g.current_player = pk(0);
    energy(&mut g, 0, 5);
    let dissolve = give(&mut g, &pk(0), "Dissolve");
    let cast = |g: &Game, target: &str| {
        act(
            g,
            0,
            obj! { "kind" => "play_card", "card_id" => dissolve.as_str(), "target_card_id" => target },
        )
    };
    assert_eq!(
        cast(&g, &scribe).unwrap_err(),
        "the target unit is too powerful for Dissolve"
    );
    let out = cast(&g, &hound).unwrap();
    assert_eq!(kinds(&out), ["spell_cast", "unit_dissolved"]);
    // Deep Reservoir raises maximum Aether (not this turn's), to ten at most.
    let mut g = new_game();
    energy(&mut g, 0, 3);
    g.players.get_mut(&pk(0)).unwrap().max_energy = 10;
    let reservoir = give(&mut g, &pk(0), "Deep Reservoir");
    let out = act(
        &g,
        0,
        obj! { "kind" => "play_card", "card_id" => reservoir.as_str() },
    )
    .unwrap();
    let p = &after(&out).players[&pk(0)];
    assert_eq!((p.energy, p.max_energy), (1, 10));
    // A third relic does not fit.
    let mut g = new_game();
    set_relic(&mut g, &pk(0), "Sun Dial");
    set_relic(&mut g, &pk(0), "Sun Dial");
    energy(&mut g, 0, 5);
    let lens = give(&mut g, &pk(0), "Prism Lens");
    assert_eq!(
        act(
            &g,
            0,
            obj! { "kind" => "play_card", "card_id" => lens.as_str() }
        )
        .unwrap_err(),
        "the relic row is full"
    );
    // Two Sun Dials heal two at the end of the turn, never past the start.
    g.players.get_mut(&pk(0)).unwrap().life = 19;
    let out = act(&g, 0, obj! { "kind" => "end_turn" }).unwrap();
    assert_eq!(
        out.get("events").unwrap().as_array().unwrap()[0],
        Value::Object(obj! { "kind" => "relic_heal", "public_key" => pk(0), "amount" => 1 })
    );
}

#[test]
fn star_map_into_an_empty_pile_can_fell_its_caster() {
    let mut g = new_game();
    let map = give(&mut g, &pk(0), "Star Map");
    empty_pile(&mut g);
    energy(&mut g, 0, 2);
    g.players.get_mut(&pk(0)).unwrap().life = 3;
    let out = act(
        &g,
        0,
        obj! { "kind" => "play_card", "card_id" => map.as_str() },
    )
    .unwrap();
    // Fatigue 1 then 2 fells the caster; seat 1 begins its turn (and takes
    // fatigue 1 itself), the turn number unchanged.
    assert_eq!(
        kinds(&out),
        [
            "spell_cast",
            "fatigue",
            "fatigue",
            "turn_started",
            "fatigue"
        ]
    );
    let g = after(&out);
    assert!(g.players[&pk(0)].defeated);
    assert_eq!(g.current_player, pk(1));
    assert_eq!(g.turn_number, 1);
    assert_eq!(g.players[&pk(1)].fatigue, 1);
    assert!(ids(g.deck.get("discard_pile")).contains(&map));
}

#[test]
fn the_last_channeler_standing_wins() {
    let mut g = new_game();
    for n in [1, 2] {
        g.players.get_mut(&pk(n)).unwrap().defeated = true;
    }
    let out = act(&g, 0, obj! { "kind" => "concede" }).unwrap();
    assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
    assert_eq!(out.get_str("outcome"), Some(pk(3).as_str()));
    assert_eq!(kinds(&out), ["conceded", "game_over"]);
    let done = out.get("state").unwrap().clone();
    let mut s = sigil(Map::new());
    assert_eq!(
        s.handle(
            done.clone(),
            &members()[3],
            &Value::Object(obj! { "kind" => "end_turn" })
        )
        .unwrap_err(),
        "the match is complete"
    );
    assert_eq!(
        s.recovery_snapshot(&done)
            .unwrap()
            .get_str("public_outcome"),
        Some(pk(3).as_str())
    );
    // Fatigue at the start of a turn can end the match too.
    let mut g = new_game();
    empty_pile(&mut g);
    g.players.get_mut(&pk(1)).unwrap().defeated = true;
    g.players.get_mut(&pk(2)).unwrap().defeated = true;
    g.players.get_mut(&pk(3)).unwrap().life = 1;
    let out = act(&g, 0, obj! { "kind" => "end_turn" }).unwrap();
    assert_eq!(out.get_str("outcome"), Some(pk(0).as_str()));
    assert_eq!(kinds(&out), ["turn_started", "fatigue", "game_over"]);
}

#[test]
fn views_show_only_the_viewers_hand() {
    let g = new_game();
    let mut s = sigil(Map::new());
    let state = Value::Object(g.to_state());
    let v = s.view(&state, &members()[2]).unwrap();
    let mine: Vec<String> = v
        .get("my_hand")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|c| c.get_str("card_id").unwrap().to_owned())
        .collect();
    assert_eq!(mine, deck::hand(&g.deck, &pk(2)));
    assert!(v.get("deck").is_none());
    assert_eq!(v.get("draw_count"), Some(&Value::from(52)));
    assert_eq!(
        v.get("hand_counts").and_then(|h| h.get(&pk(0))),
        Some(&Value::from(5))
    );
    assert_eq!(
        v.get("you"),
        Some(&Value::Object(obj! { "public_key" => pk(2), "seat" => 2 }))
    );
    let stranger = Value::Object(obj! { "public_key" => "x", "seat" => 9 });
    assert_eq!(
        s.view(&state, &stranger).unwrap_err(),
        "viewer does not own a hand"
    );
    let changed = s.on_leader_changed(state, &pk(0), &pk(1)).unwrap();
    assert_eq!(
        changed
            .get("state")
            .and_then(|s| s.get_str("recovery_notice")),
        Some("Leader changed from 00000000 to 11111111; a fresh shared deck was dealt.")
    );
}

#[test]
fn odd_actions_are_refused_without_a_panic() {
    let mut g = new_game();
    field_unit(&mut g, &pk(0), "Dawnling", false);
    field_unit(&mut g, &pk(1), "Dawnling", false);
    energy(&mut g, 0, 10);
    for name in ["Cinder Shot", "Dissolve", "Mending Rain", "Ember Drake"] {
        give(&mut g, &pk(0), name);
    }
    let state = Value::Object(g.to_state());
    let odd = [
        Value::Null,
        Value::Bool(true),
        Value::from(0),
        Value::from(-1),
        Value::from(1.5),
        Value::from(""),
        Value::from("x"),
        Value::from(pk(0)),
        Value::from(pk(1)),
        Value::Array(vec![Value::from("x")]),
        Value::Object(obj! { "a" => 1 }),
        crate::json::parse_str("-99999999999999999999").unwrap(),
    ];
    let mut targets: Vec<Value> = odd.to_vec();
    targets.extend(deck::hand(&g.deck, &pk(0)).into_iter().map(Value::from));
    targets.extend(g.unit_state.keys().map(|k| Value::from(k.as_str())));
    let mut s = sigil(Map::new());
    let mut accepted = 0;
    for kind in ["play_card", "attack", "end_turn", "concede", "other"] {
        for a in &targets {
            for b in &odd {
                for key in ["card_id", "unit_id", "target_card_id", "target_public_key"] {
                    let mut action = obj! { "kind" => kind, key => b.clone() };
                    action.insert(
                        if kind == "attack" {
                            "unit_id"
                        } else {
                            "card_id"
                        },
                        a.clone(),
                    );
                    if let Ok(out) = s.handle(state.clone(), &members()[0], &Value::Object(action))
                    {
                        accepted += 1;
                        assert!(
                            Game::from_state(out.get("state").unwrap().as_object().unwrap())
                                .is_ok()
                        );
                    }
                }
            }
        }
    }
    assert!(accepted > 0);
    for action in &odd {
        assert!(s.handle(state.clone(), &members()[0], action).is_err());
    }
    assert!(s.handle(Value::from(3), &members()[0], &odd[0]).is_err());
    assert!(
        s.handle(
            Value::Object(obj! { "phase" => "playing" }),
            &members()[0],
            &odd[0]
        )
        .is_err()
    );
}

/// Every legal action is accepted, and the bot only ever sends one of them.
#[test]
fn legal_actions_are_accepted_and_the_bot_picks_among_them() {
    let mut s = sigil(Map::new());
    for seed in 0..6 {
        let mut options = Map::new();
        options.insert("deal_seed", Value::from(format!("legal-{seed}")));
        let mut s2 = Sigil::new(&options);
        let mut state = s2.initial_state(&members()).unwrap();
        for _ in 0..400 {
            let cur = state.get_str("current_player").unwrap().to_owned();
            let who = (0..4).find(|n| pk(*n) == cur).unwrap();
            let view = s2.view(&state, &members()[who]).unwrap();
            let legal = s2.legal_actions(&view);
            for a in &legal {
                assert!(
                    s2.handle(state.clone(), &members()[who], a).is_ok(),
                    "{a:?}"
                );
            }
            for other in (0..4).filter(|n| *n != who) {
                let v = s2.view(&state, &members()[other]).unwrap();
                assert!(s2.legal_actions(&v).is_empty());
                assert!(s2.bot_action(&v).is_none());
            }
            let bot = s2.bot_action(&view).unwrap();
            assert!(legal.contains(&bot), "{bot:?}");
            assert_ne!(bot.get_str("kind"), Some("concede"));
            let out = s2.handle(state, &members()[who], &bot).unwrap();
            state = out.get("state").unwrap().clone();
            if out.get("completed").is_some() {
                break;
            }
        }
        assert_eq!(state.get_str("phase"), Some("completed"), "seed {seed}");
    }
    // Selections: one playable card of the hand, nothing else.
    let mut g = new_game();
    energy(&mut g, 0, 1);
    let drake = give(&mut g, &pk(0), "Ember Drake");
    let dawn = give(&mut g, &pk(0), "Dawnling");
    let view = s.view(&Value::Object(g.to_state()), &members()[0]).unwrap();
    assert!(s.is_legal_selection(&view, std::slice::from_ref(&dawn)));
    assert!(!s.is_legal_selection(&view, std::slice::from_ref(&drake)));
    assert!(!s.is_legal_selection(&view, &[dawn.clone(), dawn]));
    assert!(!s.is_legal_selection(&view, &[]));
}

#[test]
fn the_bot_takes_lethal_and_does_not_draw_into_fatigue() {
    let s = sigil(Map::new());
    let mut g = new_game();
    let lynx = field_unit(&mut g, &pk(0), "Void Lynx", false);
    g.players.get_mut(&pk(2)).unwrap().life = 6;
    g.players.get_mut(&pk(2)).unwrap().shield = 0;
    energy(&mut g, 0, 1);
    let shot = give(&mut g, &pk(0), "Cinder Shot");
    let view = sigil(Map::new())
        .view(&Value::Object(g.to_state()), &members()[0])
        .unwrap();
    // Lynx (4) and Cinder Shot (2) fell seat 2 this turn: either goes at it.
    let first = s.bot_action(&view).unwrap();
    assert_eq!(
        first.get_str("target_public_key"),
        Some(pk(2).as_str()),
        "{first:?}"
    );
    assert!(
        first.get_str("unit_id") == Some(lynx.as_str())
            || first.get_str("card_id") == Some(shot.as_str())
    );
    // With an empty pile, Star Map is never cast.
    let mut g = new_game();
    empty_pile(&mut g);
    let hands = g
        .deck
        .get_mut("hands")
        .and_then(Value::as_object_mut)
        .unwrap();
    let mine = ids(hands.get(&pk(0)));
    hands.insert(pk(0).as_str(), Value::Array(Vec::new()));
    deck::discard(&mut g.deck, &mine).unwrap();
    energy(&mut g, 0, 10);
    let view = sigil(Map::new())
        .view(&Value::Object(g.to_state()), &members()[0])
        .unwrap();
    assert_eq!(
        s.bot_action(&view),
        Some(Value::Object(obj! { "kind" => "end_turn" }))
    );
}
