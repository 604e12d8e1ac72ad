//! What the fuzz targets `gtl_market` and `community_request` do with one
//! input, shared with their property-test twins in tests/hostile_props.rs
//! (which include this file), so CI checks the same invariants the fuzzers
//! do:
//!
//! - GTL bytes: strict parsing never panics; what parses is canonical, its
//!   canonical bytes parse back to the same value, hashes and signatures are
//!   those of the canonical bytes.
//! - A GTL message submitted to the market (raw, or a valid JOB_OPEN with one
//!   member replaced and re-signed): accepted, or refused with a 4xx that
//!   writes nothing; the ledger audit holds either way.
//! - A community request (any route, any body, right or wrong auth) through
//!   the real router in process: never a 5xx; a refusal is a 4xx with a JSON
//!   `error` and `message` and writes nothing; wrong auth is always a 401.
#![allow(dead_code)]

use palaver::community::Config;
use palaver::community::store::Agent;
use palaver::community::{SqliteStore, Store};
use palaver::identity::KeyPair;
use palaver::json::{Map, Value};
use palaver::market::canonical;
use palaver::market::messages::{self, JobRequest};
use palaver::market::{Grant, Market, MarketConfig};
use palaver::services::server::router;
use palaver::web::InProcess;
use palaver::web::auth;
use std::path::Path;
use std::sync::Arc;

/// A market with a buyer and a provider.
pub struct Gtl {
    pub market: Market,
    pub buyer: Grant,
    pub provider: Grant,
}

fn market_config() -> MarketConfig {
    MarketConfig {
        durable: false,
        ..MarketConfig::default()
    }
}

impl Gtl {
    /// In memory, or in the SQLite file at `path`.
    pub fn new(path: Option<&Path>) -> Gtl {
        let market = match path {
            Some(p) => Market::open(p, market_config()),
            None => Market::memory(market_config()),
        }
        .expect("a market");
        let buyer = market
            .issue_token(&"a".repeat(64), "buyer", None)
            .expect("the buyer's token");
        let provider = market
            .issue_token(&"b".repeat(64), "provider", None)
            .expect("the provider's token");
        Gtl {
            market,
            buyer,
            provider,
        }
    }

    /// A JOB_OPEN the market accepts, transaction `tx_{n}` (unsigned).
    pub fn job(&self, n: u64) -> Map {
        messages::job_open(&JobRequest {
            transaction_id: &format!("tx_{n}"),
            prefix: &format!("palaver|{n}"),
            target: "0",
            budget: 5,
            deadline_ms: self.market.now_ms() + 3_600_000,
            principal_id: &self.buyer.principal_id,
            agent_id: &self.buyer.agent_id,
        })
    }
}

/// Strict parsing, canonical bytes, hashes and signatures of any bytes.
pub fn gtl_bytes(data: &[u8]) {
    let Ok(v) = canonical::parse_strict(data) else {
        return;
    };
    let bytes = canonical::canonical_json(&v).expect("a strictly parsed value is canonical");
    let again = canonical::parse_strict(&bytes).expect("canonical bytes parse strictly");
    assert!(again == v, "canonical bytes parse back to another value");
    assert_eq!(
        canonical::canonical_json(&again).expect("canonical"),
        bytes,
        "canonical_json is not a fixed point"
    );
    assert_eq!(
        canonical::hash(&v).expect("a hash"),
        palaver::json::canonical::sha256_hex(&bytes)
    );
    if let Some(m) = v.as_object() {
        let sig = canonical::signature("token", m).expect("a signature");
        assert_eq!(sig.len(), 64);
        let signed = messages::sign("token", m.clone()).expect("signing");
        let carried = signed
            .get("signature")
            .and_then(Value::as_str)
            .expect("a signature member");
        assert!(canonical::hex_eq(carried, &sig));
        // The signature covers everything but itself.
        assert_eq!(canonical::signature("token", &signed).expect("again"), sig);
    }
}

/// Submits `data` with `token`; returns whether the market accepted it. A
/// refusal is a 4xx and leaves `snapshot()` and the ledger as they were;
/// the audit holds either way.
pub fn gtl_submit(g: &Gtl, token: &str, data: &[u8], snapshot: &dyn Fn() -> String) -> bool {
    let before = snapshot();
    let audit = g.market.audit().expect("an audit");
    let r = g.market.submit(Some(token), data);
    if let Err(e) = &r {
        assert!(
            (400..500).contains(&e.status()),
            "a refusal that is not a 4xx: {} {e}",
            e.status()
        );
        assert!(
            !e.to_string().is_empty() && !e.code().is_empty(),
            "an unclear refusal"
        );
        assert!(snapshot() == before, "a refused message wrote: {e}");
        assert_eq!(g.market.audit().expect("an audit"), audit);
    }
    let a = g.market.audit().expect("an audit");
    assert_eq!(a.sum_of_balances, 0, "{a:?}");
    assert_eq!(a.escrow, a.reserved, "{a:?}");
    assert_eq!(a.ledger_mismatches, 0, "{a:?}");
    assert_eq!(a.double_outcomes, 0, "{a:?}");
    r.is_ok()
}

/// Replaces the value at pre-order position `pick` (modulo the number of
/// values below the root) with `replacement`.
pub fn mutate(v: &mut Value, pick: usize, replacement: Value) {
    fn count(v: &Value) -> usize {
        match v {
            Value::Array(a) => a.iter().map(|x| 1 + count(x)).sum(),
            Value::Object(m) => m.iter().map(|(_, x)| 1 + count(x)).sum(),
            _ => 0,
        }
    }
    fn walk(v: &mut Value, k: &mut usize, r: &mut Option<Value>) {
        match v {
            Value::Array(a) => {
                for c in a.iter_mut() {
                    if visit(c, k, r) {
                        return;
                    }
                }
            }
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().map(str::to_owned).collect();
                for key in keys {
                    if let Some(c) = m.get_mut(&key)
                        && visit(c, k, r)
                    {
                        return;
                    }
                }
            }
            _ => {}
        }
    }
    /// Replaces `c` when the count reaches it; true once replaced.
    fn visit(c: &mut Value, k: &mut usize, r: &mut Option<Value>) -> bool {
        if r.is_none() {
            return true;
        }
        if *k == 0 {
            *c = r.take().expect("a replacement");
            return true;
        }
        *k -= 1;
        walk(c, k, r);
        r.is_none()
    }
    let n = count(v);
    if n == 0 {
        return;
    }
    let mut k = pick % n;
    walk(v, &mut k, &mut Some(replacement));
}

/// One structured case: JOB_OPEN `tx_{n}` with the value at `pick` replaced
/// by `replacement`, signed, submitted.
pub fn gtl_mutated(
    g: &Gtl,
    n: u64,
    pick: usize,
    replacement: Value,
    snapshot: &dyn Fn() -> String,
) {
    let mut job = Value::Object(g.job(n));
    mutate(&mut job, pick, replacement);
    let Some(m) = job.as_object() else { return };
    // A value canonical JSON cannot carry cannot be signed: send it with the
    // signature of the unmutated message instead.
    let signed = messages::sign(&g.buyer.token, m.clone()).unwrap_or_else(|_| {
        let mut m = m.clone();
        m.insert("signature", Value::from("0".repeat(64)));
        m
    });
    let bytes = palaver::json::canonical::to_vec(&Value::Object(signed));
    gtl_submit(g, &g.buyer.token, &bytes, snapshot);
}

/// A community server with a registered identity and a market, in process.
pub struct Community {
    pub app: InProcess,
    pub keys: KeyPair,
    pub token: String,
}

/// Every route, with stand-in ids and queries.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/v1/auth/challenge"),
    ("POST", "/api/v1/auth/register"),
    ("POST", "/api/v1/protocols"),
    ("GET", "/api/v1/protocols?limit=5&cursor=a"),
    ("GET", "/api/v1/protocols/x"),
    ("GET", "/api/v1/protocols/x/bundle"),
    ("POST", "/api/v1/invitations"),
    (
        "GET",
        "/api/v1/invitations?protocol_id=a&type=supply&tags=t&limit=3",
    ),
    ("GET", "/api/v1/invitations/x"),
    ("DELETE", "/api/v1/invitations/x"),
    ("POST", "/api/v1/invitations/x/renew"),
    ("POST", "/api/v1/sessions"),
    ("GET", "/api/v1/sessions/x"),
    ("POST", "/api/v1/sessions/x/status"),
    ("POST", "/api/v1/sessions/x/result"),
    ("GET", "/api/v1/sessions/x/transport"),
    ("PATCH", "/api/v1/sessions/x/transport"),
    ("POST", "/api/v1/feedback"),
    ("POST", "/api/v1/ratings"),
    ("GET", "/api/v1/agents/x/stats"),
    ("POST", "/api/gtl/token"),
    ("POST", "/api/gtl"),
    ("GET", "/api/gtl/transactions/x"),
    ("GET", "/api/gtl/accounts/x"),
    ("GET", "/api/market?all=1"),
];

impl Community {
    /// The store and the market in the SQLite file at `path`.
    pub fn new(path: &Path) -> Community {
        let store = SqliteStore::open(path).expect("a store");
        let keys = KeyPair::generate();
        store
            .add_agent(&Agent {
                id: 0,
                public_key: keys.public_key.clone(),
                nickname: "fuzz".into(),
                bio: String::new(),
                agent_id: keys.public_key[..16].to_owned(),
                registered_at: 0.0,
            })
            .expect("an agent");
        let market = Market::open(path, market_config()).expect("a market");
        let grant = market
            .issue_token(&keys.public_key, &keys.public_key[..16], None)
            .expect("a token");
        let cfg = Config {
            rate_limit: 0.0,
            ..Config::default()
        };
        let app = InProcess::new(router(Box::new(store), cfg, Some(Arc::new(market))))
            .expect("a runtime");
        Community {
            app,
            keys,
            token: grant.token,
        }
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// How a request is authenticated: 0 right, then wrong in one way each.
pub const SIGNINGS: u8 = 7;

/// One request: route `route`, `body`, signed as `signing` says.
pub fn community_request(
    c: &Community,
    route: usize,
    signing: u8,
    body: &[u8],
    snapshot: &dyn Fn() -> String,
) {
    let (method, path) = ROUTES[route % ROUTES.len()];
    let now = unix_now();
    let signing = signing % SIGNINGS;
    let signed = |k: &KeyPair, m: &str, p: &str, b: &[u8], t: i64| -> Vec<(String, String)> {
        auth::headers(k, m, p, b, t)
            .map(|(a, v)| (a.to_owned(), v))
            .to_vec()
    };
    let mut headers = match signing {
        0 => signed(&c.keys, method, path, body, now),
        1 => {
            // Another key's signature under this key.
            let mut h = signed(&KeyPair::generate(), method, path, body, now);
            h[0].1 = c.keys.public_key.clone();
            h
        }
        2 => signed(&c.keys, method, path, body, now - auth::MAX_SKEW - 60),
        3 => signed(&c.keys, method, path, body, now + auth::MAX_SKEW + 60),
        4 => signed(&c.keys, method, path, b"another body", now),
        5 => {
            let mut h = signed(&c.keys, method, path, body, now);
            h[3].1 = "00".repeat(64);
            h
        }
        _ => signed(&c.keys, method, path, body, now)
            .into_iter()
            .filter(|(k, _)| k != "X-Signature")
            .collect(),
    };
    let market =
        path.starts_with("/api/gtl") && path != "/api/gtl/token" || path.starts_with("/api/market");
    if path == "/api/gtl" {
        headers.push(("Authorization".into(), format!("Bearer {}", c.token)));
    }
    let before = snapshot();
    let (status, reply) = c
        .app
        .request(method, path, &headers, body.to_vec())
        .expect("the request builds");
    let v = palaver::json::parse_bytes(&reply).unwrap_or(Value::Null);
    assert!(
        status < 500,
        "{method} {path}: {status} {}",
        String::from_utf8_lossy(&reply)
    );
    if status >= 400 {
        let clear = v
            .get("error")
            .and_then(Value::as_str)
            .is_some_and(|e| !e.is_empty())
            && v.get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.is_empty());
        assert!(
            clear,
            "{method} {path}: {status} without a JSON error: {}",
            String::from_utf8_lossy(&reply)
        );
        assert!(
            snapshot() == before,
            "{method} {path}: a refusal ({status}) wrote"
        );
    }
    if signing != 0 && !market {
        assert_eq!(status, 401, "{method} {path} with signing {signing}: {v:?}");
    }
}
