//! The GTL market core as a library: every legal and illegal transition,
//! the hard gate, the store's own refusals, racing settlements and random
//! message sequences that must never break the ledger.
//!
//! One suite, run once per store: each test is a function of the
//! [`Backend`], and `on_both_stores!` makes `NAME::sqlite` and
//! `NAME::postgres` of it. The PostgreSQL half is `#[ignore]`d like every
//! test needing an outside peer (scripts/test runs it with a throwaway
//! cluster); each of its worlds gets a fresh database
//! (`common::pg::fresh_database`), and without `PALAVER_TEST_PG` it skips,
//! unless `CI` is set, when it fails.

use crate::common;

use common::{dump, pg};
use palaver::json::{Map, Value};
use palaver::market::canonical::{self, parse_strict};
use palaver::market::messages::{self, JobRequest};
use palaver::market::time::Clock;
use palaver::market::{
    Finish, Grant, Market, MarketConfig, MarketError, State, TransactionView, policy,
};
use palaver::utc::parse_rfc3339_utc;
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

const T0: i64 = 1_861_920_000_000; // 2029-01-01T00:00:00Z
const HOUR: i64 = 3_600_000;

/// The store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// Each test once per store: `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backend::Sqlite)
            }

            #[test]
            #[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
            fn postgres() {
                super::$name(super::Backend::Postgres)
            }
        }
    )+};
}

/// Where a world's tables live.
enum Place {
    Memory,
    File {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
    },
    Postgres(String),
}

struct World {
    m: Market,
    clock: Arc<AtomicI64>,
    buyer: Grant,
    provider: Grant,
    other: Grant,
    place: Place,
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

/// A market with three principals on `b` (SQLite in memory unless
/// `on_disk`); None when PostgreSQL is not configured (the test skips).
fn world_with(b: Backend, c: MarketConfig, on_disk: bool) -> Option<World> {
    let (clock, handle) = Clock::manual(T0);
    let (m, place) = match b {
        Backend::Sqlite if on_disk => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("community.sqlite");
            (
                Market::open(&path, c).unwrap(),
                Place::File { _dir: dir, path },
            )
        }
        Backend::Sqlite => (Market::memory(c).unwrap(), Place::Memory),
        Backend::Postgres => {
            let url = pg::fresh_database("market")?;
            (Market::postgres(&url, c).unwrap(), Place::Postgres(url))
        }
    };
    let m = m.with_clock(clock);
    let (buyer, provider, other) = grants(&m);
    Some(World {
        m,
        clock: handle,
        buyer,
        provider,
        other,
        place,
    })
}

fn world(b: Backend) -> Option<World> {
    world_with(b, cfg(), false)
}

impl World {
    /// A second market instance on the same tables (another SQLite
    /// connection, or another PostgreSQL pool), reading the same clock.
    fn second(&self, c: MarketConfig) -> Market {
        let m = match &self.place {
            Place::File { path, .. } => Market::open(path, c).unwrap(),
            Place::Postgres(url) => Market::postgres(url, c).unwrap(),
            Place::Memory => panic!("a second instance needs a world on disk"),
        };
        m.with_clock(Clock::Manual(self.clock.clone()))
    }
    /// Every row of every table, as text.
    fn dump(&self) -> String {
        match &self.place {
            Place::File { path, .. } => dump(path),
            Place::Postgres(url) => pg::dump(url),
            Place::Memory => panic!("a dump needs a world on disk"),
        }
    }
    /// Runs `sql` on the tables directly, behind the machine's back.
    fn raw(&self, sql: &str) -> Result<(), String> {
        match &self.place {
            Place::File { path, .. } => rusqlite::Connection::open(path)
                .unwrap()
                .execute_batch(sql)
                .map_err(|e| e.to_string()),
            Place::Postgres(url) => {
                let sql = sql.to_owned();
                pg::with_client(url, move |c| {
                    c.batch_execute(&sql).map_err(|e| e.to_string())
                })
            }
            Place::Memory => panic!("raw SQL needs a world on disk"),
        }
    }

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

fn a_verified_delivery_settles_once_and_pays_the_provider(b: Backend) {
    let Some(w) = world(b) else { return };
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

fn a_wrong_digest_is_rejected_and_refunded_and_a_stale_deal_never_enters(b: Backend) {
    let Some(w) = world(b) else { return };
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
    let Some(w2) = world(b) else { return };
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

fn deadlines_close_unfunded_jobs_and_refund_funded_ones(b: Backend) {
    let Some(w) = world(b) else { return };
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

fn declining_the_last_live_offer_reopens_the_job(b: Backend) {
    let Some(w) = world(b) else { return };
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
/// ones answer 409 and leave every table as it was.
fn every_illegal_transition_is_refused_and_writes_nothing(b: Backend) {
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
            let Some(w) = world_with(b, cfg(), true) else {
                return;
            };
            setup(&w, "tx");
            let v = w.view("tx");
            let before = w.events("tx").len();
            let rows = w.dump();
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
                assert_eq!(w.dump(), rows, "{kind} in {label} changed the tables");
            }
            w.audit_holds();
        }
    }
}

fn authorization_signatures_and_roles(b: Backend) {
    let Some(w) = world(b) else { return };
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

fn insufficient_funds_cannot_fund(b: Backend) {
    let c = MarketConfig { grant: 5, ..cfg() };
    let Some(w) = world_with(b, c, false) else {
        return;
    };
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

fn the_hard_gate_reports_all_three_missing_fields_and_writes_nothing(b: Backend) {
    let Some(w) = world_with(b, cfg(), true) else {
        return;
    };
    // SQLite: not a byte of the files changes either.
    let bytes = || match &w.place {
        Place::File { path: db, .. } => file_bytes(db),
        _ => Vec::new(),
    };
    w.open("before");
    let (rows, before) = (w.dump(), bytes());
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
    assert_eq!(w.dump(), rows, "a refused JOB_OPEN wrote rows");
    assert_eq!(
        bytes(),
        before,
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
    assert_eq!(w.dump(), rows);
    assert_eq!(bytes(), before);
}

/// Raw SQL that skips the machine: the store itself (SQLite's triggers
/// and checks, PostgreSQL's constraints and plpgsql triggers) refuses every
/// statement that would break an invariant, and nothing changes.
fn the_store_refuses_tampering_that_skips_the_state_machine(b: Backend) {
    let Some(w) = world_with(b, cfg(), true) else {
        return;
    };
    let dh = w.to_funded("t1");
    w.deliver("t1", &dh, true).unwrap();
    w.open("t2");
    w.to_funded("t4");
    let rows = w.dump();
    let refused = |sql: &str| {
        let e = w.raw(sql).expect_err(sql);
        assert!(!e.is_empty());
        assert_eq!(w.dump(), rows, "{sql} was refused but changed the tables");
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
    refused("DELETE FROM gtl_transactions WHERE transaction_id = 't2'");
    refused("DELETE FROM gtl_ledger");
    refused("DELETE FROM gtl_accounts WHERE account = 'other'");
    refused("DELETE FROM gtl_deals");
    refused("UPDATE gtl_deals SET amount = 2");
    refused("UPDATE gtl_deals SET confirmed = 0, provider_message_hash = NULL");
    refused("UPDATE gtl_offers SET price = 1");
    refused("UPDATE gtl_offers SET status = 'live'");
    refused("UPDATE gtl_deliveries SET at = 0");
    refused("UPDATE gtl_verifications SET result = 'FAIL'");
    refused("INSERT INTO gtl_transitions VALUES ('JOB_OPEN', 'SETTLED')");
    refused("DELETE FROM gtl_transitions");
    refused("UPDATE gtl_transactions SET deal_hash = 'x' WHERE transaction_id = 't4'");
    refused(
        "UPDATE gtl_transactions SET state = 'CLOSED', terminal_state = 'CLOSED' WHERE transaction_id = 't4'",
    );
    refused(
        "INSERT INTO gtl_ledger (transaction_id, from_account, to_account, amount, reason, at) VALUES (NULL, 'buyer', 'other', 5000, 'gift', 0)",
    );
    refused("INSERT INTO gtl_commitments (commitment_id, transaction_id, deal_hash, payer, payee, amount, asset, status, at)
             VALUES ('c', 't2', 'd2', 'buyer', 'provider', 1, 'GTU', 'reserved', 0)");
    if b == Backend::Postgres {
        // TRUNCATE skips row triggers; PostgreSQL refuses it on its own.
        for t in [
            "gtl_events",
            "gtl_ledger",
            "gtl_accounts CASCADE",
            "gtl_transactions CASCADE",
        ] {
            refused(&format!("TRUNCATE {t}"));
        }
    }
    assert!(w.m.verify_chain("t1").unwrap().ok());
    w.audit_holds();
}

fn two_settlements_racing_exactly_one_wins(b: Backend) {
    let c = MarketConfig {
        settle_inline: false,
        ..cfg()
    };
    let Some(w) = world_with(b, c.clone(), true) else {
        return;
    };
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
    // Two market instances (two SQLite connections on one file, or two
    // PostgreSQL pools on one database) race every transaction's
    // settlement.
    let other = Arc::new(w.second(c));
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
    let z = run(other.clone(), barrier);
    let (a, b) = (a.join().unwrap(), z.join().unwrap());
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

fn two_fundings_racing_spend_once(b: Backend) {
    let Some(w) = world_with(b, cfg(), true) else {
        return;
    };
    w.open("f1");
    let oh = w.offer("f1", &w.provider, 10).unwrap();
    let dh = w.lock("f1", &oh).unwrap();
    w.send(&w.provider, messages::deal_confirm("f1", &dh))
        .unwrap();
    let other = w.second(cfg());
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

/// Refused requests in every phase of a job: each answers an error and
/// leaves every table exactly as it was.
fn each_rejection_leaves_the_database_unchanged(b: Backend) {
    let Some(w) = world_with(b, cfg(), true) else {
        return;
    };
    fn refused(w: &World, rows: &str, label: &str, r: Result<Value, MarketError>) {
        assert!(r.is_err(), "{label} was accepted: {r:?}");
        assert_eq!(w.dump(), rows, "{label} was refused but changed the tables");
    }
    w.open("t1");
    let rows = w.dump();
    let mut forged = messages::sign(
        &w.buyer.token,
        messages::offer_decline("t1", &"2".repeat(64)),
    )
    .unwrap();
    forged.insert("offer_hash", Value::from("4".repeat(64)));
    refused(
        &w,
        &rows,
        "a forged signature",
        w.m.handle(Some(&w.buyer.token), forged),
    );
    let m = messages::sign("gtl_nope", messages::offer_decline("t1", "x")).unwrap();
    refused(
        &w,
        &rows,
        "an unknown token",
        w.m.handle(Some("gtl_nope"), m.clone()),
    );
    refused(&w, &rows, "no token", w.m.handle(None, m));
    refused(
        &w,
        &rows,
        "bad JSON",
        w.m.submit(Some(&w.buyer.token), b"{\"type\":"),
    );
    refused(
        &w,
        &rows,
        "a duplicate JOB_OPEN",
        w.send(&w.buyer, job("t1", "0", 15, T0 + HOUR)),
    );
    let mut gate = job("t9", "0", 15, T0 + HOUR);
    gate.get_mut("job")
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove("budget");
    refused(&w, &rows, "a gate refusal", w.send(&w.buyer, gate));
    refused(
        &w,
        &rows,
        "the buyer's own offer",
        w.offer("t1", &w.buyer, 10).map(Value::from),
    );
    let wrong = messages::offer("t1", &"5".repeat(64), 10, T0 + 1000, "provider", "provider");
    refused(
        &w,
        &rows,
        "an offer on another job hash",
        w.send(&w.provider, wrong),
    );
    refused(
        &w,
        &rows,
        "FUND while JOB_OPEN",
        w.send(&w.buyer, messages::fund("t1", &"3".repeat(64), 10)),
    );
    refused(
        &w,
        &rows,
        "an unknown transaction",
        w.send(&w.buyer, messages::offer_decline("t8", &"2".repeat(64))),
    );

    let oh = w.offer("t1", &w.provider, 10).unwrap();
    let rows = w.dump();
    refused(
        &w,
        &rows,
        "a duplicate offer",
        w.offer("t1", &w.provider, 10).map(Value::from),
    );
    refused(
        &w,
        &rows,
        "a decline by a stranger",
        w.send(&w.other, messages::offer_decline("t1", &oh)),
    );
    refused(
        &w,
        &rows,
        "DEAL_CONFIRM before DEAL_LOCK",
        w.send(&w.provider, messages::deal_confirm("t1", &"6".repeat(64))),
    );
    let deal = messages::deal_for(&w.view("t1"), &oh).unwrap();
    refused(
        &w,
        &rows,
        "DEAL_LOCK by the provider",
        w.send(&w.provider, messages::deal_lock("t1", deal.clone())),
    );
    let mut cheap = deal;
    cheap
        .get_mut("settlement")
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert("amount", Value::from(9));
    refused(
        &w,
        &rows,
        "a deal below the offer's price",
        w.send(&w.buyer, messages::deal_lock("t1", cheap)),
    );

    let dh = w.lock("t1", &oh).unwrap();
    let rows = w.dump();
    refused(
        &w,
        &rows,
        "DEAL_CONFIRM by a stranger",
        w.send(&w.other, messages::deal_confirm("t1", &dh)),
    );
    refused(
        &w,
        &rows,
        "DEAL_CONFIRM of another hash",
        w.send(&w.provider, messages::deal_confirm("t1", &"6".repeat(64))),
    );
    refused(
        &w,
        &rows,
        "a second DEAL_LOCK",
        w.lock("t1", &oh).map(Value::from),
    );
    refused(
        &w,
        &rows,
        "declining the locked offer",
        w.send(&w.buyer, messages::offer_decline("t1", &oh)),
    );

    let confirm = messages::sign(&w.provider.token, messages::deal_confirm("t1", &dh)).unwrap();
    w.m.handle(Some(&w.provider.token), confirm.clone())
        .unwrap();
    let rows = w.dump();
    refused(
        &w,
        &rows,
        "a replayed DEAL_CONFIRM",
        w.m.handle(Some(&w.provider.token), confirm),
    );
    refused(
        &w,
        &rows,
        "FUND by the provider",
        w.send(&w.provider, messages::fund("t1", &dh, 10)),
    );
    refused(
        &w,
        &rows,
        "FUND of the wrong amount",
        w.send(&w.buyer, messages::fund("t1", &dh, 9)),
    );
    refused(
        &w,
        &rows,
        "FUND of a stale deal",
        w.send(&w.buyer, messages::fund("t1", &"7".repeat(64), 10)),
    );
    refused(&w, &rows, "DELIVER before FUND", w.deliver("t1", &dh, true));

    w.send(&w.buyer, messages::fund("t1", &dh, 10)).unwrap();
    let rows = w.dump();
    refused(
        &w,
        &rows,
        "a second FUND",
        w.send(&w.buyer, messages::fund("t1", &dh, 10)),
    );
    refused(
        &w,
        &rows,
        "DELIVER of a stale deal",
        w.deliver("t1", &"8".repeat(64), true),
    );
    let prefix = "palaver|t1";
    let sol = policy::solve(prefix, "0", 0, 1, &Default::default()).unwrap();
    let by_other = messages::deliver("t1", &dh, prefix, sol.nonce, &sol.digest);
    refused(
        &w,
        &rows,
        "DELIVER by a stranger",
        w.send(&w.other, by_other),
    );
    assert_eq!(w.m.finish("t1").unwrap(), Finish::NotReady(State::Funded));
    assert_eq!(w.dump(), rows, "finishing a FUNDED transaction wrote");

    w.deliver("t1", &dh, true).unwrap();
    let rows = w.dump();
    refused(&w, &rows, "a second DELIVER", w.deliver("t1", &dh, true));
    refused(
        &w,
        &rows,
        "an OFFER after the end",
        w.offer("t1", &w.other, 5).map(Value::from),
    );
    assert_eq!(
        w.m.finish("t1").unwrap(),
        Finish::AlreadyTerminal(State::Settled)
    );
    assert_eq!(w.dump(), rows, "finishing a SETTLED transaction wrote");
    w.audit_holds();
}

/// Two instances, many clients: sixteen threads (half on each instance)
/// fund ten deals of one buyer who can pay for five, then race every
/// settlement and refund, then all send one same FUND at once. Exactly one
/// attempt wins each race, nothing is spent twice, and balances sum to 0.
fn many_clients_on_two_instances_never_double_spend_or_double_settle(b: Backend) {
    let c = MarketConfig {
        settle_inline: false,
        // Five of the ten deals.
        grant: 50,
        ..cfg()
    };
    let Some(w) = world_with(b, c.clone(), true) else {
        return;
    };
    const DEALS: usize = 10;
    const THREADS: usize = 16;
    let mut deals = Vec::new();
    for i in 0..DEALS {
        let tx = format!("d{i}");
        w.open(&tx);
        let oh = w.offer(&tx, &w.provider, 10).unwrap();
        let dh = w.lock(&tx, &oh).unwrap();
        w.send(&w.provider, messages::deal_confirm(&tx, &dh))
            .unwrap();
        deals.push((tx, dh));
    }
    assert_eq!(w.bal(&w.buyer), 50);
    let second = w.second(c);
    let markets = [&w.m, &second];
    let token = w.buyer.token.clone();
    let funds: Vec<Map> = deals
        .iter()
        .map(|(tx, dh)| messages::sign(&token, messages::fund(tx, dh, 10)).unwrap())
        .collect();
    let barrier = std::sync::Barrier::new(THREADS);
    let wins: Vec<Vec<usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|k| {
                let (m, funds, token, barrier) = (markets[k % 2], &funds, &token, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    // Each thread in its own order.
                    (0..DEALS)
                        .map(|i| (i * 7 + k * 3) % DEALS)
                        .filter(|&i| m.handle(Some(token), funds[i].clone()).is_ok())
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut funded: Vec<usize> = wins.iter().flatten().copied().collect();
    funded.sort_unstable();
    let n = funded.len();
    funded.dedup();
    assert_eq!(n, funded.len(), "a deal was funded twice: {wins:?}");
    assert_eq!(n, 5, "the buyer's 50 GTU fund exactly five deals: {wins:?}");
    assert_eq!(w.bal(&w.buyer), 0);
    w.audit_holds();

    // Deliver each funded deal (good and bad), then race the outcomes.
    for (j, &i) in funded.iter().enumerate() {
        let (tx, dh) = &deals[i];
        w.deliver(tx, dh, j % 2 == 0).unwrap();
    }
    let outcomes: Vec<Vec<Finish>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|k| {
                let (m, funded, deals, barrier) = (markets[k % 2], &funded, &deals, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    funded
                        .iter()
                        .map(|&i| m.finish(&deals[i].0).unwrap())
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (j, &i) in funded.iter().enumerate() {
        let won = outcomes
            .iter()
            .filter(|o| matches!(o[j], Finish::Settled | Finish::Refunded))
            .count();
        assert_eq!(
            won,
            1,
            "{}: {:?}",
            deals[i].0,
            outcomes.iter().map(|o| &o[j]).collect::<Vec<_>>()
        );
    }
    // Three settled (30 GTU to the provider), two refunded (20 back).
    assert_eq!(w.bal(&w.buyer), 20);
    assert_eq!(w.bal(&w.provider), 80);
    w.audit_holds();

    // One same message from every thread at once: one FUND wins.
    let (tx, dh) = deals
        .iter()
        .enumerate()
        .find(|(i, _)| !funded.contains(i))
        .map(|(_, d)| d.clone())
        .unwrap();
    let msg = messages::sign(&token, messages::fund(&tx, &dh, 10)).unwrap();
    let ok = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|k| {
                let (m, msg, token, barrier) = (markets[k % 2], &msg, &token, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    m.handle(Some(token), msg.clone()).is_ok()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&won| won)
            .count()
    });
    assert_eq!(ok, 1, "one FUND of {tx} wins");
    assert_eq!(w.bal(&w.buyer), 10);
    w.audit_holds();
    for (tx, _) in &deals {
        assert!(w.m.verify_chain(tx).unwrap().ok(), "{tx}");
    }
}

on_both_stores!(
    a_verified_delivery_settles_once_and_pays_the_provider,
    a_wrong_digest_is_rejected_and_refunded_and_a_stale_deal_never_enters,
    deadlines_close_unfunded_jobs_and_refund_funded_ones,
    declining_the_last_live_offer_reopens_the_job,
    every_illegal_transition_is_refused_and_writes_nothing,
    authorization_signatures_and_roles,
    insufficient_funds_cannot_fund,
    the_hard_gate_reports_all_three_missing_fields_and_writes_nothing,
    the_store_refuses_tampering_that_skips_the_state_machine,
    two_settlements_racing_exactly_one_wins,
    two_fundings_racing_spend_once,
    each_rejection_leaves_the_database_unchanged,
    many_clients_on_two_instances_never_double_spend_or_double_settle,
    a_tampered_chain_is_detected,
);

/// Instances starting at once on an empty database: the advisory lock
/// lets exactly one apply the migrations; all of them then work.
#[test]
#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
fn postgres_instances_starting_at_once_migrate_once() {
    let Some(url) = pg::fresh_database("market_migrate") else {
        return;
    };
    let markets: Vec<Market> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| Market::postgres(url.as_str(), cfg()).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let version = pg::with_client(&url, |c| {
        c.query_one(
            "SELECT value FROM gtl_meta WHERE key = 'schema_version'",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
    });
    assert_eq!(version, palaver::market::store_pg::latest_version());
    for (i, m) in markets.iter().enumerate() {
        assert_eq!(m.backend(), "postgres");
        let g = m
            .issue_token(&format!("{i:064}"), &format!("agent{i}"), None)
            .unwrap();
        assert_eq!(m.balance(&g.principal_id).unwrap(), Some(1000));
    }
    assert_eq!(markets[0].audit().unwrap().sum_of_balances, 0);
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

/// Whatever arrives in whatever order: never two terminal states, the
/// ledger conserves value, no commitment pays twice, replays change
/// nothing, and every chain verifies.
fn random_sequence(b: Backend, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let Some(w) = world_with(b, MarketConfig { grant: 30, ..cfg() }, false) else {
        return Ok(());
    };
    let who = |i: u8| match i {
        0 => &w.provider,
        1 => &w.other,
        _ => &w.buyer,
    };
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
            Step::Offer(t, i, p) => {
                if let Some(v) = v(t) {
                    let g = who(i);
                    send(
                        g,
                        messages::offer(
                            &tx(t),
                            &v.job_hash,
                            p,
                            w.m.now_ms() + HOUR / 2,
                            &g.principal_id,
                            &g.agent_id,
                        ),
                    );
                }
            }
            Step::Decline(t) => {
                if let Some(v) = v(t)
                    && let Some(o) = v.offers.first()
                {
                    send(&w.buyer, messages::offer_decline(&tx(t), &o.offer_hash));
                }
            }
            Step::Lock(t) => {
                if let Some(v) = v(t)
                    && let Some(o) = v.offers.last()
                    && let Ok(d) = messages::deal_for(&v, &o.offer_hash)
                {
                    send(&w.buyer, messages::deal_lock(&tx(t), d));
                }
            }
            Step::Confirm(t) => {
                if let Some(v) = v(t)
                    && let Some(d) = &v.deal
                {
                    let g = if d.provider_principal == "provider" {
                        &w.provider
                    } else {
                        &w.other
                    };
                    send(g, messages::deal_confirm(&tx(t), &d.deal_hash));
                }
            }
            Step::Fund(t, a) => {
                if let Some(v) = v(t) {
                    let dh = v.deal_hash.clone().unwrap_or_default();
                    send(&w.buyer, messages::fund(&tx(t), &dh, a));
                }
            }
            Step::Deliver(t, good) => {
                if let Some(v) = v(t)
                    && let Some(d) = &v.deal
                {
                    let g = if d.provider_principal == "provider" {
                        &w.provider
                    } else {
                        &w.other
                    };
                    let prefix = format!("palaver|{}", tx(t));
                    let sol = policy::solve(&prefix, "0", 0, 1, &Default::default()).unwrap();
                    let digest = if good { sol.digest } else { "f".repeat(64) };
                    send(
                        g,
                        messages::deliver(&tx(t), &d.deal_hash, &prefix, sol.nonce, &digest),
                    );
                }
            }
            Step::Finish(t) => {
                let _ = w.m.finish(&tx(t));
            }
            Step::Advance(ms) => {
                w.clock.fetch_add(ms, Ordering::SeqCst);
            }
            Step::Replay(i) => {
                if !sent.is_empty() {
                    let (tok, m) = sent[i % sent.len()].clone();
                    let r = w.m.handle(Some(&tok), m);
                    prop_assert!(r.is_err(), "a replayed message was accepted again");
                }
            }
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
        let held: i64 = ["buyer", "provider", "other"]
            .iter()
            .map(|p| w.m.balance(p).unwrap().unwrap())
            .sum();
        prop_assert_eq!(held + a.escrow, 90);
    }
    for t in 0..3 {
        if let Ok(v) = w.m.transaction(&format!("p{t}")) {
            let kinds: Vec<String> = v
                .events
                .iter()
                .map(|e| e.kind.as_str().to_owned())
                .collect();
            let terminal = kinds
                .iter()
                .filter(|k| matches!(k.as_str(), "SETTLEMENT" | "REFUND"))
                .count()
                + v.events
                    .iter()
                    .filter(|e| e.state_after.as_str() == "CLOSED")
                    .count();
            prop_assert!(terminal <= 1, "{:?}", kinds);
            prop_assert!(palaver::market::verify_chain_value(&v).ok());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_message_sequences_keep_every_invariant(steps in prop::collection::vec(step(), 1..40)) {
        random_sequence(Backend::Sqlite, steps)?;
    }
}

proptest! {
    // Each case is a fresh database: fewer of them.
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
    fn random_message_sequences_keep_every_invariant_on_postgres(steps in prop::collection::vec(step(), 1..40)) {
        random_sequence(Backend::Postgres, steps)?;
    }
}

fn a_tampered_chain_is_detected(b: Backend) {
    let Some(w) = world(b) else { return };
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

/// The PostgreSQL schema has exactly SQLite's tables and columns, in the
/// same order: the machine's SQL, written once, reads the same rows.
#[test]
#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
fn both_stores_have_the_same_tables_and_columns() {
    let Some(url) = pg::fresh_database("market_schema") else {
        return;
    };
    Market::postgres(url.as_str(), cfg()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite");
    Market::open(&path, cfg()).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'gtl_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut sqlite = Vec::new();
    for t in &tables {
        let cols: Vec<String> = c
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{t}') ORDER BY cid"
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        sqlite.push(format!("{t}: {}", cols.join(", ")));
    }
    let postgres = pg::with_client(&url, |c| {
        c.query(
            "SELECT table_name::text, string_agg(column_name::text, ', ' ORDER BY ordinal_position)
             FROM information_schema.columns WHERE table_schema = 'public' AND table_name LIKE 'gtl\\_%'
             GROUP BY table_name ORDER BY table_name COLLATE \"C\"",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| format!("{}: {}", r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect::<Vec<_>>()
    });
    assert_eq!(postgres, sqlite);
}
