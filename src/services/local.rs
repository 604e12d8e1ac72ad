//! A whole session in one process: host and guest over an in-memory
//! channel. This is `palaver protocol test`, and the harness the engine's
//! tests and benchmarks use.

use crate::engine::{
    self, Channel, ChatSource, ControlMode, Ctx, Decider, EngineConfig, EventSink, Hooks, Role,
    SessionOutcome, Strategy,
};
use crate::json::Map;
use crate::spec::Spec;
use std::sync::Arc;

/// How one side of a local session is driven.
pub struct Side {
    pub hooks: Box<dyn Hooks>,
    pub control_mode: ControlMode,
    pub decider: Arc<dyn Decider>,
    pub strategy: Arc<Strategy>,
    pub sink: Arc<dyn EventSink>,
    /// Free mode only: where this side's chat lines come from.
    pub chat: Option<Box<dyn ChatSource>>,
    pub seed: Option<u64>,
    /// mental_poker: the session id, identity and session key to bind.
    pub binding: engine::MatchBinding,
}

impl Side {
    /// An autonomous side reporting to `sink`.
    pub fn auto(hooks: Box<dyn Hooks>, sink: Arc<dyn EventSink>) -> Side {
        Side {
            hooks,
            control_mode: ControlMode::Autonomous,
            decider: Arc::new(engine::AutoDecider),
            strategy: Arc::new(Strategy::default()),
            sink,
            chat: None,
            seed: None,
            binding: engine::MatchBinding::default(),
        }
    }

    fn ctx(&mut self, role: Role, options: &Map) -> Ctx {
        let ctx = Ctx::new(role, self.control_mode, options.clone())
            .with_decider(self.decider.clone())
            .with_strategy(self.strategy.clone())
            .with_sink(self.sink.clone())
            .with_binding(std::mem::take(&mut self.binding));
        match self.seed {
            Some(s) => ctx.with_seed(s),
            None => ctx,
        }
    }
}

/// Plays host against guest to the end of the session.
pub async fn play(
    spec: &Spec,
    options: &Map,
    cfg: &EngineConfig,
    mut host: Side,
    mut guest: Side,
) -> (SessionOutcome, SessionOutcome) {
    let (hc, gc) = Channel::memory_pair();
    // A realtime guest measures the round trip before it joins: pongs must
    // be read while it waits, so both ends read in the background.
    let (hc, gc) = if spec.flow_mode() == "authoritative_realtime" {
        (hc.pumped(), gc.pumped())
    } else {
        (hc, gc)
    };
    let (hctx, gctx) = (
        host.ctx(Role::Host, options),
        guest.ctx(Role::Guest, options),
    );
    if spec.flow_mode() == "free" {
        let mut no_lines =
            engine::ScriptedChat::new(Vec::<String>::new(), std::time::Duration::ZERO);
        let mut hsrc = host.chat.take();
        let mut gsrc = guest.chat.take();
        let hs: &mut dyn ChatSource = match hsrc.as_deref_mut() {
            Some(s) => s,
            None => &mut no_lines,
        };
        let mut no_lines_g =
            engine::ScriptedChat::new(Vec::<String>::new(), std::time::Duration::ZERO);
        let gs: &mut dyn ChatSource = match gsrc.as_deref_mut() {
            Some(s) => s,
            None => &mut no_lines_g,
        };
        return tokio::join!(
            engine::run_free(spec, host.hooks.as_mut(), hc, &hctx, cfg, hs),
            engine::run_free(spec, guest.hooks.as_mut(), gc, &gctx, cfg, gs),
        );
    }
    tokio::join!(
        engine::run(spec, host.hooks.as_mut(), hc, &hctx, cfg),
        engine::run(spec, guest.hooks.as_mut(), gc, &gctx, cfg),
    )
}

/// Plays one side against a remote peer over `channel` to the end of the
/// session (P2P host and join).
pub async fn play_remote(
    spec: &Spec,
    options: &Map,
    cfg: &EngineConfig,
    mut side: Side,
    role: Role,
    channel: Channel,
) -> SessionOutcome {
    let ctx = side.ctx(role, options);
    if spec.flow_mode() == "free" {
        let mut no_lines =
            engine::ScriptedChat::new(Vec::<String>::new(), std::time::Duration::ZERO);
        let mut src = side.chat.take();
        let s: &mut dyn ChatSource = match src.as_deref_mut() {
            Some(s) => s,
            None => &mut no_lines,
        };
        return engine::run_free(spec, side.hooks.as_mut(), channel, &ctx, cfg, s).await;
    }
    engine::run(spec, side.hooks.as_mut(), channel, &ctx, cfg).await
}
