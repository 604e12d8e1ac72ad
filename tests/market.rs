//! The GTL market core as a library: every legal and illegal transition,
//! the hard gate, the store's own refusals, racing settlements and random
//! message sequences that must never break the ledger.

mod common;

use common::dump;
use palaver::json::{Map, Value};
use palaver::market::canonical::{self, parse_strict};
use palaver::market::messages::{self, JobRequest};
use palaver::market::time::{Clock, parse_rfc3339_utc};
use palaver::market::{
    Finish, Grant, Market, MarketConfig, MarketError, State, TransactionView, policy,
};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

const T0: i64 = 1_861_920_000_000; // 2029-01-01T00:00:00Z
const HOUR: i64 = 3_600_000;

struct World {
    m: Market,
    clock: Arc<AtomicI64>,
    buyer: Grant,
    provider: Grant,
    other: Grant,
    _dir: Option<tempfile::TempDir>,
    path: Option<std::path::PathBuf>,
}

fn cfg() -> MarketConfig {
    MarketConfig {
        durable: false,
        ..MarketConfig::default()
    }
}

fn grants(m: &Market) -> (Grant, Grant, Grant) {
    let g = |k: char, a: &str| m.issue_token(&k.to_string().repeat(64), a, None).unwrap();
    (g('a', "buyer"), g('b', "provider"), g('c', "other"))
}

fn world_with(c: MarketConfig, on_disk: bool) -> World {
    let (clock, handle) = Clock::manual(T0);
    let (m, dir, path) = if on_disk {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("community.sqlite");
        (Market::open(&path, c).unwrap(), Some(dir), Some(path))
    } else {
        (Market::memory(c).unwrap(), None, None)
    };
    let m = m.with_clock(clock);
    let (buyer, provider, other) = grants(&m);
    World {
        m,
        clock: handle,
        buyer,
        provider,
        other,
        _dir: dir,
        path,
    }
}

fn world() -> World {
    world_with(cfg(), false)
}

impl World {
    fn send(&self, g: &Grant, msg: Map) -> Result<Value, MarketError> {
        self.m
            .handle(Some(&g.token), messages::sign(&g.token, msg).unwrap())
    }
    fn view(&self, tx: &str) -> TransactionView {
        self.m.transaction(tx).unwrap()
    }
    fn state(&self, tx: &str) -> String {
        self.view(tx).state.as_str().to_owned()
    }
    fn events(&self, tx: &str) -> Vec<String> {
        self.view(tx)
            .events
            .iter()
            .map(|e| e.kind.as_str().to_owned())
            .collect()
    }
    fn open(&self, tx: &str) {
        self.send(&self.buyer, job(tx, "0", 15, T0 + HOUR)).unwrap();
    }
    fn offer(&self, tx: &str, who: &Grant, price: i64) -> Result<String, MarketError> {
        let jh = self.view(tx).job_hash;
        let r = self.send(
            who,
            messages::offer(
                tx,
                &jh,
                price,
                T0 + HOUR / 2,
                &who.principal_id,
                &who.agent_id,
            ),
        )?;
        Ok(r.get("hashes")
            .and_then(|h| h.get("offer_hash"))
            .and_then(Value::as_str)
            .unwrap()
            .to_owned())
    }
    fn lock(&self, tx: &str, offer_hash: &str) -> Result<String, MarketError> {
        let deal = messages::deal_for(&self.view(tx), offer_hash).unwrap();
        let r = self.send(&self.buyer, messages::deal_lock(tx, deal))?;
        Ok(r.get("hashes")
            .and_then(|h| h.get("deal_hash"))
            .and_then(Value::as_str)
            .unwrap()
            .to_owned())
    }
    fn to_funded(&self, tx: &str) -> String {
        self.open(tx);
        let oh = self.offer(tx, &self.provider, 10).unwrap();
        let dh = self.lock(tx, &oh).unwrap();
        self.send(&self.provider, messages::deal_confirm(tx, &dh))
            .unwrap();
        self.send(&self.buyer, messages::fund(tx, &dh, 10)).unwrap();
        dh
    }
    fn deliver(&self, tx: &str, dh: &str, good: bool) -> Result<Value, MarketError> {
        let prefix = format!("palaver|{tx}");
        let s = policy::solve(&prefix, "0", 0, 1, &Default::default()).unwrap();
        let digest = if good { s.digest } else { "0".repeat(64) };
        self.send(
            &self.provider,
            messages::deliver(tx, dh, &prefix, s.nonce, &digest),
        )
    }
    fn audit_holds(&self) {
        let a = self.m.audit().unwrap();
        assert_eq!(a.sum_of_balances, 0, "{a:?}");
        assert_eq!(a.escrow, a.reserved, "{a:?}");
        assert_eq!(a.ledger_mismatches, 0, "{a:?}");
        assert_eq!(a.double_outcomes, 0, "{a:?}");
    }
    fn bal(&self, g: &Grant) -> i64 {
        self.m.balance(&g.principal_id).unwrap().unwrap()
    }
}

fn job(tx: &str, target: &str, budget: i64, deadline: i64) -> Map {
    messages::job_open(&JobRequest {
        transaction_id: tx,
        prefix: &format!("palaver|{tx}"),
        target,
        budget,
        deadline_ms: deadline,
        principal_id: "buyer",
        agent_id: "buyer",
    })
}

fn status<T>(r: Result<T, MarketError>) -> (u16, String) {
    match r {
        Ok(_) => (200, String::new()),
        Err(e) => (e.status(), e.code().to_owned()),
    }
}

#[test]
fn seed_job_and_signature_vectors() {
    let seed = r#"{"type":"JOB_OPEN","transaction_id":"job_demo_001","job":{"task_type":"sha256_nonce.v1","input":{"prefix":"AIguishi|GTL|job_demo_001","target":"0000"},"deadline":"2030-01-01T00:00:00.000Z","output_format":{"type":"object","required":["nonce","digest"],"properties":{"nonce":{"type":"integer","minimum":0},"digest":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"additionalProperties":false},"budget":{"amount":15,"asset":"GTU"},"verification_policy":{"id":"sha256_nonce.v1","version":"1.0","verifier":"AIguishi/sha256_nonce.v1","digest_algorithm":"SHA-256","input_encoding":"UTF-8","message_template":"{prefix}|{nonce}","acceptance":{"nonce_type":"non-negative-integer","digest_encoding":"lowercase-hex","digest_length":64,"digest_must_equal_computed":true,"digest_must_start_with":"job.input.target"},"output_format":{"type":"object","required":["nonce","digest"],"properties":{"nonce":{"type":"integer","minimum":0},"digest":{"type":"string","pattern":"^[0-9a-f]{64}$"}},"additionalProperties":false}},"authority":{"principal_id":"principal_demo","mandate_hash":"…","spend_limit":{"amount":15,"asset":"GTU"},"expires_at":"2030-01-01T00:00:00.000Z","permissions":["create_job","fund"]}}}"#;
    let msg = parse_strict(seed.as_bytes()).unwrap();
    let job = msg.get("job").unwrap();
    assert_eq!(canonical::canonical_json(job).unwrap().len(), 1131);
    assert_eq!(
        canonical::hash(job).unwrap(),
        "4224de48d202aac2512afeec1fd9d965e705482961572974f1147a59e716f9e6"
    );
    assert_eq!(
        canonical::hash(job.get("verification_policy").unwrap()).unwrap(),
        policy::policy_hash()
    );
    assert_eq!(
        canonical::signature("demo-token", msg.as_object().unwrap()).unwrap(),
        "fdc45dcce69ae059f42c3c5d501cb46c1cdeb49d8f0d85d87f835b59b9dccd23"
    );
    assert_eq!(
        policy::digest("AIguishi|GTL|job_demo_001", 124_071),
        "00009f1f3757ad7d69a483e90f5d9db58f7918a0f8cd82ce98d3117a62726adf"
    );
}

#[test]
fn a_verified_delivery_settles_once_and_pays_the_provider() {
    let w = world();
    w.open("t1");
    assert_eq!(w.state("t1"), "JOB_OPEN");
    let oh = w.offer("t1", &w.provider, 10).unwrap();
    assert_eq!(w.state("t1"), "OFFERED");
    let dh = w.lock("t1", &oh).unwrap();
    assert_eq!(
        w.state("t1"),
        "OFFERED",
        "a lock alone does not lock the deal"
    );
    w.send(&w.provider, messages::deal_confirm("t1", &dh))
        .unwrap();
    assert_eq!(w.state("t1"), "DEAL_LOCKED");
    let r = w.send(&w.buyer, messages::fund("t1", &dh, 10)).unwrap();
    assert_eq!(r.get("balance").and_then(Value::as_i64), Some(990));
    assert_eq!(w.state("t1"), "FUNDED");
    w.audit_holds();
    let r = w.deliver("t1", &dh, true).unwrap();
    assert_eq!(r.get("state").and_then(Value::as_str), Some("SETTLED"));
    assert_eq!(r.get("result").and_then(Value::as_str), Some("PASS"));
    assert_eq!(
        w.events("t1"),
        [
            "JOB_OPEN",
            "OFFER",
            "DEAL_LOCK",
            "DEAL_CONFIRM",
            "FUND",
            "DELIVER",
            "VERIFICATION",
            "SETTLEMENT"
        ]
    );
    let states: Vec<String> = w
        .view("t1")
        .events
        .iter()
        .map(|e| e.state_after.as_str().to_owned())
        .collect();
    assert_eq!(
        states,
        [
            "JOB_OPEN",
            "OFFERED",
            "OFFERED",
            "DEAL_LOCKED",
            "FUNDED",
            "DELIVERED",
            "VERIFIED",
            "SETTLED"
        ]
    );
    assert_eq!((w.bal(&w.buyer), w.bal(&w.provider)), (990, 1010));
    assert!(w.m.verify_chain("t1").unwrap().ok());
    assert_eq!(
        w.m.finish("t1").unwrap(),
        Finish::AlreadyTerminal(State::Settled)
    );
    w.audit_holds();
}

#[test]
fn a_wrong_digest_is_rejected_and_refunded_and_a_stale_deal_never_enters() {
    let w = world();
    let dh = w.to_funded("t1");
    let stale = "1".repeat(64);
    assert_eq!(
        status(w.deliver("t1", &stale, true)),
        (409, "stale_or_foreign_deal".into())
    );
    let r = w.deliver("t1", &dh, false).unwrap();
    assert_eq!(r.get("state").and_then(Value::as_str), Some("REFUNDED"));
    assert_eq!(r.get("result").and_then(Value::as_str), Some("FAIL"));
    assert!(
        r.get("reasons")
            .unwrap()
            .py_str()
            .contains("digest_must_equal_computed")
    );
    assert_eq!(w.events("t1").last().unwrap(), "REFUND");
    assert_eq!((w.bal(&w.buyer), w.bal(&w.provider)), (1000, 1000));
    // A "PASS" that is not an artifact fails the output format.
    let w2 = world();
    let dh = w2.to_funded("t2");
    let mut msg = messages::deliver("t2", &dh, "x", 0, &"0".repeat(64));
    let d = msg.get_mut("delivery").unwrap().as_object_mut().unwrap();
    d.insert(
        "artifact",
        Value::Object(palaver::obj! { "result" => "PASS" }),
    );
    let r = w2.send(&w2.provider, msg).unwrap();
    assert_eq!(r.get("state").and_then(Value::as_str), Some("REFUNDED"));
    assert!(
        r.get("reasons")
            .unwrap()
            .py_str()
            .contains("artifact.result is not allowed")
    );
    w.audit_holds();
    w2.audit_holds();
}

#[test]
fn deadlines_close_unfunded_jobs_and_refund_funded_ones() {
    let w = world();
    w.open("open1");
    w.to_funded("funded1");
    w.clock.store(T0 + HOUR + 1, Ordering::SeqCst);
    assert_eq!(w.m.sweep().unwrap(), 2);
    assert_eq!(w.state("open1"), "CLOSED");
    assert_eq!(w.state("funded1"), "REFUNDED");
    assert_eq!(
        w.events("funded1")[5..],
        ["EXPIRY".to_owned(), "REFUND".to_owned()]
    );
    assert_eq!(w.bal(&w.buyer), 1000);
    // Nothing moves after the end.
    assert_eq!(status(w.deliver("funded1", "x", true)).0, 409);
    w.audit_holds();
    assert!(w.m.verify_chain("funded1").unwrap().ok());
}

#[test]
fn declining_the_last_live_offer_reopens_the_job() {
    let w = world();
    w.open("t1");
    let a = w.offer("t1", &w.provider, 10).unwrap();
    let b = w.offer("t1", &w.other, 12).unwrap();
    assert_eq!(
        status(w.offer("t1", &w.provider, 10)),
        (409, "duplicate_offer".into())
    );
    assert_eq!(
        w.send(&w.buyer, messages::offer_decline("t1", &a))
            .unwrap()
            .get("state")
            .and_then(Value::as_str),
        Some("OFFERED")
    );
    assert_eq!(status(w.lock("t1", &a)), (409, "offer_not_live".into()));
    assert_eq!(
        w.send(&w.buyer, messages::offer_decline("t1", &b))
            .unwrap()
            .get("state")
            .and_then(Value::as_str),
        Some("JOB_OPEN")
    );
    assert_eq!(w.state("t1"), "JOB_OPEN");
}

/// Every message kind in every reachable state: legal ones pass, illegal
/// ones answer 409 and leave the chain as it was.
#[test]
fn every_illegal_transition_is_refused_and_writes_nothing() {
    let kinds = [
        "OFFER",
        "OFFER_DECLINE",
        "DEAL_LOCK",
        "DEAL_CONFIRM",
        "FUND",
        "DELIVER",
    ];
    // state label → (setup, legal kinds)
    type Setup = fn(&World, &str);
    let cases: Vec<(&str, Setup, &[&str])> = vec![
        ("JOB_OPEN", |w, t| w.open(t), &["OFFER"]),
        (
            "OFFERED",
            |w, t| {
                w.open(t);
                w.offer(t, &w.provider, 10).unwrap();
            },
            &["OFFER", "OFFER_DECLINE", "DEAL_LOCK"],
        ),
        (
            "OFFERED+lock",
            |w, t| {
                w.open(t);
                let o = w.offer(t, &w.provider, 10).unwrap();
                w.lock(t, &o).unwrap();
            },
            &["OFFER", "DEAL_CONFIRM"],
        ),
        (
            "DEAL_LOCKED",
            |w, t| {
                w.open(t);
                let o = w.offer(t, &w.provider, 10).unwrap();
                let d = w.lock(t, &o).unwrap();
                w.send(&w.provider, messages::deal_confirm(t, &d)).unwrap();
            },
            &["FUND"],
        ),
        (
            "FUNDED",
            |w, t| {
                w.to_funded(t);
            },
            &["DELIVER"],
        ),
        (
            "SETTLED",
            |w, t| {
                let d = w.to_funded(t);
                w.deliver(t, &d, true).unwrap();
            },
            &[],
        ),
        (
            "REFUNDED",
            |w, t| {
                let d = w.to_funded(t);
                w.deliver(t, &d, false).unwrap();
            },
            &[],
        ),
        (
            "CLOSED",
            |w, t| {
                w.open(t);
                w.clock.store(T0 + 2 * HOUR, Ordering::SeqCst);
                w.m.sweep().unwrap();
            },
            &[],
        ),
    ];
    for (label, setup, legal) in cases {
        for kind in kinds {
            let w = world();
            setup(&w, "tx");
            let v = w.view("tx");
            let before = w.events("tx").len();
            let state = w.state("tx");
            let first_offer = v
                .offers
                .first()
                .map(|o| o.offer_hash.clone())
                .unwrap_or_else(|| "2".repeat(64));
            let pending = v
                .deal
                .as_ref()
                .map(|d| d.deal_hash.clone())
                .unwrap_or_else(|| "3".repeat(64));
            let r = match kind {
                "OFFER" => w.send(
                    &w.other,
                    messages::offer("tx", &v.job_hash, 9, T0 + HOUR / 2, "other", "other"),
                ),
                "OFFER_DECLINE" => w.send(&w.buyer, messages::offer_decline("tx", &first_offer)),
                "DEAL_LOCK" => {
                    let deal = messages::deal_for(&v, &first_offer).unwrap_or_else(|_| palaver::obj! {
                        "job_hash" => v.job_hash.as_str(), "offer_hash" => first_offer.as_str(),
                        "authority_hash" => v.authority_hash.as_str(), "verification_policy_hash" => v.verification_policy_hash.as_str(),
                        "settlement" => Value::Object(palaver::obj! { "on_verified" => "pay_provider", "on_rejected" => "refund_buyer",
                            "amount" => 10, "asset" => "GTU", "payee_principal_id" => "provider" }),
                    });
                    w.send(&w.buyer, messages::deal_lock("tx", deal))
                }
                "DEAL_CONFIRM" => w.send(&w.provider, messages::deal_confirm("tx", &pending)),
                "FUND" => w.send(&w.buyer, messages::fund("tx", &pending, 10)),
                _ => w.deliver("tx", &pending, true),
            };
            let ok = r.is_ok();
            let code = status(r);
            if legal.contains(&kind) {
                assert!(ok, "{kind} in {label} must pass: {code:?}");
            } else {
                assert_eq!(
                    code.0, 409,
                    "{kind} in {label} must be a conflict: {code:?}"
                );
                assert_eq!(
                    w.events("tx").len(),
                    before,
                    "{kind} in {label} wrote an event"
                );
                assert_eq!(w.state("tx"), state);
            }
            w.audit_holds();
        }
    }
}

#[test]
fn authorization_signatures_and_roles() {
    let w = world();
    w.open("t1");
    // Bad signature, unknown token, no token.
    let mut forged = messages::sign(
        &w.provider.token,
        messages::offer_decline("t1", &"2".repeat(64)),
    )
    .unwrap();
    forged.insert("offer_hash", Value::from("4".repeat(64)));
    assert_eq!(
        status(w.m.handle(Some(&w.provider.token), forged)),
        (403, "bad_signature".into())
    );
    let msg = messages::sign("gtl_nope", messages::offer_decline("t1", "x")).unwrap();
    assert_eq!(status(w.m.handle(Some("gtl_nope"), msg.clone())).0, 401);
    assert_eq!(status(w.m.handle(None, msg)).0, 401);
    // The buyer cannot be its own provider.
    assert_eq!(
        status(w.offer("t1", &w.buyer, 10)),
        (403, "same_principal".into())
    );
    // An offer naming someone else's principal.
    let jh = w.view("t1").job_hash;
    assert_eq!(
        status(w.send(
            &w.other,
            messages::offer("t1", &jh, 5, T0 + 1000, "provider", "provider")
        ))
        .0,
        403
    );
    // Price above budget, expiry after the deadline, wrong job hash: all at once.
    let r = w.send(
        &w.provider,
        messages::offer(
            "t1",
            &"5".repeat(64),
            99,
            T0 + 2 * HOUR,
            "provider",
            "provider",
        ),
    );
    let Err(MarketError::Invalid(f)) = r else {
        panic!("{r:?}")
    };
    let paths: Vec<&str> = f.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["offer.job_hash", "offer.price.amount", "offer.expires_at"]
    );
    let oh = w.offer("t1", &w.provider, 10).unwrap();
    assert_eq!(
        status(w.send(&w.other, messages::offer_decline("t1", &oh))).0,
        403
    );
    let dh = w.lock("t1", &oh).unwrap();
    assert_eq!(
        status(w.send(&w.other, messages::deal_confirm("t1", &dh))).0,
        403
    );
    assert_eq!(
        status(w.send(&w.provider, messages::deal_confirm("t1", &"6".repeat(64)))),
        (409, "deal_hash_mismatch".into())
    );
    w.send(&w.provider, messages::deal_confirm("t1", &dh))
        .unwrap();
    assert_eq!(
        status(w.send(&w.provider, messages::fund("t1", &dh, 10))).0,
        403
    );
    assert_eq!(
        status(w.send(&w.buyer, messages::fund("t1", &dh, 9))).0,
        422
    );
    // Duplicate transaction ids: first writer wins.
    assert_eq!(
        status(w.send(&w.buyer, job("t1", "0", 15, T0 + HOUR))),
        (409, "duplicate_transaction".into())
    );
    // Duplicate keys and floats never reach the machine.
    let dup = br#"{"type":"HELLO","type":"JOB_OPEN","supported_versions":["0.2"]}"#;
    assert_eq!(status(w.m.submit(None, dup)).0, 400);
    let hello =
        w.m.submit(
            None,
            br#"{"type":"HELLO","supported_versions":["0.1","0.2"]}"#,
        )
        .unwrap();
    assert_eq!(
        hello.get("selected_version").and_then(Value::as_str),
        Some("0.2")
    );
    assert_eq!(
        status(w.m.submit(None, br#"{"type":"HELLO","supported_versions":["9"]}"#)).1,
        "unsupported_version"
    );
}

#[test]
fn insufficient_funds_cannot_fund() {
    let c = MarketConfig { grant: 5, ..cfg() };
    let w = world_with(c, false);
    w.open("t1");
    let oh = w.offer("t1", &w.provider, 10).unwrap();
    let dh = w.lock("t1", &oh).unwrap();
    w.send(&w.provider, messages::deal_confirm("t1", &dh))
        .unwrap();
    assert_eq!(
        status(w.send(&w.buyer, messages::fund("t1", &dh, 10))),
        (409, "insufficient_funds".into())
    );
    assert_eq!(w.state("t1"), "DEAL_LOCKED");
    w.audit_holds();
}

fn file_bytes(db: &Path) -> Vec<Vec<u8>> {
    ["", "-wal"]
        .iter()
        .map(|s| std::fs::read(format!("{}{s}", db.display())).unwrap_or_default())
        .collect()
}

#[test]
fn the_hard_gate_reports_all_three_missing_fields_and_writes_nothing() {
    let w = world_with(cfg(), true);
    let db = w.path.clone().unwrap();
    w.open("before");
    let (rows, bytes) = (dump(&db), file_bytes(&db));
    let mut msg = job("t1", "0000", 15, T0 + HOUR);
    let j = msg.get_mut("job").unwrap().as_object_mut().unwrap();
    j.remove("deadline");
    j.remove("budget");
    j.remove("authority");
    let Err(MarketError::Gate {
        missing_fields,
        invalid_fields,
    }) = w.send(&w.buyer, msg)
    else {
        panic!("the gate must refuse")
    };
    assert_eq!(
        missing_fields,
        ["job.deadline", "job.budget", "job.authority"]
    );
    assert!(invalid_fields.is_empty(), "{invalid_fields:?}");
    assert_eq!(dump(&db), rows, "a refused JOB_OPEN wrote rows");
    assert_eq!(
        file_bytes(&db),
        bytes,
        "a refused JOB_OPEN changed the database files"
    );
    // Invalid fields are collected too, each with its path.
    let mut msg = job("t2", "00zz", 0, T0 + 1000);
    let j = msg.get_mut("job").unwrap().as_object_mut().unwrap();
    j.insert(
        "verification_policy",
        Value::Object(palaver::obj! { "id" => "sha256_nonce.v1" }),
    );
    j.insert("surprise", Value::from(1));
    let Err(MarketError::Gate {
        missing_fields,
        invalid_fields,
    }) = w.send(&w.buyer, msg)
    else {
        panic!()
    };
    assert!(missing_fields.is_empty());
    let paths: Vec<&str> = invalid_fields.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "job.surprise",
            "job.input.target",
            "job.deadline",
            "job.budget.amount",
            "job.verification_policy",
            "job.authority.spend_limit.amount"
        ]
    );
    assert_eq!(dump(&db), rows);
    assert_eq!(file_bytes(&db), bytes);
}

#[test]
fn the_store_refuses_tampering_that_skips_the_state_machine() {
    let w = world_with(cfg(), true);
    let dh = w.to_funded("t1");
    w.deliver("t1", &dh, true).unwrap();
    w.open("t2");
    let c = rusqlite::Connection::open(w.path.as_ref().unwrap()).unwrap();
    let refused = |sql: &str| {
        let e = c.execute_batch(sql).expect_err(sql).to_string();
        assert!(!e.is_empty());
    };
    refused(
        "UPDATE gtl_transactions SET state = 'REFUNDED', terminal_state = 'REFUNDED' WHERE transaction_id = 't1'",
    );
    refused(
        "UPDATE gtl_transactions SET state = 'SETTLED', terminal_state = 'SETTLED' WHERE transaction_id = 't2'",
    );
    refused("UPDATE gtl_transactions SET state = 'FUNDED' WHERE transaction_id = 't2'");
    refused("UPDATE gtl_transactions SET budget = 1 WHERE transaction_id = 't2'");
    refused("DELETE FROM gtl_commitments");
    refused("UPDATE gtl_commitments SET status = 'refunded'");
    refused("UPDATE gtl_commitments SET status = 'reserved'");
    refused("UPDATE gtl_events SET body = '{}'");
    refused("DELETE FROM gtl_events WHERE transaction_id = 't1'");
    refused("UPDATE gtl_ledger SET amount = 1");
    refused("UPDATE gtl_accounts SET balance = -5 WHERE account = 'buyer'");
    refused("INSERT INTO gtl_events (transaction_id, seq, kind, state_before, state_after, body, at, prev_event_hash, event_hash)
             VALUES ('t2', 2, 'X', 'JOB_OPEN', 'JOB_OPEN', '{}', 0, 'bad', 'h')");
    refused("INSERT INTO gtl_deals (deal_hash, transaction_id, offer_hash, buyer_principal, provider_principal, amount, asset, deal, buyer_message_hash)
             VALUES ('d', 't2', 'o', 'buyer', 'buyer', 1, 'GTU', '{}', 'm')");
    refused("INSERT INTO gtl_transactions (transaction_id, state, buyer_principal, job, job_hash, policy_hash, authority_hash, task_type, deadline_ms, budget, asset, created_at, updated_at)
             VALUES ('t3', 'SETTLED', 'buyer', '{}', 'h', 'p', 'a', 't', 0, 1, 'GTU', 0, 0)");
    drop(c);
    assert!(w.m.verify_chain("t1").unwrap().ok());
    w.audit_holds();
}

#[test]
fn two_settlements_racing_exactly_one_wins() {
    let c = MarketConfig {
        settle_inline: false,
        ..cfg()
    };
    let w = world_with(c.clone(), true);
    let path = w.path.clone().unwrap();
    let n = 12;
    for i in 0..n {
        let tx = format!("r{i}");
        let dh = w.to_funded(&tx);
        let r = w.deliver(&tx, &dh, i % 2 == 0).unwrap();
        assert!(matches!(
            r.get("state").and_then(Value::as_str),
            Some("VERIFIED" | "REJECTED")
        ));
    }
    // Two market handles (two SQLite connections) on the same file race
    // every transaction's settlement.
    let other = Arc::new(Market::open(&path, c).unwrap());
    let me = Arc::new(w.m);
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let run = |m: Arc<Market>, b: Arc<std::sync::Barrier>| {
        std::thread::spawn(move || {
            (0..n)
                .map(|i| {
                    b.wait();
                    m.finish(&format!("r{i}")).unwrap()
                })
                .collect::<Vec<_>>()
        })
    };
    let a = run(me.clone(), barrier.clone());
    let b = run(other.clone(), barrier);
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for i in 0..n {
        let wins = [&a[i], &b[i]]
            .iter()
            .filter(|f| matches!(f, Finish::Settled | Finish::Refunded))
            .count();
        assert_eq!(wins, 1, "transaction r{i}: {:?} / {:?}", a[i], b[i]);
    }
    let a = me.audit().unwrap();
    assert_eq!(
        (a.sum_of_balances, a.escrow, a.reserved, a.double_outcomes),
        (0, 0, 0, 0)
    );
    // 6 settled at 10 GTU each.
    assert_eq!(me.balance("provider").unwrap(), Some(1060));
    assert_eq!(me.balance("buyer").unwrap(), Some(940));
}

#[test]
fn two_fundings_racing_spend_once() {
    let w = world_with(cfg(), true);
    let path = w.path.clone().unwrap();
    w.open("f1");
    let oh = w.offer("f1", &w.provider, 10).unwrap();
    let dh = w.lock("f1", &oh).unwrap();
    w.send(&w.provider, messages::deal_confirm("f1", &dh))
        .unwrap();
    let other = Market::open(&path, cfg())
        .unwrap()
        .with_clock(Clock::Manual(w.clock.clone()));
    let token = w.buyer.token.clone();
    let msg = messages::sign(&token, messages::fund("f1", &dh, 10)).unwrap();
    let (r1, r2) = std::thread::scope(|s| {
        let a = s.spawn(|| w.m.handle(Some(&token), msg.clone()).is_ok());
        let b = s.spawn(|| other.handle(Some(&token), msg.clone()).is_ok());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(r1 ^ r2, "exactly one FUND wins: {r1} {r2}");
    assert_eq!(w.bal(&w.buyer), 990);
    w.audit_holds();
}

/// One step of a random session.
#[derive(Debug, Clone)]
enum Step {
    Open(u8),
    Offer(u8, u8, i64),
    Decline(u8),
    Lock(u8),
    Confirm(u8),
    Fund(u8, i64),
    Deliver(u8, bool),
    Finish(u8),
    Advance(i64),
    Replay(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let tx = 0u8..3;
    prop_oneof![
        tx.clone().prop_map(Step::Open),
        (tx.clone(), 0u8..3, 1i64..20).prop_map(|(t, w, p)| Step::Offer(t, w, p)),
        tx.clone().prop_map(Step::Decline),
        tx.clone().prop_map(Step::Lock),
        tx.clone().prop_map(Step::Confirm),
        (tx.clone(), 5i64..15).prop_map(|(t, a)| Step::Fund(t, a)),
        (tx.clone(), any::<bool>()).prop_map(|(t, g)| Step::Deliver(t, g)),
        tx.clone().prop_map(Step::Finish),
        (0i64..40).prop_map(|m| Step::Advance(m * 60_000)),
        (0usize..64).prop_map(Step::Replay),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever arrives in whatever order: never two terminal states, the
    /// ledger conserves value, no commitment pays twice, replays change
    /// nothing, and every chain verifies.
    #[test]
    fn random_message_sequences_keep_every_invariant(steps in prop::collection::vec(step(), 1..40)) {
        let w = world_with(MarketConfig { grant: 30, ..cfg() }, false);
        let who = |i: u8| match i { 0 => &w.provider, 1 => &w.other, _ => &w.buyer };
        let mut sent: Vec<(String, Map)> = Vec::new();
        for s in steps {
            let tx = |t: u8| format!("p{t}");
            let v = |t: u8| w.m.transaction(&tx(t)).ok();
            let mut send = |g: &Grant, m: Map| {
                let signed = messages::sign(&g.token, m).unwrap();
                sent.push((g.token.clone(), signed.clone()));
                let _ = w.m.handle(Some(&g.token), signed);
            };
            match s {
                Step::Open(t) => send(&w.buyer, job(&tx(t), "0", 15, w.m.now_ms() + HOUR)),
                Step::Offer(t, i, p) => if let Some(v) = v(t) {
                    let g = who(i);
                    send(g, messages::offer(&tx(t), &v.job_hash, p, w.m.now_ms() + HOUR / 2, &g.principal_id, &g.agent_id));
                },
                Step::Decline(t) => if let Some(v) = v(t)
                    && let Some(o) = v.offers.first() {
                    send(&w.buyer, messages::offer_decline(&tx(t), &o.offer_hash));
                },
                Step::Lock(t) => if let Some(v) = v(t)
                    && let Some(o) = v.offers.last()
                    && let Ok(d) = messages::deal_for(&v, &o.offer_hash) {
                    send(&w.buyer, messages::deal_lock(&tx(t), d));
                },
                Step::Confirm(t) => if let Some(v) = v(t)
                    && let Some(d) = &v.deal {
                    let g = if d.provider_principal == "provider" { &w.provider } else { &w.other };
                    send(g, messages::deal_confirm(&tx(t), &d.deal_hash));
                },
                Step::Fund(t, a) => if let Some(v) = v(t) {
                    let dh = v.deal_hash.clone().unwrap_or_default();
                    send(&w.buyer, messages::fund(&tx(t), &dh, a));
                },
                Step::Deliver(t, good) => if let Some(v) = v(t)
                    && let Some(d) = &v.deal {
                    let g = if d.provider_principal == "provider" { &w.provider } else { &w.other };
                    let prefix = format!("palaver|{}", tx(t));
                    let sol = policy::solve(&prefix, "0", 0, 1, &Default::default()).unwrap();
                    let digest = if good { sol.digest } else { "f".repeat(64) };
                    send(g, messages::deliver(&tx(t), &d.deal_hash, &prefix, sol.nonce, &digest));
                },
                Step::Finish(t) => { let _ = w.m.finish(&tx(t)); },
                Step::Advance(ms) => { w.clock.fetch_add(ms, Ordering::SeqCst); },
                Step::Replay(i) => if !sent.is_empty() {
                    let (tok, m) = sent[i % sent.len()].clone();
                    let r = w.m.handle(Some(&tok), m);
                    prop_assert!(r.is_err(), "a replayed message was accepted again");
                },
            }
            let a = w.m.audit().unwrap();
            prop_assert_eq!(a.sum_of_balances, 0);
            prop_assert_eq!(a.escrow, a.reserved);
            prop_assert_eq!(a.ledger_mismatches, 0);
            prop_assert_eq!(a.double_outcomes, 0);
            for p in ["buyer", "provider", "other"] {
                prop_assert!(w.m.balance(p).unwrap().unwrap() >= 0);
            }
            // Value held by principals plus escrow is exactly what was minted.
            let held: i64 = ["buyer", "provider", "other"].iter().map(|p| w.m.balance(p).unwrap().unwrap()).sum();
            prop_assert_eq!(held + a.escrow, 90);
        }
        for t in 0..3 {
            if let Ok(v) = w.m.transaction(&format!("p{t}")) {
                let kinds: Vec<String> = v.events.iter().map(|e| e.kind.as_str().to_owned()).collect();
                let terminal = kinds.iter().filter(|k| matches!(k.as_str(), "SETTLEMENT" | "REFUND")).count()
                    + v.events.iter().filter(|e| e.state_after.as_str() == "CLOSED").count();
                prop_assert!(terminal <= 1, "{:?}", kinds);
                prop_assert!(palaver::market::verify_chain_value(&v).ok());
            }
        }
    }
}

#[test]
fn a_tampered_chain_is_detected() {
    let w = world();
    let dh = w.to_funded("t1");
    w.deliver("t1", &dh, true).unwrap();
    let mut v = w.view("t1");
    assert!(palaver::market::verify_chain_value(&v).ok());
    v.events[3].at = 1;
    let r = palaver::market::verify_chain_value(&v);
    assert!(!r.ok());
    assert!(r.problems[0].contains("event 4"), "{:?}", r.problems);
    let _ = parse_rfc3339_utc;
}
