//! Every setting a command reads, decided in one place: the command line
//! (a flag, or the environment variable clap reads for it), else the
//! environment variables only the environment sets, else config.toml, else
//! the built-in default. The CLI resolves a [`Settings`] once per command
//! and hands its fields down; nothing below decides precedence again.

use super::{Config, ConfigError};
use crate::community::db::Database;

/// What the command line gave (empty when the command has no such flag).
#[derive(Debug, Default, Clone)]
pub struct Flags {
    /// `--server` / `PALAVER_SERVER`.
    pub server: Option<String>,
    /// The console's `--nickname`.
    pub nickname: Option<String>,
    /// The console's `--theme` / `PALAVER_THEME`.
    pub theme: Option<String>,
    /// `--relay` / `PALAVER_RELAY_URL` of `host` and `join`.
    pub relay: Vec<iroh::RelayUrl>,
    /// `serve --db` / `PALAVER_DB`.
    pub db: Option<String>,
    /// `trust --trust-url` / `PALAVER_TRUST_URL`.
    pub trust_url: Option<String>,
}

/// Where a setting's value came from (named in its errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A flag, or the variable clap reads for it (e.g. `--db (or PALAVER_DB)`).
    Flag(&'static str),
    /// An environment variable read here.
    Env(&'static str),
    /// A key of config.toml.
    Config(&'static str),
    /// The built-in default.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(s) => f.write_str(s),
            Source::Env(v) => write!(f, "{v}"),
            Source::Config(k) => write!(f, "`{k}` in config.toml"),
            Source::Default => f.write_str("the default"),
        }
    }
}

/// Why the settings could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{source_name}: {msg}")]
    Invalid { source_name: String, msg: String },
}

/// The settings, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The community server's URL, if any is set, and where it came from.
    pub server: Option<(String, Source)>,
    /// The nickname to register with: `--nickname`, config.toml, `$USER`,
    /// else `player`.
    pub nickname: String,
    /// The console's theme (`None`: the default theme).
    pub theme: Option<String>,
    /// Relays for sessions: `--relay`/`PALAVER_RELAY_URL`, else config.toml's
    /// `relay_url` (empty: n0's relays and discovery).
    pub relays: Vec<iroh::RelayUrl>,
    /// The database `serve` keeps the community in, when one is set
    /// (`None`: community.sqlite in the data dir).
    pub db: Option<(Database, Source)>,
    /// Where the web of trust's snapshots are fetched from:
    /// `--trust-url`/`PALAVER_TRUST_URL`, else config.toml's `trust_url`,
    /// else the community server's URL (`None`: none of them is set).
    pub trust_url: Option<(String, Source)>,
    /// The Python for hooks.py files written for the reference client:
    /// `PALAVER_HOOKS_PYTHON`, config.toml's `hooks_python`,
    /// `PALAVER_PYTHON`, else `python3`.
    pub hooks_python: String,
    /// The whole config.toml, for the settings only it holds (`[coach]`,
    /// `[house]`).
    pub config: Config,
}

/// The Python for reference-SDK hooks.py files: `PALAVER_HOOKS_PYTHON`,
/// else config.toml's `hooks_python` (when the file is read), else
/// `PALAVER_PYTHON`, else `python3`. It depends on nothing else, so a caller
/// that needs only it is not refused for another setting.
pub fn hooks_python(env: impl Fn(&str) -> Option<String>, config: Option<&Config>) -> String {
    let env = |k: &str| set(env(k));
    env("PALAVER_HOOKS_PYTHON")
        .or_else(|| config.and_then(|c| set(c.hooks_python.clone())))
        .or_else(|| env("PALAVER_PYTHON"))
        .unwrap_or_else(|| "python3".to_owned())
}

/// A value that counts as set: present and not blank.
fn set(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.trim().is_empty())
}

impl Settings {
    /// Resolves `flags` over `env` (a variable's value by name) over
    /// `config`.
    pub fn resolve(
        flags: &Flags,
        env: impl Fn(&str) -> Option<String>,
        config: Config,
    ) -> Result<Settings, SettingsError> {
        let env = |k: &str| set(env(k));
        let server = set(flags.server.clone())
            .map(|s| (s, Source::Flag("--server (or PALAVER_SERVER)")))
            .or_else(|| set(config.server.clone()).map(|s| (s, Source::Config("server"))));
        let nickname = set(flags.nickname.clone())
            .or_else(|| set(config.nickname.clone()))
            .or_else(|| env("USER"))
            .unwrap_or_else(|| "player".to_owned());
        let theme = set(flags.theme.clone()).or_else(|| set(config.theme.clone()));
        let relays = if !flags.relay.is_empty() {
            flags.relay.clone()
        } else if let Some(v) = env("PALAVER_RELAY_URL") {
            v.split(',')
                .map(|u| {
                    crate::net::parse_relay_url(u).map_err(|e| SettingsError::Invalid {
                        source_name: "PALAVER_RELAY_URL".into(),
                        msg: e.to_string(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            config.relay_url.clone()
        };
        let db = match set(flags.db.clone()) {
            Some(t) => Some((t, Source::Flag("--db (or PALAVER_DB)"))),
            None => set(config.db.clone()).map(|t| (t, Source::Config("db"))),
        };
        let db = match db {
            Some((t, from)) => Some((
                Database::parse(&t).map_err(|e| SettingsError::Invalid {
                    source_name: from.to_string(),
                    msg: e.to_string(),
                })?,
                from,
            )),
            None => None,
        };
        let trust_url = set(flags.trust_url.clone())
            .map(|s| (s, Source::Flag("--trust-url (or PALAVER_TRUST_URL)")))
            .or_else(|| set(config.trust_url.clone()).map(|s| (s, Source::Config("trust_url"))))
            .or_else(|| server.clone());
        let hooks_python = hooks_python(env, Some(&config));
        Ok(Settings {
            server,
            trust_url,
            nickname,
            theme,
            relays,
            db,
            hooks_python,
            config,
        })
    }

    /// [`Settings::resolve`] over this process's environment and
    /// config.toml.
    pub fn load(flags: &Flags) -> Result<Settings, SettingsError> {
        Settings::resolve(flags, |k| std::env::var(k).ok(), Config::load()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("config.toml")).unwrap()
    }

    fn resolve(flags: &Flags, env: &[(&str, &str)], cfg: &str) -> Settings {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::resolve(flags, |k| env.get(k).cloned(), config(cfg)).unwrap()
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
        let cfg = "server = \"http://file:1\"\nnickname = \"filed\"\ntheme = \"light\"\nhooks_python = \"/file/python\"\nrelay_url = \"https://relay.file.example\"\ndb = \"sqlite:/file.sqlite\"\n";
        let flags = Flags {
            server: Some("http://flag:1".into()),
            nickname: Some("flagged".into()),
            theme: Some("mono".into()),
            relay: vec![crate::net::parse_relay_url("https://relay.flag.example").unwrap()],
            db: Some("sqlite:/flag.sqlite".into()),
            trust_url: Some("http://trust.flag:1".into()),
        };
        let env = [
            ("USER", "env-user"),
            ("PALAVER_RELAY_URL", "https://relay.env.example"),
            ("PALAVER_HOOKS_PYTHON", "/env/hooks-python"),
            ("PALAVER_PYTHON", "/env/python"),
        ];
        let s = resolve(&flags, &env, cfg);
        assert_eq!(
            s.server,
            Some((
                "http://flag:1".into(),
                Source::Flag("--server (or PALAVER_SERVER)")
            ))
        );
        assert_eq!(s.nickname, "flagged");
        assert_eq!(s.theme.as_deref(), Some("mono"));
        assert_eq!(s.relays[0].to_string(), "https://relay.flag.example./");
        assert_eq!(
            s.db.as_ref().map(|d| d.1),
            Some(Source::Flag("--db (or PALAVER_DB)"))
        );
        assert_eq!(s.hooks_python, "/env/hooks-python");
        assert_eq!(
            s.trust_url,
            Some((
                "http://trust.flag:1".into(),
                Source::Flag("--trust-url (or PALAVER_TRUST_URL)")
            ))
        );
        // Without flags: the environment, then the file.
        let s = resolve(&Flags::default(), &env, cfg);
        assert_eq!(
            s.server.as_ref().map(|s| s.1),
            Some(Source::Config("server"))
        );
        assert_eq!(s.nickname, "filed");
        assert_eq!(s.theme.as_deref(), Some("light"));
        assert_eq!(s.relays[0].to_string(), "https://relay.env.example./");
        assert_eq!(s.db.as_ref().map(|d| d.1), Some(Source::Config("db")));
        assert_eq!(
            s.trust_url,
            Some(("http://file:1".into(), Source::Config("server")))
        );
        let with_trust = format!("{cfg}trust_url = \"http://trust.file:1\"\n");
        assert_eq!(
            resolve(&Flags::default(), &env, &with_trust).trust_url,
            Some(("http://trust.file:1".into(), Source::Config("trust_url")))
        );
        // Without the environment: the file.
        let s = resolve(&Flags::default(), &[("PALAVER_PYTHON", "/env/python")], cfg);
        assert_eq!(s.relays[0].to_string(), "https://relay.file.example./");
        assert_eq!(s.hooks_python, "/file/python");
        // Without the file: the defaults.
        let s = resolve(&Flags::default(), &[("PALAVER_PYTHON", "/env/python")], "");
        assert_eq!(s.server, None);
        assert_eq!(s.nickname, "player");
        assert_eq!(s.theme, None);
        assert!(s.relays.is_empty());
        assert!(s.db.is_none());
        assert!(s.trust_url.is_none());
        assert_eq!(s.hooks_python, "/env/python");
        let s = resolve(&Flags::default(), &[("USER", "env-user")], "");
        assert_eq!(s.nickname, "env-user");
        assert_eq!(s.hooks_python, "python3");
    }

    #[test]
    fn the_hooks_python_needs_no_other_setting() {
        // A relay variable that does not parse refuses the whole settings,
        // not the hooks' Python.
        let env = |k: &str| match k {
            "PALAVER_RELAY_URL" => Some("ftp://nope".to_owned()),
            "PALAVER_PYTHON" => Some("/env/python".to_owned()),
            _ => None,
        };
        assert!(Settings::resolve(&Flags::default(), env, config("")).is_err());
        assert_eq!(hooks_python(env, None), "/env/python");
        let cfg = config("hooks_python = \"/file/python\"\n");
        assert_eq!(hooks_python(env, Some(&cfg)), "/file/python");
    }

    #[test]
    fn blank_values_count_as_unset_and_bad_ones_name_their_source() {
        let flags = Flags {
            server: Some("  ".into()),
            db: Some("".into()),
            ..Flags::default()
        };
        let s = resolve(
            &flags,
            &[("PALAVER_HOOKS_PYTHON", " ")],
            "server = \"http://file:1\"\n",
        );
        assert_eq!(s.server.map(|s| s.0).as_deref(), Some("http://file:1"));
        assert!(s.db.is_none());
        assert_eq!(s.hooks_python, "python3");
        let bad = Settings::resolve(
            &Flags::default(),
            |k| (k == "PALAVER_RELAY_URL").then(|| "ftp://nope".to_owned()),
            config(""),
        )
        .unwrap_err();
        assert!(bad.to_string().starts_with("PALAVER_RELAY_URL: "), "{bad}");
        let bad = Settings::resolve(
            &Flags {
                db: Some("mysql://x".into()),
                ..Flags::default()
            },
            |_| None,
            config(""),
        )
        .unwrap_err();
        assert!(
            bad.to_string().starts_with("--db (or PALAVER_DB): "),
            "{bad}"
        );
    }
}
