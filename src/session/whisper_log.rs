//! The whisper files of an engine dir, in the reference's formats:
//! whispers.jsonl (`id`, `ts`, `role`, `text`, `origin`, `agent_id`?),
//! whisper_acks.jsonl (`whisper_id`, `status`, `agent_id`,
//! `idempotency_key`, `ts`, `action`?, `reason_code`?, `detail`?) and
//! intervention_intents.jsonl (pending one-shot intents and their status
//! lines). Also the engine's side: seeing that a strategy or decision a
//! whisper caused has just been used, so it can be acknowledged.

use super::files;
use crate::json::canonical::{self, sha256_hex};
use crate::json::{Map, Value};
use crate::obj;
use crate::utc::iso_now;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Who may whisper.
pub const ROLES: [&str; 3] = ["user", "agent", "system"];

/// Every ack status the reference accepts.
pub const ACK_STATUSES: [&str; 13] = [
    "executed",
    "dismissed",
    "unparsed",
    "error",
    "strategy_active",
    "decision_queued",
    "intent_queued",
    "policy_active",
    "policy_generated",
    "policy_failed",
    "decision_produced",
    "hint_only",
    "rejected_finalized",
];

/// The `agent_id` of the acks a running palaver session writes.
pub const ENGINE_AGENT: &str = "engine";

fn random_hex(bytes: usize) -> String {
    let raw: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    hex::encode(raw)
}

/// `json.dumps(v, ensure_ascii=False)`: Python's default separators.
pub fn py_dumps(v: &Value) -> String {
    fn go(v: &Value, out: &mut String) {
        match v {
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    go(x, out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&canonical::to_string_ordered(&Value::from(k)));
                    out.push_str(": ");
                    go(x, out);
                }
                out.push('}');
            }
            other => out.push_str(&canonical::to_string_ordered(other)),
        }
    }
    let mut out = String::new();
    go(v, &mut out);
    out
}

/// whispers.jsonl and whisper_acks.jsonl of an engine dir.
#[derive(Debug, Clone)]
pub struct WhisperLog {
    pub path: PathBuf,
    pub acks_path: PathBuf,
}

impl WhisperLog {
    pub fn in_dir(child: &Path) -> WhisperLog {
        WhisperLog {
            path: child.join("whispers.jsonl"),
            acks_path: child.join("whisper_acks.jsonl"),
        }
    }

    /// Every whisper on file (damaged lines skipped).
    pub fn read_all(&self) -> Vec<Map> {
        files::read_jsonl(&self.path)
    }

    /// Appends a whisper with a fresh 12-hex id; `role` must be one of [`ROLES`].
    pub fn append(
        &self,
        role: &str,
        text: &str,
        origin: &str,
        agent_id: Option<&str>,
    ) -> io::Result<Map> {
        if !ROLES.contains(&role) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("role must be one of user, agent, system, got '{role}'"),
            ));
        }
        let known: HashSet<String> = self
            .read_all()
            .iter()
            .filter_map(|w| w.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let mut id = random_hex(6);
        for _ in 0..10 {
            if !known.contains(&id) {
                break;
            }
            id = random_hex(6);
        }
        let mut entry = obj! {
            "id" => id.as_str(), "ts" => iso_now(), "role" => role, "text" => text, "origin" => origin,
        };
        if let Some(a) = agent_id {
            entry.insert("agent_id", Value::from(a));
        }
        files::append_line(&self.path, &Value::Object(entry.clone()))?;
        Ok(entry)
    }

    /// Appends an ack unless the same (whisper, agent, key) is on file, in
    /// which case that line is returned.
    pub fn append_ack(&self, whisper_id: &str, status: &str, opts: &AckOptions) -> io::Result<Map> {
        if !ACK_STATUSES.contains(&status) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unknown whisper ack status '{status}'"),
            ));
        }
        let agent = opts
            .agent_id
            .as_deref()
            .filter(|a| !a.is_empty())
            .unwrap_or("anonymous");
        let key = opts.idempotency_key.clone().unwrap_or_else(|| {
            let seed = format!(
                "{whisper_id}:{agent}:{status}:{}",
                opts.reason_code.as_deref().unwrap_or("")
            );
            sha256_hex(seed)[..16].to_owned()
        });
        let s = |v: &str| Some(Value::from(v));
        for rec in files::read_jsonl(&self.acks_path) {
            if rec.get("whisper_id") == s(whisper_id).as_ref()
                && rec.get("agent_id") == s(agent).as_ref()
                && rec.get("idempotency_key") == s(&key).as_ref()
            {
                return Ok(rec);
            }
        }
        let mut ack = obj! {
            "whisper_id" => whisper_id, "status" => status, "agent_id" => agent,
            "idempotency_key" => key.as_str(), "ts" => iso_now(),
        };
        if let Some(a) = &opts.action {
            ack.insert("action", Value::from(a.as_str()));
        }
        if let Some(r) = &opts.reason_code {
            ack.insert("reason_code", Value::from(r.as_str()));
        }
        if let Some(d) = &opts.detail {
            ack.insert("detail", d.clone());
        }
        files::append_line(&self.acks_path, &Value::Object(ack.clone()))?;
        Ok(ack)
    }

    /// The newest user whisper whose text is `text`.
    pub fn find_user_text(&self, text: &str) -> Option<String> {
        self.read_all()
            .iter()
            .rev()
            .find(|w| {
                w.get("role").and_then(Value::as_str) == Some("user")
                    && w.get("text").and_then(Value::as_str).map(str::trim) == Some(text.trim())
            })
            .and_then(|w| w.get("id").and_then(Value::as_str).map(str::to_owned))
    }
}

/// The optional parts of an ack.
#[derive(Debug, Clone, Default)]
pub struct AckOptions {
    pub agent_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub action: Option<String>,
    pub reason_code: Option<String>,
    pub detail: Option<Value>,
}

/// intervention_intents.jsonl: one-shot intents waiting for their window.
#[derive(Debug, Clone)]
pub struct IntentStore {
    pub path: PathBuf,
}

/// Who queued an intent.
#[derive(Debug, Clone, Default)]
pub struct IntentOrigin<'a> {
    pub origin: &'a str,
    pub agent_id: Option<&'a str>,
    pub whisper_id: Option<&'a str>,
}

impl IntentStore {
    pub fn in_dir(child: &Path) -> IntentStore {
        IntentStore {
            path: child.join("intervention_intents.jsonl"),
        }
    }

    /// Appends a pending intent (`int_` + 16 hex) with a three-window life.
    pub fn append(&self, fields: Map, by: &IntentOrigin<'_>) -> io::Result<Map> {
        let get = |k: &str, d: Value| fields.get(k).cloned().unwrap_or(d);
        let opt = |o: Option<&str>| o.map(Value::from).unwrap_or(Value::Null);
        let rec = obj! {
            "intent_id" => format!("int_{}", random_hex(8)), "ts" => iso_now(), "status" => "pending",
            "scope" => get("scope", Value::from("once")),
            "target_policy" => get("target_policy", Value::from("next")),
            "value" => get("value", Value::Null), "policy" => get("policy", Value::Null),
            "created_match_key" => get("created_match_key", Value::Null),
            "created_match_value" => get("created_match_value", Value::Null),
            "ttl_windows" => get("ttl_windows", Value::from(3)),
            "_meta" => obj! {
                "origin" => by.origin, "agent_id" => opt(by.agent_id),
                "caused_by_whisper_id" => opt(by.whisper_id),
            },
        };
        files::append_line(&self.path, &Value::Object(rec.clone()))?;
        Ok(rec)
    }

    /// Appends a status line (`materialized`, `expired`, `failed`).
    pub fn mark(&self, intent_id: &str, status: &str, reason: Option<&str>) -> io::Result<()> {
        let mut rec = obj! {
            "intent_id" => intent_id, "ts" => iso_now(), "status" => status, "status_event" => status,
        };
        if let Some(r) = reason {
            rec.insert("reason", Value::from(r));
        }
        files::append_line(&self.path, &Value::Object(rec))
    }

    /// The pending intents aimed at window `match_value` (the reference's
    /// rule: `current` on the window it was made in, `next` within
    /// `ttl_windows` after it, or any window when either side is not an
    /// integer).
    pub fn pending_for_window(&self, match_value: &Value) -> Vec<Map> {
        let all = files::read_jsonl(&self.path);
        let mut firsts: Vec<Map> = Vec::new();
        let mut latest: std::collections::HashMap<String, String> = Default::default();
        for rec in &all {
            let Some(id) = rec.get("intent_id").and_then(Value::as_str) else {
                continue;
            };
            if rec.get("scope").is_some_and(Value::truthy)
                && !firsts
                    .iter()
                    .any(|f| f.get("intent_id").and_then(Value::as_str) == Some(id))
            {
                firsts.push(rec.clone());
            }
            if let Some(s) = rec.get("status").filter(|s| s.truthy()) {
                latest.insert(id.to_owned(), s.py_str());
            }
        }
        firsts
            .into_iter()
            .filter(|f| {
                let id = f.get("intent_id").and_then(Value::as_str).unwrap_or("");
                if latest.get(id).map(String::as_str).unwrap_or("pending") != "pending" {
                    return false;
                }
                let created = f.get("created_match_value").unwrap_or(&Value::Null);
                match f.get("target_policy").and_then(Value::as_str) {
                    Some("current") => created.py_eq(match_value),
                    Some("next") => match (created.as_i64(), match_value.as_i64()) {
                        (Some(c), Some(m)) => {
                            let ttl = f.get("ttl_windows").and_then(Value::as_i64).unwrap_or(3);
                            m.checked_sub(c).is_some_and(|o| o >= 1 && o <= ttl)
                        }
                        _ => true,
                    },
                    _ => false,
                }
            })
            .collect()
    }
}

/// One whisper acknowledged by the engine: the ack line and the event.
#[derive(Debug, Clone)]
pub struct Applied {
    pub whisper_id: String,
    pub event: Map,
}

/// Sees, in the events a running session emits, the moment a whisper's
/// strategy or decision was used, and acknowledges it once
/// (`decision_produced`, agent `engine`).
#[derive(Debug)]
pub struct AckObserver {
    child: PathBuf,
    done: Mutex<HashSet<String>>,
    /// The operator_hint last looked up without finding its whisper.
    missed_hint: Mutex<Option<String>>,
}

impl AckObserver {
    pub fn new(child: &Path) -> AckObserver {
        AckObserver {
            child: child.to_owned(),
            done: Mutex::new(HashSet::new()),
            missed_hint: Mutex::new(None),
        }
    }

    fn whisper_of_strategy(&self, strat: &Map) -> Option<String> {
        let meta_id = strat
            .get("_meta")
            .and_then(|m| m.get("caused_by_whisper_id"))
            .and_then(Value::as_str);
        if let Some(id) = meta_id {
            return Some(id.to_owned());
        }
        // A strategy that came from an operator_hint: the hooks' own reading
        // of it (`type: strategy`) or an explicit mode next to it.
        let from_hint = strat.get("type").and_then(Value::as_str) == Some("strategy");
        let explicit = strat.contains_key("operator_hint")
            && matches!(
                strat.get("mode").and_then(Value::as_str),
                Some("fixed" | "seq" | "policy")
            );
        if !from_hint && !explicit {
            return None;
        }
        let hint = match strat.get("operator_hint").and_then(Value::as_str) {
            Some(h) => h.to_owned(),
            None => files::read_json_object(&self.child.join("strategy.json"))?
                .get("operator_hint")?
                .as_str()?
                .to_owned(),
        };
        let mut missed = self.missed_hint.lock().ok()?;
        if missed.as_deref() == Some(hint.as_str()) {
            return None;
        }
        let found = WhisperLog::in_dir(&self.child).find_user_text(&hint);
        if found.is_none() {
            *missed = Some(hint);
        }
        found
    }

    /// Looks at one emitted event; writes the ack and returns the event to
    /// emit when it shows a whisper taking effect for the first time.
    pub fn observe(&self, kind: &str, data: &Map) -> Option<Applied> {
        let (id, action, match_key, match_value, result) = match kind {
            "strategy_applied" => {
                let strat = data.get("strategy")?.as_object()?;
                let id = self.whisper_of_strategy(strat)?;
                let round = data.get("round").cloned().unwrap_or(Value::Null);
                let result = data.get("result").cloned().unwrap_or(Value::Null);
                (id, "strategy", Value::from("round"), round, result)
            }
            "local_decision_consumed" => {
                let d = data.get("decision")?.as_object()?;
                let id = d
                    .get("_meta")?
                    .get("caused_by_whisper_id")?
                    .as_str()?
                    .to_owned();
                let mk = data.get("match_key").cloned().unwrap_or(Value::Null);
                let mv = data.get("match_value").cloned().unwrap_or(Value::Null);
                (id, "decide", mk, mv, Value::Object(d.clone()))
            }
            _ => return None,
        };
        if id.is_empty() || id.len() > 64 {
            return None;
        }
        {
            let mut done = self.done.lock().ok()?;
            if !done.insert(id.clone()) {
                return None;
            }
        }
        let detail = obj! {
            "match_key" => match_key.clone(), "match_value" => match_value.clone(), "result" => result.clone(),
        };
        let opts = AckOptions {
            agent_id: Some(ENGINE_AGENT.into()),
            action: Some(action.into()),
            detail: Some(Value::from(py_dumps(&Value::Object(detail)))),
            ..AckOptions::default()
        };
        WhisperLog::in_dir(&self.child)
            .append_ack(&id, "decision_produced", &opts)
            .ok()?;
        Some(Applied {
            whisper_id: id.clone(),
            event: obj! {
                "whisper_id" => id, "status" => "decision_produced", "action" => action,
                "match_key" => match_key, "match_value" => match_value, "result" => result,
            },
        })
    }
}
