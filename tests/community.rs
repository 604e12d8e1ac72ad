//! The community server's security rules, end to end over HTTP: every
//! rejected request leaves the database byte-for-byte as it was. One suite
//! on both stores: each test runs on SQLite, and on PostgreSQL (`…::postgres`,
//! `#[ignore]`d: it needs `PALAVER_TEST_PG`, which scripts/test provides).

use crate::common;

use palaver::community::{Config, PgStore, SqliteStore, Store};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::obj;
use palaver::web::{Client, auth};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

struct Server {
    url: String,
    db: Db,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Every row the community keeps, as text (on PostgreSQL without the
    /// replay and rate tables, which SQLite keeps in memory).
    fn dump(&self) -> String {
        match &self.db {
            Db::Sqlite(p) => common::dump(p),
            Db::Postgres(u) => common::pg::dump(u),
        }
    }
}

/// A server on `b` (None: PostgreSQL is not configured, the test skips).
async fn start(b: Backend, cfg: Config) -> Option<Server> {
    let dir = tempfile::tempdir().unwrap();
    let (store, db): (Arc<dyn Store>, Db) = match b {
        Backend::Sqlite => {
            let db = dir.path().join("community.sqlite");
            (Arc::new(SqliteStore::open(&db).unwrap()), Db::Sqlite(db))
        }
        Backend::Postgres => {
            let url = common::pg::fresh_database("community")?;
            let u = url.clone();
            let store = tokio::task::spawn_blocking(move || PgStore::connect(&u, 8).unwrap().0)
                .await
                .unwrap();
            (Arc::new(store), Db::Postgres(url))
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = palaver::services::server::router_on(store, cfg.clone(), None);
    tokio::spawn(palaver::web::serve_router(listener, app, cfg.read_timeout));
    Some(Server { url, db, _dir: dir })
}

/// Each test once per store: `NAME::sqlite` and `NAME::postgres`.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::$name(super::Backend::Sqlite).await
            }

            #[tokio::test]
            #[ignore = "needs PostgreSQL (PALAVER_TEST_PG): run scripts/test"]
            async fn postgres() {
                super::$name(super::Backend::Postgres).await
            }
        }
    };
}

fn cfg() -> Config {
    Config {
        difficulty: 1,
        invitation_ttl: 300.0,
        max_active_invitations: 3,
        rate_limit: 0.0,
        ..Config::default()
    }
}

async fn registered(s: &Server, nick: &str) -> Client {
    let c = Client::new(&s.url, KeyPair::generate()).unwrap();
    let (status, v) = c.register(nick, "").await.unwrap();
    assert_eq!(status, 201, "{v:?}");
    c
}

fn invitation_body(c: &Client, ticket: &str, protocol_id: &str) -> Value {
    let k = c.keys();
    let binding =
        auth::transport_binding_canonical(&k.public_key, "iroh", ticket, Some(protocol_id));
    Value::Object(obj! {
        "message" => "play", "iroh_ticket" => ticket, "transport" => "iroh",
        "transport_binding_signature" => k.sign(binding.as_bytes()), "protocol_id" => protocol_id,
        "host_control_mode" => "autonomous", "type" => "supply",
    })
}

async fn invite(c: &Client, protocol_id: &str) -> String {
    let v = c
        .call(
            "POST",
            "/api/v1/invitations",
            Some(&invitation_body(c, "ticket-1", protocol_id)),
            &[201],
        )
        .await
        .unwrap();
    v.get("post_id").and_then(Value::as_str).unwrap().to_owned()
}

fn proof(post_id: &str, host: &KeyPair, guest: &KeyPair, protocol_id: &str, nonce: &str) -> Value {
    let canonical = auth::session_canonical(
        post_id,
        &host.public_key,
        &guest.public_key,
        Some(protocol_id),
        nonce,
    );
    Value::Object(obj! {
        "post_id" => post_id, "host_public_key" => host.public_key.as_str(), "guest_public_key" => guest.public_key.as_str(),
        "protocol_id" => protocol_id, "session_nonce" => nonce,
        "host_signature" => host.sign(canonical.as_bytes()), "guest_signature" => guest.sign(canonical.as_bytes()),
    })
}

const PID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Runs `req` and asserts its status and that the database did not change.
macro_rules! rejected {
    ($s:expr, $status:expr, $req:expr) => {{
        let before = $s.dump();
        let (status, v) = $req.await.unwrap();
        assert_eq!(status, $status, "{v:?}");
        assert_eq!(
            $s.dump(),
            before,
            "a rejected request wrote to the database"
        );
        v
    }};
}

both!(forged_skewed_and_replayed_requests_are_refused_without_writing);
async fn forged_skewed_and_replayed_requests_are_refused_without_writing(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let body = invitation_body(&host, "t", PID);
    let bytes = palaver::json::canonical::to_string_ordered(&body).into_bytes();
    let path = "/api/v1/invitations";

    // A signature over a different body.
    let mut h = auth::headers(host.keys(), "POST", path, b"{}", now())
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
    rejected!(s, 401, host.send("POST", path, bytes.clone(), &h));
    // Another key's signature under the host's public key.
    let other = KeyPair::generate();
    let forged = auth::headers(&other, "POST", path, &bytes, now());
    h = forged
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                if *k == "X-Public-Key" {
                    host.keys().public_key.clone()
                } else {
                    v.clone()
                },
            )
        })
        .collect();
    rejected!(s, 401, host.send("POST", path, bytes.clone(), &h));
    // Clock skew beyond the window, both ways.
    for skew in [-(auth::MAX_SKEW + 60), auth::MAX_SKEW + 60] {
        let h: Vec<_> = auth::headers(host.keys(), "POST", path, &bytes, now() + skew)
            .map(|(k, v)| (k.to_owned(), v))
            .to_vec();
        rejected!(s, 401, host.send("POST", path, bytes.clone(), &h));
    }
    // Missing headers.
    rejected!(s, 401, host.send("POST", path, bytes.clone(), &[]));
    // A replayed request id: the first succeeds, the copy does not.
    let h: Vec<_> = auth::headers(host.keys(), "POST", path, &bytes, now())
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
    let (status, _) = host.send("POST", path, bytes.clone(), &h).await.unwrap();
    assert_eq!(status, 201);
    rejected!(s, 401, host.send("POST", path, bytes.clone(), &h));
}

both!(invitations_need_a_registered_key_a_valid_binding_and_stay_under_the_limit);
async fn invitations_need_a_registered_key_a_valid_binding_and_stay_under_the_limit(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let stranger = Client::new(&s.url, KeyPair::generate()).unwrap();
    rejected!(
        s,
        403,
        stranger.raw(
            "POST",
            "/api/v1/invitations",
            Some(&invitation_body(&stranger, "t", PID))
        )
    );
    let host = registered(&s, "host").await;
    // A binding signed for another ticket.
    let mut body = invitation_body(&host, "t", PID);
    if let Value::Object(m) = &mut body {
        m.insert("iroh_ticket", Value::from("other-ticket"));
    }
    rejected!(s, 400, host.raw("POST", "/api/v1/invitations", Some(&body)));
    let ids = [
        invite(&host, PID).await,
        invite(&host, PID).await,
        invite(&host, PID).await,
    ];
    rejected!(
        s,
        429,
        host.raw(
            "POST",
            "/api/v1/invitations",
            Some(&invitation_body(&host, "t", PID))
        )
    );
    // Someone else cannot cancel them; the host can, which frees a slot.
    let guest = registered(&s, "guest").await;
    rejected!(
        s,
        403,
        guest.raw("DELETE", &format!("/api/v1/invitations/{}", ids[0]), None)
    );
    host.call(
        "DELETE",
        &format!("/api/v1/invitations/{}", ids[0]),
        None,
        &[204],
    )
    .await
    .unwrap();
    invite(&host, PID).await;
    let list = guest
        .call(
            "GET",
            &format!("/api/v1/invitations?protocol_id={PID}"),
            None,
            &[200],
        )
        .await
        .unwrap();
    assert_eq!(list.get("total").and_then(Value::as_i64), Some(3));
}

both!(session_proofs_are_checked_and_terminal_sessions_stay_terminal);
async fn session_proofs_are_checked_and_terminal_sessions_stay_terminal(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let guest = registered(&s, "guest").await;
    let post = invite(&host, PID).await;
    let (hk, gk) = (host.keys().clone(), guest.keys().clone());

    // An unregistered guest, a host who is not the invitation's author, a
    // guest signature over another nonce.
    let unregistered = KeyPair::generate();
    rejected!(
        s,
        403,
        host.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &unregistered, PID, "n1"))
        )
    );
    rejected!(
        s,
        403,
        guest.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &gk, &hk, PID, "n1"))
        )
    );
    let mut bad = proof(&post, &hk, &gk, PID, "n1");
    if let Value::Object(m) = &mut bad {
        let other = proof(&post, &hk, &gk, PID, "n2");
        m.insert(
            "guest_signature",
            other.get("guest_signature").unwrap().clone(),
        );
    }
    rejected!(s, 400, guest.raw("POST", "/api/v1/sessions", Some(&bad)));
    // A third party cannot record someone else's session.
    let third = registered(&s, "third").await;
    rejected!(
        s,
        403,
        third.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1"))
        )
    );

    let v = guest
        .call(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1")),
            &[201],
        )
        .await
        .unwrap();
    let sid = v
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let expected = auth::session_id(&auth::session_canonical(
        &post,
        &hk.public_key,
        &gk.public_key,
        Some(PID),
        "n1",
    ));
    assert_eq!(sid, expected);
    rejected!(
        s,
        409,
        host.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1"))
        )
    );

    // Ratings: only a party, once, 1..=5.
    rejected!(
        s,
        403,
        third.raw(
            "POST",
            "/api/v1/ratings",
            Some(&Value::Object(
                obj! { "session_id" => sid.as_str(), "score" => 5 }
            ))
        )
    );
    rejected!(
        s,
        400,
        guest.raw(
            "POST",
            "/api/v1/ratings",
            Some(&Value::Object(
                obj! { "session_id" => sid.as_str(), "score" => 6 }
            ))
        )
    );
    let r = guest
        .call(
            "POST",
            "/api/v1/ratings",
            Some(&Value::Object(
                obj! { "session_id" => sid.as_str(), "score" => 4 },
            )),
            &[201],
        )
        .await
        .unwrap();
    assert_eq!(
        r.get("rated").and_then(Value::as_str),
        Some(hk.public_key.as_str())
    );
    rejected!(
        s,
        409,
        guest.raw(
            "POST",
            "/api/v1/ratings",
            Some(&Value::Object(
                obj! { "session_id" => sid.as_str(), "score" => 1 }
            ))
        )
    );

    // Results: disagreement is recorded as a dispute.
    let path = format!("/api/v1/sessions/{sid}/result");
    host.call(
        "POST",
        &path,
        Some(&Value::Object(obj! { "winner" => "host" })),
        &[200],
    )
    .await
    .unwrap();
    let v = guest
        .call(
            "POST",
            &path,
            Some(&Value::Object(obj! { "winner" => "guest" })),
            &[200],
        )
        .await
        .unwrap();
    assert_eq!(v.get("disputed"), Some(&Value::Bool(true)));

    // Status: a stranger cannot close it; the first close wins; then 409.
    let path = format!("/api/v1/sessions/{sid}/status");
    rejected!(
        s,
        403,
        third.raw(
            "POST",
            &path,
            Some(&Value::Object(obj! { "status" => "closed" }))
        )
    );
    host.call(
        "POST",
        &path,
        Some(&Value::Object(obj! { "status" => "closed" })),
        &[200],
    )
    .await
    .unwrap();
    rejected!(
        s,
        409,
        guest.raw(
            "POST",
            &path,
            Some(&Value::Object(obj! { "status" => "failed" }))
        )
    );
    let rec = third
        .call("GET", &format!("/api/v1/sessions/{sid}"), None, &[200])
        .await
        .unwrap();
    assert_eq!(rec.get("status").and_then(Value::as_str), Some("closed"));
}

both!(transport_updates_must_be_bound_to_the_new_ticket);
async fn transport_updates_must_be_bound_to_the_new_ticket(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let guest = registered(&s, "guest").await;
    let post = invite(&host, PID).await;
    let v = host
        .call(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, host.keys(), guest.keys(), PID, "n")),
            &[201],
        )
        .await
        .unwrap();
    let sid = v
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let path = format!("/api/v1/sessions/{sid}/transport");
    let sign = |k: &KeyPair, t: &str| {
        k.sign(auth::transport_binding_canonical(&k.public_key, "iroh", t, Some(PID)).as_bytes())
    };
    let wrong = Value::Object(
        obj! { "iroh_ticket" => "t2", "transport_binding_signature" => sign(host.keys(), "t3") },
    );
    rejected!(s, 400, host.raw("PATCH", &path, Some(&wrong)));
    let right = Value::Object(
        obj! { "iroh_ticket" => "t2", "transport_binding_signature" => sign(host.keys(), "t2") },
    );
    host.call("PATCH", &path, Some(&right), &[200])
        .await
        .unwrap();
    let t = guest.call("GET", &path, None, &[200]).await.unwrap();
    assert_eq!(t.get("iroh_ticket").and_then(Value::as_str), Some("t2"));
}

both!(registration_needs_the_proof_of_work_and_a_fresh_nonce);
async fn registration_needs_the_proof_of_work_and_a_fresh_nonce(b: Backend) {
    let Some(s) = start(
        b,
        Config {
            difficulty: 2,
            ..cfg()
        },
    )
    .await
    else {
        return;
    };
    let c = Client::new(&s.url, KeyPair::generate()).unwrap();
    let pk = c.keys().public_key.clone();
    let ch = c
        .call("GET", "/api/v1/auth/challenge", None, &[200])
        .await
        .unwrap();
    let nonce = ch.get("nonce").and_then(Value::as_str).unwrap().to_owned();
    let good = auth::solve_pow(&nonce, &pk, 2);
    let bad = (0..).find(|n| !auth::pow_ok(&nonce, &pk, *n, 2)).unwrap();
    let body = |counter: u64, nonce: &str| {
        Value::Object(obj! {
            "public_key" => pk.as_str(), "nickname" => "n", "bio" => "", "nonce" => nonce, "counter" => counter,
            "signature" => c.keys().sign(auth::registration_canonical(nonce, &pk, "n").as_bytes()),
        })
    };
    rejected!(
        s,
        400,
        c.raw("POST", "/api/v1/auth/register", Some(&body(good, "0000")))
    );
    // A wrong counter writes nothing (the nonce stays usable); the right
    // one spends it, so the same nonce cannot register twice.
    rejected!(
        s,
        400,
        c.raw("POST", "/api/v1/auth/register", Some(&body(bad, &nonce)))
    );
    let (status, v) = c
        .raw("POST", "/api/v1/auth/register", Some(&body(good, &nonce)))
        .await
        .unwrap();
    assert_eq!(status, 201, "{v:?}");
    let other = Client::new(&s.url, KeyPair::generate()).unwrap();
    let opk = other.keys().public_key.clone();
    let reuse = Value::Object(obj! {
        "public_key" => opk.as_str(), "nickname" => "m", "bio" => "", "nonce" => nonce.as_str(),
        "counter" => auth::solve_pow(&nonce, &opk, 2),
        "signature" => other.keys().sign(auth::registration_canonical(&nonce, &opk, "m").as_bytes()),
    });
    rejected!(
        s,
        400,
        other.raw("POST", "/api/v1/auth/register", Some(&reuse))
    );
}

both!(a_flooding_key_is_rate_limited);
async fn a_flooding_key_is_rate_limited(b: Backend) {
    let Some(s) = start(
        b,
        Config {
            rate_limit: 5.0,
            ..cfg()
        },
    )
    .await
    else {
        return;
    };
    let c = Client::new(&s.url, KeyPair::generate()).unwrap();
    let mut limited = 0;
    let t0 = std::time::Instant::now();
    for _ in 0..40 {
        let (status, _) = c.raw("GET", "/api/v1/invitations", None).await.unwrap();
        limited += usize::from(status == 429);
    }
    // A bucket of 2 × rate tokens refilled at `rate` per second: however
    // slow the machine, no more than that many got through.
    let allowed = 10.0 + 5.0 * t0.elapsed().as_secs_f64() + 1.0;
    assert!(
        limited > 0 && (40 - limited) as f64 <= allowed,
        "{} of 40 rapid requests passed in {:?} (at most {allowed:.0} may)",
        40 - limited,
        t0.elapsed()
    );
}

both!(an_oversized_body_is_refused_before_anything_else);
async fn an_oversized_body_is_refused_before_anything_else(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let big = vec![b' '; 9 * 1024 * 1024];
    let h: Vec<_> = auth::headers(host.keys(), "POST", "/api/v1/protocols", &big, now())
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
    rejected!(
        s,
        413,
        host.send("POST", "/api/v1/protocols", big.clone(), &h)
    );
}

both!(sessions_need_an_open_invitation);
async fn sessions_need_an_open_invitation(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let guest = registered(&s, "guest").await;
    let other = registered(&s, "other").await;
    let (hk, gk, ok) = (
        host.keys().clone(),
        guest.keys().clone(),
        other.keys().clone(),
    );
    // A cancelled invitation takes no session.
    let cancelled = invite(&host, PID).await;
    host.call(
        "DELETE",
        &format!("/api/v1/invitations/{cancelled}"),
        None,
        &[204],
    )
    .await
    .unwrap();
    let v = rejected!(
        s,
        409,
        guest.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&cancelled, &hk, &gk, PID, "n1"))
        )
    );
    assert_eq!(v.get("error").and_then(Value::as_str), Some("not_open"));
    // A matched one takes no second session (another guest, another nonce),
    // but the same session again is still "exists".
    let post = invite(&host, PID).await;
    guest
        .call(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1")),
            &[201],
        )
        .await
        .unwrap();
    let v = rejected!(
        s,
        409,
        other.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &ok, PID, "n2"))
        )
    );
    assert_eq!(v.get("error").and_then(Value::as_str), Some("not_open"));
    let v = rejected!(
        s,
        409,
        guest.raw(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1"))
        )
    );
    assert_eq!(v.get("error").and_then(Value::as_str), Some("exists"));
    // Nor can the matched invitation be cancelled or renewed.
    rejected!(
        s,
        409,
        host.raw("DELETE", &format!("/api/v1/invitations/{post}"), None)
    );
    rejected!(
        s,
        409,
        host.raw("POST", &format!("/api/v1/invitations/{post}/renew"), None)
    );
}

both!(racing_posts_never_pass_the_invitation_limit);
async fn racing_posts_never_pass_the_invitation_limit(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    // Twelve posts at once from one key: three are accepted, whichever.
    let posts = (0..12).map(|i| {
        let host = host.clone();
        tokio::spawn(async move {
            let body = invitation_body(&host, &format!("t{i}"), PID);
            host.raw("POST", "/api/v1/invitations", Some(&body))
                .await
                .unwrap()
        })
    });
    let mut accepted = 0;
    for p in posts.collect::<Vec<_>>() {
        let (status, v) = p.await.unwrap();
        match status {
            201 => accepted += 1,
            429 => assert_eq!(
                v.get("error").and_then(Value::as_str),
                Some("too_many_invitations")
            ),
            other => panic!("unexpected {other}: {v:?}"),
        }
    }
    assert_eq!(accepted, 3, "racing posts passed the limit of 3");
}

both!(renewing_an_expired_invitation_cannot_make_one_too_many);
async fn renewing_an_expired_invitation_cannot_make_one_too_many(b: Backend) {
    let Some(s) = start(
        b,
        Config {
            invitation_ttl: 1.0,
            ..cfg()
        },
    )
    .await
    else {
        return;
    };
    let host = registered(&s, "host").await;
    let old = invite(&host, PID).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let mut live = Vec::new();
    for _ in 0..3 {
        live.push(invite(&host, PID).await);
    }
    // Three active ones: the expired one cannot come back as a fourth…
    let v = rejected!(
        s,
        429,
        host.raw("POST", &format!("/api/v1/invitations/{old}/renew"), None)
    );
    assert_eq!(
        v.get("error").and_then(Value::as_str),
        Some("too_many_invitations")
    );
    // …while a live one renews as before.
    host.call(
        "POST",
        &format!("/api/v1/invitations/{}/renew", live[0]),
        None,
        &[200],
    )
    .await
    .unwrap();
}

both!(the_health_endpoint_names_the_store);
async fn the_health_endpoint_names_the_store(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let r = reqwest_get(&format!("{}/healthz", s.url)).await;
    assert_eq!(r.0, 200, "{}", r.1);
    let v = palaver::json::parse_str(&r.1).unwrap();
    assert_eq!(v.get("status").and_then(Value::as_str), Some("ok"));
    let kind = match b {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    assert_eq!(v.get("store").and_then(Value::as_str), Some(kind));
}

/// A plain GET over one TCP connection: (status, body).
async fn reqwest_get(url: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    c.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_owned())
}

// ---------------------------------------------------------------------------
// The community beyond sessions (issue 39): agents by integer id, ELO,
// karma, capabilities, the inbox and trust snapshots.

fn s_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn i_of(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(i64::MIN)
}

/// A random ciphertext in the reference's box form (AGBX1, 32-byte key,
/// 12-byte nonce, text and tag): the server checks only its form.
fn sealed(n: usize) -> String {
    use base64::Engine as _;
    let mut b = b"AGBX1".to_vec();
    b.extend((5..n).map(|_| rand::random::<u8>()));
    base64::engine::general_purpose::STANDARD.encode(b)
}

both!(agents_have_integer_ids_elo_karma_and_capabilities);
async fn agents_have_integer_ids_elo_karma_and_capabilities(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let host = registered(&s, "host").await;
    let guest = registered(&s, "guest").await;
    let (hk, gk) = (host.keys().clone(), guest.keys().clone());
    // Registration answers the new agent's integer id.
    let third = Client::new(&s.url, KeyPair::generate()).unwrap();
    let (st, v) = third.register("third", "").await.unwrap();
    assert_eq!((st, i_of(&v, "id")), (201, 3), "{v:?}");
    // The reference's lookup: public key → integer id.
    let v = host
        .call(
            "GET",
            &format!("/api/v1/agents?public_key={}", gk.public_key),
            None,
            &[200],
        )
        .await
        .unwrap();
    let gid = i_of(&v, "id");
    assert_eq!(gid, 2, "{v:?}");
    assert_eq!(s_of(&v, "agent_id"), &gk.public_key[..16]);
    assert!(s_of(&v, "registered_at").ends_with('Z'), "{v:?}");
    let (st, v) = host
        .raw(
            "GET",
            &format!("/api/v1/agents?public_key={}", "ab".repeat(32)),
            None,
        )
        .await
        .unwrap();
    assert_eq!((st, s_of(&v, "error")), (404, "not_found"));
    let (st, _) = host
        .raw("GET", "/api/v1/agents?public_key=xyz", None)
        .await
        .unwrap();
    assert_eq!(st, 400);
    // ELO by integer id, agent_id or key: the default before any game.
    for name in [
        gid.to_string(),
        gk.public_key[..16].to_owned(),
        gk.public_key.clone(),
    ] {
        let v = host
            .call("GET", &format!("/api/v1/agents/{name}/elo"), None, &[200])
            .await
            .unwrap();
        assert_eq!((i_of(&v, "rating"), i_of(&v, "games_played")), (1200, 0));
        assert_eq!(v.get("updated_at"), Some(&Value::Null));
        assert_eq!(i_of(&v, "id"), gid);
    }
    host.call("GET", &format!("/api/v1/agents/{gid}/stats"), None, &[200])
        .await
        .unwrap();
    // A session both report alike: ELO applied once, with the second report.
    let post = invite(&host, PID).await;
    let v = guest
        .call(
            "POST",
            "/api/v1/sessions",
            Some(&proof(&post, &hk, &gk, PID, "n1")),
            &[201],
        )
        .await
        .unwrap();
    let sid = s_of(&v, "session_id").to_owned();
    let result = |w: &str| Value::Object(obj! { "winner" => w });
    let path = format!("/api/v1/sessions/{sid}/result");
    let v = host
        .call("POST", &path, Some(&result("guest")), &[200])
        .await
        .unwrap();
    assert_eq!(s_of(&v, "elo"), "pending", "{v:?}");
    let v = guest
        .call("POST", &path, Some(&result("guest")), &[200])
        .await
        .unwrap();
    assert_eq!(
        (s_of(&v, "elo"), s_of(&v, "winner")),
        ("applied", "guest"),
        "{v:?}"
    );
    let v = host
        .call("GET", &format!("/api/v1/agents/{gid}/elo"), None, &[200])
        .await
        .unwrap();
    assert_eq!((i_of(&v, "rating"), i_of(&v, "wins")), (1216, 1), "{v:?}");
    assert!(s_of(&v, "updated_at").ends_with('Z'));
    // The stats a console asks per host carry the same figures.
    let v = host
        .call("GET", &format!("/api/v1/agents/{gid}/stats"), None, &[200])
        .await
        .unwrap();
    assert_eq!(
        (i_of(&v, "elo"), i_of(&v, "elo_games"), i_of(&v, "karma")),
        (1216, 1, 0),
        "{v:?}"
    );
    assert_eq!(s_of(&v, "karma_level"), "none");
    let v = host
        .call("GET", "/api/v1/elo/leaderboard?limit=1", None, &[200])
        .await
        .unwrap();
    let entries = v.get("entries").and_then(Value::as_array).unwrap();
    assert_eq!(i_of(&entries[0], "rank"), 1);
    assert_eq!(s_of(&entries[0], "public_key"), gk.public_key);
    let next = s_of(&v, "next_cursor").to_owned();
    let v = host
        .call(
            "GET",
            &format!("/api/v1/elo/leaderboard?limit=1&cursor={next}"),
            None,
            &[200],
        )
        .await
        .unwrap();
    let entries = v.get("entries").and_then(Value::as_array).unwrap();
    assert_eq!(
        (i_of(&entries[0], "rank"), i_of(&entries[0], "rating")),
        (2, 1204)
    );
    assert_eq!(v.get("next_cursor"), Some(&Value::Null));
    for (q, code) in [
        ("limit=0", "bad_limit"),
        ("limit=101", "bad_limit"),
        ("cursor=@@", "bad_cursor"),
    ] {
        for board in ["elo", "karma"] {
            let (st, v) = host
                .raw("GET", &format!("/api/v1/{board}/leaderboard?{q}"), None)
                .await
                .unwrap();
            assert_eq!((st, s_of(&v, "error")), (400, code), "{board} {q}");
        }
    }
    // Karma after a rating.
    host.call(
        "POST",
        "/api/v1/ratings",
        Some(&Value::Object(
            obj! { "session_id" => sid.as_str(), "score" => 5 },
        )),
        &[201],
    )
    .await
    .unwrap();
    let v = host
        .call("GET", &format!("/api/v1/agents/{gid}/karma"), None, &[200])
        .await
        .unwrap();
    assert_eq!(
        (i_of(&v, "karma"), s_of(&v, "level"), i_of(&v, "ratings")),
        (367, "low", 1)
    );
    let v = host
        .call("GET", "/api/v1/karma/leaderboard", None, &[200])
        .await
        .unwrap();
    let entries = v.get("entries").and_then(Value::as_array).unwrap();
    assert_eq!((entries.len(), i_of(&entries[0], "karma")), (1, 367));
    assert_eq!(s_of(&entries[0], "level"), "low");
    // Capabilities: only the agent itself sets them, checked.
    let caps = |l: Value| Value::Object(obj! { "capabilities" => l });
    let list = Value::Array(vec![
        Value::from("chess"),
        Value::from("go"),
        Value::from("chess"),
    ]);
    let cpath = format!("/api/v1/agents/{gid}/capabilities");
    let v = host.call("GET", &cpath, None, &[200]).await.unwrap();
    assert_eq!(v.get("capabilities"), Some(&Value::Array(vec![])));
    assert_eq!(v.get("updated_at"), Some(&Value::Null));
    let v = rejected!(s, 403, host.raw("POST", &cpath, Some(&caps(list.clone()))));
    assert_eq!(s_of(&v, "error"), "forbidden");
    let bad = Value::Array(vec![Value::from("ok"), Value::from("not ok")]);
    let v = rejected!(s, 400, guest.raw("POST", &cpath, Some(&caps(bad))));
    assert!(s_of(&v, "message").contains("[1]"), "{v:?}");
    let v = guest
        .call("POST", &cpath, Some(&caps(list)), &[200])
        .await
        .unwrap();
    assert_eq!(
        v.get("capabilities"),
        Some(&Value::Array(vec![Value::from("chess"), Value::from("go")]))
    );
    let v = host
        .call("GET", "/api/v1/agents?capability=go", None, &[200])
        .await
        .unwrap();
    let entries = v.get("entries").and_then(Value::as_array).unwrap();
    assert_eq!((entries.len(), i_of(&entries[0], "id")), (1, gid));
}

both!(the_inbox_is_private_and_holds_only_ciphertext);
async fn the_inbox_is_private_and_holds_only_ciphertext(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let alice = registered(&s, "alice").await;
    let bob = registered(&s, "bob").await;
    let carol = registered(&s, "carol").await;
    // Sealed for bob as the reference does (palaver::sealed); the server
    // sees only the ciphertext.
    let plaintext = "meet me at the old mill at dawn, bring the second key";
    let ct = {
        use base64::Engine as _;
        let b = palaver::sealed::seal(&bob.keys().public_key, plaintext.as_bytes()).unwrap();
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let send = Value::Object(obj! {
        "recipient_public_key" => bob.keys().public_key.as_str(), "ciphertext" => ct.as_str(),
    });
    let v = alice
        .call("POST", "/api/v1/inbox", Some(&send), &[201])
        .await
        .unwrap();
    let id = i_of(&v, "id");
    assert_eq!(i_of(&v, "size"), 65 + plaintext.len() as i64, "{v:?}");
    assert!(s_of(&v, "expires_at") > s_of(&v, "created_at"));
    let dump = s.dump();
    assert!(dump.contains(&ct), "the ciphertext is stored as sent");
    assert!(!dump.contains(plaintext));
    if let Db::Sqlite(p) = &s.db {
        // The file and its write-ahead log hold no plaintext either.
        for f in [p.clone(), p.with_extension("sqlite-wal")] {
            let bytes = std::fs::read(&f).unwrap_or_default();
            assert!(
                !bytes
                    .windows(plaintext.len())
                    .any(|w| w == plaintext.as_bytes()),
                "{f:?}"
            );
        }
    }
    // A third identity can neither read, list nor delete it: the same 404
    // as a message that does not exist.
    let (st, missing) = carol
        .raw("GET", "/api/v1/inbox/99999999", None)
        .await
        .unwrap();
    assert_eq!(st, 404);
    let v = rejected!(
        s,
        404,
        carol.raw("GET", &format!("/api/v1/inbox/{id}"), None)
    );
    assert_eq!(v, missing);
    rejected!(
        s,
        404,
        carol.raw("DELETE", &format!("/api/v1/inbox/{id}"), None)
    );
    rejected!(
        s,
        404,
        alice.raw("GET", &format!("/api/v1/inbox/{id}"), None)
    );
    let v = carol
        .call("GET", "/api/v1/inbox", None, &[200])
        .await
        .unwrap();
    assert_eq!((i_of(&v, "total"), i_of(&v, "unread")), (0, 0));
    let v = carol
        .call("DELETE", "/api/v1/inbox", None, &[200])
        .await
        .unwrap();
    assert_eq!(i_of(&v, "deleted"), 0);
    // The recipient lists (no ciphertext), reads (marked read), deletes.
    let v = bob
        .call("GET", "/api/v1/inbox?limit=5", None, &[200])
        .await
        .unwrap();
    assert_eq!((i_of(&v, "total"), i_of(&v, "unread")), (1, 1));
    let e = &v.get("entries").and_then(Value::as_array).unwrap()[0];
    assert_eq!(s_of(e, "sender_public_key"), alice.keys().public_key);
    assert!(e.get("ciphertext").is_none());
    assert_eq!(e.get("read"), Some(&Value::Bool(false)));
    let v = bob
        .call("GET", &format!("/api/v1/inbox/{id}"), None, &[200])
        .await
        .unwrap();
    assert_eq!(s_of(&v, "ciphertext"), ct);
    let opened = {
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD
            .decode(s_of(&v, "ciphertext"))
            .unwrap();
        palaver::sealed::open(bob.keys(), &b).unwrap()
    };
    assert_eq!(opened, plaintext.as_bytes());
    assert_eq!(s_of(&v, "recipient_public_key"), bob.keys().public_key);
    let v = bob
        .call("GET", "/api/v1/inbox", None, &[200])
        .await
        .unwrap();
    assert_eq!(i_of(&v, "unread"), 0);
    let v = bob
        .call("DELETE", &format!("/api/v1/inbox/{id}"), None, &[200])
        .await
        .unwrap();
    assert_eq!((i_of(&v, "id"), i_of(&v, "deleted")), (id, 1));
    bob.call("GET", &format!("/api/v1/inbox/{id}"), None, &[404])
        .await
        .unwrap();
    for _ in 0..2 {
        alice
            .call("POST", "/api/v1/inbox", Some(&send), &[201])
            .await
            .unwrap();
    }
    let v = bob
        .call("DELETE", "/api/v1/inbox", None, &[200])
        .await
        .unwrap();
    assert_eq!(i_of(&v, "deleted"), 2);
}

both!(inbox_posts_that_are_forged_replayed_or_malformed_write_nothing);
async fn inbox_posts_that_are_forged_replayed_or_malformed_write_nothing(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    let alice = registered(&s, "alice").await;
    let bob = registered(&s, "bob").await;
    let path = "/api/v1/inbox";
    let body = |to: &str, ct: &str| {
        Value::Object(obj! { "recipient_public_key" => to, "ciphertext" => ct })
    };
    let good = body(&bob.keys().public_key, &sealed(90));
    let bytes = palaver::json::canonical::to_string_ordered(&good).into_bytes();
    // Another key's signature under alice's public key.
    let other = KeyPair::generate();
    let forged: Vec<(String, String)> = auth::headers(&other, "POST", path, &bytes, now())
        .iter()
        .map(|(k, v)| {
            let v = if *k == "X-Public-Key" {
                alice.keys().public_key.clone()
            } else {
                v.clone()
            };
            (k.to_string(), v)
        })
        .collect();
    rejected!(s, 401, alice.send("POST", path, bytes.clone(), &forged));
    // The same signed headers twice: the copy is refused and writes nothing.
    let h: Vec<_> = auth::headers(alice.keys(), "POST", path, &bytes, now())
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec();
    let (st, _) = alice.send("POST", path, bytes.clone(), &h).await.unwrap();
    assert_eq!(st, 201);
    rejected!(s, 401, alice.send("POST", path, bytes.clone(), &h));
    // Malformed ciphertexts, unknown parties.
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let bk = bob.keys().public_key.clone();
    for (ct, why) in [
        (b64(&[b"AGBX1".as_slice(), &[1; 40]].concat()), "bytes"),
        (b64(&[b"AGBX1".as_slice(), &[1; 2100]].concat()), "longer"),
        (b64(&[0u8; 90]), "magic"),
        ("AGBX1 not base64!".to_owned(), "base64"),
    ] {
        let v = rejected!(s, 400, alice.raw("POST", path, Some(&body(&bk, &ct))));
        assert_eq!(s_of(&v, "error"), "bad_ciphertext");
        assert!(s_of(&v, "message").contains(why), "{why}: {v:?}");
    }
    let v = rejected!(
        s,
        404,
        alice.raw("POST", path, Some(&body(&"cd".repeat(32), &sealed(90))))
    );
    assert_eq!(s_of(&v, "error"), "unknown_recipient");
    let stranger = Client::new(&s.url, KeyPair::generate()).unwrap();
    let v = rejected!(
        s,
        403,
        stranger.raw("POST", path, Some(&body(&bk, &sealed(90))))
    );
    assert_eq!(s_of(&v, "error"), "unknown_sender");
}

both!(trust_snapshots_are_public_and_stable);
async fn trust_snapshots_are_public_and_stable(b: Backend) {
    let Some(s) = start(b, cfg()).await else {
        return;
    };
    // Plain GETs, no signature headers.
    let (st, first) = reqwest_get(&format!("{}/trust/latest.json", s.url)).await;
    assert_eq!(st, 200, "{first}");
    let v = palaver::json::parse_str(&first).unwrap();
    let meta = v.get("meta").unwrap();
    let date = s_of(meta, "snapshot_date").to_owned();
    assert_eq!(date.len(), 10);
    assert!(meta.get("sha256_self").is_none());
    assert_eq!(v.get("trust_edges"), Some(&Value::Array(vec![])));
    // The same bytes, however asked for, even after a new agent.
    registered(&s, "late").await;
    for p in [
        "/trust/latest.json".to_owned(),
        "/latest.json".to_owned(),
        format!("/trust/trust-{date}.json"),
        format!("/trust-{date}.json"),
    ] {
        let (st, body) = reqwest_get(&format!("{}{p}", s.url)).await;
        assert_eq!((st, body.as_str()), (200, first.as_str()), "{p}");
    }
    let (st, _) = reqwest_get(&format!("{}/trust/trust-2020-01-01.json", s.url)).await;
    assert_eq!(st, 404);
    for bad in [
        "/trust/trust-2026-13-01.json",
        "/trust-yesterday.json",
        "/trust/trust-2026-01-01.txt",
    ] {
        let (st, body) = reqwest_get(&format!("{}{bad}", s.url)).await;
        assert_eq!(st, 400, "{bad}: {body}");
    }
}

/// The reference client's own commands against `palaver serve`: integer ids,
/// ELO and karma, capabilities, the inbox (sealed by the reference, opened
/// by it from what the server returns) and the trust snapshot at the
/// server's root.
#[tokio::test]
#[ignore = "needs the reference client (PALAVER_REFERENCE_PYTHON): run scripts/test"]
async fn the_reference_client_uses_the_social_routes() {
    let py = common::reference_python();
    let s = start(Backend::Sqlite, cfg()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let url = s.url.clone();
    let message = "hello from the reference, sealed";
    let outputs = tokio::task::spawn_blocking(move || {
        common::reference_identity(&py, &url, &a, "refa");
        common::reference_identity(&py, &url, &b, "refb");
        let key: Value =
            palaver::json::parse_str(&std::fs::read_to_string(b.join("key.json")).unwrap())
                .unwrap();
        let bk = key
            .get("public_key")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        let run = |dir: &std::path::Path, args: &[&str]| -> String {
            let out = common::aigenora(&py, &url, dir, args).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "aigenora {args:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        vec![
            run(
                &b,
                &["registry", "set", "--capabilities", r#"["chess","go"]"#],
            ),
            run(&a, &["registry", "get", "--public-key", &bk]),
            run(&a, &["elo", "show", "--public-key", &bk]),
            run(&a, &["karma", "show"]),
            run(&a, &["karma", "leaderboard"]),
            run(&a, &["inbox", "send", "--to", &bk, "--message", message]),
            run(&b, &["inbox", "list"]),
            run(&b, &["inbox", "read", "1"]),
            run(&a, &["trust", "fetch"]),
        ]
    })
    .await
    .unwrap();
    let want = [
        "[OK] capabilities set",
        "capabilities (2): chess, go",
        "elo: 1200  (games_played: 0)",
        "karma: 0/500  (level: none)",
        "karma leaderboard (0 entries)",
        "[OK] inbox delivered",
        "id=1",
        message,
        "status:   fresh",
    ];
    for (out, want) in outputs.iter().zip(want) {
        assert!(out.contains(want), "{want:?} not in {out:?}");
    }
    assert!(!s.dump().contains(message), "the server stored plaintext");
}
