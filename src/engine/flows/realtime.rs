//! `authoritative_realtime`, frame for frame as the reference's
//! `proto/realtime.py`: the guest measures the round trip with `_sys`
//! probes and sends `rt_join` with its ruleset and match config hashes; the
//! host answers `rt_reject` or `rt_ready` (with the tick-0 frame) and then
//! steps the simulation at fixed monotonic deadlines, never waiting for
//! input, sending an `rt_frame` per tick and an `rt_command_ack` per guest
//! command. The guest checks every frame's hash chain (it never
//! re-simulates), answers each frame with an `rt_command` for a tick the
//! measured lead ahead, and audits the final frame.
//!
//! Beyond the reference, a peer that misbehaves ends the session with a
//! reason instead of being served forever: a guest that floods commands
//! (`peer_flooding`), one whose commands are refused again and again
//! (`peer_misbehaving`), a peer silent past the realtime silence limit
//! (`peer_timeout`), a frame that breaks the chain (`integrity_failed`).

use super::{Ending, Run, Stop, obj};
use crate::engine::realtime::{
    self as rt, Config, Journal, Latency, RealtimeRules, Stepped, TransportProfile, ZERO_HASH,
};
use crate::engine::{ChannelError, Dir, HookError, Hooks, Role};
use crate::json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// A realtime peer silent this long (or the peer timeout, if shorter) is
/// gone: frames and commands flow every tick.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(10);
/// How long before a tick's deadline the host stops sleeping and yields
/// until the deadline instead (the timer rounds sleeps up to whole
/// milliseconds).
const SPIN: Duration = Duration::from_micros(1500);
/// Guest commands refused in a row before the host gives up on the guest.
pub const MAX_REJECTED_IN_A_ROW: u32 = 50;
/// Command frames a guest may send per tick on average (it sends one per
/// frame); the bucket holds `FLOOD_BURST` more.
const FLOOD_PER_TICK: f64 = 2.0;
const FLOOD_BURST: f64 = 64.0;
/// `realtime_command_rejected` events written at most (the journal has them all).
const MAX_REJECTION_EVENTS: u32 = 100;
/// RTT probes before the join, each waited for this long.
const PROBES: u32 = 3;
const PROBE_WAIT: Duration = Duration::from_millis(750);

fn rules_of(hooks: &mut dyn Hooks) -> Result<&mut dyn RealtimeRules, Stop> {
    hooks.realtime().ok_or_else(|| {
        Stop::from(HookError::Invalid(
            "this protocol's hooks have no realtime simulation".into(),
        ))
    })
}

fn rules_failed(e: rt::RulesError) -> Stop {
    Stop::from(HookError::Invalid(format!(
        "the realtime rules failed: {e}"
    )))
}

fn refused(reason: &'static str, error: impl Into<String>) -> Stop {
    Stop::Refused {
        reason,
        error: error.into(),
        tell: None,
    }
}

/// The realtime silence limit under this run's peer timeout.
fn silence(run: &Run<'_>) -> Duration {
    run.cfg
        .peer_timeout
        .map_or(SILENCE_LIMIT, |t| t.min(SILENCE_LIMIT))
}

impl Run<'_> {
    /// Reports a handshake frame (ticks, commands and acks go to the
    /// journals only: ten a second would drown the feed).
    fn note(&self, dir: Dir, msg: &Map) {
        self.ctx.emit(
            "protocol_message",
            obj([
                ("direction", Value::from(dir.as_str())),
                ("msg", Value::Object(msg.clone())),
            ]),
            None,
        );
    }

    fn check_out(&self, msg: &Map) -> Result<(), Stop> {
        if self.cfg.validate {
            self.spec
                .validate_object(msg, Some(self.ctx.role.outgoing()), None)
                .map_err(|e| Stop::OwnInvalid(format!("{}: {e}", super::action_of(msg))))?;
        }
        Ok(())
    }

    fn valid_in(&self, msg: &Map) -> Result<(), String> {
        if self.cfg.validate {
            self.spec
                .validate_object(msg, Some(self.ctx.role.incoming()), None)
                .map_err(|e| e.into_string())?;
        }
        Ok(())
    }

    async fn send_rt(&mut self, msg: Map) -> Result<(), Stop> {
        self.check_out(&msg)?;
        self.write(&Value::Object(msg)).await?;
        self.sent += 1;
        Ok(())
    }

    /// The next peer frame within the realtime silence limit.
    async fn recv_rt(&mut self) -> Result<Map, Stop> {
        let limit = silence(self);
        let m = tokio::time::timeout(limit, self.rx.recv())
            .await
            .map_err(|_| Stop::Timeout)??;
        self.received += 1;
        Ok(m)
    }
}

async fn snapshot_frame(
    ctx: &crate::engine::Ctx,
    rules: &mut dyn RealtimeRules,
    frame: &Map,
    config: &Config,
) {
    let tick = frame.get("tick").and_then(Value::as_i64).unwrap_or(0);
    let outcome = frame
        .get("outcome")
        .and_then(Value::as_str)
        .unwrap_or("none");
    if outcome == "none" && !(tick as u64).is_multiple_of(config.snapshot_every_ticks) {
        return;
    }
    let mut base = obj([
        (
            "phase",
            Value::from(if outcome == "none" {
                "in_progress"
            } else {
                "game_over"
            }),
        ),
        ("role", Value::from(ctx.role.as_str())),
        ("tick", Value::from(tick)),
        ("game_over", Value::Bool(outcome != "none")),
        ("winner", Value::from(outcome)),
        (
            "state_hash",
            frame.get("state_hash").cloned().unwrap_or(Value::Null),
        ),
        (
            "chain_hash",
            frame.get("chain_hash").cloned().unwrap_or(Value::Null),
        ),
        (
            "realtime",
            Value::Object(obj([
                ("wire_version", Value::from(rt::WIRE_VERSION)),
                ("tick_rate_hz", Value::from(i64::from(config.tick_rate_hz))),
                (
                    "input_delay_ticks",
                    Value::from(config.input_delay_ticks as i64),
                ),
            ])),
        ),
    ]);
    let empty = Value::Array(Vec::new());
    let patch = rules
        .snapshot(
            frame.get("state").unwrap_or(&Value::Null),
            frame.get("events").unwrap_or(&empty),
        )
        .await;
    for (k, v) in patch.into_entries() {
        base.insert(k, v);
    }
    ctx.sink.snapshot(base);
}

/// Runs this side of an authoritative_realtime session.
pub(super) async fn realtime(run: &mut Run<'_>, hooks: &mut dyn Hooks) -> Result<Ending, Stop> {
    let config = Config::from_spec(run.spec).map_err(|e| Stop::from(HookError::Invalid(e)))?;
    let ruleset = rules_of(hooks)?.ruleset_hash().map_err(rules_failed)?;
    let config_hash = rt::match_config_hash(&ruleset, &run.ctx.options, &config);
    let mut journal = Journal::new(run.ctx.sink.state_dir().as_deref());
    run.ctx.sink.snapshot(obj([
        ("ruleset_hash", Value::from(ruleset.as_str())),
        ("match_config_hash", Value::from(config_hash.as_str())),
        ("realtime", {
            let mut m = obj([("wire_version", Value::from(rt::WIRE_VERSION))]);
            if let Value::Object(c) = config.to_value() {
                for (k, v) in c.into_entries() {
                    m.insert(k, v);
                }
            }
            Value::Object(m)
        }),
    ]));
    let ending = match run.ctx.role {
        Role::Host => host(run, hooks, &config, &ruleset, &config_hash, &mut journal).await,
        Role::Guest => guest(run, hooks, &config, &ruleset, &config_hash, &mut journal).await,
    };
    if let Some(e) = journal.error.take() {
        run.ctx.emit(
            "realtime_journal_error",
            obj([("error", Value::from(e.as_str()))]),
            Some(format!("Realtime journal: {e}")),
        );
    }
    ending
}

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
    if super::action_of(msg) != "rt_command" {
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
    if super::action_of(&msg) == "rt_command" {
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

/// This side's commands for `target` from its rules (after reading
/// `observe`, a guest's latest verified state), checked as the host checks
/// them. None can be made: the reason (at most 200 characters) goes to the
/// journal as `local_generation_failed` (the host's record names its side,
/// as the reference's does) and the batch is empty — unless the rules are
/// broken (a rules program gone), which ends the session.
async fn own_commands(
    rules: &mut dyn RealtimeRules,
    side: Role,
    (seq, target): (u64, u64),
    strategy: &Map,
    config: &Config,
    observe: Option<&Value>,
    journal: &mut Journal,
) -> Result<Vec<Value>, Stop> {
    let cut = |e: String| e.chars().take(200).collect::<String>();
    let made = async {
        if let Some(state) = observe {
            rules.observe(state).await.map_err(|e| cut(e.to_string()))?;
        }
        let raw = rules.commands(side, target, strategy).await.map_err(cut)?;
        if raw.len() > config.max_commands_per_frame {
            return Err("command frame exceeds max_commands_per_frame".to_owned());
        }
        rules
            .validate_commands(side, &Value::Array(raw), target)
            .await
            .map_err(cut)
    };
    match made.await {
        Ok(c) => Ok(c),
        Err(reason) => {
            if let Some(why) = rules.broken() {
                return Err(Stop::from(HookError::External(why)));
            }
            let mut record = Map::with_capacity(4);
            if side == Role::Host {
                record.insert("side", Value::from("host"));
            }
            record.insert("seq", Value::from(seq as i64));
            record.insert("target_tick", Value::from(target as i64));
            record.insert("reason", Value::from(reason));
            journal.command("local_generation_failed", record);
            Ok(Vec::new())
        }
    }
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

async fn host(
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
    if super::action_of(&join) != "rt_join" {
        return Err(Stop::Unexpected {
            error: format!("expected 'rt_join', got '{}'", super::action_of(&join)),
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
    let period = Duration::from_secs_f64(1.0 / f64::from(config.tick_rate_hz.max(1)));
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

/// The tick-0 frame is out (host) or verified (guest): journalled, in the
/// snapshot, and the match reported started.
async fn started(
    ctx: &crate::engine::Ctx,
    rules: &mut dyn RealtimeRules,
    journal: &mut Journal,
    first: &Map,
    config: &Config,
) {
    let direction = match ctx.role {
        Role::Host => "sent",
        Role::Guest => "received",
    };
    journal.frame(first, direction);
    snapshot_frame(ctx, rules, first, config).await;
    ctx.emit(
        "realtime_started",
        obj([
            ("role", Value::from(ctx.role.as_str())),
            ("tick_rate_hz", Value::from(i64::from(config.tick_rate_hz))),
        ]),
        Some(format!(
            "Realtime match started at {} Hz",
            config.tick_rate_hz
        )),
    );
}

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
                Value::Number(crate::json::Number::Float(super::now_epoch())),
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

async fn guest(
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
    match super::action_of(&ready) {
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
        match super::action_of(&msg) {
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
