//! The community on PostgreSQL, served by several `palaver serve`
//! processes at once: migrations (twice is a no-op, instances starting
//! together migrate once), `serve --migrate-only`, the health endpoint,
//! graceful shutdown, and races driven at two instances at once that must
//! never let both accept — a replayed request id, the rate limit, the
//! invitation limit, a second session on one invitation, a registration
//! challenge spent twice. Last, the reference client across two instances:
//! it registers on one, hosts through the other, and palaver joins through
//! the first.
//!
//! Every test here needs PostgreSQL (`PALAVER_TEST_PG`; scripts/test starts
//! a throwaway cluster) and is `#[ignore]`d for a plain `cargo test`.

use crate::common;

use common::{Kill, Serve, ok, palaver_serve, read_until};
use palaver::community::PgStore;
use palaver::identity::KeyPair;
use palaver::json::{self, Value};
use palaver::obj;
use palaver::web::{Client, auth};
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");
const PID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `palaver serve` on the PostgreSQL database `url` (and `extra` flags).
fn serve(url: &str, extra: &[&str]) -> (Serve, String) {
    palaver_serve(Path::new(url), extra)
}

/// A `palaver serve` process and its URL.
type Instance = (Serve, String);

/// Two instances on one fresh database (and its URL).
fn two(tag: &str, extra: &[&str]) -> Option<(String, Instance, Instance)> {
    let db = common::pg::fresh_database(tag)?;
    let a = serve(&db, extra);
    let b = serve(&db, extra);
    Some((db, a, b))
}

async fn registered(url: &str, nick: &str) -> Client {
    let c = Client::new(url, KeyPair::generate()).unwrap();
    let (status, v) = c.register(nick, "").await.unwrap();
    assert_eq!(status, 201, "{v:?}");
    c
}

/// `c`'s identity talking to another instance.
fn at(c: &Client, url: &str) -> Client {
    Client::new(url, c.keys().clone()).unwrap()
}

fn invitation_body(c: &Client, ticket: &str) -> Value {
    Value::Object(common::invitation_body(c.keys(), ticket, PID, "play"))
}

fn proof(post_id: &str, host: &KeyPair, guest: &KeyPair, nonce: &str) -> Value {
    let canonical = auth::session_canonical(
        post_id,
        &host.public_key,
        &guest.public_key,
        Some(PID),
        nonce,
    );
    Value::Object(obj! {
        "post_id" => post_id, "host_public_key" => host.public_key.as_str(), "guest_public_key" => guest.public_key.as_str(),
        "protocol_id" => PID, "session_nonce" => nonce,
        "host_signature" => host.sign(canonical.as_bytes()), "guest_signature" => guest.sign(canonical.as_bytes()),
    })
}

fn count(db: &str, sql: &'static str, arg: String) -> i64 {
    common::pg::with_client(db, move |c| c.query_one(sql, &[&arg]).unwrap().get(0))
}

// ---------------------------------------------------------------------------
// Migrations.

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[test]
fn migrating_twice_is_a_no_op_and_instances_starting_together_migrate_once() {
    let Some(db) = common::pg::fresh_database("migrate") else {
        return;
    };
    let first = PgStore::migrate_only(&db).unwrap();
    assert_eq!(
        (first.from, first.to),
        (0, palaver::community::pg::SCHEMA_VERSION)
    );
    let before = common::pg::dump(&db);
    let again = PgStore::migrate_only(&db).unwrap();
    assert_eq!(again.from, again.to);
    assert_eq!(common::pg::dump(&db), before);

    // Eight instances at once on a fresh database: one migrates, the
    // others wait for its lock and find the schema current.
    let Some(db) = common::pg::fresh_database("migrate_race") else {
        return;
    };
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let (db, barrier) = (db.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                PgStore::connect(&db, 2).map(|(_, m)| (m.from, m.to))
            })
        })
        .collect();
    let results: Vec<(i64, i64)> = runs
        .into_iter()
        .map(|t| t.join().unwrap().expect("a concurrent start failed"))
        .collect();
    let migrated = results.iter().filter(|(f, t)| f != t).count();
    assert_eq!(migrated, 1, "{results:?}");
    let versions = count(
        &db,
        "SELECT COUNT(*) FROM schema_version WHERE component = $1",
        "community".into(),
    );
    assert_eq!(versions, 1);
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[test]
fn migrate_only_says_what_it_did_and_exits() {
    let Some(db) = common::pg::fresh_database("migrate_only") else {
        return;
    };
    let run = || {
        let o = Command::new(BIN)
            .args(["--json", "serve", "--migrate-only", "--db", &db])
            .output()
            .unwrap();
        json::parse_str(&ok(o, "serve --migrate-only")).unwrap()
    };
    let v = run();
    assert_eq!(v.get("store").and_then(Value::as_str), Some("postgres"));
    let community = &v.get("migrations").and_then(Value::as_array).unwrap()[0];
    assert_eq!(community.get("from").and_then(Value::as_i64), Some(0));
    assert_eq!(
        community.get("status").and_then(Value::as_str),
        Some("migrated")
    );
    let market = &v.get("migrations").and_then(Value::as_array).unwrap()[1];
    assert_eq!(
        market.get("component").and_then(Value::as_str),
        Some("market")
    );
    assert_eq!(market.get("from").and_then(Value::as_i64), Some(0));
    assert_eq!(
        market.get("status").and_then(Value::as_str),
        Some("migrated")
    );
    let v = run();
    for part in v.get("migrations").and_then(Value::as_array).unwrap() {
        assert_eq!(
            part.get("status").and_then(Value::as_str),
            Some("up to date"),
            "{part:?}"
        );
    }
    // The human form names the database without its password.
    let o = Command::new(BIN)
        .args(["serve", "--migrate-only", "--db", &db])
        .output()
        .unwrap();
    let out = ok(o, "serve --migrate-only");
    assert!(out.contains("community: schema version"), "{out}");
}

#[test]
fn a_postgres_url_that_does_not_parse_is_refused_by_name() {
    for (url, says) in [
        ("postgres://u:secret@h:port/db", "the port `port`"),
        ("postgres://h/db", "names no user"),
        ("postgres://u@h/db?sslmode=sometimes", "does not parse"),
        ("mysql://u@h/db", "unknown scheme"),
    ] {
        let o = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0", "--db", url])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{url} was accepted");
        assert!(err.contains(says), "{url}: {err}");
        assert!(
            !err.contains("secret"),
            "{url}: the password is shown: {err}"
        );
    }
    let o = Command::new(BIN)
        .args(["serve", "--db-pool", "0", "--db", "postgres://u@h/db"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("out of range"),
        "{o:?}"
    );
}

// ---------------------------------------------------------------------------
// Health and shutdown.

/// One raw HTTP/1.1 exchange: (status, body).
fn http(url: &str, request: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_owned())
}

fn sigterm(k: &Kill) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(k.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_and_sigterm_finishes_the_request_in_flight() {
    let Some(db) = common::pg::fresh_database("shutdown") else {
        return;
    };
    let (mut k, url) = serve(&db, &["--rate-limit", "0"]);
    let (status, body) = http(
        &url,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"status":"ok","store":"postgres"}"#);

    // A registered host starts a request and sends half its body…
    let host = registered(&url, "host").await;
    let body = palaver::json::canonical::to_string_ordered(&invitation_body(&host, "t"));
    let path = "/api/v1/invitations";
    let headers = auth::headers(host.keys(), "POST", path, body.as_bytes(), now());
    let addr = url.trim_start_matches("http://").to_owned();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, v) in headers {
        head.push_str(&format!("{name}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let (first, rest) = body.as_bytes().split_at(body.len() / 2);
    s.write_all(first).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // …the server is told to stop…
    sigterm(&k);
    std::thread::sleep(Duration::from_millis(300));
    // …and no longer takes connections, but answers the request in flight.
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "a stopping server still accepts connections"
    );
    s.write_all(rest).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 201"), "{raw}");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = k.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let mut err = String::new();
    if let Some(mut e) = k.0.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM invitations WHERE public_key = $1",
            host.keys().public_key.clone()
        ),
        1
    );
}

// ---------------------------------------------------------------------------
// Races at two instances.

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_request_id_is_accepted_by_one_instance_only() {
    let Some((_db, (_ka, a), (_kb, b))) = two("replay", &["--rate-limit", "0"]) else {
        return;
    };
    let c = registered(&a, "c").await;
    let (ca, cb) = (at(&c, &a), at(&c, &b));
    let path = "/api/v1/invitations";
    for round in 0..20 {
        // One signed request (one request id), sent to both at once.
        let h: Vec<(String, String)> = auth::headers(c.keys(), "GET", path, b"", now())
            .map(|(k, v)| (k.to_owned(), v))
            .to_vec();
        let (ra, rb) = tokio::join!(
            ca.send("GET", path, Vec::new(), &h),
            cb.send("GET", path, Vec::new(), &h)
        );
        let mut got = [ra.unwrap(), rb.unwrap()];
        got.sort_by_key(|(s, _)| *s);
        assert_eq!((got[0].0, got[1].0), (200, 401), "round {round}: {got:?}");
        assert!(
            got[1]
                .1
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains("already used")),
            "{got:?}"
        );
    }
}

/// Ends every connection of `db` but the caller's (as a database restart
/// or an administrator would); how many it ended.
fn end_connections(db: &str) -> i64 {
    common::pg::with_client(db, |c| {
        c.query_one(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0)
    })
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_lane_connects_again_after_the_database_ends_its_connections() {
    // The replay window, the browse and a session create's usual case run
    // on the lane's connections; the database ending them (a restart, an
    // administrator) costs at most the requests in flight, never the
    // server: the next calls connect again.
    let Some(db) = common::pg::fresh_database("lane") else {
        return;
    };
    let (_k, url) = serve(&db, &["--rate-limit", "0"]);
    let host = registered(&url, "host").await;
    let guest = registered(&url, "guest").await;
    let browse = "/api/v1/invitations?limit=50";
    let (status, v) = host.raw("GET", browse, None).await.unwrap();
    assert_eq!(status, 200, "{v:?}");
    let ended = end_connections(&db);
    assert!(ended >= 1, "the server had no connection");
    // Until the ended backends are gone.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut failed = 0;
    loop {
        let (status, v) = host.raw("GET", browse, None).await.unwrap();
        if status == 200 {
            break;
        }
        // Only the calls that met the ended connection fail, as internal.
        assert_eq!(status, 500, "{v:?}");
        assert_eq!(v.get("error").and_then(Value::as_str), Some("internal"));
        failed += 1;
        assert!(
            Instant::now() < deadline,
            "no browse answered after {failed} tries"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        failed <= 4,
        "{failed} browses failed after the connections ended"
    );
    // A session on the lane after it: created once, refused the second time
    // by the blocking checks (the lane's statement took nothing).
    // The blocking pool's connections were ended too: the pool finds out at
    // a checkout (its check runs on a connection quiet for a second).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, v) = host
        .raw(
            "POST",
            "/api/v1/invitations",
            Some(&invitation_body(&host, "t")),
        )
        .await
        .unwrap();
    assert_eq!(status, 201, "{v:?}");
    let post_id = v.get("post_id").and_then(Value::as_str).unwrap().to_owned();
    let body = proof(&post_id, host.keys(), guest.keys(), "n-1");
    let (status, v) = guest
        .raw("POST", "/api/v1/sessions", Some(&body))
        .await
        .unwrap();
    assert_eq!(status, 201, "{v:?}");
    let (status, v) = guest
        .raw("POST", "/api/v1/sessions", Some(&body))
        .await
        .unwrap();
    assert_eq!(status, 409, "{v:?}");
    let sessions = count(
        &db,
        "SELECT COUNT(*) FROM sessions WHERE post_id = $1",
        post_id,
    );
    assert_eq!(sessions, 1);
    // A body too large to check on the worker takes the blocking path, over
    // the same replay window: its request id is spent once.
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(100_000)).into_bytes();
    let path = "/api/v1/invitations";
    let h: Vec<(String, String)> = auth::headers(host.keys(), "POST", path, &big, now())
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
    let (first, v) = host.send("POST", path, big.clone(), &h).await.unwrap();
    assert_ne!(first, 401, "{v:?}");
    assert_ne!(first, 500, "{v:?}");
    let (again, v) = host.send("POST", path, big, &h).await.unwrap();
    assert_eq!(again, 401, "{v:?}");
    assert!(
        v.get("message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("already used")),
        "{v:?}"
    );
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_is_one_bucket_across_instances() {
    // 5 a second, bursts of 10: per instance that would be 20 at once.
    let Some((_db, (_ka, a), (_kb, b))) = two("rate", &["--rate-limit", "5"]) else {
        return;
    };
    let c = Client::new(&a, KeyPair::generate()).unwrap();
    let (ca, cb) = (at(&c, &a), at(&c, &b));
    let start = Instant::now();
    let shots: Vec<_> = (0..40)
        .map(|i| {
            let c = if i % 2 == 0 { ca.clone() } else { cb.clone() };
            tokio::spawn(async move { c.raw("GET", "/api/v1/invitations", None).await.unwrap() })
        })
        .collect();
    let mut passed = 0;
    for s in shots {
        let (status, v) = s.await.unwrap();
        match status {
            // Unregistered keys may browse.
            200 => passed += 1,
            429 => assert_eq!(v.get("error").and_then(Value::as_str), Some("rate_limited")),
            other => panic!("{other}: {v:?}"),
        }
    }
    let allowed = 10 + (5.0 * start.elapsed().as_secs_f64()).ceil() as usize;
    assert!(
        passed <= allowed,
        "{passed} of 40 passed in {:?}: the instances do not share one bucket (at most {allowed})",
        start.elapsed()
    );
    assert!(passed >= 10, "only {passed} passed: the burst is 10");
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_invitation_limit_holds_across_instances() {
    let Some((db, (_ka, a), (_kb, b))) = two("invitations", &["--rate-limit", "0"]) else {
        return;
    };
    let host = registered(&a, "host").await;
    let (ha, hb) = (at(&host, &a), at(&host, &b));
    let posts: Vec<_> = (0..16)
        .map(|i| {
            let c = if i % 2 == 0 { ha.clone() } else { hb.clone() };
            tokio::spawn(async move {
                let body = invitation_body(&c, &format!("t{i}"));
                c.raw("POST", "/api/v1/invitations", Some(&body))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut accepted = 0;
    for p in posts {
        let (status, v) = p.await.unwrap();
        match status {
            201 => accepted += 1,
            429 => assert_eq!(
                v.get("error").and_then(Value::as_str),
                Some("too_many_invitations")
            ),
            other => panic!("{other}: {v:?}"),
        }
    }
    assert_eq!(accepted, 3);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM invitations WHERE public_key = $1",
            host.keys().public_key.clone()
        ),
        3
    );
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invitation_takes_one_session_across_instances() {
    let Some((db, (_ka, a), (_kb, b))) = two("sessions", &["--rate-limit", "0"]) else {
        return;
    };
    let host = registered(&a, "host").await;
    for round in 0..3 {
        let inv = host
            .call(
                "POST",
                "/api/v1/invitations",
                Some(&invitation_body(&host, &format!("t{round}"))),
                &[201],
            )
            .await
            .unwrap();
        let post = inv
            .get("post_id")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        // Two guests record their sessions at once, one at each instance.
        let g1 = registered(&a, "g1").await;
        let g2 = at(&registered(&b, "g2").await, &b);
        let (p1, p2) = (
            proof(&post, host.keys(), g1.keys(), "n1"),
            proof(&post, host.keys(), g2.keys(), "n2"),
        );
        let (r1, r2) = tokio::join!(
            g1.raw("POST", "/api/v1/sessions", Some(&p1)),
            g2.raw("POST", "/api/v1/sessions", Some(&p2))
        );
        let (r1, r2) = (r1.unwrap(), r2.unwrap());
        let mut statuses = [r1.0, r2.0];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}: {r1:?} {r2:?}");
        let (won, guest) = if r1.0 == 201 {
            (&r1.1, &g1)
        } else {
            (&r2.1, &g2)
        };
        let lost = if r1.0 == 201 { &r2.1 } else { &r1.1 };
        assert_eq!(lost.get("error").and_then(Value::as_str), Some("not_open"));
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM sessions WHERE post_id = $1",
                post.clone()
            ),
            1
        );
        // Both report at once through different instances: the dispute is
        // seen, whatever the order.
        let sid = won
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        let path = format!("/api/v1/sessions/{sid}/result");
        let hb = at(&host, &b);
        let host_says = Value::Object(obj! { "winner" => "host" });
        let guest_says = Value::Object(obj! { "winner" => "guest" });
        let ga = at(guest, &a);
        let (x, y) = tokio::join!(
            hb.call("POST", &path, Some(&host_says), &[200]),
            ga.call("POST", &path, Some(&guest_says), &[200])
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        assert!(
            x.get("disputed") == Some(&Value::Bool(true))
                || y.get("disputed") == Some(&Value::Bool(true)),
            "neither report saw the other: {x:?} {y:?}"
        );
        let s = host
            .call("GET", &format!("/api/v1/sessions/{sid}"), None, &[200])
            .await
            .unwrap();
        assert_eq!(s.get("disputed"), Some(&Value::Bool(true)), "{s:?}");
    }
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_challenge_is_spent_once_across_instances() {
    let Some((_db, (_ka, a), (_kb, b))) = two("challenge", &["--rate-limit", "0"]) else {
        return;
    };
    let c1 = Client::new(&a, KeyPair::generate()).unwrap();
    let c2 = Client::new(&b, KeyPair::generate()).unwrap();
    for _ in 0..5 {
        let ch = c1
            .call("GET", "/api/v1/auth/challenge", None, &[200])
            .await
            .unwrap();
        let nonce = ch.get("nonce").and_then(Value::as_str).unwrap().to_owned();
        let body = |c: &Client, nick: &str| {
            let pk = c.keys().public_key.clone();
            Value::Object(obj! {
                "public_key" => pk.as_str(), "nickname" => nick, "bio" => "", "nonce" => nonce.as_str(),
                "counter" => auth::solve_pow(&nonce, &pk, 1),
                "signature" => c.keys().sign(auth::registration_canonical(&nonce, &pk, nick).as_bytes()),
            })
        };
        let (b1, b2) = (body(&c1, "one"), body(&c2, "two"));
        let (r1, r2) = tokio::join!(
            c1.raw("POST", "/api/v1/auth/register", Some(&b1)),
            c2.raw("POST", "/api/v1/auth/register", Some(&b2))
        );
        let (s1, s2) = (r1.unwrap().0, r2.unwrap().0);
        // One registers; the other is refused (its nonce was spent), or had
        // registered in an earlier round (409).
        let wins = [s1, s2].iter().filter(|s| **s == 201).count();
        assert!(wins <= 1, "one nonce registered twice: {s1} {s2}");
    }
}

// ---------------------------------------------------------------------------
// The reference client across two instances.

/// Waits until the database holds the session of `post_id` closed with at
/// least `reports` winner reports: (agreed winner, reports).
fn settled(db: &str, post_id: &str, reports: i64) -> (Option<String>, i64) {
    let start = Instant::now();
    loop {
        let post = post_id.to_owned();
        let rec: Option<(String, Option<String>, i64)> = common::pg::with_client(db, move |c| {
            c.query_opt(
                "SELECT status, winner, (SELECT COUNT(*) FROM results r WHERE r.session_id = s.session_id) \
                 FROM sessions s WHERE post_id = $1",
                &[&post],
            )
            .unwrap()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
        });
        if let Some((status, winner, n)) = &rec
            && status == "closed"
            && *n >= reports
        {
            return (winner.clone(), *n);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "session of {post_id} never settled: {rec:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG) and the reference client: run scripts/test"]
#[test]
fn the_reference_registers_on_one_instance_and_hosts_through_the_other() {
    let py = common::reference_python();
    let Some((db, (_ka, a), (_kb, b))) = two("reference", &["--rate-limit", "0"]) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (refd, pal) = (tmp.path().join("reference"), tmp.path().join("palaver"));
    // The reference registers on A…
    common::reference_identity(&py, &a, &refd, "ref");
    let palaver = |url: &str, args: &[&str]| {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(&pal)
            .arg("--server")
            .arg(url)
            .args(args);
        c
    };
    ok(palaver(&a, &["init"]).output().unwrap(), "palaver init");
    ok(
        palaver(&a, &["register", "--nickname", "pal"])
            .output()
            .unwrap(),
        "palaver register",
    );
    // The protocol in the reference's own library.
    let dir = ok(
        Command::new(BIN)
            .arg("--data-dir")
            .arg(&refd)
            .args(["protocol", "path", "rps-v1"])
            .output()
            .unwrap(),
        "protocol path",
    )
    .trim()
    .to_owned();
    // …hosts through B…
    let mut host = common::aigenora(
        &py,
        &b,
        &refd,
        &[
            "host",
            "--protocol-dir",
            &dir,
            "--control-mode",
            "autonomous",
            "--no-web",
            "--options",
            r#"{"best_of":3}"#,
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit())
    .spawn()
    .unwrap();
    let mut hout = BufReader::new(host.stdout.take().unwrap());
    let mut hseen = String::new();
    let post = read_until(&mut hout, "post_id:", &mut hseen);
    // …and palaver joins through A.
    let mut join = palaver(
        &a,
        &["join", &post, "--direct", "--control-mode", "autonomous"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit())
    .spawn()
    .unwrap();
    let mut jout = BufReader::new(join.stdout.take().unwrap());
    let mut jseen = String::new();
    read_until(&mut jout, "session state:", &mut jseen);
    let jseen = common::finish(
        Kill(join),
        jout,
        jseen,
        "palaver join",
        Duration::from_secs(90),
    );
    let what = "aigenora host (through instance B)";
    let (status, hseen) =
        common::finish_status(Kill(host), hout, hseen, what, Duration::from_secs(90));
    common::reference_host_ended(status, what, &hseen, || {
        settled(&db, &post, 0);
        true
    });
    let winner = common::winner_line(&jseen);
    let (agreed, reports) = settled(&db, &post, 2);
    assert_eq!(reports, 2);
    assert_eq!(agreed.as_deref(), Some(winner.as_str()));
    // Both instances show the same record.
    for url in [&a, &b] {
        let o = palaver(url, &["--json", "browse"]).output().unwrap();
        ok(o, "palaver browse");
    }
}

#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_market_is_one_market_across_instances() {
    let Some((_db, (_ka, a), (_kb, b))) = two("market", &["--rate-limit", "0"]) else {
        return;
    };
    let c = registered(&a, "trader").await;
    let first = c
        .call("POST", "/api/gtl/token", None, &[201])
        .await
        .unwrap();
    // The other instance knows the grant: the same token, not a new one.
    let again = at(&c, &b)
        .call("POST", "/api/gtl/token", None, &[200])
        .await
        .unwrap();
    assert_eq!(first.get("token"), again.get("token"));
}

/// A market client of `c`'s identity on the instance at `url` (the token
/// grant is shared, so either instance takes it).
async fn trader_at(c: &Client, url: &str, nick: &str) -> palaver::market::MarketClient {
    palaver::market::MarketClient::connect(url, c.keys().clone(), Some(nick))
        .await
        .unwrap()
}

/// The same job's FUND, then its DELIVER, sent to both instances at once:
/// one is accepted each time, the other refused; the money moves once (no
/// double spend, one settlement) and both instances show the same books.
#[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn funding_and_settlement_race_across_instances_and_one_wins() {
    use palaver::market::time::system_ms;
    use palaver::market::workflow::JobAsk;
    let Some((_db, (_ka, a), (_kb, b))) = two("market_race", &["--rate-limit", "0"]) else {
        return;
    };
    let buyer = registered(&a, "buyer").await;
    let provider = registered(&b, "provider").await;
    let (buyer_a, buyer_b) = (
        trader_at(&buyer, &a, "buyer").await,
        trader_at(&buyer, &b, "buyer").await,
    );
    let (prov_a, prov_b) = (
        trader_at(&provider, &a, "provider").await,
        trader_at(&provider, &b, "provider").await,
    );
    let start = buyer_a.balance().await.unwrap();
    let ask = JobAsk {
        transaction_id: Some("job_race_1"),
        prefix: None,
        target: "0",
        budget: 15,
        deadline_ms: system_ms() + 3_600_000,
    };
    let (tx, _) = buyer_a.open_job(&ask).await.unwrap();
    let listed = prov_b.market(false).await.unwrap();
    let job = listed.iter().find(|l| l.transaction_id == tx).unwrap();
    let r = prov_b
        .offer_on(&tx, &job.job_hash, &job.deadline, 10, 600_000)
        .await
        .unwrap();
    let oh = r
        .get("hashes")
        .and_then(|h| h.get("offer_hash"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let view = buyer_a.transaction(&tx).await.unwrap();
    buyer_a.lock_deal(&view, &oh).await.unwrap();
    let view = prov_b.transaction(&tx).await.unwrap();
    prov_b.confirm_deal(&view).await.unwrap();

    // FUND at both instances at once.
    let view = buyer_a.transaction(&tx).await.unwrap();
    let (fa, fb) = tokio::join!(buyer_a.fund_deal(&view), buyer_b.fund_deal(&view));
    assert_eq!(
        usize::from(fa.is_ok()) + usize::from(fb.is_ok()),
        1,
        "FUND at both instances: {fa:?} / {fb:?}"
    );
    assert_eq!(buyer_a.balance().await.unwrap(), start - 10);
    assert_eq!(buyer_b.balance().await.unwrap(), start - 10);

    // DELIVER (which settles) at both instances at once.
    let view = prov_a.transaction(&tx).await.unwrap();
    let (prefix, target) = view.input();
    let sol = palaver::market::policy::solve(&prefix, &target, 0, 1, &Default::default()).unwrap();
    let (da, db) = tokio::join!(
        prov_a.deliver_solution(&view, &sol),
        prov_b.deliver_solution(&view, &sol)
    );
    let won: Vec<&Value> = [&da, &db]
        .into_iter()
        .filter_map(|r| r.as_ref().ok())
        .collect();
    assert_eq!(won.len(), 1, "DELIVER at both instances: {da:?} / {db:?}");
    assert_eq!(won[0].get("state").and_then(Value::as_str), Some("SETTLED"));
    for c in [&prov_a, &prov_b] {
        assert_eq!(c.balance().await.unwrap(), start + 10);
    }
    let v = buyer_b.transaction(&tx).await.unwrap();
    assert!(palaver::market::verify_chain_value(&v).ok());
    assert_eq!(v.events.len(), 8, "one settlement in the chain");
}
