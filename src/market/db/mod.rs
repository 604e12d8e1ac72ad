//! The seam between the market machine and its two stores: one connection
//! inside a transaction (or a read), as the [`Db`] trait, over SQLite
//! ([`sqlite`]) and over PostgreSQL ([`postgres`]).
//!
//! The machine's SQL is written once. It uses only what both dialects read
//! the same way: `$n` parameters (rewritten to SQLite's `?n`, so their
//! order does not matter), `ON CONFLICT DO NOTHING`, `COALESCE`, `EXISTS`,
//! `CAST(… AS BIGINT)` around sums. Arguments are [`Arg`]s (an integer, a
//! text, a boolean or a text NULL) and results are [`Row`]s of [`Cell`]s,
//! read with typed getters that accept either dialect's answer (an `EXISTS`
//! is a boolean in PostgreSQL and an integer in SQLite). What must differ is
//! asked of the connection: [`Db::locking`] says whether a write must lock
//! the row it loads (`FOR NO KEY UPDATE` in PostgreSQL; SQLite's
//! `BEGIN IMMEDIATE` already holds the one write lock).

pub mod postgres;
pub mod sqlite;

use super::MarketError;

/// One statement argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg<'a> {
    /// A NULL text (every nullable argument the market binds is a text).
    Null,
    Int(i64),
    Text(&'a str),
    Bool(bool),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
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
        &[$($crate::market::db::Arg::from($e)),*][..]
    };
}
pub(crate) use args;

/// One value read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
}

/// A type stored as one fixed text (the vocabulary's enums).
pub trait FromText: Sized {
    /// What the type is called in an error.
    const NAME: &'static str;
    fn from_text(s: &str) -> Option<Self>;
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row(pub Vec<Cell>);

fn bad_column(i: usize, want: &str, got: &Cell) -> MarketError {
    MarketError::Store(format!("column {i}: expected {want}, found {got:?}"))
}

impl Row {
    fn cell(&self, i: usize) -> Result<&Cell, MarketError> {
        self.0
            .get(i)
            .ok_or_else(|| MarketError::Store(format!("no column {i}")))
    }

    pub fn int(&self, i: usize) -> Result<i64, MarketError> {
        match self.cell(i)? {
            Cell::Int(v) => Ok(*v),
            c => Err(bad_column(i, "an integer", c)),
        }
    }

    pub fn text(&self, i: usize) -> Result<String, MarketError> {
        match self.cell(i)? {
            Cell::Text(s) => Ok(s.clone()),
            c => Err(bad_column(i, "a text", c)),
        }
    }

    pub fn opt_text(&self, i: usize) -> Result<Option<String>, MarketError> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Text(s) => Ok(Some(s.clone())),
            c => Err(bad_column(i, "a text or NULL", c)),
        }
    }

    /// A boolean: PostgreSQL's, or SQLite's 0 and 1.
    pub fn bool(&self, i: usize) -> Result<bool, MarketError> {
        match self.cell(i)? {
            Cell::Bool(b) => Ok(*b),
            Cell::Int(v) => Ok(*v != 0),
            c => Err(bad_column(i, "a boolean", c)),
        }
    }

    /// A vocabulary value stored as its text.
    pub fn parse<T: FromText>(&self, i: usize) -> Result<T, MarketError> {
        let s = self.text(i)?;
        T::from_text(&s).ok_or_else(|| MarketError::Store(format!("{s:?} is not a {}", T::NAME)))
    }

    pub fn opt_parse<T: FromText>(&self, i: usize) -> Result<Option<T>, MarketError> {
        match self.opt_text(i)? {
            None => Ok(None),
            Some(s) => T::from_text(&s)
                .map(Some)
                .ok_or_else(|| MarketError::Store(format!("{s:?} is not a {}", T::NAME))),
        }
    }
}

/// What rusqlite says when a query that must answer a row answers none.
pub const NO_ROWS: &str = "Query returned no rows";

/// One connection inside a write transaction or a read.
pub trait Db {
    /// Runs a statement; returns how many rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, MarketError>;

    /// Runs a query; returns every row.
    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, MarketError>;

    /// True in a PostgreSQL write: a transition locks the transaction row it
    /// loads, so two instances never act on one transaction at once.
    fn locking(&self) -> bool;

    /// The first row, if any.
    fn query_opt(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>, MarketError> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// The first row; none is a store error.
    fn query_one(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Row, MarketError> {
        self.query_opt(sql, args)?
            .ok_or_else(|| MarketError::Store(NO_ROWS.into()))
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
        ]);
        assert!(r.bool(0).unwrap());
        assert!(!r.bool(1).unwrap());
        assert_eq!(r.text(2).unwrap(), "x");
        assert_eq!(r.opt_text(3).unwrap(), None);
        assert!(r.int(2).is_err());
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
}
