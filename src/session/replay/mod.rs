//! Replay of a finished session: reads a state dir (palaver's or the
//! reference client's: same layout; a room's one-level dir too) and rebuilds
//! it as a timeline of steps, each with the state as it stood after it.
//!
//! Pure over the files it reads: no clock, no writes. Every file is read
//! whole-lines only (a torn last line or a damaged line is skipped); unknown
//! events become plain `event` steps; nothing in a file can make it panic.
//!
//! Sources, merged by their timestamps (file order among equal ones):
//! - the parent's events.jsonl: `protocol_message` frames (sent/received),
//!   lifecycle events, `session_ended`;
//! - the child's events.jsonl: decision events (`strategy_applied`,
//!   `local_decision_*`, `human_decision_failed`, `policy_*`, `intent_*`);
//! - whispers.jsonl and whisper_acks.jsonl (child or parent), if present;
//! - a room's details.jsonl `group_frame` lines (the room events of each
//!   frame: messages, joins, topic changes…).
//!
//! The state after each step is a snapshot-shaped object (`phase`, `role`,
//! `round`, `score`, `board`, `last_move`, `last_event`, a room's
//! `group_view.messages`…), so the console draws it with the live snapshot
//! pane. Boards (gomoku, connect4, reversi) are rebuilt from the frames; the
//! final step also takes what snapshot.json says at the end.

mod build;
mod read;

use super::state::StateDir;
use crate::json::{Map, Value};
pub use read::load_dir;
use serde::Serialize;
use std::path::Path;

/// At most this many steps are kept (the rest is dropped, `truncated` set).
pub const MAX_STEPS: usize = 100_000;
/// A room's state keeps its last this many messages per step.
pub const ROOM_MESSAGES: usize = 100;
/// Summaries are cut to this many characters.
const SUMMARY_CHARS: usize = 160;

/// Who took a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The strategy (strategy.json / the autonomous player) chose.
    Strategy,
    /// No decision came in time: the automatic fallback played.
    Autonomous,
    /// A person (console, CLI, web, an agent's submission).
    Human,
    /// A whisper, or a decision a whisper caused.
    Whisper,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Strategy => "strategy",
            Actor::Autonomous => "autonomous",
            Actor::Human => "human",
            Actor::Whisper => "whisper",
        }
    }

    /// Whether a person stepped in (marked on the replay's position bar).
    pub fn intervened(self) -> bool {
        matches!(self, Actor::Human | Actor::Whisper)
    }
}

/// What a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A frame this side sent.
    Sent,
    /// A frame this side received.
    Received,
    /// A `round_result` frame (either way).
    RoundResult,
    /// A decision window opened.
    Window,
    /// A decision taken (see `by`).
    Decision,
    /// A whisper written (or acknowledged).
    Whisper,
    /// A room frame's events.
    Room,
    /// `session_ended` (a werewolf game log's `result` line).
    Ended,
    /// Any other event.
    Event,
    /// A line of a werewolf game log (`action` is its kind: `talk`,
    /// `whisper`, `vote`, `attackVote`, `divine`, `guard`, `attack`,
    /// `execute`, `status`), rebuilt by `werewolf::replay`.
    Werewolf,
}

/// One step of a timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The recorded time (ISO 8601, as in the files).
    pub ts: String,
    /// Seconds since the timeline's first step.
    pub t: f64,
    pub kind: StepKind,
    /// The frame's `action` (frames) or the event's `type`.
    pub action: String,
    /// A short line for people.
    pub summary: String,
    /// Who decided (decision and whisper steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Actor>,
    /// The state after this step, shaped like snapshot.json.
    pub state: Map,
}

/// A session rebuilt from its state dir.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// The dir read (the parent when there is one).
    pub dir: String,
    pub protocol_name: Option<String>,
    pub protocol_id: Option<String>,
    pub role: Option<String>,
    pub control_mode: Option<String>,
    /// Whether it is a room (`authoritative_group`) session.
    pub room: bool,
    /// Whether the files record an end (`session_ended`, a terminal status).
    pub finished: bool,
    pub end_reason: Option<String>,
    pub winner: Option<String>,
    /// Steps dropped over [`MAX_STEPS`] (or the input's size bound).
    pub truncated: bool,
    /// A werewolf game log's timeline (`werewolf::replay`): each step's
    /// state is the werewolf day, not a snapshot.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub werewolf: bool,
    /// Lines of the source that could not be read (damaged, unknown).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
    pub steps: Vec<Step>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Timeline {
    /// Indexes of steps where a person or a whisper intervened.
    pub fn interventions(&self) -> Vec<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.by.is_some_and(Actor::intervened))
            .map(|(i, _)| i)
            .collect()
    }

    /// The whole session's duration in seconds.
    pub fn duration(&self) -> f64 {
        self.steps.last().map(|s| s.t).unwrap_or(0.0)
    }
}

/// Why a dir cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotASession(pub String);

impl std::fmt::Display for NotASession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is not a session state dir (no session.json, snapshot.json or details.jsonl)",
            self.0
        )
    }
}

impl std::error::Error for NotASession {}

/// Reads the state dir at `path` (a parent, an engine dir or a room's dir).
pub fn load(path: &Path) -> Result<Timeline, NotASession> {
    let dir = StateDir::resolve(path).ok_or_else(|| NotASession(path.display().to_string()))?;
    Ok(load_dir(&dir))
}

/// One raw line from one of the files, before ordering.
struct Raw {
    ts: String,
    order: usize,
    src: Src,
    line: Map,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Src {
    Event,
    Whisper,
    WhisperAck,
    RoomFrame,
    /// A details.jsonl game record (used when no frames were recorded).
    Detail,
}

fn s<'a>(m: &'a Map, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn int(m: &Map, k: &str) -> Option<i64> {
    m.get(k).and_then(|v| match v {
        Value::Number(_) => v.as_i64(),
        Value::String(t) => t.parse().ok(),
        _ => None,
    })
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

/// A compact text board (one string per row: `.` empty, else the cell).
pub fn board_rows(state: &Map) -> Option<Vec<String>> {
    let rows = state.get("board")?.as_array()?;
    Some(
        rows.iter()
            .map(|r| {
                r.as_array()
                    .map(|cells| {
                        cells
                            .iter()
                            .map(|c| match c.as_str() {
                                Some("") | None => '.',
                                Some(t) => t.chars().next().unwrap_or('?'),
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect(),
    )
}

/// The step's state in one line: phase, round/turn, score.
pub fn state_line(state: &Map) -> String {
    let mut parts = Vec::new();
    if let Some(p) = s(state, "phase") {
        parts.push(p.to_owned());
    }
    if let Some(r) = state.get("round").filter(|v| !v.is_null()) {
        parts.push(format!("round {}", r.py_str()));
    } else if let Some(t) = state.get("turn").filter(|v| !v.is_null()) {
        parts.push(format!("turn {}", t.py_str()));
    }
    if let Some(sc) = state.get("score").and_then(Value::as_object) {
        let h = sc.get("host").map(Value::py_str).unwrap_or_default();
        let g = sc.get("guest").map(Value::py_str).unwrap_or_default();
        parts.push(format!("host {h} – guest {g}"));
    } else if let (Some(b), Some(w)) = (state.get("black"), state.get("white")) {
        parts.push(format!("black {} – white {}", b.py_str(), w.py_str()));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::build::new_board;
    use crate::protocols::board::{Cell, Kind};

    #[test]
    fn boards_replay_by_the_games_rules() {
        let mut b = new_board(Kind::Reversi, 8, 8).unwrap();
        assert_eq!((b.stones(Cell::Guest), b.stones(Cell::Host)), (2, 2));
        assert!(b.place(5, 4, Cell::Guest));
        assert_eq!((b.stones(Cell::Guest), b.stones(Cell::Host)), (4, 1));
        assert!(!b.place(5, 4, Cell::Host));
        let mut c = new_board(Kind::Connect4, 6, 7).unwrap();
        assert_eq!(c.drop_row(3), Some(5));
        c.place(5, 3, Cell::Guest);
        assert_eq!(c.drop_row(3), Some(4));
        assert!(new_board(Kind::Gomoku, 0, 5).is_none());
        assert!(new_board(Kind::Gomoku, 1_000_000, 5).is_none());
        // A reversi board that is not square gets no opening stones.
        let odd = new_board(Kind::Reversi, 4, 6).unwrap();
        assert_eq!(odd.stones(Cell::Guest) + odd.stones(Cell::Host), 0);
    }
}
