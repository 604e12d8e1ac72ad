//! Load on the release binary as a user deploys it, in one run: (a) one
//! `palaver serve` on SQLite (its default store), then on one throwaway
//! PostgreSQL cluster (`scripts/pg start`, each half in a database of its
//! own whose schema `palaver serve --migrate-only` makes first) (b) one
//! `palaver serve --db postgres://…` instance and (c) two instances on the
//! same database, the load clients spread over both (client k talks to
//! instance k mod 2). The summary gives each PostgreSQL figure as a share
//! of SQLite's. Every server runs with `--rate-limit 0`; everything — the
//! servers, the database and the clients in this process — shares this
//! machine's cores.
//!
//! Figures, each for (a), (b) and (c):
//! - **browse**: signed `GET /api/v1/invitations?limit=50` from 32 clients at
//!   once (each its own registered identity), on a community holding 3 open
//!   invitations; requests per second over the whole batch.
//! - **session create**: signed `POST /api/v1/sessions` from 32 guests at
//!   once, each carrying the host's and the guest's proof signatures (the
//!   server checks both, and that the invitation is open, in one
//!   transaction). A session takes its invitation (a second one is refused
//!   409 `not_open`), and `palaver serve` allows 3 active invitations per key,
//!   so the bench registers one host per 3 sessions and posts every
//!   invitation before the clock starts; creates per second.
//! - **market, 16 clients**: 16 buyer/provider pairs (on two instances the
//!   buyer on one, its provider on the other), each running whole jobs one
//!   after another over HTTP with bearer tokens from `POST /api/gtl/token`:
//!   JOB_OPEN, OFFER, DEAL_LOCK, DEAL_CONFIRM, FUND, DELIVER (target "0", so
//!   solving is one hash; settlement runs inline on DELIVER). Each accepted
//!   message is one transition (6 per job); the 8 chain events per job
//!   (DELIVER also records VERIFICATION and SETTLEMENT) are printed beside.
//!   Every accepted market message is durable before it is answered: SQLite
//!   `synchronous=FULL`; PostgreSQL `synchronous_commit=on`, but the
//!   throwaway cluster runs with `fsync=off` (scripts/pg), so (b) and (c)
//!   pay no disk flush.
//!
//! Excluded from every figure: process start, registration, tokens,
//! posting invitations (all done before the clock starts), and the checks.
//! After each figure the bench checks the work in the database itself and
//! panics on a mismatch: every session row exists once, one per invitation;
//! every job is SETTLED with its 8 events; the accounts sum to zero with the
//! escrow empty, and each buyer and provider moved by exactly its jobs.
//!
//! Run: `cargo build --release && cargo bench --bench serve_load`.
//! `PALAVER_BIN` names another binary. `SERVE_LOAD_BROWSES`,
//! `SERVE_LOAD_SESSIONS`, `SERVE_LOAD_JOBS` (per market client) set the
//! counts (10,000, 2,400, 25). Without PostgreSQL's binaries the PostgreSQL
//! half says it was skipped; `PALAVER_BENCH_PG_REQUIRED=1` makes that a
//! failure.

mod support;

use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::market::messages::{self, JobRequest};
use palaver::market::time::system_ms;
use palaver::market::{MarketClient, policy};
use palaver::obj;
use palaver::web::{Client, auth};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 32;
const MARKET_CLIENTS: usize = 16;
const PID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// A `palaver serve` child, killed when dropped (also on panic).
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `palaver serve --db db` with its data dir in `dir`; returns once
/// `/healthz` answers 200.
async fn serve(bin: &Path, dir: &Path, db: &str) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let child = Command::new(bin)
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--db", db])
        .args(["--rate-limit", "0", "--difficulty", "1"])
        .args(["--invitation-ttl", "3600"])
        .arg("--data-dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let probe = Client::new(&server.url, KeyPair::generate()).unwrap();
    let start = Instant::now();
    loop {
        if let Ok((200, _)) = probe.send("GET", "/healthz", Vec::new(), &[]).await {
            return server;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "palaver serve on port {port} did not become healthy; its log: {}",
            std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A throwaway cluster from `scripts/pg start`, stopped when dropped (also on
/// panic).
struct Cluster {
    dir: PathBuf,
    url: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .status();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg")
}

/// The cluster, or None (after saying so) when PostgreSQL is not installed
/// and `PALAVER_BENCH_PG_REQUIRED` is not set.
fn cluster(dir: &Path) -> Option<Cluster> {
    let out = Command::new(script())
        .arg("start")
        .arg(dir)
        .output()
        .unwrap();
    let required = std::env::var("PALAVER_BENCH_PG_REQUIRED").is_ok_and(|v| v == "1");
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if err.contains("not found") && !required {
            println!("\npostgres: skipped: {}", err.trim());
            return None;
        }
        panic!("scripts/pg start failed: {err}");
    }
    let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    Some(Cluster {
        dir: dir.to_owned(),
        url,
    })
}

/// Where a run's records are, for the checks.
#[derive(Clone)]
enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// One integer from `sql`, read in the database itself.
    async fn int(&self, sql: &str) -> i64 {
        let (db, sql) = (self.clone(), sql.to_owned());
        tokio::task::spawn_blocking(move || match db {
            Db::Sqlite(p) => rusqlite::Connection::open(p)
                .unwrap()
                .query_row(&sql, [], |r| r.get(0))
                .unwrap(),
            Db::Postgres(u) => postgres::Client::connect(&u, postgres::NoTls)
                .unwrap()
                .query_one(&sql, &[])
                .unwrap()
                .get(0),
        })
        .await
        .unwrap()
    }
}

/// `total` calls of `f(client, i)` from `clients` tasks at once (each task
/// takes the next i); calls per second.
async fn drive<F, Fut>(clients: usize, total: usize, f: F) -> f64
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let f = Arc::new(f);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (f, next) = (f.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    f(c, i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// A newly registered identity on `url`.
async fn registered(url: &str, nick: &str) -> Client {
    let c = Client::new(url, KeyPair::generate()).unwrap();
    let (status, v) = c.register(nick, "").await.unwrap();
    assert_eq!(status, 201, "{v:?}");
    c
}

async fn post_invitation(host: &Client) -> String {
    let k = host.keys();
    let binding = auth::transport_binding_canonical(&k.public_key, "iroh", "t", Some(PID));
    let body = Value::Object(obj! {
        "iroh_ticket" => "t", "protocol_id" => PID,
        "transport_binding_signature" => k.sign(binding.as_bytes()),
    });
    let v = host
        .call("POST", "/api/v1/invitations", Some(&body), &[201])
        .await
        .unwrap();
    v.get("post_id").and_then(Value::as_str).unwrap().to_owned()
}

struct Figures {
    browse: f64,
    sessions: f64,
    jobs: f64,
}

/// The three figures against `urls` (one instance, or several sharing a
/// database), checked in `db`.
async fn measure(what: &str, urls: &[String], db: &Db) -> Figures {
    let browses = count("SERVE_LOAD_BROWSES", 10_000);
    let sessions = count("SERVE_LOAD_SESSIONS", 2_400);
    let jobs = count("SERVE_LOAD_JOBS", 25);
    let at = |k: usize| urls[k % urls.len()].as_str();
    println!("\n{what}");

    // Browse: 3 open invitations, 32 guests.
    let host = registered(at(0), "browsehost").await;
    for _ in 0..3 {
        post_invitation(&host).await;
    }
    let mut guests = Vec::new();
    for c in 0..CLIENTS {
        guests.push(registered(at(c), &format!("guest{c}")).await);
    }
    let guests = Arc::new(guests);
    let g = guests.clone();
    let browse = drive(CLIENTS, browses, move |c, _| {
        let g = g.clone();
        async move {
            let v = g[c]
                .call("GET", "/api/v1/invitations?limit=50", None, &[200])
                .await
                .unwrap();
            assert_eq!(v.get("total").and_then(Value::as_i64), Some(3));
        }
    })
    .await;
    println!(
        "  browse: {browses} signed GET /api/v1/invitations, {CLIENTS} clients: {browse:.0} req/s"
    );

    // Session create: one open invitation per session, 3 per host.
    let hosts = sessions.div_ceil(3);
    let slots: Arc<Vec<std::sync::OnceLock<(Client, String)>>> =
        Arc::new((0..hosts * 3).map(|_| std::sync::OnceLock::new()).collect());
    let (s, u): (_, Arc<Vec<String>>) = (slots.clone(), Arc::new(urls.to_vec()));
    drive(CLIENTS, hosts, move |_, h| {
        let (s, u) = (s.clone(), u.clone());
        async move {
            let host = registered(&u[h % u.len()], &format!("host{h}")).await;
            for j in 0..3 {
                let post = post_invitation(&host).await;
                s[h * 3 + j].set((host.clone(), post)).ok().unwrap();
            }
        }
    })
    .await;
    let (s, g) = (slots.clone(), guests.clone());
    let creates = drive(CLIENTS, sessions, move |c, i| {
        let (s, g) = (s.clone(), g.clone());
        async move {
            let (host, post) = s[i].get().unwrap();
            let (hk, gk) = (host.keys(), g[c].keys());
            let nonce = format!("nonce-{i}");
            let canon =
                auth::session_canonical(post, &hk.public_key, &gk.public_key, Some(PID), &nonce);
            let body = Value::Object(obj! {
                "post_id" => post.as_str(), "host_public_key" => hk.public_key.as_str(),
                "guest_public_key" => gk.public_key.as_str(), "protocol_id" => PID,
                "session_nonce" => nonce, "host_signature" => hk.sign(canon.as_bytes()),
                "guest_signature" => gk.sign(canon.as_bytes()),
            });
            g[c].call("POST", "/api/v1/sessions", Some(&body), &[201])
                .await
                .unwrap();
        }
    })
    .await;
    println!(
        "  sessions: {sessions} signed POST /api/v1/sessions (both proofs), {CLIENTS} clients: {creates:.0} creates/s"
    );
    let n = sessions as i64;
    assert_eq!(db.int("SELECT COUNT(*) FROM sessions").await, n);
    assert_eq!(
        db.int("SELECT COUNT(DISTINCT post_id) FROM sessions").await,
        n
    );
    assert_eq!(
        db.int("SELECT COUNT(*) FROM invitations WHERE status = 'open'")
            .await,
        (hosts * 3 - sessions) as i64 + 3,
        "every session took its own invitation, and only those"
    );

    // The market: 16 buyer/provider pairs, whole jobs over HTTP.
    let mut pairs = Vec::new();
    for k in 0..MARKET_CLIENTS {
        let b = registered(at(k), &format!("buyer{k}")).await;
        let p = registered(at(k + 1), &format!("prov{k}")).await;
        let b = MarketClient::connect(at(k), b.keys().clone(), Some(&format!("buyer{k}")))
            .await
            .unwrap();
        let p = MarketClient::connect(at(k + 1), p.keys().clone(), Some(&format!("prov{k}")))
            .await
            .unwrap();
        pairs.push((b, p));
    }
    let accepted = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = pairs
        .iter()
        .cloned()
        .enumerate()
        .map(|(k, (b, p))| {
            let accepted = accepted.clone();
            tokio::spawn(async move {
                for j in 0..jobs {
                    one_job(&b, &p, &format!("load_{k}_{j}"), &accepted).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let all = MARKET_CLIENTS * jobs;
    let messages = accepted.load(Ordering::Relaxed);
    assert_eq!(messages, all * 6);
    println!(
        "  market: {MARKET_CLIENTS} clients × {jobs} jobs: {:.0} transitions/s (accepted messages, 6 per job), {:.0} events/s (8 per job), {:.1} jobs/s",
        messages as f64 / secs,
        (all * 8) as f64 / secs,
        all as f64 / secs
    );
    let all = all as i64;
    assert_eq!(
        db.int("SELECT COUNT(*) FROM gtl_transactions WHERE state = 'SETTLED'")
            .await,
        all
    );
    assert_eq!(db.int("SELECT COUNT(*) FROM gtl_transactions").await, all);
    assert_eq!(db.int("SELECT COUNT(*) FROM gtl_events").await, all * 8);
    assert_eq!(
        db.int("SELECT CAST(COALESCE(SUM(balance), 0) AS BIGINT) FROM gtl_accounts")
            .await,
        0,
        "the accounts sum to zero"
    );
    assert_eq!(
        db.int("SELECT balance FROM gtl_accounts WHERE account = 'escrow'")
            .await,
        0
    );
    for (b, p) in &pairs {
        assert_eq!(b.balance().await.unwrap(), 1000 - jobs as i64);
        assert_eq!(p.balance().await.unwrap(), 1000 + jobs as i64);
    }
    Figures {
        browse,
        sessions: creates,
        jobs: all as f64 / secs,
    }
}

/// One job from JOB_OPEN to SETTLED, price 1: 6 messages, each must be
/// accepted.
async fn one_job(b: &MarketClient, p: &MarketClient, tx: &str, accepted: &AtomicUsize) {
    let hash = |v: &Value, k: &str| {
        v.get("hashes")
            .and_then(|x| x.get(k))
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    };
    let send = |c: &MarketClient, msg| {
        let c = c.clone();
        async move {
            let v = c.post(msg).await.unwrap();
            accepted.fetch_add(1, Ordering::Relaxed);
            v
        }
    };
    let now = system_ms();
    let prefix = format!("load|{tx}");
    let r = send(
        b,
        messages::job_open(&JobRequest {
            transaction_id: tx,
            prefix: &prefix,
            target: "0",
            budget: 1,
            deadline_ms: now + 3_600_000,
            principal_id: b.principal_id(),
            agent_id: b.agent_id(),
        }),
    )
    .await;
    let (jh, ah, ph) = (
        hash(&r, "job_hash"),
        hash(&r, "authority_hash"),
        hash(&r, "verification_policy_hash"),
    );
    let r = send(
        p,
        messages::offer(tx, &jh, 1, now + 600_000, p.principal_id(), p.agent_id()),
    )
    .await;
    let deal = messages::deal(&jh, &hash(&r, "offer_hash"), &ah, &ph, 1, p.principal_id());
    let r = send(b, messages::deal_lock(tx, deal)).await;
    let dh = hash(&r, "deal_hash");
    send(p, messages::deal_confirm(tx, &dh)).await;
    send(b, messages::fund(tx, &dh, 1)).await;
    let sol = policy::solve(&prefix, "0", 0, 1, &Default::default()).unwrap();
    let r = send(
        p,
        messages::deliver(tx, &dh, &prefix, sol.nonce, &sol.digest),
    )
    .await;
    assert_eq!(r.get("state").and_then(Value::as_str), Some("SETTLED"));
}

fn main() {
    let bin = support::binary();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rt.block_on(async {
        let db = dir.path().join("a/community.sqlite");
        let server = serve(&bin, &dir.path().join("a"), db.to_str().unwrap()).await;
        let f = measure(
            "(a) one palaver serve, SQLite",
            std::slice::from_ref(&server.url),
            &Db::Sqlite(db),
        )
        .await;
        drop(server);
        f
    });
    // Its own temp dir: as root, scripts/pg hands it to the `postgres` user,
    // who could not enter a dir of root's.
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = cluster(pg_dir.path()).map(|cluster| {
        // One database per half, so each half's checks count its own rows.
        let database = |name: &str| -> String {
            let mut admin = postgres::Client::connect(&cluster.url, postgres::NoTls).unwrap();
            admin
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            let base = cluster.url.rsplit_once('/').unwrap().0;
            let url = format!("{base}/{name}");
            let out = Command::new(&bin)
                .args(["serve", "--migrate-only", "--db", &url])
                .arg("--data-dir")
                .arg(dir.path().join(format!("{name}-migrate")))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "palaver serve --migrate-only: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            url
        };
        let (url1, url2) = (database("one_instance"), database("two_instances"));
        let f = rt.block_on(async {
            let alone = serve(&bin, &dir.path().join("b"), &url1).await;
            let one = measure(
                "(b) one palaver serve instance, PostgreSQL",
                std::slice::from_ref(&alone.url),
                &Db::Postgres(url1.clone()),
            )
            .await;
            drop(alone);
            let first = serve(&bin, &dir.path().join("c1"), &url2).await;
            let second = serve(&bin, &dir.path().join("c2"), &url2).await;
            let two = measure(
                "(c) two palaver serve instances, one PostgreSQL",
                &[first.url.clone(), second.url.clone()],
                &Db::Postgres(url2.clone()),
            )
            .await;
            (one, two)
        });
        drop(cluster);
        f
    });
    println!(
        "\nsummary (per second)          SQLite, one   PostgreSQL, one (÷ SQLite)   PostgreSQL, two (÷ SQLite)"
    );
    let row = |what: &str, pick: fn(&Figures) -> f64| {
        let a = pick(&sqlite);
        let pg = pg.as_ref().map_or("skipped".to_owned(), |(one, two)| {
            let (b, c) = (pick(one), pick(two));
            format!("{b:>12.0} ({:.2})   {c:>16.0} ({:.2})", b / a, c / a)
        });
        println!("  {what:<28} {a:>11.0}   {pg}");
    };
    row("browse (req/s)", |f| f.browse);
    row("session create (creates/s)", |f| f.sessions);
    row("market transitions, 16 cl.", |f| f.jobs * 6.0);
}
