//! The replay view of a finished session, drawn over the sessions screen's
//! body: a header (protocol, role, step, play state, speed), the position
//! bar with marks where a person (H) or a whisper (W) intervened, the state
//! as it stood at the step (the snapshot pane; a room's messages), and the
//! steps around the one shown with who decided.

use super::snapshot;
use crate::json::{Map, Value};
use crate::session::replay::{Actor, Step, StepKind, Timeline};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// What the view shows.
pub struct ReplayPaint<'a> {
    pub timeline: &'a Timeline,
    pub pos: usize,
    pub playing: bool,
    pub speed: f64,
}

fn speed_label(x: f64) -> String {
    if x >= 1.0 {
        format!("×{x:.0}")
    } else {
        format!("×1/{:.0}", 1.0 / x)
    }
}

fn by_style(theme: &Theme, by: Option<Actor>) -> Style {
    match by {
        Some(Actor::Human) => theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
        Some(Actor::Whisper) => theme.fg(Slot::Accent).add_modifier(Modifier::BOLD),
        Some(_) => theme.fg(Slot::Local),
        None => theme.text(),
    }
}

/// The position bar: `width` cells over the steps; the shown step is `●`,
/// interventions `H`/`W`.
pub fn bar(t: &Timeline, pos: usize, width: usize, theme: &Theme) -> Line<'static> {
    let n = t.steps.len();
    if n == 0 || width == 0 {
        return Line::from(Span::styled("(no steps)", theme.muted()));
    }
    let cell_of = |i: usize| {
        if n <= 1 { 0 } else { i * (width - 1) / (n - 1) }
    };
    let mut cells: Vec<(char, Style)> = (0..width)
        .map(|c| {
            if c <= cell_of(pos) {
                ('━', theme.accent())
            } else {
                ('─', theme.muted())
            }
        })
        .collect();
    for i in t.interventions() {
        let by = t.steps[i].by;
        let ch = if by == Some(Actor::Whisper) { 'W' } else { 'H' };
        cells[cell_of(i)] = (ch, by_style(theme, by));
    }
    cells[cell_of(pos)] = ('●', theme.title());
    Line::from(
        cells
            .into_iter()
            .map(|(c, s)| Span::styled(c.to_string(), s))
            .collect::<Vec<_>>(),
    )
}

fn kind_label(s: &Step) -> &'static str {
    match s.kind {
        StepKind::Sent => "sent",
        StepKind::Received => "recv",
        StepKind::RoundResult => "result",
        StepKind::Window => "window",
        StepKind::Decision => "decide",
        StepKind::Whisper => "whisper",
        StepKind::Room => "room",
        StepKind::Ended => "end",
        StepKind::Event => "event",
    }
}

fn step_line(i: usize, s: &Step, current: bool, zero: bool, theme: &Theme) -> Line<'static> {
    let base = match s.kind {
        StepKind::Sent => theme.fg(Slot::Sent),
        StepKind::Received | StepKind::RoundResult => theme.fg(Slot::Received),
        StepKind::Decision | StepKind::Whisper | StepKind::Window => by_style(theme, s.by),
        StepKind::Ended => theme.fg(Slot::Ok),
        _ => theme.fg(Slot::System),
    };
    let mut spans = vec![
        Span::styled(
            format!("{}{:>4} ", if current { "▶" } else { " " }, i + 1),
            theme.muted(),
        ),
        Span::styled(format!("{:>8.3}s ", s.t), theme.muted()),
        Span::styled(format!("{:<7} ", kind_label(s)), base),
        Span::styled(
            if zero {
                super::numbering::rewrite(&s.summary)
            } else {
                s.summary.clone()
            },
            base,
        ),
    ];
    if let Some(by) = s.by {
        spans.push(Span::styled(
            format!("  [{}]", by.as_str()),
            by_style(theme, Some(by)),
        ));
    }
    let line = Line::from(spans);
    if current {
        line.style(theme.selected())
    } else {
        line
    }
}

fn room_lines(state: &Map, theme: &Theme, height: usize) -> Vec<Line<'static>> {
    let view = state.get("group_view").and_then(Value::as_object);
    let mut out = Vec::new();
    if let Some(t) = view.and_then(|v| v.get("topic")).and_then(Value::as_str) {
        out.push(Line::from(vec![
            Span::styled("topic: ", theme.muted()),
            Span::styled(t.to_owned(), theme.text()),
        ]));
    }
    let msgs = view
        .and_then(|v| v.get("messages"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let room = height.saturating_sub(out.len());
    for m in &msgs[msgs.len().saturating_sub(room)..] {
        let text = m.get("text").map(Value::py_str).unwrap_or_default();
        if m.get("kind").and_then(Value::as_str) == Some("system") {
            out.push(Line::from(Span::styled(format!("· {text}"), theme.muted())));
        } else {
            let seat = m.get("seat").map(Value::py_str).unwrap_or_default();
            out.push(Line::from(vec![
                Span::styled(format!("seat {seat}: "), theme.accent()),
                Span::styled(text, theme.text()),
            ]));
        }
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled("(no messages yet)", theme.muted())));
    }
    out
}

impl ReplayPaint<'_> {
    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        f.render_widget(Clear, area);
        let t = self.timeline;
        let n = t.steps.len();
        // Wire rounds counted from 0 read from 1 (see `numbering`).
        let zero = t
            .protocol_name
            .as_deref()
            .and_then(crate::engine::whisper::Schema::for_protocol)
            .and_then(|s| s.match_key)
            .is_some_and(super::numbering::zero_based);
        let title = format!(
            " Replay · {} as {} ",
            t.protocol_name.as_deref().unwrap_or("?"),
            t.role.as_deref().unwrap_or("?")
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(title, theme.title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        if inner.height < 4 || inner.width < 20 {
            return;
        }
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Length(1),
                Constraint::Min(3),
            ])
            .split(inner);
        let step = t.steps.get(self.pos);
        let state_word = if self.playing {
            "▶ playing"
        } else {
            "⏸ paused"
        };
        let mut head = vec![
            Span::styled(
                format!("step {}/{n}", if n == 0 { 0 } else { self.pos + 1 }),
                theme.title(),
            ),
            Span::styled(
                format!(
                    "  {:.3}s / {:.3}s  ",
                    step.map(|s| s.t).unwrap_or(0.0),
                    t.duration()
                ),
                theme.muted(),
            ),
            Span::styled(
                format!("{state_word} {}", speed_label(self.speed)),
                theme.accent(),
            ),
        ];
        let marks = t.interventions().len();
        if marks > 0 {
            head.push(Span::styled(
                format!("  {marks} intervention(s): H person, W whisper"),
                theme.fg(Slot::Warn),
            ));
        }
        if let Some(end) = &t.end_reason {
            let ending = snapshot::ending(
                if t.finished { "closed" } else { "running" },
                Some(end),
                t.winner.as_deref(),
                t.role.as_deref().unwrap_or(""),
            );
            head.push(Span::styled(format!("  {ending}"), theme.muted()));
        }
        f.render_widget(Paragraph::new(Line::from(head)), rows[0]);
        f.render_widget(
            Paragraph::new(bar(t, self.pos, rows[1].width as usize, theme)),
            rows[1],
        );
        let body = rows[2];
        let wide = body.width >= 100;
        let parts = Layout::default()
            .direction(if wide {
                Direction::Horizontal
            } else {
                Direction::Vertical
            })
            .constraints(if wide {
                [Constraint::Percentage(45), Constraint::Percentage(55)]
            } else {
                [Constraint::Percentage(55), Constraint::Percentage(45)]
            })
            .split(body);
        let empty = Map::new();
        let mut state = step.map(|s| s.state.clone()).unwrap_or_default();
        if zero
            && let Some(Value::Object(ev)) = state.get_mut("last_event")
            && let Some(Value::String(sm)) = ev.get_mut("summary")
        {
            *sm = super::numbering::rewrite(sm);
        }
        let state = &state;
        if t.room {
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(false))
                .title(Span::styled(" Room at this step ", theme.title()));
            let inner = block.inner(parts[0]);
            f.render_widget(block, parts[0]);
            f.render_widget(
                Paragraph::new(room_lines(state, theme, inner.height as usize)),
                inner,
            );
        } else {
            let view = snapshot::View {
                snapshot: state,
                session: &empty,
                window: None,
                cursor: None,
                mark: None,
                verdict: None,
            };
            view.draw(f, parts[0], theme, "at this step");
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(" Steps ", theme.title()));
        let list_area = block.inner(parts[1]);
        f.render_widget(block, parts[1]);
        let h = list_area.height as usize;
        let start = self.pos.saturating_sub(h / 2).min(n.saturating_sub(h));
        let lines: Vec<Line> = t
            .steps
            .iter()
            .enumerate()
            .skip(start)
            .take(h)
            .map(|(i, s)| step_line(i, s, i == self.pos, zero, theme))
            .collect();
        f.render_widget(Paragraph::new(lines), list_area);
    }
}
