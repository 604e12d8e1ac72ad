//! The battlefield of a tank-battle-v1 session (live or replayed): the map
//! with each cell two columns wide (steel, brick, water, bush and floor in
//! the theme's tile colours), both teams' tanks with their facing and hp,
//! shells and power-ups; the score line; one side's units; the order
//! cursor; and the note or command line at the bottom. Draws straight into
//! the frame's buffer from a typed `World`: no files, no JSON.

use crate::protocols::tank::{
    BRICK, BUSH, Dir, PickupKind, SCALE, STEEL, Team, UnitId, WATER, World,
};
use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

/// The units list's width (beside the map).
pub const LIST_W: u16 = 18;
/// Ticks per second (tank-battle-v1 runs at 10 Hz).
pub const TICK_HZ: i64 = 10;

/// What the battlefield draws.
pub struct BattlePaint<'a> {
    /// The world to draw, or why there is none (`Err`).
    pub world: Result<&'a World, &'a str>,
    pub title: &'a str,
    /// Whose units the list shows (the side played, or the opponent
    /// while spectating); `None`: the host's, and no "you".
    pub side: Option<Team>,
    /// The list shows the opponent's units.
    pub spectating: bool,
    /// The unit the next order applies to.
    pub selected: Option<UnitId>,
    /// The enemy unit an attack order goes to.
    pub target: Option<UnitId>,
    /// The order cursor (row, col).
    pub cursor: Option<(usize, usize)>,
    /// Right of the score line: the phase, or the replay's position.
    pub status: &'a str,
    /// The command line being typed.
    pub line: Option<&'a str>,
    pub note: Option<&'a Note>,
    /// A line of key hints at the bottom of the units list.
    pub hint: &'a str,
    pub focused: bool,
}

/// `m:ss.t` of a tick at 10 Hz.
pub fn clock(tick: i64) -> String {
    let tenths = tick.max(0);
    let secs = tenths / TICK_HZ;
    format!("{}:{:02}.{}", secs / 60, secs % 60, tenths % TICK_HZ)
}

/// The cell (row, col) a fixed-point point is in, inside the map.
pub fn cell_of(w: &World, x: i64, y: i64) -> (usize, usize) {
    let r = y.div_euclid(SCALE).clamp(0, w.grid.rows as i64 - 1);
    let c = x.div_euclid(SCALE).clamp(0, w.grid.cols as i64 - 1);
    (r as usize, c as usize)
}

fn facing(d: Dir) -> &'static str {
    match d {
        Dir::Up => "▲",
        Dir::Down => "▼",
        Dir::Left => "◀",
        Dir::Right => "▶",
        Dir::None => "■",
    }
}

fn hp_digit(hp: i64) -> char {
    match hp {
        0..=9 => char::from(b'0' + hp as u8),
        _ => '+',
    }
}

fn team_slot(t: Team) -> Slot {
    match t {
        Team::Host => Slot::Host,
        Team::Guest => Slot::Guest,
    }
}

/// Alive tanks and hp of a side.
pub fn side_totals(w: &World, t: Team) -> (usize, i64) {
    w.tanks
        .iter()
        .filter(|k| k.team() == t && k.alive())
        .fold((0, 0), |(n, hp), k| (n + 1, hp + k.hp))
}

impl BattlePaint<'_> {
    /// The smallest inner area the map and its score line fit in; the
    /// units list (right of the map) and the note line (below it) are
    /// drawn when there is room for them too.
    pub fn needs(w: &World) -> (u16, u16) {
        let width = (w.grid.cols as u16).saturating_mul(2);
        let height = w.grid.rows as u16 + 1;
        (width, height)
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(self.focused))
            .title(Line::styled(
                format!(" Battlefield {}", self.title),
                theme.title(),
            ));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let w = match self.world {
            Ok(w) => w,
            Err(why) => {
                let p = Paragraph::new(why.to_owned())
                    .style(theme.muted())
                    .wrap(Wrap { trim: true });
                f.render_widget(p, inner);
                return;
            }
        };
        let (need_w, need_h) = Self::needs(w);
        if inner.width < need_w || inner.height < need_h {
            let msg = format!(
                "The terminal is too small for the battlefield: it needs {}×{} cells here, \
                 it has {}×{}. Enlarge the window (or make the font smaller).",
                need_w + 2,
                need_h + 2,
                area.width,
                area.height
            );
            let p = Paragraph::new(msg)
                .style(theme.fg(Slot::Warn))
                .wrap(Wrap { trim: true });
            f.render_widget(p, inner);
            return;
        }
        let buf = f.buffer_mut();
        self.score_line(buf, inner, w, theme);
        let map = Rect {
            x: inner.x,
            y: inner.y + 1,
            width: w.grid.cols as u16 * 2,
            height: w.grid.rows as u16,
        };
        draw_map(buf, map, w, theme);
        self.overlay(buf, map, w, theme);
        let with_note = inner.height > need_h;
        if inner.width >= need_w + 1 + LIST_W {
            let list = Rect {
                x: map.right() + 1,
                y: map.y,
                width: inner.right().saturating_sub(map.right() + 1),
                height: inner.height.saturating_sub(1 + u16::from(with_note)),
            };
            self.units(buf, list, w, theme);
        }
        if with_note {
            let bottom = Rect {
                y: inner.bottom() - 1,
                height: 1,
                ..inner
            };
            self.bottom_line(buf, bottom, theme);
        }
    }

    fn score_line(&self, buf: &mut Buffer, inner: Rect, w: &World, theme: &Theme) {
        let (ha, hh) = side_totals(w, Team::Host);
        let (ga, gh) = side_totals(w, Team::Guest);
        let mut x = inner.x;
        let y = inner.y;
        let right = inner.right();
        let mut put = |s: &str, st: Style| {
            let (nx, _) = buf.set_stringn(x, y, s, right.saturating_sub(x) as usize, st);
            x = nx;
        };
        let n = w.rules.team_size;
        put(
            &format!("HOST {ha}/{n} {hh}hp"),
            theme.fg(Slot::Host).add_modifier(Modifier::BOLD),
        );
        put(" vs ", theme.muted());
        put(
            &format!("GUEST {ga}/{n} {gh}hp"),
            theme.fg(Slot::Guest).add_modifier(Modifier::BOLD),
        );
        put(
            &format!(" · tick {}/{} {}", w.tick, w.rules.max_ticks, clock(w.tick)),
            theme.text(),
        );
        if w.game_over {
            let who = match w.winner.as_str() {
                "draw" => " · draw".to_owned(),
                s => format!(" · {s} wins"),
            };
            put(&who, theme.fg(Slot::Ok).add_modifier(Modifier::BOLD));
        }
        if !self.status.is_empty() {
            put(&format!(" · {}", self.status), theme.muted());
        }
    }

    fn overlay(&self, buf: &mut Buffer, map: Rect, w: &World, theme: &Theme) {
        let at = |r: usize, c: usize| (map.x + c as u16 * 2, map.y + r as u16);
        for p in w.pickups.iter().filter(|p| p.active) {
            let (r, c) = cell_of(w, p.x, p.y);
            let (x, y) = at(r, c);
            let s = match p.kind {
                PickupKind::Repair => "+r",
                PickupKind::Speed => "+s",
                PickupKind::Rapid => "+f",
            };
            buf.set_string(x, y, s, theme.fg(Slot::Ok).add_modifier(Modifier::BOLD));
        }
        for b in &w.bullets {
            let (r, c) = cell_of(w, b.x, b.y);
            let (x, y) = at(r, c);
            let glyph = match b.dir {
                Dir::Up | Dir::Down => "╎ ",
                _ => "╌ ",
            };
            buf.set_string(
                x,
                y,
                glyph,
                theme.fg(team_slot(b.team)).add_modifier(Modifier::BOLD),
            );
        }
        for t in w.tanks.iter().filter(|t| t.alive()) {
            let (r, c) = cell_of(w, t.x, t.y);
            let (x, y) = at(r, c);
            let mut st = theme.fg(team_slot(t.team())).add_modifier(Modifier::BOLD);
            if Some(t.id) == self.selected || Some(t.id) == self.target {
                st = st.add_modifier(Modifier::REVERSED);
            }
            buf.set_string(x, y, facing(t.facing), st);
            buf.set_string(x + 1, y, hp_digit(t.hp).to_string(), st);
        }
        if let Some((r, c)) = self.cursor
            && r < w.grid.rows
            && c < w.grid.cols
        {
            let (x, y) = at(r, c);
            for dx in 0..2 {
                let cell = &mut buf[(x + dx, y)];
                cell.set_style(theme.cursor());
                if cell.symbol() == " " && dx == 0 {
                    cell.set_symbol("+");
                }
            }
        }
    }

    fn units(&self, buf: &mut Buffer, area: Rect, w: &World, theme: &Theme) {
        let side = self.side.unwrap_or(Team::Host);
        let whose = match (self.side, self.spectating) {
            (None, _) => format!("{} units", side.as_str()),
            (Some(_), false) => format!("your units ({})", side.as_str()),
            (Some(_), true) => format!("their units ({})", side.as_str()),
        };
        let width = area.width as usize;
        let mut y = area.y;
        let bottom = area.bottom();
        buf.set_stringn(area.x, y, &whose, width, theme.fg(team_slot(side)));
        y += 1;
        for t in w.tanks.iter().filter(|t| t.team() == side) {
            if y >= bottom {
                break;
            }
            let (r, c) = cell_of(w, t.x, t.y);
            let mark = if Some(t.id) == self.selected {
                "›"
            } else {
                " "
            };
            let (text, st) = if t.alive() {
                (
                    format!("{mark}{} {} hp{} r{r} c{c}", t.id, facing(t.facing), t.hp),
                    theme.text(),
                )
            } else {
                (format!("{mark}{} destroyed", t.id), theme.muted())
            };
            let st = if Some(t.id) == self.selected {
                theme.selected()
            } else {
                st
            };
            buf.set_stringn(area.x, y, &text, width, st);
            y += 1;
        }
        let mut extra: Vec<(String, Style)> = Vec::new();
        extra.push((String::new(), theme.text()));
        let order_to = match self.selected {
            Some(u) => format!("orders: {u}"),
            None => "orders: all units".to_owned(),
        };
        extra.push((order_to, theme.accent()));
        if let Some(t) = self.target {
            extra.push((format!("target: {t}"), theme.accent()));
        }
        if let Some((r, c)) = self.cursor {
            extra.push((format!("cursor: r{r} c{c}"), theme.accent()));
        }
        if !self.hint.is_empty() {
            extra.push((String::new(), theme.text()));
            for part in self.hint.split(" · ") {
                extra.push((part.to_owned(), theme.muted()));
            }
        }
        for (s, st) in extra {
            if y >= bottom {
                break;
            }
            buf.set_stringn(area.x, y, &s, width, st);
            y += 1;
        }
    }

    fn bottom_line(&self, buf: &mut Buffer, area: Rect, theme: &Theme) {
        let width = area.width as usize;
        if let Some(line) = self.line {
            let s = format!("order> {line}▏");
            // Show the end of a long line.
            let skip = s.chars().count().saturating_sub(width);
            let s: String = s.chars().skip(skip).collect();
            buf.set_stringn(area.x, area.y, &s, width, theme.accent());
        } else if let Some(n) = self.note {
            let st = theme.fg(if n.ok { Slot::Ok } else { Slot::Error });
            buf.set_stringn(area.x, area.y, &n.text, width, st);
        }
    }
}

/// The tiles, two columns a cell.
fn draw_map(buf: &mut Buffer, map: Rect, w: &World, theme: &Theme) {
    let steel = theme.fg(Slot::Steel);
    let brick = theme.fg(Slot::Brick);
    let water = theme.fg(Slot::Water);
    let bush = theme.fg(Slot::Bush);
    let floor = theme.muted();
    for r in 0..w.grid.rows {
        let y = map.y + r as u16;
        for c in 0..w.grid.cols {
            let x = map.x + c as u16 * 2;
            let (s, st) = match w.grid.tile(r as i64, c as i64) {
                STEEL => ("██", steel),
                BRICK => ("▓▓", brick),
                WATER => ("≈≈", water),
                BUSH => ("\"\"", bush),
                _ => ("· ", floor),
            };
            buf.set_string(x, y, s, st);
        }
    }
}
