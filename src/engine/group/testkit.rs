//! Test fixtures shared by the group's tests: a small chat room and its
//! members' keys (the authority's and the replica's tests both build rooms).

use super::core::{GroupConfig, object};
use super::hooks::{GroupHooks, result};
use super::{Authority, AuthorityInit};
use crate::identity::KeyPair;
use crate::json::{Value, parse_str};

/// A small room for tests: `{"say": text}` appends to a bounded log,
/// `{"fail": text}` is refused, `{"end": true}` completes the room;
/// each member sees the log and its own seat.
pub struct Chat;

impl GroupHooks for Chat {
    fn initial_state(&mut self, members: &[Value]) -> std::result::Result<Value, String> {
        Ok(object([
            ("log", Value::Array(Vec::new())),
            ("n", Value::from(members.len())),
        ]))
    }

    fn handle(
        &mut self,
        mut state: Value,
        actor: &Value,
        action: &Value,
    ) -> std::result::Result<Value, String> {
        if let Some(reason) = action.get_str("fail") {
            return Err(reason.to_owned());
        }
        if action.get("end").is_some() {
            let mut r = result(state, vec![]);
            if let Value::Object(m) = &mut r {
                m.insert("completed", Value::Bool(true));
                m.insert("outcome", Value::from("ended"));
            }
            return Ok(r);
        }
        if action.get("bad").is_some() {
            return Ok(Value::from(1));
        }
        let text = action.get_str("say").unwrap_or_default().to_owned();
        let seat = actor.get("seat").cloned().unwrap_or(Value::Null);
        let entry = object([("seat", seat.clone()), ("text", Value::from(text.as_str()))]);
        if let Some(Value::Array(log)) = state.as_object_mut().and_then(|m| m.get_mut("log")) {
            log.push(entry.clone());
            if log.len() > 30 {
                log.remove(0);
            }
        }
        let mut r = result(
            state,
            vec![object([("kind", Value::from("said")), ("entry", entry)])],
        );
        if let Value::Object(m) = &mut r {
            let pk = actor.get_str("public_key").unwrap_or_default();
            m.insert(
                "direct",
                object([(pk, Value::Array(vec![Value::from("echo")]))]),
            );
        }
        Ok(r)
    }

    fn view(&mut self, state: &Value, viewer: &Value) -> std::result::Result<Value, String> {
        Ok(object([
            ("log", state.get("log").cloned().unwrap_or(Value::Null)),
            ("me", viewer.get("seat").cloned().unwrap_or(Value::Null)),
        ]))
    }
}

pub fn key(i: u8) -> KeyPair {
    KeyPair::from_seed([i + 1; 32])
}

pub fn member(i: u8) -> Value {
    object([
        ("public_key", Value::from(key(i).public_key)),
        ("seat", Value::from(u32::from(i))),
        ("member_id", Value::from(format!("m{i}"))),
    ])
}

pub fn config() -> GroupConfig {
    GroupConfig::from_value(
        &parse_str(
            r#"{"flow":{"group":{"min_participants":2,"max_participants":8,"allow_late_join":true,
            "recovery_mode":"exact","start_policy":"min_ready","checkpoint_every_events":5,
            "max_action_bytes":1024,"max_events_per_action":4}}}"#,
        )
        .unwrap(),
    )
    .unwrap()
}

pub fn room(n: u8) -> Authority {
    Authority::new(AuthorityInit {
        config: config(),
        hooks: Box::new(Chat),
        protocol_name: "Chat".into(),
        group_id: "g1".into(),
        keys: key(0),
        leader_epoch: 0,
        membership_version: 1,
        members: (0..n).map(member).collect(),
        checkpoint: None,
    })
    .unwrap()
}

/// What member `leader` needs to lead the chat room "g1" at epoch 1 from
/// `checkpoint`, seating `members` (of membership version `version`).
pub fn takeover(leader: u8, version: u64, members: Vec<Value>, checkpoint: Value) -> AuthorityInit {
    AuthorityInit {
        config: config(),
        hooks: Box::new(Chat),
        protocol_name: "Chat".into(),
        group_id: "g1".into(),
        keys: key(leader),
        leader_epoch: 1,
        membership_version: version,
        members,
        checkpoint: Some(checkpoint),
    }
}
