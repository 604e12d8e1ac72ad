//! [`Market`]: the one state machine every GTL write goes through, with the
//! sandbox GTU ledger and the per-transaction event chain.
//!
//! Every request runs in this order: parse strictly → check the bearer
//! token → check the signature → expire what is due → check the gate and
//! the guards → write, all in one transaction whose state change is a
//! compare-and-swap. A refusal returns before any write, and the store's
//! triggers refuse whatever a guard might miss.
//!
//! The store is SQLite ([`Market::open`], [`Market::memory`]: one
//! connection, `BEGIN IMMEDIATE` in a group commit) or PostgreSQL
//! ([`Market::postgres`]: a pool, one READ COMMITTED transaction per write
//! that locks the transaction row it loads, retried on conflicts). The
//! machine's code and SQL are the same for both (`db` is the seam).
//!
//! `transition` holds that sequence once; each phase has its file:
//! `open` (JOB_OPEN), `bid` (OFFER, OFFER_DECLINE), `deal` (DEAL_LOCK,
//! DEAL_CONFIRM), `fund` (FUND), `deliver` (DELIVER and its verification),
//! `settle` (settlement, refund, deadlines); `ledger` holds tokens and
//! balances, `read` the listing and the transaction view, `rows` the stored
//! rows and the field readers.

mod append;
mod bid;
mod deal;
mod deliver;
mod fund;
mod ledger;
mod open;
mod read;
mod rows;
mod settle;
mod transition;

pub use ledger::{Audit, Grant};
pub use settle::Finish;

use super::canonical::{self, hex_eq};
use super::db::postgres::{self as pg, Pg, PgSource};
use super::group::Group;
use super::time::Clock;
use super::vocab::Kind;
use super::{MarketConfig, MarketError, forbidden, invalid};
use super::{store, store_pg};
use crate::json::{Map, Value};
use crate::obj;
use rows::hash_of;
use rusqlite::Connection;
use std::path::Path;
use transition::Msg;

/// Where the market keeps its tables.
enum Store {
    Sqlite(Group),
    Postgres(Pg),
}

/// The market core over one SQLite file or one PostgreSQL database.
pub struct Market {
    store: Store,
    cfg: MarketConfig,
    clock: Clock,
    /// The market's schema version before and after opening migrated it.
    migrated: (i64, i64),
}

impl Market {
    /// Opens the market's tables in `path` (creating and migrating them);
    /// the community store may hold the same file.
    pub fn open(path: &Path, cfg: MarketConfig) -> Result<Market, MarketError> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| MarketError::Store(e.to_string()))?;
        }
        Self::setup(Connection::open(path)?, cfg)
    }

    /// A market in memory (tests, benchmarks).
    pub fn memory(cfg: MarketConfig) -> Result<Market, MarketError> {
        Self::setup(Connection::open_in_memory()?, cfg)
    }

    fn setup(conn: Connection, cfg: MarketConfig) -> Result<Market, MarketError> {
        let migrated = store::migrate(&conn, cfg.durable)?;
        Ok(Market {
            store: Store::Sqlite(Group::new(conn)),
            cfg,
            clock: Clock::System,
            migrated,
        })
    }

    /// The market on PostgreSQL: `source` is a `postgres://` URL (a pool of
    /// [`crate::sql::pg::DEFAULT_POOL_SIZE`] connections is built for it) or an r2d2 pool the
    /// caller built ([`pg::PgPool`], e.g. shared with the community store).
    /// Applies the market's pending schema migrations first (versioned, in
    /// one transaction under an advisory lock, so instances starting at
    /// once never race); the tables, constraints and triggers are
    /// `store_pg`'s, holding the same invariants as SQLite's.
    ///
    /// Several instances (processes) may serve one database at once: every
    /// transition is a transaction that locks its row and moves the state
    /// by compare-and-swap, so two instances never both settle a job or
    /// spend the same GTU. `synchronous_commit` stays on for a durable
    /// market (concurrent commits share WAL flushes).
    ///
    /// Blocking, like every call on a PostgreSQL market: call it (and the
    /// market) from a plain or `spawn_blocking` thread, never from an async
    /// worker thread.
    pub fn postgres(source: impl Into<PgSource>, cfg: MarketConfig) -> Result<Market, MarketError> {
        let pool = match source.into() {
            PgSource::Url(url) => pg::pool(&url)?,
            PgSource::Pool(p) => p,
        };
        let migrated = {
            let mut c = pool
                .get()
                .map_err(|e| MarketError::Store(format!("no PostgreSQL connection: {e}")))?;
            store_pg::migrate(&mut c.client)?
        };
        Ok(Market {
            store: Store::Postgres(Pg::new(pool, cfg.durable)),
            cfg,
            clock: Clock::System,
            migrated,
        })
    }

    /// The market's schema version before and after opening it (equal
    /// when nothing was pending).
    pub fn migrated(&self) -> (i64, i64) {
        self.migrated
    }

    /// Which store this market runs on: `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self.store {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    /// The same market reading time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Market {
        self.clock = clock;
        self
    }

    pub fn config(&self) -> &MarketConfig {
        &self.cfg
    }

    /// The market's clock, unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The PostgreSQL pool's state (`GET /metrics`); none on SQLite.
    pub fn pool_state(&self) -> Option<crate::web::metrics::PoolState> {
        match &self.store {
            Store::Sqlite(_) => None,
            Store::Postgres(p) => p.pool_state(),
        }
    }

    /// Commits made so far: SQLite's group commit shares them among
    /// writers; on PostgreSQL each write commits its own transaction (and
    /// PostgreSQL shares the WAL flushes of concurrent ones).
    pub fn commits(&self) -> u64 {
        match &self.store {
            Store::Sqlite(g) => g.commits(),
            Store::Postgres(p) => p.commits(),
        }
    }

    /// Handles the bytes of a `POST /api/gtl` body.
    pub fn submit(&self, bearer: Option<&str>, body: &[u8]) -> Result<Value, MarketError> {
        if body.len() > super::MAX_MESSAGE_BYTES {
            return Err(MarketError::Malformed(format!(
                "messages are limited to {} bytes",
                super::MAX_MESSAGE_BYTES
            )));
        }
        let v = canonical::parse_strict(body).map_err(|e| MarketError::Malformed(e.to_string()))?;
        match v {
            Value::Object(m) => self.handle(bearer, m),
            other => Err(MarketError::Malformed(format!(
                "a GTL message is a JSON object, not {}",
                other.type_name()
            ))),
        }
    }

    /// Handles one parsed message.
    pub fn handle(&self, bearer: Option<&str>, msg: Map) -> Result<Value, MarketError> {
        let whole = Value::Object(msg.clone());
        canonical::check(&whole, "").map_err(|e| MarketError::Malformed(e.to_string()))?;
        // PostgreSQL text cannot hold U+0000: neither store takes it, so both
        // give the same answer.
        if whole.holds_nul() {
            return Err(MarketError::Malformed(
                "the message holds a U+0000 (NUL) character, which no field may hold".into(),
            ));
        }
        let kind = msg.get("type").and_then(Value::as_str).ok_or_else(|| {
            let types: Vec<&str> = Kind::MESSAGES.iter().map(|k| k.as_str()).collect();
            MarketError::Malformed(format!("`type` is required ({})", types.join(", ")))
        })?;
        let kind = match Kind::parse(kind) {
            Some(Kind::Hello) => return hello(&msg),
            Some(k) if Kind::MESSAGES.contains(&k) => k,
            _ => {
                return Err(MarketError::Malformed(format!(
                    "unknown message type {kind:?} (VERIFICATION, SETTLEMENT and REFUND are server events)"
                )));
            }
        };
        let token = bearer.ok_or_else(|| {
            MarketError::Unauthorized(
                "send Authorization: Bearer <agent-token> (get one with POST /api/gtl/token or `palaver market token`)".into(),
            )
        })?;
        let who = self.principal(token)?.ok_or_else(|| {
            MarketError::Unauthorized("this bearer token was not issued here".into())
        })?;
        let sig = msg
            .get("signature")
            .and_then(Value::as_str)
            .ok_or_else(|| forbidden("bad_signature", "`signature` is required: SHA-256(token|canonical_json(message without signature)) as lowercase hex"))?;
        let expected =
            canonical::signature(token, &msg).map_err(|e| MarketError::Malformed(e.to_string()))?;
        if !hex_eq(sig, &expected) {
            return Err(forbidden(
                "bad_signature",
                "signature is not SHA-256(token|canonical_json(message without signature))",
            ));
        }
        if let Some(v) = msg.get("gtl_version")
            && v.as_str() != Some("0.2")
        {
            return Err(MarketError::UnsupportedVersion(
                "this market speaks GTL 0.2".into(),
            ));
        }
        let now = self.now_ms();
        self.sweep_at(now)?;
        let mut unsigned = msg.clone();
        unsigned.remove("signature");
        let unsigned = Value::Object(unsigned);
        let mh = hash_of(&unsigned)?;
        let m = Msg {
            who: &who,
            msg: &msg,
            unsigned: &unsigned,
            hash: &mh,
            sig,
            now,
        };
        let answer = match kind {
            Kind::JobOpen => self.job_open(&m),
            Kind::Offer => self.offer(&m),
            Kind::OfferDecline => self.offer_decline(&m),
            Kind::DealLock => self.deal_lock(&m),
            Kind::DealConfirm => self.deal_confirm(&m),
            Kind::Fund => self.fund(&m),
            _ => self.deliver(&m),
        };
        // Committed: count it by the state it reached.
        if let Ok(v) = &answer
            && let Some(state) = v.get("state").and_then(Value::as_str)
        {
            crate::web::metrics::market_transition(kind.as_str(), state);
        }
        answer
    }
}

fn hello(msg: &Map) -> Result<Value, MarketError> {
    let offered: Vec<&str> = msg
        .get("supported_versions")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            invalid(
                "supported_versions",
                "required, an array of version strings",
            )
        })?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let selected = super::GTL_VERSIONS
        .iter()
        .find(|v| offered.contains(v))
        .ok_or_else(|| {
            MarketError::UnsupportedVersion(format!(
                "none of {offered:?} is spoken here; this market speaks {:?}",
                super::GTL_VERSIONS
            ))
        })?;
    Ok(Value::Object(obj! {
        "type" => "HELLO_ACK", "selected_version" => *selected,
        "supported_versions" => Value::Array(super::GTL_VERSIONS.iter().map(|v| Value::from(*v)).collect()),
        "canonicalization" => super::CANONICALIZATION, "signature_scheme" => super::SIGNATURE_SCHEME,
    }))
}
