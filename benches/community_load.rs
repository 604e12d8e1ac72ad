//! Load on the community server over loopback HTTP: many concurrent signed
//! requests from a pool of clients, a bounded count, throughput printed.
//!
//!     cargo bench --bench community_load
//!
//! The server is the one `palaver serve` runs (same router, SQLite file
//! store), started in this process so client and server share the 2 cores.
//!
//! - **browse**: signed `GET /api/v1/invitations?limit=50` from 32 clients
//!   at once, on a community holding 3 open invitations.
//! - **sessions**: signed `POST /api/v1/sessions` (the guest's request
//!   carrying both proof signatures, checked by the server) from 32 clients
//!   at once. A session needs an open invitation and takes it (a second one
//!   is refused with 409 `not_open`), so each session gets its own
//!   invitation, posted before the clock starts (this bench's server allows
//!   that many active invitations per key; `palaver serve` allows 3). Each
//!   create must answer 201, and at the end every invitation is matched.
//!
//! Excluded: registration, posting invitations, process start (the server
//! is in-process; `benches/serve_load.rs` measures the release binary).

use palaver::community::{Config, SqliteStore};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::obj;
use palaver::web::{Client, auth};
use std::sync::Arc;
use std::time::Instant;

const CLIENTS: usize = 32;
const BROWSES: usize = 20_000;
const SESSIONS: usize = 5_000;
const PID: &str = "43a806481a8e8cd00bc89f4676756c9be9081c0dd8392bee8e3534da41daa55f";

async fn drive<F, Fut>(total: usize, f: F) -> f64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let f = Arc::new(f);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (f, next) = (f.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    f(i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("community.sqlite")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cfg = Config {
            difficulty: 1,
            invitation_ttl: 3600.0,
            max_active_invitations: SESSIONS + 3,
            rate_limit: 0.0,
            ..Config::default()
        };
        tokio::spawn(palaver::services::server::serve(listener, Box::new(store), cfg));

        let host = Arc::new(Client::new(&url, KeyPair::generate()).unwrap());
        let guest = Arc::new(Client::new(&url, KeyPair::generate()).unwrap());
        host.register("host", "").await.unwrap();
        guest.register("guest", "").await.unwrap();
        let post_invitation = |host: Arc<Client>| async move {
            let k = host.keys();
            let binding = auth::transport_binding_canonical(&k.public_key, "iroh", "t", Some(PID));
            let body = Value::Object(obj! { "iroh_ticket" => "t", "protocol_id" => PID, "transport_binding_signature" => k.sign(binding.as_bytes()) });
            let v = host.call("POST", "/api/v1/invitations", Some(&body), &[201]).await.unwrap();
            v.get("post_id").and_then(Value::as_str).unwrap().to_owned()
        };
        for _ in 0..3 {
            post_invitation(host.clone()).await;
        }
        let g = guest.clone();
        let browse = drive(BROWSES, move |_| {
            let g = g.clone();
            async move {
                let v = g.call("GET", "/api/v1/invitations?limit=50", None, &[200]).await.unwrap();
                assert_eq!(v.get("total").and_then(Value::as_i64), Some(3));
            }
        })
        .await;
        println!("browse: {BROWSES} signed GET /api/v1/invitations from {CLIENTS} concurrent clients: {browse:.0} req/s");

        // One open invitation per session, posted before the clock starts.
        let mut posts = Vec::with_capacity(SESSIONS);
        for _ in 0..SESSIONS {
            posts.push(post_invitation(host.clone()).await);
        }
        let posts = Arc::new(posts);
        let (h, g, p) = (host.clone(), guest.clone(), posts.clone());
        let creates = drive(SESSIONS, move |i| {
            let (h, g, post) = (h.clone(), g.clone(), p[i].clone());
            async move {
                let (hk, gk) = (h.keys(), g.keys());
                let nonce = format!("nonce-{i}");
                let c = auth::session_canonical(&post, &hk.public_key, &gk.public_key, Some(PID), &nonce);
                let body = Value::Object(obj! {
                    "post_id" => post.as_str(), "host_public_key" => hk.public_key.as_str(), "guest_public_key" => gk.public_key.as_str(),
                    "protocol_id" => PID, "session_nonce" => nonce, "host_signature" => hk.sign(c.as_bytes()), "guest_signature" => gk.sign(c.as_bytes()),
                });
                g.call("POST", "/api/v1/sessions", Some(&body), &[201]).await.unwrap();
            }
        })
        .await;
        println!("sessions: {SESSIONS} signed POST /api/v1/sessions (two proof signatures each, one open invitation each) from {CLIENTS} concurrent clients: {creates:.0} creates/s");
        // Every invitation took its one session: none is left open.
        let v = guest.call("GET", "/api/v1/invitations?limit=50", None, &[200]).await.unwrap();
        assert_eq!(v.get("total").and_then(Value::as_i64), Some(3), "only the 3 browsed invitations stay open");
    });
}
