//! FUND: the buyer's funding commitment for the locked deal, reserved in
//! escrow (the store's triggers move the GTU and keep it single-use).

use super::super::db::args;
use super::super::vocab::{CommitmentStatus, Kind, State};
use super::super::{MarketError, conflict, forbidden};
use super::Market;
use super::rows::{fe, int, load_deal, object, only, only_envelope, string};
use super::transition::{Msg, Next, Sender};
use crate::json::Value;
use crate::obj;
use crate::utc::parse_rfc3339_utc;

impl Market {
    pub(super) fn fund(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "funding")?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let funding = object(m.msg, "funding", "funding")?;
        only(funding, &["deal_hash", "amount", "asset"], "funding")?;
        let deal_hash = string(funding, "deal_hash", "funding.deal_hash")?;
        let amount = int(funding, "amount", "funding.amount")?;
        let asset = string(funding, "asset", "funding.asset")?;
        let sender = Sender::Buyer("only the buyer funds the deal");
        self.transition(m, txid, Kind::Fund, sender, |tx, t| {
            let d = load_deal(tx, txid)?
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
            let balance = tx
                .query_one(
                    "SELECT balance FROM gtl_accounts WHERE account = $1",
                    args![&t.buyer],
                )?
                .int(0)?;
            if balance < amount {
                return Err(conflict(
                    "insufficient_funds",
                    format!("balance {balance} GTU, the deal needs {amount}"),
                ));
            }
            let commitment_id =
                format!("fc_{}", &crate::json::canonical::sha256_hex(&d.deal_hash)[..32]);
            tx.execute(
                "INSERT INTO gtl_commitments (commitment_id, transaction_id, deal_hash, payer, payee, amount, asset, status, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                args![&commitment_id, txid, &d.deal_hash, &t.buyer, &d.provider, amount, asset,
                      CommitmentStatus::Reserved, m.now],
            )?;
            let mut next = Next::to(State::Funded, obj! { "deal_hash" => d.deal_hash });
            next.extra = obj! {
                "funding_commitment_id" => commitment_id, "balance" => balance - amount,
            };
            Ok(next)
        })
    }
}
