//! OFFER (a provider quotes a price) and OFFER_DECLINE (the buyer turns
//! one down; declining the last live offer reopens the job).

use super::super::db::args;
use super::super::vocab::{Kind, OfferStatus, State};
use super::super::{MarketError, conflict, forbidden};
use super::Market;
use super::rows::{
    fe, hash_of, int, load_deal, object, only, only_envelope, string, text, time_field,
};
use super::transition::{Msg, Next, Sender};
use crate::json::Value;
use crate::obj;

impl Market {
    pub(super) fn offer(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "offer")?;
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
        let offer_v = Value::Object(offer.clone());
        let offer_hash = hash_of(&offer_v)?;
        self.transition(m, txid, Kind::Offer, Sender::Anyone, |tx, t| {
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
            let dup = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM gtl_offers WHERE offer_hash = $1)",
                    args![&offer_hash],
                )?
                .bool(0)?;
            if dup {
                return Err(conflict(
                    "duplicate_offer",
                    format!("offer {offer_hash} was already made"),
                ));
            }
            tx.execute(
                "INSERT INTO gtl_offers (offer_hash, transaction_id, provider_principal, price, asset, expires_at_ms, offer, status, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                args![&offer_hash, txid, &m.who.principal_id, amount, asset, expires, &text(&offer_v),
                      OfferStatus::Live, m.now],
            )?;
            Ok(Next::to(
                State::Offered,
                obj! { "offer_hash" => offer_hash.as_str() },
            ))
        })
    }

    pub(super) fn offer_decline(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "offer_hash")?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let offer_hash = string(m.msg, "offer_hash", "offer_hash")?;
        let sender = Sender::Buyer("only the buyer declines offers");
        self.transition(m, txid, Kind::OfferDecline, sender, |tx, _| {
            let status: Option<OfferStatus> = tx
                .query_opt(
                    "SELECT status FROM gtl_offers WHERE offer_hash = $1 AND transaction_id = $2",
                    args![offer_hash, txid],
                )?
                .map(|r| r.parse(0))
                .transpose()?;
            match status {
                None => {
                    return Err(MarketError::NotFound(format!(
                        "no offer {offer_hash} on {txid}"
                    )));
                }
                Some(OfferStatus::Live) => {}
                Some(s) => return Err(conflict("offer_not_live", format!("the offer is {s}"))),
            }
            if load_deal(tx, txid)?.is_some_and(|d| d.offer_hash == offer_hash) {
                return Err(conflict("offer_locked", "a deal lock names this offer"));
            }
            tx.execute(
                "UPDATE gtl_offers SET status = $2 WHERE offer_hash = $1",
                args![offer_hash, OfferStatus::Declined],
            )?;
            let live = tx
                .query_one(
                    "SELECT COUNT(*) FROM gtl_offers WHERE transaction_id = $1 AND status = $3 AND expires_at_ms > $2",
                    args![txid, m.now, OfferStatus::Live],
                )?
                .int(0)?;
            let to = if live == 0 && load_deal(tx, txid)?.is_none() {
                State::JobOpen
            } else {
                State::Offered
            };
            Ok(Next::to(to, obj! { "offer_hash" => offer_hash }))
        })
    }
}
