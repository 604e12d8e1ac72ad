//! The per-transaction event chain: what an event's hash covers, and the
//! check anyone can run on a transaction view (every hash recomputed, every
//! link and sequence number followed). The market appends with the same
//! preimage; `palaver market verify-chain` checks on the client side.

use super::canonical;
use super::store::GENESIS;
use super::view::{EventView, TransactionView};
use crate::json::Value;
use crate::obj;

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

/// The object an event's hash covers: every member but `event_hash`,
/// plus the transaction id.
pub fn preimage(txid: &str, e: &EventView) -> Value {
    let opt = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::from);
    Value::Object(obj! {
        "transaction_id" => txid, "seq" => e.seq, "kind" => e.kind.as_str(),
        "state_before" => e.state_before.map_or(Value::Null, |s| Value::from(s.as_str())),
        "state_after" => e.state_after.as_str(),
        "message_hash" => opt(&e.message_hash), "signature" => opt(&e.signature),
        "body" => Value::Object(e.body.clone()),
        "at" => e.at, "prev_event_hash" => e.prev_event_hash.as_str(),
    })
}

/// Checks a transaction view's event chain: every event hash recomputed,
/// every link and sequence number followed, and the last event ending in
/// the transaction's state.
pub fn verify_chain_value(view: &TransactionView) -> ChainReport {
    let txid = view.transaction_id.clone();
    let mut problems = Vec::new();
    let mut prev = GENESIS.to_owned();
    for (i, e) in view.events.iter().enumerate() {
        let n = i + 1;
        if e.seq != n as i64 {
            problems.push(format!("event {n}: seq is not {n}"));
        }
        if e.prev_event_hash != prev {
            problems.push(format!(
                "event {n}: prev_event_hash does not link to the event before"
            ));
        }
        let claimed = &e.event_hash;
        match canonical::hash(&preimage(&txid, e)) {
            Ok(h) if &h == claimed => {}
            Ok(h) => problems.push(format!(
                "event {n}: event_hash {claimed} does not match its content ({h})"
            )),
            Err(err) => problems.push(format!("event {n}: {err}")),
        }
        prev = claimed.clone();
    }
    match view.events.last() {
        None => problems.push("no events".into()),
        Some(last) if last.state_after != view.state => problems.push(format!(
            "the last event ends in {} but the transaction is {}",
            last.state_after, view.state
        )),
        Some(_) => {}
    }
    ChainReport {
        transaction_id: txid,
        events: view.events.len(),
        head: prev,
        problems,
    }
}
