//! The host form's protocol picker: the community's protocol directory,
//! newest first, filtered by what is typed (Enter searches a changed
//! query, else takes the selected protocol), more pages on demand. Each
//! row says whether this console has the protocol; taking one it does not
//! have fetches and installs it. Errors stay in the picker.

use crate::tui::report::social::{Found, Pick};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Picker {
    /// The query as typed.
    pub query: String,
    /// The query the shown results are for (None: not searched yet).
    pub searched: Option<String>,
    pub picks: Vec<Pick>,
    pub selected: usize,
    /// Where the directory's next pages start (None: its end).
    pub next_cursor: Option<String>,
    /// A search is under way.
    pub searching: bool,
    /// The protocol being fetched and installed.
    pub installing: Option<String>,
    pub error: Option<String>,
}

impl Picker {
    /// What Enter does now: search (the query changed) or take the row.
    pub fn wants_search(&self) -> bool {
        self.searched.as_deref() != Some(self.query.trim())
    }

    pub fn selected(&self) -> Option<&Pick> {
        self.picks.get(self.selected)
    }

    /// A search's answer (`more`: appended to what is shown).
    pub fn found(&mut self, query: String, more: bool, found: Result<Found, String>) {
        self.searching = false;
        match found {
            Ok(f) => {
                if more {
                    self.picks.extend(f.picks);
                } else {
                    self.picks = f.picks;
                    self.selected = 0;
                }
                self.next_cursor = f.next_cursor;
                self.searched = Some(query);
                self.error = None;
            }
            Err(e) => self.error = Some(format!("the directory cannot be read: {e}")),
        }
    }

    pub fn up(&mut self, n: usize) {
        self.selected = self.selected.saturating_sub(n);
    }

    pub fn down(&mut self, n: usize) {
        self.selected = (self.selected + n).min(self.picks.len().saturating_sub(1));
    }

    /// `hint`: the keys, from the keymap.
    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, hint: &str) {
        let r = super::dialogs::centered(area, 76, area.height.saturating_sub(2).max(8));
        f.render_widget(Clear, r);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(
                " Find a protocol on this community ",
                theme.title(),
            ));
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mut head = vec![Line::from(vec![
            Span::styled("search › ", theme.accent()),
            Span::styled(self.query.clone(), theme.text()),
            Span::styled(" ", theme.cursor()),
        ])];
        let (status, style) = match (&self.installing, self.searching, &self.error) {
            (Some(id), _, _) => (
                format!("fetching {}… (its hash is checked)", head_of(id)),
                theme.muted(),
            ),
            (None, true, _) => ("reading the directory…".to_owned(), theme.muted()),
            (None, false, Some(e)) => (e.clone(), theme.fg(Slot::Error)),
            (None, false, None) => (
                match &self.searched {
                    None => "Enter lists the directory (newest first), filtered by the words typed"
                        .to_owned(),
                    Some(_) => format!(
                        "{} found{}",
                        self.picks.len(),
                        if self.next_cursor.is_some() {
                            " · more pages"
                        } else {
                            ""
                        }
                    ),
                },
                theme.muted(),
            ),
        };
        // A long refusal wraps: its rows are counted so the hint stays.
        let width = usize::from(inner.width.max(1));
        // (A row more when it wraps: words do not fill rows to the edge.)
        let rows = status.chars().count().div_ceil(width);
        let status_rows = (if rows > 1 { rows + 1 } else { rows }).clamp(1, 5) as u16;
        head.push(Line::from(Span::styled(status, style)));
        let head_h = (2 + status_rows).min(inner.height);
        f.render_widget(
            Paragraph::new(head).wrap(Wrap { trim: true }),
            Rect {
                height: head_h.saturating_sub(1),
                ..inner
            },
        );
        if head_h > 0 {
            f.render_widget(
                Paragraph::new(Span::styled(hint.to_owned(), theme.muted())),
                Rect {
                    y: inner.y + head_h - 1,
                    height: 1,
                    ..inner
                },
            );
        }
        let list = Rect {
            y: inner.y + head_h,
            height: inner.height.saturating_sub(head_h),
            ..inner
        };
        let w = usize::from(list.width.saturating_sub(2));
        let items: Vec<ListItem> = self
            .picks
            .iter()
            .map(|p| {
                let (mark, style) = match &p.local {
                    Some(_) => ("✓", theme.fg(Slot::Ok)),
                    None => ("↓", theme.fg(Slot::Warn)),
                };
                let name = if p.listed.name.is_empty() {
                    head_of(&p.listed.protocol_id)
                } else {
                    p.listed.name.clone()
                };
                let text = format!(
                    "{name} · {} · {}",
                    p.local.clone().unwrap_or_else(|| "not here".into()),
                    p.listed.description
                );
                Line::from(vec![
                    Span::styled(format!("{mark} "), style),
                    Span::styled(
                        text.chars().take(w.saturating_sub(2)).collect::<String>(),
                        theme.text(),
                    ),
                ])
                .into()
            })
            .collect();
        if items.is_empty() {
            return;
        }
        let mut st =
            ListState::default().with_selected(Some(self.selected.min(self.picks.len() - 1)));
        f.render_stateful_widget(
            List::new(items)
                .highlight_style(theme.selected())
                .highlight_symbol("›"),
            list,
            &mut st,
        );
    }
}

fn head_of(id: &str) -> String {
    id.chars().take(12).collect()
}
