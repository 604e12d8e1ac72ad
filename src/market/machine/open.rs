//! JOB_OPEN: the hard gate, then a new transaction (first writer wins).

use super::super::db::args;
use super::super::vocab::{Kind, State};
use super::super::{MarketError, conflict, gate};
use super::Market;
use super::append::{Entry, record};
use super::rows::{hash_of, object, text};
use super::transition::{Msg, reply};
use crate::json::Value;
use crate::obj;

impl Market {
    pub(super) fn job_open(&self, m: &Msg<'_>) -> Result<Value, MarketError> {
        let g = gate::check_job_open(m.msg, m.who, m.now, &self.cfg).map_err(
            |(missing_fields, invalid_fields)| MarketError::Gate {
                missing_fields,
                invalid_fields,
            },
        )?;
        let job = object(m.msg, "job", "job")?;
        let job_v = Value::Object(job.clone());
        let job_hash = hash_of(&job_v)?;
        let policy_hash = hash_of(job.get("verification_policy").unwrap_or(&Value::Null))?;
        let authority_hash = hash_of(job.get("authority").unwrap_or(&Value::Null))?;
        let txid = g.transaction_id.as_str();
        let seq = self.write(|tx| {
            let exists = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM gtl_transactions WHERE transaction_id = $1)",
                    args![txid],
                )?
                .bool(0)?;
            if exists {
                return Err(conflict(
                    "duplicate_transaction",
                    format!("transaction {txid} already exists (first writer wins)"),
                ));
            }
            tx.execute(
                "INSERT INTO gtl_transactions (transaction_id, state, buyer_principal, job, job_hash, policy_hash,
                   authority_hash, task_type, deadline_ms, budget, asset, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
                args![txid, State::JobOpen, &m.who.principal_id, &text(&job_v), &job_hash, &policy_hash,
                      &authority_hash, &g.task_type, g.deadline_ms, g.budget, &g.asset, m.now],
            )?;
            let entry = Entry {
                kind: Kind::JobOpen,
                before: None,
                after: State::JobOpen,
                signed: Some((m.hash, m.sig)),
                body: m.unsigned,
            };
            record(tx, txid, entry, m.now)
        })?;
        Ok(reply(
            Kind::JobOpen,
            txid,
            State::JobOpen,
            obj! { "job_hash" => job_hash, "verification_policy_hash" => policy_hash, "authority_hash" => authority_hash },
            seq,
            Default::default(),
        ))
    }
}
