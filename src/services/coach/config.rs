//! The coach's configuration: which agent CLI, its command templates, and
//! how a template becomes one turn's argv (shell-like splitting, then
//! placeholder substitution — never a shell).

use super::{DEFAULT_TIMEOUT_SECONDS, MAX_CONTEXT_EVENTS, TURN_TIMEOUT};
use std::time::Duration;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn words_split_like_posix_shlex() {
        assert_eq!(words("  a  b\tc\n"), ["a", "b", "c"]);
        assert_eq!(words("say 'it''s $HOME'"), ["say", "its $HOME"]);
        assert_eq!(words(r#"x "a \"b\" \\ \$ \n""#), ["x", r#"a "b" \ $ \n"#]);
        assert_eq!(words(r"a\ b c\'d"), ["a b", "c'd"]);
        assert_eq!(words("''"), [""]);
        assert_eq!(words("a\\\nb"), ["ab"]);
    }

    #[test]
    fn bad_templates_are_refused() {
        assert_eq!(split_words("a 'b").unwrap_err(), "unclosed single quote");
        assert_eq!(split_words("a \"b").unwrap_err(), "unclosed double quote");
        assert_eq!(
            split_words("a \\").unwrap_err(),
            "a backslash ends the command"
        );
        assert_eq!(split_words(" \t ").unwrap_err(), "the command is empty");
    }

    #[test]
    fn a_placeholder_word_becomes_one_argument_whatever_it_holds() {
        let p = Placeholders {
            session_id: "s-1",
            prompt: "it's \"$(rm -rf /)\"; echo\nhi",
            ..Placeholders::default()
        };
        let argv = build_argv("agent --ask {prompt} --id={session_id}", &p).unwrap();
        assert_eq!(argv, ["agent", "--ask", p.prompt, "--id=s-1"]);
    }

    #[test]
    fn placeholders_without_a_value_stay_as_written() {
        let p = Placeholders {
            session_id: "s",
            prompt: "q",
            coach_skill_file: Some("/w/COACH.md"),
            ..Placeholders::default()
        };
        let argv = build_argv(
            "a {coach_skill_file} {coach_output_file} x{coach_skill_text}",
            &p,
        )
        .unwrap();
        assert_eq!(
            argv,
            [
                "a",
                "/w/COACH.md",
                "{coach_output_file}",
                "x{coach_skill_text}"
            ]
        );
    }

    #[test]
    fn agent_names_round_trip() {
        for k in [
            AgentKind::ClaudeCode,
            AgentKind::Codex,
            AgentKind::Opencode,
            AgentKind::Custom,
        ] {
            assert_eq!(AgentKind::parse(k.name()), Some(k));
        }
        assert_eq!(AgentKind::parse("Claude"), None);
        assert_eq!(AgentKind::Custom.templates(), None);
    }

    #[test]
    fn config_parts_pick_templates_and_check_them() {
        let c = CoachConfig::from_parts(None, None, None, None).unwrap();
        assert_eq!(c, CoachConfig::default());
        assert_eq!(c.binary().as_deref(), Some("claude"));
        assert_eq!(c.max_events, MAX_CONTEXT_EVENTS);

        let c =
            CoachConfig::from_parts(Some("codex"), None, Some("codex again"), Some(30.0)).unwrap();
        assert_eq!(c.agent, AgentKind::Codex);
        assert_eq!(c.resume_command, "codex again");
        assert_eq!(c.timeout, Duration::from_secs(30));

        // A custom command resumes with itself unless told otherwise.
        let c =
            CoachConfig::from_parts(Some("custom"), Some("me --q {prompt}"), None, None).unwrap();
        assert_eq!(c.agent, AgentKind::Custom);
        assert_eq!(c.resume_command, "me --q {prompt}");
        assert_eq!(c.binary().as_deref(), Some("me"));

        assert!(
            CoachConfig::from_parts(Some("custom"), None, None, None)
                .unwrap_err()
                .contains("`coach.command` is required")
        );
        assert!(
            CoachConfig::from_parts(Some("gpt"), None, None, None)
                .unwrap_err()
                .contains("not \"gpt\"")
        );
        assert!(
            CoachConfig::from_parts(None, Some("a 'b"), None, None)
                .unwrap_err()
                .starts_with("`coach.command`: unclosed")
        );
        assert!(CoachConfig::from_parts(None, None, None, Some(1.0)).is_err());
    }
}
