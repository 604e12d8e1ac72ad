//! The decision prompt: appears while the local side has an open window
//! (or, in free-mode chat, as a message line), offers the legal choices
//! from the protocol's decision schema, and builds the decision body that
//! `palaver session decide` would write. Card games pick from the hand
//! (`card_pick`).

use super::card_pick::Pick;
use crate::json::{Map, Value};
use crate::obj;
use crate::session::decision::mono_now;
use crate::tui::note::Note;
use crate::tui::report::feed::OpenWindow;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Legal values of `field`, picked by number or arrows.
    Choices { field: String, choices: Vec<String> },
    /// A number in `[lo, hi]` typed in.
    Number {
        field: String,
        lo: Option<i64>,
        hi: Option<i64>,
    },
    /// A cell (or a column) on the board of the snapshot.
    Board {
        rows: usize,
        cols: usize,
        column_only: bool,
    },
    /// A line of text (chat).
    Text { field: String },
    /// A card of the hand, draw or pass (and the suit an 8 calls).
    Cards(Box<Pick>),
    /// Protocols without a schema: the decision body as JSON.
    Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub kind: Kind,
    /// `None` in free-mode chat (no windows: lines go to the inbox).
    pub window: Option<OpenWindow>,
    pub selected: usize,
    pub cursor: (usize, usize),
    pub input: String,
    /// Result of the last submission, shown under the choices.
    pub note: Option<Note>,
    /// The decision on file for this window (from any process): what it
    /// says and who wrote it.
    pub on_file: Option<String>,
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(Value::py_str).collect())
        .unwrap_or_default()
}

impl Prompt {
    /// The prompt for `window` under a protocol's decision schema.
    pub fn for_window(schema: Option<&Map>, window: OpenWindow) -> Prompt {
        let kind = match schema {
            None => Kind::Json,
            Some(sc) => {
                let setup = sc.get_str("setup_match_key") == Some(window.match_key.as_str());
                if sc.get("card_field").is_some() {
                    Kind::Cards(Box::new(Pick::new(window.match_value.as_i64())))
                } else if setup {
                    Kind::Number {
                        field: sc
                            .get_str("setup_value_field")
                            .unwrap_or("value")
                            .to_owned(),
                        lo: None,
                        hi: None,
                    }
                } else if sc.get("board") == Some(&Value::Bool(true)) {
                    let fields = strs(sc.get("value_fields"));
                    Kind::Board {
                        rows: sc.get("rows").and_then(Value::as_i64).unwrap_or(0).max(0) as usize,
                        cols: sc.get("cols").and_then(Value::as_i64).unwrap_or(0).max(0) as usize,
                        column_only: fields == ["col"],
                    }
                } else if sc.get("numeric") == Some(&Value::Bool(true)) {
                    let range: Vec<i64> = sc
                        .get("range")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_i64).collect())
                        .unwrap_or_default();
                    Kind::Number {
                        field: sc.get_str("value_field").unwrap_or("value").to_owned(),
                        lo: range.first().copied(),
                        hi: range.get(1).copied(),
                    }
                } else if sc.get("free_text") == Some(&Value::Bool(true)) {
                    Kind::Text {
                        field: sc.get_str("value_field").unwrap_or("text").to_owned(),
                    }
                } else {
                    let choices = strs(sc.get("choices"));
                    if choices.is_empty() {
                        Kind::Json
                    } else {
                        Kind::Choices {
                            field: sc.get_str("value_field").unwrap_or("choice").to_owned(),
                            choices,
                        }
                    }
                }
            }
        };
        Prompt {
            kind,
            window: Some(window),
            selected: 0,
            cursor: (0, 0),
            input: String::new(),
            note: None,
            on_file: None,
        }
    }

    /// The message line of a free-mode chat.
    pub fn chat() -> Prompt {
        Prompt {
            kind: Kind::Text {
                field: "text".into(),
            },
            window: None,
            selected: 0,
            cursor: (0, 0),
            input: String::new(),
            note: None,
            on_file: None,
        }
    }

    /// Fills in what a schema taken from hooks before their `init` leaves
    /// at zero: board size from the snapshot's board, number range from
    /// the session's options; a card prompt takes the newest table (and a
    /// prompt without a schema becomes one when the snapshot is a card
    /// table).
    pub fn complete(&mut self, snapshot: &Map, options: &Map) {
        if matches!(self.kind, Kind::Json) && super::cards::Table::of(snapshot).is_some() {
            let seq = self.window.as_ref().and_then(|w| w.match_value.as_i64());
            self.kind = Kind::Cards(Box::new(Pick::new(seq)));
        }
        match &mut self.kind {
            Kind::Cards(p) => p.update(snapshot),
            Kind::Board { rows, cols, .. } if *rows == 0 || *cols == 0 => {
                if let Some(b) = super::snapshot::board_of(snapshot) {
                    *rows = b.len();
                    *cols = b.first().map(Vec::len).unwrap_or(0);
                    self.cursor = (*rows / 2, *cols / 2);
                }
            }
            Kind::Number { lo, hi, field } if *lo == Some(0) && *hi == Some(0) => {
                if field == "number" {
                    *lo = options.get("range_min").and_then(Value::as_i64);
                    *hi = options.get("range_max").and_then(Value::as_i64);
                } else {
                    (*lo, *hi) = (None, None);
                }
            }
            _ => {}
        }
    }

    /// Takes a decisions.jsonl line if it belongs to this window.
    pub fn consider(&mut self, rec: &Map) {
        let Some(w) = &self.window else {
            return;
        };
        if rec.get(&w.match_key) != Some(&w.match_value) {
            return;
        }
        let origin = rec
            .get("_meta")
            .and_then(|m| m.get("origin"))
            .map(Value::py_str)
            .filter(|o| !o.is_empty())
            .unwrap_or_else(|| "unknown".into());
        let body: Vec<String> = rec
            .iter()
            .filter(|(k, _)| !k.starts_with('_') && **k != w.match_key)
            .map(|(k, v)| format!("{k}={}", v.py_str()))
            .collect();
        self.on_file = Some(format!("on file: {} (from {origin})", body.join(" ")));
    }

    /// Does the prompt take typed text (so digits are not choices)?
    pub fn takes_text(&self) -> bool {
        matches!(
            self.kind,
            Kind::Number { .. } | Kind::Text { .. } | Kind::Json
        )
    }

    pub fn left(&mut self) {
        match &self.kind {
            Kind::Choices { .. } => self.selected = self.selected.saturating_sub(1),
            Kind::Board { .. } => self.cursor.1 = self.cursor.1.saturating_sub(1),
            _ => {}
        }
    }
    pub fn right(&mut self) {
        match &self.kind {
            Kind::Choices { choices, .. } => {
                self.selected = (self.selected + 1).min(choices.len().saturating_sub(1))
            }
            Kind::Board { cols, .. } => {
                self.cursor.1 = (self.cursor.1 + 1).min(cols.saturating_sub(1))
            }
            _ => {}
        }
    }
    pub fn up(&mut self) {
        if let Kind::Board { column_only, .. } = self.kind
            && !column_only
        {
            self.cursor.0 = self.cursor.0.saturating_sub(1);
        } else {
            self.left();
        }
    }
    pub fn down(&mut self) {
        if let Kind::Board {
            rows, column_only, ..
        } = self.kind
            && !column_only
        {
            self.cursor.0 = (self.cursor.0 + 1).min(rows.saturating_sub(1));
        } else {
            self.right();
        }
    }

    /// Picks choice `n` (1-based); true when it exists.
    pub fn choose(&mut self, n: u8) -> bool {
        if let Kind::Choices { choices, .. } = &self.kind
            && (1..=choices.len()).contains(&(n as usize))
        {
            self.selected = n as usize - 1;
            return true;
        }
        false
    }

    /// The card pick, for a card game's prompt.
    pub fn cards(&self) -> Option<&Pick> {
        match &self.kind {
            Kind::Cards(p) => Some(p),
            _ => None,
        }
    }

    pub fn cards_mut(&mut self) -> Option<&mut Pick> {
        match &mut self.kind {
            Kind::Cards(p) => Some(p),
            _ => None,
        }
    }

    /// A decision body: the window's match key and value, then `fields`.
    pub fn decision(&self, fields: &Map) -> Map {
        let mut body = Map::new();
        if let Some(w) = &self.window {
            body.insert(w.match_key.clone(), w.match_value.clone());
        }
        for (k, v) in fields.iter() {
            body.insert(k, v.clone());
        }
        body
    }

    /// The decision body for the current selection, or why there is none.
    pub fn body(&self) -> Result<Map, String> {
        let mut body = Map::new();
        if let Some(w) = &self.window {
            body.insert(w.match_key.clone(), w.match_value.clone());
        }
        match &self.kind {
            Kind::Cards(p) => return p.selection().map(|m| self.decision(&m)),
            Kind::Choices { field, choices } => {
                let c = choices.get(self.selected).ok_or("no choice selected")?;
                body.insert(field.clone(), Value::from(c.as_str()));
            }
            Kind::Number { field, lo, hi } => {
                let n: i64 = self
                    .input
                    .trim()
                    .parse()
                    .map_err(|_| format!("type a whole number for {field}"))?;
                if lo.is_some_and(|lo| n < lo) || hi.is_some_and(|hi| n > hi) {
                    return Err(format!(
                        "{field} must be within {}..{}",
                        lo.map(|x| x.to_string()).unwrap_or_default(),
                        hi.map(|x| x.to_string()).unwrap_or_default()
                    ));
                }
                body.insert(field.clone(), Value::from(n));
            }
            Kind::Board { column_only, .. } => {
                if !column_only {
                    body.insert("row", Value::from(self.cursor.0 as i64));
                }
                body.insert("col", Value::from(self.cursor.1 as i64));
            }
            Kind::Text { field } => {
                if self.input.trim().is_empty() {
                    return Err("type a message first".into());
                }
                body.insert(field.clone(), Value::from(self.input.as_str()));
            }
            Kind::Json => {
                let v = crate::json::parse_str(&self.input).map_err(|e| format!("JSON: {e}"))?;
                let Value::Object(m) = v else {
                    return Err("the decision must be a JSON object".into());
                };
                for (k, v) in m.iter() {
                    body.insert(k, v.clone());
                }
            }
        }
        Ok(body)
    }

    /// Height the prompt needs.
    pub fn height(&self) -> u16 {
        6
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, focused: bool) {
        let title = match &self.window {
            Some(w) => format!(
                " Decide: {} ({}) ",
                super::numbering::label(&w.match_key, &w.match_value),
                w.mode
            ),
            None => " Message ".to_owned(),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(title, theme.title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut lines: Vec<Line> = Vec::new();
        match &self.kind {
            Kind::Choices { choices, .. } => {
                let mut spans = Vec::new();
                for (i, c) in choices.iter().enumerate() {
                    let label = format!("[{} {c}]", i + 1);
                    spans.push(if i == self.selected {
                        Span::styled(label, theme.selected())
                    } else {
                        Span::styled(label, theme.accent())
                    });
                    spans.push(Span::raw(" "));
                }
                lines.push(Line::from(spans));
            }
            Kind::Number { field, lo, hi } => {
                let range = match (lo, hi) {
                    (Some(a), Some(b)) => format!(" ({a}..{b})"),
                    _ => String::new(),
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("{field}{range}: "), theme.muted()),
                    Span::styled(self.input.clone(), theme.text()),
                    Span::styled(" ", theme.cursor()),
                ]));
            }
            Kind::Board { column_only, .. } => {
                let at = if *column_only {
                    format!("column {}", self.cursor.1)
                } else {
                    format!("row {}, column {}", self.cursor.0, self.cursor.1)
                };
                lines.push(Line::from(vec![
                    Span::styled("cursor on the board: ", theme.muted()),
                    Span::styled(at, theme.accent()),
                ]));
            }
            Kind::Cards(p) => lines.extend(p.lines(theme)),
            Kind::Text { .. } | Kind::Json => {
                let hint = if matches!(self.kind, Kind::Json) {
                    "decision JSON: "
                } else {
                    "> "
                };
                lines.push(Line::from(vec![
                    Span::styled(hint, theme.muted()),
                    Span::styled(self.input.clone(), theme.text()),
                    Span::styled(" ", theme.cursor()),
                ]));
            }
        }
        lines.push(self.countdown(theme));
        if let Some(f) = &self.on_file {
            lines.push(Line::from(Span::styled(f.clone(), theme.accent())));
        }
        if let Some(Note { ok, text: note }) = &self.note {
            lines.push(Line::from(Span::styled(
                note.clone(),
                if *ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            )));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
    }

    fn countdown(&self, theme: &Theme) -> Line<'static> {
        let Some(w) = &self.window else {
            return Line::from(Span::styled(
                "Enter sends · /quit ends the chat",
                theme.muted(),
            ));
        };
        let now = mono_now();
        let release = (w.release_at - now).max(0.0);
        let deadline = (w.deadline_at - now).max(0.0);
        let text = match w.mode.as_str() {
            "hybrid" => format!("{release:.0}s to decide, then the strategy plays"),
            "human" => format!("{deadline:.0}s left · human: no default"),
            other => format!("{other}: {deadline:.0}s left"),
        };
        let style = if deadline < 5.0 {
            theme.fg(Slot::Warn)
        } else {
            theme.muted()
        };
        Line::from(Span::styled(text, style))
    }
}

/// The body `palaver session decide` would write, for a chat line.
pub fn chat_line(text: &str) -> Map {
    obj! { "text" => text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(key: &str, v: i64) -> OpenWindow {
        OpenWindow {
            match_key: key.into(),
            match_value: Value::from(v),
            mode: "human".into(),
            release_at: 0.0,
            deadline_at: 0.0,
        }
    }

    #[test]
    fn rps_choices_build_the_decide_body() {
        let schema = crate::protocols::native_hooks_for_alias("rps-v1")
            .unwrap()
            .decision_schema();
        let mut p = Prompt::for_window(schema.as_ref(), win("round", 2));
        assert!(p.choose(2));
        assert!(!p.choose(7));
        let b = p.body().unwrap();
        assert_eq!(
            crate::json::canonical::to_string(&Value::Object(b)),
            r#"{"choice":"paper","round":2}"#
        );
    }

    #[test]
    fn numbers_are_checked_against_the_range() {
        let schema = crate::protocols::native_hooks_for_alias("guess-number-v1")
            .unwrap()
            .decision_schema();
        let mut p = Prompt::for_window(schema.as_ref(), win("attempt", 1));
        p.complete(&Map::new(), &obj! { "range_min" => 1, "range_max" => 100 });
        p.input = "abc".into();
        assert!(p.body().is_err());
        p.input = "100000".into();
        assert!(p.body().unwrap_err().contains("within"));
        p.input = "42".into();
        assert_eq!(p.body().unwrap().get("number"), Some(&Value::from(42)));
        let mut setup = Prompt::for_window(schema.as_ref(), win("setup", 0));
        setup.input = "7".into();
        assert_eq!(setup.body().unwrap().get("secret"), Some(&Value::from(7)));
    }

    #[test]
    fn board_cursor_stays_on_the_board() {
        let schema = crate::protocols::native_hooks_for_alias("connect4-v1")
            .unwrap()
            .decision_schema();
        let mut p = Prompt::for_window(schema.as_ref(), win("turn", 0));
        let row: Vec<Value> = (0..7).map(|_| Value::from("")).collect();
        let board: Vec<Value> = (0..6).map(|_| Value::Array(row.clone())).collect();
        p.complete(&obj! { "board" => board }, &Map::new());
        assert_eq!(p.cursor, (3, 3));
        for _ in 0..20 {
            p.right();
        }
        let b = p.body().unwrap();
        assert_eq!(b.get("col"), Some(&Value::from(6)));
        assert!(b.get("row").is_none());
    }
}
