//! The session tools of `palaver mcp`, on the local data dir.
//!
//! Reads (snapshot, decision window, events) and decisions go straight to
//! the session's state dir with the same code `palaver session …` uses.
//! Tools that start, steer or ask the community (browse, protocol_show,
//! host, join, sessions, whisper, abort) run the very command the CLI runs
//! (`palaver <command> --json`, this binary, as a child process with a
//! timeout), so a tool and its command can never disagree; their JSON
//! answer is the tool's structured content.

use super::{Answer, Refusal, args, from_json, to_json, tool};
use crate::json::{Map, Value};
use crate::services::run;
use crate::session::{StateDir, SubmitOptions, files, submit};
use rmcp::RoleServer;
use rmcp::model::{JsonObject, Resource, Tool};
use rmcp::service::Peer;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Longest a command a tool runs may take (a join waits for the host's
/// session proof).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// Most output read back from such a command.
pub const MAX_COMMAND_OUTPUT: usize = 4 * 1024 * 1024;
/// Most events one `session_events` call returns.
pub const MAX_EVENTS: u32 = 500;
/// How often a subscribed resource's file is looked at.
pub const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The session tools over one data dir.
pub struct SessionTools {
    data_dir: PathBuf,
    /// The binary the commands run (this one).
    exe: PathBuf,
    /// `--server` for the commands, when `palaver mcp` was given one.
    server: Option<String>,
    watches: Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BrowseArgs {
    /// Only invitations for this protocol_id.
    #[serde(default)]
    protocol_id: Option<String>,
    /// Only protocols of this type (e.g. game).
    #[serde(default, rename = "type")]
    kind: Option<String>,
    /// Only invitations carrying every one of these tags.
    #[serde(default)]
    tags: Vec<String>,
    /// This one invitation in full (whatever its status).
    #[serde(default)]
    post_id: Option<String>,
    /// At most this many (1 to 100; default 50).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u16>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProtocolArgs {
    /// A library alias (rps-v1) or protocol_id.
    protocol: String,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Autonomous,
    Hybrid,
    Human,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Autonomous => "autonomous",
            Mode::Hybrid => "hybrid",
            Mode::Human => "human",
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HostArgs {
    /// A library alias (rps-v1) or protocol_id.
    protocol: String,
    /// Invitation options, checked against the spec's parameters.
    #[serde(default)]
    options: Option<JsonObject>,
    /// The invitation's message in browse.
    #[serde(default)]
    message: Option<String>,
    /// Who decides: autonomous, hybrid (default) or human (waits for
    /// session_decide at every window).
    #[serde(default)]
    control_mode: Option<Mode>,
    /// A four-seat table only: bots to seat (0 to 31).
    #[serde(default)]
    #[schemars(range(min = 0, max = 31))]
    bots: Option<u8>,
    /// Reach the guest by direct addresses only (same machine or LAN).
    #[serde(default)]
    direct: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct JoinArgs {
    /// The invitation's post_id, from browse.
    post_id: String,
    /// Who decides: autonomous, hybrid (default) or human.
    #[serde(default)]
    control_mode: Option<Mode>,
    /// Reach the host by direct addresses only (same machine or LAN).
    #[serde(default)]
    direct: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DirArgs {
    /// The session's state dir, as host, join and sessions print it
    /// (default: the newest session).
    #[serde(default)]
    state_dir: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DecideArgs {
    #[serde(default)]
    state_dir: Option<String>,
    /// The decision, e.g. {"choice": "rock"}; without a round/turn/attempt
    /// key it goes to the window open now.
    decision: JsonObject,
    /// A repeated call with the same key is a no-op.
    #[serde(default)]
    idempotency_key: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WhisperArgs {
    #[serde(default)]
    state_dir: Option<String>,
    /// What to tell your own side: "always paper", "bid 7"…
    text: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventsArgs {
    #[serde(default)]
    state_dir: Option<String>,
    /// Only events after this many (the `next` of the previous call);
    /// default: the newest `limit`.
    #[serde(default)]
    after: Option<u64>,
    /// At most this many (1 to 500; default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    limit: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AbortArgs {
    #[serde(default)]
    state_dir: Option<String>,
    /// Recorded as the end reason (default aborted_by_agent).
    #[serde(default)]
    reason: Option<String>,
}

fn object() -> Json {
    json!({"type": "object"})
}

/// The session tools.
pub fn catalogue() -> Vec<Tool> {
    vec![
        tool::<BrowseArgs>(
            "browse",
            "Open invitations on the community server (as palaver browse): post_id, protocol, host, options, pricing.",
            json!({"type": "object", "properties": {"invitations": {"type": "array"}}, "required": ["invitations"]}),
        ),
        tool::<ProtocolArgs>(
            "protocol_show",
            "A protocol's contract: its spec.json, protocol_id, parameters and messages (as palaver protocol show).",
            object(),
        ),
        tool::<HostArgs>(
            "host",
            "Host a session in the background (palaver host --daemon): publish an invitation and play whoever joins. Answers the post_id and the state_dir the other session tools take.",
            json!({"type": "object", "properties": {"state_dir": {"type": "string"}, "post_id": {"type": "string"}, "pid": {"type": "integer"}}, "required": ["state_dir"]}),
        ),
        tool::<JoinArgs>(
            "join",
            "Join an invitation in the background (palaver join --daemon): dial the host, prove the session, play. Answers the session_id and state_dir.",
            json!({"type": "object", "properties": {"state_dir": {"type": "string"}, "session_id": {"type": "string"}, "pid": {"type": "integer"}}, "required": ["state_dir"]}),
        ),
        tool::<NoArgs>(
            "sessions",
            "Sessions in the data dir with their status, role, protocol and phase (as palaver session list).",
            json!({"type": "object", "properties": {"sessions": {"type": "array"}}, "required": ["sessions"]}),
        ),
        tool::<DirArgs>(
            "session_snapshot",
            "A session's snapshot: phase, role, protocol, score, round, last event, the open window's timing; and the session's status.",
            json!({"type": "object", "properties": {"state_dir": {"type": "string"}, "status": {}, "snapshot": {"type": "object"}}, "required": ["state_dir", "snapshot"]}),
        ),
        tool::<DirArgs>(
            "session_window",
            "The decision window open now, if any: its match key and value, the legal choices from the protocol's decision schema, and the deadline (epoch seconds and seconds left). Answer it with session_decide.",
            json!({"type": "object", "properties": {"open": {"type": "boolean"}, "ended": {"type": "boolean"}, "match_key": {"type": "string"}, "match_value": {}, "deadline_at_epoch": {"type": "number"}, "seconds_left": {"type": "number"}, "schema": {}}, "required": ["open", "ended"]}),
        ),
        tool::<DecideArgs>(
            "session_decide",
            "Submit a decision for the open (or named) window, as palaver session decide does. A finalized window or a repeated idempotency key is refused.",
            json!({"type": "object", "properties": {"status": {"type": "string"}, "decision_id": {}, "match_key": {}, "match_value": {}}, "required": ["status"]}),
        ),
        tool::<WhisperArgs>(
            "session_whisper",
            "Whisper to your own side (palaver session whisper): a user whisper sets the operator hint and may become a strategy, decision or intent.",
            object(),
        ),
        tool::<EventsArgs>(
            "session_events",
            "A session's events (events.jsonl and the decision events), in order; page with after=next.",
            json!({"type": "object", "properties": {"events": {"type": "array"}, "next": {"type": "integer"}, "total": {"type": "integer"}}, "required": ["events", "next", "total"]}),
        ),
        tool::<AbortArgs>(
            "session_abort",
            "Stop a running daemon session and record why (palaver session abort).",
            object(),
        ),
    ]
}

impl SessionTools {
    pub fn new(data_dir: PathBuf, exe: PathBuf, server: Option<String>) -> SessionTools {
        SessionTools {
            data_dir,
            exe,
            server,
            watches: Mutex::new(HashMap::new()),
        }
    }

    fn root(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    /// The named state dir, or the newest session.
    fn dir(&self, named: Option<&str>) -> Result<StateDir, Refusal> {
        let path = match named {
            Some(p) => PathBuf::from(p),
            None => run::newest_session(&self.root())
                .ok()
                .flatten()
                .ok_or_else(|| {
                    Refusal::new(
                        "no_session",
                        format!("no sessions in {}", self.root().display()),
                    )
                })?,
        };
        StateDir::resolve(&path).ok_or_else(|| {
            Refusal::new(
                "no_session",
                format!("{} is not a session state dir (no session.json, snapshot.json or details.jsonl)", path.display()),
            )
        })
    }

    /// Runs session tool `name`; `None` when it is not one.
    pub async fn call(&self, name: &str, a: Option<JsonObject>) -> Option<Answer> {
        Some(match name {
            "browse" => self.browse(args(name, a)).await,
            "protocol_show" => match args::<ProtocolArgs>(name, a) {
                Ok(p) => self.command(&["protocol", "show", &p.protocol]).await,
                Err(e) => Err(e),
            },
            "host" => self.host(args(name, a)).await,
            "join" => self.join(args(name, a)).await,
            "sessions" => match args::<NoArgs>(name, a) {
                Ok(_) => self
                    .command(&["session", "list"])
                    .await
                    .map(|v| json!({ "sessions": v })),
                Err(e) => Err(e),
            },
            "session_snapshot" => {
                args::<DirArgs>(name, a).and_then(|d| self.snapshot(d.state_dir.as_deref()))
            }
            "session_window" => {
                args::<DirArgs>(name, a).and_then(|d| self.window(d.state_dir.as_deref()))
            }
            "session_decide" => args::<DecideArgs>(name, a).and_then(|d| self.decide(d)),
            "session_whisper" => match args::<WhisperArgs>(name, a) {
                Ok(w) => match self.dir(w.state_dir.as_deref()) {
                    Ok(d) => {
                        let dir = d.parent.unwrap_or(d.child).display().to_string();
                        self.command(&[
                            "session",
                            "whisper",
                            "--state-dir",
                            &dir,
                            "--text",
                            &w.text,
                        ])
                        .await
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            "session_events" => args::<EventsArgs>(name, a).and_then(|e| self.events(e)),
            "session_abort" => match args::<AbortArgs>(name, a) {
                Ok(x) => match self.dir(x.state_dir.as_deref()) {
                    Ok(d) => {
                        let dir = d.parent.unwrap_or(d.child).display().to_string();
                        let reason = x.reason.unwrap_or_else(|| "aborted_by_agent".into());
                        self.command(&["session", "abort", &dir, "--reason", &reason])
                            .await
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            _ => return None,
        })
    }

    async fn browse(&self, a: Result<BrowseArgs, Refusal>) -> Answer {
        let a = a?;
        let mut argv: Vec<String> = vec!["browse".into()];
        let mut flag = |f: &str, v: Option<String>| {
            if let Some(v) = v {
                argv.push(f.into());
                argv.push(v);
            }
        };
        flag("--protocol-id", a.protocol_id);
        flag("--type", a.kind);
        flag("--post-id", a.post_id);
        if let Some(l) = a.limit {
            if !(1..=100).contains(&l) {
                return Err(Refusal::args(
                    "browse",
                    format!("limit must be 1 to 100, not {l}"),
                ));
            }
            flag("--limit", Some(l.to_string()));
        }
        if !a.tags.is_empty() {
            flag("--tags", Some(a.tags.join(",")));
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let v = self.command(&argv).await?;
        Ok(match v {
            Json::Array(_) => json!({ "invitations": v }),
            Json::Object(ref o) if o.contains_key("invitations") => v,
            other => json!({ "invitations": [other] }),
        })
    }

    async fn host(&self, a: Result<HostArgs, Refusal>) -> Answer {
        let a = a?;
        let mut argv: Vec<String> = vec!["host".into(), a.protocol.clone(), "--daemon".into()];
        argv.push("--control-mode".into());
        argv.push(a.control_mode.unwrap_or(Mode::Hybrid).as_str().into());
        if let Some(o) = a.options {
            argv.push("--options".into());
            argv.push(Json::Object(o).to_string());
        }
        if let Some(m) = a.message {
            argv.push("--message".into());
            argv.push(m);
        }
        if let Some(b) = a.bots {
            if b > 31 {
                return Err(Refusal::args(
                    "host",
                    format!("bots must be 0 to 31, not {b}"),
                ));
            }
            argv.push("--bots".into());
            argv.push(b.to_string());
        }
        if a.direct {
            argv.push("--direct".into());
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        self.command(&argv).await
    }

    async fn join(&self, a: Result<JoinArgs, Refusal>) -> Answer {
        let a = a?;
        let mode = a.control_mode.unwrap_or(Mode::Hybrid).as_str();
        let mut argv = vec!["join", &a.post_id, "--daemon", "--control-mode", mode];
        if a.direct {
            argv.push("--direct");
        }
        self.command(&argv).await
    }

    /// Runs `palaver <argv> --json` on this data dir; its JSON answer, or a
    /// refusal carrying its error text.
    async fn command(&self, argv: &[&str]) -> Answer {
        let mut c = tokio::process::Command::new(&self.exe);
        c.arg("--data-dir").arg(&self.data_dir).arg("--json");
        if let Some(s) = &self.server {
            c.arg("--server").arg(s);
        }
        c.args(argv)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let what = format!("palaver {}", argv.first().copied().unwrap_or(""));
        let out = match tokio::time::timeout(COMMAND_TIMEOUT, c.output()).await {
            Err(_) => {
                return Err(Refusal::new(
                    "timeout",
                    format!("{what} took longer than {} s", COMMAND_TIMEOUT.as_secs()),
                ));
            }
            Ok(Err(e)) => {
                return Err(Refusal::new(
                    "command_failed",
                    format!("{what} could not run: {e}"),
                ));
            }
            Ok(Ok(o)) => o,
        };
        if out.stdout.len() > MAX_COMMAND_OUTPUT {
            return Err(Refusal::new(
                "command_failed",
                format!("{what} printed more than {MAX_COMMAND_OUTPUT} bytes"),
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let parsed = serde_json::from_str::<Json>(text.trim()).ok().or_else(|| {
            // A command may print progress before its JSON: the last line.
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| serde_json::from_str(l).ok())
        });
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err
                .lines()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let mut r = Refusal::new(
                "command_failed",
                format!("{what}: {}", tail.join("\n").trim()),
            );
            if let (Some(m), Some(p)) = (r.0.as_object_mut(), parsed) {
                m.insert("output".into(), p);
            }
            if let Some(m) = r.0.as_object_mut() {
                m.insert("exit_code".into(), json!(out.status.code()));
            }
            return Err(r);
        }
        parsed.ok_or_else(|| {
            Refusal::new(
                "command_failed",
                format!(
                    "{what} printed no JSON: {}",
                    text.chars().take(400).collect::<String>()
                ),
            )
        })
    }

    fn status_of(dir: &StateDir) -> Json {
        dir.session_file()
            .and_then(|f| files::read_json_object(&f))
            .and_then(|m| m.get("status").map(to_json))
            .unwrap_or(Json::Null)
    }

    fn snapshot(&self, named: Option<&str>) -> Answer {
        let dir = self.dir(named)?;
        let snap = files::read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
        let parent = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
        let mut out = json!({
            "state_dir": parent.display().to_string(),
            "status": Self::status_of(&dir),
            "snapshot": to_json(&Value::Object(snap)),
        });
        if let Some(w) = dir
            .parent
            .as_deref()
            .and_then(|p| run::waiting(p, &run::check_daemon(p)?))
        {
            out["waiting_for_guest"] =
                json!({ "post_id": w.post_id, "seconds": w.waited(files::epoch_now()).floor() });
        }
        Ok(out)
    }

    fn window(&self, named: Option<&str>) -> Answer {
        let dir = self.dir(named)?;
        let snap = files::read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
        let status = Self::status_of(&dir);
        let ended = !matches!(
            status.as_str(),
            None | Some("") | Some("starting") | Some("running")
        ) || snap.get_str("phase") == Some("ended");
        let timing = snap
            .get("timing")
            .and_then(Value::as_object)
            .filter(|t| !t.is_empty());
        let Some(t) = timing.filter(|t| t.get_str("match_key").is_some()) else {
            return Ok(json!({ "open": false, "ended": ended, "phase": snap.get_str("phase") }));
        };
        let deadline = t
            .get("deadline_at_epoch")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let protocol = snap.get_str("protocol_id").map(str::to_owned).or_else(|| {
            dir.session_file()
                .and_then(|f| files::read_json_object(&f))
                .and_then(|m| m.get_str("protocol_id").map(str::to_owned))
        });
        let schema = protocol
            .as_deref()
            .and_then(crate::protocols::native_hooks_by_id)
            .and_then(|h| h.decision_schema())
            .map(|s| to_json(&Value::Object(s)))
            .unwrap_or(Json::Null);
        let value = t.get("match_value").cloned().unwrap_or(Value::Null);
        let key = t.get_str("match_key").unwrap_or("");
        let decided = crate::session::decision::is_finalized(&dir.decision_dir(), key, &value);
        Ok(json!({
            "open": !decided,
            "ended": ended,
            "phase": snap.get_str("phase"),
            "match_key": key,
            "match_value": to_json(&value),
            "deadline_at_epoch": deadline,
            "seconds_left": (deadline - files::epoch_now()).max(0.0),
            "schema": schema,
            "round": snap.get("round").map(to_json),
            "score": snap.get("score").map(to_json),
        }))
    }

    fn decide(&self, d: DecideArgs) -> Answer {
        let dir = self.dir(d.state_dir.as_deref())?;
        let body = match from_json(&Json::Object(d.decision)) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Refusal::args(
                    "session_decide",
                    "decision must be a JSON object",
                ));
            }
            Err(e) => return Err(Refusal::args("session_decide", e)),
        };
        let opts = SubmitOptions {
            origin: "mcp".into(),
            agent_id: None,
            idempotency_key: d.idempotency_key,
            require_match_key: false,
        };
        let r = submit(&dir.child, body, &opts).map_err(|e| {
            Refusal::new(
                "io",
                format!("writing to {}: {e}", dir.decision_dir().display()),
            )
        })?;
        let v = serde_json::to_value(&r).unwrap_or(Json::Null);
        if r.ok {
            Ok(v)
        } else {
            let mut refusal = Refusal::new(
                "decision_rejected",
                format!(
                    "the decision was not taken: {}",
                    r.reason.unwrap_or("rejected")
                ),
            );
            if let (Some(m), Json::Object(o)) = (refusal.0.as_object_mut(), v) {
                m.extend(o.into_iter().filter(|(k, _)| k != "status"));
            }
            Err(refusal)
        }
    }

    fn event_lines(dir: &StateDir) -> Vec<Map> {
        let mut files = vec![dir.events_file()];
        if dir.decision_events_file() != dir.events_file() {
            files.push(dir.decision_events_file());
        }
        let mut all: Vec<Map> = files.iter().flat_map(|f| files::read_jsonl(f)).collect();
        all.sort_by(|a, b| {
            a.get_str("ts")
                .unwrap_or("")
                .cmp(b.get_str("ts").unwrap_or(""))
        });
        all
    }

    fn events(&self, e: EventsArgs) -> Answer {
        let limit = e.limit.unwrap_or(100);
        if !(1..=MAX_EVENTS).contains(&limit) {
            return Err(Refusal::args(
                "session_events",
                format!("limit must be 1 to {MAX_EVENTS}, not {limit}"),
            ));
        }
        let dir = self.dir(e.state_dir.as_deref())?;
        let all = Self::event_lines(&dir);
        let total = all.len();
        let from = match e.after {
            Some(a) => usize::try_from(a).unwrap_or(usize::MAX).min(total),
            None => total.saturating_sub(limit as usize),
        };
        let page: Vec<Json> = all[from..]
            .iter()
            .take(limit as usize)
            .map(|m| to_json(&Value::Object(m.clone())))
            .collect();
        let next = from + page.len();
        Ok(json!({ "events": page, "next": next, "total": total }))
    }

    /// The resources: each session's snapshot and events.
    pub fn resources(&self) -> Vec<Resource> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.root())
            .map(|r| {
                r.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.join("session.json").is_file())
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs.iter()
            .rev()
            .take(50)
            .filter_map(|d| d.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .flat_map(|n| {
                [
                    Resource::new(format!("palaver://sessions/{n}/snapshot"), format!("{n} snapshot"))
                        .with_mime_type("application/json")
                        .with_description("The session's snapshot.json: phase, score, round, the open window's timing."),
                    Resource::new(format!("palaver://sessions/{n}/events"), format!("{n} events"))
                        .with_mime_type("application/json")
                        .with_description("The session's newest 200 events, as a JSON array."),
                ]
            })
            .collect()
    }

    /// The file behind `uri`, and whether it is the events.
    fn resolve_uri(&self, uri: &str) -> Result<(StateDir, bool), String> {
        let rest = uri
            .strip_prefix("palaver://sessions/")
            .ok_or_else(|| format!("no resource {uri}"))?;
        let (name, what) = rest
            .rsplit_once('/')
            .ok_or_else(|| format!("no resource {uri}"))?;
        if name.is_empty()
            || name.contains('/')
            || name.contains("..")
            || !matches!(what, "snapshot" | "events")
        {
            return Err(format!("no resource {uri}"));
        }
        let dir = StateDir::resolve(&self.root().join(name))
            .ok_or_else(|| format!("no session {name} in {}", self.root().display()))?;
        Ok((dir, what == "events"))
    }

    /// A resource's text.
    pub fn read(&self, uri: &str) -> Result<String, String> {
        let (dir, events) = self.resolve_uri(uri)?;
        if events {
            let all = Self::event_lines(&dir);
            let tail: Vec<Json> = all[all.len().saturating_sub(200)..]
                .iter()
                .map(|m| to_json(&Value::Object(m.clone())))
                .collect();
            Ok(Json::Array(tail).to_string())
        } else {
            let snap =
                files::read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
            Ok(to_json(&Value::Object(snap)).to_string())
        }
    }

    /// Tells `peer` whenever the resource's file changes, until
    /// unsubscribed or the peer is gone.
    pub fn subscribe(&self, uri: &str, peer: Peer<RoleServer>) -> Result<(), String> {
        let (dir, events) = self.resolve_uri(uri)?;
        let watched: Vec<PathBuf> = if events {
            vec![dir.events_file(), dir.decision_events_file()]
        } else {
            vec![dir.child.join("snapshot.json")]
        };
        let u = uri.to_owned();
        let task = tokio::spawn(async move {
            let stamp = |fs: &[PathBuf]| -> Vec<Option<(u64, std::time::SystemTime)>> {
                fs.iter().map(|f| stamp_of(f)).collect()
            };
            let mut last = stamp(&watched);
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let now = stamp(&watched);
                if now != last {
                    last = now;
                    let p = rmcp::model::ResourceUpdatedNotificationParam::new(u.clone());
                    if peer.notify_resource_updated(p).await.is_err() {
                        return;
                    }
                }
            }
        });
        if let Ok(mut w) = self.watches.lock()
            && let Some(old) = w.insert(uri.to_owned(), task.abort_handle())
        {
            old.abort();
        }
        Ok(())
    }

    pub fn unsubscribe(&self, uri: &str) {
        if let Ok(mut w) = self.watches.lock()
            && let Some(h) = w.remove(uri)
        {
            h.abort();
        }
    }
}

impl Drop for SessionTools {
    fn drop(&mut self) {
        if let Ok(w) = self.watches.lock() {
            for h in w.values() {
                h.abort();
            }
        }
    }
}

fn stamp_of(f: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = std::fs::metadata(f).ok()?;
    Some((m.len(), m.modified().ok()?))
}
