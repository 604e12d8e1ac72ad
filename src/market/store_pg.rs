//! The market's tables on PostgreSQL: the same tables, columns and
//! invariants as [`super::store`] (SQLite), held the same way — by the
//! database, not by the machine alone. Where SQLite has a trigger that
//! raises, PostgreSQL has a trigger (plpgsql where it must look at another
//! table, since a trigger's `WHEN` cannot); where SQLite has a CHECK,
//! PostgreSQL has the same CHECK. Every refusal raises a class 23 error
//! (`integrity_constraint_violation`), which the market reports as
//! `invariant_violation`, as it reports SQLite's constraint failures.
//!
//! What SQLite gets from having one writer at a time, PostgreSQL gets from
//! row locks: every write to a transaction's rows (offers, deal, funding
//! commitment, delivery, verification, events) first locks the
//! transaction's row (`gtl_0_lock`, the first BEFORE trigger of each such
//! table), and a change of the transaction row itself holds that lock, so
//! the checks that look at other rows of the same transaction cannot race
//! a concurrent writer. Postings lock their two accounts in name order
//! (no deadlock between two postings), and the accounts' CHECK keeps every
//! balance but the mint's non-negative whatever the interleaving. TRUNCATE,
//! which skips row triggers, is refused on every append-only table.
//!
//! Migrations are versioned in `gtl_meta.schema_version` and applied in one
//! transaction under an advisory lock, so instances starting at once apply
//! each migration once.

use super::MarketError;
use super::db::postgres::pg_err;
use postgres::Client;

/// The advisory lock key the market's migrations hold ("gtl_migr").
pub const MIGRATION_LOCK: i64 = 0x6774_6c5f_6d69_6772;

/// The market's migrations; the index + 1 is the schema version.
const MIGRATIONS: &[&str] = &[r#"
CREATE FUNCTION gtl_refuse() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END $f$;

-- Locks the row of the transaction NEW belongs to: every writer of one
-- transaction's rows takes turns, as SQLite's single writer does.
CREATE FUNCTION gtl_lock_transaction() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM 1 FROM gtl_transactions WHERE transaction_id = NEW.transaction_id FOR NO KEY UPDATE;
  RETURN NEW;
END $f$;

CREATE TABLE gtl_principals (
  principal_id TEXT PRIMARY KEY, public_key TEXT NOT NULL UNIQUE, agent_id TEXT NOT NULL,
  token TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL);

CREATE TABLE gtl_accounts (
  account TEXT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
  CHECK (balance >= 0 OR account = 'mint'));
INSERT INTO gtl_accounts (account, balance) VALUES ('mint', 0), ('escrow', 0);
CREATE TRIGGER gtl_accounts_no_delete BEFORE DELETE ON gtl_accounts
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('accounts are never deleted');
CREATE TRIGGER gtl_accounts_no_truncate BEFORE TRUNCATE ON gtl_accounts
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('accounts are never deleted');

CREATE TABLE gtl_ledger (
  id BIGSERIAL PRIMARY KEY, transaction_id TEXT COLLATE "C",
  from_account TEXT NOT NULL REFERENCES gtl_accounts(account),
  to_account TEXT NOT NULL REFERENCES gtl_accounts(account),
  amount BIGINT NOT NULL CHECK (amount > 0), reason TEXT NOT NULL, at BIGINT NOT NULL,
  CHECK (from_account <> to_account));
CREATE FUNCTION gtl_ledger_apply() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  -- Both accounts, locked in name order: two postings never deadlock.
  PERFORM 1 FROM gtl_accounts WHERE account IN (NEW.from_account, NEW.to_account)
    ORDER BY account FOR NO KEY UPDATE;
  UPDATE gtl_accounts SET balance = balance - NEW.amount WHERE account = NEW.from_account;
  UPDATE gtl_accounts SET balance = balance + NEW.amount WHERE account = NEW.to_account;
  RETURN NULL;
END $f$;
CREATE TRIGGER gtl_ledger_apply AFTER INSERT ON gtl_ledger
  FOR EACH ROW EXECUTE FUNCTION gtl_ledger_apply();
CREATE TRIGGER gtl_ledger_no_update BEFORE UPDATE ON gtl_ledger
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('the ledger is append-only');
CREATE TRIGGER gtl_ledger_no_delete BEFORE DELETE ON gtl_ledger
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('the ledger is append-only');
CREATE TRIGGER gtl_ledger_no_truncate BEFORE TRUNCATE ON gtl_ledger
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('the ledger is append-only');

CREATE TABLE gtl_transitions (from_state TEXT NOT NULL, to_state TEXT NOT NULL,
  PRIMARY KEY (from_state, to_state));
INSERT INTO gtl_transitions VALUES
  ('JOB_OPEN','OFFERED'), ('OFFERED','JOB_OPEN'), ('OFFERED','DEAL_LOCKED'),
  ('DEAL_LOCKED','FUNDED'), ('FUNDED','DELIVERED'), ('DELIVERED','VERIFIED'),
  ('DELIVERED','REJECTED'), ('FUNDED','REJECTED'), ('VERIFIED','SETTLED'),
  ('REJECTED','REFUNDED'), ('JOB_OPEN','CLOSED'), ('OFFERED','CLOSED'), ('DEAL_LOCKED','CLOSED');
CREATE TRIGGER gtl_transitions_frozen BEFORE INSERT OR UPDATE OR DELETE ON gtl_transitions
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('the transition table is fixed');
CREATE TRIGGER gtl_transitions_no_truncate BEFORE TRUNCATE ON gtl_transitions
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('the transition table is fixed');

CREATE TABLE gtl_transactions (
  transaction_id TEXT COLLATE "C" PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('JOB_OPEN','OFFERED','DEAL_LOCKED','FUNDED','DELIVERED',
                                       'VERIFIED','REJECTED','SETTLED','REFUNDED','CLOSED')),
  terminal_state TEXT CHECK (terminal_state IN ('SETTLED','REFUNDED','CLOSED')),
  buyer_principal TEXT NOT NULL REFERENCES gtl_principals(principal_id),
  job TEXT NOT NULL, job_hash TEXT NOT NULL, policy_hash TEXT NOT NULL, authority_hash TEXT NOT NULL,
  task_type TEXT NOT NULL, deadline_ms BIGINT NOT NULL,
  budget BIGINT NOT NULL CHECK (budget > 0), asset TEXT NOT NULL,
  deal_hash TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
  CHECK ((terminal_state IS NULL) = (state NOT IN ('SETTLED','REFUNDED','CLOSED'))),
  CHECK (terminal_state IS NULL OR terminal_state = state));
CREATE INDEX gtl_transactions_open ON gtl_transactions (terminal_state, deadline_ms);
CREATE TRIGGER gtl_tx_insert BEFORE INSERT ON gtl_transactions
  FOR EACH ROW WHEN (NEW.state <> 'JOB_OPEN')
  EXECUTE FUNCTION gtl_refuse('a transaction starts in JOB_OPEN');
CREATE TRIGGER gtl_tx_terminal_is_final BEFORE UPDATE ON gtl_transactions
  FOR EACH ROW WHEN (OLD.terminal_state IS NOT NULL)
  EXECUTE FUNCTION gtl_refuse('the transaction already reached its terminal state');
CREATE TRIGGER gtl_tx_frozen BEFORE UPDATE OF transaction_id, job, job_hash, policy_hash,
  authority_hash, buyer_principal, task_type, deadline_ms, budget, asset, created_at ON gtl_transactions
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a job is frozen once opened');
CREATE TRIGGER gtl_tx_deal_frozen BEFORE UPDATE OF deal_hash ON gtl_transactions
  FOR EACH ROW WHEN (OLD.deal_hash IS NOT NULL AND NEW.deal_hash IS DISTINCT FROM OLD.deal_hash)
  EXECUTE FUNCTION gtl_refuse('the DealHash is frozen once locked');
CREATE FUNCTION gtl_tx_state_rules() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF NEW.state <> OLD.state AND NOT EXISTS
     (SELECT 1 FROM gtl_transitions WHERE from_state = OLD.state AND to_state = NEW.state) THEN
    RAISE EXCEPTION 'illegal state transition' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.state = 'DEAL_LOCKED' AND NOT EXISTS (SELECT 1 FROM gtl_deals d
     WHERE d.transaction_id = NEW.transaction_id AND d.deal_hash = NEW.deal_hash AND d.confirmed = 1) THEN
    RAISE EXCEPTION 'DEAL_LOCKED needs a deal both principals confirmed'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.state = 'FUNDED' AND NOT EXISTS (SELECT 1 FROM gtl_commitments c
     WHERE c.transaction_id = NEW.transaction_id AND c.deal_hash = NEW.deal_hash AND c.status = 'reserved') THEN
    RAISE EXCEPTION 'FUNDED needs a reserved funding commitment for the deal'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.state IN ('SETTLED','REFUNDED') AND NOT EXISTS (SELECT 1 FROM gtl_commitments c
     WHERE c.transaction_id = NEW.transaction_id AND c.status = lower(NEW.state)) THEN
    RAISE EXCEPTION 'a value outcome needs its funding commitment consumed the same way'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.state = 'CLOSED' AND EXISTS (SELECT 1 FROM gtl_commitments c
     WHERE c.transaction_id = NEW.transaction_id) THEN
    RAISE EXCEPTION 'a funded transaction ends SETTLED or REFUNDED, never CLOSED'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER gtl_tx_state BEFORE UPDATE OF state ON gtl_transactions
  FOR EACH ROW EXECUTE FUNCTION gtl_tx_state_rules();
CREATE TRIGGER gtl_tx_no_delete BEFORE DELETE ON gtl_transactions
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('transactions are never deleted');
CREATE TRIGGER gtl_tx_no_truncate BEFORE TRUNCATE ON gtl_transactions
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('transactions are never deleted');

CREATE TABLE gtl_offers (
  offer_hash TEXT COLLATE "C" PRIMARY KEY,
  transaction_id TEXT COLLATE "C" NOT NULL REFERENCES gtl_transactions(transaction_id),
  provider_principal TEXT NOT NULL REFERENCES gtl_principals(principal_id),
  price BIGINT NOT NULL CHECK (price > 0), asset TEXT NOT NULL, expires_at_ms BIGINT NOT NULL,
  offer TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('live','declined','accepted','superseded')),
  at BIGINT NOT NULL);
CREATE INDEX gtl_offers_tx ON gtl_offers (transaction_id);
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_offers
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE TRIGGER gtl_offers_frozen BEFORE UPDATE OF offer_hash, transaction_id, provider_principal, price,
  asset, expires_at_ms, offer ON gtl_offers
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('an offer is frozen once made');
CREATE TRIGGER gtl_offers_status BEFORE UPDATE OF status ON gtl_offers
  FOR EACH ROW WHEN (OLD.status <> 'live' AND NEW.status <> OLD.status)
  EXECUTE FUNCTION gtl_refuse('only a live offer changes status');

CREATE TABLE gtl_deals (
  deal_hash TEXT PRIMARY KEY,
  transaction_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES gtl_transactions(transaction_id),
  offer_hash TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES gtl_offers(offer_hash),
  buyer_principal TEXT NOT NULL, provider_principal TEXT NOT NULL,
  amount BIGINT NOT NULL CHECK (amount > 0), asset TEXT NOT NULL, deal TEXT NOT NULL,
  buyer_message_hash TEXT NOT NULL, provider_message_hash TEXT,
  confirmed BIGINT NOT NULL DEFAULT 0 CHECK (confirmed IN (0, 1)),
  CHECK (buyer_principal <> provider_principal),
  CHECK ((confirmed = 1) = (provider_message_hash IS NOT NULL)));
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_deals
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE TRIGGER gtl_deals_frozen BEFORE UPDATE OF deal_hash, transaction_id, offer_hash, buyer_principal,
  provider_principal, amount, asset, deal, buyer_message_hash ON gtl_deals
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a deal is frozen once locked');
CREATE TRIGGER gtl_deals_confirm_once BEFORE UPDATE OF confirmed, provider_message_hash ON gtl_deals
  FOR EACH ROW WHEN (OLD.confirmed = 1)
  EXECUTE FUNCTION gtl_refuse('a deal is confirmed once');
CREATE TRIGGER gtl_deals_no_delete BEFORE DELETE ON gtl_deals
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('deals are never deleted');
CREATE TRIGGER gtl_deals_no_truncate BEFORE TRUNCATE ON gtl_deals
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('deals are never deleted');

CREATE TABLE gtl_commitments (
  commitment_id TEXT PRIMARY KEY,
  transaction_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES gtl_transactions(transaction_id),
  deal_hash TEXT NOT NULL UNIQUE REFERENCES gtl_deals(deal_hash),
  payer TEXT NOT NULL REFERENCES gtl_accounts(account), payee TEXT NOT NULL REFERENCES gtl_accounts(account),
  amount BIGINT NOT NULL CHECK (amount > 0), asset TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('reserved','settled','refunded')),
  at BIGINT NOT NULL, consumed_at BIGINT);
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE FUNCTION gtl_commit_matches_deal() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  -- Reserved only while the transaction waits for funding (DEAL_LOCKED):
  -- with the transaction row locked, no CLOSED or FUNDED transaction
  -- gains a commitment, whatever commits in between.
  IF NEW.status <> 'reserved' OR NOT EXISTS (SELECT 1 FROM gtl_deals d
       WHERE d.deal_hash = NEW.deal_hash AND d.transaction_id = NEW.transaction_id AND d.confirmed = 1
         AND d.amount = NEW.amount AND d.asset = NEW.asset
         AND d.buyer_principal = NEW.payer AND d.provider_principal = NEW.payee)
     OR NOT EXISTS (SELECT 1 FROM gtl_transactions t
       WHERE t.transaction_id = NEW.transaction_id AND t.state = 'DEAL_LOCKED') THEN
    RAISE EXCEPTION 'a funding commitment must be reserved for its confirmed deal'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER gtl_commit_matches_deal BEFORE INSERT ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_commit_matches_deal();
CREATE FUNCTION gtl_commit_reserve() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at)
  VALUES (NEW.transaction_id, NEW.payer, 'escrow', NEW.amount, 'fund', NEW.at);
  RETURN NULL;
END $f$;
CREATE TRIGGER gtl_commit_reserve AFTER INSERT ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_commit_reserve();
CREATE TRIGGER gtl_commit_frozen BEFORE UPDATE OF commitment_id, transaction_id, deal_hash, payer, payee,
  amount, asset, at ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a funding commitment is frozen');
CREATE FUNCTION gtl_commit_once() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE st TEXT;
BEGIN
  SELECT state INTO st FROM gtl_transactions WHERE transaction_id = NEW.transaction_id;
  IF OLD.status <> 'reserved' OR NEW.status NOT IN ('settled','refunded')
     OR (NEW.status = 'settled' AND st IS DISTINCT FROM 'VERIFIED')
     OR (NEW.status = 'refunded' AND st IS DISTINCT FROM 'REJECTED') THEN
    RAISE EXCEPTION 'a funding commitment is consumed once: settled after VERIFIED or refunded after REJECTED'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER gtl_commit_once BEFORE UPDATE OF status ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_commit_once();
CREATE FUNCTION gtl_commit_release() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at)
  VALUES (NEW.transaction_id, 'escrow', CASE NEW.status WHEN 'settled' THEN NEW.payee ELSE NEW.payer END,
          NEW.amount, NEW.status, COALESCE(NEW.consumed_at, NEW.at));
  RETURN NULL;
END $f$;
CREATE TRIGGER gtl_commit_release AFTER UPDATE OF status ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_commit_release();
CREATE TRIGGER gtl_commit_no_delete BEFORE DELETE ON gtl_commitments
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a funding commitment cannot be withdrawn');
CREATE TRIGGER gtl_commit_no_truncate BEFORE TRUNCATE ON gtl_commitments
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('a funding commitment cannot be withdrawn');

CREATE TABLE gtl_deliveries (
  transaction_id TEXT COLLATE "C" PRIMARY KEY REFERENCES gtl_transactions(transaction_id),
  delivery_hash TEXT NOT NULL, deal_hash TEXT NOT NULL, delivery TEXT NOT NULL, at BIGINT NOT NULL);
CREATE TABLE gtl_verifications (
  transaction_id TEXT COLLATE "C" PRIMARY KEY REFERENCES gtl_transactions(transaction_id),
  verification_hash TEXT NOT NULL, result TEXT NOT NULL CHECK (result IN ('PASS','FAIL')),
  verification TEXT NOT NULL, at BIGINT NOT NULL);
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_deliveries
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_verifications
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE TRIGGER gtl_deliveries_frozen BEFORE UPDATE ON gtl_deliveries
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a delivery is frozen');
CREATE TRIGGER gtl_verifications_frozen BEFORE UPDATE ON gtl_verifications
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('a verification is frozen');

CREATE TABLE gtl_events (
  transaction_id TEXT COLLATE "C" NOT NULL REFERENCES gtl_transactions(transaction_id), seq BIGINT NOT NULL,
  kind TEXT NOT NULL, state_before TEXT, state_after TEXT NOT NULL, message_hash TEXT,
  signature TEXT, body TEXT NOT NULL, at BIGINT NOT NULL,
  prev_event_hash TEXT NOT NULL, event_hash TEXT NOT NULL UNIQUE,
  PRIMARY KEY (transaction_id, seq));
CREATE TRIGGER gtl_0_lock BEFORE INSERT OR UPDATE ON gtl_events
  FOR EACH ROW EXECUTE FUNCTION gtl_lock_transaction();
CREATE FUNCTION gtl_events_chain() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE last_seq BIGINT; last_hash TEXT;
BEGIN
  SELECT seq, event_hash INTO last_seq, last_hash FROM gtl_events
   WHERE transaction_id = NEW.transaction_id ORDER BY seq DESC LIMIT 1;
  IF NEW.seq <> COALESCE(last_seq, 0) + 1
     OR NEW.prev_event_hash <> COALESCE(last_hash,
          '0000000000000000000000000000000000000000000000000000000000000000') THEN
    RAISE EXCEPTION 'an event must extend its transaction''s hash chain'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER gtl_events_chain BEFORE INSERT ON gtl_events
  FOR EACH ROW EXECUTE FUNCTION gtl_events_chain();
CREATE TRIGGER gtl_events_no_update BEFORE UPDATE ON gtl_events
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('the event chain is append-only');
CREATE TRIGGER gtl_events_no_delete BEFORE DELETE ON gtl_events
  FOR EACH ROW EXECUTE FUNCTION gtl_refuse('the event chain is append-only');
CREATE TRIGGER gtl_events_no_truncate BEFORE TRUNCATE ON gtl_events
  FOR EACH STATEMENT EXECUTE FUNCTION gtl_refuse('the event chain is append-only');
"#];

/// The schema version this palaver writes.
pub fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Applies the market's pending migrations, under the advisory lock, in
/// one transaction. A database whose market schema is newer than this
/// palaver's is refused (an older instance must not write it). Returns the
/// schema versions before and after.
pub fn migrate(client: &mut Client) -> Result<(i64, i64), MarketError> {
    let mut tx = client.transaction().map_err(pg_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg_err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS gtl_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    )
    .map_err(pg_err)?;
    let version: i64 = tx
        .query_one(
            "SELECT COALESCE((SELECT value FROM gtl_meta WHERE key = 'schema_version'), 0)",
            &[],
        )
        .map_err(pg_err)?
        .get(0);
    if version > latest_version() {
        return Err(MarketError::Store(format!(
            "the market's schema in this database is version {version}, newer than this palaver's ({})",
            latest_version()
        )));
    }
    for (i, m) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tx.batch_execute(m).map_err(|e| {
            MarketError::Store(format!("market migration {}: {}", i + 1, pg_err(e)))
        })?;
        tx.execute(
            "INSERT INTO gtl_meta (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&((i + 1) as i64)],
        )
        .map_err(pg_err)?;
    }
    tx.commit().map_err(pg_err)?;
    Ok((version, latest_version()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::vocab::{State, TRANSITIONS};

    /// The `(from, to)` pairs a migration inserts into `gtl_transitions`.
    fn pairs(sql: &str) -> Vec<(State, State)> {
        let start = sql
            .find("INSERT INTO gtl_transitions VALUES")
            .expect("the migration fills the transition table");
        let list = &sql[start..];
        let list = &list[..list.find(';').expect("the INSERT ends")];
        list.split('(')
            .skip(1)
            .map(|p| {
                let p = &p[..p.find(')').expect("a pair closes")];
                let (a, b) = p.split_once(',').expect("a pair has two states");
                let s = |x: &str| State::parse(x.trim().trim_matches('\'')).expect("a state");
                (s(a), s(b))
            })
            .collect()
    }

    #[test]
    fn the_transition_table_is_the_same_as_sqlites_and_the_vocabularys() {
        let mut pg = pairs(MIGRATIONS[0]);
        let mut ours = TRANSITIONS.to_vec();
        pg.sort_by_key(|(a, b)| (a.as_str(), b.as_str()));
        ours.sort_by_key(|(a, b)| (a.as_str(), b.as_str()));
        assert_eq!(pg, ours);
        assert_eq!(latest_version(), MIGRATIONS.len() as i64);
    }
}
