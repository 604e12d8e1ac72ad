//! Replay of a finished werewolf game from its game .log (the AIWolf
//! server's format: `palaver wolf serve` and `palaver wolf play --game-log`
//! write it, the reference aiwolf-nlp-server writes the same), rebuilt as a
//! [`Timeline`] the session replay shows: `palaver session replay <file>`
//! and the console's replay view.
//!
//! One step per line that says something (a talk or whisper, a vote, an
//! attack vote, a divination, a guard, an attack, an execution, the result),
//! and one for each status block (the agents' roles and lives at the start
//! of a day, and at the end). Each step's state is the werewolf day as it
//! stood after it (see [`state`]'s keys): since the game is over, the god
//! view, with every agent's role.
//!
//! The .log has no times: steps are paced by what they hold (a second for a
//! line that says something, less for `Over`/`Skip` and votes), so playing
//! at ×1 reads like a game. Pure over the text: damaged or unknown lines are
//! skipped and counted ([`Timeline::skipped`]), the steps stop at
//! [`MAX_STEPS`] and the input at [`MAX_BYTES`]; nothing in a file can make
//! it panic.

mod day;
mod line;
#[cfg(test)]
mod tests;

pub use line::Line;

use crate::json::{Map, Value};
use crate::session::replay::Timeline;
use day::{Finish, Wolf};
use std::io::Read;
use std::path::Path;

/// At most this many steps are kept (the rest is dropped, `truncated` set).
/// Lower than the session replay's bound: every step carries the day's talk.
pub const MAX_STEPS: usize = 10_000;
/// At most this many bytes of a file are read (a real game is tens of KiB).
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;
/// A step's state keeps the day's last this many talk and whisper lines
/// that say something (`Over` and `Skip` are steps, not kept).
pub const TALK_LINES: usize = 20;
/// Talk text in a state is cut to this many characters.
const TEXT_CHARS: usize = 300;
/// Summaries are cut to this many characters.
const SUMMARY_CHARS: usize = 160;
/// Agent numbers above this are taken for damage (the most seats a game
/// has, [`crate::limits::WOLF_AGENTS`]).
pub const MAX_AGENTS: i64 = crate::limits::WOLF_AGENTS.max;
/// Days above this are taken for damage (the last day a game has, plus the
/// status block after it).
const MAX_DAY: i64 = crate::limits::WOLF_DAYS.max + 1;
/// Names are cut to this many characters.
const NAME_CHARS: usize = 64;
/// The steps' states together stay under about this many bytes (a log of
/// many agents with long names and talk stops early, `truncated` set).
pub const MAX_STATE_BYTES: usize = 192 << 20;
/// How much of a file [`sniff`] reads to tell a game log.
const SNIFF_BYTES: u64 = 8 * 1024;
/// How many of the first lines [`is_game_log`] looks at.
const SNIFF_LINES: usize = 10;

/// Why a file cannot be replayed as a werewolf game.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is not a werewolf game log (its first lines are not in the AIWolf .log format)")]
    NotAGameLog(String),
}

fn short(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= SUMMARY_CHARS {
        one
    } else {
        let mut out: String = one.chars().take(SUMMARY_CHARS - 1).collect();
        out.push('…');
        out
    }
}

/// Whether `text` reads as a game log: among its first non-empty lines (up
/// to [`SNIFF_LINES`]) at least one is a game log line, and most are.
pub fn is_game_log(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut good = 0;
    let mut seen = 0;
    for l in text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIFF_LINES)
    {
        seen += 1;
        if Line::parse(l).is_some() {
            good += 1;
        }
    }
    good > 0 && good * 2 > seen
}

/// Whether the file at `path` is a game log, by its content (the first
/// [`SNIFF_BYTES`]); false for dirs and unreadable files.
pub fn sniff(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut buf = Vec::new();
    if f.take(SNIFF_BYTES).read_to_end(&mut buf).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&buf);
    // A line cut by the read's end is not judged.
    let whole = if buf.len() as u64 == SNIFF_BYTES {
        text.rsplit_once('\n').map_or("", |(a, _)| a)
    } else {
        &text
    };
    is_game_log(whole)
}

/// Reads the game log at `path` (at most [`MAX_BYTES`]) into a timeline.
pub fn load(path: &Path) -> Result<Timeline, LogError> {
    let io = |source| LogError::Io {
        path: path.display().to_string(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut buf = Vec::new();
    f.take(MAX_BYTES + 1).read_to_end(&mut buf).map_err(io)?;
    let cut = buf.len() as u64 > MAX_BYTES;
    if cut {
        buf.truncate(MAX_BYTES as usize);
        let end = buf.iter().rposition(|b| *b == b'\n').unwrap_or(0);
        buf.truncate(end);
    }
    let text = String::from_utf8_lossy(&buf);
    if !is_game_log(&text) {
        return Err(LogError::NotAGameLog(path.display().to_string()));
    }
    let mut t = parse(&text, &path.display().to_string());
    t.truncated |= cut;
    Ok(t)
}

/// Rebuilds the timeline of a game log's text; `source` names it (the
/// timeline's `dir`). Never fails: lines it cannot read are counted in
/// `skipped`.
pub fn parse(text: &str, source: &str) -> Timeline {
    let mut w = Wolf {
        agents: Vec::new(),
        day: -1,
        phase: "starting",
        talked: false,
        talk: std::collections::VecDeque::new(),
        votes: Vec::new(),
        vote_round: 0,
        attack_votes: Vec::new(),
        executed: None,
        attacked: None,
        divined: None,
        guarded: None,
        result: None,
        last_summary: String::new(),
        steps: Vec::new(),
        t: 0.0,
        bytes: 0,
        truncated: false,
    };
    let mut skipped = 0usize;
    let mut lines: Vec<Line> = Vec::new();
    // A byte order mark some editors add is no damage.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for raw in text.split('\n') {
        if raw.trim().is_empty() {
            continue;
        }
        match Line::parse(raw) {
            Some(l) => lines.push(l),
            None => skipped += 1,
        }
    }
    // The roles and names first (a finished game shows them from the start).
    for l in &lines {
        if let Line::Status {
            agent,
            role,
            original_name,
            name,
            ..
        } = l
        {
            let a = w.agent(*agent);
            if a.role.is_empty() {
                a.role = role.clone();
                a.original_name = original_name.clone();
                a.name = name.clone();
            }
        }
    }
    let mut finish = Finish::default();
    let mut it = lines.into_iter().peekable();
    while let Some(l) = it.next() {
        if w.truncated {
            break;
        }
        if let Line::Status { day, .. } = l {
            let mut block = vec![l];
            while let Some(next) =
                it.next_if(|n| matches!(n, Line::Status { day: d, .. } if *d == day))
            {
                block.push(next);
            }
            w.status_block(day, block);
        } else {
            w.line(l, &mut finish);
        }
    }
    Timeline {
        dir: source.to_owned(),
        protocol_name: Some("werewolf (AIWolf NLP)".to_owned()),
        protocol_id: None,
        role: None,
        control_mode: None,
        room: false,
        finished: finish.winner.is_some(),
        end_reason: finish.reason,
        winner: finish.winner,
        truncated: w.truncated,
        werewolf: true,
        skipped,
        steps: w.steps,
    }
}

/// A werewolf step's state in one line: day, phase, the living.
pub fn state_line(state: &Map) -> String {
    let mut parts = Vec::new();
    if let Some(d) = state.get("day").and_then(Value::as_i64).filter(|d| *d >= 0) {
        parts.push(format!("day {d}"));
    }
    if let Some(p) = state.get("phase").and_then(Value::as_str) {
        parts.push(p.to_owned());
    }
    let total = state
        .get("agents")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if let Some(a) = state.get("alive").and_then(Value::as_i64) {
        parts.push(format!("{a} of {total} alive"));
    }
    parts.join(" · ")
}
