use super::*;
use crate::engine::group::core::{CHECKPOINT_STATE_FIELDS_SORTED, MAX_CHECKPOINT_HISTORY, object};
use crate::engine::group::delta::{make_delta_exact, make_fields_delta_exact};
use crate::engine::group::hooks::GroupHooks;
use crate::engine::group::hooks::result;
use crate::engine::group::replica::Replica;
use crate::engine::group::testkit::{config, key, member, room, takeover};
use crate::json::canonical::{self};
use crate::json::parse_str;
use crate::json::{Map, Value};
use std::sync::Arc;

fn replicas(a: &mut Authority, n: u8) -> Vec<Replica> {
    (0..n)
        .map(|i| {
            let mut r = Replica::new(
                "g1",
                &key(i).public_key,
                &a.keys.public_key,
                a.leader_epoch,
                "Chat",
            );
            let boot = a.bootstrap_envelope(&key(i).public_key).unwrap().unwrap();
            assert!(r.apply(&boot, true).unwrap());
            r
        })
        .collect()
}

fn say(a: &mut Authority, who: u8, seq: i64, text: &str) -> Envelopes {
    let action = object([("say", Value::from(text))]);
    let (envs, receipt) = a.apply_input(&key(who).public_key, seq, &action).unwrap();
    assert_eq!(receipt.get_str("status"), Some("accepted"));
    envs
}

#[test]
fn frames_verify_and_use_deltas() {
    let mut a = room(3);
    assert_eq!(a.seq(), 0);
    let mut reps = replicas(&mut a, 3);
    assert_eq!(a.take_records().len(), 1);
    let mut modes = std::collections::BTreeSet::new();
    for n in 1..=40 {
        let envs = say(
            &mut a,
            ((n - 1) % 3) as u8,
            i64::from((n - 1) / 3 + 1),
            &if n % 13 == 0 {
                "long ".repeat(190)
            } else {
                format!("message {n} with some padding text")
            },
        );
        for (i, r) in reps.iter_mut().enumerate() {
            let env = envs.get(&key(i as u8).public_key).unwrap();
            let mode = |k: &str| env.get_str(k).unwrap().to_owned();
            modes.insert((mode("view_mode"), mode("checkpoint_mode")));
            // A view delta exactly when it saves more than 96 bytes; a
            // checkpoint delta when it saves more than 256.
            let view = a.view(&key(i as u8).public_key).unwrap();
            let view_delta = make_delta_exact(r.view().unwrap(), view);
            let saves = canonical::to_vec(&Value::Array(view_delta)).len() + 96
                < canonical::to_vec(view).len();
            assert_eq!(mode("view_mode") == "delta", saves, "frame {n}");
            if n % 5 != 0 {
                let (Some(Value::Object(prev)), Value::Object(cur)) =
                    (r.checkpoint().map(|c| &**c), &*a.checkpoint())
                else {
                    panic!("checkpoints")
                };
                let ops =
                    make_fields_delta_exact(prev, cur, &CHECKPOINT_STATE_FIELDS_SORTED, || {
                        Value::Null
                    });
                let saves = canonical::to_vec(&Value::Array(ops)).len() + 256
                    < canonical::to_vec(&a.checkpoint()).len();
                assert_eq!(mode("checkpoint_mode") == "delta", saves, "frame {n}");
            }
            assert!(r.apply(env, false).unwrap(), "frame {n}");
            assert_eq!(r.view(), a.view(&key(i as u8).public_key));
        }
        // Every 5th frame carries a full checkpoint.
        let env = envs.values().next().unwrap();
        if n % 5 == 0 {
            assert_eq!(env.get_str("checkpoint_mode"), Some("full"));
        }
        let recs = a.take_records();
        assert_eq!(recs.len(), 1);
        for rec in recs {
            assert_eq!(rec.checkpoint_json, canonical::to_vec(&rec.checkpoint));
            let max = envs.values().map(canonical::canonical_len).max().unwrap();
            assert_eq!(
                rec.details[1].get("max_envelope_bytes"),
                Some(&Value::from(max))
            );
        }
    }
    assert!(
        modes.contains(&("delta".into(), "delta".into())),
        "{modes:?}"
    );
    assert!(
        modes.contains(&("delta".into(), "full".into())),
        "{modes:?}"
    );
    assert!(
        modes.contains(&("full".into(), "delta".into())),
        "{modes:?}"
    );
    assert_eq!(a.seq(), 40);
    assert_eq!(reps[0].seq(), Some(40));
    assert_eq!(reps[0].checkpoint().map(|c| &**c), Some(&*a.checkpoint()));
}

#[test]
fn duplicates_gaps_and_refusals_change_nothing() {
    let mut a = room(2);
    let envs = say(&mut a, 1, 1, "hi");
    let (again, receipt) = a
        .apply_input(&key(1).public_key, 1, &object([("say", Value::from("x"))]))
        .unwrap();
    assert_eq!(receipt.get_str("status"), Some("duplicate"));
    assert!(Arc::ptr_eq(&again, &envs));
    let err = |a: &mut Authority, who: u8, seq: i64, action: &str| {
        a.apply_input(&key(who).public_key, seq, &parse_str(action).unwrap())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(err(&mut a, 1, 3, "{}"), "client_seq gap: expected 2, got 3");
    assert_eq!(
        err(&mut a, 1, 0, "{}"),
        "client_seq must be a positive integer"
    );
    assert_eq!(
        err(&mut a, 5, 1, "{}"),
        "actor is not an active group member"
    );
    assert_eq!(err(&mut a, 1, 2, "[]"), "group action must be an object");
    assert_eq!(
        err(&mut a, 1, 2, r#"{"x":1.5}"#),
        "floating-point values are not allowed in group state"
    );
    let long = format!(r#"{{"say":"{}"}}"#, "x".repeat(1100));
    assert_eq!(
        err(&mut a, 1, 2, &long),
        "group action exceeds max_action_bytes"
    );
    let before = (a.seq(), a.previous_hash().to_owned(), a.state().clone());
    let e = a
        .apply_input(
            &key(1).public_key,
            2,
            &parse_str(r#"{"fail":"no way"}"#).unwrap(),
        )
        .unwrap_err();
    assert!(e.is_hook() && e.is_refusal());
    assert_eq!(e.reason(), "no way");
    assert_eq!(
        err(&mut a, 1, 2, r#"{"bad":1}"#),
        "group hook result must be an object"
    );
    assert_eq!(
        (a.seq(), a.previous_hash().to_owned(), a.state().clone()),
        before
    );
    assert_eq!(a.last_client_seq(&key(1).public_key), 1);
    // The refused number is still free.
    say(&mut a, 1, 2, "again");
    let (_, receipt) = a
        .apply_input(
            &key(0).public_key,
            1,
            &parse_str(r#"{"end":true}"#).unwrap(),
        )
        .unwrap();
    assert_eq!(receipt.get("completed"), Some(&Value::Bool(true)));
    assert_eq!(a.outcome(), Some("ended"));
    assert_eq!(err(&mut a, 1, 3, "{}"), "group is already completed");
}

#[test]
fn membership_acknowledgements_and_takeover() {
    let mut a = room(2);
    let mut reps = replicas(&mut a, 2);
    for n in 1..=3 {
        let envs = say(&mut a, 1, n, "x");
        for (i, r) in reps.iter_mut().enumerate() {
            r.apply(envs.get(&key(i as u8).public_key).unwrap(), false)
                .unwrap();
        }
    }
    let envs = a.add_member(&member(2), 2).unwrap();
    assert_eq!(envs.len(), 3);
    assert_eq!(
        envs.values().next().unwrap().get_str("_group"),
        Some("membership")
    );
    assert_eq!(
        a.add_member(
            &member(3)
                .as_object()
                .map(|m| {
                    let mut m = m.clone();
                    m.insert("seat", Value::from(1));
                    Value::Object(m)
                })
                .unwrap(),
            3
        )
        .unwrap_err()
        .to_string(),
        "member seat is already occupied"
    );
    for (i, r) in reps.iter_mut().enumerate() {
        r.apply(envs.get(&key(i as u8).public_key).unwrap(), false)
            .unwrap();
    }
    let cp = reps[1].checkpoint().unwrap().clone();
    let seq = reps[1].seq().unwrap();
    let fh = reps[1].frame_hash().unwrap().to_owned();
    assert!(
        !a.acknowledge(&key(0).public_key, seq, &fh, None),
        "the leader never counts"
    );
    assert!(!a.acknowledge(&key(1).public_key, seq, "0", None));
    assert!(a.acknowledge(&key(1).public_key, seq, &fh, cp.get_str("checkpoint_hash")));
    assert!(!a.acknowledge(&key(1).public_key, seq - 1, "x", None));
    assert_eq!(a.replicated_checkpoint().as_deref(), Some(&*cp));
    let envs = a.remove_member(&key(0).public_key, 4, "left").unwrap();
    assert_eq!(envs.len(), 2);
    assert_eq!(
        a.remove_member(&key(7).public_key, 4, "x")
            .unwrap_err()
            .to_string(),
        "unknown group member"
    );

    // Member 1 takes over from the acknowledged checkpoint.
    let mut b = Authority::new(takeover(1, 5, vec![member(1), member(2)], (*cp).clone())).unwrap();
    assert_eq!(b.seq(), seq + 1);
    let envs = b.bootstrap_envelopes().unwrap();
    let env = envs.get(&key(1).public_key).unwrap();
    assert_eq!(env.get_str("_group"), Some("epoch_start"));
    assert_eq!(env.get_str("previous_hash"), Some(fh.as_str()));
    reps[1].advance_epoch(&key(1).public_key, 1).unwrap();
    // The frame built at takeover chains from the checkpoint.
    let epoch_start = b.last_envelopes().get(&key(1).public_key).unwrap().clone();
    assert!(reps[1].apply(&epoch_start, false).unwrap());
    // A checkpoint of another group, or a forged one, is refused.
    let init = |cp: Value| takeover(1, 5, vec![member(1)], cp);
    let mut forged = (*cp).clone();
    forged
        .as_object_mut()
        .unwrap()
        .insert("seq", Value::from(99));
    assert_eq!(
        Authority::new(init(forged)).unwrap_err().to_string(),
        "checkpoint hash mismatch"
    );
    let mut unsigned = (*cp).clone();
    unsigned
        .as_object_mut()
        .unwrap()
        .remove("checkpoint_signature");
    assert_eq!(
        Authority::new(init(unsigned)).unwrap_err().to_string(),
        "checkpoint signature is missing"
    );
}

/// State, view and events nested `d`/`e` levels deep, as in an
/// experiment with the reference (its outcomes are the expectations).
struct Deep(usize);

fn nested(k: usize) -> Value {
    (0..k).fold(Value::from(1), |v, _| Value::Array(vec![v]))
}

impl GroupHooks for Deep {
    fn initial_state(&mut self, _: &[Value]) -> std::result::Result<Value, String> {
        Ok(object([("deep", Value::from(0))]))
    }

    fn handle(
        &mut self,
        mut state: Value,
        _: &Value,
        action: &Value,
    ) -> std::result::Result<Value, String> {
        let d = action.get("d").and_then(Value::as_i64).unwrap_or(0) as usize;
        if let Value::Object(m) = &mut state {
            m.insert("deep", nested(d));
        }
        let events = match action.get("e").and_then(Value::as_i64) {
            Some(e) => vec![nested(e as usize)],
            None => vec![],
        };
        Ok(result(state, events))
    }

    fn view(&mut self, state: &Value, _: &Value) -> std::result::Result<Value, String> {
        Ok(object([
            ("deep", state.get("deep").cloned().unwrap_or(Value::Null)),
            ("pad", Value::from("x".repeat(self.0))),
        ]))
    }
}

#[test]
fn nesting_limits_inside_envelopes_match_the_reference() {
    for pad in [0, 3000] {
        for d in 9..17i64 {
            for e in [None, Some(14i64), Some(15)] {
                let mut a = Authority::new(AuthorityInit {
                    config: config(),
                    hooks: Box::new(Deep(pad)),
                    protocol_name: "Deep".into(),
                    group_id: "g".into(),
                    keys: key(0),
                    leader_epoch: 0,
                    membership_version: 1,
                    members: vec![member(0), member(1)],
                    checkpoint: None,
                })
                .unwrap();
                let mut action = Map::new();
                action.insert("d", Value::from(d));
                if let Some(e) = e {
                    action.insert("e", Value::from(e));
                }
                let got = a.apply_input(&key(0).public_key, 1, &Value::Object(action));
                let case = format!("pad {pad}, d {d}, e {e:?}");
                if d <= 13 && e != Some(15) {
                    let (envs, _) = got.unwrap_or_else(|err| panic!("{case}: {err}"));
                    let env = envs.values().next().unwrap();
                    let want = if pad == 0 { "full" } else { "delta" };
                    assert_eq!(env.get_str("view_mode"), Some(want), "{case}");
                    assert_eq!(env.get_str("checkpoint_mode"), Some("delta"), "{case}");
                } else {
                    assert_eq!(
                        got.unwrap_err().to_string(),
                        "JSON nesting exceeds the group protocol limit",
                        "{case}"
                    );
                    assert_eq!(a.seq(), 0, "{case}: nothing changed");
                }
            }
        }
    }
}

#[test]
fn history_is_bounded() {
    let mut a = room(2);
    for n in 1..=300 {
        say(&mut a, 1, n, "m");
    }
    assert_eq!(a.history.len(), MAX_CHECKPOINT_HISTORY);
    assert_eq!(a.history.keys().next(), Some(&(300 - 255)));
    assert!(!a.acknowledge(&key(1).public_key, 10, "x", None));
}
