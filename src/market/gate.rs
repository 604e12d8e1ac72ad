//! The JOB_OPEN hard gate: every missing or invalid field of a JobSpec is
//! collected (never only the first), with its dotted path, before anything
//! is written.

use super::policy;
use super::{FieldError, MarketConfig, Principal};
use crate::json::{Map, Value};
use crate::utc::parse_rfc3339_utc;

/// What the gate learned about a JobSpec that passed it.
#[derive(Debug, Clone)]
pub struct GatedJob {
    pub transaction_id: String,
    pub task_type: String,
    pub deadline_ms: i64,
    pub budget: i64,
    pub asset: String,
}

/// The checks' findings so far.
#[derive(Default)]
struct Findings {
    missing: Vec<String>,
    invalid: Vec<FieldError>,
}

impl Findings {
    fn missing(&mut self, path: &str) {
        self.missing.push(path.to_owned());
    }
    fn invalid(&mut self, path: &str, reason: impl Into<String>) {
        self.invalid.push(FieldError {
            path: path.to_owned(),
            reason: reason.into(),
        });
    }
    /// The member at `key` of `m`, recording it missing when absent or null.
    fn get<'a>(&mut self, m: &'a Map, key: &str, path: &str) -> Option<&'a Value> {
        match m.get(key) {
            None | Some(Value::Null) => {
                self.missing(path);
                None
            }
            Some(v) => Some(v),
        }
    }
    fn object<'a>(&mut self, m: &'a Map, key: &str, path: &str) -> Option<&'a Map> {
        let v = self.get(m, key, path)?;
        let o = v.as_object();
        if o.is_none() {
            self.invalid(path, format!("must be an object, not {}", v.type_name()));
        }
        o
    }
    fn string<'a>(&mut self, m: &'a Map, key: &str, path: &str) -> Option<&'a str> {
        let v = self.get(m, key, path)?;
        match v.as_str() {
            Some("") => {
                self.invalid(path, "must not be empty");
                None
            }
            Some(s) => Some(s),
            None => {
                self.invalid(path, format!("must be a string, not {}", v.type_name()));
                None
            }
        }
    }
    fn unknown(&mut self, m: &Map, allowed: &[&str], path: &str) {
        for k in m.keys() {
            if !allowed.contains(&k) {
                let p = if path.is_empty() {
                    k.to_owned()
                } else {
                    format!("{path}.{k}")
                };
                self.invalid(
                    &p,
                    "unknown field (signed objects carry only the GTL 0.2 fields)",
                );
            }
        }
    }
    /// `{amount, asset}` with amount a positive integer.
    fn amount(&mut self, m: &Map, key: &str, path: &str) -> Option<(i64, String)> {
        let o = self.object(m, key, path)?;
        self.unknown(o, &["amount", "asset"], path);
        let ap = format!("{path}.amount");
        let amount = match self.get(o, "amount", &ap) {
            Some(v) => match v.as_i64().filter(|_| v.is_integer()) {
                Some(a) if a > 0 => Some(a),
                Some(_) => {
                    self.invalid(&ap, "must be > 0");
                    None
                }
                None => {
                    self.invalid(&ap, "must be an integer (whole GTU)");
                    None
                }
            },
            None => None,
        };
        let asset = self.string(o, "asset", &format!("{path}.asset"));
        if let Some(a) = asset
            && a != "GTU"
        {
            self.invalid(&format!("{path}.asset"), "the sandbox settles in GTU only");
        }
        Some((amount?, asset?.to_owned()))
    }
    fn time(&mut self, m: &Map, key: &str, path: &str) -> Option<i64> {
        let s = self.string(m, key, path)?;
        let t = parse_rfc3339_utc(s);
        if t.is_none() {
            self.invalid(
                path,
                "must be an RFC 3339 UTC time like 2030-01-01T00:00:00.000Z",
            );
        }
        t
    }
}

fn is_hex(s: &str, len: std::ops::RangeInclusive<usize>) -> bool {
    len.contains(&s.len()) && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `id` is a valid transaction id: `^[a-z0-9_]{1,64}$`.
pub fn valid_transaction_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// Runs every check on a JOB_OPEN message from `who` at `now_ms`.
pub fn check_job_open(
    msg: &Map,
    who: &Principal,
    now_ms: i64,
    cfg: &MarketConfig,
) -> Result<GatedJob, (Vec<String>, Vec<FieldError>)> {
    let mut f = Findings::default();
    f.unknown(
        msg,
        &["type", "gtl_version", "transaction_id", "job", "signature"],
        "",
    );
    if let Some(v) = msg.get("gtl_version")
        && v.as_str() != Some("0.2")
    {
        f.invalid("gtl_version", "must be \"0.2\" when present");
    }
    let txid = f.string(msg, "transaction_id", "transaction_id");
    if let Some(t) = txid
        && !valid_transaction_id(t)
    {
        f.invalid("transaction_id", "must match ^[a-z0-9_]{1,64}$");
    }
    let job = f.object(msg, "job", "job");
    let mut out = None;
    if let Some(job) = job {
        out = check_job(job, who, now_ms, cfg, &mut f);
    }
    match (out, txid) {
        (
            Some(JobTerms {
                task_type,
                deadline_ms,
                budget,
                asset,
            }),
            Some(t),
        ) if f.missing.is_empty() && f.invalid.is_empty() => Ok(GatedJob {
            transaction_id: t.to_owned(),
            task_type,
            deadline_ms,
            budget,
            asset,
        }),
        _ => Err((f.missing, f.invalid)),
    }
}

/// What a job that passed the gate commits to (the rest of [`GatedJob`]).
struct JobTerms {
    task_type: String,
    deadline_ms: i64,
    budget: i64,
    asset: String,
}

fn check_job(
    job: &Map,
    who: &Principal,
    now_ms: i64,
    cfg: &MarketConfig,
    f: &mut Findings,
) -> Option<JobTerms> {
    f.unknown(
        job,
        &[
            "task_type",
            "input",
            "task_parameters",
            "deadline",
            "output_format",
            "budget",
            "verification_policy",
            "authority",
        ],
        "job",
    );
    // task_type
    let task_type = f.string(job, "task_type", "job.task_type");
    if let Some(t) = task_type
        && t != policy::POLICY_ID
    {
        f.invalid(
            "job.task_type",
            format!(
                "unknown task type {t:?}: this market verifies {}",
                policy::POLICY_ID
            ),
        );
    }
    // input | task_parameters, exactly one
    let input = match (job.get("input"), job.get("task_parameters")) {
        (Some(_), Some(_)) => {
            f.invalid(
                "job.task_parameters",
                "give input or task_parameters, not both",
            );
            None
        }
        (None, None) => {
            f.missing("job.input");
            None
        }
        (Some(_), None) => f
            .object(job, "input", "job.input")
            .map(|o| (o, "job.input")),
        (None, Some(_)) => f
            .object(job, "task_parameters", "job.task_parameters")
            .map(|o| (o, "job.task_parameters")),
    };
    if let Some((inp, path)) = input {
        f.unknown(inp, &["prefix", "target"], path);
        let pp = format!("{path}.prefix");
        if let Some(p) = f.string(inp, "prefix", &pp)
            && p.len() > cfg.max_prefix_bytes
        {
            f.invalid(&pp, format!("at most {} bytes", cfg.max_prefix_bytes));
        }
        let tp = format!("{path}.target");
        if let Some(t) = f.string(inp, "target", &tp)
            && !is_hex(t, 1..=cfg.max_target_hex)
        {
            f.invalid(
                &tp,
                format!("must be 1 to {} lowercase hex digits", cfg.max_target_hex),
            );
        }
    }
    // deadline
    let deadline = f.time(job, "deadline", "job.deadline");
    if let Some(d) = deadline
        && d <= now_ms + cfg.deadline_margin_ms
    {
        f.invalid(
            "job.deadline",
            format!(
                "deadline_not_future: must be more than {}s after the server's clock",
                cfg.deadline_margin_ms / 1000
            ),
        );
    }
    // output_format
    if let Some(of) = f.get(job, "output_format", "job.output_format") {
        if of.as_object().is_none() {
            f.invalid("job.output_format", "must be a JSON Schema object");
        } else if crate::json::canonical::to_vec(of)
            != crate::json::canonical::to_vec(&policy::output_format())
        {
            f.invalid(
                "job.output_format",
                "must equal verification_policy.output_format of sha256_nonce.v1",
            );
        }
    }
    // budget
    let budget = f.amount(job, "budget", "job.budget");
    // verification_policy
    if let Some(p) = f.get(job, "verification_policy", "job.verification_policy") {
        if p.as_object().is_none() {
            f.invalid(
                "job.verification_policy",
                "must be the complete policy object",
            );
        } else if super::canonical::hash(p).ok() != Some(policy::policy_hash()) {
            f.invalid(
                "job.verification_policy",
                format!(
                    "policy_not_frozen: its PolicyHash must be {} (GET /api/gtl/policies/{} and embed it verbatim)",
                    policy::policy_hash(),
                    policy::POLICY_ID
                ),
            );
        }
    }
    // authority
    if let Some(a) = f.object(job, "authority", "job.authority") {
        f.unknown(
            a,
            &[
                "principal_id",
                "agent_id",
                "mandate_hash",
                "spend_limit",
                "expires_at",
                "permissions",
            ],
            "job.authority",
        );
        if let Some(p) = f.string(a, "principal_id", "job.authority.principal_id")
            && p != who.principal_id
        {
            f.invalid(
                "job.authority.principal_id",
                format!(
                    "authority_unverifiable: your token is bound to principal {}",
                    who.principal_id
                ),
            );
        }
        if let Some(v) = a.get("agent_id")
            && v.as_str() != Some(who.agent_id.as_str())
        {
            f.invalid(
                "job.authority.agent_id",
                format!(
                    "authority_unverifiable: your token's agent is {}",
                    who.agent_id
                ),
            );
        }
        if let Some(m) = f.string(a, "mandate_hash", "job.authority.mandate_hash")
            && !is_hex(m, 64..=64)
        {
            f.invalid(
                "job.authority.mandate_hash",
                "must be 64 lowercase hex digits (SHA-256 of the mandate document)",
            );
        }
        let limit = f.amount(a, "spend_limit", "job.authority.spend_limit");
        if let (Some((l, la)), Some((b, ba))) = (&limit, &budget)
            && (la != ba || l < b)
        {
            f.invalid(
                "job.authority.spend_limit",
                "authority_unverifiable: must cover job.budget in the same asset",
            );
        }
        let expires = f.time(a, "expires_at", "job.authority.expires_at");
        if let (Some(e), Some(d)) = (expires, deadline)
            && e < d
        {
            f.invalid(
                "job.authority.expires_at",
                "authority_unverifiable: must not expire before job.deadline",
            );
        }
        match f.get(a, "permissions", "job.authority.permissions") {
            Some(Value::Array(ps)) => {
                for need in ["create_job", "fund"] {
                    if !ps.iter().any(|p| p.as_str() == Some(need)) {
                        f.invalid(
                            "job.authority.permissions",
                            format!("authority_unverifiable: must include {need:?}"),
                        );
                    }
                }
            }
            Some(v) => f.invalid(
                "job.authority.permissions",
                format!("must be an array of strings, not {}", v.type_name()),
            ),
            None => {}
        }
    }
    let (budget, asset) = budget?;
    Some(JobTerms {
        task_type: task_type?.to_owned(),
        deadline_ms: deadline?,
        budget,
        asset,
    })
}
