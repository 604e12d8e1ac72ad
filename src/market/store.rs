//! The market's tables, in the same SQLite file as the community store.
//!
//! The market keeps its own schema version (`gtl_meta.schema_version`)
//! instead of sharing the community's `PRAGMA user_version`, so either side
//! can add migrations without renumbering the other's; both open the same
//! file, each with its own connection (WAL lets them interleave).
//!
//! The invariants live here, as constraints and triggers, so no code path
//! (and no future one) can break them:
//! - a transaction's job, hashes, buyer, deadline and budget are frozen;
//! - state changes follow `gtl_transitions` only, and a transaction that
//!   reached SETTLED, REFUNDED or CLOSED never changes again;
//! - SETTLED needs its funding commitment consumed as `settled`, REFUNDED as
//!   `refunded`, and CLOSED needs no commitment at all;
//! - a deal names two different principals and is frozen once written;
//! - a funding commitment matches its confirmed deal (amount, payer, payee),
//!   there is at most one per deal and per transaction, it cannot be
//!   deleted, and it moves `reserved` → `settled` | `refunded` exactly once
//!   (settled only from VERIFIED, refunded only from REJECTED);
//! - money moves only as double-entry ledger rows (append-only), which the
//!   commitment triggers write, so balances always sum to zero with the
//!   sandbox `mint` account, and no other account can go negative;
//! - events are append-only and each one must extend its transaction's
//!   hash chain (next seq, previous event hash).

use rusqlite::Connection;

/// The market's migrations; the index + 1 is the schema version.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE gtl_principals (
  principal_id TEXT PRIMARY KEY, public_key TEXT NOT NULL UNIQUE, agent_id TEXT NOT NULL,
  token TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);

CREATE TABLE gtl_accounts (
  account TEXT PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
  CHECK (balance >= 0 OR account = 'mint'));
INSERT INTO gtl_accounts (account, balance) VALUES ('mint', 0), ('escrow', 0);
CREATE TRIGGER gtl_accounts_no_delete BEFORE DELETE ON gtl_accounts
BEGIN SELECT RAISE(ABORT, 'accounts are never deleted'); END;

CREATE TABLE gtl_ledger (
  id INTEGER PRIMARY KEY, transaction_id TEXT,
  from_account TEXT NOT NULL REFERENCES gtl_accounts(account),
  to_account TEXT NOT NULL REFERENCES gtl_accounts(account),
  amount INTEGER NOT NULL CHECK (amount > 0), reason TEXT NOT NULL, at INTEGER NOT NULL,
  CHECK (from_account <> to_account));
CREATE TRIGGER gtl_ledger_apply AFTER INSERT ON gtl_ledger BEGIN
  UPDATE gtl_accounts SET balance = balance - NEW.amount WHERE account = NEW.from_account;
  UPDATE gtl_accounts SET balance = balance + NEW.amount WHERE account = NEW.to_account;
END;
CREATE TRIGGER gtl_ledger_no_update BEFORE UPDATE ON gtl_ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER gtl_ledger_no_delete BEFORE DELETE ON gtl_ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;

CREATE TABLE gtl_transitions (from_state TEXT NOT NULL, to_state TEXT NOT NULL,
  PRIMARY KEY (from_state, to_state));
INSERT INTO gtl_transitions VALUES
  ('JOB_OPEN','OFFERED'), ('OFFERED','JOB_OPEN'), ('OFFERED','DEAL_LOCKED'),
  ('DEAL_LOCKED','FUNDED'), ('FUNDED','DELIVERED'), ('DELIVERED','VERIFIED'),
  ('DELIVERED','REJECTED'), ('FUNDED','REJECTED'), ('VERIFIED','SETTLED'),
  ('REJECTED','REFUNDED'), ('JOB_OPEN','CLOSED'), ('OFFERED','CLOSED'), ('DEAL_LOCKED','CLOSED');
CREATE TRIGGER gtl_transitions_frozen_u BEFORE UPDATE ON gtl_transitions
BEGIN SELECT RAISE(ABORT, 'the transition table is fixed'); END;
CREATE TRIGGER gtl_transitions_frozen_d BEFORE DELETE ON gtl_transitions
BEGIN SELECT RAISE(ABORT, 'the transition table is fixed'); END;
CREATE TRIGGER gtl_transitions_frozen_i BEFORE INSERT ON gtl_transitions
BEGIN SELECT RAISE(ABORT, 'the transition table is fixed'); END;

CREATE TABLE gtl_transactions (
  transaction_id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('JOB_OPEN','OFFERED','DEAL_LOCKED','FUNDED','DELIVERED',
                                       'VERIFIED','REJECTED','SETTLED','REFUNDED','CLOSED')),
  terminal_state TEXT CHECK (terminal_state IN ('SETTLED','REFUNDED','CLOSED')),
  buyer_principal TEXT NOT NULL REFERENCES gtl_principals(principal_id),
  job TEXT NOT NULL, job_hash TEXT NOT NULL, policy_hash TEXT NOT NULL, authority_hash TEXT NOT NULL,
  task_type TEXT NOT NULL, deadline_ms INTEGER NOT NULL,
  budget INTEGER NOT NULL CHECK (budget > 0), asset TEXT NOT NULL,
  deal_hash TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  CHECK ((terminal_state IS NULL) = (state NOT IN ('SETTLED','REFUNDED','CLOSED'))),
  CHECK (terminal_state IS NULL OR terminal_state = state));
CREATE INDEX gtl_transactions_open ON gtl_transactions (terminal_state, deadline_ms);
CREATE TRIGGER gtl_tx_insert BEFORE INSERT ON gtl_transactions WHEN NEW.state <> 'JOB_OPEN'
BEGIN SELECT RAISE(ABORT, 'a transaction starts in JOB_OPEN'); END;
CREATE TRIGGER gtl_tx_terminal_is_final BEFORE UPDATE ON gtl_transactions
WHEN OLD.terminal_state IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'the transaction already reached its terminal state'); END;
CREATE TRIGGER gtl_tx_frozen BEFORE UPDATE OF transaction_id, job, job_hash, policy_hash,
  authority_hash, buyer_principal, task_type, deadline_ms, budget, asset, created_at ON gtl_transactions
BEGIN SELECT RAISE(ABORT, 'a job is frozen once opened'); END;
CREATE TRIGGER gtl_tx_deal_frozen BEFORE UPDATE OF deal_hash ON gtl_transactions
WHEN OLD.deal_hash IS NOT NULL AND NEW.deal_hash IS NOT OLD.deal_hash
BEGIN SELECT RAISE(ABORT, 'the DealHash is frozen once locked'); END;
CREATE TRIGGER gtl_tx_legal BEFORE UPDATE OF state ON gtl_transactions
WHEN NEW.state <> OLD.state AND NOT EXISTS
  (SELECT 1 FROM gtl_transitions WHERE from_state = OLD.state AND to_state = NEW.state)
BEGIN SELECT RAISE(ABORT, 'illegal state transition'); END;
CREATE TRIGGER gtl_tx_locked_needs_deal BEFORE UPDATE OF state ON gtl_transactions
WHEN NEW.state = 'DEAL_LOCKED' AND NOT EXISTS (SELECT 1 FROM gtl_deals d
  WHERE d.transaction_id = NEW.transaction_id AND d.deal_hash = NEW.deal_hash AND d.confirmed = 1)
BEGIN SELECT RAISE(ABORT, 'DEAL_LOCKED needs a deal both principals confirmed'); END;
CREATE TRIGGER gtl_tx_funded_needs_commitment BEFORE UPDATE OF state ON gtl_transactions
WHEN NEW.state = 'FUNDED' AND NOT EXISTS (SELECT 1 FROM gtl_commitments c
  WHERE c.transaction_id = NEW.transaction_id AND c.deal_hash = NEW.deal_hash AND c.status = 'reserved')
BEGIN SELECT RAISE(ABORT, 'FUNDED needs a reserved funding commitment for the deal'); END;
CREATE TRIGGER gtl_tx_value_outcome BEFORE UPDATE OF state ON gtl_transactions
WHEN NEW.state IN ('SETTLED','REFUNDED') AND NOT EXISTS (SELECT 1 FROM gtl_commitments c
  WHERE c.transaction_id = NEW.transaction_id AND c.status = lower(NEW.state))
BEGIN SELECT RAISE(ABORT, 'a value outcome needs its funding commitment consumed the same way'); END;
CREATE TRIGGER gtl_tx_closed_moves_nothing BEFORE UPDATE OF state ON gtl_transactions
WHEN NEW.state = 'CLOSED' AND EXISTS (SELECT 1 FROM gtl_commitments c WHERE c.transaction_id = NEW.transaction_id)
BEGIN SELECT RAISE(ABORT, 'a funded transaction ends SETTLED or REFUNDED, never CLOSED'); END;
CREATE TRIGGER gtl_tx_no_delete BEFORE DELETE ON gtl_transactions
BEGIN SELECT RAISE(ABORT, 'transactions are never deleted'); END;

CREATE TABLE gtl_offers (
  offer_hash TEXT PRIMARY KEY, transaction_id TEXT NOT NULL REFERENCES gtl_transactions(transaction_id),
  provider_principal TEXT NOT NULL REFERENCES gtl_principals(principal_id),
  price INTEGER NOT NULL CHECK (price > 0), asset TEXT NOT NULL, expires_at_ms INTEGER NOT NULL,
  offer TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('live','declined','accepted','superseded')),
  at INTEGER NOT NULL);
CREATE INDEX gtl_offers_tx ON gtl_offers (transaction_id);
CREATE TRIGGER gtl_offers_frozen BEFORE UPDATE OF offer_hash, transaction_id, provider_principal, price,
  asset, expires_at_ms, offer ON gtl_offers
BEGIN SELECT RAISE(ABORT, 'an offer is frozen once made'); END;
CREATE TRIGGER gtl_offers_status BEFORE UPDATE OF status ON gtl_offers
WHEN OLD.status <> 'live' AND NEW.status <> OLD.status
BEGIN SELECT RAISE(ABORT, 'only a live offer changes status'); END;

CREATE TABLE gtl_deals (
  deal_hash TEXT PRIMARY KEY,
  transaction_id TEXT NOT NULL UNIQUE REFERENCES gtl_transactions(transaction_id),
  offer_hash TEXT NOT NULL UNIQUE REFERENCES gtl_offers(offer_hash),
  buyer_principal TEXT NOT NULL, provider_principal TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount > 0), asset TEXT NOT NULL, deal TEXT NOT NULL,
  buyer_message_hash TEXT NOT NULL, provider_message_hash TEXT,
  confirmed INTEGER NOT NULL DEFAULT 0 CHECK (confirmed IN (0, 1)),
  CHECK (buyer_principal <> provider_principal),
  CHECK ((confirmed = 1) = (provider_message_hash IS NOT NULL)));
CREATE TRIGGER gtl_deals_frozen BEFORE UPDATE OF deal_hash, transaction_id, offer_hash, buyer_principal,
  provider_principal, amount, asset, deal, buyer_message_hash ON gtl_deals
BEGIN SELECT RAISE(ABORT, 'a deal is frozen once locked'); END;
CREATE TRIGGER gtl_deals_confirm_once BEFORE UPDATE OF confirmed, provider_message_hash ON gtl_deals
WHEN OLD.confirmed = 1
BEGIN SELECT RAISE(ABORT, 'a deal is confirmed once'); END;
CREATE TRIGGER gtl_deals_no_delete BEFORE DELETE ON gtl_deals
BEGIN SELECT RAISE(ABORT, 'deals are never deleted'); END;

CREATE TABLE gtl_commitments (
  commitment_id TEXT PRIMARY KEY,
  transaction_id TEXT NOT NULL UNIQUE REFERENCES gtl_transactions(transaction_id),
  deal_hash TEXT NOT NULL UNIQUE REFERENCES gtl_deals(deal_hash),
  payer TEXT NOT NULL REFERENCES gtl_accounts(account), payee TEXT NOT NULL REFERENCES gtl_accounts(account),
  amount INTEGER NOT NULL CHECK (amount > 0), asset TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('reserved','settled','refunded')),
  at INTEGER NOT NULL, consumed_at INTEGER);
CREATE TRIGGER gtl_commit_matches_deal BEFORE INSERT ON gtl_commitments
WHEN NEW.status <> 'reserved' OR NOT EXISTS (SELECT 1 FROM gtl_deals d
  WHERE d.deal_hash = NEW.deal_hash AND d.transaction_id = NEW.transaction_id AND d.confirmed = 1
    AND d.amount = NEW.amount AND d.asset = NEW.asset
    AND d.buyer_principal = NEW.payer AND d.provider_principal = NEW.payee)
BEGIN SELECT RAISE(ABORT, 'a funding commitment must be reserved for its confirmed deal'); END;
CREATE TRIGGER gtl_commit_reserve AFTER INSERT ON gtl_commitments BEGIN
  INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at)
  VALUES (NEW.transaction_id, NEW.payer, 'escrow', NEW.amount, 'fund', NEW.at);
END;
CREATE TRIGGER gtl_commit_frozen BEFORE UPDATE OF commitment_id, transaction_id, deal_hash, payer, payee,
  amount, asset, at ON gtl_commitments
BEGIN SELECT RAISE(ABORT, 'a funding commitment is frozen'); END;
CREATE TRIGGER gtl_commit_once BEFORE UPDATE OF status ON gtl_commitments
WHEN OLD.status <> 'reserved' OR NEW.status NOT IN ('settled','refunded')
  OR (NEW.status = 'settled' AND (SELECT state FROM gtl_transactions WHERE transaction_id = NEW.transaction_id) <> 'VERIFIED')
  OR (NEW.status = 'refunded' AND (SELECT state FROM gtl_transactions WHERE transaction_id = NEW.transaction_id) <> 'REJECTED')
BEGIN SELECT RAISE(ABORT, 'a funding commitment is consumed once: settled after VERIFIED or refunded after REJECTED'); END;
CREATE TRIGGER gtl_commit_release AFTER UPDATE OF status ON gtl_commitments BEGIN
  INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at)
  VALUES (NEW.transaction_id, 'escrow', CASE NEW.status WHEN 'settled' THEN NEW.payee ELSE NEW.payer END,
          NEW.amount, NEW.status, COALESCE(NEW.consumed_at, NEW.at));
END;
CREATE TRIGGER gtl_commit_no_delete BEFORE DELETE ON gtl_commitments
BEGIN SELECT RAISE(ABORT, 'a funding commitment cannot be withdrawn'); END;

CREATE TABLE gtl_deliveries (
  transaction_id TEXT PRIMARY KEY REFERENCES gtl_transactions(transaction_id),
  delivery_hash TEXT NOT NULL, deal_hash TEXT NOT NULL, delivery TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE gtl_verifications (
  transaction_id TEXT PRIMARY KEY REFERENCES gtl_transactions(transaction_id),
  verification_hash TEXT NOT NULL, result TEXT NOT NULL CHECK (result IN ('PASS','FAIL')),
  verification TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TRIGGER gtl_deliveries_frozen BEFORE UPDATE ON gtl_deliveries
BEGIN SELECT RAISE(ABORT, 'a delivery is frozen'); END;
CREATE TRIGGER gtl_verifications_frozen BEFORE UPDATE ON gtl_verifications
BEGIN SELECT RAISE(ABORT, 'a verification is frozen'); END;

CREATE TABLE gtl_events (
  transaction_id TEXT NOT NULL REFERENCES gtl_transactions(transaction_id), seq INTEGER NOT NULL,
  kind TEXT NOT NULL, state_before TEXT, state_after TEXT NOT NULL, message_hash TEXT,
  signature TEXT, body TEXT NOT NULL, at INTEGER NOT NULL,
  prev_event_hash TEXT NOT NULL, event_hash TEXT NOT NULL UNIQUE,
  PRIMARY KEY (transaction_id, seq));
CREATE TRIGGER gtl_events_chain BEFORE INSERT ON gtl_events
WHEN NEW.seq <> COALESCE((SELECT MAX(seq) FROM gtl_events WHERE transaction_id = NEW.transaction_id), 0) + 1
  OR NEW.prev_event_hash <> COALESCE((SELECT event_hash FROM gtl_events
       WHERE transaction_id = NEW.transaction_id ORDER BY seq DESC LIMIT 1),
       '0000000000000000000000000000000000000000000000000000000000000000')
BEGIN SELECT RAISE(ABORT, 'an event must extend its transaction''s hash chain'); END;
CREATE TRIGGER gtl_events_no_update BEFORE UPDATE ON gtl_events
BEGIN SELECT RAISE(ABORT, 'the event chain is append-only'); END;
CREATE TRIGGER gtl_events_no_delete BEFORE DELETE ON gtl_events
BEGIN SELECT RAISE(ABORT, 'the event chain is append-only'); END;
"#];

/// The hash before a transaction's first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Sets the connection up and applies the market's pending migrations;
/// the schema versions before and after.
pub fn migrate(conn: &Connection, durable: bool) -> rusqlite::Result<(i64, i64)> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: every committed transition is on disk before it is answered.
    conn.pragma_update(None, "synchronous", if durable { "FULL" } else { "NORMAL" })?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS gtl_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    )?;
    let version: i64 = conn.query_row(
        "SELECT COALESCE((SELECT value FROM gtl_meta WHERE key = 'schema_version'), 0)",
        [],
        |r| r.get(0),
    )?;
    for (i, m) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(m)?;
        tx.execute(
            "INSERT OR REPLACE INTO gtl_meta (key, value) VALUES ('schema_version', ?1)",
            [(i + 1) as i64],
        )?;
        tx.commit()?;
    }
    Ok((version, version.max(MIGRATIONS.len() as i64)))
}
