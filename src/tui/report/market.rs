//! What the market screen's tasks report: the connection, each refresh,
//! and the outcome of each message posted.

use crate::market::{Listing, MarketClient, TransactionView};
use std::sync::Arc;

/// What the market showed at one moment (`at_ms`, the local clock when it
/// was read): the answers of `GET /api/market?all=1`, the account and
/// `GET /api/gtl/transactions/{id}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    pub principal_id: String,
    pub at_ms: i64,
    /// Every job, newest first.
    pub jobs: Vec<Listing>,
    pub balance: i64,
    /// The selected transaction's view (or the newest one's).
    pub view: Option<TransactionView>,
}

/// Reports for the market screen.
pub enum MarketReport {
    /// This identity's market token: the client, or why not.
    Connected(Result<Arc<MarketClient>, String>),
    /// A refresh: what the market shows, or why it could not be read.
    Refreshed(Result<Box<Refresh>, String>),
    /// JOB_OPEN was posted: the new transaction id, or the refusal.
    Opened(Result<String, String>),
    /// Accept or fund ended: a summary, or the refusal.
    Done(Result<String, String>),
}
