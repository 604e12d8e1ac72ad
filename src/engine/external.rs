//! Hooks in any language: a program next to a protocol's spec.json that
//! answers hook calls as JSON lines on stdin/stdout. The contract is in
//! docs/hooks.md; in short:
//!
//! ```text
//! palaver → program   {"id":7,"hook":"round_value","args":{"round":0}}
//! program → palaver   {"id":7,"ok":true,"result":"rock"}
//!                     {"id":7,"ok":false,"error":"why"}
//!                     {"id":7,"decide":{"match_key":"round","match_value":0,"auto":{"choice":"rock"},"value_field":"choice"}}
//! palaver → program   {"id":7,"decision":{"choice":"paper"}}      (answer to a decide)
//! program → palaver   {"event":"kind","data":{…}} | {"snapshot":{…}} | {"detail":{…}}   (any time)
//! ```
//!
//! A program that crashes, hangs past the hook timeout, or replies garbage
//! ends the session cleanly with that reason (`hook_error`).

use super::realtime::RealtimeRules;
use super::{
    ControlMode, Ctx, Dir, Event, EventSink, HookError, HookResult, Hooks, HostMetadata, Window,
};
use crate::json::canonical;
use crate::json::{self, Map, Value};
use crate::obj;
use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

mod realtime;

/// The sidecar file `protocol scaffold` writes next to generated hooks.
pub const SIDECAR: &str = ".palaver-hooks.json";

/// Sentinels marking generated, unimplemented hooks (palaver's and the
/// reference client's).
const SKELETON_FLAGS: [&str; 2] = ["PALAVER_SKELETON", "AIGENORA_SKELETON"];

/// The program palaver ships to run a `hooks.py` written on the reference
/// client's SDK (`class Hooks(ProtocolHooks)`) as a hooks program: it
/// loads the module in a Python that has the `aigenora` package and
/// answers palaver's hooks contract with the module's `proto_*` methods.
pub const AIGENORA_BRIDGE: &str = include_str!("../../assets/hooks/aigenora_bridge.py");

/// The reference client's skeleton sidecar, recognised beside palaver's.
const REFERENCE_SIDECAR: &str = ".aigenora-hooks.json";

/// Is this hooks.py written on the reference client's SDK?
pub fn is_reference_hooks(text: &str) -> bool {
    text.contains("ProtocolHooks") && text.contains("aigenora")
}

/// The bridge as a file (tracebacks then name real lines): written once
/// per bridge version under the temp dir, atomically.
fn bridge_file() -> Result<PathBuf> {
    let hash = canonical::sha256_hex(AIGENORA_BRIDGE);
    let dir = std::env::temp_dir().join("palaver-hooks-bridge");
    let path = dir.join(format!("aigenora_bridge-{}.py", &hash[..16]));
    let current = std::fs::read(&path).is_ok_and(|b| b == AIGENORA_BRIDGE.as_bytes());
    if !current {
        crate::fsutil::write_atomic(&path, AIGENORA_BRIDGE.as_bytes())
            .with_context(|| format!("writing the hooks bridge to {}", path.display()))?;
    }
    Ok(path)
}

/// How to start a protocol directory's hooks program.
#[derive(Debug, Clone)]
pub struct HooksProgram {
    pub dir: PathBuf,
    pub command: Vec<String>,
    pub timeout: Duration,
    /// Environment set for the program (the skeleton bypass, for one).
    pub env: Vec<(String, String)>,
}

/// How many of the program's last stderr lines are kept for error reports.
const STDERR_LINES: usize = 20;

/// Hook methods named in a skeleton as not implemented yet, or None when
/// the file is not a pristine skeleton.
pub fn skeleton_status(dir: &Path, file: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut missing: Vec<String> = Vec::new();
    for flag in SKELETON_FLAGS {
        let marker = format!("{flag}_NOT_IMPLEMENTED:");
        for (i, _) in text.match_indices(&marker) {
            let name: String = text[i + marker.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !missing.contains(&name) {
                missing.push(name);
            }
        }
    }
    let flagged = text.lines().any(|l| {
        SKELETON_FLAGS.iter().any(|f| {
            l.strip_prefix(f).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.strip_prefix('=').is_some_and(|v| {
                    let v = v.trim_start();
                    v.starts_with("True")
                        && !v[4..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })
    });
    let unchanged = sidecar_says_unchanged(dir, &text);
    (flagged || unchanged || !missing.is_empty()).then_some(missing)
}

/// Does palaver's or the reference's sidecar say `text` is the generated
/// skeleton, for the spec as it is now?
fn sidecar_says_unchanged(dir: &Path, text: &str) -> bool {
    let spec_bytes = std::fs::read(dir.join("spec.json")).unwrap_or_default();
    let hooks_hash = canonical::sha256_hex(text);
    let spec_hash = canonical::sha256_hex(&spec_bytes);
    [SIDECAR, REFERENCE_SIDECAR].iter().any(|name| {
        crate::spec::read_json_file(&dir.join(name)).is_ok_and(|side| {
            side.get("skeleton_hash").and_then(Value::as_str) == Some(hooks_hash.as_str())
                && side.get("spec_hash").and_then(Value::as_str) == Some(spec_hash.as_str())
        })
    })
}

impl HooksProgram {
    /// Finds the hooks program of a protocol directory: the sidecar's
    /// `command`, else an executable `hooks`, else `hooks.py` run with
    /// `python3` (`PALAVER_PYTHON` overrides) — or, when that hooks.py is
    /// written on the reference client's SDK, the bridge run with
    /// `bridge_python`. A pristine skeleton is refused unless
    /// `allow_skeleton`.
    pub fn find(dir: &Path, allow_skeleton: bool, bridge_python: &str) -> Result<HooksProgram> {
        let timeout = match std::env::var("PALAVER_HOOK_TIMEOUT") {
            Ok(v) => crate::limits::HOOK_TIMEOUT.parse(&v)?,
            Err(_) => Duration::from_secs(10),
        };
        let python = std::env::var("PALAVER_PYTHON").unwrap_or_else(|_| "python3".into());
        let sidecar = crate::spec::read_json_file(&dir.join(SIDECAR)).ok();
        let from_sidecar: Option<Vec<String>> = sidecar
            .as_ref()
            .and_then(|s| s.get("command"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .filter(|c: &Vec<String>| !c.is_empty());
        let (command, file) = if let Some(mut c) = from_sidecar {
            if c[0] == "python3" {
                c[0] = python.clone();
            }
            let file = c.iter().skip(1).map(|a| dir.join(a)).find(|p| p.is_file());
            (c, file)
        } else if dir.join("hooks").is_file() {
            (
                vec![dir.join("hooks").display().to_string()],
                Some(dir.join("hooks")),
            )
        } else if dir.join("hooks.py").is_file() {
            (vec![python, "hooks.py".into()], Some(dir.join("hooks.py")))
        } else {
            bail!(
                "{} has no hooks program (hooks, hooks.py, or a `command` in {SIDECAR}); see docs/hooks.md",
                dir.display()
            );
        };
        // A hooks.py written on the reference client's SDK runs through the
        // bridge, also where a scaffold's sidecar still names it (a user who
        // dropped the reference's hooks.py over palaver's scaffold).
        let command = match &file {
            Some(f) if f.file_name().is_some_and(|n| n == "hooks.py") => {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("reading {}", f.display()))?;
                if is_reference_hooks(&text) {
                    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
                    let bridge = bridge_file()?.display().to_string();
                    vec![bridge_python.to_owned(), bridge, abs.display().to_string()]
                } else {
                    command
                }
            }
            _ => command,
        };
        if let Some(f) = &file
            && !allow_skeleton
            && let Some(missing) = skeleton_status(dir, f)
        {
            let list = if missing.is_empty() {
                "(all)".to_owned()
            } else {
                missing.join(", ")
            };
            bail!(
                "{} is an unimplemented hooks skeleton; unimplemented hooks: {list}. Implement them, or pass \
                 --allow-skeleton-hooks (PALAVER_ALLOW_SKELETON_HOOKS=1) to run it anyway",
                f.display()
            );
        }
        // A bridge or program that checks for skeletons itself is told the
        // user's --allow-skeleton-hooks too.
        let env = if allow_skeleton {
            vec![("PALAVER_ALLOW_SKELETON_HOOKS".to_owned(), "1".to_owned())]
        } else {
            Vec::new()
        };
        Ok(HooksProgram {
            dir: dir.to_owned(),
            command,
            timeout,
            env,
        })
    }

    /// Starts the program.
    pub fn spawn(&self) -> Result<ExternalHooks> {
        let mut child = tokio::process::Command::new(&self.command[0])
            .args(&self.command[1..])
            .current_dir(&self.dir)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting the hooks program `{}`", self.command.join(" ")))?;
        let stdin = child.stdin.take().context("hooks stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("hooks stdout")?);
        // stderr is read all along (a chatty program must never block on a
        // full pipe); its last lines are kept for the error report.
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_LINES)));
        if let Some(err) = child.stderr.take() {
            let keep = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err);
                let mut buf = Vec::new();
                while let Ok(n) = lines.read_until(b'\n', &mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                    buf.clear();
                    if line.is_empty() {
                        continue;
                    }
                    let mut q = keep
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if q.len() == STDERR_LINES {
                        q.pop_front();
                    }
                    // One line is at most 1 KiB in a report.
                    q.push_back(line.chars().take(1024).collect());
                }
            });
        }
        // A realtime protocol's program also answers the realtime hooks.
        let realtime = crate::spec::read_json_file(&self.dir.join("spec.json"))
            .ok()
            .and_then(|spec| {
                spec.get("flow")
                    .and_then(|f| f.get("mode"))
                    .and_then(Value::as_str)
                    .map(|m| m == "authoritative_realtime")
            })
            .unwrap_or(false);
        Ok(ExternalHooks {
            dir: self.dir.clone(),
            realtime,
            ruleset: None,
            sink: None,
            child,
            stdin,
            stdout,
            stderr,
            next_id: 0,
            timeout: self.timeout,
            describe: None,
            described_yet: false,
            dead: None,
            extra_args: Vec::new(),
        })
    }
}

/// A running hooks program.
pub struct ExternalHooks {
    /// The protocol dir (its ruleset hash is what a realtime program presents).
    dir: PathBuf,
    /// Is the dir's spec an `authoritative_realtime` one?
    realtime: bool,
    /// The ruleset hash to present instead of the dir's (`--ruleset-dir`).
    ruleset: Option<String>,
    /// The session's sink, kept from `init` for the realtime hooks (they
    /// get no `Ctx`) so the program's events and snapshots still land.
    sink: Option<Arc<dyn EventSink>>,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The last lines of the program's stderr.
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_id: i64,
    timeout: Duration,
    /// The program's answer to `describe`.
    describe: Option<Map>,
    /// Has `describe` been asked (its answer may be None)?
    described_yet: bool,
    /// Why the program can no longer be used.
    dead: Option<String>,
    /// `extra_args`, sent with `init` as `args` (when there are any).
    extra_args: Vec<String>,
}

impl ExternalHooks {
    /// The last three stderr lines, once the program has had a moment to
    /// write its last words (it may be exiting).
    async fn stderr_tail(&mut self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(200), self.child.wait()).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let q = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = q.len();
        q.iter()
            .skip(n.saturating_sub(3))
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    async fn fail(&mut self, why: String) -> HookError {
        let tail = self.stderr_tail().await;
        let msg = if tail.is_empty() {
            why
        } else {
            format!("{why}; stderr: {tail}")
        };
        self.dead = Some(msg.clone());
        let _ = self.child.start_kill();
        HookError::External(msg)
    }

    /// One hook call; `ctx` answers decision requests and takes events.
    async fn call(&mut self, ctx: Option<&Ctx>, hook: &str, args: Map) -> Result<Value, HookError> {
        if let Some(d) = &self.dead {
            return Err(HookError::External(d.clone()));
        }
        self.next_id += 1;
        let id = self.next_id;
        let req = Value::Object(obj! { "id" => id, "hook" => hook, "args" => args });
        if let Err(e) = self.write(&req).await {
            return Err(self
                .fail(format!(
                    "cannot write to the hooks program ({e}) calling `{hook}`"
                ))
                .await);
        }
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(self.timeout, self.stdout.read_line(&mut line)).await;
            let n = match read {
                Err(_) => {
                    return Err(self
                        .fail(format!(
                            "no reply to `{hook}` within {:.1} s",
                            self.timeout.as_secs_f64()
                        ))
                        .await);
                }
                Ok(Err(e)) => {
                    return Err(self
                        .fail(format!("reading the reply to `{hook}`: {e}"))
                        .await);
                }
                Ok(Ok(n)) => n,
            };
            if n == 0 {
                let status = self
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "still running".into());
                return Err(self
                    .fail(format!(
                        "the hooks program closed its output during `{hook}` ({status})"
                    ))
                    .await);
            }
            if line.trim().is_empty() {
                continue;
            }
            let reply = match json::parse_str(line.trim_end()) {
                Ok(Value::Object(m)) => m,
                _ => {
                    let shown: String = line.trim_end().chars().take(80).collect();
                    return Err(self
                        .fail(format!(
                            "the hooks program replied garbage to `{hook}`: {shown}"
                        ))
                        .await);
                }
            };
            let sink = ctx.map(|c| c.sink.clone()).or_else(|| self.sink.clone());
            if Self::side_channel(sink.as_deref(), &reply) {
                continue;
            }
            if reply.get("id").and_then(Value::as_i64) != Some(id) {
                return Err(self
                    .fail(format!(
                        "reply to `{hook}` carries id {} instead of {id}",
                        reply
                            .get("id")
                            .map(Value::py_str)
                            .unwrap_or_else(|| "none".into())
                    ))
                    .await);
            }
            if let Some(req) = reply.get("decide").and_then(Value::as_object) {
                let Some(ctx) = ctx else {
                    return Err(self
                        .fail(format!(
                            "`{hook}` asked for a decision where none can be taken"
                        ))
                        .await);
                };
                let decision = self.decide(ctx, req).await?;
                let answer = Value::Object(obj! { "id" => id, "decision" => decision });
                if let Err(e) = self.write(&answer).await {
                    return Err(self
                        .fail(format!("cannot answer the decision request ({e})"))
                        .await);
                }
                continue;
            }
            return match reply.get("ok").and_then(Value::as_bool) {
                Some(true) => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
                Some(false) => {
                    let e = reply
                        .get("error")
                        .map(Value::py_str)
                        .unwrap_or_else(|| "unspecified error".into());
                    // A reported error is the protocol's own verdict, not a
                    // broken program: the session ends but the program lives.
                    Err(HookError::Invalid(format!("`{hook}` failed: {e}")))
                }
                None => Err(self
                    .fail(format!("reply to `{hook}` has neither `ok` nor `decide`"))
                    .await),
            };
        }
    }

    /// Events, snapshot patches and detail records the program sends (to
    /// `sink`; dropped when there is none).
    fn side_channel(sink: Option<&dyn EventSink>, m: &Map) -> bool {
        if m.contains_key("id") {
            return false;
        }
        let Some(sink) = sink else {
            return m.get("event").and_then(Value::as_str).is_some()
                || m.get("snapshot").and_then(Value::as_object).is_some()
                || m.get("detail").and_then(Value::as_object).is_some();
        };
        if let Some(kind) = m.get("event").and_then(Value::as_str) {
            // Event kinds are a closed set of static names in the sink; a
            // program's own kinds are carried under `hook_event`.
            let data = m
                .get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut d = obj! { "kind" => kind };
            for (k, v) in data.iter() {
                d.insert(k, v.clone());
            }
            sink.emit(Event {
                kind: "hook_event",
                data: d,
                summary: m.get("summary").map(Value::py_str),
            });
            return true;
        }
        if let Some(s) = m.get("snapshot").and_then(Value::as_object) {
            sink.snapshot(s.clone());
            return true;
        }
        if let Some(d) = m.get("detail").and_then(Value::as_object) {
            sink.detail(d.clone());
            return true;
        }
        false
    }

    async fn decide(&mut self, ctx: &Ctx, req: &Map) -> Result<Value, HookError> {
        let key = match req.get("match_key").and_then(Value::as_str) {
            Some("round") => "round",
            Some("turn") => "turn",
            Some("attempt") => "attempt",
            Some("setup") => "setup",
            Some("action_seq") => "action_seq",
            other => {
                return Err(self
                    .fail(format!(
                        "decision request with an unknown match_key {other:?}"
                    ))
                    .await);
            }
        };
        let field = match req.get("value_field").and_then(Value::as_str) {
            Some("choice") => "choice",
            Some("number") => "number",
            Some("move") => "move",
            Some("bid") => "bid",
            Some("secret") => "secret",
            Some("text") => "text",
            _ => "",
        };
        let window = Window {
            match_key: key,
            match_value: req.get("match_value").cloned().unwrap_or(Value::Null),
            auto: req
                .get("auto")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            value_field: field,
            policy: None,
        };
        // The program checks legality itself; any body is passed through.
        let auto_body = window.auto.clone();
        let v = ctx.choose(window, |d| Ok(Value::Object(d.clone()))).await?;
        Ok(match v {
            Value::Object(m) => Value::Object(m),
            _ if field.is_empty() => Value::Object(auto_body),
            other => Value::Object(obj! { field => other }),
        })
    }

    async fn write(&mut self, v: &Value) -> std::io::Result<()> {
        let mut line = canonical::to_string_ordered(v);
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await
    }

    fn result_of(v: Value) -> HookResult {
        match v {
            Value::Object(m)
                if m.contains_key("response")
                    || m.contains_key("completed")
                    || m.contains_key("abort") =>
            {
                HookResult {
                    response: m.get("response").and_then(Value::as_object).cloned(),
                    completed: m.get("completed").is_some_and(Value::truthy),
                    abort: m.get("abort").is_some_and(Value::truthy),
                }
            }
            Value::Object(m) => HookResult::send(m),
            _ => HookResult::none(),
        }
    }

    /// `describe` is optional: a program may answer it with an error.
    async fn describe_call(&mut self, ctx: Option<&Ctx>) -> Result<Option<Map>, HookError> {
        match self.call(ctx, "describe", Map::new()).await {
            Ok(d) => Ok(d.as_object().cloned()),
            Err(HookError::Invalid(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn described<'a>(&'a self, key: &str) -> Option<&'a Value> {
        self.describe.as_ref().and_then(|d| d.get(key))
    }
}

fn msg_args(msg: &Map) -> Map {
    obj! { "msg" => msg.clone() }
}

#[async_trait]
impl Hooks for ExternalHooks {
    fn set_extra_args(&mut self, args: Vec<String>) -> Result<(), HookError> {
        self.extra_args = args;
        Ok(())
    }

    fn supported_control_modes(&self) -> &'static [ControlMode] {
        let modes: Vec<ControlMode> = self
            .described("supported_control_modes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter_map(ControlMode::parse)
                    .collect()
            })
            .unwrap_or_else(|| ControlMode::ALL.to_vec());
        match (
            modes.contains(&ControlMode::Autonomous),
            modes.contains(&ControlMode::Hybrid),
            modes.contains(&ControlMode::Human),
        ) {
            (true, true, true) => &ControlMode::ALL,
            (true, true, false) => &[ControlMode::Autonomous, ControlMode::Hybrid],
            (true, false, false) => &[ControlMode::Autonomous],
            (true, false, true) => &[ControlMode::Autonomous, ControlMode::Human],
            (false, true, true) => &[ControlMode::Hybrid, ControlMode::Human],
            (false, true, false) => &[ControlMode::Hybrid],
            (false, false, true) => &[ControlMode::Human],
            (false, false, false) => &[],
        }
    }

    fn decision_schema(&self) -> Option<Map> {
        self.described("decision_schema")
            .and_then(Value::as_object)
            .cloned()
    }

    fn host_metadata(&self) -> HostMetadata {
        let m = self
            .described("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let s = |k: &str, d: &str| m.get(k).and_then(Value::as_str).unwrap_or(d).to_owned();
        HostMetadata {
            display_name: s("display_name", "External protocol"),
            tags: s("tags", ""),
            invite_type: s("invite_type", "supply"),
            default_options: m
                .get("default_options")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }

    async fn prepare(&mut self) -> Result<(), HookError> {
        if !self.described_yet {
            self.describe = self.describe_call(None).await?;
            self.described_yet = true;
        }
        Ok(())
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        self.sink = Some(ctx.sink.clone());
        if !self.described_yet {
            self.describe = self.describe_call(Some(ctx)).await?;
            self.described_yet = true;
        }
        // A protocol that sleeps inside a hook on purpose (a round delay, up
        // to the 300 s the limits allow) gets that long on top of the timeout.
        if let Some(delay) = ctx
            .options
            .get("round_delay_seconds")
            .and_then(Value::as_f64)
            .filter(|d| d.is_finite() && (0.0..=300.0).contains(d))
        {
            self.timeout += Duration::from_secs_f64(delay);
        }
        let mut args = obj! { "role" => ctx.role.as_str(), "control_mode" => ctx.control_mode.as_str(), "options" => ctx.options.clone() };
        if !self.extra_args.is_empty() {
            let extra: Vec<Value> = self
                .extra_args
                .iter()
                .map(|a| Value::from(a.as_str()))
                .collect();
            args.insert("args", Value::Array(extra));
        }
        self.call(Some(ctx), "init", args).await.map(|_| ())
    }

    async fn host_handle_join(&mut self, ctx: &Ctx, join: &Map) -> Result<HookResult, HookError> {
        self.call(Some(ctx), "host_handle_join", msg_args(join))
            .await
            .map(Self::result_of)
    }

    async fn host_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        self.call(Some(ctx), "host_handle", msg_args(msg))
            .await
            .map(Self::result_of)
    }

    async fn guest_join_message(&mut self, ctx: &Ctx) -> Result<Map, HookError> {
        match self
            .call(Some(ctx), "guest_join_message", Map::new())
            .await?
        {
            Value::Object(m) => Ok(m),
            other => Err(HookError::External(format!(
                "guest_join_message returned {} instead of an object",
                other.type_name()
            ))),
        }
    }

    async fn guest_handle_ready(&mut self, ctx: &Ctx, ready: &Map) -> Result<(), HookError> {
        self.call(Some(ctx), "guest_handle_ready", msg_args(ready))
            .await
            .map(|_| ())
    }

    async fn guest_first_action(&mut self, ctx: &Ctx) -> Result<Option<Map>, HookError> {
        Ok(self
            .call(Some(ctx), "guest_first_action", Map::new())
            .await?
            .as_object()
            .cloned())
    }

    async fn guest_handle(&mut self, ctx: &Ctx, msg: &Map) -> Result<HookResult, HookError> {
        self.call(Some(ctx), "guest_handle", msg_args(msg))
            .await
            .map(Self::result_of)
    }

    async fn round_value(&mut self, ctx: &Ctx, round: u64) -> Result<Value, HookError> {
        self.call(Some(ctx), "round_value", obj! { "round" => round })
            .await
    }

    async fn round_judge_pure(
        &mut self,
        ctx: &Ctx,
        round: u64,
        host: &Value,
        guest: &Value,
    ) -> Option<Map> {
        // A program without a shadow judge answers null (or an error): no
        // comparison. A dead program shows at the next call.
        let args =
            obj! { "round" => round, "host_value" => host.clone(), "guest_value" => guest.clone() };
        match self.call(Some(ctx), "round_judge_pure", args).await {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    async fn round_judge(
        &mut self,
        ctx: &Ctx,
        round: u64,
        host: &Value,
        guest: &Value,
    ) -> Result<HookResult, HookError> {
        let args =
            obj! { "round" => round, "host_value" => host.clone(), "guest_value" => guest.clone() };
        self.call(Some(ctx), "round_judge", args)
            .await
            .map(Self::result_of)
    }

    async fn on_message(&mut self, ctx: &Ctx, msg: &Map) {
        let _ = self.call(Some(ctx), "on_message", msg_args(msg)).await;
    }

    async fn on_send(&mut self, ctx: &Ctx, msg: &Map) {
        let _ = self.call(Some(ctx), "on_send", msg_args(msg)).await;
    }

    async fn on_end(&mut self, ctx: &Ctx) {
        let _ = self.call(Some(ctx), "on_end", Map::new()).await;
    }

    /// A program whose spec is `authoritative_realtime` answers the
    /// realtime hooks; any other has no simulation.
    fn realtime(&mut self) -> Option<&mut dyn RealtimeRules> {
        if self.realtime { Some(self) } else { None }
    }

    fn display(&self, _msg: &Map, _dir: Dir) -> Option<String> {
        None
    }
}
