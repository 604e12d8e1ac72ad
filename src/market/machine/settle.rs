//! The value outcome and the clock: SETTLEMENT (a VERIFIED transaction
//! pays the provider), REFUND (a REJECTED one pays the buyer back), and the
//! deadline sweep (EXPIRY: CLOSED before funding, REJECTED after).

use super::super::MarketError;
use super::super::db::{Db, args};
use super::super::vocab::{CommitmentStatus, Kind, State};
use super::Market;
use super::append::{Entry, record};
use super::rows::load;
use crate::json::Value;
use crate::obj;
use crate::utc::format_rfc3339_utc;
use crate::web::metrics;

/// What [`Market::finish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Settled,
    Refunded,
    /// Someone else already finished it (this is how a lost race ends).
    AlreadyTerminal(State),
    /// Not VERIFIED or REJECTED yet.
    NotReady(State),
}

/// Settles a VERIFIED or refunds a REJECTED transaction inside `tx`;
/// returns what happened and the new event's seq.
pub(super) fn finish_tx(
    tx: &mut dyn Db,
    txid: &str,
    now: i64,
) -> Result<(Finish, i64), MarketError> {
    let t = load(tx, txid)?;
    let (status, to, kind, done) = match t.state {
        State::Verified => (
            CommitmentStatus::Settled,
            State::Settled,
            Kind::Settlement,
            Finish::Settled,
        ),
        State::Rejected => (
            CommitmentStatus::Refunded,
            State::Refunded,
            Kind::Refund,
            Finish::Refunded,
        ),
        s if s.is_terminal() => return Ok((Finish::AlreadyTerminal(s), 0)),
        s => return Ok((Finish::NotReady(s), 0)),
    };
    let r = tx.query_one(
        "SELECT commitment_id, amount, asset, payer, payee FROM gtl_commitments WHERE transaction_id = $1",
        args![txid],
    )?;
    let (cid, amount, asset, payer, payee) =
        (r.text(0)?, r.int(1)?, r.text(2)?, r.text(3)?, r.text(4)?);
    let n = tx.execute(
        "UPDATE gtl_commitments SET status = $2, consumed_at = $3 WHERE transaction_id = $1 AND status = $4",
        args![txid, status, now, CommitmentStatus::Reserved],
    )?;
    if n != 1 {
        return Ok((Finish::AlreadyTerminal(t.state), 0));
    }
    let verification = tx
        .query_opt(
            "SELECT verification_hash FROM gtl_verifications WHERE transaction_id = $1",
            args![txid],
        )?
        .map(|r| r.text(0))
        .transpose()?;
    let mut body = obj! {
        "funding_commitment_id" => cid.as_str(), "amount" => amount, "asset" => asset.as_str(),
        "payee" => if to == State::Settled { payee.as_str() } else { payer.as_str() },
    };
    match verification {
        Some(vh) => body.insert("verification_hash", Value::from(vh)),
        None => {
            let expiry = tx
                .query_one(
                    "SELECT event_hash FROM gtl_events WHERE transaction_id = $1 AND kind = $2",
                    args![txid, Kind::Expiry],
                )?
                .text(0)?;
            body.insert("expiry_event_hash", Value::from(expiry))
        }
    };
    let entry = Entry {
        kind,
        before: Some(t.state),
        after: to,
        signed: None,
        body: &Value::Object(body),
    };
    let seq = record(tx, txid, entry, now)?;
    Ok((done, seq))
}

impl Market {
    /// Runs the server event that ends a VERIFIED (SETTLEMENT) or REJECTED
    /// (REFUND) transaction: consume the funding commitment and set the
    /// terminal state, both compare-and-swap, in one SQLite transaction.
    /// Safe to race: exactly one caller gets Settled or Refunded.
    pub fn finish(&self, txid: &str) -> Result<Finish, MarketError> {
        self.finish_at(txid, self.now_ms())
    }

    fn finish_at(&self, txid: &str, now: i64) -> Result<Finish, MarketError> {
        let f = self.write(|tx| finish_tx(tx, txid, now).map(|(f, _)| f))?;
        match f {
            Finish::Settled => {
                metrics::market_transition(Kind::Settlement.as_str(), State::Settled.as_str())
            }
            Finish::Refunded => {
                metrics::market_transition(Kind::Refund.as_str(), State::Refunded.as_str())
            }
            _ => {}
        }
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

    pub(super) fn sweep_at(&self, now: i64) -> Result<usize, MarketError> {
        let due: Vec<(String, State, i64)> = self.read(false, |db| {
            db.query(
                "SELECT transaction_id, state, deadline_ms FROM gtl_transactions WHERE terminal_state IS NULL
                 AND ((deadline_ms < $1 AND state IN ('JOB_OPEN','OFFERED','DEAL_LOCKED','FUNDED'))
                      OR (state IN ('VERIFIED','REJECTED') AND $2))
                 LIMIT 256",
                args![now, self.cfg.settle_inline],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.parse(1)?, r.int(2)?)))
            .collect()
        })?;
        let mut moved = 0;
        for (txid, state, deadline) in due {
            if matches!(state, State::Verified | State::Rejected) {
                if matches!(
                    self.finish_at(&txid, now)?,
                    Finish::Settled | Finish::Refunded
                ) {
                    moved += 1;
                }
                continue;
            }
            let to = if state == State::Funded {
                State::Rejected
            } else {
                State::Closed
            };
            let expired = self.write(|tx| {
                if load(&mut *tx, &txid)?.state != state {
                    return Ok(false);
                }
                let body = Value::Object(obj! {
                    "reason" => "deadline", "deadline" => format_rfc3339_utc(deadline),
                    "at" => format_rfc3339_utc(now),
                });
                let entry = Entry {
                    kind: Kind::Expiry,
                    before: Some(state),
                    after: to,
                    signed: None,
                    body: &body,
                };
                record(tx, &txid, entry, now)?;
                Ok(true)
            })?;
            if !expired {
                continue;
            }
            metrics::market_transition(Kind::Expiry.as_str(), to.as_str());
            if to == State::Rejected {
                self.finish_at(&txid, now)?;
            }
            moved += 1;
        }
        Ok(moved)
    }
}
