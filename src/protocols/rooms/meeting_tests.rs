use super::*;
use crate::json::canonical::to_string_ordered;
use crate::json::parse_str;

fn member(n: u8, seat: i64) -> Value {
    Value::Object(obj! {
        "member_id" => format!("m{n}"), "public_key" => key(n), "seat" => seat, "status" => "active",
    })
}

fn key(n: u8) -> String {
    format!("{n:02x}").repeat(32)
}

fn room(options: &str) -> MeetingRoom {
    let options = parse_str(options).unwrap();
    MeetingRoom::new(options.as_object().unwrap())
}

/// Applies `action` and returns the new state, or panics with the
/// refusal.
fn ok(h: &mut MeetingRoom, state: Value, actor: &Value, action: &str) -> Value {
    let out = h.handle(state, actor, &parse_str(action).unwrap());
    out.unwrap_or_else(|e| panic!("{action}: {e}"))
        .get("state")
        .cloned()
        .unwrap()
}

fn refused(h: &mut MeetingRoom, state: &Value, actor: &Value, action: &str) -> String {
    match h.handle(state.clone(), actor, &parse_str(action).unwrap()) {
        Err(e) => e,
        Ok(_) => panic!("{action} was accepted"),
    }
}

#[test]
fn initial_state_shape_and_facilitator() {
    let mut h = room("{}");
    let mut left = member(4, 4);
    if let Value::Object(m) = &mut left {
        m.insert("status", Value::from("left"));
    }
    let s = h
        .initial_state(&[member(3, 2), member(1, 0), left, member(2, 0)])
        .unwrap();
    let keys: Vec<&str> = s.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "title",
            "facilitator",
            "members",
            "agenda",
            "active_agenda",
            "speaking_queue",
            "active_speaker",
            "vote",
            "vote_history",
            "action_items",
            "next_id",
            "ended",
        ]
    );
    assert_eq!(s.get_str("title"), Some("Working session"));
    assert_eq!(s.get_str("facilitator"), Some(key(1).as_str()));
    let roster = s.get("members").unwrap().as_object().unwrap();
    assert_eq!(
        roster.keys().collect::<Vec<_>>(),
        [key(3), key(1), key(4), key(2)]
    );
    assert_eq!(
        to_string_ordered(roster.get(&key(4)).unwrap()),
        r#"{"seat":4,"status":"left"}"#
    );
    assert_eq!(
        h.initial_state(&[]),
        Err("min() arg is an empty sequence".into())
    );
    let s = room(r#"{"meeting_title": 12}"#)
        .initial_state(&[member(1, 0)])
        .unwrap();
    assert_eq!(s.get_str("title"), Some("12"));
}

#[test]
fn agenda_limit_and_advancing() {
    let mut h = room(r#"{"max_agenda_items": 2}"#);
    let (a, b) = (member(1, 0), member(2, 1));
    let s = h.initial_state(&[a.clone(), b.clone()]).unwrap();
    let s = ok(&mut h, s, &b, r#"{"kind":"add_agenda","text":" One "}"#);
    assert_eq!(s.get("active_agenda"), Some(&Value::from(0)));
    let s = ok(&mut h, s, &b, r#"{"kind":"add_agenda","text":"Two"}"#);
    assert_eq!(
        refused(&mut h, &s, &b, r#"{"kind":"add_agenda","text":5}"#),
        "agenda is full"
    );
    assert_eq!(
        refused(&mut h, &s, &b, r#"{"kind":"advance_agenda"}"#),
        "this action requires the meeting facilitator"
    );
    let s = ok(&mut h, s, &a, r#"{"kind":"advance_agenda"}"#);
    let s = ok(&mut h, s, &a, r#"{"kind":"advance_agenda"}"#);
    assert_eq!(s.get("active_agenda"), Some(&Value::from(-1)));
    let statuses: Vec<&str> = s
        .get("agenda")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.get_str("status"))
        .collect();
    assert_eq!(statuses, ["done", "done"]);
    // Advancing again starts over at the first item.
    let s = ok(&mut h, s, &a, r#"{"kind":"advance_agenda"}"#);
    assert_eq!(s.get("active_agenda"), Some(&Value::from(0)));

    let mut h = room(r#"{"max_agenda_items": null}"#);
    let s = h.initial_state(std::slice::from_ref(&a)).unwrap();
    assert_eq!(
        refused(&mut h, &s, &a, r#"{"kind":"add_agenda","text":"x"}"#),
        "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"
    );
    let mut h = room(r#"{"max_agenda_items": 60}"#);
    let mut s = h.initial_state(std::slice::from_ref(&a)).unwrap();
    for _ in 0..60 {
        s = ok(&mut h, s, &a, r#"{"kind":"add_agenda","text":"x"}"#);
    }
    assert_eq!(
        refused(&mut h, &s, &a, r#"{"kind":"add_agenda","text":"x"}"#),
        "agenda is full"
    );
}

#[test]
fn speaking_queue() {
    let mut h = room("{}");
    let (a, b, c) = (member(1, 0), member(2, 1), member(3, 2));
    let s = h.initial_state(&[a.clone(), b.clone(), c.clone()]).unwrap();
    let s = ok(&mut h, s, &b, r#"{"kind":"request_to_speak"}"#);
    let s = ok(&mut h, s, &c, r#"{"kind":"request_to_speak"}"#);
    let s = ok(&mut h, s, &c, r#"{"kind":"request_to_speak"}"#);
    let s = ok(&mut h, s, &a, r#"{"kind":"request_to_speak"}"#);
    assert_eq!(s.get_str("active_speaker"), Some(key(2).as_str()));
    assert_eq!(
        s.get("speaking_queue"),
        Some(&Value::from(vec![Value::from(key(3)), Value::from(key(1))]))
    );
    assert_eq!(
        refused(&mut h, &s, &c, r#"{"kind":"yield_speaker"}"#),
        "only the active speaker can yield"
    );
    let out = h
        .handle(s, &b, &parse_str(r#"{"kind":"yield_speaker"}"#).unwrap())
        .unwrap();
    assert_eq!(
        to_string_ordered(out.get("events").unwrap()),
        format!(
            r#"[{{"kind":"speaker_yielded","active_speaker":"{}"}}]"#,
            key(3)
        )
    );
    // The active speaker leaving hands the floor on.
    let out = h
        .member_left(out.get("state").cloned().unwrap(), &c, "timeout")
        .unwrap();
    let s = out.get("state").unwrap();
    assert_eq!(s.get_str("active_speaker"), Some(key(1).as_str()));
    assert_eq!(s.get("speaking_queue"), Some(&Value::Array(vec![])));
    assert_eq!(
        to_string_ordered(out.get("events").unwrap()),
        format!(
            r#"[{{"kind":"member_left","public_key":"{}","reason":"timeout"}}]"#,
            key(3)
        )
    );
}

#[test]
fn votes_and_views() {
    let mut h = room("{}");
    let (a, b, c) = (member(1, 0), member(2, 1), member(3, 2));
    let s = h.initial_state(&[a.clone(), b.clone(), c.clone()]).unwrap();
    let vote = r#"{"kind":"open_vote","question":" Go? ","choices":[" Yes ","No","Later"]}"#;
    assert_eq!(
        refused(&mut h, &s, &b, vote),
        "this action requires the meeting facilitator"
    );
    for (action, want) in [
        (
            r#"{"kind":"open_vote","choices":["a","b"]}"#,
            "question must be text",
        ),
        (
            r#"{"kind":"open_vote","question":"q","choices":["a"]}"#,
            "choices must contain 2-6 items",
        ),
        (
            r#"{"kind":"open_vote","question":"q","choices":"ab"}"#,
            "choices must contain 2-6 items",
        ),
        (
            r#"{"kind":"open_vote","question":"q","choices":["a",1]}"#,
            "choice must be text",
        ),
        (
            r#"{"kind":"open_vote","question":"q","choices":["a"," "]}"#,
            "choice must be 1-100 UTF-8 bytes",
        ),
        (r#"{"kind":"close_vote"}"#, "no vote is open"),
        (r#"{"kind":"cast_vote","choice":0}"#, "no vote is open"),
    ] {
        assert_eq!(refused(&mut h, &s, &a, action), want, "{action}");
    }
    let s = ok(&mut h, s, &a, vote);
    assert_eq!(refused(&mut h, &s, &a, vote), "a vote is already open");
    let s = ok(&mut h, s, &b, r#"{"kind":"cast_vote","choice":0}"#);
    let s = ok(&mut h, s, &c, r#"{"kind":"cast_vote","choice":2}"#);
    let s = ok(&mut h, s, &b, r#"{"kind":"cast_vote","choice":1}"#);
    for choice in ["3", "-1", "true", "1.0", r#""1""#, "null"] {
        let action = format!(r#"{{"kind":"cast_vote","choice":{choice}}}"#);
        assert_eq!(
            refused(&mut h, &s, &c, &action),
            "choice is out of range",
            "{choice}"
        );
    }
    let view = h.view(&s, &b).unwrap();
    assert_eq!(
        to_string_ordered(view.get("vote").unwrap()),
        r#"{"id":1,"question":"Go?","choices":["Yes","No","Later"],"counts":[0,1,1],"ballot_count":2,"my_choice":1,"status":"open"}"#
    );
    assert_eq!(
        view.get("you").unwrap().get("is_facilitator"),
        Some(&Value::Bool(false))
    );
    let view = h.view(&s, &a).unwrap();
    assert_eq!(
        view.get("vote").unwrap().get("my_choice"),
        Some(&Value::Null)
    );
    assert_eq!(
        view.get("you").unwrap().get("is_facilitator"),
        Some(&Value::Bool(true))
    );
    let out = h
        .handle(s, &a, &parse_str(r#"{"kind":"close_vote"}"#).unwrap())
        .unwrap();
    let s = out.get("state").cloned().unwrap();
    assert_eq!(s.get("vote"), Some(&Value::Null));
    assert_eq!(
        to_string_ordered(&s.get("vote_history").unwrap().as_array().unwrap()[0]),
        format!(
            r#"{{"id":1,"question":"Go?","choices":["Yes","No","Later"],"ballots":{{"{}":1,"{}":2}},"status":"closed","counts":[0,1,1]}}"#,
            key(2),
            key(3)
        )
    );
    assert_eq!(h.view(&s, &c).unwrap().get("vote"), Some(&Value::Null));
}

#[test]
fn action_items_transfer_and_end() {
    let mut h = room("{}");
    let (a, b, c) = (member(1, 0), member(2, 1), member(3, 2));
    let s = h.initial_state(&[a.clone(), b.clone(), c.clone()]).unwrap();
    let s = ok(
        &mut h,
        s,
        &b,
        r#"{"kind":"add_action_item","text":"Notes","assignee":""}"#,
    );
    let item = &s.get("action_items").unwrap().as_array().unwrap()[0];
    assert_eq!(
        to_string_ordered(item),
        format!(
            r#"{{"id":1,"text":"Notes","assignee":"{}","created_by":"{}","done":false}}"#,
            key(2),
            key(2)
        )
    );
    let unknown = format!(
        r#"{{"kind":"add_action_item","text":"x","assignee":"{}"}}"#,
        key(9)
    );
    assert_eq!(
        refused(&mut h, &s, &b, &unknown),
        "assignee must be a member public key"
    );
    for (action, want) in [
        (
            r#"{"kind":"complete_action_item","item_id":"1"}"#,
            "item_id must be an integer",
        ),
        (
            r#"{"kind":"complete_action_item","item_id":true}"#,
            "item_id must be an integer",
        ),
        (
            r#"{"kind":"complete_action_item","item_id":2}"#,
            "item does not exist",
        ),
        (
            r#"{"kind":"complete_action_item","item_id":1}"#,
            "only the facilitator or assignee can complete it",
        ),
    ] {
        assert_eq!(refused(&mut h, &s, &c, action), want, "{action}");
    }
    let s = ok(
        &mut h,
        s,
        &a,
        r#"{"kind":"complete_action_item","item_id":1}"#,
    );
    assert_eq!(
        s.get("action_items").unwrap().as_array().unwrap()[0].get("done"),
        Some(&Value::Bool(true))
    );

    let to = |n: u8| {
        format!(
            r#"{{"kind":"transfer_facilitator","public_key":"{}"}}"#,
            key(n)
        )
    };
    assert_eq!(
        refused(&mut h, &s, &a, &to(9)),
        "public_key must identify an active member"
    );
    assert_eq!(
        refused(&mut h, &s, &b, &to(3)),
        "this action requires the meeting facilitator"
    );
    let s = ok(&mut h, s, &a, &to(3));
    assert_eq!(s.get_str("facilitator"), Some(key(3).as_str()));
    let out = h.on_leader_changed(s.clone(), "old", "new").unwrap();
    assert_eq!(
        to_string_ordered(out.get("events").unwrap()),
        format!(
            r#"[{{"kind":"network_leader_changed","old_leader":"old","new_leader":"new","facilitator":"{}"}}]"#,
            key(3)
        )
    );
    assert_eq!(out.get("state"), Some(&s));
    assert_eq!(
        refused(&mut h, &s, &a, r#"{"kind":"end_meeting"}"#),
        "this action requires the meeting facilitator"
    );
    assert_eq!(
        refused(&mut h, &s, &a, r#"{"kind":"dance"}"#),
        "unsupported meeting action"
    );
    let out = h
        .handle(s, &c, &parse_str(r#"{"kind":"end_meeting"}"#).unwrap())
        .unwrap();
    assert_eq!(
        to_string_ordered(&Value::Object({
            let mut m = out.as_object().unwrap().clone();
            m.remove("state");
            m
        })),
        r#"{"events":[{"kind":"meeting_ended"}],"completed":true,"outcome":"ended"}"#
    );
    assert_eq!(
        out.get("state").unwrap().get("ended"),
        Some(&Value::Bool(true))
    );
}

#[test]
fn broken_state_is_refused_not_panicked() {
    let mut h = room("{}");
    let a = member(1, 0);
    let kinds = [
        "add_agenda",
        "advance_agenda",
        "request_to_speak",
        "yield_speaker",
        "open_vote",
        "cast_vote",
        "close_vote",
        "add_action_item",
        "complete_action_item",
        "transfer_facilitator",
        "end_meeting",
    ];
    let states = [
        "null".to_owned(),
        "{}".to_owned(),
        format!(
            r#"{{"facilitator":"{}","members":[],"agenda":{{}},"active_agenda":"x","speaking_queue":7,"active_speaker":null,
            "vote":{{"choices":3,"ballots":[],"status":"open"}},"vote_history":null,"action_items":[1],"next_id":"n"}}"#,
            key(1)
        ),
    ];
    for state in &states {
        let state = parse_str(state).unwrap();
        for kind in kinds {
            let action = Value::Object(obj! {
                "kind" => kind, "text" => "t", "question" => "q", "choices" => vec![Value::from("a"), Value::from("b")],
                "choice" => 0, "item_id" => 1, "public_key" => key(1),
            });
            let _ = h.handle(state.clone(), &a, &action);
        }
        assert!(h.view(&state, &a).is_err());
        let _ = h.member_left(state.clone(), &a, "x");
        let _ = h.member_joined(state.clone(), &a);
    }
    assert!(h.initial_state(&[Value::Null]).is_err());
}
