//! The coach: a conversation with the user's own agent CLI (claude-code,
//! codex, opencode or a custom command) about the attached session.
//!
//! One process per turn, never a shell: the command template is split into
//! words first and the placeholders are replaced afterwards, each by exactly
//! one argv element, so a prompt full of quotes, `$(…)`, `;` or newlines
//! reaches the CLI unchanged. A template without `{prompt}` gets the prompt
//! on stdin (claude-code's `-p`, codex's `-`, as the reference does);
//! otherwise stdin is closed. The CLI's session id is kept between turns
//! (resume flags per CLI) and across games until [`Coach::reset`].
//!
//! Layout under the data dir:
//! - `coach/workspace/COACH.md`: the coach's instructions, the only file in
//!   its working directory (the state dir never goes there: the situation
//!   reaches the coach through the prompt only);
//! - `coach/session.json`: the CLI session id and the agent it belongs to;
//! - `coach/conversation.jsonl`: the conversation, one turn side a line.

use crate::json::{Map, Value};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// `[coach] timeout_seconds`: how long one turn may take.
pub use crate::limits::COACH_TIMEOUT as TURN_TIMEOUT;

/// The reference's per-turn default.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 180.0;
/// How many recent events the prompt carries (the reference's default).
pub const MAX_CONTEXT_EVENTS: usize = 12;
/// The most characters of snapshot summary the prompt carries.
const MAX_SNAPSHOT_CHARS: usize = 6000;
/// The most bytes of events.jsonl read back for the prompt.
const MAX_EVENTS_TAIL_BYTES: u64 = 1 << 20;
/// The most characters of one event line in the prompt.
const MAX_EVENT_CHARS: usize = 1000;
/// The most bytes one reply may hold before further lines are dropped.
const MAX_REPLY_BYTES: usize = 1 << 20;
/// The most bytes of one line of the agent's output (stdout or stderr)
/// kept; the rest of a longer line is read and dropped.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes the agent may write to stdout in one turn; past this it
/// is stopped and the turn fails ([`CoachError::TooMuchOutput`]).
pub const MAX_STDOUT_BYTES: usize = 64 << 20;
/// The most bytes of the agent's stderr kept for an error message (the
/// rest is read and dropped).
const MAX_STDERR_KEPT: usize = 64 << 10;
/// How long the end of stdout and of stderr is awaited once the agent has
/// exited (a process it left behind outside its group may hold them open).
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// The instructions file in the coach's workspace.
pub const INSTRUCTIONS_FILE: &str = "COACH.md";

/// What the coach is told about its role when the data dir has no
/// instructions file yet.
pub const DEFAULT_INSTRUCTIONS: &str = "\
You are a tactics coach for a human who is watching their own agent play a protocol session \
(a game or negotiation) in the palaver console. Each message brings the current situation: a \
summary of the session's snapshot and its recent events. Answer briefly and concretely: what \
is happening, what the opponent seems to do, and what the user could whisper to their agent. \
You cannot act in the session yourself; do not edit files or run commands.
";

/// Decision-window bookkeeping the engine writes every round: no tactics in
/// it, and left out of the prompt so real moves survive the tail.
const NOISE_EVENTS: [&str; 5] = [
    "local_decision_window_started",
    "local_decision_updated",
    "local_decision_fallback",
    "local_decision_finalized",
    "local_decision_ready",
];

/// Which agent CLI the coach talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentKind {
    #[default]
    ClaudeCode,
    Codex,
    Opencode,
    Custom,
}

impl AgentKind {
    /// The name in config.toml and session.json.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
            AgentKind::Opencode => "opencode",
            AgentKind::Custom => "custom",
        }
    }

    pub fn parse(s: &str) -> Option<AgentKind> {
        Some(match s {
            "claude-code" => AgentKind::ClaudeCode,
            "codex" => AgentKind::Codex,
            "opencode" => AgentKind::Opencode,
            "custom" => AgentKind::Custom,
            _ => return None,
        })
    }

    /// The reference's (new, resume) templates; `None` for custom.
    pub fn templates(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            AgentKind::ClaudeCode => (
                "claude --session-id {session_id} --system-prompt-file {coach_skill_file} -p",
                "claude --resume {session_id} --system-prompt-file {coach_skill_file} -p",
            ),
            AgentKind::Codex => (
                "codex exec --json --ignore-user-config --ignore-rules --skip-git-repo-check --sandbox read-only -o {coach_output_file} -",
                "codex exec --sandbox read-only resume --json --ignore-user-config --ignore-rules --skip-git-repo-check -o {coach_output_file} {session_id} -",
            ),
            AgentKind::Opencode => ("opencode -p {prompt}", "opencode -p {prompt}"),
            AgentKind::Custom => return None,
        })
    }
}

/// `[coach]` from config.toml, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CoachConfig {
    pub agent: AgentKind,
    /// The template of a new conversation's first turn.
    pub new_command: String,
    /// The template of every later turn (`{session_id}` is the CLI's id).
    pub resume_command: String,
    pub timeout: Duration,
    pub max_events: usize,
}

impl Default for CoachConfig {
    fn default() -> Self {
        CoachConfig::for_agent(AgentKind::ClaudeCode)
    }
}

impl CoachConfig {
    /// A known CLI with the reference's templates and timeout.
    pub fn for_agent(agent: AgentKind) -> CoachConfig {
        let (new, resume) = agent.templates().unwrap_or(("", ""));
        CoachConfig {
            agent,
            new_command: new.to_owned(),
            resume_command: resume.to_owned(),
            timeout: TURN_TIMEOUT.saturate(DEFAULT_TIMEOUT_SECONDS),
            max_events: MAX_CONTEXT_EVENTS,
        }
    }

    /// A custom command: `resume` defaults to `command` (a CLI without
    /// sessions gets the same words every turn).
    pub fn custom(command: &str, resume: Option<&str>) -> Result<CoachConfig, String> {
        split_words(command)?;
        if let Some(r) = resume {
            split_words(r)?;
        }
        Ok(CoachConfig {
            agent: AgentKind::Custom,
            new_command: command.to_owned(),
            resume_command: resume.unwrap_or(command).to_owned(),
            ..CoachConfig::for_agent(AgentKind::Custom)
        })
    }

    /// From config.toml's values: `agent` (default claude-code), `command`
    /// and `resume_command` (custom only, or to override a known CLI's),
    /// `timeout_seconds` (5–3600, default 180).
    pub fn from_parts(
        agent: Option<&str>,
        command: Option<&str>,
        resume_command: Option<&str>,
        timeout_seconds: Option<f64>,
    ) -> Result<CoachConfig, String> {
        let kind = match agent {
            None => AgentKind::ClaudeCode,
            Some(a) => AgentKind::parse(a).ok_or_else(|| {
                format!(
                    "`coach.agent` must be \"claude-code\", \"codex\", \"opencode\" or \"custom\", not {a:?}"
                )
            })?,
        };
        let mut c = match (kind, command) {
            (AgentKind::Custom, None) => {
                return Err(
                    "`coach.command` is required with agent = \"custom\" (a template such as \"my-agent --ask {prompt}\")"
                        .into(),
                )
            }
            (_, Some(cmd)) => {
                let mut c = CoachConfig::custom(cmd, resume_command)
                    .map_err(|e| format!("`coach.command`: {e}"))?;
                c.agent = kind;
                c
            }
            (_, None) => {
                let mut c = CoachConfig::for_agent(kind);
                if let Some(r) = resume_command {
                    split_words(r).map_err(|e| format!("`coach.resume_command`: {e}"))?;
                    c.resume_command = r.to_owned();
                }
                c
            }
        };
        if let Some(t) = timeout_seconds {
            c.timeout = TURN_TIMEOUT.check(t).map_err(|e| e.to_string())?;
        }
        Ok(c)
    }

    /// From config.toml's checked `[coach]` section.
    pub fn from_settings(s: &crate::config::CoachSettings) -> Result<CoachConfig, String> {
        CoachConfig::from_parts(
            s.agent.as_deref(),
            s.command.as_deref(),
            s.resume_command.as_deref(),
            s.timeout_seconds,
        )
    }

    /// The executable a turn would run (the template's first word).
    pub fn binary(&self) -> Option<String> {
        split_words(&self.new_command).ok()?.into_iter().next()
    }
}

/// Splits a template into words the way POSIX `shlex.split` does: blanks
/// separate, '…' is literal, "…" honours \" \\ \$ \`, a backslash outside
/// quotes escapes the next character. No expansion of any kind.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unclosed double quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unclosed double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match it.next() {
                    Some('\n') => {}
                    Some(c) => cur.push(c),
                    None => return Err("a backslash ends the command".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err("the command is empty".into());
    }
    Ok(words)
}

/// The values the placeholders stand for in one turn.
#[derive(Debug, Clone, Default)]
pub struct Placeholders<'a> {
    pub session_id: &'a str,
    pub prompt: &'a str,
    pub coach_skill_text: Option<&'a str>,
    pub coach_skill_file: Option<&'a str>,
    pub coach_output_file: Option<&'a str>,
}

/// The argv of one turn: the template split into words, then each
/// placeholder replaced (a word that is exactly a placeholder becomes that
/// value as one element, whatever it holds).
pub fn build_argv(template: &str, p: &Placeholders<'_>) -> Result<Vec<String>, String> {
    let words = split_words(template)?;
    let subs: [(&str, Option<&str>); 5] = [
        ("{session_id}", Some(p.session_id)),
        ("{prompt}", Some(p.prompt)),
        ("{coach_skill_text}", p.coach_skill_text),
        ("{coach_skill_file}", p.coach_skill_file),
        ("{coach_output_file}", p.coach_output_file),
    ];
    Ok(words
        .into_iter()
        .map(|w| {
            if let Some((_, Some(v))) = subs.iter().find(|(k, _)| *k == w) {
                return (*v).to_owned();
            }
            let mut out = w;
            for (k, v) in subs {
                if let Some(v) = v
                    && out.contains(k)
                {
                    out = out.replace(k, v);
                }
            }
            out
        })
        .collect())
}

/// Why a turn has no reply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoachError {
    #[error(
        "coach: `{binary}` was not found on PATH. Install the {agent} CLI, or set [coach] agent / command in config.toml."
    )]
    Missing { binary: String, agent: &'static str },
    #[error("coach: no reply within {0:?}; the agent was stopped")]
    Timeout(Duration),
    #[error("coach: cancelled")]
    Cancelled,
    #[error("coach: the agent wrote more than {0} bytes to stdout; it was stopped")]
    TooMuchOutput(usize),
    #[error("coach: the agent exited with {code}{}", if .stderr.is_empty() { String::new() } else { format!(": {}", .stderr) })]
    Failed { code: String, stderr: String },
    #[error("coach: the agent gave no reply{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    Empty(String),
    #[error("coach: bad command template: {0}")]
    Template(String),
    #[error("coach: {0}")]
    Io(String),
}

impl From<std::io::Error> for CoachError {
    fn from(e: std::io::Error) -> Self {
        CoachError::Io(e.to_string())
    }
}

/// One side of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `user`, `coach` or `error`.
    pub role: String,
    pub text: String,
}

/// The coach of one data dir.
#[derive(Debug, Clone)]
pub struct Coach {
    pub config: CoachConfig,
    dir: PathBuf,
}

impl Coach {
    /// The coach kept under `data_dir/coach`; writes the instructions file
    /// into its workspace when missing.
    pub fn open(data_dir: &Path, config: CoachConfig) -> Result<Coach, CoachError> {
        let coach = Coach {
            config,
            dir: data_dir.join("coach"),
        };
        std::fs::create_dir_all(coach.workspace())?;
        let instr = coach.instructions_path();
        if !instr.exists() {
            crate::fsutil::write_atomic(&instr, DEFAULT_INSTRUCTIONS.as_bytes())?;
        }
        Ok(coach)
    }

    /// The working directory of every turn: the instructions file only.
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }

    pub fn instructions_path(&self) -> PathBuf {
        self.workspace().join(INSTRUCTIONS_FILE)
    }

    fn session_path(&self) -> PathBuf {
        self.dir.join("session.json")
    }

    fn conversation_path(&self) -> PathBuf {
        self.dir.join("conversation.jsonl")
    }

    /// The CLI session id of the current conversation, if it belongs to the
    /// configured agent.
    pub fn session_id(&self) -> Option<String> {
        let text = std::fs::read(self.session_path()).ok()?;
        let v = crate::json::parse_bytes(&text).ok()?;
        let o = v.as_object()?;
        if o.get("agent").and_then(Value::as_str) != Some(self.config.agent.name()) {
            return None;
        }
        o.get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }

    fn save_session(&self, id: &str) -> Result<(), CoachError> {
        let v = Value::Object(crate::obj! {
            "session_id" => id, "agent" => self.config.agent.name(),
        });
        crate::fsutil::write_atomic(
            &self.session_path(),
            crate::json::canonical::to_string(&v).as_bytes(),
        )?;
        Ok(())
    }

    fn clear_session(&self) {
        let _ = std::fs::remove_file(self.session_path());
    }

    /// The conversation so far (unreadable lines skipped).
    pub fn history(&self) -> Vec<Entry> {
        let Ok(text) = std::fs::read_to_string(self.conversation_path()) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| {
                let v = crate::json::parse_str(l).ok()?;
                let o = v.as_object()?;
                Some(Entry {
                    role: o.get("role")?.as_str()?.to_owned(),
                    text: o.get("text")?.as_str()?.to_owned(),
                })
            })
            .collect()
    }

    fn append(&self, role: &str, text: &str) -> Result<(), CoachError> {
        use std::io::Write;
        let v = Value::Object(crate::obj! { "role" => role, "text" => text });
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.conversation_path())?;
        writeln!(f, "{}", crate::json::canonical::to_string(&v))?;
        Ok(())
    }

    /// The last coach reply, the one "adopt as hint" sends.
    pub fn last_reply(&self) -> Option<String> {
        self.history()
            .into_iter()
            .rev()
            .find(|e| e.role == "coach")
            .map(|e| e.text)
    }

    /// Forgets the conversation and the CLI session: the next turn starts a
    /// new one.
    pub fn reset(&self) -> Result<(), CoachError> {
        self.clear_session();
        match std::fs::remove_file(self.conversation_path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    fn instructions(&self) -> String {
        std::fs::read_to_string(self.instructions_path()).unwrap_or_default()
    }

    /// The prompt of one turn: the instructions (unless the template hands
    /// them over as a file or text), the situation of `state_dir`, the
    /// question.
    pub fn prompt(&self, question: &str, state_dir: Option<&Path>) -> String {
        let mut parts = Vec::new();
        let t = &self.config.new_command;
        let system = t.contains("{coach_skill_file}") || t.contains("{coach_skill_text}");
        let instr = self.instructions();
        if !system && !instr.trim().is_empty() {
            parts.push(instr.trim().to_owned());
        }
        if let Some(dir) = state_dir {
            let mut bits = Vec::new();
            let snap = summarize_snapshot(dir);
            if !snap.is_empty() {
                bits.push(snap);
            }
            let evs = summarize_events(dir, self.config.max_events);
            if !evs.is_empty() {
                bits.push(format!("Recent events:\n{evs}"));
            }
            if !bits.is_empty() {
                parts.push(format!("## Current situation\n{}", bits.join("\n\n")));
            }
        }
        parts.push(format!("## User question\n{}", question.trim()));
        parts.join("\n\n")
    }

    /// One turn: records the question, runs the CLI (resuming its session),
    /// hands each reply line to `on_line` as it arrives, records the reply.
    /// `cancel` resolving stops the turn (the process group is killed).
    pub async fn turn<F, C>(
        &self,
        question: &str,
        state_dir: Option<&Path>,
        mut on_line: F,
        cancel: C,
    ) -> Result<String, CoachError>
    where
        F: FnMut(&str) + Send,
        C: Future<Output = ()> + Send,
    {
        let question = question.trim();
        if question.is_empty() {
            return Err(CoachError::Empty("the question is empty".into()));
        }
        self.append("user", question)?;
        let prompt = self.prompt(question, state_dir);
        tokio::pin!(cancel);
        let result = self.run_turn(&prompt, &mut on_line, cancel.as_mut()).await;
        match &result {
            Ok(reply) => self.append("coach", reply)?,
            Err(CoachError::Cancelled) => {}
            Err(e) => self.append("error", &e.to_string())?,
        }
        result
    }

    async fn run_turn(
        &self,
        prompt: &str,
        on_line: &mut (dyn FnMut(&str) + Send),
        mut cancel: std::pin::Pin<&mut (dyn Future<Output = ()> + Send)>,
    ) -> Result<String, CoachError> {
        let resumed = self.session_id();
        let first = self
            .run_once(prompt, resumed.clone(), on_line, cancel.as_mut())
            .await;
        match first {
            Err(CoachError::Failed { ref stderr, .. })
                if resumed.is_some() && session_lost(stderr) =>
            {
                // The CLI forgot the session (its own store was cleared):
                // start a new one, as the reference does.
                self.clear_session();
                self.run_once(prompt, None, on_line, cancel).await
            }
            other => other,
        }
    }

    async fn run_once(
        &self,
        prompt: &str,
        resume: Option<String>,
        on_line: &mut (dyn FnMut(&str) + Send),
        cancel: std::pin::Pin<&mut (dyn Future<Output = ()> + Send)>,
    ) -> Result<String, CoachError> {
        let template = if resume.is_some() {
            &self.config.resume_command
        } else {
            &self.config.new_command
        };
        let session_id = match &resume {
            Some(id) => id.clone(),
            None if template.contains("{session_id}") => {
                let id = new_uuid();
                self.save_session(&id)?;
                id
            }
            None => String::new(),
        };
        let output_file = self.dir.join("last-message.md");
        let _ = std::fs::remove_file(&output_file);
        let skill_file = self.instructions_path().to_string_lossy().into_owned();
        let skill_text = self.instructions();
        let out_s = output_file.to_string_lossy().into_owned();
        let argv = build_argv(
            template,
            &Placeholders {
                session_id: &session_id,
                prompt,
                coach_skill_text: Some(&skill_text),
                coach_skill_file: Some(&skill_file),
                coach_output_file: Some(&out_s),
            },
        )
        .map_err(CoachError::Template)?;
        let Some(binary) = argv.first() else {
            return Err(CoachError::Template("the command is empty".into()));
        };
        let Some(exe) = which(binary) else {
            return Err(CoachError::Missing {
                binary: binary.clone(),
                agent: self.config.agent.name(),
            });
        };
        let stdin_prompt = !template.contains("{prompt}");
        let codex_json =
            self.config.agent == AgentKind::Codex && argv.iter().any(|a| a == "--json");
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.args(&argv[1..])
            .current_dir(self.workspace())
            .stdin(if stdin_prompt {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CoachError::Missing {
                    binary: binary.clone(),
                    agent: self.config.agent.name(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let pgid = child.id();
        let guard = GroupGuard(pgid);
        if let Some(mut stdin) = child.stdin.take() {
            let p = prompt.as_bytes().to_vec();
            tokio::spawn(async move {
                let _ = stdin.write_all(&p).await;
                let _ = stdin.shutdown().await;
            });
        }
        let stderr = child.stderr.take().map(|e| {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut r = BufReader::new(e);
                let mut line = Vec::new();
                while let Ok(n) =
                    read_line_capped(&mut r, &mut line, MAX_LINE_BYTES, usize::MAX).await
                {
                    if n == 0 {
                        break;
                    }
                    if buf.len() < MAX_STDERR_KEPT {
                        let room = MAX_STDERR_KEPT - buf.len();
                        buf.extend_from_slice(&line[..line.len().min(room)]);
                    }
                    line.clear();
                }
                String::from_utf8_lossy(&buf).trim().to_owned()
            })
        });
        let Some(stdout) = child.stdout.take() else {
            return Err(CoachError::Io("no stdout".into()));
        };
        let mut lines = BufReader::new(stdout);
        let mut collected: Vec<String> = Vec::new();
        let mut size = 0usize;
        let mut total = 0usize;
        let mut discovered: Option<String> = None;
        let mut structured_errors: Vec<String> = Vec::new();
        let read_all = async {
            let mut raw = Vec::new();
            loop {
                raw.clear();
                let budget = MAX_STDOUT_BYTES + 1 - total;
                match read_line_capped(&mut lines, &mut raw, MAX_LINE_BYTES, budget).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
                if total > MAX_STDOUT_BYTES {
                    return Err(CoachError::TooMuchOutput(MAX_STDOUT_BYTES));
                }
                let line = String::from_utf8_lossy(&raw);
                let line = line.trim_end_matches(['\n', '\r']);
                let chunk = if codex_json {
                    match codex_event(line) {
                        CodexEvent::Thread(id) => {
                            discovered = Some(id);
                            continue;
                        }
                        CodexEvent::Error(e) => {
                            structured_errors.push(e);
                            continue;
                        }
                        CodexEvent::Text(t) => t,
                        CodexEvent::Other => continue,
                    }
                } else {
                    line.to_owned()
                };
                if size > MAX_REPLY_BYTES {
                    continue;
                }
                size += chunk.len() + 1;
                on_line(&chunk);
                collected.push(chunk);
            }
            Ok::<(), CoachError>(())
        };
        // Stdout to its end and the agent's exit. Once the agent has
        // exited, its output is in the pipe: read on for at most
        // OUTPUT_GRACE (a process it left outside its group may hold
        // stdout open for ever).
        let read = async {
            tokio::pin!(read_all);
            let exited = tokio::select! {
                r = &mut read_all => {
                    r?;
                    None
                }
                s = child.wait() => Some(s?),
            };
            match exited {
                None => child.wait().await.map_err(CoachError::from),
                Some(status) => {
                    if let Ok(r) = tokio::time::timeout(OUTPUT_GRACE, &mut read_all).await {
                        r?;
                    }
                    Ok(status)
                }
            }
        };
        let status = tokio::select! {
            s = read => s?,
            _ = tokio::time::sleep(self.config.timeout) => {
                drop(guard);
                return Err(CoachError::Timeout(self.config.timeout));
            }
            _ = cancel => {
                drop(guard);
                return Err(CoachError::Cancelled);
            }
        };
        // The CLI is done; anything it left in its group goes with it.
        drop(guard);
        let err = match stderr {
            Some(h) => {
                let abort = h.abort_handle();
                match tokio::time::timeout(OUTPUT_GRACE, h).await {
                    Ok(r) => r.unwrap_or_default(),
                    Err(_) => {
                        abort.abort();
                        String::new()
                    }
                }
            }
            None => String::new(),
        };
        if !status.success() {
            let code = status
                .code()
                .map(|c| format!("status {c}"))
                .unwrap_or_else(|| "a signal".into());
            let stderr = if err.is_empty() {
                structured_errors.join("\n")
            } else {
                err
            };
            return Err(CoachError::Failed { code, stderr });
        }
        let mut reply = String::new();
        if codex_json {
            reply = std::fs::read_to_string(&output_file)
                .unwrap_or_default()
                .trim()
                .to_owned();
        }
        let _ = std::fs::remove_file(&output_file);
        if reply.is_empty() {
            reply = collected.join("\n").trim().to_owned();
        }
        if reply.is_empty() {
            let why = if err.is_empty() {
                structured_errors.join("\n")
            } else {
                err
            };
            return Err(CoachError::Empty(why));
        }
        if let Some(id) = discovered {
            self.save_session(&id)?;
        }
        Ok(reply)
    }

    /// Sends `text` (normally [`Coach::last_reply`]) to the session in
    /// `child` as a user whisper, as the reference's "adopt as tactical
    /// hint" does.
    pub fn adopt(
        child: &Path,
        text: &str,
        schema: Option<&crate::engine::whisper::Schema>,
    ) -> std::io::Result<crate::session::whisper::Whispered> {
        crate::session::whisper::send(child, text, "user", "coach", None, schema)
    }
}

/// Reads one line (up to and including its `\n`) from `r` into `line`,
/// keeping at most `keep` bytes of it and dropping the rest; stops early
/// after `budget` bytes. Returns the bytes read (0 at the end of input).
/// Nothing is allocated past `keep`, however long the line.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
    keep: usize,
    budget: usize,
) -> std::io::Result<usize> {
    let mut read = 0usize;
    while read < budget {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            break;
        }
        let (n, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let n = n.min(budget - read);
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&buf[..n.min(room)]);
        r.consume(n);
        read += n;
        if end {
            break;
        }
    }
    Ok(read)
}

/// Kills the turn's process group when dropped (timeout, cancel, the end of
/// the turn, the future dropped).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn session_lost(stderr: &str) -> bool {
    let s = stderr.to_lowercase();
    [
        "no conversation found",
        "session not found",
        "thread not found",
    ]
    .iter()
    .any(|m| s.contains(m))
}

enum CodexEvent {
    Thread(String),
    Error(String),
    Text(String),
    Other,
}

fn codex_event(line: &str) -> CodexEvent {
    let Ok(v) = crate::json::parse_str(line) else {
        return CodexEvent::Error(line.trim().to_owned());
    };
    let Some(o) = v.as_object() else {
        return CodexEvent::Other;
    };
    match o.get("type").and_then(Value::as_str) {
        Some("thread.started") => match o.get("thread_id").and_then(Value::as_str) {
            Some(id) => CodexEvent::Thread(id.to_owned()),
            None => CodexEvent::Other,
        },
        Some("error") => {
            let m = o
                .get("message")
                .filter(|m| m.truthy())
                .or_else(|| o.get("error").filter(|m| m.truthy()));
            m.map(|m| CodexEvent::Error(m.py_str()))
                .unwrap_or(CodexEvent::Other)
        }
        Some("item.completed") => {
            let item = o.get("item").and_then(Value::as_object);
            match item {
                Some(i) if i.get("type").and_then(Value::as_str) == Some("agent_message") => {
                    match i.get("text").and_then(Value::as_str) {
                        Some(t) if !t.is_empty() => CodexEvent::Text(t.to_owned()),
                        _ => CodexEvent::Other,
                    }
                }
                _ => CodexEvent::Other,
            }
        }
        _ => CodexEvent::Other,
    }
}

/// The executable `name` stands for: a path as given, else the first match
/// on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exe = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        // Absolute, so the turn's working directory does not change it.
        let p = std::fs::canonicalize(name).ok()?;
        return is_exe(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_exe(p))
}

fn new_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    })
}

/// The public part of `state_dir/snapshot.json` in one line: phase, role,
/// round, score, winner, the real-time transport and world basics, the last
/// event's summary (at most 6000 characters).
pub fn summarize_snapshot(state_dir: &Path) -> String {
    let Ok(bytes) = std::fs::read(state_dir.join("snapshot.json")) else {
        return String::new();
    };
    let Ok(v) = crate::json::parse_bytes(&bytes) else {
        return String::new();
    };
    let Some(snap) = v.as_object() else {
        return String::new();
    };
    let mut parts: Vec<String> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for k in [
        "phase",
        "role",
        "round",
        "tick",
        "score",
        "summary",
        "host_alive",
        "guest_alive",
        "winner",
    ] {
        if let Some(v) = present(snap.get(k)) {
            parts.push(format!("{k}={}", v.py_str()));
            keys.push(k);
        }
    }
    let transport = snap
        .get("realtime")
        .and_then(Value::as_object)
        .and_then(|r| r.get("transport"))
        .and_then(Value::as_object);
    if let Some(t) = transport {
        let bits: Vec<String> = [
            "status",
            "smoothed_rtt_ms",
            "jitter_ms",
            "command_lead_ticks",
            "recommended_control",
            "micro_suitable",
        ]
        .iter()
        .filter_map(|k| present(t.get(k)).map(|v| format!("{k}={}", v.py_str())))
        .collect();
        if !bits.is_empty() {
            parts.push(format!("transport({})", bits.join(", ")));
        }
    }
    if let Some(world) = snap.get("world").and_then(Value::as_object) {
        for k in ["tick", "host_alive", "guest_alive", "winner"] {
            if keys.contains(&k) {
                continue;
            }
            if let Some(v) = present(world.get(k)) {
                parts.push(format!("{k}={}", v.py_str()));
            }
        }
    }
    if let Some(s) = snap
        .get("last_event")
        .and_then(Value::as_object)
        .and_then(|e| present(e.get("summary")))
    {
        parts.push(format!("last={}", s.py_str()));
    }
    parts.join("; ").chars().take(MAX_SNAPSHOT_CHARS).collect()
}

/// The last `max_events` meaningful lines of `state_dir/events.jsonl`, one
/// `- [ts] summary` a line; decision-window bookkeeping is left out before
/// the tail is taken.
pub fn summarize_events(state_dir: &Path, max_events: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(state_dir.join("events.jsonl")) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX_EVENTS_TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.lines();
    if start > 0 {
        lines.next(); // a partial line
    }
    let events: Vec<Map> = lines
        .filter_map(|l| match crate::json::parse_str(l) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
        .filter(|o| {
            let t = o.get("type").and_then(Value::as_str);
            !t.is_some_and(|t| NOISE_EVENTS.contains(&t))
        })
        .collect();
    let skip = if max_events > 0 {
        events.len().saturating_sub(max_events)
    } else {
        0
    };
    events[skip..]
        .iter()
        .filter_map(|e| {
            let s = present(e.get("summary"))
                .or_else(|| present(e.get("event")))
                .or_else(|| present(e.get("type")))?
                .py_str();
            let line = match present(e.get("ts")) {
                Some(ts) => format!("- [{}] {s}", ts.py_str()),
                None => format!("- {s}"),
            };
            Some(line.chars().take(MAX_EVENT_CHARS).collect::<String>())
        })
        .collect::<Vec<_>>()
        .join("\n")
}
