//! Which database a community server keeps its records in: `palaver serve
//! --db`, `PALAVER_DB` or `db` in config.toml. A plain path or
//! `sqlite:PATH` is a SQLite file (one process); `postgres://…` (or
//! `postgresql://…`) is a PostgreSQL database that any number of
//! `palaver serve` instances share.

use super::pg::{self, PgError, PgStore};
use super::sqlite::SqliteStore;
use super::store::{Migrated, Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A database named on the command line, in the environment or the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL (checked to parse).
    Postgres(String),
}

/// Why a database could not be named or opened.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("the database is empty: give a path, sqlite:PATH or postgres://USER@HOST/DB")]
    Empty,
    #[error(
        "the database {0} has an unknown scheme: use a path, sqlite:PATH or postgres://USER@HOST/DB"
    )]
    Scheme(String),
    #[error(transparent)]
    Postgres(#[from] PgError),
    #[error("opening {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: StoreError,
    },
}

impl Database {
    /// Reads `--db`'s value (see the module doc). A PostgreSQL URL that does
    /// not parse is refused here, naming what is wrong.
    pub fn parse(text: &str) -> Result<Database, DbError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(DbError::Empty);
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            pg::parse_url(t)?;
            return Ok(Database::Postgres(t.to_owned()));
        }
        if let Some(rest) = t.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(DbError::Empty);
            }
            return Ok(Database::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = t.split_once("://")
            && !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return Err(DbError::Scheme(pg::redact(t)));
        }
        Ok(Database::Sqlite(PathBuf::from(t)))
    }

    /// A SQLite file.
    pub fn sqlite(path: &Path) -> Database {
        Database::Sqlite(path.to_owned())
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Database::Sqlite(_) => "sqlite",
            Database::Postgres(_) => "postgres",
        }
    }

    /// The database as messages show it (a password hidden).
    pub fn shown(&self) -> String {
        match self {
            Database::Sqlite(p) => p.display().to_string(),
            Database::Postgres(u) => pg::redact(u),
        }
    }

    /// Opens (creating and migrating) the community's store; `pool_size`
    /// bounds a PostgreSQL pool's connections.
    pub fn open(&self, pool_size: u32) -> Result<(Arc<dyn Store>, Migrated), DbError> {
        match self {
            Database::Sqlite(p) => {
                let (s, m) = SqliteStore::open_migrated(p).map_err(|source| DbError::Sqlite {
                    path: p.display().to_string(),
                    source,
                })?;
                Ok((Arc::new(s), m))
            }
            Database::Postgres(u) => {
                let (s, m) = PgStore::connect(u, pool_size)?;
                Ok((Arc::new(s), m))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_sqlite_and_postgres_urls_are_told_apart() {
        assert_eq!(
            Database::parse("/tmp/x.sqlite").unwrap(),
            Database::Sqlite("/tmp/x.sqlite".into())
        );
        assert_eq!(
            Database::parse("sqlite:rel/x.db").unwrap(),
            Database::Sqlite("rel/x.db".into())
        );
        assert_eq!(
            Database::parse("sqlite:///abs/x.db").unwrap(),
            Database::Sqlite("/abs/x.db".into())
        );
        assert_eq!(
            Database::parse("postgres://u@h:5432/db").unwrap().kind(),
            "postgres"
        );
        assert_eq!(
            Database::parse("postgresql://u@h/db").unwrap().kind(),
            "postgres"
        );
        assert!(matches!(Database::parse("  "), Err(DbError::Empty)));
        assert!(matches!(Database::parse("sqlite:"), Err(DbError::Empty)));
        let e = Database::parse("mysql://u:pw@h/db").unwrap_err();
        assert!(matches!(e, DbError::Scheme(_)), "{e}");
        assert!(!e.to_string().contains("pw"), "{e}");
        let e = Database::parse("postgres://u@h:port/db").unwrap_err();
        assert!(e.to_string().contains("does not parse"), "{e}");
    }
}
