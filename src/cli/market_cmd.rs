//! `palaver market …`: the GTL 0.2 market as a buyer, a provider, an
//! auditor, and the provider bot.

use super::community_cmd::{runtime, server_url};
use super::{Ctx, Outcome};
use crate::identity::KeyPair;
use crate::json::Value;
use crate::market::policy::Solution;
use crate::market::time::system_ms;
use crate::market::workflow::JobAsk;
use crate::market::{MarketClient, MarketClientError, TransactionView, canonical, policy};
use crate::utc::format_rfc3339_utc;
use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use std::sync::atomic::AtomicBool;

const AFTER_HELP: &str = "\
A job goes JOB_OPEN → OFFERED → DEAL_LOCKED → FUNDED → DELIVERED → VERIFIED → SETTLED,
or from DELIVERED (a failed verification) or FUNDED (deadline passed) → REJECTED → REFUNDED.

Buyer:     palaver market open --prefix 'shop|job_1' --target 0000 --budget 15 --id job_1
           palaver market show job_1                  (offers, with their offer hashes)
           palaver market lock job_1 OFFER_HASH       (then wait for the provider's confirm)
           palaver market fund job_1
Provider:  palaver market offer job_1 --price 12
           palaver market confirm job_1
           palaver market deliver job_1               (solves the nonce here, then delivers)
           palaver market bot                         (does all of that for every fitting job)
Anyone:    palaver market list | show ID | verify-chain ID | balance

Every command needs a registered identity (palaver init; palaver register --nickname N) and a
server (--server URL or PALAVER_SERVER). The first market command fetches this identity's bearer
token (POST /api/gtl/token, signed with the identity key); the sandbox grants 1000 GTU.";

#[derive(Debug, Subcommand)]
#[command(after_help = AFTER_HELP)]
pub enum MarketCmd {
    /// Show this identity's bearer token and principal (binds the principal
    /// on first use).
    Token {
        /// Principal to bind this identity to on its first token (default:
        /// the agent id). Fixed afterwards.
        #[arg(long)]
        principal: Option<String>,
    },
    /// Buyer: open a sha256_nonce.v1 job (JOB_OPEN) with the published
    /// policy embedded and an authority covering the budget.
    Open(OpenArgs),
    /// Provider: offer to do a job for a price (≤ its budget).
    Offer {
        transaction_id: String,
        /// Price in GTU (default: the job's budget).
        #[arg(long)]
        price: Option<i64>,
        /// Seconds the offer stays open (capped at the job's deadline).
        #[arg(long, default_value_t = 600)]
        expires_in: i64,
    },
    /// Buyer: decline an offer.
    Decline {
        transaction_id: String,
        offer_hash: String,
    },
    /// Buyer: lock the deal for one offer (DEAL_LOCK); the provider then
    /// confirms the same DealHash.
    Lock {
        transaction_id: String,
        offer_hash: String,
    },
    /// Provider: confirm the deal the buyer locked (DEAL_CONFIRM). The deal
    /// is recomputed here and must name your offer and pay you.
    Confirm { transaction_id: String },
    /// Buyer: fund the locked deal (FUND); the GTU stay reserved for that
    /// deal until settlement or refund.
    Fund { transaction_id: String },
    /// Provider: deliver a nonce and digest (DELIVER). Without --nonce the
    /// nonce is solved here first.
    Deliver(DeliverArgs),
    /// A transaction with its full history (offers, deal, funding,
    /// delivery, verification, every event with its hash).
    Show { transaction_id: String },
    /// Jobs on the market (open ones; --all adds finished ones).
    List {
        #[arg(long)]
        all: bool,
    },
    /// This principal's GTU balance.
    Balance,
    /// Recompute a transaction's event chain here: every event hash, link
    /// and sequence number. Exits 1 when anything does not match.
    VerifyChain { transaction_id: String },
    /// Export a transaction as a signed bundle anyone can check offline.
    ///
    /// palaver's own kind (`palaver-gtl-transaction`; the reference has
    /// none): the transaction as the market shows it, its chain checked
    /// first, signed with this data dir's key. `palaver session replay
    /// verify FILE` checks it again (signature, inventory, every event hash
    /// and link, the state it ends in).
    /// Example: palaver market bundle tx_42 --output tx_42.zip
    Bundle {
        transaction_id: String,
        /// Where to write the bundle (refused if it exists, unless --force).
        #[arg(long, value_name = "FILE")]
        output: std::path::PathBuf,
        /// Replace --output if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Solve a sha256_nonce.v1 puzzle locally (no server).
    Solve {
        #[arg(long)]
        prefix: String,
        #[arg(long)]
        target: String,
        /// Worker threads (default: every core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Provider bot: watch the market, offer on sha256_nonce.v1 jobs whose
    /// budget covers the price, confirm locked deals, solve funded ones on
    /// every core and deliver.
    Bot(BotArgs),
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// Transaction id (^[a-z0-9_]{1,64}$; default: a random job_… id).
    #[arg(long = "id")]
    pub transaction_id: Option<String>,
    /// The puzzle prefix (default: "palaver|<transaction id>", which binds
    /// a solution to this job).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Hex digits the digest must start with (1 to 8).
    #[arg(long, default_value = "0000")]
    pub target: String,
    /// Budget in whole GTU.
    #[arg(long, default_value_t = 15)]
    pub budget: i64,
    /// Seconds until the deadline.
    #[arg(long, default_value_t = 3600)]
    pub deadline_in: i64,
    /// Send this JSON file as the JOB_OPEN message instead (it is signed
    /// here; nothing in it is filled in).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prefix", "target", "budget"])]
    pub file: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct DeliverArgs {
    pub transaction_id: String,
    #[arg(long, requires = "digest")]
    pub nonce: Option<u64>,
    /// The digest to claim (with --nonce).
    #[arg(long, requires = "nonce")]
    pub digest: Option<String>,
    /// Solver threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
pub struct BotArgs {
    /// Price to ask (default: each job's budget). Jobs whose budget is
    /// below it are skipped.
    #[arg(long)]
    pub price: Option<i64>,
    /// Skip jobs whose target is longer than this many hex digits.
    #[arg(long, default_value_t = 6)]
    pub max_target_hex: usize,
    /// Solver threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Milliseconds between looks at the market.
    #[arg(long, default_value_t = 300)]
    pub poll_ms: u64,
    /// Exit after this many of its transactions reached a terminal state.
    #[arg(long)]
    pub jobs: Option<usize>,
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

async fn connect(ctx: &Ctx, principal: Option<&str>) -> Result<MarketClient> {
    let url = server_url(ctx)?;
    let keys = KeyPair::load(&ctx.data_dir()?)?;
    MarketClient::connect(&url, keys, principal).await.context(
        "getting this identity's market token (is it registered? palaver register --nickname NAME)",
    )
}

/// Prints an answer (JSON or one human line) or a market refusal.
fn answer<T: serde::Serialize>(
    ctx: &Ctx,
    r: Result<T, MarketClientError>,
    human: impl FnOnce(&T) -> String,
) -> Result<Outcome> {
    match r {
        Ok(v) => {
            if ctx.json {
                ctx.print_json(&v)?;
            } else {
                println!("{}", human(&v));
            }
            Ok(Outcome::Ok)
        }
        Err(MarketClientError::Rejected {
            status,
            code,
            message,
            body,
            ..
        }) => {
            if ctx.json {
                ctx.print_json(&body)?;
            } else {
                eprintln!("refused (HTTP {status} {code}): {message}");
                for f in body
                    .get("missing_fields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    eprintln!("  missing  {}", f.py_str());
                }
                for f in body
                    .get("invalid_fields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    eprintln!(
                        "  invalid  {}: {}",
                        f.get_str("path").unwrap_or(""),
                        f.get_str("reason").unwrap_or("")
                    );
                }
            }
            Ok(Outcome::Rejected)
        }
        Err(e) => Err(e.into()),
    }
}

fn hashes(v: &Value) -> String {
    v.get("hashes")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .map(|(k, x)| format!("{k}={}", x.py_str()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

pub fn run(ctx: &Ctx, cmd: MarketCmd) -> Result<Outcome> {
    if let MarketCmd::Solve {
        prefix,
        target,
        threads: t,
    } = &cmd
    {
        let start = std::time::Instant::now();
        let sol = policy::solve(prefix, target, 0, threads(*t), &AtomicBool::new(false))
            .ok_or_else(|| anyhow!("no nonce up to 2^53−1 (or the target is not lowercase hex)"))?;
        let v = Value::Object(
            crate::obj! { "nonce" => sol.nonce as i64, "digest" => sol.digest.as_str(), "seconds" => start.elapsed().as_secs_f64() },
        );
        return answer(ctx, Ok(v), |_| {
            format!("nonce {} digest {}", sol.nonce, sol.digest)
        });
    }
    runtime()?.block_on(async move {
        match cmd {
            MarketCmd::Token { principal } => {
                let c = connect(ctx, principal.as_deref()).await?;
                let v = Value::Object(crate::obj! { "token" => c.token(), "principal_id" => c.principal_id(), "agent_id" => c.agent_id() });
                answer(ctx, Ok(v), |_| format!("principal {} (agent {})\ntoken {}", c.principal_id(), c.agent_id(), c.token()))
            }
            MarketCmd::Open(a) => open(ctx, a).await,
            MarketCmd::Offer { transaction_id, price, expires_in } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let price = price.unwrap_or(view.budget.amount);
                let r = c.offer_on(&transaction_id, &view.job_hash, &view.deadline, price, expires_in * 1000).await;
                answer(ctx, r, |v| format!("{} {} {}", v.get_str("transaction_id").unwrap_or(""), v.get_str("state").unwrap_or(""), hashes(v)))
            }
            MarketCmd::Decline { transaction_id, offer_hash } => {
                let c = connect(ctx, None).await?;
                answer(ctx, c.post(crate::market::messages::offer_decline(&transaction_id, &offer_hash)).await, |v| format!("{} {}", v.get_str("transaction_id").unwrap_or(""), v.get_str("state").unwrap_or("")))
            }
            MarketCmd::Lock { transaction_id, offer_hash } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                answer(ctx, c.lock_deal(&view, &offer_hash).await, |v| {
                    format!("{} {} {} (waiting for the provider's confirm)", v.get_str("transaction_id").unwrap_or(""), v.get_str("state").unwrap_or(""), hashes(v))
                })
            }
            MarketCmd::Confirm { transaction_id } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let r = c.confirm_deal(&view).await.map(|(_, v)| v);
                answer(ctx, r, |v| format!("{} {} {}", v.get_str("transaction_id").unwrap_or(""), v.get_str("state").unwrap_or(""), hashes(v)))
            }
            MarketCmd::Fund { transaction_id } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                answer(ctx, c.fund_deal(&view).await.map(|(_, v)| v), |v| {
                    format!("{} {} commitment {} balance {}", v.get_str("transaction_id").unwrap_or(""), v.get_str("state").unwrap_or(""), v.get_str("funding_commitment_id").unwrap_or(""), v.get("balance").map(Value::py_str).unwrap_or_default())
                })
            }
            MarketCmd::Deliver(a) => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&a.transaction_id).await?;
                let sol = match (a.nonce, a.digest) {
                    (Some(nonce), Some(digest)) => Solution { nonce, digest },
                    _ => {
                        let (prefix, target) = view.input();
                        policy::solve(&prefix, &target, 0, threads(a.threads), &AtomicBool::new(false))
                            .ok_or_else(|| anyhow!("no nonce found for target {target:?}"))?
                    }
                };
                answer(ctx, c.deliver_solution(&view, &sol).await, |v| format!("{} {} {} {}", v.get_str("transaction_id").unwrap_or(""), v.get_str("result").unwrap_or(""), v.get_str("state").unwrap_or(""), hashes(v)))
            }
            MarketCmd::Show { transaction_id } => {
                let c = connect(ctx, None).await?;
                answer(ctx, c.transaction(&transaction_id).await, timeline)
            }
            MarketCmd::List { all } => {
                let c = connect(ctx, None).await?;
                let jobs = c.market(all).await?;
                answer(ctx, Ok(jobs), |jobs| {
                    let mut out = format!("{:<24} {:<12} {:>7}  {:<24}  {:<8} {}", "TRANSACTION", "STATE", "BUDGET", "DEADLINE", "TARGET", "OFFERS");
                    for j in jobs {
                        let (_, target) = j.input();
                        out.push_str(&format!(
                            "\n{:<24} {:<12} {:>7}  {:<24}  {:<8} {}",
                            j.transaction_id, j.state.as_str(), j.budget.amount, j.deadline, target, j.live_offers
                        ));
                    }
                    out
                })
            }
            MarketCmd::Balance => {
                let c = connect(ctx, None).await?;
                let b = c.balance().await?;
                let v = Value::Object(crate::obj! { "principal_id" => c.principal_id(), "balance" => b, "asset" => "GTU" });
                answer(ctx, Ok(v), |_| format!("{} GTU ({})", b, c.principal_id()))
            }
            MarketCmd::Bundle {
                transaction_id,
                output,
                force,
            } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let data_dir = ctx.data_dir()?;
                let key = KeyPair::load(&data_dir).with_context(|| {
                    format!("loading the signing key from {}", data_dir.display())
                })?;
                let m = crate::market::bundle::export(&view, &output, &key, force)?;
                let line = format!(
                    "[OK] transaction bundle: {}\nbundle_id: {}",
                    m.get_str("output").unwrap_or_default(),
                    m.get_str("bundle_id").unwrap_or_default()
                );
                answer(ctx, Ok(Value::Object(m)), |_| line)
            }
            MarketCmd::VerifyChain { transaction_id } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let r = crate::market::verify_chain_value(&view);
                let v = Value::Object(crate::obj! {
                    "transaction_id" => r.transaction_id.as_str(), "ok" => r.ok(), "events" => r.events, "head" => r.head.as_str(),
                    "problems" => Value::Array(r.problems.iter().map(|p| Value::from(p.as_str())).collect()),
                });
                answer(ctx, Ok(v), |_| {
                    if r.ok() {
                        format!("{}: chain of {} events verifies, head {}", r.transaction_id, r.events, r.head)
                    } else {
                        format!("{}: chain BROKEN\n  {}", r.transaction_id, r.problems.join("\n  "))
                    }
                })?;
                Ok(if r.ok() { Outcome::Ok } else { Outcome::Rejected })
            }
            MarketCmd::Bot(a) => bot(ctx, a).await,
            MarketCmd::Solve { .. } => Ok(Outcome::Ok),
        }
    })
}

fn timeline(v: &TransactionView) -> String {
    let mut out = format!(
        "{}  {}  budget {} GTU  deadline {}\n  job_hash    {}\n  policy_hash {}\n  buyer       {}",
        v.transaction_id,
        v.state,
        v.budget.amount,
        v.deadline,
        v.job_hash,
        v.verification_policy_hash,
        v.buyer_principal
    );
    for o in &v.offers {
        out.push_str(&format!(
            "\n  offer {} {} GTU by {} ({})",
            o.offer_hash, o.price, o.provider_principal, o.status
        ));
    }
    if let Some(d) = &v.deal {
        out.push_str(&format!(
            "\n  deal  {} confirmed={}",
            d.deal_hash,
            if d.confirmed { "True" } else { "False" }
        ));
    }
    out.push_str("\n  events:");
    for e in &v.events {
        out.push_str(&format!(
            "\n  {:>3} {:<13} {:<12} {}  {}",
            e.seq,
            e.kind.as_str(),
            e.state_after.as_str(),
            format_rfc3339_utc(e.at),
            e.event_hash
        ));
    }
    out
}

async fn open(ctx: &Ctx, a: OpenArgs) -> Result<Outcome> {
    let c = connect(ctx, None).await?;
    let msg = match &a.file {
        Some(f) => {
            let text = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            match canonical::parse_strict(&text).with_context(|| f.display().to_string())? {
                Value::Object(m) => m,
                _ => {
                    return Err(anyhow!(
                        "{}: a JOB_OPEN message is a JSON object",
                        f.display()
                    ));
                }
            }
        }
        None => {
            let ask = JobAsk {
                transaction_id: a.transaction_id.as_deref(),
                prefix: a.prefix.as_deref(),
                target: &a.target,
                budget: a.budget,
                deadline_ms: system_ms() + a.deadline_in * 1000,
            };
            return answer(ctx, c.open_job(&ask).await.map(|(_, v)| v), |v| {
                format!(
                    "{} {} {}",
                    v.get_str("transaction_id").unwrap_or(""),
                    v.get_str("state").unwrap_or(""),
                    hashes(v)
                )
            });
        }
    };
    answer(ctx, c.post(msg).await, |v| {
        format!(
            "{} {} {}",
            v.get_str("transaction_id").unwrap_or(""),
            v.get_str("state").unwrap_or(""),
            hashes(v)
        )
    })
}

async fn bot(ctx: &Ctx, a: BotArgs) -> Result<Outcome> {
    let c = connect(ctx, None).await?;
    let o = crate::market::bot::BotOptions {
        price: a.price,
        max_target_hex: a.max_target_hex,
        threads: threads(a.threads),
        poll: std::time::Duration::from_millis(a.poll_ms),
        jobs: a.jobs,
    };
    eprintln!(
        "market bot {}: watching for sha256_nonce.v1 jobs ({} solver threads)",
        c.principal_id(),
        o.threads
    );
    let json = ctx.json;
    let report = move |e: crate::market::bot::BotEvent| {
        eprintln!("{e}");
        if let (
            true,
            crate::market::bot::BotEvent::Ended {
                transaction_id,
                state,
            },
        ) = (json, &e)
        {
            println!(
                "{}",
                crate::json::canonical::to_string_ordered(&Value::Object(crate::obj! {
                    "transaction_id" => transaction_id.as_str(), "state" => state.as_str(),
                }))
            );
        }
    };
    crate::market::bot::run(&c, &o, &report).await?;
    Ok(Outcome::Ok)
}
