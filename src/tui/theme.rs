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

/// Defines [`Slot`] from one list: variant and its name in theme files.
macro_rules! slots {
    ($($variant:ident = $name:literal,)*) => {
        /// A semantic colour a theme sets.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Slot {
            $($variant,)*
        }

        impl Slot {
            /// Every slot, in the order theme files document them.
            pub const ALL: &[Slot] = &[$(Slot::$variant,)*];

            /// The key theme files use.
            pub fn name(self) -> &'static str {
                match self {
                    $(Slot::$variant => $name,)*
                }
            }
        }
    };
}

slots! {
    Text = "text",
    Muted = "muted",
    Accent = "accent",
    Title = "title",
    Border = "border",
    BorderFocus = "border_focus",
    SelectionFg = "selection_fg",
    SelectionBg = "selection_bg",
    Sent = "sent",
    Received = "received",
    Local = "local",
    System = "system",
    Ok = "ok",
    Warn = "warn",
    Error = "error",
    Host = "host",
    Guest = "guest",
    Board = "board",
    CursorBg = "cursor_bg",
    Steel = "steel",
    Brick = "brick",
    Water = "water",
    Bush = "bush",
}

impl Slot {
    /// The slot a theme file's key names.
    pub fn from_name(name: &str) -> Option<Slot> {
        Slot::ALL.iter().copied().find(|s| s.name() == name)
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ThemeError {
    #[error("theme {name}: {msg}")]
    Invalid { name: String, msg: String },
    #[error("theme {0:?} is neither built in ({builtins}) nor in {1}", builtins = BUILTIN.map(|b| b.0).join(", "))]
    Unknown(String, String),
    #[error("theme {0}: parent chain is too deep (a cycle?)")]
    Cycle(String),
}

/// Resolved colours of the console, one per slot (`None`: the theme and
/// its parents leave it out).
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    colors: [Option<Color>; Slot::ALL.len()],
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
            colors: [None; Slot::ALL.len()],
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
        let mut colors = [None; Slot::ALL.len()];
        for (origin, file) in chain.iter().rev() {
            for (k, v) in &file.colors {
                let Some(slot) = Slot::from_name(k) else {
                    return Err(ThemeError::Invalid {
                        name: name.to_owned(),
                        msg: format!(
                            "{origin}: unknown colour key {k:?} (known: {})",
                            Slot::ALL
                                .iter()
                                .map(|s| s.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                };
                let c = parse_color(v).ok_or_else(|| ThemeError::Invalid {
                    name: name.to_owned(),
                    msg: format!(
                        "{origin}: {k} = {v:?} is not a colour (a name like light_blue, or #rrggbb)"
                    ),
                })?;
                colors[slot as usize] = Some(c);
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

    /// The colour of a slot (reset when a theme leaves it out).
    pub fn color(&self, slot: Slot) -> Color {
        self.colors[slot as usize].unwrap_or(Color::Reset)
    }

    pub fn fg(&self, slot: Slot) -> Style {
        Style::new().fg(self.color(slot))
    }

    pub fn text(&self) -> Style {
        self.fg(Slot::Text)
    }
    pub fn muted(&self) -> Style {
        self.fg(Slot::Muted)
    }
    pub fn accent(&self) -> Style {
        self.fg(Slot::Accent)
    }
    pub fn title(&self) -> Style {
        self.fg(Slot::Title).add_modifier(Modifier::BOLD)
    }
    pub fn border(&self, focused: bool) -> Style {
        if focused {
            self.fg(Slot::BorderFocus)
        } else {
            self.fg(Slot::Border)
        }
    }
    /// The selected row of a list (reverse video too, so it shows in mono).
    pub fn selected(&self) -> Style {
        let s = Style::new()
            .fg(self.color(Slot::SelectionFg))
            .bg(self.color(Slot::SelectionBg));
        if self.color(Slot::SelectionBg) == Color::Reset {
            s.add_modifier(Modifier::REVERSED)
        } else {
            s
        }
    }
    pub fn cursor(&self) -> Style {
        let c = self.color(Slot::CursorBg);
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
            for k in Slot::ALL {
                assert!(t.colors[*k as usize].is_some(), "{name} lacks {k:?}");
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
        assert_eq!(t.color(Slot::Accent), Color::Rgb(0xff, 0x88, 0));
        assert_eq!(
            t.color(Slot::Sent),
            Theme::load("light", None).unwrap().color(Slot::Sent)
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
