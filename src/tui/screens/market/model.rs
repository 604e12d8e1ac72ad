//! The market as the screen shows it, taken from the market's views: the
//! listing's rows and the selected transaction (its events, offers, deal
//! and hashes).

use crate::market::view::{Listing, TransactionView};
use crate::market::vocab::{Kind, OfferStatus, State};
use crate::utc::parse_rfc3339_utc;

/// One row of the listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub state: State,
    pub budget: i64,
    pub deadline_ms: Option<i64>,
    pub buyer: String,
    pub target: String,
}

/// One event of a transaction's chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at_ms: i64,
    pub kind: Kind,
    pub state_after: State,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub hash: String,
    pub price: i64,
    pub provider: String,
    pub status: OfferStatus,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Deal {
    pub hash: String,
    pub offer_hash: String,
    pub amount: i64,
    pub provider: String,
    pub confirmed: bool,
}

/// The selected transaction, from its view.
#[derive(Debug, Clone, PartialEq)]
pub struct Tx {
    pub job: Job,
    pub events: Vec<Event>,
    pub offers: Vec<Offer>,
    pub deal: Option<Deal>,
    /// (label, hash) of the job, the accepted offer, the deal, the
    /// delivery and the verification, as far as they exist.
    pub hashes: Vec<(&'static str, String)>,
}

/// The first `n` characters of `h`.
pub(super) fn short(h: &str, n: usize) -> String {
    h.chars().take(n).collect()
}

pub(super) fn parse_job(j: &Listing) -> Job {
    Job {
        id: j.transaction_id.clone(),
        state: j.state,
        budget: j.budget.amount,
        deadline_ms: parse_rfc3339_utc(&j.deadline),
        buyer: j.buyer_principal.clone(),
        target: j.input().1,
    }
}

pub(super) fn parse_tx(v: &TransactionView) -> Tx {
    let job = Job {
        id: v.transaction_id.clone(),
        state: v.state,
        budget: v.budget.amount,
        deadline_ms: parse_rfc3339_utc(&v.deadline),
        buyer: v.buyer_principal.clone(),
        target: v.input().1,
    };
    let events = v
        .events
        .iter()
        .map(|e| Event {
            at_ms: e.at,
            kind: e.kind,
            state_after: e.state_after,
            hash: e.event_hash.clone(),
        })
        .collect();
    let offers = v
        .offers
        .iter()
        .map(|o| Offer {
            hash: o.offer_hash.clone(),
            price: o.price,
            provider: o.provider_principal.clone(),
            status: o.status,
        })
        .collect();
    let deal = v.deal.as_ref().map(|d| Deal {
        hash: d.deal_hash.clone(),
        offer_hash: d.offer_hash.clone(),
        amount: d.amount,
        provider: d.provider_principal.clone(),
        confirmed: d.confirmed,
    });
    let mut hashes = vec![("job", v.job_hash.clone())];
    if let Some(d) = &deal {
        hashes.push(("offer", d.offer_hash.clone()));
        hashes.push(("deal", d.hash.clone()));
    }
    for (label, frozen) in [("delivery", &v.delivery), ("verification", &v.verification)] {
        if let Some(f) = frozen {
            hashes.push((label, f.hash.clone()));
        }
    }
    hashes.retain(|(_, h)| !h.is_empty());
    Tx {
        job,
        events,
        offers,
        deal,
        hashes,
    }
}

/// Time left until `deadline_ms`, seen at `at_ms`.
pub(super) fn time_left(job: &Job, at_ms: i64) -> String {
    if job.state.is_terminal() {
        return "ended".into();
    }
    let Some(d) = job.deadline_ms else {
        return "?".into();
    };
    let secs = (d - at_ms) / 1000;
    match secs {
        ..=0 => "due".into(),
        1..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs / 3600 % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_reads_like_a_clock() {
        let j = |state: State| Job {
            id: "t".into(),
            state,
            budget: 1,
            deadline_ms: Some(1_000_000_000),
            buyer: String::new(),
            target: "00".into(),
        };
        let at = |secs: i64| 1_000_000_000 - secs * 1000;
        assert_eq!(time_left(&j(State::JobOpen), at(45)), "45s");
        assert_eq!(time_left(&j(State::JobOpen), at(545)), "9m05s");
        assert_eq!(time_left(&j(State::Funded), at(7_260)), "2h01m");
        assert_eq!(time_left(&j(State::Funded), at(90_000)), "1d01h");
        assert_eq!(time_left(&j(State::Funded), at(-5)), "due");
        assert_eq!(time_left(&j(State::Settled), at(45)), "ended");
    }

    #[test]
    fn views_without_the_expected_fields_parse_to_nothing_or_defaults() {
        let v = crate::market::view::decode::<TransactionView>(&crate::json::Value::Object(crate::obj! {
            "transaction_id" => "t1", "state" => "JOB_OPEN", "terminal" => false,
            "buyer_principal" => "b", "job" => crate::json::Value::Object(crate::obj! {}),
            "job_hash" => "", "verification_policy_hash" => "", "authority_hash" => "",
            "deadline" => "", "budget" => crate::json::Value::Object(crate::obj! { "amount" => 1, "asset" => "GTU" }),
            "offers" => crate::json::Value::Array(Vec::new()), "deal" => crate::json::Value::Null,
            "events" => crate::json::Value::Array(Vec::new()),
        }))
        .unwrap();
        let t = parse_tx(&v);
        assert!(t.offers.is_empty() && t.deal.is_none() && t.hashes.is_empty());
        assert_eq!((t.job.target.as_str(), t.job.deadline_ms), ("", None));
    }
}
