//! Tokens and money: bearer tokens bound to principals (with the sandbox
//! grant), balances, and the audit of the ledger's totals.

use super::super::db::args;
use super::super::{MarketError, Principal, conflict, gate, invalid};
use super::Market;

/// A bearer token issued to a registered identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub token: String,
    pub principal_id: String,
    pub agent_id: String,
    /// False when the identity already had this token.
    pub created: bool,
}

/// Ledger totals (every one must hold at all times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// Sum of every account's balance, the mint included: always 0.
    pub sum_of_balances: i64,
    /// The escrow account's balance.
    pub escrow: i64,
    /// Amounts of commitments still reserved: always equal to `escrow`.
    pub reserved: i64,
    /// Accounts whose balance differs from their ledger rows: always 0.
    pub ledger_mismatches: i64,
    /// Transactions with more than one SETTLEMENT/REFUND event: always 0.
    pub double_outcomes: i64,
}

impl Market {
    /// Issues (or returns) the bearer token of a registered identity. The
    /// first token binds the identity to `principal_id` (default: its
    /// agent_id) for good, and the sandbox mint grants the new principal
    /// [`crate::market::MarketConfig::grant`] GTU.
    pub fn issue_token(
        &self,
        public_key: &str,
        agent_id: &str,
        principal_id: Option<&str>,
    ) -> Result<Grant, MarketError> {
        self.write(|tx| {
            let existing = tx
                .query_opt(
                    "SELECT token, principal_id, agent_id FROM gtl_principals WHERE public_key = $1",
                    args![public_key],
                )?
                .map(|r| Ok::<_, MarketError>((r.text(0)?, r.text(1)?, r.text(2)?)))
                .transpose()?;
            if let Some((token, pid, aid)) = existing {
                if principal_id.is_some_and(|p| p != pid) {
                    return Err(conflict(
                        "principal_bound",
                        format!("this identity is bound to principal {pid}"),
                    ));
                }
                return Ok(Grant {
                    token,
                    principal_id: pid,
                    agent_id: aid,
                    created: false,
                });
            }
            let pid = principal_id.unwrap_or(agent_id);
            if !gate::valid_transaction_id(pid) || pid == "mint" || pid == "escrow" {
                return Err(invalid(
                    "principal_id",
                    "must match ^[a-z0-9_]{1,64}$ and not be mint or escrow",
                ));
            }
            let taken = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM gtl_principals WHERE principal_id = $1)",
                    args![pid],
                )?
                .bool(0)?;
            if taken {
                return Err(conflict(
                    "principal_taken",
                    format!("principal {pid} belongs to another identity"),
                ));
            }
            let token = format!("gtl_{}", hex::encode(rand::random::<[u8; 32]>()));
            let now = self.now_ms();
            tx.execute(
                "INSERT INTO gtl_principals (principal_id, public_key, agent_id, token, created_at) VALUES ($1, $2, $3, $4, $5)",
                args![pid, public_key, agent_id, &token, now],
            )?;
            tx.execute(
                "INSERT INTO gtl_accounts (account, balance) VALUES ($1, 0)",
                args![pid],
            )?;
            if self.cfg.grant > 0 {
                tx.execute(
                    "INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at) VALUES (NULL, 'mint', $1, $2, 'sandbox_grant', $3)",
                    args![pid, self.cfg.grant, now],
                )?;
            }
            Ok(Grant {
                token,
                principal_id: pid.to_owned(),
                agent_id: agent_id.to_owned(),
                created: true,
            })
        })
    }

    /// The principal a token speaks for.
    pub fn principal(&self, token: &str) -> Result<Option<Principal>, MarketError> {
        self.read(false, |db| {
            db.query_opt(
                "SELECT principal_id, agent_id, public_key FROM gtl_principals WHERE token = $1",
                args![token],
            )?
            .map(|r| {
                Ok(Principal {
                    principal_id: r.text(0)?,
                    agent_id: r.text(1)?,
                    public_key: r.text(2)?,
                })
            })
            .transpose()
        })
    }

    /// A principal's GTU balance (`None` for an unknown principal).
    pub fn balance(&self, principal_id: &str) -> Result<Option<i64>, MarketError> {
        if principal_id == "mint" || principal_id == "escrow" {
            return Ok(None);
        }
        self.read(false, |db| {
            db.query_opt(
                "SELECT balance FROM gtl_accounts WHERE account = $1",
                args![principal_id],
            )?
            .map(|r| Ok(r.int(0)?))
            .transpose()
        })
    }

    /// The ledger totals every invariant test checks.
    pub fn audit(&self) -> Result<Audit, MarketError> {
        self.read(true, |db| {
            let mut q = |sql: &str| -> Result<i64, MarketError> { Ok(db.query_one(sql, &[])?.int(0)?) };
            Ok(Audit {
                sum_of_balances: q("SELECT CAST(COALESCE(SUM(balance), 0) AS BIGINT) FROM gtl_accounts")?,
                escrow: q("SELECT balance FROM gtl_accounts WHERE account = 'escrow'")?,
                reserved: q(
                    "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM gtl_commitments WHERE status = 'reserved'",
                )?,
                ledger_mismatches: q(
                    "SELECT COUNT(*) FROM gtl_accounts a WHERE a.balance <>
                       COALESCE((SELECT SUM(amount) FROM gtl_ledger WHERE to_account = a.account), 0)
                     - COALESCE((SELECT SUM(amount) FROM gtl_ledger WHERE from_account = a.account), 0)",
                )?,
                double_outcomes: q(
                    "SELECT COUNT(*) FROM (SELECT transaction_id FROM gtl_events WHERE kind IN ('SETTLEMENT','REFUND')
                     GROUP BY transaction_id HAVING COUNT(*) > 1) AS outcomes",
                )?,
            })
        })
    }
}
