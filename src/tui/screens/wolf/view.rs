//! Drawing the werewolf screen from `&WolfView`: seats, votes and results
//! on the left, the day's log on the right, the winner banner, the
//! decision prompt and the small dialogs. Nothing here changes state.

use super::board::{Board, Item, phase_name, reason_name};
use super::prompt::{Decision, Input};
use super::{Source, WolfView, dialog, speed_name};
use crate::engine::ControlMode;
use crate::tui::command::Command;
use crate::tui::keymap::Context;
use crate::tui::note::Note;
use crate::tui::screen::Paint;
use crate::tui::theme::{Slot, Theme};
use crate::werewolf::{Role, Species, Team};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// A piece of text and the theme key it is drawn with.
type Piece = (String, Slot);

/// Where everything goes inside the body.
struct Geo {
    info: Rect,
    banner: Rect,
    left: Rect,
    day: Rect,
    feed: Rect,
    prompt: Rect,
}

fn left_width(w: u16) -> u16 {
    if w >= 140 {
        44
    } else if w >= 100 {
        36
    } else {
        30
    }
}

impl WolfView {
    fn geometry(&self, area: Rect) -> Geo {
        let inner = Block::default().borders(Borders::ALL).inner(area);
        let banner_h = u16::from(self.board.as_ref().is_some_and(|b| b.finish.is_some()));
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Length(banner_h),
                Constraint::Min(3),
            ])
            .split(inner);
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(left_width(area.width).min(inner.width / 2)),
                Constraint::Min(10),
            ])
            .split(rows[2]);
        let prompt_h = self
            .decision
            .as_ref()
            .map(prompt_height)
            .unwrap_or(0)
            .min(cols[1].height.saturating_sub(3));
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(prompt_h),
            ])
            .split(cols[1]);
        Geo {
            info: rows[0],
            banner: rows[1],
            left: cols[0],
            day: right[0],
            feed: right[1],
            prompt: right[2],
        }
    }

    /// How far the feed can scroll back for a terminal of `size`.
    pub(super) fn max_back(&self, size: (u16, u16)) -> usize {
        let Some(b) = &self.board else { return 0 };
        let area = Rect::new(0, 1, size.0, size.1.saturating_sub(2));
        let g = self.geometry(area);
        let lines = day_lines(self, b, g.feed.width.saturating_sub(1));
        lines.len().saturating_sub(g.feed.height as usize)
    }

    fn shown_day(&self) -> Option<i64> {
        self.day.or_else(|| {
            self.board
                .as_ref()
                .and_then(|b| b.days.keys().next_back().copied())
        })
    }

    /// The role of seat `idx` as this screen may show it.
    fn role_of(&self, b: &Board, idx: usize) -> Option<Role> {
        let god = b.viewer.is_none();
        if god && self.hide_roles {
            return None;
        }
        if !b.role_known(idx) {
            return None;
        }
        b.seat(idx).map(|s| s.role)
    }
}

fn prompt_height(d: &Decision) -> u16 {
    match &d.input {
        Input::Text { .. } => 6,
        Input::Pick { targets, .. } => (targets.len().clamp(1, 6) as u16) + 3,
    }
}

fn team_key(r: Role) -> Slot {
    if r.team() == Team::Werewolf {
        Slot::Error
    } else {
        Slot::Ok
    }
}

fn species_key(s: Species) -> Slot {
    match s {
        Species::Werewolf => Slot::Error,
        Species::Human => Slot::Ok,
    }
}

fn source_label(v: &WolfView) -> String {
    match &v.source {
        Source::Replay => "replay".to_owned(),
        Source::Watch(n) => format!("watching {n} bots"),
        Source::Spectate { url, game } => format!("spectating {game} on {url}"),
        Source::Play(m) => match &v.remote {
            Some((url, name)) => format!("playing {name} at {url} ({})", m.as_str()),
            None => format!("playing a seat ({})", m.as_str()),
        },
    }
}

/// One log item as pieces of text.
fn item_pieces(v: &WolfView, b: &Board, item: &Item) -> Vec<Piece> {
    let name = |i: usize| b.name(i);
    let mut p: Vec<Piece> = Vec::new();
    match item {
        Item::Phase(ph) => p.push((format!("── {} ──", phase_name(*ph)), Slot::Muted)),
        Item::Talk {
            whisper,
            seat,
            text,
            skip,
            over,
        } => {
            if *whisper {
                p.push(("[whisper] ".into(), Slot::Warn));
            }
            let quiet = *skip || *over;
            let who = if quiet {
                Slot::Muted
            } else if *whisper {
                Slot::Warn
            } else if b.viewer.is_some_and(|me| me.idx == *seat) {
                Slot::Local
            } else {
                Slot::Accent
            };
            p.push((format!("{}: ", name(*seat)), who));
            p.push((text.clone(), if quiet { Slot::Muted } else { Slot::Text }));
        }
        Item::Tally {
            round,
            tally,
            executed,
        } => {
            let counts: Vec<String> = tally
                .iter()
                .map(|(t, n)| format!("{} {n}", name(*t)))
                .collect();
            p.push((format!("votes (round {round}): "), Slot::System));
            p.push((counts.join(" · "), Slot::Text));
            match executed {
                Some(e) => p.push((format!(" → {} is executed", name(*e)), Slot::Warn)),
                None => p.push((" → a tie".into(), Slot::Muted)),
            }
        }
        Item::Executed { idx, role } => {
            p.push((format!("† {} was executed", name(*idx)), Slot::Warn));
            if let Some(r) = role.filter(|_| !v.hide_roles) {
                p.push((format!(" ({})", r.as_str()), team_key(r)));
            }
        }
        Item::Medium { idx, species } => {
            p.push((format!("medium: {} was ", name(*idx)), Slot::System));
            p.push((species.as_str().into(), species_key(*species)));
        }
        Item::Divine {
            seer,
            target,
            result,
        } => {
            p.push((
                format!("{} divines {}: ", name(*seer), name(*target)),
                Slot::System,
            ));
            p.push((result.as_str().into(), species_key(*result)));
        }
        Item::Guard { bodyguard, target } => {
            p.push((
                format!("{} guards {}", name(*bodyguard), name(*target)),
                Slot::System,
            ));
        }
        Item::AttackVote { wolf, target } => {
            let t = target.map(&name).unwrap_or_else(|| "no one".into());
            p.push((format!("wolf {} wants {t}", name(*wolf)), Slot::Warn));
        }
        Item::Attack {
            target,
            killed,
            guarded,
        } => match (target, killed, guarded) {
            (Some(t), true, _) => p.push((
                format!("† {} was killed in the night", name(*t)),
                Slot::Error,
            )),
            (Some(t), false, true) => p.push((
                format!("the guard saved {} from the wolves", name(*t)),
                Slot::Ok,
            )),
            _ => p.push(("no one died in the night".into(), Slot::Muted)),
        },
        Item::Error { idx, reason } => {
            p.push((format!("! {}: {reason}", name(*idx)), Slot::Error));
        }
        Item::Finished => {
            if let Some(f) = &b.finish {
                p.push((
                    format!("★ game over: {}", winner_text(f.winner)),
                    Slot::Title,
                ));
            }
        }
    }
    p
}

fn winner_text(t: Team) -> String {
    match t {
        Team::None => "no winner".into(),
        t => format!("the {} team wins", t.as_str()),
    }
}

/// Word-wraps pieces to `width` cells; continuation lines are indented.
fn wrap(pieces: Vec<Piece>, width: u16) -> Vec<Vec<Piece>> {
    let width = usize::from(width.max(8));
    let mut lines: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut col = 0usize;
    for (text, key) in pieces {
        for word in text.split_inclusive(' ') {
            let w = Span::raw(word).width();
            if col + w.min(width) > width && col > 2 {
                lines.push(vec![("  ".into(), Slot::Text)]);
                col = 2;
            }
            // A word longer than a line is cut.
            let mut rest = word.to_owned();
            while col + Span::raw(rest.as_str()).width() > width {
                let mut cut = String::new();
                let mut cw = 0;
                for c in rest.chars() {
                    let cwid = Span::raw(c.to_string()).width();
                    if col + cw + cwid > width {
                        break;
                    }
                    cut.push(c);
                    cw += cwid;
                }
                if cut.is_empty() {
                    break;
                }
                rest = rest[cut.len()..].to_owned();
                if let Some(l) = lines.last_mut() {
                    l.push((cut, key));
                }
                lines.push(vec![("  ".into(), Slot::Text)]);
                col = 2;
            }
            col += Span::raw(rest.as_str()).width();
            if let Some(l) = lines.last_mut() {
                l.push((rest, key));
            }
        }
    }
    lines
}

fn day_lines(v: &WolfView, b: &Board, width: u16) -> Vec<Vec<Piece>> {
    let Some(day) = v.shown_day() else {
        return Vec::new();
    };
    b.days
        .get(&day)
        .map(|items| {
            items
                .iter()
                .flat_map(|i| wrap(item_pieces(v, b, i), width))
                .collect()
        })
        .unwrap_or_default()
}

fn line(pieces: Vec<Piece>, t: &Theme) -> Line<'static> {
    Line::from(
        pieces
            .into_iter()
            .map(|(s, k)| {
                let st = if k == Slot::Title { t.title() } else { t.fg(k) };
                Span::styled(s, st)
            })
            .collect::<Vec<_>>(),
    )
}

fn key(p: &Paint<'_>, c: Command) -> String {
    p.keymap.key_for(Context::Werewolf, c).unwrap_or_default()
}

pub fn draw(v: &WolfView, f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let t = p.theme;
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Span::styled(
            format!(" Werewolf · {} ", source_label(v)),
            t.title(),
        ));
    if let Some(b) = &v.board {
        let phase = b.phase.map(phase_name).unwrap_or(if b.finish.is_some() {
            "game over"
        } else {
            "dawn"
        });
        block = block.title(
            Line::from(Span::styled(
                format!(" day {} · {phase} ", b.day),
                t.accent(),
            ))
            .right_aligned(),
        );
    }
    f.render_widget(block, area);
    let g = v.geometry(area);
    draw_info(v, f, g.info, p);
    match &v.board {
        None => draw_intro(
            f,
            Rect::new(
                g.left.x,
                g.left.y,
                g.left.width + g.feed.width,
                g.left.height,
            ),
            p,
        ),
        Some(b) => {
            draw_banner(b, f, g.banner, t);
            draw_left(v, b, f, g.left, t);
            draw_feed(v, b, f, g.day, g.feed, p);
            if let Some(d) = &v.decision {
                draw_prompt(v, d, f, g.prompt, t);
            }
        }
    }
    if let Some(d) = &v.dialog {
        dialog::draw(d, f, area, p);
    }
}

fn draw_info(v: &WolfView, f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let t = p.theme;
    let mut spans = Vec::new();
    if v.board.is_some() && !matches!(v.source, Source::Play(_)) {
        spans.push(Span::styled(
            format!(
                "speed {} ({} changes)",
                speed_name(v.speed),
                key(p, Command::Submit)
            ),
            t.muted(),
        ));
        if !v.queue.is_empty() {
            spans.push(Span::styled(
                format!(
                    " · {} events to show ({} catches up)",
                    v.queue.len(),
                    key(p, Command::Skip)
                ),
                t.accent(),
            ));
        }
        spans.push(Span::styled(" · ", t.muted()));
    }
    if let Some(b) = &v.board
        && let Some(me) = b.viewer
    {
        let role = b.my_role().map(Role::as_str).unwrap_or("?");
        spans.push(Span::styled(
            format!("you are {} ({me_idx}) · ", b.name(me.idx), me_idx = me.idx),
            t.fg(Slot::Local),
        ));
        spans.push(Span::styled(
            role.to_owned(),
            b.my_role().map(|r| t.fg(team_key(r))).unwrap_or(t.muted()),
        ));
        spans.push(Span::styled(" · ", t.muted()));
    }
    if v.note.is_none() && spans.last().is_some_and(|s| s.content == " · ") {
        spans.pop();
    }
    if let Some(Note { ok, text: s }) = &v.note {
        spans.push(Span::styled(
            s.clone(),
            if *ok {
                t.fg(Slot::Ok)
            } else {
                t.fg(Slot::Error)
            },
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_intro(f: &mut Frame, area: Rect, p: &Paint<'_>) {
    let t = p.theme;
    let row = |a: Command, text: &str| {
        Line::from(vec![
            Span::styled(format!("  {:<6}", key(p, a)), t.accent()),
            Span::styled(text.to_owned(), t.text()),
        ])
    };
    let lines = vec![
        Line::from(Span::styled(
            "Werewolf games (AIWolf NLP) with the god view",
            t.title(),
        )),
        Line::raw(""),
        row(
            Command::WatchGame,
            "watch a bot game of 5, 9 or 13 seats, run here",
        ),
        row(
            Command::Spectate,
            "spectate a game on a `palaver wolf serve` server",
        ),
        row(
            Command::PlaySeat,
            "play a seat in a 5-seat bot game (human, hybrid or autonomous)",
        ),
        row(
            Command::JoinServer,
            "take a seat at a wolf server (ws URL, name, token, control mode)",
        ),
        row(
            Command::ToggleRoles,
            "show or hide the roles while watching",
        ),
        Line::raw(""),
        Line::from(Span::styled(
            "While a game shows: ←/→ or PgUp/PgDn change the day, ↑/↓ scroll the day's talk.",
            t.muted(),
        )),
    ];
    f.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
        area,
    );
}

fn draw_banner(b: &Board, f: &mut Frame, area: Rect, t: &Theme) {
    let Some(fin) = &b.finish else { return };
    let colour = match fin.winner {
        Team::Villager => Slot::Ok,
        Team::Werewolf => Slot::Error,
        Team::None => Slot::Warn,
    };
    let mut text = format!(
        " ★ {} · {} on day {} · {} human(s) and {} wolf(s) alive",
        winner_text(fin.winner).to_uppercase(),
        reason_name(fin.reason),
        b.day,
        fin.alive_humans,
        fin.alive_wolves
    );
    if let Some(r) = b.my_role()
        && fin.winner != Team::None
    {
        text.push_str(if r.team() == fin.winner {
            " · you win"
        } else {
            " · you lose"
        });
    }
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(
            text,
            t.fg(colour)
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ))),
        area,
    );
}

fn draw_left(v: &WolfView, b: &Board, f: &mut Frame, area: Rect, t: &Theme) {
    let block = Block::default()
        .borders(Borders::RIGHT)
        .border_style(t.border(false));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let alive = b.seats.iter().filter(|s| s.alive).count();
    let mut lines: Vec<Line> = vec![Line::from(vec![
        Span::styled("Seats", t.title()),
        Span::styled(format!(" · {alive}/{} alive", b.seats.len()), t.muted()),
    ])];
    let name_w = w.saturating_sub(20).clamp(4, 16);
    for s in &b.seats {
        let me = b.viewer.is_some_and(|m| m.idx == s.idx);
        let role = v.role_of(b, s.idx);
        let (life, lk) = match (&s.error, s.alive) {
            (Some(_), _) => ("error", Slot::Error),
            (None, true) => ("alive", Slot::Ok),
            (None, false) => ("dead", Slot::Muted),
        };
        let dim = !s.alive;
        let st = |k: Slot| if dim { t.muted() } else { t.fg(k) };
        lines.push(Line::from(vec![
            Span::styled(if me { ">" } else { " " }, t.fg(Slot::Local)),
            Span::styled(format!("{:>2} ", s.idx), t.muted()),
            Span::styled(
                format!("{:<name_w$.name_w$} ", s.name),
                st(if me { Slot::Local } else { Slot::Text }),
            ),
            match role {
                Some(r) => Span::styled(format!("{:<9} ", r.as_str()), st(team_key(r))),
                None => Span::styled(format!("{:<9} ", "?"), t.muted()),
            },
            Span::styled(life, t.fg(lk)),
        ]));
    }
    let day = v.shown_day().unwrap_or(b.day);
    if let Some(tally) = b.tally_for(day) {
        lines.push(Line::raw(""));
        lines.push(Line::from(vec![
            Span::styled("Votes", t.title()),
            Span::styled(
                format!(" · day {} round {}", tally.day, tally.round),
                t.muted(),
            ),
        ]));
        let max = tally.tally.iter().map(|x| x.1).max().unwrap_or(1).max(1);
        let nw = name_w.min(10);
        let bar_w = w.saturating_sub(nw + 6).max(1);
        for (idx, n) in &tally.tally {
            let len = (n * bar_w).div_ceil(max);
            let exe = tally.executed == Some(*idx);
            lines.push(Line::from(vec![
                Span::styled(
                    format!(" {:<nw$.nw$} ", b.name(*idx)),
                    if exe { t.fg(Slot::Warn) } else { t.text() },
                ),
                Span::styled(
                    "█".repeat(len),
                    t.fg(if exe { Slot::Warn } else { Slot::Accent }),
                ),
                Span::styled(format!(" {n}{}", if exe { " †" } else { "" }), t.text()),
            ]));
        }
    }
    let results: Vec<&(i64, Item)> = b.results.iter().filter(|(d, _)| *d <= day).collect();
    if !results.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::from(Span::styled("Results", t.title())));
        let room = (inner.height as usize).saturating_sub(lines.len());
        let mut rows: Vec<Line> = Vec::new();
        for (d, item) in results.iter().rev() {
            for l in wrap(
                [
                    vec![(format!("d{d} "), Slot::Muted)],
                    item_pieces(v, b, item),
                ]
                .concat(),
                inner.width,
            )
            .into_iter()
            .rev()
            {
                rows.push(line(l, t));
            }
            if rows.len() >= room {
                break;
            }
        }
        rows.truncate(room);
        rows.reverse();
        lines.extend(rows);
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_feed(v: &WolfView, b: &Board, f: &mut Frame, head: Rect, area: Rect, p: &Paint<'_>) {
    let t = p.theme;
    let days = b.day_list();
    let shown = v.shown_day();
    let pos = shown.and_then(|d| days.iter().position(|x| *x == d));
    let lines = day_lines(v, b, area.width.saturating_sub(1));
    let h = area.height as usize;
    let back = v.back.min(lines.len().saturating_sub(h));
    let end = lines.len() - back;
    let start = end.saturating_sub(h);
    let mut head_spans = vec![
        Span::styled(
            if pos.is_some_and(|i| i > 0) {
                "◀ "
            } else {
                "  "
            },
            t.accent(),
        ),
        Span::styled(
            match shown {
                Some(d) => format!("Day {d}"),
                None => "Waiting for the game".into(),
            },
            t.title(),
        ),
        Span::styled(
            if pos.is_some_and(|i| i + 1 < days.len()) {
                " ▶"
            } else {
                "  "
            },
            t.accent(),
        ),
    ];
    if let Some(i) = pos {
        head_spans.push(Span::styled(
            format!(
                " {}/{}{}",
                i + 1,
                days.len(),
                if v.day.is_none() { " (now)" } else { "" }
            ),
            t.muted(),
        ));
    }
    if start > 0 {
        head_spans.push(Span::styled(format!(" · ↑ {start} more"), t.muted()));
    }
    if back > 0 {
        head_spans.push(Span::styled(format!(" · ↓ {back} more"), t.muted()));
    }
    f.render_widget(Paragraph::new(Line::from(head_spans)), head);
    let shown_lines: Vec<Line> = lines[start..end]
        .iter()
        .map(|l| line(l.clone(), t))
        .collect();
    let inner = Rect::new(
        area.x + 1,
        area.y,
        area.width.saturating_sub(1),
        area.height,
    );
    f.render_widget(Paragraph::new(shown_lines), inner);
}

fn draw_prompt(v: &WolfView, d: &Decision, f: &mut Frame, area: Rect, t: &Theme) {
    if area.height < 3 {
        return;
    }
    let (action, margin) = d.timing();
    let secs = d.left.as_millis().div_ceil(1000);
    let focused = !matches!(d.input, Input::Text { .. }) || v.typing;
    let title = format!(
        " {} · day {} · {secs}s left ",
        d.request.as_str(),
        d.view.day
    );
    let timing = format!(
        " {}s timeout − {}s margin ",
        action.as_secs(),
        margin.as_secs()
    );
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(Span::styled(
            title.clone(),
            if secs <= 10 {
                t.fg(Slot::Error).add_modifier(Modifier::BOLD)
            } else {
                t.title()
            },
        ));
    let timing_fits = title.chars().count() + timing.chars().count() + 4 <= area.width as usize;
    if timing_fits {
        block = block.title(Line::from(Span::styled(timing.clone(), t.muted())).right_aligned());
    }
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    match &d.input {
        Input::Text { line: text, .. } => {
            // The end of the line, where typing happens.
            let room = w.saturating_sub(3);
            let chars: Vec<char> = text.chars().collect();
            let tail: String = chars[chars.len().saturating_sub(room)..].iter().collect();
            let mut spans = vec![Span::styled("> ", t.accent()), Span::styled(tail, t.text())];
            if v.typing {
                spans.push(Span::styled(" ", t.cursor()));
            }
            lines.push(Line::from(spans));
            if let Some(m) = d.measure() {
                let mut over = false;
                let mut parts = Vec::new();
                match m.before_limit {
                    Some(l) => {
                        over |= m.before > l;
                        parts.push(format!("{}/{l} {}", m.before, m.unit));
                    }
                    None => parts.push(format!("{} {}", m.before, m.unit)),
                }
                if let Some((n, a)) = &m.mention {
                    match m.after_limit {
                        Some(l) => {
                            over |= *a > l;
                            parts.push(format!("@{n} {a}/{l}"));
                        }
                        None => parts.push(format!("@{n} {a}")),
                    }
                }
                if let Some(pt) = m.per_talk {
                    let used = m.before + m.mention.as_ref().map(|x| x.1).unwrap_or(0);
                    over |= used > pt;
                    parts.push(format!("{used}/{pt} a talk"));
                }
                // What may still be typed, where a limit is tighter than
                // the part counts above show.
                if let Some(l) = m.left()
                    && (m.per_talk.is_some() || m.budget.is_some())
                {
                    parts.push(format!("{} {} left", l.max(0), m.unit));
                }
                if let Some(bud) = m.budget {
                    parts.push(format!("{bud} left today"));
                }
                if let Some(c) = d.view.remain_count {
                    parts.push(format!("{c} turns left"));
                }
                if let Some(k) = d.view.remain_skip
                    && d.view
                        .setting
                        .as_ref()
                        .is_some_and(|s| s.talk.max_skip > 0 || s.whisper.max_skip > 0)
                {
                    parts.push(format!("{k} skips"));
                }
                lines.push(Line::from(Span::styled(
                    parts.join(" · "),
                    if over || m.kept.is_some() {
                        t.fg(Slot::Warn)
                    } else {
                        t.muted()
                    },
                )));
                match (&m.kept, &d.proposal) {
                    (Some(k), _) => lines.push(Line::from(Span::styled(
                        format!("the server keeps: {k}"),
                        t.fg(Slot::Warn),
                    ))),
                    (None, Some(prop)) if d.mode == ControlMode::Hybrid => lines.push(Line::from(
                        Span::styled(format!("bot proposes: {prop}"), t.muted()),
                    )),
                    // Narrow: the timing goes where the question was.
                    _ if !timing_fits => lines.push(Line::from(Span::styled(
                        timing.trim().to_owned(),
                        t.muted(),
                    ))),
                    _ => lines.push(Line::from(Span::styled(d.question(), t.muted()))),
                }
            }
            let help = match (v.typing, w >= 58) {
                (true, true) => "Enter send · Tab @name · C-k Skip · C-o Over · Esc board",
                (true, false) => "Enter send · Tab @name · C-k Skip · C-o Over",
                (false, true) => "Enter type · C-k Skip · C-o Over · ←/→ day · ↑/↓ scroll",
                (false, false) => "Enter type · C-k Skip · C-o Over · ←/→ day",
            };
            lines.push(Line::from(Span::styled(help, t.muted())));
        }
        Input::Pick { targets, selected } => {
            let mut q = format!("{} (↑/↓, Enter)", d.question());
            if let (Some(prop), ControlMode::Hybrid) = (&d.proposal, d.mode) {
                q.push_str(&format!(" · bot proposes {prop}"));
            }
            lines.push(Line::from(Span::styled(q, t.muted())));
            let room = (inner.height as usize).saturating_sub(1).max(1);
            let first = (*selected + 1).saturating_sub(room);
            for (i, name) in targets.iter().enumerate().skip(first).take(room) {
                let sel = i == *selected;
                lines.push(Line::from(Span::styled(
                    format!("{} {name}", if sel { ">" } else { " " }),
                    if sel { t.selected() } else { t.text() },
                )));
            }
            if targets.is_empty() {
                lines.push(Line::from(Span::styled(
                    "no one to choose: Enter sends nothing; the safe answer goes at 0s",
                    t.fg(Slot::Warn),
                )));
            }
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
}
