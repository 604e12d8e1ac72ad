//! classical-mahjong-v1 at the table pane: what its events say in the log,
//! the wall and the claim window in the state line, each seat's wind,
//! dealer mark, points and tiles in hand, the board (the discard on offer
//! and how many have answered for it; every seat's open melds and its
//! discards, the newest last and the one on offer marked; the last hand's
//! result), your hand sorted and grouped by suit with the drawn tile set
//! apart, and the action line: on your turn the discard (a picked tile and
//! `Enter`) with a win or a concealed kong as numbered choices, in a claim
//! window you may answer the legal claims numbered with their priority.
//!
//! Tiles are written as `session::table::mahjong` names them (`1m`–`9m`,
//! `1p`–`9p`, `1s`–`9s`, `東南西北`, `中發白`, every tile two cells wide;
//! melds as one word, `123m`, `555p`, a concealed kong `(東東東東)`), so a
//! hand of fourteen fits a 46-cell pane on one row.

use super::*;
use crate::session::table::{Mahjong, MahjongResult, Tile, meld_label, wind_label};

/// The label column of the board lines.
const LABEL: usize = 9;
/// Wide enough for the words in full.
const WIDE: usize = 80;

/// `your`, `bot-1's`.
fn whose(who: &str) -> String {
    if who == "you" {
        "your".to_owned()
    } else {
        format!("{who}'s")
    }
}

/// `four sets and a pair`, `seven pairs`, `thirteen orphans`.
fn win_words(kind: &str) -> String {
    match kind {
        "standard" => "four sets and a pair".to_owned(),
        "" => "a win".to_owned(),
        k => k.replace('_', " "),
    }
}

/// `winning hand 1, self draw 1, concealed hand 1`.
fn pattern_words(patterns: &[(String, i64)]) -> String {
    patterns
        .iter()
        .map(|(code, n)| format!("{} {n}", code.replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `bot-1 wins on your discard (four sets and a pair): 2 points —
/// winning hand 1, all simples 1; you pay 6`.
fn result_words(r: &MahjongResult, name: &dyn Fn(&str) -> String) -> String {
    if r.kind == "wall_exhausted" {
        return "the wall ran out: no winner".to_owned();
    }
    let winner = name(&r.winner);
    let points = match r.points {
        1 => "1 point".to_owned(),
        n => format!("{n} points"),
    };
    let (how, pays) = if r.kind == "self_draw" {
        let own = if winner == "you" { "your" } else { "its" };
        (
            format!("on {own} own draw"),
            format!("each other seat pays {}", r.points),
        )
    } else {
        let by = name(&r.discarder);
        let paid = r
            .delta
            .iter()
            .find(|(k, _)| *k == r.discarder)
            .map_or(r.points.saturating_mul(3), |(_, d)| -d);
        (
            format!("on {} discard", whose(&by)),
            format!("{} {paid}", does(by, "pays")),
        )
    };
    format!(
        "{} {how} ({}): {points} — {}; {pays}",
        does(winner, "wins"),
        win_words(&r.win_kind),
        pattern_words(&r.patterns)
    )
}

/// The tiles of an event's list.
fn event_tiles(v: Option<&Value>) -> Vec<Tile> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(16).filter_map(Tile::parse).collect())
        .unwrap_or_default()
}

pub(super) fn mahjong_event(ev: &Map, name: &dyn Fn(&str) -> String) -> Option<String> {
    let who = |k: &str| name(ev.get_str(k).unwrap_or(""));
    let int = |k: &str| ev.get(k).and_then(Value::as_i64).unwrap_or(0);
    Some(match ev.get_str("kind")? {
        "mahjong_discard" => {
            let tile = ev
                .get("card")
                .and_then(Tile::parse)
                .map_or_else(|| "a tile".to_owned(), |t| t.label());
            format!("{} {tile}", does(who("public_key"), "discards"))
        }
        "claim_response_received" => format!(
            "{} the claim window ({} in)",
            does(who("public_key"), "answers"),
            int("response_count")
        ),
        "claim_resolved" => match ev.get_str("claim").unwrap_or("none") {
            "none" => "nobody claims the discard".to_owned(),
            "win" => format!("{} the discard to win", does(who("winner"), "claims")),
            k => format!(
                "{} the discard for a {}",
                does(who("winner"), "takes"),
                k.replace('_', " ")
            ),
        },
        k @ ("pung" | "kong" | "chow") => {
            let tiles = meld_label(&event_tiles(ev.get("cards")));
            let from = match ev.get_str("from") {
                Some(f) if !f.is_empty() => format!(" from {}", name(f)),
                _ => String::new(),
            };
            format!("{} a {k} {tiles}{from}", does(who("owner"), "melds"))
        }
        "concealed_kong" => format!(
            "{} a concealed kong ({})",
            does(who("owner"), "declares"),
            meld_label(&event_tiles(ev.get("cards")))
        ),
        "replacement_draw" => format!("{} a replacement tile", does(who("public_key"), "draws")),
        "mahjong_draw" => format!("{} a tile", does(who("public_key"), "draws")),
        "self_draw" | "discard_win" => {
            result_words(&MahjongResult::parse(&Value::Object(ev.clone()))?, name)
        }
        "mahjong_wall_exhausted" => "the wall is empty: the hand ends with no winner".to_owned(),
        "mahjong_match_complete" => {
            let score = |pk: &str| {
                ev.get("scores")
                    .and_then(|s| s.get(pk))
                    .and_then(Value::as_i64)
                    .map(|n| format!(" with {n} points"))
                    .unwrap_or_default()
            };
            match ev.get_str("winner").unwrap_or("") {
                "draw" | "" => {
                    let tied: Vec<String> = ev
                        .get("winners")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .take(4)
                        .filter_map(Value::as_str)
                        .map(name)
                        .collect();
                    if tied.is_empty() {
                        "the match is a draw".to_owned()
                    } else {
                        format!("the match is a draw: {} tie", tied.join(", "))
                    }
                }
                w => format!("{} the match{}", does(name(w), "wins"), score(w)),
            }
        }
        "mahjong_hand_started" => format!(
            "hand {} is dealt: {} the dealer",
            int("hand_number"),
            does(who("dealer"), "is")
        ),
        "mahjong_hand_restarted_after_leader_change" => format!(
            "the leader changed: hand {} is dealt again",
            int("hand_number")
        ),
        _ => return shared_event(ev, name),
    })
}

/// The tiles an action's `card_ids` names in the hand.
fn action_tiles(a: &Value, m: &Mahjong) -> Vec<Tile> {
    let ids: Vec<&str> = a
        .get("card_ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    m.tiles_of(&ids)
}

/// What a mahjong choice says: `pass`, `win on 5p`, `win (self-draw)`,
/// `pung 555p`, `kong 5555p`, `chow 456p`, `concealed kong 東東東東`,
/// `discard 5p`.
pub(super) fn mahjong_choice(a: &Value, v: &TableView) -> String {
    let Some(m) = v.mahjong() else {
        return a.get_str("kind").unwrap_or("?").replace('_', " ");
    };
    let offered = m.window.as_ref().map(|w| w.tile.clone());
    let with_offer = |mut t: Vec<Tile>| {
        t.extend(offered.clone());
        meld_label(&t)
    };
    match a.get_str("kind").unwrap_or("?") {
        "pass_claim" => "pass".to_owned(),
        "win" => match &offered {
            Some(t) if v.phase == "claim" => format!("win on {}", t.label()),
            _ => "win (self-draw)".to_owned(),
        },
        k @ ("pung" | "kong" | "chow") => format!("{k} {}", with_offer(action_tiles(a, m))),
        "concealed_kong" => format!("concealed kong {}", meld_label(&action_tiles(a, m))),
        "discard" => {
            let id = a.get_str("card_id").unwrap_or("");
            let t = m.tile(id).map_or_else(|| "a tile".to_owned(), Tile::label);
            format!("discard {t}")
        }
        k => k.replace('_', " "),
    }
}

/// A tile's colour: characters red, dots the accent, bamboo green, the
/// red and green dragons theirs.
fn tile_style(theme: &Theme, t: &Tile) -> Style {
    match (t.group(), t.code.as_str()) {
        (0, _) | (4, "red") => theme.fg(Slot::Error),
        (1, _) => theme.accent(),
        (2, _) | (4, "green") => theme.fg(Slot::Ok),
        _ => theme.text(),
    }
}

/// Where each tile of a hand goes: rows of (index, column) within `width`
/// cells. A tile takes a lead cell (the cursor's mark) and its label; a
/// suit starts one cell further on when one row holds them so, and the
/// drawn tile (`drawn`: its index) two cells apart.
pub(super) fn tile_layout(
    hand: &[Tile],
    drawn: Option<usize>,
    width: u16,
) -> Vec<Vec<(usize, u16)>> {
    let lay = |spaced: bool| {
        let width = width.max(6);
        let mut rows: Vec<Vec<(usize, u16)>> = Vec::new();
        let mut row: Vec<(usize, u16)> = Vec::new();
        let mut x: u16 = 0;
        for (i, t) in hand.iter().enumerate() {
            let w = 1 + Span::raw(t.label()).width() as u16;
            let gap = if row.is_empty() {
                0
            } else if drawn == Some(i) {
                2
            } else {
                u16::from(spaced && hand[i - 1].group() != t.group())
            };
            if !row.is_empty() && x + gap + w > width {
                rows.push(std::mem::take(&mut row));
                x = 0;
            }
            let at = if row.is_empty() { 0 } else { x + gap };
            row.push((i, at));
            x = at + w;
        }
        if !row.is_empty() {
            rows.push(row);
        }
        rows
    };
    let spaced = lay(true);
    if spaced.len() <= 1 {
        return spaced;
    }
    let tight = lay(false);
    if tight.len() < spaced.len() {
        tight
    } else {
        spaced
    }
}

/// A text cut to `max` cells (a tile like `東` takes two), ending in `…`.
fn cut_cells(s: &mut String, max: usize) {
    if Span::raw(s.as_str()).width() <= max {
        return;
    }
    let mut out = String::new();
    for ch in s.chars() {
        out.push(ch);
        if Span::raw(out.as_str()).width() + 1 > max {
            out.pop();
            break;
        }
    }
    *s = out + "…";
}

/// Spans cut to `w` cells, ending in `…` when they do not fit.
fn clip(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
    if spans_width(&spans) <= w {
        return Line::from(spans);
    }
    let room = w.saturating_sub(1);
    let mut out = Vec::new();
    let mut used = 0;
    for sp in spans {
        let n = sp.width();
        if used + n > room {
            let mut part = String::new();
            for ch in sp.content.chars() {
                part.push(ch);
                if used + Span::raw(part.as_str()).width() > room {
                    part.pop();
                    break;
                }
            }
            let style = sp.style;
            if !part.is_empty() {
                out.push(Span::styled(part, style));
            }
            out.push(Span::styled("…", style));
            break;
        }
        used += n;
        out.push(sp);
    }
    Line::from(out)
}

impl TablePaint<'_> {
    fn mj_label(&self, theme: &Theme, s: &str) -> Span<'static> {
        Span::styled(pad(s, LABEL - 1) + " ", theme.muted())
    }

    /// The seats the open window still waits for, by name, when the log
    /// tells who has answered since the discard (its count agreeing with
    /// the view's); else `None`.
    fn mahjong_awaited(&self, v: &TableView, m: &Mahjong) -> Option<Vec<String>> {
        let w = m.window.as_ref()?;
        let mut answered: Vec<&str> = Vec::new();
        let mut found = false;
        for e in self.log.iter().rev() {
            let LogEntry::Event { event, .. } = e else {
                continue;
            };
            match event.get_str("kind") {
                Some("claim_response_received") => {
                    answered.push(event.get_str("public_key").unwrap_or(""));
                }
                Some("mahjong_discard") => {
                    found = event.get_str("public_key") == Some(w.by.as_str());
                    break;
                }
                _ => {}
            }
        }
        if !found || answered.len() as i64 != w.answered {
            return None;
        }
        Some(
            v.seats
                .iter()
                .map(|s| s.public_key.as_str())
                .filter(|pk| *pk != w.by && !answered.contains(pk))
                .filter(|pk| *pk != v.you || w.my_claim.is_none())
                .map(|pk| self.name(pk))
                .collect(),
        )
    }

    /// `waiting for bot-2 and ada`, or `2 answers to come`.
    fn mahjong_awaiting_words(&self, v: &TableView, m: &Mahjong) -> String {
        let left = m
            .window
            .as_ref()
            .map_or(0, |w| (w.required - w.answered).max(0));
        match self.mahjong_awaited(v, m) {
            Some(names) if !names.is_empty() => {
                let names = match names.as_slice() {
                    [one] => one.clone(),
                    [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                    [] => String::new(),
                };
                format!("waiting for {names}")
            }
            _ if left == 1 => "1 answer to come".to_owned(),
            _ => format!("{left} answers to come"),
        }
    }

    /// The state line's part, before the phase: the tiles left in the
    /// wall (`wall 57 · `).
    pub(super) fn mahjong_state(&self, theme: &Theme, v: &TableView) -> Vec<Span<'static>> {
        let Some(m) = v.mahjong() else {
            return Vec::new();
        };
        vec![
            Span::styled(format!("wall {}", m.wall), theme.text()),
            Span::styled(" · ", theme.muted()),
        ]
    }

    /// A seat's wind, the dealer's mark, its points and tiles in hand,
    /// within `room` cells.
    pub(super) fn mahjong_seat(
        &self,
        theme: &Theme,
        v: &TableView,
        s: &Seat,
        base: Style,
        room: usize,
    ) -> Vec<Span<'static>> {
        let Some(m) = v.mahjong() else {
            return Vec::new();
        };
        let dealer = !m.dealer.is_empty() && m.dealer == s.public_key;
        let wide = room >= 40;
        let mut spans = vec![Span::styled(
            wind_label(&s.role),
            theme.text().add_modifier(Modifier::BOLD),
        )];
        if wide {
            spans.push(Span::styled(format!(" {:<5}", s.role), theme.muted()));
        }
        spans.push(Span::styled(
            if dealer { " dealer" } else { "       " },
            theme.fg(Slot::Warn).add_modifier(Modifier::BOLD),
        ));
        let points = s.score.map(|n| n.to_string()).unwrap_or_default();
        spans.push(Span::styled(
            if wide {
                format!(" {points:>6} points")
            } else {
                format!(" {points:>5}")
            },
            base,
        ));
        if let Some(n) = s.cards_left {
            spans.push(Span::styled(format!(" {n:>2} tiles"), theme.muted()));
        }
        if wide && let Some(seat) = m.seat(&s.public_key) {
            let melds = seat.melds.len();
            if melds > 0 {
                spans.push(Span::styled(
                    format!(" · {melds} meld{}", if melds == 1 { "" } else { "s" }),
                    theme.muted(),
                ));
            }
        }
        clip(spans, room).spans
    }

    /// The board: the discard on offer, every seat's melds and river, the
    /// last hand's result.
    pub(super) fn mahjong_lines(&self, theme: &Theme, v: &TableView, w: u16) -> Vec<Line<'static>> {
        let Some(m) = v.mahjong() else {
            return Vec::new();
        };
        let w = usize::from(w);
        let strong = theme.fg(Slot::Warn).add_modifier(Modifier::BOLD);
        let mut out = Vec::new();
        if let Some(win) = &m.window {
            let mut spans = vec![
                self.mj_label(theme, "on offer"),
                Span::styled(format!("{} ", whose(&self.name(&win.by))), theme.text()),
                Span::styled(win.tile.label(), strong),
                Span::styled(
                    format!(" · {}/{} answered", win.answered, win.required),
                    theme.muted(),
                ),
            ];
            let mine = if win.by == v.you {
                String::new()
            } else if let Some(k) = &win.my_claim {
                format!(
                    " · you answered {}",
                    k.replace("_claim", "").replace('_', " ")
                )
            } else if win.may_claim {
                " · you may claim it".to_owned()
            } else {
                String::new()
            };
            // When there is room: the action line says it too.
            if !mine.is_empty() && spans_width(&spans) + mine.chars().count() <= w {
                spans.push(Span::styled(mine, theme.fg(Slot::Warn)));
            }
            out.push(clip(spans, w));
        }
        for s in &m.seats {
            let mine = s.public_key == v.you;
            let name = if mine {
                "you".to_owned()
            } else {
                self.name(&s.public_key)
            };
            let mut spans = vec![self.mj_label(theme, &name)];
            for meld in &s.melds {
                let style = if mine { theme.accent() } else { theme.text() };
                spans.push(Span::styled(
                    meld.label(),
                    style.add_modifier(Modifier::BOLD),
                ));
                spans.push(Span::raw(" "));
            }
            if !s.melds.is_empty() {
                spans.push(Span::styled("· ", theme.muted()));
            }
            if s.river.is_empty() {
                spans.push(Span::styled("no discards", theme.muted()));
                out.push(clip(spans, w));
                continue;
            }
            // The river, newest last: as many of the newest as fit.
            let offered = m
                .window
                .as_ref()
                .filter(|win| win.by == s.public_key)
                .map(|win| win.tile.card_id.as_str());
            let room = w.saturating_sub(spans_width(&spans));
            let mut tail: Vec<Span<'static>> = Vec::new();
            let mut used = 0;
            for (i, t) in s.river.iter().enumerate().rev() {
                let last = i + 1 == s.river.len();
                let marked = last && offered == Some(t.card_id.as_str());
                let text = if marked {
                    format!("[{}]", t.label())
                } else {
                    t.label()
                };
                let need = Span::raw(text.as_str()).width() + usize::from(!tail.is_empty());
                // Room for `… ` when older tiles are left out.
                let more = if i > 0 { 2 } else { 0 };
                if used + need + more > room {
                    tail.push(Span::styled("… ", theme.muted()));
                    break;
                }
                if !tail.is_empty() {
                    tail.push(Span::raw(" "));
                }
                let style = if marked {
                    strong.add_modifier(Modifier::REVERSED)
                } else {
                    tile_style(theme, t)
                };
                tail.push(Span::styled(text, style));
                used += need;
            }
            tail.reverse();
            spans.extend(tail);
            out.push(clip(spans, w));
        }
        if let Some(r) = &m.last_result {
            let name = |pk: &str| self.name(pk);
            let text = if w >= WIDE {
                result_words(r, &name)
            } else if r.kind == "wall_exhausted" {
                "the wall ran out: no winner".to_owned()
            } else {
                format!("{} {} points", does(self.name(&r.winner), "wins"), r.points)
            };
            out.push(clip(
                vec![
                    self.mj_label(theme, "last"),
                    Span::styled(text, theme.muted()),
                ],
                w,
            ));
        }
        out
    }

    /// Your hand: a head (the count, the tile drawn, what is picked), then
    /// the tiles sorted and grouped by suit with the drawn one apart, the
    /// picked ones raised above the rest.
    pub(super) fn mahjong_hand_lines(
        &self,
        theme: &Theme,
        v: &TableView,
        w: u16,
    ) -> Vec<Line<'static>> {
        let Some(m) = v.mahjong() else {
            return Vec::new();
        };
        let empty = BTreeSet::new();
        let selected = self.pick.selected.unwrap_or(&empty);
        let picked: Vec<Tile> = m
            .hand
            .iter()
            .filter(|t| selected.contains(&t.card_id))
            .cloned()
            .collect();
        let drawn = m
            .drawn
            .as_ref()
            .and_then(|id| m.hand.iter().position(|t| t.card_id == *id));
        let mut head = vec![
            Span::styled("your hand ", theme.muted()),
            Span::styled(format!("{} tiles", m.hand.len()), theme.text()),
        ];
        if let Some(t) = drawn.map(|i| &m.hand[i]) {
            head.push(Span::styled(" · drew ", theme.muted()));
            head.push(Span::styled(
                t.label(),
                tile_style(theme, t).add_modifier(Modifier::BOLD),
            ));
        }
        if !picked.is_empty() {
            let shown: Vec<String> = picked.iter().map(Tile::label).collect();
            head.push(Span::styled(
                format!(" · picked {}", shown.join(" ")),
                theme.accent(),
            ));
        }
        let mut out = vec![clip(head, usize::from(w))];
        if m.hand.is_empty() {
            return out;
        }
        let cursor_on = self.focused;
        for row in tile_layout(&m.hand, drawn, w) {
            let raised = row
                .iter()
                .any(|(i, _)| selected.contains(&m.hand[*i].card_id));
            let mut up: Vec<Span<'static>> = Vec::new();
            let mut down: Vec<Span<'static>> = Vec::new();
            let (mut x_up, mut x_down) = (0u16, 0u16);
            for (i, x) in row {
                let t = &m.hand[i];
                let picked = selected.contains(&t.card_id);
                let cursor = cursor_on && i == self.pick.cursor;
                let (line, at) = if picked {
                    (&mut up, &mut x_up)
                } else {
                    (&mut down, &mut x_down)
                };
                if x > *at {
                    line.push(Span::raw(" ".repeat(usize::from(x - *at))));
                }
                line.push(Span::styled(
                    if cursor { "›" } else { " " },
                    theme.accent().add_modifier(Modifier::BOLD),
                ));
                let mut style = tile_style(theme, t).add_modifier(Modifier::BOLD);
                if cursor {
                    style = theme.cursor();
                } else if picked {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                let label = t.label();
                *at = x + 1 + Span::raw(label.as_str()).width() as u16;
                line.push(Span::styled(label, style));
            }
            if raised {
                out.push(Line::from(up));
            }
            out.push(Line::from(down));
        }
        out
    }

    /// Waiting in a claim window: for whom, and what you did.
    pub(super) fn mahjong_waiting(&self, v: &TableView) -> Option<String> {
        let m = v.mahjong()?;
        let w = m.window.as_ref().filter(|_| v.phase == "claim")?;
        let waiting = self.mahjong_awaiting_words(v, m);
        let tile = w.tile.label();
        Some(if w.by == v.you {
            format!("you discarded {tile}: {waiting}")
        } else {
            let by = whose(&self.name(&w.by));
            match w.my_claim.as_deref() {
                Some("pass_claim") => format!("you passed on {by} {tile}: {waiting}"),
                Some(k) => format!(
                    "you claimed {by} {tile} ({}): {waiting}",
                    k.replace('_', " ")
                ),
                None => format!("the claim window on {by} {tile}: {waiting}"),
            }
        })
    }

    /// The action line on your turn: the discard and the numbered choices
    /// (a win, concealed kongs), or the claims you may make on the
    /// discard on offer with their priority.
    pub(super) fn mahjong_action(
        &self,
        theme: &Theme,
        v: &TableView,
        w: u16,
    ) -> Vec<Span<'static>> {
        let Some(m) = v.mahjong() else {
            return Vec::new();
        };
        let muted = theme.muted();
        let head = theme.fg(Slot::Warn).add_modifier(Modifier::BOLD);
        let wide = usize::from(w) >= WIDE;
        let mut line = Vec::new();
        let claim = v.phase == "claim";
        if let Some(win) = m.window.as_ref().filter(|_| claim) {
            line.push(Span::styled(
                format!(
                    "claim {} {}? ",
                    whose(&self.name(&win.by)),
                    win.tile.label()
                ),
                head,
            ));
        } else {
            let empty = BTreeSet::new();
            let selected = self.pick.selected.unwrap_or(&empty);
            let picked: Vec<&Tile> = m
                .hand
                .iter()
                .filter(|t| selected.contains(&t.card_id))
                .collect();
            let enter = match picked.as_slice() {
                [] => match m.hand.get(self.pick.cursor) {
                    Some(t) => format!("discards {}", t.label()),
                    None => "discards".to_owned(),
                },
                [one] => format!("discards {}", one.label()),
                [a, rest @ ..] if rest.len() == 3 && rest.iter().all(|t| t.code == a.code) => {
                    "declares the kong".to_owned()
                }
                _ => "takes one tile (or four of a kind)".to_owned(),
            };
            line.push(Span::styled("your discard ", head));
            line.push(Span::styled(
                format!("{} picks", self.key(Command::SelectCard)),
                muted,
            ));
            line.push(Span::styled(
                format!(" · {} {enter}", self.key(Command::Submit)),
                muted,
            ));
            if !self.pick.choices.is_empty() {
                line.push(Span::styled(" · or ", muted));
            }
        }
        let all = self.pick.choices;
        let cur = self.pick.choice_cursor.min(all.len().saturating_sub(1));
        let start = cur / CHOICE_PAGE * CHOICE_PAGE;
        let name = |pk: &str| self.name(pk);
        for (n, a) in all.iter().enumerate().skip(start).take(CHOICE_PAGE) {
            let mut text = format!("{} {}", n - start + 1, choice_label(a, v, &name, wide));
            cut_cells(&mut text, usize::from(w).saturating_sub(2).max(1));
            // The mark is the claim Enter sends; on your turn Enter
            // discards, so no choice is marked.
            let style = if claim && n == cur {
                theme.cursor()
            } else {
                theme.accent()
            };
            line.push(Span::styled(format!("[{text}]"), style));
            line.push(Span::raw(" "));
        }
        let pages = all.len().div_ceil(CHOICE_PAGE);
        if pages > 1 {
            let (up, down) = (self.key(Command::Up), self.key(Command::Down));
            line.push(Span::styled(
                format!("page {}/{pages} ({up}/{down}) · ", start / CHOICE_PAGE + 1),
                muted,
            ));
        }
        if claim {
            let order = if wide {
                "win beats pung/kong beats chow"
            } else {
                "win > pung/kong > chow"
            };
            if line.last().is_some_and(|sp| sp.content == " ") {
                line.pop();
            }
            line.push(Span::styled(format!(" · {order}"), muted));
            line.push(Span::styled(
                format!(" · {} sends the marked one", self.key(Command::Submit)),
                muted,
            ));
            line.push(Span::styled(
                format!(" · {} passes", self.key(Command::PassTurn)),
                muted,
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests;
