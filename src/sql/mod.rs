//! The one seam between palaver's SQL and its two databases, shared by the
//! community store ([`crate::community::store`]) and the market machine
//! ([`crate::market`]): one connection inside a transaction (or a read), as
//! the [`Db`] trait, over SQLite ([`sqlite`]) and over PostgreSQL ([`pg`],
//! which also holds the one PostgreSQL pool and retry policy). On
//! PostgreSQL the server's hottest one-statement calls also run on an async
//! lane ([`pg_lane`]) with the same SQL text.
//!
//! Queries are written once. They use what both dialects read the same way:
//! `$n` parameters (rewritten to SQLite's `?n`, so their order does not
//! matter), `ON CONFLICT … DO NOTHING` / `DO UPDATE SET … = excluded.…`,
//! `RETURNING`, `COALESCE`, `EXISTS`, `CAST(… AS BIGINT)` and
//! `CAST(… AS DOUBLE PRECISION)`. Arguments are [`Arg`]s and results are
//! [`Row`]s of [`Cell`]s, read with typed getters that accept either
//! dialect's answer (an `EXISTS` is a boolean in PostgreSQL and an integer
//! in SQLite). What cannot be written the same way is [`Dialect`]'s, here
//! and nowhere else: row locks, byte-order collation, JSON fields, and
//! whether text may hold a NUL.

pub mod pg;
pub mod pg_lane;
pub mod sqlite;

use std::borrow::Cow;

/// A statement that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// The database refused to break a constraint (SQLite's constraint
    /// failures, PostgreSQL's class 23 and the triggers that raise it):
    /// the database's own `message`, and as logs `shown` it (with the
    /// database and the code where there is one).
    #[error("{shown}")]
    Constraint { message: String, shown: String },
    /// Anything else: the connection, the statement, a column of an
    /// unexpected type.
    #[error("{0}")]
    Db(String),
}

/// One statement argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    /// A NULL text (every nullable argument palaver binds is a text).
    Null,
    Int(i64),
    Float(f64),
    Text(&'a str),
    Bool(bool),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Float(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&&'a str> for Arg<'a> {
    fn from(v: &&'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a, T: Into<Arg<'a>>> From<Option<T>> for Arg<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Arg::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Arg::Null, Arg::Text)
    }
}

/// The arguments of one statement: `args![a, b, c]`.
macro_rules! args {
    ($($e:expr),* $(,)?) => {
        &[$($crate::sql::Arg::from($e)),*][..]
    };
}
pub(crate) use args;

/// One value read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// A type stored as one fixed text (the market vocabulary's enums).
pub trait FromText: Sized {
    /// What the type is called in an error.
    const NAME: &'static str;
    fn from_text(s: &str) -> Option<Self>;
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Cell>);

fn bad_column(i: usize, want: &str, got: &Cell) -> SqlError {
    SqlError::Db(format!("column {i}: expected {want}, found {got:?}"))
}

impl Row {
    fn cell(&self, i: usize) -> Result<&Cell, SqlError> {
        self.0
            .get(i)
            .ok_or_else(|| SqlError::Db(format!("no column {i}")))
    }

    pub fn int(&self, i: usize) -> Result<i64, SqlError> {
        match self.cell(i)? {
            Cell::Int(v) => Ok(*v),
            c => Err(bad_column(i, "an integer", c)),
        }
    }

    /// A number: a float, or an integer (SQLite keeps a whole REAL as one
    /// when it was written as an integer).
    pub fn float(&self, i: usize) -> Result<f64, SqlError> {
        match self.cell(i)? {
            Cell::Float(v) => Ok(*v),
            Cell::Int(v) => Ok(*v as f64),
            c => Err(bad_column(i, "a number", c)),
        }
    }

    pub fn opt_float(&self, i: usize) -> Result<Option<f64>, SqlError> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            _ => self.float(i).map(Some),
        }
    }

    pub fn text(&self, i: usize) -> Result<String, SqlError> {
        match self.cell(i)? {
            Cell::Text(s) => Ok(s.clone()),
            c => Err(bad_column(i, "a text", c)),
        }
    }

    pub fn opt_text(&self, i: usize) -> Result<Option<String>, SqlError> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Text(s) => Ok(Some(s.clone())),
            c => Err(bad_column(i, "a text or NULL", c)),
        }
    }

    /// A boolean: PostgreSQL's, or SQLite's 0 and 1.
    pub fn bool(&self, i: usize) -> Result<bool, SqlError> {
        match self.cell(i)? {
            Cell::Bool(b) => Ok(*b),
            Cell::Int(v) => Ok(*v != 0),
            c => Err(bad_column(i, "a boolean", c)),
        }
    }

    /// A vocabulary value stored as its text.
    pub fn parse<T: FromText>(&self, i: usize) -> Result<T, SqlError> {
        let s = self.text(i)?;
        T::from_text(&s).ok_or_else(|| SqlError::Db(format!("{s:?} is not a {}", T::NAME)))
    }

    pub fn opt_parse<T: FromText>(&self, i: usize) -> Result<Option<T>, SqlError> {
        match self.opt_text(i)? {
            None => Ok(None),
            Some(s) => T::from_text(&s)
                .map(Some)
                .ok_or_else(|| SqlError::Db(format!("{s:?} is not a {}", T::NAME))),
        }
    }
}

/// What rusqlite says when a query that must answer a row answers none.
pub const NO_ROWS: &str = "Query returned no rows";

/// Which database a [`Db`] talks to, and every way its SQL must differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The statement as this dialect reads it: PostgreSQL's `$n`
    /// parameters as SQLite's `?n` (same number, so order and reuse mean
    /// the same). Palaver's SQL has no `$` followed by a digit inside a
    /// literal.
    pub fn statement(self, sql: &str) -> Cow<'_, str> {
        if self == Dialect::Postgres || !sql.contains('$') {
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

    /// Appended to a `SELECT` that a write reads before it changes the
    /// rows: PostgreSQL locks them until the transaction ends; SQLite's
    /// `BEGIN IMMEDIATE` already holds the one write lock.
    pub fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// The statement that takes a transaction-long advisory lock on
    /// (`$1`, a lock class, and `$2`, a text hashed into the key), on
    /// PostgreSQL; none on SQLite, whose write transaction holds the one
    /// write lock already.
    pub fn advisory_lock(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => {
                Some("SELECT pg_advisory_xact_lock(CAST($1 AS INTEGER), hashtext($2))")
            }
        }
    }

    /// The collation that compares text byte by byte (SQLite's default,
    /// PostgreSQL's `"C"`), so pages and orders agree on both.
    pub fn bytewise(self) -> &'static str {
        match self {
            Dialect::Sqlite => "COLLATE BINARY",
            Dialect::Postgres => "COLLATE \"C\"",
        }
    }

    /// The text field `key` of the JSON object stored as text in `column`.
    pub fn json_text(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Dialect::Postgres => format!("({column}::jsonb->>'{key}')"),
        }
    }

    /// The number field `key` of the JSON object stored as text in `column`.
    pub fn json_number(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Dialect::Postgres => format!("({column}::jsonb->>'{key}')::float8"),
        }
    }

    /// Whether one statement may change rows in a `WITH` and use what it
    /// changed (PostgreSQL's data-modifying `WITH … UPDATE … RETURNING`):
    /// then a write of two steps is one statement, atomic on its own, and
    /// needs no `BEGIN` and `COMMIT` round trips. SQLite has no such `WITH`.
    pub fn writes_in_with(self) -> bool {
        self == Dialect::Postgres
    }

    /// Whether a text may hold a NUL. PostgreSQL's cannot: a lookup with
    /// one matches no row, and the store answers so without asking.
    pub fn holds_nul(self) -> bool {
        self == Dialect::Sqlite
    }
}

/// One connection inside a write transaction or a read.
pub trait Db {
    /// Runs a statement; returns how many rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError>;

    /// Runs a query; returns every row.
    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError>;

    /// The database's dialect.
    fn dialect(&self) -> Dialect;

    /// True in a PostgreSQL write: a write locks the rows it loads before
    /// changing them, so two instances never act on one row at once.
    fn locking(&self) -> bool;

    /// The first row, if any.
    fn query_opt(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>, SqlError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// The first row; none is an error.
    fn query_one(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Row, SqlError> {
        self.query_opt(sql, args)?
            .ok_or_else(|| SqlError::Db(NO_ROWS.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_either_dialects_answer() {
        let r = Row(vec![
            Cell::Int(1),
            Cell::Bool(false),
            Cell::Text("x".into()),
            Cell::Null,
            Cell::Float(1.5),
        ]);
        assert!(r.bool(0).unwrap());
        assert!(!r.bool(1).unwrap());
        assert_eq!(r.text(2).unwrap(), "x");
        assert_eq!(r.opt_text(3).unwrap(), None);
        assert_eq!(r.float(4).unwrap(), 1.5);
        assert_eq!(r.float(0).unwrap(), 1.0);
        assert_eq!(r.opt_float(3).unwrap(), None);
        assert!(r.float(2).is_err());
        assert!(r.int(2).is_err());
        assert!(r.int(4).is_err());
        assert!(r.text(0).is_err());
        assert!(r.int(9).is_err());
    }

    #[test]
    fn options_bind_as_null() {
        let none: Option<&str> = None;
        assert_eq!(Arg::from(none), Arg::Null);
        assert_eq!(Arg::from(Some(3i64)), Arg::Int(3));
        assert_eq!(Arg::from(&Some("a".to_owned())), Arg::Text("a"));
    }

    #[test]
    fn dollar_parameters_become_numbered_question_marks_on_sqlite_only() {
        let sql = "SELECT $2, $10 WHERE a = $1";
        assert_eq!(
            Dialect::Sqlite.statement(sql),
            "SELECT ?2, ?10 WHERE a = ?1"
        );
        assert_eq!(Dialect::Postgres.statement(sql), sql);
        assert_eq!(Dialect::Sqlite.statement("SELECT 1"), "SELECT 1");
    }
}
