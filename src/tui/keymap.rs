//! The keymap is data: `assets/keymap.toml` compiled in, overridden key by
//! key from `<config dir>/keymap.toml`. The help overlay and the status-bar
//! hints are generated from it.

use super::command::Command;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

/// The built-in keymap.
pub const DEFAULT: &str = include_str!("../../assets/keymap.toml");

/// Where a key is being pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Context {
    Global,
    List,
    Feed,
    Prompt,
    /// The decision prompt of a card game: pick a card, draw, pass.
    Cards,
    /// The card prompt's suit choice after an 8.
    Suit,
    Dialog,
    Editor,
    Text,
    Werewolf,
    Market,
    /// A room's message stream (community-room-v1, meeting-room-v1).
    Room,
    /// The replay of a finished session.
    Replay,
    /// The coach pane (its input line takes text).
    Coach,
    /// A card table (four-player-landlord-v1): the hand, bids, pass.
    Table,
    /// The inbox (F5): the messages, the one opened.
    Inbox,
    /// The leaderboards (F6).
    Leaders,
    /// A list picked from by typing a query (the host form's protocol
    /// picker): printable keys are text.
    Picker,
    /// A tank battle's battlefield (tank-battle-v1): orders, units, cursor.
    Battle,
}

impl Context {
    pub const ALL: [Context; 19] = [
        Context::Global,
        Context::List,
        Context::Feed,
        Context::Prompt,
        Context::Cards,
        Context::Suit,
        Context::Dialog,
        Context::Editor,
        Context::Text,
        Context::Werewolf,
        Context::Market,
        Context::Room,
        Context::Replay,
        Context::Coach,
        Context::Table,
        Context::Inbox,
        Context::Leaders,
        Context::Picker,
        Context::Battle,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::List => "list",
            Context::Feed => "feed",
            Context::Prompt => "prompt",
            Context::Dialog => "dialog",
            Context::Editor => "editor",
            Context::Text => "text",
            Context::Werewolf => "werewolf",
            Context::Market => "market",
            Context::Cards => "cards",
            Context::Suit => "suit",
            Context::Room => "room",
            Context::Replay => "replay",
            Context::Coach => "coach",
            Context::Table => "table",
            Context::Inbox => "inbox",
            Context::Leaders => "leaderboard",
            Context::Picker => "picker",
            Context::Battle => "battle",
        }
    }
    /// Contexts where unbound printable keys are text, so [global] is not
    /// consulted for them.
    pub fn takes_text(self) -> bool {
        matches!(
            self,
            Context::Editor | Context::Text | Context::Dialog | Context::Coach | Context::Picker
        )
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KeymapError {
    #[error("{origin}: {msg}")]
    Invalid { origin: String, msg: String },
}

/// A key as written in keymap files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub code: KeyCodeOrd,
    pub ctrl: bool,
    pub alt: bool,
}

/// `KeyCode` restricted to what keymaps name, ordered for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyCodeOrd {
    Char(char),
    F(u8),
    Named(&'static str),
}

const NAMED: [&str; 14] = [
    "enter",
    "esc",
    "tab",
    "backtab",
    "space",
    "up",
    "down",
    "left",
    "right",
    "pageup",
    "pagedown",
    "home",
    "end",
    "backspace",
];

impl Key {
    /// Parses `q`, `?`, `ctrl-c`, `alt-x`, `shift-tab`, `f1`, `pageup`…
    pub fn parse(s: &str) -> Option<Key> {
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = s;
        let mut shift = false;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                alt = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("shift-") {
                shift = true;
                rest = r;
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCodeOrd::Char(if shift { c.to_ascii_uppercase() } else { c }),
            _ => {
                let lower = rest.to_ascii_lowercase();
                if shift && lower == "tab" {
                    KeyCodeOrd::Named("backtab")
                } else if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    if !(1..=12).contains(&n) {
                        return None;
                    }
                    KeyCodeOrd::F(n)
                } else if lower == "delete" || lower == "del" {
                    KeyCodeOrd::Named("delete")
                } else {
                    KeyCodeOrd::Named(NAMED.iter().find(|n| **n == lower)?)
                }
            }
        };
        let code = match code {
            KeyCodeOrd::Char(' ') => KeyCodeOrd::Named("space"),
            c => c,
        };
        Some(Key { code, ctrl, alt })
    }

    /// The key of a terminal event (`None` for keys keymaps cannot name).
    pub fn of(ev: &KeyEvent) -> Option<Key> {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        let code = match ev.code {
            KeyCode::Char(' ') => KeyCodeOrd::Named("space"),
            KeyCode::Char(c) => KeyCodeOrd::Char(if ctrl { c.to_ascii_lowercase() } else { c }),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Named("enter"),
            KeyCode::Esc => KeyCodeOrd::Named("esc"),
            KeyCode::Tab => KeyCodeOrd::Named("tab"),
            KeyCode::BackTab => KeyCodeOrd::Named("backtab"),
            KeyCode::Up => KeyCodeOrd::Named("up"),
            KeyCode::Down => KeyCodeOrd::Named("down"),
            KeyCode::Left => KeyCodeOrd::Named("left"),
            KeyCode::Right => KeyCodeOrd::Named("right"),
            KeyCode::PageUp => KeyCodeOrd::Named("pageup"),
            KeyCode::PageDown => KeyCodeOrd::Named("pagedown"),
            KeyCode::Home => KeyCodeOrd::Named("home"),
            KeyCode::End => KeyCodeOrd::Named("end"),
            KeyCode::Backspace => KeyCodeOrd::Named("backspace"),
            KeyCode::Delete => KeyCodeOrd::Named("delete"),
            _ => return None,
        };
        Some(Key { code, ctrl, alt })
    }

    /// The key as the help shows it.
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCodeOrd::Char(c) => c.to_string(),
            KeyCodeOrd::F(n) => format!("F{n}"),
            KeyCodeOrd::Named("pageup") => "PgUp".into(),
            KeyCodeOrd::Named("pagedown") => "PgDn".into(),
            KeyCodeOrd::Named("backtab") => "S-Tab".into(),
            KeyCodeOrd::Named("up") => "↑".into(),
            KeyCodeOrd::Named("down") => "↓".into(),
            KeyCodeOrd::Named("left") => "←".into(),
            KeyCodeOrd::Named("right") => "→".into(),
            KeyCodeOrd::Named(n) => {
                let mut s = n.to_owned();
                if let Some(f) = s.get_mut(0..1) {
                    f.make_ascii_uppercase();
                }
                s
            }
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("C-{base}"),
            (_, true) => format!("M-{base}"),
            _ => base,
        }
    }
}

/// Context → key → command.
#[derive(Debug, Clone)]
pub struct Keymap {
    map: BTreeMap<Context, BTreeMap<Key, Command>>,
}

type Raw = BTreeMap<String, BTreeMap<String, String>>;

impl Keymap {
    /// The built-in keymap.
    #[allow(
        clippy::expect_used,
        reason = "the built-in keymap is a constant, parsed by the keymap tests"
    )]
    pub fn builtin() -> Keymap {
        Keymap::parse(DEFAULT, "built-in keymap").expect("the built-in keymap parses")
    }

    /// Parses a whole keymap.
    pub fn parse(text: &str, origin: &str) -> Result<Keymap, KeymapError> {
        let mut k = Keymap {
            map: BTreeMap::new(),
        };
        k.overlay(text, origin)?;
        Ok(k)
    }

    /// The built-in keymap with a user file's bindings on top.
    pub fn with_user(text: &str, origin: &str) -> Result<Keymap, KeymapError> {
        let mut k = Keymap::builtin();
        k.overlay(text, origin)?;
        Ok(k)
    }

    fn overlay(&mut self, text: &str, origin: &str) -> Result<(), KeymapError> {
        let bad = |msg: String| KeymapError::Invalid {
            origin: origin.to_owned(),
            msg,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        for (ctx_name, binds) in raw {
            let ctx = Context::ALL
                .into_iter()
                .find(|c| c.name() == ctx_name)
                .ok_or_else(|| {
                    bad(format!(
                        "unknown context [{ctx_name}] (known: {})",
                        Context::ALL.map(Context::name).join(", ")
                    ))
                })?;
            let table = self.map.entry(ctx).or_default();
            for (key, action) in binds {
                let k = Key::parse(&key)
                    .ok_or_else(|| bad(format!("[{ctx_name}] {key:?} is not a key")))?;
                if action == "none" {
                    table.remove(&k);
                    continue;
                }
                let a = Command::from_name(&action).ok_or_else(|| {
                    bad(format!(
                        "[{ctx_name}] {key:?} = {action:?}: unknown action (known: {})",
                        Command::ALL
                            .iter()
                            .map(|c| c.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                table.insert(k, a);
            }
        }
        Ok(())
    }

    /// The command of `ev` in `ctx`, falling back to [global] unless the
    /// context takes text and the key is a plain character.
    pub fn lookup(&self, ctx: Context, ev: &KeyEvent) -> Option<Command> {
        let key = Key::of(ev)?;
        if let Some(a) = self.map.get(&ctx).and_then(|t| t.get(&key)) {
            return Some(*a);
        }
        let plain_char = matches!(key.code, KeyCodeOrd::Char(_) | KeyCodeOrd::Named("space"))
            && !key.ctrl
            && !key.alt;
        if ctx.takes_text() && (plain_char || matches!(key.code, KeyCodeOrd::Named("backspace"))) {
            return None;
        }
        if ctx == Context::Editor && !key.ctrl {
            // The editor owns every unbound key except control chords.
            return None;
        }
        self.map
            .get(&Context::Global)
            .and_then(|t| t.get(&key))
            .copied()
    }

    /// Bindings of a context as (keys, command name, description), grouped
    /// by command in help order.
    pub fn bindings(&self, ctx: Context) -> Vec<(String, &'static str, &'static str)> {
        let Some(t) = self.map.get(&ctx) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for c in Command::ALL {
            let keys: Vec<String> = t
                .iter()
                .filter(|(_, a)| *a == c)
                .map(|(k, _)| k.label())
                .collect();
            if !keys.is_empty() {
                out.push((keys.join("/"), c.name(), c.description()));
            }
        }
        out
    }

    /// The first key bound to `command` in `ctx` or [global], for hints.
    pub fn key_for(&self, ctx: Context, command: Command) -> Option<String> {
        for c in [ctx, Context::Global] {
            // Plain keys read better in hints than chords.
            if let Some(t) = self.map.get(&c)
                && let Some((k, _)) = t
                    .iter()
                    .filter(|(_, a)| **a == command)
                    .min_by_key(|(k, _)| (k.ctrl || k.alt, k.label().chars().count()))
            {
                return Some(k.label());
            }
        }
        None
    }

    /// A status-bar hint line: "key label" pairs for `commands`.
    pub fn hints(&self, ctx: Context, commands: &[Command]) -> Vec<(String, &'static str)> {
        commands
            .iter()
            .filter_map(|c| Some((self.key_for(ctx, *c)?, c.hint())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(c: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(c, m)
    }

    #[test]
    fn the_builtin_keymap_parses_and_resolves_by_context() {
        let k = Keymap::builtin();
        let q = ev(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(k.lookup(Context::List, &q), Some(Command::Quit));
        // In a text field a plain q is text, not quit.
        assert_eq!(k.lookup(Context::Text, &q), None);
        assert_eq!(k.lookup(Context::Editor, &q), None);
        let cc = ev(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(k.lookup(Context::Editor, &cc), Some(Command::Quit));
        let two = ev(KeyCode::Char('2'), KeyModifiers::NONE);
        assert_eq!(k.lookup(Context::Prompt, &two), Some(Command::Choose2));
        assert_eq!(
            k.lookup(Context::Feed, &ev(KeyCode::Enter, KeyModifiers::NONE)),
            None
        );
        // The card prompt draws with d; its suit choice calls diamonds with
        // it, and spades with s (over the global strategy key).
        let d = ev(KeyCode::Char('d'), KeyModifiers::NONE);
        let s = ev(KeyCode::Char('s'), KeyModifiers::NONE);
        assert_eq!(k.lookup(Context::Cards, &d), Some(Command::Draw));
        assert_eq!(k.lookup(Context::Suit, &d), Some(Command::SuitDiamonds));
        assert_eq!(k.lookup(Context::Suit, &s), Some(Command::SuitSpades));
        assert_eq!(k.lookup(Context::Cards, &s), Some(Command::Strategy));
    }

    #[test]
    fn a_user_file_rebinds_and_unbinds() {
        let k = Keymap::with_user(
            "[global]\n\"q\" = \"none\"\n\"ctrl-q\" = \"quit\"\n[feed]\n\"shift-r\" = \"raw_toggle\"\n",
            "test",
        )
        .unwrap();
        assert_eq!(
            k.lookup(Context::Feed, &ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            k.lookup(
                Context::Feed,
                &ev(KeyCode::Char('q'), KeyModifiers::CONTROL)
            ),
            Some(Command::Quit)
        );
        assert_eq!(
            k.lookup(Context::Feed, &ev(KeyCode::Char('R'), KeyModifiers::SHIFT)),
            Some(Command::RawToggle)
        );
    }

    #[test]
    fn bad_keymaps_say_what_and_where() {
        let e = Keymap::with_user("[global]\n\"q\" = \"explode\"\n", "km.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("km.toml:") && e.contains("explode"), "{e}");
        let e = Keymap::with_user("[nowhere]\n\"q\" = \"quit\"\n", "km.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown context [nowhere]"), "{e}");
        let e = Keymap::with_user("[global]\n\"hyper-q\" = \"quit\"\n", "km.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a key"), "{e}");
    }

    #[test]
    fn help_lists_every_binding_of_a_context() {
        let k = Keymap::builtin();
        let b = k.bindings(Context::Feed);
        assert!(
            b.iter()
                .any(|(keys, name, _)| *name == "top" && keys.contains('g'))
        );
        assert_eq!(
            k.key_for(Context::List, Command::HostNew).as_deref(),
            Some("n")
        );
    }
}
