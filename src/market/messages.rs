//! Builders for every message a buyer or provider sends, and the
//! signature that goes on them. A console pane or a bot builds a message
//! here, signs it with [`sign`], and posts it with
//! [`super::MarketClient::post`].

use super::canonical::{self, CanonError};
use super::policy;
use super::view::TransactionView;
use super::vocab::Kind;
use crate::json::{Map, Value};
use crate::obj;
use crate::utc::format_rfc3339_utc;

/// Adds `signature` = SHA-256(token|canonical_json(message)) to `msg`.
pub fn sign(token: &str, mut msg: Map) -> Result<Map, CanonError> {
    msg.remove("signature");
    let sig = canonical::signature(token, &msg)?;
    msg.insert("signature", Value::from(sig));
    Ok(msg)
}

/// A GTL 0.2 message of `kind` on `transaction_id` carrying `key`.
fn with(kind: Kind, transaction_id: &str, key: &str, value: Value) -> Map {
    obj! {
        "type" => kind.as_str(), "gtl_version" => "0.2", "transaction_id" => transaction_id,
        key => value,
    }
}

/// The sandbox mandate document a buyer's authority points at, and its
/// hash (`mandate_hash`): a plain statement of who may spend how much
/// until when.
pub fn mandate(principal_id: &str, limit: i64, expires_ms: i64) -> (String, String) {
    let doc = format!(
        "palaver sandbox mandate: principal {principal_id} may open sha256_nonce.v1 jobs and fund them up to {limit} GTU until {}",
        format_rfc3339_utc(expires_ms)
    );
    let h = crate::json::canonical::sha256_hex(&doc);
    (doc, h)
}

/// What a buyer asks for.
#[derive(Debug, Clone)]
pub struct JobRequest<'a> {
    pub transaction_id: &'a str,
    pub prefix: &'a str,
    pub target: &'a str,
    pub budget: i64,
    pub deadline_ms: i64,
    pub principal_id: &'a str,
    pub agent_id: &'a str,
}

/// JOB_OPEN for `sha256_nonce.v1`, with the published policy embedded
/// verbatim and an authority covering exactly the budget until the deadline.
pub fn job_open(r: &JobRequest<'_>) -> Map {
    let deadline = format_rfc3339_utc(r.deadline_ms);
    let (_, mandate_hash) = mandate(r.principal_id, r.budget, r.deadline_ms);
    let budget = || Value::Object(obj! { "amount" => r.budget, "asset" => "GTU" });
    let job = obj! {
        "task_type" => policy::POLICY_ID,
        "input" => Value::Object(obj! { "prefix" => r.prefix, "target" => r.target }),
        "deadline" => deadline.as_str(),
        "output_format" => policy::output_format(),
        "budget" => budget(),
        "verification_policy" => policy::policy(),
        "authority" => Value::Object(obj! {
            "principal_id" => r.principal_id, "agent_id" => r.agent_id, "mandate_hash" => mandate_hash,
            "spend_limit" => budget(), "expires_at" => deadline.as_str(),
            "permissions" => Value::Array(vec![Value::from("create_job"), Value::from("fund")]),
        }),
    };
    with(Kind::JobOpen, r.transaction_id, "job", Value::Object(job))
}

/// OFFER on a job (its JobHash read from the market).
pub fn offer(
    transaction_id: &str,
    job_hash: &str,
    price: i64,
    expires_ms: i64,
    principal_id: &str,
    agent_id: &str,
) -> Map {
    let offer = obj! {
        "job_hash" => job_hash,
        "price" => Value::Object(obj! { "amount" => price, "asset" => "GTU" }),
        "expires_at" => format_rfc3339_utc(expires_ms),
        "provider" => Value::Object(obj! { "principal_id" => principal_id, "agent_id" => agent_id }),
    };
    with(Kind::Offer, transaction_id, "offer", Value::Object(offer))
}

/// OFFER_DECLINE.
pub fn offer_decline(transaction_id: &str, offer_hash: &str) -> Map {
    with(
        Kind::OfferDecline,
        transaction_id,
        "offer_hash",
        offer_hash.into(),
    )
}

/// The Deal object a buyer locks for `offer_hash`, computed from a
/// transaction view (`GET /api/gtl/transactions/{id}`): it binds the
/// JobHash, the OfferHash, the authority, the policy and the settlement.
pub fn deal_for(view: &TransactionView, offer_hash: &str) -> Result<Map, String> {
    let offer = view
        .offer(offer_hash)
        .ok_or_else(|| format!("no offer {offer_hash} on this transaction"))?;
    let o = Value::Object(offer.offer.clone());
    // The offer hash must be the hash of the offer shown: never trust a
    // listing's label over its content.
    if canonical::hash(&o).ok().as_deref() != Some(offer_hash) {
        return Err(format!("offer {offer_hash} does not hash to its label"));
    }
    let price = o.get("price").cloned().unwrap_or_default();
    let provider = o
        .get("provider")
        .and_then(|p| p.get("principal_id"))
        .and_then(Value::as_str)
        .ok_or("the offer names no provider")?;
    Ok(obj! {
        "job_hash" => view.job_hash.as_str(), "offer_hash" => offer_hash,
        "authority_hash" => view.authority_hash.as_str(),
        "verification_policy_hash" => view.verification_policy_hash.as_str(),
        "settlement" => Value::Object(obj! {
            "on_verified" => "pay_provider", "on_rejected" => "refund_buyer",
            "amount" => price.get("amount").cloned().unwrap_or_default(),
            "asset" => price.get("asset").cloned().unwrap_or_default(),
            "payee_principal_id" => provider,
        }),
    })
}

/// The Deal object from hashes the caller already holds (the JOB_OPEN
/// answer carries job, authority and policy hashes; the OFFER answer the
/// offer hash).
pub fn deal(
    job_hash: &str,
    offer_hash: &str,
    authority_hash: &str,
    policy_hash: &str,
    amount: i64,
    payee_principal_id: &str,
) -> Map {
    obj! {
        "job_hash" => job_hash, "offer_hash" => offer_hash, "authority_hash" => authority_hash,
        "verification_policy_hash" => policy_hash,
        "settlement" => Value::Object(obj! {
            "on_verified" => "pay_provider", "on_rejected" => "refund_buyer",
            "amount" => amount, "asset" => "GTU", "payee_principal_id" => payee_principal_id,
        }),
    }
}

/// DEAL_LOCK carrying `deal`.
pub fn deal_lock(transaction_id: &str, deal: Map) -> Map {
    with(Kind::DealLock, transaction_id, "deal", Value::Object(deal))
}

/// DEAL_CONFIRM of `deal_hash`.
pub fn deal_confirm(transaction_id: &str, deal_hash: &str) -> Map {
    with(
        Kind::DealConfirm,
        transaction_id,
        "deal_hash",
        deal_hash.into(),
    )
}

/// FUND of the locked deal.
pub fn fund(transaction_id: &str, deal_hash: &str, amount: i64) -> Map {
    let funding = obj! { "deal_hash" => deal_hash, "amount" => amount, "asset" => "GTU" };
    with(
        Kind::Fund,
        transaction_id,
        "funding",
        Value::Object(funding),
    )
}

/// DELIVER of a nonce and digest, with the recomputation as evidence.
pub fn deliver(
    transaction_id: &str,
    deal_hash: &str,
    prefix: &str,
    nonce: u64,
    digest: &str,
) -> Map {
    let delivery = obj! {
        "deal_hash" => deal_hash,
        "artifact" => Value::Object(obj! { "nonce" => nonce as i64, "digest" => digest }),
        "evidence" => Value::Array(vec![Value::Object(obj! {
            "type" => "recomputation", "algorithm" => "SHA-256", "message" => policy::message(prefix, nonce),
        })]),
    };
    with(
        Kind::Deliver,
        transaction_id,
        "delivery",
        Value::Object(delivery),
    )
}
