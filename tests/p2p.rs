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

use crate::common;

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

// ---------------------------------------------------------------------------
// The lifecycle in files: a host's state dir from its invitation on, daemons
// with their logs in their state dirs, and how a waiting host stops.

fn sess(dir: &Path) -> palaver::json::Map {
    palaver::session::files::read_json_object(&dir.join("session.json")).unwrap_or_default()
}

fn field(m: &palaver::json::Map, k: &str) -> String {
    m.get(k).map(Value::py_str).unwrap_or_default()
}

/// The events of a parent state dir of one type, as data objects.
fn events_of(dir: &Path, kind: &str) -> Vec<palaver::json::Map> {
    palaver::session::files::read_jsonl(&dir.join("events.jsonl"))
        .into_iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some(kind))
        .map(|e| {
            e.get("data")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// The engine dir's snapshot of a parent state dir.
fn snapshot_of(dir: &Path) -> palaver::json::Map {
    let child = palaver::session::StateDir::resolve(dir).unwrap().child;
    assert_ne!(child, dir, "no engine dir in {}", dir.display());
    palaver::session::files::read_json_object(&child.join("snapshot.json")).unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t0.elapsed()
}

fn started_dir(started: &Value) -> PathBuf {
    PathBuf::from(started.get("state_dir").and_then(Value::as_str).unwrap())
}

fn started_pid(started: &Value) -> u32 {
    started.get("pid").and_then(Value::as_i64).unwrap() as u32
}

#[test]
fn a_waiting_host_lives_in_its_state_dir_and_stops_when_its_invitation_is_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h"]);
    let cmd = || peers.cmd("h");
    let (started, post) = peers.host_rps(&[]);
    let dir = started_dir(&started);
    let pid = started_pid(&started);
    // The daemon's logs are in its state dir, nowhere else.
    assert_eq!(
        started.get("out_log").and_then(Value::as_str),
        Some(dir.join("daemon.out.log").to_str().unwrap())
    );
    assert_eq!(
        started.get("err_log").and_then(Value::as_str),
        Some(dir.join("daemon.err.log").to_str().unwrap())
    );
    assert!(!tmp.path().join("h/sessions/daemons").exists());
    // From the invitation on: session.json, invite_created, waiting_peer.
    let meta = sess(&dir);
    assert_eq!(field(&meta, "role"), "host");
    assert_eq!(field(&meta, "status"), "running");
    assert_eq!(field(&meta, "post_id"), post);
    assert_eq!(field(&meta, "pid"), pid.to_string());
    let created = events_of(&dir, "invite_created");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(field(&created[0], "post_id"), post);
    let rps = palaver::library::bundled_spec("rps-v1").unwrap();
    assert_eq!(field(&created[0], "protocol_id"), rps.protocol_id());
    let snap = snapshot_of(&dir);
    assert_eq!(field(&snap, "phase"), "waiting_peer");
    assert_eq!(field(&snap, "role"), "host");
    assert_eq!(
        snap.get("last_event")
            .and_then(|e| e.get("summary"))
            .map(Value::py_str),
        Some("Waiting for peer".into())
    );
    // session list / snapshot / logs show it waiting, with its post_id.
    let listed = common::ok(
        cmd().args(["--json", "session", "list"]).output().unwrap(),
        "list",
    );
    let rows = palaver::json::parse_str(&listed).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(
        rows[0].get("phase").and_then(Value::as_str),
        Some("waiting_peer")
    );
    assert_eq!(
        rows[0].get("post_id").and_then(Value::as_str),
        Some(post.as_str())
    );
    assert!(
        rows[0]
            .get("waiting_seconds")
            .and_then(Value::as_f64)
            .is_some(),
        "{listed}"
    );
    let text = common::ok(cmd().args(["session", "list"]).output().unwrap(), "list");
    assert!(
        text.contains(&format!("for a guest (post_id {post})")),
        "{text}"
    );
    let shown = common::ok(
        cmd()
            .args(["session", "snapshot"])
            .arg(&dir)
            .output()
            .unwrap(),
        "snapshot",
    );
    assert!(shown.contains("phase: waiting_peer"), "{shown}");
    assert!(shown.contains(&format!("post_id: {post}")), "{shown}");
    assert!(
        shown.contains(&format!("for a guest (palaver join {post})")),
        "{shown}"
    );
    let logs = common::ok(
        cmd()
            .args(["session", "logs", "--out"])
            .arg(&dir)
            .output()
            .unwrap(),
        "logs",
    );
    assert!(logs.contains(&format!("post_id: {post}")), "{logs}");
    // Cancelled elsewhere: the daemon notices within seconds and stops.
    common::ok(cmd().args(["cancel", &post]).output().unwrap(), "cancel");
    let took = wait_until("the host daemon to stop", Duration::from_secs(15), || {
        !palaver::services::run::pid_alive(pid)
    });
    assert!(
        took < Duration::from_secs(10),
        "the daemon took {took:?} to stop"
    );
    let meta = sess(&dir);
    assert_eq!(field(&meta, "status"), "stopped");
    assert_eq!(field(&meta, "end_reason"), "invitation_cancelled");
    let stopped = events_of(&dir, "invitation_renew_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(field(&stopped[0], "post_id"), post);
    assert_eq!(field(&stopped[0], "reason"), "invitation_cancelled");
    assert_eq!(field(&snapshot_of(&dir), "phase"), "aborted");
    // The list no longer says it waits.
    let text = common::ok(cmd().args(["session", "list"]).output().unwrap(), "list");
    assert!(!text.contains("waiting"), "{text}");
    assert!(text.contains("stopped"), "{text}");
}

#[test]
fn host_and_join_daemons_keep_logs_and_peer_joined_in_their_state_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h", "g"]);
    let (hstarted, post) = peers.host_rps(&[]);
    let hdir = started_dir(&hstarted);
    let gstarted = peers
        .cmd("g")
        .args([
            "join",
            &post,
            "--direct",
            "--control-mode",
            "autonomous",
            "--daemon",
        ])
        .output()
        .unwrap();
    let gstarted = palaver::json::parse_str(&common::ok(gstarted, "join --daemon")).unwrap();
    let gdir = started_dir(&gstarted);
    let sid = gstarted
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    assert_eq!(
        gstarted.get("err_log").and_then(Value::as_str),
        Some(gdir.join("daemon.err.log").to_str().unwrap())
    );
    for (dir, pid) in [
        (&hdir, started_pid(&hstarted)),
        (&gdir, started_pid(&gstarted)),
    ] {
        wait_until(
            "a daemon to finish its session",
            Duration::from_secs(60),
            || !palaver::services::run::pid_alive(pid),
        );
        assert_eq!(field(&sess(dir), "status"), "closed", "{}", dir.display());
        assert_eq!(field(&sess(dir), "session_id"), sid);
        assert_eq!(field(&snapshot_of(dir), "phase"), "game_over");
        assert!(dir.join("daemon.out.log").is_file());
        // session logs finds the daemon's own output.
        let who = if dir == &hdir { "h" } else { "g" };
        let logs = common::ok(
            peers
                .cmd(who)
                .args(["session", "logs", "--out"])
                .arg(dir)
                .output()
                .unwrap(),
            "logs",
        );
        assert!(logs.contains(&format!("session_id: {sid}")), "{logs}");
    }
    // The host's one dir holds its whole life: the invitation, then the guest.
    let kinds: Vec<String> = palaver::session::files::read_jsonl(&hdir.join("events.jsonl"))
        .iter()
        .map(|e| field(e, "type"))
        .collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(at("invite_created") < at("peer_joined"), "{kinds:?}");
    assert!(at("peer_joined") < at("session_ended"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "peer_joined").count(), 1);
    let guest_key =
        palaver::json::parse_str(&std::fs::read_to_string(tmp.path().join("g/key.json")).unwrap())
            .unwrap();
    let host_key =
        palaver::json::parse_str(&std::fs::read_to_string(tmp.path().join("h/key.json")).unwrap())
            .unwrap();
    let hj = &events_of(&hdir, "peer_joined")[0];
    assert_eq!(
        field(hj, "guest_public_key"),
        guest_key.get("public_key").unwrap().py_str()
    );
    assert_eq!(field(hj, "session_id"), sid);
    assert_eq!(field(hj, "local_control_mode"), "autonomous");
    assert_eq!(field(hj, "peer_control_mode"), "autonomous");
    let gj = events_of(&gdir, "peer_joined");
    assert_eq!(gj.len(), 1, "{gj:?}");
    assert_eq!(
        field(&gj[0], "host_public_key"),
        host_key.get("public_key").unwrap().py_str()
    );
    assert_eq!(field(&gj[0], "session_id"), sid);
    assert_eq!(
        field(&gj[0], "protocol_id"),
        palaver::library::bundled_spec("rps-v1")
            .unwrap()
            .protocol_id()
    );
    assert_eq!(field(&gj[0], "local_control_mode"), "autonomous");
    assert_eq!(field(&gj[0], "peer_control_mode"), "autonomous");
    // One session per side, each in one dir.
    for who in ["h", "g"] {
        let entries = std::fs::read_dir(tmp.path().join(who).join("sessions"))
            .unwrap()
            .count();
        assert_eq!(entries, 1, "{who}");
    }
}

#[test]
fn an_aborted_waiting_host_withdraws_its_invitation_and_a_killed_one_is_reported_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h"]);
    let cmd = || peers.cmd("h");
    // `session abort` (SIGTERM): the host withdraws its invitation and stops.
    let (started, post) = peers.host_rps(&[]);
    let dir = started_dir(&started);
    let pid = started_pid(&started);
    common::ok(
        cmd().args(["session", "abort"]).arg(&dir).output().unwrap(),
        "abort",
    );
    wait_until("the aborted host to stop", Duration::from_secs(15), || {
        !palaver::services::run::pid_alive(pid)
    });
    assert_eq!(field(&sess(&dir), "status"), "aborted");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = palaver::web::Client::new(&peers.url, KeyPair::generate()).unwrap();
    let inv = rt
        .block_on(c.call("GET", &format!("/api/v1/invitations/{post}"), None, &[200]))
        .unwrap();
    assert_eq!(inv.get("status").and_then(Value::as_str), Some("cancelled"));
    // Killed outright: `session logs` says the daemon is gone and records
    // daemon_died.
    let (started, _) = peers.host_rps(&[]);
    let dir = started_dir(&started);
    let pid = started_pid(&started);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("the killed host to go", Duration::from_secs(15), || {
        !palaver::services::run::pid_alive(pid)
    });
    let o = cmd().args(["session", "logs"]).arg(&dir).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("the daemon (pid {pid}) is not running")),
        "{o:?}"
    );
    let died = events_of(&dir, "daemon_died");
    assert_eq!(died.len(), 1, "{died:?}");
    assert_eq!(field(&died[0], "pid"), pid.to_string());
    assert!(matches!(
        field(&sess(&dir), "status").as_str(),
        "stopped" | "crashed"
    ));
}

/// A host cancelled in the middle of its session reports it to the server
/// as `cancelled`. The guest here is the test itself: it proves the
/// session and then says nothing, so only the host settles it.
#[test]
fn a_session_cancelled_mid_way_is_cancelled_on_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h"]);
    let (started, post) = peers.host_rps(&[]);
    let dir = started_dir(&started);
    let pid = started_pid(&started);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let keys = KeyPair::generate();
    let c = palaver::web::Client::new(&peers.url, keys.clone()).unwrap();
    let (sid, guest) = rt.block_on(async {
        palaver::services::server::ensure_registered(&c, "g")
            .await
            .unwrap();
        let inv = c
            .call("GET", &format!("/api/v1/invitations/{post}"), None, &[200])
            .await
            .unwrap();
        let host_pk = inv
            .get("public_key")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        let pid = inv
            .get("protocol_id")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        let (ep, link, mut ch) = peers.dial(&post).await;
        let expect = handshake::Expect {
            post_id: &post,
            host_public_key: &host_pk,
            protocol_id: &pid,
        };
        let record = |body: Value| {
            let c = c.clone();
            async move {
                let v = c
                    .call("POST", "/api/v1/sessions", Some(&body), &[201])
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(v.get("session_id")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned())
            }
        };
        let est = handshake::guest(&mut ch, &keys, &expect, ControlMode::Autonomous, record)
            .await
            .unwrap();
        (est.session_id, (ep, link, ch))
    });
    wait_until("the host's peer_joined", Duration::from_secs(15), || {
        !events_of(&dir, "peer_joined").is_empty()
    });
    common::ok(
        peers
            .cmd("h")
            .args(["session", "abort"])
            .arg(&dir)
            .output()
            .unwrap(),
        "abort",
    );
    wait_until("the host to stop", Duration::from_secs(15), || {
        !palaver::services::run::pid_alive(pid)
    });
    let rec = rt
        .block_on(c.call("GET", &format!("/api/v1/sessions/{sid}"), None, &[200]))
        .unwrap();
    assert_eq!(
        rec.get("status").and_then(Value::as_str),
        Some("cancelled"),
        "{rec:?}"
    );
    let ended = events_of(&dir, "session_ended");
    assert!(
        ended.iter().any(|e| field(e, "reason") == "cancelled"),
        "{ended:?}"
    );
    drop(guest);
}

/// A community server that knows one invitation, `p1`: renewals answer
/// `renew` in turn (the last one again and again), and a status read
/// answers `open` until `expire_after` reads, then `expired`.
struct FakeCommunity {
    renew: Vec<(u16, &'static str)>,
    expire_after: Option<usize>,
    renewals: std::sync::atomic::AtomicUsize,
    reads: std::sync::atomic::AtomicUsize,
    deletes: std::sync::atomic::AtomicUsize,
}

async fn fake_community(f: std::sync::Arc<FakeCommunity>) -> String {
    use axum::http::StatusCode;
    use axum::routing::{get, post};
    use std::sync::atomic::Ordering::SeqCst;
    let json = |status: u16, body: &str| {
        (
            StatusCode::from_u16(status).unwrap(),
            [("content-type", "application/json")],
            body.to_owned(),
        )
    };
    let app = axum::Router::new()
        .route(
            "/api/v1/invitations",
            post(move || async move { json(201, r#"{"post_id":"p1","expires_at":1000.5}"#) }),
        )
        .route(
            "/api/v1/invitations/p1/renew",
            post({
                let f = f.clone();
                move || async move {
                    let n = f.renewals.fetch_add(1, SeqCst);
                    let (status, body) = f.renew[n.min(f.renew.len() - 1)];
                    json(status, body)
                }
            }),
        )
        .route(
            "/api/v1/invitations/p1",
            get({
                let f = f.clone();
                move || async move {
                    let n = f.reads.fetch_add(1, SeqCst) + 1;
                    if f.expire_after.is_some_and(|a| n > a) {
                        json(200, r#"{"post_id":"p1","status":"expired"}"#)
                    } else {
                        json(200, r#"{"post_id":"p1","status":"open"}"#)
                    }
                }
            })
            .delete({
                let f = f.clone();
                move || async move {
                    f.deletes.fetch_add(1, SeqCst);
                    json(204, "")
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Hosts rps-v1 against `f` with a data dir, renewing every 200 ms and
/// reading the invitation's status every 100 ms.
async fn host_against(
    f: std::sync::Arc<FakeCommunity>,
    data: &Path,
    ttl: Duration,
    renew: bool,
) -> (
    Result<palaver::services::remote::Finished, palaver::services::remote::RemoteError>,
    Vec<PathBuf>,
) {
    use palaver::services::remote::{self, HostPlan, PeerOpts, Progress, Upkeep};
    let url = fake_community(f).await;
    let client = palaver::web::Client::new(&url, KeyPair::generate()).unwrap();
    let spec = palaver::library::bundled_spec("rps-v1").unwrap().clone();
    let plan = HostPlan {
        hooks: palaver::protocols::native_hooks(&spec).unwrap(),
        spec,
        message: String::new(),
        options: Default::default(),
        mode: ControlMode::Autonomous,
        ttl,
        upkeep: Upkeep {
            renew_every: Duration::from_millis(200),
            watch_every: Duration::from_millis(100),
            renew,
        },
        peer: PeerOpts::direct(),
        data_dir: Some(data.to_owned()),
        state_dir: None,
        chat: None,
        observer: None,
    };
    let dirs = std::sync::Mutex::new(Vec::new());
    let progress = |p: Progress| {
        if let Progress::StateDir { parent, .. } = p {
            dirs.lock().unwrap().push(parent);
        }
    };
    let r = remote::host(&client, plan, &progress, std::future::pending()).await;
    (r, dirs.into_inner().unwrap())
}

#[tokio::test]
async fn renewals_are_recorded_and_a_failed_one_ends_them_until_the_ttl_runs_out() {
    use std::sync::atomic::Ordering::SeqCst;
    let data = tempfile::tempdir().unwrap();
    let f = std::sync::Arc::new(FakeCommunity {
        renew: vec![
            (200, r#"{"post_id":"p1","expires_at":2000.25}"#),
            (503, r#"{"message":"down for maintenance"}"#),
        ],
        expire_after: None,
        renewals: Default::default(),
        reads: Default::default(),
        deletes: Default::default(),
    });
    let (r, dirs) = host_against(f.clone(), data.path(), Duration::from_millis(1500), true).await;
    assert!(
        matches!(r, Err(palaver::services::remote::RemoteError::NoGuest(_))),
        "{r:?}"
    );
    assert_eq!(dirs.len(), 1, "the state dir is announced once: {dirs:?}");
    let dir = &dirs[0];
    let renewed = events_of(dir, "invitation_renewed");
    assert_eq!(renewed.len(), 1, "{renewed:?}");
    assert_eq!(field(&renewed[0], "post_id"), "p1");
    assert_eq!(
        renewed[0].get("expires_at").and_then(Value::as_f64),
        Some(2000.25)
    );
    let failed = events_of(dir, "invitation_renew_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(field(&failed[0], "error").contains("503"), "{failed:?}");
    // The failed renewal ended the renewals; the status reads went on.
    assert_eq!(f.renewals.load(SeqCst), 2);
    assert!(f.reads.load(SeqCst) >= 5, "{} reads", f.reads.load(SeqCst));
    let stopped = events_of(dir, "invitation_renew_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(field(&stopped[0], "reason"), "max_session_minutes_reached");
    assert_eq!(
        stopped[0]
            .get("max_session_minutes")
            .and_then(Value::as_f64),
        Some(0.025)
    );
    let meta = sess(dir);
    assert_eq!(field(&meta, "status"), "stopped");
    assert_eq!(field(&meta, "end_reason"), "invitation_expired");
    assert_eq!(field(&snapshot_of(dir), "phase"), "aborted");
    assert_eq!(f.deletes.load(SeqCst), 1, "the invitation is withdrawn");
}

#[tokio::test]
async fn an_invitation_the_server_expires_stops_its_host() {
    use std::sync::atomic::Ordering::SeqCst;
    let data = tempfile::tempdir().unwrap();
    let f = std::sync::Arc::new(FakeCommunity {
        renew: vec![(200, r#"{"post_id":"p1","expires_at":2000.25}"#)],
        expire_after: Some(3),
        renewals: Default::default(),
        reads: Default::default(),
        deletes: Default::default(),
    });
    let t0 = std::time::Instant::now();
    let (r, dirs) = host_against(f.clone(), data.path(), Duration::from_secs(600), true).await;
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    match r {
        Err(palaver::services::remote::RemoteError::Closed { post_id, reason }) => {
            assert_eq!(
                (post_id.as_str(), reason.as_str()),
                ("p1", "invitation_expired")
            );
        }
        other => panic!("{other:?}"),
    }
    let dir = &dirs[0];
    let stopped = events_of(dir, "invitation_renew_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(field(&stopped[0], "reason"), "invitation_expired");
    assert_eq!(field(&sess(dir), "end_reason"), "invitation_expired");
    assert_eq!(field(&sess(dir), "status"), "stopped");
    // A closed invitation is not withdrawn again.
    assert_eq!(f.deletes.load(SeqCst), 0);
}

/// `host --no-invitation-renew`: no renewal is ever sent; the status reads
/// go on and stop the host when the server expires the invitation.
#[tokio::test]
async fn a_host_that_does_not_renew_stops_when_its_invitation_expires() {
    use std::sync::atomic::Ordering::SeqCst;
    let data = tempfile::tempdir().unwrap();
    let f = std::sync::Arc::new(FakeCommunity {
        renew: vec![(200, r#"{"post_id":"p1","expires_at":2000.25}"#)],
        expire_after: Some(6),
        renewals: Default::default(),
        reads: Default::default(),
        deletes: Default::default(),
    });
    let (r, dirs) = host_against(f.clone(), data.path(), Duration::from_secs(600), false).await;
    match r {
        Err(palaver::services::remote::RemoteError::Closed { reason, .. }) => {
            assert_eq!(reason, "invitation_expired");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.renewals.load(SeqCst), 0, "no renewal was sent");
    assert!(f.reads.load(SeqCst) >= 6);
    assert!(events_of(&dirs[0], "invitation_renewed").is_empty());
    assert_eq!(field(&sess(&dirs[0]), "end_reason"), "invitation_expired");
}

/// Seconds since midnight of an events.jsonl `ts` (the tests' sessions do
/// not cross midnight... unless they do: then the gap is negative and the
/// check below says so).
fn ts_seconds(ts: &str) -> f64 {
    let t = &ts[11..];
    let h: f64 = t[0..2].parse().unwrap();
    let m: f64 = t[3..5].parse().unwrap();
    let s: f64 = t[6..].split('+').next().unwrap().parse().unwrap();
    h * 3600.0 + m * 60.0 + s
}

/// `--pace`: each frame a side sends waits that long first, and the game
/// still ends completed on both sides.
#[test]
fn a_paced_host_waits_before_each_frame_it_sends() {
    let tmp = tempfile::tempdir().unwrap();
    let peers = Peers::new(tmp.path(), &[], &["h", "g"]);
    let (started, post) = peers.host_rps(&["--options", r#"{"best_of":3}"#, "--pace", "0.25"]);
    let j = palaver::json::parse_str(&peers.join(&post)).unwrap();
    assert_eq!(
        j.get("outcome").and_then(|o| o.get("completed")),
        Some(&Value::Bool(true)),
        "{j:?}"
    );
    let dir = started_dir(&started);
    wait_until("the host's end", Duration::from_secs(30), || {
        field(&sess(&dir), "status") == "completed" || !field(&sess(&dir), "end_reason").is_empty()
    });
    let engine = palaver::session::StateDir::resolve(&dir).unwrap();
    let sent: Vec<f64> = palaver::session::files::read_jsonl(&engine.events_file())
        .iter()
        .filter(|e| {
            e.get("type").and_then(Value::as_str) == Some("protocol_message")
                && e.get("data")
                    .and_then(|d| d.get("direction"))
                    .and_then(Value::as_str)
                    == Some("sent")
                // The engine's closing `end` goes at once, as the
                // reference's last frame does.
                && e.get("data")
                    .and_then(|d| d.get("msg"))
                    .and_then(|m| m.get("action"))
                    .and_then(Value::as_str)
                    != Some("end")
        })
        .map(|e| ts_seconds(e.get("ts").and_then(Value::as_str).unwrap()))
        .collect();
    assert!(sent.len() >= 4, "{sent:?}");
    for w in sent.windows(2) {
        assert!(
            w[1] - w[0] >= 0.24,
            "frames {:.3} s apart: {sent:?}",
            w[1] - w[0]
        );
    }
    // Out of range is refused by name.
    let o = peers
        .cmd("h")
        .args(["host", "rps-v1", "--pace", "1e9"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--pace"),
        "{o:?}"
    );
}
