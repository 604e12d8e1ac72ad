//! The community server and the GTL market under hostile clients, end to
//! end against a real `palaver serve` process: every route (read from the
//! router's source, so a new route without a case here fails the build of
//! the table below) gets malformed bodies, wrong types, oversized bodies,
//! forged, skewed and replayed auth, and odd Unicode and SQL-looking text in
//! every text field. Every refusal is a 4xx with a JSON error naming the
//! problem, and leaves the database byte-for-byte as it was; accepted text
//! is stored verbatim. Slow clients are cut off after the read timeout, and
//! 2,000 concurrent connections are all answered.
//!
//! One suite on both stores: every test runs on SQLite (`NAME::sqlite`) and
//! on PostgreSQL (`NAME::postgres`, `#[ignore]`d: it needs `PALAVER_TEST_PG`,
//! which scripts/test provides).

mod common;

use common::{Serve, palaver_serve};
use palaver::community::server::MAX_BODY;
use palaver::identity::KeyPair;
use palaver::json::{Map, Number, Value};
use palaver::market::messages::{self, JobRequest};
use palaver::market::{MAX_MESSAGE_BYTES, policy};
use palaver::obj;
use palaver::web::{Client, auth};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------------------
// The routes and what each one takes.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum AuthKind {
    /// The community's signed-request headers.
    Signed,
    /// `Authorization: Bearer` plus the GTL message signature.
    Bearer,
    /// No authentication (public market reads).
    Public,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    /// A member of the JSON body (dotted for nested members).
    Body,
    /// The `{id}` path segment.
    Path,
    /// A query parameter.
    Query,
}

#[derive(Clone, Copy, Debug)]
struct Field {
    name: &'static str,
    place: Place,
    /// Text the route keeps in the database when it accepts the request.
    stored: bool,
    /// The request cannot succeed without it (a wrong type must be refused).
    required: bool,
}

const fn body(name: &'static str, stored: bool, required: bool) -> Field {
    Field {
        name,
        place: Place::Body,
        stored,
        required,
    }
}

const ID: Field = Field {
    name: "id",
    place: Place::Path,
    stored: false,
    required: true,
};

const fn query(name: &'static str) -> Field {
    Field {
        name,
        place: Place::Query,
        stored: false,
        required: false,
    }
}

struct Route {
    method: &'static str,
    template: &'static str,
    auth: AuthKind,
    /// Whether an accepted request writes to the database.
    writes: bool,
    fields: &'static [Field],
    /// The status a well-formed request gets.
    ok: u16,
}

use AuthKind::{Bearer, Public, Signed};

const fn route(
    method: &'static str,
    template: &'static str,
    auth: AuthKind,
    writes: bool,
    fields: &'static [Field],
    ok: u16,
) -> Route {
    Route {
        method,
        template,
        auth,
        writes,
        fields,
        ok,
    }
}

/// A signed request that writes when accepted.
const fn write(
    method: &'static str,
    template: &'static str,
    fields: &'static [Field],
    ok: u16,
) -> Route {
    route(method, template, Signed, true, fields, ok)
}

/// A read: GET, writing nothing, 200 when well formed.
const fn read(template: &'static str, auth: AuthKind, fields: &'static [Field]) -> Route {
    route("GET", template, auth, false, fields, 200)
}

/// Every route of the community and the market. `routes_in_the_source_are_
/// the_routes_tested` keeps this list equal to the router's.
const ROUTES: &[Route] = &[
    route("GET", "/api/v1/auth/challenge", Signed, true, &[], 200),
    write(
        "POST",
        "/api/v1/auth/register",
        &[
            body("nickname", true, true),
            body("bio", true, false),
            body("nonce", false, true),
            body("counter", false, true),
            body("signature", false, true),
            body("public_key", false, true),
        ],
        201,
    ),
    write(
        "POST",
        "/api/v1/protocols",
        &[
            body("protocol_id", false, true),
            body("name", true, false),
            body("description", true, false),
            body("type", true, false),
            body("spec_json", false, true),
        ],
        201,
    ),
    read(
        "/api/v1/protocols",
        Signed,
        &[query("limit"), query("cursor")],
    ),
    read("/api/v1/protocols/{id}", Signed, &[ID]),
    read("/api/v1/protocols/{id}/bundle", Signed, &[ID]),
    write(
        "POST",
        "/api/v1/invitations",
        &[
            body("message", true, false),
            body("iroh_ticket", true, true),
            body("transport", true, false),
            body("protocol_id", true, false),
            body("host_control_mode", true, false),
            body("type", true, false),
            body("transport_binding_signature", true, true),
            body("tags", false, false),
        ],
        201,
    ),
    read(
        "/api/v1/invitations",
        Signed,
        &[
            query("protocol_id"),
            query("type"),
            query("tags"),
            query("limit"),
        ],
    ),
    read("/api/v1/invitations/{id}", Signed, &[ID]),
    write("DELETE", "/api/v1/invitations/{id}", &[ID], 204),
    write("POST", "/api/v1/invitations/{id}/renew", &[ID], 200),
    write(
        "POST",
        "/api/v1/sessions",
        &[
            body("post_id", true, true),
            body("host_public_key", false, true),
            body("guest_public_key", false, true),
            body("protocol_id", true, false),
            body("session_nonce", true, true),
            body("host_signature", true, true),
            body("guest_signature", true, true),
        ],
        201,
    ),
    read("/api/v1/sessions/{id}", Signed, &[ID]),
    write(
        "POST",
        "/api/v1/sessions/{id}/status",
        &[ID, body("status", false, true)],
        200,
    ),
    write(
        "POST",
        "/api/v1/sessions/{id}/result",
        &[ID, body("winner", false, true)],
        200,
    ),
    read("/api/v1/sessions/{id}/transport", Signed, &[ID]),
    write(
        "PATCH",
        "/api/v1/sessions/{id}/transport",
        &[
            ID,
            body("iroh_ticket", true, true),
            body("transport_binding_signature", true, true),
        ],
        200,
    ),
    write(
        "POST",
        "/api/v1/feedback",
        &[
            body("session_id", false, true),
            body("text", true, false),
            body("tags", false, false),
        ],
        201,
    ),
    write(
        "POST",
        "/api/v1/ratings",
        &[
            body("session_id", false, true),
            body("score", false, true),
            body("comment", true, false),
        ],
        201,
    ),
    read("/api/v1/agents/{id}/stats", Signed, &[ID]),
    read("/api/v1/agents/{id}/ratings", Signed, &[ID, query("limit")]),
    read("/api/v1/agents", Signed, &[query("public_key")]),
    read("/api/v1/agents/{id}/elo", Signed, &[ID]),
    read("/api/v1/agents/{id}/karma", Signed, &[ID]),
    read("/api/v1/agents/{id}/capabilities", Signed, &[ID]),
    write(
        "POST",
        "/api/v1/agents/{id}/capabilities",
        &[ID, body("capabilities", false, true)],
        200,
    ),
    read(
        "/api/v1/elo/leaderboard",
        Signed,
        &[query("limit"), query("cursor")],
    ),
    read(
        "/api/v1/karma/leaderboard",
        Signed,
        &[query("limit"), query("cursor")],
    ),
    write(
        "POST",
        "/api/v1/inbox",
        &[
            body("recipient_public_key", false, true),
            body("ciphertext", true, true),
        ],
        201,
    ),
    read("/api/v1/inbox", Signed, &[query("limit"), query("cursor")]),
    // Reading a message marks it read.
    route("GET", "/api/v1/inbox/{id}", Signed, true, &[ID], 200),
    write("DELETE", "/api/v1/inbox/{id}", &[ID], 200),
    write("DELETE", "/api/v1/inbox", &[], 200),
    // The trust snapshots: unsigned (the fixture builds today's first).
    read("/trust/latest.json", Public, &[]),
    read("/trust/trust-{date}", Public, &[]),
    read("/latest.json", Public, &[]),
    read("/trust-{date}", Public, &[]),
    write(
        "POST",
        "/api/v1/groups",
        &[
            body("post_id", false, true),
            body("min_participants", false, true),
            body("max_participants", false, true),
            body("allow_late_join", false, true),
            body("recovery_mode", false, true),
        ],
        201,
    ),
    read("/api/v1/groups/{id}", Signed, &[ID]),
    read("/api/v1/groups/by-post/{id}", Signed, &[ID]),
    write(
        "POST",
        "/api/v1/groups/{id}/members",
        &[
            ID,
            body("join_nonce", false, true),
            body("leader_epoch", false, true),
            body("leader_signature", false, true),
            body("member_signature", false, true),
        ],
        200,
    ),
    write(
        "POST",
        "/api/v1/groups/{id}/heartbeat",
        &[
            ID,
            body("leader_epoch", false, true),
            body("checkpoint_seq", false, true),
            body("checkpoint_hash", false, true),
            body("iroh_ticket", true, true),
            body("transport_binding_signature", false, true),
        ],
        200,
    ),
    write("POST", "/api/v1/groups/{id}/members/heartbeat", &[ID], 200),
    write(
        "POST",
        "/api/v1/groups/{id}/claim-leader",
        &[
            ID,
            body("expected_epoch", false, true),
            body("checkpoint_seq", false, true),
            body("checkpoint_hash", false, true),
            body("checkpoint_frame_hash", false, true),
            body("checkpoint_membership_version", false, true),
            body("checkpoint_signature", false, true),
            body("iroh_ticket", true, true),
            body("transport_binding_signature", false, true),
        ],
        200,
    ),
    write("POST", "/api/v1/groups/{id}/leave", &[ID], 200),
    write(
        "POST",
        "/api/v1/groups/{id}/status",
        &[
            ID,
            body("leader_epoch", false, true),
            body("status", false, true),
        ],
        200,
    ),
    write(
        "POST",
        "/api/gtl/token",
        &[body("principal_id", true, false)],
        201,
    ),
    read("/healthz", Public, &[]),
    read("/.well-known/aiguishi.json", Public, &[]),
    read("/api/market", Public, &[query("all")]),
    read("/api/gtl/schema", Public, &[]),
    read("/api/gtl/policies/{id}", Public, &[ID]),
    // The MCP entry (tests/mcp.rs drives its JSON-RPC): the market's
    // bearer gate and body limits.
    route("POST", "/mcp", Bearer, false, &[], 200),
    route(
        "POST",
        "/api/gtl",
        Bearer,
        true,
        &[
            body("type", false, true),
            body("gtl_version", false, false),
            body("transaction_id", true, true),
            body("job.input.prefix", true, true),
            body("job.authority.mandate_hash", true, true),
            body("job.budget.asset", true, true),
            body("signature", true, true),
        ],
        200,
    ),
    read("/api/gtl/transactions/{id}", Public, &[ID]),
    read("/api/gtl/accounts/{id}", Public, &[ID]),
];

fn body_limit(r: &Route) -> usize {
    // The community's routes (its health check and trust snapshots among
    // them) take 8 MiB.
    if r.template.starts_with("/api/v1/")
        || r.template.starts_with("/trust")
        || matches!(r.template, "/api/gtl/token" | "/healthz" | "/latest.json")
    {
        MAX_BODY
    } else {
        MAX_MESSAGE_BYTES
    }
}

/// `(METHOD, path)` of every `.route(…)` call with a literal path in a
/// router's source, and the methods of the calls whose path is a variable
/// (the community's loop over the signed routes other modules add).
fn routes_in(src: &str) -> (BTreeSet<(String, String)>, Vec<String>) {
    let mut out = BTreeSet::new();
    let mut variable = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find(".route(") {
        let after = &rest[i + ".route(".len()..];
        let mut depth = 1;
        let end = after
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map(|(j, _)| j)
            .expect("a closed .route( call");
        let call = &after[..end];
        if !call.trim_start().starts_with('"') {
            let (_, handlers) = call.split_once(',').expect("a path and a handler");
            variable.push(
                handlers
                    .trim_start()
                    .split('(')
                    .next()
                    .unwrap_or("")
                    .to_uppercase(),
            );
            rest = &after[end..];
            continue;
        }
        let q1 = call.find('"').expect("a path literal");
        let q2 = q1 + 1 + call[q1 + 1..].find('"').expect("a closed path literal");
        let path = &call[q1 + 1..q2];
        let handlers = &call[q2 + 1..];
        for m in [
            "get", "post", "put", "patch", "delete", "head", "options", "any",
        ] {
            let pat = format!("{m}(");
            let mut from = 0;
            while let Some(k) = handlers[from..].find(&pat) {
                let at = from + k;
                let before = handlers[..at].chars().last();
                if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    out.insert((m.to_uppercase(), path.to_owned()));
                }
                from = at + pat.len();
            }
        }
        rest = &after[end..];
    }
    (out, variable)
}

/// The paths of the `("path", handler)` pairs the merged server passes to
/// the community's `server::routes(…)` as signed routes.
fn signed_routes_in(src: &str) -> Vec<String> {
    let i = src.find("server::routes(").expect("a server::routes( call");
    let call = &src[i..];
    let call = &call[..call.find(");").expect("a closed server::routes( call")];
    call.split("(\"")
        .skip(1)
        .map(|p| p[..p.find('"').expect("a closed path literal")].to_owned())
        .collect()
}

#[test]
fn routes_in_the_source_are_the_routes_tested() {
    let server = include_str!("../src/community/server/mod.rs");
    let market = include_str!("../src/market/http.rs");
    let merged = include_str!("../src/services/server.rs");
    // Routes come only from `.route(` calls in the community's and the
    // market's files, and the signed routes the merged server hands the
    // community (POST): no nesting, no services mounted, one merge of the
    // market into the community.
    for (name, src) in [
        ("community/server/mod.rs", server),
        ("market/http.rs", market),
        ("services/server.rs", merged),
    ] {
        for banned in [".nest(", ".route_service(", ".nest_service("] {
            assert!(
                !src.contains(banned),
                "{name} mounts routes with {banned}: teach tests/community_hostile.rs to read them"
            );
        }
    }
    // Two merges into the community: the market's routes and the MCP
    // entry, whose one path is the SDK's service mounted at `PATH`.
    assert_eq!(
        server.matches(".merge(").count() + merged.matches(".merge(").count(),
        2
    );
    assert!(merged.contains("crate::market::http::routes("));
    assert!(merged.contains("super::mcp::routes("));
    let mcp = include_str!("../src/services/mcp/http.rs");
    assert_eq!(mcp.matches(".nest_service(PATH,").count(), 1);
    assert_eq!(
        mcp.matches(".route(").count() + mcp.matches(".nest(").count(),
        0
    );
    let path = mcp
        .split("pub const PATH: &str = \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the MCP entry's PATH");
    let (mut found, variable) = routes_in(server);
    assert_eq!(variable, ["POST"], "the community's signed-route loop");
    let (market_routes, variable) = routes_in(market);
    assert!(variable.is_empty(), "{variable:?}");
    found.extend(market_routes);
    found.insert(("POST".to_owned(), path.to_owned()));
    found.extend(
        signed_routes_in(merged)
            .into_iter()
            .map(|p| ("POST".to_owned(), p)),
    );
    let tested: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.template.to_owned()))
        .collect();
    assert_eq!(
        tested.len(),
        ROUTES.len(),
        "a route is listed twice in ROUTES"
    );
    let untested: Vec<_> = found.difference(&tested).collect();
    let gone: Vec<_> = tested.difference(&found).collect();
    assert!(
        untested.is_empty() && gone.is_empty(),
        "routes without hostile cases: {untested:?}; cases for routes the router lacks: {gone:?}"
    );
    assert!(found.len() >= 28, "the route parser found only {found:?}");
}

// ---------------------------------------------------------------------------
// A server with an identity, a protocol, an invitation, a session and a job.

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn next() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Which store a test's server runs on.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The server's database, as the checks read it.
enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// Every row (on PostgreSQL without the replay and rate tables, which
    /// SQLite keeps in memory).
    fn dump(&self) -> String {
        match self {
            Db::Sqlite(p) => common::dump(p),
            Db::Postgres(u) => common::pg::dump(u),
        }
    }

    fn has_table(&self, t: &str) -> bool {
        match self {
            Db::Sqlite(p) => {
                let c = rusqlite::Connection::open(p).unwrap();
                c.query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name=?1",
                    [t],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
                    == 1
            }
            Db::Postgres(u) => common::pg::has_table(u, t),
        }
    }
}

/// Each test once per store: `NAME::sqlite` and `NAME::postgres`.
macro_rules! both {
    ($name:ident) => {
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
    };
}

struct World {
    url: String,
    addr: String,
    db: Db,
    host: Client,
    guest: Client,
    spec: Map,
    pid: String,
    post: String,
    session: String,
    host_token: String,
    host_principal: String,
    job_tx: String,
    /// Groups whose leader lease has run out, for claims (one each).
    lapsed: tokio::sync::Mutex<Vec<(Client, Value)>>,
    _serve: Serve,
    _dir: tempfile::TempDir,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no {k} in {v:?}"))
}

impl World {
    /// A server on `b` with its fixtures (None: PostgreSQL is not
    /// configured, the test skips).
    async fn new(b: Backend, extra: &[&str]) -> Option<World> {
        let dir = tempfile::tempdir().unwrap();
        let db = match b {
            Backend::Sqlite => Db::Sqlite(dir.path().join("community.sqlite")),
            Backend::Postgres => Db::Postgres(common::pg::fresh_database("hostile")?),
        };
        // A short group lease lets claims succeed within the test.
        let mut args = vec!["--rate-limit", "0", "--group-lease", "3"];
        args.extend_from_slice(extra);
        let (serve, url) = match &db {
            Db::Sqlite(p) => palaver_serve(p, &args),
            Db::Postgres(u) => palaver_serve(Path::new(u), &args),
        };
        let addr = url.trim_start_matches("http://").to_owned();
        let host = Client::new(&url, KeyPair::generate()).unwrap();
        host.register("host", "").await.unwrap();
        let guest = Client::new(&url, KeyPair::generate()).unwrap();
        guest.register("guest", "").await.unwrap();
        let spec = palaver::library::bundled_spec("aether-sigil-v1")
            .expect("a bundled spec")
            .doc()
            .clone();
        let pid = palaver::spec::protocol_id_of(&spec);
        host.call(
            "POST",
            "/api/v1/protocols",
            Some(&Value::Object(obj! {
                "protocol_id" => pid.as_str(), "name" => "sigil", "spec_json" => Value::Object(spec.clone()),
            })),
            &[201],
        )
        .await
        .unwrap();
        let tok = host
            .call("POST", "/api/gtl/token", None, &[201])
            .await
            .unwrap();
        let host_token = s(&tok, "token").to_owned();
        let host_principal = s(&tok, "principal_id").to_owned();
        let mut w = World {
            url,
            addr,
            db,
            host,
            guest,
            spec,
            pid,
            post: String::new(),
            session: String::new(),
            host_token,
            host_principal,
            job_tx: String::new(),
            lapsed: tokio::sync::Mutex::new(Vec::new()),
            _serve: serve,
            _dir: dir,
        };
        let (_, post) = w.invitation(&w.host.clone(), "ticket-0").await;
        w.post = post.clone();
        w.session = w.session_on(&post, "n-0").await;
        let job = w.job("tx_fixture");
        let (st, v) = w.send(&job).await;
        assert_eq!(st, 200, "{v:?}");
        w.job_tx = "tx_fixture".into();
        // Today's trust snapshot, built by the first request of the day:
        // later reads of it write nothing.
        w.host.server_time("/trust/latest.json").await.unwrap();
        Some(w)
    }

    /// A message to `to` from a new identity: its id.
    async fn message_to(&self, to: &Client) -> i64 {
        let from = self.fresh().await;
        let body = Value::Object(obj! {
            "recipient_public_key" => to.keys().public_key.as_str(), "ciphertext" => sealed(),
        });
        let v = from
            .call("POST", "/api/v1/inbox", Some(&body), &[201])
            .await
            .unwrap();
        v.get("id").and_then(Value::as_i64).unwrap()
    }

    fn agent_id(&self, c: &Client) -> String {
        c.keys().public_key[..16].to_owned()
    }

    async fn fresh(&self) -> Client {
        let c = Client::new(&self.url, KeyPair::generate()).unwrap();
        let (st, v) = c.register(&format!("f{}", next()), "").await.unwrap();
        assert_eq!(st, 201, "{v:?}");
        c
    }

    fn invitation_body(&self, c: &Client, ticket: &str) -> Map {
        let k = c.keys();
        let binding =
            auth::transport_binding_canonical(&k.public_key, "iroh", ticket, Some(&self.pid));
        obj! {
            "message" => "play", "iroh_ticket" => ticket, "transport" => "iroh",
            "transport_binding_signature" => k.sign(binding.as_bytes()), "protocol_id" => self.pid.as_str(),
            "host_control_mode" => "autonomous", "type" => "supply",
            "tags" => Value::Array(vec![Value::from("t")]),
        }
    }

    async fn invitation(&self, c: &Client, ticket: &str) -> (Client, String) {
        let v = c
            .call(
                "POST",
                "/api/v1/invitations",
                Some(&Value::Object(self.invitation_body(c, ticket))),
                &[201],
            )
            .await
            .unwrap();
        (c.clone(), s(&v, "post_id").to_owned())
    }

    /// A new group on a new host's invitation: (host, group object).
    async fn fresh_group(&self) -> (Client, Value) {
        let (host, post) = self.fresh_invitation().await;
        let g = host
            .call(
                "POST",
                "/api/v1/groups",
                Some(&Value::Object(obj! {
                    "post_id" => post.as_str(), "min_participants" => 2, "max_participants" => 4,
                    "allow_late_join" => true, "recovery_mode" => "exact",
                })),
                &[201],
            )
            .await
            .unwrap();
        (host, g)
    }

    /// The admission both sign to seat `member` at `epoch` of `g`.
    fn admission(g: &Value, leader: &KeyPair, member: &KeyPair, epoch: i64, nonce: &str) -> Map {
        let text = format!(
            "aigenora-group-admission-v1:{}:{}:{}:{}:{epoch}:{nonce}",
            s(g, "group_id"),
            s(g, "leader_public_key"),
            member.public_key,
            s(g, "protocol_id")
        );
        obj! {
            "join_nonce" => nonce, "leader_epoch" => epoch,
            "leader_signature" => leader.sign(text.as_bytes()), "member_signature" => member.sign(text.as_bytes()),
        }
    }

    /// A fresh member seated in `g`.
    async fn seated(&self, host: &Client, g: &Value) -> Client {
        let m = self.fresh().await;
        let body = Self::admission(g, host.keys(), m.keys(), 0, &format!("n{}", next()));
        m.call(
            "POST",
            &format!("/api/v1/groups/{}/members", s(g, "group_id")),
            Some(&Value::Object(body)),
            &[200],
        )
        .await
        .unwrap();
        m
    }

    fn binding(&self, k: &KeyPair, ticket: &str) -> String {
        k.sign(
            auth::transport_binding_canonical(&k.public_key, "iroh", ticket, Some(&self.pid))
                .as_bytes(),
        )
    }

    /// A group whose (3 s) lease has run out, with a seated member that
    /// has not claimed it: (member, group as it was, its host's key).
    async fn lapsed_group(&self) -> (Client, Value, KeyPair) {
        let mut pool = self.lapsed.lock().await;
        if pool.is_empty() {
            for _ in 0..24 {
                let (host, g) = self.fresh_group().await;
                let m = self.seated(&host, &g).await;
                let mut g = g;
                if let Value::Object(o) = &mut g {
                    o.insert("host_seed", Value::from(host.keys().private_hex()));
                }
                pool.push((m, g));
            }
            tokio::time::sleep(Duration::from_millis(3_300)).await;
        }
        let (m, g) = pool.pop().unwrap();
        let seed = s(&g, "host_seed");
        let mut b = [0u8; 32];
        hex::decode_to_slice(seed, &mut b).unwrap();
        (m, g, KeyPair::from_seed(b))
    }

    async fn fresh_invitation(&self) -> (Client, String) {
        let c = self.fresh().await;
        self.invitation(&c, "ticket-f").await
    }

    fn proof(&self, host: &KeyPair, post: &str, nonce: &str) -> Map {
        let (h, g) = (host, self.guest.keys());
        let canonical =
            auth::session_canonical(post, &h.public_key, &g.public_key, Some(&self.pid), nonce);
        obj! {
            "post_id" => post, "host_public_key" => h.public_key.as_str(),
            "guest_public_key" => g.public_key.as_str(), "protocol_id" => self.pid.as_str(),
            "session_nonce" => nonce,
            "host_signature" => h.sign(canonical.as_bytes()), "guest_signature" => g.sign(canonical.as_bytes()),
        }
    }

    async fn session_on(&self, post: &str, nonce: &str) -> String {
        let v = self
            .guest
            .call(
                "POST",
                "/api/v1/sessions",
                Some(&Value::Object(self.proof(self.host.keys(), post, nonce))),
                &[201],
            )
            .await
            .unwrap();
        s(&v, "session_id").to_owned()
    }

    /// A new session between host and guest (on a new invitation of the
    /// host's, which the session marks matched).
    async fn fresh_session(&self) -> String {
        let (_, post) = self.invitation(&self.host, "ticket-s").await;
        self.session_on(&post, &format!("n-{}", next())).await
    }

    fn job(&self, tx: &str) -> Prep {
        let msg = messages::job_open(&JobRequest {
            transaction_id: tx,
            prefix: &format!("palaver|{tx}"),
            target: "0",
            budget: 5,
            deadline_ms: now() * 1000 + 3_600_000,
            principal_id: &self.host_principal,
            agent_id: &self.agent_id(&self.host),
        });
        let msg = messages::sign(&self.host_token, msg).unwrap();
        Prep {
            who: self.host.clone(),
            method: "POST",
            path: "/api/gtl".into(),
            body: palaver::json::canonical::to_string_ordered(&Value::Object(msg)).into_bytes(),
            auth: Auth::Bearer(self.host_token.clone()),
        }
    }

    /// Sends a prepared request with its authentication.
    async fn send(&self, p: &Prep) -> (u16, Value) {
        self.send_with(p, p.body.clone(), &p.headers(&p.body)).await
    }

    /// Sends `p` with `body` and `headers`, expecting the refusal `want`
    /// (see [`assert_refusal`]; `what` names the case); the reply.
    async fn refused(
        &self,
        what: &str,
        p: &Prep,
        body: Vec<u8>,
        headers: &[(String, String)],
        want: u16,
    ) -> Value {
        let before = self.db.dump();
        let (status, v) = self.send_with(p, body, headers).await;
        assert_eq!(status, want, "{what}: {v:?}");
        assert_refusal(what, status, &v, &self.db, &before);
        v
    }

    async fn send_with(
        &self,
        p: &Prep,
        body: Vec<u8>,
        headers: &[(String, String)],
    ) -> (u16, Value) {
        p.who
            .send(p.method, &p.path, body, headers)
            .await
            .unwrap_or_else(|e| panic!("{} {}: {e}", p.method, p.path))
    }

    /// The request a route gets, with `over` replacing fields (body
    /// members, the path id, query parameters). Inner signatures (the
    /// registration's, a transport binding, a session proof, a GTL message)
    /// are made over the replaced values when they are text, so an accepted
    /// request really carries them.
    async fn build(&self, r: &Route, over: &[(&Field, Value)]) -> Prep {
        let find = |name: &str, place: Place| {
            over.iter()
                .find(|(f, _)| f.name == name && f.place == place)
                .map(|(_, v)| v)
        };
        let text_over =
            |name: &str| -> Option<String> { find(name, Place::Body)?.as_str().map(str::to_owned) };
        let replaced = |name: &str| find(name, Place::Body).is_some();
        let as_text = |v: &Value| {
            enc(&v
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| palaver::json::canonical::to_string_ordered(v)))
        };
        let id = |default: &str| -> String {
            find("id", Place::Path)
                .map(as_text)
                .unwrap_or_else(|| default.to_owned())
        };
        let q = |name: &str, default: &str| -> String {
            find(name, Place::Query)
                .map(as_text)
                .unwrap_or_else(|| default.to_owned())
        };
        let mut b: Option<Map> = None;
        let mut who = self.host.clone();
        let mut auth = match r.auth {
            Signed => Auth::Signed,
            Bearer => Auth::Bearer(self.host_token.clone()),
            Public => Auth::Public,
        };
        let path = match (r.method, r.template) {
            ("GET", "/api/v1/auth/challenge") => r.template.to_owned(),
            ("POST", "/api/v1/auth/register") => {
                who = Client::new(&self.url, KeyPair::generate()).unwrap();
                let ch = who
                    .call("GET", "/api/v1/auth/challenge", None, &[200])
                    .await
                    .unwrap();
                let nonce = s(&ch, "nonce").to_owned();
                let pk = who.keys().public_key.clone();
                let nick = text_over("nickname").unwrap_or_else(|| format!("newcomer{}", next()));
                let mut m = obj! {
                    "public_key" => pk.as_str(), "nickname" => nick.as_str(), "bio" => "hello",
                    "nonce" => nonce.as_str(), "counter" => auth::solve_pow(&nonce, &pk, 1),
                    "signature" => who.keys().sign(auth::registration_canonical(&nonce, &pk, &nick).as_bytes()),
                };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("POST", "/api/v1/protocols") => {
                let mut spec = self.spec.clone();
                let mut timing = spec
                    .get("timing")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                timing.insert("hostile_case", Value::from(next() as i64));
                spec.insert("timing", Value::Object(timing));
                let pid = palaver::spec::protocol_id_of(&spec);
                let mut m = obj! {
                    "protocol_id" => pid.as_str(), "name" => "hostile", "description" => "d",
                    "type" => "protocol", "spec_json" => Value::Object(spec),
                };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/protocols") => {
                format!(
                    "/api/v1/protocols?limit={}&cursor={}",
                    q("limit", "5"),
                    q("cursor", "")
                )
            }
            ("GET", "/api/v1/protocols/{id}") => format!("/api/v1/protocols/{}", id(&self.pid)),
            ("GET", "/api/v1/protocols/{id}/bundle") => {
                format!("/api/v1/protocols/{}/bundle", id(&self.pid))
            }
            ("POST", "/api/v1/invitations") => {
                who = self.fresh().await;
                let mut m = self.invitation_body(&who, "ticket-i");
                apply(&mut m, over);
                if !replaced("transport_binding_signature") {
                    let str_of = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
                    let ticket = str_of("iroh_ticket").unwrap_or_default();
                    let transport = str_of("transport").unwrap_or_else(|| "iroh".into());
                    let pid = str_of("protocol_id");
                    let binding = auth::transport_binding_canonical(
                        &who.keys().public_key,
                        &transport,
                        &ticket,
                        pid.as_deref(),
                    );
                    m.insert(
                        "transport_binding_signature",
                        Value::from(who.keys().sign(binding.as_bytes())),
                    );
                }
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/invitations") => format!(
                "/api/v1/invitations?protocol_id={}&type={}&tags={}&limit={}",
                q("protocol_id", &self.pid),
                q("type", "supply"),
                q("tags", "t"),
                q("limit", "10")
            ),
            ("GET", "/api/v1/invitations/{id}") => {
                who = self.guest.clone();
                format!("/api/v1/invitations/{}", id(&self.post))
            }
            ("DELETE", "/api/v1/invitations/{id}") => {
                let (c, post) = self.fresh_invitation().await;
                who = c;
                format!("/api/v1/invitations/{}", id(&post))
            }
            ("POST", "/api/v1/invitations/{id}/renew") => {
                let (c, post) = self.fresh_invitation().await;
                who = c;
                format!("/api/v1/invitations/{}/renew", id(&post))
            }
            ("POST", "/api/v1/sessions") => {
                // A new host each time: a refused proof leaves its
                // invitation open, and a key may hold only three.
                let (h, post) = self.fresh_invitation().await;
                who = self.guest.clone();
                let nonce = format!("n-{}", next());
                let mut m = self.proof(h.keys(), &post, &nonce);
                apply(&mut m, over);
                if !replaced("host_signature") && !replaced("guest_signature") {
                    let str_of = |k: &str, d: &str| {
                        m.get(k)
                            .and_then(Value::as_str)
                            .unwrap_or(d)
                            .to_ascii_lowercase()
                    };
                    let canonical = auth::session_canonical(
                        m.get("post_id").and_then(Value::as_str).unwrap_or(&post),
                        &str_of("host_public_key", ""),
                        &str_of("guest_public_key", ""),
                        m.get("protocol_id").and_then(Value::as_str),
                        m.get("session_nonce")
                            .and_then(Value::as_str)
                            .unwrap_or(&nonce),
                    );
                    m.insert(
                        "host_signature",
                        Value::from(h.keys().sign(canonical.as_bytes())),
                    );
                    m.insert(
                        "guest_signature",
                        Value::from(self.guest.keys().sign(canonical.as_bytes())),
                    );
                }
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/sessions/{id}") => {
                who = self.guest.clone();
                format!("/api/v1/sessions/{}", id(&self.session))
            }
            ("POST", "/api/v1/sessions/{id}/status") => {
                let sid = self.fresh_session().await;
                let mut m = obj! { "status" => "closed" };
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/sessions/{}/status", id(&sid))
            }
            ("POST", "/api/v1/sessions/{id}/result") => {
                let sid = self.fresh_session().await;
                let mut m = obj! { "winner" => "draw" };
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/sessions/{}/result", id(&sid))
            }
            ("GET", "/api/v1/sessions/{id}/transport") => {
                format!("/api/v1/sessions/{}/transport", id(&self.session))
            }
            ("PATCH", "/api/v1/sessions/{id}/transport") => {
                let sid = self.fresh_session().await;
                let ticket = text_over("iroh_ticket").unwrap_or_else(|| "ticket-2".into());
                let k = self.host.keys();
                let binding = k.sign(
                    auth::transport_binding_canonical(
                        &k.public_key,
                        "iroh",
                        &ticket,
                        Some(&self.pid),
                    )
                    .as_bytes(),
                );
                let mut m = obj! { "iroh_ticket" => ticket.as_str(), "transport_binding_signature" => binding };
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/sessions/{}/transport", id(&sid))
            }
            ("POST", "/api/v1/groups") => {
                let (host, post) = self.fresh_invitation().await;
                who = host;
                let mut m = obj! {
                    "post_id" => post.as_str(), "min_participants" => 2, "max_participants" => 4,
                    "allow_late_join" => true, "recovery_mode" => "exact",
                };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/groups/{id}") => {
                let (_, g) = self.fresh_group().await;
                format!("/api/v1/groups/{}", id(s(&g, "group_id")))
            }
            ("GET", "/api/v1/groups/by-post/{id}") => {
                let (_, g) = self.fresh_group().await;
                format!("/api/v1/groups/by-post/{}", id(s(&g, "post_id")))
            }
            ("POST", "/api/v1/groups/{id}/members") => {
                let (host, g) = self.fresh_group().await;
                who = self.fresh().await;
                let nonce = text_over("join_nonce").unwrap_or_else(|| format!("n{}", next()));
                let mut m = Self::admission(&g, host.keys(), who.keys(), 0, &nonce);
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/groups/{}/members", id(s(&g, "group_id")))
            }
            ("POST", "/api/v1/groups/{id}/heartbeat") => {
                let (host, g) = self.fresh_group().await;
                let ticket =
                    text_over("iroh_ticket").unwrap_or_else(|| format!("nodehb{}", next()));
                let mut m = obj! {
                    "leader_epoch" => 0, "checkpoint_seq" => 1, "checkpoint_hash" => "ab".repeat(32),
                    "iroh_ticket" => ticket.as_str(), "transport_binding_signature" => self.binding(host.keys(), &ticket),
                };
                who = host;
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/groups/{}/heartbeat", id(s(&g, "group_id")))
            }
            ("POST", "/api/v1/groups/{id}/members/heartbeat") => {
                let (host, g) = self.fresh_group().await;
                who = host;
                b = Some(Map::new());
                format!("/api/v1/groups/{}/members/heartbeat", id(s(&g, "group_id")))
            }
            ("POST", "/api/v1/groups/{id}/claim-leader") => {
                let (member, g, leader) = self.lapsed_group().await;
                let gid = s(&g, "group_id").to_owned();
                let version = g.get("membership_version").and_then(Value::as_i64).unwrap() + 1;
                let (frame, hash) = ("cd".repeat(32), "ef".repeat(32));
                let cert = format!(
                    "aigenora-group-checkpoint-v1:{gid}:{}:0:3:{frame}:{version}:{hash}",
                    leader.public_key
                );
                let ticket =
                    text_over("iroh_ticket").unwrap_or_else(|| format!("nodeclaim{}", next()));
                let mut m = obj! {
                    "expected_epoch" => 0, "checkpoint_seq" => 3, "checkpoint_hash" => hash.as_str(),
                    "checkpoint_frame_hash" => frame.as_str(), "checkpoint_membership_version" => version,
                    "checkpoint_signature" => leader.sign(cert.as_bytes()), "iroh_ticket" => ticket.as_str(),
                    "transport_binding_signature" => self.binding(member.keys(), &ticket),
                };
                who = member;
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/groups/{}/claim-leader", id(&gid))
            }
            ("POST", "/api/v1/groups/{id}/leave") => {
                let (host, g) = self.fresh_group().await;
                who = self.seated(&host, &g).await;
                b = Some(Map::new());
                format!("/api/v1/groups/{}/leave", id(s(&g, "group_id")))
            }
            ("POST", "/api/v1/groups/{id}/status") => {
                let (host, g) = self.fresh_group().await;
                who = host;
                let mut m = obj! { "leader_epoch" => 0, "status" => "active" };
                apply(&mut m, over);
                b = Some(m);
                format!("/api/v1/groups/{}/status", id(s(&g, "group_id")))
            }
            ("POST", "/api/v1/feedback") => {
                who = self.guest.clone();
                let mut m = obj! {
                    "session_id" => self.session.as_str(), "text" => "good game",
                    "tags" => Value::Array(vec![Value::from("x")]),
                };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("POST", "/api/v1/ratings") => {
                who = self.guest.clone();
                let sid = self.fresh_session().await;
                let mut m =
                    obj! { "session_id" => sid.as_str(), "score" => 4, "comment" => "fine" };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/agents/{id}/stats") => {
                format!("/api/v1/agents/{}/stats", id(&self.agent_id(&self.host)))
            }
            ("GET", "/api/v1/agents") => format!(
                "/api/v1/agents?public_key={}",
                q("public_key", &self.host.keys().public_key)
            ),
            ("GET", "/api/v1/agents/{id}/elo")
            | ("GET", "/api/v1/agents/{id}/karma")
            | ("GET", "/api/v1/agents/{id}/capabilities") => {
                r.template.replace("{id}", &id(&self.agent_id(&self.guest)))
            }
            ("POST", "/api/v1/agents/{id}/capabilities") => {
                let mut m = obj! { "capabilities" => Value::Array(vec![Value::from("chess")]) };
                apply(&mut m, over);
                b = Some(m);
                format!(
                    "/api/v1/agents/{}/capabilities",
                    id(&self.agent_id(&self.host))
                )
            }
            ("GET", "/api/v1/elo/leaderboard") | ("GET", "/api/v1/karma/leaderboard") => {
                format!("{}?limit={}", r.template, q("limit", "10"))
                    + &find("cursor", Place::Query)
                        .map(|c| format!("&cursor={}", as_text(c)))
                        .unwrap_or_default()
            }
            ("POST", "/api/v1/inbox") => {
                who = self.fresh().await;
                let mut m = obj! {
                    "recipient_public_key" => self.host.keys().public_key.as_str(),
                    "ciphertext" => sealed(),
                };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/v1/inbox") => {
                who = self.guest.clone();
                format!("/api/v1/inbox?limit={}", q("limit", "10"))
                    + &find("cursor", Place::Query)
                        .map(|c| format!("&cursor={}", as_text(c)))
                        .unwrap_or_default()
            }
            ("GET", "/api/v1/inbox/{id}") | ("DELETE", "/api/v1/inbox/{id}") => {
                who = self.guest.clone();
                let n = self.message_to(&self.guest).await;
                format!("/api/v1/inbox/{}", id(&n.to_string()))
            }
            ("DELETE", "/api/v1/inbox") => {
                who = self.fresh().await;
                r.template.to_owned()
            }
            ("GET", "/trust/latest.json") | ("GET", "/latest.json") => r.template.to_owned(),
            ("GET", "/trust/trust-{date}") | ("GET", "/trust-{date}") => r.template.replace(
                "{date}",
                &format!(
                    "{}.json",
                    palaver::community::standing::date_of(now() as f64)
                ),
            ),
            ("GET", "/api/v1/agents/{id}/ratings") => format!(
                "/api/v1/agents/{}/ratings?limit={}",
                id(&self.agent_id(&self.host)),
                q("limit", "10")
            ),
            ("POST", "/api/gtl/token") => {
                who = self.fresh().await;
                let mut m = obj! { "principal_id" => format!("p_{}", next()) };
                apply(&mut m, over);
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/healthz")
            | ("GET", "/.well-known/aiguishi.json")
            | ("GET", "/api/gtl/schema") => r.template.to_owned(),
            ("GET", "/api/market") => format!("/api/market?all={}", q("all", "1")),
            ("GET", "/api/gtl/policies/{id}") => {
                format!("/api/gtl/policies/{}", id(policy::POLICY_ID))
            }
            ("POST", "/api/gtl") => {
                let tx = format!("tx_{}", next());
                let prep = self.job(&tx);
                let mut m = palaver::json::parse_bytes(&prep.body)
                    .unwrap()
                    .as_object()
                    .unwrap()
                    .clone();
                apply(&mut m, over);
                if !replaced("signature") {
                    m = messages::sign(&self.host_token, m.clone()).unwrap_or(m);
                }
                auth = Auth::Bearer(self.host_token.clone());
                b = Some(m);
                r.template.to_owned()
            }
            ("POST", "/mcp") => {
                let mut m = obj! {
                    "jsonrpc" => "2.0", "id" => 1, "method" => "tools/call",
                    "params" => obj! { "name" => "market_balance", "arguments" => Map::new() },
                };
                apply(&mut m, over);
                auth = Auth::Bearer(self.host_token.clone());
                b = Some(m);
                r.template.to_owned()
            }
            ("GET", "/api/gtl/transactions/{id}") => {
                format!("/api/gtl/transactions/{}", id(&self.job_tx))
            }
            ("GET", "/api/gtl/accounts/{id}") => {
                format!("/api/gtl/accounts/{}", id(&self.host_principal))
            }
            (m, t) => panic!("route {m} {t} has no hostile case: add one to World::build"),
        };
        Prep {
            who,
            method: r.method,
            path,
            body: b
                .map(|m| {
                    palaver::json::canonical::to_string_ordered(&Value::Object(m)).into_bytes()
                })
                .unwrap_or_default(),
            auth,
        }
    }
}

enum Auth {
    Signed,
    Bearer(String),
    Public,
}

struct Prep {
    who: Client,
    method: &'static str,
    path: String,
    body: Vec<u8>,
    auth: Auth,
}

type Headers = Vec<(String, String)>;

impl Prep {
    /// Its authentication's headers, signed (when signed) over `body`.
    fn headers(&self, body: &[u8]) -> Headers {
        match &self.auth {
            Auth::Signed => signed(self.who.keys(), self.method, &self.path, body, now()),
            Auth::Bearer(t) => {
                let mut h = bearer(t);
                if self.path == "/mcp" {
                    // MCP's streamable HTTP: a client accepts both.
                    h.push((
                        "Accept".into(),
                        "application/json, text/event-stream".into(),
                    ));
                    h.push(("Content-Type".into(), "application/json".into()));
                }
                h
            }
            Auth::Public => Vec::new(),
        }
    }
}

/// The community's signed-request headers of `keys` at time `ts`.
fn signed(keys: &KeyPair, method: &str, path: &str, body: &[u8], ts: i64) -> Headers {
    auth::headers(keys, method, path, body, ts)
        .map(|(k, v)| (k.to_owned(), v))
        .to_vec()
}

fn bearer(token: &str) -> Headers {
    vec![("Authorization".into(), format!("Bearer {token}"))]
}

/// Sets a (dotted) body member.
fn apply(m: &mut Map, over: &[(&Field, Value)]) {
    for (f, v) in over.iter().filter(|(f, _)| f.place == Place::Body) {
        set(m, f.name, v.clone());
    }
}

/// Sets one (dotted) body member.
fn set(m: &mut Map, name: &str, v: Value) {
    let mut parts: Vec<&str> = name.split('.').collect();
    let last = parts.pop().unwrap();
    let mut cur = m;
    for p in parts {
        cur = match cur.get_mut(p) {
            Some(Value::Object(o)) => o,
            _ => panic!("no object {p} in the body for {name}"),
        };
    }
    cur.insert(last, v);
}

/// Percent-encodes everything but unreserved ASCII.
fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A refusal: a 4xx, a JSON error with a code and a message, and the
/// database as it was.
fn assert_refusal(what: &str, status: u16, v: &Value, db: &Db, before: &str) {
    assert!(
        (400..500).contains(&status),
        "{what}: expected a 4xx, got {status} {v:?}"
    );
    // The market's envelope, or (the MCP entry) a JSON-RPC error object.
    let rpc = v.get("error").filter(|e| e.as_object().is_some());
    let code = match rpc.and_then(|e| e.get("code")).and_then(Value::as_i64) {
        Some(c) => c.to_string(),
        None => v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    let message = rpc
        .unwrap_or(v)
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(
        !code.is_empty() && !message.is_empty(),
        "{what}: {status} without a clear JSON error: {v:?}"
    );
    assert!(
        db.dump() == before,
        "{what}: a refused request ({status} {code}) wrote to the database"
    );
}

/// Whether `needle` is stored verbatim somewhere: a text column holding it
/// as it is or as JSON writes it (the stored bodies are JSON).
fn db_contains(db: &Db, needle: &str) -> bool {
    let strip = |q: String| q[1..q.len() - 1].to_owned();
    let forms = [
        needle.to_owned(),
        strip(palaver::json::canonical::to_string_ordered(&Value::from(
            needle,
        ))),
        strip(
            String::from_utf8(
                palaver::market::canonical::canonical_json(&Value::from(needle)).unwrap(),
            )
            .unwrap(),
        ),
    ];
    let db = match db {
        Db::Sqlite(p) => p,
        Db::Postgres(u) => return common::pg::contains(u, &forms),
    };
    let c = rusqlite::Connection::open(db).unwrap();
    let columns: Vec<(String, String)> = c
        .prepare(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
             WHERE m.type = 'table' AND p.type = 'TEXT'",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(columns.len() > 20, "{columns:?}");
    columns.iter().any(|(t, col)| {
        forms.iter().any(|f| {
            c.query_row(
                &format!("SELECT EXISTS (SELECT 1 FROM {t} WHERE instr({col}, ?1) > 0)"),
                [f],
                |r| r.get::<_, bool>(0),
            )
            .unwrap()
        })
    })
}

// ---------------------------------------------------------------------------

both!(a_well_formed_request_succeeds_on_every_route);
async fn a_well_formed_request_succeeds_on_every_route(b: Backend) {
    // The baseline the refusals below are measured against: each case's
    // builder makes a request the route accepts.
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    for r in ROUTES {
        let p = w.build(r, &[]).await;
        let (status, v) = w.send(&p).await;
        assert_eq!(status, r.ok, "{} {}: {v:?}", r.method, p.path);
    }
    // An unknown route and a wrong method are JSON errors too.
    let (status, v) = w.host.raw("GET", "/api/v1/nowhere", None).await.unwrap();
    assert_eq!(status, 404, "{v:?}");
    assert!(s(&v, "message").contains("no route"), "{v:?}");
    let (status, v) = w.host.raw("PUT", "/api/v1/sessions", None).await.unwrap();
    assert_eq!(status, 405, "{v:?}");
    assert_eq!(s(&v, "error"), "method_not_allowed");
}

/// Bodies that are not JSON objects at all.
fn malformed() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("truncated", b"{\"a\":".to_vec()),
        ("trailing comma", b"{\"a\":1,}".to_vec()),
        ("an array", b"[1,2,3]".to_vec()),
        ("a string", b"\"text\"".to_vec()),
        ("null", b"null".to_vec()),
        ("invalid UTF-8", b"{\"a\":\"\xff\xfe\"}".to_vec()),
        ("a lone surrogate", br#"{"a":"\ud800"}"#.to_vec()),
        ("a NUL byte", b"\x00".to_vec()),
        ("trailing data", b"{\"a\":1} {}".to_vec()),
        ("an infinite number", b"{\"a\":1e999999}".to_vec()),
        (
            "deep nesting",
            format!("{}{}", "[".repeat(600), "]".repeat(600)).into_bytes(),
        ),
        (
            "deep objects",
            format!("{}1{}", "{\"a\":".repeat(600), "}".repeat(600)).into_bytes(),
        ),
    ]
}

both!(malformed_bodies_are_refused_without_writing);
async fn malformed_bodies_are_refused_without_writing(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    for r in ROUTES {
        for (what, bytes) in malformed() {
            let p = w.build(r, &[]).await;
            let before = w.db.dump();
            let headers = p.headers(&bytes);
            let (status, v) = w.send_with(&p, bytes, &headers).await;
            let label = format!("{} {} with {what}", r.method, r.template);
            if r.auth == Public {
                // Public reads take no body: it is ignored, never an error
                // of the server's, and nothing is written.
                assert!(status < 500, "{label}: {status} {v:?}");
                assert!(w.db.dump() == before, "{label}: a read wrote");
            } else {
                assert_eq!(status, 400, "{label}: {v:?}");
                assert_refusal(&label, status, &v, &w.db, &before);
            }
        }
    }
}

/// Body fields whose type is an integer (every other one is text, an
/// object or an array).
const INT_FIELDS: &[&str] = &[
    "score",
    "counter",
    "min_participants",
    "max_participants",
    "leader_epoch",
    "checkpoint_seq",
    "expected_epoch",
    "checkpoint_membership_version",
];

/// Body fields whose type is a boolean.
const BOOL_FIELDS: &[&str] = &["allow_late_join"];

/// Body fields that are not text: integers, the spec object, tag arrays.
const NON_TEXT: &[&str] = &[
    "capabilities",
    "score",
    "counter",
    "spec_json",
    "tags",
    "min_participants",
    "max_participants",
    "allow_late_join",
    "leader_epoch",
    "checkpoint_seq",
    "expected_epoch",
    "checkpoint_membership_version",
];

/// Text fields that prove something (signatures, keys, the registration
/// nonce): any replacement is refused, so they are tried one at a time.
/// A ciphertext of the reference's box form (the server checks the form only).
fn sealed() -> String {
    use base64::Engine as _;
    let mut b = b"AGBX1".to_vec();
    b.extend((0..80).map(|_| rand::random::<u8>()));
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn is_proof(name: &str) -> bool {
    name.contains("signature") || name.contains("public_key") || name == "nonce"
}

both!(wrong_types_in_every_field_are_refused_without_writing);
async fn wrong_types_in_every_field_are_refused_without_writing(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    let wrong = [
        Value::from(5),
        Value::Null,
        Value::Array(vec![Value::from(1)]),
        Value::Object(obj! { "k" => "v" }),
        Value::Bool(true),
        Value::from(1.5),
        Value::from(-1),
        Value::Number(Number::BigInt("123456789012345678901234567890".into())),
        Value::from("'; DROP TABLE agents; --"),
    ];
    for r in ROUTES {
        for f in r.fields.iter().filter(|f| f.place == Place::Body) {
            for v in &wrong {
                // An integer is the right type for the integer fields.
                if INT_FIELDS.contains(&f.name) && v.as_i64().is_some() {
                    continue;
                }
                if BOOL_FIELDS.contains(&f.name) && v.as_bool().is_some() {
                    continue;
                }
                // Text is a wrong type only for the fields that are not text.
                if v.as_str().is_some() && !NON_TEXT.contains(&f.name) {
                    continue;
                }
                let p = w.build(r, &[(f, v.clone())]).await;
                let before = w.db.dump();
                let (status, reply) = w.send(&p).await;
                let label = format!("{} {} with {} = {v:?}", r.method, r.template, f.name);
                assert!(status < 500, "{label}: {status} {reply:?}");
                if f.required {
                    assert!(status >= 400, "{label} was accepted: {reply:?}");
                }
                if status >= 400 {
                    assert_refusal(&label, status, &reply, &w.db, &before);
                }
            }
        }
    }
}

/// Text that has broken servers: NULs, direction overrides, emoji, SQL,
/// long strings, invisible characters, escapes as text.
fn odd_texts(long: usize) -> Vec<String> {
    vec![
        "nul\u{0}inside\u{0}".into(),
        "\u{202E}txt.exe\u{202C}".into(),
        "🦀 👩‍👩‍👧‍👦 ✓".into(),
        "'; DROP TABLE agents; --".into(),
        "Robert'); DELETE FROM sessions WHERE ('1'='1".into(),
        "\u{FEFF}\u{200B}zero width".into(),
        "\\ud800 as text, %00%ff%".into(),
        "line\r\nX-Injected: 1".into(),
        "é".repeat(long / 2),
        String::new(),
    ]
}

both!(odd_unicode_and_sql_text_in_every_field_is_refused_or_stored_verbatim);
async fn odd_unicode_and_sql_text_in_every_field_is_refused_or_stored_verbatim(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    let mut stored = 0;
    for r in ROUTES {
        let text: Vec<&Field> = r
            .fields
            .iter()
            .filter(|f| !NON_TEXT.contains(&f.name))
            .collect();
        let (proofs, plain): (Vec<&Field>, Vec<&Field>) =
            text.into_iter().partition(|f| is_proof(f.name));
        for (i, t) in odd_texts(100_000).into_iter().enumerate() {
            // Path segments and query values travel in the request line:
            // 4 KB of text there (up to 24 KB encoded); 100 KB in bodies.
            let fit = |f: &Field| -> String {
                if f.place == Place::Body || t.len() <= 4_096 {
                    t.clone()
                } else {
                    t.chars().take(2_048).collect()
                }
            };
            // Every plain text field at once, each value marked with its
            // field; when that is refused, each field alone, so one field's
            // refusal hides no other's answer.
            let mark = |f: &Field| -> Value {
                let v = fit(f);
                Value::from(if v.is_empty() {
                    v
                } else {
                    format!("{v}·{}", f.name)
                })
            };
            let all: Vec<(&Field, Value)> = plain.iter().map(|f| (*f, mark(f))).collect();
            let mut tries: Vec<Vec<(&Field, Value)>> = Vec::new();
            if !all.is_empty() {
                tries.push(all);
            }
            // Proof fields are refused whatever they hold: a few texts do.
            let proofs: &[&Field] = if [0, 3, 8, 9].contains(&i) {
                &proofs
            } else {
                &[]
            };
            let mut k = 0;
            while k < tries.len() + proofs.len() {
                let over = if k < tries.len() {
                    tries[k].clone()
                } else {
                    let f = proofs[k - tries.len()];
                    vec![(f, Value::from(fit(f)))]
                };
                k += 1;
                let p = w.build(r, &over).await;
                let before = w.db.dump();
                let (status, reply) = w.send(&p).await;
                let names: Vec<&str> = over.iter().map(|(f, _)| f.name).collect();
                let label = format!(
                    "{} {} with odd text #{i} in {names:?}",
                    r.method, r.template
                );
                assert!(status < 500, "{label}: {status} {reply:?}");
                if status >= 400 {
                    assert_refusal(&label, status, &reply, &w.db, &before);
                    if over.len() > 1 && k == 1 {
                        tries.extend(over.iter().map(|x| vec![x.clone()]));
                    }
                } else if r.writes {
                    for (f, v) in &over {
                        let v = v.as_str().unwrap_or("");
                        if f.stored && !v.is_empty() {
                            assert!(
                                db_contains(&w.db, v),
                                "{label}: accepted ({status}) but {} was not stored verbatim",
                                f.name
                            );
                            stored += 1;
                        }
                    }
                }
            }
        }
    }
    // The SQL-looking text went in as text: every table is still there and
    // the server still answers.
    for t in ["agents", "sessions", "invitations", "gtl_transactions"] {
        assert!(w.db.has_table(t), "table {t} is gone");
    }
    let (status, _) = w
        .host
        .raw("GET", "/api/v1/invitations", None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(
        stored >= 40,
        "only {stored} odd texts were accepted and checked"
    );
    // A nickname of SQL text reads back exactly as it was written.
    let c = w.fresh().await;
    let nick = "x'); DROP TABLE agents; --";
    let c2 = Client::new(&w.url, KeyPair::generate()).unwrap();
    let (st, _) = c2.register(nick, "").await.unwrap();
    assert_eq!(st, 201);
    let stats = c
        .call(
            "GET",
            &format!("/api/v1/agents/{}/stats", &c2.keys().public_key[..16]),
            None,
            &[200],
        )
        .await
        .unwrap();
    assert_eq!(s(&stats, "nickname"), nick);
}

both!(forged_skewed_and_replayed_auth_is_refused_on_every_signed_route);
async fn forged_skewed_and_replayed_auth_is_refused_on_every_signed_route(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    let other = KeyPair::generate();
    let max = auth::MAX_SKEW;
    for r in ROUTES.iter().filter(|r| r.auth == Signed) {
        let label = |what: &str| format!("{} {}: {what}", r.method, r.template);
        let p = w.build(r, &[]).await;
        let k = p.who.keys().clone();
        let good = |ts: i64| signed(&k, p.method, &p.path, &p.body, ts);
        let set = |mut h: Vec<(String, String)>, name: &str, value: &str| {
            h.iter_mut()
                .filter(|(n, _)| n == name)
                .for_each(|(_, v)| *v = value.to_owned());
            h
        };
        let mut forged: Vec<(String, Vec<(String, String)>)> = Vec::new();
        // Another key's signature presented under this key.
        let o = signed(&other, p.method, &p.path, &p.body, now());
        forged.push((
            "another key's signature".into(),
            set(o, "X-Public-Key", &k.public_key),
        ));
        // Signed over another body, path or method.
        let sig_over =
            |method: &str, path: &str, body: &[u8]| signed(&k, method, path, body, now());
        forged.push((
            "signed over another body".into(),
            sig_over(p.method, &p.path, b"{\"x\":1}"),
        ));
        forged.push((
            "signed over another path".into(),
            sig_over(p.method, "/api/v1/other", &p.body),
        ));
        let m2 = if p.method == "GET" { "POST" } else { "GET" };
        forged.push((
            "signed for another method".into(),
            sig_over(m2, &p.path, &p.body),
        ));
        for bad in ["", "zz", &"00".repeat(64), &"a".repeat(10_000)] {
            forged.push((
                format!("X-Signature {:.12}", bad),
                set(good(now()), "X-Signature", bad),
            ));
        }
        for bad in ["", "zz", &"a".repeat(63), &"g".repeat(64)] {
            forged.push((
                format!("X-Public-Key {bad:.12}"),
                set(good(now()), "X-Public-Key", bad),
            ));
        }
        for bad in ["", &"r".repeat(129)] {
            forged.push((
                format!("X-Request-Id of {} chars", bad.len()),
                set(good(now()), "X-Request-Id", bad),
            ));
        }
        for name in ["X-Public-Key", "X-Timestamp", "X-Request-Id", "X-Signature"] {
            let h: Vec<_> = good(now()).into_iter().filter(|(n, _)| n != name).collect();
            forged.push((format!("no {name}"), h));
        }
        // Clock skew past the window, both ways, and timestamps that would
        // overflow a naive difference (these are signed correctly).
        for ts in [now() - max - 60, now() + max + 60, i64::MIN, i64::MAX, 0] {
            forged.push((format!("timestamp {ts}"), good(ts)));
        }
        for bad in ["1e9", "soon", " 17", "+1", "99999999999999999999999"] {
            forged.push((
                format!("X-Timestamp {bad:?}"),
                set(good(now()), "X-Timestamp", bad),
            ));
        }
        for (what, h) in forged {
            w.refused(&label(&what), &p, p.body.clone(), &h, 401).await;
        }
        // A replay: the first use gets whatever the route answers, the copy
        // is refused and writes nothing.
        let h = good(now());
        let (first, v) = w.send_with(&p, p.body.clone(), &h).await;
        assert_eq!(first, r.ok, "{}: {v:?}", label("the original"));
        let v = w
            .refused(&label("replay"), &p, p.body.clone(), &h, 401)
            .await;
        assert!(s(&v, "message").contains("already used"), "{v:?}");
    }
}

both!(the_market_refuses_bad_tokens_signatures_and_replays_without_writing);
async fn the_market_refuses_bad_tokens_signatures_and_replays_without_writing(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    let r = ROUTES.iter().find(|r| r.template == "/api/gtl").unwrap();
    let p = w.build(r, &[]).await;
    let cases: Vec<(&str, Headers, u16)> = vec![
        ("no token", vec![], 401),
        (
            "an unknown token",
            vec![("Authorization".into(), "Bearer gtl_nope".into())],
            401,
        ),
        (
            "a Basic scheme",
            vec![("Authorization".into(), format!("Basic {}", w.host_token))],
            401,
        ),
        (
            "an empty bearer",
            vec![("Authorization".into(), "Bearer".into())],
            401,
        ),
    ];
    for (what, h, want) in cases {
        w.refused(what, &p, p.body.clone(), &h, want).await;
    }
    // Another principal's token over the host's signed message.
    let other = w.fresh().await;
    let tok = other
        .call("POST", "/api/gtl/token", None, &[201])
        .await
        .unwrap();
    let h = bearer(s(&tok, "token"));
    w.refused("another principal's token", &p, p.body.clone(), &h, 403)
        .await;
    // A tampered message under a valid signature.
    let tampered = String::from_utf8(p.body.clone())
        .unwrap()
        .replace("\"budget\":{\"amount\":5", "\"budget\":{\"amount\":6");
    assert_ne!(tampered.as_bytes(), &p.body[..]);
    let h = bearer(&w.host_token);
    w.refused("a tampered message", &p, tampered.into_bytes(), &h, 403)
        .await;
    // The same signed message twice: the copy is a 409 and writes nothing.
    let (status, v) = w.send(&p).await;
    assert_eq!(status, 200, "{v:?}");
    let h = p.headers(&p.body);
    w.refused("a replayed JOB_OPEN", &p, p.body.clone(), &h, 409)
        .await;
}

// ---------------------------------------------------------------------------
// Raw HTTP: oversized and slow requests.

/// A response read off a raw connection: status and JSON body.
fn parse_response(raw: &[u8]) -> Option<(u16, Value)> {
    let text = String::from_utf8_lossy(raw);
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let at = text.find("\r\n\r\n")?;
    let body = &raw[at + 4..];
    let v = palaver::json::parse_bytes(body).unwrap_or(Value::Null);
    Some((status, v))
}

async fn read_to_end_within(stream: &mut TcpStream, limit: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(limit, stream.read_to_end(&mut out)).await;
    out
}

both!(bodies_over_the_limit_are_413_on_every_route);
async fn bodies_over_the_limit_are_413_on_every_route(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    for r in ROUTES {
        let p = w.build(r, &[]).await;
        let limit = body_limit(r);
        let before = w.db.dump();
        let mut c = TcpStream::connect(&w.addr).await.unwrap();
        let head = format!(
            "{} {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            p.method,
            p.path,
            limit + 1
        );
        c.write_all(head.as_bytes()).await.unwrap();
        let raw = read_to_end_within(&mut c, Duration::from_secs(10)).await;
        let (status, v) = parse_response(&raw).unwrap_or_else(|| {
            panic!(
                "{} {}: no response: {:?}",
                r.method,
                r.template,
                String::from_utf8_lossy(&raw)
            )
        });
        let label = format!("{} {} with a {}-byte body", r.method, r.template, limit + 1);
        assert_eq!(status, 413, "{label}: {v:?}");
        assert_eq!(s(&v, "error"), "too_large", "{label}");
        assert!(
            s(&v, "message").contains(&limit.to_string()),
            "{label}: {v:?}"
        );
        assert_refusal(&label, status, &v, &w.db, &before);
    }
    // A chunked body that passes the limit as it streams is cut off too.
    for (path, limit) in [
        ("/api/v1/protocols", MAX_BODY),
        ("/api/gtl", MAX_MESSAGE_BYTES),
    ] {
        let before = w.db.dump();
        let c = TcpStream::connect(&w.addr).await.unwrap();
        let (mut rd, mut wr) = c.into_split();
        let writer = tokio::spawn(async move {
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            wr.write_all(head.as_bytes()).await?;
            let chunk = vec![b' '; 16 * 1024];
            let mut sent = 0;
            while sent <= limit + chunk.len() {
                wr.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                    .await?;
                wr.write_all(&chunk).await?;
                wr.write_all(b"\r\n").await?;
                sent += chunk.len();
            }
            wr.write_all(b"0\r\n\r\n").await?;
            Ok::<_, std::io::Error>(wr)
        });
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut raw)).await;
        let _ = writer.await;
        let (status, v) = parse_response(&raw).unwrap_or_else(|| {
            panic!(
                "chunked {path}: no response: {:?}",
                String::from_utf8_lossy(&raw)
            )
        });
        assert_eq!(status, 413, "chunked {path}: {v:?}");
        assert_refusal(&format!("chunked {path}"), status, &v, &w.db, &before);
    }
    // Exactly at the limit is read (and refused for what it is: not JSON).
    let r = ROUTES.iter().find(|r| r.template == "/api/gtl").unwrap();
    let p = w.build(r, &[]).await;
    let (status, v) = w
        .send_with(&p, vec![b' '; MAX_MESSAGE_BYTES], &bearer(&w.host_token))
        .await;
    assert_eq!(status, 400, "{v:?}");
    let big = vec![b' '; MAX_BODY];
    let h = signed(w.host.keys(), "POST", "/api/v1/feedback", &big, now());
    let (status, v) = w
        .host
        .send("POST", "/api/v1/feedback", big, &h)
        .await
        .unwrap();
    assert_eq!(status, 400, "{v:?}");
    assert!(s(&v, "message").contains("not valid JSON"), "{v:?}");
}

both!(slow_clients_are_cut_off_after_the_read_timeout);
async fn slow_clients_are_cut_off_after_the_read_timeout(b: Backend) {
    let Some(w) = World::new(b, &["--read-timeout", "2"]).await else {
        return;
    };
    let bound = |t0: Instant, what: &str| {
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(1_500) && took <= Duration::from_secs(8),
            "{what}: cut off after {took:?}, expected about 2 s"
        );
    };
    // A head sent one byte every 250 ms (it would take 30 s to finish).
    let head_dribble = async {
        let mut c = TcpStream::connect(&w.addr).await.unwrap();
        let head = format!(
            "GET /api/gtl/schema HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
            "a".repeat(80)
        );
        let t0 = Instant::now();
        let mut cut = false;
        for b in head.bytes() {
            if c.write_all(&[b]).await.is_err() {
                cut = true;
                break;
            }
            let mut buf = [0u8; 256];
            match tokio::time::timeout(Duration::from_millis(250), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    cut = true;
                    break;
                }
                Ok(Ok(_)) => {
                    // hyper may answer 408 before closing; keep reading.
                    let rest = read_to_end_within(&mut c, Duration::from_secs(5)).await;
                    let _ = rest;
                    cut = true;
                    break;
                }
                Err(_) => {}
            }
        }
        assert!(cut, "the dribbled head was served to the end");
        bound(t0, "a dribbled head");
    };
    // A complete head, then a body one byte every 250 ms: 408 in JSON.
    let addr = w.addr.clone();
    let body_dribble = |path: &'static str| {
        let addr = addr.clone();
        async move {
            let mut c = TcpStream::connect(&addr).await.unwrap();
            let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
            c.write_all(head.as_bytes()).await.unwrap();
            let t0 = Instant::now();
            let (mut rd, mut wr) = c.into_split();
            let writer = tokio::spawn(async move {
                for _ in 0..100 {
                    if wr.write_all(b" ").await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            });
            let mut raw = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), rd.read_to_end(&mut raw)).await;
            writer.abort();
            bound(t0, path);
            let (status, v) = parse_response(&raw).unwrap_or_else(|| panic!("{path}: no response"));
            assert_eq!(status, 408, "{path}: {v:?}");
            assert_eq!(s(&v, "error"), "timeout");
        }
    };
    // A connection that never sends anything.
    let idle = async {
        let mut c = TcpStream::connect(&w.addr).await.unwrap();
        let t0 = Instant::now();
        let _ = read_to_end_within(&mut c, Duration::from_secs(10)).await;
        bound(t0, "an idle connection");
    };
    // Meanwhile everyone else is served at once.
    let normal = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t0 = Instant::now();
        let (status, _) = w
            .host
            .raw("GET", "/api/v1/invitations", None)
            .await
            .unwrap();
        assert_eq!(status, 200);
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "a normal request waited {:?}",
            t0.elapsed()
        );
    };
    let before = w.db.dump();
    tokio::join!(
        head_dribble,
        body_dribble("/api/v1/protocols"),
        body_dribble("/api/gtl"),
        idle,
        normal
    );
    assert!(w.db.dump() == before, "a slow client's request wrote");
}

/// The soft limit on open files, from /proc (Linux); None elsewhere.
fn open_file_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

both!(two_thousand_concurrent_connections_are_all_answered);
async fn two_thousand_concurrent_connections_are_all_answered(b: Backend) {
    let Some(w) = World::new(b, &[]).await else {
        return;
    };
    // Each connection costs a descriptor here and one in the server (which
    // inherits this limit); leave room for everything else.
    let want = 2_000usize;
    let n = match open_file_limit() {
        Some(l) if (l as usize) < want + 256 => {
            let n = (l as usize).saturating_sub(256).max(100);
            eprintln!("open file limit {l}: testing {n} concurrent connections instead of {want}");
            n
        }
        _ => want,
    };
    let t0 = Instant::now();
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(TcpStream::connect(&w.addr).await.unwrap());
    }
    // All open at once; now each asks for the discovery document.
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                c.write_all(b"GET /.well-known/aiguishi.json HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await?;
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let k = c.read(&mut buf).await?;
                    if k == 0 {
                        break;
                    }
                    raw.extend_from_slice(&buf[..k]);
                    let text = String::from_utf8_lossy(&raw);
                    if let Some(at) = text.find("\r\n\r\n") {
                        let len = text[..at]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .and_then(|v| v.trim().parse::<usize>().ok())
                            })
                            .unwrap_or(0);
                        if raw.len() >= at + 4 + len {
                            break;
                        }
                    }
                }
                Ok::<_, std::io::Error>((parse_response(&raw).map(|(s, _)| s), c))
            })
        })
        .collect();
    let mut open = Vec::with_capacity(n);
    let mut ok = 0;
    for t in tasks {
        let (status, c) = tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("a connection was not answered within 60 s")
            .unwrap()
            .unwrap();
        ok += usize::from(status == Some(200));
        open.push(c);
    }
    assert_eq!(ok, n, "only {ok} of {n} concurrent requests were answered");
    // With all of them still open, a signed request is served.
    let (status, v) = w
        .host
        .raw("GET", "/api/v1/invitations", None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{v:?}");
    drop(open);
    let (status, _) = w
        .guest
        .raw("GET", "/api/v1/invitations", None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "{n} connections took {:?}",
        t0.elapsed()
    );
}
