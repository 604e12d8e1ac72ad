//! A trusted-agent-task-v1 session as the console shows it: the task's id,
//! state and revision, its steps (events) and notes, its artifacts and its
//! result — folded from the frames of the session, one at a time.
//!
//! The native hooks fold every frame they send or receive and keep the
//! result in snapshot.json under `"task"`; [`TaskView::from_snapshot`]
//! reads it back, and [`TaskView::from_frames`] rebuilds it from the
//! `protocol_message` events of a session no native hooks wrote. Pure: no
//! files, no terminal. Everything kept is bounded.

use crate::json::{Map, Value};
use crate::obj;

/// Steps kept (the newest).
pub const MAX_EVENTS: usize = 200;
/// Notes kept (the newest).
pub const MAX_NOTES: usize = 100;
/// Artifacts kept.
pub const MAX_ARTIFACTS: usize = 64;
/// Result files kept.
pub const MAX_RESULT_FILES: usize = 64;
/// Characters kept of a summary, a note or a goal.
pub const MAX_TEXT: usize = 2000;

fn cut(s: &str) -> String {
    s.chars().take(MAX_TEXT).collect()
}

fn text_of(m: &Map, k: &str) -> Option<String> {
    m.get(k).filter(|v| !v.is_null()).map(|v| cut(&v.py_str()))
}

/// One step of the task as the host reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub event_id: i64,
    pub kind: String,
    pub summary: String,
    pub at: i64,
}

/// One note: `from` is `worker` (the host's side) or `coordinator` (the
/// guest's side).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub from: String,
    pub note_id: String,
    pub text: String,
}

/// One artifact and how much of it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactState {
    pub artifact_id: String,
    pub state: String,
    pub files_complete: usize,
    pub files_total: usize,
}

/// What the console shows of a task session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskView {
    pub task_id: String,
    pub state: Option<String>,
    pub revision: Option<i64>,
    pub goal: Option<String>,
    pub execution_class: Option<String>,
    pub steps: Vec<Step>,
    pub notes: Vec<Note>,
    pub artifacts: Vec<ArtifactState>,
    /// `adapter · status` of the host's execution.
    pub execution: Option<String>,
    /// The worker's open question.
    pub question: Option<String>,
    /// (result_state, summary) once a receipt arrived.
    pub result: Option<(String, String)>,
    /// (path, size) of the result manifest.
    pub result_files: Vec<(String, i64)>,
    /// The last `error` code the host sent.
    pub error: Option<String>,
    /// The last frame's action, for the header.
    pub last_action: Option<String>,
}

fn int(m: &Map, k: &str) -> Option<i64> {
    m.get(k).and_then(Value::as_i64)
}

impl TaskView {
    pub fn new(task_id: &str) -> TaskView {
        TaskView {
            task_id: cut(task_id),
            ..TaskView::default()
        }
    }

    /// Whether the session has shown any task yet.
    pub fn is_empty(&self) -> bool {
        self.task_id.is_empty() && self.state.is_none() && self.last_action.is_none()
    }

    fn set_task_id(&mut self, m: &Map) {
        if let Some(id) = m
            .get("task_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.task_id = cut(id);
        }
    }

    fn add_step(&mut self, e: &Map) {
        let Some(id) = int(e, "event_id") else {
            return;
        };
        let step = Step {
            event_id: id,
            kind: text_of(e, "kind").unwrap_or_default(),
            summary: text_of(e, "summary").unwrap_or_default(),
            at: int(e, "at").unwrap_or(0),
        };
        match self.steps.iter_mut().find(|s| s.event_id == id) {
            Some(old) => *old = step,
            None => {
                let at = self.steps.partition_point(|s| s.event_id < id);
                self.steps.insert(at, step);
            }
        }
        if self.steps.len() > MAX_EVENTS {
            let drop = self.steps.len() - MAX_EVENTS;
            self.steps.drain(..drop);
        }
    }

    fn add_note(&mut self, from: &str, id: &str, text: &str) {
        if self.notes.iter().any(|n| n.from == from && n.note_id == id) {
            return;
        }
        self.notes.push(Note {
            from: from.to_owned(),
            note_id: cut(id),
            text: cut(text),
        });
        if self.notes.len() > MAX_NOTES {
            let drop = self.notes.len() - MAX_NOTES;
            self.notes.drain(..drop);
        }
    }

    fn set_result_manifest(&mut self, m: &Value) {
        if let Some(files) = m.get("files").and_then(Value::as_array) {
            self.result_files = files
                .iter()
                .take(MAX_RESULT_FILES)
                .filter_map(|f| {
                    Some((
                        cut(f.get_str("path")?),
                        f.get("size").and_then(Value::as_i64).unwrap_or(0),
                    ))
                })
                .collect();
        }
    }

    /// Takes in one frame of the session (sent or received).
    pub fn absorb(&mut self, m: &Map) {
        let action = m.get("action").and_then(Value::as_str).unwrap_or("");
        if action.is_empty() {
            return;
        }
        self.last_action = Some(cut(action));
        match action {
            "task_submit" => {
                self.set_task_id(m);
                self.goal = text_of(m, "task_goal");
                self.execution_class = text_of(m, "execution_class");
            }
            "status_query" | "result_ack" | "cancel_request" | "input_submit" | "artifact_pull" => {
                self.set_task_id(m)
            }
            "agent_note" => {
                self.set_task_id(m);
                let id = text_of(m, "note_id").unwrap_or_default();
                let text = text_of(m, "note_text").unwrap_or_default();
                self.add_note("coordinator", &id, &text);
            }
            "task_received" | "cancel_ack" => {
                self.set_task_id(m);
                self.state = text_of(m, "state").or(self.state.take());
                if let Some(r) = int(m, "revision") {
                    self.revision = Some(r);
                }
            }
            "task_status" => {
                self.set_task_id(m);
                self.state = text_of(m, "state");
                self.revision = int(m, "revision");
                for e in m
                    .get("events")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(e) = e.as_object() {
                        self.add_step(e);
                    }
                }
                for n in m
                    .get("notes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(n) = n.as_object() {
                        let id = text_of(n, "note_id").unwrap_or_default();
                        let text = text_of(n, "text").unwrap_or_default();
                        self.add_note("worker", &id, &text);
                    }
                }
                if let Some(x) = m.get("execution").and_then(Value::as_object) {
                    self.execution = Some(format!(
                        "{} · {}",
                        text_of(x, "adapter").unwrap_or_default(),
                        text_of(x, "status").unwrap_or_default()
                    ));
                }
                self.question = m
                    .get("input_request")
                    .and_then(Value::as_object)
                    .and_then(|q| text_of(q, "question"));
                if let Some(r) = m.get("result_manifest") {
                    self.set_result_manifest(r);
                }
            }
            "artifact_offer" | "artifact_ack" => {
                self.set_task_id(m);
                let Some(id) = text_of(m, "artifact_id") else {
                    return;
                };
                let files = m.get("files").and_then(Value::as_array);
                let total = files.map(Vec::len).unwrap_or(0);
                let complete = files
                    .into_iter()
                    .flatten()
                    .filter(|f| f.get("complete") == Some(&Value::Bool(true)))
                    .count();
                let state = text_of(m, "artifact_state").unwrap_or_else(|| "offered".into());
                let entry = ArtifactState {
                    artifact_id: id.clone(),
                    state,
                    files_complete: complete,
                    files_total: total,
                };
                if let Some(a) = self.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                    *a = entry;
                } else if self.artifacts.len() < MAX_ARTIFACTS {
                    self.artifacts.push(entry);
                }
            }
            "receipt" => {
                self.set_task_id(m);
                let state = text_of(m, "result_state").unwrap_or_default();
                self.result = Some((state, text_of(m, "summary").unwrap_or_default()));
                if let Some(r) = m.get("result_manifest") {
                    self.set_result_manifest(r);
                }
            }
            "error" => self.error = text_of(m, "error_code"),
            _ => {}
        }
    }

    /// Rebuilt from the frames of a session, in order.
    pub fn from_frames<'a>(task_id: &str, frames: impl IntoIterator<Item = &'a Map>) -> TaskView {
        let mut v = TaskView::new(task_id);
        for f in frames {
            v.absorb(f);
        }
        v
    }

    /// The `"task"` object of snapshot.json.
    pub fn to_value(&self) -> Value {
        let opt = |s: &Option<String>| s.clone().map(Value::from).unwrap_or(Value::Null);
        Value::Object(obj! {
            "task_id" => self.task_id.as_str(),
            "state" => opt(&self.state),
            "revision" => self.revision.map(Value::from).unwrap_or(Value::Null),
            "goal" => opt(&self.goal),
            "execution_class" => opt(&self.execution_class),
            "steps" => self.steps.iter().map(|s| Value::Object(obj! {
                "event_id" => s.event_id, "kind" => s.kind.as_str(),
                "summary" => s.summary.as_str(), "at" => s.at,
            })).collect::<Vec<_>>(),
            "notes" => self.notes.iter().map(|n| Value::Object(obj! {
                "from" => n.from.as_str(), "note_id" => n.note_id.as_str(), "text" => n.text.as_str(),
            })).collect::<Vec<_>>(),
            "artifacts" => self.artifacts.iter().map(|a| Value::Object(obj! {
                "artifact_id" => a.artifact_id.as_str(), "state" => a.state.as_str(),
                "files_complete" => a.files_complete, "files_total" => a.files_total,
            })).collect::<Vec<_>>(),
            "execution" => opt(&self.execution),
            "question" => opt(&self.question),
            "result" => match &self.result {
                Some((s, sum)) => Value::Object(obj! { "state" => s.as_str(), "summary" => sum.as_str() }),
                None => Value::Null,
            },
            "result_files" => self.result_files.iter().map(|(p, n)| Value::Object(obj! {
                "path" => p.as_str(), "size" => *n,
            })).collect::<Vec<_>>(),
            "error" => opt(&self.error),
            "last_action" => opt(&self.last_action),
        })
    }

    /// The view a snapshot holds under `"task"` (`None` when it holds none).
    /// Whatever is malformed in it is left out, and every list is bounded.
    pub fn from_snapshot(snap: &Map) -> Option<TaskView> {
        let t = snap.get("task")?.as_object()?;
        let list = |k: &str| {
            t.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_object).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let steps = list("steps");
        let skip = steps.len().saturating_sub(MAX_EVENTS);
        let notes = list("notes");
        let skip_notes = notes.len().saturating_sub(MAX_NOTES);
        Some(TaskView {
            task_id: text_of(t, "task_id").unwrap_or_default(),
            state: text_of(t, "state"),
            revision: int(t, "revision"),
            goal: text_of(t, "goal"),
            execution_class: text_of(t, "execution_class"),
            steps: steps
                .iter()
                .skip(skip)
                .filter_map(|s| {
                    Some(Step {
                        event_id: int(s, "event_id")?,
                        kind: text_of(s, "kind").unwrap_or_default(),
                        summary: text_of(s, "summary").unwrap_or_default(),
                        at: int(s, "at").unwrap_or(0),
                    })
                })
                .collect(),
            notes: notes
                .iter()
                .skip(skip_notes)
                .map(|n| Note {
                    from: text_of(n, "from").unwrap_or_default(),
                    note_id: text_of(n, "note_id").unwrap_or_default(),
                    text: text_of(n, "text").unwrap_or_default(),
                })
                .collect(),
            artifacts: list("artifacts")
                .iter()
                .take(MAX_ARTIFACTS)
                .filter_map(|a| {
                    let n = |k| int(a, k).and_then(|i| usize::try_from(i).ok()).unwrap_or(0);
                    Some(ArtifactState {
                        artifact_id: text_of(a, "artifact_id")?,
                        state: text_of(a, "state").unwrap_or_default(),
                        files_complete: n("files_complete"),
                        files_total: n("files_total"),
                    })
                })
                .collect(),
            execution: text_of(t, "execution"),
            question: text_of(t, "question"),
            result: t.get("result").and_then(Value::as_object).map(|r| {
                (
                    text_of(r, "state").unwrap_or_default(),
                    text_of(r, "summary").unwrap_or_default(),
                )
            }),
            result_files: list("result_files")
                .iter()
                .take(MAX_RESULT_FILES)
                .filter_map(|f| Some((text_of(f, "path")?, int(f, "size").unwrap_or(0))))
                .collect(),
            error: text_of(t, "error"),
            last_action: text_of(t, "last_action"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(events: Vec<Value>, notes: Vec<Value>) -> Map {
        obj! {
            "action" => "task_status", "task_id" => "t1", "state" => "waiting_local_operator",
            "revision" => 5, "events" => events, "notes" => notes,
            "execution" => obj! { "invocation_id" => "inv-1", "adapter" => "file", "status" => "submitted" },
        }
    }

    fn ev(id: i64, kind: &str) -> Value {
        Value::Object(
            obj! { "event_id" => id, "kind" => kind, "summary" => format!("s{id}"), "at" => 1000 + id },
        )
    }

    #[test]
    fn frames_fold_into_the_task_and_round_trip_through_the_snapshot() {
        let frames = [
            obj! { "action" => "task_submit", "task_id" => "t1", "task_goal" => "build it",
            "execution_class" => "compute", "request_digest" => "ab", "expires_at_ms" => 1 },
            obj! { "action" => "task_received", "task_id" => "t1", "accepted" => true,
            "state" => "queued", "reason_code" => "ok", "revision" => 2 },
            obj! { "action" => "agent_note", "task_id" => "t1", "note_id" => "n1", "note_text" => "hurry" },
            status(vec![ev(2, "queued"), ev(1, "received")], vec![]),
            // The same steps again and one more: merged by id, in order.
            status(
                vec![ev(3, "dispatching"), ev(2, "queued")],
                vec![Value::Object(
                    obj! { "note_id" => "w1", "text" => "on it", "at" => 5 },
                )],
            ),
            obj! { "action" => "artifact_ack", "task_id" => "t1", "artifact_id" => "in1",
            "artifact_state" => "partial", "files" => vec![
                Value::Object(obj! { "path" => "a", "received_chunks" => Vec::<Value>::new(), "complete" => true }),
                Value::Object(obj! { "path" => "b", "received_chunks" => Vec::<Value>::new(), "complete" => false }),
            ] },
            obj! { "action" => "receipt", "task_id" => "t1", "result_state" => "completed",
            "summary" => "done", "result_manifest" => obj! { "files" => vec![
                Value::Object(obj! { "path" => "out.txt", "size" => 12, "sha256" => "x" }),
            ], "artifact_id" => "result" } },
        ];
        let v = TaskView::from_frames("demo-task", frames.iter());
        assert_eq!(v.task_id, "t1");
        assert_eq!(v.state.as_deref(), Some("waiting_local_operator"));
        assert_eq!(v.revision, Some(5));
        assert_eq!(v.goal.as_deref(), Some("build it"));
        assert_eq!(
            v.steps
                .iter()
                .map(|s| (s.event_id, s.kind.as_str()))
                .collect::<Vec<_>>(),
            [(1, "received"), (2, "queued"), (3, "dispatching")]
        );
        assert_eq!(
            v.notes
                .iter()
                .map(|n| (n.from.as_str(), n.text.as_str()))
                .collect::<Vec<_>>(),
            [("coordinator", "hurry"), ("worker", "on it")]
        );
        assert_eq!(v.artifacts[0].files_complete, 1);
        assert_eq!(v.artifacts[0].files_total, 2);
        assert_eq!(v.execution.as_deref(), Some("file · submitted"));
        assert_eq!(v.result, Some(("completed".into(), "done".into())));
        assert_eq!(v.result_files, [("out.txt".to_owned(), 12)]);
        let snap = obj! { "task" => v.to_value() };
        assert_eq!(TaskView::from_snapshot(&snap), Some(v));
    }

    #[test]
    fn malformed_snapshots_and_frames_are_read_safely_and_bounded() {
        assert_eq!(TaskView::from_snapshot(&Map::new()), None);
        assert_eq!(TaskView::from_snapshot(&obj! { "task" => 3 }), None);
        let junk = obj! { "task" => obj! {
            "task_id" => 7, "revision" => "x", "steps" => vec![Value::from(1), Value::Object(obj! { "kind" => "no id" })],
            "notes" => "none", "artifacts" => vec![Value::Null],
        } };
        let v = TaskView::from_snapshot(&junk).unwrap();
        assert_eq!(
            (v.task_id.as_str(), v.revision, v.steps.len()),
            ("7", None, 0)
        );
        let mut v = TaskView::new("t");
        let many: Vec<Value> = (0..(MAX_EVENTS as i64 + 50)).map(|i| ev(i, "k")).collect();
        v.absorb(&status(many, vec![]));
        assert_eq!(v.steps.len(), MAX_EVENTS);
        assert_eq!(v.steps.last().unwrap().event_id, MAX_EVENTS as i64 + 49);
        v.absorb(&obj! { "action" => "agent_note", "note_text" => "x".repeat(10_000) });
        assert_eq!(v.notes[0].text.chars().count(), MAX_TEXT);
        v.absorb(&obj! { "action" => "error", "error_code" => "unknown_task", "detail" => "d" });
        assert_eq!(v.error.as_deref(), Some("unknown_task"));
        v.absorb(&obj! { "no" => "action" });
        assert_eq!(v.last_action.as_deref(), Some("error"));
    }
}
