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

use super::files::{read_json_object, read_jsonl};
use super::state::StateDir;
use crate::json::{Map, Value};
use crate::obj;
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

/// The board being rebuilt from the frames.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Game {
    Gomoku,
    Connect4,
    Reversi,
}

struct Board {
    game: Game,
    cells: Vec<Vec<u8>>, // 0 empty, 1 guest, 2 host
}

const AROUND: [(i64, i64); 8] = [
    (-1, -1),
    (-1, 0),
    (-1, 1),
    (0, -1),
    (0, 1),
    (1, -1),
    (1, 0),
    (1, 1),
];
/// Largest board side rebuilt (larger dims in a file are ignored).
const MAX_SIDE: i64 = 64;

impl Board {
    fn new(game: Game, rows: i64, cols: i64) -> Option<Board> {
        if !(1..=MAX_SIDE).contains(&rows) || !(1..=MAX_SIDE).contains(&cols) {
            return None;
        }
        let mut cells = vec![vec![0u8; cols as usize]; rows as usize];
        if game == Game::Reversi && rows >= 2 && cols == rows {
            let m = (rows / 2) as usize;
            cells[m - 1][m - 1] = 2;
            cells[m - 1][m] = 1;
            cells[m][m - 1] = 1;
            cells[m][m] = 2;
        }
        Some(Board { game, cells })
    }

    fn rows(&self) -> i64 {
        self.cells.len() as i64
    }

    fn cols(&self) -> i64 {
        self.cells.first().map_or(0, Vec::len) as i64
    }

    fn at(&self, r: i64, c: i64) -> Option<u8> {
        if (0..self.rows()).contains(&r) && (0..self.cols()).contains(&c) {
            Some(self.cells[r as usize][c as usize])
        } else {
            None
        }
    }

    fn drop_row(&self, c: i64) -> Option<i64> {
        (0..self.rows()).rev().find(|r| self.at(*r, c) == Some(0))
    }

    /// Places `who`'s stone; false when the cell is taken or outside.
    fn place(&mut self, r: i64, c: i64, who: u8) -> bool {
        if self.at(r, c) != Some(0) {
            return false;
        }
        if self.game == Game::Reversi {
            let other = 3 - who;
            for (dr, dc) in AROUND {
                let mut line = Vec::new();
                let (mut y, mut x) = (r + dr, c + dc);
                while self.at(y, x) == Some(other) {
                    line.push((y, x));
                    y += dr;
                    x += dc;
                }
                if !line.is_empty() && self.at(y, x) == Some(who) {
                    for (y, x) in line {
                        self.cells[y as usize][x as usize] = who;
                    }
                }
            }
        }
        self.cells[r as usize][c as usize] = who;
        true
    }

    fn count(&self, who: u8) -> i64 {
        self.cells
            .iter()
            .map(|r| r.iter().filter(|c| **c == who).count() as i64)
            .sum()
    }

    fn value(&self) -> Value {
        let (g, h) = if self.game == Game::Connect4 {
            ("R", "Y")
        } else {
            ("B", "W")
        };
        Value::Array(
            self.cells
                .iter()
                .map(|row| {
                    Value::Array(
                        row.iter()
                            .map(|c| {
                                Value::from(match c {
                                    1 => g,
                                    2 => h,
                                    _ => "",
                                })
                            })
                            .collect(),
                    )
                })
                .collect(),
        )
    }
}

fn who_of(player: &str) -> Option<u8> {
    match player {
        "guest" => Some(1),
        "host" => Some(2),
        _ => None,
    }
}

/// What the rebuilding carries from step to step.
struct Builder {
    role: String,
    game: Option<Game>,
    board: Option<Board>,
    state: Map,
    messages: Vec<Value>,
    steps: Vec<Step>,
    first_t: Option<f64>,
    last_t: f64,
    truncated: bool,
}

fn game_of(protocol: &str, final_snap: &Map) -> Option<Game> {
    let p = protocol.to_ascii_lowercase();
    if p.contains("reversi") || p.contains("othello") || final_snap.contains_key("black") {
        Some(Game::Reversi)
    } else if p.contains("connect") {
        Some(Game::Connect4)
    } else if p.contains("gomoku") {
        Some(Game::Gomoku)
    } else {
        None
    }
}

fn frame_summary(msg: &Map) -> String {
    let action = s(msg, "action").unwrap_or("?");
    let rest: Vec<String> = msg
        .iter()
        .filter(|(k, _)| *k != "action" && *k != "hash" && *k != "nonce")
        .take(6)
        .map(|(k, v)| {
            let v = match v {
                Value::Object(_) | Value::Array(_) => "…".to_owned(),
                other => other.py_str(),
            };
            format!("{k}={v}")
        })
        .collect();
    if rest.is_empty() {
        action.to_owned()
    } else {
        format!("{action} {}", rest.join(" "))
    }
}

/// Who a decision record came from.
fn actor_of(decision: Option<&Value>, origin: Option<&Value>) -> Actor {
    let meta = decision.and_then(|d| d.get("_meta"));
    let whisper = meta
        .and_then(|m| m.get("caused_by_whisper_id"))
        .is_some_and(|w| !w.is_null());
    let origin = origin
        .and_then(Value::as_str)
        .or_else(|| meta.and_then(|m| m.get("origin")).and_then(Value::as_str))
        .unwrap_or("");
    if whisper || origin.contains("whisper") {
        Actor::Whisper
    } else if matches!(origin, "policy_runner" | "script_runner" | "strategy") {
        Actor::Strategy
    } else {
        Actor::Human
    }
}

/// The decision's own fields, without `_meta`, compact.
fn decision_text(d: Option<&Value>) -> String {
    match d.and_then(Value::as_object) {
        Some(m) => {
            let rest: Map = m
                .iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, v)| (k, v.clone()))
                .collect();
            crate::json::canonical::to_string_ordered(&Value::Object(rest))
        }
        None => "?".into(),
    }
}

fn window_of(data: &Map) -> String {
    format!(
        "{}={}",
        s(data, "match_key").unwrap_or("?"),
        data.get("match_value")
            .map(Value::py_str)
            .unwrap_or_default()
    )
}

impl Builder {
    fn push(
        &mut self,
        raw: &Raw,
        kind: StepKind,
        action: &str,
        summary: String,
        by: Option<Actor>,
    ) {
        if self.steps.len() >= MAX_STEPS {
            self.truncated = true;
            return;
        }
        let t_abs = crate::utc::parse_iso_seconds(&raw.ts).unwrap_or(self.last_t);
        let t_abs = t_abs.max(self.last_t);
        self.last_t = t_abs;
        let first = *self.first_t.get_or_insert(t_abs);
        let summary = short(&summary);
        if let Some(by) = by {
            self.state.insert("decided_by", Value::from(by.as_str()));
        }
        self.state.insert(
            "last_event",
            Value::Object(obj! { "summary" => summary.as_str() }),
        );
        if let Some(b) = &self.board {
            self.state.insert("board", b.value());
        }
        if !self.messages.is_empty() {
            let start = self.messages.len().saturating_sub(ROOM_MESSAGES);
            let mut view = self
                .state
                .get("group_view")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            view.insert("messages", Value::Array(self.messages[start..].to_vec()));
            self.state.insert("group_view", Value::Object(view));
        }
        self.steps.push(Step {
            ts: raw.ts.clone(),
            t: ((t_abs - first) * 1e6).round() / 1e6,
            kind,
            action: action.to_owned(),
            summary,
            by,
            state: self.state.clone(),
        });
    }

    fn set_dims(&mut self, msg: &Map) {
        let Some(game) = self.game else { return };
        let (rows, cols) = match game {
            Game::Connect4 => (int(msg, "rows"), int(msg, "cols")),
            _ => (int(msg, "board_size"), int(msg, "board_size")),
        };
        if let (Some(r), Some(c)) = (rows, cols)
            && self
                .board
                .as_ref()
                .is_none_or(|b| b.rows() != r || b.cols() != c)
            && let Some(b) = Board::new(game, r, c)
        {
            self.board = Some(b);
            self.state.insert("phase", Value::from("playing"));
        }
    }

    fn score(&mut self, host: Value, guest: Value) {
        self.state.insert(
            "score",
            Value::Object(obj! { "host" => host, "guest" => guest }),
        );
    }

    /// A move on the board from a frame.
    fn board_move(&mut self, msg: &Map, sent: bool, action: &str) {
        let Some(board) = self.board.as_mut() else {
            return;
        };
        let me = who_of(&self.role);
        let player =
            s(msg, "player")
                .and_then(who_of)
                .or(if sent { me } else { me.map(|m| 3 - m) });
        let Some(who) = player else { return };
        if msg.get("passed").is_some_and(|p| p.as_bool() == Some(true)) || action == "pass" {
            return;
        }
        let Some(c) = int(msg, "col") else { return };
        let r = match int(msg, "row") {
            Some(r) => r,
            None if board.game == Game::Connect4 => match board.drop_row(c) {
                Some(r) => r,
                None => return,
            },
            None => return,
        };
        // A final result echoes the guest's own last move: already placed.
        if board.at(r, c) == Some(who) {
            return;
        }
        if board.place(r, c, who) {
            let player = if who == 1 { "guest" } else { "host" };
            self.state.insert(
                "last_move",
                Value::Object(obj! { "row" => r, "col" => c, "player" => player }),
            );
            self.state
                .insert("moves", Value::from(board.count(1) + board.count(2)));
            if board.game == Game::Reversi {
                let (b, w) = (board.count(1), board.count(2));
                self.state.insert("black", Value::from(b));
                self.state.insert("white", Value::from(w));
            }
        }
    }

    fn frame(&mut self, raw: &Raw, data: &Map) {
        let sent = s(data, "direction") == Some("sent");
        let Some(msg) = data.get("msg").and_then(Value::as_object) else {
            let summary = raw
                .line
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or("frame")
                .to_owned();
            let kind = if sent {
                StepKind::Sent
            } else {
                StepKind::Received
            };
            self.push(raw, kind, "?", summary, None);
            return;
        };
        let action = s(msg, "action").unwrap_or("?").to_owned();
        if matches!(action.as_str(), "join" | "ready") {
            self.set_dims(msg);
        }
        if action == "ready" {
            self.state.insert("phase", Value::from("playing"));
        }
        if let Some(r) = int(msg, "round") {
            self.state.insert("round", Value::from(r + 1));
        }
        if let Some(t) = int(msg, "turn") {
            self.state.insert("turn", Value::from(t));
        }
        if let Some(b) = int(msg, "best_of") {
            self.state.insert("best_of", Value::from(b));
        }
        if matches!(action.as_str(), "move" | "round_result" | "pass") {
            self.board_move(msg, sent, &action);
        }
        if action == "round_result" {
            for (h, g) in [
                ("host_wins", "guest_wins"),
                ("host_score", "guest_score"),
                ("host_points", "guest_points"),
            ] {
                if let (Some(hv), Some(gv)) = (msg.get(h), msg.get(g)) {
                    self.score(hv.clone(), gv.clone());
                    break;
                }
            }
            if let Some(sc) = msg.get("score").filter(|v| v.as_object().is_some()) {
                self.state.insert("score", sc.clone());
            }
            if msg.get("game_over").and_then(Value::as_bool) == Some(true) {
                self.state.insert("phase", Value::from("game_over"));
                let w = msg
                    .get("game_winner")
                    .or_else(|| msg.get("winner"))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.state.insert("winner", w);
            } else {
                self.state.insert("phase", Value::from("playing"));
            }
        }
        let summary = match raw.line.get("summary").and_then(Value::as_str) {
            Some(sm) => format!("{action} | {sm}"),
            None => frame_summary(msg),
        };
        let kind = if action == "round_result" {
            StepKind::RoundResult
        } else if sent {
            StepKind::Sent
        } else {
            StepKind::Received
        };
        let summary = format!("{} {summary}", if sent { "→" } else { "←" });
        self.push(raw, kind, &action, summary, None);
    }

    fn decision_event(&mut self, raw: &Raw, kind: &str, data: &Map) {
        let w = window_of(data);
        let (step, summary, by) = match kind {
            "strategy_applied" => {
                let key = if data.contains_key("round") {
                    "round"
                } else {
                    "turn"
                };
                if key == "round"
                    && let Some(r) = int(data, "round")
                {
                    self.state.insert("round", Value::from(r + 1));
                }
                let at = data
                    .get(key)
                    .or_else(|| data.get("match_value"))
                    .map(Value::py_str)
                    .unwrap_or_default();
                let result = data
                    .get("result")
                    .map(|r| match r {
                        Value::String(t) => t.to_string(),
                        other => crate::json::canonical::to_string_ordered(other),
                    })
                    .unwrap_or_else(|| "?".into());
                (
                    StepKind::Decision,
                    format!("strategy chose {result} ({key} {at})"),
                    Some(Actor::Strategy),
                )
            }
            "local_decision_window_started" => (
                StepKind::Window,
                format!(
                    "decision window opened: {w} ({})",
                    s(data, "mode").unwrap_or("?")
                ),
                None,
            ),
            "local_decision_consumed" | "local_decision_finalized" => {
                let by = actor_of(data.get("decision"), data.get("origin"));
                let origin = data
                    .get("origin")
                    .and_then(Value::as_str)
                    .or_else(|| {
                        data.get("decision")
                            .and_then(|d| d.get("_meta"))
                            .and_then(|m| m.get("origin"))
                            .and_then(Value::as_str)
                    })
                    .unwrap_or("?");
                (
                    StepKind::Decision,
                    format!(
                        "{w}: {} by {} ({origin})",
                        decision_text(data.get("decision")),
                        by.as_str()
                    ),
                    Some(by),
                )
            }
            "local_decision_fallback" => (
                StepKind::Decision,
                format!(
                    "{w}: no decision in time ({}): autonomous play",
                    s(data, "reason").unwrap_or("?")
                ),
                Some(Actor::Autonomous),
            ),
            "local_decision_ready" | "local_decision_updated" => {
                let by = actor_of(data.get("decision"), None);
                (
                    StepKind::Event,
                    format!(
                        "{w}: {} submitted ({})",
                        decision_text(data.get("decision")),
                        by.as_str()
                    ),
                    None,
                )
            }
            _ => (StepKind::Event, event_summary(kind, raw, data), None),
        };
        self.push(raw, step, kind, summary, by);
    }

    /// A details.jsonl game record: a round result or a board move.
    fn detail(&mut self, raw: &Raw) {
        let line = &raw.line;
        let kind = s(line, "type").unwrap_or("?").to_owned();
        if let Some(r) = int(line, "round") {
            self.state.insert("round", Value::from(r));
        }
        if let Some(t) = int(line, "turn") {
            self.state.insert("turn", Value::from(t));
        }
        if matches!(kind.as_str(), "move" | "pass") {
            if self.board.is_none()
                && let Some(g) = self.game
            {
                let size = line.get("board_size").and_then(|_| int(line, "board_size"));
                if let Some(n) = size {
                    self.board = Board::new(g, n, n);
                }
            }
            let sent = s(line, "player") == Some(self.role.as_str());
            self.board_move(line, sent, &kind);
            self.state.insert("phase", Value::from("playing"));
        }
        if let (Some(h), Some(g)) = (line.get("host_wins"), line.get("guest_wins")) {
            self.score(h.clone(), g.clone());
            self.state.insert("phase", Value::from("playing"));
        }
        if line.get("game_over").and_then(Value::as_bool) == Some(true) {
            self.state.insert("phase", Value::from("game_over"));
            let w = line
                .get("game_winner")
                .or_else(|| line.get("winner"))
                .cloned()
                .unwrap_or(Value::Null);
            self.state.insert("winner", w);
        }
        let summary = match s(line, "summary") {
            Some(sm) => sm.to_owned(),
            None => frame_summary(line),
        };
        let step = if kind == "round_result" {
            StepKind::RoundResult
        } else {
            StepKind::Event
        };
        self.push(raw, step, &kind, summary, None);
    }

    fn room_frame(&mut self, raw: &Raw) {
        let line = &raw.line;
        if let Some(seq) = line.get("seq") {
            let mut g = self
                .state
                .get("group")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            g.insert("seq", seq.clone());
            if let Some(e) = line.get("leader_epoch") {
                g.insert("leader_epoch", e.clone());
            }
            self.state.insert("group", Value::Object(g));
        }
        let mut parts = Vec::new();
        for e in line
            .get("events")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(e) = e.as_object() else { continue };
            let seat = e.get("seat").map(Value::py_str).unwrap_or_default();
            let system = |text: String| {
                Value::Object(obj! { "kind" => "system", "seat" => -1, "text" => text })
            };
            match s(e, "kind").unwrap_or("") {
                "message" => {
                    let m = e.get("message").and_then(Value::as_object);
                    let text = m.and_then(|m| s(m, "text")).unwrap_or("").to_owned();
                    let seat = m
                        .and_then(|m| m.get("seat"))
                        .map(Value::py_str)
                        .unwrap_or_default();
                    parts.push(format!("seat {seat}: {text}"));
                    if let Some(m) = m {
                        self.messages.push(Value::Object(m.clone()));
                    }
                }
                "member_joined" => {
                    let t = format!("Seat {seat} joined the room");
                    parts.push(t.clone());
                    self.messages.push(system(t));
                }
                "member_left" => {
                    let t = format!("Seat {seat} left the room");
                    parts.push(t.clone());
                    self.messages.push(system(t));
                }
                "topic_changed" => {
                    let topic = s(e, "topic").unwrap_or("").to_owned();
                    let mut view = self
                        .state
                        .get("group_view")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    view.insert("topic", Value::from(topic.as_str()));
                    self.state.insert("group_view", Value::Object(view));
                    let t = format!("Seat {seat} changed the topic: {topic}");
                    parts.push(t.clone());
                    self.messages.push(system(t));
                }
                "room_closed" => {
                    let t = format!("Seat {seat} closed the room");
                    parts.push(t.clone());
                    self.messages.push(system(t));
                }
                other if !other.is_empty() => parts.push(other.replace('_', " ")),
                _ => {}
            }
        }
        if self.messages.len() > 4 * ROOM_MESSAGES {
            let cut = self.messages.len() - ROOM_MESSAGES;
            self.messages.drain(..cut);
        }
        let summary = if parts.is_empty() {
            format!(
                "room frame {} ({})",
                line.get("seq").map(Value::py_str).unwrap_or_default(),
                s(line, "frame_kind").unwrap_or("frame")
            )
        } else {
            parts.join("; ")
        };
        self.push(raw, StepKind::Room, "group_frame", summary, None);
    }
}

fn event_summary(kind: &str, raw: &Raw, data: &Map) -> String {
    if let Some(sm) = raw.line.get("summary").and_then(Value::as_str) {
        return format!("{kind}: {sm}");
    }
    if data.is_empty() {
        return kind.to_owned();
    }
    let parts: Vec<String> = data
        .iter()
        .filter(|(_, v)| !matches!(v, Value::Object(_) | Value::Array(_)))
        .take(4)
        .map(|(k, v)| {
            let v = v.py_str();
            let v: String = v.chars().take(24).collect();
            format!("{k}={v}")
        })
        .collect();
    format!("{kind}: {}", parts.join(" "))
}

/// Rebuilds the timeline of a resolved state dir.
pub fn load_dir(dir: &StateDir) -> Timeline {
    let home = dir.parent.clone().unwrap_or_else(|| dir.child.clone());
    let session = dir
        .session_file()
        .and_then(|f| read_json_object(&f))
        .or_else(|| read_json_object(&dir.child.join("session.json")))
        .unwrap_or_default();
    let final_snap = read_json_object(&dir.child.join("snapshot.json")).unwrap_or_default();
    let pick = |k: &str| -> Option<String> {
        s(&session, k)
            .or_else(|| s(&final_snap, k))
            .map(str::to_owned)
    };
    let protocol_name = pick("protocol_name");
    let role = pick("role");
    let control_mode = s(&session, "local_control_mode")
        .or_else(|| s(&final_snap, "control_mode"))
        .map(str::to_owned);
    let room = session.contains_key("group_id") || final_snap.contains_key("group");

    // Gather every line with its time.
    let mut raws: Vec<Raw> = Vec::new();
    let has_room_details = room;
    let events = dir.events_file();
    add(&mut raws, &events, Src::Event, &|l: &Map| {
        !(has_room_details && matches!(s(l, "type"), Some("group_frame" | "group_frame_received")))
    });
    let dec = dir.decision_events_file();
    if dec != events {
        add(&mut raws, &dec, Src::Event, &|_| true);
    }
    for base in dedup_dirs(&dir.child, &home) {
        add(
            &mut raws,
            &base.join("whispers.jsonl"),
            Src::Whisper,
            &|_| true,
        );
        add(
            &mut raws,
            &base.join("whisper_acks.jsonl"),
            Src::WhisperAck,
            &|_| true,
        );
    }
    if room {
        add(
            &mut raws,
            &dir.child.join("details.jsonl"),
            Src::RoomFrame,
            &|l: &Map| s(l, "type") == Some("group_frame"),
        );
    }
    // No frames on file (the reference's `protocol test` writes none): the
    // game records of details.jsonl tell the rounds and moves instead.
    if !room
        && !raws
            .iter()
            .any(|r| s(&r.line, "type") == Some("protocol_message"))
    {
        add(
            &mut raws,
            &dir.child.join("details.jsonl"),
            Src::Detail,
            &|l: &Map| matches!(s(l, "type"), Some("round_result" | "move" | "pass")),
        );
    }
    // Whispers copied into both dirs appear once.
    let mut seen_whispers = std::collections::HashSet::new();
    raws.retain(|r| {
        r.src != Src::Whisper
            || match s(&r.line, "id") {
                Some(id) => seen_whispers.insert(id.to_owned()),
                None => true,
            }
    });
    // Stable by time; lines without a time keep their file order at the end.
    raws.sort_by(|a, b| {
        let ka = crate::utc::parse_iso_seconds(&a.ts);
        let kb = crate::utc::parse_iso_seconds(&b.ts);
        match (ka, kb) {
            (Some(x), Some(y)) => x.total_cmp(&y).then(a.order.cmp(&b.order)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.order.cmp(&b.order),
        }
    });

    let mut state = Map::new();
    state.insert("phase", Value::from("starting"));
    if let Some(r) = &role {
        state.insert("role", Value::from(r.as_str()));
    }
    if let Some(p) = &protocol_name {
        state.insert("protocol_name", Value::from(p.as_str()));
    }
    if let Some(m) = &control_mode {
        state.insert("control_mode", Value::from(m.as_str()));
    }
    let mut b = Builder {
        role: role.clone().unwrap_or_default(),
        game: protocol_name
            .as_deref()
            .and_then(|p| game_of(p, &final_snap))
            .or_else(|| game_of("", &final_snap)),
        board: None,
        state,
        messages: Vec::new(),
        steps: Vec::new(),
        first_t: None,
        last_t: f64::MIN,
        truncated: false,
    };
    if b.game.is_none() && final_snap.contains_key("board") {
        // A board game this module does not know: dims only, no rules.
        b.game = Some(Game::Gomoku);
    }
    if let (Some(_), Some(r), Some(c)) = (
        b.game,
        int(&final_snap, "rows").or_else(|| int(&final_snap, "board_size")),
        int(&final_snap, "cols").or_else(|| int(&final_snap, "board_size")),
    ) {
        b.board = b.game.and_then(|g| Board::new(g, r, c));
    }
    let mut finished = false;
    let mut end_reason = s(&session, "end_reason").map(str::to_owned);
    let mut winner = session
        .get("winner")
        .filter(|w| !w.is_null())
        .map(Value::py_str);
    for raw in &raws {
        let line = &raw.line;
        let data = line
            .get("data")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match raw.src {
            Src::Whisper => {
                let who = s(line, "role").unwrap_or("user");
                let text = s(line, "text").unwrap_or("");
                let by = (who == "user").then_some(Actor::Whisper);
                b.push(
                    raw,
                    StepKind::Whisper,
                    "whisper",
                    format!("whisper ({who}): {text}"),
                    by,
                );
            }
            Src::WhisperAck => {
                let id = line
                    .get("whisper_id")
                    .or_else(|| line.get("id"))
                    .map(Value::py_str)
                    .unwrap_or_default();
                let status = line
                    .get("status")
                    .or_else(|| line.get("ack"))
                    .map(Value::py_str)
                    .unwrap_or_else(|| "acknowledged".into());
                b.push(
                    raw,
                    StepKind::Whisper,
                    "whisper_ack",
                    format!("whisper {id}: {status}"),
                    None,
                );
            }
            Src::RoomFrame => b.room_frame(raw),
            Src::Detail => b.detail(raw),
            Src::Event => {
                let kind = s(line, "type").unwrap_or("?").to_owned();
                match kind.as_str() {
                    "protocol_message" => b.frame(raw, &data),
                    "session_ended" => {
                        finished = true;
                        if let Some(r) = s(&data, "reason") {
                            end_reason = Some(r.to_owned());
                        }
                        if let Some(w) = data.get("winner").filter(|w| !w.is_null()) {
                            winner = Some(w.py_str());
                        }
                        // The end: what snapshot.json says, over what was rebuilt.
                        for (k, v) in final_snap.iter() {
                            if !matches!(k, "timing" | "updated_at" | "last_event") {
                                b.state.insert(k, v.clone());
                            }
                        }
                        if b.board.is_some() {
                            b.board = None; // snapshot.json's board stands
                        }
                        if !b.messages.is_empty()
                            && final_snap
                                .get("group_view")
                                .and_then(|v| v.get("messages"))
                                .is_some()
                        {
                            b.messages.clear();
                        }
                        let reason = s(&data, "reason").unwrap_or("?");
                        let summary = match data.get("winner").filter(|w| !w.is_null()) {
                            Some(w) => format!("session ended: {reason}, winner {}", w.py_str()),
                            None => format!("session ended: {reason}"),
                        };
                        b.push(raw, StepKind::Ended, "session_ended", summary, None);
                    }
                    k if super::state::is_decision_event(k) => b.decision_event(raw, k, &data),
                    _ => {
                        let summary = event_summary(&kind, raw, &data);
                        b.push(raw, StepKind::Event, &kind, summary, None);
                    }
                }
            }
        }
    }
    let ended_in_snapshot = matches!(
        s(&final_snap, "phase"),
        Some("game_over" | "group_completed")
    ) || final_snap.get("completed").and_then(Value::as_bool) == Some(true);
    if !finished && ended_in_snapshot {
        // No session_ended on file: the snapshot's end closes the timeline.
        let ts = s(&final_snap, "updated_at").unwrap_or("").to_owned();
        let summary = final_snap
            .get("last_event")
            .and_then(|l| l.get("summary"))
            .and_then(Value::as_str)
            .unwrap_or("game over")
            .to_owned();
        for (k, v) in final_snap.iter() {
            if !matches!(k, "timing" | "updated_at" | "last_event") {
                b.state.insert(k, v.clone());
            }
        }
        b.board = None;
        b.messages.clear();
        let raw = Raw {
            ts,
            order: usize::MAX,
            src: Src::Event,
            line: Map::new(),
        };
        b.push(
            &raw,
            StepKind::Ended,
            "session_ended",
            format!("end (snapshot.json): {summary}"),
            None,
        );
    }
    if !finished {
        finished = matches!(
            s(&session, "status"),
            Some("closed" | "completed" | "failed" | "aborted" | "crashed" | "stopped")
        ) || final_snap.get("completed").and_then(Value::as_bool) == Some(true)
            || matches!(
                s(&final_snap, "phase"),
                Some("game_over" | "group_completed")
            );
    }
    Timeline {
        dir: home.display().to_string(),
        protocol_name,
        protocol_id: pick("protocol_id"),
        role,
        control_mode,
        room,
        finished,
        end_reason,
        winner,
        truncated: b.truncated,
        werewolf: false,
        skipped: 0,
        steps: b.steps,
    }
}

/// Appends the lines of `path` that pass `filter`.
fn add(raws: &mut Vec<Raw>, path: &Path, src: Src, filter: &dyn Fn(&Map) -> bool) {
    for line in read_jsonl(path) {
        if !filter(&line) {
            continue;
        }
        let ts = s(&line, "ts").unwrap_or("").to_owned();
        let order = raws.len();
        raws.push(Raw {
            ts,
            order,
            src,
            line,
        });
    }
}

fn dedup_dirs(child: &Path, home: &Path) -> Vec<std::path::PathBuf> {
    if child == home {
        vec![child.to_owned()]
    } else {
        vec![child.to_owned(), home.to_owned()]
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
    use super::*;

    #[test]
    fn reversi_flips() {
        let mut b = Board::new(Game::Reversi, 8, 8).unwrap();
        assert_eq!((b.count(1), b.count(2)), (2, 2));
        assert!(b.place(5, 4, 1));
        assert_eq!((b.count(1), b.count(2)), (4, 1));
        assert!(!b.place(5, 4, 2));
        let mut c = Board::new(Game::Connect4, 6, 7).unwrap();
        assert_eq!(c.drop_row(3), Some(5));
        c.place(5, 3, 1);
        assert_eq!(c.drop_row(3), Some(4));
        assert!(Board::new(Game::Gomoku, 0, 5).is_none());
        assert!(Board::new(Game::Gomoku, 1_000_000, 5).is_none());
    }
}
