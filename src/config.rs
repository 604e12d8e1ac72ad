//! `config.toml` in the config dir: settings a user keeps between runs.
//! Flags and environment variables win over it; a missing file is the
//! embedded defaults (`assets/config.toml`).

use std::path::{Path, PathBuf};

/// The documented defaults, shipped in the binary.
pub const DEFAULT: &str = include_str!("../assets/config.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {msg}")]
    Read { path: PathBuf, msg: String },
    #[error("{path}: invalid TOML: {msg}")]
    Parse { path: PathBuf, msg: String },
    #[error("{path}: `{key}` must be {want}")]
    Type {
        path: PathBuf,
        key: &'static str,
        want: &'static str,
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
}

impl Config {
    /// Parses config text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                path: path.to_owned(),
                msg: e.to_string(),
            })?;
        let text_key = |key: &'static str, want: &'static str| match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if s.is_empty() => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ConfigError::Type {
                path: path.to_owned(),
                key,
                want,
            }),
        };
        Ok(Config {
            server: text_key("server", "a string such as \"http://127.0.0.1:8700\"")?,
            theme: text_key("theme", "a theme name such as \"default\" or \"light\"")?,
            nickname: text_key("nickname", "a string")?,
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
}
