//! The market's HTTP routes on both stores: a community server with its
//! market (SQLite, or PostgreSQL for both the community and the market)
//! serves a whole job — token, listing, every message, the transaction
//! view, balances — and its refusals in the market's error envelope.
//!
//! On PostgreSQL this also proves every route runs the market on tokio's
//! blocking pool: the blocking `postgres` client panics when it is driven
//! from an async worker thread, so a route that called the market directly
//! would fail here. `NAME::postgres` is `#[ignore]`d like every test that
//! needs an outside peer (scripts/test provides `PALAVER_TEST_PG`).

use crate::common;

use palaver::community::{Config, PgStore, SqliteStore, Store};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::market::time::system_ms;
use palaver::market::workflow::JobAsk;
use palaver::market::{Market, MarketClient, MarketClientError, MarketConfig, policy};
use palaver::web::Client;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

/// Each test once per store: `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
            async fn postgres() {
                super::$name(super::Backend::Postgres).await
            }
        }
    )+};
}

fn cfg() -> Config {
    Config {
        difficulty: 1,
        rate_limit: 0.0,
        ..Config::default()
    }
}

/// A community server with its market on `b`; None when PostgreSQL is not
/// configured (the test skips).
async fn start(b: Backend) -> Option<(String, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let mc = MarketConfig {
        durable: false,
        ..MarketConfig::default()
    };
    let (store, market): (Arc<dyn Store>, Market) = match b {
        Backend::Sqlite => {
            let db = dir.path().join("community.sqlite");
            (
                Arc::new(SqliteStore::open(&db).unwrap()),
                Market::open(&db, mc).unwrap(),
            )
        }
        Backend::Postgres => {
            let url = common::pg::fresh_database("market_http")?;
            // Both block: never on the runtime's threads.
            tokio::task::spawn_blocking(move || {
                let store = PgStore::connect(&url, 4).unwrap().0;
                let market = Market::postgres(url.as_str(), mc).unwrap();
                (Arc::new(store) as Arc<dyn Store>, market)
            })
            .await
            .unwrap()
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let c = cfg();
    let app = palaver::services::server::router_on(store, c.clone(), Some(Arc::new(market)));
    tokio::spawn(palaver::web::serve_router(listener, app, c.read_timeout));
    Some((url, dir))
}

/// A registered identity's market client.
async fn trader(url: &str, nick: &str) -> MarketClient {
    let keys = KeyPair::generate();
    let c = Client::new(url, keys.clone()).unwrap();
    let (status, v) = c.register(nick, "").await.unwrap();
    assert_eq!(status, 201, "{v:?}");
    MarketClient::connect(url, keys, Some(nick)).await.unwrap()
}

fn code(r: Result<Value, MarketClientError>) -> (u16, String) {
    match r {
        Err(MarketClientError::Rejected { status, code, .. }) => (status, code),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn a_job_from_token_to_settlement_over_http(b: Backend) {
    let Some((url, _dir)) = start(b).await else {
        return;
    };
    let buyer = trader(&url, "buyer").await;
    let provider = trader(&url, "provider").await;
    assert_eq!(buyer.balance().await.unwrap(), 1000);
    let ask = JobAsk {
        transaction_id: Some("job_http_1"),
        prefix: None,
        target: "0",
        budget: 15,
        deadline_ms: system_ms() + 3_600_000,
    };
    let (tx, _) = buyer.open_job(&ask).await.unwrap();
    // The same transaction id again: first writer wins.
    assert_eq!(
        code(buyer.open_job(&ask).await.map(|(_, v)| v)),
        (409, "duplicate_transaction".into())
    );
    let listed = provider.market(false).await.unwrap();
    let job = listed.iter().find(|l| l.transaction_id == tx).unwrap();
    let r = provider
        .offer_on(&tx, &job.job_hash, &job.deadline, 10, 600_000)
        .await
        .unwrap();
    let oh = r
        .get("hashes")
        .and_then(|h| h.get("offer_hash"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let view = buyer.transaction(&tx).await.unwrap();
    buyer.lock_deal(&view, &oh).await.unwrap();
    let view = provider.transaction(&tx).await.unwrap();
    provider.confirm_deal(&view).await.unwrap();
    let view = buyer.transaction(&tx).await.unwrap();
    // The provider cannot fund the buyer's deal.
    assert_eq!(code(provider.fund_deal(&view).await.map(|(_, v)| v)).0, 403);
    buyer.fund_deal(&view).await.unwrap();
    assert_eq!(buyer.balance().await.unwrap(), 990);
    let view = provider.transaction(&tx).await.unwrap();
    let (prefix, target) = view.input();
    let sol = policy::solve(&prefix, &target, 0, 1, &Default::default()).unwrap();
    let r = provider.deliver_solution(&view, &sol).await.unwrap();
    assert_eq!(r.get("state").and_then(Value::as_str), Some("SETTLED"));
    assert_eq!(provider.balance().await.unwrap(), 1010);
    let v = buyer.transaction(&tx).await.unwrap();
    assert!(palaver::market::verify_chain_value(&v).ok());
    assert_eq!(v.events.len(), 8);
    // Finished jobs leave the open listing and stay in the full one.
    assert!(
        !buyer
            .market(false)
            .await
            .unwrap()
            .iter()
            .any(|l| l.transaction_id == tx)
    );
    assert!(
        buyer
            .market(true)
            .await
            .unwrap()
            .iter()
            .any(|l| l.transaction_id == tx)
    );
    // Unknown transactions and principals: 404 in the market's envelope.
    assert_eq!(
        code(buyer.transaction("job_nope").await.map(|_| Value::Null)),
        (404, "not_found".into())
    );
    let http = plain_get(&url, "/api/gtl/accounts/nobody").await;
    assert_eq!(http.0, 404);
    assert_eq!(
        http.1.get("error").and_then(Value::as_str),
        Some("not_found")
    );
    let http = plain_get(&url, "/api/gtl/accounts/provider").await;
    assert_eq!(http.1.get("balance").and_then(Value::as_i64), Some(1010));
}

/// A plain GET with the community client's unsigned transport.
async fn plain_get(url: &str, path: &str) -> (u16, Value) {
    let c = Client::new(url, KeyPair::generate()).unwrap();
    c.send("GET", path, Vec::new(), &[]).await.unwrap()
}

on_both_stores!(a_job_from_token_to_settlement_over_http);
