//! Rebuilding the timeline step by step: the state each frame, decision,
//! whisper, details record and room frame leaves, and the board replayed by
//! the game's own rules (`protocols::board`).

use super::{Actor, MAX_STEPS, ROOM_MESSAGES, Raw, Step, StepKind, int, s, short};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::board::{BoardGame, Cell, Kind};

/// Largest board side rebuilt (larger dims in a file are ignored).
const MAX_SIDE: i64 = 64;

/// A board of `kind` for dims read from a file: none when a side is
/// outside 1..=[`MAX_SIDE`].
pub(super) fn new_board(kind: Kind, rows: i64, cols: i64) -> Option<BoardGame> {
    ((1..=MAX_SIDE).contains(&rows) && (1..=MAX_SIDE).contains(&cols))
        .then(|| BoardGame::sized(kind, rows, cols))
}

pub(super) fn who_of(player: &str) -> Option<Cell> {
    match player {
        "guest" => Some(Cell::Guest),
        "host" => Some(Cell::Host),
        _ => None,
    }
}

/// What the rebuilding carries from step to step.
pub(super) struct Builder {
    pub(super) role: String,
    pub(super) game: Option<Kind>,
    pub(super) board: Option<BoardGame>,
    pub(super) state: Map,
    pub(super) messages: Vec<Value>,
    pub(super) steps: Vec<Step>,
    pub(super) first_t: Option<f64>,
    pub(super) last_t: f64,
    pub(super) truncated: bool,
}

pub(super) fn game_of(protocol: &str, final_snap: &Map) -> Option<Kind> {
    let p = protocol.to_ascii_lowercase();
    if p.contains("reversi") || p.contains("othello") || final_snap.contains_key("black") {
        Some(Kind::Reversi)
    } else if p.contains("connect") {
        Some(Kind::Connect4)
    } else if p.contains("gomoku") {
        Some(Kind::Gomoku)
    } else {
        None
    }
}

pub(super) fn frame_summary(msg: &Map) -> String {
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
pub(super) fn actor_of(decision: Option<&Value>, origin: Option<&Value>) -> Actor {
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
pub(super) fn decision_text(d: Option<&Value>) -> String {
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

pub(super) fn window_of(data: &Map) -> String {
    format!(
        "{}={}",
        s(data, "match_key").unwrap_or("?"),
        data.get("match_value")
            .map(Value::py_str)
            .unwrap_or_default()
    )
}

impl Builder {
    pub(super) fn push(
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
            self.state.insert("board", b.grid());
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

    pub(super) fn set_dims(&mut self, msg: &Map) {
        let Some(game) = self.game else { return };
        let (rows, cols) = match game {
            Kind::Connect4 => (int(msg, "rows"), int(msg, "cols")),
            _ => (int(msg, "board_size"), int(msg, "board_size")),
        };
        if let (Some(r), Some(c)) = (rows, cols)
            && self
                .board
                .as_ref()
                .is_none_or(|b| b.rows() != r || b.cols() != c)
            && let Some(b) = new_board(game, r, c)
        {
            self.board = Some(b);
            self.state.insert("phase", Value::from("playing"));
        }
    }

    pub(super) fn score(&mut self, host: Value, guest: Value) {
        self.state.insert(
            "score",
            Value::Object(obj! { "host" => host, "guest" => guest }),
        );
    }

    /// A move on the board from a frame.
    pub(super) fn board_move(&mut self, msg: &Map, sent: bool, action: &str) {
        let Some(board) = self.board.as_mut() else {
            return;
        };
        let me = who_of(&self.role);
        let player =
            s(msg, "player")
                .and_then(who_of)
                .or(if sent { me } else { me.map(Cell::other) });
        let Some(who) = player else { return };
        if msg.get("passed").is_some_and(|p| p.as_bool() == Some(true)) || action == "pass" {
            return;
        }
        let Some(c) = int(msg, "col") else { return };
        let r = match int(msg, "row") {
            Some(r) => r,
            None if board.kind() == Kind::Connect4 => match board.drop_row(c) {
                Some(r) => r,
                None => return,
            },
            None => return,
        };
        // A final result echoes the guest's own last move: already placed.
        if board.cell(r, c) == who {
            return;
        }
        if board.place(r, c, who) {
            let player = who.player();
            self.state.insert(
                "last_move",
                Value::Object(obj! { "row" => r, "col" => c, "player" => player }),
            );
            self.state.insert(
                "moves",
                Value::from(board.stones(Cell::Guest) + board.stones(Cell::Host)),
            );
            if board.kind() == Kind::Reversi {
                let (b, w) = (board.stones(Cell::Guest), board.stones(Cell::Host));
                self.state.insert("black", Value::from(b));
                self.state.insert("white", Value::from(w));
            }
        }
    }

    pub(super) fn frame(&mut self, raw: &Raw, data: &Map) {
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

    pub(super) fn decision_event(&mut self, raw: &Raw, kind: &str, data: &Map) {
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
    pub(super) fn detail(&mut self, raw: &Raw) {
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
                    self.board = new_board(g, n, n);
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

    pub(super) fn room_frame(&mut self, raw: &Raw) {
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

pub(super) fn event_summary(kind: &str, raw: &Raw, data: &Map) -> String {
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
