//! What a coach sees around the attached session besides the snapshot and
//! the feed: the peer banner (silent / back), the round-by-round history
//! and the protocol's own detail records (details.jsonl).

use crate::json::{Map, Value};
use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::collections::VecDeque;

/// A one-line banner over the attached session: (ok?, text).
pub fn draw_banner(f: &mut Frame, area: Rect, theme: &Theme, banner: &Note) {
    let style = if banner.ok {
        theme.fg(Slot::Ok)
    } else {
        theme.fg(Slot::Warn).add_modifier(Modifier::BOLD)
    };
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(banner.text.clone(), style))),
        area,
    );
}

fn field(m: &Map, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| m.get(k).filter(|v| !v.is_null()))
        .map(Value::py_str)
        .unwrap_or_default()
}

/// One history row of a details.jsonl record: a round's result or a board
/// move; `None` for other records.
pub fn history_row(rec: &Map, me: &str) -> Option<String> {
    let kind = rec.get("type").and_then(Value::as_str)?;
    let you = |side: &str| if side == me { " (you)" } else { "" };
    match kind {
        "round_result" => {
            let round = field(rec, &["round"]);
            let h = field(rec, &["host_choice", "host_move", "host_bid"]);
            let g = field(rec, &["guest_choice", "guest_move", "guest_bid"]);
            let w = field(rec, &["winner"]);
            let won = match w.as_str() {
                "" => String::new(),
                "draw" | "none" => "draw".into(),
                side => format!("{side}{} won", you(side)),
            };
            let score = match (rec.get("host_wins"), rec.get("guest_wins")) {
                (Some(a), Some(b)) => format!("  {}-{}", a.py_str(), b.py_str()),
                _ => String::new(),
            };
            Some(format!(
                "R{round:<3} host{} {h:<9} guest{} {g:<9} → {won}{score}",
                you("host"),
                you("guest")
            ))
        }
        "move" | "pass" => {
            let turn = field(rec, &["turn"]);
            let who = field(rec, &["player"]);
            let at = if kind == "pass" {
                "passes".to_owned()
            } else if rec.get("row").is_some() {
                format!("row {} col {}", field(rec, &["row"]), field(rec, &["col"]))
            } else {
                format!("col {}", field(rec, &["col"]))
            };
            Some(format!("T{turn:<3} {who}{} {at}", you(&who)))
        }
        "guess" | "hint" => Some(format!(
            "#{:<3} {} → {}",
            field(rec, &["attempt"]),
            field(rec, &["number"]),
            field(rec, &["result"])
        )),
        _ => None,
    }
}

/// The round-by-round history (H): newest at the bottom.
pub fn draw_history(f: &mut Frame, area: Rect, theme: &Theme, details: &VecDeque<Map>, me: &str) {
    let rows: Vec<String> = details.iter().filter_map(|r| history_row(r, me)).collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(false))
        .title(Span::styled(
            format!(" History · {} (H hides) ", rows.len()),
            theme.title(),
        ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let lines: Vec<Line> = if rows.is_empty() {
        vec![Line::from(Span::styled(
            "No round results yet (details.jsonl).",
            theme.muted(),
        ))]
    } else {
        rows.iter()
            .skip(rows.len().saturating_sub(h))
            .map(|r| Line::from(Span::styled(r.clone(), theme.text())))
            .collect()
    };
    f.render_widget(Paragraph::new(lines), inner);
}

/// One details.jsonl record for the feed's details view.
pub fn detail_line(rec: &Map) -> (String, String) {
    let ts = rec
        .get("ts")
        .and_then(Value::as_str)
        .and_then(|t| t.get(11..19))
        .unwrap_or("--:--:--")
        .to_owned();
    let text = match rec.get("summary").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => {
            format!("{}: {s}", field(rec, &["type"]))
        }
        _ => crate::json::canonical::to_string_ordered(&Value::Object(rec.clone())),
    };
    (ts, text.chars().take(200).collect())
}

/// The feed pane showing details.jsonl records (d toggles back).
pub fn draw_details(
    f: &mut Frame,
    area: Rect,
    theme: &Theme,
    focused: bool,
    details: &VecDeque<Map>,
) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Span::styled(
            " Feed · details.jsonl (d: back to events) ",
            theme.title(),
        ))
        .title_bottom(
            Line::from(Span::styled(
                format!(" {} records ", details.len()),
                theme.muted(),
            ))
            .right_aligned(),
        );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let lines: Vec<Line> = if details.is_empty() {
        vec![Line::from(Span::styled(
            "No detail records yet: the protocol writes them as the game goes.",
            theme.muted(),
        ))]
    } else {
        details
            .iter()
            .skip(details.len().saturating_sub(h))
            .map(|r| {
                let (ts, text) = detail_line(r);
                Line::from(vec![
                    Span::styled(format!("{ts} "), theme.muted()),
                    Span::styled("◆ ", theme.accent()),
                    Span::styled(text, theme.text()),
                ])
            })
            .collect()
    };
    f.render_widget(Paragraph::new(lines), inner);
}
