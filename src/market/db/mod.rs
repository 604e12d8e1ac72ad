//! The market machine's side of the SQL seam it shares with the community
//! store ([`crate::sql`]): the machine's SQL is written once against
//! [`Db`], run over SQLite ([`sqlite`], the group-commit writer's savepoint
//! or the reader) and over PostgreSQL ([`postgres`]). A write that must lock
//! the row it loads asks [`Db::locking`] (`FOR NO KEY UPDATE` in
//! PostgreSQL; SQLite's `BEGIN IMMEDIATE` already holds the one write lock).

pub mod postgres;
pub mod sqlite;

use super::{MarketError, conflict};
pub(crate) use crate::sql::args;
pub use crate::sql::{Arg, Cell, Db, FromText, NO_ROWS, Row, SqlError};

/// A failed statement as a market error: a constraint failure is the store
/// refusing to break an invariant.
impl From<SqlError> for MarketError {
    fn from(e: SqlError) -> Self {
        match crate::sql::pg::constraint_message(&e) {
            Some(m) => conflict("invariant_violation", m.to_owned()),
            None => MarketError::Store(e.to_string()),
        }
    }
}
