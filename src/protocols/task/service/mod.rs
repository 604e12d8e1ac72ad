//! The host's task service for trusted-agent-task-v1: what a task host
//! answers to each guest message, with the reference's semantics
//! (aigenora 0.1.4 `collab/service.py`): durable receive before the answer,
//! idempotent resubmission keyed by (source device, task id, request
//! digest), artifacts acknowledged by chunk and verified by file before any
//! input is unpacked, and the task state machine of `store.rs`.
//!
//! Execution is the reference's default `file` adapter: a queued task is
//! handed to the local operator (a `TASK.md` in its task dir) and waits in
//! `waiting_local_operator`; the operator (or a worker program) finishes it
//! through [`TaskService::worker_finish`] and friends. Dispatch runs when
//! [`TaskService::dispatch_queued`] is called (the hooks call it after each
//! message), not on a timer thread.
//!
//! Wire errors carry a code from the spec's enum and a fixed text of this
//! module: a peer's values are never echoed back.

mod artifacts;
mod worker;

use super::store::{self, Store, StoreError, Task, now_ms};
use crate::json::{Map, Number, Value};
use crate::obj;
use std::path::{Path, PathBuf};

/// How late a submit may arrive after its `expires_at_ms`.
pub const CLOCK_SKEW_TOLERANCE_MS: i64 = 60_000;
/// Disk space an artifact must leave free.
pub const MIN_FREE_BYTES: u128 = 64 * 1024 * 1024;
/// Events one `task_status` carries at most.
const STATUS_EVENTS: usize = 100;
/// Notes one `task_status` carries at most.
const STATUS_NOTES: usize = 50;
/// What a stored result summary keeps, in characters.
const RESULT_SUMMARY_CHARS: usize = 60_000;
/// What `execution.summary` carries, in characters.
const EXECUTION_SUMMARY_CHARS: usize = 8_000;

/// A wire error code of the spec's `error` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidMessage,
    UnknownTask,
    StateConflict,
    IdempotencyConflict,
    StorageFull,
    PathUnsafe,
    ArtifactIncomplete,
    ArtifactUnknown,
    Unauthorized,
    MessageExpired,
    ClockSkew,
    QueueBusy,
    Adapter,
    Internal,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidMessage => "invalid_message",
            Code::UnknownTask => "unknown_task",
            Code::StateConflict => "task_state_conflict",
            Code::IdempotencyConflict => "idempotency_conflict",
            Code::StorageFull => "storage_full",
            Code::PathUnsafe => "path_unsafe",
            Code::ArtifactIncomplete => "artifact_incomplete",
            Code::ArtifactUnknown => "artifact_unknown",
            Code::Unauthorized => "unauthorized",
            Code::MessageExpired => "message_expired",
            Code::ClockSkew => "clock_skew_detected",
            Code::QueueBusy => "queue_busy",
            Code::Adapter => "adapter_error",
            Code::Internal => "internal_error",
        }
    }

    /// The fixed text sent with the code.
    pub fn text(self) -> &'static str {
        match self {
            Code::InvalidMessage => "the message does not satisfy the protocol spec",
            Code::UnknownTask => "this host has no task with that id from you",
            Code::StateConflict => "the task's state does not allow this message",
            Code::IdempotencyConflict => "that task id was submitted with another request digest",
            Code::StorageFull => "not enough free storage on this host for the artifact",
            Code::PathUnsafe => "an artifact path or chunk was refused by the host's safety checks",
            Code::ArtifactIncomplete => "the artifact is not completely received and verified",
            Code::ArtifactUnknown => "this task has no artifact with that id",
            Code::Unauthorized => "this peer may not do that here",
            Code::MessageExpired => "the message arrived after its deadline",
            Code::ClockSkew => "the clocks of the two devices differ too much",
            Code::QueueBusy => "the host's queue is busy; try again later",
            Code::Adapter => "the host's execution adapter failed",
            Code::Internal => "the host could not answer; its operator has the details",
        }
    }
}

/// A refusal: the wire code and a local-only detail.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceError {
    pub code: Code,
    pub detail: String,
}

impl ServiceError {
    fn new(code: Code, detail: impl Into<String>) -> ServiceError {
        ServiceError {
            code,
            detail: detail.into(),
        }
    }

    /// The `error` frame sent for it.
    pub fn wire(&self) -> Map {
        obj! { "action" => "error", "error_code" => self.code.as_str(), "detail" => self.code.text() }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> ServiceError {
        match e {
            StoreError::Illegal(..) => ServiceError::new(Code::StateConflict, e.to_string()),
            StoreError::NoTask => ServiceError::new(Code::UnknownTask, e.to_string()),
            _ => ServiceError::new(Code::Internal, e.to_string()),
        }
    }
}

impl From<std::io::Error> for ServiceError {
    fn from(e: std::io::Error) -> ServiceError {
        ServiceError::new(Code::Internal, format!("i/o: {e}"))
    }
}

type Answer = Result<Map, ServiceError>;

/// The spec's bound on `task_status.notes`, with room for the brackets.
const NOTES_BUDGET: usize = 524_288;
/// What one worker note or question carries at most, in UTF-8 bytes
/// (the spec's `note_text` bound).
const MAX_NOTE_BYTES: usize = 65_536 - 1024;
/// The spec's bound on `receipt.summary`, in UTF-8 bytes.
const RECEIPT_SUMMARY_BYTES: usize = 65_536;

/// `s` cut to at most `max` UTF-8 bytes, on a character boundary.
fn cut_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

fn s(m: &Map, k: &str) -> String {
    m.get(k).map(Value::py_str).unwrap_or_default()
}

fn take_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The number of things in a JSON value as Python's `len()` counts them
/// (0 for what has no length).
fn py_len(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.len(),
        Value::Object(m) => m.len(),
        Value::String(s) => s.chars().count(),
        _ => 0,
    }
}

/// Free bytes for an unprivileged writer under `dir` (its nearest existing
/// ancestor); `None` when it cannot be read.
fn free_bytes(dir: &Path) -> Option<u128> {
    let mut probe = dir;
    loop {
        if probe.exists() {
            break;
        }
        probe = probe.parent()?;
    }
    let st = nix::sys::statvfs::statvfs(probe).ok()?;
    Some(u128::from(st.blocks_available()) * u128::from(st.fragment_size()))
}

/// The task service of one data dir.
pub struct TaskService {
    data_dir: PathBuf,
    store: Store,
    /// Local operator diagnostics (never sent), the newest 500.
    diagnostics: Vec<String>,
    /// Free space as measured (tests replace it).
    free: fn(&Path) -> Option<u128>,
}

impl TaskService {
    /// The service over `data_dir`; tasks a previous run left mid-dispatch
    /// are reconciled first (never dispatched a second time blindly).
    pub fn open(data_dir: &Path) -> Result<TaskService, ServiceError> {
        let mut svc = TaskService {
            data_dir: data_dir.to_owned(),
            store: Store::new(data_dir),
            diagnostics: Vec::new(),
            free: free_bytes,
        };
        svc.recover_interrupted()?;
        Ok(svc)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn diagnostics(&self) -> &[String] {
        &self.diagnostics
    }

    #[cfg(test)]
    pub(super) fn set_free(&mut self, f: fn(&Path) -> Option<u128>) {
        self.free = f;
    }

    fn diag(&mut self, message: impl Into<String>) {
        self.diagnostics.push(take_chars(&message.into(), 800));
        if self.diagnostics.len() > 500 {
            let drop = self.diagnostics.len() - 500;
            self.diagnostics.drain(..drop);
        }
    }

    fn free_space(&self) -> u128 {
        // Unknown free space is not refused (the write itself will say).
        (self.free)(&self.data_dir).unwrap_or(u128::MAX)
    }

    /// Answers one guest message from `source`: the frame to send back, or
    /// the refusal.
    pub fn handle(&mut self, msg: &Map, source: &str) -> Answer {
        match msg.get("action").map(Value::py_str).as_deref() {
            Some("task_submit") => self.on_task_submit(msg, source),
            Some("status_query") => self.on_status_query(msg, source),
            Some("agent_note") => self.on_agent_note(msg, source),
            Some("artifact_offer") => self.on_artifact_offer(msg, source),
            Some("artifact_put") => self.on_artifact_put(msg, source),
            Some("artifact_pull") => self.on_artifact_pull(msg, source),
            Some("result_ack") => self.on_result_ack(msg, source),
            Some("cancel_request") => self.on_cancel_request(msg, source),
            Some("input_submit") => self.on_input_submit(msg, source),
            _ => Err(ServiceError::new(Code::Internal, "unhandled action")),
        }
    }

    fn require(&self, msg: &Map, source: &str) -> Result<Task, ServiceError> {
        let id = s(msg, "task_id");
        self.store
            .get_task(source, &id)?
            .ok_or_else(|| ServiceError::new(Code::UnknownTask, "no such task for this source"))
    }

    fn on_task_submit(&mut self, msg: &Map, source: &str) -> Answer {
        let task_id = s(msg, "task_id");
        let digest = s(msg, "request_digest");
        let goal = s(msg, "task_goal");
        let class = msg
            .get("execution_class")
            .map(Value::py_str)
            .unwrap_or_else(|| "assist".into());
        let expires = msg.get("expires_at_ms");
        match expires {
            Some(Value::Number(Number::Int(exp))) => {
                let late = now_ms().saturating_sub(*exp);
                if late > CLOCK_SKEW_TOLERANCE_MS {
                    return Err(ServiceError::new(
                        Code::MessageExpired,
                        format!("deadline passed {late} ms ago"),
                    ));
                }
            }
            // Beyond 64 bits: only a negative deadline has passed.
            Some(Value::Number(Number::BigInt(b))) if b.starts_with('-') => {
                return Err(ServiceError::new(
                    Code::MessageExpired,
                    "deadline long past",
                ));
            }
            _ => {}
        }
        if let Some(existing) = self.store.get_task(source, &task_id)? {
            if existing.request_digest != digest {
                return Err(ServiceError::new(
                    Code::IdempotencyConflict,
                    "same task id, another digest",
                ));
            }
            return Ok(obj! {
                "action" => "task_received", "task_id" => task_id.as_str(),
                "accepted" => existing.state != "rejected", "state" => existing.state.as_str(),
                "reason_code" => "duplicate", "revision" => existing.revision,
            });
        }
        let manifest = msg.get("input_manifest").and_then(Value::as_object);
        let expected_files: usize = manifest
            .and_then(|m| m.get("artifacts"))
            .and_then(Value::as_array)
            .map(|arts| {
                arts.iter()
                    .filter_map(Value::as_object)
                    .map(|a| a.get("files").map(py_len).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0);
        if expected_files > 0 {
            let free = self.free_space();
            if free < MIN_FREE_BYTES {
                return Err(ServiceError::new(Code::StorageFull, format!("free={free}")));
            }
        }
        let expires_at_ms = match expires {
            Some(Value::Number(Number::Int(i))) => Some(*i),
            _ => None,
        };
        self.store.insert_task(
            source,
            &task_id,
            &digest,
            &goal,
            &class,
            expires_at_ms,
            "task received and stored",
        )?;
        if let Some(m) = manifest.filter(|m| !m.is_empty()) {
            let m = m.clone();
            self.store
                .update_task(source, &task_id, |t| t.input_manifest = Some(m))?;
        }
        let task = if expected_files > 0 {
            let summary = format!("{expected_files} input files expected");
            self.store.transition(
                source,
                &task_id,
                "waiting_inputs",
                Some(("waiting_inputs", &summary)),
                |_| {},
            )?
        } else {
            self.store.transition(
                source,
                &task_id,
                "queued",
                Some(("queued", "queued: the task needs no inputs")),
                |_| {},
            )?
        };
        Ok(obj! {
            "action" => "task_received", "task_id" => task_id.as_str(), "accepted" => true,
            "state" => task.state.as_str(), "reason_code" => "ok", "revision" => task.revision,
        })
    }

    fn on_status_query(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let after = match msg.get("after_event_id") {
            Some(Value::Number(Number::Int(i))) => *i,
            Some(Value::Number(Number::BigInt(b))) if !b.starts_with('-') => i64::MAX,
            Some(Value::Number(Number::BigInt(_))) => i64::MIN,
            _ => 0,
        };
        let events = self
            .store
            .events_after(source, &task.task_id, after, STATUS_EVENTS)?;
        let pending = self
            .store
            .pending_notes(source, &task.task_id, "worker", STATUS_NOTES)?;
        // The spec bounds `notes` at 512 KiB: notes past that budget stay
        // undelivered for the next query (the first always goes, cut).
        let mut notes: Vec<Value> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let mut used = 2usize;
        for n in &pending {
            let note = Value::Object(obj! {
                "note_id" => n.note_id.as_str(), "text" => cut_bytes(&n.text, MAX_NOTE_BYTES),
                "at" => n.created_at,
            });
            let len = crate::json::canonical::canonical_len(&note) + 1;
            if !notes.is_empty() && used + len > NOTES_BUDGET {
                break;
            }
            used += len;
            notes.push(note);
            ids.push(n.note_id.clone());
        }
        self.store
            .mark_delivered(source, &task.task_id, "worker", &ids)?;
        let mut out = obj! {
            "action" => "task_status", "task_id" => task.task_id.as_str(),
            "state" => task.state.as_str(), "revision" => task.revision,
            "events" => events.iter().map(|e| Value::Object(obj! {
                "event_id" => e.event_id, "kind" => e.kind.as_str(),
                "summary" => e.summary.as_str(), "at" => e.at,
            })).collect::<Vec<_>>(),
            "notes" => notes,
        };
        if let Some(inv) = self.store.latest_invocation(source, &task.task_id)? {
            let mut exec = obj! {
                "invocation_id" => inv.id.as_str(), "adapter" => inv.adapter.as_str(),
                "status" => inv.status.as_str(),
            };
            if let Some(sum) = task.result_summary.as_deref().filter(|x| !x.is_empty()) {
                exec.insert(
                    "summary",
                    Value::from(take_chars(sum, EXECUTION_SUMMARY_CHARS)),
                );
            }
            out.insert("execution", Value::Object(exec));
        }
        if let Some(req) = task.input_request.clone() {
            out.insert("input_request", req);
        }
        if store::is_terminal(&task.state)
            && let Some(m) = task.result_manifest.clone()
        {
            out.insert("result_manifest", m);
        }
        Ok(out)
    }

    fn on_agent_note(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let note_id = s(msg, "note_id");
        let text = s(msg, "note_text");
        let inserted =
            self.store
                .add_note(source, &task.task_id, "coordinator", &note_id, &text)?;
        if inserted {
            self.store.append_event(
                source,
                &task.task_id,
                "coordinator_note",
                "a note from the coordinator",
            )?;
        }
        Ok(obj! {
            "action" => "note_ack", "task_id" => task.task_id.as_str(),
            "note_id" => note_id.as_str(), "duplicate" => !inserted,
        })
    }

    fn on_result_ack(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let Some(result_state) = task
            .result_state
            .clone()
            .filter(|r| !r.is_empty() && store::is_terminal(&task.state))
        else {
            return Err(ServiceError::new(
                Code::StateConflict,
                "no final result to acknowledge",
            ));
        };
        self.store
            .update_task(source, &task.task_id, |t| t.result_acked = true)?;
        self.store.append_event(
            source,
            &task.task_id,
            "result_acked",
            "the coordinator acknowledged the result",
        )?;
        Ok(obj! {
            "action" => "receipt", "task_id" => task.task_id.as_str(),
            "result_state" => result_state,
            "summary" => cut_bytes(task.result_summary.as_deref().unwrap_or(""), RECEIPT_SUMMARY_BYTES),
            "result_manifest" => task.result_manifest.clone().unwrap_or(Value::Null),
        })
    }

    fn on_cancel_request(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let ack = |state: &str| {
            obj! { "action" => "cancel_ack", "task_id" => task.task_id.as_str(), "state" => state }
        };
        let state = task.state.as_str();
        if store::is_terminal(state) {
            return Ok(ack(state));
        }
        if matches!(
            state,
            "received" | "waiting_inputs" | "queued" | "waiting_local_operator"
        ) {
            self.store.transition(
                source,
                &task.task_id,
                "cancelled",
                Some(("cancelled", "cancelled before execution")),
                |_| {},
            )?;
            return Ok(ack("cancelled"));
        }
        // The file adapter cannot stop what the operator is doing.
        if state == "execution_unknown" {
            self.store.append_event(
                source,
                &task.task_id,
                "cancel_recorded",
                "cancel recorded while the execution state is unknown",
            )?;
            return Ok(ack("execution_unknown"));
        }
        self.store.transition(
            source,
            &task.task_id,
            "cancel_requested",
            Some((
                "cancel_requested",
                "stop requested; the adapter did not confirm the stop",
            )),
            |_| {},
        )?;
        Ok(ack("cancel_requested"))
    }

    fn on_input_submit(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let input_id = s(msg, "input_id");
        let answer = s(msg, "answer");
        if !task.inputs.iter().any(|(id, _, _)| *id == input_id) {
            return Err(ServiceError::new(
                Code::StateConflict,
                "no such pending input",
            ));
        }
        let t = self.store.update_task(source, &task.task_id, |t| {
            for (id, _, a) in t.inputs.iter_mut() {
                if *id == input_id {
                    *a = Some(answer.clone());
                }
            }
            t.input_request = None;
        })?;
        self.store.append_event(
            source,
            &task.task_id,
            "input_answered",
            &format!("input {input_id} answered"),
        )?;
        if task.state == "waiting_inputs" && t.inputs.iter().all(|(_, _, a)| a.is_some()) {
            self.store.transition(
                source,
                &task.task_id,
                "queued",
                Some(("queued", "inputs answered; queued")),
                |_| {},
            )?;
        }
        Ok(
            obj! { "action" => "input_ack", "task_id" => task.task_id.as_str(), "input_id" => input_id },
        )
    }
}
