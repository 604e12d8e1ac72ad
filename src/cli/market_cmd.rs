//! `palaver market …`: the GTL 0.2 market as a buyer, a provider, an
//! auditor, and the provider bot.

use super::community_cmd::{runtime, server_url};
use super::{Ctx, Outcome};
use crate::identity::KeyPair;
use crate::json::Value;
use crate::market::messages::{self, JobRequest};
use crate::market::time::{format_rfc3339_utc, system_ms};
use crate::market::{MarketClient, MarketClientError, canonical, policy};
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

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Prints an answer (JSON or one human line) or a market refusal.
fn answer(
    ctx: &Ctx,
    r: Result<Value, MarketClientError>,
    human: impl FnOnce(&Value) -> String,
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
                    eprintln!("  invalid  {}: {}", s(f, "path"), s(f, "reason"));
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
                let budget = view.get("budget").and_then(|b| b.get("amount")).and_then(Value::as_i64).unwrap_or(0);
                let deadline = crate::market::time::parse_rfc3339_utc(s(&view, "deadline")).unwrap_or(0);
                let expires = (system_ms() + expires_in * 1000).min(deadline);
                let msg = messages::offer(&transaction_id, s(&view, "job_hash"), price.unwrap_or(budget), expires, c.principal_id(), c.agent_id());
                answer(ctx, c.post(msg).await, |v| format!("{} {} {}", s(v, "transaction_id"), s(v, "state"), hashes(v)))
            }
            MarketCmd::Decline { transaction_id, offer_hash } => {
                let c = connect(ctx, None).await?;
                answer(ctx, c.post(messages::offer_decline(&transaction_id, &offer_hash)).await, |v| format!("{} {}", s(v, "transaction_id"), s(v, "state")))
            }
            MarketCmd::Lock { transaction_id, offer_hash } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let deal = messages::deal_for(&view, &offer_hash).map_err(|e| anyhow!(e))?;
                answer(ctx, c.post(messages::deal_lock(&transaction_id, deal)).await, |v| {
                    format!("{} {} {} (waiting for the provider's confirm)", s(v, "transaction_id"), s(v, "state"), hashes(v))
                })
            }
            MarketCmd::Confirm { transaction_id } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let dh = checked_deal(&view, c.principal_id())?;
                answer(ctx, c.post(messages::deal_confirm(&transaction_id, &dh)).await, |v| format!("{} {} {}", s(v, "transaction_id"), s(v, "state"), hashes(v)))
            }
            MarketCmd::Fund { transaction_id } => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&transaction_id).await?;
                let deal = view.get("deal").filter(|d| !d.is_null()).ok_or_else(|| anyhow!("{transaction_id} has no deal yet"))?;
                let amount = deal.get("amount").and_then(Value::as_i64).unwrap_or(0);
                answer(ctx, c.post(messages::fund(&transaction_id, s(&view, "deal_hash"), amount)).await, |v| {
                    format!("{} {} commitment {} balance {}", s(v, "transaction_id"), s(v, "state"), s(v, "funding_commitment_id"), v.get("balance").map(Value::py_str).unwrap_or_default())
                })
            }
            MarketCmd::Deliver(a) => {
                let c = connect(ctx, None).await?;
                let view = c.transaction(&a.transaction_id).await?;
                let (prefix, target) = input(&view);
                let (nonce, digest) = match (a.nonce, a.digest) {
                    (Some(n), Some(d)) => (n, d),
                    _ => {
                        let sol = policy::solve(&prefix, &target, 0, threads(a.threads), &AtomicBool::new(false))
                            .ok_or_else(|| anyhow!("no nonce found for target {target:?}"))?;
                        (sol.nonce, sol.digest)
                    }
                };
                let msg = messages::deliver(&a.transaction_id, s(&view, "deal_hash"), &prefix, nonce, &digest);
                answer(ctx, c.post(msg).await, |v| format!("{} {} {} {}", s(v, "transaction_id"), s(v, "result"), s(v, "state"), hashes(v)))
            }
            MarketCmd::Show { transaction_id } => {
                let c = connect(ctx, None).await?;
                answer(ctx, c.transaction(&transaction_id).await, timeline)
            }
            MarketCmd::List { all } => {
                let c = connect(ctx, None).await?;
                let jobs = c.market(all).await?;
                answer(ctx, Ok(Value::Array(jobs)), |v| {
                    let mut out = format!("{:<24} {:<12} {:>7}  {:<24}  {:<8} {}", "TRANSACTION", "STATE", "BUDGET", "DEADLINE", "TARGET", "OFFERS");
                    for j in v.as_array().into_iter().flatten() {
                        let (_, target) = input(j);
                        out.push_str(&format!(
                            "\n{:<24} {:<12} {:>7}  {:<24}  {:<8} {}",
                            s(j, "transaction_id"), s(j, "state"),
                            j.get("budget").and_then(|b| b.get("amount")).map(Value::py_str).unwrap_or_default(),
                            s(j, "deadline"), target, j.get("live_offers").map(Value::py_str).unwrap_or_default()
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

use crate::market::bot::input;

/// The pending deal's hash after checking it matches `me`'s offer.
fn checked_deal(view: &Value, me: &str) -> Result<String> {
    crate::market::bot::checked_deal(view, me).map_err(anyhow::Error::msg)
}

fn timeline(v: &Value) -> String {
    let mut out = format!(
        "{}  {}  budget {} GTU  deadline {}\n  job_hash    {}\n  policy_hash {}\n  buyer       {}",
        s(v, "transaction_id"),
        s(v, "state"),
        v.get("budget")
            .and_then(|b| b.get("amount"))
            .map(Value::py_str)
            .unwrap_or_default(),
        s(v, "deadline"),
        s(v, "job_hash"),
        s(v, "verification_policy_hash"),
        s(v, "buyer_principal")
    );
    for o in v
        .get("offers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push_str(&format!(
            "\n  offer {} {} GTU by {} ({})",
            s(o, "offer_hash"),
            o.get("price").map(Value::py_str).unwrap_or_default(),
            s(o, "provider_principal"),
            s(o, "status")
        ));
    }
    if let Some(d) = v.get("deal").filter(|d| !d.is_null()) {
        out.push_str(&format!(
            "\n  deal  {} confirmed={}",
            s(d, "deal_hash"),
            d.get("confirmed").map(Value::py_str).unwrap_or_default()
        ));
    }
    out.push_str("\n  events:");
    for e in v
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push_str(&format!(
            "\n  {:>3} {:<13} {:<12} {}  {}",
            e.get("seq").map(Value::py_str).unwrap_or_default(),
            s(e, "kind"),
            s(e, "state_after"),
            format_rfc3339_utc(e.get("at").and_then(Value::as_i64).unwrap_or(0)),
            s(e, "event_hash")
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
            let txid = a.transaction_id.clone().unwrap_or_else(|| {
                format!("job_{}", crate::canonical::hex(&rand::random::<[u8; 6]>()))
            });
            let prefix = a
                .prefix
                .clone()
                .unwrap_or_else(|| format!("palaver|{txid}"));
            messages::job_open(&JobRequest {
                transaction_id: &txid,
                prefix: &prefix,
                target: &a.target,
                budget: a.budget,
                deadline_ms: system_ms() + a.deadline_in * 1000,
                principal_id: c.principal_id(),
                agent_id: c.agent_id(),
            })
        }
    };
    answer(ctx, c.post(msg).await, |v| {
        format!("{} {} {}", s(v, "transaction_id"), s(v, "state"), hashes(v))
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
                crate::canonical::to_string_ordered(&Value::Object(crate::obj! {
                    "transaction_id" => transaction_id.as_str(), "state" => state.as_str(),
                }))
            );
        }
    };
    crate::market::bot::run(&c, &o, &report).await?;
    Ok(Outcome::Ok)
}
