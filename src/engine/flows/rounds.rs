//! The round flows after the opening: `simultaneous_round` (commit-reveal
//! rounds), `request_response` (the host asks, the guest answers) and
//! `free` (chat lines both ways until one side ends).

use super::*;
use crate::engine::evidence_log::{COMMIT_REVEAL_FILE, EvidenceLog};

/// `spec.flow.round.value_field`, default `value`.
fn value_field(spec: &Spec) -> String {
    spec.get("flow")
        .and_then(|f| f.get("round"))
        .and_then(|r| r.get("value_field"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("value")
        .to_owned()
}

/// Result fields the shadow judge compares (the reference's list).
const SHADOW_FIELDS: [&str; 15] = [
    "host_hp",
    "guest_hp",
    "host_mana",
    "guest_mana",
    "host_damage_dealt",
    "guest_damage_dealt",
    "host_cd_a",
    "host_cd_b",
    "host_cd_ult",
    "guest_cd_a",
    "guest_cd_b",
    "guest_cd_ult",
    "round_winner",
    "game_over",
    "game_winner",
];

/// One side's opening of a round: its commit hash, the value it revealed
/// and the nonce (as the hash took it).
fn opening(hash: &str, value: &Value, nonce: &str) -> Value {
    Value::Object(obj([
        ("hash", hash.into()),
        ("value", value.clone()),
        ("nonce", nonce.into()),
    ]))
}

/// The hash a commit frame carries, as [`opened`] compared it.
fn committed(frame: &Map) -> String {
    frame.get("hash").map(Value::py_str).unwrap_or_default()
}

/// The nonce a reveal frame carries, as [`opened`] hashed it.
fn revealed_nonce(frame: &Map) -> String {
    frame.get("nonce").map(Value::py_str).unwrap_or_default()
}

/// Appends round `r`'s verified openings (and its result frame, when the
/// host sent one) to the commit-reveal log; a log that cannot be written
/// is reported once and the session goes on.
fn record_round(
    ctx: &Ctx,
    log: &mut EvidenceLog,
    r: u64,
    field: &str,
    host: Value,
    guest: Value,
    result: Option<&Map>,
) {
    let mut line = obj([
        ("round", Value::from(r as i64)),
        ("role", ctx.role.as_str().into()),
        ("value_field", field.into()),
        ("host", host),
        ("guest", guest),
    ]);
    if let Some(result) = result {
        line.insert("result", Value::Object(result.clone()));
    }
    log.append(&line);
    if let Some(error) = log.take_error() {
        ctx.emit(
            "evidence_log_not_saved",
            obj([
                ("file", COMMIT_REVEAL_FILE.into()),
                ("error", error.as_str().into()),
            ]),
            Some(format!("The commit-reveal record was not saved: {error}")),
        );
    }
}

pub(super) async fn simultaneous_round(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Ending, Stop> {
    let ctx = run.ctx;
    let field = value_field(run.spec);
    let nonce = || commit::nonce_from(ctx.random_bytes::<8>());
    let mut log = EvidenceLog::open(ctx.sink.state_dir().as_deref(), COMMIT_REVEAL_FILE);
    match ctx.role {
        crate::engine::Role::Host => {
            let join = run.recv(hooks).await?;
            if action_of(&join) == "error" {
                return Err(Stop::PeerError(join));
            }
            opening_frame(run.spec, 0, "guest_to_host", &join)?;
            let ready = hooks.host_handle_join(ctx, &join).await?;
            let Some(resp) = ready.response else {
                return Err(Stop::from(HookError::Invalid(
                    "host join hook did not return a ready response".into(),
                )));
            };
            run.send(resp, hooks).await?;
            let mut r: u64 = 0;
            loop {
                run.round = Some(r);
                let value = hooks.round_value(ctx, r).await?;
                let n = nonce();
                let hash = commit::commit_hash(&value, &n);
                let ri = Value::from(r as i64);
                run.send(
                    obj([
                        ("action", "commit".into()),
                        ("round", ri.clone()),
                        ("hash", hash.as_str().into()),
                    ]),
                    hooks,
                )
                .await?;
                let guest_commit = run.expect("commit", Some(r), hooks).await?;
                run.send(
                    obj([
                        ("action", "reveal".into()),
                        ("round", ri.clone()),
                        (field.as_str(), value.clone()),
                        ("nonce", n.as_str().into()),
                    ]),
                    hooks,
                )
                .await?;
                let guest_reveal = run.expect("reveal", Some(r), hooks).await?;
                let Some(guest_value) =
                    opened(ctx, &guest_commit, &guest_reveal, &field, r, "guest")
                else {
                    let frame = obj([
                        ("action", "error".into()),
                        ("round", ri),
                        ("reason", "commit_mismatch".into()),
                    ]);
                    let _ = run.send_control(frame, hooks).await;
                    return Err(Stop::CommitMismatch);
                };
                let judged = hooks.round_judge(ctx, r, &value, &guest_value).await?;
                record_round(
                    ctx,
                    &mut log,
                    r,
                    &field,
                    opening(&hash, &value, &n),
                    opening(
                        &committed(&guest_commit),
                        &guest_value,
                        &revealed_nonce(&guest_reveal),
                    ),
                    judged.response.as_ref(),
                );
                if let Some(resp) = judged.response.clone() {
                    run.send(resp, hooks).await?;
                }
                if judged.completed || judged.abort {
                    run.send_control(obj([("action", "end".into())]), hooks)
                        .await?;
                    return Ok(Ending {
                        completed: judged.completed,
                        reason: reason_of(&judged),
                        winner: winner_of(&[judged.response.as_ref()]),
                        error: abort_detail(&judged, judged.response.as_ref(), None),
                    });
                }
                r += 1;
            }
        }
        crate::engine::Role::Guest => {
            let join = hooks.guest_join_message(ctx).await?;
            run.send(join, hooks).await?;
            let ready = run.expect("ready", None, hooks).await?;
            hooks.guest_handle_ready(ctx, &ready).await?;
            let shadow = run.spec.get("shadow_judge").is_some_and(Value::truthy);
            let mut pending: Option<Map> = None;
            let mut last_result: Option<Map> = None;
            let mut r: u64 = 0;
            loop {
                run.round = Some(r);
                // The guest settles its value before it sees the host's commit.
                let value = hooks.round_value(ctx, r).await?;
                let n = nonce();
                let hash = commit::commit_hash(&value, &n);
                let host_commit = match pending.take() {
                    Some(m) => m,
                    None => {
                        let m = run.recv_raw().await?;
                        if is_end(&m) {
                            run.report(Dir::Received, &m, hooks);
                            return Ok(Ending {
                                completed: true,
                                reason: "completed",
                                winner: winner_of(&[last_result.as_ref()]),
                                error: None,
                            });
                        }
                        run.check_in(&m, hooks)?;
                        m
                    }
                };
                match action_of(&host_commit) {
                    "commit" => {}
                    "error" => return Err(Stop::PeerError(host_commit)),
                    other => {
                        return Err(Stop::Unexpected {
                            error: format!("expected 'commit', got '{other}'"),
                        });
                    }
                }
                if host_commit.get("round").and_then(Value::as_i64) != i64::try_from(r).ok() {
                    return Err(Stop::Unexpected {
                        error: format!(
                            "host commit for round {} while round {r} is due",
                            host_commit
                                .get("round")
                                .map(Value::py_str)
                                .unwrap_or_default()
                        ),
                    });
                }
                let ri = Value::from(r as i64);
                run.send(
                    obj([
                        ("action", "commit".into()),
                        ("round", ri.clone()),
                        ("hash", hash.as_str().into()),
                    ]),
                    hooks,
                )
                .await?;
                let host_reveal = run.expect("reveal", Some(r), hooks).await?;
                let Some(host_value) = opened(ctx, &host_commit, &host_reveal, &field, r, "host")
                else {
                    return Err(Stop::CommitMismatch);
                };
                run.send(
                    obj([
                        ("action", "reveal".into()),
                        ("round", ri.clone()),
                        (field.as_str(), value.clone()),
                        ("nonce", n.as_str().into()),
                    ]),
                    hooks,
                )
                .await?;
                let result = run.expect("round_result", Some(r), hooks).await?;
                record_round(
                    ctx,
                    &mut log,
                    r,
                    &field,
                    opening(
                        &committed(&host_commit),
                        &host_value,
                        &revealed_nonce(&host_reveal),
                    ),
                    opening(&hash, &value, &n),
                    Some(&result),
                );
                let expected = if shadow {
                    hooks.round_judge_pure(ctx, r, &host_value, &value).await
                } else {
                    None
                };
                if let Some(expected) = expected {
                    let mismatches: Vec<Value> = SHADOW_FIELDS
                        .iter()
                        .filter_map(|f| {
                            let (e, a) = (expected.get(f), result.get(f));
                            let same = match (e, a) {
                                (None, None) => true,
                                (Some(x), Some(y)) => x.py_eq(y),
                                _ => false,
                            };
                            (!same).then(|| {
                                Value::Object(obj([
                                    ("field", Value::from(*f)),
                                    ("expected", e.cloned().unwrap_or(Value::Null)),
                                    ("actual", a.cloned().unwrap_or(Value::Null)),
                                ]))
                            })
                        })
                        .collect();
                    if !mismatches.is_empty() {
                        ctx.emit(
                            "balance_mismatch_detected",
                            obj([
                                ("round", ri),
                                ("role", "host".into()),
                                ("mismatches", Value::Array(mismatches)),
                            ]),
                            Some(format!("Shadow judge disagrees in round {}", r + 1)),
                        );
                        return Err(Stop::BalanceMismatch);
                    }
                }
                hooks.guest_handle(ctx, &result).await?;
                last_result = Some(result);
                r += 1;
                let next = run.recv_raw().await?;
                if is_end(&next) {
                    run.report(Dir::Received, &next, hooks);
                    return Ok(Ending {
                        completed: true,
                        reason: "completed",
                        winner: winner_of(&[last_result.as_ref()]),
                        error: None,
                    });
                }
                run.check_in(&next, hooks)?;
                pending = Some(next);
            }
        }
    }
}

pub(super) async fn request_response(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Ending, Stop> {
    let ctx = run.ctx;
    match ctx.role {
        crate::engine::Role::Host => {
            let join = run.recv(hooks).await?;
            if action_of(&join) == "error" {
                return Err(Stop::PeerError(join));
            }
            opening_frame(run.spec, 0, "guest_to_host", &join)?;
            let ready = hooks.host_handle_join(ctx, &join).await?;
            let Some(resp) = ready.response else {
                return Err(Stop::from(HookError::Invalid(
                    "host join hook did not return a ready response".into(),
                )));
            };
            run.send(resp, hooks).await?;
            let request = run.recv(hooks).await?;
            let r = hooks.host_handle(ctx, &request).await?;
            let Some(resp) = r.response else {
                return Ok(Ending {
                    completed: false,
                    reason: "abort",
                    winner: None,
                    error: Some(hooks_ended(None, Some(&request))),
                });
            };
            run.send(resp, hooks).await?;
            Ok(Ending {
                completed: true,
                reason: "request_response_complete",
                winner: None,
                error: None,
            })
        }
        crate::engine::Role::Guest => {
            let join = hooks.guest_join_message(ctx).await?;
            run.send(join, hooks).await?;
            let ready = run.recv(hooks).await?;
            hooks.guest_handle_ready(ctx, &ready).await?;
            // The reference ends the guest on any falsy request: none, or
            // an empty object.
            let request = hooks.guest_first_action(ctx).await?;
            let Some(request) = request.filter(|m| !m.is_empty()) else {
                return Ok(Ending {
                    completed: false,
                    reason: "abort",
                    winner: None,
                    error: Some("the protocol's hooks chose no request".into()),
                });
            };
            run.send(request, hooks).await?;
            let response = run.recv(hooks).await?;
            hooks.guest_handle(ctx, &response).await?;
            Ok(Ending {
                completed: true,
                reason: "request_response_complete",
                winner: None,
                error: None,
            })
        }
    }
}

pub(super) async fn free(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    source: &mut dyn crate::engine::ChatSource,
) -> Result<Ending, Stop> {
    let ctx = run.ctx;
    // The engine does the handshake itself; hooks are not consulted.
    match ctx.role {
        crate::engine::Role::Guest => {
            run.send(obj([("action", "join".into())]), hooks).await?;
            run.expect("ready", None, hooks).await?;
        }
        crate::engine::Role::Host => {
            run.expect("join", None, hooks).await?;
            run.send(obj([("action", "ready".into())]), hooks).await?;
        }
    }
    ctx.sink.snapshot(obj([("phase", "chatting".into())]));
    let mut seq: i64 = 0;
    let mut source_open = true;
    loop {
        tokio::select! {
            line = source.next_line(), if source_open => {
                match line {
                    None => source_open = false,
                    Some(text) if text.trim() == "/quit" => {
                        run.send_control(obj([("action", "end".into())]), hooks).await?;
                        hooks.on_end(ctx).await;
                        return Ok(Ending { completed: true, reason: "completed", winner: None, error: None });
                    }
                    Some(text) => {
                        seq += 1;
                        let frame = obj([("action", "chat".into()), ("text", text.into()), ("seq", Value::from(seq))]);
                        run.send(frame.clone(), hooks).await?;
                        hooks.on_send(ctx, &frame).await;
                    }
                }
            }
            frame = run.rx.recv() => {
                let m = frame?;
                run.received += 1;
                if is_end(&m) {
                    run.report(Dir::Received, &m, hooks);
                    hooks.on_end(ctx).await;
                    return Ok(Ending { completed: true, reason: "completed", winner: None, error: None });
                }
                // Free mode validates against direction "both"; an invalid
                // frame is dropped and recorded, as the reference drops it.
                match run.spec.validate_object(&m, Some("both"), None) {
                    Ok(()) => {
                        run.report(Dir::Received, &m, hooks);
                        hooks.on_message(ctx, &m).await;
                    }
                    Err(e) => ctx.emit(
                        "frame_dropped",
                        obj([("error", Value::from(e.as_str())), ("msg", Value::Object(m))]),
                        Some(format!("Dropped an invalid frame: {e}")),
                    ),
                }
            }
        }
    }
}
