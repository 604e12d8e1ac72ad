//! The provider bot: watches the market, offers on `sha256_nonce.v1` jobs
//! within its price, confirms the deal a buyer locks on its offer (after
//! checking it), solves with the multi-threaded solver once funded, and
//! delivers. `palaver market bot` and the console's house run it.

use super::client::{MarketClient, MarketClientError};
use super::policy;
use super::vocab::{Kind, State};
use crate::json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How the bot works.
#[derive(Debug, Clone)]
pub struct BotOptions {
    /// Price to ask (None: each job's budget); jobs below it are skipped.
    pub price: Option<i64>,
    /// Skip jobs whose target is longer than this many hex digits.
    pub max_target_hex: usize,
    /// Solver threads.
    pub threads: usize,
    /// Pause between looks at the market.
    pub poll: Duration,
    /// Stop after this many of its transactions ended (None: never).
    pub jobs: Option<usize>,
}

impl Default for BotOptions {
    fn default() -> Self {
        BotOptions {
            price: None,
            max_target_hex: 6,
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            poll: Duration::from_millis(300),
            jobs: None,
        }
    }
}

/// What the bot did, for a log line or a console.
#[derive(Debug, Clone, PartialEq)]
pub enum BotEvent {
    Offered {
        transaction_id: String,
        price: i64,
        offer_hash: String,
    },
    Confirmed {
        transaction_id: String,
        deal_hash: String,
    },
    Solved {
        transaction_id: String,
        nonce: u64,
        seconds: f64,
    },
    Delivered {
        transaction_id: String,
        result: String,
        state: String,
    },
    /// Its transaction reached a terminal state.
    Ended {
        transaction_id: String,
        state: State,
    },
    /// Something it declined to do or was refused, with why.
    Note {
        transaction_id: String,
        text: String,
    },
}

impl std::fmt::Display for BotEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BotEvent::Offered {
                transaction_id,
                price,
                offer_hash,
            } => write!(f, "{transaction_id}: offered {price} GTU ({offer_hash})"),
            BotEvent::Confirmed {
                transaction_id,
                deal_hash,
            } => write!(f, "{transaction_id}: confirmed deal {deal_hash}"),
            BotEvent::Solved {
                transaction_id,
                nonce,
                seconds,
            } => write!(f, "{transaction_id}: solved nonce {nonce} in {seconds:.3}s"),
            BotEvent::Delivered {
                transaction_id,
                result,
                state,
            } => write!(f, "{transaction_id}: delivered, {result} → {state}"),
            BotEvent::Ended {
                transaction_id,
                state,
            } => write!(f, "{transaction_id}: {state}"),
            BotEvent::Note {
                transaction_id,
                text,
            } => write!(f, "{transaction_id}: {text}"),
        }
    }
}

/// What the bot remembers about a transaction it offered on.
struct Tracked {
    offer_hash: String,
    delivered: bool,
}

/// Runs until `o.jobs` of its transactions ended (or forever); returns how
/// many ended. Market errors on listing end it; refusals of single steps
/// are reported and it goes on.
pub async fn run(
    c: &MarketClient,
    o: &BotOptions,
    report: &(dyn Fn(BotEvent) + Send + Sync),
) -> Result<usize, MarketClientError> {
    let me = c.principal_id().to_owned();
    let note = |txid: &str, text: String| {
        report(BotEvent::Note {
            transaction_id: txid.to_owned(),
            text,
        })
    };
    let mut tracked: HashMap<String, Tracked> = HashMap::new();
    let mut finished = 0usize;
    loop {
        for j in c.market(false).await? {
            let txid = j.transaction_id.clone();
            let (_, target) = j.input();
            let budget = j.budget.amount;
            let price = o.price.unwrap_or(budget);
            let fits = Kind::Offer.accepted_in().contains(&j.state);
            if tracked.contains_key(&txid)
                || !fits
                || j.task_type() != policy::POLICY_ID
                || j.buyer_principal == me
                || target.len() > o.max_target_hex
                || price > budget
                || price <= 0
            {
                continue;
            }
            match c
                .offer_on(&txid, &j.job_hash, &j.deadline, price, 600_000)
                .await
            {
                Ok(v) => {
                    let oh = v
                        .get("hashes")
                        .and_then(|h| h.get("offer_hash"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    report(BotEvent::Offered {
                        transaction_id: txid.clone(),
                        price,
                        offer_hash: oh.clone(),
                    });
                    tracked.insert(
                        txid,
                        Tracked {
                            offer_hash: oh,
                            delivered: false,
                        },
                    );
                }
                Err(e) => note(&txid, format!("offer refused: {e}")),
            }
        }
        let ids: Vec<String> = tracked.keys().cloned().collect();
        for txid in ids {
            let view = match c.transaction(&txid).await {
                Ok(v) => v,
                Err(e) => {
                    note(&txid, e.to_string());
                    continue;
                }
            };
            let deal = view.deal.as_ref();
            let mine = deal.is_some_and(|d| d.offer_hash == tracked[&txid].offer_hash);
            if view.state.is_terminal() {
                report(BotEvent::Ended {
                    transaction_id: txid.clone(),
                    state: view.state,
                });
                tracked.remove(&txid);
                finished += 1;
                continue;
            }
            if deal.is_some() && !mine {
                note(&txid, "the buyer chose another offer".into());
                tracked.remove(&txid);
                continue;
            }
            if view.state == State::Offered && deal.is_some_and(|d| !d.confirmed) {
                match c.confirm_deal(&view).await {
                    Ok((dh, _)) => report(BotEvent::Confirmed {
                        transaction_id: txid.clone(),
                        deal_hash: dh,
                    }),
                    Err(MarketClientError::Check(e)) => note(&txid, format!("not confirming: {e}")),
                    Err(e) => note(&txid, format!("confirm refused: {e}")),
                }
            }
            if view.state == State::Funded && !tracked[&txid].delivered {
                let (prefix, target) = view.input();
                let start = std::time::Instant::now();
                let threads = o.threads.max(1);
                // The solver is CPU work: off the async workers.
                let t = target.clone();
                let stop = Arc::new(AtomicBool::new(false));
                let sol = tokio::task::spawn_blocking(move || {
                    policy::solve(&prefix, &t, 0, threads, &stop)
                })
                .await
                .ok()
                .flatten();
                let Some(sol) = sol else {
                    note(&txid, format!("no nonce for target {target:?}"));
                    continue;
                };
                report(BotEvent::Solved {
                    transaction_id: txid.clone(),
                    nonce: sol.nonce,
                    seconds: start.elapsed().as_secs_f64(),
                });
                let s =
                    |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                match c.deliver_solution(&view, &sol).await {
                    Ok(v) => report(BotEvent::Delivered {
                        transaction_id: txid.clone(),
                        result: s(&v, "result"),
                        state: s(&v, "state"),
                    }),
                    Err(e) => note(&txid, format!("delivery refused: {e}")),
                }
                if let Some(t) = tracked.get_mut(&txid) {
                    t.delivered = true;
                }
            }
        }
        if o.jobs.is_some_and(|j| finished >= j) {
            return Ok(finished);
        }
        tokio::time::sleep(o.poll).await;
    }
}
