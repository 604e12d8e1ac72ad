//! The community server's storage, behind the [`Store`] trait so another
//! database can be put in without touching the routes. Both stores are one
//! [`super::queries::SqlStore`], whose SQL is written once over the shared
//! seam ([`crate::sql`]), run by a [`Backend`]: [`super::sqlite`] (the
//! embedded default: SQLite in WAL mode, one process) or [`super::pg`]
//! (PostgreSQL, for several `palaver serve` instances).
//!
//! The trait is synchronous: a store call blocks its thread, so the routes
//! make every call on tokio's blocking pool (`community::server`), never on
//! an async worker. A store may also answer the calls every signed request
//! makes, the browse and a session create's usual case without blocking
//! ([`AsyncCalls`], PostgreSQL's lane): the routes then make those on the
//! worker itself.

use super::groups::Group;
use super::recent::{Admission, Admit};
use super::standing::{
    Cursor, Delivery, EloRating, InboxPage, Karma, Message, Page, Ranked, Reported,
};
use crate::json::{self, Map, Value};
use crate::sql::{Db, Dialect, SqlError};
pub use crate::web::metrics::{CommunityGauges, PoolState};

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("store: {0}")]
pub struct StoreError(pub String);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError(e.to_string())
    }
}

impl From<SqlError> for StoreError {
    fn from(e: SqlError) -> Self {
        StoreError(e.to_string())
    }
}

pub type Res<T> = Result<T, StoreError>;

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
    /// The integer id (registration order), given by the store: what a
    /// new agent carries before it is stored does not matter.
    pub id: i64,
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

/// A future a store call returns.
pub type Call<'a, T> = futures_util::future::BoxFuture<'a, Res<T>>;

/// The calls of [`Store`] that a store can answer on the server's async
/// workers, each with the same meaning (and the same SQL) as its blocking
/// namesake: the admission every signed request needs, the browse, and a
/// session create's usual case.
pub trait AsyncCalls: Send + Sync {
    /// [`Store::admit`].
    fn admit<'a>(&'a self, a: Admit<'a>) -> Call<'a, Admission>;
    /// [`Store::invitations`].
    fn invitations<'a>(
        &'a self,
        protocol_id: Option<&'a str>,
        kind: Option<&'a str>,
        tag: Option<&'a str>,
        n: usize,
        now: f64,
    ) -> Call<'a, Vec<Map>>;
    /// [`Store::add_session_at_once`].
    fn add_session_at_once<'a>(
        &'a self,
        s: &'a SessionRow,
        session_nonce: &'a str,
        host_sig: &'a str,
        guest_sig: &'a str,
    ) -> Call<'a, bool>;
}

pub trait Store: Send + Sync {
    fn add_challenge(&self, nonce: &str, difficulty: u32, now: f64) -> Res<()>;
    /// The difficulty of a challenge younger than `max_age`, leaving it in
    /// place.
    fn challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>>;
    /// Takes a challenge younger than `max_age` (single use).
    fn take_challenge(&self, nonce: &str, now: f64, max_age: f64) -> Res<Option<u32>>;
    /// An agent by its public key, its 16-hex agent_id or its integer id
    /// (decimal).
    fn agent(&self, public_key: &str) -> Res<Option<Agent>>;
    fn add_agent(&self, a: &Agent) -> Res<bool>;
    fn add_protocol(&self, p: &NewProtocol<'_>, now: f64) -> Res<bool>;
    /// (name, description, type, spec_json text).
    fn protocol(&self, protocol_id: &str) -> Res<Option<(String, String, String, String)>>;
    /// Protocols newest first (created_at, then protocol_id, descending),
    /// after `cursor`, at most `limit`: (protocol_id, name, description).
    fn protocols(
        &self,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Res<Page<(String, String, String)>>;
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
    /// Admits a signed request ([`Admit`]): its id noted as
    /// [`Backend::note_request`] does and, when that admits it and a rate is
    /// set, a token taken as [`Backend::take_token`] does. A store may make
    /// both in one statement.
    fn admit(&self, a: &Admit<'_>) -> Res<Admission>;
    /// The store's asynchronous calls, for a store that answers some calls
    /// without blocking a thread (PostgreSQL's lane, [`crate::sql::pg_lane`]).
    fn async_calls(&self) -> Option<&dyn AsyncCalls> {
        None
    }
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
    /// An invitation (as [`Store::invitation`]) and whether each of two
    /// public keys is registered: what recording a session reads, in one
    /// query.
    fn invitation_and_agents(
        &self,
        post_id: &str,
        keys: [&str; 2],
    ) -> Res<Option<(Map, [bool; 2])>>;
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
    /// [`Store::add_session`]'s usual case on its own: records the session
    /// (true) only if the invitation is open and the host's, both parties
    /// are registered and the session is new; otherwise writes nothing.
    fn add_session_at_once(
        &self,
        s: &SessionRow,
        session_nonce: &str,
        host_sig: &str,
        guest_sig: &str,
    ) -> Res<bool>;
    fn session(&self, session_id: &str) -> Res<Option<SessionRow>>;
    /// Moves `matched` → terminal; false when the session is already terminal.
    fn close_session(&self, session_id: &str, status: &str, now: f64) -> Res<bool>;
    /// Records a reporter's winner: the agreed winner, whether the reports
    /// disagree, and what ELO did. In the same transaction, the moment both
    /// parties have reported the same result the session's game is rated
    /// once (standing.rs: self-play and the pair limit count nothing).
    fn report_result(
        &self,
        session_id: &str,
        reporter: &str,
        winner: &str,
        now: f64,
    ) -> Res<Reported>;
    fn set_transport(&self, session_id: &str, ticket: &str, signature: &str) -> Res<()>;
    fn add_feedback(&self, session_id: &str, by: &str, body: &Map, now: f64) -> Res<()>;
    /// false when the rater already rated this session. A new rating
    /// updates the rated agent's karma in the same transaction (if it is
    /// among the rater's first five of the UTC day for that agent).
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
    /// An agent's ELO (the default for one that has not played a counted game).
    fn elo(&self, public_key: &str) -> Res<EloRating>;
    /// The ELO leaderboard (rating, then public key, descending) after `after`.
    fn elo_board(&self, after: Option<&Cursor>, limit: usize) -> Res<Page<Ranked>>;
    /// An agent's karma (none without counted ratings).
    fn karma(&self, public_key: &str) -> Res<Karma>;
    /// The karma leaderboard (karma, then public key, descending).
    fn karma_board(&self, after: Option<&Cursor>, limit: usize) -> Res<Page<Ranked>>;
    /// Replaces an agent's declared capabilities (checked already).
    fn set_capabilities(&self, public_key: &str, caps: &[String], now: f64) -> Res<()>;
    /// An agent's declared capabilities and when they were set.
    fn capabilities(&self, public_key: &str) -> Res<Option<(Vec<String>, f64)>>;
    /// Agents declaring `capability`, by public key, with their capabilities.
    fn agents_with_capability(
        &self,
        capability: &str,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Res<Page<(Agent, Vec<String>)>>;
    /// Stores a message (ciphertext checked already) unless a quota is
    /// full; the counts and the insert are one transaction.
    fn send_message(
        &self,
        sender: &str,
        recipient: &str,
        ciphertext: &str,
        size: i64,
        now: f64,
    ) -> Res<Delivery>;
    /// A recipient's unexpired messages, newest first, without ciphertext.
    fn inbox(
        &self,
        recipient: &str,
        after: Option<&Cursor>,
        limit: usize,
        now: f64,
    ) -> Res<InboxPage>;
    /// One of `recipient`'s unexpired messages, marked read.
    fn read_message(&self, recipient: &str, id: i64, now: f64) -> Res<Option<Message>>;
    /// Deletes one of `recipient`'s messages; false when it has no such one.
    fn delete_message(&self, recipient: &str, id: i64) -> Res<bool>;
    /// Deletes every message of `recipient`; how many.
    fn clear_inbox(&self, recipient: &str) -> Res<u64>;
    /// The trust snapshot of `date` (YYYY-MM-DD): stored, or (`build`)
    /// built from the ratings now and stored if no other request stored one
    /// first; None when it is not stored and not to be built.
    fn trust_snapshot(&self, date: &str, build: bool, now: f64) -> Res<Option<String>>;
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
            confidence: super::standing::confidence(ratings),
        }
    }
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

/// What a database gives the community's one set of queries
/// ([`super::queries::SqlStore`]): connections, transactions, and the few
/// things each keeps its own way.
pub trait Backend: Send + Sync {
    /// The SQL dialect its connections speak.
    fn dialect(&self) -> Dialect;
    /// Runs `f` on one connection, each statement its own transaction.
    fn run<T>(&self, f: impl FnOnce(&mut dyn Db) -> Res<T>) -> Res<T>;
    /// Runs `f` in one write transaction, committed when it returns `Ok`
    /// (also a refusal such as `Ok(false)`: it wrote nothing) and rolled
    /// back on an error; a database whose writers can conflict runs it
    /// again (so `f` may run more than once).
    fn transaction<T>(&self, f: impl FnMut(&mut dyn Db) -> Res<T>) -> Res<T>;
    /// Answers when the database does.
    fn ping(&self) -> Res<()>;
    /// The connection pool's state, for a database that keeps one.
    fn pool_state(&self) -> Option<PoolState>;
    /// Records request id `request_id` of `key`, stamped `t`, unless it was
    /// used while a request stamped like it could still be accepted
    /// (`Refusal::Replayed`); expired ids are forgotten. Atomic: of two
    /// requests with one id, on any number of servers, one is admitted.
    fn note_request(&self, key: &str, request_id: &str, t: i64, now: i64) -> Res<Admission>;
    /// Takes a token from `key`'s bucket (`rate` a second, holding two
    /// seconds' worth), or refuses with `Refusal::RateLimited`. Atomic across
    /// every server on the store.
    fn take_token(&self, key: &str, rate: f64, now: f64) -> Res<Admission>;
    /// [`Store::admit`]; by default its two steps, each a call of its own.
    fn admit(&self, a: &Admit<'_>) -> Res<Admission> {
        a.by_steps(
            || self.note_request(a.key, a.request_id, a.t, a.now),
            |rate| self.take_token(a.key, rate, a.at),
        )
    }
    /// [`Store::async_calls`].
    fn async_calls(&self) -> Option<&dyn AsyncCalls> {
        None
    }
}
