//! The market's SQLite errors (the [`crate::sql::sqlite`] connection runs
//! its statements).

use super::super::MarketError;
pub use crate::sql::sqlite::SqliteDb;

/// Constraint failures are the store refusing to break an invariant.
pub fn store_err(e: rusqlite::Error) -> MarketError {
    crate::sql::sqlite::sql_err(e).into()
}

/// SQLite results as market results.
pub trait Sql<T> {
    fn sql(self) -> Result<T, MarketError>;
}

impl<T> Sql<T> for rusqlite::Result<T> {
    fn sql(self) -> Result<T, MarketError> {
        self.map_err(store_err)
    }
}
