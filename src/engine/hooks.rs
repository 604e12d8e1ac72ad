//! What a protocol implements: the `Hooks` the flow runners call.
//!
//! Each method corresponds to one step of a flow (see the reference's hook
//! model); a protocol implements the ones its flow mode uses. Methods are
//! async because a step may wait for a local decision.

use super::{ControlMode, Ctx, Dir};
use crate::json::{Map, Value};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::time::Duration;

/// What a hook answers: an optional frame to send, and whether the session
/// ends with it (`completed`: the protocol finished; `abort`: stop after
/// sending it, unfinished).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResult {
    pub response: Option<Map>,
    pub completed: bool,
    pub abort: bool,
}

impl HookResult {
    pub fn none() -> Self {
        HookResult::default()
    }

    pub fn send(m: Map) -> Self {
        HookResult {
            response: Some(m),
            ..Default::default()
        }
    }

    pub fn finish(m: Map) -> Self {
        HookResult {
            response: Some(m),
            completed: true,
            abort: false,
        }
    }

    pub fn abort_with(m: Map) -> Self {
        HookResult {
            response: Some(m),
            completed: false,
            abort: true,
        }
    }

    pub fn done() -> Self {
        HookResult {
            response: None,
            completed: true,
            abort: false,
        }
    }
}

/// Why a hook could not go on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookError {
    /// The peer's frame makes no sense for this protocol (beyond the schema).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A human decision that the protocol cannot use.
    #[error("illegal decision for {match_key}={}: {reason}", match_value.py_str())]
    IllegalDecision {
        match_key: String,
        match_value: Value,
        reason: String,
        decision: Map,
    },
    /// No decision arrived (human mode).
    #[error("decision failed: {0}")]
    DecisionFailed(String),
    /// This protocol does not use that step.
    #[error("the protocol has no `{0}` hook")]
    Unsupported(&'static str),
    /// An external hooks process failed.
    #[error("hooks process: {0}")]
    External(String),
    /// The options or state make the hook unable to continue.
    #[error("{0}")]
    Invalid(String),
}

/// `proto_host_metadata`: the invitation's display name, tags, type and
/// default options.
#[derive(Debug, Clone, PartialEq)]
pub struct HostMetadata {
    pub display_name: String,
    pub tags: String,
    pub invite_type: String,
    pub default_options: Map,
}

/// Where free-mode (chat) outgoing text comes from: a console, stdin, an
/// inbox file, a script.
#[async_trait]
pub trait ChatSource: Send {
    /// The next line to send; `None` when there is nothing more (the
    /// session then only listens). The text `/quit` ends the chat.
    ///
    /// Must be cancel-safe: the engine races it against incoming frames,
    /// and a cancelled call must not lose a line.
    async fn next_line(&mut self) -> Option<String>;
}

/// Lines sent one after another, each after a pause.
pub struct ScriptedChat {
    lines: VecDeque<String>,
    pause: Duration,
}

impl ScriptedChat {
    pub fn new(lines: impl IntoIterator<Item = impl Into<String>>, pause: Duration) -> Self {
        ScriptedChat {
            lines: lines.into_iter().map(Into::into).collect(),
            pause,
        }
    }
}

#[async_trait]
impl ChatSource for ScriptedChat {
    async fn next_line(&mut self) -> Option<String> {
        if self.lines.is_empty() {
            return None;
        }
        if !self.pause.is_zero() {
            tokio::time::sleep(self.pause).await;
        }
        // Taken only after the pause: a cancelled wait loses nothing.
        self.lines.pop_front()
    }
}

/// A protocol's behaviour for one side of a session.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Control modes this protocol supports.
    fn supported_control_modes(&self) -> &'static [ControlMode] {
        &ControlMode::ALL
    }

    /// Positional arguments for the hooks (`host … -- ARGS`, the
    /// reference's `extra_args`), given before [`Hooks::init`]. Only hooks
    /// programs take them; native hooks refuse any.
    fn set_extra_args(&mut self, args: Vec<String>) -> Result<(), HookError> {
        if args.is_empty() {
            Ok(())
        } else {
            Err(HookError::Invalid(format!(
                "this protocol's native hooks take no extra args ({args:?})"
            )))
        }
    }

    /// The decision schema shown by decision prompts (match key, value
    /// field, legal choices); `None` when the protocol takes no decisions.
    fn decision_schema(&self) -> Option<Map> {
        None
    }

    /// Invitation metadata for a host (after [`Hooks::prepare`]).
    fn host_metadata(&self) -> HostMetadata;

    /// Gets ready to answer [`Hooks::host_metadata`] and the other
    /// descriptive calls before a session starts (a host calls it before
    /// posting its invitation). Native hooks know this already; a hooks
    /// program is asked `describe` here.
    async fn prepare(&mut self) -> Result<(), HookError> {
        Ok(())
    }

    /// First call of a session; reads options, may ask for setup decisions.
    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError>;

    /// Host: the guest's `join` → the `ready` frame (required).
    async fn host_handle_join(&mut self, _ctx: &Ctx, _join: &Map) -> Result<HookResult, HookError> {
        Err(HookError::Unsupported("host_handle_join"))
    }

    /// Host: each later guest frame.
    async fn host_handle(&mut self, _ctx: &Ctx, _msg: &Map) -> Result<HookResult, HookError> {
        Err(HookError::Unsupported("host_handle"))
    }

    /// Guest: the first business frame.
    async fn guest_join_message(&mut self, _ctx: &Ctx) -> Result<Map, HookError> {
        Err(HookError::Unsupported("guest_join_message"))
    }

    /// Guest: the host's `ready`.
    async fn guest_handle_ready(&mut self, _ctx: &Ctx, _ready: &Map) -> Result<(), HookError> {
        Ok(())
    }

    /// Guest: the first action after `ready` (session_loop, request_response);
    /// `None` ends the guest without completing.
    async fn guest_first_action(&mut self, _ctx: &Ctx) -> Result<Option<Map>, HookError> {
        Ok(None)
    }

    /// Guest: each later host frame.
    async fn guest_handle(&mut self, _ctx: &Ctx, _msg: &Map) -> Result<HookResult, HookError> {
        Ok(HookResult::none())
    }

    /// simultaneous_round: this side's value for round `round` (0-based).
    async fn round_value(&mut self, _ctx: &Ctx, _round: u64) -> Result<Value, HookError> {
        Err(HookError::Unsupported("round_value"))
    }

    /// simultaneous_round host: both values revealed → `round_result`.
    async fn round_judge(
        &mut self,
        _ctx: &Ctx,
        _round: u64,
        _host: &Value,
        _guest: &Value,
    ) -> Result<HookResult, HookError> {
        Err(HookError::Unsupported("round_judge"))
    }

    /// simultaneous_round guest with `shadow_judge`: the result this side
    /// computes on its own, compared with the host's.
    async fn round_judge_pure(
        &mut self,
        _ctx: &Ctx,
        _round: u64,
        _host: &Value,
        _guest: &Value,
    ) -> Option<Map> {
        None
    }

    /// free: a peer frame.
    async fn on_message(&mut self, _ctx: &Ctx, _msg: &Map) {}

    /// free: a frame this side sent.
    async fn on_send(&mut self, _ctx: &Ctx, _msg: &Map) {}

    /// free: the chat ended.
    async fn on_end(&mut self, _ctx: &Ctx) {}

    /// mental_poker: the card game's rules (None: not a card game).
    fn card_game(&mut self) -> Option<&mut dyn super::mental_poker::game::CardGame> {
        None
    }

    /// authoritative_realtime: the protocol's simulation (None: not a
    /// realtime protocol).
    fn realtime(&mut self) -> Option<&mut dyn super::realtime::RealtimeRules> {
        None
    }

    /// A one-line (or few-line) human rendering of a frame.
    fn display(&self, _msg: &Map, _dir: Dir) -> Option<String> {
        None
    }
}
