//! [`Market`]: the one state machine every GTL write goes through, with the
//! sandbox GTU ledger and the per-transaction event chain.
//!
//! Every request runs in this order: parse strictly → check the bearer
//! token → check the signature → expire what is due → check the gate and
//! the guards → write, all in one `BEGIN IMMEDIATE` SQLite transaction
//! whose state change is a compare-and-swap. A refusal returns before any
//! write, and the store's triggers refuse whatever a guard might miss.

use super::canonical::{self, hex_eq};
use super::group::{Group, Reader, Writer};
use super::store::{self, GENESIS};
use super::time::{Clock, format_rfc3339_utc, parse_rfc3339_utc};
use super::{
    FieldError, MarketConfig, MarketError, Principal, conflict, forbidden, gate, invalid, policy,
};
use crate::json::{Map, Value};
use crate::obj;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;

/// A bearer token issued to a registered identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub token: String,
    pub principal_id: String,
    pub agent_id: String,
    /// False when the identity already had this token.
    pub created: bool,
}

/// What [`Market::finish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Settled,
    Refunded,
    /// Someone else already finished it (this is how a lost race ends).
    AlreadyTerminal(String),
    /// Not VERIFIED or REJECTED yet.
    NotReady(String),
}

/// The result of checking a transaction's event chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    pub transaction_id: String,
    pub events: usize,
    /// The last event's hash (the chain head).
    pub head: String,
    pub problems: Vec<String>,
}

impl ChainReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Ledger totals (every one must hold at all times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// Sum of every account's balance, the mint included: always 0.
    pub sum_of_balances: i64,
    /// The escrow account's balance.
    pub escrow: i64,
    /// Amounts of commitments still reserved: always equal to `escrow`.
    pub reserved: i64,
    /// Accounts whose balance differs from their ledger rows: always 0.
    pub ledger_mismatches: i64,
    /// Transactions with more than one SETTLEMENT/REFUND event: always 0.
    pub double_outcomes: i64,
}

/// The market core over one SQLite file.
pub struct Market {
    conn: Group,
    cfg: MarketConfig,
    clock: Clock,
}

/// One stored transaction.
struct TxRow {
    id: String,
    state: String,
    buyer: String,
    job: Map,
    job_hash: String,
    policy_hash: String,
    authority_hash: String,
    deadline_ms: i64,
    budget: i64,
    asset: String,
    deal_hash: Option<String>,
}

struct DealRow {
    deal_hash: String,
    offer_hash: String,
    provider: String,
    amount: i64,
    confirmed: bool,
}

fn parse_map(text: &str) -> Map {
    canonical::parse_strict(text.as_bytes())
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    crate::canonical::to_string(v)
}

fn hash_of(v: &Value) -> Result<String, MarketError> {
    canonical::hash(v).map_err(|e| MarketError::Malformed(e.to_string()))
}

/// Constraint failures are the store refusing to break an invariant.
fn store_err(e: rusqlite::Error) -> MarketError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            conflict(
                "invariant_violation",
                msg.clone().unwrap_or_else(|| e.to_string()),
            )
        }
        _ => MarketError::Store(e.to_string()),
    }
}

trait Sql<T> {
    fn sql(self) -> Result<T, MarketError>;
}

impl<T> Sql<T> for rusqlite::Result<T> {
    fn sql(self) -> Result<T, MarketError> {
        self.map_err(store_err)
    }
}

impl<T> Sql<T> for Result<T, MarketError> {
    fn sql(self) -> Result<T, MarketError> {
        self
    }
}

/// Refuses members outside `allowed` (adapters may not add semantics).
fn only(m: &Map, allowed: &[&str], path: &str) -> Result<(), MarketError> {
    let bad: Vec<FieldError> = m
        .keys()
        .filter(|k| !allowed.contains(k))
        .map(|k| FieldError {
            path: if path.is_empty() {
                k.to_owned()
            } else {
                format!("{path}.{k}")
            },
            reason: "unknown field (signed objects carry only the GTL 0.2 fields)".into(),
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(MarketError::Invalid(bad))
    }
}

fn string<'a>(m: &'a Map, key: &str, path: &str) -> Result<&'a str, MarketError> {
    m.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(path, "required, a non-empty string"))
}

fn object<'a>(m: &'a Map, key: &str, path: &str) -> Result<&'a Map, MarketError> {
    m.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(path, "required, an object"))
}

fn int(m: &Map, key: &str, path: &str) -> Result<i64, MarketError> {
    m.get(key)
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(path, "required, an integer"))
}

fn time_field(m: &Map, key: &str, path: &str) -> Result<i64, MarketError> {
    parse_rfc3339_utc(string(m, key, path)?).ok_or_else(|| {
        invalid(
            path,
            "must be an RFC 3339 UTC time like 2030-01-01T00:00:00.000Z",
        )
    })
}

fn load(db: &Connection, id: &str) -> Result<TxRow, MarketError> {
    db.query_row(
        "SELECT transaction_id, state, buyer_principal, job, job_hash, policy_hash, authority_hash,
                deadline_ms, budget, asset, deal_hash FROM gtl_transactions WHERE transaction_id = ?1",
        params![id],
        |r| {
            Ok(TxRow {
                id: r.get(0)?,
                state: r.get(1)?,
                buyer: r.get(2)?,
                job: parse_map(&r.get::<_, String>(3)?),
                job_hash: r.get(4)?,
                policy_hash: r.get(5)?,
                authority_hash: r.get(6)?,
                deadline_ms: r.get(7)?,
                budget: r.get(8)?,
                asset: r.get(9)?,
                deal_hash: r.get(10)?,
            })
        },
    )
    .optional()
    .sql()?
    .ok_or_else(|| MarketError::NotFound(format!("no transaction {id}")))
}

fn load_deal(db: &Connection, txid: &str) -> Result<Option<DealRow>, MarketError> {
    db.query_row(
        "SELECT deal_hash, offer_hash, provider_principal, amount, confirmed FROM gtl_deals WHERE transaction_id = ?1",
        params![txid],
        |r| {
            Ok(DealRow {
                deal_hash: r.get(0)?,
                offer_hash: r.get(1)?,
                provider: r.get(2)?,
                amount: r.get(3)?,
                confirmed: r.get::<_, i64>(4)? == 1,
            })
        },
    )
    .optional()
    .sql()
}

/// Moves `txid` from `from` to `to` only if it is still in `from`.
fn cas(db: &Connection, txid: &str, from: &str, to: &str, now: i64) -> Result<(), MarketError> {
    let n = db
        .execute(
            "UPDATE gtl_transactions SET state = ?3,
                terminal_state = CASE WHEN ?3 IN ('SETTLED','REFUNDED','CLOSED') THEN ?3 END,
                updated_at = ?4
             WHERE transaction_id = ?1 AND state = ?2 AND terminal_state IS NULL",
            params![txid, from, to, now],
        )
        .sql()?;
    if n == 1 {
        Ok(())
    } else {
        Err(conflict(
            "concurrent_change",
            format!("{txid} left {from} before this message committed"),
        ))
    }
}

/// The object an event's hash covers.
fn event_preimage(txid: &str, e: &Map) -> Value {
    let g = |k: &str| e.get(k).cloned().unwrap_or(Value::Null);
    Value::Object(obj! {
        "transaction_id" => txid, "seq" => g("seq"), "kind" => g("kind"),
        "state_before" => g("state_before"), "state_after" => g("state_after"),
        "message_hash" => g("message_hash"), "signature" => g("signature"), "body" => g("body"),
        "at" => g("at"), "prev_event_hash" => g("prev_event_hash"),
    })
}

/// Appends an event to `txid`'s chain; returns (seq, event hash).
#[allow(clippy::too_many_arguments)]
fn append_event(
    db: &Connection,
    txid: &str,
    kind: &str,
    before: Option<&str>,
    after: &str,
    message_hash: Option<&str>,
    signature: Option<&str>,
    body: &Value,
    at: i64,
) -> Result<(i64, String), MarketError> {
    let (seq, prev): (i64, String) = db
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1,
                    COALESCE((SELECT event_hash FROM gtl_events WHERE transaction_id = ?1 ORDER BY seq DESC LIMIT 1), ?2)
             FROM gtl_events WHERE transaction_id = ?1",
            params![txid, GENESIS],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .sql()?;
    let opt = |s: Option<&str>| s.map(Value::from).unwrap_or(Value::Null);
    let e = obj! {
        "seq" => seq, "kind" => kind, "state_before" => opt(before), "state_after" => after,
        "message_hash" => opt(message_hash), "signature" => opt(signature), "body" => body.clone(),
        "at" => at, "prev_event_hash" => prev.as_str(),
    };
    let event_hash = hash_of(&event_preimage(txid, &e))?;
    db.execute(
        "INSERT INTO gtl_events (transaction_id, seq, kind, state_before, state_after, message_hash, signature,
                                 body, at, prev_event_hash, event_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![txid, seq, kind, before, after, message_hash, signature, text(body), at, prev, event_hash],
    )
    .sql()?;
    Ok((seq, event_hash))
}

fn ok_reply(kind: &str, txid: &str, state: &str, hashes: Map, seq: i64) -> Value {
    Value::Object(obj! {
        "ok" => true, "type" => kind, "transaction_id" => txid, "state" => state,
        "hashes" => Value::Object(hashes), "event_seq" => seq,
    })
}

/// Checks a transaction view's event chain (the JSON `GET` returns): every
/// event hash recomputed, every link and sequence number followed. What
/// `palaver market verify-chain` runs on the client side.
pub fn verify_chain_value(view: &Value) -> ChainReport {
    let txid = view
        .get("transaction_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut problems = Vec::new();
    let mut prev = GENESIS.to_owned();
    let events = view
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, e) in events.iter().enumerate() {
        let Some(e) = e.as_object() else {
            problems.push(format!("event {}: not an object", i + 1));
            continue;
        };
        if e.get("seq").and_then(Value::as_i64) != Some(i as i64 + 1) {
            problems.push(format!("event {}: seq is not {}", i + 1, i + 1));
        }
        if e.get("prev_event_hash").and_then(Value::as_str) != Some(prev.as_str()) {
            problems.push(format!(
                "event {}: prev_event_hash does not link to the event before",
                i + 1
            ));
        }
        let claimed = e.get("event_hash").and_then(Value::as_str).unwrap_or("");
        match canonical::hash(&event_preimage(&txid, e)) {
            Ok(h) if h == claimed => {}
            Ok(h) => problems.push(format!(
                "event {}: event_hash {claimed} does not match its content ({h})",
                i + 1
            )),
            Err(err) => problems.push(format!("event {}: {err}", i + 1)),
        }
        prev = claimed.to_owned();
    }
    if events.is_empty() {
        problems.push("no events".into());
    }
    if let Some(state) = view.get("state").and_then(Value::as_str)
        && let Some(last) = events
            .last()
            .and_then(|e| e.get("state_after"))
            .and_then(Value::as_str)
        && last != state
    {
        problems.push(format!(
            "the last event ends in {last} but the transaction is {state}"
        ));
    }
    ChainReport {
        transaction_id: txid,
        events: events.len(),
        head: prev,
        problems,
    }
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
        store::migrate(&conn, cfg.durable)?;
        Ok(Market {
            conn: Group::new(conn),
            cfg,
            clock: Clock::System,
        })
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

    /// Commits made so far (group commit shares them among writers).
    pub fn commits(&self) -> u64 {
        self.conn.commits()
    }

    /// The connection for reads (committed state only).
    fn db(&self) -> Reader<'_> {
        self.conn.reader()
    }

    /// The connection for one write, committed in a group (see `group`).
    fn writer(&self) -> Writer<'_> {
        self.conn.writer()
    }

    /// Issues (or returns) the bearer token of a registered identity. The
    /// first token binds the identity to `principal_id` (default: its
    /// agent_id) for good, and the sandbox mint grants the new principal
    /// [`MarketConfig::grant`] GTU.
    pub fn issue_token(
        &self,
        public_key: &str,
        agent_id: &str,
        principal_id: Option<&str>,
    ) -> Result<Grant, MarketError> {
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let existing: Option<(String, String, String)> = tx
            .query_row(
                "SELECT token, principal_id, agent_id FROM gtl_principals WHERE public_key = ?1",
                params![public_key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .sql()?;
        if let Some((token, pid, aid)) = existing {
            if principal_id.is_some_and(|p| p != pid) {
                return Err(conflict(
                    "principal_bound",
                    format!("this identity is bound to principal {pid}"),
                ));
            }
            return Ok(Grant {
                token,
                principal_id: pid,
                agent_id: aid,
                created: false,
            });
        }
        let pid = principal_id.unwrap_or(agent_id);
        if !gate::valid_transaction_id(pid) || pid == "mint" || pid == "escrow" {
            return Err(invalid(
                "principal_id",
                "must match ^[a-z0-9_]{1,64}$ and not be mint or escrow",
            ));
        }
        let taken: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM gtl_principals WHERE principal_id = ?1)",
                params![pid],
                |r| r.get(0),
            )
            .sql()?;
        if taken {
            return Err(conflict(
                "principal_taken",
                format!("principal {pid} belongs to another identity"),
            ));
        }
        let token = format!("gtl_{}", crate::canonical::hex(&rand::random::<[u8; 32]>()));
        let now = self.now_ms();
        tx.execute(
            "INSERT INTO gtl_principals (principal_id, public_key, agent_id, token, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![pid, public_key, agent_id, token, now],
        )
        .sql()?;
        tx.execute(
            "INSERT INTO gtl_accounts (account, balance) VALUES (?1, 0)",
            params![pid],
        )
        .sql()?;
        if self.cfg.grant > 0 {
            tx.execute(
                "INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at) VALUES (NULL, 'mint', ?1, ?2, 'sandbox_grant', ?3)",
                params![pid, self.cfg.grant, now],
            )
            .sql()?;
        }
        tx.commit().sql()?;
        Ok(Grant {
            token,
            principal_id: pid.to_owned(),
            agent_id: agent_id.to_owned(),
            created: true,
        })
    }

    /// The principal a token speaks for.
    pub fn principal(&self, token: &str) -> Result<Option<Principal>, MarketError> {
        self.db()
            .query_row(
                "SELECT principal_id, agent_id, public_key FROM gtl_principals WHERE token = ?1",
                params![token],
                |r| {
                    Ok(Principal {
                        principal_id: r.get(0)?,
                        agent_id: r.get(1)?,
                        public_key: r.get(2)?,
                    })
                },
            )
            .optional()
            .sql()
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
        canonical::check(&Value::Object(msg.clone()), "")
            .map_err(|e| MarketError::Malformed(e.to_string()))?;
        let kind = msg
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| MarketError::Malformed("`type` is required (HELLO, JOB_OPEN, OFFER, OFFER_DECLINE, DEAL_LOCK, DEAL_CONFIRM, FUND, DELIVER)".into()))?
            .to_owned();
        if kind == "HELLO" {
            return hello(&msg);
        }
        if !matches!(
            kind.as_str(),
            "JOB_OPEN"
                | "OFFER"
                | "OFFER_DECLINE"
                | "DEAL_LOCK"
                | "DEAL_CONFIRM"
                | "FUND"
                | "DELIVER"
        ) {
            return Err(MarketError::Malformed(format!(
                "unknown message type {kind:?} (VERIFICATION, SETTLEMENT and REFUND are server events)"
            )));
        }
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
        match kind.as_str() {
            "JOB_OPEN" => self.job_open(&m),
            "OFFER" => self.offer(&m),
            "OFFER_DECLINE" => self.offer_decline(&m),
            "DEAL_LOCK" => self.deal_lock(&m),
            "DEAL_CONFIRM" => self.deal_confirm(&m),
            "FUND" => self.fund(&m),
            _ => self.deliver(&m),
        }
    }

    fn job_open(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        let g = gate::check_job_open(m.msg, m.who, m.now, &self.cfg).map_err(
            |(missing_fields, invalid_fields)| MarketError::Gate {
                missing_fields,
                invalid_fields,
            },
        )?;
        let job = object(m.msg, "job", "job")?;
        let job_v = Value::Object(job.clone());
        let job_hash = hash_of(&job_v)?;
        let policy_hash = hash_of(job.get("verification_policy").unwrap_or(&Value::Null))?;
        let authority_hash = hash_of(job.get("authority").unwrap_or(&Value::Null))?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let exists: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM gtl_transactions WHERE transaction_id = ?1)",
                params![g.transaction_id],
                |r| r.get(0),
            )
            .sql()?;
        if exists {
            return Err(conflict(
                "duplicate_transaction",
                format!(
                    "transaction {} already exists (first writer wins)",
                    g.transaction_id
                ),
            ));
        }
        tx.execute(
            "INSERT INTO gtl_transactions (transaction_id, state, buyer_principal, job, job_hash, policy_hash,
               authority_hash, task_type, deadline_ms, budget, asset, created_at, updated_at)
             VALUES (?1, 'JOB_OPEN', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)",
            params![g.transaction_id, m.who.principal_id, text(&job_v), job_hash, policy_hash, authority_hash,
                    g.task_type, g.deadline_ms, g.budget, g.asset, m.now],
        )
        .sql()?;
        let (seq, _) = append_event(
            &tx,
            &g.transaction_id,
            "JOB_OPEN",
            None,
            "JOB_OPEN",
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        Ok(ok_reply(
            "JOB_OPEN",
            &g.transaction_id,
            "JOB_OPEN",
            obj! { "job_hash" => job_hash, "verification_policy_hash" => policy_hash, "authority_hash" => authority_hash },
            seq,
        ))
    }

    fn offer(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &[
                "type",
                "gtl_version",
                "transaction_id",
                "offer",
                "signature",
            ],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let offer = object(m.msg, "offer", "offer")?;
        only(
            offer,
            &["job_hash", "price", "expires_at", "provider"],
            "offer",
        )?;
        let job_hash = string(offer, "job_hash", "offer.job_hash")?;
        let price = object(offer, "price", "offer.price")?;
        only(price, &["amount", "asset"], "offer.price")?;
        let amount = int(price, "amount", "offer.price.amount")?;
        let asset = string(price, "asset", "offer.price.asset")?;
        let expires = time_field(offer, "expires_at", "offer.expires_at")?;
        let provider = object(offer, "provider", "offer.provider")?;
        only(provider, &["principal_id", "agent_id"], "offer.provider")?;
        let pp = string(provider, "principal_id", "offer.provider.principal_id")?;
        let pa = string(provider, "agent_id", "offer.provider.agent_id")?;
        let offer_hash = hash_of(&Value::Object(offer.clone()))?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let t = load(&tx, txid)?;
        if !matches!(t.state.as_str(), "JOB_OPEN" | "OFFERED") {
            return Err(illegal("OFFER", &t.state));
        }
        if pp != m.who.principal_id || pa != m.who.agent_id {
            return Err(forbidden(
                "not_your_principal",
                format!(
                    "offer.provider must name your token's principal {} and agent {}",
                    m.who.principal_id, m.who.agent_id
                ),
            ));
        }
        if m.who.principal_id == t.buyer {
            return Err(forbidden(
                "same_principal",
                "a deal needs two different principals: the buyer cannot offer on its own job",
            ));
        }
        let mut bad = Vec::new();
        if job_hash != t.job_hash {
            bad.push(fe(
                "offer.job_hash",
                format!("is not this job's JobHash {}", t.job_hash),
            ));
        }
        if asset != t.asset {
            bad.push(fe("offer.price.asset", format!("must be {}", t.asset)));
        }
        if amount <= 0 || amount > t.budget {
            bad.push(fe(
                "offer.price.amount",
                format!("must be 1 to the budget ({})", t.budget),
            ));
        }
        if expires <= m.now || expires > t.deadline_ms {
            bad.push(fe(
                "offer.expires_at",
                "must be in the future and not after job.deadline",
            ));
        }
        if !bad.is_empty() {
            return Err(MarketError::Invalid(bad));
        }
        let dup: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM gtl_offers WHERE offer_hash = ?1)",
                params![offer_hash],
                |r| r.get(0),
            )
            .sql()?;
        if dup {
            return Err(conflict(
                "duplicate_offer",
                format!("offer {offer_hash} was already made"),
            ));
        }
        tx.execute(
            "INSERT INTO gtl_offers (offer_hash, transaction_id, provider_principal, price, asset, expires_at_ms, offer, status, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'live', ?8)",
            params![offer_hash, txid, m.who.principal_id, amount, asset, expires, text(&Value::Object(offer.clone())), m.now],
        )
        .sql()?;
        if t.state == "JOB_OPEN" {
            cas(&tx, txid, "JOB_OPEN", "OFFERED", m.now)?;
        }
        let (seq, _) = append_event(
            &tx,
            txid,
            "OFFER",
            Some(&t.state),
            "OFFERED",
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        Ok(ok_reply(
            "OFFER",
            txid,
            "OFFERED",
            obj! { "offer_hash" => offer_hash },
            seq,
        ))
    }

    fn offer_decline(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &[
                "type",
                "gtl_version",
                "transaction_id",
                "offer_hash",
                "signature",
            ],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let offer_hash = string(m.msg, "offer_hash", "offer_hash")?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let t = load(&tx, txid)?;
        if m.who.principal_id != t.buyer {
            return Err(forbidden("not_the_buyer", "only the buyer declines offers"));
        }
        if t.state != "OFFERED" {
            return Err(illegal("OFFER_DECLINE", &t.state));
        }
        let status: Option<String> = tx
            .query_row(
                "SELECT status FROM gtl_offers WHERE offer_hash = ?1 AND transaction_id = ?2",
                params![offer_hash, txid],
                |r| r.get(0),
            )
            .optional()
            .sql()?;
        match status.as_deref() {
            None => {
                return Err(MarketError::NotFound(format!(
                    "no offer {offer_hash} on {txid}"
                )));
            }
            Some("live") => {}
            Some(s) => return Err(conflict("offer_not_live", format!("the offer is {s}"))),
        }
        if load_deal(&tx, txid)?.is_some_and(|d| d.offer_hash == offer_hash) {
            return Err(conflict("offer_locked", "a deal lock names this offer"));
        }
        tx.execute(
            "UPDATE gtl_offers SET status = 'declined' WHERE offer_hash = ?1",
            params![offer_hash],
        )
        .sql()?;
        let live: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM gtl_offers WHERE transaction_id = ?1 AND status = 'live' AND expires_at_ms > ?2",
                params![txid, m.now],
                |r| r.get(0),
            )
            .sql()?;
        let after = if live == 0 && load_deal(&tx, txid)?.is_none() {
            cas(&tx, txid, "OFFERED", "JOB_OPEN", m.now)?;
            "JOB_OPEN"
        } else {
            "OFFERED"
        };
        let (seq, _) = append_event(
            &tx,
            txid,
            "OFFER_DECLINE",
            Some("OFFERED"),
            after,
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        Ok(ok_reply(
            "OFFER_DECLINE",
            txid,
            after,
            obj! { "offer_hash" => offer_hash },
            seq,
        ))
    }

    fn deal_lock(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &["type", "gtl_version", "transaction_id", "deal", "signature"],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let deal = object(m.msg, "deal", "deal")?;
        only(
            deal,
            &[
                "job_hash",
                "offer_hash",
                "authority_hash",
                "verification_policy_hash",
                "settlement",
            ],
            "deal",
        )?;
        let settlement = object(deal, "settlement", "deal.settlement")?;
        only(
            settlement,
            &[
                "on_verified",
                "on_rejected",
                "amount",
                "asset",
                "payee_principal_id",
            ],
            "deal.settlement",
        )?;
        let offer_hash = string(deal, "offer_hash", "deal.offer_hash")?;
        let deal_hash = hash_of(&Value::Object(deal.clone()))?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let t = load(&tx, txid)?;
        if m.who.principal_id != t.buyer {
            return Err(forbidden("not_the_buyer", "only the buyer locks a deal"));
        }
        if t.state != "OFFERED" {
            return Err(illegal("DEAL_LOCK", &t.state));
        }
        if load_deal(&tx, txid)?.is_some() {
            return Err(conflict(
                "deal_pending",
                "a deal lock is already waiting for the provider's DEAL_CONFIRM",
            ));
        }
        let offer: Option<(String, i64, String, i64, String)> = tx
            .query_row(
                "SELECT provider_principal, price, asset, expires_at_ms, status FROM gtl_offers WHERE offer_hash = ?1 AND transaction_id = ?2",
                params![offer_hash, txid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .sql()?;
        let Some((provider, price, asset, expires, status)) = offer else {
            return Err(MarketError::NotFound(format!(
                "no offer {offer_hash} on {txid}"
            )));
        };
        if status != "live" || expires <= m.now {
            return Err(conflict(
                "offer_not_live",
                format!(
                    "the offer is {}",
                    if status == "live" { "expired" } else { &status }
                ),
            ));
        }
        let auth_expires = t
            .job
            .get("authority")
            .and_then(Value::as_object)
            .and_then(|a| a.get("expires_at"))
            .and_then(Value::as_str)
            .and_then(parse_rfc3339_utc)
            .unwrap_or(0);
        if auth_expires <= m.now {
            return Err(forbidden(
                "authority_expired",
                "the job's authority has expired",
            ));
        }
        let mut bad = Vec::new();
        let want = |k: &str, v: &str, bad: &mut Vec<FieldError>, m: &Map, path: &str| {
            if m.get(k).and_then(Value::as_str) != Some(v) {
                bad.push(fe(&format!("{path}.{k}"), format!("must be {v}")));
            }
        };
        want("job_hash", &t.job_hash, &mut bad, deal, "deal");
        want("authority_hash", &t.authority_hash, &mut bad, deal, "deal");
        want(
            "verification_policy_hash",
            &t.policy_hash,
            &mut bad,
            deal,
            "deal",
        );
        want(
            "on_verified",
            "pay_provider",
            &mut bad,
            settlement,
            "deal.settlement",
        );
        want(
            "on_rejected",
            "refund_buyer",
            &mut bad,
            settlement,
            "deal.settlement",
        );
        want("asset", &asset, &mut bad, settlement, "deal.settlement");
        want(
            "payee_principal_id",
            &provider,
            &mut bad,
            settlement,
            "deal.settlement",
        );
        if settlement.get("amount").and_then(Value::as_i64) != Some(price)
            || !settlement.get("amount").is_some_and(Value::is_integer)
        {
            bad.push(fe(
                "deal.settlement.amount",
                format!("must be the offer's price, {price}"),
            ));
        }
        if !bad.is_empty() {
            return Err(MarketError::Invalid(bad));
        }
        tx.execute(
            "INSERT INTO gtl_deals (deal_hash, transaction_id, offer_hash, buyer_principal, provider_principal, amount, asset, deal, buyer_message_hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![deal_hash, txid, offer_hash, t.buyer, provider, price, asset, text(&Value::Object(deal.clone())), m.hash],
        )
        .sql()?;
        let (seq, _) = append_event(
            &tx,
            txid,
            "DEAL_LOCK",
            Some("OFFERED"),
            "OFFERED",
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        Ok(ok_reply(
            "DEAL_LOCK",
            txid,
            "OFFERED",
            obj! { "deal_hash" => deal_hash, "offer_hash" => offer_hash },
            seq,
        ))
    }

    fn deal_confirm(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &[
                "type",
                "gtl_version",
                "transaction_id",
                "deal_hash",
                "signature",
            ],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let deal_hash = string(m.msg, "deal_hash", "deal_hash")?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let t = load(&tx, txid)?;
        if t.state != "OFFERED" {
            return Err(illegal("DEAL_CONFIRM", &t.state));
        }
        let d = load_deal(&tx, txid)?
            .ok_or_else(|| conflict("no_deal_lock", "the buyer has not sent DEAL_LOCK yet"))?;
        if m.who.principal_id != d.provider {
            return Err(forbidden(
                "not_the_provider",
                "only the provider of the locked offer confirms",
            ));
        }
        if d.confirmed {
            return Err(conflict(
                "already_confirmed",
                "the deal is already confirmed",
            ));
        }
        if deal_hash != d.deal_hash {
            return Err(conflict(
                "deal_hash_mismatch",
                format!(
                    "both principals must confirm the same DealHash; the buyer locked {}",
                    d.deal_hash
                ),
            ));
        }
        let expires: i64 = tx
            .query_row(
                "SELECT expires_at_ms FROM gtl_offers WHERE offer_hash = ?1",
                params![d.offer_hash],
                |r| r.get(0),
            )
            .sql()?;
        if expires <= m.now {
            return Err(conflict("offer_not_live", "the locked offer has expired"));
        }
        tx.execute(
            "UPDATE gtl_deals SET confirmed = 1, provider_message_hash = ?2 WHERE deal_hash = ?1",
            params![d.deal_hash, m.hash],
        )
        .sql()?;
        tx.execute(
            "UPDATE gtl_offers SET status = CASE WHEN offer_hash = ?2 THEN 'accepted' ELSE 'superseded' END
             WHERE transaction_id = ?1 AND status = 'live'",
            params![txid, d.offer_hash],
        )
        .sql()?;
        tx.execute(
            "UPDATE gtl_transactions SET deal_hash = ?2 WHERE transaction_id = ?1",
            params![txid, d.deal_hash],
        )
        .sql()?;
        cas(&tx, txid, "OFFERED", "DEAL_LOCKED", m.now)?;
        let (seq, _) = append_event(
            &tx,
            txid,
            "DEAL_CONFIRM",
            Some("OFFERED"),
            "DEAL_LOCKED",
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        Ok(ok_reply(
            "DEAL_CONFIRM",
            txid,
            "DEAL_LOCKED",
            obj! { "deal_hash" => d.deal_hash },
            seq,
        ))
    }

    fn fund(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &[
                "type",
                "gtl_version",
                "transaction_id",
                "funding",
                "signature",
            ],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let funding = object(m.msg, "funding", "funding")?;
        only(funding, &["deal_hash", "amount", "asset"], "funding")?;
        let deal_hash = string(funding, "deal_hash", "funding.deal_hash")?;
        let amount = int(funding, "amount", "funding.amount")?;
        let asset = string(funding, "asset", "funding.asset")?;
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let t = load(&tx, txid)?;
        if m.who.principal_id != t.buyer {
            return Err(forbidden("not_the_buyer", "only the buyer funds the deal"));
        }
        if t.state != "DEAL_LOCKED" {
            return Err(illegal("FUND", &t.state));
        }
        let d = load_deal(&tx, txid)?
            .ok_or_else(|| MarketError::Store("locked transaction without a deal".into()))?;
        if Some(deal_hash) != t.deal_hash.as_deref() {
            return Err(conflict(
                "stale_or_foreign_deal",
                "funding.deal_hash is not this transaction's DealHash",
            ));
        }
        let mut bad = Vec::new();
        if amount != d.amount {
            bad.push(fe(
                "funding.amount",
                format!("must be the deal's amount, {}", d.amount),
            ));
        }
        if asset != t.asset {
            bad.push(fe("funding.asset", format!("must be {}", t.asset)));
        }
        if !bad.is_empty() {
            return Err(MarketError::Invalid(bad));
        }
        let authority = t.job.get("authority").and_then(Value::as_object);
        let auth_ok = authority.is_some_and(|a| {
            a.get("expires_at")
                .and_then(Value::as_str)
                .and_then(parse_rfc3339_utc)
                .unwrap_or(0)
                > m.now
                && a.get("permissions")
                    .and_then(Value::as_array)
                    .is_some_and(|p| p.iter().any(|x| x.as_str() == Some("fund")))
                && a.get("spend_limit")
                    .and_then(|s| s.get("amount"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    >= amount
        });
        if !auth_ok {
            return Err(forbidden(
                "authority_unverifiable",
                "the job's authority does not allow this funding now",
            ));
        }
        let balance: i64 = tx
            .query_row(
                "SELECT balance FROM gtl_accounts WHERE account = ?1",
                params![t.buyer],
                |r| r.get(0),
            )
            .sql()?;
        if balance < amount {
            return Err(conflict(
                "insufficient_funds",
                format!("balance {balance} GTU, the deal needs {amount}"),
            ));
        }
        let commitment_id = format!("fc_{}", &crate::canonical::sha256_hex(&d.deal_hash)[..32]);
        tx.execute(
            "INSERT INTO gtl_commitments (commitment_id, transaction_id, deal_hash, payer, payee, amount, asset, status, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'reserved', ?8)",
            params![commitment_id, txid, d.deal_hash, t.buyer, d.provider, amount, asset, m.now],
        )
        .sql()?;
        cas(&tx, txid, "DEAL_LOCKED", "FUNDED", m.now)?;
        let (seq, _) = append_event(
            &tx,
            txid,
            "FUND",
            Some("DEAL_LOCKED"),
            "FUNDED",
            Some(m.hash),
            Some(m.sig),
            m.unsigned,
            m.now,
        )?;
        tx.commit().sql()?;
        let mut r = ok_reply(
            "FUND",
            txid,
            "FUNDED",
            obj! { "deal_hash" => d.deal_hash },
            seq,
        );
        if let Some(o) = r.as_object_mut() {
            o.insert("funding_commitment_id", Value::from(commitment_id));
            o.insert("balance", Value::from(balance - amount));
        }
        Ok(r)
    }

    fn deliver(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only(
            m.msg,
            &[
                "type",
                "gtl_version",
                "transaction_id",
                "delivery",
                "signature",
            ],
            "",
        )?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let delivery = object(m.msg, "delivery", "delivery")?;
        only(delivery, &["deal_hash", "artifact", "evidence"], "delivery")?;
        let deal_hash = string(delivery, "deal_hash", "delivery.deal_hash")?;
        let delivery_v = Value::Object(delivery.clone());
        let delivery_hash = hash_of(&delivery_v)?;
        let (state, hashes, seq, result, reasons) = {
            let mut db = self.writer();
            let tx = db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .sql()?;
            let t = load(&tx, txid)?;
            if t.state != "FUNDED" {
                return Err(illegal("DELIVER", &t.state));
            }
            let d = load_deal(&tx, txid)?
                .ok_or_else(|| MarketError::Store("funded transaction without a deal".into()))?;
            if m.who.principal_id != d.provider {
                return Err(forbidden(
                    "not_the_provider",
                    "only the deal's provider delivers",
                ));
            }
            if m.now > t.deadline_ms {
                return Err(conflict("deadline_passed", "the job's deadline has passed"));
            }
            if Some(deal_hash) != t.deal_hash.as_deref() {
                return Err(conflict(
                    "stale_or_foreign_deal",
                    "delivery.deal_hash is not this transaction's current DealHash",
                ));
            }
            tx.execute(
                "INSERT INTO gtl_deliveries (transaction_id, delivery_hash, deal_hash, delivery, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![txid, delivery_hash, d.deal_hash, text(&delivery_v), m.now],
            )
            .sql()?;
            cas(&tx, txid, "FUNDED", "DELIVERED", m.now)?;
            append_event(
                &tx,
                txid,
                "DELIVER",
                Some("FUNDED"),
                "DELIVERED",
                Some(m.hash),
                Some(m.sig),
                m.unsigned,
                m.now,
            )?;
            // The verifier reads only frozen things: the stored job (whose
            // policy hashed to PolicyHash at the gate), the stored delivery
            // and the locked DealHash.
            let verdict = policy::verify(&t.job, delivery, &d.deal_hash);
            let result = if verdict.pass { "PASS" } else { "FAIL" };
            let verification = Value::Object(obj! {
                "deal_hash" => d.deal_hash.as_str(), "delivery_hash" => delivery_hash.as_str(),
                "policy_hash" => t.policy_hash.as_str(), "verifier" => policy::VERIFIER, "result" => result,
                "computed_digest" => verdict.computed_digest.as_str(),
                "reasons" => Value::Array(verdict.reasons.iter().map(|r| Value::from(r.as_str())).collect()),
            });
            let vh = hash_of(&verification)?;
            tx.execute(
                "INSERT INTO gtl_verifications (transaction_id, verification_hash, result, verification, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![txid, vh, result, text(&verification), m.now],
            )
            .sql()?;
            let next = if verdict.pass { "VERIFIED" } else { "REJECTED" };
            cas(&tx, txid, "DELIVERED", next, m.now)?;
            let (mut seq, _) = append_event(
                &tx,
                txid,
                "VERIFICATION",
                Some("DELIVERED"),
                next,
                None,
                None,
                &verification,
                m.now,
            )?;
            let mut next = next;
            if self.cfg.settle_inline {
                // Settlement or refund commits with the verification: one
                // SQLite transaction, so no crash can leave it half done.
                match finish_tx(&tx, txid, m.now)? {
                    (Finish::Settled, s) => (next, seq) = ("SETTLED", s),
                    (Finish::Refunded, s) => (next, seq) = ("REFUNDED", s),
                    _ => {}
                }
            }
            tx.commit().sql()?;
            (
                next.to_owned(),
                obj! { "deal_hash" => d.deal_hash, "delivery_hash" => delivery_hash.as_str(), "verification_hash" => vh },
                seq,
                result,
                verdict.reasons,
            )
        };
        let mut r = ok_reply("DELIVER", txid, &state, hashes, seq);
        if let Some(o) = r.as_object_mut() {
            o.insert("result", Value::from(result));
            o.insert(
                "reasons",
                Value::Array(reasons.into_iter().map(Value::from).collect()),
            );
        }
        Ok(r)
    }

    /// Runs the server event that ends a VERIFIED (SETTLEMENT) or REJECTED
    /// (REFUND) transaction: consume the funding commitment and set the
    /// terminal state, both compare-and-swap, in one SQLite transaction.
    /// Safe to race: exactly one caller gets Settled or Refunded.
    pub fn finish(&self, txid: &str) -> Result<Finish, MarketError> {
        self.finish_at(txid, self.now_ms())
    }

    fn finish_at(&self, txid: &str, now: i64) -> Result<Finish, MarketError> {
        let mut db = self.writer();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let (f, _) = finish_tx(&tx, txid, now)?;
        tx.commit().sql()?;
        Ok(f)
    }

    /// Applies deadlines at the market's clock: a transaction never funded
    /// becomes CLOSED (no value moved); a FUNDED one with no delivery goes
    /// REJECTED (reason deadline) and then REFUNDED. With inline settlement
    /// it also finishes VERIFIED and REJECTED transactions a crash left
    /// between verification and settlement. Returns how many moved.
    pub fn sweep(&self) -> Result<usize, MarketError> {
        self.sweep_at(self.now_ms())
    }

    fn sweep_at(&self, now: i64) -> Result<usize, MarketError> {
        let due: Vec<(String, String, i64)> = {
            let db = self.db();
            let mut st = db
                .prepare_cached(
                    "SELECT transaction_id, state, deadline_ms FROM gtl_transactions WHERE terminal_state IS NULL
                     AND ((deadline_ms < ?1 AND state IN ('JOB_OPEN','OFFERED','DEAL_LOCKED','FUNDED'))
                          OR (state IN ('VERIFIED','REJECTED') AND ?2))
                     LIMIT 256",
                )
                .sql()?;
            let rows = st
                .query_map(params![now, self.cfg.settle_inline], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .sql()?;
            rows.collect::<Result<_, _>>().sql()?
        };
        let mut moved = 0;
        for (txid, state, deadline) in due {
            if matches!(state.as_str(), "VERIFIED" | "REJECTED") {
                if matches!(
                    self.finish_at(&txid, now)?,
                    Finish::Settled | Finish::Refunded
                ) {
                    moved += 1;
                }
                continue;
            }
            let to = if state == "FUNDED" {
                "REJECTED"
            } else {
                "CLOSED"
            };
            {
                let mut db = self.writer();
                let tx = db
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .sql()?;
                if load(&tx, &txid)?.state != state {
                    continue;
                }
                cas(&tx, &txid, &state, to, now)?;
                let body = Value::Object(obj! {
                    "reason" => "deadline", "deadline" => format_rfc3339_utc(deadline), "at" => format_rfc3339_utc(now),
                });
                append_event(
                    &tx,
                    &txid,
                    "EXPIRY",
                    Some(&state),
                    to,
                    None,
                    None,
                    &body,
                    now,
                )?;
                tx.commit().sql()?;
            }
            if to == "REJECTED" {
                self.finish_at(&txid, now)?;
            }
            moved += 1;
        }
        Ok(moved)
    }

    /// The market's jobs: open ones (not terminal), or all with `all`,
    /// newest first, each with its full JobSpec and hashes.
    pub fn listing(&self, all: bool) -> Result<Vec<Value>, MarketError> {
        self.sweep()?;
        let db = self.db();
        let mut st = db
            .prepare_cached(
                "SELECT t.transaction_id, t.state, t.job, t.job_hash, t.policy_hash, t.deadline_ms, t.budget, t.asset,
                        t.buyer_principal, t.deal_hash,
                        (SELECT COUNT(*) FROM gtl_offers o WHERE o.transaction_id = t.transaction_id AND o.status = 'live')
                 FROM gtl_transactions t WHERE (?1 OR t.terminal_state IS NULL)
                 ORDER BY t.created_at DESC, t.transaction_id LIMIT 500",
            )
            .sql()?;
        let rows = st
            .query_map(params![all], |r| {
                let opt = |s: Option<String>| s.map(Value::from).unwrap_or(Value::Null);
                Ok(Value::Object(obj! {
                    "transaction_id" => r.get::<_, String>(0)?, "state" => r.get::<_, String>(1)?,
                    "job" => Value::Object(parse_map(&r.get::<_, String>(2)?)),
                    "job_hash" => r.get::<_, String>(3)?, "verification_policy_hash" => r.get::<_, String>(4)?,
                    "deadline" => format_rfc3339_utc(r.get(5)?),
                    "budget" => Value::Object(obj! { "amount" => r.get::<_, i64>(6)?, "asset" => r.get::<_, String>(7)? }),
                    "buyer_principal" => r.get::<_, String>(8)?, "deal_hash" => opt(r.get(9)?),
                    "live_offers" => r.get::<_, i64>(10)?,
                }))
            })
            .sql()?;
        rows.collect::<Result<_, _>>().sql()
    }

    /// One transaction with its full history: job, offers, deal, funding,
    /// delivery, verification and every event of its chain.
    pub fn transaction(&self, txid: &str) -> Result<Value, MarketError> {
        self.sweep()?;
        let db = self.db();
        let t = load(&db, txid)?;
        let mut offers = Vec::new();
        {
            let mut st = db
                .prepare_cached("SELECT offer_hash, offer, status, provider_principal, price FROM gtl_offers WHERE transaction_id = ?1 ORDER BY at, offer_hash")
                .sql()?;
            let rows = st
                .query_map(params![txid], |r| {
                    Ok(Value::Object(obj! {
                        "offer_hash" => r.get::<_, String>(0)?, "offer" => Value::Object(parse_map(&r.get::<_, String>(1)?)),
                        "status" => r.get::<_, String>(2)?, "provider_principal" => r.get::<_, String>(3)?,
                        "price" => r.get::<_, i64>(4)?,
                    }))
                })
                .sql()?;
            for row in rows {
                offers.push(row.sql()?);
            }
        }
        let deal = db
            .query_row(
                "SELECT deal_hash, deal, confirmed, buyer_principal, provider_principal, amount, offer_hash FROM gtl_deals WHERE transaction_id = ?1",
                params![txid],
                |r| {
                    Ok(Value::Object(obj! {
                        "deal_hash" => r.get::<_, String>(0)?, "deal" => Value::Object(parse_map(&r.get::<_, String>(1)?)),
                        "confirmed" => r.get::<_, i64>(2)? == 1, "buyer_principal" => r.get::<_, String>(3)?,
                        "provider_principal" => r.get::<_, String>(4)?, "amount" => r.get::<_, i64>(5)?,
                        "offer_hash" => r.get::<_, String>(6)?,
                    }))
                },
            )
            .optional()
            .sql()?
            .unwrap_or(Value::Null);
        let funding = db
            .query_row(
                "SELECT commitment_id, deal_hash, amount, asset, status, payer, payee FROM gtl_commitments WHERE transaction_id = ?1",
                params![txid],
                |r| {
                    Ok(Value::Object(obj! {
                        "funding_commitment_id" => r.get::<_, String>(0)?, "deal_hash" => r.get::<_, String>(1)?,
                        "amount" => r.get::<_, i64>(2)?, "asset" => r.get::<_, String>(3)?, "status" => r.get::<_, String>(4)?,
                        "payer" => r.get::<_, String>(5)?, "payee" => r.get::<_, String>(6)?,
                    }))
                },
            )
            .optional()
            .sql()?
            .unwrap_or(Value::Null);
        let one = |sql: &str| -> Result<Value, MarketError> {
            db.query_row(sql, params![txid], |r| {
                Ok(Value::Object(obj! {
                    "hash" => r.get::<_, String>(0)?, "object" => Value::Object(parse_map(&r.get::<_, String>(1)?)),
                }))
            })
            .optional()
            .sql()
            .map(|v| v.unwrap_or(Value::Null))
        };
        let delivery =
            one("SELECT delivery_hash, delivery FROM gtl_deliveries WHERE transaction_id = ?1")?;
        let verification = one(
            "SELECT verification_hash, verification FROM gtl_verifications WHERE transaction_id = ?1",
        )?;
        let mut events = Vec::new();
        {
            let mut st = db
                .prepare_cached(
                    "SELECT seq, kind, state_before, state_after, message_hash, signature, body, at, prev_event_hash, event_hash
                     FROM gtl_events WHERE transaction_id = ?1 ORDER BY seq",
                )
                .sql()?;
            let rows = st
                .query_map(params![txid], |r| {
                    let opt = |s: Option<String>| s.map(Value::from).unwrap_or(Value::Null);
                    Ok(Value::Object(obj! {
                        "seq" => r.get::<_, i64>(0)?, "kind" => r.get::<_, String>(1)?,
                        "state_before" => opt(r.get(2)?), "state_after" => r.get::<_, String>(3)?,
                        "message_hash" => opt(r.get(4)?), "signature" => opt(r.get(5)?),
                        "body" => Value::Object(parse_map(&r.get::<_, String>(6)?)), "at" => r.get::<_, i64>(7)?,
                        "prev_event_hash" => r.get::<_, String>(8)?, "event_hash" => r.get::<_, String>(9)?,
                    }))
                })
                .sql()?;
            for row in rows {
                events.push(row.sql()?);
            }
        }
        Ok(Value::Object(obj! {
            "transaction_id" => t.id.as_str(), "state" => t.state.as_str(),
            "terminal" => super::is_terminal(&t.state), "buyer_principal" => t.buyer.as_str(),
            "job" => Value::Object(t.job.clone()), "job_hash" => t.job_hash.as_str(),
            "verification_policy_hash" => t.policy_hash.as_str(), "authority_hash" => t.authority_hash.as_str(),
            "deadline" => format_rfc3339_utc(t.deadline_ms),
            "budget" => Value::Object(obj! { "amount" => t.budget, "asset" => t.asset.as_str() }),
            "deal_hash" => t.deal_hash.clone().map(Value::from).unwrap_or(Value::Null),
            "offers" => Value::Array(offers), "deal" => deal, "funding" => funding,
            "delivery" => delivery, "verification" => verification, "events" => Value::Array(events),
        }))
    }

    /// A principal's GTU balance (`None` for an unknown principal).
    pub fn balance(&self, principal_id: &str) -> Result<Option<i64>, MarketError> {
        if principal_id == "mint" || principal_id == "escrow" {
            return Ok(None);
        }
        self.db()
            .query_row(
                "SELECT balance FROM gtl_accounts WHERE account = ?1",
                params![principal_id],
                |r| r.get(0),
            )
            .optional()
            .sql()
    }

    /// Checks a transaction's stored event chain.
    pub fn verify_chain(&self, txid: &str) -> Result<ChainReport, MarketError> {
        Ok(verify_chain_value(&self.transaction(txid)?))
    }

    /// The ledger totals every invariant test checks.
    pub fn audit(&self) -> Result<Audit, MarketError> {
        let db = self.db();
        let q =
            |sql: &str| -> Result<i64, MarketError> { db.query_row(sql, [], |r| r.get(0)).sql() };
        Ok(Audit {
            sum_of_balances: q("SELECT COALESCE(SUM(balance), 0) FROM gtl_accounts")?,
            escrow: q("SELECT balance FROM gtl_accounts WHERE account = 'escrow'")?,
            reserved: q("SELECT COALESCE(SUM(amount), 0) FROM gtl_commitments WHERE status = 'reserved'")?,
            ledger_mismatches: q(
                "SELECT COUNT(*) FROM gtl_accounts a WHERE a.balance <>
                   COALESCE((SELECT SUM(amount) FROM gtl_ledger WHERE to_account = a.account), 0)
                 - COALESCE((SELECT SUM(amount) FROM gtl_ledger WHERE from_account = a.account), 0)",
            )?,
            double_outcomes: q(
                "SELECT COUNT(*) FROM (SELECT transaction_id FROM gtl_events WHERE kind IN ('SETTLEMENT','REFUND')
                 GROUP BY transaction_id HAVING COUNT(*) > 1)",
            )?,
        })
    }
}

/// Settles a VERIFIED or refunds a REJECTED transaction inside `tx`;
/// returns what happened and the new event's seq.
fn finish_tx(tx: &Connection, txid: &str, now: i64) -> Result<(Finish, i64), MarketError> {
    let t = load(tx, txid)?;

    let (status, to, kind) = match t.state.as_str() {
        "VERIFIED" => ("settled", "SETTLED", "SETTLEMENT"),
        "REJECTED" => ("refunded", "REFUNDED", "REFUND"),
        s if super::is_terminal(s) => return Ok((Finish::AlreadyTerminal(s.to_owned()), 0)),
        s => return Ok((Finish::NotReady(s.to_owned()), 0)),
    };
    let (cid, amount, asset, payer, payee): (String, i64, String, String, String) = tx
        .query_row(
            "SELECT commitment_id, amount, asset, payer, payee FROM gtl_commitments WHERE transaction_id = ?1",
            params![txid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .sql()?;
    let n = tx
        .execute(
            "UPDATE gtl_commitments SET status = ?2, consumed_at = ?3 WHERE transaction_id = ?1 AND status = 'reserved'",
            params![txid, status, now],
        )
        .sql()?;
    if n != 1 {
        return Ok((Finish::AlreadyTerminal(t.state), 0));
    }
    let verification: Option<String> = tx
        .query_row(
            "SELECT verification_hash FROM gtl_verifications WHERE transaction_id = ?1",
            params![txid],
            |r| r.get(0),
        )
        .optional()
        .sql()?;
    let mut body = obj! {
        "funding_commitment_id" => cid.as_str(), "amount" => amount, "asset" => asset.as_str(),
        "payee" => if to == "SETTLED" { payee.as_str() } else { payer.as_str() },
    };
    match verification {
        Some(vh) => body.insert("verification_hash", Value::from(vh)),
        None => {
            let expiry: String = tx
                .query_row(
                    "SELECT event_hash FROM gtl_events WHERE transaction_id = ?1 AND kind = 'EXPIRY'",
                    params![txid],
                    |r| r.get(0),
                )
                .sql()?;
            body.insert("expiry_event_hash", Value::from(expiry))
        }
    };
    cas(tx, txid, &t.state, to, now)?;
    let (seq, _) = append_event(
        tx,
        txid,
        kind,
        Some(&t.state),
        to,
        None,
        None,
        &Value::Object(body),
        now,
    )?;
    Ok((
        if to == "SETTLED" {
            Finish::Settled
        } else {
            Finish::Refunded
        },
        seq,
    ))
}

/// A message being handled, with what the dispatcher already checked.
struct Msg<'a> {
    who: &'a Principal,
    msg: &'a Map,
    unsigned: &'a Value,
    hash: &'a str,
    sig: &'a str,
    now: i64,
}

fn fe(path: &str, reason: impl Into<String>) -> FieldError {
    FieldError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn illegal(kind: &str, state: &str) -> MarketError {
    conflict(
        "illegal_transition",
        format!("{kind} is not allowed while the transaction is {state}"),
    )
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
