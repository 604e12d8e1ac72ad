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
    #[error("{path}: `{key}`: {msg}")]
    Value {
        path: PathBuf,
        key: &'static str,
        msg: String,
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
        const RELAY_WANT: &str = "a relay URL such as \"http://127.0.0.1:3340\" or a list of them";
        let relay_texts: Vec<&str> = match table.get("relay_url") {
            None => Vec::new(),
            Some(toml::Value::String(s)) if s.is_empty() => Vec::new(),
            Some(toml::Value::String(s)) => vec![s.as_str()],
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ConfigError::Type {
                    path: path.to_owned(),
                    key: "relay_url",
                    want: RELAY_WANT,
                })?,
            Some(_) => {
                return Err(ConfigError::Type {
                    path: path.to_owned(),
                    key: "relay_url",
                    want: RELAY_WANT,
                });
            }
        };
        let relay_url = relay_texts
            .into_iter()
            .map(|t| {
                crate::net::parse_relay_url(t).map_err(|e| ConfigError::Value {
                    path: path.to_owned(),
                    key: "relay_url",
                    msg: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Config {
            server: text_key("server", "a string such as \"http://127.0.0.1:8700\"")?,
            theme: text_key("theme", "a theme name such as \"default\" or \"light\"")?,
            nickname: text_key("nickname", "a string")?,
            relay_url,
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
}
