//! The coach pane (c on the sessions screen): a conversation about the
//! attached session with the user's own agent CLI (`services::coach`). The
//! conversation with scrollback, the reply streaming in, an input line.

use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

/// The pane's state.
#[derive(Debug, Default)]
pub struct CoachPane {
    /// The conversation so far: (role, text), role `user`, `coach` or `error`.
    pub entries: Vec<(String, String)>,
    /// The reply streaming in (lines so far) while a turn runs.
    pub streaming: Option<Vec<String>>,
    pub input: String,
    /// Lines scrolled back from the end.
    pub scroll: usize,
    /// The last outcome (ok?, text), under the conversation.
    pub note: Option<Note>,
    /// Stops the running turn.
    pub cancel: Option<tokio::sync::watch::Sender<bool>>,
    /// The session the coach talks about (its engine dir).
    pub child: std::path::PathBuf,
}

impl CoachPane {
    pub fn busy(&self) -> bool {
        self.streaming.is_some()
    }

    /// The last coach reply ("adopt as hint" sends it).
    pub fn last_reply(&self) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(r, _)| r == "coach")
            .map(|(_, t)| t.as_str())
    }

    fn lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let mut push = |who: &str, slot: Slot, text: &str| {
            for (i, l) in text.lines().enumerate() {
                let head = if i == 0 { who } else { "" };
                out.push(Line::from(vec![
                    Span::styled(format!("{head:>6} "), theme.fg(slot)),
                    Span::styled(l.to_owned(), theme.text()),
                ]));
            }
        };
        for (role, text) in &self.entries {
            let (who, slot) = match role.as_str() {
                "user" => ("you", Slot::Sent),
                "coach" => ("coach", Slot::Received),
                _ => ("error", Slot::Warn),
            };
            push(who, slot, text);
        }
        if let Some(s) = &self.streaming {
            let text = if s.is_empty() {
                "…".to_owned()
            } else {
                format!("{}\n…", s.join("\n"))
            };
            push("coach", Slot::Received, &text);
        }
        out
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        f.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(
                " Coach: your agent CLI on this session ",
                theme.title(),
            ));
        let inner = block.inner(area);
        f.render_widget(block, area);
        if inner.height < 3 {
            return;
        }
        let body_h = inner.height - 2;
        let mut lines = self.lines(theme);
        if lines.is_empty() {
            lines.push(Line::from(Span::styled(
                "Ask your agent about this session: the snapshot and recent events go with each question.",
                theme.fg(Slot::Muted),
            )));
        }
        // Wrapping is left to the paragraph; scroll counts logical lines.
        let total = lines.len();
        let end = total.saturating_sub(self.scroll.min(total.saturating_sub(1)));
        let start = end.saturating_sub(body_h as usize);
        let body = Rect {
            height: body_h,
            ..inner
        };
        f.render_widget(
            Paragraph::new(lines[start..end].to_vec()).wrap(Wrap { trim: false }),
            body,
        );
        let note = match (&self.note, self.busy()) {
            (_, true) => Line::from(Span::styled(
                "the coach is answering…",
                theme.fg(Slot::Muted),
            )),
            (Some(Note { ok, text: t }), _) => Line::from(Span::styled(
                t.clone(),
                theme.fg(if *ok { Slot::Ok } else { Slot::Warn }),
            )),
            (None, _) => Line::from(Span::styled(
                "the conversation persists across games until you reset it",
                theme.fg(Slot::Muted),
            )),
        };
        let y = inner.y + body_h;
        f.render_widget(
            Paragraph::new(note),
            Rect {
                y,
                height: 1,
                ..inner
            },
        );
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("› ", theme.accent()),
                Span::styled(self.input.clone(), theme.text()),
                Span::styled("▏", theme.accent()),
            ])),
            Rect {
                y: y + 1,
                height: 1,
                ..inner
            },
        );
    }
}
