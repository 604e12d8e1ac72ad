//! A trusted-agent-task-v1 session's task: its id, state and revision, the
//! execution, the open question, the result, the artifacts, then the notes
//! and the steps (newest last, as many as fit). Draws a
//! [`TaskView`](crate::session::task::TaskView); changes nothing.

use crate::session::task::TaskView;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// What the pane draws.
pub struct TaskPaint<'a> {
    pub view: &'a TaskView,
    pub title: &'a str,
    /// `phase` of the snapshot (`ended`, `aborted`…), shown after the state.
    pub phase: Option<&'a str>,
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

fn state_slot(state: &str) -> Slot {
    match state {
        "completed" => Slot::Ok,
        "failed" | "rejected" | "expired" | "execution_unknown" => Slot::Error,
        "cancelled" | "cancel_requested" | "waiting_inputs" | "waiting_local_operator" => {
            Slot::Warn
        }
        _ => Slot::Accent,
    }
}

impl TaskPaint<'_> {
    /// The header block: everything but the notes and the steps.
    fn header(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let v = self.view;
        let kv = |k: &str, spans: Vec<Span<'static>>| {
            let mut all = vec![Span::styled(format!("{k:<10}"), theme.muted())];
            all.extend(spans);
            Line::from(all)
        };
        let text_w = width.saturating_sub(10).max(8);
        let mut lines = vec![kv(
            "task",
            vec![Span::styled(
                one_line(&v.task_id, text_w),
                theme.accent().add_modifier(Modifier::BOLD),
            )],
        )];
        let state = v.state.as_deref().unwrap_or("unknown");
        let mut spans = vec![Span::styled(
            state.to_owned(),
            theme.fg(state_slot(state)).add_modifier(Modifier::BOLD),
        )];
        if let Some(r) = v.revision {
            spans.push(Span::styled(format!(" · revision {r}"), theme.text()));
        }
        if let Some(p) = self.phase.filter(|p| !p.is_empty()) {
            spans.push(Span::styled(format!(" · session {p}"), theme.muted()));
        }
        lines.push(kv("state", spans));
        if let Some(goal) = &v.goal {
            let class = v
                .execution_class
                .as_deref()
                .map(|c| format!("[{c}] "))
                .unwrap_or_default();
            lines.push(kv(
                "goal",
                vec![Span::styled(
                    one_line(&format!("{class}{goal}"), text_w),
                    theme.text(),
                )],
            ));
        }
        if let Some(x) = &v.execution {
            lines.push(kv(
                "execution",
                vec![Span::styled(one_line(x, text_w), theme.text())],
            ));
        }
        if let Some(q) = &v.question {
            lines.push(kv(
                "question",
                vec![Span::styled(one_line(q, text_w), theme.fg(Slot::Warn))],
            ));
        }
        if let Some((state, summary)) = &v.result {
            lines.push(kv(
                "result",
                vec![
                    Span::styled(
                        format!("{state} "),
                        theme.fg(state_slot(state)).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(
                        one_line(summary, text_w.saturating_sub(state.len() + 1)),
                        theme.text(),
                    ),
                ],
            ));
        }
        if !v.result_files.is_empty() {
            let files: Vec<String> = v
                .result_files
                .iter()
                .map(|(p, n)| format!("{p} ({n} B)"))
                .collect();
            lines.push(kv(
                "results",
                vec![Span::styled(
                    one_line(&files.join(", "), text_w),
                    theme.text(),
                )],
            ));
        }
        for a in &v.artifacts {
            lines.push(kv(
                "artifact",
                vec![Span::styled(
                    one_line(
                        &format!(
                            "{} {} · {}/{} files",
                            a.artifact_id, a.state, a.files_complete, a.files_total
                        ),
                        text_w,
                    ),
                    theme.text(),
                )],
            ));
        }
        if let Some(e) = &v.error {
            lines.push(kv(
                "error",
                vec![Span::styled(one_line(e, text_w), theme.fg(Slot::Error))],
            ));
        }
        lines
    }

    fn note_lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        self.view
            .notes
            .iter()
            .map(|n| {
                let who = if n.from == "worker" { "worker" } else { "you" };
                Line::from(vec![
                    Span::styled(format!("  {who:<7}"), theme.accent()),
                    Span::styled(
                        one_line(&n.text, width.saturating_sub(9).max(8)),
                        theme.text(),
                    ),
                ])
            })
            .collect()
    }

    fn step_lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        self.view
            .steps
            .iter()
            .map(|s| {
                let head = format!("  #{:<4}{:<24}", s.event_id, one_line(&s.kind, 23));
                let room = width.saturating_sub(head.chars().count()).max(8);
                Line::from(vec![
                    Span::styled(head, theme.text()),
                    Span::styled(one_line(&s.summary, room), theme.muted()),
                ])
            })
            .collect()
    }

    /// Notes and steps in `room` rows: the newest of each; the steps keep
    /// at least three rows while there are that many.
    fn body(&self, theme: &Theme, width: usize, room: usize) -> Vec<Line<'static>> {
        let notes = self.note_lines(theme, width);
        let steps = self.step_lines(theme, width);
        let notes_head = usize::from(!notes.is_empty());
        let need = notes_head + notes.len() + 1 + steps.len();
        let (keep_notes, keep_steps) = if need <= room {
            (notes.len(), steps.len())
        } else {
            let rows = room.saturating_sub(1 + notes_head);
            let steps_min = steps.len().min(3).min(rows);
            let keep_notes = notes.len().min(rows - steps_min);
            (keep_notes, steps.len().min(rows - keep_notes))
        };
        let mut lines = Vec::new();
        if keep_notes > 0 {
            lines.push(Line::from(Span::styled("notes", theme.muted())));
            let skip = notes.len() - keep_notes;
            lines.extend(notes.into_iter().skip(skip));
        }
        let head = match (steps.len(), keep_steps) {
            (0, _) => "steps     none reported yet".to_owned(),
            (n, k) if k == n => format!("steps     {n}"),
            (n, k) => format!("steps     {n} (the newest {k} shown)"),
        };
        lines.push(Line::from(Span::styled(head, theme.muted())));
        lines.extend(steps.into_iter().skip(self.view.steps.len() - keep_steps));
        lines
    }

    /// Rows the pane would like (borders included).
    pub fn height(&self, theme: &Theme, width: u16) -> u16 {
        let w = usize::from(width.saturating_sub(2));
        let n = self.header(theme, w).len() + self.body(theme, w, usize::MAX).len();
        u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2)
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(
                format!(" Task {} ", self.title),
                theme.title(),
            ));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let w = usize::from(inner.width);
        let mut lines = self.header(theme, w);
        let room = usize::from(inner.height).saturating_sub(lines.len());
        lines.extend(self.body(theme, w, room));
        f.render_widget(Paragraph::new(lines), inner);
    }
}
