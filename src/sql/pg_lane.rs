//! An asynchronous lane to PostgreSQL: a few `tokio-postgres` connections
//! that the server's async workers share, for the one-statement calls every
//! signed request makes (the replay window, the rate bucket), the
//! community's browse and a session create's usual case.
//!
//! Why beside the blocking pool ([`super::pg`]): a blocking call hands the
//! request to a thread of tokio's blocking pool, which then sleeps through
//! each round trip and wakes the worker when done; on a busy machine those
//! hand-offs and wake-ups cost more than the statements. Here a request's
//! statement goes onto a shared connection from the worker itself, and
//! statements of requests in flight at once are pipelined on it (written
//! together, answered in order), so one wake-up of the database's backend
//! serves many requests. Transactions stay on the blocking pool: a lane
//! connection runs only statements that are each their own transaction.
//!
//! Each of the [`LANE_CONNECTIONS`] connections is made on first use and
//! again by the first call after it closed (the database ended it); it
//! keeps its statements prepared (keyed by the SQL text, as the pool's do).
//! Every call is bounded by [`CALL_TIMEOUT`], connecting included.

use super::pg::{params, pg_error, row};
use super::{Arg, Row, SqlError};
use postgres::types::Type;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_postgres::{Client, NoTls, Statement};

/// Connections one lane keeps: requests are spread over them in turn.
pub const LANE_CONNECTIONS: usize = 2;

/// The longest a lane call waits, from asking for its connection to its
/// last row.
pub const CALL_TIMEOUT: Duration = super::pg::CHECKOUT_TIMEOUT;

/// `call`, or an error once it has taken [`CALL_TIMEOUT`].
async fn within<T>(
    call: impl std::future::Future<Output = Result<T, SqlError>>,
) -> Result<T, SqlError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(r) => r,
        Err(_) => Err(SqlError::Db(format!(
            "postgres: no answer within {} s",
            CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// A connection of the lane with its prepared statements.
struct Conn {
    client: Client,
    statements: Mutex<HashMap<&'static str, Statement>>,
}

/// One place in the lane: its live connection, if any, and a lock held
/// while one is being made (so callers arriving then wait for it instead of
/// each connecting).
#[derive(Default)]
struct Place {
    live: Mutex<Option<Arc<Conn>>>,
    connecting: tokio::sync::Mutex<()>,
}

/// The lane (see the module doc).
pub struct Lane {
    config: tokio_postgres::Config,
    places: Vec<Place>,
    next: AtomicUsize,
}

impl Lane {
    /// A lane to `url` (checked by [`super::pg::parse_url`] already); it
    /// connects on first use, so it can be made outside a runtime.
    pub fn new(url: &str) -> Result<Lane, SqlError> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| SqlError::Db(format!("the database URL does not parse: {e}")))?;
        config.connect_timeout(CALL_TIMEOUT);
        Ok(Lane {
            config,
            places: (0..LANE_CONNECTIONS).map(|_| Place::default()).collect(),
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `sql` with `args` (each statement its own transaction) and
    /// returns its rows.
    pub async fn query(&self, sql: &'static str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError> {
        let (p, types) = params(args);
        within(async {
            let (conn, st) = self.prepared(sql, &types).await?;
            let rows = conn.client.query(&st, &p).await.map_err(|e| pg_error(&e))?;
            rows.iter().map(row).collect()
        })
        .await
    }

    /// Runs `sql` with `args` (its own transaction) and returns the rows it
    /// changed.
    pub async fn execute(&self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, SqlError> {
        let (p, types) = params(args);
        within(async {
            let (conn, st) = self.prepared(sql, &types).await?;
            conn.client.execute(&st, &p).await.map_err(|e| pg_error(&e))
        })
        .await
    }

    /// A connection and `sql` prepared on it for `types`.
    async fn prepared(
        &self,
        sql: &'static str,
        types: &[Type],
    ) -> Result<(Arc<Conn>, Statement), SqlError> {
        let conn = self.conn().await?;
        match conn.statement(sql, types).await {
            Ok(st) => Ok((conn, st)),
            Err(e) => Err(pg_error(&e)),
        }
    }

    /// The next place's connection, made first when it has none or the one
    /// it has is closed.
    async fn conn(&self) -> Result<Arc<Conn>, SqlError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.places.len();
        let place = &self.places[i];
        if let Some(c) = place.live() {
            return Ok(c);
        }
        let _one = place.connecting.lock().await;
        if let Some(c) = place.live() {
            return Ok(c);
        }
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|e| SqlError::Db(format!("postgres: cannot connect: {e}")))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "a PostgreSQL lane connection ended");
            }
        });
        let c = Arc::new(Conn {
            client,
            statements: Mutex::default(),
        });
        *place.lock() = Some(c.clone());
        Ok(c)
    }
}

impl Place {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Conn>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live(&self) -> Option<Arc<Conn>> {
        self.lock()
            .as_ref()
            .filter(|c| !c.client.is_closed())
            .cloned()
    }
}

impl Conn {
    /// `sql` prepared for `types`, from this connection's cache when it
    /// holds it for those types.
    async fn statement(
        &self,
        sql: &'static str,
        types: &[Type],
    ) -> Result<Statement, tokio_postgres::Error> {
        let cached = self
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
            .filter(|st| st.params() == types)
            .cloned();
        if let Some(st) = cached {
            return Ok(st);
        }
        let st = self.client.prepare_typed(sql, types).await?;
        self.statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(sql, st.clone());
        Ok(st)
    }
}
