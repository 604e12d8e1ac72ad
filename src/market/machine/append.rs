//! Appending one event to a transaction's chain: the state moved first
//! when the event changes it (compare-and-swap), then the event hashed onto
//! the chain. Below both the write sequence (`transition`) and the
//! settlement and expiry (`settle`), which append events of their own.

use super::super::chain::preimage;
use super::super::db::{Db, args};
use super::super::store::GENESIS;
use super::super::view::EventView;
use super::super::vocab::{Kind, State};
use super::super::{MarketError, conflict};
use super::rows::{hash_of, text};
use crate::json::Value;

/// One event to append.
pub(super) struct Entry<'a> {
    pub kind: Kind,
    pub before: Option<State>,
    pub after: State,
    /// The message's hash and signature (none for server events).
    pub signed: Option<(&'a str, &'a str)>,
    /// The message without its signature, or the server event's body (an
    /// object either way).
    pub body: &'a Value,
}

/// Moves `txid` from `from` to `to` only if it is still in `from`.
fn cas(db: &mut dyn Db, txid: &str, from: State, to: State, now: i64) -> Result<(), MarketError> {
    let n = db.execute(
        "UPDATE gtl_transactions SET state = $3, terminal_state = $5, updated_at = $4
         WHERE transaction_id = $1 AND state = $2 AND terminal_state IS NULL",
        args![txid, from, to, now, to.is_terminal().then_some(to)],
    )?;
    if n == 1 {
        Ok(())
    } else {
        Err(conflict(
            "concurrent_change",
            format!("{txid} left {from} before this message committed"),
        ))
    }
}

/// Moves the state when the event changes it (compare-and-swap), then
/// appends the event to `txid`'s chain; returns its seq.
pub(super) fn record(
    db: &mut dyn Db,
    txid: &str,
    e: Entry<'_>,
    now: i64,
) -> Result<i64, MarketError> {
    if let Some(before) = e.before
        && before != e.after
    {
        cas(db, txid, before, e.after, now)?;
    }
    let r = db.query_one(
        "SELECT COALESCE(MAX(seq), 0) + 1,
                COALESCE((SELECT event_hash FROM gtl_events WHERE transaction_id = $1 ORDER BY seq DESC LIMIT 1), $2)
         FROM gtl_events WHERE transaction_id = $1",
        args![txid, GENESIS],
    )?;
    let (seq, prev) = (r.int(0)?, r.text(1)?);
    let mut ev = EventView {
        seq,
        kind: e.kind,
        state_before: e.before,
        state_after: e.after,
        message_hash: e.signed.map(|(h, _)| h.to_owned()),
        signature: e.signed.map(|(_, s)| s.to_owned()),
        body: e.body.as_object().cloned().unwrap_or_default(),
        at: now,
        prev_event_hash: prev,
        event_hash: String::new(),
    };
    ev.event_hash = hash_of(&preimage(txid, &ev))?;
    let body = text(&Value::Object(ev.body));
    db.execute(
        "INSERT INTO gtl_events (transaction_id, seq, kind, state_before, state_after, message_hash, signature,
                                 body, at, prev_event_hash, event_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        args![
            txid, seq, ev.kind, ev.state_before, ev.state_after, &ev.message_hash, &ev.signature,
            &body, now, &ev.prev_event_hash, &ev.event_hash
        ],
    )?;
    Ok(seq)
}
