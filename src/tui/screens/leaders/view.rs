//! Drawing the leaderboard from `&LeadersView`: one table of a page, this
//! identity's row marked. Nothing here changes state.

use super::LeadersView;
use crate::community::social::Board;
use crate::tui::screen::Paint;
use crate::tui::screens::inbox::short_key;
use crate::tui::theme::Slot;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};

impl LeadersView {
    pub(super) fn draw_body(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let other = match self.board {
            Board::Elo => Board::Karma,
            Board::Karma => Board::Elo,
        };
        let title = format!(
            " {} leaderboard · page {}{} ",
            self.board.label(),
            self.page_no,
            if self.next_cursor.is_some() {
                " (more)"
            } else {
                ""
            }
        );
        let toggle = p
            .keymap
            .key_for(
                crate::tui::keymap::Context::Leaders,
                crate::tui::command::Command::ToggleBoard,
            )
            .unwrap_or_default();
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(!p.covered))
            .title(Span::styled(title, theme.title()))
            .title_bottom(Line::from(Span::styled(
                format!(" {toggle} shows {} ", other.label()),
                theme.muted(),
            )));
        let inner = b.inner(area);
        f.render_widget(b, area);
        let (score, count) = match self.board {
            Board::Elo => ("rating", "games"),
            Board::Karma => ("karma", "ratings"),
        };
        let w = usize::from(inner.width);
        // rank, nickname, key, score, count, level.
        let nw = w
            .saturating_sub(1 + 5 + 1 + 9 + 1 + 7 + 1 + 7 + 1 + 8 + 1)
            .clamp(6, 24);
        let row = |mark: &str, rank: &str, nick: &str, key: &str, s: &str, c: &str, l: &str| {
            format!("{mark}{rank:>5} {nick:<nw$} {key:<9} {s:>7} {c:>7} {l:<8}")
        };
        let mut lines = vec![Line::from(Span::styled(
            row(" ", "rank", "nickname", "key", score, count, "level"),
            theme.muted(),
        ))];
        let mut status = Vec::new();
        if let Some(e) = &self.error {
            status.push(Line::from(Span::styled(
                format!("cannot read the leaderboard: {e}"),
                theme.fg(Slot::Error),
            )));
        }
        if self.loading() {
            status.push(Line::from(Span::styled("reading…", theme.muted())));
        }
        let head_h = (1 + status.len()) as u16;
        lines.extend(status);
        f.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }),
            Rect {
                height: head_h.min(inner.height),
                ..inner
            },
        );
        let list_area = Rect {
            y: inner.y + head_h.min(inner.height),
            height: inner.height.saturating_sub(head_h),
            ..inner
        };
        if self.rows.is_empty() {
            let msg = if !p.offline.is_empty() {
                p.offline
            } else if self.loading() {
                ""
            } else {
                "Nobody on this board yet."
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg.to_owned(), theme.muted())),
                list_area,
            );
            return;
        }
        let items: Vec<ListItem> = self
            .rows
            .iter()
            .map(|r| {
                let mine = !p.me.is_empty() && r.public_key == p.me;
                let nick: String = r.nickname.chars().take(nw).collect();
                let text = row(
                    if mine { "★" } else { " " },
                    &r.rank.to_string(),
                    &nick,
                    &short_key(&r.public_key),
                    &r.score.to_string(),
                    &r.count.to_string(),
                    r.level.as_deref().unwrap_or(""),
                );
                let style = if mine {
                    theme.fg(Slot::Ok)
                } else {
                    theme.text()
                };
                ListItem::new(Line::from(Span::styled(text, style)))
            })
            .collect();
        let mut st =
            ListState::default().with_selected(Some(self.cur.selected.min(self.rows.len() - 1)));
        f.render_stateful_widget(
            List::new(items).highlight_style(theme.selected()),
            list_area,
            &mut st,
        );
    }
}
