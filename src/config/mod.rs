//! `config.toml` in the config dir: settings a user keeps between runs.
//! Flags and environment variables win over it; a missing file is the
//! embedded defaults (`assets/config.toml`).

pub mod settings;

pub use settings::{Flags, Settings, SettingsError, Source};

use serde::de::{Deserialize, Deserializer, Error as _};
use std::path::{Path, PathBuf};

/// The documented defaults, shipped in the binary.
pub const DEFAULT: &str = include_str!("../../assets/config.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {msg}")]
    Read { path: PathBuf, msg: String },
    #[error("{path}: invalid TOML{at}: {msg}")]
    Parse {
        path: PathBuf,
        /// ` at line N`, or empty when the parser names no place.
        at: String,
        msg: String,
    },
    /// An unknown key, or a value of the wrong type or form.
    #[error("{path}: {msg}{at}")]
    Invalid {
        path: PathBuf,
        msg: String,
        /// ` (line N)`, or empty when the parser names no place.
        at: String,
    },
}

/// Settings from config.toml.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Community server URL.
    pub server: Option<String>,
    /// Console theme: a built-in (default, light, mono) or
    /// `<config dir>/themes/<name>.toml`.
    pub theme: Option<String>,
    /// The nickname this identity registers with.
    pub nickname: Option<String>,
    /// Relays for `host`, `join` and the console's sessions on a remote
    /// community instead of n0's (`relay_url`: one URL or a list); empty:
    /// n0's relays and discovery.
    pub relay_url: Vec<iroh::RelayUrl>,
    /// The Python that runs hooks.py files written for the reference client
    /// (through palaver's bridge); it needs the `aigenora` package.
    /// `PALAVER_HOOKS_PYTHON` wins over it.
    pub hooks_python: Option<String>,
    /// `db`: the database `palaver serve` keeps the community in (a path,
    /// `sqlite:PATH` or `postgres://…`; checked to parse). `--db` and
    /// `PALAVER_DB` win over it.
    pub db: Option<String>,
    /// `trust_url`: where the web of trust's snapshots are fetched from
    /// (`{trust_url}/latest.json`); `--trust-url` and `PALAVER_TRUST_URL`
    /// win over it, and without any the community server's URL is used.
    pub trust_url: Option<String>,
    /// `[coach]`: the agent CLI the console's coach pane talks to.
    pub coach: CoachSettings,
    /// `[house] round_delay_seconds`: the pause between rounds in the
    /// embedded house's games (0–300; default
    /// `services::house::ROUND_DELAY_SECONDS`).
    pub house_round_delay: Option<i64>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HouseFile {
    #[serde(default, deserialize_with = "house_round_delay")]
    round_delay_seconds: Option<i64>,
}

fn house_round_delay<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::Integer(i) if (0..=300).contains(&i) => Ok(Some(i)),
        v => Err(D::Error::custom(format!(
            "`house.round_delay_seconds` must be a whole number of seconds from 0 to 300, not {v}"
        ))),
    }
}

/// `[coach]` as written, checked: a known agent name, a command for
/// `custom`, a timeout in range. `services::coach` turns it into templates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoachSettings {
    /// `claude-code` (default), `codex`, `opencode` or `custom`.
    pub agent: Option<String>,
    /// The command template of a new conversation (required for custom;
    /// overrides a known CLI's).
    pub command: Option<String>,
    /// The command template of later turns (default: `command`).
    pub resume_command: Option<String>,
    /// Seconds one turn may take (5–3600, default 180).
    pub timeout_seconds: Option<f64>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CoachFile {
    #[serde(default, deserialize_with = "coach_agent")]
    agent: Option<String>,
    #[serde(default, deserialize_with = "coach_command")]
    command: Option<String>,
    #[serde(default, deserialize_with = "coach_resume")]
    resume_command: Option<String>,
    #[serde(default, deserialize_with = "coach_timeout")]
    timeout_seconds: Option<f64>,
}

fn coach_agent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    const WANT: &str = "\"claude-code\", \"codex\", \"opencode\" or \"custom\"";
    match text(d, "coach.agent", WANT)? {
        Some(a) if !["claude-code", "codex", "opencode", "custom"].contains(&a.as_str()) => Err(
            D::Error::custom(format!("`coach.agent` must be {WANT}, not {a:?}")),
        ),
        a => Ok(a),
    }
}

fn coach_command<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(
        d,
        "coach.command",
        "a command template such as \"my-agent --ask {prompt}\"",
    )
}

fn coach_resume<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(
        d,
        "coach.resume_command",
        "a command template such as \"my-agent --resume {session_id} --ask {prompt}\"",
    )
}

fn coach_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = match toml::Value::deserialize(d)? {
        toml::Value::Integer(i) => i as f64,
        toml::Value::Float(f) => f,
        _ => {
            return Err(D::Error::custom(
                "`coach.timeout_seconds` must be a number of seconds",
            ));
        }
    };
    crate::limits::COACH_TIMEOUT
        .check(v)
        .map_err(|e| D::Error::custom(e.to_string()))?;
    Ok(Some(v))
}

/// config.toml as written: every key optional, no other key allowed; an
/// empty string is the same as no setting.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default, deserialize_with = "server")]
    server: Option<String>,
    #[serde(default, deserialize_with = "theme")]
    theme: Option<String>,
    #[serde(default, deserialize_with = "nickname")]
    nickname: Option<String>,
    #[serde(default, deserialize_with = "relay_url")]
    relay_url: Vec<iroh::RelayUrl>,
    #[serde(default, deserialize_with = "hooks_python")]
    hooks_python: Option<String>,
    #[serde(default, deserialize_with = "db")]
    db: Option<String>,
    #[serde(default, deserialize_with = "trust_url")]
    trust_url: Option<String>,
    #[serde(default)]
    coach: CoachFile,
    #[serde(default)]
    house: HouseFile,
}

fn text<'de, D: Deserializer<'de>>(
    d: D,
    key: &str,
    want: &str,
) -> Result<Option<String>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) if s.is_empty() => Ok(None),
        toml::Value::String(s) => Ok(Some(s)),
        _ => Err(D::Error::custom(format!("`{key}` must be {want}"))),
    }
}

fn server<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "server", "a string such as \"http://127.0.0.1:8700\"")
}

fn trust_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(
        d,
        "trust_url",
        "a string such as \"http://127.0.0.1:8700/trust\"",
    )
}

fn theme<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "theme", "a theme name such as \"default\" or \"light\"")
}

fn nickname<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(d, "nickname", "a string")
}

fn hooks_python<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text(
        d,
        "hooks_python",
        "the path of a Python interpreter such as \"/opt/venv/bin/python\"",
    )
}

fn db<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = text(
        d,
        "db",
        "a database: a path, \"sqlite:PATH\" or \"postgres://USER@HOST/DB\"",
    )?;
    if let Some(t) = &v {
        crate::community::Database::parse(t).map_err(|e| D::Error::custom(format!("`db`: {e}")))?;
    }
    Ok(v)
}

fn relay_url<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<iroh::RelayUrl>, D::Error> {
    let wrong = || {
        D::Error::custom(
            "`relay_url` must be a relay URL such as \"http://127.0.0.1:3340\" or a list of them",
        )
    };
    let texts = match toml::Value::deserialize(d)? {
        toml::Value::String(s) if s.is_empty() => Vec::new(),
        toml::Value::String(s) => vec![s],
        toml::Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s),
                _ => Err(wrong()),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(wrong()),
    };
    texts
        .iter()
        .map(|t| {
            crate::net::parse_relay_url(t)
                .map_err(|e| D::Error::custom(format!("`relay_url`: {e}")))
        })
        .collect()
}

/// The line a parser error points at, 1-based.
fn line_of(text: &str, e: &toml::de::Error) -> Option<usize> {
    let start = e.span()?.start.min(text.len());
    Some(
        text.as_bytes()[..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1,
    )
}

impl Config {
    /// Parses config text; `path` names it in errors, with the key and the
    /// line at fault.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        if let Err(e) = text.parse::<toml::Table>() {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                at: line_of(text, &e)
                    .map(|n| format!(" at line {n}"))
                    .unwrap_or_default(),
                msg: e.message().trim_end().to_owned(),
            });
        }
        let file: File = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_owned(),
            msg: e.message().trim_end().to_owned(),
            at: line_of(text, &e)
                .map(|n| format!(" (line {n})"))
                .unwrap_or_default(),
        })?;
        Ok(Config {
            server: file.server,
            theme: file.theme,
            nickname: file.nickname,
            relay_url: file.relay_url,
            hooks_python: file.hooks_python,
            db: file.db,
            trust_url: file.trust_url,
            coach: CoachSettings {
                agent: file.coach.agent.clone(),
                command: file.coach.command.clone(),
                resume_command: file.coach.resume_command.clone(),
                timeout_seconds: file.coach.timeout_seconds,
            },
            house_round_delay: file.house.round_delay_seconds,
        })
    }

    /// `<config dir>/config.toml`, or the embedded defaults without one.
    pub fn load() -> Result<Config, ConfigError> {
        let Some(dir) = crate::paths::config_dir() else {
            return Config::parse(DEFAULT, Path::new("(embedded config.toml)"));
        };
        let path = dir.join("config.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Config::parse(DEFAULT, Path::new("(embedded config.toml)"))
            }
            Err(e) => Err(ConfigError::Read {
                path,
                msg: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn house_section() {
        let p = Path::new("c.toml");
        let c = Config::parse("[house]\nround_delay_seconds = 0\n", p).unwrap();
        assert_eq!(c.house_round_delay, Some(0));
        assert_eq!(Config::parse("", p).unwrap().house_round_delay, None);
        for bad in [
            "[house]\nround_delay_seconds = -1\n",
            "[house]\nround_delay_seconds = 301\n",
            "[house]\nround_delay_seconds = 1.5\n",
            "[house]\npace = 1\n",
        ] {
            let e = Config::parse(bad, p).unwrap_err().to_string();
            assert!(e.contains("house") || e.contains("pace"), "{bad}: {e}");
            assert!(e.contains("line 2"), "{bad}: {e}");
        }
    }

    #[test]
    fn coach_section() {
        let p = Path::new("c.toml");
        let c = Config::parse(
            "[coach]\nagent = \"custom\"\ncommand = \"a {prompt}\"\ntimeout_seconds = 30\n",
            p,
        )
        .unwrap();
        assert_eq!(c.coach.agent.as_deref(), Some("custom"));
        assert_eq!(c.coach.timeout_seconds, Some(30.0));
        for bad in [
            "[coach]\nagent = \"gpt\"\n",
            "[coach]\ntimeout_seconds = 0\n",
            "[coach]\ntimeout_seconds = 1e9\n",
            "[coach]\ntimeout_seconds = \"x\"\n",
            "[coach]\nmodel = \"x\"\n",
        ] {
            let e = Config::parse(bad, p).unwrap_err().to_string();
            assert!(e.contains("coach") || e.contains("model"), "{bad}: {e}");
        }
        assert_eq!(
            Config::parse("", p).unwrap().coach,
            CoachSettings::default()
        );
    }

    #[test]
    fn the_embedded_defaults_parse_and_name_no_server() {
        assert_eq!(
            Config::parse(DEFAULT, Path::new("x")).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn server_is_read_and_bad_values_name_the_file_and_key() {
        let c = Config::parse("server = \"http://h:1\"\n", Path::new("c.toml")).unwrap();
        assert_eq!(c.server.as_deref(), Some("http://h:1"));
        let e = Config::parse("server = 5\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml: `server` must be a string"), "{e}");
        let e = Config::parse("server = \n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml: invalid TOML"), "{e}");
    }

    #[test]
    fn hooks_python_is_a_path_string() {
        let c = Config::parse("hooks_python = \"/v/bin/python\"\n", Path::new("c.toml")).unwrap();
        assert_eq!(c.hooks_python.as_deref(), Some("/v/bin/python"));
        let e = Config::parse("hooks_python = true\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: `hooks_python` must be the path"),
            "{e}"
        );
    }

    #[test]
    fn relay_url_is_one_url_or_a_list_and_bad_ones_are_named() {
        let p = Path::new("c.toml");
        let c = Config::parse("relay_url = \"http://127.0.0.1:3340\"\n", p).unwrap();
        assert_eq!(c.relay_url.len(), 1);
        assert_eq!(c.relay_url[0].as_str(), "http://127.0.0.1:3340/");
        let c = Config::parse(
            "relay_url = [\"https://relay.example.org\", \"http://[::1]:9\"]\n",
            p,
        )
        .unwrap();
        assert_eq!(c.relay_url.len(), 2);
        assert!(
            Config::parse("relay_url = \"\"\n", p)
                .unwrap()
                .relay_url
                .is_empty()
        );
        let e = Config::parse("relay_url = \"ftp://h\"\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: `relay_url`: bad relay URL \"ftp://h\"")
                && e.contains("http or https"),
            "{e}"
        );
        let e = Config::parse("relay_url = [\"http://h\", 3]\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: `relay_url` must be a relay URL"),
            "{e}"
        );
        let e = Config::parse("relay_url = 3\n", p).unwrap_err().to_string();
        assert!(
            e.starts_with("c.toml: `relay_url` must be a relay URL"),
            "{e}"
        );
    }

    #[test]
    fn db_is_read_and_a_bad_url_names_the_key() {
        let p = Path::new("c.toml");
        let c = Config::parse("db = \"postgres://u@h:5432/d\"\n", p).unwrap();
        assert_eq!(c.db.as_deref(), Some("postgres://u@h:5432/d"));
        let c = Config::parse("db = \"/var/lib/palaver/c.sqlite\"\n", p).unwrap();
        assert_eq!(c.db.as_deref(), Some("/var/lib/palaver/c.sqlite"));
        let e = Config::parse("theme = \"light\"\ndb = \"postgres://u:pw@h:x/d\"\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`db`") && e.contains("does not parse"), "{e}");
        assert!(e.contains("line 2") && !e.contains("pw@"), "{e}");
        let e = Config::parse("db = 3\n", p).unwrap_err().to_string();
        assert!(e.starts_with("c.toml: `db` must be a database"), "{e}");
    }

    #[test]
    fn an_unknown_key_is_refused_with_file_key_and_line() {
        let e = Config::parse(
            "server = \"http://h:1\"\n\ncolour = \"red\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.toml: unknown field `colour`")
                && e.contains("`server`, `theme`, `nickname`, `relay_url`")
                && e.ends_with("(line 3)"),
            "{e}"
        );
        let e = Config::parse("[server]\nurl = \"x\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml: `server` must be a string"), "{e}");
    }

    #[test]
    fn a_bad_value_names_the_file_key_and_line() {
        let p = Path::new("c.toml");
        let e = Config::parse("theme = \"light\"\nnickname = true\n", p)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "c.toml: `nickname` must be a string (line 2)");
        let e = Config::parse("\n\nrelay_url = [\"http://h\", \"ftp://g\"]\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: `relay_url`: bad relay URL \"ftp://g\"")
                && e.ends_with("(line 3)"),
            "{e}"
        );
        let e = Config::parse("theme = \"light\"\nserver = \n", p)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml: invalid TOML at line 2: "), "{e}");
    }
}
