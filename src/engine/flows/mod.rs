//! The flow runners: `session_loop`, `simultaneous_round`,
//! `request_response` and `free`, frame for frame as the reference engine.
//!
//! Every runner is written as straight-line code over a [`Run`], whose
//! helpers validate, count and report frames and turn every way a peer can
//! misbehave into a [`Stop`]. [`Run::finish`] and [`Run::stop`] are the
//! only exits, so every session reports exactly one `session_ended`.

use super::channel::{Receiver, Sender};
use super::commit;
use super::{
    Channel, ChannelError, Ctx, Dir, EngineConfig, HookError, HookResult, Hooks, SessionOutcome,
    winner_of,
};
use crate::json::{Map, Value};
use crate::spec::Spec;
use std::time::{SystemTime, UNIX_EPOCH};

mod mental_poker;
mod realtime;
mod rounds;
use rounds::{free, request_response, simultaneous_round};

/// Why a flow stopped before its natural end.
#[derive(Debug)]
enum Stop {
    Channel(ChannelError),
    Timeout,
    /// A peer frame the spec rejects.
    Invalid {
        error: String,
    },
    /// A valid frame at the wrong moment (wrong action, wrong round).
    Unexpected {
        error: String,
    },
    /// The peer sent an `error` frame.
    PeerError(Map),
    /// Commit-reveal failed: the peer's reveal does not match its commit.
    CommitMismatch,
    /// Shadow judge disagrees with the host's result.
    BalanceMismatch,
    Hook(Box<HookError>),
    /// A frame our own side built fails validation.
    OwnInvalid(String),
    /// mental_poker: a check on the peer failed (`reason` is the
    /// reference's); `tell` is the `error` frame's reason to send first
    /// (`play_rejected`, `rule_rejected`), if any.
    Refused {
        reason: &'static str,
        error: String,
        tell: Option<&'static str>,
    },
}

impl From<ChannelError> for Stop {
    fn from(e: ChannelError) -> Self {
        Stop::Channel(e)
    }
}

impl From<HookError> for Stop {
    fn from(e: HookError) -> Self {
        Stop::Hook(Box::new(e))
    }
}

/// The value a peer revealed in round `r` when it matches the hash it
/// committed; otherwise records `commit_mismatch_detected` (naming the
/// cheating `role`) and returns None.
fn opened(
    ctx: &Ctx,
    commit_frame: &Map,
    reveal: &Map,
    field: &str,
    r: u64,
    role: &str,
) -> Option<Value> {
    let value = reveal.get(field).cloned().unwrap_or(Value::Null);
    let nonce = reveal.get("nonce").map(Value::py_str).unwrap_or_default();
    let committed = commit_frame
        .get("hash")
        .map(Value::py_str)
        .unwrap_or_default();
    let expected = commit::commit_hash(&value, &nonce);
    if expected == committed {
        return Some(value);
    }
    ctx.emit(
        "commit_mismatch_detected",
        obj([
            ("round", Value::from(r as i64)),
            ("role", role.into()),
            ("expected", expected.into()),
            ("actual", committed.into()),
        ]),
        Some(format!("Commit mismatch in round {}", r + 1)),
    );
    None
}

fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map {
    pairs.into_iter().collect()
}

fn action_of(m: &Map) -> &str {
    m.get("action").and_then(Value::as_str).unwrap_or("")
}

/// The reference's control frame: exactly `{"action":"end"}`.
fn is_end(m: &Map) -> bool {
    m.len() == 1 && action_of(m) == "end"
}

fn now_epoch() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

struct Run<'a> {
    spec: &'a Spec,
    ctx: &'a Ctx,
    cfg: &'a EngineConfig,
    tx: Sender,
    rx: Receiver,
    sent: u64,
    received: u64,
    /// Current round or turn, for error frames.
    round: Option<u64>,
    /// mental_poker: the signed transcript root and the audit's verdict.
    transcript_hash: Option<String>,
    audit_passed: Option<bool>,
}

impl<'a> Run<'a> {
    fn report(&self, dir: Dir, msg: &Map, hooks: &dyn Hooks) {
        let data = obj([
            ("direction", Value::from(dir.as_str())),
            ("msg", Value::Object(msg.clone())),
        ]);
        self.ctx
            .emit("protocol_message", data, hooks.display(msg, dir));
    }

    /// Validates (when on), reports and sends one of our frames.
    async fn send(&mut self, msg: Map, hooks: &dyn Hooks) -> Result<(), Stop> {
        if self.cfg.validate {
            self.spec
                .validate_object(&msg, Some(self.ctx.role.outgoing()), None)
                .map_err(|e| Stop::OwnInvalid(format!("{}: {e}", action_of(&msg))))?;
        }
        if !self.cfg.pace.is_zero() {
            tokio::time::sleep(self.cfg.pace).await;
        }
        // The frame goes out first and is written to the files while it
        // travels: the report is not on the round's critical path. A frame
        // that could not be sent is reported all the same, as before.
        let frame = Value::Object(msg);
        let sent = self.write(&frame).await;
        if let Value::Object(msg) = &frame {
            self.report(Dir::Sent, msg, hooks);
        }
        sent?;
        self.sent += 1;
        Ok(())
    }

    /// Writes one frame; a peer that has not taken it within the peer
    /// timeout stopped reading ([`ChannelError::Stalled`]).
    async fn write(&mut self, frame: &Value) -> Result<(), ChannelError> {
        match self.cfg.peer_timeout {
            Some(t) => self.tx.send_within(frame, t).await,
            None => self.tx.send(frame).await,
        }
    }

    /// Sends an engine control frame the reference sends unvalidated
    /// (`end`, SR `error`).
    async fn send_control(&mut self, msg: Map, hooks: &dyn Hooks) -> Result<(), Stop> {
        self.report(Dir::Sent, &msg, hooks);
        self.write(&Value::Object(msg)).await?;
        self.sent += 1;
        Ok(())
    }

    /// The next peer frame, within the peer timeout.
    async fn recv_raw(&mut self) -> Result<Map, Stop> {
        let m = match self.cfg.peer_timeout {
            Some(t) => tokio::time::timeout(t, self.rx.recv())
                .await
                .map_err(|_| Stop::Timeout)??,
            None => self.rx.recv().await?,
        };
        self.received += 1;
        Ok(m)
    }

    /// The next peer frame, validated against the peer's direction and reported.
    async fn recv(&mut self, hooks: &dyn Hooks) -> Result<Map, Stop> {
        let m = self.recv_raw().await?;
        self.check_in(&m, hooks)?;
        Ok(m)
    }

    fn check_in(&self, m: &Map, hooks: &dyn Hooks) -> Result<(), Stop> {
        if self.cfg.validate
            && let Err(e) = self
                .spec
                .validate_object(m, Some(self.ctx.role.incoming()), None)
        {
            return Err(Stop::Invalid {
                error: e.into_string(),
            });
        }
        self.report(Dir::Received, m, hooks);
        Ok(())
    }

    /// The next peer frame, which must carry `action` (an `error` frame from
    /// the peer ends the session) and, when given, `round == r`.
    async fn expect(
        &mut self,
        action: &str,
        round: Option<u64>,
        hooks: &dyn Hooks,
    ) -> Result<Map, Stop> {
        let m = self.recv(hooks).await?;
        let got = action_of(&m);
        if got == "error" && action != "error" {
            return Err(Stop::PeerError(m));
        }
        if got != action {
            return Err(Stop::Unexpected {
                error: format!("expected '{action}', got '{got}'"),
            });
        }
        if let Some(r) = round {
            let theirs = m.get("round").and_then(Value::as_i64);
            if theirs != i64::try_from(r).ok() {
                return Err(Stop::Unexpected {
                    error: format!(
                        "'{action}' for round {} while round {r} is being played",
                        m.get("round")
                            .map(Value::py_str)
                            .unwrap_or_else(|| "(none)".into())
                    ),
                });
            }
        }
        Ok(m)
    }

    /// The session is over: the decider's and the sink's files are written
    /// out before anyone is told.
    fn flush_files(&self) {
        self.ctx.decider.flush();
        self.ctx.sink.flush();
    }

    fn phase(&self, phase: &str, summary: &str) {
        let last = obj([
            ("summary", Value::from(summary)),
            ("structured", Value::Object(Map::new())),
        ]);
        self.ctx.sink.snapshot(obj([
            ("phase", Value::from(phase)),
            ("last_event", Value::Object(last)),
        ]));
    }

    /// The natural end of a flow, or an end the hooks chose (`abort`, with
    /// `error` saying what happened: the reference writes `abort` alone).
    async fn finish(
        self,
        completed: bool,
        reason: &str,
        winner: Option<String>,
        error: Option<String>,
    ) -> SessionOutcome {
        self.tx.close().await;
        let mut data = obj([
            ("completed", Value::Bool(completed)),
            ("reason", Value::from(reason)),
        ]);
        if let Some(w) = &winner {
            data.insert("winner", Value::from(w.as_str()));
        }
        if let Some(e) = &error {
            data.insert("error", Value::from(e.as_str()));
        }
        let summary = match &error {
            Some(e) => format!("Session ended: {reason}: {e}"),
            None => format!("Session ended: {reason}"),
        };
        self.ctx.emit("session_ended", data, Some(summary.clone()));
        let phase = match (completed, reason) {
            (_, "abort") => "aborted",
            (true, _) if self.spec.is_game() => "game_over",
            (true, _) => "ended",
            (false, _) => "aborted",
        };
        self.phase(phase, &summary);
        self.flush_files();
        SessionOutcome {
            completed,
            reason: reason.to_owned(),
            error,
            winner,
            frames_sent: self.sent,
            frames_received: self.received,
            transcript_hash: self.transcript_hash,
            audit_passed: self.audit_passed,
        }
    }

    /// An early end: record why, tell the peer with an `error` frame where
    /// the spec has one for us, and close.
    async fn stop(mut self, stop: Stop, hooks: &dyn Hooks) -> SessionOutcome {
        let (reason, error, tell): (&str, String, &[&str]) = match &stop {
            Stop::Channel(ChannelError::Closed) => {
                ("peer_disconnected", "peer disconnected".into(), &[])
            }
            Stop::Channel(ChannelError::Malformed(d)) => (
                "malformed_frame",
                d.clone(),
                &["invalid_message", "protocol_violation", "aborted"],
            ),
            Stop::Channel(ChannelError::Oversized(n)) => (
                "oversized_frame",
                format!("frame of {n} bytes"),
                &["invalid_message", "protocol_violation", "aborted"],
            ),
            Stop::Channel(ChannelError::Transport(d)) => ("transport_error", d.clone(), &[]),
            Stop::Channel(e @ ChannelError::Stalled(_)) => ("peer_not_reading", e.to_string(), &[]),
            Stop::Timeout => (
                "peer_timeout",
                "the peer sent nothing in time".into(),
                &["timeout", "aborted"],
            ),
            Stop::Invalid { error } => (
                "invalid_frame",
                error.clone(),
                &[
                    "invalid_message",
                    "invalid_choice",
                    "invalid_move",
                    "invalid_guess",
                    "protocol_violation",
                    "aborted",
                ],
            ),
            Stop::Unexpected { error } => (
                "unexpected_frame",
                error.clone(),
                &["unexpected_action", "protocol_violation", "aborted"],
            ),
            Stop::PeerError(m) => (
                "peer_error",
                m.get("reason")
                    .or_else(|| m.get("error_code"))
                    .map(Value::py_str)
                    .unwrap_or_else(|| "error".into()),
                &[],
            ),
            Stop::CommitMismatch => (
                "commit_mismatch",
                "the reveal does not match the commitment".into(),
                &[],
            ),
            Stop::BalanceMismatch => (
                "balance_mismatch",
                "the host's round result differs from the shadow judge".into(),
                &[],
            ),
            Stop::Hook(h) => match h.as_ref() {
                HookError::IllegalDecision { reason, .. } => {
                    ("human_decision_failed", reason.clone(), &["aborted"])
                }
                HookError::DecisionFailed(d) => {
                    ("human_decision_failed", d.clone(), &["timeout", "aborted"])
                }
                HookError::Protocol(d) => (
                    "protocol_violation",
                    d.clone(),
                    &[
                        "invalid_move",
                        "invalid_choice",
                        "invalid_guess",
                        "protocol_violation",
                        "aborted",
                    ],
                ),
                e => ("hook_error", e.to_string(), &["aborted"]),
            },
            Stop::OwnInvalid(d) => (
                "hook_error",
                format!("our own frame is invalid: {d}"),
                &["aborted"],
            ),
            Stop::Refused { reason, error, .. } => (*reason, error.clone(), &[]),
        };
        // A mental-poker `error` frame only ever says play_rejected or
        // rule_rejected (the spec's whole enum): nothing else is told.
        let tell: &[&str] = match &stop {
            Stop::Refused { tell: Some(t), .. } => std::slice::from_ref(t),
            _ if self.spec.flow_mode() == "mental_poker" => &[],
            _ => tell,
        };
        let hook_error = match &stop {
            Stop::Hook(h) => Some(h.as_ref()),
            _ => None,
        };
        if let Some(HookError::IllegalDecision {
            match_key,
            match_value,
            reason,
            decision,
        }) = hook_error
        {
            self.ctx.emit(
                "human_decision_failed",
                obj([
                    ("match_key", Value::from(match_key.as_str())),
                    ("match_value", match_value.clone()),
                    ("reason", Value::from(reason.as_str())),
                    ("decision", Value::Object(decision.clone())),
                ]),
                Some(format!("Decision rejected: {reason}")),
            );
        } else if let Some(HookError::DecisionFailed(d)) = hook_error {
            self.ctx.emit(
                "human_decision_failed",
                obj([
                    ("reason", Value::from("timeout")),
                    ("detail", Value::from(d.as_str())),
                ]),
                Some("No decision in time".into()),
            );
        }
        if !tell.is_empty()
            && let Some(frame) = self.error_frame(tell)
        {
            self.report(Dir::Sent, &frame, hooks);
            // A peer that does not read is not waited for at the end.
            let limit = self
                .cfg
                .peer_timeout
                .unwrap_or(super::channel::CLOSE_GRACE)
                .min(super::channel::CLOSE_GRACE);
            if self
                .tx
                .send_within(&Value::Object(frame), limit)
                .await
                .is_ok()
            {
                self.sent += 1;
            }
        }
        self.tx.close().await;
        self.ctx.emit(
            "session_ended",
            obj([
                ("completed", Value::Bool(false)),
                ("reason", Value::from(reason)),
                ("error", Value::from(error.as_str())),
            ]),
            Some(format!("Session ended: {reason}: {error}")),
        );
        self.phase("aborted", &format!("{reason}: {error}"));
        self.flush_files();
        SessionOutcome {
            completed: false,
            reason: reason.to_owned(),
            error: Some(error),
            winner: None,
            frames_sent: self.sent,
            frames_received: self.received,
            transcript_hash: self.transcript_hash,
            audit_passed: self.audit_passed,
        }
    }

    /// An `error` frame the spec accepts from us, with the first preferred
    /// reason its schema allows (and the round when it has one).
    fn error_frame(&self, prefer: &[&str]) -> Option<Map> {
        let mut candidates: Vec<Value> = prefer.iter().map(|r| Value::from(*r)).collect();
        if let Some(values) = self
            .spec
            .field_schema("error", self.ctx.role.outgoing(), "reason")
            .and_then(|f| f.get("values"))
            .and_then(Value::as_array)
        {
            candidates.extend(values.iter().cloned());
        }
        for reason in candidates {
            let mut frame = obj([("action", Value::from("error"))]);
            if let Some(r) = self.round {
                frame.insert("round", Value::from(r as i64));
            }
            frame.insert("reason", reason);
            for f in [frame.clone(), {
                let mut g = frame.clone();
                g.remove("round");
                g
            }] {
                if self
                    .spec
                    .validate_message(
                        &Value::Object(f.clone()),
                        Some(self.ctx.role.outgoing()),
                        None,
                    )
                    .is_ok()
                {
                    return Some(f);
                }
            }
        }
        None
    }
}

/// Runs the flow the spec names.
pub(super) async fn run(
    spec: &Spec,
    hooks: &mut dyn Hooks,
    channel: Channel,
    ctx: &Ctx,
    cfg: &EngineConfig,
) -> SessionOutcome {
    let Channel { tx, rx } = channel;
    let mut run = Run {
        spec,
        ctx,
        cfg,
        tx,
        rx,
        sent: 0,
        received: 0,
        round: None,
        transcript_hash: None,
        audit_passed: None,
    };
    ctx.sink.snapshot(obj([
        ("phase", Value::from("waiting_peer")),
        ("role", Value::from(ctx.role.as_str())),
        ("protocol_id", Value::from(spec.protocol_id())),
        (
            "protocol_name",
            Value::from(spec.name().unwrap_or_default()),
        ),
        ("control_mode", Value::from(ctx.control_mode.as_str())),
        (
            "started_at",
            Value::Number(crate::json::Number::Float(now_epoch())),
        ),
    ]));
    if !hooks.supported_control_modes().contains(&ctx.control_mode) {
        let e = HookError::Invalid(format!(
            "control mode {} is not supported by this protocol",
            ctx.control_mode
        ));
        return run.stop(Stop::from(e), hooks).await;
    }
    if let Err(e) = hooks.init(ctx).await {
        return run.stop(Stop::from(e), hooks).await;
    }
    let result = match spec.flow_mode() {
        "session_loop" => session_loop(&mut run, hooks).await,
        "simultaneous_round" => simultaneous_round(&mut run, hooks).await,
        "request_response" => request_response(&mut run, hooks).await,
        "mental_poker" => mental_poker::mental_poker(&mut run, hooks).await,
        "authoritative_realtime" => realtime::realtime(&mut run, hooks).await,
        other => Err(Stop::from(HookError::Invalid(format!(
            "flow mode {other} is not supported by this engine yet"
        )))),
    };
    match result {
        Ok(Ending {
            completed,
            reason,
            winner,
            error,
        }) => run.finish(completed, reason, winner, error).await,
        Err(stop) => run.stop(stop, hooks).await,
    }
}

/// Runs a free-mode (chat) side; local lines come from `source`.
pub(super) async fn run_free(
    spec: &Spec,
    hooks: &mut dyn Hooks,
    channel: Channel,
    ctx: &Ctx,
    cfg: &EngineConfig,
    source: &mut dyn super::ChatSource,
) -> SessionOutcome {
    let Channel { tx, rx } = channel;
    let mut run = Run {
        spec,
        ctx,
        cfg,
        tx,
        rx,
        sent: 0,
        received: 0,
        round: None,
        transcript_hash: None,
        audit_passed: None,
    };
    if let Err(e) = hooks.init(ctx).await {
        return run.stop(Stop::from(e), hooks).await;
    }
    match free(&mut run, hooks, source).await {
        Ok(Ending {
            completed,
            reason,
            winner,
            error,
        }) => run.finish(completed, reason, winner, error).await,
        Err(stop) => run.stop(stop, hooks).await,
    }
}

struct Ending {
    completed: bool,
    reason: &'static str,
    winner: Option<String>,
    /// What happened, for an `abort` the hooks chose: the `error` frame our
    /// side sent (its reason and message) and the peer frame it answered.
    error: Option<String>,
}

fn reason_of(r: &HookResult) -> &'static str {
    if r.abort { "abort" } else { "completed" }
}

/// The detail of an ending the hooks chose: for an abort, what our side
/// answered (`sent`, an `error` frame or another) to the peer's frame `got`
/// (None: our side acted on its own); nothing for a natural end.
fn abort_detail(r: &HookResult, sent: Option<&Map>, got: Option<&Map>) -> Option<String> {
    if !r.abort && r.completed {
        return None;
    }
    Some(hooks_ended(sent, got))
}

/// Why the hooks ended a session early, in words: the `error` frame's
/// reason (and message) when our side sent one, and the peer frame it
/// answered.
fn hooks_ended(sent: Option<&Map>, got: Option<&Map>) -> String {
    let answering = got
        .map(|g| match action_of(g) {
            "" => " in answer to the peer's frame".to_owned(),
            a => format!(" in answer to the peer's '{a}'"),
        })
        .unwrap_or_default();
    match sent {
        Some(frame) if action_of(frame) == "error" => {
            let code = frame
                .get("reason")
                .or_else(|| frame.get("error_code"))
                .map(Value::py_str)
                .unwrap_or_else(|| "error".into());
            let message = frame
                .get("message")
                .or_else(|| frame.get("detail"))
                .map(|m| format!(" ({})", m.py_str()))
                .unwrap_or_default();
            format!("sent error {code}{message}{answering}")
        }
        Some(frame) => format!(
            "the protocol's hooks ended the session after sending '{}'{answering}",
            action_of(frame)
        ),
        None => format!("the protocol's hooks ended the session{answering}"),
    }
}

async fn session_loop(run: &mut Run<'_>, hooks: &mut dyn Hooks) -> Result<Ending, Stop> {
    let ctx = run.ctx;
    match ctx.role {
        super::Role::Host => {
            let join = run.recv(hooks).await?;
            if action_of(&join) == "error" {
                return Err(Stop::PeerError(join));
            }
            opening_frame(run.spec, 0, "guest_to_host", &join)?;
            let ready = hooks.host_handle_join(ctx, &join).await?;
            let Some(resp) = ready.response.clone() else {
                return Err(Stop::from(HookError::Invalid(
                    "host join hook did not return a ready response".into(),
                )));
            };
            run.send(resp.clone(), hooks).await?;
            if ready.completed || ready.abort {
                return Ok(Ending {
                    completed: ready.completed,
                    reason: reason_of(&ready),
                    winner: winner_of(&[Some(&resp)]),
                    error: abort_detail(&ready, Some(&resp), Some(&join)),
                });
            }
            loop {
                let msg = run.recv(hooks).await?;
                if action_of(&msg) == "error" {
                    return Err(Stop::PeerError(msg));
                }
                let r = hooks.host_handle(ctx, &msg).await?;
                match r.response.clone() {
                    Some(resp) => {
                        run.send(resp.clone(), hooks).await?;
                        if r.completed || r.abort {
                            return Ok(Ending {
                                completed: r.completed,
                                reason: reason_of(&r),
                                winner: winner_of(&[Some(&resp)]),
                                error: abort_detail(&r, Some(&resp), Some(&msg)),
                            });
                        }
                    }
                    None => {
                        return Ok(Ending {
                            completed: r.completed,
                            reason: if r.completed { "completed" } else { "abort" },
                            winner: None,
                            error: abort_detail(&r, None, Some(&msg)),
                        });
                    }
                }
            }
        }
        super::Role::Guest => {
            let join = hooks.guest_join_message(ctx).await?;
            run.send(join, hooks).await?;
            let ready = run.recv(hooks).await?;
            if action_of(&ready) == "error" {
                return Err(Stop::PeerError(ready));
            }
            opening_frame(run.spec, 1, "host_to_guest", &ready)?;
            hooks.guest_handle_ready(ctx, &ready).await?;
            let Some(first) = hooks.guest_first_action(ctx).await? else {
                return Ok(Ending {
                    completed: false,
                    reason: "abort",
                    winner: None,
                    error: Some("the protocol's hooks chose no first move".into()),
                });
            };
            run.send(first, hooks).await?;
            loop {
                let msg = run.recv(hooks).await?;
                if action_of(&msg) == "error" {
                    return Err(Stop::PeerError(msg));
                }
                let r = hooks.guest_handle(ctx, &msg).await?;
                match r.response.clone() {
                    Some(resp) => {
                        run.send(resp.clone(), hooks).await?;
                        if r.completed || r.abort {
                            return Ok(Ending {
                                completed: r.completed,
                                reason: reason_of(&r),
                                winner: winner_of(&[Some(&resp), Some(&msg)]),
                                error: abort_detail(&r, Some(&resp), Some(&msg)),
                            });
                        }
                    }
                    None => {
                        return Ok(Ending {
                            completed: r.completed,
                            reason: if r.completed { "completed" } else { "abort" },
                            winner: winner_of(&[Some(&msg)]),
                            error: abort_detail(&r, None, Some(&msg)),
                        });
                    }
                }
            }
        }
    }
}

/// A session loop opens with the exchange its first phase names (`join`,
/// then `ready`): a valid frame of another kind there (a `guess` before any
/// `join`) is out of order, not a join to read numbers from. Specs whose
/// first phase does not name a single-action message at exchange `i` in
/// `direction` are not checked.
fn opening_frame(spec: &Spec, i: usize, direction: &str, got: &Map) -> Result<(), Stop> {
    let step = spec
        .get("flow")
        .and_then(|f| f.get("phases"))
        .and_then(Value::as_array)
        .and_then(|p| p.first())
        .and_then(|p| p.get("exchange"))
        .and_then(Value::as_array)
        .and_then(|x| x.get(i));
    let Some(name) = step
        .filter(|x| x.get("direction").and_then(Value::as_str) == Some(direction))
        .and_then(|x| x.get("message"))
        .and_then(Value::as_str)
    else {
        return Ok(());
    };
    let single = spec
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|ms| {
            ms.iter()
                .find(|m| m.get("name").and_then(Value::as_str) == Some(name))
        })
        .and_then(|m| m.get("fields"))
        .and_then(|f| f.get("action"))
        .and_then(|a| a.get("values"))
        .and_then(Value::as_array)
        .is_some_and(|v| v.len() == 1 && v[0].as_str() == Some(name));
    if single && action_of(got) != name {
        return Err(Stop::Unexpected {
            error: format!("expected '{name}', got '{}'", action_of(got)),
        });
    }
    Ok(())
}
