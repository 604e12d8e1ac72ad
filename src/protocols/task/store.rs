//! The task ledger of a palaver task host, under `<collab_data_dir>/collab/`.
//!
//! The reference keeps one SQLite database; palaver keeps plain files that a
//! crash cannot tear:
//!
//! ```text
//! collab/ledger/<sha256(source)>/<sha256(task_id)>/
//!     task.json        the task row, replaced atomically on every change
//!     events.jsonl     the task's events, append-only
//!     notes.jsonl      notes and their delivery marks, append-only
//!     artifacts/<sha256(artifact_id)>.json   one per artifact, replaced atomically
//!     invocations.jsonl  dispatch records, append-only (the last line per id wins)
//! collab/tasks/<source>/<task>/   in/ workspace/ out/ (the reference's layout)
//! ```
//!
//! Ids are hashed into directory names (an id may hold `.` and `:` and be
//! 128 bytes long); the real ids are inside the files. Every line and file
//! read back is bounded and checked: a damaged ledger file is an error, never
//! a panic.

use crate::fsutil::write_atomic;
use crate::json::canonical::sha256_hex;
use crate::json::{self, Map, Value};
use crate::obj;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Task states no message moves on from.
pub const TERMINAL: [&str; 5] = ["completed", "failed", "rejected", "cancelled", "expired"];

/// Ledger files larger than this are refused as damaged.
const MAX_LEDGER_FILE: u64 = 64 * 1024 * 1024;
/// What an event summary keeps, in characters.
const EVENT_SUMMARY_CHARS: usize = 500;

pub fn is_terminal(state: &str) -> bool {
    TERMINAL.contains(&state)
}

/// The task state machine's edges.
pub fn allowed(from: &str, to: &str) -> bool {
    let targets: &[&str] = match from {
        "received" => &["queued", "waiting_inputs", "cancelled", "rejected"],
        "waiting_inputs" => &["queued", "cancelled", "expired"],
        "queued" => &["dispatching", "cancelled", "expired"],
        "dispatching" => &["running", "failed", "queued"],
        "running" => &[
            "waiting_local_operator",
            "cancel_requested",
            "export_check",
            "failed",
            "execution_unknown",
        ],
        "waiting_local_operator" => &["running", "cancelled", "failed", "export_check"],
        "cancel_requested" => &["cancelled", "execution_unknown", "completed", "failed"],
        "execution_unknown" => &[
            "running",
            "export_check",
            "failed",
            "cancelled",
            "completed",
        ],
        "export_check" => &["completed", "waiting_local_operator", "cancelled", "failed"],
        _ => &[],
    };
    targets.contains(&to)
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn take_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A ledger failure: an I/O error, a damaged file, an illegal transition.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("ledger i/o: {0}")]
    Io(#[from] io::Error),
    #[error("ledger file damaged: {0}")]
    Damaged(String),
    #[error("illegal transition {0} -> {1}")]
    Illegal(String, String),
    #[error("task not found")]
    NoTask,
}

/// One task row.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub source_device: String,
    pub task_id: String,
    pub state: String,
    pub request_digest: String,
    pub task_goal: String,
    pub execution_class: String,
    pub expires_at_ms: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub revision: i64,
    pub result_manifest: Option<Value>,
    pub result_summary: Option<String>,
    pub result_state: Option<String>,
    pub result_acked: bool,
    pub input_request: Option<Value>,
    /// The `input_manifest` the submit declared (non-empty objects only).
    pub input_manifest: Option<Map>,
    /// Questions a local worker asked: (input_id, question, answer).
    pub inputs: Vec<(String, String, Option<String>)>,
}

impl Task {
    fn to_value(&self) -> Value {
        let opt_str = |s: &Option<String>| s.clone().map(Value::from).unwrap_or(Value::Null);
        Value::Object(obj! {
            "source_device" => self.source_device.as_str(),
            "task_id" => self.task_id.as_str(),
            "state" => self.state.as_str(),
            "request_digest" => self.request_digest.as_str(),
            "task_goal" => self.task_goal.as_str(),
            "execution_class" => self.execution_class.as_str(),
            "expires_at_ms" => self.expires_at_ms.map(Value::from).unwrap_or(Value::Null),
            "created_at" => self.created_at,
            "updated_at" => self.updated_at,
            "revision" => self.revision,
            "result_manifest" => self.result_manifest.clone().unwrap_or(Value::Null),
            "result_summary" => opt_str(&self.result_summary),
            "result_state" => opt_str(&self.result_state),
            "result_acked" => self.result_acked,
            "input_request" => self.input_request.clone().unwrap_or(Value::Null),
            "input_manifest" => self.input_manifest.clone().map(Value::Object).unwrap_or(Value::Null),
            "inputs" => self.inputs.iter().map(|(id, q, a)| Value::Object(obj! {
                "input_id" => id.as_str(), "question" => q.as_str(),
                "answer" => a.clone().map(Value::from).unwrap_or(Value::Null),
            })).collect::<Vec<_>>(),
        })
    }

    fn from_value(v: &Value) -> Option<Task> {
        let s = |k: &str| v.get_str(k).map(str::to_owned);
        let opt = |k: &str| v.get(k).filter(|x| !x.is_null()).cloned();
        Some(Task {
            source_device: s("source_device")?,
            task_id: s("task_id")?,
            state: s("state")?,
            request_digest: s("request_digest")?,
            task_goal: s("task_goal")?,
            execution_class: s("execution_class")?,
            expires_at_ms: v.get("expires_at_ms").and_then(Value::as_i64),
            created_at: v.get("created_at").and_then(Value::as_i64)?,
            updated_at: v.get("updated_at").and_then(Value::as_i64)?,
            revision: v.get("revision").and_then(Value::as_i64)?,
            result_manifest: opt("result_manifest"),
            result_summary: s("result_summary"),
            result_state: s("result_state"),
            result_acked: v.get("result_acked").and_then(Value::as_bool)?,
            input_request: opt("input_request"),
            input_manifest: v.get("input_manifest").and_then(Value::as_object).cloned(),
            inputs: v
                .get("inputs")
                .and_then(Value::as_array)?
                .iter()
                .map(|i| {
                    Some((
                        i.get_str("input_id")?.to_owned(),
                        i.get_str("question")?.to_owned(),
                        i.get_str("answer").map(str::to_owned),
                    ))
                })
                .collect::<Option<Vec<_>>>()?,
        })
    }
}

/// One event of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub event_id: i64,
    pub kind: String,
    pub summary: String,
    pub at: i64,
}

/// One note: from the coordinator (the guest) or the worker (this host).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub from_role: String,
    pub note_id: String,
    pub text: String,
    pub created_at: i64,
    pub delivered: bool,
}

/// One artifact of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    pub artifact_id: String,
    pub artifact_kind: String,
    pub files: Vec<super::transfer::FileEntry>,
    /// Received chunk indexes per path, in arrival order.
    pub received: Vec<(String, Vec<u64>)>,
    pub state: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Artifact {
    pub fn received_for(&self, path: &str) -> &[u64] {
        self.received
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, r)| r.as_slice())
            .unwrap_or(&[])
    }

    fn to_value(&self) -> Value {
        let mut received = Map::new();
        for (p, idx) in &self.received {
            received.insert(
                p.as_str(),
                Value::Array(idx.iter().map(|i| Value::from(*i)).collect()),
            );
        }
        Value::Object(obj! {
            "artifact_id" => self.artifact_id.as_str(),
            "artifact_kind" => self.artifact_kind.as_str(),
            "files" => self.files.iter().map(super::transfer::FileEntry::to_value).collect::<Vec<_>>(),
            "received" => received,
            "state" => self.state.as_str(),
            "created_at" => self.created_at,
            "updated_at" => self.updated_at,
        })
    }

    fn from_value(v: &Value) -> Option<Artifact> {
        let files = v
            .get("files")
            .and_then(Value::as_array)?
            .iter()
            .map(super::transfer::FileEntry::from_value)
            .collect::<Option<Vec<_>>>()?;
        let received = v
            .get("received")
            .and_then(Value::as_object)?
            .iter()
            .map(|(p, idx)| {
                let list = idx
                    .as_array()?
                    .iter()
                    .map(|i| i.as_i64().and_then(|i| u64::try_from(i).ok()))
                    .collect::<Option<Vec<_>>>()?;
                Some((p.to_owned(), list))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Artifact {
            artifact_id: v.get_str("artifact_id")?.to_owned(),
            artifact_kind: v.get_str("artifact_kind")?.to_owned(),
            files,
            received,
            state: v.get_str("state")?.to_owned(),
            created_at: v.get("created_at").and_then(Value::as_i64)?,
            updated_at: v.get("updated_at").and_then(Value::as_i64)?,
        })
    }
}

/// One dispatch of a task to the local execution adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub id: String,
    pub adapter: String,
    pub handle: String,
    pub status: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

/// The ledger of one data dir.
#[derive(Debug, Clone)]
pub struct Store {
    base: PathBuf,
}

fn read_bounded(path: &Path) -> Result<Option<String>, StoreError> {
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
        Ok(m) if m.len() > MAX_LEDGER_FILE => {
            return Err(StoreError::Damaged(format!(
                "{} is {} bytes",
                path.display(),
                m.len()
            )));
        }
        Ok(_) => {}
    }
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn parse_doc(path: &Path, text: &str) -> Result<Value, StoreError> {
    json::parse_str(text).map_err(|e| StoreError::Damaged(format!("{}: {e}", path.display())))
}

/// The complete lines of a jsonl file (a torn last line, from a crash in
/// the middle of an append, is skipped).
fn read_lines(path: &Path) -> Result<Vec<Value>, StoreError> {
    let Some(text) = read_bounded(path)? else {
        return Ok(Vec::new());
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_doc(path, l))
        .collect()
}

fn append_line(path: &Path, v: &Value) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut line = json::canonical::to_string_ordered(v);
    line.push('\n');
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(line.as_bytes())?;
    f.sync_data()?;
    Ok(())
}

/// The reference's directory name for a peer-given name: only ASCII letters,
/// digits, `-` and `_` kept, cut at `max`, `fallback` when nothing is left.
fn dir_name(s: &str, max: usize, fallback: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_'))
        .take(max)
        .collect();
    if kept.is_empty() {
        fallback.to_owned()
    } else {
        kept
    }
}

impl Store {
    /// The ledger under `data_dir` (created when first written).
    pub fn new(data_dir: &Path) -> Store {
        Store {
            base: data_dir.join("collab"),
        }
    }

    /// The task's file area (`in/`, `workspace/`, `out/`), where the
    /// reference keeps it.
    pub fn task_root(&self, source: &str, task_id: &str) -> PathBuf {
        self.base
            .join("tasks")
            .join(dir_name(source, 64, "peer"))
            .join(dir_name(task_id, 128, "task"))
    }

    fn dir(&self, source: &str, task_id: &str) -> PathBuf {
        self.base
            .join("ledger")
            .join(sha256_hex(source.as_bytes()))
            .join(sha256_hex(task_id.as_bytes()))
    }

    // -- tasks --------------------------------------------------------------

    pub fn get_task(&self, source: &str, task_id: &str) -> Result<Option<Task>, StoreError> {
        let path = self.dir(source, task_id).join("task.json");
        let Some(text) = read_bounded(&path)? else {
            return Ok(None);
        };
        let v = parse_doc(&path, &text)?;
        let t = Task::from_value(&v)
            .ok_or_else(|| StoreError::Damaged(format!("{}: not a task", path.display())))?;
        if t.source_device != source || t.task_id != task_id {
            return Err(StoreError::Damaged(format!(
                "{}: holds another task",
                path.display()
            )));
        }
        Ok(Some(t))
    }

    fn require(&self, source: &str, task_id: &str) -> Result<Task, StoreError> {
        self.get_task(source, task_id)?.ok_or(StoreError::NoTask)
    }

    pub fn put_task(&self, t: &Task) -> Result<(), StoreError> {
        let path = self.dir(&t.source_device, &t.task_id).join("task.json");
        let text = json::canonical::to_string_ordered(&t.to_value());
        write_atomic(&path, text.as_bytes())?;
        Ok(())
    }

    /// Every task in the ledger, oldest first.
    pub fn list_tasks(&self) -> Result<Vec<Task>, StoreError> {
        let mut out = Vec::new();
        let root = self.base.join("ledger");
        let Ok(sources) = fs::read_dir(&root) else {
            return Ok(out);
        };
        for s in sources {
            let s = s?;
            if !s.file_type()?.is_dir() {
                continue;
            }
            for t in fs::read_dir(s.path())? {
                let path = t?.path().join("task.json");
                let Some(text) = read_bounded(&path)? else {
                    continue;
                };
                if let Some(task) = Task::from_value(&parse_doc(&path, &text)?) {
                    out.push(task);
                }
            }
        }
        out.sort_by(|a, b| {
            (a.created_at, &a.source_device, &a.task_id).cmp(&(
                b.created_at,
                &b.source_device,
                &b.task_id,
            ))
        });
        Ok(out)
    }

    /// A new task in state `received` at revision 1, with its `received`
    /// event; an existing one is returned as it is.
    #[allow(clippy::too_many_arguments)]
    pub fn insert_task(
        &self,
        source: &str,
        task_id: &str,
        request_digest: &str,
        task_goal: &str,
        execution_class: &str,
        expires_at_ms: Option<i64>,
        summary: &str,
    ) -> Result<Task, StoreError> {
        if let Some(t) = self.get_task(source, task_id)? {
            return Ok(t);
        }
        let now = now_ms();
        let t = Task {
            source_device: source.to_owned(),
            task_id: task_id.to_owned(),
            state: "received".into(),
            request_digest: request_digest.to_owned(),
            task_goal: task_goal.to_owned(),
            execution_class: execution_class.to_owned(),
            expires_at_ms,
            created_at: now,
            updated_at: now,
            revision: 1,
            result_manifest: None,
            result_summary: None,
            result_state: None,
            result_acked: false,
            input_request: None,
            input_manifest: None,
            inputs: Vec::new(),
        };
        self.put_task(&t)?;
        self.append_event(source, task_id, "received", summary)?;
        Ok(t)
    }

    /// Moves a task along one edge of the state machine: the revision goes
    /// up by one, `update` may set result fields, and an event is appended
    /// when `event` names one. Moving to the state it is in changes nothing.
    pub fn transition(
        &self,
        source: &str,
        task_id: &str,
        to: &str,
        event: Option<(&str, &str)>,
        update: impl FnOnce(&mut Task),
    ) -> Result<Task, StoreError> {
        let mut t = self.require(source, task_id)?;
        if t.state == to {
            return Ok(t);
        }
        if !allowed(&t.state, to) {
            return Err(StoreError::Illegal(t.state, to.to_owned()));
        }
        t.state = to.to_owned();
        t.updated_at = now_ms();
        t.revision = t.revision.saturating_add(1);
        update(&mut t);
        self.put_task(&t)?;
        if let Some((kind, summary)) = event {
            let summary = if summary.is_empty() { to } else { summary };
            self.append_event(source, task_id, kind, summary)?;
        }
        Ok(t)
    }

    /// Changes fields that are no state (no revision change).
    pub fn update_task(
        &self,
        source: &str,
        task_id: &str,
        update: impl FnOnce(&mut Task),
    ) -> Result<Task, StoreError> {
        let mut t = self.require(source, task_id)?;
        update(&mut t);
        t.updated_at = now_ms();
        self.put_task(&t)?;
        Ok(t)
    }

    // -- events -------------------------------------------------------------

    pub fn events(&self, source: &str, task_id: &str) -> Result<Vec<Event>, StoreError> {
        let path = self.dir(source, task_id).join("events.jsonl");
        read_lines(&path)?
            .iter()
            .map(|v| {
                (|| {
                    Some(Event {
                        event_id: v.get("event_id").and_then(Value::as_i64)?,
                        kind: v.get_str("kind")?.to_owned(),
                        summary: v.get_str("summary")?.to_owned(),
                        at: v.get("at").and_then(Value::as_i64)?,
                    })
                })()
                .ok_or_else(|| StoreError::Damaged(format!("{}: bad event", path.display())))
            })
            .collect()
    }

    /// Appends an event (its summary cut to 500 characters); its id.
    pub fn append_event(
        &self,
        source: &str,
        task_id: &str,
        kind: &str,
        summary: &str,
    ) -> Result<i64, StoreError> {
        let next = self
            .events(source, task_id)?
            .iter()
            .map(|e| e.event_id)
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        let line = Value::Object(obj! {
            "event_id" => next, "kind" => kind,
            "summary" => take_chars(summary, EVENT_SUMMARY_CHARS), "at" => now_ms(),
        });
        append_line(&self.dir(source, task_id).join("events.jsonl"), &line)?;
        Ok(next)
    }

    /// Events after `after`, in order, at most `limit`.
    pub fn events_after(
        &self,
        source: &str,
        task_id: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let mut ev: Vec<Event> = self
            .events(source, task_id)?
            .into_iter()
            .filter(|e| e.event_id > after)
            .collect();
        ev.sort_by_key(|e| e.event_id);
        ev.truncate(limit);
        Ok(ev)
    }

    // -- notes --------------------------------------------------------------

    pub fn notes(&self, source: &str, task_id: &str) -> Result<Vec<Note>, StoreError> {
        let path = self.dir(source, task_id).join("notes.jsonl");
        let mut notes: Vec<Note> = Vec::new();
        for v in read_lines(&path)? {
            let bad = || StoreError::Damaged(format!("{}: bad note line", path.display()));
            let role = v.get_str("from_role").ok_or_else(bad)?;
            let id = v.get_str("note_id").ok_or_else(bad)?;
            if v.get("delivered") == Some(&Value::Bool(true)) {
                if let Some(n) = notes
                    .iter_mut()
                    .find(|n| n.from_role == role && n.note_id == id)
                {
                    n.delivered = true;
                }
                continue;
            }
            if notes.iter().any(|n| n.from_role == role && n.note_id == id) {
                continue;
            }
            notes.push(Note {
                from_role: role.to_owned(),
                note_id: id.to_owned(),
                text: v.get_str("text").ok_or_else(bad)?.to_owned(),
                created_at: v
                    .get("created_at")
                    .and_then(Value::as_i64)
                    .ok_or_else(bad)?,
                delivered: false,
            });
        }
        Ok(notes)
    }

    /// Adds a note; `false` when that role already sent that note id.
    pub fn add_note(
        &self,
        source: &str,
        task_id: &str,
        from_role: &str,
        note_id: &str,
        text: &str,
    ) -> Result<bool, StoreError> {
        if self
            .notes(source, task_id)?
            .iter()
            .any(|n| n.from_role == from_role && n.note_id == note_id)
        {
            return Ok(false);
        }
        let line = Value::Object(obj! {
            "from_role" => from_role, "note_id" => note_id, "text" => text, "created_at" => now_ms(),
        });
        append_line(&self.dir(source, task_id).join("notes.jsonl"), &line)?;
        Ok(true)
    }

    /// Undelivered notes of a role, oldest first (ties by id), at most `limit`.
    pub fn pending_notes(
        &self,
        source: &str,
        task_id: &str,
        from_role: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        let mut pending: Vec<Note> = self
            .notes(source, task_id)?
            .into_iter()
            .filter(|n| n.from_role == from_role && !n.delivered)
            .collect();
        pending.sort_by(|a, b| (a.created_at, &a.note_id).cmp(&(b.created_at, &b.note_id)));
        pending.truncate(limit);
        Ok(pending)
    }

    pub fn mark_delivered(
        &self,
        source: &str,
        task_id: &str,
        from_role: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let path = self.dir(source, task_id).join("notes.jsonl");
        for id in ids {
            append_line(
                &path,
                &Value::Object(
                    obj! { "from_role" => from_role, "note_id" => id.as_str(), "delivered" => true },
                ),
            )?;
        }
        Ok(())
    }

    // -- artifacts ----------------------------------------------------------

    fn artifact_path(&self, source: &str, task_id: &str, artifact_id: &str) -> PathBuf {
        self.dir(source, task_id)
            .join("artifacts")
            .join(format!("{}.json", sha256_hex(artifact_id.as_bytes())))
    }

    pub fn get_artifact(
        &self,
        source: &str,
        task_id: &str,
        artifact_id: &str,
    ) -> Result<Option<Artifact>, StoreError> {
        let path = self.artifact_path(source, task_id, artifact_id);
        let Some(text) = read_bounded(&path)? else {
            return Ok(None);
        };
        let a = Artifact::from_value(&parse_doc(&path, &text)?)
            .filter(|a| a.artifact_id == artifact_id)
            .ok_or_else(|| StoreError::Damaged(format!("{}: not this artifact", path.display())))?;
        Ok(Some(a))
    }

    pub fn put_artifact(
        &self,
        source: &str,
        task_id: &str,
        a: &Artifact,
    ) -> Result<(), StoreError> {
        let path = self.artifact_path(source, task_id, &a.artifact_id);
        write_atomic(
            &path,
            json::canonical::to_string_ordered(&a.to_value()).as_bytes(),
        )?;
        Ok(())
    }

    /// Registers an artifact, or re-registers it: a known artifact keeps its
    /// kind and creation time, and starts over with no chunks received.
    pub fn upsert_artifact(
        &self,
        source: &str,
        task_id: &str,
        artifact_id: &str,
        kind: &str,
        files: Vec<super::transfer::FileEntry>,
    ) -> Result<Artifact, StoreError> {
        let now = now_ms();
        let a = match self.get_artifact(source, task_id, artifact_id)? {
            Some(old) => Artifact {
                files,
                received: Vec::new(),
                state: "partial".into(),
                updated_at: now,
                ..old
            },
            None => Artifact {
                artifact_id: artifact_id.to_owned(),
                artifact_kind: kind.to_owned(),
                files,
                received: Vec::new(),
                state: "partial".into(),
                created_at: now,
                updated_at: now,
            },
        };
        self.put_artifact(source, task_id, &a)?;
        Ok(a)
    }

    /// The task's artifacts, oldest first (ties by id).
    pub fn list_artifacts(&self, source: &str, task_id: &str) -> Result<Vec<Artifact>, StoreError> {
        let dir = self.dir(source, task_id).join("artifacts");
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir(&dir) else {
            return Ok(out);
        };
        for e in entries {
            let path = e?.path();
            if path.extension().and_then(|x| x.to_str()) != Some("json") {
                continue;
            }
            let Some(text) = read_bounded(&path)? else {
                continue;
            };
            out.push(
                Artifact::from_value(&parse_doc(&path, &text)?).ok_or_else(|| {
                    StoreError::Damaged(format!("{}: not an artifact", path.display()))
                })?,
            );
        }
        out.sort_by(|a, b| (a.created_at, &a.artifact_id).cmp(&(b.created_at, &b.artifact_id)));
        Ok(out)
    }

    // -- invocations --------------------------------------------------------

    /// Appends the current record of an invocation.
    pub fn put_invocation(
        &self,
        source: &str,
        task_id: &str,
        inv: &Invocation,
    ) -> Result<(), StoreError> {
        let line = Value::Object(obj! {
            "id" => inv.id.as_str(), "adapter" => inv.adapter.as_str(), "handle" => inv.handle.as_str(),
            "status" => inv.status.as_str(), "started_at" => inv.started_at,
            "finished_at" => inv.finished_at.map(Value::from).unwrap_or(Value::Null),
        });
        append_line(&self.dir(source, task_id).join("invocations.jsonl"), &line)
    }

    /// The task's most recently started invocation, as last recorded.
    pub fn latest_invocation(
        &self,
        source: &str,
        task_id: &str,
    ) -> Result<Option<Invocation>, StoreError> {
        let path = self.dir(source, task_id).join("invocations.jsonl");
        let mut latest: Option<Invocation> = None;
        for v in read_lines(&path)? {
            let inv = (|| {
                Some(Invocation {
                    id: v.get_str("id")?.to_owned(),
                    adapter: v.get_str("adapter")?.to_owned(),
                    handle: v.get_str("handle")?.to_owned(),
                    status: v.get_str("status")?.to_owned(),
                    started_at: v.get("started_at").and_then(Value::as_i64)?,
                    finished_at: v.get("finished_at").and_then(Value::as_i64),
                })
            })()
            .ok_or_else(|| StoreError::Damaged(format!("{}: bad invocation", path.display())))?;
            // A later line for the same id updates it; a later start wins.
            let newer = match &latest {
                None => true,
                Some(l) => l.id == inv.id || inv.started_at >= l.started_at,
            };
            if newer {
                latest = Some(inv);
            }
        }
        Ok(latest)
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
