//! The protocol engine: drives one side of a session over a [`Channel`],
//! validates every frame against the spec, and reports what happens.
//!
//! Frame sequences follow the reference engine exactly so that a palaver
//! peer and a reference peer can play each other. Unlike the reference, a
//! peer that misbehaves (invalid, malformed, oversized or out-of-turn
//! frames, a forged reveal, silence) never crashes anything: the session
//! ends with a recorded reason, an `error` frame is sent where the spec
//! declares one, and the caller gets a typed [`SessionOutcome`].

pub mod channel;
pub mod commit;
pub mod decide;
pub mod evidence_log;
pub mod external;
mod flows;
pub mod group;
pub mod hooks;
pub mod mental_poker;
pub mod policy_script;
pub mod realtime;
pub mod scaffold;
pub mod whisper;

pub use channel::{Channel, ChannelError, Liveness, Sender};
pub use decide::{
    AutoDecider, ControlMode, Decided, Decider, DecisionError, PolicyContext, ScriptedDecider,
    Window,
};
pub use hooks::{ChatSource, HookError, HookResult, Hooks, HostMetadata, ScriptedChat};

use crate::json::{Map, Value};
use crate::spec::Spec;
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// Which side of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Host,
    Guest,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Host => "host",
            Role::Guest => "guest",
        }
    }

    pub fn peer(self) -> Role {
        match self {
            Role::Host => Role::Guest,
            Role::Guest => Role::Host,
        }
    }

    /// The spec direction of frames this side sends.
    pub fn outgoing(self) -> &'static str {
        match self {
            Role::Host => "host_to_guest",
            Role::Guest => "guest_to_host",
        }
    }

    /// The spec direction of frames this side receives.
    pub fn incoming(self) -> &'static str {
        self.peer().outgoing()
    }
}

/// Which way a frame went, from this side's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Sent,
    Received,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Sent => "sent",
            Dir::Received => "received",
        }
    }
}

/// One thing that happened in a session, in the shape of the reference's
/// event lines: a type, a data object and an optional one-line summary.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: &'static str,
    pub data: Map,
    pub summary: Option<String>,
}

/// Where a session reports: events, snapshot updates, detail records.
/// The session runtime writes them to the state dir; tests keep them.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
    /// Merges `patch` into the session snapshot (top-level keys replace).
    fn snapshot(&self, patch: Map);
    /// Appends a protocol-owned detail record.
    fn detail(&self, record: Map);
    /// Writes out whatever the sink keeps behind (the session ended).
    fn flush(&self) {}
    /// The engine state dir the session is written to, when it is (where
    /// a strategy's policy scripts are looked up).
    fn state_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// Keeps everything in memory.
#[derive(Default)]
pub struct MemorySink {
    pub events: Mutex<Vec<Event>>,
    pub snapshot: Mutex<Map>,
    pub details: Mutex<Vec<Map>>,
}

impl MemorySink {
    /// The kinds of the events so far, in order.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.events
            .lock()
            .map(|e| e.iter().map(|e| e.kind).collect())
            .unwrap_or_default()
    }

    /// The `protocol_message` frames so far: (direction, action).
    pub fn frames(&self) -> Vec<(String, String)> {
        self.events
            .lock()
            .map(|evs| {
                evs.iter()
                    .filter(|e| e.kind == "protocol_message")
                    .map(|e| {
                        let dir = e
                            .data
                            .get("direction")
                            .map(Value::py_str)
                            .unwrap_or_default();
                        let action = e
                            .data
                            .get("msg")
                            .and_then(|m| m.get("action"))
                            .map(Value::py_str)
                            .unwrap_or_default();
                        (dir, action)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn snapshot_value(&self, key: &str) -> Option<Value> {
        self.snapshot.lock().ok().and_then(|s| s.get(key).cloned())
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: Event) {
        if let Ok(mut e) = self.events.lock() {
            e.push(event);
        }
    }

    fn snapshot(&self, patch: Map) {
        if let Ok(mut s) = self.snapshot.lock() {
            for (k, v) in patch.iter() {
                s.insert(k, v.clone());
            }
        }
    }

    fn detail(&self, record: Map) {
        if let Ok(mut d) = self.details.lock() {
            d.push(record);
        }
    }
}

/// Counts what it is given and keeps nothing (benchmarks, fire-and-forget runs).
#[derive(Default)]
pub struct CountingSink {
    pub events: std::sync::atomic::AtomicU64,
    pub snapshots: std::sync::atomic::AtomicU64,
    pub details: std::sync::atomic::AtomicU64,
}

impl EventSink for CountingSink {
    fn emit(&self, _event: Event) {
        self.events
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn snapshot(&self, _patch: Map) {
        self.snapshots
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn detail(&self, _record: Map) {
        self.details
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Returns a new strategy object when its source changed since the last
/// call (the session runtime watches strategy.json this way).
pub type StrategyLoader = Box<dyn Fn() -> Option<Map> + Send + Sync>;

/// The strategy object the automatic logic reads (strategy.json). The
/// engine only reads it; the session runtime persists it and, through a
/// loader, picks up changes other processes make.
#[derive(Default)]
pub struct Strategy {
    current: RwLock<Map>,
    loader: Option<StrategyLoader>,
}

impl Strategy {
    pub fn new(initial: Map) -> Self {
        Strategy {
            current: RwLock::new(initial),
            loader: None,
        }
    }

    /// A strategy refreshed from `loader` whenever it reports a change.
    pub fn with_loader(loader: StrategyLoader) -> Self {
        let s = Strategy {
            current: RwLock::new(Map::new()),
            loader: Some(loader),
        };
        s.refresh();
        s
    }

    fn refresh(&self) {
        if let Some(load) = &self.loader
            && let Some(m) = load()
            && let Ok(mut c) = self.current.write()
        {
            *c = m;
        }
    }

    pub fn get(&self) -> Map {
        self.refresh();
        self.current.read().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn set(&self, m: Map) {
        if let Ok(mut c) = self.current.write() {
            *c = m;
        }
    }
}

/// What a `mental_poker` match binds to: the session id and the identity
/// keys (both enter the OT contexts and the receipt), plus a session RSA
/// key started ahead of time. All optional: without them a match uses the
/// reference's defaults (session id `mp-session`, an ephemeral identity, no
/// check of the peer's receipt key).
#[derive(Default)]
pub struct MatchBinding {
    pub session_id: Option<String>,
    pub identity: Option<Arc<crate::identity::KeyPair>>,
    /// The peer's identity key from the handshake; its receipt must be
    /// signed by it.
    pub peer_public_key: Option<String>,
    pub rsa: Mutex<Option<mental_poker::pending::PendingKey>>,
    /// A deliberate misbehaviour (the adversarial catalogue only).
    pub fault: Option<mental_poker::fault::Fault>,
}

/// Everything a protocol's hooks may use while a session runs.
pub struct Ctx {
    pub role: Role,
    pub control_mode: ControlMode,
    /// The invitation options in force.
    pub options: Map,
    pub decider: Arc<dyn Decider>,
    pub strategy: Arc<Strategy>,
    pub sink: Arc<dyn EventSink>,
    /// mental_poker: session id, identity and session key.
    pub binding: MatchBinding,
    rng: Mutex<StdRng>,
}

impl Ctx {
    pub fn new(role: Role, control_mode: ControlMode, options: Map) -> Ctx {
        Ctx {
            role,
            control_mode,
            options,
            decider: Arc::new(AutoDecider),
            strategy: Arc::new(Strategy::default()),
            sink: Arc::new(MemorySink::default()),
            binding: MatchBinding::default(),
            rng: Mutex::new(StdRng::from_os_rng()),
        }
    }

    pub fn with_decider(mut self, d: Arc<dyn Decider>) -> Self {
        self.decider = d;
        self
    }

    pub fn with_strategy(mut self, s: Arc<Strategy>) -> Self {
        self.strategy = s;
        self
    }

    pub fn with_sink(mut self, s: Arc<dyn EventSink>) -> Self {
        self.sink = s;
        self
    }

    pub fn with_binding(mut self, b: MatchBinding) -> Self {
        self.binding = b;
        self
    }

    /// Makes the automatic choices reproducible.
    pub fn with_seed(self, seed: u64) -> Self {
        if let Ok(mut r) = self.rng.lock() {
            *r = StdRng::seed_from_u64(seed);
        }
        self
    }

    /// A uniform index below `n` (n > 0) from the session's generator.
    pub fn random_below(&self, n: usize) -> usize {
        self.rng
            .lock()
            .map(|mut r| r.random_range(0..n.max(1)))
            .unwrap_or(0)
    }

    /// A uniform integer in `lo..=hi`.
    pub fn random_in(&self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        self.rng
            .lock()
            .map(|mut r| r.random_range(lo..=hi))
            .unwrap_or(lo)
    }

    /// Random bytes for nonces.
    pub fn random_bytes<const N: usize>(&self) -> [u8; N] {
        let mut b = [0u8; N];
        if let Ok(mut r) = self.rng.lock() {
            r.fill(&mut b[..]);
        }
        b
    }

    /// Emits an event.
    pub fn emit(&self, kind: &'static str, data: Map, summary: Option<String>) {
        self.sink.emit(Event {
            kind,
            data,
            summary,
        });
    }

    /// Asks for a decision under this side's control mode; `legal` checks an
    /// explicit body and returns the value to use, or why it is illegal.
    ///
    /// Autonomous returns the automatic value without asking. Hybrid uses a
    /// legal explicit decision, else the automatic value. Human requires a
    /// legal explicit decision.
    pub async fn choose(
        &self,
        window: Window,
        legal: impl Fn(&Map) -> Result<Value, String>,
    ) -> Result<Value, HookError> {
        let auto = window
            .auto
            .get(window.value_field)
            .cloned()
            .unwrap_or(Value::Null);
        if self.control_mode == ControlMode::Autonomous {
            return Ok(auto);
        }
        let answer = self.decider.decide(self.control_mode, &window).await;
        match (self.control_mode, answer) {
            (ControlMode::Hybrid, Ok(Decided::Explicit(d))) => Ok(legal(&d).unwrap_or(auto)),
            (ControlMode::Hybrid, _) => Ok(auto),
            (_, Ok(Decided::Explicit(d))) => {
                legal(&d).map_err(|reason| HookError::IllegalDecision {
                    match_key: window.match_key.to_owned(),
                    match_value: window.match_value.clone(),
                    reason,
                    decision: d,
                })
            }
            (_, Ok(Decided::Auto)) => Err(HookError::DecisionFailed(format!(
                "no decision for {}={}",
                window.match_key,
                window.match_value.py_str()
            ))),
            (_, Err(e)) => Err(HookError::DecisionFailed(e.to_string())),
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionOutcome {
    /// The protocol reached its end (server status `closed` rather than `failed`).
    pub completed: bool,
    /// `completed`, `abort`, `request_response_complete`, `peer_disconnected`,
    /// `peer_timeout`, `peer_not_reading` (our frame waited a peer timeout to
    /// be written), `invalid_frame`, `malformed_frame`, `oversized_frame`,
    /// `unexpected_frame`, `commit_mismatch`, `balance_mismatch`, `peer_error`,
    /// `human_decision_failed`, `hook_error`, `transport_error`.
    pub reason: String,
    /// Detail for the failure reasons.
    pub error: Option<String>,
    /// `host`, `guest` or `draw` when the protocol named a winner.
    pub winner: Option<String>,
    pub frames_sent: u64,
    pub frames_received: u64,
    /// mental_poker: the transcript root both sides signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_hash: Option<String>,
    /// mental_poker: whether this side's audit of the match passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_passed: Option<bool>,
}

impl SessionOutcome {
    /// One line for people: `completed: completed, winner: host`.
    pub fn line(&self) -> String {
        format!(
            "{}: {}{}, winner: {}",
            if self.completed {
                "completed"
            } else {
                "failed"
            },
            self.reason,
            self.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
            self.winner.as_deref().unwrap_or("none")
        )
    }
}

/// How to run one side.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Validate every frame, sent and received (on by default).
    pub validate: bool,
    /// Sleep between frames (the reference's `--pace`).
    pub pace: Duration,
    /// Give up on a peer silent this long.
    pub peer_timeout: Option<Duration>,
    /// authoritative_realtime host: step each tick as soon as the guest
    /// answered the last frame instead of at the tick rate's deadlines
    /// (`protocol test`, which plays as fast as the CPU allows).
    pub realtime_lockstep: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            validate: true,
            pace: Duration::ZERO,
            peer_timeout: Some(Duration::from_secs(900)),
            realtime_lockstep: false,
        }
    }
}

/// Runs one side of a session to its end. Never panics on peer input: every
/// way a session can end is a [`SessionOutcome`], also reported as a
/// `session_ended` event.
pub async fn run(
    spec: &Spec,
    hooks: &mut dyn Hooks,
    channel: Channel,
    ctx: &Ctx,
    cfg: &EngineConfig,
) -> SessionOutcome {
    flows::run(spec, hooks, channel, ctx, cfg).await
}

/// Runs one side of a free-mode (chat) session; outgoing lines come from
/// `source` (`/quit` ends the chat for both sides).
pub async fn run_free(
    spec: &Spec,
    hooks: &mut dyn Hooks,
    channel: Channel,
    ctx: &Ctx,
    cfg: &EngineConfig,
    source: &mut dyn ChatSource,
) -> SessionOutcome {
    flows::run_free(spec, hooks, channel, ctx, cfg, source).await
}

/// `winner`/`game_winner` of the first frame that names one (host, guest,
/// draw), as the reference reports results.
pub fn winner_of(frames: &[Option<&Map>]) -> Option<String> {
    for f in frames.iter().flatten() {
        for key in ["winner", "game_winner"] {
            if let Some(w) = f.get(key).and_then(Value::as_str)
                && matches!(w, "host" | "guest" | "draw")
            {
                return Some(w.to_owned());
            }
        }
    }
    None
}
