//! community-room-v1: one shared chat timeline in a global order.
//!
//! State, in this key order: `topic`, `messages` (chat and system lines
//! `{id, kind, from, seat, text}`), `next_message_id`, `history_limit` (as
//! configured; the timeline keeps the newest `clamp(history_limit, 20,
//! 500)` lines), `presence` (public key → `{seat, status}`, status
//! `online` or `left`), `closed`.
//!
//! Actions (`kind`): `send {text}` (1-2000 bytes after trimming), any
//! member; `set_topic {topic}` (1-200 bytes), any member; `close_room`,
//! seat 0 only, which completes the room with outcome `closed`. Joins,
//! departures and a change of leader add a system line (seat -1, empty
//! `from`). Nothing is private: the view is the state minus the counters,
//! plus `you`, and a checkpoint is the state itself. As in the reference,
//! a closed room still takes messages and seat 0 may close it again.

use super::{
    Hooked, bounded_text, completed_result, dict_mut, field, first_chars, int_option, item,
    list_mut, member_key, py_int, saturate, set_item, state_map, take_counter, title_option,
};
use crate::engine::HostMetadata;
use crate::engine::group::GroupHooks;
use crate::engine::group::hooks::result;
use crate::json::{Map, Value};
use crate::obj;

const DEFAULT_TOPIC: &str = "Community room";
const DEFAULT_HISTORY: i64 = 200;
/// The bounds trimming applies to `history_limit`.
const HISTORY_MIN: i64 = 20;
const HISTORY_MAX: i64 = 500;
/// UTF-8 byte limits of a message and of the topic.
const TEXT_LIMIT: usize = 2000;
const TOPIC_LIMIT: usize = 200;

/// `proto_host_metadata` of community-room-v1.
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        display_name: "Community Room".into(),
        tags: "chat,multiplayer,community-room".into(),
        invite_type: "chat".into(),
        default_options: obj! {
            "history_limit" => DEFAULT_HISTORY, "initial_topic" => DEFAULT_TOPIC,
        },
    }
}

/// The rules of community-room-v1.
#[derive(Debug, Clone, Default)]
pub struct CommunityRoom {
    options: Map,
}

impl CommunityRoom {
    pub fn new(options: &Map) -> Self {
        Self {
            options: options.clone(),
        }
    }
}

/// Appends a system line to the timeline.
fn system_line(state: &mut Map, text: String) -> Hooked<()> {
    let id = take_counter(state, "next_message_id")?;
    let line = obj! { "id" => id, "kind" => "system", "from" => "", "seat" => -1, "text" => text };
    list_mut(state, "messages")?.push(Value::Object(line));
    trim(state)
}

/// Drops the oldest lines beyond the clamped history limit.
fn trim(state: &mut Map) -> Hooked<()> {
    let limit = saturate(&py_int(field(state, "history_limit")?)?).clamp(HISTORY_MIN, HISTORY_MAX);
    let limit = usize::try_from(limit).unwrap_or(HISTORY_MAX as usize);
    let messages = list_mut(state, "messages")?;
    if messages.len() > limit {
        let excess = messages.len() - limit;
        messages.drain(..excess);
    }
    Ok(())
}

/// A seat as Python's f-string would print it.
fn seat_text(member: &Value) -> Hooked<String> {
    Ok(item(member, "seat")?.py_str())
}

impl GroupHooks for CommunityRoom {
    fn initial_state(&mut self, members: &[Value]) -> Hooked<Value> {
        let topic = title_option(&self.options, "initial_topic", DEFAULT_TOPIC);
        let history_limit = int_option(&self.options, "history_limit", DEFAULT_HISTORY)?;
        let mut presence = Map::new();
        for member in members {
            let key = member_key(member)?;
            let seat = item(member, "seat")?.clone();
            presence.insert(
                key,
                Value::Object(obj! { "seat" => seat, "status" => "online" }),
            );
        }
        Ok(Value::Object(obj! {
            "topic" => topic,
            "messages" => Vec::new(),
            "next_message_id" => 1,
            "history_limit" => history_limit,
            "presence" => presence,
            "closed" => false,
        }))
    }

    fn member_joined(&mut self, state: Value, member: &Value) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let key = member_key(member)?;
        let seat = item(member, "seat")?.clone();
        dict_mut(&mut state, "presence")?.insert(
            key.clone(),
            Value::Object(obj! { "seat" => seat.clone(), "status" => "online" }),
        );
        let event = obj! { "kind" => "member_joined", "public_key" => key, "seat" => seat };
        system_line(
            &mut state,
            format!("Seat {} joined the room", seat_text(member)?),
        )?;
        Ok(result(Value::Object(state), vec![Value::Object(event)]))
    }

    fn member_left(&mut self, state: Value, member: &Value, reason: &str) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let key = member_key(member)?;
        let seat = item(member, "seat")?.clone();
        let presence = dict_mut(&mut state, "presence")?;
        if !presence.contains_key(&key) {
            presence.insert(key.clone(), Value::Object(obj! { "seat" => seat.clone() }));
        }
        if let Some(entry) = presence.get_mut(&key) {
            set_item(entry, "status", Value::from("left"))?;
        }
        system_line(
            &mut state,
            format!("Seat {} left the room", seat_text(member)?),
        )?;
        let event = obj! {
            "kind" => "member_left", "public_key" => key, "seat" => seat, "reason" => reason,
        };
        Ok(result(Value::Object(state), vec![Value::Object(event)]))
    }

    fn handle(&mut self, state: Value, actor: &Value, action: &Value) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let action = super::action_map(action)?;
        match action.get("kind").and_then(Value::as_str) {
            Some("send") => {
                let text = bounded_text(action.get("text"), TEXT_LIMIT, "text")?;
                let id = field(&state, "next_message_id")?.clone();
                let message = Value::Object(obj! {
                    "id" => id,
                    "kind" => "message",
                    "from" => item(actor, "public_key")?,
                    "seat" => item(actor, "seat")?,
                    "text" => text,
                });
                take_counter(&mut state, "next_message_id")?;
                list_mut(&mut state, "messages")?.push(message.clone());
                trim(&mut state)?;
                let event = obj! { "kind" => "message", "message" => message };
                Ok(result(Value::Object(state), vec![Value::Object(event)]))
            }
            Some("set_topic") => {
                let topic = bounded_text(action.get("topic"), TOPIC_LIMIT, "topic")?;
                state.insert("topic", Value::from(topic.clone()));
                let seat = item(actor, "seat")?.clone();
                system_line(
                    &mut state,
                    format!("Seat {} changed the topic", seat.py_str()),
                )?;
                let event = obj! { "kind" => "topic_changed", "topic" => topic, "seat" => seat };
                Ok(result(Value::Object(state), vec![Value::Object(event)]))
            }
            Some("close_room") => {
                let seat = item(actor, "seat")?.clone();
                if !seat.py_eq(&Value::from(0)) {
                    return Err("only the room owner at seat 0 can close the room".into());
                }
                state.insert("closed", Value::Bool(true));
                system_line(&mut state, "The room was closed".into())?;
                let event = obj! { "kind" => "room_closed", "seat" => seat };
                Ok(completed_result(
                    state,
                    vec![Value::Object(event)],
                    "closed",
                ))
            }
            _ => Err("kind must be send, set_topic, or close_room".into()),
        }
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> Hooked<Value> {
        Ok(Value::Object(obj! {
            "topic" => item(state, "topic")?,
            "messages" => item(state, "messages")?,
            "presence" => item(state, "presence")?,
            "closed" => item(state, "closed")?,
            "you" => obj! {
                "public_key" => item(viewer, "public_key")?,
                "seat" => item(viewer, "seat")?,
            },
        }))
    }

    // recovery_snapshot and restore: the trait's defaults (the whole state
    // is the recovery state), as the reference's room hooks have them.

    fn on_leader_changed(
        &mut self,
        state: Value,
        old_leader: &str,
        new_leader: &str,
    ) -> Hooked<Value> {
        let mut state = state_map(state)?;
        let notice = format!(
            "Authority moved from {} to {}",
            first_chars(old_leader, 8),
            first_chars(new_leader, 8)
        );
        system_line(&mut state, notice)?;
        let event = obj! {
            "kind" => "leader_changed", "old_leader" => old_leader, "new_leader" => new_leader,
        };
        Ok(result(Value::Object(state), vec![Value::Object(event)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::canonical::to_string_ordered;
    use crate::json::parse_str;

    fn member(n: u8, seat: i64) -> Value {
        Value::Object(obj! {
            "member_id" => format!("m{n}"), "public_key" => format!("{n:02x}").repeat(32),
            "seat" => seat, "status" => "active",
        })
    }

    fn key(n: u8) -> String {
        format!("{n:02x}").repeat(32)
    }

    fn room(options: &str) -> CommunityRoom {
        let options = parse_str(options).unwrap();
        CommunityRoom::new(options.as_object().unwrap())
    }

    fn act(
        h: &mut CommunityRoom,
        state: &Value,
        actor: &Value,
        action: &str,
    ) -> Result<Value, String> {
        h.handle(state.clone(), actor, &parse_str(action).unwrap())
    }

    fn state_of(result: &Value) -> Value {
        result.get("state").cloned().unwrap()
    }

    #[test]
    fn initial_state_shape_and_order() {
        let mut h = room(r#"{"history_limit": 30, "initial_topic": " Hi "}"#);
        let s = h.initial_state(&[member(2, 1), member(1, 0)]).unwrap();
        assert_eq!(
            to_string_ordered(&s),
            format!(
                r#"{{"topic":" Hi ","messages":[],"next_message_id":1,"history_limit":30,"presence":{{"{}":{{"seat":1,"status":"online"}},"{}":{{"seat":0,"status":"online"}}}},"closed":false}}"#,
                key(2),
                key(1)
            )
        );
        let s = room("{}").initial_state(&[]).unwrap();
        assert_eq!(s.get_str("topic"), Some("Community room"));
        assert_eq!(s.get("history_limit"), Some(&Value::from(200)));
        let err = room(r#"{"history_limit": "lots"}"#)
            .initial_state(&[])
            .unwrap_err();
        assert_eq!(err, "invalid literal for int() with base 10: 'lots'");
    }

    #[test]
    fn send_topic_and_refusals() {
        let mut h = room("{}");
        let (a, b) = (member(1, 0), member(2, 1));
        let s = h.initial_state(&[a.clone(), b.clone()]).unwrap();
        let out = act(&mut h, &s, &b, r#"{"kind":"send","text":"  hi  "}"#).unwrap();
        assert_eq!(
            to_string_ordered(out.get("events").unwrap()),
            format!(
                r#"[{{"kind":"message","message":{{"id":1,"kind":"message","from":"{}","seat":1,"text":"hi"}}}}]"#,
                key(2)
            )
        );
        let s = state_of(&out);
        assert_eq!(s.get("next_message_id"), Some(&Value::from(2)));
        let out = act(&mut h, &s, &b, r#"{"kind":"set_topic","topic":"Plans"}"#).unwrap();
        let s = state_of(&out);
        assert_eq!(s.get_str("topic"), Some("Plans"));
        let last = s
            .get("messages")
            .unwrap()
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(
            to_string_ordered(&last),
            r#"{"id":2,"kind":"system","from":"","seat":-1,"text":"Seat 1 changed the topic"}"#
        );
        let refusals = [
            (r#"{"kind":"send","text":7}"#, "text must be text"),
            (r#"{"kind":"send"}"#, "text must be text"),
            (
                r#"{"kind":"send","text":" \u3000 "}"#,
                "text must be 1-2000 UTF-8 bytes",
            ),
            (r#"{"kind":"set_topic","topic":null}"#, "topic must be text"),
            (
                r#"{"kind":"set_topic","topic":""}"#,
                "topic must be 1-200 UTF-8 bytes",
            ),
            (
                r#"{"kind":"close_room"}"#,
                "only the room owner at seat 0 can close the room",
            ),
            (
                r#"{"kind":"shout"}"#,
                "kind must be send, set_topic, or close_room",
            ),
            (r#"{}"#, "kind must be send, set_topic, or close_room"),
        ];
        for (action, want) in refusals {
            assert_eq!(
                act(&mut h, &s, &b, action),
                Err(want.to_owned()),
                "{action}"
            );
        }
        let long = Value::Object(obj! { "kind" => "send", "text" => "é".repeat(1001) });
        assert_eq!(
            h.handle(s.clone(), &b, &long),
            Err("text must be 1-2000 UTF-8 bytes".into())
        );
        assert_eq!(
            h.handle(s.clone(), &b, &Value::from("send")),
            Err("'str' object has no attribute 'get'".into())
        );
        let out = act(&mut h, &s, &a, r#"{"kind":"close_room"}"#).unwrap();
        assert_eq!(out.get("completed"), Some(&Value::Bool(true)));
        assert_eq!(out.get_str("outcome"), Some("closed"));
        assert_eq!(state_of(&out).get("closed"), Some(&Value::Bool(true)));
        let keys: Vec<&str> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["state", "events", "completed", "outcome"]);
    }

    #[test]
    fn history_is_trimmed_to_the_clamped_limit() {
        for (limit, kept) in [("5", 20), ("25", 25), ("10000", 500), ("true", 20)] {
            let mut h = room(&format!(r#"{{"history_limit": {limit}}}"#));
            let b = member(2, 1);
            let mut s = h.initial_state(std::slice::from_ref(&b)).unwrap();
            for i in 0..520 {
                let action = Value::Object(obj! { "kind" => "send", "text" => format!("m{i}") });
                s = state_of(&h.handle(s, &b, &action).unwrap());
            }
            let messages = s.get("messages").unwrap().as_array().unwrap();
            assert_eq!(messages.len(), kept, "{limit}");
            assert_eq!(messages.last().unwrap().get("id"), Some(&Value::from(520)));
            assert_eq!(messages[0].get("id"), Some(&Value::from(521 - kept as i64)));
        }
    }

    #[test]
    fn membership_view_and_failover() {
        let mut h = room("{}");
        let (a, b, c) = (member(1, 0), member(2, 1), member(3, 2));
        let s = h.initial_state(&[a.clone(), b.clone()]).unwrap();
        let s = state_of(&h.member_joined(s, &c).unwrap());
        let out = h.member_left(s, &b, "timeout").unwrap();
        assert_eq!(
            to_string_ordered(out.get("events").unwrap()),
            format!(
                r#"[{{"kind":"member_left","public_key":"{}","seat":1,"reason":"timeout"}}]"#,
                key(2)
            )
        );
        // A member the room never saw still gets a presence entry.
        let s = state_of(&h.member_left(state_of(&out), &member(9, 9), "x").unwrap());
        let presence = s.get("presence").unwrap().as_object().unwrap();
        assert_eq!(
            to_string_ordered(presence.get(&key(9)).unwrap()),
            r#"{"seat":9,"status":"left"}"#
        );
        assert_eq!(
            to_string_ordered(presence.get(&key(2)).unwrap()),
            r#"{"seat":1,"status":"left"}"#
        );
        let texts: Vec<&str> = s
            .get("messages")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m.get_str("text"))
            .collect();
        assert_eq!(
            texts,
            [
                "Seat 2 joined the room",
                "Seat 1 left the room",
                "Seat 9 left the room"
            ]
        );

        let view = h.view(&s, &c).unwrap();
        let keys: Vec<&str> = view.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["topic", "messages", "presence", "closed", "you"]);
        assert_eq!(
            to_string_ordered(view.get("you").unwrap()),
            format!(r#"{{"public_key":"{}","seat":2}}"#, key(3))
        );

        let snap = h.recovery_snapshot(&s).unwrap();
        assert_eq!(snap, s);
        let restored = h.restore(snap, std::slice::from_ref(&a), 3).unwrap();
        let out = h.on_leader_changed(restored, &key(1), "abc").unwrap();
        let s = state_of(&out);
        let last = s
            .get("messages")
            .unwrap()
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(
            last.get_str("text"),
            Some("Authority moved from 01010101 to abc")
        );
        assert_eq!(
            to_string_ordered(out.get("events").unwrap()),
            format!(
                r#"[{{"kind":"leader_changed","old_leader":"{}","new_leader":"abc"}}]"#,
                key(1)
            )
        );
    }

    #[test]
    fn broken_state_is_refused_not_panicked() {
        let mut h = room("{}");
        let a = member(1, 0);
        for state in [
            "null",
            "[]",
            "{}",
            r#"{"messages":5,"next_message_id":"x","history_limit":null}"#,
        ] {
            let state = parse_str(state).unwrap();
            assert!(act(&mut h, &state, &a, r#"{"kind":"send","text":"x"}"#).is_err());
            assert!(h.member_joined(state.clone(), &a).is_err());
            assert!(h.on_leader_changed(state.clone(), "a", "b").is_err());
            assert!(h.view(&state, &a).is_err());
        }
        assert!(h.initial_state(&[Value::from(3)]).is_err());
        assert!(h.member_joined(Value::Null, &Value::Null).is_err());
    }
}
