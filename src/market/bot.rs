//! The provider bot: watches the market, offers on `sha256_nonce.v1` jobs
//! within its price, confirms the deal a buyer locks on its offer (after
//! checking it), solves with the multi-threaded solver once funded, and
//! delivers. `palaver market bot` and the console's house run it.

use super::client::{MarketClient, MarketClientError};
use super::{canonical, messages, policy};
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
        state: String,
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

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// A job's `(prefix, target)`.
pub fn input(view: &Value) -> (String, String) {
    let i = view
        .get("job")
        .and_then(|j| j.get("input").or_else(|| j.get("task_parameters")));
    let g = |k: &str| {
        i.and_then(|i| i.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    (g("prefix"), g("target"))
}

/// The pending deal's hash, after checking it is what `me` offered: the
/// hash recomputed from the deal object, the payee and the amount.
pub fn checked_deal(view: &Value, me: &str) -> Result<String, String> {
    let d = view
        .get("deal")
        .filter(|d| !d.is_null())
        .ok_or("the buyer has not locked a deal yet")?;
    let deal = d.get("deal").cloned().unwrap_or_default();
    let claimed = s(d, "deal_hash");
    if canonical::hash(&deal).ok().as_deref() != Some(claimed) {
        return Err(format!(
            "the deal does not hash to {claimed}: refusing to confirm"
        ));
    }
    let st = deal.get("settlement").cloned().unwrap_or_default();
    if s(&st, "payee_principal_id") != me {
        return Err(format!(
            "the locked deal pays {}, not you ({me})",
            s(&st, "payee_principal_id")
        ));
    }
    let offer = view.get("offers").and_then(Value::as_array).and_then(|os| {
        os.iter()
            .find(|o| s(o, "offer_hash") == s(&deal, "offer_hash"))
    });
    let price = offer.and_then(|o| o.get("price")).and_then(Value::as_i64);
    if st.get("amount").and_then(Value::as_i64) != price
        || s(&deal, "job_hash") != s(view, "job_hash")
    {
        return Err("the locked deal does not match your offer".into());
    }
    Ok(claimed.to_owned())
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
            let txid = s(&j, "transaction_id").to_owned();
            let (_, target) = input(&j);
            let budget = j
                .get("budget")
                .and_then(|b| b.get("amount"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let price = o.price.unwrap_or(budget);
            let fits = s(&j, "state") == "JOB_OPEN" || s(&j, "state") == "OFFERED";
            let task = j
                .get("job")
                .and_then(|x| x.get("task_type"))
                .and_then(Value::as_str)
                == Some(policy::POLICY_ID);
            if tracked.contains_key(&txid)
                || !fits
                || !task
                || s(&j, "buyer_principal") == me
                || target.len() > o.max_target_hex
                || price > budget
                || price <= 0
            {
                continue;
            }
            let deadline = super::time::parse_rfc3339_utc(s(&j, "deadline")).unwrap_or(0);
            let msg = messages::offer(
                &txid,
                s(&j, "job_hash"),
                price,
                (super::time::system_ms() + 600_000).min(deadline),
                &me,
                c.agent_id(),
            );
            match c.post(msg).await {
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
            let state = s(&view, "state").to_owned();
            let deal = view.get("deal").filter(|d| !d.is_null());
            let mine = deal.is_some_and(|d| s(d, "offer_hash") == tracked[&txid].offer_hash);
            if super::is_terminal(&state) {
                report(BotEvent::Ended {
                    transaction_id: txid.clone(),
                    state,
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
            if state == "OFFERED"
                && deal.is_some_and(|d| d.get("confirmed").and_then(Value::as_bool) == Some(false))
            {
                match checked_deal(&view, &me) {
                    Ok(dh) => match c.post(messages::deal_confirm(&txid, &dh)).await {
                        Ok(_) => report(BotEvent::Confirmed {
                            transaction_id: txid.clone(),
                            deal_hash: dh,
                        }),
                        Err(e) => note(&txid, format!("confirm refused: {e}")),
                    },
                    Err(e) => note(&txid, format!("not confirming: {e}")),
                }
            }
            if state == "FUNDED" && !tracked[&txid].delivered {
                let (prefix, target) = input(&view);
                let start = std::time::Instant::now();
                let threads = o.threads.max(1);
                // The solver is CPU work: off the async workers.
                let (p, t) = (prefix.clone(), target.clone());
                let stop = Arc::new(AtomicBool::new(false));
                let sol =
                    tokio::task::spawn_blocking(move || policy::solve(&p, &t, 0, threads, &stop))
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
                let msg = messages::deliver(
                    &txid,
                    s(&view, "deal_hash"),
                    &prefix,
                    sol.nonce,
                    &sol.digest,
                );
                match c.post(msg).await {
                    Ok(v) => report(BotEvent::Delivered {
                        transaction_id: txid.clone(),
                        result: s(&v, "result").to_owned(),
                        state: s(&v, "state").to_owned(),
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
