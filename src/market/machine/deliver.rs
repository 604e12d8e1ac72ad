//! DELIVER: the provider's artifact for the current deal, verified at once
//! by the frozen policy (the VERIFICATION server event), and settled or
//! refunded in the same SQLite transaction when settlement is inline.

use super::super::db::args;
use super::super::vocab::{Kind, State, Verdict};
use super::super::{MarketError, conflict, forbidden, policy};
use super::Market;
use super::rows::{hash_of, load_deal, object, only, only_envelope, string, text};
use super::transition::{Msg, Next, Sender};
use crate::json::Value;
use crate::obj;

impl Market {
    pub(super) fn deliver(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "delivery")?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let delivery = object(m.msg, "delivery", "delivery")?;
        only(delivery, &["deal_hash", "artifact", "evidence"], "delivery")?;
        let deal_hash = string(delivery, "deal_hash", "delivery.deal_hash")?;
        let delivery_v = Value::Object(delivery.clone());
        let delivery_hash = hash_of(&delivery_v)?;
        self.transition(m, txid, Kind::Deliver, Sender::Anyone, |tx, t| {
            let d = load_deal(tx, txid)?
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
                "INSERT INTO gtl_deliveries (transaction_id, delivery_hash, deal_hash, delivery, at) VALUES ($1, $2, $3, $4, $5)",
                args![txid, &delivery_hash, &d.deal_hash, &text(&delivery_v), m.now],
            )?;
            // The verifier reads only frozen things: the stored job (whose
            // policy hashed to PolicyHash at the gate), the stored delivery
            // and the locked DealHash.
            let verdict = policy::verify(&t.job, delivery, &d.deal_hash);
            let result = Verdict::of(verdict.pass);
            let verification = Value::Object(obj! {
                "deal_hash" => d.deal_hash.as_str(), "delivery_hash" => delivery_hash.as_str(),
                "policy_hash" => t.policy_hash.as_str(), "verifier" => policy::VERIFIER,
                "result" => result.as_str(), "computed_digest" => verdict.computed_digest.as_str(),
                "reasons" => Value::Array(verdict.reasons.iter().map(|r| Value::from(r.as_str())).collect()),
            });
            let vh = hash_of(&verification)?;
            tx.execute(
                "INSERT INTO gtl_verifications (transaction_id, verification_hash, result, verification, at) VALUES ($1, $2, $3, $4, $5)",
                args![txid, &vh, result, &text(&verification), m.now],
            )?;
            let after = if verdict.pass {
                State::Verified
            } else {
                State::Rejected
            };
            let mut next = Next::to(
                State::Delivered,
                obj! {
                    "deal_hash" => d.deal_hash, "delivery_hash" => delivery_hash.as_str(),
                    "verification_hash" => vh,
                },
            );
            next.then = Some((Kind::Verification, after, verification));
            next.finish = self.cfg.settle_inline;
            next.extra = obj! {
                "result" => result.as_str(),
                "reasons" => Value::Array(verdict.reasons.into_iter().map(Value::from).collect()),
            };
            Ok(next)
        })
    }
}
