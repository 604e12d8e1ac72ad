//! The open-job form: target, budget, deadline; checked as you type.

use crate::tui::panes::dialogs::centered;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

/// Longest target the form lets through (the market's default cap).
pub const MAX_TARGET_HEX: usize = 8;

/// The open-job form: target, budget, deadline; checked as you type.
#[derive(Debug, Clone, PartialEq)]
pub struct JobForm {
    /// target (hex digits), budget (GTU), deadline (minutes from now).
    pub fields: [String; 3],
    pub row: usize,
    /// JOB_OPEN is on its way.
    pub posting: bool,
    /// The market's refusal of the last post.
    pub refused: Option<String>,
}

pub(super) const FIELDS: [(&str, &str); 3] = [
    ("target", "hex digits the digest starts with"),
    ("budget", "GTU you pay at most"),
    ("deadline", "minutes from now"),
];

/// What a valid form asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct JobAsk {
    pub target: String,
    pub budget: i64,
    pub minutes: i64,
}

impl Default for JobForm {
    fn default() -> Self {
        JobForm {
            fields: ["0000".into(), "10".into(), "10".into()],
            row: 0,
            posting: false,
            refused: None,
        }
    }
}

impl JobForm {
    /// The job the form asks for, or what is wrong with it (every field).
    pub fn check(&self) -> Result<JobAsk, Vec<String>> {
        let mut bad = Vec::new();
        let t = self.fields[0].trim();
        if t.is_empty()
            || t.len() > MAX_TARGET_HEX
            || !t
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            bad.push(format!(
                "target: 1 to {MAX_TARGET_HEX} lowercase hex digits (0-9, a-f)"
            ));
        }
        let budget = self.fields[1]
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|b| *b >= 1);
        if budget.is_none() {
            bad.push("budget: a whole number of GTU, at least 1".into());
        }
        let minutes = self.fields[2]
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (2..=10_080).contains(m));
        if minutes.is_none() {
            bad.push("deadline: whole minutes from now, 2 to 10080".into());
        }
        match (budget, minutes) {
            (Some(budget), Some(minutes)) if bad.is_empty() => Ok(JobAsk {
                target: t.to_owned(),
                budget,
                minutes,
            }),
            _ => Err(bad),
        }
    }

    pub(super) fn edit(&mut self, c: Option<char>) {
        let f = &mut self.fields[self.row];
        match c {
            Some(c) if !c.is_control() && f.chars().count() < 16 => f.push(c),
            Some(_) => {}
            None => {
                f.pop();
            }
        }
        self.refused = None;
    }

    pub(super) fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let r = centered(area, 70, 10);
        f.render_widget(Clear, r);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(
                " Open a job (sha256_nonce.v1) ",
                theme.title(),
            ));
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mut lines = Vec::new();
        for (i, (name, what)) in FIELDS.iter().enumerate() {
            let focused = i == self.row;
            let mut spans = vec![
                Span::styled(
                    format!("{}{name:<10}", if focused { "▸ " } else { "  " }),
                    theme.text(),
                ),
                Span::styled(
                    self.fields[i].clone(),
                    if focused {
                        theme.accent()
                    } else {
                        theme.text()
                    },
                ),
            ];
            if focused {
                spans.push(Span::styled(" ", theme.cursor()));
            }
            spans.push(Span::styled(format!("  {what}"), theme.muted()));
            lines.push(Line::from(spans));
        }
        lines.push(Line::from(""));
        let status = if self.posting {
            Line::from(Span::styled("posting JOB_OPEN…", theme.accent()))
        } else if let Some(r) = &self.refused {
            Line::from(Span::styled(format!("refused: {r}"), theme.fg(Slot::Error)))
        } else {
            match self.check() {
                Ok(a) => Line::from(Span::styled(
                    format!(
                        "ready: {} GTU for a digest starting {} within {} min",
                        a.budget, a.target, a.minutes
                    ),
                    theme.fg(Slot::Ok),
                )),
                Err(e) => Line::from(Span::styled(e.join("; "), theme.fg(Slot::Error))),
            }
        };
        lines.push(status);
        lines.push(Line::from(Span::styled(
            "Tab field · type to edit · Enter post JOB_OPEN · Esc cancel",
            theme.muted(),
        )));
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_checks_every_field() {
        let mut f = JobForm::default();
        assert!(f.check().is_ok());
        f.fields = ["00zz".into(), "0".into(), "1".into()];
        let e = f.check().unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        f.fields = ["0".repeat(MAX_TARGET_HEX + 1), "5".into(), "10081".into()];
        assert_eq!(f.check().unwrap_err().len(), 2);
        f.fields = ["0a".into(), " 7 ".into(), "2".into()];
        assert_eq!(
            f.check(),
            Ok(JobAsk {
                target: "0a".into(),
                budget: 7,
                minutes: 2
            })
        );
        // Typing never panics, whatever it is.
        for c in ['é', '\u{7}', '界', 'x'] {
            f.edit(Some(c));
        }
        for _ in 0..40 {
            f.edit(None);
        }
        assert!(f.fields[0].is_empty());
    }
}
