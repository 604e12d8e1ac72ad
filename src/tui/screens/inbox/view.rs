//! Drawing the inbox from `&InboxView`: the messages on the left, the one
//! opened on the right, the compose form and the delete question over
//! them. Nothing here changes state.

use super::InboxView;
use super::compose::{Compose, Field};
use crate::tui::command::Command;
use crate::tui::keymap::{Context, Keymap};
use crate::tui::panes::dialogs::{centered, draw_confirm};
use crate::tui::panes::lists::age;
use crate::tui::screen::Paint;
use crate::tui::theme::{Slot, Theme};
use crate::utc::parse_iso_seconds;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

/// The key bound to `c` in `ctx` (or [global]), for the panes' hints.
fn key(keymap: &Keymap, ctx: Context, c: Command) -> String {
    keymap.key_for(ctx, c).unwrap_or_else(|| "?".into())
}

fn block<'a>(title: String, theme: &Theme, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title, theme.title()))
}

/// How long ago an ISO time was ("?" when it does not parse).
fn ago(iso: &str, now: f64) -> String {
    parse_iso_seconds(iso).map_or_else(|| "?".into(), |t| age(now - t))
}

impl InboxView {
    pub(super) fn draw_body(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let now = crate::session::files::epoch_now();
        let left = if area.width >= 100 {
            48
        } else {
            (area.width / 2).max(28)
        };
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(left.min(area.width)),
                Constraint::Min(10),
            ])
            .split(area);
        self.draw_list(f, cols[0], p, now);
        self.draw_message(f, cols[1], p, now);
        if let Some(c) = &self.compose {
            let hint = format!(
                "{} field · {} seal and send · {} cancel",
                key(p.keymap, Context::Text, Command::FocusNext),
                key(p.keymap, Context::Text, Command::Submit),
                key(p.keymap, Context::Text, Command::Back)
            );
            draw_compose(c, f, area, p.theme, &hint);
        } else if let Some(id) = self.confirm_delete {
            let from = self
                .entries
                .iter()
                .find(|e| e.id == id)
                .map(|e| self.sender(&e.sender_public_key))
                .unwrap_or_default();
            draw_confirm(
                f,
                area,
                p.theme,
                "Delete a message",
                &[format!(
                    "Delete message {id} from {from}? The community forgets it."
                )],
            );
        }
    }

    fn draw_list(&self, f: &mut Frame, area: Rect, p: &Paint<'_>, now: f64) {
        let theme = p.theme;
        let title = match self.unread {
            Some(n) => format!(" Inbox ({n} unread · {}) ", self.total),
            None => " Inbox ".to_owned(),
        };
        let b = block(title, theme, !p.covered);
        if self.entries.is_empty() {
            let inner = b.inner(area);
            f.render_widget(b, area);
            let msg = if !p.offline.is_empty() {
                p.offline.to_owned()
            } else if self.unread.is_none() {
                "reading the inbox…".to_owned()
            } else {
                format!(
                    "No messages. {} writes to an agent (its 64-hex key).",
                    key(p.keymap, Context::Inbox, Command::NewMessage)
                )
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg, theme.muted())).wrap(Wrap { trim: true }),
                inner,
            );
            return;
        }
        let w = usize::from(area.width.saturating_sub(4));
        // mark, sender, size, age.
        let sw = w.saturating_sub(1 + 1 + 6 + 1 + 4).clamp(6, 24);
        let items: Vec<ListItem> = self
            .entries
            .iter()
            .map(|e| {
                let sender: String = self.sender(&e.sender_public_key).chars().take(sw).collect();
                let style = if e.read { theme.muted() } else { theme.text() };
                Line::from(vec![
                    Span::styled(if e.read { " " } else { "●" }, theme.accent()),
                    Span::styled(format!("{sender:<sw$} "), style),
                    Span::styled(format!("{:>5}B ", e.size), theme.muted()),
                    Span::styled(format!("{:>4}", ago(&e.created_at, now)), theme.muted()),
                ])
                .into()
            })
            .collect();
        let mut st =
            ListState::default().with_selected(Some(self.cur.selected.min(self.entries.len() - 1)));
        f.render_stateful_widget(
            List::new(items)
                .block(b)
                .highlight_style(theme.selected())
                .highlight_symbol("›"),
            area,
            &mut st,
        );
    }

    fn draw_message(&self, f: &mut Frame, area: Rect, p: &Paint<'_>, now: f64) {
        let theme = p.theme;
        let title = match &self.open {
            Some(o) => format!(" From {} ", self.sender(&o.entry.sender_public_key)),
            None => " Message ".to_owned(),
        };
        let b = block(title, theme, false);
        let inner = b.inner(area);
        f.render_widget(b, area);
        let mut lines = Vec::new();
        if let Some(e) = &self.poll_error {
            lines.push(Line::from(Span::styled(
                format!("cannot read the inbox: {e}"),
                theme.fg(Slot::Error),
            )));
        }
        if let Some(n) = &self.note {
            lines.push(Line::from(Span::styled(
                n.text.clone(),
                theme.fg(if n.ok { Slot::Ok } else { Slot::Error }),
            )));
        }
        match (&self.open, self.reading) {
            (_, Some(id)) => lines.push(Line::from(Span::styled(
                format!("opening message {id}…"),
                theme.muted(),
            ))),
            (Some(o), None) => {
                let e = &o.entry;
                lines.push(Line::from(vec![
                    Span::styled("from ", theme.muted()),
                    Span::styled(self.sender(&e.sender_public_key), theme.accent()),
                    Span::styled(
                        format!(
                            " · {} ago · {} bytes sealed · message {}",
                            ago(&e.created_at, now),
                            e.size,
                            e.id
                        ),
                        theme.muted(),
                    ),
                ]));
                lines.push(Line::from(Span::styled(
                    e.sender_public_key.clone(),
                    theme.muted(),
                )));
                lines.push(Line::from(""));
                for l in o.text.lines() {
                    lines.push(Line::from(Span::styled(l.to_owned(), theme.text())));
                }
            }
            (None, None) => {
                let k = |c| key(p.keymap, Context::Inbox, c);
                lines.push(Line::from(Span::styled(
                    format!(
                        "{} opens the selected message (it becomes read) · {} replies · {} writes · {} deletes",
                        k(Command::Activate),
                        k(Command::Reply),
                        k(Command::NewMessage),
                        k(Command::DeleteMessage)
                    ),
                    theme.muted(),
                )))
            }
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

/// The compose form over the screen.
fn draw_compose(c: &Compose, f: &mut Frame, area: Rect, theme: &Theme, hint: &str) {
    let r = centered(area, 74, 10);
    f.render_widget(Clear, r);
    let title = if c.label.is_empty() || c.label == c.to {
        " Write a sealed message ".to_owned()
    } else {
        format!(" Write a sealed message to {} ", c.label)
    };
    let b = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(true))
        .title(Span::styled(title, theme.title()));
    let inner = b.inner(r);
    f.render_widget(b, r);
    let mark = |fld: Field| if c.field == fld { "▸ " } else { "  " };
    let cursor = |fld: Field| {
        if c.field == fld {
            Span::styled(" ", theme.cursor())
        } else {
            Span::raw("")
        }
    };
    let (n, max) = c.count();
    let to = vec![
        Span::styled(format!("{}to   ", mark(Field::To)), theme.muted()),
        Span::styled(c.to.clone(), theme.accent()),
        cursor(Field::To),
    ];
    let lines = vec![
        Line::from(to),
        Line::from(vec![
            Span::styled(format!("{}text ", mark(Field::Text)), theme.muted()),
            Span::styled(c.text.clone(), theme.text()),
            cursor(Field::Text),
        ]),
        Line::from(Span::styled(
            format!("{n}/{max} characters"),
            theme.fg(if n > max { Slot::Error } else { Slot::Muted }),
        )),
        match (&c.error, c.sending) {
            (_, true) => Line::from(Span::styled("sealing and sending…", theme.muted())),
            (Some(e), false) => Line::from(Span::styled(e.clone(), theme.fg(Slot::Error))),
            (None, false) => Line::from(""),
        },
        Line::from(Span::styled(hint.to_owned(), theme.muted())),
    ];
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
