//! The community store's PostgreSQL [`Backend`], for a community served
//! by several `palaver serve` instances over one database (docs/deploy.md).
//!
//! Connections come from the shared pool and run writes under the shared
//! retry policy ([`crate::sql::pg`]); the queries are [`SqlStore`]'s, the
//! same as SQLite's. Everything two instances must agree on is in the
//! database: the replay window and the rate-limit buckets are tables here
//! updated by one atomic statement each (SQLite keeps them in memory).
//! Schema migrations are versioned in `schema_version` and applied in one
//! transaction under an advisory lock, so instances starting together
//! migrate once.

use super::queries::SqlStore;
use super::recent::{Admission, Refusal, keep_until};
use super::store::{Backend, Migrated, PoolState, Res, StoreError};
use crate::sql::pg::{self as shared, Pool, Pooled};
pub use crate::sql::pg::{PgError, parse_url, redact};
use crate::sql::{Db, Dialect, args};
use postgres::types::Type;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Mutex, MutexGuard, PoisonError};
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
    /// Request ids waiting to be noted.
    notes: Mutex<Notes>,
    note_leaders: usize,
}

impl SqlStore<Postgres> {
    /// Connects a pool of at most `pool_size` connections to `url` and
    /// migrates the community schema.
    pub fn connect(url: &str, pool_size: u32) -> Result<(PgStore, Migrated), PgError> {
        let pool = shared::pool(url, pool_size, "community")?;
        let leaders = note_leaders_from_env()?;
        let migrated = migrate_pool(&pool, url)?;
        let mut store = PgStore::from_pool(pool);
        store.0.note_leaders = leaders;
        Ok((store, migrated))
    }

    /// A store over a pool whose database is migrated already.
    pub fn from_pool(pool: Pool) -> PgStore {
        SqlStore(Postgres {
            pool: Some(pool),
            ids_swept: AtomicI64::new(0),
            buckets_swept: AtomicI64::new(0),
            notes: Mutex::default(),
            note_leaders: NOTE_LEADERS,
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

/// One request id waiting to be noted ([`Postgres::note_request`]).
struct Note {
    key: String,
    request_id: String,
    until: i64,
    now: i64,
    turn: SyncSender<Turn>,
}

/// What a waiting note is told.
enum Turn {
    /// Its answer.
    Done(Res<Admission>),
    /// Lead: note everything waiting, as one statement.
    Lead,
}

/// The notes waiting for a statement, and how many statements are being
/// run (by callers that lead them).
#[derive(Default)]
struct Notes {
    waiting: Vec<Note>,
    leaders: usize,
}

/// Statements noting request ids that one instance runs at once: more
/// arrivals wait and go together in the next one. More than one, so the
/// notes never queue behind a single thread's wake-up.
/// `PALAVER_PG_NOTE_LEADERS` (1 to 1024) sets another number: a large
/// one gives every request a statement of its own again.
const NOTE_LEADERS: usize = 2;

/// The range `PALAVER_PG_NOTE_LEADERS` is held to.
const NOTE_LEADERS_SETTING: crate::limits::Count = crate::limits::Count {
    field: "PALAVER_PG_NOTE_LEADERS",
    min: 1,
    max: 1024,
};

/// [`NOTE_LEADERS`], or `PALAVER_PG_NOTE_LEADERS` when it is set.
fn note_leaders_from_env() -> Result<usize, PgError> {
    note_leaders(std::env::var(NOTE_LEADERS_SETTING.field).ok().as_deref())
}

/// The noting statements `setting` asks for (none: [`NOTE_LEADERS`]); a
/// value that is not a whole number from 1 to 1024 is refused, naming it.
fn note_leaders(setting: Option<&str>) -> Result<usize, PgError> {
    let Some(text) = setting else {
        return Ok(NOTE_LEADERS);
    };
    let n: i64 = text.trim().parse().map_err(|_| {
        PgError::BadSetting(format!(
            "{} must be a whole number from {} to {}, not {text:?}",
            NOTE_LEADERS_SETTING.field, NOTE_LEADERS_SETTING.min, NOTE_LEADERS_SETTING.max
        ))
    })?;
    let n = NOTE_LEADERS_SETTING
        .check(n)
        .map_err(|e| PgError::BadSetting(e.to_string()))?;
    usize::try_from(n)
        .map_err(|_| PgError::BadSetting(format!("{} is out of range", NOTE_LEADERS_SETTING.field)))
}

/// Statements a leader runs one after another (while notes keep waiting)
/// before it hands the lead on and returns its own answer.
const NOTE_ROUNDS: usize = 4;

/// Notes every request id in one statement: a live entry is left alone (a
/// replay), a new or expired one is (re)written; of two racing inserts one
/// waits for the other and then sees its row. The ids go in sorted, so two
/// batches (of two instances) that share ids lock them in one order.
const NOTE_IDS: &str = "INSERT INTO request_ids AS r (public_key, request_id, until) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) \
     ON CONFLICT (public_key, request_id) DO UPDATE SET until = EXCLUDED.until \
     WHERE r.until < $4 RETURNING public_key, request_id";

/// When a leader is done (also when it panicked): hands its lead to the
/// oldest waiting note, or gives it up when none waits.
struct HandOn<'a>(&'a Postgres);

impl Drop for HandOn<'_> {
    fn drop(&mut self) {
        let mut q = self.0.notes();
        while let Some(first) = q.waiting.first() {
            if first.turn.try_send(Turn::Lead).is_ok() {
                return;
            }
            // Its caller is gone.
            q.waiting.remove(0);
        }
        q.leaders -= 1;
    }
}

impl Postgres {
    fn notes(&self) -> MutexGuard<'_, Notes> {
        self.notes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes everything waiting as one statement and tells each caller,
    /// again while notes keep waiting (at most [`NOTE_ROUNDS`] times).
    fn lead_notes(&self) {
        let _hand_on = HandOn(self);
        for _ in 0..NOTE_ROUNDS {
            let mut batch = std::mem::take(&mut self.notes().waiting);
            if batch.is_empty() {
                return;
            }
            batch.sort_by(|a, b| (&a.key, &a.request_id).cmp(&(&b.key, &b.request_id)));
            match self.note_batch(&batch) {
                Ok(admitted) => {
                    for (n, ok) in batch.iter().zip(admitted) {
                        let a = if ok { Ok(()) } else { Err(Refusal::Replayed) };
                        let _ = n.turn.try_send(Turn::Done(Ok(a)));
                    }
                }
                Err(e) => {
                    for n in &batch {
                        let _ = n.turn.try_send(Turn::Done(Err(StoreError(e.0.clone()))));
                    }
                }
            }
        }
    }

    /// Whether each note of `batch` (sorted) was admitted: a second note of
    /// one (key, id) in the batch is a replay of the first.
    fn note_batch(&self, batch: &[Note]) -> Res<Vec<bool>> {
        let Some(now) = batch.iter().map(|n| n.now).min() else {
            return Ok(Vec::new());
        };
        let first: Vec<bool> = batch
            .iter()
            .enumerate()
            .map(|(i, n)| {
                i == 0 || (&batch[i - 1].key, &batch[i - 1].request_id) != (&n.key, &n.request_id)
            })
            .collect();
        let once = batch
            .iter()
            .zip(&first)
            .filter(|(_, f)| **f)
            .map(|(n, _)| n);
        let (mut keys, mut ids, mut untils) = (Vec::new(), Vec::new(), Vec::new());
        for n in once {
            keys.push(n.key.as_str());
            ids.push(n.request_id.as_str());
            untils.push(n.until);
        }
        let mut c = self.conn()?;
        if Self::due(&self.ids_swept, now) {
            shared::PgDb::new(&mut c, false)
                .execute("DELETE FROM request_ids WHERE until < $1", args![now])?;
        }
        let rows = c.query_typed(
            NOTE_IDS,
            &[
                Type::TEXT_ARRAY,
                Type::TEXT_ARRAY,
                Type::INT8_ARRAY,
                Type::INT8,
            ],
            &[&keys, &ids, &untils, &now],
        )?;
        let mut admitted = std::collections::HashSet::with_capacity(rows.len());
        for r in &rows {
            admitted.insert((r.try_get::<_, String>(0)?, r.try_get::<_, String>(1)?));
        }
        Ok(batch
            .iter()
            .zip(first)
            .map(|(n, f)| f && admitted.contains(&(n.key.clone(), n.request_id.clone())))
            .collect())
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

    /// Requests noted at once share one statement (one round trip and one
    /// commit instead of one each): a caller that finds fewer than
    /// [`NOTE_LEADERS`] statements running runs one for every note waiting
    /// ([`Postgres::lead_notes`]); otherwise it waits for a leader to take
    /// its note, or to hand it the lead.
    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission> {
        if key.contains('\0') || request_id.contains('\0') {
            return Err(StoreError("a request id or key holds a NUL".into()));
        }
        // Room for both messages a note can get: the lead handed to it, and
        // its answer from another leader that took it first.
        let (turn, answer) = mpsc::sync_channel(2);
        let lead = {
            let mut q = self.notes();
            q.waiting.push(Note {
                key: key.to_owned(),
                request_id: request_id.to_owned(),
                until: keep_until(t, now),
                now,
                turn,
            });
            let lead = q.leaders < self.note_leaders;
            q.leaders += usize::from(lead);
            lead
        };
        if lead {
            self.lead_notes();
        }
        loop {
            match answer.recv() {
                Ok(Turn::Done(r)) => return r,
                Ok(Turn::Lead) => self.lead_notes(),
                Err(_) => return Err(StoreError("the replay check was abandoned".into())),
            }
        }
    }

    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission> {
        if key.contains('\0') {
            return Err(StoreError("a key holds a NUL".into()));
        }
        let full = rate * 2.0;
        let sweep = Self::due(&self.buckets_swept, now as i64);
        self.run(|db| {
            if sweep {
                // A bucket that has refilled is the same as none: an empty
                // one refills in two seconds, so any bucket untouched that
                // long is.
                db.execute("DELETE FROM rate_buckets WHERE at < $1 - 2", args![now])?;
            }
            // One statement: refill by the time passed, take a token if
            // there is a whole one; a new key starts full.
            let row = db.query_opt(
                "INSERT INTO rate_buckets AS b (public_key, tokens, at) \
                 SELECT $1, $3 - 1, $2 WHERE $3 >= 1 \
                 ON CONFLICT (public_key) DO UPDATE SET \
                   tokens = LEAST($3, b.tokens + GREATEST($2 - b.at, 0) * $4) - 1, \
                   at = GREATEST(b.at, $2) \
                 WHERE LEAST($3, b.tokens + GREATEST($2 - b.at, 0) * $4) >= 1 \
                 RETURNING 1",
                args![key, now, full, rate],
            )?;
            Ok(match row {
                Some(_) => Ok(()),
                None => Err(Refusal::RateLimited),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_leaders_setting_is_range_checked_and_named() {
        assert_eq!(note_leaders(None).unwrap(), NOTE_LEADERS);
        assert_eq!(note_leaders(Some("1")).unwrap(), 1);
        assert_eq!(note_leaders(Some(" 1024 ")).unwrap(), 1024);
        for bad in ["0", "1025", "-3", "two", "", "100000"] {
            let e = note_leaders(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("PALAVER_PG_NOTE_LEADERS"), "{bad}: {e}");
        }
    }
}
