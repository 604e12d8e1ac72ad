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

    /// The mode a protocol's author asks for when the user names none:
    /// the spec's `decision.mode` — `manual` (or a mode's own name, human)
    /// is human, `autonomous` autonomous, and `auto` (what every bundled
    /// protocol says), anything else or nothing the reference's default,
    /// hybrid.
    pub fn author_default(spec: &crate::spec::Spec) -> ControlMode {
        let mode = spec
            .get("decision")
            .and_then(|d| d.get("mode"))
            .and_then(Value::as_str)
            .unwrap_or("");
        match mode {
            "manual" | "human" => ControlMode::Human,
            "autonomous" => ControlMode::Autonomous,
            _ => ControlMode::Hybrid,
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
    /// What the protocol's built-in policies can read in this window (the
    /// reference's `build_decision_context`); `None` where the protocol has
    /// none or no round has been played yet.
    pub policy: Option<PolicyContext>,
}

/// The previous round from this side's view, and the protocol's built-in
/// policies over it (`mirror_previous_opponent`, `counter_previous_opponent`,
/// `repeat_own_previous`), as the reference's `run_policy` of rps and coin
/// flip answers them.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyContext {
    /// The field the policies' value goes in (`choice`).
    pub value_field: &'static str,
    /// This side's value in the previous round.
    pub own: String,
    /// The opponent's value in the previous round.
    pub opponent: String,
    /// (value, the value it beats); empty where nothing beats anything.
    pub beats: &'static [(&'static str, &'static str)],
    /// The policies this protocol runs; any other is `unsupported_policy`.
    pub policies: &'static [&'static str],
}

impl PolicyContext {
    /// The value `policy` picks, or the reason it picks none (the
    /// reference's reasons: `unsupported_policy`, `unknown_policy`,
    /// `no_counter`). The one-shot whispers' policies (`counter_once`,
    /// `mirror_once`) run as their persistent forms: the reference's rps
    /// hooks answer them `unknown_policy`, so "下一轮克制" never steers a
    /// reference session, where here it counters once as it says.
    pub fn run(&self, policy: &str) -> Result<String, &'static str> {
        let policy = match policy {
            "counter_once" => "counter_previous_opponent",
            "mirror_once" => "mirror_previous_opponent",
            p => p,
        };
        const KNOWN: [&str; 3] = [
            "mirror_previous_opponent",
            "counter_previous_opponent",
            "repeat_own_previous",
        ];
        if !self.policies.contains(&policy) {
            return Err(if KNOWN.contains(&policy) {
                "unsupported_policy"
            } else {
                "unknown_policy"
            });
        }
        match policy {
            "mirror_previous_opponent" => Ok(self.opponent.clone()),
            "counter_previous_opponent" => self
                .beats
                .iter()
                .find(|(_, beaten)| *beaten == self.opponent)
                .map(|(v, _)| (*v).to_owned())
                .ok_or("no_counter"),
            "repeat_own_previous" => Ok(self.own.clone()),
            _ => Err("unknown_policy"),
        }
    }
}

#[cfg(test)]
mod policy_tests {
    use super::PolicyContext;

    fn rps(own: &str, opp: &str) -> PolicyContext {
        PolicyContext {
            value_field: "choice",
            own: own.into(),
            opponent: opp.into(),
            beats: &[
                ("rock", "scissors"),
                ("paper", "rock"),
                ("scissors", "paper"),
            ],
            policies: &[
                "mirror_previous_opponent",
                "counter_previous_opponent",
                "repeat_own_previous",
            ],
        }
    }

    #[test]
    fn policies_pick_from_the_previous_round() {
        let c = rps("paper", "rock");
        assert_eq!(c.run("mirror_previous_opponent"), Ok("rock".into()));
        assert_eq!(c.run("counter_previous_opponent"), Ok("paper".into()));
        assert_eq!(c.run("repeat_own_previous"), Ok("paper".into()));
        assert_eq!(c.run("counter_once"), Ok("paper".into()));
        assert_eq!(c.run("mirror_once"), Ok("rock".into()));
        assert_eq!(c.run("telepathy"), Err("unknown_policy"));
        assert_eq!(rps("rock", "lizard").run("counter_once"), Err("no_counter"));
        let coin = PolicyContext {
            value_field: "choice",
            own: "heads".into(),
            opponent: "tails".into(),
            beats: &[],
            policies: &["mirror_previous_opponent"],
        };
        assert_eq!(coin.run("mirror_once"), Ok("tails".into()));
        assert_eq!(
            coin.run("counter_previous_opponent"),
            Err("unsupported_policy")
        );
        assert_eq!(coin.run("repeat_own_previous"), Err("unsupported_policy"));
    }
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

#[cfg(test)]
mod author_default_tests {
    use super::ControlMode;
    use crate::json::Value;

    #[test]
    fn the_authors_decision_mode_is_the_default_control_mode() {
        let rps = crate::library::bundled_spec("rps-v1").unwrap();
        let spec = |mode: &str| {
            let mut m = rps.doc().clone();
            m.insert("decision", Value::Object(crate::obj! { "mode" => mode }));
            crate::spec::Spec::from_value(Value::Object(m)).unwrap()
        };
        assert_eq!(
            ControlMode::author_default(&spec("manual")),
            ControlMode::Human
        );
        assert_eq!(
            ControlMode::author_default(&spec("autonomous")),
            ControlMode::Autonomous
        );
        assert_eq!(
            ControlMode::author_default(&spec("auto")),
            ControlMode::Hybrid
        );
        assert_eq!(
            ControlMode::author_default(&spec("other")),
            ControlMode::Hybrid
        );
        assert_eq!(ControlMode::author_default(rps), ControlMode::Hybrid);
    }
}
