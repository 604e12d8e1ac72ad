//! DEAL_LOCK (the buyer's half: a deal over one live offer, every field
//! what the market computes) and DEAL_CONFIRM (the provider confirms the
//! same DealHash; the transaction is DEAL_LOCKED, other offers superseded).

use super::super::db::args;
use super::super::vocab::{Kind, OfferStatus, State};
use super::super::{FieldError, MarketError, conflict, forbidden};
use super::Market;
use super::rows::{fe, hash_of, load_deal, object, only, only_envelope, string, text};
use super::transition::{Msg, Next, Sender};
use crate::json::{Map, Value};
use crate::obj;
use crate::utc::parse_rfc3339_utc;

/// Records `path.key` as invalid unless it is the string `want`.
fn want(bad: &mut Vec<FieldError>, m: &Map, path: &str, key: &str, want: &str) {
    if m.get(key).and_then(Value::as_str) != Some(want) {
        bad.push(fe(&format!("{path}.{key}"), format!("must be {want}")));
    }
}

impl Market {
    pub(super) fn deal_lock(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "deal")?;
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
        let deal_v = Value::Object(deal.clone());
        let deal_hash = hash_of(&deal_v)?;
        let sender = Sender::Buyer("only the buyer locks a deal");
        self.transition(m, txid, Kind::DealLock, sender, |tx, t| {
            if load_deal(tx, txid)?.is_some() {
                return Err(conflict(
                    "deal_pending",
                    "a deal lock is already waiting for the provider's DEAL_CONFIRM",
                ));
            }
            let offer: Option<(String, i64, String, i64, OfferStatus)> = tx
                .query_opt(
                    "SELECT provider_principal, price, asset, expires_at_ms, status FROM gtl_offers WHERE offer_hash = $1 AND transaction_id = $2",
                    args![offer_hash, txid],
                )?
                .map(|r| Ok::<_, MarketError>((r.text(0)?, r.int(1)?, r.text(2)?, r.int(3)?, r.parse(4)?)))
                .transpose()?;
            let Some((provider, price, asset, expires, status)) = offer else {
                return Err(MarketError::NotFound(format!(
                    "no offer {offer_hash} on {txid}"
                )));
            };
            if status != OfferStatus::Live || expires <= m.now {
                let why = if status == OfferStatus::Live {
                    "expired"
                } else {
                    status.as_str()
                };
                return Err(conflict("offer_not_live", format!("the offer is {why}")));
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
            want(&mut bad, deal, "deal", "job_hash", &t.job_hash);
            want(&mut bad, deal, "deal", "authority_hash", &t.authority_hash);
            want(&mut bad, deal, "deal", "verification_policy_hash", &t.policy_hash);
            let st = "deal.settlement";
            want(&mut bad, settlement, st, "on_verified", "pay_provider");
            want(&mut bad, settlement, st, "on_rejected", "refund_buyer");
            want(&mut bad, settlement, st, "asset", &asset);
            want(&mut bad, settlement, st, "payee_principal_id", &provider);
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
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                args![&deal_hash, txid, offer_hash, &t.buyer, &provider, price, &asset, &text(&deal_v), m.hash],
            )?;
            Ok(Next::to(
                State::Offered,
                obj! { "deal_hash" => deal_hash.as_str(), "offer_hash" => offer_hash },
            ))
        })
    }

    pub(super) fn deal_confirm(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        only_envelope(m.msg, "deal_hash")?;
        let txid = string(m.msg, "transaction_id", "transaction_id")?;
        let deal_hash = string(m.msg, "deal_hash", "deal_hash")?;
        self.transition(m, txid, Kind::DealConfirm, Sender::Anyone, |tx, _| {
            let d = load_deal(tx, txid)?
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
            let expires = tx
                .query_one(
                    "SELECT expires_at_ms FROM gtl_offers WHERE offer_hash = $1",
                    args![&d.offer_hash],
                )?
                .int(0)?;
            if expires <= m.now {
                return Err(conflict("offer_not_live", "the locked offer has expired"));
            }
            tx.execute(
                "UPDATE gtl_deals SET confirmed = 1, provider_message_hash = $2 WHERE deal_hash = $1",
                args![&d.deal_hash, m.hash],
            )?;
            tx.execute(
                "UPDATE gtl_offers SET status = CASE WHEN offer_hash = $2 THEN $3 ELSE $4 END
                 WHERE transaction_id = $1 AND status = $5",
                args![txid, &d.offer_hash, OfferStatus::Accepted, OfferStatus::Superseded, OfferStatus::Live],
            )?;
            tx.execute(
                "UPDATE gtl_transactions SET deal_hash = $2 WHERE transaction_id = $1",
                args![txid, &d.deal_hash],
            )?;
            Ok(Next::to(
                State::DealLocked,
                obj! { "deal_hash" => d.deal_hash },
            ))
        })
    }
}
