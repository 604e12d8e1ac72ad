//! The replay view of a finished session, drawn over the sessions screen's
//! body: a header (protocol, role, step, play state, speed), the position
//! bar with marks where a person (H) or a whisper (W) intervened, the state
//! as it stood at the step (the snapshot pane; a room's messages; a
//! werewolf game's day: who lives, the roles, the day's talk and votes), and
//! the steps around the one shown with who decided.

use super::snapshot;
use crate::json::{Map, Value};
use crate::session::replay::{Actor, Step, StepKind, Timeline};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// What the view shows.
pub struct ReplayPaint<'a> {
    pub timeline: &'a Timeline,
    pub pos: usize,
    pub playing: bool,
    pub speed: f64,
}

fn speed_label(x: f64) -> String {
    if x >= 1.0 {
        format!("×{x:.0}")
    } else {
        format!("×1/{:.0}", 1.0 / x)
    }
}

fn by_style(theme: &Theme, by: Option<Actor>) -> Style {
    match by {
        Some(Actor::Human) => theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
        Some(Actor::Whisper) => theme.fg(Slot::Accent).add_modifier(Modifier::BOLD),
        Some(_) => theme.fg(Slot::Local),
        None => theme.text(),
    }
}

/// The position bar: `width` cells over the steps; the shown step is `●`,
/// interventions `H`/`W`.
pub fn bar(t: &Timeline, pos: usize, width: usize, theme: &Theme) -> Line<'static> {
    let n = t.steps.len();
    if n == 0 || width == 0 {
        return Line::from(Span::styled("(no steps)", theme.muted()));
    }
    let cell_of = |i: usize| {
        if n <= 1 { 0 } else { i * (width - 1) / (n - 1) }
    };
    let mut cells: Vec<(char, Style)> = (0..width)
        .map(|c| {
            if c <= cell_of(pos) {
                ('━', theme.accent())
            } else {
                ('─', theme.muted())
            }
        })
        .collect();
    for i in t.interventions() {
        let by = t.steps[i].by;
        let ch = if by == Some(Actor::Whisper) { 'W' } else { 'H' };
        cells[cell_of(i)] = (ch, by_style(theme, by));
    }
    cells[cell_of(pos)] = ('●', theme.title());
    Line::from(
        cells
            .into_iter()
            .map(|(c, s)| Span::styled(c.to_string(), s))
            .collect::<Vec<_>>(),
    )
}

fn kind_label(s: &Step) -> &'static str {
    match s.kind {
        StepKind::Sent => "sent",
        StepKind::Received => "recv",
        StepKind::RoundResult => "result",
        StepKind::Window => "window",
        StepKind::Decision => "decide",
        StepKind::Whisper => "whisper",
        StepKind::Room => "room",
        StepKind::Ended => "end",
        StepKind::Event => "event",
        StepKind::Werewolf => match s.action.as_str() {
            "attackVote" => "attack?",
            "execute" => "execute",
            "whisper" => "whisper",
            "status" => "day",
            "divine" => "divine",
            "guard" => "guard",
            "attack" => "attack",
            "vote" => "vote",
            _ => "talk",
        },
    }
}

fn step_line(i: usize, s: &Step, current: bool, zero: bool, theme: &Theme) -> Line<'static> {
    let base = match s.kind {
        StepKind::Sent => theme.fg(Slot::Sent),
        StepKind::Received | StepKind::RoundResult => theme.fg(Slot::Received),
        StepKind::Decision | StepKind::Whisper | StepKind::Window => by_style(theme, s.by),
        StepKind::Ended => theme.fg(Slot::Ok),
        StepKind::Werewolf => match s.action.as_str() {
            "talk" => theme.text(),
            "whisper" | "attackVote" | "attack" => theme.fg(Slot::Warn),
            "status" => theme.title(),
            _ => theme.fg(Slot::System),
        },
        _ => theme.fg(Slot::System),
    };
    let mut spans = vec![
        Span::styled(
            format!("{}{:>4} ", if current { "▶" } else { " " }, i + 1),
            theme.muted(),
        ),
        Span::styled(format!("{:>8.3}s ", s.t), theme.muted()),
        Span::styled(format!("{:<7} ", kind_label(s)), base),
        Span::styled(
            if zero {
                super::numbering::rewrite(&s.summary)
            } else {
                s.summary.clone()
            },
            base,
        ),
    ];
    if let Some(by) = s.by {
        spans.push(Span::styled(
            format!("  [{}]", by.as_str()),
            by_style(theme, Some(by)),
        ));
    }
    let line = Line::from(spans);
    if current {
        line.style(theme.selected())
    } else {
        line
    }
}

fn room_lines(state: &Map, theme: &Theme, height: usize) -> Vec<Line<'static>> {
    let view = state.get("group_view").and_then(Value::as_object);
    let mut out = Vec::new();
    if let Some(t) = view.and_then(|v| v.get("topic")).and_then(Value::as_str) {
        out.push(Line::from(vec![
            Span::styled("topic: ", theme.muted()),
            Span::styled(t.to_owned(), theme.text()),
        ]));
    }
    let msgs = view
        .and_then(|v| v.get("messages"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let room = height.saturating_sub(out.len());
    for m in &msgs[msgs.len().saturating_sub(room)..] {
        let text = m.get("text").map(Value::py_str).unwrap_or_default();
        if m.get("kind").and_then(Value::as_str) == Some("system") {
            out.push(Line::from(Span::styled(format!("· {text}"), theme.muted())));
        } else {
            let seat = m.get("seat").map(Value::py_str).unwrap_or_default();
            out.push(Line::from(vec![
                Span::styled(format!("seat {seat}: "), theme.accent()),
                Span::styled(text, theme.text()),
            ]));
        }
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled("(no messages yet)", theme.muted())));
    }
    out
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

fn text_of(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_owned()
}

/// `5 ミヅキ` for an agent of a werewolf state.
fn agent_name(agents: &[Value], idx: i64) -> String {
    agents
        .iter()
        .find(|a| int(a.get("idx")) == Some(idx))
        .map(|a| text_of(a.get("name")))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("agent {idx}"), |n| format!("{idx} {n}"))
}

fn wolf_role_style(theme: &Theme, role: &str) -> Style {
    if matches!(role, "WEREWOLF" | "POSSESSED") {
        theme.fg(Slot::Warn)
    } else {
        theme.accent()
    }
}

/// The `(agent, target)` pairs of a state's `votes` / `attack_votes`.
fn pairs(v: Option<&Value>) -> Vec<(i64, i64)> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((int(p.get("agent"))?, int(p.get("target"))?)))
                .collect()
        })
        .unwrap_or_default()
}

/// `a→b` for each pair, then the tally (`5×2`, most first).
fn vote_words(pairs: &[(i64, i64)]) -> Vec<String> {
    let mut words: Vec<String> = pairs.iter().map(|(a, t)| format!("{a}→{t}")).collect();
    let mut tally: Vec<(i64, usize)> = Vec::new();
    for (_, t) in pairs {
        match tally.iter_mut().find(|(x, _)| x == t) {
            Some((_, n)) => *n += 1,
            None => tally.push((*t, 1)),
        }
    }
    tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if pairs.len() > 1 {
        words.push("=".to_owned());
        words.extend(tally.iter().map(|(t, n)| format!("{t}×{n}")));
    }
    words
}

/// `label: w1  w2 …` wrapped at `width` (continuation lines indented).
fn wrapped(
    label: &str,
    words: &[String],
    width: usize,
    label_style: Style,
    style: Style,
) -> Vec<Line<'static>> {
    let head = format!("{label}: ");
    let indent = head.chars().count().min(width / 2);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut col = indent;
    for w in words {
        let n = w.chars().count();
        if !cur.is_empty() && col + 2 + n > width {
            out.push(std::mem::take(&mut cur));
            col = indent;
        }
        if !cur.is_empty() {
            cur.push_str("  ");
            col += 2;
        }
        cur.push_str(w);
        col += n;
    }
    out.push(cur);
    out.into_iter()
        .enumerate()
        .map(|(i, text)| {
            Line::from(vec![
                if i == 0 {
                    Span::styled(head.clone(), label_style)
                } else {
                    Span::raw(" ".repeat(indent))
                },
                Span::styled(text, style),
            ])
        })
        .collect()
}

/// A werewolf game's day as it stood (a `werewolf::replay` step's state):
/// the day and phase, every agent (alive ●, dead ✝, errored !) with its
/// role, the votes, the night's outcome, the result, then the day's talk as
/// far as it fits.
pub fn wolf_lines(state: &Map, theme: &Theme, width: usize, height: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let agents = state
        .get("agents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let day = int(state.get("day")).filter(|d| *d >= 0);
    let mut head = Vec::new();
    if let Some(d) = day {
        head.push(format!("day {d}"));
    }
    head.push(text_of(state.get("phase")));
    if let Some(a) = int(state.get("alive")) {
        head.push(format!("{a} of {} alive", agents.len()));
    }
    out.push(Line::from(Span::styled(head.join(" · "), theme.title())));
    // The agents, in as many columns as fit; without their names when
    // they would take more than half the height.
    let cells_of = |named: bool| -> Vec<(Vec<Span<'static>>, usize)> {
        agents
            .iter()
            .map(|a| {
                let status = a.get("status").and_then(Value::as_str).unwrap_or("alive");
                let dead = status == "dead";
                let (mark, style) = match status {
                    "dead" => ("✝", theme.muted()),
                    "error" => ("!", theme.fg(Slot::Error)),
                    _ => ("●", theme.fg(Slot::Ok)),
                };
                let idx = int(a.get("idx")).unwrap_or(0);
                let name = text_of(a.get("name"));
                let role = text_of(a.get("role"));
                let who = if named {
                    format!("{idx:>2} {name} ")
                } else {
                    format!("{idx:>2} ")
                };
                let mut w = 2 + Span::raw(who.as_str()).width() + Span::raw(role.as_str()).width();
                let mut spans = vec![
                    Span::styled(format!("{mark} "), style),
                    Span::styled(who, if dead { theme.muted() } else { theme.text() }),
                    Span::styled(
                        role.clone(),
                        if dead {
                            theme.muted()
                        } else {
                            wolf_role_style(theme, &role)
                        },
                    ),
                ];
                if status == "error" {
                    spans.push(Span::styled(" (errored)", theme.fg(Slot::Error)));
                    w += 10;
                }
                (spans, w)
            })
            .collect()
    };
    let layout = |cells: &[(Vec<Span<'static>>, usize)]| {
        let cell = cells.iter().map(|c| c.1).max().unwrap_or(0) + 2;
        let columns = (width / cell.max(1)).max(1);
        (cell, columns, cells.len().div_ceil(columns))
    };
    let mut cells = cells_of(true);
    let (mut cell, mut columns, rows) = layout(&cells);
    if rows > height / 2 {
        cells = cells_of(false);
        (cell, columns, _) = layout(&cells);
    }
    for row in cells.chunks(columns) {
        let mut spans = Vec::new();
        for (i, (c, w)) in row.iter().enumerate() {
            spans.extend(c.iter().cloned());
            if i + 1 < row.len() {
                spans.push(Span::raw(" ".repeat(cell.saturating_sub(*w))));
            }
        }
        out.push(Line::from(spans));
    }
    let kv = |k: &str, v: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{k}: "), theme.muted()),
            Span::styled(v, style),
        ])
    };
    let votes = pairs(state.get("votes"));
    if !votes.is_empty() {
        let round = int(state.get("vote_round")).unwrap_or(1);
        let label = if round > 1 {
            format!("votes (round {round})")
        } else {
            "votes".to_owned()
        };
        out.extend(wrapped(
            &label,
            &vote_words(&votes),
            width,
            theme.muted(),
            theme.text(),
        ));
    }
    let attack_votes = pairs(state.get("attack_votes"));
    if !attack_votes.is_empty() {
        out.extend(wrapped(
            "attack votes",
            &vote_words(&attack_votes),
            width,
            theme.muted(),
            theme.fg(Slot::Warn),
        ));
    }
    let mut last = Vec::new();
    if let Some(e) = state.get("executed").filter(|v| !v.is_null())
        && let Some(a) = int(e.get("agent"))
    {
        last.push(format!(
            "executed {} ({}, day {})",
            agent_name(agents, a),
            text_of(e.get("role")),
            int(e.get("day")).unwrap_or(0)
        ));
    }
    if let Some(e) = state.get("attacked").filter(|v| !v.is_null()) {
        last.push(match int(e.get("agent")) {
            None => "no attack".to_owned(),
            Some(a) if e.get("killed").and_then(Value::as_bool) == Some(true) => {
                format!("attacked {}", agent_name(agents, a))
            }
            Some(a) => format!("attack on {} guarded", agent_name(agents, a)),
        });
    }
    if !last.is_empty() {
        out.push(kv("last", last.join(" · "), theme.text()));
    }
    let mut night = Vec::new();
    if let Some(d) = state.get("divined").filter(|v| !v.is_null())
        && let (Some(a), Some(t)) = (int(d.get("agent")), int(d.get("target")))
    {
        night.push(format!(
            "{} divined {}: {} (night {})",
            agent_name(agents, a),
            agent_name(agents, t),
            text_of(d.get("species")),
            int(d.get("day")).unwrap_or(0)
        ));
    }
    if let Some(g) = state.get("guarded").filter(|v| !v.is_null())
        && let (Some(a), Some(t)) = (int(g.get("agent")), int(g.get("target")))
    {
        night.push(format!(
            "{} guarded {} (night {})",
            agent_name(agents, a),
            agent_name(agents, t),
            int(g.get("day")).unwrap_or(0)
        ));
    }
    if !night.is_empty() {
        out.push(kv("night", night.join(" · "), theme.muted()));
    }
    if let Some(r) = state.get("result").and_then(Value::as_object) {
        let w = text_of(r.get("winner"));
        let line = if w == "NONE" {
            "no winner".to_owned()
        } else {
            format!("{w} wins")
        };
        let count = |k: &str, one: &str, many: &str| {
            let n = int(r.get(k)).unwrap_or(0);
            format!("{n} {}", if n == 1 { one } else { many })
        };
        out.push(kv(
            "result",
            format!(
                "{line} ({} and {} alive)",
                count("alive_humans", "human", "humans"),
                count("alive_werewolves", "werewolf", "werewolves")
            ),
            theme.fg(Slot::Ok).add_modifier(Modifier::BOLD),
        ));
    }
    // The day's talk: the last lines that fit.
    let talk = state
        .get("talk")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let room = height.saturating_sub(out.len() + 1);
    if room > 0 {
        out.push(Line::from(Span::styled(
            if talk.is_empty() {
                "── nothing said today".to_owned()
            } else {
                "── today's talk".to_owned()
            },
            theme.muted(),
        )));
        for l in &talk[talk.len().saturating_sub(room)..] {
            let whisper = l.get("whisper").and_then(Value::as_bool) == Some(true);
            let text = text_of(l.get("text"));
            let quiet = matches!(text.as_str(), "Over" | "Skip");
            let who = text_of(l.get("name"));
            out.push(Line::from(vec![
                Span::styled(
                    format!("{who}{}: ", if whisper { " (whisper)" } else { "" }),
                    if whisper {
                        theme.fg(Slot::Warn)
                    } else {
                        theme.accent()
                    },
                ),
                Span::styled(text, if quiet { theme.muted() } else { theme.text() }),
            ]));
        }
    }
    out
}

impl ReplayPaint<'_> {
    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        f.render_widget(Clear, area);
        let t = self.timeline;
        let n = t.steps.len();
        // Wire rounds counted from 0 read from 1 (see `numbering`).
        let zero = t
            .protocol_name
            .as_deref()
            .and_then(crate::engine::whisper::Schema::for_protocol)
            .and_then(|s| s.match_key)
            .is_some_and(super::numbering::zero_based);
        let title = if t.werewolf {
            let agents = t
                .steps
                .last()
                .and_then(|s| s.state.get("agents"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            format!(" Replay · werewolf game, {agents} agents ")
        } else {
            format!(
                " Replay · {} as {} ",
                t.protocol_name.as_deref().unwrap_or("?"),
                t.role.as_deref().unwrap_or("?")
            )
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(title, theme.title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        if inner.height < 4 || inner.width < 20 {
            return;
        }
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Length(1),
                Constraint::Min(3),
            ])
            .split(inner);
        let step = t.steps.get(self.pos);
        let state_word = if self.playing {
            "▶ playing"
        } else {
            "⏸ paused"
        };
        let mut head = vec![
            Span::styled(
                format!("step {}/{n}", if n == 0 { 0 } else { self.pos + 1 }),
                theme.title(),
            ),
            Span::styled(
                format!(
                    "  {:.3}s / {:.3}s  ",
                    step.map(|s| s.t).unwrap_or(0.0),
                    t.duration()
                ),
                theme.muted(),
            ),
            Span::styled(
                format!("{state_word} {}", speed_label(self.speed)),
                theme.accent(),
            ),
        ];
        let marks = t.interventions().len();
        if marks > 0 {
            head.push(Span::styled(
                format!("  {marks} intervention(s): H person, W whisper"),
                theme.fg(Slot::Warn),
            ));
        }
        if t.werewolf {
            let end = match t.winner.as_deref() {
                Some("NONE") => "finished — no winner".to_owned(),
                Some(w) => format!("finished — {w} won"),
                None => "no result".to_owned(),
            };
            head.push(Span::styled(format!("  {end}"), theme.muted()));
            if t.skipped > 0 {
                head.push(Span::styled(
                    format!("  {} unreadable lines skipped", t.skipped),
                    theme.fg(Slot::Warn),
                ));
            }
            if t.truncated {
                head.push(Span::styled(
                    "  cut short: the log is too large",
                    theme.fg(Slot::Warn),
                ));
            }
        } else if let Some(end) = &t.end_reason {
            let ending = snapshot::ending(
                if t.finished { "closed" } else { "running" },
                Some(end),
                t.winner.as_deref(),
                t.role.as_deref().unwrap_or(""),
            );
            head.push(Span::styled(format!("  {ending}"), theme.muted()));
        }
        f.render_widget(Paragraph::new(Line::from(head)), rows[0]);
        f.render_widget(
            Paragraph::new(bar(t, self.pos, rows[1].width as usize, theme)),
            rows[1],
        );
        let body = rows[2];
        let wide = body.width >= 100;
        let parts = Layout::default()
            .direction(if wide {
                Direction::Horizontal
            } else {
                Direction::Vertical
            })
            .constraints(if wide {
                [Constraint::Percentage(45), Constraint::Percentage(55)]
            } else {
                [Constraint::Percentage(55), Constraint::Percentage(45)]
            })
            .split(body);
        let empty = Map::new();
        let mut state = step.map(|s| s.state.clone()).unwrap_or_default();
        if zero
            && let Some(Value::Object(ev)) = state.get_mut("last_event")
            && let Some(Value::String(sm)) = ev.get_mut("summary")
        {
            *sm = super::numbering::rewrite(sm).into();
        }
        let state = &state;
        if t.werewolf {
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(false))
                .title(Span::styled(" The day at this step ", theme.title()));
            let inner = block.inner(parts[0]);
            f.render_widget(block, parts[0]);
            f.render_widget(
                Paragraph::new(wolf_lines(
                    state,
                    theme,
                    inner.width as usize,
                    inner.height as usize,
                )),
                inner,
            );
        } else if t.room {
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(false))
                .title(Span::styled(" Room at this step ", theme.title()));
            let inner = block.inner(parts[0]);
            f.render_widget(block, parts[0]);
            f.render_widget(
                Paragraph::new(room_lines(state, theme, inner.height as usize)),
                inner,
            );
        } else {
            let view = snapshot::View {
                snapshot: state,
                session: &empty,
                window: None,
                cursor: None,
                mark: None,
                verdict: None,
            };
            view.draw(f, parts[0], theme, "at this step");
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(" Steps ", theme.title()));
        let list_area = block.inner(parts[1]);
        f.render_widget(block, parts[1]);
        let h = list_area.height as usize;
        let start = self.pos.saturating_sub(h / 2).min(n.saturating_sub(h));
        let lines: Vec<Line> = t
            .steps
            .iter()
            .enumerate()
            .skip(start)
            .take(h)
            .map(|(i, s)| step_line(i, s, i == self.pos, zero, theme))
            .collect();
        f.render_widget(Paragraph::new(lines), list_area);
    }
}
