//! The guest: the RTT probe and the join, every frame verified (never
//! re-simulated), its commands for each frame, the end-of-match audit.

use super::super::{Ending, Run, Stop, obj};
use super::*;

/// Measures the round trip with `_sys` probes (each waited for at most
/// [`PROBE_WAIT`]); a peer that does not answer leaves no samples.
async fn probe(
    tx: crate::engine::Sender,
    live: std::sync::Arc<crate::engine::Liveness>,
) -> Latency {
    let mut latency = Latency::default();
    let tag = hex::encode(rand::random::<[u8; 4]>());
    for i in 0..PROBES {
        let id = format!("rt-{tag}-{i}");
        let pong = live.await_pong(&id);
        let ping = Value::Object(obj([
            ("_sys", Value::from("ping")),
            ("probe_id", Value::from(id.as_str())),
            (
                "ts",
                Value::Number(crate::json::Number::Float(super::super::now_epoch())),
            ),
        ]));
        let sent = Instant::now();
        if tx.send_within(&ping, PROBE_WAIT).await.is_err() {
            break;
        }
        if let Ok(Ok(())) = tokio::time::timeout(PROBE_WAIT, pong).await {
            latency.add(sent.elapsed().as_secs_f64() * 1000.0);
        }
        if i + 1 < PROBES {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    latency
}

pub(super) async fn guest(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    config: &Config,
    ruleset: &str,
    config_hash: &str,
    journal: &mut Journal,
) -> Result<Ending, Stop> {
    let latency = probe(run.tx.clone(), run.rx.liveness.clone()).await;
    let profile = TransportProfile::new(&latency, config);
    let lead = profile.command_lead_ticks.max(1);
    run.ctx.sink.snapshot(obj([(
        "realtime",
        Value::Object(obj([("transport", profile.to_value())])),
    )]));
    if let Value::Object(p) = profile.to_value() {
        run.ctx.emit(
            "p2p_latency_measured",
            p,
            Some(format!("Command lead {lead} ticks")),
        );
    }
    let join = obj([
        ("action", Value::from("rt_join")),
        ("wire_version", Value::from(rt::WIRE_VERSION)),
        ("ruleset_hash", Value::from(ruleset)),
        ("match_config_hash", Value::from(config_hash)),
    ]);
    run.note(Dir::Sent, &join);
    run.send_rt(join).await?;
    let ready = run.recv_raw().await?;
    run.valid_in(&ready)
        .map_err(|error| Stop::Invalid { error })?;
    run.note(Dir::Received, &ready);
    match super::super::action_of(&ready) {
        "rt_reject" => {
            let said = ready.get("reason").map(Value::py_str).unwrap_or_default();
            let reason = match said.as_str() {
                "wire_version_mismatch" => "wire_version_mismatch",
                "ruleset_hash_mismatch" => "ruleset_hash_mismatch",
                "match_config_mismatch" => "match_config_mismatch",
                _ => "handshake_rejected",
            };
            let error = match reason {
                "ruleset_hash_mismatch" => format!(
                    "the host refused this side's ruleset {ruleset}: the two sides run different rules (see docs/realtime.md, Rulesets)"
                ),
                _ => format!("the host refused the join: {said}"),
            };
            return Err(refused(reason, error));
        }
        "rt_ready" => {}
        other => {
            return Err(Stop::Unexpected {
                error: format!("expected 'rt_ready', got '{other}'"),
            });
        }
    }
    if ready.get("wire_version").and_then(Value::as_i64) != Some(rt::WIRE_VERSION) {
        return Err(refused(
            "wire_version_mismatch",
            format!(
                "the host speaks realtime wire version {}",
                ready
                    .get("wire_version")
                    .map(Value::py_str)
                    .unwrap_or_default()
            ),
        ));
    }
    let theirs = ready
        .get("ruleset_hash")
        .map(Value::py_str)
        .unwrap_or_default();
    if theirs != ruleset {
        return Err(refused(
            "ruleset_hash_mismatch",
            format!(
                "the host runs ruleset {theirs} and this side {ruleset}: the two sides run different rules (see docs/realtime.md, Rulesets)"
            ),
        ));
    }
    if ready.get("match_config_hash").and_then(Value::as_str) != Some(config_hash)
        || ready.get("config") != Some(&config.to_value())
    {
        return Err(refused(
            "match_config_mismatch",
            "the host's match config (options or realtime settings) is not this side's",
        ));
    }
    let Some(first) = ready.get("frame").and_then(Value::as_object).cloned() else {
        return Err(refused("integrity_failed", "rt_ready carries no frame"));
    };
    if let Err(e) = rt::verify_frame(&first, None) {
        return Err(integrity(run, journal, e.to_string(), None));
    }
    let rules = rules_of(hooks)?;
    started(run.ctx, rules, journal, &first, config).await;
    let mut seq = 0u64;
    let mut previous = first;
    send_commands(run, rules, journal, config, &previous, lead, &mut seq).await?;
    loop {
        let msg = run.recv_rt().await?;
        if let Err(error) = run.valid_in(&msg) {
            return Err(Stop::Invalid { error });
        }
        match super::super::action_of(&msg) {
            "rt_command_ack" => {
                let get = |k: &str| msg.get(k).cloned().unwrap_or(Value::Null);
                let last = obj([
                    ("seq", get("seq")),
                    ("target_tick", get("target_tick")),
                    ("status", get("status")),
                    ("received_at_tick", get("received_at_tick")),
                    ("reason", get("reason")),
                ]);
                journal.command(
                    "ack",
                    obj([
                        ("ack", Value::Object(msg)),
                        ("local_receive_time_ns", Value::from(rt::now_ns())),
                    ]),
                );
                run.ctx.sink.snapshot(obj([(
                    "realtime",
                    Value::Object(obj([("last_command_ack", Value::Object(last))])),
                )]));
            }
            "rt_frame" => {
                let Some(frame) = msg.get("frame").and_then(Value::as_object) else {
                    return Err(integrity(
                        run,
                        journal,
                        "rt_frame carries no frame object".into(),
                        Some(&previous),
                    ));
                };
                if let Err(e) = rt::verify_frame(frame, Some(&previous)) {
                    return Err(integrity(run, journal, e.to_string(), Some(&previous)));
                }
                let frame = frame.clone();
                journal.frame(&frame, "received");
                snapshot_frame(run.ctx, rules, &frame, config).await;
                let outcome = frame
                    .get("outcome")
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_owned();
                if outcome != "none" {
                    return Ok(audit_end(run.ctx, rules, journal, &frame, &outcome).await);
                }
                previous = frame;
                send_commands(run, rules, journal, config, &previous, lead, &mut seq).await?;
            }
            other => {
                return Err(Stop::Unexpected {
                    error: format!("unexpected real-time host message: '{other}'"),
                });
            }
        }
    }
}

/// The guest's end: the protocol's audit of the final frame, written to
/// realtime-audit.json.
async fn audit_end(
    ctx: &crate::engine::Ctx,
    rules: &mut dyn RealtimeRules,
    journal: &mut Journal,
    frame: &Map,
    outcome: &str,
) -> Ending {
    let mut audit = rules.audit_outcome(frame).await;
    audit.insert("integrity", Value::from("verified"));
    for k in ["tick", "outcome", "chain_hash"] {
        audit.insert(k, frame.get(k).cloned().unwrap_or(Value::Null));
    }
    journal.audit(&audit);
    ctx.sink.snapshot(obj([(
        "realtime",
        Value::Object(obj([("audit", Value::Object(audit.clone()))])),
    )]));
    let passed = audit.get("status").and_then(Value::as_str) == Some("passed");
    ctx.emit(
        "realtime_ended",
        obj([
            ("role", Value::from("guest")),
            ("tick", frame.get("tick").cloned().unwrap_or(Value::Null)),
            ("outcome", Value::from(outcome)),
            ("audit", Value::Object(audit)),
        ]),
        Some(format!(
            "Realtime match over: {outcome} (audit {})",
            if passed { "passed" } else { "failed" }
        )),
    );
    Ending {
        completed: true,
        reason: "completed",
        winner: Some(outcome.to_owned()),
        error: None,
    }
}

/// A frame broke the chain: the audit says so and the session ends.
fn integrity(run: &Run<'_>, journal: &mut Journal, reason: String, previous: Option<&Map>) -> Stop {
    let last = previous
        .and_then(|p| p.get("tick"))
        .cloned()
        .unwrap_or(Value::Null);
    let audit = obj([
        ("status", Value::from("integrity_failed")),
        ("reason", Value::from(reason.as_str())),
        ("last_valid_tick", last),
    ]);
    journal.audit(&audit);
    run.ctx.emit(
        "realtime_integrity_failed",
        audit,
        Some(format!("Realtime integrity check failed: {reason}")),
    );
    refused("integrity_failed", reason)
}

/// The guest's commands answering `frame`, for `lead` ticks after it.
async fn send_commands(
    run: &mut Run<'_>,
    rules: &mut dyn RealtimeRules,
    journal: &mut Journal,
    config: &Config,
    frame: &Map,
    lead: u64,
    seq: &mut u64,
) -> Result<(), Stop> {
    let tick = frame.get("tick").and_then(Value::as_i64).unwrap_or(0) as u64;
    let target = tick + lead;
    *seq += 1;
    let strategy = run.ctx.strategy.get();
    let state = frame.get("state").unwrap_or(&Value::Null);
    let commands = own_commands(
        rules,
        Role::Guest,
        (*seq, target),
        &strategy,
        config,
        Some(state),
        journal,
    )
    .await?;
    let message = rt::command_message(*seq, target, commands);
    journal.command(
        "sent",
        obj([
            ("message", Value::Object(message.clone())),
            ("local_send_time_ns", Value::from(rt::now_ns())),
        ]),
    );
    run.send_rt(message).await
}
