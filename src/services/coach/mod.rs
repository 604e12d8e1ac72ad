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

mod config;
mod context;
mod output;
mod process;

pub use config::{AgentKind, CoachConfig, Placeholders, build_argv, split_words};
pub use context::{summarize_events, summarize_snapshot};
pub use process::{MAX_LINE_BYTES, MAX_STDOUT_BYTES, which};

use crate::json::Value;
use output::session_lost;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `[coach] timeout_seconds`: how long one turn may take.
pub use crate::limits::COACH_TIMEOUT as TURN_TIMEOUT;

/// The reference's per-turn default.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 180.0;
/// How many recent events the prompt carries (the reference's default).
pub const MAX_CONTEXT_EVENTS: usize = 12;

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
        // Absent already is the state wanted.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_instructions_situation_and_question() {
        let data = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::write(state.path().join("snapshot.json"), r#"{"phase":"vote"}"#).unwrap();
        std::fs::write(
            state.path().join("events.jsonl"),
            r#"{"summary":"bob accused","ts":"t9"}"#,
        )
        .unwrap();
        let coach = Coach::open(data.path(), CoachConfig::for_agent(AgentKind::Opencode)).unwrap();
        assert_eq!(
            std::fs::read_to_string(coach.instructions_path()).unwrap(),
            DEFAULT_INSTRUCTIONS
        );
        let p = coach.prompt("  who lies?\n", Some(state.path()));
        assert_eq!(
            p,
            format!(
                "{}\n\n## Current situation\nphase=vote\n\nRecent events:\n- [t9] bob accused\n\n## User question\nwho lies?",
                DEFAULT_INSTRUCTIONS.trim()
            )
        );
        // Without a state dir only the instructions and the question.
        let p = coach.prompt("why?", None);
        assert!(p.ends_with("\n\n## User question\nwhy?"));
        assert!(!p.contains("## Current situation"));
    }

    #[test]
    fn instructions_handed_over_as_a_file_stay_out_of_the_prompt() {
        let data = tempfile::tempdir().unwrap();
        // claude-code's template passes {coach_skill_file}.
        let coach = Coach::open(data.path(), CoachConfig::default()).unwrap();
        assert_eq!(coach.prompt("q", None), "## User question\nq");
    }

    #[test]
    fn the_conversation_and_session_survive_until_reset() {
        let data = tempfile::tempdir().unwrap();
        let coach = Coach::open(data.path(), CoachConfig::default()).unwrap();
        assert_eq!(coach.session_id(), None);
        coach.save_session("abc").unwrap();
        assert_eq!(coach.session_id().as_deref(), Some("abc"));
        // A session of another agent is not resumed.
        let codex = Coach::open(data.path(), CoachConfig::for_agent(AgentKind::Codex)).unwrap();
        assert_eq!(codex.session_id(), None);
        coach.append("user", "hi").unwrap();
        coach.append("coach", "hello").unwrap();
        coach.append("error", "boom").unwrap();
        assert_eq!(coach.history().len(), 3);
        assert_eq!(coach.last_reply().as_deref(), Some("hello"));
        coach.reset().unwrap();
        assert_eq!(coach.session_id(), None);
        assert!(coach.history().is_empty());
        coach.reset().unwrap();
    }
}
