//! Drawing the market screen from `&MarketView`: jobs, the selected
//! transaction's header, timeline and offers. Nothing here changes state.

use super::model::{short, time_left};
use super::{Conn, MarketView, Pane};
use crate::market::vocab::{OfferStatus, State};
use crate::tui::command::Command;
use crate::tui::keymap::Context;
use crate::tui::note::Note;
use crate::tui::screen::Paint;
use crate::tui::theme::{Slot, Theme};
use crate::utc::format_rfc3339_utc;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};

impl MarketView {
    /// The jobs on the left; the header, the timeline and the offers on
    /// the right; the form over them.
    pub(super) fn draw_body(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let left_w = if area.width >= 120 {
            62
        } else {
            (area.width * 9 / 20).max(24)
        };
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(left_w.min(area.width / 2)),
                Constraint::Min(20),
            ])
            .split(area);
        self.draw_jobs(f, cols[0], p);
        let offers_h = self.tx.as_ref().map_or(1, |t| t.offers.len().clamp(1, 6)) as u16 + 2;
        // The header grows with a long note (a refusal with its fields).
        let inner_w = usize::from(cols[1].width.saturating_sub(2)).max(1);
        let note_lines = match (&self.stale, &self.note) {
            (Some(e), _) => wrapped_lines(&format!("cannot read the market: {e}"), inner_w),
            (None, Some(Note { text: t, .. })) => wrapped_lines(t, inner_w),
            (None, None) => 1,
        }
        .clamp(1, 4);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(3 + note_lines as u16),
                Constraint::Min(5),
                Constraint::Length(offers_h),
            ])
            .split(cols[1]);
        self.draw_header(f, right[0], p);
        self.draw_timeline(f, right[1], p);
        self.draw_offers(f, right[2], p);
        if let Some(form) = &self.form {
            form.draw(f, area, p.theme);
        }
    }

    fn draw_jobs(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let focused = self.focus == Pane::Jobs && self.form.is_none();
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(
                format!(" Jobs ({}) ", self.jobs.len()),
                theme.title(),
            ));
        if self.jobs.is_empty() {
            let (style, msg) = match &self.conn {
                Conn::WaitingForCommunity => {
                    (theme.muted(), "Waiting for the community…".to_owned())
                }
                Conn::Connecting => (theme.muted(), "Connecting to the market…".to_owned()),
                Conn::Failed(e) => (theme.fg(Slot::Error), format!("Market unavailable: {e}")),
                Conn::Ready => {
                    let k = p
                        .keymap
                        .key_for(Context::Market, Command::OpenJob)
                        .unwrap_or_else(|| "open_job".into());
                    (
                        theme.muted(),
                        format!("No jobs on this market yet. Press {k} to open one."),
                    )
                }
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg, style))
                    .wrap(Wrap { trim: true })
                    .block(b),
                area,
            );
            return;
        }
        let w = area.width.saturating_sub(2) as usize;
        let one_line = w >= 54;
        let idw = w.saturating_sub(2 + 38).clamp(8, 24);
        let sel = self.selected_index();
        let items: Vec<ListItem> = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let mark = if Some(i) == sel { "› " } else { "  " };
                let left = time_left(j, self.at_ms);
                let role = self.role(j);
                let state_style = state_style(theme, j.state);
                if one_line {
                    ListItem::new(Line::from(vec![
                        Span::styled(format!("{mark}{:<idw$} ", short(&j.id, idw)), theme.text()),
                        Span::styled(format!("{:<11}", j.state), state_style),
                        Span::styled(
                            format!(" {:>5} GTU {left:>7} {role}", j.budget),
                            theme.text(),
                        ),
                    ]))
                } else {
                    ListItem::new(vec![
                        Line::from(vec![
                            Span::styled(
                                format!("{mark}{} ", short(&j.id, w.saturating_sub(14))),
                                theme.text(),
                            ),
                            Span::styled(j.state.as_str(), state_style),
                        ]),
                        Line::from(Span::styled(
                            short(&format!("  {} GTU · {left} · {role}", j.budget), w),
                            theme.muted(),
                        )),
                    ])
                }
            })
            .collect();
        let mut st = ListState::default().with_selected(sel);
        f.render_stateful_widget(
            List::new(items).block(b).highlight_style(if focused {
                theme.selected()
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            }),
            area,
            &mut st,
        );
    }

    fn draw_header(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(" Market ", theme.title()));
        let who = match (&self.conn, self.principal.is_empty()) {
            (Conn::Failed(e), true) => Line::from(Span::styled(
                format!("unavailable: {e}"),
                theme.fg(Slot::Error),
            )),
            (_, true) => Line::from(Span::styled("not connected yet", theme.muted())),
            (_, false) => Line::from(vec![
                Span::styled("you ", theme.muted()),
                Span::styled(self.principal.clone(), theme.accent()),
                Span::styled(" · balance ", theme.muted()),
                Span::styled(
                    self.balance
                        .map_or_else(|| "…".to_owned(), |b| format!("{b} GTU")),
                    theme.text(),
                ),
            ]),
        };
        let note = match (&self.stale, &self.note) {
            (Some(e), _) => Line::from(Span::styled(
                format!("cannot read the market: {e}"),
                theme.fg(Slot::Error),
            )),
            (None, note) => match note {
                Some(Note { ok: true, text: t }) => {
                    Line::from(Span::styled(t.clone(), theme.fg(Slot::Ok)))
                }
                Some(Note { ok: false, text: t }) => {
                    Line::from(Span::styled(t.clone(), theme.fg(Slot::Error)))
                }
                None => Line::from(""),
            },
        };
        f.render_widget(
            Paragraph::new(vec![who, note])
                .wrap(Wrap { trim: true })
                .block(b),
            area,
        );
    }

    fn draw_timeline(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let title = match &self.tx {
            Some(t) => format!(" {} · {} ", t.job.id, t.job.state),
            None => " Transaction ".to_owned(),
        };
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(title, theme.title()));
        let inner = b.inner(area);
        f.render_widget(b, area);
        let w = inner.width as usize;
        let Some(t) = &self.tx else {
            let msg = match &self.selected {
                Some(id) => format!("reading {id}…"),
                None => "No transaction selected.".to_owned(),
            };
            f.render_widget(Paragraph::new(Span::styled(msg, theme.muted())), inner);
            return;
        };
        let mut head = vec![Line::from(Span::styled(
            short(
                &format!(
                    "{} GTU · target {} · buyer {} · {}",
                    t.job.budget,
                    t.job.target,
                    if t.job.buyer == self.principal {
                        "you"
                    } else {
                        &t.job.buyer
                    },
                    match time_left(&t.job, self.at_ms).as_str() {
                        "ended" => "ended".to_owned(),
                        l => format!("{l} left"),
                    }
                ),
                w,
            ),
            theme.muted(),
        ))];
        // The hashes, packed into lines.
        let mut line: Vec<Span> = Vec::new();
        let mut used = 0;
        let hw = if w >= 100 { 16 } else { 10 };
        for (label, h) in &t.hashes {
            let len = label.chars().count() + 1 + hw + 2;
            if used > 0 && used + len > w {
                head.push(Line::from(std::mem::take(&mut line)));
                used = 0;
            }
            line.push(Span::styled(format!("{label} "), theme.muted()));
            line.push(Span::styled(format!("{}  ", short(h, hw)), theme.accent()));
            used += len;
        }
        if !line.is_empty() {
            head.push(Line::from(line));
        }
        let ew = w.saturating_sub(8 + 1 + 13 + 1 + 11 + 1).clamp(6, 16);
        let events: Vec<Line> = t
            .events
            .iter()
            .map(|e| {
                let at = format_rfc3339_utc(e.at_ms);
                Line::from(vec![
                    Span::styled(format!("{} ", at.get(11..19).unwrap_or("")), theme.muted()),
                    Span::styled(format!("{:<13} ", e.kind), theme.text()),
                    Span::styled(
                        format!("{:<11} ", e.state_after),
                        state_style(theme, e.state_after),
                    ),
                    Span::styled(short(&e.hash, ew), theme.accent()),
                ])
            })
            .collect();
        // The newest events stay in view when the chain is long.
        let room = (inner.height as usize).saturating_sub(head.len());
        let skip = events.len().saturating_sub(room);
        let mut lines = head;
        lines.extend(events.into_iter().skip(skip));
        f.render_widget(Paragraph::new(lines), inner);
    }

    fn draw_offers(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let focused = self.focus == Pane::Offers && self.form.is_none();
        let offers = self.tx.as_ref().map(|t| t.offers.as_slice()).unwrap_or(&[]);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(
                format!(" Offers ({}) ", offers.len()),
                theme.title(),
            ));
        if offers.is_empty() {
            let msg = if self.tx.is_some() {
                "No offers yet: providers offer within their price."
            } else {
                ""
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg, theme.muted())).block(b),
                area,
            );
            return;
        }
        let w = area.width.saturating_sub(2) as usize;
        let (hw, pw) = if w >= 70 { (16, 16) } else { (6, 8) };
        let accepted = self
            .tx
            .as_ref()
            .and_then(|t| t.deal.as_ref())
            .map(|d| d.offer_hash.as_str());
        let items: Vec<ListItem> = offers
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let mark = if i == self.offer_sel { "› " } else { "  " };
                let status = if accepted == Some(o.hash.as_str()) && o.status == OfferStatus::Live {
                    "locked"
                } else {
                    o.status.as_str()
                };
                ListItem::new(Line::from(Span::styled(
                    short(
                        &format!(
                            "{mark}{:>5} GTU  {status:<10}  {:<pw$}  {}",
                            o.price,
                            short(&o.provider, pw),
                            short(&o.hash, hw)
                        ),
                        w,
                    ),
                    theme.text(),
                )))
            })
            .collect();
        let mut st = ListState::default().with_selected(Some(self.offer_sel));
        f.render_stateful_widget(
            List::new(items).block(b).highlight_style(if focused {
                theme.selected()
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            }),
            area,
            &mut st,
        );
    }
}

/// Lines `text` takes when word-wrapped to `width` columns.
fn wrapped_lines(text: &str, width: usize) -> usize {
    let (mut lines, mut used) = (1, 0);
    for w in text.split_whitespace() {
        let n = w.chars().count();
        if used > 0 && used + 1 + n > width {
            lines += 1 + (n.saturating_sub(1)) / width.max(1);
            used = n % width.max(1);
        } else {
            used += n + usize::from(used > 0);
        }
    }
    lines
}

fn state_style(theme: &Theme, state: State) -> Style {
    match state {
        State::Settled | State::Verified => theme.fg(Slot::Ok),
        State::Rejected | State::Refunded | State::Closed => theme.fg(Slot::Error),
        State::Funded | State::Delivered | State::DealLocked => theme.fg(Slot::Warn),
        State::JobOpen | State::Offered => theme.accent(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_counts_words_that_do_not_fit() {
        assert_eq!(wrapped_lines("", 10), 1);
        assert_eq!(wrapped_lines("abc def", 7), 1);
        assert_eq!(wrapped_lines("abc defg", 7), 2);
        assert_eq!(wrapped_lines("a bbbbbbbbbbbbbbbbbbbb", 10), 3);
        assert_eq!(wrapped_lines("a b", 0), 2);
    }
}
