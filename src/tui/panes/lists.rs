//! The two lists on the left: open invitations of the community and the
//! sessions in the data dir. Both filter by a search query.

use crate::tui::command::Command;
use crate::tui::report::rows::{self, Invitation, SessionRow};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState};

/// A list's selection and search query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cursor {
    pub selected: usize,
    pub query: String,
}

impl Cursor {
    pub fn up(&mut self, n: usize) {
        self.selected = self.selected.saturating_sub(n);
    }
    pub fn down(&mut self, n: usize, len: usize) {
        self.selected = (self.selected + n).min(len.saturating_sub(1));
    }
    pub fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    /// Moves for a navigation command over `len` rows (`page` rows a
    /// page); false when the command is not a move.
    pub fn navigate(&mut self, c: Command, len: usize, page: usize) -> bool {
        match c {
            Command::Up => self.up(1),
            Command::Down => self.down(1, len),
            Command::PageUp => self.up(page),
            Command::PageDown => self.down(page, len),
            Command::Top => self.selected = 0,
            Command::Bottom => self.down(len, len),
            _ => return false,
        }
        true
    }
}

fn matches(q: &str, hay: &[&str]) -> bool {
    q.is_empty() || {
        let q = q.to_lowercase();
        hay.iter().any(|h| h.to_lowercase().contains(&q))
    }
}

/// Invitations the query lets through; its words also match tags (`rps`,
/// or `#rps` for a tag only).
pub fn filter_invitations<'a>(all: &'a [Invitation], q: &str) -> Vec<&'a Invitation> {
    all.iter()
        .filter(|i| {
            let (tag_words, words): (Vec<&str>, Vec<&str>) =
                q.split_whitespace().partition(|w| w.starts_with('#'));
            let tags_ok = tag_words.iter().all(|t| {
                let t = t.trim_start_matches('#').to_lowercase();
                t.is_empty() || i.tags.iter().any(|have| have.to_lowercase() == t)
            });
            let tags = i.tags.join(" ");
            tags_ok
                && matches(
                    &words.join(" "),
                    &[
                        &i.alias,
                        &i.protocol_name,
                        &i.nickname,
                        &i.message,
                        &i.host_control_mode,
                        &tags,
                    ],
                )
        })
        .collect()
}

/// Sessions the query lets through.
pub fn filter_sessions<'a>(all: &'a [SessionRow], q: &str) -> Vec<&'a SessionRow> {
    all.iter()
        .filter(|s| {
            matches(
                q,
                &[
                    &s.protocol,
                    &s.status,
                    &s.role,
                    &s.control_mode,
                    &s.post_id,
                    &s.dir.to_string_lossy(),
                ],
            )
        })
        .collect()
}

fn block<'a>(title: String, theme: &Theme, focused: bool, q: &str) -> Block<'a> {
    let mut b = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title, theme.title()));
    if !q.is_empty() {
        b = b.title_bottom(Line::from(Span::styled(format!(" /{q} "), theme.accent())));
    }
    b
}

/// How a pane is painted: where, with what, focused or not.
pub struct Paint<'a> {
    pub area: Rect,
    pub theme: &'a Theme,
    pub focused: bool,
    /// Epoch seconds, for ages.
    pub now: f64,
}

/// The invitations list: rows, selection, whose they are, and what to say
/// when it is empty (e.g. the community's status).
pub fn draw_invitations(
    f: &mut Frame,
    p: &Paint<'_>,
    all: &[Invitation],
    cur: &Cursor,
    me: &str,
    status: &str,
) {
    let (area, theme, focused, now) = (p.area, p.theme, p.focused, p.now);
    let shown = filter_invitations(all, &cur.query);
    let title = format!(" Invitations ({}) ", shown.len());
    let b = block(title, theme, focused, &cur.query);
    if shown.is_empty() {
        let inner = b.inner(area);
        f.render_widget(b, area);
        let msg = if status.is_empty() {
            "No open invitations. Press n to host one."
        } else {
            status
        };
        f.render_widget(
            ratatui::widgets::Paragraph::new(Span::styled(msg.to_owned(), theme.muted()))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    }
    // Room for the highlight mark and the star.
    let w = area.width.saturating_sub(4) as usize;
    let (aw, nw) = if w >= 40 {
        (16, 12)
    } else {
        (w.saturating_sub(15).max(6), 8)
    };
    let items: Vec<ListItem> = shown
        .iter()
        .map(|i| {
            let mine = !me.is_empty() && i.public_key == me;
            let head = format!(
                "{}{:<aw$} {:<nw$} {:>4}",
                if mine { "★" } else { " " },
                i.alias.chars().take(aw).collect::<String>(),
                i.nickname.chars().take(nw).collect::<String>(),
                age(now - i.created_at)
            );
            let mut lines = vec![Line::from(Span::styled(head, theme.text()))];
            if let Some(why) = &i.unjoinable {
                let detail = format!("  cannot join: {why}");
                lines.push(Line::from(Span::styled(
                    detail.chars().take(w.max(20)).collect::<String>(),
                    theme.fg(Slot::Error),
                )));
            } else if !i.installed {
                let detail = "  protocol not installed here: Enter fetches it".to_owned();
                lines.push(Line::from(Span::styled(
                    detail.chars().take(w.max(20)).collect::<String>(),
                    theme.fg(Slot::Warn),
                )));
            } else if w >= 40 {
                let host = host_line(i, false)
                    .map(|h| format!("{h} · "))
                    .unwrap_or_default();
                let detail = format!("  {host}{} · {}", i.host_control_mode, i.options_line());
                lines.push(Line::from(Span::styled(
                    detail.chars().take(w).collect::<String>(),
                    theme.muted(),
                )));
            } else if let Some(host) = host_line(i, true) {
                lines.push(Line::from(Span::styled(
                    format!("  {host}").chars().take(w).collect::<String>(),
                    theme.muted(),
                )));
            }
            ListItem::new(lines)
        })
        .collect();
    let mut st = ListState::default().with_selected(Some(cur.selected.min(shown.len() - 1)));
    f.render_stateful_widget(
        List::new(items)
            .block(b)
            .highlight_style(theme.selected())
            .highlight_symbol("›"),
        area,
        &mut st,
    );
}

/// What the list says of a host: its rating, then its ELO and karma
/// (`-` where the community has none), then its games; `narrow` keeps the
/// rating and the two figures only, once they are known. None when there
/// is nothing to say.
pub fn host_line(i: &Invitation, narrow: bool) -> Option<String> {
    if narrow && i.reputation.is_none() {
        return None;
    }
    let rating = i.host.as_ref().map(|h| match h.rating_average {
        Some(a) if h.ratings > 0 && narrow => format!("★{a:.1}"),
        Some(a) if h.ratings > 0 => format!("★{a:.1} ({})", h.ratings),
        _ if narrow => String::new(),
        _ => "unrated".to_owned(),
    });
    let rep = i.reputation.map(|r| match (narrow, r.elo, r.karma) {
        (true, e, k) => {
            let f = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |n| n.to_string());
            format!("ELO {}  karma {}", f(e), f(k))
        }
        (false, _, _) => r.line(),
    });
    let games = i
        .host
        .as_ref()
        .filter(|_| !narrow)
        .map(|h| match h.sessions {
            1 => "1 game".to_owned(),
            n => format!("{n} games"),
        });
    let parts: Vec<String> = [rating, rep, games]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(parts.join(if narrow { "  " } else { " · " }))
}

/// The sessions list; `attached` is marked.
pub fn draw_sessions(
    f: &mut Frame,
    p: &Paint<'_>,
    all: &[SessionRow],
    cur: &Cursor,
    attached: Option<&std::path::Path>,
) {
    let (area, theme, focused, now) = (p.area, p.theme, p.focused, p.now);
    let shown = filter_sessions(all, &cur.query);
    let title = format!(" Sessions ({}) ", shown.len());
    let b = block(title, theme, focused, &cur.query);
    if shown.is_empty() {
        let inner = b.inner(area);
        f.render_widget(b, area);
        f.render_widget(
            ratatui::widgets::Paragraph::new(Span::styled(
                "No sessions in the data dir yet.",
                theme.muted(),
            )),
            inner,
        );
        return;
    }
    let w = area.width.saturating_sub(4) as usize;
    let narrow = w < 40;
    let pw = if narrow {
        w.saturating_sub(15).max(6)
    } else {
        20
    };
    let items: Vec<ListItem> = shown
        .iter()
        .map(|s| {
            let mark = if attached == Some(s.dir.as_path()) {
                "▶"
            } else {
                " "
            };
            // A waiting host says so, with how long it has waited.
            let (status, since, status_style) = match s.waiting_since {
                Some(t) => ("waiting", t, theme.fg(Slot::Warn)),
                None => (
                    s.status.as_str(),
                    s.started_at,
                    match s.status.as_str() {
                        "running" | "starting" => theme.fg(Slot::Ok),
                        "closed" | "replay" => theme.muted(),
                        _ => theme.fg(Slot::Warn),
                    },
                ),
            };
            let proto: String = s.protocol.chars().take(pw).collect();
            Line::from(vec![
                Span::styled(format!("{mark}{proto:<pw$} "), theme.text()),
                Span::styled(
                    if narrow {
                        let tag = match s.role.as_str() {
                            "host" => "H",
                            rows::BUNDLE_ROLE => "B",
                            _ => "G",
                        };
                        format!("{tag} ")
                    } else {
                        format!("{:<5} ", s.role.chars().take(6).collect::<String>())
                    },
                    theme.fg(match s.role.as_str() {
                        "host" => Slot::Host,
                        rows::BUNDLE_ROLE => Slot::Accent,
                        _ => Slot::Guest,
                    }),
                ),
                Span::styled(
                    format!("{:<7}", status.chars().take(7).collect::<String>()),
                    status_style,
                ),
                Span::styled(format!("{:>4}", age(now - since)), theme.muted()),
            ])
            .into()
        })
        .collect();
    let mut st = ListState::default().with_selected(Some(cur.selected.min(shown.len() - 1)));
    f.render_stateful_widget(
        List::new(items)
            .block(b)
            .highlight_style(theme.selected())
            .highlight_symbol("›"),
        area,
        &mut st,
    );
}

/// "12s", "4m", "3h", "2d".
pub fn age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_naturally() {
        assert_eq!(age(5.0), "5s");
        assert_eq!(age(125.0), "2m");
        assert_eq!(age(7300.0), "2h");
        assert_eq!(age(-3.0), "0s");
    }
}
