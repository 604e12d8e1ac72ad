//! The buyer's and the provider's steps, each written once: what
//! `palaver market …`, the console's market screen and the provider bot
//! run. A step that depends on the transaction takes its view as the
//! caller read it, builds the message from it (checking what must be
//! checked here first), signs and posts it.

use super::client::{MarketClient, MarketClientError};
use super::messages::{self, JobRequest};
use super::policy::Solution;
use super::time::system_ms;
use super::view::TransactionView;
use crate::json::Value;
use crate::utc::parse_rfc3339_utc;

/// What a buyer asks for: a `sha256_nonce.v1` job.
#[derive(Debug, Clone)]
pub struct JobAsk<'a> {
    /// Default: a fresh `job_…` id.
    pub transaction_id: Option<&'a str>,
    /// Default: `palaver|<transaction id>`, which binds a solution to
    /// this job.
    pub prefix: Option<&'a str>,
    pub target: &'a str,
    pub budget: i64,
    pub deadline_ms: i64,
}

/// A fresh transaction id: `job_` and 12 random hex digits.
pub fn new_transaction_id() -> String {
    format!("job_{}", hex::encode(rand::random::<[u8; 6]>()))
}

impl MarketClient {
    /// Buyer: JOB_OPEN with the published policy and an authority covering
    /// the budget until the deadline. Returns the transaction id and the
    /// market's answer.
    pub async fn open_job(&self, ask: &JobAsk<'_>) -> Result<(String, Value), MarketClientError> {
        let txid = ask
            .transaction_id
            .map_or_else(new_transaction_id, str::to_owned);
        let prefix = ask
            .prefix
            .map_or_else(|| format!("palaver|{txid}"), str::to_owned);
        let msg = messages::job_open(&JobRequest {
            transaction_id: &txid,
            prefix: &prefix,
            target: ask.target,
            budget: ask.budget,
            deadline_ms: ask.deadline_ms,
            principal_id: self.principal_id(),
            agent_id: self.agent_id(),
        });
        let answer = self.post(msg).await?;
        Ok((txid, answer))
    }

    /// Provider: OFFER `price` on a job (its JobHash and RFC 3339
    /// deadline as listed), open for `open_ms` but never past the deadline.
    pub async fn offer_on(
        &self,
        transaction_id: &str,
        job_hash: &str,
        deadline: &str,
        price: i64,
        open_ms: i64,
    ) -> Result<Value, MarketClientError> {
        let deadline = parse_rfc3339_utc(deadline).unwrap_or(0);
        let expires = (system_ms() + open_ms).min(deadline);
        self.post(messages::offer(
            transaction_id,
            job_hash,
            price,
            expires,
            self.principal_id(),
            self.agent_id(),
        ))
        .await
    }

    /// Buyer: DEAL_LOCK on `offer_hash`, the deal computed from the view
    /// (and the offer checked against its hash). The provider confirms it.
    pub async fn lock_deal(
        &self,
        view: &TransactionView,
        offer_hash: &str,
    ) -> Result<Value, MarketClientError> {
        let deal = messages::deal_for(view, offer_hash).map_err(MarketClientError::Check)?;
        self.post(messages::deal_lock(&view.transaction_id, deal))
            .await
    }

    /// Provider: DEAL_CONFIRM of the deal the buyer locked, once it is
    /// checked to name this principal's offer and pay it. Returns the
    /// DealHash and the answer.
    pub async fn confirm_deal(
        &self,
        view: &TransactionView,
    ) -> Result<(String, Value), MarketClientError> {
        let dh = view
            .deal_to_confirm(self.principal_id())
            .map_err(MarketClientError::Check)?;
        let answer = self
            .post(messages::deal_confirm(&view.transaction_id, &dh))
            .await?;
        Ok((dh, answer))
    }

    /// Buyer: FUND the deal for its amount. Returns the amount and the
    /// answer.
    pub async fn fund_deal(
        &self,
        view: &TransactionView,
    ) -> Result<(i64, Value), MarketClientError> {
        let txid = &view.transaction_id;
        let deal = view
            .deal
            .as_ref()
            .ok_or_else(|| MarketClientError::Check(format!("{txid} has no deal yet")))?;
        let answer = self
            .post(messages::fund(txid, &deal.deal_hash, deal.amount))
            .await?;
        Ok((deal.amount, answer))
    }

    /// Provider: DELIVER a solution of the job for its current deal, with
    /// the recomputation as evidence.
    pub async fn deliver_solution(
        &self,
        view: &TransactionView,
        solution: &Solution,
    ) -> Result<Value, MarketClientError> {
        let (prefix, _) = view.input();
        self.post(messages::deliver(
            &view.transaction_id,
            view.deal_hash.as_deref().unwrap_or(""),
            &prefix,
            solution.nonce,
            &solution.digest,
        ))
        .await
    }
}
