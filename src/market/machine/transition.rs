//! The sequence every write shares, written once: open the SQLite write,
//! load the transaction, check the sender and the state, let the handler
//! guard and write what is its own, move the state (compare-and-swap),
//! append the event, commit, answer. A handler only states what differs.

use super::super::db::Db;
use super::super::db::sqlite::{Sql, SqliteDb};
use super::super::vocab::{Kind, State};
use super::super::{MarketError, Principal, forbidden};
use super::Market;
use super::Store;
use super::append::{Entry, record};
use super::rows::{TxRow, illegal, load};
use super::settle::{Finish, finish_tx};
use crate::json::{Map, Value};
use crate::obj;
use rusqlite::TransactionBehavior;

/// A message being handled, with what the dispatcher already checked.
pub(super) struct Msg<'a> {
    pub who: &'a Principal,
    pub msg: &'a Map,
    /// The message without its signature (what its hash covers).
    pub unsigned: &'a Value,
    pub hash: &'a str,
    pub sig: &'a str,
    pub now: i64,
}

/// Who may send a message; checked before the state.
pub(super) enum Sender {
    /// Whoever the handler's own guards allow.
    Anyone,
    /// Only the transaction's buyer (`not_the_buyer` with this text).
    Buyer(&'static str),
}

/// What a handler decided, once its guards passed and its rows are written.
pub(super) struct Next {
    /// The state the message moves the transaction to.
    pub to: State,
    /// The hashes the answer reports.
    pub hashes: Map,
    /// Members the answer carries after the common ones.
    pub extra: Map,
    /// A server event the message causes at once: kind, state, body.
    pub then: Option<(Kind, State, Value)>,
    /// Settle or refund in the same SQLite transaction afterwards.
    pub finish: bool,
}

impl Next {
    pub fn to(to: State, hashes: Map) -> Next {
        Next {
            to,
            hashes,
            extra: Map::new(),
            then: None,
            finish: false,
        }
    }
}

/// The answer to an accepted message.
pub(super) fn reply(
    kind: Kind,
    txid: &str,
    state: State,
    hashes: Map,
    seq: i64,
    extra: Map,
) -> Value {
    let mut r = obj! {
        "ok" => true, "type" => kind.as_str(), "transaction_id" => txid, "state" => state.as_str(),
        "hashes" => Value::Object(hashes), "event_seq" => seq,
    };
    for (k, v) in extra.into_entries() {
        r.insert(k, v);
    }
    Value::Object(r)
}

impl Market {
    /// Runs `f` in one write, kept when it returns `Ok` and rolled back
    /// when it refuses: in SQLite a `BEGIN IMMEDIATE` savepoint of a group
    /// commit; in PostgreSQL a transaction of its own, run again when a
    /// concurrent one got in the way (so `f` may run more than once, and
    /// must not keep anything from a run that did not commit).
    pub(super) fn write<R>(
        &self,
        mut f: impl FnMut(&mut dyn Db) -> Result<R, MarketError>,
    ) -> Result<R, MarketError> {
        match &self.store {
            Store::Sqlite(g) => {
                let mut w = g.writer();
                let tx = w
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .sql()?;
                let r = f(&mut SqliteDb(&tx))?;
                tx.commit()?;
                Ok(r)
            }
            Store::Postgres(p) => p.write(f),
        }
    }

    /// Runs `f` on committed state: SQLite's reader, or a PostgreSQL
    /// connection (inside one read-only snapshot when `snapshot`).
    pub(super) fn read<R>(
        &self,
        snapshot: bool,
        f: impl FnOnce(&mut dyn Db) -> Result<R, MarketError>,
    ) -> Result<R, MarketError> {
        match &self.store {
            Store::Sqlite(g) => f(&mut SqliteDb(&g.reader())),
            Store::Postgres(p) => p.read(snapshot, f),
        }
    }

    /// Handles a message on an existing transaction: `step` runs with the
    /// transaction loaded, once `sender` and the state (one of
    /// `kind.accepted_in()`) are checked, and does the handler's own
    /// guards and writes.
    pub(super) fn transition(
        &self,
        m: &Msg<'_>,
        txid: &str,
        kind: Kind,
        sender: Sender,
        mut step: impl FnMut(&mut dyn Db, &TxRow) -> Result<Next, MarketError>,
    ) -> Result<Value, MarketError> {
        let (state, next, seq) = self.write(|tx| {
            let t = load(tx, txid)?;
            if let Sender::Buyer(why) = &sender
                && m.who.principal_id != t.buyer
            {
                return Err(forbidden("not_the_buyer", *why));
            }
            if !kind.accepted_in().contains(&t.state) {
                return Err(illegal(kind, t.state));
            }
            let mut next = step(&mut *tx, &t)?;
            let entry = Entry {
                kind,
                before: Some(t.state),
                after: next.to,
                signed: Some((m.hash, m.sig)),
                body: m.unsigned,
            };
            let mut seq = record(tx, txid, entry, m.now)?;
            let mut state = next.to;
            if let Some((kind, to, body)) = next.then.take() {
                let entry = Entry {
                    kind,
                    before: Some(state),
                    after: to,
                    signed: None,
                    body: &body,
                };
                seq = record(tx, txid, entry, m.now)?;
                state = to;
            }
            if next.finish {
                // Settlement or refund commits with the verification: one
                // SQLite transaction, so no crash can leave it half done.
                match finish_tx(tx, txid, m.now)? {
                    (Finish::Settled, s) => (state, seq) = (State::Settled, s),
                    (Finish::Refunded, s) => (state, seq) = (State::Refunded, s),
                    _ => {}
                }
            }
            Ok((state, next, seq))
        })?;
        Ok(reply(kind, txid, state, next.hashes, seq, next.extra))
    }
}
