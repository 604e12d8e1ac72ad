//! The community server's storage, behind the [`Store`] trait so another
//! database can be put in without touching the routes. [`SqliteStore`] is
//! the embedded default: SQLite in WAL mode, schema migrations versioned
//! here, every multi-step change in one transaction. The PostgreSQL store
//! for several `palaver serve` instances is [`super::pg::PgStore`].
//!
//! The trait is synchronous: a store call blocks its thread, so the routes
//! make every call on tokio's blocking pool (`community::server`), never on
//! an async worker.

use super::groups::Group;
use super::recent::{Admission, Buckets, RequestIds};
use crate::json::{self, Map, Value};
pub use crate::web::metrics::{CommunityGauges, PoolState};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::Mutex;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("store: {0}")]
pub struct StoreError(pub String);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError(e.to_string())
    }
}

pub type Res<T> = Result<T, StoreError>;

/// Open invitations at `?1`/`$1` (both stores' SQL).
pub(super) const LIVE_INVITATIONS: &str =
    "SELECT COUNT(*) FROM invitations WHERE status = 'open' AND expires_at > $1";

/// What recording a session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewSession {
    /// Recorded, and its invitation is now `matched`.
    Added,
    /// A session with this id is already recorded (nothing written).
    Exists,
    /// The invitation is not open (its status; nothing written).
    NotOpen(String),
    /// There is no such invitation (nothing written).
    NoInvitation,
}

/// What renewing an invitation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    /// Its expiry moved.
    Renewed,
    /// The invitation is not open (its status; nothing written).
    NotOpen(String),
    /// It had expired and its key holds the most active invitations allowed
    /// already: renewing would make one too many (nothing written).
    TooMany,
    /// There is no such invitation.
    Missing,
}

/// What a schema migration did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Migrated {
    /// `sqlite` or `postgres`.
    pub store: &'static str,
    /// What it migrated (`community`, `market`).
    pub component: &'static str,
    /// The schema version found.
    pub from: i64,
    /// The schema version now.
    pub to: i64,
}

/// An agent (a registered identity).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Agent {
    pub public_key: String,
    pub nickname: String,
    pub bio: String,
    pub agent_id: String,
    pub registered_at: f64,
}

/// A session row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionRow {
    pub session_id: String,
    pub post_id: String,
    pub protocol_id: String,
    pub host_public_key: String,
    pub guest_public_key: String,
    pub status: String,
    pub winner: Option<String>,
    pub disputed: bool,
    pub iroh_ticket: Option<String>,
    pub created_at: f64,
}

/// What the routes need from storage.
/// A protocol being registered.
pub struct NewProtocol<'a> {
    pub protocol_id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub kind: &'a str,
    /// The spec as canonical JSON text.
    pub spec_json: &'a str,
    /// The registering key.
    pub registered_by: &'a str,
}

pub trait Store: Send + Sync {
    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()>;
    /// The difficulty of a challenge younger than `max_age`, leaving it in
    /// place.
    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>>;
    /// Takes a challenge younger than `max_age` (single use).
    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>>;
    fn agent(&self, public_key: &str) -> Res<Option<Agent>>;
    fn add_agent(&self, a: &Agent) -> Res<bool>;
    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool>;
    /// (name, description, type, spec_json text).
    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>>;
    /// Protocols after `cursor` (a protocol_id), at most `limit`.
    fn protocols(&self, cursor: Option<&str>, limit: usize) -> Res<Vec<(String, String, String)>>;
    /// `sqlite` or `postgres` (the health endpoint names it).
    fn kind(&self) -> &'static str;
    /// Answers when the database does (the health endpoint).
    fn ping(&self) -> Res<()>;
    /// What `GET /metrics` shows of the community at `now`: open invitations
    /// and live group rooms (lobby or active, the leader's lease not lapsed).
    fn gauges(&self, now: f64) -> Res<CommunityGauges>;
    /// The connection pool's state, for a store that keeps one.
    fn pool_state(&self) -> Option<PoolState> {
        None
    }
    /// Records request id `request_id` of `key`, stamped `t`, unless it was
    /// used while a request stamped like it could still be accepted
    /// (`Refusal::Replayed`); expired ids are forgotten. Atomic: of two
    /// requests with one id, on any number of servers, one is admitted.
    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission>;
    /// Takes a token from `key`'s bucket (`rate` a second, holding two
    /// seconds' worth), or refuses with `Refusal::RateLimited`. Atomic across
    /// every server on the store.
    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission>;
    fn active_invitations(&self, public_key: &str, now: f64) -> Res<usize>;
    /// Stores an open invitation unless `public_key` holds `max_active`
    /// active ones already (false then, nothing written); the count and the
    /// insert are one transaction, so racing posts cannot pass the limit.
    fn add_invitation(
        &self,
        inv: &Map,
        public_key: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<bool>;
    fn invitation(&self, post_id: &str) -> Res<Option<Map>>;
    /// Open, unexpired invitations matching the filters.
    fn invitations(
        &self,
        protocol_id: Option<&str>,
        kind: Option<&str>,
        tag: Option<&str>,
        limit: usize,
        now: f64,
    ) -> Res<Vec<Map>>;
    /// Moves an open invitation to `cancelled`; false when it was not open
    /// (nothing written).
    fn cancel_invitation(&self, post_id: &str) -> Res<bool>;
    /// Moves an open invitation's expiry to `expires_at`. An invitation
    /// that had expired counts against `max_active` again, so renewing
    /// cannot make one too many.
    fn renew_invitation(
        &self,
        post_id: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<Renewal>;
    /// Inserts a session and marks its invitation matched, atomically, if
    /// the session is new and the invitation still open.
    fn add_session(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<NewSession>;
    fn session(&self, session_id: &str) -> Res<Option<SessionRow>>;
    /// Moves `matched` → terminal; false when the session is already terminal.
    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool>;
    /// Records a reporter's winner; returns (agreed winner, disputed).
    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
    ) -> Res<(Option<String>, bool)>;
    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()>;
    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()>;
    /// false when the rater already rated this session.
    fn add_rating(
        &self,
        session_id: &str,
        rater: &str,
        rated: &str,
        score: i64,
        comment: &str,
        now: f64,
    ) -> Res<bool>;
    fn agent_stats(&self, public_key: &str) -> Res<Map>;
    /// The ratings an agent received, newest first, at most `limit`.
    fn agent_ratings(&self, public_key: &str, limit: usize) -> Res<Vec<Map>>;
    /// Stores a new group; false when its post already has one.
    fn add_group(&self, g: &Group) -> Res<bool>;
    /// A group and its row version, by group_id or (`by_post`) post_id.
    fn group(&self, id: &str, by_post: bool) -> Res<Option<(Group, i64)>>;
    /// Replaces a group if its row version is still `version`; false when
    /// someone changed it meanwhile (nothing is written then).
    fn save_group(&self, g: &Group, version: i64) -> Res<bool>;
}

/// An agent's reputation figures, as `agent-stats` shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Reputation {
    /// Closed sessions over all sessions (None before the first).
    pub success_rate: Option<f64>,
    /// The ratings' mean pulled towards the scale's middle (3) by two
    /// virtual ratings, so a single 5 does not outrank many 4s; 3.0 with no
    /// ratings.
    pub weighted_score: f64,
    /// How much the figures rest on: `none` (no ratings), `low` (< 5),
    /// `medium` (< 20) or `high`.
    pub confidence: &'static str,
}

impl Reputation {
    pub fn of(sessions: i64, closed: i64, ratings: i64, score_sum: i64) -> Reputation {
        const PRIOR: f64 = 3.0;
        const PRIOR_WEIGHT: f64 = 2.0;
        Reputation {
            success_rate: (sessions > 0).then(|| closed as f64 / sessions as f64),
            weighted_score: (score_sum as f64 + PRIOR * PRIOR_WEIGHT)
                / (ratings as f64 + PRIOR_WEIGHT),
            confidence: match ratings {
                0 => "none",
                1..5 => "low",
                5..20 => "medium",
                _ => "high",
            },
        }
    }
}

/// Schema migrations, applied in order; the index is the version.
const MIGRATIONS: &[&str] = &[
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
];

/// SQLite storage.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The replay window and the rate-limit buckets live in memory, not in
    /// the file: a SQLite store is one process's (the file is on its own
    /// disk, and every route already goes through this one connection), so
    /// memory is as shared as the file would be, and keeping them there
    /// spares every request, reads included, a write to the database.
    /// Several processes on one community use PostgreSQL, where they are
    /// tables ([`super::pg::PgStore`]).
    ids: Mutex<RequestIds>,
    buckets: Mutex<Buckets>,
}

/// A stored JSON object's text as a map (damaged text: an empty map).
fn map_of(text: &str) -> Map {
    json::parse_str(text)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// An invitation's columns, as both stores write them.
pub(super) struct InvitationRow {
    pub post_id: Option<String>,
    pub protocol_id: Option<String>,
    /// `type` (default `supply`).
    pub kind: String,
    /// The tags as canonical JSON text (`[]` without any).
    pub tags: String,
    /// The whole invitation as canonical JSON text.
    pub body: String,
}

impl InvitationRow {
    pub fn of(inv: &Map) -> InvitationRow {
        let s = |k: &str| inv.get(k).and_then(Value::as_str).map(str::to_owned);
        InvitationRow {
            post_id: s("post_id"),
            protocol_id: s("protocol_id"),
            kind: s("type").unwrap_or_else(|| "supply".into()),
            tags: inv
                .get("tags")
                .map(crate::json::canonical::to_string_ordered)
                .unwrap_or_else(|| "[]".into()),
            body: crate::json::canonical::to_string_ordered(&Value::Object(inv.clone())),
        }
    }
}

/// A stored invitation as the routes show it: its body with its status and
/// expiry.
pub(super) fn invitation_view(body: &str, status: String, expires_at: f64) -> Map {
    let mut m = map_of(body);
    m.insert("status", Value::from(status));
    m.insert("expires_at", Value::from(expires_at));
    m
}

/// Whether stored tags text (a JSON array) holds `tag`.
pub(super) fn tagged(tags: &str, tag: &str) -> bool {
    json::parse_str(tags)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(tag)))
}

impl SqliteStore {
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
        let from: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(from.max(0) as usize) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        let to: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        Ok((
            SqliteStore {
                conn: Mutex::new(conn),
                ids: Mutex::new(RequestIds::default()),
                buckets: Mutex::new(Buckets::default()),
            },
            Migrated {
                store: "sqlite",
                component: "community",
                from,
                to,
            },
        ))
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn session_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        session_id: r.get(0)?,
        post_id: r.get(1)?,
        protocol_id: r.get(2)?,
        host_public_key: r.get(3)?,
        guest_public_key: r.get(4)?,
        status: r.get(5)?,
        winner: r.get(6)?,
        disputed: r.get::<_, i64>(7)? != 0,
        iroh_ticket: r.get(8)?,
        created_at: r.get(9)?,
    })
}

impl Store for SqliteStore {
    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()> {
        let db = self.db();
        db.execute(
            "DELETE FROM challenges WHERE created_at < ?1",
            params![now - 600.0],
        )?;
        db.execute(
            "INSERT INTO challenges (nonce, difficulty, created_at) VALUES (?1, ?2, ?3)",
            params![nonce, difficulty, now],
        )?;
        Ok(())
    }

    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        let found: Option<(u32, f64)> = self
            .db()
            .query_row(
                "SELECT difficulty, created_at FROM challenges WHERE nonce = ?1",
                params![nonce],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(found.filter(|(_, at)| now - at <= max_age).map(|(d, _)| d))
    }

    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>> {
        let db = self.db();
        let found: Option<(u32, f64)> = db
            .query_row(
                "DELETE FROM challenges WHERE nonce = ?1 RETURNING difficulty, created_at",
                params![nonce],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(found.filter(|(_, at)| now - at <= max_age).map(|(d, _)| d))
    }

    fn agent(&self, public_key: &str) -> Res<Option<Agent>> {
        Ok(self
            .db()
            .query_row(
                "SELECT public_key, nickname, bio, agent_id, registered_at FROM agents WHERE public_key = ?1 OR agent_id = ?1",
                params![public_key],
                |r| Ok(Agent { public_key: r.get(0)?, nickname: r.get(1)?, bio: r.get(2)?, agent_id: r.get(3)?, registered_at: r.get(4)? }),
            )
            .optional()?)
    }

    fn add_agent(&self, a: &Agent) -> Res<bool> {
        let n = self.db().execute(
            "INSERT OR IGNORE INTO agents (public_key, nickname, bio, agent_id, registered_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![a.public_key, a.nickname, a.bio, a.agent_id, a.registered_at],
        )?;
        Ok(n == 1)
    }

    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool> {
        let n = self.db().execute(
            "INSERT OR IGNORE INTO protocols (protocol_id, name, description, type, spec_json, registered_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![p.protocol_id, p.name, p.description, p.kind, p.spec_json, p.registered_by, now],
        )?;
        Ok(n == 1)
    }

    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>> {
        Ok(self
            .db()
            .query_row(
                "SELECT name, description, type, spec_json FROM protocols WHERE protocol_id = ?1",
                params![protocol_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?)
    }

    fn protocols(&self, cursor: Option<&str>, limit: usize) -> Res<Vec<(String, String, String)>> {
        let db = self.db();
        let mut st = db.prepare_cached("SELECT protocol_id, name, description FROM protocols WHERE protocol_id > ?1 ORDER BY protocol_id LIMIT ?2")?;
        let rows = st.query_map(params![cursor.unwrap_or(""), limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn active_invitations(&self, public_key: &str, now: f64) -> Res<usize> {
        let n: i64 = self.db().query_row(
            "SELECT COUNT(*) FROM invitations WHERE public_key = ?1 AND status = 'open' AND expires_at > ?2",
            params![public_key, now],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn ping(&self) -> Res<()> {
        self.db().query_row("SELECT 1", [], |_| Ok(()))?;
        Ok(())
    }

    fn gauges(&self, now: f64) -> Res<CommunityGauges> {
        let db = self.db();
        Ok(CommunityGauges {
            open_invitations: db.query_row(LIVE_INVITATIONS, [now], |r| r.get(0))?,
            live_groups: db.query_row(
                "SELECT COUNT(*) FROM groups WHERE json_extract(body, '$.status') IN ('lobby', 'active')
                 AND json_extract(body, '$.leader_lease_expires_at') > ?1",
                [now],
                |r| r.get(0),
            )?,
        })
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

    fn add_invitation(
        &self,
        inv: &Map,
        public_key: &str,
        now: f64,
        expires_at: f64,
        max_active: usize,
    ) -> Res<bool> {
        let row = InvitationRow::of(inv);
        let mut db = self.db();
        // IMMEDIATE: the write lock is taken before the count, so another
        // connection on the file cannot insert between the two.
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let active: i64 = tx.query_row(
            "SELECT COUNT(*) FROM invitations WHERE public_key = ?1 AND status = 'open' AND expires_at > ?2",
            params![public_key, now],
            |r| r.get(0),
        )?;
        if usize::try_from(active).unwrap_or(usize::MAX) >= max_active {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO invitations (post_id, public_key, protocol_id, type, tags, body, status, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7, ?8)",
            params![row.post_id, public_key, row.protocol_id, row.kind, row.tags, row.body, now, expires_at],
        )?;
        tx.commit()?;
        Ok(true)
    }

    fn invitation(&self, post_id: &str) -> Res<Option<Map>> {
        let row: Option<(String, String, f64)> = self
            .db()
            .query_row(
                "SELECT body, status, expires_at FROM invitations WHERE post_id = ?1",
                params![post_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        Ok(row.map(|(body, status, exp)| invitation_view(&body, status, exp)))
    }

    fn invitations(
        &self,
        protocol_id: Option<&str>,
        kind: Option<&str>,
        tag: Option<&str>,
        limit: usize,
        now: f64,
    ) -> Res<Vec<Map>> {
        let db = self.db();
        let mut st = db.prepare_cached(
            "SELECT body, status, expires_at, tags FROM invitations WHERE status = 'open' AND expires_at > ?1
             AND (?2 IS NULL OR protocol_id = ?2) AND (?3 IS NULL OR type = ?3) ORDER BY created_at DESC LIMIT 500",
        )?;
        let rows = st.query_map(params![now, protocol_id, kind], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (body, status, exp, tags) = row?;
            if tag.is_some_and(|t| !tagged(&tags, t)) {
                continue;
            }
            out.push(invitation_view(&body, status, exp));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    fn cancel_invitation(&self, post_id: &str) -> Res<bool> {
        let n = self.db().execute(
            "UPDATE invitations SET status = 'cancelled' WHERE post_id = ?1 AND status = 'open'",
            params![post_id],
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
        let mut db = self.db();
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let row: Option<(String, String, f64)> = tx
            .query_row(
                "SELECT public_key, status, expires_at FROM invitations WHERE post_id = ?1",
                params![post_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((key, status, old)) = row else {
            return Ok(Renewal::Missing);
        };
        if status != "open" {
            return Ok(Renewal::NotOpen(status));
        }
        if old <= now {
            let active: i64 = tx.query_row(
                "SELECT COUNT(*) FROM invitations WHERE public_key = ?1 AND status = 'open' AND expires_at > ?2",
                params![key, now],
                |r| r.get(0),
            )?;
            if usize::try_from(active).unwrap_or(usize::MAX) >= max_active {
                return Ok(Renewal::TooMany);
            }
        }
        tx.execute(
            "UPDATE invitations SET expires_at = ?2 WHERE post_id = ?1",
            params![post_id, expires_at],
        )?;
        tx.commit()?;
        Ok(Renewal::Renewed)
    }

    fn add_session(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<NewSession> {
        let mut db = self.db();
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let exists: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?1)",
            params![s.session_id],
            |r| r.get(0),
        )?;
        if exists {
            return Ok(NewSession::Exists);
        }
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM invitations WHERE post_id = ?1",
                params![s.post_id],
                |r| r.get(0),
            )
            .optional()?;
        match status {
            None => return Ok(NewSession::NoInvitation),
            Some(st) if st != "open" => return Ok(NewSession::NotOpen(st)),
            Some(_) => {}
        }
        tx.execute(
            "INSERT INTO sessions (session_id, post_id, protocol_id, host_public_key, guest_public_key, session_nonce,
             host_signature, guest_signature, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'matched', ?9)",
            params![s.session_id, s.post_id, s.protocol_id, s.host_public_key, s.guest_public_key, session_nonce, host_sig, guest_sig, s.created_at],
        )?;
        tx.execute(
            "UPDATE invitations SET status = 'matched' WHERE post_id = ?1",
            params![s.post_id],
        )?;
        tx.commit()?;
        Ok(NewSession::Added)
    }

    fn session(&self, session_id: &str) -> Res<Option<SessionRow>> {
        Ok(self
            .db()
            .query_row(
                "SELECT session_id, post_id, protocol_id, host_public_key, guest_public_key, status, winner, disputed, iroh_ticket, created_at FROM sessions WHERE session_id = ?1",
                params![session_id],
                session_from_row,
            )
            .optional()?)
    }

    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool> {
        // Compare-and-swap: only a matched session moves.
        let n = self.db().execute(
            "UPDATE sessions SET status = ?2, ended_at = ?3 WHERE session_id = ?1 AND status = 'matched'",
            params![session_id, status, now],
        )?;
        Ok(n == 1)
    }

    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
    ) -> Res<(Option<String>, bool)> {
        let mut db = self.db();
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR REPLACE INTO results (session_id, reporter, winner) VALUES (?1, ?2, ?3)",
            params![session_id, reporter, winner],
        )?;
        let winners: Vec<String> = {
            let mut st = tx.prepare("SELECT winner FROM results WHERE session_id = ?1")?;
            let rows = st.query_map(params![session_id], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let disputed = winners.iter().any(|w| *w != winners[0]);
        let agreed = (!disputed).then(|| winners[0].clone());
        tx.execute(
            "UPDATE sessions SET winner = ?2, disputed = ?3 WHERE session_id = ?1",
            params![session_id, agreed, disputed as i64],
        )?;
        tx.commit()?;
        Ok((agreed, disputed))
    }

    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()> {
        self.db().execute(
            "UPDATE sessions SET iroh_ticket = ?2, transport_signature = ?3 WHERE session_id = ?1",
            params![session_id, ticket, signature],
        )?;
        Ok(())
    }

    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()> {
        self.db().execute(
            "INSERT INTO feedback (session_id, public_key, body, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![session_id, by, crate::json::canonical::to_string_ordered(&Value::Object(body.clone())), now],
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
        let n = self.db().execute(
            "INSERT OR IGNORE INTO ratings (session_id, rater, rated, score, comment, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![session_id, rater, rated, score, comment, now],
        )?;
        Ok(n == 1)
    }

    fn agent_stats(&self, public_key: &str) -> Res<Map> {
        let db = self.db();
        let count =
            |sql: &str| -> Res<i64> { Ok(db.query_row(sql, params![public_key], |r| r.get(0))?) };
        let sessions = count(
            "SELECT COUNT(*) FROM sessions WHERE host_public_key = ?1 OR guest_public_key = ?1",
        )?;
        let closed = count(
            "SELECT COUNT(*) FROM sessions WHERE (host_public_key = ?1 OR guest_public_key = ?1) AND status = 'closed'",
        )?;
        let wins = count(
            "SELECT COUNT(*) FROM sessions WHERE (host_public_key = ?1 AND winner = 'host') OR (guest_public_key = ?1 AND winner = 'guest')",
        )?;
        let ratings = count("SELECT COUNT(*) FROM ratings WHERE rated = ?1")?;
        let avg: Option<f64> = db.query_row(
            "SELECT AVG(score) FROM ratings WHERE rated = ?1",
            params![public_key],
            |r| r.get(0),
        )?;
        let sum: i64 = db.query_row(
            "SELECT COALESCE(SUM(score), 0) FROM ratings WHERE rated = ?1",
            params![public_key],
            |r| r.get(0),
        )?;
        let rep = Reputation::of(sessions, closed, ratings, sum);
        Ok(crate::obj! {
            "public_key" => public_key, "sessions" => sessions, "closed" => closed, "wins" => wins,
            "ratings" => ratings, "rating_average" => avg.map(Value::from).unwrap_or(Value::Null),
            "total_sessions" => sessions, "successful_sessions" => closed,
            "success_rate" => rep.success_rate.map(Value::from).unwrap_or(Value::Null),
            "weighted_score" => rep.weighted_score, "confidence_level" => rep.confidence,
        })
    }

    fn add_group(&self, g: &Group) -> Res<bool> {
        let body = serde_json::to_string(g).map_err(|e| StoreError(e.to_string()))?;
        let n = self.db().execute(
            "INSERT OR IGNORE INTO groups (group_id, post_id, body, version) VALUES (?1, ?2, ?3, 1)",
            params![g.group_id, g.post_id, body],
        )?;
        Ok(n == 1)
    }

    fn group(&self, id: &str, by_post: bool) -> Res<Option<(Group, i64)>> {
        let sql = if by_post {
            "SELECT body, version FROM groups WHERE post_id = ?1"
        } else {
            "SELECT body, version FROM groups WHERE group_id = ?1"
        };
        let row: Option<(String, i64)> = self
            .db()
            .query_row(sql, params![id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        row.map(|(body, v)| {
            serde_json::from_str::<Group>(&body)
                .map(|g| (g, v))
                .map_err(|e| StoreError(format!("group {id}: stored body does not parse: {e}")))
        })
        .transpose()
    }

    fn save_group(&self, g: &Group, version: i64) -> Res<bool> {
        let body = serde_json::to_string(g).map_err(|e| StoreError(e.to_string()))?;
        let n = self.db().execute(
            "UPDATE groups SET body = ?1, version = version + 1 WHERE group_id = ?2 AND version = ?3",
            params![body, g.group_id, version],
        )?;
        Ok(n == 1)
    }

    fn agent_ratings(&self, public_key: &str, limit: usize) -> Res<Vec<Map>> {
        let db = self.db();
        let mut q = db.prepare(
            "SELECT session_id, rater, score, comment, created_at FROM ratings WHERE rated = ?1 \
             ORDER BY created_at DESC, session_id LIMIT ?2",
        )?;
        let rows = q.query_map(params![public_key, limit as i64], |r| {
            Ok(crate::obj! {
                "session_id" => r.get::<_, String>(0)?, "rater_public_key" => r.get::<_, String>(1)?,
                "score" => r.get::<_, i64>(2)?, "comment" => r.get::<_, String>(3)?,
                "created_at" => r.get::<_, f64>(4)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
