//! The host: the handshake's answer, the tick loop at fixed deadlines, the
//! guest's commands taken, checked and acknowledged.

use super::super::{Ending, Run, Stop, obj};
use super::*;

/// What the host does with one guest message.
struct GuestInbox {
    pending: BTreeMap<u64, Map>,
    last_seq: Option<i64>,
    /// rt_command frames received (lockstep waits for one per frame).
    commands: u64,
    rejected_in_a_row: u32,
    rejection_events: u32,
    /// Flood bucket.
    tokens: f64,
    disconnected: bool,
}

/// A guest message the host refuses, with the reference's reason.
async fn check_command(
    msg: &Map,
    inbox: &GuestInbox,
    current: u64,
    config: &Config,
    rules: &mut dyn RealtimeRules,
    spec_error: Option<String>,
) -> Result<(i64, u64, Map), String> {
    if let Some(e) = spec_error {
        return Err(e);
    }
    if super::super::action_of(msg) != "rt_command" {
        return Err("unexpected real-time guest message".into());
    }
    let seq = msg
        .get("seq")
        .and_then(Value::as_i64)
        .ok_or("seq must be an integer")?;
    let target = msg
        .get("target_tick")
        .and_then(Value::as_i64)
        .ok_or("target_tick must be an integer")?;
    let commands = msg.get("commands").cloned().unwrap_or(Value::Null);
    let digest = rt::json_hash(&Value::Object(obj([
        ("seq", Value::from(seq)),
        ("target_tick", Value::from(target)),
        ("commands", commands.clone()),
    ])));
    if msg.get("command_hash").and_then(Value::as_str) != Some(digest.as_str()) {
        return Err("command_hash_mismatch".into());
    }
    if inbox.last_seq.is_some_and(|last| seq <= last) {
        return Err("non_monotonic_sequence".into());
    }
    if target <= current as i64 {
        return Err("late_target_tick".into());
    }
    if target as u64 > current + config.max_command_lead_ticks {
        return Err("target_tick_too_far".into());
    }
    let target = target as u64;
    if inbox.pending.contains_key(&target) {
        return Err("target_tick_already_queued".into());
    }
    let list = commands.as_array().ok_or("commands must be a list")?;
    if list.len() > config.max_commands_per_frame {
        return Err("command frame exceeds max_commands_per_frame".into());
    }
    let normalized = rules
        .validate_commands(Role::Guest, &commands, target)
        .await?;
    if normalized.len() > config.max_commands_per_frame {
        return Err("normalized command frame exceeds max_commands_per_frame".into());
    }
    Ok((
        seq,
        target,
        rt::command_message(seq as u64, target, normalized),
    ))
}

fn hash_or_zero(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_str) {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => Value::from(h),
        _ => Value::from(ZERO_HASH),
    }
}

/// Takes one guest line: queues an accepted command and acknowledges it,
/// or refuses it with a reason. Errors end the session.
async fn take_guest(
    run: &mut Run<'_>,
    rules: &mut dyn RealtimeRules,
    inbox: &mut GuestInbox,
    journal: &mut Journal,
    config: &Config,
    current: u64,
    msg: Map,
) -> Result<(), Stop> {
    inbox.tokens -= 1.0;
    if inbox.tokens < 0.0 {
        return Err(refused(
            "peer_flooding",
            format!(
                "the guest sent commands faster than {FLOOD_PER_TICK} a tick (burst {FLOOD_BURST})"
            ),
        ));
    }
    if super::super::action_of(&msg) == "rt_command" {
        inbox.commands += 1;
    }
    let spec_error = run.valid_in(&msg).err();
    let ack = match check_command(&msg, inbox, current, config, rules, spec_error).await {
        Ok((seq, target, accepted)) => {
            inbox.rejected_in_a_row = 0;
            let ack = obj([
                ("action", Value::from("rt_command_ack")),
                ("seq", Value::from(seq)),
                ("target_tick", Value::from(target as i64)),
                ("status", Value::from("accepted")),
                ("received_at_tick", Value::from(current as i64)),
                (
                    "command_hash",
                    accepted.get("command_hash").cloned().unwrap_or(Value::Null),
                ),
            ]);
            inbox.pending.insert(target, accepted);
            inbox.last_seq = Some(seq);
            journal.command(
                "received",
                obj([
                    ("message", Value::Object(msg)),
                    ("ack", Value::Object(ack.clone())),
                ]),
            );
            ack
        }
        Err(reason) => {
            let reason: String = reason.chars().take(200).collect();
            inbox.rejected_in_a_row += 1;
            let seq = msg.get("seq").and_then(Value::as_i64);
            let target = msg.get("target_tick").and_then(Value::as_i64);
            let hash = hash_or_zero(msg.get("command_hash"));
            journal.command(
                "rejected",
                obj([
                    ("message", Value::Object(msg)),
                    ("reason", Value::from(reason.as_str())),
                ]),
            );
            if inbox.rejection_events < MAX_REJECTION_EVENTS {
                inbox.rejection_events += 1;
                run.ctx.emit(
                    "realtime_command_rejected",
                    obj([("reason", Value::from(reason.as_str()))]),
                    Some(format!("Guest command rejected: {reason}")),
                );
            }
            if inbox.rejected_in_a_row >= MAX_REJECTED_IN_A_ROW {
                return Err(refused(
                    "peer_misbehaving",
                    format!(
                        "{MAX_REJECTED_IN_A_ROW} guest commands in a row were rejected; the last: {reason}"
                    ),
                ));
            }
            let (Some(seq), Some(target)) = (seq, target) else {
                return Ok(());
            };
            obj([
                ("action", Value::from("rt_command_ack")),
                ("seq", Value::from(seq)),
                ("target_tick", Value::from(target)),
                ("status", Value::from("rejected")),
                ("received_at_tick", Value::from(current as i64)),
                ("command_hash", hash),
                ("reason", Value::from(reason)),
            ])
        }
    };
    send_or_disconnect(run, inbox, ack).await
}

/// Sends a host frame; a guest gone is noted (the disconnect policy
/// decides), a guest that stopped reading ends the session.
async fn send_or_disconnect(
    run: &mut Run<'_>,
    inbox: &mut GuestInbox,
    msg: Map,
) -> Result<(), Stop> {
    if inbox.disconnected {
        return Ok(());
    }
    match run.send_rt(msg).await {
        Err(Stop::Channel(ChannelError::Closed)) => {
            inbox.disconnected = true;
            Ok(())
        }
        other => other,
    }
}

/// The host's own commands for `source_tick + input delay`, from the state
/// at `source_tick` (the guest gets the same delay through its lead).
async fn queue_host(
    ctx: &crate::engine::Ctx,
    rules: &mut dyn RealtimeRules,
    journal: &mut Journal,
    pending: &mut BTreeMap<u64, Map>,
    seq: &mut u64,
    source_tick: u64,
    config: &Config,
) -> Result<(), Stop> {
    let target = source_tick + config.input_delay_ticks;
    *seq += 1;
    let strategy = ctx.strategy.get();
    let commands = own_commands(
        rules,
        Role::Host,
        (*seq, target),
        &strategy,
        config,
        None,
        journal,
    )
    .await?;
    let message = rt::command_message(*seq, target, commands);
    journal.command(
        "generated",
        obj([
            ("side", Value::from("host")),
            ("source_tick", Value::from(source_tick as i64)),
            ("message", Value::Object(message.clone())),
        ]),
    );
    pending.insert(target, message);
    Ok(())
}

/// Lateness of each tick against its deadline, for the jitter figures.
#[derive(Default)]
struct Lateness(Vec<u32>);

impl Lateness {
    fn add(&mut self, late: Duration) {
        self.0
            .push(u32::try_from(late.as_micros()).unwrap_or(u32::MAX));
    }

    fn value(&self) -> Value {
        let mut v = self.0.clone();
        v.sort_unstable();
        let pick = |q: f64| -> Value {
            if v.is_empty() {
                return Value::Null;
            }
            let i = ((v.len() as f64 - 1.0) * q).round() as usize;
            Value::from(f64::from(v[i.min(v.len() - 1)]) / 1000.0)
        };
        Value::Object(obj([
            ("ticks", Value::from(v.len() as i64)),
            ("p50_ms", pick(0.5)),
            ("p99_ms", pick(0.99)),
            ("max_ms", pick(1.0)),
        ]))
    }
}

pub(super) async fn host(
    run: &mut Run<'_>,
    hooks: &mut dyn Hooks,
    config: &Config,
    ruleset: &str,
    config_hash: &str,
    journal: &mut Journal,
) -> Result<Ending, Stop> {
    let join = run.recv_raw().await?;
    run.valid_in(&join)
        .map_err(|error| Stop::Invalid { error })?;
    run.note(Dir::Received, &join);
    if super::super::action_of(&join) != "rt_join" {
        return Err(Stop::Unexpected {
            error: format!(
                "expected 'rt_join', got '{}'",
                super::super::action_of(&join)
            ),
        });
    }
    let mismatch = if join.get("wire_version").and_then(Value::as_i64) != Some(rt::WIRE_VERSION) {
        Some("wire_version_mismatch")
    } else if join.get("ruleset_hash").and_then(Value::as_str) != Some(ruleset) {
        Some("ruleset_hash_mismatch")
    } else if join.get("match_config_hash").and_then(Value::as_str) != Some(config_hash) {
        Some("match_config_mismatch")
    } else {
        None
    };
    if let Some(reason) = mismatch {
        let reject = obj([
            ("action", Value::from("rt_reject")),
            ("reason", Value::from(reason)),
        ]);
        run.note(Dir::Sent, &reject);
        let _ = run.send_rt(reject).await;
        journal.command(
            "handshake_rejected",
            obj([
                ("reason", Value::from(reason)),
                ("join", Value::Object(join.clone())),
            ]),
        );
        let theirs = |k: &str| join.get(k).map(Value::py_str).unwrap_or_default();
        return Err(refused(
            reason,
            match reason {
                "ruleset_hash_mismatch" => format!(
                    "the guest runs ruleset {} and this host {ruleset}: the two sides have different rules (see docs/realtime.md, Rulesets)",
                    theirs("ruleset_hash")
                ),
                "match_config_mismatch" => format!(
                    "the guest's match config hash {} is not this host's {config_hash} (different options or realtime settings)",
                    theirs("match_config_hash")
                ),
                _ => format!(
                    "the guest speaks realtime wire version {}, this host {}",
                    theirs("wire_version"),
                    rt::WIRE_VERSION
                ),
            },
        ));
    }
    let rules = rules_of(hooks)?;
    let Stepped {
        state,
        state_hash,
        events: _,
        outcome: _,
    } = rules.initial_state().await.map_err(rules_failed)?;
    let applied0 = obj([
        ("host", rt::empty_applied("host", 0)),
        ("guest", rt::empty_applied("guest", 0)),
    ]);
    let mut previous = rt::make_frame(
        0,
        state,
        state_hash,
        None,
        applied0,
        Value::Array(Vec::new()),
        "none",
    );
    let ready = obj([
        ("action", Value::from("rt_ready")),
        ("wire_version", Value::from(rt::WIRE_VERSION)),
        ("ruleset_hash", Value::from(ruleset)),
        ("match_config_hash", Value::from(config_hash)),
        ("config", config.to_value()),
        ("frame", Value::Object(previous.clone())),
    ]);
    run.note(Dir::Sent, &ready);
    run.send_rt(ready).await?;
    started(run.ctx, rules, journal, &previous, config).await;

    let mut inbox = GuestInbox {
        pending: BTreeMap::new(),
        last_seq: None,
        commands: 0,
        rejected_in_a_row: 0,
        rejection_events: 0,
        tokens: FLOOD_BURST,
        disconnected: false,
    };
    let mut host_pending: BTreeMap<u64, Map> = BTreeMap::new();
    let mut host_seq = 0u64;
    queue_host(
        run.ctx,
        rules,
        journal,
        &mut host_pending,
        &mut host_seq,
        0,
        config,
    )
    .await?;
    // tick_rate_hz is 1..=60 (Config::from_spec): integer nanoseconds.
    let period = Duration::from_nanos(1_000_000_000 / u64::from(config.tick_rate_hz.max(1)));
    let lockstep = run.cfg.realtime_lockstep;
    let limit = silence(run);
    let mut deadline = Instant::now();
    let mut lateness = Lateness::default();
    let mut tick = 0u64;
    let outcome = loop {
        deadline += period;
        // Take guest lines until this tick's deadline (lockstep: until the
        // guest answered every frame so far).
        loop {
            if lockstep && (inbox.commands > tick || inbox.disconnected) {
                break;
            }
            enum Ev {
                Line(Result<Map, ChannelError>),
                Due,
            }
            // The timer has millisecond granularity and rounds up: sleep to
            // just before the deadline, then yield until it (below).
            let wait_until = if lockstep {
                Instant::now() + limit
            } else {
                deadline.checked_sub(SPIN).unwrap_or(deadline)
            };
            let ev = if inbox.disconnected {
                tokio::time::sleep_until(wait_until).await;
                Ev::Due
            } else {
                tokio::select! {
                    biased;
                    r = run.rx.recv() => Ev::Line(r),
                    _ = tokio::time::sleep_until(wait_until) => Ev::Due,
                }
            };
            match ev {
                Ev::Due if lockstep => return Err(Stop::Timeout),
                Ev::Due => {
                    // The last stretch: other tasks (the channel's reader) run
                    // between checks, and the tick starts on its deadline.
                    while Instant::now() < deadline {
                        tokio::task::yield_now().await;
                    }
                    break;
                }
                Ev::Line(Ok(msg)) => {
                    run.received += 1;
                    take_guest(run, rules, &mut inbox, journal, config, tick, msg).await?;
                }
                Ev::Line(Err(ChannelError::Closed)) => inbox.disconnected = true,
                Ev::Line(Err(e)) => return Err(Stop::Channel(e)),
            }
        }
        if !lockstep {
            lateness.add(Instant::now().saturating_duration_since(deadline));
        }
        // Lines that are already here count for this tick: never waited for.
        while !inbox.disconnected {
            use futures_util::FutureExt;
            match run.rx.recv().now_or_never() {
                Some(Ok(msg)) => {
                    run.received += 1;
                    take_guest(run, rules, &mut inbox, journal, config, tick, msg).await?;
                }
                Some(Err(ChannelError::Closed)) => inbox.disconnected = true,
                Some(Err(e)) => return Err(Stop::Channel(e)),
                None => break,
            }
        }
        if inbox.disconnected && config.disconnect_policy == "abort" {
            return Err(Stop::Channel(ChannelError::Closed));
        }
        if !inbox.disconnected && run.rx.liveness.silent_for() > limit {
            return Err(Stop::Timeout);
        }
        tick += 1;
        inbox.tokens = (inbox.tokens + FLOOD_PER_TICK).min(FLOOD_BURST);
        let host_message = host_pending.remove(&tick);
        let guest_message = inbox.pending.remove(&tick);
        let cmds = |m: &Option<Map>| -> Vec<Value> {
            m.as_ref()
                .and_then(|m| m.get("commands"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let stepped = rules
            .step(tick, &cmds(&host_message), &cmds(&guest_message))
            .await
            .map_err(rules_failed)?;
        let applied_of = |side: &str, m: &Option<Map>| match m {
            Some(m) => rt::applied(side, m),
            None => rt::empty_applied(side, tick),
        };
        let applied = obj([
            ("host", applied_of("host", &host_message)),
            ("guest", applied_of("guest", &guest_message)),
        ]);
        let frame = rt::make_frame(
            tick,
            stepped.state,
            stepped.state_hash,
            Some(&previous),
            applied,
            stepped.events,
            stepped.outcome,
        );
        if stepped.outcome == "none" {
            queue_host(
                run.ctx,
                rules,
                journal,
                &mut host_pending,
                &mut host_seq,
                tick,
                config,
            )
            .await?;
        }
        journal.frame(&frame, "sent");
        snapshot_frame(run.ctx, rules, &frame, config).await;
        let message = obj([
            ("action", Value::from("rt_frame")),
            ("frame", Value::Object(frame.clone())),
        ]);
        send_or_disconnect(run, &mut inbox, message).await?;
        if inbox.disconnected && config.disconnect_policy == "abort" {
            return Err(Stop::Channel(ChannelError::Closed));
        }
        previous = frame;
        if stepped.outcome != "none" {
            break stepped.outcome;
        }
    };
    let jitter = lateness.value();
    run.ctx.sink.snapshot(obj([(
        "realtime",
        Value::Object(obj([("tick_lateness", jitter.clone())])),
    )]));
    run.ctx.emit(
        "realtime_ended",
        obj([
            ("role", Value::from("host")),
            ("tick", Value::from(tick as i64)),
            ("outcome", Value::from(outcome)),
            ("tick_lateness", jitter),
        ]),
        Some(format!("Realtime match over at tick {tick}: {outcome}")),
    );
    Ok(Ending {
        completed: true,
        reason: "completed",
        winner: Some(outcome.to_owned()),
        error: None,
    })
}
