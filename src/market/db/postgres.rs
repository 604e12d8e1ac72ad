//! [`Db`] over PostgreSQL: an r2d2 pool of blocking `postgres` clients,
//! one transaction per write, retried a bounded number of times when
//! PostgreSQL says another transaction got in the way.
//!
//! A write runs at READ COMMITTED: its first read of a transaction row
//! locks it (`FOR NO KEY UPDATE`, see [`Db::locking`]), every state change
//! is a compare-and-swap on that row, and the schema's triggers lock the
//! same row before they check anything about it (`store_pg`), so writers of
//! one transaction take turns while writers of different transactions run
//! side by side. Concurrent commits share WAL flushes (PostgreSQL's own
//! group commit); `synchronous_commit` stays on unless the market is not
//! `durable`. Serialization failures, deadlocks and unique violations (a
//! concurrent insert of the same key: the retry sees it and refuses the
//! way a serial run would) roll back and run the write again.
//!
//! Every call blocks: the `postgres` client runs its own runtime, so it
//! must never be called from an async worker thread (the HTTP routes use
//! `spawn_blocking`).

use super::super::{MarketError, conflict};
use super::{Arg, Cell, Db, Row};
use postgres::Client;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A pool of PostgreSQL connections without TLS (the server's own network).
pub type PgPool = r2d2::Pool<PostgresConnectionManager<postgres::NoTls>>;

/// How many times a write runs before a conflict with other writers is
/// reported.
pub const MAX_ATTEMPTS: u32 = 12;

/// Connections a pool built from a URL keeps at most.
pub const POOL_SIZE: u32 = 24;

/// Where a PostgreSQL market gets its connections.
pub enum PgSource {
    /// A `postgres://` URL (or key=value string): a pool of
    /// [`POOL_SIZE`] connections is built for it.
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

/// Builds a pool for `url` (blocks until it holds a first connection).
pub fn pool(url: &str, size: u32) -> Result<PgPool, MarketError> {
    let config: postgres::Config = url
        .parse()
        .map_err(|e| MarketError::Store(format!("the PostgreSQL URL is not valid: {e}")))?;
    r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(1))
        .connection_timeout(Duration::from_secs(15))
        .build(PostgresConnectionManager::new(config, postgres::NoTls))
        .map_err(|e| MarketError::Store(format!("connecting to PostgreSQL: {e}")))
}

/// A PostgreSQL error as a market error: class 23 (and the schema's
/// triggers, which raise class 23 codes) is the store refusing to break an
/// invariant, as SQLite's constraint failures are.
pub fn pg_err(e: postgres::Error) -> MarketError {
    if let Some(db) = e.as_db_error()
        && db.code().code().starts_with("23")
    {
        return conflict("invariant_violation", db.message().to_owned());
    }
    MarketError::Store(e.to_string())
}

/// Whether running the same write again may succeed.
fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE
            || *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::UNIQUE_VIOLATION
    })
}

static NULL_TEXT: Option<&str> = None;

fn params<'a>(args: &'a [Arg<'a>]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    args.iter()
        .map(|a| -> (&(dyn ToSql + Sync), Type) {
            match a {
                Arg::Null => (&NULL_TEXT, Type::TEXT),
                Arg::Int(v) => (v, Type::INT8),
                Arg::Text(s) => (s, Type::TEXT),
                Arg::Bool(b) => (b, Type::BOOL),
            }
        })
        .collect()
}

fn row(r: &postgres::Row) -> Result<Row, MarketError> {
    let mut cells = Vec::with_capacity(r.len());
    for (i, c) in r.columns().iter().enumerate() {
        let cell = match *c.type_() {
            Type::INT8 => r.try_get::<_, Option<i64>>(i).map(|v| v.map(Cell::Int)),
            Type::INT4 => r
                .try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|v| Cell::Int(v.into()))),
            Type::INT2 => r
                .try_get::<_, Option<i16>>(i)
                .map(|v| v.map(|v| Cell::Int(v.into()))),
            Type::BOOL => r.try_get::<_, Option<bool>>(i).map(|v| v.map(Cell::Bool)),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                r.try_get::<_, Option<String>>(i).map(|v| v.map(Cell::Text))
            }
            ref t => {
                return Err(MarketError::Store(format!(
                    "column {} is of type {t}, which the market does not read",
                    c.name()
                )));
            }
        }
        .map_err(|e| MarketError::Store(e.to_string()))?;
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

/// One PostgreSQL connection as the machine's [`Db`].
pub struct PgDb<'c> {
    client: &'c mut Client,
    write: bool,
    /// Set when a statement failed in a way a second run may not.
    retry: bool,
}

impl PgDb<'_> {
    fn fail(&mut self, e: postgres::Error) -> MarketError {
        self.retry |= retryable(&e);
        pg_err(e)
    }
}

impl Db for PgDb<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, MarketError> {
        let p = params(args);
        match self.client.execute_typed(sql, &p) {
            Ok(n) => Ok(n),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, MarketError> {
        let p = params(args);
        match self.client.query_typed(sql, &p) {
            Ok(rows) => rows.iter().map(row).collect(),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn locking(&self) -> bool {
        self.write
    }
}

/// Rolls back a transaction nobody finished (a refusal, or a panic), so
/// the connection goes back to the pool outside any transaction.
struct Open<'c> {
    client: &'c mut Client,
    open: bool,
}

impl Open<'_> {
    fn finish(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.open = false;
        self.client.batch_execute(sql)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
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
        // A `postgres` client closes by blocking on its own runtime, which
        // must not happen on an async worker thread: when dropped inside a
        // runtime, the pool (and its connections) close on a plain thread.
        if let Some(pool) = self.pool.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let _ = std::thread::Builder::new()
                .name("market-pg-close".into())
                .spawn(move || drop(pool));
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
        self.pool.as_ref().map(|p| {
            let s = p.state();
            crate::web::metrics::PoolState {
                max: p.max_size(),
                open: s.connections,
                idle: s.idle_connections,
            }
        })
    }

    fn connection(
        &self,
    ) -> Result<r2d2::PooledConnection<PostgresConnectionManager<postgres::NoTls>>, MarketError>
    {
        self.pool
            .as_ref()
            .ok_or_else(|| MarketError::Store("the PostgreSQL pool is closed".into()))?
            .get()
            .map_err(|e| MarketError::Store(format!("no PostgreSQL connection: {e}")))
    }

    /// Runs `f` in one READ COMMITTED transaction: committed when it
    /// returns `Ok`, rolled back when it refuses, and run again (at most
    /// [`MAX_ATTEMPTS`] times) when PostgreSQL reports a conflict with a
    /// concurrent transaction.
    pub fn write<R>(
        &self,
        mut f: impl FnMut(&mut dyn Db) -> Result<R, MarketError>,
    ) -> Result<R, MarketError> {
        let mut conn = self.connection()?;
        let begin = if self.durable {
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO ON"
        } else {
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO OFF"
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= MAX_ATTEMPTS;
            conn.batch_execute(begin).map_err(pg_err)?;
            let mut tx = Open {
                client: &mut conn,
                open: true,
            };
            let mut db = PgDb {
                client: &mut *tx.client,
                write: true,
                retry: false,
            };
            let r = f(&mut db);
            let retry = db.retry;
            match r {
                Ok(v) => match tx.finish("COMMIT") {
                    Ok(()) => {
                        self.commits.fetch_add(1, Ordering::Relaxed);
                        return Ok(v);
                    }
                    Err(e) if retryable(&e) && !last => {}
                    Err(e) => return Err(pg_err(e)),
                },
                Err(e) => {
                    drop(tx);
                    if !retry || last {
                        return Err(e);
                    }
                }
            }
            // Let the transaction that got in the way finish.
            std::thread::sleep(Duration::from_micros(200 * u64::from(attempt)));
        }
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
        if !snapshot {
            let mut db = PgDb {
                client: &mut conn,
                write: false,
                retry: false,
            };
            return f(&mut db);
        }
        conn.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(pg_err)?;
        let mut tx = Open {
            client: &mut conn,
            open: true,
        };
        let mut db = PgDb {
            client: &mut *tx.client,
            write: false,
            retry: false,
        };
        let v = f(&mut db)?;
        tx.finish("COMMIT").map_err(pg_err)?;
        Ok(v)
    }
}
