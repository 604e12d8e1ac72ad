//! Session state dirs in the reference's layout, and the sink that writes
//! a running session into them.
//!
//! ```text
//! <data>/sessions/<role>-<epoch_ms>/          parent: session.json, events.jsonl, daemon logs
//!     <role>-<epoch_ms>/                      child (engine): snapshot.json, details.jsonl,
//!                                             strategy.json, strategy_events.jsonl,
//!                                             events.jsonl (decision events), decision/, inbox.jsonl
//! ```
//!
//! Protocol and lifecycle events go to the parent's events.jsonl, decision
//! and strategy events to the child's, as the reference splits them. Every
//! write is mirrored on an in-process broadcast so a console in the same
//! process never polls its own sessions.

use super::appender::Appender;
use super::coalesce::{Coalesced, PrettyObject};
use super::files::{self, deep_merge};
use super::whisper_log::AckObserver;
use crate::engine::{Event, EventSink, Role};
use crate::json::{Map, Value};
use crate::obj;
use crate::utc::iso_now;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast;

/// The two directories of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    /// The launcher's directory (session.json, lifecycle events); absent for
    /// a bare engine run.
    pub parent: Option<PathBuf>,
    /// The engine's directory.
    pub child: PathBuf,
}

fn epoch_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// A fresh `<role>-<epoch_ms>` directory under `root` (a later millisecond
/// when the name is taken).
fn fresh_dir(root: &Path, role: Role) -> io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let mut ms = epoch_ms();
    loop {
        let p = root.join(format!("{}-{ms}", role.as_str()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ms += 1,
            Err(e) => return Err(e),
        }
    }
}

impl StateDir {
    /// A new session under `<data_dir>/sessions/`: parent and child.
    pub fn create(data_dir: &Path, role: Role) -> io::Result<StateDir> {
        let parent = fresh_dir(&data_dir.join("sessions"), role)?;
        let child = fresh_dir(&parent, role)?;
        Ok(StateDir {
            parent: Some(parent),
            child,
        })
    }

    /// A new, empty parent dir `<data_dir>/sessions/<role>-<epoch_ms>/`
    /// (a daemon launcher's; the run makes its engine dir inside).
    pub fn create_parent(data_dir: &Path, role: Role) -> io::Result<PathBuf> {
        fresh_dir(&data_dir.join("sessions"), role)
    }

    /// Resolves a directory a user named: an engine dir (it has a snapshot
    /// or details), or a parent (it has session.json) whose newest
    /// `host-*`/`guest-*` child is the engine dir.
    pub fn resolve(path: &Path) -> Option<StateDir> {
        let has = |p: &Path, f: &str| p.join(f).exists();
        if has(path, "snapshot.json") || has(path, "details.jsonl") || has(path, "decision") {
            // A room's dir holds session.json and the engine's files in one
            // level; an engine dir's session.json is its parent's.
            let parent = if has(path, "session.json") {
                Some(path.to_owned())
            } else {
                path.parent()
                    .filter(|p| has(p, "session.json"))
                    .map(Path::to_path_buf)
            };
            return Some(StateDir {
                parent,
                child: path.to_owned(),
            });
        }
        if has(path, "session.json") {
            let child = newest_child(path).unwrap_or_else(|| path.to_owned());
            return Some(StateDir {
                parent: Some(path.to_owned()),
                child,
            });
        }
        None
    }

    /// Where lifecycle and protocol events go.
    pub fn events_file(&self) -> PathBuf {
        self.parent
            .as_deref()
            .unwrap_or(&self.child)
            .join("events.jsonl")
    }

    /// Where decision and strategy events go.
    pub fn decision_events_file(&self) -> PathBuf {
        self.child.join("events.jsonl")
    }

    pub fn decision_dir(&self) -> PathBuf {
        self.child.join("decision")
    }

    pub fn session_file(&self) -> Option<PathBuf> {
        self.parent.as_ref().map(|p| p.join("session.json"))
    }
}

fn newest_child(parent: &Path) -> Option<PathBuf> {
    let mut kids: Vec<PathBuf> = std::fs::read_dir(parent)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("host-") || n.starts_with("guest-"))
        })
        .collect();
    kids.sort();
    kids.pop()
}

/// Event kinds the reference writes to the engine (child) dir.
pub fn is_decision_event(kind: &str) -> bool {
    kind == "strategy_applied"
        || kind == "human_decision_failed"
        || kind.starts_with("local_decision_")
        || kind.starts_with("policy_")
        || kind.starts_with("intent_")
}

/// One line written to the state dir, as the broadcast carries it.
#[derive(Debug, Clone)]
pub enum Update {
    /// An events.jsonl line (`ts`, `type`, `data`, `summary`).
    Event(Map),
    /// The whole snapshot after a patch.
    Snapshot(Map),
    /// A details.jsonl line.
    Detail(Map),
}

/// Writes a session into its state dir.
pub struct StateSink {
    pub dir: StateDir,
    /// The .jsonl lines, written after the work that made them.
    appends: Appender,
    /// `session_ended` was written: later lines are written at once.
    ended: AtomicBool,
    /// snapshot.json.
    snapshot: Coalesced<PrettyObject>,
    tx: broadcast::Sender<Update>,
    /// Acknowledges whispers as their strategy or decision is used.
    whispers: AckObserver,
}

impl StateSink {
    pub fn new(dir: StateDir) -> StateSink {
        let path = dir.child.join("snapshot.json");
        let snapshot = Coalesced::new(
            path.clone(),
            PrettyObject(files::read_json_object(&path).unwrap_or_default()),
        );
        let (tx, _) = broadcast::channel(1024);
        StateSink {
            whispers: AckObserver::new(&dir.child),
            dir,
            appends: Appender::new(),
            ended: AtomicBool::new(false),
            snapshot,
            tx,
        }
    }

    /// Live updates, as they are written.
    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.tx.subscribe()
    }

    /// The snapshot as last written.
    pub fn snapshot_now(&self) -> Map {
        self.snapshot.read(|s| s.0.clone())
    }

    /// Write failures so far, and the last one.
    pub fn write_errors(&self) -> (u64, Option<String>) {
        let (snapshot_errors, snapshot_error) = self.snapshot.errors();
        let (append_errors, append_error) = self.appends.errors();
        (
            append_errors + snapshot_errors,
            append_error.or(snapshot_error),
        )
    }

    /// Sets each top-level key of `patch` in the snapshot whole, where
    /// [`EventSink::snapshot`] merges objects into what was there (as the
    /// reference's `SnapshotBus.update` does). For values that are complete
    /// every time, such as a group frame's verified view: a key the view
    /// lost (a seat's declaration when a hand is redealt) leaves the file
    /// too, instead of staying there under the new frame's seq.
    pub fn snapshot_replacing(&self, patch: Map) {
        self.write_snapshot(|snap| {
            for (k, v) in patch.into_entries() {
                snap.insert(k, v);
            }
        });
    }

    fn write_snapshot(&self, change: impl FnOnce(&mut Map)) {
        let whole = self.snapshot.update(|snap| {
            change(&mut snap.0);
            snap.0.insert("updated_at", Value::from(iso_now()));
            (self.tx.receiver_count() > 0).then(|| snap.0.clone())
        });
        if let Some(m) = whole {
            let _ = self.tx.send(Update::Snapshot(m));
        }
    }

    /// Appends one line to a .jsonl file: queued behind the work at hand
    /// (see `appender`), at once when the session has ended.
    fn append(&self, path: &Path, v: &Value) {
        let mut line = crate::json::canonical::to_string_ordered(v);
        line.push('\n');
        self.appends.push(path, line);
        if self.ended.load(Ordering::Relaxed) {
            self.appends.flush();
        }
    }

    /// Appends an event line (`data`/`summary` left out when empty).
    pub fn event(&self, kind: &str, data: Map, summary: Option<String>) {
        let mut line = obj! { "ts" => iso_now(), "type" => kind };
        if !data.is_empty() {
            line.insert("data", Value::Object(data));
        }
        if let Some(s) = summary.filter(|s| !s.is_empty()) {
            line.insert("summary", Value::from(s));
        }
        let file = if is_decision_event(kind) {
            self.dir.decision_events_file()
        } else {
            self.dir.events_file()
        };
        let v = Value::Object(line);
        if kind == "session_ended" {
            self.ended.store(true, Ordering::Relaxed);
        }
        self.append(&file, &v);
        let applied = match &v {
            Value::Object(m) if kind == "strategy_applied" || kind == "local_decision_consumed" => {
                m.get("data")
                    .and_then(Value::as_object)
                    .and_then(|d| self.whispers.observe(kind, d))
            }
            _ => None,
        };
        if let Value::Object(m) = v {
            let _ = self.tx.send(Update::Event(m));
        }
        if let Some(a) = applied {
            let summary = format!("whisper {} took effect", a.whisper_id);
            self.event("whisper_applied", a.event, Some(summary));
        }
    }
}

impl EventSink for StateSink {
    fn emit(&self, e: Event) {
        self.event(e.kind, e.data, e.summary);
    }

    fn snapshot(&self, patch: Map) {
        self.write_snapshot(|snap| deep_merge(snap, patch));
    }

    fn flush(&self) {
        self.appends.flush();
        self.snapshot.flush();
    }

    fn state_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.dir.child.clone())
    }

    fn detail(&self, mut record: Map) {
        if !record.contains_key("ts") {
            record.insert("ts", Value::from(iso_now()));
        }
        let path = self.dir.child.join("details.jsonl");
        let v = Value::Object(record);
        self.append(&path, &v);
        if let Value::Object(m) = v {
            let _ = self.tx.send(Update::Detail(m));
        }
    }
}

/// session.json: read-modify-write, replaced atomically, under an advisory
/// lock (`.session.lock`) so the launcher and the daemon never lose each
/// other's updates.
pub fn update_session_file(path: &Path, patch: Map) -> io::Result<Map> {
    update_session_file_if(path, |_| true, patch).map(|m| m.unwrap_or_default())
}

/// [`update_session_file`] when `cond` holds for the file as it is, read
/// under the same lock (None: it did not, and nothing was written). A
/// session's end is written so, without overwriting an end written by
/// another process (`session abort`) in the meantime.
pub fn update_session_file_if(
    path: &Path,
    cond: impl FnOnce(&Map) -> bool,
    patch: Map,
) -> io::Result<Option<Map>> {
    let lock_path = path.with_file_name(".session.lock");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)?;
    lock.lock()?;
    let result = rmw(path, cond, patch);
    let _ = lock.unlock();
    result
}

fn rmw(path: &Path, cond: impl FnOnce(&Map) -> bool, patch: Map) -> io::Result<Option<Map>> {
    let mut meta = files::read_json_object(path).unwrap_or_default();
    if !cond(&meta) {
        return Ok(None);
    }
    for (k, v) in patch.into_entries() {
        meta.insert(k, v);
    }
    files::write_json_atomic(path, &Value::Object(meta.clone()), true)?;
    Ok(Some(meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{canonical, parse_str};

    /// A hand redealt after a leader change: the new view has fewer
    /// declarations than the old one. Merged, the file would keep the old
    /// seat's pass (and the old declaration's cards under the new pass);
    /// replaced, it holds the new view.
    #[test]
    fn replacing_keeps_no_key_the_new_value_lost() {
        let data = tempfile::tempdir().unwrap();
        let dir = StateDir::create(data.path(), Role::Guest).unwrap();
        let sink = StateSink::new(dir.clone());
        let object = |t: &str| parse_str(t).unwrap().as_object().unwrap().clone();
        sink.snapshot(object(
            r#"{"timing":{"a":1},"group_view":{"declarations":{"a":{"kind":"declare_trump","cards":[1]},"b":{"kind":"pass_declare"}}}}"#,
        ));
        sink.snapshot_replacing(object(
            r#"{"group_view":{"declarations":{"a":{"kind":"pass_declare"}}}}"#,
        ));
        sink.flush();
        let file = files::read_json_object(&dir.child.join("snapshot.json")).unwrap();
        for snap in [sink.snapshot_now(), file] {
            assert_eq!(
                canonical::to_string_ordered(snap.get("group_view").unwrap()),
                r#"{"declarations":{"a":{"kind":"pass_declare"}}}"#
            );
            // Keys the patch does not name stay.
            assert!(snap.contains_key("timing"));
        }
    }
}
