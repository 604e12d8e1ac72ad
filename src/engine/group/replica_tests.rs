use super::*;
use crate::engine::group::testkit::{key, room};
use crate::json::parse_str;

/// A replica of member 1 after the bootstrap and two frames, and the
/// next frame's envelope for it.
fn setup() -> (Replica, Value, crate::engine::group::Authority) {
    let mut a = room(2);
    let pk = key(1).public_key;
    let mut r = Replica::new("g1", &pk, &key(0).public_key, 0, "Chat");
    r.apply(&a.bootstrap_envelope(&pk).unwrap().unwrap(), true)
        .unwrap();
    for n in 1..=7 {
        let (envs, _) = a
            .apply_input(
                &pk,
                n,
                &object([(
                    "say",
                    Value::from("a fairly long message to make deltas pay off"),
                )]),
            )
            .unwrap();
        if n < 7 {
            assert!(r.apply(envs.get(&pk).unwrap(), false).unwrap());
        } else {
            return (r, envs.get(&pk).unwrap().clone(), a);
        }
    }
    unreachable!()
}

fn edit(env: &Value, f: impl FnOnce(&mut Map)) -> Value {
    let mut env = env.clone();
    if let Value::Object(m) = &mut env {
        f(m);
    }
    env
}

/// Re-signs an edited envelope with the leader key (so the later
/// checks are reached).
fn resign(env: &Value) -> Value {
    edit(env, |m| {
        let core = canonical_fields(m, &CORE_FIELDS).unwrap();
        let fh = sha256_hex(core);
        m.insert("frame_hash", Value::from(fh.as_str()));
        let vh = sha256_hex(canonical_fields(m, &PRIVATE_PAYLOAD_FIELDS).unwrap());
        m.insert("view_hash", Value::from(vh.as_str()));
        let signed = format!(
            r#"{{"frame_hash":"{fh}","view_hash":"{vh}","viewer_public_key":"{}"}}"#,
            m.get_str("viewer_public_key").unwrap()
        );
        m.insert("signature", Value::from(key(0).sign(signed.as_bytes())));
    })
}

/// Edits a full-checkpoint envelope and signs it all again as the
/// leader would (frame, checkpoint certificate, view, envelope).
fn forge(env: &Value, f: impl FnOnce(&mut Map)) -> Value {
    let env = edit(env, f);
    let fh = edit(&env, |m| {
        let fh = sha256_hex(canonical_fields(m, &CORE_FIELDS).unwrap());
        m.insert("frame_hash", Value::from(fh));
    });
    let fh = fh.get_str("frame_hash").unwrap().to_owned();
    resign(&edit(&env, |m| {
        let Some(Value::Object(cp)) = m.get_mut("checkpoint") else {
            return;
        };
        cp.insert("frame_hash", Value::from(fh.as_str()));
        let members = canonical_members(cp, &SIGNED).unwrap();
        let hash = sha256_hex(compose_members(&members));
        cp.insert("checkpoint_hash", Value::from(hash.as_str()));
        if cp
            .get("checkpoint_signature")
            .is_some_and(|s| s.as_str().is_some_and(|s| s.len() == 128))
        {
            let sig = key(0).sign(core::checkpoint_certificate(cp).as_bytes());
            if cp.get_str("checkpoint_signature") != Some(key(1).sign(b"x").as_str()) {
                cp.insert("checkpoint_signature", Value::from(sig));
            }
        }
        let (h, s) = (
            cp.get("checkpoint_hash").cloned(),
            cp.get("checkpoint_signature").cloned(),
        );
        m.insert("checkpoint_hash", h.unwrap_or(Value::Null));
        m.insert("checkpoint_signature", s.unwrap_or(Value::Null));
    }))
}

#[test]
fn refusals_in_order_and_nothing_changes() {
    let (mut r, env, a) = setup();
    assert_eq!(env.get_str("view_mode"), Some("delta"));
    assert_eq!(env.get_str("checkpoint_mode"), Some("delta"));
    let full = resign(&edit(&env, |m| {
        m.insert("checkpoint_mode", Value::from("full"));
        m.insert("checkpoint", (*a.checkpoint()).clone());
        m.insert("checkpoint_delta", Value::Array(vec![]));
    }));
    assert!(r.clone().apply(&full, false).unwrap());
    let before = (
        r.seq(),
        r.frame_hash().map(str::to_owned),
        r.view().cloned(),
    );
    let err = |r: &mut Replica, e: Value, boot: bool| r.apply(&e, boot).unwrap_err().to_string();
    let cases: Vec<(Value, &str)> = vec![
        (Value::from(1), "group envelope must be an object"),
        (
            edit(&env, |m| {
                m.insert("group_id", Value::from("g2"));
            }),
            "group envelope group_id mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("leader_public_key", Value::from("x"));
            }),
            "group envelope leader mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("leader_epoch", Value::from(1));
            }),
            "group envelope epoch mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("viewer_public_key", Value::from(key(0).public_key));
            }),
            "group envelope viewer mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("wire_version", Value::from(1));
            }),
            "group envelope wire version mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("seq", Value::from(9));
            }),
            "group frame hash mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("events", Value::Array(vec![]));
            }),
            "group events hash mismatch",
        ),
        (
            edit(&env, |m| {
                m.insert("direct", Value::Array(vec![]));
            }),
            "group view hash mismatch",
        ),
        (
            edit(&env, |m| {
                m.remove("signature");
            }),
            "group envelope signature is missing",
        ),
        (
            edit(&env, |m| {
                m.insert("signature", Value::from("00".repeat(64)));
            }),
            "group envelope signature is invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("seq", Value::from(2));
            })),
            "group frame sequence moved backwards",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("seq", Value::from(9));
            })),
            "group frame sequence has a gap",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("previous_hash", Value::from("1".repeat(64)));
            })),
            "group frame hash chain mismatch",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("checkpoint_delta", Value::Null);
            })),
            "group checkpoint delta must be an array",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("checkpoint_mode", Value::from("x"));
            })),
            "group checkpoint mode is invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("checkpoint_mode", Value::from("full"));
            })),
            "full group checkpoint payload is invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("checkpoint", Value::Object(Map::new()));
            })),
            "bootstrap requires a full group checkpoint",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert(
                    "checkpoint_delta",
                    parse_str(r#"[{"op":"remove","path":["nope"]}]"#).unwrap(),
                );
            })),
            "group checkpoint delta is invalid: JSON delta remove target is invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert(
                    "checkpoint_delta",
                    parse_str(r#"[{"op":"remove","path":["outcome"]}]"#).unwrap(),
                );
            })),
            "group checkpoint state fields are invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("checkpoint_hash", Value::from("a".repeat(64)));
            })),
            "group checkpoint hash mismatch",
        ),
        (
            resign(&edit(&env, |m| {
                let old = r.checkpoint().unwrap();
                m.insert("checkpoint_mode", Value::from("full"));
                m.insert("checkpoint", (**old).clone());
                m.insert("checkpoint_delta", Value::Array(vec![]));
                m.insert(
                    "checkpoint_hash",
                    old.get("checkpoint_hash").unwrap().clone(),
                );
                m.insert(
                    "checkpoint_signature",
                    old.get("checkpoint_signature").unwrap().clone(),
                );
            })),
            "group checkpoint does not certify this frame",
        ),
        (
            forge(&full, |m| {
                m.insert("recovery_state_hash", Value::from("a".repeat(64)));
            }),
            "group recovery state hash mismatch",
        ),
        (
            forge(&full, |m| {
                let cp = m.get_mut("checkpoint").unwrap().as_object_mut().unwrap();
                cp.insert("checkpoint_signature", Value::from(key(1).sign(b"x")));
            }),
            "group checkpoint certificate is invalid",
        ),
        (
            forge(&full, |m| {
                let cp = m.get_mut("checkpoint").unwrap().as_object_mut().unwrap();
                cp.insert("checkpoint_signature", Value::from(1));
            }),
            "group checkpoint signature is missing",
        ),
        (
            forge(&full, |m| {
                let cp = m.get_mut("checkpoint").unwrap().as_object_mut().unwrap();
                cp.remove("outcome");
            }),
            // An absent outcome reads as None, as the frame's null does.
            "group checkpoint state is missing outcome",
        ),
        (
            forge(&full, |m| {
                let cp = m.get_mut("checkpoint").unwrap().as_object_mut().unwrap();
                cp.remove("last_client_seq");
            }),
            "group checkpoint state is missing last_client_seq",
        ),
        (
            forge(&full, |m| {
                let cp = m.get_mut("checkpoint").unwrap().as_object_mut().unwrap();
                cp.insert("recovery_mode", Value::Array(vec![]));
            }),
            "unhashable type: 'list'",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("view_delta", Value::from(1));
            })),
            "group view delta must be an array",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("view_mode", Value::from("x"));
            })),
            "group view mode is invalid",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("view", Value::Object(Map::new()));
            })),
            "bootstrap requires a full group view",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert(
                    "view_delta",
                    parse_str(r#"[{"op":"set","path":[],"value":1}]"#).unwrap(),
                );
            })),
            "group view delta produced a non-object",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert(
                    "view_delta",
                    parse_str(r#"[{"op":"set","path":["q",1],"value":1}]"#).unwrap(),
                );
            })),
            "group view delta is invalid: JSON delta path does not exist",
        ),
        (
            resign(&edit(&env, |m| {
                m.insert("view_state_hash", Value::from("a".repeat(64)));
            })),
            "group view state hash mismatch",
        ),
    ];
    for (bad, want) in cases {
        assert_eq!(err(&mut r, bad, false), want);
        assert_eq!(
            (
                r.seq(),
                r.frame_hash().map(str::to_owned),
                r.view().cloned()
            ),
            before
        );
    }
    // Bootstraps may not use deltas; a fresh replica needs one.
    assert_eq!(
        err(&mut r, env.clone(), true),
        "bootstrap requires a full group checkpoint"
    );
    let mut fresh = Replica::new("g1", &key(1).public_key, &key(0).public_key, 0, "Chat");
    assert_eq!(
        err(&mut fresh, env.clone(), false),
        "first group frame must be a bootstrap"
    );
    // The genuine envelope still applies, then is a harmless repeat.
    assert!(r.apply(&env, false).unwrap());
    assert!(!r.apply(&env, false).unwrap());
    let recs = r.take_records();
    assert_eq!(recs.len(), 8);
    assert_eq!(
        recs[7].details[0].get("view_mode"),
        Some(&Value::from("delta"))
    );
    assert_eq!(recs[7].event.0, "group_frame_received");
    assert_eq!(
        recs[7].checkpoint_json,
        canonical::to_vec(r.checkpoint().unwrap())
    );
    assert_eq!(
        r.advance_epoch(&key(1).public_key, 0)
            .unwrap_err()
            .to_string(),
        "new leader epoch must increase"
    );
}

#[test]
fn uppercase_hex_and_python_equalities() {
    // The reference compares the epoch with Python's ==: true is 1.
    let mut a = room(2);
    let pk = key(1).public_key;
    let mut r = Replica::new("g1", &pk, &key(0).public_key, 1, "Chat");
    let boot = a.bootstrap_envelope(&pk).unwrap().unwrap();
    let boot = resign(&edit(&boot, |m| {
        m.insert("leader_epoch", Value::Bool(true));
    }));
    // The checkpoint still says 0, which no longer certifies epoch 1.
    assert_eq!(
        r.apply(&boot, true).unwrap_err().to_string(),
        "group checkpoint does not certify this frame"
    );
}

#[test]
fn a_new_leader_from_an_older_checkpoint_is_followed_by_a_member_ahead_of_it() {
    use crate::engine::group::Authority;
    use crate::engine::group::testkit::{member, takeover};
    // The old leader framed seq N for member 2 and died before member 1
    // got it; member 1 takes over from N-1 and frames its epoch at N.
    let mut a = room(3);
    let (p1, p2) = (key(1).public_key, key(2).public_key);
    let mut r1 = Replica::new("g1", &p1, &key(0).public_key, 0, "Chat");
    let mut r2 = Replica::new("g1", &p2, &key(0).public_key, 0, "Chat");
    r1.apply(&a.bootstrap_envelope(&p1).unwrap().unwrap(), true)
        .unwrap();
    r2.apply(&a.bootstrap_envelope(&p2).unwrap().unwrap(), true)
        .unwrap();
    for n in 1..=3 {
        let (envs, _) = a
            .apply_input(&p2, n, &object([("say", Value::from("hi"))]))
            .unwrap();
        assert!(r2.apply(envs.get(&p2).unwrap(), false).unwrap());
        if n < 3 {
            assert!(r1.apply(envs.get(&p1).unwrap(), false).unwrap());
        }
    }
    let (behind, ahead) = (r1.seq().unwrap(), r2.seq().unwrap());
    assert_eq!(behind + 1, ahead);
    let cp = (**r1.checkpoint().unwrap()).clone();
    let mut b = Authority::new(takeover(1, 2, vec![member(1), member(2)], cp.clone())).unwrap();
    assert_eq!(b.seq(), ahead, "the new epoch starts at member 2's seq");
    // Taking over past a gap (what palaver's runtime does) starts beyond
    // it, where the reference's check ("seq <= current": moved backwards)
    // passes, and still chains from the checkpoint.
    let mut c =
        Authority::taking_over_past(takeover(1, 2, vec![member(1), member(2)], cp), 1000).unwrap();
    assert_eq!(c.seq(), behind + 1000 + 1);
    assert!(c.seq() > ahead);
    let start = c.last_envelopes().get(&p2).unwrap();
    assert_eq!(start.get_str("_group"), Some("epoch_start"));
    assert_eq!(start.get_str("previous_hash"), r1.frame_hash());
    let mut fresh = Replica::new("g1", &p2, &p1, 1, "Chat");
    assert!(
        fresh
            .apply(&c.bootstrap_envelope(&p2).unwrap().unwrap(), true)
            .unwrap()
    );
    let boot = b.bootstrap_envelope(&p2).unwrap().unwrap();
    // Under the old epoch it is not even the leader's.
    assert!(r2.clone().apply(&boot, true).is_err());
    r2.advance_epoch(&p1, 1).unwrap();
    assert!(r2.apply(&boot, true).unwrap(), "the new epoch's frame wins");
    assert_eq!(r2.seq(), Some(ahead));
    assert_eq!(r2.frame_hash(), boot.get_str("frame_hash"));
    // Then the chain goes on as usual, and moving back is refused again.
    let (envs, _) = b
        .apply_input(&p2, 3, &object([("say", Value::from("again"))]))
        .unwrap();
    assert!(r2.apply(envs.get(&p2).unwrap(), false).unwrap());
    assert_eq!(
        r2.apply(&boot, true).unwrap_err().to_string(),
        "group frame sequence moved backwards"
    );
}
