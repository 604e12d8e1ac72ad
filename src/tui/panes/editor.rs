//! The strategy editor: strategy.json in a text area, checked as JSON as
//! you type, with presets from the protocol's strategy shapes. Saving
//! replaces the file (set); merging deep-merges into it. Both go through
//! `StrategyFile`, so strategy_events.jsonl records them.

use crate::json::{Map, Value};
use crate::obj;
use crate::tui::note::Note;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui_textarea::TextArea;
use std::path::PathBuf;

pub struct Editor {
    pub child: PathBuf,
    pub area: TextArea<'static>,
    pub presets: Vec<(String, Map)>,
    pub preset_ix: Option<usize>,
    /// The parse result of the current text.
    pub parsed: Result<Map, String>,
    pub note: Option<Note>,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Editor")
            .field("child", &self.child)
            .field("text", &self.text())
            .finish()
    }
}

/// Presets for a protocol from its decision schema (the shapes its
/// strategy logic reads; see the runtime reference §4.4).
pub fn presets(schema: Option<&Map>) -> Vec<(String, Map)> {
    let mut out: Vec<(String, Map)> = Vec::new();
    let Some(sc) = schema else {
        return out;
    };
    let choices: Vec<Value> = sc
        .get("choices")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let str_of = |k: &str| sc.get(k).and_then(Value::as_str).map(str::to_owned);
    if sc.contains_key("card_field") {
        // crazy-eights-v1, briscola-v1: a fixed heuristic plays; it reads
        // no strategy keys, so the one preset says so.
        out.push((
            "automatic player (card games read no strategy keys)".into(),
            Map::new(),
        ));
    } else if sc.get("board") == Some(&Value::Bool(true)) {
        // gomoku-v1, connect4-v1, reversi-v1 (board::rules::auto_move).
        out.push((
            "greedy: win, block, then the best cell".into(),
            obj! { "mode" => "greedy" },
        ));
        out.push(("random legal moves".into(), obj! { "mode" => "random" }));
    } else if sc.get("numeric") == Some(&Value::Bool(true)) {
        let field = str_of("value_field").unwrap_or_else(|| "number".into());
        if field == "number" {
            // guess-number-v1.
            out.push(("bisect the range".into(), obj! { "mode" => "bisect" }));
            out.push((
                "always guess 50".into(),
                obj! { "mode" => "fixed", "number" => 50 },
            ));
            out.push((
                "sequence".into(),
                obj! { "mode" => "seq", "sequence" => vec![Value::from(25), Value::from(50), Value::from(75)] },
            ));
        } else {
            // weak-wins-all: bids.
            out.push(("spread the points evenly".into(), obj! { "mode" => "even" }));
            out.push((
                format!("always {field} 1"),
                obj! { "mode" => "fixed", field.as_str() => 1 },
            ));
            out.push((
                "a third of what is left".into(),
                obj! { "mode" => "percent", "percent" => 33 },
            ));
            out.push((
                "sequence".into(),
                obj! { "mode" => "seq", "sequence" => vec![Value::from(1), Value::from(2), Value::from(3)] },
            ));
            out.push((format!("random {field}s"), obj! { "mode" => "random" }));
        }
    } else if !choices.is_empty() {
        let field = str_of("strategy_field").unwrap_or_else(|| "fixed".into());
        let hero = field == "move";
        if hero {
            // hero-duel-v1: the default plays the strongest affordable move.
            out.push((
                "greedy: the strongest affordable move".into(),
                obj! { "mode" => "greedy" },
            ));
        }
        for c in &choices {
            out.push((
                format!("always {}", c.py_str()),
                obj! { "mode" => "fixed", field.as_str() => c.clone() },
            ));
        }
        out.push(("random".into(), obj! { "mode" => "random" }));
        out.push((
            "sequence".into(),
            obj! { "mode" => "seq", "sequence" => Value::Array(choices.clone()) },
        ));
        if !hero {
            // rps-v1, coin-flip-v1 (choice.rs); countering needs rock-paper-scissors.
            let rps = choices.iter().any(|c| c.as_str() == Some("rock"));
            for p in [
                "mirror_previous_opponent",
                "counter_previous_opponent",
                "repeat_own_previous",
            ] {
                if p == "counter_previous_opponent" && !rps {
                    continue;
                }
                out.push((
                    p.replace('_', " "),
                    obj! { "mode" => "policy", "policy" => p },
                ));
            }
            // The bundled policy scripts that fit a choice game (the
            // counters need what beats what: rock-paper-scissors).
            for id in ["weighted_mirror", "counter_once", "conditional_counter"] {
                if id != "weighted_mirror" && !rps {
                    continue;
                }
                out.push((
                    format!("script: {}", id.replace('_', " ")),
                    obj! { "mode" => "script", "script_id" => id, "params" => Map::new() },
                ));
            }
        }
    }
    out
}

/// A preset for each of the user's policy scripts in the session's engine
/// dir (`policy_scripts/<id>.*`), by name.
pub fn user_scripts(child: &std::path::Path) -> Vec<(String, Map)> {
    let mut ids: Vec<String> = std::fs::read_dir(child.join("policy_scripts"))
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
                .filter(|id| {
                    !id.is_empty()
                        && id
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.dedup();
    ids.into_iter()
        .map(|id| {
            (
                format!("script: {id} (yours)"),
                obj! { "mode" => "script", "script_id" => id.as_str(), "params" => Map::new(), "timeout_ms" => 1000 },
            )
        })
        .collect()
}

impl Editor {
    pub fn new(child: PathBuf, current: &Map, presets: Vec<(String, Map)>) -> Editor {
        let text = crate::session::files::pretty(&Value::Object(current.clone()));
        let mut e = Editor {
            child,
            area: TextArea::from(text.lines().map(str::to_owned).collect::<Vec<_>>()),
            presets,
            preset_ix: None,
            parsed: Ok(current.clone()),
            note: None,
        };
        e.reparse();
        e
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn reparse(&mut self) {
        let t = self.text();
        self.parsed = match crate::json::parse_str(&t) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err("strategy.json must be a JSON object".into()),
            Err(e) => Err(e.to_string()),
        };
    }

    pub fn input(&mut self, key: crossterm::event::KeyEvent) {
        self.area.input(key);
        self.reparse();
        self.note = None;
    }

    pub fn paste(&mut self, s: &str) {
        self.area.insert_str(s);
        self.reparse();
    }

    /// Replaces the text with the next preset.
    pub fn next_preset(&mut self) {
        if self.presets.is_empty() {
            self.note = Some(Note::err("this protocol has no strategy presets"));
            return;
        }
        let i = self
            .preset_ix
            .map(|i| (i + 1) % self.presets.len())
            .unwrap_or(0);
        self.preset_ix = Some(i);
        let text = crate::session::files::pretty(&Value::Object(self.presets[i].1.clone()));
        self.area = TextArea::from(text.lines().map(str::to_owned).collect::<Vec<_>>());
        self.reparse();
        self.note = Some(Note::ok(format!("preset: {}", self.presets[i].0)));
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let r = super::dialogs::centered(area, 80, area.height.saturating_sub(2));
        f.render_widget(Clear, r);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(" Strategy (strategy.json) ", theme.title()));
        let inner = b.inner(r);
        f.render_widget(b, r);
        if inner.height < 3 {
            return;
        }
        let text_area = Rect {
            height: inner.height - 2,
            ..inner
        };
        f.render_widget(&self.area, text_area);
        let status = match (&self.parsed, &self.note) {
            (Err(e), _) => Line::from(Span::styled(format!("✗ {e}"), theme.fg(Slot::Error))),
            (Ok(_), Some(Note { ok, text: n })) => Line::from(Span::styled(
                n.clone(),
                if *ok {
                    theme.fg(Slot::Ok)
                } else {
                    theme.fg(Slot::Error)
                },
            )),
            (Ok(_), None) => Line::from(Span::styled("✓ valid JSON", theme.fg(Slot::Ok))),
        };
        let hints = Line::from(Span::styled(
            "C-s save (replace) · C-g merge · C-p next preset · Esc close",
            theme.muted(),
        ));
        f.render_widget(
            Paragraph::new(vec![status, hints]),
            Rect {
                y: inner.y + inner.height - 2,
                height: 2,
                ..inner
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rps_presets_follow_the_reference_shapes() {
        let schema = crate::protocols::native_hooks_for_alias("rps-v1")
            .unwrap()
            .decision_schema();
        let p = presets(schema.as_ref());
        let paper = p.iter().find(|(n, _)| n == "always paper").unwrap();
        assert_eq!(
            crate::json::canonical::to_string(&Value::Object(paper.1.clone())),
            r#"{"fixed":"paper","mode":"fixed"}"#
        );
        assert!(p.iter().any(|(_, m)| m.get("policy").is_some()));
        assert!(p.iter().any(|(n, m)| n == "script: counter once"
            && m.get("mode").and_then(Value::as_str) == Some("script")));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("policy_scripts")).unwrap();
        std::fs::write(dir.path().join("policy_scripts/my_bot.py"), "").unwrap();
        std::fs::write(dir.path().join("policy_scripts/bad name.py"), "").unwrap();
        let u = user_scripts(dir.path());
        assert_eq!(u.len(), 1, "{u:?}");
        assert_eq!(u[0].0, "script: my_bot (yours)");
    }

    #[test]
    fn the_editor_checks_json_as_you_type() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let mut e = Editor::new(PathBuf::from("/nowhere"), &Map::new(), vec![]);
        assert!(e.parsed.is_ok());
        e.input(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
        assert!(e.parsed.is_err());
        e.next_preset();
        assert!(e.note.as_ref().is_some_and(|n| !n.ok));
    }
}
