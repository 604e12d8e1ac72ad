//! The community store's SQLite [`Backend`]: one connection in WAL mode
//! behind a mutex, schema migrations versioned in `user_version`, every
//! write transaction `BEGIN IMMEDIATE` (the file's one write lock, taken
//! before the transaction reads, so nothing can change between its read
//! and its write). The queries are [`SqlStore`]'s.

use super::queries::SqlStore;
use super::recent::{Admission, Buckets, RequestIds};
use super::store::{Backend, Migrated, PoolState, Res, StoreError};
use crate::sql::sqlite::{SqliteDb, sql_err};
use crate::sql::{Db, Dialect};
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;
use std::sync::Mutex;

/// Schema migrations, applied in order; the index is the version.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE agents (public_key TEXT PRIMARY KEY, nickname TEXT NOT NULL, bio TEXT NOT NULL,
                     agent_id TEXT NOT NULL UNIQUE, registered_at REAL NOT NULL);
CREATE TABLE challenges (nonce TEXT PRIMARY KEY, difficulty INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE protocols (protocol_id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL,
                        type TEXT NOT NULL, spec_json TEXT NOT NULL, registered_by TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE invitations (post_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, protocol_id TEXT, type TEXT NOT NULL,
                          tags TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,
                          created_at REAL NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX invitations_open ON invitations (status, expires_at);
CREATE INDEX invitations_author ON invitations (public_key, status);
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, post_id TEXT NOT NULL, protocol_id TEXT NOT NULL,
                       host_public_key TEXT NOT NULL, guest_public_key TEXT NOT NULL, session_nonce TEXT NOT NULL,
                       host_signature TEXT NOT NULL, guest_signature TEXT NOT NULL, status TEXT NOT NULL,
                       winner TEXT, disputed INTEGER NOT NULL DEFAULT 0, iroh_ticket TEXT, transport_signature TEXT,
                       created_at REAL NOT NULL, ended_at REAL);
CREATE TABLE results (session_id TEXT NOT NULL, reporter TEXT NOT NULL, winner TEXT NOT NULL,
                      PRIMARY KEY (session_id, reporter));
CREATE TABLE feedback (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, public_key TEXT NOT NULL,
                       body TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE ratings (session_id TEXT NOT NULL, rater TEXT NOT NULL, rated TEXT NOT NULL, score INTEGER NOT NULL,
                      comment TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (session_id, rater));
"#,
    r#"
CREATE TABLE groups (group_id TEXT PRIMARY KEY, post_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
                     version INTEGER NOT NULL);
"#,
    // The community beyond sessions (standing.rs): integer agent ids (the
    // existing agents numbered in registration order, a new one the next
    // by the trigger), ELO, karma, capabilities, the inbox, trust snapshots,
    // and the protocol directory newest first.
    r#"
ALTER TABLE agents ADD COLUMN id INTEGER;
UPDATE agents SET id = r.n FROM (SELECT public_key, ROW_NUMBER() OVER (ORDER BY registered_at, public_key) AS n
                                 FROM agents) AS r WHERE r.public_key = agents.public_key;
CREATE UNIQUE INDEX agents_number ON agents (id);
CREATE TRIGGER agents_numbered AFTER INSERT ON agents WHEN NEW.id IS NULL BEGIN
  UPDATE agents SET id = (SELECT COALESCE(MAX(id), 0) + 1 FROM agents) WHERE public_key = NEW.public_key;
END;
CREATE TABLE elo_ratings (public_key TEXT PRIMARY KEY, rating INTEGER NOT NULL, games INTEGER NOT NULL,
                          wins INTEGER NOT NULL, losses INTEGER NOT NULL, draws INTEGER NOT NULL,
                          updated_at REAL NOT NULL);
CREATE INDEX elo_ratings_rank ON elo_ratings (rating DESC, public_key DESC);
CREATE TABLE elo_games (session_id TEXT PRIMARY KEY, host TEXT NOT NULL, guest TEXT NOT NULL, pair_lo TEXT NOT NULL,
                        pair_hi TEXT NOT NULL, winner TEXT NOT NULL, host_delta INTEGER NOT NULL,
                        guest_delta INTEGER NOT NULL, applied_at REAL NOT NULL, counted INTEGER NOT NULL,
                        outcome TEXT NOT NULL);
CREATE INDEX elo_games_pair ON elo_games (pair_lo, pair_hi, applied_at);
CREATE TABLE karma (public_key TEXT PRIMARY KEY, sum_sw REAL NOT NULL, sum_w REAL NOT NULL, last_w REAL NOT NULL,
                    n INTEGER NOT NULL, karma INTEGER NOT NULL, level TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX karma_rank ON karma (karma DESC, public_key DESC);
CREATE INDEX ratings_pair ON ratings (rater, rated, created_at);
CREATE TABLE capabilities (public_key TEXT PRIMARY KEY, list TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE agent_capabilities (capability TEXT NOT NULL, public_key TEXT NOT NULL,
                                 PRIMARY KEY (capability, public_key));
CREATE TABLE inbox (id INTEGER PRIMARY KEY AUTOINCREMENT, recipient TEXT NOT NULL, sender TEXT NOT NULL,
                    ciphertext TEXT NOT NULL, size INTEGER NOT NULL, created_at REAL NOT NULL,
                    expires_at REAL NOT NULL, is_read INTEGER NOT NULL DEFAULT 0);
CREATE INDEX inbox_recipient ON inbox (recipient, id);
CREATE INDEX inbox_sender ON inbox (recipient, sender, expires_at);
CREATE INDEX inbox_expiry ON inbox (expires_at);
CREATE TABLE trust_snapshots (snapshot_date TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE INDEX protocols_newest ON protocols (created_at DESC, protocol_id DESC);
"#,
];

/// Statements one connection keeps prepared (the store's SQL is a fixed
/// set below this).
const CACHED_STATEMENTS: usize = 64;

/// SQLite storage: the community's queries over one SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

/// The SQLite backend.
pub struct Sqlite {
    conn: Mutex<Connection>,
    /// The replay window and the rate-limit buckets live in memory, not in
    /// the file: a SQLite store is one process's (the file is on its own
    /// disk, and every route already goes through this one connection), so
    /// memory is as shared as the file would be, and keeping them there
    /// spares every request, reads included, a write to the database.
    /// Several processes on one community use PostgreSQL, where they are
    /// tables ([`super::pg`]).
    ids: Mutex<RequestIds>,
    buckets: Mutex<Buckets>,
}

impl SqlStore<Sqlite> {
    /// Opens (creating and migrating) a database file.
    pub fn open(path: &Path) -> Res<SqliteStore> {
        Self::open_migrated(path).map(|(s, _)| s)
    }

    /// Opens (creating and migrating) a database file, saying what the
    /// migration did.
    pub fn open_migrated(path: &Path) -> Res<(SqliteStore, Migrated)> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| StoreError(e.to_string()))?;
        }
        Self::setup(Connection::open(path)?)
    }

    /// An in-memory database (tests).
    pub fn memory() -> Res<SqliteStore> {
        Self::setup(Connection::open_in_memory()?).map(|(s, _)| s)
    }

    fn setup(conn: Connection) -> Res<(SqliteStore, Migrated)> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
        let from: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(from.max(0) as usize) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        let to: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        Ok((
            SqlStore(Sqlite {
                conn: Mutex::new(conn),
                ids: Mutex::new(RequestIds::default()),
                buckets: Mutex::new(Buckets::default()),
            }),
            Migrated {
                store: "sqlite",
                component: "community",
                from,
                to,
            },
        ))
    }
}

impl Sqlite {
    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn run<T>(&self, f: impl FnOnce(&mut dyn Db) -> Res<T>) -> Res<T> {
        let c = self.db();
        f(&mut SqliteDb(&c))
    }

    fn transaction<T>(&self, mut f: impl FnMut(&mut dyn Db) -> Res<T>) -> Res<T> {
        let mut c = self.db();
        // IMMEDIATE: the write lock is taken before the first read, so
        // another connection on the file cannot write between the two.
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let v = f(&mut SqliteDb(&tx))?;
        tx.commit().map_err(sql_err)?;
        Ok(v)
    }

    fn ping(&self) -> Res<()> {
        self.run(|db| {
            db.query_one("SELECT 1", &[])?;
            Ok(())
        })
    }

    fn pool_state(&self) -> Option<PoolState> {
        None
    }

    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission> {
        Ok(self
            .ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit(key, request_id, t, now))
    }

    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission> {
        Ok(self
            .buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(key, rate, now))
    }
}
