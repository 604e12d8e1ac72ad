//! The community's store on PostgreSQL, for a community served by several
//! `palaver serve` instances over one database (docs/deploy.md).
//!
//! The same [`Store`] as SQLite's, through `postgres` (the blocking face of
//! tokio-postgres) and an r2d2 pool: the routes call the store on tokio's
//! blocking pool, never on an async worker (the blocking client would
//! panic there). Everything two instances must agree on is in the database:
//! the replay window and the rate-limit buckets are tables updated by one
//! atomic statement each; every change that reads before it writes is one
//! transaction holding the lock that makes the read still true at the write
//! (a per-key advisory lock for the invitation limit, the invitation's row
//! for a session, the session's row for results), and single-use rows are
//! taken by `DELETE … RETURNING`. Schema migrations are versioned in
//! `schema_version` and applied in one transaction under an advisory lock,
//! so instances starting together migrate once.

use super::groups::Group;
use super::recent::{Admission, Refusal, keep_until};
use super::store::{
    Agent, CommunityGauges, InvitationRow, Migrated, NewProtocol, NewSession, PoolState, Renewal,
    Res, SessionRow, Store, StoreError, invitation_view, tagged,
};
use crate::json::{Map, Value};
use postgres::error::SqlState;
use postgres::{NoTls, Transaction};
use r2d2_postgres::{PostgresConnectionManager, r2d2};
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The pool of connections to one database.
pub type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// Why a PostgreSQL store could not be opened.
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

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        StoreError(e.to_string())
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        // The server's own message (constraint, syntax) when there is one.
        match e.as_db_error() {
            Some(d) => StoreError(format!("postgres: {} ({})", d.message(), d.code().code())),
            None => StoreError(format!("postgres: {e}")),
        }
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(e: r2d2::Error) -> Self {
        StoreError(format!("no database connection: {e}"))
    }
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

/// A pool of at most `size` connections to `url` (one is made at once, so
/// an unreachable database is an error here, within `connect_timeout`);
/// its checkouts are metrics under the `pool` label `name`.
pub fn pool(
    url: &str,
    size: u32,
    connect_timeout: Duration,
    name: &'static str,
) -> Result<Pool, PgError> {
    let mut cfg = parse_url(url)?;
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(connect_timeout);
    }
    if cfg.get_application_name().is_none() {
        cfg.application_name("palaver");
    }
    r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(1))
        .connection_timeout(connect_timeout)
        .event_handler(Box::new(super::pool_metrics::PoolEvents(name)))
        .build(PostgresConnectionManager::new(cfg, NoTls))
        .map_err(|e| PgError::Connect {
            url: redact(url),
            reason: e.to_string(),
        })
}

/// Whether a failed transaction may simply be run again.
pub fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    })
}

/// Runs `f` in a transaction on `conn`, again (up to 8 times) when
/// PostgreSQL asks for a retry (serialization failure, deadlock).
pub fn in_transaction<T>(
    conn: &mut postgres::Client,
    mut f: impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
) -> Result<T, postgres::Error> {
    let mut attempt = 0;
    loop {
        let mut tx = conn.transaction()?;
        let r = match f(&mut tx) {
            Ok(v) => tx.commit().map(|()| v),
            Err(e) => Err(e),
        };
        match r {
            Err(e) if attempt < 8 && retryable(&e) => attempt += 1,
            r => return r,
        }
    }
}

/// The advisory lock every palaver migration takes (its transaction's
/// length): instances starting together migrate one after the other.
pub const MIGRATION_LOCK: i64 = 0x7061_6c61_7665_7201;

/// Applies `migrations` (index + 1 = version) of `component` in one
/// transaction under [`MIGRATION_LOCK`], recording the version in
/// `schema_version (component, version)`. Running it again is a no-op.
pub fn migrate(
    conn: &mut postgres::Client,
    component: &'static str,
    migrations: &[&str],
) -> Result<(i64, i64), MigrateError> {
    let known = migrations.len() as i64;
    let mut tx = conn.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, \
         version BIGINT NOT NULL, migrated_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )?;
    let from: i64 = tx
        .query_opt(
            "SELECT version FROM schema_version WHERE component = $1",
            &[&component],
        )?
        .map(|r| r.get(0))
        .unwrap_or(0);
    if from > known {
        return Err(MigrateError::TooNew { found: from, known });
    }
    for m in migrations.iter().skip(from.max(0) as usize) {
        tx.batch_execute(m)?;
    }
    if from < known {
        tx.execute(
            "INSERT INTO schema_version (component, version) VALUES ($1, $2) \
             ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()",
            &[&component, &known],
        )?;
    }
    tx.commit()?;
    Ok((from, known))
}

/// Why [`migrate`] failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Db(#[from] postgres::Error),
    #[error("the schema is version {found}, newer than this palaver knows ({known})")]
    TooNew { found: i64, known: i64 },
}

/// The community's schema on PostgreSQL (the SQLite schema's tables, with
/// `DOUBLE PRECISION` times, `BIGINT` integers and a real boolean), plus
/// the tables SQLite keeps in memory: `request_ids` and `rate_buckets`.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE agents (public_key TEXT PRIMARY KEY, nickname TEXT NOT NULL, bio TEXT NOT NULL,
                     agent_id TEXT NOT NULL UNIQUE, registered_at DOUBLE PRECISION NOT NULL);
CREATE TABLE challenges (nonce TEXT PRIMARY KEY, difficulty BIGINT NOT NULL, created_at DOUBLE PRECISION NOT NULL);
CREATE INDEX challenges_age ON challenges (created_at);
CREATE TABLE protocols (protocol_id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL,
                        type TEXT NOT NULL, spec_json TEXT NOT NULL, registered_by TEXT NOT NULL,
                        created_at DOUBLE PRECISION NOT NULL);
CREATE TABLE invitations (post_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, protocol_id TEXT, type TEXT NOT NULL,
                          tags TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,
                          created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
CREATE INDEX invitations_open ON invitations (status, expires_at);
CREATE INDEX invitations_author ON invitations (public_key, status);
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, post_id TEXT NOT NULL, protocol_id TEXT NOT NULL,
                       host_public_key TEXT NOT NULL, guest_public_key TEXT NOT NULL, session_nonce TEXT NOT NULL,
                       host_signature TEXT NOT NULL, guest_signature TEXT NOT NULL, status TEXT NOT NULL,
                       winner TEXT, disputed BOOLEAN NOT NULL DEFAULT FALSE, iroh_ticket TEXT, transport_signature TEXT,
                       created_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION);
CREATE INDEX sessions_host ON sessions (host_public_key);
CREATE INDEX sessions_guest ON sessions (guest_public_key);
CREATE INDEX sessions_post ON sessions (post_id);
CREATE TABLE results (session_id TEXT NOT NULL, reporter TEXT NOT NULL, winner TEXT NOT NULL,
                      PRIMARY KEY (session_id, reporter));
CREATE TABLE feedback (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session_id TEXT NOT NULL,
                       public_key TEXT NOT NULL, body TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL);
CREATE TABLE ratings (session_id TEXT NOT NULL, rater TEXT NOT NULL, rated TEXT NOT NULL, score BIGINT NOT NULL,
                      comment TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session_id, rater));
CREATE INDEX ratings_rated ON ratings (rated);
CREATE TABLE groups (group_id TEXT PRIMARY KEY, post_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
                     version BIGINT NOT NULL);
CREATE TABLE request_ids (public_key TEXT NOT NULL, request_id TEXT NOT NULL, until BIGINT NOT NULL,
                          PRIMARY KEY (public_key, request_id));
CREATE INDEX request_ids_until ON request_ids (until);
CREATE TABLE rate_buckets (public_key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL,
                           at DOUBLE PRECISION NOT NULL);
CREATE INDEX rate_buckets_at ON rate_buckets (at);
"#];

/// The schema version this palaver's community store has on PostgreSQL.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The lock class of the per-key advisory lock that serialises a key's
/// invitation changes (the two-key form: class, hash of the key).
const INVITATION_LOCK: i32 = 0x696e_7601;

/// Migrates the community schema of the database behind `pool`.
pub fn migrate_pool(pool: &Pool, url: &str) -> Result<Migrated, PgError> {
    let fail = |reason: String| PgError::Migrate {
        url: redact(url),
        component: "community",
        reason,
    };
    let mut conn = pool.get().map_err(|e| fail(e.to_string()))?;
    match migrate(&mut conn, "community", MIGRATIONS) {
        Ok((from, to)) => Ok(Migrated {
            store: "postgres",
            component: "community",
            from,
            to,
        }),
        Err(MigrateError::TooNew { found, known }) => Err(PgError::TooNew {
            url: redact(url),
            component: "community",
            found,
            known,
        }),
        Err(MigrateError::Db(e)) => Err(fail(StoreError::from(e).0)),
    }
}

/// PostgreSQL storage (see the module doc).
pub struct PgStore {
    /// Always Some until dropped (see the Drop impl).
    pool: Option<Pool>,
    /// The second `request_ids` was last swept of expired ids by this process.
    ids_swept: AtomicI64,
    /// The second `rate_buckets` was last swept of full buckets.
    buckets_swept: AtomicI64,
}

/// Text that PostgreSQL cannot hold (a NUL) matches no row: lookups with it
/// find nothing instead of failing.
fn nul(s: &str) -> bool {
    s.contains('\0')
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn session_from_row(r: &postgres::Row) -> SessionRow {
    SessionRow {
        session_id: r.get(0),
        post_id: r.get(1),
        protocol_id: r.get(2),
        host_public_key: r.get(3),
        guest_public_key: r.get(4),
        status: r.get(5),
        winner: r.get(6),
        disputed: r.get(7),
        iroh_ticket: r.get(8),
        created_at: r.get(9),
    }
}

fn active(tx: &mut Transaction<'_>, key: &str, now: f64) -> Result<i64, postgres::Error> {
    Ok(tx
        .query_one(
            "SELECT COUNT(*) FROM invitations WHERE public_key = $1 AND status = 'open' AND expires_at > $2",
            &[&key, &now],
        )?
        .get(0))
}

fn lock_key(tx: &mut Transaction<'_>, key: &str) -> Result<(), postgres::Error> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&INVITATION_LOCK, &key],
    )?;
    Ok(())
}

impl PgStore {
    /// Connects a pool of at most `pool_size` connections to `url` and
    /// migrates the community schema.
    pub fn connect(url: &str, pool_size: u32) -> Result<(PgStore, Migrated), PgError> {
        let pool = pool(url, pool_size, Duration::from_secs(10), "community")?;
        let migrated = migrate_pool(&pool, url)?;
        Ok((PgStore::from_pool(pool), migrated))
    }

    /// A store over a pool whose database is migrated already.
    pub fn from_pool(pool: Pool) -> PgStore {
        PgStore {
            pool: Some(pool),
            ids_swept: AtomicI64::new(0),
            buckets_swept: AtomicI64::new(0),
        }
    }

    /// Migrates the community schema at `url` and returns what it did (one
    /// connection, no pool kept).
    pub fn migrate_only(url: &str) -> Result<Migrated, PgError> {
        let pool = pool(url, 1, Duration::from_secs(10), "migrate")?;
        migrate_pool(&pool, url)
    }

    fn pool(&self) -> Res<&Pool> {
        self.pool
            .as_ref()
            .ok_or_else(|| StoreError("the store is closed".into()))
    }

    fn conn(&self) -> Res<r2d2::PooledConnection<PostgresConnectionManager<NoTls>>> {
        Ok(self.pool()?.get()?)
    }

    fn tx<T>(&self, f: impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>) -> Res<T> {
        let mut c = self.conn()?;
        Ok(in_transaction(&mut c, f)?)
    }

    /// True once a second per process (`at` holds the last such second).
    fn due(at: &AtomicI64, second: i64) -> bool {
        let last = at.load(Ordering::Relaxed);
        last != second
            && at
                .compare_exchange(last, second, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

impl Drop for PgStore {
    /// Closing a blocking client runs a small runtime of its own, which
    /// panics on a thread that drives async tasks: the last reference to a
    /// store is often dropped there (the router at shutdown), so the pool
    /// is closed on a thread of its own.
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                let _ = std::thread::spawn(move || drop(pool)).join();
            } else {
                drop(pool);
            }
        }
    }
}

impl Store for PgStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn ping(&self) -> Res<()> {
        let mut c = self.pool()?.get_timeout(Duration::from_secs(3))?;
        c.simple_query("SELECT 1")?;
        Ok(())
    }

    fn gauges(&self, now: f64) -> Res<CommunityGauges> {
        let mut c = self.conn()?;
        super::pool_metrics::gauges(&mut c, now)
    }

    fn pool_state(&self) -> Option<PoolState> {
        self.pool.as_ref().map(super::pool_metrics::state)
    }

    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission> {
        if nul(key) || nul(request_id) {
            return Err(StoreError("a request id or key holds a NUL".into()));
        }
        let mut c = self.conn()?;
        if Self::due(&self.ids_swept, now) {
            c.execute("DELETE FROM request_ids WHERE until < $1", &[&now])?;
        }
        // One statement: a live entry is left alone (a replay), a new or
        // expired one is (re)written; of two racing inserts one waits for
        // the other and then sees its row.
        let row = c.query_opt(
            "INSERT INTO request_ids AS r (public_key, request_id, until) VALUES ($1, $2, $3) \
             ON CONFLICT (public_key, request_id) DO UPDATE SET until = EXCLUDED.until \
             WHERE r.until < $4 RETURNING 1",
            &[&key, &request_id, &keep_until(t, now), &now],
        )?;
        Ok(match row {
            Some(_) => Ok(()),
            None => Err(Refusal::Replayed),
        })
    }

    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission> {
        if nul(key) {
            return Err(StoreError("a key holds a NUL".into()));
        }
        let full = rate * 2.0;
        let mut c = self.conn()?;
        if Self::due(&self.buckets_swept, now as i64) {
            // A bucket that has refilled is the same as none: an empty one
            // refills in two seconds, so any bucket untouched that long is.
            c.execute(
                "DELETE FROM rate_buckets WHERE at < $1::DOUBLE PRECISION - 2",
                &[&now],
            )?;
        }
        // One statement: refill by the time passed, take a token if there
        // is a whole one; a new key starts full.
        let row = c.query_opt(
            "INSERT INTO rate_buckets AS b (public_key, tokens, at) \
             SELECT $1, $3::DOUBLE PRECISION - 1, $2::DOUBLE PRECISION WHERE $3::DOUBLE PRECISION >= 1 \
             ON CONFLICT (public_key) DO UPDATE SET \
               tokens = LEAST($3::DOUBLE PRECISION, b.tokens + GREATEST($2::DOUBLE PRECISION - b.at, 0) * $4::DOUBLE PRECISION) - 1, \
               at = GREATEST(b.at, $2::DOUBLE PRECISION) \
             WHERE LEAST($3::DOUBLE PRECISION, b.tokens + GREATEST($2::DOUBLE PRECISION - b.at, 0) * $4::DOUBLE PRECISION) >= 1 \
             RETURNING 1",
            &[&key, &now, &full, &rate],
        )?;
        Ok(match row {
            Some(_) => Ok(()),
            None => Err(Refusal::RateLimited),
        })
    }

    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()> {
        let mut c = self.conn()?;
        c.execute(
            "DELETE FROM challenges WHERE created_at < $1",
            &[&(now - 600.0)],
        )?;
        c.execute(
            "INSERT INTO challenges (nonce, difficulty, created_at) VALUES ($1, $2, $3)",
            &[&nonce, &i64::from(difficulty), &now],
        )?;
        Ok(())
    }

    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        if nul(nonce) {
            return Ok(None);
        }
        let row = self.conn()?.query_opt(
            "SELECT difficulty, created_at FROM challenges WHERE nonce = $1",
            &[&nonce],
        )?;
        Ok(row
            .map(|r| (r.get::<_, i64>(0), r.get::<_, f64>(1)))
            .filter(|(_, at)| now - at <= max_age)
            .and_then(|(d, _)| u32::try_from(d).ok()))
    }

    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        if nul(nonce) {
            return Ok(None);
        }
        // Single use: of two racing registrations one deletes the row.
        let row = self.conn()?.query_opt(
            "DELETE FROM challenges WHERE nonce = $1 RETURNING difficulty, created_at",
            &[&nonce],
        )?;
        Ok(row
            .map(|r| (r.get::<_, i64>(0), r.get::<_, f64>(1)))
            .filter(|(_, at)| now - at <= max_age)
            .and_then(|(d, _)| u32::try_from(d).ok()))
    }

    fn agent(&self, public_key: &str) -> Res<Option<Agent>> {
        if nul(public_key) {
            return Ok(None);
        }
        let row = self.conn()?.query_opt(
            "SELECT public_key, nickname, bio, agent_id, registered_at FROM agents WHERE public_key = $1 OR agent_id = $1",
            &[&public_key],
        )?;
        Ok(row.map(|r| Agent {
            public_key: r.get(0),
            nickname: r.get(1),
            bio: r.get(2),
            agent_id: r.get(3),
            registered_at: r.get(4),
        }))
    }

    fn add_agent(&self, a: &Agent) -> Res<bool> {
        let n = self.conn()?.execute(
            "INSERT INTO agents (public_key, nickname, bio, agent_id, registered_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[&a.public_key, &a.nickname, &a.bio, &a.agent_id, &a.registered_at],
        )?;
        Ok(n == 1)
    }

    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool> {
        let n = self.conn()?.execute(
            "INSERT INTO protocols (protocol_id, name, description, type, spec_json, registered_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            &[&p.protocol_id, &p.name, &p.description, &p.kind, &p.spec_json, &p.registered_by, &now],
        )?;
        Ok(n == 1)
    }

    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>> {
        if nul(protocol_id) {
            return Ok(None);
        }
        let row = self.conn()?.query_opt(
            "SELECT name, description, type, spec_json FROM protocols WHERE protocol_id = $1",
            &[&protocol_id],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))))
    }

    fn protocols(&self, cursor: Option<&str>, n: usize) -> Res<Vec<(String, String, String)>> {
        let cursor = cursor.unwrap_or("");
        if nul(cursor) {
            return Ok(Vec::new());
        }
        // Byte order, as SQLite compares: the same pages on both stores.
        let rows = self.conn()?.query(
            "SELECT protocol_id, name, description FROM protocols WHERE protocol_id > $1 COLLATE \"C\" \
             ORDER BY protocol_id COLLATE \"C\" LIMIT $2",
            &[&cursor, &limit(n)],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    fn active_invitations(&self, public_key: &str, now: f64) -> Res<usize> {
        if nul(public_key) {
            return Ok(0);
        }
        let n: i64 = self
            .conn()?
            .query_one(
                "SELECT COUNT(*) FROM invitations WHERE public_key = $1 AND status = 'open' AND expires_at > $2",
                &[&public_key, &now],
            )?
            .get(0);
        Ok(count(n))
    }

    fn add_invitation(
        &self,
        inv: &Map,
        public_key: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<bool> {
        let InvitationRow {
            post_id,
            protocol_id,
            kind,
            tags,
            body,
        } = InvitationRow::of(inv);
        self.tx(|tx| {
            // The key's invitations change one transaction at a time, on
            // every instance: the count below is still true at the insert.
            lock_key(tx, public_key)?;
            if count(active(tx, public_key, now)?) >= max_active {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO invitations (post_id, public_key, protocol_id, type, tags, body, status, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8)",
                &[&post_id, &public_key, &protocol_id, &kind, &tags, &body, &now, &expires_at],
            )?;
            Ok(true)
        })
    }

    fn invitation(&self, post_id: &str) -> Res<Option<Map>> {
        if nul(post_id) {
            return Ok(None);
        }
        let row = self.conn()?.query_opt(
            "SELECT body, status, expires_at FROM invitations WHERE post_id = $1",
            &[&post_id],
        )?;
        Ok(row.map(|r| invitation_view(r.get(0), r.get(1), r.get(2))))
    }

    fn invitations(
        &self,
        protocol_id: Option<&str>,
        kind: Option<&str>,
        tag: Option<&str>,
        n: usize,
        now: f64,
    ) -> Res<Vec<Map>> {
        if [protocol_id, kind, tag].iter().flatten().any(|s| nul(s)) {
            return Ok(Vec::new());
        }
        let rows = self.conn()?.query(
            "SELECT body, status, expires_at, tags FROM invitations WHERE status = 'open' AND expires_at > $1 \
             AND ($2::TEXT IS NULL OR protocol_id = $2::TEXT) AND ($3::TEXT IS NULL OR type = $3::TEXT) \
             ORDER BY created_at DESC LIMIT 500",
            &[&now, &protocol_id, &kind],
        )?;
        let mut out = Vec::new();
        for r in rows {
            if tag.is_some_and(|t| !tagged(r.get(3), t)) {
                continue;
            }
            out.push(invitation_view(r.get(0), r.get(1), r.get(2)));
            if out.len() >= n {
                break;
            }
        }
        Ok(out)
    }

    fn cancel_invitation(&self, post_id: &str) -> Res<bool> {
        if nul(post_id) {
            return Ok(false);
        }
        let n = self.conn()?.execute(
            "UPDATE invitations SET status = 'cancelled' WHERE post_id = $1 AND status = 'open'",
            &[&post_id],
        )?;
        Ok(n == 1)
    }

    fn renew_invitation(
        &self,
        post_id: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<Renewal> {
        if nul(post_id) {
            return Ok(Renewal::Missing);
        }
        self.tx(|tx| {
            let Some(key) = tx
                .query_opt(
                    "SELECT public_key FROM invitations WHERE post_id = $1",
                    &[&post_id],
                )?
                .map(|r| r.get::<_, String>(0))
            else {
                return Ok(Renewal::Missing);
            };
            // The key's lock first (as posting takes it), then the row.
            lock_key(tx, &key)?;
            let r = tx.query_one(
                "SELECT status, expires_at FROM invitations WHERE post_id = $1 FOR UPDATE",
                &[&post_id],
            )?;
            let (status, old): (String, f64) = (r.get(0), r.get(1));
            if status != "open" {
                return Ok(Renewal::NotOpen(status));
            }
            if old <= now && count(active(tx, &key, now)?) >= max_active {
                return Ok(Renewal::TooMany);
            }
            tx.execute(
                "UPDATE invitations SET expires_at = $2 WHERE post_id = $1",
                &[&post_id, &expires_at],
            )?;
            Ok(Renewal::Renewed)
        })
    }

    fn add_session(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<NewSession> {
        if nul(&s.post_id) {
            return Ok(NewSession::NoInvitation);
        }
        self.tx(|tx| {
            // The invitation's row lock: of two sessions racing for one
            // invitation, the second sees it matched.
            let status: Option<String> = tx
                .query_opt(
                    "SELECT status FROM invitations WHERE post_id = $1 FOR UPDATE",
                    &[&s.post_id],
                )?
                .map(|r| r.get(0));
            let exists: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1)",
                    &[&s.session_id],
                )?
                .get(0);
            if exists {
                return Ok(NewSession::Exists);
            }
            match status {
                None => return Ok(NewSession::NoInvitation),
                Some(st) if st != "open" => return Ok(NewSession::NotOpen(st)),
                Some(_) => {}
            }
            let n = tx.execute(
                "INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, session_nonce, \
                 host_signature, guest_signature, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'matched', $9) \
                 ON CONFLICT DO NOTHING",
                &[&s.session_id, &s.post_id, &s.protocol_id, &s.host_public_key, &s.guest_public_key, &session_nonce, &host_sig, &guest_sig, &s.created_at],
            )?;
            if n == 0 {
                return Ok(NewSession::Exists);
            }
            tx.execute(
                "UPDATE invitations SET status = 'matched' WHERE post_id = $1",
                &[&s.post_id],
            )?;
            Ok(NewSession::Added)
        })
    }

    fn session(&self, session_id: &str) -> Res<Option<SessionRow>> {
        if nul(session_id) {
            return Ok(None);
        }
        let row = self.conn()?.query_opt(
            "SELECT session_id, post_id, protocol_id, host_public_key, guest_public_key, status, winner, disputed, iroh_ticket, created_at \
             FROM sessions WHERE session_id = $1",
            &[&session_id],
        )?;
        Ok(row.as_ref().map(session_from_row))
    }

    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool> {
        if nul(session_id) {
            return Ok(false);
        }
        // Compare-and-swap: only a matched session moves.
        let n = self.conn()?.execute(
            "UPDATE sessions SET status = $2, ended_at = $3 WHERE session_id = $1 AND status = 'matched'",
            &[&session_id, &status, &now],
        )?;
        Ok(n == 1)
    }

    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
    ) -> Res<(Option<String>, bool)> {
        if nul(session_id) {
            return Err(StoreError(format!(
                "no session {}",
                session_id.escape_debug()
            )));
        }
        self.tx(|tx| {
            // The session's row lock: two reporters at once each see the
            // other's report, so a disagreement is never missed.
            tx.execute(
                "SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE",
                &[&session_id],
            )?;
            tx.execute(
                "INSERT INTO results (session_id, reporter, winner) VALUES ($1, $2, $3) \
                 ON CONFLICT (session_id, reporter) DO UPDATE SET winner = EXCLUDED.winner",
                &[&session_id, &reporter, &winner],
            )?;
            let winners: Vec<String> = tx
                .query(
                    "SELECT winner FROM results WHERE session_id = $1",
                    &[&session_id],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let first = winners.first().cloned();
            let disputed = winners.iter().any(|w| Some(w) != first.as_ref());
            let agreed = if disputed { None } else { first };
            tx.execute(
                "UPDATE sessions SET winner = $2, disputed = $3 WHERE session_id = $1",
                &[&session_id, &agreed, &disputed],
            )?;
            Ok((agreed, disputed))
        })
    }

    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()> {
        if nul(session_id) {
            return Ok(());
        }
        self.conn()?.execute(
            "UPDATE sessions SET iroh_ticket = $2, transport_signature = $3 WHERE session_id = $1",
            &[&session_id, &ticket, &signature],
        )?;
        Ok(())
    }

    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()> {
        let text = crate::json::canonical::to_string_ordered(&Value::Object(body.clone()));
        self.conn()?.execute(
            "INSERT INTO feedback (session_id, public_key, body, created_at) VALUES ($1, $2, $3, $4)",
            &[&session_id, &by, &text, &now],
        )?;
        Ok(())
    }

    fn add_rating(
        &self,
        session_id: &str,
        rater: &str,
        rated: &str,
        score: i64,
        comment: &str,
        now: f64,
    ) -> Res<bool> {
        let n = self.conn()?.execute(
            "INSERT INTO ratings (session_id, rater, rated, score, comment, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT DO NOTHING",
            &[&session_id, &rater, &rated, &score, &comment, &now],
        )?;
        Ok(n == 1)
    }

    fn agent_stats(&self, public_key: &str) -> Res<Map> {
        let key = if nul(public_key) { "" } else { public_key };
        let r = self.conn()?.query_one(
            "SELECT \
               (SELECT COUNT(*) FROM sessions WHERE host_public_key = $1 OR guest_public_key = $1), \
               (SELECT COUNT(*) FROM sessions WHERE (host_public_key = $1 OR guest_public_key = $1) AND status = 'closed'), \
               (SELECT COUNT(*) FROM sessions WHERE (host_public_key = $1 AND winner = 'host') OR (guest_public_key = $1 AND winner = 'guest')), \
               (SELECT COUNT(*) FROM ratings WHERE rated = $1), \
               (SELECT AVG(score)::DOUBLE PRECISION FROM ratings WHERE rated = $1), \
               (SELECT COALESCE(SUM(score), 0)::BIGINT FROM ratings WHERE rated = $1)",
            &[&key],
        )?;
        let (sessions, closed, wins, ratings): (i64, i64, i64, i64) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        let avg: Option<f64> = r.get(4);
        let sum: i64 = r.get(5);
        let rep = super::store::Reputation::of(sessions, closed, ratings, sum);
        Ok(crate::obj! {
            "public_key" => public_key, "sessions" => sessions, "closed" => closed, "wins" => wins,
            "ratings" => ratings, "rating_average" => avg.map(Value::from).unwrap_or(Value::Null),
            "total_sessions" => sessions, "successful_sessions" => closed,
            "success_rate" => rep.success_rate.map(Value::from).unwrap_or(Value::Null),
            "weighted_score" => rep.weighted_score, "confidence_level" => rep.confidence,
        })
    }

    fn agent_ratings(&self, public_key: &str, n: usize) -> Res<Vec<Map>> {
        if nul(public_key) {
            return Ok(Vec::new());
        }
        let rows = self.conn()?.query(
            "SELECT session_id, rater, score, comment, created_at FROM ratings WHERE rated = $1 \
             ORDER BY created_at DESC, session_id COLLATE \"C\" LIMIT $2",
            &[&public_key, &limit(n)],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                crate::obj! {
                    "session_id" => r.get::<_, String>(0), "rater_public_key" => r.get::<_, String>(1),
                    "score" => r.get::<_, i64>(2), "comment" => r.get::<_, String>(3),
                    "created_at" => r.get::<_, f64>(4),
                }
            })
            .collect())
    }

    fn add_group(&self, g: &Group) -> Res<bool> {
        let body = serde_json::to_string(g).map_err(|e| StoreError(e.to_string()))?;
        let n = self.conn()?.execute(
            "INSERT INTO groups (group_id, post_id, body, version) VALUES ($1, $2, $3, 1) ON CONFLICT DO NOTHING",
            &[&g.group_id, &g.post_id, &body],
        )?;
        Ok(n == 1)
    }

    fn group(&self, id: &str, by_post: bool) -> Res<Option<(Group, i64)>> {
        if nul(id) {
            return Ok(None);
        }
        let sql = if by_post {
            "SELECT body, version FROM groups WHERE post_id = $1"
        } else {
            "SELECT body, version FROM groups WHERE group_id = $1"
        };
        let row = self.conn()?.query_opt(sql, &[&id])?;
        row.map(|r| {
            let body: String = r.get(0);
            serde_json::from_str::<Group>(&body)
                .map(|g| (g, r.get::<_, i64>(1)))
                .map_err(|e| StoreError(format!("group {id}: stored body does not parse: {e}")))
        })
        .transpose()
    }

    fn save_group(&self, g: &Group, version: i64) -> Res<bool> {
        let body = serde_json::to_string(g).map_err(|e| StoreError(e.to_string()))?;
        // Compare-and-set: an UPDATE racing another re-reads the row after
        // it, so at most one of two writers of one version succeeds.
        let n = self.conn()?.execute(
            "UPDATE groups SET body = $1, version = version + 1 WHERE group_id = $2 AND version = $3",
            &[&body, &g.group_id, &version],
        )?;
        Ok(n == 1)
    }
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
