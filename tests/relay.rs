//! The relay path, offline: a local iroh-relay 0.35 server (plain HTTP on
//! loopback, in this process) stands in for n0's relays. palaver hosts and
//! joins through it without `--direct` (the real binaries, introduced by
//! `palaver serve`), a ticket that names only the relay reaches its host
//! through it, and a relay nobody answers at is a clear error in bounded
//! time. The reference client joins a palaver host through it too.

use crate::common;

use common::{Kill, ok, read_until, winner_line};

use iroh::{NodeAddr, NodeId, RelayUrl};
use iroh_base::ticket::NodeTicket;
use iroh_relay::server::{AccessConfig, RelayConfig, Server, ServerConfig};
use palaver::json::Value;
use palaver::net::{self, NetError, Reach};
use std::collections::BTreeSet;
use std::io::BufReader;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::{ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

/// A relay server on a free loopback port, HTTP only (no STUN, no QUIC),
/// that remembers every node that connected to it.
struct Relay {
    rt: tokio::runtime::Runtime,
    server: Option<Server>,
    url: RelayUrl,
    seen: Arc<Mutex<BTreeSet<NodeId>>>,
}

impl Relay {
    fn start() -> Relay {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let log = seen.clone();
        let access = AccessConfig::Restricted(Box::new(move |node: NodeId| {
            log.lock().unwrap().insert(node);
            let allow: std::pin::Pin<
                Box<dyn std::future::Future<Output = iroh_relay::server::Access> + Send>,
            > = Box::pin(async { iroh_relay::server::Access::Allow });
            allow
        }));
        let config: ServerConfig<(), ()> = ServerConfig {
            relay: Some(RelayConfig {
                http_bind_addr: (Ipv4Addr::LOCALHOST, 0).into(),
                tls: None,
                limits: Default::default(),
                key_cache_capacity: None,
                access,
            }),
            stun: None,
            quic: None,
            metrics_addr: None,
        };
        let server = rt.block_on(Server::spawn(config)).expect("start the relay");
        let addr = server.http_addr().expect("the relay's HTTP address");
        let url = net::parse_relay_url(&format!("http://{addr}")).unwrap();
        Relay {
            rt,
            server: Some(server),
            url,
            seen,
        }
    }

    fn server(&self) -> &Server {
        self.server.as_ref().expect("running")
    }

    /// The nodes that connected to the relay so far.
    fn seen(&self) -> BTreeSet<NodeId> {
        self.seen.lock().unwrap().clone()
    }

    /// Packets the relay forwarded from one node to another: QUIC data and
    /// disco (path discovery) messages.
    fn forwarded(&self) -> u64 {
        let m = &self.server().metrics().server;
        m.send_packets_recv.get() + m.disco_packets_recv.get()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = self.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(5), s.shutdown()).await
            });
        }
    }
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `palaver serve` and the data dirs of its users.
struct World {
    url: String,
    tmp: tempfile::TempDir,
    _serve: common::Serve,
}

impl World {
    fn new(users: &[&str]) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let (serve, url) =
            common::palaver_serve(&tmp.path().join("db.sqlite"), &["--rate-limit", "0"]);
        let w = World {
            url,
            tmp,
            _serve: serve,
        };
        for who in users {
            ok(w.palaver(who).arg("init").output().unwrap(), "init");
            ok(
                w.palaver(who)
                    .args(["register", "--nickname", who])
                    .output()
                    .unwrap(),
                "register",
            );
        }
        w
    }

    fn dir(&self, who: &str) -> PathBuf {
        self.tmp.path().join(who)
    }

    /// palaver as `who`, with an empty config dir and no relay in the
    /// environment unless a test sets one.
    fn palaver(&self, who: &str) -> Command {
        let mut c = Command::new(BIN);
        c.env_remove("PALAVER_RELAY_URL")
            .env(
                "PALAVER_CONFIG_DIR",
                self.tmp.path().join(format!("{who}-config")),
            )
            .arg("--data-dir")
            .arg(self.dir(who))
            .arg("--server")
            .arg(&self.url);
        c
    }

    /// The invitation's ticket, as the server holds it.
    fn ticket(&self, post: &str) -> String {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let c = palaver::web::Client::new(&self.url, palaver::identity::KeyPair::generate())
                .unwrap();
            let inv = c
                .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
                .await
                .unwrap();
            inv.get("iroh_ticket")
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
    }
}

/// The host's ticket names the local relay, and the relay saw the host.
fn check_ticket(relay: &Relay, ticket: &str) -> NodeAddr {
    let addr = net::parse_ticket(ticket).unwrap();
    assert_eq!(
        addr.relay_url.as_ref(),
        Some(&relay.url),
        "the ticket names another relay: {addr:?}"
    );
    assert!(
        relay.seen().contains(&addr.node_id),
        "the relay never saw the host {}: {:?}",
        addr.node_id,
        relay.seen()
    );
    addr
}

/// A palaver host of rps-v1 through the local relay (`--relay`,
/// autonomous, `extra` flags), its invitation posted and its ticket
/// checked.
struct RelayedHost {
    kill: Kill,
    out: BufReader<ChildStdout>,
    seen: String,
    post: String,
    addr: NodeAddr,
    /// What the relay had forwarded when the invitation was up.
    forwarded: u64,
}

impl RelayedHost {
    /// Starts the host and waits for its invitation (unchecked).
    fn spawn(
        w: &World,
        relay: &RelayUrl,
        extra: &[&str],
    ) -> (Kill, BufReader<ChildStdout>, String, String) {
        let mut host = w
            .palaver("h")
            .args([
                "host",
                "rps-v1",
                "--relay",
                relay.as_str(),
                "--control-mode",
                "autonomous",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(host.stdout.take().unwrap());
        let kill = Kill(host);
        let mut seen = String::new();
        let post = read_until(&mut out, "post_id:", &mut seen);
        (kill, out, seen, post)
    }

    fn start(w: &World, relay: &Relay, extra: &[&str]) -> RelayedHost {
        let (kill, out, seen, post) = RelayedHost::spawn(w, &relay.url, extra);
        let addr = check_ticket(relay, &w.ticket(&post));
        RelayedHost {
            kill,
            out,
            seen,
            post,
            addr,
            forwarded: relay.forwarded(),
        }
    }

    /// Waits for the game to end; what the host printed. The relay saw the
    /// host and its guest (`guest` names it) and forwarded their packets.
    fn finish(self, relay: &Relay, guest: &str) -> String {
        let seen = common::finish(
            self.kill,
            self.out,
            self.seen,
            "host",
            Duration::from_secs(60),
        );
        let nodes = relay.seen();
        assert!(
            nodes.len() >= 2 && nodes.contains(&self.addr.node_id),
            "the relay saw {nodes:?}, not the host and {guest}"
        );
        assert!(
            relay.forwarded() > self.forwarded,
            "the relay forwarded nothing between the peers"
        );
        seen
    }
}

/// palaver hosts (relay from `--relay`) and palaver joins (relay from
/// `PALAVER_RELAY_URL`), neither with `--direct`: the ticket names the local
/// relay, both nodes connect to it, it forwards their first packets, and the
/// game completes with the same winner on both sides.
#[test]
fn palaver_hosts_and_joins_through_a_local_relay() {
    let relay = Relay::start();
    let w = World::new(&["h", "g"]);
    let host = RelayedHost::start(&w, &relay, &["--options", r#"{"best_of":3}"#]);
    let join = w
        .palaver("g")
        .env("PALAVER_RELAY_URL", relay.url.as_str())
        .args(["--json", "join", &host.post, "--control-mode", "autonomous"])
        .output()
        .unwrap();
    let j = palaver::json::parse_str(&ok(&join, "join")).unwrap();
    let seen = host.finish(&relay, "the guest");
    let guest_winner = j
        .get("outcome")
        .and_then(|o| o.get("winner"))
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_owned();
    assert_eq!(winner_line(&seen), guest_winner, "host said:\n{seen}");
}

/// A ticket stripped down to the node id and the relay URL leaves the relay
/// as the only way to the host: the connection is made through it, frames
/// go both ways, and the relay counted the QUIC packets it carried.
#[test]
fn a_ticket_naming_only_the_relay_connects_through_it() {
    let relay = Relay::start();
    let lo = Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
    let relays = [relay.url.clone()];
    relay.rt.block_on(async {
        let host = net::bind_via(Reach::Relay, &relays, lo).await.unwrap();
        let guest = net::bind_via(Reach::Relay, &relays, lo).await.unwrap();
        let full = net::ticket(&host).await;
        check_ticket(&relay, &full);
        let only_relay =
            NodeTicket::new(NodeAddr::new(host.node_id()).with_relay_url(relay.url.clone()))
                .to_string();
        assert!(
            net::parse_ticket(&only_relay)
                .unwrap()
                .direct_addresses
                .is_empty()
        );
        let sent_before = relay.server().metrics().server.send_packets_recv.get();
        let accept = async {
            net::accept(&host, Duration::from_secs(30), &|e| panic!("{e}"))
                .await
                .unwrap()
        };
        let hello_map = palaver::obj! { "action" => "hello" };
        let hello = Value::Object(hello_map.clone());
        // The guest writes first: the host sees the stream with its first frame.
        let ((_hl, mut hc), (_gl, mut gc)) = tokio::join!(accept, async {
            let (link, ch) = net::connect(&guest, &only_relay).await.unwrap();
            ch.tx.send(&hello).await.unwrap();
            (link, ch)
        });
        let got = tokio::time::timeout(Duration::from_secs(10), hc.rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, hello_map);
        hc.tx.send(&hello).await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), gc.rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, hello_map);
        let carried = relay.server().metrics().server.send_packets_recv.get() - sent_before;
        assert!(carried > 0, "the relay carried no QUIC packet");
        assert!(relay.seen().contains(&guest.node_id()));
        host.close().await;
        guest.close().await;
    });
}

/// A relay nobody answers at: binding fails with the URL and the reason
/// within the relay wait, and no endpoint is left behind.
#[test]
fn an_unreachable_relay_is_an_error_naming_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = net::parse_relay_url(&format!("http://127.0.0.1:{}", closed_port())).unwrap();
    let start = Instant::now();
    let e = rt
        .block_on(net::bind_via(
            Reach::Relay,
            std::slice::from_ref(&url),
            None,
        ))
        .unwrap_err();
    assert!(start.elapsed() < net::RELAY_WAIT + Duration::from_secs(2));
    let text = e.to_string();
    assert!(matches!(e, NetError::Relay(_)), "{e:?}");
    assert!(
        text.starts_with("no relay reachable: ") && text.contains(url.as_str()),
        "{text}"
    );
    // An address that takes no connection (TEST-NET-1: dropped or
    // unroutable): the wait is bounded either way.
    let silent = net::parse_relay_url("http://192.0.2.1:9").unwrap();
    let start = Instant::now();
    let e = rt
        .block_on(net::reachable(
            std::slice::from_ref(&silent),
            Duration::from_millis(500),
        ))
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(3), "{e}");
    assert!(e.to_string().contains("192.0.2.1"), "{e}");
    // One reachable relay among unreachable ones is enough.
    let relay = Relay::start();
    rt.block_on(net::reachable(
        &[url.clone(), relay.url.clone()],
        Duration::from_secs(5),
    ))
    .unwrap();
}

/// `palaver host` and `join` with an unreachable relay exit with an error
/// naming it within the relay wait; the host posts no invitation.
#[test]
fn palaver_with_an_unreachable_relay_fails_fast_and_clearly() {
    let w = World::new(&["h", "g"]);
    let dead = format!("http://127.0.0.1:{}", closed_port());
    let start = Instant::now();
    let host = w
        .palaver("h")
        .args(["host", "rps-v1", "--relay", &dead])
        .output()
        .unwrap();
    assert!(start.elapsed() < net::RELAY_WAIT + Duration::from_secs(10));
    assert_eq!(host.status.code(), Some(2), "{host:?}");
    let err = String::from_utf8_lossy(&host.stderr);
    assert!(
        err.contains("no relay reachable") && err.contains(&format!("{dead}/")),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&host.stdout).contains("post_id:"));
    let browse = w.palaver("g").args(["--json", "browse"]).output().unwrap();
    assert!(
        !ok(&browse, "browse").contains("rps"),
        "an invitation was posted"
    );
    // The guest side: a good host (through a live relay) and a guest whose
    // own relay is dead.
    let relay = Relay::start();
    let (_host, _out, _, post) = RelayedHost::spawn(&w, &relay.url, &[]);
    let start = Instant::now();
    let join = w
        .palaver("g")
        .env("PALAVER_RELAY_URL", &dead)
        .args(["join", &post, "--control-mode", "autonomous"])
        .output()
        .unwrap();
    assert!(start.elapsed() < net::RELAY_WAIT + Duration::from_secs(10));
    assert_eq!(join.status.code(), Some(2), "{join:?}");
    let err = String::from_utf8_lossy(&join.stderr);
    assert!(err.contains("no relay reachable"), "{err}");
}

/// Relay URLs are checked where they are given: flags, the environment,
/// config.toml; `--direct` uses no relay at all.
#[test]
fn bad_relay_urls_are_refused_with_the_url_and_why() {
    let w = World::new(&["h"]);
    for (bad, why) in [
        ("ftp://relay.example", "the scheme must be http or https"),
        ("http://", "empty host"),
        ("relay.example:3340", "the scheme must be http or https"),
        ("http://u:p@relay.example", "credentials"),
        ("http://relay.example/?x=1", "no query or fragment"),
    ] {
        let o = w
            .palaver("h")
            .args(["host", "rps-v1", "--relay", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("bad relay URL {bad:?}")) && err.contains(why),
            "{bad}: {err}"
        );
        let o = w
            .palaver("g")
            .env("PALAVER_RELAY_URL", bad)
            .args(["join", "some-post"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.code() == Some(2) && err.contains("bad relay URL"),
            "{bad}: {err}"
        );
    }
    let cfg = w.tmp.path().join("h-config");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), "relay_url = \"ws://r\"\n").unwrap();
    let o = w.palaver("h").args(["host", "rps-v1"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2)
            && err.contains("config.toml: `relay_url`: bad relay URL \"ws://r\""),
        "{err}"
    );
}

/// The reference client (aigenora 0.1.4, iroh-ffi 0.35) has no setting for
/// its own relays, but it dials a palaver host whose ticket names the local
/// relay: its node connects to that relay, and the game completes.
#[test]
#[ignore = "needs the reference client (aigenora 0.1.4 in a venv): run scripts/test"]
fn the_reference_joins_a_palaver_host_through_a_local_relay() {
    let py = common::reference_python();
    let relay = Relay::start();
    let w = World::new(&["h"]);
    let refd = w.dir("reference");
    common::reference_identity(&py, &w.url, &refd, "ref");
    let host = RelayedHost::start(&w, &relay, &[]);
    let join = common::aigenora(
        &py,
        &w.url,
        &refd,
        &[
            "join",
            &host.post,
            "--control-mode",
            "autonomous",
            "--no-web",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let ref_out = ok(&join, "aigenora join");
    assert!(ref_out.contains("done"), "{ref_out}");
    let seen = host.finish(&relay, "the reference");
    winner_line(&seen);
}
