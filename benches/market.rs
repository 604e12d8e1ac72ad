//! The market's throughput figures: solver hashes per second on one core
//! (the inner loop a provider runs), and state-machine transitions per
//! second, durable, through `Market::handle` (parse, signature, gate and
//! guards, the store's triggers, the event chain; no HTTP, no client-side
//! signing cost beyond `messages::sign`, no solving: target "0"):
//!
//! - one client, then 16 clients (threads) at once, on a SQLite file
//!   (`synchronous=FULL`; the market's group commit shares each fsync among
//!   the messages that arrived together);
//! - the same two on PostgreSQL when `PALAVER_BENCH_PG` (or
//!   `PALAVER_TEST_PG`) names a cluster's base URL: a fresh database per
//!   figure, `synchronous_commit=on`, one READ COMMITTED transaction per
//!   message over a pool of the market's own (PostgreSQL's group commit
//!   shares WAL flushes among concurrent commits). Client and server share
//!   this machine's cores.

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

/// The PostgreSQL cluster to measure on, if any.
fn pg_base() -> Option<String> {
    ["PALAVER_BENCH_PG", "PALAVER_TEST_PG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
}

/// A fresh database on the cluster at `base`; its URL.
fn pg_database(base: &str, tag: &str) -> String {
    let name = format!("bench_market_{tag}_{}", std::process::id());
    let mut c = postgres::Client::connect(base, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .unwrap();
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let (head, query) = base
        .split_once('?')
        .map_or((base, None), |(h, q)| (h, Some(q)));
    let start = head.find("://").map_or(0, |i| i + 3);
    let root = head[start..].find('/').map_or(head, |i| &head[..start + i]);
    match query {
        Some(q) => format!("{root}/{name}?{q}"),
        None => format!("{root}/{name}"),
    }
}

/// A durable market (SQLite in `dir`, or PostgreSQL at `pg`) with a buyer
/// and a provider.
fn market(dir: &std::path::Path, pg: Option<&str>, t0: i64) -> (Market, Grant, Grant) {
    let (clock, _h) = Clock::manual(t0);
    let cfg = MarketConfig {
        grant: i64::from(i32::MAX),
        ..MarketConfig::default()
    };
    let m = match pg {
        Some(url) => Market::postgres(url, cfg),
        None => Market::open(&dir.join("bench.sqlite"), cfg),
    }
    .unwrap()
    .with_clock(clock);
    let buyer = m.issue_token(&"a".repeat(64), "buyer", None).unwrap();
    let prov = m.issue_token(&"b".repeat(64), "provider", None).unwrap();
    (m, buyer, prov)
}

fn transitions(c: &mut Criterion) {
    let t0 = 1_861_920_000_000i64;
    let mut g = c.benchmark_group("market");
    g.sample_size(10);
    let base = pg_base();
    let stores: Vec<(&str, Option<String>)> = std::iter::once(("sqlite", None))
        .chain(
            base.iter()
                .map(|b| ("postgres", Some(pg_database(b, "one")))),
        )
        .collect();
    for (store, pg) in &stores {
        let dir = tempfile::tempdir().unwrap();
        let (m, buyer, prov) = market(dir.path(), pg.as_deref(), t0);
        let mut i = 0u64;
        g.throughput(Throughput::Elements(8));
        let name = match *store {
            "sqlite" => "job_to_settled_durable_8_transitions".to_owned(),
            s => format!("job_to_settled_durable_8_transitions_{s}"),
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                one_job(&m, &buyer, &prov, &format!("b{i}"), t0);
            })
        });
    }
    // Many clients at once, as a server sees them.
    const CLIENTS: u64 = 16;
    let stores: Vec<(&str, Option<String>)> = std::iter::once(("sqlite", None))
        .chain(
            base.iter()
                .map(|b| ("postgres", Some(pg_database(b, "many")))),
        )
        .collect();
    for (store, pg) in &stores {
        let dir = tempfile::tempdir().unwrap();
        let (m, buyer, prov) = market(dir.path(), pg.as_deref(), t0);
        let mut round = 0u64;
        g.throughput(Throughput::Elements(8 * CLIENTS));
        let name = match *store {
            "sqlite" => "16_clients_job_to_settled_durable".to_owned(),
            s => format!("16_clients_job_to_settled_durable_{s}"),
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                round += 1;
                std::thread::scope(|s| {
                    for k in 0..CLIENTS {
                        let (m, buyer, prov) = (&m, &buyer, &prov);
                        s.spawn(move || one_job(m, buyer, prov, &format!("r{round}c{k}"), t0));
                    }
                });
            })
        });
        eprintln!("16 clients on {store}: {} commits so far", m.commits());
    }
    g.finish();
}

criterion_group!(benches, solver, transitions);
criterion_main!(benches);
