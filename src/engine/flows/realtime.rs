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

mod guest;
mod host;

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
        Role::Host => host::host(run, hooks, &config, &ruleset, &config_hash, &mut journal).await,
        Role::Guest => {
            guest::guest(run, hooks, &config, &ruleset, &config_hash, &mut journal).await
        }
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
