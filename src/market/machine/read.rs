//! The reads: the market's listing and one transaction's view, each after
//! the deadline sweep, so no read shows a transaction past its deadline in
//! a pre-deadline state.

use super::super::MarketError;
use super::super::chain::{ChainReport, verify_chain_value};
use super::super::time::format_rfc3339_utc;
use super::super::view::{
    Amount, DealView, EventView, Frozen, FundingView, Listing, OfferView, TransactionView,
};
use super::super::vocab::OfferStatus;
use super::Market;
use super::rows::{Sql, load, parse_map};
use rusqlite::{OptionalExtension, params};

impl Market {
    /// The market's jobs: open ones (not terminal), or all with `all`,
    /// newest first, each with its full JobSpec and hashes.
    pub fn listing(&self, all: bool) -> Result<Vec<Listing>, MarketError> {
        self.sweep()?;
        let db = self.db();
        let mut st = db
            .prepare_cached(
                "SELECT t.transaction_id, t.state, t.job, t.job_hash, t.policy_hash, t.deadline_ms, t.budget, t.asset,
                        t.buyer_principal, t.deal_hash,
                        (SELECT COUNT(*) FROM gtl_offers o WHERE o.transaction_id = t.transaction_id AND o.status = ?2)
                 FROM gtl_transactions t WHERE (?1 OR t.terminal_state IS NULL)
                 ORDER BY t.created_at DESC, t.transaction_id LIMIT 500",
            )
            .sql()?;
        let rows = st
            .query_map(params![all, OfferStatus::Live], |r| {
                Ok(Listing {
                    transaction_id: r.get(0)?,
                    state: r.get(1)?,
                    job: parse_map(&r.get::<_, String>(2)?),
                    job_hash: r.get(3)?,
                    verification_policy_hash: r.get(4)?,
                    deadline: format_rfc3339_utc(r.get(5)?),
                    budget: Amount {
                        amount: r.get(6)?,
                        asset: r.get(7)?,
                    },
                    buyer_principal: r.get(8)?,
                    deal_hash: r.get(9)?,
                    live_offers: r.get(10)?,
                })
            })
            .sql()?;
        rows.collect::<Result<_, _>>().sql()
    }

    /// One transaction with its full history: job, offers, deal, funding,
    /// delivery, verification and every event of its chain.
    pub fn transaction(&self, txid: &str) -> Result<TransactionView, MarketError> {
        self.sweep()?;
        let db = self.db();
        let t = load(&db, txid)?;
        let offers = db
            .prepare_cached("SELECT offer_hash, offer, status, provider_principal, price FROM gtl_offers WHERE transaction_id = ?1 ORDER BY at, offer_hash")
            .sql()?
            .query_map(params![txid], |r| {
                Ok(OfferView {
                    offer_hash: r.get(0)?,
                    offer: parse_map(&r.get::<_, String>(1)?),
                    status: r.get(2)?,
                    provider_principal: r.get(3)?,
                    price: r.get(4)?,
                })
            })
            .sql()?
            .collect::<Result<_, _>>()
            .sql()?;
        let deal = db
            .query_row(
                "SELECT deal_hash, deal, confirmed, buyer_principal, provider_principal, amount, offer_hash FROM gtl_deals WHERE transaction_id = ?1",
                params![txid],
                |r| {
                    Ok(DealView {
                        deal_hash: r.get(0)?,
                        deal: parse_map(&r.get::<_, String>(1)?),
                        confirmed: r.get::<_, i64>(2)? == 1,
                        buyer_principal: r.get(3)?,
                        provider_principal: r.get(4)?,
                        amount: r.get(5)?,
                        offer_hash: r.get(6)?,
                    })
                },
            )
            .optional()
            .sql()?;
        let funding = db
            .query_row(
                "SELECT commitment_id, deal_hash, amount, asset, status, payer, payee FROM gtl_commitments WHERE transaction_id = ?1",
                params![txid],
                |r| {
                    Ok(FundingView {
                        funding_commitment_id: r.get(0)?,
                        deal_hash: r.get(1)?,
                        amount: r.get(2)?,
                        asset: r.get(3)?,
                        status: r.get(4)?,
                        payer: r.get(5)?,
                        payee: r.get(6)?,
                    })
                },
            )
            .optional()
            .sql()?;
        let frozen = |sql: &str| {
            db.query_row(sql, params![txid], |r| {
                Ok(Frozen {
                    hash: r.get(0)?,
                    object: parse_map(&r.get::<_, String>(1)?),
                })
            })
            .optional()
            .sql()
        };
        let delivery =
            frozen("SELECT delivery_hash, delivery FROM gtl_deliveries WHERE transaction_id = ?1")?;
        let verification = frozen(
            "SELECT verification_hash, verification FROM gtl_verifications WHERE transaction_id = ?1",
        )?;
        let events = db
            .prepare_cached(
                "SELECT seq, kind, state_before, state_after, message_hash, signature, body, at, prev_event_hash, event_hash
                 FROM gtl_events WHERE transaction_id = ?1 ORDER BY seq",
            )
            .sql()?
            .query_map(params![txid], |r| {
                Ok(EventView {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    state_before: r.get(2)?,
                    state_after: r.get(3)?,
                    message_hash: r.get(4)?,
                    signature: r.get(5)?,
                    body: parse_map(&r.get::<_, String>(6)?),
                    at: r.get(7)?,
                    prev_event_hash: r.get(8)?,
                    event_hash: r.get(9)?,
                })
            })
            .sql()?
            .collect::<Result<_, _>>()
            .sql()?;
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

    /// Checks a transaction's stored event chain.
    pub fn verify_chain(&self, txid: &str) -> Result<ChainReport, MarketError> {
        Ok(verify_chain_value(&self.transaction(txid)?))
    }
}
