//! The reads: the market's listing and one transaction's view, each after
//! the deadline sweep, so no read shows a transaction past its deadline in
//! a pre-deadline state.

use super::super::MarketError;
use super::super::chain::{ChainReport, verify_chain_value};
use super::super::db::{Db, Row, args};
use super::super::view::{
    Amount, DealView, EventView, Frozen, FundingView, Listing, OfferView, TransactionView,
};
use super::super::vocab::OfferStatus;
use super::Market;
use super::rows::{load, parse_map};
use crate::utc::format_rfc3339_utc;

fn frozen(db: &mut dyn Db, sql: &str, txid: &str) -> Result<Option<Frozen>, MarketError> {
    db.query_opt(sql, args![txid])?
        .map(|r| {
            Ok(Frozen {
                hash: r.text(0)?,
                object: parse_map(&r.text(1)?),
            })
        })
        .transpose()
}

fn listing(r: &Row) -> Result<Listing, MarketError> {
    Ok(Listing {
        transaction_id: r.text(0)?,
        state: r.parse(1)?,
        job: parse_map(&r.text(2)?),
        job_hash: r.text(3)?,
        verification_policy_hash: r.text(4)?,
        deadline: format_rfc3339_utc(r.int(5)?),
        budget: Amount {
            amount: r.int(6)?,
            asset: r.text(7)?,
        },
        buyer_principal: r.text(8)?,
        deal_hash: r.opt_text(9)?,
        live_offers: r.int(10)?,
    })
}

fn event(r: &Row) -> Result<EventView, MarketError> {
    Ok(EventView {
        seq: r.int(0)?,
        kind: r.parse(1)?,
        state_before: r.opt_parse(2)?,
        state_after: r.parse(3)?,
        message_hash: r.opt_text(4)?,
        signature: r.opt_text(5)?,
        body: parse_map(&r.text(6)?),
        at: r.int(7)?,
        prev_event_hash: r.text(8)?,
        event_hash: r.text(9)?,
    })
}

impl Market {
    /// The market's jobs: open ones (not terminal), or all with `all`,
    /// newest first, each with its full JobSpec and hashes.
    pub fn listing(&self, all: bool) -> Result<Vec<Listing>, MarketError> {
        self.sweep()?;
        self.read(false, |db| {
            db.query(
                "SELECT t.transaction_id, t.state, t.job, t.job_hash, t.policy_hash, t.deadline_ms, t.budget, t.asset,
                        t.buyer_principal, t.deal_hash,
                        (SELECT COUNT(*) FROM gtl_offers o WHERE o.transaction_id = t.transaction_id AND o.status = $2)
                 FROM gtl_transactions t WHERE ($1 OR t.terminal_state IS NULL)
                 ORDER BY t.created_at DESC, t.transaction_id LIMIT 500",
                args![all, OfferStatus::Live],
            )?
            .iter()
            .map(listing)
            .collect()
        })
    }

    /// One transaction with its full history: job, offers, deal, funding,
    /// delivery, verification and every event of its chain.
    pub fn transaction(&self, txid: &str) -> Result<TransactionView, MarketError> {
        self.sweep()?;
        self.read(true, |db| view(db, txid))
    }

    /// Checks a transaction's stored event chain.
    pub fn verify_chain(&self, txid: &str) -> Result<ChainReport, MarketError> {
        Ok(verify_chain_value(&self.transaction(txid)?))
    }
}

fn view(db: &mut dyn Db, txid: &str) -> Result<TransactionView, MarketError> {
    let t = load(db, txid)?;
    let offers = db
        .query(
            "SELECT offer_hash, offer, status, provider_principal, price FROM gtl_offers WHERE transaction_id = $1 ORDER BY at, offer_hash",
            args![txid],
        )?
        .iter()
        .map(|r| {
            Ok(OfferView {
                offer_hash: r.text(0)?,
                offer: parse_map(&r.text(1)?),
                status: r.parse(2)?,
                provider_principal: r.text(3)?,
                price: r.int(4)?,
            })
        })
        .collect::<Result<_, MarketError>>()?;
    let deal = db
        .query_opt(
            "SELECT deal_hash, deal, confirmed, buyer_principal, provider_principal, amount, offer_hash FROM gtl_deals WHERE transaction_id = $1",
            args![txid],
        )?
        .map(|r| {
            Ok::<_, MarketError>(DealView {
                deal_hash: r.text(0)?,
                deal: parse_map(&r.text(1)?),
                confirmed: r.int(2)? == 1,
                buyer_principal: r.text(3)?,
                provider_principal: r.text(4)?,
                amount: r.int(5)?,
                offer_hash: r.text(6)?,
            })
        })
        .transpose()?;
    let funding = db
        .query_opt(
            "SELECT commitment_id, deal_hash, amount, asset, status, payer, payee FROM gtl_commitments WHERE transaction_id = $1",
            args![txid],
        )?
        .map(|r| {
            Ok::<_, MarketError>(FundingView {
                funding_commitment_id: r.text(0)?,
                deal_hash: r.text(1)?,
                amount: r.int(2)?,
                asset: r.text(3)?,
                status: r.parse(4)?,
                payer: r.text(5)?,
                payee: r.text(6)?,
            })
        })
        .transpose()?;
    let delivery = frozen(
        db,
        "SELECT delivery_hash, delivery FROM gtl_deliveries WHERE transaction_id = $1",
        txid,
    )?;
    let verification = frozen(
        db,
        "SELECT verification_hash, verification FROM gtl_verifications WHERE transaction_id = $1",
        txid,
    )?;
    let events = db
        .query(
            "SELECT seq, kind, state_before, state_after, message_hash, signature, body, at, prev_event_hash, event_hash
             FROM gtl_events WHERE transaction_id = $1 ORDER BY seq",
            args![txid],
        )?
        .iter()
        .map(event)
        .collect::<Result<_, _>>()?;
    Ok(TransactionView {
        transaction_id: t.id,
        state: t.state,
        terminal: t.state.is_terminal(),
        buyer_principal: t.buyer,
        job: t.job,
        job_hash: t.job_hash,
        verification_policy_hash: t.policy_hash,
        authority_hash: t.authority_hash,
        deadline: format_rfc3339_utc(t.deadline_ms),
        budget: Amount {
            amount: t.budget,
            asset: t.asset,
        },
        deal_hash: t.deal_hash,
        offers,
        deal,
        funding,
        delivery,
        verification,
        events,
    })
}
