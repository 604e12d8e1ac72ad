//! The whisper line (w on the sessions screen): a note to your own side,
//! shown before it is sent as what the session will understand it as —
//! a persistent strategy, a one-shot decision, an intent for a later
//! window, or nothing it can act on (kept as a hint).

use crate::engine::whisper::{Intent, Schema, Scope, TargetWindow, parse_intent};
use crate::json::Value;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

/// The line being typed and what it is read with.
#[derive(Debug, Clone, Default)]
pub struct WhisperLine {
    pub text: String,
    /// The protocol's whisper schema (`None`: numbers only).
    pub schema: Option<Schema>,
    /// The decision window open now: (match key, match value).
    pub window: Option<(String, Value)>,
}

/// What a whisper is understood as, for the line under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Strategy,
    Decision,
    Intent,
    NotUnderstood,
}

impl WhisperLine {
    pub fn intent(&self) -> Option<Intent> {
        parse_intent(&self.text, self.schema.as_ref())
    }

    /// How the session will read the text, and a line saying so.
    pub fn preview(&self) -> (Reading, String) {
        if self.text.trim().is_empty() {
            return (
                Reading::NotUnderstood,
                "type a note: “always rock”, “paper this round”, “bid 3 next”…".into(),
            );
        }
        let Some(i) = self.intent() else {
            return (
                Reading::NotUnderstood,
                "not understood as a move: kept as a hint (strategy.operator_hint)".into(),
            );
        };
        let what = what(&i);
        match i.scope {
            Scope::Persist => (
                Reading::Strategy,
                format!("persistent strategy: {what} from now on (strategy.json)"),
            ),
            Scope::Once => match (&self.window, i.target) {
                (Some((k, v)), TargetWindow::Current) if i.policy.is_none() => (
                    Reading::Decision,
                    format!(
                        "one-shot decision: {what} for {} (the open window)",
                        super::numbering::label(k, v)
                    ),
                ),
                _ => (
                    Reading::Intent,
                    format!(
                        "intent: {what} once, at the {} window",
                        if i.target == TargetWindow::Current {
                            "next open"
                        } else {
                            "next"
                        }
                    ),
                ),
            },
        }
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let h = 4.min(area.height);
        let r = Rect {
            x: area.x,
            y: area.y + area.height - h,
            width: area.width,
            height: h,
        };
        f.render_widget(Clear, r);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(
                " Whisper to your side (Enter sends · Esc cancels) ",
                theme.title(),
            ));
        let inner = block.inner(r);
        f.render_widget(block, r);
        let (reading, text) = self.preview();
        let slot = match reading {
            Reading::NotUnderstood => Slot::Warn,
            _ => Slot::Ok,
        };
        let lines = vec![
            Line::from(vec![
                Span::styled("› ", theme.accent()),
                Span::styled(self.text.clone(), theme.text()),
                Span::styled("▏", theme.accent()),
            ]),
            Line::from(Span::styled(text, theme.fg(slot))),
        ];
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

fn what(i: &Intent) -> String {
    match (&i.policy, &i.value) {
        (Some(p), _) => format!("policy {}", p.replace('_', " ")),
        (None, Some((f, v))) => format!("{f} {}", v.py_str()),
        (None, None) => "a move".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, window: Option<i64>) -> WhisperLine {
        WhisperLine {
            text: text.into(),
            schema: Schema::for_protocol("rps-v1"),
            window: window.map(|v| ("round".to_owned(), Value::from(v))),
        }
    }

    #[test]
    fn the_preview_says_what_the_whisper_is_understood_as() {
        assert_eq!(line("", None).preview().0, Reading::NotUnderstood);
        assert_eq!(line("hold on", None).preview().0, Reading::NotUnderstood);
        let (r, t) = line("always rock", None).preview();
        assert_eq!(r, Reading::Strategy, "{t}");
        let (r, t) = line("paper this round", Some(1)).preview();
        assert_eq!(r, Reading::Decision, "{t}");
        assert!(t.contains("round 2"), "{t}");
        let (r, t) = line("paper next round", None).preview();
        assert_eq!(r, Reading::Intent, "{t}");
    }
}
