//! What the market shows, as serde types: a job as `GET /api/market` lists
//! it ([`Listing`]) and a transaction with its whole history as
//! `GET /api/gtl/transactions/{id}` answers it ([`TransactionView`]). The
//! server writes them, the client reads them back, and the CLI, the
//! console and the provider bot use them as they are. Field order is the
//! answer's key order.
//!
//! Signed objects (a job, an offer, a deal, an event body…) stay palaver
//! JSON [`Map`]s, read with the strict GTL parser, so hashing them again
//! gives exactly the hashes the market computed.

use super::canonical;
use super::vocab::{CommitmentStatus, Kind, OfferStatus, State};
use crate::json::{Map, Value};
use serde::{Deserialize, Serialize};

/// An amount of an asset (`{"amount":15,"asset":"GTU"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount {
    pub amount: i64,
    pub asset: String,
}

/// One job of the market's listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    pub transaction_id: String,
    pub state: State,
    #[serde(with = "object")]
    pub job: Map,
    pub job_hash: String,
    pub verification_policy_hash: String,
    /// RFC 3339 UTC.
    pub deadline: String,
    pub budget: Amount,
    pub buyer_principal: String,
    pub deal_hash: Option<String>,
    /// Offers still live.
    pub live_offers: i64,
}

/// The answer of `GET /api/market`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Jobs {
    pub jobs: Vec<Listing>,
    /// The published policy's hash.
    pub policy_hash: String,
}

/// A transaction with its full history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransactionView {
    pub transaction_id: String,
    pub state: State,
    pub terminal: bool,
    pub buyer_principal: String,
    #[serde(with = "object")]
    pub job: Map,
    pub job_hash: String,
    pub verification_policy_hash: String,
    pub authority_hash: String,
    /// RFC 3339 UTC.
    pub deadline: String,
    pub budget: Amount,
    /// Set once both principals confirmed the deal.
    pub deal_hash: Option<String>,
    /// Oldest first.
    pub offers: Vec<OfferView>,
    pub deal: Option<DealView>,
    pub funding: Option<FundingView>,
    pub delivery: Option<Frozen>,
    pub verification: Option<Frozen>,
    /// The event chain, by seq.
    pub events: Vec<EventView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OfferView {
    pub offer_hash: String,
    /// The signed `offer` object.
    #[serde(with = "object")]
    pub offer: Map,
    pub status: OfferStatus,
    pub provider_principal: String,
    pub price: i64,
}

/// The deal the buyer locked (confirmed once the provider has).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DealView {
    pub deal_hash: String,
    /// The signed `deal` object.
    #[serde(with = "object")]
    pub deal: Map,
    pub confirmed: bool,
    pub buyer_principal: String,
    pub provider_principal: String,
    pub amount: i64,
    pub offer_hash: String,
}

/// The funding commitment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FundingView {
    pub funding_commitment_id: String,
    pub deal_hash: String,
    pub amount: i64,
    pub asset: String,
    pub status: CommitmentStatus,
    pub payer: String,
    pub payee: String,
}

/// A frozen object (the delivery, the verification) and its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frozen {
    pub hash: String,
    #[serde(with = "object")]
    pub object: Map,
}

/// One event of a transaction's hash chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventView {
    pub seq: i64,
    pub kind: Kind,
    pub state_before: Option<State>,
    pub state_after: State,
    /// The message's hash and signature (none for server events).
    pub message_hash: Option<String>,
    pub signature: Option<String>,
    /// The message without its signature, or the server event's body.
    #[serde(with = "object")]
    pub body: Map,
    /// Unix milliseconds.
    pub at: i64,
    pub prev_event_hash: String,
    pub event_hash: String,
}

/// A job's `(prefix, target)` (from `input`, or `task_parameters`).
pub fn job_input(job: &Map) -> (String, String) {
    let i = job.get("input").or_else(|| job.get("task_parameters"));
    let g = |k: &str| {
        i.and_then(|i| i.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    (g("prefix"), g("target"))
}

fn str_at<'a>(m: &'a Map, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

impl Listing {
    /// The job's `(prefix, target)`.
    pub fn input(&self) -> (String, String) {
        job_input(&self.job)
    }

    pub fn task_type(&self) -> &str {
        str_at(&self.job, "task_type")
    }
}

impl TransactionView {
    /// The job's `(prefix, target)`.
    pub fn input(&self) -> (String, String) {
        job_input(&self.job)
    }

    pub fn offer(&self, offer_hash: &str) -> Option<&OfferView> {
        self.offers.iter().find(|o| o.offer_hash == offer_hash)
    }

    /// The pending deal's hash, after checking it is the one `me` would
    /// confirm: it hashes to its label, pays `me`, settles the price of the
    /// offer it names, and names this job.
    pub fn deal_to_confirm(&self, me: &str) -> Result<String, String> {
        let d = self
            .deal
            .as_ref()
            .ok_or("the buyer has not locked a deal yet")?;
        let deal = Value::Object(d.deal.clone());
        if canonical::hash(&deal).ok().as_deref() != Some(d.deal_hash.as_str()) {
            return Err(format!(
                "the deal does not hash to {}: refusing to confirm",
                d.deal_hash
            ));
        }
        let empty = Map::new();
        let st = d
            .deal
            .get("settlement")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let payee = str_at(st, "payee_principal_id");
        if payee != me {
            return Err(format!("the locked deal pays {payee}, not you ({me})"));
        }
        let price = self.offer(str_at(&d.deal, "offer_hash")).map(|o| o.price);
        if st.get("amount").and_then(Value::as_i64) != price
            || str_at(&d.deal, "job_hash") != self.job_hash
        {
            return Err("the locked deal does not match your offer".into());
        }
        Ok(d.deal_hash.clone())
    }
}

/// Reads an answer of the market as one of these types.
pub fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, serde_json::Error> {
    serde_json::from_str(&crate::json::canonical::to_string_ordered(v))
}

/// A signed object: written as it is, read with the strict GTL parser.
mod object {
    use super::canonical;
    use crate::json::{Map, Value};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(m: &Map, s: S) -> Result<S::Ok, S::Error> {
        m.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        match canonical::parse_strict(raw.get().as_bytes()) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(other) => Err(serde::de::Error::custom(format!(
                "expected an object, not {}",
                other.type_name()
            ))),
            Err(e) => Err(serde::de::Error::custom(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;

    #[test]
    fn a_view_reads_back_what_it_wrote_with_the_same_keys_in_the_same_order() {
        let body = obj! { "z" => 1, "a" => Value::Array(vec![Value::from("x")]) };
        let e = EventView {
            seq: 1,
            kind: Kind::JobOpen,
            state_before: None,
            state_after: State::JobOpen,
            message_hash: Some("m".into()),
            signature: None,
            body,
            at: 5,
            prev_event_hash: "0".into(),
            event_hash: "e".into(),
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(
            text,
            r#"{"seq":1,"kind":"JOB_OPEN","state_before":null,"state_after":"JOB_OPEN","message_hash":"m","signature":null,"body":{"z":1,"a":["x"]},"at":5,"prev_event_hash":"0","event_hash":"e"}"#
        );
        let v = crate::json::parse_str(&text).unwrap();
        assert_eq!(decode::<EventView>(&v).unwrap(), e);
        // A signed object GTL refuses (a float, a duplicate key) is refused.
        for bad in [r#"{"x":1.5}"#, r#"{"x":1,"x":2}"#, "[]"] {
            let t = text.replace(r#"{"z":1,"a":["x"]}"#, bad);
            assert!(serde_json::from_str::<EventView>(&t).is_err(), "{bad}");
        }
    }
}
