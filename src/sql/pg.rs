//! [`Db`] over PostgreSQL, and the one connection pool and retry policy
//! that the community store and the market both use.
//!
//! **Pool.** [`pool`] builds an r2d2 pool of blocking `postgres` clients
//! (no TLS: the server's own network) of at most `size` connections: one is
//! made at once, so an unreachable database is an error when the pool is
//! built; a call waits at most [`CHECKOUT_TIMEOUT`] for a connection (then
//! it fails and `palaver_db_pool_timeouts_total` counts it); a connection
//! is checked with an empty query at checkout unless it answered one within
//! [`CHECK_EVERY`] (and is dropped when its socket closed); every checkout's
//! wait is a metric under the pool's name (`community`, `market`). `palaver
//! serve` builds one pool of `--db-pool` connections for each; a market
//! opened on a bare URL gets [`DEFAULT_POOL_SIZE`].
//!
//! **Statements.** Every connection keeps its statements prepared (a map
//! from the SQL text to the statement, at most [`MAX_STATEMENTS`]): a query
//! is parsed and planned once per connection, then only bound and run.
//!
//! **Retries.** A write is one transaction ([`transaction`]). When
//! PostgreSQL reports that a concurrent transaction got in the way (a
//! serialization failure `40001`, a deadlock `40P01`, or a unique violation
//! `23505`: a concurrent insert of the same key, which the next run sees
//! and answers as a serial run would) the transaction is rolled back and
//! run again, at most [`MAX_ATTEMPTS`] times, after a pause of 200 µs times
//! the attempts so far. Any other error, or the last attempt's, is the
//! caller's.
//!
//! Every call blocks: the `postgres` client runs its own runtime, so it
//! must never be called from an async worker thread (the HTTP routes use
//! `spawn_blocking`), and a pool is closed with [`close`].

use super::{Arg, Cell, Db, Dialect, Row, SqlError};
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Statement};
use r2d2_postgres::r2d2;
use std::collections::HashMap;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How long a call waits for a pooled connection, and a new connection for
/// the server.
pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(10);

/// The connections of a pool built without a size (`palaver serve`'s
/// `--db-pool` default).
pub const DEFAULT_POOL_SIZE: u32 = 16;

/// How many times a write transaction runs before a conflict with other
/// writers is reported.
pub const MAX_ATTEMPTS: u32 = 12;

/// Prepared statements one connection keeps (more are dropped all at once;
/// palaver's SQL is a fixed set well below this).
pub const MAX_STATEMENTS: usize = 256;

/// Why a PostgreSQL database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("the database URL {url} does not parse: {reason}")]
    BadUrl { url: String, reason: String },
    #[error(
        "the database URL {url} names no {what}: write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    )]
    Incomplete { url: String, what: &'static str },
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("migrating the {component} schema in {url}: {reason}")]
    Migrate {
        url: String,
        component: &'static str,
        reason: String,
    },
    #[error(
        "the {component} schema in {url} is version {found}, newer than this palaver knows ({known}): upgrade palaver"
    )]
    TooNew {
        url: String,
        component: &'static str,
        found: i64,
        known: i64,
    },
}

/// `url` with its password (if any) replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    match authority.rfind('@') {
        Some(at) => match authority[..at].find(':') {
            Some(colon) => format!(
                "{}{}:***{}",
                &url[..start],
                &authority[..colon],
                &url[start + at..]
            ),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Parses a `postgres://` URL, refusing one that does not parse or that
/// names no host or user (errors name the URL with its password hidden).
pub fn parse_url(url: &str) -> Result<postgres::Config, PgError> {
    let shown = redact(url);
    if let Some(reason) = url_problem(url) {
        return Err(PgError::BadUrl { url: shown, reason });
    }
    let cfg = postgres::Config::from_str(url).map_err(|e| PgError::BadUrl {
        url: shown.clone(),
        reason: e.to_string(),
    })?;
    if cfg.get_hosts().is_empty() {
        return Err(PgError::Incomplete {
            url: shown,
            what: "host",
        });
    }
    if cfg.get_user().is_none_or(str::is_empty) {
        return Err(PgError::Incomplete {
            url: shown,
            what: "user",
        });
    }
    Ok(cfg)
}

/// What is wrong with a `postgres://` URL's authority, named more precisely
/// than the client's "invalid connection string": a port that is not a
/// number, an empty host among several, a bracketless IPv6 address.
fn url_problem(url: &str) -> Option<String> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let hosts = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    for h in hosts.split(',') {
        let port = if let Some(v6) = h.strip_prefix('[') {
            match v6.find(']') {
                Some(i) => v6[i + 1..].strip_prefix(':'),
                None => return Some(format!("the IPv6 host `{h}` has no closing `]`")),
            }
        } else {
            h.split_once(':').map(|(_, p)| p)
        };
        if let Some(p) = port
            && !p.is_empty()
            && p.parse::<u16>().map_or(true, |n| n == 0)
        {
            return Some(format!("the port `{p}` is not a number from 1 to 65535"));
        }
    }
    None
}

/// How long a connection that answered its checkout check is trusted
/// without another: a busy connection is checked about once per this, an
/// idle one (the one a restarted database broke) at its next checkout.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// One pooled connection: the client and its prepared statements.
pub struct Conn {
    pub client: Client,
    statements: HashMap<String, Statement>,
    /// When the connection last answered the checkout check.
    checked: Option<Instant>,
}

impl Conn {
    /// `sql` prepared for arguments of `types`, from this connection's
    /// cache when it holds it for those types.
    fn statement(&mut self, sql: &str, types: &[Type]) -> Result<Statement, postgres::Error> {
        if let Some(st) = self.statements.get(sql)
            && st.params() == types
        {
            return Ok(st.clone());
        }
        let st = self.client.prepare_typed(sql, types)?;
        if self.statements.len() >= MAX_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), st.clone());
        Ok(st)
    }
}

/// Makes the pool's [`Conn`]s.
#[derive(Debug)]
pub struct Manager(postgres::Config);

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.0.connect(NoTls)?,
            statements: HashMap::new(),
            checked: Some(Instant::now()),
        })
    }

    /// An empty query (a round trip) unless the connection answered one
    /// within [`CHECK_EVERY`]: under load the check would otherwise double
    /// the round trips of a one-statement call.
    fn is_valid(&self, c: &mut Conn) -> Result<(), postgres::Error> {
        if c.client.is_closed() {
            c.checked = None;
        }
        if c.checked.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return Ok(());
        }
        c.client.simple_query("")?;
        c.checked = Some(Instant::now());
        Ok(())
    }

    fn has_broken(&self, c: &mut Conn) -> bool {
        c.client.is_closed()
    }
}

/// A pool of PostgreSQL connections.
pub type Pool = r2d2::Pool<Manager>;

/// A connection checked out of a [`Pool`].
pub type Pooled = r2d2::PooledConnection<Manager>;

/// Records a pool's checkouts under the `pool` label `name`.
#[derive(Debug)]
struct PoolEvents(&'static str);

impl r2d2::HandleEvent for PoolEvents {
    fn handle_checkout(&self, e: r2d2::event::CheckoutEvent) {
        crate::web::metrics::pool_checkout(self.0, e.duration());
    }

    fn handle_timeout(&self, _: r2d2::event::TimeoutEvent) {
        crate::web::metrics::pool_timeout(self.0);
    }
}

/// A pool of at most `size` connections to `url` (see the module doc); its
/// checkouts are metrics under the `pool` label `name`.
pub fn pool(url: &str, size: u32, name: &'static str) -> Result<Pool, PgError> {
    let mut cfg = parse_url(url)?;
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(CHECKOUT_TIMEOUT);
    }
    if cfg.get_application_name().is_none() {
        cfg.application_name("palaver");
    }
    r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(1))
        .connection_timeout(CHECKOUT_TIMEOUT)
        .event_handler(Box::new(PoolEvents(name)))
        .build(Manager(cfg))
        .map_err(|e| PgError::Connect {
            url: redact(url),
            reason: e.to_string(),
        })
}

/// A pool's connections now, and its limit (`GET /metrics`).
pub fn state(pool: &Pool) -> crate::web::metrics::PoolState {
    let s = pool.state();
    crate::web::metrics::PoolState {
        max: pool.max_size(),
        open: s.connections,
        idle: s.idle_connections,
    }
}

/// Closes a pool. Closing a blocking client runs a small runtime of its
/// own, which panics on a thread that drives async tasks (where the last
/// reference to a store is often dropped, e.g. the router at shutdown): there
/// the pool is closed on a thread of its own, and this waits for it.
pub fn close(pool: Pool) {
    if tokio::runtime::Handle::try_current().is_ok() {
        let _ = std::thread::Builder::new()
            .name("pg-close".into())
            .spawn(move || drop(pool))
            .map(|t| t.join());
    } else {
        drop(pool);
    }
}

/// A PostgreSQL error as a [`SqlError`]: class 23 (and the triggers that
/// raise class 23 codes) is the database refusing to break an invariant.
pub fn pg_error(e: &postgres::Error) -> SqlError {
    match e.as_db_error() {
        Some(d) if d.code().code().starts_with("23") => SqlError::Constraint {
            message: d.message().to_owned(),
            shown: format!("postgres: {} ({})", d.message(), d.code().code()),
        },
        Some(d) => SqlError::Db(format!("postgres: {} ({})", d.message(), d.code().code())),
        None => SqlError::Db(format!("postgres: {e}")),
    }
}

/// Whether running the same transaction again may succeed (see the module
/// doc).
pub fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE
            || *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::UNIQUE_VIOLATION
    })
}

static NULL_TEXT: Option<&str> = None;

pub(super) fn params<'a>(args: &'a [Arg<'a>]) -> (Vec<&'a (dyn ToSql + Sync)>, Vec<Type>) {
    args.iter()
        .map(|a| -> (&(dyn ToSql + Sync), Type) {
            match a {
                Arg::Null => (&NULL_TEXT, Type::TEXT),
                Arg::Int(v) => (v, Type::INT8),
                Arg::Float(v) => (v, Type::FLOAT8),
                Arg::Text(s) => (s, Type::TEXT),
                Arg::Bool(b) => (b, Type::BOOL),
            }
        })
        .unzip()
}

pub(super) fn row(r: &postgres::Row) -> Result<Row, SqlError> {
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
            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map(|v| v.map(Cell::Float)),
            Type::FLOAT4 => r
                .try_get::<_, Option<f32>>(i)
                .map(|v| v.map(|v| Cell::Float(v.into()))),
            Type::BOOL => r.try_get::<_, Option<bool>>(i).map(|v| v.map(Cell::Bool)),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                r.try_get::<_, Option<String>>(i).map(|v| v.map(Cell::Text))
            }
            ref t => {
                return Err(SqlError::Db(format!(
                    "column {} is of type {t}, which palaver does not read",
                    c.name()
                )));
            }
        }
        .map_err(|e| SqlError::Db(e.to_string()))?;
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(cells))
}

/// One PostgreSQL connection as a [`Db`].
pub struct PgDb<'c> {
    conn: &'c mut Conn,
    write: bool,
    /// Set when a statement failed in a way a second run may not.
    retry: bool,
}

impl<'c> PgDb<'c> {
    /// Statements on their own (each its own transaction), or inside one
    /// the caller opened; `write` when that transaction writes.
    pub fn new(conn: &'c mut Conn, write: bool) -> PgDb<'c> {
        PgDb {
            conn,
            write,
            retry: false,
        }
    }

    fn fail(&mut self, e: postgres::Error) -> SqlError {
        self.retry |= retryable(&e);
        pg_error(&e)
    }
}

impl Db for PgDb<'_> {
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError> {
        let (p, types) = params(args);
        let r = self
            .conn
            .statement(sql, &types)
            .and_then(|st| self.conn.client.execute(&st, &p));
        r.map_err(|e| self.fail(e))
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError> {
        let (p, types) = params(args);
        let r = self
            .conn
            .statement(sql, &types)
            .and_then(|st| self.conn.client.query(&st, &p));
        match r {
            Ok(rows) => rows.iter().map(row).collect(),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn locking(&self) -> bool {
        self.write
    }
}

/// Rolls back a transaction nobody finished (a refusal, or a panic), so
/// the connection goes back to the pool outside any transaction.
struct Open<'c> {
    conn: &'c mut Conn,
    open: bool,
}

impl Open<'_> {
    fn finish(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.open = false;
        self.conn.client.batch_execute(sql)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.conn.client.batch_execute("ROLLBACK");
        }
    }
}

/// Runs `f` in one write transaction opened by `begin` (a `BEGIN …`
/// batch): committed when it returns `Ok`, rolled back when it refuses,
/// and run again under the module's retry policy.
pub fn transaction<R, E: From<SqlError>>(
    conn: &mut Conn,
    begin: &str,
    mut f: impl FnMut(&mut dyn Db) -> Result<R, E>,
) -> Result<R, E> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt >= MAX_ATTEMPTS;
        conn.client
            .batch_execute(begin)
            .map_err(|e| E::from(pg_error(&e)))?;
        let mut tx = Open {
            conn: &mut *conn,
            open: true,
        };
        let mut db = PgDb::new(&mut *tx.conn, true);
        let r = f(&mut db);
        let retry = db.retry;
        match r {
            Ok(v) => match tx.finish("COMMIT") {
                Ok(()) => return Ok(v),
                Err(e) if retryable(&e) && !last => {}
                Err(e) => return Err(pg_error(&e).into()),
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

/// Runs `f` in one REPEATABLE READ, READ ONLY transaction: several queries
/// that must see one state.
pub fn snapshot<R, E: From<SqlError>>(
    conn: &mut Conn,
    f: impl FnOnce(&mut dyn Db) -> Result<R, E>,
) -> Result<R, E> {
    conn.client
        .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .map_err(|e| E::from(pg_error(&e)))?;
    let mut tx = Open { conn, open: true };
    let v = f(&mut PgDb::new(&mut *tx.conn, false))?;
    tx.finish("COMMIT").map_err(|e| E::from(pg_error(&e)))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_messages() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            redact("postgresql://u:p@ss@h/db?x=1"),
            "postgresql://u:***@h/db?x=1"
        );
    }

    #[test]
    fn urls_that_do_not_parse_or_lack_parts_are_refused_by_name() {
        let e = parse_url("postgres://u@h:notaport/db").unwrap_err();
        assert!(matches!(e, PgError::BadUrl { .. }), "{e}");
        assert!(e.to_string().contains("does not parse"), "{e}");
        assert!(e.to_string().contains("port `notaport`"), "{e}");
        let e = parse_url("postgres://u@h/db?sslmode=sometimes").unwrap_err();
        assert!(e.to_string().contains("does not parse"), "{e}");
        let e = parse_url("postgres://u:pw@h:99999999/db").unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
        let e = parse_url("postgres:///db").unwrap_err();
        assert!(e.to_string().contains("names no host"), "{e}");
        let e = parse_url("postgres://h/db").unwrap_err();
        assert!(e.to_string().contains("names no user"), "{e}");
        assert!(parse_url("postgres://u@127.0.0.1:5432/db").is_ok());
    }
}
