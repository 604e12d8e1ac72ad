//! The room pane: a room's header with the topic (a meeting's title), the
//! members with their seats, who leads and who is here, the message stream
//! (the view's messages and system lines, with notices from events.jsonl),
//! a meeting's agenda, speaking queue, vote and action items, and the
//! compose line, drawn from the typed [`RoomModel`] of `session::room`.

use crate::session::room::{Meeting, Member, Message, Notice, RoomKind, RoomModel, cut, short_key};
use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::collections::BTreeMap;

/// Everything the room pane draws from.
pub struct RoomPaint<'a> {
    pub model: &'a Result<RoomModel, String>,
    pub notices: &'a [Notice],
    pub links: &'a BTreeMap<String, bool>,
    /// Known nicknames by public key.
    pub nicks: &'a BTreeMap<String, String>,
    /// This identity's key (when the view does not say).
    pub me: &'a str,
    pub title: &'a str,
    /// Entries of the stream hidden below the bottom (0: following).
    pub scroll: usize,
    pub input: &'a str,
    pub note: Option<&'a Note>,
    pub stream_focused: bool,
    pub compose_focused: bool,
}

/// One entry of the stream, in order.
enum Entry<'a> {
    Message(&'a Message),
    Notice(&'a Notice),
}

/// The stream: the view's messages with the notices where they came.
fn entries<'a>(messages: &'a [Message], notices: &'a [Notice]) -> Vec<Entry<'a>> {
    let mut out = Vec::with_capacity(messages.len() + notices.len());
    let mut n = notices.iter().peekable();
    for m in messages {
        if let Some(id) = m.id {
            while let Some(x) = n.next_if(|x| x.after.is_none_or(|a| a < id)) {
                out.push(Entry::Notice(x));
            }
        }
        out.push(Entry::Message(m));
    }
    out.extend(n.map(Entry::Notice));
    out
}

/// How many entries the stream has (scrolling is counted in entries).
pub fn stream_len(model: &Result<RoomModel, String>, notices: &[Notice]) -> usize {
    model.as_ref().map_or(0, |m| m.messages.len()) + notices.len()
}

impl RoomPaint<'_> {
    fn you(&self) -> &str {
        match self.model {
            Ok(m) if !m.you.is_empty() => &m.you,
            _ => self.me,
        }
    }

    /// What the panes call a member: their nickname, else a short key.
    pub fn name(&self, pk: &str) -> String {
        if pk.is_empty() {
            return "?".into();
        }
        if pk == self.you() {
            return "you".into();
        }
        match self.nicks.get(pk) {
            Some(n) if !n.is_empty() => n.clone(),
            _ => short_key(pk),
        }
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let compose_h = 3.min(area.height.saturating_sub(3));
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(3.min(area.height)),
                Constraint::Min(3),
                Constraint::Length(compose_h),
            ])
            .split(area);
        self.draw_header(f, parts[0], theme);
        match self.model {
            Err(why) => {
                let block = pane(" Room ", theme, false);
                let inner = block.inner(parts[1]);
                f.render_widget(block, parts[1]);
                f.render_widget(
                    Paragraph::new(vec![
                        Line::from(Span::styled(
                            format!("snapshot.json is unreadable: {why}"),
                            theme.fg(Slot::Error),
                        )),
                        Line::from(Span::styled(
                            "the room is shown again with its next write",
                            theme.muted(),
                        )),
                    ])
                    .wrap(ratatui::widgets::Wrap { trim: true }),
                    inner,
                );
            }
            Ok(m) => self.draw_body(f, parts[1], theme, m),
        }
        self.draw_compose(f, parts[2], theme);
    }

    fn draw_header(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let (name, label, topic, facts) = match self.model {
            Ok(m) => {
                // The most telling first: a narrow pane cuts the rest.
                let mut facts = Vec::new();
                let state = if m.closed {
                    match m.outcome.as_deref() {
                        Some("closed") | None if m.kind != RoomKind::Meeting => "closed".into(),
                        Some("ended") | None => "ended".into(),
                        Some(o) => format!("closed: {o}"),
                    }
                } else if !m.started {
                    match m.status.as_str() {
                        "" => "starting".into(),
                        s => s.to_owned(),
                    }
                } else {
                    match m.status.as_str() {
                        "" | "running" => "active".into(),
                        s => s.to_owned(),
                    }
                };
                facts.push(state);
                match m.you_seat {
                    Some(seat) => facts.push(format!("you: seat {seat}")),
                    None if !m.role.is_empty() => facts.push(format!("you: {}", m.role)),
                    None => {}
                }
                if let Some(e) = m.epoch {
                    facts.push(format!("epoch {e}"));
                }
                if let Some(q) = m.seq {
                    facts.push(format!("seq {q}"));
                }
                if !m.group_id.is_empty() {
                    facts.push(format!("group {}", short_key(&m.group_id)));
                }
                let label = if m.kind == RoomKind::Meeting {
                    "title"
                } else {
                    "topic"
                };
                let topic = if m.topic.is_empty() {
                    if m.started {
                        "—".to_owned()
                    } else {
                        "waiting for the room to start…".to_owned()
                    }
                } else {
                    m.topic.clone()
                };
                (m.protocol_name.clone(), label, topic, facts.join(" · "))
            }
            Err(_) => (
                "Room".to_owned(),
                "topic",
                "—".to_owned(),
                "unreadable".to_owned(),
            ),
        };
        let block = pane(&format!(" {name} {}", self.title), theme, false).title_bottom(
            Line::from(Span::styled(format!(" {facts} "), theme.muted())),
        );
        let inner = block.inner(area);
        f.render_widget(block, area);
        let line = Line::from(vec![
            Span::styled(format!("{label}  "), theme.muted()),
            Span::styled(topic, theme.accent().add_modifier(Modifier::BOLD)),
        ]);
        f.render_widget(Paragraph::new(line), inner);
    }

    fn draw_body(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel) {
        // Members beside the stream when there is room, else above it.
        let wide = area.width >= 70;
        // Stacked, the members give way to the meeting and a few lines of
        // the stream.
        let others = match &m.meeting {
            Some(mt) => self.meeting_lines(theme, mt).len() as u16 + 2 + 3,
            None => 6,
        };
        let members_h = (m.members.len() as u16 + 2)
            .min(8)
            .min(area.height.saturating_sub(others))
            .max(3);
        let (members_area, rest) = if wide {
            let w = if area.width >= 110 { 36 } else { 30 };
            let c = Layout::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Length(w), Constraint::Min(20)])
                .split(area);
            (c[0], c[1])
        } else {
            let c = Layout::default()
                .direction(Direction::Vertical)
                .constraints([
                    Constraint::Length(members_h.min(area.height.saturating_sub(3))),
                    Constraint::Min(3),
                ])
                .split(area);
            (c[0], c[1])
        };
        self.draw_members(f, members_area, theme, m);
        match (&m.meeting, m.kind) {
            (Some(mt), _) => {
                let lines = self.meeting_lines(theme, mt);
                // The meeting's state first, the notices under it.
                let want = lines.len() as u16 + 2;
                let c = Layout::default()
                    .direction(Direction::Vertical)
                    .constraints([
                        Constraint::Length(want.min(rest.height.saturating_sub(3)).max(3)),
                        Constraint::Min(3),
                    ])
                    .split(rest);
                let block = pane(" Meeting ", theme, false);
                let inner = block.inner(c[0]);
                f.render_widget(block, c[0]);
                f.render_widget(Paragraph::new(lines), inner);
                self.draw_stream(f, c[1], theme, m, " Notices ");
            }
            (None, RoomKind::Other) if !m.raw_view.is_empty() => {
                let c = Layout::default()
                    .direction(Direction::Vertical)
                    .constraints([
                        Constraint::Length(
                            (m.raw_view.len() as u16 + 2)
                                .min(rest.height.saturating_sub(3))
                                .max(3),
                        ),
                        Constraint::Min(3),
                    ])
                    .split(rest);
                let block = pane(" View ", theme, false);
                let inner = block.inner(c[0]);
                f.render_widget(block, c[0]);
                let lines: Vec<Line> = m
                    .raw_view
                    .iter()
                    .map(|l| Line::from(Span::styled(l.clone(), theme.text())))
                    .collect();
                f.render_widget(Paragraph::new(lines), inner);
                self.draw_stream(f, c[1], theme, m, " Notices ");
            }
            (None, RoomKind::Meeting) => self.draw_stream(f, rest, theme, m, " Notices "),
            _ => self.draw_stream(f, rest, theme, m, " Messages "),
        }
    }

    fn draw_members(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel) {
        let block = pane(&format!(" Members ({}) ", m.members.len()), theme, false)
            .title_bottom(Line::from(Span::styled(" ★ leads ", theme.muted())).right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut members: Vec<&Member> = m.members.iter().collect();
        members.sort_by_key(|x| (x.seat.unwrap_or(i64::MAX), x.public_key.clone()));
        let facilitator = m.meeting.as_ref().map(|mt| mt.facilitator.as_str());
        let speaker = m.meeting.as_ref().map(|mt| mt.speaker.as_str());
        let mut lines = Vec::new();
        for x in members {
            let left = x.status == "left" || x.presence.as_deref() == Some("left");
            let status = if left {
                "left"
            } else if self.links.get(&x.public_key) == Some(&false) {
                "offline"
            } else {
                match x.presence.as_deref() {
                    Some("online") => "online",
                    _ => "active",
                }
            };
            let lead = !m.leader.is_empty() && x.public_key == m.leader;
            let seat = x.seat.map(|s| s.to_string()).unwrap_or_else(|| "?".into());
            let mut name = self.name(&x.public_key);
            cut(&mut name, 10);
            let mut tags = Vec::new();
            if facilitator == Some(x.public_key.as_str()) {
                tags.push("chair");
            }
            if speaker == Some(x.public_key.as_str()) {
                tags.push("speaks");
            }
            let status_style = match status {
                "left" | "offline" => theme.muted(),
                _ => theme.fg(Slot::Ok),
            };
            let name_style = if x.public_key == self.you() {
                theme.fg(Slot::Sent).add_modifier(Modifier::BOLD)
            } else if left {
                theme.muted()
            } else {
                theme.text()
            };
            lines.push(Line::from(vec![
                Span::styled(if lead { "★" } else { " " }, theme.accent()),
                Span::styled(format!("{seat:>2} "), theme.muted()),
                Span::styled(format!("{name:<10} "), name_style),
                Span::styled(format!("{status:<7}"), status_style),
                Span::styled(
                    if tags.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", tags.join(","))
                    },
                    theme.accent(),
                ),
            ]));
        }
        if lines.is_empty() {
            lines.push(Line::from(Span::styled(
                if m.started {
                    "no members listed"
                } else {
                    "the lobby is filling"
                },
                theme.muted(),
            )));
        }
        f.render_widget(Paragraph::new(lines), inner);
    }

    fn meeting_lines(&self, theme: &Theme, mt: &Meeting) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let head = |t: &str| Span::styled(format!("{t:<9}"), theme.muted());
        if mt.agenda.is_empty() {
            lines.push(Line::from(vec![
                head("agenda"),
                Span::styled("empty", theme.muted()),
            ]));
        }
        for (i, (text, status)) in mt.agenda.iter().enumerate() {
            let (mark, style) = match status.as_str() {
                "active" => ("▶", theme.accent().add_modifier(Modifier::BOLD)),
                "done" => ("✓", theme.muted()),
                _ => ("·", theme.text()),
            };
            let mut t = text.clone();
            cut(&mut t, 120);
            lines.push(Line::from(vec![
                head(if i == 0 { "agenda" } else { "" }),
                Span::styled(format!("{mark} {}. {t}", i + 1), style),
            ]));
        }
        let speaker = match self.name(&mt.speaker) {
            _ if mt.speaker.is_empty() => "nobody has the floor".to_owned(),
            you if you == "you" => "you have the floor".to_owned(),
            who => format!("{who} has the floor"),
        };
        let queue = if mt.queue.is_empty() {
            String::new()
        } else {
            format!(
                " · queue: {}",
                mt.queue
                    .iter()
                    .map(|k| self.name(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        lines.push(Line::from(vec![
            head("speaking"),
            Span::styled(format!("{speaker}{queue}"), theme.text()),
        ]));
        match &mt.vote {
            Some(v) => {
                let mut q = v.question.clone();
                cut(&mut q, 120);
                lines.push(Line::from(vec![
                    head("vote"),
                    Span::styled(
                        format!(
                            "{q} ({} ballot{})",
                            v.ballots,
                            if v.ballots == 1 { "" } else { "s" }
                        ),
                        theme.accent(),
                    ),
                ]));
                let mut spans = vec![head("")];
                for (i, c) in v.choices.iter().enumerate() {
                    let n = v.counts.get(i).copied().unwrap_or(0);
                    let mine = v.my_choice == Some(i as i64);
                    spans.push(Span::styled(
                        format!("[{i} {c}: {n}{}] ", if mine { " ✓you" } else { "" }),
                        if mine {
                            theme.fg(Slot::Sent)
                        } else {
                            theme.text()
                        },
                    ));
                }
                lines.push(Line::from(spans));
            }
            None => lines.push(Line::from(vec![
                head("vote"),
                Span::styled(
                    format!("none open · {} closed", mt.votes_closed),
                    theme.muted(),
                ),
            ])),
        }
        if mt.action_items.is_empty() {
            lines.push(Line::from(vec![
                head("actions"),
                Span::styled("none", theme.muted()),
            ]));
        }
        for (i, a) in mt.action_items.iter().enumerate() {
            let mut t = a.text.clone();
            cut(&mut t, 100);
            let who = if a.assignee.is_empty() {
                String::new()
            } else {
                format!(" → {}", self.name(&a.assignee))
            };
            lines.push(Line::from(vec![
                head(if i == 0 { "actions" } else { "" }),
                Span::styled(
                    format!("[{}] #{} {t}{who}", if a.done { "x" } else { " " }, a.id),
                    if a.done { theme.muted() } else { theme.text() },
                ),
            ]));
        }
        lines
    }

    fn draw_stream(&self, f: &mut Frame, area: Rect, theme: &Theme, m: &RoomModel, title: &str) {
        let all = entries(&m.messages, self.notices);
        let total = all.len();
        let hidden = self.scroll.min(total.saturating_sub(1));
        let lines = if total == 1 { "line" } else { "lines" };
        let status = if hidden > 0 {
            format!(" {total} {lines} · {hidden} newer below ")
        } else {
            format!(" {total} {lines} · live ")
        };
        let block = pane(title, theme, self.stream_focused)
            .title_bottom(Line::from(Span::styled(status, theme.muted())).right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        if total == 0 {
            let hint = if m.kind == RoomKind::Meeting {
                "Nothing has happened yet."
            } else {
                "No messages yet. Write one below (Enter sends)."
            };
            f.render_widget(Paragraph::new(Span::styled(hint, theme.muted())), inner);
            return;
        }
        let width = inner.width as usize;
        let height = inner.height as usize;
        // From the newest shown entry up, until the pane is full.
        // Whole entries only, but the newest shown even when it is taller
        // than the pane (its head then).
        let mut lines: Vec<Line> = Vec::new();
        for e in all[..total - hidden].iter().rev() {
            let mut wrapped = self.entry_lines(e, theme, width);
            if !lines.is_empty() && lines.len() + wrapped.len() > height {
                break;
            }
            wrapped.truncate(height);
            wrapped.reverse();
            lines.extend(wrapped);
        }
        lines.reverse();
        let top = height.saturating_sub(lines.len()) as u16;
        let at = Rect {
            y: inner.y + top,
            height: inner.height - top,
            ..inner
        };
        f.render_widget(Paragraph::new(lines), at);
    }

    /// One entry, wrapped to `width` cells.
    fn entry_lines(&self, e: &Entry<'_>, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let (prefix, prefix_style, text, style) = match e {
            Entry::Notice(n) => (
                format!("{} • ", n.time),
                theme.muted(),
                n.text.clone(),
                if n.bad {
                    theme.fg(Slot::Error)
                } else {
                    theme.fg(Slot::Local)
                },
            ),
            Entry::Message(msg) if msg.system => (
                "· ".to_owned(),
                theme.fg(Slot::System),
                msg.text.clone(),
                theme.fg(Slot::System).add_modifier(Modifier::ITALIC),
            ),
            Entry::Message(msg) => {
                let mine = !msg.from.is_empty() && msg.from == self.you();
                let seat = msg
                    .seat
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "?".into());
                let mut who = self.name(&msg.from);
                cut(&mut who, 16);
                if mine {
                    (
                        format!("▸[{seat}] {who}: "),
                        theme.fg(Slot::Sent).add_modifier(Modifier::BOLD),
                        msg.text.clone(),
                        theme.fg(Slot::Sent),
                    )
                } else {
                    (
                        format!(" [{seat}] {who}: "),
                        theme.fg(Slot::Received).add_modifier(Modifier::BOLD),
                        msg.text.clone(),
                        theme.text(),
                    )
                }
            }
        };
        wrap(&prefix, prefix_style, &text, style, width)
    }

    fn draw_compose(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        if area.height == 0 {
            return;
        }
        let meeting = matches!(self.model, Ok(m) if m.kind == RoomKind::Meeting);
        let title = if meeting { " Action (JSON) " } else { " Say " };
        let note = match self.note {
            Some(Note { ok, text }) => Span::styled(
                format!(" {text} "),
                if *ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            ),
            None => Span::styled(
                if meeting {
                    r#" e.g. {"kind":"add_agenda","text":"…"} · Enter sends "#
                } else {
                    " Enter sends · {…} sends a JSON action "
                },
                theme.muted(),
            ),
        };
        let block = pane(title, theme, self.compose_focused).title_bottom(Line::from(note));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let width = inner.width as usize;
        // The end of a long line stays in sight.
        let shown: String = {
            let n = self.input.chars().count();
            let room = width.saturating_sub(3);
            self.input.chars().skip(n.saturating_sub(room)).collect()
        };
        let mut line = vec![
            Span::styled("> ", theme.accent()),
            Span::styled(shown, theme.text()),
        ];
        if self.compose_focused {
            line.push(Span::styled(" ", theme.cursor()));
        }
        f.render_widget(Paragraph::new(Line::from(line)), inner);
    }
}

fn pane<'a>(title: &str, theme: &Theme, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(title.to_owned(), theme.title()))
}

/// Cells a character takes.
fn cells(c: char) -> usize {
    let mut b = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut b)).width()
}

/// `prefix` then `text` wrapped to `width` cells at spaces (a word longer
/// than a line is cut), the continuation lines indented under the text.
/// At most 40 lines (the rest is cut).
fn wrap(prefix: &str, ps: Style, text: &str, ts: Style, width: usize) -> Vec<Line<'static>> {
    let indent = Span::raw(prefix).width().min(width / 2);
    let room = width.saturating_sub(indent).max(1);
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut used = 0usize;
    // Where the last space of `cur` is (byte index, cells before it).
    let mut space: Option<(usize, usize)> = None;
    for c in text.chars() {
        let w = cells(c);
        if used + w > room && !cur.is_empty() {
            if c == ' ' {
                rows.push(std::mem::take(&mut cur));
                (used, space) = (0, None);
                continue;
            }
            match space {
                Some((at, before)) if at > 0 => {
                    let rest = cur.split_off(at + 1);
                    cur.pop();
                    rows.push(std::mem::replace(&mut cur, rest));
                    used -= before + 1;
                }
                _ => {
                    rows.push(std::mem::take(&mut cur));
                    used = 0;
                }
            }
            space = None;
            if rows.len() >= 40 {
                break;
            }
        }
        if c == ' ' {
            if cur.is_empty() && !rows.is_empty() {
                continue;
            }
            space = Some((cur.len(), used));
        }
        cur.push(c);
        used += w;
    }
    if rows.len() < 40 {
        rows.push(cur);
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let head = if i == 0 {
                Span::styled(prefix.to_owned(), ps)
            } else {
                Span::raw(" ".repeat(indent))
            };
            Line::from(vec![head, Span::styled(r, ts)])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_character_and_the_width() {
        let l = wrap("ab: ", Style::new(), "one two three", Style::new(), 10);
        let rows: Vec<String> = l
            .iter()
            .map(|x| x.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(rows, ["ab: one", "    two", "    three"]);
        let l = wrap("ab: ", Style::new(), "0123456789漢字", Style::new(), 8);
        let text: String = l
            .iter()
            .map(|x| {
                x.spans
                    .iter()
                    .map(|s| s.content.replace(' ', ""))
                    .collect::<String>()
            })
            .collect();
        assert_eq!(text, "ab:0123456789漢字");
        assert!(l.iter().all(|x| x.width() <= 8), "{l:?}");
        assert_eq!(short_key(&"ab".repeat(32)), "abab…abab");
        assert_eq!(short_key("é"), "é");
    }

    #[test]
    fn notices_stay_after_the_line_they_came_after_when_old_lines_leave() {
        let msg = |id| Message {
            id: Some(id),
            system: false,
            from: String::new(),
            seat: None,
            text: id.to_string(),
        };
        let note = |after| Notice {
            time: String::new(),
            text: format!("n{after:?}"),
            bad: false,
            after,
        };
        // Lines 1-4 left the view; the notice after 5 stays after 5.
        let messages = [msg(5), msg(6), msg(7)];
        let notices = [note(None), note(Some(5)), note(Some(9))];
        let order: Vec<String> = entries(&messages, &notices)
            .iter()
            .map(|e| match e {
                Entry::Message(m) => m.text.clone(),
                Entry::Notice(n) => n.text.clone(),
            })
            .collect();
        assert_eq!(order, ["nNone", "5", "nSome(5)", "6", "7", "nSome(9)"]);
    }
}
