//! The market screen's work: connecting (the market token), refreshing,
//! and each message posted; every outcome goes back as a `MarketReport`.

use crate::json::Value;
use crate::market::time::system_ms;
use crate::market::workflow::JobAsk;
use crate::market::{MarketClient, MarketClientError};
use crate::tui::effect::MarketTask;
use crate::tui::report::Report;
use crate::tui::report::market::{MarketReport, Refresh};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

fn report(tx: &UnboundedSender<Report>, m: MarketReport) {
    let _ = tx.send(Report::Market(Box::new(m)));
}

/// A market refusal as one line: its code and message.
fn refusal(e: &MarketClientError) -> String {
    match e {
        MarketClientError::Rejected { code, message, .. } if message.starts_with(code.as_str()) => {
            message.clone()
        }
        MarketClientError::Rejected { code, message, .. } => format!("{code}: {message}"),
        other => other.to_string(),
    }
}

pub(super) fn start(t: MarketTask, tx: &UnboundedSender<Report>) {
    let tx = tx.clone();
    match t {
        MarketTask::Connect { url, data_dir } => {
            tokio::spawn(async move {
                let r = match crate::identity::KeyPair::load(&data_dir) {
                    Ok(keys) => MarketClient::connect(&url, keys, None)
                        .await
                        .map(Arc::new)
                        .map_err(|e| format!("market token: {}", refusal(&e))),
                    Err(e) => Err(format!("identity: {e}")),
                };
                report(&tx, MarketReport::Connected(r));
            });
        }
        MarketTask::Refresh { client, selected } => {
            tokio::spawn(async move {
                let r = read_market(&client, selected).await.map(Box::new);
                report(&tx, MarketReport::Refreshed(r));
            });
        }
        MarketTask::Open {
            client: c,
            target,
            budget,
            minutes,
        } => {
            tokio::spawn(async move {
                let ask = JobAsk {
                    transaction_id: None,
                    prefix: None,
                    target: &target,
                    budget,
                    deadline_ms: system_ms() + minutes * 60_000,
                };
                let r = c
                    .open_job(&ask)
                    .await
                    .map(|(txid, _)| txid)
                    .map_err(|e| refusal(&e));
                report(&tx, MarketReport::Opened(r));
            });
        }
        MarketTask::Accept {
            client: c,
            txid,
            offer,
        } => {
            tokio::spawn(async move {
                let r = async {
                    let view = c.transaction(&txid).await.map_err(|e| refusal(&e))?;
                    let v = c.lock_deal(&view, &offer).await.map_err(|e| refusal(&e))?;
                    Ok(format!(
                        "{txid}: deal locked on offer {} ({}); waiting for the provider's confirm",
                        offer.chars().take(12).collect::<String>(),
                        v.get_str("state").unwrap_or("")
                    ))
                }
                .await
                .map_err(|e: String| format!("accepting {txid} refused: {e}"));
                report(&tx, MarketReport::Done(r));
            });
        }
        MarketTask::Fund { client: c, txid } => {
            tokio::spawn(async move {
                let r = async {
                    // The amount and hash of the deal as the market has it now.
                    let view = c.transaction(&txid).await.map_err(|e| refusal(&e))?;
                    let (amount, v) = c.fund_deal(&view).await.map_err(|e| refusal(&e))?;
                    Ok(format!(
                        "{txid}: funded {amount} GTU ({}), balance {}",
                        v.get_str("state").unwrap_or(""),
                        v.get("balance").map(Value::py_str).unwrap_or_default()
                    ))
                }
                .await
                .map_err(|e: String| format!("funding {txid} refused: {e}"));
                report(&tx, MarketReport::Done(r));
            });
        }
    }
}

/// Reads the listing, the balance and one transaction's view.
async fn read_market(c: &MarketClient, selected: Option<String>) -> Result<Refresh, String> {
    let e = |e: MarketClientError| e.to_string();
    let jobs = c.market(true).await.map_err(e)?;
    let balance = c.balance().await.map_err(e)?;
    let id = selected
        .filter(|id| jobs.iter().any(|j| &j.transaction_id == id))
        .or_else(|| jobs.first().map(|j| j.transaction_id.clone()));
    let view = match id {
        Some(id) => Some(c.transaction(&id).await.map_err(e)?),
        None => None,
    };
    Ok(Refresh {
        principal_id: c.principal_id().to_owned(),
        at_ms: system_ms(),
        jobs,
        balance,
        view,
    })
}
