//! The decision bus: `decision/decisions.jsonl` (the only input), with
//! `state.json` (the open window), `finalized.json` (closed windows) and
//! `consumed.jsonl` (hybrid bookkeeping), in the reference's formats.
//!
//! Semantics follow the reference: hybrid takes the highest-priority,
//! latest unconsumed matching decision within `min_think_seconds` or falls
//! back; human waits for `release_at`, then takes the last matching line,
//! and fails at `deadline_at`. Two improvements: a decision submitted
//! without a match key is bound to the window open at the time (the
//! reference drops it silently), and a submission in this process wakes the
//! waiting window at once instead of at the next poll.

use super::coalesce::{Coalesced, GrowingObject, PrettyObject};
use super::files::{self, Tail};
use super::state::StateSink;
use crate::engine::{ControlMode, Decided, Decider, DecisionError, EventSink, Window};
use crate::json::{Map, Value};
use crate::limits;
use crate::obj;
use crate::utc::iso_now;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Keys that name a decision window in a decision body, in lookup order.
pub const MATCH_KEYS: [&str; 5] = ["round", "turn", "attempt", "action_seq", "setup"];

/// How often a window looks at the file for decisions from other processes.
pub const POLL: Duration = Duration::from_millis(20);

/// The reference's `time.monotonic()` on Linux (seconds since boot), used
/// for `release_at`/`deadline_at` in state.json.
pub fn mono_now() -> f64 {
    static BASE: OnceLock<(Instant, f64)> = OnceLock::new();
    let (i0, m0) = BASE.get_or_init(|| {
        let uptime = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok())
            })
            .unwrap_or(0.0);
        (Instant::now(), uptime)
    });
    m0 + i0.elapsed().as_secs_f64()
}

/// In-process wake-ups, one per decision dir.
fn notifier(dir: &Path) -> Arc<Notify> {
    static MAP: OnceLock<Mutex<HashMap<PathBuf, Arc<Notify>>>> = OnceLock::new();
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let map = MAP.get_or_init(Default::default);
    let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
    m.entry(key)
        .or_insert_with(|| Arc::new(Notify::new()))
        .clone()
}

/// What a submission came to.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Submitted {
    pub ok: bool,
    /// `ok` or `rejected`.
    pub status: &'static str,
    /// `decision_finalized`, `match_key_required`, `duplicate_idempotency`.
    pub reason: Option<&'static str>,
    pub match_key: Option<String>,
    pub match_value: Option<Value>,
    pub decision_id: Option<String>,
    /// The line as written (with `_meta`).
    #[serde(skip)]
    pub record: Option<Map>,
}

/// Who submits and how (the reference's gateway arguments).
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    pub origin: String,
    pub agent_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub require_match_key: bool,
}

/// The key of a closed window in finalized.json.
pub fn finalized_key(match_key: &str, match_value: &Value) -> String {
    format!("{match_key}:{}", match_value.py_str())
}

/// Whether window `match_key=match_value` is closed in `decision_dir`.
pub fn is_finalized(decision_dir: &Path, match_key: &str, match_value: &Value) -> bool {
    files::read_json_object(&decision_dir.join("finalized.json"))
        .is_some_and(|f| f.contains_key(&finalized_key(match_key, match_value)))
}

/// Submits a decision to an engine dir, as `palaver session decide` and the
/// console do: finds the window (the body's match key, else the open window
/// in state.json, whose key is then written into the line), refuses a
/// finalized window, and appends the line with its `_meta`.
pub fn submit(child: &Path, body: Map, opts: &SubmitOptions) -> std::io::Result<Submitted> {
    submit_caused_by(child, body, opts, None)
}

/// [`submit`] for a decision a whisper caused: its id goes into the line's
/// `_meta.caused_by_whisper_id`.
pub fn submit_caused_by(
    child: &Path,
    body: Map,
    opts: &SubmitOptions,
    whisper_id: Option<&str>,
) -> std::io::Result<Submitted> {
    let dir = child.join("decision");
    let mut body = body;
    let from_body = MATCH_KEYS.iter().find_map(|k| {
        body.get(k)
            .filter(|v| !v.is_null())
            .map(|v| ((*k).to_owned(), v.clone()))
    });
    let found = from_body.or_else(|| {
        let state = files::read_json_object(&dir.join("state.json"))?;
        let k = state.get("match_key")?.as_str()?.to_owned();
        let v = state.get("match_value").filter(|v| !v.is_null())?.clone();
        // Bind the decision to that window on disk, so every reader
        // (palaver's or the reference's) can match it.
        body.insert(k.clone(), v.clone());
        Some((k, v))
    });
    let rejected = |reason, found: Option<(String, Value)>| Submitted {
        ok: false,
        status: "rejected",
        reason: Some(reason),
        match_key: found.as_ref().map(|f| f.0.clone()),
        match_value: found.map(|f| f.1),
        decision_id: None,
        record: None,
    };
    if opts.require_match_key && found.is_none() {
        return Ok(rejected("match_key_required", None));
    }
    if let Some((k, v)) = &found
        && is_finalized(&dir, k, v)
    {
        return Ok(rejected("decision_finalized", found));
    }
    if let (Some(agent), Some(key)) = (&opts.agent_id, &opts.idempotency_key) {
        for rec in files::read_jsonl(&dir.join("decisions.jsonl")).iter().rev() {
            let meta = rec.get("_meta");
            if meta.and_then(|m| m.get("agent_id")).and_then(Value::as_str) == Some(agent)
                && meta
                    .and_then(|m| m.get("idempotency_key"))
                    .and_then(Value::as_str)
                    == Some(key)
            {
                return Ok(Submitted {
                    ok: true,
                    status: "ok",
                    reason: Some("duplicate_idempotency"),
                    match_key: found.as_ref().map(|f| f.0.clone()),
                    match_value: found.map(|f| f.1),
                    decision_id: meta.and_then(|m| m.get("decision_id")).map(Value::py_str),
                    record: None,
                });
            }
        }
    }
    let id = format!("dec_{}", hex::encode(rand::random::<[u8; 8]>()));
    let opt = |o: &Option<String>| o.as_deref().map(Value::from).unwrap_or(Value::Null);
    body.insert(
        "_meta",
        Value::Object(obj! {
            "decision_id" => id.as_str(), "origin" => opts.origin.as_str(), "agent_id" => opt(&opts.agent_id),
            "idempotency_key" => opt(&opts.idempotency_key),
            "caused_by_whisper_id" => whisper_id.map(Value::from).unwrap_or(Value::Null),
            "target_policy" => Value::Null, "request_ts" => iso_now(),
        }),
    );
    files::append_line(&dir.join("decisions.jsonl"), &Value::Object(body.clone()))?;
    notifier(&dir).notify_waiters();
    Ok(Submitted {
        ok: true,
        status: "ok",
        reason: None,
        match_key: found.as_ref().map(|f| f.0.clone()),
        match_value: found.map(|f| f.1),
        decision_id: Some(id),
        record: Some(body),
    })
}

struct Records {
    tail: Tail,
    /// Every parsed line, in file order (index = the reference's line number).
    all: Vec<Map>,
    consumed: HashSet<String>,
}

/// A session side's decision bus.
pub struct DecisionBus {
    dir: PathBuf,
    sink: Arc<StateSink>,
    role: &'static str,
    options: Map,
    /// The spec's timing block, when it applies (mode not `none`).
    timing: Option<Map>,
    /// `spec.decision.timeout_seconds` (default 120).
    timeout: f64,
    records: Mutex<Records>,
    notify: Arc<Notify>,
    /// decision/state.json: the open window.
    state: Coalesced<PrettyObject>,
    /// decision/finalized.json: every closed window.
    finalized: Coalesced<GrowingObject>,
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(crate::json::Number::Int(i)) => Some(*i as f64),
        Value::Number(crate::json::Number::Float(f)) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

impl DecisionBus {
    /// A bus over a session's engine dir, writing events through `sink`.
    pub fn new(
        sink: Arc<StateSink>,
        role: crate::engine::Role,
        options: Map,
        spec: &crate::spec::Spec,
    ) -> DecisionBus {
        let dir = sink.dir.decision_dir();
        // A dir that cannot be made shows as the first failed write.
        let _ = std::fs::create_dir_all(&dir);
        let consumed = files::read_jsonl(&dir.join("consumed.jsonl"))
            .iter()
            .filter_map(|r| {
                r.get("decision_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        let timing = spec
            .get("timing")
            .and_then(Value::as_object)
            .filter(|t| t.get("mode").and_then(Value::as_str) != Some("none"))
            .cloned();
        let timeout =
            num(spec.get("decision").and_then(|d| d.get("timeout_seconds"))).unwrap_or(120.0);
        DecisionBus {
            notify: notifier(&dir),
            state: Coalesced::new(dir.join("state.json"), PrettyObject(Map::new())),
            finalized: Coalesced::new(
                dir.join("finalized.json"),
                GrowingObject::load(&dir.join("finalized.json")),
            ),
            dir,
            sink,
            role: role.as_str(),
            options,
            timing,
            timeout,
            records: Mutex::new(Records {
                tail: Tail::new(),
                all: Vec::new(),
                consumed,
            }),
        }
    }

    fn refresh(&self) -> std::sync::MutexGuard<'_, Records> {
        let mut r = super::lock(&self.records);
        let new = r.tail.poll(&self.dir.join("decisions.jsonl"));
        r.all.extend(new);
        r
    }

    /// Does `rec` belong to the window? Its match key equals the window's,
    /// or it carries no match key at all and arrived while the window was
    /// open (`opened_at` = number of lines then).
    fn matches(rec: &Map, idx: usize, key: &str, value: &Value, opened_at: usize) -> bool {
        match rec.get(key) {
            Some(v) => v.py_eq(value),
            None => idx >= opened_at && !MATCH_KEYS.iter().any(|k| rec.contains_key(k)),
        }
    }

    fn decision_id(rec: &Map, idx: usize) -> String {
        if let Some(id) = rec
            .get("_meta")
            .and_then(|m| m.get("decision_id"))
            .and_then(Value::as_str)
        {
            return id.to_owned();
        }
        let h = crate::json::canonical::sha256_hex(crate::json::canonical::to_vec(&Value::Object(
            rec.clone(),
        )));
        format!("legacy:{idx}:{}", &h[..16])
    }

    fn priority(rec: &Map) -> u8 {
        match rec
            .get("_meta")
            .and_then(|m| m.get("origin"))
            .and_then(Value::as_str)
        {
            Some("policy_runner" | "script_runner") => 50,
            Some(o) if !o.is_empty() => 100,
            _ => 0,
        }
    }

    fn publish(&self, key: &str, value: &Value, mode: &str, release: f64, deadline: f64) {
        let state = obj! {
            "match_key" => key, "match_value" => value.clone(), "mode" => mode,
            "release_at" => release, "deadline_at" => deadline, "waiting_for" => "decision",
        };
        self.state.update(|s| s.0 = state);
        self.sink.event(
            "local_decision_window_started",
            obj! { "match_key" => key, "match_value" => value.clone(), "mode" => mode, "release_at" => release, "deadline_at" => deadline },
            None,
        );
    }

    fn finalize(&self, key: &str, value: &Value, reason: &str) {
        let entry = Value::Object(
            obj! { "reason" => reason, "ts" => mono_now(), "match_key" => key, "match_value" => value.clone() },
        );
        self.finalized
            .update(|f| f.insert(finalized_key(key, value), entry));
    }

    fn mark(&self, r: &mut Records, id: String, key: &str, value: &Value, reason: &str) {
        let line = obj! {
            "decision_id" => id.as_str(), "match_key" => key, "match_value" => value.clone(),
            "consumer_id" => format!("hybrid:{}", self.role), "reason" => reason, "ts" => iso_now(),
        };
        // Kept in memory whatever happens on disk: a decision is never used
        // twice in this process; a failed line is said in the log.
        if let Err(e) = files::append_line(&self.dir.join("consumed.jsonl"), &Value::Object(line)) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "consumed.jsonl could not be appended");
        }
        r.consumed.insert(id);
    }

    /// Hybrid: the best unconsumed matching decision, marking it consumed
    /// and the others superseded. `reread`: first read what was appended to
    /// decisions.jsonl since the last look (false only right after a look,
    /// when nothing of ours was written since).
    fn consume(&self, key: &str, value: &Value, opened_at: usize, reread: bool) -> Option<Map> {
        let mut r = if reread {
            self.refresh()
        } else {
            super::lock(&self.records)
        };
        let mut cands: Vec<(u8, usize, String)> = r
            .all
            .iter()
            .enumerate()
            .filter(|(i, rec)| Self::matches(rec, *i, key, value, opened_at))
            .map(|(i, rec)| (Self::priority(rec), i, Self::decision_id(rec, i)))
            .filter(|(_, _, id)| !r.consumed.contains(id))
            .collect();
        cands.sort();
        let (_, winner, wid) = cands.pop()?;
        let rec = r.all[winner].clone();
        self.mark(&mut r, wid, key, value, "consumed");
        for (_, _, id) in cands {
            self.mark(&mut r, id, key, value, "superseded");
        }
        Some(rec)
    }

    /// An unconsumed decision for this window that a person (or another
    /// tool) wrote, not a policy runner: a one-shot policy leaves it be.
    fn explicit_decision_present(&self, key: &str, value: &Value) -> bool {
        let r = self.refresh();
        r.all.iter().enumerate().any(|(i, rec)| {
            rec.get(key).is_some_and(|v| v.py_eq(value))
                && Self::priority(rec) == 100
                && !r.consumed.contains(&Self::decision_id(rec, i))
        })
    }

    /// Human: the last matching line in file order.
    fn latest(&self, key: &str, value: &Value, opened_at: usize) -> Option<Map> {
        let r = self.refresh();
        r.all
            .iter()
            .enumerate()
            .rev()
            .find(|(i, rec)| Self::matches(rec, *i, key, value, opened_at))
            .map(|(_, m)| m.clone())
    }

    /// Waits for a submission or the next poll, whichever first.
    async fn wait(&self, until: Instant) {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let _ = tokio::time::timeout((until - now).min(POLL), self.notify.notified()).await;
    }

    fn think(&self, key: &str, timing_key: &str) -> Option<f64> {
        num(self.options.get(key))
            .or_else(|| self.timing.as_ref().and_then(|t| num(t.get(timing_key))))
    }

    async fn hybrid(&self, w: &Window) -> Decided {
        let (key, value) = (w.match_key, &w.match_value);
        // Options were checked against limits::THINK before the session
        // started; clamping here keeps a value that slipped past from
        // panicking or overflowing the clock.
        let min_think =
            limits::THINK.clamp(num(self.options.get("min_think_seconds")).unwrap_or(0.0));
        let now = mono_now();
        let opened_at = self.refresh().all.len();
        self.publish(key, value, "hybrid", now, now + min_think);
        // decisions.jsonl was just read for `opened_at`: the first look
        // reads it again only if an intent was turned into a decision.
        let mut reread = self.materialize_intents(w);
        let until = Instant::now() + limits::THINK.saturate(min_think);
        loop {
            let found = self.consume(key, value, opened_at, reread);
            reread = true;
            if let Some(d) = found {
                self.finalize(key, value, "consumed");
                let origin = d
                    .get("_meta")
                    .and_then(|m| m.get("origin"))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.sink.event(
                    "local_decision_consumed",
                    obj! { "match_key" => key, "match_value" => value.clone(), "decision" => d.clone(), "origin" => origin },
                    None,
                );
                return Decided::Explicit(d);
            }
            if Instant::now() >= until {
                break;
            }
            self.wait(until).await;
        }
        self.finalize(key, value, "fallback");
        self.sink.event(
            "local_decision_fallback",
            obj! { "match_key" => key, "match_value" => value.clone(), "reason" => "no_decision" },
            None,
        );
        Decided::Auto
    }

    /// Whisper intents waiting for this window (intervention_intents.jsonl,
    /// written by `session whisper` when no window was open): a one-shot
    /// value becomes this window's decision, as the reference materializes
    /// it (origin `intent_materialize`, tied to its whisper). A one-shot
    /// policy ("counter their last move next round") runs on the window's
    /// [`PolicyContext`] and its value becomes the decision (origin
    /// `policy_runner`) unless a person's decision is already there; where
    /// the protocol offers no context it fails `unsupported_context`, as the
    /// reference's does, so it never lingers as pending.
    ///
    /// True when a decision was written (decisions.jsonl grew).
    fn materialize_intents(&self, w: &Window) -> bool {
        let (key, value) = (w.match_key, &w.match_value);
        let mut wrote = false;
        let child = self.sink.dir.child.clone();
        let store = super::whisper_log::IntentStore::in_dir(&child);
        for intent in store.pending_for_window(value) {
            let Some(id) = intent.get("intent_id").and_then(Value::as_str) else {
                continue;
            };
            let meta = intent.get("_meta");
            let meta_str = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let fail = |reason: &str| {
                let _ = store.mark(id, "failed", Some(reason));
                self.sink.event(
                    "intent_failed",
                    obj! { "intent_id" => id, "reason" => reason },
                    None,
                );
            };
            let policy = intent.get("policy").filter(|p| !p.is_null());
            let mut body = obj! { key => value.clone() };
            if let Some(policy) = policy {
                if self.explicit_decision_present(key, value) {
                    let _ = store.mark(id, "materialized", Some("explicit_decision_present"));
                    self.sink.event(
                        "intent_materialized",
                        obj! { "intent_id" => id, "reason" => "explicit_decision_present" },
                        None,
                    );
                    continue;
                }
                let Some(ctx) = &w.policy else {
                    fail("unsupported_context");
                    continue;
                };
                let name = policy.get("policy").and_then(Value::as_str).unwrap_or("");
                match ctx.run(name) {
                    Ok(v) => body.insert(ctx.value_field, Value::from(v)),
                    Err(reason) => {
                        fail(reason);
                        continue;
                    }
                };
            } else {
                let Some(fields) = intent.get("value").and_then(Value::as_object) else {
                    continue;
                };
                for (k, v) in fields.iter() {
                    body.insert(k, v.clone());
                }
            }
            let origin = if policy.is_some() {
                "policy_runner"
            } else {
                "intent_materialize"
            };
            let opts = SubmitOptions {
                origin: origin.into(),
                agent_id: meta_str("agent_id"),
                idempotency_key: None,
                require_match_key: true,
            };
            let decision = body.clone();
            match submit_caused_by(
                &child,
                body,
                &opts,
                meta_str("caused_by_whisper_id").as_deref(),
            ) {
                Ok(done) if done.ok => {
                    wrote = true;
                    let decision_id = done.decision_id.map_or(Value::Null, Value::from);
                    let why = if policy.is_some() {
                        "policy_decision_written"
                    } else {
                        "decision_written"
                    };
                    let _ = store.mark(id, "materialized", Some(why));
                    let mut data = obj! {
                        "intent_id" => id, "decision_id" => decision_id.clone(),
                        "match_key" => key, "match_value" => value.clone(),
                    };
                    if policy.is_some() {
                        data.insert("origin", Value::from(origin));
                    }
                    self.sink.event("intent_materialized", data, None);
                    if policy.is_some() {
                        self.sink.event(
                            "policy_generated",
                            obj! {
                                "match_key" => key, "match_value" => value.clone(), "decision" => decision,
                                "decision_id" => decision_id, "origin" => origin, "reason" => Value::Null,
                                "source" => "intent",
                            },
                            None,
                        );
                    }
                }
                Ok(done) => fail(done.reason.unwrap_or("submit_failed")),
                Err(e) => fail(&format!("exception:{}", e.kind())),
            }
        }
        wrote
    }

    async fn human(&self, w: &Window) -> Result<Decided, DecisionError> {
        let (key, value) = (w.match_key, &w.match_value);
        let min_think = limits::THINK.clamp(
            self.think("min_think_seconds", "min_think_seconds")
                .unwrap_or(0.0),
        );
        // Python's `or`: a zero maximum falls back to the bus timeout.
        let max_think = limits::THINK
            .clamp(
                self.think("max_think_seconds", "max_think_seconds")
                    .filter(|m| *m > 0.0)
                    .unwrap_or(self.timeout),
            )
            .max(min_think);
        let (mono, epoch) = (mono_now(), files::epoch_now());
        let (release, deadline) = (mono + min_think, mono + max_think);
        self.sink.snapshot(obj! { "timing" => obj! {
            "match_key" => key, "match_value" => value.clone(), "release_at" => release, "deadline_at" => deadline,
            "release_at_epoch" => epoch + min_think, "deadline_at_epoch" => epoch + max_think, "phase" => "waiting",
        }});
        let opened_at = self.refresh().all.len();
        self.publish(key, value, "human", release, deadline);
        let t0 = Instant::now();
        let release_i = t0 + limits::THINK.saturate(min_think);
        let deadline_i = t0 + limits::THINK.saturate(max_think);
        let mut seen: Option<Map> = None;
        let result = loop {
            let latest = self.latest(key, value, opened_at);
            let now = Instant::now();
            if now < release_i {
                if let Some(l) = &latest
                    && seen.as_ref() != Some(l)
                {
                    let kind = if seen.is_none() {
                        "local_decision_ready"
                    } else {
                        "local_decision_updated"
                    };
                    self.sink.event(kind, obj! { "match_key" => key, "match_value" => value.clone(), "decision" => l.clone() }, None);
                    seen = Some(l.clone());
                }
                self.wait(release_i).await;
                continue;
            }
            if let Some(l) = latest {
                self.finalize(key, value, "release");
                self.sink.event(
                    "local_decision_finalized",
                    obj! { "match_key" => key, "match_value" => value.clone(), "reason" => "release", "decision" => l.clone() },
                    None,
                );
                break Ok(Decided::Explicit(l));
            }
            if now >= deadline_i {
                self.finalize(key, value, "timeout");
                break Err(DecisionError::Timeout {
                    match_key: key.to_owned(),
                    match_value: value.py_str(),
                });
            }
            self.wait(deadline_i).await;
        };
        self.sink.snapshot(obj! { "timing" => Map::new() });
        result
    }
}

#[async_trait]
impl Decider for DecisionBus {
    fn flush(&self) {
        self.state.flush();
        self.finalized.flush();
    }

    async fn decide(&self, mode: ControlMode, w: &Window) -> Result<Decided, DecisionError> {
        match mode {
            ControlMode::Autonomous => Ok(Decided::Auto),
            ControlMode::Hybrid => Ok(self.hybrid(w).await),
            ControlMode::Human => self.human(w).await,
        }
    }
}
