//! Snapshot and score of the focused session: phase, role, round, score,
//! control modes, last event, the decision countdown; boards drawn as
//! boards, hero-duel as bars, card games as a card table (`cards`).

use super::cards::{self, Mark, Table, Verdict};
use crate::json::{Map, Value};
use crate::session::decision::mono_now;
use crate::tui::report::feed::OpenWindow;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// What the pane shows of one session.
pub struct View<'a> {
    pub snapshot: &'a Map,
    pub session: &'a Map,
    pub window: Option<&'a OpenWindow>,
    /// The prompt's board cursor (row, col) while deciding a move.
    pub cursor: Option<(usize, usize, bool)>,
    /// The prompt's card pick while deciding a card game's action.
    pub mark: Option<Mark>,
    /// What the events said of a card match's end.
    pub verdict: Option<&'a Verdict>,
}

fn get<'a>(m: &'a Map, k: &str) -> Option<&'a Value> {
    m.get(k).filter(|v| !v.is_null())
}

fn text(m: &Map, k: &str) -> Option<String> {
    get(m, k).map(Value::py_str).filter(|s| !s.is_empty())
}

/// Whether the session's protocol name or id mentions `word`.
fn proto_is(snap: &Map, sess: &Map, word: &str) -> bool {
    ["protocol_name", "protocol_id"].iter().any(|k| {
        text(snap, k)
            .or_else(|| text(sess, k))
            .is_some_and(|n| n.to_ascii_lowercase().contains(word))
    })
}

/// The board of a board-game snapshot: rows of cell strings.
pub fn board_of(snap: &Map) -> Option<Vec<Vec<String>>> {
    let rows = snap.get("board")?.as_array()?;
    Some(
        rows.iter()
            .map(|r| {
                r.as_array()
                    .map(|cells| cells.iter().map(Value::py_str).collect())
                    .unwrap_or_default()
            })
            .collect(),
    )
}

/// How a session ended, for people: "finished — you won", "finished — a
/// draw", "ended: peer timeout"…
pub fn ending(status: &str, end_reason: Option<&str>, winner: Option<&str>, role: &str) -> String {
    let reason = end_reason.unwrap_or("").trim();
    let finished = matches!(reason, "" | "completed" | "game_over" | "finished")
        && matches!(status, "closed" | "completed" | "finished" | "ended");
    let outcome = match winner.map(str::trim) {
        Some("draw" | "none" | "tie") => Some("a draw".to_owned()),
        Some(w) if !w.is_empty() && !role.is_empty() && w == role => Some("you won".to_owned()),
        Some(w) if !w.is_empty() && matches!(role, "host" | "guest") => {
            Some(format!("you lost ({w} won)"))
        }
        Some(w) if !w.is_empty() => Some(format!("{w} won")),
        _ => None,
    };
    match (finished, outcome) {
        (true, Some(o)) => format!("finished — {o}"),
        (true, None) => "finished".to_owned(),
        (false, o) => {
            let why = if reason.is_empty() {
                status.replace('_', " ")
            } else {
                reason.replace('_', " ")
            };
            match o {
                Some(o) => format!("ended: {why} — {o}"),
                None => format!("ended: {why}"),
            }
        }
    }
}

impl View<'_> {
    /// Lines of the summary block (also used by the tmux/README captures).
    pub fn summary_lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let (snap, sess) = (self.snapshot, self.session);
        let mut lines = Vec::new();
        let kv = |k: &str, v: String, style| {
            Line::from(vec![
                Span::styled(format!("{k:<8}"), theme.muted()),
                Span::styled(v, style),
            ])
        };
        let proto = text(snap, "protocol_name")
            .or_else(|| text(sess, "protocol_name"))
            .unwrap_or_else(|| "?".into());
        let phase = text(snap, "phase")
            .unwrap_or_else(|| text(sess, "status").unwrap_or_else(|| "waiting".into()));
        let role = text(snap, "role")
            .or_else(|| text(sess, "role"))
            .unwrap_or_else(|| "?".into());
        lines.push(kv(
            "game",
            proto,
            theme.accent().add_modifier(Modifier::BOLD),
        ));
        let mut phase_line = phase.clone();
        if let Some(r) = text(snap, "round") {
            phase_line.push_str(&format!(" · round {r}"));
            if let Some(b) = text(snap, "best_of") {
                phase_line.push_str(&format!(" · best of {b}"));
            }
        } else if let Some(a) = text(snap, "attempts") {
            phase_line.push_str(&format!(" · {a} attempts"));
        } else if let Some(t) = text(snap, "turn") {
            phase_line.push_str(&format!(" · turn {t}"));
        } else if let Some(a) = text(snap, "action_seq") {
            phase_line.push_str(&format!(" · action {a}"));
        }
        let phase_style = if phase == "game_over" || phase == "ended" {
            theme.fg(Slot::Ok).add_modifier(Modifier::BOLD)
        } else {
            theme.text()
        };
        lines.push(kv("phase", phase_line, phase_style));
        // A host still waiting for its guest: the invitation to join, and
        // how long it has been up.
        if phase == "waiting_peer"
            && let Some(post) = text(sess, "post_id")
            && matches!(
                text(sess, "status").as_deref(),
                Some("running" | "starting")
            )
        {
            let since = get(sess, "invited_at")
                .or_else(|| get(sess, "started_at"))
                .and_then(Value::as_f64);
            let waited = since
                .map(|t| {
                    format!(
                        " · waiting {}",
                        super::lists::age(crate::session::files::epoch_now() - t)
                    )
                })
                .unwrap_or_default();
            lines.push(kv(
                "invite",
                format!("post_id {post}{waited}"),
                theme.fg(Slot::Warn),
            ));
        }
        let local = text(sess, "local_control_mode")
            .or_else(|| text(snap, "control_mode"))
            .unwrap_or_else(|| "?".into());
        let peer = text(sess, "peer_control_mode").unwrap_or_else(|| "?".into());
        let coach = if local == "hybrid" { " (coaching)" } else { "" };
        lines.push(kv(
            "you",
            format!("{role} · {local}{coach} · peer {peer}"),
            theme.fg(if role == "host" {
                Slot::Host
            } else {
                Slot::Guest
            }),
        ));
        if board_of(snap).is_some() {
            // Which pieces are yours: the board draws the guest's ● and the
            // host's ○.
            let word = if proto_is(snap, sess, "gomoku") {
                "stones"
            } else {
                "discs"
            };
            let you = |side: &str| if side == role { " (you)" } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{word:<8}"), theme.muted()),
                Span::styled(
                    format!("● guest{}", you("guest")),
                    theme.fg(Slot::Guest).add_modifier(Modifier::BOLD),
                ),
                Span::styled(" · ", theme.muted()),
                Span::styled(
                    format!("○ host{}", you("host")),
                    theme.fg(Slot::Host).add_modifier(Modifier::BOLD),
                ),
            ]));
        }
        if let Some(score) = get(snap, "score").and_then(Value::as_object) {
            let h = score.get("host").map(Value::py_str).unwrap_or_default();
            let g = score.get("guest").map(Value::py_str).unwrap_or_default();
            lines.push(Line::from(vec![
                Span::styled(format!("{:<8}", "score"), theme.muted()),
                Span::styled(
                    format!("host {h}"),
                    theme.fg(Slot::Host).add_modifier(Modifier::BOLD),
                ),
                Span::styled(" : ", theme.muted()),
                Span::styled(
                    format!("guest {g}"),
                    theme.fg(Slot::Guest).add_modifier(Modifier::BOLD),
                ),
            ]));
        } else if let (Some(b), Some(w)) = (text(snap, "black"), text(snap, "white")) {
            lines.push(kv("discs", format!("black {b} · white {w}"), theme.text()));
        }
        if let Some(w) = text(sess, "winner")
            .or_else(|| text(snap, "winner"))
            .or_else(|| {
                // Until session.json closes, the last event names the winner.
                get(snap, "last_event")
                    .and_then(|e| e.get("structured"))
                    .and_then(Value::as_object)
                    .and_then(|s| text(s, "game_winner"))
            })
            .filter(|w| w != "none")
            && (phase == "game_over" || text(sess, "status").as_deref() == Some("closed"))
        {
            let you = if w == role { " (you)" } else { "" };
            lines.push(kv(
                "winner",
                format!("{w}{you}"),
                theme.fg(Slot::Ok).add_modifier(Modifier::BOLD),
            ));
        }
        if let Some(ev) = get(snap, "last_event")
            .and_then(Value::as_object)
            .and_then(|e| text(e, "summary"))
        {
            lines.push(kv("last", ev, theme.text()));
        }
        if let Some(w) = self.window {
            let now = mono_now();
            let release = (w.release_at - now).max(0.0);
            let deadline = (w.deadline_at - now).max(0.0);
            let at = super::numbering::label(&w.match_key, &w.match_value);
            let t = match w.mode.as_str() {
                "hybrid" => format!("{at} open · default in {release:.0}s"),
                _ => format!("{at} open · deadline in {deadline:.0}s"),
            };
            lines.push(kv("window", t, theme.fg(Slot::Warn)));
        }
        if let Some(st) = text(sess, "status")
            && st != "running"
            && st != "starting"
        {
            let winner = text(sess, "winner").or_else(|| text(snap, "winner"));
            let ending = ending(
                &st,
                text(sess, "end_reason").as_deref(),
                winner.as_deref(),
                &role,
            );
            lines.push(kv("session", ending, theme.muted()));
        }
        lines
    }

    fn bars(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let snap = self.snapshot;
        let mut out = Vec::new();
        let (Some(hp), Some(max)) = (
            get(snap, "hp").and_then(Value::as_object),
            get(snap, "hp_max").and_then(Value::as_object),
        ) else {
            return out;
        };
        let heroes = get(snap, "heroes").and_then(Value::as_object);
        for (side, slot) in [("host", Slot::Host), ("guest", Slot::Guest)] {
            let v = hp.get(side).and_then(Value::as_f64).unwrap_or(0.0);
            let m = max
                .get(side)
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(1.0);
            let name = heroes
                .and_then(|h| h.get(side))
                .map(Value::py_str)
                .unwrap_or_default();
            let room = width.saturating_sub(24).max(4);
            let filled = ((v / m) * room as f64).round().clamp(0.0, room as f64) as usize;
            out.push(Line::from(vec![
                Span::styled(format!("{side:<6}{name:<8}"), theme.fg(slot)),
                Span::styled("█".repeat(filled), theme.fg(slot)),
                Span::styled("░".repeat(room - filled), theme.muted()),
                Span::styled(format!(" {v:.0}/{m:.0}"), theme.text()),
            ]));
        }
        out
    }

    fn board(&self, theme: &Theme) -> Vec<Line<'static>> {
        let Some(board) = board_of(self.snapshot) else {
            return Vec::new();
        };
        let last = get(self.snapshot, "last_move").and_then(Value::as_object);
        let last = last.map(|m| {
            (
                m.get("row").and_then(Value::as_i64).unwrap_or(-1),
                m.get("col").and_then(Value::as_i64).unwrap_or(-1),
            )
        });
        let cols = board.first().map(Vec::len).unwrap_or(0);
        let mut out = Vec::new();
        let mut head = vec![Span::styled("   ", theme.muted())];
        for c in 0..cols {
            // The prompt's cursor column is marked for terminals without colour.
            if self.cursor.is_some_and(|(_, cc, _)| cc == c) {
                head.push(Span::styled(" ▼", theme.accent()));
            } else {
                head.push(Span::styled(format!("{:>2}", c % 100), theme.muted()));
            }
        }
        out.push(Line::from(head));
        for (r, row) in board.iter().enumerate() {
            let mut spans = vec![Span::styled(format!("{r:>2} "), theme.muted())];
            for (c, cell) in row.iter().enumerate() {
                let glyph = match cell.as_str() {
                    "" => "·",
                    "B" | "R" => "●",
                    _ => "○",
                };
                let mut style = match cell.as_str() {
                    "" => theme.fg(Slot::Board),
                    "B" | "R" => theme.fg(Slot::Guest),
                    _ => theme.fg(Slot::Host),
                };
                if last == Some((r as i64, c as i64)) {
                    style = style.add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
                }
                if let Some((cr, cc, col_only)) = self.cursor
                    && cc == c
                    && (col_only || cr == r)
                {
                    style = theme.cursor();
                }
                spans.push(Span::raw(" "));
                spans.push(Span::styled(glyph, style));
            }
            out.push(Line::from(spans));
        }
        out
    }

    /// The card table's lines at `width` (none for other games).
    fn table(&self, theme: &Theme, width: u16) -> Option<(Vec<Line<'static>>, u16)> {
        let t = Table::of(self.snapshot)?;
        let role = text(self.snapshot, "role")
            .or_else(|| text(self.session, "role"))
            .unwrap_or_default();
        let paint = cards::Paint {
            theme,
            mark: self.mark,
            verdict: self.verdict,
            your_move: self.window.is_some(),
            role: &role,
        };
        // Beside the summary when both fit, else below it.
        let natural = t.natural_width(self.verdict);
        let beside = width >= natural + 44;
        let w = if beside { natural } else { width };
        Some((t.lines(&paint, w), if beside { natural } else { 0 }))
    }

    /// Rows the pane needs (borders included) at `width`.
    pub fn height(&self, theme: &Theme, width: u16) -> u16 {
        let lines = if self.snapshot.is_empty() && self.session.is_empty() {
            2
        } else {
            self.summary_lines(theme).len()
        };
        if let Some((table, beside)) = self.table(theme, width.saturating_sub(2)) {
            let body = if beside > 0 {
                lines.max(table.len())
            } else {
                lines + table.len()
            };
            return body as u16 + 2;
        }
        let board = self.board(theme);
        let board_w = board.iter().map(Line::width).max().unwrap_or(0) as u16;
        let extra = self.bars(theme, width as usize).len();
        let body = if !board.is_empty() && width.saturating_sub(2) >= board_w + 44 {
            lines.max(board.len())
        } else {
            lines + board.len() + extra
        };
        body as u16 + 2
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, title: &str) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(format!(" Session {title}"), theme.title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        if self.snapshot.is_empty() && self.session.is_empty() {
            f.render_widget(
                Paragraph::new(vec![
                    Line::from(Span::styled("No session attached.", theme.muted())),
                    Line::from(Span::styled(
                        "Join an invitation (Enter) or host one (n).",
                        theme.muted(),
                    )),
                ]),
                inner,
            );
            return;
        }
        let mut lines = self.summary_lines(theme);
        if let Some((table, beside)) = self.table(theme, inner.width) {
            if beside > 0 {
                let left = Rect {
                    width: inner.width - beside - 1,
                    ..inner
                };
                let right = Rect {
                    x: inner.x + inner.width - beside,
                    width: beside,
                    ..inner
                };
                f.render_widget(Paragraph::new(lines), left);
                f.render_widget(Paragraph::new(table), right);
            } else {
                lines.extend(table);
                f.render_widget(Paragraph::new(lines), inner);
            }
            return;
        }
        let board = self.board(theme);
        let bars = self.bars(theme, inner.width as usize);
        // Side by side when there is room, else the board below.
        let board_w = board.iter().map(Line::width).max().unwrap_or(0) as u16;
        if !board.is_empty() && inner.width >= board_w + 44 {
            let left = Rect {
                width: inner.width - board_w - 1,
                ..inner
            };
            let right = Rect {
                x: inner.x + inner.width - board_w,
                width: board_w,
                ..inner
            };
            f.render_widget(Paragraph::new(lines), left);
            f.render_widget(Paragraph::new(board), right);
            return;
        }
        lines.extend(bars);
        lines.extend(board);
        f.render_widget(Paragraph::new(lines), inner);
    }
}
