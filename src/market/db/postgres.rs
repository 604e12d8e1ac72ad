//! The market's PostgreSQL store: the shared pool and retry policy
//! ([`crate::sql::pg`]), one transaction per write.
//!
//! A write runs at READ COMMITTED: its first read of a transaction row
//! locks it (`FOR NO KEY UPDATE`, see [`Db::locking`]), every state change
//! is a compare-and-swap on that row, and the schema's triggers lock the
//! same row before they check anything about it (`store_pg`), so writers of
//! one transaction take turns while writers of different transactions run
//! side by side. Concurrent commits share WAL flushes (PostgreSQL's own
//! group commit); `synchronous_commit` stays on unless the market is not
//! `durable`. A write that conflicts with a concurrent one is run again
//! under the shared retry policy.
//!
//! Every call blocks: the `postgres` client runs its own runtime, so it
//! must never be called from an async worker thread (the HTTP routes use
//! `spawn_blocking`).

use super::super::MarketError;
use super::Db;
use crate::sql::pg::{self as shared, Pooled};
use std::sync::atomic::{AtomicU64, Ordering};

/// A pool of PostgreSQL connections (the shared policy's).
pub type PgPool = shared::Pool;

/// Where a PostgreSQL market gets its connections.
pub enum PgSource {
    /// A `postgres://` URL (or key=value string): a pool of
    /// [`shared::DEFAULT_POOL_SIZE`] connections is built for it.
    Url(String),
    /// A pool the caller built (and may share).
    Pool(PgPool),
}

impl From<&str> for PgSource {
    fn from(u: &str) -> Self {
        PgSource::Url(u.to_owned())
    }
}

impl From<String> for PgSource {
    fn from(u: String) -> Self {
        PgSource::Url(u)
    }
}

impl From<&String> for PgSource {
    fn from(u: &String) -> Self {
        PgSource::Url(u.clone())
    }
}

impl From<PgPool> for PgSource {
    fn from(p: PgPool) -> Self {
        PgSource::Pool(p)
    }
}

/// Builds the market's pool for `url` (blocks until it holds a first
/// connection).
pub fn pool(url: &str) -> Result<PgPool, MarketError> {
    shared::pool(url, shared::DEFAULT_POOL_SIZE, "market")
        .map_err(|e| MarketError::Store(e.to_string()))
}

/// A PostgreSQL error as a market error: class 23 (and the schema's
/// triggers, which raise class 23 codes) is the store refusing to break an
/// invariant, as SQLite's constraint failures are.
pub fn pg_err(e: postgres::Error) -> MarketError {
    shared::pg_error(&e).into()
}

/// The market's PostgreSQL store.
pub struct Pg {
    /// Always set until the store is dropped.
    pool: Option<PgPool>,
    durable: bool,
    commits: AtomicU64,
}

impl Drop for Pg {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            shared::close(pool);
        }
    }
}

impl Pg {
    pub fn new(pool: PgPool, durable: bool) -> Pg {
        Pg {
            pool: Some(pool),
            durable,
            commits: AtomicU64::new(0),
        }
    }

    /// Write transactions committed through this market.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// The pool's connections now, and its limit (`GET /metrics`).
    pub fn pool_state(&self) -> Option<crate::web::metrics::PoolState> {
        self.pool.as_ref().map(shared::state)
    }

    fn connection(&self) -> Result<Pooled, MarketError> {
        self.pool
            .as_ref()
            .ok_or_else(|| MarketError::Store("the PostgreSQL pool is closed".into()))?
            .get()
            .map_err(|e| MarketError::Store(format!("no PostgreSQL connection: {e}")))
    }

    /// Runs `f` in one READ COMMITTED transaction: committed when it
    /// returns `Ok`, rolled back when it refuses, and run again (see
    /// [`shared::MAX_ATTEMPTS`]) when PostgreSQL reports a conflict with a
    /// concurrent transaction.
    pub fn write<R>(
        &self,
        f: impl FnMut(&mut dyn Db) -> Result<R, MarketError>,
    ) -> Result<R, MarketError> {
        let mut conn = self.connection()?;
        let begin = if self.durable {
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO ON"
        } else {
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO OFF"
        };
        let v = shared::transaction(&mut conn, begin, f)?;
        self.commits.fetch_add(1, Ordering::Relaxed);
        Ok(v)
    }

    /// Runs `f` on a connection: in one REPEATABLE READ, READ ONLY
    /// transaction when `snapshot` (several queries that must agree),
    /// else each statement on its own.
    pub fn read<R>(
        &self,
        snapshot: bool,
        f: impl FnOnce(&mut dyn Db) -> Result<R, MarketError>,
    ) -> Result<R, MarketError> {
        let mut conn = self.connection()?;
        if snapshot {
            shared::snapshot(&mut conn, f)
        } else {
            f(&mut shared::PgDb::new(&mut conn, false))
        }
    }
}
