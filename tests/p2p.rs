//! palaver against palaver over iroh on loopback, introduced by `palaver
//! serve`: the real binaries end to end, and a peer that breaks the
//! handshake, which ends the host's attempt with a reason instead of a crash.

use iroh::Endpoint;
use palaver::engine::{Channel, ControlMode};
use palaver::identity::KeyPair;
use palaver::json::Value;
use palaver::net::{self, Link, Reach, handshake};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

/// A `palaver serve` and the identities of these tests, each in its own
/// data dir under `dir`.
struct Peers {
    dir: PathBuf,
    url: String,
    _serve: common::Serve,
}

impl Peers {
    /// Serves with `serve_args`; initialises and registers each of `who`.
    fn new(dir: &Path, serve_args: &[&str], who: &[&str]) -> Peers {
        let (serve, url) = common::palaver_serve(&dir.join("db.sqlite"), serve_args);
        let p = Peers {
            dir: dir.to_owned(),
            url,
            _serve: serve,
        };
        for w in who {
            assert!(p.cmd(w).arg("init").output().unwrap().status.success());
            assert!(
                p.cmd(w)
                    .args(["register", "--nickname", w])
                    .output()
                    .unwrap()
                    .status
                    .success()
            );
        }
        p
    }

    /// `palaver` as `who` on this server.
    fn cmd(&self, who: &str) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--data-dir")
            .arg(self.dir.join(who))
            .arg("--server")
            .arg(&self.url);
        c
    }

    /// `palaver host rps-v1 --direct --control-mode autonomous <extra>
    /// --daemon` as `h`: what it prints, and the invitation's post id.
    fn host_rps(&self, extra: &[&str]) -> (Value, String) {
        let started = self
            .cmd("h")
            .args(["host", "rps-v1", "--direct", "--control-mode", "autonomous"])
            .args(extra)
            .arg("--daemon")
            .output()
            .unwrap();
        let started = palaver::json::parse_str(&common::ok(started, "host --daemon")).unwrap();
        let post = started
            .get("post_id")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        (started, post)
    }

    /// `palaver --json join <post> --direct --control-mode autonomous` as
    /// `g`: what it prints.
    fn join(&self, post: &str) -> String {
        let join = self
            .cmd("g")
            .args([
                "--json",
                "join",
                post,
                "--direct",
                "--control-mode",
                "autonomous",
            ])
            .output()
            .unwrap();
        common::ok(join, "join")
    }

    /// A stranger's connection to the host of invitation `post` (no
    /// handshake: what it sends is up to the test).
    async fn dial(&self, post: &str) -> (Endpoint, Link, Channel) {
        let c = palaver::web::Client::new(&self.url, KeyPair::generate()).unwrap();
        let inv = c
            .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
            .await
            .unwrap();
        let ticket = inv.get("iroh_ticket").and_then(Value::as_str).unwrap();
        let ep = net::bind(
            Reach::Direct,
            Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
        )
        .await
        .unwrap();
        let (link, ch) = net::connect(&ep, ticket).await.unwrap();
        (ep, link, ch)
    }
}

#[test]
fn palaver_hosts_and_palaver_joins_over_iroh() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h", "g"]);
    let cmd = |who: &str| peers.cmd(who);
    // The host runs in the background and says where.
    let (started, post) = peers.host_rps(&["--options", r#"{"best_of":5}"#]);
    let out_log = started
        .get("out_log")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    // A guest that breaks the handshake is turned away; the host keeps waiting.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (ep, link, ch) = peers.dial(&post).await;
        ch.tx
            .send(&Value::Object(palaver::obj! { "action" => "join" }))
            .await
            .unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(5), link.conn.closed()).await;
        ep.close().await;
    });
    let j = palaver::json::parse_str(&peers.join(&post)).unwrap();
    let winner = j
        .get("outcome")
        .and_then(|o| o.get("winner"))
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_owned();
    let start = std::time::Instant::now();
    let rest = loop {
        let text = std::fs::read_to_string(&out_log).unwrap_or_default();
        if text.contains("completed: ") || start.elapsed() > Duration::from_secs(30) {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        rest.contains(&format!("completed: completed, winner: {winner}")),
        "host said {rest}, guest said {j:?}"
    );
    let err_log = started.get("err_log").and_then(Value::as_str).unwrap();
    let turned = std::fs::read_to_string(err_log).unwrap();
    assert!(
        turned.contains("turned a guest away: bad _session_init frame"),
        "{turned}"
    );
    let sid = j.get("session_id").and_then(Value::as_str).unwrap();
    let rec = cmd("g")
        .args(["--json", "session", "get", sid])
        .output()
        .unwrap();
    let rec = palaver::json::parse_str(&String::from_utf8_lossy(&rec.stdout)).unwrap();
    assert_eq!(rec.get("status").and_then(Value::as_str), Some("closed"));
    assert_eq!(rec.get("disputed"), Some(&Value::Bool(false)));
    let t = cmd("h")
        .args(["session", "transport-update", sid, "node-new-ticket"])
        .output()
        .unwrap();
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let t = cmd("g")
        .args(["--json", "session", "transport-get", sid])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&t.stdout).contains("node-new-ticket"),
        "{t:?}"
    );
    let r = cmd("g")
        .args(["session", "status", sid, "failed"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&r.stderr).contains("409"), "{r:?}");
}

#[tokio::test]
async fn a_guest_that_breaks_the_handshake_is_refused_with_a_reason() {
    let lo = Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
    let host_ep = net::bind(Reach::Direct, lo).await.unwrap();
    let guest_ep = net::bind(Reach::Direct, lo).await.unwrap();
    let ticket = net::ticket(&host_ep).await;
    let keys = KeyPair::generate();
    let pid = "ab".repeat(32);
    let host = async {
        let (_link, mut ch) = net::accept(&host_ep, Duration::from_secs(10), &|e| eprintln!("{e}"))
            .await
            .unwrap();
        handshake::host(&mut ch, &keys, "post", &pid, ControlMode::Autonomous).await
    };
    let guest = async {
        let (link, ch) = net::connect(&guest_ep, &ticket).await.unwrap();
        // A business frame where the session init belongs.
        ch.tx
            .send(&Value::Object(palaver::obj! { "action" => "join" }))
            .await
            .unwrap();
        (link, ch)
    };
    let (h, _g) = tokio::join!(host, guest);
    match h {
        Err(handshake::HandshakeError::Bad {
            frame: "_session_init",
            ..
        }) => {}
        other => panic!("expected a refused init, got {other:?}"),
    }
    assert!(net::parse_ticket("nodenotaticket").is_err());
}

#[tokio::test]
async fn heartbeats_report_a_silent_peer_and_its_return() {
    let (a, mut b) = palaver::engine::Channel::memory_pair();
    let a = a.pumped();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let beat = net::heartbeat(
        a.tx.clone(),
        a.rx.liveness.clone(),
        Duration::from_millis(20),
        Duration::from_millis(100),
        move |kind, _| log.lock().unwrap().push(kind),
    );
    // The peer sees pings but stays silent: unresponsive.
    let ping = b.rx.recv_raw().await.unwrap();
    assert!(ping.contains("\"_sys\":\"ping\""), "{ping}");
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(seen.lock().unwrap().as_slice(), ["peer_unresponsive"]);
    // It speaks again: resumed.
    b.tx.send(&Value::Object(palaver::obj! { "action" => "move" }))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["peer_unresponsive", "peer_resumed"]
    );
    beat.abort();
}

#[test]
fn an_interrupted_host_cancels_its_invitation() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h"]);
    let cmd = || peers.cmd("h");
    let mut host = cmd()
        .args(["host", "guess-number-v1", "--direct"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(host.stdout.take().unwrap());
    let mut l = String::new();
    out.read_line(&mut l).unwrap();
    assert!(l.starts_with("post_id: "), "{l}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(host.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = host.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("interrupted"),
        "{o:?}"
    );
    let listed = cmd().args(["--json", "browse"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        "[]",
        "the invitation is still listed"
    );
}

/// Guests are taken through their handshakes in parallel: a guest that
/// connects and then says nothing (it would hold the host for a whole
/// handshake step, 30 s here) does not keep a real guest waiting.
#[test]
fn a_silent_guest_does_not_hold_up_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &["--rate-limit", "0"], &["h", "g"]);
    let (_, post) = peers.host_rps(&["--peer-timeout", "30"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The silent guest: connected, stream open, nothing sent; kept alive
    // until the real guest is done.
    let silent = rt.block_on(async {
        let (ep, link, ch) = peers.dial(&post).await;
        // The stream reaches the host with the first bytes: one blank line,
        // which the NDJSON reader skips.
        ch.tx.send_raw("\n".to_owned()).await.unwrap();
        (ep, link, ch)
    });
    let t0 = std::time::Instant::now();
    peers.join(&post);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the real guest waited {took:?} behind the silent one"
    );
    drop(silent);
}
