//! Themes are data: semantic colour names in TOML. The built-ins in
//! `themes/` are compiled in; `<config dir>/themes/<name>.toml` adds or
//! overrides one, inheriting every key it leaves out from its `parent`
//! (default: the `default` theme).

use ratatui::style::{Color, Modifier, Style};
use std::collections::BTreeMap;
use std::path::Path;

/// The themes compiled into the binary, by name.
pub const BUILTIN: [(&str, &str); 3] = [
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// Every semantic colour a theme sets.
pub const KEYS: [&str; 19] = [
    "text",
    "muted",
    "accent",
    "title",
    "border",
    "border_focus",
    "selection_fg",
    "selection_bg",
    "sent",
    "received",
    "local",
    "system",
    "ok",
    "warn",
    "error",
    "host",
    "guest",
    "board",
    "cursor_bg",
];

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ThemeError {
    #[error("theme {name}: {msg}")]
    Invalid { name: String, msg: String },
    #[error("theme {0:?} is neither built in ({builtins}) nor in {1}", builtins = BUILTIN.map(|b| b.0).join(", "))]
    Unknown(String, String),
    #[error("theme {0}: parent chain is too deep (a cycle?)")]
    Cycle(String),
}

/// Resolved colours of the console.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    colors: BTreeMap<&'static str, Color>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    theme: Header,
    #[serde(default)]
    colors: BTreeMap<String, String>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Header {
    name: Option<String>,
    parent: Option<String>,
}

/// Parses a colour: a name as ratatui spells it (`light_blue`, `dark_gray`,
/// `reset`…) or `#rrggbb`.
pub fn parse_color(s: &str) -> Option<Color> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("reset") || s.eq_ignore_ascii_case("default") {
        return Some(Color::Reset);
    }
    s.parse::<Color>().ok()
}

impl Theme {
    /// The built-in default theme.
    pub fn builtin_default() -> Theme {
        Theme::load("default", None).unwrap_or_else(|_| Theme {
            name: "default".into(),
            colors: BTreeMap::new(),
        })
    }

    /// Loads `name` from `user_dir` (`<config dir>/themes`) or the built-ins.
    pub fn load(name: &str, user_dir: Option<&Path>) -> Result<Theme, ThemeError> {
        let mut chain: Vec<(String, File)> = Vec::new();
        let mut next = Some(name.to_owned());
        while let Some(n) = next.take() {
            if chain.len() > 8 {
                return Err(ThemeError::Cycle(name.to_owned()));
            }
            let (text, origin) = match user_dir.map(|d| d.join(format!("{n}.toml"))) {
                Some(p) if p.is_file() => (
                    std::fs::read_to_string(&p).map_err(|e| ThemeError::Invalid {
                        name: n.clone(),
                        msg: format!("{}: {e}", p.display()),
                    })?,
                    p.display().to_string(),
                ),
                _ => match BUILTIN.iter().find(|(b, _)| *b == n) {
                    Some((_, t)) => ((*t).to_owned(), format!("built-in {n}")),
                    None => {
                        return Err(ThemeError::Unknown(
                            n,
                            user_dir
                                .map(|d| d.display().to_string())
                                .unwrap_or_else(|| "no user theme dir".into()),
                        ));
                    }
                },
            };
            let file: File = toml::from_str(&text).map_err(|e| ThemeError::Invalid {
                name: n.clone(),
                msg: format!("{origin}: {e}"),
            })?;
            next = match file.theme.parent.clone() {
                Some(p) => Some(p),
                None if n != "default" => Some("default".to_owned()),
                None => None,
            };
            chain.push((origin, file));
        }
        let mut colors = BTreeMap::new();
        for (origin, file) in chain.iter().rev() {
            for (k, v) in &file.colors {
                let Some(key) = KEYS.iter().find(|x| **x == k) else {
                    return Err(ThemeError::Invalid {
                        name: name.to_owned(),
                        msg: format!(
                            "{origin}: unknown colour key {k:?} (known: {})",
                            KEYS.join(", ")
                        ),
                    });
                };
                let c = parse_color(v).ok_or_else(|| ThemeError::Invalid {
                    name: name.to_owned(),
                    msg: format!(
                        "{origin}: {k} = {v:?} is not a colour (a name like light_blue, or #rrggbb)"
                    ),
                })?;
                colors.insert(*key, c);
            }
        }
        let display = chain
            .first()
            .and_then(|(_, f)| f.theme.name.clone())
            .unwrap_or_else(|| name.to_owned());
        Ok(Theme {
            name: display,
            colors,
        })
    }

    /// The colour of a semantic key (reset when a theme leaves it out).
    pub fn color(&self, key: &str) -> Color {
        self.colors.get(key).copied().unwrap_or(Color::Reset)
    }

    pub fn fg(&self, key: &str) -> Style {
        Style::new().fg(self.color(key))
    }

    pub fn text(&self) -> Style {
        self.fg("text")
    }
    pub fn muted(&self) -> Style {
        self.fg("muted")
    }
    pub fn accent(&self) -> Style {
        self.fg("accent")
    }
    pub fn title(&self) -> Style {
        self.fg("title").add_modifier(Modifier::BOLD)
    }
    pub fn border(&self, focused: bool) -> Style {
        if focused {
            self.fg("border_focus")
        } else {
            self.fg("border")
        }
    }
    /// The selected row of a list (reverse video too, so it shows in mono).
    pub fn selected(&self) -> Style {
        let s = Style::new()
            .fg(self.color("selection_fg"))
            .bg(self.color("selection_bg"));
        if self.color("selection_bg") == Color::Reset {
            s.add_modifier(Modifier::REVERSED)
        } else {
            s
        }
    }
    pub fn cursor(&self) -> Style {
        let c = self.color("cursor_bg");
        if c == Color::Reset {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().bg(c).fg(Color::Black)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_theme_sets_every_key_through_its_parents() {
        for (name, _) in BUILTIN {
            let t = Theme::load(name, None).unwrap();
            for k in KEYS {
                assert!(t.colors.contains_key(k), "{name} lacks {k}");
            }
        }
    }

    #[test]
    fn a_user_theme_overrides_only_what_it_names() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("mine.toml"),
            "[theme]\nparent = \"light\"\n[colors]\naccent = \"#ff8800\"\n",
        )
        .unwrap();
        let t = Theme::load("mine", Some(d.path())).unwrap();
        assert_eq!(t.color("accent"), Color::Rgb(0xff, 0x88, 0));
        assert_eq!(
            t.color("sent"),
            Theme::load("light", None).unwrap().color("sent")
        );
    }

    #[test]
    fn bad_themes_name_the_key_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.toml"), "[colors]\naccent = \"blurple\"\n").unwrap();
        let e = Theme::load("x", Some(d.path())).unwrap_err().to_string();
        assert!(
            e.contains("accent") && e.contains("blurple") && e.contains("x.toml"),
            "{e}"
        );
        std::fs::write(d.path().join("y.toml"), "[colors]\naccnet = \"red\"\n").unwrap();
        let e = Theme::load("y", Some(d.path())).unwrap_err().to_string();
        assert!(e.contains("unknown colour key \"accnet\""), "{e}");
        assert!(matches!(
            Theme::load("nope", None),
            Err(ThemeError::Unknown(..))
        ));
    }
}
