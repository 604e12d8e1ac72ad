//! Dialogs over the panes: join an invitation, host a new one (an options
//! form generated from the spec's parameters, validated as you type), the
//! one-line search box, and the help overlay generated from the keymap.

use crate::engine::ControlMode;
use crate::json::{Map, Value};
use crate::library::Library;
use crate::spec::Spec;
use crate::tui::keymap::{Context, Keymap};
use crate::tui::report::rows::Invitation;
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

/// A humane think time for a person deciding by hand, in seconds.
pub const HUMANE_THINK_SECONDS: i64 = 30;

pub fn next_mode(m: ControlMode, back: bool) -> ControlMode {
    let all = [
        ControlMode::Human,
        ControlMode::Hybrid,
        ControlMode::Autonomous,
    ];
    let i = all.iter().position(|x| *x == m).unwrap_or(0);
    all[if back { (i + 2) % 3 } else { (i + 1) % 3 }]
}

/// Edits a one-line text field with a key: a plain character is typed
/// (control and alt chords are not text), Backspace deletes the last one.
pub fn edit_line(line: &mut String, k: &crossterm::event::KeyEvent) {
    use crossterm::event::{KeyCode, KeyModifiers};
    match k.code {
        KeyCode::Backspace => {
            line.pop();
        }
        KeyCode::Char(c)
            if !k
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            line.push(c)
        }
        _ => {}
    }
}

/// A centred rectangle of at most `w`×`h` inside `r`.
pub fn centered(r: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(r.width);
    let h = h.min(r.height);
    Rect {
        x: r.x + (r.width - w) / 2,
        y: r.y + (r.height - h) / 2,
        width: w,
        height: h,
    }
}

fn frame<'a>(title: &str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(true))
        .title(Span::styled(format!(" {title} "), theme.title()))
}

fn mode_spans(mode: ControlMode, theme: &Theme) -> Vec<Span<'static>> {
    [
        ControlMode::Human,
        ControlMode::Hybrid,
        ControlMode::Autonomous,
    ]
    .iter()
    .flat_map(|m| {
        let label = format!(" {} ", m.as_str());
        [
            if *m == mode {
                Span::styled(label, theme.selected())
            } else {
                Span::styled(label, theme.muted())
            },
            Span::raw(" "),
        ]
    })
    .collect()
}

/// The think time an invitation gives a person, when it is short.
pub fn short_think_time(spec: Option<&Spec>, options: &Map) -> Option<i64> {
    let param = spec?
        .get("parameters")?
        .as_object()?
        .get("max_think_seconds")?
        .as_object()?;
    let given = options.get("max_think_seconds").and_then(Value::as_i64);
    let timing_default = spec?
        .get("timing")
        .and_then(|t| t.get("max_think_seconds"))
        .and_then(Value::as_i64);
    let default = param
        .get("default")
        .and_then(Value::as_i64)
        .or(timing_default)
        .unwrap_or(3);
    let t = given.unwrap_or(default);
    (t < 10).then_some(t)
}

/// Join an invitation: pick the control mode.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinDialog {
    pub invitation: Invitation,
    pub mode: ControlMode,
}

impl JoinDialog {
    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, spec: Option<&Spec>) {
        let r = centered(area, 64, 12);
        f.render_widget(Clear, r);
        let b = frame("Join", theme);
        let inner = b.inner(r);
        f.render_widget(b, r);
        let i = &self.invitation;
        let mut lines = vec![
            Line::from(vec![
                Span::styled(format!("{} ", i.alias), theme.accent()),
                Span::styled(
                    format!("hosted by {} ({})", i.nickname, i.host_control_mode),
                    theme.text(),
                ),
            ]),
            Line::from(Span::styled(
                format!("options: {}", i.options_line()),
                theme.muted(),
            )),
            match (&i.host, i.installed) {
                (_, false) => Line::from(Span::styled(
                    "not installed here: Enter fetches it from the server",
                    theme.fg(Slot::Warn),
                )),
                (Some(h), true) => {
                    Line::from(Span::styled(format!("host: {}", h.line()), theme.muted()))
                }
                (None, true) => Line::from(""),
            },
            Line::from(
                [
                    vec![Span::styled("play as ", theme.text())],
                    mode_spans(self.mode, theme),
                ]
                .concat(),
            ),
        ];
        let room = spec.is_some_and(|s| s.flow_mode() == "authoritative_group");
        let hint = match self.mode {
            _ if room => "a room: you write in it from its compose line",
            ControlMode::Human => "you decide every move in the prompt",
            ControlMode::Hybrid => "coaching: the strategy plays unless you decide first",
            ControlMode::Autonomous => "the strategy plays; you watch",
        };
        lines.push(Line::from(Span::styled(hint, theme.muted())));
        if self.mode == ControlMode::Human
            && let Some(t) = short_think_time(spec, &i.options)
        {
            lines.push(Line::from(Span::styled(
                format!("note: this invitation gives {t} s per decision — be quick, or host your own with more"),
                theme.fg(Slot::Warn),
            )));
        }
        lines.push(Line::from(Span::styled(
            "←/→ mode · Enter join · Esc cancel",
            theme.muted(),
        )));
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
    }
}

/// One parameter row of the host form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// "integer 1..9999", "enum a|b", …
    pub describe: String,
    pub kind: String,
    pub value: String,
    pub note: Option<String>,
}

/// Host a new invitation.
#[derive(Debug, Clone)]
pub struct HostForm {
    /// Library aliases that can be hosted here (native hooks; the rooms
    /// palaver has rules for).
    pub aliases: Vec<String>,
    pub alias_ix: usize,
    pub mode: ControlMode,
    pub profiles: Vec<(String, Map)>,
    pub profile_ix: Option<usize>,
    pub fields: Vec<Field>,
    /// Row focus: 0 protocol, 1 mode, 2 profile, 3.. fields.
    pub row: usize,
    pub error: Option<String>,
    /// Protocols found on the community and installed from the form's
    /// picker: (alias, spec), also in `aliases`.
    pub extra: Vec<(String, Spec)>,
    /// What runs the protocol picked last (from its install).
    pub picked: Option<String>,
}

fn describe(p: &Map) -> (String, String) {
    let kind = p
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
        .to_owned();
    let mut d = kind.clone();
    let (lo, hi) = (p.get("min"), p.get("max"));
    if lo.is_some() || hi.is_some() {
        d.push_str(&format!(
            " {}..{}",
            lo.map(Value::py_str).unwrap_or_default(),
            hi.map(Value::py_str).unwrap_or_default()
        ));
    }
    if let Some(vals) = p
        .get("values")
        .or_else(|| p.get("enum"))
        .and_then(Value::as_array)
    {
        d.push(' ');
        d.push_str(&vals.iter().map(Value::py_str).collect::<Vec<_>>().join("|"));
    }
    (kind, d)
}

impl HostForm {
    pub fn new(mode: ControlMode) -> HostForm {
        let lib = Library::bundled();
        let aliases: Vec<String> = lib
            .entries()
            .iter()
            .filter(|e| {
                crate::protocols::native_hooks_for_alias(&e.alias).is_some()
                    || crate::protocols::GROUP_NATIVE.contains(&e.alias.as_str())
            })
            .map(|e| e.alias.clone())
            .collect();
        let mut f = HostForm {
            alias_ix: aliases.iter().position(|a| a == "rps-v1").unwrap_or(0),
            aliases,
            mode,
            profiles: Vec::new(),
            profile_ix: None,
            fields: Vec::new(),
            row: 0,
            error: None,
            extra: Vec::new(),
            picked: None,
        };
        f.load_protocol();
        f
    }

    /// Selects `alias` (a protocol the picker found): one the form lists
    /// already, or one installed from the community with its `spec`.
    pub fn select_protocol(&mut self, alias: &str, spec: Option<Spec>) -> bool {
        if let Some(i) = self.aliases.iter().position(|a| a == alias) {
            self.alias_ix = i;
        } else if let Some(s) = spec {
            self.extra.push((alias.to_owned(), s));
            self.aliases.push(alias.to_owned());
            self.alias_ix = self.aliases.len() - 1;
        } else {
            return false;
        }
        self.row = 0;
        self.load_protocol();
        true
    }

    pub fn alias(&self) -> &str {
        self.aliases
            .get(self.alias_ix)
            .map(String::as_str)
            .unwrap_or("")
    }

    pub fn spec(&self) -> Option<&Spec> {
        let alias = self.alias();
        match self.extra.iter().find(|(a, _)| a == alias) {
            Some((_, s)) => Some(s),
            None => crate::library::bundled_spec(alias),
        }
    }

    fn load_protocol(&mut self) {
        let lib = Library::bundled();
        let entry = lib
            .entries()
            .iter()
            .find(|e| e.alias == self.alias())
            .cloned();
        self.profiles = entry
            .as_ref()
            .map(|e| e.profile_options())
            .unwrap_or_default();
        let default = entry.and_then(|e| e.default_profile);
        self.profile_ix = default.and_then(|d| self.profiles.iter().position(|(k, _)| *k == d));
        self.fields = self
            .spec()
            .and_then(|s| s.get("parameters"))
            .and_then(Value::as_object)
            .map(|ps| {
                ps.iter()
                    .map(|(name, p)| {
                        let (kind, describe) = p.as_object().map(describe).unwrap_or_default();
                        Field {
                            name: name.to_owned(),
                            describe,
                            kind,
                            value: String::new(),
                            note: None,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.apply_profile();
    }

    fn apply_profile(&mut self) {
        let opts = self
            .profile_ix
            .and_then(|i| self.profiles.get(i))
            .map(|p| p.1.clone())
            .unwrap_or_default();
        for f in &mut self.fields {
            f.value = opts.get(&f.name).map(Value::py_str).unwrap_or_default();
            f.note = None;
        }
        self.propose_think_time();
        self.validate();
    }

    /// A person needs more than the spec's few seconds per decision.
    fn propose_think_time(&mut self) {
        let human = self.mode == ControlMode::Human;
        let short = short_think_time(self.spec(), &Map::new());
        if let Some(f) = self
            .fields
            .iter_mut()
            .find(|f| f.name == "max_think_seconds")
        {
            if human && f.value.is_empty() {
                if let Some(t) = short {
                    f.value = HUMANE_THINK_SECONDS.to_string();
                    f.note = Some(format!("for a human (spec: {t} s)"));
                }
            } else if !human && f.note.is_some() {
                f.value.clear();
                f.note = None;
            }
        }
    }

    /// The options the fields make (empty fields left out).
    pub fn options(&self) -> Result<Map, String> {
        let mut m = Map::new();
        for f in &self.fields {
            let v = f.value.trim();
            if v.is_empty() {
                continue;
            }
            let val = match f.kind.as_str() {
                "integer" => Value::from(
                    v.parse::<i64>()
                        .map_err(|_| format!("{}: {v:?} is not a whole number", f.name))?,
                ),
                "number" | "float" => crate::json::parse_str(v)
                    .ok()
                    .filter(|x| x.as_f64().is_some())
                    .ok_or_else(|| format!("{}: {v:?} is not a number", f.name))?,
                "boolean" | "bool" => match v {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => return Err(format!("{}: write true or false", f.name)),
                },
                "table" | "object" | "array" | "json" => {
                    crate::json::parse_str(v).map_err(|e| format!("{}: JSON: {e}", f.name))?
                }
                _ => Value::from(v),
            };
            m.insert(f.name.clone(), val);
        }
        Ok(m)
    }

    /// Validates the options as the spec would; sets `error`.
    pub fn validate(&mut self) -> bool {
        let r = self.options().and_then(|m| match self.spec() {
            Some(s) => s
                .validate_options(&Value::Object(m))
                .map_err(|e| e.to_string()),
            None => Err(format!("{} is not in the library", self.alias())),
        });
        self.error = r.err();
        self.error.is_none()
    }

    pub fn rows(&self) -> usize {
        3 + self.fields.len()
    }

    pub fn left_right(&mut self, back: bool) {
        match self.row {
            0 if !self.aliases.is_empty() => {
                let n = self.aliases.len();
                self.alias_ix = if back {
                    (self.alias_ix + n - 1) % n
                } else {
                    (self.alias_ix + 1) % n
                };
                self.load_protocol();
            }
            1 => {
                self.mode = next_mode(self.mode, back);
                self.propose_think_time();
                self.validate();
            }
            2 if !self.profiles.is_empty() => {
                let n = self.profiles.len();
                self.profile_ix = Some(match self.profile_ix {
                    None => 0,
                    Some(i) if back => (i + n - 1) % n,
                    Some(i) => (i + 1) % n,
                });
                self.apply_profile();
            }
            _ => {}
        }
    }

    /// A typed character or backspace for the focused field.
    pub fn edit(&mut self, ch: Option<char>) {
        let Some(f) = self.row.checked_sub(3).and_then(|i| self.fields.get_mut(i)) else {
            return;
        };
        match ch {
            Some(c) => f.value.push(c),
            None => {
                f.value.pop();
            }
        }
        f.note = None;
        self.validate();
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let h = (self.rows() as u16 + 6).min(area.height);
        let r = centered(area, 76, h);
        f.render_widget(Clear, r);
        let b = frame("Host an invitation", theme);
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mark = |row: usize| if row == self.row { "▸ " } else { "  " };
        let mut lines = vec![
            Line::from(vec![
                Span::styled(format!("{}{:<20}", mark(0), "protocol"), theme.muted()),
                Span::styled(format!("◂ {} ▸", self.alias()), theme.accent()),
            ]),
            Line::from(
                [
                    vec![Span::styled(
                        format!("{}{:<20}", mark(1), "control mode"),
                        theme.muted(),
                    )],
                    mode_spans(self.mode, theme),
                ]
                .concat(),
            ),
            Line::from(vec![
                Span::styled(format!("{}{:<20}", mark(2), "profile"), theme.muted()),
                Span::styled(
                    match self.profile_ix.and_then(|i| self.profiles.get(i)) {
                        Some((k, _)) => format!("◂ {k} ▸"),
                        None => "◂ (none) ▸".into(),
                    },
                    theme.accent(),
                ),
            ]),
        ];
        for (i, fld) in self.fields.iter().enumerate() {
            let focused = self.row == i + 3;
            let mut spans = vec![
                Span::styled(format!("{}{:<20}", mark(i + 3), fld.name), theme.text()),
                Span::styled(
                    if fld.value.is_empty() && !focused {
                        "(default)".to_owned()
                    } else {
                        fld.value.clone()
                    },
                    if focused {
                        theme.accent()
                    } else {
                        theme.text()
                    },
                ),
            ];
            if focused {
                spans.push(Span::styled(" ", theme.cursor()));
            }
            spans.push(Span::styled(format!("  {}", fld.describe), theme.muted()));
            if let Some(n) = &fld.note {
                spans.push(Span::styled(format!("  {n}"), theme.fg(Slot::Warn)));
            }
            lines.push(Line::from(spans));
        }
        lines.push(match &self.picked {
            Some(how) => Line::from(Span::styled(how.clone(), theme.muted())),
            None => Line::from(""),
        });
        lines.push(match &self.error {
            Some(e) => Line::from(Span::styled(e.clone(), theme.fg(Slot::Error))),
            None => Line::from(Span::styled("options are valid", theme.fg(Slot::Ok))),
        });
        lines.push(Line::from(Span::styled(
            "↑/↓ field · ←/→ change · type to edit · Enter host · Esc cancel",
            theme.muted(),
        )));
        f.render_widget(Paragraph::new(lines), inner);
    }
}

/// The help overlay: every binding of every context, from the keymap.
pub fn draw_help(f: &mut Frame, area: Rect, theme: &Theme, keymap: &Keymap, scroll: u16) {
    let r = centered(area, 84, area.height.saturating_sub(2));
    f.render_widget(Clear, r);
    let b = frame("Help — keys (from the keymap; ? or Esc closes)", theme);
    let inner = b.inner(r);
    f.render_widget(b, r);
    let mut lines = Vec::new();
    for ctx in Context::ALL {
        let binds = keymap.bindings(ctx);
        if binds.is_empty() {
            continue;
        }
        lines.push(Line::from(Span::styled(
            format!("[{}]", ctx.name()),
            theme.accent(),
        )));
        for (keys, name, help) in binds {
            lines.push(Line::from(vec![
                Span::styled(format!("  {keys:<16}"), theme.text()),
                Span::styled(format!("{name:<18}"), theme.muted()),
                Span::styled(help, theme.text()),
            ]));
        }
    }
    f.render_widget(Paragraph::new(lines).scroll((scroll, 0)), inner);
}

/// A question over the panes: a title, a few lines, Enter or Esc.
pub fn draw_confirm(f: &mut Frame, area: Rect, theme: &Theme, title: &str, lines: &[String]) {
    let r = centered(area, 64, lines.len() as u16 * 2 + 4);
    f.render_widget(Clear, r);
    let b = frame(title, theme);
    let inner = b.inner(r);
    f.render_widget(b, r);
    let mut out: Vec<Line> = lines
        .iter()
        .map(|l| Line::from(Span::styled(l.clone(), theme.text())))
        .collect();
    out.push(Line::from(""));
    out.push(Line::from(Span::styled(
        "Enter confirms · Esc cancels",
        theme.muted(),
    )));
    f.render_widget(Paragraph::new(out).wrap(Wrap { trim: true }), inner);
}

/// The one-line search box.
pub fn draw_search(f: &mut Frame, area: Rect, theme: &Theme, title: &str, text: &str) {
    let r = Rect {
        y: area.y + area.height.saturating_sub(3),
        height: 3.min(area.height),
        ..area
    };
    f.render_widget(Clear, r);
    let b = frame(title, theme);
    let inner = b.inner(r);
    f.render_widget(b, r);
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("› ", theme.accent()),
            Span::styled(text.to_owned(), theme.text()),
            Span::styled(" ", theme.cursor()),
        ])),
        inner,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_proposes_a_humane_think_time_for_humans_only() {
        let mut f = HostForm::new(ControlMode::Human);
        assert_eq!(f.alias(), "rps-v1");
        let think = f
            .fields
            .iter()
            .find(|x| x.name == "max_think_seconds")
            .unwrap();
        assert_eq!(think.value, "30");
        assert!(f.validate(), "{:?}", f.error);
        f.row = 1;
        f.left_right(false); // → hybrid
        let think = f
            .fields
            .iter()
            .find(|x| x.name == "max_think_seconds")
            .unwrap();
        assert_eq!(think.value, "");
    }

    #[test]
    fn the_form_validates_as_you_type() {
        let mut f = HostForm::new(ControlMode::Hybrid);
        let i = f.fields.iter().position(|x| x.name == "best_of").unwrap();
        f.row = i + 3;
        f.fields[i].value.clear();
        f.edit(Some('x'));
        assert!(f.error.as_deref().unwrap().contains("best_of"));
        f.edit(None);
        f.edit(Some('0'));
        assert!(f.error.is_some(), "0 is below the minimum");
        f.edit(None);
        f.edit(Some('5'));
        assert!(f.error.is_none(), "{:?}", f.error);
        assert_eq!(f.options().unwrap().get("best_of"), Some(&Value::from(5)));
    }
}
