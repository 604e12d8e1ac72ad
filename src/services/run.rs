//! Running a session side with its state dir: the files other processes
//! (and the console) watch and steer, session.json's lifecycle, and the
//! daemon path that runs a session in a background process.

use crate::engine::{ControlMode, EngineConfig, Hooks, Role, SessionOutcome};
use crate::json::{Map, Value};
use crate::obj;
use crate::services::local::Side;
use crate::session::{DecisionBus, StateDir, StateSink, StrategyFile, files, update_session_file};
use crate::spec::Spec;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A side whose session is written to a state dir.
pub struct StatefulSide {
    pub dir: StateDir,
    pub sink: Arc<StateSink>,
    pub side: Side,
}

/// What session.json records about a run at its start.
pub struct Launch<'a> {
    pub spec: &'a Spec,
    pub protocol_dir: Option<&'a Path>,
    pub role: Role,
    pub control_mode: ControlMode,
    pub options: &'a Map,
    pub pid: u32,
    /// `starting` for a daemon not yet running, else `running`.
    pub status: &'a str,
}

/// Writes the first session.json of a run.
pub fn write_launch(dir: &StateDir, l: &Launch<'_>) -> std::io::Result<()> {
    let Some(file) = dir.session_file() else {
        return Ok(());
    };
    let parent = dir.parent.as_deref().unwrap_or(&dir.child);
    update_session_file(
        &file,
        obj! {
            "role" => l.role.as_str(), "status" => l.status,
            "protocol_id" => l.spec.protocol_id(), "protocol_name" => l.spec.name().unwrap_or_default(),
            "protocol_dir" => l.protocol_dir.map(|p| Value::from(p.display().to_string())).unwrap_or(Value::Null),
            "state_dir" => parent.display().to_string(), "engine_state_dir" => dir.child.display().to_string(),
            "local_control_mode" => l.control_mode.as_str(), "options" => l.options.clone(),
            "started_at" => files::epoch_now(), "pid" => l.pid,
        },
    )
    .map(|_| ())
}

/// Sets up a side that writes its session into `dir`.
pub fn stateful_side(
    dir: StateDir,
    spec: &Spec,
    hooks: Box<dyn Hooks>,
    role: Role,
    control_mode: ControlMode,
    options: &Map,
    seed: Option<u64>,
) -> StatefulSide {
    let sink = Arc::new(StateSink::new(dir.clone()));
    let bus = Arc::new(DecisionBus::new(sink.clone(), role, options.clone(), spec));
    let strategy = Arc::new(StrategyFile::in_dir(&dir.child).watched());
    let side = Side {
        hooks,
        control_mode,
        decider: bus,
        strategy,
        sink: sink.clone(),
        chat: None,
        seed,
        binding: crate::engine::MatchBinding::default(),
    };
    StatefulSide { dir, sink, side }
}

/// Records how a run ended in session.json.
pub fn write_end(dir: &StateDir, o: &SessionOutcome) -> std::io::Result<()> {
    let Some(file) = dir.session_file() else {
        return Ok(());
    };
    let mut patch = obj! {
        "status" => if o.completed { "closed" } else { "aborted" },
        "completed" => o.completed, "ended_at" => files::epoch_now(), "end_reason" => o.reason.as_str(),
        "winner" => o.winner.as_deref().map(Value::from).unwrap_or(Value::Null),
    };
    if let Some(e) = &o.error {
        patch.insert("error", Value::from(e.as_str()));
    }
    update_session_file(&file, patch).map(|_| ())
}

/// Merges `patch` (a session's end) into session.json while the session
/// is still `starting` or `running` there; false when something else (a
/// `session abort`, a launcher's verdict) ended it first.
pub fn end_if_running(file: &Path, patch: Map) -> std::io::Result<bool> {
    let live = |m: &Map| {
        matches!(
            m.get("status").and_then(Value::as_str).unwrap_or(""),
            "" | "starting" | "running"
        )
    };
    crate::session::update_session_file_if(file, live, patch).map(|m| m.is_some())
}

/// The newest session dir under `root` (a data dir's `sessions`): the one
/// whose name ends in the largest start time. `Ok(None)` when it holds
/// none; an error when `root` cannot be read.
pub fn newest_session(root: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("session.json").is_file())
        .collect();
    dirs.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split('-').next_back())
            .and_then(|n| n.parse::<u128>().ok())
    });
    Ok(dirs.pop())
}

/// A host waiting for its guest, as its state dir says.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub post_id: String,
    /// When the invitation went up (epoch seconds).
    pub since: f64,
}

impl Waiting {
    /// Seconds waited by `now` (epoch seconds).
    pub fn waited(&self, now: f64) -> f64 {
        (now - self.since).max(0.0)
    }
}

/// The phase of a session's snapshot: its newest engine dir's, or (a room)
/// its own.
pub fn phase_of(parent: &Path) -> Option<String> {
    let dir = StateDir::resolve(parent)?;
    files::read_json_object(&dir.child.join("snapshot.json"))?
        .get("phase")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Is the session in `parent` (session.json read as `meta`) a host still
/// waiting for a guest: running, with an invitation, its snapshot in
/// `waiting_peer`?
pub fn waiting(parent: &Path, meta: &Map) -> Option<Waiting> {
    let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    if s("role") != "host" || !matches!(s("status"), "starting" | "running") {
        return None;
    }
    let post_id = s("post_id");
    if post_id.is_empty() || phase_of(parent).as_deref() != Some("waiting_peer") {
        return None;
    }
    let at = |k: &str| meta.get(k).and_then(Value::as_f64).filter(|t| *t > 0.0);
    Some(Waiting {
        post_id: post_id.to_owned(),
        since: at("invited_at").or_else(|| at("started_at")).unwrap_or(0.0),
    })
}

/// What a background session runs: one stateful side against a bot.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DaemonJob {
    /// Library alias/id, a protocol dir, or a spec.json.
    pub protocol: String,
    pub options: String,
    pub role: Role,
    pub control_mode: ControlMode,
    pub seed: Option<u64>,
    pub parent: PathBuf,
    pub child: PathBuf,
    pub data_dir: Option<PathBuf>,
    pub peer_timeout: f64,
    pub allow_skeleton_hooks: bool,
}

/// Reads the tail of daemon.err.log.
pub fn err_excerpt(parent: &Path) -> String {
    let Ok(bytes) = std::fs::read(parent.join("daemon.err.log")) else {
        return String::new();
    };
    let start = bytes.len().saturating_sub(500);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Is a process alive (and not a zombie)?
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        return stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|s| s != "Z" && s != "X");
    }
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok()
}

/// `session list`'s liveness rule (the reference's): a session said to be
/// starting or running whose process is gone becomes `crashed` (its error
/// log shows a failure) or `stopped`, with a `daemon_died` event.
pub fn check_daemon(parent: &Path) -> Option<Map> {
    let file = parent.join("session.json");
    let meta = files::read_json_object(&file)?;
    let status = meta.get("status").and_then(Value::as_str).unwrap_or("");
    let pid = meta.get("pid").and_then(Value::as_i64).unwrap_or(0);
    if !matches!(status, "starting" | "running") || pid <= 0 || pid_alive(pid as u32) {
        return Some(meta);
    }
    let excerpt = err_excerpt(parent);
    let crashed = ["panicked", "Traceback", "Error", "error", "Exception"]
        .iter()
        .any(|k| excerpt.contains(k));
    let new_status = if crashed { "crashed" } else { "stopped" };
    let mut patch = obj! { "status" => new_status };
    if !excerpt.is_empty() {
        patch.insert("last_error_excerpt", Value::from(excerpt.as_str()));
    }
    let meta = update_session_file(&file, patch).ok()?;
    // The daemon may have died in the middle of a line: nobody will finish
    // it, so cut such fragments off and leave every file parsing whole.
    let _ = files::repair_tree(parent);
    let dir = StateDir {
        parent: Some(parent.to_owned()),
        child: parent.to_owned(),
    };
    StateSink::new(dir).event(
        "daemon_died",
        obj! {
            "pid" => pid, "reason" => if crashed { "crashed_with_log" } else { "missing_no_log" },
            "last_error_excerpt" => if excerpt.is_empty() { Value::Null } else { Value::from(excerpt) },
        },
        Some(format!("Daemon process {pid} died ({new_status})")),
    );
    Some(meta)
}

/// Default engine settings for a stateful run.
pub fn engine_config(peer_timeout: std::time::Duration) -> EngineConfig {
    EngineConfig {
        peer_timeout: Some(peer_timeout.max(std::time::Duration::from_millis(10))),
        ..Default::default()
    }
}
