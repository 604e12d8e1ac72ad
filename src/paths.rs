//! Where palaver keeps its files: the data dir (identity, protocol library,
//! session state dirs) and the config dir.
//!
//! Resolution order: an explicit `--data-dir`, then `PALAVER_DATA_DIR`, then
//! the platform's data directory from the `directories` crate.

use std::path::PathBuf;

/// Environment variable that overrides the data dir.
pub const DATA_DIR_ENV: &str = "PALAVER_DATA_DIR";

/// Why no data dir could be chosen.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot determine a data directory (no home directory); pass --data-dir or set {DATA_DIR_ENV}"
)]
pub struct NoDataDir;

/// The data dir for this invocation.
pub fn data_dir(explicit: Option<PathBuf>) -> Result<PathBuf, NoDataDir> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    if let Some(p) = std::env::var_os(DATA_DIR_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    directories::ProjectDirs::from("", "", "palaver")
        .map(|d| d.data_dir().to_path_buf())
        .ok_or(NoDataDir)
}

/// Environment variable that overrides the config dir.
pub const CONFIG_DIR_ENV: &str = "PALAVER_CONFIG_DIR";

/// The config dir (`config.toml`): `PALAVER_CONFIG_DIR`, else the
/// platform's config directory (`~/.config/palaver` on Linux).
pub fn config_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CONFIG_DIR_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    directories::ProjectDirs::from("", "", "palaver").map(|d| d.config_dir().to_path_buf())
}
