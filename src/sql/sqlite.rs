//! [`Db`] over one rusqlite connection (a transaction, a savepoint or a
//! plain connection). Statements are prepared once per connection
//! (rusqlite's statement cache).

use super::{Arg, Cell, Db, Dialect, Row, SqlError};
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

/// A rusqlite error as a [`SqlError`]: constraint failures are the
/// database refusing to break an invariant.
pub fn sql_err(e: rusqlite::Error) -> SqlError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            let message = msg.clone().unwrap_or_else(|| e.to_string());
            SqlError::Constraint {
                shown: message.clone(),
                message,
            }
        }
        _ => SqlError::Db(e.to_string()),
    }
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Arg::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(v)),
            Arg::Float(v) => ToSqlOutput::Borrowed(ValueRef::Real(v)),
            Arg::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Arg::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(b))),
        })
    }
}

/// A SQLite connection as a [`Db`].
pub struct SqliteDb<'c>(pub &'c Connection);

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i),
        ValueRef::Real(f) => Cell::Float(f),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        // Palaver stores no blobs; show one as text if a tampered file
        // holds one, so a reader expecting anything else reports it.
        ValueRef::Blob(b) => Cell::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

impl Db for SqliteDb<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError> {
        let mut st = self
            .0
            .prepare_cached(&Dialect::Sqlite.statement(sql))
            .map_err(sql_err)?;
        let n = st
            .execute(rusqlite::params_from_iter(args.iter()))
            .map_err(sql_err)?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError> {
        let mut st = self
            .0
            .prepare_cached(&Dialect::Sqlite.statement(sql))
            .map_err(sql_err)?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(args.iter()))
            .map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err)? {
            let mut cells = Vec::with_capacity(n);
            for i in 0..n {
                cells.push(cell(r.get_ref(i).map_err(sql_err)?));
            }
            out.push(Row(cells));
        }
        Ok(out)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn locking(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_bind_and_rows_read_back() {
        let c = Connection::open_in_memory().unwrap();
        let mut db = SqliteDb(&c);
        db.execute("CREATE TABLE t (a INTEGER, b TEXT, c REAL)", &[])
            .unwrap();
        let n = db
            .execute(
                "INSERT INTO t VALUES ($2, $1, $4), ($3, NULL, NULL)",
                &[
                    Arg::Text("x"),
                    Arg::Int(7),
                    Arg::Bool(true),
                    Arg::Float(0.5),
                ],
            )
            .unwrap();
        assert_eq!(n, 2);
        let rows = db
            .query(
                "SELECT a, b, EXISTS (SELECT 1 FROM t WHERE a = $1), c FROM t ORDER BY a",
                &[Arg::Int(7)],
            )
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].int(0).unwrap(), 1);
        assert_eq!(rows[0].opt_text(1).unwrap(), None);
        assert_eq!(rows[0].opt_float(3).unwrap(), None);
        assert_eq!(rows[1].text(1).unwrap(), "x");
        assert!(rows[1].bool(2).unwrap());
        assert_eq!(rows[1].float(3).unwrap(), 0.5);
        assert!(db.query_one("SELECT a FROM t WHERE a = 99", &[]).is_err());
    }

    #[test]
    fn constraint_failures_are_told_apart() {
        let c = Connection::open_in_memory().unwrap();
        let mut db = SqliteDb(&c);
        db.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)", &[])
            .unwrap();
        db.execute("INSERT INTO t VALUES (1)", &[]).unwrap();
        let e = db.execute("INSERT INTO t VALUES (1)", &[]).unwrap_err();
        assert!(
            matches!(&e, SqlError::Constraint { message, .. } if message.contains("UNIQUE")),
            "{e}"
        );
        let e = db
            .execute("INSERT INTO nowhere VALUES (1)", &[])
            .unwrap_err();
        assert!(matches!(e, SqlError::Db(_)), "{e}");
    }
}
