//! The market's two throughput figures: solver hashes per second on one
//! core (the inner loop a provider runs), and state-machine transitions per
//! second with a durable SQLite file (`synchronous=FULL`, one fsync per
//! committed transition).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::json::Value;
use palaver::market::messages::{self, JobRequest};
use palaver::market::time::Clock;
use palaver::market::{Grant, Market, MarketConfig, policy};

fn solver(c: &mut Criterion) {
    let mut g = c.benchmark_group("solver");
    const N: u64 = 1 << 20;
    g.throughput(Throughput::Elements(N));
    g.bench_function("sha256_nonce_one_core", |b| {
        b.iter(|| policy::hashes_in("AIguishi|GTL|job_demo_001", N))
    });
    g.finish();
}

/// One job from JOB_OPEN to SETTLED: 8 events, 6 messages (JOB_OPEN,
/// OFFER, DEAL_LOCK, DEAL_CONFIRM, FUND, DELIVER → VERIFICATION and
/// SETTLEMENT as server events).
/// One job from JOB_OPEN to SETTLED: 8 transitions in 6 messages.
fn one_job(m: &Market, buyer: &Grant, prov: &Grant, tx: &str, t0: i64) {
    let send = |g: &Grant, msg| {
        m.handle(Some(&g.token), messages::sign(&g.token, msg).unwrap())
            .unwrap()
    };
    let h = |v: &Value, k: &str| {
        v.get("hashes")
            .and_then(|x| x.get(k))
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    };
    let prefix = format!("bench|{tx}");
    let r = send(
        buyer,
        messages::job_open(&JobRequest {
            transaction_id: tx,
            prefix: &prefix,
            target: "0",
            budget: 10,
            deadline_ms: t0 + 3_600_000,
            principal_id: "buyer",
            agent_id: "buyer",
        }),
    );
    let (jh, ah, ph) = (
        h(&r, "job_hash"),
        h(&r, "authority_hash"),
        h(&r, "verification_policy_hash"),
    );
    let r = send(
        prov,
        messages::offer(tx, &jh, 10, t0 + 60_000, "provider", "provider"),
    );
    let deal = messages::deal(&jh, &h(&r, "offer_hash"), &ah, &ph, 10, "provider");
    let r = send(buyer, messages::deal_lock(tx, deal));
    let dh = h(&r, "deal_hash");
    send(prov, messages::deal_confirm(tx, &dh));
    send(buyer, messages::fund(tx, &dh, 10));
    let sol = policy::solve(&prefix, "0", 0, 1, &Default::default()).unwrap();
    let r = send(
        prov,
        messages::deliver(tx, &dh, &prefix, sol.nonce, &sol.digest),
    );
    assert_eq!(r.get("state").and_then(Value::as_str), Some("SETTLED"));
}

fn market(dir: &std::path::Path, t0: i64) -> (Market, Grant, Grant) {
    let (clock, _h) = Clock::manual(t0);
    let m = Market::open(
        &dir.join("bench.sqlite"),
        MarketConfig {
            grant: i64::from(i32::MAX),
            ..MarketConfig::default()
        },
    )
    .unwrap()
    .with_clock(clock);
    let buyer = m.issue_token(&"a".repeat(64), "buyer", None).unwrap();
    let prov = m.issue_token(&"b".repeat(64), "provider", None).unwrap();
    (m, buyer, prov)
}

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let t0 = 1_861_920_000_000i64;
    let (m, buyer, prov) = market(dir.path(), t0);
    let mut i = 0u64;
    let mut g = c.benchmark_group("market");
    g.throughput(Throughput::Elements(8));
    g.sample_size(20);
    g.bench_function("job_to_settled_durable_8_transitions", |b| {
        b.iter(|| {
            i += 1;
            one_job(&m, &buyer, &prov, &format!("b{i}"), t0);
        })
    });
    // Many clients at once, as a server sees them: group commit shares
    // each fsync among the messages that arrived together.
    const CLIENTS: u64 = 16;
    let dir2 = tempfile::tempdir().unwrap();
    let (m2, buyer2, prov2) = market(dir2.path(), t0);
    let m2 = std::sync::Arc::new(m2);
    let mut round = 0u64;
    g.throughput(Throughput::Elements(8 * CLIENTS));
    g.bench_function("16_clients_job_to_settled_durable", |b| {
        b.iter(|| {
            round += 1;
            std::thread::scope(|s| {
                for k in 0..CLIENTS {
                    let (m2, buyer2, prov2) = (&m2, &buyer2, &prov2);
                    s.spawn(move || one_job(m2, buyer2, prov2, &format!("r{round}c{k}"), t0));
                }
            });
        })
    });
    g.finish();
    eprintln!(
        "16 clients: {} commits so far (group commit shares them)",
        m2.commits()
    );
}

criterion_group!(benches, solver, transitions);
criterion_main!(benches);
