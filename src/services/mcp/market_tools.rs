//! The market tools: each one step of `palaver market …`, through the
//! same [`MarketClient`] and the same workflow, so it posts the message the
//! CLI would post and gets the answer REST would give.

use super::{Answer, MarketSource, Refusal, args, from_json, to_json, tool};
use crate::market::MarketClient;
use crate::market::policy::{self, Solution};
use crate::market::time::system_ms;
use crate::market::workflow::JobAsk;
use rmcp::RoleServer;
use rmcp::model::{JsonObject, Tool};
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use std::sync::atomic::AtomicBool;

/// Longest deadline a job may be opened with, seconds from now (a week).
pub const MAX_DEADLINE_S: u32 = 7 * 24 * 3600;
/// Longest an offer may stay open, seconds.
pub const MAX_OFFER_OPEN_S: u32 = 24 * 3600;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct JobsArgs {
    /// Also list finished jobs.
    #[serde(default)]
    all: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OpenArgs {
    /// The policy's difficulty: the SHA-256 digest of prefix+nonce must be
    /// at most this (lowercase hex, e.g. "0000ffff").
    target: String,
    /// The most this job pays, GTU.
    #[schemars(range(min = 1))]
    budget: i64,
    /// Seconds from now until the job's deadline (1 to 604800; default 600).
    #[serde(default = "default_deadline")]
    #[schemars(range(min = 1, max = 604800))]
    deadline_in_s: u32,
    /// The input prefix (default `palaver|<transaction id>`).
    #[serde(default)]
    prefix: Option<String>,
    /// The transaction id (default a fresh `job_…`).
    #[serde(default)]
    transaction_id: Option<String>,
}

fn default_deadline() -> u32 {
    600
}

fn default_open() -> u32 {
    300
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TxArgs {
    /// The transaction (job) id, e.g. job_0123456789ab.
    transaction_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OfferArgs {
    transaction_id: String,
    /// The price asked, GTU (default: the job's budget).
    #[serde(default)]
    #[schemars(range(min = 1))]
    price: Option<i64>,
    /// Seconds the offer stays open, never past the job's deadline (1 to
    /// 86400; default 300).
    #[serde(default = "default_open")]
    #[schemars(range(min = 1, max = 86400))]
    open_s: u32,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OfferRefArgs {
    transaction_id: String,
    /// The offer's OfferHash, as market_offers lists it.
    offer_hash: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeliverArgs {
    transaction_id: String,
    /// A nonce solving the job. Required on `palaver serve`'s entry; over
    /// `palaver mcp`, without one the nonce is solved here first.
    #[serde(default)]
    nonce: Option<u64>,
    /// The hex SHA-256 digest of prefix+nonce (with `nonce`).
    #[serde(default)]
    digest: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SubmitArgs {
    /// A whole GTL 0.2 message (`type`, `transaction_id`, its body); it is
    /// signed with this principal's bearer token and posted as given.
    message: JsonObject,
}

/// What `POST /api/gtl` answers on success.
fn answer_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "transaction_id": {"type": "string"},
            "state": {"type": "string"},
            "hashes": {"type": "object"},
            "event_seq": {"type": "integer"}
        },
        "required": ["ok"]
    })
}

fn view_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "transaction_id": {"type": "string"},
            "state": {"type": "string"},
            "terminal": {"type": "boolean"},
            "job_hash": {"type": "string"},
            "offers": {"type": "array"},
            "events": {"type": "array"}
        },
        "required": ["transaction_id", "state", "events"]
    })
}

/// The market tools, in the order a transaction uses them.
pub fn catalogue() -> Vec<Tool> {
    vec![
        tool::<NoArgs>(
            "market_policy",
            "The market's published verification policy (sha256_nonce.v1), its PolicyHash and the JobSpec/message JSON Schema (GET /api/gtl/policies/{id}, GET /api/gtl/schema).",
            json!({"type": "object", "properties": {"policy": {"type": "object"}, "policy_hash": {"type": "string"}, "schema": {"type": "object"}}, "required": ["policy", "policy_hash", "schema"]}),
        ),
        tool::<JobsArgs>(
            "market_jobs",
            "Open jobs, newest first (all jobs with all=true), each with its JobSpec, JobHash, deadline, budget and live offers (GET /api/market).",
            json!({"type": "object", "properties": {"jobs": {"type": "array"}, "policy_hash": {"type": "string"}}, "required": ["jobs"]}),
        ),
        tool::<OpenArgs>(
            "market_open_job",
            "Buyer: open a sha256_nonce.v1 job (JOB_OPEN) with an authority covering the budget until the deadline. Answers the transaction id, state and hashes.",
            answer_schema(),
        ),
        tool::<TxArgs>(
            "market_offers",
            "The offers on a job: OfferHash, provider, price, status.",
            json!({"type": "object", "properties": {"transaction_id": {"type": "string"}, "state": {"type": "string"}, "offers": {"type": "array"}}, "required": ["transaction_id", "offers"]}),
        ),
        tool::<OfferArgs>(
            "market_offer",
            "Provider: OFFER a price on a job (default its budget), open for open_s seconds but never past the deadline.",
            answer_schema(),
        ),
        tool::<OfferRefArgs>(
            "market_decline",
            "Buyer: OFFER_DECLINE one offer on your job.",
            answer_schema(),
        ),
        tool::<OfferRefArgs>(
            "market_lock",
            "Buyer: DEAL_LOCK on an offer (the deal computed from the transaction and checked against the offer); the provider then confirms.",
            answer_schema(),
        ),
        tool::<TxArgs>(
            "market_confirm",
            "Provider: DEAL_CONFIRM the deal the buyer locked on your offer (checked to name you and pay your price).",
            answer_schema(),
        ),
        tool::<TxArgs>(
            "market_fund",
            "Buyer: FUND the confirmed deal for its amount from your GTU balance.",
            answer_schema(),
        ),
        tool::<DeliverArgs>(
            "market_deliver",
            "Provider: DELIVER a solution of a funded job (the market verifies it and settles or refunds).",
            answer_schema(),
        ),
        tool::<TxArgs>(
            "market_transaction",
            "A transaction with its whole history: job, offers, deal, funding, delivery, verification and every event with its hash (GET /api/gtl/transactions/{id}).",
            view_schema(),
        ),
        tool::<TxArgs>(
            "market_verify",
            "Recompute a transaction's event hash chain: ok, the number of events, the head hash and any problem found.",
            json!({"type": "object", "properties": {"transaction_id": {"type": "string"}, "ok": {"type": "boolean"}, "events": {"type": "integer"}, "head": {"type": "string"}, "problems": {"type": "array", "items": {"type": "string"}}}, "required": ["transaction_id", "ok", "events", "head", "problems"]}),
        ),
        tool::<NoArgs>(
            "market_balance",
            "Your principal's GTU balance (sandbox units, not currency).",
            json!({"type": "object", "properties": {"principal_id": {"type": "string"}, "balance": {"type": "integer"}, "asset": {"type": "string"}}, "required": ["principal_id", "balance", "asset"]}),
        ),
        tool::<SubmitArgs>(
            "market_submit",
            "Post one GTL message as given, signed with your bearer token: what POST /api/gtl does. The hard gate's missing_fields and invalid_fields come back in the refusal.",
            answer_schema(),
        ),
    ]
}

fn ser(v: &impl serde::Serialize) -> Answer {
    serde_json::to_value(v).map_err(|e| Refusal::new("unexpected", e.to_string()))
}

/// Runs market tool `name`; `None` when it is not one.
pub async fn call(
    source: &MarketSource,
    name: &str,
    a: Option<JsonObject>,
    ctx: &RequestContext<RoleServer>,
) -> Option<Answer> {
    if !name.starts_with("market_") || !catalogue().iter().any(|t| t.name == name) {
        return None;
    }
    Some(run(source, name, a, ctx).await)
}

async fn run(
    source: &MarketSource,
    name: &str,
    a: Option<JsonObject>,
    ctx: &RequestContext<RoleServer>,
) -> Answer {
    // Arguments first: a malformed call is refused before any connection.
    match name {
        "market_jobs" => {
            let j: JobsArgs = args(name, a)?;
            let c = source.client(ctx).await?;
            let jobs = c.market(j.all).await?;
            return Ok(json!({ "jobs": ser(&jobs)?, "policy_hash": policy::policy_hash() }));
        }
        "market_open_job" => {
            let o: OpenArgs = args(name, a)?;
            if !(1..=MAX_DEADLINE_S).contains(&o.deadline_in_s) {
                return Err(Refusal::args(
                    name,
                    format!(
                        "deadline_in_s must be 1 to {MAX_DEADLINE_S}, not {}",
                        o.deadline_in_s
                    ),
                ));
            }
            let c = source.client(ctx).await?;
            let ask = JobAsk {
                transaction_id: o.transaction_id.as_deref(),
                prefix: o.prefix.as_deref(),
                target: &o.target,
                budget: o.budget,
                deadline_ms: system_ms() + i64::from(o.deadline_in_s) * 1000,
            };
            let (_, v) = c.open_job(&ask).await?;
            return Ok(to_json(&v));
        }
        "market_offer" => {
            let o: OfferArgs = args(name, a)?;
            if !(1..=MAX_OFFER_OPEN_S).contains(&o.open_s) {
                return Err(Refusal::args(
                    name,
                    format!("open_s must be 1 to {MAX_OFFER_OPEN_S}, not {}", o.open_s),
                ));
            }
            let c = source.client(ctx).await?;
            let view = c.transaction(&o.transaction_id).await?;
            let price = o.price.unwrap_or(view.budget.amount);
            let v = c
                .offer_on(
                    &o.transaction_id,
                    &view.job_hash,
                    &view.deadline,
                    price,
                    i64::from(o.open_s) * 1000,
                )
                .await?;
            return Ok(to_json(&v));
        }
        "market_decline" | "market_lock" => {
            let o: OfferRefArgs = args(name, a)?;
            let c = source.client(ctx).await?;
            let v = if name == "market_decline" {
                c.post(crate::market::messages::offer_decline(
                    &o.transaction_id,
                    &o.offer_hash,
                ))
                .await?
            } else {
                let view = c.transaction(&o.transaction_id).await?;
                c.lock_deal(&view, &o.offer_hash).await?
            };
            return Ok(to_json(&v));
        }
        "market_deliver" => {
            let d: DeliverArgs = args(name, a)?;
            let c = source.client(ctx).await?;
            let view = c.transaction(&d.transaction_id).await?;
            let sol = match (d.nonce, d.digest) {
                (Some(nonce), Some(digest)) => Solution { nonce, digest },
                (Some(_), None) | (None, Some(_)) => {
                    return Err(Refusal::args(name, "nonce and digest go together"));
                }
                (None, None) if source.in_process() => {
                    return Err(Refusal::args(
                        name,
                        "this entry does not solve jobs: give the nonce and its digest",
                    ));
                }
                (None, None) => {
                    let (prefix, target) = view.input();
                    let threads = std::thread::available_parallelism().map_or(1, usize::from);
                    tokio::task::spawn_blocking(move || {
                        policy::solve(&prefix, &target, 0, threads, &AtomicBool::new(false))
                    })
                    .await
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        Refusal::new("unsolvable", "no nonce found for the job's target")
                    })?
                }
            };
            return Ok(to_json(&c.deliver_solution(&view, &sol).await?));
        }
        "market_submit" => {
            let s: SubmitArgs = args(name, a)?;
            let msg = match from_json(&Json::Object(s.message)) {
                Ok(crate::json::Value::Object(m)) => m,
                Ok(_) => return Err(Refusal::args(name, "message must be a JSON object")),
                Err(e) => return Err(Refusal::args(name, e)),
            };
            let c = source.client(ctx).await?;
            return Ok(to_json(&c.post(msg).await?));
        }
        _ => {}
    }
    // The tools that take a transaction id and nothing else.
    let t: TxArgs = match name {
        "market_policy" | "market_balance" => {
            args::<NoArgs>(name, a)?;
            TxArgs {
                transaction_id: String::new(),
            }
        }
        _ => args(name, a)?,
    };
    let c: MarketClient = source.client(ctx).await?;
    match name {
        "market_policy" => Ok(json!({
            "policy": to_json(&c.policy(policy::POLICY_ID).await?),
            "policy_hash": policy::policy_hash(),
            "schema": to_json(&c.schema().await?),
        })),
        "market_balance" => {
            let b = c.balance().await?;
            Ok(json!({ "principal_id": c.principal_id(), "balance": b, "asset": "GTU" }))
        }
        "market_offers" => {
            let v = c.transaction(&t.transaction_id).await?;
            Ok(
                json!({ "transaction_id": v.transaction_id, "state": v.state.as_str(), "offers": ser(&v.offers)? }),
            )
        }
        "market_confirm" => {
            let v = c.transaction(&t.transaction_id).await?;
            Ok(to_json(&c.confirm_deal(&v).await?.1))
        }
        "market_fund" => {
            let v = c.transaction(&t.transaction_id).await?;
            Ok(to_json(&c.fund_deal(&v).await?.1))
        }
        "market_transaction" => ser(&c.transaction(&t.transaction_id).await?),
        "market_verify" => {
            let v = c.transaction(&t.transaction_id).await?;
            let r = crate::market::verify_chain_value(&v);
            Ok(json!({
                "transaction_id": r.transaction_id, "ok": r.ok(), "events": r.events,
                "head": r.head, "problems": r.problems,
            }))
        }
        other => Err(Refusal::new(
            "unknown_tool",
            format!("no market tool {other}"),
        )),
    }
}
