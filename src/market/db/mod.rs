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
        match e {
            SqlError::Constraint { message, .. } => conflict("invariant_violation", message),
            SqlError::Db(shown) => MarketError::Store(shown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constraint_failure_is_a_conflict_with_the_databases_own_message() {
        let e = MarketError::from(SqlError::Constraint {
            message: "no overdraft".into(),
            shown: "postgres: no overdraft (23514)".into(),
        });
        assert!(
            matches!(&e, MarketError::Conflict { code: "invariant_violation", message } if message == "no overdraft"),
            "{e:?}"
        );
        let e = MarketError::from(SqlError::Db("postgres: gone".into()));
        assert!(
            matches!(&e, MarketError::Store(m) if m == "postgres: gone"),
            "{e:?}"
        );
    }
}
