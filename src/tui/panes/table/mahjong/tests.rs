use super::*;
use crate::obj;
use crate::session::table::tile_label;

fn tile(code: &str) -> Value {
    Value::Object(obj! { "code" => code, "card_id" => format!("id-{code}") })
}

fn name(pk: &str) -> String {
    if pk == "me" {
        "you".to_owned()
    } else {
        format!("<{pk}>")
    }
}

fn say(ev: Map) -> String {
    event_text("classical-mahjong-v1", &ev, &name, None).unwrap()
}

#[test]
fn mahjong_events_read_as_sentences() {
    assert_eq!(
        say(
            obj! { "kind" => "mahjong_discard", "public_key" => "a", "card" => tile("5p"), "seat" => 1 }
        ),
        "<a> discards 5p"
    );
    assert_eq!(
        say(obj! { "kind" => "mahjong_discard", "public_key" => "me", "card" => tile("east") }),
        "you discard 東"
    );
    assert_eq!(
        say(
            obj! { "kind" => "claim_response_received", "public_key" => "b", "response_count" => 2 }
        ),
        "<b> answers the claim window (2 in)"
    );
    assert_eq!(
        say(obj! { "kind" => "claim_resolved", "claim" => "none" }),
        "nobody claims the discard"
    );
    assert_eq!(
        say(obj! { "kind" => "claim_resolved", "claim" => "pung", "winner" => "me" }),
        "you take the discard for a pung"
    );
    assert_eq!(
        say(obj! { "kind" => "claim_resolved", "claim" => "win", "winner" => "b" }),
        "<b> claims the discard to win"
    );
    assert_eq!(
        say(obj! {
            "kind" => "chow", "owner" => "b", "from" => "a",
            "cards" => vec![tile("6s"), tile("4s"), tile("5s")],
        }),
        "<b> melds a chow 456s from <a>"
    );
    assert_eq!(
        say(obj! {
            "kind" => "concealed_kong", "owner" => "me",
            "cards" => vec![tile("white"), tile("white"), tile("white"), tile("white")],
        }),
        "you declare a concealed kong (白白白白)"
    );
    assert_eq!(
        say(obj! { "kind" => "replacement_draw", "public_key" => "me" }),
        "you draw a replacement tile"
    );
    assert_eq!(
        say(obj! { "kind" => "mahjong_draw", "public_key" => "c" }),
        "<c> draws a tile"
    );
    assert_eq!(
        say(obj! {
            "kind" => "discard_win", "winner" => "b", "discarder" => "me", "win_kind" => "standard",
            "patterns" => vec![
                Value::Object(obj! { "code" => "winning_hand", "points" => 1 }),
                Value::Object(obj! { "code" => "all_simples", "points" => 1 }),
            ],
            "points" => 2, "score_delta" => obj! { "me" => -6, "b" => 6 },
        }),
        "<b> wins on your discard (four sets and a pair): 2 points — winning hand 1, all simples 1; you pay 6"
    );
    assert_eq!(
        say(obj! {
            "kind" => "self_draw", "winner" => "me", "discarder" => Value::Null, "win_kind" => "seven_pairs",
            "patterns" => vec![Value::Object(obj! { "code" => "seven_pairs", "points" => 4 })],
            "points" => 4, "score_delta" => obj! { "me" => 12 },
        }),
        "you win on your own draw (seven pairs): 4 points — seven pairs 4; each other seat pays 4"
    );
    assert_eq!(
        say(obj! { "kind" => "mahjong_wall_exhausted" }),
        "the wall is empty: the hand ends with no winner"
    );
    assert_eq!(
        say(obj! { "kind" => "mahjong_hand_started", "hand_number" => 2, "dealer" => "a" }),
        "hand 2 is dealt: <a> is the dealer"
    );
    assert_eq!(
        say(obj! {
            "kind" => "mahjong_match_complete", "winner" => "b", "winners" => vec![Value::from("b")],
            "scores" => obj! { "b" => 25012 },
        }),
        "<b> wins the match with 25012 points"
    );
    assert_eq!(
        say(
            obj! { "kind" => "mahjong_match_complete", "winner" => "draw", "winners" => vec![Value::from("a"), Value::from("me")] }
        ),
        "the match is a draw: <a>, you tie"
    );
    assert_eq!(
        say(obj! { "kind" => "mahjong_hand_restarted_after_leader_change", "hand_number" => 3 }),
        "the leader changed: hand 3 is dealt again"
    );
    assert_eq!(
        say(obj! { "kind" => "member_rejoined", "public_key" => "a" }),
        "<a> is back"
    );
    // Odd events read without a panic.
    for odd in [
        obj! { "kind" => "mahjong_discard", "card" => 7 },
        obj! { "kind" => "pung", "cards" => "x" },
        obj! { "kind" => "discard_win", "patterns" => 3, "score_delta" => vec![Value::from(1)] },
        obj! { "kind" => "mahjong_match_complete", "winners" => 5 },
    ] {
        say(odd);
    }
}

/// A claim window seen from `a` (seat 0): `c` (seat 2) discarded 5p,
/// `d` has answered, `b` has four melds; long rivers.
fn window_view(my_claim: Value, answered: i64) -> TableView {
    let river: Vec<Value> = [
        "1m", "9p", "east", "white", "3s", "4s", "north", "2p", "8m", "red", "green", "7p", "1s",
        "9s", "south", "west", "6m", "5s", "2m", "5p",
    ]
    .iter()
    .map(|c| tile(c))
    .collect();
    let meld = |kind: &str, codes: [&str; 3]| {
        Value::Object(obj! {
            "kind" => kind, "owner" => "b", "from" => "c",
            "cards" => codes.iter().map(|c| tile(c)).collect::<Vec<_>>(),
        })
    };
    let kong = Value::Object(obj! {
        "kind" => "concealed_kong", "owner" => "b",
        "cards" => ["white"; 4].iter().map(|c| tile(c)).collect::<Vec<_>>(),
    });
    let players = ["a", "b", "c", "d"]
        .iter()
        .enumerate()
        .map(|(n, pk)| {
            let wind = ["east", "south", "west", "north"][n];
            (
                *pk,
                Value::Object(obj! { "seat" => n as i64, "wind" => wind }),
            )
        })
        .fold(Map::new(), |mut m, (k, v)| {
            m.insert(k, v);
            m
        });
    let hand: Vec<Value> = [
        "1m", "2m", "3m", "4p", "6p", "7s", "7s", "east", "east", "red", "green", "white", "9s",
    ]
    .iter()
    .enumerate()
    .map(|(i, c)| Value::Object(obj! { "code" => *c, "card_id" => format!("h{i}") }))
    .collect();
    let view = obj! {
        "phase" => "claim", "hand_number" => 2, "dealer" => "b", "current_player" => "",
        "wall_count" => 31, "players" => Value::Object(players),
        "scores" => obj! { "a" => 24994, "b" => 25018, "c" => 24994, "d" => 24994 },
        "hand_counts" => obj! { "a" => 13, "b" => 1, "c" => 13, "d" => 13 },
        "my_hand" => hand,
        "melds" => obj! {
            "b" => vec![meld("pung", ["9m", "9m", "9m"]), meld("chow", ["3p", "4p", "5p"]),
                meld("kong", ["north", "north", "north"]), kong],
        },
        "rivers" => obj! { "a" => river.clone(), "b" => river.clone(), "c" => river.clone(), "d" => Vec::<Value>::new() },
        "last_discard" => obj! { "card_id" => "id-5p", "card" => tile("5p"), "public_key" => "c", "seat" => 2 },
        "claim_response_count" => answered, "claim_required_count" => 3, "my_claim" => my_claim,
        "last_result" => obj! {
            "kind" => "self_draw", "winner" => "b", "discarder" => Value::Null, "win_kind" => "standard",
            "patterns" => vec![Value::Object(obj! { "code" => "winning_hand", "points" => 1 }),
                Value::Object(obj! { "code" => "self_draw", "points" => 1 })],
            "points" => 2, "score_delta" => obj! { "a" => -2, "b" => 6 },
        },
        "you" => obj! { "public_key" => "a", "seat" => 0, "wind" => "east", "may_claim" => true },
    };
    TableView::parse("classical-mahjong-v1", &Value::Object(view)).unwrap()
}

#[test]
fn a_claim_window_fits_every_width_and_names_who_it_waits_for() {
    let v = Ok(window_view(Value::Null, 1));
    let t = v.as_ref().unwrap();
    assert!(t.your_turn());
    let (kinds, nicks) = (BTreeMap::new(), BTreeMap::new());
    let keymap = Keymap::builtin();
    let theme = Theme::builtin_default();
    let choices = vec![
        Value::Object(obj! { "kind" => "pass_claim" }),
        Value::Object(obj! { "kind" => "win" }),
        Value::Object(
            obj! { "kind" => "chow", "card_ids" => vec![Value::from("h3"), Value::from("h4")] },
        ),
    ];
    let log = [
        LogEntry::Event {
            time: "12:00:00".into(),
            event: obj! { "kind" => "mahjong_discard", "public_key" => "c", "card" => tile("5p") },
        },
        LogEntry::Event {
            time: "12:00:01".into(),
            event: obj! { "kind" => "claim_response_received", "public_key" => "d", "response_count" => 1 },
        },
    ];
    let mut paint = TablePaint {
        name: "Classical Mahjong Core",
        title: "t",
        view: &v,
        waiting: None,
        kinds: &kinds,
        nicks: &nicks,
        log: &log,
        pick: Pick {
            choices: &choices,
            ..Pick::default()
        },
        note: None,
        ended: None,
        outcome: None,
        mode: "human",
        keymap: &keymap,
        focused: true,
    };
    for w in [30u16, 46, 79, 80, 126] {
        let mut lines = paint.seat_lines(&theme, t, w);
        lines.extend(paint.mahjong_lines(&theme, t, w));
        lines.extend(paint.hand_lines(&theme, t, w));
        lines.extend(paint.action_lines(&theme, t, w));
        for l in &lines {
            assert!(l.width() <= w as usize, "{w}: {l:?}");
        }
    }
    let text = |lines: Vec<Line<'static>>| -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    };
    let board = text(paint.mahjong_lines(&theme, t, 126));
    assert_eq!(
        board[0],
        "on offer c's 5p · 1/3 answered · you may claim it"
    );
    assert!(
        board[2].starts_with("b        999m 345p 北北北 (白白白白) · "),
        "{board:?}"
    );
    // The newest discards, the one on offer marked; older ones cut.
    assert!(board[3].ends_with(" 2m [5p]"), "{board:?}");
    assert!(board[4].ends_with("no discards"), "{board:?}");
    assert!(
        board[5].starts_with("last     b wins on its own draw"),
        "{board:?}"
    );
    let narrow = text(paint.mahjong_lines(&theme, t, 46));
    assert!(narrow[1].starts_with("you      … "), "{narrow:?}");
    assert!(narrow[3].ends_with("[5p]"), "{narrow:?}");
    // The claims with their priority.
    let action = text(paint.action_lines(&theme, t, 126)).join(" ");
    assert!(
        action.starts_with(
            "claim c's 5p? [1 pass] [2 win on 5p] [3 chow 456p] · win beats pung/kong beats chow"
        ),
        "{action}"
    );
    // Answered: waiting for the seats the log has not heard from.
    let answered = Ok(window_view(
        Value::Object(obj! { "kind" => "pass_claim" }),
        2,
    ));
    let log = [
        log[0].clone(),
        log[1].clone(),
        LogEntry::Event {
            time: "12:00:02".into(),
            event: obj! { "kind" => "claim_response_received", "public_key" => "a", "response_count" => 2 },
        },
    ];
    paint.log = &log;
    paint.view = &answered;
    paint.pick.choices = &[];
    let t = answered.as_ref().unwrap();
    assert!(!t.your_turn());
    let action = text(paint.action_lines(&theme, t, 126)).join(" ");
    assert_eq!(action, "you passed on c's 5p: waiting for b");
    paint.log = &log[..1];
    let action = text(paint.action_lines(&theme, t, 126)).join(" ");
    assert_eq!(action, "you passed on c's 5p: 1 answer to come");
    // The hand: sorted, the suits apart.
    let hand = text(paint.hand_lines(&theme, t, 126));
    assert_eq!(hand[0], "your hand 13 tiles");
    assert_eq!(
        hand[1].trim_end(),
        "›1m 2m 3m  4p 6p  7s 7s 9s  東 東  中 發 白"
    );
}

#[test]
fn a_hand_of_fourteen_lays_out_on_one_row_in_a_narrow_pane() {
    let t = |code: &str| Tile::parse(&tile(code)).unwrap();
    let hand: Vec<Tile> = [
        "1m", "2m", "3m", "5p", "6p", "7p", "1s", "9s", "east", "east", "red", "green", "white",
        "4m",
    ]
    .iter()
    .map(|c| t(c))
    .collect();
    // Spaced by suit, the drawn tile two cells apart, where it fits.
    let rows = tile_layout(&hand, Some(13), 80);
    assert_eq!(rows.len(), 1);
    assert_eq!(&rows[0][..4], &[(0, 0), (1, 3), (2, 6), (3, 10)]);
    assert_eq!(rows[0][13], (13, 13 * 3 + 4 + 2));
    // 46 cells: the suits close up rather than wrap.
    let rows = tile_layout(&hand, Some(13), 46);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][3], (3, 9));
    // Narrower still: wrapped, every tile once.
    let rows = tile_layout(&hand, Some(13), 20);
    assert!(rows.len() > 1);
    assert_eq!(rows.iter().map(Vec::len).sum::<usize>(), 14);
    assert_eq!(
        tile_layout(&hand, None, 1)
            .iter()
            .map(Vec::len)
            .sum::<usize>(),
        14
    );
    assert!(tile_layout(&[], None, 40).is_empty());
    assert_eq!(tile_label("green"), "發");
}
