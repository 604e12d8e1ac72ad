//! The stored rows a handler reads, and the readers of a message's fields.

use super::super::canonical;
use super::super::db::{Db, Row, args};
use super::super::vocab::{Kind, State};
use super::super::{FieldError, MarketError, conflict, invalid};
use crate::json::{Map, Value};
use crate::utc::parse_rfc3339_utc;

/// One stored transaction.
pub(super) struct TxRow {
    pub id: String,
    pub state: State,
    pub buyer: String,
    pub job: Map,
    pub job_hash: String,
    pub policy_hash: String,
    pub authority_hash: String,
    pub deadline_ms: i64,
    pub budget: i64,
    pub asset: String,
    pub deal_hash: Option<String>,
}

/// A transaction's deal (locked, perhaps confirmed).
pub(super) struct DealRow {
    pub deal_hash: String,
    pub offer_hash: String,
    pub provider: String,
    pub amount: i64,
    pub confirmed: bool,
}

/// A stored object (stored canonical, so always an object).
pub(super) fn parse_map(text: &str) -> Map {
    canonical::parse_strict(text.as_bytes())
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// The canonical text an object is stored as.
pub(super) fn text(v: &Value) -> String {
    crate::json::canonical::to_string(v)
}

pub(super) fn hash_of(v: &Value) -> Result<String, MarketError> {
    canonical::hash(v).map_err(|e| MarketError::Malformed(e.to_string()))
}

/// Refuses members outside `allowed` (adapters may not add semantics).
pub(super) fn only(m: &Map, allowed: &[&str], path: &str) -> Result<(), MarketError> {
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

/// Refuses top-level members other than the envelope's and `body`.
pub(super) fn only_envelope(m: &Map, body: &str) -> Result<(), MarketError> {
    only(
        m,
        &["type", "gtl_version", "transaction_id", body, "signature"],
        "",
    )
}

pub(super) fn string<'a>(m: &'a Map, key: &str, path: &str) -> Result<&'a str, MarketError> {
    m.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(path, "required, a non-empty string"))
}

pub(super) fn object<'a>(m: &'a Map, key: &str, path: &str) -> Result<&'a Map, MarketError> {
    m.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(path, "required, an object"))
}

pub(super) fn int(m: &Map, key: &str, path: &str) -> Result<i64, MarketError> {
    m.get(key)
        .filter(|v| v.is_integer())
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(path, "required, an integer"))
}

pub(super) fn time_field(m: &Map, key: &str, path: &str) -> Result<i64, MarketError> {
    parse_rfc3339_utc(string(m, key, path)?).ok_or_else(|| {
        invalid(
            path,
            "must be an RFC 3339 UTC time like 2030-01-01T00:00:00.000Z",
        )
    })
}

pub(super) fn fe(path: &str, reason: impl Into<String>) -> FieldError {
    FieldError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

pub(super) fn illegal(kind: Kind, state: State) -> MarketError {
    conflict(
        "illegal_transition",
        format!("{kind} is not allowed while the transaction is {state}"),
    )
}

const LOAD: &str =
    "SELECT transaction_id, state, buyer_principal, job, job_hash, policy_hash, authority_hash,
        deadline_ms, budget, asset, deal_hash FROM gtl_transactions WHERE transaction_id = $1";

/// The same, locking the row for the rest of a PostgreSQL write (every
/// writer of one transaction takes turns; SQLite's write lock already
/// makes them).
const LOAD_LOCKED: &str =
    "SELECT transaction_id, state, buyer_principal, job, job_hash, policy_hash, authority_hash,
        deadline_ms, budget, asset, deal_hash FROM gtl_transactions WHERE transaction_id = $1
        FOR NO KEY UPDATE";

fn tx_row(r: &Row) -> Result<TxRow, MarketError> {
    Ok(TxRow {
        id: r.text(0)?,
        state: r.parse(1)?,
        buyer: r.text(2)?,
        job: parse_map(&r.text(3)?),
        job_hash: r.text(4)?,
        policy_hash: r.text(5)?,
        authority_hash: r.text(6)?,
        deadline_ms: r.int(7)?,
        budget: r.int(8)?,
        asset: r.text(9)?,
        deal_hash: r.opt_text(10)?,
    })
}

/// Loads a transaction (locked in a PostgreSQL write).
pub(super) fn load(db: &mut dyn Db, id: &str) -> Result<TxRow, MarketError> {
    let sql = if db.locking() { LOAD_LOCKED } else { LOAD };
    match db.query_opt(sql, args![id])? {
        Some(r) => tx_row(&r),
        None => Err(MarketError::NotFound(format!("no transaction {id}"))),
    }
}

pub(super) fn load_deal(db: &mut dyn Db, txid: &str) -> Result<Option<DealRow>, MarketError> {
    let r = db.query_opt(
        "SELECT deal_hash, offer_hash, provider_principal, amount, confirmed FROM gtl_deals WHERE transaction_id = $1",
        args![txid],
    )?;
    let Some(r) = r else { return Ok(None) };
    Ok(Some(DealRow {
        deal_hash: r.text(0)?,
        offer_hash: r.text(1)?,
        provider: r.text(2)?,
        amount: r.int(3)?,
        confirmed: r.int(4)? == 1,
    }))
}
