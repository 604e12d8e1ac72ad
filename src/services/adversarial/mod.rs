//! The adversarial catalogue behind `palaver protocol test --adversarial`:
//! scripted peers that misbehave on purpose (malformed JSON, unknown
//! fields, wrong direction, wrong round, forged reveals, replayed commits,
//! oversized frames, premature ends, lies about the board, silence) against
//! a real palaver side running the native hooks.
//!
//! Every case must end the palaver side cleanly: one `session_ended` with
//! the expected reason, no panic, no hang.
//!
//! Here: the scripted peer ([`Adversary`]) and how a case runs; the cases
//! themselves are in `catalogue`.

mod catalogue;
mod cheats;

/// The whole catalogue: the scripted peers, then the card-game cheats.
pub fn catalogue() -> Vec<Case> {
    let mut all = catalogue::cases();
    all.extend(cheats::cases());
    all
}

use crate::engine::channel::Receiver;
use crate::engine::{
    self, Channel, ControlMode, Ctx, EngineConfig, MemorySink, Role, ScriptedChat, SessionOutcome,
};
use crate::json::{self, Map, Value};
use crate::library;
use crate::protocols::native_hooks_for_alias;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The misbehaving peer's end of the channel.
pub struct Adversary {
    tx: engine::channel::Sender,
    rx: Receiver,
}

impl Adversary {
    /// Sends a frame given as JSON text (as it is, so it may be invalid).
    async fn raw(&mut self, line: &str) {
        let _ = self.tx.send_raw(line.to_owned()).await;
    }

    /// The victim's next frame, or None once it has gone.
    async fn next(&mut self) -> Option<Map> {
        tokio::time::timeout(Duration::from_secs(5), self.rx.recv())
            .await
            .ok()?
            .ok()
    }

    /// The victim's next frame with this action (skips others).
    async fn until(&mut self, action: &str) -> Option<Map> {
        loop {
            let m = self.next().await?;
            if m.get("action").and_then(Value::as_str) == Some(action) {
                return Some(m);
            }
        }
    }

    async fn close(&mut self) {
        self.tx.close().await;
    }

    /// Keeps the line open without saying anything until the victim leaves.
    async fn silent(&mut self) {
        while self.next().await.is_some() {}
    }
}

type Script = fn(Adversary) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// One adversarial case.
pub struct Case {
    pub name: &'static str,
    pub alias: &'static str,
    /// The palaver side under attack.
    pub victim: Role,
    pub options: &'static str,
    /// Acceptable end reasons of the victim.
    pub expect: &'static [&'static str],
    script: Script,
    /// The shortest peer timeout the case is fair under (a cheating card
    /// player first makes its RSA key and sealed table, as an honest one
    /// does).
    min_peer_timeout: Duration,
}

/// What happened in one case.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CaseReport {
    pub name: &'static str,
    pub alias: &'static str,
    pub victim: Role,
    pub outcome: SessionOutcome,
    /// The end was one of the expected reasons, reported exactly once.
    pub passed: bool,
    pub detail: String,
}
/// The alias of cases that apply to any protocol.
pub const ANY: &str = "*";

/// The cases for a protocol: its own, then the generic ones.
pub fn cases_for(alias: Option<&str>) -> Vec<Case> {
    catalogue()
        .into_iter()
        .filter(|c| c.alias == ANY || Some(c.alias) == alias)
        .collect()
}

/// Runs one case of a bundled protocol (or a generic case against rps-v1).
pub async fn run_case(case: &Case, peer_timeout: Duration) -> CaseReport {
    let alias = if case.alias == ANY {
        "rps-v1"
    } else {
        case.alias
    };
    let (Some(spec), Some(hooks)) = (library::bundled_spec(alias), native_hooks_for_alias(alias))
    else {
        return fail(case, "no bundled protocol with native hooks");
    };
    run_case_on(case, spec, hooks, peer_timeout).await
}

/// Runs one case against a palaver side playing `spec` with `hooks`.
pub async fn run_case_on(
    case: &Case,
    spec: &crate::spec::Spec,
    mut hooks: Box<dyn crate::engine::Hooks>,
    peer_timeout: Duration,
) -> CaseReport {
    let options: Map = json::parse_str(case.options)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let peer_timeout = peer_timeout.max(case.min_peer_timeout);
    let (ours, theirs) = Channel::memory_pair();
    let sink = Arc::new(MemorySink::default());
    let ctx = Ctx::new(case.victim, ControlMode::Autonomous, options)
        .with_sink(sink.clone())
        .with_seed(11);
    let cfg = EngineConfig {
        peer_timeout: Some(peer_timeout),
        ..Default::default()
    };
    let adversary = Adversary {
        tx: theirs.tx,
        rx: theirs.rx,
    };
    let script = (case.script)(adversary);
    let victim = async {
        if spec.flow_mode() == "free" {
            let mut quiet = ScriptedChat::new(Vec::<String>::new(), Duration::ZERO);
            engine::run_free(spec, hooks.as_mut(), ours, &ctx, &cfg, &mut quiet).await
        } else {
            engine::run(spec, hooks.as_mut(), ours, &ctx, &cfg).await
        }
    };
    // The script ends when the victim has gone; bound the whole case.
    let both = async { tokio::join!(victim, script).0 };
    let outcome = match tokio::time::timeout(peer_timeout * 4 + Duration::from_secs(10), both).await
    {
        Ok(o) => o,
        Err(_) => return fail(case, "the case did not finish: the palaver side hung"),
    };
    let ended = sink
        .kinds()
        .iter()
        .filter(|k| **k == "session_ended")
        .count();
    let passed = case.expect.contains(&outcome.reason.as_str()) && ended == 1 && !outcome.completed;
    let detail = format!(
        "ended with {}{}",
        outcome.reason,
        outcome
            .error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    );
    CaseReport {
        name: case.name,
        alias: case.alias,
        victim: case.victim,
        outcome,
        passed,
        detail,
    }
}

fn fail(case: &Case, why: &str) -> CaseReport {
    CaseReport {
        name: case.name,
        alias: case.alias,
        victim: case.victim,
        outcome: SessionOutcome {
            completed: false,
            reason: "harness_error".into(),
            error: Some(why.into()),
            winner: None,
            frames_sent: 0,
            frames_received: 0,
            transcript_hash: None,
            audit_passed: None,
        },
        passed: false,
        detail: why.into(),
    }
}
