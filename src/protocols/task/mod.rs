//! trusted-agent-task-v1 (session_loop, a service): one device hands a task
//! to another's agent, follows its steps, sends it notes, moves artifacts
//! both ways and acknowledges the result.
//!
//! On the generic engine the reference's hooks (aigenora 0.1.4) play a short
//! exchange, and so do these: the guest joins with a `status_query` for the
//! task of the `collab_task_id` option (`demo-task` without it) and asks once
//! more as its first action; the host answers each with `task_status`, and
//! the session completes with the second answer (no winner). The guest
//! completes on whatever the host answers.
//!
//! A host with the `collab_data_dir` option answers from a real task service
//! instead ([`service::TaskService`], its ledger under that dir), for the
//! guest device `engine-guest`: the join's answer (an `error` ends the
//! session there, completed, as the reference's does); each later message is
//! answered by the service, and `result_ack` completes the session. Where the
//! reference's host raises on a refused later message (and its session
//! fails), palaver sends the `error` frame and ends the session unfinished.

pub mod service;
pub mod store;
pub mod transfer;
pub mod view;

use super::str_field;
use crate::engine::{ControlMode, Ctx, Dir, HookError, HookResult, Hooks, HostMetadata, Role};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;
use service::TaskService;
use std::path::PathBuf;
use view::TaskView;

/// The task a generic-engine guest asks about without `collab_task_id`.
pub const DEMO_TASK: &str = "demo-task";
/// The source device of every task a generic-engine session submits.
pub const ENGINE_GUEST: &str = "engine-guest";

#[derive(Default)]
pub struct TrustedAgentTask {
    task_id: String,
    service: Option<TaskService>,
    view: TaskView,
}

/// `~` and `~/…` as the user's home, as Python's `expanduser` reads them.
fn expand_home(raw: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match raw.strip_prefix('~') {
        Some("") => home().unwrap_or_else(|| PathBuf::from(raw)),
        Some(rest) if rest.starts_with('/') => match home() {
            Some(h) => h.join(rest.trim_start_matches('/')),
            None => PathBuf::from(raw),
        },
        _ => PathBuf::from(raw),
    }
}

impl TrustedAgentTask {
    fn status_query(&self) -> Map {
        obj! { "action" => "status_query", "task_id" => self.task_id.as_str(), "after_event_id" => 0 }
    }

    /// The generic answer of a host without a task service.
    fn plain_status(&self, msg: &Map) -> Map {
        let asked = msg.get("task_id").filter(|v| v.truthy());
        let id = asked
            .map(Value::py_str)
            .unwrap_or_else(|| self.task_id.clone());
        obj! {
            "action" => "task_status", "task_id" => id, "state" => "received", "revision" => 0,
            "events" => Vec::<Value>::new(), "notes" => Vec::<Value>::new(),
        }
    }

    /// Folds a frame into the task view and writes it to the snapshot.
    fn note(&mut self, ctx: &Ctx, frame: &Map) {
        self.view.absorb(frame);
        let summary = match (&self.view.state, self.view.revision) {
            (Some(s), Some(r)) => format!("task {}: {s} (revision {r})", self.view.task_id),
            _ => format!("task {}: {}", self.view.task_id, str_field(frame, "action")),
        };
        ctx.sink.snapshot(obj! {
            "task" => self.view.to_value(),
            "last_event" => super::last_event(summary, obj! { "action" => str_field(frame, "action") }),
        });
    }

    /// The service's answer, then any dispatch it made possible. A failing
    /// dispatch stays in the service's diagnostics.
    fn serve(&mut self, msg: &Map) -> Result<Map, Map> {
        let Some(svc) = self.service.as_mut() else {
            return Err(service::ServiceError {
                code: service::Code::Internal,
                detail: "no task service".into(),
            }
            .wire());
        };
        let answer = svc.handle(msg, ENGINE_GUEST).map_err(|e| e.wire());
        let _ = svc.dispatch_queued();
        answer
    }
}

#[async_trait]
impl Hooks for TrustedAgentTask {
    fn supported_control_modes(&self) -> &'static [ControlMode] {
        &ControlMode::ALL
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Trusted Agent Task".into(),
            tags: "collab,trusted-agent-task".into(),
            invite_type: "supply".into(),
            default_options: Map::new(),
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        self.task_id = ctx
            .options
            .get("collab_task_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEMO_TASK)
            .to_owned();
        self.view = TaskView::new(&self.task_id);
        self.service = None;
        if ctx.role == Role::Host
            && let Some(dir) = ctx.options.get("collab_data_dir").filter(|v| v.truthy())
        {
            let dir = expand_home(&dir.py_str());
            let svc = TaskService::open(&dir).map_err(|e| {
                HookError::Invalid(format!(
                    "the task service cannot open {}: {}",
                    dir.display(),
                    e.detail
                ))
            })?;
            self.service = Some(svc);
        }
        ctx.sink.snapshot(obj! { "task" => self.view.to_value() });
        Ok(())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        self.note(ctx, join);
        if self.service.is_some() {
            return Ok(match self.serve(join) {
                Ok(answer) => {
                    self.note(ctx, &answer);
                    HookResult::send(answer)
                }
                Err(error) => {
                    self.note(ctx, &error);
                    HookResult::finish(error)
                }
            });
        }
        let answer = self.plain_status(join);
        self.note(ctx, &answer);
        Ok(HookResult::send(answer))
    }

    async fn host_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        self.note(ctx, msg);
        if self.service.is_none() {
            let answer = self.plain_status(msg);
            self.note(ctx, &answer);
            return Ok(HookResult::finish(answer));
        }
        Ok(match self.serve(msg) {
            Ok(answer) => {
                self.note(ctx, &answer);
                if str_field(msg, "action") == "result_ack" {
                    HookResult::finish(answer)
                } else {
                    HookResult::send(answer)
                }
            }
            Err(error) => {
                self.note(ctx, &error);
                HookResult::abort_with(error)
            }
        })
    }

    async fn guest_join_message(&mut self, ctx: &Ctx) -> Result<Map, HookError> {
        let q = self.status_query();
        self.note(ctx, &q);
        Ok(q)
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        self.note(ctx, ready);
        Ok(())
    }

    async fn guest_first_action(&mut self, ctx: &Ctx) -> Result<Option<Map>, HookError> {
        let q = self.status_query();
        self.note(ctx, &q);
        Ok(Some(q))
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        self.note(ctx, msg);
        Ok(HookResult::done())
    }

    fn display(&self, msg: &Map, _dir: Dir) -> Option<String> {
        let id = str_field(msg, "task_id");
        Some(match str_field(msg, "action") {
            "status_query" => format!("status of task {id}?"),
            "task_status" => format!(
                "task {id}: {} (revision {}), {} events, {} notes",
                str_field(msg, "state"),
                msg.get("revision").map(Value::py_str).unwrap_or_default(),
                msg.get("events")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len),
                msg.get("notes")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len),
            ),
            "task_submit" => format!("submit task {id}"),
            "task_received" => format!("task {id} received: {}", str_field(msg, "state")),
            "error" => format!("error: {}", str_field(msg, "error_code")),
            "receipt" => format!("task {id} result: {}", str_field(msg, "result_state")),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests;
