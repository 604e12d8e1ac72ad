//! [`Db`] over one rusqlite connection (the group-commit writer's savepoint
//! or the reader).

use super::super::{MarketError, conflict};
use super::{Arg, Cell, Db, Row};
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::borrow::Cow;

/// Constraint failures are the store refusing to break an invariant.
pub fn store_err(e: rusqlite::Error) -> MarketError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            conflict(
                "invariant_violation",
                msg.clone().unwrap_or_else(|| e.to_string()),
            )
        }
        _ => MarketError::Store(e.to_string()),
    }
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

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Arg::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(v)),
            Arg::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Arg::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(b))),
        })
    }
}

/// The statement with PostgreSQL's `$n` parameters as SQLite's `?n` (same
/// number, so order and reuse mean the same). The market's SQL has no `$`
/// inside a literal.
pub fn dialect(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A SQLite connection as the machine's [`Db`].
pub struct SqliteDb<'c>(pub &'c Connection);

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        // The market stores no reals or blobs; show them as text if a
        // tampered file holds one, so the reader reports a type error.
        ValueRef::Real(f) => Cell::Text(f.to_string()),
        ValueRef::Blob(b) => Cell::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

impl Db for SqliteDb<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, MarketError> {
        let mut st = self.0.prepare_cached(&dialect(sql)).sql()?;
        let n = st.execute(rusqlite::params_from_iter(args.iter())).sql()?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, MarketError> {
        let mut st = self.0.prepare_cached(&dialect(sql)).sql()?;
        let n = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(args.iter())).sql()?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().sql()? {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(cell(r.get_ref(i).sql()?));
            }
            out.push(Row(cells));
        }
        Ok(out)
    }

    fn locking(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_parameters_become_numbered_question_marks() {
        assert_eq!(
            dialect("SELECT $2, $10 WHERE a = $1"),
            "SELECT ?2, ?10 WHERE a = ?1"
        );
        assert_eq!(dialect("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn arguments_bind_and_rows_read_back() {
        let c = Connection::open_in_memory().unwrap();
        let mut db = SqliteDb(&c);
        db.execute("CREATE TABLE t (a INTEGER, b TEXT)", &[])
            .unwrap();
        let n = db
            .execute(
                "INSERT INTO t VALUES ($2, $1), ($3, NULL)",
                &[Arg::Text("x"), Arg::Int(7), Arg::Bool(true)],
            )
            .unwrap();
        assert_eq!(n, 2);
        let rows = db
            .query(
                "SELECT a, b, EXISTS (SELECT 1 FROM t WHERE a = $1) FROM t ORDER BY a",
                &[Arg::Int(7)],
            )
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].int(0).unwrap(), 1);
        assert_eq!(rows[0].opt_text(1).unwrap(), None);
        assert_eq!(rows[1].text(1).unwrap(), "x");
        assert!(rows[1].bool(2).unwrap());
        assert!(db.query_one("SELECT a FROM t WHERE a = 99", &[]).is_err());
    }
}
