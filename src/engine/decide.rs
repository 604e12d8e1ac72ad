//! Local decisions: where a protocol asks "what do we play now?".
//!
//! A protocol computes its automatic value, then asks the [`Decider`] for
//! the window (`round: 3`, `attempt: 2`, …). The control mode decides what
//! happens (reference semantics): autonomous never asks; hybrid takes an
//! explicit decision when one is there and legal, else the automatic value;
//! human waits for an explicit decision and fails the session when none
//! arrives in time or it is illegal. The file-backed decision bus of the
//! session runtime is one `Decider`; tests and `protocol test` use the
//! in-memory ones here.

use crate::json::{Map, Value};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::sync::Mutex;

/// How a local side is steered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlMode {
    /// The protocol's own logic decides; nobody is asked.
    Autonomous,
    /// Automatic value unless an explicit decision arrives in the window.
    Hybrid,
    /// Every decision comes from outside; none in time ends the session.
    Human,
}

impl ControlMode {
    pub const ALL: [ControlMode; 3] = [
        ControlMode::Autonomous,
        ControlMode::Hybrid,
        ControlMode::Human,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ControlMode::Autonomous => "autonomous",
            ControlMode::Hybrid => "hybrid",
            ControlMode::Human => "human",
        }
    }

    /// Parses a mode name; `coach` is the reference's deprecated alias of human.
    pub fn parse(s: &str) -> Option<ControlMode> {
        match s {
            "autonomous" => Some(ControlMode::Autonomous),
            "hybrid" => Some(ControlMode::Hybrid),
            "human" | "coach" => Some(ControlMode::Human),
            _ => None,
        }
    }
}

impl std::str::FromStr for ControlMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ControlMode::parse(s)
            .ok_or_else(|| format!("unknown control mode '{s}' (autonomous, hybrid, human)"))
    }
}

impl std::fmt::Display for ControlMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One decision window: which key it matches (`round`, `attempt`, `turn`,
/// `setup`, …), the value of that key, and the automatic decision body.
#[derive(Debug, Clone)]
pub struct Window {
    pub match_key: &'static str,
    pub match_value: Value,
    /// The decision the protocol would take on its own.
    pub auto: Map,
    /// Field holding the decided value (`choice`, `number`, …); empty when
    /// the whole body is the value.
    pub value_field: &'static str,
}

/// What a decider answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// An explicit decision body (the protocol still checks it is legal).
    Explicit(Map),
    /// No explicit decision: use the automatic one.
    Auto,
}

/// Why no decision could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("no decision for {match_key}={match_value} before the deadline")]
    Timeout {
        match_key: String,
        match_value: String,
    },
    #[error("decisions are unavailable: {0}")]
    Unavailable(String),
}

/// A source of local decisions for one session side.
#[async_trait]
pub trait Decider: Send + Sync {
    /// Asks for the decision of `w` under `mode` (never called for autonomous).
    async fn decide(&self, mode: ControlMode, w: &Window) -> Result<Decided, DecisionError>;
    /// Writes out whatever the decider keeps behind (the session ended).
    fn flush(&self) {}
}

/// Always the automatic value; human mode has nobody to ask and fails.
pub struct AutoDecider;

#[async_trait]
impl Decider for AutoDecider {
    async fn decide(&self, mode: ControlMode, w: &Window) -> Result<Decided, DecisionError> {
        match mode {
            ControlMode::Human => Err(DecisionError::Unavailable(format!(
                "human mode needs a decision source for {}={}",
                w.match_key,
                w.match_value.py_str()
            ))),
            _ => Ok(Decided::Auto),
        }
    }
}

/// Decisions queued in advance, taken in order (tests, scripted play). An
/// empty queue answers `Auto` in hybrid mode and times out in human mode.
#[derive(Default)]
pub struct ScriptedDecider {
    queue: Mutex<VecDeque<Map>>,
    /// Windows asked for, in order: `(match_key, match_value)`.
    pub asked: Mutex<Vec<(String, Value)>>,
}

impl ScriptedDecider {
    pub fn new(decisions: impl IntoIterator<Item = Map>) -> Self {
        ScriptedDecider {
            queue: Mutex::new(decisions.into_iter().collect()),
            asked: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl Decider for ScriptedDecider {
    async fn decide(&self, mode: ControlMode, w: &Window) -> Result<Decided, DecisionError> {
        if let Ok(mut a) = self.asked.lock() {
            a.push((w.match_key.to_owned(), w.match_value.clone()));
        }
        let next = self.queue.lock().ok().and_then(|mut q| q.pop_front());
        match (next, mode) {
            (Some(d), _) => Ok(Decided::Explicit(d)),
            (None, ControlMode::Human) => Err(DecisionError::Timeout {
                match_key: w.match_key.to_owned(),
                match_value: w.match_value.py_str(),
            }),
            (None, _) => Ok(Decided::Auto),
        }
    }
}
