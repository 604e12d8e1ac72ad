//! The community store's PostgreSQL [`Backend`], for a community served
//! by several `palaver serve` instances over one database (docs/deploy.md).
//!
//! Connections come from the shared pool and run writes under the shared
//! retry policy ([`crate::sql::pg`]); the queries are [`SqlStore`]'s, the
//! same as SQLite's. A store made by [`SqlStore::connect`] also answers
//! [`AsyncCalls`] (the replay window, the rate bucket, the browse, a session
//! create's usual case) over the async lane ([`crate::sql::pg_lane`]) with
//! the same statements. Everything two instances must agree on is in the
//! database: the replay window and the rate-limit buckets are tables here
//! updated by one atomic statement each (SQLite keeps them in memory).
//! Schema migrations are versioned in `schema_version` and applied in one
//! transaction under an advisory lock, so instances starting together
//! migrate once.

use super::queries::SqlStore;
use super::recent::{Admission, Admit, Refusal, keep_until};
use super::statements::{
    OPEN_INVITATIONS, TAKE_FOR_SESSION, open_page, session_args, took_for_session,
};
use super::store::{AsyncCalls, Backend, Call, Migrated, PoolState, Res, SessionRow, StoreError};
use crate::json::Map;
use crate::sql::pg::{self as shared, Pool, Pooled};
pub use crate::sql::pg::{PgError, parse_url, redact};
use crate::sql::pg_lane::Lane;
use crate::sql::{Db, Dialect, args};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        StoreError(e.to_string())
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        shared::pg_error(&e).into()
    }
}

impl From<r2d2_postgres::r2d2::Error> for StoreError {
    fn from(e: r2d2_postgres::r2d2::Error) -> Self {
        StoreError(format!("no database connection: {e}"))
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
const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    // The community beyond sessions (standing.rs): as SQLite's third
    // migration, with a sequence numbering new agents.
    r#"
CREATE SEQUENCE agents_id_seq;
ALTER TABLE agents ADD COLUMN id BIGINT;
UPDATE agents SET id = r.n FROM (SELECT public_key, ROW_NUMBER() OVER (ORDER BY registered_at, public_key) AS n
                                 FROM agents) AS r WHERE r.public_key = agents.public_key;
SELECT setval('agents_id_seq', COALESCE((SELECT MAX(id) FROM agents), 0) + 1, false);
ALTER TABLE agents ALTER COLUMN id SET DEFAULT nextval('agents_id_seq'), ALTER COLUMN id SET NOT NULL;
ALTER SEQUENCE agents_id_seq OWNED BY agents.id;
CREATE UNIQUE INDEX agents_number ON agents (id);
CREATE TABLE elo_ratings (public_key TEXT PRIMARY KEY, rating BIGINT NOT NULL, games BIGINT NOT NULL,
                          wins BIGINT NOT NULL, losses BIGINT NOT NULL, draws BIGINT NOT NULL,
                          updated_at DOUBLE PRECISION NOT NULL);
CREATE INDEX elo_ratings_rank ON elo_ratings (rating DESC, public_key DESC);
CREATE TABLE elo_games (session_id TEXT PRIMARY KEY, host TEXT NOT NULL, guest TEXT NOT NULL, pair_lo TEXT NOT NULL,
                        pair_hi TEXT NOT NULL, winner TEXT NOT NULL, host_delta BIGINT NOT NULL,
                        guest_delta BIGINT NOT NULL, applied_at DOUBLE PRECISION NOT NULL, counted BOOLEAN NOT NULL,
                        outcome TEXT NOT NULL);
CREATE INDEX elo_games_pair ON elo_games (pair_lo, pair_hi, applied_at);
CREATE TABLE karma (public_key TEXT PRIMARY KEY, sum_sw DOUBLE PRECISION NOT NULL, sum_w DOUBLE PRECISION NOT NULL,
                    last_w DOUBLE PRECISION NOT NULL, n BIGINT NOT NULL, karma BIGINT NOT NULL, level TEXT NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL);
CREATE INDEX karma_rank ON karma (karma DESC, public_key DESC);
CREATE INDEX ratings_pair ON ratings (rater, rated, created_at);
CREATE TABLE capabilities (public_key TEXT PRIMARY KEY, list TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
CREATE TABLE agent_capabilities (capability TEXT NOT NULL, public_key TEXT NOT NULL,
                                 PRIMARY KEY (capability, public_key));
CREATE TABLE inbox (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, recipient TEXT NOT NULL, sender TEXT NOT NULL,
                    ciphertext TEXT NOT NULL, size BIGINT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                    expires_at DOUBLE PRECISION NOT NULL, is_read BOOLEAN NOT NULL DEFAULT FALSE);
CREATE INDEX inbox_recipient ON inbox (recipient, id);
CREATE INDEX inbox_sender ON inbox (recipient, sender, expires_at);
CREATE INDEX inbox_expiry ON inbox (expires_at);
CREATE TABLE trust_snapshots (snapshot_date TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE INDEX protocols_newest ON protocols (created_at DESC, protocol_id DESC);
"#,
    // The replay window and the rate buckets hold seconds of state that
    // SQLite keeps in the server's memory: unlogged, they skip the WAL on
    // every signed request (and, like SQLite's, are empty after a crash or
    // on a standby that takes over).
    r#"
ALTER TABLE request_ids SET UNLOGGED;
ALTER TABLE rate_buckets SET UNLOGGED;
"#,
];

/// The schema version this palaver's community store has on PostgreSQL.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Migrates the community schema of the database behind `pool`.
pub fn migrate_pool(pool: &Pool, url: &str) -> Result<Migrated, PgError> {
    let fail = |reason: String| PgError::Migrate {
        url: redact(url),
        component: "community",
        reason,
    };
    let mut conn = pool.get().map_err(|e| fail(e.to_string()))?;
    match migrate(&mut conn.client, "community", MIGRATIONS) {
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

/// PostgreSQL storage: the community's queries over a shared database.
pub type PgStore = SqlStore<Postgres>;

/// The PostgreSQL backend.
pub struct Postgres {
    /// Always Some until dropped (see the Drop impl).
    pool: Option<Pool>,
    /// The second `request_ids` was last swept of expired ids by this process.
    ids_swept: AtomicI64,
    /// The second `rate_buckets` was last swept of full buckets.
    buckets_swept: AtomicI64,
    /// The async lane for the calls of [`AsyncCalls`] (a store made by
    /// [`SqlStore::connect`] has one).
    lane: Option<Lane>,
}

impl SqlStore<Postgres> {
    /// Connects a pool of at most `pool_size` connections to `url` and
    /// migrates the community schema.
    pub fn connect(url: &str, pool_size: u32) -> Result<(PgStore, Migrated), PgError> {
        let pool = shared::pool(url, pool_size, "community")?;
        let migrated = migrate_pool(&pool, url)?;
        let mut store = PgStore::from_pool(pool);
        store.0.lane = Some(Lane::new(url).map_err(|e| PgError::BadUrl {
            url: redact(url),
            reason: e.to_string(),
        })?);
        Ok((store, migrated))
    }

    /// A store over a pool whose database is migrated already.
    pub fn from_pool(pool: Pool) -> PgStore {
        SqlStore(Postgres {
            pool: Some(pool),
            ids_swept: AtomicI64::new(0),
            buckets_swept: AtomicI64::new(0),
            lane: None,
        })
    }

    /// Migrates the community schema at `url` and returns what it did (one
    /// connection, no pool kept).
    pub fn migrate_only(url: &str) -> Result<Migrated, PgError> {
        let pool = shared::pool(url, 1, "migrate")?;
        migrate_pool(&pool, url)
    }
}

impl Postgres {
    fn pool(&self) -> Res<&Pool> {
        self.pool
            .as_ref()
            .ok_or_else(|| StoreError("the store is closed".into()))
    }

    fn conn(&self) -> Res<Pooled> {
        Ok(self.pool()?.get()?)
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

/// Notes request id `$2` of key `$1`, kept until `$3`, at `$4`: a live
/// entry is left alone (a replay: no row), a new or expired one is
/// (re)written (a row); of two racing inserts one waits for the other and
/// then sees its row.
const NOTE_ID: &str = "INSERT INTO request_ids AS r (public_key, request_id, until) \
     VALUES ($1, $2, $3) ON CONFLICT (public_key, request_id) DO UPDATE SET until = EXCLUDED.until \
     WHERE r.until < $4 RETURNING 1";

/// [`NOTE_ID`]'s answer from whether it returned a row.
fn noted(row: bool) -> Admission {
    if row { Ok(()) } else { Err(Refusal::Replayed) }
}

/// Forgets the request ids whose window closed before `$1`.
const SWEEP_IDS: &str = "DELETE FROM request_ids WHERE until < $1";

/// Forgets the rate buckets untouched since two seconds before `$1`: a
/// bucket that has refilled is the same as none (an empty one refills in
/// two seconds).
const SWEEP_BUCKETS: &str = "DELETE FROM rate_buckets WHERE at < $1 - 2";

/// Takes a token from key `$1`'s bucket at `$2` (holding `$3`, refilled by
/// `$4` a second) in one statement: refill by the time passed, take a token
/// if there is a whole one; a new key starts full. A row when one was taken.
const TAKE_TOKEN: &str = "INSERT INTO rate_buckets AS b (public_key, tokens, at) \
     SELECT $1, $3 - 1, $2 WHERE $3 >= 1 \
     ON CONFLICT (public_key) DO UPDATE SET \
       tokens = LEAST($3, b.tokens + GREATEST($2 - b.at, 0) * $4) - 1, \
       at = GREATEST(b.at, $2) \
     WHERE LEAST($3, b.tokens + GREATEST($2 - b.at, 0) * $4) >= 1 \
     RETURNING 1";

/// A signed request's admission in one statement: [`NOTE_ID`] (`$1` to
/// `$4`) and, only when it returned a row, [`TAKE_TOKEN`] (`$1`, `$5` to
/// `$7`): whether the id was noted, whether a token was taken.
const ADMIT: &str = "WITH noted AS (INSERT INTO request_ids AS r (public_key, request_id, until) \
     VALUES ($1, $2, $3) ON CONFLICT (public_key, request_id) DO UPDATE SET until = EXCLUDED.until \
     WHERE r.until < $4 RETURNING 1), \
   took AS (INSERT INTO rate_buckets AS b (public_key, tokens, at) \
     SELECT $1, $6 - 1, $5 WHERE $6 >= 1 AND EXISTS (SELECT 1 FROM noted) \
     ON CONFLICT (public_key) DO UPDATE SET \
       tokens = LEAST($6, b.tokens + GREATEST($5 - b.at, 0) * $7) - 1, \
       at = GREATEST(b.at, $5) \
     WHERE LEAST($6, b.tokens + GREATEST($5 - b.at, 0) * $7) >= 1 \
     RETURNING 1) \
   SELECT EXISTS (SELECT 1 FROM noted), EXISTS (SELECT 1 FROM took)";

/// [`ADMIT`]'s answer from its two flags.
fn admitted(noted: bool, took: bool) -> Admission {
    match (noted, took) {
        (false, _) => Err(Refusal::Replayed),
        (true, false) => Err(Refusal::RateLimited),
        (true, true) => Ok(()),
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            shared::close(pool);
        }
    }
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn run<T>(&self, f: impl FnOnce(&mut dyn Db) -> Res<T>) -> Res<T> {
        let mut c = self.conn()?;
        f(&mut shared::PgDb::new(&mut c, false))
    }

    fn transaction<T>(&self, f: impl FnMut(&mut dyn Db) -> Res<T>) -> Res<T> {
        let mut c = self.conn()?;
        shared::transaction(&mut c, "BEGIN", f)
    }

    fn ping(&self) -> Res<()> {
        let mut c = self.pool()?.get_timeout(Duration::from_secs(3))?;
        c.client.simple_query("SELECT 1")?;
        Ok(())
    }

    fn pool_state(&self) -> Option<PoolState> {
        self.pool.as_ref().map(shared::state)
    }

    fn async_calls(&self) -> Option<&dyn AsyncCalls> {
        self.lane.as_ref().map(|_| self as &dyn AsyncCalls)
    }

    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission> {
        if key.contains('\0') || request_id.contains('\0') {
            return Err(StoreError("a request id or key holds a NUL".into()));
        }
        let sweep = Self::due(&self.ids_swept, now);
        self.run(|db| {
            if sweep {
                db.execute(SWEEP_IDS, args![now])?;
            }
            let until = keep_until(t, now);
            let row = db.query_opt(NOTE_ID, args![key, request_id, until, now])?;
            Ok(noted(row.is_some()))
        })
    }

    fn admit(&self, a: &Admit<'_>) -> Res<Admission> {
        let Some(rate) = a.rate else {
            return self.note_request(a.key, a.request_id, a.t, a.now);
        };
        if a.key.contains('\0') || a.request_id.contains('\0') {
            return Err(StoreError("a request id or key holds a NUL".into()));
        }
        let sweep_ids = Self::due(&self.ids_swept, a.now);
        let sweep_buckets = Self::due(&self.buckets_swept, a.at as i64);
        self.run(|db| {
            if sweep_ids {
                db.execute(SWEEP_IDS, args![a.now])?;
            }
            if sweep_buckets {
                db.execute(SWEEP_BUCKETS, args![a.at])?;
            }
            let until = keep_until(a.t, a.now);
            let row = db.query_one(
                ADMIT,
                args![a.key, a.request_id, until, a.now, a.at, rate * 2.0, rate],
            )?;
            Ok(admitted(row.bool(0)?, row.bool(1)?))
        })
    }

    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission> {
        if key.contains('\0') {
            return Err(StoreError("a key holds a NUL".into()));
        }
        let full = rate * 2.0;
        let sweep = Self::due(&self.buckets_swept, now as i64);
        self.run(|db| {
            if sweep {
                db.execute(SWEEP_BUCKETS, args![now])?;
            }
            let row = db.query_opt(TAKE_TOKEN, args![key, now, full, rate])?;
            Ok(match row {
                Some(_) => Ok(()),
                None => Err(Refusal::RateLimited),
            })
        })
    }
}

impl Postgres {
    fn lane(&self) -> Res<&Lane> {
        self.lane
            .as_ref()
            .ok_or_else(|| StoreError("this store has no async lane".into()))
    }
}

/// The lane's calls, each pipelined with the others in flight on a lane
/// connection; a request's admission is one statement ([`ADMIT`]).
impl AsyncCalls for Postgres {
    fn admit<'a>(&'a self, a: Admit<'a>) -> Call<'a, Admission> {
        Box::pin(async move {
            if a.key.contains('\0') || a.request_id.contains('\0') {
                return Err(StoreError("a request id or key holds a NUL".into()));
            }
            let lane = self.lane()?;
            if Self::due(&self.ids_swept, a.now) {
                lane.query(SWEEP_IDS, args![a.now]).await?;
            }
            let until = keep_until(a.t, a.now);
            let Some(rate) = a.rate else {
                let rows = lane
                    .query(NOTE_ID, args![a.key, a.request_id, until, a.now])
                    .await?;
                return Ok(noted(!rows.is_empty()));
            };
            if Self::due(&self.buckets_swept, a.at as i64) {
                lane.query(SWEEP_BUCKETS, args![a.at]).await?;
            }
            let rows = lane
                .query(
                    ADMIT,
                    args![a.key, a.request_id, until, a.now, a.at, rate * 2.0, rate],
                )
                .await?;
            let row = rows
                .first()
                .ok_or_else(|| StoreError("the admission answered no row".into()))?;
            Ok(admitted(row.bool(0)?, row.bool(1)?))
        })
    }

    fn invitations<'a>(
        &'a self,
        protocol_id: Option<&'a str>,
        kind: Option<&'a str>,
        tag: Option<&'a str>,
        n: usize,
        now: f64,
    ) -> Call<'a, Vec<Map>> {
        Box::pin(async move {
            // Text PostgreSQL cannot hold matches nothing (as the blocking
            // store answers).
            if [protocol_id, kind, tag]
                .iter()
                .flatten()
                .any(|s| s.contains('\0'))
            {
                return Ok(Vec::new());
            }
            let rows = self
                .lane()?
                .query(OPEN_INVITATIONS, args![now, protocol_id, kind])
                .await?;
            open_page(rows, tag, n)
        })
    }

    fn add_session_at_once<'a>(
        &'a self,
        s: &'a SessionRow,
        session_nonce: &'a str,
        host_sig: &'a str,
        guest_sig: &'a str,
    ) -> Call<'a, bool> {
        Box::pin(async move {
            let fields = [&s.post_id, &s.host_public_key, &s.guest_public_key];
            if fields.iter().any(|f| f.contains('\0')) {
                return Ok(false);
            }
            let args = session_args(s, session_nonce, host_sig, guest_sig);
            took_for_session(self.lane()?.execute(TAKE_FOR_SESSION, &args).await)
        })
    }
}
