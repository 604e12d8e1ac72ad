//! `palaver skill install|check|path`: the instructions file that teaches an
//! agent CLI (Claude Code, Codex, opencode) what palaver is, how to register
//! `palaver mcp` and which tools and commands to use.
//!
//! The text is `assets/skill/palaver.md`, compiled in, at [`SKILL_VERSION`].
//! Claude Code and opencode read a skill of their own (`skills/palaver/
//! SKILL.md`), which palaver writes whole. Codex reads its global
//! `AGENTS.md`, a file the user shares with other tools: there palaver owns
//! only the block between its begin and end markers and leaves every other
//! byte as it found it.
//!
//! Both layouts carry the same markers. The begin marker names the version;
//! the end marker carries a digest of everything palaver wrote before it, so
//! `check` tells a hand-edited copy (`modified`) from one an older or newer
//! palaver wrote (`outdated`), and `install` overwrites the first only when
//! asked to (`--force`).

use super::{Ctx, Outcome};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

/// The version of the text this binary writes. Bump it whenever
/// `assets/skill/palaver.md` changes, so installed copies read `outdated`.
pub const SKILL_VERSION: u32 = 1;

/// Front matter (name, description) and the body, as Claude Code and
/// opencode read a SKILL.md.
const SKILL_TEXT: &str = include_str!("../../assets/skill/palaver.md");

const AFTER_HELP: &str = "\
Where each agent reads it (--dir DIR replaces the directory in brackets):
  claude-code  [$CLAUDE_CONFIG_DIR, else ~/.claude]/skills/palaver/SKILL.md
  codex        [$CODEX_HOME, else ~/.codex]/AGENTS.md  (palaver's marked block only)
  opencode     [$XDG_CONFIG_HOME/opencode, else ~/.config/opencode]/skills/palaver/SKILL.md

Examples:
  palaver skill install                     Claude Code's skill
  palaver skill install --agent codex       a block in ~/.codex/AGENTS.md; the rest stays
  palaver skill check --agent opencode      current, outdated, modified or missing (exit 0: current)
  palaver skill path --agent codex          where it goes
  palaver skill install --force             replace a copy someone edited

The skill tells the agent to register the MCP server itself, e.g.
  claude mcp add palaver -- palaver mcp";

/// The agent's skill file: what palaver is, how to register `palaver mcp`,
/// which MCP tools and CLI commands host, join, decide and trade.
///
/// Claude Code and opencode get a skill of their own (a SKILL.md palaver
/// writes whole); Codex gets a marked block in its global AGENTS.md, and
/// the user's own text around it is kept byte for byte.
#[derive(Debug, Subcommand)]
#[command(after_help = AFTER_HELP)]
pub enum SkillCmd {
    /// Write the skill (or AGENTS.md block) this palaver carries, and say
    /// where. Nothing is written when it is already current; a copy someone
    /// edited, or a newer palaver's, is replaced only with --force.
    #[command(after_help = AFTER_HELP)]
    Install {
        #[command(flatten)]
        target: Target,
        /// Replace a copy someone edited (the edits are lost) or one a newer
        /// palaver wrote.
        #[arg(long)]
        force: bool,
    },
    /// Compare the installed copy with what this palaver writes: prints
    /// `current`, `outdated (installed vX, this palaver writes vY)`,
    /// `modified` or `missing`. Exits 0 only for current, 1 otherwise.
    #[command(after_help = AFTER_HELP)]
    Check {
        #[command(flatten)]
        target: Target,
    },
    /// Print where the skill goes for this agent (nothing is read or
    /// written).
    #[command(after_help = AFTER_HELP)]
    Path {
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Debug, Args)]
pub struct Target {
    /// The agent CLI to write it for.
    #[arg(long, value_enum, default_value_t = Agent::ClaudeCode)]
    pub agent: Agent,
    /// Use DIR in place of the agent's own directory (~/.claude, ~/.codex,
    /// ~/.config/opencode), e.g. a project's `.claude`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The agent CLIs palaver writes a skill for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code: a skill of its own, skills/palaver/SKILL.md under
    /// $CLAUDE_CONFIG_DIR or ~/.claude.
    ClaudeCode,
    /// Codex CLI: palaver's marked block in AGENTS.md under $CODEX_HOME or
    /// ~/.codex; the rest of the file is left as it is.
    Codex,
    /// opencode: a skill of its own, skills/palaver/SKILL.md under
    /// $XDG_CONFIG_HOME/opencode or ~/.config/opencode.
    Opencode,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Opencode => "opencode",
        }
    }

    fn layout(self) -> Layout {
        match self {
            Agent::ClaudeCode | Agent::Opencode => Layout::SkillFile,
            Agent::Codex => Layout::Block,
        }
    }

    /// How to register the MCP server, for the line after `install`.
    fn mcp_hint(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude mcp add palaver -- palaver mcp",
            Agent::Codex => {
                "add [mcp_servers.palaver] command = \"palaver\" args = [\"mcp\"] to ~/.codex/config.toml"
            }
            Agent::Opencode => {
                "add \"palaver\": {\"type\": \"local\", \"command\": [\"palaver\", \"mcp\"]} under \"mcp\" in opencode.json"
            }
        }
    }
}

/// How palaver's text sits in the destination file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A file of palaver's own: front matter, then the marked body.
    SkillFile,
    /// A marked block inside a file the user shares (AGENTS.md).
    Block,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::SkillFile => "skill",
            Layout::Block => "agents-md-block",
        }
    }
}

/// What went wrong, with the path it went wrong on.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("no home directory to find the {agent} directory under; give --dir DIR")]
    NoHome { agent: &'static str },
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not UTF-8 text; palaver will not rewrite it", path.display())]
    NotText { path: PathBuf },
    #[error("writing {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error(
        "{} has a palaver begin marker without its end marker, so palaver cannot tell where its block ends; delete the block by hand and install again",
        path.display()
    )]
    BrokenBlock { path: PathBuf },
}

/// The installed copy compared with this binary's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Missing,
    Current,
    /// Intact, written by a palaver of another version (or of this version
    /// number with other text).
    Outdated {
        installed: u32,
    },
    /// Edited by hand, markers broken, or not palaver's file at all.
    Modified {
        installed: Option<u32>,
    },
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Missing => "missing",
            Status::Current => "current",
            Status::Outdated { .. } => "outdated",
            Status::Modified { .. } => "modified",
        }
    }

    fn installed(self) -> Option<u32> {
        match self {
            Status::Missing => None,
            Status::Current => Some(SKILL_VERSION),
            Status::Outdated { installed } => Some(installed),
            Status::Modified { installed, .. } => installed,
        }
    }

    fn line(self) -> String {
        match self {
            Status::Outdated { installed } => {
                format!("outdated (installed v{installed}, this palaver writes v{SKILL_VERSION})")
            }
            s => s.word().to_string(),
        }
    }
}

pub fn run(ctx: &Ctx, cmd: SkillCmd) -> Result<Outcome> {
    match cmd {
        SkillCmd::Path { target } => path(ctx, &target),
        SkillCmd::Check { target } => check(ctx, &target),
        SkillCmd::Install { target, force } => install(ctx, &target, force),
    }
}

fn path(ctx: &Ctx, t: &Target) -> Result<Outcome> {
    let dest = destination(t)?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "agent": t.agent.name(),
            "path": dest,
            "layout": t.agent.layout().name(),
            "version": SKILL_VERSION,
        }))?;
    } else {
        println!("{}", dest.display());
    }
    Ok(Outcome::Ok)
}

fn check(ctx: &Ctx, t: &Target) -> Result<Outcome> {
    let dest = destination(t)?;
    let status = status_of(&dest, t.agent.layout())
        .with_context(|| format!("checking the {} skill", t.agent.name()))?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "agent": t.agent.name(),
            "path": dest,
            "status": status.word(),
            "installed_version": status.installed(),
            "version": SKILL_VERSION,
        }))?;
    } else {
        println!("{}", status.line());
        if status != Status::Current {
            eprintln!(
                "{}: `palaver skill install --agent {}` writes this palaver's{}",
                dest.display(),
                t.agent.name(),
                if matches!(status, Status::Modified { .. }) {
                    " (with --force, over the edits)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(if status == Status::Current {
        Outcome::Ok
    } else {
        Outcome::Rejected
    })
}

fn install(ctx: &Ctx, t: &Target, force: bool) -> Result<Outcome> {
    let dest = destination(t)?;
    let layout = t.agent.layout();
    let done = write_skill(&dest, layout, force)
        .with_context(|| format!("installing the {} skill", t.agent.name()))?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "agent": t.agent.name(),
            "path": dest,
            "layout": layout.name(),
            "action": done.action.word(),
            "before": done.before.word(),
            "installed_version": done.before.installed(),
            "version": SKILL_VERSION,
        }))?;
    } else {
        let shown = dest.display();
        match done.action {
            Action::Unchanged => println!("already current: {shown}"),
            Action::Refused => eprintln!(
                "palaver: {shown} is {}; `palaver skill install --agent {} --force` replaces it{}",
                match done.before {
                    Status::Outdated { installed } => format!(
                        "from a newer palaver (v{installed}; this one writes v{SKILL_VERSION})"
                    ),
                    _ => "a copy someone edited".to_string(),
                },
                t.agent.name(),
                if matches!(done.before, Status::Modified { .. }) {
                    " (the edits are lost)"
                } else {
                    ""
                }
            ),
            Action::Written => {
                match layout {
                    Layout::SkillFile => {
                        println!("wrote the palaver skill v{SKILL_VERSION}: {shown}")
                    }
                    Layout::Block => println!(
                        "wrote palaver's block (v{SKILL_VERSION}) in {shown}; the rest of the file is as it was"
                    ),
                }
                println!("register the MCP server too: {}", t.agent.mcp_hint());
            }
        }
    }
    Ok(match done.action {
        Action::Refused => Outcome::Rejected,
        _ => Outcome::Ok,
    })
}

/// Where the skill goes for this agent.
fn destination(t: &Target) -> Result<PathBuf, SkillError> {
    let root = match &t.dir {
        Some(d) => d.clone(),
        None => default_root(t.agent)?,
    };
    Ok(match t.agent.layout() {
        Layout::SkillFile => root.join("skills").join("palaver").join("SKILL.md"),
        Layout::Block => root.join("AGENTS.md"),
    })
}

/// The agent's own directory, as its documentation places it.
fn default_root(agent: Agent) -> Result<PathBuf, SkillError> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = || {
        directories::BaseDirs::new()
            .map(|b| b.home_dir().to_path_buf())
            .ok_or(SkillError::NoHome {
                agent: agent.name(),
            })
    };
    Ok(match agent {
        Agent::ClaudeCode => match env("CLAUDE_CONFIG_DIR") {
            Some(d) => d,
            None => home()?.join(".claude"),
        },
        Agent::Codex => match env("CODEX_HOME") {
            Some(d) => d,
            None => home()?.join(".codex"),
        },
        // opencode keeps the XDG layout on every platform.
        Agent::Opencode => match env("XDG_CONFIG_HOME") {
            Some(d) => d.join("opencode"),
            None => home()?.join(".config").join("opencode"),
        },
    })
}

// ---- the text ----

fn begin_marker(version: u32) -> String {
    format!("<!-- palaver skill v{version} begin -->")
}

fn end_marker(version: u32, digest: &str) -> String {
    format!("<!-- palaver skill v{version} end sha256:{digest} -->")
}

/// The first 16 hex digits of SHA-256: enough to notice an edit.
fn digest(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// (front matter with its closing `---` line, body).
fn split_front_matter(text: &str) -> (&str, &str) {
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(i) = rest.find("\n---\n")
    {
        let cut = 4 + i + "\n---\n".len();
        return (&text[..cut], text[cut..].trim_start_matches('\n'));
    }
    ("", text)
}

/// What this binary writes: the whole file (SkillFile) or the block without
/// its trailing newline (Block).
fn expected(layout: Layout) -> String {
    let (front, body) = split_front_matter(SKILL_TEXT);
    let mut owned = String::new();
    if layout == Layout::SkillFile {
        owned.push_str(front);
        owned.push('\n');
    }
    owned.push_str(&begin_marker(SKILL_VERSION));
    owned.push('\n');
    owned.push_str(body);
    if !owned.ends_with('\n') {
        owned.push('\n');
    }
    let end = end_marker(SKILL_VERSION, &digest(&owned));
    owned.push_str(&end);
    if layout == Layout::SkillFile {
        owned.push('\n');
    }
    owned
}

/// Where palaver's markers sit in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Markers {
    None,
    /// A begin marker with no end marker of its version after it.
    Broken {
        version: u32,
    },
    Found(Found),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    version: u32,
    /// Byte offset of the begin marker line.
    begin: usize,
    /// Byte offset of the end marker line.
    end_line: usize,
    /// Byte offset just past the end marker (before its line break).
    end: usize,
}

fn parse_begin(line: &str) -> Option<u32> {
    line.strip_prefix("<!-- palaver skill v")?
        .strip_suffix(" begin -->")?
        .parse()
        .ok()
}

fn parse_end(line: &str) -> Option<(u32, &str)> {
    let rest = line
        .strip_prefix("<!-- palaver skill v")?
        .strip_suffix(" -->")?;
    let (v, digest) = rest.split_once(" end sha256:")?;
    Some((v.parse().ok()?, digest))
}

/// Finds the first begin marker and the end marker that closes it.
fn markers(text: &str) -> (Markers, Option<String>) {
    let mut at = 0;
    let mut open: Option<(u32, usize)> = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match open {
            None => {
                if let Some(v) = parse_begin(bare) {
                    open = Some((v, at));
                }
            }
            Some((version, begin)) => {
                if let Some((v, d)) = parse_end(bare)
                    && v == version
                {
                    let found = Found {
                        version,
                        begin,
                        end_line: at,
                        end: at + bare.len(),
                    };
                    return (Markers::Found(found), Some(d.to_string()));
                }
            }
        }
        at += line.len();
    }
    match open {
        Some((version, _)) => (Markers::Broken { version }, None),
        None => (Markers::None, None),
    }
}

/// Compares the text of an existing file with what this binary writes.
fn status_of_text(text: &str, layout: Layout) -> (Status, Markers) {
    let want = expected(layout);
    let (m, recorded) = markers(text);
    let status = match m {
        Markers::None => match layout {
            // Someone else's file at palaver's path.
            Layout::SkillFile => Status::Modified { installed: None },
            Layout::Block => Status::Missing,
        },
        Markers::Broken { version } => Status::Modified {
            installed: Some(version),
        },
        Markers::Found(f) => {
            let start = match layout {
                Layout::SkillFile => 0,
                Layout::Block => f.begin,
            };
            let intact = recorded.as_deref() == Some(digest(&text[start..f.end_line]).as_str())
                && (layout == Layout::Block || text[f.end..].trim().is_empty());
            if !intact {
                Status::Modified {
                    installed: Some(f.version),
                }
            } else if match layout {
                Layout::SkillFile => text == want,
                Layout::Block => text[f.begin..f.end] == want,
            } {
                Status::Current
            } else {
                Status::Outdated {
                    installed: f.version,
                }
            }
        }
    };
    (status, m)
}

/// The file's text, or None when there is no file.
fn read(path: &Path) -> Result<Option<String>, SkillError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SkillError::NotText {
                path: path.to_path_buf(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SkillError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn status_of(path: &Path, layout: Layout) -> Result<Status, SkillError> {
    Ok(match read(path)? {
        None => Status::Missing,
        Some(text) => status_of_text(&text, layout).0,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Written,
    Unchanged,
    Refused,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Written => "written",
            Action::Unchanged => "unchanged",
            Action::Refused => "refused",
        }
    }
}

struct Done {
    action: Action,
    before: Status,
}

/// The new text of the file, given its old text (None: no file).
fn new_text(old: Option<&str>, layout: Layout, m: Markers) -> Option<String> {
    let want = expected(layout);
    Some(match (layout, old, m) {
        (Layout::SkillFile, _, _) | (Layout::Block, None, _) => {
            if layout == Layout::Block {
                format!("{want}\n")
            } else {
                want
            }
        }
        (Layout::Block, Some(old), Markers::Found(f)) => {
            format!("{}{want}{}", &old[..f.begin], &old[f.end..])
        }
        (Layout::Block, Some(old), Markers::None) => {
            let sep = if old.is_empty() || old.ends_with("\n\n") {
                ""
            } else if old.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{old}{sep}{want}\n")
        }
        (Layout::Block, Some(_), Markers::Broken { .. }) => return None,
    })
}

fn write_skill(dest: &Path, layout: Layout, force: bool) -> Result<Done, SkillError> {
    // Write through a symlink (a dotfiles checkout) rather than over it.
    let target = match std::fs::symlink_metadata(dest) {
        Ok(md) if md.file_type().is_symlink() => {
            std::fs::canonicalize(dest).map_err(|source| SkillError::Read {
                path: dest.to_path_buf(),
                source,
            })?
        }
        _ => dest.to_path_buf(),
    };
    let old = read(&target)?;
    let (before, m) = match &old {
        None => (Status::Missing, Markers::None),
        Some(text) => status_of_text(text, layout),
    };
    let allowed = match before {
        Status::Current => {
            return Ok(Done {
                action: Action::Unchanged,
                before,
            });
        }
        Status::Missing => true,
        Status::Outdated { installed } => installed <= SKILL_VERSION || force,
        Status::Modified { .. } => force,
    };
    if !allowed {
        return Ok(Done {
            action: Action::Refused,
            before,
        });
    }
    let Some(text) = new_text(old.as_deref(), layout, m) else {
        return Err(SkillError::BrokenBlock {
            path: target.clone(),
        });
    };
    let mode = std::fs::metadata(&target).ok().map(|md| md.permissions());
    crate::fsutil::write_atomic(&target, text.as_bytes()).map_err(|source| SkillError::Write {
        path: target.clone(),
        source,
    })?;
    // The replacement is a new file: give it the old one's mode back.
    if let Some(mode) = mode {
        std::fs::set_permissions(&target, mode).map_err(|source| SkillError::Write {
            path: target.clone(),
            source,
        })?;
    }
    Ok(Done {
        action: Action::Written,
        before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_asset_has_front_matter_and_no_markers_of_its_own() {
        let (front, body) = split_front_matter(SKILL_TEXT);
        assert!(front.starts_with("---\nname: palaver\ndescription: "));
        assert!(!body.is_empty() && !body.starts_with('\n'));
        assert!(!SKILL_TEXT.contains("<!-- palaver skill"));
        assert!(SKILL_TEXT.lines().count() <= 150);
        // A plain YAML scalar within every agent's limit (opencode: 1024).
        let description = front.lines().nth(2).unwrap();
        let description = description.strip_prefix("description: ").unwrap();
        assert!(description.len() <= 1024);
        assert!(!description.contains(": ") && !description.contains(" #"));
    }

    #[test]
    fn what_it_writes_reads_back_as_current() {
        for layout in [Layout::SkillFile, Layout::Block] {
            let text = new_text(None, layout, Markers::None).unwrap();
            assert_eq!(status_of_text(&text, layout).0, Status::Current);
        }
    }

    #[test]
    fn an_edit_inside_reads_as_modified_and_an_old_version_as_outdated() {
        let text = expected(Layout::Block).replace("palaver is a", "palaver was a");
        assert!(matches!(
            status_of_text(&text, Layout::Block).0,
            Status::Modified { .. }
        ));
        let old = format!(
            "{}\nold text\n{}\n",
            begin_marker(0),
            end_marker(0, &digest(&format!("{}\nold text\n", begin_marker(0))))
        );
        assert_eq!(
            status_of_text(&old, Layout::Block).0,
            Status::Outdated { installed: 0 }
        );
    }

    #[test]
    fn a_begin_without_an_end_is_not_cut() {
        let text = format!("mine\n{}\nhalf\n", begin_marker(1));
        let (s, m) = status_of_text(&text, Layout::Block);
        assert_eq!(s, Status::Modified { installed: Some(1) });
        assert_eq!(new_text(Some(&text), Layout::Block, m), None);
    }
}
